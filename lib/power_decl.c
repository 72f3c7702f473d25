/* The one [power] dialect (include/pctl/power_decl.h). */
#include "pctl/power_decl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl/inifile.h"
#include "pctl/inikey.h"
#include "pctl/util.h"

#define POWER_WATTS "a non-negative number of watts"
#define POWER_MHZ "a frequency in MHz (1-100000)"

/* Indexed by enum power_decl_key. */
static const struct inikey power_keys[] = {
    [POWER_DECL_KEY_STATIC] = {.key = "static_w",
                               .type = INIKEY_DOUBLE,
                               .offset = offsetof(struct power_decl, static_w),
                               .max = INFINITY,
                               .what = POWER_WATTS,
                               .doc = "W of the package with every core idle"},
    [POWER_DECL_KEY_CORE] = {.key = "core_w",
                             .type = INIKEY_DOUBLE,
                             .offset = offsetof(struct power_decl, core_w),
                             .max = INFINITY,
                             .what = POWER_WATTS,
                             .doc = "W per busy core at freq_mhz"},
    [POWER_DECL_KEY_IDLE] = {.key = "idle_w",
                             .type = INIKEY_DOUBLE,
                             .offset = offsetof(struct power_decl, idle_w),
                             .max = INFINITY,
                             .what = POWER_WATTS,
                             .doc = "W of a held, idle core (default core_w)"},
    [POWER_DECL_KEY_FREQ] = {.key = "freq_mhz",
                             .type = INIKEY_UINT,
                             .offset = offsetof(struct power_decl, freq_khz),
                             .min = 1,
                             .max = 100000,
                             .what = POWER_MHZ,
                             .doc = "frequency core_w holds at (default the top one)"},
    [POWER_DECL_KEY_RESIDUAL] = {.key = "residual_w",
                                 .type = INIKEY_DOUBLE,
                                 .offset = offsetof(struct power_decl, residual_w),
                                 .max = INFINITY,
                                 .what = POWER_WATTS,
                                 .doc = "RMS error of the model, W"},
};

/* The <MHZ> of core_w_<MHZ> and idle_w_<MHZ>, and their watts, parsed on their own. */
static const struct inikey power_point_mhz = {
    .key = "MHZ", .type = INIKEY_UINT, .min = 1, .max = 100000, .what = POWER_MHZ};
static const struct inikey power_point_w = {
    .key = "W", .type = INIKEY_DOUBLE, .max = INFINITY, .what = POWER_WATTS};

static int power_decl_twice(int first_line, char *why, size_t why_size)
{
        if (first_line > 0)
                snprintf(why, why_size, "set twice (first at line %d)", first_line);
        else
                snprintf(why, why_size, "set twice");
        return -EEXIST;
}

/* core_w_<MHZ> and idle_w_<MHZ>: one point of the per-frequency form. */
static int power_decl_set_point(struct power_decl *d, const char *key, const char *value,
                                int lineno, char *why, size_t why_size)
{
        bool core = strncmp(key, "core_w_", 7) == 0;
        struct power_decl_freq *fq = NULL;
        unsigned mhz;
        double w;
        int r;

        r = inikey_set(&power_point_mhz, &mhz, key + 7, NULL, why, why_size);
        if (r < 0)
                return r;
        r = inikey_set(&power_point_w, &w, value, NULL, why, why_size);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < d->n_freqs; i++)
                if (d->freqs[i].mhz == mhz)
                        fq = &d->freqs[i];
        if (fq && (core ? fq->core_line : fq->idle_line))
                return power_decl_twice(core ? fq->core_line : fq->idle_line, why, why_size);
        if (!fq) {
                if (d->n_freqs == MODEL_MAX_FREQS) {
                        snprintf(why, why_size, "more frequencies than %d", MODEL_MAX_FREQS);
                        return -E2BIG;
                }
                fq = &d->freqs[d->n_freqs++];
                *fq = (struct power_decl_freq){.mhz = mhz};
        }
        /* A line the caller did not name still marks the half as given. */
        if (core) {
                fq->core_w = w;
                fq->core_line = lineno > 0 ? lineno : -1;
        } else {
                fq->idle_w = w;
                fq->idle_line = lineno > 0 ? lineno : -1;
        }
        return 0;
}

int power_decl_set(struct power_decl *d, const char *key, const char *value, int lineno, char *why,
                   size_t why_size)
{
        const struct inikey *k = inikey_find(power_keys, ARRAY_SIZE(power_keys), key);
        struct power_decl next = *d;
        unsigned bit;
        int r;

        if (!k && (strncmp(key, "core_w_", 7) == 0 || strncmp(key, "idle_w_", 7) == 0)) {
                r = power_decl_set_point(d, key, value, lineno, why, why_size);
                /* A refused point stood for the core power: it is not also missing. */
                if (r < 0 && r != -EEXIST)
                        d->refused |= POWER_DECL_CORE;
                return r;
        }
        if (!k) {
                char names[200];

                inikey_names(power_keys, ARRAY_SIZE(power_keys), names, sizeof(names));
                snprintf(why, why_size, "unknown key (known: %s, core_w_MHZ, idle_w_MHZ)", names);
                return -ENOENT;
        }
        bit = 1u << (k - power_keys);
        r = inikey_set(k, &next, value, NULL, why, why_size);
        if (r < 0) {
                d->refused |= bit;
                return r;
        }
        if (d->seen & bit)
                return power_decl_twice(d->line[k - power_keys], why, why_size);
        if (bit == POWER_DECL_FREQ)
                next.freq_khz *= 1000; /* the key is in MHz */
        next.seen |= bit;
        next.line[k - power_keys] = lineno;
        *d = next;
        return 0;
}

int power_decl_key(struct power_decl *d, const char *key, const char *value)
{
        char why[200];

        return power_decl_set(d, key, value, 0, why, sizeof(why));
}

int power_decl_check(const struct power_decl *d, int *lineno, char *why, size_t why_size)
{
        bool have_static = d->seen & POWER_DECL_STATIC;
        bool have_core = (d->seen & POWER_DECL_CORE) || d->n_freqs > 0;

        *lineno = 0;
        why[0] = '\0';
        if (d->n_freqs > 0 && (d->seen & (POWER_DECL_CORE | POWER_DECL_IDLE | POWER_DECL_FREQ))) {
                *lineno = d->freqs[0].core_line > 0 ? d->freqs[0].core_line : d->freqs[0].idle_line;
                snprintf(why, why_size,
                         "core_w, idle_w and freq_mhz do not mix with core_w_MHZ/idle_w_MHZ");
                return -ENODATA;
        }
        for (unsigned i = 0; i < d->n_freqs; i++) {
                const struct power_decl_freq *fq = &d->freqs[i];

                if (fq->core_line && fq->idle_line)
                        continue;
                *lineno = fq->core_line ? fq->core_line : fq->idle_line;
                snprintf(why, why_size, "%s_%u has no %s_%u to pair with",
                         fq->core_line ? "core_w" : "idle_w", fq->mhz,
                         fq->core_line ? "idle_w" : "core_w", fq->mhz);
                return -ENODATA;
        }
        if (have_static && have_core)
                return 0;
        /* A refused value was reported where it stood; it is not also missing. */
        if (!(d->refused & (POWER_DECL_STATIC | POWER_DECL_CORE)))
                snprintf(why, why_size, "a model needs both static_w and core_w (%s missing)",
                         !have_static && !have_core ? "both"
                         : !have_static             ? "static_w"
                                                    : "core_w");
        return -ENODATA;
}

int power_decl_to_model(const struct power_decl *d, unsigned top_khz, struct model_power *out)
{
        struct model_power pm = {.static_w = d->static_w, .declared = true};
        unsigned khz = (d->seen & POWER_DECL_FREQ) ? d->freq_khz : top_khz;
        char why[200];
        int lineno, r;

        if (power_decl_check(d, &lineno, why, sizeof(why)) < 0)
                return -ENODATA;
        for (unsigned i = 0; i < d->n_freqs; i++) {
                const struct power_decl_freq *fq = &d->freqs[i];

                r = model_power_set_point(&pm, fq->mhz * 1000, fq->core_w, fq->idle_w);
                if (r < 0)
                        return r;
        }
        if (d->n_freqs == 0) {
                if (khz == 0)
                        return -ENODATA;
                /* Whether an idle core the app holds is cheap is a property of the machine we
                 * cannot see (a VM's host decides): unless idle_w is declared, a held core
                 * costs core_w. */
                model_power_set_point(&pm, khz, d->core_w,
                                      (d->seen & POWER_DECL_IDLE) ? d->idle_w : d->core_w);
        }
        *out = pm;
        return 0;
}

bool power_decl_key_info(size_t i, const char **key, const char **doc)
{
        static const char *const point_keys[][2] = {
            {"core_w_MHZ", "W per busy core at MHZ, one point per frequency"},
            {"idle_w_MHZ", "W of a held, idle core at MHZ (pairs with core_w_MHZ)"},
        };

        if (i < ARRAY_SIZE(power_keys)) {
                *key = power_keys[i].key;
                *doc = power_keys[i].doc;
                return true;
        }
        i -= ARRAY_SIZE(power_keys);
        if (i >= ARRAY_SIZE(point_keys))
                return false;
        *key = point_keys[i][0];
        *doc = point_keys[i][1];
        return true;
}

struct load_ctx {
        struct power_decl d;
        struct inifile_error *err;
};

static int load_handler(void *user, const char *section, const char *key, const char *value,
                        int lineno)
{
        struct load_ctx *c = user;
        char why[200];
        int r;

        if (strcmp(section, "power") != 0)
                return 0;
        r = power_decl_set(&c->d, key, value, lineno, why, sizeof(why));
        if (r < 0 && !c->err->what[0]) {
                int n = snprintf(c->err->what, sizeof(c->err->what), "[power] %s: ", key);

                /* A truncated reason still names the key. */
                if (n > 0 && (size_t)n < sizeof(c->err->what))
                        strscpy(c->err->what + n, why, sizeof(c->err->what) - (size_t)n);
        }
        return r;
}

int power_decl_load(const char *path, struct power_decl *d, char *err, size_t err_size)
{
        struct inifile_error e;
        struct load_ctx c = {.err = &e};
        char why[200];
        int lineno;
        int r = inifile_parse(path, load_handler, &c, &e);

        if (r < 0) {
                if (e.lineno)
                        snprintf(err, err_size, "%s:%d: %s", path, e.lineno, e.what);
                else
                        snprintf(err, err_size, "%s: %s", path, e.what);
                return r;
        }
        r = power_decl_check(&c.d, &lineno, why, sizeof(why));
        if (r < 0) {
                if (lineno > 0)
                        snprintf(err, err_size, "%s:%d: [power]: %s", path, lineno, why);
                else
                        snprintf(err, err_size, "%s: [power]: %s", path, why);
                return r;
        }
        *d = c.d;
        return 0;
}

bool power_decl_same(const struct power_decl *a, const struct power_decl *b)
{
        /* The model, not where in the file each key was written. */
        if (a->seen != b->seen || a->static_w != b->static_w || a->core_w != b->core_w ||
            a->idle_w != b->idle_w || a->freq_khz != b->freq_khz ||
            a->residual_w != b->residual_w || a->n_freqs != b->n_freqs)
                return false;
        for (unsigned i = 0; i < a->n_freqs; i++)
                if (a->freqs[i].mhz != b->freqs[i].mhz ||
                    a->freqs[i].core_w != b->freqs[i].core_w ||
                    a->freqs[i].idle_w != b->freqs[i].idle_w)
                        return false;
        return true;
}
