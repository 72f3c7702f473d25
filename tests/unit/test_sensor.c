/* The sensor layer: counter arithmetic, the backend table, and the software and RAPL readers
 * against fake /proc and /sys trees (fs_set_root). */
#define _GNU_SOURCE /* sched_setaffinity */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pctl_test.h"
#include "../../sensors/backends.h"
#include "pctl/fsio.h"
#include "pctl/sensor.h"

static char tree[256];

static void put(const char *rel, const char *text)
{
        char path[512], dir[512];

        snprintf(path, sizeof(path), "%s%s", tree, rel);
        for (char *p = path + strlen(tree) + 1; (p = strchr(p, '/')); p++) {
                snprintf(dir, sizeof(dir), "%.*s", (int)(p - path), path);
                mkdir(dir, 0755);
        }
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void tree_make(void)
{
        snprintf(tree, sizeof(tree), "/tmp/pctl-test-sensor-XXXXXX");
        assert_non_null(mkdtemp(tree));
        assert_int_equal(fs_set_root(tree), 0);
}

static void tree_remove(void)
{
        char cmd[300];

        fs_set_root("");
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
        assert_int_equal(system(cmd), 0);
}

static void counter_delta_wraps_32bit(void **state)
{
        /* A 32-bit RAPL status register wrapping once between reads. */
        assert_int_equal(sensor_counter_delta(0xFFFFFF00u, 0x00000100u, 32), 0x200);
        assert_int_equal(sensor_counter_delta(100, 350, 32), 250);
        /* No wrap but high bits set in the raw read: masked away. */
        assert_int_equal(sensor_counter_delta(UINT64_C(0x1FFFFFFF0), UINT64_C(0x100000010), 32),
                         0x20);
        assert_true(sensor_counter_delta(UINT64_MAX - 5, 4, 64) == 10);
        assert_int_equal(sensor_counter_delta(0, 0, 32), 0);
}

static void wrap_delta_uses_max_energy_range(void **state)
{
        const uint64_t max_uj = 262143328850ull; /* a real max_energy_range_uj, not 2^32 */

        assert_true(sensor_wrap_delta(1000, 5000, max_uj) == 4000);
        assert_true(sensor_wrap_delta(max_uj - 1000, 500, max_uj) == 1500);
        assert_true(sensor_wrap_delta(max_uj, 0, max_uj) == 0);
        /* Treating the range as 2^32 would be wrong by far. */
        assert_true(sensor_wrap_delta(max_uj - 10, 20, max_uj) !=
                    sensor_counter_delta(max_uj - 10, 20, 32));
}

static void multiplex_scaling(void **state)
{
        assert_true(sensor_scale_multiplexed(1000, 200, 100) == 2000);
        assert_true(sensor_scale_multiplexed(1000, 300, 100) == 3000);
        assert_true(sensor_scale_multiplexed(1000, 100, 100) == 1000);
        assert_true(sensor_scale_multiplexed(1000, 100, 0) == 0);
        /* No overflow for big counts. */
        assert_true(sensor_scale_multiplexed(UINT64_C(1) << 60, 4, 2) == UINT64_C(1) << 61);
}

static void backend_table_and_find(void **state)
{
        const char *want[] = {"likwid", "perf", "software", "replay"};

        for (unsigned i = 0; i < 4; i++) {
                assert_non_null(sensor_backends[i]);
                assert_string_equal(sensor_backends[i]->name, want[i]);
                assert_ptr_equal(sensor_find(want[i]), sensor_backends[i]);
        }
        assert_null(sensor_backends[4]);
        assert_null(sensor_find("sim"));
        assert_null(sensor_find("nope"));
}

static void proc_stat_parsing(void **state)
{
        uint64_t busy[3];

        tree_make();
        put("/proc/stat", "cpu  300 10 200 9000 50 5 5 7 0 0\n"
                          "cpu0 100 10 100 4000 20 2 3 7 0 0\n"
                          "cpu2 200 0 100 5000 30 3 2 0 0 0\n"
                          "intr 12345 1 2\nctxt 999\n");
        assert_int_equal(sensor_busy_read(SENSOR_BUSY_PROCSTAT, busy, 3), 0);
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t tick_ns = 1000000000ull / (uint64_t)hz;
        /* busy = user + nice + system + irq + softirq; idle, iowait and steal are not. */
        assert_true(busy[0] == 215 * tick_ns);
        assert_true(busy[1] == 0);
        assert_true(busy[2] == 305 * tick_ns);
        put("/proc/stat", "intr 1\n");
        assert_int_equal(sensor_busy_read(SENSOR_BUSY_PROCSTAT, busy, 3), -EBADMSG);
        tree_remove();
}

static void percpu_parsing(void **state)
{
        uint64_t ns[4];

        assert_int_equal(sensor_parse_percpu("18030116401 25263833048 \n", ns, 4), 0);
        assert_true(ns[0] == 18030116401ull && ns[1] == 25263833048ull && ns[2] == 0);
        assert_int_equal(sensor_parse_percpu("12 x", ns, 4), -EBADMSG);
        assert_int_equal(sensor_parse_percpu("", ns, 4), -EBADMSG);
}

static void powercap_rapl_with_wrap(void **state)
{
        struct sensor_energy e;
        double j[SENSOR_MAX_PACKAGES];
        char why[200];

        tree_make();
        assert_int_equal(sensor_energy_open(&e, why, sizeof(why)), -ENOENT);
        put("/sys/class/powercap/intel-rapl:0/name", "package-0\n");
        put("/sys/class/powercap/intel-rapl:0/energy_uj", "262143000000\n");
        put("/sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
        put("/sys/class/powercap/intel-rapl:1/name", "psys\n");
        put("/sys/class/powercap/intel-rapl:1/energy_uj", "5\n");
        put("/sys/class/powercap/intel-rapl:1/max_energy_range_uj", "262143328850\n");
        put("/sys/class/powercap/intel-rapl:2/name", "package-1\n");
        put("/sys/class/powercap/intel-rapl:2/energy_uj", "1000000\n");
        put("/sys/class/powercap/intel-rapl:2/max_energy_range_uj", "65532610987\n");
        assert_int_equal(sensor_energy_open(&e, why, sizeof(why)), 0);
        assert_int_equal(e.src, SENSOR_ENERGY_POWERCAP);
        assert_int_equal(e.n_packages, 2); /* psys is not a package */
        /* Package 0 wraps past max_energy_range_uj; package 1 just counts. */
        put("/sys/class/powercap/intel-rapl:0/energy_uj", "671150\n");
        put("/sys/class/powercap/intel-rapl:2/energy_uj", "3500000\n");
        assert_int_equal(sensor_energy_read(&e, j), 0);
        assert_near(j[0], 1.0, 1e-9); /* 328850 + 671150 uJ */
        assert_near(j[1], 2.5, 1e-9);
        put("/sys/class/powercap/intel-rapl:0/energy_uj", "2671150\n");
        assert_int_equal(sensor_energy_read(&e, j), 0);
        assert_near(j[0], 2.0, 1e-9);
        assert_near(j[1], 0.0, 1e-12);
        sensor_energy_close(&e);
        /* Unreadable counters (root-only since 5.10) are an error, not zero energy. */
        put("/sys/class/powercap/intel-rapl:0/energy_uj", "nonsense\n");
        assert_true(sensor_energy_open(&e, why, sizeof(why)) < 0);
        tree_remove();
}

/* A fake machine: 2 CPUs, /proc/stat only (no cpuacct), one process with two threads. */
static void fake_machine(void)
{
        put("/sys/devices/system/cpu/online", "0-1\n");
        put("/proc/stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 100 0 0 0 0 0 0 0 0 0\n"
                          "cpu1 200 0 0 0 0 0 0 0 0 0\n");
        put("/proc/4242/task/4242/schedstat", "1000000 0 1\n");
        put("/proc/4242/task/4242/stat", "4242 (my app) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 "
                                         "17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 "
                                         "0 38\n");
        put("/proc/4242/task/4243/schedstat", "5000000 0 1\n");
        put("/proc/4242/task/4243/stat",
            "4243 (w) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "
            "19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 1 38\n");
}

static void software_backend_on_fake_proc(void **state)
{
        const struct sensor_ops *sw = sensor_find("software");
        struct sensor_config cfg = {0};
        struct sensor_target t = {.kind = SENSOR_TARGET_PID, .pid = 4242};
        struct sensor_sample s = {0};
        struct sensor *sn;
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t tick_ns = 1000000000ull / (uint64_t)hz;

        tree_make();
        fake_machine();
        assert_int_equal(sensor_open(sw, &cfg, &sn), 0);
        assert_int_equal(sn->n_cpus, 2);
        assert_int_equal(sn->metrics, SENSOR_BUSY);
        assert_int_equal(sensor_set_targets(sn, &t, 1), 0);
        put("/proc/stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 150 0 0 0 0 0 0 0 0 0\n"
                          "cpu1 200 0 10 0 0 0 0 0 0 0\n");
        put("/proc/4242/task/4242/schedstat", "3000000 0 1\n");
        put("/proc/4242/task/4243/schedstat", "9000000 0 1\n");
        /* A thread born since the last read: all of its runtime counts. */
        put("/proc/4242/task/4244/schedstat", "700000 0 1\n");
        put("/proc/4242/task/4244/stat",
            "4244 (w) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "
            "19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 1 38\n");
        assert_int_equal(sensor_read(sn, &s), 0);
        assert_true(s.cpu[0].busy_ns == 50 * tick_ns);
        assert_true(s.cpu[1].busy_ns == 10 * tick_ns);
        assert_int_equal(s.cpu[0].measured, SENSOR_BUSY); /* no instructions or cycles */
        assert_true(sensor_target_cpu(&s, 0, 0)->busy_ns == 2000000);
        assert_true(sensor_target_cpu(&s, 0, 1)->busy_ns == 4000000 + 700000);
        assert_int_equal(sensor_target_cpu(&s, 0, 1)->measured, SENSOR_BUSY);
        /* The process exits: the target is not measured, and the read still succeeds. */
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/proc/4242'", tree);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(sensor_read(sn, &s), 0);
        assert_int_equal(sensor_target_cpu(&s, 0, 0)->measured, 0);
        assert_int_equal(sensor_target_cpu(&s, 0, 1)->measured, 0);
        assert_int_equal(s.cpu[0].measured, SENSOR_BUSY);
        /* A process that does not exist is refused up front. */
        t.pid = 999999;
        assert_int_equal(sensor_set_targets(sn, &t, 1), -ESRCH);
        sensor_close(sn);
        sensor_sample_free(&s);
        /* Absent CPUs are refused. */
        cpumask_set(&cfg.cpus, 5);
        assert_int_equal(sensor_open(sw, &cfg, &sn), -ENODEV);
        tree_remove();
}

static void cgroup_v1_cpuacct_target(void **state)
{
        const struct sensor_ops *sw = sensor_find("software");
        struct sensor_config cfg = {0};
        struct sensor_target t = {.kind = SENSOR_TARGET_CGROUP};
        struct sensor_sample s = {0};
        struct sensor *sn;

        tree_make();
        fake_machine();
        put("/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu", "1000 2000\n");
        put("/sys/fs/cgroup/cpuacct/app/cpuacct.usage_percpu", "100 200\n");
        assert_int_equal(sensor_open(sw, &cfg, &sn), 0);
        snprintf(t.cgroup, sizeof(t.cgroup), "/sys/fs/cgroup/cpuacct/app");
        assert_int_equal(sensor_set_targets(sn, &t, 1), 0);
        put("/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu", "1500 2100\n");
        put("/sys/fs/cgroup/cpuacct/app/cpuacct.usage_percpu", "400 250\n");
        assert_int_equal(sensor_read(sn, &s), 0);
        /* The root cpuacct wins over /proc/stat: ns, not ticks. */
        assert_true(s.cpu[0].busy_ns == 500 && s.cpu[1].busy_ns == 100);
        assert_true(sensor_target_cpu(&s, 0, 0)->busy_ns == 300);
        assert_true(sensor_target_cpu(&s, 0, 1)->busy_ns == 50);
        snprintf(t.cgroup, sizeof(t.cgroup), "/sys/fs/cgroup/cpuacct/missing");
        assert_int_equal(sensor_set_targets(sn, &t, 1), -ENOENT);
        sensor_close(sn);
        sensor_sample_free(&s);
        tree_remove();
}

static double mono_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* User + system time of a struct rusage, in seconds. */
static double rusage_cpu_s(const struct rusage *ru)
{
        return (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6 +
               (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
}

/* Burns 3 ms of its own CPU time and exits. */
static void *short_worker(void *arg)
{
        struct timespec ts;
        double end;

        (void)arg;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + 0.003;
        do
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < end);
        return NULL;
}

static double process_cpu_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A real process whose work is done by threads that live 3 ms, far less than the 100 ms
 * between reads: their runtime is charged from the process's CPU clock (sort --parallel's
 * merge threads are such), all of it on the one CPU the process may use. Without that the
 * sensor saw a few percent of it. The child works until it has used 0.4 s of CPU (not for a
 * wall time: a loaded machine gave it 0.08 s of 0.6 s once) and says when it is done; the
 * reads go on two intervals past that. */
static void software_backend_charges_exited_threads(void **state)
{
        const struct sensor_ops *sw = sensor_find("software");
        struct sensor_config cfg = {0};
        struct sensor_sample s = {0};
        struct sensor *sn;
        struct rusage ru;
        int go[2], done[2], status, tail = -1;
        double seen[2] = {0, 0};
        pid_t child;

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                print_message("skip: needs 2 CPUs\n");
                skip();
        }
        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe2(done, O_NONBLOCK), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                cpu_set_t one;
                char c;

                CPU_ZERO(&one);
                CPU_SET(0, &one);
                if (sched_setaffinity(0, sizeof(one), &one) < 0 || read(go[0], &c, 1) != 1)
                        _exit(1);
                for (double end = mono_s() + 20; process_cpu_s() < 0.4 && mono_s() < end;) {
                        pthread_t a, b;

                        if (pthread_create(&a, NULL, short_worker, NULL) ||
                            pthread_create(&b, NULL, short_worker, NULL))
                                _exit(1);
                        pthread_join(a, NULL);
                        pthread_join(b, NULL);
                }
                if (write(done[1], "d", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        struct sensor_target t = {.kind = SENSOR_TARGET_PID, .pid = child};

        assert_int_equal(sensor_open(sw, &cfg, &sn), 0);
        assert_int_equal(sensor_set_targets(sn, &t, 1), 0);
        assert_int_equal(write(go[1], "g", 1), 1);
        for (int i = 0; i < 300 && tail != 0; i++) {
                char c;

                usleep(100000);
                assert_int_equal(sensor_read(sn, &s), 0);
                for (unsigned k = 0; k < 2; k++)
                        seen[k] += (double)sensor_target_cpu(&s, 0, k)->busy_ns / 1e9;
                if (tail > 0)
                        tail--;
                else if (tail < 0 && read(done[0], &c, 1) == 1)
                        tail = 2;
        }
        kill(child, SIGKILL);
        assert_int_equal(wait4(child, &status, 0, &ru), child);
        double cpu = rusage_cpu_s(&ru);

        print_message("process CPU time %.3f s; charged %.3f s on CPU 0, %.3f s on CPU 1\n", cpu,
                      seen[0], seen[1]);
        assert_true(cpu > 0.1);
        assert_true(fabs(seen[0] - cpu) <= 0.03 * cpu + 0.01);
        assert_true(seen[1] == 0);
        sensor_close(sn);
        sensor_sample_free(&s);
        close(go[0]);
        close(go[1]);
        close(done[0]);
        close(done[1]);
}

/* Burns sec of the calling process's CPU time. */
static void burn_cpu_s(double sec)
{
        struct timespec ts;
        double end;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + sec;
        do
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < end);
}

/* A launcher that does no work itself (make, a shell script, stress-ng, mpirun): its child
 * processes are part of the app. Two workers of 0.4 s CPU each, then, one after another, ten
 * of 20 ms that are born and reaped between two reads (a build's short compiler runs), and a
 * grandchild of 0.1 s. All of it is charged: the live ones from their threads, the rest from
 * the reaped children's time of their parent. Without that the target read the launcher's
 * own few ms. */
static void software_backend_follows_children(void **state)
{
        const struct sensor_ops *sw = sensor_find("software");
        struct sensor_config cfg = {0};
        struct sensor_sample s = {0};
        struct sensor *sn;
        struct rusage ru;
        int go[2], status;
        double seen = 0;
        pid_t launcher;

        assert_int_equal(pipe(go), 0);
        launcher = fork();
        assert_true(launcher >= 0);
        if (launcher == 0) {
                pid_t w[2], g;
                char c;

                if (read(go[0], &c, 1) != 1)
                        _exit(1);
                for (int i = 0; i < 2; i++) {
                        w[i] = fork();
                        if (w[i] == 0) {
                                burn_cpu_s(0.4);
                                _exit(0);
                        }
                }
                for (int i = 0; i < 2; i++)
                        waitpid(w[i], NULL, 0);
                for (int i = 0; i < 10; i++) {
                        g = fork();
                        if (g == 0) {
                                burn_cpu_s(0.02);
                                _exit(0);
                        }
                        waitpid(g, NULL, 0);
                }
                g = fork();
                if (g == 0) {
                        pid_t gg = fork();

                        if (gg == 0) {
                                burn_cpu_s(0.1);
                                _exit(0);
                        }
                        waitpid(gg, NULL, 0);
                        _exit(0);
                }
                waitpid(g, NULL, 0);
                pause();
                _exit(0);
        }
        struct sensor_target t = {.kind = SENSOR_TARGET_PID, .pid = launcher};

        assert_int_equal(sensor_open(sw, &cfg, &sn), 0);
        assert_int_equal(sensor_set_targets(sn, &t, 1), 0);
        assert_int_equal(write(go[1], "g", 1), 1);
        /* Until a second passes with nothing charged: a loaded machine stretches the work. */
        for (int i = 0, quiet = 0; i < 100 && quiet < 10; i++) {
                double got = 0;

                usleep(100000);
                assert_int_equal(sensor_read(sn, &s), 0);
                for (unsigned c = 0; c < s.n_cpus; c++)
                        got += (double)sensor_target_cpu(&s, 0, c)->busy_ns / 1e9;
                seen += got;
                quiet = got == 0 && seen > 0 ? quiet + 1 : 0;
        }
        kill(launcher, SIGKILL);
        /* The launcher's usage and its reaped children's. */
        assert_int_equal(wait4(launcher, &status, 0, &ru), launcher);
        double cpu = rusage_cpu_s(&ru);

        print_message("the launcher and its children used %.3f s of CPU; charged %.3f s\n", cpu,
                      seen);
        assert_true(cpu > 1.0);
        /* The reaped time comes in USER_HZ ticks: 10 ms at most per reap and read. */
        assert_true(fabs(seen - cpu) <= 0.03 * cpu + 0.05);
        sensor_close(sn);
        sensor_sample_free(&s);
        close(go[0]);
        close(go[1]);
}

/* A process that has exited but is not yet reaped (as `pctl run` keeps its child a moment to
 * read its CPU time) is no app any more: its target reads as not measured, not as an app that
 * waited the whole interval. */
static void software_backend_zombie_is_gone(void **state)
{
        const struct sensor_ops *sw = sensor_find("software");
        struct sensor_config cfg = {0};
        struct sensor_sample s = {0};
        struct sensor *sn;
        int go[2], status;
        pid_t child;
        char c;

        assert_int_equal(pipe(go), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0)
                _exit(read(go[0], &c, 1) == 1 ? 0 : 1);
        struct sensor_target t = {.kind = SENSOR_TARGET_PID, .pid = child};

        assert_int_equal(sensor_open(sw, &cfg, &sn), 0);
        assert_int_equal(sensor_set_targets(sn, &t, 1), 0);
        usleep(20000);
        assert_int_equal(sensor_read(sn, &s), 0);
        /* Alive and sleeping: measured, 0 busy. */
        assert_int_equal(sensor_target_cpu(&s, 0, 0)->measured, SENSOR_BUSY);
        assert_int_equal(write(go[1], "x", 1), 1);
        /* Exited, not reaped: the zombie is still in /proc. */
        siginfo_t info;
        assert_int_equal(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT), 0);
        usleep(20000);
        assert_int_equal(sensor_read(sn, &s), 0);
        assert_int_equal(sensor_target_cpu(&s, 0, 0)->measured, 0);
        assert_int_equal(sensor_target_cpu(&s, 0, 1)->measured, 0);
        assert_int_equal(waitpid(child, &status, 0), child);
        sensor_close(sn);
        sensor_sample_free(&s);
        close(go[0]);
        close(go[1]);
}

/* Burns CPU until killed, or until the test process exits whatever way. */
static pid_t spinner(void)
{
        pid_t p = fork();

        if (p == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        ;
        }
        return p;
}

static double cpu_clock_s(pid_t pid)
{
        struct timespec ts;
        clockid_t id;

        assert_int_equal(clock_getcpuclockid(pid, &id), 0);
        assert_int_equal(clock_gettime(id, &ts), 0);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A process already a target keeps counting when the target list changes mid-interval
 * (another app adopted): its next read covers all its runtime of the interval, not the part
 * since the change (about half here, whatever the load). */
static void software_backend_keeps_a_target_across_set_targets(void **state)
{
        const struct sensor_ops *sw = sensor_find("software");
        struct sensor_config cfg = {0};
        struct sensor_sample s = {0};
        struct sensor *sn;
        pid_t a = spinner(), b = getppid();
        double charged = 0, c0, c1;

        assert_true(a > 0);
        struct sensor_target one[1] = {{.kind = SENSOR_TARGET_PID, .pid = a}};
        struct sensor_target two[2] = {{.kind = SENSOR_TARGET_PID, .pid = b},
                                       {.kind = SENSOR_TARGET_PID, .pid = a}};

        assert_int_equal(sensor_open(sw, &cfg, &sn), 0);
        assert_int_equal(sensor_set_targets(sn, one, 1), 0);
        usleep(100000);
        c0 = cpu_clock_s(a);
        assert_int_equal(sensor_read(sn, &s), 0);
        /* Half-way through the next interval, b joins (first in the list). */
        usleep(100000);
        assert_int_equal(sensor_set_targets(sn, two, 2), 0);
        usleep(100000);
        assert_int_equal(sensor_read(sn, &s), 0);
        c1 = cpu_clock_s(a);
        for (unsigned c = 0; c < sn->n_cpus; c++)
                charged += (double)sensor_target_cpu(&s, 1, c)->busy_ns / 1e9;
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
        print_message("a was charged %.3f s; its CPU clock gained %.3f s over the interval\n",
                      charged, c1 - c0);
        assert_true(charged > 0.9 * (c1 - c0) && charged <= (c1 - c0) + 1e-3);
        sensor_close(sn);
        sensor_sample_free(&s);
}

static volatile sig_atomic_t children_ended;

static void count_child(int sig)
{
        (void)sig;
        children_ended++;
}

/* As root on a machine without MSR devices the LIKWID probe answers from the missing device
 * before it forks its child and starts LIKWID (whose topology_init alone runs a shell): `pctl
 * sensors` and `pctl sample` start in milliseconds. A CPU list in the config skips the
 * per-process cache, so this probe is asked afresh whatever ran before it. */
static void likwid_probe_without_msr_forks_nothing(void **state)
{
        const struct sensor_ops *likwid = sensor_find("likwid");
        struct sensor_config cfg = {0};
        struct sensor_probe p;
        struct sigaction sa = {.sa_handler = count_child}, old;

        if (geteuid() != 0 || access("/dev/cpu/0/msr", F_OK) == 0 ||
            access("/dev/msr0", F_OK) == 0) {
                print_message("skip: needs root on a machine without MSR devices\n");
                skip();
        }
        assert_non_null(likwid);
        cpumask_set(&cfg.cpus, 0);
        sigemptyset(&sa.sa_mask);
        assert_int_equal(sigaction(SIGCHLD, &sa, &old), 0);
        children_ended = 0;
        assert_int_equal(likwid->probe(&cfg, &p), 0);
        sigaction(SIGCHLD, &old, NULL);
        print_message("reason: %s\n", p.reason);
        assert_false(p.available);
        assert_int_equal(p.err, -ENOENT);
        assert_non_null(strstr(p.reason, "open /dev/cpu/0/msr: No such file or directory"));
        assert_int_equal(children_ended, 0);
}

/* One case per line: cmake/PctlTests.cmake reads them line by line. */
/* clang-format off */
static const struct CMUnitTest tests[] = {
        cmocka_unit_test(counter_delta_wraps_32bit),
        cmocka_unit_test(wrap_delta_uses_max_energy_range),
        cmocka_unit_test(multiplex_scaling),
        cmocka_unit_test(backend_table_and_find),
        cmocka_unit_test(proc_stat_parsing),
        cmocka_unit_test(percpu_parsing),
        cmocka_unit_test(powercap_rapl_with_wrap),
        cmocka_unit_test(software_backend_on_fake_proc),
        cmocka_unit_test(cgroup_v1_cpuacct_target),
        cmocka_unit_test(software_backend_charges_exited_threads),
        cmocka_unit_test(software_backend_zombie_is_gone),
        cmocka_unit_test(software_backend_follows_children),
        cmocka_unit_test(software_backend_keeps_a_target_across_set_targets),
        cmocka_unit_test(likwid_probe_without_msr_forks_nothing),
};
/* clang-format on */

PCTL_TEST_MAIN(tests)
