/* At most `burst` events per interval pass (a log line, a warning); the rest are counted, and
 * the first one to pass after them says how many were held back. Pure: the caller gives the
 * time, so tests need no clock. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
        uint64_t interval_ns;
        unsigned burst;
        uint64_t begin_ns; /* of the current interval */
        unsigned n;        /* passed in it */
        unsigned missed;   /* held back since the last that passed */
};

#define RATELIMIT_INIT(interval, burst_)                                                           \
        (struct ratelimit)                                                                         \
        {                                                                                          \
                .interval_ns = (interval), .burst = (burst_)                                       \
        }

/* True when the event may pass at now_ns; then *missed (when not NULL) is how many were held
 * back before it, and the count starts again. */
bool ratelimit_pass(struct ratelimit *rl, uint64_t now_ns, unsigned *missed);
