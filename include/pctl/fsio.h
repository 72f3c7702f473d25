/* Every sysfs, procfs and cgroupfs path goes through here. The root prefix is set once at
 * start-up (tests point it at a tree of their own); modules never read the environment. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "" (the default) is the real root. Call once, before any other fs_* call. */
int fs_set_root(const char *root);
const char *fs_root(void);

/* Formats root + path into buf. -ENAMETOOLONG if it does not fit. */
int fs_path(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reads a whole small file (under `size` bytes) under the root into buf, NUL-terminated, a
 * trailing newline removed. Returns the length or -errno. */
ssize_t fs_read(const char *path, char *buf, size_t size);
int fs_read_u64(const char *path, uint64_t *out);
/* Writes the string in one write(2), as kernel interfaces want. Returns 0 or -errno. */
int fs_write(const char *path, const char *value);

/* The same without the root prefix, for paths that already carry it. */
ssize_t file_read(const char *abs_path, char *buf, size_t size);
/* file_read of a path relative to an open directory (openat(2) semantics). */
ssize_t file_read_at(int dir_fd, const char *path, char *buf, size_t size);
int file_write(const char *abs_path, const char *value);
