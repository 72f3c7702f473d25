/* pctl model: the paper's equations on the command line, and a what-if table. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "pctl/cpumask.h"
#include "pctl/jsonfmt.h"
#include "pctl/model.h"
#include "pctl/power_decl.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

struct model_args {
        double p;
        bool has_p;
        unsigned cores;
        bool has_cores;
        struct cpumask core_set; /* table: the core counts to list */
        double speedup;
        bool has_speedup;
        const char *power_file;
        double t1_s;
        double instructions;
        unsigned freq_mhz;
        bool json;
};

static void model_usage(FILE *f)
{
        fputs("Usage: pctl model speedup --p P --cores N [--json]\n"
              "       pctl model p --cores N --speedup S [--json]\n"
              "       pctl model table --p P --cores LIST [--power FILE] [--freq MHZ]\n"
              "                        [--t1 SECONDS] [--instructions I0] [--json]\n",
              f);
}

static int bad(const char *opt, const char *value, const char *why)
{
        fprintf(stderr, "pctl model: %s: '%s' %s\n", opt, value, why);
        return -EINVAL;
}

static int model_parse(int argc, char **argv, struct model_args *a)
{
        static const struct option opts[] = {
            {"p", required_argument, NULL, 'p'},
            {"cores", required_argument, NULL, 'n'},
            {"speedup", required_argument, NULL, 's'},
            {"power", required_argument, NULL, 'w'},
            {"freq", required_argument, NULL, 'f'},
            {"t1", required_argument, NULL, 't'},
            {"instructions", required_argument, NULL, 'i'},
            {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        const char *sub = argv[0];
        int c;

        *a = (struct model_args){.t1_s = 1.0, .instructions = 1e9};
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        if (parse_double(optarg, &a->p) < 0)
                                return bad("--p", optarg, "is not a number");
                        if (a->p < 0 || a->p > 1)
                                return bad("--p", optarg, "is outside [0, 1]");
                        a->has_p = true;
                        break;
                case 'n':
                        if (strcmp(sub, "table") == 0) {
                                if (cpumask_parse(optarg, &a->core_set) < 0 ||
                                    cpumask_empty(&a->core_set))
                                        return bad("--cores", optarg,
                                                   "is not a list of core counts like 1-8");
                                if (cpumask_test(&a->core_set, 0))
                                        return bad("--cores", optarg, "includes 0 cores");
                        } else {
                                if (parse_uint(optarg, &a->cores) < 0 || a->cores == 0)
                                        return bad("--cores", optarg, "is not a count >= 1");
                        }
                        a->has_cores = true;
                        break;
                case 's':
                        if (parse_double(optarg, &a->speedup) < 0)
                                return bad("--speedup", optarg, "is not a number");
                        a->has_speedup = true;
                        break;
                case 'w':
                        a->power_file = optarg;
                        break;
                case 'f':
                        if (parse_uint(optarg, &a->freq_mhz) < 0 || a->freq_mhz == 0)
                                return bad("--freq", optarg, "is not a frequency in MHz");
                        break;
                case 't':
                        if (parse_double(optarg, &a->t1_s) < 0 || !(a->t1_s > 0))
                                return bad("--t1", optarg, "is not a positive number of seconds");
                        break;
                case 'i':
                        if (parse_double(optarg, &a->instructions) < 0 || !(a->instructions > 0))
                                return bad("--instructions", optarg, "is not a positive count");
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'h':
                        model_usage(stdout);
                        return 1;
                default:
                        fprintf(stderr, "pctl model %s: unknown or incomplete option '%s'\n", sub,
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pctl model %s: unexpected argument '%s'\n", sub, argv[optind]);
                return -EINVAL;
        }
        return 0;
}

static int need(bool has, const char *sub, const char *opt)
{
        if (!has)
                fprintf(stderr, "pctl model %s: %s is required\n", sub, opt);
        return has ? 0 : -EINVAL;
}

static void print_scalar(const char *key, double v, bool json)
{
        if (json) {
                struct json_object *j = json_object_new_object();

                json_object_object_add(j, key, jsonfmt_double(v));
                jsonfmt_print(stdout, j, false);
                json_object_put(j);
        } else {
                printf("%.4f\n", v);
        }
}

static int model_speedup_cmd(const struct model_args *a)
{
        double sp;

        if (need(a->has_p, "speedup", "--p") < 0 || need(a->has_cores, "speedup", "--cores") < 0)
                return EXIT_USAGE;
        if (model_speedup(a->p, a->cores, &sp) < 0) {
                fprintf(stderr, "pctl model speedup: no speedup for P = %g on %u core%s\n", a->p,
                        a->cores, plural_s(a->cores));
                return EXIT_USAGE;
        }
        print_scalar("speedup", sp, a->json);
        return EXIT_OK;
}

static int model_p_cmd(const struct model_args *a)
{
        double p;
        int r;

        if (need(a->has_cores, "p", "--cores") < 0 || need(a->has_speedup, "p", "--speedup") < 0)
                return EXIT_USAGE;
        if (a->cores < 2) {
                fprintf(stderr, "pctl model p: --cores must be >= 2 to estimate P (got %u)\n",
                        a->cores);
                return EXIT_USAGE;
        }
        r = model_p_from_speedup(a->cores, a->speedup, &p);
        if (r < 0) {
                fprintf(stderr, "pctl model p: --speedup must be > 0 to estimate P (got %g)\n",
                        a->speedup);
                return EXIT_USAGE;
        }
        if (r == MODEL_SUPERLINEAR)
                fprintf(stderr,
                        "pctl model p: warning: speedup %g on %u cores is superlinear, so P = %.4f "
                        "> 1 (shared-cache effects?)\n",
                        a->speedup, a->cores, p);
        print_scalar("p", p, a->json);
        return EXIT_OK;
}

static int model_table_cmd(const struct model_args *a)
{
        struct model_power pm;
        struct model_app app = {.p = a->p, .t1_s = a->t1_s, .instructions = a->instructions};
        bool have_power = false;
        unsigned freq_khz;
        struct json_object *j = NULL, *rows = NULL;
        int r;

        if (need(a->has_p, "table", "--p") < 0 || need(a->has_cores, "table", "--cores") < 0)
                return EXIT_USAGE;
        if (a->power_file) {
                struct power_decl d;
                char err[512];

                if (power_decl_load(a->power_file, &d, err, sizeof(err)) < 0) {
                        fprintf(stderr, "pctl model table: %s\n", err);
                        return EXIT_USAGE;
                }
                /* Without --freq the table is at the frequency the model was declared for. */
                if (power_decl_to_model(&d, a->freq_mhz ? a->freq_mhz * 1000 : 1, &pm) < 0)
                        return EXIT_USAGE;
                have_power = true;
        }
        freq_khz = a->freq_mhz ? a->freq_mhz * 1000 : (have_power ? model_power_max_freq(&pm) : 1);
        app.freq_ref_khz = freq_khz;

        if (a->json) {
                j = json_object_new_object();
                json_object_object_add(j, "p", jsonfmt_double(a->p));
                json_object_object_add(j, "t1_s", jsonfmt_double(a->t1_s));
                json_object_object_add(j, "instructions", jsonfmt_double(a->instructions));
                json_object_object_add(j, "power_declared", json_object_new_boolean(have_power));
                rows = json_object_new_array();
                json_object_object_add(j, "rows", rows);
        } else {
                printf("P = %.4f, T(1) = %g s, I0 = %g instructions%s\n", a->p, a->t1_s,
                       a->instructions, have_power ? ", power declared" : "");
                printf("%5s %10s %8s", "cores", "T(N)/T(1)", "speedup");
                if (have_power)
                        printf(" %9s %12s %12s %12s", "W", "Perf/W", "EPI(J)", "EDP(J*s)");
                printf("\n");
        }
        cpumask_foreach (n, &a->core_set) {
                struct model_prediction pr;

                if (model_predict(&app, have_power ? &pm : NULL, (unsigned)n, freq_khz, &pr) < 0) {
                        fprintf(stderr, "pctl model table: no prediction for %d core%s\n", n,
                                plural_s(n));
                        json_object_put(j);
                        return EXIT_USAGE;
                }
                if (a->json) {
                        struct json_object *row = json_object_new_object();

                        json_object_object_add(row, "cores", json_object_new_uint64((unsigned)n));
                        json_object_object_add(row, "time_ratio",
                                               jsonfmt_double(pr.time_s / a->t1_s));
                        json_object_object_add(row, "time_s", jsonfmt_double(pr.time_s));
                        json_object_object_add(row, "speedup", jsonfmt_double(pr.speedup));
                        json_object_object_add(row, "power_w", jsonfmt_double(pr.power_w));
                        json_object_object_add(row, "perf_per_w", jsonfmt_double(pr.perf_per_w));
                        json_object_object_add(row, "epi_j", jsonfmt_double(pr.epi_j));
                        json_object_object_add(row, "edp", jsonfmt_double(pr.edp_js));
                        json_object_array_add(rows, row);
                } else {
                        printf("%5d %10.4f %8.4f", n, pr.time_s / a->t1_s, pr.speedup);
                        if (have_power)
                                printf(" %9.2f %12.4g %12.4g %12.4g", pr.power_w, pr.perf_per_w,
                                       pr.epi_j, pr.edp_js);
                        printf("\n");
                }
        }
        if (a->json) {
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
                if (r < 0)
                        return EXIT_FAILURE_RUN;
        }
        return EXIT_OK;
}

int cmd_model(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*run)(const struct model_args *a);
        } subs[] = {
            {"speedup", model_speedup_cmd},
            {"p", model_p_cmd},
            {"table", model_table_cmd},
        };
        struct model_args a;
        int r;

        if (argc < 2) {
                fprintf(stderr, "pctl model: which one? speedup, p or table (try 'pctl model "
                                "--help')\n");
                return EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0) {
                model_usage(stdout);
                return EXIT_OK;
        }
        for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
                if (strcmp(argv[1], subs[i].name) != 0)
                        continue;
                r = model_parse(argc - 1, argv + 1, &a);
                if (r != 0)
                        return r > 0 ? EXIT_OK : EXIT_USAGE;
                return subs[i].run(&a);
        }
        fprintf(stderr, "pctl model: unknown subcommand '%s' (speedup, p, table)\n", argv[1]);
        return EXIT_USAGE;
}
