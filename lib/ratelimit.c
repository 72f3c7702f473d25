/* include/pctl/ratelimit.h */
#include "pctl/ratelimit.h"

#include <stddef.h>

bool ratelimit_pass(struct ratelimit *rl, uint64_t now_ns, unsigned *missed)
{
        if (rl->n == 0 || now_ns < rl->begin_ns || now_ns - rl->begin_ns >= rl->interval_ns) {
                rl->begin_ns = now_ns;
                rl->n = 0;
        }
        if (rl->n >= rl->burst) {
                rl->missed++;
                return false;
        }
        rl->n++;
        if (missed)
                *missed = rl->missed;
        rl->missed = 0;
        return true;
}
