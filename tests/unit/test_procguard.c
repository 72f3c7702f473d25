#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/procguard.h"
#include "pctl/util.h"

static struct proc_facts plain(pid_t pid)
{
        struct proc_facts f = {.pid = pid, .tgid = pid, .n_ancestors = 2, .ancestors = {500, 1}};

        strcpy(f.comm, "worker");
        strcpy(f.cgroup, "/user.slice/user-0.slice/session-1.scope");
        return f;
}

static void judge_refuses_what_must_not_be_managed(void **state)
{
        struct proc_facts f;
        char why[256];

        f = plain(4321);
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), 0);

        f = plain(1);
        f.n_ancestors = 0;
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "pid 1 is init"));

        f = plain(2);
        f.kthread = true;
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "kernel thread"));

        f = plain(4322);
        f.tgid = 4321;
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "thread of process 4321"));

        f = plain(999);
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "pctld itself"));

        /* A grandchild of pctld: the chain is followed, not only the parent. */
        f = plain(4321);
        f.n_ancestors = 3;
        f.ancestors[0] = 4000;
        f.ancestors[1] = 999;
        f.ancestors[2] = 1;
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "started by pctld (pid 999)"));

        f = plain(4321);
        f.runs_pctld = true;
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "another pctld"));

        f = plain(4321);
        strcpy(f.cgroup, "/system.slice/systemd-journald.service");
        assert_int_equal(procguard_judge(&f, 999, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "systemd runs for itself"));
}

static void systemd_cgroups_are_only_its_own(void **state)
{
        assert_true(procguard_systemd_cgroup("/init.scope"));
        assert_true(procguard_systemd_cgroup("/user.slice/user-0.slice/user@0.service/init.scope"));
        assert_true(procguard_systemd_cgroup("/system.slice/systemd-udevd.service"));
        /* An operator's services are what pctl is for. */
        assert_false(procguard_systemd_cgroup("/system.slice/nginx.service"));
        assert_false(procguard_systemd_cgroup("/system.slice/my-systemd-app.service"));
        assert_false(procguard_systemd_cgroup("/"));
        assert_false(procguard_systemd_cgroup(""));
}

static void *park(void *arg)
{
        pid_t *tid = arg;

        __atomic_store_n(tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
        pause();
        return NULL;
}

/* The facts of real processes: this one, one of its threads, and a kernel thread. */
static void facts_from_proc(void **state)
{
        struct proc_facts f;
        pid_t tid = 0;
        pthread_t th;
        char why[256];

        assert_int_equal(proc_facts_read(getpid(), NULL, &f), 0);
        assert_int_equal(f.tgid, getpid());
        assert_false(f.kthread);
        assert_true(f.n_ancestors >= 1);
        assert_int_equal(f.ancestors[0], getppid());
        assert_int_equal(procguard_check(getpid(), why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "pctld itself"));

        assert_int_equal(pthread_create(&th, NULL, park, &tid), 0);
        while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
                usleep(1000);
        assert_int_equal(proc_facts_read(tid, NULL, &f), 0);
        assert_int_equal(f.tgid, getpid());
        assert_int_equal(procguard_check(tid, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "is a thread of process"));
        pthread_cancel(th);
        pthread_join(th, NULL);

        /* kthreadd is PID 2 wherever the kernel has its own PID namespace here. */
        if (proc_facts_read(2, NULL, &f) == 0 && f.kthread) {
                assert_int_equal(procguard_check(2, why, sizeof(why)), -EPERM);
                assert_non_null(strstr(why, "kernel thread"));
        }
        assert_int_equal(procguard_check(1, why, sizeof(why)), -EPERM);
        assert_int_equal(procguard_check(4194304 + 1, why, sizeof(why)), -ESRCH);
        assert_non_null(strstr(why, "no process with pid"));
}

/* Another pctld is known by its executable's name, even one replaced while it runs. */
static void another_pctld_by_its_executable(void **state)
{
        char dir[] = "/tmp/pctl-guard-XXXXXX", exe[64], cmd[160], self[4096], why[256];
        struct proc_facts f;
        pid_t child;
        ssize_t n;

        assert_non_null(mkdtemp(dir));
        snprintf(exe, sizeof(exe), "%s/pctld", dir);
        snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s", exe);
        assert_int_equal(system(cmd), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                execl(exe, "pctld", "30", (char *)NULL);
                _exit(127);
        }
        /* Until the child has exec'd: 10 s, for a loaded machine. */
        for (uint64_t end = now_ns() + 10 * NSEC_PER_SEC; now_ns() < end;) {
                if (proc_facts_read(child, "", &f) == 0 && f.runs_pctld)
                        break;
                usleep(2000);
        }
        assert_int_equal(proc_facts_read(child, "", &f), 0);
        assert_true(f.runs_pctld);
        /* Judged by a pctld that did not start it (this test did). */
        assert_int_equal(procguard_judge(&f, 4194305, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "is another pctld"));
        /* Replaced while it runs: /proc/PID/exe reads "... (deleted)". */
        assert_int_equal(unlink(exe), 0);
        assert_int_equal(proc_facts_read(child, "", &f), 0);
        assert_true(f.runs_pctld);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        rmdir(dir);

        /* Our own executable, whatever its name; and not any other. */
        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        assert_true(n > 0);
        self[n] = '\0';
        assert_int_equal(proc_facts_read(getpid(), self, &f), 0);
        assert_true(f.runs_pctld);
        assert_int_equal(proc_facts_read(getpid(), "", &f), 0);
        assert_false(f.runs_pctld);
}

static void strescape_makes_bytes_printable(void **state)
{
        char out[64];

        assert_int_equal(strescape(out, sizeof(out), "ok name", 7), 7);
        assert_string_equal(out, "ok name");
        assert_int_equal(strescape(out, sizeof(out), "a\0b\n\x1b[2J\\\xff", 10), 23);
        assert_string_equal(out, "a\\x00b\\x0a\\x1b[2J\\\\\\xff");
        /* Printable UTF-8 is text; a C1 control, an overlong form or a cut sequence is not. */
        assert_int_equal(strescape(out, sizeof(out), "\u2265 2 \u00e9", 8), 8);
        assert_string_equal(out, "\u2265 2 \u00e9");
        assert_int_equal(strescape(out, sizeof(out), "\xc2\x85|\xc0\xaf|\xe2\x89", 8), 26);
        assert_string_equal(out, "\\xc2\\x85|\\xc0\\xaf|\\xe2\\x89");
        /* Full: stops before a character that would not fit whole. */
        assert_int_equal(strescape(out, 6, "ab\x01", 3), 2);
        assert_string_equal(out, "ab");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(judge_refuses_what_must_not_be_managed),
    cmocka_unit_test(systemd_cgroups_are_only_its_own),
    cmocka_unit_test(facts_from_proc),
    cmocka_unit_test(another_pctld_by_its_executable),
    cmocka_unit_test(strescape_makes_bytes_printable),
};
PCTL_TEST_MAIN(tests)
