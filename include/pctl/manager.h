/* The manager: what pctld runs every interval and every decision, and what `pctl sim run
 * --policy` runs in virtual time. It reads the sensor, feeds the estimator, asks the
 * allocator, and applies the plan through the actuator; apps come by `pctl run`/`adopt` or by
 * a policy's match rules, and leave when they exit or are released. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pctl/allocator.h"
#include "pctl/config.h"
#include "pctl/estimator.h"
#include "pctl/model.h"
#include "pctl/platform.h"
#include "pctl/policy.h"

struct json_object;
struct metrics_snapshot;
struct history;

struct manager_options {
        struct config conf;        /* pctl.conf as loaded */
        struct platform *platform; /* borrowed: the caller opens and closes it */
        bool have_power;           /* a power model below (declared or calibrated) */
        struct model_power power;
        const char *power_source; /* "declared", "calibrated" */
        double delta_i_rate;      /* calibrated ΔI/T, NaN for the default */
        double delta_i_alpha;     /* calibrated α of eq. 14 (with delta_i_rate, its β) */
        double ipc1;              /* calibrated single-core IPC, 0 for unknown */
        bool dvfs;                /* may change frequencies */
        char dvfs_why[320];       /* why not, when !dvfs */
        char calibration[480];    /* the platform file used, or why none */
        /* Memory of past runs (borrowed; NULL: none): a returning app starts at its best
         * configuration, and every app's run is recorded when it leaves. */
        struct history *history;
};

struct manager;

/* Takes ownership of policies (which may be empty). */
int manager_new(const struct manager_options *opt, struct policy_set *policies,
                struct manager **out);
/* Releases every app (the actuator puts each back where it was). NULL is fine. */
void manager_free(struct manager *m);

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

/* What SIGHUP may change without a restart: reserved_cpus (apps move off them at the next
 * decision), default_policy and the policy set. Checks first and changes nothing on failure:
 * -EINVAL with err saying why (a default policy the set does not have, no CPU left to manage).
 * Takes ownership of policies on success. */
int manager_reconfigure(struct manager *m, const struct config *conf, struct policy_set *policies,
                        char *err, size_t err_size);

/* One sampling interval: read the sensor, update estimates, drop apps that exited. */
int manager_sample(struct manager *m);
/* One decision: adopt processes matching a policy, then decide and apply. */
int manager_decide(struct manager *m);

unsigned manager_n_apps(const struct manager *m);
uint64_t manager_decisions(const struct manager *m);
uint64_t manager_changes(const struct manager *m);
/* The speedup stack of a managed pid at its current setting, for the allocator's probe order
 * (docs/allocator.md, "The speedup stack"); -ESRCH if not managed. */
int manager_set_stack(struct manager *m, pid_t pid, const struct stack *s);
/* The units of work a managed pid has marked so far (include/pctl/progress.h), read at now_ns:
 * its measured scores are then per unit of work, not per instruction (docs/allocator.md,
 * "Progress"). Call before manager_sample at each interval. -ESRCH if not managed. */
int manager_set_progress(struct manager *m, pid_t pid, uint64_t units, uint64_t now_ns);
/* Total energy since start (J) and where it comes from: "measured", "declared",
 * "calibrated", or NULL when unknown. */
const char *manager_energy(const struct manager *m, double *energy_j);
/* The status object's members, for `pctl status` (added to a json-c object). */
void manager_status(const struct manager *m, struct json_object *obj);
/* What the parent of a command measured of it (pctl run, from wait4): from its exec to its
 * exit, and its CPU time with its reaped children's. */
struct manager_run_totals {
        double wall_s;
        double cpu_s;
};
/* The run report of pid, managed now or gone in the last minute (`pctl run` asks when its
 * command ends): the whole run's speedup and P with its range, the configurations it ran at,
 * energy and EDP, the gain against its default. With totals (NULL: none) of an app that left
 * because it exited, in busy time, the speedup and P are completed with the part of the run
 * pctld did not see (estimate_run_complete), and the range is 0. -ENOENT with err when there
 * is none. */
int manager_report(const struct manager *m, pid_t pid, const struct manager_run_totals *totals,
                   struct json_object *obj, char *err, size_t err_size);
/* A one-line summary for systemd's STATUS=. */
void manager_summary(const struct manager *m, char *buf, size_t size);
/* Whether a managed pid was started at a past run's best configuration (pctl history). */
bool manager_from_history(const struct manager *m, pid_t pid);
/* The estimate of a managed pid (NULL if not managed), for `pctl sim run` reports. */
const struct estimate *manager_estimate(const struct manager *m, pid_t pid);
/* A snapshot of every app's figures and the manager's counters for /metrics (metrics.h);
 * unknown figures are NaN. The caller owns it. -ENOMEM. */
int manager_metrics(const struct manager *m, struct metrics_snapshot **out);
