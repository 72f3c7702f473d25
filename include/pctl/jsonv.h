/* A small JSON reader for control-socket messages and tests: parses a whole document into a
 * tree. Bounded: depth, and the caller bounds the input size. Errors name the byte offset. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jsonv_type { JSONV_NULL, JSONV_BOOL, JSONV_NUMBER, JSONV_STRING, JSONV_ARRAY, JSONV_OBJECT };

struct jsonv {
        enum jsonv_type type;
        bool b;
        double num;
        char *str;           /* JSONV_STRING: decoded, NUL-terminated */
        char *key;           /* set when this value is a member of an object */
        size_t n;            /* ARRAY/OBJECT: number of items */
        struct jsonv *items; /* ARRAY/OBJECT: n items */
};

#define JSONV_MAX_DEPTH 16

/* Parses text (len bytes, need not be NUL-terminated). Returns 0, or -EINVAL with err
 * saying what and at which byte. Trailing white space is allowed, anything else is not. */
int jsonv_parse(const char *text, size_t len, struct jsonv **out, char *err, size_t err_size);
void jsonv_free(struct jsonv *v);

/* Lookups return NULL when absent or of another type. */
const struct jsonv *jsonv_get(const struct jsonv *obj, const char *key);
const char *jsonv_get_string(const struct jsonv *obj, const char *key);
/* 0 and *out on success; -ENOENT absent; -EINVAL wrong type or not an integer in range. */
int jsonv_get_number(const struct jsonv *obj, const char *key, double *out);
int jsonv_get_int(const struct jsonv *obj, const char *key, int64_t min, int64_t max, int64_t *out);
