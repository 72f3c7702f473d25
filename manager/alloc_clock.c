/* The clock of a frequency domain apps share (docs/allocator.md, "The clock of a domain apps
 * share"): the domain runs at the highest clock wanted there, and an app's search there keeps
 * the clock it runs at, so no app alone can lower it. The apps sharing domains choose it
 * together: a lower clock is tried where every one of them predicts a better score there,
 * their frequency sensitivities are then learned from the two clocks, and the clock is chosen
 * by the sum of their predicted scores, or given up where a sensitivity cannot be learned. */

#include "alloc_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/util.h"

static bool in_group(const struct allocator_app *a)
{
        return a->effective != OBJECTIVE_MONITOR && !a->shares_cpus && !a->own_domain &&
               a->freq_shared;
}

static bool learned(const struct allocator_ctx *ctx, const struct allocator_app *a)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);

        return e && (e->known & ESTIMATE_MEM_FRACTION);
}

/* The app's predicted score at freq_khz relative to the one at cur_khz (its want's cores):
 * with the estimator's frequency sensitivity where known, else its time scaled by the stalled
 * share of its cycles (those do not stretch with the clock) from the clock it ran at, as for a
 * domain of its own. NaN when the model cannot say, or the clock is outside its bounds. */
static double clock_ratio(const struct allocator_ctx *ctx, const struct allocator_app *a,
                          unsigned cur_khz, unsigned freq_khz)
{
        struct allocator_bounds b;
        double at, s;

        alloc_app_bounds(ctx, a, &b);
        if (!alloc_freq_in(&b, freq_khz))
                return NAN;
        at = alloc_score_at_clock(ctx, a, cur_khz, cur_khz);
        s = alloc_score_at_clock(ctx, a, freq_khz, cur_khz);
        if (!isfinite(at) || !isfinite(s) || at <= 0 || s <= 0)
                return NAN;
        return s / at;
}

/* The app after `a` (the first: NULL) among those sharing domains; NULL after the last. */
static struct allocator_app *next_in(struct allocator_app *apps, unsigned n,
                                     struct allocator_app *a)
{
        for (a = a ? a + 1 : apps; a < apps + n; a++)
                if (in_group(a))
                        return a;
        return NULL;
}

static void set_clock(struct allocator_app *apps, unsigned n, unsigned khz)
{
        for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a))
                a->want_freq_khz = khz;
}

void alloc_shared_clock(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        unsigned k = 0, cur = 0, best_khz = 0;
        double best = NAN, wsum = 0;
        bool trial = false, all_learned = true;
        const char *why;

        if (!ctx->n_freqs)
                return;
        for (unsigned i = 0; i < n; i++) {
                if (apps[i].shares_cpus && apps[i].effective != OBJECTIVE_MONITOR)
                        return; /* a learner on every CPU shares every domain */
                if (!in_group(&apps[i]))
                        apps[i].shared_clock.since = 0;
                else
                        k++;
        }
        if (k < 2) {
                for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a))
                        a->shared_clock.since = 0; /* alone in its domains: its own search */
                return;
        }
        for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a)) {
                if (a->shared_clock.given_up || isfinite(a->policy->max_slowdown))
                        return; /* not learnable; a slowdown bound is checked by measuring */
                if (a->want_freq_khz > cur)
                        cur = a->want_freq_khz;
                trial |= a->shared_clock.since != 0;
                all_learned &= learned(ctx, a);
                wsum += a->policy->weight;
        }
        if (trial) {
                struct allocator_app *t = NULL;
                bool seen = true;

                for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a))
                        if (a->shared_clock.since &&
                            (!t || a->shared_clock.since > t->shared_clock.since))
                                t = a;
                /* Its second clock is seen once the estimator has run an interval there: not
                 * at the decision that set it. */
                for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a)) {
                        const struct estimate *e = estimator_get(ctx->est, a->id);

                        seen &= ctx->decision > t->shared_clock.since && e &&
                                e->freq_khz == t->shared_clock.at_khz;
                }
                /* Held while it is to be seen; at the second decision after, unseen (an app
                 * outside the group wants a higher clock on one of the domains), the trial
                 * cannot be judged either. */
                if (!seen && ctx->decision <= t->shared_clock.since + 1) {
                        for (struct allocator_app *a = next_in(apps, n, NULL); a;
                             a = next_in(apps, n, a))
                                a->shared_clock = t->shared_clock;
                        set_clock(apps, n, t->shared_clock.at_khz);
                        return;
                }
                if (!seen || !all_learned) {
                        /* At two clocks and still no sensitivity: the lower clock was the
                         * stalled share's reading, which nothing can now check. */
                        unsigned from = t->shared_clock.from_khz;

                        for (struct allocator_app *a = next_in(apps, n, NULL); a;
                             a = next_in(apps, n, a)) {
                                size_t len = strlen(a->reason);

                                a->shared_clock.since = 0;
                                a->shared_clock.given_up = true;

                                snprintf(a->reason + len, sizeof(a->reason) - len,
                                         " (the domains it shares back to %u MHz: a frequency "
                                         "sensitivity not known at both clocks)",
                                         from / 1000);
                        }
                        set_clock(apps, n, from);
                        return;
                }
                for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a))
                        a->shared_clock.since = 0;
        }
        /* Learned: the clock of the least weighted sum of log scores (the partition's
         * objective), moved only for the hysteresis. Else a trial of the clock below where
         * every app predicts better by the search's margin. */
        for (unsigned f = 0; f < ctx->n_freqs; f++) {
                unsigned khz = ctx->freqs_khz[f];
                double sum = 0;
                bool every = true;

                if (khz == cur || (!all_learned && khz > cur))
                        continue;
                for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a)) {
                        double r = clock_ratio(ctx, a, cur, khz);

                        if (isnan(r) || (!all_learned && !(r < 1 - ALLOCATOR_SEARCH_MARGIN)))
                                every = false;
                        else
                                sum += a->policy->weight * log(r);
                }
                if (every && (isnan(best) || sum < best)) {
                        best = sum;
                        best_khz = khz;
                }
        }
        if (isnan(best))
                return;
        best = exp(best / wsum); /* the weighted mean ratio */
        if (all_learned) {
                if (!(best < 1 - ctx->hysteresis))
                        return;
                why = "their frequency sensitivities learned";
        } else {
                why = "a trial, every app there predicting better";
                for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a)) {
                        a->shared_clock.since = ctx->decision;
                        a->shared_clock.from_khz = cur;
                        a->shared_clock.at_khz = best_khz;
                }
        }
        for (struct allocator_app *a = next_in(apps, n, NULL); a; a = next_in(apps, n, a)) {
                size_t len = strlen(a->reason);

                snprintf(a->reason + len, sizeof(a->reason) - len,
                         " (the domains it shares at %u MHz from %u MHz, %.0f%% better by the "
                         "model: %s)",
                         best_khz / 1000, cur / 1000, 100 * (1 - best), why);
        }
        set_clock(apps, n, best_khz);
}
