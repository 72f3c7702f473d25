/* Which frequency each domain should run at, and what to do when setting it fails: the
 * manager's bookkeeping of the actuator's frequency domains (pure: time is an argument).
 *
 * A domain pctld changed is given back (the actuator's restore_freq) as soon as no app runs on
 * it, not only when pctld stops. A failing write is classified by its errno
 * (freq_fault_of): transient ones are retried with a back-off that doubles from 1 s to 64 s;
 * a value the domain refuses for good is not asked for again (another value is); a domain
 * that cannot be written at all is left alone. A failure is logged once, again only when the
 * errno changes or FREQ_RELOG_NS has passed, and the recovery once. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define FREQ_BACKOFF_FIRST_NS 1000000000ull /* 1 s */
#define FREQ_BACKOFF_MAX_NS 64000000000ull  /* 64 s */
#define FREQ_RELOG_NS 600000000000ull       /* 10 min */

enum freq_fault {
        FREQ_FAULT_TRANSIENT, /* retried, with back-off */
        FREQ_FAULT_VALUE,     /* that frequency never works on that domain; others may */
        FREQ_FAULT_DOMAIN,    /* the domain cannot be written at all: left alone */
};

/* The class of a failed frequency write's -errno (the actuator's set_freq/restore_freq). */
enum freq_fault freq_fault_of(int err);

enum freq_action {
        FREQ_NOTHING,
        FREQ_SET,     /* set_freq(want) */
        FREQ_RESTORE, /* restore_freq: no app on it any more */
};

/* What the caller should log about an outcome. */
enum freq_log {
        FREQ_LOG_NONE,
        FREQ_LOG_SET,       /* set (info, as every change) */
        FREQ_LOG_RESTORED,  /* given back */
        FREQ_LOG_FAILED,    /* failed: the first time, a new errno, or FREQ_RELOG_NS later */
        FREQ_LOG_GAVE_UP,   /* a domain fault: never touched again */
        FREQ_LOG_RECOVERED, /* worked after failures (how many: failures_before) */
};

struct freqdomain {
        bool changed;             /* pctld set it and has not given it back */
        bool given_up;            /* a domain fault: left alone */
        unsigned refused_khz;     /* a value fault's frequency: not asked for again */
        unsigned failures;        /* consecutive failed attempts */
        unsigned failures_before; /* after a success: how many failures it ended */
        uint64_t retry_ns;        /* no attempt before this time */
        int logged_err;           /* the -errno last logged, 0 when none */
        uint64_t logged_ns;       /* when */
};

/* What to do with a domain now. want_khz 0: no app runs on it. cur_khz: what it runs at as
 * the actuator says (0 unknown). */
enum freq_action freqdomain_next(const struct freqdomain *d, unsigned want_khz, unsigned cur_khz,
                                 uint64_t now_ns);
/* Notes the outcome (err 0 or -errno) of action a for want_khz, at now_ns; says what to log. */
enum freq_log freqdomain_done(struct freqdomain *d, enum freq_action a, unsigned want_khz, int err,
                              uint64_t now_ns);
