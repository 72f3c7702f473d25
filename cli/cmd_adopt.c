/* pctl adopt: hands a running process to pctld, with a policy and a job tag. */
#include <stddef.h>

#include "client.h"
#include "commands.h"

static int adopt_cmd(struct client_args *a, int argc, char **argv)
{
        pid_t pid;
        int r = pid_request(a, "adopt", argc, argv, &pid);

        return r != EXIT_OK ? r : send_pid(a, "adopt", "adopt", pid, NULL);
}

int cmd_adopt(int argc, char **argv)
{
        return client_main(argc, argv, adopt_cmd);
}
