/* CPU lists in the kernel's syntax ("0-3,8,10-11"): cpumask_parse (lib/cpumask.c) reads them
 * from sysfs and cgroupfs (cpuset.cpus, cpuset.cpus.effective, online), from the state record,
 * from pctl.conf (reserved_cpus) and from command lines (--cpus). A refusal is -EINVAL or
 * -ERANGE and writes nothing; an accepted list holds only digits, ',', '-' and white space;
 * what it gives formats to a list that parses back to the same mask, which formats the same. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/cpumask.h"

static char formatted[CPUMASK_LIST_MAX], again[CPUMASK_LIST_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_text(data, size);
        struct cpumask m, back, sentinel;
        int r;

        if (!text)
                abort();
        memset(&sentinel, 0xa5, sizeof(sentinel));
        m = sentinel;
        r = cpumask_parse(text, &m);
        if (r < 0) {
                if ((r != -EINVAL && r != -ERANGE) || memcmp(&m, &sentinel, sizeof(m)))
                        abort();
                free(text);
                return 0;
        }
        if (strspn(text, "0123456789,- \t\n\v\f\r") != strlen(text)) /* isspace() */
                abort();
        if (cpumask_format(&m, formatted, sizeof(formatted)) < 0)
                abort(); /* any mask fits CPUMASK_LIST_MAX */
        if (cpumask_parse(formatted, &back) < 0 || !cpumask_equal(&m, &back))
                abort();
        if (cpumask_format(&back, again, sizeof(again)) < 0 || strcmp(formatted, again))
                abort();
        if (cpumask_empty(&m) != (formatted[0] == '\0'))
                abort();
        free(text);
        return 0;
}
