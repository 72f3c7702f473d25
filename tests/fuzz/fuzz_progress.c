/* A progress counter's bytes (/dev/shm/pctl-progress.PID, written by any process of the app's
 * user): progress_page_parse refuses with -EBADMSG or -ESTALE and writes nothing, or accepts a
 * page with the magic and the start time asked for, giving its units. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#define PCTL_PROGRESS_NO_APP_SIDE
#define PCTL_PROGRESS_READER
#include "pctl/progress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct pctl_progress_page pg;
        uint64_t start = 0, units = 0x5a5a5a5a5a5a5a5aULL;
        int r;

        /* The start time asked for: the page's own half the time, so both paths are taken. */
        if (size >= sizeof(pg)) {
                memcpy(&pg, data, sizeof(pg));
                start = (data[size - 1] & 1) ? pg.start_ticks : pg.start_ticks + 1;
        }
        r = progress_page_parse(data, size, start, &units);
        if (r == 0) {
                if (size < sizeof(pg) || pg.magic != PCTL_PROGRESS_MAGIC ||
                    pg.start_ticks != start || units != pg.units)
                        abort();
        } else if ((r != -EBADMSG && r != -ESTALE) || units != 0x5a5a5a5a5a5a5a5aULL) {
                abort();
        }
        return 0;
}
