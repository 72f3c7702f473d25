/* The /proc thread-state backend, for where BPF is not allowed. Run and runqueue time are
 * exact (/proc/PID/task/TID/schedstat, CONFIG_SCHED_INFO). The rest is sampled every ~4 ms by
 * a thread of the backend: each thread's state letter (/proc/.../stat) and, for a sleeping
 * one, its system call (/proc/.../syscall: futex = sync, anything else = blocked). The samples
 * split each thread's time off a CPU between sync and blocked, and give the concurrency
 * histogram and the solo time. A yielding thread stays runnable, so /proc shows it running:
 * this backend never reports yield. */
#define _GNU_SOURCE
#include "threadstate_proc.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pctl/fsio.h"
#include "pctl/procstat.h"
#include "pctl/util.h"

int threadstate_proc_parse_stat(const char *text, char *state)
{
        char st;

        /* procstat finds the letter; only the kernel's letters are states this sampler counts. */
        if (procstat_state(text, &st) < 0 || !strchr("RSDTtZXIWPK", st))
                return -EINVAL;
        *state = st;
        return 0;
}

int threadstate_proc_parse_schedstat(const char *text, uint64_t *run_ns, uint64_t *rq_ns)
{
        uint64_t run, rq, slices;
        int end = 0;

        if (sscanf(text, "%" SCNu64 " %" SCNu64 " %" SCNu64 "%n", &run, &rq, &slices, &end) != 3 ||
            text[end] != '\0')
                return -EINVAL;
        *run_ns = run;
        *rq_ns = rq;
        return 0;
}

int threadstate_proc_parse_syscall(const char *text, long *nr)
{
        char *end;
        long v;

        if (strcmp(text, "running") == 0)
                return -EAGAIN;
        errno = 0;
        v = strtol(text, &end, 10);
        if (errno || end == text || (*end != ' ' && *end != '\0') || v < -1)
                return -EINVAL;
        *nr = v;
        return 0;
}

static bool syscall_is_futex(long nr)
{
#ifdef SYS_futex_waitv
        if (nr == SYS_futex_waitv)
                return true;
#endif
#ifdef SYS_futex_time64
        if (nr == SYS_futex_time64)
                return true;
#endif
        return nr == SYS_futex;
}

static struct threadstate_proc_thread *watch_find(struct threadstate_proc_watch *w, pid_t tid)
{
        for (unsigned i = 0; i < w->n_threads; i++)
                if (w->threads[i].tid == tid && !w->threads[i].exited)
                        return &w->threads[i];
        return NULL;
}

static struct threadstate_proc_thread *watch_add(struct threadstate_proc_watch *w, pid_t tid)
{
        if (w->n_threads == w->cap_threads) {
                unsigned cap = w->cap_threads ? 2 * w->cap_threads : 8;
                struct threadstate_proc_thread *t = realloc(w->threads, cap * sizeof(*t));

                if (!t)
                        return NULL;
                w->threads = t;
                w->cap_threads = cap;
        }
        w->threads[w->n_threads] = (struct threadstate_proc_thread){.tid = tid};
        return &w->threads[w->n_threads++];
}

static int thread_read(pid_t pid, pid_t tid, const char *file, char *buf, size_t size)
{
        char path[128];
        ssize_t r;

        if (fs_path(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, file) < 0)
                return -ENAMETOOLONG;
        r = file_read(path, buf, size);
        return r < 0 ? (int)r : 0;
}

/* The state letter and schedstat of one thread; -ESRCH when it is gone (or a zombie). */
static int thread_sample(pid_t pid, struct threadstate_proc_thread *t)
{
        char buf[1024];
        char state = '?';
        uint64_t run = 0, rq = 0;
        int r;

        r = thread_read(pid, t->tid, "stat", buf, sizeof(buf));
        if (r == 0)
                r = threadstate_proc_parse_stat(buf, &state);
        if (r == 0 && (state == 'Z' || state == 'X'))
                r = -ESRCH;
        if (r == 0)
                r = thread_read(pid, t->tid, "schedstat", buf, sizeof(buf));
        if (r == 0)
                r = threadstate_proc_parse_schedstat(buf, &run, &rq);
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        t->state = state;
        /* Cumulative: never let a short read move it back. */
        if (run > t->run_ns)
                t->run_ns = run;
        if (rq > t->rq_ns)
                t->rq_ns = rq;
        return 0;
}

/* The pids of /proc/PID/task into *tids (malloc'd); -ESRCH when the process is gone. */
static int task_list(pid_t pid, pid_t **tids, unsigned *n)
{
        char path[96];
        DIR *d;
        struct dirent *de;
        pid_t *list = NULL;
        unsigned len = 0, cap = 0;

        if (fs_path(path, sizeof(path), "/proc/%d/task", (int)pid) < 0)
                return -ENAMETOOLONG;
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? -ESRCH : -errno;
        while ((de = readdir(d))) {
                int tid;

                if (parse_int(de->d_name, &tid) < 0 || tid <= 0)
                        continue;
                if (len == cap) {
                        pid_t *l = realloc(list, (cap ? 2 * cap : 16) * sizeof(*l));

                        if (!l) {
                                free(list);
                                closedir(d);
                                return -ENOMEM;
                        }
                        list = l;
                        cap = cap ? 2 * cap : 16;
                }
                list[len++] = tid;
        }
        closedir(d);
        *tids = list;
        *n = len;
        return 0;
}

int threadstate_proc_watch_init(struct threadstate_proc_watch *w, pid_t pid, uint64_t now_ns)
{
        _cleanup_free_ pid_t *tids = NULL;
        struct threadstate_proc_watch fresh = {
            .pid = pid, .report_ns = now_ns, .sample_ns = now_ns};
        char path[96], buf[512];
        unsigned n = 0;
        ssize_t rr;
        int r;

        if (pid <= 0)
                return -EINVAL;
        r = task_list(pid, &tids, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return -ESRCH; /* a zombie whose threads are gone */
        /* Telling a futex wait from other sleep needs /proc/PID/syscall, which only a process
         * allowed to ptrace this one may read. */
        if (fs_path(path, sizeof(path), "/proc/%d/syscall", (int)pid) < 0)
                return -ENAMETOOLONG;
        rr = file_read(path, buf, sizeof(buf));
        if (rr == -ENOENT)
                return -ESRCH;
        if (rr == -EACCES || rr == -EPERM)
                return (int)rr;
        for (unsigned i = 0; i < n; i++) {
                struct threadstate_proc_thread *t = watch_add(&fresh, tids[i]);

                if (!t) {
                        threadstate_proc_watch_free(&fresh);
                        return -ENOMEM;
                }
                t->born_ns = now_ns;
                r = thread_sample(pid, t);
                if (r == -ESRCH) {
                        fresh.n_threads--; /* gone already */
                        continue;
                }
                if (r < 0) {
                        threadstate_proc_watch_free(&fresh);
                        return r;
                }
                t->base_run_ns = t->run_ns;
                t->base_rq_ns = t->rq_ns;
        }
        *w = fresh;
        return 0;
}

static void thread_exit(struct threadstate_proc_thread *t, uint64_t at_ns)
{
        t->exited = true;
        t->exit_ns = at_ns;
}

int threadstate_proc_watch_sample(struct threadstate_proc_watch *w, uint64_t now_ns)
{
        _cleanup_free_ pid_t *tids = NULL;
        uint64_t dt = now_ns > w->sample_ns ? now_ns - w->sample_ns : 0;
        /* A change seen now happened since the previous sample: put it half-way. */
        uint64_t mid_ns = w->sample_ns + dt / 2;
        unsigned n = 0, active = 0, alive = 0;
        struct threadstate_proc_thread *solo = NULL;
        int r;

        if (w->dead)
                return 0;
        r = task_list(w->pid, &tids, &n);
        if (r == -ESRCH || (r == 0 && n == 0)) {
                for (unsigned i = 0; i < w->n_threads; i++)
                        if (!w->threads[i].exited)
                                thread_exit(&w->threads[i], mid_ns);
                w->dead = true;
                w->sample_ns = now_ns;
                return 0;
        }
        if (r < 0)
                return r;
        for (unsigned i = 0; i < w->n_threads; i++) {
                bool listed = false;

                for (unsigned j = 0; j < n && !listed; j++)
                        listed = tids[j] == w->threads[i].tid;
                if (!listed && !w->threads[i].exited)
                        thread_exit(&w->threads[i], mid_ns);
        }
        for (unsigned j = 0; j < n; j++) {
                struct threadstate_proc_thread *t = watch_find(w, tids[j]);

                if (t)
                        continue;
                t = watch_add(w, tids[j]);
                if (!t)
                        return -ENOMEM;
                /* Born since the previous sample; its schedstat counts from birth. */
                t->born_ns = w->sample_ns;
        }
        for (unsigned i = 0; i < w->n_threads; i++) {
                struct threadstate_proc_thread *t = &w->threads[i];
                char buf[512];
                long nr = -1;

                if (t->exited)
                        continue;
                r = thread_sample(w->pid, t);
                if (r == -ESRCH) {
                        thread_exit(t, mid_ns);
                        continue;
                }
                if (r < 0)
                        return r;
                alive++;
                if (t->state == 'R') {
                        active++;
                        solo = t;
                        continue;
                }
                r = thread_read(w->pid, t->tid, "syscall", buf, sizeof(buf));
                if (r == 0)
                        r = threadstate_proc_parse_syscall(buf, &nr);
                if (r == -EAGAIN) {
                        /* Woke between the two reads: it is running now. */
                        active++;
                        solo = t;
                        continue;
                }
                if (r == -ENOENT || r == -ESRCH) {
                        thread_exit(t, mid_ns);
                        alive--;
                        continue;
                }
                if (r < 0) {
                        if (w->err == 0)
                                w->err = r;
                        nr = -1;
                }
                if (syscall_is_futex(nr))
                        t->sync_ns += dt;
                else
                        t->blocked_ns += dt;
        }
        w->active_ns[active < THREADSTATE_MAX_ACTIVE ? active : THREADSTATE_MAX_ACTIVE] += dt;
        if (active == 1 && alive > 1)
                solo->solo_ns += dt;
        w->sample_ns = now_ns;
        return 0;
}

/* One thread's interval [report_ns, now_ns]. */
static void thread_report(const struct threadstate_proc_watch *w,
                          const struct threadstate_proc_thread *t, uint64_t now_ns,
                          struct threadstate_thread *out)
{
        uint64_t start = t->born_ns > w->report_ns ? t->born_ns : w->report_ns;
        uint64_t end = now_ns, run, rq, off, sampled;

        if (t->exited)
                end = t->exit_ns < start ? start : t->exit_ns > now_ns ? now_ns : t->exit_ns;
        if (start > end)
                start = end;
        run = t->run_ns > t->base_run_ns ? t->run_ns - t->base_run_ns : 0;
        rq = t->rq_ns > t->base_rq_ns ? t->rq_ns - t->base_rq_ns : 0;
        /* schedstat is exact, the birth and exit times are sample times: a thread that ran
         * longer than it seemed to live was born (or exited) further out. */
        if (run + rq > end - start) {
                uint64_t room = end - w->report_ns;

                start = run + rq < room ? end - (run + rq) : w->report_ns;
        }
        if (run + rq > end - start) {
                double scale = (double)(end - start) / (double)(run + rq);

                run = (uint64_t)((double)run * scale);
                rq = end - start - run < rq ? end - start - run : rq;
        }
        memset(out, 0, sizeof(*out));
        out->tid = t->tid;
        out->ns[THREAD_RUN] = run;
        out->ns[THREAD_RUNQUEUE] = rq;
        off = end - start - run - rq;
        sampled = t->sync_ns + t->blocked_ns;
        /* Off-CPU time the samples did not catch (shorter than a period) is blocked: its
         * cause is unknown. */
        out->ns[THREAD_SYNC] =
            sampled ? (uint64_t)((double)off * (double)t->sync_ns / (double)sampled) : 0;
        out->ns[THREAD_BLOCKED] = off - out->ns[THREAD_SYNC];
        out->ns[THREAD_EXITED] = t->exited ? now_ns - end : 0;
        out->solo_ns = t->solo_ns < run + rq ? t->solo_ns : run + rq;
}

int threadstate_proc_watch_report(struct threadstate_proc_watch *w, uint64_t now_ns,
                                  struct threadstate_app *out)
{
        uint64_t interval = now_ns > w->report_ns ? now_ns - w->report_ns : 0;
        struct threadstate_thread *threads = out->threads;
        unsigned kept = 0;
        int err = w->err;

        if (w->n_threads > 0) {
                threads = realloc(out->threads, w->n_threads * sizeof(*threads));
                if (!threads)
                        return -ENOMEM;
        }
        out->threads = threads;
        out->pid = w->pid;
        out->interval_ns = interval;
        out->n_threads = w->n_threads;
        out->has_active = true;
        memcpy(out->active_ns, w->active_ns, sizeof(out->active_ns));
        for (unsigned i = 0; i < w->n_threads; i++) {
                if (w->dead_reported) {
                        memset(&threads[i], 0, sizeof(threads[i]));
                        threads[i].tid = w->threads[i].tid;
                        threads[i].ns[THREAD_EXITED] = interval;
                } else {
                        thread_report(w, &w->threads[i], now_ns, &threads[i]);
                }
        }
        if (w->dead_reported) {
                memset(out->active_ns, 0, sizeof(out->active_ns));
                out->active_ns[0] = interval;
        }

        /* The next interval starts here. Exited threads were reported and go, but for a dead
         * process, whose threads are reported exited for as long as it is watched. */
        memset(w->active_ns, 0, sizeof(w->active_ns));
        for (unsigned i = 0; i < w->n_threads; i++) {
                struct threadstate_proc_thread *t = &w->threads[i];

                if (t->exited && !w->dead)
                        continue;
                t->base_run_ns = t->run_ns;
                t->base_rq_ns = t->rq_ns;
                t->sync_ns = t->blocked_ns = t->solo_ns = 0;
                w->threads[kept++] = *t;
        }
        w->n_threads = kept;
        if (w->dead)
                w->dead_reported = true;
        w->report_ns = now_ns;
        w->err = 0;
        return err;
}

void threadstate_proc_watch_free(struct threadstate_proc_watch *w)
{
        if (!w)
                return;
        free(w->threads);
        w->threads = NULL;
        w->n_threads = w->cap_threads = 0;
}

/* The backend: the watches and the thread that samples them. */
struct proc_priv {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t sampler;
        bool stop;
        int err;            /* a sampling error no watch kept (-ENOMEM) */
        uint64_t period_ns; /* mean time between samples */
        struct threadstate_proc_watch *watches;
        unsigned n_watches;
};

static uint64_t jittered_period_ns(uint64_t period_ns, uint64_t *rng)
{
        /* xorshift64: the period only has to avoid a fixed phase. */
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        return period_ns / 2 + *rng % period_ns;
}

static void *proc_sampler_main(void *arg)
{
        struct proc_priv *p = arg;
        uint64_t rng = now_ns() | 1;

        pthread_mutex_lock(&p->lock);
        while (!p->stop) {
                uint64_t now = now_ns(), wake_ns = now + jittered_period_ns(p->period_ns, &rng);
                struct timespec deadline = {
                    .tv_sec = (time_t)(wake_ns / NSEC_PER_SEC),
                    .tv_nsec = (long)(wake_ns % NSEC_PER_SEC),
                };

                for (unsigned i = 0; i < p->n_watches; i++) {
                        int r = threadstate_proc_watch_sample(&p->watches[i], now);

                        if (r < 0 && p->watches[i].err == 0)
                                p->watches[i].err = r;
                }
                while (!p->stop && now_ns() < wake_ns)
                        pthread_cond_timedwait(&p->wake, &p->lock, &deadline);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

static int proc_probe(void *machine, struct threadstate_probe *out)
{
        char path[96], buf[512];
        ssize_t r;

        (void)machine;
        *out = (struct threadstate_probe){0};
        if (fs_path(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)getpid(),
                    (int)gettid()) < 0)
                return -ENAMETOOLONG;
        r = file_read(path, buf, sizeof(buf));
        if (r < 0) {
                out->err = (int)r;
                snprintf(out->reason, sizeof(out->reason),
                         "proc: cannot read %s: %s (a kernel without CONFIG_SCHED_INFO has no "
                         "schedstat)",
                         path, strerror((int)-r));
                return 0;
        }
        if (fs_path(path, sizeof(path), "/proc/%d/syscall", (int)getpid()) < 0)
                return -ENAMETOOLONG;
        r = file_read(path, buf, sizeof(buf));
        if (r < 0) {
                out->err = (int)r;
                snprintf(
                    out->reason, sizeof(out->reason),
                    "proc: cannot read %s: %s (a kernel without CONFIG_HAVE_ARCH_TRACEHOOK, or "
                    "procfs mounted with hidepid)",
                    path, strerror((int)-r));
                return 0;
        }
        out->available = true;
        snprintf(
            out->reason, sizeof(out->reason),
            "proc: schedstat exact; sync/blocked, concurrency and solo time sampled every %llu "
            "ms; no yield",
            THREADSTATE_PROC_PERIOD_NS / NSEC_PER_MSEC);
        return 0;
}

static int proc_open(struct threadstate *ts, void *machine)
{
        struct proc_priv *p;
        pthread_condattr_t attr;
        sigset_t all, old;
        int r;

        (void)machine;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->period_ns = THREADSTATE_PROC_PERIOD_NS;
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_init(&attr);
        /* now_ns() is CLOCK_MONOTONIC: the deadlines are too. */
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&p->wake, &attr);
        pthread_condattr_destroy(&attr);
        /* The sampler takes no signal: a daemon that handles SIGTERM by signalfd blocks it
         * in its threads, and one left unblocked here would take the default action. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(&p->sampler, NULL, proc_sampler_main, p);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                pthread_cond_destroy(&p->wake);
                pthread_mutex_destroy(&p->lock);
                free(p);
                return -r;
        }
        ts->priv = p;
        return 0;
}

static int proc_set_pids(struct threadstate *ts, const pid_t *pids, unsigned n)
{
        struct proc_priv *p = ts->priv;
        _cleanup_free_ struct threadstate_proc_watch *next = NULL;
        _cleanup_free_ int *from = NULL; /* next[i] is p->watches[from[i]], or new: -1 */
        uint64_t now;
        int r = 0;

        if (n > 0) {
                next = calloc(n, sizeof(*next));
                from = calloc(n, sizeof(*from));
                if (!next || !from)
                        return -ENOMEM;
        }
        pthread_mutex_lock(&p->lock);
        now = now_ns();
        for (unsigned i = 0; i < n && r == 0; i++) {
                from[i] = -1;
                for (unsigned j = 0; j < p->n_watches && from[i] < 0; j++)
                        if (p->watches[j].pid == pids[i])
                                from[i] = (int)j;
                if (from[i] >= 0)
                        next[i] = p->watches[from[i]];
                else
                        r = threadstate_proc_watch_init(&next[i], pids[i], now);
        }
        if (r < 0) {
                /* Change nothing: free only what this call set up. */
                for (unsigned i = 0; i < n; i++)
                        if (from[i] < 0)
                                threadstate_proc_watch_free(&next[i]);
                pthread_mutex_unlock(&p->lock);
                return r;
        }
        for (unsigned j = 0; j < p->n_watches; j++) {
                bool moved = false;

                for (unsigned i = 0; i < n && !moved; i++)
                        moved = from[i] == (int)j;
                if (!moved)
                        threadstate_proc_watch_free(&p->watches[j]);
        }
        free(p->watches);
        p->watches = next;
        next = NULL;
        p->n_watches = n;
        pthread_mutex_unlock(&p->lock);
        return 0;
}

static int proc_read(struct threadstate *ts, struct threadstate_app *apps, unsigned n)
{
        struct proc_priv *p = ts->priv;
        uint64_t now;
        int r = 0;

        pthread_mutex_lock(&p->lock);
        if (n != p->n_watches) {
                pthread_mutex_unlock(&p->lock);
                return -EINVAL;
        }
        now = now_ns();
        for (unsigned i = 0; i < n; i++) {
                int q = threadstate_proc_watch_sample(&p->watches[i], now);

                if (q < 0 && r == 0)
                        r = q;
                q = threadstate_proc_watch_report(&p->watches[i], now, &apps[i]);
                if (q < 0 && r == 0)
                        r = q;
        }
        pthread_mutex_unlock(&p->lock);
        return r;
}

static void proc_close(struct threadstate *ts)
{
        struct proc_priv *p = ts->priv;

        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->sampler, NULL);
        for (unsigned i = 0; i < p->n_watches; i++)
                threadstate_proc_watch_free(&p->watches[i]);
        free(p->watches);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
        ts->priv = NULL;
}

static int proc_set_sample_period(struct threadstate *ts, uint64_t period_ns)
{
        struct proc_priv *p = ts->priv;

        pthread_mutex_lock(&p->lock);
        p->period_ns = period_ns;
        pthread_mutex_unlock(&p->lock);
        return 0;
}

const struct threadstate_ops threadstate_proc_ops = {
    .name = "proc",
    .description = "/proc: per-thread schedstat (exact run and runqueue time) and state + "
                   "system call sampled every ~4 ms (futex = sync, else blocked; no yield)",
    .source = "proc",
    .probe = proc_probe,
    .open = proc_open,
    .set_pids = proc_set_pids,
    .read = proc_read,
    .close = proc_close,
    .set_sample_period = proc_set_sample_period,
};
