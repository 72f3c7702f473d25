/* pctl status: what pctld manages now, once or redrawn (--watch), as text or JSON. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "commands.h"
#include "pctl/cpumask.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

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
        const char *best = NULL, *source;
        double best_cores = 0, cores = 0, speedup = 0;

        if (!json_object_object_get_ex(a, "stack", &st) ||
            !json_object_is_type(st, json_type_object) ||
            !json_object_object_get_ex(st, "components", &comps) ||
            !json_object_is_type(comps, json_type_object))
                return;
        reply_number(st, "cores", &cores);
        reply_number(st, "speedup", &speedup);
        source = reply_text(st, "source", "unknown");
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
                printf("%-15s stack: %s %.2f of %g core%s (speedup %.2f, from %s)\n", "", best,
                       best_cores, cores, plural_s(cores), speedup, source);
        else
                printf("%-15s stack: no delimiter (speedup %.2f of %g core%s, from %s)\n", "",
                       speedup, cores, plural_s(cores), source);
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
        if (total > n && n == 0) /* their text is root's */
                printf("record    %s: %.0f line%s skipped at start, kept in the record (root "
                       "sees them)\n",
                       file, total, plural_s(textfmt_rounded(total)));
        else if (total > n)
                printf("record    %s: %.0f more line%s skipped\n", file, total - (double)n,
                       plural_s(textfmt_rounded(total - (double)n)));
}

/* Each package's memory traffic now and its bandwidth, or once why it is not measured;
 * nothing from a pctld that does not say. */
static void status_memory(struct json_object *s)
{
        struct json_object *flag = NULL, *pkgs = NULL;
        size_t n = 0;

        if (!json_object_object_get_ex(s, "mem_traffic", &flag) ||
            !json_object_is_type(flag, json_type_boolean))
                return;
        if (!json_object_get_boolean(flag)) {
                char why[512];

                printf("memory    traffic: %s\n",
                       reply_not_measured(s, "mem_traffic_reason", why, sizeof(why)));
                return;
        }
        if (json_object_object_get_ex(s, "mem_packages", &pkgs) &&
            json_object_is_type(pkgs, json_type_array))
                n = json_object_array_length(pkgs);
        if (n == 0)
                printf("memory    traffic: no interval measured yet\n");
        for (size_t i = 0; i < n; i++) {
                struct json_object *p = json_object_array_get_idx(pkgs, i);
                const char *src = reply_string(p, "bandwidth_source");
                double k, gbps, bw;

                if (!reply_number(p, "package", &k))
                        continue; /* no package to name: nothing to say of it */
                printf("memory    package %.0f: ", k);
                if (reply_number(p, "mem_gbps", &gbps))
                        printf("%.1f GB/s now", gbps);
                else
                        printf("unknown now");
                if (src && reply_number(p, "bandwidth_gbps", &bw))
                        printf(", bandwidth %s%.1f GB/s (%s)\n",
                               strcmp(src, "lower bound") == 0 ? "\u2265 " : "", bw, src);
                else
                        printf(", bandwidth unknown\n");
        }
}

static void status_human(struct json_object *s)
{
        struct json_object *mflag = NULL;
        struct json_object *apps = NULL, *dvfs = NULL;
        const char *src = reply_string(s, "energy_source");
        const char *why = reply_string(s, "dvfs_why");
        double energy, power;
        size_t n_apps = 0;

        if (json_object_object_get_ex(s, "apps", &apps) &&
            json_object_is_type(apps, json_type_array))
                n_apps = json_object_array_length(apps);
        printf("platform  %s (sensor %s: %s)\n", reply_text(s, "platform", "unknown"),
               reply_text(s, "sensor", "unknown"), reply_text(s, "sensor_why", "unknown"));
        printf("cpusets   %s, CPUs %s; DVFS %s%s%s\n", reply_text(s, "cpuset_mode", "unknown"),
               reply_text(s, "managed_cpus", "unknown"),
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
        status_memory(s);
        printf("\n%-15s %7s %-12s %5s %-9s %-5s %6s %7s %6s %13s %8s %10s %10s\n", "NAME", "PID",
               "POLICY", "CORES", "CPUS", "PKGS", "MHZ", "IPC", "SPEEDUP", "P", "POWER_W",
               "EDP_RATE", "PRED_GAIN%");
        for (size_t i = 0; i < n_apps; i++) {
                struct json_object *a = json_object_array_get_idx(apps, i);
                double p, conf, pid = 0, cores = 0, prun, srun;
                char pbuf[32] = "-", pkgs[64];

                if (reply_number(a, "p_est", &p)) {
                        if (reply_number(a, "p_confidence", &conf))
                                snprintf(pbuf, sizeof(pbuf), "%.3f±%.3f", p, conf);
                        else
                                snprintf(pbuf, sizeof(pbuf), "%.3f", p);
                }
                reply_number(a, "pid", &pid);
                reply_number(a, "cores", &cores);
                /* "-" where pctld does not know them (null, an older pctld). */
                if (reply_packages(a, "packages", pkgs, sizeof(pkgs)) <= 0)
                        (void)strscpy(pkgs, "-", sizeof(pkgs));
                printf("%-15s %7.0f %-12s %5.0f %-9s %-5s", reply_text(a, "name", "?"), pid,
                       reply_text(a, "policy", "?"), cores, reply_text(a, "cpus", "-"), pkgs);
                print_num(a, "freq_mhz", " %*.0f", 6);
                print_num(a, "ipc", " %*.2f", 7);
                print_num(a, "speedup", " %*.3f", 7);
                printf(" %13s", pbuf);
                print_num(a, "power_w", " %*.1f", 8);
                print_num(a, "edp_rate", " %*.3g", 10);
                print_num(a, "gain_pct", " %*.1f", 10);
                printf("\n%-15s %s\n", "", reply_text(a, "reason", "(no reason given)"));
                /* How pctld holds it: its systemd unit, a cgroup of pctld's, or affinity. */
                if (reply_string(a, "held_by"))
                        printf("%-15s held by: %s\n", "", reply_string(a, "held_by"));
                /* Where the allocator is with it, and what its scores count as progress: its
                 * own markers, history's measure of its extra work, or instructions. */
                if (reply_string(a, "allocator_phase") && reply_string(a, "progress"))
                        printf("%-15s allocator: %s; progress: %s\n", "",
                               reply_string(a, "allocator_phase"), reply_string(a, "progress"));
                else if (reply_string(a, "progress"))
                        printf("%-15s progress: %s\n", "", reply_string(a, "progress"));
                if (reply_string(a, "job"))
                        printf("%-15s job %s\n", "", reply_string(a, "job"));
                status_stack(a);
                /* Where the sensor measures memory traffic: what the app moves per
                 * instruction, once told apart from its neighbours. */
                if (json_object_object_get_ex(s, "mem_traffic", &mflag) &&
                    json_object_is_type(mflag, json_type_boolean) &&
                    json_object_get_boolean(mflag)) {
                        double bpi;

                        if (reply_number(a, "mem_bytes_per_instr", &bpi))
                                printf("%-15s memory: %.2f bytes per instruction\n", "", bpi);
                        else
                                printf("%-15s memory: bytes per instruction unknown\n", "");
                }
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

int cmd_status(int argc, char **argv)
{
        return client_main(argc, argv, status_cmd);
}
