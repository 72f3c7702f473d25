/* Memory bandwidth per package from measured traffic (model/membw.c), on the model machine
 * driven as pctld drives it: its sensor, its actuator, the estimator's I0 per app. Each app's
 * bytes per instruction against the scenario's, told apart only when the counts allow it; a
 * package's bandwidth measured only where its traffic stayed flat while its apps' busy cycles
 * moved, a lower bound otherwise; nothing where traffic is not measured. */
#include <math.h>
#include <stdlib.h>

#include "pctl/membw.h"
#include "pctl/topology.h"
#include "membw_feed.h"
#include "pctl_test.h"
#include "pctl_test_sim.h"

#define RIG_APPS 2

struct rig {
        struct sim_machine *m;
        struct sensor *sensor;
        struct actuator *act;
        struct actuator_app *app[RIG_APPS];
        struct estimator *est;
        struct sensor_sample s;
        struct topology topo;
        struct membw *bw;
        struct cpumask cpus[RIG_APPS];
        unsigned n_apps, top_khz;
};

static void rig_open(struct rig *r, const char *text, unsigned n_apps)
{
        struct sim_machine_info info;
        struct sim_error serr;

        *r = (struct rig){.n_apps = n_apps};
        if (sim_load_string(text, "membw.ini", &r->m, &serr) < 0)
                fail_msg("scenario rejected: %s", serr.all);
        sim_machine_info(r->m, &info);
        r->top_khz = info.freqs_mhz[info.n_freqs - 1] * 1000;
        assert_int_equal(topology_synthetic(&r->topo, info.sockets, info.cores_per_socket,
                                            info.threads_per_core),
                         0);
        assert_int_equal(
            sensor_open(&sim_sensor_ops, &(struct sensor_config){.machine = r->m}, &r->sensor), 0);
        assert_int_equal(actuator_open(&sim_actuator_ops,
                                       &(struct actuator_config){.machine = r->m}, &r->act, NULL,
                                       0),
                         0);
        /* ΔI as calibration gives it (the i7's system work): I0 is then the apps' own, as
         * the traffic is; uncalibrated, the system's instructions would count as the apps'
         * and their share grows as a saturated package slows the apps. */
        assert_non_null(r->est = estimator_new(&(struct estimator_config){
                            .delta_i_rate = 7.4e7, .delta_i_cpu_rate = 1.85e7}));
        for (unsigned i = 0; i < n_apps; i++) {
                assert_int_equal(
                    r->act->ops->adopt(r->act, SIM_PID_BASE + (int)i, "app", &r->app[i]), 0);
                assert_int_equal(estimator_app_add(r->est, i + 1), 0);
        }
        assert_non_null(r->bw = membw_new());
        assert_int_equal(sensor_read(r->sensor, &r->s), 0); /* the baseline */
}

static void rig_close(struct rig *r)
{
        membw_free(r->bw);
        estimator_free(r->est);
        sensor_sample_free(&r->s);
        for (unsigned i = 0; i < r->n_apps; i++)
                r->act->ops->release(r->act, r->app[i]);
        actuator_close(r->act);
        sensor_close(r->sensor);
        topology_free(&r->topo);
        sim_free(r->m);
}

/* App i onto CPUs first..first+n-1. */
static void rig_set(struct rig *r, unsigned i, unsigned first, unsigned n)
{
        cpumask_zero(&r->cpus[i]);
        for (unsigned c = first; c < first + n; c++)
                cpumask_set(&r->cpus[i], c);
        assert_int_equal(r->act->ops->set_cpus(r->act, r->app[i], &r->cpus[i]), 0);
}

/* `k` intervals: the machine stepped, the estimator and then membw fed as pctld feeds them. */
static void rig_steps(struct rig *r, unsigned k)
{
        for (unsigned t = 0; t < k; t++) {
                struct estimator_app_view v[RIG_APPS];
                struct membw_app a[RIG_APPS];

                assert_int_equal(sim_step(r->m, SIM_RIG_STEP_NS), 0);
                assert_int_equal(sensor_read(r->sensor, &r->s), 0);
                for (unsigned i = 0; i < r->n_apps; i++)
                        v[i] = (struct estimator_app_view){
                            .id = i + 1, .cpus = r->cpus[i], .freq_khz = r->top_khz, .target = -1};
                assert_int_equal(estimator_update(r->est, &r->s, v, r->n_apps), 0);
                for (unsigned i = 0; i < r->n_apps; i++) {
                        const struct estimate *e = estimator_get(r->est, i + 1);

                        a[i] = (struct membw_app){.id = i + 1,
                                                  .cpus = r->cpus[i],
                                                  .target = -1,
                                                  .freq_khz = r->top_khz,
                                                  .i0 = (e->known & ESTIMATE_I0) ? e->i0 : NAN};
                }
                assert_int_equal(membw_update(r->bw, &r->s, &r->topo, a, r->n_apps), 0);
        }
}

static double bpi_of(const struct rig *r, uint64_t id)
{
        double b = NAN;

        assert_int_equal(membw_bytes_per_instr(r->bw, id, &b), 0);
        return b;
}

/* Alone on a package, an app's bytes per instruction is its package's traffic over its I0. */
static void alone_gives_bytes_per_instruction(void **state)
{
        struct rig r;

        rig_open(
            &r,
            "[machine]\npreset = i7-4820k\n"
            "[app a]\ninstructions = 1e12\np = 0.9\nipc = 1\nmem_bytes_per_instruction = 0.5\n",
            1);
        rig_set(&r, 0, 0, 3);
        rig_steps(&r, 10);
        assert_near(bpi_of(&r, 1), 0.5, 0.5 * 0.03);
        rig_close(&r);
}

/* Two apps on one package: while their instructions keep one ratio the traffic cannot be
 * split between them (not known); once their counts moved apart, each gets its own. */
static void two_apps_told_apart_once_their_counts_move(void **state)
{
        struct rig r;
        double b;

        rig_open(
            &r,
            "[machine]\npreset = i7-4820k\n"
            "[app a]\ninstructions = 1e12\np = 0.95\nipc = 1\nmem_bytes_per_instruction = 0.5\n"
            "[app b]\ninstructions = 1e12\np = 0.95\nipc = 1\nmem_bytes_per_instruction = 2\n",
            2);
        rig_set(&r, 0, 0, 2);
        rig_set(&r, 1, 2, 2);
        rig_steps(&r, 10);
        assert_int_equal(membw_bytes_per_instr(r.bw, 1, &b), -ENODATA);
        assert_int_equal(membw_bytes_per_instr(r.bw, 2, &b), -ENODATA);
        rig_set(&r, 0, 0, 1);
        rig_set(&r, 1, 1, 3);
        rig_steps(&r, 10);
        assert_near(bpi_of(&r, 1), 0.5, 0.5 * 0.05);
        assert_near(bpi_of(&r, 2), 2, 2 * 0.05);
        assert_int_equal(membw_bytes_per_instr(r.bw, 3, &b), -ENOENT);
        rig_close(&r);
}

/* On two packages each app's traffic is its own package's: known at once, and the package
 * no app moves bytes on reads none. */
static void each_package_its_own_apps(void **state)
{
        struct rig r;

        rig_open(
            &r,
            "[machine]\npreset = xeon-e5-2630v2x2\n"
            "[app a]\ninstructions = 1e12\np = 0.95\nipc = 1\nmem_bytes_per_instruction = 0.25\n"
            "[app b]\ninstructions = 1e12\np = 0.95\nipc = 1\nmem_bytes_per_instruction = 3\n",
            2);
        rig_set(&r, 0, 0, 4);
        rig_set(&r, 1, 6, 4);
        rig_steps(&r, 5);
        assert_near(bpi_of(&r, 1), 0.25, 0.25 * 0.03);
        assert_near(bpi_of(&r, 2), 3, 3 * 0.03);
        assert_int_equal(membw_n_packages(r.bw), 2);
        rig_close(&r);
}

/* Past its bandwidth a package serves the same traffic at 2 and 4 cores: the bandwidth is
 * then measured (the scenario's 5 GB/s), and at 4 cores its app asks at least twice what
 * filled it at 2 (its slack). */
static void flat_traffic_measures_the_bandwidth(void **state)
{
        struct rig r;
        const struct membw_package *p;
        char line[160];

        rig_open(&r,
                 "[machine]\npreset = i7-4820k\nmem_bandwidth_gbs = 5\n"
                 "[app a]\ninstructions = 1e12\np = 1\nipc = 1\nmem_bytes_per_instruction = 4\n",
                 1);
        rig_set(&r, 0, 0, 2);
        rig_steps(&r, 6);
        assert_non_null(p = membw_package(r.bw, 0));
        assert_int_equal(p->bound, MEMBW_BOUND_LOWER);
        rig_set(&r, 0, 0, 4);
        rig_steps(&r, 6);
        assert_non_null(p = membw_package(r.bw, 0));
        assert_int_equal(p->bound, MEMBW_BOUND_MEASURED);
        assert_near(p->bandwidth_gbs, 5, 5 * 0.01);
        /* 2 cores filled it: at 4 its app asks twice that. */
        assert_near(p->slack, 2, 2 * 0.05);
        assert_int_equal(membw_describe(r.bw, 0, line, sizeof(line)), 0);
        assert_non_null(strstr(line, "= 5.0 GB/s (measured"));
        assert_non_null(strstr(line, "ask 2."));
        rig_close(&r);
}

/* One package's bandwidth measured stands for the other's, which never served more: the 2 x 6
 * Xeon's packages have alike memory controllers. Before, neither is known. */
static void a_measured_package_stands_for_an_alike_one(void **state)
{
        struct rig r;
        double gbs = NAN;

        rig_open(&r,
                 "[machine]\npreset = xeon-e5-2630v2x2\nmem_bandwidth_gbs = 10\n"
                 "[app a]\ninstructions = 1e12\np = 1\nipc = 1\nmem_bytes_per_instruction = 4\n"
                 "[app b]\ninstructions = 1e12\np = 1\nipc = 1\nmem_bytes_per_instruction = 0.5\n",
                 2);
        rig_set(&r, 0, 0, 2);
        rig_set(&r, 1, 6, 2);
        rig_steps(&r, 6);
        assert_int_equal(membw_bandwidth(r.bw, 0, &gbs), -ENODATA);
        assert_int_equal(membw_bandwidth(r.bw, 1, &gbs), -ENODATA);
        rig_set(&r, 0, 0, 4);
        rig_steps(&r, 6);
        assert_int_equal(membw_bandwidth(r.bw, 0, &gbs), 0);
        assert_near(gbs, 10, 0.1);
        gbs = NAN;
        assert_int_equal(membw_bandwidth(r.bw, 1, &gbs), 1);
        assert_near(gbs, 10, 0.1);
        assert_int_equal(membw_package(r.bw, 1)->bound, MEMBW_BOUND_LOWER);
        rig_close(&r);
}

/* Below its bandwidth the traffic follows the cores: only a lower bound, the higher rate. */
static void rising_traffic_is_a_lower_bound(void **state)
{
        struct rig r;
        const struct membw_package *p;
        double at2;

        rig_open(&r,
                 "[machine]\npreset = i7-4820k\nmem_bandwidth_gbs = 500\n"
                 "[app a]\ninstructions = 1e12\np = 1\nipc = 1\nmem_bytes_per_instruction = 4\n",
                 1);
        rig_set(&r, 0, 0, 2);
        rig_steps(&r, 6);
        assert_non_null(p = membw_package(r.bw, 0));
        at2 = p->bandwidth_gbs;
        rig_set(&r, 0, 0, 4);
        rig_steps(&r, 6);
        assert_non_null(p = membw_package(r.bw, 0));
        assert_int_equal(p->bound, MEMBW_BOUND_LOWER);
        assert_true(p->slack == 1);
        assert_true(p->bandwidth_gbs > 1.8 * at2);
        assert_true(p->bandwidth_gbs < 500);
        rig_close(&r);
}

/* Flat traffic below the most the package ever served is not its bandwidth: 20 GB/s served,
 * then 10 GB/s flat while the demand falls by 40 % (a phase that asks less) stays a lower
 * bound at 20. */
static void flat_traffic_below_the_most_served_is_not_the_bandwidth(void **state)
{
        struct topology t;
        struct membw *bw = membw_new();
        double gbs;

        (void)state;
        assert_non_null(bw);
        assert_int_equal(topology_synthetic(&t, 1, 6, 1), 0);
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 6, 0.5, 1.2, 2); /* 4 bytes per instruction, 20 GB/s */
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 5, 0.25, 1.0, 1); /* 10 GB/s */
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 3, 0.25, 0.6, 1); /* 10 GB/s, busy cycles 40 % fewer */
        assert_int_equal(membw_package(bw, 0)->bound, MEMBW_BOUND_LOWER);
        assert_true(membw_bandwidth(bw, 0, &gbs) < 0);
        assert_near(membw_package(bw, 0)->bandwidth_gbs, 20, 20 * 0.01);
        membw_free(bw);
        topology_free(&t);
}

/* A measured bandwidth that the package then exceeds by more than the flatness was not its
 * bandwidth: measured at 20 GB/s (flat while the demand fell a third), a steady 25 GB/s turns
 * it back into a lower bound at 25. */
static void a_package_serving_more_than_its_measured_bandwidth_is_a_lower_bound(void **state)
{
        struct topology t;
        struct membw *bw = membw_new();
        double gbs;

        (void)state;
        assert_non_null(bw);
        assert_int_equal(topology_synthetic(&t, 1, 6, 1), 0);
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 6, 0.5, 1.2, 2);
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 4, 0.5, 0.8, 2);
        assert_int_equal(membw_bandwidth(bw, 0, &gbs), 0);
        assert_near(gbs, 20, 1e-6);
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 5, 0.625, 1.0, 2.5); /* 25 GB/s */
        assert_int_equal(membw_package(bw, 0)->bound, MEMBW_BOUND_LOWER);
        assert_true(membw_bandwidth(bw, 0, &gbs) < 0);
        assert_near(membw_package(bw, 0)->bandwidth_gbs, 25, 25 * 0.01);
        membw_free(bw);
        topology_free(&t);
}

/* A sample without traffic changes nothing and says so. */
static void unmeasured_traffic_changes_nothing(void **state)
{
        struct sensor_sample s = {0};
        struct topology t;
        struct membw *bw = membw_new();
        struct membw_app a = {.id = 1, .target = -1, .i0 = 1e9};
        double b;

        assert_non_null(bw);
        assert_int_equal(topology_synthetic(&t, 1, 4, 1), 0);
        assert_int_equal(sensor_sample_alloc(&s, 4, 0), 0);
        s.interval_ns = 100000000;
        s.n_packages = 1;
        cpumask_set(&a.cpus, 0);
        s.cpu[0] = (struct sensor_counts){
            .instr = 1000000000, .cycles = 1000000000, .measured = SENSOR_INSTR | SENSOR_CYCLES};
        assert_int_equal(membw_update(bw, &s, &t, &a, 1), -ENODATA);
        assert_null(membw_package(bw, 0));
        assert_int_equal(membw_bytes_per_instr(bw, 1, &b), -ENOENT);
        /* A CPU the sample does not have is refused, too. */
        s.mem_measured = true;
        cpumask_set(&a.cpus, 9);
        assert_int_equal(membw_update(bw, &s, &t, &a, 1), -EINVAL);
        assert_null(membw_package(bw, 0));
        sensor_sample_free(&s);
        topology_free(&t);
        membw_free(bw);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(alone_gives_bytes_per_instruction),
            cmocka_unit_test(two_apps_told_apart_once_their_counts_move),
            cmocka_unit_test(each_package_its_own_apps),
            cmocka_unit_test(flat_traffic_measures_the_bandwidth),
            cmocka_unit_test(a_measured_package_stands_for_an_alike_one),
            cmocka_unit_test(rising_traffic_is_a_lower_bound),
            cmocka_unit_test(flat_traffic_below_the_most_served_is_not_the_bandwidth),
            cmocka_unit_test(a_package_serving_more_than_its_measured_bandwidth_is_a_lower_bound),
            cmocka_unit_test(unmeasured_traffic_changes_nothing),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
