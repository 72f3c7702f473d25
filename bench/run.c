/* The run: N pinned threads repeat iterations of a sequential part (thread 0 alone) followed
 * by a parallel part (all threads). Waiting threads block in a barrier, so an idle core is idle
 * and CPU time measures the programmed P. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pbench.h"
#include "pctl/util.h"

enum start_verdict { VERDICT_PENDING, VERDICT_GO, VERDICT_ABORT };

struct run_shared {
        struct pbench_config *cfg;
        const atomic_int *stop;

        /* start-up: threads report when set up, then wait for main's verdict */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned ready;
        int setup_err;
        enum start_verdict verdict;

        pthread_barrier_t seq_done, par_done;
        pthread_spinlock_t spin;
        pthread_mutex_t sync_lock; /* --sync */

        /* The current iteration, written by thread 0 before seq_done, read by all after it. */
        bool done;
        uint64_t par_iters[PBENCH_MAX_THREADS];

        /* thread 0's plan cursor */
        unsigned iteration;
        unsigned phase;
        uint64_t phase_start_ns;
        uint64_t seq_total, par_total; /* fixed mode: W split into (1-P)·W and P·W */
};

struct run_thread {
        struct run_shared *sh;
        unsigned index;
        pthread_t tid;
        struct kernel_state ks;
        double busy_s;
        uint64_t work_iters;
        uint64_t mutex_wait_ns, sleep_ns, seq_wait_ns, par_wait_ns;
        uint64_t worked_ns; /* --sleep: wall time of the parallel chunks' work */
        /* thread 0 only */
        double wall_s, sequential_s, parallel_s;
        unsigned iterations;
};

static double thread_cpu_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Splits `total` into `parts` shares differing by at most one; share `i`. */
static uint64_t share(uint64_t total, uint64_t parts, uint64_t i)
{
        return total / parts + (i < total % parts ? 1 : 0);
}

double pbench_thread_weight(const struct pbench_config *cfg, unsigned t)
{
        if (cfg->threads < 2 || !(cfg->imbalance > 1))
                return 1.0;
        return 1.0 + (cfg->imbalance - 1.0) * t / (cfg->threads - 1);
}

static void plan_parallel(struct run_shared *sh, uint64_t par_iters)
{
        const struct pbench_config *cfg = sh->cfg;
        double weights = 0, cum = 0;
        uint64_t given = 0;

        if (!(cfg->imbalance > 1)) {
                for (unsigned t = 0; t < cfg->threads; t++)
                        sh->par_iters[t] = cfg->scaling == PBENCH_SCALING_GUSTAFSON
                                               ? par_iters
                                               : share(par_iters, cfg->threads, t);
                return;
        }
        for (unsigned t = 0; t < cfg->threads; t++)
                weights += pbench_thread_weight(cfg, t);
        for (unsigned t = 0; t < cfg->threads; t++) {
                double w = pbench_thread_weight(cfg, t);

                if (cfg->scaling == PBENCH_SCALING_GUSTAFSON) {
                        /* Every thread's mean share stays P*W. */
                        sh->par_iters[t] =
                            (uint64_t)llround((double)par_iters * w * cfg->threads / weights);
                        continue;
                }
                /* Amdahl: the shares add up to par_iters exactly. */
                cum += w;
                uint64_t upto = (uint64_t)llround((double)par_iters * cum / weights);

                sh->par_iters[t] = upto > given ? upto - given : 0;
                given = upto > given ? upto : given;
        }
}

/* Thread 0: decides the next iteration. Returns its sequential work, or sets sh->done. */
static uint64_t plan_next(struct run_shared *sh)
{
        struct pbench_config *cfg = sh->cfg;
        uint64_t seq_iters, now = now_ns();

        if (atomic_load(sh->stop)) {
                sh->done = true;
                return 0;
        }
        if (cfg->n_phases == 0) {
                if (sh->iteration >= cfg->iterations) {
                        sh->done = true;
                        return 0;
                }
                seq_iters = share(sh->seq_total, cfg->iterations, sh->iteration);
                plan_parallel(sh, share(sh->par_total, cfg->iterations, sh->iteration));
        } else {
                struct pbench_phase *ph = &cfg->phases[sh->phase];

                /* A phase ends at the first iteration boundary after its time is up. */
                while ((double)(now - sh->phase_start_ns) / 1e9 >= ph->seconds) {
                        ph->wall_s = (double)(now - sh->phase_start_ns) / 1e9;
                        sh->phase_start_ns = now;
                        if (++sh->phase >= cfg->n_phases) {
                                sh->done = true;
                                return 0;
                        }
                        ph = &cfg->phases[sh->phase];
                }
                seq_iters = (uint64_t)llround((1.0 - ph->p) * (double)cfg->phase_iter_iters);
                plan_parallel(sh, cfg->phase_iter_iters - seq_iters);
                ph->iterations++;
                ph->work_iters += seq_iters;
                for (unsigned t = 0; t < cfg->threads; t++)
                        ph->work_iters += sh->par_iters[t];
        }
        sh->iteration++;
        return seq_iters;
}

static void sleep_ns(uint64_t ns)
{
        struct timespec ts = {.tv_sec = (time_t)(ns / NSEC_PER_SEC),
                              .tv_nsec = (long)(ns % NSEC_PER_SEC)};

        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
                ;
}

/* One thread's parallel part in chunks of at most a tenth of a unit: with --sync, the first F
 * of each chunk holding the shared mutex; with --sleep, a nanosleep after each chunk so that
 * the thread has slept F/(1-F) of its working time, F of its time. */
static void parallel_run(struct run_thread *rt, uint64_t iters, pthread_spinlock_t *spin)
{
        struct run_shared *sh = rt->sh;
        const struct pbench_config *cfg = sh->cfg;

        if (!(cfg->sync > 0) && !(cfg->sleep > 0)) {
                kernel_run(&rt->ks, iters, spin, sh->stop);
                return;
        }
        while (iters > 0 && !atomic_load_explicit(sh->stop, memory_order_relaxed)) {
                uint64_t n = iters < PBENCH_DELIMITER_CHUNK ? iters : PBENCH_DELIMITER_CHUNK;
                uint64_t locked = (uint64_t)llround(cfg->sync * (double)n);
                uint64_t t0 = now_ns(), waited = 0;

                if (locked > 0) {
                        pthread_mutex_lock(&sh->sync_lock);
                        waited = now_ns() - t0;
                        kernel_run(&rt->ks, locked, spin, sh->stop);
                        pthread_mutex_unlock(&sh->sync_lock);
                }
                kernel_run(&rt->ks, n - locked, spin, sh->stop);
                if (cfg->sleep > 0) {
                        uint64_t t1 = now_ns();
                        double owed;

                        /* A sleep overshoots by the timer slack and the wake-up latency: sleep
                         * what is owed so far, so the fraction holds over the run. */
                        rt->worked_ns += t1 - t0 - waited;
                        owed = (double)rt->worked_ns * cfg->sleep / (1.0 - cfg->sleep) -
                               (double)rt->sleep_ns;
                        if (owed > 0) {
                                sleep_ns((uint64_t)owed);
                                rt->sleep_ns += now_ns() - t1;
                        }
                }
                rt->mutex_wait_ns += waited;
                iters -= n;
        }
}

static void run_loop(struct run_thread *rt)
{
        struct run_shared *sh = rt->sh;
        pthread_spinlock_t *lock = sh->cfg->kernel == PBENCH_KERNEL_SPIN ? &sh->spin : NULL;
        uint64_t start_ns = now_ns(), wait_ns;

        for (;;) {
                if (rt->index == 0) {
                        uint64_t seq_iters = plan_next(sh);

                        if (!sh->done) {
                                uint64_t t0 = now_ns();

                                kernel_run(&rt->ks, seq_iters, NULL, sh->stop);
                                rt->sequential_s += (double)(now_ns() - t0) / 1e9;
                                rt->work_iters += seq_iters;
                        }
                }
                wait_ns = now_ns();
                pthread_barrier_wait(&sh->seq_done);
                if (sh->done)
                        break;
                uint64_t t1 = now_ns();
                rt->seq_wait_ns += t1 - wait_ns;
                parallel_run(rt, sh->par_iters[rt->index], lock);
                rt->work_iters += sh->par_iters[rt->index];
                wait_ns = now_ns();
                pthread_barrier_wait(&sh->par_done);
                rt->par_wait_ns += now_ns() - wait_ns;
                if (rt->index == 0) {
                        rt->parallel_s += (double)(now_ns() - t1) / 1e9;
                        rt->iterations++;
                }
        }
        if (rt->index == 0)
                rt->wall_s = (double)(now_ns() - start_ns) / 1e9;
}

static void *run_thread_main(void *arg)
{
        struct run_thread *rt = arg;
        struct run_shared *sh = rt->sh;
        bool lent = rt->index == 0 && sh->cfg->thread0_state;
        enum start_verdict verdict;
        double busy_start_s;
        int r = 0;

        if (lent)
                rt->ks = *sh->cfg->thread0_state;
        else
                r = kernel_state_init(&rt->ks, sh->cfg->kernel, sh->cfg->mem_array_bytes);

        pthread_mutex_lock(&sh->lock);
        if (r < 0 && sh->setup_err == 0)
                sh->setup_err = r;
        sh->ready++;
        pthread_cond_broadcast(&sh->cond);
        while (sh->verdict == VERDICT_PENDING)
                pthread_cond_wait(&sh->cond, &sh->lock);
        verdict = sh->verdict;
        pthread_mutex_unlock(&sh->lock);

        if (verdict == VERDICT_GO) {
                busy_start_s = thread_cpu_s();
                if (rt->index == 0)
                        sh->phase_start_ns = now_ns();
                run_loop(rt);
                rt->busy_s = thread_cpu_s() - busy_start_s;
        }
        if (!lent)
                kernel_state_free(&rt->ks);
        return NULL;
}

static int thread_start(struct run_thread *rt, int cpu)
{
        pthread_attr_t attr;
        cpu_set_t set;
        int r;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        r = pthread_attr_init(&attr);
        if (r)
                return -r;
        /* Pinned from its first instruction: its set-up (the mem kernel's first touch) happens
         * on its own CPU. */
        r = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
        if (r == 0)
                r = pthread_create(&rt->tid, &attr, run_thread_main, rt);
        pthread_attr_destroy(&attr);
        /* EINVAL: the CPU left our cpuset after we read it — a manager such as pctld moved us
         * while we started. Run where we are allowed now: the manager owns placement anyway. */
        if (r == EINVAL)
                r = pthread_create(&rt->tid, NULL, run_thread_main, rt);
        return -r;
}

int pbench_run(struct pbench_config *cfg, const atomic_int *stop, struct pbench_result *out)
{
        struct run_shared *sh;
        struct run_thread *rts;
        unsigned created = 0;
        int r = 0;

        if (cfg->threads == 0 || cfg->threads > PBENCH_MAX_THREADS)
                return -EINVAL;
        sh = calloc(1, sizeof(*sh));
        rts = calloc(cfg->threads, sizeof(*rts));
        if (!sh || !rts) {
                free(sh);
                free(rts);
                return -ENOMEM;
        }
        sh->cfg = cfg;
        sh->stop = stop;
        if (cfg->n_phases == 0) {
                sh->seq_total = (uint64_t)llround((1.0 - cfg->p) * (double)cfg->work_iters);
                sh->par_total = cfg->work_iters - sh->seq_total;
        }
        pthread_mutex_init(&sh->lock, NULL);
        pthread_cond_init(&sh->cond, NULL);
        pthread_barrier_init(&sh->seq_done, NULL, cfg->threads);
        pthread_barrier_init(&sh->par_done, NULL, cfg->threads);
        pthread_spin_init(&sh->spin, PTHREAD_PROCESS_PRIVATE);
        pthread_mutex_init(&sh->sync_lock, NULL);

        for (; created < cfg->threads; created++) {
                rts[created] = (struct run_thread){.sh = sh, .index = created};
                r = thread_start(&rts[created], cfg->thread_cpu[created]);
                if (r < 0)
                        break;
        }

        /* Start only when every thread exists and is set up; else all of them leave. */
        pthread_mutex_lock(&sh->lock);
        while (sh->ready < created)
                pthread_cond_wait(&sh->cond, &sh->lock);
        if (r == 0)
                r = sh->setup_err;
        sh->verdict = r == 0 ? VERDICT_GO : VERDICT_ABORT;
        pthread_cond_broadcast(&sh->cond);
        pthread_mutex_unlock(&sh->lock);

        for (unsigned i = 0; i < created; i++)
                pthread_join(rts[i].tid, NULL);

        if (r == 0 && atomic_load(stop))
                r = -EINTR;
        if (r == 0) {
                *out = (struct pbench_result){
                    .wall_s = rts[0].wall_s,
                    .sequential_s = rts[0].sequential_s,
                    .parallel_s = rts[0].parallel_s,
                    .iterations = rts[0].iterations,
                };
                for (unsigned i = 0; i < cfg->threads; i++) {
                        out->thread_busy_s[i] = rts[i].busy_s;
                        out->thread_mutex_wait_s[i] = (double)rts[i].mutex_wait_ns / 1e9;
                        out->thread_sleep_s[i] = (double)rts[i].sleep_ns / 1e9;
                        out->thread_seq_wait_s[i] = (double)rts[i].seq_wait_ns / 1e9;
                        out->thread_par_wait_s[i] = (double)rts[i].par_wait_ns / 1e9;
                        out->work_iters += rts[i].work_iters;
                        kernel_sink(&rts[i].ks);
                }
        }

        pthread_mutex_destroy(&sh->sync_lock);
        pthread_spin_destroy(&sh->spin);
        pthread_barrier_destroy(&sh->par_done);
        pthread_barrier_destroy(&sh->seq_done);
        pthread_cond_destroy(&sh->cond);
        pthread_mutex_destroy(&sh->lock);
        free(rts);
        free(sh);
        return r;
}
