/* Spreading over packages (manager/alloc_share.c spread_stalled, manager/alloc_place.c
 * place_spread; docs/allocator.md, "Spreading over packages"): an app whose cores stall on
 * memory is placed evenly over the packages, each of which has memory bandwidth of its own;
 * alone at once, beside other apps as a trial kept only where its stalls fall. On the model
 * machine a bandwidth-bound app alone ends near its oracle, and one beside a lock-bound app
 * near the partition oracle. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "allocator_fixture.h"
#include "pctl_test_scenario.h"
#include "pctl/topology.h"
#include "pctl/util.h"

/* How many CPUs of the mask are on package pkg. */
static unsigned on_package(const struct topology *t, const struct cpumask *m, int pkg)
{
        struct cpumask p;

        topology_package_cpus(t, pkg, &p);
        cpumask_and(&p, &p, m);
        return cpumask_count(&p);
}

/* Two packages of 6: a spread app holding CPUs 0-4 of package 0 keeps 3 of them and takes 2
 * of package 1; grown to 10 it keeps those 5 and has 5 on each; packed (not spread) it keeps
 * 0-4. With another app holding package 1 but for one CPU, the spread app still takes its 2
 * there, the free one first, and the other app keeps the rest of its CPUs and moves one. */
static void a_spread_app_takes_the_packages_evenly(void **state)
{
        struct topology t;
        struct cpumask allowed, cur[2], out[2], kept;
        struct allocator_app apps[2] = {{.want_cores = 5, .spread = true}, {.want_cores = 5}};
        char list[64];

        (void)state;
        assert_int_equal(topology_synthetic(&t, 2, 6, 1), 0); /* CPUs 0-5 and 6-11 */
        cpumask_parse("0-11", &allowed);
        cpumask_parse("0-4", &cur[0]);
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 1), 0);
        assert_int_equal(cpumask_count(&out[0]), 5);
        assert_int_equal(on_package(&t, &out[0], 0), 3);
        assert_int_equal(on_package(&t, &out[0], 1), 2);
        cpumask_and(&kept, &out[0], &cur[0]);
        assert_int_equal(cpumask_count(&kept), 3); /* moved only what it must */

        cur[0] = out[0];
        apps[0].want_cores = 10;
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 1), 0);
        assert_int_equal(on_package(&t, &out[0], 0), 5);
        assert_int_equal(on_package(&t, &out[0], 1), 5);
        assert_true(cpumask_subset(&cur[0], &out[0]));

        cpumask_parse("0-4", &cur[0]);
        apps[0].want_cores = 5;
        apps[0].spread = false;
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 1), 0);
        cpumask_format(&out[0], list, sizeof(list));
        assert_string_equal(list, "0-4");

        /* The other app holds 6-10: the spread app still takes 2 of package 1, free CPU 11
         * first, and the other keeps 4 of its 5. */
        apps[0].spread = true;
        cpumask_parse("6-10", &cur[1]);
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), 0);
        assert_int_equal(cpumask_count(&out[0]), 5);
        assert_int_equal(on_package(&t, &out[0], 0), 3);
        assert_int_equal(on_package(&t, &out[0], 1), 2);
        assert_true(cpumask_test(&out[0], 11));
        assert_int_equal(cpumask_count(&out[1]), 5);
        cpumask_and(&kept, &out[1], &cur[1]);
        assert_int_equal(cpumask_count(&kept), 4);
        assert_false(cpumask_intersects(&out[0], &out[1]));
        apps[0].want_cores = 8; /* 7 free CPUs: no room */
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), -ENOSPC);
        topology_free(&t);
}

static struct allocator_app searching(uint64_t id)
{
        return (struct allocator_app){.id = id,
                                      .policy = policy_builtin(OBJECTIVE_EDP),
                                      .cores = 4,
                                      .freq_khz = 2000000,
                                      .phase = ALLOCATOR_PHASE_SEARCH,
                                      .search.step_cores = 1};
}

/* A fresh estimator with apps 1..n_apps and the context the spreading cases decide in. */
static struct allocator_ctx fresh_ctx(struct fixture *f, unsigned n_apps)
{
        fixture_reset(f);
        for (unsigned id = 1; id <= n_apps; id++)
                estimator_app_add(f->est, id);
        return (struct allocator_ctx){.est = f->est,
                                      .pm = &f->pm,
                                      .n_cpus = N_CPUS,
                                      .hysteresis = 0.05,
                                      .decision = 100,
                                      .n_apps = n_apps};
}

/* Alone, an app whose cycles stall half the time is spread at once; one without stalls is
 * not. Once spread, it stays so though its stalls fall (spreading relieves them), and a
 * second app arriving does not pack it again. */
static void only_a_stalled_app_alone_is_spread(void **state)
{
        for (int stalled = 0; stalled < 2; stalled++) {
                struct fixture *f = *state;
                struct allocator_app a[2] = {searching(1), searching(2)};
                struct allocator_ctx ctx = fresh_ctx(f, 1);

                feed_stalled(f, 1, 0, stalled ? 0.5 : 0, 30);
                assert_int_equal(allocator_decide(&ctx, a, 1), 0);
                if (a[0].spread != (bool)stalled)
                        fail_msg("%s stalls: spread %d (%s)", stalled ? "with" : "without",
                                 a[0].spread, a[0].reason);
                if (!stalled)
                        continue;
                feed_stalled(f, 1, 0, 0, 30);
                ctx.decision++;
                assert_int_equal(allocator_decide(&ctx, a, 1), 0);
                assert_true(a[0].spread);

                estimator_app_add(f->est, 2);
                feed_stalled(f, 2, 4, 0, 30);
                ctx.decision++;
                ctx.n_apps = 2;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                assert_true(a[0].spread);
                assert_false(a[1].spread);
        }
}

/* Beside another app, spreading is a trial: the stalled app (held at its count for a
 * decision) is spread, the one without stalls is not; at the next decision, stalled cores
 * fallen by 5 % of its cores or more keep it spread (a package's bandwidth), stalls as before
 * (memory latency) pack it and it is not tried again, and so do its stalls fallen onto the
 * other app (the bandwidth it found was that app's). Of two stalled apps, only the more
 * stalled one is tried at a time. */
static void a_stalled_app_beside_others_is_spread_where_it_relieves_its_stalls(void **state)
{
        /* Its stalled share after the trial, and the other app's. */
        static const struct {
                double own, other;
                bool stays;
        } cases[] = {{0.3, 0, true}, {0.49, 0, false}, {0.3, 0.25, false}};

        for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
                struct fixture *f = *state;
                struct allocator_app a[2] = {searching(1), searching(2)};
                struct allocator_ctx ctx = fresh_ctx(f, 2);

                feed_stalled(f, 1, 0, 0.5, 30);
                feed_stalled(f, 2, 4, 0, 30);
                for (unsigned d = 0; d < 2; d++, ctx.decision++)
                        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (!a[0].spread || a[1].spread)
                        fail_msg("trial: spread %d and %d (%s)", a[0].spread, a[1].spread,
                                 a[0].reason);
                feed_stalled(f, 1, 0, cases[k].own, 30);
                feed_stalled(f, 2, 4, cases[k].other, 30);
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (a[0].spread != cases[k].stays)
                        fail_msg("stalls %.2f and %.2f: spread %d", cases[k].own, cases[k].other,
                                 a[0].spread);
                feed_stalled(f, 1, 0, 0.5, 30);
                for (unsigned d = 0; d < 3; d++) {
                        ctx.decision++;
                        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                        assert_true(a[0].spread == cases[k].stays);
                }
        }
        /* Both stalled: the more stalled one first, the other not while it is open. */
        {
                struct fixture *f = *state;
                struct allocator_app a[2] = {searching(1), searching(2)};
                struct allocator_ctx ctx = fresh_ctx(f, 2);

                feed_stalled(f, 1, 0, 0.3, 30);
                feed_stalled(f, 2, 4, 0.6, 30);
                for (unsigned d = 0; d < 2; d++, ctx.decision++)
                        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                assert_false(a[0].spread);
                assert_true(a[1].spread);
        }
}

/* A trial beside another app that did not relieve the stalls (they were the other app's, or
 * memory latency there) says nothing of the app alone: once the other has left, a stalled app
 * is spread as any app alone is, and its verdict stands if another app comes (it is not tried
 * again). bench_random's seed 91007: a bandwidth-bound app refuted beside a latency-bound
 * spinner ran its last 21 s packed on one package's bandwidth, at 2 cores. */
static void a_refuted_app_left_alone_is_spread(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2] = {searching(1), searching(2)};
        struct allocator_ctx ctx = fresh_ctx(f, 2);

        feed_stalled(f, 1, 0, 0.5, 30);
        feed_stalled(f, 2, 4, 0, 30);
        for (unsigned d = 0; d < 3; d++, ctx.decision++)
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        if (a[0].spread || !a[0].spreading.refuted)
                fail_msg("beside another app, stalls as before: spread %d, refuted %d", a[0].spread,
                         a[0].spreading.refuted);

        ctx.n_apps = 1;
        assert_int_equal(allocator_decide(&ctx, a, 1), 0);
        if (!a[0].spread)
                fail_msg("alone and stalled, refuted beside another app: not spread (%s)",
                         a[0].reason);

        estimator_app_add(f->est, 3);
        a[1] = searching(3);
        feed_stalled(f, 3, 4, 0, 30);
        ctx.n_apps = 2;
        for (unsigned d = 0; d < 3; d++) {
                ctx.decision++;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (a[0].spread || a[0].spreading.since)
                        fail_msg("another app came: spread %d, a trial open since %llu",
                                 a[0].spread, (unsigned long long)a[0].spreading.since);
        }
}

/* Decisions with every app placed as the partition says (allocator_place's count), until
 * `done` holds of app 0 or `max` decisions have passed; whether it held. */
static bool decide_placed_until(struct allocator_ctx *ctx, struct allocator_app *a, unsigned n,
                                unsigned max, bool (*done)(const struct allocator_app *))
{
        for (unsigned d = 0; d < max; d++, ctx->decision++) {
                assert_int_equal(allocator_decide(ctx, a, n), 0);
                for (unsigned i = 0; i < n; i++)
                        a[i].cores = a[i].want_cores;
                if (done(&a[0]))
                        return true;
        }
        return false;
}

static bool trial_open(const struct allocator_app *a)
{
        return a->spread && a->spreading.since;
}

static bool refuted(const struct allocator_app *a)
{
        return a->spreading.refuted;
}

/* A refuted trial is a verdict on the stalls beside the apps then: once fewer apps share the
 * machine (one left, and the bandwidth it used with it), the stalled app may be tried again;
 * beside as many or more, it is not. */
static void a_refuted_verdict_lapses_when_an_app_leaves(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[3] = {searching(1), searching(2), searching(3)};
        struct allocator_ctx ctx = fresh_ctx(f, 3);

        feed_stalled(f, 1, 0, 0.5, 30);
        feed_stalled(f, 2, 4, 0, 30);
        feed_stalled(f, 3, 2, 0, 30);
        if (!decide_placed_until(&ctx, a, 3, 6, refuted))
                fail_msg("three apps, stalls as before: not refuted (%s)", a[0].reason);
        assert_false(a[0].spread);
        if (decide_placed_until(&ctx, a, 3, 3, trial_open))
                fail_msg("tried again beside as many apps as refuted it");

        ctx.n_apps = 2;
        if (!decide_placed_until(&ctx, a, 2, 4, trial_open))
                fail_msg("an app left: the refuted app was not tried again (%s)", a[0].reason);
}

/* While a probe of a package's bandwidth moves an app's cores (ctx.probe_quiet: its intervals
 * and the decision after), the stalls are the probe's: a stalled app that would be tried is
 * not spread then, and is tried at the first decision after. */
static void no_trial_of_spreading_begins_on_a_probes_intervals(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2] = {searching(1), searching(2)};
        struct allocator_ctx ctx = fresh_ctx(f, 2);

        ctx.probe_quiet = true;
        feed_stalled(f, 1, 0, 0.5, 30);
        feed_stalled(f, 2, 4, 0, 30);
        for (unsigned d = 0; d < 3; d++, ctx.decision++) {
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (a[0].spread || a[0].spreading.since)
                        fail_msg("a trial of spreading begun on a probe's intervals (decision "
                                 "%u)",
                                 d);
        }
        ctx.probe_quiet = false;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_true(a[0].spread);
        assert_int_equal(a[0].spreading.since, ctx.decision);
        assert_false(a[1].spread);
}

/* The EDP of `sim run --policy edp` on the scenario's one app over the partition oracle's,
 * which sets the app's CPUs per package (the single-app oracle, sim_oracle_app, packs it on
 * CPUs 0..k-1 and so cannot show what spreading buys). */
static double edp_over_partition_oracle(const char *text, const char *label)
{
        struct simrun_result res;
        struct sim_machine *m = sim_load_ok(text);
        struct sim_together t;
        double ratio;

        sim_run_edp(text, &res);
        assert_int_equal(
            sim_oracle_together(m, SIM_OBJ_EDP, SIM_TOGETHER_EXHAUSTIVE, 100 * 1000 * 1000ULL, &t),
            0);
        ratio = res.apps[0].energy_j * res.apps[0].time_s / t.score;
        printf("%s: ended at %u cores, oracle %u + %u: EDP / oracle %.3f\n", label,
               res.apps[0].cores, t.best.cores[0], t.best.cores[1], ratio);
        sim_together_free(&t);
        simrun_result_free(&res);
        sim_free(m);
        return ratio;
}

/* bench_random's seed 91002: alone on the 2 x 6 Xeon, P 0.98, a lock that caps its speedup
 * near 4.4, 4.5 bytes per instruction. Packed on one package its bandwidth binds (5 cores
 * there run 117 s, as 3 + 2 74.6 s), so the search's probe of 5 cores measured far worse than
 * 12 and it settled at 10: 1.156 x the oracle's EDP. Spread, 1.007 (5 cores, the oracle's 2 +
 * 3). Its twin without the bandwidth limit stalls as much (its memory fraction, 10 %) and is
 * spread too: it must lose nothing by it (1.007, the oracle's 5 cores on one package). */
#define SEED_91002                                                                                 \
        "[machine]\npreset = xeon-e5-2630v2x2\ncounter_noise = 0.0099\nseed = 15831\n"             \
        "[app a0]\ninstructions = 1.337e+12\np = 0.9810\nipc = 1.557\nmem_fraction = 0.104\n"      \
        "sync = 0.211\nprogress_units = 300550\n"

static void bandwidth_bound_app_alone_ends_near_its_oracle(void **state)
{
        double bound = edp_over_partition_oracle(SEED_91002 "mem_bytes_per_instruction = 4.487\n",
                                                 "4.5 bytes per instruction");
        double plain = edp_over_partition_oracle(SEED_91002, "no bandwidth limit");

        (void)state;
        if (bound > 1.05)
                fail_msg("bandwidth-bound app alone: %.3f x the oracle's EDP (1.156 packed)",
                         bound);
        if (plain > 1.05)
                fail_msg("the same app without a bandwidth limit: %.3f x the oracle's EDP", plain);
}

/* bench_random's seed 91015 (set 2): on the 2 x 6 Xeon a lock-bound app (P 0.86, sync 0.25)
 * beside a spinning, bandwidth-bound one (6.5 bytes per instruction). The partition gave
 * each a package, 6 + 6, and the bandwidth-bound app ran its 50 s beside the other packed on
 * package 1: 1.404 x the partition oracle (which spreads it 3 + 5). Spread as a trial, its
 * stalled share fell from 0.67 to 0.40 and it stayed spread: 1.088. */
static void bandwidth_bound_app_beside_another_is_spread(void **state)
{
        static const char text[] =
            SCENARIO_91015_HEAD "mem_bytes_per_instruction = 6.547\n" SCENARIO_91015_TAIL;
        struct simrun_result res;
        struct sim_machine *m = sim_load_ok(text);
        struct sim_together t;
        double sum = 0, ratio;

        (void)state;
        sim_run_edp(text, &res);
        assert_int_equal(
            sim_oracle_together(m, SIM_OBJ_EDP, SIM_TOGETHER_DP, 100 * 1000 * 1000ULL, &t), 0);
        for (unsigned i = 0; i < res.n_apps; i++)
                sum += res.apps[i].energy_j * res.apps[i].time_s;
        ratio = sum / t.score;
        printf("seed 91015: sum of EDP / partition oracle %.3f\n", ratio);
        sim_together_free(&t);
        simrun_result_free(&res);
        sim_free(m);
        if (ratio > 1.2)
                fail_msg("bandwidth-bound app beside another: %.3f x the partition oracle "
                         "(1.404 packed)",
                         ratio);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_spread_app_takes_the_packages_evenly),
    fixture_case(only_a_stalled_app_alone_is_spread),
    fixture_case(a_stalled_app_beside_others_is_spread_where_it_relieves_its_stalls),
    fixture_case(a_refuted_app_left_alone_is_spread),
    fixture_case(a_refuted_verdict_lapses_when_an_app_leaves),
    fixture_case(no_trial_of_spreading_begins_on_a_probes_intervals),
    cmocka_unit_test(bandwidth_bound_app_alone_ends_near_its_oracle),
    cmocka_unit_test(bandwidth_bound_app_beside_another_is_spread),
};
PCTL_TEST_MAIN(tests)
