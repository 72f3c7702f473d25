/* /proc/PID/cgroup text (policies/policy.c: proc_identity_cgroup_from), which match_cgroup
 * rules are matched against. The kernel writes it, but cgroup names in it are chosen by
 * whoever may create cgroups (a delegated user slice), so it is outside input. A path found
 * is one line's text after its second ':', and fits the buffer it was given. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/policy.h"

static void check(const char *text, size_t size)
{
        char *buf = malloc(size);
        int r;

        if (!buf)
                abort();
        r = proc_identity_cgroup_from(text, buf, size);
        if (r == 0) {
                size_t len = strlen(buf);

                if (len == 0 || len >= size || strchr(buf, '\n') || !strstr(text, buf))
                        abort();
        } else if (r != -ENODATA && r != -ENAMETOOLONG) {
                abort();
        }
        free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_text(data, size);
        int fds = fuzz_fds_mark();

        if (!text)
                abort();
        /* As proc_identity_read calls it, and with a buffer a path often does not fit. */
        check(text, sizeof(((struct proc_identity *)0)->cgroup));
        check(text, 16);
        free(text);
        fuzz_check_fds(fds);
        return 0;
}
