/* The allocator against ground truth: every scenario of the allocator suite
 * (tests/scenarios/suite-*.ini) run under the edp policy on the model machine, next to the
 * oracle (each app's best static setting, alone) and the default (all cores, top frequency).
 * Figures: achieved EDP / oracle EDP per app (target <= 1.05 for single apps), the gain over
 * the default, and for a phase-changing app achieved / best static (target < 1).
 * Concurrent scenarios are reported without a target: the oracle runs each app alone, which
 * no allocator sharing the machine can match. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/simrun.h"
#include "pctl/sim.h"

#define STEP_NS (100 * 1000 * 1000ULL)
#define TARGET_RATIO 1.05

struct suite_case {
        const char *file;
        bool phases; /* achieved must beat every static setting */
        bool concurrent;
        /* The target is not reached yet (docs/allocator.md says why): the figure is printed
         * and marked, but does not fail the benchmark. */
        bool known_miss;
};

/* file, phase-changing, concurrent, known miss */
static const struct suite_case cases[] = {
    {"suite-i7-p03.ini", false, false, false},
    {"suite-i7-p09.ini", false, false, false},
    {"suite-i7-mem.ini", false, false, true},
    {"suite-i7-spin.ini", false, false, false},
    {"suite-i7-phases.ini", true, false, true},
    {"suite-i7-concurrent.ini", false, true, false},
    {"suite-s64-p03.ini", false, false, false},
    {"suite-s64-p09.ini", false, false, false},
    {"suite-s64-mem.ini", false, false, false},
    {"suite-s64-spin.ini", false, false, true},
    {"suite-s64-phases.ini", true, false, false},
    {"suite-s64-concurrent.ini", false, true, false},
    {"suite-measured-falloff.ini", false, false, true},
};

/* The oracle's best and the default (every CPU, top frequency) for one app alone. */
static int truth(const struct sim_machine *m, unsigned app, double *oracle_edp, double *default_edp,
                 unsigned *oracle_cores, unsigned *oracle_mhz)
{
        struct sim_machine_info info;
        struct sim_result best, *all = NULL;
        unsigned n_all = 0;
        int r;

        sim_machine_info(m, &info);
        r = sim_oracle_app(m, app, SIM_OBJ_EDP, STEP_NS, &best, &all, &n_all);
        if (r < 0)
                return r;
        *oracle_edp = sim_objective_score(SIM_OBJ_EDP, &best);
        *oracle_cores = best.cores;
        *oracle_mhz = best.freq_mhz;
        *default_edp = NAN;
        for (unsigned i = 0; i < n_all; i++)
                if (all[i].cores == info.n_cpus &&
                    all[i].freq_mhz == info.freqs_mhz[info.n_freqs - 1])
                        *default_edp = sim_objective_score(SIM_OBJ_EDP, &all[i]);
        free(all);
        /* Measured rows give only their grid: run the default for real then. */
        if (isnan(*default_edp)) {
                struct sim_result d;

                r = sim_run_alone(m, app, info.n_cpus, info.freqs_mhz[info.n_freqs - 1], STEP_NS,
                                  &d);
                if (r < 0)
                        return r;
                *default_edp = sim_objective_score(SIM_OBJ_EDP, &d);
        }
        return 0;
}

static int run_case(const struct suite_case *c, unsigned *missed, unsigned *known)
{
        char path[512], err[512];
        struct simrun_options o = {.scenario = path, .policy = "edp", .delta_i_rate = NAN};
        struct simrun_result res;
        struct sim_machine *m;
        struct sim_error serr;
        double sum_ach = 0, sum_or = 0, sum_def = 0;
        int r;

        snprintf(path, sizeof(path), "%s/tests/scenarios/%s", SRC_DIR, c->file);
        r = sim_load(path, &m, &serr);
        if (r < 0) {
                fprintf(stderr, "bench_allocator: %s: %s\n", c->file, serr.all);
                return r;
        }
        r = simrun_policy(&o, &res, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "bench_allocator: %s: %s\n", c->file, err);
                sim_free(m);
                return r;
        }
        for (unsigned i = 0; i < res.n_apps; i++) {
                const struct simrun_app *a = &res.apps[i];
                double ach = a->energy_j * a->time_s; /* eq. 13: W*T^2 = E*T */
                double orc, def;
                unsigned oc, of;

                r = truth(m, i, &orc, &def, &oc, &of);
                if (r < 0) {
                        fprintf(stderr, "bench_allocator: %s: oracle of %s failed\n", c->file,
                                a->name);
                        break;
                }
                sum_ach += ach;
                sum_or += orc;
                sum_def += def;
                if (c->concurrent) {
                        printf("bench: allocator %s/%s: EDP achieved/oracle-alone = %.3f "
                               "(shared machine, no target), ended at %u cores %u MHz, oracle "
                               "alone %u cores %u MHz\n",
                               c->file, a->name, ach / orc, a->cores, a->freq_mhz, oc, of);
                        continue;
                }
                printf("bench: allocator %s: EDP achieved/oracle = %.3f (target <= %.2f), vs "
                       "default all-cores-max = %.3f (gain %.1f%%), ended at %u cores %u MHz, "
                       "oracle %u cores %u MHz\n",
                       c->file, ach / orc, TARGET_RATIO, ach / def, 100 * (1 - ach / def), a->cores,
                       a->freq_mhz, oc, of);
                if (c->phases)
                        /* The oracle is the best static setting. */
                        printf("bench: allocator %s: EDP achieved/best-static = %.3f (target "
                               "< 1)\n",
                               c->file, ach / orc);
                if (c->phases ? !(ach < orc) : !(ach / orc <= TARGET_RATIO)) {
                        printf("bench: allocator %s: target MISSED%s\n", c->file,
                               c->known_miss ? " (known, see docs/allocator.md)" : "");
                        if (c->known_miss)
                                (*known)++;
                        else
                                (*missed)++;
                } else if (c->known_miss) {
                        printf("bench: allocator %s: target now met: drop its known_miss mark\n",
                               c->file);
                }
        }
        if (c->concurrent && r >= 0)
                printf("bench: allocator %s: total EDP achieved/oracle-alone = %.3f, vs default "
                       "all-cores-max alone = %.3f (no target)\n",
                       c->file, sum_ach / sum_or, sum_ach / sum_def);
        simrun_result_free(&res);
        sim_free(m);
        return r < 0 ? r : 0;
}

int main(void)
{
        unsigned missed = 0, known = 0, failed = 0;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                if (run_case(&cases[i], &missed, &known) < 0)
                        failed++;
        printf("bench: allocator suite: %u targets missed, %u known misses, %u scenarios failed "
               "to run\n",
               missed, known, failed);
        return missed || failed ? 1 : 0;
}
