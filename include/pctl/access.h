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

/* 0 when every uid of process pid (real, effective, saved, fs) is uid: a process another user
 * has a hand in (setuid, or changed ids) is not the caller's. -EPERM with why naming the owner,
 * -ESRCH when the process is gone. Reads /proc through the fsio root. */
int access_check_owner(pid_t pid, uid_t uid, char *why, size_t why_size);
