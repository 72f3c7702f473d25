/* Periodic timers on a grid: each tick is due at start + k * interval. A timer that fell behind
 * (pctld stopped by SIGSTOP, the machine suspended or starved) skips the ticks it missed and
 * is next due at the first grid point after now, instead of running every missed tick back to
 * back: samples a few milliseconds apart measure noise, not the apps. */
#pragma once

#include <stdint.h>

/* The first point of the grid through due_usec (step interval_usec) that is strictly after
 * now_usec, and how many points were skipped on the way (*missed, may be NULL): 0 when the
 * timer ran on time. An interval of 0 is due at now_usec. */
uint64_t timegrid_next(uint64_t due_usec, uint64_t now_usec, uint64_t interval_usec,
                       uint64_t *missed);
