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

/* Length of the valid UTF-8 sequence at s (at most len bytes) that encodes a printable
 * character beyond ASCII, else 0: C1 controls, overlong forms and stray bytes are not text. */
static size_t utf8_printable(const unsigned char *s, size_t len)
{
        size_t n = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
                   : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                   : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                                  : 0;

        if (n == 0 || n > len)
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        if ((s[0] == 0xc2 && s[1] < 0xa0) || (s[0] == 0xe0 && s[1] < 0xa0) ||
            (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
                return 0;
        return n;
}

size_t strescape(char *dst, size_t size, const char *src, size_t len)
{
        static const char hex[] = "0123456789abcdef";
        const unsigned char *s = (const unsigned char *)src;
        size_t out = 0;

        if (size == 0)
                return 0;
        for (size_t i = 0; i < len;) {
                size_t u = utf8_printable(s + i, len - i), n, take;
                char esc[4];

                if (u) {
                        n = take = u;
                        memcpy(esc, s + i, u);
                } else if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\') {
                        n = take = 1;
                        esc[0] = (char)s[i];
                } else if (s[i] == '\\') {
                        n = 2, take = 1;
                        memcpy(esc, "\\\\", 2);
                } else {
                        n = 4, take = 1;
                        esc[0] = '\\', esc[1] = 'x', esc[2] = hex[s[i] >> 4],
                        esc[3] = hex[s[i] & 15];
                }
                if (out + n >= size)
                        break;
                memcpy(dst + out, esc, n);
                out += n;
                i += take;
        }
        dst[out] = '\0';
        return out;
}
