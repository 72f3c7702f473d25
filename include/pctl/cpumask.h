/* A fixed-size set of CPU numbers, and the kernel's list syntax for it ("0-3,8,10-11"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPUMASK_MAX 4096
#define CPUMASK_WORDS (CPUMASK_MAX / 64)
/* Longest list text: every other CPU of 4096, "0,2,4,...": under 5 chars each. */
#define CPUMASK_LIST_MAX (CPUMASK_MAX * 5 / 2 + 16)

struct cpumask {
        uint64_t bits[CPUMASK_WORDS];
};

static inline void cpumask_zero(struct cpumask *m)
{
        for (unsigned i = 0; i < CPUMASK_WORDS; i++)
                m->bits[i] = 0;
}
static inline void cpumask_set(struct cpumask *m, unsigned cpu)
{
        if (cpu < CPUMASK_MAX)
                m->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}
static inline void cpumask_clear(struct cpumask *m, unsigned cpu)
{
        if (cpu < CPUMASK_MAX)
                m->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}
static inline bool cpumask_test(const struct cpumask *m, unsigned cpu)
{
        return cpu < CPUMASK_MAX && (m->bits[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned cpumask_count(const struct cpumask *m);
bool cpumask_empty(const struct cpumask *m);
bool cpumask_equal(const struct cpumask *a, const struct cpumask *b);
bool cpumask_intersects(const struct cpumask *a, const struct cpumask *b);
bool cpumask_subset(const struct cpumask *sub, const struct cpumask *of);
void cpumask_and(struct cpumask *dst, const struct cpumask *a, const struct cpumask *b);
void cpumask_or(struct cpumask *dst, const struct cpumask *a, const struct cpumask *b);
void cpumask_andnot(struct cpumask *dst, const struct cpumask *a, const struct cpumask *b);
/* The first CPU at or after `from`, or -1. Iterate with cpumask_foreach. */
int cpumask_next(const struct cpumask *m, unsigned from);
#define cpumask_foreach(cpu, m)                                                                    \
        for (int cpu = cpumask_next((m), 0); cpu >= 0; cpu = cpumask_next((m), (unsigned)cpu + 1))

/* Parses "0-3,8" (white space around items allowed, a trailing newline too). -EINVAL for bad
 * syntax or a reversed range, -ERANGE for a CPU >= CPUMASK_MAX. An empty string is an empty
 * mask. *out is written only on success. */
int cpumask_parse(const char *list, struct cpumask *out);
/* Writes the shortest list form; "" for an empty mask. -ENOBUFS if it does not fit. */
int cpumask_format(const struct cpumask *m, char *buf, size_t size);
