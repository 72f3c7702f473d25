/* A price of memory bandwidth (manager/alloc_model.c; docs/allocator.md, "A price of memory
 * bandwidth"): where the bandwidth of an app's package is measured, its predictions are slowed
 * by the package's demand over its bandwidth, so cores that would only wait on a full package
 * buy nothing, and fewer cores cost nothing while what they ask still fills it. */
#include <stdio.h>
#include <stdlib.h>

#include "allocator_fixture.h"
#include "pctl/util.h"
#include "../../manager/alloc_internal.h"

/* App id's model rate at `cores` cores, in 1e9 instructions per second. */
static double rate_at(struct fixture *f, uint64_t id, unsigned cores)
{
        struct model_prediction pr;

        assert_int_equal(estimator_predict(f->est, id, cores, 0, &f->pm, &pr), 0);
        return 1 / pr.time_s;
}

/* Two twin apps (P 0.9 by their counters) share 12 CPUs, neither score measurable: the
 * partition is the model's. */
static void share_two(struct fixture *f, struct allocator_app a[2], double bandwidth_gbs,
                      double slack)
{
        struct allocator_ctx ctx = share_two_setup(f, a, 4);

        a[0].bw.bytes_per_instr = 1;
        a[0].bw.bandwidth_gbs = bandwidth_gbs;
        a[0].bw.slack = slack;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[0].want_cores + a[1].want_cores, 12);
}

/* App 1's package is full at its 4 cores (its bandwidth is what it moves there): cores beyond
 * buy it nothing, and its twin gets them. With the bandwidth unknown, or far above what it
 * moves, they share equally. */
static void cores_on_a_full_package_buy_nothing(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2];
        double full_gbs;

        feed_two(f);
        full_gbs = rate_at(f, 1, 4);
        share_two(f, a, 0, 1);
        assert_int_equal(a[0].want_cores, a[1].want_cores);
        share_two(f, a, 100 * full_gbs, 1);
        assert_int_equal(a[0].want_cores, a[1].want_cores);
        share_two(f, a, full_gbs, 1);
        if (!(a[0].want_cores < a[1].want_cores))
                fail_msg("app on a full package %u cores, its twin %u (%s)", a[0].want_cores,
                         a[1].want_cores, a[0].reason);
}

/* Its predicted time at fewer cores: the model's where nothing is known of the demand beyond
 * what fills the package (slack 1); with its apps asking twice what filled it, one core less
 * still fills it and costs nothing; more cores never gain. */
static void fewer_cores_cost_nothing_while_the_package_stays_full(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = {.est = f->est, .pm = &f->pm, .n_cpus = 12, .n_apps = 2};
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 4};
        double t4 = NAN, t3 = NAN, t3_model = NAN, t8 = NAN;

        feed_two(f);
        a.bw.bytes_per_instr = 1;
        a.bw.bandwidth_gbs = rate_at(f, 1, 4);
        a.bw.slack = 1;
        alloc_predicted_score(&ctx, &a, OBJECTIVE_EDP, 4, 0, &t4);
        alloc_predicted_score(&ctx, &a, OBJECTIVE_EDP, 3, 0, &t3_model);
        alloc_predicted_score(&ctx, &a, OBJECTIVE_EDP, 8, 0, &t8);
        assert_near(t4, 1 / rate_at(f, 1, 4), 1e-9);
        assert_near(t3_model, 1 / rate_at(f, 1, 3), 1e-9);
        assert_near(t8, t4, 1e-9);
        a.bw.slack = 2;
        alloc_predicted_score(&ctx, &a, OBJECTIVE_EDP, 3, 0, &t3);
        assert_near(t3, t4, 1e-9);
        alloc_predicted_score(&ctx, &a, OBJECTIVE_EDP, 8, 0, &t8);
        assert_near(t8, t4, 1e-9);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            fixture_case(cores_on_a_full_package_buy_nothing),
            fixture_case(fewer_cores_cost_nothing_while_the_package_stays_full),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
