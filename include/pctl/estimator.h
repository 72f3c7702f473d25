/* The online estimate of each managed app: I0/ΔI split, IPC, speedup, P (eq. 10 and the
 * least-squares fit), power share, frequency sensitivity, and predictions for a candidate
 * (cores, frequency). Pure: samples in, estimates out; no I/O, no globals.
 *
 * One estimator_update() per sensor interval for all apps at once, because the package
 * energy is split among them. A figure that cannot be computed is NaN and its bit in
 * `known` is clear: it is never invented. See docs/estimator.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "pctl/cpumask.h"
#include "pctl/model.h"
#include "pctl/powerfit.h"
#include "pctl/sensor.h"

/* The reference paper's measured ΔI/T for its synthetic benchmark on the i7 (mean 6.58e4/s,
 * section IV): system instructions per second of run time, system-wide, whatever the number
 * of cores. Used as eq. 14's α, with β = 0, when calibration has not measured the platform. */
#define ESTIMATOR_DEFAULT_DELTA_I_ALPHA 6.58e4

/* ΔI over an interval of t seconds on an app's CPUs, eq. 14 per interval (docs/estimator.md):
 *   ΔI = α·t + β·B,  B the busy core-seconds of its CPUs (N·t when N cores are busy)
 * α lands on its CPUs whatever their number (split among them by busy time), β is per busy
 * core. */
struct estimator_config {
        /* β: ΔI per busy core-second, instructions/s (calibration's fit). NaN or < 0: not
         * calibrated, and then α and β are the defaults (α = ESTIMATOR_DEFAULT_DELTA_I_ALPHA,
         * β = 0). */
        double delta_i_rate;
        /* α: ΔI per second on the app's CPUs, instructions/s. Used with a calibrated β; NaN
         * or < 0 there: 0. */
        double delta_i_alpha;
        /* ΔI per second on each of the app's CPUs, busy or idle (interrupts, kernel threads,
         * daemons spread over every CPU), instructions/s; 0 (or NaN, < 0): none. Calibration
         * does not fit it (docs/estimator.md, "ΔI"). */
        double delta_i_cpu_rate;
        /* Calibrated single-core IPC of I0; 0 for unknown. */
        double ipc1_calibrated;
        /* Package power model for idle/static attribution and for power without RAPL; may be
         * NULL. Copied by estimator_new. */
        const struct model_power *power;
        /* With no power model: learn one online from the sensor's package energy (RAPL),
         * for predictions (estimator_power_model). */
        bool fit_power;
        /* Half life of an observation's weight, in sample time (virtual for the model
         * machine). 0: the default (30 s). */
        double half_life_s;
        /* Phase change: a new point misfits when its speedup is further from the fit than
         * max(phase_sigmas * spread, phase_rel_floor * predicted); after phase_intervals
         * consecutive misfits the fit restarts from them. 0: the defaults (4, 0.05, 3). */
        double phase_sigmas;
        double phase_rel_floor;
        unsigned phase_intervals;
};

/* Bits of estimate.known: which figures hold a value. */
enum estimate_figure {
        ESTIMATE_I0 = 1u << 0,
        ESTIMATE_DELTA_I = 1u << 1,
        ESTIMATE_IPC = 1u << 2,
        ESTIMATE_IPC1 = 1u << 3,
        ESTIMATE_SPEEDUP = 1u << 4,
        ESTIMATE_P_EQ10 = 1u << 5,
        ESTIMATE_P_LS = 1u << 6,
        ESTIMATE_POWER = 1u << 7,
        ESTIMATE_ENERGY = 1u << 8,
        ESTIMATE_PERF_PER_W = 1u << 9,
        ESTIMATE_EPI = 1u << 10,
        ESTIMATE_EDP_RATE = 1u << 11,
        ESTIMATE_MEM_FRACTION = 1u << 12,
        ESTIMATE_IPS = 1u << 13,
        ESTIMATE_SPEEDUP_RUN = 1u << 14,
        ESTIMATE_P_RUN = 1u << 15,
        ESTIMATE_IPC_CORE_DROP = 1u << 16,
        ESTIMATE_STALLS = 1u << 17,
        ESTIMATE_RUN_I0 = 1u << 18,         /* run_i0: every interval of the run had I0 */
        ESTIMATE_WORK_INFLATION = 1u << 19, /* work_inflation holds a measured figure */
};

/* Core counts of one run whose work the whole-run figures keep apart, to divide each by the
 * work inflation at its N once that is known (docs/estimator.md, "Extra parallel work"). */
#define ESTIMATE_RUN_BINS 32

/* Where IPC_I0(1) of eq. 9 came from. In order of preference: one-core, one-core-scaled,
 * calibration, busiest-core. */
enum estimate_ipc1_source {
        ESTIMATE_IPC1_NONE = 0,
        ESTIMATE_IPC1_ONE_CORE, /* this app observed on one core at this frequency */
        /* The per-core IPC of the app's busiest core while on N cores: contention on N cores
         * lowers it as much as IPC_I0(N), so the speedup misses it. The last resort. */
        ESTIMATE_IPC1_BUSIEST_CORE,
        ESTIMATE_IPC1_CALIBRATION, /* the platform's calibrated single-core IPC (pbench's) */
        /* Observed on one core at another frequency, carried here by mem_fraction. */
        ESTIMATE_IPC1_ONE_CORE_SCALED,
};

enum estimate_speedup_source {
        ESTIMATE_SPEEDUP_NONE = 0,
        ESTIMATE_SPEEDUP_COUNTERS, /* eq. 9 from instructions and cycles */
        ESTIMATE_SPEEDUP_BUSY,     /* Σ busy / max busy over the app's CPUs */
};

/* How ΔI was obtained. */
enum estimate_delta_i_source {
        ESTIMATE_DELTA_I_NONE = 0,
        ESTIMATE_DELTA_I_TARGET, /* CPU-wide count minus the per-cgroup/process count */
        ESTIMATE_DELTA_I_RATE,   /* ΔI rate x busy time (calibrated or default) */
};

enum estimate_power_source {
        ESTIMATE_POWER_NONE = 0,
        ESTIMATE_POWER_MEASURED, /* the package energy split by unhalted cycles */
        ESTIMATE_POWER_MODEL,    /* the power model at the app's busy cores (no RAPL) */
};

struct estimate {
        uint64_t id;
        unsigned known; /* enum estimate_figure bits */
        unsigned n_cores;
        unsigned freq_khz;  /* of the last interval; 0 if unknown */
        uint64_t intervals; /* updates that reached this app, run_only ones not counted */

        /* Last interval. */
        double i0;      /* instructions of the app itself */
        double delta_i; /* instructions of system software on its CPUs (eq. 5) */
        enum estimate_delta_i_source delta_i_source;
        double ipc; /* IPC_I0(N) = I0 / C_max, eq. 7 */
        double ips; /* I0 per second of the interval */
        /* Stalled cycles of the app over the interval (SENSOR_STALLS), attributed as I0 is:
         * its target's own where the target counts them, else its CPU's while it alone holds
         * the CPU; unknown (NaN, bit clear) as soon as one of its CPUs cannot say. For the
         * online extrapolation (model/scaling.c, docs/extrapolation.md). */
        double stalls;
        double ipc1; /* IPC_I0(1) */
        enum estimate_ipc1_source ipc1_source;
        double speedup;
        enum estimate_speedup_source speedup_source;
        /* Contention made visible: 1 − the busiest core's IPC at the most cores seen over
         * its IPC at the fewest, at this frequency (decayed means). Near 0 without
         * contention; eq. 9 then needs no one-core probe. */
        double ipc_core_drop;
        /* The cores it kept running: its CPUs' busy time (else unhalted cycles at a known
         * frequency) over the interval; NaN when unknown or when another app time-shares one
         * of its CPUs. Above the speedup, its threads ran without progress (spinning while
         * they wait). */
        double busy_cores;

        /* Parallel fraction. */
        double p_eq10;         /* eq. 10 on the decayed mean speedup at the current N */
        double p_ls;           /* weighted least squares over every N observed */
        double p_stderr;       /* standard error of p_ls from the spread of the points */
        double p_rms_residual; /* of speedup, fit vs the per-N means */
        double p_points;       /* effective number of points behind p_ls (decayed) */
        unsigned p_n_cores;    /* distinct core counts behind p_ls */
        unsigned phase_changes;

        /* The whole run: every interval the app was seen in, start-up included, never
         * restarted by a phase change (docs/estimator.md, "The whole run"). An interval's
         * work w is its one-core seconds. */
        double run_s;        /* wall seconds of the intervals seen */
        double run_active_s; /* of which it held its CPUs: not kept off them by others */
        double run_work_s;   /* Σ w */
        double run_work_x_s; /* Σ w (1 − 1/N) */
        double run_busy_s;   /* Σ busy of the intervals seen in busy time: CPU time, no waiting */
        bool run_counters;   /* an interval of the run had the counters' speedup */
        unsigned run_max_cores;
        double speedup_run; /* run_work_s / run_active_s: the time-weighted speedup */
        double p_run; /* (run_work_s − run_active_s) / run_work_x_s: Amdahl's P for the run */
        /* Extra parallel work (docs/estimator.md, "Extra parallel work"). The work of each
         * core count as measured (run_bins; the sums before any correction in run_work_raw_s
         * and run_work_x_raw_s); with work_inflation known (ESTIMATE_WORK_INFLATION) the work
         * at N is divided by 1 + work_inflation (N − 1) in run_work_s, run_work_x_s,
         * speedup_run and p_run, and p_run_uncorrected keeps the figure before (NaN when no
         * correction applies, e.g. more core counts than ESTIMATE_RUN_BINS). */
        double run_work_raw_s;
        double run_work_x_raw_s;
        unsigned n_run_bins;
        bool run_bins_full;
        struct {
                unsigned cores;
                double work_s;
                double i0; /* the app's instructions at this core count (counters mode) */
        } run_bins[ESTIMATE_RUN_BINS];
        double work_inflation; /* extra instructions per useful one, per added core */
        double p_run_uncorrected;
        /* Instructions of the app over the run's intervals (counters mode), and Σ I0 (N − 1):
         * a whole run's total for comparing runs of the same work at other core counts
         * (ESTIMATE_RUN_I0; clear for good once an interval of the run had no I0). */
        double run_i0;
        double run_i0_m1;
        bool run_i0_gap;

        /* Power share (last interval) and the figures built on it. */
        double power_w;
        enum estimate_power_source power_source;
        bool power_declared; /* the power model came from pctl.conf [power] */
        double energy_j;     /* cumulative attributed energy */
        double perf_per_w;   /* eq. 11: instructions per joule */
        double epi;          /* eq. 12: joules per instruction */
        double edp_rate;     /* W / IPS^2, the steady-state EDP rate */

        /* Frequency sensitivity: share of single-core time at freq_ref_khz that does not
         * scale with frequency. */
        double mem_fraction;
        unsigned mem_freq_ref_khz;
};

/* Platform-level figures of the last interval: what was not attributed to any app. */
struct estimator_platform {
        bool energy_measured;
        double power_w;        /* all packages */
        double static_w;       /* from the power model; NaN without one */
        double idle_w;         /* idle cores, from the power model; NaN without one */
        double unattributed_w; /* dynamic power of CPUs held by no app */
        double energy_j;       /* cumulative, all packages */
        /* Without RAPL, the machine's power by the power model: static power, every busy core
         * at the top frequency an app runs at, and the idle share of the cores apps hold. NaN
         * when energy is measured or there is no model. */
        double model_w;
        double model_energy_j; /* cumulative model_w over the intervals */
};

/* The machine around the apps during an interval, as the manager knows it. */
struct estimator_machine {
        /* Per CPU of the sample, the frequency of its domain (0: unknown); NULL when none is
         * known. The online power fit needs it. */
        const unsigned *cpu_freq_khz;
        struct cpumask held;       /* CPUs managed apps hold, warming up or not */
        unsigned top_app_freq_khz; /* highest frequency a managed app runs at; 0: unknown */
        unsigned n_managed;        /* managed apps, warming up or not */
};

/* One app's view of an interval. */
struct estimator_app_view {
        uint64_t id;
        struct cpumask cpus; /* the CPUs the app held during the interval */
        unsigned freq_khz;   /* the frequency they ran at; 0 if unknown */
        int target;          /* index into the sample's per-target counts, or -1 */
        /* Count the interval toward the whole run only, not the phase's fit: the app's
         * start-up, which says little of its steady state but is part of its run. */
        bool run_only;
        /* When its per-target count began (its adoption): an interval that began earlier
         * counts toward the whole run from then only, not as waiting before it. 0: unknown. */
        uint64_t counted_since_ns;
};

struct estimator;

/* NULL on allocation failure or a config out of range (errno set to ENOMEM or EINVAL). */
struct estimator *estimator_new(const struct estimator_config *cfg);
void estimator_free(struct estimator *est);

/* -EEXIST if the id is already tracked, -ENOMEM. */
int estimator_app_add(struct estimator *est, uint64_t id);
/* -ENOENT if the id is not tracked. */
int estimator_app_remove(struct estimator *est, uint64_t id);

/* Feeds one interval for the apps in `apps` (others keep their estimate). Validates
 * everything first: -EINVAL for a bad sample (no interval, no CPUs), -ENOENT for an untracked
 * id, -ERANGE for a CPU or target the sample does not have, -EINVAL for two views of one id
 * or overlapping CPUs; nothing changes then. */
int estimator_update(struct estimator *est, const struct sensor_sample *s,
                     const struct estimator_app_view *apps, unsigned n_apps);

/* One sensor interval of the daemon: first the machine's power (the model's figure without
 * RAPL, the online fit with RAPL and no model), which goes on whatever the apps are; then,
 * while any app is managed, estimator_update for the apps in `apps`, whose result it
 * returns. */
int estimator_interval(struct estimator *est, const struct sensor_sample *s,
                       const struct estimator_machine *mach, const struct estimator_app_view *apps,
                       unsigned n_apps);
/* The power model predictions use: the configured one (declared or calibrated), else the one
 * fitted online once it has a point (*fitted true), else NULL. */
const struct model_power *estimator_power_model(const struct estimator *est, bool *fitted);
/* NULL if the id is not tracked. Valid until the next call that changes the estimator. */
const struct estimate *estimator_get(const struct estimator *est, uint64_t id);
const struct estimator_platform *estimator_platform(const struct estimator *est);

/* Returned (positive) by estimator_predict when the frequency differs from the one the app
 * was observed at and its frequency sensitivity is unknown: time was scaled as naive 1/f. */
#define ESTIMATOR_PREDICT_NAIVE_FREQ 1

/* Predicts one unit of work on `cores` cores at freq_khz (0: the frequency last observed).
 * The unit is 1e9 instructions of I0 when IPC is known, else one second of single-core busy
 * time at the observed frequency (Perf/W and EPI are then NaN). pm may be NULL (power
 * figures NaN). -ENOENT for an unknown id, -ENODATA while P is unknown, -EDOM for cores == 0
 * or a frequency scaling that needs an unknown reference frequency. */
int estimator_predict(const struct estimator *est, uint64_t id, unsigned cores, unsigned freq_khz,
                      const struct model_power *pm, struct model_prediction *out);

/* The range p_run can take when `unseen_s` more seconds of the run were not observed (before
 * the first interval, after the last), from all of it sequential to all of it parallel on
 * `cores` cores. -ENODATA while p_run is unknown, -EDOM for negative unseen_s or cores 0. */
int estimate_p_run_range(const struct estimate *e, double unseen_s, unsigned cores, double *lo,
                         double *hi);

/* The whole run's speedup and P completed with the part of the run the intervals did not see
 * (before the first, after the last: the exit's partial interval), from what the command used
 * there: unseen_s of wall time and unseen_cpu_s of CPU time on `cores` CPUs, as the one who
 * waited for it knows them (pctl run's wait4 less run_busy_s). In busy time that part is one
 * more interval, so the result is exact where the intervals are: no range is left. CPU time
 * beyond what `cores` give in unseen_s was missed by the seen intervals: it adds to the work,
 * not to the time, up to what `cores` give over the whole run. -ENODATA
 * while p_run is unknown or when the run had counters (their work is not CPU time), -EDOM for
 * negative or non-finite times or cores 0. */
int estimate_run_complete(const struct estimate *e, double unseen_s, double unseen_cpu_s,
                          unsigned cores, double *speedup_run, double *p_run);

/* One whole run of an app's work, as history keeps it: I0 over the run, the half-width of
 * its range (instructions of the time not seen), the instruction-weighted mean core count,
 * and where known the instructions at each core count (n_bins 0: only the mean is known, and
 * the run counts as all of it at that mean). */
struct estimate_work_run {
        double instructions;
        double instructions_err;
        double cores;
        unsigned n_bins;
        struct {
                double cores;
                double instructions;
        } bins[ESTIMATE_RUN_BINS];
};

/* Two runs of the same work must differ by this many (mean) cores to be compared. */
#define ESTIMATE_WORK_MIN_SPREAD 0.5

/* This run as an estimate_work_run: run_i0, plus unseen_s (time the app was managed but not
 * seen: before the first interval, after the last) at half the last interval's I0 rate and
 * core count, ± the other half. -ENODATA without run_i0 (busy-time mode, or an interval
 * without I0), -EDOM for negative unseen_s. */
int estimate_work_run(const struct estimate *e, double unseen_s, struct estimate_work_run *out);

/* Work inflation X from whole runs of the same work, I(N) = I_useful (1 + X (N − 1)) at each
 * core count N: the pair furthest apart in mean cores (at least ESTIMATE_WORK_MIN_SPREAD), the
 * later one on ties, gives the X at which both did the same useful work,
 * Σ_N I_a(N) / (1 + X (N − 1)) = Σ_N I_b(N) / (1 + X (N − 1)) (each run at its mean cores when
 * its bins are unknown: X = (r − 1) / (m_a − r m_b), r = I_a / I_b, m = cores − 1), and *err
 * the largest change of X over the runs' instruction ranges. *ia, *ib (may be NULL): the pair,
 * more cores first. -ENODATA without such a pair, -EINVAL for a run without positive finite
 * instructions, cores below 1 or a negative error, -EDOM when no X with positive factors
 * (up to 10 per core) fits. */
int estimate_work_inflation(const struct estimate_work_run *runs, unsigned n, double *x,
                            double *err, unsigned *ia, unsigned *ib);

/* Sets the app's measured work inflation (NaN: none) and corrects its whole-run figures by it.
 * -ENOENT for an unknown id, -EDOM for an inflation factor not positive at some core count
 * of the run (x <= −1 / (N − 1)). */
int estimator_set_work_inflation(struct estimator *est, uint64_t id, double x);

/* Names for the source enums, for status output. */
const char *estimate_ipc1_source_name(enum estimate_ipc1_source s);
const char *estimate_speedup_source_name(enum estimate_speedup_source s);
const char *estimate_delta_i_source_name(enum estimate_delta_i_source s);
const char *estimate_power_source_name(enum estimate_power_source s);
