/* A small streaming JSON writer: commas and nesting are tracked, strings are escaped, and a
 * number that is not finite is written as null (a figure that is unknown is never invented). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
        FILE *f;
        unsigned depth;
        bool need_comma[JSON_MAX_DEPTH];
        bool after_key;
        bool pretty;
};

void json_init(struct json *j, FILE *f, bool pretty);
void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_double(struct json *j, double v);
void json_int(struct json *j, int64_t v);
void json_uint(struct json *j, uint64_t v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* Ends the document with a newline. */
void json_finish(struct json *j);

/* key + value shorthands for objects. */
static inline void json_kv_string(struct json *j, const char *k, const char *v)
{
        json_key(j, k);
        json_string(j, v);
}
static inline void json_kv_double(struct json *j, const char *k, double v)
{
        json_key(j, k);
        json_double(j, v);
}
static inline void json_kv_int(struct json *j, const char *k, int64_t v)
{
        json_key(j, k);
        json_int(j, v);
}
static inline void json_kv_uint(struct json *j, const char *k, uint64_t v)
{
        json_key(j, k);
        json_uint(j, v);
}
static inline void json_kv_bool(struct json *j, const char *k, bool v)
{
        json_key(j, k);
        json_bool(j, v);
}
