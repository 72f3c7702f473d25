#include "pctl/inifile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pctl/util.h"

struct inifile_ctx {
        FILE *f;
        const char *text; /* string mode */
        int lineno;
        int first_long; /* first line longer than inih's buffer */
        inifile_handler h;
        void *user;
        struct inifile_error *err;
        bool bad;
};

static void note_error(struct inifile_ctx *c, int lineno, const char *what)
{
        if (c->bad)
                return;
        c->bad = true;
        if (c->err) {
                c->err->lineno = lineno;
                snprintf(c->err->what, sizeof(c->err->what), "%s", what);
        }
}

/* fgets-like: one line per call, so our count matches the line inih is parsing. */
static char *inifile_reader(char *str, int num, void *stream)
{
        struct inifile_ctx *c = stream;
        int n = 0;
        int ch;

        for (;;) {
                if (c->text)
                        ch = *c->text ? (unsigned char)*c->text++ : EOF;
                else
                        ch = fgetc(c->f);
                if (ch == EOF)
                        break;
                if (n < num - 1)
                        str[n++] = (char)ch;
                else if (!c->first_long)
                        c->first_long = c->lineno + 1;
                if (ch == '\n')
                        break;
        }
        if (n == 0 && ch == EOF)
                return NULL;
        str[n] = '\0';
        c->lineno++;
        return str;
}

static int inifile_dispatch(void *user, const char *section, const char *key, const char *value)
{
        struct inifile_ctx *c = user;
        int r;

        if (c->first_long == c->lineno) {
                char what[160];

                snprintf(what, sizeof(what), "line longer than %d bytes", ini_max_line - 3);
                note_error(c, c->lineno, what);
                return 1;
        }
        r = c->h(c->user, section, key, value, c->lineno);
        if (r < 0 && !c->bad) {
                /* The handler fills err->what itself when it wants a better message. */
                if (c->err && !c->err->what[0])
                        snprintf(c->err->what, sizeof(c->err->what), "%s", strerror(-r));
                if (c->err)
                        c->err->lineno = c->lineno;
                c->bad = true;
        }
        return 1;
}

static int inifile_run(struct inifile_ctx *c)
{
        int r;

        if (c->err)
                *c->err = (struct inifile_error){0};
        r = ini_parse_stream(inifile_reader, c, inifile_dispatch, c);
        if (r > 0)
                note_error(c, r, "not a [section], key = value, or comment line");
        if (c->first_long && !c->bad) {
                char what[160];

                snprintf(what, sizeof(what), "line longer than %d bytes", ini_max_line - 3);
                note_error(c, c->first_long, what);
        }
        return c->bad ? -EINVAL : 0;
}

static int load_error(struct inifile_error *err, int lineno, int r, const char *what)
{
        if (err) {
                err->lineno = lineno;
                snprintf(err->what, sizeof(err->what), "%s", what);
        }
        return r;
}

int inifile_load(const char *path, char **text, struct inifile_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        struct stat st;
        char *nul;

        if (err)
                *err = (struct inifile_error){0};
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                char what[sizeof(err->what)];
                int r = -errno;

                snprintf(what, sizeof(what), "cannot open: %s", strerror(-r));
                return load_error(err, 0, r, what);
        }
        if (fstat(fd, &st) < 0)
                return load_error(err, 0, -errno, strerror(errno));
        /* A directory, a device (/dev/zero never ends) or a FIFO (it may never speak) is no
         * configuration file, whatever its name. */
        if (S_ISDIR(st.st_mode))
                return load_error(err, 0, -EISDIR, "is a directory, not a file");
        if (!S_ISREG(st.st_mode))
                return load_error(err, 0, -EINVAL, "is not a regular file");
        if (st.st_size > INIFILE_MAX_BYTES)
                return load_error(err, 0, -EFBIG, "larger than 1 MiB: not a configuration file");
        buf = malloc(INIFILE_MAX_BYTES + 1);
        if (!buf)
                return load_error(err, 0, -ENOMEM, strerror(ENOMEM));
        /* The size can change while we read: the bound holds on what is read, too. */
        for (;;) {
                ssize_t n = read(fd, buf + len, INIFILE_MAX_BYTES + 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return load_error(err, 0, -errno, strerror(errno));
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > INIFILE_MAX_BYTES)
                        return load_error(err, 0, -EFBIG,
                                          "larger than 1 MiB: not a configuration file");
        }
        nul = memchr(buf, '\0', len);
        if (nul) {
                int lineno = 1;

                for (const char *p = buf; p < nul; p++)
                        lineno += *p == '\n';
                return load_error(err, lineno, -EINVAL, "holds a NUL byte: not a text file");
        }
        buf[len] = '\0';
        *text = buf;
        buf = NULL;
        return 0;
}

int inifile_parse(const char *path, inifile_handler h, void *user, struct inifile_error *err)
{
        _cleanup_free_ char *text = NULL;
        int r = inifile_load(path, &text, err);

        if (r < 0)
                return r;
        return inifile_parse_string(text, h, user, err);
}

int inifile_parse_string(const char *text, inifile_handler h, void *user, struct inifile_error *err)
{
        struct inifile_ctx c = {.text = text, .h = h, .user = user, .err = err};

        return inifile_run(&c);
}

/* inih's find_chars_or_comment: the first char of `chars`, or an inline comment. */
static char *inifile_scan_find(char *s, const char *chars)
{
        bool was_space = true;

        while (*s && !strchr(chars, *s)) {
                if (ini_allow_inline_comments && was_space &&
                    strchr(ini_inline_comment_prefixes, *s))
                        break;
                was_space = isspace((unsigned char)*s);
                s++;
        }
        return s;
}

static int inifile_scan_line(struct inifile_scan *out, struct config_problems *problems,
                             const char *name, char *line, int lineno, bool *have_key)
{
        char *start = line, *end;
        size_t len = strlen(line);

        if (lineno == 1 && ini_allow_bom && (unsigned char)start[0] == 0xEF &&
            (unsigned char)start[1] == 0xBB && (unsigned char)start[2] == 0xBF)
                start += 3;
        while (len > 0 && isspace((unsigned char)line[len - 1]))
                line[--len] = '\0';
        while (*start && isspace((unsigned char)*start))
                start++;

        if (*start == '\0' || strchr(ini_start_comment_prefixes, *start))
                return 0;
        /* An indented line after a key continues its value, as inih reads it. */
        if (ini_allow_multiline && *have_key && start > line)
                return 0;
        if (*start == '[') {
                struct inifile_section *v;

                end = inifile_scan_find(start + 1, "]");
                if (*end != ']')
                        return config_problems_add(problems, name, lineno,
                                                   "'%s': a section header needs a closing ]",
                                                   start);
                *end = '\0';
                v = realloc(out->v, (out->n + 1) * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                out->v = v;
                v[out->n].lineno = lineno;
                strscpy(v[out->n].name, strstrip(start + 1), sizeof(v[out->n].name));
                out->n++;
                *have_key = false;
                return 0;
        }
        end = inifile_scan_find(start, "=:");
        if (*end != '=' && *end != ':')
                return config_problems_add(problems, name, lineno,
                                           "'%s': not a [section], key = value, or comment", start);
        *have_key = true;
        return 0;
}

int inifile_scan(const char *path, const char *text, const char *name, struct inifile_scan *out,
                 struct config_problems *problems)
{
        struct inifile_scan s = {};
        _cleanup_free_ char *loaded = NULL;
        FILE *f = NULL;
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        int lineno = 0, r = 0;
        bool have_key = false;

        if (path) {
                struct inifile_error err;

                r = inifile_load(path, &loaded, &err);
                /* Unreadable is the caller's to word; not a text file is said here. */
                if (r < 0 && r != -ENOENT && r != -EACCES && r != -ENOMEM)
                        config_problems_add(problems, name, err.lineno, "%s", err.what);
                if (r < 0)
                        return r;
                text = loaded;
        }
        f = fmemopen((void *)text, strlen(text), "r");
        if (!f)
                return -errno;
        while ((n = getline(&line, &cap, f)) >= 0) {
                size_t len = (size_t)n;

                lineno++;
                if (len > 0 && line[len - 1] == '\n')
                        len--;
                /* inifile's reader keeps max_line - 2 chars and a newline. */
                if (len > (size_t)ini_max_line - 2) {
                        r = config_problems_add(problems, name, lineno, "line longer than %d bytes",
                                                ini_max_line - 3);
                        if (r < 0)
                                break;
                        continue;
                }
                r = inifile_scan_line(&s, problems, name, line, lineno, &have_key);
                if (r < 0)
                        break;
        }
        free(line);
        fclose(f);
        if (r < 0) {
                inifile_scan_free(&s);
                return r;
        }
        *out = s;
        return 0;
}

void inifile_scan_free(struct inifile_scan *s)
{
        free(s->v);
        *s = (struct inifile_scan){};
}

int inifile_scan_section_at(const struct inifile_scan *s, int lineno)
{
        int idx = -1;

        for (size_t i = 0; i < s->n && s->v[i].lineno < lineno; i++)
                idx = (int)i;
        return idx;
}
