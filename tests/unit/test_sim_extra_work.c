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

/* Within a run pctl cannot see extra work (docs/allocator.md, "What a first run can reach
 * without markers"): stopped after 3 s (simrun's stop_at_s: the run so far), the runs with
 * X = 0 and X = 0.1 leave pctl the same estimates, settings and decisions, the app unfinished
 * at 3 s in both; only run to its end does the second take longer. */
static void pctl_sees_no_extra_work_within_a_run(void **state)
{
        static const double xs[] = {0, 0.1};
        struct simrun_result at3[2], whole[2];

        (void)state;
        for (unsigned i = 0; i < 2; i++) {
                char text[256], err[512];
                struct runs_dir d;
                struct simrun_options o = {.policy = "edp", .delta_i_rate = NAN, .stop_at_s = 3};

                snprintf(text, sizeof(text),
                         "[machine]\npreset = i7-4820k\ncounter_noise = 0.01\n"
                         "[app a]\ninstructions = 1.3e11\np = 0.95\nipc = 1\nextra_work = %g\n",
                         xs[i]);
                runs_dir_make(&d, text);
                o.scenario = d.path;
                if (simrun_policy(&o, &at3[i], err, sizeof(err)) < 0)
                        fail_msg("sim run, stopped at 3 s: %s", err);
                o.stop_at_s = 0;
                if (simrun_policy(&o, &whole[i], err, sizeof(err)) < 0)
                        fail_msg("sim run: %s", err);
                runs_dir_remove(&d);
                assert_near(at3[i].apps[0].time_s, 3, 0.11);
        }
        assert_int_equal(at3[0].apps[0].cores, at3[1].apps[0].cores);
        assert_int_equal(at3[0].apps[0].freq_mhz, at3[1].apps[0].freq_mhz);
        assert_int_equal(at3[0].decisions, at3[1].decisions);
        assert_int_equal(at3[0].changes, at3[1].changes);
        assert_true(isfinite(at3[0].apps[0].p_est) && isfinite(at3[0].apps[0].speedup_est));
        assert_near(at3[0].apps[0].p_est, at3[1].apps[0].p_est, 1e-9);
        assert_near(at3[0].apps[0].speedup_est, at3[1].apps[0].speedup_est, 1e-9);
        assert_near(at3[0].apps[0].energy_j, at3[1].apps[0].energy_j,
                    1e-9 * at3[0].apps[0].energy_j);
        assert_true(whole[0].apps[0].time_s > 5);
        assert_true(whole[1].apps[0].time_s > 1.1 * whole[0].apps[0].time_s);
        for (unsigned i = 0; i < 2; i++) {
                simrun_result_free(&at3[i]);
                simrun_result_free(&whole[i]);
        }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(extra_work_inflates_instructions_not_progress),
    cmocka_unit_test(one_cpu_runs_without_extra_work),
    cmocka_unit_test(extra_work_key_is_checked),
    cmocka_unit_test(pctl_sees_no_extra_work_within_a_run),
};

PCTL_TEST_MAIN(tests)
