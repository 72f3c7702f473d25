/* Where an app's threads may run: a cgroup v2 child of our delegated subtree, a cgroup v1
 * cpuset under <cgroup_root>/cpuset/<group>, or, with neither, sched_setaffinity on every
 * thread. Adopting remembers where each thread came from (its cgroup and its own affinity
 * mask, in the state record before anything moves) so that release puts everything back. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pctl/actuator.h"
#include "pctl/cpumask.h"
#include "pctl/state.h"

struct cpuset;
struct cpuset_app;

/* Which mode `want` resolves to (CPUSET_AUTO picks v2, then v1, then affinity) and, in
 * out->reason, why the others were not taken. -ENODEV when an explicit mode is unavailable. */
int cpuset_probe(const struct actuator_config *cfg, enum cpuset_mode *mode,
                 struct actuator_probe *out);

/* Sets up our subtree (v1: <root>/cpuset/<group>; v2: the daemon's own cgroup, with itself
 * moved into a leaf). Changes go into rec first. On failure, cpuset_error() is unavailable:
 * the reason is written to why. */
int cpuset_open(const struct actuator_config *cfg, struct state_record *rec, struct cpuset **out,
                char *why, size_t why_size);
/* Releases every app, removes the directories we created. NULL is fine. */
void cpuset_close(struct cpuset *cs);
enum cpuset_mode cpuset_mode(const struct cpuset *cs);
/* The CPUs an app may be given (the base cpuset's, or the online ones). */
const struct cpumask *cpuset_allowed(const struct cpuset *cs);
/* Words for the last failure of the calls below. */
const char *cpuset_error(const struct cpuset *cs);

/* -ESRCH: no such process, or it exited while being moved (nothing is left behind). */
int cpuset_adopt(struct cpuset *cs, pid_t pid, const char *name, struct cpuset_app **out);
/* -EINVAL empty list, -ERANGE CPUs the machine does not have, -EIO read-back mismatch. */
int cpuset_set_cpus(struct cpuset *cs, struct cpuset_app *app, const struct cpumask *cpus);
int cpuset_get_cpus(struct cpuset *cs, struct cpuset_app *app, struct cpumask *out);
/* Affinity mode: pins threads that appeared since. -ESRCH when the app has exited. */
int cpuset_refresh(struct cpuset *cs, struct cpuset_app *app);
/* Puts every thread back and frees app; 0 when the app has exited. */
int cpuset_release(struct cpuset *cs, struct cpuset_app *app);
pid_t cpuset_app_pid(const struct cpuset_app *app);
/* The cgroup directory of the app ("" in affinity mode). */
const char *cpuset_app_dir(const struct cpuset_app *app);

/* Moves a thread back where the record says it came from: into the origin file (unless
 * "-"), then its own mask. Checks the start time so a reused TID is left alone (-ESRCH). */
int cpuset_restore_task(const struct state_entry *e);
/* Removes a directory we created, first moving out any task still in it (to `fallback`, a
 * tasks/cgroup.procs file, or left there when NULL). */
int cpuset_remove_dir(const char *dir, const char *fallback);
/* Start time of a thread in clock ticks, from /proc/PID/task/TID/stat. */
int proc_thread_start(pid_t pid, pid_t tid, unsigned long long *out);
