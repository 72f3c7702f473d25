#include "pctl/allocator.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/util.h"

#include "alloc_risk.h"

/* A measurement older than this many decisions is stale: phases change, so is the truth. */
#define ALLOCATOR_STALE_DECISIONS 60
/* What an estimate of P needs before the allocator acts on it: the confidence that 8 points
 * with a standard error of 0.03 give, reached with fewer points when their spread is small
 * (noise-free counters give an exact P after a few intervals). */
#define ALLOCATOR_MIN_POINTS 3.0
#define ALLOCATOR_MAX_P_STDERR 0.03
/* Without a settled P after this many intervals (measured rows, spinning), the search starts
 * from the measured baseline anyway: measurement decides, P only guides. */
#define ALLOCATOR_LEARN_MAX_INTERVALS 20
/* Samples in a point's running mean. */
#define ALLOCATOR_MEAN_SAMPLES 8
/* A measured point must beat the incumbent by this much to replace it during the search;
 * smaller than the hysteresis of model moves, since both figures are measured. */
#define ALLOCATOR_SEARCH_MARGIN 0.01
/* Intervals after a move within which a phase change the estimator reports is taken for the
 * move itself (its default detection needs 3 misfits, plus the one straddling the move). */
#define ALLOCATOR_PHASE_AFTER_MOVE 5
/* A revisited point whose new measurement differs from its old one by more than this
 * fraction: the app has changed and the search starts again from here. Far above the
 * counters' noise over a probe, far below what a phase change does to the score. Checked only
 * for an app alone: sharing the machine, its score also moves with what the others do. */
#define ALLOCATOR_DRIFT 0.2
/* A move measured worse by this fraction at one frequency (a core move) or one core count (a
 * frequency move) is taken for worse at any other: near an optimum the two act on the score
 * nearly independently, and their coupling does not undo a loss this large. Ten times the
 * counters' noise over a probe. */
#define ALLOCATOR_FAR_WORSE 0.15
/* Alone, a probe whose first sample measures worse than the best fresh point by this fraction
 * (twenty times the counters' noise on one sample) is complete after that sample. */
#define ALLOCATOR_EARLY_WORSE 0.2
/* Sharing: taking a core an app holds now (a move for it) must save this much more, by the
 * model, than denying a core another app does not hold yet. */
#define ALLOCATOR_TRIM_STICKY 1.0
/* Sharing, an app the model cannot rank yet (a learner) is given at most its fair share by
 * weight and at most this many cores (per unit of weight): enough to learn P on, without
 * taking a settled app's cores for the learning. */
#define ALLOCATOR_LEARNER_CORES 8.0
/* ESTIMA's extrapolation (model/scaling.c): believed when it reproduces every measured
 * score within ALLOCATOR_SCALING_TRUST; at most ALLOCATOR_SCALING_JUMPS jumps to its predicted
 * optimum per search; a core move it predicts worse by the hysteresis, or by four times its
 * error at the measured points, is not probed. */
#define ALLOCATOR_SCALING_JUMPS 3
#define ALLOCATOR_SCALING_TRUST 0.05
/* A core range this wide (max - min) is searched by halving and doubling (a ladder in log
 * space) before the pattern search; a narrower one by steps of one core. */
#define ALLOCATOR_WIDE_RANGE 8
/* Alone on a wide range, a new app whose speedup on every core is small warms up and learns
 * P on this fraction of its allowed cores (docs/allocator.md, "Where a new app starts"),
 * when Amdahl's law keeps at least ALLOCATOR_START_KEEP of its speedup there. */
#define ALLOCATOR_START_FRACTION 0.25
#define ALLOCATOR_START_KEEP 0.75

static struct allocator_point *hist_find(struct allocator_app *a, unsigned cores, unsigned freq_khz)
{
        for (unsigned i = 0; i < a->n_hist; i++)
                if (a->hist[i].cores == cores && a->hist[i].freq_khz == freq_khz)
                        return &a->hist[i];
        return NULL;
}

static unsigned probe_samples(const struct allocator_ctx *ctx)
{
        return ctx->probe_samples ? ctx->probe_samples : ALLOCATOR_PROBE_SAMPLES;
}

/* Measured recently and over enough samples to be compared. */
static bool point_fresh(const struct allocator_ctx *ctx, const struct allocator_point *p)
{
        return ctx->decision - p->decision <= ALLOCATOR_STALE_DECISIONS &&
               p->samples >= probe_samples(ctx);
}

/* The point (cores, freq_khz) if it is fresh. */
static const struct allocator_point *hist_fresh(const struct allocator_ctx *ctx,
                                                struct allocator_app *a, unsigned cores,
                                                unsigned freq_khz)
{
        const struct allocator_point *p = hist_find(a, cores, freq_khz);

        return p && point_fresh(ctx, p) ? p : NULL;
}

static void search_reset(struct allocator_app *a)
{
        a->n_hist = 0;
        a->step_cores = a->step_freqs = 0;
        a->converged = false;
        a->halving = false;
        a->model_cores = a->model_freq_khz = 0;
        a->model_refuted = false;
        a->scaling_jumps = 0;
        scaling_reset(&a->scaling);
}

static const struct allocator_point *best_fresh(const struct allocator_ctx *ctx,
                                                const struct allocator_app *app);

/* The app changed phase: before its measurements go, the first phase's best is kept for
 * pctl history (allocator_best): a returning app starts in its first phase. */
static void phase_reset(const struct allocator_ctx *ctx, struct allocator_app *app)
{
        const struct allocator_point *best = best_fresh(ctx, app);

        if (!app->start_saved && app->searching && best) {
                app->start_best = *best;
                app->start_saved = true;
        }
        search_reset(app);
}

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
        if (a->idle_run_samples < ALLOCATOR_MEAN_SAMPLES)
                a->idle_run_samples++;
        a->idle_run_share += (share - a->idle_run_share) / a->idle_run_samples;
}

/* The reason of a decision the model made for an app whose idle cores run: says so, with the
 * share its predictions charged, where it is above the counters' noise. */
#define ALLOCATOR_IDLE_RUN_NOTE 0.05

static void idle_run_note(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        size_t len = strlen(a->reason);

        if (ctx->pm && a->idle_run_samples && a->idle_run_share >= ALLOCATOR_IDLE_RUN_NOTE)
                snprintf(a->reason + len, sizeof(a->reason) - len,
                         "; %.0f%% of its idle cores run (spinning): charged busy",
                         100 * a->idle_run_share);
}

/* The app's rate of progress over the interval just observed: units of work per second from
 * its own markers when it has them, else (rate as given) instructions per second. Scores in
 * one unit are not comparable with the other's: when the source changes, what was measured
 * is dropped. False when the markers did not move this interval (too coarse for it): the
 * next reading then covers the longer time. */
static bool progress_rate(struct allocator_app *a, double *rate)
{
        bool had = a->progress_prev_ns != 0;
        uint64_t du, dt;

        if (!a->progress_known) {
                if (a->progress_by_markers) {
                        a->progress_by_markers = false;
                        a->n_ipu = 0;
                        a->work_x = 0;
                        search_reset(a);
                }
                a->progress_prev_ns = 0;
                return true;
        }
        if (!had || a->progress_ns <= a->progress_prev_ns ||
            a->progress_units < a->progress_prev_units) {
                a->progress_prev_units = a->progress_units;
                a->progress_prev_ns = a->progress_ns;
                return false;
        }
        du = a->progress_units - a->progress_prev_units;
        dt = a->progress_ns - a->progress_prev_ns;
        if (!du)
                return false;
        a->progress_prev_units = a->progress_units;
        a->progress_prev_ns = a->progress_ns;
        if (!a->progress_by_markers) {
                a->progress_by_markers = true;
                search_reset(a);
        }
        *rate = du / (dt / 1e9);
        return true;
}

/* The one rule for static power, in measured scores and in predictions alike: the machine's
 * static power (uncore, CPUs no app holds) is shared by the apps that run, and an app pays its
 * share, not all of it, so one more core is worth less to it than alone (the several-apps
 * objective is the sum of the apps' own figures). The estimator charges it in full to each app
 * (docs/estimator.md, "Power share"), in its measurements and its predictions; this takes the
 * others' shares off both. */
static double static_share(const struct allocator_ctx *ctx, double power_w)
{
        if (ctx->n_apps > 1 && ctx->pm && isfinite(power_w))
                return power_w - ctx->pm->static_w * (1 - 1.0 / ctx->n_apps);
        return power_w;
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
        for (i = 0; i < a->n_ipu && a->ipu[i].cores != a->cores; i++)
                ;
        if (i == a->n_ipu) {
                if (a->n_ipu == ALLOCATOR_IPU_POINTS)
                        return; /* enough counts to fit from */
                a->ipu[a->n_ipu++] = (typeof(a->ipu[0])){.cores = a->cores};
        }
        if (a->ipu[i].samples < ALLOCATOR_MEAN_SAMPLES)
                a->ipu[i].samples++;
        a->ipu[i].ipu += (ipu - a->ipu[i].ipu) / a->ipu[i].samples;
        for (i = 0; i < a->n_ipu; i++) {
                double k = a->ipu[i].cores, w = a->ipu[i].samples;

                n += w;
                sk += w * k;
                su += w * a->ipu[i].ipu;
                skk += w * k * k;
                sku += w * k * a->ipu[i].ipu;
                kmin = a->ipu[i].cores < kmin ? a->ipu[i].cores : kmin;
                kmax = a->ipu[i].cores > kmax ? a->ipu[i].cores : kmax;
        }
        a->work_x = 0;
        if (kmax == kmin || !(n * skk - sk * sk > 0))
                return;
        slope = (n * sku - sk * su) / (n * skk - sk * sk);
        icpt = (su - slope * sk) / n;
        if (!(slope + icpt > 0))
                return;
        x = slope / (slope + icpt);
        if (x * (kmax - kmin) >= ALLOCATOR_INFLATION_MIN)
                a->work_x = fmin(x, 1);
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
        if (app->cores != app->at_cores || app->freq_khz != app->at_freq_khz) {
                app->at_cores = app->cores;
                app->at_freq_khz = app->freq_khz;
                app->samples_here = 0;
                app->early_rejected_here = false;
        }
        /* A new phase makes every old measurement of this app meaningless. But a "phase" the
         * estimator sees right after we moved the app is our move showing where the Amdahl
         * model is wrong (speedup falling past some N): the measurements still hold then. */
        if (e->phase_changes != app->phase_changes_seen) {
                app->phase_changes_seen = e->phase_changes;
                if (!app->searching || app->samples_here > ALLOCATOR_PHASE_AFTER_MOVE)
                        phase_reset(ctx, app);
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
        if (rate_ok && !app->progress_by_markers)
                rate = alloc_progress_rate(app, rate);
        /* The first interval after a change may straddle it. */
        if (++app->samples_here < 2 || !rate_ok)
                return;
        if (app->progress_by_markers && (e->known & ESTIMATE_IPS))
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
        power_w = static_share(ctx, power_w);
        if (objective_score_rate(obj, power_w, rate, &score) < 0)
                return;
        scaling_add_stalls(&app->scaling, app->cores, app->freq_khz, rate, power_w,
                           (e->known & ESTIMATE_STALLS) && e->i0 > 0 ? e->stalls / e->i0 : NAN,
                           ALLOCATOR_MEAN_SAMPLES);
        p = hist_find(app, app->cores, app->freq_khz);
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
        } else if (app->samples_here == 2) {
                /* The first sample of a new visit. A stale point is measured afresh; a
                 * complete one is measured again on the side and compared. */
                if (!point_fresh(ctx, p))
                        p->samples = 0;
                else if (ctx->n_apps == 1)
                        p->revisit_samples = 1;
                p->revisit_score = score;
        } else if (p->revisit_samples) {
                p->revisit_samples++;
                p->revisit_score += (score - p->revisit_score) / p->revisit_samples;
        }
        p->decision = ctx->decision;
        if (p->revisit_samples) {
                struct allocator_point again = *p;

                if (p->revisit_samples < probe_samples(ctx))
                        return;
                p->revisit_samples = 0;
                if (fabs(again.revisit_score - again.score) <= ALLOCATOR_DRIFT * fabs(again.score))
                        return; /* the same app: the point keeps its longer mean */
                /* The app changed: this visit is the only measurement that holds. */
                phase_reset(ctx, app);
                app->hist[0] = (struct allocator_point){.cores = again.cores,
                                                        .freq_khz = again.freq_khz,
                                                        .score = again.revisit_score,
                                                        .samples = probe_samples(ctx),
                                                        .decision = ctx->decision};
                app->n_hist = 1;
                app->drifts++;
                return;
        }
        /* Running mean over the last few samples: enough to average the counters' noise,
         * recent enough to follow a drift. */
        p->samples = p->samples < ALLOCATOR_MEAN_SAMPLES ? p->samples + 1 : ALLOCATOR_MEAN_SAMPLES;
        p->score += (score - p->score) / p->samples;
        /* Alone, a probe whose first samples already measure far worse than the best fresh
         * point is complete: the samples left would only confirm what is many times the
         * counters' noise, at the probe's cost. Sharing, the score moves with the others. */
        if (ctx->n_apps == 1 && p->samples < probe_samples(ctx)) {
                const struct allocator_point *best = NULL;

                for (unsigned i = 0; i < app->n_hist; i++)
                        if (&app->hist[i] != p && point_fresh(ctx, &app->hist[i]) &&
                            (!best || app->hist[i].score < best->score))
                                best = &app->hist[i];
                if (best && objective_better(p->score, best->score, ALLOCATOR_EARLY_WORSE)) {
                        p->samples = probe_samples(ctx);
                        scaling_complete(&app->scaling, p->cores, p->freq_khz, probe_samples(ctx));
                        app->early_rejects++;
                        app->early_rejected_here = true;
                }
        }
}

struct allocator_bounds {
        unsigned min_cores, max_cores;
        unsigned min_khz, max_khz; /* inclusive; 0/0 when there is no DVFS */
};

static void app_bounds(const struct allocator_ctx *ctx, const struct policy *pol,
                       struct allocator_bounds *b)
{
        b->max_cores =
            pol->max_cores && pol->max_cores < ctx->n_cpus ? pol->max_cores : ctx->n_cpus;
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

static bool freq_in(const struct allocator_bounds *b, unsigned f)
{
        return f >= b->min_khz && f <= b->max_khz;
}

static bool range_wide(const struct allocator_bounds *b)
{
        return b->max_cores - b->min_cores >= ALLOCATOR_WIDE_RANGE;
}

/* Where a new app warms up, learns P and starts its search: every allowed core, unless it
 * is alone on a wide range, has no slowdown limit, and its first intervals on every core
 * (its warm-up, which the estimator keeps out of P's fit) show a speedup so small that
 * Amdahl's law, with P from that one speedup (eq. 10), keeps at least
 * ALLOCATOR_START_KEEP of it on a quarter of the cores. It then warms up and learns there,
 * two rungs down the halving ladder, instead of spending its first 1.4 s on cores it does
 * not use (an app that stops scaling at 16 of 64 cores ran that long at 1.29x its best
 * EDP before the search began). A start-up that is sequential work (a real app reading its
 * input) shows a speedup near 1 and moves too: it loses nothing there, and eq. 9 learns P
 * on any count of two cores or more. Decided once, at the first decision with a speedup
 * measured on every core; the reason is kept in start_reason. Otherwise every allowed core:
 * an app that scales loses more by a slow start than the ladder's probes cost it; a narrow
 * range is searched by single steps from the top anyway; a slowdown limit is relative to
 * every core and cannot be checked before P is known; sharing the machine, learners are
 * capped by the partition (ALLOCATOR_LEARNER_CORES). */
static unsigned start_cores(const struct allocator_ctx *ctx, struct allocator_app *a,
                            const struct estimate *e, const struct allocator_bounds *b)
{
        unsigned n, q;
        double p, s_all, s_q;

        if (!range_wide(b) || isfinite(a->policy->max_slowdown))
                return b->max_cores;
        if (a->start_decided)
                return a->start_at >= b->min_cores && a->start_at <= b->max_cores ? a->start_at
                                                                                  : b->max_cores;
        /* Not yet measured where it was placed: wait for it there. Alone, that is every
         * core; sharing, the share it was given (at least a wide range's worth). */
        if (!e || !(e->known & ESTIMATE_SPEEDUP) || a->searching)
                return b->max_cores;
        n = e->n_cores;
        if (ctx->n_apps == 1 ? n != b->max_cores : n < ALLOCATOR_WIDE_RANGE || n > b->max_cores)
                return b->max_cores;
        q = (unsigned)(n * ALLOCATOR_START_FRACTION);
        if (q < b->min_cores)
                q = b->min_cores;
        if (q < 2)
                q = 2;
        a->start_decided = true;
        a->start_at = b->max_cores;
        if (q >= n || model_p_from_speedup(n, e->speedup, &p) < 0 ||
            model_speedup(p, n, &s_all) < 0 || model_speedup(p, q, &s_q) < 0 || !(s_all > 0))
                return a->start_at;
        if (s_q / s_all >= ALLOCATOR_START_KEEP) {
                a->start_at = q;
                snprintf(a->start_reason, sizeof(a->start_reason),
                         "speedup %.1f on %u cores: P %.2f keeps %.0f%% of it on %u; warming up "
                         "there",
                         e->speedup, n, p, 100 * s_q / s_all, q);
        }
        return a->start_at;
}

/* A measured point the policy's bounds allow. */
static bool point_in_bounds(const struct allocator_ctx *ctx, const struct allocator_bounds *b,
                            const struct allocator_point *p)
{
        return p->cores >= b->min_cores && p->cores <= b->max_cores &&
               (!ctx->n_freqs || freq_in(b, p->freq_khz));
}

/* The predicted score of (cores, freq), NaN when the model cannot say. */
/* time_k: a factor on the predicted time (1: the estimator's prediction as it is). */
static double predicted_score_k(const struct allocator_ctx *ctx, const struct allocator_app *a,
                                enum objective_kind o, unsigned cores, unsigned freq_khz,
                                double *time_s, double time_k)
{
        struct model_prediction pr;
        double score;

        if (estimator_predict(ctx->est, a->id, cores, freq_khz, ctx->pm, &pr) < 0)
                return NAN;
        /* The model's time is for the instructions; with extra work a unit of it takes
         * 1 + X (k - 1) times as many (X measured from the app's markers, else 0). */
        pr.time_s *= time_k * (1 + a->work_x * (cores > 1 ? cores - 1.0 : 0.0));
        /* Amdahl's law counts the cores its work leaves idle as idle; an app whose waiting
         * threads spin keeps a measured share of them running: a busy core's power each. */
        if (a->idle_run_samples && ctx->pm && isfinite(pr.power_w) && cores > pr.busy_cores) {
                unsigned f = freq_khz ? freq_khz : model_power_max_freq(ctx->pm);
                double run = a->idle_run_share * (cores - pr.busy_cores), busy_w, idle_w;

                if (model_power_at(ctx->pm, f, run, 0, &busy_w) == 0 &&
                    model_power_at(ctx->pm, f, 0, run, &idle_w) == 0)
                        pr.power_w += busy_w - idle_w;
        }
        pr.power_w = static_share(ctx, pr.power_w);
        if (time_s)
                *time_s = pr.time_s;
        if (objective_score_prediction(o, &pr, &score) < 0)
                return NAN;
        return score;
}

static double predicted_score(const struct allocator_ctx *ctx, const struct allocator_app *a,
                              enum objective_kind o, unsigned cores, unsigned freq_khz,
                              double *time_s)
{
        return predicted_score_k(ctx, a, o, cores, freq_khz, time_s, 1.0);
}

static const char *freq_text(unsigned khz, char *buf, size_t size)
{
        if (khz)
                snprintf(buf, size, " %u MHz", khz / 1000);
        else
                buf[0] = '\0';
        return buf;
}

static void stay(struct allocator_app *a, const char *fmt, const char *detail)
{
        a->want_cores = a->cores;
        a->want_freq_khz = a->freq_khz;
        snprintf(a->reason, sizeof(a->reason), fmt, detail);
}

/* Student's t, two-sided 95%, for 2..7 degrees of freedom; index 0 and 1 unused. */
static const double allocator_t95[] = {NAN, NAN, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365};

/* P is settled when its 95% confidence half-width is no wider than that of 8 points with a
 * standard error of ALLOCATOR_MAX_P_STDERR: a standard error from few points is itself
 * uncertain, so it must be smaller. */
static bool p_settled(const struct estimate *e)
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

/* Index of freq_khz among the settable frequencies, -1 if not one of them. */
static int freq_index(const struct allocator_ctx *ctx, unsigned freq_khz)
{
        for (unsigned i = 0; i < ctx->n_freqs; i++)
                if (ctx->freqs_khz[i] == freq_khz)
                        return (int)i;
        return -1;
}

/* The one-core probe's bound, in intervals: one is enough, three leave room for intervals the
 * estimator could not use. */
#define ALLOCATOR_IPC1_PROBE_INTERVALS 3
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
static bool ipc1_probe_done(const struct allocator_app *a, const struct estimate *e)
{
        return ipc1_own(e) && a->cores == 1 && e->intervals > a->ipc1_probe_since;
}

/* The one-core probe: with counters, eq. 9 needs IPC_I0(1) of the app itself, which only a
 * one-core interval gives (on N cores, contention lowers every core's IPC alike). Where the
 * policy allows one core, contention shows (the busiest core's IPC falls as cores are added)
 * and the estimator has no such figure at the app's frequency, the app runs on one core there
 * until one interval gave it, at most ALLOCATOR_IPC1_PROBE_INTERVALS intervals. Once when
 * contention first shows; then the estimator carries the figure to other frequencies, and
 * once more at each frequency the search settles at, where the carried figure is used for
 * good. True when it decided: the probe, or the way back from it. */
static bool ipc1_probe(const struct allocator_ctx *ctx, struct allocator_app *a,
                       const struct estimate *e, const struct allocator_bounds *b)
{
        int fi = ctx->n_freqs ? freq_index(ctx, a->freq_khz) : 0;
        char ftext[32];

        if (a->ipc1_probing) {
                bool done = ipc1_probe_done(a, e);

                if (!done && e->intervals - a->ipc1_probe_since < ALLOCATOR_IPC1_PROBE_INTERVALS)
                        goto probe;
                a->ipc1_probing = false;
                /* Back where it was: the probe's point is no candidate of the search. */
                a->want_cores = a->ipc1_back_cores;
                a->want_freq_khz = a->ipc1_back_khz;
                if (done)
                        snprintf(a->reason, sizeof(a->reason),
                                 "one-core probe done: IPC_I0(1) %.3f; back to %u cores%s", e->ipc1,
                                 a->want_cores, freq_text(a->want_freq_khz, ftext, sizeof(ftext)));
                else
                        snprintf(a->reason, sizeof(a->reason),
                                 "one-core probe ended without IPC_I0(1) after %u intervals; "
                                 "eq. 9 uses %s",
                                 ALLOCATOR_IPC1_PROBE_INTERVALS,
                                 estimate_ipc1_source_name(e->ipc1_source));
                return true;
        }
        if (!e || fi < 0 || fi >= 64 || (a->ipc1_probed & (UINT64_C(1) << fi)) ||
            b->min_cores > 1 || b->max_cores < 2 || a->cores < 2 ||
            e->speedup_source != ESTIMATE_SPEEDUP_COUNTERS || ipc1_own(e))
                return false;
        if (!a->ipc1_probed ? !(e->known & ESTIMATE_IPC_CORE_DROP) ||
                                  !(e->ipc_core_drop > ALLOCATOR_IPC1_PROBE_DROP)
                            : !a->converged || e->ipc1_source != ESTIMATE_IPC1_ONE_CORE_SCALED)
                return false;
        a->ipc1_probing = true;
        a->ipc1_probed |= UINT64_C(1) << fi;
        a->ipc1_probe_since = e->intervals;
        a->ipc1_probe_khz = a->freq_khz;
        a->ipc1_back_cores = a->cores;
        a->ipc1_back_khz = a->freq_khz;
probe:
        a->want_cores = 1;
        a->want_freq_khz = a->ipc1_probe_khz;
        a->exploring = true;
        snprintf(a->reason, sizeof(a->reason),
                 "one-core probe%s: the app's own IPC_I0(1) for eq. 9 (now %s)",
                 freq_text(a->want_freq_khz, ftext, sizeof(ftext)),
                 e->known & ESTIMATE_IPC1 ? estimate_ipc1_source_name(e->ipc1_source) : "none");
        return true;
}

/* Whether the move (cores, freq) -> (to_cores, to_freq) is known to be worse without
 * measuring it: the same move, made from a nearby core count (a frequency move) or a nearby
 * frequency (a core move), measured worse (close by: see below). Core count and frequency act on an
 * app's score nearly independently near its optimum, so the compass search need not test again, at
 * every new best point, the direction that failed one step away. */
static bool move_known_worse(const struct allocator_ctx *ctx, struct allocator_app *a,
                             unsigned cores, unsigned freq_khz, unsigned to_cores,
                             unsigned to_freq_khz)
{
        int fi = freq_index(ctx, freq_khz);
        /* Close by: within the search's step, a quarter of the core count, two P-states. */
        unsigned near_cores = a->step_cores > cores / 4 ? a->step_cores : cores / 4;
        int near_freqs = a->step_freqs > 2 ? (int)a->step_freqs : 2;

        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *from = &a->hist[i], *to;
                bool near;

                if (!point_fresh(ctx, from))
                        continue;
                if (to_freq_khz == freq_khz) {
                        /* A core move, seen at another frequency. */
                        int d = freq_index(ctx, from->freq_khz) - fi;

                        if (from->cores != cores || from->freq_khz == freq_khz || fi < 0)
                                continue;
                        near = abs(d) <= near_freqs;
                        to = hist_fresh(ctx, a, to_cores, from->freq_khz);
                } else {
                        /* A frequency move, seen at another core count. */
                        if (from->freq_khz != freq_khz || from->cores == cores)
                                continue;
                        near = (from->cores > cores ? from->cores - cores : cores - from->cores) <=
                               near_cores;
                        to = hist_fresh(ctx, a, from->cores, to_freq_khz);
                }
                /* Close by, worse by the search's margin; anywhere in the range, worse by
                 * ALLOCATOR_FAR_WORSE: a loss that large is not undone by the other
                 * dimension's coupling (the memory-bound i7 app lost 22% going from 4 to 3
                 * cores at 3700 MHz, and 24% again at 2400). */
                if (to && objective_better(to->score, from->score,
                                           near ? ALLOCATOR_SEARCH_MARGIN : ALLOCATOR_FAR_WORSE))
                        return true;
        }
        return false;
}

/* Whether sharing denied this configuration lately (see allocator_app.denied_cores). */
static bool denied(const struct allocator_ctx *ctx, const struct allocator_app *a, unsigned cores,
                   unsigned freq_khz)
{
        return a->denied_decision && cores == a->denied_cores && freq_khz == a->denied_freq_khz &&
               ctx->decision - a->denied_decision <= ALLOCATOR_STALE_DECISIONS;
}

/* The speedup stack's say in the search (docs/allocator.md, "The speedup stack"): a delimiter
 * that grows with the cores (sequential, sync, yield, imbalance) costing at least this share
 * of them makes the app try fewer cores first; interference as large (memory stalls, which a
 * lower clock relieves), a lower clock first. */
#define ALLOCATOR_STACK_SHARE 0.25

enum stack_hint_dir { STACK_HINT_NONE, STACK_HINT_FEWER_CORES, STACK_HINT_LOWER_FREQ };

struct stack_hint {
        enum stack_hint_dir dir;
        enum stack_component why; /* the largest delimiter of the direction */
        double cost;              /* its cores */
        double cores;             /* N of the stack */
        /* Fewer cores: the cores the app keeps busy (N minus the growing delimiters), and
         * whether the largest is a lock's (sync, yield), past which more cores add nothing. */
        unsigned busy;
        bool saturates;
};

/* The hint of the app's stack, if it was measured at the app's current core count. */
static struct stack_hint stack_hint(const struct allocator_app *a)
{
        static const enum stack_component growing[] = {STACK_SEQUENTIAL, STACK_SYNC, STACK_YIELD,
                                                       STACK_IMBALANCE};
        const struct stack *st = &a->stack;
        struct stack_hint h = {.dir = STACK_HINT_NONE};
        double grow = 0, top = -1, interference;
        enum stack_component clock_why = STACK_INTERFERENCE;

        if (!st->known || !(st->cores >= 1) || fabs(st->cores - a->cores) > 0.5)
                return h;
        h.cores = st->cores;
        for (unsigned i = 0; i < ARRAY_SIZE(growing); i++) {
                double c = st->component[growing[i]];

                if (!isfinite(c))
                        return h;
                grow += c;
                if (c > top) {
                        top = c;
                        h.why = growing[i];
                }
        }
        interference = st->component[STACK_INTERFERENCE];
        /* Where memory is split out, only memory falls with the clock: the rest of the
         * interference (cache, SMT) does not ask for a lower one. */
        if (stack_has(st, STACK_MEMORY)) {
                interference = st->component[STACK_MEMORY];
                clock_why = STACK_MEMORY;
        }
        if (grow >= ALLOCATOR_STACK_SHARE * st->cores && !(interference > grow)) {
                double busy = ceil(st->cores - grow - 1e-9);

                h.dir = STACK_HINT_FEWER_CORES;
                h.cost = top;
                h.busy = busy < 1 ? 1 : (unsigned)busy;
                h.saturates = h.why == STACK_SYNC || h.why == STACK_YIELD;
        } else if (interference >= ALLOCATOR_STACK_SHARE * st->cores) {
                h.dir = STACK_HINT_LOWER_FREQ;
                h.why = clock_why;
                h.cost = interference;
        }
        return h;
}

struct allocator_cand {
        unsigned cores, freq_khz;
        double pred; /* the model's score, NaN when it cannot say */
};

/* The unmeasured neighbours of (cores, freq) at the current steps, in bounds and within the
 * slowdown limit, best predicted first (unknown predictions keep the order: fewer cores,
 * more cores, lower frequency, higher frequency). */
/* Whether the extrapolation of the app's measured scaling rules out a core move from
 * `cores`: it predicts the move worse by the rule-out margin at the frequency it was built
 * for. Frequency moves are not its to judge. */
static bool scaling_rules_out(const struct allocator_app *a, double hysteresis, unsigned cores,
                              unsigned freq_khz, unsigned to_cores, unsigned to_freq_khz)
{
        const struct scaling_model *m = &a->scaling_model;
        double margin;

        if (!m->known || !m->trusted || m->freq_khz != freq_khz || to_freq_khz != freq_khz ||
            to_cores == cores)
                return false;
        margin = fmax(hysteresis, 4 * m->fit_error);
        return objective_better(scaling_predict_score(m, a->effective, to_cores),
                                scaling_predict_score(m, a->effective, cores), margin);
}

static unsigned neighbours(const struct allocator_ctx *ctx, struct allocator_app *a,
                           const struct allocator_bounds *b, double base_t, unsigned cores,
                           unsigned freq_khz, const struct stack_hint *hint, bool *hinted,
                           struct allocator_cand out[4])
{
        int fi = freq_index(ctx, freq_khz), sf = (int)a->step_freqs;
        long sc = a->step_cores;
        struct allocator_cand c[4] = {
            {cores > sc ? (unsigned)(cores - sc) : 0, freq_khz, NAN},
            {(unsigned)(cores + sc), freq_khz, NAN},
            {cores, fi >= sf ? ctx->freqs_khz[fi - sf] : 0, NAN},
            {cores, fi >= 0 && fi + sf < (int)ctx->n_freqs ? ctx->freqs_khz[fi + sf] : 0, NAN},
        };
        unsigned n = 0;

        *hinted = false;
        /* The ladder: the half, then the double, of the best point while the score keeps
         * improving; from the full count only halves. Fewer cores first: each probe is
         * cheaper. Both measured (or ruled out): the optimum lies between them. */
        if (a->halving) {
                unsigned rung[2] = {cores / 2 > b->min_cores ? cores / 2 : b->min_cores,
                                    2 * cores < b->max_cores ? 2 * cores : b->max_cores};

                for (unsigned i = 0; i < 2; i++) {
                        double t = NAN;

                        if (rung[i] == cores || hist_fresh(ctx, a, rung[i], freq_khz) ||
                            denied(ctx, a, rung[i], freq_khz) ||
                            scaling_rules_out(a, ctx->hysteresis, cores, freq_khz, rung[i],
                                              freq_khz))
                                continue;
                        predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, rung[i], freq_khz, &t);
                        if (isnan(base_t)
                                ? isfinite(a->policy->max_slowdown) && rung[i] < b->max_cores
                                : !objective_slowdown_ok(base_t, t, a->policy->max_slowdown))
                                continue;
                        out[0] = (struct allocator_cand){rung[i], freq_khz, NAN};
                        return 1;
                }
                return 0;
        }
        /* A step that overshoots the bound lands on it. */
        if (c[0].cores < b->min_cores && cores > b->min_cores)
                c[0].cores = b->min_cores;
        if (c[1].cores > b->max_cores && cores < b->max_cores)
                c[1].cores = b->max_cores;
        for (unsigned i = 0; i < 4; i++) {
                double t = NAN;

                if (c[i].cores < b->min_cores || c[i].cores > b->max_cores)
                        continue;
                if (i >= 2 && (!ctx->n_freqs || !c[i].freq_khz || !freq_in(b, c[i].freq_khz) ||
                               a->freq_shared))
                        continue;
                /* Measured, known worse without measuring, or denied by sharing. */
                if (hist_fresh(ctx, a, c[i].cores, c[i].freq_khz) ||
                    move_known_worse(ctx, a, cores, freq_khz, c[i].cores, c[i].freq_khz) ||
                    denied(ctx, a, c[i].cores, c[i].freq_khz) ||
                    scaling_rules_out(a, ctx->hysteresis, cores, freq_khz, c[i].cores,
                                      c[i].freq_khz))
                        continue;
                predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, c[i].cores, c[i].freq_khz, &t);
                if (!isnan(base_t) && !objective_slowdown_ok(base_t, t, a->policy->max_slowdown))
                        continue;
                if (isnan(base_t) && isfinite(a->policy->max_slowdown) && c[i].cores < b->max_cores)
                        continue; /* a limit we cannot check is not crossed on a guess */
                c[i].pred =
                    ctx->pm ? predicted_score(ctx, a, a->effective, c[i].cores, c[i].freq_khz, NULL)
                            : NAN;
                out[n++] = c[i];
        }
        /* Insertion sort by prediction; NaN sorts last and keeps its place. */
        for (unsigned i = 1; i < n; i++) {
                struct allocator_cand x = out[i];
                unsigned j = i;

                while (j > 0 && !isnan(x.pred) &&
                       (isnan(out[j - 1].pred) || x.pred < out[j - 1].pred)) {
                        out[j] = out[j - 1];
                        j--;
                }
                out[j] = x;
        }
        /* Where the model cannot rank (no prediction) or has been shown wrong for this app,
         * the stack's direction goes first. */
        for (unsigned i = 1;
             hint->dir != STACK_HINT_NONE && (!ctx->pm || a->model_refuted) && i < n; i++) {
                struct allocator_cand x = out[i];
                bool fewer = x.cores < cores && x.freq_khz == freq_khz;
                bool lower = x.cores == cores && x.freq_khz < freq_khz;

                if (!(hint->dir == STACK_HINT_FEWER_CORES ? fewer : lower))
                        continue;
                memmove(&out[1], &out[0], i * sizeof(*out));
                out[0] = x;
                *hinted = true;
                break;
        }
        if (n && hint->dir != STACK_HINT_NONE && (!ctx->pm || a->model_refuted) && !*hinted)
                *hinted = hint->dir == STACK_HINT_FEWER_CORES
                              ? out[0].cores < cores && out[0].freq_khz == freq_khz
                              : out[0].cores == cores && out[0].freq_khz < freq_khz;
        return n;
}

/* Whether the model ranks a measured point above the best measured one when the
 * measurements put it clearly below (by the hysteresis): then it is wrong for this app
 * (spinning cores it counts as idle, a speedup falling past some N) and must not send the app
 * anywhere, even before one of its own jumps has shown it. */
static bool model_contradicted(const struct allocator_ctx *ctx, struct allocator_app *a,
                               const struct allocator_bounds *b, const struct allocator_point *best)
{
        double pred_best = predicted_score(ctx, a, a->effective, best->cores, best->freq_khz, NULL);

        if (isnan(pred_best))
                return false;
        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *p = &a->hist[i];

                if (p == best || !point_fresh(ctx, p) || !point_in_bounds(ctx, b, p))
                        continue;
                if (!objective_better(p->score, best->score, ctx->hysteresis))
                        continue;
                if (objective_better(
                        pred_best,
                        predicted_score(ctx, a, a->effective, p->cores, p->freq_khz, NULL), 0))
                        return true;
        }
        return false;
}

/* Places a returning app at its remembered configuration, the search set up to verify it
 * with small steps. False when the policy's bounds no longer allow it (then it learns). */
static bool hint_start(const struct allocator_ctx *ctx, struct allocator_app *a,
                       const struct allocator_bounds *b)
{
        char ftext[32];
        bool freq_ok = !ctx->n_freqs || !a->hint_freq_khz ||
                       (freq_in(b, a->hint_freq_khz) && freq_index(ctx, a->hint_freq_khz) >= 0);

        if (a->hint_cores < b->min_cores || a->hint_cores > b->max_cores || !freq_ok) {
                a->hint_cores = 0;
                return false;
        }
        a->learning = false;
        a->searching = true;
        a->from_history = true;
        a->step_cores = a->step_freqs = 1;
        a->halving = false;
        a->converged = false;
        a->want_cores = a->hint_cores;
        a->want_freq_khz = !ctx->n_freqs      ? a->freq_khz
                           : a->hint_freq_khz ? a->hint_freq_khz
                                              : b->max_khz;
        a->hint_freq_khz = a->want_freq_khz;
        snprintf(a->reason, sizeof(a->reason),
                 "from history: %u cores%s, the best of a past run; verifying", a->hint_cores,
                 freq_text(a->want_freq_khz, ftext, sizeof(ftext)));
        return true;
}

/* The returning app at its remembered configuration: measuring it, then confirming it when it
 * measures within ALLOCATOR_HISTORY_VERIFY of the remembered score (it stays while that
 * measurement is fresh). True when that decides this decision. Measured further off, moved
 * (sharing trimmed it), or once the measurement is stale, the hint is spent and the measured
 * search goes on from here. */
static bool hint_check(const struct allocator_ctx *ctx, struct allocator_app *a,
                       const struct allocator_point *cur, double best_pred)
{
        char ftext[32];
        double off;

        if (a->cores != a->hint_cores || (ctx->n_freqs && a->freq_khz != a->hint_freq_khz) ||
            (!cur && a->hint_verified) || (a->hint_explore_from && a->progress_known)) {
                a->hint_cores = 0;
                return false;
        }
        freq_text(a->hint_freq_khz, ftext, sizeof(ftext));
        if (a->hint_explore_from) {
                /* Held for the whole run: the run is the measurement. */
                stay(a, "%s", "");
                a->converged = true;
                snprintf(a->reason, sizeof(a->reason),
                         "from history: exploring %u cores%s for this run (its past runs ran at "
                         "about %u): whole runs at two core counts measure its extra work",
                         a->hint_cores, ftext, a->hint_explore_from);
                return true;
        }
        if (!isfinite(a->hint_score)) {
                /* Remembered without a measured score (no counters): nothing to verify by.
                 * It holds until the model can rank configurations; the model decides then. */
                if (!isnan(best_pred)) {
                        a->hint_cores = 0;
                        return false;
                }
                stay(a, "%s", "");
                snprintf(a->reason, sizeof(a->reason),
                         "from history: %u cores%s (remembered without a measured score)",
                         a->hint_cores, ftext);
                return true;
        }
        if (!cur) {
                stay(a, "%s", "");
                snprintf(a->reason, sizeof(a->reason), "from history: %u cores%s; measuring it",
                         a->hint_cores, ftext);
                return true;
        }
        off = a->hint_score != 0 ? (cur->score - a->hint_score) / fabs(a->hint_score) : NAN;
        stay(a, "%s", "");
        if (!a->hint_verified && !(fabs(off) <= ALLOCATOR_HISTORY_VERIFY)) {
                /* Another load, input or phase than last time: search from here. */
                a->hint_cores = 0;
                snprintf(a->reason, sizeof(a->reason),
                         "from history: %u cores%s measured %+.0f%% off the remembered score; "
                         "searching around it",
                         a->cores, ftext, 100 * off);
                return true;
        }
        a->hint_verified = ctx->decision;
        a->converged = true;
        snprintf(a->reason, sizeof(a->reason),
                 "from history: %u cores%s verified (measured %+.0f%% of the remembered score)",
                 a->hint_cores, ftext, 100 * off);
        return true;
}

/* The objective's predicted score at n cores, for extrap_knee. */
struct scaling_knee_arg {
        const struct scaling_model *m;
        enum objective_kind o;
};

static double scaling_knee_score(const void *ctx, unsigned n)
{
        const struct scaling_knee_arg *k = ctx;

        return scaling_predict_score(k->m, k->o, n);
}

/* The extrapolation of the points measured at the best point's frequency: the figures
 * status shows, and a jump to its predicted optimum when that is an unmeasured count it
 * predicts better than the best measured one. The measured search resumes around the best
 * measured point either way, so a wrong prediction costs one probe. */
static bool scaling_jump(const struct allocator_ctx *ctx, struct allocator_app *a,
                         const struct allocator_bounds *b, double base_t,
                         const struct allocator_point *best)
{
        struct scaling_model *m = &a->scaling_model;
        unsigned n, min_samples = probe_samples(ctx) > 1 ? probe_samples(ctx) - 1 : 1;
        double t = NAN, smax = NAN;
        char ftext[32];

        if (scaling_model_refresh(&a->scaling, best->freq_khz, min_samples, b->max_cores, m) < 0 ||
            !m->known)
                return false;
        /* Believed only where it reproduces what was measured. */
        m->fit_error = scaling_fit_error(&a->scaling, m, a->effective, min_samples);
        m->trusted = m->fit_error <= ALLOCATOR_SCALING_TRUST;
        /* ESTIMA extrapolates upwards, from small counts to larger ones, and is validated to
         * about twice the largest count measured (docs/extrapolation.md): below the smallest
         * its kernels are unconstrained (an ExpRat fitted on 8-16 cores once sent an app that
         * stops scaling at 16 to one core, 97% worse), and from 7-16 cores an Amdahl fit sent
         * it to 64 (74% worse). The ladder and the pattern search measure further out. */
        /* The knee of the predicted score, not its argmin: on a curve flat within a few per
         * cent the argmin is noise (an SP-like app sent to every core for 1 %). */
        n = extrap_knee(scaling_knee_score, &(struct scaling_knee_arg){m, a->effective},
                        m->min_measured > b->min_cores ? m->min_measured : b->min_cores,
                        2 * m->max_measured < b->max_cores ? 2 * m->max_measured : b->max_cores,
                        EXTRAP_KNEE_TOL);
        extrap_best_cores(&m->time, b->max_cores, &smax);
        a->predicted_best_cores = m->trusted ? n : 0;
        a->predicted_speedup_max = m->trusted ? smax : NAN;
        if (!n || !m->trusted || n == best->cores || a->scaling_jumps >= ALLOCATOR_SCALING_JUMPS ||
            hist_fresh(ctx, a, n, best->freq_khz) || denied(ctx, a, n, best->freq_khz) ||
            !objective_better(scaling_predict_score(m, a->effective, best->cores),
                              scaling_predict_score(m, a->effective, n),
                              fmax(ALLOCATOR_SEARCH_MARGIN, m->fit_error)))
                return false;
        predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, n, best->freq_khz, &t);
        if (isnan(base_t) ? isfinite(a->policy->max_slowdown) && n < b->max_cores
                          : !objective_slowdown_ok(base_t, t, a->policy->max_slowdown))
                return false;
        a->scaling_jumps++;
        a->halving = false;
        /* A quarter of the target, or the search's step if finer: a jump the measurement
         * refutes leaves the search around the best point at the step it had reached (from
         * 16 cores at step 1, a refuted jump to 32 re-opened steps of 8: five more probes). */
        if (!a->step_cores || n / 4 < a->step_cores)
                a->step_cores = n / 4 > 1 ? n / 4 : 1;
        a->converged = false;
        a->want_cores = n;
        a->want_freq_khz = best->freq_khz;
        a->reserve_cores = best->cores;
        a->exploring = true;
        snprintf(a->reason, sizeof(a->reason),
                 "extrapolated (%s, %u points): %s best at %u cores%s, measuring it",
                 extrap_kernel_name(m->time.main.kernel), m->n_points,
                 objective_to_string(a->effective), n,
                 freq_text(best->freq_khz, ftext, sizeof(ftext)));
        return true;
}

/* Whether the app's objective can be measured now: it needs no power, or the app's own
 * power is known (attributed by the power model), or it runs alone on a package whose energy
 * is measured. */
static bool score_measurable(const struct allocator_ctx *ctx, const struct allocator_app *a,
                             const struct estimate *e)
{
        const struct estimator_platform *pl = estimator_platform(ctx->est);

        if (!objective_needs_power(a->effective))
                return true;
        if (e && (e->known & ESTIMATE_POWER))
                return true;
        return ctx->n_apps == 1 && pl && pl->energy_measured;
}

/* The model's best (cores, frequency) within the bounds and the slowdown limit: its
 * predicted score, NaN when the model cannot rank this objective (no power model). */
static double model_best(const struct allocator_ctx *ctx, const struct allocator_app *a,
                         const struct allocator_bounds *b, double base_t, unsigned *best_n,
                         unsigned *best_f)
{
        double best = NAN;

        if (!ctx->pm && a->effective != OBJECTIVE_PERFORMANCE)
                return NAN;
        for (unsigned n = b->min_cores; n <= b->max_cores; n++) {
                for (unsigned fi = 0; fi < (ctx->n_freqs ? ctx->n_freqs : 1); fi++) {
                        unsigned f = ctx->n_freqs ? ctx->freqs_khz[fi] : a->freq_khz;
                        double t = NAN, s;

                        if (ctx->n_freqs &&
                            (!freq_in(b, f) || (a->freq_shared && f != a->freq_khz)))
                                continue;
                        s = predicted_score(ctx, a, a->effective, n, f, &t);
                        if (!objective_slowdown_ok(base_t, t, a->policy->max_slowdown))
                                continue;
                        if (isnan(best) || s < best) {
                                best = s;
                                *best_n = n;
                                *best_f = f;
                        }
                }
        }
        return best;
}

/* The model-only baseline (policy key search = model, PARMA's way): once P is settled, the
 * configuration the model predicts best, moved to when it beats the current prediction by the
 * hysteresis; nothing is measured against it. */
static void decide_model_only(const struct allocator_ctx *ctx, struct allocator_app *a,
                              const struct estimate *e, double best_pred, double cur_pred,
                              unsigned best_n, unsigned best_f)
{
        char ftext[32];

        a->converged = true;
        if (isnan(best_pred)) {
                stay(a, "%s", "model only: the model cannot rank this objective yet");
                return;
        }
        /* Its first move goes wherever the model says; later ones, as P's estimate moves a
         * little at each setting, only for more than the hysteresis. */
        if ((best_n == a->cores && best_f == a->freq_khz) ||
            (a->model_cores && !isnan(cur_pred) &&
             !objective_better(cur_pred, best_pred, ctx->hysteresis))) {
                stay(a, "%s", "model only: holding at the model's best");
                return;
        }
        a->want_cores = a->model_cores = best_n;
        a->want_freq_khz = a->model_freq_khz = best_f;
        snprintf(a->reason, sizeof(a->reason),
                 "model only: %s %.0f%% better at %u cores%s (P=%.2f)",
                 objective_to_string(a->effective),
                 isnan(cur_pred) ? 0.0 : 100 * (cur_pred - best_pred) / fabs(cur_pred), best_n,
                 freq_text(best_f, ftext, sizeof(ftext)),
                 e && (e->known & ESTIMATE_P_LS) ? e->p_ls
                 : e                             ? e->p_eq10
                                                 : NAN);
}

/* Which measured points the search compares: fresh, in bounds, and at the domain's clock
 * when the app shares a frequency domain. */
struct meas_arg {
        const struct allocator_ctx *ctx;
        const struct allocator_app *a;
        const struct allocator_bounds *b;
};

static bool meas_eligible(const void *arg, const struct allocator_point *p)
{
        const struct meas_arg *m = arg;

        return point_fresh(m->ctx, p) && point_in_bounds(m->ctx, m->b, p) &&
               !(m->ctx->n_freqs && m->a->freq_shared && p->freq_khz != m->a->freq_khz);
}

static void decide_one(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        const struct policy *pol = a->policy;
        const struct estimate *e = estimator_get(ctx->est, a->id);
        struct allocator_bounds b;
        const char *why = NULL;
        double base_t = NAN, cur_pred, best_pred = NAN;
        unsigned best_n = a->cores, best_f = a->freq_khz, start;
        const struct allocator_point *cur_meas, *best_meas = NULL, *base_meas, *risk_best;
        struct allocator_cand cand[4];
        struct stack_hint hint;
        char ftext[32];

        a->changed = false;
        a->shares_cpus = false;
        app_bounds(ctx, pol, &b);
        a->effective = objective_effective(pol->objective, ctx->pm || ctx->power_measured, &why);
        if (a->effective == OBJECTIVE_MONITOR) {
                a->learning = false;
                a->converged = true;
                /* Only watched where it runs: it takes no place in the partition, or a few
                 * watched services would leave no CPU to the managed apps (ENOSPC). */
                a->shares_cpus = true;
                stay(a, "%s", "monitor: estimates only, nothing changed");
                return;
        }
        /* A returning app starts where its past run ended best, instead of learning. */
        if (a->hint_cores && !a->searching) {
                if (hint_start(ctx, a, &b))
                        return;
        }
        /* Until P is known well enough, the app runs as its baseline (every allowed core, top
         * frequency): moving on a rough estimate would lock in its error, since one core
         * teaches nothing about P. If P will not settle (rows, spinning), a measured baseline
         * is enough to start the measured search; time-sharing with others, the baseline
         * cannot be measured, and the search starts without it. */
        start = start_cores(ctx, a, e, &b);
        base_meas = hist_fresh(ctx, a, start, b.max_khz);
        /* Before learning P on eq. 9, the app's own IPC_I0(1) where contention shows. */
        if (ipc1_probe(ctx, a, e, &b))
                return;
        if (!a->searching && !p_settled(e) &&
            !(e && e->intervals >= ALLOCATOR_LEARN_MAX_INTERVALS &&
              (base_meas || (ctx->learners_share && ctx->n_apps > 1)))) {
                a->learning = true;
                a->shares_cpus = ctx->learners_share; /* allocator_decide may partition it */
                a->want_cores = start;
                a->want_freq_khz = b.max_khz;
                if (!e || !(e->known & ESTIMATE_P_LS))
                        snprintf(a->reason, sizeof(a->reason), "learning: no estimate of P yet");
                else
                        snprintf(a->reason, sizeof(a->reason),
                                 "learning: P = %.2f ± %.2f from %.0f intervals is not settled",
                                 e->p_ls, e->p_stderr, e->p_points);
                if (start < b.max_cores) {
                        size_t len = strlen(a->reason);

                        snprintf(a->reason + len, sizeof(a->reason) - len, " (%s)",
                                 a->start_reason);
                }
                return;
        }
        a->learning = false;
        a->searching = true;
        if (!a->step_cores) {
                unsigned nf = 0;

                for (unsigned i = 0; i < ctx->n_freqs; i++)
                        nf += freq_in(&b, ctx->freqs_khz[i]);
                /* Wide first steps, halved as the search closes in: O(log N) probes. */
                a->step_cores = range_wide(&b) ? (b.max_cores - b.min_cores) / 4 : 1;
                a->step_freqs = nf >= 8 ? nf / 4 : 1;
                a->converged = false;
                /* From where it started on a wide range, halving (and doubling, from below
                 * the full count) finds the scale in O(log N) probes. */
                a->halving = range_wide(&b) && a->cores == start;
        }
        predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, b.max_cores, b.max_khz, &base_t);

        best_pred = model_best(ctx, a, &b, base_t, &best_n, &best_f);
        cur_pred = predicted_score(ctx, a, a->effective, a->cores, a->freq_khz, NULL);
        if (pol->search == POLICY_SEARCH_MODEL) {
                decide_model_only(ctx, a, e, best_pred, cur_pred, best_n, best_f);
                return;
        }

        /* Measurements overrule the model: the best fresh measured point in bounds. */
        cur_meas = hist_fresh(ctx, a, a->cores, a->freq_khz);
        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *p = &a->hist[i];

                if (!meas_eligible(&(struct meas_arg){ctx, a, &b}, p))
                        continue;
                if (!best_meas || p->score < best_meas->score)
                        best_meas = p;
        }
        /* Scored by instructions, the fewest cores the counters cannot tell from the best
         * (manager/alloc_risk.c): the search goes on around it and settles there. */
        risk_best = best_meas;
        best_meas =
            alloc_risk_measured(a, best_meas, meas_eligible, &(struct meas_arg){ctx, a, &b});
        /* The model's last jump, measured worse than the best measured point. */
        if (a->model_cores && best_meas) {
                const struct allocator_point *mp =
                    hist_fresh(ctx, a, a->model_cores, a->model_freq_khz);

                if (mp && objective_better(mp->score, best_meas->score, ALLOCATOR_SEARCH_MARGIN))
                        a->model_refuted = true;
        }
        if (!a->model_refuted && best_meas && !isnan(best_pred))
                a->model_refuted = model_contradicted(ctx, a, &b, best_meas);
        if (a->hint_cores && hint_check(ctx, a, cur_meas, best_pred))
                return;
        /* At a probe not measured yet: its measurement first. A model jump from here (the
         * model ranks the probe poorly, by design) would leave every probe unmeasured when
         * sharing trims the jump back, and the app would swing between the two each
         * decision (20 apps on 64 cores: 14 changes per app-minute). */
        if (!cur_meas && a->cores == a->probe_cores && a->freq_khz == a->probe_freq_khz &&
            ctx->n_apps > 1) {
                /* Begun alone, a probe cannot be measured once another app arrives and the
                 * app's own power is not measured: it would hold an unmeasured probe to the
                 * end. Back to the best measured point; the model ranks from there. */
                if (best_meas && !score_measurable(ctx, a, e)) {
                        a->denied_cores = a->cores;
                        a->denied_freq_khz = a->freq_khz;
                        a->denied_decision = ctx->decision;
                        a->want_cores = best_meas->cores;
                        a->want_freq_khz = best_meas->freq_khz;
                        a->probe_cores = a->probe_freq_khz = 0;
                        snprintf(a->reason, sizeof(a->reason),
                                 "probe of %u cores%s abandoned: its %s cannot be measured "
                                 "while sharing (no power of its own); back to %u cores%s",
                                 a->cores, freq_text(a->freq_khz, ftext, sizeof(ftext)),
                                 objective_to_string(a->effective), best_meas->cores,
                                 freq_text(best_meas->freq_khz, ftext + 16, sizeof(ftext) - 16));
                        return;
                }
                stay(a, "%s", "measuring this configuration");
                return;
        }
        if (cur_meas && best_meas && best_meas != cur_meas &&
            objective_better(cur_meas->score, best_meas->score, ctx->hysteresis)) {
                a->want_cores = best_meas->cores;
                a->want_freq_khz = best_meas->freq_khz;
                snprintf(a->reason, sizeof(a->reason),
                         "measured %s at %u cores%s beats the current one by %.0f%%",
                         objective_to_string(a->effective), best_meas->cores,
                         freq_text(best_meas->freq_khz, ftext, sizeof(ftext)),
                         100 * (cur_meas->score - best_meas->score) / fabs(cur_meas->score));
                return;
        }
        /* The stack: a lock (sync, yield) that costs a good share of the cores at the full
         * count says more cores add nothing past those the app keeps busy. The first probe
         * goes there, instead of halving towards it one probe at a time. */
        hint = stack_hint(a);
        if (hint.dir == STACK_HINT_FEWER_CORES && hint.saturates && a->halving && cur_meas &&
            a->cores == start) {
                unsigned n = hint.busy > b.min_cores ? hint.busy : b.min_cores;

                if (n < a->cores / 2 && !hist_fresh(ctx, a, n, a->freq_khz) &&
                    !denied(ctx, a, n, a->freq_khz)) {
                        a->halving = false;
                        a->step_cores = n / 4 > 1 ? n / 4 : 1;
                        a->want_cores = n;
                        a->want_freq_khz = a->freq_khz;
                        a->exploring = true;
                        snprintf(a->reason, sizeof(a->reason),
                                 "stack: %s %.1f of %.0f cores grows with the cores: trying "
                                 "%u cores first, the ones it keeps busy",
                                 stack_component_name(hint.why), hint.cost, hint.cores, n);
                        return;
                }
        }
        /* The model's choice, unless it has been measured there already: then measurement
         * decides. */
        if (!isnan(best_pred) && !a->model_refuted &&
            (best_n != a->cores || best_f != a->freq_khz) && !hist_fresh(ctx, a, best_n, best_f) &&
            !denied(ctx, a, best_n, best_f) &&
            (isnan(cur_pred) || objective_better(cur_pred, best_pred, ctx->hysteresis))) {
                a->want_cores = best_n;
                a->want_freq_khz = best_f;
                a->model_cores = best_n;
                a->model_freq_khz = best_f;
                a->exploring = true;
                snprintf(a->reason, sizeof(a->reason),
                         "model: %s %.0f%% better at %u cores%s (P=%.2f)%s%s",
                         objective_to_string(a->effective),
                         isnan(cur_pred) ? 0.0 : 100 * (cur_pred - best_pred) / fabs(cur_pred),
                         best_n, freq_text(best_f, ftext, sizeof(ftext)),
                         e->known & ESTIMATE_P_LS ? e->p_ls : e->p_eq10, why ? "; " : "",
                         why ? why : "");
                idle_run_note(ctx, a);
                return;
        }
        /* The measured search: wait for the current point's measurement, then measure the
         * unmeasured neighbours of the best point, halving the steps when none is left. */
        if (!cur_meas) {
                stay(a, "%s",
                     isnan(best_pred) && !ctx->power_measured && !ctx->pm
                         ? "holding: the model cannot rank this objective yet"
                         : "measuring this configuration");
                return;
        }
        if (!best_meas)
                best_meas = cur_meas;
        if (scaling_jump(ctx, a, &b, base_t, best_meas))
                return;
        for (;;) {
                bool hinted;
                unsigned n = neighbours(ctx, a, &b, base_t, best_meas->cores, best_meas->freq_khz,
                                        &hint, &hinted, cand);

                if (!n && a->halving) {
                        /* The optimum lies between the best and its halves: search there. */
                        a->halving = false;
                        a->step_cores = best_meas->cores / 4 > 1 ? best_meas->cores / 4 : 1;
                        continue;
                }
                if (n) {
                        a->converged = false;
                        a->want_cores = a->probe_cores = cand[0].cores;
                        a->want_freq_khz = a->probe_freq_khz = cand[0].freq_khz;
                        a->reserve_cores = best_meas->cores;
                        a->exploring = true;
                        snprintf(a->reason, sizeof(a->reason),
                                 "exploring %u cores%s: measuring whether it beats %u cores%s",
                                 cand[0].cores, freq_text(cand[0].freq_khz, ftext, sizeof(ftext)),
                                 best_meas->cores,
                                 freq_text(best_meas->freq_khz, ftext + 16, sizeof(ftext) - 16));
                        if (hinted) {
                                size_t len = strlen(a->reason);

                                snprintf(a->reason + len, sizeof(a->reason) - len,
                                         "; stack: %s %.1f of %.0f cores, %s first",
                                         stack_component_name(hint.why), hint.cost, hint.cores,
                                         hint.dir == STACK_HINT_FEWER_CORES ? "fewer cores"
                                                                            : "a lower clock");
                        }
                        return;
                }
                if (a->step_cores <= 1 && a->step_freqs <= 1)
                        break;
                a->step_cores = (a->step_cores + 1) / 2;
                a->step_freqs = (a->step_freqs + 1) / 2;
        }
        a->converged = true;
        /* Sharing the machine, every score moves a little with what the others do: a
         * settled app moves for the hysteresis then, not for the search's margin. */
        if (best_meas != cur_meas &&
            (objective_better(cur_meas->score, best_meas->score,
                              ctx->n_apps > 1 ? ctx->hysteresis : ALLOCATOR_SEARCH_MARGIN) ||
             (best_meas != risk_best && best_meas->cores < cur_meas->cores))) {
                a->want_cores = best_meas->cores;
                a->want_freq_khz = best_meas->freq_khz;
                snprintf(a->reason, sizeof(a->reason),
                         "settled: every neighbour of %u cores%s measured worse", best_meas->cores,
                         freq_text(best_meas->freq_khz, ftext, sizeof(ftext)));
                alloc_risk_note(best_meas, risk_best, a->reason, sizeof(a->reason));
                return;
        }
        stay(a, "%s", "holding: every neighbour measured worse");
        alloc_risk_note(best_meas, risk_best, a->reason, sizeof(a->reason));
}

bool allocator_wants_decision(const struct allocator_ctx *ctx, const struct allocator_app *app)
{
        const struct estimate *e;

        if (!app->policy || app->policy->objective == OBJECTIVE_MONITOR)
                return false;
        /* A returning app is placed at its remembered configuration at once. */
        if (app->hint_cores && !app->searching)
                return true;
        e = estimator_get(ctx->est, app->id);
        if (!e)
                return false;
        if (app->ipc1_probing)
                return ipc1_probe_done(app, e) ||
                       e->intervals - app->ipc1_probe_since >= ALLOCATOR_IPC1_PROBE_INTERVALS;
        if (app->learning)
                return p_settled(e) || (e->intervals >= ALLOCATOR_LEARN_MAX_INTERVALS &&
                                        app->samples_here >= 1 + probe_samples(ctx));
        if (app->converged || app->cores != app->at_cores || app->freq_khz != app->at_freq_khz)
                return false;
        if (app->early_rejected_here)
                return true; /* a probe far worse than the best, from its first sample */
        if (app->samples_here < 1 + probe_samples(ctx))
                return false;
        /* Only once the point holds a measurement: a score that cannot be computed must not
         * make every sample a decision. */
        for (unsigned i = 0; i < app->n_hist; i++)
                if (app->hist[i].cores == app->cores && app->hist[i].freq_khz == app->freq_khz)
                        return app->hist[i].samples >= probe_samples(ctx);
        return false;
}

/* The best fresh measured point within the policy's bounds, NULL when none. */
static const struct allocator_point *best_fresh(const struct allocator_ctx *ctx,
                                                const struct allocator_app *app)
{
        const struct allocator_point *best = NULL;
        struct allocator_bounds b;

        if (!app->policy)
                return NULL;
        app_bounds(ctx, app->policy, &b);
        for (unsigned i = 0; i < app->n_hist; i++) {
                const struct allocator_point *p = &app->hist[i];

                if (point_fresh(ctx, p) && point_in_bounds(ctx, &b, p) &&
                    (!best || p->score < best->score))
                        best = p;
        }
        /* Scored by instructions, where the search settles: the fewest cores within the
         * noise (what history remembers, too). */
        return alloc_risk_measured(app, best, meas_eligible, &(struct meas_arg){ctx, app, &b});
}

bool allocator_best(const struct allocator_ctx *ctx, const struct allocator_app *app,
                    struct allocator_point *out)
{
        const struct allocator_point *best = best_fresh(ctx, app);

        if (app->start_saved)
                best = &app->start_best;
        if (best)
                *out = *best;
        return best != NULL;
}

/* What one core less than its reserve costs the app, by the model: the relative rise of its
 * predicted score at the frequency it wants, over its weight. NaN when the model cannot say. */
static double trim_cost(const struct allocator_ctx *ctx, const struct allocator_app *a)
{
        double now =
            predicted_score(ctx, a, a->effective, a->reserve_cores, a->want_freq_khz, NULL);
        double less =
            predicted_score(ctx, a, a->effective, a->reserve_cores - 1, a->want_freq_khz, NULL);

        if (!isfinite(now) || !isfinite(less) || now == 0)
                return NAN;
        return (less - now) / fabs(now) / a->policy->weight;
}

/* An app's frequency sensitivity where the estimator has none (it never ran at another
 * clock: in a shared domain it cannot): the stalled share of the cycles of its cores making
 * progress, which do not shrink with the clock. A spinning thread's cycles are busy without
 * progress and retire little, so count stalled: they are left out. NaN when unknown, when the
 * estimator has a sensitivity of its own, or where another app time-shares its CPUs. */
static double stall_share(const struct allocator_ctx *ctx, const struct allocator_app *a)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);
        unsigned need = ESTIMATE_STALLS | ESTIMATE_IPC | ESTIMATE_I0 | ESTIMATE_SPEEDUP;
        double core, cycles, spin, share;

        if (!e || (e->known & ESTIMATE_MEM_FRACTION) || (e->known & need) != need ||
            !isfinite(e->busy_cores) || !(e->ipc > 0))
                return NAN;
        core = e->i0 / e->ipc; /* the busiest core's cycles */
        cycles = core * e->speedup;
        spin = e->busy_cores > e->speedup ? core * (e->busy_cores - e->speedup) : 0;
        share = (e->stalls - spin) / cycles;
        return cycles > 0 && share >= 0 && share <= 1 ? share : NAN;
}

/* The app's predicted score at a frequency the fitted power model has not seen (it knows only
 * those the machine ran at; an app in a shared domain cannot show it another): below the
 * lowest one seen, the core power there scaled down by the clock. Dynamic power is C V^2 f, so
 * at a fixed voltage it falls at least in proportion to the clock; the voltage falling with it
 * only saves more. The bound errs towards the higher clock. time_k as predicted_score_k. NaN
 * when even that is unknown. */
static double score_clock_scaled(const struct allocator_ctx *ctx, const struct allocator_app *a,
                                 unsigned cores, unsigned freq_khz, double time_k)
{
        struct model_power pm;
        struct allocator_ctx c = *ctx;
        const struct model_power_point *above = NULL;

        if (!ctx->pm)
                return NAN;
        pm = *ctx->pm;
        for (unsigned i = 0; i < pm.n_points && !above; i++)
                if (pm.points[i].freq_khz >= freq_khz)
                        above = &pm.points[i];
        if (!above)
                return NAN;
        /* Between two clocks it has seen, the fit interpolates: only below them is a bound
         * needed. */
        if (above == pm.points && above->freq_khz != freq_khz &&
            model_power_set_point(&pm, freq_khz, above->core_w * freq_khz / above->freq_khz,
                                  above->idle_w) < 0)
                return NAN;
        c.pm = &pm;
        return predicted_score_k(&c, a, a->effective, cores, freq_khz, NULL, time_k);
}

/* A domain of its own (docs/allocator.md): apps sharing a frequency domain run at the highest
 * frequency wanted there and cannot probe another, so an app that would do better at a lower
 * clock than its neighbours (memory-bound: its time hardly follows the clock) never finds out.
 * The model says so without a probe: true when its predicted score at a lower frequency than
 * the neighbours' beats the one at theirs by more than the hysteresis, with the estimator's
 * frequency sensitivity, else the stalled share of its cycles (stall_share), and the power at
 * clocks the fit has not seen bounded from above (score_clock_scaled). The reason names the
 * figures; *best_khz is that frequency. */
static bool wants_lower_clock(const struct allocator_ctx *ctx, const struct allocator_app *a,
                              unsigned theirs_khz, double margin, char *why, size_t why_size,
                              unsigned *best_khz)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);
        double m = stall_share(ctx, a), at, best = NAN;
        bool own = e && (e->known & ESTIMATE_MEM_FRACTION);
        struct allocator_bounds b;
        unsigned ref;

        if (!e || (!own && isnan(m)) || isfinite(a->policy->max_slowdown))
                return false; /* a slowdown bound is checked by measuring, not here */
        app_bounds(ctx, a->policy, &b);
        /* Without a sensitivity of its own the estimator scales all its time with the clock
         * from the one it ran at: the stalled share does not scale. */
        ref = e->freq_khz ? e->freq_khz : theirs_khz;
        at = score_clock_scaled(ctx, a, a->want_cores, theirs_khz,
                                own ? 1.0 : (1 - m) + m * theirs_khz / ref);
        if (!isfinite(at) || at <= 0)
                return false;
        for (unsigned i = 0; i < ctx->n_freqs && ctx->freqs_khz[i] < theirs_khz; i++) {
                unsigned f = ctx->freqs_khz[i];
                double s = freq_in(&b, f)
                               ? score_clock_scaled(ctx, a, a->want_cores, f,
                                                    own ? 1.0 : (1 - m) + m * (double)f / ref)
                               : NAN;

                if (isfinite(s) && (isnan(best) || s < best)) {
                        best = s;
                        *best_khz = f;
                }
        }
        if (isnan(best) || !objective_better(at, best, margin))
                return false;
        if (own)
                snprintf(why, why_size, "the model puts its %s at %u MHz %.0f%% below %u MHz",
                         objective_to_string(a->effective), *best_khz / 1000, 100 * (1 - best / at),
                         theirs_khz / 1000);
        else
                snprintf(why, why_size,
                         "%.0f%% of its cycles stall: the model puts its %s at %u MHz %.0f%% "
                         "below %u MHz",
                         100 * m, objective_to_string(a->effective), *best_khz / 1000,
                         100 * (1 - best / at), theirs_khz / 1000);
        return true;
}

/* The highest clock the apps other than a, outside domains of their own, want. */
static unsigned others_clock(const struct allocator_app *apps, unsigned n,
                             const struct allocator_app *a)
{
        unsigned theirs = 0;

        for (unsigned j = 0; j < n; j++)
                if (&apps[j] != a && !apps[j].own_domain && apps[j].want_freq_khz > theirs)
                        theirs = apps[j].want_freq_khz;
        return theirs;
}

/* Gives apps that want a lower clock than the others a frequency domain of their own, while
 * at least one domain and the others' minimums fit in the rest. An app keeps its domain while
 * its want fits one and either its clock is still to be learned or it wants a lower one than
 * the others (its own search, alone there, chose it); an app whose clock turned out to be the
 * others' gives it back. Returns the CPUs so set aside. */
static unsigned own_domains(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        unsigned dom = ctx->domain_cpus, granted = 0, others_min = 0;

        for (unsigned i = 0; i < n; i++)
                if (apps[i].shares_cpus)
                        dom = 0; /* a learner on every CPU shares every domain */
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];

                if (a->own_domain &&
                    (!dom || n < 2 || a->reserve_cores > dom || a->want_cores > dom)) {
                        a->own_domain = false;
                        a->domain_returned = ctx->decision;
                }
                if (a->own_domain) {
                        const struct estimate *e = estimator_get(ctx->est, a->id);

                        if (e && ((e->known & ESTIMATE_MEM_FRACTION) || a->clock_probed) &&
                            a->want_freq_khz >= others_clock(apps, n, a)) {
                                a->own_domain = false;
                                a->domain_returned = ctx->decision;
                                snprintf(a->reason + strlen(a->reason),
                                         sizeof(a->reason) - strlen(a->reason),
                                         " (its clock is the others': its frequency domain "
                                         "shared again)");
                        }
                }
                if (!a->own_domain)
                        others_min += a->policy->min_cores ? a->policy->min_cores : 1;
        }
        if (!dom)
                return 0;
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];

                if (!a->own_domain)
                        continue;
                if (granted + 2 * dom > ctx->n_cpus || others_min > ctx->n_cpus - granted - dom) {
                        a->own_domain = false; /* no room left for the others */
                        a->domain_returned = ctx->decision;
                        others_min += a->policy->min_cores ? a->policy->min_cores : 1;
                        continue;
                }
                granted += dom;
        }
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];
                unsigned theirs, khz = 0, min = a->policy->min_cores ? a->policy->min_cores : 1;
                double margin;
                char why[160];

                if (a->own_domain || a->want_cores > dom || a->reserve_cores > dom)
                        continue;
                theirs = others_clock(apps, n, a);
                if (!theirs || granted + 2 * dom > ctx->n_cpus ||
                    others_min - min > ctx->n_cpus - granted - dom)
                        continue;
                /* The CPUs of the domain it leaves idle are withheld from the others: the
                 * gain must pay for them, up to the hysteresis for a domain it would leave
                 * all but empty. Each grant moves every app: a domain it gave back is granted
                 * again only for a gain past the hysteresis, or the apps pass domains
                 * around. */
                margin =
                    ALLOCATOR_SEARCH_MARGIN +
                    ctx->hysteresis * (dom - (a->want_cores < dom ? a->want_cores : dom)) / dom;
                if (a->domain_returned && margin < ctx->hysteresis)
                        margin = ctx->hysteresis;
                if (!wants_lower_clock(ctx, a, theirs, margin, why, sizeof(why), &khz))
                        continue;
                a->own_domain = true;
                a->clock_probed = ctx->decision;
                a->want_freq_khz = khz;
                granted += dom;
                others_min -= min;
                snprintf(a->reason + strlen(a->reason), sizeof(a->reason) - strlen(a->reason),
                         " (a frequency domain of its own, at %u MHz: %s)", khz / 1000, why);
        }
        return granted;
}

/* Alone in its domain, its frequency sensitivity learned there, the app's cores and clock
 * within the domain are the model's choice (the fit has seen the domain at both clocks): its
 * score cannot be measured while it shares the machine without a power of its own, and no
 * other app may use the domain's CPUs. Moves only for the hysteresis; says why. */
static void clock_choose(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        struct allocator_bounds b;
        double at, best;
        unsigned best_n = a->want_cores, best_khz = a->want_freq_khz, top;

        app_bounds(ctx, a->policy, &b);
        top = b.max_cores < ctx->domain_cpus ? b.max_cores : ctx->domain_cpus;
        at = score_clock_scaled(ctx, a, a->want_cores, a->want_freq_khz, 1.0);
        best = at;
        for (unsigned n = b.min_cores; n <= top; n++)
                for (unsigned i = 0; i < ctx->n_freqs; i++) {
                        double s = freq_in(&b, ctx->freqs_khz[i])
                                       ? score_clock_scaled(ctx, a, n, ctx->freqs_khz[i], 1.0)
                                       : NAN;

                        if (isfinite(s) && (isnan(best) || s < best)) {
                                best = s;
                                best_n = n;
                                best_khz = ctx->freqs_khz[i];
                        }
                }
        if ((best_n == a->want_cores && best_khz == a->want_freq_khz) || !isfinite(at) ||
            !objective_better(at, best, ctx->hysteresis))
                return;
        snprintf(a->reason + strlen(a->reason), sizeof(a->reason) - strlen(a->reason),
                 "; alone in its domain, its frequency sensitivity learned: model %s %.0f%% "
                 "better at %u cores %u MHz",
                 objective_to_string(a->effective), 100 * (at - best) / fabs(at), best_n,
                 best_khz / 1000);
        a->want_cores = best_n;
        a->want_freq_khz = best_khz;
}

/* An app alone in its domain: once the estimator has learned its frequency sensitivity there
 * (from the clock it was given with the domain and the one it ran at before), the model
 * chooses the domain's clock (clock_choose). */
static void clock_probe(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);

        if (a->own_domain && !a->freq_shared && ctx->n_freqs && e && a->clock_probed &&
            a->clock_probed != ctx->decision && (e->known & ESTIMATE_MEM_FRACTION))
                clock_choose(ctx, a);
}

int allocator_decide(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        unsigned total = 0;
        double weights = 0;

        if (ctx->n_cpus == 0)
                return -EINVAL;
        unsigned learners = 0, settled = 0;

        for (unsigned i = 0; i < n; i++) {
                if (!apps[i].policy)
                        return -EINVAL;
                apps[i].reserve_cores = 0;
                apps[i].exploring = false;
                decide_one(ctx, &apps[i]);
                if (apps[i].reserve_cores < apps[i].want_cores)
                        apps[i].reserve_cores = apps[i].want_cores;
                if (apps[i].effective == OBJECTIVE_MONITOR)
                        continue; /* only watched: outside the partition */
                if (apps[i].shares_cpus)
                        learners++;
                else
                        settled += apps[i].reserve_cores;
        }
        /* Learners time-share CPUs only when neither what the others leave them nor the
         * machine split among all apps can give each two of its own (P cannot be learned on
         * one): on CPUs of their own they disturb no partitioned app's measurements, and are
         * not slowed by one either. Where every app can have two, the partition below makes
         * room (a learner down to its fair share, at most ALLOCATOR_LEARNER_CORES; the others
         * by the model's marginal cost): a learner time-sharing a settled app's CPUs slowed
         * that app for the whole of its learning (together-s64-8apps: 4 of 8 apps arrive
         * when the settled ones hold every CPU). */
        for (unsigned i = 0; i < n; i++) {
                if (apps[i].shares_cpus && apps[i].effective != OBJECTIVE_MONITOR &&
                    (settled + 2 * learners <= ctx->n_cpus || 2 * n <= ctx->n_cpus)) {
                        apps[i].shares_cpus = false;
                        snprintf(apps[i].reason + strlen(apps[i].reason),
                                 sizeof(apps[i].reason) - strlen(apps[i].reason),
                                 " (on CPUs of its own)");
                }
        }
        /* Apps given a domain of their own hold all of it; the others share the rest. */
        total = own_domains(ctx, apps, n);
        for (unsigned i = 0; i < n; i++)
                clock_probe(ctx, &apps[i]);
        for (unsigned i = 0; i < n; i++)
                if (!apps[i].shares_cpus && !apps[i].own_domain)
                        total += apps[i].reserve_cores;
        /* Too many wants: take cores, one at a time. First from an app the model cannot
         * rank (a learner) above its fair share by weight, the one holding the most per unit
         * of weight; then from the app the model says loses least by it (the relative rise of
         * its predicted score, over its weight), which is how the partition is chosen
         * jointly; else by cores per weight. Never below an app's minimum. */
        for (unsigned i = 0; i < n; i++)
                if (!apps[i].shares_cpus)
                        weights += apps[i].policy->weight;
        while (total > ctx->n_cpus) {
                struct allocator_app *victim = NULL, *cheapest = NULL, *unknown = NULL;
                double worst = -1, worst_unknown = -1, least = NAN;

                for (unsigned i = 0; i < n; i++) {
                        struct allocator_app *a = &apps[i];
                        unsigned min = a->policy->min_cores ? a->policy->min_cores : 1;
                        double per_weight = a->reserve_cores / a->policy->weight, cost;

                        if (a->shares_cpus || a->own_domain || a->reserve_cores <= min)
                                continue;
                        if (per_weight > worst) {
                                worst = per_weight;
                                victim = a;
                        }
                        cost = trim_cost(ctx, a);
                        if (isnan(cost)) {
                                if (per_weight >
                                        fmin(ctx->n_cpus / weights, ALLOCATOR_LEARNER_CORES) &&
                                    per_weight > worst_unknown) {
                                        worst_unknown = per_weight;
                                        unknown = a;
                                }
                                continue;
                        }
                        /* Cores it holds now cost a move to take: a core it does not hold
                         * yet is denied first, unless that saves clearly less. */
                        if (a->reserve_cores <= a->cores)
                                cost *= 1 + ALLOCATOR_TRIM_STICKY;
                        if (isnan(least) || cost < least) {
                                least = cost;
                                cheapest = a;
                        }
                }
                if (unknown)
                        victim = unknown;
                else if (cheapest)
                        victim = cheapest;
                if (!victim)
                        return -ENOSPC; /* the minimums alone do not fit */
                victim->reserve_cores--;
                total--;
                if (victim->want_cores <= victim->reserve_cores)
                        continue; /* a probe below its reserve goes on */
                if (victim->exploring) {
                        /* What it asked for, before this trim: it is a probe no more. */
                        victim->denied_cores = victim->want_cores;
                        victim->denied_freq_khz = victim->want_freq_khz;
                        victim->denied_decision = ctx->decision;
                        victim->exploring = false;
                }
                victim->want_cores = victim->reserve_cores;
                snprintf(victim->reason, sizeof(victim->reason),
                         "sharing %u CPUs among %u apps by weight", ctx->n_cpus, n);
                idle_run_note(ctx, victim);
        }
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];

                a->changed = a->want_cores != a->cores || a->want_freq_khz != a->freq_khz;
        }
        return 0;
}

/* The package where the mask has most CPUs, or -1 for an empty mask. */
static int main_package(const struct topology *t, const struct cpumask *m)
{
        unsigned count[64] = {0};
        int best = -1;

        cpumask_foreach (c, m) {
                int pkg = (unsigned)c < t->n_cpus ? t->cpu[c].package : 0;

                if (pkg >= 0 && pkg < 64)
                        count[pkg]++;
        }
        for (int p = 0; p < 64; p++)
                if (count[p] && (best < 0 || count[p] > count[best]))
                        best = p;
        return best;
}

/* The package with the most free CPUs. */
static int roomiest_package(const struct topology *t, const struct cpumask *free_cpus)
{
        return main_package(t, free_cpus);
}

/* An app outside the partition: want_cores of the allowed CPUs, those it holds first. */
static void place_shared(const struct cpumask *allowed, const struct allocator_app *a,
                         const struct cpumask *cur, struct cpumask *out)
{
        struct cpumask mine;

        if (a->want_cores >= cpumask_count(allowed)) {
                *out = *allowed;
                return;
        }
        cpumask_and(&mine, cur, allowed);
        cpumask_zero(out);
        for (int pass = 0; pass < 2; pass++)
                cpumask_foreach (c, pass ? allowed : &mine) {
                        if (cpumask_count(out) == a->want_cores)
                                return;
                        cpumask_set(out, (unsigned)c);
                }
}

int allocator_place(const struct topology *t, const struct cpumask *allowed,
                    const struct allocator_app *apps, const struct cpumask *cur,
                    struct cpumask *out, unsigned n)
{
        struct cpumask free_cpus = *allowed, free_home;
        unsigned total = 0;

        for (unsigned i = 0; i < n; i++) {
                if (apps[i].shares_cpus && apps[i].want_cores > cpumask_count(allowed))
                        return -ENOSPC;
                total += apps[i].shares_cpus ? 0 : apps[i].want_cores;
        }
        if (total > cpumask_count(allowed))
                return -ENOSPC;
        for (unsigned i = 0; i < n; i++)
                cpumask_zero(&out[i]);
        /* An app with a domain of its own first: the whole package no other such app took,
         * where it has most CPUs now (the lowest first), its own CPUs there first. */
        for (unsigned i = 0; i < n; i++) {
                int home = -1;
                unsigned home_mine = 0;

                if (!apps[i].own_domain || apps[i].shares_cpus)
                        continue;
                for (unsigned p = 0; p < t->n_packages; p++) {
                        struct cpumask pkg, taken, mine;

                        topology_package_cpus(t, (int)p, &pkg);
                        cpumask_and(&pkg, &pkg, allowed);
                        cpumask_and(&taken, &pkg, &free_cpus);
                        if (!cpumask_equal(&taken, &pkg) ||
                            cpumask_count(&pkg) < apps[i].want_cores)
                                continue;
                        cpumask_and(&mine, &pkg, &cur[i]);
                        if (home < 0 || cpumask_count(&mine) > home_mine) {
                                home = (int)p;
                                home_mine = cpumask_count(&mine);
                        }
                }
                if (home < 0)
                        continue; /* placed with the others below */
                topology_package_cpus(t, home, &free_home);
                cpumask_and(&free_home, &free_home, allowed);
                for (int pass = 0; pass < 2; pass++)
                        cpumask_foreach (c, &free_home) {
                                if (cpumask_count(&out[i]) == apps[i].want_cores)
                                        break;
                                if (pass == 0 && !cpumask_test(&cur[i], (unsigned)c))
                                        continue;
                                cpumask_set(&out[i], (unsigned)c);
                        }
                cpumask_foreach (c, &free_home)
                        cpumask_clear(&free_cpus, (unsigned)c);
        }
        /* Keep what each app already has and may still have. */
        for (unsigned i = 0; i < n; i++) {
                unsigned kept = 0;
                int pkg = main_package(t, &cur[i]);

                if (apps[i].shares_cpus || !cpumask_empty(&out[i]))
                        continue;
                /* First the CPUs on its main package, then the others. */
                for (int pass = 0; pass < 2; pass++) {
                        cpumask_foreach (c, &cur[i]) {
                                bool on_main = (unsigned)c < t->n_cpus && t->cpu[c].package == pkg;

                                if (kept == apps[i].want_cores)
                                        break;
                                if ((pass == 0) != on_main ||
                                    !cpumask_test(&free_cpus, (unsigned)c))
                                        continue;
                                cpumask_set(&out[i], (unsigned)c);
                                cpumask_clear(&free_cpus, (unsigned)c);
                                kept++;
                        }
                }
        }
        /* Then fill from the package each app uses most, else the roomiest one. */
        for (unsigned i = 0; i < n; i++) {
                if (apps[i].shares_cpus) {
                        place_shared(allowed, &apps[i], &cur[i], &out[i]);
                        continue;
                }
                while (cpumask_count(&out[i]) < apps[i].want_cores) {
                        int pkg = main_package(t, &out[i]);
                        int pick = -1;

                        if (pkg < 0)
                                pkg = roomiest_package(t, &free_cpus);
                        cpumask_foreach (c, &free_cpus) {
                                if ((unsigned)c < t->n_cpus && t->cpu[c].package == pkg) {
                                        pick = c;
                                        break;
                                }
                        }
                        if (pick < 0)
                                pick = cpumask_next(&free_cpus, 0);
                        if (pick < 0)
                                return -ENOSPC;
                        cpumask_set(&out[i], (unsigned)pick);
                        cpumask_clear(&free_cpus, (unsigned)pick);
                }
        }
        return 0;
}
