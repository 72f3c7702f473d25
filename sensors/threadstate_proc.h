/* The /proc thread-state backend's pieces, apart so that tests can drive them against a fake
 * tree with their own clock (sensors/threadstate_proc.c; not a public contract). */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "pctl/threadstate.h"

/* Mean time between two samples; each is jittered by ±50% so that a program's own period
 * cannot alias with it. */
#define THREADSTATE_PROC_PERIOD_NS 4000000ULL

struct threadstate_proc_thread {
        pid_t tid;
        bool exited;
        char state;       /* at the last sample */
        uint64_t born_ns; /* first seen, or when watching began */
        uint64_t exit_ns;
        uint64_t base_run_ns, base_rq_ns; /* schedstat at the last report */
        uint64_t run_ns, rq_ns;           /* schedstat at the last sample */
        /* Sampled since the last report: each sample's state stands for the time since the
         * previous sample. */
        uint64_t sync_ns, blocked_ns, solo_ns;
};

/* One watched process. */
struct threadstate_proc_watch {
        pid_t pid;
        bool dead;          /* /proc/PID is gone */
        bool dead_reported; /* and a report said so */
        int err;            /* the first sampling error the next report returns (-errno) */
        uint64_t report_ns; /* the last report, or when watching began */
        uint64_t sample_ns; /* the last sample */
        unsigned n_threads, cap_threads;
        struct threadstate_proc_thread *threads;
        uint64_t active_ns[THREADSTATE_MAX_ACTIVE + 1];
};

/* -ESRCH: no such process; -EACCES/-EPERM: its /proc/PID/syscall cannot be read (needs the
 * right to ptrace it, in practice root). */
int threadstate_proc_watch_init(struct threadstate_proc_watch *w, pid_t pid, uint64_t now_ns);
/* One sample of every thread's state at now_ns. */
int threadstate_proc_watch_sample(struct threadstate_proc_watch *w, uint64_t now_ns);
/* The interval since the last report, ending at now_ns (sample at now_ns first). out->threads
 * is realloced. */
int threadstate_proc_watch_report(struct threadstate_proc_watch *w, uint64_t now_ns,
                                  struct threadstate_app *out);
void threadstate_proc_watch_free(struct threadstate_proc_watch *w);

/* Parsers of the three files, each read whole. */
/* /proc/TID/stat: the state letter after the ")" that ends the command name. */
int threadstate_proc_parse_stat(const char *text, char *state);
/* /proc/TID/schedstat: "RUN_NS RUNQUEUE_NS TIMESLICES". */
int threadstate_proc_parse_schedstat(const char *text, uint64_t *run_ns, uint64_t *rq_ns);
/* /proc/TID/syscall: "NR ARGS... SP PC" -> NR; "running" -> -EAGAIN; "-1 SP PC" (blocked
 * outside a system call) -> *nr = -1. */
int threadstate_proc_parse_syscall(const char *text, long *nr);
