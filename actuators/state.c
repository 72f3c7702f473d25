#define _GNU_SOURCE /* renameat2 */
#include "pctl/state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pctl/util.h"

#define STATE_MAGIC "pctl-actuators 1"

/* A line of the file that could not be read: its bytes, written back by every commit. */
struct kept_line {
        char *text;
        size_t len;
};

struct state_record {
        char dir[STATE_PATH_MAX];
        int lock_fd;
        struct state_entry *entries;
        size_t n, cap;
        struct kept_line *kept;
        size_t n_kept, cap_kept;
        struct state_problem *problems; /* the first STATE_PROBLEMS_LISTED */
        size_t n_problems, n_listed;
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

static int record_read(struct state_record *r);

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
        /* What the file holds is in memory from now on, so that no commit can drop it. */
        err = record_read(r);
        if (err < 0) {
                state_record_close(r);
                return err;
        }
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
        for (size_t i = 0; i < r->n_kept; i++)
                free(r->kept[i].text);
        free(r->kept);
        free(r->problems);
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

static int bad(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t why_size, const char *fmt, ...)
{
        va_list ap;

        if (why && why_size) {
                va_start(ap, fmt);
                vsnprintf(why, why_size, fmt, ap);
                va_end(ap);
                /* It quotes the line: no control byte of it reaches a log or a terminal. */
                for (char *c = why; *c; c++)
                        if ((unsigned char)*c < 0x20 || *c == 0x7f)
                                *c = '?';
        }
        return -EINVAL;
}

/* Each kind and the number of words its line has, the kind's own word included. */
static const struct {
        const char *word;
        enum state_kind kind;
        unsigned n_words;
        const char *fields;
} kinds[] = {
    {"dir", STATE_DIR, 2, "PATH"},
    {"task", STATE_TASK, 6, "PID TID START ORIGIN MASK"},
    {"freq", STATE_FREQ, 5, "POLICY GOVERNOR MIN_KHZ MAX_KHZ"},
    {"unit", STATE_UNIT, 3, "NAME ALLOWED"},
};

int state_entry_parse(const char *line, struct state_entry *out, char *why, size_t why_size)
{
        char buf[STATE_PATH_MAX + CPUMASK_LIST_MAX + 128];
        char *s = buf, *w[7] = {0};
        struct state_entry e = {0};
        unsigned n = 0, k;
        int v;
        uint64_t u;

        if (strscpy(buf, line, sizeof(buf)) < 0)
                return bad(why, why_size, "longer than %zu bytes", sizeof(buf) - 1);
        while (n < ARRAY_SIZE(w) && (w[n] = next_word(&s)))
                n++;
        if (n == 0)
                return bad(why, why_size, "empty");
        for (k = 0; k < ARRAY_SIZE(kinds) && strcmp(w[0], kinds[k].word); k++)
                ;
        if (k == ARRAY_SIZE(kinds))
                return bad(why, why_size, "unknown kind '%.32s' (dir, task, freq or unit)", w[0]);
        if (n != kinds[k].n_words)
                return bad(why, why_size, "'%s' takes %u fields (%s), not %s%u", w[0],
                           kinds[k].n_words - 1, kinds[k].fields,
                           n == ARRAY_SIZE(w) ? "at least " : "", n - 1);
        e.kind = kinds[k].kind;
        switch (e.kind) {
        case STATE_DIR:
        case STATE_FREQ:
                if (strscpy(e.path, w[1], sizeof(e.path)) < 0 || e.path[0] != '/')
                        return bad(why, why_size, "path '%.64s' is not absolute or too long", w[1]);
                if (e.kind == STATE_DIR)
                        break;
                if (strscpy(e.governor, w[2], sizeof(e.governor)) < 0)
                        return bad(why, why_size, "governor '%.40s' is too long", w[2]);
                if (parse_uint(w[3], &e.min_khz) < 0 || parse_uint(w[4], &e.max_khz) < 0)
                        return bad(why, why_size, "'%.24s %.24s' are not two kHz numbers", w[3],
                                   w[4]);
                break;
        case STATE_TASK:
                if (parse_int(w[1], &v) < 0 || v <= 0)
                        return bad(why, why_size, "PID '%.24s' is not a positive number", w[1]);
                e.pid = v;
                if (parse_int(w[2], &v) < 0 || v <= 0)
                        return bad(why, why_size, "TID '%.24s' is not a positive number", w[2]);
                e.tid = v;
                if (parse_u64(w[3], &u) < 0)
                        return bad(why, why_size, "start time '%.24s' is not a number", w[3]);
                e.start_ticks = u;
                if (strscpy(e.path, w[4], sizeof(e.path)) < 0 ||
                    (strcmp(e.path, "-") && e.path[0] != '/'))
                        return bad(why, why_size, "origin '%.64s' is not '-' or an absolute path",
                                   w[4]);
                if (cpumask_parse(w[5], &e.mask) < 0 || cpumask_empty(&e.mask))
                        return bad(why, why_size, "'%.64s' is not a CPU list like 0-3,8", w[5]);
                break;
        case STATE_UNIT:
                /* A unit name, not a path: no '/' in it. */
                if (strscpy(e.path, w[1], sizeof(e.path)) < 0 || strchr(e.path, '/'))
                        return bad(why, why_size, "'%.64s' is not a unit name", w[1]);
                if (strcmp(w[2], "-") &&
                    (cpumask_parse(w[2], &e.mask) < 0 || cpumask_empty(&e.mask)))
                        return bad(why, why_size, "'%.64s' is not '-' or a CPU list", w[2]);
                break;
        }
        *out = e;
        return 0;
}

static int add_problem(struct state_record *r, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int add_problem(struct state_record *r, unsigned line, const char *fmt, ...)
{
        struct state_problem *p;
        va_list ap;

        r->n_problems++;
        if (r->n_listed == STATE_PROBLEMS_LISTED)
                return 0; /* counted; a file of garbage must not cost memory per line */
        if (!r->problems) {
                r->problems = calloc(STATE_PROBLEMS_LISTED, sizeof(*r->problems));
                if (!r->problems)
                        return -ENOMEM;
        }
        p = &r->problems[r->n_listed++];
        p->line = line;
        va_start(ap, fmt);
        vsnprintf(p->why, sizeof(p->why), fmt, ap);
        va_end(ap);
        return 0;
}

static int keep_line(struct state_record *r, const char *text, size_t len)
{
        char *copy;

        if (r->n_kept == r->cap_kept) {
                size_t ncap = r->cap_kept ? r->cap_kept * 2 : 4;
                struct kept_line *nk = realloc(r->kept, ncap * sizeof(*nk));

                if (!nk)
                        return -ENOMEM;
                r->kept = nk;
                r->cap_kept = ncap;
        }
        copy = malloc(len + 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, text, len);
        copy[len] = '\n';
        r->kept[r->n_kept++] = (struct kept_line){.text = copy, .len = len + 1};
        return 0;
}

/* A line that cannot be read: said why, and kept for every later commit. */
static int skip_line(struct state_record *r, unsigned lineno, const char *text, size_t len,
                     const char *why)
{
        int err = add_problem(r, lineno, "%s", why);

        if (err == 0 && r->n_listed == r->n_problems) {
                char *t = r->problems[r->n_listed - 1].text;
                size_t n = len < STATE_PROBLEM_TEXT - 1 ? len : STATE_PROBLEM_TEXT - 1;

                /* Its beginning, to find it by: the line's number changes with every commit. */
                memcpy(t, text, n);
                t[n] = '\0';
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
                                t[i] = '?';
        }
        return err < 0 ? err : keep_line(r, text, len);
}

/* A file that is not a record of this format (another version, or garbage) is not ours to
 * rewrite: it is renamed aside, whole, under a name no earlier one has. */
static int set_aside(const char *path, char *aside, size_t size)
{
        for (unsigned i = 0; i < 100; i++) {
                int n = i ? snprintf(aside, size, "%s.unread.%u", path, i)
                          : snprintf(aside, size, "%s.unread", path);

                if (n < 0 || (size_t)n >= size)
                        return -ENAMETOOLONG;
                if (renameat2(AT_FDCWD, path, AT_FDCWD, aside, RENAME_NOREPLACE) == 0)
                        return 0;
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

/* Reads the file into memory: every line that parses is an entry, every other line is kept
 * (and said why), so that what cannot be restored is never lost. */
static int record_read(struct state_record *r)
{
        char path[STATE_PATH_MAX + 32], aside[STATE_PATH_MAX + 64], why[STATE_PROBLEM_MAX];
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        unsigned lineno = 0;
        ssize_t len;
        FILE *f;
        int err = 0;

        snprintf(path, sizeof(path), "%s/%s", r->dir, STATE_RECORD_FILE);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        errno = 0;
        while (err == 0 && (len = getline(&line, &size, f)) >= 0) {
                struct state_entry e;
                bool has_nul;
                char *s;

                lineno++;
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = '\0';
                has_nul = strlen(line) != (size_t)len;
                if (has_nul && lineno > 1) {
                        err = skip_line(r, lineno, line, (size_t)len, "holds a NUL byte");
                        continue;
                }
                s = strstrip(line);
                if (lineno == 1) {
                        if (!has_nul && !strcmp(s, STATE_MAGIC))
                                continue;
                        fclose(f);
                        err = set_aside(path, aside, sizeof(aside));
                        if (err < 0)
                                return err;
                        return add_problem(r, 1,
                                           "the first line is not '" STATE_MAGIC
                                           "': nothing in the file was read; set aside as %s",
                                           aside);
                }
                if (!*s || *s == '#')
                        continue;
                if (state_entry_parse(s, &e, why, sizeof(why)) < 0) {
                        err = skip_line(r, lineno, s, strlen(s), why);
                        continue;
                }
                err = state_record_add(r, &e);
                if (err < 0 && err != -ENOMEM)
                        err = skip_line(r, lineno, s, strlen(s), "cannot be written back");
        }
        if (err == 0 && ferror(f))
                err = errno ? -errno : -EIO;
        fclose(f);
        return err;
}

const struct state_problem *state_record_problems(const struct state_record *r, size_t *n_listed,
                                                  size_t *n_all)
{
        *n_listed = r->n_listed;
        if (n_all)
                *n_all = r->n_problems;
        return r->problems;
}
size_t state_record_kept(const struct state_record *r)
{
        return r->n_kept;
}

int state_record_take(struct state_record *r, struct state_entry **entries, size_t *n)
{
        *entries = r->n ? r->entries : NULL;
        *n = r->n;
        if (!r->n)
                free(r->entries);
        r->entries = NULL;
        r->n = r->cap = 0;
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
        /* Removed only when it holds nothing: no entry, and no line it could not read. */
        if (r->n == 0 && r->n_kept == 0) {
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
        for (size_t i = 0; err == 0 && i < r->n_kept; i++)
                err = write_all(fd, r->kept[i].text, r->kept[i].len);
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
