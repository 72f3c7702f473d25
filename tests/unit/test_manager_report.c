/* manager_report on the model machine: an app's report while it runs and after it has
 * finished and left (the case `pctl run` asks about), with the whole run's P of an Amdahl app
 * whose P is the same throughout, start-up included. */
#include "pctl_test.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>

#include "pctl/manager.h"
#include "pctl/sim.h"
#include "pctl/util.h"

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
        char path[64], spec[80], err[256];
        struct platform_options po = {.spec = spec};
        struct manager_options mo = {.delta_i_rate = NAN};
        struct platform *pf;
        struct manager *m;
        struct json_object *j, *configs;
        const pid_t pid = SIM_PID_BASE;
        unsigned step;

        (void)state;
        pctl_test_temp_file(path, sizeof(path), SCENARIO);
        snprintf(spec, sizeof(spec), "sim:%s", path);
        assert_int_equal(platform_open(&po, &pf, err, sizeof(err)), 0);
        config_init(&mo.conf);
        mo.platform = pf;
        assert_int_equal(manager_new(&mo, NULL, &m), 0);
        sim_step(pf->sim, 0);
        assert_int_equal(manager_adopt(m, pid, "monitor", err, sizeof(err)), 0);

        j = json_object_new_object();
        assert_int_equal(manager_report(m, pid + 1, j, err, sizeof(err)), -ENOENT);
        assert_int_equal(manager_report(m, pid, j, err, sizeof(err)), 0);
        assert_string_equal(str(j, "state"), "managed");
        assert_true(isnan(num(j, "p_run")));
        json_object_put(j);

        for (step = 0; step < 600 && manager_n_apps(m); step++) {
                platform_advance(pf, 100 * NSEC_PER_MSEC);
                manager_sample(m);
                if (step % 10 == 9)
                        manager_decide(m);
        }
        assert_int_equal(manager_n_apps(m), 0);

        j = json_object_new_object();
        assert_int_equal(manager_report(m, pid, j, err, sizeof(err)), 0);
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

        manager_free(m);
        platform_close(pf);
        unlink(path);
}

/* pctl status --json shows where eq. 9's and eq. 5's figures came from, on the model
 * machine's counters: the app's I0 and ΔI with its source, IPC_I0(1)'s source, the fit's
 * residual and core counts, and the power of CPUs no app holds (unknown without a model). */
static void status_shows_the_method_sources(void **state)
{
        char path[64], spec[80], err[256];
        struct platform_options po = {.spec = spec};
        struct manager_options mo = {.delta_i_rate = NAN};
        struct platform *pf;
        struct manager *m;
        struct json_object *j, *apps, *app, *v;

        (void)state;
        pctl_test_temp_file(path, sizeof(path), SCENARIO);
        snprintf(spec, sizeof(spec), "sim:%s", path);
        assert_int_equal(platform_open(&po, &pf, err, sizeof(err)), 0);
        config_init(&mo.conf);
        mo.platform = pf;
        assert_int_equal(manager_new(&mo, NULL, &m), 0);
        sim_step(pf->sim, 0);
        assert_int_equal(manager_adopt(m, SIM_PID_BASE, "monitor", err, sizeof(err)), 0);
        /* 1.4 s: past the 1 s start-up, before the app ends (about 1.6 s). */
        for (unsigned step = 0; step < 14; step++) {
                platform_advance(pf, 100 * NSEC_PER_MSEC);
                manager_sample(m);
        }
        j = json_object_new_object();
        manager_status(m, j);
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
        manager_free(m);
        platform_close(pf);
        unlink(path);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(report_of_a_finished_app),
    cmocka_unit_test(status_shows_the_method_sources),
};

PCTL_TEST_MAIN(tests)
