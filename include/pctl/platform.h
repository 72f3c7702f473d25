/* A platform: one sensor backend plus one actuator backend over one topology, and a clock.
 * The real one is LIKWID/perf/software + cgroups/affinity + cpufreq in real time; the model
 * machine is both at once, in virtual time. The manager cannot tell them apart: the only
 * things it learns from are the sensor, the actuator, the process list and the clock. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pctl/actuator.h"
#include "pctl/sensor.h"
#include "pctl/topology.h"

struct platform_proc {
        pid_t pid;
        char comm[16];
};

struct platform {
        char name[64];        /* "software", "likwid", "sim:scenario.ini" ... */
        char sensor_why[512]; /* why this sensor backend (and not the better ones) */
        /* Why the sensor measures no memory traffic (its probe's reason); "" where it does. */
        char mem_why[256];
        const struct sensor_ops *sensor_ops;
        struct sensor *sensor;
        const struct actuator_ops *actuator_ops;
        struct actuator *actuator;
        struct topology topo;
        bool virtual_time;
        struct sim_machine *sim; /* the model machine; owned */
};

struct platform_options {
        const char *spec; /* auto | likwid | perf | software | sim:PATH */
        struct actuator_config actuator;
        const struct cpumask *cpus; /* CPUs to sample; NULL = all online */
};

/* Opens the sensor and the actuator. On failure, why says what and how to fix it. */
int platform_open(const struct platform_options *opt, struct platform **out, char *why,
                  size_t why_size);
/* Closes the actuator (restoring everything it changed) and the sensor. NULL is fine. */
void platform_close(struct platform *p);

/* Now, in ns: CLOCK_MONOTONIC, or the model machine's virtual clock. */
uint64_t platform_now_ns(const struct platform *p);
/* Model machine only: advances virtual time. -EOPNOTSUPP on real platforms. */
int platform_advance(struct platform *p, uint64_t dt_ns);
/* Whether a process still runs (the model machine: whether its app has not finished). */
bool platform_proc_alive(const struct platform *p, pid_t pid);
/* The same, and its comm into comm ("?" when it cannot be read; NULL: not wanted), from one
 * read of /proc/PID/stat. */
bool platform_proc_state(const struct platform *p, pid_t pid, char *comm, size_t size);
/* The process's comm; "?" when it cannot be read. */
void platform_proc_comm(const struct platform *p, pid_t pid, char *buf, size_t size);
/* What makes a process the same app again (pctl history): its executable's path and a hash
 * of its arguments after argv[0]. The model machine's apps are "sim:NAME", their arguments the
 * scenario's. -errno when the process cannot be read (gone, or a kernel thread). */
int platform_proc_identity(const struct platform *p, pid_t pid, char *exe, size_t size,
                           uint64_t *args_hash);
/* Lists running processes (pid, comm) into out (up to max); returns the number listed. */
int platform_list_procs(const struct platform *p, struct platform_proc *out, unsigned max);
/* Another daemon that sets CPU frequencies (tuned, tuned-ppd, power-profiles-daemon,
 * auto-cpufreq, thermald, cpufreqd, powerd) among procs: true, with "comm (pid N)" in which. */
bool platform_freq_manager_in(const struct platform_proc *procs, unsigned n, char *which,
                              size_t size);
/* Whether pctld may change frequencies, given the config's dvfs (enum config_dvfs), whether the
 * actuator can (and freq_reason when not), and the other frequency manager found running
 * (NULL: none, or not looked for). When not, why says so for the log and `pctl status`. */
bool platform_dvfs_choice(unsigned conf_dvfs, bool can_set_freq, const char *freq_reason,
                          const char *other_manager, const char *config_path, char *why,
                          size_t size);
/* The settable frequencies of the first domain, ascending (none without DVFS). */
unsigned platform_freqs(const struct platform *p, const unsigned **freqs_khz);
