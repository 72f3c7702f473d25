#include "pctl/state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pctl/util.h"

#define STATE_MAGIC "pctl-actuators 1"

struct state_record {
        char dir[STATE_PATH_MAX];
        int lock_fd;
        struct state_entry *entries;
        size_t n, cap;
};

static int mkdir_p(const char *path)
{
        char buf[STATE_PATH_MAX];

        if (strscpy(buf, path, sizeof(buf)) < 0)
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static bool path_is_clean(const char *p)
{
        if (!*p)
                return false;
        for (; *p; p++)
                if (*p == ' ' || *p == '\t' || *p == '\n')
                        return false;
        return true;
}

int state_record_open(const char *dir, struct state_record **out)
{
        char path[STATE_PATH_MAX + 32];
        struct state_record *r;
        int fd, err;

        if (!dir || dir[0] != '/')
                return -EINVAL; /* relative state dirs would move with the cwd */
        err = mkdir_p(dir);
        if (err < 0)
                return err;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, STATE_LOCK_FILE) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                err = errno == EWOULDBLOCK ? -EBUSY : -errno;
                close(fd);
                return err;
        }
        r = calloc(1, sizeof(*r));
        if (!r) {
                close(fd);
                return -ENOMEM;
        }
        strscpy(r->dir, dir, sizeof(r->dir));
        r->lock_fd = fd;
        *out = r;
        return 0;
}

void state_record_close(struct state_record *r)
{
        if (!r)
                return;
        if (r->lock_fd >= 0)
                close(r->lock_fd); /* drops the flock */
        free(r->entries);
        free(r);
}

size_t state_record_count(const struct state_record *r)
{
        return r->n;
}

int state_entry_format(const struct state_entry *e, char *buf, size_t size)
{
        char mask[CPUMASK_LIST_MAX];
        int n;

        if (!path_is_clean(e->path))
                return -EINVAL;
        switch (e->kind) {
        case STATE_DIR:
                n = snprintf(buf, size, "dir %s", e->path);
                break;
        case STATE_TASK:
                if (cpumask_empty(&e->mask) || cpumask_format(&e->mask, mask, sizeof(mask)) < 0)
                        return -EINVAL;
                n = snprintf(buf, size, "task %d %d %llu %s %s", (int)e->pid, (int)e->tid,
                             e->start_ticks, e->path, mask);
                break;
        case STATE_UNIT:
                if (cpumask_empty(&e->mask))
                        strcpy(mask, "-");
                else if (cpumask_format(&e->mask, mask, sizeof(mask)) < 0)
                        return -EINVAL;
                n = snprintf(buf, size, "unit %s %s", e->path, mask);
                break;
        case STATE_FREQ:
                if (!path_is_clean(e->governor))
                        return -EINVAL;
                n = snprintf(buf, size, "freq %s %s %u %u", e->path, e->governor, e->min_khz,
                             e->max_khz);
                break;
        default:
                return -EINVAL;
        }
        if (n < 0 || (size_t)n >= size)
                return -ENOBUFS;
        return 0;
}

/* Splits the next white-space separated word off *s. */
static char *next_word(char **s)
{
        char *p = *s, *w;

        while (*p == ' ' || *p == '\t')
                p++;
        if (!*p)
                return NULL;
        w = p;
        while (*p && *p != ' ' && *p != '\t')
                p++;
        if (*p)
                *p++ = '\0';
        *s = p;
        return w;
}

int state_entry_parse(const char *line, struct state_entry *out)
{
        char buf[STATE_PATH_MAX + CPUMASK_LIST_MAX + 128];
        char *s = buf, *w[6] = {0};
        struct state_entry e = {0};
        unsigned n = 0;
        int v;
        uint64_t u;

        if (strscpy(buf, line, sizeof(buf)) < 0)
                return -EINVAL;
        while (n < ARRAY_SIZE(w) && (w[n] = next_word(&s)))
                n++;
        if (next_word(&s) || n < 2)
                return -EINVAL;
        if (!strcmp(w[0], "unit") && n == 3) {
                /* A unit name, not a path: no '/' in it. */
                if (strscpy(e.path, w[1], sizeof(e.path)) < 0 || strchr(e.path, '/'))
                        return -EINVAL;
                e.kind = STATE_UNIT;
                if (strcmp(w[2], "-") && (cpumask_parse(w[2], &e.mask) < 0 || cpumask_empty(&e.mask)))
                        return -EINVAL;
                *out = e;
                return 0;
        }
        if (strcmp(w[0], "task") && (strscpy(e.path, w[1], sizeof(e.path)) < 0 || e.path[0] != '/'))
                return -EINVAL;
        if (!strcmp(w[0], "dir") && n == 2) {
                e.kind = STATE_DIR;
        } else if (!strcmp(w[0], "task") && n == 6) {
                e.kind = STATE_TASK;
                if (parse_int(w[1], &v) < 0 || v <= 0)
                        return -EINVAL;
                e.pid = v;
                if (parse_int(w[2], &v) < 0 || v <= 0)
                        return -EINVAL;
                e.tid = v;
                if (parse_u64(w[3], &u) < 0)
                        return -EINVAL;
                e.start_ticks = u;
                if (strscpy(e.path, w[4], sizeof(e.path)) < 0 ||
                    (strcmp(e.path, "-") && e.path[0] != '/'))
                        return -EINVAL;
                if (cpumask_parse(w[5], &e.mask) < 0 || cpumask_empty(&e.mask))
                        return -EINVAL;
        } else if (!strcmp(w[0], "freq") && n == 5) {
                e.kind = STATE_FREQ;
                if (strscpy(e.governor, w[2], sizeof(e.governor)) < 0)
                        return -EINVAL;
                if (parse_uint(w[3], &e.min_khz) < 0 || parse_uint(w[4], &e.max_khz) < 0)
                        return -EINVAL;
        } else {
                return -EINVAL;
        }
        *out = e;
        return 0;
}

int state_record_load(struct state_record *r, struct state_entry **entries, size_t *n,
                      unsigned *bad_line)
{
        char path[STATE_PATH_MAX + 32];
        char line[STATE_PATH_MAX + CPUMASK_LIST_MAX + 128];
        struct state_entry *list = NULL;
        size_t count = 0, cap = 0;
        unsigned lineno = 0;
        FILE *f;
        int err = 0;

        snprintf(path, sizeof(path), "%s/%s", r->dir, STATE_RECORD_FILE);
        f = fopen(path, "re");
        if (!f) {
                if (errno != ENOENT)
                        return -errno;
                *entries = NULL;
                *n = 0;
                return 0;
        }
        while (fgets(line, sizeof(line), f)) {
                struct state_entry e;
                char *s;

                lineno++;
                s = strstrip(line);
                if (lineno == 1) {
                        if (strcmp(s, STATE_MAGIC)) {
                                err = -EBADMSG;
                                break;
                        }
                        continue;
                }
                if (!*s || *s == '#')
                        continue;
                if (state_entry_parse(s, &e) < 0) {
                        err = -EBADMSG;
                        break;
                }
                if (count == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        struct state_entry *nl = realloc(list, ncap * sizeof(*nl));

                        if (!nl) {
                                err = -ENOMEM;
                                break;
                        }
                        list = nl;
                        cap = ncap;
                }
                list[count++] = e;
        }
        fclose(f);
        if (err < 0) {
                free(list);
                if (bad_line)
                        *bad_line = lineno;
                return err;
        }
        *entries = list;
        *n = count;
        return 0;
}

static bool same_identity(const struct state_entry *a, const struct state_entry *b)
{
        if (a->kind != b->kind)
                return false;
        if (a->kind == STATE_TASK)
                return a->pid == b->pid && a->tid == b->tid;
        return !strcmp(a->path, b->path);
}

int state_record_add(struct state_record *r, const struct state_entry *e)
{
        char line[STATE_PATH_MAX + CPUMASK_LIST_MAX + 128];
        int err = state_entry_format(e, line, sizeof(line));

        if (err < 0)
                return err;
        for (size_t i = 0; i < r->n; i++) {
                if (same_identity(&r->entries[i], e)) {
                        /* The first record of a thing is its original state: keep it. */
                        return 0;
                }
        }
        if (r->n == r->cap) {
                size_t ncap = r->cap ? r->cap * 2 : 16;
                struct state_entry *nl = realloc(r->entries, ncap * sizeof(*nl));

                if (!nl)
                        return -ENOMEM;
                r->entries = nl;
                r->cap = ncap;
        }
        r->entries[r->n++] = *e;
        return 0;
}

void state_record_remove(struct state_record *r, const struct state_entry *e)
{
        for (size_t i = 0; i < r->n; i++) {
                if (same_identity(&r->entries[i], e)) {
                        memmove(&r->entries[i], &r->entries[i + 1],
                                (r->n - i - 1) * sizeof(*r->entries));
                        r->n--;
                        return;
                }
        }
}

static int write_all(int fd, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t w = write(fd, buf, len);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += w;
                len -= (size_t)w;
        }
        return 0;
}

int state_record_commit(struct state_record *r)
{
        char path[STATE_PATH_MAX + 32], tmp[STATE_PATH_MAX + 32];
        char line[STATE_PATH_MAX + CPUMASK_LIST_MAX + 128];
        _cleanup_close_ int dir_fd = -1;
        int fd, err = 0;

        snprintf(path, sizeof(path), "%s/%s", r->dir, STATE_RECORD_FILE);
        snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", r->dir, STATE_RECORD_FILE);
        if (r->n == 0) {
                if (unlink(path) < 0 && errno != ENOENT)
                        return -errno;
                return 0;
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        err = write_all(fd, STATE_MAGIC "\n", strlen(STATE_MAGIC) + 1);
        for (size_t i = 0; err == 0 && i < r->n; i++) {
                err = state_entry_format(&r->entries[i], line, sizeof(line));
                if (err == 0) {
                        strcat(line, "\n");
                        err = write_all(fd, line, strlen(line));
                }
        }
        /* The record must be on disk before the change it describes is made. */
        if (err == 0 && fsync(fd) < 0)
                err = -errno;
        if (close(fd) < 0 && err == 0)
                err = -errno;
        if (err == 0 && rename(tmp, path) < 0)
                err = -errno;
        if (err < 0) {
                unlink(tmp);
                return err;
        }
        dir_fd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd >= 0)
                fsync(dir_fd); /* the rename itself; /run is tmpfs, where this is a no-op */
        return 0;
}
