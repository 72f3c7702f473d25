/* The speedup stack from per-thread states (docs/stack.md). Everything is core-time over the
 * interval: N cores × T is what the app was granted; the speedup is the part it used for work,
 * and each component is the part a delimiter kept idle. Dividing by T gives cores. */
#include "pctl/stack.h"

#include <math.h>
#include <string.h>

/* Below this the states are a handful of scheduler ticks: not a stack. */
#define STACK_MIN_INTERVAL_NS 1000000ULL

static const char *const component_names[STACK_COMPONENTS] = {
    [STACK_SEQUENTIAL] = "sequential",
    [STACK_SYNC] = "sync",
    [STACK_YIELD] = "yield",
    [STACK_IMBALANCE] = "imbalance",
    [STACK_RUNQUEUE] = "runqueue",
    [STACK_IO] = "io",
    [STACK_INTERFERENCE] = "interference",
    [STACK_MEMORY] = "memory",
    [STACK_UNEXPLAINED] = "unexplained",
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

/* A thread's own time: what it did itself (ran, waited for a CPU, yielded, slept), as
 * against waiting in a futex for the others. */
static double thread_own_ns(const struct threadstate_thread *t)
{
        return (double)t->ns[THREAD_RUN] + (double)t->ns[THREAD_RUNQUEUE] +
               (double)t->ns[THREAD_YIELD] + (double)t->ns[THREAD_BLOCKED];
}

static double thread_active_share(const struct threadstate_thread *t)
{
        double own = thread_own_ns(t);

        return own > 0 ? ((double)t->ns[THREAD_RUN] + (double)t->ns[THREAD_RUNQUEUE]) / own : 0;
}

/* How the threads' futex waits split (docs/stack.md, "How each component is computed"): the first
 * thread's serial part (its solo time that is not a lock's), the waits at the end of parallel parts
 * for the busiest thread (imbalance), and the rest (sync). */
struct wait_split {
        double serial;    /* the first thread's serial part, ns */
        double imbalance; /* futex waits that were end-of-part waits, ns */
        double others_sync, others_yield, others_io; /* the other threads' waits after that */
};

/* Threads that were there at the end of the interval: working, alive in it, and not gone
 * (much) earlier than the others. A thread that exited before the others did its end-of-part
 * waiting as exited time (imbalance already, [SSM]'s Exit_i): its futex waits came before
 * and are sync; and the others did not wait for it. */
static bool thread_at_end(const struct threadstate_thread *t, double min_exited, double T)
{
        return thread_working(t) && thread_alive_ns(t) > 0 &&
               (double)t->ns[THREAD_EXITED] <= min_exited + T / 100;
}

static void split_waits(const struct threadstate_app *app, double T, unsigned alive_threads,
                        pid_t first_tid, struct wait_split *w)
{
        const struct threadstate_thread *th = app->threads;
        double min_exited = INFINITY, raw_b = -1, second_nf = -INFINITY, solo_o = 0;
        double top = -INFINITY, next = -INFINITY, g = 1, any_solo = 0;
        int f = -1, b = -1, busiest = -1;
        unsigned at_end = 0;

        *w = (struct wait_split){0};
        for (unsigned i = 0; i < app->n_threads; i++)
                if (thread_working(&th[i]) && thread_alive_ns(&th[i]) > 0) {
                        min_exited = fmin(min_exited, (double)th[i].ns[THREAD_EXITED]);
                        if (th[i].tid == first_tid && f < 0)
                                f = (int)i;
                }
        /* The busiest other thread at the end (b) and the next one (second_nf). */
        for (unsigned i = 0; i < app->n_threads; i++) {
                double raw = thread_own_ns(&th[i]);

                if ((int)i == f || !thread_at_end(&th[i], min_exited, T))
                        continue;
                if (raw > raw_b) {
                        second_nf = b >= 0 ? raw_b : second_nf;
                        raw_b = raw;
                        b = (int)i;
                } else if (raw > second_nf) {
                        second_nf = raw;
                }
        }
        for (unsigned i = 0; i < app->n_threads; i++) {
                any_solo += (double)th[i].solo_ns;
                if ((int)i != f && (int)i != b && thread_working(&th[i]))
                        solo_o = fmax(solo_o, (double)th[i].solo_ns);
        }

        /* The serial part: the first thread's solo time beyond the others'. A laggard runs
         * alone at the end of each part for as long as it outlasts the next busiest thread
         * (end × its active share): that part of its solo time is not a lock's, and does not
         * cancel the first thread's. With two threads the first one may be that next
         * busiest, and then the mutual rest is either a lock both hold in turn or serial code
         * plus a longer laggard: it counts as the latter to the extent the laggard's excess
         * (a) exceeds the mutual part (m) — none of it for equal own times, all of it from
         * a >= 2m. */
        if (f >= 0 && alive_threads > 1) {
                double solo_f = (double)th[f].solo_ns, raw_f = thread_own_ns(&th[f]);
                double x = 0, a = 0, e = 0;

                if (b >= 0) {
                        a = fmax(0, raw_b - fmax(second_nf, raw_f));
                        x = fmax(0, (double)th[b].solo_ns - a * thread_active_share(&th[b]));
                }
                if (b >= 0 && raw_f >= second_nf) {
                        double m = fmax(0, fmin(solo_f, x) - solo_o);

                        e = fmin(m, fmax(0, a - m));
                        if (isfinite(second_nf))
                                e = fmin(e, raw_f - second_nf);
                }
                w->serial = fmin(fmax(0, solo_f - fmax(solo_o, x)) + e, raw_f);
                /* Where that would make the first thread the one the laggard outlasts last,
                 * the laggard's lead over it comes from the serial part alone: the mutual
                 * solo time is then a lock's (sampled solo time is noisy), and the serial
                 * part is at most the first thread's excess over the laggard (and e). */
                if (b >= 0 && raw_f - w->serial < raw_b && raw_f - w->serial > second_nf)
                        w->serial = fmin(w->serial, fmax(0, raw_f - raw_b) + e);
        }

        /* Imbalance: each thread at the end falls short of the busiest one's own time, and
         * waited that long in a futex at the end of the parts ([SS]: Tp less its other
         * components), at most its futex time. Symmetric lock contention has no shortfall
         * and stays sync. The evidence is the busiest thread's solo time: it ran alone at the
         * end for as long as it outlasted the next one; without it (a backend that cannot see
         * solo time) the waits stay sync. */
        for (unsigned i = 0; i < app->n_threads; i++) {
                double own;

                if (!thread_at_end(&th[i], min_exited, T))
                        continue;
                at_end++;
                own = thread_own_ns(&th[i]) - ((int)i == f ? w->serial : 0);
                if (own > top) {
                        next = top;
                        top = own;
                        busiest = (int)i;
                } else if (own > next) {
                        next = own;
                }
        }
        if (at_end >= 2) {
                double end = top - next;

                if (end > 0) {
                        double expect = end * thread_active_share(&th[busiest]);
                        double solo = (double)th[busiest].solo_ns - (busiest == f ? w->serial : 0);

                        g = expect > 0 ? fmin(1, fmax(0, solo) / expect) : 1;
                } else {
                        g = any_solo > 0 ? 1 : 0;
                }
        }
        for (unsigned i = 0; i < app->n_threads; i++) {
                const struct threadstate_thread *t = &th[i];
                double sync = (double)t->ns[THREAD_SYNC], imb = 0;

                if (!thread_working(t))
                        continue;
                if (at_end >= 2 && (int)i != busiest && thread_at_end(t, min_exited, T)) {
                        double own = thread_own_ns(t) - ((int)i == f ? w->serial : 0);

                        imb = g * fmin(fmax(0, top - own), sync);
                }
                w->imbalance += imb;
                if ((int)i == f)
                        continue;
                w->others_sync += sync - imb;
                w->others_yield += (double)t->ns[THREAD_YIELD];
                w->others_io += (double)t->ns[THREAD_BLOCKED];
        }
}

void stack_compute(const struct threadstate_app *app, double cores, double speedup,
                   struct stack *out)
{
        double T, NT, run = 0, rq = 0, sync = 0, yld = 0, io = 0, exited = 0, alive = 0;
        double lack, imbalance, sequential, idle, sum, comp[STACK_COMPONENTS] = {0};
        unsigned working = 0, alive_threads = 0;
        pid_t first_tid = 0;
        struct wait_split w;

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
        /* The core time no thread of the app ran: what the thread states can explain. */
        idle = NT > run ? NT - run : 0;

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

        /* End-of-part waits for the busiest thread are imbalance; then, while the first
         * thread ran its serial part, the others (at most N - 1 cores' worth) waited for it:
         * barriers and joins are futex waits, so sync first, then yield, then other
         * blocking. */
        split_waits(app, T, alive_threads, first_tid, &w);
        sync -= w.imbalance;
        imbalance += w.imbalance;
        if (w.serial > 0 && alive_threads > 1) {
                double waiters = (alive_threads - 1 < cores - 1) ? alive_threads - 1 : cores - 1;
                double want = waiters * w.serial, moved, from;

                if (want > w.others_sync + w.others_yield + w.others_io)
                        want = w.others_sync + w.others_yield + w.others_io;
                moved = want;
                from = want < w.others_sync ? want : w.others_sync;
                sync -= from;
                want -= from;
                from = want < w.others_yield ? want : w.others_yield;
                yld -= from;
                want -= from;
                io -= want;
                sequential += moved;
        }
        if (sync < 0)
                sync = 0;
        if (yld < 0)
                yld = 0;
        if (io < 0)
                io = 0;

        comp[STACK_SEQUENTIAL] = sequential;
        comp[STACK_SYNC] = sync;
        comp[STACK_YIELD] = yld;
        comp[STACK_IMBALANCE] = imbalance;
        comp[STACK_RUNQUEUE] = rq;
        comp[STACK_IO] = io;
        sum = 0;
        for (unsigned c = 0; c < STACK_INTERFERENCE; c++)
                sum += comp[c];

        /* The waits explain idle cores. Where they claim more than there were (more threads
         * than cores waiting at once), they share the idle time in proportion, so that each
         * stays a part of it. */
        if (sum > idle) {
                double scale = sum > 0 ? idle / sum : 0;

                for (unsigned c = 0; c < STACK_INTERFERENCE; c++)
                        comp[c] *= scale;
                sum = idle;
        }
        /* Interference is measured, not a residual ([SS] accounts it per cycle): the run time
         * that did not make the speedup. With the run time as the speedup (no counters) it is
         * 0: busy time cannot see it. */
        comp[STACK_INTERFERENCE] = run > speedup * T ? run - speedup * T : 0;
        /* What nothing explains is its own entry, so that N - Σ of the others, the papers'
         * estimated speedup, can be judged against a measured one. */
        comp[STACK_UNEXPLAINED] = NT - speedup * T - sum - comp[STACK_INTERFERENCE];

        out->known = true;
        out->cores = cores;
        out->threads = app->n_threads;
        out->speedup = speedup;
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                out->component[c] = comp[c] / T;
        /* Thread states cannot tell memory from the rest: stack_split_memory may. */
        out->component[STACK_MEMORY] = NAN;
        out->memory_known = false;
}

double stack_speedup_estimated(const struct stack *s)
{
        if (!s || !s->known)
                return NAN;
        /* speedup + Σ every component = N, so N - Σ all but unexplained is this. */
        return s->speedup + s->component[STACK_UNEXPLAINED];
}

bool stack_has(const struct stack *s, enum stack_component c)
{
        return s && s->known && (unsigned)c < STACK_COMPONENTS &&
               (c != STACK_MEMORY || s->memory_known);
}

void stack_split_memory(struct stack *s, double mem_share, double mem_share_alone)
{
        double busy, interference, mem;

        if (!s || !s->known)
                return;
        /* A stack split before is split again from the whole residual. */
        if (s->memory_known && isfinite(s->component[STACK_MEMORY]))
                s->component[STACK_INTERFERENCE] += s->component[STACK_MEMORY];
        s->memory_known = false;
        s->component[STACK_MEMORY] = NAN;
        if (!(mem_share >= 0 && mem_share <= 1))
                return;
        if (!(mem_share_alone >= 0 && mem_share_alone <= 1))
                mem_share_alone = mem_share;
        interference = s->component[STACK_INTERFERENCE];
        if (!isfinite(interference) || !isfinite(s->speedup))
                return;
        /* The cores that ran: the work done (speedup) and what ran without doing it alone's
         * work (interference). Of their time, mem_share was memory; the work done would have
         * needed mem_share_alone of its own. */
        busy = s->speedup + interference;
        mem = mem_share * busy - mem_share_alone * s->speedup;
        mem = fmin(fmax(mem, 0.0), interference);
        s->component[STACK_MEMORY] = mem;
        s->component[STACK_INTERFERENCE] = interference - mem;
        s->memory_known = true;
}

double stack_mem_share_at(double mem_fraction, unsigned freq_ref_khz, unsigned freq_khz)
{
        double x;

        if (!(mem_fraction >= 0 && mem_fraction <= 1) || !freq_ref_khz || !freq_khz)
                return NAN;
        /* Time per instruction: (1 - m) f_ref / f of compute and m of memory (in units of the
         * time at f_ref); memory's share of it at f. */
        x = (1 - mem_fraction) * (double)freq_ref_khz / (double)freq_khz + mem_fraction;
        return x > 0 ? mem_fraction / x : NAN;
}

enum stack_component stack_largest(const struct stack *s)
{
        enum stack_component best = STACK_COMPONENTS;
        double best_cores = 0;

        if (!s || !s->known)
                return STACK_COMPONENTS;
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                if (c != STACK_INTERFERENCE && c != STACK_UNEXPLAINED &&
                    stack_has(s, (enum stack_component)c) && s->component[c] > best_cores) {
                        best_cores = s->component[c];
                        best = (enum stack_component)c;
                }
        return best;
}
