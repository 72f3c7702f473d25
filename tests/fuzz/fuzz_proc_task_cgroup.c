/* /proc/PID/task/TID/cgroup text as the cpuset actuator reads it (lib/proc_cgroup.c,
 * proc_cgroup_path): the cgroup each thread came from, which a restore writes it back into.
 * Cgroup names are chosen by whoever may create cgroups (a delegated subtree): outside input.
 * (fuzz_proc_cgroup covers the other reader, policy.c's proc_identity_cgroup_from, which
 * picks a path to match rules against; this one finds one hierarchy's.)
 *
 * A path found is the text after the second ':' of one line that is that hierarchy's, up to
 * the end of that line, and fits the buffer; a refusal writes nothing. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/proc_cgroup.h"

/* Whether some line of text is "PREFIX" + path exactly, for a PREFIX of that hierarchy. */
static bool line_has_path(const char *text, const char *controller, const char *path)
{
        size_t plen = strlen(path);

        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t)(eol - line) : strlen(line);
                const char *c1 = memchr(line, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;

                if (c2 && (size_t)(line + len - c2 - 1) == plen && !memcmp(c2 + 1, path, plen)) {
                        if (!controller && c1 == line + 1 && line[0] == '0' && c2 == c1 + 1)
                                return true;
                        if (controller) {
                                size_t cl = strlen(controller);

                                for (const char *c = c1 + 1; c <= c2 - cl; c++)
                                        if ((c == c1 + 1 || c[-1] == ',') &&
                                            !memcmp(c, controller, cl) &&
                                            (c + cl == c2 || c[cl] == ','))
                                                return true;
                        }
                }
                line = eol ? eol + 1 : NULL;
        }
        return false;
}

static void check(const char *text, const char *controller, size_t size)
{
        char *buf = malloc(size);
        int r;

        if (!buf)
                abort();
        memset(buf, 'K', size);
        r = proc_cgroup_path(text, controller, buf, size);
        if (r == 0) {
                size_t len = strnlen(buf, size);

                if (len >= size || strchr(buf, '\n') || !line_has_path(text, controller, buf))
                        abort();
        } else if ((r != -ENOENT && r != -ENAMETOOLONG) || buf[0] != 'K') {
                abort();
        }
        free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_text(data, size);

        if (!text)
                abort();
        /* As cpuset.c asks (a 512-byte path), and with a buffer a path often does not fit. */
        check(text, NULL, 512);
        check(text, "cpuset", 512);
        check(text, "cpuset", 8);
        check(text, "cpu", 8);
        free(text);
        return 0;
}
