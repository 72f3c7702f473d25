#include "pctl/json.h"

#include <inttypes.h>
#include <math.h>

void json_init(struct json *j, FILE *f, bool pretty)
{
        *j = (struct json){.f = f, .pretty = pretty};
}

static void indent(struct json *j)
{
        if (!j->pretty)
                return;
        fputc('\n', j->f);
        for (unsigned i = 0; i < j->depth; i++)
                fputs("  ", j->f);
}

/* Called before every value or key: writes the separator the position needs. */
static void json_prefix(struct json *j)
{
        if (j->after_key) {
                j->after_key = false;
                return;
        }
        if (j->need_comma[j->depth])
                fputc(',', j->f);
        if (j->depth > 0)
                indent(j);
        j->need_comma[j->depth] = true;
}

static void json_open(struct json *j, char c)
{
        json_prefix(j);
        fputc(c, j->f);
        if (j->depth + 1 < JSON_MAX_DEPTH)
                j->depth++;
        j->need_comma[j->depth] = false;
}

static void json_close(struct json *j, char c)
{
        bool had_items = j->need_comma[j->depth];

        if (j->depth > 0)
                j->depth--;
        if (had_items)
                indent(j);
        fputc(c, j->f);
}

void json_object_begin(struct json *j)
{
        json_open(j, '{');
}
void json_object_end(struct json *j)
{
        json_close(j, '}');
}
void json_array_begin(struct json *j)
{
        json_open(j, '[');
}
void json_array_end(struct json *j)
{
        json_close(j, ']');
}

static void json_escaped(FILE *f, const char *s)
{
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                switch (*p) {
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                case '\r':
                        fputs("\\r", f);
                        break;
                case '\t':
                        fputs("\\t", f);
                        break;
                default:
                        if (*p < 0x20)
                                fprintf(f, "\\u%04x", *p);
                        else
                                fputc(*p, f);
                }
        }
        fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
        json_prefix(j);
        json_escaped(j->f, key);
        fputs(j->pretty ? ": " : ":", j->f);
        j->after_key = true;
}

void json_string(struct json *j, const char *s)
{
        json_prefix(j);
        if (s)
                json_escaped(j->f, s);
        else
                fputs("null", j->f);
}

void json_double(struct json *j, double v)
{
        json_prefix(j);
        if (isfinite(v))
                fprintf(j->f, "%.10g", v);
        else
                fputs("null", j->f);
}

void json_int(struct json *j, int64_t v)
{
        json_prefix(j);
        fprintf(j->f, "%" PRId64, v);
}

void json_uint(struct json *j, uint64_t v)
{
        json_prefix(j);
        fprintf(j->f, "%" PRIu64, v);
}

void json_bool(struct json *j, bool v)
{
        json_prefix(j);
        fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
        json_prefix(j);
        fputs("null", j->f);
}

void json_finish(struct json *j)
{
        fputc('\n', j->f);
        fflush(j->f);
}
