/* /proc/PID/task/TID/cgroup text (lib/proc_cgroup.c): the unified line, a v1 hierarchy by one
 * of its controllers, paths holding ':', and what is refused. */
#include <errno.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/proc_cgroup.h"

static const char hybrid[] = "12:pids:/user.slice\n"
                             "5:cpu,cpuacct:/user.slice\n"
                             "4:cpuset:/pctl/app-42\n"
                             "1:name=systemd:/user.slice/session-1.scope\n"
                             "0::/user.slice/session-1.scope\n";

static void finds_each_hierarchy(void **state)
{
        char buf[64];

        assert_int_equal(proc_cgroup_path(hybrid, "cpuset", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/pctl/app-42");
        assert_int_equal(proc_cgroup_path(hybrid, "cpuacct", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/user.slice");
        assert_int_equal(proc_cgroup_path(hybrid, NULL, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/user.slice/session-1.scope");
        /* A name may hold ':'; the last line needs no newline. */
        assert_int_equal(proc_cgroup_path("3:cpuset:/a:b", "cpuset", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/a:b");
}

static void refuses_without_writing(void **state)
{
        char buf[8] = "keep";

        /* "cpu" is not "cpuset" nor "cpu,cpuacct"'s prefix match; "10::" is not the unified. */
        assert_int_equal(proc_cgroup_path("5:cpu,cpuacct:/x\n", "cpuset", buf, sizeof(buf)),
                         -ENOENT);
        assert_int_equal(proc_cgroup_path("4:cpuset:/x\n", "cpu", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(proc_cgroup_path("10::/x\n:0::/y\n", NULL, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(proc_cgroup_path("0:/x\n\n", NULL, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(proc_cgroup_path("", NULL, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(proc_cgroup_path("0::/too/long/for/it\n", NULL, buf, sizeof(buf)),
                         -ENAMETOOLONG);
        assert_string_equal(buf, "keep");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(finds_each_hierarchy),
    cmocka_unit_test(refuses_without_writing),
};

PCTL_TEST_MAIN(tests)
