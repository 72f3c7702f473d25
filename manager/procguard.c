#define _GNU_SOURCE /* memrchr */
#include "pctl/procguard.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/fsio.h"
#include "pctl/policy.h"
#include "pctl/procstat.h"
#include "pctl/util.h"

/* include/linux/sched.h: the task is a kernel thread (no user space to place). */
#define PF_KTHREAD 0x00200000UL

/* Fields 4 (ppid) and 9 (flags) of /proc/PID/stat: -ESRCH when it cannot be read, -EIO when
 * it does not hold them. */
static int stat_fields(pid_t pid, pid_t *ppid, unsigned long *flags)
{
        char path[64], buf[1024];
        long long pp;
        uint64_t f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (fs_read(path, buf, sizeof(buf)) < 0)
                return -ESRCH;
        if (procstat_field(buf, 4, &pp) < 0 || pp < INT_MIN || pp > INT_MAX ||
            procstat_field_u64(buf, 9, &f) < 0)
                return -EIO;
        *ppid = (pid_t)pp;
        if (flags)
                *flags = (unsigned long)f;
        return 0;
}

static int status_tgid(pid_t pid, pid_t *tgid)
{
        char path[64];
        _cleanup_free_ char *buf = malloc(8192);
        const char *line;
        int v;

        if (!buf)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        if (fs_read(path, buf, 8192) < 0)
                return -ESRCH;
        line = strstr(buf, "\nTgid:");
        if (!line || sscanf(line + 6, "%d", &v) != 1)
                return -EIO;
        *tgid = v;
        return 0;
}

/* Another pctld: our own executable, or any named pctld (another build, another version).
 * An executable replaced while it runs reads "PATH (deleted)". */
static bool exe_is_pctld(const char *exe, const char *self_exe)
{
        static const char deleted[] = " (deleted)";
        size_t len = strlen(exe), n = sizeof(deleted) - 1;
        const char *base;

        if (*self_exe && strcmp(exe, self_exe) == 0)
                return true;
        if (len >= n && strcmp(exe + len - n, deleted) == 0)
                len -= n;
        base = memrchr(exe, '/', len);
        base = base ? base + 1 : exe;
        return (size_t)(exe + len - base) == 5 && strncmp(base, "pctld", 5) == 0;
}

int proc_facts_read(pid_t pid, const char *self_exe, struct proc_facts *out)
{
        struct proc_facts f = {.pid = pid};
        char path[64], comm[32], exe[4096];
        _cleanup_free_ char *cg = malloc(16384);
        unsigned long flags;
        pid_t ppid;
        ssize_t n;
        int r;

        if (!cg)
                return -ENOMEM;
        r = stat_fields(pid, &ppid, &flags);
        if (r < 0)
                return r;
        f.kthread = flags & PF_KTHREAD;
        r = status_tgid(pid, &f.tgid);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        n = fs_read(path, comm, sizeof(comm));
        if (n < 0)
                return -ESRCH;
        strescape(f.comm, sizeof(f.comm), comm, (size_t)n);

        if (self_exe) {
                char link[300];

                if (fs_path(link, sizeof(link), "/proc/%d/exe", (int)pid) == 0) {
                        n = readlink(link, exe, sizeof(exe) - 1);
                        if (n > 0) {
                                exe[n] = '\0';
                                f.runs_pctld = exe_is_pctld(exe, self_exe);
                        }
                }
        }
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        if (fs_read(path, cg, 16384) >= 0 &&
            proc_identity_cgroup_from(cg, f.cgroup, sizeof(f.cgroup)) < 0)
                f.cgroup[0] = '\0';

        /* The parent chain, so that whatever pctld started is recognised at any depth. */
        while (ppid > 0 && f.n_ancestors < PROCGUARD_MAX_ANCESTORS) {
                f.ancestors[f.n_ancestors++] = ppid;
                if (ppid == 1 || stat_fields(ppid, &ppid, NULL) < 0)
                        break;
        }
        *out = f;
        return 0;
}

bool procguard_systemd_cgroup(const char *cgroup)
{
        const char *last = strrchr(cgroup, '/');

        last = last ? last + 1 : cgroup;
        return !strcmp(last, "init.scope") || fnmatch("systemd-*.service", last, 0) == 0;
}

int procguard_judge(const struct proc_facts *f, pid_t self, char *why, size_t why_size)
{
        if (f->pid == 1) {
                snprintf(why, why_size, "pid 1 is init (%s): pctld never manages it", f->comm);
                return -EPERM;
        }
        if (f->kthread) {
                snprintf(why, why_size, "pid %d (%s) is a kernel thread: pctld never manages one",
                         (int)f->pid, f->comm);
                return -EPERM;
        }
        if (f->tgid != f->pid) {
                snprintf(why, why_size,
                         "pid %d is a thread of process %d (%s): pctld manages whole processes, "
                         "name %d instead",
                         (int)f->pid, (int)f->tgid, f->comm, (int)f->tgid);
                return -EPERM;
        }
        if (f->pid == self) {
                snprintf(why, why_size, "pid %d is pctld itself: it never manages itself",
                         (int)f->pid);
                return -EPERM;
        }
        for (unsigned i = 0; i < f->n_ancestors; i++) {
                if (f->ancestors[i] == self) {
                        snprintf(why, why_size,
                                 "pid %d (%s) was started by pctld (pid %d): pctld never "
                                 "manages its own children",
                                 (int)f->pid, f->comm, (int)self);
                        return -EPERM;
                }
        }
        if (f->runs_pctld) {
                snprintf(why, why_size, "pid %d (%s) is another pctld: not managed", (int)f->pid,
                         f->comm);
                return -EPERM;
        }
        if (f->cgroup[0] && procguard_systemd_cgroup(f->cgroup)) {
                char cg[sizeof(f->cgroup)];

                strescape(cg, sizeof(cg), f->cgroup, strlen(f->cgroup));
                snprintf(why, why_size,
                         "pid %d (%s) runs in %s, which systemd runs for itself: not managed",
                         (int)f->pid, f->comm, cg);
                return -EPERM;
        }
        return 0;
}

int procguard_check(pid_t pid, char *why, size_t why_size)
{
        char self_exe[4096];
        struct proc_facts f;
        ssize_t n;
        int r;

        /* Our own executable, unprefixed: this is the process that runs, not a test tree's. */
        n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
        self_exe[n > 0 ? n : 0] = '\0';
        r = proc_facts_read(pid, self_exe, &f);
        if (r == -ESRCH) {
                snprintf(why, why_size, "no process with pid %d", (int)pid);
                return r;
        }
        if (r < 0) {
                snprintf(why, why_size, "cannot read /proc/%d: %s", (int)pid, strerror(-r));
                return r;
        }
        return procguard_judge(&f, getpid(), why, why_size);
}
