/* The risk rule for apps scored by instructions (manager/alloc_risk.c; docs/allocator.md,
 * "Progress by instructions: the fewest cores the counters cannot tell apart"): among measured
 * points within the counters' noise of the best, an app without markers settles on the fewest
 * cores; one with markers on its best. On the model machine, an app whose instructions inflate
 * with its threads ends closer to its oracle for it. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "allocator_fixture.h"
#include "pctl_test_scenario.h"
#include "pctl/sim.h"
#include "pctl/util.h"
#include "pctl/simrun.h"
#include "../../manager/alloc_risk.h"

#define STEP_100MS (100 * 1000 * 1000ULL)

static bool hist_has(const struct allocator_app *a, unsigned cores)
{
        for (unsigned i = 0; i < a->n_hist; i++)
                if (a->hist[i].cores == cores)
                        return true;
        return false;
}

/* A search on made-up measurements (no power model, power measured), as test_allocator's. */
static struct allocator_ctx measured_ctx(struct fixture *f)
{
        struct allocator_ctx ctx = {.est = f->est,
                                    .n_cpus = N_CPUS,
                                    .hysteresis = 0.05,
                                    .decision = 100,
                                    .power_measured = true,
                                    .n_apps = 1};

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.5, 0, N_CPUS, 30);
        return ctx;
}

/* Runs the measured search from `from` cores on `score` (by core count) to where it settles;
 * `why`: its last reason. */
static unsigned search(struct fixture *f, const double score[N_CPUS + 1], unsigned from,
                       bool markers, char *why, size_t size)
{
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = from,
                                  .markers.scored = markers};
        struct allocator_ctx ctx = measured_ctx(f);

        for (unsigned step = 0; step < 30; step++) {
                if (!hist_has(&a, a.cores))
                        add_point(&a, a.cores, 0, score[a.cores], ctx.decision);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                snprintf(why, size, "%s", a.reason);
                if (a.phase == ALLOCATOR_PHASE_SETTLED && !a.changed)
                        break;
                a.cores = a.want_cores;
                ctx.decision++;
        }
        assert_int_equal(a.phase, ALLOCATOR_PHASE_SETTLED);
        return a.cores;
}

/* From 4 cores up: 5 cores gain 12%, 6 cores 0.7% more (within the counters' noise), 7 lose.
 * By instructions the app settles on 5 and says why; with markers on 6, the measured best.
 * Without the rule both settle on 6. */
static void instructions_settle_on_the_fewest_cores_within_noise(void **state)
{
        static const double score[N_CPUS + 1] = {0, 9, 7, 5, 3.45, 3.02, 3.0, 3.3, 3.6};
        struct fixture *f = *state;
        char why[200] = "";
        unsigned n = search(f, score, 4, false, why, sizeof(why));

        if (n != 5 || !strstr(why, "progress by instructions"))
                fail_msg("scored by instructions, settled on %u cores (%s), expected 5", n, why);
        fixture_reset(f);
        n = search(f, score, 4, true, why, sizeof(why));
        if (n != 6)
                fail_msg("scored by markers, settled on %u cores (%s), expected 6", n, why);
}

/* Outside the noise, the best stands: 5 cores 3% worse than 6 is not taken. */
static void a_measured_gain_past_the_noise_is_kept(void **state)
{
        static const double score[N_CPUS + 1] = {0, 9, 7, 5, 3.45, 3.09, 3.0, 3.3, 3.6};
        struct fixture *f = *state;
        char why[200] = "";

        unsigned n = search(f, score, 4, false, why, sizeof(why));

        if (n != 6)
                fail_msg("settled on %u cores (%s), expected 6", n, why);
}

/* The point the app is at keeps its place within ALLOC_RISK_STAY margins of the best: at 5
 * cores measured 1.5% worse than 6 it stays (re-measured noise would otherwise swap the two at
 * every visit); at 2.5% worse it goes to 6. */
static void the_current_point_keeps_its_place_within_two_margins(void **state)
{
        static const double at5[] = {1.015, 1.025};
        struct fixture *f = *state;

        for (unsigned i = 0; i < ARRAY_SIZE(at5); i++) {
                struct allocator_app a = {.id = 1,
                                          .policy = policy_builtin(OBJECTIVE_EDP),
                                          .cores = 5,
                                          .phase = ALLOCATOR_PHASE_SEARCH,
                                          .search.step_cores = 1,
                                          .search.step_freqs = 1};
                struct allocator_ctx ctx;

                if (i)
                        fixture_reset(f);
                ctx = measured_ctx(f);
                add_point(&a, 4, 0, 1.2, ctx.decision);
                add_point(&a, 5, 0, at5[i], ctx.decision);
                add_point(&a, 6, 0, 1.0, ctx.decision);
                add_point(&a, 7, 0, 1.1, ctx.decision);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (i == 0 && a.changed)
                        fail_msg("left 5 cores at 1.5%% from the best: %s", a.reason);
                if (i == 1 && (!a.changed || a.want_cores != 6))
                        fail_msg("stayed at 5 cores at 2.5%% from the best: %s", a.reason);
        }
}

/* A returning app exploring half its remembered cores (docs/history.md, "Progress from whole
 * runs") holds them for its run, even where a measured point is better; markers appearing
 * end the exploration, and the search goes on. */
static void an_exploring_hint_holds_for_the_run_until_markers_appear(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = N_CPUS,
                                  .hint.cores = 4,
                                  .hint.score = NAN,
                                  .hint.explore_from = 8};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_true(a.changed);
        assert_int_equal(a.want_cores, 4);
        a.cores = 4;
        add_point(&a, 8, 0, 1.0, ctx.decision);
        add_point(&a, 4, 0, 2.0, ctx.decision);
        for (unsigned i = 0; i < 5; i++) {
                ctx.decision++;
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.changed || !strstr(a.reason, "exploring 4 cores"))
                        fail_msg("left the exploration: %s", a.reason);
        }
        a.progress_known = true;
        ctx.decision++;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.hint.cores, 0);
        if (!a.changed || a.want_cores != 8)
                fail_msg("with markers, stayed at %u cores: %s", a.want_cores, a.reason);
}

/* An exploring run that sharing trimmed below its count (the hint spent) keeps the count as a
 * cap for the rest of the run: with more cores measuring better at every step, the search and
 * the model stay at or below it, so that the run's cores differ from the past runs' and the
 * two measure its extra work. Markers lift the cap. Without it the search climbed back to the
 * past runs' count (bench_random's seed 5724, fifth of five runs: 3.19 x the oracle's EDP,
 * 1.05 when the exploration held). */
static void an_exploring_run_stays_at_or_below_its_count(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = N_CPUS,
                                  .hint.cores = 4,
                                  .hint.score = NAN,
                                  .hint.explore_from = 8};
        struct allocator_ctx ctx = measured_ctx(f);
        unsigned most = 0;

        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 4);
        a.cores = 3; /* trimmed by the partition: the hint is spent */
        for (unsigned step = 0; step < 30; step++) {
                if (!hist_has(&a, a.cores))
                        add_point(&a, a.cores, 0, 10.0 / a.cores, ctx.decision);
                ctx.decision++;
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.changed)
                        a.cores = a.want_cores;
                if (a.cores > most)
                        most = a.cores;
        }
        if (most > 4)
                fail_msg("an exploring run went to %u cores, above its 4: %s", most, a.reason);
        a.progress_known = true;
        for (unsigned step = 0; step < 30 && a.cores <= 4; step++) {
                if (!hist_has(&a, a.cores))
                        add_point(&a, a.cores, 0, 10.0 / a.cores, ctx.decision);
                ctx.decision++;
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.changed)
                        a.cores = a.want_cores;
        }
        if (a.cores <= 4)
                fail_msg("with markers, still at %u cores: %s", a.cores, a.reason);
}

/* bench_random's seed 5711: server-64, 7.7% more instructions per added thread, no markers.
 * Its instructions put the best near 35 cores, its progress at 8. Without the rule the search
 * climbs a core at a time on gains within the noise and ends at 36 cores, 2.46 x the oracle's
 * EDP; with it, it stops where a core no longer buys a gain past the noise: 22 cores, 1.72.
 * The same app without extra work pays for that: 21 cores for an oracle of 35, 1.074 x its
 * EDP against 1.033 without the rule (docs/allocator.md says what the rule costs). */
#define SEED_5711                                                                                  \
        "[machine]\npreset = server-64\ncounter_noise = 0.0134\nseed = 949832\n"                   \
        "[app a0]\ninstructions = 2.277e+11\np = 0.8144\nipc = 0.617\nimbalance = 2.836\n"

static void inflating_app_without_markers_ends_closer_to_its_best(void **state)
{
        double with_extra =
            sim_edp_over_oracle(SEED_5711 "extra_work = 0.0766\n", "with extra work");
        double plain = sim_edp_over_oracle(SEED_5711, "plain");

        if (with_extra > 2.0)
                fail_msg("extra work without markers: %.3f x the oracle's EDP (2.46 without the "
                         "rule)",
                         with_extra);
        if (plain > 1.08)
                fail_msg("the same app without extra work: %.3f x the oracle's EDP (1.074 when "
                         "the rule went in)",
                         plain);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            fixture_case(instructions_settle_on_the_fewest_cores_within_noise),
            fixture_case(a_measured_gain_past_the_noise_is_kept),
            fixture_case(the_current_point_keeps_its_place_within_two_margins),
            fixture_case(an_exploring_hint_holds_for_the_run_until_markers_appear),
            fixture_case(an_exploring_run_stays_at_or_below_its_count),
            cmocka_unit_test(inflating_app_without_markers_ends_closer_to_its_best),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
