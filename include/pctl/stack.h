/* The speedup stack (Eyerman, Du Bois and Eeckhout, ISPASS 2012; and the software-only
 * variant for managed languages): N cores granted = achieved speedup + one component per
 * scaling delimiter, each a number of cores. Pure: thread states and the measured speedup
 * in, components out. See docs/stack.md. */
#pragma once

#include <stdbool.h>

#include "pctl/threadstate.h"

enum stack_component {
        STACK_SEQUENTIAL = 0, /* one thread active, the others blocked or not yet there */
        STACK_SYNC,           /* futex waits while other threads run */
        STACK_YIELD,
        STACK_IMBALANCE, /* threads finished or parked at the end while others run */
        STACK_RUNQUEUE,  /* runnable without a CPU: oversubscription, other load */
        STACK_IO,        /* other blocking */
        /* Cores that ran without doing the work alone's rate would have: the threads' run
         * time less the measured speedup (cache, SMT, frequency, extra work; and memory,
         * unsplit). 0 where the speedup is the run time itself (no counters). */
        STACK_INTERFERENCE,
        /* The part of the interference that memory explains: the clock-insensitive time the
         * app's cores spent beyond what its work takes alone (stack_split_memory). */
        STACK_MEMORY,
        /* What no component explains: N - speedup - every other component. Positive where
         * cores stood idle with no thread state to say why, negative where the components
         * claim more than the cores the speedup leaves (a speedup above the run time). */
        STACK_UNEXPLAINED,
        STACK_COMPONENTS
};

struct stack {
        bool known;   /* false: too little data (every figure NaN) */
        double cores; /* N */
        unsigned threads;
        double speedup;
        /* cores; speedup + Σ component == cores (unexplained included), memory counted only
         * where known */
        double component[STACK_COMPONENTS];
        /* Memory is split out of interference (stack_split_memory); false: it is not
         * (component[STACK_MEMORY] NaN, or 0 in a zeroed stack), interference holds it. */
        bool memory_known;
};

/* Names as in JSON and `pctl status`: "sequential", "sync", ... */
const char *stack_component_name(enum stack_component c);

/* The stack of one app over the interval (or a sum of intervals: threadstate_app figures
 * add up). cores: CPUs granted (N); speedup: measured (the estimator's, or NaN to take
 * Σ run time / interval from the thread states). */
void stack_compute(const struct threadstate_app *app, double cores, double speedup,
                   struct stack *out);

/* Whether component c of s is a figure: the stack is known, and for memory, split out. */
bool stack_has(const struct stack *s, enum stack_component c);

/* The papers' estimated speedup, N - Σ of the measured components (every one but
 * unexplained): what the components alone say the app achieved ([SS] eq. 4), to be judged
 * against a speedup measured apart (a run on one core). NaN when the stack is unknown. */
double stack_speedup_estimated(const struct stack *s);

/* Splits memory out of the interference residual (docs/stack.md, "Memory"). mem_share: the
 * share of the app's run time on its N cores, at the clock of the stack, that does not
 * scale with the clock (its frequency sensitivity there); mem_share_alone: the same for its
 * work alone on one core at that clock, NaN when unknown (then taken as mem_share: the
 * contention left the split of its time as it was). The cores running (speedup +
 * interference) spent mem_share of their time on memory; the work done needed
 * mem_share_alone of its single-core time: memory is the difference, within [0,
 * interference]; interference keeps the rest. mem_share unknown (NaN, outside [0, 1]) or
 * the stack unknown: no split (memory unknown, interference as it was). A stack split before
 * is split again from its whole residual (interference + memory). */
void stack_split_memory(struct stack *s, double mem_share, double mem_share_alone);

/* The share of run time at freq_khz that does not scale with the clock, from the
 * estimator's mem_fraction (that share at freq_ref_khz; 1/IPC = compute + memory x f,
 * docs/estimator.md). NaN when either is unknown. */
double stack_mem_share_at(double mem_fraction, unsigned freq_ref_khz, unsigned freq_khz);

/* The largest component but interference and unexplained (what the app's own structure and
 * its memory cost), or STACK_COMPONENTS when the stack is unknown or every one is 0. */
enum stack_component stack_largest(const struct stack *s);
