/* Memory of past runs in one SQLite file (include/pctl/history.h). */
#include "pctl/history.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pctl/util.h"

/* A write that found the file locked, kept for later in the order it came. */
struct history_pending {
        bool is_run;
        struct history_entry entry; /* !is_run; owns its stack_json */
        struct history_key key;     /* is_run */
        struct history_run run;
};

struct history {
        sqlite3 *db;
        char path[512];
        bool read_only;
        bool deferred; /* writes never wait: a locked file queues them (history_set_deferred) */
        struct history_pending *pending;
        size_t n_pending, cap_pending;
        unsigned dropped; /* pending writes given up past HISTORY_PENDING_MAX */
};

/* Schema steps: migrations[v] takes a file at user_version v to v + 1. A new column is a new
 * step here (ALTER TABLE ... ADD COLUMN), never an edit of an old one: old files walk up. */
static const char *const migrations[HISTORY_SCHEMA_VERSION] = {
    "CREATE TABLE apps ("
    " exe TEXT NOT NULL,"
    " policy TEXT NOT NULL,"
    " args_hash TEXT NOT NULL,"
    " calibration TEXT NOT NULL,"
    " objective TEXT NOT NULL,"
    " p REAL,"
    " mem_fraction REAL,"
    " best_cores INTEGER NOT NULL,"
    " best_freq_khz INTEGER NOT NULL,"
    " best_score REAL,"
    " stack_json TEXT,"
    " runs INTEGER NOT NULL,"
    " updated_s INTEGER NOT NULL,"
    " PRIMARY KEY (exe, policy, args_hash, calibration))",
    /* 2: whole runs' instructions at their mean core count, for extra parallel work. */
    "CREATE TABLE runs ("
    " exe TEXT NOT NULL,"
    " policy TEXT NOT NULL,"
    " args_hash TEXT NOT NULL,"
    " calibration TEXT NOT NULL,"
    " instructions REAL NOT NULL,"
    " instructions_err REAL NOT NULL,"
    " cores REAL NOT NULL,"
    " bins TEXT,"
    " updated_s INTEGER NOT NULL);"
    "CREATE INDEX runs_key ON runs (exe, policy, args_hash, calibration)",
    /* 3: how many apps shared the machine when the best configuration was measured; NULL
     * (an entry from before) is not known. */
    "ALTER TABLE apps ADD COLUMN shared_apps INTEGER",
};

#define COLUMNS                                                                                    \
        "exe, policy, args_hash, calibration, objective, p, mem_fraction, best_cores, "            \
        "best_freq_khz, best_score, stack_json, runs, updated_s, shared_apps"

uint64_t history_hash(const void *data, size_t len)
{
        const unsigned char *b = data;
        uint64_t h = 0xcbf29ce484222325ULL;

        for (size_t i = 0; i < len; i++) {
                h ^= b[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}

/* SQLite's result code as an errno, and a message naming the file and what to do. */
static int history_fail(const char *path, sqlite3 *db, int rc, const char *doing, char *err,
                        size_t err_size)
{
        const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);

        switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                snprintf(err, err_size,
                         "history %s is busy: another process holds a lock on it (pctl history, "
                         "sqlite3, a backup, another pctld on the same file): %s skipped",
                         path, doing);
                return -EBUSY;
        case SQLITE_READONLY:
                snprintf(err, err_size, "history %s is read-only: %s skipped", path, doing);
                return -EROFS;
        case SQLITE_NOTADB:
        case SQLITE_CORRUPT:
                snprintf(err, err_size,
                         "history %s is not a SQLite database or is corrupt (%s): move it away "
                         "and a new one is started",
                         path, msg);
                return -EBADMSG;
        case SQLITE_CANTOPEN: {
                int e = db ? sqlite3_system_errno(db) : 0;

                snprintf(err, err_size, "cannot open history %s: %s", path, e ? strerror(e) : msg);
                return e ? -e : -EACCES;
        }
        case SQLITE_FULL:
                snprintf(err, err_size, "history %s: the disk is full: %s skipped", path, doing);
                return -ENOSPC;
        case SQLITE_NOMEM:
                snprintf(err, err_size, "history %s: out of memory: %s skipped", path, doing);
                return -ENOMEM;
        default:
                snprintf(err, err_size, "history %s: %s failed: %s", path, doing, msg);
                return -EIO;
        }
}

static int history_exec(struct history *h, const char *sql, const char *doing, char *err,
                        size_t err_size)
{
        int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);

        return rc == SQLITE_OK ? 0 : history_fail(h->path, h->db, rc, doing, err, err_size);
}

/* One integer from a pragma. */
static int history_pragma_int(struct history *h, const char *sql, int *out, char *err,
                              size_t err_size)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);

        if (rc == SQLITE_OK) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        *out = sqlite3_column_int(st, 0);
                        rc = SQLITE_OK;
                }
        }
        sqlite3_finalize(st);
        return rc == SQLITE_OK ? 0 : history_fail(h->path, h->db, rc, "reading", err, err_size);
}

/* A corrupt page is found by reading: quick_check reads every page (the file is small). */
static int history_check(struct history *h, char *err, size_t err_size)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(h->db, "PRAGMA quick_check", -1, &st, NULL);

        if (rc == SQLITE_OK) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        const char *res = (const char *)sqlite3_column_text(st, 0);

                        if (!res || strcmp(res, "ok") != 0) {
                                snprintf(err, err_size,
                                         "history %s is corrupt (%s): move it away and a new one "
                                         "is started",
                                         h->path, res ? res : "?");
                                sqlite3_finalize(st);
                                return -EBADMSG;
                        }
                        rc = SQLITE_OK;
                }
        }
        sqlite3_finalize(st);
        return rc == SQLITE_OK ? 0 : history_fail(h->path, h->db, rc, "checking", err, err_size);
}

/* Walks the file up to HISTORY_SCHEMA_VERSION in one transaction; another process may have
 * done it meanwhile, so the version is read again inside it. */
static int history_migrate(struct history *h, char *err, size_t err_size)
{
        int version = 0, r;

        r = history_exec(h, "BEGIN IMMEDIATE", "upgrading the schema", err, err_size);
        if (r < 0)
                return r;
        r = history_pragma_int(h, "PRAGMA user_version", &version, err, err_size);
        for (int v = version; r == 0 && v < HISTORY_SCHEMA_VERSION; v++)
                r = history_exec(h, migrations[v], "upgrading the schema", err, err_size);
        if (r == 0 && version < HISTORY_SCHEMA_VERSION) {
                char sql[64];

                snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", HISTORY_SCHEMA_VERSION);
                r = history_exec(h, sql, "upgrading the schema", err, err_size);
        }
        if (r == 0)
                r = history_exec(h, "COMMIT", "upgrading the schema", err, err_size);
        if (r < 0)
                (void)sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

int history_open(const char *path, bool read_only, struct history **out, char *err, size_t err_size)
{
        struct history *h;
        int version = 0, rc, r;

        if (!path || path[0] != '/') {
                snprintf(err, err_size, "history path '%s' is not an absolute path",
                         path ? path : "");
                return -EINVAL;
        }
        if (read_only && access(path, F_OK) < 0) {
                r = -errno;
                snprintf(err, err_size, "no history at %s: %s", path, strerror(errno));
                return r;
        }
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        if (strscpy(h->path, path, sizeof(h->path)) < 0) {
                snprintf(err, err_size, "history path longer than %zu bytes", sizeof(h->path) - 1);
                free(h);
                return -ENAMETOOLONG;
        }
        /* It holds every user's executable paths: root's alone (SQLite gives its journal and
         * WAL the same mode). An older file readable by others is narrowed. */
        if (!read_only) {
                int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                struct stat st;

                if (fd >= 0) {
                        if (fstat(fd, &st) == 0 && (st.st_mode & 077) && st.st_uid == geteuid())
                                (void)fchmod(fd, st.st_mode & 0700);
                        close(fd);
                }
        }
        rc = sqlite3_open_v2(
            path, &h->db,
            read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        if (rc != SQLITE_OK) {
                r = history_fail(path, h->db, rc, "opening", err, err_size);
                goto fail;
        }
        sqlite3_extended_result_codes(h->db, 1);
        sqlite3_busy_timeout(h->db, HISTORY_BUSY_TIMEOUT_MS);
        /* A file SQLite could open only for reading (its permissions, a read-only mount). */
        h->read_only = read_only || sqlite3_db_readonly(h->db, "main") == 1;
        r = history_pragma_int(h, "PRAGMA user_version", &version, err, err_size);
        if (r < 0 && h->read_only && access(path, F_OK) == 0) {
                /* A WAL file where its -wal and -shm cannot be made (a read-only mount, a
                 * copy): nobody can write it there either, so it is read as it stands. */
                char *uri = sqlite3_mprintf("file:%s?immutable=1", path);

                sqlite3_close(h->db);
                h->db = NULL;
                rc =
                    uri ? sqlite3_open_v2(uri, &h->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL)
                        : SQLITE_NOMEM;
                sqlite3_free(uri);
                if (rc != SQLITE_OK) {
                        r = history_fail(path, h->db, rc, "opening", err, err_size);
                        goto fail;
                }
                sqlite3_extended_result_codes(h->db, 1);
                r = history_pragma_int(h, "PRAGMA user_version", &version, err, err_size);
        }
        if (r == 0)
                r = history_check(h, err, err_size);
        if (r < 0)
                goto fail;
        if (version > HISTORY_SCHEMA_VERSION) {
                snprintf(err, err_size,
                         "history %s has schema %d, from a newer pctl (this one knows up to %d): "
                         "not used, left as it is",
                         path, version, HISTORY_SCHEMA_VERSION);
                r = -EPROTONOSUPPORT;
                goto fail;
        }
        if (version < HISTORY_SCHEMA_VERSION) {
                if (h->read_only) {
                        snprintf(err, err_size,
                                 "history %s is read-only and has schema %d, not %d: not used",
                                 path, version, HISTORY_SCHEMA_VERSION);
                        r = read_only && version == 0 ? -ENOENT : -EROFS;
                        goto fail;
                }
                r = history_migrate(h, err, err_size);
                if (r == -EROFS) {
                        /* Writable by permissions, not by the file system (a read-only mount). */
                        snprintf(err, err_size,
                                 "history %s is read-only (cannot create it): not used", path);
                }
                if (r < 0)
                        goto fail;
        }
        /* WAL: a reader (pctl history, a backup) never blocks a write, nor a write a reader.
         * Kept in the file; a file that cannot switch (busy now) stays as it is. */
        if (!h->read_only)
                (void)sqlite3_exec(h->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        *out = h;
        return 0;
fail:
        sqlite3_close(h->db);
        free(h);
        return r;
}

static void pending_clear(struct history_pending *p)
{
        if (!p->is_run)
                history_entry_clear(&p->entry);
}

void history_close(struct history *h)
{
        if (!h)
                return;
        for (size_t i = 0; i < h->n_pending; i++)
                pending_clear(&h->pending[i]);
        free(h->pending);
        sqlite3_close(h->db);
        free(h);
}

void history_set_deferred(struct history *h, bool deferred)
{
        h->deferred = deferred;
        sqlite3_busy_timeout(h->db, deferred ? 0 : HISTORY_BUSY_TIMEOUT_MS);
}

size_t history_pending(const struct history *h)
{
        return h->n_pending;
}

/* Keeps a write that found the file locked. Past HISTORY_PENDING_MAX the oldest goes. */
static int pending_add(struct history *h, const struct history_pending *p, const char *exe,
                       char *err, size_t err_size)
{
        struct history_pending copy = *p;

        if (!p->is_run && p->entry.stack_json) {
                copy.entry.stack_json = strdup(p->entry.stack_json);
                if (!copy.entry.stack_json)
                        return -ENOMEM;
        }
        if (h->n_pending == HISTORY_PENDING_MAX) {
                pending_clear(&h->pending[0]);
                memmove(h->pending, h->pending + 1, (h->n_pending - 1) * sizeof(*h->pending));
                h->n_pending--;
                h->dropped++;
        }
        if (h->n_pending == h->cap_pending) {
                size_t cap = h->cap_pending ? h->cap_pending * 2 : 16;
                struct history_pending *v = realloc(h->pending, cap * sizeof(*v));

                if (!v) {
                        pending_clear(&copy);
                        return -ENOMEM;
                }
                h->pending = v;
                h->cap_pending = cap;
        }
        h->pending[h->n_pending++] = copy;
        snprintf(err, err_size,
                 "history %s is busy: another process holds a write lock on it (pctl history "
                 "forget, sqlite3, a backup, another pctld on the same file); the run of %s is "
                 "kept in memory (%zu waiting) and written when it is free",
                 h->path, exe, h->n_pending);
        return -EAGAIN;
}

bool history_read_only(const struct history *h)
{
        return h->read_only;
}

void history_entry_clear(struct history_entry *e)
{
        free(e->stack_json);
        e->stack_json = NULL;
}

static void bind_double(sqlite3_stmt *st, int i, double v)
{
        if (isfinite(v))
                sqlite3_bind_double(st, i, v);
        else
                sqlite3_bind_null(st, i);
}

static double column_double(sqlite3_stmt *st, int i)
{
        return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void column_text(sqlite3_stmt *st, int i, char *buf, size_t size)
{
        const char *s = (const char *)sqlite3_column_text(st, i);

        (void)strscpy(buf, s ? s : "", size);
}

/* A row in COLUMNS order into e (which then owns its stack). */
static int row_read(sqlite3_stmt *st, struct history_entry *e)
{
        char hash[32];
        const char *stack;

        *e = (struct history_entry){0};
        column_text(st, 0, e->key.exe, sizeof(e->key.exe));
        column_text(st, 1, e->key.policy, sizeof(e->key.policy));
        column_text(st, 2, hash, sizeof(hash));
        e->key.args_hash = strtoull(hash, NULL, 16);
        column_text(st, 3, e->key.calibration, sizeof(e->key.calibration));
        column_text(st, 4, e->objective, sizeof(e->objective));
        e->p = column_double(st, 5);
        e->mem_fraction = column_double(st, 6);
        e->best_cores = (unsigned)sqlite3_column_int64(st, 7);
        e->best_freq_khz = (unsigned)sqlite3_column_int64(st, 8);
        e->best_score = column_double(st, 9);
        stack = (const char *)sqlite3_column_text(st, 10);
        if (stack) {
                e->stack_json = strdup(stack);
                if (!e->stack_json)
                        return -ENOMEM;
        }
        e->runs = (unsigned)sqlite3_column_int64(st, 11);
        e->updated_s = sqlite3_column_int64(st, 12);
        e->shared_apps = (unsigned)sqlite3_column_int64(st, 13); /* NULL reads 0: not known */
        return 0;
}

static void bind_key(sqlite3_stmt *st, const struct history_key *k, char *hash, size_t hash_size)
{
        snprintf(hash, hash_size, "%016" PRIx64, k->args_hash);
        sqlite3_bind_text(st, 1, k->exe, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->policy, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, k->calibration, -1, SQLITE_STATIC);
}

int history_lookup(struct history *h, const struct history_key *key, struct history_entry *out,
                   char *err, size_t err_size)
{
        sqlite3_stmt *st = NULL;
        char hash[32];
        int rc, r = -ENOENT;

        rc = sqlite3_prepare_v2(h->db,
                                "SELECT " COLUMNS " FROM apps WHERE exe = ?1 AND policy = ?2 AND "
                                "args_hash = ?3 AND calibration = ?4",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return history_fail(h->path, h->db, rc, "a look-up", err, err_size);
        bind_key(st, key, hash, sizeof(hash));
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                r = row_read(st, out);
        else if (rc != SQLITE_DONE)
                r = history_fail(h->path, h->db, rc, "a look-up", err, err_size);
        sqlite3_finalize(st);
        return r;
}

static int store_now(struct history *h, const struct history_entry *e, char *err, size_t err_size)
{
        sqlite3_stmt *st = NULL;
        char hash[32];
        int rc;

        if (h->read_only) {
                snprintf(err, err_size, "history %s is read-only: the run of %s is not recorded",
                         h->path, e->key.exe);
                return -EROFS;
        }
        rc = sqlite3_prepare_v2(
            h->db,
            "INSERT INTO apps (" COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
            "1, ?12, ?13) ON CONFLICT (exe, policy, args_hash, calibration) DO UPDATE SET "
            "objective = excluded.objective, p = excluded.p, mem_fraction = excluded.mem_fraction, "
            "best_cores = excluded.best_cores, best_freq_khz = excluded.best_freq_khz, "
            "best_score = excluded.best_score, "
            "stack_json = coalesce(excluded.stack_json, stack_json), runs = runs + 1, "
            "updated_s = excluded.updated_s, shared_apps = excluded.shared_apps",
            -1, &st, NULL);
        if (rc == SQLITE_OK) {
                bind_key(st, &e->key, hash, sizeof(hash));
                sqlite3_bind_text(st, 5, e->objective, -1, SQLITE_STATIC);
                bind_double(st, 6, e->p);
                bind_double(st, 7, e->mem_fraction);
                sqlite3_bind_int64(st, 8, e->best_cores);
                sqlite3_bind_int64(st, 9, e->best_freq_khz);
                bind_double(st, 10, e->best_score);
                if (e->stack_json)
                        sqlite3_bind_text(st, 11, e->stack_json, -1, SQLITE_STATIC);
                else
                        sqlite3_bind_null(st, 11);
                sqlite3_bind_int64(st, 12, e->updated_s ? e->updated_s : (int64_t)time(NULL));
                if (e->shared_apps)
                        sqlite3_bind_int64(st, 13, e->shared_apps);
                else
                        sqlite3_bind_null(st, 13);
                rc = sqlite3_step(st);
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE && rc != SQLITE_OK) {
                char doing[320];

                snprintf(doing, sizeof(doing), "recording the run of %s", e->key.exe);
                return history_fail(h->path, h->db, rc, doing, err, err_size);
        }
        return 0;
}

int history_foreach(struct history *h, int (*fn)(const struct history_entry *e, void *ctx),
                    void *ctx, char *err, size_t err_size)
{
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(h->db, "SELECT " COLUMNS " FROM apps ORDER BY updated_s DESC, exe",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return history_fail(h->path, h->db, rc, "listing", err, err_size);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct history_entry e;

                r = row_read(st, &e);
                if (r == 0 && fn(&e, ctx))
                        rc = SQLITE_DONE;
                history_entry_clear(&e);
                if (r < 0 || rc == SQLITE_DONE)
                        break;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = history_fail(h->path, h->db, rc, "listing", err, err_size);
        sqlite3_finalize(st);
        return r;
}

int history_forget(struct history *h, const char *app, unsigned *removed, char *err,
                   size_t err_size)
{
        sqlite3_stmt *st = NULL;
        int rc;

        *removed = 0;
        if (h->read_only) {
                snprintf(err, err_size, "history %s is read-only: nothing forgotten", h->path);
                return -EROFS;
        }
        /* The full path, or the base name: `pctl history forget pbench`. Its runs go with
         * it, in one transaction. */
        rc = sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (unsigned t = 0; t < 2 && rc == SQLITE_OK; t++) {
                static const char *const table[] = {"apps", "runs"};
                char sql[256];

                snprintf(sql, sizeof(sql),
                         app ? "DELETE FROM %s WHERE exe = ?1 OR exe = 'sim:' || ?1 OR "
                               "substr(exe, -length(?1) - 1) = '/' || ?1"
                             : "DELETE FROM %s",
                         table[t]);
                rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
                if (rc == SQLITE_OK) {
                        if (app)
                                sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
                        rc = sqlite3_step(st);
                }
                sqlite3_finalize(st);
                st = NULL;
                if (rc == SQLITE_DONE) {
                        if (t == 0)
                                *removed = (unsigned)sqlite3_changes(h->db);
                        rc = SQLITE_OK;
                }
        }
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                int r = history_fail(h->path, h->db, rc, "forgetting", err, err_size);

                (void)sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
                *removed = 0;
                return r;
        }
        return 0;
}

static int store_run_now(struct history *h, const struct history_key *key,
                         const struct history_run *r, char *err, size_t err_size)
{
        sqlite3_stmt *st = NULL;
        char hash[32];
        int rc;

        char bins[HISTORY_RUN_BINS * 52 + 1] = "";
        size_t len = 0;
        bool ok = r->instructions > 0 && isfinite(r->instructions) && r->cores >= 1 &&
                  isfinite(r->cores) && r->instructions_err >= 0 && isfinite(r->instructions_err) &&
                  r->n_bins <= HISTORY_RUN_BINS;

        /* "CORES:INSTRUCTIONS ..." */
        for (unsigned k = 0; ok && k < r->n_bins; k++) {
                ok = r->bins[k].cores >= 1 && isfinite(r->bins[k].cores) &&
                     r->bins[k].instructions >= 0 && isfinite(r->bins[k].instructions);
                len += (size_t)snprintf(bins + len, sizeof(bins) - len, "%s%.17g:%.17g",
                                        k ? " " : "", r->bins[k].cores, r->bins[k].instructions);
        }
        if (!ok) {
                snprintf(err, err_size,
                         "history %s: a run of %s with %g instructions (± %g) at %g cores is not "
                         "one: not recorded",
                         h->path, key->exe, r->instructions, r->instructions_err, r->cores);
                return -EINVAL;
        }
        if (h->read_only) {
                snprintf(err, err_size, "history %s is read-only: the run of %s is not recorded",
                         h->path, key->exe);
                return -EROFS;
        }
        rc = sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(h->db,
                                        "INSERT INTO runs (exe, policy, args_hash, calibration, "
                                        "instructions, instructions_err, cores, updated_s, bins) "
                                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                                        -1, &st, NULL);
        if (rc == SQLITE_OK) {
                bind_key(st, key, hash, sizeof(hash));
                sqlite3_bind_double(st, 5, r->instructions);
                sqlite3_bind_double(st, 6, r->instructions_err);
                sqlite3_bind_double(st, 7, r->cores);
                sqlite3_bind_int64(st, 8, r->updated_s ? r->updated_s : (int64_t)time(NULL));
                if (r->n_bins)
                        sqlite3_bind_text(st, 9, bins, -1, SQLITE_STATIC);
                else
                        sqlite3_bind_null(st, 9);
                rc = sqlite3_step(st);
                rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_finalize(st);
        st = NULL;
        /* Only the newest HISTORY_RUNS_KEEP of this app. */
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(h->db,
                                        "DELETE FROM runs WHERE exe = ?1 AND policy = ?2 AND "
                                        "args_hash = ?3 AND calibration = ?4 AND rowid NOT IN "
                                        "(SELECT rowid FROM runs WHERE exe = ?1 AND policy = ?2 "
                                        "AND args_hash = ?3 AND calibration = ?4 ORDER BY rowid "
                                        "DESC LIMIT ?5)",
                                        -1, &st, NULL);
        if (rc == SQLITE_OK) {
                bind_key(st, key, hash, sizeof(hash));
                sqlite3_bind_int(st, 5, HISTORY_RUNS_KEEP);
                rc = sqlite3_step(st);
                rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_finalize(st);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                char doing[320];
                int e;

                snprintf(doing, sizeof(doing), "recording the run of %s", key->exe);
                e = history_fail(h->path, h->db, rc, doing, err, err_size);
                (void)sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
                return e;
        }
        return 0;
}

/* "CORES:INSTRUCTIONS ..." as history_store_run writes it; anything else (a file edited by
 * hand) leaves the run with its mean only. */
static void runs_bins_parse(const char *text, struct history_run *r)
{
        const char *p = text;

        r->n_bins = 0;
        while (p && *p) {
                char *end;
                double c = strtod(p, &end), i;

                if (end == p || *end != ':' || r->n_bins == HISTORY_RUN_BINS)
                        goto bad;
                p = end + 1;
                i = strtod(p, &end);
                if (end == p || (*end && *end != ' ') || !(c >= 1) || !isfinite(c) || !(i >= 0) ||
                    !isfinite(i))
                        goto bad;
                r->bins[r->n_bins].cores = c;
                r->bins[r->n_bins++].instructions = i;
                p = *end ? end + 1 : end;
        }
        return;
bad:
        r->n_bins = 0;
}

int history_runs(struct history *h, const struct history_key *key, struct history_run *out,
                 unsigned max, unsigned *n, char *err, size_t err_size)
{
        sqlite3_stmt *st = NULL;
        char hash[32];
        int rc;

        *n = 0;
        rc =
            sqlite3_prepare_v2(h->db,
                               "SELECT instructions, instructions_err, cores, updated_s, bins FROM "
                               "(SELECT rowid, * FROM runs WHERE exe = ?1 AND policy = ?2 AND "
                               "args_hash = ?3 AND calibration = ?4 ORDER BY rowid DESC LIMIT "
                               "?5) ORDER BY rowid",
                               -1, &st, NULL);
        if (rc != SQLITE_OK)
                return history_fail(h->path, h->db, rc, "a look-up", err, err_size);
        bind_key(st, key, hash, sizeof(hash));
        sqlite3_bind_int64(st, 5, max);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max) {
                out[*n] = (struct history_run){.instructions = sqlite3_column_double(st, 0),
                                               .instructions_err = sqlite3_column_double(st, 1),
                                               .cores = sqlite3_column_double(st, 2),
                                               .updated_s = sqlite3_column_int64(st, 3)};
                runs_bins_parse((const char *)sqlite3_column_text(st, 4), &out[*n]);
                (*n)++;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return history_fail(h->path, h->db, rc, "a look-up", err, err_size);
        return 0;
}

/* One pending write, as it would have been. */
/* The main file up to date after a write, so that a copy of it alone (cp, a backup) has
 * every run; PASSIVE never waits for a reader. */
static void checkpoint(struct history *h)
{
        (void)sqlite3_wal_checkpoint_v2(h->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

static int pending_write(struct history *h, const struct history_pending *p, char *err,
                         size_t err_size)
{
        return p->is_run ? store_run_now(h, &p->key, &p->run, err, err_size)
                         : store_now(h, &p->entry, err, err_size);
}

/* Writes what waits until the file is locked again; 0 or the first refusal for good. */
static int flush_pending(struct history *h, char *err, size_t err_size)
{
        size_t done = 0;
        int r = 0;

        while (done < h->n_pending) {
                char why[640];
                int w = pending_write(h, &h->pending[done], why, sizeof(why));

                if (w == -EBUSY)
                        break; /* still locked: the rest wait, in order */
                if (w < 0 && r == 0) {
                        /* Refused for good (full, read-only now): said once, not kept. */
                        (void)strscpy(err, why, err_size);
                        r = w;
                }
                pending_clear(&h->pending[done++]);
        }
        /* Nothing written: pending may still be NULL, which memmove must not see. */
        if (done) {
                memmove(h->pending, h->pending + done, (h->n_pending - done) * sizeof(*h->pending));
                h->n_pending -= done;
                checkpoint(h);
        }
        return r;
}

int history_flush(struct history *h, char *err, size_t err_size)
{
        int r = flush_pending(h, err, err_size);

        if (h->dropped) {
                snprintf(err, err_size,
                         "history %s stayed busy: %u runs waiting past %d were not recorded",
                         h->path, h->dropped, HISTORY_PENDING_MAX);
                h->dropped = 0;
                r = -ENOBUFS;
        }
        return r;
}

int history_store(struct history *h, const struct history_entry *e, char *err, size_t err_size)
{
        struct history_pending p = {.entry = *e};
        int r;

        /* Behind writes still waiting, this one waits too: the order is the runs' order. */
        if (h->deferred && h->n_pending)
                (void)flush_pending(h, err, err_size);
        if (h->deferred && h->n_pending && !h->read_only)
                return pending_add(h, &p, e->key.exe, err, err_size);
        r = store_now(h, e, err, err_size);
        if (r == -EBUSY && h->deferred)
                return pending_add(h, &p, e->key.exe, err, err_size);
        if (r == 0)
                checkpoint(h);
        return r;
}

int history_store_run(struct history *h, const struct history_key *key,
                      const struct history_run *run, char *err, size_t err_size)
{
        struct history_pending p = {.is_run = true, .key = *key, .run = *run};
        int r;

        if (h->deferred && h->n_pending)
                (void)flush_pending(h, err, err_size);
        if (h->deferred && h->n_pending && !h->read_only)
                return pending_add(h, &p, key->exe, err, err_size);
        r = store_run_now(h, key, run, err, err_size);
        if (r == -EBUSY && h->deferred)
                return pending_add(h, &p, key->exe, err, err_size);
        if (r == 0)
                checkpoint(h);
        return r;
}
