/* pctl policy reload: asks pctld to reload pctl.conf and the policies. */
#include <json-c/json.h>
#include <stdio.h>

#include "client.h"
#include "commands.h"

static int reload_cmd(struct client_args *a, int argc, char **argv)
{
        struct json_object *reply = NULL;
        int r;

        if (a->first_arg < argc || a->policy || a->json) {
                fprintf(stderr, "pctl policy reload: takes only --socket or --config (got '%s')\n",
                        a->first_arg < argc ? argv[a->first_arg]
                        : a->policy         ? "--policy"
                                            : "--json");
                return EXIT_USAGE;
        }
        r = client_call(a, "policy reload", "{\"cmd\":\"reload\"}", &reply, NULL);
        if (r == EXIT_OK)
                printf("pctld reloaded its configuration and policies\n");
        json_object_put(reply);
        return r;
}

int cmd_policy_reload(int argc, char **argv)
{
        return client_main(argc, argv, reload_cmd);
}
