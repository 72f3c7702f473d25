/* Logging: once, at the layer that decides. To the journal when pctld runs under systemd,
 * else to stderr. The *_errno variants set errno for %m and return -|err|. */
#pragma once

#include <syslog.h>

enum log_target { LOG_TARGET_STDERR, LOG_TARGET_JOURNAL };

void log_set_target(enum log_target target);
void log_set_max_level(int level);
void log_set_ident(const char *ident);
int log_get_max_level(void);

int log_internal(int level, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* An event of one managed app. In the journal it also carries PCTL_APP=, PCTL_PID= and
 * PCTL_POLICY=, so that `journalctl PCTL_PID=1234` follows one app. */
int log_app_internal(int level, const char *app, int pid, const char *policy, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A structured journal field beyond those: name as the journal wants it (upper case, digits and
 * '_', not starting with '_'), value one line. */
struct log_field {
        const char *name;
        const char *value;
};
#define LOG_FIELDS_MAX 4

/* The same with up to LOG_FIELDS_MAX more fields (more are left out); on stderr only the
 * message shows. */
int log_app_fields_internal(int level, const char *app, int pid, const char *policy,
                            const struct log_field *fields, unsigned n_fields, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

#define log_app_info(app, pid, policy, ...)                                                        \
        log_app_internal(LOG_INFO, (app), (pid), (policy), __VA_ARGS__)
#define log_app_info_fields(app, pid, policy, fields, n_fields, ...)                               \
        log_app_fields_internal(LOG_INFO, (app), (pid), (policy), (fields), (n_fields), __VA_ARGS__)

#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_error_errno(err, ...) log_internal(LOG_ERR, (err), __VA_ARGS__)
#define log_warning_errno(err, ...) log_internal(LOG_WARNING, (err), __VA_ARGS__)
#define log_debug_errno(err, ...) log_internal(LOG_DEBUG, (err), __VA_ARGS__)
