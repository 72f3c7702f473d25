/* One sample interface over every source of counters: LIKWID, perf_event, software busy
 * time, recorded traces and the model machine. A backend is one ops table; the generic
 * layer (sensors/sensor.c) owns the struct sensor and the sample buffers. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pctl/cpumask.h"

/* Which metrics a count holds; anything not flagged was not measured and must not be used. */
enum sensor_metric {
        SENSOR_INSTR = 1u << 0,      /* INSTR_RETIRED_ANY */
        SENSOR_CYCLES = 1u << 1,     /* CPU_CLK_UNHALTED_CORE */
        SENSOR_REF_CYCLES = 1u << 2, /* CPU_CLK_UNHALTED_REF (TSC rate while unhalted) */
        SENSOR_BUSY = 1u << 3,       /* time the CPU ran tasks, ns */
        SENSOR_FREQ = 1u << 4,       /* freq_khz: cycles / ref-cycles × the TSC rate */
        SENSOR_STALLS = 1u << 5,     /* stalls: STALLS_TOTAL or RESOURCE_STALLS.ANY */
};

/* Deltas over one interval. */
struct sensor_counts {
        uint64_t instr;
        uint64_t cycles;
        uint64_t ref_cycles;
        uint64_t busy_ns;
        /* Unhalted cycles in which the core was stalled (no uop executed, or allocation
         * blocked for want of a backend resource), for the scalability extrapolation
         * (docs/extrapolation.md); SENSOR_STALLS says whether it was counted. */
        uint64_t stalls;
        /* The frequency the CPU actually ran at while unhalted over the interval, derived from
         * cycles and ref-cycles counted in one group; 0 and no SENSOR_FREQ bit where there are
         * no such counters (never a nominal or requested figure). */
        unsigned freq_khz;
        unsigned measured; /* enum sensor_metric bits */
};

#define SENSOR_MAX_PACKAGES 64

struct sensor_sample {
        uint64_t timestamp_ns; /* end of the interval, on the backend's clock (virtual for sim) */
        uint64_t interval_ns;
        unsigned n_cpus;
        struct sensor_counts *cpu; /* [n_cpus]; CPUs not monitored have measured == 0 */
        unsigned n_packages;
        bool energy_measured;
        double energy_j[SENSOR_MAX_PACKAGES]; /* package energy over the interval, joules */
        /* Memory traffic of each package over the interval (bytes read and written at its
         * memory controllers: uncore IMC CAS counts x 64, LIKWID's MEM group); mem_measured
         * false where the backend has no such counter (never an estimate). */
        bool mem_measured;
        double mem_bytes[SENSOR_MAX_PACKAGES];
        unsigned n_targets;
        /* Per target (cgroup or process), per CPU: [n_targets * n_cpus], target-major. */
        struct sensor_counts *target_cpu;
};

int sensor_sample_alloc(struct sensor_sample *s, unsigned n_cpus, unsigned n_targets);
void sensor_sample_free(struct sensor_sample *s);
static inline struct sensor_counts *sensor_target_cpu(const struct sensor_sample *s,
                                                      unsigned target, unsigned cpu)
{
        return &s->target_cpu[(size_t)target * s->n_cpus + cpu];
}

enum sensor_target_kind { SENSOR_TARGET_CGROUP, SENSOR_TARGET_PID };

struct sensor_target {
        enum sensor_target_kind kind;
        pid_t pid;         /* SENSOR_TARGET_PID: every thread of the process */
        char cgroup[4096]; /* SENSOR_TARGET_CGROUP: an absolute path under the cgroup mount */
};

struct sensor_config {
        struct cpumask cpus; /* CPUs to sample; empty = every online CPU */
        const char *source;  /* replay: the trace file */
        void *machine;       /* sim: the struct sim_machine * */
};

/* Why a backend can or cannot run here: err is the negative errno, reason says what to do. */
struct sensor_probe {
        bool available;
        int err;
        char reason[256];
        /* Whether an open backend would measure each package's memory traffic (mem_bytes),
         * and where from or why not ("" from a backend that never does). */
        bool mem_traffic;
        char mem_reason[256];
};

struct sensor;

struct sensor_ops {
        const char *name;
        const char *description;
        /* Never exits, hangs or prints: the answer is in *out. cfg may carry source/machine. */
        int (*probe)(const struct sensor_config *cfg, struct sensor_probe *out);
        /* Fills s->priv, s->n_cpus, s->n_packages, s->metrics, s->has_energy. */
        int (*open)(struct sensor *s, const struct sensor_config *cfg);
        /* Replaces the monitored targets (apps come and go). */
        int (*set_targets)(struct sensor *s, const struct sensor_target *targets, unsigned n);
        /* Deltas since the previous read (the first read after open gives the interval since
         * open). -ENODATA at the end of a replayed trace. */
        int (*read)(struct sensor *s, struct sensor_sample *out);
        void (*close)(struct sensor *s);
};

struct sensor {
        const struct sensor_ops *ops;
        unsigned n_cpus;
        unsigned n_packages;
        unsigned metrics; /* what this backend measures, enum sensor_metric bits */
        bool has_energy;
        bool has_mem_traffic; /* reads fill mem_bytes (per package) */
        unsigned n_targets;
        void *priv;
};

/* Backends in order of quality, NULL-terminated; `auto` takes the first available of the
 * hardware ones (likwid, perf, software). replay and sim are chosen by name only. */
extern const struct sensor_ops *const sensor_backends[];
const struct sensor_ops *sensor_find(const char *name);
/* Picks the best available; *why says which and why the better ones were not. */
int sensor_pick_auto(const struct sensor_config *cfg, const struct sensor_ops **out, char *why,
                     size_t why_size);

int sensor_open(const struct sensor_ops *ops, const struct sensor_config *cfg, struct sensor **out);
int sensor_set_targets(struct sensor *s, const struct sensor_target *targets, unsigned n);
/* Allocates/reshapes *out as needed, then reads. */
int sensor_read(struct sensor *s, struct sensor_sample *out);
void sensor_close(struct sensor *s);

/* Counter arithmetic shared by the backends. */
/* Delta of a counter `bits` wide (1..64) that may have wrapped once. */
uint64_t sensor_counter_delta(uint64_t prev, uint64_t now, unsigned bits);
/* Delta of an energy counter that wraps at max_range (powercap max_energy_range_uj). */
uint64_t sensor_wrap_delta(uint64_t prev, uint64_t now, uint64_t max_range);
/* Scales a multiplexed count by time enabled / time running; 0 if it never ran. */
uint64_t sensor_scale_multiplexed(uint64_t value, uint64_t enabled, uint64_t running);
