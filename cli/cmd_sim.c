/* Placeholder until the owning issue lands; replaced, not extended. */
#include <stdio.h>

#include "commands.h"

int cmd_sim(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        fprintf(stderr, "pctl: 'sim' is not built yet\n");
        return EXIT_FAILURE_RUN;
}
