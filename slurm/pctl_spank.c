/* pctl_spank.so: `srun/sbatch --pctl-policy=NAME` hands a job step's tasks to the node's pctld
 * with that policy, tagged with the job id, and the step ends with one line per node on the
 * job's stderr: energy, EDP, P̂, and the cores and clock the tasks ended at.
 *
 * The tasks are handed over in task_post_fork: slurmstepd calls it as root (adopt needs root)
 * in the parent, once each task's process exists, and no task has exec'd yet (slurmstepd holds
 * them until every task is forked) — so, as with `pctl run`, the program's first instruction
 * already runs where the policy puts it. task_init runs as the user inside the task, where
 * pctld would refuse the request; task_init_privileged runs in the task before its privileges
 * go, which would make the user's process itself wait on pctld.
 *
 * The plugin never fails a job: every error path prints one line and returns success, and the
 * job runs unmanaged. plugstack.conf arguments: socket=PATH (pctld's control socket, default
 * /run/pctl/pctl.sock), timeout_ms=N (how long a call to pctld may take, default 5000). */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <slurm/slurm.h> /* SLURM_BATCH_SCRIPT and the other special step ids */
#include <slurm/spank.h>

#include "pctl/control_client.h"
#include "pctl/step_report.h"
#include "pctl/util.h"

SPANK_PLUGIN(pctl, 1);

#define PCTL_SPANK_DEFAULT_SOCKET "/run/pctl/pctl.sock"
#define PCTL_SPANK_DEFAULT_TIMEOUT_MS 5000
#define PCTL_SPANK_MAX_TASKS 1024 /* per node and step: what it can hand over */
#define PCTL_SPANK_MAX_POLICY 64  /* longer is no policy name; the job runs unmanaged */

/* One slurmstepd runs one step on one node: this is that step's state. */
static struct {
        char socket[108];
        unsigned timeout_ms;
        bool policy_given;
        char policy[PCTL_SPANK_MAX_POLICY + 2]; /* one byte more shows it was too long */
        bool unmanaged;                         /* said why once; the rest runs unmanaged */
        char node[HOST_NAME_MAX + 1];
        char job[32]; /* the job id, the tag pctld shows */
        char who[64]; /* "job 12 step 0", for messages */
        unsigned n_adopted, n_exited;
        pid_t adopted[PCTL_SPANK_MAX_TASKS];
        struct step_report report;
        unsigned n_no_report;
        bool pctld_gone;     /* a call failed short of a reply: the other tasks do not wait too */
        char no_report[512]; /* why pctld had no report on a task, the first time */
} step = {.socket = PCTL_SPANK_DEFAULT_SOCKET, .timeout_ms = PCTL_SPANK_DEFAULT_TIMEOUT_MS};

static int on_policy_option(int val, const char *optarg, int remote)
{
        (void)val;
        (void)remote;
        /* Checked where it is used, on the node, so that a bad name never fails the job. */
        step.policy_given = true;
        snprintf(step.policy, sizeof(step.policy), "%s", optarg ? optarg : "");
        return ESPANK_SUCCESS;
}

static struct spank_option policy_option = {
    "pctl-policy",
    "NAME",
    "Hand the step's tasks to pctld on each node with pctl policy NAME (pctl policy list); the "
    "step ends with pctld's summary on stderr",
    1,
    0,
    on_policy_option};

/* One line on the job's stderr (slurmstepd forwards error-level messages to it). */
#define say(...) slurm_spank_log("pctl: " __VA_ARGS__)

static void parse_args(int ac, char **av)
{
        for (int i = 0; i < ac; i++) {
                unsigned ms;

                if (strncmp(av[i], "socket=", 7) == 0 && av[i][7] == '/' &&
                    strscpy(step.socket, av[i] + 7, sizeof(step.socket)) == 0)
                        continue;
                if (strncmp(av[i], "timeout_ms=", 11) == 0 && parse_uint(av[i] + 11, &ms) == 0 &&
                    ms >= 100 && ms <= 60000) {
                        step.timeout_ms = ms;
                        continue;
                }
                slurm_error("pctl: plugstack.conf: ignoring '%s' (expected socket=/ABSOLUTE/PATH "
                            "of at most %zu bytes or timeout_ms=100..60000)",
                            av[i], sizeof(step.socket) - 1);
        }
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
        /* Registered in every context: srun and sbatch parse it, slurmstepd receives it. */
        if (spank_option_register(sp, &policy_option) != ESPANK_SUCCESS)
                slurm_error("pctl: cannot register --pctl-policy; jobs run unmanaged");
        if (spank_remote(sp))
                parse_args(ac, av);
        return ESPANK_SUCCESS;
}

/* Calls pctld; on success *reply is its {"ok":true,...} object. On failure, why says what
 * went wrong in words for the job's stderr and the result is < 0: -ECONNREFUSED/-ENOENT when
 * no pctld listens, -EPERM when pctld refused the request. */
static int pctld_call(struct json_object *request, struct json_object **reply, char *why,
                      size_t why_size)
{
        const char *text = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
        struct json_object *ok, *err;
        char *raw = NULL;
        int r;

        *reply = NULL;
        r = control_call_timeout(step.socket, text, step.timeout_ms, &raw);
        if (r == -ENOENT || r == -ECONNREFUSED) {
                snprintf(why, why_size, "no pctld on %s (nothing listens on %s)", step.node,
                         step.socket);
                return r;
        }
        if (r < 0) {
                snprintf(why, why_size, "cannot talk to pctld on %s at %s: %s", step.node,
                         step.socket, strerror(-r));
                return r;
        }
        *reply = json_tokener_parse(raw);
        free(raw);
        if (!*reply || !json_object_is_type(*reply, json_type_object)) {
                json_object_put(*reply);
                *reply = NULL;
                snprintf(why, why_size, "pctld on %s sent a reply that is not JSON", step.node);
                return -EBADMSG;
        }
        if (!json_object_object_get_ex(*reply, "ok", &ok) || !json_object_get_boolean(ok)) {
                /* pctld escapes what it echoes: its errors are printable. */
                snprintf(why, why_size, "pctld on %s refused: %s", step.node,
                         json_object_object_get_ex(*reply, "error", &err) &&
                                 json_object_is_type(err, json_type_string)
                             ? json_object_get_string(err)
                             : "no reason given");
                json_object_put(*reply);
                *reply = NULL;
                return -EPERM;
        }
        return 0;
}

/* The job's name for pctld: the job id (array jobs and steps share it). */
static void step_identify(spank_t sp)
{
        uint32_t job_id = 0, step_id = 0;
        const char *kind = NULL;

        if (step.node[0])
                return;
        if (gethostname(step.node, sizeof(step.node)) < 0)
                strscpy(step.node, "?", sizeof(step.node));
        step.node[sizeof(step.node) - 1] = '\0';
        if (spank_get_item(sp, S_JOB_ID, &job_id) == ESPANK_SUCCESS)
                snprintf(step.job, sizeof(step.job), "%u", job_id);
        else
                strscpy(step.job, "unknown", sizeof(step.job));
        if (spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS)
                kind = "unknown";
        else if (step_id == SLURM_BATCH_SCRIPT)
                kind = "batch";
        else if (step_id == SLURM_EXTERN_CONT)
                kind = "extern";
        else if (step_id == SLURM_INTERACTIVE_STEP)
                kind = "interactive";
        if (kind)
                snprintf(step.who, sizeof(step.who), "job %s %s step", step.job, kind);
        else
                snprintf(step.who, sizeof(step.who), "job %s step %u", step.job, step_id);
        step_report_init(&step.report);
}

/* What the task will run, as the kernel will name it: pctld shows that rather than
 * slurmstepd's name, which the process still has before exec. */
static const char *task_exec_name(spank_t sp)
{
        int argc = 0;
        char **argv = NULL;
        const char *slash;

        if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || !argv ||
            !argv[0] || !argv[0][0])
                return NULL;
        slash = strrchr(argv[0], '/');
        return slash && slash[1] ? slash + 1 : argv[0];
}

static bool policy_usable(void)
{
        if (strlen(step.policy) > PCTL_SPANK_MAX_POLICY) {
                say("%s: --pctl-policy: a name of more than %d bytes is no policy name; the "
                    "job runs unmanaged on %s",
                    step.who, PCTL_SPANK_MAX_POLICY, step.node);
                return false;
        }
        if (!step.policy[0]) {
                say("%s: --pctl-policy needs a policy name (pctl policy list); the job runs "
                    "unmanaged on %s",
                    step.who, step.node);
                return false;
        }
        return true;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
        struct json_object *request, *reply = NULL;
        const char *exec_name;
        char why[512];
        pid_t pid = 0;
        int r;

        (void)ac;
        (void)av;
        if (!step.policy_given || step.unmanaged || !spank_remote(sp))
                return ESPANK_SUCCESS;
        step_identify(sp);
        if (!policy_usable()) {
                step.unmanaged = true;
                return ESPANK_SUCCESS;
        }
        if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS || pid <= 0) {
                say("%s: slurmstepd gave no task pid; the job runs unmanaged on %s", step.who,
                    step.node);
                step.unmanaged = true;
                return ESPANK_SUCCESS;
        }
        if (step.n_adopted == PCTL_SPANK_MAX_TASKS) {
                say("%s: more than %d tasks on %s: the rest runs unmanaged", step.who,
                    PCTL_SPANK_MAX_TASKS, step.node);
                step.unmanaged = true;
                return ESPANK_SUCCESS;
        }
        request = json_object_new_object();
        json_object_object_add(request, "cmd", json_object_new_string("adopt"));
        json_object_object_add(request, "pid", json_object_new_int64(pid));
        json_object_object_add(request, "policy", json_object_new_string(step.policy));
        json_object_object_add(request, "job", json_object_new_string(step.job));
        if ((exec_name = task_exec_name(sp))) {
                char comm[16];

                snprintf(comm, sizeof(comm), "%s", exec_name);
                json_object_object_add(request, "exec", json_object_new_string(comm));
        }
        r = pctld_call(request, &reply, why, sizeof(why));
        json_object_put(request);
        json_object_put(reply);
        if (r < 0) {
                /* Said once per node: the other tasks would meet the same. */
                say("%s: %s; %s", step.who, why,
                    step.n_adopted ? "its other tasks there run unmanaged"
                                   : "the job runs unmanaged");
                step.unmanaged = true;
                return ESPANK_SUCCESS;
        }
        step.adopted[step.n_adopted++] = pid;
        return ESPANK_SUCCESS;
}

static bool was_adopted(pid_t pid)
{
        for (unsigned i = 0; i < step.n_adopted; i++)
                if (step.adopted[i] == pid)
                        return true;
        return false;
}

/* The node's line, once every task handed over has exited. */
static void step_summary(void)
{
        char line[512];

        if (step.n_no_report == step.n_exited) {
                say("%s on %s: no summary: %s", step.who, step.node, step.no_report);
                return;
        }
        step_report_format(&step.report, line, sizeof(line));
        if (step.n_no_report)
                say("%s on %s: %s; %u task%s without a report: %s", step.who, step.node, line,
                    step.n_no_report, step.n_no_report == 1 ? "" : "s", step.no_report);
        else
                say("%s on %s: %s", step.who, step.node, line);
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
        struct json_object *request, *reply = NULL;
        char why[512];
        pid_t pid = 0;
        int r;

        (void)ac;
        (void)av;
        if (!step.n_adopted || !spank_remote(sp) ||
            spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS || !was_adopted(pid))
                return ESPANK_SUCCESS;
        request = json_object_new_object();
        json_object_object_add(request, "cmd", json_object_new_string("report"));
        json_object_object_add(request, "pid", json_object_new_int64(pid));
        /* pctld keeps a report for a minute after the task leaves; it may not have noticed
         * yet, and then reports the task as it stands. Once pctld is gone or hangs, the
         * remaining tasks do not each wait timeout_ms for it: slurmstepd ends the step only
         * after this returns. */
        r = step.pctld_gone ? -ECANCELED : pctld_call(request, &reply, why, sizeof(why));
        if (r == -ENOENT || r == -ECONNREFUSED)
                snprintf(why, sizeof(why),
                         "pctld on %s stopped during the job (nothing listens on %s)", step.node,
                         step.socket);
        if (r < 0 && r != -EPERM)
                step.pctld_gone = true;
        if (r < 0 || step_report_add(&step.report, reply) < 0) {
                if (!step.n_no_report++)
                        (void)strscpy(step.no_report,
                                      reply ? "pctld's report is not an object" : why,
                                      sizeof(step.no_report)); /* cut if need be */
        }
        json_object_put(request);
        json_object_put(reply);
        if (++step.n_exited == step.n_adopted)
                step_summary();
        return ESPANK_SUCCESS;
}
