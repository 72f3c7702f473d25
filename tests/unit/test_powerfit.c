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

/* One interval: `held` CPUs held, of which each is busy `busy_frac`, all at freq_khz; the
 * meter reads noise_w more than the truth. */
static int interval_noisy(struct powerfit *pf, struct sensor_sample *s, unsigned freq_khz,
                          unsigned held, double busy_frac, double noise_w)
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
        s->energy_j[0] = (truth_w(freq_khz, held * busy_frac, held * (1 - busy_frac)) + noise_w) *
                         INTERVAL_NS * 1e-9;
        return powerfit_add(pf, s, freqs, &mask);
}

static int interval(struct powerfit *pf, struct sensor_sample *s, unsigned freq_khz, unsigned held,
                    double busy_frac)
{
        return interval_noisy(pf, s, freq_khz, held, busy_frac, 0);
}

/* Meter noise for the tests, uniform in ±amp_w: a fixed sequence, unrelated to the design. */
static double noise(unsigned *state, double amp_w)
{
        *state = *state * 1103515245u + 12345u;
        return amp_w * (2.0 * ((*state >> 8) & 0xffff) / 0xffff - 1);
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

/* Every CPU held all along (apps sharing the machine): the data fix static_w + n·idle_w, not
 * the split, so the fit keeps held idle power in static_w (idle_w 0) and still predicts the
 * machine as it ran; once the held count varies, the split is learned. */
static void held_split_waits_for_the_count_to_vary(void **state)
{
        struct powerfit *pf = powerfit_new(0);
        struct sensor_sample s;
        struct model_power pm;
        double w, core_w, idle_w;

        assert_non_null(pf);
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        for (unsigned i = 0; i < 40; i++)
                assert_int_equal(interval(pf, &s, 2400000, N_CPUS, 0.3 + 0.1 * (i % 5)), 0);
        assert_int_equal(powerfit_model(pf, &pm), 0);
        assert_int_equal(pm.n_points, 1);
        core_w = pm.points[0].core_w;
        idle_w = pm.points[0].idle_w;
        assert_near(idle_w, 0, 1e-9);
        assert_near(pm.static_w, 15 + 1.5 * N_CPUS, 0.01);
        assert_near(core_w, 12 - 1.5, 0.01);
        assert_int_equal(model_power_at(&pm, 2400000, 4, N_CPUS - 4, &w), 0);
        assert_near(w, truth_w(2400000, 4, N_CPUS - 4), 0.01);
        for (unsigned i = 0; i < 40; i++)
                assert_int_equal(interval(pf, &s, 2400000, 1 + i % N_CPUS, 0.3 + 0.1 * (i % 5)), 0);
        assert_int_equal(powerfit_model(pf, &pm), 0);
        assert_near(pm.static_w, 15, 0.01);
        synth_sample_free(&s);
        powerfit_free(pf);
}

/* The split is judged by how sure the fit is of idle_w, not by how often the held count moved:
 * a held count that moved now and then under a noisy meter leaves idle_w unsure (held idle
 * power stays in static_w), the same moves under a quiet meter fix it. */
static void held_split_judged_by_its_precision(void **state)
{
        struct powerfit *noisy = powerfit_new(0), *quiet = powerfit_new(0);
        struct sensor_sample s;
        struct model_power pm;
        unsigned seed = 1;

        assert_non_null(noisy);
        assert_non_null(quiet);
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        /* Every CPU held but every eighth interval, when 6 are: a spread of 8 CPU² ·
         * intervals, above what a fixed count of 5 intervals' worth of one CPU asks. */
        for (unsigned i = 0; i < 64; i++) {
                unsigned held = i % 8 == 0 ? 6 : N_CPUS;
                double busy = 0.3 + 0.1 * (i % 5);

                assert_int_equal(interval_noisy(noisy, &s, 2400000, held, busy, noise(&seed, 12)),
                                 0);
                s.timestamp_ns -= INTERVAL_NS;
                assert_int_equal(interval(quiet, &s, 2400000, held, busy), 0);
        }
        /* ±12 W on some 70 W: idle_w comes out near its truth, 1.5 W, but its standard error
         * is some 1.3 W. */
        assert_int_equal(powerfit_model(noisy, &pm), 0);
        assert_near(pm.points[0].idle_w, 0, 1e-9);
        assert_near(pm.points[0].core_w, 12 - 1.5, 1);
        assert_int_equal(powerfit_model(quiet, &pm), 0);
        assert_near(pm.static_w, 15, 0.01);
        assert_near(pm.points[0].idle_w, 1.5, 0.01);
        synth_sample_free(&s);
        powerfit_free(noisy);
        powerfit_free(quiet);
}

/* One interval of a machine whose held idle CPUs draw 1.5 W at either clock: CPUs 0-3 held at
 * 2.4 GHz, each busy busy_hi; CPUs 4-7 at 1.2 GHz when lo, the first held_lo of them held and
 * busy busy_lo, the others idle and not held (else at 2.4 GHz, held, busy busy_hi). */
static int interval_two_clocks(struct powerfit *pf, struct sensor_sample *s, bool lo,
                               unsigned held_lo, double busy_hi, double busy_lo)
{
        unsigned freqs[N_CPUS];
        struct cpumask mask;
        double w = 15;

        s->timestamp_ns += INTERVAL_NS;
        s->interval_ns = INTERVAL_NS;
        cpumask_zero(&mask);
        for (unsigned c = 0; c < N_CPUS; c++) {
                bool at_lo = lo && c >= N_CPUS / 2;
                bool held = !at_lo || c - N_CPUS / 2 < held_lo;
                double busy = !held ? 0 : at_lo ? busy_lo : busy_hi;

                freqs[c] = at_lo ? 1200000 : 2400000;
                s->cpu[c] = (struct sensor_counts){
                    .measured = SENSOR_BUSY, .busy_ns = (uint64_t)llround(busy * INTERVAL_NS)};
                if (held)
                        cpumask_set(&mask, c);
                w += (at_lo ? 6 : 12) * busy + (held ? 1.5 * (1 - busy) : 0);
        }
        s->energy_measured = true;
        s->energy_j[0] = w * INTERVAL_NS * 1e-9;
        return powerfit_add(pf, s, freqs, &mask);
}

/* The held count moves only when half the CPUs go to a clock of their own and some of them
 * are let go (an app given a domain of its own): no frequency's held idle power is fixed on its
 * own (each idle column is the others' complement), but what a held idle CPU draws is. Taken
 * as 0 there, static_w and core_w would bend to absorb it. */
static void held_idle_power_shared_across_clocks(void **state)
{
        struct powerfit *pf = powerfit_new(0);
        struct sensor_sample s;
        struct model_power pm;

        assert_non_null(pf);
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        for (unsigned i = 0; i < 40; i++)
                assert_int_equal(interval_two_clocks(pf, &s, false, 0, 0.3 + 0.1 * (i % 5), 0), 0);
        for (unsigned i = 0; i < 40; i++)
                assert_int_equal(
                    interval_two_clocks(pf, &s, true, 2, 0.3 + 0.1 * (i % 5), 0.2 + 0.15 * (i % 3)),
                    0);
        assert_int_equal(powerfit_model(pf, &pm), 0);
        assert_int_equal(pm.n_points, 2);
        assert_near(pm.static_w, 15, 0.01);
        assert_near(pm.points[0].core_w, 6, 0.01);
        assert_near(pm.points[0].idle_w, 1.5, 0.01);
        assert_near(pm.points[1].core_w, 12, 0.01);
        assert_near(pm.points[1].idle_w, 1.5, 0.01);
        synth_sample_free(&s);
        powerfit_free(pf);
}

/* An interval in which the apps' CPUs changed has no one mask to pair its energy with: the
 * estimator leaves it out of the fit. */
static void estimator_leaves_out_intervals_that_moved(void **state)
{
        struct estimator_config cfg = {.delta_i_rate = NAN, .fit_power = true};
        struct estimator *est = estimator_new(&cfg);
        struct sensor_sample s;
        unsigned freqs[N_CPUS];
        struct estimator_machine mach = {.cpu_freq_khz = freqs};
        bool fitted = false;

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, N_CPUS, 0), 0);
        for (unsigned c = 0; c < N_CPUS; c++)
                freqs[c] = 2400000;
        for (unsigned i = 0; i < 40; i++) {
                struct powerfit *scratch = powerfit_new(0);

                assert_int_equal(interval(scratch, &s, 2400000, 4, 0.5), 0);
                powerfit_free(scratch);
                for (unsigned c = 0; c < 4; c++)
                        cpumask_set(&mach.ran_on, c);
                mach.ran_on_steady = false;
                assert_int_equal(estimator_interval(est, &s, &mach, NULL, 0), 0);
        }
        assert_null(estimator_power_model(est, &fitted));
        synth_sample_free(&s);
        estimator_free(est);
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

                cpumask_zero(&mach.ran_on);
                for (unsigned c = 0; c < held; c++)
                        cpumask_set(&mach.ran_on, c);
                mach.held = mach.ran_on;
                mach.ran_on_steady = true;
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
    cmocka_unit_test(held_split_waits_for_the_count_to_vary),
    cmocka_unit_test(held_split_judged_by_its_precision),
    cmocka_unit_test(held_idle_power_shared_across_clocks),
    cmocka_unit_test(estimator_leaves_out_intervals_that_moved),
    cmocka_unit_test(estimator_learns_the_model_between_apps),
    cmocka_unit_test(estimator_models_the_machine_without_rapl),
};

PCTL_TEST_MAIN(tests)
