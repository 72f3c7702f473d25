/* Shared by config.c and policy.c, private to policies/: the typed key table that both files
 * are described by, and the scan that finds what inih's handler is not told. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pctl/config.h"

enum conf_type {
        CONF_UINT,    /* unsigned in [min, max]; "none" -> 0 when none_ok */
        CONF_DOUBLE,  /* double in [min, max] (or (min, max]); "none" -> INFINITY when none_ok */
        CONF_PATH,    /* an absolute path that fits */
        CONF_NAME,    /* a policy name (config_name_valid) */
        CONF_CPULIST, /* "0-3,8" into a struct cpumask */
        CONF_CHOICE,  /* one of choices "a|b|c", stored as its unsigned index */
        CONF_CUSTOM,  /* custom() does the parsing */
};

struct conf_key {
        const char *key;
        enum conf_type type;
        size_t offset;
        size_t size; /* CONF_PATH, CONF_NAME: the buffer */
        double min, max;
        bool min_exclusive;
        bool none_ok;
        bool repeats; /* may appear more than once (lists) */
        const char *choices;
        int (*custom)(void *field, const char *value, char *why, size_t why_size);
        const char *def; /* NULL: left zero */
        const char *doc;
};

/* Sets one key from its text into base + k->offset. On failure writes the reason into why,
 * returns -EINVAL/-ERANGE and changes nothing. */
int conf_key_set(const struct conf_key *k, void *base, const char *value, char *why,
                 size_t why_size);
const struct conf_key *conf_key_find(const struct conf_key *t, size_t n, const char *key);
/* Applies every row's default; the defaults go through the same parser as the files do. */
int conf_defaults(const struct conf_key *t, size_t n, void *base);
/* "a, b, c" of the table's keys, for "unknown key" messages. */
void conf_key_names(const struct conf_key *t, size_t n, char *buf, size_t size);

/* One [section] header line; its keys follow until the next header. */
struct conf_section {
        int lineno;
        char name[160];
};

struct conf_scan {
        struct conf_section *v;
        size_t n;
};

/* Reads the file (or text, when path is NULL) line by line as inih does, records every
 * section header with its line, including sections without keys, which inih never reports,
 * and appends a problem for every line inih would reject, not only the first. name is the file
 * name used in problems. -ENOENT/-EACCES when the file cannot be opened, -ENOMEM. */
int conf_scan(const char *path, const char *text, const char *name, struct conf_scan *out,
              struct config_problems *problems);
void conf_scan_free(struct conf_scan *s);
/* Index of the section a line belongs to, or -1 before the first header. */
int conf_scan_section_at(const struct conf_scan *s, int lineno);

/* Sorts the problems from index `from` by line, keeping the order of equal lines, and drops
 * exact duplicates (the scan and inih may both report one syntax error). */
void conf_problems_sort_from(struct config_problems *p, size_t from);
