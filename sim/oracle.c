/* The oracle: every static (cores, frequency) tried for one app alone on the machine, the
 * yardstick a controller is measured against. Ground truth only. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/util.h"
#include "sim_internal.h"

static const char *const objective_names[] = {
    [SIM_OBJ_EDP] = "edp",
    [SIM_OBJ_PPW] = "ppw",
    [SIM_OBJ_ENERGY] = "energy",
    [SIM_OBJ_PERF] = "perf",
};

int sim_objective_parse(const char *s, enum sim_objective *out)
{
        for (size_t i = 0; i < ARRAY_SIZE(objective_names); i++)
                if (strcmp(s, objective_names[i]) == 0) {
                        *out = (enum sim_objective)i;
                        return 0;
                }
        return -EINVAL;
}

const char *sim_objective_name(enum sim_objective o)
{
        return (size_t)o < ARRAY_SIZE(objective_names) ? objective_names[o] : "?";
}

double sim_objective_score(enum sim_objective o, const struct sim_result *r)
{
        switch (o) {
        case SIM_OBJ_EDP:
                return r->energy_j * r->time_s; /* eq. 13: W*T^2 = E*T */
        case SIM_OBJ_PPW:
                return -(r->instructions / r->energy_j); /* eq. 11 over the run */
        case SIM_OBJ_ENERGY:
                return r->energy_j;
        case SIM_OBJ_PERF:
                return r->time_s;
        }
        return NAN;
}

int sim_run_alone(const struct sim_machine *m, unsigned app, unsigned cores, unsigned freq_mhz,
                  uint64_t step_ns, struct sim_result *out)
{
        struct sim_machine *alone;
        struct sim_app_truth t;
        struct cpumask set;
        int r;

        if (app >= m->n_apps || cores == 0 || cores > m->n_cpus || step_ns == 0)
                return -EINVAL;
        r = sim_machine_new_truth(m->sc, (int)(m->apps[app].spec - m->sc->apps), &alone);
        if (r < 0)
                return r;
        cpumask_zero(&set);
        for (unsigned c = 0; c < cores; c++)
                cpumask_set(&set, c);
        r = sim_set_cpus(alone, 0, &set);
        for (unsigned p = 0; r == 0 && p < alone->n_packages; p++)
                r = sim_set_freq(alone, p, freq_mhz);
        while (r == 0 && !sim_done(alone))
                r = sim_step(alone, step_ns);
        if (r == 0)
                r = sim_truth_app(alone, 0, &t);
        if (r == 0)
                *out = (struct sim_result){
                    .cores = cores,
                    .freq_mhz = freq_mhz,
                    .time_s = t.time_s,
                    .energy_j = t.energy_j,
                    .instructions = t.instructions_total,
                    .p_true = t.p_true,
                };
        sim_free(alone);
        return r;
}

int sim_oracle_app(const struct sim_machine *m, unsigned app, enum sim_objective o,
                   uint64_t step_ns, struct sim_result *best, struct sim_result **all,
                   unsigned *n_all)
{
        const struct sim_machine_spec *ms = &m->sc->mach;
        const struct sim_app_spec *s;
        struct sim_result *res;
        unsigned n = 0, max, ibest = 0;
        int r = 0;

        if (app >= m->n_apps)
                return -ESRCH;
        s = m->apps[app].spec;
        max = s->n_rows > 0 ? s->n_gc * s->n_gf : m->n_cpus * ms->n_freqs;
        res = calloc(max ? max : 1, sizeof(*res));
        if (!res)
                return -ENOMEM;
        if (s->n_rows > 0) {
                /* Candidates are the rows' grid points the machine has cores for. */
                for (unsigned ci = 0; r == 0 && ci < s->n_gc; ci++)
                        for (unsigned fi = 0; r == 0 && fi < s->n_gf; fi++)
                                if (s->gc[ci] <= m->n_cpus)
                                        r = sim_run_alone(m, app, s->gc[ci], s->gf[fi], step_ns,
                                                          &res[n++]);
        } else {
                for (unsigned c = 1; r == 0 && c <= m->n_cpus; c++)
                        for (unsigned fi = 0; r == 0 && fi < ms->n_freqs; fi++)
                                r = sim_run_alone(m, app, c, ms->freqs_mhz[fi], step_ns, &res[n++]);
        }
        if (r == 0 && n == 0)
                r = -ENODATA;
        if (r < 0) {
                free(res);
                return r;
        }
        for (unsigned i = 1; i < n; i++)
                if (sim_objective_score(o, &res[i]) < sim_objective_score(o, &res[ibest]))
                        ibest = i;
        *best = res[ibest];
        if (all) {
                *all = res;
                *n_all = n;
        } else {
                free(res);
        }
        return 0;
}
