/* History rows as a file edited by hand (or by another program) can hold them: every column of
 * one apps row and one runs row comes from the input, fields split at 0x1f, bound as text
 * (SQLite's column affinity makes numbers of what looks like one, and leaves the rest text).
 * pctld's readers (manager/history.c: history_lookup, history_foreach, history_runs with
 * their bins) and `pctl history --json` (cli/cmd_history.c: the row and its stack_json
 * rendered) must take any of it: no crash, no leak, bounded fields, at most the runs asked. */
#include <math.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cli/commands.h"
#include "fuzz_util.h"
#include "pctl/history.h"

#define FIELDS 19

static char db_path[64];

static int on_entry(const struct history_entry *e, void *ctx)
{
        (void)ctx;
        if (strnlen(e->key.exe, sizeof(e->key.exe)) == sizeof(e->key.exe) ||
            strnlen(e->key.policy, sizeof(e->key.policy)) == sizeof(e->key.policy) ||
            strnlen(e->objective, sizeof(e->objective)) == sizeof(e->objective))
                abort();
        return 0;
}

static void setup(void)
{
        struct history *h;
        char err[700];

        snprintf(db_path, sizeof(db_path), "/dev/shm/pctl-fuzz-history-%d.db", (int)getpid());
        unlink(db_path);
        if (history_open(db_path, false, &h, err, sizeof(err)) < 0) {
                fprintf(stderr, "%s\n", err);
                abort();
        }
        history_close(h);
        /* `pctl history --json` prints; the harness only wants it to run. */
        if (!freopen("/dev/null", "w", stdout))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static bool ready;
        const char *field[FIELDS] = {0};
        size_t flen[FIELDS] = {0};
        struct history *h;
        struct history_entry e;
        struct history_key key = {0};
        struct history_run runs[HISTORY_RUNS_KEEP];
        char err[700];
        sqlite3 *db;
        sqlite3_stmt *st;
        unsigned n = 0;
        size_t f = 0, start = 0;

        if (!ready) {
                setup();
                ready = true;
        }
        for (size_t i = 0; i <= size && f < FIELDS; i++)
                if (i == size || data[i] == 0x1f) {
                        field[f] = (const char *)data + start;
                        flen[f++] = i - start;
                        start = i + 1;
                }
        if (sqlite3_open(db_path, &db) != SQLITE_OK)
                abort();
        sqlite3_exec(db, "DELETE FROM apps; DELETE FROM runs", NULL, NULL, NULL);
        /* apps: 14 columns, the 14th (shared_apps, schema 3) from the last field so that the
         * corpus of schema 2 reads as before; runs: exe, policy, args_hash, calibration from
         * the same row, then instructions, instructions_err, cores, bins, updated_s. */
        if (sqlite3_prepare_v2(db,
                               "INSERT INTO apps VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                               "?10, ?11, ?12, ?13, ?14)",
                               -1, &st, NULL) != SQLITE_OK)
                abort();
        for (int i = 0; i < 13; i++)
                sqlite3_bind_text(st, i + 1, field[i] ? field[i] : "", (int)flen[i], SQLITE_STATIC);
        sqlite3_bind_text(st, 14, field[18] ? field[18] : "", (int)flen[18], SQLITE_STATIC);
        sqlite3_step(st);
        sqlite3_finalize(st);
        if (sqlite3_prepare_v2(db, "INSERT INTO runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                               -1, &st, NULL) != SQLITE_OK)
                abort();
        for (int i = 0; i < 4; i++)
                sqlite3_bind_text(st, i + 1, field[i] ? field[i] : "", (int)flen[i], SQLITE_STATIC);
        for (int i = 4; i < 9; i++)
                sqlite3_bind_text(st, i + 1, field[9 + i] ? field[9 + i] : "", (int)flen[9 + i],
                                  SQLITE_STATIC);
        sqlite3_step(st);
        sqlite3_finalize(st);
        sqlite3_close(db);

        if (history_open(db_path, true, &h, err, sizeof(err)) == 0) {
                (void)history_foreach(h, on_entry, NULL, err, sizeof(err));
                /* The key as the row's text says it, as pctld would look it up. */
                snprintf(key.exe, sizeof(key.exe), "%.*s", (int)flen[0], field[0] ? field[0] : "");
                snprintf(key.policy, sizeof(key.policy), "%.*s", (int)flen[1],
                         field[1] ? field[1] : "");
                if (history_lookup(h, &key, &e, err, sizeof(err)) == 0)
                        history_entry_clear(&e);
                if (history_runs(h, &key, runs, HISTORY_RUNS_KEEP, &n, err, sizeof(err)) == 0) {
                        if (n > HISTORY_RUNS_KEEP)
                                abort();
                        for (unsigned i = 0; i < n; i++) {
                                if (runs[i].n_bins > HISTORY_RUN_BINS)
                                        abort();
                                for (unsigned k = 0; k < runs[i].n_bins; k++)
                                        if (!(runs[i].bins[k].cores >= 1) ||
                                            !isfinite(runs[i].bins[k].instructions))
                                                abort();
                        }
                }
                history_close(h);
        }
        {
                char *argv[] = {(char *)"history", (char *)"--file", db_path, (char *)"--json",
                                NULL};

                (void)cmd_history(4, argv);
        }
        return 0;
}
