/* The allocator's measured points and the sharing of the machine (docs/allocator-trials.md,
 * "Points measured under a partner"): a score is measured under the apps that ran beside it,
 * so an app arriving or leaving restarts the count as a move does, and what was measured under
 * the other sharing is re-measured before it ranks. */
#include <math.h>
#include <string.h>

#include "allocator_fixture.h"
#include "pctl/util.h"

static const struct allocator_point *point_at(const struct allocator_app *a, unsigned cores)
{
        for (unsigned i = 0; i < a->n_hist; i++)
                if (a->hist[i].cores == cores)
                        return &a->hist[i];
        return NULL;
}

/* App 1 at P on its cores, observed after each interval (the package's energy is measured). */
static void feed_observed(struct fixture *f, struct allocator_ctx *ctx, struct allocator_app *a,
                          double p, unsigned intervals)
{
        struct synth_app s = {.p = p,
                              .ipc_ref = 1,
                              .freq_ref_khz = 1,
                              .first_cpu = 0,
                              .n_cores = a->cores,
                              .freq_khz = 1};

        for (unsigned i = 0; i < intervals; i++) {
                struct estimator_app_view v = synth_view(a->id, &s, -1);

                synth_begin(&f->m, &f->s, INTERVAL_NS);
                synth_run(&f->m, &f->s, &s, -1);
                synth_end(&f->m, &f->s, true);
                assert_int_equal(estimator_update(f->est, &f->s, &v, 1), 0);
                allocator_observe(ctx, a);
        }
}

/* An estimator that attributes power by the declared model when `own_power`: the app's
 * score can then be measured beside others; without, only alone (the package's energy). */
static struct allocator_ctx sharing_ctx(struct fixture *f, bool own_power, unsigned n_apps)
{
        estimator_free(f->est);
        f->est = estimator_new(
            &(struct estimator_config){.delta_i_rate = NAN, .power = own_power ? &f->pm : NULL});
        assert_non_null(f->est);
        assert_int_equal(estimator_app_add(f->est, 1), 0);
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
        /* No power model in the decision: what ranks is what was measured. */
        return (struct allocator_ctx){.est = f->est,
                                      .power_measured = true,
                                      .n_cpus = N_CPUS,
                                      .hysteresis = 0.05,
                                      .decision = 100,
                                      .n_apps = n_apps,
                                      .probe_samples = 3};
}

/* A partner leaves while the app stays where it is: the interval that may straddle the exit
 * is counted nowhere, and the point's mean starts again from the first interval alone instead
 * of mixing the shared samples in. */
static void partner_leaving_restarts_the_count(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 4};
        struct allocator_ctx ctx = sharing_ctx(f, true, 2);
        const struct allocator_point *p;

        feed_observed(f, &ctx, &a, 0.5, 4); /* one skipped, three counted */
        p = point_at(&a, 4);
        assert_non_null(p);
        assert_int_equal(p->samples, 3);
        assert_int_equal(p->apps, 2);
        ctx.n_apps = 1;
        feed_observed(f, &ctx, &a, 0.5, 1);
        p = point_at(&a, 4);
        if (p->samples != 3 || p->apps != 2)
                fail_msg("the interval across the exit was counted: %u samples under %u apps",
                         p->samples, p->apps);
        assert_false(allocator_wants_decision(&ctx, &a));
        feed_observed(f, &ctx, &a, 0.5, 1);
        if (p->samples != 1 || p->apps != 1)
                fail_msg("the shared figure still counts alone: %u samples under %u apps",
                         p->samples, p->apps);
        feed_observed(f, &ctx, &a, 0.5, 2);
        assert_int_equal(p->samples, 3);
        assert_true(allocator_wants_decision(&ctx, &a));
}

/* Alone after a partner's exit, with a point measured under the partner (4 cores, a score 30%
 * better than 8 cores measure alone: under a partner an app is charged part of the static
 * power, and the others' interference moves its rate) and one measured alone (8 cores, the
 * package's energy): only the one measured alone ranks, and the decision does not go back to
 * the shared figure. Measured again alone, 4 cores rank by what they measure now. */
static void point_measured_under_a_partner_does_not_rank_alone(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 8,
                                  .phase = ALLOCATOR_PHASE_SEARCH,
                                  .search.step_cores = 1,
                                  .search.step_freqs = 1};
        struct allocator_ctx ctx = sharing_ctx(f, true, 2);
        struct allocator_point best;

        feed_observed(f, &ctx, &a, 0.2, 30); /* P settles; 8 cores measured under 2 apps */
        ctx.n_apps = 1;
        feed_observed(f, &ctx, &a, 0.2, 4); /* the partner left: 8 cores measured alone */
        assert_int_equal(point_at(&a, 8)->apps, 1);
        assert_true(point_at(&a, 8)->samples >= 3);
        a.hist[a.n_hist++] = (struct allocator_point){.cores = 4,
                                                      .score = 0.7 * point_at(&a, 8)->score,
                                                      .samples = 3,
                                                      .decision = ctx.decision,
                                                      .apps = 2};
        feed_observed(f, &ctx, &a, 0.2, 1);
        assert_true(allocator_best(&ctx, &a, &best));
        if (best.cores != 8)
                fail_msg("best: %u cores, measured under %u apps", best.cores, best.apps);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        if (strstr(a.reason, "beats the current one"))
                fail_msg("went back to a figure measured under a partner: %s", a.reason);
        /* Measured again alone, 4 cores measure worse than 8 (P 0.2 on this machine). */
        a.cores = 4;
        feed_observed(f, &ctx, &a, 0.2, 4);
        assert_int_equal(point_at(&a, 4)->apps, 1);
        assert_true(point_at(&a, 4)->samples >= 3);
        assert_true(point_at(&a, 4)->score > point_at(&a, 8)->score);
        assert_true(allocator_best(&ctx, &a, &best));
        assert_int_equal(best.cores, 8);
}

/* An app whose score cannot be measured beside others (no power of its own) measures nothing
 * after a partner arrives: what it measured alone stays what it ranks by, instead of leaving
 * it with nothing measured. */
static void unmeasurable_app_keeps_what_it_measured_alone(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 4};
        struct allocator_ctx ctx = sharing_ctx(f, false, 1);
        struct allocator_point best;

        feed_observed(f, &ctx, &a, 0.5, 4);
        assert_int_equal(point_at(&a, 4)->samples, 3);
        ctx.n_apps = 2;
        feed_observed(f, &ctx, &a, 0.5, 4);
        assert_int_equal(point_at(&a, 4)->samples, 3);
        assert_true(allocator_best(&ctx, &a, &best));
        assert_int_equal(best.cores, 4);
        assert_int_equal(best.apps, 1);
}

static const struct CMUnitTest tests[] = {
    fixture_case(partner_leaving_restarts_the_count),
    fixture_case(point_measured_under_a_partner_does_not_rank_alone),
    fixture_case(unmeasurable_app_keeps_what_it_measured_alone),
};
PCTL_TEST_MAIN(tests)
