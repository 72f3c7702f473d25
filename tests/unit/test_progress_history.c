/* Progress from whole runs in history (docs/history.md, "Progress from whole runs"): an app
 * without markers is scored by its instructions over the work inflation whole runs of it
 * measured; a returning app whose runs all ran at one count explores half of it once. On the
 * model machine, an app whose instructions inflate with its threads ends near its best after
 * a few runs (and `pctl status` says "progress: history"), and an app without extra work sheds
 * the risk rule's cost. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl_test_sim.h"
#include "pctl/history.h"
#include "pctl/report.h"
#include "pctl/sim.h"
#include "pctl/simrun.h"
#include "../../manager/alloc_risk.h"
#include "../../manager/manager_internal.h"

#define STEP_100MS (100 * 1000 * 1000ULL)

/* Whole runs whose widest pair states no error (the run at the most cores has an unseen tail
 * as large as its instructions): X comes from the pair of the others that states one, the
 * smallest, not lost; where every pair is as wide or no pair resolves, as the estimator gives. */
static void a_pair_that_resolves_x_is_used_where_the_widest_does_not(void **state)
{
        const double u = 2e10, x_true = 0.06;
        struct estimate_work_run runs[] = {
            {.instructions = u * (1 + x_true * 5), .instructions_err = u * 0.002, .cores = 6},
            {.instructions = u * (1 + x_true * 3), .instructions_err = u * 0.001, .cores = 4},
            {.instructions = u * (1 + x_true * 7), .instructions_err = u * 0.002, .cores = 8},
            {.instructions = u * (1 + x_true * 1), .instructions_err = u * 2, .cores = 2},
        };
        double x, err, x0, err0;
        unsigned ia, ib;

        (void)state;
        /* The estimator alone: runs at 8 and 2 cores, no error stated. */
        assert_int_equal(estimate_work_inflation(runs, 4, &x0, &err0, &ia, &ib), 0);
        assert_int_equal(ia, 2);
        assert_int_equal(ib, 3);
        assert_false(isfinite(err0));
        /* Of the pairs that state one, the smallest: 8 against 4 cores. */
        assert_int_equal(history_work_inflation(runs, 4, &x, &err, &ia, &ib), 0);
        assert_true(isfinite(err));
        assert_near(x, x_true, 1e-9);
        assert_int_equal(ia, 2);
        assert_int_equal(ib, 1);
        double e84, x84;
        struct estimate_work_run p84[] = {runs[2], runs[1]}, p64[] = {runs[0], runs[1]};

        assert_int_equal(estimate_work_inflation(p84, 2, &x84, &e84, NULL, NULL), 0);
        assert_float_equal(err, e84, 0);
        assert_int_equal(estimate_work_inflation(p64, 2, &x84, &e84, NULL, NULL), 0);
        assert_true(err < e84);
        /* A widest pair that states an error is the estimator's answer. */
        assert_int_equal(history_work_inflation(runs, 3, &x, &err, &ia, &ib), 0);
        assert_int_equal(estimate_work_inflation(runs, 3, &x0, &err0, NULL, NULL), 0);
        assert_float_equal(x, x0, 0);
        assert_float_equal(err, err0, 0);
        assert_int_equal(ia, 2);
        assert_int_equal(ib, 1);
        /* No other pair: no error stated, as before. */
        struct estimate_work_run two[] = {runs[2], runs[3]};

        assert_int_equal(history_work_inflation(two, 2, &x, &err, &ia, &ib), 0);
        assert_false(isfinite(err));
        assert_int_equal(ia, 0);
        assert_int_equal(ib, 1);
        /* Too few, or too close: the estimator's refusal. */
        assert_int_equal(history_work_inflation(runs, 1, &x, &err, NULL, NULL), -ENODATA);
}

/* Markers first, then history's inflation, then instructions alone. */
static void the_progress_source_is_markers_then_history_then_instructions(void **state)
{
        struct allocator_app a = {.cores = 9};

        assert_int_equal(alloc_progress_source(&a), ALLOC_PROGRESS_INSTRUCTIONS);
        assert_true(alloc_risk_applies(&a));
        assert_string_equal(alloc_progress_name(alloc_progress_source(&a)), "instructions");
        assert_true(alloc_progress_rate(&a, 1e9) == 1e9);
        a.history_x_known = true;
        a.history_x = 0.1;
        assert_int_equal(alloc_progress_source(&a), ALLOC_PROGRESS_HISTORY);
        assert_false(alloc_risk_applies(&a));
        assert_string_equal(alloc_progress_name(alloc_progress_source(&a)), "history");
        /* 9 cores at 0.1 per added core: 1.8 instructions per useful one. */
        assert_true(fabs(alloc_progress_rate(&a, 1.8e9) - 1e9) < 1);
        assert_true(a.markers.work_x == 0.1);
        /* Fewer instructions in parallel is not taken as more progress. */
        a.history_x = -0.05;
        assert_true(alloc_progress_rate(&a, 1e9) == 1e9);
        a.progress_known = true;
        assert_int_equal(alloc_progress_source(&a), ALLOC_PROGRESS_MARKERS);
        assert_string_equal(alloc_progress_name(alloc_progress_source(&a)), "markers");
}

/* One `sim run --policy edp --history FILE` of the scenario at path (text): its app's EDP over
 * the oracle's (the app's best static setting), and where it ended. The history knows an app
 * by its scenario, so every run of it reads the same file. */
static double run_with_history(const char *path, const char *text, const char *history,
                               unsigned *cores)
{
        char err[512];
        struct simrun_options o = {
            .scenario = path, .policy = "edp", .delta_i_rate = NAN, .history_path = history};
        struct simrun_result res;
        struct sim_machine *m = sim_load_ok(text);
        struct sim_result best;
        double ratio;

        if (simrun_policy(&o, &res, err, sizeof(err)) < 0)
                fail_msg("sim run: %s", err);
        assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_EDP, STEP_100MS, &best, NULL, NULL), 0);
        ratio = res.apps[0].energy_j * res.apps[0].time_s / sim_objective_score(SIM_OBJ_EDP, &best);
        *cores = res.apps[0].cores;
        printf("ended at %u cores (%s), oracle %u cores: EDP / oracle %.3f\n", res.apps[0].cores,
               res.apps[0].from_history ? "from history" : "learned", best.cores, ratio);
        simrun_result_free(&res);
        sim_free(m);
        return ratio;
}

/* bench_random's seed 5711 (server-64, P 0.81 with imbalance), with and without 7.7% more
 * instructions per added thread; no markers. */
#define SEED_5711                                                                                  \
        "[machine]\npreset = server-64\ncounter_noise = 0.0134\nseed = 949832\n"                   \
        "[app a0]\ninstructions = 2.277e+11\np = 0.8144\nipc = 0.617\nimbalance = 2.836\n"

/* Five runs of the same app with one history file; the runs' figures and end counts. */
static void five_runs(const struct runs_dir *d, const char *text, double ratio[5],
                      unsigned cores[5])
{
        for (unsigned i = 0; i < 5; i++)
                ratio[i] = run_with_history(d->path, text, d->hist, &cores[i]);
}

/* What `pctl status --json` says the returning app's progress is, 2 s into a sixth run. */
static char *status_progress(const struct runs_dir *d, char *out, size_t size)
{
        char spec[80], err[640];
        struct platform_options po = {.spec = spec, .actuator = {.dvfs = true}};
        struct manager_options mo = {.delta_i_rate = NAN};
        struct platform *pf;
        struct history *h;
        struct manager *m;
        struct json_object *j, *apps, *v;

        snprintf(spec, sizeof(spec), "sim:%s", d->path);
        if (platform_open(&po, &pf, err, sizeof(err)) != 0)
                fail_msg("platform_open(%s): %s", spec, err);
        if (history_open(d->hist, false, &h, err, sizeof(err)) != 0)
                fail_msg("history_open: %s", err);
        config_init(&mo.conf);
        mo.platform = pf;
        mo.dvfs = pf->actuator->can_set_freq;
        mo.history = h;
        assert_int_equal(manager_new(&mo, NULL, &m), 0);
        sim_step(pf->sim, 0);
        if (manager_adopt(m, SIM_PID_BASE, "edp", err, sizeof(err)) != 0)
                fail_msg("adopt: %s", err);
        for (unsigned step = 0; step < 20; step++) {
                platform_advance(pf, 100 * NSEC_PER_MSEC);
                manager_sample(m);
                if (step % 10 == 9)
                        manager_decide(m);
        }
        j = json_object_new_object();
        manager_status(m, j);
        assert_true(json_object_object_get_ex(j, "apps", &apps));
        assert_true(json_object_object_get_ex(json_object_array_get_idx(apps, 0), "progress", &v));
        snprintf(out, size, "%s", json_object_get_string(v));
        json_object_put(j);
        manager_free(m);
        history_close(h);
        platform_close(pf);
        return out;
}

/* The inflating app: by instructions it ends at 22 cores, 1.72 x the oracle's EDP (8 cores),
 * run after run; with whole runs in history (the first two differ enough in their core counts
 * once its third run explores) its last runs are within 2% of the oracle. Without the history
 * source every run ends where the first did. */
static void history_places_an_inflating_app_near_its_best(void **state)
{
        double ratio[5];
        unsigned cores[5];

        struct runs_dir d;
        char progress[32];

        runs_dir_make(&d, SEED_5711 "extra_work = 0.0766\n");
        five_runs(&d, SEED_5711 "extra_work = 0.0766\n", ratio, cores);
        assert_true(ratio[0] > 1.5);
        if (ratio[4] > 1.02 || ratio[3] > 1.03)
                fail_msg("runs 4 and 5 at %.3f and %.3f x the oracle's EDP (%u and %u cores)",
                         ratio[3], ratio[4], cores[3], cores[4]);
        assert_string_equal(status_progress(&d, progress, sizeof(progress)), "history");
        runs_dir_remove(&d);
}

/* The same app without extra work: its first two runs end at the same count, where the risk
 * rule stops it (21 cores, oracle 35); the third explores half of it (the cost of the
 * measurement), and then, its extra work measured as none, it is scored without the rule and
 * ends within 2% of its oracle. */
static void exploration_lifts_the_risk_from_an_app_without_extra_work(void **state)
{
        double ratio[5];
        unsigned cores[5];

        struct runs_dir d;

        runs_dir_make(&d, SEED_5711);
        five_runs(&d, SEED_5711, ratio, cores);
        runs_dir_remove(&d);
        if (cores[2] > cores[1] / 2 + 1)
                fail_msg("run 3 at %u cores, run 2 at %u: no exploration", cores[2], cores[1]);
        if (ratio[4] > 1.02)
                fail_msg("run 5 at %.3f x the oracle's EDP (%u cores)", ratio[4], cores[4]);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(the_progress_source_is_markers_then_history_then_instructions),
            cmocka_unit_test(a_pair_that_resolves_x_is_used_where_the_widest_does_not),
            cmocka_unit_test(history_places_an_inflating_app_near_its_best),
            cmocka_unit_test(exploration_lifts_the_risk_from_an_app_without_extra_work),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
