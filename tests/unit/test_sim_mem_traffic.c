/* The model machine's memory traffic per package (sensor_sample.mem_bytes), as a real
 * machine's memory-controller counters give it: the bytes an app's retired instructions move,
 * on the package of the CPU that retired them, never more than the package's bandwidth, and 0
 * (measured) for apps that move none. */
#include <math.h>
#include <stdlib.h>

#include "pctl_test.h"
#include "pctl_test_sim.h"

struct traffic {
        double bytes[SENSOR_MAX_PACKAGES];
        double most_gbs[SENSOR_MAX_PACKAGES]; /* the highest rate of one interval */
        unsigned n_packages;
        bool all_measured;
};

/* Runs the rig's app to the end on CPUs 0..cores-1, summing each package's traffic. */
static void run(const char *text, unsigned cores, struct traffic *out)
{
        struct sim_rig r;
        struct estimator_app_view v;

        sim_rig_open_or_fail(&r, text, "traffic.ini", "app", &(struct estimator_config){0});
        assert_true(r.sensor->has_mem_traffic);
        assert_int_equal(sim_rig_set_cores(&r, cores, &v), 0);
        *out = (struct traffic){.n_packages = r.s.n_packages, .all_measured = true};
        while (!sim_done(r.m)) {
                assert_int_equal(sim_rig_step(&r), 0);
                out->all_measured &= r.s.mem_measured;
                for (unsigned k = 0; k < r.s.n_packages; k++) {
                        double gbs = r.s.mem_bytes[k] / (r.s.interval_ns * 1e-9) / 1e9;

                        assert_true(r.s.mem_bytes[k] >= 0);
                        out->bytes[k] += r.s.mem_bytes[k];
                        out->most_gbs[k] = fmax(out->most_gbs[k], gbs);
                }
        }
        sim_rig_close(&r);
}

/* Far below the bandwidth: every retired instruction of the app moves its bytes. */
static void traffic_is_bytes_per_instruction(void **state)
{
        struct traffic x;

        run("[machine]\npreset = i7-4820k\n"
            "[app a]\ninstructions = 4e9\np = 1\nipc = 1\nmem_bytes_per_instruction = 0.5\n",
            4, &x);
        assert_true(x.all_measured);
        assert_int_equal(x.n_packages, 1);
        assert_near(x.bytes[0] / 2e9, 1, 1e-6);
}

/* On the package of the CPUs that run it: the 2 x 6 Xeon's first package only. */
static void traffic_goes_to_the_apps_package(void **state)
{
        struct traffic x;

        run("[machine]\npreset = xeon-e5-2630v2x2\n"
            "[app a]\ninstructions = 4e9\np = 1\nipc = 1\nmem_bytes_per_instruction = 1\n",
            6, &x);
        assert_int_equal(x.n_packages, 2);
        assert_near(x.bytes[0] / 4e9, 1, 1e-6);
        assert_true(x.bytes[1] == 0);
}

/* Above the bandwidth the app is slowed to it: the package serves what it can, no more. */
static void traffic_stops_at_the_bandwidth(void **state)
{
        struct traffic x;

        run("[machine]\npreset = i7-4820k\nmem_bandwidth_gbs = 5\n"
            "[app a]\ninstructions = 4e9\np = 1\nipc = 1\nmem_bytes_per_instruction = 4\n",
            4, &x);
        assert_near(x.bytes[0] / 16e9, 1, 1e-6);
        assert_true(x.most_gbs[0] <= 5 * (1 + 1e-9));
        assert_true(x.most_gbs[0] >= 5 * 0.999);
}

/* An app without memory traffic: measured, and none. */
static void no_traffic_is_measured_as_none(void **state)
{
        struct traffic x;

        run("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 4e9\np = 1\nipc = 1\n", 4, &x);
        assert_true(x.all_measured);
        assert_true(x.bytes[0] == 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(traffic_is_bytes_per_instruction),
            cmocka_unit_test(traffic_goes_to_the_apps_package),
            cmocka_unit_test(traffic_stops_at_the_bandwidth),
            cmocka_unit_test(no_traffic_is_measured_as_none),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
