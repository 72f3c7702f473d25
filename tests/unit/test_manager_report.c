/* manager_report on the model machine: an app's report while it runs and after it has
 * finished and left (the case `pctl run` asks about), with the whole run's P of an Amdahl app
 * whose P is the same throughout, start-up included. */
#include "pctl_test.h"
#include "pctl_test_sim.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>

#define SCENARIO                                                                                   \
        "[machine]\npreset = i7-4820k\n\n"                                                         \
        "[app p08]\ninstructions = 1.5e10\np = 0.8\nipc = 1\n"

static double num(struct json_object *j, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(j, key, &v) || !v)
                return NAN;
        return json_object_get_double(v);
}

static const char *str(struct json_object *j, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(j, key, &v) || !v)
                return NULL;
        return json_object_get_string(v);
}

static void report_of_a_finished_app(void **state)
{
        char err[256];
        struct sim_manager f;
        struct manager *m;
        struct json_object *j, *configs;
        const pid_t pid = SIM_PID_BASE;
        unsigned step;

        sim_manager_open(&f, SCENARIO, "monitor", 1);
        m = f.m;

        j = json_object_new_object();
        assert_int_equal(manager_report(m, pid + 1, NULL, j, err, sizeof(err)), -ENOENT);
        assert_int_equal(manager_report(m, pid, NULL, j, err, sizeof(err)), 0);
        assert_string_equal(str(j, "state"), "managed");
        assert_true(isnan(num(j, "p_run")));
        json_object_put(j);

        for (step = 0; step < 600 && manager_n_apps(m); step++)
                sim_manager_tick(&f, step);
        assert_int_equal(manager_n_apps(m), 0);

        j = json_object_new_object();
        assert_int_equal(manager_report(m, pid, NULL, j, err, sizeof(err)), 0);
        assert_string_equal(str(j, "state"), "left");
        assert_string_equal(str(j, "left_because"), "it exited");
        /* The same P throughout, start-up included: the run's P is the app's. */
        assert_near(num(j, "p_run"), 0.8, 0.02);
        assert_true(num(j, "p_run_confidence") >= 0);
        assert_true(num(j, "seen_s") > 0 && num(j, "seen_s") <= num(j, "managed_s") + 0.1);
        assert_true(json_object_object_get_ex(j, "configs", &configs));
        assert_true(json_object_array_length(configs) >= 1);
        /* Monitor never moves it: the run is its own default. */
        assert_near(num(j, "gain_pct"), 0, 0);
        json_object_put(j);

        /* The model machine gives counters: a parent's CPU time does not complete that run,
         * and the range stays (pctl run's busy-time case: test_daemon_run_report). */
        {
                const struct manager_run_totals t = {.wall_s = 100, .cpu_s = 150};
                double conf;

                j = json_object_new_object();
                assert_int_equal(manager_report(m, pid, NULL, j, err, sizeof(err)), 0);
                conf = num(j, "p_run_confidence");
                json_object_put(j);
                j = json_object_new_object();
                assert_int_equal(manager_report(m, pid, &t, j, err, sizeof(err)), 0);
                assert_true(isnan(num(j, "completed_s")));
                assert_true(isnan(num(j, "p_run_seen")));
                assert_near(num(j, "p_run"), 0.8, 0.02);
                assert_near(num(j, "p_run_confidence"), conf, 1e-12);
                json_object_put(j);
        }

        sim_manager_close(&f);
}

/* pctl status --json shows where eq. 9's and eq. 5's figures came from, on the model
 * machine's counters: the app's I0 and ΔI with its source, IPC_I0(1)'s source, the fit's
 * residual and core counts, and the power of CPUs no app holds (unknown without a model). */
static void status_shows_the_method_sources(void **state)
{
        struct sim_manager f;
        struct json_object *j, *apps, *app, *v;

        sim_manager_open(&f, SCENARIO, "monitor", 1);
        /* 1.4 s: past the 1 s start-up, before the app ends (about 1.6 s). Samples only: no
         * decision moves it. */
        for (unsigned step = 0; step < 14; step++) {
                platform_advance(f.pf, 100 * NSEC_PER_MSEC);
                manager_sample(f.m);
        }
        j = json_object_new_object();
        manager_status(f.m, j);
        assert_true(json_object_object_get_ex(j, "unattributed_w", &v) && v == NULL);
        assert_true(json_object_object_get_ex(j, "apps", &apps));
        app = json_object_array_get_idx(apps, 0);
        assert_non_null(app);
        assert_true(num(app, "i0") > 0);
        assert_true(num(app, "delta_i") >= 0 && num(app, "delta_i") < num(app, "i0"));
        /* The model machine counts the app's own instructions apart (a target). */
        assert_string_equal(str(app, "delta_i_source"), "target-counters");
        assert_string_equal(str(app, "speedup_source"), "counters");
        /* Never seen on one core, no calibration: the stand-in, said as such. */
        assert_string_equal(str(app, "ipc1_source"), "busiest-core");
        assert_true(num(app, "p_rms_residual") >= 0);
        assert_int_equal((int)num(app, "p_n_cores"), 1);
        json_object_put(j);
        sim_manager_close(&f);
}

/* pctl status --json names the allocator's phase of each app: "new" before its first
 * decision, then the phase the decisions left it in ("monitor" under a monitor policy; never
 * "new" again under edp). */
static void status_shows_the_allocator_phase(void **state)
{
        static const char *const policies[] = {"monitor", "edp"};

        for (unsigned k = 0; k < 2; k++) {
                struct sim_manager f;
                struct json_object *j, *apps;
                const char *phase;

                sim_manager_open(&f, SCENARIO, policies[k], 1);
                j = json_object_new_object();
                manager_status(f.m, j);
                assert_true(json_object_object_get_ex(j, "apps", &apps));
                assert_string_equal(str(json_object_array_get_idx(apps, 0), "allocator_phase"),
                                    "new");
                json_object_put(j);
                for (unsigned step = 0; step < 14; step++)
                        sim_manager_tick(&f, step);
                j = json_object_new_object();
                manager_status(f.m, j);
                assert_true(json_object_object_get_ex(j, "apps", &apps));
                phase = str(json_object_array_get_idx(apps, 0), "allocator_phase");
                assert_non_null(phase);
                if (k == 0)
                        assert_string_equal(phase, "monitor");
                else if (!strcmp(phase, "new") || !strcmp(phase, "monitor"))
                        fail_msg("edp app in phase %s after a decision", phase);
                json_object_put(j);
                sim_manager_close(&f);
        }
}

/* With RAPL measuring (the model machine has it) and a [power] model declared in pctl.conf,
 * the app's energy is the measured package energy split among the apps: "measured", not
 * "declared" (the model only splits it). */
static void measured_energy_is_not_labelled_declared(void **state)
{
        struct sim_manager f;
        struct model_power pm = {.static_w = 20, .declared = true};
        struct json_object *j, *apps, *app;
        char err[256];

        assert_int_equal(model_power_set_point(&pm, 3700000, 10, 1), 0);
        sim_manager_open_power(&f, SCENARIO, "monitor", 1, &pm);
        for (unsigned step = 0; step < 14; step++)
                sim_manager_tick(&f, step);
        j = json_object_new_object();
        assert_int_equal(manager_report(f.m, SIM_PID_BASE, NULL, j, err, sizeof(err)), 0);
        assert_true(num(j, "energy_j") > 0);
        assert_string_equal(str(j, "energy_source"), "measured");
        json_object_put(j);
        j = json_object_new_object();
        manager_status(f.m, j);
        assert_true(json_object_object_get_ex(j, "apps", &apps));
        app = json_object_array_get_idx(apps, 0);
        assert_non_null(app);
        assert_string_equal(str(app, "power_source"), "measured");
        json_object_put(j);
        sim_manager_close(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(report_of_a_finished_app),
    cmocka_unit_test(measured_energy_is_not_labelled_declared),
    cmocka_unit_test(status_shows_the_method_sources),
    cmocka_unit_test(status_shows_the_allocator_phase),
};

PCTL_TEST_MAIN(tests)
