/* The manager's reports (manager/report.c): `pctl status`, the run report `pctl run` prints,
 * systemd's STATUS= line and the /metrics snapshot. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct json_object;
struct manager;
struct metrics_snapshot;

/* Total energy since start (J) and where it comes from: "measured", "declared",
 * "calibrated", or NULL when unknown. */
const char *manager_energy(const struct manager *m, double *energy_j);
/* The status object's members, for `pctl status` (added to a json-c object). */
void manager_status(const struct manager *m, struct json_object *obj);
/* The same for a user other than root: the machine's figures, but only uid's own apps (what
 * they run, their estimates, stacks and energy are theirs); "apps_of_others" counts the rest. */
void manager_status_for(const struct manager *m, uid_t uid, struct json_object *obj);
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
/* A snapshot of every app's figures and the manager's counters for /metrics (metrics.h);
 * unknown figures are NaN. The caller owns it. -ENOMEM. */
int manager_metrics(const struct manager *m, struct metrics_snapshot **out);
