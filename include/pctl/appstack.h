/* pctld's speedup stack of each managed app: the thread-state sensor (the best available
 * backend) read every sampling interval, summed over a window of 3 seconds, and the
 * stack computed from it (include/pctl/stack.h, docs/stack.md). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "pctl/stack.h"
#include "pctl/threadstate.h"

/* Intervals are summed until they cover this much: with pbench --sync 0.8 under pctld, one
 * second of 20 ms samples (50) read imbalance or sequential as often as sync; 3 s of 10 ms
 * samples read sync each time. */
#define APPSTACK_WINDOW_NS (3000 * 1000 * 1000ULL)

/* pctld watches every app all the time: the /proc fallback samples every 10 ms on average
 * there. At pctl stack's 4 ms its sampler took 1.3-2.2% of a CPU for a 3-thread pbench here
 * (measured, docs/stack.md); 10 ms takes about 40% of that (extrapolated). */
#define APPSTACK_SAMPLE_PERIOD_NS (10 * 1000 * 1000ULL)

struct appstacks;

/* What the manager knows of an app for its stack: its cores (N), the speedup the
 * estimator measured over the interval (NaN when it has none) and the share of its run time
 * that does not scale with the clock, at its clock (the estimator's frequency sensitivity,
 * stack_mem_share_at; NaN when unknown): with both over a whole window, memory is split out
 * of interference (stack_split_memory). */
struct appstack_view {
        pid_t pid;
        unsigned cores;
        double speedup;
        double mem_share;
};

/* Opens ops (NULL: the best available) with machine (the model machine, or NULL); why says
 * which backend and why, or why none. */
int appstacks_open(const struct threadstate_ops *ops, void *machine, struct appstacks **out,
                   char *why, size_t why_size);
void appstacks_close(struct appstacks *s);
/* The apps to watch; an app kept keeps its window and last stack. */
int appstacks_set_pids(struct appstacks *s, const pid_t *pids, unsigned n);
/* One interval of every watched app (views in any order, by pid). */
int appstacks_read(struct appstacks *s, const struct appstack_view *views, unsigned n);
/* The last complete window's stack of pid; NULL when it has none yet. */
const struct stack *appstacks_get(const struct appstacks *s, pid_t pid);
/* The backend's source ("ebpf", "proc", "sim"). */
const char *appstacks_source(const struct appstacks *s);
