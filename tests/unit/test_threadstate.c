#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#include "fake_tree.h"
#include "pctl/threadstate.h"
#include "pctl/util.h"
#include "../../sensors/threadstate_proc.h"

#define MS 1000000ULL

static void parse_stat_state(void **state)
{
        char st = '?';

        assert_int_equal(threadstate_proc_parse_stat("1234 (pbench) S 1 1234 1234 0", &st), 0);
        assert_int_equal(st, 'S');
        /* A command name with spaces and parentheses: the last ")" ends it. */
        assert_int_equal(threadstate_proc_parse_stat("7 (a) R (b)) R 1 7", &st), 0);
        assert_int_equal(st, 'R');
        assert_int_equal(threadstate_proc_parse_stat("7 (x) Q 1", &st), -EINVAL);
        assert_int_equal(threadstate_proc_parse_stat("7 x S 1", &st), -EINVAL);
        assert_int_equal(threadstate_proc_parse_stat("7 (x)", &st), -EINVAL);
        assert_int_equal(st, 'R'); /* untouched on error */
}

static void parse_schedstat_fields(void **state)
{
        uint64_t run = 1, rq = 1;

        assert_int_equal(threadstate_proc_parse_schedstat("123456789 5000 42", &run, &rq), 0);
        assert_true(run == 123456789 && rq == 5000);
        assert_int_equal(threadstate_proc_parse_schedstat("1 2", &run, &rq), -EINVAL);
        assert_int_equal(threadstate_proc_parse_schedstat("1 2 3 junk", &run, &rq), -EINVAL);
        assert_int_equal(threadstate_proc_parse_schedstat("", &run, &rq), -EINVAL);
        assert_true(run == 123456789 && rq == 5000);
}

static void parse_syscall_line(void **state)
{
        long nr = 0;

        assert_int_equal(threadstate_proc_parse_syscall("202 0x7f 0x80 0x0 0x0 0x0 0x0 0x7ffd "
                                                        "0x7f12",
                                                        &nr),
                         0);
        assert_int_equal(nr, 202);
        assert_int_equal(threadstate_proc_parse_syscall("-1 0x7ffd 0x7f12", &nr), 0);
        assert_int_equal(nr, -1);
        assert_int_equal(threadstate_proc_parse_syscall("running", &nr), -EAGAIN);
        assert_int_equal(threadstate_proc_parse_syscall("abc", &nr), -EINVAL);
        assert_int_equal(threadstate_proc_parse_syscall("", &nr), -EINVAL);
        assert_int_equal(threadstate_proc_parse_syscall("-7 0x0", &nr), -EINVAL);
}

/* A fake /proc/100 with threads whose state and schedstat the test sets. */
static void fake_thread(int tid, char st, uint64_t run_ns, uint64_t rq_ns, long nr)
{
        char path[128], text[256];

        snprintf(path, sizeof(path), "/proc/100/task/%d/stat", tid);
        snprintf(text, sizeof(text), "%d (worker %d) %c 1 100 100 0 -1\n", tid, tid, st);
        fake_put(path, text);
        snprintf(path, sizeof(path), "/proc/100/task/%d/schedstat", tid);
        snprintf(text, sizeof(text), "%llu %llu 10\n", (unsigned long long)run_ns,
                 (unsigned long long)rq_ns);
        fake_put(path, text);
        snprintf(path, sizeof(path), "/proc/100/task/%d/syscall", tid);
        if (nr == -2)
                snprintf(text, sizeof(text), "running\n");
        else
                snprintf(text, sizeof(text), "%ld 0x1 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f12\n", nr);
        fake_put(path, text);
}

static void fake_rm_thread(int tid)
{
        char path[1024];

        snprintf(path, sizeof(path), "%s/proc/100/task/%d", fake_root, tid);
        nftw(path, fake_rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static const struct threadstate_thread *find_tid(const struct threadstate_app *a, pid_t tid)
{
        for (unsigned i = 0; i < a->n_threads; i++)
                if (a->threads[i].tid == tid)
                        return &a->threads[i];
        return NULL;
}

/* Thread 100 runs while thread 101 waits in a futex, then 101 runs and 100 sleeps in
 * nanosleep; 101 exits; then the whole process goes. */
static void watch_samples_and_reports(void **state)
{
        struct threadstate_proc_watch w;
        struct threadstate_app app = {0};
        const struct threadstate_thread *t;
        uint64_t now = 1000 * MS;

        fake_tree_new("threadstate");
        fake_put("/proc/100/syscall", "7 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f12\n");
        fake_thread(100, 'R', 500 * MS, 10 * MS, -2);
        fake_thread(101, 'S', 20 * MS, 1 * MS, SYS_futex);
        fake_tree_use();

        assert_int_equal(threadstate_proc_watch_init(&w, 100, now), 0);
        assert_int_equal(w.n_threads, 2);
        for (unsigned k = 0; k < 10; k++) {
                now += 10 * MS;
                assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        }
        fake_thread(100, 'R', 600 * MS, 10 * MS, -2);
        now += 0; /* the report's own sample at the same time adds nothing */
        assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        assert_int_equal(threadstate_proc_watch_report(&w, now, &app), 0);
        assert_int_equal(app.pid, 100);
        assert_true(app.interval_ns == 100 * MS);
        assert_int_equal(app.n_threads, 2);
        assert_true(app.has_active);
        assert_true(app.active_ns[1] == 100 * MS);
        t = find_tid(&app, 100);
        assert_non_null(t);
        assert_true(t->ns[THREAD_RUN] == 100 * MS);
        assert_true(t->solo_ns == 100 * MS);
        t = find_tid(&app, 101);
        assert_non_null(t);
        assert_true(t->ns[THREAD_SYNC] == 100 * MS);
        assert_true(t->ns[THREAD_RUN] == 0 && t->ns[THREAD_BLOCKED] == 0);
        assert_false(threadstate_app_exited(&app));

        /* 101 runs 40 ms of the next 50, 100 sleeps in nanosleep (35); 101 then exits. */
        fake_thread(100, 'S', 600 * MS, 10 * MS, 35);
        fake_thread(101, 'R', 60 * MS, 1 * MS, -2);
        for (unsigned k = 0; k < 5; k++) {
                now += 10 * MS;
                assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        }
        /* What it ran after the last sample that saw it is lost with it. */
        fake_rm_thread(101);
        now += 10 * MS;
        assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        assert_int_equal(threadstate_proc_watch_report(&w, now, &app), 0);
        assert_true(app.interval_ns == 60 * MS);
        t = find_tid(&app, 100);
        assert_true(t->ns[THREAD_BLOCKED] == 60 * MS);
        t = find_tid(&app, 101);
        assert_non_null(t);
        /* Gone at the last sample: exited half-way between it and the one before. */
        assert_true(t->ns[THREAD_EXITED] == 5 * MS);
        assert_true(t->ns[THREAD_RUN] == 40 * MS);
        assert_true(t->solo_ns == 40 * MS); /* 100 was alive and waiting */
        assert_false(threadstate_app_exited(&app));

        /* Reported once: the next interval has 100 alone. */
        now += 10 * MS;
        assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        assert_int_equal(threadstate_proc_watch_report(&w, now, &app), 0);
        assert_int_equal(app.n_threads, 1);

        /* The process goes: its threads are exited, and stay so. */
        fake_tree_free();
        fake_tree_new("threadstate");
        fake_tree_use();
        now += 20 * MS;
        assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        assert_int_equal(threadstate_proc_watch_report(&w, now, &app), 0);
        assert_int_equal(app.n_threads, 1);
        assert_true(app.threads[0].ns[THREAD_EXITED] == 10 * MS);
        assert_true(threadstate_app_exited(&app));
        now += 20 * MS;
        assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        assert_int_equal(threadstate_proc_watch_report(&w, now, &app), 0);
        assert_true(app.threads[0].ns[THREAD_EXITED] == 20 * MS);
        assert_true(threadstate_app_exited(&app));

        threadstate_proc_watch_free(&w);
        threadstate_app_free(&app);
        fake_tree_free();
}

/* A thread born between two samples counts from the first of them; schedstat, which counts
 * from its birth, moves the birth earlier when it ran longer than that. */
static void watch_new_thread(void **state)
{
        struct threadstate_proc_watch w;
        struct threadstate_app app = {0};
        const struct threadstate_thread *t;
        uint64_t now = 0;

        fake_tree_new("threadstate");
        fake_put("/proc/100/syscall", "running\n");
        fake_thread(100, 'S', 0, 0, SYS_futex);
        fake_tree_use();
        assert_int_equal(threadstate_proc_watch_init(&w, 100, now), 0);
        now += 50 * MS;
        assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        fake_thread(102, 'R', 30 * MS, 0, -2);
        now += 50 * MS;
        assert_int_equal(threadstate_proc_watch_sample(&w, now), 0);
        assert_int_equal(threadstate_proc_watch_report(&w, now, &app), 0);
        assert_int_equal(app.n_threads, 2);
        t = find_tid(&app, 102);
        assert_non_null(t);
        assert_true(t->ns[THREAD_RUN] == 30 * MS);
        assert_true(t->ns[THREAD_RUN] + t->ns[THREAD_BLOCKED] + t->ns[THREAD_SYNC] == 50 * MS);
        threadstate_proc_watch_free(&w);
        threadstate_app_free(&app);
        fake_tree_free();
}

static void watch_refuses_missing_process(void **state)
{
        struct threadstate_proc_watch w = {.pid = 42};

        fake_tree_new("threadstate");
        fake_tree_use();
        assert_int_equal(threadstate_proc_watch_init(&w, 100, 0), -ESRCH);
        assert_int_equal(threadstate_proc_watch_init(&w, 0, 0), -EINVAL);
        assert_int_equal(w.pid, 42); /* untouched */
        fake_tree_free();
}

static void backend_table(void **state)
{
        const struct threadstate_ops *ops = NULL;
        char why[1024] = "";
        bool proc = false;

        for (unsigned i = 0; threadstate_backends[i]; i++) {
                assert_string_not_equal(threadstate_backends[i]->name, "sim");
                proc |= threadstate_backends[i] == &threadstate_proc_ops;
        }
        assert_true(proc);
        assert_ptr_equal(threadstate_find("proc"), &threadstate_proc_ops);
        assert_null(threadstate_find("sim")); /* the model machine's, chosen by its owner */
        assert_null(threadstate_find("nope"));
        assert_null(threadstate_find(NULL));
        assert_int_equal(threadstate_pick_auto(&ops, why, sizeof(why)), 0);
        assert_non_null(ops);
        assert_non_null(strstr(why, ops->name));
}

static atomic_int spin_stop;

static void *spin_main(void *arg)
{
        volatile double x = 1;

        (void)arg;
        while (!atomic_load(&spin_stop))
                x = x * 1.0000001 + 1e-9;
        return NULL;
}

/* The real backend on this very process: a spinning thread runs, the main thread sleeps. */
static void proc_backend_on_self(void **state)
{
        struct threadstate *ts = NULL;
        struct threadstate_app app = {0};
        pid_t self = getpid(), two[2] = {getpid(), getpid()};
        uint64_t run = 0;
        pthread_t th;
        clockid_t spin_clock;
        struct timespec spun;

        assert_int_equal(threadstate_open(&threadstate_proc_ops, NULL, &ts), 0);
        assert_int_equal(threadstate_set_pids(ts, two, 2), -EINVAL); /* twice the same */
        assert_int_equal(threadstate_read(ts, &app, 1), -EINVAL);    /* nothing set */
        assert_int_equal(threadstate_set_pids(ts, &self, 1), 0);
        assert_int_equal(threadstate_set_sample_period(ts, 0), -EINVAL);
        assert_int_equal(threadstate_set_sample_period(ts, 2 * MS), 0);
        atomic_store(&spin_stop, 0);
        assert_int_equal(pthread_create(&th, NULL, spin_main, NULL), 0);
        assert_int_equal(pthread_getcpuclockid(th, &spin_clock), 0);
        usleep(200000);
        /* A loaded machine may have given the spinner far less than the 200 ms: on, until it
         * has run 100 ms (20 s at most). */
        for (uint64_t end = now_ns() + 20 * NSEC_PER_SEC;
             clock_gettime(spin_clock, &spun) == 0 &&
             (uint64_t)spun.tv_sec * NSEC_PER_SEC + (uint64_t)spun.tv_nsec < 100 * MS &&
             now_ns() < end;)
                usleep(10000);
        atomic_store(&spin_stop, 1);
        pthread_join(th, NULL);
        assert_int_equal(threadstate_read(ts, &app, 1), 0);
        assert_int_equal(app.pid, self);
        assert_true(app.interval_ns >= 150 * MS);
        assert_true(app.n_threads >= 2);
        for (unsigned i = 0; i < app.n_threads; i++)
                run += app.threads[i].ns[THREAD_RUN];
        /* The spinner ran 100 ms or more (the machine may be shared). */
        assert_true(run >= 20 * MS);
        assert_true(app.has_active);
        assert_int_equal(threadstate_set_pids(ts, NULL, 0), 0);
        assert_int_equal(threadstate_read(ts, &app, 0), 0);
        threadstate_close(ts);
        threadstate_app_free(&app);
}

static void app_add_keeps_exited(void **state)
{
        struct threadstate_thread a1[2] = {
            {.tid = 1, .ns = {[THREAD_RUN] = 10}},
            {.tid = 2, .ns = {[THREAD_RUN] = 6, [THREAD_EXITED] = 4}}};
        struct threadstate_thread a2[2] = {{.tid = 1, .ns = {[THREAD_RUN] = 10}, .solo_ns = 10},
                                           {.tid = 3, .ns = {[THREAD_RUN] = 5}}};
        struct threadstate_app i1 = {
            .pid = 9, .interval_ns = 10, .n_threads = 2, .threads = a1, .has_active = true};
        struct threadstate_app i2 = {
            .pid = 9, .interval_ns = 10, .n_threads = 2, .threads = a2, .has_active = false};
        struct threadstate_app sum = {0};

        i1.active_ns[2] = 6;
        i1.active_ns[1] = 4;
        assert_int_equal(threadstate_app_add(&sum, &i1), 0);
        assert_true(sum.has_active && sum.active_ns[1] == 4);
        assert_int_equal(threadstate_app_add(&sum, &i2), 0);
        assert_int_equal(sum.pid, 9);
        assert_true(sum.interval_ns == 20);
        assert_int_equal(sum.n_threads, 3);
        assert_true(sum.threads[0].ns[THREAD_RUN] == 20 && sum.threads[0].solo_ns == 10);
        assert_true(sum.threads[1].ns[THREAD_EXITED] == 14); /* still exited in i2 */
        assert_true(sum.threads[2].tid == 3 && sum.threads[2].ns[THREAD_RUN] == 5);
        /* i2 had no histogram: the sum has none either. */
        assert_false(sum.has_active);
        assert_true(sum.active_ns[1] == 0);
        assert_false(threadstate_app_exited(&sum));
        threadstate_app_free(&sum);
        assert_null(sum.threads);
}

/* One case per line: CMake reads the case names from here. */
// clang-format off
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(parse_stat_state),
    cmocka_unit_test(parse_schedstat_fields),
    cmocka_unit_test(parse_syscall_line),
    cmocka_unit_test(watch_samples_and_reports),
    cmocka_unit_test(watch_new_thread),
    cmocka_unit_test(watch_refuses_missing_process),
    cmocka_unit_test(backend_table),
    cmocka_unit_test(proc_backend_on_self),
    cmocka_unit_test(app_add_keeps_exited),
};
// clang-format on

PCTL_TEST_MAIN(tests)
