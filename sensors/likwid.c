/* The LIKWID backend: the perfmon API with the fixed counters, PWR_PKG_ENERGY and, where the
 * CPU has them, the memory controllers' CAS / DRAM counters (each package's memory traffic).
 *
 * LIKWID mixes return conventions, prints to our stdout/stderr, forks, and in access-daemon
 * mode calls exit() inside its caller when likwid-accessD is missing or silent (~10 s). So:
 * probe always runs in a forked child whose output goes to /dev/null, which is killed after
 * PROBE_TIMEOUT_MS, and which reports through a pipe; open runs the probe first, uses direct
 * MSR access when root (the access daemon also disables the NMI watchdog, a system-wide
 * change), flushes stdio before each call and sends the library's chatter to /dev/null. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <likwid.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends.h"
#include "pctl/fsio.h"
#include "pctl/perf_group.h"
#include "pctl/util.h"

#define PROBE_TIMEOUT_MS 3000
/* Stalled cycles: LIKWID drops an event the CPU does not have (with a warning), so both
 * candidates are asked for and whichever the CPU has is kept; where it has both,
 * CYCLE_ACTIVITY_STALLS_TOTAL, the later one, is what the sample reports. */
#define LIKWID_EVENTS                                                                              \
        "INSTR_RETIRED_ANY:FIXC0,CPU_CLK_UNHALTED_CORE:FIXC1,CPU_CLK_UNHALTED_REF:FIXC2,"          \
        "PWR_PKG_ENERGY:PWR0,RESOURCE_STALLS_ANY:PMC0,CYCLE_ACTIVITY_STALLS_TOTAL:PMC1"
/* The memory controllers, as LIKWID's MEM groups count them: Intel servers' CAS counts per
 * channel (MBOX0-7; channels a CPU lacks are dropped like absent events), Intel clients'
 * free-running DRAM counters. Each count is one 64-byte line. They are uncore counters, read
 * on the first CPU of each socket. AMD's DRAM_CHANNEL_n are not asked for: four counters for
 * eight channels, so one event set would count half the traffic. */
#define LIKWID_MEM_EVENTS                                                                          \
        "CAS_COUNT_RD:MBOX0C0,CAS_COUNT_WR:MBOX0C1,CAS_COUNT_RD:MBOX1C0,CAS_COUNT_WR:MBOX1C1,"     \
        "CAS_COUNT_RD:MBOX2C0,CAS_COUNT_WR:MBOX2C1,CAS_COUNT_RD:MBOX3C0,CAS_COUNT_WR:MBOX3C1,"     \
        "CAS_COUNT_RD:MBOX4C0,CAS_COUNT_WR:MBOX4C1,CAS_COUNT_RD:MBOX5C0,CAS_COUNT_WR:MBOX5C1,"     \
        "CAS_COUNT_RD:MBOX6C0,CAS_COUNT_WR:MBOX6C1,CAS_COUNT_RD:MBOX7C0,CAS_COUNT_WR:MBOX7C1,"     \
        "DRAM_READS:MBOX0C1,DRAM_WRITES:MBOX0C2"

/* The event sets tried, in order: with the memory controllers, then without them, so that a
 * LIKWID that refuses the uncore events still counts the cores. */
static const char *const likwid_event_sets[] = {
    LIKWID_EVENTS "," LIKWID_MEM_EVENTS,
    LIKWID_EVENTS,
};

/* LIKWID event name → what it measures: an enum sensor_metric bit, LIKWID_PKG_ENERGY or
 * LIKWID_MEM_LINES. */
static const struct {
        const char *event;
        int metric;
} likwid_event_map[] = {
    {"INSTR_RETIRED_ANY", SENSOR_INSTR},
    {"CPU_CLK_UNHALTED_CORE", SENSOR_CYCLES},
    {"CPU_CLK_UNHALTED_REF", SENSOR_REF_CYCLES},
    {"PWR_PKG_ENERGY", LIKWID_PKG_ENERGY},
    {"RESOURCE_STALLS_ANY", SENSOR_STALLS},
    {"CYCLE_ACTIVITY_STALLS_TOTAL", SENSOR_STALLS},
    {"CAS_COUNT_RD", LIKWID_MEM_LINES},
    {"CAS_COUNT_WR", LIKWID_MEM_LINES},
    {"DRAM_READS", LIKWID_MEM_LINES},
    {"DRAM_WRITES", LIKWID_MEM_LINES},
};

int likwid_event_metric(const char *event)
{
        for (size_t m = 0; event && m < ARRAY_SIZE(likwid_event_map); m++)
                if (strcmp(event, likwid_event_map[m].event) == 0)
                        return likwid_event_map[m].metric;
        return LIKWID_UNKNOWN;
}

const char *likwid_event_set(unsigned attempt)
{
        return attempt < ARRAY_SIZE(likwid_event_sets) ? likwid_event_sets[attempt] : NULL;
}

int likwid_mem_bytes(const double *lines, unsigned n, double *bytes)
{
        double sum = 0;

        for (unsigned i = 0; i < n; i++) {
                /* LIKWID gives NaN or a negative value for a counter it could not read. */
                if (!(lines[i] >= 0) || !isfinite(lines[i]))
                        return -ENODATA;
                sum += lines[i];
        }
        *bytes = sum * 64.0;
        return 0;
}

enum likwid_stage {
        STAGE_TOPOLOGY = 1,
        STAGE_MSR_OPEN,
        STAGE_PERFMON_INIT,
        STAGE_ADD_EVENTS,
        STAGE_SETUP,
        STAGE_OK
};

/* What the probe child sends back. */
struct likwid_answer {
        int stage; /* the stage reached: STAGE_OK, or the one that failed */
        int ret;   /* LIKWID's return there (STAGE_MSR_OPEN: -errno of the open) */
        int n_events;
        int n_mem_events;  /* of them, memory-controller counters (not listed in events) */
        char events[160];  /* the other events that survived setup, comma separated */
        char msr_path[32]; /* STAGE_MSR_OPEN: the device that would not open */
};

/* Keeps LIKWID's chatter out of our output: fds 1 and 2 point at /dev/null until restored. */
struct likwid_quiet {
        int saved_out, saved_err;
};

static void likwid_quiet_begin(struct likwid_quiet *q)
{
        int devnull;

        fflush(stdout);
        fflush(stderr);
        q->saved_out = dup(STDOUT_FILENO);
        q->saved_err = dup(STDERR_FILENO);
        devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (devnull >= 0) {
                dup2(devnull, STDOUT_FILENO);
                dup2(devnull, STDERR_FILENO);
                close(devnull);
        }
}

static void likwid_quiet_end(struct likwid_quiet *q)
{
        fflush(stdout);
        fflush(stderr);
        if (q->saved_out >= 0) {
                dup2(q->saved_out, STDOUT_FILENO);
                close(q->saved_out);
        }
        if (q->saved_err >= 0) {
                dup2(q->saved_err, STDERR_FILENO);
                close(q->saved_err);
        }
}

/* The CPUs to hand LIKWID: the monitored ones that its topology knows. */
static int likwid_cpu_list(const struct cpumask *want, int *cpus, int max)
{
        CpuTopology_t topo = get_cpuTopology();
        int n = 0;

        if (!topo || !topo->threadPool)
                return -ENODEV;
        for (unsigned i = 0; i < topo->numHWThreads && n < max; i++) {
                const HWThread *t = &topo->threadPool[i];

                if (!t->inCpuSet)
                        continue;
                if (want && !cpumask_empty(want) && !cpumask_test(want, t->apicId))
                        continue;
                cpus[n++] = (int)t->apicId;
        }
        return n > 0 ? n : -ENODEV;
}

/* Direct mode opens each CPU's MSR device in perfmon_init, as /dev/msrN or /dev/cpu/N/msr, but
 * only after timer_init has spent a second calibrating the TSC. Opening the first CPU's device
 * the same way tells in a few ms whether perfmon_init can succeed at all. These are the paths
 * LIKWID opens, so they do not go through the root prefix. */
static int likwid_msr_check(int cpu, char *path, size_t size)
{
        int fd;

        snprintf(path, size, "/dev/msr%d", cpu);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                snprintf(path, size, "/dev/cpu/%d/msr", cpu);
                fd = open(path, O_RDWR | O_CLOEXEC);
        }
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

/* Runs in the probe child only: may be killed or exit() inside LIKWID at any point. */
static void likwid_probe_child(int fd, const struct cpumask *want)
{
        struct likwid_answer a = {.stage = STAGE_TOPOLOGY};
        int cpus[CPUMASK_MAX], n, gid;

        a.ret = topology_init();
        if (a.ret < 0)
                goto out;
        n = likwid_cpu_list(want, cpus, CPUMASK_MAX);
        if (n < 0) {
                a.ret = n;
                goto out;
        }
        if (geteuid() == 0) {
                a.stage = STAGE_MSR_OPEN;
                a.ret = likwid_msr_check(cpus[0], a.msr_path, sizeof(a.msr_path));
                if (a.ret < 0)
                        goto out;
                HPMmode(ACCESSMODE_DIRECT);
        }
        a.stage = STAGE_PERFMON_INIT;
        a.ret = perfmon_init(n, cpus);
        if (a.ret < 0)
                goto out;
        for (unsigned attempt = 0; likwid_event_set(attempt); attempt++) {
                a.stage = STAGE_ADD_EVENTS;
                gid = perfmon_addEventSet(likwid_event_set(attempt));
                if (gid < 0) {
                        a.ret = gid;
                        continue;
                }
                a.stage = STAGE_SETUP;
                a.ret = perfmon_setupCounters(gid);
                if (a.ret >= 0)
                        break;
        }
        if (a.ret < 0)
                goto out;
        a.n_events = perfmon_getNumberOfEvents(gid);
        for (int i = 0; i < a.n_events; i++) {
                const char *name = perfmon_getEventName(gid, i);
                size_t len = strlen(a.events);

                if (likwid_event_metric(name) == LIKWID_MEM_LINES) {
                        a.n_mem_events++;
                        continue;
                }
                snprintf(a.events + len, sizeof(a.events) - len, "%s%s", len ? "," : "",
                         name ? name : "?");
        }
        a.stage = STAGE_OK;
        a.ret = 0;
out:
        if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
                _exit(3);
        _exit(0);
}

static int likwid_run_probe(const struct cpumask *want, struct likwid_answer *a)
{
        int pfd[2], status, r = 0;
        pid_t pid;

        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(pfd[0]);
                close(pfd[1]);
                return r;
        }
        if (pid == 0) {
                int devnull = open("/dev/null", O_RDWR);

                close(pfd[0]);
                if (devnull >= 0) {
                        dup2(devnull, STDIN_FILENO);
                        dup2(devnull, STDOUT_FILENO);
                        dup2(devnull, STDERR_FILENO);
                }
                likwid_probe_child(pfd[1], want);
                _exit(2);
        }
        close(pfd[1]);
        {
                struct pollfd p = {.fd = pfd[0], .events = POLLIN};
                uint64_t deadline = now_ns() + PROBE_TIMEOUT_MS * NSEC_PER_MSEC;
                size_t got = 0;

                while (got < sizeof(*a)) {
                        uint64_t t = now_ns();
                        int pr;
                        ssize_t n;

                        if (t >= deadline) {
                                r = -ETIMEDOUT;
                                break;
                        }
                        pr = poll(&p, 1, (int)((deadline - t) / NSEC_PER_MSEC) + 1);
                        if (pr < 0 && errno == EINTR)
                                continue;
                        if (pr <= 0) {
                                r = pr < 0 ? -errno : -ETIMEDOUT;
                                break;
                        }
                        n = read(pfd[0], (char *)a + got, sizeof(*a) - got);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                /* The child died or exit()ed inside LIKWID without answering. */
                                r = -ECHILD;
                                break;
                        }
                        got += (size_t)n;
                }
        }
        close(pfd[0]);
        /* The child is done or stuck: make sure it is gone, then reap it. */
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return r;
}

static void likwid_reason(const struct likwid_answer *a, int r, struct sensor_probe *out)
{
        char path[64];

        out->available = false;
        if (r == -ETIMEDOUT) {
                out->err = r;
                snprintf(out->reason, sizeof(out->reason),
                         "likwid: the library did not answer within %d ms (access daemon?): run "
                         "as root for direct MSR access",
                         PROBE_TIMEOUT_MS);
                return;
        }
        if (r < 0) {
                out->err = r;
                snprintf(out->reason, sizeof(out->reason),
                         "likwid: the library exited during setup (%s): run as root with the "
                         "msr module loaded, or start likwid-accessD",
                         strerror(-r));
                return;
        }
        /* LIKWID's returns are not always errnos (perfmon_init gives -1 in direct mode). */
        out->err = a->ret < 0 && a->ret > -4096 && a->ret != -1 ? a->ret : -EIO;
        if (a->stage == STAGE_PERFMON_INIT)
                out->err = -EACCES;
        switch (a->stage) {
        case STAGE_TOPOLOGY:
                snprintf(out->reason, sizeof(out->reason),
                         "likwid: topology_init failed (%d): the CPU is not supported by LIKWID",
                         a->ret);
                break;
        case STAGE_MSR_OPEN:
                out->err = a->ret;
                snprintf(out->reason, sizeof(out->reason),
                         "likwid: cannot access MSRs (open %s: %s): load the msr module "
                         "(modprobe msr); in a VM the hypervisor must expose the PMU",
                         a->msr_path, strerror(-a->ret));
                break;
        case STAGE_PERFMON_INIT:
                if (fs_path(path, sizeof(path), "/dev/cpu/0/msr") == 0 && access(path, F_OK) != 0)
                        snprintf(out->reason, sizeof(out->reason),
                                 "likwid: cannot access MSRs (perfmon_init %d; no /dev/cpu/0/msr): "
                                 "run as root with the msr module loaded (modprobe msr); in a VM "
                                 "the hypervisor must expose the PMU",
                                 a->ret);
                else
                        snprintf(out->reason, sizeof(out->reason),
                                 "likwid: cannot access MSRs (perfmon_init %d): run as root with "
                                 "the msr module loaded",
                                 a->ret);
                break;
        case STAGE_ADD_EVENTS:
        case STAGE_SETUP:
                snprintf(out->reason, sizeof(out->reason),
                         "likwid: %s failed (%d): this CPU lacks the fixed counters or RAPL",
                         a->stage == STAGE_SETUP ? "perfmon_setupCounters" : "perfmon_addEventSet",
                         a->ret);
                break;
        default:
                snprintf(out->reason, sizeof(out->reason), "likwid: unexpected answer (stage %d)",
                         a->stage);
                break;
        }
}

/* As root the child would open the first CPU's MSR device only after topology_init, which
 * runs a shell and reads the whole topology (some 50 to 150 ms). Where that device is missing
 * the answer is known before any of it: this opens it here first, as the child would, and
 * leaves LIKWID unstarted when it will not open. 0 when it opens (the child goes on), or not
 * root. */
static int likwid_msr_precheck(const struct cpumask *want, struct likwid_answer *a)
{
        int cpu = want && !cpumask_empty(want) ? cpumask_next(want, 0) : -1;
        cpu_set_t mine;
        int r;

        if (geteuid() != 0)
                return 0;
        if (cpu < 0 && sched_getaffinity(0, sizeof(mine), &mine) == 0)
                for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
                        if (CPU_ISSET(c, &mine))
                                cpu = c;
        if (cpu < 0)
                return 0;
        r = likwid_msr_check(cpu, a->msr_path, sizeof(a->msr_path));
        if (r == 0)
                return 0;
        a->stage = STAGE_MSR_OPEN;
        a->ret = r;
        return r;
}

static struct likwid_answer likwid_cached;
static int likwid_cached_r;
static bool likwid_cached_valid;

static int likwid_probe(const struct sensor_config *cfg, struct sensor_probe *out)
{
        struct likwid_answer a = {0};
        int r;

        *out = (struct sensor_probe){0};
        /* The answer cannot change while this process runs (pctl sensors asks twice: once
         * for the table, once for auto), and each probe costs a fork and LIKWID's start-up. */
        if (cfg && !cpumask_empty(&cfg->cpus)) {
                r = 0;
                if (likwid_msr_precheck(&cfg->cpus, &a) == 0)
                        r = likwid_run_probe(&cfg->cpus, &a);
        } else if (likwid_cached_valid) {
                a = likwid_cached;
                r = likwid_cached_r;
        } else {
                r = 0;
                if (likwid_msr_precheck(NULL, &a) == 0)
                        r = likwid_run_probe(NULL, &a);
                likwid_cached = a;
                likwid_cached_r = r;
                likwid_cached_valid = true;
        }
        if (r < 0 || a.stage != STAGE_OK) {
                likwid_reason(&a, r, out);
                snprintf(out->mem_reason, sizeof(out->mem_reason),
                         "likwid: not measured (LIKWID is not available here)");
                return 0;
        }
        if (a.n_mem_events > 0)
                snprintf(out->mem_reason, sizeof(out->mem_reason),
                         "likwid: %d memory-controller counters (CAS_COUNT / DRAM_READS, "
                         "DRAM_WRITES) on each socket's first CPU",
                         a.n_mem_events);
        else
                snprintf(out->mem_reason, sizeof(out->mem_reason),
                         "likwid: not measured: LIKWID set up no CAS_COUNT or DRAM_READS event on "
                         "this CPU (AMD's DRAM_CHANNEL groups count half the channels each)");
        if (a.n_events <= 0) {
                out->err = -ENODEV;
                snprintf(out->reason, sizeof(out->reason),
                         "likwid: no event survived perfmon_setupCounters");
                return 0;
        }
        out->available = true;
        out->mem_traffic = a.n_mem_events > 0;
        snprintf(out->reason, sizeof(out->reason), "likwid: events %s", a.events);
        return 0;
}

struct likwid_state {
        struct cpumask cpus;
        unsigned n_cpus;
        int gid;
        int n_threads;
        int thread_cpu[CPUMASK_MAX]; /* LIKWID thread index → CPU */
        int event_metric[48];        /* event index → likwid_event_metric() */
        int n_events;
        int pkg_thread[SENSOR_MAX_PACKAGES]; /* first thread of each package, -1 = none */
        unsigned n_packages;
        enum sensor_busy_source busy_src;
        bool busy;
        uint64_t *prev_busy_ns, *now_busy_ns;
        uint64_t prev_ts_ns;
        bool started;
        unsigned tsc_khz; /* the rate CPU_CLK_UNHALTED_REF counts at; 0: unknown */
};

/* LIKWID's state is global to the process: one open sensor at a time. */
static bool likwid_in_use;

static void likwid_close(struct sensor *s)
{
        struct likwid_state *st = s->priv;
        struct likwid_quiet q;

        if (!st)
                return;
        likwid_quiet_begin(&q);
        if (st->started)
                perfmon_stopCounters();
        perfmon_finalize();
        topology_finalize();
        likwid_quiet_end(&q);
        free(st->prev_busy_ns);
        free(st->now_busy_ns);
        free(st);
        s->priv = NULL;
        likwid_in_use = false;
}

static int likwid_open(struct sensor *s, const struct sensor_config *cfg)
{
        struct sensor_probe p;
        struct likwid_state *st;
        struct likwid_quiet q;
        CpuTopology_t topo;
        unsigned n_packages;
        int r;

        if (likwid_in_use)
                return -EBUSY;
        /* Only a library that answered in a child gets to run in this process. */
        likwid_probe(cfg, &p);
        if (!p.available)
                return p.err < 0 ? p.err : -ENODEV;
        st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        r = sensor_cpus_resolve(cfg, &st->cpus, &st->n_cpus, &n_packages);
        if (r < 0) {
                free(st);
                return r;
        }
        s->priv = st;
        likwid_in_use = true;
        likwid_quiet_begin(&q);
        r = topology_init();
        if (r < 0)
                goto fail_quiet;
        topo = get_cpuTopology();
        r = likwid_cpu_list(&st->cpus, st->thread_cpu, CPUMASK_MAX);
        if (r < 0)
                goto fail_quiet;
        st->n_threads = r;
        if (geteuid() == 0)
                HPMmode(ACCESSMODE_DIRECT);
        r = perfmon_init(st->n_threads, st->thread_cpu);
        if (r < 0)
                goto fail_quiet;
        /* As the probe did: the first event set LIKWID sets up. */
        r = -EINVAL;
        for (unsigned attempt = 0; likwid_event_set(attempt); attempt++) {
                st->gid = perfmon_addEventSet(likwid_event_set(attempt));
                if (st->gid < 0) {
                        r = st->gid;
                        continue;
                }
                r = perfmon_setupCounters(st->gid);
                if (r >= 0)
                        break;
        }
        if (r < 0)
                goto fail_quiet;
        /* Events LIKWID could not set up were dropped with a warning: see what is left. */
        st->n_events = perfmon_getNumberOfEvents(st->gid);
        for (int e = 0; e < st->n_events && e < (int)ARRAY_SIZE(st->event_metric); e++) {
                const char *name = perfmon_getEventName(st->gid, e);

                st->event_metric[e] = likwid_event_metric(name);
                if (st->event_metric[e] > 0)
                        s->metrics |= (unsigned)st->event_metric[e];
                else if (st->event_metric[e] == LIKWID_PKG_ENERGY)
                        s->has_energy = true;
                else if (st->event_metric[e] == LIKWID_MEM_LINES)
                        s->has_mem_traffic = true;
        }
        /* The frequency a CPU ran at, as perf has it: CPU_CLK_UNHALTED_CORE over
         * CPU_CLK_UNHALTED_REF (fixed counters read together) times the TSC rate. */
        if ((s->metrics & (SENSOR_CYCLES | SENSOR_REF_CYCLES)) ==
                (SENSOR_CYCLES | SENSOR_REF_CYCLES) &&
            perf_tsc_khz(20, &st->tsc_khz) == 0)
                s->metrics |= SENSOR_FREQ;
        /* RAPL is read on the first CPU of each socket. */
        for (unsigned k = 0; k < SENSOR_MAX_PACKAGES; k++)
                st->pkg_thread[k] = -1;
        for (int i = 0; i < st->n_threads; i++) {
                for (unsigned h = 0; h < topo->numHWThreads; h++) {
                        const HWThread *t = &topo->threadPool[h];

                        if ((int)t->apicId == st->thread_cpu[i] &&
                            t->packageId < SENSOR_MAX_PACKAGES) {
                                if (st->pkg_thread[t->packageId] < 0)
                                        st->pkg_thread[t->packageId] = i;
                                if (t->packageId + 1 > st->n_packages)
                                        st->n_packages = t->packageId + 1;
                        }
                }
        }
        r = perfmon_startCounters();
        if (r < 0)
                goto fail_quiet;
        st->started = true;
        likwid_quiet_end(&q);
        st->prev_busy_ns = calloc(st->n_cpus, sizeof(uint64_t));
        st->now_busy_ns = calloc(st->n_cpus, sizeof(uint64_t));
        if (!st->prev_busy_ns || !st->now_busy_ns) {
                likwid_close(s);
                return -ENOMEM;
        }
        if (sensor_busy_probe(&st->busy_src, NULL, 0) == 0 &&
            sensor_busy_read(st->busy_src, st->prev_busy_ns, st->n_cpus) == 0) {
                st->busy = true;
                s->metrics |= SENSOR_BUSY;
        }
        st->prev_ts_ns = now_ns();
        s->n_cpus = st->n_cpus;
        s->n_packages = st->n_packages ? st->n_packages : n_packages;
        return 0;
fail_quiet:
        likwid_quiet_end(&q);
        likwid_close(s);
        /* LIKWID returns -errno mostly, but not always. */
        return r < 0 && r > -4096 ? r : -EIO;
}

static int likwid_read(struct sensor *s, struct sensor_sample *out)
{
        struct likwid_state *st = s->priv;
        struct likwid_quiet q;
        uint64_t ts;
        int r;

        likwid_quiet_begin(&q);
        r = perfmon_readCounters();
        likwid_quiet_end(&q);
        if (r < 0)
                return r > -4096 ? r : -EIO;
        ts = now_ns();
        for (int i = 0; i < st->n_threads; i++) {
                int cpu = st->thread_cpu[i];
                struct sensor_counts *c;

                if (cpu < 0 || (unsigned)cpu >= out->n_cpus)
                        continue;
                c = &out->cpu[cpu];
                for (int e = 0; e < st->n_events && e < (int)ARRAY_SIZE(st->event_metric); e++) {
                        double v = perfmon_getLastResult(st->gid, e, i);

                        if (st->event_metric[e] <= 0 || !(v >= 0))
                                continue;
                        if (st->event_metric[e] == SENSOR_INSTR)
                                c->instr = (uint64_t)v;
                        else if (st->event_metric[e] == SENSOR_CYCLES)
                                c->cycles = (uint64_t)v;
                        else if (st->event_metric[e] == SENSOR_STALLS)
                                c->stalls = (uint64_t)v;
                        else
                                c->ref_cycles = (uint64_t)v;
                        c->measured |= (unsigned)st->event_metric[e];
                }
                if (s->metrics & SENSOR_FREQ)
                        perf_counts_freq(c, st->tsc_khz);
        }
        if (s->has_energy) {
                out->energy_measured = true;
                out->n_packages = st->n_packages;
                for (unsigned k = 0; k < st->n_packages; k++) {
                        int e_idx = -1;

                        for (int e = 0; e < st->n_events && e < (int)ARRAY_SIZE(st->event_metric);
                             e++)
                                if (st->event_metric[e] == LIKWID_PKG_ENERGY)
                                        e_idx = e;
                        /* A package with no monitored CPU is not read: energy unknown. */
                        if (st->pkg_thread[k] < 0 || e_idx < 0) {
                                out->energy_measured = false;
                                continue;
                        }
                        /* PWR results are already joules. */
                        out->energy_j[k] = perfmon_getLastResult(st->gid, e_idx, st->pkg_thread[k]);
                }
        }
        /* Uncore counters: each socket's on its first CPU; a socket without a monitored CPU
         * leaves the traffic unknown. */
        if (s->has_mem_traffic) {
                bool all = st->n_packages > 0;

                for (unsigned k = 0; k < st->n_packages && all; k++) {
                        double lines[ARRAY_SIZE(st->event_metric)];
                        unsigned n = 0;

                        if (st->pkg_thread[k] < 0) {
                                all = false;
                                break;
                        }
                        for (int e = 0; e < st->n_events && e < (int)ARRAY_SIZE(st->event_metric);
                             e++)
                                if (st->event_metric[e] == LIKWID_MEM_LINES)
                                        lines[n++] =
                                            perfmon_getLastResult(st->gid, e, st->pkg_thread[k]);
                        if (likwid_mem_bytes(lines, n, &out->mem_bytes[k]) < 0)
                                all = false;
                }
                out->mem_measured = all;
                if (all && st->n_packages > out->n_packages)
                        out->n_packages = st->n_packages;
        }
        if (st->busy && sensor_busy_read(st->busy_src, st->now_busy_ns, st->n_cpus) == 0) {
                cpumask_foreach (cpu, &st->cpus) {
                        if ((unsigned)cpu >= st->n_cpus)
                                continue;
                        out->cpu[cpu].busy_ns = st->now_busy_ns[cpu] >= st->prev_busy_ns[cpu]
                                                    ? st->now_busy_ns[cpu] - st->prev_busy_ns[cpu]
                                                    : 0;
                        out->cpu[cpu].measured |= SENSOR_BUSY;
                }
                memcpy(st->prev_busy_ns, st->now_busy_ns, st->n_cpus * sizeof(uint64_t));
        }
        out->timestamp_ns = ts;
        out->interval_ns = ts - st->prev_ts_ns;
        st->prev_ts_ns = ts;
        return 0;
}

static int likwid_set_targets(struct sensor *s, const struct sensor_target *targets, unsigned n)
{
        (void)s;
        (void)targets;
        /* LIKWID counts per hardware thread only. */
        return n == 0 ? 0 : -EOPNOTSUPP;
}

const struct sensor_ops sensor_likwid_ops = {
    .name = "likwid",
    .description = "LIKWID perfmon: fixed counters and PWR_PKG_ENERGY per CPU and package; "
                   "memory controllers' CAS/DRAM counts per socket",
    .probe = likwid_probe,
    .open = likwid_open,
    .set_targets = likwid_set_targets,
    .read = likwid_read,
    .close = likwid_close,
};
