/* The manager object (include/pctl/manager.h): made, reconfigured and freed; the queries on it
 * that are neither the tick (tick.c), the app registry (registry.c) nor reports (report.c). */
#include "manager_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/appstack.h"
#include "pctl/freqdomains.h"
#include "pctl/log.h"
#include "pctl/util.h"

struct mapp *find_app(const struct manager *m, pid_t pid, unsigned *idx)
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
        m->bw = membw_new();
        m->freq = calloc(m->pf->actuator->n_domains + 1, sizeof(*m->freq));
        if (!m->est || !m->bw || !m->freq) {
                int r = m->est ? -ENOMEM : -errno;

                estimator_free(m->est);
                membw_free(m->bw);
                free(m->freq);
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

void manager_free(struct manager *m)
{
        if (!m)
                return;
        while (m->n_apps)
                release_app(m, m->n_apps - 1, "pctld is stopping");
        estimator_free(m->est);
        membw_free(m->bw);
        appstacks_close(m->stacks);
        free(m->cpu_freq_khz);
        free(m->freq);
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
unsigned app_freq(const struct manager *m, const struct cpumask *cpus)
{
        const struct actuator *a = m->pf->actuator;
        int first = cpumask_next(cpus, 0);

        for (unsigned d = 0; first >= 0 && d < a->n_domains; d++)
                if (cpumask_test(&a->domains[d].cpus, (unsigned)first))
                        return a->domains[d].cur_khz;
        return 0;
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
const struct model_power *manager_power_model(const struct manager *m, const char **src)
{
        bool fitted;
        const struct model_power *pm = estimator_power_model(m->est, &fitted);

        if (src)
                *src = !pm ? NULL : fitted ? "fitted" : m->opt.power_source;
        return pm;
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

int manager_set_progress(struct manager *m, pid_t pid, uint64_t units, uint64_t now_ns)
{
        unsigned i;

        if (!find_app(m, pid, &i))
                return -ESRCH;
        m->alloc[i].progress_known = true;
        m->alloc[i].progress_units = units;
        m->alloc[i].progress_ns = now_ns;
        return 0;
}

int manager_set_stack(struct manager *m, pid_t pid, const struct stack *s)
{
        unsigned i;

        if (!find_app(m, pid, &i))
                return -ESRCH;
        m->alloc[i].stack = *s;
        return 0;
}
