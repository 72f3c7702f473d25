/* The typed key table behind pctl.conf and the policy files, and the scan for what inih's
 * handler is not told (section lines, empty sections, every bad line). */
#include "conf_internal.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/cpumask.h"
#include "pctl/inifile.h"
#include "pctl/util.h"

static int conf_set_number(const struct conf_key *k, void *field, const char *value, char *why,
                           size_t why_size)
{
        double v;
        unsigned u = 0;
        int r;

        if (k->none_ok && strcmp(value, "none") == 0) {
                if (k->type == CONF_UINT)
                        *(unsigned *)field = 0;
                else
                        *(double *)field = INFINITY;
                return 0;
        }
        if (k->type == CONF_UINT) {
                r = parse_uint(value, &u);
                v = u;
        } else {
                r = parse_double(value, &v);
        }
        if (r == -EINVAL) {
                snprintf(why, why_size, "'%s' is not %s%s", value,
                         k->type == CONF_UINT ? "a whole number" : "a number",
                         k->none_ok ? " or none" : "");
                return -EINVAL;
        }
        if (r < 0 || v < k->min || (k->min_exclusive && v == k->min) || v > k->max) {
                snprintf(why, why_size, "%s is out of bounds %c%g, %g]", value,
                         k->min_exclusive ? '(' : '[', k->min, k->max);
                return -ERANGE;
        }
        if (k->type == CONF_UINT)
                *(unsigned *)field = u;
        else
                *(double *)field = v;
        return 0;
}

static int conf_set_choice(const struct conf_key *k, void *field, const char *value, char *why,
                           size_t why_size)
{
        const char *p = k->choices;
        size_t len = strlen(value);
        unsigned i = 0;

        while (*p) {
                size_t n = strcspn(p, "|");

                if (n == len && strncmp(p, value, n) == 0) {
                        *(unsigned *)field = i;
                        return 0;
                }
                p += n + (p[n] == '|');
                i++;
        }
        snprintf(why, why_size, "'%s' is not one of %s", value, k->choices);
        return -EINVAL;
}

int conf_key_set(const struct conf_key *k, void *base, const char *value, char *why,
                 size_t why_size)
{
        void *field = (char *)base + k->offset;
        struct cpumask m;
        int r;

        switch (k->type) {
        case CONF_UINT:
        case CONF_DOUBLE:
                return conf_set_number(k, field, value, why, why_size);
        case CONF_PATH:
                if (value[0] != '/') {
                        snprintf(why, why_size, "'%s' is not an absolute path", value);
                        return -EINVAL;
                }
                if (strlen(value) >= k->size) {
                        snprintf(why, why_size, "path longer than %zu bytes", k->size - 1);
                        return -ERANGE;
                }
                strscpy(field, value, k->size);
                return 0;
        case CONF_NAME:
                if (!config_name_valid(value) || strlen(value) >= k->size) {
                        snprintf(why, why_size,
                                 "'%s' is not a name (1-%zu of A-Z a-z 0-9 _ . -, not starting "
                                 "with . or -)",
                                 value, k->size - 1);
                        return -EINVAL;
                }
                strscpy(field, value, k->size);
                return 0;
        case CONF_CPULIST:
                r = cpumask_parse(value, &m);
                if (r < 0) {
                        snprintf(why, why_size,
                                 r == -ERANGE ? "'%s' names a CPU >= %d"
                                              : "'%s' is not a CPU list like 0-3,8",
                                 value, CPUMASK_MAX);
                        return r;
                }
                *(struct cpumask *)field = m;
                return 0;
        case CONF_CHOICE:
                return conf_set_choice(k, field, value, why, why_size);
        case CONF_CUSTOM:
                return k->custom(field, value, why, why_size);
        }
        snprintf(why, why_size, "internal: bad key type");
        return -EINVAL;
}

const struct conf_key *conf_key_find(const struct conf_key *t, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(t[i].key, key) == 0)
                        return &t[i];
        return NULL;
}

int conf_defaults(const struct conf_key *t, size_t n, void *base)
{
        char why[160];

        for (size_t i = 0; i < n; i++) {
                if (!t[i].def)
                        continue;
                /* An empty default means the zero value (an empty list); the memset did it. */
                if (!t[i].def[0] && t[i].type != CONF_CPULIST)
                        continue;
                if (conf_key_set(&t[i], base, t[i].def, why, sizeof(why)) < 0)
                        return -EINVAL;
        }
        return 0;
}

void conf_key_names(const struct conf_key *t, size_t n, char *buf, size_t size)
{
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n && len < size; i++) {
                int w = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", t[i].key);

                if (w < 0)
                        break;
                len += (size_t)w;
        }
}

/* inih's find_chars_or_comment: the first char of `chars`, or an inline comment. */
static char *scan_find(char *s, const char *chars)
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

static int scan_line(struct conf_scan *out, struct config_problems *problems, const char *name,
                     char *line, int lineno, bool *have_key)
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
                struct conf_section *v;

                end = scan_find(start + 1, "]");
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
        end = scan_find(start, "=:");
        if (*end != '=' && *end != ':')
                return config_problems_add(problems, name, lineno,
                                           "'%s': not a [section], key = value, or comment", start);
        *have_key = true;
        return 0;
}

int conf_scan(const char *path, const char *text, const char *name, struct conf_scan *out,
              struct config_problems *problems)
{
        struct conf_scan s = {};
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
                r = scan_line(&s, problems, name, line, lineno, &have_key);
                if (r < 0)
                        break;
        }
        free(line);
        fclose(f);
        if (r < 0) {
                conf_scan_free(&s);
                return r;
        }
        *out = s;
        return 0;
}

void conf_scan_free(struct conf_scan *s)
{
        free(s->v);
        *s = (struct conf_scan){};
}

int conf_scan_section_at(const struct conf_scan *s, int lineno)
{
        int idx = -1;

        for (size_t i = 0; i < s->n && s->v[i].lineno < lineno; i++)
                idx = (int)i;
        return idx;
}

static int problem_cmp(const void *a, const void *b)
{
        const struct config_problem *pa = a, *pb = b;

        return (pa->lineno > pb->lineno) - (pa->lineno < pb->lineno);
}

void conf_problems_sort_from(struct config_problems *p, size_t from)
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
