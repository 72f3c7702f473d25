/* The allocator's state machine (docs/allocator.md, "Phases"): one case per edge of the
 * transition table, each driving an app to the edge's starting phase and its condition, and
 * checking the phase after the decision (and, where the edge leaves one, that the same state
 * without the condition does not take it). */
#include <math.h>
#include <string.h>

#include "allocator_fixture.h"
#include "pctl/util.h"

/* A search scored by measurements alone (no power model, power measured): the model cannot
 * rank, so every move below is the measured search's. */
static struct allocator_ctx measured_ctx(struct fixture *f)
{
        return (struct allocator_ctx){.est = f->est,
                                      .power_measured = true,
                                      .n_cpus = N_CPUS,
                                      .hysteresis = 0.05,
                                      .decision = 100,
                                      .n_apps = 1};
}

/* App 1 with P settled (30 noise-free intervals on every CPU). */
static void settle_p(struct fixture *f)
{
        assert_int_equal(estimator_app_add(f->est, 1), 0);
        feed(f, 1, 0.5, 0, N_CPUS, 30);
}

static void decide(struct allocator_ctx *ctx, struct allocator_app *a)
{
        assert_int_equal(allocator_decide(ctx, a, 1), 0);
}

/* The phase by name, so that a failure says which one it was. */
#define assert_phase(a, p)                                                                         \
        do {                                                                                       \
                if ((a)->phase != (p))                                                             \
                        fail_msg("phase %s, expected %s (%s)",                                     \
                                 allocator_phase_to_string((a)->phase),                            \
                                 allocator_phase_to_string(p), (a)->reason);                       \
        } while (0)

static const struct policy *edp(void)
{
        return policy_builtin(OBJECTIVE_EDP);
}

/* An app settled at 5 cores: 4, 5 and 6 measured, 5 the best, steps at 1. */
static struct allocator_app settled_at_5(const struct allocator_ctx *ctx)
{
        struct allocator_app a = {.id = 1,
                                  .policy = edp(),
                                  .cores = 5,
                                  .phase = ALLOCATOR_PHASE_SEARCH,
                                  .search.step_cores = 1,
                                  .search.step_freqs = 1};

        add_point(&a, 4, 0, 4, ctx->decision);
        add_point(&a, 5, 0, 3, ctx->decision);
        add_point(&a, 6, 0, 3.5, ctx->decision);
        return a;
}

/* Contention shows (the busiest core's IPC falls 20% from 2 cores to 8): the app, in `from`,
 * is due its one-core probe at the next decision. */
static void contention_shows(struct fixture *f, struct allocator_ctx *ctx, struct allocator_app *a)
{
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY;
        assert_int_equal(estimator_app_add(f->est, 1), 0);
        *ctx = (struct allocator_ctx){.est = f->est,
                                      .pm = &f->pm,
                                      .n_cpus = N_CPUS,
                                      .hysteresis = 0.05,
                                      .decision = 100,
                                      .n_apps = 1};
        a->cores = 2;
        feed_ipc(f, ctx, a, 1.0, 3);
        a->cores = N_CPUS;
        feed_ipc(f, ctx, a, 0.8, 3);
}

static void phase_names(void **state)
{
        for (unsigned p = 0; p < _ALLOCATOR_PHASE_MAX; p++)
                assert_non_null(allocator_phase_to_string(p));
        assert_string_equal(allocator_phase_to_string(ALLOCATOR_PHASE_SETTLED), "settled");
        assert_null(allocator_phase_to_string(_ALLOCATOR_PHASE_MAX));
}

/* NEW -> LEARN: P is not known yet; the app runs at its baseline. */
static void new_to_learn(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp(), .cores = 2};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        assert_int_equal(a.want_cores, N_CPUS);
}

/* NEW -> SEARCH: P is settled at the first decision; the search starts in it. */
static void new_to_search(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp(), .cores = N_CPUS};
        struct allocator_ctx ctx = measured_ctx(f);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_true(a.search.step_cores > 0);
}

/* NEW -> RECALL: history remembers a configuration; the app starts there, before any
 * estimate. */
static void new_to_recall(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_true(allocator_wants_decision(&ctx, &a));
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        assert_int_equal(a.want_cores, 3);
        assert_true(a.from_history);
}

/* NEW -> LEARN, not RECALL, when the remembered configuration is out of the policy's bounds. */
static void new_to_learn_when_recall_out_of_bounds(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = N_CPUS + 1, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        assert_false(a.from_history);
}

/* NEW -> MONITOR: objective monitor; never moved, outside the partition. */
static void new_to_monitor(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_MONITOR), .cores = 3};
        struct allocator_ctx ctx = measured_ctx(f);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MONITOR);
        assert_true(a.shares_cpus);
        assert_int_equal(a.want_cores, 3);
        /* MONITOR -> MONITOR */
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MONITOR);
        assert_false(allocator_wants_decision(&ctx, &a));
}

/* NEW -> MODEL: policy search = model, P settled. */
static void new_to_model(void **state)
{
        struct fixture *f = *state;
        struct policy pol = *edp();
        struct allocator_app a = {.id = 1, .policy = &pol, .cores = N_CPUS};
        struct allocator_ctx ctx = measured_ctx(f);

        pol.search = POLICY_SEARCH_MODEL;
        ctx.pm = &f->pm;
        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MODEL);
        assert_non_null(strstr(a.reason, "model only"));
        /* MODEL -> MODEL: no early decision there. */
        a.cores = a.want_cores;
        ctx.decision++;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MODEL);
        assert_false(allocator_wants_decision(&ctx, &a));
}

/* LEARN -> LEARN while P is not settled; LEARN -> SEARCH once it is. */
static void learn_to_search_when_p_settles(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp(), .cores = N_CPUS};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        assert_false(allocator_wants_decision(&ctx, &a));
        feed(f, 1, 0.5, 0, N_CPUS, 30);
        assert_true(allocator_wants_decision(&ctx, &a));
        /* Nothing measured where it is after the reset: the search waits there, re-opened. */
        a.n_hist = 0;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_false(a.changed);
}

/* LEARN -> SEARCH when P will not settle (noisy counters) after ALLOCATOR_LEARN_MAX_INTERVALS
 * intervals and the baseline has been measured; without that measurement it keeps learning. */
static void learn_to_search_when_p_will_not_settle(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .phase = ALLOCATOR_PHASE_LEARN};
        struct allocator_ctx ctx = measured_ctx(f);

        f->m.counter_noise = 0.5;
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
        assert_int_equal(estimator_app_add(f->est, 1), 0);
        feed(f, 1, 0.5, 0, N_CPUS, 25);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        assert_non_null(strstr(a.reason, "not settled"));
        add_point(&a, N_CPUS, 0, 5, ctx.decision);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
}

/* LEARN -> RECALL: history's configuration arrives while the app learns (it is identified
 * only after its exec). */
static void learn_to_recall(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp(), .cores = N_CPUS};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        a.hint.cores = 3;
        a.hint.score = 5;
        assert_true(allocator_wants_decision(&ctx, &a));
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        assert_int_equal(a.want_cores, 3);
}

/* NEW -> PROBE where contention shows; PROBE -> PROBE until the one-core interval came;
 * PROBE -> the phase it began in, back at its cores. */
static void probe_and_back(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp()};
        struct allocator_ctx ctx;

        contention_shows(f, &ctx, &a);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        assert_int_equal(a.phase_resume, ALLOCATOR_PHASE_NEW);
        assert_int_equal(a.want_cores, 1);
        /* Not on one core yet: the probe goes on. */
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        assert_int_equal(a.want_cores, 1);
        a.cores = 1;
        feed_ipc(f, &ctx, &a, 1.0, 1);
        assert_true(allocator_wants_decision(&ctx, &a));
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_NEW);
        assert_int_equal(a.want_cores, N_CPUS);
        assert_non_null(strstr(a.reason, "probe done"));
}

/* LEARN -> PROBE, and back to LEARN. */
static void learn_to_probe_and_back(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp(), .phase = ALLOCATOR_PHASE_LEARN};
        struct allocator_ctx ctx;

        contention_shows(f, &ctx, &a);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        a.cores = 1;
        feed_ipc(f, &ctx, &a, 1.0, 1);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
}

/* PROBE -> RECALL: history's configuration arrived during the probe; the probe ends first. */
static void probe_to_recall(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp()};
        struct allocator_ctx ctx;

        contention_shows(f, &ctx, &a);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        a.hint.cores = 3;
        a.hint.score = 5;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        assert_int_equal(a.phase_resume, ALLOCATOR_PHASE_RECALL);
        a.cores = 1;
        feed_ipc(f, &ctx, &a, 1.0, 1);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
}

/* SEARCH -> PROBE: contention shows for the first time while the app searches; the probe
 * returns to the search. */
static void search_to_probe_and_back(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp()};
        struct allocator_ctx ctx;

        contention_shows(f, &ctx, &a);
        a.phase = ALLOCATOR_PHASE_SEARCH;
        a.search.step_cores = a.search.step_freqs = 1;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        assert_int_equal(a.phase_resume, ALLOCATOR_PHASE_SEARCH);
        a.cores = 1;
        feed_ipc(f, &ctx, &a, 1.0, 1);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_int_equal(a.want_cores, N_CPUS);
}

/* SETTLED -> PROBE: settled at another clock than the one its IPC_I0(1) was observed at, the
 * app is probed once more there (the carried figure is used for good); searching, it is not. */
static void settled_to_probe_at_a_new_clock(void **state)
{
        static const unsigned freqs[] = {1000000, 1500000};
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = edp()};
        struct allocator_ctx ctx;
        const struct estimate *e;

        contention_shows(f, &ctx, &a);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        a.cores = 1;
        feed_ipc(f, &ctx, &a, 1.0, 1);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_NEW);
        /* Now at 1.5 GHz, a clock the probe did not see. */
        ctx.freqs_khz = freqs;
        ctx.n_freqs = ARRAY_SIZE(freqs);
        a.cores = N_CPUS;
        a.freq_khz = 1500000;
        feed_ipc_at(f, &ctx, &a, 1500000, 0.8, 3);
        e = estimator_get(f->est, 1);
        assert_int_equal(e->ipc1_source, ESTIMATE_IPC1_ONE_CORE_SCALED);
        a.phase = ALLOCATOR_PHASE_SEARCH;
        a.search.step_cores = a.search.step_freqs = 1;
        decide(&ctx, &a);
        assert_true(a.phase != ALLOCATOR_PHASE_PROBE);
        a.phase = ALLOCATOR_PHASE_SETTLED;
        a.search.step_cores = a.search.step_freqs = 1;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_PROBE);
        assert_int_equal(a.phase_resume, ALLOCATOR_PHASE_SETTLED);
        assert_int_equal(a.want_cores, 1);
        assert_int_equal(a.want_freq_khz, 1500000);
}

/* RECALL -> RECALL while the remembered configuration is measured; RECALL -> SETTLED when it
 * measures as remembered. */
static void recall_to_settled(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        a.cores = 3;
        ctx.decision++;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        assert_non_null(strstr(a.reason, "measuring it"));
        add_point(&a, 3, 0, 5.2, ctx.decision);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        assert_non_null(strstr(a.reason, "verified"));
        assert_false(allocator_wants_decision(&ctx, &a));
}

/* SETTLED (a verified remembered configuration) -> SEARCH once the verification is as old as
 * a stale measurement: the point it holds is measured at every sample and never goes stale
 * itself, and a later phase the estimator cannot see at one core count was held for the run. */
static void settled_to_search_when_the_verified_hold_is_stale(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        settle_p(f);
        decide(&ctx, &a);
        a.cores = 3;
        add_point(&a, 3, 0, 5.2, ctx.decision);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        assert_non_null(strstr(a.reason, "verified"));
        ctx.decision += 60;
        a.hist[0].decision = ctx.decision;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        assert_int_equal(a.hint.cores, 3);
        ctx.decision++;
        a.hist[0].decision = ctx.decision;
        decide(&ctx, &a);
        assert_int_equal(a.hint.cores, 0);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_null(strstr(a.reason, "from history"));
}

/* RECALL -> SEARCH when it measures off the remembered score. */
static void recall_to_search_when_off(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        settle_p(f);
        decide(&ctx, &a);
        a.cores = 3;
        add_point(&a, 3, 0, 8, ctx.decision);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_non_null(strstr(a.reason, "off the remembered score"));
        assert_int_equal(a.hint.cores, 0);
}

/* RECALL -> SEARCH when the app is not where history put it (sharing moved it): the hint is
 * spent and the search decides at once. */
static void recall_to_search_when_moved(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        a.cores = 4;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_int_equal(a.hint.cores, 0);
}

/* RECALL -> LEARN when sharing put it elsewhere before P is known: the remembered
 * configuration was a start, and the search from the cores it was given would never learn P
 * (the partition shares by the model, which cannot rank it without). */
static void recall_to_learn_when_moved_before_p(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        a.cores = 1;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        assert_int_equal(a.hint.cores, 0);
        assert_true(a.from_history);
        assert_non_null(strstr(a.reason, "learning"));
}

/* RECALL -> LEARN when it measures off the remembered score before P is known while the
 * machine is shared (the others' load moved the score); alone, the measured search goes on
 * from there (recall_to_search_when_off, with P known, and here without). */
static void recall_to_learn_when_off_sharing_before_p(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = edp(), .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_app alone;
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        decide(&ctx, &a);
        a.cores = 3;
        add_point(&a, 3, 0, 8, ctx.decision);
        alone = a;
        decide(&ctx, &alone);
        assert_phase(&alone, ALLOCATOR_PHASE_SEARCH);
        ctx.n_apps = 2;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        assert_int_equal(a.hint.cores, 0);
}

/* SETTLED -> LEARN: an exploring hint holds for the run and ends when markers appear; the
 * machine shared and P not settled, the app learns rather than search from there. */
static void settled_to_learn_when_the_hint_ends_sharing_before_p(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = edp(),
                                  .cores = N_CPUS,
                                  .hint.cores = 3,
                                  .hint.score = NAN,
                                  .hint.explore_from = 6};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        ctx.n_apps = 2;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        a.cores = 3;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        assert_non_null(strstr(a.reason, "exploring"));
        a.progress_known = true;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
        assert_int_equal(a.hint.cores, 0);
}

/* RECALL -> MODEL: the policy's search becomes model-only while the remembered configuration
 * is verified: the model decides, the hint no longer. */
static void recall_to_model(void **state)
{
        struct fixture *f = *state;
        struct policy pol = *edp();
        struct allocator_app a = {
            .id = 1, .policy = &pol, .cores = N_CPUS, .hint.cores = 3, .hint.score = 5};
        struct allocator_ctx ctx = measured_ctx(f);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_RECALL);
        a.cores = 3;
        pol.search = POLICY_SEARCH_MODEL;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MODEL);
        assert_non_null(strstr(a.reason, "model only"));
}

/* SEARCH -> SEARCH: an unmeasured neighbour of the best point is probed. */
static void search_to_search(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        settle_p(f);
        a.n_hist = 2; /* 6 not measured */
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_int_equal(a.want_cores, 6);
        assert_true(a.exploring);
}

/* SEARCH -> SETTLED: every neighbour of the best point measured worse at step 1; SETTLED ->
 * SETTLED at the next decision, with no early decision. */
static void search_to_settled(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        assert_int_equal(a.want_cores, 5);
        assert_false(allocator_wants_decision(&ctx, &a));
        ctx.decision++;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
}

/* SEARCH -> SETTLED moving to the best point when the app is elsewhere. */
static void search_to_settled_moving_to_the_best(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        settle_p(f);
        a.cores = 6;
        a.hist[2].score = 3.05; /* within the hysteresis of 5's: no measured move first */
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        assert_int_equal(a.want_cores, 5);
        assert_non_null(strstr(a.reason, "settled"));
}

/* SETTLED -> SEARCH when a neighbour's measurement went stale: it is measured again. */
static void settled_to_search_when_stale(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        ctx.decision += 61;
        a.hist[1].decision = ctx.decision; /* 5 measured afresh, 4 and 6 stale */
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_true(a.exploring);
}

/* SETTLED -> SEARCH when the app changed (its search reset between decisions): it may decide
 * early again at once, and its next decision re-opens the search. */
static void settled_to_search_when_reset(void **state)
{
        struct fixture *f = *state;
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        settle_p(f);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        /* What a phase change does to it (observe's reset): no measured points, no steps. */
        a.n_hist = 0;
        a.search.step_cores = a.search.step_freqs = 0;
        add_point(&a, 5, 0, 3, ctx.decision);
        a.search.at_cores = 5;
        a.search.samples_here = 1 + ALLOCATOR_PROBE_SAMPLES;
        assert_true(allocator_wants_decision(&ctx, &a));
        /* Nothing measured where it is after the reset: the search waits there, re-opened. */
        a.n_hist = 0;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_false(a.changed);
}

/* SETTLED -> SEARCH when its policy's bounds no longer hold where it is (a reload narrowed
 * them): it decides at once, goes inside them, and searches there; what it measured outside
 * ranks nothing. The same app with bounds that still hold stays settled, without a decision. */
static void settled_to_search_when_out_of_bounds(void **state)
{
        struct fixture *f = *state;
        struct policy pol = *edp();
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        settle_p(f);
        a.policy = &pol;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        a.search.at_cores = 5;
        a.search.samples_here = 1 + ALLOCATOR_PROBE_SAMPLES;
        pol.max_cores = 5;
        assert_false(allocator_wants_decision(&ctx, &a));
        pol.max_cores = 3;
        assert_true(allocator_wants_decision(&ctx, &a));
        ctx.decision++;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_true(a.want_cores >= 1 && a.want_cores <= 3);
        /* From below as well: min_cores above where it is. */
        a = settled_at_5(&ctx);
        a.policy = &pol;
        pol.max_cores = 0;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        pol.min_cores = 7;
        ctx.decision++;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_true(a.want_cores >= 7);
        /* And its clock, searching at 3000 MHz (it explores 2000 first): a reload puts
         * max_freq at 1000. */
        static const unsigned freqs[] = {1000000, 2000000, 3000000};
        ctx.n_freqs = 3;
        ctx.freqs_khz = freqs;
        pol.min_cores = 0;
        a = settled_at_5(&ctx);
        a.policy = &pol;
        for (unsigned i = 0; i < a.n_hist; i++)
                a.hist[i].freq_khz = 3000000;
        a.freq_khz = 3000000;
        decide(&ctx, &a);
        assert_int_equal(a.want_freq_khz, 2000000);
        pol.max_freq_mhz = 1000;
        assert_true(allocator_wants_decision(&ctx, &a));
        ctx.decision++;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH);
        assert_int_equal(a.want_cores, 5);
        assert_int_equal(a.want_freq_khz, 1000000);
        assert_non_null(strstr(a.reason, "bounds changed"));
        /* To one core: the reason counts it as people do, "1 core" (plural_s), never
         * "1 cores". */
        pol.max_freq_mhz = 0;
        a = settled_at_5(&ctx);
        a.policy = &pol;
        decide(&ctx, &a);
        pol.max_cores = 1;
        ctx.decision++;
        decide(&ctx, &a);
        assert_int_equal(a.want_cores, 1);
        if (!strstr(a.reason, "moved to 1 core") || strstr(a.reason, "1 cores"))
                fail_msg("reason: %s", a.reason);
}

/* SEARCH -> MONITOR when its policy becomes monitor-only (a reload), and MONITOR -> SETTLED
 * when it stops being so: it had searched, it does not learn again (P is not known here: a
 * new app would). */
static void search_to_monitor_and_back(void **state)
{
        struct fixture *f = *state;
        struct policy pol = *edp();
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        a.policy = &pol;
        pol.objective = OBJECTIVE_MONITOR;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MONITOR);
        pol.objective = OBJECTIVE_EDP;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
        assert_int_equal(a.want_cores, 5);
}

/* MONITOR -> LEARN when its policy stops being monitor-only before it ever searched. */
static void monitor_to_learn(void **state)
{
        struct fixture *f = *state;
        struct policy pol = *policy_builtin(OBJECTIVE_MONITOR);
        struct allocator_app a = {.id = 1, .policy = &pol, .cores = N_CPUS};
        struct allocator_ctx ctx = measured_ctx(f);

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MONITOR);
        pol.objective = OBJECTIVE_EDP;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_LEARN);
}

/* SEARCH -> MODEL when its policy's search becomes model-only; MODEL -> SETTLED when it stops
 * being so (where the model put it, until measurements say otherwise). */
static void search_to_model_and_back(void **state)
{
        struct fixture *f = *state;
        struct policy pol = *edp();
        struct allocator_ctx ctx = measured_ctx(f);
        struct allocator_app a = settled_at_5(&ctx);

        settle_p(f);
        a.policy = &pol;
        a.n_hist = 2;
        pol.search = POLICY_SEARCH_MODEL;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_MODEL);
        pol.search = POLICY_SEARCH_MEASURED;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SEARCH); /* 6 is unmeasured: probed */
        /* Back from the model with nothing measured where it is: it holds, settled. */
        a.phase = ALLOCATOR_PHASE_MODEL;
        a.n_hist = 0;
        decide(&ctx, &a);
        assert_phase(&a, ALLOCATOR_PHASE_SETTLED);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(phase_names),
    fixture_case(new_to_learn),
    fixture_case(new_to_search),
    fixture_case(new_to_recall),
    fixture_case(new_to_learn_when_recall_out_of_bounds),
    fixture_case(new_to_monitor),
    fixture_case(new_to_model),
    fixture_case(learn_to_search_when_p_settles),
    fixture_case(learn_to_search_when_p_will_not_settle),
    fixture_case(learn_to_recall),
    fixture_case(probe_and_back),
    fixture_case(learn_to_probe_and_back),
    fixture_case(probe_to_recall),
    fixture_case(search_to_probe_and_back),
    fixture_case(settled_to_probe_at_a_new_clock),
    fixture_case(recall_to_settled),
    fixture_case(settled_to_search_when_out_of_bounds),
    fixture_case(recall_to_search_when_off),
    fixture_case(settled_to_search_when_the_verified_hold_is_stale),
    fixture_case(recall_to_search_when_moved),
    fixture_case(recall_to_learn_when_moved_before_p),
    fixture_case(recall_to_learn_when_off_sharing_before_p),
    fixture_case(settled_to_learn_when_the_hint_ends_sharing_before_p),
    fixture_case(recall_to_model),
    fixture_case(search_to_search),
    fixture_case(search_to_settled),
    fixture_case(search_to_settled_moving_to_the_best),
    fixture_case(settled_to_search_when_stale),
    fixture_case(settled_to_search_when_reset),
    fixture_case(search_to_monitor_and_back),
    fixture_case(monitor_to_learn),
    fixture_case(search_to_model_and_back),
};
PCTL_TEST_MAIN(tests)
