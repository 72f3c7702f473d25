#include "pctl/cpumask.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

unsigned cpumask_count(const struct cpumask *m)
{
        unsigned n = 0;

        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                n += (unsigned)__builtin_popcountll(m->bits[i]);
        return n;
}

bool cpumask_empty(const struct cpumask *m)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                if (m->bits[i])
                        return false;
        return true;
}

bool cpumask_intersects(const struct cpumask *a, const struct cpumask *b)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                if (a->bits[i] & b->bits[i])
                        return true;
        return false;
}

bool cpumask_equal(const struct cpumask *a, const struct cpumask *b)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                if (a->bits[i] != b->bits[i])
                        return false;
        return true;
}

bool cpumask_subset(const struct cpumask *sub, const struct cpumask *of)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                if (sub->bits[i] & ~of->bits[i])
                        return false;
        return true;
}

void cpumask_and(struct cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                dst->bits[i] = a->bits[i] & b->bits[i];
}

void cpumask_or(struct cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                dst->bits[i] = a->bits[i] | b->bits[i];
}

void cpumask_andnot(struct cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                dst->bits[i] = a->bits[i] & ~b->bits[i];
}

int cpumask_next(const struct cpumask *m, unsigned from)
{
        for (unsigned w = from / 64; w < CPUMASK_WORDS; w++) {
                uint64_t bits = m->bits[w];

                if (w == from / 64)
                        bits &= ~UINT64_C(0) << (from % 64);
                if (bits)
                        return (int)(w * 64 + (unsigned)__builtin_ctzll(bits));
        }
        return -1;
}

static int parse_cpu(const char **p, unsigned *cpu)
{
        unsigned long v;
        char *end;

        if (!isdigit((unsigned char)**p))
                return -EINVAL;
        errno = 0;
        v = strtoul(*p, &end, 10);
        if (errno == ERANGE || v >= CPUMASK_MAX)
                return -ERANGE;
        *cpu = (unsigned)v;
        *p = end;
        return 0;
}

static void skip_space(const char **p)
{
        while (isspace((unsigned char)**p))
                (*p)++;
}

int cpumask_parse(const char *list, struct cpumask *out)
{
        struct cpumask m;
        const char *p = list;
        int r;

        cpumask_zero(&m);
        skip_space(&p);
        while (*p) {
                unsigned lo, hi;

                r = parse_cpu(&p, &lo);
                if (r < 0)
                        return r;
                hi = lo;
                skip_space(&p);
                if (*p == '-') {
                        p++;
                        skip_space(&p);
                        r = parse_cpu(&p, &hi);
                        if (r < 0)
                                return r;
                        if (hi < lo)
                                return -EINVAL;
                        skip_space(&p);
                }
                for (unsigned c = lo; c <= hi; c++)
                        cpumask_set(&m, c);
                if (*p == ',') {
                        p++;
                        skip_space(&p);
                        if (!*p)
                                return -EINVAL;
                } else if (*p) {
                        return -EINVAL;
                }
        }
        *out = m;
        return 0;
}

int cpumask_format(const struct cpumask *m, char *buf, size_t size)
{
        size_t len = 0;
        int cpu = cpumask_next(m, 0);

        if (size == 0)
                return -ENOBUFS;
        buf[0] = '\0';
        while (cpu >= 0) {
                int last = cpu;
                int n;

                while (cpumask_test(m, (unsigned)last + 1))
                        last++;
                if (last == cpu)
                        n = snprintf(buf + len, size - len, "%s%d", len ? "," : "", cpu);
                else
                        n = snprintf(buf + len, size - len, "%s%d-%d", len ? "," : "", cpu, last);
                if (n < 0 || (size_t)n >= size - len)
                        return -ENOBUFS;
                len += (size_t)n;
                cpu = cpumask_next(m, (unsigned)last + 1);
        }
        return 0;
}
