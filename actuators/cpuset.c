#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "pctl/cpuset.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pctl/fsio.h"
#include "pctl/log.h"
#include "pctl/proc_cgroup.h"
#include "pctl/procstat.h"
#include "pctl/util.h"

#define CG_PATH_MAX STATE_PATH_MAX

struct cpuset_thread {
        pid_t pid; /* its process: the app's, or (affinity) a child it forked since adopt */
        pid_t tid;
        unsigned long long start_ticks;
        struct cpumask mask;      /* its own affinity when we found it */
        char origin[CG_PATH_MAX]; /* file to write the TID into to move it back, or "-" */
};

/* A process by PID and start time: a PID alone may name another process later. */
struct proc_id {
        pid_t pid;
        unsigned long long start_ticks;
};

struct cpuset_app {
        struct cpuset_app *next;
        pid_t pid;
        unsigned long long start_ticks; /* of pid: every write checks it is still that one */
        int pidfd;                      /* of pid, -1 when the kernel has none */
        char name[64];
        char dir[CG_PATH_MAX]; /* our cgroup for it; "" in affinity mode */
        bool dir_recorded;
        struct cpumask cpus; /* what we asked for */
        bool has_cpus;
        size_t n_threads, cap;
        struct cpuset_thread *threads;
        /* Affinity: children the app had when adopted are not the app's; those it forks
         * later inherit its mask and are. */
        size_t n_before;
        struct proc_id *before;
};

struct cpuset {
        enum cpuset_mode mode;
        struct state_record *rec;
        char mount[CG_PATH_MAX]; /* the hierarchy (with the fs root prefix) */
        char base[CG_PATH_MAX];  /* the parent of the app groups */
        bool base_recorded;
        bool base_made;         /* we create the base (v1, v2 at the root): we may recreate it */
        int lock_fd;            /* flock on the base: one pctld per group */
        struct cpumask allowed; /* what the base may use */
        char mems[64];          /* v1: copied into each app group */
        struct cpuset_app *apps;
        char err[256];
};

/* The files that differ between the two hierarchies. */
static const struct cg_files {
        const char *tasks;     /* takes one TID (v1) / moves a whole process (v2) */
        const char *effective; /* what the kernel actually grants */
} cg_v1 = {"tasks", "cpuset.effective_cpus"}, cg_v2 = {"cgroup.procs", "cpuset.cpus.effective"};

static const struct cg_files *cg_files(enum cpuset_mode mode)
{
        return mode == CPUSET_V2 ? &cg_v2 : &cg_v1;
}

static int fail(struct cpuset *cs, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct cpuset *cs, int err, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cs->err, sizeof(cs->err), fmt, ap);
        va_end(ap);
        return err;
}

const char *cpuset_error(const struct cpuset *cs)
{
        return cs->err;
}
enum cpuset_mode cpuset_mode(const struct cpuset *cs)
{
        return cs->mode;
}
const struct cpumask *cpuset_allowed(const struct cpuset *cs)
{
        return &cs->allowed;
}
pid_t cpuset_app_pid(const struct cpuset_app *app)
{
        return app->pid;
}
const char *cpuset_app_dir(const struct cpuset_app *app)
{
        return app->dir;
}

static int join(char *buf, size_t size, const char *dir, const char *name)
{
        int n = snprintf(buf, size, "%s/%s", dir, name);

        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int cg_read(const char *dir, const char *name, char *buf, size_t size)
{
        char path[CG_PATH_MAX + 64];
        ssize_t n;

        if (join(path, sizeof(path), dir, name) < 0)
                return -ENAMETOOLONG;
        n = file_read(path, buf, size);
        return n < 0 ? (int)n : 0;
}

static int cg_write(const char *dir, const char *name, const char *value)
{
        char path[CG_PATH_MAX + 64];

        if (join(path, sizeof(path), dir, name) < 0)
                return -ENAMETOOLONG;
        return file_write(path, value);
}

static int cg_read_mask(const char *dir, const char *name, struct cpumask *out)
{
        char buf[CPUMASK_LIST_MAX];
        int err = cg_read(dir, name, buf, sizeof(buf));

        return err < 0 ? err : cpumask_parse(buf, out);
}

static int write_pid(const char *file, pid_t pid)
{
        char buf[32];

        snprintf(buf, sizeof(buf), "%d", (int)pid);
        return file_write(file, buf);
}

static int online_cpus(struct cpumask *out)
{
        char buf[CPUMASK_LIST_MAX];
        ssize_t n = fs_read("/sys/devices/system/cpu/online", buf, sizeof(buf));

        return n < 0 ? (int)n : cpumask_parse(buf, out);
}

/* The state and starttime of a /proc/.../stat file: -ESRCH once it is gone, -EBADMSG for a
 * line that does not hold them. */
static int proc_stat_fields(const char *path, char *state, unsigned long long *start_ticks)
{
        char buf[1024], st = 0;
        uint64_t start = 0;
        ssize_t n = fs_read(path, buf, sizeof(buf));
        int r = 0;

        if (n < 0)
                return n == -ENOENT ? -ESRCH : (int)n;
        if (state)
                r = procstat_state(buf, &st);
        if (r == 0 && start_ticks)
                r = procstat_field_u64(buf, 22, &start); /* starttime */
        if (r < 0)
                return r;
        if (state)
                *state = st;
        if (start_ticks)
                *start_ticks = start;
        return 0;
}

int proc_thread_start(pid_t pid, pid_t tid, unsigned long long *out)
{
        char path[96];

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
        return proc_stat_fields(path, NULL, out);
}

static int count_tasks(pid_t pid, size_t *out)
{
        char path[CG_PATH_MAX];
        struct dirent *de;
        size_t n = 0;
        DIR *d;

        if (fs_path(path, sizeof(path), "/proc/%d/task", (int)pid) < 0)
                return -ENAMETOOLONG;
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? -ESRCH : -errno;
        while ((de = readdir(d)))
                if (isdigit((unsigned char)de->d_name[0]))
                        n++;
        closedir(d);
        *out = n;
        return 0;
}

/* Gone: no /proc entry, or only a zombie leader is left. */
static bool proc_gone(pid_t pid)
{
        char path[64], state = 0;
        size_t n = 0;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (proc_stat_fields(path, &state, NULL) < 0)
                return true;
        if (state != 'Z' && state != 'X')
                return false;
        return count_tasks(pid, &n) < 0 || n <= 1;
}

/* The thread's cgroup in this hierarchy, from /proc/PID/task/TID/cgroup. */
static int proc_thread_cgroup(enum cpuset_mode mode, pid_t pid, pid_t tid, char *out, size_t size)
{
        char path[96], buf[4096];
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/cgroup", (int)pid, (int)tid);
        n = fs_read(path, buf, sizeof(buf));
        if (n < 0)
                return n == -ENOENT ? -ESRCH : (int)n;
        if (mode != CPUSET_V2 && mode != CPUSET_V1)
                return -ENOENT;
        return proc_cgroup_path(buf, mode == CPUSET_V1 ? "cpuset" : NULL, out, size);
}

static struct cpuset_thread *app_find_thread(struct cpuset_app *app, pid_t tid)
{
        for (size_t i = 0; i < app->n_threads; i++)
                if (app->threads[i].tid == tid)
                        return &app->threads[i];
        return NULL;
}

static struct state_entry task_entry(const struct cpuset_app *app, const struct cpuset_thread *t)
{
        struct state_entry e = {
            .kind = STATE_TASK, .pid = t->pid ? t->pid : app->pid, .tid = t->tid};

        e.start_ticks = t->start_ticks;
        e.mask = t->mask;
        strscpy(e.path, t->origin, sizeof(e.path));
        return e;
}

static int get_affinity(pid_t tid, struct cpumask *out)
{
        cpu_set_t set;

        if (sched_getaffinity(tid, sizeof(set), &set) < 0)
                return -errno;
        cpumask_zero(out);
        for (int c = 0; c < CPU_SETSIZE && c < CPUMASK_MAX; c++)
                if (CPU_ISSET(c, &set))
                        cpumask_set(out, (unsigned)c);
        return 0;
}

/* The mask a thread that inherited ours gives back: that of its process's first thread (the
 * creator is not known), so a thread or child born while the app was narrowed is widened to
 * where the app ran before, not left narrowed. */
static const struct cpumask *app_own_mask(const struct cpuset_app *app)
{
        for (size_t i = 0; i < app->n_threads; i++)
                if (app->threads[i].tid == app->pid)
                        return &app->threads[i].mask;
        return app->n_threads ? &app->threads[0].mask : NULL;
}

/* True while (pid, tid) is still the thread we noted: a TID, like a PID, is reused. */
static bool thread_is_current(const struct cpuset_thread *t)
{
        unsigned long long start;

        return proc_thread_start(t->pid, t->tid, &start) == 0 && start == t->start_ticks;
}

/* Notes the threads of process `pid` we have not seen yet (origin cgroup, own mask, start
 * time) and records them. Returns how many were added. Threads that exit meanwhile are
 * skipped. */
static int app_scan_process(struct cpuset *cs, struct cpuset_app *app, pid_t pid)
{
        char path[CG_PATH_MAX];
        struct dirent *de;
        int added = 0, err = 0;
        DIR *d;

        if (fs_path(path, sizeof(path), "/proc/%d/task", (int)pid) < 0)
                return -ENAMETOOLONG;
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? -ESRCH : -errno;
        while ((de = readdir(d))) {
                struct cpuset_thread t = {.pid = pid};
                const struct cpuset_thread *known;
                const struct cpumask *own;
                struct state_entry e;
                int tid;

                if (parse_int(de->d_name, &tid) < 0 || tid <= 0)
                        continue;
                t.tid = tid;
                if (proc_thread_start(pid, tid, &t.start_ticks) < 0)
                        continue;
                known = app_find_thread(app, tid);
                if (known && known->start_ticks == t.start_ticks)
                        continue;
                if (known)
                        continue; /* a reused TID: app_prune drops the old one first */
                err = get_affinity(tid, &t.mask);
                if (err == -ESRCH) {
                        err = 0;
                        continue;
                }
                if (err < 0)
                        break;
                /* Born after we narrowed the app: it carries our mask, not its own. */
                own = app_own_mask(app);
                if (app->has_cpus && own && cpumask_equal(&t.mask, &app->cpus))
                        t.mask = *own;
                if (cs->mode == CPUSET_AFFINITY) {
                        strcpy(t.origin, "-");
                } else {
                        char cg[CG_PATH_MAX];
                        int n;

                        err = proc_thread_cgroup(cs->mode, pid, tid, cg, sizeof(cg));
                        if (err == -ESRCH) {
                                err = 0;
                                continue;
                        }
                        if (err < 0)
                                break;
                        n = snprintf(t.origin, sizeof(t.origin), "%s%s/%s", cs->mount,
                                     strcmp(cg, "/") ? cg : "", cg_files(cs->mode)->tasks);
                        if (n < 0 || (size_t)n >= sizeof(t.origin)) {
                                err = -ENAMETOOLONG;
                                break;
                        }
                }
                if (app->n_threads == app->cap) {
                        size_t ncap = app->cap ? app->cap * 2 : 8;
                        struct cpuset_thread *nt = realloc(app->threads, ncap * sizeof(*nt));

                        if (!nt) {
                                err = -ENOMEM;
                                break;
                        }
                        app->threads = nt;
                        app->cap = ncap;
                }
                e = task_entry(app, &t);
                err = state_record_add(cs->rec, &e);
                if (err < 0)
                        break;
                app->threads[app->n_threads++] = t;
                added++;
        }
        closedir(d);
        return err < 0 ? err : added;
}

static bool app_has_process(const struct cpuset_app *app, const struct proc_id *p)
{
        for (size_t i = 0; i < app->n_threads; i++)
                if (app->threads[i].tid == p->pid && app->threads[i].pid == p->pid)
                        return app->threads[i].start_ticks == p->start_ticks;
        return false;
}

static bool app_had_before(const struct cpuset_app *app, const struct proc_id *p)
{
        for (size_t i = 0; i < app->n_before; i++)
                if (app->before[i].pid == p->pid && app->before[i].start_ticks == p->start_ticks)
                        return true;
        return false;
}

/* Calls f for every child of every thread listed so far, a child's own children included
 * (the list grows as the loop runs). /proc/PID/task/TID/children: CONFIG_PROC_CHILDREN. */
static int app_foreach_child(struct cpuset *cs, struct cpuset_app *app,
                             int (*f)(struct cpuset *cs, struct cpuset_app *app,
                                      const struct proc_id *child))
{
        int added = 0;

        for (size_t i = 0; i < app->n_threads; i++) {
                char path[96], buf[4096];
                const char *p;

                if (fs_path(path, sizeof(path), "/proc/%d/task/%d/children",
                            (int)app->threads[i].pid, (int)app->threads[i].tid) < 0 ||
                    fs_read(path, buf, sizeof(buf)) < 0)
                        continue; /* that thread is gone */
                for (p = buf; *p;) {
                        struct proc_id c = {0};
                        char word[16];
                        size_t len = strcspn(p, " \n");
                        int v, r;

                        if (len > 0 && len < sizeof(word)) {
                                memcpy(word, p, len);
                                word[len] = '\0';
                                if (parse_int(word, &v) == 0 && v > 0 &&
                                    proc_thread_start(v, v, &c.start_ticks) == 0) {
                                        c.pid = v;
                                        r = f(cs, app, &c);
                                        if (r < 0)
                                                return r;
                                        added += r;
                                }
                        }
                        p += len;
                        p += strspn(p, " \n");
                }
        }
        return added;
}

static int note_before(struct cpuset *cs, struct cpuset_app *app, const struct proc_id *child)
{
        struct proc_id *nb;

        (void)cs;
        if (app_had_before(app, child))
                return 0;
        nb = realloc(app->before, (app->n_before + 1) * sizeof(*nb));
        if (!nb)
                return -ENOMEM;
        app->before = nb;
        app->before[app->n_before++] = *child;
        return 0;
}

static int take_child(struct cpuset *cs, struct cpuset_app *app, const struct proc_id *child)
{
        int r;

        if (app_has_process(app, child) || app_had_before(app, child))
                return 0;
        r = app_scan_process(cs, app, child->pid);
        return r == -ESRCH ? 0 : r;
}

/* Notes threads we have not seen yet, and in affinity mode the children forked since adopt
 * (in a cgroup they join the app's group by themselves). Returns how many were added. */
static int app_scan_threads(struct cpuset *cs, struct cpuset_app *app)
{
        int added = app_scan_process(cs, app, app->pid), r;

        if (added < 0 || cs->mode != CPUSET_AFFINITY)
                return added;
        r = app_foreach_child(cs, app, take_child);
        return r < 0 ? r : added + r;
}

/* Affinity: forgets the threads that are gone (a TID may come back as another thread), so
 * that nothing is written to a reused TID and the list does not grow with thread churn. */
static void app_prune(struct cpuset *cs, struct cpuset_app *app)
{
        bool pruned = false;

        for (size_t i = app->n_threads; i-- > 0;) {
                struct state_entry e;

                if (thread_is_current(&app->threads[i]))
                        continue;
                e = task_entry(app, &app->threads[i]);
                state_record_remove(cs->rec, &e);
                memmove(&app->threads[i], &app->threads[i + 1],
                        (app->n_threads - i - 1) * sizeof(*app->threads));
                app->n_threads--;
                pruned = true;
        }
        if (pruned)
                (void)state_record_commit(cs->rec); /* a stale line restores nothing anyway */
}

/* The start time has a resolution of one clock tick: a PID reused within the same tick looks
 * the same. A pidfd names the very process: once it was reaped, signal 0 says ESRCH. */
static bool app_pidfd_gone(const struct cpuset_app *app)
{
        return app->pidfd >= 0 && syscall(SYS_pidfd_send_signal, app->pidfd, 0, NULL, 0) < 0 &&
               errno == ESRCH;
}

static bool app_is_current(const struct cpuset_app *app)
{
        unsigned long long start;

        return !proc_gone(app->pid) && !app_pidfd_gone(app) &&
               proc_thread_start(app->pid, app->pid, &start) == 0 && start == app->start_ticks;
}

/* -ESRCH unless app->pid still names the process we adopted. */
static int app_check(struct cpuset *cs, struct cpuset_app *app)
{
        unsigned long long start;

        if (proc_gone(app->pid))
                return fail(cs, -ESRCH, "%s has exited", app->name);
        if (app_pidfd_gone(app) || proc_thread_start(app->pid, app->pid, &start) < 0 ||
            start != app->start_ticks)
                return fail(cs, -ESRCH, "%s has exited (its PID now names another process)",
                            app->name);
        return 0;
}

static int mask_to_set(const struct cpumask *m, cpu_set_t *set)
{
        CPU_ZERO(set);
        cpumask_foreach (c, m) {
                if (c >= CPU_SETSIZE)
                        return -ERANGE;
                CPU_SET(c, set);
        }
        return 0;
}

static int set_affinity(pid_t tid, const struct cpumask *m)
{
        cpu_set_t set;
        int err = mask_to_set(m, &set);

        if (err < 0)
                return err;
        return sched_setaffinity(tid, sizeof(set), &set) < 0 ? -errno : 0;
}

/* A task was in our directory: it leaves when the cgroup goes, so removal retries briefly
 * while the kernel finishes moving exiting tasks out (rmdir says EBUSY meanwhile). */
static int rmdir_retry(const char *dir)
{
        for (int i = 0; i < 100; i++) {
                if (rmdir(dir) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY)
                        return -errno;
                nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
        }
        return -EBUSY;
}

int cpuset_remove_dir(const char *dir, const char *fallback)
{
        char buf[8192];
        int err;

        /* v1 lists TIDs in tasks; v2 lists processes in cgroup.procs. */
        if (fallback && (cg_read(dir, "tasks", buf, sizeof(buf)) == 0 ||
                         cg_read(dir, "cgroup.procs", buf, sizeof(buf)) == 0)) {
                for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n")) {
                        int tid;

                        if (parse_int(s, &tid) == 0 && tid > 0)
                                write_pid(fallback, tid); /* ESRCH: it left by itself */
                }
        }
        err = rmdir_retry(dir);
        return err;
}

int cpuset_restore_task(const struct state_entry *e)
{
        unsigned long long start;
        int err = proc_thread_start(e->pid, e->tid, &start);

        if (err < 0)
                return err;
        if (start != e->start_ticks)
                return -ESRCH; /* the TID now names another thread */
        if (strcmp(e->path, "-")) {
                err = write_pid(e->path, e->tid);
                if (err < 0)
                        return err;
        }
        /* Moving between cpusets resets the mask: the thread's own pin comes last. */
        return set_affinity(e->tid, &e->mask);
}

/* Puts every thread back, removes our directory and forgets the app in the record. Threads
 * we never saw (born after the last scan) go where the main thread came from. */
static int app_restore(struct cpuset *cs, struct cpuset_app *app)
{
        bool leader_ours = app_is_current(app) || proc_gone(app->pid);
        int err = 0, r;

        for (size_t i = 0; i < app->n_threads; i++) {
                struct state_entry e = task_entry(app, &app->threads[i]);

                if (e.pid == app->pid && !leader_ours)
                        continue; /* its PID names another process now */
                r = cpuset_restore_task(&e);
                if (r < 0 && r != -ESRCH && err == 0)
                        err = fail(cs, r, "cannot give thread %d of %s back to %s: %s", (int)e.tid,
                                   app->name, e.path, strerror(-r));
        }
        if (cs->mode == CPUSET_AFFINITY && app->n_threads > 0 && app_is_current(app)) {
                char path[CG_PATH_MAX];
                struct dirent *de;
                DIR *d;

                if (fs_path(path, sizeof(path), "/proc/%d/task", (int)app->pid) == 0 &&
                    (d = opendir(path))) {
                        while ((de = readdir(d))) {
                                int tid;

                                if (parse_int(de->d_name, &tid) == 0 && !app_find_thread(app, tid))
                                        set_affinity(tid, app_own_mask(app));
                        }
                        closedir(d);
                }
        }
        bool dir_gone = !app->dir[0];

        if (app->dir[0]) {
                const char *fallback = app->n_threads ? app->threads[0].origin : NULL;

                r = cpuset_remove_dir(app->dir, fallback);
                if (r < 0 && err == 0)
                        err = fail(cs, r, "cannot remove %s: %s", app->dir, strerror(-r));
                dir_gone = r == 0;
        }
        for (size_t i = 0; i < app->n_threads; i++) {
                struct state_entry e = task_entry(app, &app->threads[i]);

                state_record_remove(cs->rec, &e);
        }
        /* The record of the directory goes with the directory, whatever became of the
         * threads: a group that is gone must not be "restored" by the next start. */
        if (app->dir_recorded && dir_gone) {
                struct state_entry e = {.kind = STATE_DIR};

                strscpy(e.path, app->dir, sizeof(e.path));
                state_record_remove(cs->rec, &e);
        }
        r = state_record_commit(cs->rec);
        if (r < 0 && err == 0)
                err = fail(cs, r, "cannot update the state record: %s", strerror(-r));
        return err;
}

static void app_free(struct cpuset_app *app)
{
        if (!app)
                return;
        free(app->threads);
        free(app->before);
        if (app->pidfd >= 0)
                close(app->pidfd);
        free(app);
}

static void cs_unlink_app(struct cpuset *cs, struct cpuset_app *app)
{
        for (struct cpuset_app **p = &cs->apps; *p; p = &(*p)->next) {
                if (*p == app) {
                        *p = app->next;
                        return;
                }
        }
}

/* One pctld per group: an exclusive flock on the base directory, held while we run. Two
 * instances sharing a group would move each other's apps and remove each other's group. */
static int lock_base(struct cpuset *cs, char *why, size_t why_size)
{
        int fd = open(cs->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

        if (fd < 0) {
                err = -errno;
                snprintf(why, why_size, "cannot open %s: %s", cs->base, strerror(-err));
                return err;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                err = errno == EWOULDBLOCK ? -EBUSY : -errno;
                close(fd);
                if (err == -EBUSY)
                        snprintf(why, why_size,
                                 "%s belongs to another running pctld (it holds the lock on "
                                 "that directory): give each instance its own cgroup_group",
                                 cs->base);
                else
                        snprintf(why, why_size, "cannot lock %s: %s", cs->base, strerror(-err));
                return err;
        }
        if (cs->lock_fd >= 0)
                close(cs->lock_fd);
        cs->lock_fd = fd;
        return 0;
}

/* Our group <mount>/<group>: recorded before it is created (even when a previous run left
 * it, since it is ours by name), so a restart removes it; but not kept in the record when
 * another instance turns out to hold it, so that our stop leaves theirs alone. */
static int make_base(struct cpuset *cs, const char *group, char *why, size_t why_size)
{
        struct state_entry e = {.kind = STATE_DIR};
        int err;

        if (join(cs->base, sizeof(cs->base), cs->mount, group) < 0)
                return -ENAMETOOLONG;
        strscpy(e.path, cs->base, sizeof(e.path));
        err = state_record_add(cs->rec, &e);
        if (err == 0)
                err = state_record_commit(cs->rec);
        if (err < 0) {
                snprintf(why, why_size, "cannot write the state record: %s", strerror(-err));
                return err;
        }
        cs->base_recorded = true;
        cs->base_made = true;
        if (mkdir(cs->base, 0755) < 0 && errno != EEXIST) {
                err = -errno;
                snprintf(why, why_size, "cannot create %s: %s", cs->base, strerror(-err));
                return err;
        }
        err = lock_base(cs, why, why_size);
        if (err == -EBUSY) {
                state_record_remove(cs->rec, &e);
                state_record_commit(cs->rec);
                cs->base_recorded = false;
        }
        return err;
}

/* v1: a new cpuset needs cpus and mems before a task may join; the base takes the root's. */
static int setup_base_v1(struct cpuset *cs)
{
        char buf[CPUMASK_LIST_MAX];
        int err;

        err = cg_read(cs->base, "cpuset.cpus", buf, sizeof(buf));
        if (err == 0 && !buf[0]) {
                err = cg_read(cs->mount, "cpuset.cpus", buf, sizeof(buf));
                if (err == 0)
                        err = cg_write(cs->base, "cpuset.cpus", buf);
        }
        if (err == 0)
                err = cg_read(cs->base, "cpuset.mems", cs->mems, sizeof(cs->mems));
        if (err == 0 && !cs->mems[0]) {
                err = cg_read(cs->mount, "cpuset.mems", cs->mems, sizeof(cs->mems));
                if (err == 0)
                        err = cg_write(cs->base, "cpuset.mems", cs->mems);
        }
        if (err == 0)
                err = cg_read_mask(cs->base, cg_v1.effective, &cs->allowed);
        return err;
}

/* The base can vanish under us (an administrator, or a tool cleaning up cgroups): make it
 * again rather than fail every adopt until a restart. */
static int ensure_base(struct cpuset *cs)
{
        char why[256];
        int err;

        if (cs->mode == CPUSET_AFFINITY || access(cs->base, F_OK) == 0)
                return 0;
        if (errno != ENOENT)
                return fail(cs, -errno, "cannot reach %s: %m", cs->base);
        if (!cs->base_made)
                return fail(cs, -ENOENT, "pctld's cgroup %s has disappeared", cs->base);
        if (mkdir(cs->base, 0755) < 0 && errno != EEXIST)
                return fail(cs, -errno, "%s disappeared and cannot be made again: %m", cs->base);
        err = lock_base(cs, why, sizeof(why));
        if (err < 0)
                return fail(cs, err, "%s", why);
        err = cs->mode == CPUSET_V1 ? setup_base_v1(cs)
                                    : cg_write(cs->mount, "cgroup.subtree_control", "+cpuset");
        if (err == 0 && cs->mode == CPUSET_V2)
                err = cg_write(cs->base, "cgroup.subtree_control", "+cpuset");
        if (err < 0)
                return fail(cs, err, "%s disappeared and cannot be set up again: %s", cs->base,
                            strerror(-err));
        log_warning("%s had disappeared: made it again", cs->base);
        return 0;
}

/* A process placed by another pctld is that instance's: its group (an ancestor of the
 * process's cgroup) is locked by it. Our own base is locked by us, so it is skipped. */
static int check_foreign(struct cpuset *cs, pid_t pid)
{
        char cg[CG_PATH_MAX], dir[2 * CG_PATH_MAX];
        size_t base_len = strlen(cs->base);

        if (cs->mode == CPUSET_AFFINITY ||
            proc_thread_cgroup(cs->mode, pid, pid, cg, sizeof(cg)) < 0)
                return 0;
        for (char *end = cg + strlen(cg); end > cg; end = strrchr(cg, '/')) {
                int fd;

                *end = '\0';
                if (!cg[0])
                        break;
                if (snprintf(dir, sizeof(dir), "%s%s", cs->mount, cg) >= (int)sizeof(dir))
                        continue;
                if (!strncmp(dir, cs->base, base_len) && (!dir[base_len] || dir[base_len] == '/'))
                        return 0;
                fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
                        close(fd);
                        return fail(cs, -EPERM, "process %d is in %s, which another pctld manages",
                                    (int)pid, dir);
                }
                close(fd);
        }
        return 0;
}

/* Moves the threads noted so far into our directory (v1: each TID; v2: the process). */
static int app_move(struct cpuset *cs, struct cpuset_app *app, size_t from)
{
        char file[CG_PATH_MAX + 32];
        int err;

        if (join(file, sizeof(file), app->dir, cg_files(cs->mode)->tasks) < 0)
                return -ENAMETOOLONG;
        if (cs->mode == CPUSET_V2) {
                err = write_pid(file, app->pid);
                return err;
        }
        for (size_t i = from; i < app->n_threads; i++) {
                err = write_pid(file, app->threads[i].tid);
                /* ESRCH: that thread exited meanwhile; the others still move. */
                if (err < 0 && err != -ESRCH)
                        return err;
        }
        return 0;
}

int cpuset_adopt(struct cpuset *cs, pid_t pid, const char *name, struct cpuset_app **out)
{
        struct cpuset_app *app;
        size_t moved = 0;
        int err;

        cs->err[0] = '\0';
        if (pid <= 0)
                return fail(cs, -EINVAL, "invalid PID %d", (int)pid);
        /* Only existence here: one that has exited but is not reaped yet is found out after
         * the move, as any that exits meanwhile. */
        if (count_tasks(pid, &moved) < 0)
                return fail(cs, -ESRCH, "process %d does not exist", (int)pid);
        moved = 0;
        for (app = cs->apps; app; app = app->next)
                if (app->pid == pid)
                        return fail(cs, -EEXIST, "process %d is already adopted", (int)pid);
        err = check_foreign(cs, pid);
        if (err == 0)
                err = ensure_base(cs);
        if (err < 0)
                return err;
        app = calloc(1, sizeof(*app));
        if (!app)
                return fail(cs, -ENOMEM, "out of memory");
        app->pidfd = -1;
        app->pid = pid;
        snprintf(app->name, sizeof(app->name), "%s[%d]", name && *name ? name : "pid", (int)pid);
        app->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (proc_thread_start(pid, pid, &app->start_ticks) < 0) {
                err = fail(cs, -ESRCH, "process %d exited before it could be adopted", (int)pid);
                goto rollback;
        }
        err = app_scan_process(cs, app, pid);
        /* Children it has now stay as they are; those it forks from now on are the app's. */
        if (err > 0 && cs->mode == CPUSET_AFFINITY) {
                int r = app_foreach_child(cs, app, note_before);

                if (r < 0)
                        err = r;
        }
        if (err == 0 || err == -ESRCH) {
                err = fail(cs, -ESRCH, "process %d exited before it could be adopted", (int)pid);
                goto rollback;
        }
        if (err < 0) {
                fail(cs, err, "cannot read the threads of %s: %s", app->name, strerror(-err));
                goto rollback;
        }
        if (cs->mode != CPUSET_AFFINITY) {
                struct state_entry e = {.kind = STATE_DIR};
                char buf[CPUMASK_LIST_MAX];

                if (snprintf(app->dir, sizeof(app->dir), "%s/app-%d", cs->base, (int)pid) >=
                    (int)sizeof(app->dir)) {
                        err = fail(cs, -ENAMETOOLONG, "cgroup path too long");
                        app->dir[0] = '\0';
                        goto rollback;
                }
                strscpy(e.path, app->dir, sizeof(e.path));
                err = state_record_add(cs->rec, &e);
                if (err == 0)
                        err = state_record_commit(cs->rec);
                if (err < 0) {
                        fail(cs, err, "cannot write the state record: %s", strerror(-err));
                        app->dir[0] = '\0';
                        goto rollback;
                }
                app->dir_recorded = true;
                /* A leftover of ours with the same name (same PID) is reused. */
                if (mkdir(app->dir, 0755) < 0 && errno != EEXIST) {
                        err = fail(cs, -errno, "cannot create %s: %m", app->dir);
                        goto rollback;
                }
                /* v1 needs cpus and mems before a task may join (else ENOSPC); a v2 child
                 * inherits both while its own files are empty. */
                if (cs->mode == CPUSET_V1) {
                        cpumask_format(&cs->allowed, buf, sizeof(buf));
                        err = cg_write(app->dir, "cpuset.cpus", buf);
                        if (err == 0)
                                err = cg_write(app->dir, "cpuset.mems", cs->mems);
                        if (err < 0) {
                                fail(cs, err, "cannot set up %s: %s", app->dir, strerror(-err));
                                goto rollback;
                        }
                }
        }
        err = state_record_commit(cs->rec); /* every thread's origin, before it moves */
        if (err < 0) {
                fail(cs, err, "cannot write the state record: %s", strerror(-err));
                goto rollback;
        }
        if (cs->mode != CPUSET_AFFINITY) {
                /* Threads born during the move are caught by the next scan. */
                for (int round = 0; round < 16; round++) {
                        err = app_move(cs, app, moved);
                        if (err < 0)
                                break;
                        moved = app->n_threads;
                        err = app_scan_threads(cs, app);
                        if (err > 0)
                                err = state_record_commit(cs->rec);
                        if (err <= 0)
                                break;
                }
                if (err == -ESRCH || proc_gone(pid)) {
                        err = fail(cs, -ESRCH, "process %d exited while being moved", (int)pid);
                        goto rollback;
                }
                if (err < 0) {
                        fail(cs, err, "cannot move %s into %s: %s", app->name, app->dir,
                             strerror(-err));
                        goto rollback;
                }
        }
        if (proc_gone(pid)) {
                err = fail(cs, -ESRCH, "process %d exited while being adopted", (int)pid);
                goto rollback;
        }
        app->next = cs->apps;
        cs->apps = app;
        *out = app;
        return 0;

rollback : {
        char saved[sizeof(cs->err)];

        /* The reason of the failure, not of the clean-up, is what the caller needs. */
        memcpy(saved, cs->err, sizeof(saved));
        app_restore(cs, app);
        memcpy(cs->err, saved, sizeof(saved));
        app_free(app);
        return err;
}
}

static int check_cpus(struct cpuset *cs, const struct cpumask *cpus)
{
        char want[CPUMASK_LIST_MAX], have[CPUMASK_LIST_MAX];
        struct cpumask online;
        int err;

        if (cpumask_empty(cpus))
                return fail(cs, -EINVAL, "empty CPU list: an app needs at least one CPU");
        cpumask_format(cpus, want, sizeof(want));
        err = online_cpus(&online);
        if (err < 0)
                return fail(cs, err, "cannot read the online CPUs: %s", strerror(-err));
        if (!cpumask_subset(cpus, &online)) {
                cpumask_format(&online, have, sizeof(have));
                return fail(cs, -ERANGE,
                            "CPU list %s includes CPUs this machine does not have (online: %s)",
                            want, have);
        }
        if (!cpumask_subset(cpus, &cs->allowed)) {
                cpumask_format(&cs->allowed, have, sizeof(have));
                return fail(cs, -EINVAL,
                            "CPU list %s includes CPUs outside pctl's cpuset %s (allowed: %s)",
                            want, cs->base[0] ? cs->base : "(affinity)", have);
        }
        return 0;
}

int cpuset_set_cpus(struct cpuset *cs, struct cpuset_app *app, const struct cpumask *cpus)
{
        char want[CPUMASK_LIST_MAX], got[CPUMASK_LIST_MAX];
        struct cpumask now;
        int err;

        cs->err[0] = '\0';
        err = check_cpus(cs, cpus);
        if (err == 0)
                err = app_check(cs, app);
        if (err < 0)
                return err;
        cpumask_format(cpus, want, sizeof(want));
        if (cs->mode != CPUSET_AFFINITY) {
                err = cg_write(app->dir, "cpuset.cpus", want);
                if (err < 0)
                        return fail(cs, err, "cannot write %s to %s/cpuset.cpus: %s", want,
                                    app->dir, strerror(-err));
                err = cg_read_mask(app->dir, cg_files(cs->mode)->effective, &now);
                if (err < 0)
                        return fail(cs, err, "cannot read back %s/%s: %s", app->dir,
                                    cg_files(cs->mode)->effective, strerror(-err));
                if (!cpumask_equal(&now, cpus)) {
                        cpumask_format(&now, got, sizeof(got));
                        return fail(cs, -EIO, "%s/%s reads %s after writing %s", app->dir,
                                    cg_files(cs->mode)->effective, got, want);
                }
        } else {
                /* Record the threads and children born since adopt before their masks
                 * change; forget those that are gone, whose TIDs may name others now. */
                app_prune(cs, app);
                err = app_scan_threads(cs, app);
                if (err > 0)
                        err = state_record_commit(cs->rec);
                if (err < 0 && err != -ESRCH)
                        return fail(cs, err, "cannot record the threads of %s: %s", app->name,
                                    strerror(-err));
                for (size_t i = 0; i < app->n_threads; i++) {
                        const struct cpuset_thread *t = &app->threads[i];

                        /* Checked right before the write: never pin a thread that is not ours. */
                        if (!thread_is_current(t))
                                continue;
                        err = set_affinity(t->tid, cpus);
                        if (err == -ESRCH)
                                continue; /* that thread exited */
                        if (err < 0)
                                return fail(cs, err, "cannot pin thread %d of %s to %s: %s",
                                            (int)t->tid, app->name, want, strerror(-err));
                        if (get_affinity(t->tid, &now) == 0 && !cpumask_equal(&now, cpus) &&
                            thread_is_current(t)) {
                                cpumask_format(&now, got, sizeof(got));
                                return fail(cs, -EIO,
                                            "thread %d of %s may run on %s after setting %s",
                                            (int)t->tid, app->name, got, want);
                        }
                }
        }
        err = app_check(cs, app);
        if (err < 0)
                return err;
        app->cpus = *cpus;
        app->has_cpus = true;
        return 0;
}

int cpuset_get_cpus(struct cpuset *cs, struct cpuset_app *app, struct cpumask *out)
{
        struct cpumask m;
        int err;

        cs->err[0] = '\0';
        err = app_check(cs, app);
        if (err < 0)
                return err;
        if (cs->mode == CPUSET_AFFINITY)
                err = get_affinity(app->pid, &m);
        else
                err = cg_read_mask(app->dir, cg_files(cs->mode)->effective, &m);
        if (err < 0)
                return fail(cs, err, "cannot read where %s may run: %s", app->name, strerror(-err));
        *out = m;
        return 0;
}

int cpuset_refresh(struct cpuset *cs, struct cpuset_app *app)
{
        size_t before;
        int err;

        cs->err[0] = '\0';
        err = app_check(cs, app);
        if (err < 0)
                return err;
        /* In a cgroup new threads and children join their creator's group: nothing to do. */
        if (cs->mode != CPUSET_AFFINITY || !app->has_cpus)
                return 0;
        app_prune(cs, app);
        before = app->n_threads;
        err = app_scan_threads(cs, app);
        if (err > 0)
                err = state_record_commit(cs->rec);
        if (err < 0)
                return fail(cs, err, "cannot record the new threads of %s: %s", app->name,
                            strerror(-err));
        for (size_t i = before; i < app->n_threads; i++) {
                const struct cpuset_thread *t = &app->threads[i];

                if (!thread_is_current(t))
                        continue;
                err = set_affinity(t->tid, &app->cpus);
                if (err < 0 && err != -ESRCH)
                        return fail(cs, err, "cannot pin thread %d of %s: %s", (int)t->tid,
                                    app->name, strerror(-err));
        }
        return 0;
}

int cpuset_release(struct cpuset *cs, struct cpuset_app *app)
{
        int err;

        if (!app)
                return 0;
        cs->err[0] = '\0';
        cs_unlink_app(cs, app);
        /* Children forked since the last look carry our mask too: note them to give back. */
        if (cs->mode == CPUSET_AFFINITY && app->has_cpus && app_is_current(app)) {
                app_prune(cs, app);
                if (app_scan_threads(cs, app) > 0)
                        (void)state_record_commit(cs->rec);
        }
        err = app_restore(cs, app);
        app_free(app);
        return err;
}

static int probe_v2(const struct actuator_config *cfg, char *mount, size_t mount_size, char *own,
                    size_t own_size, char *why, size_t why_size)
{
        char path[CG_PATH_MAX], buf[4096], ctl[CG_PATH_MAX + 64];
        bool has_cpuset = false;
        ssize_t n;
        char *p;

        if (fs_path(path, sizeof(path), "%s/cgroup.controllers", cfg->cgroup_root) == 0 &&
            access(path, F_OK) == 0) {
                fs_path(mount, mount_size, "%s", cfg->cgroup_root);
        } else if (fs_path(path, sizeof(path), "%s/unified/cgroup.controllers", cfg->cgroup_root) ==
                       0 &&
                   access(path, F_OK) == 0) {
                fs_path(mount, mount_size, "%s/unified", cfg->cgroup_root);
        } else {
                snprintf(why, why_size, "no cgroup v2 mount at %s or %s/unified", cfg->cgroup_root,
                         cfg->cgroup_root);
                return -ENODEV;
        }
        n = fs_read("/proc/self/cgroup", buf, sizeof(buf));
        if (n < 0) {
                snprintf(why, why_size, "cannot read /proc/self/cgroup: %s", strerror((int)-n));
                return (int)n;
        }
        p = strstr(buf, "0::");
        if (!p || (p != buf && p[-1] != '\n')) {
                snprintf(why, why_size, "pctld is in no cgroup v2 group (/proc/self/cgroup)");
                return -ENODEV;
        }
        p += 3;
        p[strcspn(p, "\n")] = '\0';
        if (strscpy(own, strcmp(p, "/") ? p : "", own_size) < 0)
                return -ENAMETOOLONG;
        snprintf(ctl, sizeof(ctl), "%s%s/cgroup.controllers", mount, own);
        n = file_read(ctl, buf, sizeof(buf));
        if (n < 0) {
                snprintf(why, why_size, "cannot read %s: %s", ctl, strerror((int)-n));
                return (int)n;
        }
        for (char *c = strtok(buf, " \n"); c; c = strtok(NULL, " \n"))
                if (!strcmp(c, "cpuset"))
                        has_cpuset = true;
        if (!has_cpuset) {
                snprintf(why, why_size, "cgroup v2 at %s%s offers no cpuset controller", mount,
                         own);
                return -ENODEV;
        }
        snprintf(ctl, sizeof(ctl), "%s%s/cgroup.subtree_control", mount, own);
        if (access(ctl, W_OK) < 0) {
                snprintf(why, why_size, "cgroup v2 subtree %s%s is not writable (%m)", mount,
                         own[0] ? own : "/");
                return -EACCES;
        }
        return 0;
}

static int probe_v1(const struct actuator_config *cfg, char *mount, size_t mount_size, char *why,
                    size_t why_size)
{
        char path[CG_PATH_MAX + sizeof("/cpuset.cpus")];

        if (fs_path(mount, mount_size, "%s/cpuset", cfg->cgroup_root) < 0)
                return -ENAMETOOLONG;
        snprintf(path, sizeof(path), "%s/cpuset.cpus", mount);
        if (access(path, F_OK) < 0) {
                snprintf(why, why_size, "no cgroup v1 cpuset hierarchy at %.100s", mount);
                return -ENODEV;
        }
        if (access(mount, W_OK) < 0) {
                snprintf(why, why_size, "cgroup v1 cpuset hierarchy %.100s is not writable (%m)",
                         mount);
                return -EACCES;
        }
        return 0;
}

static const char *mode_name(enum cpuset_mode m)
{
        static const char *const names[] = {
            [CPUSET_AUTO] = "auto",         [CPUSET_V2] = "cgroup v2",    [CPUSET_V1] = "cgroup v1",
            [CPUSET_AFFINITY] = "affinity", [CPUSET_SYSTEMD] = "systemd",
        };
        return names[m];
}

int cpuset_probe(const struct actuator_config *cfg, enum cpuset_mode *mode,
                 struct actuator_probe *out)
{
        char mount[CG_PATH_MAX], own[CG_PATH_MAX], why_v2[200] = "", why_v1[200] = "";
        int r2 = -ENODEV, r1 = -ENODEV;
        struct actuator_probe p = {.available = true};

        if (cfg->mode == CPUSET_AUTO || cfg->mode == CPUSET_V2)
                r2 = probe_v2(cfg, mount, sizeof(mount), own, sizeof(own), why_v2, sizeof(why_v2));
        if (cfg->mode == CPUSET_AUTO || cfg->mode == CPUSET_V1)
                r1 = probe_v1(cfg, mount, sizeof(mount), why_v1, sizeof(why_v1));
        switch (cfg->mode) {
        case CPUSET_AUTO:
                if (r2 == 0) {
                        *mode = CPUSET_V2;
                        snprintf(p.reason, sizeof(p.reason), "cgroup v2 cpuset");
                } else if (r1 == 0) {
                        *mode = CPUSET_V1;
                        snprintf(p.reason, sizeof(p.reason), "cgroup v1 cpuset (not v2: %s)",
                                 why_v2);
                } else {
                        *mode = CPUSET_AFFINITY;
                        char both[sizeof(why_v2) + sizeof(why_v1) + 64];

                        /* Both reasons may not fit the probe's field: cut at its end. */
                        snprintf(both, sizeof(both), "affinity (not v2: %s; not v1: %s)", why_v2,
                                 why_v1);
                        strscpy(p.reason, both, sizeof(p.reason));
                }
                break;
        case CPUSET_V2:
        case CPUSET_V1: {
                int r = cfg->mode == CPUSET_V2 ? r2 : r1;

                *mode = cfg->mode;
                if (r < 0) {
                        p.available = false;
                        p.err = r;
                        snprintf(p.reason, sizeof(p.reason), "%s",
                                 cfg->mode == CPUSET_V2 ? why_v2 : why_v1);
                } else {
                        snprintf(p.reason, sizeof(p.reason), "%s cpuset", mode_name(cfg->mode));
                }
                break;
        }
        case CPUSET_AFFINITY:
        case CPUSET_SYSTEMD: /* the unit side is actuator.c's: its shared apps go by affinity */
                *mode = CPUSET_AFFINITY;
                snprintf(p.reason, sizeof(p.reason), "affinity (as configured)");
                break;
        }
        *out = p;
        return p.available ? 0 : p.err;
}

static int open_v1(struct cpuset *cs, const struct actuator_config *cfg, char *why, size_t why_size)
{
        int err;

        if (probe_v1(cfg, cs->mount, sizeof(cs->mount), why, why_size) < 0)
                return -ENODEV;
        err = make_base(cs, cfg->group, why, why_size);
        if (err < 0)
                return err;
        err = setup_base_v1(cs);
        if (err < 0) {
                snprintf(why, why_size, "cannot set up %s: %s", cs->base, strerror(-err));
                return err;
        }
        return 0;
}

static int open_v2(struct cpuset *cs, const struct actuator_config *cfg, char *why, size_t why_size)
{
        char own[CG_PATH_MAX], dir[CG_PATH_MAX + 16];
        int err;

        if (probe_v2(cfg, cs->mount, sizeof(cs->mount), own, sizeof(own), why, why_size) < 0)
                return -ENODEV;
        if (!own[0]) {
                /* In the root cgroup (no systemd): a group of our own below the root, which
                 * may hold processes, so nobody has to move. */
                err = make_base(cs, cfg->group, why, why_size);
                if (err < 0)
                        return err;
                err = cg_write(cs->mount, "cgroup.subtree_control", "+cpuset");
                if (err < 0) {
                        snprintf(why, why_size, "cannot enable +cpuset in %s: %s", cs->mount,
                                 strerror(-err));
                        return err;
                }
        } else {
                char pid[32];

                /* No internal processes: pctld moves into a leaf before its own group may
                 * enable controllers for children. The leaf is not recorded: it holds pctld
                 * while it runs, and systemd removes the delegated subtree with the unit. */
                if (strlen(cs->mount) + strlen(own) >= sizeof(cs->base))
                        return -ENAMETOOLONG;
                strcpy(cs->base, cs->mount);
                strcat(cs->base, own);
                err = lock_base(cs, why, why_size);
                if (err < 0)
                        return err;
                if (join(dir, sizeof(dir), cs->base, "daemon") < 0)
                        return -ENAMETOOLONG;
                if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                        err = -errno;
                        snprintf(why, why_size, "cannot create %s: %s", dir, strerror(-err));
                        return err;
                }
                snprintf(pid, sizeof(pid), "%d", (int)getpid());
                err = cg_write(dir, "cgroup.procs", pid);
                if (err < 0) {
                        snprintf(why, why_size, "cannot move pctld into %s: %s", dir,
                                 strerror(-err));
                        return err;
                }
        }
        err = cg_write(cs->base, "cgroup.subtree_control", "+cpuset");
        if (err < 0) {
                snprintf(why, why_size, "cannot enable +cpuset in %s: %s%s", cs->base,
                         strerror(-err),
                         err == -EBUSY ? " (other processes share pctld's cgroup)" : "");
                return err;
        }
        err = cg_read_mask(cs->base, cg_v2.effective, &cs->allowed);
        if (err < 0) {
                snprintf(why, why_size, "cannot read %s/%s: %s", cs->base, cg_v2.effective,
                         strerror(-err));
                return err;
        }
        return 0;
}

int cpuset_open(const struct actuator_config *cfg, struct state_record *rec, struct cpuset **out,
                char *why, size_t why_size)
{
        struct actuator_probe p;
        struct cpuset *cs;
        enum cpuset_mode mode;
        int err;

        if (strpbrk(cfg->group, "/ \t\n") || !cfg->group[0] || !strcmp(cfg->group, ".") ||
            !strcmp(cfg->group, "..")) {
                snprintf(why, why_size, "group name '%s' must be one plain path component",
                         cfg->group);
                return -EINVAL;
        }
        err = cpuset_probe(cfg, &mode, &p);
        if (err < 0) {
                snprintf(why, why_size, "%s", p.reason);
                return err;
        }
        cs = calloc(1, sizeof(*cs));
        if (!cs)
                return -ENOMEM;
        cs->mode = mode;
        cs->rec = rec;
        cs->lock_fd = -1;
        switch (mode) {
        case CPUSET_V1:
                err = open_v1(cs, cfg, why, why_size);
                break;
        case CPUSET_V2:
                err = open_v2(cs, cfg, why, why_size);
                break;
        default:
                err = online_cpus(&cs->allowed);
                if (err < 0)
                        snprintf(why, why_size, "cannot read the online CPUs: %s", strerror(-err));
                break;
        }
        if (err < 0) {
                cpuset_close(cs);
                return err;
        }
        *out = cs;
        return 0;
}

void cpuset_close(struct cpuset *cs)
{
        if (!cs)
                return;
        while (cs->apps)
                cpuset_release(cs, cs->apps);
        if (cs->base_recorded) {
                struct state_entry e = {.kind = STATE_DIR};

                /* EBUSY here means someone else put a group under ours: leave both. */
                if (cpuset_remove_dir(cs->base, NULL) == 0) {
                        strscpy(e.path, cs->base, sizeof(e.path));
                        state_record_remove(cs->rec, &e);
                        state_record_commit(cs->rec);
                }
        }
        if (cs->lock_fd >= 0)
                close(cs->lock_fd);
        free(cs);
}
