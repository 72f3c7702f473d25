/* The problem list every file reader fills (include/pctl/config_problems.h). */
#include "pctl/config_problems.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/util.h"

int config_problems_add(struct config_problems *p, const char *file, int lineno, const char *fmt,
                        ...)
{
        struct config_problem *e;
        char what[sizeof(e->what)];
        va_list ap;

        if (p->n == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 16;
                struct config_problem *v = realloc(p->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                p->v = v;
                p->cap = cap;
        }
        e = &p->v[p->n++];
        strscpy(e->file, file ? file : "", sizeof(e->file));
        e->lineno = lineno;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        /* Messages quote what the file said: its bytes must not reach a terminal raw. */
        strescape(e->what, sizeof(e->what), what, strlen(what));
        return 0;
}

void config_problems_print(const struct config_problems *p, FILE *f)
{
        for (size_t i = 0; i < p->n; i++) {
                if (p->v[i].lineno > 0)
                        fprintf(f, "%s:%d: %s\n", p->v[i].file, p->v[i].lineno, p->v[i].what);
                else
                        fprintf(f, "%s: %s\n", p->v[i].file, p->v[i].what);
        }
}

void config_problems_clear(struct config_problems *p)
{
        free(p->v);
        *p = (struct config_problems){};
}

static int problem_cmp(const void *a, const void *b)
{
        const struct config_problem *pa = a, *pb = b;

        return (pa->lineno > pb->lineno) - (pa->lineno < pb->lineno);
}

void config_problems_sort_from(struct config_problems *p, size_t from)
{
        size_t out;

        if (p->n <= from)
                return;
        /* Insertion sort: stable, and the lists are short. */
        for (size_t i = from + 1; i < p->n; i++) {
                struct config_problem tmp = p->v[i];
                size_t j = i;

                while (j > from && problem_cmp(&p->v[j - 1], &tmp) > 0) {
                        p->v[j] = p->v[j - 1];
                        j--;
                }
                p->v[j] = tmp;
        }
        out = from + 1;
        for (size_t i = from + 1; i < p->n; i++) {
                if (p->v[i].lineno == p->v[out - 1].lineno &&
                    strcmp(p->v[i].what, p->v[out - 1].what) == 0)
                        continue;
                p->v[out++] = p->v[i];
        }
        p->n = out;
}
