#include "pctl/inifile.h"

#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

int inifile_parse(const char *path, inifile_handler h, void *user, struct inifile_error *err)
{
        struct inifile_ctx c = {.h = h, .user = user, .err = err};
        int r;

        c.f = fopen(path, "re");
        if (!c.f) {
                r = -errno;
                if (err) {
                        *err = (struct inifile_error){0};
                        snprintf(err->what, sizeof(err->what), "cannot open: %s", strerror(-r));
                }
                return r;
        }
        r = inifile_run(&c);
        fclose(c.f);
        return r;
}

int inifile_parse_string(const char *text, inifile_handler h, void *user, struct inifile_error *err)
{
        struct inifile_ctx c = {.text = text, .h = h, .user = user, .err = err};

        return inifile_run(&c);
}
