#define _GNU_SOURCE /* vasprintf */

#include "pctl/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

static enum log_target log_target = LOG_TARGET_STDERR;
static int log_max_level = LOG_INFO;
static const char *log_ident = "pctl";

void log_set_target(enum log_target target)
{
        log_target = target;
}
void log_set_max_level(int level)
{
        log_max_level = level;
}
void log_set_ident(const char *ident)
{
        log_ident = ident;
}
int log_get_max_level(void)
{
        return log_max_level;
}

/* "ident: message" on one line of stderr. */
static void log_stderr(const char *fmt, va_list ap)
{
        fprintf(stderr, "%s: ", log_ident);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
}

int log_internal(int level, int err, const char *fmt, ...)
{
        int saved = errno;
        va_list ap;

        err = abs(err);
        if (level > log_max_level)
                return -err;
        if (err)
                errno = err; /* so that %m names it */
        va_start(ap, fmt);
        if (log_target == LOG_TARGET_JOURNAL) {
                sd_journal_printv(level, fmt, ap);
        } else {
                log_stderr(fmt, ap);
        }
        va_end(ap);
        errno = saved;
        return -err;
}

/* One journal entry of an app's event: MESSAGE=, PRIORITY=, the app's fields and the extra
 * ones, sent as one datagram. -errno when out of memory or the journal refused it. */
static int journal_app(int level, const char *msg, const char *app, int pid, const char *policy,
                       const struct log_field *fields, unsigned n_fields)
{
        char *lines[5 + LOG_FIELDS_MAX] = {NULL};
        struct iovec iov[5 + LOG_FIELDS_MAX];
        unsigned n = 0;
        int r = 0;

        if (n_fields > LOG_FIELDS_MAX)
                n_fields = LOG_FIELDS_MAX;
        if (asprintf(&lines[n++], "MESSAGE=%s", msg) < 0 ||
            asprintf(&lines[n++], "PRIORITY=%d", level) < 0 ||
            asprintf(&lines[n++], "PCTL_APP=%s", app ? app : "") < 0 ||
            asprintf(&lines[n++], "PCTL_PID=%d", pid) < 0 ||
            asprintf(&lines[n++], "PCTL_POLICY=%s", policy ? policy : "") < 0) {
                lines[n - 1] = NULL; /* asprintf leaves it undefined on failure */
                r = -ENOMEM;
        }
        for (unsigned k = 0; r == 0 && k < n_fields; k++)
                if (asprintf(&lines[n++], "%s=%s", fields[k].name, fields[k].value) < 0) {
                        lines[n - 1] = NULL;
                        r = -ENOMEM;
                }
        for (unsigned k = 0; r == 0 && k < n; k++)
                iov[k] = (struct iovec){.iov_base = lines[k], .iov_len = strlen(lines[k])};
        if (r == 0)
                r = sd_journal_sendv(iov, (int)n);
        for (unsigned k = 0; k < n; k++)
                free(lines[k]);
        return r;
}

static int log_app_v(int level, const char *app, int pid, const char *policy,
                     const struct log_field *fields, unsigned n_fields, const char *fmt, va_list ap)
{
        int saved = errno;
        char *msg = NULL;
        va_list again;

        if (level > log_max_level)
                return 0;
        va_copy(again, ap);
        if (log_target == LOG_TARGET_JOURNAL && vasprintf(&msg, fmt, ap) >= 0) {
                if (journal_app(level, msg, app, pid, policy, fields, n_fields) == -ENOMEM)
                        sd_journal_print(level, "%s", msg); /* without its fields, not lost */
                free(msg);
        } else if (log_target == LOG_TARGET_JOURNAL) {
                /* No memory for the message: without its fields, but not lost. */
                sd_journal_printv(level, fmt, again);
        } else {
                log_stderr(fmt, again);
        }
        va_end(again);
        errno = saved;
        return 0;
}

int log_app_internal(int level, const char *app, int pid, const char *policy, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_app_v(level, app, pid, policy, NULL, 0, fmt, ap);
        va_end(ap);
        return r;
}

int log_app_fields_internal(int level, const char *app, int pid, const char *policy,
                            const struct log_field *fields, unsigned n_fields, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_app_v(level, app, pid, policy, fields, n_fields, fmt, ap);
        va_end(ap);
        return r;
}
