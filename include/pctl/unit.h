/* An app's own systemd unit as the actuator: under systemd on cgroup v2 the tree is systemd's,
 * so pctld never moves an app; it asks systemd over D-Bus (sd-bus, the system bus) to change
 * AllowedCPUs= of the app's unit, or gives a command `pctl run` starts a transient scope of its
 * own under pctl.slice. Every change is recorded (state.h, `unit NAME OLD`) before it is made,
 * and set back on release, close or the next start after a crash.
 *
 * A process is managed through its unit only when it is that unit's whole content: it sits
 * in the unit's own cgroup and everything in that cgroup's subtree descends from it. One that
 * shares its unit (a login session, a shell's children) is the caller's to handle otherwise
 * (the affinity path: -EXDEV here). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pctl/actuator.h"
#include "pctl/cpumask.h"
#include "pctl/state.h"

#define UNIT_NAME_MAX 256
#define UNIT_SLICE "pctl.slice"
/* How long one D-Bus call may take before systemd counts as not answering. */
#define UNIT_BUS_TIMEOUT_USEC (5ULL * 1000 * 1000)

struct unit_bus;
struct unit_app;

/* What decides whether the systemd way is open, read from the file system (fs root prefix
 * for /run and /proc; cgroup_root as given). */
struct unit_facts {
        bool systemd;    /* PID 1 is systemd: <root>/run/systemd/system exists */
        bool v2_cpuset;  /* <cgroup_root>/cgroup.controllers lists cpuset (a pure v2 mount) */
        bool bus_tested; /* bus_err below says something */
        int bus_err;     /* 0: the system bus answered */
        char bus_why[160];
};
int unit_facts_read(const char *cgroup_root, struct unit_facts *out);
/* Asks systemd something harmless over the system bus; fills bus_err and bus_why. */
void unit_facts_ask_bus(struct unit_facts *f);
/* The systemd way is open: systemd is PID 1, cpuset is on v2, the bus answered (when asked).
 * Otherwise why not, in words. */
bool unit_facts_usable(const struct unit_facts *f, char *why, size_t why_size);

/* AllowedCPUs= on the bus: an array of bytes, CPU n is bit n%8 of byte n/8 (little endian);
 * no bytes is "not set" (all CPUs). Returns the number of bytes (the last one non-zero). */
size_t unit_cpus_to_bytes(const struct cpumask *m, uint8_t *buf, size_t size);
int unit_cpus_from_bytes(const uint8_t *buf, size_t n, struct cpumask *out);

/* Whether the cgroup directory `dir` (with the mount prefix) holds nothing but `pid` and its
 * descendants, in itself and every child group: 1 yes, 0 no (others share it), -errno. */
int unit_cgroup_is_own(const char *dir, pid_t pid);

/* Connects to the system bus. `allowed` is what an app's unit is widened to on adopt. */
int unit_bus_open(const char *cgroup_root, struct state_record *rec, const struct cpumask *allowed,
                  struct unit_bus **out, char *why, size_t why_size);
void unit_bus_close(struct unit_bus *ub);
const char *unit_bus_error(const struct unit_bus *ub);

/* Takes the unit pid belongs to: -EXDEV when pid is not its unit's whole content (nothing is
 * changed then); -EPERM/-EIO when systemd refuses AllowedCPUs on it; -ETIMEDOUT/-ENOTCONN
 * when systemd does not answer. Nothing is changed on any failure. */
int unit_adopt(struct unit_bus *ub, pid_t pid, const char *name, struct unit_app **out);
/* A command pctl starts: a transient scope pctl-run-PID.scope of its own under pctl.slice. */
int unit_adopt_scope(struct unit_bus *ub, pid_t pid, const char *name, struct unit_app **out);
int unit_set_cpus(struct unit_bus *ub, struct unit_app *app, const struct cpumask *cpus);
int unit_get_cpus(struct unit_bus *ub, struct unit_app *app, struct cpumask *out);
/* -ESRCH once the app has exited (or its PID names another process). */
int unit_refresh(struct unit_bus *ub, struct unit_app *app);
/* Sets the unit's AllowedCPUs= back and frees app. */
int unit_release(struct unit_bus *ub, struct unit_app *app);
const char *unit_app_name(const struct unit_app *app); /* the unit, e.g. "demo.service" */
const char *unit_app_cgroup(const struct unit_app *app);

/* Sets a recorded unit's AllowedCPUs= back (a previous instance's record): 0, -ENOENT when the
 * unit is gone (nothing to restore), else -errno. */
int unit_restore_entry(const struct state_entry *e);
