/* pctl release: gives a managed process back as it was. */
#include <stdio.h>

#include "client.h"
#include "commands.h"

static int release_cmd(struct client_args *a, int argc, char **argv)
{
        pid_t pid;
        int r;

        if (a->policy) {
                fprintf(stderr, "pctl release: --policy does not apply\n");
                return EXIT_USAGE;
        }
        r = pid_request(a, "release", argc, argv, &pid);
        return r != EXIT_OK ? r : send_pid(a, "release", "release", pid, NULL);
}

int cmd_release(int argc, char **argv)
{
        return client_main(argc, argv, release_cmd);
}
