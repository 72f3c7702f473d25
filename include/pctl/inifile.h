/* inih with line numbers. Debian's libinih is built without INI_HANDLER_LINENO, so the line
 * count is kept by our own reader; lines longer than inih's buffer are reported, not cut. */
#pragma once

#include <stddef.h>

#include "pctl/config_problems.h"

/* Return 0 to accept the line, a negative errno to mark it bad (parsing goes on). */
typedef int (*inifile_handler)(void *user, const char *section, const char *key, const char *value,
                               int lineno);

struct inifile_error {
        int lineno; /* first bad line, 0 for the file as a whole */
        char what[160];
};

#define INIFILE_MAX_BYTES (1024 * 1024)

/* Reads a whole configuration file into *text (malloc'd, NUL-terminated): a regular file of at
 * most INIFILE_MAX_BYTES without NUL bytes. -EISDIR, -EINVAL (not a regular file, or a NUL
 * byte: err->lineno names its line), -EFBIG, or what open/read said; err->what says it in
 * words. */
int inifile_load(const char *path, char **text, struct inifile_error *err);

/* Parses path (read with inifile_load), calling h for every key. Returns 0, -ENOENT/-EACCES when
 * the file cannot be opened, or -EINVAL when some line was bad: err (if not NULL) then holds the
 * first one, whether inih rejected it (syntax, length) or the handler did. */
int inifile_parse(const char *path, inifile_handler h, void *user, struct inifile_error *err);
/* The same over a string (tests, the control socket). */
int inifile_parse_string(const char *text, inifile_handler h, void *user,
                         struct inifile_error *err);

/* One [section] header line; its keys follow until the next header. */
struct inifile_section {
        int lineno;
        char name[160];
};

struct inifile_scan {
        struct inifile_section *v;
        size_t n;
};

/* Reads the file (or text, when path is NULL) line by line as inih does, records every
 * section header with its line, including sections without keys, which inih never reports,
 * and appends a problem for every line inih would reject, not only the first. name is the file
 * name used in problems. -ENOENT/-EACCES when the file cannot be opened, -ENOMEM. */
int inifile_scan(const char *path, const char *text, const char *name, struct inifile_scan *out,
                 struct config_problems *problems);
void inifile_scan_free(struct inifile_scan *s);
/* Index of the section a line belongs to, or -1 before the first header. */
int inifile_scan_section_at(const struct inifile_scan *s, int lineno);
