/* Calibration: runs pbench (or, on the model machine, pbench-like Amdahl apps) over
 * programmed P x cores x frequency, samples each run with the best sensor backend, and
 * fits the platform facts the estimator needs (single-core IPC, ΔI rate, a power model per
 * frequency). The validation report compares each run with the paper's equations, as the
 * reference paper's Tables IV and V do. See docs/calibration.md.
 *
 * Drivers (calibrate.c: the real machine; calibrate_sim.c: the model machine) fill one
 * calibrate_run per (P, N, f, repeat) with what was measured; calibrate_fit (pure) turns
 * the runs into the profile and the report. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "pctl/cpumask.h"
#include "pctl/model.h"
#include "pctl/platform_file.h"

struct json_object;

#define CALIBRATE_MAX_P 16
#define CALIBRATE_MAX_CORES 4096

struct calibrate_progress {
        unsigned done, total; /* runs */
        double p;
        unsigned cores;
        unsigned freq_khz; /* 0: the current frequency (cpufreq unavailable) */
        double elapsed_s;
        double left_s; /* estimate; NaN before the first run ends */
};

struct calibrate_config {
        bool quick;
        struct cpumask cpus; /* empty: every CPU the process may use (real) / every CPU (sim) */
        unsigned n_freqs;    /* 0: every settable frequency */
        unsigned freqs_khz[MODEL_MAX_FREQS];
        unsigned repeat;          /* runs per (P, N, f); 0 = 1 */
        double t1_s;              /* single-core seconds of work per run; 0 = the default (1.5) */
        const char *pbench;       /* real machine: pbench's path */
        const char *sim_scenario; /* non-NULL: the model machine, from this scenario's [machine] */
        /* Set by a signal handler: the driver stops at once, restores, returns -EINTR. */
        volatile sig_atomic_t *stop;
        void (*progress)(const struct calibrate_progress *pr, void *user);
        void *progress_user;
};

/* What one run measured. NaN = not measured. */
struct calibrate_run {
        double p;          /* programmed */
        unsigned cores;    /* N */
        unsigned freq_khz; /* 0: current */
        double work_units; /* pbench work units (sim: I0 / 1e9) */
        double wall_s;     /* elapsed */
        double busy_sum_s; /* CPU time of the benchmark over all its threads/CPUs */
        double busy_max_s; /* of its busiest thread/CPU: the critical path */
        double cpu_busy_s; /* sensor: CPU-wide busy over the benchmark's CPUs */
        double instr;      /* sensor: instructions on its CPUs (I0 + ΔI) */
        double cycles_max; /* sensor: C_max, the largest unhalted-cycle count among them */
        /* The steady part of the run (intervals that ended while it still ran), for the
         * power fit: package energy of all packages, its length, CPU-wide busy time over
         * the benchmark's CPUs. */
        double energy_j;
        double interval_s;
        double power_busy_s;
};

/* One row of the per-(P, N) table (Table IV): means over repeats at the reference
 * frequency (the top one, or current). */
struct calibrate_row {
        double p;
        unsigned cores;
        double time_measured_s;  /* critical-path CPU time */
        double time_predicted_s; /* eq. 2 from the 1-core time */
        double time_error_pct;
        double speedup_measured;  /* from time: Σbusy / max busy */
        double speedup_predicted; /* eq. 3 */
        double speedup_error_pct;
        double speedup_counters; /* eq. 9; NaN without instructions and cycles */
        double p_eq10_time;      /* eq. 10 at this N (NaN for N = 1) */
        double p_eq10_counters;
};

/* One row per programmed P (Table V). */
struct calibrate_prow {
        double p;
        double p_eq10_time; /* eq. 10 at the largest N */
        double p_ls_time;   /* least squares over every N */
        double p_eq10_counters;
        double p_ls_counters;
        double p_estimated; /* the counters' P_LS when known, else time's */
        double error;       /* |p_estimated - p| */
};

struct calibrate_result {
        struct platform_profile profile;
        /* ΔI of eq. 14 as fitted (the profile holds them clamped at 0), their standard
         * errors, and the RMS of the fit's residuals in instructions per run. NaN when
         * instructions were not measured or the runs could not tell α from β. */
        double delta_i_alpha_fit, delta_i_beta_fit;
        double delta_i_alpha_se, delta_i_beta_se;
        double delta_i_rms;
        bool energy_measured;
        bool instr_measured;
        unsigned n_freqs;
        unsigned freqs_khz[MODEL_MAX_FREQS]; /* ascending; {0} = current only */
        char freq_note[384];                 /* why only the current frequency, when so */
        char recovery_note[384]; /* what a crashed calibrate had left and this one put back */
        unsigned n_runs;
        struct calibrate_run *runs;
        unsigned n_rows;
        struct calibrate_row *rows;
        unsigned n_prows;
        struct calibrate_prow prows[CALIBRATE_MAX_P];
};

/* The programmed P and the core counts for a machine of n_cpus (quick or full). */
unsigned calibrate_plan_p(bool quick, double *p, unsigned max);
unsigned calibrate_plan_cores(bool quick, unsigned n_cpus, unsigned *cores, unsigned max);

/* Real machine: pbench under the best sensor backend. -EINTR when stopped (nothing kept),
 * other -errno with err in words. */
/* Puts back the frequency settings a calibrate that died left in the state record under
 * dir (before this one records the "original" settings: else it would take the crashed run's
 * cap for them). Describes what it did in note ("" when nothing was left). 0, or -EBUSY when a
 * live calibrate holds the record, or another negative errno. */
int calibrate_recover(const char *dir, char *note, size_t note_size);

int calibrate_run_real(const struct calibrate_config *cfg, struct calibrate_result *out, char *err,
                       size_t err_size);
/* The model machine, in virtual time, through its sensor and actuator ops only. */
int calibrate_run_sim(const struct calibrate_config *cfg, struct calibrate_result *out, char *err,
                      size_t err_size);
/* The power model a quick calibration fits on the model machine of scenario: the model
 * calibrated beforehand that the model-only baseline gets, and pctl with `pctl sim run
 * --calibrated`. 1 with *out set; 0 when the fit found no power model (out untouched); or a
 * negative errno with err in words. */
int calibrate_sim_power(const char *scenario, struct model_power *out, char *err, size_t err_size);

/* Pure: fills profile figures (ipc1, ΔI's α and β, power, validation) and the tables from
 * res->runs. Identity fields of the profile are left as they are. */
int calibrate_fit(struct calibrate_result *res);

void calibrate_result_free(struct calibrate_result *res);

/* Reports. */
void calibrate_print_table(FILE *f, const struct calibrate_result *res);
int calibrate_write_csv(FILE *f, const struct calibrate_result *res);
/* The result as a new json-c object (NULL when out of memory); the caller puts it. */
struct json_object *calibrate_to_json(const struct calibrate_result *res);
/* Writes gnuplot scripts and PNGs next to validation.csv in dir. 0 done, -ENOENT when gnuplot
 * is not installed (msg says so), other -errno on failure; msg says what was written. */
int calibrate_plot(const char *dir, const struct calibrate_result *res, char *msg, size_t msg_size);
