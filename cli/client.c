/* What the commands that talk to pctld over its socket share (cli/client.h): their options,
 * the socket they call, the call and its reply, and a PID sent as one request. */
#include "client.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "pctl/config.h"
#include "pctl/control.h"
#include "pctl/cpumask.h"
#include "pctl/registry.h"
#include "pctl/topology.h"
#include "pctl/util.h"

static void client_usage(const char *cmd, FILE *f)
{
        if (strcmp(cmd, "status") == 0)
                fputs("Usage: pctl status [--watch [SECONDS]] [--count N] [--json] "
                      "[--socket PATH | --config FILE]\n",
                      f);
        else if (strcmp(cmd, "run") == 0)
                fputs(
                    "Usage: pctl run [--policy NAME] [--json | --quiet] [--socket PATH | --config "
                    "FILE] -- CMD [ARG...]\n",
                    f);
        else if (strcmp(cmd, "adopt") == 0)
                fputs("Usage: pctl adopt PID [--policy NAME] [--job ID] [--socket PATH | --config "
                      "FILE]\n",
                      f);
        else if (strcmp(cmd, "reload") == 0)
                fputs("Usage: pctl policy reload [--socket PATH | --config FILE]\n", f);
        else
                fputs("Usage: pctl release PID [--socket PATH | --config FILE]\n", f);
}

static int client_parse(int argc, char **argv, struct client_args *a)
{
        static const struct option opts[] = {
            {"socket", required_argument, NULL, 's'}, {"config", required_argument, NULL, 'c'},
            {"policy", required_argument, NULL, 'p'}, {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},         {"watch", optional_argument, NULL, 'w'},
            {"count", required_argument, NULL, 'n'},  {"quiet", no_argument, NULL, 'q'},
            {"job", required_argument, NULL, 'J'},    {},
        };
        const char *cmd = argv[0];
        bool is_status = strcmp(cmd, "status") == 0;
        char optname[64];
        int c, li = -1;

        *a = (struct client_args){0};
        optind = 1;
        opterr = 0;
        /* run stops at the first non-option, so `pctl run CMD -x` keeps CMD's options; the
         * others take options after the PID too. */
        while ((c = getopt_long(argc, argv, strcmp(cmd, "run") == 0 ? "+" : "", opts, &li)) != -1) {
                /* The option as typed: "--count 3" names --count, not its value. */
                if (li >= 0)
                        snprintf(optname, sizeof(optname), "--%s", opts[li].name);
                else
                        snprintf(optname, sizeof(optname), "%s", argv[optind - 1]);
                li = -1;
                switch (c) {
                case 's':
                        a->socket = optarg;
                        break;
                case 'c':
                        a->config = optarg;
                        break;
                case 'p':
                        if (!config_name_valid(optarg)) {
                                fprintf(stderr, "pctl %s: --policy: '%s' is not a policy name\n",
                                        cmd, optarg);
                                return -EINVAL;
                        }
                        a->policy = optarg;
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'J':
                        if (strcmp(cmd, "adopt") != 0) {
                                fprintf(stderr, "pctl %s: --job goes with adopt only\n", cmd);
                                return -EINVAL;
                        }
                        if (!manager_job_valid(optarg)) {
                                fprintf(stderr,
                                        "pctl adopt: --job: '%s' is not a job tag (1 to %d "
                                        "printable characters without spaces)\n",
                                        optarg, MANAGER_JOB_MAX);
                                return -EINVAL;
                        }
                        a->job = optarg;
                        break;
                case 'q':
                        if (strcmp(cmd, "run") != 0) {
                                fprintf(stderr, "pctl %s: unknown or incomplete option '%s'\n", cmd,
                                        optname);
                                return -EINVAL;
                        }
                        a->quiet = true;
                        break;
                case 'w':
                case 'n':
                        if (!is_status) {
                                fprintf(stderr, "pctl %s: unknown or incomplete option '%s'\n", cmd,
                                        optname);
                                return -EINVAL;
                        }
                        if (c == 'w') {
                                a->watch = true;
                                if (optarg && (parse_double(optarg, &a->watch_s) < 0 ||
                                               !(a->watch_s >= 0.1 && a->watch_s <= 3600))) {
                                        fprintf(stderr,
                                                "pctl status: --watch takes seconds from 0.1 "
                                                "to 3600 (got '%s')\n",
                                                optarg);
                                        return -EINVAL;
                                }
                        } else if (parse_uint(optarg, &a->count) < 0 || a->count == 0) {
                                fprintf(stderr,
                                        "pctl status: --count takes a whole number above 0 "
                                        "(got '%s')\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'h':
                        client_usage(cmd, stdout);
                        return 1;
                default:
                        fprintf(stderr, "pctl %s: unknown or incomplete option '%s'\n", cmd,
                                optname);
                        return -EINVAL;
                }
        }
        if (a->quiet && a->json) {
                fprintf(stderr, "pctl run: --quiet and --json exclude each other\n");
                return -EINVAL;
        }
        a->first_arg = optind;
        return 0;
}

/* --socket, else the socket of --config, else of /etc/pctl/pctl.conf, else the default. */
static int client_socket(const struct client_args *a, const char *cmd, char *buf, size_t size)
{
        struct config conf;
        const char *path;
        char who[64];
        int r;

        if (a->socket)
                return strscpy(buf, a->socket, size);
        snprintf(who, sizeof(who), "pctl %s", cmd);
        r = cli_config_read(a->config, who, &conf, &path);
        if (r < 0)
                return r;
        return strscpy(buf, conf.socket, size);
}

/* A member of the reply: NULL or false when absent, null, or of another type. */
const char *reply_string(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

const char *reply_text(struct json_object *o, const char *key, const char *shown)
{
        const char *v = reply_string(o, key);

        return v ? v : shown;
}

const char *reply_not_measured(struct json_object *o, const char *key, char *buf, size_t size)
{
        const char *why = reply_string(o, key);

        if (why && strstr(why, "not measured"))
                snprintf(buf, size, "%s", why);
        else
                snprintf(buf, size, "not measured (%s)", why ? why : "the sensor does not say why");
        return buf;
}

bool reply_number(struct json_object *o, const char *key, double *out)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) ||
            !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
                return false;
        *out = json_object_get_double(v);
        return true;
}

int reply_packages(struct json_object *o, const char *key, char *buf, size_t size)
{
        struct json_object *arr = NULL;
        struct cpumask pkgs;
        int n;

        if (!json_object_object_get_ex(o, key, &arr) ||
            (n = topology_packages_from_json(arr, &pkgs)) < 0 ||
            topology_format_packages(&pkgs, buf, size) < 0)
                return -1;
        return n;
}

/* Sends the request; on success *reply holds the parsed {"ok":true,...} object. */
int client_call(const struct client_args *a, const char *cmd, const char *request,
                struct json_object **reply, char **text)
{
        char path[CONFIG_PATH_MAX];
        struct json_object *ok;
        enum json_tokener_error jerr;
        char *raw = NULL;
        int r;

        r = client_socket(a, cmd, path, sizeof(path));
        if (r < 0)
                return EXIT_USAGE;
        r = control_call(path, request, &raw);
        if (r == -ENOENT || r == -ECONNREFUSED) {
                fprintf(stderr, "pctl %s: pctld is not running (nothing listens on %s)\n", cmd,
                        path);
                return EXIT_FAILURE_RUN;
        }
        if (r < 0) {
                fprintf(stderr, "pctl %s: cannot talk to pctld at %s: %s\n", cmd, path,
                        strerror(-r));
                return EXIT_FAILURE_RUN;
        }
        *reply = json_tokener_parse_verbose(raw, &jerr);
        if (!*reply) {
                fprintf(stderr, "pctl %s: pctld sent a reply we cannot read: %s\n", cmd,
                        json_tokener_error_desc(jerr));
                free(raw);
                return EXIT_FAILURE_RUN;
        }
        if (!json_object_object_get_ex(*reply, "ok", &ok) ||
            !json_object_is_type(ok, json_type_boolean) || !json_object_get_boolean(ok)) {
                const char *e = reply_string(*reply, "error");

                fprintf(stderr, "pctl %s: %s\n", cmd, e ? e : "pctld refused the request");
                json_object_put(*reply);
                *reply = NULL; /* the caller frees what it is handed back */
                free(raw);
                return EXIT_FAILURE_RUN;
        }
        if (text)
                *text = raw;
        else
                free(raw);
        return EXIT_OK;
}

int pid_request(struct client_args *a, const char *cmd, int argc, char **argv, pid_t *pid)
{
        int v;

        if (a->first_arg >= argc) {
                fprintf(stderr, "pctl %s: a PID is required\n", cmd);
                return EXIT_USAGE;
        }
        /* 4194304 is the kernel's PID_MAX_LIMIT: nothing above it can be a process. */
        if (parse_int(argv[a->first_arg], &v) < 0 || v < 1 || v > 4194304) {
                fprintf(stderr, "pctl %s: '%s' is not a process id\n", cmd, argv[a->first_arg]);
                return EXIT_USAGE;
        }
        if (a->first_arg + 1 < argc) {
                fprintf(stderr, "pctl %s: unexpected argument '%s'\n", cmd, argv[a->first_arg + 1]);
                return EXIT_USAGE;
        }
        *pid = v;
        return EXIT_OK;
}

/* who: the command the user typed, which the messages name (`pctl run` sends an adopt);
 * exec_name: what the process is about to run (pctl run), or NULL. */
int send_pid(struct client_args *a, const char *who, const char *cmd, pid_t pid,
             const char *exec_name)
{
        struct json_object *request = json_object_new_object(), *reply = NULL;
        const char *slash = exec_name ? strrchr(exec_name, '/') : NULL;
        char comm[16];
        int r;

        json_object_object_add(request, "cmd", json_object_new_string(cmd));
        json_object_object_add(request, "pid", json_object_new_int(pid));
        if (a->policy)
                json_object_object_add(request, "policy", json_object_new_string(a->policy));
        if (a->job)
                json_object_object_add(request, "job", json_object_new_string(a->job));
        if (exec_name) {
                /* As the kernel will name it: the file name, cut to 15 bytes. */
                snprintf(comm, sizeof(comm), "%s", slash ? slash + 1 : exec_name);
                json_object_object_add(request, "exec", json_object_new_string(comm));
        }
        r = client_call(a, who, json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN),
                        &reply, NULL);
        json_object_put(request);
        json_object_put(reply);
        return r;
}

int client_main(int argc, char **argv, int (*fn)(struct client_args *, int, char **))
{
        struct client_args a;
        int r = client_parse(argc, argv, &a);

        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        return fn(&a, argc, argv);
}
