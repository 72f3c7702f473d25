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
#include "pctl/inikey.h"
#include "pctl/power_decl.h"
#include "pctl/util.h"

void platform_profile_init(struct platform_profile *p)
{
        *p = (struct platform_profile){
            .delta_i_rate = NAN,
            .delta_i_alpha = NAN,
            .delta_i_fit_error = NAN,
            .power_residual_w = NAN,
            .max_p_error = NAN,
            .max_speedup_error_pct = NAN,
        };
}

static int pf_set_backend(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        (void)ctx;
        /* A sensor backend's name (likwid, perf, ...): a word, which the writer writes back
         * as it is; it blanks ';', so ";;" would not be. */
        if (!value[0] || value[strspn(value, "abcdefghijklmnopqrstuvwxyz"
                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789_-")]) {
                snprintf(why, why_size, "backend = '%s' is not a sensor backend name", value);
                return -EINVAL;
        }
        if (strscpy(field, value, sizeof(((struct platform_profile *)0)->backend)) < 0) {
                snprintf(why, why_size, "backend = '%s' is longer than %zu bytes", value,
                         sizeof(((struct platform_profile *)0)->backend) - 1);
                return -ERANGE;
        }
        return 0;
}

#define PF_STR(field)                                                                              \
        .type = INIKEY_STRING, .offset = offsetof(struct platform_profile, field),                 \
        .size = sizeof(((struct platform_profile *)0)->field)
#define PF_DOUBLE(field, what_)                                                                    \
        .type = INIKEY_DOUBLE, .offset = offsetof(struct platform_profile, field),                 \
        .max = INFINITY, .what = what_

static const struct inikey pf_platform_keys[] = {
    {.key = "backend",
     .type = INIKEY_CUSTOM,
     .offset = offsetof(struct platform_profile, backend),
     .custom = pf_set_backend,
     .doc = "sensor backend the calibration measured with"},
    {.key = "date", PF_STR(date), .doc = "when, ISO 8601"},
    {.key = "hostname", PF_STR(hostname), .doc = "machine"},
    {.key = "cpu_model", PF_STR(cpu_model), .doc = "from /proc/cpuinfo"},
    {.key = "n_cpus",
     .type = INIKEY_UINT,
     .offset = offsetof(struct platform_profile, n_cpus),
     .max = UINT32_MAX,
     .what = "a count",
     .doc = "CPUs online"},
};

static const struct inikey pf_estimator_keys[] = {
    {.key = "ipc1",
     PF_DOUBLE(ipc1, "an IPC > 0"),
     .min_exclusive = true,
     .doc = "single-core IPC of pbench's kernel"},
    {.key = "delta_i_rate",
     PF_DOUBLE(delta_i_rate, "a rate >= 0 (instructions/s)"),
     .doc = "beta of eq. 14: system instructions per busy core-second"},
    {.key = "delta_i_alpha",
     PF_DOUBLE(delta_i_alpha, "a rate >= 0 (instructions/s)"),
     .doc = "alpha of eq. 14: system instructions per second on the app's CPUs"},
    {.key = "delta_i_fit_error",
     PF_DOUBLE(delta_i_fit_error, "a number >= 0"),
     .doc = "RMS of the delta-I fit over the mean delta-I"},
};

static const struct inikey pf_validation_keys[] = {
    {.key = "max_p_error", PF_DOUBLE(max_p_error, "a number >= 0"), .doc = "max |P^ - P|"},
    {.key = "max_speedup_error_pct",
     PF_DOUBLE(max_speedup_error_pct, "a number >= 0"),
     .doc = "max speedup error, %"},
};

/* [power] is not here: it is the one dialect of lib/power_decl.c. */
static const struct {
        const char *name;
        const struct inikey *keys;
        size_t n;
} pf_sections[] = {
    {"platform", pf_platform_keys, ARRAY_SIZE(pf_platform_keys)},
    {"estimator", pf_estimator_keys, ARRAY_SIZE(pf_estimator_keys)},
    {"validation", pf_validation_keys, ARRAY_SIZE(pf_validation_keys)},
};

struct pf_ctx {
        struct platform_profile p;
        struct inifile_error *err;
        bool seen_backend;
        int power_line; /* 0: no [power] */
        struct power_decl power;
};

static int pf_fail(struct pf_ctx *c, int r, const char *fmt, const char *a, const char *b)
{
        if (c->err && !c->err->what[0])
                snprintf(c->err->what, sizeof(c->err->what), fmt, a, b);
        return r;
}

static int pf_handler(void *user, const char *section, const char *key, const char *value,
                      int lineno)
{
        struct pf_ctx *c = user;
        const struct inikey *k = NULL;
        char why[200];
        int r;

        if (strcmp(section, "power") == 0) {
                if (!c->power_line)
                        c->power_line = lineno;
                r = power_decl_set(&c->power, key, value, lineno, why, sizeof(why));
                return r < 0 ? pf_fail(c, r, "[power] %s: %.140s", key, why) : 0;
        }
        for (size_t i = 0; i < ARRAY_SIZE(pf_sections); i++) {
                if (strcmp(section, pf_sections[i].name) != 0)
                        continue;
                k = inikey_find(pf_sections[i].keys, pf_sections[i].n, key);
                if (!k)
                        return pf_fail(c, -EINVAL, "unknown key '%s' in [%s]", key, section);
                break;
        }
        if (!k)
                return pf_fail(c, -EINVAL, "unknown section [%s] (key '%s')", section, key);
        r = inikey_set(k, &c->p, value, NULL, why, sizeof(why));
        if (r < 0 && k->type == INIKEY_CUSTOM)
                return pf_fail(c, r, "%.150s%s", why, "");
        if (r < 0)
                return pf_fail(c, r, "%s = %.150s", key, why);
        c->seen_backend = c->seen_backend || k == &pf_platform_keys[0];
        return 0;
}

/* Checks what only the whole file can tell, and builds the power model. */
static int pf_finish(struct pf_ctx *c, struct inifile_error *err)
{
        struct platform_profile *p = &c->p;
        char why[200];
        int lineno;

        if (!c->seen_backend) {
                err->lineno = 0;
                snprintf(err->what, sizeof(err->what), "no 'backend' in [platform]");
                return -EINVAL;
        }
        if (!c->power_line)
                return 0;
        if (power_decl_check(&c->power, &lineno, why, sizeof(why)) < 0) {
                err->lineno = lineno > 0 ? lineno : c->power_line;
                snprintf(err->what, sizeof(err->what), "[power]: %.140s", why);
                return -EINVAL;
        }
        /* A profile has no top frequency to hold a lone core_w at. */
        if (power_decl_to_model(&c->power, 0, &p->power) < 0) {
                err->lineno = c->power_line;
                snprintf(err->what, sizeof(err->what), "[power]: core_w needs freq_mhz here");
                return -EINVAL;
        }
        p->power.declared = false; /* measured by calibration */
        if (c->power.seen & POWER_DECL_RESIDUAL)
                p->power_residual_w = c->power.residual_w;
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
                if (isfinite(p->delta_i_alpha))
                        fprintf(f, "delta_i_alpha = %.9g\n", p->delta_i_alpha);
                if (isfinite(p->delta_i_rate))
                        fprintf(f, "delta_i_rate = %.9g\n", p->delta_i_rate);
                if (isfinite(p->delta_i_fit_error))
                        fprintf(f, "delta_i_fit_error = %.9g\n", p->delta_i_fit_error);
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
