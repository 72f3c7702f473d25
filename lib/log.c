#define _GNU_SOURCE /* vasprintf */

#include "pctl/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int log_app_internal(int level, const char *app, int pid, const char *policy, const char *fmt, ...)
{
        int saved = errno;
        char *msg = NULL;
        va_list ap;

        if (level > log_max_level)
                return 0;
        va_start(ap, fmt);
        if (log_target == LOG_TARGET_JOURNAL && vasprintf(&msg, fmt, ap) >= 0) {
                sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", level, "PCTL_APP=%s",
                                app ? app : "", "PCTL_PID=%d", pid, "PCTL_POLICY=%s",
                                policy ? policy : "", NULL);
                free(msg);
        } else if (log_target == LOG_TARGET_JOURNAL) {
                /* No memory for the message: without its fields, but not lost. */
                va_end(ap);
                va_start(ap, fmt);
                sd_journal_printv(level, fmt, ap);
        } else {
                log_stderr(fmt, ap);
        }
        va_end(ap);
        errno = saved;
        return 0;
}
