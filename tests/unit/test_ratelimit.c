/* lib/ratelimit.c: a burst passes per interval, the rest are counted and reported. */
#include "pctl_test.h"
#include "pctl/ratelimit.h"
#include "pctl/util.h"

static void burst_then_hold_back(void **state)
{
        struct ratelimit rl = RATELIMIT_INIT(60 * NSEC_PER_SEC, 1);
        unsigned missed = 99;

        assert_true(ratelimit_pass(&rl, 1000, &missed));
        assert_int_equal(missed, 0);
        for (int i = 0; i < 5000; i++)
                assert_false(ratelimit_pass(&rl, 1000 + (uint64_t)i * NSEC_PER_MSEC, NULL));
        assert_false(ratelimit_pass(&rl, 1000 + 59 * NSEC_PER_SEC, NULL));
        assert_true(ratelimit_pass(&rl, 1000 + 60 * NSEC_PER_SEC, &missed));
        assert_int_equal(missed, 5001);
        /* A clock that went back starts a new interval rather than holding back forever. */
        assert_true(ratelimit_pass(&rl, 10, &missed));
        assert_int_equal(missed, 0);
}

static void a_burst_of_three(void **state)
{
        struct ratelimit rl = RATELIMIT_INIT(NSEC_PER_SEC, 3);

        for (int i = 0; i < 3; i++)
                assert_true(ratelimit_pass(&rl, 5, NULL));
        assert_false(ratelimit_pass(&rl, 6, NULL));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(burst_then_hold_back),
    cmocka_unit_test(a_burst_of_three),
};
PCTL_TEST_MAIN(tests)
