/* pbench: a synthetic benchmark whose parallel fraction P is programmable. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "pbench.h"
#include "pctl/cpumask.h"
#include "pctl/jsonfmt.h"
#include "pctl/model.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

enum { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

struct pbench_args {
        double p;
        bool has_p;
        unsigned threads; /* 0: one per CPU of the list */
        double work_units;
        bool has_work;
        double t1_s;
        bool has_t1;
        const char *cpus_text;
        struct cpumask cpus;
        enum pbench_scaling scaling;
        enum pbench_kernel kernel;
        struct pbench_phase phases[PBENCH_MAX_PHASES];
        unsigned n_phases;
        unsigned iterations; /* 0: about PBENCH_ITERATION_S of one core each */
        unsigned array_mib;  /* mem kernel; 0: from the cache size */
        bool oversubscribe;
        bool json;
        double sync, imbalance, sleep;
};

static atomic_int pbench_stop;

static void usage(FILE *f)
{
        fputs("Usage: pbench --p P [--threads N] [--work UNITS | --t1 SECONDS] [--cpus LIST]\n"
              "              [--scaling amdahl|gustafson] [--kernel sqrt|mem|spin]\n"
              "              [--iterations K] [--array-mib MIB] [--oversubscribe]\n"
              "              [--sync F] [--imbalance R] [--sleep F] [--json]\n"
              "       pbench --phases P:SECONDS,... [--threads N] [--cpus LIST] [options]\n"
              "\n"
              "  --p P               parallel fraction, in [0, 1]\n"
              "  --threads N         threads, pinned one per CPU (default: one per CPU)\n"
              "  --work UNITS        total work W; a unit is 1e6 iterations of the kernel\n"
              "  --t1 SECONDS        size W so that one core needs SECONDS (default 2)\n"
              "  --cpus LIST         CPUs to use, e.g. 0-3 (default: the allowed set)\n"
              "  --scaling S         amdahl: W fixed (default); gustafson: P*W per thread\n"
              "  --kernel K          sqrt (CPU-bound, default), mem (streams memory),\n"
              "                      spin (threads contend on one lock)\n"
              "  --phases LIST       P:SECONDS,... run each P for about SECONDS of wall time\n"
              "  --iterations K      sequential+parallel iterations (default: ~50 ms each)\n"
              "  --array-mib MIB     mem kernel: array per thread (default: 4x the LLC)\n"
              "  --oversubscribe     allow more threads than CPUs (they share round-robin)\n"
              "  --sync F            F of each parallel chunk inside one shared mutex, [0, 1]\n"
              "  --imbalance R       parallel shares linear in the thread, the last R times\n"
              "                      the first (R >= 1); all wait at the end of the part\n"
              "  --sleep F           F of each parallel thread's time in nanosleep, [0, 0.95]\n"
              "  --json              one JSON object instead of the table\n"
              "  --help              this text\n"
              "  --version           the version\n"
              "\n"
              "Exit status: 0 ok, 1 the run failed or was interrupted, 2 bad options.\n"
              "See pbench(1).\n",
              f);
}

static int bad(const char *opt, const char *value, const char *why)
{
        fprintf(stderr, "pbench: %s: '%s' %s\n", opt, value, why);
        return -EINVAL;
}

static int parse_p(const char *opt, const char *s, double *p)
{
        if (parse_double(s, p) < 0)
                return bad(opt, s, "is not a number");
        if (!(*p >= 0 && *p <= 1))
                return bad(opt, s, "is outside [0, 1]");
        return 0;
}

/* "0.2:1,0.9:1.5" */
static int parse_phases(const char *list, struct pbench_args *a)
{
        char buf[4096], *save = NULL, *item;
        unsigned n = 0;

        if (strscpy(buf, list, sizeof(buf)) < 0)
                return bad("--phases", list, "is too long");
        for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *colon = strchr(item, ':');
                struct pbench_phase *ph = &a->phases[n];

                item = strstrip(item);
                if (n >= PBENCH_MAX_PHASES)
                        return bad("--phases", list, "has too many items (at most 64)");
                if (!colon) {
                        fprintf(stderr, "pbench: --phases: item %u '%s' is not P:SECONDS\n", n + 1,
                                item);
                        return -EINVAL;
                }
                *colon = '\0';
                *ph = (struct pbench_phase){0};
                if (parse_double(strstrip(item), &ph->p) < 0 || !(ph->p >= 0 && ph->p <= 1)) {
                        fprintf(stderr, "pbench: --phases: item %u: P '%s' is not in [0, 1]\n",
                                n + 1, item);
                        return -EINVAL;
                }
                if (parse_double(strstrip(colon + 1), &ph->seconds) < 0 || !(ph->seconds > 0) ||
                    !isfinite(ph->seconds)) {
                        fprintf(stderr,
                                "pbench: --phases: item %u: SECONDS '%s' is not a positive "
                                "number\n",
                                n + 1, colon + 1);
                        return -EINVAL;
                }
                n++;
        }
        if (n == 0)
                return bad("--phases", list, "has no P:SECONDS items");
        a->n_phases = n;
        return 0;
}

static int args_parse(int argc, char **argv, struct pbench_args *a)
{
        static const struct option opts[] = {
            {"p", required_argument, NULL, 'p'},
            {"threads", required_argument, NULL, 'n'},
            {"work", required_argument, NULL, 'w'},
            {"t1", required_argument, NULL, 't'},
            {"cpus", required_argument, NULL, 'c'},
            {"scaling", required_argument, NULL, 's'},
            {"kernel", required_argument, NULL, 'k'},
            {"phases", required_argument, NULL, 'P'},
            {"iterations", required_argument, NULL, 'i'},
            {"array-mib", required_argument, NULL, 'a'},
            {"oversubscribe", no_argument, NULL, 'o'},
            {"sync", required_argument, NULL, 'S'},
            {"imbalance", required_argument, NULL, 'I'},
            {"sleep", required_argument, NULL, 'L'},
            {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {"version", no_argument, NULL, 'V'},
            {},
        };
        int c, r;

        *a = (struct pbench_args){.t1_s = 2.0, .imbalance = 1.0};
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        if ((r = parse_p("--p", optarg, &a->p)) < 0)
                                return r;
                        a->has_p = true;
                        break;
                case 'n':
                        if (parse_uint(optarg, &a->threads) < 0 || a->threads == 0)
                                return bad("--threads", optarg, "is not a count >= 1");
                        if (a->threads > PBENCH_MAX_THREADS)
                                return bad("--threads", optarg, "is more than 1024 threads");
                        break;
                case 'w':
                        if (parse_double(optarg, &a->work_units) < 0 || !(a->work_units > 0) ||
                            a->work_units > 1e12)
                                return bad("--work", optarg,
                                           "is not a positive number of units (at most 1e12)");
                        a->has_work = true;
                        break;
                case 't':
                        if (parse_double(optarg, &a->t1_s) < 0 || !(a->t1_s > 0) || a->t1_s > 1e6)
                                return bad("--t1", optarg,
                                           "is not a positive number of seconds (at most 1e6)");
                        a->has_t1 = true;
                        break;
                case 'c':
                        if (cpumask_parse(optarg, &a->cpus) < 0 || cpumask_empty(&a->cpus))
                                return bad("--cpus", optarg, "is not a CPU list like 0-3,8");
                        a->cpus_text = optarg;
                        break;
                case 's':
                        if (pbench_scaling_from_name(optarg, &a->scaling) < 0)
                                return bad("--scaling", optarg,
                                           "is not a scaling (amdahl or gustafson)");
                        break;
                case 'k':
                        if (pbench_kernel_from_name(optarg, &a->kernel) < 0)
                                return bad("--kernel", optarg,
                                           "is not a kernel (sqrt, mem or spin)");
                        break;
                case 'P':
                        if ((r = parse_phases(optarg, a)) < 0)
                                return r;
                        break;
                case 'i':
                        if (parse_uint(optarg, &a->iterations) < 0 || a->iterations == 0)
                                return bad("--iterations", optarg, "is not a count >= 1");
                        break;
                case 'a':
                        if (parse_uint(optarg, &a->array_mib) < 0 || a->array_mib == 0 ||
                            a->array_mib > 1024 * 1024)
                                return bad("--array-mib", optarg,
                                           "is not a size in MiB between 1 and 1048576");
                        break;
                case 'o':
                        a->oversubscribe = true;
                        break;
                case 'S':
                        if ((r = parse_p("--sync", optarg, &a->sync)) < 0)
                                return r;
                        break;
                case 'I':
                        if (parse_double(optarg, &a->imbalance) < 0 || !(a->imbalance >= 1) ||
                            a->imbalance > 1000)
                                return bad("--imbalance", optarg,
                                           "is not a ratio between 1 and 1000");
                        break;
                case 'L':
                        /* 1 would be a thread that never works; past 0.95 the sleeps are
                         * shorter than the timer's slack. */
                        if (parse_double(optarg, &a->sleep) < 0 ||
                            !(a->sleep >= 0 && a->sleep <= 0.95))
                                return bad("--sleep", optarg, "is not a fraction in [0, 0.95]");
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 1;
                case 'V':
                        printf("pbench %s\n", PCTL_VERSION);
                        return 1;
                case ':':
                        fprintf(stderr, "pbench: %s needs a value\n", argv[optind - 1]);
                        return -EINVAL;
                default:
                        fprintf(stderr, "pbench: unknown option '%s'\n", argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pbench: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (a->n_phases > 0) {
                /* Phases are sized by time: fixed-work options would contradict them. */
                const char *clash = a->has_p        ? "--p"
                                    : a->has_work   ? "--work"
                                    : a->has_t1     ? "--t1"
                                    : a->iterations ? "--iterations"
                                                    : NULL;
                if (clash) {
                        fprintf(stderr, "pbench: --phases cannot be combined with %s\n", clash);
                        return -EINVAL;
                }
        } else if (!a->has_p) {
                fprintf(stderr, "pbench: --p P (or --phases) is required\n");
                return -EINVAL;
        }
        if (a->array_mib && a->kernel != PBENCH_KERNEL_MEM) {
                fprintf(stderr, "pbench: --array-mib applies only to --kernel mem\n");
                return -EINVAL;
        }
        if (a->has_work && a->has_t1) {
                fprintf(stderr, "pbench: give --work or --t1, not both\n");
                return -EINVAL;
        }
        return 0;
}

static int allowed_cpus(struct cpumask *out)
{
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return -errno;
        cpumask_zero(out);
        for (unsigned cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &set))
                        cpumask_set(out, cpu);
        return 0;
}

/* Picks the CPU of every thread; prints why on a usage error. */
static int place_threads(struct pbench_args *a, struct pbench_config *cfg, struct cpumask *used)
{
        struct cpumask allowed, list;
        char text[256];
        unsigned n_cpus, i = 0;
        int r = allowed_cpus(&allowed);

        if (r < 0) {
                fprintf(stderr, "pbench: cannot read the allowed CPUs: %s\n", strerror(-r));
                return r;
        }
        if (cpumask_format(&allowed, text, sizeof(text)) < 0)
                strscpy(text, "(too long to show)", sizeof(text));
        if (a->cpus_text) {
                cpumask_foreach (cpu, &a->cpus) {
                        if (!cpumask_test(&allowed, (unsigned)cpu)) {
                                fprintf(stderr,
                                        "pbench: --cpus: CPU %d of '%s' is not in this "
                                        "process's allowed set (%s)\n",
                                        cpu, a->cpus_text, text);
                                return -EINVAL;
                        }
                }
                list = a->cpus;
        } else {
                list = allowed;
        }
        n_cpus = cpumask_count(&list);
        if (a->threads == 0)
                a->threads = n_cpus;
        if (a->threads > n_cpus && !a->oversubscribe) {
                fprintf(stderr,
                        "pbench: --threads: %u threads but only %u CPU%s (%s); use "
                        "--oversubscribe to share them\n",
                        a->threads, n_cpus, plural_s(n_cpus), a->cpus_text ? a->cpus_text : text);
                return -EINVAL;
        }
        cfg->threads = a->threads;
        cpumask_zero(used);
        /* The first CPU of the list takes thread 0, which runs the sequential part. */
        while (i < cfg->threads) {
                cpumask_foreach (cpu, &list) {
                        if (i >= cfg->threads)
                                break;
                        cfg->thread_cpu[i++] = cpu;
                        cpumask_set(used, (unsigned)cpu);
                }
        }
        return 0;
}

static int pin_self(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

static void on_signal(int sig)
{
        atomic_store(&pbench_stop, sig);
}

static int signals_install(void)
{
        struct sigaction sa = {.sa_handler = on_signal};

        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
                return -errno;
        return 0;
}

/* The CPU-time speedup the program's P should give, or NAN where no law applies (phases). */
static double expected_busy_speedup(const struct pbench_config *cfg)
{
        double sp;

        if (cfg->n_phases > 0)
                return NAN;
        if (cfg->scaling == PBENCH_SCALING_GUSTAFSON)
                return (1.0 - cfg->p) + cfg->p * cfg->threads; /* Gustafson's scaled speedup */
        return model_speedup(cfg->p, cfg->threads, &sp) < 0 ? NAN : sp; /* eq. 3 */
}

static double busy_speedup(const struct pbench_config *cfg, const struct pbench_result *res)
{
        double sum_s = 0, max_s = 0;

        for (unsigned i = 0; i < cfg->threads; i++) {
                sum_s += res->thread_busy_s[i];
                if (res->thread_busy_s[i] > max_s)
                        max_s = res->thread_busy_s[i];
        }
        return max_s > 0 ? sum_s / max_s : NAN;
}

/* A speedup stack in cores: the speedup and the delimiters pbench programs (docs/stack.md). */
struct pbench_stack {
        double speedup, sequential, sync, imbalance, io;
        double runqueue; /* measured only: woken inside those waits but without a CPU */
        double rest;     /* measured only: N - speedup - the others (runqueue, overheads) */
};

/* What the programmed P and delimiters give on an otherwise idle machine, per iteration of one
 * core's work W = 1: the sequential part s = 1 - P on thread 0 while the others wait; thread
 * t's parallel share p_t (by its --imbalance weight) takes p_t / (1 - sleep) of wall time; the
 * locked work L = sync * sum(p_t) is serial, so the parallel part lasts max(max_t, L). Threads
 * done before its end wait for the lock (sync) when L is the longer, else for the slowest
 * thread (imbalance). False with phases, whose P changes. */
static bool programmed_stack(const struct pbench_config *cfg, struct pbench_stack *st)
{
        double n = cfg->threads, s = 1.0 - cfg->p, weights = 0, work = s, longest = 0;
        double par = 0, sleeping = 0, waits = 0, locked, t_par, wall;

        if (cfg->n_phases > 0)
                return false;
        for (unsigned t = 0; t < cfg->threads; t++)
                weights += pbench_thread_weight(cfg, t);
        for (unsigned t = 0; t < cfg->threads; t++) {
                double w = pbench_thread_weight(cfg, t) / weights;
                double p_t = cfg->scaling == PBENCH_SCALING_GUSTAFSON ? cfg->p * w * n : cfg->p * w;
                double t_t = p_t / (1.0 - cfg->sleep);

                par += p_t;
                sleeping += t_t - p_t;
                if (t_t > longest)
                        longest = t_t;
        }
        work += par;
        locked = cfg->sync * par;
        t_par = locked > longest ? locked : longest;
        wall = s + t_par;
        if (!(wall > 0))
                return false;
        for (unsigned t = 0; t < cfg->threads; t++) {
                double w = pbench_thread_weight(cfg, t) / weights;
                double p_t = cfg->scaling == PBENCH_SCALING_GUSTAFSON ? cfg->p * w * n : cfg->p * w;

                waits += t_par - p_t / (1.0 - cfg->sleep);
        }
        *st = (struct pbench_stack){
            .speedup = work / wall,
            .sequential = (n - 1) * s / wall,
            .sync = locked > longest ? waits / wall : 0,
            .imbalance = locked > longest ? 0 : waits / wall,
            .io = sleeping / wall,
            .runqueue = NAN,
            .rest = NAN,
        };
        return true;
}

/* What pbench's own timing of the run gives: every thread's waits over the wall time, less
 * the part of each wait it spent woken but without a CPU (other load: runqueue). */
static void measured_stack(const struct pbench_config *cfg, const struct pbench_result *res,
                           struct pbench_stack *st)
{
        double busy = 0, seq = 0, sync = 0, imb = 0, io = 0, rq = 0, wall = res->wall_s;

        for (unsigned t = 0; t < cfg->threads; t++) {
                busy += res->thread_busy_s[t];
                /* Thread 0 runs the sequential part: its wait there is the barrier's own. */
                if (t > 0)
                        seq += res->thread_seq_wait_s[t] - res->thread_seq_rq_s[t];
                sync += res->thread_mutex_wait_s[t] - res->thread_mutex_rq_s[t];
                imb += res->thread_par_wait_s[t] - res->thread_par_rq_s[t];
                io += res->thread_sleep_s[t];
                rq += res->thread_mutex_rq_s[t] + res->thread_seq_rq_s[t] + res->thread_par_rq_s[t];
        }
        if (!(wall > 0)) {
                *st = (struct pbench_stack){NAN, NAN, NAN, NAN, NAN, NAN, NAN};
                return;
        }
        *st = (struct pbench_stack){
            .speedup = busy / wall,
            .sequential = seq / wall,
            .sync = sync / wall,
            .imbalance = imb / wall,
            .io = io / wall,
            .runqueue = rq / wall,
        };
        st->rest = cfg->threads - st->speedup - st->sequential - st->sync - st->imbalance - st->io -
                   st->runqueue;
}

static struct json_object *stack_json(const struct pbench_config *cfg,
                                      const struct pbench_stack *st)
{
        struct json_object *o = json_object_new_object(), *c = json_object_new_object();

        json_object_object_add(o, "cores", json_object_new_uint64(cfg->threads));
        json_object_object_add(o, "speedup", jsonfmt_double(st->speedup));
        json_object_object_add(c, "sequential", jsonfmt_double(st->sequential));
        json_object_object_add(c, "sync", jsonfmt_double(st->sync));
        json_object_object_add(c, "imbalance", jsonfmt_double(st->imbalance));
        json_object_object_add(c, "io", jsonfmt_double(st->io));
        if (isfinite(st->rest)) {
                json_object_object_add(c, "runqueue", jsonfmt_double(st->runqueue));
                json_object_object_add(c, "rest", jsonfmt_double(st->rest));
        }
        json_object_object_add(o, "components", c);
        return o;
}

static struct json_object *thread_array(const struct pbench_config *cfg, const double *v)
{
        struct json_object *list = json_object_new_array();

        for (unsigned i = 0; i < cfg->threads; i++)
                json_object_array_add(list, jsonfmt_double(v[i]));
        return list;
}

static void print_json(const struct pbench_config *cfg, const char *cpus_text, double units_per_s,
                       const struct pbench_result *res)
{
        struct json_object *j = json_object_new_object(), *list;
        double sp = busy_speedup(cfg, res), p_est = NAN;

        /* eq. 10: the P the measured CPU-time speedup implies (Amdahl runs only) */
        if (cfg->n_phases == 0 && cfg->scaling == PBENCH_SCALING_AMDAHL && cfg->threads > 1 &&
            model_p_from_speedup(cfg->threads, sp, &p_est) < 0)
                p_est = NAN;

        json_object_object_add(j, "p", jsonfmt_double(cfg->p));
        json_object_object_add(j, "threads", json_object_new_uint64(cfg->threads));
        json_object_object_add(j, "cpus", jsonfmt_string(cpus_text));
        list = json_object_new_array();
        for (unsigned i = 0; i < cfg->threads; i++)
                json_object_array_add(list, json_object_new_int64(cfg->thread_cpu[i]));
        json_object_object_add(j, "thread_cpus", list);
        json_object_object_add(j, "scaling", jsonfmt_string(pbench_scaling_name(cfg->scaling)));
        json_object_object_add(j, "kernel", jsonfmt_string(pbench_kernel_name(cfg->kernel)));
        if (cfg->kernel == PBENCH_KERNEL_MEM)
                json_object_object_add(j, "mem_array_bytes",
                                       json_object_new_uint64(cfg->mem_array_bytes));
        json_object_object_add(j, "units_per_s", jsonfmt_double(units_per_s));
        json_object_object_add(j, "work_units",
                               jsonfmt_double((double)res->work_iters / PBENCH_ITERS_PER_UNIT));
        json_object_object_add(j, "iterations", json_object_new_uint64(res->iterations));
        json_object_object_add(j, "wall_s", jsonfmt_double(res->wall_s));
        json_object_object_add(j, "sequential_s", jsonfmt_double(res->sequential_s));
        json_object_object_add(j, "parallel_s", jsonfmt_double(res->parallel_s));
        list = json_object_new_array();
        for (unsigned i = 0; i < cfg->threads; i++)
                json_object_array_add(list, jsonfmt_double(res->thread_busy_s[i]));
        json_object_object_add(j, "thread_busy_s", list);
        json_object_object_add(j, "busy_speedup", jsonfmt_double(sp));
        json_object_object_add(j, "expected_busy_speedup",
                               jsonfmt_double(expected_busy_speedup(cfg)));
        json_object_object_add(j, "p_from_busy", jsonfmt_double(p_est));
        json_object_object_add(j, "sync", jsonfmt_double(cfg->sync));
        json_object_object_add(j, "imbalance", jsonfmt_double(cfg->imbalance));
        json_object_object_add(j, "sleep", jsonfmt_double(cfg->sleep));
        json_object_object_add(j, "thread_mutex_wait_s",
                               thread_array(cfg, res->thread_mutex_wait_s));
        json_object_object_add(j, "thread_sleep_s", thread_array(cfg, res->thread_sleep_s));
        json_object_object_add(j, "thread_seq_wait_s", thread_array(cfg, res->thread_seq_wait_s));
        json_object_object_add(j, "thread_par_wait_s", thread_array(cfg, res->thread_par_wait_s));
        json_object_object_add(j, "thread_mutex_runqueue_s",
                               thread_array(cfg, res->thread_mutex_rq_s));
        json_object_object_add(j, "thread_seq_runqueue_s", thread_array(cfg, res->thread_seq_rq_s));
        json_object_object_add(j, "thread_par_runqueue_s", thread_array(cfg, res->thread_par_rq_s));
        {
                struct pbench_stack st;

                json_object_object_add(j, "stack_programmed",
                                       programmed_stack(cfg, &st) ? stack_json(cfg, &st) : NULL);
                measured_stack(cfg, res, &st);
                json_object_object_add(j, "stack", stack_json(cfg, &st));
        }
        if (cfg->n_phases > 0) {
                list = json_object_new_array();
                for (unsigned i = 0; i < cfg->n_phases; i++) {
                        const struct pbench_phase *ph = &cfg->phases[i];
                        struct json_object *o = json_object_new_object();

                        json_object_object_add(o, "p", jsonfmt_double(ph->p));
                        json_object_object_add(o, "seconds", jsonfmt_double(ph->seconds));
                        json_object_object_add(o, "wall_s", jsonfmt_double(ph->wall_s));
                        json_object_object_add(o, "iterations",
                                               json_object_new_uint64(ph->iterations));
                        json_object_object_add(
                            o, "work_units",
                            jsonfmt_double((double)ph->work_iters / PBENCH_ITERS_PER_UNIT));
                        json_object_array_add(list, o);
                }
                json_object_object_add(j, "phases", list);
        }
        jsonfmt_print(stdout, j, true);
        json_object_put(j);
}

static void print_table(const struct pbench_config *cfg, const char *cpus_text, double units_per_s,
                        const struct pbench_result *res)
{
        double expected = expected_busy_speedup(cfg);

        if (cfg->n_phases > 0)
                printf("pbench: kernel %s, %s scaling, %u phases, %u threads on CPUs %s\n",
                       pbench_kernel_name(cfg->kernel), pbench_scaling_name(cfg->scaling),
                       cfg->n_phases, cfg->threads, cpus_text);
        else
                printf("pbench: kernel %s, %s scaling, P %.4f, %u threads on CPUs %s\n",
                       pbench_kernel_name(cfg->kernel), pbench_scaling_name(cfg->scaling), cfg->p,
                       cfg->threads, cpus_text);
        printf("work      %.2f units (%.1f units/s on one core), %u iterations\n",
               (double)res->work_iters / PBENCH_ITERS_PER_UNIT, units_per_s, res->iterations);
        printf("wall      %.3f s (sequential %.3f s, parallel %.3f s)\n", res->wall_s,
               res->sequential_s, res->parallel_s);
        for (unsigned i = 0; i < cfg->n_phases; i++)
                printf("phase %-3u P %.4f for %.3f s: %u iterations\n", i + 1, cfg->phases[i].p,
                       cfg->phases[i].wall_s, cfg->phases[i].iterations);
        printf("%-7s %5s %10s\n", "thread", "cpu", "busy_s");
        for (unsigned i = 0; i < cfg->threads; i++)
                printf("%-7u %5d %10.3f\n", i, cfg->thread_cpu[i], res->thread_busy_s[i]);
        printf("speedup   %.4f in CPU time (sum busy / max busy)", busy_speedup(cfg, res));
        if (isfinite(expected))
                printf(", %s predicts %.4f",
                       cfg->scaling == PBENCH_SCALING_GUSTAFSON ? "Gustafson" : "Amdahl", expected);
        putchar('\n');
        if (cfg->sync > 0 || cfg->imbalance > 1 || cfg->sleep > 0) {
                struct pbench_stack st;

                printf("delimiters sync %.3f, imbalance %.3f, sleep %.3f\n", cfg->sync,
                       cfg->imbalance, cfg->sleep);
                if (programmed_stack(cfg, &st))
                        printf("stack programmed: speedup %.3f, sequential %.3f, sync %.3f, "
                               "imbalance %.3f, io %.3f (cores)\n",
                               st.speedup, st.sequential, st.sync, st.imbalance, st.io);
                measured_stack(cfg, res, &st);
                printf("stack measured:   speedup %.3f, sequential %.3f, sync %.3f, "
                       "imbalance %.3f, io %.3f, runqueue %.3f, rest %.3f (cores)\n",
                       st.speedup, st.sequential, st.sync, st.imbalance, st.io, st.runqueue,
                       st.rest);
        }
}

int main(int argc, char **argv)
{
        static struct pbench_args a;
        static struct pbench_config cfg;
        static struct pbench_result res;
        struct kernel_state ks;
        struct cpumask used;
        char cpus_text[256];
        double units_per_s;
        int r;

        r = args_parse(argc, argv, &a);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        if (place_threads(&a, &cfg, &used) < 0)
                return EXIT_USAGE;
        if (cpumask_format(&used, cpus_text, sizeof(cpus_text)) < 0)
                strscpy(cpus_text, "(too many to show)", sizeof(cpus_text));

        cfg.p = a.p;
        cfg.sync = a.sync;
        cfg.imbalance = a.imbalance;
        cfg.sleep = a.sleep;
        cfg.scaling = a.scaling;
        cfg.kernel = a.kernel;
        if (cfg.kernel == PBENCH_KERNEL_MEM)
                cfg.mem_array_bytes =
                    a.array_mib ? (size_t)a.array_mib << 20 : kernel_mem_array_bytes(cfg.threads);

        if (signals_install() < 0) {
                fprintf(stderr, "pbench: cannot install signal handlers: %m\n");
                return EXIT_RUN;
        }
        /* Time the kernel where thread 0 will run it. */
        r = pin_self(cfg.thread_cpu[0]);
        /* -EINVAL: moved off that CPU since we read the allowed set (see thread_start). */
        if (r < 0 && r != -EINVAL) {
                fprintf(stderr, "pbench: cannot pin to CPU %d: %s\n", cfg.thread_cpu[0],
                        strerror(-r));
                return EXIT_RUN;
        }
        r = kernel_state_init(&ks, cfg.kernel, cfg.mem_array_bytes);
        if (r < 0) {
                fprintf(stderr,
                        "pbench: cannot allocate the %zu-byte array of the mem kernel: %s\n",
                        cfg.mem_array_bytes, strerror(-r));
                return EXIT_RUN;
        }
        r = kernel_calibrate(&ks, &units_per_s);
        if (r < 0 || !(units_per_s > 0)) {
                fprintf(stderr, "pbench: cannot time the %s kernel\n",
                        pbench_kernel_name(cfg.kernel));
                kernel_state_free(&ks);
                return EXIT_RUN;
        }
        /* Thread 0 runs where this timing ran: it keeps the state (the array) set up there. */
        cfg.thread0_state = &ks;

        if (a.n_phases > 0) {
                memcpy(cfg.phases, a.phases, sizeof(a.phases));
                cfg.n_phases = a.n_phases;
                cfg.phase_iter_iters =
                    (uint64_t)llround(units_per_s * PBENCH_ITERATION_S * PBENCH_ITERS_PER_UNIT);
                if (cfg.phase_iter_iters == 0)
                        cfg.phase_iter_iters = 1;
        } else {
                double work_units = a.has_work ? a.work_units : a.t1_s * units_per_s;
                double one_core_s = work_units / units_per_s;

                cfg.work_iters = (uint64_t)llround(work_units * PBENCH_ITERS_PER_UNIT);
                if (cfg.work_iters == 0)
                        cfg.work_iters = 1;
                cfg.iterations = a.iterations;
                if (cfg.iterations == 0) {
                        double k = round(one_core_s / PBENCH_ITERATION_S);

                        cfg.iterations = k < 1 ? 1 : k > 1e6 ? 1000000 : (unsigned)k;
                }
        }

        r = pbench_run(&cfg, &pbench_stop, &res);
        kernel_state_free(&ks);
        if (r == -EINTR) {
                fprintf(stderr, "pbench: stopped by %s, no result\n",
                        strsignal(atomic_load(&pbench_stop)));
                return EXIT_RUN;
        }
        if (r < 0) {
                fprintf(stderr, "pbench: cannot run %u threads: %s\n", cfg.threads, strerror(-r));
                return EXIT_RUN;
        }
        if (cfg.n_phases > 0) {
                /* The run's P: every iteration has the same base work, so weight by them. */
                double weighted = 0;

                for (unsigned i = 0; i < cfg.n_phases; i++)
                        weighted += cfg.phases[i].p * cfg.phases[i].iterations;
                cfg.p = res.iterations > 0 ? weighted / res.iterations : NAN;
        }

        if (a.json)
                print_json(&cfg, cpus_text, units_per_s, &res);
        else
                print_table(&cfg, cpus_text, units_per_s, &res);
        return EXIT_OK;
}
