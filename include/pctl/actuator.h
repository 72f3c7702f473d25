/* What pctld changes on the machine: which CPUs an app may use, and how fast they run.
 * Every change is recorded under the state directory before it is made, so that close(),
 * or the next start after a crash (actuator_recover), undoes it. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>

#include "pctl/cpumask.h"
#include "pctl/state.h"

#define ACTUATOR_MAX_FREQS 64

struct freq_domain {
        struct cpumask cpus; /* related CPUs: one frequency for all */
        unsigned n_freqs;
        unsigned freqs_khz[ACTUATOR_MAX_FREQS]; /* ascending */
        unsigned min_khz, max_khz;              /* hardware limits */
        unsigned cur_khz;                       /* what we set, or what it was */
};

/* SYSTEMD: an app's own unit through systemd (AllowedCPUs=), or affinity for a process that
 * shares its unit; V2: a child of pctld's own delegated cgroup (never picked by auto under
 * systemd: it would take the app out of its unit). The values are pctl.conf's cpuset_mode
 * choices in order. */
enum cpuset_mode { CPUSET_AUTO, CPUSET_V2, CPUSET_V1, CPUSET_AFFINITY, CPUSET_SYSTEMD };

struct actuator_config {
        enum cpuset_mode mode;
        const char *cgroup_root; /* cgroup filesystem mount, default "/sys/fs/cgroup" */
        const char *group;       /* our subtree's name, default "pctl" */
        const char *state_dir;   /* default "/run/pctl" */
        void *machine;           /* sim: the struct sim_machine * */
        bool dvfs;               /* false: never touch frequencies */
};

struct actuator_probe {
        bool available;
        int err;
        char reason[256];
};

#define ACTUATOR_MAX_SKIPPED 8

/* What the start found in the record a previous instance left. */
struct actuator_recovery {
        unsigned restored; /* items put back */
        unsigned kept;     /* items that could not be undone now: kept for the next start */
        int kept_err;      /* why the first of them could not */
        char record[STATE_PATH_MAX + 32]; /* the record's file */
        unsigned n_skipped;               /* its lines that could not be read, kept */
        struct state_problem skipped[ACTUATOR_MAX_SKIPPED]; /* the first of them */
};

struct actuator_app; /* one adopted process, backend-defined */
struct actuator;

struct actuator_ops {
        const char *name;
        int (*probe)(const struct actuator_config *cfg, struct actuator_probe *cpuset,
                     struct actuator_probe *freq);
        /* Fills the public fields of *a (domains, can_set_freq, freq_reason, mode). */
        int (*open)(struct actuator *a, const struct actuator_config *cfg);
        /* Takes over pid and all its threads, remembering where they came from. */
        int (*adopt)(struct actuator *a, pid_t pid, const char *name, struct actuator_app **out);
        /* A command pctl itself starts (pctl run): where the machine has units, it gets one of
         * its own (a transient scope under pctl.slice). NULL: adopt. */
        int (*adopt_new)(struct actuator *a, pid_t pid, const char *name,
                         struct actuator_app **out);
        int (*set_cpus)(struct actuator *a, struct actuator_app *app, const struct cpumask *cpus);
        /* What the kernel says the app may run on now (cpuset.cpus.effective / affinity). */
        int (*get_cpus)(struct actuator *a, struct actuator_app *app, struct cpumask *out);
        /* Re-applies placement to threads that appeared since (affinity mode); 0 otherwise. */
        int (*refresh)(struct actuator *a, struct actuator_app *app);
        /* How the app is held, in words, into buf: "systemd unit pctl-run-42.scope
         * (AllowedCPUs=)", "cgroup /sys/fs/cgroup/pctl/app-42", "affinity". NULL: the backend
         * does not say (the model machine). */
        void (*where)(const struct actuator *a, const struct actuator_app *app, char *buf,
                      size_t size);
        /* Gives the app back as it was (cgroup, each thread's own mask) and frees app.
         * An app that has exited is released without error. */
        int (*release)(struct actuator *a, struct actuator_app *app);
        int (*set_freq)(struct actuator *a, unsigned domain, unsigned freq_khz);
        /* Gives one domain back the settings it had before the first set_freq (0 when it was
         * never changed): its last app has left. */
        int (*restore_freq)(struct actuator *a, unsigned domain);
        /* Releases every app, restores every frequency domain, clears the record. */
        void (*close)(struct actuator *a);
};

struct actuator {
        const struct actuator_ops *ops;
        enum cpuset_mode mode; /* the one in use after open */
        char mode_reason[256]; /* why that one, in words (the probe's reason) */
        unsigned n_domains;
        struct freq_domain *domains;
        bool can_set_freq;
        char freq_reason[256]; /* why not, when !can_set_freq */
        void *priv;
        char error[256]; /* why the last failed op failed, in words; "" when it did not say */
        struct actuator_recovery recovery; /* real backend: what open found in the record */
};

extern const struct actuator_ops actuator_real_ops; /* cgroups/affinity + cpufreq */

/* On failure, why (when not NULL) says what went wrong in words. */
int actuator_open(const struct actuator_ops *ops, const struct actuator_config *cfg,
                  struct actuator **out, char *why, size_t why_size);
void actuator_close(struct actuator *a);
/* Restores what a previous instance recorded under state_dir; what cannot be undone now, and
 * every line of the record that cannot be read, stays in it (out, when not NULL, counts the
 * first and lists the second). Returns how many items were restored, or -errno when the record
 * cannot be read or written. */
int actuator_recover(const struct actuator_config *cfg, struct actuator_recovery *out);
/* Transient errors are retried next interval; anything else stops managing that app. */
bool actuator_error_is_transient(int err);
/* The app is gone: not an error, the app is simply no longer managed. */
static inline bool actuator_error_is_gone(int err)
{
        return err == -ESRCH;
}
/* The words for a failed op: a->error when the backend gave them, else strerror(-err). */
const char *actuator_strerror(const struct actuator *a, int err);
/* Where the real backend keeps the app, in words: its unit ("demo.service"), its cgroup
 * directory, or "" (affinity). */
const char *actuator_real_app_where(const struct actuator_app *app);
/* "auto", "v2", "v1", "affinity", "systemd"; and back (-EINVAL for anything else). */
const char *actuator_mode_name(enum cpuset_mode mode);
int actuator_mode_parse(const char *s, enum cpuset_mode *out);
