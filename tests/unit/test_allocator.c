/* The allocator on estimates built from synthetic Amdahl counters (test_estimator_synth.h):
 * what it chooses, when it waits, how it shares and places CPUs. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "allocator_fixture.h"
#include "pctl/util.h"
#include "../../manager/alloc_internal.h"

static unsigned hist_samples(const struct allocator_app *a, unsigned cores)
{
        for (unsigned i = 0; i < a->n_hist; i++)
                if (a->hist[i].cores == cores)
                        return a->hist[i].samples;
        return 0;
}

static struct allocator_ctx ctx_for(struct fixture *f, unsigned n_cpus)
{
        return (struct allocator_ctx){.est = f->est,
                                      .pm = &f->pm,
                                      .n_cpus = n_cpus,
                                      .hysteresis = 0.05,
                                      .decision = 100,
                                      .n_apps = 1};
}

/* Runs app 1 at 2 cores (IPC 1) then 8 (IPC ipc8) and lets the allocator decide. */
static void contention_then_decide(struct fixture *f, struct allocator_ctx *ctx,
                                   struct allocator_app *a, double ipc8)
{
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY;
        assert_int_equal(estimator_app_add(f->est, 1), 0);
        *ctx = ctx_for(f, N_CPUS);
        a->cores = 2;
        feed_ipc(f, ctx, a, 1.0, 3);
        a->cores = N_CPUS;
        feed_ipc(f, ctx, a, ipc8, 3);
        assert_int_equal(allocator_decide(ctx, a, 1), 0);
}

/* The busiest core's IPC falls 20% from 2 to 8 cores: eq. 9 on it would hide that, so the
 * allocator runs the app on one core for one interval, then sends it back; the speedup then
 * shows the contention. */
static void one_core_probe_when_contention_shows(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP)};
        struct allocator_ctx ctx;
        const struct estimate *e;

        contention_then_decide(f, &ctx, &a, 0.8);
        e = estimator_get(f->est, 1);
        assert_int_equal(e->ipc1_source, ESTIMATE_IPC1_BUSIEST_CORE);
        assert_near(e->ipc_core_drop, 0.2, 0.01);
        assert_int_equal(a.want_cores, 1);
        assert_non_null(strstr(a.reason, "one-core probe"));
        assert_false(allocator_wants_decision(&ctx, &a));
        a.cores = 1;
        feed_ipc(f, &ctx, &a, 1.0, 1);
        assert_true(allocator_wants_decision(&ctx, &a));
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, N_CPUS);
        assert_non_null(strstr(a.reason, "probe done"));
        a.cores = N_CPUS;
        feed_ipc(f, &ctx, &a, 0.8, 1);
        e = estimator_get(f->est, 1);
        assert_int_equal(e->ipc1_source, ESTIMATE_IPC1_ONE_CORE);
        /* Amdahl's 4.71 at P 0.9, times the 0.8 that contention leaves. */
        assert_near(e->speedup, 0.8 / (0.1 + 0.9 / N_CPUS), 0.01);
        /* Once is enough: no probe at the next decision. */
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_not_equal(a.want_cores, 1);
}

/* No probe when the busiest core's IPC holds (nothing hidden), nor when the policy keeps the
 * app on 2 cores or more. */
static void no_one_core_probe_without_contention_or_leave(void **state)
{
        struct fixture *f = *state;
        struct policy two = *policy_builtin(OBJECTIVE_EDP);
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP)};
        struct allocator_ctx ctx;

        contention_then_decide(f, &ctx, &a, 0.99);
        assert_int_not_equal(a.want_cores, 1);
        assert_null(strstr(a.reason, "one-core probe"));
        fixture_reset(f);
        two.min_cores = 2;
        a = (struct allocator_app){.id = 1, .policy = &two};
        contention_then_decide(f, &ctx, &a, 0.8);
        assert_int_not_equal(a.want_cores, 1);
        assert_null(strstr(a.reason, "one-core probe"));
}

static void learning_runs_at_baseline(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2};
        struct allocator_ctx ctx;

        assert_int_equal(estimator_app_add(f->est, 1), 0);
        ctx = ctx_for(f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, N_CPUS); /* no estimate: every allowed core */
        assert_non_null(strstr(a.reason, "learning"));
        assert_true(a.changed);
}

/* Declared 20 W + 10 W/core: EDP picks 1 core for P = 0.2 and every core for P = 0.95. */
static void edp_follows_p(void **state)
{
        const struct {
                double p;
                unsigned want;
        } cases[] = {{0.2, 1}, {0.95, N_CPUS}};

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct fixture *f = *state;
                struct allocator_app a = {
                    .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
                struct allocator_ctx ctx;

                fixture_reset(f);
                estimator_app_add(f->est, 1);
                feed(f, 1, cases[i].p, 0, N_CPUS, 30);
                ctx = ctx_for(f, N_CPUS);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.want_cores != cases[i].want)
                        fail_msg("P=%.2f: want %u cores, expected %u (%s)", cases[i].p,
                                 a.want_cores, cases[i].want, a.reason);
        }
}

static void monitor_changes_nothing(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_MONITOR), .cores = 3};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.2, 0, 3, 30);
        ctx = ctx_for(f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 3);
        assert_false(a.changed);
        /* It takes no place in the partition: watched apps on every CPU leave the managed
         * one its cores (before: -ENOSPC, and no plan for anyone). */
        assert_true(a.shares_cpus);
        {
                struct topology t;
                struct cpumask allowed, cur[4], out[4];
                struct allocator_app apps[4] = {a, a, a, {.want_cores = 2}};

                assert_int_equal(topology_synthetic(&t, 1, 4, 1), 0);
                cpumask_parse("0-3", &allowed);
                for (unsigned i = 0; i < 3; i++) {
                        apps[i].want_cores = 4;
                        cur[i] = allowed;
                }
                cpumask_zero(&cur[3]);
                assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 4), 0);
                assert_int_equal(cpumask_count(&out[3]), 2);
                topology_free(&t);
        }
}

/* max_cores and max_slowdown bound the choice: P = 0.95 wants all 8, a cap of 4 holds it, and
 * with max_slowdown 0 an EDP app at P = 0.2 must stay as fast as its baseline. */
static void bounds_are_honoured(void **state)
{
        struct fixture *f = *state;
        struct policy capped = *policy_builtin(OBJECTIVE_EDP), strict = capped;
        struct allocator_app a = {.id = 1, .policy = &capped, .cores = 4};
        struct allocator_ctx ctx;

        capped.max_cores = 4;
        estimator_app_add(f->est, 1);
        feed(f, 1, 0.95, 0, 4, 30);
        ctx = ctx_for(f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 4);

        strict.max_slowdown = 0;
        a = (struct allocator_app){.id = 1, .policy = &strict, .cores = N_CPUS};
        fixture_reset(f);
        estimator_app_add(f->est, 1);
        feed(f, 1, 0.2, 0, N_CPUS, 30);
        ctx = ctx_for(f, N_CPUS);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, N_CPUS);
}

/* Two apps alike but for their weight, 3 (heavy, app 1) and 1 (light, app 2), under objective
 * o, holding `cores` each; app 1 measured at P 0.99 on CPUs 0-3, app 2 on 4-7 too when
 * both_measured. The context has both apps. */
static struct allocator_ctx weighted_pair(struct fixture *f, enum objective_kind o, unsigned cores,
                                          bool both_measured, struct policy *heavy,
                                          struct policy *light, struct allocator_app a[2])
{
        struct allocator_ctx ctx;

        *heavy = *policy_builtin(o);
        *light = *heavy;
        heavy->weight = 3;
        light->weight = 1;
        a[0] = (struct allocator_app){.id = 1, .policy = heavy, .cores = cores};
        a[1] = (struct allocator_app){.id = 2, .policy = light, .cores = cores};
        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2);
        feed(f, 1, 0.99, 0, 4, 30);
        if (both_measured)
                feed(f, 2, 0.99, 4, 4, 30);
        ctx = ctx_for(f, N_CPUS);
        ctx.n_apps = 2;
        return ctx;
}

/* Two apps that each want every CPU share them by weight, never below their minimum. */
static void competing_apps_share_by_weight(void **state)
{
        struct policy heavy, light;
        struct allocator_app a[2];
        struct allocator_ctx ctx =
            weighted_pair(*state, OBJECTIVE_PERFORMANCE, 4, false, &heavy, &light, a);

        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[0].want_cores + a[1].want_cores, N_CPUS);
        assert_true(a[0].want_cores >= 3 * a[1].want_cores - 3);
        assert_true(a[1].want_cores >= 1);
        /* Minimums that cannot all fit are an error, not a silent overcommit. */
        heavy.min_cores = 6;
        light.min_cores = 6;
        assert_int_equal(allocator_decide(&ctx, a, 2), -ENOSPC);
}

/* The count sharing cut an app to is marked as the partition's while it holds it (pctl history
 * keeps a measured start over it, docs/history.md), and unmarked once the app holds a count of
 * its own choosing. */
static void the_count_sharing_cut_an_app_to_is_marked(void **state)
{
        struct policy heavy, light;
        struct allocator_app a[2];
        struct allocator_ctx ctx =
            weighted_pair(*state, OBJECTIVE_PERFORMANCE, 4, false, &heavy, &light, a);

        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        for (unsigned i = 0; i < 2; i++) {
                printf("app %u: wants %u, share_set_cores %u\n", i, a[i].want_cores,
                       a[i].share_set_cores);
                if (a[i].share_set_cores)
                        assert_int_equal(a[i].share_set_cores, a[i].want_cores);
        }
        /* Both want every CPU: the light one at least is cut. */
        assert_int_equal(a[1].share_set_cores, a[1].want_cores);
        /* Held there and deciding again beside the other: still the partition's count. */
        for (unsigned i = 0; i < 2; i++)
                a[i].cores = a[i].want_cores;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[1].share_set_cores, a[1].want_cores);
        /* Alone, it takes what it wants itself. */
        ctx.n_apps = 1;
        assert_int_equal(allocator_decide(&ctx, &a[1], 1), 0);
        assert_true(a[1].want_cores > a[1].cores);
        assert_int_equal(a[1].share_set_cores, 0);
}

/* A fresh measurement that beats the current setting overrules the model. */
static void measurement_overrules_the_model(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 1};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.2, 0, N_CPUS, 30);
        ctx = ctx_for(f, N_CPUS);
        /* The model prefers 1 core for P = 0.2; measurements say 4 cores were far better. */
        a.hist[0] = (struct allocator_point){
            .cores = 1, .freq_khz = 0, .score = 10, .samples = 4, .decision = 99};
        a.hist[1] = (struct allocator_point){
            .cores = 4, .freq_khz = 0, .score = 5, .samples = 4, .decision = 98};
        a.n_hist = 2;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 4);
        assert_non_null(strstr(a.reason, "measured"));
        /* Stale measurements do not count. */
        a.cores = 1;
        ctx.decision = 1000;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 1);
}

/* search = model (the model-only baseline): once P is settled the model's best, whatever was
 * measured; the measured search (the default) lets the same measurement overrule the model. */
static void model_only_goes_to_the_models_best(void **state)
{
        struct fixture *f = *state;
        struct policy pol = *policy_builtin(OBJECTIVE_EDP);
        struct allocator_app a = {.id = 1, .policy = &pol, .cores = 1};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.2, 0, N_CPUS, 30);
        ctx = ctx_for(f, N_CPUS);
        a.hist[0] = (struct allocator_point){
            .cores = 1, .freq_khz = 0, .score = 10, .samples = 4, .decision = 99};
        a.hist[1] = (struct allocator_point){
            .cores = 4, .freq_khz = 0, .score = 5, .samples = 4, .decision = 98};
        a.n_hist = 2;
        pol.search = POLICY_SEARCH_MODEL;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 1);
        assert_non_null(strstr(a.reason, "model only"));
        /* From 8 cores it goes to the model's best, 1 core, and probes nothing after. */
        a.cores = N_CPUS;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 1);
        assert_false(a.exploring);
        a.cores = 1;
        ctx.decision++;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 1);
        assert_false(a.exploring);
        pol.search = POLICY_SEARCH_MEASURED;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 4);
}

static void placement_keeps_cpus_and_packages(void **state)
{
        struct topology t;
        struct cpumask allowed, cur[2], out[2];
        struct allocator_app apps[2] = {{.want_cores = 3}, {.want_cores = 4}};
        char list[64];

        assert_int_equal(topology_synthetic(&t, 2, 4, 1), 0); /* CPUs 0-3 and 4-7 */
        cpumask_parse("0-7", &allowed);
        cpumask_parse("4-7", &cur[0]); /* app 0 shrinks on its own package */
        cpumask_parse("", &cur[1]);    /* app 1 is new */
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), 0);
        assert_true(cpumask_subset(&out[0], &cur[0]));
        assert_int_equal(cpumask_count(&out[0]), 3);
        cpumask_format(&out[1], list, sizeof(list));
        assert_string_equal(list, "0-3"); /* a whole package */
        apps[1].want_cores = 6;
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), -ENOSPC);
        topology_free(&t);
}

/* Two learning apps on 2 CPUs: with per-app counts each keeps both CPUs (time-sharing, outside
 * the partition); without them the old partition by weight holds (1 CPU each). */
static void learners_share_when_counted_apart(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2] = {
            {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2},
            {.id = 2, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2},
        };
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2);
        ctx = ctx_for(f, 2);
        ctx.n_apps = 2;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[0].want_cores + a[1].want_cores, 2); /* partitioned */
        assert_false(a[0].shares_cpus || a[1].shares_cpus);

        ctx.learners_share = true;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        for (unsigned i = 0; i < 2; i++) {
                assert_int_equal(a[i].want_cores, 2);
                assert_true(a[i].shares_cpus);
                assert_non_null(strstr(a[i].reason, "learning"));
        }
}

/* Once learned, an app joins the partition while the other still learns and shares every
 * CPU. */
static void learned_app_is_partitioned_learner_shares(void **state)
{
        struct fixture *f = *state;
        struct topology t;
        struct cpumask allowed, cur[2], out[2];
        struct allocator_app a[2] = {
            {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2},
            {.id = 2, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2},
        };
        struct allocator_ctx ctx;
        char list[32];

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2);
        feed(f, 1, 0.2, 0, 2, 30); /* app 1 learned: P = 0.2 wants 1 core */
        ctx = ctx_for(f, 2);
        ctx.n_apps = 2;
        ctx.learners_share = true;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_false(a[0].shares_cpus);
        assert_int_equal(a[0].want_cores, 1);
        assert_true(a[1].shares_cpus);
        assert_int_equal(a[1].want_cores, 2);

        assert_int_equal(topology_synthetic(&t, 1, 2, 1), 0);
        cpumask_parse("0-1", &allowed);
        cur[0] = cur[1] = allowed;
        assert_int_equal(allocator_place(&t, &allowed, a, cur, out, 2), 0);
        assert_int_equal(cpumask_count(&out[0]), 1);
        cpumask_format(&out[1], list, sizeof(list));
        assert_string_equal(list, "0-1"); /* the learner: every allowed CPU */
        /* A learner capped below the machine keeps its own CPUs first. */
        a[1].want_cores = 1;
        cpumask_parse("1", &cur[1]);
        assert_int_equal(allocator_place(&t, &allowed, a, cur, out, 2), 0);
        cpumask_format(&out[1], list, sizeof(list));
        assert_string_equal(list, "1");
        a[1].want_cores = 3;
        assert_int_equal(allocator_place(&t, &allowed, a, cur, out, 2), -ENOSPC);
        topology_free(&t);
}

/* Like feed(), with measured package energy (RAPL) and the allocator observing each interval,
 * as the manager does. */
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

/* One rule for static power: sharing the machine, an app's measured score charges it its share
 * of the static power, as its predictions do; the estimator charges it all (20 W here, 2 apps:
 * 10 W off). */
static void measured_score_charges_a_share_of_static_power(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 4};
        struct allocator_ctx ctx;
        const struct estimate *e;
        double want;

        /* The estimator with the declared model: it charges each app's power by it. */
        estimator_free(f->est);
        f->est = estimator_new(&(struct estimator_config){.delta_i_rate = NAN, .power = &f->pm});
        assert_non_null(f->est);
        estimator_app_add(f->est, 1);
        ctx = ctx_for(f, N_CPUS);
        ctx.n_apps = 2;
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
        feed_observed(f, &ctx, &a, 0.5, 2); /* one skipped, one counted */
        e = estimator_get(f->est, 1);
        assert_non_null(e);
        assert_true(e->known & ESTIMATE_POWER);
        assert_int_equal(a.n_hist, 1);
        assert_int_equal(objective_score_rate(OBJECTIVE_EDP, e->power_w - 10, e->ips, &want), 0);
        assert_near(a.hist[0].score, want, fabs(want) * 1e-9);
}

/* Without a power model but with RAPL, the first sample after a change is skipped, the next
 * ones make a point, and then (not before) the allocator asks for a decision. */
static void observe_skips_the_change_and_asks_to_decide(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        ctx = ctx_for(f, N_CPUS);
        ctx.pm = NULL;
        ctx.power_measured = true;
        ctx.probe_samples = 3;
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY; /* IPS needs instructions */
        feed_observed(f, &ctx, &a, 0.5, 30);                       /* P settles at the baseline */
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_not_equal(a.phase, ALLOCATOR_PHASE_LEARN);
        assert_int_equal(a.n_hist, 1);
        assert_int_equal(a.hist[0].cores, N_CPUS);
        /* The measured search probes fewer cores first (no model to rank the neighbours). */
        assert_true(a.changed);
        assert_true(a.want_cores < N_CPUS);
        assert_non_null(strstr(a.reason, "exploring"));
        a.cores = a.want_cores;
        feed_observed(f, &ctx, &a, 0.5, 3); /* one skipped, two counted */
        assert_false(allocator_wants_decision(&ctx, &a));
        assert_int_equal(hist_samples(&a, a.cores), 2);
        feed_observed(f, &ctx, &a, 0.5, 1);
        assert_int_equal(hist_samples(&a, a.cores), 3);
        assert_true(allocator_wants_decision(&ctx, &a));
}

/* A fixture whose app (id 1, P 0.5) has 30 intervals on every CPU, and the context of a
 * search on n_cpus scored by measurements alone (no power model, power measured). */
static struct allocator_ctx measured_ctx(struct fixture *f, unsigned n_cpus)
{
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.5, 0, N_CPUS, 30);
        ctx = ctx_for(f, n_cpus);
        ctx.pm = NULL;
        ctx.power_measured = true;
        return ctx;
}

/* The pattern search on made-up measurements: it probes the unmeasured neighbours of the best
 * point, halves its step when none is left, and settles on the best once every neighbour at
 * step 1 measured worse. */
static void search_settles_on_the_measured_best(void **state)
{
        /* A measured EDP rate with its minimum at 5 cores. */
        static const double score[N_CPUS + 1] = {0, 9, 7, 5, 4, 3, 3.5, 4.5, 6};
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
        struct allocator_ctx ctx;
        unsigned visited = 0;

        ctx = measured_ctx(f, N_CPUS);
        for (unsigned step = 0; step < 20; step++) {
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.phase == ALLOCATOR_PHASE_SETTLED && !a.changed)
                        break;
                a.cores = a.want_cores;
                /* Measure the new point as observe would. */
                add_point(&a, a.cores, 0, score[a.cores], ctx.decision);
                for (unsigned i = 0; i + 1 < a.n_hist; i++)
                        if (a.hist[i].cores == a.cores)
                                a.hist[--a.n_hist] = (struct allocator_point){0};
                visited++;
                ctx.decision++;
        }
        if (a.cores != 5 || a.phase != ALLOCATOR_PHASE_SETTLED)
                fail_msg("ended at %u cores (%s), expected 5 and settled", a.cores, a.reason);
        assert_true(visited < N_CPUS); /* fewer probes than trying every count */
}

/* Noise-free counters give an exact P after a few intervals: the app leaves the baseline then,
 * not after a fixed count. Noisy ones of the same length do not settle P. */
static void p_settles_early_when_precise(void **state)
{
        const struct {
                double noise;
                bool learning;
        } cases[] = {{0, false}, {0.2, true}};

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct fixture *f = *state;
                struct allocator_app a = {
                    .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
                struct allocator_ctx ctx;

                fixture_reset(f);
                f->m.counter_noise = cases[i].noise;
                f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
                estimator_app_add(f->est, 1);
                feed(f, 1, 0.5, 0, N_CPUS, 4);
                ctx = ctx_for(f, N_CPUS);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if ((a.phase == ALLOCATOR_PHASE_LEARN) != cases[i].learning)
                        fail_msg("noise %.2f: learning %d, expected %d (%s)", cases[i].noise,
                                 (a.phase == ALLOCATOR_PHASE_LEARN), cases[i].learning, a.reason);
        }
}

/* The measured search of a on 64 CPUs, from the count it starts on, over a measured EDP rate
 * 100 + 10 (n - best)^2 (minimum at best cores) given to each count when first visited: it
 * visits first[0..2] first, settles on best, and visits at most max_visited new counts. */
static void search_on_quadratic(struct fixture *f, struct allocator_app *a, unsigned best,
                                const unsigned first[3], unsigned max_visited)
{
        struct allocator_ctx ctx = measured_ctx(f, 64);
        unsigned visited[32], n_visited = 0;
        double d = (double)a->cores - best;

        add_point(a, a->cores, 0, 100 + 10 * d * d, ctx.decision);
        while (n_visited < ARRAY_SIZE(visited)) {
                assert_int_equal(allocator_decide(&ctx, a, 1), 0);
                if (a->phase == ALLOCATOR_PHASE_SETTLED && !a->changed)
                        break;
                a->cores = a->want_cores;
                if (!hist_samples(a, a->cores)) {
                        d = (double)a->cores - best;
                        add_point(a, a->cores, 0, 100 + 10 * d * d, ctx.decision);
                        visited[n_visited++] = a->cores;
                }
                ctx.decision++;
        }
        assert_true(n_visited >= 3);
        for (unsigned i = 0; i < 3; i++)
                assert_int_equal(visited[i], first[i]);
        if (a->cores != best || a->phase != ALLOCATOR_PHASE_SETTLED)
                fail_msg("ended at %u cores (%s), expected %u and settled", a->cores, a->reason,
                         best);
        assert_true(n_visited <= max_visited);
}

/* From the full count of a wide range the search halves the cores while the measured score
 * improves (64, 32, 16, 8), then searches between the halvings and settles on the best. */
static void search_halves_from_the_full_count(void **state)
{
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 64};

        search_on_quadratic(*state, &a, 12, (const unsigned[]){32, 16, 8}, 10);
}

/* Alone on 64 cores, an app whose speedup there is small (P = 0.5: 2.0 of 64 cores) warms up
 * and learns on a quarter of them, decided once and logged; one that scales (P = 0.99) stays on
 * every core, and so does one whose policy limits its slowdown (relative to every core). */
static void small_speedup_starts_on_a_quarter(void **state)
{
        const struct {
                double p, max_slowdown;
                unsigned want;
        } cases[] = {{0.5, INFINITY, 16}, {0.99, INFINITY, 64}, {0.5, 0.1, 64}};

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct fixture *f = *state;
                struct policy pol = *policy_builtin(OBJECTIVE_EDP);
                struct allocator_app a = {.id = 1, .policy = &pol, .cores = 64};
                struct allocator_ctx ctx;

                pol.max_slowdown = cases[i].max_slowdown;
                fixture_reset(f);
                synth_sample_free(&f->s);
                assert_int_equal(synth_sample_alloc(&f->s, 64, 0), 0);
                f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
                estimator_app_add(f->est, 1);
                ctx = ctx_for(f, 64);
                /* Nothing measured yet: it waits on every core. */
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                assert_int_equal(a.want_cores, 64);
                assert_false(a.learn_at.decided);
                feed(f, 1, cases[i].p, 0, 64, 1);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (a.want_cores != cases[i].want || a.phase != ALLOCATOR_PHASE_LEARN)
                        fail_msg("P %.2f, max_slowdown %g: want %u (learning %d), expected %u: %s",
                                 cases[i].p, cases[i].max_slowdown, a.want_cores,
                                 (a.phase == ALLOCATOR_PHASE_LEARN), cases[i].want, a.reason);
                if (cases[i].want < 64)
                        assert_non_null(strstr(a.reason, "warming up there"));
                /* Decided once: the speedup on 16 cores does not move it again. */
                a.cores = a.want_cores;
                feed(f, 1, cases[i].p, 0, a.cores, 2);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                assert_int_equal(a.want_cores, cases[i].want);
        }
}

/* From a quarter of a wide range, the ladder probes the half, then the double, and climbs
 * while the measured score improves: an optimum at 40 of 64 cores is found from 16. */
static void ladder_climbs_from_a_quarter(void **state)
{
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 16,
                                  .learn_at.decided = true,
                                  .learn_at.cores = 16};

        search_on_quadratic(*state, &a, 40, (const unsigned[]){8, 32, 64}, 12);
}

/* ESTIMA extrapolates upwards: an app measured on 8-16 cores whose time does not fall with
 * them (so its EDP falls with the power of fewer cores) is not sent below 8 by the
 * extrapolation's kernels, which nothing constrains there; the measured search probes the
 * next count down instead. */
/* A point the search measured at CORES (top clock): its EDP rate and eight scaling samples. */
static void measured_at(struct allocator_app *a, const struct allocator_ctx *ctx, unsigned cores,
                        double ips, double w)
{
        add_point(a, cores, 0, w / (ips * ips), ctx->decision);
        for (unsigned k = 0; k < 8; k++)
                scaling_add(&a->scaling, cores, 0, ips, w, 8);
}

static void extrapolation_does_not_jump_below_the_measured_counts(void **state)
{
        static const unsigned counts[] = {8, 12, 14, 16};
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 8,
                                  .phase = ALLOCATOR_PHASE_SEARCH,
                                  .search.step_cores = 1,
                                  .search.step_freqs = 1};
        struct allocator_ctx ctx;

        ctx = measured_ctx(f, 64);
        for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
                measured_at(&a, &ctx, counts[i], 1e9, 50 + 5.0 * counts[i]);
        }
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        if (a.want_cores < 7 || strstr(a.reason, "extrapolated"))
                fail_msg("want %u cores: %s", a.want_cores, a.reason);
        assert_int_equal(a.want_cores, 7);
}

/* Alone, a probe whose first counted sample measures far worse than the best point (over
 * ALLOCATOR_EARLY_WORSE) is complete at once and asks for a decision; the near probe of
 * observe_skips_the_change_and_asks_to_decide takes its three samples. */
static void far_worse_probe_is_complete_after_one_sample(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        ctx = ctx_for(f, N_CPUS);
        ctx.pm = NULL;
        ctx.power_measured = true;
        ctx.probe_samples = 3;
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
        feed_observed(f, &ctx, &a, 0.9, 30);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_true(a.want_cores < N_CPUS);
        a.cores = a.want_cores;
        /* At the probe the app runs nearly serially: its rate falls by half. */
        feed_observed(f, &ctx, &a, 0.05, 1); /* skipped: it may straddle the move */
        assert_false(allocator_wants_decision(&ctx, &a));
        feed_observed(f, &ctx, &a, 0.05, 1);
        assert_int_equal(a.search.early_rejects, 1);
        assert_int_equal(hist_samples(&a, a.cores), 3);
        assert_true(allocator_wants_decision(&ctx, &a));
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, N_CPUS);
        /* Sharing the machine, the others move its score: the probe takes its samples. */
        a.cores = N_CPUS - 2;
        ctx.n_apps = 2;
        feed_observed(f, &ctx, &a, 0.05, 2);
        assert_int_equal(a.search.early_rejects, 1);
        assert_false(allocator_wants_decision(&ctx, &a));
}

/* Nor above twice the largest measured count, where ESTIMA is not validated: an app that
 * scales perfectly on 4-8 cores is sent to 16, not 64, and the search keeps its finer step. */
static void extrapolation_jumps_at_most_to_twice_the_measured_counts(void **state)
{
        static const unsigned counts[] = {4, 6, 8};
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 8,
                                  .phase = ALLOCATOR_PHASE_SEARCH,
                                  .search.step_cores = 1,
                                  .search.step_freqs = 1};
        struct allocator_ctx ctx;

        ctx = measured_ctx(f, 64);
        for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
                double ips = 1e8 * counts[i];

                measured_at(&a, &ctx, counts[i], ips, 50 + 5.0 * counts[i]);
        }
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        if (a.want_cores != 16 || !strstr(a.reason, "extrapolated"))
                fail_msg("want %u cores: %s", a.want_cores, a.reason);
        assert_int_equal(a.search.step_cores, 1);
}

/* An SP-like app whose predicted time flattens (Amdahl P 0.7 measured at 4-8 cores: speedup
 * 2.91 at 16 cores, 2.86 at 14, 2.58 at 8), at a constant 50 W, is sent to the knee of its
 * predicted EDP, the fewest cores within 5 % of the best (14), not to the argmin of the flat
 * curve (16, 3.7 % better). */
static void extrapolation_jumps_to_the_knee_not_the_argmin(void **state)
{
        static const unsigned counts[] = {4, 6, 8};
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 8,
                                  .phase = ALLOCATOR_PHASE_SEARCH,
                                  .search.step_cores = 1,
                                  .search.step_freqs = 1};
        struct allocator_ctx ctx;

        ctx = measured_ctx(f, 64);
        for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
                measured_at(&a, &ctx, counts[i], 1e9 / (0.3 + 0.7 / counts[i]), 50);
        }
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        if (a.want_cores != 14 || !strstr(a.reason, "extrapolated"))
                fail_msg("want %u cores: %s", a.want_cores, a.reason);
        assert_int_equal(a.predicted_best_cores, 14);
}

/* A model jump that measured worse than a measured point shows the model is wrong for this
 * app: the allocator does not follow it to the next unmeasured point it prefers. */
static void refuted_model_is_not_followed(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.2, 0, N_CPUS, 30);
        ctx = ctx_for(f, N_CPUS);
        /* The model (P = 0.2) prefers 1 core; it sent the app to 2 before, which measured
         * worse than N_CPUS. */
        add_point(&a, N_CPUS, 0, 5, ctx.decision);
        add_point(&a, 2, 0, 9, ctx.decision);
        a.model.cores = 2;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_true(a.model.refuted);
        assert_int_not_equal(a.want_cores, 1);
        assert_null(strstr(a.reason, "model"));
        /* Unrefuted, and with no measurement the model contradicts, it is followed. */
        a.n_hist = 1;
        a.model.cores = 0;
        a.model.refuted = false;
        a.cores = N_CPUS;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 1);
        assert_non_null(strstr(a.reason, "model"));
}

/* A model that ranks two measured points against their measurements is wrong for this app
 * before it has sent the app anywhere: it makes no jump. */
static void contradicted_model_is_not_followed(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.2, 0, N_CPUS, 30);
        ctx = ctx_for(f, N_CPUS);
        /* The model (P = 0.2, 10 W a core) prefers 4 cores to 8; measured, 8 is better. */
        add_point(&a, N_CPUS, 0, 5, ctx.decision);
        add_point(&a, 4, 0, 9, ctx.decision);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_true(a.model.refuted);
        assert_null(strstr(a.reason, "model"));
        assert_int_not_equal(a.want_cores, 1);
}

/* A direction that measured worse from a nearby point is not probed again from the new best
 * point: fewer cores lost at 3000 MHz, so at 2000 MHz the search tries a lower frequency
 * first. Without that measurement it tries fewer cores first. */
static void failed_direction_is_not_probed_again(void **state)
{
        static const unsigned freqs[] = {1000000, 2000000, 3000000};
        struct fixture *f = *state;
        struct allocator_ctx ctx;

        ctx = measured_ctx(f, N_CPUS);
        ctx.freqs_khz = freqs;
        ctx.n_freqs = ARRAY_SIZE(freqs);
        for (int with_failure = 1; with_failure >= 0; with_failure--) {
                struct allocator_app a = {.id = 1,
                                          .policy = policy_builtin(OBJECTIVE_EDP),
                                          .cores = N_CPUS,
                                          .freq_khz = 2000000,
                                          .phase = ALLOCATOR_PHASE_SEARCH,
                                          .search.step_cores = 1,
                                          .search.step_freqs = 1};

                add_point(&a, N_CPUS, 3000000, 5, ctx.decision);
                add_point(&a, N_CPUS, 2000000, 4, ctx.decision);
                if (with_failure)
                        add_point(&a, N_CPUS - 1, 3000000, 6, ctx.decision);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                assert_true(a.changed);
                if (with_failure && (a.want_cores != N_CPUS || a.want_freq_khz != 1000000))
                        fail_msg("probed %u cores %u kHz after fewer cores failed close by",
                                 a.want_cores, a.want_freq_khz);
                if (!with_failure && (a.want_cores != N_CPUS - 1 || a.want_freq_khz != 2000000))
                        fail_msg("probed %u cores %u kHz, expected fewer cores first", a.want_cores,
                                 a.want_freq_khz);
        }
}

/* A move that measured far worse (20%, over ALLOCATOR_FAR_WORSE) holds at any frequency, not
 * only close by: at 9 P-states apart, fewer cores is not probed again after losing 20%, and is
 * probed again after losing 10% (the coupling of cores and clock may undo that much). */
static void far_worse_move_is_not_probed_again_anywhere(void **state)
{
        static const unsigned freqs[] = {1000000, 1100000, 1200000, 1300000, 1400000,
                                         1500000, 1600000, 1700000, 1800000, 1900000};
        struct fixture *f = *state;
        struct allocator_ctx ctx;

        ctx = measured_ctx(f, N_CPUS);
        ctx.freqs_khz = freqs;
        ctx.n_freqs = ARRAY_SIZE(freqs);
        for (int far_worse = 1; far_worse >= 0; far_worse--) {
                struct allocator_app a = {.id = 1,
                                          .policy = policy_builtin(OBJECTIVE_EDP),
                                          .cores = N_CPUS,
                                          .freq_khz = 1000000,
                                          .phase = ALLOCATOR_PHASE_SEARCH,
                                          .search.step_cores = 1,
                                          .search.step_freqs = 1};

                add_point(&a, N_CPUS, 1900000, 5, ctx.decision);
                add_point(&a, N_CPUS - 1, 1900000, far_worse ? 6 : 5.5, ctx.decision);
                add_point(&a, N_CPUS, 1000000, 4, ctx.decision);
                add_point(&a, N_CPUS, 1100000, 4.5, ctx.decision);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (far_worse && a.phase != ALLOCATOR_PHASE_SETTLED)
                        fail_msg("probed %u cores %u kHz after fewer cores lost 20%%", a.want_cores,
                                 a.want_freq_khz);
                if (!far_worse && (a.want_cores != N_CPUS - 1 || a.want_freq_khz != 1000000))
                        fail_msg("probed %u cores %u kHz, expected fewer cores (%s)", a.want_cores,
                                 a.want_freq_khz, a.reason);
        }
}

/* Back at a point measured before, the app measures differently: it has changed (a phase the
 * estimator need not see), so the search restarts from that point alone. The same figure
 * keeps every point. */
static void revisit_that_measures_differently_restarts_the_search(void **state)
{
        for (int changed = 0; changed <= 1; changed++) {
                struct fixture *f = *state;
                struct allocator_app a = {
                    .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS};
                struct allocator_ctx ctx;

                fixture_reset(f);
                f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
                estimator_app_add(f->est, 1);
                ctx = ctx_for(f, N_CPUS);
                ctx.pm = NULL;
                ctx.power_measured = true;
                a.phase = ALLOCATOR_PHASE_SEARCH;
                feed_observed(f, &ctx, &a, 0.9, 4);
                a.cores = 4;
                feed_observed(f, &ctx, &a, 0.9, 4);
                assert_int_equal(a.n_hist, 2);
                a.cores = N_CPUS;
                /* P = 0.2 on 8 cores: a far worse EDP rate than P = 0.9 had there. */
                feed_observed(f, &ctx, &a, changed ? 0.2 : 0.9, 4);
                if (changed) {
                        assert_int_equal(a.search.drifts, 1);
                        assert_int_equal(a.n_hist, 1);
                        assert_int_equal(a.hist[0].cores, N_CPUS);
                } else {
                        assert_int_equal(a.search.drifts, 0);
                        assert_int_equal(a.n_hist, 2);
                }
        }
}

/* An app whose frequency domain is shared with another app's CPUs cannot move its own
 * frequency: with its core moves exhausted it holds, where alone it would probe a frequency. */
static void shared_domain_app_searches_cores_only(void **state)
{
        static const unsigned freqs[] = {1000000, 2000000, 3000000};
        struct fixture *f = *state;
        struct allocator_ctx ctx;

        ctx = measured_ctx(f, N_CPUS);
        ctx.freqs_khz = freqs;
        ctx.n_freqs = ARRAY_SIZE(freqs);
        for (int shared = 0; shared <= 1; shared++) {
                struct allocator_app a = {.id = 1,
                                          .policy = policy_builtin(OBJECTIVE_EDP),
                                          .cores = N_CPUS,
                                          .freq_khz = 3000000,
                                          .freq_shared = shared,
                                          .phase = ALLOCATOR_PHASE_SEARCH,
                                          .search.step_cores = 1,
                                          .search.step_freqs = 1};

                add_point(&a, N_CPUS, 3000000, 4, ctx.decision);
                add_point(&a, N_CPUS - 1, 3000000, 5, ctx.decision);
                assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
                if (shared && (a.changed || a.want_freq_khz != 3000000))
                        fail_msg("shared domain: asked for %u cores %u kHz (%s)", a.want_cores,
                                 a.want_freq_khz, a.reason);
                if (!shared && a.want_freq_khz != 2000000)
                        fail_msg("own domain: asked for %u kHz, expected a lower frequency probe",
                                 a.want_freq_khz);
        }
}

/* A probe for more cores than sharing leaves the app is trimmed to its reserve and remembered
 * as denied: the next decision does not ask for it again. */
static void probe_denied_by_sharing_is_not_asked_again(void **state)
{
        struct fixture *f = *state;
        struct allocator_app apps[2] = {
            {.id = 1,
             .policy = policy_builtin(OBJECTIVE_EDP),
             .cores = 4,
             .phase = ALLOCATOR_PHASE_SEARCH,
             .search.step_cores = 1},
            {.id = 2, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 4},
        };
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2); /* learning: wants every CPU */
        feed(f, 1, 0.5, 0, 4, 30);
        ctx = ctx_for(f, N_CPUS);
        ctx.pm = NULL;
        ctx.power_measured = true;
        ctx.n_apps = 2;
        add_point(&apps[0], 4, 0, 5, ctx.decision);
        add_point(&apps[0], 3, 0, 6, ctx.decision);
        assert_int_equal(allocator_decide(&ctx, apps, 2), 0);
        assert_int_equal(apps[0].want_cores, 4);
        assert_int_equal(apps[0].denied.cores, 5);
        assert_int_equal(apps[0].want_cores + apps[1].want_cores, N_CPUS);
        ctx.decision++;
        assert_int_equal(allocator_decide(&ctx, apps, 2), 0);
        /* Asked again, it would be trimmed again ("sharing ..."); not asked, the search has
         * nothing left to probe and holds. */
        if (apps[0].want_cores > 4 || apps[0].phase != ALLOCATOR_PHASE_SETTLED)
                fail_msg("asked again for more cores: wants %u (%s)", apps[0].want_cores,
                         apps[0].reason);
}

/* A denial is about the apps beside it: once CPUs are held by no app (the other app left),
 * the denied probe is asked for again at once, not a minute later. */
static void denial_lapses_when_cpus_are_free(void **state)
{
        struct fixture *f = *state;
        struct allocator_app apps[2] = {
            {.id = 1,
             .policy = policy_builtin(OBJECTIVE_EDP),
             .cores = 4,
             .phase = ALLOCATOR_PHASE_SEARCH,
             .search.step_cores = 1},
            {.id = 2, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 4},
        };
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2); /* learning: wants every CPU */
        feed(f, 1, 0.5, 0, 4, 30);
        ctx = ctx_for(f, N_CPUS);
        ctx.pm = NULL;
        ctx.power_measured = true;
        ctx.n_apps = 2;
        add_point(&apps[0], 4, 0, 5, ctx.decision);
        add_point(&apps[0], 3, 0, 6, ctx.decision);
        assert_int_equal(allocator_decide(&ctx, apps, 2), 0);
        assert_int_equal(apps[0].denied.cores, 5);
        assert_true(apps[0].denied.by_share);
        /* The other app exits: 4 of the 8 CPUs are free. */
        ctx.decision++;
        ctx.n_apps = 1;
        assert_int_equal(allocator_decide(&ctx, apps, 1), 0);
        if (apps[0].want_cores != 5)
                fail_msg("alone with free CPUs, wants %u, not the denied 5 (%s)",
                         apps[0].want_cores, apps[0].reason);
}

/* A settled search (steps of one core) that has nothing measured, sent far by the model's
 * jump: its steps become a quarter of the jump, so that a refuted jump is searched back in
 * halvings, not one core at a time. */
static void far_jump_with_nothing_measured_widens_the_steps(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 10,
                                  .phase = ALLOCATOR_PHASE_SETTLED,
                                  .search.step_cores = 1,
                                  .search.step_freqs = 1,
                                  .learn_at.decided = true,
                                  .learn_at.cores = 10};
        struct allocator_ctx ctx;

        synth_sample_free(&f->s);
        assert_int_equal(synth_sample_alloc(&f->s, 64, 0), 0);
        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY;
        estimator_app_add(f->est, 1);
        feed(f, 1, 0.99, 0, 10, 30);
        ctx = ctx_for(f, 64);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        if (a.want_cores < 30 || !strstr(a.reason, "model"))
                fail_msg("no far model jump: wants %u (%s)", a.want_cores, a.reason);
        if (a.search.step_cores < (a.want_cores - 10) / 4)
                fail_msg("jumped %u -> %u with steps of %u core(s)", 10, a.want_cores,
                         a.search.step_cores);
}

/* Cores that do not fit go where the model says they gain most: of two settled apps wanting
 * more than the machine, the scalable one keeps more (by cores per weight they would be
 * halved). */
static void shared_cores_go_where_the_model_gains_most(void **state)
{
        struct fixture *f = *state;
        /* Holding 2 each: the cores beyond are not taken from anyone. */
        struct allocator_app a[2] = {
            {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2},
            {.id = 2, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 2},
        };
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2);
        feed(f, 1, 0.99, 0, 4, 30);
        feed(f, 2, 0.9, 4, 4, 30);
        ctx = ctx_for(f, N_CPUS);
        ctx.n_apps = 2;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[0].want_cores + a[1].want_cores, N_CPUS);
        if (!(a[0].want_cores > a[1].want_cores))
                fail_msg("P 0.99 gets %u cores, P 0.9 %u (%s)", a[0].want_cores, a[1].want_cores,
                         a[1].reason);
}

/* Weight is an app's share of contended cores: of two settled apps alike but for their weight
 * that want more than the machine, the heavier keeps more. The partition trims the app whose
 * loss, times its weight, is least: a loss to a heavier app counts for more (divided by it,
 * the heavier app was trimmed first and kept fewer). */
static void shared_cores_follow_weight_among_settled_apps(void **state)
{
        struct policy heavy, light;
        struct allocator_app a[2];
        /* Holding 2 each: the cores beyond are not taken from anyone. */
        struct allocator_ctx ctx = weighted_pair(*state, OBJECTIVE_EDP, 2, true, &heavy, &light, a);

        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_int_equal(a[0].want_cores + a[1].want_cores, N_CPUS);
        if (!(a[0].want_cores > a[1].want_cores))
                fail_msg("weight 3 gets %u cores, weight 1 %u (%s)", a[0].want_cores,
                         a[1].want_cores, a[0].reason);
}

/* Learners get CPUs of their own when the others leave two each; time-share when not. */
static void learners_get_cpus_of_their_own_when_there_is_room(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2] = {
            {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 8},
            {.id = 2, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 8},
        };
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2);
        ctx = ctx_for(f, N_CPUS);
        ctx.n_apps = 2;
        ctx.learners_share = true;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        for (unsigned i = 0; i < 2; i++) {
                assert_false(a[i].shares_cpus);
                assert_int_equal(a[i].want_cores, N_CPUS / 2);
        }
        ctx.n_cpus = 3; /* 1 + 2: one of them would learn on one CPU */
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_true(a[0].shares_cpus && a[1].shares_cpus);
}

/* A learner arriving when a settled app holds every CPU: the settled app wants them all, but
 * every app can have two CPUs of its own, so the partition makes room for the learner
 * instead of letting it time-share the settled app's CPUs. */
static void learner_gets_room_when_every_app_can_have_two(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2] = {
            {.id = 1,
             .policy = policy_builtin(OBJECTIVE_EDP),
             .cores = N_CPUS,
             .phase = ALLOCATOR_PHASE_SEARCH,
             .search.step_cores = 1},
            {.id = 2, .policy = policy_builtin(OBJECTIVE_EDP), .cores = N_CPUS},
        };
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2);
        feed(f, 1, 0.99, 0, N_CPUS, 30); /* the model wants every CPU for it */
        ctx = ctx_for(f, N_CPUS);
        ctx.n_apps = 2;
        ctx.learners_share = true;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_false(a[1].shares_cpus);
        assert_true(a[1].want_cores >= 2);
        assert_int_equal(a[0].want_cores + a[1].want_cores, N_CPUS);
        /* Three CPUs for two apps: one would learn on one CPU, so it time-shares. */
        ctx.n_cpus = 3;
        a[0].cores = 3;
        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
        assert_true(a[1].shares_cpus);
}

/* A returning app starts at its remembered configuration, before any estimate, and stays when
 * it measures as remembered; measured far off, it searches from there. */
static void returning_app_starts_at_its_remembered_best(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = N_CPUS,
                                  .hint.cores = 3,
                                  .hint.score = 5};
        struct allocator_app b;
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        ctx = ctx_for(f, N_CPUS);
        ctx.pm = NULL;
        ctx.power_measured = true;
        assert_true(allocator_wants_decision(&ctx, &a)); /* at once, no estimate needed */
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 3);
        assert_true(a.from_history && a.phase != ALLOCATOR_PHASE_LEARN);
        assert_non_null(strstr(a.reason, "from history"));
        b = a;
        /* Measured within 10% of the remembered score: verified, it stays. */
        a.cores = 3;
        ctx.decision++;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 3);
        assert_non_null(strstr(a.reason, "measuring it"));
        add_point(&a, 3, 0, 5.2, ctx.decision);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 3);
        assert_int_equal(a.phase, ALLOCATOR_PHASE_SETTLED);
        assert_non_null(strstr(a.reason, "verified"));
        /* Measured 60% worse: the hint is spent and the search goes on from here. */
        b.cores = 3;
        add_point(&b, 3, 0, 8, ctx.decision);
        assert_int_equal(allocator_decide(&ctx, &b, 1), 0);
        assert_non_null(strstr(b.reason, "off the remembered score"));
        assert_int_equal(b.hint.cores, 0);
        assert_int_equal(allocator_decide(&ctx, &b, 1), 0);
        assert_non_null(strstr(b.reason, "exploring"));
        /* Bounds that no longer allow it: it learns as a new app would. */
        b = (struct allocator_app){.id = 1,
                                   .policy = policy_builtin(OBJECTIVE_EDP),
                                   .cores = N_CPUS,
                                   .hint.cores = N_CPUS + 1,
                                   .hint.score = 5};
        assert_int_equal(allocator_decide(&ctx, &b, 1), 0);
        assert_true(b.phase == ALLOCATOR_PHASE_LEARN && !b.from_history);
}

/* What a run teaches the history: its best fresh point, or its first phase's best. */
static void best_is_the_first_phases_when_it_changed(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP)};
        struct allocator_point p;
        struct allocator_ctx ctx;

        ctx = ctx_for(f, N_CPUS);
        assert_false(allocator_best(&ctx, &a, &p));
        add_point(&a, 4, 0, 5, ctx.decision);
        add_point(&a, 2, 0, 3, ctx.decision);
        add_point(&a, 1, 0, 2, ctx.decision - 61); /* stale */
        assert_true(allocator_best(&ctx, &a, &p));
        assert_int_equal(p.cores, 2);
        a.first_phase.best = a.hist[0];
        a.first_phase.saved = true;
        assert_true(allocator_best(&ctx, &a, &p));
        assert_int_equal(p.cores, 4);
}

/* An app that changes phase while it still learns has no searched first phase's best: its
 * later phase's best is no start for a returning app, which starts in the first. What it
 * measured as it learned (at the count it learned at) is its first phase's, and is the start. */
static void no_best_when_it_changed_phase_while_learning(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .phase = ALLOCATOR_PHASE_LEARN};
        struct allocator_point p;
        struct allocator_ctx ctx = ctx_for(f, N_CPUS);

        /* Nothing fresh measured as it learned: nothing to start at. */
        add_point(&a, 4, 0, 5, ctx.decision - 61);
        alloc_phase_reset(&ctx, &a);
        assert_true(a.first_phase.lost);
        assert_false(a.first_phase.saved);
        a.phase = ALLOCATOR_PHASE_SETTLED;
        add_point(&a, 2, 0, 3, ctx.decision);
        assert_false(allocator_best(&ctx, &a, &p));
        /* Measured at its learn count: that point, not the later phase's better one. */
        a = (struct allocator_app){
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .phase = ALLOCATOR_PHASE_LEARN};
        add_point(&a, 8, 0, 5, ctx.decision);
        alloc_phase_reset(&ctx, &a);
        assert_true(a.first_phase.lost);
        assert_false(a.first_phase.saved);
        a.phase = ALLOCATOR_PHASE_SETTLED;
        add_point(&a, 2, 0, 3, ctx.decision);
        assert_true(allocator_best(&ctx, &a, &p));
        assert_int_equal(p.cores, 8);
        assert_true(p.score == 5);
        /* Searched when it changes phase: its first phase's best is kept. */
        a = (struct allocator_app){
            .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .phase = ALLOCATOR_PHASE_SEARCH};
        add_point(&a, 4, 0, 5, ctx.decision);
        alloc_phase_reset(&ctx, &a);
        assert_false(a.first_phase.lost);
        assert_true(allocator_best(&ctx, &a, &p));
        assert_int_equal(p.cores, 4);
}

/* Sharing the machine, an app at a probe not measured yet waits for the measurement rather
 * than follow the model elsewhere (which sharing trimmed back, probe after probe). */
static void probe_is_measured_before_the_model_moves_it(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 1,
                                  .phase = ALLOCATOR_PHASE_SEARCH,
                                  .search.step_cores = 1,
                                  .search.probe_cores = 1};
        struct allocator_ctx ctx;
        struct estimator_config cfg = {.delta_i_rate = NAN};

        /* The estimator attributes power by the model: the probe's score can be measured. */
        estimator_free(f->est);
        cfg.power = &f->pm;
        f->est = estimator_new(&cfg);
        assert_non_null(f->est);
        estimator_app_add(f->est, 1);
        feed(f, 1, 0.95, 0, 4, 30); /* the model wants every core */
        ctx = ctx_for(f, N_CPUS);
        ctx.n_apps = 2;
        add_point(&a, 4, 0, 5, ctx.decision);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 1);
        assert_non_null(strstr(a.reason, "measuring this configuration"));
        /* Not at a probe of its own, the model moves it. */
        a.search.probe_cores = 0;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_true(a.want_cores > 1);
}

/* Sharing the machine, a probe begun alone whose score can no longer be measured (no power
 * of its own: the estimator attributes none) is abandoned for the best measured point, and
 * not asked for again while that is fresh. */
static void unmeasurable_probe_is_abandoned_while_sharing(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1,
                                  .policy = policy_builtin(OBJECTIVE_EDP),
                                  .cores = 1,
                                  .phase = ALLOCATOR_PHASE_SEARCH,
                                  .search.step_cores = 1,
                                  .search.probe_cores = 1};
        struct allocator_ctx ctx;

        estimator_app_add(f->est, 1);
        feed(f, 1, 0.95, 0, 1, 30);
        ctx = ctx_for(f, N_CPUS);
        ctx.n_apps = 2;
        add_point(&a, 4, 0, 5, ctx.decision);
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_int_equal(a.want_cores, 4);
        assert_non_null(strstr(a.reason, "abandoned"));
        assert_int_equal(a.denied.cores, 1);
        /* Alone, the package's energy measures it: no abandon. */
        a = (struct allocator_app){.id = 1,
                                   .policy = policy_builtin(OBJECTIVE_EDP),
                                   .cores = 1,
                                   .phase = ALLOCATOR_PHASE_SEARCH,
                                   .search.step_cores = 1,
                                   .search.probe_cores = 1};
        add_point(&a, 4, 0, 5, ctx.decision);
        ctx.n_apps = 1;
        assert_int_equal(allocator_decide(&ctx, &a, 1), 0);
        assert_null(strstr(a.reason, "abandoned"));
}

/* An app whose threads spin while they wait: its CPUs are busy beyond its speedup. The
 * allocator measures the share of Amdahl's idle cores that run (busy - speedup over N -
 * speedup), and not from a CPU another app time-shares. */
static void spinning_share_is_measured_from_busy_beyond_the_speedup(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a = {.id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 8};
        struct synth_app s = {
            .p = 0.5, .ipc_ref = 1, .freq_ref_khz = 2000000, .n_cores = 8, .freq_khz = 2000000};
        struct allocator_ctx ctx;
        double speedup = 1 / (0.5 + 0.5 / 8);

        for (int spin = 0; spin < 2; spin++) {
                fixture_reset(f);
                f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY;
                estimator_app_add(f->est, 1);
                ctx = ctx_for(f, N_CPUS);
                a = (struct allocator_app){
                    .id = 1, .policy = policy_builtin(OBJECTIVE_EDP), .cores = 8};
                for (unsigned i = 0; i < 6; i++) {
                        struct estimator_app_view v = synth_view(1, &s, -1);

                        synth_begin(&f->m, &f->s, INTERVAL_NS);
                        synth_run(&f->m, &f->s, &s, -1);
                        /* Spinning: the waiting threads' CPUs run for 60% of what Amdahl
                         * leaves idle, retiring nothing that counts. */
                        for (unsigned c = 1; spin && c < 8; c++)
                                f->s.cpu[c].busy_ns +=
                                    (uint64_t)(0.6 * (INTERVAL_NS - f->s.cpu[c].busy_ns));
                        synth_end(&f->m, &f->s, false);
                        assert_int_equal(estimator_update(f->est, &f->s, &v, 1), 0);
                        allocator_observe(&ctx, &a);
                }
                assert_true(a.spin.samples > 0);
                if (spin)
                        assert_true(fabs(a.spin.share - 0.6 * (7 - (speedup - 1)) / (8 - speedup)) <
                                    0.03);
                else
                        assert_true(a.spin.share < 0.02);
        }
}

/* Two apps alike but for spinning, holding 2 cores each (the cores beyond are not taken from
 * anyone): the model charges the spinner's running idle cores a busy core's power, so one
 * more core is worth less to it, and the partition gives it fewer, saying why. Without the
 * share measured they are split evenly. */
static void spinning_app_gives_up_cores_first(void **state)
{
        struct fixture *f = *state;
        struct allocator_app a[2];
        struct allocator_ctx ctx;
        struct power_decl d = {0};
        struct model_power pm;

        estimator_app_add(f->est, 1);
        estimator_app_add(f->est, 2);
        feed(f, 1, 0.9, 0, 4, 30);
        feed(f, 2, 0.9, 4, 4, 30);
        /* 12 CPUs to share (the counters came from 8). */
        ctx = ctx_for(f, 12);
        ctx.n_apps = 2;
        /* A held idle core draws a tenth of a busy one's power. */
        power_decl_key(&d, "static_w", "20");
        power_decl_key(&d, "core_w", "10");
        power_decl_key(&d, "idle_w", "1");
        assert_int_equal(power_decl_to_model(&d, 1, &pm), 0);
        ctx.pm = &pm;
        for (int spin = 0; spin < 2; spin++) {
                for (unsigned i = 0; i < 2; i++)
                        a[i] = (struct allocator_app){.id = i + 1,
                                                      .policy = policy_builtin(OBJECTIVE_EDP),
                                                      .cores = 2,
                                                      .phase = ALLOCATOR_PHASE_SEARCH,
                                                      .search.step_cores = 1};
                a[0].spin.samples = spin ? 8 : 0;
                a[0].spin.share = spin ? 0.8 : 0;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                assert_int_equal(a[0].want_cores + a[1].want_cores, 12);
                if (!spin) {
                        assert_int_equal(a[0].want_cores, a[1].want_cores);
                        continue;
                }
                if (!(a[0].want_cores < a[1].want_cores))
                        fail_msg("spinning app %u cores, the other %u (%s)", a[0].want_cores,
                                 a[1].want_cores, a[0].reason);
                assert_non_null(strstr(a[0].reason, "spinning"));
        }
}

/* Two apps at 4 cores and 2000 MHz in one frequency domain, searching: where a domain of its own
 * is decided. */
static void two_apps_at_a_shared_clock(struct allocator_app a[2], const struct policy *pol)
{
        for (unsigned i = 0; i < 2; i++)
                a[i] = (struct allocator_app){.id = i + 1,
                                              .policy = pol,
                                              .cores = 4,
                                              .freq_khz = 2000000,
                                              .freq_shared = true,
                                              .phase = ALLOCATOR_PHASE_SEARCH,
                                              .search.step_cores = 1};
}

/* Eight CPUs in domains of `dom` (0: one domain) at 1.0, 1.5 and 2.0 GHz, two apps, model pm. */
static struct allocator_ctx two_domains_ctx(struct fixture *f, const struct model_power *pm,
                                            unsigned dom)
{
        static const unsigned freqs[] = {1000000, 1500000, 2000000};
        struct allocator_ctx ctx = ctx_for(f, 8);

        ctx.n_apps = 2;
        ctx.pm = pm;
        ctx.freqs_khz = freqs;
        ctx.n_freqs = 3;
        ctx.domain_cpus = dom;
        return ctx;
}

/* Two apps on a machine of two 4-CPU frequency domains, each on one package's worth of CPUs
 * but sharing a domain's clock: the one whose cycles mostly stall is given a domain of its own
 * at a lower clock (the model, its time scaled by the stalled share and its power bounded by
 * the clock, says so), the other shares the rest; with no stalls, or one domain, nothing
 * changes. Nor for a spinner whose score cannot be measured while it shares (no power of its
 * own): its spin reads as stalls, and nothing would refute the lower clock; with the model
 * declared (its power charged), it is granted. */
static void memory_bound_app_gets_a_frequency_domain_of_its_own(void **state)
{

        for (int v = 0; v < 6; v++) /* v: plain, spinning, spinning measured; stalls */
                for (unsigned dom = 0; dom <= 4; dom += 4) {
                        int kind = v / 2, stalls = v % 2;
                        struct fixture *f = *state;
                        struct allocator_app a[2];
                        struct allocator_ctx ctx;
                        struct model_power pm = {.static_w = 20};
                        struct policy pol = *policy_builtin(OBJECTIVE_EDP);

                        pol.max_cores = 4; /* each wants no more than a domain */
                        assert_int_equal(model_power_set_point(&pm, 2000000, 10, 1), 0);
                        fixture_reset(f);
                        if (kind == 2) {
                                /* The model declared: it charges each app its own power. */
                                estimator_free(f->est);
                                f->est = estimator_new(
                                    &(struct estimator_config){.delta_i_rate = NAN, .power = &pm});
                                assert_non_null(f->est);
                        }
                        estimator_app_add(f->est, 1);
                        estimator_app_add(f->est, 2);
                        for (int k = 0; k < 30; k++) {
                                feed_stalled(f, 1, 0, stalls ? 0.8 : 0, 1);
                                feed_stalled(f, 2, 4, 0, 1);
                        }
                        ctx = two_domains_ctx(f, &pm, dom);
                        two_apps_at_a_shared_clock(a, &pol);
                        a[0].spin.samples = kind ? 8 : 0;
                        a[0].spin.share = kind ? 0.4 : 0;
                        assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                        assert_false(a[1].own_domain);
                        if (!stalls || !dom || kind == 1) {
                                assert_false(a[0].own_domain);
                                assert_null(strstr(a[0].reason, "a frequency domain of its own"));
                                continue;
                        }
                        if (!a[0].own_domain)
                                fail_msg("no domain of its own: %s", a[0].reason);
                        assert_true(a[0].want_freq_khz < 2000000);
                        assert_true(a[0].want_cores <= 4 && a[1].want_cores <= 4);
                        assert_non_null(strstr(a[0].reason, "a frequency domain of its own"));
                        assert_non_null(strstr(a[0].reason, "stall"));
                }
}

/* Counters of app id on cores [first, first + 4) at khz, 80 % of every core's cycles stalled,
 * its time half memory's (it hardly follows the clock). */
static void feed_stalled_at(struct fixture *f, uint64_t id, unsigned first, unsigned khz,
                            unsigned intervals)
{
        feed_stalled_at_clock(f, id, first, 0.8, 0.5, khz, intervals);
}

/* A domain of its own is held to measure the app's clock against the one it ran at before.
 * Where the estimator's figures at that other clock are gone by the decision after the grant
 * (its fit restarted: a cut of cores at the same decision shows as a phase), the sensitivity
 * can never be fitted while it stays at one clock in its domain: the domain goes back, the app
 * to the others' clock, where the fit gets its second one. Kept while the estimator still
 * holds both clocks, at the grant's own decision, and until an interval ran at the domain's
 * clock. (Seed 91015's a1, set 2's fifth runs:
 * held at 1600 MHz on one package for the whole run.) */
static void domain_whose_clock_cannot_be_learned_is_given_back(void **state)
{

        for (int forget = 0; forget < 2; forget++) {
                struct fixture *f = *state;
                struct allocator_app a[2];
                struct allocator_ctx ctx;
                struct model_power pm = {.static_w = 20};
                struct policy pol = *policy_builtin(OBJECTIVE_EDP);
                const struct estimate *e;
                unsigned khz;

                pol.max_cores = 4;
                fixture_reset(f);
                estimator_app_add(f->est, 1);
                estimator_app_add(f->est, 2);
                for (int k = 0; k < 30; k++) {
                        feed_stalled_at(f, 1, 0, 2000000, 1);
                        feed_stalled(f, 2, 4, 0, 1);
                }
                assert_int_equal(model_power_set_point(&pm, 2000000, 10, 1), 0);
                ctx = two_domains_ctx(f, &pm, 4);
                ctx.decision = 100;
                two_apps_at_a_shared_clock(a, &pol);
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (!a[0].own_domain)
                        fail_msg("no domain of its own: %s", a[0].reason);
                khz = a[0].want_freq_khz;
                assert_true(khz < 2000000);
                /* Its clock moves. Its own search is held at that clock (freq_shared), as
                 * one with nothing to measure or move is: what is held here is the domain's
                 * rule. An early decision at the grant's tick keeps the domain. */
                a[0].cores = a[0].want_cores;
                a[0].freq_khz = khz;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (!a[0].own_domain)
                        fail_msg("given back at the grant's decision: %s", a[0].reason);
                /* Nor at a later decision before an interval ran at that clock (the estimator
                 * has not seen it yet). */
                ctx.decision = 101;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (!a[0].own_domain)
                        fail_msg("given back before an interval at its clock: %s", a[0].reason);
                if (forget) {
                        /* Its fit restarted: nothing of the clock it ran at before. */
                        assert_int_equal(estimator_app_remove(f->est, 1), 0);
                        assert_int_equal(estimator_app_add(f->est, 1), 0);
                }
                for (int k = 0; k < 10; k++) {
                        feed_stalled_at(f, 1, 0, khz, 1);
                        feed_stalled(f, 2, 4, 0, 1);
                }
                e = estimator_get(f->est, 1);
                assert_non_null(e);
                assert_int_equal(!(e->known & ESTIMATE_MEM_FRACTION), forget);
                ctx.decision = 102;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (!forget) {
                        assert_null(strstr(a[0].reason, "not known"));
                        continue;
                }
                if (a[0].own_domain)
                        fail_msg("the domain is kept without a sensitivity: %s", a[0].reason);
                assert_int_equal(a[0].want_freq_khz, 2000000);
                assert_non_null(strstr(a[0].reason, "frequency sensitivity is not known"));
        }
}

/* Two apps whose cycles mostly stall sharing one frequency domain (one domain: none of its
 * own to give). The domain runs at the highest clock wanted there and each app's search keeps
 * the clock it runs at, so they choose it together: every app predicts a better score at a
 * lower clock, so it is tried there; held until an interval ran there; then, their frequency
 * sensitivities fitted from the two clocks, the clock is the model's by the sum of their
 * scores: kept low where their time is mostly memory's, back up where the stalled share
 * overstated it (what a spinner's spin does). Where a fit restarted and lacks a sensitivity,
 * the clock goes back and is not tried again. One app that does not stall: no trial. */
static void shared_domain_clock_is_chosen_by_its_apps(void **state)
{

        for (int v = 0; v < 4; v++) { /* v: learned, fits restarted, one app compute-bound,
                                       * learned overstated */
                struct fixture *f = *state;
                struct allocator_app a[2];
                struct allocator_ctx ctx;
                struct model_power pm = {.static_w = 20};
                struct policy pol = *policy_builtin(OBJECTIVE_EDP);
                unsigned khz;
                /* The stalled share 0.8; the memory share of the time 0.8, or 0.5 (v 3). */
                double mem = v == 3 ? 0.5 : 0.8;

                pol.max_cores = 4;
                fixture_reset(f);
                estimator_app_add(f->est, 1);
                estimator_app_add(f->est, 2);
                for (int k = 0; k < 30; k++) {
                        feed_stalled_at_clock(f, 1, 0, 0.8, mem, 2000000, 1);
                        if (v == 2)
                                feed_stalled(f, 2, 4, 0, 1);
                        else
                                feed_stalled_at_clock(f, 2, 4, 0.8, mem, 2000000, 1);
                }
                assert_int_equal(model_power_set_point(&pm, 2000000, 10, 1), 0);
                ctx = two_domains_ctx(f, &pm, 0);
                ctx.decision = 100;
                two_apps_at_a_shared_clock(a, &pol);
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                if (v == 2) {
                        for (unsigned i = 0; i < 2; i++)
                                if (a[i].want_freq_khz != 2000000)
                                        fail_msg("app %u tried at %u kHz: %s", i,
                                                 a[i].want_freq_khz, a[i].reason);
                        continue;
                }
                khz = a[0].want_freq_khz;
                if (!(khz < 2000000) || a[1].want_freq_khz != khz)
                        fail_msg("no lower clock tried: %u and %u kHz (%s)", khz,
                                 a[1].want_freq_khz, a[0].reason);
                assert_non_null(strstr(a[0].reason, "a trial"));
                /* The clock moves; kept at a decision before an interval ran there. */
                for (unsigned i = 0; i < 2; i++) {
                        a[i].cores = a[i].want_cores;
                        a[i].freq_khz = khz;
                }
                ctx.decision = 101;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                assert_int_equal(a[0].want_freq_khz, khz);
                assert_int_equal(a[1].want_freq_khz, khz);
                if (v == 1) {
                        /* Their fits restarted: nothing of the clock they ran at before. */
                        for (uint64_t id = 1; id <= 2; id++) {
                                assert_int_equal(estimator_app_remove(f->est, id), 0);
                                assert_int_equal(estimator_app_add(f->est, id), 0);
                        }
                }
                for (int k = 0; k < 10; k++) {
                        feed_stalled_at_clock(f, 1, 0, 0.8, mem, khz, 1);
                        feed_stalled_at_clock(f, 2, 4, 0.8, mem, khz, 1);
                }
                for (uint64_t id = 1; id <= 2; id++)
                        assert_int_equal(
                            !(estimator_get(f->est, id)->known & ESTIMATE_MEM_FRACTION), v == 1);
                ctx.decision = 102;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                for (unsigned i = 0; v != 1 && i < 2; i++) {
                        bool up = a[i].want_freq_khz == 2000000;

                        if (a[i].shared_clock.given_up || a[i].shared_clock.since ||
                            up != (v == 3) || a[i].want_freq_khz != a[0].want_freq_khz)
                                fail_msg("app %u at %u kHz: %s", i, a[i].want_freq_khz,
                                         a[i].reason);
                        if (up)
                                assert_non_null(strstr(a[i].reason, "sensitivities learned"));
                }
                if (v != 1)
                        continue;
                for (unsigned i = 0; i < 2; i++) {
                        assert_int_equal(a[i].want_freq_khz, 2000000);
                        assert_non_null(strstr(a[i].reason, "back to 2000 MHz"));
                        a[i].freq_khz = 2000000;
                }
                for (int k = 0; k < 10; k++) {
                        feed_stalled_at_clock(f, 1, 0, 0.8, mem, 2000000, 1);
                        feed_stalled_at_clock(f, 2, 4, 0.8, mem, 2000000, 1);
                }
                /* Not tried again, though the stalled shares still ask for it. */
                ctx.decision = 103;
                assert_int_equal(allocator_decide(&ctx, a, 2), 0);
                assert_int_equal(a[0].want_freq_khz, 2000000);
                assert_int_equal(a[1].want_freq_khz, 2000000);
        }
}

/* An app given a domain of its own is placed alone on a whole package, though it held CPUs of
 * both; the others are placed on the rest. */
static void domain_of_its_own_is_placed_alone(void **state)
{
        struct topology t;
        struct cpumask allowed, cur[2], out[2], pkg;
        struct allocator_app apps[2] = {{.want_cores = 3, .own_domain = true}, {.want_cores = 4}};
        char list[64];

        assert_int_equal(topology_synthetic(&t, 2, 4, 1), 0); /* CPUs 0-3 and 4-7 */
        cpumask_parse("0-7", &allowed);
        cpumask_parse("2-4", &cur[0]); /* straddles both packages */
        cpumask_parse("0-1,5-6", &cur[1]);
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), 0);
        assert_int_equal(cpumask_count(&out[0]), 3);
        topology_package_cpus(&t, 0, &pkg);
        assert_true(cpumask_subset(&out[0], &pkg)); /* where it had most: package 0 */
        cpumask_format(&out[1], list, sizeof(list));
        assert_string_equal(list, "4-7");
        apps[0].own_domain = false; /* before: it keeps what it holds */
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), 0);
        cpumask_format(&out[0], list, sizeof(list));
        assert_string_equal(list, "2-4");
        topology_free(&t);
}

static const struct CMUnitTest tests[] = {
    fixture_case(learning_runs_at_baseline),
    fixture_case(one_core_probe_when_contention_shows),
    fixture_case(no_one_core_probe_without_contention_or_leave),
    fixture_case(edp_follows_p),
    fixture_case(monitor_changes_nothing),
    fixture_case(bounds_are_honoured),
    fixture_case(competing_apps_share_by_weight),
    fixture_case(the_count_sharing_cut_an_app_to_is_marked),
    fixture_case(measurement_overrules_the_model),
    fixture_case(model_only_goes_to_the_models_best),
    fixture_case(measured_score_charges_a_share_of_static_power),
    cmocka_unit_test(placement_keeps_cpus_and_packages),
    fixture_case(observe_skips_the_change_and_asks_to_decide),
    fixture_case(far_worse_probe_is_complete_after_one_sample),
    fixture_case(search_settles_on_the_measured_best),
    fixture_case(p_settles_early_when_precise),
    fixture_case(search_halves_from_the_full_count),
    fixture_case(small_speedup_starts_on_a_quarter),
    fixture_case(ladder_climbs_from_a_quarter),
    fixture_case(extrapolation_does_not_jump_below_the_measured_counts),
    fixture_case(extrapolation_jumps_at_most_to_twice_the_measured_counts),
    fixture_case(extrapolation_jumps_to_the_knee_not_the_argmin),
    fixture_case(refuted_model_is_not_followed),
    fixture_case(contradicted_model_is_not_followed),
    fixture_case(failed_direction_is_not_probed_again),
    fixture_case(far_worse_move_is_not_probed_again_anywhere),
    fixture_case(revisit_that_measures_differently_restarts_the_search),
    fixture_case(shared_domain_app_searches_cores_only),
    fixture_case(probe_denied_by_sharing_is_not_asked_again),
    fixture_case(denial_lapses_when_cpus_are_free),
    fixture_case(far_jump_with_nothing_measured_widens_the_steps),
    fixture_case(learners_share_when_counted_apart),
    fixture_case(learned_app_is_partitioned_learner_shares),
    fixture_case(shared_cores_go_where_the_model_gains_most),
    fixture_case(shared_cores_follow_weight_among_settled_apps),
    fixture_case(learners_get_cpus_of_their_own_when_there_is_room),
    fixture_case(returning_app_starts_at_its_remembered_best),
    fixture_case(best_is_the_first_phases_when_it_changed),
    fixture_case(no_best_when_it_changed_phase_while_learning),
    fixture_case(probe_is_measured_before_the_model_moves_it),
    fixture_case(unmeasurable_probe_is_abandoned_while_sharing),
    fixture_case(spinning_share_is_measured_from_busy_beyond_the_speedup),
    fixture_case(spinning_app_gives_up_cores_first),
    fixture_case(learner_gets_room_when_every_app_can_have_two),
    fixture_case(memory_bound_app_gets_a_frequency_domain_of_its_own),
    cmocka_unit_test(domain_of_its_own_is_placed_alone),
    fixture_case(domain_whose_clock_cannot_be_learned_is_given_back),
    fixture_case(shared_domain_clock_is_chosen_by_its_apps),
};
PCTL_TEST_MAIN(tests)
