/* The memory controllers' sysfs files as perf_uncore.c reads them: a PMU's format file and an
 * event string packed with it (uncore_event_parse), and an event's .scale and .unit
 * (uncore_bytes_per_count). The input is four lines: the content of format/event, the event
 * string, the scale and the unit (an empty line: the file is absent). */
#define _GNU_SOURCE /* nftw */
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "pctl/perf_uncore.h"

static char sys_dir[64];

static int tree_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p);
}

/* The tree goes when the fuzzer exits, so that runs leave nothing in /tmp. */
static void tree_remove(void)
{
        if (sys_dir[0])
                nftw(sys_dir, tree_rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* One fake PMU, made once; its format/event is rewritten per input. format/umask is fixed. */
static void tree_once(void)
{
        static const char *const dirs[] = {"",
                                           "/bus",
                                           "/bus/event_source",
                                           "/bus/event_source/devices",
                                           "/bus/event_source/devices/uncore_imc_0",
                                           "/bus/event_source/devices/uncore_imc_0/format"};
        char path[256];
        FILE *f;

        if (sys_dir[0])
                return;
        snprintf(sys_dir, sizeof(sys_dir), "/tmp/pctl-fuzz-uncore-%d", (int)getpid());
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
                snprintf(path, sizeof(path), "%s%s", sys_dir, dirs[i]);
                mkdir(path, 0755);
        }
        snprintf(path, sizeof(path), "%s/bus/event_source/devices/uncore_imc_0/format/umask",
                 sys_dir);
        f = fopen(path, "w");
        if (!f)
                abort();
        fputs("config:8-15\n", f);
        fclose(f);
        atexit(tree_remove);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_text(data, size), *line[4] = {NULL, NULL, NULL, NULL}, *p, path[256];
        struct uncore_config c;
        double bytes = -1;
        int fds;
        FILE *f;

        if (!text)
                abort();
        tree_once();
        p = text;
        for (unsigned i = 0; i < 4 && p; i++) {
                line[i] = p;
                p = strchr(p, '\n');
                if (p)
                        *p++ = '\0';
        }
        snprintf(path, sizeof(path), "%s/bus/event_source/devices/uncore_imc_0/format/event",
                 sys_dir);
        f = fopen(path, "w");
        if (!f)
                abort();
        fputs(line[0] ? line[0] : "", f);
        fclose(f);
        fds = fuzz_fds_mark();
        if (line[1])
                (void)uncore_event_parse(sys_dir, "uncore_imc_0", line[1], &c);
        if (uncore_bytes_per_count(line[2] && line[2][0] ? line[2] : NULL,
                                   line[3] && line[3][0] ? line[3] : NULL, &bytes) == 0 &&
            !(isfinite(bytes) && bytes > 0))
                abort();
        fuzz_check_fds(fds);
        free(text);
        return 0;
}
