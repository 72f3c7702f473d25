/* pctl policy: list the policies the daemon would load, and check a policy file or pctl.conf. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "pctl/config.h"
#include "pctl/jsonfmt.h"
#include "pctl/policy.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

static const char *const match_keys[POLICY_MATCH_KINDS] = {
    [POLICY_MATCH_COMM] = "match_comm",
    [POLICY_MATCH_EXE] = "match_exe",
    [POLICY_MATCH_USER] = "match_user",
    [POLICY_MATCH_CGROUP] = "match_cgroup",
};

struct policy_args {
        const char *dir;
        const char *config;
        bool json;
};

static void policy_usage(FILE *f)
{
        fputs("Usage: pctl policy list [--dir DIR | --config FILE] [--json]\n"
              "       pctl policy check FILE...\n"
              "       pctl policy reload [--socket PATH | --config FILE]\n",
              f);
}

static int policy_parse(int argc, char **argv, struct policy_args *a, bool allow_opts)
{
        static const struct option opts[] = {
            {"dir", required_argument, NULL, 'd'},
            {"config", required_argument, NULL, 'c'},
            {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        int c;

        *a = (struct policy_args){};
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
                if (c == 'h') {
                        policy_usage(stdout);
                        return 1;
                }
                if (!allow_opts || c == '?' || c == ':') {
                        fprintf(stderr, "pctl policy %s: unknown or incomplete option '%s'\n",
                                argv[0], argv[optind - 1]);
                        return -EINVAL;
                }
                if (c == 'd')
                        a->dir = optarg;
                else if (c == 'c')
                        a->config = optarg;
                else if (c == 'j')
                        a->json = true;
        }
        if (a->dir && a->config) {
                fprintf(stderr, "pctl policy %s: give --dir or --config, not both\n", argv[0]);
                return -EINVAL;
        }
        return 0;
}

static void format_bound(char *buf, size_t size, unsigned lo, unsigned hi, const char *lo_none,
                         const char *hi_none)
{
        char l[16], h[16];

        snprintf(l, sizeof(l), "%u", lo);
        snprintf(h, sizeof(h), "%u", hi);
        snprintf(buf, size, "%s-%s", lo ? l : lo_none, hi ? h : hi_none);
}

/* 0 = no limit: null says "none" without inventing a number. */
static struct json_object *limit_json(unsigned v)
{
        return v ? json_object_new_uint64(v) : NULL;
}

static struct json_object *list_json_policy(const struct policy *p)
{
        struct json_object *j = json_object_new_object(), *match = json_object_new_object();

        json_object_object_add(j, "name", jsonfmt_string(p->name));
        json_object_object_add(j, "objective", jsonfmt_string(objective_to_string(p->objective)));
        json_object_object_add(j, "min_cores", json_object_new_uint64(p->min_cores));
        json_object_object_add(j, "max_cores", limit_json(p->max_cores));
        json_object_object_add(j, "min_freq_mhz", limit_json(p->min_freq_mhz));
        json_object_object_add(j, "max_freq_mhz", limit_json(p->max_freq_mhz));
        json_object_object_add(j, "max_slowdown",
                               jsonfmt_double(p->max_slowdown)); /* INFINITY -> null */
        json_object_object_add(j, "weight", jsonfmt_double(p->weight));
        for (unsigned k = 0; k < POLICY_MATCH_KINDS; k++) {
                struct json_object *values = json_object_new_array();

                for (size_t i = 0; i < p->match[k].n; i++)
                        json_object_array_add(values, json_object_new_string(p->match[k].v[i]));
                json_object_object_add(match, match_keys[k] + 6, values);
        }
        json_object_object_add(j, "match", match);
        if (p->file[0]) {
                json_object_object_add(j, "file", jsonfmt_string(p->file));
                json_object_object_add(j, "line", json_object_new_int64(p->lineno));
        } else {
                json_object_object_add(j, "file", NULL);
        }
        return j;
}

static void list_text_policy(const struct policy *p)
{
        char cores[32], freq[32], slow[16], where[CONFIG_PATH_MAX + 16];
        bool any = false;

        format_bound(cores, sizeof(cores), p->min_cores, p->max_cores, "1", "all");
        format_bound(freq, sizeof(freq), p->min_freq_mhz, p->max_freq_mhz, "min", "max");
        if (isinf(p->max_slowdown))
                snprintf(slow, sizeof(slow), "none");
        else
                snprintf(slow, sizeof(slow), "%g", p->max_slowdown);
        snprintf(where, sizeof(where), "%s:%d", p->file, p->lineno);
        printf("%-16s %-11s %-9s %-11s %-8s %6g  %s\n", p->name, objective_to_string(p->objective),
               cores, freq, slow, p->weight, where);
        for (unsigned k = 0; k < POLICY_MATCH_KINDS; k++)
                for (size_t i = 0; i < p->match[k].n; i++) {
                        printf("%18s%s = %s\n", "", match_keys[k], p->match[k].v[i]);
                        any = true;
                }
        if (!any)
                printf("%18s(no match rules: used by name only)\n", "");
}

static int policy_list_cmd(const struct policy_args *a)
{
        struct config_problems problems = {};
        struct policy_set set = {};
        struct config cfg;
        const char *dir = a->dir;
        int r;

        if (!dir) {
                const char *conf = a->config ? a->config : PCTL_SYSCONFDIR "/pctl.conf";

                config_init(&cfg);
                r = config_load(conf, &cfg, &problems);
                if (r == -ENOENT && !a->config) {
                        /* No pctl.conf: the daemon runs on the defaults, and so do we. */
                        config_problems_clear(&problems);
                } else if (r < 0) {
                        config_problems_print(&problems, stderr);
                        config_problems_clear(&problems);
                        fprintf(stderr, "pctl policy list: %s is not usable\n", conf);
                        return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_RUN;
                }
                dir = cfg.policies_dir;
        }
        r = policy_set_load_dir(dir, &set, &problems);
        if (r < 0) {
                config_problems_print(&problems, stderr);
                config_problems_clear(&problems);
                if (r != -EINVAL)
                        return EXIT_FAILURE_RUN;
                fprintf(stderr, "pctl policy list: the daemon would refuse the policies in %s\n",
                        dir);
                return EXIT_USAGE;
        }
        if (a->json) {
                struct json_object *j = json_object_new_object(), *list = json_object_new_array();

                json_object_object_add(j, "dir", jsonfmt_string(dir));
                for (size_t i = 0; i < set.n; i++)
                        json_object_array_add(list, list_json_policy(&set.v[i]));
                json_object_object_add(j, "policies", list);
                /* Bare objective names no file overrides. */
                list = json_object_new_array();
                for (unsigned o = 0; o < OBJECTIVE_COUNT; o++)
                        if (policy_lookup(&set, objective_to_string(o)) == policy_builtin(o))
                                json_object_array_add(list, list_json_policy(policy_builtin(o)));
                json_object_object_add(j, "builtin", list);
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
        } else {
                printf("%-16s %-11s %-9s %-11s %-8s %6s  %s\n", "NAME", "OBJECTIVE", "CORES",
                       "FREQ(MHz)", "SLOWDOWN", "WEIGHT", "FILE:LINE");
                for (size_t i = 0; i < set.n; i++)
                        list_text_policy(&set.v[i]);
                printf("built-in (by name, default bounds):");
                for (unsigned o = 0; o < OBJECTIVE_COUNT; o++)
                        if (policy_lookup(&set, objective_to_string(o)) == policy_builtin(o))
                                printf(" %s", objective_to_string(o));
                printf("\n");
        }
        policy_set_free(&set);
        return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
}

static int policy_check_one(const char *path)
{
        struct config_problems problems = {};
        bool is_config;
        size_t n_policies = 0;
        int r;

        r = config_detect(path, &is_config);
        if (r == -ENOENT || r == -EACCES || r == -ENOMEM) {
                fprintf(stderr, "%s: cannot read: %s\n", path, strerror(-r));
                return EXIT_USAGE;
        }
        /* Not a text file (a directory, a device, binary): the loader below says which. */
        if (r < 0)
                is_config = false;
        if (is_config) {
                struct config cfg;

                r = config_load(path, &cfg, &problems);
                if (r == 0) {
                        /* default_policy must name a policy pctld will have. */
                        struct policy_set set = {};
                        char why[400];

                        r = policy_set_load_dir(cfg.policies_dir, &set, &problems);
                        if (r == -ENOENT) {
                                config_problems_clear(&problems);
                                r = 0;
                        }
                        if (r == 0 && policy_check_default(&set, cfg.default_policy,
                                                           cfg.policies_dir, why, sizeof(why)) < 0)
                                r = config_problems_add(&problems, path, 0, "%s", why) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                        policy_set_free(&set);
                }
        } else {
                struct policy_set set = {};

                r = policy_set_load_file(path, &set, &problems);
                n_policies = set.n;
                policy_set_free(&set);
        }
        if (r < 0) {
                config_problems_print(&problems, stderr);
                fprintf(stderr, "%s: %zu problem%s\n", path, problems.n, plural_s(problems.n));
                config_problems_clear(&problems);
                return EXIT_USAGE;
        }
        if (is_config)
                printf("%s: ok, pctl.conf\n", path);
        else
                printf("%s: ok, %zu polic%s\n", path, n_policies, n_policies == 1 ? "y" : "ies");
        return EXIT_OK;
}

static int policy_check_cmd(int argc, char **argv)
{
        int worst = EXIT_OK;

        if (argc < 2) {
                fprintf(stderr, "pctl policy check: a FILE is required\n");
                return EXIT_USAGE;
        }
        for (int i = 1; i < argc; i++) {
                int r = policy_check_one(argv[i]);

                if (r > worst)
                        worst = r;
        }
        return worst;
}

int cmd_policy(int argc, char **argv)
{
        struct policy_args a;
        int r;

        if (argc < 2) {
                fprintf(stderr, "pctl policy: which one? list, check or reload (try 'pctl "
                                "policy --help')\n");
                return EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                policy_usage(stdout);
                return EXIT_OK;
        }
        if (strcmp(argv[1], "list") == 0) {
                r = policy_parse(argc - 1, argv + 1, &a, true);
                if (r != 0)
                        return r > 0 ? EXIT_OK : EXIT_USAGE;
                if (optind < argc - 1) {
                        fprintf(stderr, "pctl policy list: unexpected argument '%s'\n",
                                argv[1 + optind]);
                        return EXIT_USAGE;
                }
                return policy_list_cmd(&a);
        }
        if (strcmp(argv[1], "check") == 0) {
                r = policy_parse(argc - 1, argv + 1, &a, false);
                if (r != 0)
                        return r > 0 ? EXIT_OK : EXIT_USAGE;
                /* FILEs start at optind of the shifted argv. */
                return policy_check_cmd(argc - 1 - optind + 1, argv + optind);
        }
        if (strcmp(argv[1], "reload") == 0)
                return cmd_policy_reload(argc - 1, argv + 1);
        fprintf(stderr, "pctl policy: unknown subcommand '%s' (list, check, reload)\n", argv[1]);
        return EXIT_USAGE;
}
