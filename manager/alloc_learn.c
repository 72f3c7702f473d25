/* Learning: the allocator's observations (measured scores, progress, work inflation,
 * spinning), when P is settled, where a new app starts, the one-core probe for IPC_I0(1),
 * and a returning app's start at what history remembered (docs/allocator.md). */

#include "alloc_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/util.h"

/* What an estimate of P needs before the allocator acts on it: the confidence that 8 points
 * with a standard error of 0.03 give, reached with fewer points when their spread is small
 * (noise-free counters give an exact P after a few intervals). */
#define ALLOCATOR_MIN_POINTS 3.0
#define ALLOCATOR_MAX_P_STDERR 0.03
/* Samples in a point's running mean. */
#define ALLOCATOR_MEAN_SAMPLES 8
/* Intervals after a move within which a phase change the estimator reports is taken for the
 * move itself (its default detection needs 3 misfits, plus the one straddling the move). */
#define ALLOCATOR_PHASE_AFTER_MOVE 5
/* A revisited point whose new measurement differs from its old one by more than this
 * fraction: the app has changed and the search starts again from here. Far above the
 * counters' noise over a probe, far below what a phase change does to the score. Checked only
 * for an app alone: sharing the machine, its score also moves with what the others do. */
#define ALLOCATOR_DRIFT 0.2
/* Alone, a probe whose first sample measures worse than the best fresh point by this fraction
 * (twenty times the counters' noise on one sample) is complete after that sample. */
#define ALLOCATOR_EARLY_WORSE 0.2
/* Alone on a wide range, a new app whose speedup on every core is small warms up and learns
 * P on this fraction of its allowed cores (docs/allocator.md, "Where a new app starts"),
 * when Amdahl's law keeps at least ALLOCATOR_START_KEEP of its speedup there. */
#define ALLOCATOR_START_FRACTION 0.25
#define ALLOCATOR_START_KEEP 0.75

/* Spinning apps (docs/allocator.md, "Spinning apps"): Amdahl's law keeps SP cores busy on
 * average and counts the other N - SP idle; the estimator measures the cores the app kept
 * running (its CPUs' busy time). What ran beyond the speedup made no progress: threads
 * spinning while they wait. Their share of the idle cores is the app's own (a thread that
 * spins a share of its waits does so at any count: Amdahl's idle cores, (1 - P)(N - 1) SP,
 * are its waits), so every count measures it for all. Measured where at least this many
 * cores are idle by Amdahl, so the share is a ratio of figures above the counters' noise. */
#define ALLOCATOR_IDLE_RUN_MIN_IDLE 1.0

static void idle_run_observe(struct allocator_app *a, const struct estimate *e)
{
        double idle, share;

        if (!(e->known & ESTIMATE_SPEEDUP) || !isfinite(e->busy_cores) || e->n_cores < 2)
                return;
        idle = e->n_cores - e->speedup;
        if (!(idle >= ALLOCATOR_IDLE_RUN_MIN_IDLE))
                return;
        share = fmin(1, fmax(0, (e->busy_cores - e->speedup) / idle));
        if (a->spin.samples < ALLOCATOR_MEAN_SAMPLES)
                a->spin.samples++;
        a->spin.share += (share - a->spin.share) / a->spin.samples;
}

/* The app's rate of progress over the interval just observed: units of work per second from
 * its own markers when it has them, else (rate as given) instructions per second. Scores in
 * one unit are not comparable with the other's: when the source changes, what was measured
 * is dropped. False when the markers did not move this interval (too coarse for it): the
 * next reading then covers the longer time. */
static bool progress_rate(struct allocator_app *a, double *rate)
{
        bool had = a->markers.prev_ns != 0;
        uint64_t du, dt;

        if (!a->progress_known) {
                if (a->markers.scored) {
                        a->markers.scored = false;
                        a->markers.n_ipu = 0;
                        a->markers.work_x = 0;
                        alloc_search_reset(a);
                }
                a->markers.prev_ns = 0;
                return true;
        }
        if (!had || a->progress_ns <= a->markers.prev_ns ||
            a->progress_units < a->markers.prev_units) {
                a->markers.prev_units = a->progress_units;
                a->markers.prev_ns = a->progress_ns;
                return false;
        }
        du = a->progress_units - a->markers.prev_units;
        dt = a->progress_ns - a->markers.prev_ns;
        if (!du)
                return false;
        a->markers.prev_units = a->progress_units;
        a->markers.prev_ns = a->progress_ns;
        if (!a->markers.scored) {
                a->markers.scored = true;
                alloc_search_reset(a);
        }
        *rate = du / (dt / 1e9);
        return true;
}

/* Work inflation across the core counts measured, below which it is not told from the
 * counters' and the markers' noise (docs/allocator.md, "Progress"). */
#define ALLOCATOR_INFLATION_MIN 0.03

/* Adds one interval's instructions per unit of work at the app's core count, and fits the
 * inflation 1 + X (k - 1) over the counts measured: least squares of ipu on k (the line
 * a (1 - X) + a X k). */
static void work_inflation_add(struct allocator_app *a, double ipu)
{
        double sk = 0, su = 0, skk = 0, sku = 0, n = 0, slope, icpt, x;
        unsigned kmin = UINT32_MAX, kmax = 0, i;

        if (!(ipu > 0) || !isfinite(ipu))
                return;
        for (i = 0; i < a->markers.n_ipu && a->markers.ipu[i].cores != a->cores; i++)
                ;
        if (i == a->markers.n_ipu) {
                if (a->markers.n_ipu == ALLOCATOR_IPU_POINTS)
                        return; /* enough counts to fit from */
                a->markers.ipu[a->markers.n_ipu++] = (typeof(a->markers.ipu[0])){.cores = a->cores};
        }
        if (a->markers.ipu[i].samples < ALLOCATOR_MEAN_SAMPLES)
                a->markers.ipu[i].samples++;
        a->markers.ipu[i].ipu += (ipu - a->markers.ipu[i].ipu) / a->markers.ipu[i].samples;
        for (i = 0; i < a->markers.n_ipu; i++) {
                double k = a->markers.ipu[i].cores, w = a->markers.ipu[i].samples;

                n += w;
                sk += w * k;
                su += w * a->markers.ipu[i].ipu;
                skk += w * k * k;
                sku += w * k * a->markers.ipu[i].ipu;
                kmin = a->markers.ipu[i].cores < kmin ? a->markers.ipu[i].cores : kmin;
                kmax = a->markers.ipu[i].cores > kmax ? a->markers.ipu[i].cores : kmax;
        }
        a->markers.work_x = 0;
        if (kmax == kmin || !(n * skk - sk * sk > 0))
                return;
        slope = (n * sku - sk * su) / (n * skk - sk * sk);
        icpt = (su - slope * sk) / n;
        if (!(slope + icpt > 0))
                return;
        x = slope / (slope + icpt);
        if (x * (kmax - kmin) >= ALLOCATOR_INFLATION_MIN)
                a->markers.work_x = fmin(x, 1);
}

void allocator_observe(const struct allocator_ctx *ctx, struct allocator_app *app)
{
        const struct estimate *e = estimator_get(ctx->est, app->id);
        const struct estimator_platform *pl;
        struct allocator_point *p;
        enum objective_kind obj;
        double score, power_w, rate;
        bool rate_ok;

        if (!e || !app->policy || app->cores == 0)
                return;
        rate = e->ips;
        if (app->cores != app->search.at_cores || app->freq_khz != app->search.at_freq_khz) {
                app->search.at_cores = app->cores;
                app->search.at_freq_khz = app->freq_khz;
                app->search.samples_here = 0;
                app->search.early_rejected_here = false;
        }
        /* A new phase makes every old measurement of this app meaningless. But a "phase" the
         * estimator sees right after we moved the app is our move showing where the Amdahl
         * model is wrong (speedup falling past some N): the measurements still hold then. */
        if (e->phase_changes != app->phase_changes_seen) {
                app->phase_changes_seen = e->phase_changes;
                if (!allocator_searched(app) ||
                    app->search.samples_here > ALLOCATOR_PHASE_AFTER_MOVE)
                        alloc_phase_reset(ctx, app);
        }
        /* Time-sharing CPUs with other apps, the score is theirs as much as its own: it
         * says nothing of the configuration. */
        if (app->shares_cpus && ctx->n_apps > 1)
                return;
        /* One observation per interval the estimator saw, however often we are called. */
        if (e->intervals == app->seen_intervals)
                return;
        app->seen_intervals = e->intervals;
        /* Read at every interval, so that a rate never spans a change. */
        rate_ok = progress_rate(app, &rate);
        /* Without markers, whole runs in history may say how much of it is progress. */
        if (rate_ok && !app->markers.scored)
                rate = alloc_progress_rate(app, rate);
        /* The first interval after a change may straddle it. */
        if (++app->search.samples_here < 2 || !rate_ok)
                return;
        if (app->markers.scored && (e->known & ESTIMATE_IPS))
                work_inflation_add(app, e->ips / rate);
        idle_run_observe(app, e);
        obj = objective_effective(app->policy->objective, ctx->pm || ctx->power_measured, NULL);
        if (obj == OBJECTIVE_MONITOR || !(e->known & ESTIMATE_IPS))
                return;
        power_w = (e->known & ESTIMATE_POWER) ? e->power_w : NAN;
        /* Measured package power: with one app, what the package draws is what that app's
         * configuration costs, static power included, which the split by cycles would
         * understate. */
        pl = estimator_platform(ctx->est);
        if (ctx->n_apps == 1 && pl && pl->energy_measured && isfinite(pl->power_w))
                power_w = pl->power_w;
        power_w = alloc_static_share(ctx, power_w);
        if (objective_score_rate(obj, power_w, rate, &score) < 0)
                return;
        scaling_add_stalls(&app->scaling, app->cores, app->freq_khz, rate, power_w,
                           (e->known & ESTIMATE_STALLS) && e->i0 > 0 ? e->stalls / e->i0 : NAN,
                           ALLOCATOR_MEAN_SAMPLES);
        p = alloc_hist_find(app, app->cores, app->freq_khz);
        if (!p) {
                if (app->n_hist == ALLOCATOR_HISTORY) {
                        /* Forget the oldest measurement. */
                        unsigned oldest = 0;

                        for (unsigned i = 1; i < app->n_hist; i++)
                                if (app->hist[i].decision < app->hist[oldest].decision)
                                        oldest = i;
                        app->hist[oldest] = app->hist[--app->n_hist];
                }
                p = &app->hist[app->n_hist++];
                *p = (struct allocator_point){.cores = app->cores, .freq_khz = app->freq_khz};
        } else if (app->search.samples_here == 2) {
                /* The first sample of a new visit. A stale point is measured afresh; a
                 * complete one is measured again on the side and compared. */
                if (!alloc_point_fresh(ctx, p))
                        p->samples = 0;
                else if (ctx->n_apps == 1)
                        p->revisit_samples = 1;
                p->revisit_score = score;
        } else if (p->revisit_samples) {
                p->revisit_samples++;
                p->revisit_score += (score - p->revisit_score) / p->revisit_samples;
        }
        p->decision = ctx->decision;
        p->apps = ctx->n_apps;
        if (p->revisit_samples) {
                struct allocator_point again = *p;

                if (p->revisit_samples < alloc_probe_samples(ctx))
                        return;
                p->revisit_samples = 0;
                if (fabs(again.revisit_score - again.score) <= ALLOCATOR_DRIFT * fabs(again.score))
                        return; /* the same app: the point keeps its longer mean */
                /* The app changed: this visit is the only measurement that holds. */
                alloc_phase_reset(ctx, app);
                app->hist[0] = (struct allocator_point){.cores = again.cores,
                                                        .freq_khz = again.freq_khz,
                                                        .score = again.revisit_score,
                                                        .samples = alloc_probe_samples(ctx),
                                                        .decision = ctx->decision,
                                                        .apps = ctx->n_apps};
                app->n_hist = 1;
                app->search.drifts++;
                return;
        }
        /* Running mean over the last few samples: enough to average the counters' noise,
         * recent enough to follow a drift. */
        p->samples = p->samples < ALLOCATOR_MEAN_SAMPLES ? p->samples + 1 : ALLOCATOR_MEAN_SAMPLES;
        p->score += (score - p->score) / p->samples;
        /* Alone, a probe whose first samples already measure far worse than the best fresh
         * point is complete: the samples left would only confirm what is many times the
         * counters' noise, at the probe's cost. Sharing, the score moves with the others. */
        if (ctx->n_apps == 1 && p->samples < alloc_probe_samples(ctx)) {
                const struct allocator_point *best = NULL;

                for (unsigned i = 0; i < app->n_hist; i++)
                        if (&app->hist[i] != p && alloc_point_fresh(ctx, &app->hist[i]) &&
                            (!best || app->hist[i].score < best->score))
                                best = &app->hist[i];
                if (best && objective_better(p->score, best->score, ALLOCATOR_EARLY_WORSE)) {
                        p->samples = alloc_probe_samples(ctx);
                        scaling_complete(&app->scaling, p->cores, p->freq_khz,
                                         alloc_probe_samples(ctx));
                        app->search.early_rejects++;
                        app->search.early_rejected_here = true;
                }
        }
}

/* Where a new app warms up, learns P and starts its search: every allowed core, unless it
 * is alone on a wide range, has no slowdown limit, and its first intervals on every core
 * (its warm-up, which the estimator keeps out of P's fit) show a speedup so small that
 * Amdahl's law, with P from that one speedup (eq. 10), keeps at least
 * ALLOCATOR_START_KEEP of it on a quarter of the cores. It then warms up and learns there,
 * two rungs down the halving ladder, instead of spending its warm-up and learning on cores
 * it does not use, at a cost the search cannot win back. A start-up that is sequential work (a real
 * app reading its input) shows a speedup near 1 and moves too: it loses nothing there, and eq. 9
 * learns P on any count of two cores or more. Decided once, at the first decision with a speedup
 * measured on every core; the reason is kept in learn_at.reason. Otherwise every allowed core:
 * an app that scales loses more by a slow start than the ladder's probes cost it; a narrow
 * range is searched by single steps from the top anyway; a slowdown limit is relative to
 * every core and cannot be checked before P is known; sharing the machine, learners are
 * capped by the partition (ALLOCATOR_LEARNER_CORES). */
unsigned alloc_start_cores(const struct allocator_ctx *ctx, struct allocator_app *a,
                           const struct estimate *e, const struct allocator_bounds *b)
{
        unsigned n, q;
        double p, s_all, s_q;

        if (!alloc_range_wide(b) || isfinite(a->policy->max_slowdown))
                return b->max_cores;
        if (a->learn_at.decided)
                return a->learn_at.cores >= b->min_cores && a->learn_at.cores <= b->max_cores
                           ? a->learn_at.cores
                           : b->max_cores;
        /* Not yet measured where it was placed: wait for it there. Alone, that is every
         * core; sharing, the share it was given (at least a wide range's worth). */
        if (!e || !(e->known & ESTIMATE_SPEEDUP) || allocator_searched(a))
                return b->max_cores;
        n = e->n_cores;
        if (ctx->n_apps == 1 ? n != b->max_cores : n < ALLOCATOR_WIDE_RANGE || n > b->max_cores)
                return b->max_cores;
        q = (unsigned)(n * ALLOCATOR_START_FRACTION);
        if (q < b->min_cores)
                q = b->min_cores;
        if (q < ALLOCATOR_LEARN_MIN_CORES)
                q = ALLOCATOR_LEARN_MIN_CORES;
        a->learn_at.decided = true;
        a->learn_at.cores = b->max_cores;
        if (q >= n || model_p_from_speedup(n, e->speedup, &p) < 0 ||
            model_speedup(p, n, &s_all) < 0 || model_speedup(p, q, &s_q) < 0 || !(s_all > 0))
                return a->learn_at.cores;
        if (s_q / s_all >= ALLOCATOR_START_KEEP) {
                a->learn_at.cores = q;
                snprintf(a->learn_at.reason, sizeof(a->learn_at.reason),
                         "speedup %.1f on %u core%s: P %.2f keeps %.0f%% of it on %u; warming up "
                         "there",
                         e->speedup, n, plural_s(n), p, 100 * s_q / s_all, q);
        }
        return a->learn_at.cores;
}

/* Student's t, two-sided 95%, for 2..7 degrees of freedom; index 0 and 1 unused. */
static const double allocator_t95[] = {NAN, NAN, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365};

/* P is settled when its 95% confidence half-width is no wider than that of 8 points with a
 * standard error of ALLOCATOR_MAX_P_STDERR: a standard error from few points is itself
 * uncertain, so it must be smaller. */
bool alloc_p_settled(const struct estimate *e)
{
        size_t df;

        if (!e || !(e->known & ESTIMATE_P_LS) || !(e->p_points >= ALLOCATOR_MIN_POINTS) ||
            !isfinite(e->p_stderr))
                return false;
        df = (size_t)e->p_points - 1;
        if (df >= sizeof(allocator_t95) / sizeof(allocator_t95[0]))
                return e->p_stderr <= ALLOCATOR_MAX_P_STDERR;
        return e->p_stderr * allocator_t95[df] <=
               ALLOCATOR_MAX_P_STDERR *
                   allocator_t95[sizeof(allocator_t95) / sizeof(allocator_t95[0]) - 1];
}

/* The busiest core's IPC must fall by more than this from the fewest cores seen to the most
 * before a probe is worth its cost: without contention the busiest core's IPC is the app's
 * one-core IPC already. Above the counters' noise over a few intervals. */
#define ALLOCATOR_IPC1_PROBE_DROP 0.05

/* The estimate's IPC_I0(1) is the app's own, observed on one core at its frequency now. */
static bool ipc1_own(const struct estimate *e)
{
        return e && (e->known & ESTIMATE_IPC1) && e->ipc1_source == ESTIMATE_IPC1_ONE_CORE;
}

/* The probe has its figure: the app's own IPC_I0(1), from an interval on one core. The move
 * is made between two intervals, and a thread still on another CPU at the start of the first
 * one does not count on the probe's CPU: that interval is clean enough. */
bool alloc_ipc1_probe_done(const struct allocator_app *a, const struct estimate *e)
{
        return ipc1_own(e) && a->cores == 1 && e->intervals > a->ipc1.since;
}

/* The probe's want: one core at the frequency it was started at. */
static void ipc1_probe_want(struct allocator_app *a, const struct estimate *e)
{
        char ftext[32];

        a->want_cores = 1;
        a->want_freq_khz = a->ipc1.khz;
        a->exploring = true;
        snprintf(a->reason, sizeof(a->reason),
                 "one-core probe%s: the app's own IPC_I0(1) for eq. 9 (now %s)",
                 alloc_freq_text(a->want_freq_khz, ftext, sizeof(ftext)),
                 e->known & ESTIMATE_IPC1 ? estimate_ipc1_source_name(e->ipc1_source) : "none");
}

/* The one-core probe: with counters, eq. 9 needs IPC_I0(1) of the app itself, which only a
 * one-core interval gives (on N cores, contention lowers every core's IPC alike). Where the
 * policy allows one core, contention shows (the busiest core's IPC falls as cores are added)
 * and the estimator has no such figure at the app's frequency, the app runs on one core there
 * until one interval gave it, at most ALLOCATOR_IPC1_PROBE_INTERVALS intervals. Once when
 * contention first shows; then the estimator carries the figure to other frequencies, and
 * once more at each frequency the search settles at, where the carried figure is used for
 * good. True when it starts now (the app enters PROBE). */
bool alloc_ipc1_probe_start(const struct allocator_ctx *ctx, struct allocator_app *a,
                            const struct estimate *e, const struct allocator_bounds *b)
{
        int fi = ctx->n_freqs ? alloc_freq_index(ctx, a->freq_khz) : 0;

        if (!e || fi < 0 || fi >= 64 || (a->ipc1.probed & (UINT64_C(1) << fi)) ||
            b->min_cores > 1 || b->max_cores < 2 || a->cores < 2 ||
            e->speedup_source != ESTIMATE_SPEEDUP_COUNTERS || ipc1_own(e))
                return false;
        if (!a->ipc1.probed
                ? !(e->known & ESTIMATE_IPC_CORE_DROP) ||
                      !(e->ipc_core_drop > ALLOCATOR_IPC1_PROBE_DROP)
                : !alloc_phase_settled(a) || e->ipc1_source != ESTIMATE_IPC1_ONE_CORE_SCALED)
                return false;
        a->ipc1.probed |= UINT64_C(1) << fi;
        a->ipc1.since = e->intervals;
        a->ipc1.khz = a->freq_khz;
        a->ipc1.back_cores = a->cores;
        a->ipc1.back_khz = a->freq_khz;
        ipc1_probe_want(a, e);
        return true;
}

/* The probe goes on until it has its figure or its bound, then the app goes back where it
 * was: the probe's point is no candidate of the search. True when it is over. */
bool alloc_ipc1_probe_step(struct allocator_app *a, const struct estimate *e)
{
        bool done = alloc_ipc1_probe_done(a, e);
        char ftext[32];

        if (!done && e->intervals - a->ipc1.since < ALLOCATOR_IPC1_PROBE_INTERVALS) {
                ipc1_probe_want(a, e);
                return false;
        }
        a->want_cores = a->ipc1.back_cores;
        a->want_freq_khz = a->ipc1.back_khz;
        if (done)
                snprintf(a->reason, sizeof(a->reason),
                         "one-core probe done: IPC_I0(1) %.3f; back to %u core%s%s", e->ipc1,
                         a->want_cores, plural_s(a->want_cores),
                         alloc_freq_text(a->want_freq_khz, ftext, sizeof(ftext)));
        else
                snprintf(a->reason, sizeof(a->reason),
                         "one-core probe ended without IPC_I0(1) after %u intervals; "
                         "eq. 9 uses %s",
                         ALLOCATOR_IPC1_PROBE_INTERVALS, estimate_ipc1_source_name(e->ipc1_source));
        return true;
}

/* Places a returning app at its remembered configuration, the search set up to verify it
 * with small steps (the app enters RECALL). False when the policy's bounds no longer allow it
 * (then it learns). */
bool alloc_hint_start(const struct allocator_ctx *ctx, struct allocator_app *a,
                      const struct allocator_bounds *b)
{
        char ftext[32];
        bool freq_ok =
            !ctx->n_freqs || !a->hint.freq_khz ||
            (alloc_freq_in(b, a->hint.freq_khz) && alloc_freq_index(ctx, a->hint.freq_khz) >= 0);

        if (a->hint.cores < b->min_cores || a->hint.cores > b->max_cores || !freq_ok) {
                a->hint.cores = 0;
                return false;
        }
        a->from_history = true;
        if (a->hint.explore_from)
                a->hint.explore_cap = a->hint.cores;
        a->search.step_cores = a->search.step_freqs = 1;
        a->search.halving = false;
        a->want_cores = a->hint.cores;
        a->want_freq_khz = !ctx->n_freqs      ? a->freq_khz
                           : a->hint.freq_khz ? a->hint.freq_khz
                                              : b->max_khz;
        a->hint.freq_khz = a->want_freq_khz;
        snprintf(a->reason, sizeof(a->reason),
                 "from history: %u core%s%s, the best of a past run; verifying", a->hint.cores,
                 plural_s(a->hint.cores), alloc_freq_text(a->want_freq_khz, ftext, sizeof(ftext)));
        return true;
}

/* The returning app at its remembered configuration: measuring it, then confirming it when it
 * measures within ALLOCATOR_HISTORY_VERIFY of the remembered score (it stays while that
 * measurement is fresh). Measured further off, moved (sharing trimmed it), or once the
 * measurement is stale, the hint is spent (hint.cores 0) and the measured search goes on from
 * here. */
enum hint_verdict alloc_hint_check(const struct allocator_ctx *ctx, struct allocator_app *a,
                                   const struct allocator_point *cur, double best_pred)
{
        char ftext[32];
        double off;

        if (!a->hint.verified && !a->hint.explore_from &&
            (a->cores != a->hint.cores || (ctx->n_freqs && a->freq_khz != a->hint.freq_khz))) {
                /* The partition gave it other cores (or the shared domain another clock)
                 * than it remembered: its past run ended there sharing the machine
                 * otherwise. */
                a->hint.cores = 0;
                return HINT_MOVED;
        }
        if (a->cores != a->hint.cores || (ctx->n_freqs && a->freq_khz != a->hint.freq_khz) ||
            (!cur && a->hint.verified) || (a->hint.explore_from && a->progress_known)) {
                a->hint.cores = 0;
                return HINT_SPENT;
        }
        alloc_freq_text(a->hint.freq_khz, ftext, sizeof(ftext));
        if (a->hint.explore_from) {
                /* Held for the whole run: the run is the measurement. */
                alloc_stay(a, "%s", "");
                snprintf(a->reason, sizeof(a->reason),
                         "from history: exploring %u core%s%s for this run (its past runs ran at "
                         "about %u): whole runs at two core counts measure its extra work",
                         a->hint.cores, plural_s(a->hint.cores), ftext, a->hint.explore_from);
                return HINT_EXPLORE;
        }
        if (!isfinite(a->hint.score)) {
                /* Remembered without a measured score (no counters): nothing to verify by.
                 * It holds until the model can rank configurations; the model decides then. */
                if (!isnan(best_pred)) {
                        a->hint.cores = 0;
                        return HINT_SPENT;
                }
                alloc_stay(a, "%s", "");
                snprintf(a->reason, sizeof(a->reason),
                         "from history: %u core%s%s (remembered without a measured score)",
                         a->hint.cores, plural_s(a->hint.cores), ftext);
                return HINT_HOLD;
        }
        if (!cur) {
                alloc_stay(a, "%s", "");
                snprintf(a->reason, sizeof(a->reason), "from history: %u core%s%s; measuring it",
                         a->hint.cores, plural_s(a->hint.cores), ftext);
                return HINT_HOLD;
        }
        off = a->hint.score != 0 ? (cur->score - a->hint.score) / fabs(a->hint.score) : NAN;
        alloc_stay(a, "%s", "");
        if (!a->hint.verified && !(fabs(off) <= ALLOCATOR_HISTORY_VERIFY)) {
                /* Another load, input or phase than last time: search from here. */
                a->hint.cores = 0;
                snprintf(a->reason, sizeof(a->reason),
                         "from history: %u core%s%s measured %+.0f%% off the remembered score; "
                         "searching around it",
                         a->cores, plural_s(a->cores), ftext, 100 * off);
                return HINT_OFF;
        }
        /* Verified, it holds for as long as a measurement stays fresh, counted from the
         * verification: the point it holds is measured again at every sample and would
         * never go stale, and a later phase the estimator cannot see at one core count was
         * held for the rest of the run (bench_random's seed 93001: a first phase's 61 cores
         * at 3000 MHz through a second that wants 2100 MHz, 3.46 x the oracle's EDP against
         * 2.63 on its first run). Then the search decides, as for any settled app. */
        if (!a->hint.verified)
                a->hint.verified = ctx->decision;
        else if (!alloc_decision_recent(ctx, a->hint.verified)) {
                a->hint.cores = 0;
                return HINT_SPENT;
        }
        snprintf(a->reason, sizeof(a->reason),
                 "from history: %u core%s%s verified (measured %+.0f%% of the remembered score)",
                 a->hint.cores, plural_s(a->hint.cores), ftext, 100 * off);
        return HINT_VERIFIED;
}

/* NEW, LEARN: until P is known well enough, the app runs as its baseline (start_cores, top
 * frequency): moving on a rough estimate would lock in its error, since one core teaches
 * nothing about P. If P will not settle (rows, spinning), a measured baseline is enough to
 * start the measured search; time-sharing with others, the baseline cannot be measured, and
 * the search starts without it. The search's first step is taken in the same decision. */
enum allocator_phase alloc_on_learn(struct decision *d)
{
        const struct allocator_ctx *ctx = d->ctx;
        const struct estimate *e = d->e;
        struct allocator_app *a = d->a;

        if (alloc_p_settled(e) || (e && e->intervals >= ALLOCATOR_LEARN_MAX_INTERVALS &&
                                   (d->base_meas || (ctx->learners_share && ctx->n_apps > 1))))
                return alloc_on_measured(d, ALLOCATOR_PHASE_SEARCH);
        a->shares_cpus = ctx->learners_share; /* allocator_decide may partition it */
        a->want_cores = d->start;
        a->want_freq_khz = d->b.max_khz;
        if (!e || !(e->known & ESTIMATE_P_LS))
                snprintf(a->reason, sizeof(a->reason), "learning: no estimate of P yet");
        else
                snprintf(a->reason, sizeof(a->reason),
                         "learning: P = %.2f ± %.2f from %.0f intervals is not settled", e->p_ls,
                         e->p_stderr, e->p_points);
        if (d->start < d->b.max_cores) {
                size_t len = strlen(a->reason);

                snprintf(a->reason + len, sizeof(a->reason) - len, " (%s)", a->learn_at.reason);
        }
        return ALLOCATOR_PHASE_LEARN;
}
