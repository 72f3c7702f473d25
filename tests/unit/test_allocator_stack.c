/* The allocator's use of the speedup stack (docs/allocator.md, "The speedup stack"): a lock
 * that grows with the cores sends the first probe to the cores the app keeps busy, a growing
 * delimiter puts fewer cores first, interference a lower clock, each with its reason. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "allocator_fixture.h"
#include "pctl/util.h"

/* The fixture with app 1 settled at P 0.5 or 0.95 (allocator_fixture.h). */
static int settled_half(void **state)
{
        return fixture_setup_settled(state, 0.5);
}

static int settled_high(void **state)
{
        return fixture_setup_settled(state, 0.95);
}

static bool measured(const struct allocator_app *a, unsigned cores)
{
        for (unsigned i = 0; i < a->n_hist; i++)
                if (a->hist[i].cores == cores)
                        return true;
        return false;
}

/* A stack of n cores with one delimiter taking `cost` of them, the rest speedup. */
static struct stack stack_of(double n, enum stack_component c, double cost)
{
        struct stack st = {.known = true, .cores = n, .threads = (unsigned)n};

        st.component[c] = cost;
        st.speedup = n - cost;
        return st;
}

/* A lock-bound app: about 10 cores' worth of work, whatever it is given; its measured EDP
 * rate is lowest at 12 cores. Returns the probes until settled, and the first one. */
static unsigned search_lock_bound(struct fixture *f, bool with_stack, unsigned *first,
                                  char *first_reason, size_t size)
{
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 64};
        struct allocator_ctx ctx = {.est = f->est,
                                    .n_cpus = 64,
                                    .hysteresis = 0.05,
                                    .decision = 100,
                                    .n_apps = 1,
                                    .power_measured = true};
        unsigned probes = 0;

        add_point(&a, 64, 0, 100 + 10 * 52.0 * 52, ctx.decision);
        for (int i = 0; i < 40; i++) {
                double busy = a.cores < 10 ? a.cores : 10;

                a.stack = with_stack ? stack_of(a.cores, STACK_SYNC, a.cores - busy)
                                     : (struct stack){.known = false};
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.phase == ALLOCATOR_PHASE_SETTLED && !a.changed)
                        break;
                a.cores = a.want_cores;
                if (!measured(&a, a.cores)) {
                        double d = (double)a.cores - 12;

                        if (probes++ == 0) {
                                *first = a.cores;
                                snprintf(first_reason, size, "%s", a.reason);
                        }
                        add_point(&a, a.cores, 0, 100 + 10 * d * d, ctx.decision);
                }
                ctx.decision++;
        }
        if (a.cores != 12 || a.phase != ALLOCATOR_PHASE_SETTLED)
                fail_msg("ended at %u cores (%s), expected 12 and settled", a.cores, a.reason);
        return probes;
}

static void lock_bound_app_probes_its_busy_cores_first(void **state)
{
        struct fixture *f = *state;
        unsigned first_with, first_without, with, without;
        char why_with[200], why_without[200];

        without = search_lock_bound(f, false, &first_without, why_without, sizeof(why_without));
        with = search_lock_bound(f, true, &first_with, why_with, sizeof(why_with));
        assert_int_equal(first_without, 32); /* halving */
        assert_int_equal(first_with, 10);    /* the cores it keeps busy */
        if (!strstr(why_with, "stack: sync 54.0 of 64 cores"))
                fail_msg("reason: %s", why_with);
        if (with >= without)
                fail_msg("%u probes with the stack, %u without", with, without);
}

/* The model (P = 0.95) ranks more cores first; refuted, it no longer ranks above the stack,
 * which puts fewer cores first for a sequential part that grows with them. */
static void growing_delimiter_puts_fewer_cores_first(void **state)
{
        struct fixture *f = *state;

        for (int with_stack = 0; with_stack < 2; with_stack++) {
                struct allocator_app a = {.id = 1,
                                          .policy = policy_builtin(OBJECTIVE_EDP),
                                          .cores = 4,
                                          .phase = ALLOCATOR_PHASE_SEARCH,
                                          .search.step_cores = 1,
                                          .search.step_freqs = 1,
                                          .model.refuted = true};
                struct allocator_ctx ctx = {.est = f->est,
                                            .pm = &f->pm,
                                            .n_cpus = N_CPUS,
                                            .hysteresis = 0.05,
                                            .decision = 100,
                                            .n_apps = 1};

                add_point(&a, 4, 0, 10, ctx.decision);
                if (with_stack)
                        a.stack = stack_of(4, STACK_SEQUENTIAL, 1.5);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                assert_true(a.exploring);
                if (with_stack && (a.want_cores != 3 || !strstr(a.reason, "stack: sequential 1.5 "
                                                                          "of 4 cores, fewer cores "
                                                                          "first")))
                        fail_msg("with the stack: %u cores (%s)", a.want_cores, a.reason);
                if (!with_stack && a.want_cores != 5)
                        fail_msg("without the stack: %u cores (%s)", a.want_cores, a.reason);
                /* Not measured at its count: the stack says nothing. */
                a = (struct allocator_app){.id = 1,
                                           .policy = policy_builtin(OBJECTIVE_EDP),
                                           .cores = 4,
                                           .phase = ALLOCATOR_PHASE_SEARCH,
                                           .search.step_cores = 1,
                                           .search.step_freqs = 1,
                                           .model.refuted = true};
                add_point(&a, 4, 0, 10, ctx.decision);
                a.stack = stack_of(6, STACK_SEQUENTIAL, 3);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                assert_int_equal(a.want_cores, 5);
        }
}

/* One decision of an app searching from every core at the top of three clocks, where it
 * measured a score of 10, with stack st: the allocator's answer in *a. */
static void decide_at_the_top_clock(struct fixture *f, struct stack st, struct allocator_app *a)
{
        static const unsigned freqs[] = {1000000, 2000000, 3000000};
        struct allocator_ctx ctx = {.est = f->est,
                                    .n_cpus = N_CPUS,
                                    .hysteresis = 0.05,
                                    .decision = 100,
                                    .n_apps = 1,
                                    .power_measured = true,
                                    .freqs_khz = freqs,
                                    .n_freqs = ARRAY_SIZE(freqs)};

        *a = (struct allocator_app){.id = 1,
                                    .policy = policy_builtin(OBJECTIVE_EDP),
                                    .cores = N_CPUS,
                                    .freq_khz = 3000000,
                                    .phase = ALLOCATOR_PHASE_SEARCH,
                                    .search.step_cores = 1,
                                    .search.step_freqs = 1};
        add_point(a, N_CPUS, 3000000, 10, ctx.decision);
        a->stack = st;
        assert_int_equal(allocator_decide(&ctx, a, 1), 0);
}

/* Without a model the order is fewer cores, more, a lower clock, a higher one; interference
 * puts the lower clock first. */
static void interference_puts_a_lower_clock_first(void **state)
{
        struct fixture *f = *state;

        for (int with_stack = 0; with_stack < 2; with_stack++) {
                struct stack st = {0};
                struct allocator_app a;

                if (with_stack)
                        st = stack_of(N_CPUS, STACK_INTERFERENCE, 3.5);
                decide_at_the_top_clock(f, st, &a);
                if (with_stack && (a.want_cores != N_CPUS || a.want_freq_khz != 2000000 ||
                                   !strstr(a.reason, "stack: interference 3.5 of 8 cores, a "
                                                     "lower clock first")))
                        fail_msg("with the stack: %u cores %u kHz (%s)", a.want_cores,
                                 a.want_freq_khz, a.reason);
                if (!with_stack && (a.want_cores != N_CPUS - 1 || a.want_freq_khz != 3000000))
                        fail_msg("without the stack: %u cores %u kHz (%s)", a.want_cores,
                                 a.want_freq_khz, a.reason);
        }
}

/* With memory split out of interference, memory is what a lower clock relieves: memory as the
 * largest delimiter puts the lower clock first, with its reason; interference that memory
 * does not explain (cache, SMT) does not, and the order is the default one. */
static void memory_puts_a_lower_clock_first(void **state)
{
        static const struct {
                double memory, interference;
                bool lower; /* a lower clock first */
        } cases[] = {{3.5, 0, true}, {3.0, 0.5, true}, {0, 3.5, false}, {0.5, 3.0, false}};
        struct fixture *f = *state;

        for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
                struct stack st = stack_of(N_CPUS, STACK_MEMORY, cases[i].memory);
                struct allocator_app a;
                char want[80];

                st.component[STACK_INTERFERENCE] = cases[i].interference;
                st.speedup -= cases[i].interference;
                st.memory_known = true;
                decide_at_the_top_clock(f, st, &a);
                snprintf(want, sizeof(want), "stack: memory %.1f of 8 cores, a lower clock first",
                         cases[i].memory);
                if (cases[i].lower && (a.want_cores != N_CPUS || a.want_freq_khz != 2000000 ||
                                       !strstr(a.reason, want)))
                        fail_msg("case %u: %u cores %u kHz (%s)", i, a.want_cores, a.want_freq_khz,
                                 a.reason);
                if (!cases[i].lower && (a.want_cores != N_CPUS - 1 || a.want_freq_khz != 3000000 ||
                                        strstr(a.reason, "stack:")))
                        fail_msg("case %u: %u cores %u kHz (%s)", i, a.want_cores, a.want_freq_khz,
                                 a.reason);
        }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(lock_bound_app_probes_its_busy_cores_first, settled_half,
                                    fixture_teardown),
    cmocka_unit_test_setup_teardown(growing_delimiter_puts_fewer_cores_first, settled_high,
                                    fixture_teardown),
    cmocka_unit_test_setup_teardown(interference_puts_a_lower_clock_first, settled_high,
                                    fixture_teardown),
    cmocka_unit_test_setup_teardown(memory_puts_a_lower_clock_first, settled_high,
                                    fixture_teardown),
};
PCTL_TEST_MAIN(tests)
