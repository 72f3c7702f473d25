/* Frequencies are read and set through libcpupower (cpufreq.h, -lcpupower). The library reads
 * and writes the fixed path /sys/devices/system/cpu/cpuN/cpufreq, so there is no root prefix
 * here: tests put a fake tree over that path in a private mount namespace. Its writes return
 * -ENODEV for every failure; where one fails, the sysfs file it wrote is looked at (missing,
 * read-only, not writable by us) so the error says why and carries that errno. */
#include "pctl/cpufreq.h"

#include <cpufreq.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pctl/fsio.h"
#include "pctl/util.h"

#define CPUFREQ_SYSFS "/sys/devices/system/cpu"

struct cpufreq_domain_priv {
        unsigned cpu;                /* the CPU whose policy the library is asked about */
        char policy[STATE_PATH_MAX]; /* CPUFREQ_SYSFS/cpuN/cpufreq, for the record and messages */
        bool userspace;              /* the driver offers the userspace governor */
        bool saved;                  /* the original settings are in the record */
        struct state_entry orig;
};

struct cpufreq {
        struct state_record *rec;
        unsigned n;
        struct freq_domain *domains;
        struct cpufreq_domain_priv *priv;
        char err[256];
};

static int fail(struct cpufreq *cf, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct cpufreq *cf, int err, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cf->err, sizeof(cf->err), fmt, ap);
        va_end(ap);
        return err;
}

const char *cpufreq_error(const struct cpufreq *cf)
{
        return cf->err;
}
unsigned cpufreq_n_domains(const struct cpufreq *cf)
{
        return cf->n;
}
const struct freq_domain *cpufreq_domain(const struct cpufreq *cf, unsigned i)
{
        return i < cf->n ? &cf->domains[i] : NULL;
}
const char *cpufreq_domain_policy(const struct cpufreq *cf, unsigned i)
{
        return i < cf->n ? cf->priv[i].policy : NULL;
}
bool cpufreq_domain_uses_userspace(const struct cpufreq *cf, unsigned i)
{
        return i < cf->n && cf->priv[i].userspace;
}

/* Why libcpupower could not read or write one file of cpu's policy: the errno a plain open
 * would have met, and the words for it. -ENODEV when the file looks fine: then the kernel
 * refused the value (the library keeps no errno). */
static int cpufreq_why(unsigned cpu, const char *file, bool write, char *buf, size_t size)
{
        char path[128]; /* CPUFREQ_SYSFS/cpuN/cpufreq/FILE */
        struct stat st;

        snprintf(path, sizeof(path), CPUFREQ_SYSFS "/cpu%u/cpufreq/%s", cpu, file);
        if (stat(path, &st) < 0) {
                int err = -errno;

                snprintf(buf, size, "%s: %s", path, strerror(-err));
                return err;
        }
        if (write && !(st.st_mode & 0222)) {
                /* kernfs refuses to open an attribute without a store method for writing,
                 * even for root. */
                snprintf(buf, size, "%s: read-only attribute", path);
                return -EACCES;
        }
        if (access(path, write ? W_OK : R_OK) < 0) {
                int err = -errno; /* EACCES, EPERM, EROFS */

                snprintf(buf, size, "%s: %s", path, strerror(-err));
                return err;
        }
        if (write)
                snprintf(buf, size, "%s: the kernel refused the value", path);
        else
                snprintf(buf, size, "%s: empty or not a number", path);
        return -ENODEV;
}

static unsigned cpu_of_policy(const char *policy, int *err)
{
        unsigned cpu;
        int n = -1;

        *err = 0;
        if (sscanf(policy, CPUFREQ_SYSFS "/cpu%u/cpufreq%n", &cpu, &n) != 1 ||
            (size_t)n != strlen(policy))
                *err = -EINVAL;
        return cpu;
}

static int cmp_uint(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

        return x < y ? -1 : x > y;
}

/* One domain, from the policy of one of its CPUs. */
static int domain_read(unsigned cpu, struct freq_domain *d, struct cpufreq_domain_priv *p,
                       char *why, size_t why_size)
{
        struct cpufreq_available_governors *govs;
        struct cpufreq_available_frequencies *freqs;
        struct cpufreq_affected_cpus *related;
        unsigned long min_khz = 0, max_khz = 0;
        int err;

        memset(d, 0, sizeof(*d));
        memset(p, 0, sizeof(*p));
        p->cpu = cpu;
        snprintf(p->policy, sizeof(p->policy), CPUFREQ_SYSFS "/cpu%u/cpufreq", cpu);
        related = cpufreq_get_related_cpus(cpu);
        if (!related) /* kernels before 2.6.26 only have affected_cpus */
                related = cpufreq_get_affected_cpus(cpu);
        if (!related)
                return cpufreq_why(cpu, "related_cpus", false, why, why_size);
        for (struct cpufreq_affected_cpus *c = related; c; c = c->next)
                if (c->cpu < CPUMASK_MAX)
                        cpumask_set(&d->cpus, c->cpu);
        cpufreq_put_related_cpus(related);
        err = cpufreq_get_hardware_limits(cpu, &min_khz, &max_khz);
        if (err < 0)
                return cpufreq_why(cpu, min_khz ? "cpuinfo_max_freq" : "cpuinfo_min_freq", false,
                                   why, why_size);
        if (max_khz < min_khz || max_khz > UINT32_MAX) {
                snprintf(why, why_size, "hardware limits %lu-%lu kHz make no sense", min_khz,
                         max_khz);
                return -EBADMSG;
        }
        d->min_khz = (unsigned)min_khz;
        d->max_khz = (unsigned)max_khz;
        /* intel_pstate and amd-pstate offer no list, only the hardware limits. */
        freqs = cpufreq_get_available_frequencies(cpu);
        for (struct cpufreq_available_frequencies *f = freqs; f && d->n_freqs < ACTUATOR_MAX_FREQS;
             f = f->next)
                if (f->frequency > 0 && f->frequency <= UINT32_MAX)
                        d->freqs_khz[d->n_freqs++] = (unsigned)f->frequency;
        cpufreq_put_available_frequencies(freqs);
        qsort(d->freqs_khz, d->n_freqs, sizeof(unsigned), cmp_uint);
        govs = cpufreq_get_available_governors(cpu);
        for (struct cpufreq_available_governors *g = govs; g && !p->userspace; g = g->next)
                p->userspace = strcmp(g->governor, "userspace") == 0;
        cpufreq_put_available_governors(govs);
        /* 0 (unknown until we set it) when there is no scaling_cur_freq */
        d->cur_khz = (unsigned)cpufreq_get_freq_kernel(cpu);
        return 0;
}

int cpufreq_probe(char *why, size_t why_size)
{
        struct cpufreq *cf;
        int err = cpufreq_open(NULL, &cf, why, why_size);

        if (err == 0)
                cpufreq_close(cf);
        return err;
}

int cpufreq_open(struct state_record *rec, struct cpufreq **out, char *why, size_t why_size)
{
        char buf[CPUMASK_LIST_MAX], path[STATE_PATH_MAX];
        struct cpumask online, seen;
        struct cpufreq *cf;
        ssize_t n;
        int err;

        n = file_read(CPUFREQ_SYSFS "/online", buf, sizeof(buf));
        if (n < 0 || cpumask_parse(buf, &online) < 0) {
                snprintf(why, why_size, "cpufreq: cannot read %s/online", CPUFREQ_SYSFS);
                return n < 0 ? (int)n : -EBADMSG;
        }
        cf = calloc(1, sizeof(*cf));
        if (!cf)
                return -ENOMEM;
        cf->rec = rec;
        cpumask_zero(&seen);
        cpumask_foreach (cpu, &online) {
                struct freq_domain *nd;
                struct cpufreq_domain_priv *np;
                char reason[256];

                if (cpumask_test(&seen, (unsigned)cpu))
                        continue;
                /* cpuN/cpufreq is the policy directory (a link to policyM on new kernels). */
                snprintf(path, sizeof(path), CPUFREQ_SYSFS "/cpu%d/cpufreq", cpu);
                if (access(path, F_OK) < 0)
                        continue;
                nd = realloc(cf->domains, (cf->n + 1) * sizeof(*nd));
                if (nd)
                        cf->domains = nd;
                np = realloc(cf->priv, (cf->n + 1) * sizeof(*np));
                if (np)
                        cf->priv = np;
                if (!nd || !np) {
                        cpufreq_close(cf);
                        return -ENOMEM;
                }
                err = domain_read((unsigned)cpu, &cf->domains[cf->n], &cf->priv[cf->n], reason,
                                  sizeof(reason));
                if (err < 0) {
                        snprintf(why, why_size, "cpufreq: cannot read the policy of cpu%d: %s", cpu,
                                 reason);
                        cpufreq_close(cf);
                        return err;
                }
                /* A CPU listed in no domain of its own still counts as seen. */
                cpumask_set(&seen, (unsigned)cpu);
                cpumask_or(&seen, &seen, &cf->domains[cf->n].cpus);
                cf->n++;
        }
        if (cf->n == 0) {
                if (access(CPUFREQ_SYSFS "/cpufreq", F_OK) < 0)
                        snprintf(why, why_size,
                                 "cpufreq: no %s/cpufreq (the VM or kernel offers no frequency "
                                 "scaling); running without DVFS",
                                 CPUFREQ_SYSFS);
                else
                        snprintf(why, why_size,
                                 "cpufreq: no frequency domain under %s/cpufreq (the VM or "
                                 "kernel offers no frequency scaling); running without DVFS",
                                 CPUFREQ_SYSFS);
                cpufreq_close(cf);
                return -ENODEV;
        }
        *out = cf;
        return 0;
}

static bool freq_offered(const struct freq_domain *d, unsigned khz)
{
        if (d->n_freqs == 0)
                return true; /* any value within the hardware limits */
        for (unsigned i = 0; i < d->n_freqs; i++)
                if (d->freqs_khz[i] == khz)
                        return true;
        return false;
}

/* The governor and limits now, as libcpupower reads them. */
static int policy_now(unsigned cpu, struct state_entry *e, char *why, size_t why_size)
{
        struct cpufreq_policy *pol = cpufreq_get_policy(cpu);

        if (!pol) {
                int err = cpufreq_why(cpu, "scaling_governor", false, why, why_size);

                if (err == -ENODEV)
                        err = cpufreq_why(cpu, "scaling_min_freq", false, why, why_size);
                if (err == -ENODEV)
                        err = cpufreq_why(cpu, "scaling_max_freq", false, why, why_size);
                return err;
        }
        e->kind = STATE_FREQ;
        snprintf(e->path, sizeof(e->path), CPUFREQ_SYSFS "/cpu%u/cpufreq", cpu);
        strscpy(e->governor, pol->governor, sizeof(e->governor));
        e->min_khz = pol->min <= UINT32_MAX ? (unsigned)pol->min : UINT32_MAX;
        e->max_khz = pol->max <= UINT32_MAX ? (unsigned)pol->max : UINT32_MAX;
        cpufreq_put_policy(pol);
        return 0;
}

static int set_userspace(struct cpufreq *cf, struct cpufreq_domain_priv *p, unsigned freq_khz)
{
        char why[256];
        struct state_entry now;
        int err;

        /* Switches to the userspace governor if needed, then writes scaling_setspeed. */
        if (cpufreq_set_frequency(p->cpu, freq_khz) == 0)
                return 0;
        err = policy_now(p->cpu, &now, why, sizeof(why));
        if (err == 0)
                err = strcmp(now.governor, "userspace")
                          ? cpufreq_why(p->cpu, "scaling_governor", true, why, sizeof(why))
                          : cpufreq_why(p->cpu, "scaling_setspeed", true, why, sizeof(why));
        return fail(cf, err, "cannot set cpu%u to %u kHz (userspace governor): %s", p->cpu,
                    freq_khz, why);
}

static int set_cap(struct cpufreq *cf, struct cpufreq_domain_priv *p, const struct freq_domain *d,
                   unsigned freq_khz)
{
        char why[256];
        struct state_entry now;
        int err;

        err = policy_now(p->cpu, &now, why, sizeof(why));
        if (err < 0)
                return fail(cf, err, "cannot cap cpu%u at %u kHz: %s", p->cpu, freq_khz, why);
        /* Lower the floor first: a cap below scaling_min_freq is refused by older kernels. */
        if (now.min_khz > freq_khz && cpufreq_modify_policy_min(p->cpu, d->min_khz) < 0) {
                err = cpufreq_why(p->cpu, "scaling_min_freq", true, why, sizeof(why));
                return fail(cf, err, "cannot lower the floor of cpu%u to %u kHz: %s", p->cpu,
                            d->min_khz, why);
        }
        if (cpufreq_modify_policy_max(p->cpu, freq_khz) < 0) {
                err = cpufreq_why(p->cpu, "scaling_max_freq", true, why, sizeof(why));
                return fail(cf, err, "cannot cap cpu%u at %u kHz (scaling_max_freq): %s", p->cpu,
                            freq_khz, why);
        }
        /* The library does not check what the kernel made of it; a driver may clamp. */
        err = policy_now(p->cpu, &now, why, sizeof(why));
        if (err < 0)
                return fail(cf, err, "cannot read back the cap of cpu%u: %s", p->cpu, why);
        if (now.max_khz != freq_khz)
                return fail(cf, -EIO, "%s/scaling_max_freq reads %u after writing %u", p->policy,
                            now.max_khz, freq_khz);
        return 0;
}

int cpufreq_set(struct cpufreq *cf, unsigned domain, unsigned freq_khz)
{
        struct cpufreq_domain_priv *p;
        struct freq_domain *d;
        int err;

        cf->err[0] = '\0';
        if (domain >= cf->n)
                return fail(cf, -EINVAL, "no frequency domain %u (this machine has %u)", domain,
                            cf->n);
        d = &cf->domains[domain];
        p = &cf->priv[domain];
        if (freq_khz < d->min_khz || freq_khz > d->max_khz)
                return fail(cf, -ERANGE, "%u kHz is outside the limits of domain %u (%u-%u kHz)",
                            freq_khz, domain, d->min_khz, d->max_khz);
        if (!freq_offered(d, freq_khz))
                return fail(cf, -EINVAL,
                            "%u kHz is not one of domain %u's available frequencies (%u-%u kHz, "
                            "%u steps)",
                            freq_khz, domain, d->freqs_khz[0], d->freqs_khz[d->n_freqs - 1],
                            d->n_freqs);
        if (!p->saved) {
                char why[256];

                memset(&p->orig, 0, sizeof(p->orig));
                err = policy_now(p->cpu, &p->orig, why, sizeof(why));
                if (err < 0)
                        return fail(cf, err, "cannot read the policy of cpu%u: %s", p->cpu, why);
                if (cf->rec) {
                        err = state_record_add(cf->rec, &p->orig);
                        if (err == 0)
                                err = state_record_commit(cf->rec);
                        if (err < 0)
                                return fail(cf, err, "cannot write the state record: %s",
                                            strerror(-err));
                }
                p->saved = true;
        }
        err = p->userspace ? set_userspace(cf, p, freq_khz) : set_cap(cf, p, d, freq_khz);
        if (err < 0)
                return err;
        d->cur_khz = freq_khz;
        return 0;
}

static int restore_one(const struct state_entry *e, char *why, size_t why_size)
{
        struct state_entry now;
        unsigned cpu;
        bool floor_first;
        int err;

        cpu = cpu_of_policy(e->path, &err);
        if (err < 0) {
                snprintf(why, why_size, "%s is not a cpufreq policy of %s", e->path, CPUFREQ_SYSFS);
                return err;
        }
        err = policy_now(cpu, &now, why, why_size);
        if (err < 0)
                return err; /* -ENOENT: the CPU or its cpufreq is gone */
        /* The governor first: leaving userspace must not drop the restored limits. */
        if (strcmp(now.governor, e->governor) &&
            cpufreq_modify_policy_governor(cpu, (char *)e->governor) < 0)
                return cpufreq_why(cpu, "scaling_governor", true, why, why_size);
        /* Raise the ceiling before the floor, unless the old ceiling is below today's floor. */
        floor_first = e->max_khz < now.min_khz;
        if (floor_first && cpufreq_modify_policy_min(cpu, e->min_khz) < 0)
                return cpufreq_why(cpu, "scaling_min_freq", true, why, why_size);
        if (cpufreq_modify_policy_max(cpu, e->max_khz) < 0)
                return cpufreq_why(cpu, "scaling_max_freq", true, why, why_size);
        if (!floor_first && cpufreq_modify_policy_min(cpu, e->min_khz) < 0)
                return cpufreq_why(cpu, "scaling_min_freq", true, why, why_size);
        return 0;
}

int cpufreq_restore_policy(const struct state_entry *e)
{
        char why[256];

        return restore_one(e, why, sizeof(why));
}

int cpufreq_restore(struct cpufreq *cf, unsigned domain)
{
        struct cpufreq_domain_priv *p;
        char why[256];
        int err;

        cf->err[0] = '\0';
        if (domain >= cf->n)
                return fail(cf, -EINVAL, "no frequency domain %u (this machine has %u)", domain,
                            cf->n);
        p = &cf->priv[domain];
        if (!p->saved)
                return 0;
        err = restore_one(&p->orig, why, sizeof(why));
        if (err < 0)
                return fail(cf, err, "cannot restore cpu%u (governor %s, %u-%u kHz): %s", p->cpu,
                            p->orig.governor, p->orig.min_khz, p->orig.max_khz, why);
        p->saved = false;
        cf->domains[domain].cur_khz = 0;
        if (cf->rec) {
                state_record_remove(cf->rec, &p->orig);
                err = state_record_commit(cf->rec);
                if (err < 0)
                        return fail(cf, err, "cannot update the state record: %s", strerror(-err));
        }
        return 0;
}

void cpufreq_close(struct cpufreq *cf)
{
        if (!cf)
                return;
        for (unsigned i = 0; i < cf->n; i++)
                cpufreq_restore(cf, i); /* a failure keeps the entry for the next start */
        free(cf->domains);
        free(cf->priv);
        free(cf);
}
