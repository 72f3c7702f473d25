/* How fast the CPUs run, through libcpupower: frequency domains (CPUs that share one clock,
 * cpufreq_get_related_cpus), their available frequencies or hardware limits, and setting one
 * frequency per domain — with the userspace governor where the driver has it
 * (cpufreq_set_frequency), else by capping scaling_max_freq (cpufreq_modify_policy_max;
 * intel_pstate in active mode). The original governor and limits of a domain
 * (cpufreq_get_policy) go into the state record before its first change, and are restored on
 * close or by the next start. Always the real /sys/devices/system/cpu: the library has no root
 * prefix (tests mount a fake tree there in a mount namespace of their own). */
#pragma once

#include <stddef.h>

#include "pctl/actuator.h"
#include "pctl/state.h"

struct cpufreq;

/* 0 when frequencies can be set; else -ENODEV (or another errno) and why, in words. */
int cpufreq_probe(char *why, size_t why_size);
/* Discovers the domains. On failure, why says what is missing. */
int cpufreq_open(struct state_record *rec, struct cpufreq **out, char *why, size_t why_size);
/* Restores every domain we changed. NULL is fine. */
void cpufreq_close(struct cpufreq *cf);
unsigned cpufreq_n_domains(const struct cpufreq *cf);
const struct freq_domain *cpufreq_domain(const struct cpufreq *cf, unsigned i);
/* The cpufreq policy directory of a domain: /sys/devices/system/cpu/cpuN/cpufreq. */
const char *cpufreq_domain_policy(const struct cpufreq *cf, unsigned i);
/* true: userspace governor + scaling_setspeed; false: scaling_max_freq cap. */
bool cpufreq_domain_uses_userspace(const struct cpufreq *cf, unsigned i);
/* -EINVAL unknown domain or a frequency the domain does not offer, -ERANGE outside the
 * hardware limits, -EIO when the kernel reads back something else. A write that fails gives
 * the errno of the sysfs file's state (-ENOENT missing, -EACCES read-only, -EROFS, ...), or
 * -ENODEV when the file is writable and the kernel refused the value. */
int cpufreq_set(struct cpufreq *cf, unsigned domain, unsigned freq_khz);
/* Puts one domain back to its original settings, now; the record entry is dropped. */
int cpufreq_restore(struct cpufreq *cf, unsigned domain);
const char *cpufreq_error(const struct cpufreq *cf);

/* Writes a recorded policy's original governor and limits back (used by recovery). */
int cpufreq_restore_policy(const struct state_entry *e);
