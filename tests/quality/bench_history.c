/* Memory of past runs (issue 14): every start-up scenario (tests/scenarios/startup-*.ini: suite
 * apps run for a tenth of the time, where learning is a large share of the run) run twice
 * under the edp policy with one history file, as `pctl sim run --history FILE` does. The first
 * run learns as without a history; the second starts each app at the best configuration the
 * first one measured. Figures: each run's EDP over the oracle's (the app's best static setting,
 * alone). Target (issue 14): the second run <= 1.02 x the oracle on every scenario. All
 * figures are measured on the model machine; nothing is extrapolated. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/simrun.h"
#include "pctl/sim.h"

#define STEP_NS (100 * 1000 * 1000ULL)
#define TARGET_SECOND_RUN 1.02

static const char *const scenarios[] = {
    "startup-i7-p03.ini",  "startup-i7-p09.ini",    "startup-i7-mem.ini",
    "startup-i7-spin.ini", "startup-i7-phases.ini", "startup-measured-falloff.ini",
};

/* Sum over apps of each app's best static EDP, alone. */
static int oracle_edp(const char *path, double *out)
{
        struct sim_machine *m;
        struct sim_error err;
        struct sim_machine_info info;
        double sum = 0;
        int r = sim_load(path, &m, &err);

        if (r < 0) {
                fprintf(stderr, "bench_history: %s: %s\n", path, err.all);
                return r;
        }
        sim_machine_info(m, &info);
        for (unsigned i = 0; r == 0 && i < info.n_apps; i++) {
                struct sim_result best, *all = NULL;
                unsigned n_all = 0;

                r = sim_oracle_app(m, i, SIM_OBJ_EDP, STEP_NS, &best, &all, &n_all);
                if (r == 0)
                        sum += sim_objective_score(SIM_OBJ_EDP, &best);
                free(all);
        }
        sim_free(m);
        *out = sum;
        return r;
}

/* One run under edp with the history file; the sum of the apps' EDP, and how many apps
 * started from history. */
static int run_edp(const char *path, const char *history, double *edp, unsigned *from_history)
{
        char err[512];
        struct simrun_options o = {
            .scenario = path, .policy = "edp", .delta_i_rate = NAN, .history_path = history};
        struct simrun_result res;
        int r = simrun_policy(&o, &res, err, sizeof(err));

        if (r < 0) {
                fprintf(stderr, "bench_history: %s: %s\n", path, err);
                return r;
        }
        *edp = 0;
        *from_history = 0;
        for (unsigned i = 0; i < res.n_apps; i++) {
                *edp += res.apps[i].energy_j * res.apps[i].time_s;
                *from_history += res.apps[i].from_history;
        }
        simrun_result_free(&res);
        return 0;
}

int main(void)
{
        char dir[] = "/tmp/pctl-bench-history-XXXXXX", db[128], path[512];
        unsigned missed = 0, failed = 0;

        if (!mkdtemp(dir)) {
                perror("bench_history: mkdtemp");
                return 1;
        }
        for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
                double oracle, first, second;
                unsigned fh1, fh2;

                snprintf(path, sizeof(path), "%s/tests/scenarios/%s", SRC_DIR, scenarios[i]);
                snprintf(db, sizeof(db), "%s/%zu.db", dir, i);
                if (oracle_edp(path, &oracle) < 0 || run_edp(path, db, &first, &fh1) < 0 ||
                    run_edp(path, db, &second, &fh2) < 0) {
                        failed++;
                        unlink(db);
                        continue;
                }
                unlink(db);
                printf("bench: history %s: EDP/oracle first run = %.3f (%u apps from history), "
                       "second run = %.3f (%u from history), target second <= %.2f [measured]\n",
                       scenarios[i], first / oracle, fh1, second / oracle, fh2, TARGET_SECOND_RUN);
                if (!(second / oracle <= TARGET_SECOND_RUN)) {
                        printf("bench: history %s: second run %.3f x the oracle MISSED\n",
                               scenarios[i], second / oracle);
                        missed++;
                }
                if (fh1 != 0 || fh2 == 0) {
                        printf("bench: history %s: %u apps from history in the first run, %u in "
                               "the second MISSED\n",
                               scenarios[i], fh1, fh2);
                        missed++;
                }
        }
        rmdir(dir);
        printf("bench: history: %u targets missed, %u scenarios failed to run\n", missed, failed);
        return missed || failed ? 1 : 0;
}
