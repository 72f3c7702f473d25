#include "pctl/allocator.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl/util.h"

/* A measurement older than this many decisions is stale: phases change, so is the truth. */
#define ALLOCATOR_STALE_DECISIONS 60
/* What an estimate of P needs before the allocator acts on it. */
#define ALLOCATOR_MIN_POINTS 8.0
#define ALLOCATOR_MAX_P_STDERR 0.03

static struct allocator_point *hist_find(struct allocator_app *a, unsigned cores,
                                         unsigned freq_khz)
{
        for (unsigned i = 0; i < a->n_hist; i++)
                if (a->hist[i].cores == cores && a->hist[i].freq_khz == freq_khz)
                        return &a->hist[i];
        return NULL;
}

static const struct allocator_point *hist_fresh(const struct allocator_ctx *ctx,
                                                struct allocator_app *a, unsigned cores,
                                                unsigned freq_khz)
{
        const struct allocator_point *p = hist_find(a, cores, freq_khz);

        if (!p || ctx->decision - p->decision > ALLOCATOR_STALE_DECISIONS)
                return NULL;
        return p;
}

void allocator_observe(const struct allocator_ctx *ctx, struct allocator_app *app)
{
        const struct estimate *e = estimator_get(ctx->est, app->id);
        const struct estimator_platform *pl;
        struct allocator_point *p;
        enum objective_kind obj;
        double score, power_w;

        if (!e || !app->policy || app->cores == 0)
                return;
        /* A new phase makes every old measurement of this app meaningless. */
        if (e->phase_changes != app->phase_changes_seen) {
                app->phase_changes_seen = e->phase_changes;
                app->n_hist = 0;
        }
        if (ctx->decision - app->last_change < ctx->settle_decisions)
                return;
        obj = objective_effective(app->policy->objective, ctx->pm || ctx->power_measured, NULL);
        if (obj == OBJECTIVE_MONITOR || !(e->known & ESTIMATE_IPS))
                return;
        power_w = (e->known & ESTIMATE_POWER) ? e->power_w : NAN;
        /* Measured package power but no model to split it: with one app, what the package
         * draws is what that app's configuration costs, static power included. */
        pl = estimator_platform(ctx->est);
        if (isnan(power_w) && ctx->n_apps == 1 && pl && pl->energy_measured)
                power_w = pl->power_w;
        if (objective_score_rate(obj, power_w, e->ips, &score) < 0)
                return;
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
                *p = (struct allocator_point){ .cores = app->cores, .freq_khz = app->freq_khz };
        }
        /* Running mean over the last few decisions: recent enough to follow a drift. */
        p->samples = p->samples < 4 ? p->samples + 1 : 4;
        p->score += (score - p->score) / p->samples;
        p->decision = ctx->decision;
}

struct allocator_bounds {
        unsigned min_cores, max_cores;
        unsigned min_khz, max_khz; /* inclusive; 0/0 when there is no DVFS */
};

static void app_bounds(const struct allocator_ctx *ctx, const struct policy *pol,
                       struct allocator_bounds *b)
{
        b->max_cores = pol->max_cores && pol->max_cores < ctx->n_cpus ? pol->max_cores
                                                                       : ctx->n_cpus;
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

/* The predicted score of (cores, freq), NaN when the model cannot say. */
static double predicted_score(const struct allocator_ctx *ctx, uint64_t id, enum objective_kind o,
                              unsigned cores, unsigned freq_khz, double *time_s)
{
        struct model_prediction pr;
        double score;

        if (estimator_predict(ctx->est, id, cores, freq_khz, ctx->pm, &pr) < 0)
                return NAN;
        if (time_s)
                *time_s = pr.time_s;
        if (objective_score_prediction(o, &pr, &score) < 0)
                return NAN;
        return score;
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

static void decide_one(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        const struct policy *pol = a->policy;
        const struct estimate *e = estimator_get(ctx->est, a->id);
        struct allocator_bounds b;
        const char *why = NULL;
        double base_t = NAN, cur_pred, best_pred = NAN;
        unsigned best_n = a->cores, best_f = a->freq_khz;
        const struct allocator_point *cur_meas, *best_meas = NULL;
        char ftext[32];

        a->changed = false;
        app_bounds(ctx, pol, &b);
        a->effective = objective_effective(pol->objective, ctx->pm || ctx->power_measured, &why);
        if (a->effective == OBJECTIVE_MONITOR) {
                stay(a, "%s", "monitor: estimates only, nothing changed");
                return;
        }
        /* Until P is known well enough, the app runs as its baseline (every allowed core, top
         * frequency): moving on a rough estimate would lock in its error, since one core
         * teaches nothing about P. */
        if (!e || !(e->known & ESTIMATE_P_LS) || e->p_points < ALLOCATOR_MIN_POINTS ||
            !(e->p_stderr <= ALLOCATOR_MAX_P_STDERR)) {
                a->want_cores = b.max_cores;
                a->want_freq_khz = b.max_khz;
                if (!e || !(e->known & ESTIMATE_P_LS))
                        snprintf(a->reason, sizeof(a->reason), "learning: no estimate of P yet");
                else
                        snprintf(a->reason, sizeof(a->reason),
                                 "learning: P = %.2f ± %.2f from %.0f intervals is not settled",
                                 e->p_ls, e->p_stderr, e->p_points);
                return;
        }
        predicted_score(ctx, a->id, OBJECTIVE_PERFORMANCE, b.max_cores, b.max_khz, &base_t);

        /* The model's best within the bounds and the slowdown limit. */
        if (ctx->pm || a->effective == OBJECTIVE_PERFORMANCE) {
                for (unsigned n = b.min_cores; n <= b.max_cores; n++) {
                        for (unsigned fi = 0; fi < (ctx->n_freqs ? ctx->n_freqs : 1); fi++) {
                                unsigned f = ctx->n_freqs ? ctx->freqs_khz[fi] : a->freq_khz;
                                double t = NAN, s;

                                if (ctx->n_freqs && !freq_in(&b, f))
                                        continue;
                                s = predicted_score(ctx, a->id, a->effective, n, f, &t);
                                if (!objective_slowdown_ok(base_t, t, pol->max_slowdown))
                                        continue;
                                if (isnan(best_pred) || s < best_pred) {
                                        best_pred = s;
                                        best_n = n;
                                        best_f = f;
                                }
                        }
                }
        }
        cur_pred = predicted_score(ctx, a->id, a->effective, a->cores, a->freq_khz, NULL);

        /* Measurements overrule the model: the best fresh measured point wins if it beats the
         * current one by more than the hysteresis. */
        cur_meas = hist_fresh(ctx, a, a->cores, a->freq_khz);
        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *p = &a->hist[i];

                if (ctx->decision - p->decision > ALLOCATOR_STALE_DECISIONS)
                        continue;
                if (p->cores < b.min_cores || p->cores > b.max_cores)
                        continue;
                if (ctx->n_freqs && !freq_in(&b, p->freq_khz))
                        continue;
                if (!best_meas || p->score < best_meas->score)
                        best_meas = p;
        }
        if (cur_meas && best_meas && best_meas != cur_meas &&
            objective_better(cur_meas->score, best_meas->score, ctx->hysteresis)) {
                a->want_cores = best_meas->cores;
                a->want_freq_khz = best_meas->freq_khz;
                snprintf(a->reason, sizeof(a->reason),
                         "measured %s at %u cores %u MHz beats the current one by %.0f%%",
                         objective_to_string(a->effective), best_meas->cores,
                         best_meas->freq_khz / 1000,
                         100 * (cur_meas->score - best_meas->score) / fabs(cur_meas->score));
                return;
        }
        /* The model's choice, unless measurement already showed it is worse than here. */
        if (!isnan(best_pred) && (best_n != a->cores || best_f != a->freq_khz)) {
                const struct allocator_point *there = hist_fresh(ctx, a, best_n, best_f);

                if (!(there && cur_meas && there->score >= cur_meas->score) &&
                    (isnan(cur_pred) || objective_better(cur_pred, best_pred, ctx->hysteresis))) {
                        a->want_cores = best_n;
                        a->want_freq_khz = best_f;
                        snprintf(a->reason, sizeof(a->reason),
                                 "model: %s %.0f%% better at %u cores%s (P=%.2f)%s%s",
                                 objective_to_string(a->effective),
                                 isnan(cur_pred) ? 0.0
                                                 : 100 * (cur_pred - best_pred) / fabs(cur_pred),
                                 best_n, freq_text(best_f, ftext, sizeof(ftext)),
                                 e->known & ESTIMATE_P_LS ? e->p_ls : e->p_eq10, why ? "; " : "",
                                 why ? why : "");
                        return;
                }
        }
        /* Settled where the model points: try an unmeasured neighbour when measurements can
         * tell (the model is wrong for memory-bound, spinning or non-Amdahl apps). */
        if (cur_meas && ctx->decision - a->last_change >= ctx->settle_decisions) {
                unsigned cand[4][2] = { { a->cores + 1, a->freq_khz },
                                        { a->cores - 1, a->freq_khz },
                                        { a->cores, 0 },
                                        { a->cores, 0 } };
                for (unsigned i = 0; i + 1 < ctx->n_freqs; i++) {
                        if (ctx->freqs_khz[i + 1] == a->freq_khz)
                                cand[2][1] = ctx->freqs_khz[i];
                        if (ctx->freqs_khz[i] == a->freq_khz)
                                cand[3][1] = ctx->freqs_khz[i + 1];
                }
                for (unsigned i = 0; i < 4; i++) {
                        unsigned n = cand[i][0], f = cand[i][1];
                        double t = NAN;

                        if (n < b.min_cores || n > b.max_cores || (ctx->n_freqs && !f))
                                continue;
                        if (ctx->n_freqs && !freq_in(&b, f))
                                continue;
                        if (!ctx->n_freqs && i >= 2)
                                continue;
                        if (hist_fresh(ctx, a, n, f))
                                continue;
                        predicted_score(ctx, a->id, OBJECTIVE_PERFORMANCE, n, f, &t);
                        if (!objective_slowdown_ok(base_t, t, pol->max_slowdown))
                                continue;
                        a->want_cores = n;
                        a->want_freq_khz = f;
                        snprintf(a->reason, sizeof(a->reason),
                                 "exploring %u cores %u MHz: measuring whether it beats the model",
                                 n, f / 1000);
                        return;
                }
        }
        stay(a, "%s", isnan(best_pred) ? "holding: the model cannot rank this objective yet"
                                       : "holding: best known configuration");
}

int allocator_decide(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        unsigned total = 0;

        if (ctx->n_cpus == 0)
                return -EINVAL;
        for (unsigned i = 0; i < n; i++) {
                if (!apps[i].policy)
                        return -EINVAL;
                decide_one(ctx, &apps[i]);
                total += apps[i].want_cores;
        }
        /* Too many wants: take cores from the app that holds the most per unit of weight,
         * never below its minimum. */
        while (total > ctx->n_cpus) {
                struct allocator_app *victim = NULL;
                double worst = -1;

                for (unsigned i = 0; i < n; i++) {
                        struct allocator_app *a = &apps[i];
                        unsigned min = a->policy->min_cores ? a->policy->min_cores : 1;
                        double per_weight = a->want_cores / a->policy->weight;

                        if (a->want_cores > min && per_weight > worst) {
                                worst = per_weight;
                                victim = a;
                        }
                }
                if (!victim)
                        return -ENOSPC; /* the minimums alone do not fit */
                victim->want_cores--;
                snprintf(victim->reason, sizeof(victim->reason),
                         "sharing %u CPUs among %u apps by weight", ctx->n_cpus, n);
                total--;
        }
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];

                a->changed = a->want_cores != a->cores || a->want_freq_khz != a->freq_khz;
                if (a->changed)
                        a->last_change = ctx->decision;
        }
        return 0;
}

/* The package where the mask has most CPUs, or -1 for an empty mask. */
static int main_package(const struct topology *t, const struct cpumask *m)
{
        unsigned count[64] = { 0 };
        int best = -1;

        cpumask_foreach(c, m) {
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

int allocator_place(const struct topology *t, const struct cpumask *allowed,
                    const struct allocator_app *apps, const struct cpumask *cur,
                    struct cpumask *out, unsigned n)
{
        struct cpumask free_cpus = *allowed;
        unsigned total = 0;

        for (unsigned i = 0; i < n; i++)
                total += apps[i].want_cores;
        if (total > cpumask_count(allowed))
                return -ENOSPC;
        /* Keep what each app already has and may still have. */
        for (unsigned i = 0; i < n; i++) {
                unsigned kept = 0;
                int pkg = main_package(t, &cur[i]);

                cpumask_zero(&out[i]);
                /* First the CPUs on its main package, then the others. */
                for (int pass = 0; pass < 2; pass++) {
                        cpumask_foreach(c, &cur[i]) {
                                bool on_main = (unsigned)c < t->n_cpus && t->cpu[c].package == pkg;

                                if (kept == apps[i].want_cores)
                                        break;
                                if ((pass == 0) != on_main || !cpumask_test(&free_cpus, (unsigned)c))
                                        continue;
                                cpumask_set(&out[i], (unsigned)c);
                                cpumask_clear(&free_cpus, (unsigned)c);
                                kept++;
                        }
                }
        }
        /* Then fill from the package each app uses most, else the roomiest one. */
        for (unsigned i = 0; i < n; i++) {
                while (cpumask_count(&out[i]) < apps[i].want_cores) {
                        int pkg = main_package(t, &out[i]);
                        int pick = -1;

                        if (pkg < 0)
                                pkg = roomiest_package(t, &free_cpus);
                        cpumask_foreach(c, &free_cpus) {
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
