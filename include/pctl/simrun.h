/* `pctl sim run --policy`: the manager (estimator, allocator, policies) driving the model
 * machine in virtual time, exactly as pctld would drive a real one. The result reports the
 * machine's ground truth next to the manager's estimates, as a yardstick. */
#pragma once

#include <stdbool.h>

#include "pctl/estimator.h"
#include "pctl/model.h"
#include "pctl/policy.h"
#include "pctl/stack.h"

struct simrun_options {
        const char *scenario;
        const char *policy;                /* a policy of `policies`, or a bare objective */
        const struct policy_set *policies; /* may be NULL: built-ins only */
        unsigned interval_ms;              /* default 100 */
        unsigned decision_ms;              /* default 1000 */
        bool have_power;                   /* a calibrated or declared power model */
        /* The allocator decides without the apps' speedup stacks (a benchmark's baseline);
         * the stacks are still computed and reported. */
        bool no_stack_hints;
        /* The policy's search is the model-only baseline (search = model), whatever the
         * policy says: the model's best once P is settled, nothing measured against it. */
        bool model_only;
        struct model_power power;
        double delta_i_rate;  /* NaN: the estimator's default */
        double ipc1;          /* 0: unknown */
        double max_virtual_s; /* stop after this much virtual time; 0: 1e6 s */
        bool log;             /* keep the manager's log: each decision (debug) and change */
        /* pctl history on the model machine: read at the start (returning apps start at
         * their best), written as each app ends. NULL: none. */
        const char *history_path;
        /* Stop after this much virtual time and report the run so far (apps that have not
         * finished: their time and energy until then), where max_virtual_s fails; 0: run to
         * the end. What pctl saw over a run's first seconds, to compare two runs by. */
        double stop_at_s;
};

struct simrun_app {
        char name[32];
        unsigned cores;    /* at the end (or when it finished) */
        unsigned freq_mhz; /* likewise */
        /* Its speedup stack over its last setting (cores and frequency), computed by
         * stack_compute from the machine's thread states (threadstate_sim_ops) and the
         * measured speedup (with ipc1, a single-core reference), and the machine's ground truth
         * over the same time. */
        struct stack stack;
        struct stack stack_true;
        unsigned stack_intervals; /* sensor intervals the two cover */
        double time_s;
        double energy_j;
        /* Where the estimator's last speedup came from, and eq. 9's IPC_I0(1) (NONE: none). */
        enum estimate_speedup_source speedup_source;
        enum estimate_ipc1_source ipc1_source;
        double p_true;
        double p_est;        /* NaN when the estimator never settled on one */
        double speedup_true; /* at its final setting, alone, memory bandwidth included */
        double speedup_est;  /* the estimator's last speedup (eq. 9); NaN when none */
        bool from_history;   /* started at a past run's best configuration */
        /* Its run report as pctld gives it when the app leaves (manager_report), NaN when
         * unknown: the whole run's P (corrected for extra work where that is measured), the
         * figure before the correction, the work inflation per added core and its error;
         * beside them the truth: the whole run's P from its true progress and the scenario's
         * extra_work. */
        double p_run;
        double p_run_uncorrected;
        double work_inflation;
        double work_inflation_error;
        double p_run_true;
        double extra_work_true;
};

struct simrun_result {
        unsigned n_apps;
        struct simrun_app *apps;
        double time_s;   /* until the last app finished */
        double energy_j; /* all packages, over that time */
        unsigned long decisions, changes;
};

/* Runs the scenario to completion. err says what went wrong. */
int simrun_policy(const struct simrun_options *opt, struct simrun_result *out, char *err,
                  size_t err_size);
void simrun_result_free(struct simrun_result *r);
