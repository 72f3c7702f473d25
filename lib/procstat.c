#include "pctl/procstat.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "pctl/util.h"

/* A field ends at the space before the next one, or at the end of the line. */
#define PROCSTAT_SEP " \n"

/* The command name's parentheses: the first '(' and the last ')' after it. */
static int procstat_parens(const char *text, const char **open, const char **close)
{
        const char *o = strchr(text, '('), *c = strrchr(text, ')');

        if (!o || !c || c < o)
                return -EBADMSG;
        *open = o;
        *close = c;
        return 0;
}

/* Where field `field` (1, or 3 and on) starts in the line, and its length (never 0). */
static int procstat_token(const char *text, int field, const char **start, size_t *len)
{
        const char *open, *close, *p;
        int r = procstat_parens(text, &open, &close);

        if (r < 0)
                return r;
        if (field == 1) {
                p = text;
        } else {
                if (close[1] != ' ')
                        return -EBADMSG;
                p = close + 2;
                for (int f = 3; f < field; f++) {
                        p += strcspn(p, PROCSTAT_SEP);
                        if (*p != ' ')
                                return -EBADMSG;
                        p++;
                }
        }
        *len = strcspn(p, PROCSTAT_SEP);
        if (*len == 0)
                return -EBADMSG;
        *start = p;
        return 0;
}

/* The digits of a numeric field, copied out so that parse_u64() sees them whole; *negative
 * when it had a '-' (allowed or not, as the caller asks). */
static int procstat_magnitude(const char *text, int field, bool sign_ok, uint64_t *magnitude,
                              bool *negative)
{
        char digits[24];
        const char *p;
        size_t len;
        bool neg;
        int r;

        if (field < 1 || field == 2 || field == 3)
                return -EINVAL;
        r = procstat_token(text, field, &p, &len);
        if (r < 0)
                return r;
        neg = sign_ok && *p == '-';
        p += neg;
        len -= neg;
        /* Longer than any 64-bit number: not one. */
        if (len >= sizeof(digits))
                return -EBADMSG;
        memcpy(digits, p, len);
        digits[len] = '\0';
        if (parse_u64(digits, magnitude) < 0)
                return -EBADMSG;
        *negative = neg;
        return 0;
}

int procstat_field(const char *text, int field, long long *value)
{
        uint64_t m;
        bool neg;
        int r = procstat_magnitude(text, field, true, &m, &neg);

        if (r < 0)
                return r;
        if (m > (neg ? (uint64_t)LLONG_MAX + 1 : (uint64_t)LLONG_MAX))
                return -EBADMSG;
        /* Negated as unsigned: LLONG_MIN's magnitude does not fit in a long long. */
        *value = neg ? (long long)(0 - m) : (long long)m;
        return 0;
}

int procstat_field_u64(const char *text, int field, uint64_t *value)
{
        uint64_t m;
        bool neg;
        int r = procstat_magnitude(text, field, false, &m, &neg);

        if (r < 0)
                return r;
        *value = m;
        return 0;
}

int procstat_state(const char *text, char *state)
{
        const char *p;
        size_t len;
        int r = procstat_token(text, 3, &p, &len);

        if (r < 0)
                return r;
        if (len != 1)
                return -EBADMSG;
        *state = *p;
        return 0;
}

int procstat_comm(const char *text, char *comm, size_t size)
{
        const char *open, *close;
        size_t len;
        int r;

        if (size == 0)
                return -EINVAL;
        r = procstat_parens(text, &open, &close);
        if (r < 0)
                return r;
        len = (size_t)(close - open - 1);
        if (len > size - 1)
                len = size - 1;
        memcpy(comm, open + 1, len);
        comm[len] = '\0';
        return 0;
}
