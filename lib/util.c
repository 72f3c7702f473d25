#include "pctl/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int parse_double(const char *s, double *out)
{
        char *end;
        double v;

        if (!s || !*s || isspace((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (*end)
                return -EINVAL;
        if (errno == ERANGE || !isfinite(v))
                return -ERANGE;
        *out = v;
        return 0;
}

int parse_u64(const char *s, uint64_t *out)
{
        unsigned long long v;
        char *end;

        /* strtoull accepts "-1" and wraps it; a count never starts with a sign. */
        if (!s || !isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (*end)
                return -EINVAL;
        if (errno == ERANGE)
                return -ERANGE;
        *out = v;
        return 0;
}

int parse_uint(const char *s, unsigned *out)
{
        uint64_t v;
        int r = parse_u64(s, &v);

        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *out = (unsigned)v;
        return 0;
}

int parse_int(const char *s, int *out)
{
        long v;
        char *end;

        if (!s || !*s || isspace((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (*end)
                return -EINVAL;
        if (errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
                return -ERANGE;
        *out = (int)v;
        return 0;
}

int parse_bool(const char *s, bool *out)
{
        static const char *const yes[] = {"1", "yes", "true", "on"};
        static const char *const no[] = {"0", "no", "false", "off"};

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *out = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *out = false;
                        return 0;
                }
        }
        return -EINVAL;
}

uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int strscpy(char *dst, const char *src, size_t n)
{
        size_t len = strlen(src);

        if (n == 0)
                return -ENAMETOOLONG;
        if (len >= n) {
                memcpy(dst, src, n - 1);
                dst[n - 1] = '\0';
                return -ENAMETOOLONG;
        }
        memcpy(dst, src, len + 1);
        return 0;
}

char *strstrip(char *s)
{
        char *end;

        while (isspace((unsigned char)*s))
                s++;
        end = s + strlen(s);
        while (end > s && isspace((unsigned char)end[-1]))
                *--end = '\0';
        return s;
}

size_t strescape(char *dst, size_t size, const char *src, size_t len)
{
        static const char hex[] = "0123456789abcdef";
        size_t out = 0;

        if (size == 0)
                return 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)src[i];
                char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
                size_t n = c >= 0x20 && c < 0x7f && c != '\\' ? 1 : c == '\\' ? 2 : 4;

                if (c == '\\')
                        esc[1] = '\\';
                else if (n == 1)
                        esc[0] = (char)c;
                if (out + n >= size)
                        break;
                memcpy(dst + out, esc, n);
                out += n;
        }
        dst[out] = '\0';
        return out;
}
