/* platform.ini (lib/platform_file.c), written by `pctl calibrate` and read by pctld at start.
 * Whatever the reader accepts, the writer must write as a file the reader accepts again, and
 * that file must be a fixed point: read and written once more, it comes out byte for byte the
 * same. (Not the input itself: the writer replaces ';' and line breaks in strings.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/platform_file.h"

/* The profile as the writer writes it; free() it. */
static char *format(const struct platform_profile *p)
{
        char *out = NULL;
        size_t out_size = 0;
        FILE *f = open_memstream(&out, &out_size);

        if (!f || platform_file_format(f, p) < 0 || fclose(f) != 0)
                abort();
        return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct platform_profile p, again;
        char err[512] = "";
        char *text = fuzz_text(data, size), *first, *second;
        int fds = fuzz_fds_mark();
        int r;

        if (!text)
                abort();
        r = platform_file_load_string(text, "fuzz.ini", &p, err, sizeof(err));
        free(text);
        if (r < 0) {
                if (r != -EINVAL || !err[0])
                        abort();
                fuzz_check_fds(fds);
                return 0;
        }
        first = format(&p);
        if (platform_file_load_string(first, "fuzz-written.ini", &again, err, sizeof(err)) < 0) {
                fprintf(stderr, "the written profile is refused: %s\n--- written:\n%s", err, first);
                abort();
        }
        second = format(&again);
        if (strcmp(first, second) != 0) {
                fprintf(stderr, "not a fixed point\n--- first:\n%s--- second:\n%s", first, second);
                abort();
        }
        free(first);
        free(second);
        fuzz_check_fds(fds);
        return 0;
}
