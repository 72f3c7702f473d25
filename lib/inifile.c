#include "pctl/inifile.h"

#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <fcntl.h>
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
