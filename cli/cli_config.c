/* pctl.conf as the client commands read it: the file --config names, else the installed one. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "pctl/config.h"
#include "pctl/config_problems.h"

int cli_config_read(const char *config, const char *who, struct config *conf, const char **path)
{
        struct config_problems problems = {0};
        int r;

        *path = config ? config : PCTL_SYSCONFDIR "/pctl.conf";
        config_init(conf);
        r = config_load(*path, conf, &problems);
        /* No installed file is the defaults; a file named on the command line must exist. */
        if (r < 0 && !(r == -ENOENT && !config)) {
                fprintf(stderr, "%s: cannot use %s:\n", who, *path);
                config_problems_print(&problems, stderr);
                if (!problems.n)
                        fprintf(stderr, "  %s\n", strerror(-r));
                config_problems_clear(&problems);
                return r;
        }
        config_problems_clear(&problems);
        return 0;
}
