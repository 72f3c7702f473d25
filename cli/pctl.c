/* pctl: the command line of the pctl energy-aware core allocator. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "pctl/log.h"

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
};

static const struct command commands[] = {
    {"model", cmd_model, "the paper's equations: speedup, P, and a what-if table"},
    {"sensors", cmd_sensors, "every sensor backend, available or not, and why"},
    {"sample", cmd_sample, "a timeline of counter deltas per interval"},
    {"sim", cmd_sim, "the model machine: run a scenario, or find its best static setting"},
    {"policy", cmd_policy, "list, check or reload policy files"},
    {"calibrate", cmd_calibrate, "measure the platform with pbench and write platform.ini"},
    {"status", cmd_status, "what pctld manages, and how well"},
    {"run", cmd_run, "run a command managed by pctld"},
    {"adopt", cmd_adopt, "hand a running process to pctld"},
    {"release", cmd_release, "give a process back untouched"},
};

static void usage(FILE *f)
{
        fprintf(f, "Usage: pctl COMMAND [OPTIONS]\n\nCommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
        fprintf(f, "\n'pctl COMMAND --help' shows a command's options. See pctl(1).\n");
}

int main(int argc, char **argv)
{
        log_set_ident("pctl");
        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                usage(stdout);
                return EXIT_OK;
        }
        if (strcmp(argv[1], "--version") == 0) {
                printf("pctl %s\n", PCTL_VERSION);
                return EXIT_OK;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].run(argc - 1, argv + 1);
        fprintf(stderr, "pctl: unknown command '%s' (try 'pctl --help')\n", argv[1]);
        return EXIT_USAGE;
}
