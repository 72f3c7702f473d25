/* The job tag on the model machine: which tags are valid, and that a tag set on a managed app
 * shows in its status and its report, and is null on an app without one. */
#include "pctl_test.h"
#include "pctl_test_sim.h"

#include <errno.h>
#include <json-c/json.h>

#define SCENARIO                                                                                   \
        "[machine]\npreset = i7-4820k\n\n"                                                         \
        "[app a]\ninstructions = 1e12\np = 0.5\nipc = 1\n\n"                                       \
        "[app b]\ninstructions = 1e12\np = 0.5\nipc = 1\n"

static void tags_are_bounded_and_printable(void **state)
{
        char long_tag[MANAGER_JOB_MAX + 2];

        assert_true(manager_job_valid("1"));
        assert_true(manager_job_valid("4242.0"));
        assert_true(manager_job_valid("77_3"));
        assert_false(manager_job_valid(""));
        assert_false(manager_job_valid("12 3"));
        assert_false(manager_job_valid("a\tb"));
        assert_false(manager_job_valid("a\x1b[2J"));
        assert_false(manager_job_valid("caf\xc3\xa9"));
        memset(long_tag, 'x', sizeof(long_tag) - 1);
        long_tag[MANAGER_JOB_MAX] = '\0';
        assert_true(manager_job_valid(long_tag));
        long_tag[MANAGER_JOB_MAX] = 'x';
        long_tag[MANAGER_JOB_MAX + 1] = '\0';
        assert_false(manager_job_valid(long_tag));
}

static const char *job_of(struct json_object *app)
{
        struct json_object *v;

        assert_true(json_object_object_get_ex(app, "job", &v));
        return v ? json_object_get_string(v) : NULL;
}

static void a_tag_shows_in_status_and_report(void **state)
{
        char err[256];
        struct sim_manager f;
        struct manager *m;
        struct json_object *j, *apps;
        const pid_t a = SIM_PID_BASE, b = SIM_PID_BASE + 1;

        sim_manager_open(&f, SCENARIO, "monitor", 2);
        m = f.m;

        assert_int_equal(manager_set_job(m, a, "bad tag", err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "printable"));
        assert_int_equal(manager_set_job(m, b + 1, "9", err, sizeof(err)), -ENOENT);
        assert_int_equal(manager_set_job(m, a, "4242", err, sizeof(err)), 0);

        j = json_object_new_object();
        manager_status(m, j);
        assert_true(json_object_object_get_ex(j, "apps", &apps));
        assert_int_equal(json_object_array_length(apps), 2);
        assert_string_equal(job_of(json_object_array_get_idx(apps, 0)), "4242");
        assert_null(job_of(json_object_array_get_idx(apps, 1)));
        json_object_put(j);

        j = json_object_new_object();
        assert_int_equal(manager_report(m, a, NULL, j, err, sizeof(err)), 0);
        assert_string_equal(job_of(j), "4242");
        json_object_put(j);

        sim_manager_close(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(tags_are_bounded_and_printable),
    cmocka_unit_test(a_tag_shows_in_status_and_report),
};

PCTL_TEST_MAIN(tests)
