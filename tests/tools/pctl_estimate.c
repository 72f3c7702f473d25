/* Runs a command under a sensor backend and the estimator, and prints the app's estimate when
 * it exits: the real-machine check of the estimator (tests/integration/test_estimator_*.sh).
 *
 *   pctl_estimate --cpus LIST [--backend NAME] [--interval-ms MS] [--skip K] [--json]
 *                 -- CMD [ARG...]
 *
 * The command's process is the sensor target; its CPUs are LIST (the command must keep to
 * them, e.g. pbench --cpus). The first K intervals (start-up) and the partial last one are
 * not fed to the estimator. The command's stdout goes to our stderr. Exit: 0 with an estimate of P,
 * 1 ran but no P or the command failed, 2 bad usage. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pctl/estimator.h"
#include "pctl/jsonfmt.h"
#include "pctl/sensor.h"
#include "pctl/util.h"

struct options {
        const char *backend;
        struct cpumask cpus;
        unsigned interval_ms;
        unsigned skip;
        bool json;
};

static void usage(FILE *f)
{
        fputs("Usage: pctl_estimate --cpus LIST [--backend NAME] [--interval-ms MS] [--skip K]\n"
              "                     [--json] -- CMD [ARG...]\n",
              f);
}

static int parse_args(int argc, char **argv, struct options *o)
{
        static const struct option opts[] = {
            {"cpus", required_argument, NULL, 'c'},
            {"backend", required_argument, NULL, 'b'},
            {"interval-ms", required_argument, NULL, 'i'},
            {"skip", required_argument, NULL, 's'},
            {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        int c;

        *o = (struct options){.backend = "software", .interval_ms = 200, .skip = 1};
        cpumask_zero(&o->cpus);
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        if (cpumask_parse(optarg, &o->cpus) < 0 || cpumask_empty(&o->cpus)) {
                                fprintf(stderr, "pctl_estimate: --cpus '%s' is not a CPU list\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'b':
                        o->backend = optarg;
                        break;
                case 'i':
                        if (parse_uint(optarg, &o->interval_ms) < 0 || o->interval_ms < 10) {
                                fprintf(stderr,
                                        "pctl_estimate: --interval-ms must be >= 10 (got %s)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 's':
                        if (parse_uint(optarg, &o->skip) < 0) {
                                fprintf(stderr, "pctl_estimate: --skip must be a count (got %s)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'j':
                        o->json = true;
                        break;
                case 'h':
                        usage(stdout);
                        exit(0);
                default:
                        return -EINVAL;
                }
        }
        if (cpumask_empty(&o->cpus)) {
                fprintf(stderr, "pctl_estimate: --cpus is required\n");
                return -EINVAL;
        }
        if (optind >= argc) {
                fprintf(stderr, "pctl_estimate: no command after --\n");
                return -EINVAL;
        }
        return optind;
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static void print_estimate(const struct estimate *e, unsigned fed, bool json)
{
        if (json) {
                struct json_object *j = json_object_new_object();

                json_object_object_add(j, "intervals", json_object_new_uint64(fed));
                json_object_object_add(j, "n_cores", json_object_new_uint64(e->n_cores));
                json_object_object_add(j, "p_est", jsonfmt_double(e->p_ls));
                json_object_object_add(j, "p_eq10", jsonfmt_double(e->p_eq10));
                json_object_object_add(j, "p_stderr", jsonfmt_double(e->p_stderr));
                json_object_object_add(j, "p_points", jsonfmt_double(e->p_points));
                json_object_object_add(j, "phase_changes",
                                       json_object_new_uint64(e->phase_changes));
                json_object_object_add(j, "speedup", jsonfmt_double(e->speedup));
                json_object_object_add(
                    j, "speedup_source",
                    jsonfmt_string(estimate_speedup_source_name(e->speedup_source)));
                json_object_object_add(j, "ipc", jsonfmt_double(e->ipc));
                json_object_object_add(j, "power_w", jsonfmt_double(e->power_w));
                jsonfmt_print(stdout, j, false);
                json_object_put(j);
                return;
        }
        printf("intervals %u, N %u: P (least squares) %.4f, P (eq. 10) %.4f, stderr %.4f, "
               "speedup %.4f (%s), phase changes %u\n",
               fed, e->n_cores, e->p_ls, e->p_eq10, e->p_stderr, e->speedup,
               estimate_speedup_source_name(e->speedup_source), e->phase_changes);
}

int main(int argc, char **argv)
{
        struct options o;
        const struct sensor_ops *ops;
        struct sensor_config scfg = {0};
        struct sensor *sensor = NULL;
        struct sensor_sample sample = {0};
        struct estimator *est = NULL;
        struct estimator_app_view view;
        const struct estimate *e;
        int first = parse_args(argc, argv, &o), go[2], status = 0, r, rc = 1;
        unsigned n = 0, fed = 0;
        pid_t pid;

        if (first < 0)
                return 2;
        ops = sensor_find(o.backend);
        if (!ops) {
                fprintf(stderr, "pctl_estimate: --backend '%s' is not a sensor backend\n",
                        o.backend);
                return 2;
        }
        scfg.cpus = o.cpus;
        r = sensor_open(ops, &scfg, &sensor);
        if (r < 0) {
                fprintf(stderr, "pctl_estimate: cannot open the %s sensor: %s\n", o.backend,
                        strerror(-r));
                return 1;
        }
        est = estimator_new(NULL);
        if (!est || estimator_app_add(est, 1) < 0 || pipe(go) < 0) {
                fprintf(stderr, "pctl_estimate: out of memory\n");
                goto out;
        }
        fflush(stdout);
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "pctl_estimate: fork: %m\n");
                goto out;
        }
        if (pid == 0) {
                char c;

                /* Start only once the parent watches this process. */
                close(go[1]);
                if (read(go[0], &c, 1) != 1)
                        _exit(127);
                close(go[0]);
                /* Our stdout carries the estimate alone. */
                dup2(STDERR_FILENO, STDOUT_FILENO);
                execvp(argv[first], &argv[first]);
                fprintf(stderr, "pctl_estimate: cannot run %s: %m\n", argv[first]);
                _exit(127);
        }
        close(go[0]);
        r = sensor_set_targets(sensor,
                               &(struct sensor_target){.kind = SENSOR_TARGET_PID, .pid = pid}, 1);
        if (r >= 0)
                r = sensor_read(sensor, &sample); /* the baseline */
        if (r < 0) {
                fprintf(stderr, "pctl_estimate: cannot watch PID %d: %s\n", (int)pid, strerror(-r));
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                goto out;
        }
        if (write(go[1], "g", 1) != 1) {
                fprintf(stderr, "pctl_estimate: cannot start the command: %m\n");
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                goto out;
        }
        close(go[1]);
        view = (struct estimator_app_view){.id = 1, .cpus = o.cpus, .target = 0};
        for (;;) {
                pid_t w;

                sleep_ms(o.interval_ms);
                r = sensor_read(sensor, &sample);
                w = waitpid(pid, &status, WNOHANG);
                if (w == pid)
                        break; /* the last interval is partial: not fed */
                if (r < 0) {
                        fprintf(stderr, "pctl_estimate: sensor read failed: %s\n", strerror(-r));
                        kill(pid, SIGKILL);
                        waitpid(pid, &status, 0);
                        goto out;
                }
                if (n++ < o.skip)
                        continue;
                r = estimator_update(est, &sample, &view, 1);
                if (r < 0) {
                        fprintf(stderr, "pctl_estimate: estimator update failed: %s\n",
                                strerror(-r));
                        kill(pid, SIGKILL);
                        waitpid(pid, &status, 0);
                        goto out;
                }
                fed++;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "pctl_estimate: %s failed (status %d)\n", argv[first], status);
                goto out;
        }
        e = estimator_get(est, 1);
        print_estimate(e, fed, o.json);
        if (!(e->known & ESTIMATE_P_LS))
                fprintf(stderr, "pctl_estimate: no estimate of P after %u intervals\n", fed);
        else
                rc = 0;
out:
        sensor_sample_free(&sample);
        estimator_free(est);
        sensor_close(sensor);
        return rc;
}
