/* Trace readers (sensors/sample_io.c): our `pctl sample` CSV and likwid-perfctr -t timeline
 * text, as the replay backend opens them (sample_io_open, a path) and as tests do
 * (sample_io_open_text). An opened trace is read to its end into a sample shaped by what the
 * reader reports, as the replay backend does. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/sample_io.h"

/* The replay backend serves the targets its caller asks for, not as many as a trace names. */
#define FUZZ_MAX_TARGETS 8

static void read_all(struct sample_io_reader *r)
{
        struct sensor_sample s = {};
        unsigned n_targets = sample_io_n_targets(r), n = 0;

        if (n_targets > FUZZ_MAX_TARGETS)
                n_targets = FUZZ_MAX_TARGETS;
        if (sensor_sample_alloc(&s, sample_io_n_cpus(r), n_targets) < 0)
                abort();
        for (int pass = 0; pass < 2; pass++) {
                n = 0;
                while (sample_io_read(r, &s) == 0)
                        n++;
                if (n != sample_io_n_intervals(r))
                        abort();
                sample_io_rewind(r);
        }
        sensor_sample_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct sample_io_reader *from_file = NULL, *from_text = NULL;
        struct sample_io_error err = {0};
        const char *path = fuzz_file(data, size);
        char *text = fuzz_text(data, size);
        int fds = fuzz_fds_mark();
        int r_file, r_text;

        if (!path || !text)
                abort();
        r_file = sample_io_open(path, &from_file, NULL);
        r_text = sample_io_open_text(text, &from_text, &err);
        free(text);
        if (!memchr(data, '\0', size) && r_file != r_text)
                abort();
        /* A refusal always says why, within its buffer. */
        if (r_text == -EBADMSG && (!err.what[0] || !memchr(err.what, '\0', sizeof(err.what))))
                abort();
        if (r_file == 0)
                read_all(from_file);
        if (r_text == 0 && r_file == 0 &&
            sample_io_n_intervals(from_text) != sample_io_n_intervals(from_file) &&
            !memchr(data, '\0', size))
                abort();
        sample_io_close(from_file);
        sample_io_close(from_text);
        fuzz_check_fds(fds);
        return 0;
}
