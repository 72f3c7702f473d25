/* pctl sample: a timeline of counter deltas per interval, per CPU, cgroup or process. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "pctl/cpumask.h"
#include "pctl/fsio.h"
#include "pctl/sample_io.h"
#include "pctl/sensor.h"
#include "pctl/topology.h"
#include "pctl/util.h"

struct sample_args {
        const char *backend;
        const char *source;
        struct cpumask cpus;
        bool has_cpus;
        const char *cgroup;
        pid_t pid;
        unsigned interval_ms;
        bool has_interval;
        unsigned count;
        bool has_count;
        enum sample_io_format fmt;
};

static void sample_usage(FILE *f)
{
        fputs("Usage: pctl sample [--backend auto|likwid|perf|software|replay] [--source FILE]\n"
              "                   [--cpus LIST | --cgroup PATH | --pid PID]\n"
              "                   --interval MS --count K [--json | --csv]\n",
              f);
}

static int bad(const char *opt, const char *value, const char *why)
{
        fprintf(stderr, "pctl sample: %s '%s' %s\n", opt, value, why);
        return -EINVAL;
}

static int sample_parse(int argc, char **argv, struct sample_args *a)
{
        static const struct option opts[] = {
            {"backend", required_argument, NULL, 'b'},
            {"source", required_argument, NULL, 's'},
            {"cpus", required_argument, NULL, 'c'},
            {"cgroup", required_argument, NULL, 'g'},
            {"pid", required_argument, NULL, 'p'},
            {"interval", required_argument, NULL, 'i'},
            {"count", required_argument, NULL, 'n'},
            {"json", no_argument, NULL, 'j'},
            {"csv", no_argument, NULL, 'v'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        unsigned targets = 0;
        int c, pid;

        *a = (struct sample_args){.backend = "auto", .fmt = SAMPLE_IO_TEXT};
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        if (strcmp(optarg, "auto") != 0 && !sensor_find(optarg))
                                return bad("--backend", optarg,
                                           "is not a backend (auto, likwid, perf, software, "
                                           "replay)");
                        a->backend = optarg;
                        break;
                case 's':
                        a->source = optarg;
                        break;
                case 'c':
                        if (cpumask_parse(optarg, &a->cpus) < 0 || cpumask_empty(&a->cpus))
                                return bad("--cpus", optarg, "is not a CPU list like 0-3,8");
                        a->has_cpus = true;
                        targets++;
                        break;
                case 'g':
                        a->cgroup = optarg;
                        targets++;
                        break;
                case 'p':
                        if (parse_int(optarg, &pid) < 0 || pid <= 0)
                                return bad("--pid", optarg, "is not a process id");
                        a->pid = pid;
                        targets++;
                        break;
                case 'i':
                        if (parse_uint(optarg, &a->interval_ms) < 0)
                                return bad("--interval", optarg, "is not a number of ms");
                        if (a->interval_ms < 1)
                                return bad("--interval", optarg, "must be >= 1 ms");
                        a->has_interval = true;
                        break;
                case 'n':
                        if (parse_uint(optarg, &a->count) < 0)
                                return bad("--count", optarg, "is not a count");
                        if (a->count < 1)
                                return bad("--count", optarg, "must be >= 1");
                        a->has_count = true;
                        break;
                case 'j':
                        a->fmt = SAMPLE_IO_JSON;
                        break;
                case 'v':
                        a->fmt = SAMPLE_IO_CSV;
                        break;
                case 'h':
                        sample_usage(stdout);
                        return 1;
                case ':':
                        fprintf(stderr, "pctl sample: %s needs a value\n", argv[optind - 1]);
                        return -EINVAL;
                default:
                        fprintf(stderr, "pctl sample: unknown option '%s'\n", argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pctl sample: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (targets > 1) {
                fprintf(stderr, "pctl sample: give one of --cpus, --cgroup, --pid\n");
                return -EINVAL;
        }
        if (!a->has_interval && strcmp(a->backend, "replay") != 0) {
                fprintf(stderr, "pctl sample: --interval MS is required\n");
                return -EINVAL;
        }
        if (!a->has_count) {
                fprintf(stderr, "pctl sample: --count K is required\n");
                return -EINVAL;
        }
        if (strcmp(a->backend, "replay") == 0 && !a->source) {
                fprintf(stderr, "pctl sample: --backend replay needs --source FILE\n");
                return -EINVAL;
        }
        if (a->source && strcmp(a->backend, "replay") != 0) {
                fprintf(stderr, "pctl sample: --source is for --backend replay\n");
                return -EINVAL;
        }
        return 0;
}

/* Bad input is found before anything is opened: what is wrong, and where. */
static int sample_check_targets(const struct sample_args *a)
{
        struct stat sb;

        if (a->pid > 0 && kill(a->pid, 0) < 0 && errno == ESRCH) {
                fprintf(stderr, "pctl sample: --pid %d: no such process\n", (int)a->pid);
                return -ESRCH;
        }
        if (a->cgroup) {
                char path[4200];

                if (a->cgroup[0] != '/') {
                        fprintf(stderr,
                                "pctl sample: --cgroup '%s': give the absolute path of the cgroup "
                                "directory (e.g. /sys/fs/cgroup/cpuacct/app)\n",
                                a->cgroup);
                        return -EINVAL;
                }
                if (fs_path(path, sizeof(path), "%s", a->cgroup) < 0 || stat(path, &sb) < 0 ||
                    !S_ISDIR(sb.st_mode)) {
                        fprintf(stderr, "pctl sample: --cgroup '%s': no such cgroup directory\n",
                                a->cgroup);
                        return -ENOENT;
                }
        }
        if (a->has_cpus && strcmp(a->backend, "replay") != 0) {
                struct topology t;
                struct cpumask absent;
                char list[256];
                int r = topology_read(&t);

                if (r < 0) {
                        fprintf(stderr, "pctl sample: cannot read the CPU topology: %s\n",
                                strerror(-r));
                        return r;
                }
                cpumask_andnot(&absent, &a->cpus, &t.online);
                topology_free(&t);
                if (!cpumask_empty(&absent)) {
                        if (cpumask_format(&absent, list, sizeof(list)) < 0)
                                snprintf(list, sizeof(list), "(many)");
                        fprintf(stderr, "pctl sample: --cpus: CPU %s not online here\n", list);
                        return -ENODEV;
                }
        }
        return 0;
}

static void sleep_until(uint64_t deadline_ns)
{
        struct timespec ts = {.tv_sec = (time_t)(deadline_ns / NSEC_PER_SEC),
                              .tv_nsec = (long)(deadline_ns % NSEC_PER_SEC)};

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static bool target_gone(const struct sensor_sample *s, unsigned t)
{
        for (unsigned c = 0; c < s->n_cpus; c++)
                if (sensor_target_cpu(s, t, c)->measured)
                        return false;
        return true;
}

int cmd_sample(int argc, char **argv)
{
        struct sample_args a;
        struct sensor_config cfg = {0};
        const struct sensor_ops *ops;
        struct sensor_target target = {0};
        struct sensor_sample s = {0};
        struct sensor *sn = NULL;
        unsigned n_targets = 0;
        uint64_t t0_ns, next_ns;
        bool replay;
        char why[1024] = "";
        int r, rc = EXIT_OK;

        r = sample_parse(argc, argv, &a);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        if (sample_check_targets(&a) < 0)
                return EXIT_USAGE;
        if (a.has_cpus)
                cfg.cpus = a.cpus;
        cfg.source = a.source;
        if (a.pid > 0) {
                target.kind = SENSOR_TARGET_PID;
                target.pid = a.pid;
                n_targets = 1;
        } else if (a.cgroup) {
                target.kind = SENSOR_TARGET_CGROUP;
                strscpy(target.cgroup, a.cgroup, sizeof(target.cgroup));
                n_targets = 1;
        }
        if (strcmp(a.backend, "auto") == 0) {
                r = sensor_pick_auto(&cfg, &ops, why, sizeof(why));
                if (r < 0) {
                        fprintf(stderr, "pctl sample: %s\n", why);
                        return EXIT_FAILURE_RUN;
                }
                fprintf(stderr, "pctl sample: backend %s\n", why);
        } else {
                struct sensor_probe p = {0};

                ops = sensor_find(a.backend);
                ops->probe(&cfg, &p);
                if (!p.available) {
                        fprintf(stderr, "pctl sample: %s\n", p.reason);
                        /* A missing or unreadable trace is bad input; a backend the
                         * machine lacks is a failure to run. */
                        return strcmp(a.backend, "replay") == 0 ? EXIT_USAGE : EXIT_FAILURE_RUN;
                }
        }
        replay = strcmp(ops->name, "replay") == 0;
        r = sensor_open(ops, &cfg, &sn);
        if (r < 0) {
                fprintf(stderr, "pctl sample: cannot open the %s backend: %s\n", ops->name,
                        strerror(-r));
                return EXIT_FAILURE_RUN;
        }
        if (n_targets) {
                r = sensor_set_targets(sn, &target, n_targets);
                if (r == -EOPNOTSUPP && strcmp(a.backend, "auto") == 0 &&
                    ops != sensor_find("software")) {
                        /* The counter backends count per CPU or cgroup; processes are the
                         * software backend's. */
                        fprintf(stderr,
                                "pctl sample: the %s backend cannot measure this target, using "
                                "software\n",
                                ops->name);
                        sensor_close(sn);
                        sn = NULL;
                        ops = sensor_find("software");
                        r = sensor_open(ops, &cfg, &sn);
                        if (r == 0)
                                r = sensor_set_targets(sn, &target, n_targets);
                }
                if (r < 0) {
                        if (a.pid > 0)
                                fprintf(stderr,
                                        "pctl sample: cannot measure --pid %d with the %s "
                                        "backend: %s\n",
                                        (int)a.pid, ops->name, strerror(-r));
                        else
                                fprintf(stderr,
                                        "pctl sample: cannot measure --cgroup %s with the %s "
                                        "backend: %s\n",
                                        a.cgroup, ops->name, strerror(-r));
                        sensor_close(sn);
                        return r == -ESRCH || r == -ENOENT ? EXIT_USAGE : EXIT_FAILURE_RUN;
                }
        }
        r = sensor_sample_alloc(&s, sn->n_cpus, sn->n_targets ? sn->n_targets : 0);
        if (r == 0) {
                s.n_packages = sn->n_packages;
                r = sample_io_write_header_fmt(stdout, ops->name, &s, a.has_cpus ? &a.cpus : NULL,
                                               a.fmt);
        }
        if (r < 0) {
                fprintf(stderr, "pctl sample: %s\n", strerror(-r));
                sensor_close(sn);
                sensor_sample_free(&s);
                return EXIT_FAILURE_RUN;
        }
        t0_ns = now_ns();
        next_ns = t0_ns;
        for (unsigned k = 0; k < a.count; k++) {
                if (!replay) {
                        next_ns += a.interval_ms * NSEC_PER_MSEC;
                        sleep_until(next_ns);
                }
                r = sensor_read(sn, &s);
                if (r == -ENODATA)
                        break; /* the end of a replayed trace */
                if (r < 0) {
                        fprintf(stderr, "pctl sample: reading the %s backend failed: %s\n",
                                ops->name, strerror(-r));
                        rc = EXIT_FAILURE_RUN;
                        break;
                }
                /* Live times are shown from the start of sampling; a trace keeps its own. */
                if (!replay)
                        s.timestamp_ns -= t0_ns;
                if (a.pid > 0 && target_gone(&s, 0)) {
                        fprintf(stderr, "pctl sample: process %d exited\n", (int)a.pid);
                        break;
                }
                r = sample_io_write(stdout, &s, a.fmt);
                fflush(stdout);
                if (r < 0) {
                        fprintf(stderr, "pctl sample: writing the output failed: %s\n",
                                strerror(-r));
                        rc = EXIT_FAILURE_RUN;
                        break;
                }
        }
        sensor_sample_free(&s);
        sensor_close(sn);
        return rc;
}
