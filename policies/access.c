/* Who may make pctld act on which process (include/pctl/access.h). */
#include "pctl/access.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/fsio.h"
#include "pctl/util.h"

static bool in_groups(gid_t gid, const gid_t *groups, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (groups[i] == gid)
                        return true;
        return false;
}

int access_may_act(const char *users, gid_t group_gid, const struct access_peer *peer,
                   const char *verb, char *why, size_t why_size)
{
        if (peer->uid == 0 || strcmp(users, "all") == 0)
                return 0;
        if (strcmp(users, "none") == 0) {
                snprintf(why, why_size,
                         "'%s' needs root: pctl.conf's [daemon] users = none lets only root make "
                         "pctld act (you are uid %u)",
                         verb, (unsigned)peer->uid);
                return -EPERM;
        }
        if (group_gid != (gid_t)-1 &&
            (peer->gid == group_gid || in_groups(group_gid, peer->groups, peer->n_groups)))
                return 0;
        if (group_gid == (gid_t)-1)
                snprintf(why, why_size,
                         "'%s' needs root: pctl.conf's [daemon] users = %s names no group of "
                         "this system (you are uid %u)",
                         verb, users, (unsigned)peer->uid);
        else
                snprintf(why, why_size,
                         "'%s' needs root or group %s (pctl.conf's [daemon] users); you are uid "
                         "%u, not in it",
                         verb, users, (unsigned)peer->uid);
        return -EPERM;
}

bool access_user_allowed(const char *users, gid_t group_gid, uid_t uid, const gid_t *groups,
                         size_t n_groups)
{
        if (uid == 0 || strcmp(users, "all") == 0)
                return true;
        if (strcmp(users, "none") == 0 || group_gid == (gid_t)-1)
                return false;
        return in_groups(group_gid, groups, n_groups);
}

int proc_status_ids(const char *text, size_t len, const char *key, unsigned ids[4])
{
        size_t klen = strlen(key);
        const char *p = text, *end = text + len;

        /* The line starts the text or follows a newline; the key is whole ("Uid:"). */
        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t)(end - p));
                const char *q;
                unsigned v[4];

                if (!eol)
                        eol = end;
                if ((size_t)(eol - p) > klen && memcmp(p, key, klen) == 0 && p[klen] == ':') {
                        q = p + klen + 1;
                        for (int i = 0; i < 4; i++) {
                                unsigned long x = 0;
                                const char *d;

                                while (q < eol && (*q == ' ' || *q == '\t'))
                                        q++;
                                d = q;
                                while (q < eol && *q >= '0' && *q <= '9' && x <= 0xffffffffUL) {
                                        x = x * 10 + (unsigned long)(*q - '0');
                                        q++;
                                }
                                if (q == d || x > 0xfffffffeUL ||
                                    (q < eol && *q != ' ' && *q != '\t'))
                                        return -EINVAL;
                                v[i] = (unsigned)x;
                        }
                        while (q < eol && (*q == ' ' || *q == '\t'))
                                q++;
                        if (q != eol)
                                return -EINVAL;
                        memcpy(ids, v, sizeof(v));
                        return 0;
                }
                p = eol + 1;
        }
        return -ENODATA;
}

/* The four uids of process pid (real, effective, saved, fs); why says what failed. */
static int proc_uids(pid_t pid, unsigned ids[4], char *why, size_t why_size)
{
        char path[64], text[8192];
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        n = fs_read(path, text, sizeof(text));
        if (n == -ENOENT || n == -ESRCH) {
                snprintf(why, why_size, "no process with pid %d", (int)pid);
                return -ESRCH;
        }
        if (n < 0) {
                snprintf(why, why_size, "cannot read /proc/%d/status: %s", (int)pid,
                         strerror((int)-n));
                return (int)n;
        }
        if (proc_status_ids(text, (size_t)n, "Uid", ids) < 0) {
                snprintf(why, why_size, "/proc/%d/status has no readable Uid line", (int)pid);
                return -EIO;
        }
        return 0;
}

int access_proc_uid(pid_t pid, uid_t *out)
{
        unsigned ids[4];
        char why[128];
        int r = proc_uids(pid, ids, why, sizeof(why));

        if (r < 0)
                return r;
        *out = (uid_t)ids[0];
        return 0;
}

int access_check_owner(pid_t pid, uid_t uid, char *why, size_t why_size)
{
        unsigned ids[4];
        int r = proc_uids(pid, ids, why, why_size);

        if (r < 0)
                return r;
        for (int i = 0; i < 4; i++)
                if (ids[i] != (unsigned)uid) {
                        snprintf(why, why_size,
                                 "pid %d is not yours: its uids are %u %u %u %u (real, effective, "
                                 "saved, fs), you are uid %u",
                                 (int)pid, ids[0], ids[1], ids[2], ids[3], (unsigned)uid);
                        return -EPERM;
                }
        return 0;
}

int access_group_gid(const char *name, gid_t *out)
{
        struct group gr, *res = NULL;
        char buf[4096];
        int r = getgrnam_r(name, &gr, buf, sizeof(buf), &res);

        if (r != 0)
                return -r;
        if (!res)
                return -ENOENT;
        *out = gr.gr_gid;
        return 0;
}

size_t proc_status_groups(const char *text, size_t len, gid_t *out, size_t max)
{
        const char *p = text, *end = text + len;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t)(end - p));
                size_t n = 0;

                if (!eol)
                        eol = end;
                if ((size_t)(eol - p) >= 7 && memcmp(p, "Groups:", 7) == 0) {
                        for (const char *q = p + 7; q < eol && n < max;) {
                                unsigned long x = 0;
                                const char *d;

                                while (q < eol && (*q == ' ' || *q == '\t'))
                                        q++;
                                d = q;
                                while (q < eol && *q >= '0' && *q <= '9' && x <= 0xffffffffUL)
                                        x = x * 10 + (unsigned long)(*q++ - '0');
                                if (q == d || x > 0xfffffffeUL)
                                        break; /* the end, or what is not a group */
                                out[n++] = (gid_t)x;
                        }
                        return n;
                }
                p = eol + 1;
        }
        return 0;
}

int access_user_admits(uid_t uid, unsigned handed, unsigned max_user_apps, char *why,
                       size_t why_size)
{
        if (handed < max_user_apps)
                return 0;
        snprintf(why, why_size,
                 "uid %u has %u apps handed over to pctld, pctl.conf's [daemon] max_user_apps "
                 "(%u); release one or wait for one to end",
                 (unsigned)uid, handed, max_user_apps);
        return -EUSERS;
}

int access_rule_admits(const struct policy *pol, const struct proc_identity *id, const char *users,
                       gid_t users_gid, unsigned of_policy, unsigned by_rules,
                       unsigned max_rule_apps, char *why, size_t why_size)
{
        /* A rule that names users was written for them; else root's, and [daemon] users'. */
        if (!pol->match[POLICY_MATCH_USER].n && id->uid != 0) {
                gid_t all[33];
                size_t n = 0;

                all[n++] = id->gid;
                for (size_t i = 0; i < id->n_groups && n < ARRAY_SIZE(all); i++)
                        all[n++] = id->groups[i];
                if (!access_user_allowed(users, users_gid, id->uid, all, n)) {
                        snprintf(why, why_size,
                                 "uid %u is not root, the policy has no match_user, and "
                                 "pctl.conf's [daemon] users = %s does not let that user in",
                                 (unsigned)id->uid, users);
                        return -EPERM;
                }
        }
        if (of_policy >= pol->max_apps) {
                snprintf(why, why_size, "the policy's rules have adopted %u apps, its max_apps",
                         of_policy);
                return -EUSERS;
        }
        if (by_rules >= max_rule_apps) {
                snprintf(why, why_size,
                         "rules have adopted %u apps, pctl.conf's [daemon] max_rule_apps",
                         by_rules);
                return -EUSERS;
        }
        return 0;
}
