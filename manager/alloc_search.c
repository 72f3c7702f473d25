/* The measured search (docs/allocator.md, "Deciding"): the ladder, the pattern
 * search over (cores, frequency), the speedup stack's and the extrapolation's say in it, and
 * the handler of the measured phases (recall, search, settled, model). */

#include "alloc_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/util.h"

/* A move measured worse by this fraction at one frequency (a core move) or one core count (a
 * frequency move) is taken for worse at any other: near an optimum the two act on the score
 * nearly independently, and their coupling does not undo a loss this large. Ten times the
 * counters' noise over a probe. */
#define ALLOCATOR_FAR_WORSE 0.15
/* ESTIMA's extrapolation (model/scaling.c): believed when it reproduces every measured
 * score within ALLOCATOR_SCALING_TRUST; at most ALLOCATOR_SCALING_JUMPS jumps to its predicted
 * optimum per search; a core move it predicts worse by the hysteresis, or by
 * ALLOCATOR_RULE_OUT_ERRORS times its error at the measured points, is not probed. */
#define ALLOCATOR_SCALING_JUMPS 3
#define ALLOCATOR_SCALING_TRUST 0.05
#define ALLOCATOR_RULE_OUT_ERRORS 4
/* ESTIMA is validated to about this multiple of the largest core count measured
 * (docs/extrapolation.md): its jumps go no further. */
#define ALLOCATOR_EXTRAP_REACH 2
/* Settable frequencies from which the search's frequency steps start wide (a quarter of
 * them), as ALLOCATOR_WIDE_RANGE for core counts. */
#define ALLOCATOR_WIDE_FREQS 8
/* A move that measured worse from a point within this many P-states (or the search's
 * frequency step, if larger) is taken for worse here too (move_known_worse). */
#define ALLOCATOR_NEAR_FREQS 2

/* Whether the move (cores, freq) -> (to_cores, to_freq) is known to be worse without
 * measuring it: the same move, made from a nearby core count (a frequency move) or a nearby
 * frequency (a core move), measured worse (close by: see below). Core count and frequency act on an
 * app's score nearly independently near its optimum, so the compass search need not test again, at
 * every new best point, the direction that failed one step away. */
static bool move_known_worse(const struct allocator_ctx *ctx, struct allocator_app *a,
                             unsigned cores, unsigned freq_khz, unsigned to_cores,
                             unsigned to_freq_khz)
{
        int fi = alloc_freq_index(ctx, freq_khz);
        /* Close by: within the search's step, a quarter of the core count, two P-states. */
        unsigned near_cores = a->search.step_cores > cores / ALLOCATOR_STEP_DIV
                                  ? a->search.step_cores
                                  : cores / ALLOCATOR_STEP_DIV;
        int near_freqs = a->search.step_freqs > ALLOCATOR_NEAR_FREQS ? (int)a->search.step_freqs
                                                                     : ALLOCATOR_NEAR_FREQS;

        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *from = &a->hist[i], *to;
                bool near;

                if (!alloc_point_fresh(ctx, from))
                        continue;
                if (to_freq_khz == freq_khz) {
                        /* A core move, seen at another frequency. */
                        int d = alloc_freq_index(ctx, from->freq_khz) - fi;

                        if (from->cores != cores || from->freq_khz == freq_khz || fi < 0)
                                continue;
                        near = abs(d) <= near_freqs;
                        to = alloc_hist_fresh(ctx, a, to_cores, from->freq_khz);
                } else {
                        /* A frequency move, seen at another core count. */
                        if (from->freq_khz != freq_khz || from->cores == cores)
                                continue;
                        near = (from->cores > cores ? from->cores - cores : cores - from->cores) <=
                               near_cores;
                        to = alloc_hist_fresh(ctx, a, from->cores, to_freq_khz);
                }
                /* Close by, worse by the search's margin; anywhere in the range, worse by
                 * ALLOCATOR_FAR_WORSE: a loss that large is not undone by the other
                 * dimension's coupling. */
                if (to && objective_better(to->score, from->score,
                                           near ? ALLOCATOR_SEARCH_MARGIN : ALLOCATOR_FAR_WORSE))
                        return true;
        }
        return false;
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
        margin = fmax(hysteresis, ALLOCATOR_RULE_OUT_ERRORS * m->fit_error);
        return objective_better(scaling_predict_score(m, a->effective, to_cores),
                                scaling_predict_score(m, a->effective, cores), margin);
}

static unsigned neighbours(const struct allocator_ctx *ctx, struct allocator_app *a,
                           const struct allocator_bounds *b, double base_t, unsigned cores,
                           unsigned freq_khz, const struct stack_hint *hint, bool *hinted,
                           struct allocator_cand out[4])
{
        int fi = alloc_freq_index(ctx, freq_khz), sf = (int)a->search.step_freqs;
        long sc = a->search.step_cores;
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
        if (a->search.halving) {
                unsigned rung[2] = {cores / 2 > b->min_cores ? cores / 2 : b->min_cores,
                                    2 * cores < b->max_cores ? 2 * cores : b->max_cores};

                for (unsigned i = 0; i < 2; i++) {
                        double t = NAN;

                        if (rung[i] == cores || alloc_hist_fresh(ctx, a, rung[i], freq_khz) ||
                            alloc_denied(ctx, a, rung[i], freq_khz) ||
                            scaling_rules_out(a, ctx->hysteresis, cores, freq_khz, rung[i],
                                              freq_khz))
                                continue;
                        alloc_predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, rung[i], freq_khz, &t);
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
                if (i >= 2 && (!ctx->n_freqs || !c[i].freq_khz ||
                               !alloc_freq_in(b, c[i].freq_khz) || a->freq_shared))
                        continue;
                /* Measured, known worse without measuring, or denied by sharing. */
                if (alloc_hist_fresh(ctx, a, c[i].cores, c[i].freq_khz) ||
                    move_known_worse(ctx, a, cores, freq_khz, c[i].cores, c[i].freq_khz) ||
                    alloc_denied(ctx, a, c[i].cores, c[i].freq_khz) ||
                    scaling_rules_out(a, ctx->hysteresis, cores, freq_khz, c[i].cores,
                                      c[i].freq_khz))
                        continue;
                alloc_predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, c[i].cores, c[i].freq_khz, &t);
                if (!isnan(base_t) && !objective_slowdown_ok(base_t, t, a->policy->max_slowdown))
                        continue;
                if (isnan(base_t) && isfinite(a->policy->max_slowdown) && c[i].cores < b->max_cores)
                        continue; /* a limit we cannot check is not crossed on a guess */
                c[i].pred = ctx->pm ? alloc_predicted_score(ctx, a, a->effective, c[i].cores,
                                                            c[i].freq_khz, NULL)
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
             hint->dir != STACK_HINT_NONE && (!ctx->pm || a->model.refuted) && i < n; i++) {
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
        if (n && hint->dir != STACK_HINT_NONE && (!ctx->pm || a->model.refuted) && !*hinted)
                *hinted = hint->dir == STACK_HINT_FEWER_CORES
                              ? out[0].cores < cores && out[0].freq_khz == freq_khz
                              : out[0].cores == cores && out[0].freq_khz < freq_khz;
        return n;
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
        unsigned n, min_samples = alloc_probe_samples(ctx) > 1 ? alloc_probe_samples(ctx) - 1 : 1;
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
         * its kernels are unconstrained, and far above the largest any kernel's curvature is
         * a guess. The ladder and the pattern search measure further out. */
        /* The knee of the predicted score, not its argmin: on a curve flat within a few per
         * cent the argmin is noise, and a jump to it costs a move for nothing. */
        n = extrap_knee(scaling_knee_score, &(struct scaling_knee_arg){m, a->effective},
                        m->min_measured > b->min_cores ? m->min_measured : b->min_cores,
                        ALLOCATOR_EXTRAP_REACH * m->max_measured < b->max_cores
                            ? ALLOCATOR_EXTRAP_REACH * m->max_measured
                            : b->max_cores,
                        EXTRAP_KNEE_TOL);
        extrap_best_cores(&m->time, b->max_cores, &smax);
        a->predicted_best_cores = m->trusted ? n : 0;
        a->predicted_speedup_max = m->trusted ? smax : NAN;
        if (!n || !m->trusted || n == best->cores || a->model.jumps >= ALLOCATOR_SCALING_JUMPS ||
            alloc_hist_fresh(ctx, a, n, best->freq_khz) ||
            alloc_denied(ctx, a, n, best->freq_khz) ||
            !objective_better(scaling_predict_score(m, a->effective, best->cores),
                              scaling_predict_score(m, a->effective, n),
                              fmax(ALLOCATOR_SEARCH_MARGIN, m->fit_error)))
                return false;
        alloc_predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, n, best->freq_khz, &t);
        if (isnan(base_t) ? isfinite(a->policy->max_slowdown) && n < b->max_cores
                          : !objective_slowdown_ok(base_t, t, a->policy->max_slowdown))
                return false;
        a->model.jumps++;
        a->search.halving = false;
        /* A quarter of the target, or the search's step if finer: a jump the measurement
         * refutes leaves the search around the best point at the step it had reached, not at
         * the coarse steps of a far target. */
        if (!a->search.step_cores || n / ALLOCATOR_STEP_DIV < a->search.step_cores)
                a->search.step_cores = n / ALLOCATOR_STEP_DIV > 1 ? n / ALLOCATOR_STEP_DIV : 1;
        a->want_cores = n;
        a->want_freq_khz = best->freq_khz;
        a->reserve_cores = best->cores;
        a->exploring = true;
        snprintf(a->reason, sizeof(a->reason),
                 "extrapolated (%s, %u point%s): %s best at %u core%s%s, measuring it",
                 extrap_kernel_name(m->time.main.kernel), m->n_points, plural_s(m->n_points),
                 objective_to_string(a->effective), n, plural_s(n),
                 alloc_freq_text(best->freq_khz, ftext, sizeof(ftext)));
        return true;
}

/* What the measured phases decide from: the model's ranking and the measured points. */
struct measured {
        double base_t;    /* predicted time at the baseline, for the slowdown limit */
        double cur_pred;  /* the model's score where the app is; NaN: it cannot say */
        double best_pred; /* the model's best score, at (best_n, best_f) */
        unsigned best_n, best_f;
        const struct allocator_point *cur_meas;  /* fresh where the app is, or NULL */
        const struct allocator_point *best_meas; /* the best fresh point in bounds, or NULL */
        /* The lowest score among them: best_meas unless the risk rule picked fewer cores. */
        const struct allocator_point *risk_best;
};

/* Starts the search when it has not begun (or was reset since the last decision: the app
 * changed), and asks the model for its ranking. The phase the app is in for what follows. */
static enum allocator_phase measured_prepare(struct decision *d, struct measured *m,
                                             enum allocator_phase cur)
{
        const struct allocator_ctx *ctx = d->ctx;
        const struct allocator_bounds *b = &d->b;
        struct allocator_app *a = d->a;

        if (!a->search.step_cores) {
                unsigned nf = 0;

                if (cur == ALLOCATOR_PHASE_SETTLED || cur == ALLOCATOR_PHASE_MODEL)
                        cur = ALLOCATOR_PHASE_SEARCH;
                for (unsigned i = 0; i < ctx->n_freqs; i++)
                        nf += alloc_freq_in(b, ctx->freqs_khz[i]);
                /* Wide first steps, halved as the search closes in: O(log N) probes. */
                a->search.step_cores =
                    alloc_range_wide(b) ? (b->max_cores - b->min_cores) / ALLOCATOR_STEP_DIV : 1;
                a->search.step_freqs = nf >= ALLOCATOR_WIDE_FREQS ? nf / ALLOCATOR_STEP_DIV : 1;
                /* From where it started on a wide range, halving (and doubling, from below
                 * the full count) finds the scale in O(log N) probes. */
                a->search.halving = alloc_range_wide(b) && a->cores == d->start;
        }
        *m = (struct measured){.base_t = NAN, .best_n = a->cores, .best_f = a->freq_khz};
        alloc_predicted_score(ctx, a, OBJECTIVE_PERFORMANCE, b->max_cores, b->max_khz, &m->base_t);
        m->best_pred = alloc_model_best(ctx, a, b, m->base_t, &m->best_n, &m->best_f);
        m->cur_pred = alloc_predicted_score(ctx, a, a->effective, a->cores, a->freq_khz, NULL);
        return cur;
}

/* Measurements overrule the model: the best fresh measured point in bounds (at the domain's
 * clock when the app shares a frequency domain), and whether the model is refuted for this
 * app (its last jump measured worse than that point, or it ranks the measured points
 * against what they measured). */
static void measured_points(struct decision *d, struct measured *m)
{
        const struct allocator_ctx *ctx = d->ctx;
        struct allocator_app *a = d->a;

        m->cur_meas = alloc_hist_fresh(ctx, a, a->cores, a->freq_khz);
        m->best_meas = NULL;
        for (unsigned i = 0; i < a->n_hist; i++) {
                const struct allocator_point *p = &a->hist[i];

                if (!alloc_meas_eligible(&(struct alloc_meas_arg){ctx, a, &d->b}, p))
                        continue;
                if (!m->best_meas || p->score < m->best_meas->score)
                        m->best_meas = p;
        }
        /* Scored by instructions, the fewest cores the counters cannot tell from the best
         * (manager/alloc_risk.c): the search goes on around it and settles there. */
        m->risk_best = m->best_meas;
        m->best_meas = alloc_risk_measured(a, m->best_meas, alloc_meas_eligible,
                                           &(struct alloc_meas_arg){ctx, a, &d->b});
        if (a->model.cores && m->best_meas) {
                const struct allocator_point *mp =
                    alloc_hist_fresh(ctx, a, a->model.cores, a->model.freq_khz);

                if (mp && objective_better(mp->score, m->best_meas->score, ALLOCATOR_SEARCH_MARGIN))
                        a->model.refuted = true;
        }
        if (!a->model.refuted && m->best_meas && !isnan(m->best_pred))
                a->model.refuted = alloc_model_contradicted(ctx, a, &d->b, m->best_meas);
}

/* At a probe not measured yet, sharing the machine: its measurement first. A model jump from
 * here (the model ranks the probe poorly, by design) would leave every probe unmeasured when
 * sharing trims the jump back, and the app would swing between the two at every decision.
 * True when that decides. */
static bool probe_measured_first(struct decision *d, const struct measured *m)
{
        const struct allocator_ctx *ctx = d->ctx;
        struct allocator_app *a = d->a;
        char ftext[32];

        if (m->cur_meas || a->cores != a->search.probe_cores ||
            a->freq_khz != a->search.probe_freq_khz || ctx->n_apps <= 1)
                return false;
        /* Begun alone, a probe cannot be measured once another app arrives and the app's own
         * power is not measured: it would hold an unmeasured probe to the end. Back to the
         * best measured point; the model ranks from there. */
        if (m->best_meas && !alloc_score_measurable(ctx, a, d->e)) {
                a->denied.cores = a->cores;
                a->denied.freq_khz = a->freq_khz;
                a->denied.decision = ctx->decision;
                a->denied.by_share = false; /* room does not make it measurable */
                a->want_cores = m->best_meas->cores;
                a->want_freq_khz = m->best_meas->freq_khz;
                a->search.probe_cores = a->search.probe_freq_khz = 0;
                snprintf(a->reason, sizeof(a->reason),
                         "probe of %u core%s%s abandoned: its %s cannot be measured "
                         "while sharing (no power of its own); back to %u core%s%s",
                         a->cores, plural_s(a->cores),
                         alloc_freq_text(a->freq_khz, ftext, sizeof(ftext)),
                         objective_to_string(a->effective), m->best_meas->cores,
                         plural_s(m->best_meas->cores),
                         alloc_freq_text(m->best_meas->freq_khz, ftext + 16, sizeof(ftext) - 16));
                return true;
        }
        alloc_stay(a, "%s", "measuring this configuration");
        return true;
}

/* A measured point better than the current one by the hysteresis: go there. */
static bool measured_better(struct decision *d, const struct measured *m)
{
        struct allocator_app *a = d->a;
        const struct allocator_point *cur = m->cur_meas, *best = m->best_meas;
        char ftext[32];

        if (!cur || !best || best == cur ||
            !objective_better(cur->score, best->score, d->ctx->hysteresis))
                return false;
        a->want_cores = best->cores;
        a->want_freq_khz = best->freq_khz;
        snprintf(a->reason, sizeof(a->reason),
                 "measured %s at %u core%s%s beats the current one by %.0f%%",
                 objective_to_string(a->effective), best->cores, plural_s(best->cores),
                 alloc_freq_text(best->freq_khz, ftext, sizeof(ftext)),
                 100 * (cur->score - best->score) / fabs(cur->score));
        return true;
}

/* The stack: a lock (sync, yield) that costs a good share of the cores at the full count says
 * more cores add nothing past those the app keeps busy. The first probe goes there, instead
 * of halving towards it one probe at a time. */
static bool stack_first_probe(struct decision *d, const struct measured *m,
                              const struct stack_hint *hint)
{
        const struct allocator_ctx *ctx = d->ctx;
        struct allocator_app *a = d->a;
        unsigned n;

        if (hint->dir != STACK_HINT_FEWER_CORES || !hint->saturates || !a->search.halving ||
            !m->cur_meas || a->cores != d->start)
                return false;
        n = hint->busy > d->b.min_cores ? hint->busy : d->b.min_cores;
        if (n >= a->cores / 2 || alloc_hist_fresh(ctx, a, n, a->freq_khz) ||
            alloc_denied(ctx, a, n, a->freq_khz))
                return false;
        a->search.halving = false;
        a->search.step_cores = n / ALLOCATOR_STEP_DIV > 1 ? n / ALLOCATOR_STEP_DIV : 1;
        a->want_cores = n;
        a->want_freq_khz = a->freq_khz;
        a->exploring = true;
        snprintf(a->reason, sizeof(a->reason),
                 "stack: %s %.1f of %.0f cores grows with the cores: trying "
                 "%u core%s first, the ones it keeps busy",
                 stack_component_name(hint->why), hint->cost, hint->cores, n, plural_s(n));
        return true;
}

/* The model's choice, unless it has been measured there already (then measurement decides),
 * sharing denied it, or the model is refuted for this app. */
static bool model_jump(struct decision *d, const struct measured *m)
{
        const struct allocator_ctx *ctx = d->ctx;
        struct allocator_app *a = d->a;
        unsigned span;
        char ftext[32];

        if (isnan(m->best_pred) || a->model.refuted ||
            (m->best_n == a->cores && m->best_f == a->freq_khz) ||
            alloc_hist_fresh(ctx, a, m->best_n, m->best_f) ||
            alloc_denied(ctx, a, m->best_n, m->best_f) ||
            !(isnan(m->cur_pred) || objective_better(m->cur_pred, m->best_pred, ctx->hysteresis)))
                return false;
        /* With nothing measured (it shared the machine without a power of its own, or its
         * phase changed), the jump's length is all the search knows of the scale: should the
         * measurement refute it, the optimum lies anywhere along the jump, and steps of a
         * quarter of it bracket it in two halvings, as the first steps do over the range.
         * The steps of a search that had settled would walk it back one core at a time. */
        span = (m->best_n > a->cores ? m->best_n - a->cores : a->cores - m->best_n) /
               ALLOCATOR_STEP_DIV;
        if (!m->best_meas && span > a->search.step_cores)
                a->search.step_cores = span;
        a->want_cores = m->best_n;
        a->want_freq_khz = m->best_f;
        a->model.cores = m->best_n;
        a->model.freq_khz = m->best_f;
        a->exploring = true;
        snprintf(a->reason, sizeof(a->reason),
                 "model: %s %.0f%% better at %u core%s%s (P=%.2f)%s%s",
                 objective_to_string(a->effective),
                 isnan(m->cur_pred) ? 0.0 : 100 * (m->cur_pred - m->best_pred) / fabs(m->cur_pred),
                 m->best_n, plural_s(m->best_n), alloc_freq_text(m->best_f, ftext, sizeof(ftext)),
                 d->e->known & ESTIMATE_P_LS ? d->e->p_ls : d->e->p_eq10, d->why ? "; " : "",
                 d->why ? d->why : "");
        alloc_idle_run_note(ctx, a);
        return true;
}

/* The pattern search around the best measured point: its first unmeasured neighbour (the
 * ladder's rung while halving), halving the steps when none is left; when none is left at
 * step 1 the app settles on the best point. SEARCH or SETTLED. */
static enum allocator_phase pattern_step(struct decision *d, const struct measured *m,
                                         const struct allocator_point *best,
                                         const struct stack_hint *hint)
{
        const struct allocator_ctx *ctx = d->ctx;
        struct allocator_app *a = d->a;
        struct allocator_cand cand[4];
        char ftext[32];

        for (;;) {
                bool hinted;
                unsigned n = neighbours(ctx, a, &d->b, m->base_t, best->cores, best->freq_khz, hint,
                                        &hinted, cand);

                if (!n && a->search.halving) {
                        /* The optimum lies between the best and its halves: search there. */
                        a->search.halving = false;
                        a->search.step_cores = best->cores / ALLOCATOR_STEP_DIV > 1
                                                   ? best->cores / ALLOCATOR_STEP_DIV
                                                   : 1;
                        continue;
                }
                if (n) {
                        a->want_cores = a->search.probe_cores = cand[0].cores;
                        a->want_freq_khz = a->search.probe_freq_khz = cand[0].freq_khz;
                        a->reserve_cores = best->cores;
                        a->exploring = true;
                        snprintf(a->reason, sizeof(a->reason),
                                 "exploring %u core%s%s: measuring whether it beats %u core%s%s",
                                 cand[0].cores, plural_s(cand[0].cores),
                                 alloc_freq_text(cand[0].freq_khz, ftext, sizeof(ftext)),
                                 best->cores, plural_s(best->cores),
                                 alloc_freq_text(best->freq_khz, ftext + 16, sizeof(ftext) - 16));
                        if (hinted) {
                                size_t len = strlen(a->reason);

                                snprintf(a->reason + len, sizeof(a->reason) - len,
                                         "; stack: %s %.1f of %.0f cores, %s first",
                                         stack_component_name(hint->why), hint->cost, hint->cores,
                                         hint->dir == STACK_HINT_FEWER_CORES ? "fewer cores"
                                                                             : "a lower clock");
                        }
                        return ALLOCATOR_PHASE_SEARCH;
                }
                if (a->search.step_cores <= 1 && a->search.step_freqs <= 1)
                        break;
                a->search.step_cores = (a->search.step_cores + 1) / 2;
                a->search.step_freqs = (a->search.step_freqs + 1) / 2;
        }
        /* Sharing the machine, every score moves a little with what the others do: a
         * settled app moves for the hysteresis then, not for the search's margin. */
        if (best != m->cur_meas &&
            (objective_better(m->cur_meas->score, best->score,
                              ctx->n_apps > 1 ? ctx->hysteresis : ALLOCATOR_SEARCH_MARGIN) ||
             (m->best_meas != m->risk_best && best->cores < m->cur_meas->cores))) {
                a->want_cores = best->cores;
                a->want_freq_khz = best->freq_khz;
                snprintf(a->reason, sizeof(a->reason),
                         "settled: every neighbour of %u core%s%s measured worse", best->cores,
                         plural_s(best->cores),
                         alloc_freq_text(best->freq_khz, ftext, sizeof(ftext)));
                alloc_risk_note(best, m->risk_best, a->reason, sizeof(a->reason));
                return ALLOCATOR_PHASE_SETTLED;
        }
        alloc_stay(a, "%s", "holding: every neighbour measured worse");
        alloc_risk_note(best, m->risk_best, a->reason, sizeof(a->reason));
        return ALLOCATOR_PHASE_SETTLED;
}

/* RECALL, SEARCH, SETTLED, MODEL: the phases that work from measured points and the model's
 * ranking. One handler, since each step below applies to several of them, in this order:
 * model-only; the remembered configuration; the measured search's moves, the first that
 * applies deciding. Every return names the phase it leaves the app in (cur: it holds). */
enum allocator_phase alloc_on_measured(struct decision *d, enum allocator_phase cur)
{
        const struct allocator_ctx *ctx = d->ctx;
        struct allocator_app *a = d->a;
        struct measured m;
        struct stack_hint hint;

        cur = measured_prepare(d, &m, cur);
        if (a->policy->search == POLICY_SEARCH_MODEL) {
                alloc_decide_model_only(ctx, a, d->e, m.best_pred, m.cur_pred, m.best_n, m.best_f);
                return ALLOCATOR_PHASE_MODEL;
        }
        /* Model-only no more (a reload): where the model put it, as settled. */
        if (cur == ALLOCATOR_PHASE_MODEL)
                cur = ALLOCATOR_PHASE_SETTLED;
        measured_points(d, &m);
        if (a->hint.cores) {
                enum hint_verdict v = alloc_hint_check(ctx, a, m.cur_meas, m.best_pred);

                switch (v) {
                case HINT_HOLD:
                        return cur;
                case HINT_VERIFIED:
                case HINT_EXPLORE:
                        return ALLOCATOR_PHASE_SETTLED;
                case HINT_OFF:
                case HINT_MOVED:
                case HINT_SPENT:
                        break;
                }
                /* A start, not a commitment: dropped before P is known, while the machine is
                 * shared (the partition gave it other cores than it remembered, or it
                 * measured off under the others' load), it learns as a first-time app does.
                 * Sharing, the partition is chosen by the model, which cannot rank it
                 * without P, and a search from the cores it was given would never learn P
                 * (docs/history.md, "A start, not a commitment"). */
                if (!alloc_p_settled(d->e) && (v == HINT_MOVED || ctx->n_apps > 1))
                        return alloc_on_learn(d);
                if (v == HINT_OFF)
                        return cur == ALLOCATOR_PHASE_RECALL ? ALLOCATOR_PHASE_SEARCH : cur;
        }
        /* The remembered configuration is done with: the measured search decides. */
        if (cur == ALLOCATOR_PHASE_RECALL)
                cur = ALLOCATOR_PHASE_SEARCH;
        if (probe_measured_first(d, &m) || measured_better(d, &m))
                return cur;
        hint = stack_hint(a);
        if (stack_first_probe(d, &m, &hint) || model_jump(d, &m))
                return cur;
        /* The measured search: wait for the current point's measurement, then measure the
         * unmeasured neighbours of the best point. */
        if (!m.cur_meas) {
                alloc_stay(a, "%s",
                           isnan(m.best_pred) && !ctx->power_measured && !ctx->pm
                               ? "holding: the model cannot rank this objective yet"
                               : "measuring this configuration");
                return cur;
        }
        if (scaling_jump(ctx, a, &d->b, m.base_t, m.best_meas ? m.best_meas : m.cur_meas))
                return ALLOCATOR_PHASE_SEARCH;
        return pattern_step(d, &m, m.best_meas ? m.best_meas : m.cur_meas, &hint);
}
