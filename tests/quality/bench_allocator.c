/* The allocator against ground truth: every scenario of the allocator suite
 * (tests/scenarios/suite-*.ini) run under the edp policy on the model machine, next to the
 * oracle (each app's best static setting, alone) and the default (all cores, top frequency).
 * Figures: achieved EDP / oracle EDP per app (target <= 1.05 for single apps), the gain over
 * the default, for a phase-changing app achieved / best static (target < 1), and for every
 * single app the EDP of the setting it settled on, run statically, / oracle (for measured
 * rows the target is on this figure: "settles within 5% of the rows' optimum").
 * Beside each figure, the model-only baseline's (search = model: the model's best once P is
 * settled, nothing measured), which the measured search must beat to earn its place.
 * Concurrent scenarios are reported without a target: the oracle runs each app alone, which
 * no allocator sharing the machine can match (bench_together compares them with the partition
 * oracle of all apps at once).
 * The start-up rows (tests/scenarios/startup-*.ini) are suite apps run for a tenth of the
 * time (4-15 s), so that the 1 s warm-up and the first probes are a large share of the run:
 * their figures show that cost. They are held to a regression guard (the figure when it was
 * last improved, plus a little) and, where they meet it with a margin, to issue 13's target
 * (<= 1.10 x the oracle). startup-measured-falloff meets it at 1.098 (23 Nov 2026), without
 * a margin: its guard is the regression one. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/model.h"
#include "pctl/simrun.h"
#include "pctl/sim.h"

#define STEP_NS (100 * 1000 * 1000ULL)
#define TARGET_RATIO 1.05
/* Start-up guards: achieved / oracle (or / best static) when last improved, plus 0.02
 * (figures of 23 Nov 2026: 1.016, 1.038, 1.078, 1.022, 1.025, 1.098). */
#define GUARD_P03 1.04
#define GUARD_P09 1.06
#define GUARD_MEM 1.10
#define GUARD_SPIN 1.04
#define GUARD_PHASES 1.05
#define GUARD_FALLOFF 1.12
/* Issue 13: every start-up row within this of the oracle; judged on the rows that meet it
 * with a margin (all but startup-measured-falloff). */
#define TARGET_STARTUP 1.10
/* 20 apps sharing the 64-core machine with a declared power model (so every app's score is
 * measured and each one searches): cpuset or frequency changes per app-minute. Before the
 * search knew about sharing (probes it could not be granted, frequencies of a shared domain,
 * other apps' probes) it was 26; a settled machine makes none. */
#define GUARD_CHANGES_PER_APP_MIN 6.0

enum case_kind {
        CASE_SINGLE,     /* achieved / oracle <= TARGET_RATIO */
        CASE_PHASES,     /* achieved / best static < 1 */
        CASE_ROWS,       /* the settled setting's EDP / oracle <= TARGET_RATIO */
        CASE_CONCURRENT, /* reported */
};

struct suite_case {
        const char *file;
        enum case_kind kind;
        /* Start-up rows: the achieved / oracle figure must stay at or under this guard. */
        double guard;
        /* Start-up rows: also judged against TARGET_STARTUP. */
        bool target;
};

static const struct suite_case cases[] = {
    {"suite-i7-p03.ini", CASE_SINGLE, 0, false},
    {"suite-i7-p09.ini", CASE_SINGLE, 0, false},
    {"suite-i7-mem.ini", CASE_SINGLE, 0, false},
    {"suite-i7-spin.ini", CASE_SINGLE, 0, false},
    {"suite-i7-phases.ini", CASE_PHASES, 0, false},
    {"suite-i7-concurrent.ini", CASE_CONCURRENT, 0, false},
    {"suite-s64-p03.ini", CASE_SINGLE, 0, false},
    {"suite-s64-p09.ini", CASE_SINGLE, 0, false},
    {"suite-s64-mem.ini", CASE_SINGLE, 0, false},
    {"suite-s64-spin.ini", CASE_SINGLE, 0, false},
    {"suite-s64-phases.ini", CASE_PHASES, 0, false},
    {"suite-s64-concurrent.ini", CASE_CONCURRENT, 0, false},
    {"suite-measured-falloff.ini", CASE_ROWS, 0, false},
    {"startup-i7-p03.ini", CASE_SINGLE, GUARD_P03, true},
    {"startup-i7-p09.ini", CASE_SINGLE, GUARD_P09, true},
    {"startup-i7-mem.ini", CASE_SINGLE, GUARD_MEM, true},
    {"startup-i7-spin.ini", CASE_SINGLE, GUARD_SPIN, true},
    {"startup-i7-phases.ini", CASE_PHASES, GUARD_PHASES, true},
    {"startup-measured-falloff.ini", CASE_ROWS, GUARD_FALLOFF, false},
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

/* Whether a figure meets its case's bar; prints the verdict. */
static bool judge(const struct suite_case *c, const char *what, double fig)
{
        bool startup = c->guard > 0;
        double bar = startup ? c->guard : TARGET_RATIO;
        bool ok = c->kind == CASE_PHASES && !startup ? fig < 1 : fig <= bar;

        if (!ok)
                printf("bench: allocator %s: %s = %.3f: %s MISSED\n", c->file, what, fig,
                       startup ? "start-up regression guard" : "target");
        if (startup && c->target && !(fig <= TARGET_STARTUP)) {
                printf("bench: allocator %s: %s = %.3f over issue 13's start-up target %.2f "
                       "MISSED\n",
                       c->file, what, fig, TARGET_STARTUP);
                ok = false;
        }
        return ok;
}

static int run_case(const struct suite_case *c, unsigned *missed)
{
        char path[512], err[512];
        struct simrun_options o = {.scenario = path, .policy = "edp", .delta_i_rate = NAN};
        struct simrun_options ob = {
            .scenario = path, .policy = "edp", .delta_i_rate = NAN, .model_only = true};
        struct simrun_result res, base;
        struct sim_machine *m;
        struct sim_error serr;
        double sum_ach = 0, sum_or = 0, sum_def = 0, sum_base = 0;
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
        r = simrun_policy(&ob, &base, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "bench_allocator: %s: model-only baseline: %s\n", c->file, err);
                simrun_result_free(&res);
                sim_free(m);
                return r;
        }
        for (unsigned i = 0; i < res.n_apps; i++) {
                const struct simrun_app *a = &res.apps[i];
                double ach = a->energy_j * a->time_s; /* eq. 13: W*T^2 = E*T */
                double ach_base = base.apps[i].energy_j * base.apps[i].time_s;
                double orc, def, settled;
                unsigned oc, of;
                struct sim_result st;

                r = truth(m, i, &orc, &def, &oc, &of);
                if (r < 0) {
                        fprintf(stderr, "bench_allocator: %s: oracle of %s failed\n", c->file,
                                a->name);
                        break;
                }
                sum_ach += ach;
                sum_or += orc;
                sum_def += def;
                sum_base += ach_base;
                if (c->kind == CASE_CONCURRENT) {
                        printf("bench: allocator %s/%s: EDP achieved/oracle-alone = %.3f "
                               "(shared machine, no target; model-only baseline %.3f), ended at "
                               "%u cores %u MHz, oracle alone %u cores %u MHz\n",
                               c->file, a->name, ach / orc, ach_base / orc, a->cores, a->freq_mhz,
                               oc, of);
                        continue;
                }
                /* The setting it ended on, run statically for the whole app. */
                r = sim_run_alone(m, i, a->cores, a->freq_mhz, STEP_NS, &st);
                if (r < 0) {
                        fprintf(stderr, "bench_allocator: %s: static run of %s failed\n", c->file,
                                a->name);
                        break;
                }
                settled = sim_objective_score(SIM_OBJ_EDP, &st) / orc;
                printf("bench: allocator %s: EDP achieved/%s = %.3f (%s; model-only baseline "
                       "%.3f), vs default all-cores-max = %.3f (gain %.1f%%), settled at %u "
                       "cores %u MHz (its EDP/oracle %.3f), oracle %u cores %u MHz\n",
                       c->file, c->kind == CASE_PHASES ? "best-static" : "oracle", ach / orc,
                       c->guard > 0 && c->target ? "start-up, guard and target <= 1.10"
                       : c->guard > 0            ? "start-up, guard; target 1.10 reported"
                       : c->kind == CASE_PHASES  ? "target < 1"
                       : c->kind == CASE_ROWS    ? "reported; the settled figure is judged"
                                                 : "target <= 1.05",
                       ach_base / orc, ach / def, 100 * (1 - ach / def), a->cores, a->freq_mhz,
                       settled, oc, of);
                if (c->kind == CASE_ROWS && c->guard == 0) {
                        if (!judge(c, "settled EDP/oracle", settled))
                                (*missed)++;
                } else if (!judge(c,
                                  c->kind == CASE_PHASES ? "achieved/best-static"
                                                         : "achieved/oracle",
                                  ach / orc)) {
                        (*missed)++;
                }
        }
        if (c->kind == CASE_CONCURRENT && r >= 0)
                printf("bench: allocator %s: total EDP achieved/oracle-alone = %.3f (model-only "
                       "baseline %.3f), vs default all-cores-max alone = %.3f (no target)\n",
                       c->file, sum_ach / sum_or, sum_base / sum_or, sum_ach / sum_def);
        simrun_result_free(&res);
        simrun_result_free(&base);
        sim_free(m);
        return r < 0 ? r : 0;
}

/* How calm 20 concurrent searching apps are. */
static int run_sharing(unsigned *missed)
{
        char err[512];
        struct simrun_options o = {.scenario = SRC_DIR "/tests/scenarios/server-20apps.ini",
                                   .policy = "edp",
                                   .delta_i_rate = NAN,
                                   .have_power = true};
        struct simrun_result res;
        double app_min = 0, rate;

        /* A declared model for server-64: 60 W static, per core 1.2 W at 1500 MHz and 3.5 W
         * at 3000 MHz busy, 0.3 W idle. */
        o.power.static_w = 60;
        o.power.declared = true;
        if (model_power_set_point(&o.power, 1500000, 1.2, 0.3) < 0 ||
            model_power_set_point(&o.power, 3000000, 3.5, 0.3) < 0)
                return -EINVAL;
        if (simrun_policy(&o, &res, err, sizeof(err)) < 0) {
                fprintf(stderr, "bench_allocator: server-20apps.ini: %s\n", err);
                return -EIO;
        }
        for (unsigned i = 0; i < res.n_apps; i++)
                app_min += res.apps[i].time_s / 60;
        rate = res.changes / app_min;
        printf("bench: allocator server-20apps.ini (20 apps, declared power model): %lu changes "
               "in %.0f app-minutes = %.1f per app-minute (guard <= %.0f), %lu decisions\n",
               res.changes, app_min, rate, GUARD_CHANGES_PER_APP_MIN, res.decisions);
        if (!(rate <= GUARD_CHANGES_PER_APP_MIN)) {
                printf("bench: allocator server-20apps.ini: changes per app-minute guard MISSED\n");
                (*missed)++;
        }
        simrun_result_free(&res);
        return 0;
}

int main(void)
{
        unsigned missed = 0, failed = 0;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                if (run_case(&cases[i], &missed) < 0)
                        failed++;
        if (run_sharing(&missed) < 0)
                failed++;
        printf("bench: allocator suite: %u targets or guards missed, %u scenarios failed to run\n",
               missed, failed);
        return missed || failed ? 1 : 0;
}
