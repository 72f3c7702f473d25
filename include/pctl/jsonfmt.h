/* The project's rules for JSON it writes with json-c: what a missing figure looks like, how
 * numbers are printed, and how a document is laid out. Everything else is json-c itself. */
#pragma once

#include <errno.h>
#include <json-c/json.h>
#include <json-c/json_visit.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

/* A figure that is unknown (NaN, ±Inf) is written as null, never invented. Finite numbers are
 * printed with %.10g, as pctl always has: json-c's own format would add ".0" and 17 digits. */
static inline struct json_object *jsonfmt_double(double v)
{
        char text[32];

        if (!isfinite(v))
                return NULL; /* json-c writes a NULL member or item as null */
        snprintf(text, sizeof(text), "%.10g", v);
        return json_object_new_double_s(v, text);
}

/* A string that is not there is null, not "". */
static inline struct json_object *jsonfmt_string(const char *s)
{
        return s ? json_object_new_string(s) : NULL;
}

/* Pretty output keeps empty containers as [] and {} (json-c would break them over lines). */
static inline int jsonfmt_visit_empty(struct json_object *o, int flags, struct json_object *parent,
                                      const char *key, size_t *index, void *userdata)
{
        (void)parent;
        (void)key;
        (void)index;
        (void)userdata;
        if (flags == JSON_C_VISIT_SECOND)
                return JSON_C_VISIT_RETURN_CONTINUE;
        if (json_object_is_type(o, json_type_array) && json_object_array_length(o) == 0)
                json_object_set_serializer(o, json_object_userdata_to_json_string, (void *)"[]",
                                           NULL);
        if (json_object_is_type(o, json_type_object) && json_object_object_length(o) == 0)
                json_object_set_serializer(o, json_object_userdata_to_json_string, (void *)"{}",
                                           NULL);
        return JSON_C_VISIT_RETURN_CONTINUE;
}

/* The flags of every document pctl writes: "/" is not escaped; pretty is two-space indented
 * with "key": value, plain is one line without spaces. */
static inline int jsonfmt_flags(bool pretty)
{
        return JSON_C_TO_STRING_NOSLASHESCAPE |
               (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                       : JSON_C_TO_STRING_PLAIN);
}

/* Writes o as one document ending in a newline. Returns 0, -ENOMEM or -EIO. */
static inline int jsonfmt_print(FILE *f, struct json_object *o, bool pretty)
{
        const char *text;

        if (pretty)
                json_c_visit(o, 0, jsonfmt_visit_empty, NULL);
        text = json_object_to_json_string_ext(o, jsonfmt_flags(pretty));
        if (!text)
                return -ENOMEM;
        fputs(text, f);
        fputc('\n', f);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
