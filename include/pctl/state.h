/* The actuators' record of what they changed on the machine, kept under the state directory
 * (default /run/pctl) so that the next start can undo what a crashed instance left.
 *
 * Every entry is written (to a temporary file, fsync'd, renamed over the record) BEFORE the
 * change it describes is made. The record is a line-oriented text file, STATE_RECORD_FILE:
 *
 *   pctl-actuators 1
 *   dir PATH                              a cgroup directory we created (removed on restore)
 *   task PID TID START ORIGIN MASK        a thread we moved or re-pinned: ORIGIN is the file to
 *                                         write TID into to move it back ("-" in affinity
 *                                         mode), MASK its own affinity ("0-3,8"), START its
 *                                         start time in clock ticks (guards against PID reuse)
 *   freq POLICY GOVERNOR MIN_KHZ MAX_KHZ  a cpufreq policy directory and its original settings
 *   unit NAME ALLOWED                     a systemd unit whose AllowedCPUs= we change, and its
 *                                         value before ("0-3", or "-" for not set)
 *
 * Paths are absolute and contain no white space. The record is guarded by an flock on
 * STATE_LOCK_FILE: one holder at a time, released by the kernel when the holder dies.
 *
 * Nothing the file holds is lost before it is restored: opening reads the whole file into the
 * in-memory record, which every commit writes back. A line that cannot be read is reported
 * (state_record_problems) and kept, less its surrounding white space, in every later commit until
 * an operator removes it; a file whose first line is not the format's is renamed aside, whole, not
 * rewritten. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pctl/cpumask.h"

#define STATE_RECORD_FILE "actuators.state"
#define STATE_LOCK_FILE "actuators.lock"
#define STATE_PATH_MAX 512

enum state_kind { STATE_DIR, STATE_TASK, STATE_FREQ, STATE_UNIT };

struct state_entry {
        enum state_kind kind;
        char path[STATE_PATH_MAX]; /* dir: the directory; task: origin file or "-"; freq: policy;
                                      unit: the unit's name */
        pid_t pid, tid;
        unsigned long long start_ticks;
        struct cpumask mask; /* task: its own affinity; unit: AllowedCPUs= (empty: not set) */
        char governor[32];
        unsigned min_khz, max_khz;
};

#define STATE_PROBLEM_MAX 200
#define STATE_PROBLEMS_LISTED 32

#define STATE_PROBLEM_TEXT 64

/* A line of the file that could not be read, and why, in words. */
struct state_problem {
        unsigned line; /* in the file as open read it */
        char why[STATE_PROBLEM_MAX];
        char text[STATE_PROBLEM_TEXT]; /* its beginning, control bytes as '?'; "" for a file
                                        * set aside */
};

struct state_record;

/* Creates dir if needed, takes the lock (-EBUSY when another live process holds it) and reads
 * the file: its entries are the in-memory record from then on. Fails only when the file
 * cannot be read at all (-errno of the read), never for what is in it. */
int state_record_open(const char *dir, struct state_record **out);
/* The lines open could not read (line numbers of the file as it was): the first
 * STATE_PROBLEMS_LISTED of them (*n_listed), and how many there were (*n_all, may be NULL). */
const struct state_problem *state_record_problems(const struct state_record *r, size_t *n_listed,
                                                  size_t *n_all);
/* How many of those lines the record keeps (a file set aside keeps none of its lines). */
size_t state_record_kept(const struct state_record *r);
/* Hands over the in-memory entries (after open: what a previous holder left), in the order
 * they were made, and empties the in-memory record: whoever takes them adds back what they
 * could not undo before the next commit. *entries is malloc'd (NULL when there are none). */
int state_record_take(struct state_record *r, struct state_entry **entries, size_t *n);
/* Adds to / removes from the in-memory record; state_record_commit writes it. */
int state_record_add(struct state_record *r, const struct state_entry *e);
/* Removes the entry with the same identity (dir/freq: path; task: pid and tid). */
void state_record_remove(struct state_record *r, const struct state_entry *e);
/* Atomically replaces the file with the in-memory record and the kept lines; removes it when
 * both are empty. */
int state_record_commit(struct state_record *r);
size_t state_record_count(const struct state_record *r);
/* Releases the lock and frees r. The file stays as committed. NULL is fine. */
void state_record_close(struct state_record *r);

/* One line of the file, without the newline. Exposed for tests. */
int state_entry_format(const struct state_entry *e, char *buf, size_t size);
/* why (may be NULL) says what is wrong with a refused line; *out is written only on success. */
int state_entry_parse(const char *line, struct state_entry *out, char *why, size_t why_size);
