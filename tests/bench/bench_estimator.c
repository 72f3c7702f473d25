/* The estimator's cost (256 apps over 1024 CPUs, one update per interval, target < 1 ms) and
 * its accuracy against the synthetic Amdahl machine's truth (|P̂ - P| per P). */
#include <stdio.h>
#include <time.h>

#include "pctl/estimator.h"
#include "../unit/test_estimator_synth.h"

#define N_APPS 256
#define N_CPUS 1024
#define INTERVAL_NS 100000000ull
#define COST_INTERVALS 200
#define TARGET_US 1000.0
#define ACCURACY_TARGET 0.03

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* |P̂ - P| for one app observed at two core counts with ΔI and 2% counter noise. */
static int accuracy(double p, unsigned cores, double *err)
{
        struct synth_machine m = {.os_ips = 6.58e6,
                                  .os_ips_noise = 0.3,
                                  .counter_noise = 0.02,
                                  .metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY,
                                  .rng = 42};
        struct estimator *est = estimator_new(&(struct estimator_config){.delta_i_rate = 6.58e6});
        struct synth_app a = {.p = p, .ipc_ref = 1.5, .freq_ref_khz = 2400000, .freq_khz = 2400000};
        struct sensor_sample s;
        const struct estimate *e;

        if (!est || synth_sample_alloc(&s, cores, 0) < 0 || estimator_app_add(est, 1) < 0)
                return -1;
        for (unsigned i = 0; i < 20; i++) {
                struct estimator_app_view v;

                a.n_cores = i < 10 ? 2 : cores;
                v = synth_view(1, &a, -1);
                synth_begin(&m, &s, INTERVAL_NS);
                synth_run(&m, &s, &a, -1);
                synth_end(&m, &s, false);
                if (estimator_update(est, &s, &v, 1) < 0)
                        return -1;
        }
        e = estimator_get(est, 1);
        *err = (e->known & ESTIMATE_P_LS) ? fabs(e->p_ls - p) : INFINITY;
        synth_sample_free(&s);
        estimator_free(est);
        return 0;
}

int main(void)
{
        static const double ps[] = {0.1, 0.3, 0.5, 0.7, 0.9, 0.99};
        struct synth_machine m = {.os_ips = 6.58e6,
                                  .counter_noise = 0.02,
                                  .static_w = 50,
                                  .core_w = 5,
                                  .idle_w = 1,
                                  .metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY,
                                  .rng = 1};
        struct model_power pm = {.static_w = 50};
        static struct synth_app apps[N_APPS];
        static struct estimator_app_view views[N_APPS];
        struct sensor_sample s;
        struct estimator *est;
        double t0, per_us, worst = 0;
        int fail = 0;

        model_power_set_point(&pm, 2400000, 5, 1);
        est = estimator_new(&(struct estimator_config){.delta_i_rate = 6.58e6, .power = &pm});
        if (!est || synth_sample_alloc(&s, N_CPUS, 0) < 0) {
                fprintf(stderr, "bench_estimator: out of memory\n");
                return 1;
        }
        for (unsigned i = 0; i < N_APPS; i++) {
                apps[i] = (struct synth_app){.p = ps[i % 6],
                                             .ipc_ref = 1.0 + (i % 3) * 0.5,
                                             .freq_ref_khz = 2400000,
                                             .freq_khz = 2400000,
                                             .first_cpu = i * (N_CPUS / N_APPS),
                                             .n_cores = N_CPUS / N_APPS};
                views[i] = synth_view(i + 1, &apps[i], -1);
                if (estimator_app_add(est, i + 1) < 0)
                        return 1;
        }
        /* Generating the counts is not the estimator's cost: prepare one sample, replay it. */
        synth_begin(&m, &s, INTERVAL_NS);
        for (unsigned i = 0; i < N_APPS; i++)
                synth_run(&m, &s, &apps[i], -1);
        synth_end(&m, &s, true);
        t0 = now_s();
        for (unsigned k = 0; k < COST_INTERVALS; k++) {
                s.timestamp_ns += INTERVAL_NS;
                if (estimator_update(est, &s, views, N_APPS) < 0) {
                        fprintf(stderr, "bench_estimator: update failed\n");
                        return 1;
                }
        }
        per_us = (now_s() - t0) / COST_INTERVALS * 1e6;
        printf("bench: estimator %d apps x %d CPUs: %.1f us per interval (target < %.0f us)\n",
               N_APPS, N_CPUS, per_us, TARGET_US);
        if (per_us >= TARGET_US)
                fail = 1;
        for (unsigned i = 0; i < N_APPS; i++) {
                const struct estimate *e = estimator_get(est, i + 1);

                worst = fmax(worst, fabs(e->p_ls - apps[i].p));
        }
        printf("bench: estimator 256 apps, 2%% counter noise, one core count: max |P^-P| = %.4f\n",
               worst);
        for (unsigned c = 0; c < 2; c++) {
                unsigned cores = c ? 61 : 12;

                for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
                        double err;

                        if (accuracy(ps[i], cores, &err) < 0)
                                return 1;
                        printf("bench: estimator P=%.2f on 2 and %u cores, dI and 2%% noise: "
                               "|P^-P| = %.4f (target <= %.2f)\n",
                               ps[i], cores, err, ACCURACY_TARGET);
                        if (!(err <= ACCURACY_TARGET))
                                fail = 1;
                }
        }
        synth_sample_free(&s);
        estimator_free(est);
        return fail;
}
