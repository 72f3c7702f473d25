/* The allocator tests' fixture (test_allocator.c, test_allocator_stack.c,
 * test_allocator_phases.c): an estimator fed by the synthetic Amdahl machine of
 * test_estimator_synth.h on N_CPUS CPUs (busy time only, a fixed seed), and a declared power
 * model of 20 W + 10 W per core. cmocka sets it up before each case and tears it down after: a
 * case takes it from *state. */
#pragma once

#include <math.h>
#include <string.h>

#include "pctl_test.h"
#include "test_estimator_synth.h"
#include "pctl/allocator.h"
#include "pctl/power_decl.h"

#define N_CPUS 8
#define INTERVAL_NS 100000000ULL

struct fixture {
        struct estimator *est;
        struct synth_machine m;
        struct sensor_sample s;
        struct model_power pm;
};

static inline void fixture_init(struct fixture *f)
{
        struct power_decl d = {0};
        struct estimator_config cfg = {.delta_i_rate = NAN};

        memset(f, 0, sizeof(*f));
        f->m = (struct synth_machine){.os_ips = 6.6e4,
                                      .static_w = 20,
                                      .core_w = 10,
                                      .idle_w = 10,
                                      .metrics = SENSOR_BUSY,
                                      .rng = 42};
        assert_int_equal(synth_sample_alloc(&f->s, N_CPUS, 0), 0);
        power_decl_key(&d, "static_w", "20");
        power_decl_key(&d, "core_w", "10");
        assert_int_equal(power_decl_to_model(&d, 1, &f->pm), 0);
        f->est = estimator_new(&cfg);
        assert_non_null(f->est);
}

static inline void fixture_free(struct fixture *f)
{
        estimator_free(f->est);
        synth_sample_free(&f->s);
}

/* A fresh fixture in place of a used one, for a case that runs the same thing twice. */
static inline void fixture_reset(struct fixture *f)
{
        fixture_free(f);
        fixture_init(f);
}

/* Feeds `intervals` intervals of app id at P on cores [first, first + n). */
static inline void feed(struct fixture *f, uint64_t id, double p, unsigned first, unsigned n,
                        unsigned intervals)
{
        struct synth_app a = {.p = p,
                              .ipc_ref = 1,
                              .freq_ref_khz = 1,
                              .first_cpu = first,
                              .n_cores = n,
                              .freq_khz = 1};

        for (unsigned i = 0; i < intervals; i++) {
                struct estimator_app_view v = synth_view(id, &a, -1);

                synth_begin(&f->m, &f->s, INTERVAL_NS);
                synth_run(&f->m, &f->s, &a, -1);
                synth_end(&f->m, &f->s, false);
                assert_int_equal(estimator_update(f->est, &f->s, &v, 1), 0);
        }
}

/* Counters of app 1 at P 0.9 on a->cores at khz whose cores retire `ipc` each. */
static inline void feed_ipc_at(struct fixture *f, struct allocator_ctx *ctx,
                               struct allocator_app *a, unsigned khz, double ipc,
                               unsigned intervals)
{
        struct synth_app s = {.p = 0.9,
                              .ipc_ref = ipc,
                              .freq_ref_khz = 2000000,
                              .n_cores = a->cores,
                              .freq_khz = khz};

        for (unsigned i = 0; i < intervals; i++) {
                struct estimator_app_view v = synth_view(a->id, &s, -1);

                synth_begin(&f->m, &f->s, INTERVAL_NS);
                synth_run(&f->m, &f->s, &s, -1);
                synth_end(&f->m, &f->s, false);
                assert_int_equal(estimator_update(f->est, &f->s, &v, 1), 0);
                allocator_observe(ctx, a);
        }
}

static inline void feed_ipc(struct fixture *f, struct allocator_ctx *ctx, struct allocator_app *a,
                            double ipc, unsigned intervals)
{
        feed_ipc_at(f, ctx, a, 2000000, ipc, intervals);
}

/* Counters of app id at P 0.9 on cores [first, first + 4) at khz, a share `stalled` of every
 * core's cycles stalled (counted: SENSOR_STALLS), mem_fraction of its time memory's (the part
 * that does not follow the clock). */
static inline void feed_stalled_at_clock(struct fixture *f, uint64_t id, unsigned first,
                                         double stalled, double mem_fraction, unsigned khz,
                                         unsigned intervals)
{
        struct synth_app a = {.p = 0.9,
                              .ipc_ref = 1,
                              .mem_fraction = mem_fraction,
                              .freq_ref_khz = 2000000,
                              .first_cpu = first,
                              .n_cores = 4,
                              .freq_khz = khz};

        f->m.metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY | SENSOR_STALLS;
        for (unsigned i = 0; i < intervals; i++) {
                struct estimator_app_view v = synth_view(id, &a, -1);

                synth_begin(&f->m, &f->s, INTERVAL_NS);
                synth_run(&f->m, &f->s, &a, -1);
                synth_end(&f->m, &f->s, false);
                for (unsigned c = first; c < first + 4; c++)
                        f->s.cpu[c].stalls = (uint64_t)llround(stalled * f->s.cpu[c].cycles);
                assert_int_equal(estimator_update(f->est, &f->s, &v, 1), 0);
        }
}

/* The same at 2000 MHz with no memory share. */
static inline void feed_stalled(struct fixture *f, uint64_t id, unsigned first, double stalled,
                                unsigned intervals)
{
        feed_stalled_at_clock(f, id, first, stalled, 0, 2000000, intervals);
}

/* Appends a point measured over 3 samples at decision `decision`. */
static inline void add_point(struct allocator_app *a, unsigned cores, unsigned freq_khz,
                             double score, uint64_t decision)
{
        a->hist[a->n_hist++] = (struct allocator_point){.cores = cores,
                                                        .freq_khz = freq_khz,
                                                        .score = score,
                                                        .samples = 3,
                                                        .decision = decision};
}

static inline int fixture_setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        fixture_init(f);
        *state = f;
        return 0;
}

static inline int fixture_teardown(void **state)
{
        fixture_free(*state);
        free(*state);
        return 0;
}

/* The fixture with app 1 settled at P (30 intervals on every CPU): the allocator is past
 * learning. */
static inline int fixture_setup_settled(void **state, double p)
{
        struct fixture *f;

        if (fixture_setup(state) < 0)
                return -1;
        f = *state;
        assert_int_equal(estimator_app_add(f->est, 1), 0);
        feed(f, 1, p, 0, N_CPUS, 30);
        return 0;
}

/* A case that uses the fixture (cmake/PctlTests.cmake finds cases listed so, too). */
/* Two twin apps, 1 and 2, whose counters both say P 0.9: 30 intervals each, on CPUs 0-3 and
 * 4-7. */
static inline void feed_two(struct fixture *f)
{
        assert_int_equal(estimator_app_add(f->est, 1), 0);
        assert_int_equal(estimator_app_add(f->est, 2), 0);
        feed(f, 1, 0.9, 0, 4, 30);
        feed(f, 2, 0.9, 4, 4, 30);
}

/* Apps 1 and 2 searching under edp at `cores` each (steps of 1), and the context of a
 * decision that shares 12 CPUs between them with the fixture's power model, neither score
 * measurable (two apps, no power of their own): the partition is the model's. */
static inline struct allocator_ctx share_two_setup(struct fixture *f, struct allocator_app a[2],
                                                   unsigned cores)
{
        for (unsigned i = 0; i < 2; i++)
                a[i] = (struct allocator_app){.id = i + 1,
                                              .policy = policy_builtin(OBJECTIVE_EDP),
                                              .cores = cores,
                                              .phase = ALLOCATOR_PHASE_SEARCH,
                                              .search.step_cores = 1};
        return (struct allocator_ctx){.est = f->est,
                                      .pm = &f->pm,
                                      .n_cpus = 12,
                                      .hysteresis = 0.05,
                                      .decision = 100,
                                      .n_apps = 2};
}

#define fixture_case(name) cmocka_unit_test_setup_teardown(name, fixture_setup, fixture_teardown)
