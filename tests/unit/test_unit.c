/* The systemd side of the actuator where it is pure: AllowedCPUs='s byte encoding, the facts
 * that choose the mode (a fake /run and cgroup mount), the choice itself (under systemd auto
 * never takes a subtree of pctld's own unit), whether a process is its unit's whole content
 * (a fake cgroup tree and /proc), and the state record's `unit` lines. The D-Bus calls are
 * exercised in the Debian VM (tests/vm/check_systemd.sh). */
#define _GNU_SOURCE /* nftw */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fake_tree.h"
#include "pctl_test.h"
#include "pctl/actuator.h"
#include "pctl/state.h"
#include "pctl/unit.h"
#include "pctl/util.h"

static void cpus_to_bytes(void **state)
{
        static const struct {
                const char *list;
                size_t n;
                uint8_t bytes[4];
        } cases[] = {
            {"", 0, {0}},       {"0", 1, {0x01}},       {"1-2", 1, {0x06}},
            {"0-7", 1, {0xff}}, {"9", 2, {0x00, 0x02}}, {"0,8,16,31", 4, {1, 1, 1, 0x80}},
        };

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct cpumask m, back;
                uint8_t buf[16];
                size_t n;

                assert_int_equal(cpumask_parse(cases[i].list, &m), 0);
                n = unit_cpus_to_bytes(&m, buf, sizeof(buf));
                if (n != cases[i].n || memcmp(buf, cases[i].bytes, n))
                        fail_msg("'%s' encodes to %zu bytes, expected %zu", cases[i].list, n,
                                 cases[i].n);
                assert_int_equal(unit_cpus_from_bytes(buf, n, &back), 0);
                assert_true(cpumask_equal(&m, &back));
        }
}

static void cpus_from_bytes_out_of_range(void **state)
{
        uint8_t big[CPUMASK_MAX / 8 + 1] = {0};
        struct cpumask m;

        big[CPUMASK_MAX / 8] = 1; /* CPU CPUMASK_MAX: more than a mask holds */
        assert_int_equal(unit_cpus_from_bytes(big, sizeof(big), &m), -ERANGE);
}

static void facts_from_tree(void **state)
{
        struct unit_facts f;
        char why[256];

        /* systemd on pure v2 with cpuset: usable (before the bus is asked). */
        fake_tree_new("unit-facts");
        fake_put("/run/systemd/system/.keep", "");
        fake_put("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_tree_use();
        assert_int_equal(unit_facts_read("/sys/fs/cgroup", &f), 0);
        assert_true(f.systemd);
        assert_true(f.v2_cpuset);
        assert_true(unit_facts_usable(&f, why, sizeof(why)));
        /* The bus did not answer: not usable, and it says so. */
        f.bus_tested = true;
        f.bus_err = -ETIMEDOUT;
        snprintf(f.bus_why, sizeof(f.bus_why), "the system bus does not answer: timeout");
        assert_false(unit_facts_usable(&f, why, sizeof(why)));
        assert_non_null(strstr(why, "does not answer"));
        fake_tree_free();

        /* Hybrid (this machine's kind): v2 without cpuset. */
        fake_tree_new("unit-facts");
        fake_put("/run/systemd/system/.keep", "");
        fake_put("/sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n");
        fake_tree_use();
        assert_int_equal(unit_facts_read("/sys/fs/cgroup", &f), 0);
        assert_false(unit_facts_usable(&f, why, sizeof(why)));
        assert_string_equal(why, "the cpuset controller is not on cgroup v2");
        fake_tree_free();

        /* No systemd (a container, a plain init). */
        fake_tree_new("unit-facts");
        fake_put("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
        fake_tree_use();
        assert_int_equal(unit_facts_read("/sys/fs/cgroup", &f), 0);
        assert_false(f.systemd);
        assert_false(unit_facts_usable(&f, why, sizeof(why)));
        assert_non_null(strstr(why, "PID 1 is not systemd"));
        fake_tree_free();
}

/* The mode choice through the real backend's probe, on a fake tree where pctld's own unit is a
 * delegated v2 subtree with cpuset (what made the old pctld move apps into it). */
static void fake_delegated_v2(bool systemd)
{
        fake_tree_new("unit-mode");
        if (systemd)
                fake_put("/run/systemd/system/.keep", "");
        fake_put("/sys/devices/system/cpu/online", "0-3\n");
        fake_put("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_put("/proc/self/cgroup", "0::/pctld.service\n");
        fake_put("/sys/fs/cgroup/pctld.service/cgroup.controllers", "cpuset cpu\n");
        fake_put("/sys/fs/cgroup/pctld.service/cgroup.subtree_control", "\n");
        fake_tree_use();
}

static void auto_never_takes_own_unit_under_systemd(void **state)
{
        struct actuator_config cfg = {.mode = CPUSET_AUTO, .cgroup_root = "/sys/fs/cgroup"};
        struct actuator_probe cs, fq;

        /* Without systemd the delegated subtree is fine. */
        fake_delegated_v2(false);
        assert_int_equal(actuator_real_ops.probe(&cfg, &cs, &fq), 0);
        assert_true(cs.available);
        assert_non_null(strstr(cs.reason, "cgroup v2 cpuset"));
        assert_non_null(strstr(cs.reason, "not systemd: PID 1 is not systemd"));
        fake_tree_free();

        /* Under systemd, where the system bus does not answer (none on this machine, or one
         * that is not systemd's): never the subtree of our own unit; affinity, and why. */
        if (access("/run/dbus/system_bus_socket", F_OK) == 0) {
                print_message("SKIP part: this machine has a system bus\n");
                return;
        }
        fake_delegated_v2(true);
        assert_int_equal(actuator_real_ops.probe(&cfg, &cs, &fq), 0);
        assert_true(cs.available);
        if (strncmp(cs.reason, "affinity (not systemd: ", 23))
                fail_msg("reason: %s", cs.reason);
        assert_non_null(strstr(cs.reason, "system bus"));
        assert_non_null(strstr(cs.reason, "not v2: under systemd it would take apps out of"));
        /* An explicit systemd mode is unavailable, with the reason. */
        cfg.mode = CPUSET_SYSTEMD;
        assert_int_equal(actuator_real_ops.probe(&cfg, &cs, &fq), -ENODEV);
        assert_false(cs.available);
        assert_non_null(strstr(cs.reason, "systemd: "));
        fake_tree_free();
}

static void put_stat(pid_t pid, pid_t ppid)
{
        char rel[64], line[256];

        snprintf(rel, sizeof(rel), "/proc/%d/stat", (int)pid);
        snprintf(line, sizeof(line), "%d (x) S %d %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n",
                 (int)pid, (int)ppid, (int)pid, (int)pid);
        fake_put(rel, line);
}

static int is_own(const char *rel, pid_t pid)
{
        char dir[512];

        snprintf(dir, sizeof(dir), "%s%s", fake_root, rel);
        return unit_cgroup_is_own(dir, pid);
}

static void whole_unit_or_shared(void **state)
{
        fake_tree_new("unit-own");
        /* demo.service: the app 100, its child 101, a grandchild 102 in a sub-group. */
        fake_put("/cg/system.slice/demo.service/cgroup.procs", "100\n101\n");
        fake_put("/cg/system.slice/demo.service/worker/cgroup.procs", "102\n");
        put_stat(100, 1);
        put_stat(101, 100);
        put_stat(102, 101);
        /* session-1.scope: a shell 200, its child the app 201, and the shell's other child 202. */
        fake_put("/cg/user.slice/session-1.scope/cgroup.procs", "200\n201\n202\n");
        put_stat(200, 1);
        put_stat(201, 200);
        put_stat(202, 200);
        /* a delegated unit whose manager put the app 300 in a sub-group of its own. */
        fake_put("/cg/system.slice/deleg.service/cgroup.procs", "\n");
        fake_put("/cg/system.slice/deleg.service/payload/cgroup.procs", "300\n");
        put_stat(300, 1);
        fake_tree_use();

        assert_int_equal(is_own("/cg/system.slice/demo.service", 100), 1);
        assert_int_equal(is_own("/cg/user.slice/session-1.scope", 201), 0); /* shares */
        assert_int_equal(is_own("/cg/user.slice/session-1.scope", 200), 1); /* the whole tree */
        assert_int_equal(is_own("/cg/system.slice/deleg.service", 300), 0); /* not in its group */
        assert_int_equal(is_own("/cg/system.slice/demo.service", 101), 0);  /* its parent too */
        assert_int_equal(is_own("/cg/none", 100), -ENOENT);
        fake_tree_free();
}

static void record_unit_lines(void **state)
{
        static const char *const good[] = {"unit demo.service 0-3", "unit pctl-run-42.scope -"};
        static const char *const bad[] = {"unit demo.service", "unit a/b.service 0",
                                          "unit demo.service x", "unit demo.service 0 1"};
        struct state_entry e;
        char buf[512], why[256];

        for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
                assert_int_equal(state_entry_parse(good[i], &e, why, sizeof(why)), 0);
                assert_int_equal(e.kind, STATE_UNIT);
                assert_int_equal(state_entry_format(&e, buf, sizeof(buf)), 0);
                assert_string_equal(buf, good[i]);
        }
        assert_int_equal(state_entry_parse("unit pctl-run-42.scope -", &e, why, sizeof(why)), 0);
        assert_true(cpumask_empty(&e.mask));
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                if (state_entry_parse(bad[i], &e, why, sizeof(why)) == 0)
                        fail_msg("'%s' was accepted", bad[i]);
                else if (!why[0])
                        fail_msg("'%s' was refused without a reason", bad[i]);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(cpus_to_bytes),
    cmocka_unit_test(cpus_from_bytes_out_of_range),
    cmocka_unit_test(facts_from_tree),
    cmocka_unit_test(auto_never_takes_own_unit_under_systemd),
    cmocka_unit_test(whole_unit_or_shared),
    cmocka_unit_test(record_unit_lines),
};

PCTL_TEST_MAIN(tests)
