/* A busy loop for SECONDS that marks one unit of progress per thousand iterations through the
 * public header (include/pctl/progress.h), or marks nothing: what integration.test_progress
 * shows pctl status. Usage: pctl_marker SECONDS mark|plain */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pctl/progress.h"

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
        volatile unsigned long sink = 0;
        double end;
        int mark;

        if (argc != 3 || (strcmp(argv[2], "mark") != 0 && strcmp(argv[2], "plain") != 0)) {
                fprintf(stderr, "usage: pctl_marker SECONDS mark|plain\n");
                return 2;
        }
        mark = strcmp(argv[2], "mark") == 0;
        if (mark && pctl_progress_open() < 0) {
                perror("pctl_marker: pctl_progress_open");
                return 1;
        }
        end = now_s() + atof(argv[1]);
        while (now_s() < end) {
                for (unsigned i = 0; i < 1000; i++)
                        sink += i;
                if (mark)
                        pctl_progress_mark(1);
        }
        pctl_progress_close();
        return 0;
}
