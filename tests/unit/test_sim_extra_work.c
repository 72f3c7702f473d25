/* The model machine's extra_work (docs/sim.md): on k threads an app retires 1 + X (k − 1)
 * instructions per useful one, each taking busy time, so its counters and busy time read a
 * speedup its progress does not have. The truth stays in progress. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl/sim.h"

#define STEP_100MS (100 * 1000 * 1000ULL)

/* Runs m (one app on all 4 CPUs) to its end reading the sensor: the instructions, the largest
 * CPU's cycles and the busy seconds it counted. */
static void run_counting(struct sim_machine *m, double *instr, double *cmax, double *busy_s)
{
        struct sensor s = {.ops = &sim_sensor_ops};
        struct sensor_config cfg = {.machine = m};
        struct sensor_sample smp = {.n_cpus = 4};
        double cycles[4] = {0};

        assert_int_equal(sim_sensor_ops.open(&s, &cfg), 0);
        smp.cpu = calloc(4, sizeof(*smp.cpu));
        assert_non_null(smp.cpu);
        *instr = *cmax = *busy_s = 0;
        while (!sim_done(m)) {
                assert_int_equal(sim_step(m, STEP_100MS), 0);
                assert_int_equal(sim_sensor_ops.read(&s, &smp), 0);
                for (unsigned c = 0; c < 4; c++) {
                        *instr += smp.cpu[c].instr;
                        cycles[c] += smp.cpu[c].cycles;
                        *busy_s += smp.cpu[c].busy_ns / 1e9;
                }
        }
        for (unsigned c = 0; c < 4; c++)
                *cmax = fmax(*cmax, cycles[c]);
        free(smp.cpu);
        sim_sensor_ops.close(&s);
}

/* P 0.9 on 4 CPUs, T(1) = 1 s, D = 0.1 + 0.9/4 = 0.325. With X = 0.05 the run retires
 * 1.15 times I0, takes 1.15 times as long, and its CPUs' busy shares do not change: I0 over
 * C_max (eq. 7 and 9) and Σ busy / max busy both read 1/D, the speedup without the extra
 * work, where the true one is 1/(1.15 D). The whole run's true P is what the wall times give:
 * (1 − 1.15 D) / (1 − 1/4). */
static void extra_work_inflates_instructions_not_progress(void **state)
{
        static const double xs[] = {0, 0.05};
        const double d = 0.1 + 0.9 / 4;

        for (unsigned i = 0; i < 2; i++) {
                char text[256];
                double infl = 1 + xs[i] * 3, instr, cmax, busy_s;
                struct sim_app_truth t;
                struct sim_stack_acc from = {0}, to;
                struct stack st;
                double sum;
                struct sim_machine *m;

                snprintf(text, sizeof(text),
                         "[machine]\npreset = i7-4820k\nos_ips = 0\nos_ips_cpu = 0\n"
                         "[app a]\ninstructions = 3.7e9\np = 0.9\nipc = 1\nextra_work = %g\n",
                         xs[i]);
                m = sim_load_ok(text);
                run_counting(m, &instr, &cmax, &busy_s);
                assert_int_equal(sim_truth_app(m, 0, &t), 0);
                assert_true(t.finished);
                assert_near(t.extra_work, xs[i], 1e-15);
                assert_near(instr, 3.7e9 * infl, 3.7e9 * infl * 1e-9 + 100);
                assert_near(t.time_s, d * infl, 0.002);
                assert_near(instr / cmax, 1 / d, 1e-6 / d);
                assert_near(busy_s / (cmax / 3.7e9), 1 / d, 1e-6 / d);
                assert_near(t.speedup_true, 1 / (d * infl), 1e-9);
                assert_near(t.p_true, 0.9, 1e-12);
                assert_near(t.p_run_true, (1 - d * infl) / 0.75, 2e-3);
                /* The stack's truth still adds up to the CPUs: the extra work is in
                 * interference. */
                assert_int_equal(sim_truth_stack_acc(m, 0, &to), 0);
                sim_truth_stack(&from, &to, &st);
                sum = st.speedup;
                for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                        sum += st.component[c];
                assert_near(sum, 4, 1e-9);
                assert_near(st.speedup, 1 / (d * infl), 1e-9);
                assert_near(st.component[STACK_INTERFERENCE], (1 - 1 / infl) / d, 1e-9);
                sim_free(m);
        }
}

/* On one CPU there is no added thread: the same time and instructions as without the key; on
 * four the oracle's runs take the extra work's time. */
static void one_cpu_runs_without_extra_work(void **state)
{
        struct sim_machine *m =
            sim_load_ok("[machine]\npreset = i7-4820k\n"
                        "[app a]\ninstructions = 3.7e9\np = 0.5\nextra_work = 0.2\n"
                        "[app b]\ninstructions = 3.7e9\np = 0.5\n");
        struct sim_result ra, rb;

        assert_int_equal(sim_run_alone(m, 0, 1, 3700, STEP_100MS, &ra), 0);
        assert_int_equal(sim_run_alone(m, 1, 1, 3700, STEP_100MS, &rb), 0);
        assert_near(ra.time_s, rb.time_s, 1e-9);
        assert_int_equal(sim_run_alone(m, 0, 4, 3700, STEP_100MS, &ra), 0);
        assert_int_equal(sim_run_alone(m, 1, 4, 3700, STEP_100MS, &rb), 0);
        assert_near(ra.time_s / rb.time_s, 1 + 0.2 * 3, 1e-3);
        sim_free(m);
}

static void extra_work_key_is_checked(void **state)
{
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\np = 0.5\n"
                       "extra_work = 1.5\n",
                       6, "outside");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\np = 0.5\n"
                       "extra_work = -0.1\n",
                       6, "outside");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\np = 0.5\n"
                       "extra_work = lots\n",
                       6, "not a number");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\nextra_work = 0.1\n"
                       "measured = 1 3700 10 100\n",
                       4, "extra_work, progress_units) do not mix");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(extra_work_inflates_instructions_not_progress),
    cmocka_unit_test(one_cpu_runs_without_extra_work),
    cmocka_unit_test(extra_work_key_is_checked),
};

PCTL_TEST_MAIN(tests)
