/* The backends' ops tables and helpers shared among the sensors/ files; not a public contract. */
#pragma once

#include "pctl/sensor.h"

extern const struct sensor_ops sensor_likwid_ops;
extern const struct sensor_ops sensor_perf_ops;
extern const struct sensor_ops sensor_software_ops;
extern const struct sensor_ops sensor_replay_ops;

/* The CPUs to sample: cfg->cpus, or every online CPU when it is empty. -ENODEV when cfg names
 * a CPU that is not online. *n_cpus = highest online CPU + 1, *n_packages from topology. */
int sensor_cpus_resolve(const struct sensor_config *cfg, struct cpumask *cpus, unsigned *n_cpus,
                        unsigned *n_packages);
/* A perf_event_open(2) wrapper. */
int sensor_perf_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags);

/* Cumulative busy time per CPU for the whole system, from the best source there is:
 * cgroup v1 root cpuacct.usage_percpu (ns), else /proc/stat (USER_HZ ticks; busy = user + nice
 * + system + irq + softirq; idle, iowait and steal are not busy). */
enum sensor_busy_source { SENSOR_BUSY_CPUACCT, SENSOR_BUSY_PROCSTAT };
/* Finds the source; the path of the cpuacct file goes to path (for messages). */
int sensor_busy_probe(enum sensor_busy_source *src, char *path, size_t path_size);
/* Writes busy_ns[cpu] for cpu < n_cpus (0 for CPUs the source does not list). */
int sensor_busy_read(enum sensor_busy_source src, uint64_t *busy_ns, unsigned n_cpus);
/* Parsers, separate so that tests can feed them text. */
int sensor_parse_proc_stat(const char *text, uint64_t *busy_ns, unsigned n_cpus, long ticks_per_s);
int sensor_parse_percpu(const char *text, uint64_t *ns, unsigned n_cpus);

/* Package energy: the `power` PMU (64-bit, no wrap) or powercap (wraps at
 * max_energy_range_uj). Shared by perf and available to tests against a fake /sys. */
enum sensor_energy_source { SENSOR_ENERGY_NONE, SENSOR_ENERGY_PMU, SENSOR_ENERGY_POWERCAP };

struct sensor_energy {
        enum sensor_energy_source src;
        unsigned n_packages;
        double scale_j; /* PMU: joules per count */
        int fd[SENSOR_MAX_PACKAGES];
        unsigned zone[SENSOR_MAX_PACKAGES]; /* powercap: N of intel-rapl:N */
        uint64_t prev[SENSOR_MAX_PACKAGES];
        uint64_t max_range_uj[SENSOR_MAX_PACKAGES];
};

/* Opens the best source; -ENOENT when there is none, with why (when not NULL) saying what was
 * tried. The first read gives the energy since open. */
int sensor_energy_open(struct sensor_energy *e, char *why, size_t why_size);
/* Energy per package since the previous read, joules. */
int sensor_energy_read(struct sensor_energy *e, double *energy_j);
void sensor_energy_close(struct sensor_energy *e);

/* LIKWID's events (likwid.c), what each measures: an enum sensor_metric bit (> 0), or one of
 * these. */
enum {
        LIKWID_PKG_ENERGY = 0, /* PWR_PKG_ENERGY: joules per package */
        LIKWID_UNKNOWN = -1,
        LIKWID_MEM_LINES = -2, /* a memory controller's CAS/DRAM count: 64 bytes each */
};
int likwid_event_metric(const char *event);
/* The event strings handed to perfmon_addEventSet, tried in order (NULL past the last). */
const char *likwid_event_set(unsigned attempt);
/* A package's memory traffic from the counts of its memory-controller events (64 bytes each);
 * -ENODATA when one is not a count (LIKWID's NaN or negative for a counter it did not read). */
int likwid_mem_bytes(const double *lines, unsigned n, double *bytes);
