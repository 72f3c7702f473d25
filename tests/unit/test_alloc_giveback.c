/* A probe's give-back (manager/alloc_giveback.c; docs/allocator.md, "A probe for a full
 * package's bandwidth"): the cores a probe of a package's bandwidth took go back to the app at
 * the next decision only where the plan with them can be placed. Counting free CPUs is not
 * enough: an app with a frequency domain of its own holds its whole package, whatever its count
 * (bench_random's 91010 and 93010, fifth runs: "cannot place the plan (No space left on
 * device)", the plan the allocator chose not applied). */
#include <errno.h>

#include "pctl_test.h"
#include "pctl/allocator.h"
#include "pctl/topology.h"
#include "pctl/util.h"

#define N_APPS 5
#define PROBED 1 /* the probed app's index */

/* 91010's fifth run on the 2 x 6 Xeon (packages 0-5 and 6-11) at the decision after the
 * probe, its packages swapped: a1 (index 4) has a domain of its own at 5 cores (granted at
 * that decision), so one package is all its; on the other, a0, a5 and the probed a2 want one
 * CPU each and a4 two: one CPU is free there. */
static void plan_91010(struct allocator_app *apps, struct cpumask *cur)
{
        static const unsigned want[N_APPS] = {1, 1, 1, 2, 5};
        static const char *const held[N_APPS] = {"0", "1", "2", "3-4", "6-10"};

        for (unsigned i = 0; i < N_APPS; i++) {
                apps[i] = (struct allocator_app){.id = i + 1, .want_cores = want[i]};
                assert_int_equal(cpumask_parse(held[i], &cur[i]), 0);
        }
        apps[4].own_domain = true;
}

/* Where the plan leaves one free CPU beside a domain of its own, a give-back of two is not
 * made (12 CPUs, 12 wanted: a count of free CPUs says it fits); the plan as it stands is
 * placed. Without the domain the same give-back fits and is made, and the plan with it is
 * placed; so is it where the plan leaves two CPUs free on package 0. */
static void a_give_back_is_made_only_where_the_plan_can_be_placed(void **state)
{
        struct topology t;
        struct allocator_app apps[N_APPS];
        struct cpumask allowed, cur[N_APPS], out[N_APPS];

        (void)state;
        assert_int_equal(topology_synthetic(&t, 2, 6, 1), 0);
        assert_int_equal(cpumask_parse("0-11", &allowed), 0);

        plan_91010(apps, cur);
        assert_int_equal(allocator_give_back(&t, &allowed, apps, cur, N_APPS, PROBED, 3), 0);
        assert_int_equal(apps[PROBED].want_cores, 1);
        assert_false(apps[PROBED].changed);
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, N_APPS), 0);
        assert_int_equal(cpumask_count(&out[PROBED]), 1);

        plan_91010(apps, cur);
        apps[4].own_domain = false;
        assert_int_equal(allocator_give_back(&t, &allowed, apps, cur, N_APPS, PROBED, 3), 1);
        assert_int_equal(apps[PROBED].want_cores, 3);
        assert_true(apps[PROBED].changed);
        assert_non_null(strstr(apps[PROBED].reason, "back to 3 cores"));
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, N_APPS), 0);
        assert_int_equal(cpumask_count(&out[PROBED]), 3);

        plan_91010(apps, cur);
        apps[3].want_cores = 1; /* a4 leaves one of its two: two free on package 0 */
        assert_int_equal(allocator_give_back(&t, &allowed, apps, cur, N_APPS, PROBED, 3), 1);
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, N_APPS), 0);
        assert_int_equal(cpumask_count(&out[PROBED]), 3);
        assert_int_equal(cpumask_count(&out[4]), 5);
        topology_free(&t);
}

/* A count the plan moved away from the probe's (the search's or the partition's own move)
 * stands: no give-back, the app unchanged; nor is a count given back that is not above it. */
static void a_move_of_its_own_after_a_probe_stands(void **state)
{
        struct topology t;
        struct allocator_app apps[N_APPS];
        struct cpumask allowed, cur[N_APPS];

        (void)state;
        assert_int_equal(topology_synthetic(&t, 2, 6, 1), 0);
        assert_int_equal(cpumask_parse("0-11", &allowed), 0);
        plan_91010(apps, cur);
        apps[4].own_domain = false;
        apps[PROBED].want_cores = 2; /* it holds 1 */
        assert_int_equal(allocator_give_back(&t, &allowed, apps, cur, N_APPS, PROBED, 3), 0);
        assert_int_equal(apps[PROBED].want_cores, 2);
        assert_false(apps[PROBED].changed);
        apps[PROBED].want_cores = 1;
        assert_int_equal(allocator_give_back(&t, &allowed, apps, cur, N_APPS, PROBED, 1), 0);
        assert_int_equal(apps[PROBED].want_cores, 1);
        assert_false(apps[PROBED].changed);
        topology_free(&t);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_give_back_is_made_only_where_the_plan_can_be_placed),
    cmocka_unit_test(a_move_of_its_own_after_a_probe_stands),
};

PCTL_TEST_MAIN(tests)
