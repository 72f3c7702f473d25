/* Text from outside in /metrics (daemon/metrics.c): an app's name and any label value come
 * from processes and requests (a job tag from Slurm). Whatever the bytes, a label value must come
 * out as valid UTF-8 with no raw quote, line feed or lone backslash, unescape to the input where
 * the input was UTF-8, and be cut only at a whole character; and the input as a metrics_listen
 * value is accepted or refused with a reason. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz_util.h"
#include "pctl/metrics.h"

/* Undoes the format's three escapes; false on any other backslash sequence, or a raw quote
 * or line feed (either would end the value or the line). */
static bool unescape(const char *s, char *out)
{
        for (; *s; s++) {
                if (*s == '"' || *s == '\n')
                        return false;
                if (*s != '\\') {
                        *out++ = *s;
                        continue;
                }
                s++;
                if (*s == '\\' || *s == '"')
                        *out++ = *s;
                else if (*s == 'n')
                        *out++ = '\n';
                else
                        return false;
        }
        *out = '\0';
        return true;
}

/* Whether s is UTF-8: no stray continuation byte, no truncated, overlong or surrogate form. */
static bool valid_utf8(const unsigned char *s)
{
        while (*s) {
                unsigned cp;
                size_t n;

                if (*s < 0x80) {
                        s++;
                        continue;
                }
                if ((*s & 0xe0) == 0xc0)
                        n = 2, cp = *s & 0x1f;
                else if ((*s & 0xf0) == 0xe0)
                        n = 3, cp = *s & 0x0f;
                else if ((*s & 0xf8) == 0xf0)
                        n = 4, cp = *s & 0x07;
                else
                        return false;
                for (size_t i = 1; i < n; i++) {
                        if ((s[i] & 0xc0) != 0x80)
                                return false;
                        cp = cp << 6 | (s[i] & 0x3f);
                }
                if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
                    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                        return false;
                s += n;
        }
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_text(data, size), *escaped, *back, *rendered;
        struct metrics_snapshot *snap;
        struct sockaddr_storage sa;
        socklen_t sa_len;
        char why[256] = "", cut[16];
        size_t need, len, n;

        if (!text)
                abort();
        need = metrics_escape_label(NULL, 0, text);
        escaped = malloc(need + 1);
        back = malloc(need + 1);
        if (!escaped || !back)
                abort();
        if (metrics_escape_label(escaped, need + 1, text) != need || strlen(escaped) != need)
                abort();
        if (!valid_utf8((const unsigned char *)escaped) || !unescape(escaped, back))
                abort();
        /* Without the replacement character in it, the input was UTF-8 and comes back. */
        if (!strstr(escaped, "\xef\xbf\xbd") && !strstr(text, "\xef\xbf\xbd") &&
            strcmp(back, text) != 0)
                abort();
        /* Cut short: a prefix of the whole, ending at a whole character or escape. */
        n = metrics_escape_label(cut, sizeof(cut), text);
        if (n != need || strncmp(cut, escaped, strlen(cut)) != 0 || strlen(cut) >= sizeof(cut))
                abort();
        if (strlen(cut) < need && strlen(cut) + 4 <= sizeof(cut) - 1)
                abort(); /* room for the next piece (at most 4 bytes) was left unused */

        /* The same bytes as an app's name and policy, rendered. */
        snap = metrics_snapshot_new(1);
        if (!snap)
                abort();
        strncpy(snap->apps[0].app, text, sizeof(snap->apps[0].app) - 1);
        strncpy(snap->apps[0].policy, text, sizeof(snap->apps[0].policy) - 1);
        strncpy(snap->apps[0].job, text, sizeof(snap->apps[0].job) - 1);
        snap->apps[0].pid = 1;
        snap->apps[0].v[METRICS_APP_CORES] = 1;
        if (metrics_render(snap, &rendered, &len) < 0 || strlen(rendered) != len)
                abort();
        free(rendered);
        metrics_snapshot_unref(snap);

        if (metrics_listen_parse(text, 1, &sa, &sa_len, why, sizeof(why)) < 0 && !why[0])
                abort();
        free(escaped);
        free(back);
        free(text);
        return 0;
}
