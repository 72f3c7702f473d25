/* Progress markers (docs/allocator.md, "Progress"): the model machine's apps that mark their
 * progress (progress_units), what the markers count, and the allocator scoring by them: an app
 * whose work inflates with threads is placed near its best only when it marks its progress. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl/sim.h"
#include "pctl/simrun.h"

#define STEP_100MS (100 * 1000 * 1000ULL)

/* On server-64 at 8% extra instructions per added thread: by instructions the EDP-best count
 * is about 35, by progress 7. */
#define EXTRA_WORK_APP                                                                             \
        "[machine]\npreset = server-64\ncounter_noise = 0.01\nseed = 5\n"                          \
        "[app crunch]\ninstructions = 1.5e11\np = 0.85\nipc = 1.0\nextra_work = 0.08\n"

static void markers_count_useful_work_only(void **state)
{
        struct sim_machine *m =
            sim_load_ok(EXTRA_WORK_APP "progress_units = 1000\n[app plain]\ninstructions = 1e10\n"
                                       "p = 0.5\n");
        struct sim_app_truth t;
        uint64_t units = 0;

        assert_int_equal(sim_progress_read(m, 1, &units), -ENODATA);
        assert_int_equal(sim_progress_read(m, 2, &units), -ESRCH);
        assert_int_equal(sim_progress_read(m, 0, &units), 0);
        assert_int_equal(units, 0);
        /* Every app on all 64 CPUs: crunch retires 1 + 0.08 x 63 = 6 instructions per useful
         * one; its markers count the useful ones. */
        for (unsigned i = 0; i < 50; i++)
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(sim_truth_app(m, 0, &t), 0);
        assert_int_equal(sim_progress_read(m, 0, &units), 0);
        assert_true(units > 0);
        while (!sim_done(m))
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(sim_progress_read(m, 0, &units), 0);
        assert_int_equal(units, 1000);
        sim_free(m);
}

static void markers_are_amdahl_only(void **state)
{
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app rows]\nmeasured = 1 3700 10 100\n"
                       "measured = 2 3700 6 110\nprogress_units = 100\n",
                       4, "do not mix");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\n"
                       "progress_units = -1\n",
                       5, "progress_units");
}

/* Scored by instructions, the search believes the extra instructions and ends at 3 x the
 * oracle's EDP; scored by the app's markers, within 10% of it. */
static void markers_place_an_inflating_app_near_its_best(void **state)
{
        assert_true(sim_edp_over_oracle(EXTRA_WORK_APP, "instructions only") > 2.0);
        assert_true(sim_edp_over_oracle(EXTRA_WORK_APP "progress_units = 100000\n",
                                        "with markers") <= 1.10);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(markers_count_useful_work_only),
            cmocka_unit_test(markers_are_amdahl_only),
            cmocka_unit_test(markers_place_an_inflating_app_near_its_best),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
