/* The eBPF thread-state backend: the BPF program (sensors/bpf/threadstate.bpf.c) accumulates,
 * in the kernel, how long each thread of the watched processes ran, waited for a CPU, waited
 * in a futex, yielded, blocked elsewhere or has been gone, and per process the time with k
 * threads active. This file loads it, seeds the threads that existed before they were
 * watched, and once per read() turns the cumulative maps into the interval's figures.
 * docs/threadstate-ebpf.md has the design and the measured overhead. */
#define _GNU_SOURCE /* qsort_r */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pctl/fsio.h"
#include "pctl/log.h"
#include "pctl/threadstate.h"
#include "pctl/util.h"
#include "threadstate.skel.h"
#include "threadstate_bpf.h"
#include "threadstate_proc.h"
#include "threadstate_maps.h"

_Static_assert(TS_RUN == THREAD_RUN && TS_RUNQUEUE == THREAD_RUNQUEUE && TS_SYNC == THREAD_SYNC &&
                   TS_YIELD == THREAD_YIELD && TS_BLOCKED == THREAD_BLOCKED &&
                   TS_EXITED == THREAD_EXITED && TS_STATES == THREAD_STATES,
               "threadstate_maps.h mirrors enum thread_state");
_Static_assert(TS_MAX_ACTIVE == THREADSTATE_MAX_ACTIVE, "histogram sizes match");

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#define FUTEX_CMD_MASK 127

/* libbpf reads the kernel's BTF from here itself, so the path takes no test root. */
#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"

const char *const threadstate_bpf_tracepoints[] = {
    "sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_process_exit", "sys_enter",
    "sys_exit",     NULL,
};

/* A thread's cumulative figures at the previous read (the in-progress state counted up to
 * then), the base of the next interval. */
struct eb_thread {
        pid_t tid;
        uint64_t total_ns[THREAD_STATES];
        uint64_t solo_total_ns;
};

struct eb_app {
        pid_t pid;
        __u32 slot;       /* index in the apps array map */
        uint64_t last_ns; /* end of the previous interval (or when the pid was watched) */
        uint64_t active_total_ns[TS_MAX_ACTIVE + 1];
        struct eb_thread *threads; /* sorted by tid */
        unsigned n_threads;
        /* Every thread has exited and was reported: later intervals report these tids as
         * exited throughout. */
        bool dead;
        /* Watched by the latest set_pids, its first interval not yet begun. */
        bool fresh;
        /* Not watched: the maps had no room for it (reported unwatched until the next
         * set_pids tries again). */
        bool unwatched;
        /* A new thread of it found the threads map full: stop watching it once the read
         * that saw it is done (eb_degrade copies the threads map again, over the snapshot
         * the read goes through). */
        bool lost;
};

struct eb_priv {
        struct threadstate_bpf *skel;
        struct bpf_link *seed_link;
        struct eb_app *apps;
        unsigned n_apps;
        unsigned max_apps, max_threads; /* the maps' sizes when it was loaded */
        bool slot_used[TS_MAX_APPS];
        /* The threads map, read in one pass per read(). */
        __u32 *keys;
        struct ts_thread *values;
        size_t cap;
};

/* libbpf's messages, kept for the reason a load or attach failed rather than printed: the
 * caller decides what to say. File-static because libbpf_set_print is process-wide. */
static char libbpf_msgs[8192];

/* Appends text, keeping the latest bytes when it is full (the verifier log comes in one
 * message, possibly longer than the buffer; its end says why). */
static void eb_msgs_append(const char *text)
{
        size_t len = strlen(libbpf_msgs), add = strlen(text), cap = sizeof(libbpf_msgs) - 1;

        if (add >= cap) {
                memcpy(libbpf_msgs, text + add - cap, cap + 1);
                return;
        }
        if (len + add > cap) {
                size_t drop = len + add - cap;

                memmove(libbpf_msgs, libbpf_msgs + drop, len - drop + 1);
                len -= drop;
        }
        memcpy(libbpf_msgs + len, text, add + 1);
}

static int eb_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
        char *text = NULL;

        if (level == LIBBPF_DEBUG)
                return 0;
        if (vasprintf(&text, fmt, ap) < 0)
                return 0;
        eb_msgs_append(text);
        log_debug("libbpf: %s", strstrip(text));
        free(text);
        return 0;
}

/* Lines of the verifier log that are statistics, not the reason. */
static bool eb_log_stats_line(const char *line, size_t len)
{
        static const char *const stats[] = {"processed ", "verification time", "stack depth",
                                            "max_states_per_insn"};

        for (size_t i = 0; i < ARRAY_SIZE(stats); i++)
                if (len >= strlen(stats[i]) && strncmp(line, stats[i], strlen(stats[i])) == 0)
                        return true;
        return false;
}

void threadstate_bpf_load_reason(const char *msgs, int err, char *reason, size_t size)
{
        const char *end = strstr(msgs, "-- END PROG LOAD LOG --");
        const char *prog = strstr(msgs, "prog '");
        char name[64] = "?";

        if (prog)
                sscanf(prog, "prog '%63[^']'", name);
        if (end) {
                /* The last line before the end that is not a statistic. */
                const char *p = end;

                while (p > msgs) {
                        const char *stop, *start;

                        while (p > msgs && (p[-1] == '\n' || p[-1] == ' '))
                                p--;
                        stop = p;
                        start = p;
                        while (start > msgs && start[-1] != '\n')
                                start--;
                        if (stop > start && !eb_log_stats_line(start, (size_t)(stop - start))) {
                                snprintf(reason, size, "the BPF verifier refused program %s: %.*s",
                                         name, (int)(stop - start), start);
                                return;
                        }
                        p = start;
                }
                snprintf(reason, size, "the BPF verifier refused program %s", name);
                return;
        }
        /* No verifier log: the kernel refused bpf(2) itself (privilege, lockdown, an LSM). */
        if (err == -EPERM || err == -EACCES)
                snprintf(reason, size,
                         "the kernel refused to load BPF programs (%s): needs CAP_BPF and "
                         "CAP_PERFMON, or root; or a lockdown or LSM policy forbids it",
                         strerror(-err));
        else
                snprintf(reason, size, "loading the BPF program failed: %s", strerror(-err));
}

/* CAP_BPF + CAP_PERFMON (Linux >= 5.8), or CAP_SYS_ADMIN, in the effective set. */
static bool eb_has_caps(void)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {};

        if (syscall(SYS_capget, &hdr, data) < 0)
                return false;
#define HAS(cap) (data[(cap) / 32].effective & (1u << ((cap) % 32)))
        return HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON));
#undef HAS
}

int threadstate_bpf_check_tracepoints(const char *const *names, char *reason, size_t reason_size)
{
        struct btf *btf = btf__load_vmlinux_btf();
        int r = 0;

        if (!btf) {
                r = -errno;
                snprintf(reason, reason_size, "cannot read the kernel's BTF (%s): %s", VMLINUX_BTF,
                         strerror(errno));
                return r;
        }
        for (size_t i = 0; names[i]; i++) {
                char type[128];
                __s32 id;

                snprintf(type, sizeof(type), "btf_trace_%s", names[i]);
                id = btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF);
                if (id < 0) {
                        snprintf(reason, reason_size,
                                 "tracepoint %s is missing from the kernel's BTF (%s)", names[i],
                                 VMLINUX_BTF);
                        r = -ENOENT;
                        break;
                }
                /* sched_switch passes prev_state only since Linux 5.18: the program reads it. */
                if (strcmp(names[i], "sched_switch") == 0) {
                        const struct btf_type *t = btf__type_by_id(btf, (__u32)id);

                        while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
                                t = btf__type_by_id(btf, t->type);
                        if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 5) {
                                snprintf(reason, reason_size,
                                         "tracepoint sched_switch has no prev_state argument "
                                         "(Linux < 5.18)");
                                r = -ENOENT;
                                break;
                        }
                }
        }
        btf__free(btf);
        return r;
}

/* The maps' sizes: TS_MAX_APPS and TS_MAX_THREADS, or the smaller ones a test set. */
static unsigned eb_max_apps = TS_MAX_APPS, eb_max_threads = TS_MAX_THREADS;

int threadstate_bpf_set_limits(unsigned max_apps, unsigned max_threads)
{
        if (max_apps == 0 || max_apps > TS_MAX_APPS || max_threads == 0 ||
            max_threads > TS_MAX_THREADS)
                return -EINVAL;
        eb_max_apps = max_apps;
        eb_max_threads = max_threads;
        return 0;
}

/* Opens, loads and attaches the program; reason says what failed. */
static int eb_load(struct threadstate_bpf **out, struct bpf_link **seed_link, char *reason,
                   size_t reason_size)
{
        libbpf_print_fn_t old = libbpf_set_print(eb_libbpf_print);
        struct threadstate_bpf *skel;
        int r;

        libbpf_msgs[0] = '\0';
        skel = threadstate_bpf__open();
        if (!skel) {
                r = -errno;
                snprintf(reason, reason_size, "opening the BPF object failed: %s", strerror(-r));
                goto out;
        }
        /* The seeding iterator runs on demand, not on an event. */
        bpf_program__set_autoattach(skel->progs.ts_seed, false);
        if (bpf_map__set_max_entries(skel->maps.threads, eb_max_threads) < 0 ||
            bpf_map__set_max_entries(skel->maps.apps, eb_max_apps) < 0 ||
            bpf_map__set_max_entries(skel->maps.watched, eb_max_apps) < 0) {
                r = -EINVAL;
                snprintf(reason, reason_size, "sizing the BPF maps failed");
                goto fail;
        }
        r = threadstate_bpf__load(skel);
        if (r < 0) {
                threadstate_bpf_load_reason(libbpf_msgs, r, reason, reason_size);
                goto fail;
        }
        r = threadstate_bpf__attach(skel);
        if (r < 0) {
                snprintf(reason, reason_size, "attaching to the tracepoints failed: %s",
                         strerror(-r));
                goto fail;
        }
        *seed_link = bpf_program__attach_iter(skel->progs.ts_seed, NULL);
        if (!*seed_link) {
                r = -errno;
                snprintf(reason, reason_size, "creating the task iterator failed: %s",
                         strerror(-r));
                goto fail;
        }
        *out = skel;
        r = 0;
        goto out;
fail:
        threadstate_bpf__destroy(skel);
out:
        libbpf_set_print(old);
        return r;
}

/* The kernel took the program once: that cannot change while this process runs, and each
 * asking parses the kernel's BTF twice and runs the verifier (some 100 ms), which `pctl
 * sensors` would otherwise pay once for its table and once for auto. A refusal is asked again:
 * it may be passing (memory). */
static struct threadstate_probe eb_kernel_answer;
static bool eb_kernel_took_it;

static int ebpf_probe(void *machine, struct threadstate_probe *out)
{
        struct threadstate_bpf *skel = NULL;
        struct bpf_link *link = NULL;
        int r;

        (void)machine;
        memset(out, 0, sizeof(*out));
        if (access(VMLINUX_BTF, R_OK) < 0) {
                out->err = -errno;
                snprintf(out->reason, sizeof(out->reason),
                         "no kernel BTF: %s: %s (a kernel without CONFIG_DEBUG_INFO_BTF)",
                         VMLINUX_BTF, strerror(errno));
                return 0;
        }
        if (!eb_has_caps()) {
                out->err = -EPERM;
                snprintf(out->reason, sizeof(out->reason),
                         "needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN): run as root");
                return 0;
        }
        /* The capabilities are asked every time: a process may drop them. */
        if (eb_kernel_took_it) {
                *out = eb_kernel_answer;
                return 0;
        }
        r = threadstate_bpf_check_tracepoints(threadstate_bpf_tracepoints, out->reason,
                                              sizeof(out->reason));
        if (r < 0) {
                out->err = r;
                return 0;
        }
        /* Only loading tells whether the verifier takes the program on this kernel. */
        r = eb_load(&skel, &link, out->reason, sizeof(out->reason));
        if (r < 0) {
                out->err = r;
                return 0;
        }
        bpf_link__destroy(link);
        threadstate_bpf__destroy(skel);
        out->available = true;
        snprintf(out->reason, sizeof(out->reason),
                 "exact transitions from tracepoints sched_switch, sched_wakeup(_new), "
                 "sched_process_exit, sys_enter/exit (futex, sched_yield), kept in the kernel");
        eb_kernel_answer = *out;
        eb_kernel_took_it = true;
        return 0;
}

static void eb_app_free(struct eb_app *a)
{
        free(a->threads);
        a->threads = NULL;
        a->n_threads = 0;
}

static int ebpf_open(struct threadstate *ts, void *machine)
{
        struct eb_priv *p;
        char reason[256];
        int r;

        (void)machine;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->max_apps = eb_max_apps;
        p->max_threads = eb_max_threads;
        r = eb_load(&p->skel, &p->seed_link, reason, sizeof(reason));
        if (r < 0) {
                free(p);
                return log_error_errno(r, "eBPF thread-state sensor: %s", reason);
        }
        ts->priv = p;
        return 0;
}

static void ebpf_close(struct threadstate *ts)
{
        struct eb_priv *p = ts->priv;

        if (!p)
                return;
        bpf_link__destroy(p->seed_link);
        threadstate_bpf__destroy(p->skel);
        for (unsigned i = 0; i < p->n_apps; i++)
                eb_app_free(&p->apps[i]);
        free(p->apps);
        free(p->keys);
        free(p->values);
        free(p);
        ts->priv = NULL;
}

/* Reads the whole threads map into p->keys/p->values (each element under its lock); *n is
 * the count. */
static int eb_snapshot(struct eb_priv *p, size_t *n)
{
        int fd = bpf_map__fd(p->skel->maps.threads);
        LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_F_LOCK);
        __u32 batch = 0;
        size_t have = 0;
        bool first = true;

        for (;;) {
                __u32 count;
                int r;

                if (p->cap - have < 256) {
                        size_t cap = p->cap ? p->cap * 2 : 1024;
                        __u32 *keys = realloc(p->keys, cap * sizeof(*keys));
                        struct ts_thread *values;

                        if (!keys)
                                return -ENOMEM;
                        p->keys = keys;
                        values = realloc(p->values, cap * sizeof(*values));
                        if (!values)
                                return -ENOMEM;
                        p->values = values;
                        p->cap = cap;
                }
                count = (__u32)(p->cap - have);
                r = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, p->keys + have,
                                         p->values + have, &count, &opts);
                first = false;
                if (r < 0 && r != -ENOENT && r != -ENOSPC)
                        return r;
                have += count;
                if (r == -ENOENT)
                        break;
                if (r == -ENOSPC && count == 0) {
                        /* One hash bucket holds more elements than there is room for. */
                        have = 0;
                        first = true;
                        p->cap *= 2;
                        free(p->keys);
                        free(p->values);
                        p->keys = calloc(p->cap, sizeof(*p->keys));
                        p->values = calloc(p->cap, sizeof(*p->values));
                        if (!p->keys || !p->values) {
                                p->cap = 0;
                                return -ENOMEM;
                        }
                }
        }
        *n = have;
        return 0;
}

/* Deletes every thread of tgid from the map. */
static int eb_forget_threads(struct eb_priv *p, pid_t tgid)
{
        int fd = bpf_map__fd(p->skel->maps.threads);
        size_t n;
        int r = eb_snapshot(p, &n);

        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (p->values[i].tgid == (__u32)tgid)
                        (void)bpf_map_delete_elem(fd, &p->keys[i]);
        return 0;
}

static int eb_unwatch(struct eb_priv *p, struct eb_app *a)
{
        __u32 key = (__u32)a->pid;

        /* Unwatched first, so that no thread of it is added while its threads go; the slot
         * is free for another app once they are. */
        (void)bpf_map_delete_elem(bpf_map__fd(p->skel->maps.watched), &key);
        if (a->slot < TS_MAX_APPS)
                p->slot_used[a->slot] = false;
        return eb_forget_threads(p, a->pid);
}

/* Whether /proc/PID/task/TID/syscall shows a waiting futex call, or sched_yield. */
static void eb_thread_syscall(pid_t pid, pid_t tid, bool *in_futex, bool *in_yield)
{
        char path[128], buf[256];
        long nr;
        unsigned long arg1, arg2;

        *in_futex = *in_yield = false;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
        /* "running", or "nr arg1 ... arg6 sp pc" (hex args); nothing else is a syscall. */
        if (fs_read(path, buf, sizeof(buf)) < 0)
                return;
        if (sscanf(buf, "%ld 0x%lx 0x%lx", &nr, &arg1, &arg2) != 3)
                return;
        if (nr == SYS_sched_yield)
                *in_yield = true;
        else if (nr == SYS_futex_waitv)
                *in_futex = true;
        else if (nr == SYS_futex) {
                unsigned long cmd = arg2 & FUTEX_CMD_MASK;

                /* WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2 */
                *in_futex = cmd == 0 || cmd == 6 || cmd == 9 || cmd == 11 || cmd == 13;
        }
}

/* The state letter of /proc/PID/task/TID/stat (the /proc backend's parser); 0 when the
 * thread is gone. */
static char eb_thread_letter(pid_t pid, pid_t tid)
{
        char path[128], buf[1024], state;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
        if (fs_read(path, buf, sizeof(buf)) < 0 || threadstate_proc_parse_stat(buf, &state) < 0)
                return 0;
        return state;
}

/* Starts watching pid: its app entry, the watched bit (from then on the program adds its new
 * threads itself), its present threads from /proc, then the seeding iterator fixes their
 * state from the tasks and counts the active ones under the program's locks. */
static int eb_watch(struct eb_priv *p, struct eb_app *a)
{
        int threads_fd = bpf_map__fd(p->skel->maps.threads);
        struct ts_app app = {};
        __u32 key = (__u32)a->pid;
        char path[64];
        struct dirent *de;
        DIR *d;
        int r;

        for (a->slot = 0; a->slot < p->max_apps && p->slot_used[a->slot]; a->slot++)
                ;
        if (a->slot == p->max_apps) {
                a->slot = TS_MAX_APPS; /* none: eb_unwatch frees nothing */
                return -E2BIG;
        }
        p->slot_used[a->slot] = true;
        a->last_ns = now_ns();
        app.since_ns = a->last_ns;
        r = bpf_map_update_elem(bpf_map__fd(p->skel->maps.apps), &a->slot, &app, BPF_ANY);
        if (r < 0)
                return r;
        r = bpf_map_update_elem(bpf_map__fd(p->skel->maps.watched), &key, &a->slot, BPF_ANY);
        if (r < 0)
                return r;
        fs_path(path, sizeof(path), "/proc/%d/task", (int)a->pid);
        d = opendir(path);
        if (!d) {
                /* It exited since set_pids checked it: reported as gone, not an error. */
                if (errno == ENOENT || errno == ESRCH) {
                        a->dead = true;
                        return 0;
                }
                return -errno;
        }
        while ((de = readdir(d))) {
                struct ts_thread t = {
                    .tgid = (__u32)a->pid, .slot = a->slot, .since_ns = a->last_ns};
                bool in_futex, in_yield;
                __u32 tid;
                int tid_i;
                char c;

                if (parse_int(de->d_name, &tid_i) < 0 || tid_i <= 0)
                        continue;
                c = eb_thread_letter(a->pid, tid_i);
                if (c == 0 || c == 'Z' || c == 'X')
                        continue;
                eb_thread_syscall(a->pid, tid_i, &in_futex, &in_yield);
                /* A hint only: the iterator replaces it with the task's state now. */
                t.state = c == 'R' ? TS_RUNQUEUE : in_futex ? TS_SYNC : TS_BLOCKED;
                t.in_futex = in_futex;
                t.flags = in_yield ? TS_IN_YIELD : 0;
                tid = (__u32)tid_i;
                r = bpf_map_update_elem(threads_fd, &tid, &t, BPF_NOEXIST);
                /* EEXIST: born after the watched bit was set, the program has it already.
                 * E2BIG: the threads map is full (the caller stops watching this app). */
                if (r < 0 && r != -EEXIST) {
                        closedir(d);
                        return r;
                }
        }
        closedir(d);
        return 0;
}

/* Stops watching a, for which the maps have no room (why), and says so: its figures would
 * leave out threads the program could not track. Only a is left out; it is reported
 * unwatched, and the next set_pids tries again. */
static int eb_degrade(struct eb_priv *p, struct eb_app *a, const char *why)
{
        int r = eb_unwatch(p, a);

        a->unwatched = true;
        a->fresh = false;
        a->slot = TS_MAX_APPS;
        log_warning("eBPF thread states: process %d is not watched: %s (%u processes, %u "
                    "threads at most); its speedup stack is unknown, the others' are not "
                    "affected",
                    (int)a->pid, why, p->max_apps, p->max_threads);
        return r;
}

/* The Tgid of /proc/PID/status: the process a thread id belongs to. */
static pid_t eb_tgid(pid_t pid)
{
        char path[64], buf[4096];
        const char *p;
        int tgid;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        if (fs_read(path, buf, sizeof(buf)) < 0)
                return -1;
        p = strstr(buf, "\nTgid:");
        if (!p || sscanf(p + 6, "%d", &tgid) != 1)
                return -1;
        return tgid;
}

/* Runs the seeding iterator once. */
static int eb_seed(struct eb_priv *p)
{
        char buf[64];
        ssize_t n;
        int fd = bpf_iter_create(bpf_link__fd(p->seed_link));

        if (fd < 0)
                return fd;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                ;
        close(fd);
        return n < 0 ? -errno : 0;
}

static int eb_collect(struct eb_priv *p, struct threadstate_app *apps, bool fresh_only);

/* The first interval of the apps just watched starts once the iterator has seeded them: from
 * then on every thread is counted in its app, so the states and the histogram agree. The
 * time before (seeding from /proc, a few ms) is dropped. */
static int eb_baseline(struct eb_priv *p)
{
        struct threadstate_app *scratch = calloc(p->n_apps, sizeof(*scratch));
        int r;

        if (!scratch)
                return -ENOMEM;
        r = eb_collect(p, scratch, true);
        for (unsigned i = 0; i < p->n_apps; i++)
                free(scratch[i].threads);
        free(scratch);
        return r;
}

static int ebpf_set_pids(struct threadstate *ts, const pid_t *pids, unsigned n)
{
        struct eb_priv *p = ts->priv;
        struct eb_app *apps;
        bool added = false;
        int r = 0;

        /* Checked before anything changes. More processes than the maps hold is no error:
         * those past the room are reported unwatched (eb_degrade). */
        for (unsigned i = 0; i < n; i++) {
                char path[64];

                if (pids[i] <= 0)
                        return -EINVAL;
                for (unsigned j = 0; j < i; j++)
                        if (pids[j] == pids[i])
                                return -EINVAL;
                /* A thread's id has a /proc entry too, but its events carry its process's.
                 * A process that is gone (or goes now) is no error: it is reported as exited,
                 * and the others are watched as ever. */
                fs_path(path, sizeof(path), "/proc/%d/task", (int)pids[i]);
                if (access(path, F_OK) == 0) {
                        pid_t tgid = eb_tgid(pids[i]);

                        if (tgid > 0 && tgid != pids[i])
                                return -EINVAL;
                }
        }
        apps = calloc(n ? n : 1, sizeof(*apps));
        if (!apps)
                return -ENOMEM;
        for (unsigned i = 0; i < p->n_apps; i++) {
                unsigned j;

                for (j = 0; j < n; j++)
                        if (pids[j] == p->apps[i].pid)
                                break;
                if (j < n) {
                        apps[j] = p->apps[i];
                        continue;
                }
                (void)eb_unwatch(p, &p->apps[i]);
                eb_app_free(&p->apps[i]);
        }
        free(p->apps);
        p->apps = apps;
        p->n_apps = n;
        for (unsigned i = 0; i < n; i++) {
                if (apps[i].pid && !apps[i].unwatched)
                        continue;
                apps[i].pid = pids[i];
                apps[i].fresh = true;
                apps[i].unwatched = false;
                r = eb_watch(p, &apps[i]);
                if (r == -E2BIG) {
                        /* The maps are full: this app alone goes unwatched. */
                        r = eb_degrade(p, &apps[i], "the eBPF maps are full");
                        if (r < 0)
                                break;
                        continue;
                }
                if (r < 0)
                        break;
                added = true;
        }
        if (r == 0 && added)
                r = eb_seed(p);
        if (r == 0 && added)
                r = eb_baseline(p);
        if (r < 0) {
                /* Leave nothing half watched: the failed set is dropped. */
                for (unsigned i = 0; i < n; i++) {
                        if (apps[i].pid)
                                (void)eb_unwatch(p, &apps[i]);
                        eb_app_free(&apps[i]);
                }
                p->n_apps = 0;
        }
        return r;
}

static int cmp_snapshot_index(const void *a, const void *b, void *arg)
{
        const struct eb_priv *p = arg;
        const struct ts_thread *x = &p->values[*(const size_t *)a];
        const struct ts_thread *y = &p->values[*(const size_t *)b];
        __u32 kx = p->keys[*(const size_t *)a], ky = p->keys[*(const size_t *)b];

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return kx < ky ? -1 : kx > ky;
}

static const struct eb_thread *eb_prev(const struct eb_app *a, pid_t tid)
{
        size_t lo = 0, hi = a->n_threads;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;

                if (a->threads[mid].tid == tid)
                        return &a->threads[mid];
                if (a->threads[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static bool eb_alive(pid_t pid)
{
        char path[64];

        fs_path(path, sizeof(path), "/proc/%d/task", (int)pid);
        return access(path, F_OK) == 0;
}

/* The dead process's interval: every thread it had, exited throughout. */
static int eb_report_dead(struct eb_app *a, struct threadstate_app *out, uint64_t interval_ns)
{
        struct threadstate_thread *th = NULL;

        /* With no thread to report, out keeps its array (the caller frees it). */
        if (a->n_threads) {
                th = realloc(out->threads, a->n_threads * sizeof(*th));
                if (!th)
                        return -ENOMEM;
                out->threads = th;
        }
        for (unsigned k = 0; k < a->n_threads; k++) {
                memset(&th[k], 0, sizeof(th[k]));
                th[k].tid = a->threads[k].tid;
                th[k].ns[THREAD_EXITED] = interval_ns;
        }
        out->n_threads = a->n_threads;
        out->active_ns[0] = interval_ns;
        return 0;
}

/* Of the elapsed_ns a thread has been runnable in the snapshot v, the part it waited: all of it
 * unless the kernel has ended a wait of it since (a switch-in the program did not see, see
 * ts_missed_in_wait()), read from its schedstat line. */
static uint64_t eb_runnable_wait(pid_t pid, pid_t tid, const struct ts_thread *v,
                                 uint64_t elapsed_ns)
{
        char path[128], buf[128];
        unsigned long long run, delay;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
        if (fs_read(path, buf, sizeof(buf)) <= 0 || sscanf(buf, "%llu %llu", &run, &delay) != 2 ||
            delay <= v->delay_mark_ns)
                return elapsed_ns;
        return ts_missed_in_wait(elapsed_ns, delay, v->delay_mark_ns);
}

/* One app's interval from the sorted snapshot entries idx[0..m). */
static int eb_report(struct eb_priv *p, struct eb_app *a, const size_t *idx, size_t m,
                     const struct ts_app *app, uint64_t now, struct threadstate_app *out)
{
        int threads_fd = bpf_map__fd(p->skel->maps.threads);
        struct threadstate_thread *th = NULL;
        struct eb_thread *next = NULL;
        unsigned live = 0, k;
        uint64_t solo_clock = 0;

        /* The app's solo clock now: while one thread is active and another alive, it runs. */
        if (app) {
                solo_clock = app->solo_clock_ns;
                if (app->active == 1 && app->alive >= 2 && now > app->since_ns)
                        solo_clock += now - app->since_ns;
        }
        if (m) {
                th = realloc(out->threads, m * sizeof(*th));
                if (!th)
                        return -ENOMEM;
                out->threads = th;
                next = calloc(m, sizeof(*next));
                if (!next)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < m; i++) {
                const struct ts_thread *v = &p->values[idx[i]];
                pid_t tid = (pid_t)p->keys[idx[i]];
                const struct eb_thread *prev = eb_prev(a, tid);

                memset(&th[i], 0, sizeof(th[i]));
                th[i].tid = tid;
                next[i].tid = tid;
                uint64_t in_progress[THREAD_STATES] = {0};

                /* The state in progress, up to now (bpf_ktime_get_ns is CLOCK_MONOTONIC, as
                 * now_ns()); runnable, it may have been switched in unseen since. */
                if (v->state < THREAD_STATES && now > v->since_ns) {
                        uint64_t elapsed = now - v->since_ns, wait = elapsed;

                        if (v->state == TS_RUNQUEUE && (v->flags & TS_DELAY_MARK))
                                wait = eb_runnable_wait(a->pid, tid, v, elapsed);
                        in_progress[v->state] = wait;
                        in_progress[TS_RUN] += elapsed - wait;
                }
                for (int s = 0; s < THREAD_STATES; s++) {
                        uint64_t total = v->ns[s] + in_progress[s];
                        uint64_t base = prev ? prev->total_ns[s] : 0;

                        /* The previous read counted its in-progress state up to then; when
                         * the thread had in fact left it, this state's total is below that
                         * base for a moment: nothing this interval, and the base stays. */
                        th[i].ns[s] = total > base ? total - base : 0;
                        next[i].total_ns[s] = total > base ? total : base;
                }
                {
                        uint64_t total = v->solo_ns;
                        uint64_t base = prev ? prev->solo_total_ns : 0;
                        uint64_t active = th[i].ns[THREAD_RUN] + th[i].ns[THREAD_RUNQUEUE];

                        /* Active now: its solo time since it became so is on the clock. */
                        if ((v->flags & TS_COUNTED) &&
                            (v->state == TS_RUN || v->state == TS_RUNQUEUE) &&
                            solo_clock > v->solo_mark_ns)
                                total += solo_clock - v->solo_mark_ns;
                        th[i].solo_ns = total > base ? total - base : 0;
                        /* Part of its active time, whatever the copies' skew. */
                        if (th[i].solo_ns > active)
                                th[i].solo_ns = active;
                        next[i].solo_total_ns = total > base ? total : base;
                }
                if (v->state == TS_EXITED)
                        (void)bpf_map_delete_elem(threads_fd, &p->keys[idx[i]]);
                else
                        live++;
        }
        out->n_threads = (unsigned)m;

        if (app) {
                unsigned cur = app->active < TS_MAX_ACTIVE ? app->active : TS_MAX_ACTIVE;

                for (k = 0; k <= TS_MAX_ACTIVE; k++) {
                        uint64_t total = app->active_ns[k];

                        if (k == cur && now > app->since_ns)
                                total += now - app->since_ns;
                        out->active_ns[k] =
                            total > a->active_total_ns[k] ? total - a->active_total_ns[k] : 0;
                        if (total > a->active_total_ns[k])
                                a->active_total_ns[k] = total;
                }
        } else {
                out->has_active = false;
        }

        /* The exited threads were reported once and are gone; the base of the others stays.
         * No thread left at all: the process has exited (or exited before it was seeded). */
        if (live == 0 && (m > 0 || !eb_alive(a->pid))) {
                a->dead = true;
        } else {
                unsigned w = 0;

                for (size_t i = 0; i < m; i++)
                        if (p->values[idx[i]].state != TS_EXITED)
                                next[w++] = next[i];
        }
        free(a->threads);
        a->threads = next;
        a->n_threads = a->dead ? (unsigned)m : live;
        return 0;
}

/* The interval of each app (only the fresh ones when fresh_only) into apps[0..p->n_apps). */
/* Reads the apps' figures into out[] (ok[i] false where the lookup failed); true when they
 * equal prev[] (no thread of any app changed its activity in between). */
static bool eb_read_apps(struct eb_priv *p, const struct ts_app *prev, struct ts_app *out, bool *ok)
{
        int fd = bpf_map__fd(p->skel->maps.apps);
        bool same = true;

        for (unsigned i = 0; i < p->n_apps; i++) {
                ok[i] = bpf_map_lookup_elem_flags(fd, &p->apps[i].slot, &out[i], BPF_F_LOCK) == 0;
                if (prev && ok[i] &&
                    (out[i].since_ns != prev[i].since_ns || out[i].active != prev[i].active))
                        same = false;
        }
        return same;
}

/* How many times a read copies the threads again when an app's activity changed while they
 * were copied (the copy and the app figures then describe different moments). */
#define EB_READ_TRIES 3

static int eb_collect(struct eb_priv *p, struct threadstate_app *apps, bool fresh_only)
{
        _cleanup_free_ size_t *idx = NULL;
        _cleanup_free_ struct ts_app *app_before = calloc(p->n_apps + 1, sizeof(struct ts_app));
        _cleanup_free_ struct ts_app *app_after = calloc(p->n_apps + 1, sizeof(struct ts_app));
        _cleanup_free_ bool *ok = calloc(p->n_apps + 1, sizeof(bool));
        size_t total, pos;
        uint64_t now;
        int r;

        if (!app_before || !app_after || !ok)
                return -ENOMEM;
        /* The threads map and the apps are separate copies: when a thread changed between
         * them (the reader was preempted in between, say), its state and the histogram
         * disagree for this interval. Copy again while that happens. */
        for (int tries = 0;; tries++) {
                (void)eb_read_apps(p, NULL, app_before, ok);
                r = eb_snapshot(p, &total);
                if (r < 0)
                        return r;
                if (eb_read_apps(p, app_before, app_after, ok) || tries + 1 == EB_READ_TRIES)
                        break;
        }
        /* After the copies: no figure in them runs past now. */
        now = now_ns();
        idx = calloc(total ? total : 1, sizeof(*idx));
        if (!idx)
                return -ENOMEM;
        for (size_t i = 0; i < total; i++)
                idx[i] = i;
        qsort_r(idx, total, sizeof(*idx), cmp_snapshot_index, p);

        for (unsigned i = 0; i < p->n_apps; i++) {
                struct eb_app *a = &p->apps[i];
                struct threadstate_app *out = &apps[i];
                size_t first, m = 0;

                if (fresh_only && !a->fresh)
                        continue;
                a->fresh = false;
                out->pid = a->pid;
                /* New threads found the threads map full: its figures would leave them out. */
                if (!a->unwatched && !a->dead && ok[i] && app_after[i].lost_threads)
                        a->lost = true;
                out->unwatched = a->unwatched || a->lost;
                if (out->unwatched) {
                        out->n_threads = 0;
                        out->interval_ns = 0;
                        a->last_ns = now;
                        continue;
                }
                out->interval_ns = now > a->last_ns ? now - a->last_ns : 0;
                out->has_active = true;
                memset(out->active_ns, 0, sizeof(out->active_ns));
                a->last_ns = now;
                if (a->dead) {
                        r = eb_report_dead(a, out, out->interval_ns);
                        if (r < 0)
                                return r;
                        continue;
                }
                /* This tgid's run of entries in the sorted snapshot. */
                pos = 0;
                while (pos < total && p->values[idx[pos]].tgid < (__u32)a->pid)
                        pos++;
                first = pos;
                while (pos + m < total && p->values[idx[pos + m]].tgid == (__u32)a->pid)
                        m++;
                r = eb_report(p, a, idx + first, m, ok[i] ? &app_after[i] : NULL, now, out);
                if (r < 0)
                        return r;
        }
        for (unsigned i = 0; i < p->n_apps; i++) {
                if (!p->apps[i].lost)
                        continue;
                p->apps[i].lost = false;
                r = eb_degrade(p, &p->apps[i], "the threads map is full");
                if (r < 0)
                        return r;
        }
        return 0;
}

static int ebpf_read(struct threadstate *ts, struct threadstate_app *apps, unsigned n)
{
        struct eb_priv *p = ts->priv;

        if (n != p->n_apps)
                return -EINVAL;
        return eb_collect(p, apps, false);
}

int threadstate_bpf_count_stores(const char *prog, int off, int size)
{
        static const int bytes[] = {
            [BPF_W >> 3] = 4, [BPF_H >> 3] = 2, [BPF_B >> 3] = 1, [BPF_DW >> 3] = 8};
        struct threadstate_bpf *skel = threadstate_bpf__open();
        const struct bpf_program *p;
        const struct bpf_insn *in;
        size_t n;
        int count = 0;

        if (!skel)
                return -errno;
        p = bpf_object__find_program_by_name(skel->obj, prog);
        if (!p) {
                threadstate_bpf__destroy(skel);
                return -ENOENT;
        }
        in = bpf_program__insns(p);
        n = bpf_program__insn_cnt(p);
        for (size_t i = 0; i < n; i++) {
                int cls = BPF_CLASS(in[i].code), mode = BPF_MODE(in[i].code);

                if ((cls != BPF_ST && cls != BPF_STX) || (mode != BPF_MEM && mode != BPF_ATOMIC))
                        continue;
                if (in[i].dst_reg != BPF_REG_10 && in[i].off == off &&
                    bytes[BPF_SIZE(in[i].code) >> 3] == size)
                        count++;
        }
        threadstate_bpf__destroy(skel);
        return count;
}

uint64_t threadstate_bpf_unseen_switch_ins(const struct threadstate *ts)
{
        const struct eb_priv *p = ts->priv;

        return p && p->skel->bss ? p->skel->bss->unseen_switch_ins : 0;
}

const struct threadstate_ops threadstate_ebpf_ops = {
    .name = "ebpf",
    .description = "eBPF on sched_switch/wakeup/exit and futex/sched_yield, accumulated in the "
                   "kernel per thread (exact transitions)",
    .source = "ebpf",
    .probe = ebpf_probe,
    .open = ebpf_open,
    .set_pids = ebpf_set_pids,
    .read = ebpf_read,
    .close = ebpf_close,
};
