/* Which processes pctld must never manage, and why: init, pctld itself and what it started,
 * another pctld, kernel threads, a thread in place of its process, and the units systemd runs
 * for itself. Both `adopt` and policy rules go through here. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROCGUARD_MAX_ANCESTORS 64

/* What /proc says about a process, as the judgement needs it. */
struct proc_facts {
        pid_t pid;
        pid_t tgid;       /* != pid: pid is a thread of tgid */
        bool kthread;     /* PF_KTHREAD in /proc/PID/stat */
        bool runs_pctld;  /* its executable is the asking process's, or is named pctld */
        char comm[32];    /* printable */
        char cgroup[512]; /* systemd's view: the v2 path, else name=systemd's; "" unknown */
        unsigned n_ancestors;
        pid_t ancestors[PROCGUARD_MAX_ANCESTORS]; /* parent first, up to and without 0 */
};

/* Reads the facts of pid from /proc through the fsio root; self_exe is the asking process's
 * executable path ("" when unknown; NULL skips reading the executable). -ESRCH when the
 * process is gone. */
int proc_facts_read(pid_t pid, const char *self_exe, struct proc_facts *out);

/* Pure: 0 when pid may be managed by the pctld whose PID is self; else -EPERM with why saying
 * what the process is (and, for a thread, which process to name instead). */
int procguard_judge(const struct proc_facts *f, pid_t self, char *why, size_t why_size);

/* proc_facts_read + procguard_judge for the calling process. -ESRCH with why when pid is gone. */
int procguard_check(pid_t pid, char *why, size_t why_size);

/* True for the cgroups systemd runs its own machinery in: init.scope (PID 1 or a user manager)
 * and systemd-*.service (journald, udevd, logind, ...). */
bool procguard_systemd_cgroup(const char *cgroup);
