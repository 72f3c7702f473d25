/* Several apps at once (issue 14): for every concurrent scenario, the sum over apps of each
 * app's EDP under pctl (`sim run --policy edp`, in-process) and under the default (every app on
 * every CPU at the top frequency), each over the partition oracle's (`sim oracle --together`:
 * the best static partition, a measured run), and how long the oracle took.
 *
 * Beside pctl, the model-only baseline (search = model), reported: the measured search must
 * beat it to earn its place.
 *
 * Issue 14's target is "pctl <= 1.10 x the oracle and below the default" on every scenario.
 * Below the default is judged everywhere, and 1.10 x the oracle on every scenario (all meet it
 * with a margin since 23 Nov 2026: docs/allocator.md, "Several apps"). Guards:
 * - the oracle answers server-20apps (64 cores, 20 apps) in under 5 s of CPU time (issue 14);
 * - the oracle's partition is never worse than the default's on these scenarios (its search
 *   includes settings close to it, and a fault in the search shows here first);
 * - pctl / default per scenario, at the figure measured when the allocator last improved (plus
 *   3%, rounded): a regression guard of the allocator that an improved oracle cannot trip.
 *   Issue 14 quoted pctl at 1.34 x the default on suite-i7-concurrent; by the sum of the apps'
 *   EDP it was 0.73 when this bench was written, 0.59 now. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pctl/sim.h"
#include "pctl/simrun.h"

#define STEP_NS (100 * 1000 * 1000ULL) /* the oracle's step, as in `pctl sim oracle` */
#define ORACLE_LIMIT_CPU_S 5.0
#define TARGET_PCTL_OVER_ORACLE 1.10

struct together_case {
        const char *file;
        double guard_pctl_over_default; /* the figure when last improved + 3% */
        bool timed;                     /* the 5 s limit */
        bool judged;                    /* pctl / oracle <= TARGET_PCTL_OVER_ORACLE is met */
};

/* Figures in the comments: pctl/default, pctl/oracle when the allocator last improved. */
static const struct together_case cases[] = {
    {"suite-i7-concurrent.ini", 0.60, false, true},  /* 0.585, 1.050 */
    {"suite-s64-concurrent.ini", 0.36, false, true}, /* 0.346, 1.042 */
    {"server-mix.ini", 0.43, false, true},           /* 0.416, 1.017 */
    {"together-i7-2apps.ini", 0.63, false, true},    /* 0.608, 1.015 */
    {"together-s64-3apps.ini", 0.27, false, true},   /* 0.262, 1.024 */
    {"together-s64-8apps.ini", 0.077, false, true},  /* 0.074, 1.011 */
    {"together-xeon-2pkg.ini", 0.40, false, true},   /* 0.384, 1.048 */
    {"server-20apps.ini", 0.016, true, true},        /* 0.015, 1.033 */
};

static double cpu_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every app on every CPU (the machine's boot state) at the top frequency. */
static int default_edp_sum(const char *path, double *out)
{
        struct sim_machine *m;
        struct sim_error err;
        struct sim_machine_info info;
        double sum = 0;
        int r = sim_load(path, &m, &err);

        if (r < 0)
                return r;
        sim_machine_info(m, &info);
        while (r == 0 && !sim_done(m))
                r = sim_step(m, STEP_NS);
        for (unsigned i = 0; r == 0 && i < info.n_apps; i++) {
                struct sim_app_truth t;

                r = sim_truth_app(m, i, &t);
                sum += t.energy_j * t.time_s; /* eq. 13, per app */
        }
        sim_free(m);
        if (r == 0)
                *out = sum;
        return r;
}

static int pctl_edp_sum(const char *path, bool model_only, double *out)
{
        char err[512];
        struct simrun_options o = {
            .scenario = path, .policy = "edp", .delta_i_rate = NAN, .model_only = model_only};
        struct simrun_result res;
        double sum = 0;
        int r = simrun_policy(&o, &res, err, sizeof(err));

        if (r < 0) {
                fprintf(stderr, "bench_together: %s: %s\n", path, err);
                return r;
        }
        for (unsigned i = 0; i < res.n_apps; i++)
                sum += res.apps[i].energy_j * res.apps[i].time_s;
        simrun_result_free(&res);
        *out = sum;
        return 0;
}

static int run_case(const struct together_case *c, unsigned *missed)
{
        char path[512];
        struct sim_machine *m;
        struct sim_error err;
        struct sim_machine_info info;
        struct sim_together t;
        double c0, w0, oracle_cpu_s, oracle_wall_s, def = NAN, pctl = NAN, base = NAN;
        int r;

        snprintf(path, sizeof(path), "%s/tests/scenarios/%s", SRC_DIR, c->file);
        r = sim_load(path, &m, &err);
        if (r < 0) {
                fprintf(stderr, "bench_together: %s: %s\n", c->file, err.all);
                return r;
        }
        sim_machine_info(m, &info);
        c0 = cpu_s();
        w0 = wall_s();
        r = sim_oracle_together(m, SIM_OBJ_EDP, SIM_TOGETHER_AUTO, STEP_NS, &t);
        oracle_cpu_s = cpu_s() - c0;
        oracle_wall_s = wall_s() - w0;
        sim_free(m);
        if (r < 0) {
                fprintf(stderr, "bench_together: %s: oracle: %s\n", c->file, strerror(-r));
                return r;
        }
        r = default_edp_sum(path, &def);
        if (r == 0)
                r = pctl_edp_sum(path, false, &pctl);
        if (r == 0)
                r = pctl_edp_sum(path, true, &base);
        if (r < 0) {
                sim_together_free(&t);
                return r;
        }
        printf("bench: together %s (%u apps, %u CPUs, oracle by %s): sum EDP pctl/oracle = "
               "%.4f%s, model-only baseline/oracle = %.4f, default/oracle = %.3f, pctl/default = "
               "%.3f; oracle %.3f s CPU, %.3f s wall (%lu runs, %lu partitions scored)\n",
               c->file, info.n_apps, info.n_cpus, sim_together_method_name(t.method),
               pctl / t.score, c->judged ? " (judged)" : " (over the target: figure only)",
               base / t.score, def / t.score, pctl / def, oracle_cpu_s, oracle_wall_s, t.runs,
               t.evaluated);
        if (!(t.score <= def)) {
                printf("bench: together %s: the oracle's partition is worse than the default "
                       "MISSED\n",
                       c->file);
                (*missed)++;
        }
        if (!(pctl < def)) {
                printf("bench: together %s: pctl's sum of EDP is not below the default's "
                       "MISSED\n",
                       c->file);
                (*missed)++;
        }
        if (c->judged && !(pctl / t.score <= TARGET_PCTL_OVER_ORACLE)) {
                printf("bench: together %s: pctl/oracle = %.3f over the target %.2f MISSED\n",
                       c->file, pctl / t.score, TARGET_PCTL_OVER_ORACLE);
                (*missed)++;
        }
        if (c->guard_pctl_over_default > 0 && !(pctl / def <= c->guard_pctl_over_default)) {
                printf("bench: together %s: pctl/default = %.3f over its regression guard %.2f "
                       "MISSED\n",
                       c->file, pctl / def, c->guard_pctl_over_default);
                (*missed)++;
        }
        if (c->timed && !(oracle_cpu_s < ORACLE_LIMIT_CPU_S)) {
                printf("bench: together %s: oracle took %.3f s CPU, limit %.0f s MISSED\n", c->file,
                       oracle_cpu_s, ORACLE_LIMIT_CPU_S);
                (*missed)++;
        }
        sim_together_free(&t);
        return 0;
}

int main(void)
{
        unsigned missed = 0, failed = 0;

        printf("bench: together: issue 14's target: pctl below the default (judged on every "
               "scenario) and <= %.2f x the oracle (judged where met: marked)\n",
               TARGET_PCTL_OVER_ORACLE);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                if (run_case(&cases[i], &missed) < 0)
                        failed++;
        printf("bench: together: %u guards missed, %u scenarios failed to run\n", missed, failed);
        return missed || failed ? 1 : 0;
}
