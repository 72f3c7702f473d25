/* The typed key table behind every INI reader (include/pctl/inikey.h). */
#include "pctl/inikey.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pctl/cpumask.h"
#include "pctl/util.h"

static int inikey_refuse_number(const struct inikey *k, const char *value, int r, double v,
                                char *why, size_t why_size)
{
        bool whole = k->type != INIKEY_DOUBLE;

        if (k->what) {
                snprintf(why, why_size, "'%s' is not %s", value, k->what);
                return r;
        }
        if (k->wording == INIKEY_SAY_OUTSIDE) {
                if (r == -ERANGE && whole)
                        snprintf(why, why_size, "%.0f is outside [%g, %g]", v, k->min, k->max);
                else if (r == -ERANGE)
                        snprintf(why, why_size, "%g is outside [%g, %g]", v, k->min, k->max);
                else
                        snprintf(why, why_size, "'%s' is not %s", value,
                                 whole ? "a whole number" : "a number");
                return r;
        }
        if (r == -EINVAL)
                snprintf(why, why_size, "'%s' is not %s%s", value,
                         whole ? "a whole number" : "a number", k->none_ok ? " or none" : "");
        else
                snprintf(why, why_size, "%s is out of bounds %c%g, %g]", value,
                         k->min_exclusive ? '(' : '[', k->min, k->max);
        return r;
}

static int inikey_set_number(const struct inikey *k, void *field, const char *value, char *why,
                             size_t why_size)
{
        double v = 0;
        unsigned u = 0;
        uint64_t u64 = 0;
        int r;

        if (k->none_ok && strcmp(value, "none") == 0) {
                if (k->type == INIKEY_UINT)
                        *(unsigned *)field = 0;
                else
                        *(double *)field = INFINITY;
                return 0;
        }
        if (k->type == INIKEY_UINT) {
                r = parse_uint(value, &u);
                v = u;
        } else if (k->type == INIKEY_U64) {
                r = parse_u64(value, &u64);
                v = (double)u64;
        } else {
                r = parse_double(value, &v);
        }
        /* An overflow is out of bounds to one wording and not a number to the other. */
        if (r < 0 && (r == -EINVAL || k->wording == INIKEY_SAY_OUTSIDE || k->what))
                return inikey_refuse_number(k, value, -EINVAL, v, why, why_size);
        if (r < 0 || ((k->type != INIKEY_U64 || k->max > k->min) &&
                      (v < k->min || (k->min_exclusive && v == k->min) || v > k->max)))
                return inikey_refuse_number(k, value, -ERANGE, v, why, why_size);
        if (k->type == INIKEY_UINT)
                *(unsigned *)field = u;
        else if (k->type == INIKEY_U64)
                *(uint64_t *)field = u64;
        else
                *(double *)field = v;
        return 0;
}

static int inikey_set_choice(const struct inikey *k, void *field, const char *value, char *why,
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

bool inikey_name_valid(const char *name, size_t size)
{
        size_t len = strlen(name);

        if (len == 0 || len >= size || name[0] == '.' || name[0] == '-')
                return false;
        for (const char *c = name; *c; c++)
                if (!isalnum((unsigned char)*c) && !strchr("_.-", *c))
                        return false;
        return true;
}

int inikey_set(const struct inikey *k, void *base, const char *value, void *ctx, char *why,
               size_t why_size)
{
        void *field = (char *)base + k->offset;
        struct cpumask m;
        int r;

        switch (k->type) {
        case INIKEY_UINT:
        case INIKEY_U64:
        case INIKEY_DOUBLE:
                return inikey_set_number(k, field, value, why, why_size);
        case INIKEY_PATH:
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
        case INIKEY_NAME:
                if (!inikey_name_valid(value, k->size)) {
                        snprintf(why, why_size,
                                 "'%s' is not a name (1-%zu of A-Z a-z 0-9 _ . -, not starting "
                                 "with . or -)",
                                 value, k->size - 1);
                        return -EINVAL;
                }
                strscpy(field, value, k->size);
                return 0;
        case INIKEY_STRING:
                if (strlen(value) >= k->size) {
                        snprintf(why, why_size, "'%s' is longer than %zu bytes", value,
                                 k->size - 1);
                        return -ERANGE;
                }
                strscpy(field, value, k->size);
                return 0;
        case INIKEY_CPULIST:
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
        case INIKEY_CHOICE:
                return inikey_set_choice(k, field, value, why, why_size);
        case INIKEY_CUSTOM:
                return k->custom(field, value, ctx, why, why_size);
        }
        snprintf(why, why_size, "internal: bad key type");
        return -EINVAL;
}

const struct inikey *inikey_find(const struct inikey *t, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(t[i].key, key) == 0)
                        return &t[i];
        return NULL;
}

int inikey_defaults(const struct inikey *t, size_t n, void *base)
{
        char why[160];

        for (size_t i = 0; i < n; i++) {
                if (!t[i].def)
                        continue;
                /* An empty default means the zero value (an empty list); the caller zeroed. */
                if (!t[i].def[0] && t[i].type != INIKEY_CPULIST)
                        continue;
                if (inikey_set(&t[i], base, t[i].def, NULL, why, sizeof(why)) < 0)
                        return -EINVAL;
        }
        return 0;
}

void inikey_names(const struct inikey *t, size_t n, char *buf, size_t size)
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
