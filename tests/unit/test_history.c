/* The history file (manager/history.c): round trip, migration, and every fault the issue names —
 * corrupt, read-only, locked by another writer, a newer schema — each a clear error that leaves
 * the file as it was. */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "pctl_test.h"
#include "pctl/history.h"
#include "pctl/util.h"

struct tmpdb {
        char dir[64];
        char path[128];
};

static void tmpdb_make(struct tmpdb *t)
{
        snprintf(t->dir, sizeof(t->dir), "/tmp/pctl-history-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        snprintf(t->path, sizeof(t->path), "%s/history.db", t->dir);
}

static void tmpdb_remove(struct tmpdb *t)
{
        char p[160];

        chmod(t->dir, 0700);
        unlink(t->path);
        snprintf(p, sizeof(p), "%s-journal", t->path);
        unlink(p);
        snprintf(p, sizeof(p), "%s-wal", t->path);
        unlink(p);
        snprintf(p, sizeof(p), "%s-shm", t->path);
        unlink(p);
        rmdir(t->dir);
}

static struct history_entry sample_entry(const char *exe, unsigned cores)
{
        struct history_entry e = {.p = 0.93,
                                  .mem_fraction = NAN,
                                  .best_cores = cores,
                                  .best_freq_khz = 2700000,
                                  .best_score = 1.5e-18,
                                  .updated_s = 1000};

        snprintf(e.key.exe, sizeof(e.key.exe), "%s", exe);
        snprintf(e.key.policy, sizeof(e.key.policy), "edp");
        e.key.args_hash = history_hash("--p 0.9", 7);
        snprintf(e.key.calibration, sizeof(e.key.calibration), "%016llx",
                 (unsigned long long)history_hash("cal", 3));
        snprintf(e.objective, sizeof(e.objective), "edp");
        return e;
}

/* Runs one statement on the file with SQLite directly, as another program would. */
static void raw_exec(const char *path, const char *sql)
{
        sqlite3 *db;

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

static void store_then_lookup_round_trips(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry e = sample_entry("/usr/bin/pbench", 3), got;
        char err[512];

        tmpdb_make(&t);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), -ENOENT);
        e.stack_json = "{\"sequential\":0.2}";
        assert_int_equal(history_store(h, &e, err, sizeof(err)), 0);
        e.stack_json = NULL; /* a later run without a stack keeps the last one */
        e.best_cores = 2;
        e.shared_apps = 3;
        assert_int_equal(history_store(h, &e, err, sizeof(err)), 0);
        history_close(h);

        assert_int_equal(history_open(t.path, true, &h, err, sizeof(err)), 0);
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), 0);
        assert_int_equal(got.best_cores, 2);
        assert_int_equal(got.best_freq_khz, 2700000);
        assert_int_equal(got.runs, 2);
        assert_near(got.p, 0.93, 1e-12);
        assert_true(isnan(got.mem_fraction));
        assert_near(got.best_score, 1.5e-18, 1e-30);
        assert_string_equal(got.stack_json, "{\"sequential\":0.2}");
        assert_int_equal(got.shared_apps, 3);
        assert_true(got.key.args_hash == e.key.args_hash);
        history_entry_clear(&got);
        /* Another argument hash is another app. */
        e.key.args_hash++;
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), -ENOENT);
        history_close(h);
        tmpdb_remove(&t);
}

static int count_entry(const struct history_entry *e, void *ctx)
{
        (void)e;
        (*(unsigned *)ctx)++;
        return 0;
}

static void forget_by_name_path_or_all(void **state)
{
        struct tmpdb t;
        struct history *h;
        char err[512];
        unsigned n = 0, removed;

        tmpdb_make(&t);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        for (unsigned i = 0; i < 2; i++) {
                struct history_entry a = sample_entry("/usr/bin/pbench", 1);
                struct history_entry b = sample_entry("/usr/bin/xz", 2);
                struct history_entry c = sample_entry("sim:wide", 3);

                a.key.args_hash += i;
                assert_int_equal(history_store(h, &a, err, sizeof(err)), 0);
                assert_int_equal(history_store(h, &b, err, sizeof(err)), 0);
                assert_int_equal(history_store(h, &c, err, sizeof(err)), 0);
        }
        assert_int_equal(history_foreach(h, count_entry, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 4);
        /* A base name is not a suffix of another name: "bench" forgets nothing. */
        assert_int_equal(history_forget(h, "bench", &removed, err, sizeof(err)), 0);
        assert_int_equal(removed, 0);
        assert_int_equal(history_forget(h, "pbench", &removed, err, sizeof(err)), 0);
        assert_int_equal(removed, 2);
        assert_int_equal(history_forget(h, "/usr/bin/xz", &removed, err, sizeof(err)), 0);
        assert_int_equal(removed, 1);
        assert_int_equal(history_forget(h, "wide", &removed, err, sizeof(err)), 0);
        assert_int_equal(removed, 1);
        {
                struct history_entry x = sample_entry("/bin/x", 1);

                assert_int_equal(history_store(h, &x, err, sizeof(err)), 0);
        }
        assert_int_equal(history_forget(h, NULL, &removed, err, sizeof(err)), 0);
        assert_int_equal(removed, 1);
        history_close(h);
        tmpdb_remove(&t);
}

static void corrupt_file_is_refused_and_left_alone(void **state)
{
        struct tmpdb t;
        struct history *h = NULL;
        char err[512], buf[64];
        FILE *f;

        tmpdb_make(&t);
        f = fopen(t.path, "w");
        assert_non_null(f);
        fputs("this is not a database, but it is somebody's file\n", f);
        fclose(f);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), -EBADMSG);
        assert_null(h);
        assert_non_null(strstr(err, t.path));
        assert_non_null(strstr(err, "not a SQLite database or is corrupt"));
        /* Nothing written over it. */
        f = fopen(t.path, "r");
        assert_non_null(fgets(buf, sizeof(buf), f));
        fclose(f);
        assert_int_equal(strncmp(buf, "this is not a database", 22), 0);
        tmpdb_remove(&t);
}

static void newer_schema_is_refused(void **state)
{
        struct tmpdb t;
        struct history *h = NULL;
        char err[512];

        tmpdb_make(&t);
        raw_exec(t.path, "CREATE TABLE apps (x); PRAGMA user_version = 99");
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), -EPROTONOSUPPORT);
        assert_null(h);
        assert_non_null(strstr(err, "schema 99, from a newer pctl"));
        /* Left as it was: the newer pctl still finds its schema. */
        raw_exec(t.path, "SELECT x FROM apps");
        tmpdb_remove(&t);
}

static void old_schema_is_migrated(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry e = sample_entry("/usr/bin/pbench", 4);
        char err[512];

        tmpdb_make(&t);
        /* An existing database at version 0 (a file made empty by hand, or by sqlite3)
         * walks up to this schema on open. */
        raw_exec(t.path, "PRAGMA user_version = 0");
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        assert_int_equal(history_store(h, &e, err, sizeof(err)), 0);
        history_close(h);
        raw_exec(t.path, "SELECT exe FROM apps WHERE best_cores = 4");
        {
                sqlite3 *db;
                sqlite3_stmt *st;

                assert_int_equal(sqlite3_open(t.path, &db), SQLITE_OK);
                assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL),
                                 SQLITE_OK);
                assert_int_equal(sqlite3_step(st), SQLITE_ROW);
                assert_int_equal(sqlite3_column_int(st, 0), HISTORY_SCHEMA_VERSION);
                sqlite3_finalize(st);
                sqlite3_close(db);
        }
        tmpdb_remove(&t);
}

static void read_only_file_reads_but_does_not_write(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry e = sample_entry("/usr/bin/pbench", 2), got;
        char err[512];
        unsigned removed;

        tmpdb_make(&t);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        assert_int_equal(history_store(h, &e, err, sizeof(err)), 0);
        history_close(h);
        /* Opened for reading only (as `pctl history` does, and as SQLite falls back to when
         * the file's permissions or mount refuse writing). */
        assert_int_equal(history_open(t.path, true, &h, err, sizeof(err)), 0);
        assert_true(history_read_only(h));
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), 0);
        history_entry_clear(&got);
        assert_int_equal(history_store(h, &e, err, sizeof(err)), -EROFS);
        assert_non_null(strstr(err, "is read-only"));
        assert_int_equal(history_forget(h, NULL, &removed, err, sizeof(err)), -EROFS);
        history_close(h);
        /* A read-only look at a file that is not there creates nothing. */
        unlink(t.path);
        assert_int_equal(history_open(t.path, true, &h, err, sizeof(err)), -ENOENT);
        assert_int_equal(access(t.path, F_OK), -1);
        tmpdb_remove(&t);
}

static void locked_by_another_writer_is_busy_then_recovers(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry e = sample_entry("/usr/bin/pbench", 2), got;
        char err[512];
        sqlite3 *other;

        tmpdb_make(&t);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        /* Another pctld on the same file, in the middle of its own write. */
        assert_int_equal(sqlite3_open(t.path, &other), SQLITE_OK);
        assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(history_store(h, &e, err, sizeof(err)), -EBUSY);
        assert_non_null(strstr(err, "is busy: another process holds a lock on it"));
        assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(other);
        /* Once it is done, the next run is recorded. */
        assert_int_equal(history_store(h, &e, err, sizeof(err)), 0);
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), 0);
        assert_int_equal(got.runs, 1);
        history_entry_clear(&got);
        history_close(h);
        tmpdb_remove(&t);
}

static double mono_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Issue 28: the file held every user's executable paths world-readable (0644), and any user
 * holding a read transaction made every write fail after blocking 200 ms with a message
 * blaming "another pctld". Now: 0600, WAL (a reader blocks no write), and for the daemon a
 * write never waits: a locked file keeps the run in memory until it is free. */
static void private_wal_and_never_waiting(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry e = sample_entry("/usr/bin/pbench", 2), e2 = sample_entry("/bin/x", 3),
                             got;
        struct history_run run = {.instructions = 1e9, .instructions_err = 1e6, .cores = 2};
        char err[640], sql_mode[16] = "";
        struct stat st;
        sqlite3 *other;
        sqlite3_stmt *q;
        double t0, took;

        tmpdb_make(&t);
        /* An older file readable by everyone is narrowed when opened for writing. */
        raw_exec(t.path, "CREATE TABLE x (a)");
        assert_int_equal(chmod(t.path, 0644), 0);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        assert_int_equal(stat(t.path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        history_set_deferred(h, true);

        /* WAL: a reader in the middle of a read transaction does not stop a write. */
        assert_int_equal(sqlite3_open(t.path, &other), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(other, "PRAGMA journal_mode", -1, &q, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        snprintf(sql_mode, sizeof(sql_mode), "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        assert_string_equal(sql_mode, "wal");
        assert_int_equal(sqlite3_exec(other, "BEGIN; SELECT count(*) FROM apps", NULL, NULL, NULL),
                         SQLITE_OK);
        assert_int_equal(history_store(h, &e, err, sizeof(err)), 0);
        assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);

        /* A writer holding its lock: the store returns at once, kept in memory, and says so. */
        assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
        t0 = mono_s();
        assert_int_equal(history_store(h, &e2, err, sizeof(err)), -EAGAIN);
        took = mono_s() - t0;
        assert_true(took < 0.05);
        assert_non_null(strstr(err, "is busy: another process holds a write lock"));
        assert_non_null(strstr(err, "kept in memory (1 waiting)"));
        assert_int_equal(history_store_run(h, &e2.key, &run, err, sizeof(err)), -EAGAIN);
        assert_int_equal(history_pending(h), 2);
        /* Still locked: flushing keeps them, without waiting. */
        assert_int_equal(history_flush(h, err, sizeof(err)), 0);
        assert_int_equal(history_pending(h), 2);
        assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(other);
        /* Free: written, in order, nothing lost. */
        assert_int_equal(history_flush(h, err, sizeof(err)), 0);
        assert_int_equal(history_pending(h), 0);
        assert_int_equal(history_lookup(h, &e2.key, &got, err, sizeof(err)), 0);
        assert_int_equal(got.best_cores, 3);
        history_entry_clear(&got);
        {
                struct history_run runs[4];
                unsigned n;

                assert_int_equal(history_runs(h, &e2.key, runs, 4, &n, err, sizeof(err)), 0);
                assert_int_equal(n, 1);
        }
        /* A busy file that never frees: the oldest go past the cap, and flush says how many. */
        assert_int_equal(sqlite3_open(t.path, &other), SQLITE_OK);
        assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
        for (int i = 0; i < HISTORY_PENDING_MAX + 3; i++)
                assert_int_equal(history_store(h, &e, err, sizeof(err)), -EAGAIN);
        assert_int_equal(history_pending(h), HISTORY_PENDING_MAX);
        assert_int_equal(history_flush(h, err, sizeof(err)), -ENOBUFS);
        assert_non_null(strstr(err, "3 runs waiting past"));
        assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(other);
        history_close(h); /* frees what waits */
        tmpdb_remove(&t);
}

static void unopenable_path_is_reported(void **state)
{
        struct history *h = NULL;
        char err[512];

        assert_int_equal(history_open("relative.db", false, &h, err, sizeof(err)), -EINVAL);
        assert_true(history_open("/nonexistent-dir-pctl/history.db", false, &h, err, sizeof(err)) <
                    0);
        assert_null(h);
        assert_non_null(strstr(err, "/nonexistent-dir-pctl/history.db"));
}

/* A file written by pctl with schema 1 (before whole runs were kept): opened, it walks up to
 * schema 2, keeps its entry, and takes runs. */
static void schema_1_file_gains_runs_and_keeps_its_entries(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry e = sample_entry("/usr/bin/zstd", 6), got;
        struct history_run runs[4], r = {.instructions = 1e11, .instructions_err = 1e8, .cores = 2};
        unsigned n = 9;
        char err[640], sql[1024];

        tmpdb_make(&t);
        /* Schema 1 exactly as pctl wrote it, with one entry. */
        raw_exec(t.path, "CREATE TABLE apps (exe TEXT NOT NULL, policy TEXT NOT NULL, args_hash "
                         "TEXT NOT NULL, calibration TEXT NOT NULL, objective TEXT NOT NULL, p "
                         "REAL, mem_fraction REAL, best_cores INTEGER NOT NULL, best_freq_khz "
                         "INTEGER NOT NULL, best_score REAL, stack_json TEXT, runs INTEGER NOT "
                         "NULL, updated_s INTEGER NOT NULL, PRIMARY KEY (exe, policy, args_hash, "
                         "calibration)); PRAGMA user_version = 1;");
        snprintf(sql, sizeof(sql),
                 "INSERT INTO apps VALUES ('/usr/bin/zstd', 'edp', '%016llx', '%s', 'edp', 0.93, "
                 "NULL, 6, 2700000, 1.5e-18, NULL, 3, 1000)",
                 (unsigned long long)e.key.args_hash, e.key.calibration);
        raw_exec(t.path, sql);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), 0);
        assert_int_equal(got.best_cores, 6);
        assert_int_equal(got.runs, 3);
        assert_near(got.p, 0.93, 1e-12);
        history_entry_clear(&got);
        assert_int_equal(history_runs(h, &e.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 0);
        assert_int_equal(history_store_run(h, &e.key, &r, err, sizeof(err)), 0);
        assert_int_equal(history_runs(h, &e.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_near(runs[0].instructions, 1e11, 1);
        assert_near(runs[0].instructions_err, 1e8, 1e-3);
        assert_near(runs[0].cores, 2, 1e-12);
        assert_true(runs[0].updated_s > 0);
        history_close(h);
        /* Reopened: already at this schema, the run is still there. */
        assert_int_equal(history_open(t.path, true, &h, err, sizeof(err)), 0);
        assert_int_equal(history_runs(h, &e.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        history_close(h);
        tmpdb_remove(&t);
}

/* A file written by pctl with schema 2 (before the sharing was kept): opened, it walks up to
 * schema 3; its entry reads as shared by an unknown number of apps (0), keeps the rest, and
 * the next run records the number; a read-only schema-2 file is not used (-EROFS). */
static void schema_2_file_gains_shared_apps_and_keeps_its_entries(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry e = sample_entry("/usr/bin/zstd", 6), got;
        struct history_run runs[4];
        unsigned n = 9;
        char err[640], sql[1024];

        tmpdb_make(&t);
        /* Schema 2 exactly as pctl wrote it, with one entry and one run. */
        raw_exec(t.path, "CREATE TABLE apps (exe TEXT NOT NULL, policy TEXT NOT NULL, args_hash "
                         "TEXT NOT NULL, calibration TEXT NOT NULL, objective TEXT NOT NULL, p "
                         "REAL, mem_fraction REAL, best_cores INTEGER NOT NULL, best_freq_khz "
                         "INTEGER NOT NULL, best_score REAL, stack_json TEXT, runs INTEGER NOT "
                         "NULL, updated_s INTEGER NOT NULL, PRIMARY KEY (exe, policy, args_hash, "
                         "calibration));"
                         "CREATE TABLE runs (exe TEXT NOT NULL, policy TEXT NOT NULL, args_hash "
                         "TEXT NOT NULL, calibration TEXT NOT NULL, instructions REAL NOT NULL, "
                         "instructions_err REAL NOT NULL, cores REAL NOT NULL, bins TEXT, "
                         "updated_s INTEGER NOT NULL);"
                         "CREATE INDEX runs_key ON runs (exe, policy, args_hash, calibration);"
                         "PRAGMA user_version = 2;");
        snprintf(sql, sizeof(sql),
                 "INSERT INTO apps VALUES ('/usr/bin/zstd', 'edp', '%016llx', '%s', 'edp', 0.93, "
                 "NULL, 6, 2700000, 1.5e-18, NULL, 3, 1000);"
                 "INSERT INTO runs VALUES ('/usr/bin/zstd', 'edp', '%016llx', '%s', 1e11, 1e8, "
                 "5.5, '6:1e11', 1000)",
                 (unsigned long long)e.key.args_hash, e.key.calibration,
                 (unsigned long long)e.key.args_hash, e.key.calibration);
        raw_exec(t.path, sql);
        /* Opened read-only, it is not walked up, so not used. */
        assert_int_equal(history_open(t.path, true, &h, err, sizeof(err)), -EROFS);
        assert_non_null(strstr(err, "schema 2, not 3"));
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), 0);
        assert_int_equal(got.best_cores, 6);
        assert_int_equal(got.runs, 3);
        assert_near(got.best_score, 1.5e-18, 1e-30);
        assert_int_equal(got.shared_apps, 0); /* not known */
        history_entry_clear(&got);
        assert_int_equal(history_runs(h, &e.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_near(runs[0].cores, 5.5, 1e-12);
        e.shared_apps = 4;
        assert_int_equal(history_store(h, &e, err, sizeof(err)), 0);
        history_close(h);
        /* Reopened: at this schema, the number is kept. */
        assert_int_equal(history_open(t.path, true, &h, err, sizeof(err)), 0);
        assert_int_equal(history_lookup(h, &e.key, &got, err, sizeof(err)), 0);
        assert_int_equal(got.shared_apps, 4);
        assert_int_equal(got.runs, 4);
        history_entry_clear(&got);
        history_close(h);
        tmpdb_remove(&t);
}

/* The newest HISTORY_RUNS_KEEP runs per app, oldest first; other apps' runs apart; a run that
 * is not one refused; forget removes an app's runs with its entry. */
static void runs_keep_the_newest_and_go_with_forget(void **state)
{
        struct tmpdb t;
        struct history *h;
        struct history_entry a = sample_entry("/usr/bin/xz", 2),
                             b = sample_entry("/usr/bin/zstd", 2);
        struct history_run runs[HISTORY_RUNS_KEEP + 2];
        unsigned n, removed;
        char err[640];

        tmpdb_make(&t);
        assert_int_equal(history_open(t.path, false, &h, err, sizeof(err)), 0);
        assert_int_equal(history_store(h, &a, err, sizeof(err)), 0);
        for (unsigned k = 0; k < HISTORY_RUNS_KEEP + 3; k++) {
                struct history_run r = {
                    .instructions = 1e9 * (k + 1), .cores = 1 + k, .updated_s = 100 + k};

                assert_int_equal(history_store_run(h, &a.key, &r, err, sizeof(err)), 0);
        }
        /* Per core count: kept as given, to the bit. */
        struct history_run rb = {.instructions = 5, .cores = 3, .n_bins = 2};
        rb.bins[0].cores = 12;
        rb.bins[0].instructions = 1.0 / 3;
        rb.bins[1].cores = 2.5;
        rb.bins[1].instructions = 4.5e17;
        assert_int_equal(history_store_run(h, &b.key, &rb, err, sizeof(err)), 0);
        assert_int_equal(history_runs(h, &b.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(runs[0].n_bins, 2);
        assert_true(runs[0].bins[0].cores == 12 && runs[0].bins[0].instructions == 1.0 / 3);
        assert_true(runs[0].bins[1].cores == 2.5 && runs[0].bins[1].instructions == 4.5e17);
        /* Edited by hand into something else: the run keeps its mean only. */
        raw_exec(t.path, "UPDATE runs SET bins = '12:1e9 x' WHERE exe = '/usr/bin/zstd'");
        assert_int_equal(history_runs(h, &b.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(runs[0].n_bins, 0);
        assert_near(runs[0].cores, 3, 1e-12);
        assert_int_equal(history_runs(h, &a.key, runs, HISTORY_RUNS_KEEP + 2, &n, err, sizeof(err)),
                         0);
        assert_int_equal(n, HISTORY_RUNS_KEEP);
        for (unsigned k = 0; k < n; k++)
                assert_near(runs[k].cores, 1 + 3 + k, 1e-12); /* the three oldest went */
        /* max below what is kept: the newest max, still oldest first. */
        assert_int_equal(history_runs(h, &a.key, runs, 2, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 2);
        assert_near(runs[0].cores, HISTORY_RUNS_KEEP + 2, 1e-12);
        assert_near(runs[1].cores, HISTORY_RUNS_KEEP + 3, 1e-12);
        /* Not a run: nothing written, the file says which. */
        struct history_run bad[] = {{.instructions = 0, .cores = 2},
                                    {.instructions = NAN, .cores = 2},
                                    {.instructions = 1, .cores = 0.5},
                                    {.instructions = 1, .instructions_err = -1, .cores = 2}};
        for (unsigned k = 0; k < ARRAY_SIZE(bad); k++) {
                err[0] = '\0';
                assert_int_equal(history_store_run(h, &b.key, &bad[k], err, sizeof(err)), -EINVAL);
                assert_non_null(strstr(err, t.path));
        }
        assert_int_equal(history_runs(h, &b.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(history_forget(h, "xz", &removed, err, sizeof(err)), 0);
        assert_int_equal(removed, 1);
        assert_int_equal(history_runs(h, &a.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 0);
        assert_int_equal(history_runs(h, &b.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(history_forget(h, NULL, &removed, err, sizeof(err)), 0);
        assert_int_equal(history_runs(h, &b.key, runs, 4, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 0);
        history_close(h);
        tmpdb_remove(&t);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(schema_1_file_gains_runs_and_keeps_its_entries),
    cmocka_unit_test(schema_2_file_gains_shared_apps_and_keeps_its_entries),
    cmocka_unit_test(runs_keep_the_newest_and_go_with_forget),
    cmocka_unit_test(store_then_lookup_round_trips),
    cmocka_unit_test(forget_by_name_path_or_all),
    cmocka_unit_test(corrupt_file_is_refused_and_left_alone),
    cmocka_unit_test(newer_schema_is_refused),
    cmocka_unit_test(old_schema_is_migrated),
    cmocka_unit_test(read_only_file_reads_but_does_not_write),
    cmocka_unit_test(locked_by_another_writer_is_busy_then_recovers),
    cmocka_unit_test(unopenable_path_is_reported),
    cmocka_unit_test(private_wal_and_never_waiting),
};

PCTL_TEST_MAIN(tests)
