/* pbench internals: the kernels (one unit = 1e6 inner-loop iterations), the run plan, and the
 * threads that carry it out. Only bench/ includes this. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pctl/cpumask.h"

#define PBENCH_ITERS_PER_UNIT 1000000ULL
#define PBENCH_MAX_THREADS 1024
#define PBENCH_MAX_PHASES 64
/* Default length of one sequential+parallel iteration, in seconds of one core. */
#define PBENCH_ITERATION_S 0.05
/* --sync and --sleep work in chunks of a tenth of a unit (~1 ms): the last lock holder of a
 * parallel part then finishes little after the others, so the lock's cost shows as mutex
 * waits rather than as waits at the end of the part. */
#define PBENCH_DELIMITER_CHUNK (PBENCH_ITERS_PER_UNIT / 10)

enum pbench_kernel { PBENCH_KERNEL_SQRT, PBENCH_KERNEL_MEM, PBENCH_KERNEL_SPIN };
enum pbench_scaling { PBENCH_SCALING_AMDAHL, PBENCH_SCALING_GUSTAFSON };

const char *pbench_kernel_name(enum pbench_kernel k);
int pbench_kernel_from_name(const char *name, enum pbench_kernel *out);
const char *pbench_scaling_name(enum pbench_scaling s);
int pbench_scaling_from_name(const char *name, enum pbench_scaling *out);

/* One thread's kernel state: its accumulator and, for mem, its own array. */
struct kernel_state {
        enum pbench_kernel kernel;
        double acc;
        uint64_t *array;
        size_t array_words;
        size_t pos;
};

/* Bytes of the per-thread array of the mem kernel: 4x the largest cache the kernel reports
 * (64 MiB if unknown), kept under a quarter of available memory over all threads. */
size_t kernel_mem_array_bytes(unsigned threads);

/* Allocates and touches what the kernel needs, so that page faults are not timed. */
int kernel_state_init(struct kernel_state *ks, enum pbench_kernel kernel, size_t array_bytes);
void kernel_state_free(struct kernel_state *ks);

/* Runs `iters` inner-loop iterations in chunks of at most one unit. With `lock`, each chunk is
 * done holding it (the spin kernel's contention). Returns early once *stop is set. */
void kernel_run(struct kernel_state *ks, uint64_t iters, pthread_spinlock_t *lock,
                const atomic_int *stop);

/* Units per second of CPU time on the calling thread's core: a short timing of the kernel. */
int kernel_calibrate(struct kernel_state *ks, double *units_per_s);

/* Keeps results observable so that the compiler cannot drop the work. */
void kernel_sink(const struct kernel_state *ks);

struct pbench_phase {
        double p;
        double seconds;
        /* results */
        double wall_s;
        unsigned iterations;
        uint64_t work_iters;
};

struct pbench_config {
        double p;
        unsigned threads;
        int thread_cpu[PBENCH_MAX_THREADS]; /* CPU each thread is pinned to */
        enum pbench_scaling scaling;
        enum pbench_kernel kernel;
        uint64_t work_iters;       /* the base work W (fixed mode) */
        unsigned iterations;       /* fixed mode: how many sequential+parallel iterations */
        uint64_t phase_iter_iters; /* phase mode: W of one iteration */
        struct pbench_phase phases[PBENCH_MAX_PHASES];
        unsigned n_phases; /* 0: fixed work; else the run is timed phases */
        size_t mem_array_bytes;
        /* Optional: thread 0 uses this state (already set up on its CPU) instead of its own. */
        struct kernel_state *thread0_state;
        /* Scaling delimiters, for the speedup stack's ground truth (docs/stack.md). */
        double sync;      /* fraction of each parallel chunk done holding one shared mutex */
        double imbalance; /* thread N-1's parallel share over thread 0's (>= 1), linear */
        double sleep;     /* fraction of each parallel thread's time in nanosleep, [0, 1) */
};

struct pbench_result {
        double wall_s;
        double sequential_s;
        double parallel_s;
        uint64_t work_iters; /* executed, over all threads */
        unsigned iterations;
        double thread_busy_s[PBENCH_MAX_THREADS];
        /* Each thread's own timing of its waits (wall seconds): for the mutex of --sync, in
         * the nanosleep of --sleep, in the barrier before the parallel part (while thread 0
         * runs the sequential part) and in the one after it (for the slowest thread). */
        double thread_mutex_wait_s[PBENCH_MAX_THREADS];
        double thread_sleep_s[PBENCH_MAX_THREADS];
        double thread_seq_wait_s[PBENCH_MAX_THREADS];
        double thread_par_wait_s[PBENCH_MAX_THREADS];
};

/* Thread t's weight in the parallel part under --imbalance R: 1 + (R - 1) t / (N - 1). */
double pbench_thread_weight(const struct pbench_config *cfg, unsigned t);

/* Runs the plan on cfg->threads pinned threads. Phase results are written into cfg->phases.
 * -EINTR when *stop was set before the end; -errno when a thread could not be set up. */
int pbench_run(struct pbench_config *cfg, const atomic_int *stop, struct pbench_result *out);
