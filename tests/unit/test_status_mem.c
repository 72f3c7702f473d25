/* Memory traffic in `pctl status`, the run report and /metrics on the model machine: each
 * package's traffic now and since the start, its bandwidth as a lower bound or measured, each
 * app's bytes per instruction (kept in the report of an app that left); the snapshot /metrics
 * renders with the counter and only a measured bandwidth. */
#include "pctl_test.h"
#include "pctl_test_sim.h"

#include <json-c/json.h>
#include <math.h>
#include <string.h>

#include "pctl/metrics.h"

/* Far below the bandwidth: 4e11 instructions of 0.5 bytes each, 2e11 bytes in all. */
#define LIGHT                                                                                      \
        "[machine]\npreset = i7-4820k\n\n"                                                         \
        "[app a]\ninstructions = 4e11\np = 1\nipc = 1\nmem_bytes_per_instruction = 0.5\n"

/* Above it: the package serves 5 GB/s whatever the cores, which the allocator moves. */
#define FULL                                                                                       \
        "[machine]\npreset = i7-4820k\nmem_bandwidth_gbs = 5\n\n"                                  \
        "[app a]\ninstructions = 6e10\np = 1\nipc = 1\nmem_bytes_per_instruction = 4\n"

static struct json_object *member(struct json_object *j, const char *key)
{
        struct json_object *v = NULL;

        if (!json_object_object_get_ex(j, key, &v))
                fail_msg("no key %s in %s", key, json_object_to_json_string(j));
        return v;
}

static double num(struct json_object *j, const char *key)
{
        struct json_object *v = member(j, key);

        return v ? json_object_get_double(v) : NAN;
}

static const char *str(struct json_object *j, const char *key)
{
        struct json_object *v = member(j, key);

        return v ? json_object_get_string(v) : NULL;
}

static struct json_object *status(struct sim_manager *f)
{
        struct json_object *j = json_object_new_object();

        manager_status(f->m, j);
        return j;
}

static struct json_object *package0(struct json_object *st)
{
        struct json_object *pkgs = member(st, "mem_packages");

        assert_non_null(pkgs);
        assert_int_equal(json_object_array_length(pkgs), 1);
        return json_object_array_get_idx(pkgs, 0);
}

static struct json_object *app0(struct json_object *st)
{
        struct json_object *apps = member(st, "apps");

        return json_object_array_length(apps) ? json_object_array_get_idx(apps, 0) : NULL;
}

/* Well under the bandwidth: the traffic now, all of it counted, a lower bound (never called
 * measured, never in /metrics), and the app's 0.5 bytes per instruction once told apart. */
static void light_traffic_is_a_lower_bound(void **state)
{
        struct sim_manager f;
        struct metrics_snapshot *s;
        struct json_object *st, *p, *a;
        unsigned step;
        bool bpi_seen = false;
        char err[256];

        sim_manager_open(&f, LIGHT, "monitor", 1);
        st = status(&f);
        assert_true(json_object_get_boolean(member(st, "mem_traffic")));
        assert_null(member(st, "mem_traffic_reason"));
        /* Before the first sample: no package measured, and the app's figure unknown. */
        assert_int_equal(json_object_array_length(member(st, "mem_packages")), 0);
        assert_null(member(app0(st), "mem_bytes_per_instr"));
        json_object_put(st);
        for (step = 0; step < 50; step++)
                sim_manager_tick(&f, step);
        st = status(&f);
        p = package0(st);
        a = app0(st);
        assert_int_equal((int)num(p, "package"), 0);
        assert_true(num(p, "mem_gbps") > 0.1);
        assert_string_equal(str(p, "bandwidth_source"), "lower bound");
        assert_true(num(p, "bandwidth_gbps") >= num(p, "mem_gbps") * 0.999);
        assert_non_null(a);
        if (member(a, "mem_bytes_per_instr")) {
                assert_near(num(a, "mem_bytes_per_instr"), 0.5, 0.05);
                bpi_seen = true;
        }
        assert_int_equal(manager_metrics(f.m, &s), 0);
        assert_int_equal(s->n_mem_packages, 1);
        assert_true(s->mem_bytes_total[0] > 0);
        assert_true(isnan(s->mem_bandwidth_bytes_per_s[0]));
        metrics_snapshot_unref(s);
        json_object_put(st);
        for (; step < 2000 && manager_n_apps(f.m); step++) {
                sim_manager_tick(&f, step);
                if (!bpi_seen) {
                        st = status(&f);
                        if ((a = app0(st)) && member(a, "mem_bytes_per_instr")) {
                                assert_near(num(a, "mem_bytes_per_instr"), 0.5, 0.05);
                                bpi_seen = true;
                        }
                        json_object_put(st);
                }
        }
        assert_true(bpi_seen);
        assert_int_equal(manager_n_apps(f.m), 0);
        /* The run report of the app that left keeps what status showed of it. */
        st = json_object_new_object();
        assert_int_equal(manager_report(f.m, SIM_PID_BASE, NULL, st, err, sizeof(err)), 0);
        assert_true(json_object_get_boolean(member(st, "mem_traffic")));
        assert_null(member(st, "mem_traffic_reason"));
        assert_near(num(st, "mem_bytes_per_instr"), 0.5, 0.05);
        json_object_put(st);
        sim_manager_tick(&f, step);
        /* All the app moved, counted once: a counter, not a rate. Nothing moves now. */
        st = status(&f);
        p = package0(st);
        assert_near(num(p, "mem_bytes_total") / 2e11, 1, 1e-6);
        assert_true(num(p, "mem_gbps") == 0);
        assert_int_equal(manager_metrics(f.m, &s), 0);
        assert_near(s->mem_bytes_total[0] / 2e11, 1, 1e-6);
        metrics_snapshot_unref(s);
        json_object_put(st);
        sim_manager_close(&f);
}

/* Full: the allocator's moves change the app's busy cycles while the package serves 5 GB/s;
 * status says the bandwidth is measured, and /metrics gives it in bytes per second. */
static void full_package_bandwidth_is_measured(void **state)
{
        struct sim_manager f;
        struct metrics_snapshot *s;
        struct json_object *st = NULL, *p = NULL;
        unsigned step;

        sim_manager_open(&f, FULL, "edp", 1);
        for (step = 0; step < 3000 && manager_n_apps(f.m); step++) {
                sim_manager_tick(&f, step);
                json_object_put(st);
                st = status(&f);
                p = package0(st);
                if (str(p, "bandwidth_source") && !strcmp(str(p, "bandwidth_source"), "measured"))
                        break;
        }
        assert_non_null(str(p, "bandwidth_source"));
        assert_string_equal(str(p, "bandwidth_source"), "measured");
        assert_near(num(p, "bandwidth_gbps"), 5, 0.05);
        assert_int_equal(manager_metrics(f.m, &s), 0);
        assert_near(s->mem_bandwidth_bytes_per_s[0] / 5e9, 1, 0.01);
        metrics_snapshot_unref(s);
        json_object_put(st);
        sim_manager_close(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(light_traffic_is_a_lower_bound),
    cmocka_unit_test(full_package_bandwidth_is_measured),
};

PCTL_TEST_MAIN(tests)
