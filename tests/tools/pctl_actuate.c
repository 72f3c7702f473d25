/* pctl_actuate: drives the real actuator for the integration tests.
 *
 *   pctl_actuate [OPTIONS] probe
 *   pctl_actuate [OPTIONS] open                       open, report cpuset mode and DVFS, close
 *   pctl_actuate [OPTIONS] adopt PID [--cpus LIST] [--hold]
 *   pctl_actuate [OPTIONS] session PID                adopt, then commands from stdin
 *   pctl_actuate [OPTIONS] recover
 *
 * OPTIONS: --mode auto|v2|v1|affinity, --cgroup-root DIR, --group NAME, --state-dir DIR,
 *          --no-dvfs, --fs-root DIR (procfs/sysfs root for the cpuset side; cpufreq goes
 *          through libcpupower, which always uses /sys: test it under unshare -m instead).
 * Session commands, one per line, each answered by one line "ok [...]" or "error: ...":
 *   cpus LIST | get | refresh | freq DOMAIN KHZ | dir | release | quit
 * adopt --hold prints "holding" and waits to be killed (the crash test SIGKILLs it).
 * Exit codes: 0 ok, 1 an actuator call failed, 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/actuator.h"
#include "pctl/cpumask.h"
#include "pctl/cpuset.h"
#include "pctl/fsio.h"
#include "pctl/util.h"

static void usage(FILE *f)
{
        fputs(
            "Usage: pctl_actuate [--mode auto|v2|v1|affinity] [--cgroup-root DIR] [--group NAME]\n"
            "                    [--state-dir DIR] [--no-dvfs] [--fs-root DIR]\n"
            "                    probe | open | recover | adopt PID [--cpus LIST] [--hold]\n"
            "                    | session PID\n",
            f);
}

static int parse_pid(const char *s, pid_t *out)
{
        int v;

        if (parse_int(s, &v) < 0 || v <= 0) {
                fprintf(stderr, "pctl_actuate: PID must be a positive number (got '%s')\n", s);
                return -EINVAL;
        }
        *out = v;
        return 0;
}

static int parse_cpus(const char *s, struct cpumask *out)
{
        if (cpumask_parse(s, out) < 0) {
                fprintf(stderr, "pctl_actuate: --cpus: '%s' is not a CPU list like 0-3,8\n", s);
                return -EINVAL;
        }
        return 0;
}

static int do_probe(const struct actuator_config *cfg)
{
        struct actuator_probe cs, fq;
        int r = actuator_real_ops.probe(cfg, &cs, &fq);

        printf("cpuset: %s: %s\n", cs.available ? "available" : "unavailable", cs.reason);
        printf("cpufreq: %s: %s\n", fq.available ? "available" : "unavailable", fq.reason);
        return r < 0 ? 1 : 0;
}

static int open_actuator(const struct actuator_config *cfg, struct actuator **a)
{
        int r;

        /* What actuator_open does, keeping the struct on failure for its words. */
        *a = calloc(1, sizeof(**a));
        if (!*a)
                return -1;
        (*a)->ops = &actuator_real_ops;
        r = (*a)->ops->open(*a, cfg);
        if (r < 0) {
                fprintf(stderr, "pctl_actuate: cannot open the actuator: %s\n",
                        actuator_strerror(*a, r));
                free(*a);
                return -1;
        }
        printf("mode: %s\n", actuator_mode_name((*a)->mode));
        if ((*a)->can_set_freq)
                printf("dvfs: %u domains\n", (*a)->n_domains);
        else
                printf("dvfs: off: %s\n", (*a)->freq_reason);
        return 0;
}

static int session(struct actuator *a, struct actuator_app *app)
{
        char line[512];

        while (fgets(line, sizeof(line), stdin)) {
                char *cmd = strstrip(line), *arg = strchr(cmd, ' ');
                int r = 0;

                if (arg)
                        *arg++ = '\0';
                if (!strcmp(cmd, "cpus") && arg) {
                        struct cpumask m;

                        if (cpumask_parse(arg, &m) < 0) {
                                printf("error: '%s' is not a CPU list\n", arg);
                                continue;
                        }
                        r = a->ops->set_cpus(a, app, &m);
                        if (r == 0)
                                printf("ok\n");
                } else if (!strcmp(cmd, "get")) {
                        struct cpumask m;
                        char buf[CPUMASK_LIST_MAX];

                        r = a->ops->get_cpus(a, app, &m);
                        if (r == 0) {
                                cpumask_format(&m, buf, sizeof(buf));
                                printf("ok %s\n", buf);
                        }
                } else if (!strcmp(cmd, "refresh")) {
                        r = a->ops->refresh(a, app);
                        if (r == 0)
                                printf("ok\n");
                } else if (!strcmp(cmd, "freq") && arg) {
                        unsigned dom, khz;

                        if (sscanf(arg, "%u %u", &dom, &khz) != 2) {
                                printf("error: freq DOMAIN KHZ\n");
                                continue;
                        }
                        r = a->ops->set_freq(a, dom, khz);
                        if (r == 0)
                                printf("ok\n");
                } else if (!strcmp(cmd, "dir")) {
                        printf("ok %s\n", app ? actuator_real_app_where(app) : "");
                } else if (!strcmp(cmd, "release")) {
                        r = app ? a->ops->release(a, app) : 0;
                        app = NULL;
                        if (r == 0)
                                printf("ok\n");
                } else if (!strcmp(cmd, "quit")) {
                        printf("ok\n");
                        break;
                } else {
                        printf("error: unknown command '%s'\n", cmd);
                        continue;
                }
                if (r < 0)
                        printf("error: %s (%s)\n", actuator_strerror(a, r), strerror(-r));
        }
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
            {"mode", required_argument, NULL, 'm'},
            {"cgroup-root", required_argument, NULL, 'r'},
            {"group", required_argument, NULL, 'g'},
            {"state-dir", required_argument, NULL, 's'},
            {"fs-root", required_argument, NULL, 'f'},
            {"no-dvfs", no_argument, NULL, 'n'},
            {"cpus", required_argument, NULL, 'c'},
            {"hold", no_argument, NULL, 'H'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        struct actuator_config cfg = {.mode = CPUSET_AUTO, .dvfs = true};
        struct cpumask cpus;
        bool has_cpus = false, hold = false;
        struct actuator *a = NULL;
        struct actuator_app *app = NULL;
        const char *cmd;
        pid_t pid = 0;
        int c, r;

        setvbuf(stdout, NULL, _IOLBF, 0);
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'm':
                        if (actuator_mode_parse(optarg, &cfg.mode) < 0) {
                                fprintf(stderr,
                                        "pctl_actuate: --mode must be auto, systemd, v2, v1 or "
                                        "affinity "
                                        "(got '%s')\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'r':
                        cfg.cgroup_root = optarg;
                        break;
                case 'g':
                        cfg.group = optarg;
                        break;
                case 's':
                        cfg.state_dir = optarg;
                        break;
                case 'f':
                        fs_set_root(optarg);
                        break;
                case 'n':
                        cfg.dvfs = false;
                        break;
                case 'c':
                        if (parse_cpus(optarg, &cpus) < 0)
                                return 2;
                        has_cpus = true;
                        break;
                case 'H':
                        hold = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        fprintf(stderr, "pctl_actuate: see --help\n");
                        return 2;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "pctl_actuate: a command is needed (probe, open, recover, adopt, "
                                "session)\n");
                return 2;
        }
        cmd = argv[optind++];
        if (!strcmp(cmd, "probe"))
                return do_probe(&cfg);
        if (!strcmp(cmd, "recover")) {
                struct actuator_recovery rec;

                r = actuator_recover(&cfg, &rec);
                if (r < 0) {
                        fprintf(stderr, "pctl_actuate: recover: %s\n", strerror(-r));
                        return 1;
                }
                for (unsigned i = 0; i < rec.n_skipped && i < ACTUATOR_MAX_SKIPPED; i++)
                        printf("skipped %s:%u: %s\n", rec.record, rec.skipped[i].line,
                               rec.skipped[i].why);
                printf("recovered %d\n", r);
                return 0;
        }
        if (!strcmp(cmd, "open")) {
                if (open_actuator(&cfg, &a) < 0)
                        return 1;
                actuator_close(a);
                return 0;
        }
        if (strcmp(cmd, "adopt") && strcmp(cmd, "session")) {
                fprintf(stderr, "pctl_actuate: unknown command '%s'\n", cmd);
                return 2;
        }
        if (optind >= argc) {
                fprintf(stderr, "pctl_actuate: %s needs a PID\n", cmd);
                return 2;
        }
        if (parse_pid(argv[optind], &pid) < 0)
                return 2;
        if (open_actuator(&cfg, &a) < 0)
                return 1;
        r = a->ops->adopt(a, pid, "app", &app);
        if (r < 0) {
                fprintf(stderr, "pctl_actuate: adopt %d: %s\n", (int)pid, actuator_strerror(a, r));
                actuator_close(a);
                return 1;
        }
        printf("adopted %d dir=%s\n", (int)pid, actuator_real_app_where(app));
        if (!strcmp(cmd, "session")) {
                session(a, app);
                actuator_close(a);
                return 0;
        }
        if (has_cpus) {
                r = a->ops->set_cpus(a, app, &cpus);
                if (r < 0) {
                        fprintf(stderr, "pctl_actuate: set cpus of %d: %s\n", (int)pid,
                                actuator_strerror(a, r));
                        actuator_close(a); /* releases the app: nothing is left behind */
                        return 1;
                }
                printf("cpus set\n");
        }
        if (hold) {
                printf("holding\n");
                for (;;)
                        pause();
        }
        r = a->ops->release(a, app);
        if (r < 0) {
                fprintf(stderr, "pctl_actuate: release %d: %s\n", (int)pid,
                        actuator_strerror(a, r));
                actuator_close(a);
                return 1;
        }
        actuator_close(a);
        return 0;
}
