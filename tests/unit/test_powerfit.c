/* The online package power model: recovers a known model from synthetic intervals, answers
 * -ENODATA at a frequency never seen, and refuses intervals it cannot use without change; the
 * estimator feeds it, and models the machine's power without RAPL, every interval. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pctl_test.h"
#include "pctl/powerfit.h"
#include "test_estimator_synth.h"

#define N_CPUS 8
#define INTERVAL_NS 100000000ull

/* The truth: 15 W static; per busy core 6 W at 1.2 GHz, 12 W at 2.4 GHz; per held idle core
 * 1 W and 1.5 W. */
static double truth_w(unsigned freq_khz, double busy, double held_idle)
{
        return freq_khz == 1200000 ? 15 + 6 * busy + 1 * held_idle
                                   : 15 + 12 * busy + 1.5 * held_idle;
}

/* One interval: `held` CPUs held, of which each is busy `busy_frac`, all at freq_khz. */
static int interval(struct powerfit *pf, struct sensor_sample *s, unsigned freq_khz, unsigned held,
                    double busy_frac)
{
        unsigned freqs[N_CPUS];
        struct cpumask mask;

        s->timestamp_ns += INTERVAL_NS;
        s->interval_ns = INTERVAL_NS;
        cpumask_zero(&mask);
        for (unsigned c = 0; c < N_CPUS; c++) {
                freqs[c] = freq_khz;
                s->cpu[c] = (struct sensor_counts){.measured = SENSOR_BUSY};
                if (c < held) {
                        cpumask_set(&mask, c);
                        s->cpu[c].busy_ns = (uint64_t)llround(busy_frac * INTERVAL_NS);
                }
        }
        s->energy_measured = true;
        s->energy_j[0] =
            truth_w(freq_khz, held * busy_frac, held * (1 - busy_frac)) * INTERVAL_NS * 1e-9;
        return powerfit_add(pf, s, freqs, &mask);
}

static void recovers_the_model_and_invents_nothing(void **state)
{
        struct powerfit *pf = powerfit_new(0);
        struct sensor_sample s;
        struct model_power pm;
        double w;

        assert_non_null(pf);
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        assert_int_equal(powerfit_model(pf, &pm), -ENODATA);
        /* Held counts and busy fractions vary, as the allocator's moves make them. */
        for (unsigned i = 0; i < 40; i++)
                assert_int_equal(interval(pf, &s, 2400000, 1 + i % N_CPUS, 0.3 + 0.1 * (i % 5)), 0);
        assert_int_equal(powerfit_model(pf, &pm), 0);
        assert_false(pm.declared);
        assert_int_equal(pm.n_points, 1);
        assert_near(pm.static_w, 15, 1e-3);
        assert_near(pm.points[0].core_w, 12, 1e-3);
        assert_near(pm.points[0].idle_w, 1.5, 1e-3);
        /* 1.2 GHz never ran: no point, no figure there. */
        assert_int_equal(model_power_at(&pm, 1200000, 4, 0, &w), -ENODATA);
        for (unsigned i = 0; i < 40; i++)
                assert_int_equal(interval(pf, &s, 1200000, 1 + i % N_CPUS, 0.2 + 0.15 * (i % 5)),
                                 0);
        assert_int_equal(powerfit_model(pf, &pm), 0);
        assert_int_equal(pm.n_points, 2);
        assert_int_equal(model_power_at(&pm, 1200000, 4, 2, &w), 0);
        assert_near(w, truth_w(1200000, 4, 2), 0.01);
        assert_int_equal(model_power_at(&pm, 2400000, 3, 5, &w), 0);
        assert_near(w, truth_w(2400000, 3, 5), 0.01);
        /* 80 intervals of 0.1 s, each weight halving over the default 60 s. */
        assert_near(powerfit_intervals(pf), (1 - exp2(-80 * 0.1 / 60)) / (1 - exp2(-0.1 / 60)),
                    1e-6);
        synth_sample_free(&s);
        powerfit_free(pf);
}

static void unusable_intervals_change_nothing(void **state)
{
        struct powerfit *pf = powerfit_new(0);
        struct sensor_sample s;
        unsigned freqs[N_CPUS] = {0};
        struct cpumask held;

        assert_non_null(pf);
        assert_null(powerfit_new(-1));
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        /* Too few intervals at a frequency: no point yet. */
        for (unsigned i = 0; i < 3; i++)
                assert_int_equal(interval(pf, &s, 2400000, 4, 0.5), 0);
        {
                struct model_power pm;

                assert_int_equal(powerfit_model(pf, &pm), -ENODATA);
        }
        cpumask_zero(&held);
        cpumask_set(&held, 0);
        s.cpu[0].busy_ns = INTERVAL_NS / 2;
        /* Busy at an unknown frequency. */
        assert_int_equal(powerfit_add(pf, &s, freqs, &held), -ENODATA);
        /* No energy. */
        freqs[0] = 2400000;
        s.energy_measured = false;
        assert_int_equal(powerfit_add(pf, &s, freqs, &held), -ENODATA);
        s.interval_ns = 0;
        assert_int_equal(powerfit_add(pf, &s, freqs, &held), -EINVAL);
        assert_near(powerfit_intervals(pf), 3, 0.01);
        synth_sample_free(&s);
        powerfit_free(pf);
}

/* The estimator owns the fit: with RAPL and no configured model, estimator_interval feeds it
 * every interval, apps managed or not, and estimator_power_model hands out what it learned. */
static void estimator_learns_the_model_between_apps(void **state)
{
        struct estimator_config cfg = {.delta_i_rate = NAN, .fit_power = true};
        struct estimator *est = estimator_new(&cfg);
        struct sensor_sample s;
        unsigned freqs[N_CPUS];
        struct estimator_machine mach = {.cpu_freq_khz = freqs};
        const struct model_power *pm;
        bool fitted = false;
        double w;

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        for (unsigned c = 0; c < N_CPUS; c++)
                freqs[c] = 2400000;
        assert_null(estimator_power_model(est, &fitted));
        for (unsigned i = 0; i < 40; i++) {
                unsigned held = 1 + i % N_CPUS;
                double busy = 0.3 + 0.1 * (i % 5);

                cpumask_zero(&mach.held);
                for (unsigned c = 0; c < held; c++)
                        cpumask_set(&mach.held, c);
                /* interval() fills the sample; its own fit stands for nothing here. */
                struct powerfit *scratch = powerfit_new(0);
                assert_int_equal(interval(scratch, &s, 2400000, held, busy), 0);
                powerfit_free(scratch);
                assert_int_equal(estimator_interval(est, &s, &mach, NULL, 0), 0);
        }
        pm = estimator_power_model(est, &fitted);
        assert_non_null(pm);
        assert_true(fitted);
        assert_int_equal(model_power_at(pm, 2400000, 3, 5, &w), 0);
        assert_near(w, truth_w(2400000, 3, 5), 0.01);
        /* No RAPL figure was modelled: energy was measured. */
        assert_true(isnan(estimator_platform(est)->model_w));
        synth_sample_free(&s);
        estimator_free(est);
}

/* Without RAPL, a configured model gives the machine's power every interval, with no app
 * managed too: static, busy cores at the top app frequency, held idle cores. */
static void estimator_models_the_machine_without_rapl(void **state)
{
        struct model_power model = {.static_w = 15};
        struct estimator_config cfg = {.delta_i_rate = NAN, .power = &model};
        struct estimator *est;
        struct sensor_sample s;
        struct estimator_machine mach = {.top_app_freq_khz = 2400000};
        const struct estimator_platform *pf;
        bool fitted = true;

        model_power_set_point(&model, 2400000, 12, 1.5);
        est = estimator_new(&cfg);
        assert_non_null(est);
        assert_true(estimator_power_model(est, &fitted) != NULL);
        assert_false(fitted);
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        s.interval_ns = INTERVAL_NS;
        s.energy_measured = false;
        for (unsigned c = 0; c < N_CPUS; c++)
                s.cpu[c] = (struct sensor_counts){.measured = SENSOR_BUSY};
        s.cpu[0].busy_ns = INTERVAL_NS;     /* one busy core */
        s.cpu[1].busy_ns = INTERVAL_NS / 2; /* half of another */
        for (unsigned c = 0; c < 4; c++)
                cpumask_set(&mach.held, c);
        for (unsigned i = 0; i < 10; i++)
                assert_int_equal(estimator_interval(est, &s, &mach, NULL, 0), 0);
        pf = estimator_platform(est);
        assert_near(pf->model_w, 15 + 12 * 1.5 + 1.5 * (4 - 1.5), 1e-9);
        assert_near(pf->model_energy_j, 10 * 0.1 * pf->model_w, 1e-9);
        synth_sample_free(&s);
        estimator_free(est);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(recovers_the_model_and_invents_nothing),
    cmocka_unit_test(unusable_intervals_change_nothing),
    cmocka_unit_test(estimator_learns_the_model_between_apps),
    cmocka_unit_test(estimator_models_the_machine_without_rapl),
};

PCTL_TEST_MAIN(tests)
