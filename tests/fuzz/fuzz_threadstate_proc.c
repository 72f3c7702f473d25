/* The /proc thread-state backend's parsers (sensors/threadstate_proc.c): /proc/TID/stat,
 * schedstat and syscall. The kernel writes them, but a thread names itself (the command name
 * in stat may hold anything, parentheses and spaces too), so stat is outside input; the
 * others are fed the same bytes for good measure. On success the state is one of the
 * kernel's letters; on failure nothing is written. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "../../sensors/threadstate_proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_text(data, size);
        char state = '?';
        uint64_t run = 7, rq = 7;
        long nr = -7;
        int r;

        if (!text)
                abort();
        r = threadstate_proc_parse_stat(text, &state);
        if (r == 0 ? !strchr("RSDTtZXIWPK", state) || !state : r != -EINVAL || state != '?')
                abort();
        r = threadstate_proc_parse_schedstat(text, &run, &rq);
        if (r != 0 && (r != -EINVAL || run != 7 || rq != 7))
                abort();
        r = threadstate_proc_parse_syscall(text, &nr);
        if (r == 0 ? nr < -1 : (r != -EINVAL && r != -EAGAIN) || nr != -7)
                abort();
        free(text);
        return 0;
}
