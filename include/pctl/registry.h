/* The manager's app registry (manager/registry.c): apps come by `pctl run`/`adopt` or by a
 * policy's match rules, and leave when they exit or are released. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct manager;
struct policy_set;

/* Takes over pid with the named policy (NULL: the config's default_policy). err says why
 * not: no such process, already managed, unknown policy, or what the actuator refused. */
int manager_adopt(struct manager *m, pid_t pid, const char *policy, char *err, size_t err_size);
/* The same for a process that will exec exec_name (`pctl run` hands its child over before
 * exec): the app is named so from the start, until its own name changes. */
int manager_adopt_named(struct manager *m, pid_t pid, const char *policy, const char *exec_name,
                        char *err, size_t err_size);
/* A job tag names the batch job an app belongs to (Slurm's job id): status, reports and metrics
 * show it. 1 to MANAGER_JOB_MAX printable ASCII characters without spaces. */
#define MANAGER_JOB_MAX 64
bool manager_job_valid(const char *job);
/* Tags the managed pid with job. -EINVAL (not a valid tag) or -ENOENT (not managed) with err. */
int manager_set_job(struct manager *m, pid_t pid, const char *job, char *err, size_t err_size);
/* Gives pid back untouched; it will not be matched by a rule again. */
int manager_release(struct manager *m, pid_t pid, char *err, size_t err_size);
/* Replaces the policy set (SIGHUP, `pctl policy reload`); apps keep theirs by name, or fall
 * back to the default when their policy is gone. Takes ownership. */
void manager_set_policies(struct manager *m, struct policy_set *policies);
