/* pctld: the pctl daemon. Reads pctl.conf and the policies, restores what a crashed instance
 * left, then samples every interval and decides every decision period on sd-event timers,
 * answering the control socket in between. SIGTERM/SIGINT restore everything and exit 0;
 * SIGHUP reloads the configuration and policies (a bad set is refused, the last good one
 * stays). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "pctl/access.h"
#include "pctl/control.h"
#include "pctl/fsio.h"
#include "pctl/history.h"
#include "pctl/log.h"
#include "pctl/manager.h"
#include "pctl/metrics.h"
#include "pctl/platform_file.h"
#include "pctl/ratelimit.h"
#include "pctl/timegrid.h"
#include "pctl/util.h"

struct daemon {
        const char *config_path;
        const char *platform_override;
        struct config conf;
        struct platform *pf;
        struct manager *mgr;
        sd_event *event;
        sd_event_source *sample_timer, *decide_timer, *sim_timer;
        struct control_server *control;
        uint64_t next_decision_ns;            /* virtual time, for sim: */
        struct metrics_server *metrics;       /* NULL unless metrics_listen is set */
        struct metrics_histogram sample_hist; /* wall time of manager_sample */
        struct history *history;              /* NULL: none, or it could not be used */
        struct ratelimit history_rl;          /* its write failures, logged */
        gid_t users_gid; /* [daemon] users = GROUP: its gid, looked up at start and reload */
};

/* The gid of [daemon] users when it names a group, else (gid_t)-1; a group that does not
 * exist lets nobody in, and the log says so. */
static gid_t users_group(const struct config *conf)
{
        gid_t gid;

        if (strcmp(conf->users, "all") == 0 || strcmp(conf->users, "none") == 0)
                return (gid_t)-1;
        if (access_group_gid(conf->users, &gid) < 0) {
                log_warning("[daemon] users = %s: no such group; only root may make pctld act",
                            conf->users);
                return (gid_t)-1;
        }
        return gid;
}

/* Root may act on any process; another user on their own, where [daemon] users lets them. */
static int may_act(const struct daemon *d, const struct control_request *req, pid_t pid,
                   char *error, size_t error_size)
{
        struct access_peer peer = {
            .uid = req->uid, .gid = req->gid, .groups = req->groups, .n_groups = req->n_groups};
        int r;

        if (req->uid == 0)
                return 0;
        r = access_may_act(d->conf.users, d->users_gid, &peer, req->cmd, error, error_size);
        if (r < 0)
                return r;
        return access_check_owner(pid, req->uid, error, error_size);
}

/* The other frequency manager running, if any: "comm (pid N)" in which. */
static bool other_freq_manager(const struct platform *pf, char *which, size_t size)
{
        struct platform_proc *procs;
        int n;
        bool found;

        if (pf->virtual_time)
                return false;
        procs = malloc(8192 * sizeof(*procs));
        if (!procs)
                return false;
        n = platform_list_procs(pf, procs, 8192);
        found = n > 0 && platform_freq_manager_in(procs, (unsigned)n, which, size);
        free(procs);
        return found;
}

/* Logs every problem of a refused file or set with file:line, or the error itself. */
static void log_problems(struct config_problems *problems, int r, const char *what)
{
        for (size_t i = 0; i < problems->n; i++)
                log_error("%s:%d: %s", problems->v[i].file, problems->v[i].lineno,
                          problems->v[i].what);
        if (!problems->n)
                log_error_errno(r, "Failed to read %s: %m", what);
        config_problems_clear(problems);
}

static int load_config(const char *path, struct config *out)
{
        struct config_problems problems = {0};
        int r;

        config_init(out);
        r = config_load(path, out, &problems);
        if (r == -ENOENT) {
                log_notice("%s does not exist, using the built-in defaults", path);
                config_init(out);
                return 0;
        }
        if (r < 0)
                log_problems(&problems, r, path);
        config_problems_clear(&problems);
        return r;
}

static int load_policies(const char *dir, struct policy_set *out)
{
        struct config_problems problems = {0};
        int r = policy_set_load_dir(dir, out, &problems);

        if (r == -ENOENT) {
                log_notice("%s does not exist: only the built-in policies (edp, ppw, energy, "
                           "performance, monitor)",
                           dir);
                *out = (struct policy_set){0};
                r = 0;
        } else if (r < 0) {
                log_problems(&problems, r, dir);
        }
        config_problems_clear(&problems);
        return r;
}

static void notify_status(struct daemon *d)
{
        char summary[200];

        manager_summary(d->mgr, summary, sizeof(summary));
        sd_notifyf(false, "STATUS=%s", summary);
}

/* One interval's sampling, timed for pctl_sample_duration_seconds. */
static int daemon_sample(struct daemon *d)
{
        uint64_t t0 = now_ns();
        int r = manager_sample(d->mgr);

        metrics_histogram_observe(&d->sample_hist, (now_ns() - t0) / 1e9);
        return r;
}

/* Hands /metrics a snapshot of this interval; scrapes read it from the server's thread. */
static void daemon_publish_metrics(struct daemon *d)
{
        struct metrics_snapshot *snap;

        if (!d->metrics || manager_metrics(d->mgr, &snap) < 0)
                return; /* out of memory: scrapes get the previous interval's */
        snap->sample_duration = d->sample_hist;
        metrics_server_publish(d->metrics, snap);
}

/* Writes the history kept while its file was locked, now that it may be free; never waits. */
static void history_catch_up(struct daemon *d)
{
        char err[700];
        unsigned missed;
        size_t before;

        if (!d->history || !(before = history_pending(d->history)))
                return;
        if (history_flush(d->history, err, sizeof(err)) < 0 &&
            ratelimit_pass(&d->history_rl, now_ns(), &missed))
                log_warning("%s", err);
        if (!history_pending(d->history))
                log_info("history %s is free again: %zu waiting runs recorded",
                         d->conf.history_path, before);
}

/* The next tick of a periodic timer that was due at due_usec: on its grid, after now. Ticks
 * missed while pctld was stopped or starved are skipped, not run back to back. The sample that
 * spans the gap is kept as one long interval: the apps ran in one configuration throughout
 * (only pctld changes it), and every rate is taken over the interval's measured length. */
static int timer_rearm(sd_event_source *s, uint64_t due_usec, unsigned interval_ms,
                       const char *what)
{
        uint64_t now_usec = due_usec, missed, next;

        (void)sd_event_now(sd_event_source_get_event(s), CLOCK_MONOTONIC, &now_usec);
        next = timegrid_next(due_usec, now_usec, interval_ms * 1000ULL, &missed);
        if (missed * interval_ms >= 1000)
                log_notice("%s fell %.1f s behind (pctld was stopped or starved): skipping %llu "
                           "missed ticks",
                           what, (now_usec - due_usec) / 1e6, (unsigned long long)missed);
        else if (missed)
                log_debug("%s: skipping %llu missed ticks", what, (unsigned long long)missed);
        return sd_event_source_set_time(s, next);
}

static int on_sample(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct daemon *d = userdata;
        int r = daemon_sample(d);

        history_catch_up(d);
        daemon_publish_metrics(d);
        if (r < 0)
                log_warning_errno(r, "Sampling failed, trying again next interval: %m");
        return timer_rearm(s, usec, d->conf.interval_ms, "sampling");
}

static int on_decide(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct daemon *d = userdata;

        manager_decide(d->mgr);
        notify_status(d);
        return timer_rearm(s, usec, d->conf.decision_ms, "deciding");
}

/* The model machine runs in virtual time, as fast as the host allows: each tick advances it
 * by a batch of intervals, deciding whenever a decision period of virtual time has passed. */
static int on_sim_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct daemon *d = userdata;
        uint64_t interval_ns = d->conf.interval_ms * NSEC_PER_MSEC;

        for (int i = 0; i < 100; i++) {
                int r = platform_advance(d->pf, interval_ns);

                if (r < 0)
                        return log_error_errno(r, "The model machine failed: %m");
                daemon_sample(d);
                if (platform_now_ns(d->pf) >= d->next_decision_ns) {
                        manager_decide(d->mgr);
                        d->next_decision_ns += d->conf.decision_ms * NSEC_PER_MSEC;
                }
        }
        daemon_publish_metrics(d);
        notify_status(d);
        return sd_event_source_set_time(s, usec + 1000);
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        (void)userdata;
        log_info("%s: restoring everything and exiting", strsignal((int)si->ssi_signo));
        sd_notify(false, "STOPPING=1");
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The keys a reload cannot apply: the platform, socket, cgroup, record and power model are
 * set up once, at start. A changed one refuses the whole reload, naming it. */
static const struct restart_key {
        const char *name;
        size_t offset, size;
        bool string;
} restart_keys[] = {
#define KEY(k, str)                                                                                \
        {                                                                                          \
#k, offsetof(struct config, k), sizeof(((struct config *)0)->k), str               \
        }
    KEY(platform, true),     KEY(socket, true),         KEY(cgroup_root, true),
    KEY(cgroup_group, true), KEY(state_dir, true),      KEY(platform_file, true),
    KEY(dvfs, false),        KEY(metrics_listen, true), KEY(cpuset_mode, false),
#undef KEY
};

static bool restart_key_changed(const struct restart_key *k, const struct config *a,
                                const struct config *b)
{
        const char *x = (const char *)a + k->offset, *y = (const char *)b + k->offset;

        return k->string ? strcmp(x, y) != 0 : memcmp(x, y, k->size) != 0;
}

/* The names of the keys that changed and need a restart, comma-separated, into buf. */
static size_t restart_keys_changed(const struct config *a, const struct config *b, char *buf,
                                   size_t size)
{
        size_t off = 0;

        for (size_t i = 0; i < ARRAY_SIZE(restart_keys) + 1 && off < size; i++) {
                bool changed = i < ARRAY_SIZE(restart_keys)
                                   ? restart_key_changed(&restart_keys[i], a, b)
                                   : !power_decl_same(&a->power, &b->power);
                const char *name = i < ARRAY_SIZE(restart_keys) ? restart_keys[i].name : "[power]";

                if (changed)
                        off +=
                            (size_t)snprintf(buf + off, size - off, "%s%s", off ? ", " : "", name);
        }
        return off;
}

/* Every key of pctl.conf is applied or the reload is refused with the reason: interval_ms,
 * decision_ms (the timers read them), reserved_cpus, default_policy and policies_dir (the
 * manager) apply at once. */
static int daemon_reload(struct daemon *d, char *err, size_t err_size)
{
        struct config conf;
        struct policy_set set = {0};
        size_t off = 0;
        int r;

        sd_notify(false, "RELOADING=1");
        if (load_config(d->config_path, &conf) < 0) {
                snprintf(err, err_size, "%s is bad (see the log); keeping the last good one",
                         d->config_path);
                goto refuse;
        }
        if (d->platform_override)
                (void)strscpy(conf.platform, d->platform_override, sizeof(conf.platform));
        off = restart_keys_changed(&d->conf, &conf, err, err_size);
        if (off) {
                if (off < err_size)
                        snprintf(err + off, err_size - off,
                                 " changed in %s: that needs a restart of pctld; keeping the "
                                 "running configuration",
                                 d->config_path);
                goto refuse;
        }
        if (load_policies(conf.policies_dir, &set) < 0) {
                snprintf(err, err_size,
                         "the policies in %s are bad (see the log); keeping the last good set",
                         conf.policies_dir);
                goto refuse;
        }
        r = manager_reconfigure(d->mgr, &conf, &set, err, err_size);
        if (r < 0) {
                policy_set_free(&set);
                if (strlen(err) + 40 < err_size)
                        strcat(err, "; keeping the running configuration");
                goto refuse;
        }
        d->conf = conf;
        d->users_gid = users_group(&d->conf);
        log_info("reloaded %s and %s", d->config_path, conf.policies_dir);
        sd_notify(false, "READY=1");
        return 0;
refuse:
        sd_notify(false, "READY=1");
        return -EINVAL;
}

static int on_hup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        char err[256];

        (void)s;
        (void)si;
        if (daemon_reload(userdata, err, sizeof(err)) < 0)
                log_error("reload refused: %s", err);
        return 0;
}

static int cmd_status(void *userdata, const struct control_request *req, struct json_object *reply,
                      char *error, size_t error_size)
{
        struct daemon *d = userdata;

        (void)error;
        (void)error_size;
        /* A user reads what is theirs: the machine, and their own apps. */
        if (req->uid == 0)
                manager_status(d->mgr, reply);
        else
                manager_status_for(d->mgr, req->uid, reply);
        return 0;
}

static int request_pid(const struct control_request *req, pid_t *pid, char *error, size_t size)
{
        int64_t v;
        int r = control_request_int(req, "pid", 1, 4194304, &v, error, size);

        /* 4194304 is the kernel's PID_MAX_LIMIT. */
        if (r == -ENOENT || r == -ERANGE)
                snprintf(error, size, "\"pid\" must be a process id (1..4194304)");
        if (r < 0)
                return -EINVAL;
        *pid = (pid_t)v;
        return 0;
}

/* "policy" is optional; when given it must be a policy name, as `pctl --policy` checks. */
static int request_policy(const struct control_request *req, const char **policy, char *error,
                          size_t size)
{
        char shown[4 * 64 + 1];
        int r = control_request_string(req, "policy", policy, error, size);

        if (r == -ENOENT) {
                *policy = NULL;
                return 0;
        }
        if (r < 0)
                return r;
        if (!config_name_valid(*policy)) {
                control_escape(*policy, strlen(*policy), shown, sizeof(shown));
                snprintf(error, size, "\"policy\": '%s' is not a policy name", shown);
                return -EINVAL;
        }
        return 0;
}

static int cmd_adopt(void *userdata, const struct control_request *req, struct json_object *reply,
                     char *error, size_t error_size)
{
        struct daemon *d = userdata;
        const char *policy, *exec_name, *job;
        struct manager_owner owner = {.uid = 0, .max_apps = UINT_MAX};
        char shown[3 * MANAGER_JOB_MAX];
        pid_t pid;
        int r;

        r = request_pid(req, &pid, error, error_size);
        if (r < 0)
                return r;
        r = request_policy(req, &policy, error, error_size);
        if (r < 0)
                return r;
        r = may_act(d, req, pid, error, error_size);
        if (r < 0)
                return r;
        /* "job": the batch job the process belongs to (the Slurm plugin sends its job id);
         * optional, checked before anything changes. */
        r = control_request_string(req, "job", &job, error, error_size);
        if (r == -ENOENT)
                job = NULL;
        else if (r < 0)
                return r;
        if (job && !manager_job_valid(job)) {
                control_escape(job, strlen(job), shown, sizeof(shown));
                snprintf(error, error_size,
                         "\"job\": '%s' is not a job tag (1 to %d printable characters without "
                         "spaces)",
                         shown, MANAGER_JOB_MAX);
                return -EINVAL;
        }
        /* "exec": what `pctl run`'s child is about to run; optional. */
        r = control_request_string(req, "exec", &exec_name, error, error_size);
        if (r == -ENOENT)
                exec_name = NULL;
        else if (r < 0)
                return r;
        /* A user's own request counts against [daemon] max_user_apps; root's does not, and the
         * app is its process's user's (root adopts for them: the Slurm plugin) for reading. */
        if (req->uid != 0)
                owner = (struct manager_owner){.uid = req->uid, .max_apps = d->conf.max_user_apps};
        else if (access_proc_uid(pid, &owner.uid) < 0)
                owner.uid = 0; /* gone, or a model machine's app: adopting says which */
        r = manager_adopt_owned(d->mgr, pid, policy, exec_name, &owner, error, error_size);
        if (r < 0)
                return r;
        if (job)
                (void)manager_set_job(d->mgr, pid, job, error, error_size); /* checked above */
        json_object_object_add(reply, "pid", json_object_new_int64(pid));
        return 0;
}

static int cmd_release(void *userdata, const struct control_request *req, struct json_object *reply,
                       char *error, size_t error_size)
{
        struct daemon *d = userdata;
        pid_t pid;
        int r;

        r = request_pid(req, &pid, error, error_size);
        if (r < 0)
                return r;
        r = may_act(d, req, pid, error, error_size);
        if (r < 0)
                return r;
        r = manager_release(d->mgr, pid, error, error_size);
        if (r < 0)
                return r;
        json_object_object_add(reply, "pid", json_object_new_int64(pid));
        return 0;
}

/* "wall_ns" and "cpu_ns" are optional, together: what the command's parent measured of it
 * (pctl run), which completes the run's figures. A day of CPU on 4096 CPUs is the bound. */
static int request_totals(const struct control_request *req, struct manager_run_totals *t,
                          bool *have, char *error, size_t size)
{
        const int64_t max_ns = 4096LL * 86400 * 1000000000LL;
        int64_t wall_ns, cpu_ns;
        int rw, rc;

        /* Each refusal keeps the member's own message (its type, its range). */
        rw = control_request_int(req, "wall_ns", 0, max_ns, &wall_ns, error, size);
        if (rw < 0 && rw != -ENOENT)
                return -EINVAL;
        rc = control_request_int(req, "cpu_ns", 0, max_ns, &cpu_ns, error, size);
        if (rc < 0 && rc != -ENOENT)
                return -EINVAL;
        if (rw == -ENOENT && rc == -ENOENT) {
                *have = false;
                return 0;
        }
        if (rw == -ENOENT || rc == -ENOENT) {
                snprintf(error, size, "\"wall_ns\" and \"cpu_ns\" come together (got only \"%s\")",
                         rw == -ENOENT ? "cpu_ns" : "wall_ns");
                return -EINVAL;
        }
        *t = (struct manager_run_totals){.wall_s = wall_ns * 1e-9, .cpu_s = cpu_ns * 1e-9};
        *have = true;
        return 0;
}

static int cmd_report(void *userdata, const struct control_request *req, struct json_object *reply,
                      char *error, size_t error_size)
{
        struct daemon *d = userdata;
        struct manager_run_totals totals;
        bool have;
        uid_t owner;
        pid_t pid;
        int r;

        r = request_pid(req, &pid, error, error_size);
        if (r < 0)
                return r;
        r = request_totals(req, &totals, &have, error, error_size);
        if (r < 0)
                return r;
        /* A run's report is its user's (and root's): what it ran, how fast, its energy. Its
         * totals complete the run's history, so only they may send them too. */
        if (req->uid != 0 && manager_app_owner(d->mgr, pid, &owner) == 0 && owner != req->uid) {
                snprintf(error, error_size,
                         "the report of pid %d is not yours: it is uid %u's run, you are uid %u",
                         (int)pid, (unsigned)owner, (unsigned)req->uid);
                return -EPERM;
        }
        return manager_report(d->mgr, pid, have ? &totals : NULL, reply, error, error_size);
}

static int cmd_reload(void *userdata, const struct control_request *req, struct json_object *reply,
                      char *error, size_t error_size)
{
        (void)req;
        (void)reply;
        return daemon_reload(userdata, error, error_size);
}

static const struct control_command control_commands[] = {
    /* adopt and release judge the caller themselves (may_act): a user, their own processes. */
    {"status", false, cmd_status}, {"adopt", false, cmd_adopt},   {"release", false, cmd_release},
    {"reload", true, cmd_reload},  {"report", false, cmd_report}, {NULL, false, NULL},
};

static void usage(FILE *f)
{
        fputs("Usage: pctld [--config FILE] [--foreground] "
              "[--platform auto|likwid|perf|software|sim:SCENARIO]\n"
              "See pctld(8).\n",
              f);
}

static int parse_args(int argc, char **argv, struct daemon *d, bool *foreground)
{
        static const struct option opts[] = {
            {"config", required_argument, NULL, 'c'},   {"foreground", no_argument, NULL, 'f'},
            {"platform", required_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'},
            {"version", no_argument, NULL, 'V'},        {},
        };
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        d->config_path = optarg;
                        break;
                case 'f':
                        *foreground = true;
                        break;
                case 'p':
                        d->platform_override = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 1;
                case 'V':
                        printf("pctld %s\n", PCTL_VERSION);
                        return 1;
                default:
                        fprintf(stderr, "pctld: unknown or incomplete option '%s'\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pctld: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

/* Calibration's facts: the single-core IPC, the ΔI rate and a measured power model. A missing
 * or corrupt file is reported and the defaults are used: pctld still works, only less well. */
static void load_platform_file(const struct daemon *d, struct manager_options *mo)
{
        struct platform_profile prof;
        char err[400];
        int r = platform_file_load(d->conf.platform_file, &prof, err, sizeof(err));

        if (r == -ENOENT) {
                log_notice("no calibration at %s (run pctl calibrate): using the estimator's "
                           "defaults",
                           d->conf.platform_file);
                snprintf(mo->calibration, sizeof(mo->calibration), "none (%s missing)",
                         d->conf.platform_file);
                return;
        }
        if (r < 0) {
                log_warning("ignoring the calibration: %s; using the estimator's defaults", err);
                snprintf(mo->calibration, sizeof(mo->calibration), "ignored: %s", err);
                return;
        }
        mo->ipc1 = prof.ipc1;
        mo->delta_i_rate = prof.delta_i_rate;
        mo->delta_i_alpha = prof.delta_i_alpha;
        if (prof.power.n_points) {
                mo->power = prof.power;
                mo->have_power = true;
                mo->power_source = "calibrated";
        }
        snprintf(mo->calibration, sizeof(mo->calibration), "%s (%s, %s)", d->conf.platform_file,
                 prof.date[0] ? prof.date : "undated", prof.backend);
        log_info("calibration %s: ipc1 %s, ΔI rate %s, power model %s", d->conf.platform_file,
                 prof.ipc1 > 0 ? "measured" : "unknown",
                 isfinite(prof.delta_i_rate) ? "measured" : "unknown",
                 prof.power.n_points ? "measured" : "none");
}

/* pctl history: a file that cannot be used (corrupt, locked, from a newer pctl) is reported
 * and pctld runs on without it; a read-only one still starts returning apps. */
static void open_history(struct daemon *d, struct manager_options *mo)
{
        char err[700];
        int r;

        if (!d->conf.history_path[0]) {
                log_info("history off ([daemon] history_path = off): every app learns afresh");
                return;
        }
        r = history_open(d->conf.history_path, false, &d->history, err, sizeof(err));
        if (r < 0) {
                log_warning("%s; running without memory of past runs", err);
                return;
        }
        if (history_read_only(d->history))
                log_warning("history %s is read-only: past runs are used, this one's are not "
                            "recorded",
                            d->conf.history_path);
        else
                log_info("history %s: returning apps start at their best configuration",
                         d->conf.history_path);
        /* The loop never waits for the file: a locked one keeps the runs in memory. */
        history_set_deferred(d->history, true);
        d->history_rl = RATELIMIT_INIT(60 * NSEC_PER_SEC, 1);
        mo->history = d->history;
}

/* At the end, writes may wait a little (HISTORY_BUSY_TIMEOUT_MS each) rather than be lost. */
static void history_finish(struct daemon *d)
{
        char err[700];

        if (!d->history)
                return;
        history_set_deferred(d->history, false);
        if (history_flush(d->history, err, sizeof(err)) < 0)
                log_warning("%s", err);
}

static int setup_power(const struct daemon *d, struct manager_options *mo)
{
        const unsigned *freqs;
        unsigned n = platform_freqs(d->pf, &freqs);
        /* Without DVFS there is one frequency, unknown in kHz: the declared point stands for
         * it and predictions never ask for another. */
        unsigned top_khz = n ? freqs[n - 1] : 1;

        /* A calibrated model was measured here: it beats one declared from a spec sheet. */
        if (!d->conf.has_power || mo->have_power)
                return 0;
        if (power_decl_to_model(&d->conf.power, top_khz, &mo->power) < 0)
                return log_error_errno(-EINVAL, "[power] needs static_w and core_w");
        mo->have_power = true;
        mo->power_source = "declared";
        return 0;
}

/* Undoes what a crashed pctld left, saying which lines of its record could not be read: those
 * stay in the record, for an operator, and the rest is restored. */
static void recover_previous(const struct actuator_config *cfg)
{
        struct actuator_recovery rec;
        int r = actuator_recover(cfg, &rec);

        if (r < 0) {
                log_warning_errno(r,
                                  "Failed to restore what a previous pctld left in %s, "
                                  "carrying on: %m",
                                  cfg->state_dir);
                return;
        }
        for (unsigned i = 0; i < rec.n_skipped && i < ACTUATOR_MAX_SKIPPED; i++)
                log_warning("%s:%u: '%s': %s; skipped, kept in the record", rec.record,
                            rec.skipped[i].line, rec.skipped[i].text, rec.skipped[i].why);
        if (rec.n_skipped > ACTUATOR_MAX_SKIPPED)
                log_warning("%s: %u more lines skipped", rec.record,
                            rec.n_skipped - ACTUATOR_MAX_SKIPPED);
        if (rec.kept)
                log_warning_errno(rec.kept_err,
                                  "%s: %u changes cannot be undone now (the first: %m); kept "
                                  "for the next start",
                                  rec.record, rec.kept);
        if (r > 0)
                log_notice("restored %d changes a previous pctld left behind", r);
}

int main(int argc, char **argv)
{
        struct daemon d = {.config_path = PCTL_SYSCONFDIR "/pctl.conf"};
        struct manager_options mo = {.delta_i_rate = NAN};
        struct platform_options po = {0};
        struct policy_set set = {0};
        bool foreground = false;
        char why[512], which[64];
        sigset_t mask;
        int r, listen_fd = -1;

        r = parse_args(argc, argv, &d, &foreground);
        if (r != 0)
                return r > 0 ? 0 : 2;
        log_set_ident("pctld");
        if (!foreground && getenv("JOURNAL_STREAM"))
                log_set_target(LOG_TARGET_JOURNAL);
        if (load_config(d.config_path, &d.conf) < 0)
                return 2;
        if (d.platform_override)
                (void)strscpy(d.conf.platform, d.platform_override, sizeof(d.conf.platform));
        if (load_policies(d.conf.policies_dir, &set) < 0)
                return 2;
        if (policy_check_default(&set, d.conf.default_policy, d.conf.policies_dir, why,
                                 sizeof(why)) < 0) {
                log_error("%s: %s", d.config_path, why);
                policy_set_free(&set);
                return 2;
        }

        po.spec = d.conf.platform;
        po.actuator = (struct actuator_config){
            .mode = (enum cpuset_mode)d.conf.cpuset_mode,
            .cgroup_root = d.conf.cgroup_root,
            .group = d.conf.cgroup_group,
            .state_dir = d.conf.state_dir,
            .dvfs = d.conf.dvfs != CONFIG_DVFS_OFF,
        };
        if (mkdir(d.conf.state_dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Failed to create %s: %m", d.conf.state_dir), 1;
        /* The socket is for everyone to ask status; the directory must let them reach it. */
        chmod(d.conf.state_dir, 0755);
        if (strncmp(po.spec, "sim:", 4) != 0)
                recover_previous(&po.actuator);
        r = platform_open(&po, &d.pf, why, sizeof(why));
        if (r < 0) {
                log_error("cannot start: %s", why);
                return 1;
        }
        log_info("platform %s: sensor %s (%s), cpusets by %s", d.pf->name, d.pf->sensor_ops->name,
                 d.pf->sensor_why,
                 (const char *[]){"auto", "cgroup v2", "cgroup v1", "affinity",
                                  "systemd units"}[d.pf->actuator->mode]);
        if (d.pf->actuator->mode_reason[0])
                log_info("cpusets: %s", d.pf->actuator->mode_reason);

        mo.conf = d.conf;
        mo.platform = d.pf;
        mo.dvfs = platform_dvfs_choice(
            d.conf.dvfs, d.pf->actuator->can_set_freq, d.pf->actuator->freq_reason,
            d.conf.dvfs == CONFIG_DVFS_AUTO && d.pf->actuator->can_set_freq &&
                    other_freq_manager(d.pf, which, sizeof(which))
                ? which
                : NULL,
            d.config_path, mo.dvfs_why, sizeof(mo.dvfs_why));
        if (!mo.dvfs)
                log_notice("not changing CPU frequencies: %s", mo.dvfs_why);
        d.users_gid = users_group(&d.conf);
        load_platform_file(&d, &mo);
        open_history(&d, &mo);
        if (setup_power(&d, &mo) < 0)
                goto out_platform;
        if (!mo.have_power && !d.pf->sensor->has_energy)
                log_notice("no power figure (no RAPL, no [power] in %s): energy objectives run "
                           "for performance within their bounds",
                           d.config_path);
        r = manager_new(&mo, &set, &d.mgr);
        if (r < 0) {
                log_error_errno(r, "Failed to start the manager: %m");
                goto out_platform;
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        r = sd_event_default(&d.event);
        if (r < 0)
                goto out_manager;
        sd_event_add_signal(d.event, NULL, SIGTERM, on_exit_signal, &d);
        sd_event_add_signal(d.event, NULL, SIGINT, on_exit_signal, &d);
        sd_event_add_signal(d.event, NULL, SIGHUP, on_hup, &d);
        sd_event_set_watchdog(d.event, true); /* WATCHDOG=1 when the unit has WatchdogSec= */
        if (d.pf->virtual_time) {
                d.next_decision_ns = platform_now_ns(d.pf) + d.conf.decision_ms * NSEC_PER_MSEC;
                r = sd_event_add_time_relative(d.event, &d.sim_timer, CLOCK_MONOTONIC, 1000, 0,
                                               on_sim_tick, &d);
        } else {
                r = sd_event_add_time_relative(d.event, &d.sample_timer, CLOCK_MONOTONIC,
                                               d.conf.interval_ms * 1000ULL, 1000, on_sample, &d);
                if (r >= 0)
                        r = sd_event_add_time_relative(d.event, &d.decide_timer, CLOCK_MONOTONIC,
                                                       d.conf.decision_ms * 1000ULL, 1000,
                                                       on_decide, &d);
        }
        if (r >= 0) {
                sd_event_source_set_enabled(d.sim_timer ? d.sim_timer : d.sample_timer,
                                            SD_EVENT_ON);
                if (d.decide_timer)
                        sd_event_source_set_enabled(d.decide_timer, SD_EVENT_ON);
        }
        if (r < 0) {
                log_error_errno(r, "Failed to set up timers: %m");
                goto out_event;
        }
        if (sd_listen_fds(1) == 1)
                listen_fd = SD_LISTEN_FDS_START;
        r = control_server_new(d.event, d.conf.socket, listen_fd, control_commands, &d, &d.control);
        if (r < 0) {
                log_error_errno(r, "Failed to listen on %s: %m", d.conf.socket);
                goto out_event;
        }
        /* After the signals are blocked: the server's thread inherits the mask, so SIGTERM
         * and SIGHUP still reach the signalfd. */
        if (d.conf.metrics_listen[0]) {
                r = metrics_server_new(d.conf.metrics_listen, 1, &d.metrics, why, sizeof(why));
                if (r < 0) {
                        log_error("%s", why);
                        goto out_control;
                }
                daemon_publish_metrics(&d);
                log_info("serving Prometheus metrics on http://%s/metrics", d.conf.metrics_listen);
        }
        log_info("ready: sampling every %u ms, deciding every %u ms, socket %s", d.conf.interval_ms,
                 d.conf.decision_ms, d.conf.socket);
        sd_notify(false, "READY=1");
        notify_status(&d);
        r = sd_event_loop(d.event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        sd_notify(false, "STOPPING=1");

out_control:
        metrics_server_free(d.metrics);
        control_server_free(d.control);
out_event:
        sd_event_source_disable_unref(d.sample_timer);
        sd_event_source_disable_unref(d.decide_timer);
        sd_event_source_disable_unref(d.sim_timer);
        sd_event_unref(d.event);
out_manager:
        history_finish(&d);
        manager_free(d.mgr); /* gives every app back */
out_platform:
        platform_close(d.pf); /* restores cpusets and frequencies, clears the record */
        if (d.history && history_pending(d.history))
                log_warning("history %s stayed locked: %zu run%s not recorded", d.conf.history_path,
                            history_pending(d.history),
                            history_pending(d.history) == 1 ? " was" : "s were");
        history_close(d.history); /* after the manager, which records the apps it releases */
        policy_set_free(&set);
        return r < 0 ? 1 : 0;
}
