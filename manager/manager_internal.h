/* The manager's own state, shared by its parts and by nothing else: the manager object
 * (manager.c), the tick (tick.c), the app registry (registry.c), the memory of past runs
 * (app_history.c) and reports (report.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pctl/manager.h"

#include "pctl/allocator.h"
#include "pctl/cpumask.h"
#include "pctl/estimator.h"
#include "pctl/history.h"
#include "pctl/log.h"
#include "pctl/membw.h"
#include "pctl/memtrim.h"
#include "pctl/platform.h"
#include "pctl/policy.h"
#include "pctl/ratelimit.h"
#include "pctl/sensor.h"
#include "pctl/util.h"

struct appstacks;
struct json_object;

/* Intervals a configuration is measured over (after the one that straddles the change). */
#define MANAGER_PROBE_SAMPLES 3
#define MANAGER_HYSTERESIS 0.05
/* Decisions after a probe of a package's bandwidth began at which no trial of spreading
 * begins: the one that reads the probe's intervals (and gives its cores back) and the one after,
 * whose stalls straddle the give-back. */
#define MANAGER_PROBE_QUIET_DECISIONS 2
#define MANAGER_MAX_PROCS 65536
/* An app's first second is usually start-up (loading, initialising: sequential work) and
 * says little about its steady state, so the estimator starts after it. */
#define MANAGER_WARMUP_NS (1000 * NSEC_PER_MSEC)
/* Configurations remembered per app for its run report. */
#define MANAGER_RUN_CONFIGS 8
/* An app that left is answered for this long (`pctl run` asks right after its exit), and at
 * most this many of them. */
#define MANAGER_REPORT_KEEP_NS (60 * NSEC_PER_SEC)
#define MANAGER_REPORTS 64
/* Why an app that ended is released: only then was its whole run seen. */
#define MANAGER_WHY_EXITED "it exited"

/* How long an app ran at one configuration: its cores and frequency, and the packages its CPUs
 * lay on (bit k: package k; pkgs_known false where a CPU's package was not known or its id was
 * past 63). `merged` configurations are in it: more than one only where every slot was taken
 * and two were folded into one to make room, and then a label they did not share reads
 * unknown (cores 0, freq_khz 0, pkgs_known false). */
struct run_config {
        unsigned cores;
        unsigned freq_khz;
        uint64_t pkgs;
        bool pkgs_known;
        unsigned merged;
        double run_s;
};

/* The configurations of a run for its report (manager/run_configs.c), in order of first use.
 * Their times add up to the run's; the one it ran at in its last interval (`end`) is always
 * one configuration, exactly labelled, whatever was merged. pkgs is every package the run's
 * CPUs lay on, unless an interval's were not known (pkgs_unknown). */
struct run_configs {
        unsigned n;
        struct run_config v[MANAGER_RUN_CONFIGS];
        unsigned end;
        uint64_t pkgs;
        bool pkgs_unknown;
};

/* Adds run_s at the configuration now (cores, freq_khz, pkgs, pkgs_known; its run_s and merged
 * are ignored). A configuration not seen before takes a new slot; when every slot is taken,
 * the two old ones that share the most labels (then: with the least time) are merged first. */
void run_configs_add(struct run_configs *rc, const struct run_config *now, double run_s);

struct mapp {
        uint64_t id;
        pid_t pid;
        uid_t uid;                     /* whose it is: the real uid when it was taken over */
        char name[16];                 /* printable: what it runs, escaped */
        char comm[16];                 /* /proc/PID/comm as last read, raw */
        char job[MANAGER_JOB_MAX + 1]; /* the batch job it belongs to, "" for none */
        struct policy policy;          /* a copy, without match patterns: the set may be reloaded */
        struct actuator_app *handle;
        struct cpumask cpus;
        unsigned freq_khz;
        uint64_t since_ns;
        /* Where it ran, for its run report. run.v[] is in order of first use, so the last
         * entry is not where it ended when it came back to an earlier one: run.end is. */
        struct run_configs run;
        /* pctl history: who it is (looked up once, after `pctl run`'s exec), whether that is
         * known, and the comm it was adopted with when `pctl run` named it before its exec. */
        struct history_key key;
        bool key_tried, have_key;
        char exec_comm[16];
        bool decided; /* the allocator has placed it once */
        bool by_rule; /* a policy's rules adopted it: it counts against their caps */
        bool by_user; /* its user (not root) handed it over: it counts for max_user_apps */
        /* Seen from its start (`pctl run` hands it over before its exec; the model machine's
         * apps are adopted as they start): its run's instructions are the whole run's. */
        bool whole_run;
        /* Extra parallel work measured across its whole runs (docs/estimator.md): the figure
         * and the two runs it comes from, more cores first (updated_s 0: this run). */
        struct {
                bool known;
                double x, err;
                struct history_run a, b;
        } infl;
        /* The newest whole run in history: its instruction-weighted mean core count (0: no
         * run stored). */
        double last_run_cores;
        /* The start history held for it when it came (cores 0: none; score NaN: kept
         * without one): what its record keeps when this run measured nothing better. */
        struct allocator_point remembered;
};

/* What is left of an app after it leaves: its estimate and configurations, for a report. */
struct mreport {
        struct mapp app;
        struct estimate e;
        bool have_e;
        uint64_t end_ns;
        unsigned default_cores;
        char why[64];
        /* Why it lay spread over packages when it left (app_packages): NULL and "" when not. */
        const char *spreading;
        char spread_why[256];
        /* Its bytes per instruction when it left (memreport_app_bpi; NaN: unknown). */
        double mem_bpi;
};

struct manager {
        struct manager_options opt;
        struct platform *pf;
        struct estimator *est;
        /* Each package's memory traffic and bandwidth, each app's bytes per instruction
         * (model/membw.c); fed only where the sensor measures traffic. */
        struct membw *bw;
        /* What operators see of the traffic (manager/memreport.c): each package's bytes counted
         * since the start and its rate over the last interval (NaN: not measured then). */
        struct {
                unsigned n_packages; /* packages measured at least once */
                double total_bytes[SENSOR_MAX_PACKAGES];
                double rate_gbs[SENSOR_MAX_PACKAGES];
        } mem;
        /* The app a probe of a package's bandwidth took cores from at the last decision, and
         * its count before (id 0: none): given back at the next one (tick.c, bw_probe). */
        struct {
                uint64_t id;
                unsigned cores;
                uint64_t decision; /* the decision (m->decisions) the last probe began; 0: none */
        } bw_probe;
        struct policy_set policies;
        bool rules; /* some policy has match keys: scan for new processes */

        struct mapp *apps;
        struct allocator_app *alloc; /* parallel to apps */
        unsigned n_apps, cap_apps;
        uint64_t next_id;

        struct cpumask managed_cpus; /* online minus reserved */
        struct sensor_sample sample;
        bool targets_ok;

        /* Processes seen by the last scan, sorted by PID, with the name each had then: a PID
         * whose name has changed since (it exec'd, or the PID was given to a new process) is
         * looked at again. */
        struct platform_proc *seen;
        unsigned n_seen;
        pid_t *ignored; /* released by hand: never matched by a rule again */
        unsigned n_ignored;
        struct ratelimit rule_rl; /* refusals of rules, logged */
        gid_t users_gid;          /* of [daemon] users when a group: looked up when it changes */
        char users_gid_of[CONFIG_NAME_MAX];

        uint64_t start_ns;
        uint64_t decisions, changes;
        /* Decision ticks (decision_ms): the allocator's clock, so that how long a measurement
         * stays fresh does not shrink when early decisions (probes measured) come often. */
        uint64_t ticks;
        unsigned *cpu_freq_khz; /* scratch, per CPU of the sample */
        unsigned n_cpu_freq;
        struct freqdomain *freq; /* per frequency domain of the actuator: what pctld did */
        struct memtrim trim;     /* gives a burst of apps' heap back when they have left */
        struct mreport *reports; /* apps that left, oldest first */
        unsigned n_reports;
        struct appstacks *stacks; /* each app's speedup stack; NULL: no thread-state backend */
};

/* manager.c */
/* The managed app with that pid (and its index), NULL when none. */
struct mapp *find_app(const struct manager *m, pid_t pid, unsigned *idx);
/* The frequency the app's first CPU runs at, 0 when unknown. */
unsigned app_freq(const struct manager *m, const struct cpumask *cpus);
/* The power model predictions use; *src (if not NULL) says where it comes from. */
const struct model_power *manager_power_model(const struct manager *m, const char **src);

/* tick.c */
/* The allocator's view of the machine for this tick. */
struct allocator_ctx decision_ctx(struct manager *m);
/* A decision now, outside the sample tick (a decision tick, an adoption from history). */
int tick_decide(struct manager *m);
/* Sets each domain to the highest frequency an app on it wants and gives back those no app
 * runs on; with idle_only, only the giving back (an app left between decisions). */
void tick_apply_freqs(struct manager *m, bool idle_only);

/* registry.c */
bool policies_have_rules(const struct policy_set *s);
/* Gives app i back (why: what the log and its report say) and forgets it. */
void release_app(struct manager *m, unsigned i, const char *why);
/* The refresh stage: releases apps that exited, renames those that exec'd. */
void refresh_apps(struct manager *m);
/* Adopts processes started since the last scan that a policy's rules select. */
void adopt_by_rules(struct manager *m);

/* app_history.c */
/* Stores what the run of app i taught (ended: it exited, seen whole). */
void history_record(struct manager *m, unsigned i, bool ended);
/* Looks app i up once it is known who it is: a past run's best configuration becomes the
 * allocator's starting point. */
void history_recall(struct manager *m, unsigned i);
/* Why a run records the start it does (history_start). */
enum history_start_why {
        HISTORY_START_MEASURED,    /* the best point it measured (allocator_best) */
        HISTORY_START_HELD,        /* nothing scored: the count it held as it left, its own */
        HISTORY_START_HELD_SHARED, /* nothing scored: the count sharing cut it to */
        HISTORY_START_KEPT,        /* nothing scored, cut by sharing: the measured start kept */
        _HISTORY_START_WHY_MAX,
};
/* What a run records as the app's start: the best point it measured (measured, NULL: none);
 * without one, the configuration it held as it left (held; cores 0: nothing learned), unless
 * sharing set that count (held_by_share) and it came with a start history had measured
 * (remembered with a finite score), which is kept: a count imposed on an app that measured
 * nothing there is no better start than one measured. Returns the why, -ENODATA when there
 * is nothing to record; *out is written only then. */
int history_start(const struct allocator_point *measured, const struct allocator_point *held,
                  bool held_by_share, const struct allocator_point *remembered,
                  struct allocator_point *out);
const char *history_start_why_to_string(enum history_start_why why);
/* What a run that scored nothing offers as the app's start (held, for history_start), and
 * whether sharing set it (*by_share): the configuration it held as it left, once it searched;
 * if its phase changed while it learned, the count its first phase asked for as it learned
 * (allocator_app.learn_at: every CPU the policy allows unless a smaller count was chosen;
 * beside other apps the partition capped what it held), its clock left to the next run's
 * bounds, never a later phase's. False when it offers none (still
 * learning); *out and *by_share are written only on true. */
bool history_held(const struct allocator_app *al, unsigned n_apps, struct allocator_point *out,
                  bool *by_share);
/* An app's extra parallel work from its stored whole runs, as estimate_work_inflation gives
 * it (the pair furthest apart in cores); where that pair states no error (a run's unseen tail
 * spans more than its difference), the pair of the others, far enough apart, that states the
 * smallest one: a measured X is not lost because a later run ran further off without resolving
 * it. Same returns, and *ia, *ib index runs. */
int history_work_inflation(const struct estimate_work_run *runs, unsigned n, double *x, double *err,
                           unsigned *ia, unsigned *ib);

/* report.c */
/* Where app i's CPUs lie: the packages of the CPUs it holds now, looked up in the machine's
 * topology (a fact of the machine, whatever placed them), and, only where they are two or more
 * and the allocator spread it there (or refuted a trial that did), why. What status, the run
 * report, /metrics and the log of a move all say. */
struct app_packages {
        int n;                 /* how many; -ENODATA: a CPU whose package is not known */
        struct cpumask pkgs;   /* their ids (bit k: package k), when n >= 0 */
        const char *spreading; /* status's `spreading`: "alone", "on-trial", ...; NULL: none */
        char why[256];         /* the sentence status's reason ends with; "" when none */
};
void app_packages(const struct manager *m, unsigned i, struct app_packages *out);
/* The packages of app a's CPUs as a run report's configuration keeps them (bit k: package k).
 * -ENODATA where one is not known, -ERANGE where a package id is past 63; *pkgs written only
 * on success. */
int app_packages_word(const struct manager *m, const struct mapp *a, uint64_t *pkgs);
/* The journal fields of a move of an app whose CPUs lie as p says, beside its log line:
 * PCTL_PACKAGES= (the run report's `packages`, as text: "0,1", "0-3"; "unknown" where a CPU's
 * package is not known) and, where the allocator spread it, PCTL_SPREADING= (status's
 * `spreading`). None on a machine of one package, whose log line says nothing of packages. */
struct app_packages_fields {
        char packages[CPUMASK_LIST_MAX];
        struct log_field v[2];
        unsigned n;
};
void app_packages_fields(const struct manager *m, const struct app_packages *p,
                         struct app_packages_fields *out);
/* Keeps what a report on app i needs after it is gone. */
void report_keep(struct manager *m, unsigned i, const char *why);
/* memreport.c: memory traffic in `pctl status` and /metrics. */
struct metrics_snapshot;
/* Counts the sample's traffic in (called after each sensor read). */
void memreport_sample(struct manager *m);
/* mem_traffic, mem_traffic_reason and mem_packages of the status. */
void memreport_status(const struct manager *m, struct json_object *j);
/* The app's bytes per instruction; NaN: unknown, or the sensor measures no traffic. */
double memreport_app_bpi(const struct manager *m, unsigned i);
/* The same as JSON (null: unknown). */
struct json_object *memreport_app_json(const struct manager *m, unsigned i);
/* mem_traffic, mem_traffic_reason and mem_bytes_per_instr (bpi, NaN: unknown) of a run report. */
void memreport_run(const struct manager *m, double bpi, struct json_object *j);
/* The packages' traffic counters and measured bandwidths into the /metrics snapshot. */
void memreport_metrics(const struct manager *m, struct metrics_snapshot *s);
/* The app's last speedup stack as JSON, NULL when there is none yet. */
struct json_object *appstack_json(const struct appstacks *stacks, pid_t pid);
