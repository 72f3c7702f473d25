/* The allocator's state machine (docs/allocator.md, "Phases") and its public entry points:
 * each decision runs every app's phase handler, then shares the machine among their wants.
 * The work of each phase is in the files of its concern: alloc_learn.c (measurements, P, the
 * start, the one-core probe, history's hint), alloc_search.c (the measured search),
 * alloc_model.c (the model's predictions), alloc_share.c (sharing the machine and its clock
 * domains), alloc_place.c (which CPUs), alloc_points.c (measured points and bounds). */

#include "alloc_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/util.h"

static const char *const allocator_phase_names[_ALLOCATOR_PHASE_MAX] = {
    [ALLOCATOR_PHASE_NEW] = "new",         [ALLOCATOR_PHASE_MONITOR] = "monitor",
    [ALLOCATOR_PHASE_RECALL] = "recall",   [ALLOCATOR_PHASE_LEARN] = "learn",
    [ALLOCATOR_PHASE_PROBE] = "probe",     [ALLOCATOR_PHASE_SEARCH] = "search",
    [ALLOCATOR_PHASE_SETTLED] = "settled", [ALLOCATOR_PHASE_MODEL] = "model",
};

const char *allocator_phase_to_string(enum allocator_phase p)
{
        return (unsigned)p < _ALLOCATOR_PHASE_MAX ? allocator_phase_names[p] : NULL;
}

bool allocator_searched(const struct allocator_app *a)
{
        enum allocator_phase p =
            a->phase == ALLOCATOR_PHASE_PROBE || a->phase == ALLOCATOR_PHASE_MONITOR
                ? a->phase_resume
                : a->phase;

        return p == ALLOCATOR_PHASE_RECALL || p == ALLOCATOR_PHASE_SEARCH ||
               p == ALLOCATOR_PHASE_SETTLED || p == ALLOCATOR_PHASE_MODEL;
}

/* Settled (or at the model's best): it takes no early decision, and a one-core probe may
 * verify its IPC_I0(1) at the clock it settled at. A search reset between decisions (the app
 * changed: search_reset) re-opens it at once; its next decision moves it to SEARCH. */
bool alloc_phase_settled(const struct allocator_app *a)
{
        return (a->phase == ALLOCATOR_PHASE_SETTLED || a->phase == ALLOCATOR_PHASE_MODEL) &&
               a->search.step_cores != 0;
}

/* MONITOR: only watched where it runs. It takes no place in the partition, or a few watched
 * services would leave no CPU to the managed apps (ENOSPC). Should its policy stop being
 * monitor-only (a reload), it resumes settled where it had searched, else as new. */
static enum allocator_phase on_monitor(struct decision *d)
{
        struct allocator_app *a = d->a;

        if (a->phase != ALLOCATOR_PHASE_MONITOR)
                a->phase_resume =
                    allocator_searched(a) ? ALLOCATOR_PHASE_SETTLED : ALLOCATOR_PHASE_NEW;
        a->shares_cpus = true;
        alloc_stay(a, "%s", "monitor: estimates only, nothing changed");
        return ALLOCATOR_PHASE_MONITOR;
}

/* PROBE: on one core until the estimator has the app's own IPC_I0(1), then back to where
 * the probe began, in the phase it began in. */
static enum allocator_phase on_probe(struct decision *d)
{
        return alloc_ipc1_probe_step(d->a, d->e) ? d->a->phase_resume : ALLOCATOR_PHASE_PROBE;
}

static void policy_bounds(const struct policy *pol, unsigned out[4])
{
        out[0] = pol->min_cores;
        out[1] = pol->max_cores;
        out[2] = pol->min_freq_mhz;
        out[3] = pol->max_freq_mhz;
}

/* Its policy's bounds changed since its last decision (a reload) and no longer hold where it
 * is. Only a change counts: the partition may hold an app below its min_cores while the
 * machine is full, and that must not make every sample a decision. */
static bool bounds_moved_past(const struct allocator_ctx *ctx, const struct allocator_app *a,
                              const struct allocator_bounds *b)
{
        unsigned now[4];

        policy_bounds(a->policy, now);
        if (!a->seen_bounds_set || !a->cores || memcmp(now, a->seen_bounds, sizeof(now)) == 0)
                return false;
        return a->cores < b->min_cores || a->cores > b->max_cores ||
               (ctx->n_freqs && a->freq_khz && !alloc_freq_in(b, a->freq_khz));
}

/* Out of bounds after a reload: to the nearest configuration inside them, and the search goes
 * on from there (what it measured outside ranks nothing: alloc_best_fresh keeps to bounds). */
static enum allocator_phase on_out_of_bounds(struct decision *d)
{
        const struct allocator_bounds *b = &d->b;
        struct allocator_app *a = d->a;
        unsigned n = a->cores < b->min_cores   ? b->min_cores
                     : a->cores > b->max_cores ? b->max_cores
                                               : a->cores;
        unsigned f = a->freq_khz;
        char was[16], to[16];

        if (d->ctx->n_freqs && f && !alloc_freq_in(b, f))
                f = f < b->min_khz ? b->min_khz : b->max_khz;
        a->want_cores = n;
        a->want_freq_khz = f;
        a->exploring = false;
        snprintf(a->reason, sizeof(a->reason),
                 "its policy's bounds changed: %u core%s%s is outside them, moved to %u core%s%s",
                 a->cores, plural_s(a->cores), alloc_freq_text(a->freq_khz, was, sizeof(was)), n,
                 plural_s(n), alloc_freq_text(f, to, sizeof(to)));
        return ALLOCATOR_PHASE_SEARCH;
}

/* The state machine (docs/allocator.md, "Phases"): the detours every phase may take, in
 * order (monitor-only, a remembered configuration to start at, the one-core probe), then the
 * phase's own handler. Each returns the phase the app is in after this decision. */
static enum allocator_phase decide_phase(struct decision *d)
{
        const struct allocator_ctx *ctx = d->ctx;
        struct allocator_app *a = d->a;

        if (d->a->effective == OBJECTIVE_MONITOR)
                return on_monitor(d);
        if (a->phase == ALLOCATOR_PHASE_MONITOR)
                a->phase = a->phase_resume; /* and acts in this same decision */
        /* Learners and probes take the new bounds at their own next step. */
        if ((a->phase == ALLOCATOR_PHASE_RECALL || a->phase == ALLOCATOR_PHASE_SEARCH ||
             a->phase == ALLOCATOR_PHASE_SETTLED || a->phase == ALLOCATOR_PHASE_MODEL) &&
            bounds_moved_past(ctx, a, &d->b))
                return on_out_of_bounds(d);
        /* A returning app starts where its past run ended best, instead of learning. */
        if (a->hint.cores && !allocator_searched(a) && alloc_hint_start(ctx, a, &d->b)) {
                if (a->phase != ALLOCATOR_PHASE_PROBE)
                        return ALLOCATOR_PHASE_RECALL;
                a->phase_resume = ALLOCATOR_PHASE_RECALL; /* once the probe is over */
                return ALLOCATOR_PHASE_PROBE;
        }
        d->start = alloc_start_cores(ctx, a, d->e, &d->b);
        d->base_meas = alloc_hist_fresh(ctx, a, d->start, d->b.max_khz);
        if (a->phase == ALLOCATOR_PHASE_PROBE)
                return on_probe(d);
        /* Before learning P on eq. 9, the app's own IPC_I0(1) where contention shows. */
        if (alloc_ipc1_probe_start(ctx, a, d->e, &d->b)) {
                a->phase_resume = a->phase;
                return ALLOCATOR_PHASE_PROBE;
        }
        switch (a->phase) {
        case ALLOCATOR_PHASE_NEW:
        case ALLOCATOR_PHASE_LEARN:
                return alloc_on_learn(d);
        case ALLOCATOR_PHASE_RECALL:
        case ALLOCATOR_PHASE_SEARCH:
        case ALLOCATOR_PHASE_SETTLED:
        case ALLOCATOR_PHASE_MODEL:
                return alloc_on_measured(d, a->phase);
        case ALLOCATOR_PHASE_MONITOR: /* resumed above */
        case ALLOCATOR_PHASE_PROBE:   /* handled above */
        case _ALLOCATOR_PHASE_MAX:
                break;
        }
        return a->phase;
}

static void decide_one(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        struct decision d = {.ctx = ctx, .a = a, .e = estimator_get(ctx->est, a->id)};

        a->changed = false;
        a->shares_cpus = false;
        alloc_app_bounds(ctx, a, &d.b);
        a->effective =
            objective_effective(a->policy->objective, ctx->pm || ctx->power_measured, &d.why);
        alloc_wait_observe(ctx, a);
        a->phase = decide_phase(&d);
        policy_bounds(a->policy, a->seen_bounds);
        a->seen_bounds_set = true;
        if (a->want_cores != a->cores)
                alloc_wait_note(ctx, a); /* a move the corrected model ranked */
}

bool allocator_wants_decision(const struct allocator_ctx *ctx, const struct allocator_app *app)
{
        const struct estimate *e;

        if (!app->policy || app->policy->objective == OBJECTIVE_MONITOR)
                return false;
        if (app->seen_bounds_set) {
                struct allocator_bounds b;

                alloc_app_bounds(ctx, app, &b);
                if (bounds_moved_past(ctx, app, &b))
                        return true;
        }
        /* A returning app is placed at its remembered configuration at once. */
        if (app->hint.cores && !allocator_searched(app))
                return true;
        e = estimator_get(ctx->est, app->id);
        if (!e)
                return false;
        switch (app->phase) {
        case ALLOCATOR_PHASE_PROBE:
                return alloc_ipc1_probe_done(app, e) ||
                       e->intervals - app->ipc1.since >= ALLOCATOR_IPC1_PROBE_INTERVALS;
        case ALLOCATOR_PHASE_LEARN:
                return alloc_p_settled(e) ||
                       (e->intervals >= ALLOCATOR_LEARN_MAX_INTERVALS &&
                        app->search.samples_here >= 1 + alloc_probe_samples(ctx));
        case ALLOCATOR_PHASE_MONITOR:
                return false;
        case ALLOCATOR_PHASE_SETTLED:
        case ALLOCATOR_PHASE_MODEL:
                if (alloc_phase_settled(app))
                        return false;
                break; /* reset since its last decision: as a search */
        case ALLOCATOR_PHASE_NEW:
        case ALLOCATOR_PHASE_RECALL:
        case ALLOCATOR_PHASE_SEARCH:
        case _ALLOCATOR_PHASE_MAX:
                break;
        }
        if (app->cores != app->search.at_cores || app->freq_khz != app->search.at_freq_khz)
                return false;
        if (app->search.early_rejected_here)
                return true; /* a probe far worse than the best, from its first sample */
        if (app->search.samples_here < 1 + alloc_probe_samples(ctx))
                return false;
        /* Only once the point holds a measurement: a score that cannot be computed must not
         * make every sample a decision. */
        for (unsigned i = 0; i < app->n_hist; i++)
                if (app->hist[i].cores == app->cores && app->hist[i].freq_khz == app->freq_khz)
                        return app->hist[i].samples >= alloc_probe_samples(ctx);
        return false;
}

bool allocator_best(const struct allocator_ctx *ctx, const struct allocator_app *app,
                    struct allocator_point *out)
{
        const struct allocator_point *best = alloc_best_fresh(ctx, app);

        if (app->first_phase.saved)
                best = &app->first_phase.best;
        else if (app->first_phase.lost) /* a later phase's best is no start for its first */
                best = app->first_phase.learned_kept ? &app->first_phase.learned : NULL;
        if (best)
                *out = *best;
        return best != NULL;
}

int allocator_decide(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        int r;

        if (ctx->n_cpus == 0)
                return -EINVAL;
        for (unsigned i = 0; i < n; i++)
                if (!apps[i].policy)
                        return -EINVAL;
        alloc_room_lapse(ctx, apps, n);
        for (unsigned i = 0; i < n; i++) {
                apps[i].reserve_cores = 0;
                apps[i].exploring = false;
                decide_one(ctx, &apps[i]);
                if (apps[i].reserve_cores < apps[i].want_cores)
                        apps[i].reserve_cores = apps[i].want_cores;
        }
        r = alloc_share_machine(ctx, apps, n);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];

                a->changed = a->want_cores != a->cores || a->want_freq_khz != a->freq_khz;
                /* Cut this time, or staying at the count it was cut to: still the partition's. */
                if (a->want_cores != a->share_set_cores)
                        a->share_set_cores = 0;
        }
        return 0;
}
