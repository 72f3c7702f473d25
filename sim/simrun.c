#include "pctl/simrun.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/calibrate.h"
#include "pctl/history.h"
#include "pctl/log.h"
#include "pctl/manager.h"
#include "pctl/platform.h"
#include "pctl/sim.h"
#include "pctl/stack.h"
#include "pctl/threadstate.h"
#include "pctl/util.h"

static int simrun_adopt_new(struct manager *m, struct platform *pf, const char *policy, char *err,
                            size_t err_size)
{
        struct platform_proc procs[1024];
        int n = platform_list_procs(pf, procs, ARRAY_SIZE(procs));

        for (int i = 0; i < n; i++) {
                int r;

                if (manager_estimate(m, procs[i].pid))
                        continue; /* managed already */
                r = manager_adopt(m, procs[i].pid, policy, err, err_size);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

static double report_double(struct json_object *j, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(j, key, &v) || !v)
                return NAN;
        return json_object_get_double(v);
}

/* The report pctld gives of app i right after it left, as `pctl run` asks for it. */
static void simrun_report(const struct manager *m, unsigned i, struct simrun_app *ap)
{
        struct json_object *j = json_object_new_object();
        char err[256];

        if (j && manager_report(m, SIM_PID_BASE + (pid_t)i, NULL, j, err, sizeof(err)) == 0) {
                ap->p_run = report_double(j, "p_run");
                ap->p_run_uncorrected = report_double(j, "p_run_uncorrected");
                ap->work_inflation = report_double(j, "work_inflation");
                ap->work_inflation_error = report_double(j, "work_inflation_error");
        }
        json_object_put(j);
}

/* One app's thread states summed since its setting last changed, the measured speedup over
 * them, and (for the report only) the machine's truth at the window's start. */
struct stack_window {
        bool open;
        unsigned cores, freq_khz;
        struct threadstate_app sum;
        double speedup_ns;
        unsigned intervals;
        struct sim_stack_acc truth_from;
};

static int window_add(struct stack_window *w, const struct threadstate_app *x, double speedup)
{
        if (w->sum.n_threads != x->n_threads) {
                struct threadstate_thread *t =
                    realloc(w->sum.threads, x->n_threads * sizeof(*w->sum.threads));

                if (!t)
                        return -ENOMEM;
                w->sum.threads = t;
                memset(t, 0, x->n_threads * sizeof(*t));
                w->sum.n_threads = x->n_threads;
        }
        w->sum.pid = x->pid;
        w->sum.interval_ns += x->interval_ns;
        w->sum.has_active = x->has_active;
        for (unsigned c = 0; c <= THREADSTATE_MAX_ACTIVE; c++)
                w->sum.active_ns[c] += x->active_ns[c];
        for (unsigned j = 0; j < x->n_threads; j++) {
                w->sum.threads[j].tid = x->threads[j].tid;
                w->sum.threads[j].solo_ns += x->threads[j].solo_ns;
                for (unsigned st = 0; st < THREAD_STATES; st++)
                        w->sum.threads[j].ns[st] += x->threads[j].ns[st];
        }
        w->speedup_ns += speedup * (double)x->interval_ns;
        w->intervals++;
        return 0;
}

static void window_reset(struct stack_window *w, unsigned cores, unsigned freq_khz,
                         const struct sim_stack_acc *truth_from)
{
        struct threadstate_thread *t = w->sum.threads;
        unsigned n = w->sum.n_threads;

        if (t)
                memset(t, 0, n * sizeof(*t));
        w->sum = (struct threadstate_app){.threads = t, .n_threads = n};
        w->open = true;
        w->cores = cores;
        w->freq_khz = freq_khz;
        w->speedup_ns = 0;
        w->intervals = 0;
        w->truth_from = *truth_from;
}

/* The measured speedup of an interval, never above the run time of the threads (Sigma run /
 * interval). With a single-core IPC from a reference run (ipc1 > 0, as [SSM] requires), the
 * app's instruction rate over what one core retires at its clock: it sees memory stalls,
 * which slow every core alike. Without one, the estimator's eq. 9, whose IPC1 is the busiest
 * core's: it sees stalls only where they differ between cores, and takes the busiest CPU for
 * busy all the time, which a thread waiting on a lock or asleep is not. */
static double interval_speedup(const struct estimate *e, double ipc1,
                               const struct threadstate_app *x)
{
        double run = 0, sp = NAN;

        for (unsigned j = 0; j < x->n_threads; j++)
                run += (double)x->threads[j].ns[THREAD_RUN];
        run /= (double)x->interval_ns;
        if (ipc1 > 0 && (e->known & ESTIMATE_IPS) && e->freq_khz)
                sp = e->ips / (ipc1 * e->freq_khz * 1e3);
        else if (e->known & ESTIMATE_SPEEDUP)
                sp = e->speedup;
        return isfinite(sp) ? fmin(sp, run) : run;
}

/* After each sample: every running app's thread states into its window (a new window when
 * its setting changed), its stack to the allocator, and the stack and the truth to the
 * report. truth_from[i] is the truth at the start of the interval. */
static int simrun_stacks(const struct simrun_options *opt, struct manager *m, struct platform *pf,
                         struct threadstate *ts, struct threadstate_app *cur,
                         struct stack_window *win, const struct sim_stack_acc *truth_from,
                         struct simrun_result *res)
{
        int r = threadstate_read(ts, cur, res->n_apps);

        if (r < 0)
                return r;
        for (unsigned i = 0; i < res->n_apps; i++) {
                pid_t pid = SIM_PID_BASE + (pid_t)i;
                const struct estimate *e = manager_estimate(m, pid);
                struct stack_window *w = &win[i];
                struct sim_stack_acc now;
                struct stack st;

                /* Only whole intervals of a running app that pctl manages. */
                if (!e || !e->n_cores || cur[i].n_threads == 0 || cur[i].interval_ns == 0 ||
                    !platform_proc_alive(pf, pid) || cur[i].threads[0].ns[THREAD_EXITED] > 0)
                        continue;
                if (!w->open || w->cores != e->n_cores || w->freq_khz != e->freq_khz)
                        window_reset(w, e->n_cores, e->freq_khz, &truth_from[i]);
                r = window_add(w, &cur[i], interval_speedup(e, opt->ipc1, &cur[i]));
                if (r < 0)
                        return r;
                stack_compute(&w->sum, w->cores, w->speedup_ns / (double)w->sum.interval_ns, &st);
                /* Memory where the estimator has the app's frequency sensitivity (it saw it
                 * at two clocks or more), as pctld does (docs/stack.md, "Memory"). */
                if (e->known & ESTIMATE_MEM_FRACTION)
                        stack_split_memory(
                            &st,
                            stack_mem_share_at(e->mem_fraction, e->mem_freq_ref_khz, e->freq_khz),
                            NAN);
                if (!opt->no_stack_hints)
                        (void)manager_set_stack(m, pid, &st);
                res->apps[i].stack = st;
                (void)sim_truth_stack_acc(pf->sim, i, &now);
                sim_truth_stack(&w->truth_from, &now, &res->apps[i].stack_true);
                res->apps[i].stack_intervals = w->intervals;
        }
        return 0;
}

int simrun_policy(const struct simrun_options *opt, struct simrun_result *out, char *err,
                  size_t err_size)
{
        struct platform_options po = {0};
        struct manager_options mo = {.delta_i_rate = opt->delta_i_rate, .ipc1 = opt->ipc1};
        struct policy_set set = {0};
        struct platform *pf = NULL;
        struct manager *m = NULL;
        struct history *hist = NULL;
        struct simrun_result res = {0};
        char spec[4096];
        struct threadstate *ts = NULL;
        struct threadstate_app *cur = NULL;
        struct stack_window *win = NULL;
        struct sim_stack_acc *truth_from = NULL;
        pid_t *pids = NULL;
        bool *managed = NULL; /* managed at the last sample: its report is due when it leaves */
        unsigned n_win = 0;
        uint64_t interval_ns, decision_ns, next_decision, limit_ns;
        int r, saved_level = log_get_max_level();

        snprintf(spec, sizeof(spec), "sim:%s", opt->scenario);
        po.spec = spec;
        po.actuator = (struct actuator_config){.dvfs = true};
        r = platform_open(&po, &pf, err, err_size);
        if (r < 0)
                return r;
        if (!policy_lookup(opt->policies, opt->policy)) {
                snprintf(err, err_size,
                         "no policy named '%s' (a policy file's name, or edp, ppw, energy, "
                         "performance, monitor)",
                         opt->policy);
                r = -ENOENT;
                goto out;
        }
        if (opt->history_path) {
                r = history_open(opt->history_path, false, &hist, err, err_size);
                if (r < 0)
                        goto out;
                mo.history = hist;
        }
        config_init(&mo.conf);
        (void)strscpy(mo.conf.default_policy, opt->policy, sizeof(mo.conf.default_policy));
        mo.conf.interval_ms = opt->interval_ms ? opt->interval_ms : 100;
        mo.conf.decision_ms = opt->decision_ms ? opt->decision_ms : 1000;
        mo.platform = pf;
        mo.dvfs = pf->actuator->can_set_freq;
        mo.have_power = opt->have_power;
        mo.power = opt->power;
        mo.power_source = "calibrated";
        /* The model-only baseline is PARMA's: a model calibrated beforehand, here by
         * `pctl calibrate --quick` on the scenario's machine, when none was given. */
        if (opt->model_only && !opt->have_power) {
                char why[256];

                r = calibrate_sim_power(opt->scenario, &mo.power, why, sizeof(why));
                if (r < 0) {
                        snprintf(err, err_size, "calibrating the model-only baseline: %s", why);
                        goto out;
                }
                mo.have_power = r > 0;
        }
        /* The set is copied by name lookups only; rules never adopt on the model machine
         * here: every app is managed with the one policy asked for. */
        if (opt->policies || opt->model_only) {
                const struct policy *p = policy_lookup(opt->policies, opt->policy);

                set.v = calloc(1, sizeof(*set.v));
                if (!set.v) {
                        r = -ENOMEM;
                        goto out;
                }
                set.v[0] = *p;
                memset(set.v[0].match, 0, sizeof(set.v[0].match));
                if (opt->model_only)
                        set.v[0].search = POLICY_SEARCH_MODEL;
                set.n = 1;
        }
        r = manager_new(&mo, &set, &m);
        policy_set_free(&set);
        if (r < 0) {
                snprintf(err, err_size, "cannot start the manager: %s", strerror(-r));
                goto out;
        }
        {
                struct sim_machine_info info;

                sim_machine_info(pf->sim, &info);
                res.n_apps = info.n_apps;
                res.apps = calloc(info.n_apps ? info.n_apps : 1, sizeof(*res.apps));
                if (!res.apps) {
                        r = -ENOMEM;
                        goto out;
                }
                for (unsigned i = 0; i < info.n_apps; i++) {
                        res.apps[i].p_est = res.apps[i].speedup_est = NAN;
                        res.apps[i].p_run = res.apps[i].p_run_uncorrected = NAN;
                        res.apps[i].work_inflation = res.apps[i].work_inflation_error = NAN;
                        res.apps[i].p_run_true = res.apps[i].extra_work_true = NAN;
                        stack_compute(NULL, NAN, NAN, &res.apps[i].stack);
                        res.apps[i].stack_true = res.apps[i].stack;
                }
                /* The machine's thread states, as pctld reads a real machine's. */
                cur = calloc(info.n_apps ? info.n_apps : 1, sizeof(*cur));
                win = calloc(info.n_apps ? info.n_apps : 1, sizeof(*win));
                truth_from = calloc(info.n_apps ? info.n_apps : 1, sizeof(*truth_from));
                pids = calloc(info.n_apps ? info.n_apps : 1, sizeof(*pids));
                managed = calloc(info.n_apps ? info.n_apps : 1, sizeof(*managed));
                if (!cur || !win || !truth_from || !pids || !managed) {
                        r = -ENOMEM;
                        goto out;
                }
                n_win = info.n_apps;
                for (unsigned i = 0; i < info.n_apps; i++)
                        pids[i] = SIM_PID_BASE + (pid_t)i;
                r = threadstate_open(&threadstate_sim_ops, pf->sim, &ts);
                if (r == 0)
                        r = threadstate_set_pids(ts, pids, info.n_apps);
                if (r < 0) {
                        snprintf(err, err_size, "the model machine's thread states: %s",
                                 strerror(-r));
                        goto out;
                }
        }
        /* The per-change log lines are pctld's; a what-if run reports the outcome. */
        log_set_max_level(opt->log                  ? LOG_DEBUG
                          : saved_level < LOG_DEBUG ? LOG_WARNING
                                                    : saved_level);
        interval_ns = mo.conf.interval_ms * NSEC_PER_MSEC;
        decision_ns = mo.conf.decision_ms * NSEC_PER_MSEC;
        next_decision = decision_ns;
        limit_ns = (uint64_t)((opt->max_virtual_s > 0 ? opt->max_virtual_s : 1e6) * 1e9);
        while (!sim_done(pf->sim)) {
                if (opt->stop_at_s > 0 && sim_now_ns(pf->sim) >= opt->stop_at_s * 1e9)
                        break;
                if (sim_now_ns(pf->sim) >= limit_ns) {
                        snprintf(err, err_size,
                                 "the scenario did not finish in %.0f s of "
                                 "virtual time",
                                 limit_ns / 1e9);
                        r = -ETIMEDOUT;
                        goto out;
                }
                r = simrun_adopt_new(m, pf, opt->policy, err, err_size);
                if (r < 0)
                        goto out;
                for (unsigned i = 0; i < res.n_apps; i++)
                        (void)sim_truth_stack_acc(pf->sim, i, &truth_from[i]);
                r = platform_advance(pf, interval_ns);
                if (r < 0) {
                        snprintf(err, err_size, "the model machine failed: %s", strerror(-r));
                        goto out;
                }
                /* Keep each app's last estimate and setting: it is released when it ends. */
                for (unsigned i = 0; i < res.n_apps; i++) {
                        const struct estimate *e = manager_estimate(m, SIM_PID_BASE + (pid_t)i);

                        if (!e)
                                continue;
                        if (e->known & ESTIMATE_P_LS)
                                res.apps[i].p_est = e->p_ls;
                        if (e->known & ESTIMATE_SPEEDUP) {
                                res.apps[i].speedup_est = e->speedup;
                                res.apps[i].speedup_source = e->speedup_source;
                                res.apps[i].ipc1_source =
                                    e->known & ESTIMATE_IPC1 ? e->ipc1_source : ESTIMATE_IPC1_NONE;
                        }
                        if (e->n_cores)
                                res.apps[i].cores = e->n_cores;
                        if (e->freq_khz)
                                res.apps[i].freq_mhz = e->freq_khz / 1000;
                        res.apps[i].from_history |=
                            manager_from_history(m, SIM_PID_BASE + (pid_t)i);
                        managed[i] = true;
                }
                /* Apps that mark their progress: the counter pctld would read. */
                for (unsigned i = 0; i < res.n_apps; i++) {
                        uint64_t units;

                        if (sim_progress_read(pf->sim, i, &units) == 0)
                                (void)manager_set_progress(m, SIM_PID_BASE + (pid_t)i, units,
                                                           sim_now_ns(pf->sim));
                }
                r = manager_sample(m);
                if (r < 0) {
                        snprintf(err, err_size, "sampling failed: %s", strerror(-r));
                        goto out;
                }
                /* Apps that left in this sample: their run report. */
                for (unsigned i = 0; i < res.n_apps; i++) {
                        if (!managed[i] || manager_estimate(m, SIM_PID_BASE + (pid_t)i))
                                continue;
                        managed[i] = false;
                        simrun_report(m, i, &res.apps[i]);
                }
                r = simrun_stacks(opt, m, pf, ts, cur, win, truth_from, &res);
                if (r < 0) {
                        snprintf(err, err_size, "thread states: %s", strerror(-r));
                        goto out;
                }
                if (sim_now_ns(pf->sim) >= next_decision) {
                        manager_decide(m);
                        next_decision += decision_ns;
                }
        }
        for (unsigned i = 0; i < res.n_apps; i++) {
                struct sim_app_truth t;

                if (sim_truth_app(pf->sim, i, &t) < 0)
                        continue;
                (void)strscpy(res.apps[i].name, t.name, sizeof(res.apps[i].name));
                if (!res.apps[i].cores) {
                        res.apps[i].cores = t.cores;
                        res.apps[i].freq_mhz = t.freq_mhz;
                }
                res.apps[i].time_s = t.time_s;
                res.apps[i].energy_j = t.energy_j;
                res.apps[i].p_true = t.p_true;
                res.apps[i].speedup_true = t.speedup_true;
                res.apps[i].p_run_true = t.p_run_true;
                res.apps[i].extra_work_true = t.extra_work;
                res.time_s = fmax(res.time_s, t.start_s + t.time_s);
        }
        res.energy_j = sim_truth_energy_j(pf->sim);
        res.decisions = manager_decisions(m);
        res.changes = manager_changes(m);
        *out = res;
        res = (struct simrun_result){0};
        r = 0;
out:
        log_set_max_level(saved_level);
        for (unsigned i = 0; i < n_win; i++) {
                free(cur[i].threads);
                free(win[i].sum.threads);
        }
        threadstate_close(ts);
        free(cur);
        free(win);
        free(truth_from);
        free(pids);
        free(managed);
        manager_free(m);
        history_close(hist);
        platform_close(pf);
        simrun_result_free(&res);
        return r;
}

void simrun_result_free(struct simrun_result *r)
{
        free(r->apps);
        r->apps = NULL;
        r->n_apps = 0;
}
