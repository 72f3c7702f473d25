/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The risk rule for apps whose progress is counted in instructions (docs/allocator.md,
 * "Progress by instructions: the fewest cores the counters cannot tell apart"). */

#include <stdbool.h>
#include <stddef.h>

#include "pctl/allocator.h"

/* Two measured scores this close (relative) are not told apart: the counters' noise over a
 * probe, the search's own margin. Within it, an app scored by instructions takes the fewest
 * cores. */
#define ALLOC_RISK_MARGIN 0.01
/* The point the app is at keeps its place within this many margins of the best: its figure
 * and the best's are both re-measured as the search goes on, and a band of one margin would
 * swap the two at every revisit (noise on both sides). */
#define ALLOC_RISK_STAY 2.0

/* What an app's measured scores count as progress: the units of work it marks, instructions
 * over the work inflation whole runs in history measured, or instructions alone. */
enum alloc_progress {
        ALLOC_PROGRESS_INSTRUCTIONS,
        ALLOC_PROGRESS_HISTORY,
        ALLOC_PROGRESS_MARKERS,
};

enum alloc_progress alloc_progress_source(const struct allocator_app *a);
const char *alloc_progress_name(enum alloc_progress p);

/* The progress rate of an app scored by history from its instructions per second at its
 * core count (and its predictions' inflation, markers.work_x, set to history's); `ips` as it
 * is for any other source. */
double alloc_progress_rate(struct allocator_app *a, double ips);

/* Whether the app's measured scores count instructions alone, not its own units of work: more
 * instructions per second on more cores are then only an upper bound on more progress. */
bool alloc_risk_applies(const struct allocator_app *a);

/* Of the measured points `eligible` accepts, the one with the fewest cores whose score is
 * within ALLOC_RISK_MARGIN of `best`'s (the lowest score among them; ALLOC_RISK_STAY margins
 * for the point the app is at); `best` itself when the rule does not apply or no such point
 * has fewer cores. */
const struct allocator_point *
alloc_risk_measured(const struct allocator_app *a, const struct allocator_point *best,
                    bool (*eligible)(const void *arg, const struct allocator_point *p),
                    const void *arg);

/* Appends to `reason` why `pick` stands instead of `best` (nothing when they are the same). */
void alloc_risk_note(const struct allocator_point *pick, const struct allocator_point *best,
                     char *reason, size_t size);
