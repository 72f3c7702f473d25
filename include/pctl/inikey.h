/* The typed key table every INI reader is described by (pctl.conf, policy files, scenarios,
 * platform.ini, [power]): a key is one row with its type, bounds and default, as redis's
 * static_configs[] or systemd's gperf tables. inikey_set parses and checks one value against
 * its row; the reader around it says where (file:line, section) and keeps the file's rules
 * (set twice, required keys, cross-key checks). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum inikey_type {
        INIKEY_UINT,    /* unsigned in [min, max]; "none" -> 0 when none_ok */
        INIKEY_U64,     /* uint64_t, in [min, max] when max > min */
        INIKEY_DOUBLE,  /* finite double in [min, max] (or (min, max]); "none" -> INFINITY */
        INIKEY_PATH,    /* an absolute path that fits in size */
        INIKEY_NAME,    /* a name (inikey_name_valid) that fits in size */
        INIKEY_STRING,  /* any text that fits in size */
        INIKEY_CPULIST, /* "0-3,8" into a struct cpumask */
        INIKEY_CHOICE,  /* one of choices "a|b|c", stored as its unsigned index */
        INIKEY_CUSTOM,  /* custom() does the parsing */
};

/* How a refused number is worded. The readers kept the wording their users know. */
enum inikey_wording {
        INIKEY_SAY_BOUNDS,  /* "'x' is not a number", "5 is out of bounds [10, 60000]" */
        INIKEY_SAY_OUTSIDE, /* any unparsable value "is not", "5 is outside [10, 60000]" */
};

struct inikey {
        const char *key;
        enum inikey_type type;
        size_t offset;
        size_t size; /* PATH, NAME, STRING: the buffer */
        double min, max;
        bool min_exclusive;
        bool none_ok;
        bool repeats; /* may appear more than once (lists, rows) */
        enum inikey_wording wording;
        /* What a refused value is not ("a number of watts >= 0"): when set, every refusal of
         * a number reads "'VALUE' is not WHAT". */
        const char *what;
        const char *choices;
        /* ctx is the reader's, passed through inikey_set. */
        int (*custom)(void *field, const char *value, void *ctx, char *why, size_t why_size);
        const char *def; /* NULL: left zero */
        const char *doc;
};

/* Sets one key from its text into base + k->offset. On failure writes the reason into why,
 * returns -EINVAL/-ERANGE (or what custom returned) and changes nothing. */
int inikey_set(const struct inikey *k, void *base, const char *value, void *ctx, char *why,
               size_t why_size);
const struct inikey *inikey_find(const struct inikey *t, size_t n, const char *key);
/* Applies every row's default; the defaults go through the same parser as the files do. */
int inikey_defaults(const struct inikey *t, size_t n, void *base);
/* "a, b, c" of the table's keys, for "unknown key" messages. */
void inikey_names(const struct inikey *t, size_t n, char *buf, size_t size);
/* 1 to size - 1 of [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool inikey_name_valid(const char *name, size_t size);
