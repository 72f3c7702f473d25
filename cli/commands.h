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
int cmd_adopt(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_stack(int argc, char **argv);
/* pctl policy reload: asks pctld to reload pctl.conf and the policies (cmd_daemon.c). */
int cmd_policy_reload(int argc, char **argv);

/* Exit codes, as pctl(1) documents them. */
enum {
        EXIT_OK = 0,
        EXIT_FAILURE_RUN = 1, /* the command ran and failed (a backend, the daemon, the system) */
        EXIT_USAGE = 2,       /* bad command line or input file */
};
