/* inih with line numbers. Debian's libinih is built without INI_HANDLER_LINENO, so the line
 * count is kept by our own reader; lines longer than inih's buffer are reported, not cut. */
#pragma once

#include <stddef.h>

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

/* Parses path (read with inifile_load), calling h for every key. Returns 0, -ENOENT/-EACCES when the file cannot be
 * opened, or -EINVAL when some line was bad: err (if not NULL) then holds the first one,
 * whether inih rejected it (syntax, length) or the handler did. */
int inifile_parse(const char *path, inifile_handler h, void *user, struct inifile_error *err);
/* The same over a string (tests, the control socket). */
int inifile_parse_string(const char *text, inifile_handler h, void *user,
                         struct inifile_error *err);
