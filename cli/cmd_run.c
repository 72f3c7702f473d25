/* pctl run: runs a command under pctld from its first instruction, and says what its run
 * was (speedup, P, configurations, energy) when it ends. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "commands.h"
#include "pctl/manager.h"
#include "pctl/procstat.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

static double timeval_s(struct timeval tv)
{
        return tv.tv_sec + tv.tv_usec / 1e6;
}

static double monotonic_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A figure of the report as "%.Nf", or "unknown". */
static const char *report_fmt(struct json_object *o, const char *key, const char *fmt, char *buf,
                              size_t size)
{
        double v;

        if (o && reply_number(o, key, &v))
                snprintf(buf, size, fmt, v);
        else
                snprintf(buf, size, "unknown");
        return buf;
}

/* How the command ended, as pctl run measured it itself. */
struct run_result {
        const char *cmd;
        int status;         /* from wait4 */
        int exec_errno;     /* 0: CMD ran; else why it could not be executed */
        double wall_s;      /* from the go signal to the exit */
        struct rusage ru;   /* CMD and its waited-for children */
        double own_cpu_s;   /* CMD's own threads, what pctld measures; NaN: unknown */
        double child_cpu_s; /* its waited-for children, which pctld does not see; NaN: unknown */
};

/* The exit status pctl run gives back: the command's own, 128 + N when signal N killed it (as
 * the shell reports it), 127 when it was not found and 126 when it could not be executed (as
 * the shell and time(1) do). */
static int run_exit_status(const struct run_result *r)
{
        if (r->exec_errno)
                return r->exec_errno == ENOENT ? 127 : 126;
        if (WIFSIGNALED(r->status))
                return 128 + WTERMSIG(r->status);
        return WEXITSTATUS(r->status);
}

/* The CPU time of an exited, not yet reaped, process: its own threads' (utime + stime of
 * /proc/PID/stat) and its waited-for children's (cutime + cstime). 0 or -errno. */
static int zombie_cpu(pid_t pid, double *own_s, double *children_s)
{
        char path[32], buf[1024];
        uint64_t ut, st, cut, cst;
        long hz = sysconf(_SC_CLK_TCK);
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0 || hz <= 0)
                return -EIO;
        buf[n] = '\0';
        if (procstat_field_u64(buf, 14, &ut) < 0 || procstat_field_u64(buf, 15, &st) < 0 ||
            procstat_field_u64(buf, 16, &cut) < 0 || procstat_field_u64(buf, 17, &cst) < 0)
                return -EIO;
        *own_s = (double)(ut + st) / hz;
        *children_s = (double)(cut + cst) / hz;
        return 0;
}

/* The energy's source as the summary says it: only "measured" was measured; "declared" is
 * pctl.conf's [power], "model" platform.ini's calibrated one. */
static const char *energy_source_text(const char *src, char *buf, size_t size)
{
        if (strcmp(src, "measured") == 0)
                snprintf(buf, size, "measured");
        else if (strcmp(src, "declared") == 0)
                snprintf(buf, size, "not measured: from the power model declared in pctl.conf");
        else if (strcmp(src, "model") == 0)
                snprintf(buf, size, "not measured: from the calibrated power model");
        else
                snprintf(buf, size, "not measured: %s", src);
        return buf;
}

/* The packages the command ran on (n_pkgs of them, as text; -1: not an array), and why it lay
 * spread at its end, as `pctl status` says it. Nothing from a pctld that does not give them;
 * "unknown" where it gives null: a CPU whose package it could not read. */
static void run_summary_packages(struct json_object *rep, int n_pkgs, const char *pkgs)
{
        struct json_object *v = NULL;
        const char *why;

        if (n_pkgs > 0)
                fprintf(stderr, "  packages %s\n", pkgs);
        else if (json_object_object_get_ex(rep, "packages", &v) && !v)
                fprintf(stderr, "  packages unknown (a CPU it ran on has no package pctld could "
                                "read)\n");
        if (n_pkgs >= 2 && (why = reply_string(rep, "spread_reason")))
                fprintf(stderr, "           at its end: %s\n", why);
}

void run_report_where(struct json_object *rep)
{
        struct json_object *configs = NULL;
        char pkgs[256];
        int n_pkgs;

        /* Each configuration's packages only where the run spanned several: on one, the
         * packages line says it once. */
        n_pkgs = reply_packages(rep, "packages", pkgs, sizeof(pkgs));
        if (json_object_object_get_ex(rep, "configs", &configs) &&
            json_object_is_type(configs, json_type_array)) {
                size_t n = json_object_array_length(configs);

                for (size_t i = 0; i < n; i++) {
                        struct json_object *c = json_object_array_get_idx(configs, i);
                        double cores, mhz, sec = 0, merged;
                        char cpkgs[256];
                        int nc;

                        reply_number(c, "s", &sec);
                        /* A slot pctld merged several configurations into when it had no
                         * room left: what they did not share is null. */
                        if (reply_number(c, "cores", &cores))
                                fprintf(stderr, "  %-8s %.0f core%s", i ? "" : "ran at", cores,
                                        plural_s(textfmt_rounded(cores)));
                        else
                                fprintf(stderr, "  %-8s several core counts", i ? "" : "ran at");
                        if (reply_number(c, "freq_mhz", &mhz))
                                fprintf(stderr, " at %.0f MHz", mhz);
                        if (n_pkgs >= 2 &&
                            (nc = reply_packages(c, "packages", cpkgs, sizeof(cpkgs))) > 0)
                                fprintf(stderr, " on package%s %s", plural_s(nc), cpkgs);
                        fprintf(stderr, " for %.2f s", sec);
                        if (reply_number(c, "merged", &merged))
                                fprintf(stderr, " (%.0f configuration%s together)", merged,
                                        plural_s(textfmt_rounded(merged)));
                        fputc('\n', stderr);
                }
        }
        run_summary_packages(rep, n_pkgs, pkgs);
}

/* Above this share of the command's CPU time, its children's work is worth a warning. */
#define RUN_CHILDREN_SHARE 0.1

/* What the command moved at its package's memory per instruction, where the sensor measures
 * the traffic; nothing from a pctld that does not say. */
static void run_report_memory(struct json_object *rep)
{
        struct json_object *flag = NULL;
        char why[512];
        double bpi;

        if (!json_object_object_get_ex(rep, "mem_traffic", &flag) ||
            !json_object_is_type(flag, json_type_boolean))
                return;
        if (!json_object_get_boolean(flag))
                fprintf(stderr, "  memory   traffic: %s\n",
                        reply_not_measured(rep, "mem_traffic_reason", why, sizeof(why)));
        else if (reply_number(rep, "mem_bytes_per_instr", &bpi))
                fprintf(stderr, "  memory   %.2f bytes per instruction\n", bpi);
        else
                fprintf(stderr, "  memory   bytes per instruction unknown (not told apart from "
                                "its neighbours' in pctld's samples)\n");
}

static void run_summary_human(const struct run_result *r, struct json_object *rep,
                              const char *rep_err)
{
        double user_s = timeval_s(r->ru.ru_utime), sys_s = timeval_s(r->ru.ru_stime), v, seen, conf,
               cpu_s = user_s + sys_s;
        const char *note, *src;
        char b1[64], b2[96];
        bool completed;

        if (r->exec_errno)
                fprintf(stderr, "pctl run: %s could not be run (%s): exit status %d\n", r->cmd,
                        strerror(r->exec_errno), run_exit_status(r));
        else if (WIFSIGNALED(r->status))
                fprintf(stderr, "pctl run: %s was killed by signal %d (%s): exit status %d\n",
                        r->cmd, WTERMSIG(r->status), strsignal(WTERMSIG(r->status)),
                        run_exit_status(r));
        else
                fprintf(stderr, "pctl run: %s exited with status %d\n", r->cmd,
                        WEXITSTATUS(r->status));
        fprintf(stderr,
                "  wall     %.2f s\n  CPU      %.2f s (user %.2f s, sys %.2f s), %.2f "
                "CPU s per wall s\n",
                r->wall_s, cpu_s, user_s, sys_s, r->wall_s > 0 ? cpu_s / r->wall_s : 0);
        if (!rep) {
                fprintf(stderr, "  pctld    no report: %s\n", rep_err);
                return;
        }
        fprintf(stderr, "  speedup  %s over the run",
                report_fmt(rep, "speedup_run", "%.3f", b1, sizeof(b1)));
        if (reply_number(rep, "seen_s", &seen) && reply_number(rep, "managed_s", &v))
                fprintf(stderr, " (pctld's samples cover %.2f s; it managed it %.2f s)", seen, v);
        fprintf(stderr, "\n  P        run %s", report_fmt(rep, "p_run", "%.3f", b1, sizeof(b1)));
        completed = reply_number(rep, "completed_s", &v) && reply_number(rep, "p_run_seen", &conf);
        if (!completed && reply_number(rep, "p_run_confidence", &conf) &&
            reply_number(rep, "seen_s", &seen) && reply_number(rep, "managed_s", &v))
                fprintf(stderr, " (±%.3f for the %.2f s pctld did not see)", conf,
                        fmax(v - seen, 0));
        fprintf(stderr, ", last phase %s\n", report_fmt(rep, "p_est", "%.3f", b2, sizeof(b2)));
        if (completed)
                fprintf(stderr,
                        "           (the %.2f s pctld did not see: from the CPU time above; %.3f "
                        "over what it saw)\n",
                        v, conf);
        if ((note = reply_string(rep, "speedup_note")))
                fprintf(stderr, "           (%s)\n", note);
        /* pctld measures the command with the child processes its main thread started (the
         * software sensor follows them): said, with what it cannot follow. */
        if (isfinite(r->child_cpu_s) && r->child_cpu_s > RUN_CHILDREN_SHARE * cpu_s &&
            r->child_cpu_s >= 0.05)
                fprintf(stderr,
                        "           (%.2f s of the %.2f s CPU were %s's child processes, measured "
                        "with it: those its main thread started and their own)\n",
                        r->child_cpu_s, cpu_s, r->cmd);
        if ((src = reply_string(rep, "energy_source")) && reply_number(rep, "energy_j", &v))
                fprintf(stderr, "  energy   %.1f J (%s), EDP %s J·s\n", v,
                        energy_source_text(src, b2, sizeof(b2)),
                        report_fmt(rep, "edp_js", "%.3g", b1, sizeof(b1)));
        else
                fprintf(stderr, "  energy   unknown (pctld has no energy figure for it: no RAPL "
                                "and no power model, or no sample of it), EDP unknown\n");
        run_report_memory(rep);
        run_report_where(rep);
        if (reply_number(rep, "gain_pct", &v))
                fprintf(stderr, "  gain     %.1f %% against the default (%s)\n", v,
                        reply_text(rep, "gain_note", "no note"));
        else
                fprintf(stderr, "  gain     %s\n", reply_text(rep, "gain_note", "unknown"));
}

static struct json_object *json_finite(double v)
{
        return isfinite(v) ? json_object_new_double(v) : NULL;
}

/* One JSON object on stderr: the command's status and times, and pctld's report (null, with
 * report_error, when it has none). */
static void run_summary_json(const struct run_result *r, struct json_object *rep,
                             const char *rep_err)
{
        struct json_object *j = json_object_new_object();
        double user_s = timeval_s(r->ru.ru_utime), sys_s = timeval_s(r->ru.ru_stime);
        bool ran = !r->exec_errno;

        json_object_object_add(j, "command", json_object_new_string(r->cmd));
        json_object_object_add(
            j, "exit_status",
            ran && WIFEXITED(r->status) ? json_object_new_int(WEXITSTATUS(r->status)) : NULL);
        json_object_object_add(
            j, "signal",
            ran && WIFSIGNALED(r->status) ? json_object_new_int(WTERMSIG(r->status)) : NULL);
        json_object_object_add(j, "exec_error",
                               ran ? NULL : json_object_new_string(strerror(r->exec_errno)));
        json_object_object_add(j, "pctl_exit_status", json_object_new_int(run_exit_status(r)));
        json_object_object_add(j, "wall_s", json_object_new_double(r->wall_s));
        json_object_object_add(j, "cpu_s", json_object_new_double(user_s + sys_s));
        json_object_object_add(j, "user_s", json_object_new_double(user_s));
        json_object_object_add(j, "sys_s", json_object_new_double(sys_s));
        json_object_object_add(j, "own_cpu_s", json_finite(r->own_cpu_s));
        json_object_object_add(j, "children_cpu_s", json_finite(r->child_cpu_s));
        json_object_object_add(j, "pctld", rep ? json_object_get(rep) : NULL);
        json_object_object_add(j, "report_error", rep ? NULL : json_object_new_string(rep_err));
        fprintf(stderr, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
        json_object_put(j);
}

/* Asks pctld for its report on the command that just ended; it keeps one for a minute. A
 * command that could not be executed has nothing to report. */
static void run_summary(struct client_args *a, pid_t child, const struct run_result *r)
{
        struct json_object *rep = NULL;
        char request[128], *text = NULL;
        const char *err = "pctld did not answer (see the message above)";
        struct client_args quiet = *a;
        double cpu_s = timeval_s(r->ru.ru_utime) + timeval_s(r->ru.ru_stime);

        /* What pctl run measured of the command completes pctld's figures with the part of
         * the run it did not see (the exit's partial interval). */
        snprintf(request, sizeof(request),
                 "{\"cmd\":\"report\",\"pid\":%d,\"wall_ns\":%.0f,\"cpu_ns\":%.0f}", (int)child,
                 fmax(r->wall_s, 0) * 1e9, fmax(cpu_s, 0) * 1e9);
        quiet.json = false;
        if (r->exec_errno)
                err = "the command could not be run: nothing ran to report on";
        else if (client_call(&quiet, "run", request, &rep, &text) != EXIT_OK)
                rep = NULL;
        if (a->json)
                run_summary_json(r, rep, err);
        else
                run_summary_human(r, rep, err);
        json_object_put(rep);
        free(text);
}

/* SIGTERM and SIGHUP to pctl run go on to the command, which decides; pctl run waits for it
 * and reports as usual. */
static volatile sig_atomic_t run_child_pid;

static void run_forward(int sig)
{
        int saved = errno;

        if (run_child_pid > 0)
                kill((pid_t)run_child_pid, sig);
        errno = saved;
}

/* The child waits until pctld has it, so the command's first instruction already runs
 * where the policy puts it; then it becomes the command. */
static int run_cmd(struct client_args *a, int argc, char **argv)
{
        struct sigaction fwd = {.sa_handler = run_forward, .sa_flags = SA_RESTART};
        struct run_result res = {.cmd = argv[a->first_arg], .own_cpu_s = NAN, .child_cpu_s = NAN};
        int go[2], ex[2], r;
        pid_t child;
        char byte = 0;
        double start_s;
        siginfo_t info;
        ssize_t n;

        if (a->first_arg >= argc) {
                fprintf(stderr, "pctl run: a command is required after --\n");
                return EXIT_USAGE;
        }
        /* go: the parent's signal to exec; ex: the exec's errno back (closed on success). */
        if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0) {
                fprintf(stderr, "pctl run: pipe: %s\n", strerror(errno));
                return EXIT_FAILURE_RUN;
        }
        child = fork();
        if (child < 0) {
                fprintf(stderr, "pctl run: fork: %s\n", strerror(errno));
                return EXIT_FAILURE_RUN;
        }
        if (child == 0) {
                int e;

                close(go[1]);
                close(ex[0]);
                if (read(go[0], &byte, 1) != 1)
                        _exit(127); /* the parent gave up */
                /* The command runs as the caller, never with privileges pctl was given
                 * (a setuid or setgid install): the real ids are who asked. */
                if ((getegid() != getgid() && setresgid(getgid(), getgid(), getgid()) < 0) ||
                    (geteuid() != getuid() && setresuid(getuid(), getuid(), getuid()) < 0))
                        _exit(126);
                execvp(argv[a->first_arg], argv + a->first_arg);
                e = errno;
                if (write(ex[1], &e, sizeof(e)) != (ssize_t)sizeof(e))
                        fprintf(stderr, "pctl run: cannot run %s: %s\n", argv[a->first_arg],
                                strerror(e));
                _exit(e == ENOENT ? 127 : 126);
        }
        close(go[0]);
        close(ex[1]);
        r = send_pid(a, "run", "adopt", child, argv[a->first_arg]);
        if (r != EXIT_OK) {
                fprintf(stderr, "pctl run: %s was not started\n", argv[a->first_arg]);
                close(go[1]);
                close(ex[0]);
                waitpid(child, NULL, 0);
                return r;
        }
        start_s = monotonic_s();
        if (write(go[1], &byte, 1) != 1) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                return EXIT_FAILURE_RUN;
        }
        close(go[1]);
        /* Ctrl-C goes to the command (same process group); we wait for it either way. */
        run_child_pid = child;
        signal(SIGINT, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        sigaction(SIGTERM, &fwd, NULL);
        sigaction(SIGHUP, &fwd, NULL);
        /* Nothing to read once the exec closed the pipe; an errno when it failed. */
        while ((n = read(ex[0], &res.exec_errno, sizeof(res.exec_errno))) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t)sizeof(res.exec_errno))
                res.exec_errno = 0;
        close(ex[0]);
        /* The summary says it too; with --quiet or --json this is the message. */
        if (res.exec_errno && (a->quiet || a->json))
                fprintf(stderr, "pctl run: cannot run %s: %s\n", res.cmd, strerror(res.exec_errno));
        /* Exited but not reaped: its own CPU time apart from its children's. */
        while (waitid(P_PID, child, &info, WEXITED | WNOWAIT) < 0)
                if (errno != EINTR)
                        return EXIT_FAILURE_RUN;
        if (zombie_cpu(child, &res.own_cpu_s, &res.child_cpu_s) < 0)
                res.own_cpu_s = res.child_cpu_s = NAN;
        while (wait4(child, &res.status, 0, &res.ru) < 0)
                if (errno != EINTR)
                        return EXIT_FAILURE_RUN;
        res.wall_s = monotonic_s() - start_s;
        if (!a->quiet)
                run_summary(a, child, &res);
        return run_exit_status(&res);
}

int cmd_run(int argc, char **argv)
{
        return client_main(argc, argv, run_cmd);
}
