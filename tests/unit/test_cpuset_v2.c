/* The cgroup v2 path against a fake tree (fs root prefix): detection, the delegated subtree
 * (pctld into a leaf, +cpuset for its children), adopt into one child per app, set/read-back
 * of cpuset.cpus(.effective), release into the original cgroup. This machine's v2 has no
 * cpuset controller, so the kernel's side (migration, effective masks, the no-internal-process
 * rule, removing a populated group) is NOT exercised here: the test plays the kernel's part
 * by writing cpuset.cpus.effective itself. The app is this test process (its real affinity
 * is read and written back unchanged). */
#define _GNU_SOURCE /* nftw */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_tree.h"
#include "pctl_test.h"
#include "pctl/actuator.h"
#include "pctl/cpuset.h"
#include "pctl/fsio.h"
#include "pctl/state.h"

#define SVC "/sys/fs/cgroup/pctld.service"

static void fake_v2_tree(pid_t pid)
{
        char stat[256], rel[256];

        fake_tree_new("v2");
        fake_put("/sys/devices/system/cpu/online", "0-3\n");
        fake_put("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_put("/proc/self/cgroup", "0::/pctld.service\n");
        fake_put(SVC "/cgroup.controllers", "cpuset cpu\n");
        fake_put(SVC "/cgroup.subtree_control", "\n");
        fake_put(SVC "/cgroup.procs", "\n");
        fake_put(SVC "/cpuset.cpus.effective", "0-3\n");
        fake_put(SVC "/daemon/cgroup.procs", "\n");
        fake_put("/sys/fs/cgroup/user.slice/app.scope/cgroup.procs", "\n");
        /* A name with a space and a ')' as the kernel allows; starttime (field 22) = 12345. */
        snprintf(stat, sizeof(stat),
                 "%d (a) b) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n", (int)pid);
        snprintf(rel, sizeof(rel), "/proc/%d/stat", (int)pid);
        fake_put(rel, stat);
        snprintf(rel, sizeof(rel), "/proc/%d/task/%d/stat", (int)pid, (int)pid);
        fake_put(rel, stat);
        snprintf(rel, sizeof(rel), "/proc/%d/task/%d/cgroup", (int)pid, (int)pid);
        fake_put(rel, "0::/user.slice/app.scope\n");
        /* The kernel makes these files with the directory; here they exist beforehand, and
         * adopt reuses a directory of ours left with the same name. */
        snprintf(rel, sizeof(rel), SVC "/app-%d/cgroup.procs", (int)pid);
        fake_put(rel, "\n");
        snprintf(rel, sizeof(rel), SVC "/app-%d/cpuset.cpus", (int)pid);
        fake_put(rel, "\n");
        snprintf(rel, sizeof(rel), SVC "/app-%d/cpuset.cpus.effective", (int)pid);
        fake_put(rel, "0-3\n");
        fake_tree_use();
}

static void v2_delegated_subtree(void **state)
{
        struct actuator_config cfg = {
            .mode = CPUSET_AUTO, .cgroup_root = "/sys/fs/cgroup", .group = "pctl"};
        pid_t pid = getpid();
        struct actuator_probe probe;
        enum cpuset_mode mode;
        struct state_record *rec;
        struct cpuset *cs;
        struct cpuset_app *app;
        struct cpumask m;
        char why[256], dir[1024], rel[768], pidstr[32], record[4096];
        FILE *f;
        size_t n;

        fake_v2_tree(pid);
        snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);

        assert_int_equal(cpuset_probe(&cfg, &mode, &probe), 0);
        assert_int_equal(mode, CPUSET_V2);

        snprintf(dir, sizeof(dir), "%s/state", fake_root);
        assert_int_equal(state_record_open(dir, &rec), 0);
        assert_int_equal(cpuset_open(&cfg, rec, &cs, why, sizeof(why)), 0);
        assert_int_equal(cpuset_mode(cs), CPUSET_V2);
        /* pctld went into the leaf before enabling cpuset for the children. */
        fake_assert_reads(SVC "/daemon/cgroup.procs", pidstr);
        fake_assert_reads(SVC "/cgroup.subtree_control", "+cpuset");

        assert_int_equal(cpuset_adopt(cs, pid, "self", &app), 0);
        snprintf(rel, sizeof(rel), SVC "/app-%d/cgroup.procs", (int)pid);
        fake_assert_reads(rel, pidstr); /* v2 moves the whole process */
        /* Recorded before the move: the child, and the thread with its origin. */
        snprintf(dir, sizeof(dir), "%s/state/" STATE_RECORD_FILE, fake_root);
        f = fopen(dir, "r");
        assert_non_null(f);
        n = fread(record, 1, sizeof(record) - 1, f);
        record[n] = '\0';
        fclose(f);
        snprintf(rel, sizeof(rel), "dir %s" SVC "/app-%d\n", fake_root, (int)pid);
        assert_non_null(strstr(record, rel));
        snprintf(rel, sizeof(rel),
                 "task %d %d 12345 %s/sys/fs/cgroup/user.slice/app.scope/cgroup.procs ", (int)pid,
                 (int)pid, fake_root);
        assert_non_null(strstr(record, rel));

        /* The kernel's part: cpuset.cpus.effective follows cpuset.cpus. */
        snprintf(rel, sizeof(rel), SVC "/app-%d/cpuset.cpus.effective", (int)pid);
        fake_put(rel, "1-2\n");
        assert_int_equal(cpumask_parse("1-2", &m), 0);
        assert_int_equal(cpuset_set_cpus(cs, app, &m), 0);
        snprintf(rel, sizeof(rel), SVC "/app-%d/cpuset.cpus", (int)pid);
        fake_assert_reads(rel, "1-2");
        assert_int_equal(cpuset_get_cpus(cs, app, &m), 0);
        assert_true(m.bits[0] == 0x6);
        /* A read-back that differs is reported, with both lists. */
        assert_int_equal(cpumask_parse("3", &m), 0);
        assert_int_equal(cpuset_set_cpus(cs, app, &m), -EIO);
        assert_non_null(
            strstr(cpuset_error(cs), "cpuset.cpus.effective reads 1-2 after writing 3"));
        assert_int_equal(cpumask_parse("0-7", &m), 0);
        assert_int_equal(cpuset_set_cpus(cs, app, &m), -ERANGE);
        assert_non_null(
            strstr(cpuset_error(cs),
                   "CPU list 0-7 includes CPUs this machine does not have (online: 0-3)"));
        cpumask_zero(&m);
        assert_int_equal(cpuset_set_cpus(cs, app, &m), -EINVAL);

        /* cgroupfs removes a group's files with it; plain files must go first. */
        snprintf(rel, sizeof(rel), "%s" SVC "/app-%d", fake_root, (int)pid);
        snprintf(dir, sizeof(dir), "%s/cgroup.procs", rel);
        unlink(dir);
        snprintf(dir, sizeof(dir), "%s/cpuset.cpus", rel);
        unlink(dir);
        snprintf(dir, sizeof(dir), "%s/cpuset.cpus.effective", rel);
        unlink(dir);
        assert_int_equal(cpuset_release(cs, app), 0);
        fake_assert_reads("/sys/fs/cgroup/user.slice/app.scope/cgroup.procs", pidstr);
        assert_int_equal(access(rel, F_OK), -1);
        assert_int_equal(state_record_count(rec), 0);
        cpuset_close(cs);
        state_record_close(rec);
        fake_tree_free();
}

static void v2_without_cpuset_controller_says_why(void **state)
{
        struct actuator_config cfg = {
            .mode = CPUSET_V2, .cgroup_root = "/sys/fs/cgroup", .group = "pctl"};
        struct actuator_probe probe;
        enum cpuset_mode mode;

        fake_v2_tree(getpid());
        fake_put(SVC "/cgroup.controllers", "cpu memory\n");
        assert_int_equal(cpuset_probe(&cfg, &mode, &probe), -ENODEV);
        assert_false(probe.available);
        assert_non_null(strstr(probe.reason, "offers no cpuset controller"));
        /* auto falls back: no v1 hierarchy in the fake tree either, so affinity. */
        cfg.mode = CPUSET_AUTO;
        assert_int_equal(cpuset_probe(&cfg, &mode, &probe), 0);
        assert_int_equal(mode, CPUSET_AFFINITY);
        assert_non_null(strstr(probe.reason, "not v1: no cgroup v1 cpuset hierarchy"));
        fake_tree_free();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(v2_delegated_subtree),
    cmocka_unit_test(v2_without_cpuset_controller_says_why),
};

PCTL_TEST_MAIN(tests)
