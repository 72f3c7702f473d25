/* The text of a /proc/PID/stat (or /proc/PID/task/TID/stat) line. proc(5) numbers its fields
 * from 1: 1 the PID, 2 the command name in parentheses, 3 the state letter, then numbers, one
 * space apart. A process names itself, and the name may hold spaces and parentheses, so the
 * line is outside input: the name runs from the first '(' to the last ')', and the fields after
 * it are counted from there (the numbers never hold a ')').
 *
 * Pure functions of a NUL-terminated buffer: callers read the file as they read the others.
 * A trailing newline ends the line. Each returns 0 or a negative errno, -EBADMSG for a line
 * that does not hold what was asked (no ") ", too few fields, a field that is not a number
 * or does not fit), and writes its output only on success. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Field 2, without its parentheses, cut to size - 1 bytes (the kernel's names are short; a
 * longer one is still that process). Needs only the parentheses, not the fields after them.
 * -EINVAL for size 0. */
int procstat_comm(const char *text, char *comm, size_t size);

/* Field 3: one byte. Which letters are states is the caller's to judge: the set has changed
 * between kernels. */
int procstat_state(const char *text, char *state);

/* Numeric field `field` (1, or 4 and on), a whole decimal integer. -EINVAL for a field that is
 * no number (below 1, the name, the state): a caller's mistake, not the line's. The _u64 form
 * is for the fields proc(5) gives as unsigned and takes no sign. */
int procstat_field(const char *text, int field, long long *value);
int procstat_field_u64(const char *text, int field, uint64_t *value);
