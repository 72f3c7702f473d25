#include <math.h>

#include "pctl_test.h"
#include "pctl/stack.h"
#include "pctl/util.h"

#define MS 1000000ULL

/* A hand-built interval: up to 8 threads, tids 100, 101, ... */
struct interval {
        struct threadstate_app app;
        struct threadstate_thread threads[8];
};

static struct threadstate_app *interval_init(struct interval *iv, uint64_t interval_ns,
                                             unsigned n_threads)
{
        memset(iv, 0, sizeof(*iv));
        iv->app.pid = 100;
        iv->app.interval_ns = interval_ns;
        iv->app.n_threads = n_threads;
        iv->app.threads = iv->threads;
        for (unsigned i = 0; i < n_threads; i++)
                iv->threads[i].tid = 100 + (pid_t)i;
        return &iv->app;
}

static void thread_set(struct interval *iv, unsigned i, uint64_t run, uint64_t rq, uint64_t sync,
                       uint64_t yld, uint64_t blocked, uint64_t exited, uint64_t solo)
{
        struct threadstate_thread *t = &iv->threads[i];

        t->ns[THREAD_RUN] = run;
        t->ns[THREAD_RUNQUEUE] = rq;
        t->ns[THREAD_SYNC] = sync;
        t->ns[THREAD_YIELD] = yld;
        t->ns[THREAD_BLOCKED] = blocked;
        t->ns[THREAD_EXITED] = exited;
        t->solo_ns = solo;
}

/* The invariants every known stack keeps: speedup + sum = N, every component >= 0; memory
 * counts where it is split out, and is NaN where not. */
static void assert_closed(const struct stack *s)
{
        double sum = s->speedup;

        assert_true(s->known);
        if (!s->memory_known)
                assert_true(isnan(s->component[STACK_MEMORY]));
        for (unsigned c = 0; c < STACK_COMPONENTS; c++) {
                if (!stack_has(s, c))
                        continue;
                if (c != STACK_UNEXPLAINED && !(s->component[c] >= -1e-12))
                        fail_msg("%s = %g < 0", stack_component_name(c), s->component[c]);
                sum += s->component[c];
        }
        assert_near(sum, s->cores, 1e-9);
}

/* Every component but `except` is (near) zero. */
static void assert_only(const struct stack *s, enum stack_component except, double tol)
{
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                if (c != except && stack_has(s, c) && !(fabs(s->component[c]) <= tol))
                        fail_msg("%s = %g, expected 0", stack_component_name(c), s->component[c]);
}

static void component_names(void **state)
{
        static const char *const want[] = {"sequential",   "sync",     "yield",
                                           "imbalance",    "runqueue", "io",
                                           "interference", "memory",   "unexplained"};
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                assert_string_equal(stack_component_name(c), want[c]);
        assert_null(stack_component_name(STACK_COMPONENTS));
}

static void perfect_scaling(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 100 * MS, 2);
        thread_set(&iv, 0, 100 * MS, 0, 0, 0, 0, 0, 0);
        thread_set(&iv, 1, 100 * MS, 0, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 2.0, 1e-9);
        assert_only(&s, STACK_COMPONENTS, 1e-9);
        assert_int_equal(s.threads, 2);
}

/* pbench --p 0.5 on 2 threads, one iteration: thread 0 runs 25 ms of serial code while thread
 * 1 waits in the barrier, then both run 12.5 ms. The process's main thread sits in
 * pthread_join (futex) all along and is left out. */
static void sequential_from_serial_code(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 37500000, 3);
        thread_set(&iv, 0, 0, 0, 37500000, 0, 0, 0, 0); /* main, in pthread_join */
        thread_set(&iv, 1, 37500000, 0, 0, 0, 0, 0, 25 * MS);
        thread_set(&iv, 2, 12500000, 0, 25 * MS, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 50.0 / 37.5, 1e-9);
        assert_near(s.component[STACK_SEQUENTIAL], 25.0 / 37.5, 1e-9);
        assert_only(&s, STACK_SEQUENTIAL, 1e-9);
}

/* One thread on 4 cores: three cores have no thread at all. */
static void sequential_from_missing_threads(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 1);
        thread_set(&iv, 0, 1000 * MS, 0, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 4, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 1.0, 1e-9);
        assert_near(s.component[STACK_SEQUENTIAL], 3.0, 1e-9);
        assert_only(&s, STACK_SEQUENTIAL, 1e-9);
}

/* A thread born half-way: half a core had no thread yet. */
static void sequential_from_late_thread(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 2);
        thread_set(&iv, 0, 1000 * MS, 0, 0, 0, 0, 0, 0);
        thread_set(&iv, 1, 500 * MS, 0, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.component[STACK_SEQUENTIAL], 0.5, 1e-9);
        assert_only(&s, STACK_SEQUENTIAL, 1e-9);
}

/* Two threads hand one lock back and forth: each holds it 0.8 of a 1.6 cycle, works 0.2
 * unlocked and waits 0.6; the solo time is the same on both. */
static void sync_from_lock_handoffs(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1600 * MS, 2);
        thread_set(&iv, 0, 1000 * MS, 0, 600 * MS, 0, 0, 0, 600 * MS);
        thread_set(&iv, 1, 1000 * MS, 0, 600 * MS, 0, 0, 0, 600 * MS);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 1.25, 1e-9);
        assert_near(s.component[STACK_SYNC], 0.75, 1e-9);
        assert_only(&s, STACK_SYNC, 1e-9);
}

/* pbench --imbalance 3 --p 0.95, 2 threads, one iteration of 762.5 ms: thread 0 runs the 50 ms
 * serial part and its 237.5 ms share, then waits 475 ms for thread 1's 712.5 ms. As pbench
 * programs it ([SS]: a thread's wait at the end of the parallel part is imbalance): 475 ms of
 * imbalance and thread 1's 50 ms wait for the serial part. From the totals this is also a lock
 * both hold in turn for 50 ms plus 425 ms of imbalance; the laggard's excess (425 ms) is far
 * above that mutual part, so it reads as serial code and a laggard. */
static void imbalance_from_laggard(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 762500000, 2);
        thread_set(&iv, 0, 287500000, 0, 475 * MS, 0, 0, 0, 50 * MS);
        thread_set(&iv, 1, 712500000, 0, 50 * MS, 0, 0, 0, 475 * MS);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 1000.0 / 762.5, 1e-9);
        assert_near(s.component[STACK_IMBALANCE], 475.0 / 762.5, 1e-9);
        assert_near(s.component[STACK_SEQUENTIAL], 50.0 / 762.5, 1e-9);
        assert_only(&s, STACK_IMBALANCE, 50.0 / 762.5 + 1e-9);
        assert_near(s.component[STACK_SYNC], 0, 1e-9);
}

/* Four threads finish one after another (the model machine's imbalance, pbench --imbalance on
 * more threads): thread 0 runs a 50 ms serial part, then the threads work 100, 200, 300 and
 * 400 ms and wait at the end barrier; thread 3 runs alone for its last 100 ms. Every end wait
 * is imbalance (600 ms), the waits for the serial part sequential (3 x 50 ms), none sync. */
static void imbalance_from_staircase(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 450 * MS, 4);
        thread_set(&iv, 0, 150 * MS, 0, 300 * MS, 0, 0, 0, 50 * MS);
        thread_set(&iv, 1, 200 * MS, 0, 250 * MS, 0, 0, 0, 0);
        thread_set(&iv, 2, 300 * MS, 0, 150 * MS, 0, 0, 0, 0);
        thread_set(&iv, 3, 400 * MS, 0, 50 * MS, 0, 0, 0, 100 * MS);
        stack_compute(&iv.app, 4, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 1050.0 / 450, 1e-9);
        assert_near(s.component[STACK_IMBALANCE], 600.0 / 450, 1e-9);
        assert_near(s.component[STACK_SEQUENTIAL], 150.0 / 450, 1e-9);
        assert_only(&s, STACK_IMBALANCE, 150.0 / 450 + 1e-9);
        assert_near(s.component[STACK_SYNC], 0, 1e-9);
}

/* Lock hand-offs where one thread works a little more (1000 against 980 ms) over 1.6 s: both
 * run 400 ms together, thread 0 alone 580 ms, thread 1 alone 600 ms, and for 20 ms both wait.
 * The waits stay sync; at most the 20 ms shortfall reads as imbalance. */
static void sync_with_nearly_equal_work(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1600 * MS, 2);
        thread_set(&iv, 0, 980 * MS, 0, 620 * MS, 0, 0, 0, 580 * MS);
        thread_set(&iv, 1, 1000 * MS, 0, 600 * MS, 0, 0, 0, 600 * MS);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_true(s.component[STACK_IMBALANCE] <= 20.0 / 1600 + 1e-9);
        assert_true(s.component[STACK_SYNC] >= 1200.0 / 1600 - 20.0 / 1600 - 1e-9);
        assert_int_equal(stack_largest(&s), STACK_SYNC);
}

/* pbench --p 0.95 --sync 0.8 on 2 busy CPUs, as the /proc backend sampled it (3 s): the
 * solo times, sampled, are uneven (1439 against 773 ms). Thread 0's own time exceeds thread
 * 1's by 277 ms: at most that is its serial part, and no laggard appears. */
static void sync_with_sampled_solo(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 3006 * MS, 2);
        thread_set(&iv, 0, 1215100000, 882300000, 908600000, 0, 0, 0, 1438800000);
        thread_set(&iv, 1, 1128000000, 692400000, 1185600000, 0, 0, 0, 772700000);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.component[STACK_IMBALANCE], 0, 1e-9);
        assert_near(s.component[STACK_SEQUENTIAL], 277.0 / 3006, 1e-6);
        assert_int_equal(stack_largest(&s), STACK_SYNC);
}

/* A thread that finished half-way while the other runs on ([SSM]'s Exit_i). */
static void imbalance_from_exited_thread(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 2);
        thread_set(&iv, 0, 1000 * MS, 0, 0, 0, 0, 0, 500 * MS);
        thread_set(&iv, 1, 500 * MS, 0, 0, 0, 0, 500 * MS, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.component[STACK_IMBALANCE], 0.5, 1e-9);
        assert_only(&s, STACK_IMBALANCE, 1e-9);
}

/* Exited threads cost cores only where no live thread is left to use them: 3 live threads
 * keep 2 cores busy, the finished fourth costs nothing. */
static void exited_thread_with_enough_others(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 4);
        for (unsigned i = 0; i < 3; i++)
                thread_set(&iv, i, 666666667, 333333333, 0, 0, 0, 0, 0);
        thread_set(&iv, 3, 0, 0, 0, 0, 0, 1000 * MS, 0);
        iv.app.has_active = true;
        iv.app.active_ns[3] = 1000 * MS;
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 2.0, 1e-6);
        assert_only(&s, STACK_COMPONENTS, 1e-6);
}

/* Another load takes 30% of each of the app's two CPUs. */
static void runqueue_from_other_load(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 2);
        thread_set(&iv, 0, 700 * MS, 300 * MS, 0, 0, 0, 0, 0);
        thread_set(&iv, 1, 700 * MS, 300 * MS, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.component[STACK_RUNQUEUE], 0.6, 1e-9);
        assert_only(&s, STACK_RUNQUEUE, 1e-9);
}

/* Four busy threads on two cores: they wait for a CPU half the time, but the cores are never
 * idle. With the histogram that runqueue time is the app's own and costs nothing; without
 * it, the waits exceed the idle cores and share what is left (nothing). */
static void runqueue_own_oversubscription(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 4);
        for (unsigned i = 0; i < 4; i++)
                thread_set(&iv, i, 500 * MS, 500 * MS, 0, 0, 0, 0, 0);
        iv.app.has_active = true;
        iv.app.active_ns[4] = 1000 * MS;
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 2.0, 1e-9);
        assert_only(&s, STACK_COMPONENTS, 1e-9);

        iv.app.has_active = false;
        iv.app.active_ns[4] = 0;
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_only(&s, STACK_COMPONENTS, 1e-9);
}

static void io_and_yield(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 2);
        thread_set(&iv, 0, 800 * MS, 0, 0, 0, 200 * MS, 0, 0);
        thread_set(&iv, 1, 900 * MS, 0, 0, 100 * MS, 0, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.component[STACK_IO], 0.2, 1e-9);
        assert_near(s.component[STACK_YIELD], 0.1, 1e-9);
        assert_near(s.speedup, 1.7, 1e-9);
}

/* Two threads over one second: one runs throughout, the other runs 900 ms and waits 100 ms
 * on a lock; their stack on 2 cores at the measured speedup (NaN: none measured). */
static void stack_of_sync_pair(double speedup, struct stack *s)
{
        struct interval iv;

        interval_init(&iv, 1000 * MS, 2);
        thread_set(&iv, 0, 1000 * MS, 0, 0, 0, 0, 0, 0);
        thread_set(&iv, 1, 900 * MS, 0, 100 * MS, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, speedup, s);
}

/* A measured speedup below the run time says the running threads did less work than alone:
 * the difference is interference (cache, memory, SMT, frequency), by difference as in [SSM]. */
static void interference_by_difference(void **state)
{
        struct stack s;

        stack_of_sync_pair(1.5, &s);
        assert_closed(&s);
        assert_near(s.speedup, 1.5, 1e-12);
        assert_near(s.component[STACK_SYNC], 0.1, 1e-9);
        assert_near(s.component[STACK_INTERFERENCE], 0.4, 1e-9);
}

/* The synthetic case of the reference digest for [SSM] (N = 4, Tp = 0.6, S = 2): futex waits
 * net of GC {0.075, 0.025, 0.05, 0.15} give sync 0.5, exits at {0.60, 0.56, 0.52, 0.48} give
 * imbalance 0.4; GC, MainThread and hardware interference (0.1667 + 0.2667 + 0.6667) are the
 * residual 1.1. */
static void ssm_synthetic_case(void **state)
{
        static const double sync_s[4] = {0.075, 0.025, 0.05, 0.15};
        static const double exit_s[4] = {0.60, 0.56, 0.52, 0.48};
        struct interval iv;
        struct stack s;

        interval_init(&iv, 600 * MS, 4);
        for (unsigned i = 0; i < 4; i++) {
                uint64_t sync = (uint64_t)llround(sync_s[i] * 1e9);
                uint64_t exited = (uint64_t)llround((0.6 - exit_s[i]) * 1e9);

                thread_set(&iv, i, 600 * MS - sync - exited, 0, sync, 0, 0, exited, 0);
        }
        stack_compute(&iv.app, 4, 2.0, &s);
        assert_closed(&s);
        assert_near(s.component[STACK_SYNC], 0.5, 1e-6);
        assert_near(s.component[STACK_IMBALANCE], 0.4, 1e-6);
        assert_near(s.component[STACK_INTERFERENCE], 0.1 / 0.6 + 0.16 / 0.6 + 0.4 / 0.6, 1e-6);
}

/* A measured speedup above what the threads ran: the waits stay as measured, interference is
 * 0 (nothing ran without doing alone's work), and the cores the speedup claims beyond the
 * run time are unexplained, negative. N - Σ of the others is the run time's speedup. */
static void unexplained_when_speedup_exceeds_run(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 2);
        thread_set(&iv, 0, 600 * MS, 0, 400 * MS, 0, 0, 0, 0);
        thread_set(&iv, 1, 800 * MS, 0, 0, 0, 200 * MS, 0, 0);
        stack_compute(&iv.app, 2, 1.7, &s);
        assert_closed(&s);
        assert_near(s.component[STACK_INTERFERENCE], 0, 1e-12);
        assert_near(s.component[STACK_SYNC], 0.4, 1e-9);
        assert_near(s.component[STACK_IO], 0.2, 1e-9);
        assert_near(s.component[STACK_UNEXPLAINED], -0.3, 1e-9);
        assert_near(stack_speedup_estimated(&s), 1.4, 1e-9);
}

/* [SS] eq. 4: the estimated speedup is N less every measured component. With a speedup
 * below the run time the components explain every core: unexplained 0, and N - Σ is the
 * measured speedup; the interference is what the running threads did not achieve. More waits
 * than idle cores (three threads on two) share the idle time; nothing is unexplained. */
static void estimated_speedup_from_components(void **state)
{
        struct interval iv;
        struct stack s, unknown;

        stack_of_sync_pair(1.5, &s);
        assert_near(s.component[STACK_UNEXPLAINED], 0, 1e-9);
        assert_near(2.0 - s.component[STACK_SYNC] - s.component[STACK_INTERFERENCE],
                    stack_speedup_estimated(&s), 1e-9);
        assert_near(stack_speedup_estimated(&s), 1.5, 1e-9);

        interval_init(&iv, 1000 * MS, 3);
        thread_set(&iv, 0, 800 * MS, 0, 200 * MS, 0, 0, 0, 0);
        thread_set(&iv, 1, 600 * MS, 0, 400 * MS, 0, 0, 0, 0);
        thread_set(&iv, 2, 400 * MS, 0, 600 * MS, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_closed(&s);
        assert_near(s.speedup, 1.8, 1e-9);
        assert_near(s.component[STACK_SYNC], 0.2, 1e-9);
        assert_near(s.component[STACK_UNEXPLAINED], 0, 1e-9);

        unknown = (struct stack){.known = false};
        assert_true(isnan(stack_speedup_estimated(&unknown)));
        assert_true(isnan(stack_speedup_estimated(NULL)));
}

static void superlinear_is_capped(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 1000 * MS, 2);
        thread_set(&iv, 0, 1000 * MS, 0, 0, 0, 0, 0, 0);
        thread_set(&iv, 1, 1000 * MS, 0, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, 2.3, &s);
        assert_closed(&s);
        assert_near(s.speedup, 2.0, 1e-12);
}

/* Mixtures of every state over 1 to 8 threads on 1 to 8 cores, measured speedup or not: the
 * bar always closes at N with no negative component. */
static void mixtures_close_at_n(void **state)
{
        uint64_t seed = 12345;
        struct interval iv;
        struct stack s;

        for (unsigned round = 0; round < 2000; round++) {
                unsigned n = 1 + round % 8, cores = 1 + (round / 8) % 8;
                double speedup = NAN;

                interval_init(&iv, 1000 * MS, n);
                for (unsigned i = 0; i < n; i++) {
                        uint64_t left = 1000 * MS, part[THREAD_STATES] = {0};

                        for (unsigned st = 0; st < THREAD_STATES && left > 0; st++) {
                                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                                part[st] = st == THREAD_STATES - 1 ? left : (seed >> 33) % left;
                                left -= part[st];
                        }
                        part[THREAD_RUN] += MS; /* every thread runs a little */
                        thread_set(&iv, i, part[THREAD_RUN], part[THREAD_RUNQUEUE],
                                   part[THREAD_SYNC], part[THREAD_YIELD], part[THREAD_BLOCKED],
                                   part[THREAD_EXITED], (seed >> 20) % (part[THREAD_RUN] + 1));
                }
                if (round % 3 == 1)
                        speedup = (double)((seed >> 40) % 1000) / 100.0;
                stack_compute(&iv.app, cores, speedup, &s);
                assert_closed(&s);
                /* Any frequency sensitivity keeps the bar closed and memory within the
                 * residual; sometimes with a single-core share beside it. */
                {
                        struct stack m = s;
                        double share = (double)((seed >> 13) % 1001) / 1000.0;
                        double alone = round % 2 ? NAN : (double)((seed >> 27) % 1001) / 1000.0;

                        stack_split_memory(&m, share, alone);
                        assert_true(m.memory_known);
                        assert_closed(&m);
                        assert_near(m.component[STACK_MEMORY] + m.component[STACK_INTERFERENCE],
                                    s.component[STACK_INTERFERENCE], 1e-12);
                }
        }
}

static void unknown_when_too_little_data(void **state)
{
        struct interval iv;
        struct stack s;

        interval_init(&iv, 0, 1); /* no time */
        thread_set(&iv, 0, 0, 0, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_false(s.known);
        assert_true(isnan(s.speedup) && isnan(s.component[STACK_SYNC]));

        interval_init(&iv, 1000 * MS, 0); /* no thread */
        stack_compute(&iv.app, 2, NAN, &s);
        assert_false(s.known);

        interval_init(&iv, 1000 * MS, 2); /* nothing ran: parked all along */
        thread_set(&iv, 0, 0, 0, 1000 * MS, 0, 0, 0, 0);
        thread_set(&iv, 1, 0, 0, 0, 0, 1000 * MS, 0, 0);
        stack_compute(&iv.app, 2, NAN, &s);
        assert_false(s.known);
        assert_true(isnan(s.component[STACK_INTERFERENCE]));

        interval_init(&iv, 1000 * MS, 1);
        thread_set(&iv, 0, 1000 * MS, 0, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 0, NAN, &s); /* no cores */
        assert_false(s.known);
        stack_compute(&iv.app, NAN, NAN, &s);
        assert_false(s.known);
        stack_compute(&iv.app, 2, -1, &s); /* a negative speedup */
        assert_false(s.known);
        stack_compute(NULL, 2, NAN, &s);
        assert_false(s.known);

        interval_init(&iv, 100000, 1); /* 0.1 ms: a few ticks, not a stack */
        thread_set(&iv, 0, 100000, 0, 0, 0, 0, 0, 0);
        stack_compute(&iv.app, 1, NAN, &s);
        assert_false(s.known);
}

/* interference_by_difference's stack: N = 2, speedup 1.5, sync 0.1, interference 0.4. */
static void stack_with_residual(struct stack *s)
{
        stack_of_sync_pair(1.5, s);
        assert_false(s->memory_known);
        assert_true(isnan(s->component[STACK_MEMORY]));
        assert_near(s->component[STACK_INTERFERENCE], 0.4, 1e-9);
}

/* The cores that ran (1.9) spent mem_share of their time on memory; the work done (1.5 cores
 * of single-core work) needed mem_share_alone of its own: memory is the difference. */
static void memory_split_known_sensitivity(void **state)
{
        static const struct {
                double share, alone, memory;
        } cases[] = {
            {0.5, NAN, 0.5 * 1.9 - 0.5 * 1.5},   /* alone unknown: taken as the same share */
            {0.5, 0.45, 0.5 * 1.9 - 0.45 * 1.5}, /* contention added memory time */
            {0.9, 0.1, 0.4},                     /* more than the residual: all of it */
            {0.2, 0.5, 0},                       /* less memory than alone: none of it */
            {0, 0, 0},                           /* compute-bound: known, and 0 */
            {1, NAN, 0.4},                       /* every cycle a memory stall */
        };
        struct stack s;

        for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
                stack_with_residual(&s);
                stack_split_memory(&s, cases[i].share, cases[i].alone);
                assert_true(s.memory_known);
                assert_true(stack_has(&s, STACK_MEMORY));
                assert_closed(&s);
                if (fabs(s.component[STACK_MEMORY] - cases[i].memory) > 1e-9)
                        fail_msg("case %u: memory %g, expected %g", i, s.component[STACK_MEMORY],
                                 cases[i].memory);
                assert_near(s.component[STACK_INTERFERENCE], 0.4 - cases[i].memory, 1e-9);
                /* The rest of the stack does not move. */
                assert_near(s.speedup, 1.5, 1e-12);
                assert_near(s.component[STACK_SYNC], 0.1, 1e-9);
        }
}

/* No sensitivity, or one that is not a share: no split, interference as before. */
static void memory_unknown_without_sensitivity(void **state)
{
        static const double bad[] = {NAN, -0.1, 1.5, INFINITY, -INFINITY};
        struct stack s;

        for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
                stack_with_residual(&s);
                stack_split_memory(&s, bad[i], 0.3);
                assert_false(s.memory_known);
                assert_false(stack_has(&s, STACK_MEMORY));
                assert_true(isnan(s.component[STACK_MEMORY]));
                assert_near(s.component[STACK_INTERFERENCE], 0.4, 1e-9);
                assert_closed(&s);
        }
        /* A bad single-core share is unknown, not an error: taken as the share on N. */
        stack_with_residual(&s);
        stack_split_memory(&s, 0.5, 7);
        assert_near(s.component[STACK_MEMORY], 0.5 * 0.4, 1e-9);
        /* An unknown stack stays unknown. */
        s = (struct stack){.known = false, .speedup = NAN};
        stack_split_memory(&s, 0.5, 0.5);
        assert_false(s.known || s.memory_known);
        stack_split_memory(NULL, 0.5, 0.5);
}

/* Split again from the whole residual: the same sensitivity gives the same stack, an unknown
 * one gives the residual back to interference. */
static void memory_split_again(void **state)
{
        struct stack s, once;

        stack_with_residual(&s);
        stack_split_memory(&s, 0.5, NAN);
        once = s;
        stack_split_memory(&s, 0.5, NAN);
        assert_near(s.component[STACK_MEMORY], once.component[STACK_MEMORY], 1e-12);
        assert_near(s.component[STACK_INTERFERENCE], once.component[STACK_INTERFERENCE], 1e-12);
        stack_split_memory(&s, NAN, NAN);
        assert_false(s.memory_known);
        assert_near(s.component[STACK_INTERFERENCE], 0.4, 1e-9);
        assert_closed(&s);
}

/* The run-time speedup leaves no residual: memory is known, and 0. */
static void memory_zero_without_residual(void **state)
{
        struct stack s;

        stack_of_sync_pair(NAN, &s);
        stack_split_memory(&s, 0.8, NAN);
        assert_true(s.memory_known);
        assert_near(s.component[STACK_MEMORY], 0, 1e-12);
        assert_near(s.component[STACK_INTERFERENCE], 0, 1e-12);
        assert_closed(&s);
}

/* The estimator's mem_fraction (memory's share at its reference clock) carried to a clock:
 * m = 0.5 at 2 GHz is 1 unit of compute and 0.5 of memory at 1 GHz, a third of the time. */
static void memory_share_at_a_clock(void **state)
{
        assert_near(stack_mem_share_at(0.5, 2000000, 2000000), 0.5, 1e-12);
        assert_near(stack_mem_share_at(0.5, 2000000, 1000000), 1.0 / 3, 1e-12);
        assert_near(stack_mem_share_at(0.5, 1000000, 2000000), 2.0 / 3, 1e-12);
        assert_near(stack_mem_share_at(0, 2000000, 1000000), 0, 1e-12);
        assert_near(stack_mem_share_at(1, 2000000, 1000000), 1, 1e-12);
        assert_true(isnan(stack_mem_share_at(NAN, 2000000, 1000000)));
        assert_true(isnan(stack_mem_share_at(1.2, 2000000, 1000000)));
        assert_true(isnan(stack_mem_share_at(0.5, 0, 1000000)));
        assert_true(isnan(stack_mem_share_at(0.5, 2000000, 0)));
}

static void largest_delimiter(void **state)
{
        struct stack s = {.known = true, .cores = 2, .speedup = 1.0};

        assert_int_equal(stack_largest(&s), STACK_COMPONENTS); /* none */
        s.component[STACK_SYNC] = 0.3;
        s.component[STACK_IO] = 0.2;
        s.component[STACK_INTERFERENCE] = 0.5; /* a residual, not a delimiter of the app's */
        assert_int_equal(stack_largest(&s), STACK_SYNC);
        s.component[STACK_IO] = 0.4;
        assert_int_equal(stack_largest(&s), STACK_IO);
        /* Memory is a delimiter where it is split out, and only there. */
        s.component[STACK_MEMORY] = 0.45;
        assert_int_equal(stack_largest(&s), STACK_IO);
        s.memory_known = true;
        assert_int_equal(stack_largest(&s), STACK_MEMORY);
        s.component[STACK_MEMORY] = NAN;
        s.memory_known = false;
        assert_int_equal(stack_largest(&s), STACK_IO);
        s.known = false;
        assert_int_equal(stack_largest(&s), STACK_COMPONENTS);
        assert_int_equal(stack_largest(NULL), STACK_COMPONENTS);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(component_names),
    cmocka_unit_test(perfect_scaling),
    cmocka_unit_test(sequential_from_serial_code),
    cmocka_unit_test(sequential_from_missing_threads),
    cmocka_unit_test(sequential_from_late_thread),
    cmocka_unit_test(sync_from_lock_handoffs),
    cmocka_unit_test(imbalance_from_laggard),
    cmocka_unit_test(imbalance_from_staircase),
    cmocka_unit_test(sync_with_nearly_equal_work),
    cmocka_unit_test(sync_with_sampled_solo),
    cmocka_unit_test(imbalance_from_exited_thread),
    cmocka_unit_test(exited_thread_with_enough_others),
    cmocka_unit_test(runqueue_from_other_load),
    cmocka_unit_test(runqueue_own_oversubscription),
    cmocka_unit_test(io_and_yield),
    cmocka_unit_test(interference_by_difference),
    cmocka_unit_test(ssm_synthetic_case),
    cmocka_unit_test(unexplained_when_speedup_exceeds_run),
    cmocka_unit_test(estimated_speedup_from_components),
    cmocka_unit_test(superlinear_is_capped),
    cmocka_unit_test(mixtures_close_at_n),
    cmocka_unit_test(unknown_when_too_little_data),
    cmocka_unit_test(memory_split_known_sensitivity),
    cmocka_unit_test(memory_unknown_without_sensitivity),
    cmocka_unit_test(memory_split_again),
    cmocka_unit_test(memory_zero_without_residual),
    cmocka_unit_test(memory_share_at_a_clock),
    cmocka_unit_test(largest_delimiter),
};

PCTL_TEST_MAIN(tests)
