/* The configurations of a run (manager/run_configs.c) when there are more than its slots: the
 * times still add up to the run's, the configuration the app is at keeps a slot of its own
 * with its exact labels, and a label two merged configurations did not share reads unknown.
 * First the module alone, then through pctld's manager on the model machine: an app pinned to
 * ten configurations in turn, its run report (`pctl run`'s) and the Slurm step line made of it. */
#include "pctl_test.h"
#include "pctl_test_scenario.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../manager/manager_internal.h"
#include "pctl/platform.h"
#include "pctl/sim.h"
#include "pctl/step_report.h"
#include "pctl/util.h"

static struct run_config cfg(unsigned cores, unsigned mhz, uint64_t pkgs, bool pkgs_known)
{
        return (struct run_config){
            .cores = cores, .freq_khz = mhz * 1000, .pkgs = pkgs, .pkgs_known = pkgs_known};
}

static double total_s(const struct run_configs *rc)
{
        double s = 0;

        for (unsigned k = 0; k < rc->n; k++)
                s += rc->v[k].run_s;
        return s;
}

/* The slot the app is at is `now`, unmerged, with its labels. */
static void assert_end_is(const struct run_configs *rc, const struct run_config *now)
{
        const struct run_config *e;

        assert_true(rc->end < rc->n);
        e = &rc->v[rc->end];
        assert_int_equal(e->merged, 1);
        assert_int_equal(e->cores, now->cores);
        assert_int_equal(e->freq_khz, now->freq_khz);
        assert_int_equal(e->pkgs_known, now->pkgs_known);
        if (now->pkgs_known)
                assert_true(e->pkgs == now->pkgs);
}

/* Eight configurations fill the slots; a ninth merges the two old ones that share the most
 * labels (here the only two of one core count and one clock, on different packages), and
 * takes the last slot itself. */
static void a_ninth_configuration_merges_two_old_ones(void **state)
{
        struct run_configs rc = {0};
        struct run_config now;
        unsigned k;

        for (k = 0; k < 8; k++) {
                /* 1..7 cores at 3700 MHz on package 0, then 1 core at 3700 on package 1. */
                now = k < 7 ? cfg(k + 1, 3700, 1, true) : cfg(1, 3700, 2, true);
                run_configs_add(&rc, &now, 1.0 + k);
                assert_int_equal(rc.n, k + 1);
                assert_end_is(&rc, &now);
        }
        assert_near(total_s(&rc), 36, 1e-9);
        now = cfg(2, 1200, 1, true);
        run_configs_add(&rc, &now, 0.5);
        assert_int_equal(rc.n, 8);
        assert_near(total_s(&rc), 36.5, 1e-9);
        assert_int_equal(rc.end, 7);
        assert_end_is(&rc, &now);
        /* Slot 0 (1 core, package 0) and the eighth (1 core, package 1): merged into slot 0,
         * which keeps its first use, its cores and clock, and no longer knows its packages. */
        assert_int_equal(rc.v[0].merged, 2);
        assert_int_equal(rc.v[0].cores, 1);
        assert_int_equal(rc.v[0].freq_khz, 3700000);
        assert_false(rc.v[0].pkgs_known);
        assert_near(rc.v[0].run_s, 1 + 8, 1e-9);
        for (k = 1; k < 7; k++) {
                assert_int_equal(rc.v[k].cores, k + 1);
                assert_int_equal(rc.v[k].merged, 1);
        }
        /* The run's packages are still every one it ran on. */
        assert_false(rc.pkgs_unknown);
        assert_true(rc.pkgs == 3);
}

/* A label the merged ones did not share reads unknown: cores 0, freq 0. */
static void merged_labels_that_differ_read_unknown(void **state)
{
        struct run_configs rc = {0};
        struct run_config now;

        /* Eight core counts at eight clocks: no pair shares a label but the package. */
        for (unsigned k = 0; k < 8; k++) {
                now = cfg(k + 1, 1200 + 300 * k, 1, true);
                run_configs_add(&rc, &now, 10.0 - k); /* the last two have the least time */
        }
        now = cfg(9, 3700, 1, true);
        run_configs_add(&rc, &now, 1);
        assert_int_equal(rc.n, 8);
        assert_end_is(&rc, &now);
        assert_near(total_s(&rc), 10 + 9 + 8 + 7 + 6 + 5 + 4 + 3 + 1, 1e-9);
        /* The pair with the least time: 7 and 8 cores (4 s and 3 s). */
        assert_int_equal(rc.v[6].merged, 2);
        assert_int_equal(rc.v[6].cores, 0);
        assert_int_equal(rc.v[6].freq_khz, 0);
        assert_true(rc.v[6].pkgs_known);
        assert_true(rc.v[6].pkgs == 1);
        assert_near(rc.v[6].run_s, 7, 1e-9);
}

/* Coming back to a configuration that was merged away is a configuration of its own again: the
 * merged slot never takes the time of where the app is now. */
static void coming_back_to_a_merged_one_takes_its_own_slot(void **state)
{
        struct run_configs rc = {0};
        struct run_config now;

        for (unsigned k = 0; k < 8; k++) {
                now = k < 7 ? cfg(k + 1, 3700, 1, true) : cfg(1, 3700, 2, true);
                run_configs_add(&rc, &now, 1);
        }
        now = cfg(2, 1200, 1, true);
        run_configs_add(&rc, &now, 1);
        assert_int_equal(rc.v[0].merged, 2);
        now = cfg(1, 3700, 1, true); /* inside the merged slot 0 */
        run_configs_add(&rc, &now, 1);
        assert_int_equal(rc.n, 8);
        assert_end_is(&rc, &now);
        assert_true(rc.end != 0);
        assert_near(total_s(&rc), 10, 1e-9);
        /* And an unmerged one it comes back to takes the time, in its own place. */
        now = cfg(3, 3700, 1, true);
        run_configs_add(&rc, &now, 2);
        assert_end_is(&rc, &now);
        assert_near(total_s(&rc), 12, 1e-9);
}

/* Any sequence, however long: at most the slots, the times add up, the end is exact, and an
 * interval whose packages were not known makes the run's unknown. */
static void any_sequence_keeps_the_promises(void **state)
{
        struct run_configs rc = {0};
        unsigned long long x = 12345;
        double sum = 0;

        for (unsigned t = 0; t < 2000; t++) {
                struct run_config now;
                double s;

                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                now = cfg(1 + (x >> 33) % 6, 1200 + 300 * ((x >> 40) % 4), 1 + ((x >> 50) % 3),
                          (x >> 60) != 0 || t < 1000);
                s = ((x >> 20) % 100) / 10.0;
                run_configs_add(&rc, &now, s);
                sum += s;
                assert_true(rc.n <= MANAGER_RUN_CONFIGS);
                assert_near(total_s(&rc), sum, 1e-6 * sum + 1e-12);
                assert_end_is(&rc, &now);
                if (t == 999)
                        assert_false(rc.pkgs_unknown);
        }
        assert_true(rc.pkgs_unknown);
}

/* Through the manager: one app moved to ten configurations in turn, two seconds each, by the
 * actuator as the apply stage moves it (no decision runs: the allocator, whose choices are not
 * what is tested here, never moves it back); its run report after it has left. */
struct pin {
        const char *cpus;
        unsigned mhz;
};

/* App 0 onto cpus at mhz, through the platform's actuator. */
static void pin(struct manager *m, const struct pin *p)
{
        struct mapp *a = &m->apps[0];
        struct cpumask set;

        assert_int_equal(cpumask_parse(p->cpus, &set), 0);
        assert_non_null(a->handle);
        assert_int_equal(m->pf->actuator_ops->set_cpus(m->pf->actuator, a->handle, &set), 0);
        a->cpus = set;
        m->alloc[0].want_freq_khz = p->mhz * 1000;
        tick_apply_freqs(m, false);
        assert_int_equal(a->freq_khz, p->mhz * 1000);
}

static double num(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !v)
                return NAN;
        return json_object_get_double(v);
}

static bool is_null(struct json_object *o, const char *key)
{
        struct json_object *v = NULL;

        return json_object_object_get_ex(o, key, &v) && !v;
}

static void member_text(struct json_object *o, const char *key, char *buf, size_t size)
{
        struct json_object *v = NULL;

        json_object_object_get_ex(o, key, &v);
        snprintf(buf, size, "%s",
                 v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "null");
}

/* Runs the scenario's first app through pins (each for 2 s), then to its end. Checks what any
 * run past every slot must show: every slot taken, at least one merged, each merged one null
 * where it cannot be one configuration, the times adding up to the app's run, end_config the
 * last pin exactly, and the Slurm step line saying so (step_want). The report in *out. */
static void run_pinned(const char *scenario, const struct pin *pins, unsigned n_pins,
                       const char *end_packages, const char *step_want, struct json_object **out)
{
        char path[64], spec[80], err[256], line[512], buf[64];
        struct platform_options po = {.spec = spec, .actuator = {.dvfs = true}};
        struct manager_options mo = {.delta_i_rate = NAN};
        const struct pin *last = &pins[n_pins - 1];
        struct platform *pf;
        struct manager *m;
        struct sim_app_truth truth;
        struct json_object *j, *configs, *end;
        struct step_report sr;
        struct cpumask last_cpus;
        double sum = 0;
        unsigned t = 0, n, merged = 0;

        pctl_test_temp_file(path, sizeof(path), scenario);
        snprintf(spec, sizeof(spec), "sim:%s", path);
        if (platform_open(&po, &pf, err, sizeof(err)) != 0)
                fail_msg("platform_open: %s", err);
        config_init(&mo.conf);
        mo.platform = pf;
        mo.dvfs = pf->actuator->can_set_freq;
        assert_true(mo.dvfs);
        assert_int_equal(manager_new(&mo, NULL, &m), 0);
        sim_step(pf->sim, 0);
        /* Monitor: the allocator moves nothing, even when a sample ends a probe. */
        if (manager_adopt(m, SIM_PID_BASE, "monitor", err, sizeof(err)) != 0)
                fail_msg("adopt: %s", err);
        for (unsigned p = 0; p < n_pins; p++) {
                pin(m, &pins[p]);
                for (unsigned k = 0; k < 20; k++, t++) {
                        platform_advance(pf, 100 * NSEC_PER_MSEC);
                        manager_sample(m);
                }
                assert_int_equal(manager_n_apps(m), 1); /* still running */
        }
        for (; manager_n_apps(m) && t < 20000; t++) {
                platform_advance(pf, 100 * NSEC_PER_MSEC);
                manager_sample(m);
        }
        assert_int_equal(manager_n_apps(m), 0);
        assert_int_equal(sim_truth_app(pf->sim, 0, &truth), 0);

        j = json_object_new_object();
        assert_int_equal(manager_report(m, SIM_PID_BASE, NULL, j, err, sizeof(err)), 0);
        assert_true(json_object_object_get_ex(j, "configs", &configs));
        n = (unsigned)json_object_array_length(configs);
        assert_int_equal(n, MANAGER_RUN_CONFIGS);
        for (unsigned k = 0; k < n; k++) {
                struct json_object *c = json_object_array_get_idx(configs, k);

                sum += num(c, "s");
                if (num(c, "merged") >= 2) {
                        /* Ten configurations differ in one label at least. */
                        merged++;
                        if (!is_null(c, "cores") && !is_null(c, "freq_mhz") &&
                            !is_null(c, "packages"))
                                fail_msg("merged slot %u keeps labels it cannot: %s", k,
                                         json_object_to_json_string(c));
                } else {
                        assert_false(is_null(c, "cores"));
                        assert_false(is_null(c, "freq_mhz"));
                        assert_false(is_null(c, "packages"));
                        assert_false(json_object_object_get_ex(c, "merged", NULL));
                }
        }
        if (merged == 0)
                fail_msg("%u configurations in %u slots and none merged: %s", n_pins, n,
                         json_object_to_json_string(configs));
        /* Every second it ran is in them: the app's own run time, to an interval. */
        assert_near(sum, truth.time_s, 0.1 + 1e-9);
        assert_near(sum, num(j, "seen_s"), 1e-6);
        /* end_config names where it ended: the last pin, exactly, with its time since. */
        end = json_object_array_get_idx(configs, (size_t)num(j, "end_config"));
        assert_non_null(end);
        assert_int_equal(cpumask_parse(last->cpus, &last_cpus), 0);
        assert_near(num(end, "cores"), cpumask_count(&last_cpus), 0);
        assert_near(num(end, "freq_mhz"), last->mhz, 0);
        member_text(end, "packages", buf, sizeof(buf));
        assert_string_equal(buf, end_packages);
        assert_false(json_object_object_get_ex(end, "merged", NULL));
        assert_true(num(end, "s") >= 2 - 1e-9);
        /* The Slurm step line says where it ended, and nothing it does not know. */
        step_report_init(&sr);
        assert_int_equal(step_report_add(&sr, j), 0);
        step_report_format(&sr, line, sizeof(line));
        if (!strstr(line, step_want) || strstr(line, "unknown packages"))
                fail_msg("step line '%s' does not say '%s'", line, step_want);
        *out = j;
        manager_free(m);
        platform_close(pf);
        unlink(path);
}

/* On the i7 (one package): the merged ones keep their core count, their clocks differ. */
static void run_report_past_every_slot(void **state)
{
        static const char scenario[] = "[machine]\npreset = i7-4820k\n"
                                       "[app a]\ninstructions = 2e11\np = 0.9\n";
        static const struct pin pins[] = {
            {"0", 3700},   {"0-1", 3700}, {"0-2", 3700}, {"0-3", 3700}, {"0-3", 1200},
            {"0-2", 1200}, {"0-1", 1200}, {"0", 1200},   {"0-1", 1500}, /* past every slot */
            {"0-2", 2400},
        };
        struct json_object *j;
        char buf[64];

        run_pinned(scenario, pins, ARRAY_SIZE(pins), "[0]",
                   ", ended at 3 cores at 2400 MHz (policy monitor,", &j);
        member_text(j, "packages", buf, sizeof(buf));
        assert_string_equal(buf, "[0]");
        json_object_put(j);
}

/* On the 2 x 6 Xeon: the merged ones ran on different packages, which read unknown (null) in
 * their slot; the run's packages stay every one it ran on. */
static void merged_packages_read_unknown(void **state)
{
        static const char scenario[] = "[machine]\npreset = xeon-e5-2630v2x2\n"
                                       "[app a]\ninstructions = 2e11\np = 0.9\n";
        static const struct pin pins[] = {
            {"0", 2600},   {"6", 2600},       {"0-1", 2600}, {"6-7", 2600},
            {"0-2", 2600}, {"0-1,6-7", 2600}, {"0-5", 2600}, {"0-11", 2600},
            {"0-2", 1200}, {"0-2,6-8", 2000}, /* past every slot */
        };
        struct json_object *j, *configs;
        char buf[64];
        unsigned null_pkgs = 0;

        run_pinned(scenario, pins, ARRAY_SIZE(pins), "[0,1]",
                   ", ended at 6 cores on packages 0,1 at 2000 MHz (policy monitor,", &j);
        assert_true(json_object_object_get_ex(j, "configs", &configs));
        for (size_t k = 0; k < json_object_array_length(configs); k++) {
                struct json_object *c = json_object_array_get_idx(configs, k);

                if (num(c, "merged") >= 2 && is_null(c, "packages")) {
                        /* 1 core on package 0 and 1 core on package 1, say: one core count,
                         * one clock, two packages. */
                        assert_false(is_null(c, "cores"));
                        assert_false(is_null(c, "freq_mhz"));
                        null_pkgs++;
                }
        }
        if (!null_pkgs)
                fail_msg("no merged slot of two packages: %s", json_object_to_json_string(configs));
        member_text(j, "packages", buf, sizeof(buf));
        assert_string_equal(buf, "[0,1]");
        json_object_put(j);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_ninth_configuration_merges_two_old_ones),
    cmocka_unit_test(merged_labels_that_differ_read_unknown),
    cmocka_unit_test(coming_back_to_a_merged_one_takes_its_own_slot),
    cmocka_unit_test(any_sequence_keeps_the_promises),
    cmocka_unit_test(run_report_past_every_slot),
    cmocka_unit_test(merged_packages_read_unknown),
};

PCTL_TEST_MAIN(tests)
