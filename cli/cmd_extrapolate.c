/* pctl extrapolate: predicted scaling beyond the measured core counts (ESTIMA), from a file
 * of runs or from recorded traces (docs/extrapolation.md). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "pctl/extrapolate.h"
#include "pctl/jsonfmt.h"
#include "pctl/sample_io.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

/* Predictions are listed for every count up to --to: keep that printable. */
#define EXTRAPOLATE_MAX_TO 4096

struct trace_arg {
        unsigned cores;
        const char *path;
};

struct extrapolate_args {
        const char *file;
        unsigned to;
        bool json;
        struct trace_arg traces[EXTRAP_MAX_POINTS];
        unsigned n_traces;
};

static void extrapolate_usage(FILE *f)
{
        fputs("Usage: pctl extrapolate FILE --to N [--json]\n"
              "       pctl extrapolate --trace CORES:FILE... --to N [--json]\n",
              f);
}

static int extrapolate_parse(int argc, char **argv, struct extrapolate_args *a)
{
        static const struct option opts[] = {
            {"to", required_argument, NULL, 't'},
            {"trace", required_argument, NULL, 'r'},
            {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        int c;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 't':
                        if (parse_uint(optarg, &a->to) < 0 || a->to == 0 ||
                            a->to > EXTRAPOLATE_MAX_TO) {
                                fprintf(stderr,
                                        "pctl extrapolate: --to: '%s' is not a core count in "
                                        "1..%u\n",
                                        optarg, EXTRAPOLATE_MAX_TO);
                                return -EINVAL;
                        }
                        break;
                case 'r': {
                        char *colon = strchr(optarg, ':');
                        struct trace_arg *t;

                        if (a->n_traces == EXTRAP_MAX_POINTS) {
                                fprintf(stderr, "pctl extrapolate: more than %u --trace\n",
                                        EXTRAP_MAX_POINTS);
                                return -EINVAL;
                        }
                        t = &a->traces[a->n_traces];
                        if (!colon || colon[1] == '\0') {
                                fprintf(stderr,
                                        "pctl extrapolate: --trace: '%s' is not CORES:FILE\n",
                                        optarg);
                                return -EINVAL;
                        }
                        *colon = '\0';
                        if (parse_uint(optarg, &t->cores) < 0 || t->cores == 0) {
                                fprintf(stderr,
                                        "pctl extrapolate: --trace: '%s' is not a core count >= "
                                        "1\n",
                                        optarg);
                                return -EINVAL;
                        }
                        t->path = colon + 1;
                        a->n_traces++;
                        break;
                }
                case 'j':
                        a->json = true;
                        break;
                case 'h':
                        extrapolate_usage(stdout);
                        return 1;
                default:
                        fprintf(stderr, "pctl extrapolate: unknown or incomplete option '%s'\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc)
                a->file = argv[optind++];
        if (optind < argc) {
                fprintf(stderr, "pctl extrapolate: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (!a->file == !a->n_traces) {
                fprintf(stderr,
                        "pctl extrapolate: give a FILE of runs or --trace CORES:FILE "
                        "(one per core count), not %s\n",
                        a->file ? "both" : "neither");
                return -EINVAL;
        }
        if (!a->to) {
                fprintf(stderr, "pctl extrapolate: --to N is required\n");
                return -EINVAL;
        }
        return 0;
}

static int read_text(const char *path, char **out)
{
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0, cap = 0;

        if (!f)
                return -errno;
        for (;;) {
                size_t n;

                if (cap - len < 4096) {
                        char *nb;

                        if (cap > (64u << 20)) {
                                free(buf);
                                fclose(f);
                                return -EFBIG;
                        }
                        nb = realloc(buf, cap + 65536);
                        if (!nb) {
                                free(buf);
                                fclose(f);
                                return -ENOMEM;
                        }
                        buf = nb;
                        cap += 65536;
                }
                n = fread(buf + len, 1, cap - len - 1, f);
                len += n;
                if (n == 0)
                        break;
        }
        if (ferror(f)) {
                free(buf);
                fclose(f);
                return -EIO;
        }
        fclose(f);
        buf[len] = '\0';
        *out = buf;
        return 0;
}

/* A recorded trace as one run: its time is the sum of its intervals, its energy that of its
 * packages (when every interval has it), its stalled cycles those of its targets (the app),
 * else of its CPUs, when every count with cycles has them: per core, over the trace's cores. */
static int trace_point(const struct trace_arg *t, struct extrap_point *pt, double *power_w)
{
        struct sample_io_reader *r;
        struct sensor_sample s = {0};
        double time_s = 0, energy_j = 0, stalls = 0;
        bool energy = true, has_stalls = true;
        struct sample_io_error bad;
        unsigned n = 0;
        int e;

        e = sample_io_open(t->path, &r, &bad);
        if (e == -EBADMSG) {
                fprintf(stderr, "pctl extrapolate: %s:%u: %s\n", t->path, bad.line, bad.what);
                return -EINVAL;
        }
        if (e < 0) {
                fprintf(stderr, "pctl extrapolate: %s: %s\n", t->path, strerror(-e));
                return -EINVAL;
        }
        e = sensor_sample_alloc(&s, sample_io_n_cpus(r) ? sample_io_n_cpus(r) : 1,
                                sample_io_n_targets(r));
        if (e < 0) {
                sample_io_close(r);
                return e;
        }
        while ((e = sample_io_read(r, &s)) == 0) {
                time_s += s.interval_ns / 1e9;
                if (s.energy_measured)
                        for (unsigned p = 0; p < s.n_packages; p++)
                                energy_j += s.energy_j[p];
                else
                        energy = false;
                for (unsigned c = 0; c < s.n_cpus; c++) {
                        bool by_target = s.n_targets > 0;
                        const struct sensor_counts *x =
                            by_target ? sensor_target_cpu(&s, 0, c) : &s.cpu[c];

                        if (!x->measured)
                                continue;
                        if (x->measured & SENSOR_STALLS)
                                stalls += (double)x->stalls;
                        else
                                has_stalls = false;
                }
                n++;
        }
        sensor_sample_free(&s);
        sample_io_close(r);
        if (e != -ENODATA) {
                fprintf(stderr, "pctl extrapolate: %s: %s\n", t->path, strerror(-e));
                return -EINVAL;
        }
        if (n == 0 || !(time_s > 0)) {
                fprintf(stderr, "pctl extrapolate: %s: no interval in the trace\n", t->path);
                return -EINVAL;
        }
        *pt = (struct extrap_point){t->cores, time_s,
                                    has_stalls && stalls > 0 ? stalls / t->cores : NAN};
        *power_w = energy ? energy_j / time_s : NAN;
        return 0;
}

static int cmp_trace(const void *a, const void *b)
{
        const struct trace_arg *x = a, *y = b;

        return (x->cores > y->cores) - (x->cores < y->cores);
}

/* W(n) = static + per-core·n by least squares on the traced runs; false with fewer than two
 * runs with energy. */
/* EDP at n cores from the model's time and the power line w0 + w1 n: a score for the knee. */
struct edp_arg {
        const struct extrap_model *mod;
        double w0, w1;
};

static double edp_score(const void *ctx, unsigned n)
{
        const struct edp_arg *e = ctx;
        double t = extrap_time_score(e->mod, n), w = e->w0 + e->w1 * n;

        return w > 0 ? w * t * t : NAN;
}

static bool power_line(const struct extrap_point *pts, const double *power_w, unsigned m,
                       double *w0, double *w1)
{
        double sn = 0, sw = 0, snn = 0, snw = 0, k = 0;

        for (unsigned i = 0; i < m; i++) {
                if (!isfinite(power_w[i]))
                        return false;
                sn += pts[i].cores;
                sw += power_w[i];
                snn += pts[i].cores * pts[i].cores;
                snw += pts[i].cores * power_w[i];
                k++;
        }
        if (k < 2 || !(k * snn - sn * sn > 0))
                return false;
        *w1 = (k * snw - sn * sw) / (k * snn - sn * sn);
        *w0 = (sw - *w1 * sn) / k;
        return true;
}

int cmd_extrapolate(int argc, char **argv)
{
        static struct extrapolate_args a;
        struct extrap_point pts[EXTRAP_MAX_POINTS];
        unsigned lines[EXTRAP_MAX_POINTS], m = 0, best_time, best_edp = 0, knee_time, knee_edp = 0;
        double power_w[EXTRAP_MAX_POINTS], w0 = NAN, w1 = NAN, smax;
        struct extrap_model mod;
        bool have_power = false;
        int r;

        memset(&a, 0, sizeof(a));
        r = extrapolate_parse(argc, argv, &a);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;

        if (a.file) {
                char *text = NULL, err[512];

                r = read_text(a.file, &text);
                if (r < 0) {
                        fprintf(stderr, "pctl extrapolate: %s: %s\n", a.file, strerror(-r));
                        return EXIT_USAGE;
                }
                r = extrap_runs_parse(text, a.file, pts, lines, EXTRAP_MAX_POINTS, &m, err,
                                      sizeof(err));
                free(text);
                if (r < 0) {
                        fprintf(stderr, "pctl extrapolate: %s\n", err);
                        return EXIT_USAGE;
                }
                if (a.to < pts[m - 1].cores) {
                        fprintf(stderr,
                                "pctl extrapolate: %s:%u: --to %u is below the largest measured "
                                "count, %u cores\n",
                                a.file, lines[m - 1], a.to, (unsigned)pts[m - 1].cores);
                        return EXIT_USAGE;
                }
        } else {
                qsort(a.traces, a.n_traces, sizeof(a.traces[0]), cmp_trace);
                for (unsigned i = 0; i < a.n_traces; i++) {
                        if (i > 0 && a.traces[i].cores == a.traces[i - 1].cores) {
                                fprintf(stderr,
                                        "pctl extrapolate: --trace %u:%s: %u core%s again "
                                        "(duplicate of --trace %u:%s)\n",
                                        a.traces[i].cores, a.traces[i].path, a.traces[i].cores,
                                        plural_s(a.traces[i].cores), a.traces[i - 1].cores,
                                        a.traces[i - 1].path);
                                return EXIT_USAGE;
                        }
                        if (trace_point(&a.traces[i], &pts[i], &power_w[i]) < 0)
                                return EXIT_USAGE;
                }
                m = a.n_traces;
                if (m < 3) {
                        fprintf(stderr,
                                "pctl extrapolate: %u trace%s; at least 3 core counts are needed "
                                "to extrapolate\n",
                                m, plural_s(m));
                        return EXIT_USAGE;
                }
                if (a.to < pts[m - 1].cores) {
                        fprintf(stderr,
                                "pctl extrapolate: --trace %u:%s: --to %u is below the largest "
                                "measured count, %u cores\n",
                                a.traces[m - 1].cores, a.traces[m - 1].path, a.to,
                                a.traces[m - 1].cores);
                        return EXIT_USAGE;
                }
                have_power = power_line(pts, power_w, m, &w0, &w1);
        }

        r = extrap_build(pts, m, a.to, &mod);
        if (r < 0 || !mod.known) {
                fprintf(stderr, "pctl extrapolate: %s: no kernel fits these runs (%s)\n",
                        a.file ? a.file : "traces", strerror(-r));
                return EXIT_FAILURE_RUN;
        }
        best_time = extrap_best_cores(&mod, a.to, &smax);
        knee_time = extrap_knee(extrap_time_score, &mod, 1, a.to, EXTRAP_KNEE_TOL);
        if (have_power) {
                struct edp_arg e = {.mod = &mod, .w0 = w0, .w1 = w1};

                knee_edp = extrap_knee(edp_score, &e, 1, a.to, EXTRAP_KNEE_TOL);
        }
        if (have_power) {
                double best = INFINITY;

                for (unsigned n = 1; n <= a.to; n++) {
                        struct extrap_prediction pr;
                        double w = w0 + w1 * n;

                        extrap_predict(&mod, n, &pr);
                        if (pr.known && w > 0 && w * pr.time_s * pr.time_s < best) {
                                best = w * pr.time_s * pr.time_s;
                                best_edp = n;
                        }
                }
        }

        if (a.json) {
                struct json_object *j = json_object_new_object(), *rows = json_object_new_array();

                json_object_object_add(j, "kernel",
                                       json_object_new_string(extrap_kernel_name(mod.main.kernel)));
                json_object_object_add(j, "checkpoint_error", jsonfmt_double(mod.checkpoint_error));
                json_object_object_add(j, "predictions", rows);
                for (unsigned n = 1; n <= a.to; n++) {
                        struct json_object *row = json_object_new_object();
                        struct extrap_prediction pr;

                        extrap_predict(&mod, n, &pr);
                        json_object_object_add(row, "cores", json_object_new_uint64(n));
                        json_object_object_add(row, "time_s", jsonfmt_double(pr.time_s));
                        json_object_object_add(row, "speedup", jsonfmt_double(pr.speedup));
                        json_object_object_add(row, "low", jsonfmt_double(pr.low_s));
                        json_object_object_add(row, "high", jsonfmt_double(pr.high_s));
                        json_object_array_add(rows, row);
                }
                json_object_object_add(j, "best_cores_time",
                                       best_time ? json_object_new_uint64(best_time) : NULL);
                json_object_object_add(j, "best_cores_edp",
                                       best_edp ? json_object_new_uint64(best_edp) : NULL);
                json_object_object_add(j, "knee_cores_time",
                                       knee_time ? json_object_new_uint64(knee_time) : NULL);
                json_object_object_add(j, "knee_cores_edp",
                                       knee_edp ? json_object_new_uint64(knee_edp) : NULL);
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
                return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
        }

        printf("kernel: %s, fitted to %s", extrap_kernel_name(mod.main.kernel),
               mod.basis == EXTRAP_BASIS_STALLS ? "stalled cycles" : "core-time");
        if (mod.basis == EXTRAP_BASIS_STALLS)
                printf(" (time through the factor, kernel %s)",
                       extrap_kernel_name(mod.factor.kernel));
        if (isfinite(mod.checkpoint_error))
                printf("; checkpoint error %.1f %%\n", 100 * mod.checkpoint_error);
        else
                printf("; checkpoint error unknown (3 runs: none held out)\n");
        printf("%5s %12s %8s %12s %12s\n", "cores", "time_s", "speedup", "low_s", "high_s");
        for (unsigned n = 1, i = 0; n <= a.to; n++) {
                struct extrap_prediction pr;
                bool measured = i < m && pts[i].cores == n;

                if (measured)
                        i++;
                extrap_predict(&mod, n, &pr);
                printf("%5u %12.6g %8.3f %12.6g %12.6g%s\n", n, pr.time_s, pr.speedup, pr.low_s,
                       pr.high_s, measured ? "  measured" : "");
        }
        printf("best cores for time: %u (speedup %.2f)\n", best_time, smax);
        if (best_edp)
                printf("best cores for EDP: %u (power %.1f W + %.2f W per core, from the "
                       "traces)\n",
                       best_edp, w0, w1);
        else
                printf("best cores for EDP: unknown (no power measured)\n");
        /* Past the knee more cores buy less than 5 %: what to run at. */
        if (knee_time)
                printf("knee for time: %u core%s (the fewest within %.0f %% of the best predicted "
                       "time)\n",
                       knee_time, plural_s(knee_time), 100 * EXTRAP_KNEE_TOL);
        if (knee_edp)
                printf("knee for EDP: %u core%s (the fewest within %.0f %% of the best predicted "
                       "EDP)\n",
                       knee_edp, plural_s(knee_edp), 100 * EXTRAP_KNEE_TOL);
        else
                printf("knee for EDP: unknown (no power measured)\n");
        return EXIT_OK;
}
