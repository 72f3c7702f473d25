/* pctl history: what pctld remembers of past runs (manager/history.c), and forgetting it. The
 * file is read directly: listing needs no daemon, and SQLite's locking keeps a running pctld's
 * writes and ours apart. */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "pctl/config.h"
#include "pctl/history.h"
#include "pctl/jsonfmt.h"
#include "pctl/util.h"

struct history_args {
        const char *file;
        const char *config;
        bool json;
        bool all;
        bool forget;
        const char *app;
};

static void history_usage(FILE *f)
{
        fputs("Usage: pctl history [--file FILE | --config FILE] [--json]\n"
              "       pctl history forget (APP | --all) [--file FILE | --config FILE] [--json]\n",
              f);
}

static int history_parse(int argc, char **argv, struct history_args *a)
{
        static const struct option opts[] = {
            {"file", required_argument, NULL, 'f'}, {"config", required_argument, NULL, 'c'},
            {"all", no_argument, NULL, 'a'},        {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},       {},
        };
        int c, n_args;

        *a = (struct history_args){};
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'f':
                        if (optarg[0] != '/') {
                                fprintf(stderr,
                                        "pctl history: --file '%s' is not an absolute "
                                        "path\n",
                                        optarg);
                                return -EINVAL;
                        }
                        a->file = optarg;
                        break;
                case 'c':
                        a->config = optarg;
                        break;
                case 'a':
                        a->all = true;
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'h':
                        history_usage(stdout);
                        return 1;
                default:
                        fprintf(stderr, "pctl history: unknown or incomplete option '%s'\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (a->file && a->config) {
                fprintf(stderr, "pctl history: give --file or --config, not both\n");
                return -EINVAL;
        }
        n_args = argc - optind;
        if (n_args > 0 && strcmp(argv[optind], "forget") != 0) {
                fprintf(stderr, "pctl history: unknown subcommand '%s' (forget, or none to list)\n",
                        argv[optind]);
                return -EINVAL;
        }
        a->forget = n_args > 0;
        if (!a->forget) {
                if (a->all) {
                        fprintf(stderr, "pctl history: --all goes with forget\n");
                        return -EINVAL;
                }
                return 0;
        }
        if (n_args > 2) {
                fprintf(stderr, "pctl history forget: unexpected argument '%s'\n",
                        argv[optind + 2]);
                return -EINVAL;
        }
        a->app = n_args == 2 ? argv[optind + 1] : NULL;
        if (!!a->app == a->all) {
                fprintf(stderr, "pctl history forget: give an APP (its path or name) or --all\n");
                return -EINVAL;
        }
        if (a->app && !a->app[0]) {
                fprintf(stderr, "pctl history forget: the APP is empty\n");
                return -EINVAL;
        }
        return 0;
}

/* --file, else history_path of --config, else of /etc/pctl/pctl.conf, else the default. */
static int history_path(const struct history_args *a, char *buf, size_t size)
{
        struct config conf;
        const char *path;
        int r;

        if (a->file)
                return strscpy(buf, a->file, size);
        r = cli_config_read(a->config, "pctl history", &conf, &path);
        if (r < 0)
                return r;
        if (!conf.history_path[0]) {
                fprintf(stderr, "pctl history: history is off in %s (history_path = off)\n", path);
                return -ENODATA;
        }
        return strscpy(buf, conf.history_path, size);
}

/* A file that is not a history (corrupt, a newer schema) is bad input; the rest failed. */
static int open_exit_code(int r)
{
        return r == -EBADMSG || r == -EPROTONOSUPPORT || r == -EINVAL ? EXIT_USAGE
                                                                      : EXIT_FAILURE_RUN;
}

struct list_ctx {
        struct json_object *apps; /* NULL: a table */
        unsigned n;
};

static void format_time(int64_t t, char *buf, size_t size)
{
        time_t tt = (time_t)t;
        struct tm tm;

        if (!gmtime_r(&tt, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
                (void)strscpy(buf, "?", size);
}

static int list_one(const struct history_entry *e, void *ctx)
{
        struct list_ctx *l = ctx;
        char hash[32], when[32];

        l->n++;
        snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)e->key.args_hash);
        format_time(e->updated_s, when, sizeof(when));
        if (l->apps) {
                struct json_object *o = json_object_new_object();
                struct json_object *stack =
                    e->stack_json ? json_tokener_parse(e->stack_json) : NULL;

                json_object_object_add(o, "exe", jsonfmt_string(e->key.exe));
                json_object_object_add(o, "policy", jsonfmt_string(e->key.policy));
                json_object_object_add(o, "args_hash", jsonfmt_string(hash));
                json_object_object_add(o, "calibration", jsonfmt_string(e->key.calibration));
                json_object_object_add(o, "objective", jsonfmt_string(e->objective));
                json_object_object_add(o, "runs", json_object_new_uint64(e->runs));
                json_object_object_add(o, "p_est", jsonfmt_double(e->p));
                json_object_object_add(o, "mem_fraction", jsonfmt_double(e->mem_fraction));
                json_object_object_add(o, "best_cores", json_object_new_uint64(e->best_cores));
                json_object_object_add(
                    o, "best_freq_mhz",
                    e->best_freq_khz ? json_object_new_uint64(e->best_freq_khz / 1000) : NULL);
                json_object_object_add(o, "best_score", jsonfmt_double(e->best_score));
                json_object_object_add(o, "shared_apps",
                                       e->shared_apps ? json_object_new_uint64(e->shared_apps)
                                                      : NULL);
                json_object_object_add(o, "stack", stack);
                json_object_object_add(o, "updated", jsonfmt_string(when));
                json_object_array_add(l->apps, o);
                return 0;
        }
        printf("%-28s %-10s %-8.8s %4u %5u %8u %6.3f %6.3f %10.4g %-5s %s\n", e->key.exe,
               e->key.policy, hash, e->runs, e->best_cores, e->best_freq_khz / 1000, e->p,
               e->mem_fraction, e->best_score, e->stack_json ? "yes" : "no", when);
        return 0;
}

static int history_list(const struct history_args *a, const char *path)
{
        struct history *h = NULL;
        struct list_ctx l = {0};
        struct json_object *j = NULL;
        char err[700];
        int r = history_open(path, true, &h, err, sizeof(err));

        /* Nothing recorded yet is an empty history, not a failure. */
        if (r < 0 && r != -ENOENT) {
                fprintf(stderr, "pctl history: %s\n", err);
                return open_exit_code(r);
        }
        if (a->json) {
                j = json_object_new_object();
                l.apps = json_object_new_array();
                json_object_object_add(j, "path", jsonfmt_string(path));
        } else {
                printf("history %s%s\n", path, h ? "" : ": nothing recorded yet");
                if (h)
                        printf("%-28s %-10s %-8s %4s %5s %8s %6s %6s %10s %-5s %s\n", "app",
                               "policy", "args", "runs", "cores", "freq_mhz", "p_est", "mem_fr",
                               "score", "stack", "updated");
        }
        if (h)
                r = history_foreach(h, list_one, &l, err, sizeof(err));
        else
                r = 0;
        history_close(h);
        if (r < 0) {
                fprintf(stderr, "pctl history: %s\n", err);
                json_object_put(j);
                json_object_put(l.apps);
                return EXIT_FAILURE_RUN;
        }
        if (a->json) {
                json_object_object_add(j, "apps", l.apps);
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
                return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
        }
        return EXIT_OK;
}

static int history_forget_cmd(const struct history_args *a, const char *path)
{
        struct history *h = NULL;
        unsigned removed = 0;
        char err[700];
        int r;

        /* Forgetting must not create a file that was not there. */
        if (access(path, F_OK) < 0) {
                fprintf(stderr, "pctl history forget: no history at %s: %s\n", path,
                        strerror(errno));
                return EXIT_FAILURE_RUN;
        }
        r = history_open(path, false, &h, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "pctl history forget: %s\n", err);
                return open_exit_code(r);
        }
        r = history_forget(h, a->app, &removed, err, sizeof(err));
        history_close(h);
        if (r < 0) {
                fprintf(stderr, "pctl history forget: %s\n", err);
                return EXIT_FAILURE_RUN;
        }
        if (a->json) {
                struct json_object *j = json_object_new_object();

                json_object_object_add(j, "path", jsonfmt_string(path));
                json_object_object_add(j, "app", jsonfmt_string(a->app));
                json_object_object_add(j, "forgotten", json_object_new_uint64(removed));
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
                if (r < 0)
                        return EXIT_FAILURE_RUN;
        } else if (removed || !a->app) {
                printf("forgot %u entr%s%s%s\n", removed, removed == 1 ? "y" : "ies",
                       a->app ? " of " : "", a->app ? a->app : "");
        }
        if (a->app && !removed) {
                fprintf(stderr, "pctl history forget: no history of '%s' in %s\n", a->app, path);
                return EXIT_FAILURE_RUN;
        }
        return EXIT_OK;
}

int cmd_history(int argc, char **argv)
{
        struct history_args a;
        char path[CONFIG_PATH_MAX];
        int r = history_parse(argc, argv, &a);

        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        r = history_path(&a, path, sizeof(path));
        if (r < 0)
                return r == -ENODATA ? EXIT_FAILURE_RUN : EXIT_USAGE;
        return a.forget ? history_forget_cmd(&a, path) : history_list(&a, path);
}
