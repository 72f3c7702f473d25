/* A returning app on a machine it shares (docs/history.md, "A returning app"): what history
 * remembers is a start, not a commitment. On the model machine, three apps that come back
 * together, with one history file, must do no worse on their later runs than on their first,
 * where none of them had a history (or than the best static partition, where the first run
 * beat it). */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl_test_sim.h"
#include "pctl/history.h"
#include "pctl/sim.h"
#include "pctl/simrun.h"

#define STEP_100MS (100 * 1000 * 1000ULL)
#define RUNS 4
/* Later runs over the first: the counters' noise moves a run by about 1%. */
#define LATER_RUN_SLACK 0.03

/* bench_random's seed 2721 (i7, 3 apps): a0 nearly serial with phases, a1 arriving at 5.6 s
 * with markers and spinning, a2 bandwidth-bound. a1's first run ends at 2 cores, a0's at 4
 * once it is alone; returning, a0 asked for its 4 (measured alone) and a1 for its 2 before
 * either knew P, the partition cut a1 to 1 core (the model could not rank it), and a1's
 * measured search from there never learned P: the second run was 1.21 x the oracle, the first
 * 1.00. */
#define SEED_2721                                                                                  \
        "[machine]\npreset = i7-4820k\ncounter_noise = 0.0299\nseed = 552429\n"                    \
        "[app a0]\ninstructions = 1.365e+11\np = 0.2146\nipc = 0.598\nimbalance = 3.955\n"         \
        "sleep = 0.068\nphases = 0.3014:36.6:1.483\n"                                              \
        "[app a1]\nstart_s = 5.6\ninstructions = 3.894e+11\np = 0.9109\nipc = 1.880\n"             \
        "spin = 0.904\nprogress_units = 439917\n"                                                  \
        "[app a2]\ninstructions = 1.706e+11\np = 0.9820\nipc = 1.329\n"                            \
        "mem_bytes_per_instruction = 4.830\nimbalance = 2.563\nprogress_units = 603396\n"

/* One `sim run --policy edp --history FILE`: the sum over apps of each app's EDP over the
 * partition oracle's (bench_random's figure). */
static double run_with_history(const struct runs_dir *d, double oracle)
{
        char err[512];
        struct simrun_options o = {
            .scenario = d->path, .policy = "edp", .delta_i_rate = NAN, .history_path = d->hist};
        struct simrun_result res;
        double sum = 0;

        if (simrun_policy(&o, &res, err, sizeof(err)) < 0)
                fail_msg("sim run: %s", err);
        for (unsigned i = 0; i < res.n_apps; i++) {
                printf("  %s: %u cores%s\n", res.apps[i].name, res.apps[i].cores,
                       res.apps[i].from_history ? " (from history)" : "");
                sum += res.apps[i].energy_j * res.apps[i].time_s;
        }
        simrun_result_free(&res);
        return sum / oracle;
}

/* RUNS runs of the scenario text with one history file: each fails the test when it is over
 * the first (no history) by more than LATER_RUN_SLACK. */
static void later_runs_no_worse(const char *text)
{
        struct sim_machine *m = sim_load_ok(text);
        struct sim_together t;
        struct runs_dir d;
        double ratio[RUNS];

        assert_int_equal(sim_oracle_together(m, SIM_OBJ_EDP, SIM_TOGETHER_AUTO, STEP_100MS, &t), 0);
        runs_dir_make(&d, text);
        for (unsigned k = 0; k < RUNS; k++) {
                ratio[k] = run_with_history(&d, t.score);
                printf("run %u: EDP / oracle %.3f\n", k + 1, ratio[k]);
        }
        runs_dir_remove(&d);
        sim_together_free(&t);
        sim_free(m);
        /* Against the first run, or the static oracle where the first run beat it: a
         * remembered start is one static configuration per app, and a first run below 1
         * beat the best static partition by moving within the run (since the stack's waits
         * correct the model, seed 2721's first run reads 0.973 and its later ones 1.00-1.02;
         * what history broke here read 1.21). */
        for (unsigned k = 1; k < RUNS; k++)
                if (ratio[k] > fmax(ratio[0], 1.0) + LATER_RUN_SLACK)
                        fail_msg("run %u at %.3f x the oracle, the first (no history) at %.3f",
                                 k + 1, ratio[k], ratio[0]);
}

static void returning_apps_sharing_the_machine_do_no_worse_than_their_first_run(void **state)
{
        later_runs_no_worse(SEED_2721);
}

/* bench_random's seed 93013 (server-64, 5 apps arriving over 26 s): a4 runs longest, a phase
 * at P 0.99 then one at P 0.45 from 30.5 s. Its first run learns through its first phase
 * (sharing) and settles its second at 9-10 cores; remembered, those 9 cores held the next
 * run's first phase (the score they were remembered with cannot be measured while sharing:
 * it waited for the measurement for 70 s): 5.86 x the oracle's EDP against 2.21. */
#define SEED_93013                                                                                 \
        "[machine]\npreset = server-64\ncounter_noise = 0.0205\nseed = 426196\n"                   \
        "[app a0]\ninstructions = 4.33e+12\np = 0.9920\nipc = 1.721\nphases = 0.9931:21.2\n"       \
        "progress_units = 421771\n"                                                                \
        "[app a1]\nstart_s = 21.1\ninstructions = 2.322e+12\np = 0.9932\nipc = 0.794\n"            \
        "mem_fraction = 0.383\nspin = 0.575\nprogress_units = 29518\n"                             \
        "[app a2]\nstart_s = 8.1\ninstructions = 1.342e+12\np = 0.9742\nipc = 0.522\n"             \
        "progress_units = 51712\n"                                                                 \
        "[app a3]\nstart_s = 26.5\ninstructions = 3.527e+11\np = 0.9959\nipc = 0.510\n"            \
        "progress_units = 210503\n"                                                                \
        "[app a4]\nstart_s = 0.3\ninstructions = 2.685e+12\np = 0.9918\nipc = 0.829\n"             \
        "phases = 0.4530:30.5\n"

static void no_start_recorded_past_a_phase_change_while_learning(void **state)
{
        later_runs_no_worse(SEED_93013);
}

/* bench_random's seed 5718 (server-64, 3 apps): a1 (P 0.99 with 30% sync, no markers) runs
 * on 19 cores on average while it shares the machine and settles at 4 once alone at its end.
 * Its third run explored half of the 4 for the whole run: 2.51 x the oracle's EDP against
 * 1.21; the run did not run near what it remembers, so it is not explored. */
#define SEED_5718                                                                                  \
        "[machine]\npreset = server-64\ncounter_noise = 0.0052\nseed = 903531\n"                   \
        "[app a0]\ninstructions = 3.639e+12\np = 0.9241\nipc = 1.611\nsleep = 0.284\n"             \
        "progress_units = 216479\n"                                                                \
        "[app a1]\ninstructions = 1.683e+12\np = 0.9908\nipc = 0.856\n"                            \
        "mem_bytes_per_instruction = 0.581\nsync = 0.295\n"                                        \
        "[app a2]\nstart_s = 21.7\ninstructions = 4.493e+11\np = 0.8781\nipc = 0.930\n"            \
        "mem_fraction = 0.155\nimbalance = 1.509\n"

static void an_app_that_did_not_run_where_it_settled_is_not_explored(void **state)
{
        later_runs_no_worse(SEED_5718);
}

/* bench_random's seed 93006 (server-64, one app): a first phase at P 0.995 for 18.5 s, then
 * P 0.33 for about 1000 s. Its first run's first phase settles at 62-64 cores, which is what it
 * remembers (a returning app starts in its first phase); the next run verified them and held
 * them through its second phase, the point it holds being measured at every sample and never
 * going stale: 1.01 x the oracle's EDP on its second run against 0.70. Alone, not sharing,
 * but the same commitment. */
#define SEED_93006                                                                                 \
        "[machine]\npreset = server-64\ncounter_noise = 0.0289\nseed = 598664\n"                   \
        "[app a0]\ninstructions = 1.117e+13\np = 0.9951\nipc = 1.721\nimbalance = 2.095\n"         \
        "phases = 0.3340:18.5\n"

static void a_verified_start_holds_for_a_while_not_the_run(void **state)
{
        later_runs_no_worse(SEED_93006);
}

static int collect_shared_apps(const struct history_entry *e, void *ctx)
{
        unsigned *seen = ctx;

        printf("  %s: best %u cores, measured with %u apps managed\n", e->key.exe, e->best_cores,
               e->shared_apps);
        seen[seen[0] + 1 < 8 ? ++seen[0] : 0] = e->shared_apps;
        return 0;
}

/* What each app's start was measured beside is recorded with it (schema 3): alone, one app;
 * seed 2721's three apps (two from the start, one arriving at 5.6 s), between one and three,
 * and not all alone. */
static void the_sharing_a_start_was_measured_in_is_recorded(void **state)
{
        static const struct {
                const char *text;
                unsigned n, min_apps, max_apps;
        } cases[] = {{SEED_93006, 1, 1, 1}, {SEED_2721, 3, 1, 3}};

        for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                struct runs_dir d;
                struct history *h;
                unsigned seen[8] = {0}, most = 0;
                char err[640];

                runs_dir_make(&d, cases[c].text);
                (void)run_with_history(&d, 1);
                assert_int_equal(history_open(d.hist, true, &h, err, sizeof(err)), 0);
                assert_int_equal(history_foreach(h, collect_shared_apps, seen, err, sizeof(err)),
                                 0);
                history_close(h);
                runs_dir_remove(&d);
                assert_int_equal(seen[0], cases[c].n);
                for (unsigned k = 1; k <= seen[0]; k++) {
                        assert_in_range(seen[k], cases[c].min_apps, cases[c].max_apps);
                        most = seen[k] > most ? seen[k] : most;
                }
                assert_int_equal(most, cases[c].max_apps);
        }
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(returning_apps_sharing_the_machine_do_no_worse_than_their_first_run),
            cmocka_unit_test(no_start_recorded_past_a_phase_change_while_learning),
            cmocka_unit_test(an_app_that_did_not_run_where_it_settled_is_not_explored),
            cmocka_unit_test(a_verified_start_holds_for_a_while_not_the_run),
            cmocka_unit_test(the_sharing_a_start_was_measured_in_is_recorded),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
