/* Giving a burst's heap back to the system (include/pctl/memtrim.h). */
#include "pctl/memtrim.h"

#include <malloc.h>

bool memtrim_due(struct memtrim *t, unsigned n)
{
        if (n > t->peak) {
                t->peak = n;
                return false;
        }
        if (t->peak < MEMTRIM_MIN_PEAK || n * 2 > t->peak)
                return false;
        t->peak = n;
        return true;
}

bool memtrim_note(struct memtrim *t, unsigned n)
{
        if (!memtrim_due(t, n))
                return false;
        /* 0: keep no padding at the heap's top; free pages inside it are given back too. */
        malloc_trim(0);
        return true;
}
