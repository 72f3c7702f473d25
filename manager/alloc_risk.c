/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The risk rule for apps without their own measure of progress.
 *
 * An app that marks no progress is scored by the instructions it retires. Work that grows with
 * its threads (redundant computation, split data structures, retries) retires instructions at
 * the pace of useful work, and neither the counters nor the thread states tell them apart
 * (speedup stacks leave this "parallelization overhead" unmeasured, so their speedup
 * overestimates the real one). Instructions per second at k cores are then an upper bound on
 * its progress, looser the more cores it has: of two configurations the counters cannot tell
 * apart, the one with fewer cores is as good or better in truth. So, among the measured points
 * within the counters' noise of the best, the fewest cores. An app without such work pays at
 * most that noise for it; one with it stops gaining cores whose gain is no larger than noise. */
#include "alloc_risk.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl/textfmt.h"

enum alloc_progress alloc_progress_source(const struct allocator_app *a)
{
        if (a->markers.scored || a->progress_known)
                return ALLOC_PROGRESS_MARKERS;
        if (a->history_x_known)
                return ALLOC_PROGRESS_HISTORY;
        return ALLOC_PROGRESS_INSTRUCTIONS;
}

const char *alloc_progress_name(enum alloc_progress p)
{
        static const char *const names[] = {
            [ALLOC_PROGRESS_INSTRUCTIONS] = "instructions",
            [ALLOC_PROGRESS_HISTORY] = "history",
            [ALLOC_PROGRESS_MARKERS] = "markers",
        };

        return names[p];
}

double alloc_progress_rate(struct allocator_app *a, double ips)
{
        /* Fewer instructions in parallel than alone (a negative inflation: caches) would make
         * more cores look better than their instructions say; that is not taken on faith. */
        double x = fmax(a->history_x, 0);

        if (alloc_progress_source(a) != ALLOC_PROGRESS_HISTORY)
                return ips;
        a->markers.work_x = x;
        return ips / (1 + x * (a->cores > 1 ? a->cores - 1.0 : 0.0));
}

bool alloc_risk_applies(const struct allocator_app *a)
{
        return alloc_progress_source(a) == ALLOC_PROGRESS_INSTRUCTIONS;
}

const struct allocator_point *
alloc_risk_measured(const struct allocator_app *a, const struct allocator_point *best,
                    bool (*eligible)(const void *arg, const struct allocator_point *p),
                    const void *arg)
{
        const struct allocator_point *pick = best;

        if (!best || !alloc_risk_applies(a))
                return best;
        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *p = &a->hist[i];
                bool here = p->cores == a->cores && p->freq_khz == a->freq_khz;
                double band = (here ? ALLOC_RISK_STAY : 1) * ALLOC_RISK_MARGIN;

                if (!eligible(arg, p) || !(p->score <= best->score + band * fabs(best->score)))
                        continue;
                if (p->cores < pick->cores || (p->cores == pick->cores && p->score < pick->score))
                        pick = p;
        }
        return pick;
}

void alloc_risk_note(const struct allocator_point *pick, const struct allocator_point *best,
                     char *reason, size_t size)
{
        size_t len = strlen(reason);

        if (!pick || !best || pick == best || len + 1 >= size)
                return;
        snprintf(reason + len, size - len,
                 "; progress by instructions: %u core%s measured within the noise of %u, and "
                 "fewer cores risk less uncounted work",
                 pick->cores, plural_s(pick->cores), best->cores);
}
