/* Memory of past runs: per app identity (executable, policy, the arguments' hash, the machine's
 * calibration id), what pctld learned of it — P̂, frequency sensitivity, the best configuration
 * measured and its score, the last speedup stack — in one SQLite file (`[daemon] history_path`,
 * `pctl sim run --history FILE`). A returning app starts at its remembered best.
 *
 * The schema is versioned (PRAGMA user_version) and migrated forward on open. Every failure
 * (a corrupt file, a read-only one, one locked by another pctld, a schema from a newer pctl)
 * comes back as a negative errno with a message naming the file; the caller runs on without
 * the history. Nothing here logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The schema this pctl writes. */
#define HISTORY_SCHEMA_VERSION 3
/* How long a write waits for another process's lock before it gives up (-EBUSY). */
#define HISTORY_BUSY_TIMEOUT_MS 200

struct history;

struct history_key {
        char exe[256];        /* the executable's path ("sim:NAME" on the model machine) */
        char policy[64];      /* the policy's name */
        uint64_t args_hash;   /* of the arguments after argv[0] (history_hash) */
        char calibration[32]; /* the machine's calibration id (history_hash of its text) */
};

struct history_entry {
        struct history_key key;
        char objective[16];     /* what the score is a score of: "edp", "ppw", ... */
        double p;               /* learned P̂; NaN when it never settled */
        double mem_fraction;    /* frequency sensitivity; NaN when unknown */
        unsigned best_cores;    /* the best configuration measured; 0: none */
        unsigned best_freq_khz; /* 0 without DVFS */
        double best_score;      /* its objective's measured rate (lower is better) */
        /* How many apps pctl managed (this one included) when best_* was measured (schema 3):
         * a start point and its score hold for the machine shared that way. 0: not known (an
         * entry recorded before schema 3). */
        unsigned shared_apps;
        char *stack_json;  /* the last speedup stack as JSON; NULL when none (owned) */
        unsigned runs;     /* runs recorded */
        int64_t updated_s; /* when last recorded (Unix time) */
};

/* Opens (creating when missing, unless read_only) and migrates the file. A file that can be
 * read but not written opens read-only: lookups work, history_store returns -EROFS. Errors:
 * -ENOENT/-EACCES (cannot open), -EBADMSG (not a SQLite database, or corrupt), -EPROTONOSUPPORT
 * (a newer schema), -EBUSY (locked by another process while it had to be migrated), -EROFS
 * (read-only and not yet at this schema). err says which file and what to do. */
int history_open(const char *path, bool read_only, struct history **out, char *err,
                 size_t err_size);
void history_close(struct history *h);
/* Whether the file could only be opened for reading. */
bool history_read_only(const struct history *h);

/* For the daemon's loop: a write never waits for another process's lock. A write that finds
 * the file locked (or finds earlier writes still waiting) is kept in memory, in order, and
 * history_store/history_store_run return -EAGAIN saying so; history_flush writes what waits.
 * At most HISTORY_PENDING_MAX wait; past it the oldest is given up (history_flush says how
 * many). */
#define HISTORY_PENDING_MAX 4096
void history_set_deferred(struct history *h, bool deferred);
/* Writes what waits, in order, until the file is locked again. 0, or an error with err for
 * writes refused for good (they are not kept) or given up. */
int history_flush(struct history *h, char *err, size_t err_size);
/* How many writes wait. */
size_t history_pending(const struct history *h);

/* The entry of key: 0, -ENOENT when there is none, or an error with err. */
int history_lookup(struct history *h, const struct history_key *key, struct history_entry *out,
                   char *err, size_t err_size);
/* Records a run: replaces the entry's figures and counts the run. -EROFS, -EBUSY (locked past
 * HISTORY_BUSY_TIMEOUT_MS: nothing is written), -EAGAIN (deferred: kept for history_flush) or
 * another error with err. The file is created 0600 and kept in WAL mode. */
int history_store(struct history *h, const struct history_entry *e, char *err, size_t err_size);
/* Calls fn for every entry, most recent first; fn returns non-zero to stop. */
int history_foreach(struct history *h, int (*fn)(const struct history_entry *e, void *ctx),
                    void *ctx, char *err, size_t err_size);
/* Forgets the entries of app (an executable's path, or its base name; NULL: every entry);
 * *removed says how many. */
int history_forget(struct history *h, const char *app, unsigned *removed, char *err,
                   size_t err_size);

#define HISTORY_RUN_BINS 32

/* One whole run of an app's work seen with counters (schema 2): what comparing runs at other
 * core counts needs to measure extra parallel work (docs/estimator.md). */
struct history_run {
        double instructions;     /* I0 over the run */
        double instructions_err; /* half-width of its range: the time not seen */
        double cores;            /* instruction-weighted mean core count */
        int64_t updated_s;       /* when it ended (Unix time; 0: now, when storing) */
        /* Its instructions per core count; n_bins 0: only the mean is known. */
        unsigned n_bins;
        struct {
                double cores;
                double instructions;
        } bins[HISTORY_RUN_BINS];
};
/* Runs kept per app identity; storing one more forgets the oldest. */
#define HISTORY_RUNS_KEEP 8

/* Records a whole run of key's app (-EINVAL for a run without positive finite instructions,
 * cores below 1 or a negative error; else as history_store). */
int history_store_run(struct history *h, const struct history_key *key, const struct history_run *r,
                      char *err, size_t err_size);
/* Up to max runs of key's app, oldest first, in out; *n says how many (0: none). */
int history_runs(struct history *h, const struct history_key *key, struct history_run *out,
                 unsigned max, unsigned *n, char *err, size_t err_size);

/* Frees what an entry owns (stack_json). */
void history_entry_clear(struct history_entry *e);

/* FNV-1a over len bytes: the arguments' and the calibration's hashes. */
uint64_t history_hash(const void *data, size_t len);
