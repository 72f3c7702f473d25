/* The frequency domains' bookkeeping (manager/freqdomains.c): a domain is given back when no
 * app is on it; a failed write is retried with a back-off doubling from 1 s to 64 s, logged
 * once (again on a new errno or after 10 minutes), and its recovery once; a value a domain
 * refuses is not asked for again; a domain that cannot be written is left alone. */
#include <errno.h>

#include "pctl_test.h"
#include "pctl/freqdomains.h"

#define S 1000000000ull

static void faults_by_errno(void **state)
{
        static const struct {
                int err;
                enum freq_fault fault;
        } cases[] = {
            {-EBUSY, FREQ_FAULT_TRANSIENT},     {-EAGAIN, FREQ_FAULT_TRANSIENT},
            {-EINTR, FREQ_FAULT_TRANSIENT},     {-ENOMEM, FREQ_FAULT_TRANSIENT},
            {-EIO, FREQ_FAULT_TRANSIENT},       {-ENODEV, FREQ_FAULT_TRANSIENT},
            {-EINVAL, FREQ_FAULT_VALUE},        {-ERANGE, FREQ_FAULT_VALUE},
            {-EACCES, FREQ_FAULT_DOMAIN},       {-EPERM, FREQ_FAULT_DOMAIN},
            {-EROFS, FREQ_FAULT_DOMAIN},        {-ENOENT, FREQ_FAULT_DOMAIN},
            {-EOVERFLOW, FREQ_FAULT_TRANSIENT}, /* unknown: retried slowly */
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                if (freq_fault_of(cases[i].err) != cases[i].fault)
                        fail_msg("errno %d: class %d, not %d", -cases[i].err,
                                 freq_fault_of(cases[i].err), cases[i].fault);
}

static void set_then_given_back_when_idle(void **state)
{
        struct freqdomain d = {0};

        /* Nothing changed, no app: nothing to do; an app wanting what runs now: nothing. */
        assert_int_equal(freqdomain_next(&d, 0, 2000000, 0), FREQ_NOTHING);
        assert_int_equal(freqdomain_next(&d, 2000000, 2000000, 0), FREQ_NOTHING);
        assert_int_equal(freqdomain_next(&d, 1200000, 2000000, 0), FREQ_SET);
        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1200000, 0, 0), FREQ_LOG_SET);
        assert_int_equal(freqdomain_next(&d, 1200000, 1200000, S), FREQ_NOTHING);
        /* The last app left. */
        assert_int_equal(freqdomain_next(&d, 0, 1200000, 2 * S), FREQ_RESTORE);
        assert_int_equal(freqdomain_done(&d, FREQ_RESTORE, 0, 0, 2 * S), FREQ_LOG_RESTORED);
        assert_int_equal(freqdomain_next(&d, 0, 2000000, 3 * S), FREQ_NOTHING);
}

/* What a domain whose writes keep failing with err does over 600 s of 1 s decisions: how
 * many attempts and how many log lines. */
static void run_failing(int err, unsigned *attempts, unsigned *logs)
{
        struct freqdomain d = {0};

        *attempts = *logs = 0;
        for (uint64_t t = 0; t < 600; t++) {
                enum freq_action a = freqdomain_next(&d, 1200000, 2000000, t * S);

                if (a == FREQ_NOTHING)
                        continue;
                (*attempts)++;
                *logs += freqdomain_done(&d, a, 1200000, err, t * S) != FREQ_LOG_NONE;
        }
}

static void transient_backs_off_and_logs_once(void **state)
{
        unsigned attempts, logs;

        /* At 0, 1, 3, 7, 15, 31, 63, 127, then every 64 s: 15 in 600 s, not 600. */
        run_failing(-EBUSY, &attempts, &logs);
        assert_int_equal(attempts, 15);
        assert_int_equal(logs, 1);
        /* A domain fault: one attempt, one line, left alone. */
        run_failing(-EACCES, &attempts, &logs);
        assert_int_equal(attempts, 1);
        assert_int_equal(logs, 1);
        /* A refused value is not asked again. */
        run_failing(-EINVAL, &attempts, &logs);
        assert_int_equal(attempts, 1);
        assert_int_equal(logs, 1);
}

static void relogged_on_new_errno_or_after_ten_minutes_and_recovery_said(void **state)
{
        struct freqdomain d = {0};
        uint64_t t = 0;

        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1200000, -EBUSY, t), FREQ_LOG_FAILED);
        t = d.retry_ns;
        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1200000, -EBUSY, t), FREQ_LOG_NONE);
        t = d.retry_ns;
        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1200000, -EIO, t), FREQ_LOG_FAILED);
        t += FREQ_RELOG_NS;
        assert_int_equal(freqdomain_next(&d, 1200000, 2000000, t), FREQ_SET);
        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1200000, -EIO, t), FREQ_LOG_FAILED);
        t = d.retry_ns;
        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1200000, 0, t), FREQ_LOG_RECOVERED);
        assert_int_equal(d.failures_before, 4);
        assert_int_equal(d.failures, 0);
        /* A later failure is news again. */
        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1400000, -EIO, t + S), FREQ_LOG_FAILED);
}

static void refused_value_another_is_tried(void **state)
{
        struct freqdomain d = {0};

        assert_int_equal(freqdomain_done(&d, FREQ_SET, 1300000, -EINVAL, 0), FREQ_LOG_FAILED);
        assert_int_equal(freqdomain_next(&d, 1300000, 2000000, 100 * S), FREQ_NOTHING);
        assert_int_equal(freqdomain_next(&d, 1200000, 2000000, 100 * S), FREQ_SET);
        /* The failed set may have left the governor changed: the domain is given back. */
        assert_int_equal(freqdomain_next(&d, 0, 2000000, 100 * S), FREQ_RESTORE);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(faults_by_errno),
    cmocka_unit_test(set_then_given_back_when_idle),
    cmocka_unit_test(transient_backs_off_and_logs_once),
    cmocka_unit_test(relogged_on_new_errno_or_after_ten_minutes_and_recovery_said),
    cmocka_unit_test(refused_value_another_is_tried),
};

PCTL_TEST_MAIN(tests)
