/* Apps that share CPUs (time-sharing, as learners do under pctld): allowed only when each
 * has its own per-target counts; each app's figures come from its target, and a shared CPU's
 * dynamic power is split by the holders' target busy time (or cycles). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pctl_test.h"
#include "pctl/estimator.h"
#include "test_estimator_synth.h"

#define INTERVAL_NS 100000000ull /* 100 ms */
#define DT_S 0.1
#define FREQ_KHZ 2000000
#define ALL_COUNTERS (SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY)

/* Adds busy_s seconds of target t on cpu at IPC 1 (instructions = cycles), and the same to the
 * CPU-wide counts plus os_instr instructions of system software. */
static void run_on(struct sensor_sample *s, unsigned metrics, unsigned t, unsigned cpu,
                   double busy_s, double os_instr)
{
        struct sensor_counts *c = &s->cpu[cpu], *tc = sensor_target_cpu(s, t, cpu);
        uint64_t cycles = (uint64_t)llround(busy_s * FREQ_KHZ * 1e3);

        tc->busy_ns += (uint64_t)llround(busy_s * 1e9);
        tc->cycles += cycles;
        tc->instr += cycles;
        tc->measured = metrics & (SENSOR_INSTR | SENSOR_CYCLES | SENSOR_BUSY);
        c->busy_ns += (uint64_t)llround(busy_s * 1e9);
        c->cycles += cycles;
        c->ref_cycles += cycles;
        c->instr += cycles + (uint64_t)llround(os_instr);
}

static void begin(struct sensor_sample *s, unsigned metrics)
{
        s->timestamp_ns += INTERVAL_NS;
        s->interval_ns = INTERVAL_NS;
        for (unsigned c = 0; c < s->n_cpus; c++)
                s->cpu[c] = (struct sensor_counts){.measured = metrics};
        for (unsigned i = 0; i < s->n_cpus * s->n_targets; i++)
                s->target_cpu[i] = (struct sensor_counts){0};
        s->energy_measured = false;
}

static struct estimator_app_view view(uint64_t id, const char *cpus, int target)
{
        struct estimator_app_view v = {.id = id, .freq_khz = FREQ_KHZ, .target = target};

        assert_int_equal(cpumask_parse(cpus, &v.cpus), 0);
        return v;
}

static void overlap_needs_targets_on_every_holder(void **state)
{
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct estimator_app_view v[2] = {view(1, "0-1", 0), view(2, "1-2", 1)};

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, 4, 2), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        assert_int_equal(estimator_app_add(est, 2), 0);
        begin(&s, SENSOR_BUSY);
        run_on(&s, SENSOR_BUSY, 0, 0, 0.05, 0);
        run_on(&s, SENSOR_BUSY, 1, 2, 0.05, 0);
        /* One holder without its own counts, in either order: refused, nothing changes. */
        v[1].target = -1;
        assert_int_equal(estimator_update(est, &s, v, 2), -EINVAL);
        v[0].target = -1;
        v[1].target = 1;
        assert_int_equal(estimator_update(est, &s, v, 2), -EINVAL);
        assert_int_equal(estimator_get(est, 1)->intervals, 0);
        assert_int_equal(estimator_get(est, 2)->intervals, 0);
        /* Disjoint CPUs need no targets; overlapping ones with a target each are fine. */
        v[1] = view(2, "2-3", -1);
        assert_int_equal(estimator_update(est, &s, v, 2), 0);
        v[0] = view(1, "0-1", 0);
        v[1] = view(2, "1-2", 1);
        assert_int_equal(estimator_update(est, &s, v, 2), 0);
        assert_int_equal(estimator_get(est, 2)->intervals, 2);
        synth_sample_free(&s);
        estimator_free(est);
}

/* Two Amdahl apps time-share CPUs 0-1, each getting half of every CPU it runs on (busy time
 * only, like the software sensor): each app's speedup and P come from its own busy time. */
static void time_shared_apps_each_learn_p(void **state)
{
        static const double p[2] = {0.2, 0.95};
        struct estimator *est = estimator_new(NULL);
        struct sensor_sample s;
        struct estimator_app_view v[2] = {view(1, "0-1", 0), view(2, "0-1", 1)};

        assert_non_null(est);
        assert_int_equal(synth_sample_alloc(&s, 2, 2), 0);
        assert_int_equal(estimator_app_add(est, 1), 0);
        assert_int_equal(estimator_app_add(est, 2), 0);
        for (unsigned i = 0; i < 20; i++) {
                begin(&s, SENSOR_BUSY);
                for (unsigned t = 0; t < 2; t++) {
                        double wall = (1 - p[t]) + p[t] / 2;

                        /* Its first CPU runs the sequential part and its share of the
                         * parallel one; the other only its share. Half speed: shared. */
                        run_on(&s, SENSOR_BUSY, t, 0, 0.5 * DT_S, 0);
                        run_on(&s, SENSOR_BUSY, t, 1, 0.5 * DT_S * (p[t] / 2) / wall, 0);
                }
                assert_int_equal(estimator_update(est, &s, v, 2), 0);
        }
        for (unsigned t = 0; t < 2; t++) {
                const struct estimate *e = estimator_get(est, t + 1);

                assert_int_equal(e->speedup_source, ESTIMATE_SPEEDUP_BUSY);
                assert_true(e->known & ESTIMATE_P_LS);
                assert_near(e->p_ls, p[t], 1e-6);
        }
        synth_sample_free(&s);
        estimator_free(est);
}

/* Package energy with a power model: static and idle set apart, a shared CPU's dynamic power
 * goes to its holders by their target busy time (busy-time sensor) or cycles (counters), and
 * with counters each app's I0 is its target's instructions. */
static void shared_cpu_power_split_by_target_activity(void **state)
{
        static const unsigned metrics[2] = {SENSOR_BUSY, ALL_COUNTERS};
        const double static_w = 20, core_w = 8, idle_w = 1.5;
        /* Busy seconds of app 1 and app 2 on CPUs 0 and 1; CPU 2 is app 2's alone. */
        static const double busy[2][3] = {{0.06, 0.02, 0}, {0.03, 0.02, 0.05}};

        for (unsigned k = 0; k < 2; k++) {
                struct model_power pm = {.static_w = static_w};
                struct estimator *est;
                struct sensor_sample s;
                struct estimator_app_view v[2] = {view(1, "0-1", 0), view(2, "0-2", 1)};
                const struct estimate *e[2];
                double energy_j = static_w * DT_S, truth[2] = {0, 0};

                assert_int_equal(model_power_set_point(&pm, FREQ_KHZ, core_w, idle_w), 0);
                est = estimator_new(&(struct estimator_config){.power = &pm});
                assert_non_null(est);
                assert_int_equal(synth_sample_alloc(&s, 4, 2), 0);
                assert_int_equal(estimator_app_add(est, 1), 0);
                assert_int_equal(estimator_app_add(est, 2), 0);
                begin(&s, metrics[k]);
                for (unsigned t = 0; t < 2; t++)
                        for (unsigned c = 0; c < 3; c++) {
                                run_on(&s, metrics[k], t, c, busy[t][c], 1000);
                                truth[t] += busy[t][c] * core_w / DT_S;
                        }
                /* CPU 3, held by no app, draws what static_w holds, as the model has it.
                 * The charging rule: each app pays the static power in full and the idle
                 * time of its CPUs (split evenly on a CPU both hold). */
                for (unsigned c = 0; c < 3; c++) {
                        double idle_j = (DT_S - s.cpu[c].busy_ns * 1e-9) * idle_w;

                        energy_j += s.cpu[c].busy_ns * 1e-9 * core_w + idle_j;
                        for (unsigned t = 0; t < 2; t++)
                                truth[t] += c < 2 ? idle_j / 2 / DT_S : t * idle_j / DT_S;
                }
                for (unsigned t = 0; t < 2; t++)
                        truth[t] += static_w;
                s.energy_measured = true;
                s.energy_j[0] = energy_j;
                assert_int_equal(estimator_update(est, &s, v, 2), 0);
                for (unsigned t = 0; t < 2; t++) {
                        e[t] = estimator_get(est, t + 1);
                        assert_int_equal(e[t]->power_source, ESTIMATE_POWER_MEASURED);
                        assert_near(e[t]->power_w, truth[t], 1e-6 * truth[t]);
                }
                assert_near(estimator_platform(est)->unattributed_w, 0, 1e-9);
                if (metrics[k] & SENSOR_INSTR) {
                        /* I0 from the target; ΔI: CPU-wide minus every holder's, by share. */
                        double i0 = (busy[0][0] + busy[0][1]) * FREQ_KHZ * 1e3;
                        double d = 2000 * busy[0][0] / (busy[0][0] + busy[1][0]) +
                                   2000 * busy[0][1] / (busy[0][1] + busy[1][1]);

                        assert_true(e[0]->known & ESTIMATE_I0);
                        assert_near(e[0]->i0, i0, 1);
                        assert_near(e[0]->delta_i, d, 1e-6);
                }
                synth_sample_free(&s);
                estimator_free(est);
        }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(overlap_needs_targets_on_every_holder),
    cmocka_unit_test(time_shared_apps_each_learn_p),
    cmocka_unit_test(shared_cpu_power_split_by_target_activity),
};

PCTL_TEST_MAIN(tests)
