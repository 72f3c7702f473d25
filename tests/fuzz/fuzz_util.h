/* What the harnesses share: the input as a C string, and the input as a file for the parsers
 * that only take a path. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* A NUL-terminated copy of the input (a NUL inside it ends the text early, as it would for
 * the parser reading a file through stdio); free() it. NULL when out of memory. */
char *fuzz_text(const uint8_t *data, size_t size);

/* A path whose content is exactly the input: "/proc/self/fd/N" of one memfd that the process
 * keeps and rewrites on every call, so a run of millions of inputs creates no file, writes
 * nothing to disk and opens no descriptor per input. NULL when the memfd cannot be written. */
const char *fuzz_file(const uint8_t *data, size_t size);

/* The lowest free descriptor, at the start of an input (after fuzz_file, which opens its
 * memfd once). */
int fuzz_fds_mark(void);
/* Aborts when a descriptor opened while parsing was left open: the lowest free descriptor
 * is higher than at the mark. Only within one input: between inputs the sanitizer runtime
 * keeps descriptors of its own (the first leak check opens one). */
void fuzz_check_fds(int mark);

/* libFuzzer's entry point, declared for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
