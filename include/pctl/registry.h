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
/* Whose the process is when it is handed over on request, and how many apps that user may
 * have handed over at once by their own requests ([daemon] max_user_apps for a user's own
 * request; UINT_MAX for root's, which is neither capped nor counted). manager_adopt_named is
 * root's request for a process of root. */
struct manager_owner {
        uid_t uid;
        unsigned max_apps;
};
/* manager_adopt_named for owner: -EUSERS with err naming the cap when owner already has
 * max_apps handed over (apps the rules adopted do not count). */
int manager_adopt_owned(struct manager *m, pid_t pid, const char *policy, const char *exec_name,
                        const struct manager_owner *owner, char *err, size_t err_size);
/* The uid of the process pid belongs to, managed or left within the last minute: for who may
 * read its report. -ENOENT when pctld knows no such app. */
int manager_app_owner(const struct manager *m, pid_t pid, uid_t *out);
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
