/* The actuator's generic parts: the state record (format, atomic commit, lock), error classes,
 * mode names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
        assert_int_equal(state_entry_parse(line, &back, NULL, 0), 0);
        assert_int_equal(back.pid, 42);
        assert_int_equal(back.tid, 43);
        assert_true(back.start_ticks == 9876);
        assert_true(cpumask_equal(&back.mask, &e.mask));
        assert_string_equal(back.path, e.path);

        assert_int_equal(
            state_entry_parse("freq /sys/x/policy0 schedutil 800000 3000000", &back, NULL, 0), 0);
        assert_int_equal(back.kind, STATE_FREQ);
        assert_string_equal(back.governor, "schedutil");
        assert_int_equal(back.max_khz, 3000000);
        assert_int_equal(state_entry_parse("dir /sys/fs/cgroup/cpuset/pctl", &back, NULL, 0), 0);
        assert_int_equal(back.kind, STATE_DIR);
        assert_int_equal(state_entry_parse("task 1 1 5 - 0", &back, NULL, 0), 0);
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
        char line[64], why[STATE_PROBLEM_MAX];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                why[0] = '\0';
                if (state_entry_parse(bad[i], &e, why, sizeof(why)) == 0)
                        fail_msg("'%s' was accepted", bad[i]);
                if (!why[0])
                        fail_msg("'%s' was refused without a reason", bad[i]);
                assert_int_equal(e.kind, STATE_DIR); /* nothing written */
        }
        assert_int_equal(state_entry_parse("task 1 2 3", &e, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "'task' takes 5 fields (PID TID START ORIGIN MASK), not 3");
        assert_int_equal(state_entry_parse("task 0 1 5 - 0", &e, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "PID '0' is not a positive number");
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
        assert_int_equal(state_record_take(r, &list, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(state_record_count(r), 0); /* taken */
        assert_int_equal(list[0].kind, STATE_DIR);
        assert_int_equal(list[1].tid, 8);
        assert_true(list[1].mask.bits[0] == 2);
        free(list);
        state_record_close(r);
        /* The file outlives its holder (a crash), and the lock does not. */
        assert_int_equal(state_record_open(sub, &r), 0);
        assert_int_equal(state_record_count(r), 2); /* read at open */
        assert_int_equal(state_record_take(r, &list, &n), 0);
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

static void put_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *path)
{
        static char buf[4096];
        FILE *f = fopen(path, "r");
        size_t n;

        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void rm_rf(const char *dir)
{
        char cmd[256];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

/* A bad line is reported (its number and why) and skipped; the good ones are read; the bad
 * one stays in the file through every commit, also once the good ones are gone. */
static void bad_line_reported_skipped_and_kept(void **state)
{
        char dir[] = "/tmp/pctl-test-state-XXXXXX", path[128];
        const struct state_problem *pr;
        struct state_record *r;
        struct state_entry *list;
        size_t n, np;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/%s", dir, STATE_RECORD_FILE);
        put_file(path, "pctl-actuators 1\ndir /x\ntask garbage\nfreq /p gov 1 2\n");
        assert_int_equal(state_record_open(dir, &r), 0);
        pr = state_record_problems(r, &np, NULL);
        assert_int_equal(np, 1);
        assert_int_equal(pr[0].line, 3);
        assert_string_equal(pr[0].why, "'task' takes 5 fields (PID TID START ORIGIN MASK), not 1");
        assert_string_equal(pr[0].text, "task garbage");
        assert_int_equal(state_record_kept(r), 1);
        assert_int_equal(state_record_take(r, &list, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(list[0].kind, STATE_DIR);
        assert_int_equal(list[1].kind, STATE_FREQ);
        free(list);
        /* Everything readable is undone: the file is not removed, it holds the bad line. */
        assert_int_equal(state_record_commit(r), 0);
        assert_string_equal(slurp(path), "pctl-actuators 1\ntask garbage\n");
        state_record_close(r);
        assert_int_equal(state_record_open(dir, &r), 0);
        pr = state_record_problems(r, &np, NULL);
        assert_int_equal(np, 1);
        assert_int_equal(pr[0].line, 2);
        assert_int_equal(state_record_commit(r), 0);
        assert_string_equal(slurp(path), "pctl-actuators 1\ntask garbage\n");
        state_record_close(r);
        rm_rf(dir);
}

/* A file that is not this format is renamed aside whole, never rewritten or parsed. */
static void foreign_record_set_aside(void **state)
{
        char dir[] = "/tmp/pctl-test-state-XXXXXX", path[128], aside[160];
        const struct state_problem *pr;
        struct state_record *r;
        size_t np;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/%s", dir, STATE_RECORD_FILE);
        for (int round = 0; round < 2; round++) {
                put_file(path, "pctl-actuators 2\ndir /x\n");
                assert_int_equal(state_record_open(dir, &r), 0);
                pr = state_record_problems(r, &np, NULL);
                assert_int_equal(np, 1);
                assert_int_equal(pr[0].line, 1);
                assert_non_null(strstr(pr[0].why, "set aside as"));
                assert_int_equal(state_record_count(r), 0);
                assert_int_equal(state_record_commit(r), 0);
                state_record_close(r);
                snprintf(aside, sizeof(aside), "%s.unread%s", path, round ? ".1" : "");
                assert_string_equal(slurp(aside), "pctl-actuators 2\ndir /x\n");
                assert_int_equal(access(path, F_OK), -1);
        }
        rm_rf(dir);
}

/* Recovery restores the good lines and leaves the bad one where it was; a start that fails
 * afterwards keeps what could not be undone, instead of committing an empty record. */
static void recover_skips_bad_line_and_failed_start_keeps_record(void **state)
{
        char dir[] = "/tmp/pctl-test-state-XXXXXX", path[128], gone[96], full[96], text[512];
        struct actuator_config cfg = {.state_dir = dir, .group = "not/one/component"};
        struct actuator_recovery rec;
        struct actuator *a;
        char why[256];

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/%s", dir, STATE_RECORD_FILE);
        snprintf(gone, sizeof(gone), "%s/made", dir); /* an empty directory: removed */
        snprintf(full, sizeof(full), "%s/full", dir); /* not empty: cannot be removed now */
        assert_int_equal(mkdir(gone, 0755), 0);
        assert_int_equal(mkdir(full, 0755), 0);
        snprintf(text, sizeof(text), "%s/file", full);
        put_file(text, "");
        snprintf(text, sizeof(text), "pctl-actuators 1\ndir %s\ntask 1 x\ndir %s\n", full, gone);
        put_file(path, text);
        assert_int_equal(actuator_recover(&cfg, &rec), 1);
        assert_int_equal(rec.restored, 1);
        assert_int_equal(rec.kept, 1);
        assert_int_equal(rec.kept_err, -ENOTEMPTY);
        assert_int_equal(rec.n_skipped, 1);
        assert_int_equal(rec.skipped[0].line, 3);
        assert_string_equal(rec.record, path);
        assert_int_equal(access(gone, F_OK), -1);
        snprintf(text, sizeof(text), "pctl-actuators 1\ndir %s\ntask 1 x\n", full);
        assert_string_equal(slurp(path), text);
        /* The real backend recovers first (what it cannot undo is no reason to stop), then
         * fails on its group name. */
        assert_int_equal(actuator_open(&actuator_real_ops, &cfg, &a, why, sizeof(why)), -EINVAL);
        assert_string_equal(slurp(path), text);
        rm_rf(dir);
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
        assert_int_equal(actuator_recover(&cfg, NULL), 0);
        /* A live holder's record is not ours to undo. */
        assert_int_equal(state_record_open(dir, &r), 0);
        assert_int_equal(actuator_recover(&cfg, NULL), -EBUSY);
        state_record_close(r);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(entry_round_trip),
    cmocka_unit_test(bad_lines_rejected),
    cmocka_unit_test(record_commit_load_and_lock),
    cmocka_unit_test(bad_line_reported_skipped_and_kept),
    cmocka_unit_test(foreign_record_set_aside),
    cmocka_unit_test(recover_skips_bad_line_and_failed_start_keeps_record),
    cmocka_unit_test(error_classes),
    cmocka_unit_test(mode_names),
    cmocka_unit_test(recover_without_record_is_nothing),
};

PCTL_TEST_MAIN(tests)
