#include "pctl/power_decl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pctl/inifile.h"
#include "pctl/util.h"

static int parse_watts(const char *value, double *out)
{
        double v;
        int r = parse_double(value, &v);

        if (r < 0)
                return r;
        if (v < 0)
                return -ERANGE;
        *out = v;
        return 0;
}

int power_decl_key(struct power_decl *d, const char *key, const char *value)
{
        double v;
        unsigned mhz;
        int r;

        if (strcmp(key, "freq_mhz") == 0) {
                r = parse_uint(value, &mhz);
                if (r < 0)
                        return r;
                if (mhz == 0 || mhz > 100000)
                        return -ERANGE;
                d->freq_khz = mhz * 1000;
                d->seen |= POWER_DECL_FREQ;
                return 0;
        }
        static const struct {
                const char *key;
                size_t offset;
                unsigned bit;
        } watts[] = {
            {"static_w", offsetof(struct power_decl, static_w), POWER_DECL_STATIC},
            {"core_w", offsetof(struct power_decl, core_w), POWER_DECL_CORE},
            {"idle_w", offsetof(struct power_decl, idle_w), POWER_DECL_IDLE},
        };
        for (size_t i = 0; i < ARRAY_SIZE(watts); i++) {
                if (strcmp(key, watts[i].key) != 0)
                        continue;
                r = parse_watts(value, &v);
                if (r < 0)
                        return r;
                *(double *)((char *)d + watts[i].offset) = v;
                d->seen |= watts[i].bit;
                return 0;
        }
        return -ENOENT;
}

int power_decl_to_model(const struct power_decl *d, unsigned top_khz, struct model_power *out)
{
        struct model_power pm = {.static_w = d->static_w, .declared = true};
        unsigned khz = (d->seen & POWER_DECL_FREQ) ? d->freq_khz : top_khz;

        if (!(d->seen & POWER_DECL_STATIC) || !(d->seen & POWER_DECL_CORE) || khz == 0)
                return -ENODATA;
        /* Whether an idle core the app holds is cheap is a property of the machine we cannot
         * see (a VM's host decides): unless idle_w is declared, a held core costs core_w. */
        model_power_set_point(&pm, khz, d->core_w,
                              (d->seen & POWER_DECL_IDLE) ? d->idle_w : d->core_w);
        *out = pm;
        return 0;
}

struct load_ctx {
        struct power_decl d;
        struct inifile_error *err;
};

static int load_handler(void *user, const char *section, const char *key, const char *value,
                        int lineno)
{
        struct load_ctx *c = user;
        int r;

        (void)lineno;
        if (strcmp(section, "power") != 0)
                return 0;
        r = power_decl_key(&c->d, key, value);
        if (r < 0 && !c->err->what[0])
                snprintf(c->err->what, sizeof(c->err->what), "[power] %s = %s: %s", key, value,
                         r == -ENOENT ? "unknown key (static_w, core_w, idle_w, freq_mhz)"
                                      : "not a non-negative number");
        return r;
}

int power_decl_load(const char *path, struct power_decl *d, char *err, size_t err_size)
{
        struct inifile_error e;
        struct load_ctx c = {.err = &e};
        int r = inifile_parse(path, load_handler, &c, &e);

        if (r < 0) {
                if (e.lineno)
                        snprintf(err, err_size, "%s:%d: %s", path, e.lineno, e.what);
                else
                        snprintf(err, err_size, "%s: %s", path, e.what);
                return r;
        }
        if (!(c.d.seen & POWER_DECL_STATIC) || !(c.d.seen & POWER_DECL_CORE)) {
                snprintf(err, err_size, "%s: [power] needs both static_w and core_w", path);
                return -ENODATA;
        }
        *d = c.d;
        return 0;
}
