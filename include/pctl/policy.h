/* Policy files (/etc/pctl/policies.d/NAME.conf): which apps are managed, and how. Each
 * [policy NAME] section names an objective, bounds and match rules. Keys, types, bounds and
 * defaults live in one table (policies/policy.c).
 *
 * Matching: each match_* key may repeat; the values of one key are alternatives (OR). A policy
 * with several kinds of match keys matches only a process that satisfies every kind (AND). A
 * policy without match keys never matches by itself: it is used by name (`pctl run --policy`).
 * Values are shell globs (fnmatch): match_comm against /proc/PID/comm, match_exe against the
 * executable's path, match_user against the user name or the numeric uid, match_cgroup against
 * the cgroup path, where a pattern also matches everything below it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pctl/config.h"
#include "pctl/objective.h"

enum policy_match_kind {
        POLICY_MATCH_COMM,
        POLICY_MATCH_EXE,
        POLICY_MATCH_USER,
        POLICY_MATCH_CGROUP,
        POLICY_MATCH_KINDS,
};

struct policy_patterns {
        char **v;
        size_t n;
};

/* How the allocator chooses once P is known (docs/allocator.md, "The model-only baseline"). */
enum policy_search {
        POLICY_SEARCH_MEASURED, /* the model proposes, measurements decide (the default) */
        POLICY_SEARCH_MODEL,    /* the model's best, never measured against its neighbours */
};

struct policy {
        char name[CONFIG_NAME_MAX];
        unsigned objective;    /* enum objective_kind */
        unsigned min_cores;    /* >= 1 */
        unsigned max_cores;    /* 0: every allowed core */
        unsigned min_freq_mhz; /* 0: the lowest */
        unsigned max_freq_mhz; /* 0: the highest */
        double max_slowdown;   /* INFINITY: no limit; 0.1 = at most 10% slower than alone */
        double weight;         /* > 0; share when apps compete */
        unsigned max_apps;     /* apps its rules may have adopted at once */
        unsigned search;       /* enum policy_search */
        struct policy_patterns match[POLICY_MATCH_KINDS];
        char file[CONFIG_PATH_MAX]; /* "" for a built-in */
        int lineno;                 /* of the [policy NAME] header */
};

struct policy_set {
        struct policy *v;
        size_t n;
};

/* What a policy can match a process by. */
struct proc_identity {
        pid_t pid;
        char comm[32];
        char exe[CONFIG_PATH_MAX * 4]; /* "" when unreadable (kernel thread, no permission) */
        uid_t uid;                     /* real uid */
        gid_t gid;                     /* real gid */
        gid_t groups[32];              /* supplementary groups (the first 32) */
        size_t n_groups;
        char user[64]; /* "" when the uid has no name */
        char cgroup[CONFIG_PATH_MAX * 4];
};

/* Loads every *.conf of dir in name order. On any problem the whole set is refused: every
 * problem is appended to `problems`, -EINVAL is returned and *out is unchanged (the daemon keeps
 * its last good set). -ENOENT/-EACCES when dir cannot be read. */
int policy_set_load_dir(const char *dir, struct policy_set *out, struct config_problems *problems);
/* One file, for `pctl policy check`. Same contract. */
int policy_set_load_file(const char *path, struct policy_set *out,
                         struct config_problems *problems);
void policy_set_free(struct policy_set *s);

/* The first policy, in file and section order, whose rules all match; NULL if none. */
const struct policy *policy_match(const struct policy_set *s, const struct proc_identity *id);
/* The policy of that name in the set, else a bare objective name (edp, ppw, energy,
 * performance, monitor) as a built-in policy with default bounds; NULL if neither. */
const struct policy *policy_lookup(const struct policy_set *s, const char *name);
/* 0 when name (pctl.conf's default_policy) names a policy of the set, loaded from dir, or a
 * built-in; else -ENOENT and why says so. */
int policy_check_default(const struct policy_set *s, const char *name, const char *dir, char *why,
                         size_t why_size);
/* The built-in policy of an objective. */
const struct policy *policy_builtin(enum objective_kind o);

/* Fills id from /proc/PID through the fsio root. -ESRCH when the process is gone. The exe path
 * and user name may be empty (no permission, kernel thread, uid without a name). */
int proc_identity_read(pid_t pid, struct proc_identity *id);
/* The path of a /proc/PID/cgroup text: the unified (v2) path when it is not "/", else the
 * name=systemd one, else the cpuset one, else the first. -ENODATA when there is none. */
int proc_identity_cgroup_from(const char *cgroup_text, char *buf, size_t size);

/* The table, for documentation and tests (same shape as pctl.conf's). */
bool policy_key_info(size_t i, struct config_key_info *out);
