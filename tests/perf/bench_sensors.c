#define _GNU_SOURCE /* pipe2 */
/* What a sample costs the daemon, measured on the real sources of this machine, and what it
 * would cost on bigger ones. Measured here: the software backend through sensor_read (busy time
 * per CPU from cgroup v1 cpuacct or /proc/stat; per process from each thread's schedstat;
 * per cgroup from cpuacct.usage_percpu) with BENCH_APPS sleeping children as targets, and the
 * perf path's read(2) of one event group per CPU and per (target, CPU), with software events
 * standing in for the hardware ones this VM does not have (the same syscall and group read).
 * Extrapolated: the same per-CPU and per-app costs, linearly, to 64 and 1024 CPUs.
 * Costs are CPU time of this process (user + kernel), best of BENCH_ROUNDS rounds: the machine
 * is shared, and CPU time is what the daemon's budget counts.
 * Linear extrapolation takes every microsecond measured per CPU as growing with the CPUs,
 * which the fixed part of a file read does not: for the system and cgroup reads it is an upper
 * bound. Per-process reads do not depend on the CPUs (one schedstat and stat per thread).
 * No target of its own: the sensor read is part of the daemon's cost, whose budget
 * bench_manager judges on this same software sensor. It fails only when it cannot measure. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_real.h"
#include "pctl/perf_group.h"
#include "pctl/sensor.h"
#include "pctl/util.h"

#define BENCH_APPS 64
#define BENCH_READS 100
#define BENCH_ROUNDS 5
#define CPUACCT "/sys/fs/cgroup/cpuacct"

static const unsigned sizes[] = {64, 1024}; /* CPUs, extrapolated */

/* Mean CPU time of reading every group once, best of the rounds; 0 on failure. */
static double time_groups_us(const struct perf_group *g, unsigned n)
{
        struct perf_group_reading r;
        double best = 0;

        for (unsigned round = 0; round < BENCH_ROUNDS; round++) {
                uint64_t t0 = bench_cpu_ns();
                double us;

                for (unsigned k = 0; k < BENCH_READS; k++)
                        for (unsigned i = 0; i < n; i++)
                                if (perf_group_read(&g[i], &r) < 0)
                                        return 0;
                us = (double)(bench_cpu_ns() - t0) / 1e3 / BENCH_READS;
                if (round == 0 || us < best)
                        best = us;
        }
        return best;
}

/* cgroup v1 cpuacct groups, one per child, under a group of our own. */
static int cgroups_make(char *top, size_t size, const pid_t *pids, unsigned n)
{
        char path[512], buf[32];

        snprintf(top, size, CPUACCT "/pctl-bench-%d", (int)getpid());
        if (mkdir(top, 0755) < 0)
                return -errno;
        for (unsigned i = 0; i < n; i++) {
                int fd, len;

                snprintf(path, sizeof(path), "%s/app-%u", top, i);
                if (mkdir(path, 0755) < 0)
                        return -errno;
                snprintf(path, sizeof(path), "%s/app-%u/cgroup.procs", top, i);
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                len = snprintf(buf, sizeof(buf), "%d", (int)pids[i]);
                if (write(fd, buf, (size_t)len) != len) {
                        int err = -errno;

                        close(fd);
                        return err;
                }
                close(fd);
        }
        return 0;
}

/* After the children are gone: the directories are empty and can go. */
static void cgroups_remove(const char *top, unsigned n)
{
        char path[512];

        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/app-%u", top, i);
                rmdir(path);
        }
        rmdir(top);
}

static struct perf_event_attr sw_event(uint64_t config)
{
        return (struct perf_event_attr){.type = PERF_TYPE_SOFTWARE, .config = config};
}

int main(void)
{
        /* Three events per group, as instructions, cycles and ref-cycles would be. */
        const struct perf_event_attr attrs[3] = {sw_event(PERF_COUNT_SW_PAGE_FAULTS),
                                                 sw_event(PERF_COUNT_SW_PAGE_FAULTS_MIN),
                                                 sw_event(PERF_COUNT_SW_CONTEXT_SWITCHES)};
        static pid_t pids[BENCH_APPS];
        static struct sensor_target targets[BENCH_APPS];
        struct sensor_sample s = {0};
        struct perf_group *cpu_grp = NULL, *app_grp = NULL;
        struct sensor *sn = NULL;
        char top[256] = "", cg_why[160] = "";
        double sys_us, pid_us, cg_us = 0, grp_cpu_us = 0, grp_app_us = 0;
        double per_cpu_us, per_app_us, per_app_cpu_cg_us = 0, per_grp_us = 0, per_app_grp_us = 0;
        unsigned n_apps, n_cpus, n_grp = 0, n_app_grp = 0;
        bool ok = true;
        int r;

        n_apps = bench_children_start(pids, BENCH_APPS);
        if (n_apps < BENCH_APPS) {
                fprintf(stderr, "bench_sensors: started only %u of %u children\n", n_apps,
                        BENCH_APPS);
                bench_children_stop(pids, n_apps);
                return 1;
        }
        r = sensor_open(sensor_find("software"), &(struct sensor_config){0}, &sn);
        if (r < 0) {
                fprintf(stderr, "bench_sensors: software sensor: %s\n", strerror(-r));
                bench_children_stop(pids, n_apps);
                return 1;
        }
        n_cpus = sn->n_cpus;

        /* The whole system: busy time of every CPU. */
        sys_us = bench_sensor_read_us(sn, &s, BENCH_READS, BENCH_ROUNDS);
        /* Every child as a process target: its threads' schedstat and stat. */
        for (unsigned i = 0; i < n_apps; i++)
                targets[i] = (struct sensor_target){.kind = SENSOR_TARGET_PID, .pid = pids[i]};
        r = sensor_set_targets(sn, targets, n_apps);
        pid_us = r == 0 ? bench_sensor_read_us(sn, &s, BENCH_READS, BENCH_ROUNDS) : 0;
        if (sys_us == 0 || pid_us == 0) {
                fprintf(stderr, "bench_sensors: software sensor reads failed\n");
                ok = false;
                goto out;
        }
        per_cpu_us = sys_us / n_cpus;
        per_app_us = (pid_us - sys_us) / n_apps;
        if (per_app_us < 0)
                per_app_us = 0;

        /* Every child in a cpuacct cgroup of its own, as cgroup targets. */
        r = access(CPUACCT "/cgroup.procs", W_OK) == 0
                ? cgroups_make(top, sizeof(top), pids, n_apps)
                : -EACCES;
        if (r == 0) {
                for (unsigned i = 0; i < n_apps; i++) {
                        targets[i] = (struct sensor_target){.kind = SENSOR_TARGET_CGROUP};
                        snprintf(targets[i].cgroup, sizeof(targets[i].cgroup), "%s/app-%u", top, i);
                }
                r = sensor_set_targets(sn, targets, n_apps);
                if (r == 0)
                        cg_us = bench_sensor_read_us(sn, &s, BENCH_READS, BENCH_ROUNDS);
        }
        if (cg_us > 0)
                per_app_cpu_cg_us = (cg_us - sys_us) / n_apps / n_cpus;
        else
                snprintf(cg_why, sizeof(cg_why), "not measured (%s: %s)", CPUACCT,
                         strerror(r < 0 ? -r : EIO));

        /* The perf path: one group per CPU (pid -1), one per (child, CPU). */
        cpu_grp = calloc(n_cpus, sizeof(*cpu_grp));
        app_grp = calloc((size_t)n_apps * n_cpus, sizeof(*app_grp));
        if (!cpu_grp || !app_grp) {
                ok = false;
                goto out;
        }
        for (unsigned c = 0; c < n_cpus && r >= 0; c++)
                if ((r = perf_group_open(&cpu_grp[n_grp], attrs, 3, -1, (int)c, 0)) == 0)
                        n_grp++;
        for (unsigned i = 0; i < n_apps && r >= 0; i++)
                for (unsigned c = 0; c < n_cpus && r >= 0; c++)
                        if ((r = perf_group_open(&app_grp[n_app_grp], attrs, 3, pids[i], (int)c,
                                                 0)) == 0)
                                n_app_grp++;
        if (r < 0) {
                fprintf(stderr, "bench_sensors: perf software events: %s\n", strerror(-r));
                ok = false;
                goto out;
        }
        grp_cpu_us = time_groups_us(cpu_grp, n_grp);
        grp_app_us = time_groups_us(app_grp, n_app_grp);
        per_grp_us = grp_cpu_us / n_grp;
        per_app_grp_us = grp_app_us / n_app_grp;
        /* A sleeping child's events are never on a CPU, so reading them needs no IPI; a running
         * app's cgroup event does, as a CPU's does. Extrapolate with the dearer of the two. */
        if (per_app_grp_us < per_grp_us)
                per_app_grp_us = per_grp_us;

        printf("bench: software sensor, measured here (%u CPUs, %u sleeping processes): system "
               "%.1f us per sample (%.2f us per CPU); +%u processes %.1f us (%.2f us per app)\n",
               n_cpus, n_apps, sys_us, per_cpu_us, n_apps, pid_us, per_app_us);
        if (cg_us > 0)
                printf("bench: software sensor, measured here: +%u cpuacct cgroups %.1f us per "
                       "sample (%.3f us per app per CPU)\n",
                       n_apps, cg_us, per_app_cpu_cg_us);
        else
                printf("bench: software sensor, cgroup targets %s\n", cg_why);
        printf("bench: perf group read (3 software events), measured here: %.2f us per CPU group "
               "(%u CPUs), %.2f us per (app, CPU) group (%u groups)\n",
               per_grp_us, n_grp, grp_app_us / n_app_grp, n_app_grp);
        for (unsigned k = 0; k < ARRAY_SIZE(sizes); k++) {
                unsigned n = sizes[k];
                double sw_pid = per_cpu_us * n + per_app_us * n_apps;
                double sw_cg = per_cpu_us * n + per_app_cpu_cg_us * n * n_apps;
                double perf = per_grp_us * n + per_app_grp_us * n * n_apps;

                printf("bench: extrapolated to %u CPUs with %u apps (linear in the per-CPU and "
                       "per-app costs measured here): software %.0f us per sample (processes), ",
                       n, n_apps, sw_pid);
                if (cg_us > 0)
                        printf("at most %.0f us (cgroups); ", sw_cg);
                else
                        printf("cgroups not measured; ");
                printf("perf %.0f us (each (app, CPU) event at a CPU group's cost: an event "
                       "active on another CPU is read by IPI)\n",
                       perf);
        }
out:
        for (unsigned i = 0; i < n_grp; i++)
                perf_group_close(&cpu_grp[i]);
        for (unsigned i = 0; i < n_app_grp; i++)
                perf_group_close(&app_grp[i]);
        free(cpu_grp);
        free(app_grp);
        sensor_close(sn);
        sensor_sample_free(&s);
        bench_children_stop(pids, n_apps);
        if (top[0])
                cgroups_remove(top, n_apps);
        return ok ? 0 : 1;
}
