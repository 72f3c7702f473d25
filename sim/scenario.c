/* Scenario files of the model machine: [machine] (a preset and keys that override it) and one
 * [app NAME] per application. Every key is one line of a table; docs/sim.md lists them. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/inifile.h"
#include "pctl/model.h"
#include "pctl/util.h"
#include "sim_internal.h"

/* Where the numbers come from is in docs/sim.md, "Presets". */
static const struct sim_machine_spec presets[] = {
    {
        .preset = "i7-4820k",
        .sockets = 1,
        .cores_per_socket = 4,
        .threads_per_core = 1,
        .n_freqs = 9,
        .freqs_mhz = {1200, 1500, 1800, 2100, 2400, 2700, 3000, 3300, 3700},
        .volts = {0.80, 0.85, 0.90, 0.95, 1.00, 1.05, 1.10, 1.15, 1.20},
        .uncore_w = 18.0,
        .core_idle_w = 0.5,
        .core_static_w = 4.0,
        .core_dyn_w = 22.0,
        .os_ips = 6.6e4,
        .seed = 1,
    },
    {
        .preset = "xeon-e5-2630v2x2",
        .sockets = 2,
        .cores_per_socket = 6,
        .threads_per_core = 1,
        .n_freqs = 8,
        .freqs_mhz = {1200, 1400, 1600, 1800, 2000, 2200, 2400, 2600},
        .volts = {0.80, 0.83, 0.86, 0.90, 0.94, 0.98, 1.02, 1.05},
        .uncore_w = 12.0,
        .core_idle_w = 0.3,
        .core_static_w = 2.5,
        .core_dyn_w = 8.0,
        .os_ips = 6.6e4,
        .seed = 1,
    },
    {
        .preset = "xeon-phi-7120x",
        .sockets = 1,
        .cores_per_socket = 61,
        .threads_per_core = 1,
        .n_freqs = 3,
        .freqs_mhz = {1000, 1100, 1238},
        .volts = {0.95, 1.00, 1.05},
        .uncore_w = 60.0,
        .core_idle_w = 0.2,
        .core_static_w = 1.2,
        .core_dyn_w = 2.7,
        .os_ips = 6.6e4,
        .seed = 1,
    },
    {
        .preset = "server-64",
        .sockets = 2,
        .cores_per_socket = 32,
        .threads_per_core = 1,
        .n_freqs = 6,
        .freqs_mhz = {1500, 1800, 2100, 2400, 2700, 3000},
        .volts = {0.75, 0.81, 0.87, 0.93, 0.99, 1.05},
        .uncore_w = 45.0,
        .core_idle_w = 0.1,
        .core_static_w = 1.5,
        .core_dyn_w = 4.0,
        .os_ips = 6.6e4,
        .seed = 1,
    },
};

enum key_type { K_UINT, K_DOUBLE, K_U64, K_FREQS, K_VOLTS, K_PRESET };

/* Machine keys: the bit marks it set by the file, so the preset is applied under it. */
static const struct {
        const char *key;
        enum key_type type;
        size_t offset;
        double min, max;
} machine_keys[] = {
    {"preset", K_PRESET, offsetof(struct sim_machine_spec, preset), 0, 0},
    {"sockets", K_UINT, offsetof(struct sim_machine_spec, sockets), 1, SENSOR_MAX_PACKAGES},
    {"cores_per_socket", K_UINT, offsetof(struct sim_machine_spec, cores_per_socket), 1,
     CPUMASK_MAX},
    {"threads_per_core", K_UINT, offsetof(struct sim_machine_spec, threads_per_core), 1, 8},
    {"freqs_mhz", K_FREQS, offsetof(struct sim_machine_spec, freqs_mhz), 1, 100000},
    {"volts", K_VOLTS, offsetof(struct sim_machine_spec, volts), 0.1, 5},
    {"uncore_w", K_DOUBLE, offsetof(struct sim_machine_spec, uncore_w), 0, 10000},
    {"core_idle_w", K_DOUBLE, offsetof(struct sim_machine_spec, core_idle_w), 0, 1000},
    {"core_static_w", K_DOUBLE, offsetof(struct sim_machine_spec, core_static_w), 0, 1000},
    {"core_dyn_w", K_DOUBLE, offsetof(struct sim_machine_spec, core_dyn_w), 0, 1000},
    {"os_ips", K_DOUBLE, offsetof(struct sim_machine_spec, os_ips), 0, 1e12},
    {"counter_noise", K_DOUBLE, offsetof(struct sim_machine_spec, counter_noise), 0, 1},
    {"seed", K_U64, offsetof(struct sim_machine_spec, seed), 0, 0},
};

enum app_key { A_START, A_INSTR, A_P, A_IPC, A_MEM, A_THREADS, A_SPIN, A_PHASES, A_MEASURED };
#define A_AMDAHL_ONLY                                                                              \
        ((1u << A_P) | (1u << A_IPC) | (1u << A_MEM) | (1u << A_THREADS) | (1u << A_SPIN) |        \
         (1u << A_PHASES))

static const struct {
        const char *key;
        enum key_type type;
        size_t offset;
        double min, max;
} app_keys[] = {
    [A_START] = {"start_s", K_DOUBLE, offsetof(struct sim_app_spec, start_s), 0, 1e9},
    [A_INSTR] = {"instructions", K_DOUBLE, offsetof(struct sim_app_spec, instructions), 1, 1e20},
    [A_P] = {"p", K_DOUBLE, offsetof(struct sim_app_spec, p), 0, 1},
    [A_IPC] = {"ipc", K_DOUBLE, offsetof(struct sim_app_spec, ipc), 0.001, 64},
    [A_MEM] = {"mem_fraction", K_DOUBLE, offsetof(struct sim_app_spec, mem_fraction), 0, 1},
    [A_THREADS] = {"threads", K_UINT, offsetof(struct sim_app_spec, threads), 1, 100000},
    [A_SPIN] = {"spin", K_DOUBLE, offsetof(struct sim_app_spec, spin), 0, 1},
    [A_PHASES] = {"phases", K_PRESET, 0, 0, 0},
    [A_MEASURED] = {"measured", K_PRESET, 0, 0, 0},
};

struct parse_ctx {
        const char *file;
        struct sim_error *err;
        struct sim_machine_spec mach;
        unsigned mach_seen; /* bit i = machine_keys[i] */
        int mach_lineno[ARRAY_SIZE(machine_keys)];
        unsigned n_volts;
        bool preset_given; /* even a bad one: then the keys it would give are not missing */
        struct sim_app_spec *apps;
        unsigned n_apps;
        char cur_section[256];
        int cur_app; /* -1 outside an [app] */
        bool failed;
};

static void report(struct parse_ctx *c, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(struct parse_ctx *c, int lineno, const char *fmt, ...)
{
        char what[200];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        c->failed = true;
        if (!c->err)
                return;
        if (c->err->n_errors++ == 0) {
                c->err->lineno = lineno;
                snprintf(c->err->what, sizeof(c->err->what), "%s", what);
        }
        size_t used = strlen(c->err->all);
        if (used < sizeof(c->err->all) - 1 && lineno > 0)
                snprintf(c->err->all + used, sizeof(c->err->all) - used, "%s:%d: %s\n", c->file,
                         lineno, what);
        else if (used < sizeof(c->err->all) - 1)
                snprintf(c->err->all + used, sizeof(c->err->all) - used, "%s: %s\n", c->file, what);
}

static int parse_num(struct parse_ctx *c, int lineno, const char *key, enum key_type type,
                     const char *value, double min, double max, void *dst)
{
        double d;
        unsigned u;
        uint64_t u64;

        switch (type) {
        case K_UINT:
                if (parse_uint(value, &u) < 0) {
                        report(c, lineno, "%s: '%s' is not a whole number", key, value);
                        return -EINVAL;
                }
                if (u < min || u > max) {
                        report(c, lineno, "%s: %u is outside [%g, %g]", key, u, min, max);
                        return -ERANGE;
                }
                *(unsigned *)dst = u;
                return 0;
        case K_U64:
                if (parse_u64(value, &u64) < 0) {
                        report(c, lineno, "%s: '%s' is not a whole number", key, value);
                        return -EINVAL;
                }
                *(uint64_t *)dst = u64;
                return 0;
        case K_DOUBLE:
                if (parse_double(value, &d) < 0 || !isfinite(d)) {
                        report(c, lineno, "%s: '%s' is not a number", key, value);
                        return -EINVAL;
                }
                if (d < min || d > max) {
                        report(c, lineno, "%s: %g is outside [%g, %g]", key, d, min, max);
                        return -ERANGE;
                }
                *(double *)dst = d;
                return 0;
        default:
                return -EINVAL;
        }
}

/* Space-separated numbers into dst (unsigned or double), at most ACTUATOR_MAX_FREQS. */
static int parse_list(struct parse_ctx *c, int lineno, const char *key, const char *value,
                      bool as_uint, double min, double max, void *dst, unsigned *n_out)
{
        char buf[512], *save = NULL;
        unsigned n = 0;
        unsigned uv[ACTUATOR_MAX_FREQS];
        double dv[ACTUATOR_MAX_FREQS];

        if (strscpy(buf, value, sizeof(buf)) < 0) {
                report(c, lineno, "%s: list too long", key);
                return -EINVAL;
        }
        for (char *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                if (n == ACTUATOR_MAX_FREQS) {
                        report(c, lineno, "%s: more than %d values", key, ACTUATOR_MAX_FREQS);
                        return -E2BIG;
                }
                int r = parse_num(c, lineno, key, as_uint ? K_UINT : K_DOUBLE, tok, min, max,
                                  as_uint ? (void *)&uv[n] : (void *)&dv[n]);
                if (r < 0)
                        return r;
                n++;
        }
        if (n == 0) {
                report(c, lineno, "%s: empty list", key);
                return -EINVAL;
        }
        if (as_uint) {
                for (unsigned i = 1; i < n; i++)
                        if (uv[i] <= uv[i - 1]) {
                                report(c, lineno, "%s: frequencies must be ascending", key);
                                return -EINVAL;
                        }
                memcpy(dst, uv, n * sizeof(uv[0]));
        } else {
                memcpy(dst, dv, n * sizeof(dv[0]));
        }
        *n_out = n;
        return 0;
}

static int machine_key(struct parse_ctx *c, const char *key, const char *value, int lineno)
{
        for (size_t i = 0; i < ARRAY_SIZE(machine_keys); i++) {
                void *dst = (char *)&c->mach + machine_keys[i].offset;
                int r;

                if (strcmp(key, machine_keys[i].key) != 0)
                        continue;
                switch (machine_keys[i].type) {
                case K_PRESET: {
                        bool found = false;

                        c->preset_given = true;
                        for (size_t p = 0; p < ARRAY_SIZE(presets); p++)
                                found |= strcmp(value, presets[p].preset) == 0;
                        if (!found) {
                                report(c, lineno,
                                       "preset: unknown machine '%s' (i7-4820k, "
                                       "xeon-e5-2630v2x2, xeon-phi-7120x, server-64)",
                                       value);
                                return -EINVAL;
                        }
                        strscpy(c->mach.preset, value, sizeof(c->mach.preset));
                        r = 0;
                        break;
                }
                case K_FREQS:
                        r = parse_list(c, lineno, key, value, true, machine_keys[i].min,
                                       machine_keys[i].max, dst, &c->mach.n_freqs);
                        break;
                case K_VOLTS:
                        /* The count is checked against freqs_mhz once both are known. */
                        r = parse_list(c, lineno, key, value, false, machine_keys[i].min,
                                       machine_keys[i].max, dst, &c->n_volts);
                        break;
                default:
                        r = parse_num(c, lineno, key, machine_keys[i].type, value,
                                      machine_keys[i].min, machine_keys[i].max, dst);
                }
                if (r < 0)
                        return r;
                c->mach_seen |= 1u << i;
                c->mach_lineno[i] = lineno;
                return 0;
        }
        report(c, lineno, "unknown key '%s' in [machine]", key);
        return -ENOENT;
}

static int app_phases(struct parse_ctx *c, struct sim_app_spec *a, const char *value, int lineno)
{
        char buf[512], *save = NULL;
        struct sim_phase ph[64];
        unsigned n = 0;

        if (strscpy(buf, value, sizeof(buf)) < 0) {
                report(c, lineno, "phases: list too long");
                return -EINVAL;
        }
        for (char *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                char *f[4], *s2 = NULL;
                unsigned nf = 0;

                if (n == ARRAY_SIZE(ph)) {
                        report(c, lineno, "phases: more than %zu phases", ARRAY_SIZE(ph));
                        return -E2BIG;
                }
                for (char *x = strtok_r(tok, ":", &s2); x && nf < 4; x = strtok_r(NULL, ":", &s2))
                        f[nf++] = x;
                if (nf < 2 || nf > 3) {
                        report(c, lineno, "phases: '%s' is not P:SECONDS or P:SECONDS:IPC", tok);
                        return -EINVAL;
                }
                ph[n] = (struct sim_phase){0};
                if (parse_num(c, lineno, "phases P", K_DOUBLE, f[0], 0, 1, &ph[n].p) < 0 ||
                    parse_num(c, lineno, "phases SECONDS", K_DOUBLE, f[1], 0, 1e9, &ph[n].at_s) <
                        0 ||
                    (nf == 3 &&
                     parse_num(c, lineno, "phases IPC", K_DOUBLE, f[2], 0.001, 64, &ph[n].ipc) < 0))
                        return -EINVAL;
                if (n > 0 && ph[n].at_s <= ph[n - 1].at_s) {
                        report(c, lineno, "phases: offsets must be ascending (%g after %g)",
                               ph[n].at_s, ph[n - 1].at_s);
                        return -EINVAL;
                }
                n++;
        }
        if (n == 0) {
                report(c, lineno, "phases: empty list");
                return -EINVAL;
        }
        free(a->phases);
        a->phases = malloc(n * sizeof(*a->phases));
        if (!a->phases)
                return -ENOMEM;
        memcpy(a->phases, ph, n * sizeof(ph[0]));
        a->n_phases = n;
        return 0;
}

static int app_measured(struct parse_ctx *c, struct sim_app_spec *a, const char *value, int lineno)
{
        char buf[256], *save = NULL, *f[5];
        unsigned nf = 0;
        struct sim_row row = {.lineno = lineno};
        struct sim_row *rows;

        strscpy(buf, value, sizeof(buf));
        for (char *t = strtok_r(buf, " \t", &save); t && nf < 5; t = strtok_r(NULL, " \t", &save))
                f[nf++] = t;
        if (nf != 4) {
                report(c, lineno, "measured: %u fields, expected CORES FREQ_MHZ TIME_S ENERGY_J",
                       nf);
                return -EINVAL;
        }
        if (parse_num(c, lineno, "measured CORES", K_UINT, f[0], 1, CPUMASK_MAX, &row.cores) < 0 ||
            parse_num(c, lineno, "measured FREQ_MHZ", K_UINT, f[1], 1, 100000, &row.freq_mhz) < 0 ||
            parse_num(c, lineno, "measured TIME_S", K_DOUBLE, f[2], 1e-9, 1e9, &row.time_s) < 0 ||
            parse_num(c, lineno, "measured ENERGY_J", K_DOUBLE, f[3], 1e-9, 1e15, &row.energy_j) <
                0)
                return -EINVAL;
        for (unsigned i = 0; i < a->n_rows; i++)
                if (a->rows[i].cores == row.cores && a->rows[i].freq_mhz == row.freq_mhz) {
                        report(c, lineno, "measured: %u cores at %u MHz already given on line %d",
                               row.cores, row.freq_mhz, a->rows[i].lineno);
                        return -EINVAL;
                }
        rows = realloc(a->rows, (a->n_rows + 1) * sizeof(*rows));
        if (!rows)
                return -ENOMEM;
        a->rows = rows;
        a->rows[a->n_rows++] = row;
        return 0;
}

static int app_key(struct parse_ctx *c, struct sim_app_spec *a, const char *key, const char *value,
                   int lineno)
{
        for (size_t i = 0; i < ARRAY_SIZE(app_keys); i++) {
                int r;

                if (strcmp(key, app_keys[i].key) != 0)
                        continue;
                if (i != A_MEASURED && (a->seen & (1u << i))) {
                        report(c, lineno, "%s given twice in [app %s]", key, a->name);
                        return -EINVAL;
                }
                if (i == A_PHASES)
                        r = app_phases(c, a, value, lineno);
                else if (i == A_MEASURED)
                        r = app_measured(c, a, value, lineno);
                else
                        r = parse_num(c, lineno, key, app_keys[i].type, value, app_keys[i].min,
                                      app_keys[i].max, (char *)a + app_keys[i].offset);
                if (r < 0)
                        return r;
                a->seen |= 1u << i;
                return 0;
        }
        report(c, lineno, "unknown key '%s' in [app %s]", key, a->name);
        return -ENOENT;
}

static int section_app(struct parse_ctx *c, const char *section, int lineno)
{
        char name[256];
        struct sim_app_spec *apps;

        strscpy(name, section + 4, sizeof(name));
        char *n = strstrip(name);
        if (!*n || strlen(n) >= SIM_NAME_MAX || strpbrk(n, " \t/")) {
                report(c, lineno, "[%s]: an app name is 1 to %d characters without spaces or '/'",
                       section, SIM_NAME_MAX - 1);
                return -EINVAL;
        }
        for (unsigned i = 0; i < c->n_apps; i++)
                if (strcmp(c->apps[i].name, n) == 0) {
                        report(c, lineno, "[app %s] given twice (first near line %d)", n,
                               c->apps[i].lineno);
                        return -EINVAL;
                }
        apps = realloc(c->apps, (c->n_apps + 1) * sizeof(*apps));
        if (!apps)
                return -ENOMEM;
        c->apps = apps;
        c->apps[c->n_apps] = (struct sim_app_spec){.lineno = lineno, .ipc = 1.0};
        strscpy(c->apps[c->n_apps].name, n, SIM_NAME_MAX);
        c->cur_app = (int)c->n_apps++;
        return 0;
}

static int scenario_handler(void *user, const char *section, const char *key, const char *value,
                            int lineno)
{
        struct parse_ctx *c = user;

        if (strcmp(section, c->cur_section) != 0) {
                /* inih calls us per key, so a new section shows with its first key. */
                strscpy(c->cur_section, section, sizeof(c->cur_section));
                c->cur_app = -1;
                if (strncmp(section, "app ", 4) == 0) {
                        int r = section_app(c, section, lineno);
                        if (r < 0)
                                return r;
                } else if (strcmp(section, "machine") != 0) {
                        report(c, lineno, "unknown section [%s] (machine, app NAME)", section);
                        return -ENOENT;
                }
        }
        if (strcmp(section, "machine") == 0)
                return machine_key(c, key, value, lineno);
        if (c->cur_app < 0) {
                /* Errors in this section were reported at its first line. */
                return -EINVAL;
        }
        return app_key(c, &c->apps[c->cur_app], key, value, lineno);
}

static int cmp_uint(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
        return (x > y) - (x < y);
}

/* Rows must form a full grid (every cores count at every frequency), so that bilinear
 * interpolation never invents a corner. */
static int build_grid(struct parse_ctx *c, struct sim_app_spec *a)
{
        unsigned gc[ACTUATOR_MAX_FREQS * 4], gf[ACTUATOR_MAX_FREQS];
        unsigned nc = 0, nf = 0;

        for (unsigned i = 0; i < a->n_rows; i++) {
                bool have_c = false, have_f = false;

                for (unsigned j = 0; j < nc; j++)
                        have_c |= gc[j] == a->rows[i].cores;
                for (unsigned j = 0; j < nf; j++)
                        have_f |= gf[j] == a->rows[i].freq_mhz;
                if (!have_c) {
                        if (nc == ARRAY_SIZE(gc)) {
                                report(c, a->rows[i].lineno, "measured: too many core counts");
                                return -E2BIG;
                        }
                        gc[nc++] = a->rows[i].cores;
                }
                if (!have_f) {
                        if (nf == ARRAY_SIZE(gf)) {
                                report(c, a->rows[i].lineno, "measured: too many frequencies");
                                return -E2BIG;
                        }
                        gf[nf++] = a->rows[i].freq_mhz;
                }
        }
        qsort(gc, nc, sizeof(gc[0]), cmp_uint);
        qsort(gf, nf, sizeof(gf[0]), cmp_uint);
        a->gc = malloc(nc * sizeof(unsigned));
        a->gf = malloc(nf * sizeof(unsigned));
        a->gt = malloc(nc * nf * sizeof(double));
        a->ge = malloc(nc * nf * sizeof(double));
        if (!a->gc || !a->gf || !a->gt || !a->ge)
                return -ENOMEM;
        memcpy(a->gc, gc, nc * sizeof(unsigned));
        memcpy(a->gf, gf, nf * sizeof(unsigned));
        a->n_gc = nc;
        a->n_gf = nf;
        for (unsigned i = 0; i < nc * nf; i++)
                a->gt[i] = NAN;
        for (unsigned i = 0; i < a->n_rows; i++) {
                unsigned ci = 0, fi = 0;

                while (gc[ci] != a->rows[i].cores)
                        ci++;
                while (gf[fi] != a->rows[i].freq_mhz)
                        fi++;
                a->gt[ci * nf + fi] = a->rows[i].time_s;
                a->ge[ci * nf + fi] = a->rows[i].energy_j;
        }
        for (unsigned ci = 0; ci < nc; ci++)
                for (unsigned fi = 0; fi < nf; fi++)
                        if (isnan(a->gt[ci * nf + fi])) {
                                report(c, a->rows[a->n_rows - 1].lineno,
                                       "measured: rows of [app %s] are not a grid: no row for "
                                       "%u cores at %u MHz",
                                       a->name, gc[ci], gf[fi]);
                                return -EINVAL;
                        }
        a->rows_p = NAN;
        if (nc > 1) {
                double sp = a->gt[0 * nf + nf - 1] / a->gt[(nc - 1) * nf + nf - 1];
                double p;

                /* eq. 10 wants SP against one core: only a grid with a one-core row tells. */
                if (gc[0] == 1 && model_p_from_speedup(gc[nc - 1], sp, &p) >= 0)
                        a->rows_p = p;
        }
        return 0;
}

static void finish_machine(struct parse_ctx *c, struct sim_machine_spec *out)
{
        struct sim_machine_spec m = {0};
        static const char *const required[] = {"sockets",       "cores_per_socket", "freqs_mhz",
                                               "volts",         "uncore_w",         "core_idle_w",
                                               "core_static_w", "core_dyn_w"};

        if (c->mach.preset[0]) {
                for (size_t p = 0; p < ARRAY_SIZE(presets); p++)
                        if (strcmp(c->mach.preset, presets[p].preset) == 0)
                                m = presets[p];
        } else if (!c->preset_given) {
                m.threads_per_core = 1;
                m.seed = 1;
                for (size_t r = 0; r < ARRAY_SIZE(required); r++)
                        for (size_t i = 0; i < ARRAY_SIZE(machine_keys); i++)
                                if (strcmp(machine_keys[i].key, required[r]) == 0 &&
                                    !(c->mach_seen & (1u << i)))
                                        report(c, 0, "[machine]: %s is required without a preset",
                                               required[r]);
        }
        unsigned volts_n = m.n_freqs;
        for (size_t i = 0; i < ARRAY_SIZE(machine_keys); i++) {
                size_t off = machine_keys[i].offset;

                if (!(c->mach_seen & (1u << i)) || machine_keys[i].type == K_PRESET)
                        continue;
                if (machine_keys[i].type == K_FREQS) {
                        memcpy(m.freqs_mhz, c->mach.freqs_mhz, sizeof(m.freqs_mhz));
                        m.n_freqs = c->mach.n_freqs;
                } else if (machine_keys[i].type == K_VOLTS) {
                        memcpy(m.volts, c->mach.volts, sizeof(m.volts));
                        volts_n = c->n_volts;
                } else if (machine_keys[i].type == K_UINT) {
                        *(unsigned *)((char *)&m + off) = *(unsigned *)((char *)&c->mach + off);
                } else if (machine_keys[i].type == K_U64) {
                        *(uint64_t *)((char *)&m + off) = *(uint64_t *)((char *)&c->mach + off);
                } else {
                        *(double *)((char *)&m + off) = *(double *)((char *)&c->mach + off);
                }
        }
        if (volts_n != m.n_freqs)
                report(c, c->mach_lineno[5] ? c->mach_lineno[5] : c->mach_lineno[4],
                       "[machine]: %u volts for %u freqs_mhz (one voltage per frequency)", volts_n,
                       m.n_freqs);
        if ((uint64_t)m.sockets * m.cores_per_socket * m.threads_per_core > CPUMASK_MAX)
                report(c, 0, "[machine]: more than %d CPUs", CPUMASK_MAX);
        *out = m;
}

static void finish_apps(struct parse_ctx *c, const struct sim_machine_spec *m)
{
        for (unsigned i = 0; i < c->n_apps; i++) {
                struct sim_app_spec *a = &c->apps[i];

                if (!(a->seen & (1u << A_INSTR)))
                        report(c, a->lineno, "[app %s]: instructions is required", a->name);
                if (a->n_rows > 0) {
                        if (a->seen & A_AMDAHL_ONLY)
                                report(c, a->lineno,
                                       "[app %s]: measured rows and Amdahl keys (p, ipc, "
                                       "mem_fraction, threads, spin, phases) do not mix",
                                       a->name);
                        for (unsigned r = 0; r < a->n_rows; r++) {
                                bool ok = false;

                                for (unsigned f = 0; f < m->n_freqs; f++)
                                        ok |= m->freqs_mhz[f] == a->rows[r].freq_mhz;
                                if (!ok)
                                        report(c, a->rows[r].lineno,
                                               "measured: %u MHz is not one of the machine's "
                                               "freqs_mhz",
                                               a->rows[r].freq_mhz);
                        }
                        if (!c->failed)
                                build_grid(c, a);
                } else if (!(a->seen & (1u << A_P))) {
                        report(c, a->lineno,
                               "[app %s]: p is required (or measured rows instead of Amdahl keys)",
                               a->name);
                }
        }
}

void sim_scenario_free(struct sim_scenario *sc)
{
        if (!sc)
                return;
        for (unsigned i = 0; i < sc->n_apps; i++) {
                free(sc->apps[i].phases);
                free(sc->apps[i].rows);
                free(sc->apps[i].gc);
                free(sc->apps[i].gf);
                free(sc->apps[i].gt);
                free(sc->apps[i].ge);
        }
        free(sc->apps);
        free(sc);
}

int sim_scenario_load(const char *path, const char *text, const char *name,
                      struct sim_scenario **out, struct sim_error *err)
{
        struct parse_ctx c = {.file = name ? name : path, .err = err, .cur_app = -1};
        struct inifile_error ie;
        struct sim_scenario *sc;
        int r;

        if (err) {
                *err = (struct sim_error){0};
                strscpy(err->file, c.file ? c.file : "", sizeof(err->file));
        }
        r = path ? inifile_parse(path, scenario_handler, &c, &ie)
                 : inifile_parse_string(text, scenario_handler, &c, &ie);
        if (r < 0 && r != -EINVAL) {
                report(&c, 0, "%s", ie.what);
                goto fail;
        }
        if (r == -EINVAL && !c.failed) /* a line inih itself rejected */
                report(&c, ie.lineno, "%s", ie.what);
        sc = calloc(1, sizeof(*sc));
        if (!sc) {
                r = -ENOMEM;
                goto fail;
        }
        finish_machine(&c, &sc->mach);
        if (!c.failed)
                finish_apps(&c, &sc->mach);
        sc->apps = c.apps;
        sc->n_apps = c.n_apps;
        c.apps = NULL;
        if (c.failed) {
                sim_scenario_free(sc);
                return -EINVAL;
        }
        *out = sc;
        return 0;
fail:
        for (unsigned i = 0; i < c.n_apps; i++) {
                free(c.apps[i].phases);
                free(c.apps[i].rows);
        }
        free(c.apps);
        return r < 0 ? r : -EINVAL;
}

/* Index below x in a sorted grid and the weight of the one above; clamped at the edges. */
static void grid_pos(const unsigned *g, unsigned n, double x, unsigned *lo, double *w)
{
        if (n == 1 || x <= g[0]) {
                *lo = 0;
                *w = 0;
                return;
        }
        if (x >= g[n - 1]) {
                *lo = n - 2;
                *w = 1;
                return;
        }
        unsigned i = 0;
        while (x > g[i + 1])
                i++;
        *lo = i;
        *w = (x - g[i]) / (double)(g[i + 1] - g[i]);
}

void sim_rows_at(const struct sim_app_spec *a, double cores, double freq_mhz, double *time_s,
                 double *energy_j)
{
        unsigned ci, fi;
        double wc, wf;
        const double *v[2] = {a->gt, a->ge};
        double res[2];

        grid_pos(a->gc, a->n_gc, cores, &ci, &wc);
        grid_pos(a->gf, a->n_gf, freq_mhz, &fi, &wf);
        unsigned c1 = a->n_gc > 1 ? ci + 1 : ci, f1 = a->n_gf > 1 ? fi + 1 : fi;
        for (int k = 0; k < 2; k++) {
                const double *g = v[k];
                unsigned nf = a->n_gf;
                double lo = g[ci * nf + fi] * (1 - wf) + g[ci * nf + f1] * wf;
                double hi = g[c1 * nf + fi] * (1 - wf) + g[c1 * nf + f1] * wf;
                res[k] = lo * (1 - wc) + hi * wc;
        }
        *time_s = res[0];
        *energy_j = res[1];
}
