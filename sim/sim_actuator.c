/* The model machine as an actuator backend: cpusets and per-package frequencies, which the
 * apps obey from the next step on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct actuator_app {
        unsigned app;
        struct cpumask orig; /* its cpuset before we adopted it */
        struct actuator_app *next;
};

struct sim_actuator {
        struct sim_machine *m;
        struct freq_domain *domains;
        unsigned orig_mhz[SENSOR_MAX_PACKAGES];
        struct actuator_app *apps;
};

static int sim_actuator_probe(const struct actuator_config *cfg, struct actuator_probe *cpuset,
                              struct actuator_probe *freq)
{
        bool ok = cfg && cfg->machine;

        *cpuset = (struct actuator_probe){.available = ok, .err = ok ? 0 : -EINVAL};
        *freq = *cpuset;
        if (!ok) {
                snprintf(cpuset->reason, sizeof(cpuset->reason),
                         "the model machine needs a scenario (--platform sim:SCENARIO)");
                snprintf(freq->reason, sizeof(freq->reason), "%s", cpuset->reason);
        } else if (!cfg->dvfs) {
                *freq = (struct actuator_probe){.available = false, .err = -EPERM};
                snprintf(freq->reason, sizeof(freq->reason), "frequency control is off (dvfs)");
        }
        return 0;
}

static int sim_actuator_open(struct actuator *a, const struct actuator_config *cfg)
{
        struct sim_machine *m = cfg ? cfg->machine : NULL;
        const struct sim_machine_spec *ms;
        struct sim_actuator *p;

        if (!m)
                return -EINVAL;
        ms = &m->sc->mach;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->domains = calloc(m->n_packages, sizeof(*p->domains));
        if (!p->domains) {
                free(p);
                return -ENOMEM;
        }
        p->m = m;
        /* One frequency domain per package. */
        for (unsigned k = 0; k < m->n_packages; k++) {
                struct freq_domain *d = &p->domains[k];

                cpumask_zero(&d->cpus);
                for (unsigned c = 0; c < m->n_cpus; c++)
                        if (m->cpu_pkg[c] == k)
                                cpumask_set(&d->cpus, c);
                d->n_freqs = ms->n_freqs;
                for (unsigned i = 0; i < ms->n_freqs; i++)
                        d->freqs_khz[i] = ms->freqs_mhz[i] * 1000;
                d->min_khz = d->freqs_khz[0];
                d->max_khz = d->freqs_khz[ms->n_freqs - 1];
                d->cur_khz = sim_freq_mhz(m, k) * 1000;
                p->orig_mhz[k] = sim_freq_mhz(m, k);
        }
        a->priv = p;
        a->mode = CPUSET_AFFINITY; /* per-process placement, as the model machine has no cgroups */
        a->n_domains = m->n_packages;
        a->domains = p->domains;
        a->can_set_freq = cfg->dvfs;
        snprintf(a->freq_reason, sizeof(a->freq_reason), "%s",
                 cfg->dvfs ? "" : "frequency control is off (dvfs)");
        return 0;
}

static int sim_actuator_adopt(struct actuator *a, pid_t pid, const char *name,
                              struct actuator_app **out)
{
        struct sim_actuator *p = a->priv;
        struct actuator_app *app;
        unsigned i;

        (void)name;
        if (pid < SIM_PID_BASE || (unsigned)(pid - SIM_PID_BASE) >= p->m->n_apps)
                return -ESRCH;
        i = (unsigned)(pid - SIM_PID_BASE);
        if (p->m->apps[i].finished)
                return -ESRCH;
        for (app = p->apps; app; app = app->next)
                if (app->app == i)
                        return -EBUSY;
        app = calloc(1, sizeof(*app));
        if (!app)
                return -ENOMEM;
        app->app = i;
        sim_get_cpus(p->m, i, &app->orig);
        app->next = p->apps;
        p->apps = app;
        *out = app;
        return 0;
}

static int sim_actuator_set_cpus(struct actuator *a, struct actuator_app *app,
                                 const struct cpumask *cpus)
{
        struct sim_actuator *p = a->priv;

        if (p->m->apps[app->app].finished)
                return -ESRCH;
        return sim_set_cpus(p->m, app->app, cpus);
}

static int sim_actuator_get_cpus(struct actuator *a, struct actuator_app *app, struct cpumask *out)
{
        struct sim_actuator *p = a->priv;

        if (p->m->apps[app->app].finished)
                return -ESRCH;
        sim_get_cpus(p->m, app->app, out);
        return 0;
}

static int sim_actuator_refresh(struct actuator *a, struct actuator_app *app)
{
        (void)a;
        (void)app;
        return 0; /* threads of a simulated app always follow its cpuset */
}

static int sim_actuator_release(struct actuator *a, struct actuator_app *app)
{
        struct sim_actuator *p = a->priv;
        int r = 0;

        for (struct actuator_app **pp = &p->apps; *pp; pp = &(*pp)->next)
                if (*pp == app) {
                        *pp = app->next;
                        break;
                }
        if (!p->m->apps[app->app].finished)
                r = sim_set_cpus(p->m, app->app, &app->orig);
        free(app);
        return r;
}

static int sim_actuator_set_freq(struct actuator *a, unsigned domain, unsigned freq_khz)
{
        struct sim_actuator *p = a->priv;
        int r;

        if (!a->can_set_freq)
                return -EPERM;
        if (domain >= a->n_domains)
                return -ENODEV;
        if (freq_khz % 1000 != 0)
                return -EINVAL;
        r = sim_set_freq(p->m, domain, freq_khz / 1000);
        if (r < 0)
                return r;
        p->domains[domain].cur_khz = freq_khz;
        return 0;
}

static int sim_actuator_restore_freq(struct actuator *a, unsigned domain)
{
        struct sim_actuator *p = a->priv;
        int r;

        if (domain >= a->n_domains)
                return -ENODEV;
        r = sim_set_freq(p->m, domain, p->orig_mhz[domain]);
        if (r == 0)
                p->domains[domain].cur_khz = p->orig_mhz[domain] * 1000;
        return r;
}

static void sim_actuator_close(struct actuator *a)
{
        struct sim_actuator *p = a ? a->priv : NULL;

        if (!p)
                return;
        while (p->apps)
                sim_actuator_release(a, p->apps);
        for (unsigned k = 0; k < p->m->n_packages; k++)
                sim_set_freq(p->m, k, p->orig_mhz[k]);
        free(p->domains);
        free(p);
        a->priv = NULL;
        a->domains = NULL;
        a->n_domains = 0;
}

const struct actuator_ops sim_actuator_ops = {
    .name = "sim",
    .probe = sim_actuator_probe,
    .open = sim_actuator_open,
    .adopt = sim_actuator_adopt,
    .set_cpus = sim_actuator_set_cpus,
    .get_cpus = sim_actuator_get_cpus,
    .refresh = sim_actuator_refresh,
    .release = sim_actuator_release,
    .set_freq = sim_actuator_set_freq,
    .restore_freq = sim_actuator_restore_freq,
    .close = sim_actuator_close,
};
