/* Placeholder until the owning issue lands; replaced, not extended. */
#include <stdio.h>

#include "commands.h"

int cmd_sample(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        fprintf(stderr, "pctl: 'sample' is not built yet\n");
        return EXIT_FAILURE_RUN;
}
