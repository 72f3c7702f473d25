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
                                if (q == d || x > 0xfffffffeUL || (q < eol && *q != ' ' && *q != '\t'))
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

int access_check_owner(pid_t pid, uid_t uid, char *why, size_t why_size)
{
        char path[64], text[8192];
        unsigned ids[4];
        ssize_t n;
        int r;

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
        r = proc_status_ids(text, (size_t)n, "Uid", ids);
        if (r < 0) {
                snprintf(why, why_size, "/proc/%d/status has no readable Uid line", (int)pid);
                return -EIO;
        }
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
