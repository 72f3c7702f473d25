/* The actuator's generic parts: the state record (format, atomic commit, lock), error classes,
 * mode names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/actuator.h"
#include "pctl/state.h"

static void entry_round_trip(void **state)
{
        struct state_entry e = {.kind = STATE_TASK, .pid = 42, .tid = 43, .start_ticks = 9876},
                           back;
        char line[1024];

        strcpy(e.path, "/sys/fs/cgroup/cpuset/tasks");
        cpumask_set(&e.mask, 0);
        cpumask_set(&e.mask, 2);
        cpumask_set(&e.mask, 3);
        assert_int_equal(state_entry_format(&e, line, sizeof(line)), 0);
        assert_string_equal(line, "task 42 43 9876 /sys/fs/cgroup/cpuset/tasks 0,2-3");
        assert_int_equal(state_entry_parse(line, &back), 0);
        assert_int_equal(back.pid, 42);
        assert_int_equal(back.tid, 43);
        assert_true(back.start_ticks == 9876);
        assert_true(cpumask_equal(&back.mask, &e.mask));
        assert_string_equal(back.path, e.path);

        assert_int_equal(state_entry_parse("freq /sys/x/policy0 schedutil 800000 3000000", &back),
                         0);
        assert_int_equal(back.kind, STATE_FREQ);
        assert_string_equal(back.governor, "schedutil");
        assert_int_equal(back.max_khz, 3000000);
        assert_int_equal(state_entry_parse("dir /sys/fs/cgroup/cpuset/pctl", &back), 0);
        assert_int_equal(back.kind, STATE_DIR);
        assert_int_equal(state_entry_parse("task 1 1 5 - 0", &back), 0);
        assert_string_equal(back.path, "-");
}

static void bad_lines_rejected(void **state)
{
        static const char *const bad[] = {
            "",
            "dir",
            "dir relative/path",
            "dir /a extra",
            "task 0 1 5 - 0",
            "task 1 1 5 - ",
            "task 1 1 x - 0",
            "task 1 1 5 rel 0",
            "task 1 1 5 - 0-",
            "freq /p gov 1",
            "freq /p gov x 2",
            "bogus /x",
        };
        struct state_entry e = {.kind = STATE_DIR};
        char line[64];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (state_entry_parse(bad[i], &e) == 0)
                        fail_msg("'%s' was accepted", bad[i]);
        strcpy(e.path, "/with space");
        assert_int_equal(state_entry_format(&e, line, sizeof(line)), -EINVAL);
}

static void record_commit_load_and_lock(void **state)
{
        char dir[] = "/tmp/pctl-test-state-XXXXXX", sub[64], path[128];
        struct state_record *r, *r2;
        struct state_entry d = {.kind = STATE_DIR}, t = {.kind = STATE_TASK, .pid = 7, .tid = 8};
        struct state_entry *list;
        size_t n;

        assert_non_null(mkdtemp(dir));
        snprintf(sub, sizeof(sub), "%s/a/b", dir); /* made on demand */
        assert_int_equal(state_record_open(sub, &r), 0);
        /* One holder at a time: a second open is refused while the first lives. */
        assert_int_equal(state_record_open(sub, &r2), -EBUSY);
        strcpy(d.path, "/sys/fs/cgroup/cpuset/pctl");
        strcpy(t.path, "-");
        cpumask_set(&t.mask, 1);
        assert_int_equal(state_record_add(r, &d), 0);
        assert_int_equal(state_record_add(r, &t), 0);
        t.mask.bits[0] = 3; /* the first record of a thing is its original state */
        assert_int_equal(state_record_add(r, &t), 0);
        assert_int_equal(state_record_count(r), 2);
        assert_int_equal(state_record_commit(r), 0);
        assert_int_equal(state_record_load(r, &list, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_int_equal(list[0].kind, STATE_DIR);
        assert_int_equal(list[1].tid, 8);
        assert_true(list[1].mask.bits[0] == 2);
        free(list);
        state_record_close(r);
        /* The file outlives its holder (a crash), and the lock does not. */
        assert_int_equal(state_record_open(sub, &r), 0);
        assert_int_equal(state_record_load(r, &list, &n, NULL), 0);
        assert_int_equal(n, 2);
        free(list);
        state_record_remove(r, &t); /* nothing in memory: the file is what was loaded */
        assert_int_equal(state_record_commit(r), 0);
        snprintf(path, sizeof(path), "%s/%s", sub, STATE_RECORD_FILE);
        assert_int_equal(access(path, F_OK), -1); /* an empty record is no file */
        state_record_close(r);
        snprintf(path, sizeof(path), "rm -rf %s", dir);
        assert_int_equal(system(path), 0);
}

static void corrupt_record_names_line(void **state)
{
        char dir[] = "/tmp/pctl-test-state-XXXXXX", path[128];
        struct state_record *r;
        struct state_entry *list;
        unsigned bad = 0;
        size_t n;
        FILE *f;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/%s", dir, STATE_RECORD_FILE);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("pctl-actuators 1\ndir /x\ntask garbage\n", f);
        fclose(f);
        assert_int_equal(state_record_open(dir, &r), 0);
        assert_int_equal(state_record_load(r, &list, &n, &bad), -EBADMSG);
        assert_int_equal(bad, 3);
        state_record_close(r);
        snprintf(path, sizeof(path), "rm -rf %s", dir);
        assert_int_equal(system(path), 0);
}

static void error_classes(void **state)
{
        assert_true(actuator_error_is_transient(-EBUSY));
        assert_true(actuator_error_is_transient(-EAGAIN));
        assert_true(actuator_error_is_transient(-EINTR));
        assert_false(actuator_error_is_transient(-ENOSPC));
        assert_false(actuator_error_is_transient(-EINVAL));
        assert_false(actuator_error_is_transient(-ERANGE));
        assert_false(actuator_error_is_transient(-EACCES));
        assert_false(actuator_error_is_transient(-EPERM));
        assert_false(actuator_error_is_transient(-ESRCH));
        assert_true(actuator_error_is_gone(-ESRCH));
        assert_false(actuator_error_is_gone(-EINVAL));
}

static void mode_names(void **state)
{
        enum cpuset_mode m;

        for (int i = CPUSET_AUTO; i <= CPUSET_AFFINITY; i++) {
                assert_int_equal(actuator_mode_parse(actuator_mode_name(i), &m), 0);
                assert_int_equal(m, i);
        }
        m = CPUSET_V2;
        assert_int_equal(actuator_mode_parse("v3", &m), -EINVAL);
        assert_int_equal(m, CPUSET_V2);
}

static void recover_without_record_is_nothing(void **state)
{
        char dir[] = "/tmp/pctl-test-state-XXXXXX", cmd[64];
        struct actuator_config cfg = {.state_dir = dir};
        struct state_record *r;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(actuator_recover(&cfg), 0);
        /* A live holder's record is not ours to undo. */
        assert_int_equal(state_record_open(dir, &r), 0);
        assert_int_equal(actuator_recover(&cfg), -EBUSY);
        state_record_close(r);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(entry_round_trip),
    cmocka_unit_test(bad_lines_rejected),
    cmocka_unit_test(record_commit_load_and_lock),
    cmocka_unit_test(corrupt_record_names_line),
    cmocka_unit_test(error_classes),
    cmocka_unit_test(mode_names),
    cmocka_unit_test(recover_without_record_is_nothing),
};

PCTL_TEST_MAIN(tests)
