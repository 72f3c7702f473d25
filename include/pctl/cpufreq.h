/* How fast the CPUs run: frequency domains (CPUs that share one clock, from related_cpus),
 * their available frequencies or hardware limits, and setting one frequency per domain —
 * with the userspace governor where the driver has it, else by capping scaling_max_freq
 * (intel_pstate in active mode). The original governor and limits of a domain go into the
 * state record before its first change, and are restored on close or by the next start. */
#pragma once

#include <stddef.h>

#include "pctl/actuator.h"
#include "pctl/state.h"

struct cpufreq;

/* 0 when frequencies can be set; else -ENODEV (or another errno) and why, in words. */
int cpufreq_probe(char *why, size_t why_size);
/* Discovers the domains (sysfs under the fs root). On failure, why says what is missing. */
int cpufreq_open(struct state_record *rec, struct cpufreq **out, char *why, size_t why_size);
/* Restores every domain we changed. NULL is fine. */
void cpufreq_close(struct cpufreq *cf);
unsigned cpufreq_n_domains(const struct cpufreq *cf);
const struct freq_domain *cpufreq_domain(const struct cpufreq *cf, unsigned i);
/* The cpufreq policy directory of a domain (with the fs root prefix). */
const char *cpufreq_domain_policy(const struct cpufreq *cf, unsigned i);
/* true: userspace governor + scaling_setspeed; false: scaling_max_freq cap. */
bool cpufreq_domain_uses_userspace(const struct cpufreq *cf, unsigned i);
/* -EINVAL unknown domain or a frequency the domain does not offer, -ERANGE outside the
 * hardware limits, -EIO when the kernel reads back something else. */
int cpufreq_set(struct cpufreq *cf, unsigned domain, unsigned freq_khz);
/* Puts one domain back to its original settings, now; the record entry is dropped. */
int cpufreq_restore(struct cpufreq *cf, unsigned domain);
const char *cpufreq_error(const struct cpufreq *cf);

/* Writes a recorded policy's original governor and limits back (used by recovery). */
int cpufreq_restore_policy(const struct state_entry *e);
