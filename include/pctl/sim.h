/* The model machine: a simulated many-core platform in virtual time, with a hidden ground
 * truth. It is a sensor backend (sim_sensor_ops) and an actuator backend (sim_actuator_ops)
 * over one simulated topology; both take the machine in their config's `machine` field.
 * Nothing happens unless the caller steps the machine (sim_step).
 *
 * The manager (estimator, allocator, policies) may use only what a real machine would show:
 * the sensor, the actuator, sim_list_procs (its /proc) and sim_machine_info (its sysfs).
 * The sim_truth_* functions and sim_run_alone/sim_oracle_app are the ground truth, for
 * tests, reports and the oracle only: the manager must never call them. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pctl/actuator.h"
#include "pctl/sensor.h"
#include "pctl/stack.h"

struct sim_machine;

/* First bad line, and every bad line as "file:line: reason" lines in `all`. */
struct sim_error {
        char file[256];
        int lineno; /* 0: the file as a whole */
        char what[200];
        unsigned n_errors;
        char all[2048];
};

/* Loads a scenario (INI). Unknown sections and keys, bad numbers, unknown presets and
 * inconsistent measured rows are errors; *out is written only on success. */
int sim_load(const char *path, struct sim_machine **out, struct sim_error *err);
/* The same from text; `name` stands for the file name in messages. */
int sim_load_string(const char *text, const char *name, struct sim_machine **out,
                    struct sim_error *err);
void sim_free(struct sim_machine *m);

/* Advances virtual time by dt_ns: apps start, progress under their cpuset and frequency,
 * finish; counters and package energy accumulate. */
int sim_step(struct sim_machine *m, uint64_t dt_ns);
uint64_t sim_now_ns(const struct sim_machine *m);
/* Every app has finished. */
bool sim_done(const struct sim_machine *m);

/* What a real machine shows of itself (topology, P-states). */
struct sim_machine_info {
        const char *preset; /* "" when none */
        unsigned sockets, cores_per_socket, threads_per_core;
        unsigned n_cpus; /* sockets * cores_per_socket * threads_per_core */
        unsigned n_freqs;
        unsigned freqs_mhz[ACTUATOR_MAX_FREQS]; /* ascending; one frequency domain per package */
        unsigned n_apps;
};
void sim_machine_info(const struct sim_machine *m, struct sim_machine_info *out);

/* The machine's /proc: one fake process per app. */
#define SIM_PID_BASE 100000
enum sim_proc_state { SIM_PROC_PENDING, SIM_PROC_RUNNING, SIM_PROC_EXITED };
struct sim_proc {
        pid_t pid;     /* SIM_PID_BASE + app index */
        char comm[16]; /* the app's name, cut to 15 characters like the kernel's comm */
        enum sim_proc_state state;
};
/* Fills up to max entries; returns how many apps there are. */
unsigned sim_list_procs(const struct sim_machine *m, struct sim_proc *out, unsigned max);

/* What the app's own progress markers have counted (the model of include/pctl/progress.h):
 * units of work done so far, evenly over its useful instructions, extra work excluded. Not
 * ground truth: a real app that marks its progress shows pctld the same. -ENODATA when the
 * app has no markers (no progress_units), -ESRCH for no such app. */
int sim_progress_read(const struct sim_machine *m, unsigned app, uint64_t *units);

/* Ground truth: for tests and reports only, never for the manager. */
struct sim_app_truth {
        const char *name;
        bool started, finished;
        double p_true; /* time-weighted over the run; NaN when the rows cannot tell */
        double instructions_total;
        double start_s;    /* the virtual time it starts at */
        double time_s;     /* run time so far, from its start to now or to its finish */
        double energy_j;   /* what it caused (see docs/sim.md for the rule) */
        double pool_j;     /* of which its share of the static pool (uncore, idle CPUs) */
        unsigned cores;    /* CPUs in its cpuset now */
        unsigned freq_mhz; /* its frequency now (slowest domain among its CPUs) */
        /* Its speedup on its CPUs now against one CPU, alone at freq_mhz, memory bandwidth
         * included (the ground truth of eq. 9); NaN without CPUs. */
        double speedup_true;
        /* The whole run's P as the estimator's p_run defines it, Σ w ((1 - P) + P/N) = Σ t,
         * with w the true progress in one-core seconds at N = the CPUs of its cpuset; NaN
         * before any time at N >= 2. With extra_work, what the wall times of runs at 1 and N
         * CPUs give, lower than p_true. */
        double p_run_true;
        /* The scenario's extra_work (instructions retired per useful one, less 1, per added
         * thread); NaN for an app of measured rows. */
        double extra_work;
};
int sim_truth_app(const struct sim_machine *m, unsigned app, struct sim_app_truth *out);

/* Ground truth of an app's speedup stack (docs/sim.md, "Thread states and the speedup
 * stack"), from its hidden parameters, summed over its run: each figure times the seconds it
 * held. Read it twice and pass both to sim_truth_stack for the stack over the time between. */
struct sim_stack_acc {
        bool known;       /* false for measured-rows apps: their rows do not say why */
        unsigned threads; /* its software threads */
        double time_s;    /* run time */
        double cores_s;   /* CPUs held x seconds */
        double speedup_s; /* speedup x seconds: useful single-core work done */
        double component_s[STACK_COMPONENTS];
};
int sim_truth_stack_acc(const struct sim_machine *m, unsigned app, struct sim_stack_acc *out);
/* The average stack between two reads (to later than from); unknown over no run time. */
void sim_truth_stack(const struct sim_stack_acc *from, const struct sim_stack_acc *to,
                     struct stack *out);
/* Average power of one package over the last step, W. */
double sim_truth_package_power(const struct sim_machine *m, unsigned package);
/* Energy of all packages since the start, J (exact, before RAPL quantisation). */
double sim_truth_energy_j(const struct sim_machine *m);

/* The oracle's objectives; a lower score is better. */
enum sim_objective { SIM_OBJ_EDP, SIM_OBJ_PPW, SIM_OBJ_ENERGY, SIM_OBJ_PERF };
int sim_objective_parse(const char *s, enum sim_objective *out);
const char *sim_objective_name(enum sim_objective o);

struct sim_result {
        unsigned cores;
        unsigned freq_mhz;
        double time_s;
        double energy_j;
        double instructions; /* I0 */
        double p_true;
};
/* edp = E*T, ppw = -(instructions/J), energy = E, perf = T. */
double sim_objective_score(enum sim_objective o, const struct sim_result *r);

/* Ground truth: runs app alone on a fresh copy of the machine from time 0 on CPUs
 * 0..cores-1 at freq_mhz (one of freqs_mhz) until it finishes. */
int sim_run_alone(const struct sim_machine *m, unsigned app, unsigned cores, unsigned freq_mhz,
                  uint64_t step_ns, struct sim_result *out);
/* Ground truth: every static (cores, frequency) for app alone (for measured rows, the rows'
 * grid points); *best is the lowest score. all/n_all (may be NULL) get every candidate, in
 * (cores, freq) order, to be freed by the caller. */
int sim_oracle_app(const struct sim_machine *m, unsigned app, enum sim_objective o,
                   uint64_t step_ns, struct sim_result *best, struct sim_result **all,
                   unsigned *n_all);

/* Ground truth: the apps of the scenario running at once under a static partition, each on
 * its own CPUs, one frequency per package (docs/sim.md, "The partition oracle"). */
struct sim_partition {
        unsigned n_apps, n_packages;
        unsigned *cores;    /* [n_apps * n_packages]: app i's CPUs on package p */
        unsigned *freq_mhz; /* [n_packages] */
};
int sim_partition_alloc(struct sim_partition *p, unsigned n_apps, unsigned n_packages);
void sim_partition_free(struct sim_partition *p);

/* One measured run of a partition on a fresh copy of the machine, stepped at step_ns: app i
 * gets cores[i * n_packages + q] CPUs of package q (the lowest free ones). apps[n_apps] get
 * each app's result (cores: its total; freq_mhz: the slowest of its packages); *time_s is the
 * last app's end, *energy_j the packages' energy. */
int sim_partition_run(const struct sim_machine *m, const struct sim_partition *p, uint64_t step_ns,
                      struct sim_result *apps, double *time_s, double *energy_j);

enum sim_together_method {
        SIM_TOGETHER_AUTO,       /* exhaustive when at most SIM_TOGETHER_EXHAUSTIVE_MAX runs */
        SIM_TOGETHER_EXHAUSTIVE, /* every partition, each run on the machine */
        SIM_TOGETHER_DP,         /* dynamic programming on measured tables, then one run */
};
#define SIM_TOGETHER_EXHAUSTIVE_MAX 2000u
int sim_together_method_parse(const char *s, enum sim_together_method *out);
const char *sim_together_method_name(enum sim_together_method m);

struct sim_together {
        enum sim_together_method method; /* the one used (never AUTO) */
        struct sim_partition best;
        struct sim_result *apps; /* [n_apps], measured in the run of `best` */
        double score;            /* the objective summed over the apps, measured */
        double predicted;        /* DP: the score its evaluator predicted; NaN when exhaustive */
        double time_s, energy_j; /* the machine: until the last app ends, all packages */
        unsigned long runs;      /* partitions run on the machine */
        unsigned long evaluated; /* DP: partitions scored on the tables */
};
/* How many partitions an exhaustive search would run; counting stops past limit. */
unsigned long sim_together_count(const struct sim_machine *m, unsigned long limit);
/* The best static partition by the sum over apps of each app's objective. -ENOSPC: more apps
 * than CPUs; -E2BIG: exhaustive asked on a space over SIM_TOGETHER_EXHAUSTIVE_MAX * 10. */
int sim_oracle_together(const struct sim_machine *m, enum sim_objective o,
                        enum sim_together_method method, uint64_t step_ns,
                        struct sim_together *out);
void sim_together_free(struct sim_together *t);

extern const struct sensor_ops sim_sensor_ops;
extern const struct actuator_ops sim_actuator_ops;
/* The thread-state backend is threadstate_sim_ops (include/pctl/threadstate.h), opened with
 * the machine: it shows each app's threads as /proc and eBPF would, never the truth. */
