#include <errno.h>
#include <math.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/model.h"
#include "pctl/objective.h"
#include "pctl/power_decl.h"

static void names_round_trip(void **state)
{
        enum objective_kind o = OBJECTIVE_MONITOR;

        for (unsigned i = 0; i < OBJECTIVE_COUNT; i++) {
                assert_int_equal(objective_from_string(objective_to_string(i), &o), 0);
                assert_int_equal(o, i);
        }
        assert_int_equal(objective_from_string("perf", &o), -EINVAL);
        assert_int_equal(objective_from_string("", &o), -EINVAL);
        assert_int_equal(o, OBJECTIVE_COUNT - 1); /* untouched */
        assert_string_equal(objective_to_string(OBJECTIVE_COUNT), "?");
}

/* The declared model of the end-to-end test: 20 W static, 10 W per held core. */
static void declared_model(struct model_power *pm)
{
        struct power_decl d = {};

        assert_int_equal(power_decl_key(&d, "static_w", "20"), 0);
        assert_int_equal(power_decl_key(&d, "core_w", "10"), 0);
        assert_int_equal(power_decl_to_model(&d, 3000000, pm), 0);
}

static unsigned best_cores(enum objective_kind o, double p, const struct model_power *pm,
                           unsigned max_cores)
{
        struct model_app app = {.p = p, .t1_s = 10, .instructions = 3e10, .freq_ref_khz = 3000000};
        double best = NAN;
        unsigned best_n = 0;

        for (unsigned n = 1; n <= max_cores; n++) {
                struct model_prediction pr;
                double s;

                assert_int_equal(model_predict(&app, pm, n, 3000000, &pr), 0);
                assert_int_equal(objective_score_prediction(o, &pr, &s), 0);
                if (best_n == 0 || s < best) {
                        best = s;
                        best_n = n;
                }
        }
        return best_n;
}

static void edp_prefers_one_core_at_p02_two_at_p095(void **state)
{
        struct model_power pm;

        declared_model(&pm);
        /* P = 0.2: 1 core 30 W * 10^2 = 3000; 2 cores 40 W * 9^2 = 3240. */
        assert_int_equal(best_cores(OBJECTIVE_EDP, 0.2, &pm, 2), 1);
        /* P = 0.95: 2 cores 40 W * 5.25^2 = 1102.5 < 3000. */
        assert_int_equal(best_cores(OBJECTIVE_EDP, 0.95, &pm, 2), 2);
        /* Performance ignores power: always the most cores. */
        assert_int_equal(best_cores(OBJECTIVE_PERFORMANCE, 0.2, &pm, 2), 2);
        /* Energy: at P = 0.95, 2 cores take 40 W * 5.25 s = 210 J, 1 core 300 J. */
        assert_int_equal(best_cores(OBJECTIVE_ENERGY, 0.95, &pm, 2), 2);
        assert_int_equal(best_cores(OBJECTIVE_ENERGY, 0.2, &pm, 2), 1);
}

/* A rate score (per instruction) orders candidates as the prediction score (per unit of work). */
static void rate_and_prediction_scores_agree(void **state)
{
        static const enum objective_kind kinds[] = {OBJECTIVE_EDP, OBJECTIVE_PPW, OBJECTIVE_ENERGY,
                                                    OBJECTIVE_PERFORMANCE};
        struct model_app app = {.p = 0.7, .t1_s = 4, .instructions = 1e10, .freq_ref_khz = 3000000};
        struct model_power pm;

        declared_model(&pm);
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
                for (unsigned a = 1; a <= 8; a++) {
                        for (unsigned b = 1; b <= 8; b++) {
                                struct model_prediction pa, pb;
                                double spa, spb, sra, srb;

                                assert_int_equal(model_predict(&app, &pm, a, 3000000, &pa), 0);
                                assert_int_equal(model_predict(&app, &pm, b, 3000000, &pb), 0);
                                assert_int_equal(objective_score_prediction(kinds[k], &pa, &spa),
                                                 0);
                                assert_int_equal(objective_score_prediction(kinds[k], &pb, &spb),
                                                 0);
                                assert_int_equal(objective_score_rate(kinds[k], pa.power_w,
                                                                      app.instructions / pa.time_s,
                                                                      &sra),
                                                 0);
                                assert_int_equal(objective_score_rate(kinds[k], pb.power_w,
                                                                      app.instructions / pb.time_s,
                                                                      &srb),
                                                 0);
                                if (fabs(spa - spb) > 1e-9 * fabs(spa))
                                        assert_true((spa < spb) == (sra < srb));
                        }
                }
        }
}

static void rate_scores(void **state)
{
        double s;

        assert_int_equal(objective_score_rate(OBJECTIVE_EDP, 40, 2e9, &s), 0);
        assert_near(s, 40 / 4e18, 1e-30); /* W / IPS^2 */
        assert_int_equal(objective_score_rate(OBJECTIVE_ENERGY, 40, 2e9, &s), 0);
        assert_near(s, 2e-8, 1e-20); /* EPI, eq. 12 */
        assert_int_equal(objective_score_rate(OBJECTIVE_PPW, 40, 2e9, &s), 0);
        assert_near(s, -5e7, 1e-3); /* -IPS/W */
        assert_int_equal(objective_score_rate(OBJECTIVE_PERFORMANCE, NAN, 2e9, &s), 0);
        assert_near(s, 5e-10, 1e-20);
        /* More IPS per watt is a lower (better) ppw score. */
        {
                double lo, hi;

                assert_int_equal(objective_score_rate(OBJECTIVE_PPW, 40, 3e9, &hi), 0);
                assert_int_equal(objective_score_rate(OBJECTIVE_PPW, 40, 2e9, &lo), 0);
                assert_true(hi < lo);
        }
        s = 42;
        assert_int_equal(objective_score_rate(OBJECTIVE_MONITOR, 40, 2e9, &s), -EDOM);
        assert_int_equal(objective_score_rate(OBJECTIVE_EDP, 40, 0, &s), -EDOM);
        assert_int_equal(objective_score_rate(OBJECTIVE_PPW, 0, 1e9, &s), -EDOM);
        assert_true(s == 42);
}

static void hysteresis(void **state)
{
        assert_false(objective_better(100, 96, 0.05));
        assert_true(objective_better(100, 94, 0.05));
        assert_false(objective_better(100, 100, 0));
        assert_true(objective_better(100, 99.9, 0));
        /* Negative (ppw) scores: -10.6 is 6% better than -10. */
        assert_true(objective_better(-10, -10.6, 0.05));
        assert_false(objective_better(-10, -10.4, 0.05));
        assert_false(objective_better(-10, -9, 0.05));
        /* Unknown figures never cause a move. */
        assert_false(objective_better(NAN, 1, 0.05));
        assert_false(objective_better(100, NAN, 0.05));
        assert_false(objective_better(100, 1, NAN));
}

static void max_slowdown(void **state)
{
        double s = 42;

        assert_int_equal(objective_slowdown(10, 12, &s), 0);
        assert_near(s, 0.2, 1e-12);
        assert_true(objective_slowdown_ok(10, 10.9, 0.1));
        assert_false(objective_slowdown_ok(10, 11.1, 0.1));
        assert_true(objective_slowdown_ok(10, 9, 0)); /* faster than the baseline */
        assert_false(objective_slowdown_ok(10, 10.01, 0));
        assert_true(objective_slowdown_ok(10, 1000, INFINITY));
        assert_false(objective_slowdown_ok(10, NAN, 0.1));
        assert_false(objective_slowdown_ok(0, 10, 0.1));
        s = 42;
        assert_int_equal(objective_slowdown(-1, 10, &s), -EDOM);
        assert_int_equal(objective_slowdown(10, INFINITY, &s), -EDOM);
        assert_true(s == 42);
}

static void unknown_power_falls_back_to_performance(void **state)
{
        static const enum objective_kind power_kinds[] = {OBJECTIVE_EDP, OBJECTIVE_PPW,
                                                          OBJECTIVE_ENERGY};
        struct model_app app = {.p = 0.5, .t1_s = 1, .instructions = 1e9, .freq_ref_khz = 1000000};
        struct model_prediction pr;
        const char *reason = "x";
        double s;

        for (size_t i = 0; i < 3; i++) {
                reason = NULL;
                assert_int_equal(objective_effective(power_kinds[i], false, &reason),
                                 OBJECTIVE_PERFORMANCE);
                assert_non_null(reason);
                assert_non_null(strstr(reason, "power unknown"));
                assert_int_equal(objective_effective(power_kinds[i], true, &reason),
                                 power_kinds[i]);
                assert_null(reason);
        }
        assert_int_equal(objective_effective(OBJECTIVE_MONITOR, false, &reason), OBJECTIVE_MONITOR);
        assert_null(reason);
        assert_int_equal(objective_effective(OBJECTIVE_PERFORMANCE, false, NULL),
                         OBJECTIVE_PERFORMANCE);
        /* Without a power model the prediction's power is NaN: no energy score... */
        assert_int_equal(model_predict(&app, NULL, 2, 1000000, &pr), 0);
        assert_true(isnan(pr.power_w));
        assert_int_equal(objective_score_prediction(OBJECTIVE_EDP, &pr, &s), -EDOM);
        assert_int_equal(objective_score_rate(OBJECTIVE_ENERGY, NAN, 1e9, &s), -EDOM);
        /* ...but the fallback scores it. */
        assert_int_equal(
            objective_score_prediction(objective_effective(OBJECTIVE_EDP, false, NULL), &pr, &s),
            0);
        assert_near(s, pr.time_s, 1e-12);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(names_round_trip),
    cmocka_unit_test(edp_prefers_one_core_at_p02_two_at_p095),
    cmocka_unit_test(rate_and_prediction_scores_agree),
    cmocka_unit_test(rate_scores),
    cmocka_unit_test(hysteresis),
    cmocka_unit_test(max_slowdown),
    cmocka_unit_test(unknown_power_falls_back_to_performance),
};
PCTL_TEST_MAIN(tests)
