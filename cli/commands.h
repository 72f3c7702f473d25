/* One function per `pctl` command, each in its own cli/cmd_*.c. argv[0] is the command name. */
#pragma once

int cmd_model(int argc, char **argv);
int cmd_sensors(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_run(int argc, char **argv);
/* The lines of `pctl run`'s summary that say where the command ran, on stderr, from pctld's
 * run report (any JSON object): its configurations, the packages and why it lay spread. */
struct json_object;
void run_report_where(struct json_object *rep);
int cmd_adopt(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_stack(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_extrapolate(int argc, char **argv);
/* pctl policy reload: asks pctld to reload pctl.conf and the policies (cmd_policy_reload.c). */
int cmd_policy_reload(int argc, char **argv);

struct config;
/* Loads pctl.conf for a client command: `config` (--config) when given, else the installed
 * file, whose absence means the defaults. Problems are printed under `who` ("pctl status").
 * *path says which file was meant. 0 or -errno. */
int cli_config_read(const char *config, const char *who, struct config *conf, const char **path);

/* Exit codes, as pctl(1) documents them. */
enum {
        EXIT_OK = 0,
        EXIT_FAILURE_RUN = 1, /* the command ran and failed (a backend, the daemon, the system) */
        EXIT_USAGE = 2,       /* bad command line or input file */
};
