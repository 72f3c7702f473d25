/* Calibration on the model machine, checked against its truth (tests only). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/calibrate.h"
#include "pctl/sim.h"

/* The preset's system work per busy core (5.2e7/s) without its per-CPU term: calibration
 * fits eq. 14's α and β, and the per-CPU work on idle CPUs lands in β (docs/estimator.md). */
#define XEON "[machine]\npreset = xeon-e5-2630v2x2\nos_ips_cpu = 0\n"

static void calibrate_xeon(struct calibrate_result *res)
{
        char path[64], err[512] = "";
        struct calibrate_config cfg = {.quick = true,
                                       .sim_scenario =
                                           pctl_test_temp_file(path, sizeof(path),
                                                               XEON "[app ignored]\n"
                                                                    "instructions = 1e9\n"
                                                                    "p = 0.5\n")};
        int r = calibrate_run_sim(&cfg, res, err, sizeof(err));

        unlink(path);
        if (r < 0)
                fail_msg("calibrate_run_sim: %d %s", r, err);
}

/* Σ packages' truth power for an Amdahl app at (N, f), against the fitted model at the busy
 * cores the sensor saw: within 3% at every N (not only the quick plan's) and frequency. */
static void xeon_power_model_within_3pct(void **state)
{
        struct calibrate_result res = {0};
        struct sim_machine_info info;
        double worst = 0;

        calibrate_xeon(&res);
        assert_int_equal(res.profile.power.n_points, 8);
        for (unsigned n = 1; n <= 12; n++) {
                for (unsigned fi = 0; fi < 8; fi++) {
                        struct sim_machine *m;
                        struct sim_error se;
                        struct sensor *sensor;
                        struct actuator *act;
                        struct actuator_app *app;
                        struct sensor_sample s = {0};
                        struct sensor_config scfg = {0};
                        struct actuator_config acfg = {.dvfs = true};
                        struct cpumask cpus;
                        double busy = 0, truth = 0, pred, err;
                        unsigned khz;

                        assert_int_equal(sim_load_string(XEON "[app a]\ninstructions = 1e11\n"
                                                              "p = 0.8\n",
                                                         "t", &m, &se),
                                         0);
                        sim_machine_info(m, &info);
                        khz = info.freqs_mhz[fi] * 1000;
                        scfg.machine = acfg.machine = m;
                        assert_int_equal(sensor_open(&sim_sensor_ops, &scfg, &sensor), 0);
                        assert_int_equal(actuator_open(&sim_actuator_ops, &acfg, &act, NULL, 0), 0);
                        assert_int_equal(act->ops->adopt(act, SIM_PID_BASE, "a", &app), 0);
                        cpumask_zero(&cpus);
                        for (unsigned c = 0; c < n; c++)
                                cpumask_set(&cpus, c);
                        assert_int_equal(act->ops->set_cpus(act, app, &cpus), 0);
                        for (unsigned d = 0; d < act->n_domains; d++)
                                assert_int_equal(act->ops->set_freq(act, d, khz), 0);
                        assert_int_equal(sim_step(m, 100000000), 0);
                        assert_int_equal(sensor_read(sensor, &s), 0);
                        assert_int_equal(sim_step(m, 10000000), 0);
                        assert_int_equal(sensor_read(sensor, &s), 0);
                        for (unsigned c = 0; c < s.n_cpus; c++)
                                busy += (double)s.cpu[c].busy_ns / (double)s.interval_ns;
                        for (unsigned p = 0; p < info.sockets; p++)
                                truth += sim_truth_package_power(m, p);
                        assert_int_equal(
                            model_power_at(&res.profile.power, khz, busy, n - busy, &pred), 0);
                        err = fabs(pred - truth) / truth;
                        worst = fmax(worst, err);
                        if (err > 0.03)
                                fail_msg("N=%u f=%u MHz: model %.3f W, truth %.3f W (%.2f%%)", n,
                                         khz / 1000, pred, truth, 100 * err);
                        actuator_close(act);
                        sensor_sample_free(&s);
                        sensor_close(sensor);
                        sim_free(m);
                }
        }
        printf("worst power error %.4f%%\n", 100 * worst);
        calibrate_result_free(&res);
}

static void xeon_delta_i_rate_within_10pct(void **state)
{
        struct calibrate_result res = {0};

        calibrate_xeon(&res);
        assert_true(isfinite(res.profile.delta_i_rate));
        assert_near(res.profile.delta_i_rate, 5.2e7, 5.2e6);
        /* The model machine's system work here is all per busy core: eq. 14's α is about 0
         * (against 5.2e7 per busy core), and the fit is tight. */
        assert_true(fabs(res.delta_i_alpha_fit) < 5.2e5);
        assert_true(res.profile.delta_i_alpha >= 0 && res.profile.delta_i_alpha < 5.2e5);
        assert_true(res.profile.delta_i_fit_error < 0.01);
        /* The stand-in kernel's IPC is 1 (docs/calibration.md). */
        assert_near(res.profile.ipc1, 1.0, 0.01);
        calibrate_result_free(&res);
}

/* Runs made from eq. 14 with known α, β and ±1% noise on the total: the fit recovers α and β
 * within their standard errors' reach and reports the error; at one frequency, where
 * pbench's busy time is proportional to its work, β cannot be told from I0 per unit. */
static void delta_i_fit_recovers_alpha_and_beta(void **state)
{
        const double alpha = 2e8, beta = 5e7, i0_per_unit = 1e9;
        struct calibrate_run runs[32];
        struct calibrate_result res = {.n_freqs = 2, .freqs_khz = {1200000, 2400000}};

        for (unsigned k = 0; k < 32; k++) {
                double p = 0.1 + 0.25 * (k % 4), f_ghz = k < 16 ? 1.2 : 2.4;
                unsigned n = 1u << (k / 4 % 4);
                double units = 3.0, one_core_s = units * i0_per_unit / (1.5e9 * f_ghz);
                double wall = one_core_s * ((1 - p) + p / n), noise = 1 + 0.01 * ((k * 7 % 5) - 2);

                runs[k] = (struct calibrate_run){
                    .p = p,
                    .cores = n,
                    .freq_khz = (unsigned)(f_ghz * 1e6),
                    .work_units = units,
                    .wall_s = wall,
                    .busy_sum_s = one_core_s,
                    .busy_max_s = wall,
                    .cpu_busy_s = one_core_s,
                    .instr = (units * i0_per_unit + alpha * wall + beta * one_core_s) * noise,
                    .cycles_max = wall * f_ghz * 1e9,
                    .energy_j = NAN,
                };
        }
        res.runs = runs;
        res.n_runs = 32;
        assert_int_equal(calibrate_fit(&res), 0);
        assert_near(res.delta_i_alpha_fit, alpha, 4 * res.delta_i_alpha_se + 0.05 * alpha);
        assert_near(res.delta_i_beta_fit, beta, 4 * res.delta_i_beta_se + 0.05 * beta);
        assert_true(res.delta_i_alpha_se > 0 && res.delta_i_beta_se > 0);
        assert_near(res.profile.delta_i_alpha, fmax(res.delta_i_alpha_fit, 0), 0);
        assert_true(res.profile.delta_i_fit_error > 0 && isfinite(res.profile.delta_i_fit_error));
        free(res.rows);

        /* One frequency: busy time follows the work, β is taken as 0 (counted in I0) and α
         * is still fitted, with no standard error for β. */
        res = (struct calibrate_result){.n_freqs = 1, .freqs_khz = {2400000}};
        res.runs = runs + 16;
        res.n_runs = 16;
        assert_int_equal(calibrate_fit(&res), 0);
        assert_near(res.delta_i_alpha_fit, alpha, 4 * res.delta_i_alpha_se + 0.05 * alpha);
        assert_true(res.profile.delta_i_rate == 0 && isnan(res.delta_i_beta_se));
        free(res.rows);
        /* Too few runs for the unknowns: unknown, not made up. */
        res = (struct calibrate_result){.n_freqs = 1, .freqs_khz = {2400000}};
        res.runs = runs + 16;
        res.n_runs = 2;
        assert_int_equal(calibrate_fit(&res), 0);
        assert_true(isnan(res.profile.delta_i_rate) && isnan(res.profile.delta_i_alpha));
        free(res.rows);
}

static void xeon_p_estimates_match_programmed(void **state)
{
        struct calibrate_result res = {0};

        calibrate_xeon(&res);
        assert_int_equal(res.n_prows, 4);
        for (unsigned i = 0; i < res.n_prows; i++) {
                assert_near(res.prows[i].p_ls_time, res.prows[i].p, 0.01);
                assert_near(res.prows[i].p_ls_counters, res.prows[i].p, 0.01);
        }
        assert_true(res.profile.max_p_error <= 0.01);
        calibrate_result_free(&res);
}

static void quick_plan_is_1_2_half_all(void **state)
{
        unsigned c[8];
        double p[16];

        assert_int_equal(calibrate_plan_cores(true, 12, c, 8), 4);
        assert_int_equal(c[0], 1);
        assert_int_equal(c[1], 2);
        assert_int_equal(c[2], 6);
        assert_int_equal(c[3], 12);
        assert_int_equal(calibrate_plan_cores(true, 2, c, 8), 2);
        assert_int_equal(calibrate_plan_p(false, p, 16), 11);
        assert_near(p[10], 1.0, 1e-12);
        assert_int_equal(calibrate_plan_p(true, p, 16), 4);
}

static void bad_scenario_is_reported(void **state)
{
        struct calibrate_result res = {0};
        char path[64], err[512] = "";
        struct calibrate_config cfg = {
            .quick = true,
            .sim_scenario = pctl_test_temp_file(path, sizeof(path), "[machine]\npreset = nope\n"),
        };

        assert_true(calibrate_run_sim(&cfg, &res, err, sizeof(err)) < 0);
        assert_non_null(strstr(err, "nope"));
        unlink(path);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(xeon_power_model_within_3pct),
    cmocka_unit_test(xeon_delta_i_rate_within_10pct),
    cmocka_unit_test(delta_i_fit_recovers_alpha_and_beta),
    cmocka_unit_test(xeon_p_estimates_match_programmed),
    cmocka_unit_test(quick_plan_is_1_2_half_all),
    cmocka_unit_test(bad_scenario_is_reported),
};

PCTL_TEST_MAIN(tests)
