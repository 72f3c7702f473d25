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

/* Aborts when a descriptor opened while parsing was left open: the lowest free descriptor
 * must be the same after every input as after the first. Call at the end of each input. */
void fuzz_check_fds(void);

/* libFuzzer's entry point, declared for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
