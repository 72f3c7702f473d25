/* The whole run's P (p_run): synthetic busy-time intervals of an app with a sequential start
 * and tail around a parallel phase, whose true whole-run P is known. */
#include "pctl_test.h"

#include <errno.h>
#include <math.h>

#include "pctl/estimator.h"
#include "test_estimator_synth.h"

#define DT_NS (100 * 1000000ULL)

/* `count` intervals of 100 ms on `cores` CPUs (0 and 1), CPU c busy busy_frac[c] of each. */
static void run_feed(struct synth_run *r, unsigned count, unsigned cores, double busy0,
                     double busy1, bool run_only)
{
        struct estimator_app_view v = {.id = 1, .target = -1, .run_only = run_only};

        cpumask_zero(&v.cpus);
        for (unsigned c = 0; c < cores; c++)
                cpumask_set(&v.cpus, c);
        for (unsigned i = 0; i < count; i++) {
                r->now_ns += DT_NS;
                r->s.timestamp_ns = r->now_ns;
                r->s.interval_ns = DT_NS;
                for (unsigned c = 0; c < 2; c++)
                        r->s.cpu[c] = (struct sensor_counts){
                            .measured = SENSOR_BUSY,
                            .busy_ns = (uint64_t)((c ? busy1 : busy0) * DT_NS)};
                assert_int_equal(estimator_update(r->est, &r->s, &v, 1), 0);
        }
}

/* 1 s sequential (half of it start-up, run_only), 3 s on both cores, 1 s sequential tail:
 * 2 s + 6 s of one-core work, P = 6/8. The wall-time P, 2 (1 - T2/T1) = 2 (1 - 5/8), is the
 * same figure. The phase's P̂ follows the tail; p_run does not. */
static void sequential_start_and_tail_around_a_parallel_phase(void **state)
{
        struct synth_run r;
        const struct estimate *e;

        assert_int_equal(synth_run_init(&r, NULL, 2), 0);
        run_feed(&r, 5, 2, 1.0, 0.0, true);
        run_feed(&r, 5, 2, 1.0, 0.0, false);
        run_feed(&r, 30, 2, 1.0, 1.0, false);
        e = estimator_get(r.est, 1);
        assert_true(e->known & ESTIMATE_P_LS);
        run_feed(&r, 10, 2, 1.0, 0.0, false);
        e = estimator_get(r.est, 1);
        assert_true(e->known & ESTIMATE_P_RUN);
        assert_near(e->run_s, 5.0, 1e-9);
        assert_near(e->run_work_s, 8.0, 1e-9);
        assert_near(e->speedup_run, 8.0 / 5.0, 1e-9);
        assert_near(e->p_run, 0.75, 1e-9);
        assert_near(e->p_run, 2 * (1 - 5.0 / 8.0), 1e-9);
        /* The fit restarted on the tail: the phase is sequential. */
        assert_true(e->phase_changes >= 1);
        assert_near(e->p_ls, 0.0, 0.01);
        assert_int_equal(e->run_max_cores, 2);
        synth_run_free(&r);
}

/* Start-up intervals are the run's, not the phase fit's. */
static void run_only_intervals_stay_out_of_the_fit(void **state)
{
        struct synth_run r;
        const struct estimate *e;

        assert_int_equal(synth_run_init(&r, NULL, 2), 0);
        run_feed(&r, 10, 2, 1.0, 0.0, true);
        e = estimator_get(r.est, 1);
        assert_false(e->known & ESTIMATE_P_LS);
        assert_true(e->known & ESTIMATE_P_RUN);
        assert_near(e->p_run, 0.0, 1e-9);
        run_feed(&r, 10, 2, 1.0, 1.0, false);
        e = estimator_get(r.est, 1);
        assert_near(e->p_ls, 1.0, 1e-9);
        /* 1 s + 2 s of work in 2 s: P = 2/3. */
        assert_near(e->p_run, 2.0 / 3.0, 1e-9);
        synth_run_free(&r);
}

/* One core says nothing of P; waiting (nothing ran) is time no core count shortens. */
static void one_core_and_waiting_intervals(void **state)
{
        struct synth_run r;
        const struct estimate *e;

        assert_int_equal(synth_run_init(&r, NULL, 2), 0);
        run_feed(&r, 10, 1, 1.0, 0.0, false);
        e = estimator_get(r.est, 1);
        assert_true(e->known & ESTIMATE_SPEEDUP_RUN);
        assert_false(e->known & ESTIMATE_P_RUN);
        assert_true(isnan(e->p_run));
        assert_near(e->speedup_run, 1.0, 1e-9);
        run_feed(&r, 10, 2, 1.0, 1.0, false);
        run_feed(&r, 10, 2, 0.0, 0.0, false);
        e = estimator_get(r.est, 1);
        /* Work 1 + 2 + 1 s in 3 s; at two cores 2 s of parallel and 1 s of waiting work:
         * (4 - 3) / (2 * 0.5 + 1 * 0.5). */
        assert_near(e->run_work_s, 4.0, 1e-9);
        assert_near(e->p_run, 1.0 / 1.5, 1e-9);
        synth_run_free(&r);
}

/* Time not seen widens the range; the true P of the longer run lies inside it. */
static void unseen_time_bounds_p_run(void **state)
{
        struct synth_run r;
        const struct estimate *e;
        double lo, hi;

        assert_int_equal(synth_run_init(&r, NULL, 2), 0);
        assert_int_equal(estimate_p_run_range(estimator_get(r.est, 1), 0, 2, &lo, &hi), -ENODATA);
        run_feed(&r, 10, 2, 1.0, 0.0, false);
        run_feed(&r, 30, 2, 1.0, 1.0, false);
        e = estimator_get(r.est, 1);
        assert_near(e->p_run, 6.0 / 7.0, 1e-9);
        assert_int_equal(estimate_p_run_range(e, 0, 2, &lo, &hi), 0);
        assert_near(lo, e->p_run, 1e-12);
        assert_near(hi, e->p_run, 1e-12);
        assert_int_equal(estimate_p_run_range(e, -1, 2, &lo, &hi), -EDOM);
        assert_int_equal(estimate_p_run_range(e, 1, 0, &lo, &hi), -EDOM);
        assert_int_equal(estimate_p_run_range(e, 1.0, 2, &lo, &hi), 0);
        /* One unseen second sequential: 6/8; parallel: 8/9. */
        assert_near(lo, 6.0 / 8.0, 1e-9);
        assert_near(hi, 8.0 / 9.0, 1e-9);
        assert_true(lo < e->p_run && e->p_run < hi);
        synth_run_free(&r);
}

/* What the command's parent measured completes the run: the unseen part is one more interval
 * of its CPU time, so the figures land where the range said, at the end the CPU time picks. */
static void unseen_time_completed_from_cpu_time(void **state)
{
        struct synth_run r;
        const struct estimate *e;
        double sp, p;

        assert_int_equal(synth_run_init(&r, NULL, 2), 0);
        assert_int_equal(estimate_run_complete(estimator_get(r.est, 1), 1, 1, 2, &sp, &p),
                         -ENODATA);
        run_feed(&r, 10, 2, 1.0, 0.0, false);
        run_feed(&r, 30, 2, 1.0, 1.0, false);
        /* Waiting adds to the work, not to the CPU time. */
        run_feed(&r, 10, 2, 0.0, 0.0, false);
        e = estimator_get(r.est, 1);
        assert_near(e->run_busy_s, 7.0, 1e-9);
        assert_near(e->run_work_s, 8.0, 1e-9);
        assert_false(e->run_counters);
        /* 8 s of work in 5 s, all at two cores (x = Σ w / 2 = 4): P = 3/4. */
        assert_near(e->p_run, 3.0 / 4.0, 1e-9);
        /* Nothing unseen: the figures stand. */
        assert_int_equal(estimate_run_complete(e, 0, 0, 2, &sp, &p), 0);
        assert_near(sp, e->speedup_run, 1e-12);
        assert_near(p, e->p_run, 1e-12);
        /* An unseen second on one CPU (the exit's flush): 9 s in 6 s, x 4.5: P = 2/3. */
        assert_int_equal(estimate_run_complete(e, 1, 1, 2, &sp, &p), 0);
        assert_near(sp, 9.0 / 6.0, 1e-9);
        assert_near(p, 2.0 / 3.0, 1e-9);
        /* Less CPU than time: the rest is waiting, as an idle CPU of the app's is. */
        assert_int_equal(estimate_run_complete(e, 1, 0.3, 2, &sp, &p), 0);
        assert_near(p, 2.0 / 3.0, 1e-9);
        /* On both CPUs: 10 s in 6 s, x 5: P = 4/5. */
        assert_int_equal(estimate_run_complete(e, 1, 2, 2, &sp, &p), 0);
        assert_near(sp, 10.0 / 6.0, 1e-9);
        assert_near(p, 4.0 / 5.0, 1e-9);
        /* More CPU than two cores give in the unseen second: the seen intervals missed it (a
         * child that exited between reads, its parent gone before the next): work in time
         * already counted. 10.5 s in 6 s, x 5.25: P = 4.5/5.25. */
        assert_int_equal(estimate_run_complete(e, 1, 2.5, 2, &sp, &p), 0);
        assert_near(sp, 10.5 / 6.0, 1e-9);
        assert_near(p, 4.5 / 5.25, 1e-9);
        /* No more than the cores could do over the whole run: 12 s in 6 s, P = 1. */
        assert_int_equal(estimate_run_complete(e, 1, 5, 2, &sp, &p), 0);
        assert_near(sp, 2.0, 1e-9);
        assert_near(p, 1.0, 1e-9);
        assert_int_equal(estimate_run_complete(e, -1, 1, 2, &sp, &p), -EDOM);
        assert_int_equal(estimate_run_complete(e, 1, -1, 2, &sp, &p), -EDOM);
        assert_int_equal(estimate_run_complete(e, NAN, 1, 2, &sp, &p), -EDOM);
        assert_int_equal(estimate_run_complete(e, 1, INFINITY, 2, &sp, &p), -EDOM);
        assert_int_equal(estimate_run_complete(e, 1, 1, 0, &sp, &p), -EDOM);
        synth_run_free(&r);
}

/* Per CPU: the app's threads' busy fraction and the CPU's (all tasks). */
static const struct estimate *run_targeted(struct estimator *est, struct sensor_sample *s,
                                           double app0, double app1, double cpu0, double cpu1)
{
        struct estimator_app_view v = {.id = 1, .target = 0};
        const double app[2] = {app0, app1}, cpu[2] = {cpu0, cpu1};

        cpumask_zero(&v.cpus);
        cpumask_set(&v.cpus, 0);
        cpumask_set(&v.cpus, 1);
        for (unsigned i = 0; i < 10; i++) {
                s->timestamp_ns += DT_NS;
                s->interval_ns = DT_NS;
                for (unsigned c = 0; c < 2; c++) {
                        s->cpu[c] = (struct sensor_counts){.measured = SENSOR_BUSY,
                                                           .busy_ns = (uint64_t)(cpu[c] * DT_NS)};
                        *sensor_target_cpu(s, 0, c) = (struct sensor_counts){
                            .measured = SENSOR_BUSY, .busy_ns = (uint64_t)(app[c] * DT_NS)};
                }
                assert_int_equal(estimator_update(est, s, &v, 1), 0);
        }
        return estimator_get(est, 1);
}

/* Other processes take half of each CPU: the time the app is held off is neither its work nor
 * its waiting, and a fully parallel app stays at P 1. When its threads wait (I/O) with the
 * CPUs idle, that is sequential time. */
static void time_held_off_by_others_is_left_out(void **state)
{
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        const struct estimate *e;

        assert_int_equal(synth_sample_alloc(&s, 2, 1), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        e = run_targeted(est, &s, 0.5, 0.5, 1.0, 1.0);
        assert_near(e->run_s, 1.0, 1e-9);
        assert_near(e->run_active_s, 0.5, 1e-9);
        assert_near(e->p_run, 1.0, 1e-9);
        /* Then 1 s in which both threads run half the time and wait the rest, CPUs idle:
         * 1 s of work and 0.5 s of waiting in 1 s. */
        e = run_targeted(est, &s, 0.5, 0.5, 0.5, 0.5);
        assert_near(e->run_active_s, 1.5, 1e-9);
        assert_near(e->run_work_s, 1.0 + 1.5, 1e-9);
        /* (2.5 - 1.5) / (2.5 / 2) */
        assert_near(e->p_run, 0.8, 1e-9);
        synth_sample_free(&s);
        estimator_free(est);
}

/* Per-process busy time goes to the CPU a thread ran on last: two threads busy all interval
 * that both last ran on CPU 0 show 2 s there and none on CPU 1. The ratio reads 1; the sum of
 * busy time is still the work, and p_run sees it. */
static void threads_counted_on_one_cpu_are_still_work(void **state)
{
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct estimator_app_view v = {.id = 1, .target = 0};
        const struct estimate *e;

        assert_int_equal(synth_sample_alloc(&s, 2, 1), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        cpumask_zero(&v.cpus);
        cpumask_set(&v.cpus, 0);
        cpumask_set(&v.cpus, 1);
        for (unsigned i = 0; i < 10; i++) {
                s.timestamp_ns = (i + 1) * DT_NS;
                s.interval_ns = DT_NS;
                for (unsigned c = 0; c < 2; c++) {
                        s.cpu[c] =
                            (struct sensor_counts){.measured = SENSOR_BUSY, .busy_ns = DT_NS};
                        *sensor_target_cpu(&s, 0, c) = (struct sensor_counts){
                            .measured = SENSOR_BUSY, .busy_ns = c == 0 ? 2 * DT_NS : 0};
                }
                assert_int_equal(estimator_update(est, &s, &v, 1), 0);
        }
        e = estimator_get(est, 1);
        assert_near(e->speedup, 1.0, 1e-9);
        assert_near(e->run_work_s, 2.0, 1e-9);
        assert_near(e->p_run, 1.0, 1e-9);
        synth_sample_free(&s);
        estimator_free(est);
}

/* The interval in which the app was adopted counts from the adoption: its own busy time
 * began then, and its CPUs' idle time before was no app's waiting. Adopted half-way through
 * an interval, busy on both CPUs from then on: every interval is a speedup of 2, p_run 1.
 * Counted over the whole interval, the half before read as waiting (p_run 0.909). */
static void the_adoption_interval_counts_from_the_adoption(void **state)
{
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct estimator_app_view v = {.id = 1, .target = 0, .run_only = true};
        uint64_t now = 1000000000ULL;
        const struct estimate *e;

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, 2, 1), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        cpumask_zero(&v.cpus);
        cpumask_set(&v.cpus, 0);
        cpumask_set(&v.cpus, 1);
        v.counted_since_ns = now + DT_NS / 2;
        for (unsigned i = 0; i < 3; i++) {
                double own = i == 0 ? 0.5 : 1.0; /* of the interval, on each CPU */

                now += DT_NS;
                s.timestamp_ns = now;
                s.interval_ns = DT_NS;
                for (unsigned c = 0; c < 2; c++) {
                        s.cpu[c] = (struct sensor_counts){.measured = SENSOR_BUSY,
                                                          .busy_ns = (uint64_t)(own * DT_NS)};
                        *sensor_target_cpu(&s, 0, c) = s.cpu[c];
                }
                assert_int_equal(estimator_update(est, &s, &v, 1), 0);
        }
        e = estimator_get(est, 1);
        assert_true(e->known & ESTIMATE_P_RUN);
        assert_near(e->run_s, 0.25, 1e-9);
        assert_near(e->p_run, 1.0, 1e-9);
        synth_sample_free(&s);
        estimator_free(est);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(threads_counted_on_one_cpu_are_still_work),
    cmocka_unit_test(time_held_off_by_others_is_left_out),
    cmocka_unit_test(sequential_start_and_tail_around_a_parallel_phase),
    cmocka_unit_test(run_only_intervals_stay_out_of_the_fit),
    cmocka_unit_test(one_core_and_waiting_intervals),
    cmocka_unit_test(unseen_time_bounds_p_run),
    cmocka_unit_test(unseen_time_completed_from_cpu_time),
    cmocka_unit_test(the_adoption_interval_counts_from_the_adoption),
};

PCTL_TEST_MAIN(tests)
