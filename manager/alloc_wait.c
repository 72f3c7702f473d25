/* Waits the counters do not see (docs/allocator.md, "Waits the counters miss"). The model's
 * speedup is Amdahl's law with the P the counters measured; threads that wait at a lock or a
 * barrier (sync, yield, imbalance) do not lower it, so the model overstates what more cores buy
 * such an app. Its speedup stack, from the threads' states, counts those waits: where the
 * stack's speedup at the app's count is clearly below the model's there and its waits explain
 * the gap, the model's predictions are corrected to it (Amdahl's law through that point). This
 * matters most where no score can be measured (several apps without a power of their own): there
 * the partition is the model's. */

#include "alloc_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/util.h"

/* The stack's speedup must be below the model's by this share before the model is corrected:
 * the model's own error on a settled app (the hysteresis), so that noise in P or in the
 * threads' states does not move it. */
#define ALLOCATOR_WAIT_GAP 0.05

/* The P the estimator predicts with (estimator_predict's choice); NaN without one. */
static double model_p(const struct estimate *e)
{
        if (e->known & ESTIMATE_P_LS)
                return e->p_ls;
        if (e->known & ESTIMATE_P_EQ10)
                return e->p_eq10;
        return NAN;
}

static double amdahl(double p, double n)
{
        return 1 / ((1 - p) + p / n);
}

void alloc_wait_observe(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        static const enum stack_component waits[] = {STACK_SYNC, STACK_YIELD, STACK_IMBALANCE};
        const struct stack *st = &a->stack;
        const struct estimate *e = estimator_get(ctx->est, a->id);
        double p, model, gap, wait = 0;

        if (!e || !st->known || !(st->cores >= 2) || fabs(st->cores - a->cores) > 0.5 ||
            !(st->speedup > 0))
                return;
        p = model_p(e);
        if (!(p > 0 && p <= 1))
                return;
        for (unsigned i = 0; i < ARRAY_SIZE(waits); i++) {
                if (!isfinite(st->component[waits[i]]))
                        return;
                wait += st->component[waits[i]];
        }
        model = amdahl(p, st->cores);
        gap = model - st->speedup;
        /* Threads blocked otherwise (sleeping, I/O) are not waits its work has between its
         * threads: their time is the app's own pace, which the stack's speedup does not
         * separate. Where they could explain the gap, nothing is corrected. */
        if (gap > ALLOCATOR_WAIT_GAP * model && wait > 0 && st->component[STACK_IO] < gap) {
                a->wait.cores = a->cores;
                a->wait.speedup = model - fmin(gap, wait);
        } else if (a->cores >= a->wait.cores) {
                /* The model holds up to here: waits that grow with the cores would show at
                 * this count if they showed at fewer. At fewer cores a lock may just not bind
                 * yet: the correction stays. */
                a->wait.cores = 0;
        }
}

void alloc_wait_reset(struct allocator_app *a)
{
        a->wait.cores = 0;
        a->wait.speedup = 0;
}

double alloc_wait_time_k(const struct allocator_ctx *ctx, const struct allocator_app *a,
                         unsigned cores)
{
        const struct estimate *e;
        double p, pc, n = a->wait.cores;

        if (a->wait.cores < 2 || !(a->wait.speedup >= 1) || cores == 0)
                return 1;
        e = estimator_get(ctx->est, a->id);
        /* Where its score is measured, the measurements hold the waits and decide: the
         * correction is for the model where nothing can be measured. */
        if (!e || alloc_score_measurable(ctx, a, e))
                return 1;
        p = model_p(e);
        if (!(p > 0 && p <= 1))
                return 1;
        /* Eq. 10: the P whose Amdahl speedup at the stack's count is the stack's. */
        pc = (1 - 1 / a->wait.speedup) / (1 - 1 / n);
        if (!(pc < p))
                return 1;
        return amdahl(p, cores) / amdahl(fmax(pc, 0), cores);
}

void alloc_wait_note(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        size_t len = strlen(a->reason);

        if (alloc_wait_time_k(ctx, a, a->want_cores ? a->want_cores : 1) == 1 &&
            alloc_wait_time_k(ctx, a, ctx->n_cpus) == 1)
                return;
        snprintf(a->reason + len, sizeof(a->reason) - len,
                 "; its stack shows waits at locks or barriers its counters miss: speedup %.1f "
                 "on %u core%s, the model's corrected to it",
                 a->wait.speedup, a->wait.cores, plural_s(a->wait.cores));
}
