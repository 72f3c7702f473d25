/* Where each thread of an app spent an interval: running, waiting for a CPU, blocked in a
 * futex, yielding, blocked elsewhere, or gone. The input of the speedup stack
 * (include/pctl/stack.h). Backends: eBPF (tracepoints, accumulated in kernel), /proc
 * (schedstat + state sampled at the interval, coarser) and the model machine. One ops
 * table per backend, as for the counter sensors (include/pctl/sensor.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum thread_state {
        THREAD_RUN = 0,  /* on a CPU */
        THREAD_RUNQUEUE, /* runnable, waiting for a CPU */
        THREAD_SYNC,     /* blocked in futex (locks, condition variables, barriers, joins) */
        THREAD_YIELD,    /* in sched_yield (spinning politely) */
        THREAD_BLOCKED,  /* blocked elsewhere: I/O, sleep, poll */
        THREAD_EXITED,   /* the part of the interval after the thread exited */
        THREAD_STATES
};

/* One thread over one interval: ns[state] sums to the part of the interval the thread
 * existed for plus its THREAD_EXITED time (a thread born mid-interval has less). */
struct threadstate_thread {
        pid_t tid;
        uint64_t ns[THREAD_STATES];
        /* Part of ns[THREAD_RUN] + ns[THREAD_RUNQUEUE] during which this thread was the app's
         * only active thread while another thread of the app was alive (not exited, already
         * born) and waiting. Serial code runs alone on one thread; lock hand-offs spread this
         * time over the threads that contend: stack_compute tells them apart by it, and
         * takes the lowest TID for the thread serial code runs on (docs/stack.md). A backend
         * that cannot tell leaves it 0: serial parts then read as sync. */
        uint64_t solo_ns;
};

/* Concurrency histogram buckets: active_ns[k] is the time with exactly k threads of the app
 * running or runnable (k = THREADSTATE_MAX_ACTIVE holds k and above). */
#define THREADSTATE_MAX_ACTIVE 64

/* One app (every thread of process pid) over one interval. */
struct threadstate_app {
        pid_t pid;
        uint64_t interval_ns;
        unsigned n_threads; /* threads seen in the interval, exited ones included */
        struct threadstate_thread *threads;
        /* Time with k threads active; all zero and has_active false where the backend cannot
         * see overlaps. The /proc fallback fills it from its samples (each sample's count
         * held until the next one). */
        bool has_active;
        uint64_t active_ns[THREADSTATE_MAX_ACTIVE + 1];
        /* The backend could not watch this process this interval (the eBPF maps were full:
         * too many processes or threads): no threads, no figures, and not exited. Only it is
         * left out; the backend says so in a warning and tries again at the next set_pids. */
        bool unwatched;
};

struct threadstate_probe {
        bool available;
        int err; /* negative errno */
        char reason[256];
};

struct threadstate;

struct threadstate_ops {
        const char *name; /* "ebpf", "proc", "sim" */
        const char *description;
        const char *source; /* what `pctl stack --json` reports as "source" */
        int (*probe)(void *machine, struct threadstate_probe *out);
        int (*open)(struct threadstate *ts, void *machine);
        /* Replaces the watched processes. */
        int (*set_pids)(struct threadstate *ts, const pid_t *pids, unsigned n);
        /* Per watched pid, the interval since the previous read; apps[i].pid == pids[i].
         * apps[i].threads is NULL or the array the previous read left: the backend reallocs
         * it to n_threads. A thread that exits is reported in the interval it exits (its
         * remainder THREAD_EXITED), then no more. A process that has exited is reported with
         * its threads all THREAD_EXITED. */
        int (*read)(struct threadstate *ts, struct threadstate_app *apps, unsigned n);
        void (*close)(struct threadstate *ts);
        /* Optional, for backends that sample (proc): the mean time between samples. */
        int (*set_sample_period)(struct threadstate *ts, uint64_t period_ns);
};

struct threadstate {
        const struct threadstate_ops *ops;
        void *priv;
        unsigned n_pids; /* the layer's: what the last set_pids set */
};

/* Backends, best first, NULL-terminated: ebpf (where built: PCTL_HAVE_BPF), proc. "sim" is
 * chosen by name only (needs the machine). */
extern const struct threadstate_ops *const threadstate_backends[];
extern const struct threadstate_ops threadstate_proc_ops;
#ifdef PCTL_HAVE_BPF
extern const struct threadstate_ops threadstate_ebpf_ops;
#endif
extern const struct threadstate_ops threadstate_sim_ops;
const struct threadstate_ops *threadstate_find(const char *name);
/* The first available backend; *why says which and why the better ones were not. */
int threadstate_pick_auto(const struct threadstate_ops **out, char *why, size_t why_size);

int threadstate_open(const struct threadstate_ops *ops, void *machine, struct threadstate **out);
int threadstate_set_pids(struct threadstate *ts, const pid_t *pids, unsigned n);
/* n must be the number of pids set. apps[i].threads is NULL (zero the apps before the first
 * read) or the array a previous read left; the backend reallocs it. On error the apps' figures
 * are not to be used. */
int threadstate_read(struct threadstate *ts, struct threadstate_app *apps, unsigned n);
/* A sampling backend's mean time between samples (pctld samples less often than pctl stack:
 * it watches every app all the time). -EOPNOTSUPP for a backend that does not sample. */
int threadstate_set_sample_period(struct threadstate *ts, uint64_t period_ns);
void threadstate_app_free(struct threadstate_app *app);
/* Adds interval `a` to `sum` (zeroed at first; its threads are allocated here), thread by tid:
 * a thread that exited stays exited in the intervals after, as [SSM] counts Exit_i up to the
 * end. sum->pid is a's. */
int threadstate_app_add(struct threadstate_app *sum, const struct threadstate_app *a);
/* True when the process is gone: no thread, or every thread exited in the interval. */
bool threadstate_app_exited(const struct threadstate_app *app);
void threadstate_close(struct threadstate *ts);
