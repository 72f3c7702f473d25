#define _GNU_SOURCE /* memmem */
/* /proc/PID/status scans (policies/access.c): the Uid and Gid lines pctld judges a caller's
 * process by, and the Groups line a rule's users check reads. A process cannot write its own
 * status file, but the scan must still hold for any text: the input is given without a NUL
 * (an over-read is ASan's to catch); ids are written only on success and are the line's
 * digits; groups are at most max and each one is in the text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/access.h"

static void check_ids(const char *text, size_t size, const char *key)
{
        unsigned ids[4] = {7, 7, 7, 7};
        char num[16];
        int r = proc_status_ids(text, size, key, ids);

        if (r == -ENODATA || r == -EINVAL) {
                for (int i = 0; i < 4; i++)
                        if (ids[i] != 7)
                                abort();
                return;
        }
        if (r != 0)
                abort();
        for (int i = 0; i < 4; i++) {
                if (ids[i] == 0xffffffffU)
                        abort(); /* (uid_t)-1 is no one */
                snprintf(num, sizeof(num), "%u", ids[i]);
                if (!memmem(text, size, num, strlen(num)))
                        abort();
        }
        if (!memmem(text, size, key, strlen(key)))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* Exactly the input's bytes: no NUL after them. */
        char *text = malloc(size ? size : 1);
        gid_t groups[8];
        char num[16];
        size_t n;

        if (!text)
                abort();
        memcpy(text, data, size);
        check_ids(text, size, "Uid");
        check_ids(text, size, "Gid");
        for (size_t max = 0; max <= 8; max += 4) {
                n = proc_status_groups(text, size, groups, max);
                if (n > max)
                        abort();
                for (size_t i = 0; i < n; i++) {
                        snprintf(num, sizeof(num), "%u", (unsigned)groups[i]);
                        if (!memmem(text, size, num, strlen(num)) ||
                            groups[i] == (gid_t)0xffffffffU)
                                abort();
                }
        }
        free(text);
        return 0;
}
