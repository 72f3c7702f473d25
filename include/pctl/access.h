/* Who may make pctld act on a process: root always; another user only on their own processes,
 * and only where pctl.conf's [daemon] users lets them (all, the members of a group, or none,
 * the default). A policy rule adopts only what its match_user names, else root's processes and
 * those of the users [daemon] users lets act. The judgements are pure; the readers of /proc
 * are beside them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pctl/config.h"
#include "pctl/policy.h"

/* The peer of a request, as SO_PEERCRED and SO_PEERGROUPS say. */
struct access_peer {
        uid_t uid;
        gid_t gid;
        const gid_t *groups; /* supplementary groups */
        size_t n_groups;
};

/* Pure: whether `users` ("all", "none" or a group name, pctl.conf's [daemon] users) lets
 * the peer act on their own processes. group_gid is the gid of that group, (gid_t)-1 when it
 * does not exist or users is all/none. Root may always. 0, or -EPERM with why saying what
 * refused (the setting, and the uid). verb names the request ("adopt", "release"). */
int access_may_act(const char *users, gid_t group_gid, const struct access_peer *peer,
                   const char *verb, char *why, size_t why_size);

/* Whether a process of uid is one [daemon] users lets act, for rules: root's always; a group
 * is judged by the user's groups (n_groups of them, primary first). Pure. */
bool access_user_allowed(const char *users, gid_t group_gid, uid_t uid, const gid_t *groups,
                         size_t n_groups);

/* The gid of group name (NSS). -ENOENT when there is none. */
int access_group_gid(const char *name, gid_t *out);

/* Pure: the four ids (real, effective, saved, file system) of a "Uid:" or "Gid:" line of a
 * /proc/PID/status text. -ENODATA when the line is missing, -EINVAL when it is malformed. */
int proc_status_ids(const char *text, size_t len, const char *key, unsigned ids[4]);

/* Pure: the groups of a "Groups:" line of a /proc/PID/status text, up to max of them, into
 * out; how many. A line that is absent or empty is 0 groups; what is not a number ends it. */
size_t proc_status_groups(const char *text, size_t len, gid_t *out, size_t max);

/* Pure: whether a rule of pol may adopt the process id, with of_policy apps its rules have
 * adopted now and by_rules adopted by every rule. 0; -EPERM when the user is not one the rule
 * may take (no match_user: only root and [daemon] users); -EUSERS past the policy's max_apps
 * or [daemon] max_rule_apps. why says which. */
int access_rule_admits(const struct policy *pol, const struct proc_identity *id, const char *users,
                       gid_t users_gid, unsigned of_policy, unsigned by_rules,
                       unsigned max_rule_apps, char *why, size_t why_size);

/* Pure: whether uid, with handed apps handed over on request now, may hand over one more
 * under max_user_apps (pctl.conf's [daemon] max_user_apps; UINT_MAX: no cap). 0, or -EUSERS
 * with why naming the cap. */
int access_user_admits(uid_t uid, unsigned handed, unsigned max_user_apps, char *why,
                       size_t why_size);

/* The real uid of process pid into *out. -ESRCH when it is gone, -EIO when its status has no
 * readable Uid line, else what reading /proc said. */
int access_proc_uid(pid_t pid, uid_t *out);

/* 0 when every uid of process pid (real, effective, saved, fs) is uid: a process another user
 * has a hand in (setuid, or changed ids) is not the caller's. -EPERM with why naming the owner,
 * -ESRCH when the process is gone. Reads /proc through the fsio root. */
int access_check_owner(pid_t pid, uid_t uid, char *why, size_t why_size);
