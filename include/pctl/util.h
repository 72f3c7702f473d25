/* Small helpers every module uses: cleanup attributes, strict number parsing, clocks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC 1000000000ULL
#define NSEC_PER_MSEC 1000000ULL

static inline void freep(void *p)
{
        free(*(void **)p);
}
static inline void closep(int *fd)
{
        if (*fd >= 0)
                close(*fd);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))
#define _cleanup_close_ __attribute__((cleanup(closep)))

/* Parsers accept the whole string or nothing: trailing junk, overflow and empty input are
 * -EINVAL / -ERANGE, and *out is written only on success. */
int parse_double(const char *s, double *out);
int parse_u64(const char *s, uint64_t *out);
int parse_uint(const char *s, unsigned *out);
int parse_int(const char *s, int *out);
int parse_bool(const char *s, bool *out);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);

/* Copies src into dst of size n, always terminated; returns -ENAMETOOLONG if it was cut. */
int strscpy(char *dst, const char *src, size_t n);

/* Copies len bytes of src into dst as printable text: a control byte, or a byte that is not
 * part of a printable UTF-8 character, becomes \xNN and a backslash \\, so text from outside
 * (a file, a request, a process name) can go into a message or log line without reaching the
 * terminal raw. Stops at a whole character when dst is full; always terminated. Returns the
 * length written. */
size_t strescape(char *dst, size_t size, const char *src, size_t len);

/* Trims leading and trailing white space in place and returns the first non-space char. */
char *strstrip(char *s);
