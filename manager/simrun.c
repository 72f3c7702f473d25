#include "pctl/simrun.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/history.h"
#include "pctl/log.h"
#include "pctl/manager.h"
#include "pctl/platform.h"
#include "pctl/sim.h"
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
        /* The set is copied by name lookups only; rules never adopt on the model machine
         * here: every app is managed with the one policy asked for. */
        if (opt->policies) {
                const struct policy *p = policy_lookup(opt->policies, opt->policy);

                set.v = calloc(1, sizeof(*set.v));
                if (!set.v) {
                        r = -ENOMEM;
                        goto out;
                }
                set.v[0] = *p;
                memset(set.v[0].match, 0, sizeof(set.v[0].match));
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
                for (unsigned i = 0; i < info.n_apps; i++)
                        res.apps[i].p_est = res.apps[i].speedup_est = NAN;
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
                }
                r = manager_sample(m);
                if (r < 0) {
                        snprintf(err, err_size, "sampling failed: %s", strerror(-r));
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
