/* Inside the model machine: the parsed scenario and the running state. Only sim/ sees this. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "pctl/sim.h"
#include "pctl/stack.h"
#include "pctl/threadstate.h"

#define SIM_NAME_MAX 64
/* RAPL energy status unit: 1/2^14 J (61 us), the default on Intel client and server parts. */
#define SIM_RAPL_UNITS_PER_J 16384.0
#define SIM_GAUSS_N 4096
/* Per thread: seconds in each state, then its solo time (threadstate_thread.solo_ns). */
#define SIM_TS_SOLO THREAD_STATES
#define SIM_TS_STRIDE (THREAD_STATES + 1)

struct sim_phase {
        double at_s; /* run-time offset from which it applies */
        double p;
        double ipc; /* 0: unchanged */
};

struct sim_row {
        unsigned cores;
        unsigned freq_mhz;
        double time_s;
        double energy_j;
        int lineno;
};

struct sim_app_spec {
        char name[SIM_NAME_MAX];
        int lineno; /* of its first key: inih shows a section only with its keys */
        unsigned seen;
        double start_s;
        double instructions;
        double p;
        double ipc;
        double mem_fraction;
        double mem_bytes_per_instr; /* memory traffic; 0: none (fits in cache) */
        double spin;
        double sync;      /* share of each parallel thread's work inside one shared lock */
        double imbalance; /* the last parallel thread's work over the first's, >= 1 */
        double sleep;     /* share of each parallel thread's time blocked in nanosleep */
        /* Work inflation: on k lanes the app retires (1 + extra_work (k - 1)) instructions per
         * useful one, each taking busy time as a useful one does. */
        double extra_work;
        /* Units of work the app's progress markers count over its whole run, evenly over its
         * useful instructions; 0: it has none. */
        double progress_units;
        unsigned threads; /* 0: as many as the machine has CPUs */
        unsigned n_phases;
        struct sim_phase *phases;
        unsigned n_rows;
        struct sim_row *rows;
        /* The rows as a full grid, built at load: t/e[ci * n_gf + fi]. */
        unsigned n_gc, n_gf;
        unsigned *gc;
        unsigned *gf;
        double *gt;
        double *ge;
        double rows_p; /* eq. 10 between the grid's fewest and most cores at its top frequency */
};

struct sim_machine_spec {
        char preset[32];
        unsigned sockets, cores_per_socket, threads_per_core;
        unsigned n_freqs;
        unsigned freqs_mhz[ACTUATOR_MAX_FREQS];
        double volts[ACTUATOR_MAX_FREQS];
        double uncore_w; /* per package */
        double core_idle_w, core_static_w, core_dyn_w;
        /* System work (eq. 5's ΔI, eq. 14's form): instructions per busy CPU-second
         * (scheduler ticks, the kernel on the app's behalf) and per CPU-second on every
         * online CPU, busy or idle (interrupts, kernel threads, daemons). Counted on the
         * CPU, never in an app's own (per-target) counts: it is not the app's work. */
        double os_ips;
        double os_ips_cpu;
        double mem_bandwidth_gbs; /* per package; 0: unlimited */
        double counter_noise;
        uint64_t seed;
};

struct sim_scenario {
        struct sim_machine_spec mach;
        unsigned n_apps;
        struct sim_app_spec *apps;
};

struct sim_acc {
        double busy_ns, instr, cycles, ref_cycles;
};

struct sim_app_state {
        const struct sim_app_spec *spec;
        double start_s;
        unsigned n_set;
        unsigned *set; /* its CPUs, ascending */
        bool started, finished;
        double done;  /* instructions (Amdahl) or fraction of the run (rows) */
        double run_s; /* time since start while not finished */
        double energy_j;
        double pool_j;       /* the part of energy_j that is its share of the static pool */
        double p_weighted_s; /* sum of P * seconds, for the time-weighted P */
        /* The whole run's P from the true progress (sim_app_truth.p_run_true): one-core
         * seconds of work done, seconds, and work x (1 - 1/N). */
        double run_w_s, run_a_s, run_wx_s;
        /* This step (scratch). */
        double active_s;
        double b_first_s, b_other_s; /* busy seconds on its first CPU and on each of the next */
        double i_first, i_other;     /* I0 retired on them */
        unsigned k;                  /* CPUs in use: first + (k - 1) others */
        double dyn_rows_j;           /* rows apps: their dynamic energy this step */
        double share;                /* of each of its CPUs, when apps overlap */
        double mem_stretch;          /* >= 1: its packages' memory bandwidth slows it this step */
        double f_mhz;                /* the slowest frequency among its CPUs this step */
        /* The speedup stack's ground truth, summed over its run (sim_truth_stack_acc). */
        struct sim_stack_acc truth;
        /* Its threads' states, kept only once a thread-state reader is attached
         * (sim_track_threads): cumulative seconds per thread and state, seconds with k
         * threads active, and the shape (fractions of run time) for the last (k, P). */
        unsigned n_threads;
        double *ts_s; /* [n_threads * THREAD_STATES] */
        double ts_active_s[THREADSTATE_MAX_ACTIVE + 1];
        bool shape_ok;
        unsigned shape_k, shape_n;
        double shape_p;
        double *shape; /* [n_threads * THREAD_STATES] */
        double shape_active[THREADSTATE_MAX_ACTIVE + 1];
};

struct sim_machine {
        struct sim_scenario *sc;
        bool owns_sc;
        unsigned n_cpus, n_packages;
        unsigned *cpu_pkg;
        unsigned *pkg_freq; /* index into freqs_mhz, per package */
        uint64_t now_ns;
        unsigned n_apps;
        struct sim_app_state *apps;
        struct sim_acc *cpu;     /* [n_cpus] totals since start */
        struct sim_acc *app_cpu; /* [n_apps * n_cpus] totals since start */
        double *pkg_energy_j;    /* truth */
        double *pkg_mem_bytes;   /* memory traffic served by each package since time 0 */
        double *pkg_power_w;     /* over the last step */
        uint32_t *rapl_start;    /* the raw counter's value at time 0 */
        double unattributed_j;
        uint64_t rng[4];
        /* Per-CPU scratch for one step. */
        double *s_busy, *s_held, *s_held_sum;
        unsigned *s_users;
        double *s_fhz;
        double *gauss; /* [SIM_GAUSS_N] standard normal draws */
        uint64_t gauss_bits;
        unsigned gauss_bits_left;
        bool track_threads; /* a thread-state reader is attached */
};

/* scenario.c */
int sim_scenario_load(const char *path, const char *text, const char *name,
                      struct sim_scenario **out, struct sim_error *err);
void sim_scenario_free(struct sim_scenario *sc);
/* Interpolated time and energy of a rows app at (cores, freq). */
void sim_rows_at(const struct sim_app_spec *a, double cores, double freq_mhz, double *time_s,
                 double *energy_j);

/* sim.c */
int sim_machine_new(struct sim_scenario *sc, bool owns_sc, int only_app, struct sim_machine **out);
/* A machine for ground truth only (the oracles): no sensor will read it, so it skips the
 * noise table and the RAPL start values, which cost milliseconds per machine. */
int sim_machine_new_truth(struct sim_scenario *sc, int only_app, struct sim_machine **out);
int sim_set_cpus(struct sim_machine *m, unsigned app, const struct cpumask *cpus);
void sim_get_cpus(const struct sim_machine *m, unsigned app, struct cpumask *out);
int sim_set_freq(struct sim_machine *m, unsigned package, unsigned freq_mhz);
unsigned sim_freq_mhz(const struct sim_machine *m, unsigned package);
/* The raw 32-bit RAPL package counter, as a reader of MSR_PKG_ENERGY_STATUS sees it. */
uint32_t sim_rapl_raw(const struct sim_machine *m, unsigned package);
/* A standard normal draw from the machine's seeded generator. */
double sim_gauss(struct sim_machine *m);

/* Compute cycles per instruction of an Amdahl app in its current phase: its busy cycles
 * beyond that share of the instructions it retired are stalls (memory time, the bandwidth
 * limit's stretch, spinning). NaN for an app of measured rows (nothing is said). */
double sim_app_compute_cpi(const struct sim_app_state *a);

/* Keep every app's thread states from now on (the thread-state backend, sim_threadstate.c). */
int sim_track_threads(struct sim_machine *m);

/* Dynamic power of one busy CPU at P-state index fi (C*V^2*f relative to the top P-state), as
 * the machine charges it; the partition oracle prices CPUs of one app at two clocks with it. */
double sim_dyn_w_at(const struct sim_machine *m, unsigned fi);
