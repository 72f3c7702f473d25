#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/config.h"
#include "pctl/power_decl.h"

/* Loads text; returns the result and leaves the problems in *p. */
static int load(const char *text, struct config *out, struct config_problems *p)
{
        return config_load_string(text, "t.conf", out, p);
}

/* The text must be refused, with exactly one problem, at `line`, mentioning `needle`. */
static void expect_one_problem(const char *text, int line, const char *needle)
{
        struct config_problems p = {};
        struct config c, before;

        memset(&c, 0x5a, sizeof(c));
        before = c;
        assert_int_equal(load(text, &c, &p), -EINVAL);
        if (p.n != 1 || p.v[0].lineno != line || !strstr(p.v[0].what, needle)) {
                config_problems_print(&p, stderr);
                fail_msg("for:\n%s\nexpected one problem at line %d with '%s'", text, line, needle);
        }
        assert_string_equal(p.v[0].file, "t.conf");
        assert_memory_equal(&c, &before, sizeof(c)); /* a bad file changes nothing */
        config_problems_clear(&p);
}

static void defaults(void **state)
{
        struct config_problems p = {};
        struct config c, d;
        struct config_key_info k;

        config_init(&c);
        assert_int_equal(c.interval_ms, 100);
        assert_int_equal(c.decision_ms, 1000);
        assert_string_equal(c.platform, "auto");
        assert_string_equal(c.socket, "/run/pctl/pctl.sock");
        assert_true(cpumask_empty(&c.reserved_cpus));
        assert_string_equal(c.default_policy, "edp");
        assert_string_equal(c.policies_dir, "/etc/pctl/policies.d");
        assert_string_equal(c.cgroup_root, "/sys/fs/cgroup");
        assert_string_equal(c.state_dir, "/run/pctl");
        assert_string_equal(c.platform_file, "/var/lib/pctl/platform.ini");
        assert_string_equal(c.history_path, "/var/lib/pctl/history.db");
        assert_int_equal(c.dvfs, CONFIG_DVFS_AUTO);
        assert_false(c.has_power);
        /* An empty file is the defaults. */
        memset(&d, 0x5a, sizeof(d));
        assert_int_equal(load("", &d, &p), 0);
        assert_memory_equal(&c, &d, sizeof(c));
        /* Every row's default, written into a file, is accepted and gives the defaults. */
        for (size_t i = 0; config_key_info(i, &k); i++) {
                char text[512];

                if (strcmp(k.section, "daemon") != 0)
                        continue;
                snprintf(text, sizeof(text), "[daemon]\n%s = %s\n", k.key, k.def);
                assert_int_equal(load(text, &d, &p), 0);
                assert_memory_equal(&c, &d, sizeof(c));
                assert_non_null(k.doc);
        }
        assert_int_equal(p.n, 0);
}

static void key_bounds(void **state)
{
        static const struct {
                const char *key, *value;
                bool ok;
        } rows[] = {
            {"interval_ms", "10", true},
            {"interval_ms", "9", false},
            {"interval_ms", "60000", false}, /* > decision_ms default */
            {"interval_ms", "60001", false},
            {"interval_ms", "abc", false},
            {"interval_ms", "-5", false},
            {"interval_ms", "1.5", false},
            {"decision_ms", "3600000", true},
            {"decision_ms", "3600001", false},
            {"decision_ms", "100", true},
            {"decision_ms", "99", false},
            {"platform", "software", true},
            {"platform", "likwid", true},
            {"platform", "perf", true},
            {"platform", "auto", true},
            {"platform", "sim:/x.ini", true},
            {"platform", "sim:", false},
            {"platform", "rapl", false},
            {"socket", "/tmp/s", true},
            {"socket", "rel/s", false},
            {"default_policy", "batch-1.x", true},
            {"default_policy", "-x", false},
            {"default_policy", "a b", false},
            {"policies_dir", "/p", true},
            {"policies_dir", "p", false},
            {"cgroup_root", "/cg", true},
            {"state_dir", "/s", true},
            {"state_dir", "", false},
            {"platform_file", "/f.ini", true},
            {"platform_file", "f.ini", false},
            {"history_path", "/h.db", true},
            {"history_path", "off", true},
            {"history_path", "h.db", false},
            {"dvfs", "on", true},
            {"dvfs", "off", true},
            {"dvfs", "auto", true},
            {"dvfs", "yes", false},
            {"reserved_cpus", "0", true},
            {"reserved_cpus", "4096", false},
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                struct config_problems p = {};
                struct config c;
                char text[512];
                int r;

                snprintf(text, sizeof(text), "[daemon]\n%s = %s\n", rows[i].key, rows[i].value);
                r = load(text, &c, &p);
                if ((r == 0) != rows[i].ok) {
                        config_problems_print(&p, stderr);
                        fail_msg("%s = %s: got %d", rows[i].key, rows[i].value, r);
                }
                if (!rows[i].ok) {
                        assert_int_equal(p.n, 1);
                        assert_int_equal(p.v[0].lineno, 2);
                        assert_non_null(strstr(p.v[0].what, rows[i].key));
                }
                config_problems_clear(&p);
        }
}

static void values_land_in_fields(void **state)
{
        struct config_problems p = {};
        struct config c;

        assert_int_equal(load("[daemon]\ninterval_ms = 250\ndecision_ms = 2000\n"
                              "platform = sim:/tmp/s.ini\ndvfs = on\n"
                              "default_policy = monitor\nreserved_cpus = 0,2\n",
                              &c, &p),
                         0);
        assert_int_equal(c.interval_ms, 250);
        assert_int_equal(c.decision_ms, 2000);
        assert_string_equal(c.platform, "sim:/tmp/s.ini");
        assert_int_equal(c.dvfs, CONFIG_DVFS_ON);
        assert_string_equal(c.default_policy, "monitor");
        assert_int_equal(cpumask_count(&c.reserved_cpus), 2);
}

static void several_bad_lines_each_reported(void **state)
{
        static const char text[] = "# comment\n"             /* 1 */
                                   "[daemon]\n"              /* 2 */
                                   "interval_ms = 5\n"       /* 3 */
                                   "platform = gpu\n"        /* 4 */
                                   "this line is junk\n"     /* 5 */
                                   "colour = blue\n"         /* 6 */
                                   "\n"                      /* 7 */
                                   "[extra]\n"               /* 8 */
                                   "x = 1\n"                 /* 9 */
                                   "[daemon]\n"              /* 10 */
                                   "more junk\n"             /* 11 */
                                   "reserved_cpus = 0-3x\n"; /* 12 */
        static const int lines[] = {3, 4, 5, 6, 8, 11, 12};
        struct config_problems p = {};
        struct config c;

        assert_int_equal(load(text, &c, &p), -EINVAL);
        config_problems_print(&p, stdout);
        assert_int_equal(p.n, sizeof(lines) / sizeof(lines[0]));
        for (size_t i = 0; i < p.n; i++)
                assert_int_equal(p.v[i].lineno, lines[i]);
        assert_non_null(
            strstr(p.v[0].what, "[daemon] interval_ms: 5 is out of bounds [10, 60000]"));
        assert_non_null(strstr(p.v[3].what, "[daemon] colour: unknown key"));
        assert_non_null(strstr(p.v[4].what, "[extra]: unknown section"));
        assert_non_null(strstr(p.v[6].what, "reserved_cpus"));
        config_problems_clear(&p);
}

static void unknown_keys_and_sections(void **state)
{
        expect_one_problem("[daemon]\nintervl_ms = 100\n", 2, "[daemon] intervl_ms: unknown key");
        expect_one_problem("[deamon]\ninterval_ms = 100\n", 1, "[deamon]: unknown section");
        /* A section without keys is still seen. */
        expect_one_problem("[daemon]\n[bogus]\n", 2, "[bogus]: unknown section");
        expect_one_problem("interval_ms = 100\n", 1, "outside any section");
        {
                struct config_problems p = {};
                struct config c;

                /* A broken header leaves its keys outside any section: both are said. */
                assert_int_equal(load("[daemon\ninterval_ms = 100\n", &c, &p), -EINVAL);
                assert_int_equal(p.n, 2);
                assert_int_equal(p.v[0].lineno, 1);
                assert_non_null(strstr(p.v[0].what, "closing ]"));
                assert_int_equal(p.v[1].lineno, 2);
                config_problems_clear(&p);
        }
        expect_one_problem("[daemon]\ninterval_ms = 100\ninterval_ms = 200\n", 3,
                           "set twice (first at line 2)");
}

static void reserved_cpus(void **state)
{
        struct config_problems p = {};
        struct config c;

        assert_int_equal(load("[daemon]\nreserved_cpus = 0-3, 8\n", &c, &p), 0);
        assert_int_equal(cpumask_count(&c.reserved_cpus), 5);
        assert_true(cpumask_test(&c.reserved_cpus, 8));
        assert_false(cpumask_test(&c.reserved_cpus, 4));
        assert_int_equal(load("[daemon]\nreserved_cpus =\n", &c, &p), 0);
        assert_true(cpumask_empty(&c.reserved_cpus));
        expect_one_problem("[daemon]\nreserved_cpus = 3-1\n", 2, "not a CPU list");
        expect_one_problem("[daemon]\nreserved_cpus = 0,x\n", 2, "not a CPU list");
        expect_one_problem("[daemon]\nreserved_cpus = 99999\n", 2, "CPU >= 4096");
}

static void power_through_power_decl(void **state)
{
        struct config_problems p = {};
        struct model_power pm;
        struct config c;
        double w;

        assert_int_equal(load("[power]\nstatic_w = 20\ncore_w = 10\n", &c, &p), 0);
        assert_true(c.has_power);
        assert_int_equal(power_decl_to_model(&c.power, 2000000, &pm), 0);
        assert_true(pm.declared);
        assert_int_equal(model_power_at(&pm, 2000000, 2, 0, &w), 0);
        assert_near(w, 40, 1e-12);
        assert_int_equal(
            load("[power]\nstatic_w = 5\ncore_w = 3\nidle_w = 1\nfreq_mhz = 2400\n", &c, &p), 0);
        assert_int_equal(c.power.freq_khz, 2400000);
        assert_near(c.power.idle_w, 1, 0);
        expect_one_problem("[power]\nstatic_w = 20\n", 1, "core_w missing");
        expect_one_problem("[power]\n", 1, "both missing");
        expect_one_problem("[power]\nstatic_w = -1\ncore_w = 10\n", 2, "non-negative");
        expect_one_problem("[power]\nstatic_w = 1\ncore_w = 1\nfreq_mhz = 0\n", 4, "MHz");
        expect_one_problem("[power]\nstatic_w = 1\ncore_w = 1\nuncore_w = 2\n", 4,
                           "[power] uncore_w: unknown key");
        expect_one_problem("[power]\nstatic_w = 1\ncore_w = 1\ncore_w = 2\n", 4, "set twice");
}

static void decision_below_interval_names_both_lines(void **state)
{
        expect_one_problem("[daemon]\ninterval_ms = 500\n\ndecision_ms = 200\n", 4,
                           "decision_ms: 200 is less than interval_ms (500, line 2)");
        expect_one_problem("[daemon]\ninterval_ms = 5000\n", 2,
                           "interval_ms: 5000 is more than decision_ms (1000, the default)");
}

static void load_file(void **state)
{
        char dir[] = "/tmp/pctl-test-config-XXXXXX", path[128];
        struct config_problems p = {};
        struct config c;
        bool is_config = false;
        FILE *f;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/pctl.conf", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("[daemon]\ninterval_ms = 200 ; inline comment\n", f);
        fclose(f);
        assert_int_equal(config_load(path, &c, &p), 0);
        assert_int_equal(c.interval_ms, 200);
        assert_int_equal(config_detect(path, &is_config), 0);
        assert_true(is_config);
        unlink(path);
        assert_int_equal(config_load(path, &c, &p), -ENOENT);
        assert_int_equal(p.n, 1);
        assert_string_equal(p.v[0].file, path);
        config_problems_clear(&p);
        rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(defaults),
    cmocka_unit_test(key_bounds),
    cmocka_unit_test(values_land_in_fields),
    cmocka_unit_test(several_bad_lines_each_reported),
    cmocka_unit_test(unknown_keys_and_sections),
    cmocka_unit_test(reserved_cpus),
    cmocka_unit_test(power_through_power_decl),
    cmocka_unit_test(decision_below_interval_names_both_lines),
    cmocka_unit_test(load_file),
};
PCTL_TEST_MAIN(tests)
