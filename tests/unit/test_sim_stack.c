/* The model machine's scaling delimiters (sync, imbalance, sleep), its thread states through
 * threadstate_sim_ops and the speedup stack's ground truth (docs/sim.md, "Thread states and
 * the speedup stack"). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl/appstack.h"
#include "pctl/sim.h"
#include "pctl/threadstate.h"

#define STEP_100MS (100 * 1000 * 1000ULL)
/* 16 cores at 3 GHz: one second of single-core work is 3e9 instructions at IPC 1. */
#define S16 "[machine]\npreset = server-64\nsockets = 1\ncores_per_socket = 16\n"

static void bad_delimiter_keys_are_named(void **state)
{
        sim_expect_bad(S16 "[app a]\ninstructions = 1e9\np = 0.9\nsync = 1.5\n", 8, "outside");
        sim_expect_bad(S16 "[app a]\ninstructions = 1e9\np = 0.9\nimbalance = 0.5\n", 8, "outside");
        sim_expect_bad(S16 "[app a]\ninstructions = 1e9\np = 0.9\nsleep = 1\n", 8, "outside");
        sim_expect_bad(S16 "[app a]\ninstructions = 1e9\np = 0.9\nsync = half\n", 8,
                       "is not a number");
        sim_expect_bad(S16 "[app a]\ninstructions = 1e9\np = 0.9\nsync = 0.1\nsync = 0.2\n", 9,
                       "given twice");
        sim_expect_bad(S16 "[app a]\nmeasured = 1 3000 10 100\nsleep = 0.2\n", 6, "do not mix");
}

/* Wall time of one second of single-core work on 16 CPUs, from the model's closed form. */
static double run_time(const char *app_keys)
{
        char text[512];
        struct sim_machine *m;
        struct sim_app_truth t;

        snprintf(text, sizeof(text), S16 "[app a]\ninstructions = 3e10\n%s", app_keys);
        m = sim_load_ok(text);
        while (!sim_done(m))
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(sim_truth_app(m, 0, &t), 0);
        sim_free(m);
        return t.time_s / 10;
}

static void delimiters_shape_progress(void **state)
{
        /* Eq. 2 unchanged without delimiters. */
        assert_near(run_time("p = 0.95\n"), 0.05 + 0.95 / 16, 1e-3);
        /* The lock: its critical sections one after another (0.5 * 0.95) outlast the
         * threads' share (0.95 / 16). */
        assert_near(run_time("p = 0.95\nsync = 0.5\n"), 0.05 + 0.5 * 0.95, 1e-3);
        /* A light lock (0.05 * 0.95 < 0.95 / 16) costs nothing. */
        assert_near(run_time("p = 0.95\nsync = 0.05\n"), 0.05 + 0.95 / 16, 1e-3);
        /* Imbalance 3: the last of 16 threads has 2 * 3 / (16 * 4) of the work. */
        assert_near(run_time("p = 0.95\nimbalance = 3\n"), 0.05 + 0.95 * 6 / 64, 1e-3);
        /* Sleep 0.5: every parallel thread takes twice as long. */
        assert_near(run_time("p = 0.95\nsleep = 0.5\n"), 0.05 + 0.95 / 16 / 0.5, 1e-3);
}

struct reader {
        struct threadstate ts;
        struct threadstate_app app;
};

static void reader_open(struct reader *r, struct sim_machine *m, pid_t pid)
{
        *r = (struct reader){.ts = {.ops = &threadstate_sim_ops}};
        assert_int_equal(threadstate_sim_ops.open(&r->ts, m), 0);
        assert_int_equal(threadstate_sim_ops.set_pids(&r->ts, &pid, 1), 0);
}

static void reader_close(struct reader *r)
{
        threadstate_sim_ops.close(&r->ts);
        free(r->app.threads);
}

static uint64_t sum_state(const struct threadstate_app *a, enum thread_state st)
{
        uint64_t sum = 0;

        for (unsigned j = 0; j < a->n_threads; j++)
                sum += a->threads[j].ns[st];
        return sum;
}

/* Steps m for secs, reads the thread states of app 0 and the truth over that time. */
static void measure(struct sim_machine *m, struct reader *r, double secs, struct stack *truth)
{
        struct sim_stack_acc from, to;

        assert_int_equal(threadstate_sim_ops.read(&r->ts, &r->app, 1), 0);
        assert_int_equal(sim_truth_stack_acc(m, 0, &from), 0);
        for (double t = 0; t < secs - 1e-9; t += 0.1)
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(threadstate_sim_ops.read(&r->ts, &r->app, 1), 0);
        assert_int_equal(sim_truth_stack_acc(m, 0, &to), 0);
        sim_truth_stack(&from, &to, truth);
}

/* Every thread accounts for the whole interval, the histogram too, and the truth adds up to
 * the cores: the invariants the stack relies on. */
static void check_invariants(const struct threadstate_app *a, const struct stack *truth)
{
        uint64_t hist = 0;
        double sum = truth->speedup;

        for (unsigned j = 0; j < a->n_threads; j++) {
                uint64_t t = 0;

                for (unsigned st = 0; st < THREAD_STATES; st++)
                        t += a->threads[j].ns[st];
                assert_near((double)t, (double)a->interval_ns, 100);
        }
        assert_true(a->has_active);
        for (unsigned c = 0; c <= THREADSTATE_MAX_ACTIVE; c++)
                hist += a->active_ns[c];
        assert_near((double)hist, (double)a->interval_ns, 200);
        assert_true(truth->known);
        for (unsigned c = 0; c < STACK_COMPONENTS; c++) {
                assert_true(truth->component[c] >= -1e-9);
                sum += truth->component[c];
        }
        assert_near(sum, truth->cores, 1e-6);
}

static void sync_app_waits_in_futex(void **state)
{
        struct sim_machine *m =
            sim_load_ok(S16 "[app a]\ninstructions = 1e12\np = 0.95\nsync = 0.5\n");
        struct reader r;
        struct stack truth;
        double d = 0.05 + 0.5 * 0.95;

        reader_open(&r, m, SIM_PID_BASE);
        measure(m, &r, 2, &truth);
        assert_int_equal(r.app.n_threads, 16);
        assert_int_equal(r.app.interval_ns, 2000000000ULL);
        check_invariants(&r.app, &truth);
        /* Useful work is all of it: 1 / d cores; the lock's wait the rest of the parallel
         * part, on every thread; the 15 others wait out the sequential part. */
        assert_near(truth.speedup, 1 / d, 1e-6);
        assert_near(truth.component[STACK_SYNC], 16 * (0.5 * 0.95 - 0.95 / 16) / d, 1e-6);
        assert_near(truth.component[STACK_SEQUENTIAL], 15 * 0.05 / d, 1e-6);
        assert_near(sum_state(&r.app, THREAD_RUN) / 2e9, 1 / d, 1e-6);
        assert_near(sum_state(&r.app, THREAD_SYNC) / 2e9,
                    truth.component[STACK_SYNC] + truth.component[STACK_SEQUENTIAL], 1e-6);
        /* One thread active through the sequential part, and whenever the lock's holder is
         * the only one running: each thread works 0.95 / 16 of the 0.475 the part lasts. */
        double a = 0.95 / 16 / 0.475, one = 16 * a * pow(1 - a, 15);
        assert_near(r.app.active_ns[1] / 2e9, (0.05 + one * 0.475) / d, 1e-6);
        assert_near(r.app.active_ns[0] / 2e9, pow(1 - a, 16) * 0.475 / d, 1e-6);
        reader_close(&r);
        sim_free(m);
}

static void imbalance_and_sleep_have_their_states(void **state)
{
        struct sim_machine *m =
            sim_load_ok(S16 "[app a]\ninstructions = 1e12\np = 0.95\nimbalance = 3\n"
                            "[app b]\ninstructions = 1e12\np = 0.95\nsleep = 0.4\nthreads = 16\n");
        struct reader r;
        struct stack truth;
        pid_t pid_b = SIM_PID_BASE + 1;
        double d = 0.05 + 0.95 * 6 / 64;

        /* Both on all 16 CPUs: they time-share, each runnable half the time it would run. */
        reader_open(&r, m, SIM_PID_BASE);
        measure(m, &r, 1, &truth);
        check_invariants(&r.app, &truth);
        assert_near(truth.component[STACK_IMBALANCE], (16 * 0.95 * 6 / 64 - 0.95) / d, 1e-6);
        assert_near(truth.component[STACK_RUNQUEUE], 0.5 / d, 1e-6);
        assert_near(truth.speedup, 0.5 / d, 1e-6);
        assert_near(sum_state(&r.app, THREAD_RUNQUEUE) / 1e9, 0.5 / d, 1e-6);
        /* The first thread has the least work, the last the most (3 times). */
        assert_true(r.app.threads[15].ns[THREAD_SYNC] < r.app.threads[1].ns[THREAD_SYNC]);
        assert_int_equal(sum_state(&r.app, THREAD_BLOCKED), 0);

        assert_int_equal(threadstate_sim_ops.set_pids(&r.ts, &pid_b, 1), 0);
        assert_int_equal(threadstate_sim_ops.read(&r.ts, &r.app, 1), 0);
        assert_int_equal(r.app.interval_ns, 0);
        for (int i = 0; i < 10; i++)
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(threadstate_sim_ops.read(&r.ts, &r.app, 1), 0);
        assert_int_equal(r.app.pid, pid_b);
        /* Sleeping 0.4 of each parallel thread's time: 0.95 * 0.4 / 0.6 of a unit of work. */
        d = 0.05 + 0.95 / 16 / 0.6;
        assert_near(sum_state(&r.app, THREAD_BLOCKED) / 1e9, 0.95 * 0.4 / 0.6 / d, 1e-6);
        reader_close(&r);
        sim_free(m);
}

static void memory_bandwidth_is_memory(void **state)
{
        /* 16 CPUs at 3 GIPS asking 8 B per instruction of 204.8 GB/s: stretched by
         * 16 * 3e9 * 8 / 204.8e9 = 1.875 (P = 1: every CPU runs all the time). */
        struct sim_machine *m = sim_load_ok(S16 "[app a]\ninstructions = 1e13\np = 1\n"
                                                "mem_bytes_per_instruction = 8\n");
        struct reader r;
        struct stack truth;

        reader_open(&r, m, SIM_PID_BASE);
        measure(m, &r, 1, &truth);
        check_invariants(&r.app, &truth);
        assert_near(truth.speedup, 16 / 1.875, 1e-6);
        /* The machine's only interference is memory bandwidth: all of it is memory. */
        assert_true(truth.memory_known);
        assert_near(truth.component[STACK_MEMORY], 16 - 16 / 1.875, 1e-6);
        assert_near(truth.component[STACK_INTERFERENCE], 0, 1e-12);
        /* Stalled threads are on their CPUs: the states show no loss, only the speedup
         * does (interference is found by difference). */
        assert_near(sum_state(&r.app, THREAD_RUN) / 1e9, 16, 1e-6);
        assert_near(r.app.active_ns[16] / 1e9, 1, 1e-6);
        reader_close(&r);
        sim_free(m);
}

static void finished_app_threads_have_exited(void **state)
{
        /* 0.15 s of work on 16 CPUs at P = 0: it ends in the second step. */
        struct sim_machine *m =
            sim_load_ok(S16 "[app a]\ninstructions = 4.5e8\np = 0\nthreads = 4\n"
                            "[app b]\nstart_s = 10\ninstructions = 1e9\np = 0.5\n");
        struct reader r;
        pid_t pids[2] = {SIM_PID_BASE, SIM_PID_BASE + 1};
        struct threadstate_app apps[2] = {{0}};

        reader_open(&r, m, SIM_PID_BASE);
        assert_int_equal(threadstate_sim_ops.set_pids(&r.ts, pids, 2), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(threadstate_sim_ops.read(&r.ts, apps, 2), 0);
        assert_int_equal(apps[0].n_threads, 4);
        assert_near(apps[0].threads[0].ns[THREAD_RUN], 0.15e9, 10);
        assert_near(apps[0].threads[0].ns[THREAD_EXITED], 0.15e9, 10);
        assert_near(apps[0].threads[3].ns[THREAD_SYNC], 0.15e9, 10);
        assert_near(apps[0].active_ns[0], 0.15e9, 10);
        /* Not started: no process yet. */
        assert_int_equal(apps[1].pid, SIM_PID_BASE + 1);
        assert_int_equal(apps[1].n_threads, 0);
        /* Not one of the machine's processes. */
        pids[1] = SIM_PID_BASE + 2;
        assert_int_equal(threadstate_sim_ops.set_pids(&r.ts, pids, 2), -ESRCH);
        assert_int_equal(threadstate_sim_ops.read(&r.ts, apps, 2), 0); /* the old set holds */
        assert_int_equal(threadstate_sim_ops.read(&r.ts, apps, 1), -EINVAL);
        free(apps[0].threads);
        free(apps[1].threads);
        reader_close(&r);
        sim_free(m);
}

static void probe_needs_the_machine(void **state)
{
        struct threadstate_probe p;
        struct threadstate ts = {.ops = &threadstate_sim_ops};

        assert_int_equal(threadstate_sim_ops.probe(NULL, &p), 0);
        assert_false(p.available);
        assert_non_null(strstr(p.reason, "machine"));
        assert_int_equal(threadstate_sim_ops.open(&ts, NULL), -ENODEV);
        assert_string_equal(threadstate_sim_ops.name, "sim");
}

/* pctld's stacks (manager/appstack.c) of the bandwidth-bound app above over one 3 s window,
 * with the speedup the counters measure (the truth's) and a memory share of its time: memory
 * is split out only with both. */
static void appstack_window(double speedup, double mem_share, struct stack *out,
                            struct stack *truth)
{
        struct sim_machine *m = sim_load_ok(S16 "[app a]\ninstructions = 1e13\np = 1\n"
                                                "mem_bytes_per_instruction = 8\n");
        struct appstacks *s = NULL;
        pid_t pid = SIM_PID_BASE;
        struct appstack_view v = {
            .pid = pid, .cores = 16, .speedup = speedup, .mem_share = mem_share};
        struct sim_stack_acc from, to;
        const struct stack *st = NULL;
        char why[256];

        assert_int_equal(appstacks_open(&threadstate_sim_ops, m, &s, why, sizeof(why)), 0);
        assert_int_equal(appstacks_set_pids(s, &pid, 1), 0);
        assert_int_equal(sim_truth_stack_acc(m, 0, &from), 0);
        for (unsigned i = 0; i < 40 && !st; i++) {
                assert_int_equal(sim_step(m, STEP_100MS), 0);
                assert_int_equal(appstacks_read(s, &v, 1), 0);
                st = appstacks_get(s, pid);
        }
        assert_non_null(st);
        *out = *st;
        assert_int_equal(sim_truth_stack_acc(m, 0, &to), 0);
        sim_truth_stack(&from, &to, truth);
        appstacks_close(s);
        sim_free(m);
}

static void pctld_splits_memory_with_the_sensitivity(void **state)
{
        struct stack st, truth;
        double sum;

        /* Saturated: none of its time scales with the clock, all the residual is memory. */
        appstack_window(16 / 1.875, 1, &st, &truth);
        assert_true(st.known && st.memory_known);
        assert_near(st.component[STACK_MEMORY], truth.component[STACK_MEMORY], 0.05 * 16);
        assert_near(st.component[STACK_MEMORY], 16 - 16 / 1.875, 1e-3);
        assert_near(st.component[STACK_INTERFERENCE], 0, 1e-3);
        sum = st.speedup;
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                sum += st.component[c];
        assert_near(sum, 16, 1e-9);
        /* No sensitivity: memory unknown, the residual stays interference. */
        appstack_window(16 / 1.875, NAN, &st, &truth);
        assert_true(st.known && !st.memory_known && isnan(st.component[STACK_MEMORY]));
        assert_near(st.component[STACK_INTERFERENCE], 16 - 16 / 1.875, 1e-3);
        /* No measured speedup: nothing by difference to split. */
        appstack_window(NAN, 1, &st, &truth);
        assert_true(st.known && !st.memory_known);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_delimiter_keys_are_named),
    cmocka_unit_test(delimiters_shape_progress),
    cmocka_unit_test(sync_app_waits_in_futex),
    cmocka_unit_test(imbalance_and_sleep_have_their_states),
    cmocka_unit_test(memory_bandwidth_is_memory),
    cmocka_unit_test(pctld_splits_memory_with_the_sensitivity),
    cmocka_unit_test(finished_app_threads_have_exited),
    cmocka_unit_test(probe_needs_the_machine),
};

PCTL_TEST_MAIN(tests)
