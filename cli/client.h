/* What the commands that talk to pctld over its socket share (cli/client.c): status, run,
 * adopt, release and policy reload parse the same options and send one request each. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct json_object;

struct client_args {
        const char *socket;
        const char *config;
        const char *policy;
        const char *job; /* adopt: the batch job the process belongs to */
        bool json;
        bool quiet;     /* run: no summary */
        bool watch;     /* status: redraw every watch_s */
        double watch_s; /* 0: not given */
        unsigned count; /* status --watch: frames, 0 for until interrupted */
        int first_arg;  /* optind after the options */
};

/* Parses the options of argv[0]'s command into a client_args and runs fn with them: its exit
 * code, EXIT_USAGE for bad options, EXIT_OK after --help. */
int client_main(int argc, char **argv, int (*fn)(struct client_args *, int, char **));
/* Sends the request; on success *reply holds the parsed {"ok":true,...} object and *text (if
 * not NULL) its text. Otherwise says why on stderr under `pctl CMD`: an exit code. */
int client_call(const struct client_args *a, const char *cmd, const char *request,
                struct json_object **reply, char **text);
/* A member of the reply: NULL or false when absent, null, or of another type. */
const char *reply_string(struct json_object *o, const char *key);
/* reply_string for printing: shown (e.g. "unknown", "-") when the member is not a string, so
 * that a reply of an older or foreign pctld never puts a NULL through %s. */
const char *reply_text(struct json_object *o, const char *key, const char *shown);
/* Why a figure is not measured, from the member `key`, for "memory    traffic: %s": "not
 * measured (REASON)", or REASON alone where it says so itself ("software: not measured
 * (...)"), so that a line never says it twice; "not measured (the sensor does not say why)"
 * without one. Written into buf (size bytes), which it returns. */
const char *reply_not_measured(struct json_object *o, const char *key, char *buf, size_t size);
bool reply_number(struct json_object *o, const char *key, double *out);
/* A member that is an array of package numbers ("packages": [0, 1]) as text, "0,1" (runs of
 * three or more as ranges, "0-3"), and how many there are; -1 with buf untouched where it is
 * anything else: absent, null (pctld does not know them), or not all package numbers. */
int reply_packages(struct json_object *o, const char *key, char *buf, size_t size);
/* The command's one PID argument (cmd names it in messages): an exit code. */
int pid_request(struct client_args *a, const char *cmd, int argc, char **argv, pid_t *pid);
/* Sends {"cmd": cmd, "pid": pid, ...} with the options' policy and job; who: the command the
 * user typed, which the messages name (`pctl run` sends an adopt); exec_name: what the
 * process is about to run (pctl run), or NULL. An exit code. */
int send_pid(struct client_args *a, const char *who, const char *cmd, pid_t pid,
             const char *exec_name);
