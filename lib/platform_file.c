/* platform.ini, the calibration's result (include/pctl/platform_file.h). */
#include "pctl/platform_file.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pctl/fsio.h"
#include "pctl/inifile.h"
#include "pctl/util.h"

#define PF_MAX_MHZ 100000

void platform_profile_init(struct platform_profile *p)
{
        *p = (struct platform_profile){
            .delta_i_rate = NAN,
            .power_residual_w = NAN,
            .max_p_error = NAN,
            .max_speedup_error_pct = NAN,
        };
}

/* Per-frequency halves of the [power] pairs, joined when the file has been read. */
struct pf_freq {
        unsigned mhz;
        double core_w, idle_w;
        int core_line, idle_line; /* 0: not seen */
};

struct pf_ctx {
        struct platform_profile p;
        struct inifile_error *err;
        bool seen_backend;
        bool seen_power;
        int power_line;
        bool seen_static;
        unsigned n_freqs;
        struct pf_freq freqs[MODEL_MAX_FREQS];
};

static int pf_fail(struct pf_ctx *c, int r, const char *fmt, const char *a, const char *b)
{
        if (c->err && !c->err->what[0])
                snprintf(c->err->what, sizeof(c->err->what), fmt, a, b);
        return r;
}

/* A non-negative finite number. */
static int pf_number(const char *value, double *out)
{
        double v;
        int r = parse_double(value, &v);

        if (r < 0)
                return r;
        if (!isfinite(v) || v < 0)
                return -ERANGE;
        *out = v;
        return 0;
}

static int pf_string(char *dst, size_t size, const char *value)
{
        return strscpy(dst, value, size) < 0 ? -ENAMETOOLONG : 0;
}

static int pf_power_key(struct pf_ctx *c, const char *key, const char *value, int lineno)
{
        bool core = strncmp(key, "core_w_", 7) == 0;
        bool idle = strncmp(key, "idle_w_", 7) == 0;
        struct pf_freq *fq = NULL;
        unsigned mhz;
        double v;

        if (strcmp(key, "static_w") == 0) {
                if (pf_number(value, &c->p.power.static_w) < 0)
                        return pf_fail(c, -EINVAL, "%s = '%s' is not a number of watts >= 0", key,
                                       value);
                c->seen_static = true;
                return 0;
        }
        if (strcmp(key, "residual_w") == 0) {
                if (pf_number(value, &c->p.power_residual_w) < 0)
                        return pf_fail(c, -EINVAL, "%s = '%s' is not a number of watts >= 0", key,
                                       value);
                return 0;
        }
        if (!core && !idle)
                return pf_fail(c, -EINVAL, "unknown key '%s' in [%s]", key, "power");
        if (parse_uint(key + 7, &mhz) < 0 || mhz == 0 || mhz > PF_MAX_MHZ)
                return pf_fail(c, -EINVAL, "'%s': the frequency after '%.7s' is not in MHz", key,
                               key);
        if (pf_number(value, &v) < 0)
                return pf_fail(c, -EINVAL, "%s = '%s' is not a number of watts >= 0", key, value);
        for (unsigned i = 0; i < c->n_freqs; i++)
                if (c->freqs[i].mhz == mhz)
                        fq = &c->freqs[i];
        if (!fq) {
                if (c->n_freqs == MODEL_MAX_FREQS)
                        return pf_fail(c, -EINVAL, "%s: more frequencies than %s", key, "64");
                fq = &c->freqs[c->n_freqs++];
                *fq = (struct pf_freq){.mhz = mhz};
        }
        if ((core && fq->core_line) || (idle && fq->idle_line))
                return pf_fail(c, -EINVAL, "'%s' is given twice%s", key, "");
        if (core) {
                fq->core_w = v;
                fq->core_line = lineno;
        } else {
                fq->idle_w = v;
                fq->idle_line = lineno;
        }
        return 0;
}

static int pf_handler(void *user, const char *section, const char *key, const char *value,
                      int lineno)
{
        struct pf_ctx *c = user;
        struct platform_profile *p = &c->p;
        double v;

        if (strcmp(section, "platform") == 0) {
                if (strcmp(key, "backend") == 0) {
                        /* A sensor backend's name (likwid, perf, ...): a word, which the
                         * writer writes back as it is; it blanks ';', so ";;" would not be. */
                        if (!value[0] || value[strspn(value, "abcdefghijklmnopqrstuvwxyz"
                                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_-")])
                                return pf_fail(c, -EINVAL, "%s = '%s' is not a sensor backend name",
                                               key, value);
                        c->seen_backend = true;
                        return pf_string(p->backend, sizeof(p->backend), value);
                }
                if (strcmp(key, "date") == 0)
                        return pf_string(p->date, sizeof(p->date), value);
                if (strcmp(key, "hostname") == 0)
                        return pf_string(p->hostname, sizeof(p->hostname), value);
                if (strcmp(key, "cpu_model") == 0)
                        return pf_string(p->cpu_model, sizeof(p->cpu_model), value);
                if (strcmp(key, "n_cpus") == 0) {
                        if (parse_uint(value, &p->n_cpus) < 0)
                                return pf_fail(c, -EINVAL, "%s = '%s' is not a count", key, value);
                        return 0;
                }
                return pf_fail(c, -EINVAL, "unknown key '%s' in [%s]", key, section);
        }
        if (strcmp(section, "estimator") == 0) {
                if (strcmp(key, "ipc1") == 0) {
                        if (pf_number(value, &v) < 0 || v == 0)
                                return pf_fail(c, -EINVAL, "%s = '%s' is not an IPC > 0", key,
                                               value);
                        p->ipc1 = v;
                        return 0;
                }
                if (strcmp(key, "delta_i_rate") == 0) {
                        if (pf_number(value, &v) < 0)
                                return pf_fail(c, -EINVAL,
                                               "%s = '%s' is not a rate >= 0 (instructions/s)", key,
                                               value);
                        p->delta_i_rate = v;
                        return 0;
                }
                return pf_fail(c, -EINVAL, "unknown key '%s' in [%s]", key, section);
        }
        if (strcmp(section, "power") == 0) {
                if (!c->seen_power)
                        c->power_line = lineno;
                c->seen_power = true;
                return pf_power_key(c, key, value, lineno);
        }
        if (strcmp(section, "validation") == 0) {
                double *dst = strcmp(key, "max_p_error") == 0 ? &p->max_p_error
                              : strcmp(key, "max_speedup_error_pct") == 0
                                  ? &p->max_speedup_error_pct
                                  : NULL;

                if (!dst)
                        return pf_fail(c, -EINVAL, "unknown key '%s' in [%s]", key, section);
                if (pf_number(value, dst) < 0)
                        return pf_fail(c, -EINVAL, "%s = '%s' is not a number >= 0", key, value);
                return 0;
        }
        return pf_fail(c, -EINVAL, "unknown section [%s] (key '%s')", section, key);
}

/* Checks what only the whole file can tell, and builds the power model. */
static int pf_finish(struct pf_ctx *c, struct inifile_error *err)
{
        struct platform_profile *p = &c->p;

        if (!c->seen_backend) {
                err->lineno = 0;
                snprintf(err->what, sizeof(err->what), "no 'backend' in [platform]");
                return -EINVAL;
        }
        if (!c->seen_power)
                return 0;
        if (!c->seen_static || c->n_freqs == 0) {
                err->lineno = c->power_line;
                snprintf(err->what, sizeof(err->what),
                         "[power] needs static_w and at least one core_w_MHZ/idle_w_MHZ pair");
                return -EINVAL;
        }
        for (unsigned i = 0; i < c->n_freqs; i++) {
                const struct pf_freq *fq = &c->freqs[i];

                if (!fq->core_line || !fq->idle_line) {
                        err->lineno = fq->core_line ? fq->core_line : fq->idle_line;
                        snprintf(err->what, sizeof(err->what), "%s_%u has no %s_%u to pair with",
                                 fq->core_line ? "core_w" : "idle_w", fq->mhz,
                                 fq->core_line ? "idle_w" : "core_w", fq->mhz);
                        return -EINVAL;
                }
                model_power_set_point(&p->power, fq->mhz * 1000, fq->core_w, fq->idle_w);
        }
        return 0;
}

static int pf_load(const char *path, const char *text, struct platform_profile *out, char *err,
                   size_t err_size)
{
        struct inifile_error ie = {0};
        struct pf_ctx c = {.err = &ie};
        int r;

        platform_profile_init(&c.p);
        if (text)
                r = inifile_parse_string(text, pf_handler, &c, &ie);
        else
                r = inifile_parse(path, pf_handler, &c, &ie);
        if (r == 0)
                r = pf_finish(&c, &ie);
        if (r < 0) {
                if (err && err_size) {
                        if (r != -EINVAL)
                                snprintf(err, err_size, "%s: %s", path, strerror(-r));
                        else if (ie.lineno > 0)
                                snprintf(err, err_size, "%s:%d: %s", path, ie.lineno, ie.what);
                        else
                                snprintf(err, err_size, "%s: %s", path, ie.what);
                }
                return r;
        }
        *out = c.p;
        return 0;
}

int platform_file_load(const char *path, struct platform_profile *out, char *err, size_t err_size)
{
        return pf_load(path, NULL, out, err, err_size);
}

int platform_file_load_string(const char *text, const char *name, struct platform_profile *out,
                              char *err, size_t err_size)
{
        return pf_load(name, text, out, err, err_size);
}

/* INI values cannot hold newlines or a leading/trailing space; cpu model strings can. */
static void pf_put_string(FILE *f, const char *key, const char *value)
{
        /* The reader refuses a line longer than inih's buffer, "key = value" included. */
        size_t room = (size_t)ini_max_line - 3 - strlen(key) - 3;
        char buf[256];
        char *v;

        strscpy(buf, value, sizeof(buf));
        for (char *s = buf; *s; s++)
                if (*s == '\n' || *s == '\r' || *s == ';')
                        *s = ' ';
        v = strstrip(buf);
        if (strlen(v) > room) {
                v[room] = '\0';
                v = strstrip(v);
        }
        /* Nothing left (it was blanks and ';'): absent, like an empty string, so that the
         * file reads back as the profile it was written from. */
        if (v[0])
                fprintf(f, "%s = %s\n", key, v);
}

int platform_file_format(FILE *f, const struct platform_profile *p)
{
        fprintf(f, "# Written by pctl calibrate; read by pctld. See pctl-calibrate(1).\n"
                   "# A figure that was not measured is absent.\n\n[platform]\n");
        pf_put_string(f, "backend", p->backend);
        if (p->date[0])
                pf_put_string(f, "date", p->date);
        if (p->hostname[0])
                pf_put_string(f, "hostname", p->hostname);
        if (p->cpu_model[0])
                pf_put_string(f, "cpu_model", p->cpu_model);
        if (p->n_cpus)
                fprintf(f, "n_cpus = %u\n", p->n_cpus);
        if (p->ipc1 > 0 || isfinite(p->delta_i_rate)) {
                fprintf(f, "\n[estimator]\n");
                if (p->ipc1 > 0)
                        fprintf(f, "ipc1 = %.9g\n", p->ipc1);
                if (isfinite(p->delta_i_rate))
                        fprintf(f, "delta_i_rate = %.9g\n", p->delta_i_rate);
        }
        if (p->power.n_points > 0) {
                fprintf(f, "\n[power]\nstatic_w = %.9g\n", p->power.static_w);
                for (unsigned i = 0; i < p->power.n_points; i++) {
                        const struct model_power_point *pt = &p->power.points[i];

                        fprintf(f, "core_w_%u = %.9g\nidle_w_%u = %.9g\n", pt->freq_khz / 1000,
                                pt->core_w, pt->freq_khz / 1000, pt->idle_w);
                }
                if (isfinite(p->power_residual_w))
                        fprintf(f, "residual_w = %.9g\n", p->power_residual_w);
        }
        if (isfinite(p->max_p_error) || isfinite(p->max_speedup_error_pct)) {
                fprintf(f, "\n[validation]\n");
                if (isfinite(p->max_p_error))
                        fprintf(f, "max_p_error = %.6g\n", p->max_p_error);
                if (isfinite(p->max_speedup_error_pct))
                        fprintf(f, "max_speedup_error_pct = %.6g\n", p->max_speedup_error_pct);
        }
        return ferror(f) ? -EIO : 0;
}

int platform_file_write(const char *path, const struct platform_profile *p)
{
        char tmp[4096];
        FILE *f;
        int fd, r;

        if (!p->backend[0])
                return -EINVAL;
        if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                close(fd);
                unlink(tmp);
                return r;
        }
        r = platform_file_format(f, p);
        if (fflush(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && fsync(fileno(f)) < 0)
                r = -errno;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

void platform_profile_identify(struct platform_profile *p)
{
        char buf[65536];
        struct tm tm;
        time_t now = time(NULL);
        long n;

        if (gethostname(p->hostname, sizeof(p->hostname)) < 0)
                p->hostname[0] = '\0';
        p->hostname[sizeof(p->hostname) - 1] = '\0';
        if (localtime_r(&now, &tm))
                strftime(p->date, sizeof(p->date), "%Y-%m-%dT%H:%M:%S%z", &tm);
        n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n > 0)
                p->n_cpus = (unsigned)n;
        if (fs_read("/proc/cpuinfo", buf, sizeof(buf)) > 0) {
                char *line = strstr(buf, "model name");
                char *colon = line ? strchr(line, ':') : NULL;

                if (colon) {
                        char *end = strchr(colon, '\n');

                        if (end)
                                *end = '\0';
                        strscpy(p->cpu_model, strstrip(colon + 1), sizeof(p->cpu_model));
                }
        }
}
