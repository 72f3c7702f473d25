/* The manager: what pctld runs every interval and every decision, and what `pctl sim run
 * --policy` runs in virtual time. It reads the sensor, feeds the estimator, asks the
 * allocator, and applies the plan through the actuator; apps come by `pctl run`/`adopt` or by
 * a policy's match rules, and leave when they exit or are released. This header is the
 * manager object; its parts have their own: the tick (tick.h), the app registry
 * (registry.h) and reports (report.h), included at the end so that one include is the
 * manager's whole interface. */
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

/* What SIGHUP may change without a restart: reserved_cpus (apps move off them at the next
 * decision), default_policy and the policy set. Checks first and changes nothing on failure:
 * -EINVAL with err saying why (a default policy the set does not have, no CPU left to manage).
 * Takes ownership of policies on success. */
int manager_reconfigure(struct manager *m, const struct config *conf, struct policy_set *policies,
                        char *err, size_t err_size);

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
/* Whether a managed pid was started at a past run's best configuration (pctl history). */
bool manager_from_history(const struct manager *m, pid_t pid);
/* The estimate of a managed pid (NULL if not managed), for `pctl sim run` reports. */
const struct estimate *manager_estimate(const struct manager *m, pid_t pid);

#include "pctl/registry.h"
#include "pctl/report.h"
#include "pctl/tick.h"
