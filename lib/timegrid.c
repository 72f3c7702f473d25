#include "pctl/timegrid.h"

uint64_t timegrid_next(uint64_t due_usec, uint64_t now_usec, uint64_t interval_usec,
                       uint64_t *missed)
{
        uint64_t behind;

        if (missed)
                *missed = 0;
        if (interval_usec == 0)
                return now_usec;
        if (due_usec + interval_usec > now_usec)
                return due_usec + interval_usec;
        /* due + behind * interval <= now < due + (behind + 1) * interval */
        behind = (now_usec - due_usec) / interval_usec;
        if (missed)
                *missed = behind;
        return due_usec + (behind + 1) * interval_usec;
}
