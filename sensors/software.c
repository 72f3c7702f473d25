/* The software backend: busy time only, from what every kernel has. Per CPU from cgroup v1
 * cpuacct (ns) or /proc/stat; per process from each thread's schedstat, attributed to the CPU
 * the thread last ran on, and the runtime of threads that exited between two reads from the
 * process's CPU clock (below, sw_pid_recover); per cgroup from cpuacct.usage_percpu (v1) or a
 * task-clock perf event per CPU (v2). Instructions and cycles are never filled in: nothing is made
 * up.
 *
 * Why not task-clock per CPU for the whole system: in CPU-wide mode (pid = -1) the software
 * clocks count wall time, idle included (checked on the 2-vCPU VMs: 0.5 s per 0.5 s on an idle
 * CPU, exclude_idle or not), so they say nothing about busy time. Per cgroup they do. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"
#include "pctl/fsio.h"
#include "pctl/procstat.h"
#include "pctl/util.h"

#define PROC_STAT_MAX (1u << 20)
/* cpuacct.usage_percpu: at most 20 digits and a space per possible CPU. Under malloc's mmap
 * threshold, the buffer comes from the heap rather than a fresh 1 MiB mapping every sample. */
#define PERCPU_MAX ((size_t)CPUMASK_MAX * 21 + 64)

static const char *const cpuacct_roots[] = {
    "/sys/fs/cgroup/cpuacct",
    "/sys/fs/cgroup/cpu,cpuacct",
};

int sensor_parse_percpu(const char *text, uint64_t *ns, unsigned n_cpus)
{
        const char *p = text;
        unsigned cpu = 0;

        for (unsigned i = 0; i < n_cpus; i++)
                ns[i] = 0;
        while (*p) {
                char *end;
                unsigned long long v;

                while (*p == ' ' || *p == '\n' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                errno = 0;
                v = strtoull(p, &end, 10);
                if (end == p || errno)
                        return -EBADMSG;
                if (cpu < n_cpus)
                        ns[cpu] = v;
                cpu++;
                p = end;
        }
        return cpu == 0 ? -EBADMSG : 0;
}

int sensor_parse_proc_stat(const char *text, uint64_t *busy_ns, unsigned n_cpus, long ticks_per_s)
{
        const char *line = text;
        unsigned found = 0;

        if (ticks_per_s <= 0)
                return -EINVAL;
        for (unsigned i = 0; i < n_cpus; i++)
                busy_ns[i] = 0;
        while (line && *line) {
                unsigned cpu;
                unsigned long long user, nice, sys, idle, iowait, irq, softirq;

                /* "cpu" alone is the total; "cpuN" the CPUs. Fields after softirq (steal, guest)
                 * are not busy time of this guest or already in user. */
                if (sscanf(line, "cpu%u %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice,
                           &sys, &idle, &iowait, &irq, &softirq) == 8) {
                        if (cpu < n_cpus) {
                                unsigned long long ticks = user + nice + sys + irq + softirq;

                                busy_ns[cpu] =
                                    (uint64_t)ticks * (NSEC_PER_SEC / (uint64_t)ticks_per_s);
                                found++;
                        }
                }
                line = strchr(line, '\n');
                if (line)
                        line++;
        }
        return found ? 0 : -EBADMSG;
}

int sensor_busy_probe(enum sensor_busy_source *src, char *path, size_t path_size)
{
        char buf[4096];

        for (size_t i = 0; i < ARRAY_SIZE(cpuacct_roots); i++) {
                char file[512];

                snprintf(file, sizeof(file), "%s/cpuacct.usage_percpu", cpuacct_roots[i]);
                if (fs_read(file, buf, sizeof(buf)) > 0) {
                        *src = SENSOR_BUSY_CPUACCT;
                        if (path)
                                snprintf(path, path_size, "%s", file);
                        return 0;
                }
        }
        {
                _cleanup_free_ char *big = malloc(PROC_STAT_MAX);
                ssize_t n;

                if (!big)
                        return -ENOMEM;
                n = fs_read("/proc/stat", big, PROC_STAT_MAX);
                if (n < 0)
                        return (int)n;
        }
        *src = SENSOR_BUSY_PROCSTAT;
        if (path)
                snprintf(path, path_size, "/proc/stat");
        return 0;
}

int sensor_busy_read(enum sensor_busy_source src, uint64_t *busy_ns, unsigned n_cpus)
{
        size_t size = src == SENSOR_BUSY_CPUACCT ? PERCPU_MAX : PROC_STAT_MAX;
        _cleanup_free_ char *buf = malloc(size);
        ssize_t n = -ENOENT;

        if (!buf)
                return -ENOMEM;
        if (src == SENSOR_BUSY_CPUACCT) {
                for (size_t i = 0; i < ARRAY_SIZE(cpuacct_roots) && n < 0; i++) {
                        char file[512];

                        snprintf(file, sizeof(file), "%s/cpuacct.usage_percpu", cpuacct_roots[i]);
                        n = fs_read(file, buf, size);
                }
                if (n < 0)
                        return (int)n;
                return sensor_parse_percpu(buf, busy_ns, n_cpus);
        }
        n = fs_read("/proc/stat", buf, PROC_STAT_MAX);
        if (n < 0)
                return (int)n;
        return sensor_parse_proc_stat(buf, busy_ns, n_cpus, sysconf(_SC_CLK_TCK));
}

struct sw_thread {
        pid_t tid;
        int fd; /* its schedstat, kept open; -1: opened at each read */
        uint64_t runtime_ns;
        bool seen;
};

enum sw_target_mode { SW_PID, SW_CPUACCT, SW_PERF };

struct sw_target {
        enum sw_target_mode mode;
        pid_t pid;
        bool gone;
        DIR *task_dir; /* SW_PID: /proc/PID/task, kept open between reads */
        /* SW_PID: the process's CPU clock (every thread's runtime, exited ones included), its
         * last reading, and what the threads' reads were charged beyond it (< 0) or short of it
         * (> 0, then charged as the runtime of threads that exited unseen). */
        clockid_t clock;
        bool has_clock;
        int pidfd; /* readable once the process has exited; -1: none (a fake /proc) */
        uint64_t clock_ns;
        int64_t balance_ns;
        char path[4200]; /* SW_CPUACCT: the usage_percpu file, root-prefixed */
        struct sw_thread *threads;
        unsigned n_threads, cap_threads;
        uint64_t *prev_ns; /* [n_cpus] for SW_CPUACCT and SW_PERF */
        int *fds;          /* [n_cpus] for SW_PERF */
        /* SW_PID: its child processes, read as part of it (a build's compilers, a launcher's
         * workers, each a process of its own with its own clock), and its reaped children's
         * CPU time (stat's cutime + cstime) at the last read. */
        struct sw_target *kids;
        unsigned n_kids, cap_kids, depth, reads_since_reaped;
        uint64_t reaped_ns;
};

struct sw_state {
        struct cpumask cpus;
        unsigned n_cpus;
        enum sensor_busy_source busy_src;
        uint64_t *prev_busy_ns;
        uint64_t *now_busy_ns;
        uint64_t prev_ts_ns;
        struct sw_target *targets;
        unsigned n_targets;
};

/* The text of a /proc file through a descriptor kept open: proc files regenerate on a read
 * from offset 0. */
static ssize_t sw_pread(int fd, char *buf, size_t size)
{
        ssize_t n;

        do
                n = pread(fd, buf, size - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return n;
}

/* One thread's runtime (schedstat, ns): through its kept descriptor, else opened relative to
 * the process's /proc/PID/task. -ESRCH (or -ENOENT) once the thread has exited. */
static int sw_thread_runtime(int task_fd, const struct sw_thread *th, uint64_t *runtime_ns)
{
        char path[64], buf[256];
        unsigned long long rt;
        ssize_t n;

        if (th->fd >= 0) {
                n = sw_pread(th->fd, buf, sizeof(buf));
        } else {
                snprintf(path, sizeof(path), "%d/schedstat", (int)th->tid);
                n = file_read_at(task_fd, path, buf, sizeof(buf));
        }
        if (n < 0)
                return (int)n;
        if (sscanf(buf, "%llu", &rt) != 1)
                return -EBADMSG;
        *runtime_ns = rt;
        return 0;
}

/* The CPU a thread last ran on (stat field 39). */
static int sw_thread_cpu(int task_fd, pid_t tid, int *cpu)
{
        char path[64], buf[1024];
        long long v;
        ssize_t n;
        int r;

        snprintf(path, sizeof(path), "%d/stat", (int)tid);
        n = file_read_at(task_fd, path, buf, sizeof(buf));
        if (n < 0)
                return (int)n;
        r = procstat_field(buf, 39, &v);
        if (r == 0)
                *cpu = (int)v;
        return r;
}

static struct sw_thread *sw_thread_find(struct sw_target *t, pid_t tid)
{
        for (unsigned i = 0; i < t->n_threads; i++)
                if (t->threads[i].tid == tid)
                        return &t->threads[i];
        return NULL;
}

static void sw_threads_forget(struct sw_target *t, bool all)
{
        for (unsigned i = 0; i < t->n_threads;) {
                if (all || !t->threads[i].seen) {
                        if (t->threads[i].fd >= 0)
                                close(t->threads[i].fd);
                        t->threads[i] = t->threads[--t->n_threads];
                } else {
                        i++;
                }
        }
}

static void sw_pid_gone(struct sw_target *t)
{
        sw_threads_forget(t, true);
        if (t->pidfd >= 0)
                close(t->pidfd);
        t->pidfd = -1;
        if (t->task_dir)
                closedir(t->task_dir);
        t->task_dir = NULL;
        t->gone = true;
}

/* Charges the runtime a thread gained since the last read to the CPU it last ran on.
 * -ESRCH/-ENOENT when it has exited (the time since the last read is lost: see
 * docs/estimator.md). */
static int sw_thread_account(struct sw_state *st, struct sw_target *t, struct sw_thread *th,
                             struct sensor_sample *out, unsigned index)
{
        int task_fd = dirfd(t->task_dir), cpu = -1, r;
        uint64_t rt;

        r = sw_thread_runtime(task_fd, th, &rt);
        if (r < 0)
                return r;
        /* Where it ran matters only when it ran: a sleeping thread costs one read. */
        if (out && rt > th->runtime_ns && sw_thread_cpu(task_fd, th->tid, &cpu) < 0)
                cpu = -1;
        if (out && cpu >= 0 && rt >= th->runtime_ns) {
                /* Runtime on a CPU past the sample's is seen, not lost: it counts against the
                 * clock all the same. */
                t->balance_ns -= (int64_t)(rt - th->runtime_ns);
                if ((unsigned)cpu < st->n_cpus) {
                        struct sensor_counts *c = sensor_target_cpu(out, index, (unsigned)cpu);

                        c->busy_ns += rt - th->runtime_ns;
                        c->measured |= SENSOR_BUSY;
                }
        }
        th->runtime_ns = rt;
        th->seen = true;
        return 0;
}

/* Finds threads not yet known by listing /proc/PID/task. With out == NULL (the baseline) a new
 * thread's runtime so far is not charged; otherwise it was born since the last read (or since
 * the last listing) and all of it is. Returns the number of threads listed, or -errno. */
static int sw_pid_list(struct sw_state *st, struct sw_target *t, struct sensor_sample *out,
                       unsigned index)
{
        int task_fd = dirfd(t->task_dir), listed = 0;
        struct dirent *de;

        rewinddir(t->task_dir);
        while ((de = readdir(t->task_dir))) {
                struct sw_thread *th;
                char path[64];
                int tid;

                if (de->d_name[0] == '.' || parse_int(de->d_name, &tid) < 0)
                        continue;
                listed++;
                if (sw_thread_find(t, tid))
                        continue;
                if (t->n_threads == t->cap_threads) {
                        unsigned cap = t->cap_threads ? 2 * t->cap_threads : 16;
                        struct sw_thread *nt = realloc(t->threads, cap * sizeof(*nt));

                        if (!nt)
                                return -ENOMEM;
                        t->threads = nt;
                        t->cap_threads = cap;
                }
                th = &t->threads[t->n_threads++];
                /* Kept open so that later reads are one pread; where descriptors run out, it
                 * is opened at each read instead. */
                snprintf(path, sizeof(path), "%d/schedstat", tid);
                *th = (struct sw_thread){.tid = tid,
                                         .fd = openat(task_fd, path, O_RDONLY | O_CLOEXEC)};
                if (sw_thread_account(st, t, th, out, index) < 0) {
                        /* Exited between the listing and the read: not an error. */
                        if (th->fd >= 0)
                                close(th->fd);
                        t->n_threads--;
                }
        }
        return listed;
}

/* The process has exited, perhaps not yet reaped by its parent: its pidfd is readable. One
 * poll, where the leader's stat would be a /proc file to generate and parse. */
static bool sw_pid_exited(const struct sw_target *t)
{
        struct pollfd p = {.fd = t->pidfd, .events = POLLIN};

        return t->pidfd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP));
}

/* The process's CPU clock, read before its threads (so that a thread's read can only run
 * ahead of it). Outside the real root (a fake /proc) there is no such process to ask. */
static void sw_pid_clock(struct sw_target *t, bool baseline)
{
        struct timespec ts;

        if (baseline)
                t->has_clock = fs_root()[0] == '\0' && clock_getcpuclockid(t->pid, &t->clock) == 0;
        if (!t->has_clock)
                return;
        if (clock_gettime(t->clock, &ts) < 0) {
                t->has_clock = false;
                return;
        }
        uint64_t now = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;

        if (!baseline && now >= t->clock_ns)
                t->balance_ns += (int64_t)(now - t->clock_ns);
        t->clock_ns = now;
}

/* A thread that exits between two reads takes the runtime it had since the last one with it,
 * and one born and gone between them was never seen; the process's clock keeps both. What the
 * clock gained beyond the threads' reads is charged to the CPUs the process may run on, the
 * least busy first, each up to the interval: such threads (sort's merge workers, a pool's
 * short tasks) run beside the others, where there is room. The balance carries what the
 * reads ran ahead (a running thread read after the clock; schedstat lagging a running thread
 * by up to a tick), so that over a run no more than the clock is charged. */
static void sw_pid_recover(struct sw_state *st, struct sw_target *t, struct sensor_sample *out,
                           unsigned index, uint64_t interval_ns)
{
        cpu_set_t allowed;

        if (!t->has_clock || t->balance_ns <= 0)
                return;
        if (sched_getaffinity(t->pid, sizeof(allowed), &allowed) < 0)
                return;
        while (t->balance_ns > 0) {
                struct sensor_counts *least = NULL;

                cpumask_foreach (cpu, &st->cpus) {
                        struct sensor_counts *c;

                        if ((unsigned)cpu >= st->n_cpus || cpu >= CPU_SETSIZE ||
                            !CPU_ISSET(cpu, &allowed))
                                continue;
                        c = sensor_target_cpu(out, index, (unsigned)cpu);
                        if (!least || c->busy_ns < least->busy_ns)
                                least = c;
                }
                if (!least)
                        return;
                uint64_t room = least->busy_ns < interval_ns ? interval_ns - least->busy_ns : 0;
                uint64_t add = (uint64_t)t->balance_ns;

                /* Every CPU full: the rest goes on the least busy one all the same. */
                if (room > 0 && room < add)
                        add = room;
                least->busy_ns += add;
                least->measured |= SENSOR_BUSY;
                t->balance_ns -= (int64_t)add;
        }
}

static int sw_pid_read(struct sw_state *st, struct sw_target *t, struct sensor_sample *out,
                       unsigned index, uint64_t interval_ns);
static int sw_pid_tree(struct sw_state *st, struct sw_target *t, struct sensor_sample *out,
                       unsigned index, uint64_t interval_ns, bool last);
static void sw_target_free(struct sw_target *t, unsigned n_cpus);

/* Child processes deeper than this are not followed (a fork bomb is no app to measure). */
#define SW_MAX_DEPTH 16
/* A process without children reads its reaped children's time once in this many reads. */
#define SW_REAPED_EVERY 10

/* Its reaped children's CPU time so far (stat fields 16 and 17 of its leader, which the kernel
 * fills for the whole process), in ns. */
static int sw_pid_reaped(const struct sw_target *t, uint64_t *ns)
{
        char path[64], buf[1024];
        long long cutime, cstime;
        ssize_t n;

        snprintf(path, sizeof(path), "%d/stat", (int)t->pid);
        n = file_read_at(dirfd(t->task_dir), path, buf, sizeof(buf));
        if (n < 0)
                return (int)n;
        if (procstat_field(buf, 16, &cutime) < 0 || procstat_field(buf, 17, &cstime) < 0 ||
            cutime < 0 || cstime < 0)
                return -EBADMSG;
        *ns = (uint64_t)(cutime + cstime) * (NSEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK));
        return 0;
}

static bool sw_reparented(pid_t pid, pid_t parent);

/* What a child process has been counted for, as its parent's reaped time will count it (from
 * its start): its clock and its own reaped children's time at its last read, less what of
 * them it had not charged yet (its balance: reads that ran ahead make it negative), and what
 * its own children still listed were counted for (it was reaped before its last look at
 * them), unless they went to another parent (alive when it exited). */
static int64_t sw_kid_counted(const struct sw_target *k)
{
        int64_t n = (int64_t)(k->clock_ns + k->reaped_ns) - k->balance_ns;

        for (unsigned i = 0; i < k->n_kids; i++)
                if (!sw_reparented(k->kids[i].pid, k->pid))
                        n += sw_kid_counted(&k->kids[i]);
        return n;
}

/* What a process target starts with: its /proc/PID/task path under the root, into path, and
 * its pidfd. The pidfd is opened only once the path is there, so that a failure leaves nothing
 * to close. */
static int sw_pid_open(struct sw_target *t, char *path, size_t size)
{
        int r = fs_path(path, size, "/proc/%d/task", (int)t->pid);

        if (r < 0)
                return r;
#ifdef SYS_pidfd_open
        /* Not in a fake /proc, whose PIDs are no processes; ENOSYS before Linux 5.3. */
        if (fs_root()[0] == '\0')
                t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
#endif
        return 0;
}

/* A child process newly seen. At the baseline its time so far is not the app's interval;
 * otherwise it was born since the last read and all of it is (its clock counts from 0). */
static int sw_kid_add(struct sw_state *st, struct sw_target *t, pid_t pid, bool baseline)
{
        struct sw_target *k;
        char path[4096];
        int r;

        if (t->n_kids == t->cap_kids) {
                unsigned cap = t->cap_kids ? 2 * t->cap_kids : 4;
                struct sw_target *nk = realloc(t->kids, cap * sizeof(*nk));

                if (!nk)
                        return -ENOMEM;
                t->kids = nk;
                t->cap_kids = cap;
        }
        k = &t->kids[t->n_kids];
        *k = (struct sw_target){.mode = SW_PID, .pid = pid, .pidfd = -1, .depth = t->depth + 1};
        r = sw_pid_open(k, path, sizeof(path));
        if (r < 0)
                return r;
        k->task_dir = opendir(path);
        if (!k->task_dir) {
                if (k->pidfd >= 0)
                        close(k->pidfd);
                return 0; /* gone already: its time reaches the parent's reaped time */
        }
        t->n_kids++;
        if (baseline)
                return sw_pid_read(st, k, NULL, 0, 0);
        sw_pid_clock(k, true);
        k->clock_ns = 0;
        return 0;
}

/* A process (an exited one not reaped yet, as a zombie is) whose parent is no longer parent:
 * its parent exited first, and another will reap it. */
static bool sw_reparented(pid_t pid, pid_t parent)
{
        char path[4096], buf[1024];
        long long ppid;

        if (fs_path(path, sizeof(path), "/proc/%d/stat", (int)pid) < 0 ||
            file_read(path, buf, sizeof(buf)) < 0 || procstat_field(buf, 4, &ppid) < 0)
                return false;
        return ppid != parent;
}

/* The PIDs of a children file ("1 2 3 "), at most max; the number read. */
static unsigned sw_parse_pids(const char *text, pid_t *pids, unsigned max)
{
        unsigned n = 0;

        for (const char *p = text; *p && n < max;) {
                char *end;
                long v = strtol(p, &end, 10);

                if (end == p)
                        break;
                p = end;
                if (v > 0 && v <= INT_MAX)
                        pids[n++] = (pid_t)v;
        }
        return n;
}

/* The child processes of t: those its leader's children file lists (children forked by its
 * other threads are not followed), read as part of it. The parent's reaped time grows by a
 * child's whole total when it is reaped: added to the parent's balance, less what the child
 * had been counted for (taken off when it leaves, whichever is seen first; the balance
 * carries either way), what was not seen of it is charged. A child moved to another parent
 * is no longer this app's and is dropped. */
static int sw_pid_tree(struct sw_state *st, struct sw_target *t, struct sensor_sample *out,
                       unsigned index, uint64_t interval_ns, bool last)
{
        char path[64], buf[4096];
        pid_t pids[512];
        unsigned n_pids = 0;
        bool had = t->n_kids > 0;
        uint64_t reaped = 0;
        int r;

        snprintf(path, sizeof(path), "%d/children", (int)t->pid);
        /* No children file (a kernel without CONFIG_PROC_CHILDREN, a fake /proc): none. */
        if (t->depth < SW_MAX_DEPTH &&
            file_read_at(dirfd(t->task_dir), path, buf, sizeof(buf)) >= 0)
                n_pids = sw_parse_pids(buf, pids, sizeof(pids) / sizeof(pids[0]));
        for (unsigned i = 0; i < t->n_kids;) {
                struct sw_target *k = &t->kids[i];
                bool listed = false;

                for (unsigned j = 0; j < n_pids && !listed; j++)
                        listed = pids[j] == k->pid;
                if (listed) {
                        i++;
                        continue;
                }
                if (t->has_clock && (k->gone || k->pidfd < 0 || sw_pid_exited(k)) &&
                    !sw_reparented(k->pid, t->pid))
                        t->balance_ns -= sw_kid_counted(k);
                sw_target_free(k, st->n_cpus);
                t->kids[i] = t->kids[--t->n_kids];
        }
        /* The reaped time costs a stat of the leader: read where children are or were, at the
         * baseline and at a last look, and else every SW_REAPED_EVERY reads (a child born and
         * reaped between two reads shows there only; the balance carries it, so it is charged
         * late, never lost). */
        if (!out || last || had || n_pids > 0 || ++t->reads_since_reaped >= SW_REAPED_EVERY) {
                t->reads_since_reaped = 0;
                if (sw_pid_reaped(t, &reaped) == 0) {
                        if (out && reaped > t->reaped_ns && t->has_clock)
                                t->balance_ns += (int64_t)(reaped - t->reaped_ns);
                        t->reaped_ns = reaped;
                }
        }
        for (unsigned j = 0; j < n_pids; j++) {
                bool known = false;

                for (unsigned i = 0; i < t->n_kids && !known; i++)
                        known = t->kids[i].pid == pids[j];
                if (known)
                        continue;
                r = sw_kid_add(st, t, pids[j], out == NULL);
                if (r < 0)
                        return r;
        }
        for (unsigned i = 0; i < t->n_kids && out; i++) {
                r = sw_pid_read(st, &t->kids[i], out, index, interval_ns);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Reads the threads of t->pid. With out == NULL it only records the baseline.
 *
 * The process's /proc/PID/task and each thread's schedstat stay open from one read to the
 * next: a read is one fstat of the directory (its link count gives the thread count) and one
 * pread per thread, and /proc/PID/task is listed again only when the count differs from the
 * threads that answered (a thread was born, or one exited and another was born). Descriptors opened
 * through the kept directory follow the process itself, so a PID reused after the app exited
 * is never read as it. */
static int sw_pid_read(struct sw_state *st, struct sw_target *t, struct sensor_sample *out,
                       unsigned index, uint64_t interval_ns)
{
        unsigned live = 0;
        long long n_threads = -1;
        struct stat sb;
        int listed, r;

        if (t->gone)
                return 0;
        if (!t->task_dir) {
                char path[4096];
                r = fs_path(path, sizeof(path), "/proc/%d/task", (int)t->pid);
                if (r < 0)
                        return r;
                t->task_dir = opendir(path);
                if (!t->task_dir) {
                        /* The app is gone: its target reads as not measured, not an error. */
                        if (errno == ENOENT || errno == ESRCH) {
                                sw_pid_gone(t);
                                return 0;
                        }
                        return -errno;
                }
        }
        /* Exited and not yet reaped (`pctl run` reads its child's CPU time before it reaps
         * it): what remains is no process. Counting the interval would count the time after
         * the exit as the app's waiting; its work since the last read goes unseen. */
        if (out && sw_pid_exited(t)) {
                /* A child process's last look at its own children: what it reaped of them
                 * and what they had been counted for, so that its parent, which will reap it,
                 * counts neither twice. Nothing is charged here: its parent charges the rest. */
                if (t->depth > 0)
                        (void)sw_pid_tree(st, t, out, index, interval_ns, true);
                sw_pid_gone(t);
                return 0;
        }
        sw_pid_clock(t, out == NULL);
        /* The kernel gives /proc/PID/task a link count of its threads + 2: a fstat is far
         * cheaper than generating /proc/PID/stat to read num_threads. */
        if (fstat(dirfd(t->task_dir), &sb) == 0 && sb.st_nlink >= 2)
                n_threads = (long long)sb.st_nlink - 2;
        for (unsigned i = 0; i < t->n_threads; i++) {
                t->threads[i].seen = false;
                if (sw_thread_account(st, t, &t->threads[i], out, index) == 0)
                        live++;
        }
        if (n_threads < 0 || live != (unsigned long long)n_threads || live == 0) {
                listed = sw_pid_list(st, t, out, index);
                if (listed < 0)
                        return listed;
                /* A process that has been reaped lists no thread at all: it is gone. */
                if (listed == 0) {
                        sw_pid_gone(t);
                        return 0;
                }
        }
        /* Forget threads that exited, so that a reused TID starts from zero. */
        sw_threads_forget(t, false);
        r = sw_pid_tree(st, t, out, index, interval_ns, false);
        if (r < 0)
                return r;
        if (out)
                sw_pid_recover(st, t, out, index, interval_ns);
        if (out) {
                cpumask_foreach (cpu, &st->cpus) {
                        if ((unsigned)cpu < st->n_cpus)
                                sensor_target_cpu(out, index, (unsigned)cpu)->measured |=
                                    SENSOR_BUSY;
                }
        }
        return 0;
}

static int sw_percpu_read(struct sw_state *st, struct sw_target *t, uint64_t *now)
{
        if (t->mode == SW_CPUACCT) {
                _cleanup_free_ char *buf = malloc(PERCPU_MAX);
                ssize_t n;

                if (!buf)
                        return -ENOMEM;
                n = file_read(t->path, buf, PERCPU_MAX);
                if (n < 0)
                        return (int)n;
                return sensor_parse_percpu(buf, now, st->n_cpus);
        }
        for (unsigned c = 0; c < st->n_cpus; c++) {
                uint64_t v[3];

                now[c] = 0;
                if (t->fds[c] < 0)
                        continue;
                if (read(t->fds[c], v, sizeof(v)) != (ssize_t)sizeof(v))
                        return -EIO;
                now[c] = v[0];
        }
        return 0;
}

static void sw_target_free(struct sw_target *t, unsigned n_cpus)
{
        if (t->fds)
                for (unsigned c = 0; c < n_cpus; c++)
                        if (t->fds[c] >= 0)
                                close(t->fds[c]);
        free(t->fds);
        free(t->prev_ns);
        if (t->mode == SW_PID)
                sw_pid_gone(t);
        free(t->threads);
        for (unsigned i = 0; i < t->n_kids; i++)
                sw_target_free(&t->kids[i], n_cpus);
        free(t->kids);
        t->kids = NULL;
        t->n_kids = t->cap_kids = 0;
}

static int sw_target_init(struct sw_state *st, const struct sensor_target *in, struct sw_target *t)
{
        char path[4200];
        struct stat sb;
        int r;

        *t = (struct sw_target){.pid = in->pid, .pidfd = -1};
        if (in->kind == SENSOR_TARGET_PID) {
                t->mode = SW_PID;
                if (in->pid <= 0)
                        return -ESRCH;
                r = sw_pid_open(t, path, sizeof(path));
                if (r < 0)
                        return r;
                if (stat(path, &sb) < 0)
                        return errno == ENOENT ? -ESRCH : -errno;
                return sw_pid_read(st, t, NULL, 0, 0);
        }
        r = fs_path(path, sizeof(path), "%s", in->cgroup);
        if (r < 0)
                return r;
        if (stat(path, &sb) < 0)
                return -errno;
        if (!S_ISDIR(sb.st_mode))
                return -ENOTDIR;
        t->prev_ns = calloc(st->n_cpus, sizeof(*t->prev_ns));
        if (!t->prev_ns)
                return -ENOMEM;
        r = fs_path(t->path, sizeof(t->path), "%s/cpuacct.usage_percpu", in->cgroup);
        if (r < 0)
                return r;
        if (access(t->path, R_OK) == 0) {
                t->mode = SW_CPUACCT;
        } else {
                _cleanup_close_ int dirfd = -1;

                /* A v2 (or v1 perf_event) directory: task-clock counts only while the cgroup's
                 * tasks run on that CPU. */
                t->mode = SW_PERF;
                t->fds = malloc(st->n_cpus * sizeof(*t->fds));
                if (!t->fds)
                        return -ENOMEM;
                for (unsigned c = 0; c < st->n_cpus; c++)
                        t->fds[c] = -1;
                dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dirfd < 0)
                        return -errno;
                cpumask_foreach (cpu, &st->cpus) {
                        struct perf_event_attr a = {
                            .size = sizeof(a),
                            .type = PERF_TYPE_SOFTWARE,
                            .config = PERF_COUNT_SW_TASK_CLOCK,
                            .read_format =
                                PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                        };
                        int fd;

                        if ((unsigned)cpu >= st->n_cpus)
                                continue;
                        fd = sensor_perf_open(&a, dirfd, cpu, -1,
                                              PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
                        if (fd < 0)
                                return fd;
                        t->fds[cpu] = fd;
                }
        }
        return sw_percpu_read(st, t, t->prev_ns);
}

/* The state of a process target already read, for a new target of the same process: -1 if
 * none. */
static int sw_target_kept(const struct sw_state *st, const struct sensor_target *in)
{
        if (in->kind != SENSOR_TARGET_PID)
                return -1;
        for (unsigned j = 0; j < st->n_targets; j++)
                if (st->targets[j].mode == SW_PID && st->targets[j].pid == in->pid &&
                    !st->targets[j].gone)
                        return (int)j;
        return -1;
}

/* A process already a target keeps its state (threads, runtimes, clock): another app's
 * arrival must not restart its count in the middle of an interval, which made its next
 * interval's busy time cover only part of the interval's length. */
static int sw_set_targets(struct sensor *s, const struct sensor_target *targets, unsigned n)
{
        struct sw_state *st = s->priv;
        struct sw_target *nt = NULL;
        _cleanup_free_ int *kept = NULL; /* [n]: the old target each keeps, or -1 */
        int r = 0;

        if (n > 0) {
                nt = calloc(n, sizeof(*nt));
                kept = calloc(n, sizeof(*kept));
                if (!nt || !kept) {
                        free(nt);
                        return -ENOMEM;
                }
        }
        for (unsigned i = 0; i < n; i++) {
                kept[i] = sw_target_kept(st, &targets[i]);
                for (unsigned k = 0; k < i && kept[i] >= 0; k++)
                        if (kept[k] == kept[i])
                                kept[i] = -1; /* the same process twice: the second starts anew */
                if (kept[i] >= 0)
                        continue;
                r = sw_target_init(st, &targets[i], &nt[i]);
                if (r < 0) {
                        for (unsigned j = 0; j <= i; j++)
                                if (kept[j] < 0)
                                        sw_target_free(&nt[j], st->n_cpus);
                        free(nt);
                        return r;
                }
        }
        /* Only once nothing can fail: the kept states move, the rest of the old go. */
        for (unsigned i = 0; i < n; i++) {
                if (kept[i] < 0)
                        continue;
                nt[i] = st->targets[kept[i]];
                st->targets[kept[i]] = (struct sw_target){.gone = true, .pidfd = -1};
        }
        for (unsigned i = 0; i < st->n_targets; i++)
                sw_target_free(&st->targets[i], st->n_cpus);
        free(st->targets);
        st->targets = nt;
        st->n_targets = n;
        return 0;
}

static int sw_probe(const struct sensor_config *cfg, struct sensor_probe *out)
{
        enum sensor_busy_source src;
        char path[128];
        int r;

        (void)cfg;
        *out = (struct sensor_probe){0};
        snprintf(out->mem_reason, sizeof(out->mem_reason),
                 "software: not measured (no memory-controller counter in busy time)");
        r = sensor_busy_probe(&src, path, sizeof(path));
        if (r < 0) {
                out->err = r;
                snprintf(out->reason, sizeof(out->reason),
                         "software: cannot read /proc/stat (%s): mount procfs", strerror(-r));
                return 0;
        }
        out->available = true;
        snprintf(out->reason, sizeof(out->reason),
                 "software: busy time per CPU from %s, per process from schedstat; "
                 "instructions and cycles not measured",
                 path);
        return 0;
}

static void sw_close(struct sensor *s)
{
        struct sw_state *st = s->priv;

        if (!st)
                return;
        for (unsigned i = 0; i < st->n_targets; i++)
                sw_target_free(&st->targets[i], st->n_cpus);
        free(st->targets);
        free(st->prev_busy_ns);
        free(st->now_busy_ns);
        free(st);
        s->priv = NULL;
}

static int sw_open(struct sensor *s, const struct sensor_config *cfg)
{
        struct sw_state *st = calloc(1, sizeof(*st));
        unsigned n_packages;
        int r;

        if (!st)
                return -ENOMEM;
        s->priv = st;
        r = sensor_cpus_resolve(cfg, &st->cpus, &st->n_cpus, &n_packages);
        if (r < 0)
                goto fail;
        r = sensor_busy_probe(&st->busy_src, NULL, 0);
        if (r < 0)
                goto fail;
        st->prev_busy_ns = calloc(st->n_cpus, sizeof(uint64_t));
        st->now_busy_ns = calloc(st->n_cpus, sizeof(uint64_t));
        if (!st->prev_busy_ns || !st->now_busy_ns) {
                r = -ENOMEM;
                goto fail;
        }
        r = sensor_busy_read(st->busy_src, st->prev_busy_ns, st->n_cpus);
        if (r < 0)
                goto fail;
        st->prev_ts_ns = now_ns();
        s->n_cpus = st->n_cpus;
        s->n_packages = n_packages;
        s->metrics = SENSOR_BUSY;
        s->has_energy = false;
        return 0;
fail:
        sw_close(s);
        return r;
}

static int sw_read(struct sensor *s, struct sensor_sample *out)
{
        struct sw_state *st = s->priv;
        uint64_t ts = now_ns();
        int r;

        r = sensor_busy_read(st->busy_src, st->now_busy_ns, st->n_cpus);
        if (r < 0)
                return r;
        cpumask_foreach (cpu, &st->cpus) {
                if ((unsigned)cpu >= st->n_cpus)
                        continue;
                /* Both sources are monotonic; a decrease would be a CPU that went offline. */
                out->cpu[cpu].busy_ns = st->now_busy_ns[cpu] >= st->prev_busy_ns[cpu]
                                            ? st->now_busy_ns[cpu] - st->prev_busy_ns[cpu]
                                            : 0;
                out->cpu[cpu].measured = SENSOR_BUSY;
        }
        memcpy(st->prev_busy_ns, st->now_busy_ns, st->n_cpus * sizeof(uint64_t));
        for (unsigned i = 0; i < st->n_targets && i < out->n_targets; i++) {
                struct sw_target *t = &st->targets[i];

                if (t->mode == SW_PID) {
                        r = sw_pid_read(st, t, out, i, ts - st->prev_ts_ns);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = sw_percpu_read(st, t, st->now_busy_ns);
                if (r < 0)
                        return r;
                cpumask_foreach (cpu, &st->cpus) {
                        struct sensor_counts *c;

                        if ((unsigned)cpu >= st->n_cpus)
                                continue;
                        c = sensor_target_cpu(out, i, (unsigned)cpu);
                        c->busy_ns = st->now_busy_ns[cpu] >= t->prev_ns[cpu]
                                         ? st->now_busy_ns[cpu] - t->prev_ns[cpu]
                                         : 0;
                        c->measured = SENSOR_BUSY;
                }
                memcpy(t->prev_ns, st->now_busy_ns, st->n_cpus * sizeof(uint64_t));
        }
        out->timestamp_ns = ts;
        out->interval_ns = ts - st->prev_ts_ns;
        st->prev_ts_ns = ts;
        return 0;
}

const struct sensor_ops sensor_software_ops = {
    .name = "software",
    .description = "busy time per CPU, cgroup and process from procfs/cgroupfs; no counters",
    .probe = sw_probe,
    .open = sw_open,
    .set_targets = sw_set_targets,
    .read = sw_read,
    .close = sw_close,
};
