/* The one [power] dialect: the same keys and rules in pctl.conf, in a file for
 * `pctl model table --power`, and in platform.ini. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/config.h"
#include "pctl/platform_file.h"
#include "pctl/power_decl.h"

static int load_conf(const char *text, struct config *c, struct config_problems *p)
{
        config_problems_clear(p);
        return config_load_string(text, "pctl.conf", c, p);
}

/* What calibration writes, pctl.conf may declare: a point per frequency. */
static void per_frequency_points_in_pctl_conf(void **state)
{
        struct config_problems p = {};
        struct model_power pm;
        struct config c;
        double w;

        assert_int_equal(load_conf("[power]\nstatic_w = 10\ncore_w_1200 = 3\nidle_w_1200 = 1\n"
                                   "core_w_2400 = 8\nidle_w_2400 = 2\n",
                                   &c, &p),
                         0);
        assert_int_equal(power_decl_to_model(&c.power, 9999000, &pm), 0);
        assert_int_equal(pm.n_points, 2);
        assert_int_equal(model_power_at(&pm, 2400000, 2, 1, &w), 0);
        assert_near(w, 10 + 2 * 8 + 2, 1e-12);
        assert_true(pm.declared);
        config_problems_clear(&p);
}

static void forms_do_not_mix_and_points_pair(void **state)
{
        struct config_problems p = {};
        struct config c;

        assert_int_equal(load_conf("[power]\nstatic_w = 1\ncore_w = 2\ncore_w_1200 = 3\n"
                                   "idle_w_1200 = 1\n",
                                   &c, &p),
                         -EINVAL);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.v[0].lineno, 4);
        assert_non_null(strstr(p.v[0].what, "do not mix"));
        assert_int_equal(load_conf("[power]\nstatic_w = 1\nidle_w_1200 = 1\n", &c, &p), -EINVAL);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.v[0].lineno, 3);
        assert_non_null(strstr(p.v[0].what, "idle_w_1200 has no core_w_1200 to pair with"));
        assert_int_equal(load_conf("[power]\nstatic_w = 1\ncore_w_x = 1\n", &c, &p), -EINVAL);
        assert_non_null(
            strstr(p.v[0].what, "[power] core_w_x: 'x' is not a frequency in MHz (1-100000)"));
        config_problems_clear(&p);
}

/* `--power FILE` reads the [power] of any INI file: a platform.ini serves, and the rules and
 * messages are pctl.conf's. */
static void power_file_reads_platform_ini_with_the_same_rules(void **state)
{
        struct platform_profile prof;
        struct power_decl d;
        struct model_power pm;
        char path[64], err[256];
        FILE *f;
        double w;

        platform_profile_init(&prof);
        strcpy(prof.backend, "sim");
        prof.power.static_w = 12;
        model_power_set_point(&prof.power, 1800000, 4, 0.5);
        model_power_set_point(&prof.power, 3000000, 9, 1.5);
        prof.power_residual_w = 0.25;
        pctl_test_temp_file(path, sizeof(path), "");
        f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(platform_file_format(f, &prof), 0);
        fclose(f);
        assert_int_equal(power_decl_load(path, &d, err, sizeof(err)), 0);
        assert_near(d.residual_w, 0.25, 1e-12);
        assert_int_equal(power_decl_to_model(&d, 0, &pm), 0);
        assert_int_equal(model_power_at(&pm, 1800000, 1, 2, &w), 0);
        assert_near(w, 12 + 4 + 1, 1e-9);
        unlink(path);

        pctl_test_temp_file(path, sizeof(path),
                            "[power]\nstatic_w = 20\ncore_w = 10\ncore_w = 11\n");
        assert_int_equal(power_decl_load(path, &d, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, ":4: [power] core_w: set twice (first at line 3)"));
        unlink(path);
        pctl_test_temp_file(path, sizeof(path), "[power]\nstatic_w = 20\n");
        assert_int_equal(power_decl_load(path, &d, err, sizeof(err)), -ENODATA);
        assert_non_null(strstr(err, "core_w missing"));
        unlink(path);
}

/* platform.ini takes the declared form too, where it says the frequency. */
static void platform_ini_takes_the_one_point_form(void **state)
{
        struct platform_profile prof;
        char err[256] = "";
        double w;

        assert_int_equal(platform_file_load_string("[platform]\nbackend = perf\n[power]\n"
                                                   "static_w = 5\ncore_w = 2\nfreq_mhz = 2000\n",
                                                   "p.ini", &prof, err, sizeof(err)),
                         0);
        assert_false(prof.power.declared);
        assert_int_equal(model_power_at(&prof.power, 2000000, 3, 0, &w), 0);
        assert_near(w, 11, 1e-12);
        assert_int_equal(platform_file_load_string("[platform]\nbackend = perf\n[power]\n"
                                                   "static_w = 5\ncore_w = 2\n",
                                                   "p.ini", &prof, err, sizeof(err)),
                         -EINVAL);
        assert_non_null(strstr(err, "p.ini:4: [power]: core_w needs freq_mhz here"));
        assert_int_equal(platform_file_load_string("[platform]\nbackend = perf\n[power]\n"
                                                   "static_w = -5\n",
                                                   "p.ini", &prof, err, sizeof(err)),
                         -EINVAL);
        assert_non_null(
            strstr(err, "p.ini:4: [power] static_w: '-5' is not a non-negative number of watts"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(per_frequency_points_in_pctl_conf),
    cmocka_unit_test(forms_do_not_mix_and_points_pair),
    cmocka_unit_test(power_file_reads_platform_ini_with_the_same_rules),
    cmocka_unit_test(platform_ini_takes_the_one_point_form),
};

PCTL_TEST_MAIN(tests)
