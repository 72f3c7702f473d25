/* The allocator on estimates built from synthetic Amdahl counters (test_estimator_synth.h):
 * what it chooses, when it waits, how it shares and places CPUs. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "pctl_test.h"
#include "test_estimator_synth.h"
#include "pctl/allocator.h"
#include "pctl/power_decl.h"
#include "pctl/util.h"

#define N_CPUS 8
#define INTERVAL_NS 100000000ULL

struct fixture {
        struct estimator *est;
        struct synth_machine m;
        struct sensor_sample s;
        struct model_power pm;
};

static void fixture_init(struct fixture *f)
{
        struct power_decl d = { 0 };
        struct estimator_config cfg = { .delta_i_rate = NAN };

        memset(f, 0, sizeof(*f));
        f->m = (struct synth_machine){ .os_ips = 6.6e4, .static_w = 20, .core_w = 10,
                                       .idle_w = 10, .metrics = SENSOR_BUSY, .rng = 42 };
        assert_int_equal(synth_sample_alloc(&f->s, N_CPUS, 0), 0);
        power_decl_key(&d, "static_w", "20");
        power_decl_key(&d, "core_w", "10");
        assert_int_equal(power_decl_to_model(&d, 1, &f->pm), 0);
        f->est = estimator_new(&cfg);
        assert_non_null(f->est);
}

static void fixture_free(struct fixture *f)
{
        estimator_free(f->est);
        synth_sample_free(&f->s);
}

/* Feeds `intervals` intervals of app id at P on cores [first, first + n). */
static void feed(struct fixture *f, uint64_t id, double p, unsigned first, unsigned n,
                 unsigned intervals)
{
        struct synth_app a = { .p = p, .ipc_ref = 1, .freq_ref_khz = 1, .first_cpu = first,
                               .n_cores = n, .freq_khz = 1 };

        for (unsigned i = 0; i < intervals; i++) {
                struct estimator_app_view v = synth_view(id, &a, -1);

                synth_begin(&f->m, &f->s, INTERVAL_NS);
                synth_run(&f->m, &f->s, &a, -1);
                synth_end(&f->m, &f->s, false);
                assert_int_equal(estimator_update(f->est, &f->s, &v, 1), 0);
        }
}

static struct allocator_ctx ctx_for(struct fixture *f, unsigned n_cpus)
{
        return (struct allocator_ctx){ .est = f->est, .pm = &f->pm, .n_cpus = n_cpus,
                                       .hysteresis = 0.05, .settle_decisions = 2,
                                       .decision = 100, .n_apps = 1 };
}

static void learning_runs_at_baseline(void **state)
{
        struct fixture f;
        struct allocator_app a = { .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2 };
        struct allocator_ctx ctx;

        (void)state;
        fixture_init(&f);
        assert_int_equal(estimator_app_add(f.est, 1), 0);
        ctx = ctx_for(&f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, N_CPUS); /* no estimate: every allowed core */
        assert_non_null(strstr(a.reason, "learning"));
        assert_true(a.changed);
        fixture_free(&f);
}

/* Declared 20 W + 10 W/core: EDP picks 1 core for P = 0.2 and every core for P = 0.95. */
static void edp_follows_p(void **state)
{
        const struct { double p; unsigned want; } cases[] = { { 0.2, 1 }, { 0.95, N_CPUS } };

        (void)state;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct fixture f;
                struct allocator_app a = { .id = 1, .policy = policy_builtin(OBJECTIVE_EDP),
                                           .cores = N_CPUS };
                struct allocator_ctx ctx;

                fixture_init(&f);
                estimator_app_add(f.est, 1);
                feed(&f, 1, cases[i].p, 0, N_CPUS, 30);
                ctx = ctx_for(&f, N_CPUS);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.want_cores != cases[i].want)
                        fail_msg("P=%.2f: want %u cores, expected %u (%s)", cases[i].p,
                                 a.want_cores, cases[i].want, a.reason);
                fixture_free(&f);
        }
}

static void monitor_changes_nothing(void **state)
{
        struct fixture f;
        struct allocator_app a = { .id = 1, .policy = policy_builtin(OBJECTIVE_MONITOR),
                                   .cores = 3 };
        struct allocator_ctx ctx;

        (void)state;
        fixture_init(&f);
        estimator_app_add(f.est, 1);
        feed(&f, 1, 0.2, 0, 3, 30);
        ctx = ctx_for(&f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 3);
        assert_false(a.changed);
        fixture_free(&f);
}

/* max_cores and max_slowdown bound the choice: P = 0.95 wants all 8, a cap of 4 holds it, and
 * with max_slowdown 0 an EDP app at P = 0.2 must stay as fast as its baseline. */
static void bounds_are_honoured(void **state)
{
        struct fixture f;
        struct policy capped = *policy_builtin(OBJECTIVE_EDP), strict = capped;
        struct allocator_app a = { .id = 1, .policy = &capped, .cores = 4 };
        struct allocator_ctx ctx;

        (void)state;
        capped.max_cores = 4;
        fixture_init(&f);
        estimator_app_add(f.est, 1);
        feed(&f, 1, 0.95, 0, 4, 30);
        ctx = ctx_for(&f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 4);
        fixture_free(&f);

        strict.max_slowdown = 0;
        a = (struct allocator_app){ .id = 1, .policy = &strict, .cores = N_CPUS };
        fixture_init(&f);
        estimator_app_add(f.est, 1);
        feed(&f, 1, 0.2, 0, N_CPUS, 30);
        ctx = ctx_for(&f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, N_CPUS);
        fixture_free(&f);
}

/* Two apps that each want every CPU share them by weight, never below their minimum. */
static void competing_apps_share_by_weight(void **state)
{
        struct fixture f;
        struct policy heavy = *policy_builtin(OBJECTIVE_PERFORMANCE), light = heavy;
        struct allocator_app a[2] = {
                { .id = 1, .policy = &heavy, .cores = 4 },
                { .id = 2, .policy = &light, .cores = 4 },
        };
        struct allocator_ctx ctx;

        (void)state;
        heavy.weight = 3;
        light.weight = 1;
        fixture_init(&f);
        estimator_app_add(f.est, 1);
        estimator_app_add(f.est, 2);
        feed(&f, 1, 0.99, 0, 4, 30);
        ctx = ctx_for(&f, N_CPUS);
        ctx.n_apps = 2;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[0].want_cores + a[1].want_cores, N_CPUS);
        assert_true(a[0].want_cores >= 3 * a[1].want_cores - 3);
        assert_true(a[1].want_cores >= 1);
        /* Minimums that cannot all fit are an error, not a silent overcommit. */
        heavy.min_cores = 6;
        light.min_cores = 6;
        assert_int_equal(allocator_decide(&ctx, a, 2), -ENOSPC);
        fixture_free(&f);
}

/* A fresh measurement that beats the current setting overrules the model. */
static void measurement_overrules_the_model(void **state)
{
        struct fixture f;
        struct allocator_app a = { .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 1 };
        struct allocator_ctx ctx;

        (void)state;
        fixture_init(&f);
        estimator_app_add(f.est, 1);
        feed(&f, 1, 0.2, 0, N_CPUS, 30);
        ctx = ctx_for(&f, N_CPUS);
        /* The model prefers 1 core for P = 0.2; measurements say 4 cores were far better. */
        a.hist[0] = (struct allocator_point){ .cores = 1, .freq_khz = 0, .score = 10,
                                              .samples = 4, .decision = 99 };
        a.hist[1] = (struct allocator_point){ .cores = 4, .freq_khz = 0, .score = 5,
                                              .samples = 4, .decision = 98 };
        a.n_hist = 2;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 4);
        assert_non_null(strstr(a.reason, "measured"));
        /* Stale measurements do not count. */
        a.cores = 1;
        ctx.decision = 1000;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 1);
        fixture_free(&f);
}

static void placement_keeps_cpus_and_packages(void **state)
{
        struct topology t;
        struct cpumask allowed, cur[2], out[2];
        struct allocator_app apps[2] = { { .want_cores = 3 }, { .want_cores = 4 } };
        char list[64];

        (void)state;
        assert_int_equal(topology_synthetic(&t, 2, 4, 1), 0); /* CPUs 0-3 and 4-7 */
        cpumask_parse("0-7", &allowed);
        cpumask_parse("4-7", &cur[0]); /* app 0 shrinks on its own package */
        cpumask_parse("", &cur[1]);     /* app 1 is new */
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), 0);
        assert_true(cpumask_subset(&out[0], &cur[0]));
        assert_int_equal(cpumask_count(&out[0]), 3);
        cpumask_format(&out[1], list, sizeof(list));
        assert_string_equal(list, "0-3"); /* a whole package */
        apps[1].want_cores = 6;
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), -ENOSPC);
        topology_free(&t);
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(learning_runs_at_baseline),
        cmocka_unit_test(edp_follows_p),
        cmocka_unit_test(monitor_changes_nothing),
        cmocka_unit_test(bounds_are_honoured),
        cmocka_unit_test(competing_apps_share_by_weight),
        cmocka_unit_test(measurement_overrules_the_model),
        cmocka_unit_test(placement_keeps_cpus_and_packages),
};
PCTL_TEST_MAIN(tests)
