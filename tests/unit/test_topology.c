/* The topology read from sysfs and how it is reported (`pctl sensors`, pctld's status): the
 * VM test's machine (4 CPUs in 2 sockets, as qemu -smp 4,sockets=2,cores=2 gives them), package
 * ids with a gap, and the allocator placing by them. */
#define _GNU_SOURCE /* nftw, unshare */
#include <errno.h>
#include <json-c/json.h>
#include <ftw.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "pctl_test.h"

#include "fake_tree.h"
#include "pctl/allocator.h"
#include "pctl/fsio.h"
#include "pctl/jsonfmt.h"
#include "pctl/topology.h"
#include "pctl/util.h"

/* A sysfs tree with the given online list and package id of CPUs 0..n-1. */
static void fake_cpus(const char *online, const int *package, unsigned n)
{
        char path[128], v[16];

        fake_tree_new("topology");
        fake_put("/sys/devices/system/cpu/online", online);
        for (unsigned c = 0; c < n; c++) {
                snprintf(path, sizeof(path),
                         "/sys/devices/system/cpu/cpu%u/topology/physical_package_id", c);
                snprintf(v, sizeof(v), "%d\n", package[c]);
                fake_put(path, v);
        }
        fake_tree_use();
}

static void two_sockets_read_from_sysfs(void **state)
{
        static const int pk[] = {0, 0, 1, 1};
        struct json_object *j;
        struct topology t;
        char text[256];

        fake_cpus("0-3\n", pk, 4);
        assert_int_equal(topology_read(&t), 0);
        assert_int_equal(t.n_packages, 2);
        assert_int_equal(topology_packages_present(&t), 2);
        assert_int_equal(topology_describe(&t, text, sizeof(text)), 0);
        assert_string_equal(text, "4 CPUs (0-3) in 2 packages: package 0: 0-1; package 1: 2-3");
        j = topology_json(&t);
        assert_string_equal(
            json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
            "{\"cpus\":\"0-3\",\"n_cpus\":4,\"n_packages\":2,\"packages\":[{\"package\":0,"
            "\"cpus\":\"0-1\"},{\"package\":1,\"cpus\":\"2-3\"}]}");
        json_object_put(j);
        topology_free(&t);
        fake_tree_free();
}

/* Package ids need not be dense (a socket left empty, offline CPUs): only packages that hold an
 * online CPU are counted and listed. */
static void package_ids_with_a_gap(void **state)
{
        static const int pk[] = {0, 2, 0, 2};
        struct topology t;
        char text[256];

        fake_cpus("0-3\n", pk, 4);
        assert_int_equal(topology_read(&t), 0);
        assert_int_equal(t.n_packages, 3);
        assert_int_equal(topology_packages_present(&t), 2);
        assert_int_equal(topology_describe(&t, text, sizeof(text)), 0);
        assert_string_equal(text, "4 CPUs (0-3) in 2 packages: package 0: 0,2; package 2: 1,3");
        topology_free(&t);
        fake_tree_free();
}

/* A buffer too small gets nothing written and -ENOBUFS. */
static void describe_too_small(void **state)
{
        struct topology t;
        char text[16] = "untouched";

        assert_int_equal(topology_synthetic(&t, 2, 2, 1), 0);
        assert_int_equal(topology_describe(&t, text, sizeof(text)), -ENOBUFS);
        assert_string_equal(text, "untouched");
        topology_free(&t);
}

/* The allocator on that machine: two apps of 2 cores each get one package each. */
static void two_apps_one_package_each(void **state)
{
        static const int pk[] = {0, 0, 1, 1};
        struct allocator_app apps[2] = {{.want_cores = 2}, {.want_cores = 2}};
        struct cpumask allowed, cur[2], out[2];
        struct topology t;
        char a[32], b[32];

        fake_cpus("0-3\n", pk, 4);
        assert_int_equal(topology_read(&t), 0);
        assert_int_equal(cpumask_parse("0-3", &allowed), 0);
        /* Both start on every CPU, as a new app does. */
        cur[0] = cur[1] = allowed;
        assert_int_equal(allocator_place(&t, &allowed, apps, cur, out, 2), 0);
        cpumask_format(&out[0], a, sizeof(a));
        cpumask_format(&out[1], b, sizeof(b));
        assert_string_equal(a, "0-1");
        assert_string_equal(b, "2-3");
        topology_free(&t);
        fake_tree_free();
}

/* The packages an app's CPUs lie on (pctl status): on the 2 x 6 machine 0-2,6-7 lie on both,
 * 1-3 on package 0, none on none; a CPU the topology does not have (beyond it, or offline)
 * makes them unknown, and nothing is written. */
static void packages_of_cpus(void **state)
{
        struct cpumask cpus, pkgs, before;
        struct topology t;
        char text[32];

        assert_int_equal(topology_synthetic(&t, 2, 6, 1), 0);
        assert_int_equal(cpumask_parse("0-2,6-7", &cpus), 0);
        assert_int_equal(topology_packages_of(&t, &cpus, &pkgs), 2);
        assert_int_equal(topology_format_packages(&pkgs, text, sizeof(text)), 0);
        assert_string_equal(text, "0,1");
        assert_int_equal(cpumask_parse("1-3", &cpus), 0);
        assert_int_equal(topology_packages_of(&t, &cpus, &pkgs), 1);
        assert_int_equal(topology_format_packages(&pkgs, text, sizeof(text)), 0);
        assert_string_equal(text, "0");
        cpumask_zero(&cpus);
        assert_int_equal(topology_packages_of(&t, &cpus, &pkgs), 0);
        assert_true(cpumask_empty(&pkgs));

        assert_int_equal(cpumask_parse("5,12", &cpus), 0); /* 12: not a CPU of this machine */
        assert_int_equal(cpumask_parse("7", &pkgs), 0);
        before = pkgs;
        assert_int_equal(topology_packages_of(&t, &cpus, &pkgs), -ENODATA);
        assert_true(cpumask_equal(&pkgs, &before));
        cpumask_clear(&t.online, 3); /* offline */
        assert_int_equal(cpumask_parse("3", &cpus), 0);
        assert_int_equal(topology_packages_of(&t, &cpus, &pkgs), -ENODATA);
        topology_free(&t);
}

/* A CPU whose package sysfs does not give (no physical_package_id) is placed as package 0, as
 * before, but no report says which package it is on: the packages of CPUs that include it are
 * unknown; the others' are known. Read from a fake sysfs. */
static void an_unread_package_is_unknown(void **state)
{
        struct cpumask cpus, pkgs;
        struct topology t;

        fake_tree_new("topology");
        fake_put("/sys/devices/system/cpu/online", "0-3\n");
        fake_put("/sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
        fake_put("/sys/devices/system/cpu/cpu1/topology/physical_package_id", "0\n");
        fake_put("/sys/devices/system/cpu/cpu2/topology/physical_package_id", "1\n");
        fake_put("/sys/devices/system/cpu/cpu3/topology/physical_package_id", "-1\n");
        fake_tree_use();
        assert_int_equal(topology_read(&t), 0);
        assert_int_equal(t.cpu[3].package, 0);
        assert_true(cpumask_test(&t.package_unread, 3));
        assert_int_equal(cpumask_parse("1-2", &cpus), 0);
        assert_int_equal(topology_packages_of(&t, &cpus, &pkgs), 2);
        assert_int_equal(cpumask_parse("2-3", &cpus), 0);
        assert_int_equal(topology_packages_of(&t, &cpus, &pkgs), -ENODATA);
        topology_free(&t);
        fake_tree_free();
}

/* Package sets as status prints them: pairs with a comma, runs of three or more as ranges; a
 * buffer too small gets nothing written. */
static void package_sets_as_text(void **state)
{
        static const struct {
                const char *set, *text;
        } cases[] = {
            {"0", "0"},
            {"0-1", "0,1"},
            {"0-3", "0-3"},
            {"0,2,4-7", "0,2,4-7"},
            {"1-2,5-6", "1,2,5,6"},
        };
        struct cpumask pkgs;
        char text[32];

        for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
                assert_int_equal(cpumask_parse(cases[k].set, &pkgs), 0);
                assert_int_equal(topology_format_packages(&pkgs, text, sizeof(text)), 0);
                assert_string_equal(text, cases[k].text);
        }
        assert_int_equal(cpumask_parse("0-1", &pkgs), 0);
        (void)strscpy(text, "untouched", sizeof(text));
        assert_int_equal(topology_format_packages(&pkgs, text, 3), -ENOBUFS);
        assert_string_equal(text, "untouched");
}

/* Package ids back from a report's JSON array: duplicates count once; anything but an array
 * of ids in range is refused and writes nothing. */
static void package_sets_from_json(void **state)
{
        static const struct {
                const char *json;
                int n;
                const char *set;
        } cases[] = {
            {"[0, 1]", 2, "0-1"},
            {"[1, 0, 1]", 2, "0-1"},
            {"[]", 0, ""},
            {"[4095]", 1, "4095"},
            {"null", -EINVAL, NULL},
            {"\"0,1\"", -EINVAL, NULL},
            {"[0, -1]", -EINVAL, NULL},
            {"[4096]", -EINVAL, NULL},
            {"[0, \"1\"]", -EINVAL, NULL},
            {"[1.0]", -EINVAL, NULL},
            {"{\"0\": 1}", -EINVAL, NULL},
        };

        for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
                struct json_object *j = json_tokener_parse(cases[k].json);
                struct cpumask pkgs, want;
                char text[CPUMASK_LIST_MAX];

                cpumask_zero(&pkgs);
                cpumask_set(&pkgs, 7); /* untouched on refusal */
                assert_int_equal(topology_packages_from_json(j, &pkgs), cases[k].n);
                if (cases[k].set) {
                        assert_int_equal(cpumask_parse(cases[k].set, &want), 0);
                        cpumask_format(&pkgs, text, sizeof(text));
                        if (!cpumask_equal(&pkgs, &want))
                                fail_msg("%s: %s, not %s", cases[k].json, text, cases[k].set);
                } else {
                        assert_true(cpumask_test(&pkgs, 7) && cpumask_count(&pkgs) == 1);
                }
                json_object_put(j);
        }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(two_sockets_read_from_sysfs),
    cmocka_unit_test(package_ids_with_a_gap),
    cmocka_unit_test(describe_too_small),
    cmocka_unit_test(two_apps_one_package_each),
    cmocka_unit_test(packages_of_cpus),
    cmocka_unit_test(an_unread_package_is_unknown),
    cmocka_unit_test(package_sets_as_text),
    cmocka_unit_test(package_sets_from_json),
};

PCTL_TEST_MAIN(tests)
