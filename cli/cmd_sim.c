/* pctl sim: the model machine from the command line. `run` plays a scenario to the end under
 * one static setting; `oracle` finds each app's best static setting by trying them all, or with
 * --together the best static partition of the machine for all the apps at once. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "pctl/calibrate.h"
#include "pctl/jsonfmt.h"
#include "pctl/sample_io.h"
#include "pctl/config.h"
#include "pctl/policy.h"
#include "pctl/sim.h"
#include "pctl/simrun.h"
#include "pctl/stack.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

/* Steps of the virtual clock: runs report times to the step (the last app's end), the oracle
 * is exact at any step (one app, fixed setting); traces get a row every SIM_TRACE_STEPS. */
#define SIM_RUN_STEP_NS (10 * NSEC_PER_MSEC)
#define SIM_ORACLE_STEP_NS (100 * NSEC_PER_MSEC)
#define SIM_TRACE_STEPS 10

struct sim_args {
        const char *sub;
        const char *scenario;
        bool json;
        const char *trace;
        bool has_static;
        unsigned cores;
        unsigned freq_mhz; /* 0 = max */
        bool has_objective;
        enum sim_objective objective;
        bool all;
        bool together;
        bool has_method;
        enum sim_together_method method;
        const char *policy;       /* run under the manager with this policy */
        const char *policies_dir; /* where to find it, when it is not a bare objective */
        bool log;                 /* print each decision and change with its reason */
        const char *history;      /* pctl history file: read at the start, written as apps end */
        bool model_only;          /* --search model: the model-only baseline */
        bool has_search;
        bool calibrated; /* --calibrated: the baseline's calibrated power model for pctl too */
};

static void sim_usage(FILE *f)
{
        fputs("Usage: pctl sim run SCENARIO --static cores=N,freq=MHZ|max [--trace FILE] "
              "[--json]\n"
              "       pctl sim run SCENARIO --policy NAME [--policies-dir DIR] [--history FILE] "
              "[--search measured|model] [--calibrated] [--log] [--json]\n"
              "       pctl sim oracle SCENARIO --objective edp|ppw|energy|perf [--all] [--json]\n"
              "       pctl sim oracle SCENARIO --objective edp|ppw|energy|perf --together "
              "[--method auto|exhaustive|dp] [--json]\n",
              f);
}

static int bad(const struct sim_args *a, const char *opt, const char *value, const char *why)
{
        fprintf(stderr, "pctl sim %s: %s: '%s' %s\n", a->sub, opt, value, why);
        return -EINVAL;
}

/* "cores=N,freq=MHZ|max", in either order, both required. */
static int parse_static(struct sim_args *a, const char *value)
{
        char buf[128], *save = NULL;
        bool have_cores = false, have_freq = false;

        if (strscpy(buf, value, sizeof(buf)) < 0)
                return bad(a, "--static", value, "is too long");
        for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                if (strncmp(item, "cores=", 6) == 0) {
                        if (parse_uint(item + 6, &a->cores) < 0 || a->cores == 0)
                                return bad(a, "--static", value, "has cores= that is not >= 1");
                        have_cores = true;
                } else if (strcmp(item, "freq=max") == 0) {
                        a->freq_mhz = 0;
                        have_freq = true;
                } else if (strncmp(item, "freq=", 5) == 0) {
                        if (parse_uint(item + 5, &a->freq_mhz) < 0 || a->freq_mhz == 0)
                                return bad(a, "--static", value,
                                           "has freq= that is neither MHz nor max");
                        have_freq = true;
                } else {
                        return bad(a, "--static", value, "is not cores=N,freq=MHZ|max");
                }
        }
        if (!have_cores || !have_freq)
                return bad(a, "--static", value, "needs both cores=N and freq=MHZ|max");
        a->has_static = true;
        return 0;
}

static int sim_parse(int argc, char **argv, struct sim_args *a)
{
        /* Options per subcommand: an option of the other one is an error, not ignored. */
        static const struct option opts[] = {
            {"static", required_argument, NULL, 's'},
            {"trace", required_argument, NULL, 't'},
            {"objective", required_argument, NULL, 'o'},
            {"all", no_argument, NULL, 'a'},
            {"together", no_argument, NULL, 'T'},
            {"method", required_argument, NULL, 'm'},
            {"policy", required_argument, NULL, 'p'},
            {"policies-dir", required_argument, NULL, 'd'},
            {"log", no_argument, NULL, 'l'},
            {"history", required_argument, NULL, 'H'},
            {"search", required_argument, NULL, 'S'},
            {"calibrated", no_argument, NULL, 'c'},
            {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        bool run = strcmp(argv[0], "run") == 0;
        int c;

        *a = (struct sim_args){.sub = argv[0]};
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                if ((c == 's' || c == 't' || c == 'p' || c == 'd' || c == 'l' || c == 'H' ||
                     c == 'S' || c == 'c') &&
                    !run) {
                        fprintf(stderr, "pctl sim oracle: %s is an option of 'pctl sim run'\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
                if ((c == 'o' || c == 'a' || c == 'T' || c == 'm') && run) {
                        fprintf(stderr, "pctl sim run: %s is an option of 'pctl sim oracle'\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
                switch (c) {
                case 's':
                        if (parse_static(a, optarg) < 0)
                                return -EINVAL;
                        break;
                case 't':
                        a->trace = optarg;
                        break;
                case 'p':
                        if (!config_name_valid(optarg))
                                return bad(a, "--policy", optarg, "is not a policy name");
                        a->policy = optarg;
                        break;
                case 'd':
                        a->policies_dir = optarg;
                        break;
                case 'o':
                        if (sim_objective_parse(optarg, &a->objective) < 0)
                                return bad(a, "--objective", optarg,
                                           "is not one of edp, ppw, energy, perf");
                        a->has_objective = true;
                        break;
                case 'a':
                        a->all = true;
                        break;
                case 'T':
                        a->together = true;
                        break;
                case 'm':
                        if (sim_together_method_parse(optarg, &a->method) < 0)
                                return bad(a, "--method", optarg,
                                           "is not one of auto, exhaustive, dp");
                        a->has_method = true;
                        break;
                case 'l':
                        a->log = true;
                        break;
                case 'H':
                        if (optarg[0] != '/')
                                return bad(a, "--history", optarg, "is not an absolute path");
                        a->history = optarg;
                        break;
                case 'S':
                        if (strcmp(optarg, "measured") != 0 && strcmp(optarg, "model") != 0)
                                return bad(a, "--search", optarg, "is not measured or model");
                        a->model_only = strcmp(optarg, "model") == 0;
                        a->has_search = true;
                        break;
                case 'c':
                        a->calibrated = true;
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'h':
                        sim_usage(stdout);
                        return 1;
                default:
                        fprintf(stderr, "pctl sim %s: unknown or incomplete option '%s'\n", a->sub,
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "pctl sim %s: a SCENARIO file is required\n", a->sub);
                return -EINVAL;
        }
        a->scenario = argv[optind++];
        if (optind < argc) {
                fprintf(stderr, "pctl sim %s: unexpected argument '%s'\n", a->sub, argv[optind]);
                return -EINVAL;
        }
        if (run && a->has_static == !!a->policy) {
                fprintf(stderr, "pctl sim run: give either --static cores=N,freq=MHZ|max or "
                                "--policy NAME\n");
                return -EINVAL;
        }
        if (run && a->policy && a->trace) {
                fprintf(stderr, "pctl sim run: --trace goes with --static only\n");
                return -EINVAL;
        }
        if (run && a->policies_dir && !a->policy) {
                fprintf(stderr, "pctl sim run: --policies-dir goes with --policy\n");
                return -EINVAL;
        }
        if (run && a->has_search && !a->policy) {
                fprintf(stderr, "pctl sim run: --search goes with --policy\n");
                return -EINVAL;
        }
        /* A static run has no manager, so no power model to give it. */
        if (run && a->calibrated && !a->policy) {
                fprintf(stderr, "pctl sim run: --calibrated goes with --policy (a --static run "
                                "uses no power model)\n");
                return -EINVAL;
        }
        if (run && a->history && !a->policy) {
                fprintf(stderr, "pctl sim run: --history goes with --policy\n");
                return -EINVAL;
        }
        if (run && a->log && !a->policy) {
                fprintf(stderr, "pctl sim run: --log goes with --policy\n");
                return -EINVAL;
        }
        if (!run && !a->has_objective) {
                fprintf(stderr, "pctl sim oracle: --objective edp|ppw|energy|perf is required\n");
                return -EINVAL;
        }
        if (a->together && a->all) {
                fprintf(stderr,
                        "pctl sim oracle: --all lists one app's settings alone; it does not "
                        "go with --together\n");
                return -EINVAL;
        }
        if (a->has_method && !a->together) {
                fprintf(stderr, "pctl sim oracle: --method goes with --together\n");
                return -EINVAL;
        }
        return 0;
}

static int load(const struct sim_args *a, struct sim_machine **m, struct sim_machine_info *info)
{
        struct sim_error err;
        int r = sim_load(a->scenario, m, &err);

        if (r < 0) {
                if (err.all[0])
                        fprintf(stderr, "pctl sim %s: bad scenario:\n%s", a->sub, err.all);
                else
                        fprintf(stderr, "pctl sim %s: %s: %s\n", a->sub, a->scenario, err.what);
                return r;
        }
        sim_machine_info(*m, info);
        if (info->n_apps == 0) {
                fprintf(stderr, "pctl sim %s: %s: no [app NAME] section\n", a->sub, a->scenario);
                sim_free(*m);
                return -EINVAL;
        }
        return 0;
}

struct row {
        const char *name;
        unsigned cores, freq_mhz;
        double time_s, energy_j, p_true;
};

static void table_head(void)
{
        printf("%-16s %5s %8s %10s %11s %8s %12s %6s\n", "app", "cores", "freq_mhz", "time_s",
               "energy_j", "power_w", "edp_js", "p_true");
}

static void table_row(const struct row *r)
{
        printf("%-16s %5u %8u %10.3f %11.3f %8.2f %12.5g %6.3f\n", r->name, r->cores, r->freq_mhz,
               r->time_s, r->energy_j, r->energy_j / r->time_s, r->energy_j * r->time_s, r->p_true);
}

static struct json_object *row_json(const struct row *r)
{
        struct json_object *j = json_object_new_object();

        json_object_object_add(j, "name", jsonfmt_string(r->name));
        json_object_object_add(j, "cores", json_object_new_uint64(r->cores));
        json_object_object_add(j, "freq_mhz", json_object_new_uint64(r->freq_mhz));
        json_object_object_add(j, "time_s", jsonfmt_double(r->time_s));
        json_object_object_add(j, "energy_j", jsonfmt_double(r->energy_j));
        json_object_object_add(j, "power_w", jsonfmt_double(r->energy_j / r->time_s));
        json_object_object_add(j, "edp", jsonfmt_double(r->energy_j * r->time_s)); /* eq. 13 */
        json_object_object_add(j, "p_true", jsonfmt_double(r->p_true));
        return j;
}

/* edp is the machine's E*T; edp_sum the sum over apps of each app's own E*T (issue 14's
 * objective of several apps). */
static void total_json(struct json_object *j, double time_s, double energy_j, double edp_sum)
{
        struct json_object *t = json_object_new_object();

        json_object_object_add(t, "time_s", jsonfmt_double(time_s));
        json_object_object_add(t, "energy_j", jsonfmt_double(energy_j));
        json_object_object_add(t, "power_w", jsonfmt_double(energy_j / time_s));
        json_object_object_add(t, "edp", jsonfmt_double(energy_j * time_s));
        json_object_object_add(t, "edp_sum", jsonfmt_double(edp_sum));
        json_object_object_add(j, "total", t);
}

static void total_edp_sum_line(double edp_sum)
{
        printf("%-16s %5s %8s %10s %11s %8s %12.5g\n", "sum of apps", "", "", "", "", "", edp_sum);
}

struct trace {
        FILE *f;
        struct sensor s;
        struct sensor_sample smp;
        bool open;
};

static int trace_open(struct trace *t, const char *path, struct sim_machine *m, unsigned n_apps)
{
        struct sensor_config cfg = {.machine = m};
        struct sensor_target *targets;
        int r;

        t->s = (struct sensor){.ops = &sim_sensor_ops};
        r = sim_sensor_ops.open(&t->s, &cfg);
        if (r < 0)
                return r;
        t->open = true;
        targets = calloc(n_apps, sizeof(*targets));
        if (!targets)
                return -ENOMEM;
        for (unsigned i = 0; i < n_apps; i++)
                targets[i] = (struct sensor_target){.kind = SENSOR_TARGET_PID,
                                                    .pid = SIM_PID_BASE + (pid_t)i};
        r = sim_sensor_ops.set_targets(&t->s, targets, n_apps);
        free(targets);
        if (r < 0)
                return r;
        r = sensor_sample_alloc(&t->smp, t->s.n_cpus, n_apps);
        if (r < 0)
                return r;
        t->smp.n_packages = t->s.n_packages;
        t->f = fopen(path, "we");
        if (!t->f)
                return -errno;
        return sample_io_write_header(t->f, "sim", &t->smp, NULL);
}

static int trace_write(struct trace *t)
{
        int r = sim_sensor_ops.read(&t->s, &t->smp);

        if (r < 0 || t->smp.interval_ns == 0)
                return r;
        return sample_io_write(t->f, &t->smp, SAMPLE_IO_CSV);
}

static int trace_close(struct trace *t)
{
        int r = 0;

        if (t->f && fclose(t->f) != 0)
                r = -errno;
        sensor_sample_free(&t->smp);
        if (t->open)
                sim_sensor_ops.close(&t->s);
        return r;
}

/* Places every app through the actuator, as pctld would: N consecutive CPUs each, the next
 * app starting where the previous one ended (wrapping), every package at one frequency. */
static int place_static(const struct sim_args *a, struct sim_machine *m,
                        const struct sim_machine_info *info, struct actuator *act)
{
        struct actuator_config cfg = {.machine = m, .dvfs = true};
        unsigned freq_mhz = a->freq_mhz ? a->freq_mhz : info->freqs_mhz[info->n_freqs - 1];
        int r;

        r = sim_actuator_ops.open(act, &cfg);
        if (r < 0)
                return r;
        for (unsigned d = 0; d < act->n_domains; d++) {
                r = sim_actuator_ops.set_freq(act, d, freq_mhz * 1000);
                if (r < 0)
                        return r;
        }
        for (unsigned i = 0; i < info->n_apps; i++) {
                struct actuator_app *app;
                struct cpumask set;

                r = sim_actuator_ops.adopt(act, SIM_PID_BASE + (pid_t)i, NULL, &app);
                if (r < 0)
                        return r;
                cpumask_zero(&set);
                for (unsigned c = 0; c < a->cores; c++)
                        cpumask_set(&set, (i * a->cores + c) % info->n_cpus);
                r = sim_actuator_ops.set_cpus(act, app, &set);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_static(const struct sim_args *a, const struct sim_machine_info *info)
{
        bool ok = a->freq_mhz == 0;

        if (a->cores > info->n_cpus) {
                fprintf(stderr, "pctl sim run: cores=%u but the machine has %u CPU%s\n", a->cores,
                        info->n_cpus, plural_s(info->n_cpus));
                return -EINVAL;
        }
        for (unsigned i = 0; i < info->n_freqs; i++)
                ok |= info->freqs_mhz[i] == a->freq_mhz;
        if (!ok) {
                fprintf(stderr,
                        "pctl sim run: freq=%u is not one of the machine's P-states:", a->freq_mhz);
                for (unsigned i = 0; i < info->n_freqs; i++)
                        fprintf(stderr, " %u", info->freqs_mhz[i]);
                fprintf(stderr, " MHz\n");
                return -EINVAL;
        }
        return 0;
}

static int sim_run_policy_cmd(const struct sim_args *a);

static int sim_run_cmd(const struct sim_args *a)
{
        struct sim_machine *m;
        struct sim_machine_info info;
        struct actuator act = {.ops = &sim_actuator_ops};
        struct trace tr = {0};
        double end_s = 0, edp_sum = 0;
        int r, ret = EXIT_FAILURE_RUN;

        if (a->policy)
                return sim_run_policy_cmd(a);
        if (load(a, &m, &info) < 0)
                return EXIT_USAGE;
        if (check_static(a, &info) < 0) {
                sim_free(m);
                return EXIT_USAGE;
        }
        r = place_static(a, m, &info, &act);
        if (r < 0) {
                fprintf(stderr, "pctl sim run: cannot place the apps: %s\n", strerror(-r));
                goto out;
        }
        if (a->trace) {
                r = trace_open(&tr, a->trace, m, info.n_apps);
                if (r < 0) {
                        fprintf(stderr, "pctl sim run: --trace %s: %s\n", a->trace, strerror(-r));
                        goto out;
                }
        }
        for (uint64_t n = 1; !sim_done(m); n++) {
                r = sim_step(m, SIM_RUN_STEP_NS);
                if (r == 0 && a->trace && n % SIM_TRACE_STEPS == 0)
                        r = trace_write(&tr);
                if (r < 0) {
                        fprintf(stderr, "pctl sim run: %s\n", strerror(-r));
                        goto out;
                }
        }
        if (a->trace && (r = trace_write(&tr)) < 0) {
                fprintf(stderr, "pctl sim run: --trace %s: %s\n", a->trace, strerror(-r));
                goto out;
        }

        struct json_object *j = NULL, *apps = NULL;
        if (a->json) {
                j = json_object_new_object();
                apps = json_object_new_array();
        } else {
                printf("scenario %s: %u CPU%s%s%s, static %u core%s at %u MHz\n", a->scenario,
                       info.n_cpus, plural_s(info.n_cpus), info.preset[0] ? ", preset " : "",
                       info.preset, a->cores, plural_s(a->cores),
                       a->freq_mhz ? a->freq_mhz : info.freqs_mhz[info.n_freqs - 1]);
                table_head();
        }
        for (unsigned i = 0; i < info.n_apps; i++) {
                struct sim_app_truth t;
                sim_truth_app(m, i, &t);
                /* The app's end is its start plus its run time: exact, not to the step. */
                end_s = fmax(end_s, t.start_s + t.time_s);
                edp_sum += t.energy_j * t.time_s; /* eq. 13, per app */
                struct row row = {t.name, t.cores, t.freq_mhz, t.time_s, t.energy_j, t.p_true};
                if (a->json)
                        json_object_array_add(apps, row_json(&row));
                else
                        table_row(&row);
        }
        if (a->json) {
                json_object_object_add(j, "apps", apps);
                total_json(j, end_s, sim_truth_energy_j(m), edp_sum);
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
                if (r < 0)
                        goto out;
        } else {
                printf("%-16s %5s %8s %10.3f %11.3f %8.2f %12.5g\n", "total", "", "", end_s,
                       sim_truth_energy_j(m), sim_truth_energy_j(m) / end_s,
                       sim_truth_energy_j(m) * end_s);
                total_edp_sum_line(edp_sum);
        }
        ret = EXIT_OK;
out:
        if (a->trace && trace_close(&tr) < 0 && ret == EXIT_OK) {
                fprintf(stderr, "pctl sim run: --trace %s: write failed\n", a->trace);
                ret = EXIT_FAILURE_RUN;
        }
        sim_actuator_ops.close(&act);
        sim_free(m);
        return ret;
}

/* A speedup stack as `pctl stack --json` shows one (cores, threads, speedup, components),
 * or null when unknown. */
static struct json_object *stack_json(const struct stack *st)
{
        struct json_object *o, *c;

        if (!st->known)
                return NULL;
        o = json_object_new_object();
        c = json_object_new_object();
        json_object_object_add(o, "cores", jsonfmt_double(st->cores));
        json_object_object_add(o, "threads", json_object_new_uint64(st->threads));
        json_object_object_add(o, "speedup", jsonfmt_double(st->speedup));
        for (unsigned k = 0; k < STACK_COMPONENTS; k++)
                json_object_object_add(c, stack_component_name(k),
                                       jsonfmt_double(stack_has(st, k) ? st->component[k] : NAN));
        json_object_object_add(o, "components", c);
        return o;
}

/* The largest component of a stack, as "sync 0.7": the text report's one-line stack. */
static const char *stack_top_text(const struct stack *st, char *buf, size_t size)
{
        unsigned best = 0;

        if (!st->known)
                return "unknown";
        for (unsigned k = 1; k < STACK_COMPONENTS; k++)
                if (stack_has(st, k) && st->component[k] > st->component[best])
                        best = k;
        snprintf(buf, size, "%s %.2f", stack_component_name(best), st->component[best]);
        return buf;
}

/* The manager drives the machine: each app's final setting, its estimated P next to the true
 * one, and what it cost. */
static int sim_run_policy_cmd(const struct sim_args *a)
{
        struct simrun_options opt = {.scenario = a->scenario,
                                     .policy = a->policy,
                                     .delta_i_rate = NAN,
                                     .log = a->log,
                                     .history_path = a->history,
                                     .model_only = a->model_only};
        struct policy_set set = {0};
        struct config_problems problems = {0};
        struct simrun_result res;
        char err[512];
        struct json_object *j = NULL, *apps = NULL;
        double edp_sum = 0;
        const char *power_model;
        int r;

        if (a->policies_dir) {
                r = policy_set_load_dir(a->policies_dir, &set, &problems);
                if (r < 0) {
                        fprintf(stderr, "pctl sim run: --policies-dir %s:\n", a->policies_dir);
                        config_problems_print(&problems, stderr);
                        if (!problems.n)
                                fprintf(stderr, "  %s\n", strerror(-r));
                        config_problems_clear(&problems);
                        return EXIT_USAGE;
                }
                opt.policies = &set;
        }
        /* The model-only baseline always runs with a calibrated model; --calibrated gives pctl
         * the same one. Calibrated here for both, so that the report names the model the run
         * had. A bad scenario or policy name is left to the checks below, which say more. */
        if ((a->calibrated || a->model_only) && policy_lookup(opt.policies, a->policy)) {
                struct sim_machine *m;
                struct sim_machine_info info;

                if (load(a, &m, &info) < 0) {
                        policy_set_free(&set);
                        return EXIT_USAGE;
                }
                sim_free(m);
                r = calibrate_sim_power(a->scenario, &opt.power, err, sizeof(err));
                if (r < 0) {
                        fprintf(stderr, "pctl sim run: calibrating the scenario's machine: %s\n",
                                err);
                        policy_set_free(&set);
                        return EXIT_FAILURE_RUN;
                }
                opt.have_power = r > 0;
        }
        /* Without a calibrated model pctl fits one online from the machine's package energy,
         * as pctld does on a machine with RAPL and no platform profile. */
        power_model = opt.have_power ? "calibrated" : "fitted";
        r = simrun_policy(&opt, &res, err, sizeof(err));
        policy_set_free(&set);
        if (r < 0) {
                fprintf(stderr, "pctl sim run: %s\n", err);
                /* A history file that is not one (corrupt, a newer schema) is bad input. */
                return r == -ENOENT || r == -EINVAL || r == -EBADMSG || r == -EPROTONOSUPPORT
                           ? EXIT_USAGE
                           : EXIT_FAILURE_RUN;
        }
        if (a->json) {
                j = json_object_new_object();
                json_object_object_add(j, "policy", jsonfmt_string(a->policy));
                json_object_object_add(j, "search",
                                       jsonfmt_string(a->model_only ? "model" : "measured"));
                json_object_object_add(j, "power_model", jsonfmt_string(power_model));
                apps = json_object_new_array();
        } else {
                printf("scenario %s under policy %s%s, power model %s: %lu decision%s, %lu "
                       "change%s\n",
                       a->scenario, a->policy, a->model_only ? " (search: model only)" : "",
                       power_model, res.decisions, plural_s(res.decisions), res.changes,
                       plural_s(res.changes));
                printf("%-16s %5s %8s %10s %11s %8s %12s %6s %6s\n", "app", "cores", "freq_mhz",
                       "time_s", "energy_j", "power_w", "edp_js", "p_true", "p_est");
        }
        for (unsigned i = 0; i < res.n_apps; i++) {
                const struct simrun_app *ap = &res.apps[i];
                struct row row = {ap->name,   ap->cores,    ap->freq_mhz,
                                  ap->time_s, ap->energy_j, ap->p_true};

                edp_sum += ap->energy_j * ap->time_s;

                if (a->json) {
                        struct json_object *o = row_json(&row);

                        json_object_object_add(o, "stack", stack_json(&ap->stack));
                        json_object_object_add(o, "stack_true", stack_json(&ap->stack_true));
                        json_object_object_add(o, "p_est", jsonfmt_double(ap->p_est));
                        json_object_object_add(
                            o, "speedup_source",
                            jsonfmt_string(ap->speedup_source == ESTIMATE_SPEEDUP_NONE
                                               ? NULL
                                               : estimate_speedup_source_name(ap->speedup_source)));
                        json_object_object_add(
                            o, "ipc1_source",
                            jsonfmt_string(ap->ipc1_source == ESTIMATE_IPC1_NONE
                                               ? NULL
                                               : estimate_ipc1_source_name(ap->ipc1_source)));
                        json_object_object_add(o, "speedup_true", jsonfmt_double(ap->speedup_true));
                        json_object_object_add(o, "speedup_est", jsonfmt_double(ap->speedup_est));
                        json_object_object_add(o, "from_history",
                                               json_object_new_boolean(ap->from_history));
                        /* The run report's whole-run figures beside the truth. */
                        json_object_object_add(o, "p_run", jsonfmt_double(ap->p_run));
                        json_object_object_add(o, "p_run_uncorrected",
                                               jsonfmt_double(ap->p_run_uncorrected));
                        json_object_object_add(o, "p_run_true", jsonfmt_double(ap->p_run_true));
                        json_object_object_add(o, "work_inflation",
                                               jsonfmt_double(ap->work_inflation));
                        json_object_object_add(o, "work_inflation_error",
                                               jsonfmt_double(ap->work_inflation_error));
                        json_object_object_add(o, "work_inflation_true",
                                               jsonfmt_double(ap->extra_work_true));
                        json_object_array_add(apps, o);
                } else {
                        printf("%-16s %5u %8u %10.3f %11.3f %8.2f %12.5g %6.3f %6.3f\n", row.name,
                               row.cores, row.freq_mhz, row.time_s, row.energy_j,
                               row.energy_j / row.time_s, row.energy_j * row.time_s, row.p_true,
                               ap->p_est);
                        if (ap->stack.known) {
                                char b1[48], b2[48];

                                printf("  stack at %.0f core%s: speedup %.2f, largest %s "
                                       "(true: speedup %.2f, largest %s)\n",
                                       ap->stack.cores, plural_s(textfmt_rounded(ap->stack.cores)),
                                       ap->stack.speedup,
                                       stack_top_text(&ap->stack, b1, sizeof(b1)),
                                       ap->stack_true.speedup,
                                       stack_top_text(&ap->stack_true, b2, sizeof(b2)));
                        }
                        if (isfinite(ap->work_inflation) || ap->extra_work_true > 0)
                                printf("  whole run: p_run %.3f (before the extra-work "
                                       "correction %.3f, true %.3f), work inflation %.4f ± %.4f "
                                       "per added core (true %.4f)\n",
                                       ap->p_run, ap->p_run_uncorrected, ap->p_run_true,
                                       ap->work_inflation, ap->work_inflation_error,
                                       ap->extra_work_true);
                }
        }
        r = 0;
        if (a->json) {
                json_object_object_add(j, "apps", apps);
                total_json(j, res.time_s, res.energy_j, edp_sum);
                json_object_object_add(j, "decisions", json_object_new_uint64(res.decisions));
                json_object_object_add(j, "changes", json_object_new_uint64(res.changes));
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
        } else {
                printf("%-16s %5s %8s %10.3f %11.3f %8.2f %12.5g\n", "total", "", "", res.time_s,
                       res.energy_j, res.energy_j / res.time_s, res.energy_j * res.time_s);
                total_edp_sum_line(edp_sum);
        }
        simrun_result_free(&res);
        return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
}

/* The best static partition of the machine for all the apps at once (issue 14). */
static int sim_oracle_together_cmd(const struct sim_args *a)
{
        struct sim_machine *m;
        struct sim_machine_info info;
        struct sim_together t;
        struct json_object *j = NULL, *apps = NULL;
        enum sim_together_method method = a->has_method ? a->method : SIM_TOGETHER_AUTO;
        double edp_sum = 0;
        int r, ret = EXIT_OK;

        if (load(a, &m, &info) < 0)
                return EXIT_USAGE;
        r = sim_oracle_together(m, a->objective, method, SIM_ORACLE_STEP_NS, &t);
        if (r == -ENOSPC) {
                fprintf(stderr,
                        "pctl sim oracle: --together: %u apps but %u CPU%s: no partition gives "
                        "each app a CPU of its own\n",
                        info.n_apps, info.n_cpus, plural_s(info.n_cpus));
                sim_free(m);
                return EXIT_USAGE;
        }
        if (r == -E2BIG) {
                fprintf(stderr,
                        "pctl sim oracle: --method exhaustive: more than %lu partitions to run; "
                        "use --method dp (or auto)\n",
                        10 * (unsigned long)SIM_TOGETHER_EXHAUSTIVE_MAX);
                sim_free(m);
                return EXIT_USAGE;
        }
        if (r < 0) {
                fprintf(stderr, "pctl sim oracle: --together: %s\n", strerror(-r));
                sim_free(m);
                return EXIT_FAILURE_RUN;
        }
        if (a->json) {
                struct json_object *pk = json_object_new_array();

                j = json_object_new_object();
                json_object_object_add(j, "objective",
                                       jsonfmt_string(sim_objective_name(a->objective)));
                json_object_object_add(j, "together", json_object_new_boolean(1));
                json_object_object_add(j, "method",
                                       jsonfmt_string(sim_together_method_name(t.method)));
                json_object_object_add(j, "runs", json_object_new_uint64(t.runs));
                json_object_object_add(j, "evaluated", json_object_new_uint64(t.evaluated));
                json_object_object_add(j, "predicted", jsonfmt_double(t.predicted));
                json_object_object_add(j, "score", jsonfmt_double(t.score));
                for (unsigned q = 0; q < t.best.n_packages; q++) {
                        struct json_object *o = json_object_new_object();

                        json_object_object_add(o, "freq_mhz",
                                               json_object_new_uint64(t.best.freq_mhz[q]));
                        json_object_array_add(pk, o);
                }
                json_object_object_add(j, "packages", pk);
                apps = json_object_new_array();
        } else {
                printf("scenario %s: %u CPU%s%s%s; best static partition by %s, all apps "
                       "together\n",
                       a->scenario, info.n_cpus, plural_s(info.n_cpus),
                       info.preset[0] ? ", preset " : "", info.preset,
                       sim_objective_name(a->objective));
                if (t.method == SIM_TOGETHER_EXHAUSTIVE)
                        printf("exhaustive: %lu partitions, each run on the machine\n", t.runs);
                else
                        printf("dp: %lu partitions scored on tables measured alone (predicted "
                               "%.6g), the answer run on the machine (%.6g)\n",
                               t.evaluated, t.predicted, t.score);
                printf("packages:");
                for (unsigned q = 0; q < t.best.n_packages; q++)
                        printf(" %u at %u MHz%s", q, t.best.freq_mhz[q],
                               q + 1 < t.best.n_packages ? "," : "\n");
                printf("%-16s %5s %8s %10s %11s %8s %12s %6s %s\n", "app", "cores", "freq_mhz",
                       "time_s", "energy_j", "power_w", "edp_js", "p_true", "cpus_per_package");
        }
        for (unsigned i = 0; i < info.n_apps; i++) {
                const struct sim_result *res = &t.apps[i];
                struct sim_app_truth tr;

                sim_truth_app(m, i, &tr);
                struct row row = {tr.name,     res->cores,    res->freq_mhz,
                                  res->time_s, res->energy_j, res->p_true};
                edp_sum += res->energy_j * res->time_s;
                if (a->json) {
                        struct json_object *o = row_json(&row), *per = json_object_new_array();

                        for (unsigned q = 0; q < t.best.n_packages; q++)
                                json_object_array_add(per,
                                                      json_object_new_uint64(
                                                          t.best.cores[i * t.best.n_packages + q]));
                        json_object_object_add(o, "cpus_per_package", per);
                        json_object_array_add(apps, o);
                } else {
                        printf("%-16s %5u %8u %10.3f %11.3f %8.2f %12.5g %6.3f ", row.name,
                               row.cores, row.freq_mhz, row.time_s, row.energy_j,
                               row.energy_j / row.time_s, row.energy_j * row.time_s, row.p_true);
                        for (unsigned q = 0; q < t.best.n_packages; q++)
                                printf("%u%s", t.best.cores[i * t.best.n_packages + q],
                                       q + 1 < t.best.n_packages ? "+" : "\n");
                }
        }
        if (a->json) {
                json_object_object_add(j, "apps", apps);
                total_json(j, t.time_s, t.energy_j, edp_sum);
                if (jsonfmt_print(stdout, j, true) < 0)
                        ret = EXIT_FAILURE_RUN;
                json_object_put(j);
        } else {
                printf("%-16s %5s %8s %10.3f %11.3f %8.2f %12.5g\n", "total", "", "", t.time_s,
                       t.energy_j, t.energy_j / t.time_s, t.energy_j * t.time_s);
                total_edp_sum_line(edp_sum);
        }
        sim_together_free(&t);
        sim_free(m);
        return ret;
}

static int sim_oracle_cmd(const struct sim_args *a)
{
        struct sim_machine *m;
        struct sim_machine_info info;
        struct json_object *j = NULL, *apps = NULL;
        double sum_t = 0, sum_e = 0, edp_sum = 0;
        int ret = EXIT_OK;

        if (a->together)
                return sim_oracle_together_cmd(a);
        if (load(a, &m, &info) < 0)
                return EXIT_USAGE;
        if (a->json) {
                j = json_object_new_object();
                json_object_object_add(j, "objective",
                                       jsonfmt_string(sim_objective_name(a->objective)));
                apps = json_object_new_array();
        } else {
                printf("scenario %s: %u CPU%s%s%s; best static setting by %s, each app alone\n",
                       a->scenario, info.n_cpus, plural_s(info.n_cpus),
                       info.preset[0] ? ", preset " : "", info.preset,
                       sim_objective_name(a->objective));
                table_head();
        }
        for (unsigned i = 0; i < info.n_apps; i++) {
                struct sim_result best, *all = NULL;
                struct sim_app_truth t;
                unsigned n_all = 0;
                int r;

                sim_truth_app(m, i, &t);
                r = sim_oracle_app(m, i, a->objective, SIM_ORACLE_STEP_NS, &best, &all, &n_all);
                if (r < 0) {
                        fprintf(stderr, "pctl sim oracle: app %s: %s\n", t.name, strerror(-r));
                        ret = EXIT_FAILURE_RUN;
                        break;
                }
                struct row row = {t.name,      best.cores,    best.freq_mhz,
                                  best.time_s, best.energy_j, best.p_true};
                sum_t += best.time_s;
                sum_e += best.energy_j;
                edp_sum += best.energy_j * best.time_s;
                if (a->json) {
                        struct json_object *o = row_json(&row), *cands;

                        if (a->all) {
                                cands = json_object_new_array();
                                for (unsigned k = 0; k < n_all; k++) {
                                        struct row c = {t.name,          all[k].cores,
                                                        all[k].freq_mhz, all[k].time_s,
                                                        all[k].energy_j, all[k].p_true};
                                        struct json_object *co = row_json(&c);

                                        json_object_object_add(
                                            co, "ppw",
                                            jsonfmt_double(all[k].instructions / all[k].energy_j));
                                        json_object_array_add(cands, co);
                                }
                                json_object_object_add(o, "candidates", cands);
                        }
                        json_object_array_add(apps, o);
                } else {
                        table_row(&row);
                        for (unsigned k = 0; a->all && k < n_all; k++) {
                                struct row c = {"  candidate", all[k].cores,    all[k].freq_mhz,
                                                all[k].time_s, all[k].energy_j, all[k].p_true};
                                table_row(&c);
                        }
                }
                free(all);
        }
        if (a->json) {
                json_object_object_add(j, "apps", apps);
                /* As if the apps ran one after another, each at its best. */
                total_json(j, sum_t, sum_e, edp_sum);
                if (jsonfmt_print(stdout, j, true) < 0)
                        ret = EXIT_FAILURE_RUN;
                json_object_put(j);
        }
        sim_free(m);
        return ret;
}

int cmd_sim(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*run)(const struct sim_args *a);
        } subs[] = {
            {"run", sim_run_cmd},
            {"oracle", sim_oracle_cmd},
        };
        struct sim_args a;
        int r;

        if (argc < 2) {
                fprintf(stderr, "pctl sim: which one? run or oracle (try 'pctl sim --help')\n");
                return EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                sim_usage(stdout);
                return EXIT_OK;
        }
        for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
                if (strcmp(argv[1], subs[i].name) != 0)
                        continue;
                r = sim_parse(argc - 1, argv + 1, &a);
                if (r != 0)
                        return r > 0 ? EXIT_OK : EXIT_USAGE;
                return subs[i].run(&a);
        }
        fprintf(stderr, "pctl sim: unknown subcommand '%s' (run, oracle)\n", argv[1]);
        return EXIT_USAGE;
}
