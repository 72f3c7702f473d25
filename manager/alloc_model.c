/* The model's side of the allocator: predicted scores (with the measured corrections: work
 * inflation, spinning idle cores, the static power share), the model's best configuration,
 * whether measurements contradict it, and the model-only baseline (policy key search = model). */

#include "alloc_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/util.h"

/* The reason of a decision the model made for an app whose idle cores run: says so, with the
 * share its predictions charged, where it is above the counters' noise. */
#define ALLOCATOR_IDLE_RUN_NOTE 0.05

bool alloc_spins(const struct allocator_app *a)
{
        return a->spin.samples && a->spin.share >= ALLOCATOR_IDLE_RUN_NOTE;
}

void alloc_idle_run_note(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        size_t len = strlen(a->reason);

        if (ctx->pm && alloc_spins(a))
                snprintf(a->reason + len, sizeof(a->reason) - len,
                         "; %.0f%% of its idle cores run (spinning): charged busy",
                         100 * a->spin.share);
}

/* The one rule for static power, in measured scores and in predictions alike: the machine's
 * static power (uncore, CPUs no app holds) is shared by the apps that run, and an app pays its
 * share, not all of it, so one more core is worth less to it than alone (the several-apps
 * objective is the sum of the apps' own figures). The estimator charges it in full to each app
 * (docs/estimator.md, "Power share"), in its measurements and its predictions; this takes the
 * others' shares off both. */
double alloc_static_share(const struct allocator_ctx *ctx, double power_w)
{
        if (ctx->n_apps > 1 && ctx->pm && isfinite(power_w))
                return power_w - ctx->pm->static_w * (1 - 1.0 / ctx->n_apps);
        return power_w;
}

/* A package serves at most its bandwidth; where the apps there ask more, every one moving
 * traffic slows by the ratio (what the memory controllers do, and the model machine). The
 * model is fitted to the rates the app got, so its rate (time_s: seconds per 1e9
 * instructions) times the packages' measured slack is what it asks at least; the others ask
 * their traffic now times the slack. The factor on the model's time: the ratio of demand to
 * bandwidth over the slack. At the current configuration that is 1; more cores or a higher
 * clock buy what the bandwidth lets them; a lower clock costs nothing while the demand it
 * leaves still fills the packages. 1 where the bandwidth is not measured. */
static double bw_time_k(const struct allocator_app *a, double time_s)
{
        double demand_gbs, s = a->bw.slack >= 1 ? a->bw.slack : 1;

        if (!(a->bw.bandwidth_gbs > 0) || !(time_s > 0) || !isfinite(time_s))
                return 1;
        demand_gbs = s * (a->bw.bytes_per_instr / time_s + a->bw.others_gbs);
        return fmax(demand_gbs / a->bw.bandwidth_gbs, 1) / s;
}

/* The predicted score of (cores, freq), NaN when the model cannot say. */
/* time_k: a factor on the predicted time (1: the estimator's prediction as it is). */
double alloc_predicted_score_k(const struct allocator_ctx *ctx, const struct allocator_app *a,
                               enum objective_kind o, unsigned cores, unsigned freq_khz,
                               double *time_s, double time_k)
{
        struct model_prediction pr;
        double score;

        if (estimator_predict(ctx->est, a->id, cores, freq_khz, ctx->pm, &pr) < 0)
                return NAN;
        /* The model's time is for the instructions; with extra work a unit of it takes
         * 1 + X (k - 1) times as many (X measured from the app's markers, else 0). Waits at
         * locks and barriers the stack measured and the counters miss stretch it too. */
        pr.time_s *= time_k;
        pr.time_s *= bw_time_k(a, pr.time_s) *
                     (1 + a->markers.work_x * (cores > 1 ? cores - 1.0 : 0.0)) *
                     alloc_wait_time_k(ctx, a, cores);
        /* Amdahl's law counts the cores its work leaves idle as idle; an app whose waiting
         * threads spin keeps a measured share of them running: a busy core's power each. */
        if (a->spin.samples && ctx->pm && isfinite(pr.power_w) && cores > pr.busy_cores) {
                unsigned f = freq_khz ? freq_khz : model_power_max_freq(ctx->pm);
                double run = a->spin.share * (cores - pr.busy_cores), busy_w, idle_w;

                if (model_power_at(ctx->pm, f, run, 0, &busy_w) == 0 &&
                    model_power_at(ctx->pm, f, 0, run, &idle_w) == 0)
                        pr.power_w += busy_w - idle_w;
        }
        pr.power_w = alloc_static_share(ctx, pr.power_w);
        if (time_s)
                *time_s = pr.time_s;
        if (objective_score_prediction(o, &pr, &score) < 0)
                return NAN;
        return score;
}

double alloc_predicted_score(const struct allocator_ctx *ctx, const struct allocator_app *a,
                             enum objective_kind o, unsigned cores, unsigned freq_khz,
                             double *time_s)
{
        return alloc_predicted_score_k(ctx, a, o, cores, freq_khz, time_s, 1.0);
}

/* Whether the model ranks a measured point above the best measured one when the
 * measurements put it clearly below (by the hysteresis): then it is wrong for this app
 * (spinning cores it counts as idle, a speedup falling past some N) and must not send the app
 * anywhere, even before one of its own jumps has shown it. */
bool alloc_model_contradicted(const struct allocator_ctx *ctx, struct allocator_app *a,
                              const struct allocator_bounds *b, const struct allocator_point *best)
{
        double pred_best =
            alloc_predicted_score(ctx, a, a->effective, best->cores, best->freq_khz, NULL);

        if (isnan(pred_best))
                return false;
        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *p = &a->hist[i];

                if (p == best || !alloc_point_fresh(ctx, p) || !alloc_point_in_bounds(ctx, b, p))
                        continue;
                if (!objective_better(p->score, best->score, ctx->hysteresis))
                        continue;
                if (objective_better(
                        pred_best,
                        alloc_predicted_score(ctx, a, a->effective, p->cores, p->freq_khz, NULL),
                        0))
                        return true;
        }
        return false;
}

/* Whether the app's objective can be measured now: it needs no power, or the app's own
 * power is known (attributed by the power model), or it runs alone on a package whose energy
 * is measured. */
bool alloc_score_measurable(const struct allocator_ctx *ctx, const struct allocator_app *a,
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
double alloc_model_best(const struct allocator_ctx *ctx, const struct allocator_app *a,
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
                            (!alloc_freq_in(b, f) || (a->freq_shared && f != a->freq_khz)))
                                continue;
                        s = alloc_predicted_score(ctx, a, a->effective, n, f, &t);
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
void alloc_decide_model_only(const struct allocator_ctx *ctx, struct allocator_app *a,
                             const struct estimate *e, double best_pred, double cur_pred,
                             unsigned best_n, unsigned best_f)
{
        char ftext[32];

        if (isnan(best_pred)) {
                alloc_stay(a, "%s", "model only: the model cannot rank this objective yet");
                return;
        }
        /* Its first move goes wherever the model says; later ones, as P's estimate moves a
         * little at each setting, only for more than the hysteresis. */
        if ((best_n == a->cores && best_f == a->freq_khz) ||
            (a->model.cores && !isnan(cur_pred) &&
             !objective_better(cur_pred, best_pred, ctx->hysteresis))) {
                alloc_stay(a, "%s", "model only: holding at the model's best");
                return;
        }
        a->want_cores = a->model.cores = best_n;
        a->want_freq_khz = a->model.freq_khz = best_f;
        snprintf(a->reason, sizeof(a->reason),
                 "model only: %s %.0f%% better at %u core%s%s (P=%.2f)",
                 objective_to_string(a->effective),
                 isnan(cur_pred) ? 0.0 : 100 * (cur_pred - best_pred) / fabs(cur_pred), best_n,
                 plural_s(best_n), alloc_freq_text(best_f, ftext, sizeof(ftext)),
                 e && (e->known & ESTIMATE_P_LS) ? e->p_ls
                 : e                             ? e->p_eq10
                                                 : NAN);
}
