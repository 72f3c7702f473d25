/* pctl: the command line of the pctl energy-aware core allocator. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "pctl/log.h"
#include "pctl/util.h"

/* Global options may come before the command, as with git or systemctl. Each command reads
 * its own options with getopt, so a global one is handed on by inserting it right after the
 * command's name (and subcommand): `pctl --json sensors` runs as `pctl sensors --json`. */
enum {
        GLOBAL_SOCKET = 1u << 0,
        GLOBAL_CONFIG = 1u << 1,
        GLOBAL_JSON = 1u << 2,
};

static const struct global_option {
        unsigned bit;
        const char *name;
        const char *arg; /* NULL for a flag */
        const char *help;
} global_options[] = {
    {GLOBAL_SOCKET, "--socket", "PATH", "pctld's control socket"},
    {GLOBAL_CONFIG, "--config", "FILE", "the pctl.conf to read"},
    {GLOBAL_JSON, "--json", NULL, "machine-readable output"},
};

struct subcommand {
        const char *name;
        unsigned globals; /* the global options it takes */
};

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
        unsigned globals;              /* for a command without subcommands */
        const struct subcommand *subs; /* ends with {NULL}; NULL when there are none */
};

static const struct subcommand model_subs[] = {
    {"speedup", GLOBAL_JSON},
    {"p", GLOBAL_JSON},
    {"table", GLOBAL_JSON},
    {NULL, 0},
};
static const struct subcommand sim_subs[] = {
    {"run", GLOBAL_JSON},
    {"oracle", GLOBAL_JSON},
    {NULL, 0},
};
static const struct subcommand policy_subs[] = {
    {"list", GLOBAL_CONFIG | GLOBAL_JSON},
    {"check", 0},
    {"reload", GLOBAL_SOCKET | GLOBAL_CONFIG},
    {NULL, 0},
};

static const struct command commands[] = {
    {"model", cmd_model, "the paper's equations: speedup, P, and a what-if table", 0, model_subs},
    {"sensors", cmd_sensors, "every sensor backend, available or not, and why", GLOBAL_JSON, NULL},
    {"sample", cmd_sample, "a timeline of counter deltas per interval", GLOBAL_JSON, NULL},
    {"sim", cmd_sim, "the model machine: run a scenario, or find its best static setting", 0,
     sim_subs},
    {"policy", cmd_policy, "list, check or reload policy files", 0, policy_subs},
    {"calibrate", cmd_calibrate, "measure the platform with pbench and write platform.ini",
     GLOBAL_JSON, NULL},
    {"status", cmd_status, "what pctld manages, and how well",
     GLOBAL_SOCKET | GLOBAL_CONFIG | GLOBAL_JSON, NULL},
    {"run", cmd_run, "run a command managed by pctld", GLOBAL_SOCKET | GLOBAL_CONFIG | GLOBAL_JSON,
     NULL},
    {"adopt", cmd_adopt, "hand a running process to pctld", GLOBAL_SOCKET | GLOBAL_CONFIG, NULL},
    {"release", cmd_release, "give a process back untouched", GLOBAL_SOCKET | GLOBAL_CONFIG, NULL},
    {"stack", cmd_stack, "why a process does not scale: its speedup stack", GLOBAL_JSON, NULL},
    {"history", cmd_history, "what pctld remembers of past runs; forget it",
     GLOBAL_CONFIG | GLOBAL_JSON, NULL},
    {"extrapolate", cmd_extrapolate, "predicted scaling beyond the measured core counts",
     GLOBAL_JSON, NULL},
};

static bool subs_all_take(const struct subcommand *subs, unsigned bit)
{
        for (const struct subcommand *s = subs; s->name; s++)
                if (!(s->globals & bit))
                        return false;
        return true;
}

/* Which commands take a global option, from the tables: "policy reload, status, run". */
static void usage_takers(FILE *f, unsigned bit)
{
        const char *sep = "";

        for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
                const struct command *c = &commands[i];

                if (c->subs ? subs_all_take(c->subs, bit) : (c->globals & bit) != 0) {
                        fprintf(f, "%s%s", sep, c->name);
                        sep = ", ";
                        continue;
                }
                for (const struct subcommand *s = c->subs; s && s->name; s++)
                        if (s->globals & bit) {
                                fprintf(f, "%s%s %s", sep, c->name, s->name);
                                sep = ", ";
                        }
        }
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: pctl [--socket PATH] [--config FILE] [--json] COMMAND [OPTIONS]\n"
                   "       pctl --help | --version\n\nCommands:\n");
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
                fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
        fprintf(f, "\nGlobal options, before or after the command (after it wins):\n");
        for (size_t i = 0; i < ARRAY_SIZE(global_options); i++) {
                const struct global_option *g = &global_options[i];
                char opt[32];

                snprintf(opt, sizeof(opt), "%s%s%s", g->name, g->arg ? " " : "",
                         g->arg ? g->arg : "");
                fprintf(f, "  %-14s %s\n  %-14s (", opt, g->help, "");
                usage_takers(f, g->bit);
                fprintf(f, ")\n");
        }
        fprintf(f, "\n'pctl COMMAND --help' shows a command's options. See pctl(1).\n");
}

struct globals {
        unsigned given;                                /* GLOBAL_* bits */
        const char *value[ARRAY_SIZE(global_options)]; /* by index in global_options */
};

/* "--NAME" or "--NAME=VALUE" of a global option; *value points after '=' (or is NULL). */
static const struct global_option *global_find(const char *word, const char **value, size_t *idx)
{
        for (size_t i = 0; i < ARRAY_SIZE(global_options); i++) {
                size_t len = strlen(global_options[i].name);

                if (strncmp(word, global_options[i].name, len) != 0 ||
                    (word[len] != '\0' && word[len] != '='))
                        continue;
                *value = word[len] == '=' ? word + len + 1 : NULL;
                *idx = i;
                return &global_options[i];
        }
        return NULL;
}

/* Parses the options before the command; *first is the command's index in argv. Returns 0,
 * 1 when --help or --version answered, or -EINVAL. By hand, not with getopt: glibc keeps the
 * argument order of its first call ("+" here) until optind is set to 0, and the commands
 * reset optind to 1 only. */
static int globals_parse(int argc, char **argv, struct globals *g, int *first)
{
        int i;

        *g = (struct globals){0};
        for (i = 1; i < argc && argv[i][0] == '-'; i++) {
                const struct global_option *o;
                const char *value;
                size_t idx;

                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        usage(stdout);
                        return 1;
                }
                if (strcmp(argv[i], "--version") == 0) {
                        printf("pctl %s\n", PCTL_VERSION);
                        return 1;
                }
                o = global_find(argv[i], &value, &idx);
                if (!o) {
                        fprintf(stderr,
                                "pctl: unknown option '%s' before the command (global options: "
                                "--socket, --config, --json; try 'pctl --help')\n",
                                argv[i]);
                        return -EINVAL;
                }
                if (!o->arg && value) {
                        fprintf(stderr, "pctl: %s takes no value\n", o->name);
                        return -EINVAL;
                }
                if (o->arg && !value) {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "pctl: %s needs a %s\n", o->name, o->arg);
                                return -EINVAL;
                        }
                        value = argv[++i];
                }
                g->given |= o->bit;
                g->value[idx] = value;
        }
        *first = i;
        return 0;
}

/* The command's argv with the global options inserted after its first `head` words. */
static char **globals_inject(const struct globals *g, int argc, char **argv, int head, int *n)
{
        char **v = calloc((size_t)argc + 2 * ARRAY_SIZE(global_options) + 1, sizeof(char *));
        int k = 0;

        if (!v)
                return NULL;
        for (int i = 0; i < head; i++)
                v[k++] = argv[i];
        for (size_t i = 0; i < ARRAY_SIZE(global_options); i++) {
                if (!(g->given & global_options[i].bit))
                        continue;
                v[k++] = (char *)global_options[i].name;
                if (global_options[i].arg)
                        v[k++] = (char *)g->value[i];
        }
        for (int i = head; i < argc; i++)
                v[k++] = argv[i];
        *n = k;
        return v;
}

static int command_run(const struct command *cmd, const struct globals *g, int argc, char **argv)
{
        const struct subcommand *sub = NULL;
        unsigned takes = cmd->globals;
        char **v;
        int n, r;

        if (!g->given)
                return cmd->run(argc, argv);
        if (cmd->subs) {
                for (const struct subcommand *s = cmd->subs; argc > 1 && s->name; s++)
                        if (strcmp(argv[1], s->name) == 0)
                                sub = s;
                /* No or an unknown subcommand: the command says what it expected. */
                if (!sub)
                        return cmd->run(argc, argv);
                takes = sub->globals;
        }
        for (size_t i = 0; i < ARRAY_SIZE(global_options); i++)
                if ((g->given & global_options[i].bit) && !(takes & global_options[i].bit)) {
                        fprintf(stderr, "pctl %s%s%s: %s does not apply to this command\n",
                                cmd->name, sub ? " " : "", sub ? sub->name : "",
                                global_options[i].name);
                        return EXIT_USAGE;
                }
        v = globals_inject(g, argc, argv, sub ? 2 : 1, &n);
        if (!v) {
                fprintf(stderr, "pctl: out of memory\n");
                return EXIT_FAILURE_RUN;
        }
        r = cmd->run(n, v);
        free(v);
        return r;
}

int main(int argc, char **argv)
{
        struct globals g;
        int first, r;

        log_set_ident("pctl");
        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE;
        }
        r = globals_parse(argc, argv, &g, &first);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        if (first >= argc) {
                fprintf(stderr, "pctl: a COMMAND is required after the global options (try "
                                "'pctl --help')\n");
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
                if (strcmp(argv[first], commands[i].name) == 0)
                        return command_run(&commands[i], &g, argc - first, argv + first);
        fprintf(stderr, "pctl: unknown command '%s' (try 'pctl --help')\n", argv[first]);
        return EXIT_USAGE;
}
