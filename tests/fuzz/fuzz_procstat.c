/* /proc/PID/stat lines (lib/procstat.c), which six places read: a process names itself, and
 * the command name may hold anything, parentheses and spaces too. A refusal is -EBADMSG for
 * the line or -EINVAL for a field that is no number, and writes nothing; a name found is the
 * text after the first '(' and fits its buffer; a state is one byte after ") "; a number
 * found has its digits in the line, and both forms agree on it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/procstat.h"

static void check_comm(const char *text, size_t size)
{
        char buf[64];
        int r;

        memset(buf, 'K', sizeof(buf));
        r = procstat_comm(text, buf, size);
        if (r == 0) {
                const char *open = strchr(text, '(');
                size_t len = strnlen(buf, sizeof(buf));

                if (!open || len >= size || memcmp(open + 1, buf, len) != 0 || !strchr(open, ')'))
                        abort();
        } else if (r != -EBADMSG || buf[0] != 'K') {
                abort();
        }
}

static void check_field(const char *text, int field)
{
        char num[32];
        long long v = 7;
        uint64_t u = 7;
        int r = procstat_field(text, field, &v), ru = procstat_field_u64(text, field, &u);

        if (field < 1 || field == 2 || field == 3) {
                if (r != -EINVAL || ru != -EINVAL || v != 7 || u != 7)
                        abort();
                return;
        }
        if ((r != 0 && (r != -EBADMSG || v != 7)) || (ru != 0 && (ru != -EBADMSG || u != 7)))
                abort();
        /* Both read the same digits: where both answer they agree, and an unsigned number that
         * fits a long long is read by both. */
        if (r == 0 && ru == 0 && (v < 0 || (uint64_t)v != u))
                abort();
        if (ru == 0 && u <= INT64_MAX && r != 0)
                abort();
        /* The digits are in the line (after any '-' and leading zeros). */
        if (r == 0) {
                snprintf(num, sizeof(num), "%" PRIu64, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
                if (!strstr(text, num) || (v < 0 && !strchr(text, '-')))
                        abort();
        }
        if (ru == 0) {
                snprintf(num, sizeof(num), "%" PRIu64, u);
                if (!strstr(text, num))
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* The fields pctl reads, the ends of the line, and one the input picks. */
        static const int fields[] = {-1, 0, 1, 2, 3, 4, 9, 14, 17, 22, 39, 52, 53};
        char *text = fuzz_text(data, size);
        char state = '?';
        int r;

        if (!text)
                abort();
        check_comm(text, 64);
        check_comm(text, 4);
        check_comm(text, 1);
        if (procstat_comm(text, &state, 0) != -EINVAL || state != '?')
                abort();
        r = procstat_state(text, &state);
        if (r == 0) {
                char after[4] = {')', ' ', state, '\0'};

                if (state == ' ' || state == '\n' || state == '\0' || !strstr(text, after))
                        abort();
        } else if (r != -EBADMSG || state != '?') {
                abort();
        }
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
                check_field(text, fields[i]);
        if (size > 0)
                check_field(text, (int)data[0] - 64);
        free(text);
        return 0;
}
