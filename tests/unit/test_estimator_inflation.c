/* Extra parallel work (docs/estimator.md, "Extra parallel work"): the inflation from whole runs
 * of the same work at different core counts, and the whole run's P corrected by it. Counters
 * of an app whose threads retire one instruction per cycle; what share of them is useful is
 * known only to the test. */
#include "pctl_test.h"

#include <errno.h>
#include <math.h>

#include "pctl/estimator.h"
#include "test_estimator_synth.h"

#define DT_NS (100 * 1000000ULL)
#define FREQ_KHZ 2000000u
#define CYCLES (2e9 * 0.1) /* one busy CPU over an interval */
#define N_CPUS 8

/* No ΔI (β = α = 0) and a calibrated one-core IPC of 1: eq. 9's speedup is the app's
 * instructions over its busiest CPU's cycles. */
static const struct estimator_config one_ipc = {
    .delta_i_rate = 0, .delta_i_alpha = 0, .ipc1_calibrated = 1};

/* `count` intervals on CPUs 0..cores-1: CPU 0 busy all of it, the others `busy` of it, one
 * instruction per cycle; counters, or busy time only. */
static void run_feed(struct synth_run *r, unsigned count, unsigned cores, double busy,
                     bool counters)
{
        struct estimator_app_view v = {.id = 1, .target = -1, .freq_khz = FREQ_KHZ};

        cpumask_zero(&v.cpus);
        for (unsigned c = 0; c < cores; c++)
                cpumask_set(&v.cpus, c);
        for (unsigned i = 0; i < count; i++) {
                r->now_ns += DT_NS;
                r->s.timestamp_ns = r->now_ns;
                r->s.interval_ns = DT_NS;
                for (unsigned c = 0; c < N_CPUS; c++) {
                        double b = c == 0 ? 1.0 : c < cores ? busy : 0.0;

                        r->s.cpu[c] = (struct sensor_counts){
                            .measured =
                                counters ? SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY : SENSOR_BUSY,
                            .instr = (uint64_t)(b * CYCLES),
                            .cycles = (uint64_t)(b * CYCLES),
                            .busy_ns = (uint64_t)(b * DT_NS)};
                }
                assert_int_equal(estimator_update(r->est, &r->s, &v, 1), 0);
        }
}

/* 1 s on one core, then 2 s on four whose three others are busy half the time: eq. 9 reads
 * 2.5, so Σw = 1 + 5, Σa = 3, Σw (1 − 1/N) = 3.75 and p_run = 0.8. If each added core brings
 * X = 0.1 extra instructions per useful one, the four-core work is 5 / 1.3 one-core seconds
 * and p_run = (1 + 5/1.3 − 3) / (0.75 · 5/1.3) = 0.64. */
static void p_run_divides_each_core_counts_work_by_its_inflation(void **state)
{
        struct synth_run r;
        const struct estimate *e;
        double w4 = 5.0 / 1.3;

        assert_int_equal(synth_run_init(&r, &one_ipc, N_CPUS), 0);
        run_feed(&r, 10, 1, 0, true);
        run_feed(&r, 20, 4, 0.5, true);
        e = estimator_get(r.est, 1);
        assert_true(e->known & ESTIMATE_P_RUN);
        assert_false(e->known & ESTIMATE_WORK_INFLATION);
        assert_near(e->p_run, 0.8, 1e-9);
        assert_true(isnan(e->p_run_uncorrected));
        /* The run's instructions, and their mean core count: 1 + 3 · (the four-core share). */
        assert_true(e->known & ESTIMATE_RUN_I0);
        assert_near(e->run_i0, 10 * CYCLES + 20 * 2.5 * CYCLES, 1);
        assert_near(1 + e->run_i0_m1 / e->run_i0, 1 + 3.0 * 50 / 60, 1e-9);

        assert_int_equal(estimator_set_work_inflation(r.est, 1, 0.1), 0);
        e = estimator_get(r.est, 1);
        assert_true(e->known & ESTIMATE_WORK_INFLATION);
        assert_near(e->work_inflation, 0.1, 1e-15);
        assert_near(e->run_work_s, 1 + w4, 1e-9);
        assert_near(e->p_run, (1 + w4 - 3) / (0.75 * w4), 1e-9);
        assert_near(e->p_run, 0.64, 1e-9);
        assert_near(e->p_run_uncorrected, 0.8, 1e-9);
        assert_near(e->speedup_run, (1 + w4) / 3, 1e-9);
        /* Later intervals are corrected as they come. */
        run_feed(&r, 10, 4, 0.5, true);
        e = estimator_get(r.est, 1);
        w4 = 7.5 / 1.3;
        assert_near(e->p_run, (1 + w4 - 4) / (0.75 * w4), 1e-9);
        /* NaN takes it back. */
        assert_int_equal(estimator_set_work_inflation(r.est, 1, NAN), 0);
        e = estimator_get(r.est, 1);
        assert_false(e->known & ESTIMATE_WORK_INFLATION);
        assert_near(e->p_run, (1 + 7.5 - 4) / (0.75 * 7.5), 1e-9);
        assert_true(isnan(e->p_run_uncorrected));
        /* No positive factor at four cores; an unknown app. */
        assert_int_equal(estimator_set_work_inflation(r.est, 1, -0.5), -EDOM);
        assert_int_equal(estimator_set_work_inflation(r.est, 2, 0.1), -ENOENT);
        e = estimator_get(r.est, 1);
        assert_false(e->known & ESTIMATE_WORK_INFLATION);
        synth_run_free(&r);
}

/* The run as history keeps it: the time not seen at half the last rate, ± the other half.
 * Without counters for one interval, the run has no total. */
static void work_run_counts_the_unseen_tail_and_needs_counters(void **state)
{
        struct synth_run r;
        struct estimate_work_run w;
        const struct estimate *e;

        assert_int_equal(synth_run_init(&r, &one_ipc, N_CPUS), 0);
        run_feed(&r, 10, 4, 0.5, true);
        e = estimator_get(r.est, 1);
        assert_int_equal(estimate_work_run(e, 0.2, &w), 0);
        /* Last rate: 2.5 CYCLES per 0.1 s. */
        assert_near(w.instructions, 25 * CYCLES + 2.5 * CYCLES * 2 / 2, 1);
        assert_near(w.instructions_err, 2.5 * CYCLES * 2 / 2, 1);
        assert_near(w.cores, 4, 1e-12);
        assert_int_equal(estimate_work_run(e, 0, &w), 0);
        assert_near(w.instructions_err, 0, 1e-9);
        assert_int_equal(estimate_work_run(e, -1, &w), -EDOM);
        run_feed(&r, 1, 4, 0.5, false);
        run_feed(&r, 5, 4, 0.5, true);
        e = estimator_get(r.est, 1);
        assert_false(e->known & ESTIMATE_RUN_I0);
        assert_int_equal(estimate_work_run(e, 0, &w), -ENODATA);
        synth_run_free(&r);
}

/* A counters run's work is not CPU time: the command's CPU time cannot complete it, and its
 * figures keep their range. */
static void a_counters_run_is_not_completed_by_cpu_time(void **state)
{
        struct synth_run r;
        const struct estimate *e;
        double sp, p;

        assert_int_equal(synth_run_init(&r, &one_ipc, N_CPUS), 0);
        run_feed(&r, 10, 4, 0.5, true);
        e = estimator_get(r.est, 1);
        assert_true(e->known & ESTIMATE_P_RUN);
        assert_true(e->run_counters);
        assert_int_equal(estimate_run_complete(e, 0.1, 0.2, 4, &sp, &p), -ENODATA);
        synth_run_free(&r);
}

/* I(N) = U (1 + X (N − 1)): two runs give X back exactly; the range of each run's count gives
 * the error, and the truth lies within it. */
static void inflation_from_two_runs(void **state)
{
        const double u = 1e11, x_true = 0.03;
        struct estimate_work_run runs[] = {
            {.instructions = u * (1 + x_true * 1), .cores = 2},
            {.instructions = u * (1 + x_true * 7), .cores = 8},
        };
        double x, err;
        unsigned ia = 9, ib = 9;

        assert_int_equal(estimate_work_inflation(runs, 2, &x, &err, &ia, &ib), 0);
        assert_near(x, x_true, 1e-12);
        assert_near(err, 0, 1e-12);
        assert_int_equal(ia, 1);
        assert_int_equal(ib, 0);
        /* Each count 0.1% off at worst: X within its error of the truth. */
        runs[0].instructions *= 1.0005;
        runs[0].instructions_err = runs[0].instructions * 0.001;
        runs[1].instructions *= 0.9995;
        runs[1].instructions_err = runs[1].instructions * 0.001;
        assert_int_equal(estimate_work_inflation(runs, 2, &x, &err, NULL, NULL), 0);
        assert_true(err > 0);
        assert_true(fabs(x - x_true) <= err);
        assert_true(fabs(x - x_true) > 1e-6);
        /* Fractional mean core counts (runs that moved): the same formula. */
        struct estimate_work_run mixed[] = {
            {.instructions = u * (1 + x_true * 2.5), .cores = 3.5},
            {.instructions = u * (1 + x_true * 0.25), .cores = 1.25},
        };
        assert_int_equal(estimate_work_inflation(mixed, 2, &x, &err, &ia, &ib), 0);
        assert_near(x, x_true, 1e-12);
        assert_int_equal(ia, 0);
        /* No inflation: 0, not unknown. */
        mixed[0].instructions = mixed[1].instructions = u;
        assert_int_equal(estimate_work_inflation(mixed, 2, &x, &err, NULL, NULL), 0);
        assert_near(x, 0, 1e-15);
}

/* Of several runs, the pair furthest apart in cores (the later on ties); runs too close, too
 * few, or not runs at all give no figure. */
static void pair_choice_and_refusals(void **state)
{
        const double u = 2e10, x_true = 0.05;
        struct estimate_work_run runs[] = {
            {.instructions = u * (1 + x_true * 3), .cores = 4},
            {.instructions = u * (1 + x_true * 1), .cores = 2},
            {.instructions = u * (1 + x_true * 5) * 1.01, .cores = 6}, /* noisier */
            {.instructions = u * (1 + x_true * 3), .cores = 4},
            {.instructions = u * (1 + x_true * 7), .cores = 8},
        };
        double x, err;
        unsigned ia, ib;

        assert_int_equal(estimate_work_inflation(runs, 5, &x, &err, &ia, &ib), 0);
        assert_int_equal(ia, 4);
        assert_int_equal(ib, 1);
        assert_near(x, x_true, 1e-12);
        /* Ties: 2 and 4 against 4 (twice): the later 4. */
        assert_int_equal(estimate_work_inflation(runs, 4, &x, &err, &ia, &ib), 0);
        assert_int_equal(ia, 2);
        assert_int_equal(ib, 1);
        struct estimate_work_run tie[] = {runs[1], runs[0], runs[3]};
        assert_int_equal(estimate_work_inflation(tie, 3, &x, &err, &ia, &ib), 0);
        assert_int_equal(ia, 2);
        assert_int_equal(ib, 0);

        assert_int_equal(estimate_work_inflation(runs, 1, &x, &err, NULL, NULL), -ENODATA);
        assert_int_equal(estimate_work_inflation(runs, 0, &x, &err, NULL, NULL), -ENODATA);
        struct estimate_work_run close[] = {{.instructions = u, .cores = 4},
                                            {.instructions = u * 1.1, .cores = 4.4}};
        assert_int_equal(estimate_work_inflation(close, 2, &x, &err, NULL, NULL), -ENODATA);
        struct estimate_work_run bad[] = {{.instructions = u, .cores = 2},
                                          {.instructions = 0, .cores = 8}};
        assert_int_equal(estimate_work_inflation(bad, 2, &x, &err, NULL, NULL), -EINVAL);
        bad[1] = (struct estimate_work_run){.instructions = NAN, .cores = 8};
        assert_int_equal(estimate_work_inflation(bad, 2, &x, &err, NULL, NULL), -EINVAL);
        bad[1] = (struct estimate_work_run){.instructions = u, .cores = 0.5};
        assert_int_equal(estimate_work_inflation(bad, 2, &x, &err, NULL, NULL), -EINVAL);
        bad[1] = (struct estimate_work_run){.instructions = u, .instructions_err = -1, .cores = 8};
        assert_int_equal(estimate_work_inflation(bad, 2, &x, &err, NULL, NULL), -EINVAL);
        /* m 1 and 7: X = (r − 1) / (7 − r). Eight times the instructions on 8 cores as on 2
         * (r = 8) fits no positive factor; half of them (r = 0.5) is X = −1/13, a measured
         * figure (fewer instructions in parallel), not an error. */
        bad[0] = (struct estimate_work_run){.instructions = u, .cores = 2};
        bad[1] = (struct estimate_work_run){.instructions = 8 * u, .cores = 8};
        assert_int_equal(estimate_work_inflation(bad, 2, &x, &err, NULL, NULL), -EDOM);
        bad[1].instructions = 0.5 * u;
        assert_int_equal(estimate_work_inflation(bad, 2, &x, &err, NULL, NULL), 0);
        assert_near(x, -1.0 / 13, 1e-12);
}

/* Runs that moved between core counts (here a first second on all 12 CPUs before the
 * allocator pinned each): with the instructions per core count X comes back exactly; from
 * the means alone it is off by more than the test of the model machine allows. */
static void inflation_from_runs_at_several_core_counts(void **state)
{
        const double x_true = 0.1, u12 = 1e9, u = 5e10;
        struct estimate_work_run a = {.n_bins = 2}, b = {.n_bins = 2}, runs[2];
        double x, err;

        a.bins[0].cores = b.bins[0].cores = 12;
        a.bins[0].instructions = b.bins[0].instructions = u12 * (1 + 11 * x_true);
        a.bins[1].cores = 1;
        a.bins[1].instructions = u;
        b.bins[1].cores = 4;
        b.bins[1].instructions = u * (1 + 3 * x_true);
        for (unsigned k = 0; k < 2; k++) {
                struct estimate_work_run *r = k ? &b : &a;
                double m1 = 0;

                r->instructions = r->bins[0].instructions + r->bins[1].instructions;
                for (unsigned q = 0; q < 2; q++)
                        m1 += r->bins[q].instructions * (r->bins[q].cores - 1);
                r->cores = 1 + m1 / r->instructions;
        }
        runs[0] = a;
        runs[1] = b;
        assert_int_equal(estimate_work_inflation(runs, 2, &x, &err, NULL, NULL), 0);
        assert_near(x, x_true, 1e-9);
        runs[0].n_bins = runs[1].n_bins = 0;
        assert_int_equal(estimate_work_inflation(runs, 2, &x, &err, NULL, NULL), 0);
        assert_true(fabs(x - x_true) > 0.003);
        /* A bin that is not one makes the run bad input. */
        runs[0] = a;
        runs[0].bins[1].cores = 0;
        assert_int_equal(estimate_work_inflation(runs, 2, &x, &err, NULL, NULL), -EINVAL);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(inflation_from_runs_at_several_core_counts),
    cmocka_unit_test(p_run_divides_each_core_counts_work_by_its_inflation),
    cmocka_unit_test(work_run_counts_the_unseen_tail_and_needs_counters),
    cmocka_unit_test(a_counters_run_is_not_completed_by_cpu_time),
    cmocka_unit_test(inflation_from_two_runs),
    cmocka_unit_test(pair_choice_and_refusals),
};

PCTL_TEST_MAIN(tests)
