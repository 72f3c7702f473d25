/* A probe's give-back (docs/allocator.md, "A probe for a full package's bandwidth"): the cores
 * a probe of a package's bandwidth took from an app go back at the next decision, but only
 * where the plan with them can still be placed. Pure: the plan and the current masks in. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "pctl/allocator.h"
#include "pctl/textfmt.h"

int allocator_give_back(const struct topology *t, const struct cpumask *allowed,
                        struct allocator_app *apps, const struct cpumask *cur, unsigned n,
                        unsigned i, unsigned cores)
{
        struct allocator_app *a = &apps[i];
        struct cpumask *out;
        unsigned was = a->want_cores;
        int r;

        /* A move of its own from the probe's count (the search's, the partition's) stands. */
        if (i >= n || a->shares_cpus || was != cpumask_count(&cur[i]) || was >= cores)
                return 0;
        /* The partition may have given the cores on, and what is free is what placement can
         * use: an app with a frequency domain of its own holds its whole package whatever its
         * count, so a count of free CPUs overstates the room. Placing the plan with them says. */
        out = calloc(n, sizeof(*out));
        if (!out)
                return -ENOMEM;
        a->want_cores = cores;
        r = allocator_place(t, allowed, apps, cur, out, n);
        free(out);
        if (r < 0) {
                a->want_cores = was;
                return r == -ENOSPC ? 0 : r;
        }
        a->changed = true;
        snprintf(a->reason, sizeof(a->reason),
                 "back to %u core%s after a probe of its package's memory bandwidth", cores,
                 plural_s(cores));
        return 1;
}
