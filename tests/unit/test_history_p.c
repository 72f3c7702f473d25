/* A P carried to the next run (docs/history.md, "A P carried to the next run"): what a run
 * records of its first phase's settled P, and how a returning app uses the one it came with:
 * the allocator's P (predictions, the partition's ranking, P taken as settled) until the run's
 * own P settles, never against it, and only in the first phase. */
#include <math.h>
#include <stdio.h>

#include "allocator_fixture.h"
#include "pctl/util.h"
#include "../../manager/alloc_internal.h"
#include "../../manager/manager_internal.h"

static const struct policy *edp(void)
{
        return policy_builtin(OBJECTIVE_EDP);
}

static struct allocator_ctx ctx_of(struct fixture *f, unsigned n_apps)
{
        return (struct allocator_ctx){.est = f->est,
                                      .pm = &f->pm,
                                      .n_cpus = N_CPUS,
                                      .hysteresis = 0.05,
                                      .decision = 100,
                                      .n_apps = n_apps};
}

/* The model's time for one unit of work at `cores`, with P given (NaN: the estimate's). */
static double time_at(struct fixture *f, double p, unsigned cores)
{
        struct model_prediction pr;

        assert_true(estimator_predict_p(f->est, 1, p, cores, 0, &f->pm, &pr) >= 0);
        return pr.time_s;
}

/* The remembered P stands in while the run's own is not settled: alloc_model_p, the model's
 * predictions, P taken as settled. Once the run's own settles it decides (a measured P wins),
 * and a later phase never takes the first phase's. */
static void a_remembered_p_stands_in_until_its_own_settles(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = ctx_of(f, 1);
        struct allocator_app a = {.id = 1, .policy = edp(), .effective = OBJECTIVE_EDP, .cores = 4};
        const struct estimate *e;
        double t = NAN;

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        feed(f, 1, 0.9, 0, 4, 2);
        e = estimator_get(f->est, 1);
        assert_false(alloc_p_settled(e));
        /* Without one: the estimate's unsettled P, and not ready. */
        assert_false(alloc_p_ready(&a, e));
        assert_false(alloc_p_from_history(&a, e));
        a.history_p_known = true;
        a.history_p = 0.3;
        assert_true(alloc_p_from_history(&a, e));
        assert_true(alloc_p_ready(&a, e));
        assert_near(alloc_model_p(&a, e), 0.3, 1e-12);
        assert_true(isfinite(alloc_predicted_score(&ctx, &a, OBJECTIVE_EDP, 6, 0, &t)));
        assert_near(t, time_at(f, 0.3, 6), 1e-12 * t);
        if (!(fabs(t - time_at(f, NAN, 6)) > 0.1 * t))
                fail_msg("predicted %g s at 6 cores with the remembered P, %g with its own", t,
                         time_at(f, NAN, 6));
        /* A later phase: the first phase's P is not its P. */
        a.first_phase.lost = true;
        assert_false(alloc_p_from_history(&a, e));
        assert_false(alloc_p_ready(&a, e));
        a.first_phase.lost = false;
        /* Its own settles (at 0.9): it decides, whatever the remembered one says. */
        feed(f, 1, 0.9, 0, 4, 30);
        e = estimator_get(f->est, 1);
        assert_true(alloc_p_settled(e));
        assert_false(alloc_p_from_history(&a, e));
        assert_true(alloc_p_ready(&a, e));
        assert_near(alloc_model_p(&a, e), e->p_ls, 1e-12);
        assert_near(e->p_ls, 0.9, 0.02);
        assert_true(isfinite(alloc_predicted_score(&ctx, &a, OBJECTIVE_EDP, 6, 0, &t)));
        assert_near(t, time_at(f, NAN, 6), 1e-12 * t);
}

/* The partition ranks a returning app by the P it came with: two apps whose estimates (two
 * intervals each at P 0.9, not settled) are the same share alike without history, and the one
 * remembered at P 0.99 gets more cores than the one remembered at 0.5. */
static void the_partition_ranks_a_returning_app_by_its_remembered_p(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2], plain[2];
        struct allocator_ctx ctx = share_two_setup(f, a, 6);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        assert_int_equal(estimator_app_add(f->est, 2), 0);
        feed(f, 1, 0.9, 0, 4, 2);
        feed(f, 2, 0.9, 4, 4, 2);
        assert_false(alloc_p_settled(estimator_get(f->est, 1)));
        assert_false(alloc_p_settled(estimator_get(f->est, 2)));
        (void)share_two_setup(f, plain, 6);
        assert_int_equal(allocator_decide(&ctx, plain, 2), 0);
        assert_int_equal(plain[0].want_cores, plain[1].want_cores);
        a[0].history_p_known = a[1].history_p_known = true;
        a[0].history_p = 0.99;
        a[1].history_p = 0.5;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        if (!(a[0].want_cores > a[1].want_cores))
                fail_msg("remembered at P 0.99: %u cores (%s); at 0.5: %u (%s)", a[0].want_cores,
                         a[0].reason, a[1].want_cores, a[1].reason);
}

/* What a run records: its own first phase's settled P (kept as it settles, by
 * allocator_observe), else the one it came with, else none; a P settled only after the first
 * phase ended is not the first phase's. */
static void the_first_phase_p_is_recorded(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = ctx_of(f, 1);
        struct allocator_app a = {.id = 1, .policy = edp(), .cores = 4}, lost;
        struct history_entry remembered = {
            .settled_p = 0.6, .settled_p_stderr = 0.01, .settled_p_points = 9}, out;

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        feed(f, 1, 0.9, 0, 4, 2);
        allocator_observe(&ctx, &a);
        assert_false(a.first_phase.p_ok); /* not settled yet */
        lost = a;
        history_settled_p(&a, NULL, &out);
        assert_true(isnan(out.settled_p));
        history_settled_p(&a, &remembered, &out);
        assert_near(out.settled_p, 0.6, 1e-12);
        assert_near(out.settled_p_stderr, 0.01, 1e-12);
        assert_near(out.settled_p_points, 9, 1e-12);
        feed(f, 1, 0.9, 0, 4, 30);
        allocator_observe(&ctx, &a);
        assert_true(a.first_phase.p_ok);
        history_settled_p(&a, &remembered, &out);
        assert_near(out.settled_p, estimator_get(f->est, 1)->p_ls, 1e-12);
        assert_near(out.settled_p, 0.9, 0.02);
        assert_near(out.settled_p_stderr, estimator_get(f->est, 1)->p_stderr, 1e-15);
        assert_true(out.settled_p_points >= 3);
        /* Its first phase ended before its P settled: what settles later is not recorded. */
        lost.first_phase.lost = true;
        allocator_observe(&ctx, &lost);
        assert_false(lost.first_phase.p_ok);
        history_settled_p(&lost, NULL, &out);
        assert_true(isnan(out.settled_p));
}

static const struct CMUnitTest tests[] = {
    fixture_case(a_remembered_p_stands_in_until_its_own_settles),
    fixture_case(the_partition_ranks_a_returning_app_by_its_remembered_p),
    fixture_case(the_first_phase_p_is_recorded),
};

PCTL_TEST_MAIN(tests)
