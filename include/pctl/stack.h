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
        STACK_IMBALANCE,    /* threads finished or parked at the end while others run */
        STACK_RUNQUEUE,     /* runnable without a CPU: oversubscription, other load */
        STACK_IO,           /* other blocking */
        STACK_INTERFERENCE, /* what is left: cache, memory, SMT, frequency */
        STACK_COMPONENTS
};

struct stack {
        bool known;   /* false: too little data (every figure NaN) */
        double cores; /* N */
        unsigned threads;
        double speedup;
        double component[STACK_COMPONENTS]; /* cores; speedup + Σ component == cores */
};

/* Names as in JSON and `pctl status`: "sequential", "sync", ... */
const char *stack_component_name(enum stack_component c);

/* The stack of one app over the interval (or a sum of intervals: threadstate_app figures
 * add up). cores: CPUs granted (N); speedup: measured (the estimator's, or NaN to take
 * Σ run time / interval from the thread states). */
void stack_compute(const struct threadstate_app *app, double cores, double speedup,
                   struct stack *out);

/* The largest component but interference (what the app's own structure costs), or
 * STACK_COMPONENTS when the stack is unknown or every one is 0. */
enum stack_component stack_largest(const struct stack *s);
