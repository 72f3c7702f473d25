#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pctl_test.h"
#include "pctl/model.h"
#include "pctl/power_decl.h"

/* The reference paper's Table IV: programmed P and N -> calculated speedup. */
static void table_iv_speedups(void **state)
{
        static const struct {
                double p;
                unsigned n;
                double sp;
        } rows[] = {
            {0.1, 2, 1.052}, {0.1, 3, 1.071},  {0.1, 4, 1.081}, {0.9, 3, 2.500},
            {0.9, 4, 3.077}, {0.1, 12, 1.100}, {0.9, 2, 1.818}, {0.9, 32, 7.805},
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                double sp;

                assert_int_equal(model_speedup(rows[i].p, rows[i].n, &sp), 0);
                assert_near(sp, rows[i].sp, 0.001); /* the paper prints 3 decimals */
        }
}

static void p_from_measured_speedup(void **state)
{
        double p;

        /* Table IV, Xeon, P = 0.9, N = 12, measured speedup 5.484. */
        assert_int_equal(model_p_from_speedup(12, 5.484, &p), 0);
        assert_near(p, 0.8920, 0.00005);
        /* Round trip through eq. 3. */
        for (double pp = 0.0; pp <= 1.0; pp += 0.05) {
                double sp;

                assert_int_equal(model_speedup(pp, 7, &sp), 0);
                assert_int_equal(model_p_from_speedup(7, sp, &p), 0);
                assert_near(p, pp, 1e-12);
        }
}

static void p_domain_errors(void **state)
{
        double p = 42;

        assert_int_equal(model_p_from_speedup(1, 1.0, &p), -EDOM);
        assert_int_equal(model_p_from_speedup(0, 1.0, &p), -EDOM);
        assert_int_equal(model_p_from_speedup(4, 0.0, &p), -EDOM);
        assert_int_equal(model_p_from_speedup(4, -1.0, &p), -EDOM);
        assert_int_equal(model_p_from_speedup(4, NAN, &p), -EDOM);
        assert_true(p == 42); /* untouched on error */
}

static void superlinear_is_flagged_not_clamped(void **state)
{
        double p;

        assert_int_equal(model_p_from_speedup(4, 4.5, &p), MODEL_SUPERLINEAR);
        assert_true(p > 1.0);
        assert_near(p, 4.0 * (1 - 4.5) / (4.5 * (1 - 4.0)), 1e-12);
}

static void times_and_rates(void **state)
{
        double t1, tn, ipc, sp, ppw, epi, edp;

        assert_int_equal(model_time_1(5.6e9, 2.8e9, &t1), 0); /* eq. 1 */
        assert_near(t1, 2.0, 1e-12);
        assert_int_equal(model_time_n(0.9, 4, t1, &tn), 0); /* eq. 2 */
        assert_near(tn, 2.0 * (0.1 + 0.9 / 4), 1e-12);
        assert_int_equal(model_time_1(1, 0, &t1), -EDOM);
        assert_int_equal(model_time_n(0.5, 0, 1, &tn), -EDOM);
        assert_int_equal(model_ipc(3e9, 2e9, &ipc), 0); /* eq. 7 */
        assert_near(ipc, 1.5, 1e-12);
        assert_int_equal(model_ipc(3e9, 0, &ipc), -EDOM);
        assert_near(model_ips(1.5, 3.7e9), 5.55e9, 1);              /* eq. 8 */
        assert_int_equal(model_speedup_from_ipc(3.0, 1.0, &sp), 0); /* eq. 9 */
        assert_near(sp, 3.0, 1e-12);
        assert_int_equal(model_speedup_from_ipc(3.0, 0.0, &sp), -EDOM);
        assert_near(model_instr_total(5.6e9, 6.58e4), 5.6e9 + 6.58e4, 1e-3); /* eq. 5 */
        assert_int_equal(model_perf_per_watt(4e9, 20, &ppw), 0);             /* eq. 11 */
        assert_near(ppw, 2e8, 1e-3);
        assert_int_equal(model_perf_per_watt(4e9, 0, &ppw), -EDOM);
        assert_int_equal(model_epi(20, 4e9, &epi), 0); /* eq. 12 */
        assert_near(epi, 5e-9, 1e-20);
        assert_int_equal(model_epi(20, 0, &epi), -EDOM);
        assert_int_equal(model_edp(20, 3, &edp), 0); /* eq. 13 */
        assert_near(edp, 180, 1e-12);
        assert_int_equal(model_speedup(2.0, 1000, &sp), -EDOM); /* denominator <= 0 */
}

/* P_LS recovers a known P from noisy points at several core counts. */
static void least_squares_recovers_p(void **state)
{
        const double truth[] = {0.1, 0.4, 0.7, 0.9, 0.99};
        struct model_obs obs[60];
        struct model_fit fit;

        srand(7);
        for (size_t t = 0; t < sizeof(truth) / sizeof(truth[0]); t++) {
                size_t n = 0;

                for (unsigned cores = 2; cores <= 61; cores += 3) {
                        double sp, noise = 1.0 + 0.02 * ((double)rand() / RAND_MAX - 0.5);

                        assert_int_equal(model_speedup(truth[t], cores, &sp), 0);
                        obs[n++] = (struct model_obs){cores, sp * noise, 1.0};
                }
                assert_int_equal(model_p_least_squares(obs, n, &fit), 0);
                assert_near(fit.p, truth[t], 0.01);
                assert_int_equal(fit.n_points, n);
                assert_int_equal(fit.n_cores, n);
                assert_true(fit.rms_residual > 0);
        }
}

static void least_squares_exact_and_weighted(void **state)
{
        struct model_obs obs[3];
        struct model_fit fit;
        double sp4, sp8;

        model_speedup(0.8, 4, &sp4);
        model_speedup(0.8, 8, &sp8);
        obs[0] = (struct model_obs){1, 1.0, 1.0}; /* one core: no information, skipped */
        obs[1] = (struct model_obs){4, sp4, 1.0};
        obs[2] = (struct model_obs){8, sp8, 1.0};
        assert_int_equal(model_p_least_squares(obs, 3, &fit), 0);
        assert_near(fit.p, 0.8, 1e-12);
        assert_near(fit.rms_residual, 0.0, 1e-9);
        assert_int_equal(fit.n_points, 2);
        /* A stale point at another P, weighted down, barely moves the fit. */
        model_speedup(0.2, 8, &obs[2].speedup);
        obs[2].weight = 1e-6;
        assert_int_equal(model_p_least_squares(obs, 3, &fit), 0);
        assert_near(fit.p, 0.8, 1e-4);
        /* Nothing usable. */
        assert_int_equal(model_p_least_squares(obs, 1, &fit), -EDOM);
}

static void power_model_interpolates_never_extrapolates(void **state)
{
        struct model_power pm = {.static_w = 10};
        double w;

        assert_int_equal(model_power_set_point(&pm, 2000000, 5, 1), 0);
        assert_int_equal(model_power_set_point(&pm, 1000000, 2, 0.5), 0);
        assert_int_equal(pm.points[0].freq_khz, 1000000);
        assert_int_equal(model_power_max_freq(&pm), 2000000);
        assert_int_equal(model_power_at(&pm, 2000000, 4, 0, &w), 0);
        assert_near(w, 30, 1e-12);
        assert_int_equal(model_power_at(&pm, 1500000, 2, 2, &w), 0);
        assert_near(w, 10 + 3.5 * 2 + 0.75 * 2, 1e-12);
        assert_int_equal(model_power_at(&pm, 2500000, 1, 0, &w), -ENODATA);
        assert_int_equal(model_power_at(&pm, 500000, 1, 0, &w), -ENODATA);
        assert_int_equal(model_power_set_point(&pm, 1000000, 3, 0.5), 0); /* replace */
        assert_int_equal(pm.n_points, 2);
}

static void prediction_edp_and_frequency(void **state)
{
        struct model_power pm = {.static_w = 20};
        struct model_app app = {.p = 0.95,
                                .t1_s = 10,
                                .mem_fraction = 0.0,
                                .instructions = 1e10,
                                .freq_ref_khz = 2000000};
        struct model_prediction pr, half;

        model_power_set_point(&pm, 2000000, 10, 0);
        model_power_set_point(&pm, 1000000, 3, 0);
        assert_int_equal(model_predict(&app, &pm, 2, 2000000, &pr), 0);
        assert_near(pr.speedup, 1 / (0.05 + 0.475), 1e-12);
        assert_near(pr.time_s, 10 * (0.05 + 0.475), 1e-12);
        assert_near(pr.power_w, 20 + 10 * pr.speedup, 1e-9);
        assert_near(pr.edp_js, pr.power_w * pr.time_s * pr.time_s, 1e-9);
        assert_near(pr.energy_j, pr.power_w * pr.time_s, 1e-9);
        assert_near(pr.perf_per_w, 1e10 / pr.time_s / pr.power_w, 1e-3);
        assert_near(pr.epi_j, pr.power_w / (1e10 / pr.time_s), 1e-20);
        /* Compute-bound: half the frequency doubles the time. */
        assert_int_equal(model_predict(&app, &pm, 2, 1000000, &half), 0);
        assert_near(half.time_s, 2 * pr.time_s, 1e-12);
        /* Half memory-bound: only the compute half stretches. */
        app.mem_fraction = 0.5;
        assert_int_equal(model_predict(&app, &pm, 2, 1000000, &half), 0);
        assert_near(half.time_s, 1.5 * pr.time_s, 1e-12);
        /* No power model: time still predicted, power unknown (NaN), not invented. */
        assert_int_equal(model_predict(&app, NULL, 2, 2000000, &pr), 0);
        assert_true(isnan(pr.power_w) && isnan(pr.edp_js));
        /* A frequency outside the model's points: power unknown. */
        assert_int_equal(model_predict(&app, &pm, 2, 3000000, &pr), 0);
        assert_true(isnan(pr.power_w));
        assert_int_equal(model_predict(&app, &pm, 0, 2000000, &pr), -EDOM);
        app.t1_s = 0;
        assert_int_equal(model_predict(&app, &pm, 2, 2000000, &pr), -EDOM);
}

/* For the end-to-end target (declared static_w = 20, core_w = 10, 2 CPUs): EDP picks 1 core
 * at P = 0.2 and 2 cores at P = 0.95. */
static void edp_choice_on_declared_model(void **state)
{
        struct power_decl d = {0};
        struct model_power pm;
        struct model_app app = {.t1_s = 1, .freq_ref_khz = 1000};
        struct model_prediction one, two;

        assert_int_equal(power_decl_key(&d, "static_w", "20"), 0);
        assert_int_equal(power_decl_key(&d, "core_w", "10"), 0);
        assert_int_equal(power_decl_key(&d, "core_w", "-1"), -ERANGE);
        assert_int_equal(power_decl_key(&d, "core_w", "ten"), -EINVAL);
        assert_int_equal(power_decl_key(&d, "cores_w", "10"), -ENOENT);
        assert_near(d.core_w, 10, 0);
        assert_int_equal(power_decl_to_model(&d, 1000, &pm), 0);
        assert_true(pm.declared);
        app.p = 0.2;
        model_predict(&app, &pm, 1, 1000, &one);
        model_predict(&app, &pm, 2, 1000, &two);
        assert_true(one.edp_js < two.edp_js);
        app.p = 0.95;
        model_predict(&app, &pm, 1, 1000, &one);
        model_predict(&app, &pm, 2, 1000, &two);
        assert_true(two.edp_js < one.edp_js);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(table_iv_speedups),
    cmocka_unit_test(p_from_measured_speedup),
    cmocka_unit_test(p_domain_errors),
    cmocka_unit_test(superlinear_is_flagged_not_clamped),
    cmocka_unit_test(times_and_rates),
    cmocka_unit_test(least_squares_recovers_p),
    cmocka_unit_test(least_squares_exact_and_weighted),
    cmocka_unit_test(power_model_interpolates_never_extrapolates),
    cmocka_unit_test(prediction_edp_and_frequency),
    cmocka_unit_test(edp_choice_on_declared_model),
};
PCTL_TEST_MAIN(tests)
