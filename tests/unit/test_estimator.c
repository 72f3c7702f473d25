#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pctl_test.h"
#include "pctl/estimator.h"
#include "test_estimator_synth.h"

#define INTERVAL_NS 100000000ull /* 100 ms */
#define ALL_COUNTERS (SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY)

static const double p_values[] = {0.1, 0.3, 0.5, 0.7, 0.9, 0.99};

/* Runs `intervals` intervals of one app alone on the machine. */
static void run_alone(struct estimator *est, struct synth_machine *m, struct sensor_sample *s,
                      const struct synth_app *a, unsigned intervals)
{
        struct estimator_app_view v = synth_view(1, a, -1);

        for (unsigned i = 0; i < intervals; i++) {
                synth_begin(m, s, INTERVAL_NS);
                synth_run(m, s, a, -1);
                synth_end(m, s, false);
                assert_int_equal(estimator_update(est, s, &v, 1), 0);
        }
}

/* One app on `cores` machine CPUs, observed at n1 then n2 cores; returns the estimate. */
static struct estimate observe_two_counts(struct synth_machine *m, double p, unsigned cores,
                                          unsigned n1, unsigned n2, unsigned intervals,
                                          double *sp_err_max)
{
        struct estimator_config cfg = {.delta_i_rate = m->os_ips};
        struct estimator *est = estimator_new(&cfg);
        struct sensor_sample s;
        struct synth_app a = {
            .p = p, .ipc_ref = 1.5, .freq_ref_khz = 2400000, .freq_khz = 2400000, .n_cores = n1};
        struct estimate e;

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, cores, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        *sp_err_max = 0;
        for (unsigned phase = 0; phase < 2; phase++) {
                a.n_cores = phase ? n2 : n1;
                run_alone(est, m, &s, &a, intervals);
                e = *estimator_get(est, 1);
                assert_true(e.known & ESTIMATE_SPEEDUP);
                assert_int_equal(e.speedup_source, ESTIMATE_SPEEDUP_COUNTERS);
                *sp_err_max = fmax(*sp_err_max, fabs(e.speedup / synth_speedup(&a) - 1));
        }
        e = *estimator_get(est, 1);
        synth_sample_free(&s);
        estimator_free(est);
        return e;
}

static void amdahl_exact_on_12_and_61_cores(void **state)
{
        static const struct {
                unsigned cores, n1, n2;
        } presets[] = {{12, 4, 12}, {61, 8, 61}};

        for (size_t k = 0; k < 2; k++)
                for (size_t i = 0; i < sizeof(p_values) / sizeof(p_values[0]); i++) {
                        struct synth_machine m = {
                            .os_ips = 6.58e4, .metrics = ALL_COUNTERS, .rng = 1};
                        double sp_err;
                        struct estimate e =
                            observe_two_counts(&m, p_values[i], presets[k].cores, presets[k].n1,
                                               presets[k].n2, 5, &sp_err);

                        assert_true(e.known & ESTIMATE_P_LS);
                        assert_near(e.p_ls, p_values[i], 0.01);
                        assert_near(e.p_eq10, p_values[i], 0.01);
                        assert_int_equal(e.p_n_cores, 2);
                        assert_true(sp_err <= 0.02);
                        assert_int_equal(e.phase_changes, 0);
                }
}

static void amdahl_with_noise_within_003(void **state)
{
        for (unsigned cores = 12; cores <= 61; cores += 49)
                for (size_t i = 0; i < sizeof(p_values) / sizeof(p_values[0]); i++) {
                        /* ΔI 30% noisy and 100x the paper's rate, counters 2% noisy. */
                        struct synth_machine m = {.os_ips = 6.58e6,
                                                  .os_ips_noise = 0.3,
                                                  .counter_noise = 0.02,
                                                  .metrics = ALL_COUNTERS,
                                                  .rng = 0x9e3779b97f4a7c15ull + i};
                        double sp_err;
                        struct estimate e =
                            observe_two_counts(&m, p_values[i], cores, 2, cores, 10, &sp_err);

                        assert_near(e.p_ls, p_values[i], 0.03);
                        assert_true(isfinite(e.p_stderr) && e.p_stderr < 0.03);
                        assert_true(e.p_points > 10);
                        assert_int_equal(e.phase_changes, 0);
                }
}

static void phase_change_detected_and_reconverges(void **state)
{
        struct synth_machine m = {
            .os_ips = 6.58e4, .counter_noise = 0.02, .metrics = ALL_COUNTERS, .rng = 7};
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.9, .ipc_ref = 1.0, .freq_ref_khz = 2000000, .freq_khz = 2000000, .n_cores = 4};
        const struct estimate *e;

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, 8, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        for (unsigned i = 0; i < 20; i++) {
                a.n_cores = i % 2 ? 8 : 4;
                run_alone(est, &m, &s, &a, 1);
        }
        e = estimator_get(est, 1);
        assert_near(e->p_ls, 0.9, 0.01);
        assert_int_equal(e->phase_changes, 0);
        a.p = 0.3;
        for (unsigned i = 1; i <= 5; i++) {
                a.n_cores = i % 2 ? 8 : 4;
                run_alone(est, &m, &s, &a, 1);
        }
        e = estimator_get(est, 1);
        assert_int_equal(e->phase_changes, 1);
        assert_near(e->p_ls, 0.3, 0.03);
        assert_near(e->p_eq10, 0.3, 0.03);
        synth_sample_free(&s);
        estimator_free(est);
}

/* Misfits only at a core count the fit never measured restart the fit but keep the per-clock
 * IPC (the frequency sensitivity): such misfits are as much the Amdahl curve's error at a count
 * the allocator moved the app to as a new phase. Misfits at a measured count take it too. */
static void phase_at_new_count_keeps_frequency_sensitivity(void **state)
{
        struct synth_machine m = {
            .os_ips = 6.58e4, .counter_noise = 0.01, .metrics = ALL_COUNTERS, .rng = 17};
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct synth_app a = {.p = 0.9,
                              .ipc_ref = 1.0,
                              .mem_fraction = 0.5,
                              .freq_ref_khz = 2000000,
                              .freq_khz = 2000000,
                              .n_cores = 8};
        const struct estimate *e;

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, 8, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        run_alone(est, &m, &s, &a, 5);
        a.freq_khz = 1200000;
        run_alone(est, &m, &s, &a, 5);
        a.freq_khz = 2000000;
        run_alone(est, &m, &s, &a, 5);
        e = estimator_get(est, 1);
        assert_true(e->known & ESTIMATE_MEM_FRACTION);
        assert_near(e->mem_fraction, 0.5, 0.03);
        assert_near(e->p_ls, 0.9, 0.01);
        assert_int_equal(e->phase_changes, 0);

        /* Cut to 2 cores, where the speedup misfits the fit made at 8 alone. */
        a.n_cores = 2;
        a.p = 0.3;
        run_alone(est, &m, &s, &a, 3);
        e = estimator_get(est, 1);
        assert_int_equal(e->phase_changes, 1);
        assert_near(e->p_ls, 0.3, 0.03);
        assert_true(e->known & ESTIMATE_MEM_FRACTION);
        assert_near(e->mem_fraction, 0.5, 0.05);

        /* Misfits at 2 cores, now measured: a phase, and the old phase's clocks go with it. */
        run_alone(est, &m, &s, &a, 5);
        a.p = 0.9;
        run_alone(est, &m, &s, &a, 3);
        e = estimator_get(est, 1);
        assert_int_equal(e->phase_changes, 2);
        assert_near(e->p_ls, 0.9, 0.03);
        assert_false(e->known & ESTIMATE_MEM_FRACTION);
        synth_sample_free(&s);
        estimator_free(est);
}

static void busy_time_only_gives_speedup_and_p(void **state)
{
        struct synth_machine m = {.metrics = SENSOR_BUSY, .rng = 3};
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.5, .ipc_ref = 1.0, .freq_ref_khz = 1000000, .freq_khz = 1000000, .n_cores = 2};
        const struct estimate *e;

        assert_int_equal(synth_sample_alloc(&s, 2, 0), 0);
        assert_int_equal(estimator_app_add(est, 9), 0);
        struct estimator_app_view v = synth_view(9, &a, -1);
        for (unsigned i = 0; i < 3; i++) {
                synth_begin(&m, &s, INTERVAL_NS);
                synth_run(&m, &s, &a, -1);
                assert_int_equal(estimator_update(est, &s, &v, 1), 0);
        }
        e = estimator_get(est, 9);
        assert_int_equal(e->speedup_source, ESTIMATE_SPEEDUP_BUSY);
        assert_near(e->speedup, synth_speedup(&a), 1e-6);
        assert_near(e->p_ls, 0.5, 1e-6);
        /* No instructions: nothing built on them is invented. */
        assert_false(e->known & (ESTIMATE_I0 | ESTIMATE_DELTA_I | ESTIMATE_IPC | ESTIMATE_IPC1 |
                                 ESTIMATE_IPS | ESTIMATE_POWER | ESTIMATE_MEM_FRACTION));
        assert_true(isnan(e->i0) && isnan(e->ipc) && isnan(e->power_w) && isnan(e->mem_fraction));
        assert_int_equal(e->ipc1_source, ESTIMATE_IPC1_NONE);
        synth_sample_free(&s);
        estimator_free(est);
}

static void per_target_counts_split_i0_and_delta_i(void **state)
{
        struct synth_machine m = {.os_ips = 5e8, .metrics = ALL_COUNTERS, .rng = 5};
        /* A wrong rate on purpose: with per-target counts it must not be used. */
        struct estimator_config cfg = {.delta_i_rate = 1e3};
        struct estimator *est = estimator_new(&cfg);
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.7, .ipc_ref = 2.0, .freq_ref_khz = 3000000, .freq_khz = 3000000, .n_cores = 4};
        const struct estimate *e;
        double wall = (1 - a.p) + a.p / 4, busy_s = 0.1 * (1 + 3 * (a.p / 4) / wall);

        assert_int_equal(synth_sample_alloc(&s, 4, 1), 0);
        assert_int_equal(estimator_app_add(est, 2), 0);
        struct estimator_app_view v = synth_view(2, &a, 0);
        synth_begin(&m, &s, INTERVAL_NS);
        synth_run(&m, &s, &a, 0);
        assert_int_equal(estimator_update(est, &s, &v, 1), 0);
        e = estimator_get(est, 2);
        assert_int_equal(e->delta_i_source, ESTIMATE_DELTA_I_TARGET);
        assert_near(e->delta_i, 5e8 * busy_s, 5e8 * busy_s * 1e-6);
        assert_near(e->i0, busy_s * 2.0 * 3e9, 1e3);
        assert_near(e->speedup, synth_speedup(&a), 1e-6);
        assert_near(e->ipc, e->i0 / (0.1 * 3e9), 1e-9);
        synth_sample_free(&s);
        estimator_free(est);
}

static void ipc1_prefers_one_core_observation(void **state)
{
        struct synth_machine m = {.os_ips = 6.58e4, .metrics = ALL_COUNTERS, .rng = 11};
        struct estimator *est =
            estimator_new(&(struct estimator_config){.delta_i_rate = 6.58e4, .ipc1_calibrated = 9});
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.8, .ipc_ref = 1.25, .freq_ref_khz = 2000000, .freq_khz = 2000000, .n_cores = 4};
        const struct estimate *e;

        assert_int_equal(synth_sample_alloc(&s, 4, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        run_alone(est, &m, &s, &a, 1);
        e = estimator_get(est, 1);
        /* Never seen on one core: calibration's figure before the busiest core's. */
        assert_int_equal(e->ipc1_source, ESTIMATE_IPC1_CALIBRATION);
        assert_near(e->ipc1, 9, 0);
        a.n_cores = 1;
        run_alone(est, &m, &s, &a, 1);
        e = estimator_get(est, 1);
        assert_int_equal(e->ipc1_source, ESTIMATE_IPC1_ONE_CORE);
        assert_near(e->speedup, 1.0, 0);
        assert_false(e->known & ESTIMATE_P_EQ10); /* N = 1 says nothing of P */
        a.n_cores = 4;
        run_alone(est, &m, &s, &a, 1);
        e = estimator_get(est, 1);
        assert_int_equal(e->ipc1_source, ESTIMATE_IPC1_ONE_CORE);
        assert_near(e->speedup, synth_speedup(&a), 1e-6);
        assert_near(e->p_ls, 0.8, 1e-6);
        synth_sample_free(&s);
        estimator_free(est);
}

static void mem_fraction_predicts_half_frequency(void **state)
{
        struct synth_machine m = {
            .os_ips = 6.58e4, .counter_noise = 0.01, .metrics = ALL_COUNTERS, .rng = 13};
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct synth_app a = {.p = 0.9,
                              .ipc_ref = 1.0,
                              .mem_fraction = 0.5,
                              .freq_ref_khz = 2000000,
                              .freq_khz = 2000000,
                              .n_cores = 4};
        struct model_prediction hi, lo;
        const struct estimate *e;

        assert_int_equal(synth_sample_alloc(&s, 4, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        run_alone(est, &m, &s, &a, 5);
        e = estimator_get(est, 1);
        assert_false(e->known & ESTIMATE_MEM_FRACTION);
        /* One frequency only: a prediction elsewhere is naive 1/f and says so. */
        assert_int_equal(estimator_predict(est, 1, 4, 1000000, NULL, &lo),
                         ESTIMATOR_PREDICT_NAIVE_FREQ);
        assert_int_equal(estimator_predict(est, 1, 4, 2000000, NULL, &hi), 0);
        assert_near(lo.time_s / hi.time_s, 2.0, 0.01);

        a.freq_khz = 1200000;
        run_alone(est, &m, &s, &a, 5);
        a.freq_khz = 2000000;
        run_alone(est, &m, &s, &a, 5);
        e = estimator_get(est, 1);
        assert_true(e->known & ESTIMATE_MEM_FRACTION);
        assert_near(e->mem_fraction, 0.5, 0.03);
        assert_int_equal(estimator_predict(est, 1, 4, 2000000, NULL, &hi), 0);
        assert_int_equal(estimator_predict(est, 1, 4, 1000000, NULL, &lo), 0);
        /* Truth: time per unit at f relative to f_ref. */
        double truth = synth_unit_s(&a, 1000000) / synth_unit_s(&a, 2000000);
        assert_near(lo.time_s / hi.time_s, truth, 0.05 * truth);
        /* And the absolute time of a unit (1e9 I0 instructions) at the observed frequency. */
        double t_truth = 1e9 / (1.0 * 2e9) / synth_speedup(&a);
        assert_near(hi.time_s, t_truth, 0.03 * t_truth);
        synth_sample_free(&s);
        estimator_free(est);
}

static void power_split_between_two_apps(void **state)
{
        struct synth_machine m = {.os_ips = 6.58e4,
                                  .metrics = ALL_COUNTERS,
                                  .rng = 17,
                                  .static_w = 20,
                                  .core_w = 8,
                                  .idle_w = 1.5};
        struct model_power pm = {.static_w = 20};
        struct estimator *est;
        struct sensor_sample s;
        struct synth_app a = {.p = 0.9,
                              .ipc_ref = 1.0,
                              .freq_ref_khz = 2000000,
                              .freq_khz = 2000000,
                              .first_cpu = 0,
                              .n_cores = 4};
        struct synth_app b = {.p = 0.3,
                              .ipc_ref = 2.0,
                              .freq_ref_khz = 2000000,
                              .freq_khz = 2000000,
                              .first_cpu = 4,
                              .n_cores = 6};
        struct estimator_app_view v[2] = {synth_view(1, &a, -1), synth_view(2, &b, -1)};
        double truth_a = 0, truth_b = 0;
        const struct estimate *ea, *eb;
        const struct estimator_platform *pf;

        assert_int_equal(model_power_set_point(&pm, 2000000, 8, 1.5), 0);
        est = estimator_new(&(struct estimator_config){.delta_i_rate = 6.58e4, .power = &pm});
        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, 10, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        assert_int_equal(estimator_app_add(est, 2), 0);
        for (unsigned i = 0; i < 10; i++) {
                synth_begin(&m, &s, INTERVAL_NS);
                truth_a += synth_run(&m, &s, &a, -1);
                truth_b += synth_run(&m, &s, &b, -1);
                synth_end(&m, &s, true);
                /* The charging rule: each pays the static power in full and its cores' idle
                 * time, beside the dynamic energy of its busy time. */
                for (unsigned c = 0; c < 10; c++)
                        *(c < 4 ? &truth_a : &truth_b) +=
                            (INTERVAL_NS * 1e-9 - s.cpu[c].busy_ns * 1e-9) * m.idle_w;
                truth_a += m.static_w * INTERVAL_NS * 1e-9;
                truth_b += m.static_w * INTERVAL_NS * 1e-9;
                assert_int_equal(estimator_update(est, &s, v, 2), 0);
        }
        ea = estimator_get(est, 1);
        eb = estimator_get(est, 2);
        assert_int_equal(ea->power_source, ESTIMATE_POWER_MEASURED);
        assert_near(ea->energy_j, truth_a, 0.05 * truth_a);
        assert_near(eb->energy_j, truth_b, 0.05 * truth_b);
        pf = estimator_platform(est);
        assert_near(pf->static_w, 20, 1e-9);
        /* Idle core-time: 3 of a's cores, 5 of b's. */
        double idle_cores =
            3 * (1 - (0.9 / 4) / (0.1 + 0.9 / 4)) + 5 * (1 - (0.3 / 6) / (0.7 + 0.3 / 6));
        assert_near(pf->idle_w, 1.5 * idle_cores, 1e-6);
        assert_near(pf->power_w, 20 + 1.5 * idle_cores + 8 * (10 - idle_cores), 1e-6);
        assert_near(pf->unattributed_w, 0, 1e-9);
        /* Each app's figure holds the static power: the two exceed the package by it. */
        assert_near(ea->power_w + eb->power_w, pf->power_w + pf->static_w, 1e-6);
        /* The figures built on power. */
        assert_true(ea->known & (ESTIMATE_PERF_PER_W | ESTIMATE_EPI | ESTIMATE_EDP_RATE));
        assert_near(ea->perf_per_w, ea->ips / ea->power_w, 1e-9 * ea->perf_per_w);
        assert_near(ea->epi * ea->perf_per_w, 1.0, 1e-9);
        assert_near(ea->edp_rate, ea->power_w / (ea->ips * ea->ips), 1e-9 * ea->edp_rate);
        synth_sample_free(&s);
        estimator_free(est);
}

static void power_from_model_without_energy(void **state)
{
        struct synth_machine m = {.metrics = SENSOR_BUSY, .rng = 19};
        struct model_power pm = {.static_w = 10, .declared = true};
        struct estimator *est;
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.5, .ipc_ref = 1.0, .freq_ref_khz = 1000000, .freq_khz = 0, .n_cores = 2};
        struct estimator_app_view v;
        const struct estimate *e;

        assert_int_equal(model_power_set_point(&pm, 3000000, 5, 1), 0);
        est = estimator_new(&(struct estimator_config){.power = &pm});
        assert_int_equal(synth_sample_alloc(&s, 2, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        a.freq_khz = 1000000; /* the synthetic counts need a frequency; the view does not */
        v = synth_view(1, &a, -1);
        v.freq_khz = 0;
        synth_begin(&m, &s, INTERVAL_NS);
        synth_run(&m, &s, &a, -1);
        assert_int_equal(estimator_update(est, &s, &v, 1), 0);
        e = estimator_get(est, 1);
        assert_int_equal(e->power_source, ESTIMATE_POWER_MODEL);
        assert_true(e->power_declared);
        /* Busy cores = Σbusy/dt = 1 / wall = SP; the charging rule adds the static power
         * and the idle time of its 2 cores. */
        assert_near(e->power_w, 10 + 5 * synth_speedup(&a) + 1 * (2 - synth_speedup(&a)), 1e-6);
        assert_false(e->known & ESTIMATE_PERF_PER_W); /* no instructions */
        synth_sample_free(&s);
        estimator_free(est);
}

static void bad_input_changes_nothing(void **state)
{
        struct synth_machine m = {.os_ips = 6.58e4, .metrics = ALL_COUNTERS, .rng = 23};
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.5, .ipc_ref = 1.0, .freq_ref_khz = 1000000, .freq_khz = 1000000, .n_cores = 4};
        struct estimator_app_view v[2];
        struct estimate before;

        assert_int_equal(synth_sample_alloc(&s, 4, 1), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        assert_int_equal(estimator_app_add(est, 2), 0);
        assert_int_equal(estimator_app_add(est, 1), -EEXIST);
        run_alone(est, &m, &s, &a, 2);
        before = *estimator_get(est, 1);

        synth_begin(&m, &s, INTERVAL_NS);
        a.p = 0.1;
        synth_run(&m, &s, &a, -1);
        v[0] = synth_view(1, &a, -1);
        v[1] = synth_view(3, &a, -1);
        assert_int_equal(estimator_update(est, &s, v, 2), -ENOENT); /* untracked id */
        v[1] = synth_view(1, &a, -1);
        assert_int_equal(estimator_update(est, &s, v, 2), -EINVAL); /* same id twice */
        v[1] = synth_view(2, &a, -1);
        assert_int_equal(estimator_update(est, &s, v, 2), -EINVAL); /* overlapping CPUs */
        v[1] = v[0];
        v[1].id = 2;
        cpumask_zero(&v[1].cpus);
        cpumask_set(&v[1].cpus, 4);
        assert_int_equal(estimator_update(est, &s, v, 2), -ERANGE); /* CPU the sample lacks */
        v[0].target = 1;
        assert_int_equal(estimator_update(est, &s, v, 1), -ERANGE); /* target it lacks */
        v[0].target = -1;
        cpumask_zero(&v[0].cpus);
        assert_int_equal(estimator_update(est, &s, v, 1), -EINVAL); /* no CPUs */
        s.interval_ns = 0;
        v[0] = synth_view(1, &a, -1);
        assert_int_equal(estimator_update(est, &s, v, 1), -EINVAL);
        assert_memory_equal(estimator_get(est, 1), &before, sizeof(before));

        assert_int_equal(estimator_app_remove(est, 1), 0);
        assert_null(estimator_get(est, 1));
        assert_int_equal(estimator_app_remove(est, 1), -ENOENT);
        assert_non_null(estimator_get(est, 2));
        synth_sample_free(&s);
        estimator_free(est);
}

static void unmeasured_cpus_leave_everything_unknown(void **state)
{
        struct synth_machine m = {.metrics = 0, .rng = 29};
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.5, .ipc_ref = 1.0, .freq_ref_khz = 1000000, .freq_khz = 1000000, .n_cores = 2};
        struct model_prediction pr;
        const struct estimate *e;

        assert_int_equal(synth_sample_alloc(&s, 2, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        run_alone(est, &m, &s, &a, 1);
        e = estimator_get(est, 1);
        assert_int_equal(e->known, 0);
        assert_true(isnan(e->speedup) && isnan(e->p_ls) && isnan(e->p_eq10));
        assert_int_equal(estimator_predict(est, 1, 2, 0, NULL, &pr), -ENODATA);
        assert_int_equal(estimator_predict(est, 5, 2, 0, NULL, &pr), -ENOENT);
        synth_sample_free(&s);
        estimator_free(est);
}

static void predictions_follow_the_model(void **state)
{
        struct synth_machine m = {.os_ips = 6.58e4, .metrics = ALL_COUNTERS, .rng = 31};
        struct model_power pm = {.static_w = 20};
        /* ΔI as calibration fits it on this machine: β per busy core-second, no α. */
        struct estimator *est =
            estimator_new(&(struct estimator_config){.delta_i_rate = 6.58e4, .delta_i_alpha = 0});
        struct sensor_sample s;
        struct synth_app a = {
            .p = 0.7, .ipc_ref = 1.0, .freq_ref_khz = 2000000, .freq_khz = 2000000, .n_cores = 4};
        struct model_prediction p1, p8;

        assert_int_equal(model_power_set_point(&pm, 2000000, 8, 1.5), 0);
        assert_int_equal(synth_sample_alloc(&s, 8, 0), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        run_alone(est, &m, &s, &a, 3);
        assert_int_equal(estimator_predict(est, 1, 0, 0, &pm, &p1), -EDOM);
        assert_int_equal(estimator_predict(est, 1, 1, 0, &pm, &p1), 0);
        assert_int_equal(estimator_predict(est, 1, 8, 2000000, &pm, &p8), 0);
        assert_near(p1.time_s / p8.time_s, 1 / (0.3 + 0.7 / 8), 1e-6);
        assert_near(p1.time_s, 1e9 / 2e9, 1e-6); /* 1e9 instructions at IPC 1 and 2 GHz */
        assert_near(p8.power_w, 20 + 8 * p8.busy_cores + 1.5 * (8 - p8.busy_cores), 1e-9);
        assert_true(isfinite(p8.perf_per_w) && isfinite(p8.edp_js));
        /* Power unknown at a frequency the model has no point for: NaN, not invented. */
        assert_int_equal(estimator_predict(est, 1, 8, 3000000, &pm, &p8),
                         ESTIMATOR_PREDICT_NAIVE_FREQ);
        assert_true(isnan(p8.power_w));
        synth_sample_free(&s);
        estimator_free(est);
}

static void config_out_of_range_is_refused(void **state)
{
        errno = 0;
        assert_null(estimator_new(&(struct estimator_config){.half_life_s = -1}));
        assert_int_equal(errno, EINVAL);
        assert_null(estimator_new(&(struct estimator_config){.ipc1_calibrated = NAN}));
        assert_null(estimator_new(&(struct estimator_config){.phase_intervals = 1000}));
        assert_string_equal(estimate_speedup_source_name(ESTIMATE_SPEEDUP_BUSY), "busy-time");
        assert_string_equal(estimate_ipc1_source_name(ESTIMATE_IPC1_ONE_CORE), "one-core");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(amdahl_exact_on_12_and_61_cores),
    cmocka_unit_test(amdahl_with_noise_within_003),
    cmocka_unit_test(phase_change_detected_and_reconverges),
    cmocka_unit_test(phase_at_new_count_keeps_frequency_sensitivity),
    cmocka_unit_test(busy_time_only_gives_speedup_and_p),
    cmocka_unit_test(per_target_counts_split_i0_and_delta_i),
    cmocka_unit_test(ipc1_prefers_one_core_observation),
    cmocka_unit_test(mem_fraction_predicts_half_frequency),
    cmocka_unit_test(power_split_between_two_apps),
    cmocka_unit_test(power_from_model_without_energy),
    cmocka_unit_test(bad_input_changes_nothing),
    cmocka_unit_test(unmeasured_cpus_leave_everything_unknown),
    cmocka_unit_test(predictions_follow_the_model),
    cmocka_unit_test(config_out_of_range_is_refused),
};

PCTL_TEST_MAIN(tests)
