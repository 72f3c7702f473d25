/* Periodic timers skip the ticks they missed (lib/timegrid.c): after a stop they are next due
 * on their grid after now, never in the past. */
#include "pctl_test.h"
#include "pctl/timegrid.h"

static void on_time_is_the_next_point(void **state)
{
        uint64_t missed = 99;

        /* Run 3 ms late: the next is still one interval after the one due. */
        assert_int_equal(timegrid_next(1000000, 1003000, 100000, &missed), 1100000);
        assert_int_equal(missed, 0);
        assert_int_equal(timegrid_next(1000000, 1000000, 100000, NULL), 1100000);
}

/* The case: 100 ms samples, pctld stopped 3 s. The timer fires 3 s late; the next
 * tick is on the grid after now (30 skipped), not 30 ticks back to back. */
static void a_stop_skips_missed_ticks(void **state)
{
        uint64_t due = 5000000, now = due + 3000000 + 42000, missed = 0, next;

        next = timegrid_next(due, now, 100000, &missed);
        assert_int_equal(missed, 30);
        assert_int_equal(next, due + 31 * 100000);
        assert_true(next > now && next - now <= 100000);
        assert_int_equal((next - due) % 100000, 0);
        /* Exactly on a grid point: that point is now, the next is one interval later. */
        assert_int_equal(timegrid_next(due, due + 300000, 100000, &missed), due + 400000);
        assert_int_equal(missed, 3);
}

static void zero_interval_is_now(void **state)
{
        uint64_t missed = 7;

        assert_int_equal(timegrid_next(10, 500, 0, &missed), 500);
        assert_int_equal(missed, 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(on_time_is_the_next_point),
    cmocka_unit_test(a_stop_skips_missed_ticks),
    cmocka_unit_test(zero_interval_is_now),
};

PCTL_TEST_MAIN(tests)
