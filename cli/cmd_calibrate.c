/* pctl calibrate: measures the platform with pbench and writes platform.ini. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "pctl/calibrate.h"
#include "pctl/jsonfmt.h"
#include "pctl/platform_file.h"
#include "pctl/util.h"

int cmd_calibrate(int argc, char **argv);

struct calibrate_args {
        struct calibrate_config cfg;
        const char *out_dir;
        const char *platform;
        bool json;
        char pbench[PATH_MAX];
};

static volatile sig_atomic_t calibrate_stop;

static void calibrate_on_signal(int sig)
{
        calibrate_stop = sig;
}

static void calibrate_usage(FILE *f)
{
        fputs("Usage: pctl calibrate [--quick] [--cpus LIST] [--freqs MHZ,...] [--repeat K]\n"
              "                      [--t1 SECONDS] [--out DIR] [--json]\n"
              "                      [--platform auto|sim:SCENARIO] [--pbench PATH]\n",
              f);
}

static int calibrate_bad(const char *opt, const char *value, const char *why)
{
        fprintf(stderr, "pctl calibrate: %s: '%s' %s\n", opt, value, why);
        return -EINVAL;
}

static int parse_freqs(const char *list, struct calibrate_config *cfg)
{
        char buf[1024], *save = NULL;

        if (strscpy(buf, list, sizeof(buf)) < 0)
                return -EINVAL;
        cfg->n_freqs = 0;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                unsigned mhz;

                if (parse_uint(strstrip(tok), &mhz) < 0 || mhz == 0 || mhz > 100000 ||
                    cfg->n_freqs == MODEL_MAX_FREQS)
                        return -EINVAL;
                cfg->freqs_khz[cfg->n_freqs++] = mhz * 1000;
        }
        return cfg->n_freqs ? 0 : -EINVAL;
}

/* pbench next to our own binary (the build tree, or the install's bindir), else on PATH. */
static void find_pbench(char *out, size_t size)
{
        static const char *const rel[] = {"pbench", "../pbench"};
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        if (n > 0) {
                char *slash;

                exe[n] = '\0';
                slash = strrchr(exe, '/');
                if (slash) {
                        *slash = '\0';
                        for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
                                if (snprintf(out, size, "%.*s/%s", PATH_MAX - 16, exe, rel[i]) >=
                                    (int)size)
                                        continue;
                                if (access(out, X_OK) == 0)
                                        return;
                        }
                }
        }
        snprintf(out, size, "/usr/bin/pbench");
        if (access(out, X_OK) == 0)
                return;
        snprintf(out, size, "/usr/local/bin/pbench");
}

static int calibrate_parse(int argc, char **argv, struct calibrate_args *a)
{
        static const struct option opts[] = {
            {"quick", no_argument, NULL, 'q'},
            {"cpus", required_argument, NULL, 'c'},
            {"freqs", required_argument, NULL, 'f'},
            {"repeat", required_argument, NULL, 'r'},
            {"t1", required_argument, NULL, 't'},
            {"out", required_argument, NULL, 'o'},
            {"json", no_argument, NULL, 'j'},
            {"platform", required_argument, NULL, 'P'},
            {"pbench", required_argument, NULL, 'b'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        int c;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'q':
                        a->cfg.quick = true;
                        break;
                case 'c':
                        if (cpumask_parse(optarg, &a->cfg.cpus) < 0 || cpumask_empty(&a->cfg.cpus))
                                return calibrate_bad("--cpus", optarg,
                                                     "is not a CPU list like 0-3,8");
                        break;
                case 'f':
                        if (parse_freqs(optarg, &a->cfg) < 0)
                                return calibrate_bad("--freqs", optarg,
                                                     "is not a list of frequencies in MHz");
                        break;
                case 'r':
                        if (parse_uint(optarg, &a->cfg.repeat) < 0 || a->cfg.repeat == 0 ||
                            a->cfg.repeat > 100)
                                return calibrate_bad("--repeat", optarg, "is not a count 1-100");
                        break;
                case 't':
                        if (parse_double(optarg, &a->cfg.t1_s) < 0 || !(a->cfg.t1_s >= 0.1) ||
                            a->cfg.t1_s > 3600)
                                return calibrate_bad("--t1", optarg,
                                                     "is not a number of seconds in [0.1, 3600]");
                        break;
                case 'o':
                        a->out_dir = optarg;
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'P':
                        a->platform = optarg;
                        if (strcmp(optarg, "auto") != 0 && strncmp(optarg, "sim:", 4) != 0)
                                return calibrate_bad("--platform", optarg,
                                                     "is not 'auto' or 'sim:SCENARIO'");
                        if (strncmp(optarg, "sim:", 4) == 0) {
                                if (!optarg[4])
                                        return calibrate_bad("--platform", optarg,
                                                             "names no scenario file");
                                a->cfg.sim_scenario = optarg + 4;
                        }
                        break;
                case 'b':
                        if (strscpy(a->pbench, optarg, sizeof(a->pbench)) < 0)
                                return calibrate_bad("--pbench", optarg, "is too long");
                        break;
                case 'h':
                        calibrate_usage(stdout);
                        return 1;
                default:
                        fprintf(stderr, "pctl calibrate: unknown or incomplete option '%s'\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pctl calibrate: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

static void calibrate_progress(const struct calibrate_progress *pr, void *user)
{
        char freq[32];

        (void)user;
        if (pr->freq_khz)
                snprintf(freq, sizeof(freq), "%u MHz", pr->freq_khz / 1000);
        else
                snprintf(freq, sizeof(freq), "current frequency");
        fprintf(stderr, "pctl calibrate: run %u/%u: P=%.2f N=%u %s, %.0f s elapsed", pr->done + 1,
                pr->total, pr->p, pr->cores, freq, pr->elapsed_s);
        if (pr->left_s == pr->left_s)
                fprintf(stderr, ", about %.0f s left", pr->left_s);
        fputc('\n', stderr);
}

/* Makes DIR if it does not exist; one level, as mkdir(1) without -p. */
static int ensure_dir(const char *dir)
{
        struct stat st;

        if (stat(dir, &st) == 0)
                return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
        if (mkdir(dir, 0755) < 0)
                return -errno;
        return 0;
}

static int write_outputs(const struct calibrate_args *a, const struct calibrate_result *res)
{
        char path[PATH_MAX], msg[512];
        FILE *f;
        int r;

        snprintf(path, sizeof(path), "%s/validation.csv", a->out_dir);
        f = fopen(path, "we");
        if (!f) {
                r = -errno;
                fprintf(stderr, "pctl calibrate: cannot write %s: %s\n", path, strerror(-r));
                return r;
        }
        r = calibrate_write_csv(f, res);
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r < 0) {
                fprintf(stderr, "pctl calibrate: cannot write %s: %s\n", path, strerror(-r));
                return r;
        }
        snprintf(path, sizeof(path), "%s/platform.ini", a->out_dir);
        r = platform_file_write(path, &res->profile);
        if (r < 0) {
                fprintf(stderr, "pctl calibrate: cannot write %s: %s\n", path, strerror(-r));
                return r;
        }
        fprintf(stderr, "pctl calibrate: wrote %s and %s/validation.csv\n", path, a->out_dir);
        r = calibrate_plot(a->out_dir, res, msg, sizeof(msg));
        /* Plots are a convenience: without gnuplot, say so and go on. */
        fprintf(stderr, "pctl calibrate: %s\n", msg);
        return r == -EIO ? r : 0;
}

int cmd_calibrate(int argc, char **argv)
{
        struct calibrate_args a = {.out_dir = PCTL_LIBDIR_STATE};
        struct calibrate_result res = {0};
        struct sigaction sa = {.sa_handler = calibrate_on_signal};
        char err[1024] = "";
        int r;

        r = calibrate_parse(argc, argv, &a);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        if (!a.pbench[0])
                find_pbench(a.pbench, sizeof(a.pbench));
        a.cfg.pbench = a.pbench;
        r = ensure_dir(a.out_dir);
        if (r < 0 || access(a.out_dir, W_OK) < 0) {
                fprintf(stderr, "pctl calibrate: --out %s: %s\n", a.out_dir,
                        strerror(r < 0 ? -r : errno));
                return EXIT_USAGE;
        }
        a.cfg.stop = &calibrate_stop;
        a.cfg.progress = calibrate_progress;
        /* No SA_RESTART: a signal cuts the driver's sleeps short, so it stops at once. */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);

        if (a.cfg.sim_scenario)
                r = calibrate_run_sim(&a.cfg, &res, err, sizeof(err));
        else
                r = calibrate_run_real(&a.cfg, &res, err, sizeof(err));
        if (r == -EINTR || calibrate_stop) {
                int sig = calibrate_stop ? calibrate_stop : SIGINT;

                calibrate_result_free(&res);
                fprintf(stderr,
                        "pctl calibrate: stopped by %s; pbench stopped, frequencies restored, "
                        "nothing written\n",
                        sig == SIGTERM ? "SIGTERM" : "SIGINT");
                return 128 + sig;
        }
        if (r < 0) {
                fprintf(stderr, "pctl calibrate: %s\n", err[0] ? err : strerror(-r));
                return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_RUN;
        }
        r = write_outputs(&a, &res);
        if (a.json) {
                struct json_object *j = calibrate_to_json(&res);

                if (!j || jsonfmt_print(stdout, j, true) < 0)
                        r = -EIO;
                json_object_put(j);
        } else {
                calibrate_print_table(stdout, &res);
        }
        calibrate_result_free(&res);
        return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
}
