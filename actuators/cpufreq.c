/* All reads and writes go to sysfs through fsio (the root prefix), not through libcpupower:
 * libcpupower always reads the real /sys, so a fake tree could not test this module, and its
 * write calls (cpufreq_set_frequency, cpufreq_modify_policy_*) return -ENODEV for every
 * failure, which loses the reason (EACCES, EINVAL, EBUSY) that errors here must report. The
 * sysfs files used are the ones libcpupower itself reads and writes. */
#include "pctl/cpufreq.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/fsio.h"
#include "pctl/util.h"

#define CPUFREQ_SYSFS "/sys/devices/system/cpu"

struct cpufreq_domain_priv {
        char policy[STATE_PATH_MAX]; /* with the root prefix */
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

static int pol_read(const char *policy, const char *name, char *buf, size_t size)
{
        char path[STATE_PATH_MAX + 64];
        ssize_t n;

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", policy, name) >= sizeof(path))
                return -ENAMETOOLONG;
        n = file_read(path, buf, size);
        if (n < 0)
                return (int)n;
        strstrip(buf);
        return 0;
}

static int pol_read_uint(const char *policy, const char *name, unsigned *out)
{
        char buf[64];
        int err = pol_read(policy, name, buf, sizeof(buf));

        return err < 0 ? err : parse_uint(strstrip(buf), out);
}

static int pol_write(const char *policy, const char *name, const char *value)
{
        char path[STATE_PATH_MAX + 64];

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", policy, name) >= sizeof(path))
                return -ENAMETOOLONG;
        return file_write(path, value);
}

static int pol_write_uint(const char *policy, const char *name, unsigned v)
{
        char buf[32];

        snprintf(buf, sizeof(buf), "%u", v);
        return pol_write(policy, name, buf);
}

static bool word_in(const char *list, const char *word)
{
        size_t len = strlen(word);

        for (const char *p = list; (p = strstr(p, word)); p += len)
                if ((p == list || p[-1] == ' ') && (p[len] == '\0' || p[len] == ' '))
                        return true;
        return false;
}

static int cmp_uint(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

        return x < y ? -1 : x > y;
}

/* One domain from the cpufreq directory of one of its CPUs. */
static int domain_read(const char *policy, struct freq_domain *d, struct cpufreq_domain_priv *p)
{
        char buf[4096];
        int err;

        memset(d, 0, sizeof(*d));
        memset(p, 0, sizeof(*p));
        strscpy(p->policy, policy, sizeof(p->policy));
        err = pol_read(policy, "related_cpus", buf, sizeof(buf));
        if (err == -ENOENT)
                err = pol_read(policy, "affected_cpus", buf, sizeof(buf));
        if (err < 0)
                return err;
        /* related_cpus is space separated ("0 1 2"); turn it into a list. */
        for (char *s = buf; *s; s++)
                if (*s == ' ')
                        *s = ',';
        err = cpumask_parse(buf, &d->cpus);
        if (err < 0)
                return err;
        err = pol_read_uint(policy, "cpuinfo_min_freq", &d->min_khz);
        if (err == 0)
                err = pol_read_uint(policy, "cpuinfo_max_freq", &d->max_khz);
        if (err < 0)
                return err;
        if (d->min_khz == 0 || d->max_khz < d->min_khz)
                return -EBADMSG;
        /* intel_pstate and amd-pstate offer no list, only the hardware limits. */
        if (pol_read(policy, "scaling_available_frequencies", buf, sizeof(buf)) == 0) {
                for (char *w = strtok(buf, " "); w && d->n_freqs < ACTUATOR_MAX_FREQS;
                     w = strtok(NULL, " ")) {
                        unsigned f;

                        if (parse_uint(w, &f) == 0 && f > 0)
                                d->freqs_khz[d->n_freqs++] = f;
                }
                qsort(d->freqs_khz, d->n_freqs, sizeof(unsigned), cmp_uint);
        }
        if (pol_read(policy, "scaling_available_governors", buf, sizeof(buf)) == 0)
                p->userspace = word_in(buf, "userspace");
        if (pol_read_uint(policy, "scaling_cur_freq", &d->cur_khz) < 0)
                d->cur_khz = 0; /* unknown until we set it */
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

        n = fs_read(CPUFREQ_SYSFS "/online", buf, sizeof(buf));
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

                if (cpumask_test(&seen, (unsigned)cpu))
                        continue;
                /* cpuN/cpufreq is the policy directory (a link to policyM on new kernels). */
                if (fs_path(path, sizeof(path), CPUFREQ_SYSFS "/cpu%d/cpufreq", cpu) < 0 ||
                    access(path, F_OK) < 0)
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
                err = domain_read(path, &cf->domains[cf->n], &cf->priv[cf->n]);
                if (err < 0) {
                        snprintf(why, why_size, "cpufreq: cannot read the policy %s: %s", path,
                                 strerror(-err));
                        cpufreq_close(cf);
                        return err;
                }
                /* A CPU listed in no domain of its own still counts as seen. */
                cpumask_set(&seen, (unsigned)cpu);
                cpumask_or(&seen, &seen, &cf->domains[cf->n].cpus);
                cf->n++;
        }
        if (cf->n == 0) {
                fs_path(path, sizeof(path), CPUFREQ_SYSFS "/cpufreq");
                if (access(path, F_OK) < 0)
                        snprintf(why, why_size,
                                 "cpufreq: no %s (the VM or kernel offers no frequency scaling); "
                                 "running without DVFS",
                                 path);
                else
                        snprintf(why, why_size,
                                 "cpufreq: no frequency domain under %s (the VM or kernel offers "
                                 "no frequency scaling); running without DVFS",
                                 path);
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

int cpufreq_set(struct cpufreq *cf, unsigned domain, unsigned freq_khz)
{
        struct cpufreq_domain_priv *p;
        struct freq_domain *d;
        unsigned now_khz;
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
                struct state_entry *e = &p->orig;

                memset(e, 0, sizeof(*e));
                e->kind = STATE_FREQ;
                strscpy(e->path, p->policy, sizeof(e->path));
                err = pol_read(p->policy, "scaling_governor", e->governor, sizeof(e->governor));
                if (err == 0)
                        err = pol_read_uint(p->policy, "scaling_min_freq", &e->min_khz);
                if (err == 0)
                        err = pol_read_uint(p->policy, "scaling_max_freq", &e->max_khz);
                if (err < 0)
                        return fail(cf, err, "cannot read the settings of %s: %s", p->policy,
                                    strerror(-err));
                if (cf->rec) {
                        err = state_record_add(cf->rec, e);
                        if (err == 0)
                                err = state_record_commit(cf->rec);
                        if (err < 0)
                                return fail(cf, err, "cannot write the state record: %s",
                                            strerror(-err));
                }
                p->saved = true;
        }
        if (p->userspace) {
                char gov[32];

                err = pol_read(p->policy, "scaling_governor", gov, sizeof(gov));
                if (err == 0 && strcmp(gov, "userspace"))
                        err = pol_write(p->policy, "scaling_governor", "userspace");
                if (err == 0)
                        err = pol_write_uint(p->policy, "scaling_setspeed", freq_khz);
                if (err < 0)
                        return fail(cf, err, "cannot set %s to %u kHz (userspace governor): %s",
                                    p->policy, freq_khz, strerror(-err));
        } else {
                unsigned min_khz;

                /* Lower the floor first: a cap below scaling_min_freq is refused by older
                 * kernels. */
                err = pol_read_uint(p->policy, "scaling_min_freq", &min_khz);
                if (err == 0 && min_khz > freq_khz)
                        err = pol_write_uint(p->policy, "scaling_min_freq", d->min_khz);
                if (err == 0)
                        err = pol_write_uint(p->policy, "scaling_max_freq", freq_khz);
                if (err < 0)
                        return fail(cf, err, "cannot cap %s at %u kHz (scaling_max_freq): %s",
                                    p->policy, freq_khz, strerror(-err));
                err = pol_read_uint(p->policy, "scaling_max_freq", &now_khz);
                if (err == 0 && now_khz != freq_khz)
                        return fail(cf, -EIO, "%s/scaling_max_freq reads %u after writing %u",
                                    p->policy, now_khz, freq_khz);
        }
        d->cur_khz = freq_khz;
        return 0;
}

int cpufreq_restore_policy(const struct state_entry *e)
{
        char gov[32];
        int err;

        /* The governor first: leaving userspace must not drop the restored limits. */
        err = pol_read(e->path, "scaling_governor", gov, sizeof(gov));
        if (err == 0 && strcmp(gov, e->governor))
                err = pol_write(e->path, "scaling_governor", e->governor);
        if (err < 0)
                return err;
        /* Raise the ceiling before the floor; if the old max is below the current min, the
         * kernel wants the floor first. */
        err = pol_write_uint(e->path, "scaling_max_freq", e->max_khz);
        if (err == -EINVAL) {
                err = pol_write_uint(e->path, "scaling_min_freq", e->min_khz);
                if (err == 0)
                        err = pol_write_uint(e->path, "scaling_max_freq", e->max_khz);
                return err;
        }
        if (err == 0)
                err = pol_write_uint(e->path, "scaling_min_freq", e->min_khz);
        return err;
}

int cpufreq_restore(struct cpufreq *cf, unsigned domain)
{
        struct cpufreq_domain_priv *p;
        int err;

        cf->err[0] = '\0';
        if (domain >= cf->n)
                return fail(cf, -EINVAL, "no frequency domain %u (this machine has %u)", domain,
                            cf->n);
        p = &cf->priv[domain];
        if (!p->saved)
                return 0;
        err = cpufreq_restore_policy(&p->orig);
        if (err < 0)
                return fail(cf, err, "cannot restore %s (governor %s, %u-%u kHz): %s", p->policy,
                            p->orig.governor, p->orig.min_khz, p->orig.max_khz, strerror(-err));
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
