/* pctl stack: the speedup stack of any process, per interval and in total (docs/stack.md). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "pctl/fsio.h"
#include "pctl/jsonfmt.h"
#include "pctl/stack.h"
#include "pctl/textfmt.h"
#include "pctl/threadstate.h"
#include "pctl/util.h"

#define BAR_WIDTH 50
/* The environment variable that chooses the backend when --backend does not (e.g. proc, to
 * see what a machine without BPF would show). */
#define STACK_BACKEND_ENV "PCTL_THREADSTATE"

struct stack_args {
        pid_t pid;
        unsigned interval_ms;
        unsigned count;
        const char *backend; /* NULL: auto */
        const char *plot;
        bool json;
};

/* One character per component in the bar; the speedup is '#'. */
static const char bar_chars[STACK_COMPONENTS] = {
    [STACK_SEQUENTIAL] = 'S',   [STACK_SYNC] = 'L',     [STACK_YIELD] = 'Y',
    [STACK_IMBALANCE] = 'I',    [STACK_RUNQUEUE] = 'R', [STACK_IO] = 'O',
    [STACK_INTERFERENCE] = 'X', [STACK_MEMORY] = 'M',   [STACK_UNEXPLAINED] = '?',
};

static void stack_usage(FILE *f)
{
        fputs("Usage: pctl stack PID [--interval MS] [--count K] [--backend auto|ebpf|proc]\n"
              "                  [--plot FILE.svg] [--json]\n",
              f);
}

static int bad(const char *opt, const char *value, const char *why)
{
        fprintf(stderr, "pctl stack: %s '%s' %s\n", opt, value, why);
        return -EINVAL;
}

static int stack_parse(int argc, char **argv, struct stack_args *a)
{
        static const struct option opts[] = {
            {"interval", required_argument, NULL, 'i'},
            {"count", required_argument, NULL, 'n'},
            {"backend", required_argument, NULL, 'b'},
            {"plot", required_argument, NULL, 'p'},
            {"json", no_argument, NULL, 'j'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        int c, pid;

        *a = (struct stack_args){.interval_ms = 1000, .count = 5};
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'i':
                        if (parse_uint(optarg, &a->interval_ms) < 0 || a->interval_ms < 10 ||
                            a->interval_ms > 3600000)
                                return bad("--interval", optarg,
                                           "is not a number of ms from 10 to 3600000");
                        break;
                case 'n':
                        if (parse_uint(optarg, &a->count) < 0 || a->count < 1 || a->count > 100000)
                                return bad("--count", optarg, "is not a count from 1 to 100000");
                        break;
                case 'b':
                        if (strcmp(optarg, "auto") != 0 && strcmp(optarg, "ebpf") != 0 &&
                            !threadstate_find(optarg))
                                return bad("--backend", optarg,
                                           "is not a thread-state backend (auto, ebpf, proc)");
                        a->backend = strcmp(optarg, "auto") == 0 ? NULL : optarg;
                        break;
                case 'p':
                        a->plot = optarg;
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'h':
                        stack_usage(stdout);
                        return 1;
                case ':':
                        fprintf(stderr, "pctl stack: %s needs a value\n", argv[optind - 1]);
                        return -EINVAL;
                default:
                        fprintf(stderr, "pctl stack: unknown option '%s'\n", argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "pctl stack: which process? Give its PID\n");
                return -EINVAL;
        }
        if (parse_int(argv[optind], &pid) < 0 || pid <= 0)
                return bad("PID", argv[optind], "is not a process id");
        a->pid = pid;
        if (optind + 1 < argc) {
                fprintf(stderr, "pctl stack: unexpected argument '%s'\n", argv[optind + 1]);
                return -EINVAL;
        }
        if (a->plot) {
                size_t len = strlen(a->plot);

                if (len < 5 || strcmp(a->plot + len - 4, ".svg") != 0)
                        return bad("--plot", a->plot, "is not a FILE.svg");
        }
        return 0;
}

/* The backend --backend or PCTL_THREADSTATE names, else the best available. Exit code on
 * failure. */
static int stack_backend(const char *name, const struct threadstate_ops **ops)
{
        const char *from = "--backend";
        char why[1200];

        if (!name) {
                name = getenv(STACK_BACKEND_ENV);
                from = STACK_BACKEND_ENV;
                if (name && (!name[0] || strcmp(name, "auto") == 0))
                        name = NULL;
        }
        if (!name) {
                if (threadstate_pick_auto(ops, why, sizeof(why)) < 0) {
                        fprintf(stderr, "pctl stack: %s\n", why);
                        return EXIT_FAILURE_RUN;
                }
                fprintf(stderr, "pctl stack: thread states from %s\n", why);
                return EXIT_OK;
        }
        *ops = threadstate_find(name);
        if (!*ops) {
                if (strcmp(name, "ebpf") == 0) {
                        fprintf(stderr,
                                "pctl stack: %s=ebpf: this pctl was built without the eBPF "
                                "backend (clang, bpftool, libbpf or kernel BTF were missing)\n",
                                from);
                        return EXIT_FAILURE_RUN;
                }
                fprintf(stderr,
                        "pctl stack: %s='%s' is not a thread-state backend (auto, ebpf, proc)\n",
                        from, name);
                return EXIT_USAGE;
        }
        {
                struct threadstate_probe p = {0};

                (*ops)->probe(NULL, &p);
                if (!p.available) {
                        fprintf(stderr, "pctl stack: the %s backend (%s) is not available: %s\n",
                                name, from, p.reason);
                        return EXIT_FAILURE_RUN;
                }
        }
        fprintf(stderr, "pctl stack: thread states from %s (as %s says)\n", name, from);
        return EXIT_OK;
}

static void sleep_until(uint64_t deadline_ns)
{
        struct timespec ts = {.tv_sec = (time_t)(deadline_ns / NSEC_PER_SEC),
                              .tv_nsec = (long)(deadline_ns % NSEC_PER_SEC)};

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static void process_name(pid_t pid, char *name, size_t size)
{
        char path[64], raw[64];
        ssize_t len;

        if (fs_path(path, sizeof(path), "/proc/%d/comm", (int)pid) < 0 ||
            (len = file_read(path, raw, sizeof(raw))) < 0) {
                snprintf(name, size, "?");
                return;
        }
        /* A process names itself: never print it raw. */
        strescape(name, size, raw, (size_t)len);
}

static void bar_print(const struct stack *s)
{
        char bar[BAR_WIDTH + 1];
        double cum = s->speedup;
        int at = (int)lround(cum * BAR_WIDTH / s->cores);

        memset(bar, '#', (size_t)at);
        for (unsigned c = 0; c < STACK_COMPONENTS; c++) {
                int to;

                if (!stack_has(s, c))
                        continue;
                cum += s->component[c];
                to = (int)lround(cum * BAR_WIDTH / s->cores);
                if (to > BAR_WIDTH)
                        to = BAR_WIDTH;
                if (to > at)
                        memset(bar + at, bar_chars[c], (size_t)(to - at));
                at = to > at ? to : at;
        }
        if (at < BAR_WIDTH)
                memset(bar + at, ' ', (size_t)(BAR_WIDTH - at));
        bar[BAR_WIDTH] = '\0';
        printf("|%s|", bar);
}

static void stack_print_line(const char *label, const struct stack *s)
{
        enum stack_component big;

        printf("%-9s ", label);
        if (!s->known) {
                printf("unknown (too little data: no thread ran, or under 1 ms)\n");
                return;
        }
        bar_print(s);
        printf(" speedup %.2f (N - components %.2f)", s->speedup, stack_speedup_estimated(s));
        big = stack_largest(s);
        if (big != STACK_COMPONENTS)
                printf(", %s %.2f of %g core%s", stack_component_name(big), s->component[big],
                       s->cores, plural_s(s->cores));
        putchar('\n');
}

static void stack_print_total(const struct stack *s)
{
        if (!s->known)
                return;
        printf("\n%-13s %6s\n", "component", "cores");
        printf("%-13s %6.3f\n", "speedup", s->speedup);
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                if (stack_has(s, c))
                        printf("%-13s %6.3f\n", stack_component_name(c), s->component[c]);
                else
                        printf("%-13s %6s  (unknown: not split out of interference)\n",
                               stack_component_name(c), "-");
        printf("%-13s %6.3f\n", "= cores", s->cores);
        printf("%-13s %6.3f  (N - every component but unexplained)\n", "est. speedup",
               stack_speedup_estimated(s));
}

/* The keys issue 12 fixes, in its order; unknown figures are null. */
static void stack_print_json(pid_t pid, const struct stack *s, const char *source)
{
        struct json_object *o = json_object_new_object(), *c = json_object_new_object();

        json_object_object_add(o, "pid", json_object_new_int64(pid));
        json_object_object_add(o, "cores", jsonfmt_double(s->cores));
        json_object_object_add(o, "threads", json_object_new_uint64(s->threads));
        json_object_object_add(o, "speedup", jsonfmt_double(s->speedup));
        json_object_object_add(o, "speedup_estimated", jsonfmt_double(stack_speedup_estimated(s)));
        json_object_object_add(o, "source", jsonfmt_string(source));
        for (unsigned k = 0; k < STACK_COMPONENTS; k++)
                json_object_object_add(c, stack_component_name(k),
                                       jsonfmt_double(stack_has(s, k) ? s->component[k] : NAN));
        json_object_object_add(o, "components", c);
        jsonfmt_print(stdout, o, false);
        json_object_put(o);
}

/* The stacked bars as SVG, by gnuplot: one row per interval and the total. */
static int stack_plot(const char *svg, pid_t pid, const char *name, const struct stack *rows,
                      unsigned n_rows, const struct stack *total)
{
        char data[] = "/tmp/pctl-stack-XXXXXX";
        FILE *f, *gp;
        int fd, status;

        fd = mkstemp(data);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                close(fd);
                unlink(data);
                return -ENOMEM;
        }
        fprintf(f, "label speedup");
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                fprintf(f, " %s", stack_component_name(c));
        fputc('\n', f);
        for (unsigned i = 0; i <= n_rows; i++) {
                const struct stack *s = i < n_rows ? &rows[i] : total;

                if (i < n_rows)
                        fprintf(f, "%u", i + 1);
                else
                        fprintf(f, "total");
                fprintf(f, " %.6f", s->known ? s->speedup : 0.0);
                for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                        fprintf(f, " %.6f", stack_has(s, c) ? s->component[c] : 0.0);
                fputc('\n', f);
        }
        fclose(f);

        gp = popen("gnuplot >/dev/null 2>&1", "w");
        if (!gp) {
                unlink(data);
                return -errno;
        }
        fprintf(gp, "set terminal svg size 900,%u dynamic\n", 160 + 28 * (n_rows + 1));
        fprintf(gp, "set output '%s'\n", svg);
        fprintf(gp, "set title 'Speedup stack of %d (%s), %g core%s' noenhanced\n", (int)pid, name,
                total->cores, plural_s(total->cores));
        fprintf(gp,
                "set style data histograms\nset style histogram rowstacked\n"
                "set style fill solid 0.8 border -1\nset boxwidth 0.7\n"
                "set key outside right\nset xlabel 'interval'\nset ylabel 'cores'\n"
                "set yrange [0:%g]\n",
                total->cores);
        fprintf(gp, "plot '%s' using 2:xtic(1) title columnheader", data);
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                fprintf(gp, ", '' using %u title columnheader", c + 3);
        fputc('\n', gp);
        status = pclose(gp);
        unlink(data);
        if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EIO;
        return 0;
}

/* The CPUs the process's threads may run on, together: the app's cores (N). A thread pinned
 * to one CPU (pbench's main thread) says nothing about the others. 0 when it is gone. */
static unsigned pid_cores(pid_t pid)
{
        char path[64];
        cpu_set_t all, set;
        struct dirent *de;
        DIR *d;

        CPU_ZERO(&all);
        if (fs_path(path, sizeof(path), "/proc/%d/task", (int)pid) < 0 || !(d = opendir(path)))
                return 0;
        while ((de = readdir(d))) {
                int tid;

                if (parse_int(de->d_name, &tid) < 0 || tid <= 0)
                        continue;
                if (sched_getaffinity(tid, sizeof(set), &set) == 0)
                        CPU_OR(&all, &all, &set);
        }
        closedir(d);
        return (unsigned)CPU_COUNT(&all);
}

int cmd_stack(int argc, char **argv)
{
        struct stack_args a;
        const struct threadstate_ops *ops = NULL;
        struct threadstate *ts = NULL;
        struct threadstate_app app = {0}, total = {0};
        struct stack s, sum;
        _cleanup_free_ struct stack *rows = NULL;
        unsigned cores, done = 0;
        char name[64];
        uint64_t next_ns;
        int r, rc = EXIT_OK;

        r = stack_parse(argc, argv, &a);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        if (kill(a.pid, 0) < 0 && errno == ESRCH) {
                fprintf(stderr, "pctl stack: no process %d\n", (int)a.pid);
                return EXIT_USAGE;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "pctl stack: needs root (it reads other processes' "
                                "/proc/PID/task/*/syscall, or attaches eBPF programs)\n");
                return EXIT_FAILURE_RUN;
        }
        if (a.plot && system("command -v gnuplot >/dev/null 2>&1") != 0) {
                fprintf(stderr, "pctl stack: --plot needs gnuplot, which is not installed\n");
                return EXIT_FAILURE_RUN;
        }
        rc = stack_backend(a.backend, &ops);
        if (rc != EXIT_OK)
                return rc;
        process_name(a.pid, name, sizeof(name));
        cores = pid_cores(a.pid);
        if (cores == 0) {
                fprintf(stderr, "pctl stack: no process %d\n", (int)a.pid);
                return EXIT_USAGE;
        }
        rows = calloc(a.count, sizeof(*rows));
        if (!rows) {
                fprintf(stderr, "pctl stack: out of memory\n");
                return EXIT_FAILURE_RUN;
        }
        r = threadstate_open(ops, NULL, &ts);
        if (r < 0) {
                fprintf(stderr, "pctl stack: cannot open the %s backend: %s\n", ops->name,
                        strerror(-r));
                return EXIT_FAILURE_RUN;
        }
        r = threadstate_set_pids(ts, &a.pid, 1);
        if (r < 0) {
                if (r == -ESRCH)
                        fprintf(stderr, "pctl stack: no process %d (it exited)\n", (int)a.pid);
                else
                        fprintf(stderr, "pctl stack: cannot watch process %d with %s: %s\n",
                                (int)a.pid, ops->name, strerror(-r));
                threadstate_close(ts);
                return r == -ESRCH ? EXIT_USAGE : EXIT_FAILURE_RUN;
        }
        if (!a.json) {
                printf("pctl stack: process %d (%s) on %u core%s, thread states from %s\n",
                       (int)a.pid, name, cores, plural_s(cores), ops->source);
                printf("# speedup, S sequential, L sync, Y yield, I imbalance, R runqueue, O io, "
                       "X interference, M memory (where known)\n");
        }
        fflush(stdout);
        next_ns = now_ns();
        for (unsigned k = 0; k < a.count; k++) {
                char label[32];

                next_ns += a.interval_ms * NSEC_PER_MSEC;
                sleep_until(next_ns);
                r = threadstate_read(ts, &app, 1);
                if (r < 0) {
                        fprintf(stderr, "pctl stack: reading thread states (%s) failed: %s\n",
                                ops->name, strerror(-r));
                        rc = EXIT_FAILURE_RUN;
                        break;
                }
                if (app.unwatched) {
                        /* Only the eBPF backend's maps run out (65,536 threads). */
                        fprintf(stderr,
                                "pctl stack: process %d has more threads than the %s backend "
                                "can watch; try --backend proc\n",
                                (int)a.pid, ops->name);
                        rc = EXIT_FAILURE_RUN;
                        break;
                }
                if (threadstate_app_exited(&app)) {
                        fprintf(stderr,
                                "pctl stack: process %d exited during interval %u of %u; the "
                                "total covers the %u before\n",
                                (int)a.pid, k + 1, a.count, done);
                        rc = EXIT_FAILURE_RUN;
                        break;
                }
                stack_compute(&app, cores, NAN, &s);
                rows[done++] = s;
                r = threadstate_app_add(&total, &app);
                if (r < 0) {
                        fprintf(stderr, "pctl stack: out of memory\n");
                        rc = EXIT_FAILURE_RUN;
                        break;
                }
                if (a.json) {
                        stack_print_json(a.pid, &s, ops->source);
                } else {
                        snprintf(label, sizeof(label), "%.1fs",
                                 (double)(k + 1) * a.interval_ms / 1000.0);
                        stack_print_line(label, &s);
                }
                fflush(stdout);
        }
        threadstate_close(ts);
        threadstate_app_free(&app);

        if (done > 0) {
                stack_compute(&total, cores, NAN, &sum);
                if (a.json) {
                        stack_print_json(a.pid, &sum, ops->source);
                } else {
                        stack_print_line("total", &sum);
                        stack_print_total(&sum);
                }
                if (a.plot) {
                        r = stack_plot(a.plot, a.pid, name, rows, done, &sum);
                        if (r < 0) {
                                fprintf(stderr, "pctl stack: --plot %s: gnuplot failed: %s\n",
                                        a.plot, strerror(-r));
                                rc = EXIT_FAILURE_RUN;
                        } else if (!a.json) {
                                printf("plot: %s\n", a.plot);
                        }
                }
        }
        threadstate_app_free(&total);
        return rc;
}
