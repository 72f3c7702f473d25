/* pctld's manager on the model machine with a history file: whole runs of an app with extra
 * work (extra_work 0.03) at 2, then 8, then 4 cores. The report of the second gives the
 * inflation; the third sees it from its start, in `pctl status --json`'s figures; a run
 * released before its end is not a whole run and is not recorded. */
#include "pctl_test.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/history.h"
#include "pctl/objective.h"
#include "pctl/manager.h"
#include "pctl/platform.h"
#include "pctl/policy.h"
#include "pctl/sim.h"
#include "pctl/util.h"

static const char scenario[] = "[machine]\npreset = xeon-e5-2630v2x2\ncounter_noise = 0.01\n"
                               "[app crunch]\ninstructions = 1.3e11\np = 0.9\n"
                               "extra_work = 0.03\n";

struct fixture {
        char scen[64], spec[80], db[64];
};

static double jget(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("no '%s' in %s", key, json_object_to_json_string(o));
        return v ? json_object_get_double(v) : NAN;
}

static const char *jstr(struct json_object *o, const char *key)
{
        struct json_object *v;

        return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : "";
}

/* One run pinned to `cores` under policy "pinned" with the history; stops after `ticks` (0: at
 * the app's end) and releases it by request then. The report, as `pctl run` asks for it, in
 * *report (owned by the caller); status checks at the run's middle when status_infl. */
static void run_once(struct fixture *f, unsigned cores, unsigned ticks, bool status_infl,
                     struct json_object **report)
{
        struct platform_options po = {.spec = f->spec};
        struct manager_options mo = {.delta_i_rate = NAN};
        struct policy pol = {.objective = OBJECTIVE_PERFORMANCE,
                             .min_cores = cores,
                             .max_cores = cores,
                             .max_slowdown = INFINITY,
                             .weight = 1};
        /* The manager takes the set. */
        struct policy_set set = {.v = calloc(1, sizeof(pol)), .n = 1};
        struct history *h;
        struct platform *pf;
        struct manager *m;
        char err[640];

        snprintf(pol.name, sizeof(pol.name), "pinned");
        assert_non_null(set.v);
        set.v[0] = pol;
        assert_int_equal(history_open(f->db, false, &h, err, sizeof(err)), 0);
        if (platform_open(&po, &pf, err, sizeof(err)) != 0)
                fail_msg("platform_open: %s", err);
        config_init(&mo.conf);
        mo.platform = pf;
        mo.history = h;
        mo.dvfs = pf->actuator->can_set_freq;
        assert_int_equal(manager_new(&mo, &set, &m), 0);
        sim_step(pf->sim, 0);
        if (manager_adopt(m, SIM_PID_BASE, "pinned", err, sizeof(err)) != 0)
                fail_msg("adopt: %s", err);
        for (unsigned t = 0; manager_estimate(m, SIM_PID_BASE); t++) {
                assert_true(t < 20000);
                if (ticks && t == ticks) {
                        assert_int_equal(manager_release(m, SIM_PID_BASE, err, sizeof(err)), 0);
                        break;
                }
                platform_advance(pf, 100 * NSEC_PER_MSEC);
                manager_sample(m);
                if (t % 10 == 9)
                        manager_decide(m);
                if (status_infl && t == 150) {
                        struct json_object *st = json_object_new_object(), *apps, *a;

                        manager_status(m, st);
                        assert_true(json_object_object_get_ex(st, "apps", &apps));
                        a = json_object_array_get_idx(apps, 0);
                        assert_non_null(a);
                        assert_near(jget(a, "work_inflation"), 0.03, 0.003);
                        assert_true(jget(a, "p_run") < jget(a, "p_run_uncorrected") - 0.02);
                        assert_non_null(strstr(jstr(a, "speedup_note"), "extra work measured"));
                        json_object_put(st);
                }
        }
        *report = json_object_new_object();
        assert_int_equal(manager_report(m, SIM_PID_BASE, NULL, *report, err, sizeof(err)), 0);
        manager_free(m);
        platform_close(pf);
        history_close(h);
}

static unsigned stored_runs(struct fixture *f)
{
        struct history *h;
        struct history_key key = {0};
        struct history_run runs[HISTORY_RUNS_KEEP];
        unsigned n;
        char err[640];

        /* The model machine's identity: sim:NAME, the scenario's hash, no calibration. */
        snprintf(key.exe, sizeof(key.exe), "sim:crunch");
        snprintf(key.policy, sizeof(key.policy), "pinned");
        key.args_hash = history_hash(f->spec, strlen(f->spec));
        snprintf(key.calibration, sizeof(key.calibration), "%016llx",
                 (unsigned long long)history_hash("", 0));
        assert_int_equal(history_open(f->db, true, &h, err, sizeof(err)), 0);
        assert_int_equal(history_runs(h, &key, runs, HISTORY_RUNS_KEEP, &n, err, sizeof(err)), 0);
        history_close(h);
        return n;
}

static void whole_runs_measure_inflation_and_correct_p_run(void **state)
{
        struct fixture f;
        struct json_object *r;
        int fd;

        pctl_test_temp_file(f.scen, sizeof(f.scen), scenario);
        snprintf(f.spec, sizeof(f.spec), "sim:%s", f.scen);
        snprintf(f.db, sizeof(f.db), "/tmp/pctl-test-db-XXXXXX");
        fd = mkstemp(f.db);
        assert_true(fd >= 0);
        close(fd);
        unlink(f.db); /* history_open creates it */

        run_once(&f, 2, 0, false, &r);
        assert_true(isnan(jget(r, "work_inflation")));
        assert_true(isnan(jget(r, "p_run_uncorrected")));
        /* Its first second on every CPU, until the first decision pins it. */
        assert_true(jget(r, "run_mean_cores") >= 2 && jget(r, "run_mean_cores") < 2.5);
        assert_true(jget(r, "run_instructions") > 1.3e11);
        assert_non_null(strstr(jstr(r, "speedup_note"), "counts as speedup"));
        json_object_put(r);
        assert_int_equal(stored_runs(&f), 1);

        run_once(&f, 8, 0, false, &r);
        assert_near(jget(r, "work_inflation"), 0.03, 0.003);
        assert_true(jget(r, "work_inflation_error") < 0.003);
        /* Programmed P 0.9; the whole run's true P at 8 cores is (1 − D·1.21)/0.875 = 0.849. */
        assert_near(jget(r, "p_run"), 0.849, 0.01);
        assert_near(jget(r, "p_run_uncorrected"), 0.9, 0.01);
        {
                struct json_object *runs, *a, *b;

                assert_true(json_object_object_get_ex(r, "work_inflation_runs", &runs));
                a = json_object_array_get_idx(runs, 0);
                b = json_object_array_get_idx(runs, 1);
                assert_true(jget(a, "cores") >= 8 && jget(a, "cores") < 8.5);
                assert_true(isnan(jget(a, "ended_s"))); /* this run */
                assert_true(jget(b, "cores") >= 2 && jget(b, "cores") < 2.5);
                assert_true(jget(b, "ended_s") > 0);
        }
        json_object_put(r);

        /* From history at once: corrected while it runs. */
        run_once(&f, 4, 0, true, &r);
        assert_near(jget(r, "p_run"), (1 - (0.1 + 0.9 / 4) * 1.09) / 0.75, 0.01);
        json_object_put(r);
        assert_int_equal(stored_runs(&f), 3);

        /* Released before its end: still corrected from history, not recorded. */
        run_once(&f, 4, 50, false, &r);
        assert_near(jget(r, "work_inflation"), 0.03, 0.003);
        json_object_put(r);
        assert_int_equal(stored_runs(&f), 3);

        unlink(f.db);
        unlink(f.scen);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(whole_runs_measure_inflation_and_correct_p_run),
};

PCTL_TEST_MAIN(tests)
