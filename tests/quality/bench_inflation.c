/* Extra parallel work measured across whole runs (docs/estimator.md, "Extra parallel work"), on
 * the model machine: apps with extra_work X and parallel fraction P, each run twice under one
 * history file, pinned to `lo` then `hi` cores (one policy name, as `pctl sim run --history`
 * does with a policy file edited in between). The second run's report gives X and p_run
 * corrected by it; both are compared with the machine's truth. Virtual time: the figures do not
 * depend on the machine's load. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/policy.h"
#include "pctl/simrun.h"

#define TOL_X 0.003
#define TOL_P 0.01

static int run_pinned(const char *scenario, const char *db, unsigned cores, struct simrun_app *out)
{
        struct policy_set set = {.v = calloc(1, sizeof(struct policy)), .n = 1};
        struct simrun_options o = {.scenario = scenario,
                                   .policy = "pinned",
                                   .policies = &set,
                                   .delta_i_rate = NAN,
                                   .history_path = db};
        struct simrun_result res;
        char err[512];
        int r;

        if (!set.v)
                return -1;
        snprintf(set.v[0].name, sizeof(set.v[0].name), "pinned");
        set.v[0].objective = OBJECTIVE_PERFORMANCE;
        set.v[0].min_cores = set.v[0].max_cores = cores;
        set.v[0].max_slowdown = INFINITY;
        set.v[0].weight = 1;
        r = simrun_policy(&o, &res, err, sizeof(err));
        policy_set_free(&set);
        if (r < 0) {
                fprintf(stderr, "bench_inflation: %s: %s\n", scenario, err);
                return r;
        }
        *out = res.apps[0];
        simrun_result_free(&res);
        return 0;
}

int main(void)
{
        static const double xs[] = {0, 0.01, 0.03, 0.1};
        static const double ps[] = {0.5, 0.9};
        static const unsigned pairs[][2] = {{2, 8}, {1, 4}, {4, 12}};
        char dir[] = "/tmp/pctl-bench-inflation-XXXXXX", db[128], scen[128], text[512];
        unsigned missed = 0, failed = 0, cases = 0, within = 0;
        double worst_x = 0, worst_p = 0, worst_p0 = 0;

        if (!mkdtemp(dir)) {
                perror("bench_inflation: mkdtemp");
                return 1;
        }
        snprintf(scen, sizeof(scen), "%s/app.ini", dir);
        snprintf(db, sizeof(db), "%s/history.db", dir);
        for (size_t ix = 0; ix < sizeof(xs) / sizeof(xs[0]); ix++)
                for (size_t ip = 0; ip < sizeof(ps) / sizeof(ps[0]); ip++)
                        for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
                                struct simrun_app a, b;
                                FILE *f = fopen(scen, "w");
                                double dx, dp, dp0;

                                if (!f) {
                                        perror("bench_inflation: scenario");
                                        return 1;
                                }
                                snprintf(text, sizeof(text),
                                         "[machine]\npreset = xeon-e5-2630v2x2\n"
                                         "counter_noise = 0.01\n[app crunch]\n"
                                         "instructions = 1.3e11\np = %g\nextra_work = %g\n",
                                         ps[ip], xs[ix]);
                                fputs(text, f);
                                fclose(f);
                                unlink(db);
                                if (run_pinned(scen, db, pairs[k][0], &a) < 0 ||
                                    run_pinned(scen, db, pairs[k][1], &b) < 0) {
                                        failed++;
                                        continue;
                                }
                                cases++;
                                dx = fabs(b.work_inflation - xs[ix]);
                                dp = fabs(b.p_run - b.p_run_true);
                                dp0 = fabs(b.p_run_uncorrected - b.p_run_true);
                                printf("bench: inflation X %.2f P %.1f cores %u then %u: "
                                       "work_inflation %.5f ± %.5f (true %.2f), p_run %.4f, "
                                       "uncorrected %.4f, true %.4f [measured on the model "
                                       "machine]\n",
                                       xs[ix], ps[ip], pairs[k][0], pairs[k][1], b.work_inflation,
                                       b.work_inflation_error, xs[ix], b.p_run, b.p_run_uncorrected,
                                       b.p_run_true);
                                within += dx <= b.work_inflation_error;
                                if (!(dx <= TOL_X) || !(dp <= TOL_P) || !isnan(a.work_inflation) ||
                                    !(dx <= b.work_inflation_error)) {
                                        printf("bench: inflation X %.2f P %.1f cores %u then %u: "
                                               "|X error| %.5f (<= %.3f), |p_run error| %.4f "
                                               "(<= %.2f), first run's inflation %g (null), "
                                               "stated error %.5f MISSED\n",
                                               xs[ix], ps[ip], pairs[k][0], pairs[k][1], dx, TOL_X,
                                               dp, TOL_P, a.work_inflation, b.work_inflation_error);
                                        missed++;
                                }
                                worst_x = fmax(worst_x, dx);
                                worst_p = fmax(worst_p, dp);
                                worst_p0 = fmax(worst_p0, dp0);
                        }
        unlink(db);
        unlink(scen);
        rmdir(dir);
        printf("bench: inflation: %u cases, worst |X error| %.5f (target %.3f), %u within their "
               "stated error, worst |p_run − true| %.4f corrected (target %.2f), %.4f "
               "uncorrected [measured on the model machine]\n",
               cases, worst_x, TOL_X, within, worst_p, TOL_P, worst_p0);
        printf("bench: inflation: %u targets missed, %u cases failed to run\n", missed, failed);
        return missed || failed ? 1 : 0;
}
