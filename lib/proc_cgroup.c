#include "pctl/proc_cgroup.h"

#include <errno.h>
#include <string.h>

bool proc_cgroup_lists(const char *list, size_t len, const char *ctrl)
{
        size_t cl = strlen(ctrl);

        for (size_t i = 0; i < len;) {
                size_t n = 0;

                while (i + n < len && list[i + n] != ',')
                        n++;
                if (n == cl && strncmp(list + i, ctrl, cl) == 0)
                        return true;
                i += n + 1;
        }
        return false;
}

int proc_cgroup_path(const char *text, const char *controller, char *out, size_t size)
{
        const char *next;

        for (const char *line = text; line && *line; line = next) {
                const char *eol = strchr(line, '\n'), *end = eol ? eol : line + strlen(line);
                const char *c1 = memchr(line, ':', (size_t)(end - line)), *c2 = NULL;
                size_t plen;

                next = eol ? eol + 1 : NULL;
                if (c1)
                        c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
                if (!c2)
                        continue;
                if (controller ? !proc_cgroup_lists(c1 + 1, (size_t)(c2 - c1 - 1), controller)
                               : !(c1 - line == 1 && line[0] == '0' && c2 == c1 + 1))
                        continue;
                plen = (size_t)(end - c2 - 1);
                if (plen >= size)
                        return -ENAMETOOLONG;
                memcpy(out, c2 + 1, plen);
                out[plen] = '\0';
                return 0;
        }
        return -ENOENT;
}
