#define _GNU_SOURCE /* sched_getaffinity, CPU_SET */
#include "pctl/manager.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/appstack.h"
#include "pctl/fsio.h"
#include "pctl/history.h"
#include "pctl/log.h"
#include "pctl/jsonfmt.h"
#include "pctl/metrics.h"
#include "pctl/procguard.h"
#include "pctl/util.h"

/* Intervals a configuration is measured over (after the one that straddles the change). */
#define MANAGER_PROBE_SAMPLES 3
#define MANAGER_HYSTERESIS 0.05
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

/* How long an app ran at one configuration. */
struct mapp_config {
        unsigned cores;
        unsigned freq_khz;
        double run_s;
};

struct mapp {
        uint64_t id;
        pid_t pid;
        char name[16];                 /* printable: what it runs, escaped */
        char comm[16];                 /* /proc/PID/comm as last read, raw */
        char job[MANAGER_JOB_MAX + 1]; /* the batch job it belongs to, "" for none */
        struct policy policy;          /* a copy, without match patterns: the set may be reloaded */
        struct actuator_app *handle;
        struct cpumask cpus;
        unsigned freq_khz;
        uint64_t since_ns;
        unsigned n_configs;
        struct mapp_config configs[MANAGER_RUN_CONFIGS];
        /* pctl history: who it is (looked up once, after `pctl run`'s exec), whether that is
         * known, and the comm it was adopted with when `pctl run` named it before its exec. */
        struct history_key key;
        bool key_tried, have_key;
        char exec_comm[16];
        bool decided; /* the allocator has placed it once */
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
};

/* What is left of an app after it leaves: its estimate and configurations, for a report. */
struct mreport {
        struct mapp app;
        struct estimate e;
        bool have_e;
        uint64_t end_ns;
        unsigned default_cores;
        char why[64];
};

struct manager {
        struct manager_options opt;
        struct platform *pf;
        struct estimator *est;
        struct policy_set policies;
        bool rules; /* some policy has match keys: scan for new processes */

        struct mapp *apps;
        struct allocator_app *alloc; /* parallel to apps */
        unsigned n_apps, cap_apps;
        uint64_t next_id;

        struct cpumask managed_cpus; /* online minus reserved */
        struct sensor_sample sample;
        bool targets_ok;

        pid_t *seen; /* processes seen by the last scan, sorted */
        unsigned n_seen;
        pid_t *ignored; /* released by hand: never matched by a rule again */
        unsigned n_ignored;

        uint64_t start_ns;
        uint64_t decisions, changes;
        /* Decision ticks (decision_ms): the allocator's clock, so that how long a measurement
         * stays fresh does not shrink when early decisions (probes measured) come often. */
        uint64_t ticks;
        unsigned *cpu_freq_khz; /* scratch, per CPU of the sample */
        unsigned n_cpu_freq;
        struct mreport *reports; /* apps that left, oldest first */
        unsigned n_reports;
        struct appstacks *stacks; /* each app's speedup stack; NULL: no thread-state backend */
};

static int pid_cmp(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return (x > y) - (x < y);
}

static bool pid_in(const pid_t *v, unsigned n, pid_t pid)
{
        return n && bsearch(&pid, v, n, sizeof(*v), pid_cmp);
}

static struct mapp *find_app(const struct manager *m, pid_t pid, unsigned *idx)
{
        for (unsigned i = 0; i < m->n_apps; i++) {
                if (m->apps[i].pid == pid) {
                        if (idx)
                                *idx = i;
                        return &m->apps[i];
                }
        }
        return NULL;
}

static bool policies_have_rules(const struct policy_set *s)
{
        for (size_t i = 0; i < s->n; i++)
                for (unsigned k = 0; k < POLICY_MATCH_KINDS; k++)
                        if (s->v[i].match[k].n)
                                return true;
        return false;
}

static void copy_policy(struct policy *dst, const struct policy *src)
{
        *dst = *src;
        memset(dst->match, 0, sizeof(dst->match));
}

static const struct policy *resolve_policy(const struct manager *m, const char *name)
{
        return policy_lookup(&m->policies, name && *name ? name : m->opt.conf.default_policy);
}

/* The thread states for the apps' speedup stacks: the best backend there is. The model
 * machine's are its own backend's, which needs the machine: none here until it is wired. */
static void manager_stacks_open(struct manager *m)
{
        char why[1200];
        int r;

        if (m->pf->sim)
                return;
        r = appstacks_open(NULL, NULL, &m->stacks, why, sizeof(why));
        if (r < 0)
                log_warning_errno(r, "No speedup stacks: %s", why);
        else
                log_info("speedup stacks: thread states from %s", why);
}

int manager_new(const struct manager_options *opt, struct policy_set *policies,
                struct manager **out)
{
        struct estimator_config ecfg = {
            .delta_i_rate = opt->delta_i_rate,
            .delta_i_alpha = opt->delta_i_alpha,
            .ipc1_calibrated = opt->ipc1,
            .power = opt->have_power ? &opt->power : NULL,
            .fit_power = !opt->have_power,
        };
        struct manager *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->opt = *opt;
        m->pf = opt->platform;
        m->est = estimator_new(&ecfg);
        if (!m->est) {
                int r = -errno;

                free(m);
                return r ? r : -ENOMEM;
        }
        if (policies) {
                m->policies = *policies;
                *policies = (struct policy_set){0};
        }
        m->rules = policies_have_rules(&m->policies);
        cpumask_andnot(&m->managed_cpus, &m->pf->topo.online, &opt->conf.reserved_cpus);
        m->start_ns = platform_now_ns(m->pf);
        manager_stacks_open(m);
        *out = m;
        return 0;
}

static void refresh_targets(struct manager *m)
{
        struct sensor_target *t = calloc(m->n_apps ? m->n_apps : 1, sizeof(*t));
        int r;

        if (!t) {
                m->targets_ok = false;
                return;
        }
        for (unsigned i = 0; i < m->n_apps; i++) {
                t[i].kind = SENSOR_TARGET_PID;
                t[i].pid = m->apps[i].pid;
        }
        r = sensor_set_targets(m->pf->sensor, t, m->n_apps);
        /* Without per-process counts the app's own CPUs stand for it (disjoint cpusets). */
        m->targets_ok = r >= 0;
        if (r < 0 && r != -EOPNOTSUPP)
                log_debug_errno(r, "sensor: per-process counts unavailable, using CPUs: %m");
        if (m->stacks) {
                pid_t *pids = calloc(m->n_apps ? m->n_apps : 1, sizeof(*pids));

                for (unsigned i = 0; pids && i < m->n_apps; i++)
                        pids[i] = t[i].pid;
                r = pids ? appstacks_set_pids(m->stacks, pids, m->n_apps) : -ENOMEM;
                /* An app that exited before its threads were listed: released next tick. */
                if (r < 0)
                        log_debug_errno(r, "thread states: cannot watch the apps: %m");
                free(pids);
        }
        free(t);
}

static void remove_app(struct manager *m, unsigned i)
{
        estimator_app_remove(m->est, m->apps[i].id);
        m->n_apps--;
        if (i != m->n_apps) {
                m->apps[i] = m->apps[m->n_apps];
                m->alloc[i] = m->alloc[m->n_apps];
        }
        refresh_targets(m);
}

/* The cores an app gets when nothing is decided for it: all it is allowed. */
static unsigned default_cores(const struct manager *m, const struct mapp *a)
{
        unsigned n = cpumask_count(&m->managed_cpus);

        return a->policy.max_cores && a->policy.max_cores < n ? a->policy.max_cores : n;
}

/* Forgets reports older than MANAGER_REPORT_KEEP_NS. */
static void reports_expire(struct manager *m, uint64_t now_ns)
{
        unsigned k = 0;

        while (k < m->n_reports && m->reports[k].end_ns + MANAGER_REPORT_KEEP_NS < now_ns)
                k++;
        if (!k)
                return;
        memmove(m->reports, m->reports + k, (m->n_reports - k) * sizeof(*m->reports));
        m->n_reports -= k;
}

/* Keeps what a report on app i needs after it is gone; the oldest report goes when full. */
static void report_keep(struct manager *m, unsigned i, const char *why)
{
        const struct estimate *e = estimator_get(m->est, m->apps[i].id);
        uint64_t now_ns = platform_now_ns(m->pf);
        struct mreport *r;

        reports_expire(m, now_ns);
        if (!m->reports) {
                m->reports = calloc(MANAGER_REPORTS, sizeof(*m->reports));
                if (!m->reports)
                        return; /* no report then: `pctl run` says pctld has none */
        }
        if (m->n_reports == MANAGER_REPORTS)
                memmove(m->reports, m->reports + 1, --m->n_reports * sizeof(*m->reports));
        r = &m->reports[m->n_reports++];
        *r = (struct mreport){.app = m->apps[i],
                              .have_e = e != NULL,
                              .end_ns = now_ns,
                              .default_cores = default_cores(m, &m->apps[i])};
        if (e)
                r->e = *e;
        (void)strscpy(r->why, why, sizeof(r->why));
}

static struct allocator_ctx decision_ctx(struct manager *m);
static int decide_apply(struct manager *m);
static struct json_object *appstack_json(const struct appstacks *stacks, pid_t pid);

/* The work inflation of app i from its stored whole runs and, when ended is true, this one
 * (unseen_s: the time it was managed but not seen); the estimator corrects p_run by it. Returns
 * this run when it is one to store (*have_cur). */
static void work_inflation_update(struct manager *m, unsigned i, bool ended,
                                  struct history_run *cur, bool *have_cur)
{
        struct mapp *a = &m->apps[i];
        const struct estimate *e = estimator_get(m->est, a->id);
        struct history_run runs[HISTORY_RUNS_KEEP + 1];
        struct estimate_work_run w[HISTORY_RUNS_KEEP + 1];
        unsigned n = 0, ia, ib;
        double x, err;
        char msg[640];
        int r;

        *have_cur = false;
        r = history_runs(m->opt.history, &a->key, runs, HISTORY_RUNS_KEEP, &n, msg, sizeof(msg));
        if (r < 0) {
                log_warning("%s, ignoring", msg);
                n = 0;
        }
        if (ended && a->whole_run && e) {
                double managed_s = (platform_now_ns(m->pf) - a->since_ns) / 1e9;
                struct estimate_work_run c;

                if (estimate_work_run(e, fmax(managed_s - e->run_s, 0), &c) == 0) {
                        *cur = (struct history_run){.instructions = c.instructions,
                                                    .instructions_err = c.instructions_err,
                                                    .cores = c.cores};
                        for (unsigned k = 0; k < c.n_bins && k < HISTORY_RUN_BINS; k++) {
                                cur->bins[k].cores = c.bins[k].cores;
                                cur->bins[k].instructions = c.bins[k].instructions;
                                cur->n_bins = k + 1;
                        }
                        runs[n++] = *cur;
                        *have_cur = true;
                }
        }
        for (unsigned k = 0; k < n; k++) {
                w[k] = (struct estimate_work_run){.instructions = runs[k].instructions,
                                                  .instructions_err = runs[k].instructions_err,
                                                  .cores = runs[k].cores};
                for (unsigned q = 0; q < runs[k].n_bins && q < ESTIMATE_RUN_BINS; q++) {
                        w[k].bins[q].cores = runs[k].bins[q].cores;
                        w[k].bins[q].instructions = runs[k].bins[q].instructions;
                        w[k].n_bins = q + 1;
                }
        }
        r = estimate_work_inflation(w, n, &x, &err, &ia, &ib);
        if (r == -ENODATA)
                return;
        if (r == 0)
                r = estimator_set_work_inflation(m->est, a->id, x);
        if (r < 0) {
                log_debug_errno(r, "%s (pid %d): no work inflation from %u runs: %m", a->name,
                                (int)a->pid, n);
                return;
        }
        a->infl.known = true;
        a->infl.x = x;
        a->infl.err = err;
        a->infl.a = runs[ia];
        a->infl.b = runs[ib];
        log_debug("%s (pid %d): work inflation %.4f ± %.4f per added core (runs at %.2f and %.2f "
                  "cores)",
                  a->name, (int)a->pid, x, err, runs[ia].cores, runs[ib].cores);
}

/* Records what this run of app i taught (pctl history): its best measured configuration and
 * score, P̂, frequency sensitivity, its last speedup stack where it has one; when it ended
 * (seen whole, with counters), its instructions for measuring extra parallel work. A history
 * that refuses (locked, read-only, full) is reported; the apps run on as they were. */
static void history_record(struct manager *m, unsigned i, bool ended)
{
        const struct mapp *a = &m->apps[i];
        const struct estimate *e;
        struct allocator_ctx ctx = decision_ctx(m);
        struct allocator_point best;
        struct history_entry h = {.key = a->key};
        struct json_object *stack;
        char err[640];
        int r;

        if (!m->opt.history || !a->have_key)
                return;
        if (ended) {
                struct history_run run;
                bool have_run;

                work_inflation_update(m, i, true, &run, &have_run);
                if (have_run &&
                    history_store_run(m->opt.history, &a->key, &run, err, sizeof(err)) < 0)
                        log_warning("%s; pctld runs on without it", err);
        }
        if (!allocator_best(&ctx, &m->alloc[i], &best)) {
                const struct allocator_app *al = &m->alloc[i];

                /* No score measured (no counters: busy time only): the configuration the
                 * model settled it at is what was learned; still learning, nothing was. */
                if (al->learning || al->exploring || !al->searching || !al->cores)
                        return;
                best = (struct allocator_point){
                    .cores = al->cores, .freq_khz = al->freq_khz, .score = NAN};
        }
        e = estimator_get(m->est, a->id);
        (void)strscpy(h.objective, objective_to_string(a->policy.objective), sizeof(h.objective));
        h.p = e && (e->known & ESTIMATE_P_LS) ? e->p_ls : NAN;
        h.mem_fraction = e && isfinite(e->mem_fraction) ? e->mem_fraction : NAN;
        h.best_cores = best.cores;
        h.best_freq_khz = best.freq_khz;
        h.best_score = best.score;
        stack = appstack_json(m->stacks, a->pid);
        h.stack_json =
            stack ? (char *)json_object_to_json_string_ext(stack, JSON_C_TO_STRING_PLAIN) : NULL;
        r = history_store(m->opt.history, &h, err, sizeof(err));
        json_object_put(stack); /* h.stack_json was the stack's own string */
        if (r < 0)
                log_warning("%s; pctld runs on without it", err);
        else
                log_debug("history: %s (%s): best %u cores at %u MHz recorded", a->name, a->key.exe,
                          best.cores, best.freq_khz / 1000);
}

/* Looks app i up in the history once it is known who it is: a past run's best configuration
 * becomes the allocator's starting point (allocator_app.hint_cores). */
static void history_recall(struct manager *m, unsigned i)
{
        struct mapp *a = &m->apps[i];
        struct allocator_app *al = &m->alloc[i];
        struct history_entry h;
        char err[640], cal[32];
        int r;

        if (!m->opt.history || a->key_tried)
                return;
        /* `pctl run`'s child is adopted before its exec: who it is shows after it. */
        if (a->exec_comm[0] && strcmp(a->comm, a->exec_comm) == 0)
                return;
        a->key_tried = true;
        r = platform_proc_identity(m->pf, a->pid, a->key.exe, sizeof(a->key.exe),
                                   &a->key.args_hash);
        if (r < 0) {
                log_debug_errno(r, "history: cannot tell who %s (pid %d) is, not remembered: %m",
                                a->name, (int)a->pid);
                return;
        }
        (void)strscpy(a->key.policy, a->policy.name, sizeof(a->key.policy));
        snprintf(cal, sizeof(cal), "%016llx",
                 (unsigned long long)history_hash(m->opt.calibration, strlen(m->opt.calibration)));
        (void)strscpy(a->key.calibration, cal, sizeof(a->key.calibration));
        a->have_key = true;
        {
                struct history_run unused;
                bool none;

                work_inflation_update(m, i, false, &unused, &none);
        }
        r = history_lookup(m->opt.history, &a->key, &h, err, sizeof(err));
        if (r == -ENOENT)
                return;
        if (r < 0) {
                log_warning("%s, ignoring", err);
                return;
        }
        if (h.best_cores && strcmp(h.objective, objective_to_string(a->policy.objective)) == 0) {
                al->hint_cores = h.best_cores;
                al->hint_freq_khz = h.best_freq_khz;
                al->hint_score = h.best_score;
                char mhz[32] = "";

                if (h.best_freq_khz)
                        snprintf(mhz, sizeof(mhz), " at %u MHz", h.best_freq_khz / 1000);
                log_app_info(a->name, (int)a->pid, a->policy.name,
                             "%s (pid %d): from history (%u past runs, P %.2f): starts at %u "
                             "cores%s",
                             a->name, (int)a->pid, h.runs, h.p, h.best_cores, mhz);
        }
        history_entry_clear(&h);
}

static void release_app(struct manager *m, unsigned i, const char *why)
{
        struct mapp *a = &m->apps[i];
        int r;

        history_record(m, i, strcmp(why, MANAGER_WHY_EXITED) == 0);
        r = a->handle ? m->pf->actuator_ops->release(m->pf->actuator, a->handle) : 0;

        report_keep(m, i, why);

        if (r < 0)
                log_warning_errno(r, "Failed to give %s (pid %d) back as it was: %m", a->name,
                                  (int)a->pid);
        log_app_info(a->name, (int)a->pid, a->policy.name, "released %s (pid %d): %s", a->name,
                     (int)a->pid, why);
        remove_app(m, i);
}

void manager_free(struct manager *m)
{
        if (!m)
                return;
        while (m->n_apps)
                release_app(m, m->n_apps - 1, "pctld is stopping");
        estimator_free(m->est);
        appstacks_close(m->stacks);
        free(m->cpu_freq_khz);
        policy_set_free(&m->policies);
        sensor_sample_free(&m->sample);
        free(m->apps);
        free(m->alloc);
        free(m->seen);
        free(m->ignored);
        free(m->reports);
        free(m);
}

/* The frequency the app's first CPU runs at, 0 when unknown. */
static unsigned app_freq(const struct manager *m, const struct cpumask *cpus)
{
        const struct actuator *a = m->pf->actuator;
        int first = cpumask_next(cpus, 0);

        for (unsigned d = 0; first >= 0 && d < a->n_domains; d++)
                if (cpumask_test(&a->domains[d].cpus, (unsigned)first))
                        return a->domains[d].cur_khz;
        return 0;
}

/* 0 when pid may be managed; else why not (procguard.h). The model machine's processes are
 * its own: only real ones can be what we must not touch. Callers ask once, before adopt_as. */
static int may_manage(const struct manager *m, pid_t pid, char *err, size_t err_size)
{
        return m->pf->sim ? 0 : procguard_check(pid, err, err_size);
}

/* The monitor objective changes nothing: on a real machine such an app is only observed, never
 * handed to the actuator (no move, no pin, no unit property). */
static bool observe_only(const struct manager *m, const struct policy *pol)
{
        return !m->pf->sim && pol->objective == OBJECTIVE_MONITOR;
}

/* Where an observed app may run, as the kernel says; all-zero when unknown. */
static void observed_cpus(pid_t pid, struct cpumask *out)
{
        cpu_set_t set;

        cpumask_zero(out);
        if (sched_getaffinity(pid, sizeof(set), &set) < 0)
                return;
        for (int c = 0; c < CPU_SETSIZE && c < CPUMASK_MAX; c++)
                if (CPU_ISSET(c, &set))
                        cpumask_set(out, (unsigned)c);
}

/* After a reload changed an app's policy: an app that is no longer monitored is handed to the
 * actuator, one that now is monitored is given back. */
static void sync_actuation(struct manager *m, struct mapp *a)
{
        bool observe = observe_only(m, &a->policy);
        int r;

        if (observe && a->handle) {
                r = m->pf->actuator_ops->release(m->pf->actuator, a->handle);
                if (r < 0)
                        log_warning("%s (pid %d): cannot give it back as it was: %s", a->name,
                                    (int)a->pid, actuator_strerror(m->pf->actuator, r));
                a->handle = NULL;
                observed_cpus(a->pid, &a->cpus);
        } else if (!observe && !a->handle) {
                r = m->pf->actuator_ops->adopt(m->pf->actuator, a->pid, a->name, &a->handle);
                if (r < 0) {
                        a->handle = NULL;
                        log_warning("%s (pid %d): policy %s, but it cannot be taken over: %s",
                                    a->name, (int)a->pid, a->policy.name,
                                    actuator_strerror(m->pf->actuator, r));
                } else {
                        m->pf->actuator_ops->get_cpus(m->pf->actuator, a->handle, &a->cpus);
                }
        }
}

static int adopt_as(struct manager *m, pid_t pid, const struct policy *pol, const char *exec_name,
                    const char *how, char *err, size_t err_size)
{
        struct actuator_app *handle = NULL;
        struct mapp *a;
        char name[16] = "?", comm[16] = "?";
        int r;

        if (find_app(m, pid, NULL)) {
                snprintf(err, err_size, "pid %d is already managed", (int)pid);
                return -EEXIST;
        }
        if (!platform_proc_alive(m->pf, pid)) {
                snprintf(err, err_size, "no process with pid %d", (int)pid);
                return -ESRCH;
        }
        if (m->n_apps == m->cap_apps) {
                unsigned cap = m->cap_apps ? m->cap_apps * 2 : 16;
                struct mapp *apps = realloc(m->apps, cap * sizeof(*apps));
                struct allocator_app *alloc;

                if (!apps)
                        return -ENOMEM;
                m->apps = apps;
                alloc = realloc(m->alloc, cap * sizeof(*alloc));
                if (!alloc)
                        return -ENOMEM;
                m->alloc = alloc;
                m->cap_apps = cap;
        }
        platform_proc_comm(m->pf, pid, comm, sizeof(comm));
        /* `pctl run` hands its child over before exec and says what it will run. */
        strescape(name, sizeof(name), exec_name ? exec_name : comm,
                  strlen(exec_name ? exec_name : comm));
        /* A command pctl run starts gets a unit of its own where there are units. */
        if (observe_only(m, pol))
                r = 0;
        else
                r = (exec_name && m->pf->actuator_ops->adopt_new ? m->pf->actuator_ops->adopt_new
                                                                 : m->pf->actuator_ops->adopt)(
                    m->pf->actuator, pid, name, &handle);
        if (r < 0) {
                snprintf(err, err_size, "cannot take over pid %d: %s", (int)pid,
                         actuator_strerror(m->pf->actuator, r));
                return r;
        }
        a = &m->apps[m->n_apps];
        *a = (struct mapp){
            .id = ++m->next_id, .pid = pid, .handle = handle, .since_ns = platform_now_ns(m->pf)};
        (void)strscpy(a->name, name, sizeof(a->name));
        (void)strscpy(a->comm, comm, sizeof(a->comm));
        copy_policy(&a->policy, pol);
        if (exec_name)
                (void)strscpy(a->exec_comm, comm, sizeof(a->exec_comm));
        a->whole_run = exec_name || m->pf->sim;
        if (handle)
                m->pf->actuator_ops->get_cpus(m->pf->actuator, handle, &a->cpus);
        else
                observed_cpus(pid, &a->cpus);
        a->freq_khz = app_freq(m, &a->cpus);
        m->alloc[m->n_apps] = (struct allocator_app){.id = a->id};
        r = estimator_app_add(m->est, a->id);
        if (r < 0) {
                if (handle)
                        m->pf->actuator_ops->release(m->pf->actuator, handle);
                snprintf(err, err_size, "cannot track pid %d: %s", (int)pid, strerror(-r));
                return r;
        }
        m->n_apps++;
        refresh_targets(m);
        log_app_info(a->name, (int)pid, a->policy.name,
                     "managing %s (pid %d) with policy %s (%s), %s", a->name, (int)pid,
                     a->policy.name, objective_to_string(a->policy.objective), how);
        /* Known from a past run (already exec'd: adopted by PID, by a rule, on the model
         * machine): placed at once, not after its first sample. */
        m->alloc[m->n_apps - 1].policy = &a->policy;
        history_recall(m, m->n_apps - 1);
        if (m->alloc[m->n_apps - 1].hint_cores)
                (void)decide_apply(m);
        return 0;
}

int manager_adopt_named(struct manager *m, pid_t pid, const char *policy, const char *exec_name,
                        char *err, size_t err_size)
{
        const struct policy *pol = resolve_policy(m, policy);
        int r;

        if (!pol) {
                snprintf(err, err_size, "no policy named '%s' (see pctl policy list)",
                         policy && *policy ? policy : m->opt.conf.default_policy);
                return -ENOENT;
        }
        /* A process that is gone is adopt_as's to say. */
        r = may_manage(m, pid, err, err_size);
        if (r < 0 && r != -ESRCH)
                return r;
        /* A monitor rule only watches: asking for the app to be managed takes it over (else
         * a `pctl run` inside a watched service lost the race to the rule's scan). */
        {
                unsigned i;
                struct mapp *a = find_app(m, pid, &i);

                if (a && !a->handle && observe_only(m, &a->policy) && !observe_only(m, pol))
                        release_app(m, i, "taken over on request");
        }
        return adopt_as(m, pid, pol, exec_name, "on request", err, err_size);
}

int manager_adopt(struct manager *m, pid_t pid, const char *policy, char *err, size_t err_size)
{
        return manager_adopt_named(m, pid, policy, NULL, err, err_size);
}

bool manager_job_valid(const char *job)
{
        size_t n = strnlen(job, MANAGER_JOB_MAX + 1);

        if (n == 0 || n > MANAGER_JOB_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (job[i] <= ' ' || job[i] > '~')
                        return false;
        return true;
}

int manager_set_job(struct manager *m, pid_t pid, const char *job, char *err, size_t err_size)
{
        struct mapp *a = find_app(m, pid, NULL);

        if (!manager_job_valid(job)) {
                snprintf(err, err_size, "a job tag is 1 to %d printable characters without spaces",
                         MANAGER_JOB_MAX);
                return -EINVAL;
        }
        if (!a) {
                snprintf(err, err_size, "pid %d is not managed", (int)pid);
                return -ENOENT;
        }
        (void)strscpy(a->job, job, sizeof(a->job));
        return 0;
}

int manager_release(struct manager *m, pid_t pid, char *err, size_t err_size)
{
        unsigned i;

        if (!find_app(m, pid, &i)) {
                struct proc_facts f;

                if (!m->pf->sim && proc_facts_read(pid, NULL, &f) == 0 && f.tgid != pid &&
                    find_app(m, f.tgid, NULL))
                        snprintf(err, err_size,
                                 "pid %d is not managed: it is a thread of managed process %d, "
                                 "release that",
                                 (int)pid, (int)f.tgid);
                else
                        snprintf(err, err_size, "pid %d is not managed", (int)pid);
                return -ENOENT;
        }
        if (!pid_in(m->ignored, m->n_ignored, pid)) {
                pid_t *v = realloc(m->ignored, (m->n_ignored + 1) * sizeof(*v));

                if (v) {
                        v[m->n_ignored++] = pid;
                        qsort(v, m->n_ignored, sizeof(*v), pid_cmp);
                        m->ignored = v;
                }
        }
        release_app(m, i, "released on request");
        return 0;
}

void manager_set_policies(struct manager *m, struct policy_set *policies)
{
        policy_set_free(&m->policies);
        m->policies = *policies;
        *policies = (struct policy_set){0};
        m->rules = policies_have_rules(&m->policies);
        for (unsigned i = 0; i < m->n_apps; i++) {
                const struct policy *pol = policy_lookup(&m->policies, m->apps[i].policy.name);

                if (!pol) {
                        log_warning("policy %s of %s (pid %d) is gone, using %s",
                                    m->apps[i].policy.name, m->apps[i].name, (int)m->apps[i].pid,
                                    m->opt.conf.default_policy);
                        pol = resolve_policy(m, NULL);
                }
                if (pol) {
                        copy_policy(&m->apps[i].policy, pol);
                        sync_actuation(m, &m->apps[i]);
                }
        }
}

int manager_reconfigure(struct manager *m, const struct config *conf, struct policy_set *policies,
                        char *err, size_t err_size)
{
        struct cpumask managed;
        int r;

        r = policy_check_default(policies, conf->default_policy, conf->policies_dir, err, err_size);
        if (r < 0)
                return -EINVAL;
        cpumask_andnot(&managed, &m->pf->topo.online, &conf->reserved_cpus);
        if (cpumask_empty(&managed)) {
                snprintf(err, err_size, "[daemon] reserved_cpus leaves no CPU to manage");
                return -EINVAL;
        }
        (void)strscpy(m->opt.conf.default_policy, conf->default_policy,
                      sizeof(m->opt.conf.default_policy));
        m->opt.conf.reserved_cpus = conf->reserved_cpus;
        if (!cpumask_equal(&managed, &m->managed_cpus)) {
                char list[CPUMASK_LIST_MAX];

                m->managed_cpus = managed;
                cpumask_format(&managed, list, sizeof(list));
                log_info("managing CPUs %s from now on", list);
        }
        manager_set_policies(m, policies);
        return 0;
}

/* The power model predictions use: declared or calibrated, else the one the estimator fitted,
 * else none. */
static const struct model_power *manager_power_model(const struct manager *m, const char **src)
{
        bool fitted;
        const struct model_power *pm = estimator_power_model(m->est, &fitted);

        if (src)
                *src = !pm ? NULL : fitted ? "fitted" : m->opt.power_source;
        return pm;
}

/* What the estimator is told of the machine beside the sample: the CPUs apps hold, the top
 * frequency they run at and, for the online power fit, each CPU's frequency (its domain's). */
static void machine_view(struct manager *m, struct estimator_machine *mach)
{
        const struct actuator *act = m->pf->actuator;
        const struct sensor_sample *s = &m->sample;

        *mach = (struct estimator_machine){.n_managed = m->n_apps};
        for (unsigned i = 0; i < m->n_apps; i++) {
                cpumask_or(&mach->held, &mach->held, &m->apps[i].cpus);
                if (m->apps[i].freq_khz > mach->top_app_freq_khz)
                        mach->top_app_freq_khz = m->apps[i].freq_khz;
        }
        /* Only the online power fit needs them, and it runs without a configured model. */
        if (m->opt.have_power || !s->energy_measured)
                return;
        if (m->n_cpu_freq < s->n_cpus) {
                unsigned *v = realloc(m->cpu_freq_khz, s->n_cpus * sizeof(*v));

                if (!v)
                        return; /* the online fit skips this interval */
                m->cpu_freq_khz = v;
                m->n_cpu_freq = s->n_cpus;
        }
        for (unsigned c = 0; c < s->n_cpus; c++) {
                m->cpu_freq_khz[c] = 0;
                for (unsigned d = 0; d < act->n_domains; d++)
                        if (cpumask_test(&act->domains[d].cpus, c))
                                m->cpu_freq_khz[c] = act->domains[d].cur_khz;
        }
        mach->cpu_freq_khz = m->cpu_freq_khz;
}

/* The apps the estimator hears about: those with CPUs. In their start-up, only for the whole
 * run's figures: it says little of the steady state the allocator needs. */
static unsigned app_views(const struct manager *m, struct estimator_app_view *views)
{
        unsigned n = 0;

        for (unsigned i = 0; i < m->n_apps; i++) {
                if (cpumask_empty(&m->apps[i].cpus))
                        continue;
                views[n++] = (struct estimator_app_view){
                    .id = m->apps[i].id,
                    .cpus = m->apps[i].cpus,
                    .freq_khz = m->apps[i].freq_khz,
                    .target = m->targets_ok && i < m->sample.n_targets ? (int)i : -1,
                    .run_only = m->sample.timestamp_ns < m->apps[i].since_ns + MANAGER_WARMUP_NS,
                    .counted_since_ns = m->targets_ok ? m->apps[i].since_ns : 0,
                };
        }
        return n;
}

/* Adds the interval to the time the app ran at its configuration. When all slots are taken,
 * the time goes to the one with the same core count, else to the last. */
static void app_config_add(struct mapp *a, double run_s)
{
        unsigned cores = cpumask_count(&a->cpus), k;

        for (k = 0; k < a->n_configs; k++)
                if (a->configs[k].cores == cores && a->configs[k].freq_khz == a->freq_khz)
                        break;
        if (k == a->n_configs && k < MANAGER_RUN_CONFIGS) {
                a->configs[a->n_configs++] =
                    (struct mapp_config){.cores = cores, .freq_khz = a->freq_khz};
        } else if (k == a->n_configs) {
                for (k = 0; k + 1 < a->n_configs && a->configs[k].cores != cores; k++)
                        ;
        }
        a->configs[k].run_s += run_s;
}

/* The part of the sample's interval the app ran in: from its adoption, and none once its
 * process has exited (its target is measured on no CPU), so that the times of its
 * configurations add up to its run, not to a whole interval past either end. */
static double app_interval_s(const struct manager *m, unsigned i)
{
        const struct mapp *a = &m->apps[i];
        uint64_t dt = m->sample.interval_ns;

        if (m->targets_ok && i < m->sample.n_targets) {
                bool measured = false;

                for (unsigned c = 0; c < m->sample.n_cpus && !measured; c++)
                        measured = sensor_target_cpu(&m->sample, i, c)->measured != 0;
                if (!measured)
                        return 0;
        }
        if (m->sample.timestamp_ns > a->since_ns && m->sample.timestamp_ns - a->since_ns < dt)
                dt = m->sample.timestamp_ns - a->since_ns;
        return (double)dt / 1e9;
}

/* Where an app's power and energy come from. "declared" only for the [power] model of pctl.conf
 * standing in for RAPL: package energy that RAPL measured is "measured", whatever model splits
 * it among the apps (pctl.conf(5), pctld(8)). */
static const char *power_label(const struct estimate *e)
{
        if (e->power_source == ESTIMATE_POWER_MODEL && e->power_declared)
                return "declared";
        return estimate_power_source_name(e->power_source);
}

static bool observe_all(struct manager *m);
static int decide_apply(struct manager *m);

/* Each app's thread states over the interval, towards its speedup stack. */
static void stacks_read(struct manager *m)
{
        struct appstack_view *views;
        int r;

        if (!m->stacks)
                return;
        views = calloc(m->n_apps ? m->n_apps : 1, sizeof(*views));
        if (!views)
                return;
        for (unsigned i = 0; i < m->n_apps; i++) {
                const struct estimate *e = estimator_get(m->est, m->apps[i].id);
                bool counters = e && (e->known & ESTIMATE_SPEEDUP) &&
                                e->speedup_source == ESTIMATE_SPEEDUP_COUNTERS;

                /* Only the counters' speedup (eq. 9) measures work done: busy time over its
                 * maximum counts a thread's run time, not what it lost to the others. Without
                 * it the stack takes the threads' run time, and interference is 0. */
                views[i] = (struct appstack_view){
                    .pid = m->apps[i].pid,
                    .cores = cpumask_count(&m->apps[i].cpus),
                    .speedup = counters ? e->speedup : NAN,
                    /* Memory's share of its time at its clock, where the estimator has
                     * seen it at two clocks or more (docs/stack.md, "Memory"). */
                    .mem_share = counters && (e->known & ESTIMATE_MEM_FRACTION)
                                     ? stack_mem_share_at(e->mem_fraction, e->mem_freq_ref_khz,
                                                          m->apps[i].freq_khz)
                                     : NAN,
                };
        }
        r = appstacks_read(m->stacks, views, m->n_apps);
        if (r < 0)
                log_debug_errno(r, "thread states: interval skipped: %m");
        free(views);
}

/* Apps that exited are released (not an error: they are simply no longer managed); an app
 * that exec'd something else is named by it, said once. Only a change of comm renames: a
 * name `pctl run` gave stays until the exec. One read of /proc per app. */
static void refresh_apps(struct manager *m)
{
        for (unsigned i = m->n_apps; i-- > 0;) {
                struct mapp *a = &m->apps[i];
                char comm[sizeof(a->comm)], name[sizeof(a->name)];
                int r;

                if (!platform_proc_state(m->pf, a->pid, comm, sizeof(comm))) {
                        release_app(m, i, MANAGER_WHY_EXITED);
                        continue;
                }
                /* Affinity: threads and children born since take the app's CPUs; a PID that
                 * now names another process is the app gone. */
                r = a->handle ? m->pf->actuator_ops->refresh(m->pf->actuator, a->handle) : 0;
                if (actuator_error_is_gone(r)) {
                        release_app(m, i, MANAGER_WHY_EXITED);
                        continue;
                }
                if (r < 0)
                        log_debug("%s (pid %d): %s", a->name, (int)a->pid,
                                  actuator_strerror(m->pf->actuator, r));
                if (strcmp(comm, "?") == 0 || strcmp(comm, a->comm) == 0)
                        continue;
                (void)strscpy(a->comm, comm, sizeof(a->comm));
                strescape(name, sizeof(name), comm, strlen(comm));
                if (strcmp(name, a->name) == 0)
                        continue;
                log_info("pid %d now runs %s (was %s)", (int)a->pid, name, a->name);
                (void)strscpy(a->name, name, sizeof(a->name));
        }
}

/* The tick: one sample from counters to cpusets. Sensor read -> estimator (the apps'
 * estimates and the machine's power) -> allocator -> actuators, when a measurement the
 * allocator waits for is complete. */
int manager_sample(struct manager *m)
{
        struct estimator_app_view *views;
        struct estimator_machine mach;
        unsigned n_views;
        int r;

        refresh_apps(m);
        r = sensor_read(m->pf->sensor, &m->sample);
        if (r < 0)
                return r;

        views = calloc(m->n_apps ? m->n_apps : 1, sizeof(*views));
        if (!views)
                return -ENOMEM;
        machine_view(m, &mach);
        n_views = app_views(m, views);
        r = estimator_interval(m->est, &m->sample, &mach, views, n_views);
        free(views);
        for (unsigned i = 0; i < m->n_apps && r >= 0; i++)
                if (!cpumask_empty(&m->apps[i].cpus))
                        app_config_add(&m->apps[i], app_interval_s(m, i));
        if (r < 0) {
                log_debug_errno(r, "estimator: interval skipped: %m");
                return 0;
        }
        stacks_read(m);

        /* A probe whose measurement is complete is left now, not at the next decision tick:
         * an app may run only a few seconds. */
        if (observe_all(m))
                return decide_apply(m);
        return 0;
}

/* Processes started since the last scan that a policy's rules select. */
static void adopt_by_rules(struct manager *m)
{
        struct platform_proc *procs;
        pid_t *seen;
        int n;

        if (!m->rules)
                return;
        procs = malloc(MANAGER_MAX_PROCS * sizeof(*procs));
        seen = procs ? malloc(MANAGER_MAX_PROCS * sizeof(*seen)) : NULL;
        if (!seen) {
                free(procs);
                return;
        }
        n = platform_list_procs(m->pf, procs, MANAGER_MAX_PROCS);
        for (int i = 0; i < n; i++) {
                struct proc_identity id = {.pid = procs[i].pid};
                const struct policy *pol;
                char err[256];

                seen[i] = procs[i].pid;
                if (pid_in(m->seen, m->n_seen, procs[i].pid) ||
                    pid_in(m->ignored, m->n_ignored, procs[i].pid) ||
                    find_app(m, procs[i].pid, NULL) || procs[i].pid == getpid())
                        continue;
                if (m->pf->sim)
                        (void)strscpy(id.comm, procs[i].comm, sizeof(id.comm));
                else if (proc_identity_read(procs[i].pid, &id) < 0)
                        continue; /* gone already */
                pol = policy_match(&m->policies, &id);
                if (!pol)
                        continue;
                /* A rule never selects what must not be managed; that is no news to log. */
                if (may_manage(m, procs[i].pid, err, sizeof(err)) == -EPERM) {
                        log_debug("rule of policy %s matched, not taken: %s", pol->name, err);
                        continue;
                }
                if (adopt_as(m, procs[i].pid, pol, NULL, "matched by its rules", err, sizeof(err)) <
                    0)
                        log_warning("%s, ignoring", err);
        }
        if (n >= 0) {
                qsort(seen, (size_t)n, sizeof(*seen), pid_cmp);
                free(m->seen);
                m->seen = seen;
                m->n_seen = (unsigned)n;
        } else {
                free(seen);
        }
        free(procs);
}

/* Sets each domain to the highest frequency an app on it wants: a shared domain never slows
 * an app below what its policy chose. */
static void apply_freqs(struct manager *m)
{
        struct actuator *act = m->pf->actuator;

        if (!m->opt.dvfs || !act->can_set_freq)
                return;
        for (unsigned d = 0; d < act->n_domains; d++) {
                unsigned want = 0;
                int r;

                for (unsigned i = 0; i < m->n_apps; i++) {
                        struct cpumask both;

                        cpumask_and(&both, &m->apps[i].cpus, &act->domains[d].cpus);
                        if (!cpumask_empty(&both) && m->alloc[i].want_freq_khz > want)
                                want = m->alloc[i].want_freq_khz;
                }
                if (!want || want == act->domains[d].cur_khz)
                        continue;
                r = m->pf->actuator_ops->set_freq(act, d, want);
                if (r < 0)
                        log_warning_errno(r,
                                          "Failed to set frequency domain %u to %u MHz, "
                                          "ignoring: %m",
                                          d, want / 1000);
                else
                        log_info("frequency domain %u: %u MHz", d, want / 1000);
        }
        for (unsigned i = 0; i < m->n_apps; i++)
                m->apps[i].freq_khz = app_freq(m, &m->apps[i].cpus);
}

/* Whether app i's CPUs share a frequency domain with another app's CPUs. */
static bool freq_domain_shared(const struct manager *m, unsigned i)
{
        const struct actuator *act = m->pf->actuator;

        for (unsigned d = 0; d < act->n_domains; d++) {
                if (!cpumask_intersects(&m->apps[i].cpus, &act->domains[d].cpus))
                        continue;
                for (unsigned j = 0; j < m->n_apps; j++)
                        if (j != i && cpumask_intersects(&m->apps[j].cpus, &act->domains[d].cpus))
                                return true;
        }
        return false;
}

/* The managed CPUs of one frequency domain, when there are two or more domains of that size,
 * each a whole package's managed CPUs; 0 otherwise (docs/allocator.md, "A domain of its own"). */
static unsigned domain_cpus(const struct manager *m)
{
        const struct actuator *act = m->pf->actuator;
        unsigned size = 0, domains = 0;

        for (unsigned d = 0; d < act->n_domains; d++) {
                struct cpumask mine, pkg;
                int first;

                cpumask_and(&mine, &act->domains[d].cpus, &m->managed_cpus);
                first = cpumask_next(&mine, 0);
                if (first < 0)
                        continue;
                if ((unsigned)first >= m->pf->topo.n_cpus)
                        return 0;
                topology_package_cpus(&m->pf->topo, m->pf->topo.cpu[first].package, &pkg);
                cpumask_and(&pkg, &pkg, &m->managed_cpus);
                if (!cpumask_equal(&pkg, &mine) || (size && cpumask_count(&mine) != size))
                        return 0;
                size = cpumask_count(&mine);
                domains++;
        }
        return domains >= 2 && size >= 2 ? size : 0;
}

static struct allocator_ctx decision_ctx(struct manager *m)
{
        const unsigned *freqs = NULL;
        struct allocator_ctx ctx = {
            .est = m->est,
            .pm = manager_power_model(m, NULL),
            .power_measured = m->sample.energy_measured,
            .n_cpus = cpumask_count(&m->managed_cpus),
            .hysteresis = MANAGER_HYSTERESIS,
            .decision = m->ticks,
            .n_apps = m->n_apps,
            .probe_samples = MANAGER_PROBE_SAMPLES,
            /* Per-process counts for every app: learners may time-share CPUs. */
            .learners_share = m->targets_ok && m->sample.n_targets == m->n_apps,
        };

        ctx.n_freqs = m->opt.dvfs ? platform_freqs(m->pf, &freqs) : 0;
        ctx.freqs_khz = freqs;
        ctx.domain_cpus = ctx.n_freqs ? domain_cpus(m) : 0;
        return ctx;
}

/* Feeds this interval's measurements to the allocator; true when an app's measurement is
 * complete and a decision now would act on it. */
static bool observe_all(struct manager *m)
{
        struct allocator_ctx ctx = decision_ctx(m);
        bool want = false;

        for (unsigned i = 0; i < m->n_apps; i++) {
                m->alloc[i].policy = &m->apps[i].policy;
                m->alloc[i].cores = cpumask_count(&m->apps[i].cpus);
                m->alloc[i].freq_khz = m->apps[i].freq_khz;
                history_recall(m, i);
                allocator_observe(&ctx, &m->alloc[i]);
                /* A returning app is placed before the first decision tick, too; a new app is
                 * placed at the first sample it is seen in (learners get CPUs of their own when
                 * there is room), not left where it started until the tick. */
                want |= (m->decisions > 0 || m->alloc[i].hint_cores) &&
                        allocator_wants_decision(&ctx, &m->alloc[i]);
                want |= !m->apps[i].decided;
        }
        return want;
}

static int decide_apply(struct manager *m)
{
        struct allocator_ctx ctx;
        struct cpumask *cur = NULL, *next = NULL;
        int r;

        m->decisions++;
        if (m->n_apps == 0)
                return 0;
        observe_all(m);
        log_debug("decision %llu at %.1f s", (unsigned long long)m->decisions,
                  (platform_now_ns(m->pf) - m->start_ns) / 1e9);
        ctx = decision_ctx(m);
        /* Only decisions read it, and CPUs change only at decisions: not worth a sample. */
        for (unsigned i = 0; i < m->n_apps; i++)
                m->alloc[i].freq_shared = ctx.n_freqs && freq_domain_shared(m, i);
        /* Each app's last speedup stack orders its search (docs/allocator.md); on the model
         * machine, pctl sim run hands them over (manager_set_stack). */
        for (unsigned i = 0; m->stacks && i < m->n_apps; i++) {
                const struct stack *st = appstacks_get(m->stacks, m->apps[i].pid);

                if (st)
                        m->alloc[i].stack = *st;
        }
        r = allocator_decide(&ctx, m->alloc, m->n_apps);
        if (r < 0)
                return log_warning_errno(r, "allocator: no plan this decision (%m), keeping "
                                            "the current one");
        for (unsigned i = 0; i < m->n_apps; i++)
                m->apps[i].decided = true;
        cur = calloc(m->n_apps, sizeof(*cur));
        next = calloc(m->n_apps, sizeof(*next));
        if (!cur || !next) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < m->n_apps; i++)
                cur[i] = m->apps[i].cpus;
        r = allocator_place(&m->pf->topo, &m->managed_cpus, m->alloc, cur, next, m->n_apps);
        if (r < 0) {
                log_warning_errno(r, "allocator: cannot place the plan (%m), keeping the "
                                     "current one");
                goto out;
        }
        for (unsigned i = m->n_apps; i-- > 0;) {
                struct mapp *a = &m->apps[i];
                char list[128];

                if (cpumask_equal(&next[i], &a->cpus)) {
                        if (m->alloc[i].changed)
                                log_info("%s (pid %d): %u MHz, %s", a->name, (int)a->pid,
                                         m->alloc[i].want_freq_khz / 1000, m->alloc[i].reason);
                        continue;
                }
                if (!a->handle)
                        continue; /* only observed: its CPUs are not ours to change */
                r = m->pf->actuator_ops->set_cpus(m->pf->actuator, a->handle, &next[i]);
                if (r < 0) {
                        if (actuator_error_is_gone(r)) {
                                release_app(m, i, MANAGER_WHY_EXITED);
                        } else if (actuator_error_is_transient(r)) {
                                log_info("%s (pid %d): cpuset change deferred (%s), retrying "
                                         "next decision",
                                         a->name, (int)a->pid, strerror(-r));
                        } else {
                                char why[160];

                                snprintf(why, sizeof(why), "cannot set its CPUs: %s", strerror(-r));
                                log_error("%s (pid %d): %s; no longer managed", a->name,
                                          (int)a->pid, why);
                                release_app(m, i, why);
                        }
                        continue;
                }
                a->cpus = next[i];
                m->changes++;
                cpumask_format(&a->cpus, list, sizeof(list));
                log_app_info(a->name, (int)a->pid, a->policy.name, "%s (pid %d): CPUs %s (%u), %s",
                             a->name, (int)a->pid, list, cpumask_count(&a->cpus),
                             m->alloc[i].reason);
        }
        apply_freqs(m);
        r = 0;
out:
        free(cur);
        free(next);
        return r;
}

int manager_decide(struct manager *m)
{
        m->ticks++;
        adopt_by_rules(m);
        return decide_apply(m);
}

unsigned manager_n_apps(const struct manager *m)
{
        return m->n_apps;
}
uint64_t manager_decisions(const struct manager *m)
{
        return m->decisions;
}
uint64_t manager_changes(const struct manager *m)
{
        return m->changes;
}

const char *manager_energy(const struct manager *m, double *energy_j)
{
        const struct estimator_platform *pl = estimator_platform(m->est);

        *energy_j = NAN;
        if (pl && pl->energy_measured && isfinite(pl->energy_j)) {
                *energy_j = pl->energy_j;
                return "measured";
        }
        if (!m->opt.have_power)
                return NULL;
        *energy_j = pl->model_energy_j;
        return m->opt.power_source;
}

bool manager_from_history(const struct manager *m, pid_t pid)
{
        unsigned i;

        return find_app(m, pid, &i) && m->alloc[i].from_history;
}

const struct estimate *manager_estimate(const struct manager *m, pid_t pid)
{
        const struct mapp *a = find_app(m, pid, NULL);

        return a ? estimator_get(m->est, a->id) : NULL;
}

int manager_set_stack(struct manager *m, pid_t pid, const struct stack *s)
{
        unsigned i;

        if (!find_app(m, pid, &i))
                return -ESRCH;
        m->alloc[i].stack = *s;
        return 0;
}

/* The objective's predicted gain of the current configuration over the app's baseline (all
 * its allowed cores at the top frequency), in percent; NaN when the model cannot say. */
static double app_gain(const struct manager *m, unsigned i)
{
        const struct allocator_app *al = &m->alloc[i];
        const struct mapp *a = &m->apps[i];
        const struct model_power *pm = manager_power_model(m, NULL);
        const unsigned *freqs = NULL;
        unsigned n_freqs = m->opt.dvfs ? platform_freqs(m->pf, &freqs) : 0;
        unsigned max_cores = cpumask_count(&m->managed_cpus);
        struct model_prediction base, now;
        double s_base, s_now;

        if (a->policy.max_cores && a->policy.max_cores < max_cores)
                max_cores = a->policy.max_cores;
        if (estimator_predict(m->est, a->id, max_cores, n_freqs ? freqs[n_freqs - 1] : 0, pm,
                              &base) < 0 ||
            estimator_predict(m->est, a->id, cpumask_count(&a->cpus), a->freq_khz, pm, &now) < 0)
                return NAN;
        if (objective_score_prediction(al->effective, &base, &s_base) < 0 ||
            objective_score_prediction(al->effective, &now, &s_now) < 0 || s_base == 0)
                return NAN;
        return 100.0 * (s_base - s_now) / fabs(s_base);
}

static struct json_object *json_history_run(const struct history_run *r)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "cores", jsonfmt_double(r->cores));
        json_object_object_add(o, "instructions", jsonfmt_double(r->instructions));
        json_object_object_add(o, "instructions_err", jsonfmt_double(r->instructions_err));
        /* null: the run reported on. */
        json_object_object_add(o, "ended_s",
                               r->updated_s ? json_object_new_int64(r->updated_s) : NULL);
        return o;
}

/* Extra parallel work (docs/estimator.md): the run's instructions, the inflation measured
 * across whole runs and the runs it comes from, p_run before the correction, and a note on
 * what the speedup's source can and cannot see. */
static void json_work_inflation(struct json_object *j, const struct mapp *a,
                                const struct estimate *e)
{
        bool run_i0 = e && (e->known & ESTIMATE_RUN_I0);
        bool infl = e && (e->known & ESTIMATE_WORK_INFLATION) && a->infl.known;
        struct json_object *runs = NULL;
        char note[320];
        const char *text = NULL;

        json_object_object_add(j, "run_instructions", jsonfmt_double(run_i0 ? e->run_i0 : NAN));
        json_object_object_add(j, "run_mean_cores",
                               jsonfmt_double(run_i0 ? 1 + e->run_i0_m1 / e->run_i0 : NAN));
        json_object_object_add(j, "work_inflation", jsonfmt_double(infl ? a->infl.x : NAN));
        json_object_object_add(j, "work_inflation_error", jsonfmt_double(infl ? a->infl.err : NAN));
        if (infl) {
                runs = json_object_new_array();
                json_object_array_add(runs, json_history_run(&a->infl.a));
                json_object_array_add(runs, json_history_run(&a->infl.b));
        }
        json_object_object_add(j, "work_inflation_runs", runs);
        json_object_object_add(j, "p_run_uncorrected",
                               jsonfmt_double(infl ? e->p_run_uncorrected : NAN));
        if (infl) {
                snprintf(note, sizeof(note),
                         "extra work measured: %.4f more instructions per useful one per added "
                         "core (whole runs at %.1f and %.1f cores); p_run corrected for it",
                         a->infl.x, a->infl.a.cores, a->infl.b.cores);
                text = note;
        } else if (e && e->speedup_source == ESTIMATE_SPEEDUP_BUSY) {
                /* Busy time counts the extra work a parallel run may do as parallel work. */
                text = "busy time cannot see extra work a parallel run does: P may read high";
        } else if (e && e->speedup_source == ESTIMATE_SPEEDUP_COUNTERS) {
                text = "extra work a parallel run does counts as speedup until whole runs of "
                       "this command at core counts 0.5 or more apart are compared: P may read "
                       "high";
        }
        json_object_object_add(j, "speedup_note", jsonfmt_string(text));
}

/* The whole run's figures of an app, running or gone at end_ns: P of the run with the range
 * the time not seen leaves (or, with its parent's totals, completed over that time), and the
 * configurations it ran at. */
static void json_run(const struct manager *m, struct json_object *j, const struct mapp *a,
                     const struct estimate *e, uint64_t end_ns,
                     const struct manager_run_totals *totals)
{
        double managed_s = (end_ns - a->since_ns) / 1e9, conf = NAN, lo, hi;
        double speedup_run = e && (e->known & ESTIMATE_SPEEDUP_RUN) ? e->speedup_run : NAN;
        double p_run = e && (e->known & ESTIMATE_P_RUN) ? e->p_run : NAN;
        double unseen_s = NAN, unseen_cpu_s = NAN;
        struct json_object *configs = json_object_new_array();
        unsigned cores = cpumask_count(&a->cpus);

        /* The part pctld did not see, from what the command's parent measured of it: the
         * figures then hold the whole run, and no range is left. */
        if (totals && e) {
                unseen_s = fmax(totals->wall_s - e->run_s, 0);
                unseen_cpu_s = fmax(totals->cpu_s - e->run_busy_s, 0);
                if (estimate_run_complete(e, unseen_s, unseen_cpu_s,
                                          cores ? cores : e->run_max_cores, &speedup_run,
                                          &p_run) == 0)
                        conf = 0;
                else
                        unseen_s = unseen_cpu_s = NAN;
        }
        if (isnan(conf) && isfinite(p_run) &&
            estimate_p_run_range(e, fmax(managed_s - e->run_s, 0), e->run_max_cores, &lo, &hi) == 0)
                conf = fmax(e->p_run - lo, hi - e->p_run);
        json_object_object_add(j, "managed_s", jsonfmt_double(managed_s));
        json_object_object_add(j, "seen_s", jsonfmt_double(e ? e->run_s : NAN));
        json_object_object_add(j, "speedup_run", jsonfmt_double(speedup_run));
        json_object_object_add(j, "p_run", jsonfmt_double(p_run));
        json_object_object_add(j, "p_run_confidence", jsonfmt_double(conf));
        /* pctld's own figure over the time it saw, where the run was completed. */
        json_object_object_add(j, "p_run_seen",
                               jsonfmt_double(isfinite(unseen_s) ? e->p_run : NAN));
        json_object_object_add(j, "completed_s", jsonfmt_double(unseen_s));
        json_object_object_add(j, "completed_cpu_s", jsonfmt_double(unseen_cpu_s));
        json_work_inflation(j, a, e);
        for (unsigned k = 0; k < a->n_configs; k++) {
                struct json_object *c = json_object_new_object();

                json_object_object_add(c, "cores", json_object_new_uint64(a->configs[k].cores));
                json_object_object_add(c, "freq_mhz",
                                       a->configs[k].freq_khz
                                           ? json_object_new_uint64(a->configs[k].freq_khz / 1000)
                                           : NULL);
                json_object_object_add(c, "s", jsonfmt_double(a->configs[k].run_s));
                json_object_array_add(configs, c);
        }
        json_object_object_add(j, "configs", configs);
        (void)m;
}

/* Whether the app ran only as its default (all its allowed cores, the top frequency when
 * pctld sets frequencies): then the run is its own baseline. */
static bool ran_default_only(const struct manager *m, const struct mapp *a, unsigned dflt_cores)
{
        const unsigned *freqs = NULL;
        unsigned n_freqs = m->opt.dvfs ? platform_freqs(m->pf, &freqs) : 0;

        for (unsigned k = 0; k < a->n_configs; k++)
                if (a->configs[k].cores != dflt_cores ||
                    (n_freqs && a->configs[k].freq_khz &&
                     a->configs[k].freq_khz != freqs[n_freqs - 1]))
                        return false;
        return a->n_configs > 0;
}

int manager_report(const struct manager *m, pid_t pid, const struct manager_run_totals *totals,
                   struct json_object *j, char *err, size_t err_size)
{
        uint64_t now_ns = platform_now_ns(m->pf);
        const struct mreport *rep = NULL;
        const struct mapp *a;
        const struct estimate *e;
        const char *energy_src = NULL;
        double energy_j = NAN, run_s;
        unsigned dflt;
        unsigned i;
        bool exited;

        if ((a = find_app(m, pid, &i))) {
                e = estimator_get(m->est, a->id);
                dflt = default_cores(m, a);
        } else {
                /* The newest report of that pid, if still kept. */
                for (unsigned k = m->n_reports; k-- > 0 && !rep;)
                        if (m->reports[k].app.pid == pid &&
                            m->reports[k].end_ns + MANAGER_REPORT_KEEP_NS >= now_ns)
                                rep = &m->reports[k];
                if (!rep) {
                        snprintf(err, err_size,
                                 "pid %d is not managed and did not leave in the last %d s",
                                 (int)pid, (int)(MANAGER_REPORT_KEEP_NS / NSEC_PER_SEC));
                        return -ENOENT;
                }
                a = &rep->app;
                e = rep->have_e ? &rep->e : NULL;
                dflt = rep->default_cores;
                now_ns = rep->end_ns;
        }
        json_object_object_add(j, "name", jsonfmt_string(a->name));
        json_object_object_add(j, "pid", json_object_new_int64(a->pid));
        json_object_object_add(j, "policy", jsonfmt_string(a->policy.name));
        json_object_object_add(j, "job", jsonfmt_string(a->job[0] ? a->job : NULL));
        json_object_object_add(j, "state", jsonfmt_string(rep ? "left" : "managed"));
        json_object_object_add(j, "left_because", jsonfmt_string(rep ? rep->why : NULL));
        /* Only a run pctld followed to its exit is completed by the command's totals: one
         * released before would have its unseen part at another configuration. pctl run asks
         * as soon as it has reaped the command, often before a tick has noticed the exit. */
        exited = rep ? strcmp(rep->why, MANAGER_WHY_EXITED) == 0 : !platform_proc_alive(m->pf, pid);
        json_run(m, j, a, e, now_ns, exited ? totals : NULL);
        json_object_object_add(j, "p_est",
                               jsonfmt_double(!e                             ? NAN
                                              : (e->known & ESTIMATE_P_LS)   ? e->p_ls
                                              : (e->known & ESTIMATE_P_EQ10) ? e->p_eq10
                                                                             : NAN));
        json_object_object_add(
            j, "speedup_source",
            jsonfmt_string(e ? estimate_speedup_source_name(e->speedup_source) : NULL));
        if (e && (e->known & ESTIMATE_ENERGY)) {
                energy_j = e->energy_j;
                energy_src = power_label(e);
        }
        run_s = (now_ns - a->since_ns) / 1e9;
        /* Energy covers the intervals seen; EDP with the time pctld managed it. */
        json_object_object_add(j, "energy_j", jsonfmt_double(energy_j));
        json_object_object_add(j, "energy_source", jsonfmt_string(energy_src));
        json_object_object_add(j, "edp_js", jsonfmt_double(energy_j * run_s));
        json_object_object_add(j, "default_cores", json_object_new_uint64(dflt));
        if (ran_default_only(m, a, dflt)) {
                json_object_object_add(j, "gain_pct", json_object_new_double(0));
                json_object_object_add(j, "gain_note",
                                       jsonfmt_string("ran at its default throughout"));
        } else {
                json_object_object_add(j, "gain_pct", NULL);
                json_object_object_add(j, "gain_note",
                                       jsonfmt_string("not measured: the default was not run"));
        }
        return 0;
}

/* The app's last speedup stack as `pctl stack --json` has it (but the pid), null when there is
 * none yet. */
static struct json_object *appstack_json(const struct appstacks *stacks, pid_t pid)
{
        const struct stack *s = appstacks_get(stacks, pid);
        struct json_object *j, *c;

        if (!s)
                return NULL;
        j = json_object_new_object();
        c = json_object_new_object();
        json_object_object_add(j, "cores", jsonfmt_double(s->cores));
        json_object_object_add(j, "threads", json_object_new_uint64(s->threads));
        json_object_object_add(j, "speedup", jsonfmt_double(s->speedup));
        json_object_object_add(j, "source", jsonfmt_string(appstacks_source(stacks)));
        for (unsigned k = 0; k < STACK_COMPONENTS; k++)
                json_object_object_add(c, stack_component_name(k),
                                       jsonfmt_double(stack_has(s, k) ? s->component[k] : NAN));
        json_object_object_add(j, "components", c);
        return j;
}

static struct json_object *status_app(const struct manager *m, unsigned i)
{
        const struct mapp *a = &m->apps[i];
        struct json_object *j = json_object_new_object();
        const struct estimate *e = estimator_get(m->est, a->id);
        char list[256];
        bool has_p;
        double p;

        cpumask_format(&a->cpus, list, sizeof(list));
        json_object_object_add(j, "name", jsonfmt_string(a->name));
        json_object_object_add(j, "pid", json_object_new_int64(a->pid));
        json_object_object_add(j, "policy", jsonfmt_string(a->policy.name));
        json_object_object_add(j, "job", jsonfmt_string(a->job[0] ? a->job : NULL));
        json_object_object_add(j, "objective",
                               jsonfmt_string(objective_to_string(a->policy.objective)));
        json_object_object_add(j, "effective_objective",
                               jsonfmt_string(objective_to_string(m->alloc[i].effective)));
        json_object_object_add(j, "cores", json_object_new_uint64(cpumask_count(&a->cpus)));
        json_object_object_add(j, "cpus", jsonfmt_string(list));
        json_object_object_add(j, "freq_mhz",
                               a->freq_khz ? json_object_new_uint64(a->freq_khz / 1000) : NULL);
        has_p = e && (e->known & (ESTIMATE_P_LS | ESTIMATE_P_EQ10));
        p = !has_p ? NAN : (e->known & ESTIMATE_P_LS) ? e->p_ls : e->p_eq10;
        json_object_object_add(j, "ipc",
                               jsonfmt_double(e && (e->known & ESTIMATE_IPC) ? e->ipc : NAN));
        json_object_object_add(
            j, "speedup", jsonfmt_double(e && (e->known & ESTIMATE_SPEEDUP) ? e->speedup : NAN));
        json_object_object_add(
            j, "speedup_source",
            jsonfmt_string(e ? estimate_speedup_source_name(e->speedup_source) : NULL));
        /* Where eq. 9's IPC_I0(1) came from: the app's own one-core figure or a stand-in. */
        json_object_object_add(j, "ipc1_source",
                               jsonfmt_string(e && (e->known & ESTIMATE_IPC1)
                                                  ? estimate_ipc1_source_name(e->ipc1_source)
                                                  : NULL));
        /* eq. 5: the app's own instructions of the last interval and the system's on its
         * CPUs, and how ΔI was had (per-target counts, or eq. 14's α and β). */
        json_object_object_add(j, "i0",
                               jsonfmt_double(e && (e->known & ESTIMATE_I0) ? e->i0 : NAN));
        json_object_object_add(
            j, "delta_i", jsonfmt_double(e && (e->known & ESTIMATE_DELTA_I) ? e->delta_i : NAN));
        json_object_object_add(j, "delta_i_source",
                               jsonfmt_string(e && (e->known & ESTIMATE_DELTA_I)
                                                  ? estimate_delta_i_source_name(e->delta_i_source)
                                                  : NULL));
        json_object_object_add(j, "p_est", jsonfmt_double(p));
        json_object_object_add(
            j, "p_confidence",
            jsonfmt_double(has_p && (e->known & ESTIMATE_P_LS) ? e->p_stderr : NAN));
        /* How well one P explains the speedups seen: the fit's residual and its core counts. */
        json_object_object_add(
            j, "p_rms_residual",
            jsonfmt_double(e && (e->known & ESTIMATE_P_LS) ? e->p_rms_residual : NAN));
        json_object_object_add(
            j, "p_n_cores",
            e && (e->known & ESTIMATE_P_LS) ? json_object_new_uint64(e->p_n_cores) : NULL);
        json_run(m, j, a, e, platform_now_ns(m->pf), NULL);
        json_object_object_add(j, "power_w",
                               jsonfmt_double(e && (e->known & ESTIMATE_POWER) ? e->power_w : NAN));
        json_object_object_add(
            j, "power_source",
            jsonfmt_string(e && (e->known & ESTIMATE_POWER) ? power_label(e) : NULL));
        json_object_object_add(
            j, "edp_rate", jsonfmt_double(e && (e->known & ESTIMATE_EDP_RATE) ? e->edp_rate : NAN));
        json_object_object_add(j, "gain_pct", jsonfmt_double(app_gain(m, i)));
        /* The extrapolation of its measured scaling (docs/extrapolation.md): null until it
         * reproduces what was measured. */
        json_object_object_add(j, "predicted_best_cores",
                               m->alloc[i].predicted_best_cores
                                   ? json_object_new_uint64(m->alloc[i].predicted_best_cores)
                                   : NULL);
        json_object_object_add(j, "predicted_speedup_max",
                               jsonfmt_double(m->alloc[i].predicted_best_cores
                                                  ? m->alloc[i].predicted_speedup_max
                                                  : NAN));
        /* What that prediction was fitted to: stalled cycles (the ESTIMA way) or time. */
        json_object_object_add(j, "predicted_from",
                               jsonfmt_string(m->alloc[i].predicted_best_cores
                                                  ? scaling_basis_name(&m->alloc[i].scaling_model)
                                                  : NULL));
        json_object_object_add(
            j, "reason", jsonfmt_string(m->alloc[i].reason[0] ? m->alloc[i].reason : "starting"));
        json_object_object_add(j, "stack", appstack_json(m->stacks, a->pid));
        json_object_object_add(j, "from_history",
                               json_object_new_boolean(m->alloc[i].from_history));
        return j;
}

void manager_status(const struct manager *m, struct json_object *j)
{
        const struct estimator_platform *pl = estimator_platform(m->est);
        const char *energy_source, *power_model = NULL;
        struct json_object *apps;
        double energy_j;
        char list[256];

        energy_source = manager_energy(m, &energy_j);
        json_object_object_add(j, "platform", jsonfmt_string(m->pf->name));
        json_object_object_add(j, "sensor", jsonfmt_string(m->pf->sensor_ops->name));
        json_object_object_add(j, "sensor_why", jsonfmt_string(m->pf->sensor_why));
        json_object_object_add(j, "calibration",
                               jsonfmt_string(m->opt.calibration[0] ? m->opt.calibration : NULL));
        json_object_object_add(j, "cpuset_mode",
                               jsonfmt_string((const char *[]){"auto", "cgroup-v2", "cgroup-v1",
                                                               "affinity",
                                                               "systemd"}[m->pf->actuator->mode]));
        json_object_object_add(
            j, "dvfs", json_object_new_boolean(m->opt.dvfs && m->pf->actuator->can_set_freq));
        json_object_object_add(j, "dvfs_why",
                               jsonfmt_string(!m->opt.dvfs ? m->opt.dvfs_why
                                              : m->pf->actuator->can_set_freq
                                                  ? NULL
                                                  : m->pf->actuator->freq_reason));
        cpumask_format(&m->managed_cpus, list, sizeof(list));
        json_object_object_add(j, "managed_cpus", jsonfmt_string(list));
        json_object_object_add(j, "uptime_s",
                               jsonfmt_double((platform_now_ns(m->pf) - m->start_ns) / 1e9));
        json_object_object_add(j, "power_w",
                               jsonfmt_double(!energy_source        ? NAN
                                              : pl->energy_measured ? pl->power_w
                                                                    : pl->model_w));
        json_object_object_add(j, "energy_j", jsonfmt_double(energy_j));
        json_object_object_add(j, "energy_source", jsonfmt_string(energy_source));
        /* Dynamic power of CPUs no managed app holds (other processes), from RAPL. */
        json_object_object_add(j, "unattributed_w", jsonfmt_double(pl->unattributed_w));
        /* Where predictions' power comes from: "declared", "calibrated", "fitted" (learned
         * online from RAPL and busy time), or null. */
        manager_power_model(m, &power_model);
        json_object_object_add(j, "power_model", jsonfmt_string(power_model));
        json_object_object_add(j, "decisions", json_object_new_uint64(m->decisions));
        json_object_object_add(j, "changes", json_object_new_uint64(m->changes));
        apps = json_object_new_array();
        for (unsigned i = 0; i < m->n_apps; i++)
                json_object_array_add(apps, status_app(m, i));
        json_object_object_add(j, "apps", apps);
}

void manager_summary(const struct manager *m, char *buf, size_t size)
{
        double energy_j;
        const char *src = manager_energy(m, &energy_j);

        if (src)
                snprintf(buf, size, "%u apps managed, %llu decisions, %.1f J (%s)", m->n_apps,
                         (unsigned long long)m->decisions, energy_j, src);
        else
                snprintf(buf, size, "%u apps managed, %llu decisions, energy unknown", m->n_apps,
                         (unsigned long long)m->decisions);
}

_Static_assert(sizeof(((struct metrics_app *)0)->job) >= MANAGER_JOB_MAX + 1,
               "a job tag fits its label");

int manager_metrics(const struct manager *m, struct metrics_snapshot **out)
{
        struct metrics_snapshot *s = metrics_snapshot_new(m->n_apps);

        if (!s)
                return -ENOMEM;
        for (unsigned i = 0; i < m->n_apps; i++) {
                const struct mapp *a = &m->apps[i];
                const struct estimate *e = estimator_get(m->est, a->id);
                struct metrics_app *x = &s->apps[i];
                unsigned known = e ? e->known : 0;

                (void)strscpy(x->app, a->name, sizeof(x->app));
                x->pid = a->pid;
                (void)strscpy(x->policy, a->policy.name, sizeof(x->policy));
                (void)strscpy(x->job, a->job, sizeof(x->job));
                x->v[METRICS_APP_CORES] = cpumask_count(&a->cpus);
                if (a->freq_khz)
                        x->v[METRICS_APP_FREQUENCY_HZ] = a->freq_khz * 1e3;
                /* The same P̂ and error as `pctl status`. */
                if (known & ESTIMATE_P_LS) {
                        x->v[METRICS_APP_P] = e->p_ls;
                        x->v[METRICS_APP_P_STDERR] = e->p_stderr;
                } else if (known & ESTIMATE_P_EQ10) {
                        x->v[METRICS_APP_P] = e->p_eq10;
                }
                if (known & ESTIMATE_SPEEDUP)
                        x->v[METRICS_APP_SPEEDUP] = e->speedup;
                if (known & ESTIMATE_POWER)
                        x->v[METRICS_APP_POWER_W] = e->power_w;
                if (known & ESTIMATE_ENERGY)
                        x->v[METRICS_APP_ENERGY_J] = e->energy_j;
        }
        s->package_energy_source = manager_energy(m, &s->package_energy_j);
        s->decisions = m->decisions;
        s->cpuset_changes = m->changes;
        *out = s;
        return 0;
}
