/* The topology read from sysfs and how it is reported (`pctl sensors`, pctld's status): the
 * VM test's machine (4 CPUs in 2 sockets, as qemu -smp 4,sockets=2,cores=2 gives them), package
 * ids with a gap, and the allocator placing by them. */
#define _GNU_SOURCE /* nftw, unshare */
#include <errno.h>
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

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(two_sockets_read_from_sysfs),
    cmocka_unit_test(package_ids_with_a_gap),
    cmocka_unit_test(describe_too_small),
    cmocka_unit_test(two_apps_one_package_each),
};

PCTL_TEST_MAIN(tests)
