/* Waits the counters do not see (manager/alloc_wait.c; docs/allocator.md, "Waits the counters
 * miss"): where an app's speedup stack at its count is clearly below the model's speedup and
 * its waits at locks and barriers explain the gap, the model's predictions, which share the
 * machine among apps whose scores cannot be measured, are corrected to the stack. */
#include <stdio.h>
#include <stdlib.h>

#include "allocator_fixture.h"
#include "pctl/util.h"
#include "../../manager/alloc_internal.h"

/* A stack at `cores` cores: `speedup`, the rest of the cores split between a lock's waits
 * (sync) and other blocking (io). */
static struct stack stack_at(unsigned cores, double speedup, double sync, double io)
{
        struct stack s = {.known = true, .cores = cores, .threads = cores, .speedup = speedup};

        s.component[STACK_SYNC] = sync;
        s.component[STACK_IO] = io;
        s.component[STACK_SEQUENTIAL] = cores - speedup - sync - io;
        return s;
}

/* Two apps whose counters both say P 0.9 share 12 CPUs, neither score measurable (two apps, no
 * power of their own): the partition is the model's. */
static void share_two(struct fixture *f, struct allocator_app a[2], const struct stack *st0)
{
        struct allocator_ctx ctx = share_two_setup(f, a, 2);

        if (st0)
                a[0].stack = *st0;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[0].want_cores + a[1].want_cores, 12);
}

/* The stack shows app 1 at 1.3 on 2 cores where Amdahl's law with the counters' P says 1.8,
 * and a lock's waits explain it: it gets fewer cores than its twin. Without the stack, or with
 * the gap in other blocking (sleep, I/O: not waits between its threads), they share equally. */
static void lock_waits_the_counters_miss_cost_cores(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2];
        struct stack lock = stack_at(2, 1.3, 0.6, 0), sleep = stack_at(2, 1.3, 0.05, 0.6);

        feed_two(f);
        share_two(f, a, NULL);
        assert_int_equal(a[0].want_cores, a[1].want_cores);
        share_two(f, a, &sleep);
        assert_int_equal(a[0].want_cores, a[1].want_cores);
        assert_int_equal(a[0].wait.cores, 0);
        share_two(f, a, &lock);
        assert_int_equal(a[0].wait.cores, 2);
        assert_near(a[0].wait.speedup, 1.3, 1e-9);
        if (!(a[0].want_cores < a[1].want_cores))
                fail_msg("app with lock waits %u cores, its twin %u (%s)", a[0].want_cores,
                         a[1].want_cores, a[0].reason);
}

/* The correction outlives the move: at fewer cores, where the stack shows no gap (a lock may
 * not bind there yet), it stays; a stack at as many cores or more that shows no gap clears it
 * (the model holds up to there); a phase change drops it. */
static void the_correction_holds_until_more_cores_show_none(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = {.est = f->est, .pm = &f->pm, .n_cpus = 12, .n_apps = 2};
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .effective = OBJECTIVE_EDP,
                                  .cores = 4,
                                  .stack = stack_at(4, 2.0, 1.5, 0)};

        feed_two(f);
        alloc_wait_observe(&ctx, &a);
        assert_int_equal(a.wait.cores, 4);
        a.cores = 2;
        a.stack = stack_at(2, 1.81, 0.1, 0); /* Amdahl's 1.82 at P 0.9: no gap */
        alloc_wait_observe(&ctx, &a);
        assert_int_equal(a.wait.cores, 4);
        if (!(alloc_wait_time_k(&ctx, &a, 8) > 1.2))
                fail_msg("at 2 cores the model's time at 8 is stretched by %.3f only",
                         alloc_wait_time_k(&ctx, &a, 8));
        a.cores = 4;
        a.stack = stack_at(4, 3.07, 0.3, 0);
        alloc_wait_observe(&ctx, &a);
        assert_int_equal(a.wait.cores, 0);
        assert_near(alloc_wait_time_k(&ctx, &a, 8), 1, 1e-12);
        a.stack = stack_at(4, 2.0, 1.5, 0);
        alloc_wait_observe(&ctx, &a);
        assert_int_equal(a.wait.cores, 4);
        alloc_phase_reset(&ctx, &a);
        assert_int_equal(a.wait.cores, 0);
}

/* The decisions the corrected model drives say so. Where its score is measured (here: an
 * objective without power), the measurements decide: the model is not corrected, and nothing
 * is said. */
static void a_measured_score_is_not_corrected(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2];
        struct allocator_ctx ctx = {.est = f->est, .pm = &f->pm, .n_cpus = 12, .n_apps = 2};
        struct stack lock = stack_at(2, 1.3, 0.6, 0);

        feed_two(f);
        share_two(f, a, &lock);
        assert_int_equal(a[0].wait.cores, 2);
        assert_true(alloc_wait_time_k(&ctx, &a[0], 8) > 1.2);
        snprintf(a[0].reason, sizeof(a[0].reason), "model: edp 6%% better at 4 cores");
        alloc_wait_note(&ctx, &a[0]);
        if (!strstr(a[0].reason, "waits at locks or barriers its counters miss: speedup 1.3 on 2"))
                fail_msg("the reason does not say so: %s", a[0].reason);
        a[0].effective = OBJECTIVE_PERFORMANCE;
        assert_near(alloc_wait_time_k(&ctx, &a[0], 8), 1, 1e-12);
        snprintf(a[0].reason, sizeof(a[0].reason), "measured");
        alloc_wait_note(&ctx, &a[0]);
        assert_string_equal(a[0].reason, "measured");
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            fixture_case(lock_waits_the_counters_miss_cost_cores),
            fixture_case(the_correction_holds_until_more_cores_show_none),
            fixture_case(a_measured_score_is_not_corrected),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
