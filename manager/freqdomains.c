#include "pctl/freqdomains.h"

#include <errno.h>

#include "pctl/util.h"

static const struct {
        int err;
        enum freq_fault fault;
} faults[] = {
    /* The driver is in the middle of a transition: the next attempt finds it done. */
    {EBUSY, FREQ_FAULT_TRANSIENT},
    /* The kernel asked us to try again. */
    {EAGAIN, FREQ_FAULT_TRANSIENT},
    /* A signal cut the write short. */
    {EINTR, FREQ_FAULT_TRANSIENT},
    /* Memory pressure passes; nothing about the domain is wrong. */
    {ENOMEM, FREQ_FAULT_TRANSIENT},
    /* It reads back another value: firmware or a thermal/power cap clamped it; caps lift. */
    {EIO, FREQ_FAULT_TRANSIENT},
    /* A writable file refused the value: another agent's limits (thermald, a power cap)
     * exclude it now, and they move. */
    {ENODEV, FREQ_FAULT_TRANSIENT},
    /* Not one of the domain's frequencies: asking again gets the same answer. */
    {EINVAL, FREQ_FAULT_VALUE},
    /* Outside the hardware limits: the same. */
    {ERANGE, FREQ_FAULT_VALUE},
    /* A read-only attribute or no permission on sysfs: needs configuration, not retries. */
    {EACCES, FREQ_FAULT_DOMAIN},
    /* A capability is missing, or frequency control is off. */
    {EPERM, FREQ_FAULT_DOMAIN},
    /* sysfs is mounted read-only (a container). */
    {EROFS, FREQ_FAULT_DOMAIN},
    /* The policy or its file is gone: the CPU went offline or the driver was unloaded. */
    {ENOENT, FREQ_FAULT_DOMAIN},
};

enum freq_fault freq_fault_of(int err)
{
        for (size_t i = 0; i < ARRAY_SIZE(faults); i++)
                if (faults[i].err == -err)
                        return faults[i].fault;
        /* Anything else: unknown, so retried, slowly; the back-off keeps it cheap and the
         * log keeps it quiet. */
        return FREQ_FAULT_TRANSIENT;
}

enum freq_action freqdomain_next(const struct freqdomain *d, unsigned want_khz, unsigned cur_khz,
                                 uint64_t now_ns)
{
        if (d->given_up || now_ns < d->retry_ns)
                return FREQ_NOTHING;
        if (!want_khz)
                return d->changed ? FREQ_RESTORE : FREQ_NOTHING;
        if (want_khz == d->refused_khz || want_khz == cur_khz)
                return FREQ_NOTHING;
        return FREQ_SET;
}

static uint64_t backoff_ns(unsigned failures)
{
        uint64_t ns = FREQ_BACKOFF_FIRST_NS;

        for (unsigned i = 1; i < failures && ns < FREQ_BACKOFF_MAX_NS; i++)
                ns *= 2;
        return ns < FREQ_BACKOFF_MAX_NS ? ns : FREQ_BACKOFF_MAX_NS;
}

enum freq_log freqdomain_done(struct freqdomain *d, enum freq_action a, unsigned want_khz, int err,
                              uint64_t now_ns)
{
        bool relog;

        if (a == FREQ_NOTHING)
                return FREQ_LOG_NONE;
        if (err == 0) {
                d->failures_before = d->failures;
                d->failures = 0;
                d->retry_ns = 0;
                d->logged_err = 0;
                d->changed = a == FREQ_SET;
                if (d->failures_before)
                        return FREQ_LOG_RECOVERED;
                return a == FREQ_SET ? FREQ_LOG_SET : FREQ_LOG_RESTORED;
        }
        d->failures++;
        /* A set that failed half-way may have changed the governor: give it back later. */
        if (a == FREQ_SET)
                d->changed = true;
        switch (freq_fault_of(err)) {
        case FREQ_FAULT_DOMAIN:
                d->given_up = true;
                return FREQ_LOG_GAVE_UP;
        case FREQ_FAULT_VALUE:
                if (a == FREQ_SET)
                        d->refused_khz = want_khz;
                break;
        case FREQ_FAULT_TRANSIENT:
                break;
        }
        /* Even another value is not tried at every decision. */
        d->retry_ns = now_ns + backoff_ns(d->failures);
        relog = d->logged_err != err || now_ns - d->logged_ns >= FREQ_RELOG_NS;
        if (!relog)
                return FREQ_LOG_NONE;
        d->logged_err = err;
        d->logged_ns = now_ns;
        return FREQ_LOG_FAILED;
}
