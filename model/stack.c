/* The speedup stack from per-thread states (docs/stack.md). Everything is core-time over the
 * interval: N cores × T is what the app was granted; the speedup is the part it used for work,
 * and each component is the part a delimiter kept idle. Dividing by T gives cores. */
#include "pctl/stack.h"

#include <math.h>
#include <string.h>

/* Below this the states are a handful of scheduler ticks: not a stack. */
#define STACK_MIN_INTERVAL_NS 1000000ULL

static const char *const component_names[STACK_COMPONENTS] = {
    [STACK_SEQUENTIAL] = "sequential",     [STACK_SYNC] = "sync",         [STACK_YIELD] = "yield",
    [STACK_IMBALANCE] = "imbalance",       [STACK_RUNQUEUE] = "runqueue", [STACK_IO] = "io",
    [STACK_INTERFERENCE] = "interference",
};

const char *stack_component_name(enum stack_component c)
{
        return (unsigned)c < STACK_COMPONENTS ? component_names[c] : NULL;
}

static void stack_unknown(struct stack *out, double cores, unsigned threads)
{
        *out = (struct stack){.known = false, .cores = cores, .threads = threads, .speedup = NAN};
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                out->component[c] = NAN;
}

/* A thread that neither ran, waited for a CPU, yielded nor exited in the interval was parked
 * all along (a main thread in pthread_join, an idle pool thread): it never wanted a core, so
 * it is left out — cores it could not use count as "no thread there". */
static bool thread_working(const struct threadstate_thread *t)
{
        return t->ns[THREAD_RUN] + t->ns[THREAD_RUNQUEUE] + t->ns[THREAD_YIELD] +
                   t->ns[THREAD_EXITED] >
               0;
}

static double thread_alive_ns(const struct threadstate_thread *t)
{
        return (double)t->ns[THREAD_RUN] + (double)t->ns[THREAD_RUNQUEUE] +
               (double)t->ns[THREAD_SYNC] + (double)t->ns[THREAD_YIELD] +
               (double)t->ns[THREAD_BLOCKED];
}

void stack_compute(const struct threadstate_app *app, double cores, double speedup,
                   struct stack *out)
{
        double T, NT, run = 0, rq = 0, sync = 0, yld = 0, io = 0, exited = 0, alive = 0;
        double lack, imbalance, sequential, avail, sum, comp[STACK_COMPONENTS] = {0};
        double solo_top = 0, solo_second = 0;
        double others_sync = 0, others_yield = 0, others_io = 0;
        unsigned working = 0, alive_threads = 0, top = 0;
        pid_t first_tid = 0;
        bool top_is_first;

        if (!app || !(cores >= 1) || !isfinite(cores)) {
                stack_unknown(out, cores, app ? app->n_threads : 0);
                return;
        }
        if (app->interval_ns < STACK_MIN_INTERVAL_NS || (app->n_threads > 0 && !app->threads) ||
            (isfinite(speedup) && speedup < 0)) {
                stack_unknown(out, cores, app->n_threads);
                return;
        }
        T = (double)app->interval_ns;
        NT = cores * T;

        for (unsigned i = 0; i < app->n_threads; i++) {
                const struct threadstate_thread *t = &app->threads[i];
                double solo = (double)t->solo_ns;

                if (!thread_working(t))
                        continue;
                working++;
                if (thread_alive_ns(t) > 0) {
                        alive_threads++;
                        if (first_tid == 0 || t->tid < first_tid)
                                first_tid = t->tid;
                }
                run += (double)t->ns[THREAD_RUN];
                rq += (double)t->ns[THREAD_RUNQUEUE];
                sync += (double)t->ns[THREAD_SYNC];
                yld += (double)t->ns[THREAD_YIELD];
                io += (double)t->ns[THREAD_BLOCKED];
                exited += (double)t->ns[THREAD_EXITED];
                alive += thread_alive_ns(t);
                if (solo > solo_top) {
                        solo_second = solo_top;
                        solo_top = solo;
                        top = i;
                } else if (solo > solo_second) {
                        solo_second = solo;
                }
        }
        if (working == 0 || !(run > 0)) {
                /* Nothing ran: there is no speedup to explain. */
                stack_unknown(out, cores, app->n_threads);
                return;
        }
        if (!isfinite(speedup))
                speedup = run / T;
        if (speedup > cores)
                speedup = cores; /* superlinear (or accounting skew): no delimiter left */
        avail = NT - speedup * T;

        /* Cores no live thread could use: first those a finished thread left (imbalance, as
         * [SSM]'s Exit_i), the rest had no thread yet or any more (sequential). */
        lack = NT > alive ? NT - alive : 0;
        imbalance = exited < lack ? exited : lack;
        sequential = lack - imbalance;

        /* Runqueue time while more threads were active than cores keeps every core busy: only
         * the rest (another load on the app's CPUs) costs the app cores. */
        if (app->has_active) {
                double own_rq = 0;

                for (unsigned k = (unsigned)ceil(cores) + 1; k <= THREADSTATE_MAX_ACTIVE; k++)
                        own_rq += ((double)k - cores) * (double)app->active_ns[k];
                rq = rq > own_rq ? rq - own_rq : 0;
        }

        /* Solo time: one thread ran alone while others waited. Lock hand-offs spread it over
         * the contenders; serial code or a laggard thread puts it on one. The top thread's
         * solo time beyond any other's is that one-thread part; while it lasted, the waiting
         * threads (at most N - 1 cores' worth) were not in a lock but waiting for it. On the
         * app's first thread it is serial code (sequential); on another, a laggard the others
         * wait for at the end of a parallel part (imbalance). */
        top_is_first = alive_threads > 0 && app->threads[top].tid == first_tid;
        if (solo_top > solo_second && alive_threads > 1) {
                double waiters = (alive_threads - 1 < cores - 1) ? alive_threads - 1 : cores - 1;
                double want = waiters * (solo_top - solo_second), moved, from;

                for (unsigned i = 0; i < app->n_threads; i++) {
                        const struct threadstate_thread *t = &app->threads[i];

                        if (i == top || !thread_working(t))
                                continue;
                        others_sync += (double)t->ns[THREAD_SYNC];
                        others_yield += (double)t->ns[THREAD_YIELD];
                        others_io += (double)t->ns[THREAD_BLOCKED];
                }
                /* Barriers and joins are futex waits: take those first, then yield, then
                 * other blocking. */
                if (want > others_sync + others_yield + others_io)
                        want = others_sync + others_yield + others_io;
                moved = want;
                from = want < others_sync ? want : others_sync;
                sync -= from;
                want -= from;
                from = want < others_yield ? want : others_yield;
                yld -= from;
                want -= from;
                io -= want;
                if (top_is_first)
                        sequential += moved;
                else
                        imbalance += moved;
        }

        comp[STACK_SEQUENTIAL] = sequential;
        comp[STACK_SYNC] = sync;
        comp[STACK_YIELD] = yld;
        comp[STACK_IMBALANCE] = imbalance;
        comp[STACK_RUNQUEUE] = rq;
        comp[STACK_IO] = io;
        sum = 0;
        for (unsigned c = 0; c < STACK_INTERFERENCE; c++)
                sum += comp[c];

        /* [SS] and [SSM] close the bar at N: interference is the residual. Where the measured
         * components exceed the cores the speedup leaves (more threads than cores wait at
         * once, or an estimated speedup above the run time), they share what is left in
         * proportion, so that every component stays >= 0 and speedup + sum is N. */
        if (sum <= avail) {
                comp[STACK_INTERFERENCE] = avail - sum;
        } else {
                double scale = sum > 0 ? avail / sum : 0;

                for (unsigned c = 0; c < STACK_INTERFERENCE; c++)
                        comp[c] *= scale;
                comp[STACK_INTERFERENCE] = 0;
        }

        out->known = true;
        out->cores = cores;
        out->threads = app->n_threads;
        out->speedup = speedup;
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                out->component[c] = comp[c] / T;
}

enum stack_component stack_largest(const struct stack *s)
{
        enum stack_component best = STACK_COMPONENTS;
        double best_cores = 0;

        if (!s || !s->known)
                return STACK_COMPONENTS;
        for (unsigned c = 0; c < STACK_INTERFERENCE; c++)
                if (s->component[c] > best_cores) {
                        best_cores = s->component[c];
                        best = (enum stack_component)c;
                }
        return best;
}
