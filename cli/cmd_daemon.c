/* pctl status, run, adopt, release: the commands that talk to pctld over its socket. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "pctl/config.h"
#include "pctl/control.h"
#include "pctl/cpumask.h"
#include "pctl/manager.h"
#include "pctl/procstat.h"
#include "pctl/util.h"

struct client_args {
        const char *socket;
        const char *config;
        const char *policy;
        const char *job; /* adopt: the batch job the process belongs to */
        bool json;
        bool quiet;     /* run: no summary */
        bool watch;     /* status: redraw every watch_s */
        double watch_s; /* 0: not given */
        unsigned count; /* status --watch: frames, 0 for until interrupted */
        int first_arg;  /* optind after the options */
};

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
static const char *reply_string(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool reply_number(struct json_object *o, const char *key, double *out)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) ||
            !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
                return false;
        *out = json_object_get_double(v);
        return true;
}

/* Sends the request; on success *reply holds the parsed {"ok":true,...} object. */
static int client_call(const struct client_args *a, const char *cmd, const char *request,
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

static void print_num(struct json_object *o, const char *key, const char *fmt, int width)
{
        double v;

        if (reply_number(o, key, &v))
                printf(fmt, width, v);
        else
                printf("%*s", width, "-");
}

/* The app's largest scaling delimiter from its speedup stack: "sync 0.70 of 2 cores". */
static void status_stack(struct json_object *a)
{
        struct json_object *st = NULL, *comps = NULL;
        const char *best = NULL;
        double best_cores = 0, cores = 0, speedup = 0;

        if (!json_object_object_get_ex(a, "stack", &st) ||
            !json_object_is_type(st, json_type_object) ||
            !json_object_object_get_ex(st, "components", &comps) ||
            !json_object_is_type(comps, json_type_object))
                return;
        reply_number(st, "cores", &cores);
        reply_number(st, "speedup", &speedup);
        json_object_object_foreach(comps, key, val)
        {
                double v;

                /* Interference is what is left, not a delimiter of the app's own. */
                if (strcmp(key, "interference") == 0 ||
                    !(json_object_is_type(val, json_type_double) ||
                      json_object_is_type(val, json_type_int)))
                        continue;
                v = json_object_get_double(val);
                if (v > best_cores) {
                        best_cores = v;
                        best = key;
                }
        }
        if (best)
                printf("%-15s stack: %s %.2f of %g cores (speedup %.2f, from %s)\n", "", best,
                       best_cores, cores, speedup, reply_string(st, "source"));
        else
                printf("%-15s stack: no delimiter (speedup %.2f of %g cores, from %s)\n", "",
                       speedup, cores, reply_string(st, "source"));
}

/* The lines of the state record pctld could not read at its start: an operator's to fix. */
static void status_state_record(struct json_object *s)
{
        struct json_object *rec = NULL, *skipped = NULL;
        const char *file;
        double total = 0;
        size_t n = 0;

        if (!json_object_object_get_ex(s, "state_record", &rec) || !rec ||
            !reply_number(rec, "skipped_lines", &total) || total < 1 ||
            !(file = reply_string(rec, "file")))
                return;
        if (json_object_object_get_ex(rec, "skipped", &skipped) &&
            json_object_is_type(skipped, json_type_array))
                n = json_object_array_length(skipped);
        for (size_t i = 0; i < n; i++) {
                struct json_object *l = json_object_array_get_idx(skipped, i);
                const char *why = reply_string(l, "why"), *text = reply_string(l, "text");

                /* By its text: its line number moves with every commit of the record. */
                printf("record    %s: '%s': %s; skipped at start, kept in the record\n", file,
                       text ? text : "?", why ? why : "?");
        }
        if (total > n)
                printf("record    %s: %.0f more lines skipped\n", file, total - (double)n);
}

static void status_human(struct json_object *s)
{
        struct json_object *apps = NULL, *dvfs = NULL;
        const char *src = reply_string(s, "energy_source");
        const char *why = reply_string(s, "dvfs_why");
        double energy, power;
        size_t n_apps = 0;

        if (json_object_object_get_ex(s, "apps", &apps) &&
            json_object_is_type(apps, json_type_array))
                n_apps = json_object_array_length(apps);
        printf("platform  %s (sensor %s: %s)\n", reply_string(s, "platform"),
               reply_string(s, "sensor"), reply_string(s, "sensor_why"));
        printf("cpusets   %s, CPUs %s; DVFS %s%s%s\n", reply_string(s, "cpuset_mode"),
               reply_string(s, "managed_cpus"),
               json_object_object_get_ex(s, "dvfs", &dvfs) &&
                       json_object_is_type(dvfs, json_type_boolean) && json_object_get_boolean(dvfs)
                   ? "on"
                   : "off",
               why ? ": " : "", why ? why : "");
        if (reply_string(s, "calibration"))
                printf("calibr.   %s\n", reply_string(s, "calibration"));
        status_state_record(s);
        if (src && reply_number(s, "energy_j", &energy)) {
                if (reply_number(s, "power_w", &power))
                        printf("power     %.1f W, %.1f J since start (%s)\n", power, energy, src);
                else
                        printf("power     %.1f J since start (%s)\n", energy, src);
        } else {
                printf("power     unknown (no RAPL, no calibrated or declared model)\n");
        }
        printf("\n%-15s %7s %-12s %5s %-9s %6s %7s %6s %13s %8s %10s %10s\n", "NAME", "PID",
               "POLICY", "CORES", "CPUS", "MHZ", "IPC", "SPEEDUP", "P", "POWER_W", "EDP_RATE",
               "PRED_GAIN%");
        for (size_t i = 0; i < n_apps; i++) {
                struct json_object *a = json_object_array_get_idx(apps, i);
                double p, conf, pid = 0, cores = 0, prun, srun;
                char pbuf[32] = "-";

                if (reply_number(a, "p_est", &p)) {
                        if (reply_number(a, "p_confidence", &conf))
                                snprintf(pbuf, sizeof(pbuf), "%.3f±%.3f", p, conf);
                        else
                                snprintf(pbuf, sizeof(pbuf), "%.3f", p);
                }
                reply_number(a, "pid", &pid);
                reply_number(a, "cores", &cores);
                printf("%-15s %7.0f %-12s %5.0f %-9s", reply_string(a, "name"), pid,
                       reply_string(a, "policy"), cores, reply_string(a, "cpus"));
                print_num(a, "freq_mhz", " %*.0f", 6);
                print_num(a, "ipc", " %*.2f", 7);
                print_num(a, "speedup", " %*.3f", 7);
                printf(" %13s", pbuf);
                print_num(a, "power_w", " %*.1f", 8);
                print_num(a, "edp_rate", " %*.3g", 10);
                print_num(a, "gain_pct", " %*.1f", 10);
                printf("\n%-15s %s\n", "", reply_string(a, "reason"));
                if (reply_string(a, "job"))
                        printf("%-15s job %s\n", "", reply_string(a, "job"));
                status_stack(a);
                /* The whole run's P where it tells something the phase's does not. */
                if (reply_number(a, "p_run", &prun) &&
                    !(reply_number(a, "p_est", &p) && fabs(p - prun) < 0.005)) {
                        printf("%-15s whole run: P %.3f", "", prun);
                        if (reply_number(a, "p_run_confidence", &conf))
                                printf("±%.3f", conf);
                        if (reply_number(a, "speedup_run", &srun))
                                printf(", speedup %.3f", srun);
                        printf(" (P above is the current phase's)\n");
                }
        }
        if (n_apps == 0)
                printf("(no managed apps)\n");
        else
                printf("P: the current phase's P\u0302 ± its standard error (p_est); \"whole "
                       "run\": P\u0302 from the app's start, start-up and tails included "
                       "(p_run), ± the range the time pctld did not see leaves\n"
                       "PRED_GAIN%%: the model's predicted gain of the objective against all the "
                       "app's allowed cores at the top frequency (a prediction, not a "
                       "measurement)\n");
}

/* --watch: the last frames' cores and P̂ of each app, drawn as one line of eighth blocks. */
#define WATCH_HISTORY 32
#define WATCH_MAX_APPS 64

struct watch_app {
        int pid;
        unsigned n;                  /* frames recorded, up to WATCH_HISTORY */
        double cores[WATCH_HISTORY]; /* oldest first */
        double p[WATCH_HISTORY];     /* NaN: no estimate at that frame */
};

struct watch {
        struct watch_app apps[WATCH_MAX_APPS];
        unsigned n_apps;
};

static volatile sig_atomic_t watch_stop;

static void watch_on_signal(int sig)
{
        (void)sig;
        watch_stop = 1;
}

static void watch_push(struct watch_app *a, double cores, double p)
{
        if (a->n == WATCH_HISTORY) {
                memmove(a->cores, a->cores + 1, (WATCH_HISTORY - 1) * sizeof(*a->cores));
                memmove(a->p, a->p + 1, (WATCH_HISTORY - 1) * sizeof(*a->p));
                a->n--;
        }
        a->cores[a->n] = cores;
        a->p[a->n] = p;
        a->n++;
}

/* Keeps the history of the apps in this frame only: an app that left is forgotten. */
static void watch_record(struct watch *w, struct json_object *apps)
{
        struct watch next = {0};
        size_t n = apps ? json_object_array_length(apps) : 0;

        for (size_t i = 0; i < n && next.n_apps < WATCH_MAX_APPS; i++) {
                struct json_object *a = json_object_array_get_idx(apps, i);
                struct watch_app *dst = &next.apps[next.n_apps++];
                double pid = 0, cores = 0, p = NAN;

                reply_number(a, "pid", &pid);
                reply_number(a, "cores", &cores);
                reply_number(a, "p_est", &p);
                for (unsigned k = 0; k < w->n_apps; k++)
                        if (w->apps[k].pid == (int)pid)
                                *dst = w->apps[k];
                dst->pid = (int)pid;
                watch_push(dst, cores, p);
        }
        *w = next;
}

/* One eighth block per frame: ▁ for the least, █ for full scale, space for unknown. */
static void watch_spark(const double *v, unsigned n, double full)
{
        static const char *const blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

        for (unsigned i = 0; i < n; i++) {
                int level;

                if (!isfinite(v[i]) || full <= 0) {
                        fputc(' ', stdout);
                        continue;
                }
                level = (int)lround(fmin(fmax(v[i] / full, 0), 1) * 7);
                fputs(blocks[level], stdout);
        }
}

static void watch_history(const struct watch *w, struct json_object *reply)
{
        const char *list = reply_string(reply, "managed_cpus");
        struct cpumask managed;
        double full = 1;

        if (list && cpumask_parse(list, &managed) == 0 && cpumask_count(&managed))
                full = cpumask_count(&managed);
        if (!w->n_apps)
                return;
        printf("\nhistory, oldest first (cores of %.0f, P\u0302 of 1):\n", full);
        for (unsigned i = 0; i < w->n_apps; i++) {
                const struct watch_app *a = &w->apps[i];

                printf("%7d  cores ", a->pid);
                watch_spark(a->cores, a->n, full);
                printf("%*s  P\u0302 ", (int)(WATCH_HISTORY - a->n), "");
                watch_spark(a->p, a->n, 1);
                printf("\n");
        }
}

/* Redraws in place on a terminal (like top); one frame after another, plain, into a pipe or
 * file; with --json, one document per line. Ends on SIGINT/SIGTERM (exit 0) or after
 * --count frames. */
static int status_watch(struct client_args *a)
{
        struct sigaction sa = {.sa_handler = watch_on_signal};
        bool tty = !a->json && isatty(STDOUT_FILENO);
        double period_s = a->watch_s > 0 ? a->watch_s : 2;
        struct watch *w = calloc(1, sizeof(*w));
        unsigned frames = 0;
        int r = EXIT_OK;

        if (!w)
                return EXIT_FAILURE_RUN;
        /* No SA_RESTART: the signal ends the sleep at once. */
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        while (!watch_stop) {
                struct json_object *reply = NULL;
                char *text = NULL;
                struct timespec ts = {(time_t)period_s, (long)((period_s - floor(period_s)) * 1e9)};

                r = client_call(a, "status", "{\"cmd\":\"status\"}", &reply, &text);
                if (r != EXIT_OK)
                        break;
                if (a->json) {
                        fputs(text, stdout);
                } else {
                        struct json_object *apps = NULL;
                        char when[32];
                        time_t now = time(NULL);

                        if (json_object_object_get_ex(reply, "apps", &apps) &&
                            !json_object_is_type(apps, json_type_array))
                                apps = NULL;
                        watch_record(w, apps);
                        strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
                        /* Home and clear below: the frame replaces the last one. */
                        if (tty)
                                fputs("\033[H\033[J", stdout);
                        else if (frames)
                                fputc('\n', stdout);
                        printf("pctl status --watch: every %.1f s, %s%s\n", period_s, when,
                               tty ? " (Ctrl-C ends)" : "");
                        status_human(reply);
                        watch_history(w, reply);
                }
                fflush(stdout);
                json_object_put(reply);
                free(text);
                if (a->count && ++frames >= a->count)
                        break;
                while (!watch_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
        }
        free(w);
        return r;
}

static int status_cmd(struct client_args *a, int argc, char **argv)
{
        struct json_object *reply = NULL;
        char *text = NULL;
        int r;

        /* `--watch 5` as well as `--watch=5`: the seconds may follow as the next word. */
        if (a->watch && a->watch_s == 0 && a->first_arg < argc &&
            parse_double(argv[a->first_arg], &a->watch_s) == 0) {
                if (!(a->watch_s >= 0.1 && a->watch_s <= 3600)) {
                        fprintf(stderr,
                                "pctl status: --watch takes seconds from 0.1 to 3600 (got '%s')\n",
                                argv[a->first_arg]);
                        return EXIT_USAGE;
                }
                a->first_arg++;
        }
        if (a->first_arg < argc) {
                fprintf(stderr, "pctl status: unexpected argument '%s'\n", argv[a->first_arg]);
                return EXIT_USAGE;
        }
        if (a->count && !a->watch) {
                fprintf(stderr, "pctl status: --count goes with --watch\n");
                return EXIT_USAGE;
        }
        if (a->watch)
                return status_watch(a);
        r = client_call(a, "status", "{\"cmd\":\"status\"}", &reply, &text);
        if (r != EXIT_OK)
                return r;
        if (a->json)
                fputs(text, stdout);
        else
                status_human(reply);
        json_object_put(reply);
        free(text);
        return EXIT_OK;
}

static int pid_request(struct client_args *a, const char *cmd, int argc, char **argv, pid_t *pid)
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
static int send_pid(struct client_args *a, const char *who, const char *cmd, pid_t pid,
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

static int adopt_cmd(struct client_args *a, int argc, char **argv)
{
        pid_t pid;
        int r = pid_request(a, "adopt", argc, argv, &pid);

        return r != EXIT_OK ? r : send_pid(a, "adopt", "adopt", pid, NULL);
}

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

static double timeval_s(struct timeval tv)
{
        return tv.tv_sec + tv.tv_usec / 1e6;
}

static double monotonic_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A figure of the report as "%.Nf", or "unknown". */
static const char *report_fmt(struct json_object *o, const char *key, const char *fmt, char *buf,
                              size_t size)
{
        double v;

        if (o && reply_number(o, key, &v))
                snprintf(buf, size, fmt, v);
        else
                snprintf(buf, size, "unknown");
        return buf;
}

/* How the command ended, as pctl run measured it itself. */
struct run_result {
        const char *cmd;
        int status;         /* from wait4 */
        int exec_errno;     /* 0: CMD ran; else why it could not be executed */
        double wall_s;      /* from the go signal to the exit */
        struct rusage ru;   /* CMD and its waited-for children */
        double own_cpu_s;   /* CMD's own threads, what pctld measures; NaN: unknown */
        double child_cpu_s; /* its waited-for children, which pctld does not see; NaN: unknown */
};

/* The exit status pctl run gives back: the command's own, 128 + N when signal N killed it (as
 * the shell reports it), 127 when it was not found and 126 when it could not be executed (as
 * the shell and time(1) do). */
static int run_exit_status(const struct run_result *r)
{
        if (r->exec_errno)
                return r->exec_errno == ENOENT ? 127 : 126;
        if (WIFSIGNALED(r->status))
                return 128 + WTERMSIG(r->status);
        return WEXITSTATUS(r->status);
}

/* The CPU time of an exited, not yet reaped, process: its own threads' (utime + stime of
 * /proc/PID/stat) and its waited-for children's (cutime + cstime). 0 or -errno. */
static int zombie_cpu(pid_t pid, double *own_s, double *children_s)
{
        char path[32], buf[1024];
        uint64_t ut, st, cut, cst;
        long hz = sysconf(_SC_CLK_TCK);
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0 || hz <= 0)
                return -EIO;
        buf[n] = '\0';
        if (procstat_field_u64(buf, 14, &ut) < 0 || procstat_field_u64(buf, 15, &st) < 0 ||
            procstat_field_u64(buf, 16, &cut) < 0 || procstat_field_u64(buf, 17, &cst) < 0)
                return -EIO;
        *own_s = (double)(ut + st) / hz;
        *children_s = (double)(cut + cst) / hz;
        return 0;
}

/* The energy's source as the summary says it: only "measured" was measured; "declared" is
 * pctl.conf's [power], "model" platform.ini's calibrated one. */
static const char *energy_source_text(const char *src, char *buf, size_t size)
{
        if (strcmp(src, "measured") == 0)
                snprintf(buf, size, "measured");
        else if (strcmp(src, "declared") == 0)
                snprintf(buf, size, "not measured: from the power model declared in pctl.conf");
        else if (strcmp(src, "model") == 0)
                snprintf(buf, size, "not measured: from the calibrated power model");
        else
                snprintf(buf, size, "not measured: %s", src);
        return buf;
}

/* Above this share of the command's CPU time, its children's work is worth a warning. */
#define RUN_CHILDREN_SHARE 0.1

static void run_summary_human(const struct run_result *r, struct json_object *rep,
                              const char *rep_err)
{
        double user_s = timeval_s(r->ru.ru_utime), sys_s = timeval_s(r->ru.ru_stime), v, seen, conf,
               cpu_s = user_s + sys_s;
        struct json_object *configs = NULL;
        const char *note, *src;
        char b1[64], b2[96];
        bool completed;

        if (r->exec_errno)
                fprintf(stderr, "pctl run: %s could not be run (%s): exit status %d\n", r->cmd,
                        strerror(r->exec_errno), run_exit_status(r));
        else if (WIFSIGNALED(r->status))
                fprintf(stderr, "pctl run: %s was killed by signal %d (%s): exit status %d\n",
                        r->cmd, WTERMSIG(r->status), strsignal(WTERMSIG(r->status)),
                        run_exit_status(r));
        else
                fprintf(stderr, "pctl run: %s exited with status %d\n", r->cmd,
                        WEXITSTATUS(r->status));
        fprintf(stderr,
                "  wall     %.2f s\n  CPU      %.2f s (user %.2f s, sys %.2f s), %.2f "
                "CPU s per wall s\n",
                r->wall_s, cpu_s, user_s, sys_s, r->wall_s > 0 ? cpu_s / r->wall_s : 0);
        if (!rep) {
                fprintf(stderr, "  pctld    no report: %s\n", rep_err);
                return;
        }
        fprintf(stderr, "  speedup  %s over the run",
                report_fmt(rep, "speedup_run", "%.3f", b1, sizeof(b1)));
        if (reply_number(rep, "seen_s", &seen) && reply_number(rep, "managed_s", &v))
                fprintf(stderr, " (pctld's samples cover %.2f s; it managed it %.2f s)", seen, v);
        fprintf(stderr, "\n  P        run %s", report_fmt(rep, "p_run", "%.3f", b1, sizeof(b1)));
        completed = reply_number(rep, "completed_s", &v) && reply_number(rep, "p_run_seen", &conf);
        if (!completed && reply_number(rep, "p_run_confidence", &conf) &&
            reply_number(rep, "seen_s", &seen) && reply_number(rep, "managed_s", &v))
                fprintf(stderr, " (±%.3f for the %.2f s pctld did not see)", conf,
                        fmax(v - seen, 0));
        fprintf(stderr, ", last phase %s\n", report_fmt(rep, "p_est", "%.3f", b2, sizeof(b2)));
        if (completed)
                fprintf(stderr,
                        "           (the %.2f s pctld did not see: from the CPU time above; %.3f "
                        "over what it saw)\n",
                        v, conf);
        if ((note = reply_string(rep, "speedup_note")))
                fprintf(stderr, "           (%s)\n", note);
        /* pctld measures the command with the child processes its main thread started (the
         * software sensor follows them): said, with what it cannot follow. */
        if (isfinite(r->child_cpu_s) && r->child_cpu_s > RUN_CHILDREN_SHARE * cpu_s &&
            r->child_cpu_s >= 0.05)
                fprintf(stderr,
                        "           (%.2f s of the %.2f s CPU were %s's child processes, measured "
                        "with it: those its main thread started and their own)\n",
                        r->child_cpu_s, cpu_s, r->cmd);
        if ((src = reply_string(rep, "energy_source")) && reply_number(rep, "energy_j", &v))
                fprintf(stderr, "  energy   %.1f J (%s), EDP %s J·s\n", v,
                        energy_source_text(src, b2, sizeof(b2)),
                        report_fmt(rep, "edp_js", "%.3g", b1, sizeof(b1)));
        else
                fprintf(stderr, "  energy   unknown (pctld has no energy figure for it: no RAPL "
                                "and no power model, or no sample of it), EDP unknown\n");
        if (json_object_object_get_ex(rep, "configs", &configs) &&
            json_object_is_type(configs, json_type_array)) {
                size_t n = json_object_array_length(configs);

                for (size_t i = 0; i < n; i++) {
                        struct json_object *c = json_object_array_get_idx(configs, i);
                        double cores = 0, mhz, sec = 0;

                        reply_number(c, "cores", &cores);
                        reply_number(c, "s", &sec);
                        fprintf(stderr, "  %-8s %.0f cores", i ? "" : "ran at", cores);
                        if (reply_number(c, "freq_mhz", &mhz))
                                fprintf(stderr, " at %.0f MHz", mhz);
                        fprintf(stderr, " for %.2f s\n", sec);
                }
        }
        if (reply_number(rep, "gain_pct", &v))
                fprintf(stderr, "  gain     %.1f %% against the default (%s)\n", v,
                        reply_string(rep, "gain_note"));
        else
                fprintf(stderr, "  gain     %s\n", reply_string(rep, "gain_note"));
}

static struct json_object *json_finite(double v)
{
        return isfinite(v) ? json_object_new_double(v) : NULL;
}

/* One JSON object on stderr: the command's status and times, and pctld's report (null, with
 * report_error, when it has none). */
static void run_summary_json(const struct run_result *r, struct json_object *rep,
                             const char *rep_err)
{
        struct json_object *j = json_object_new_object();
        double user_s = timeval_s(r->ru.ru_utime), sys_s = timeval_s(r->ru.ru_stime);
        bool ran = !r->exec_errno;

        json_object_object_add(j, "command", json_object_new_string(r->cmd));
        json_object_object_add(
            j, "exit_status",
            ran && WIFEXITED(r->status) ? json_object_new_int(WEXITSTATUS(r->status)) : NULL);
        json_object_object_add(
            j, "signal",
            ran && WIFSIGNALED(r->status) ? json_object_new_int(WTERMSIG(r->status)) : NULL);
        json_object_object_add(j, "exec_error",
                               ran ? NULL : json_object_new_string(strerror(r->exec_errno)));
        json_object_object_add(j, "pctl_exit_status", json_object_new_int(run_exit_status(r)));
        json_object_object_add(j, "wall_s", json_object_new_double(r->wall_s));
        json_object_object_add(j, "cpu_s", json_object_new_double(user_s + sys_s));
        json_object_object_add(j, "user_s", json_object_new_double(user_s));
        json_object_object_add(j, "sys_s", json_object_new_double(sys_s));
        json_object_object_add(j, "own_cpu_s", json_finite(r->own_cpu_s));
        json_object_object_add(j, "children_cpu_s", json_finite(r->child_cpu_s));
        json_object_object_add(j, "pctld", rep ? json_object_get(rep) : NULL);
        json_object_object_add(j, "report_error", rep ? NULL : json_object_new_string(rep_err));
        fprintf(stderr, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
        json_object_put(j);
}

/* Asks pctld for its report on the command that just ended; it keeps one for a minute. A
 * command that could not be executed has nothing to report. */
static void run_summary(struct client_args *a, pid_t child, const struct run_result *r)
{
        struct json_object *rep = NULL;
        char request[128], *text = NULL;
        const char *err = "pctld did not answer (see the message above)";
        struct client_args quiet = *a;
        double cpu_s = timeval_s(r->ru.ru_utime) + timeval_s(r->ru.ru_stime);

        /* What pctl run measured of the command completes pctld's figures with the part of
         * the run it did not see (the exit's partial interval). */
        snprintf(request, sizeof(request),
                 "{\"cmd\":\"report\",\"pid\":%d,\"wall_ns\":%.0f,\"cpu_ns\":%.0f}", (int)child,
                 fmax(r->wall_s, 0) * 1e9, fmax(cpu_s, 0) * 1e9);
        quiet.json = false;
        if (r->exec_errno)
                err = "the command could not be run: nothing ran to report on";
        else if (client_call(&quiet, "run", request, &rep, &text) != EXIT_OK)
                rep = NULL;
        if (a->json)
                run_summary_json(r, rep, err);
        else
                run_summary_human(r, rep, err);
        json_object_put(rep);
        free(text);
}

/* SIGTERM and SIGHUP to pctl run go on to the command, which decides; pctl run waits for it
 * and reports as usual. */
static volatile sig_atomic_t run_child_pid;

static void run_forward(int sig)
{
        int saved = errno;

        if (run_child_pid > 0)
                kill((pid_t)run_child_pid, sig);
        errno = saved;
}

/* The child waits until pctld has it, so the command's first instruction already runs
 * where the policy puts it; then it becomes the command. */
static int run_cmd(struct client_args *a, int argc, char **argv)
{
        struct sigaction fwd = {.sa_handler = run_forward, .sa_flags = SA_RESTART};
        struct run_result res = {.cmd = argv[a->first_arg], .own_cpu_s = NAN, .child_cpu_s = NAN};
        int go[2], ex[2], r;
        pid_t child;
        char byte = 0;
        double start_s;
        siginfo_t info;
        ssize_t n;

        if (a->first_arg >= argc) {
                fprintf(stderr, "pctl run: a command is required after --\n");
                return EXIT_USAGE;
        }
        /* go: the parent's signal to exec; ex: the exec's errno back (closed on success). */
        if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0) {
                fprintf(stderr, "pctl run: pipe: %s\n", strerror(errno));
                return EXIT_FAILURE_RUN;
        }
        child = fork();
        if (child < 0) {
                fprintf(stderr, "pctl run: fork: %s\n", strerror(errno));
                return EXIT_FAILURE_RUN;
        }
        if (child == 0) {
                int e;

                close(go[1]);
                close(ex[0]);
                if (read(go[0], &byte, 1) != 1)
                        _exit(127); /* the parent gave up */
                execvp(argv[a->first_arg], argv + a->first_arg);
                e = errno;
                if (write(ex[1], &e, sizeof(e)) != (ssize_t)sizeof(e))
                        fprintf(stderr, "pctl run: cannot run %s: %s\n", argv[a->first_arg],
                                strerror(e));
                _exit(e == ENOENT ? 127 : 126);
        }
        close(go[0]);
        close(ex[1]);
        r = send_pid(a, "run", "adopt", child, argv[a->first_arg]);
        if (r != EXIT_OK) {
                fprintf(stderr, "pctl run: %s was not started\n", argv[a->first_arg]);
                close(go[1]);
                close(ex[0]);
                waitpid(child, NULL, 0);
                return r;
        }
        start_s = monotonic_s();
        if (write(go[1], &byte, 1) != 1) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                return EXIT_FAILURE_RUN;
        }
        close(go[1]);
        /* Ctrl-C goes to the command (same process group); we wait for it either way. */
        run_child_pid = child;
        signal(SIGINT, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        sigaction(SIGTERM, &fwd, NULL);
        sigaction(SIGHUP, &fwd, NULL);
        /* Nothing to read once the exec closed the pipe; an errno when it failed. */
        while ((n = read(ex[0], &res.exec_errno, sizeof(res.exec_errno))) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t)sizeof(res.exec_errno))
                res.exec_errno = 0;
        close(ex[0]);
        /* The summary says it too; with --quiet or --json this is the message. */
        if (res.exec_errno && (a->quiet || a->json))
                fprintf(stderr, "pctl run: cannot run %s: %s\n", res.cmd, strerror(res.exec_errno));
        /* Exited but not reaped: its own CPU time apart from its children's. */
        while (waitid(P_PID, child, &info, WEXITED | WNOWAIT) < 0)
                if (errno != EINTR)
                        return EXIT_FAILURE_RUN;
        if (zombie_cpu(child, &res.own_cpu_s, &res.child_cpu_s) < 0)
                res.own_cpu_s = res.child_cpu_s = NAN;
        while (wait4(child, &res.status, 0, &res.ru) < 0)
                if (errno != EINTR)
                        return EXIT_FAILURE_RUN;
        res.wall_s = monotonic_s() - start_s;
        if (!a->quiet)
                run_summary(a, child, &res);
        return run_exit_status(&res);
}

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

static int client_main(int argc, char **argv, int (*fn)(struct client_args *, int, char **))
{
        struct client_args a;
        int r = client_parse(argc, argv, &a);

        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        return fn(&a, argc, argv);
}

int cmd_status(int argc, char **argv)
{
        return client_main(argc, argv, status_cmd);
}
int cmd_run(int argc, char **argv)
{
        return client_main(argc, argv, run_cmd);
}
int cmd_adopt(int argc, char **argv)
{
        return client_main(argc, argv, adopt_cmd);
}
int cmd_release(int argc, char **argv)
{
        return client_main(argc, argv, release_cmd);
}
int cmd_policy_reload(int argc, char **argv)
{
        return client_main(argc, argv, reload_cmd);
}
