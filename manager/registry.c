/* The app registry (include/pctl/registry.h): apps come by `pctl run`/`adopt` or by a policy's
 * match rules and leave when they exit or are released; the sensor and the thread-state backend
 * follow the list. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_SET */
#include "manager_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/access.h"
#include "pctl/appstack.h"
#include "pctl/log.h"
#include "pctl/procguard.h"
#include "pctl/util.h"

static int pid_cmp(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return (x > y) - (x < y);
}

static bool pid_in(const pid_t *v, unsigned n, pid_t pid)
{
        return n && bsearch(&pid, v, n, sizeof(*v), pid_cmp);
}

/* struct platform_proc starts with its pid: pid_cmp orders them by it. */
static int proc_cmp(const void *a, const void *b)
{
        return pid_cmp(&((const struct platform_proc *)a)->pid,
                       &((const struct platform_proc *)b)->pid);
}

/* The last scan saw this process already: the same PID under the same name. A shell or a job
 * script that execs the real program after its set-up keeps its PID and changes its name, and
 * a PID handed to a new process between two scans mostly comes with another name: both are
 * new to the rules. */
static bool proc_seen(const struct platform_proc *seen, unsigned n, const struct platform_proc *p)
{
        const struct platform_proc *s = n ? bsearch(p, seen, n, sizeof(*seen), proc_cmp) : NULL;

        return s && strncmp(s->comm, p->comm, sizeof(s->comm)) == 0;
}

bool policies_have_rules(const struct policy_set *s)
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
        (void)membw_app_remove(m->bw, m->apps[i].id); /* -ENOENT: never measured, nothing kept */
        m->n_apps--;
        if (i != m->n_apps) {
                m->apps[i] = m->apps[m->n_apps];
                m->alloc[i] = m->alloc[m->n_apps];
        }
        refresh_targets(m);
}

void release_app(struct manager *m, unsigned i, const char *why)
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
        /* Its domain, when it was the last app on it, goes back now, not at pctld's stop. */
        tick_apply_freqs(m, true);
        /* Each app held its sensor's buffers and estimator windows; when a burst has gone,
         * the heap they took goes back to the system, else RSS stays at the burst's peak. */
        (void)memtrim_note(&m->trim, m->n_apps);
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

static int adopt_as(struct manager *m, pid_t pid, uid_t uid, const struct policy *pol,
                    const char *exec_name, const char *how, char *err, size_t err_size)
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
                r = (exec_name && m->pf->actuator_ops->adopt_new
                         ? m->pf->actuator_ops->adopt_new
                         : m->pf->actuator_ops->adopt)(m->pf->actuator, pid, name, &handle);
        if (r < 0) {
                snprintf(err, err_size, "cannot take over pid %d: %s", (int)pid,
                         actuator_strerror(m->pf->actuator, r));
                return r;
        }
        a = &m->apps[m->n_apps];
        *a = (struct mapp){.id = ++m->next_id,
                           .pid = pid,
                           .uid = uid,
                           .handle = handle,
                           .since_ns = platform_now_ns(m->pf)};
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
        (void)memtrim_note(&m->trim, m->n_apps);
        refresh_targets(m);
        log_app_info(a->name, (int)pid, a->policy.name,
                     "managing %s (pid %d) with policy %s (%s), %s", a->name, (int)pid,
                     a->policy.name, objective_to_string(a->policy.objective), how);
        /* Known from a past run (already exec'd: adopted by PID, by a rule, on the model
         * machine): placed at once, not after its first sample. */
        m->alloc[m->n_apps - 1].policy = &a->policy;
        history_recall(m, m->n_apps - 1);
        if (m->alloc[m->n_apps - 1].hint.cores)
                (void)tick_decide(m);
        return 0;
}

/* The apps uid has handed over by their own requests (not root's, not the rules'). */
static unsigned handed_over_by(const struct manager *m, uid_t uid)
{
        unsigned n = 0;

        for (unsigned i = 0; i < m->n_apps; i++)
                n += m->apps[i].uid == uid && m->apps[i].by_user;
        return n;
}

int manager_app_owner(const struct manager *m, pid_t pid, uid_t *out)
{
        const struct mapp *a = find_app(m, pid, NULL);

        /* The newest report of that pid: a reused pid's older one is another process's. */
        for (unsigned k = m->n_reports; !a && k-- > 0;)
                if (m->reports[k].app.pid == pid)
                        a = &m->reports[k].app;
        if (!a)
                return -ENOENT;
        *out = a->uid;
        return 0;
}

int manager_adopt_owned(struct manager *m, pid_t pid, const char *policy, const char *exec_name,
                        const struct manager_owner *owner, char *err, size_t err_size)
{
        const struct policy *pol = resolve_policy(m, policy);
        bool capped = owner->max_apps != UINT_MAX;
        struct mapp *app;
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
        if (capped && !find_app(m, pid, NULL)) {
                r = access_user_admits(owner->uid, handed_over_by(m, owner->uid), owner->max_apps,
                                       err, err_size);
                if (r < 0)
                        return r;
        }
        r = adopt_as(m, pid, owner->uid, pol, exec_name, "on request", err, err_size);
        if (r == 0 && (app = find_app(m, pid, NULL)))
                app->by_user = capped;
        return r;
}

int manager_adopt_named(struct manager *m, pid_t pid, const char *policy, const char *exec_name,
                        char *err, size_t err_size)
{
        const struct manager_owner root = {.uid = 0, .max_apps = UINT_MAX};

        return manager_adopt_owned(m, pid, policy, exec_name, &root, err, err_size);
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

/* Compacts the ignored list past the entries set to 0 (no process has PID 0). */
static void ignored_drop_zeros(struct manager *m)
{
        unsigned k = 0;

        for (unsigned i = 0; i < m->n_ignored; i++)
                if (m->ignored[i])
                        m->ignored[k++] = m->ignored[i];
        m->n_ignored = k;
}

/* A released process is ignored by the rules while it lives; once its PID is not among the
 * n (sorted) processes of a scan it is gone, and a process given that PID later is new. */
static void ignored_keep_only(struct manager *m, const struct platform_proc *procs, unsigned n)
{
        for (unsigned i = 0; i < m->n_ignored; i++) {
                struct platform_proc key = {.pid = m->ignored[i]};

                if (!n || !bsearch(&key, procs, n, sizeof(*procs), proc_cmp))
                        m->ignored[i] = 0;
        }
        ignored_drop_zeros(m);
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
        /* Those gone since: the list would grow by one a release, and a process given a
         * gone one's PID would never be matched. */
        for (unsigned k = 0, n = m->n_ignored; k < n; k++)
                if (!platform_proc_alive(m->pf, m->ignored[k]))
                        m->ignored[k] = 0;
        ignored_drop_zeros(m);
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
        for (unsigned i = m->n_apps; i-- > 0;) {
                const struct policy *pol = policy_lookup(&m->policies, m->apps[i].policy.name);

                /* An app its policy's rules took is that policy's: with the policy gone,
                 * nothing selects it any more, and the default policy would start moving a
                 * process the operator only ever asked to have watched, or managed as that
                 * policy said (a monitor rule's services given CPUs by weight). One handed
                 * over by pctl run or adopt was asked for by name: it goes on under the
                 * default. */
                if (!pol && m->apps[i].by_rule) {
                        release_app(m, i, "its policy is gone and no rule selects it now");
                        continue;
                }
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

/* Apps that exited are released (not an error: they are simply no longer managed); an app
 * that exec'd something else is named by it, said once. Only a change of comm renames: a
 * name `pctl run` gave stays until the exec. One read of /proc per app. */
void refresh_apps(struct manager *m)
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

/* Whether a rule of pol may take the process: its user (issue 28: any user could name a
 * process to match match_comm) and the caps. The refusal is logged, a few a minute. */
static bool rule_admits(struct manager *m, const struct policy *pol, const struct proc_identity *id)
{
        const char *users = m->opt.conf.users;
        unsigned of_policy = 0, by_rules = 0, missed;
        char why[256];

        if (strcmp(m->users_gid_of, users) != 0) {
                if (access_group_gid(users, &m->users_gid) < 0)
                        m->users_gid = (gid_t)-1;
                (void)strscpy(m->users_gid_of, users, sizeof(m->users_gid_of));
        }
        for (unsigned i = 0; i < m->n_apps; i++) {
                by_rules += m->apps[i].by_rule;
                of_policy += m->apps[i].by_rule && strcmp(m->apps[i].policy.name, pol->name) == 0;
        }
        if (access_rule_admits(pol, id, users, m->users_gid, of_policy, by_rules,
                               m->opt.conf.max_rule_apps, why, sizeof(why)) == 0)
                return true;
        if (!m->rule_rl.interval_ns)
                m->rule_rl = RATELIMIT_INIT(60 * NSEC_PER_SEC, 5);
        if (ratelimit_pass(&m->rule_rl, now_ns(), &missed)) {
                char comm[4 * sizeof(id->comm)];

                strescape(comm, sizeof(comm), id->comm, strlen(id->comm));
                log_notice("rule of policy %s matched %s (pid %d), not adopted: %s (%u more "
                           "refusals not logged before this one)",
                           pol->name, comm, (int)id->pid, why, missed);
        }
        return false;
}

/* Processes started since the last scan that a policy's rules select. */
void adopt_by_rules(struct manager *m)
{
        struct platform_proc *procs, *seen;
        int n;

        if (!m->rules)
                return;
        procs = malloc(MANAGER_MAX_PROCS * sizeof(*procs));
        if (!procs)
                return;
        n = platform_list_procs(m->pf, procs, MANAGER_MAX_PROCS);
        for (int i = 0; i < n; i++) {
                struct proc_identity id = {.pid = procs[i].pid};
                const struct policy *pol;
                struct mapp *a;
                char err[256];

                if (proc_seen(m->seen, m->n_seen, &procs[i]) ||
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
                /* The model machine has no users: its apps are the scenario's. */
                if (!m->pf->sim && !rule_admits(m, pol, &id))
                        continue;
                if (adopt_as(m, procs[i].pid, id.uid, pol, NULL, "matched by its rules", err,
                             sizeof(err)) < 0)
                        log_warning("%s, ignoring", err);
                else if ((a = find_app(m, procs[i].pid, NULL)))
                        a->by_rule = true;
        }
        if (n <= 0) {
                free(procs);
                procs = NULL;
        } else {
                qsort(procs, (size_t)n, sizeof(*procs), proc_cmp);
                /* Kept until the next scan: only as large as what was seen. */
                seen = realloc(procs, (size_t)n * sizeof(*procs));
                procs = seen ? seen : procs;
        }
        if (n >= 0) {
                ignored_keep_only(m, procs, (unsigned)n);
                free(m->seen);
                m->seen = procs;
                m->n_seen = (unsigned)n;
        }
}
