/* An app's scaling learned online (model/scaling.c): running means per configuration, the
 * extrapolation of time per instruction with a power line, the objective's optimum it
 * predicts, and how far it is from what was measured. */
#include <errno.h>
#include <math.h>

#include "pctl_test.h"
#include "pctl/scaling.h"

/* Amdahl, P = 0.9, 1e9 instructions per second on one core; 20 W + 10 W per core. */
static double amdahl_ips(unsigned n)
{
        return 1e9 / (0.1 + 0.9 / n);
}

static void add_amdahl(struct scaling *s, unsigned n, unsigned samples)
{
        for (unsigned i = 0; i < samples; i++)
                scaling_add(s, n, 3000000, amdahl_ips(n), 20 + 10.0 * n, 8);
}

static void running_means_and_reset(void **state)
{
        struct scaling s = {0};
        unsigned v;

        scaling_add(&s, 4, 3000000, 100, 10, 8);
        scaling_add(&s, 4, 3000000, 200, NAN, 8);
        scaling_add(&s, 8, 3000000, 300, 30, 8);
        scaling_add(&s, 8, 3000000, -1, 30, 8); /* not a rate: ignored */
        assert_int_equal(s.n, 2);
        assert_near(s.pt[0].ips, 150, 1e-9);
        assert_true(isnan(s.pt[0].power_w)); /* one unknown power makes the mean unknown */
        assert_int_equal(s.pt[0].samples, 2);
        v = s.version;
        scaling_reset(&s);
        assert_int_equal(s.n, 0);
        assert_true(s.version != v);
        /* Full: the oldest configuration goes. */
        for (unsigned n = 1; n <= SCALING_MAX_POINTS + 2; n++)
                scaling_add(&s, n, 3000000, 100.0 * n, 10, 8);
        assert_int_equal(s.n, SCALING_MAX_POINTS);
        assert_int_equal(s.pt[0].cores, 3);
}

/* Stalled cycles per instruction of the app become per core; a point knows them while every
 * interval it averages had them. */
static void stalls_running_means(void **state)
{
        struct scaling s = {0};

        scaling_add_stalls(&s, 4, 3000000, 100, 10, 2.0, 8);
        scaling_add_stalls(&s, 4, 3000000, 100, 10, 4.0, 8);
        assert_near(s.pt[0].stalls_per_core, (0.5 + 1.0) / 2, 1e-12);
        scaling_add_stalls(&s, 8, 3000000, 100, 10, 8.0, 8);
        assert_near(s.pt[1].stalls_per_core, 1.0, 1e-12);
        scaling_add_stalls(&s, 8, 3000000, 100, 10, NAN, 8); /* one interval without */
        assert_true(isnan(s.pt[1].stalls_per_core));
        scaling_add_stalls(&s, 8, 3000000, 100, 10, 8.0, 8); /* unknown for good */
        assert_true(isnan(s.pt[1].stalls_per_core));
        scaling_add(&s, 16, 3000000, 100, 10, 8); /* no stalls given */
        assert_true(isnan(s.pt[2].stalls_per_core));
        scaling_add_stalls(&s, 32, 3000000, 100, 10, -1, 8); /* not a count */
        assert_true(isnan(s.pt[3].stalls_per_core));
        assert_near(s.pt[0].stalls_per_core, 0.75, 1e-12);
}

/* From 64, 32 and 16 cores (the allocator's halving), the EDP optimum of P = 0.9 with this
 * power line, found by brute force, is predicted exactly: the model is Amdahl's own shape. */
static void predicts_the_edp_optimum(void **state)
{
        struct scaling s = {0};
        struct scaling_model m;
        unsigned want = 0;
        double best = INFINITY;

        add_amdahl(&s, 64, 3);
        add_amdahl(&s, 32, 3);
        add_amdahl(&s, 16, 3);
        for (unsigned n = 1; n <= 64; n++) {
                double ips = amdahl_ips(n), edp = (20 + 10.0 * n) / (ips * ips);

                if (edp < best) {
                        best = edp;
                        want = n;
                }
        }
        assert_int_equal(scaling_model_build(&s, 3000000, 2, 64, &m), 0);
        assert_true(m.known && m.power_known);
        assert_int_equal(m.n_points, 3);
        assert_int_equal(scaling_best_cores(&m, OBJECTIVE_EDP, 1, 64), want);
        assert_near(scaling_predict_score(&m, OBJECTIVE_EDP, want), best, 1e-6 * best);
        assert_true(scaling_fit_error(&s, &m, OBJECTIVE_EDP, 2) < 1e-6);
        /* Performance alone wants every core. */
        assert_int_equal(scaling_best_cores(&m, OBJECTIVE_PERFORMANCE, 1, 64), 64);
        /* Points of another frequency, or with too few samples, are not used. */
        scaling_add(&s, 8, 2000000, 1e9, 50, 8);
        add_amdahl(&s, 4, 1);
        assert_int_equal(scaling_model_build(&s, 3000000, 2, 64, &m), 0);
        assert_int_equal(m.n_points, 3);
}

/* A speedup that falls past 16 cores (the model machine's falloff rows, time per unit of
 * work 10, 7, 6, 8 at 64, 32, 16, 8 cores): from the first three, no kernel is usable (the
 * only one with fewer parameters than points, Amdahl, would need a negative time at one
 * core); with the fourth, the model does not reproduce the measured scores, and says so. */
static void falloff_is_not_believed(void **state)
{
        static const unsigned n[] = {64, 32, 16, 8};
        static const double t[] = {10, 7, 6, 8}, w[] = {202, 164, 145.5, 127.6};
        struct scaling s = {0};
        struct scaling_model m;

        for (unsigned i = 0; i < 4; i++) {
                for (unsigned k = 0; k < 3; k++)
                        scaling_add(&s, n[i], 3000000, 1e10 / t[i], w[i], 8);
                if (i == 2)
                        assert_int_equal(scaling_model_build(&s, 3000000, 2, 64, &m), -EDOM);
        }
        assert_int_equal(scaling_model_build(&s, 3000000, 2, 64, &m), 0);
        assert_true(m.known);
        assert_true(scaling_fit_error(&s, &m, OBJECTIVE_EDP, 2) > 0.05);
}

/* Two counts: nothing to extrapolate from. */
static void two_counts_are_unknown(void **state)
{
        struct scaling s = {0};
        struct scaling_model m;

        add_amdahl(&s, 64, 3);
        add_amdahl(&s, 32, 3);
        assert_int_equal(scaling_model_build(&s, 3000000, 2, 64, &m), 0);
        assert_false(m.known);
        assert_true(isnan(scaling_predict_score(&m, OBJECTIVE_EDP, 16)));
        assert_int_equal(scaling_best_cores(&m, OBJECTIVE_EDP, 1, 64), 0);
        assert_true(isnan(scaling_fit_error(&s, &m, OBJECTIVE_EDP, 2)));
}

/* The model is rebuilt only when its points or frequency changed. */
static void refresh_only_on_change(void **state)
{
        struct scaling s = {0};
        struct scaling_model m = {0};

        add_amdahl(&s, 64, 3);
        add_amdahl(&s, 32, 3);
        add_amdahl(&s, 16, 3);
        assert_int_equal(scaling_model_refresh(&s, 3000000, 2, 64, &m), 0);
        assert_true(m.known);
        m.trusted = true; /* set by the user: kept while nothing changed */
        assert_int_equal(scaling_model_refresh(&s, 3000000, 2, 64, &m), 0);
        assert_true(m.trusted);
        add_amdahl(&s, 8, 3);
        assert_int_equal(scaling_model_refresh(&s, 3000000, 2, 64, &m), 0);
        assert_false(m.trusted);
        assert_int_equal(m.n_points, 4);
}

int main(int argc, char **argv)
{
        /* One case a line: cmake/PctlTests.cmake registers the first case of a line only. */
        /* clang-format off */
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(running_means_and_reset),
            cmocka_unit_test(predicts_the_edp_optimum),
            cmocka_unit_test(falloff_is_not_believed),
            cmocka_unit_test(two_counts_are_unknown),
            cmocka_unit_test(refresh_only_on_change),
            cmocka_unit_test(stalls_running_means),
        };
        /* clang-format on */

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
