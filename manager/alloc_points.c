/* The allocator's measured points (their freshness, the best of them) and an app's bounds
 * under its policy: what every phase works from. */

#include "alloc_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/util.h"

/* A measurement older than this many decisions is stale: phases change, so is the truth. */
#define ALLOCATOR_STALE_DECISIONS 60

struct allocator_point *alloc_hist_find(struct allocator_app *a, unsigned cores, unsigned freq_khz)
{
        for (unsigned i = 0; i < a->n_hist; i++)
                if (a->hist[i].cores == cores && a->hist[i].freq_khz == freq_khz)
                        return &a->hist[i];
        return NULL;
}

unsigned alloc_probe_samples(const struct allocator_ctx *ctx)
{
        return ctx->probe_samples ? ctx->probe_samples : ALLOCATOR_PROBE_SAMPLES;
}

/* Within ALLOCATOR_STALE_DECISIONS of decision. */
bool alloc_decision_recent(const struct allocator_ctx *ctx, uint64_t decision)
{
        return ctx->decision - decision <= ALLOCATOR_STALE_DECISIONS;
}

/* Measured recently and over enough samples to be compared. */
bool alloc_point_fresh(const struct allocator_ctx *ctx, const struct allocator_point *p)
{
        return ctx->decision - p->decision <= ALLOCATOR_STALE_DECISIONS &&
               p->samples >= alloc_probe_samples(ctx);
}

/* The point (cores, freq_khz) if it is fresh. */
const struct allocator_point *alloc_hist_fresh(const struct allocator_ctx *ctx,
                                               struct allocator_app *a, unsigned cores,
                                               unsigned freq_khz)
{
        const struct allocator_point *p = alloc_hist_find(a, cores, freq_khz);

        return p && alloc_point_fresh(ctx, p) ? p : NULL;
}

void alloc_search_reset(struct allocator_app *a)
{
        a->n_hist = 0;
        a->search.step_cores = a->search.step_freqs = 0;
        a->search.halving = false;
        a->model.cores = a->model.freq_khz = 0;
        a->model.refuted = false;
        a->model.jumps = 0;
        scaling_reset(&a->scaling);
}

/* The app changed phase: before its measurements go, the first phase's best (or, still
 * learning, the best it measured as it learned) is kept for pctl history (allocator_best): a
 * returning app starts in its first phase. */
void alloc_phase_reset(const struct allocator_ctx *ctx, struct allocator_app *app)
{
        const struct allocator_point *best = alloc_best_fresh(ctx, app);

        if (!app->first_phase.saved && !app->first_phase.lost) {
                if (allocator_searched(app) && best) {
                        app->first_phase.best = *best;
                        app->first_phase.saved = true;
                } else {
                        app->first_phase.lost = true;
                        /* Still learning: not searched, but what it measured at the count it
                         * learned at is its first phase's, and the next run can start that
                         * phase there and search, where it would otherwise learn again. */
                        if (best) {
                                app->first_phase.learned = *best;
                                app->first_phase.learned_kept = true;
                        }
                }
        }
        alloc_wait_reset(app); /* another phase waits differently */
        alloc_search_reset(app);
}

void alloc_app_bounds(const struct allocator_ctx *ctx, const struct allocator_app *a,
                      struct allocator_bounds *b)
{
        const struct policy *pol = a->policy;

        b->max_cores =
            pol->max_cores && pol->max_cores < ctx->n_cpus ? pol->max_cores : ctx->n_cpus;
        if (a->hint.explore_cap && !a->progress_known && a->hint.explore_cap < b->max_cores)
                b->max_cores = a->hint.explore_cap;
        b->min_cores = pol->min_cores ? pol->min_cores : 1;
        if (b->min_cores > b->max_cores)
                b->min_cores = b->max_cores;
        b->min_khz = b->max_khz = 0;
        for (unsigned i = 0; i < ctx->n_freqs; i++) {
                unsigned f = ctx->freqs_khz[i];

                if (pol->min_freq_mhz && f < pol->min_freq_mhz * 1000)
                        continue;
                if (pol->max_freq_mhz && f > pol->max_freq_mhz * 1000)
                        continue;
                if (!b->min_khz)
                        b->min_khz = f;
                b->max_khz = f;
        }
        /* A policy whose window holds no settable frequency runs at the nearest one. */
        if (ctx->n_freqs && !b->min_khz) {
                unsigned f = pol->max_freq_mhz && pol->max_freq_mhz * 1000 < ctx->freqs_khz[0]
                                 ? ctx->freqs_khz[0]
                                 : ctx->freqs_khz[ctx->n_freqs - 1];

                b->min_khz = b->max_khz = f;
        }
}

bool alloc_freq_in(const struct allocator_bounds *b, unsigned f)
{
        return f >= b->min_khz && f <= b->max_khz;
}

bool alloc_range_wide(const struct allocator_bounds *b)
{
        return b->max_cores - b->min_cores >= ALLOCATOR_WIDE_RANGE;
}

/* A measured point the policy's bounds allow. */
bool alloc_point_in_bounds(const struct allocator_ctx *ctx, const struct allocator_bounds *b,
                           const struct allocator_point *p)
{
        return p->cores >= b->min_cores && p->cores <= b->max_cores &&
               (!ctx->n_freqs || alloc_freq_in(b, p->freq_khz));
}

const char *alloc_freq_text(unsigned khz, char *buf, size_t size)
{
        if (khz)
                snprintf(buf, size, " %u MHz", khz / 1000);
        else
                buf[0] = '\0';
        return buf;
}

void alloc_stay(struct allocator_app *a, const char *fmt, const char *detail)
{
        a->want_cores = a->cores;
        a->want_freq_khz = a->freq_khz;
        snprintf(a->reason, sizeof(a->reason), fmt, detail);
}

/* Index of freq_khz among the settable frequencies, -1 if not one of them. */
int alloc_freq_index(const struct allocator_ctx *ctx, unsigned freq_khz)
{
        for (unsigned i = 0; i < ctx->n_freqs; i++)
                if (ctx->freqs_khz[i] == freq_khz)
                        return (int)i;
        return -1;
}

/* Whether sharing denied this configuration lately (see allocator_app.denied.cores). */
bool alloc_denied(const struct allocator_ctx *ctx, const struct allocator_app *a, unsigned cores,
                  unsigned freq_khz)
{
        return a->denied.decision && cores == a->denied.cores && freq_khz == a->denied.freq_khz &&
               ctx->decision - a->denied.decision <= ALLOCATOR_STALE_DECISIONS;
}

/* The best fresh measured point within the policy's bounds, NULL when none. */
const struct allocator_point *alloc_best_fresh(const struct allocator_ctx *ctx,
                                               const struct allocator_app *app)
{
        const struct allocator_point *best = NULL;
        struct allocator_bounds b;

        if (!app->policy)
                return NULL;
        alloc_app_bounds(ctx, app, &b);
        for (unsigned i = 0; i < app->n_hist; i++) {
                const struct allocator_point *p = &app->hist[i];

                if (alloc_point_fresh(ctx, p) && alloc_point_in_bounds(ctx, &b, p) &&
                    (!best || p->score < best->score))
                        best = p;
        }
        /* Scored by instructions, where the search settles: the fewest cores within the
         * noise (what history remembers, too). */
        return alloc_risk_measured(app, best, alloc_meas_eligible,
                                   &(struct alloc_meas_arg){ctx, app, &b});
}

bool alloc_meas_eligible(const void *arg, const struct allocator_point *p)
{
        const struct alloc_meas_arg *m = arg;

        return alloc_point_fresh(m->ctx, p) && alloc_point_in_bounds(m->ctx, m->b, p) &&
               !(m->ctx->n_freqs && m->a->freq_shared && p->freq_khz != m->a->freq_khz);
}
