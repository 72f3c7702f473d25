#include "pctl/jsonv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jsonv_parser {
        const char *s;
        size_t len, pos;
        char *err;
        size_t err_size;
};

static int jp_fail(struct jsonv_parser *p, const char *what)
{
        if (p->err && p->err_size)
                snprintf(p->err, p->err_size, "%s at byte %zu", what, p->pos);
        return -EINVAL;
}

static void jp_space(struct jsonv_parser *p)
{
        while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
                p->pos++;
}

static bool jp_literal(struct jsonv_parser *p, const char *lit)
{
        size_t n = strlen(lit);

        if (p->len - p->pos < n || memcmp(p->s + p->pos, lit, n) != 0)
                return false;
        p->pos += n;
        return true;
}

static int hex4(struct jsonv_parser *p, unsigned *out)
{
        unsigned v = 0;

        if (p->len - p->pos < 4)
                return jp_fail(p, "short \\u escape");
        for (int i = 0; i < 4; i++) {
                char c = p->s[p->pos++];

                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (unsigned)(c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (unsigned)(c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (unsigned)(c - 'A' + 10);
                else
                        return jp_fail(p, "bad \\u escape");
        }
        *out = v;
        return 0;
}

static size_t utf8_put(char *d, unsigned cp)
{
        if (cp < 0x80) {
                d[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                d[0] = (char)(0xc0 | (cp >> 6));
                d[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                d[0] = (char)(0xe0 | (cp >> 12));
                d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                d[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        d[0] = (char)(0xf0 | (cp >> 18));
        d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        d[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}

/* The decoded string is never longer than the quoted source, so one allocation suffices. */
static int jp_string(struct jsonv_parser *p, char **out)
{
        size_t start = ++p->pos, n = 0;
        char *d;

        while (p->pos < p->len && p->s[p->pos] != '"') {
                if (p->s[p->pos] == '\\')
                        p->pos++;
                p->pos++;
        }
        if (p->pos >= p->len)
                return jp_fail(p, "unterminated string");
        d = malloc(p->pos - start + 1);
        if (!d)
                return -ENOMEM;
        p->pos = start;
        while (p->s[p->pos] != '"') {
                unsigned char c = (unsigned char)p->s[p->pos++];

                if (c < 0x20) {
                        free(d);
                        return jp_fail(p, "control character in string");
                }
                if (c != '\\') {
                        d[n++] = (char)c;
                        continue;
                }
                c = (unsigned char)p->s[p->pos++];
                switch (c) {
                case '"':
                        d[n++] = '"';
                        break;
                case '\\':
                        d[n++] = '\\';
                        break;
                case '/':
                        d[n++] = '/';
                        break;
                case 'b':
                        d[n++] = '\b';
                        break;
                case 'f':
                        d[n++] = '\f';
                        break;
                case 'n':
                        d[n++] = '\n';
                        break;
                case 'r':
                        d[n++] = '\r';
                        break;
                case 't':
                        d[n++] = '\t';
                        break;
                case 'u': {
                        unsigned cp, lo;

                        if (hex4(p, &cp) < 0) {
                                free(d);
                                return -EINVAL;
                        }
                        if (cp >= 0xd800 && cp < 0xdc00 && p->len - p->pos >= 6 &&
                            p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
                                p->pos += 2;
                                if (hex4(p, &lo) < 0) {
                                        free(d);
                                        return -EINVAL;
                                }
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        }
                        if (cp == 0) {
                                free(d);
                                return jp_fail(p, "NUL in string");
                        }
                        n += utf8_put(d + n, cp);
                        break;
                }
                default:
                        free(d);
                        return jp_fail(p, "bad escape");
                }
        }
        p->pos++;
        d[n] = '\0';
        *out = d;
        return 0;
}

static int jp_value(struct jsonv_parser *p, struct jsonv *v, unsigned depth);

static int jp_push(struct jsonv *v, size_t *cap)
{
        if (v->n == *cap) {
                size_t ncap = *cap ? *cap * 2 : 4;
                struct jsonv *items = realloc(v->items, ncap * sizeof(*items));

                if (!items)
                        return -ENOMEM;
                v->items = items;
                *cap = ncap;
        }
        v->items[v->n] = (struct jsonv){0};
        return 0;
}

static int jp_container(struct jsonv_parser *p, struct jsonv *v, unsigned depth, bool object)
{
        char close = object ? '}' : ']';
        size_t cap = 0;
        int r;

        if (depth >= JSONV_MAX_DEPTH)
                return jp_fail(p, "nested too deep");
        v->type = object ? JSONV_OBJECT : JSONV_ARRAY;
        p->pos++;
        jp_space(p);
        if (p->pos < p->len && p->s[p->pos] == close) {
                p->pos++;
                return 0;
        }
        for (;;) {
                struct jsonv *item;

                r = jp_push(v, &cap);
                if (r < 0)
                        return r;
                item = &v->items[v->n++];
                jp_space(p);
                if (object) {
                        if (p->pos >= p->len || p->s[p->pos] != '"')
                                return jp_fail(p, "expected a key");
                        r = jp_string(p, &item->key);
                        if (r < 0)
                                return r;
                        jp_space(p);
                        if (p->pos >= p->len || p->s[p->pos] != ':')
                                return jp_fail(p, "expected ':'");
                        p->pos++;
                }
                r = jp_value(p, item, depth + 1);
                if (r < 0)
                        return r;
                jp_space(p);
                if (p->pos < p->len && p->s[p->pos] == ',') {
                        p->pos++;
                        continue;
                }
                if (p->pos < p->len && p->s[p->pos] == close) {
                        p->pos++;
                        return 0;
                }
                return jp_fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
}

static int jp_number(struct jsonv_parser *p, struct jsonv *v)
{
        char buf[64];
        size_t n = 0;
        char *end;

        while (p->pos + n < p->len && n < sizeof(buf) - 1 &&
               strchr("0123456789+-.eE", p->s[p->pos + n]) && p->s[p->pos + n])
                n++;
        memcpy(buf, p->s + p->pos, n);
        buf[n] = '\0';
        v->num = strtod(buf, &end);
        if (n == 0 || *end || !isfinite(v->num))
                return jp_fail(p, "bad number");
        v->type = JSONV_NUMBER;
        p->pos += n;
        return 0;
}

static int jp_value(struct jsonv_parser *p, struct jsonv *v, unsigned depth)
{
        jp_space(p);
        if (p->pos >= p->len)
                return jp_fail(p, "unexpected end");
        switch (p->s[p->pos]) {
        case '{':
                return jp_container(p, v, depth, true);
        case '[':
                return jp_container(p, v, depth, false);
        case '"':
                v->type = JSONV_STRING;
                return jp_string(p, &v->str);
        case 't':
        case 'f':
                v->type = JSONV_BOOL;
                v->b = p->s[p->pos] == 't';
                if (jp_literal(p, v->b ? "true" : "false"))
                        return 0;
                return jp_fail(p, "bad literal");
        case 'n':
                v->type = JSONV_NULL;
                if (jp_literal(p, "null"))
                        return 0;
                return jp_fail(p, "bad literal");
        default:
                return jp_number(p, v);
        }
}

static void jsonv_clear(struct jsonv *v)
{
        for (size_t i = 0; i < v->n; i++)
                jsonv_clear(&v->items[i]);
        free(v->items);
        free(v->str);
        free(v->key);
}

void jsonv_free(struct jsonv *v)
{
        if (!v)
                return;
        jsonv_clear(v);
        free(v);
}

int jsonv_parse(const char *text, size_t len, struct jsonv **out, char *err, size_t err_size)
{
        struct jsonv_parser p = {.s = text, .len = len, .err = err, .err_size = err_size};
        struct jsonv *v = calloc(1, sizeof(*v));
        int r;

        if (!v)
                return -ENOMEM;
        r = jp_value(&p, v, 0);
        if (r == 0) {
                jp_space(&p);
                if (p.pos != p.len)
                        r = jp_fail(&p, "trailing characters");
        }
        if (r < 0) {
                jsonv_free(v);
                return r;
        }
        *out = v;
        return 0;
}

const struct jsonv *jsonv_get(const struct jsonv *obj, const char *key)
{
        if (!obj || obj->type != JSONV_OBJECT)
                return NULL;
        for (size_t i = 0; i < obj->n; i++)
                if (strcmp(obj->items[i].key, key) == 0)
                        return &obj->items[i];
        return NULL;
}

const char *jsonv_get_string(const struct jsonv *obj, const char *key)
{
        const struct jsonv *v = jsonv_get(obj, key);

        return v && v->type == JSONV_STRING ? v->str : NULL;
}

int jsonv_get_number(const struct jsonv *obj, const char *key, double *out)
{
        const struct jsonv *v = jsonv_get(obj, key);

        if (!v)
                return -ENOENT;
        if (v->type != JSONV_NUMBER)
                return -EINVAL;
        *out = v->num;
        return 0;
}

int jsonv_get_int(const struct jsonv *obj, const char *key, int64_t min, int64_t max, int64_t *out)
{
        double d;
        int r = jsonv_get_number(obj, key, &d);

        if (r < 0)
                return r;
        if (d != floor(d) || d < (double)min || d > (double)max)
                return -EINVAL;
        *out = (int64_t)d;
        return 0;
}
