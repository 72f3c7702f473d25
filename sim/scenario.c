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
#include "pctl/inikey.h"
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
        .os_ips = 7.4e7,
        .os_ips_cpu = 1.85e7,
        .mem_bandwidth_gbs = 59.7,
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
        .os_ips = 5.2e7,
        .os_ips_cpu = 1.3e7,
        .mem_bandwidth_gbs = 51.2,
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
        .os_ips = 2.48e7,
        .os_ips_cpu = 6.19e6,
        .mem_bandwidth_gbs = 352.0,
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
        .os_ips = 6e7,
        .os_ips_cpu = 1.5e7,
        .mem_bandwidth_gbs = 204.8,
        .seed = 1,
    },
};

struct parse_ctx;

static int machine_preset(void *field, const char *value, void *ctx, char *why, size_t why_size);
static int machine_freqs(void *field, const char *value, void *ctx, char *why, size_t why_size);
static int machine_volts(void *field, const char *value, void *ctx, char *why, size_t why_size);
static int app_phases(void *field, const char *value, void *ctx, char *why, size_t why_size);
static int app_measured(void *field, const char *value, void *ctx, char *why, size_t why_size);

/* A number of a scenario: out of bounds reads "KEY: 5 is outside [1, 8]". */
#define SC_NUM(type_, struct_, field, lo, hi)                                                      \
        .type = type_, .offset = offsetof(struct struct_, field), .min = lo, .max = hi,            \
        .wording = INIKEY_SAY_OUTSIDE

/* Machine keys, indexed: the bit of a key set by the file puts it over the preset. */
enum machine_key {
        M_PRESET,
        M_SOCKETS,
        M_CORES_PER_SOCKET,
        M_THREADS_PER_CORE,
        M_FREQS,
        M_VOLTS,
        M_UNCORE,
        M_CORE_IDLE,
        M_CORE_STATIC,
        M_CORE_DYN,
        M_OS_IPS,
        M_OS_IPS_CPU,
        M_MEM_BW,
        M_NOISE,
        M_SEED,
        M_KEYS
};

static const struct inikey machine_keys[] = {
    [M_PRESET] = {.key = "preset",
                  .type = INIKEY_CUSTOM,
                  .offset = offsetof(struct sim_machine_spec, preset),
                  .custom = machine_preset},
    [M_SOCKETS] = {.key = "sockets",
                   SC_NUM(INIKEY_UINT, sim_machine_spec, sockets, 1, SENSOR_MAX_PACKAGES)},
    [M_CORES_PER_SOCKET] = {.key = "cores_per_socket",
                            SC_NUM(INIKEY_UINT, sim_machine_spec, cores_per_socket, 1,
                                   CPUMASK_MAX)},
    [M_THREADS_PER_CORE] = {.key = "threads_per_core",
                            SC_NUM(INIKEY_UINT, sim_machine_spec, threads_per_core, 1, 8)},
    [M_FREQS] = {.key = "freqs_mhz",
                 .type = INIKEY_CUSTOM,
                 .offset = offsetof(struct sim_machine_spec, freqs_mhz),
                 .custom = machine_freqs},
    [M_VOLTS] = {.key = "volts",
                 .type = INIKEY_CUSTOM,
                 .offset = offsetof(struct sim_machine_spec, volts),
                 .custom = machine_volts},
    [M_UNCORE] = {.key = "uncore_w", SC_NUM(INIKEY_DOUBLE, sim_machine_spec, uncore_w, 0, 10000)},
    [M_CORE_IDLE] = {.key = "core_idle_w",
                     SC_NUM(INIKEY_DOUBLE, sim_machine_spec, core_idle_w, 0, 1000)},
    [M_CORE_STATIC] = {.key = "core_static_w",
                       SC_NUM(INIKEY_DOUBLE, sim_machine_spec, core_static_w, 0, 1000)},
    [M_CORE_DYN] = {.key = "core_dyn_w",
                    SC_NUM(INIKEY_DOUBLE, sim_machine_spec, core_dyn_w, 0, 1000)},
    [M_OS_IPS] = {.key = "os_ips", SC_NUM(INIKEY_DOUBLE, sim_machine_spec, os_ips, 0, 1e12)},
    [M_OS_IPS_CPU] = {.key = "os_ips_cpu",
                      SC_NUM(INIKEY_DOUBLE, sim_machine_spec, os_ips_cpu, 0, 1e12)},
    [M_MEM_BW] = {.key = "mem_bandwidth_gbs",
                  SC_NUM(INIKEY_DOUBLE, sim_machine_spec, mem_bandwidth_gbs, 0, 1e6)},
    [M_NOISE] = {.key = "counter_noise",
                 SC_NUM(INIKEY_DOUBLE, sim_machine_spec, counter_noise, 0, 1)},
    [M_SEED] = {.key = "seed", SC_NUM(INIKEY_U64, sim_machine_spec, seed, 0, 0)},
};

enum app_key {
        A_START,
        A_INSTR,
        A_P,
        A_IPC,
        A_MEM,
        A_MEM_BYTES,
        A_THREADS,
        A_SPIN,
        A_PHASES,
        A_MEASURED,
        A_SYNC,
        A_IMBALANCE,
        A_SLEEP,
        A_EXTRA_WORK,
        A_PROGRESS_UNITS
};
#define A_AMDAHL_ONLY                                                                              \
        ((1u << A_P) | (1u << A_IPC) | (1u << A_MEM) | (1u << A_MEM_BYTES) | (1u << A_THREADS) |   \
         (1u << A_SPIN) | (1u << A_PHASES) | (1u << A_SYNC) | (1u << A_IMBALANCE) |                \
         (1u << A_SLEEP) | (1u << A_EXTRA_WORK) | (1u << A_PROGRESS_UNITS))

static const struct inikey app_keys[] = {
    [A_START] = {.key = "start_s", SC_NUM(INIKEY_DOUBLE, sim_app_spec, start_s, 0, 1e9)},
    [A_INSTR] = {.key = "instructions", SC_NUM(INIKEY_DOUBLE, sim_app_spec, instructions, 1, 1e20)},
    [A_P] = {.key = "p", SC_NUM(INIKEY_DOUBLE, sim_app_spec, p, 0, 1)},
    [A_IPC] = {.key = "ipc", SC_NUM(INIKEY_DOUBLE, sim_app_spec, ipc, 0.001, 64)},
    [A_MEM] = {.key = "mem_fraction", SC_NUM(INIKEY_DOUBLE, sim_app_spec, mem_fraction, 0, 1)},
    [A_MEM_BYTES] = {.key = "mem_bytes_per_instruction",
                     SC_NUM(INIKEY_DOUBLE, sim_app_spec, mem_bytes_per_instr, 0, 1e6)},
    [A_THREADS] = {.key = "threads", SC_NUM(INIKEY_UINT, sim_app_spec, threads, 1, 100000)},
    [A_SPIN] = {.key = "spin", SC_NUM(INIKEY_DOUBLE, sim_app_spec, spin, 0, 1)},
    [A_PHASES] = {.key = "phases", .type = INIKEY_CUSTOM, .custom = app_phases},
    [A_MEASURED] = {.key = "measured",
                    .type = INIKEY_CUSTOM,
                    .repeats = true,
                    .custom = app_measured},
    [A_SYNC] = {.key = "sync", SC_NUM(INIKEY_DOUBLE, sim_app_spec, sync, 0, 1)},
    [A_IMBALANCE] = {.key = "imbalance", SC_NUM(INIKEY_DOUBLE, sim_app_spec, imbalance, 1, 1000)},
    /* Below 1: a thread that only sleeps never finishes its work. */
    [A_SLEEP] = {.key = "sleep", SC_NUM(INIKEY_DOUBLE, sim_app_spec, sleep, 0, 0.99)},
    /* Extra instructions per added thread, as a share of the useful ones (docs/sim.md). */
    [A_EXTRA_WORK] = {.key = "extra_work", SC_NUM(INIKEY_DOUBLE, sim_app_spec, extra_work, 0, 1)},
    /* Units of work its progress markers count over the whole run (docs/sim.md). */
    [A_PROGRESS_UNITS] = {.key = "progress_units",
                          SC_NUM(INIKEY_DOUBLE, sim_app_spec, progress_units, 0, 1e15)},
};

/* The parts of list and row values, each checked as a key of its own. */
static const struct inikey freq_item = {.key = "freqs_mhz",
                                        .type = INIKEY_UINT,
                                        .min = 1,
                                        .max = 100000,
                                        .wording = INIKEY_SAY_OUTSIDE};
static const struct inikey volt_item = {
    .key = "volts", .type = INIKEY_DOUBLE, .min = 0.1, .max = 5, .wording = INIKEY_SAY_OUTSIDE};
static const struct inikey phase_p = {.key = "phases P", SC_NUM(INIKEY_DOUBLE, sim_phase, p, 0, 1)};
static const struct inikey phase_s = {.key = "phases SECONDS",
                                      SC_NUM(INIKEY_DOUBLE, sim_phase, at_s, 0, 1e9)};
static const struct inikey phase_ipc = {.key = "phases IPC",
                                        SC_NUM(INIKEY_DOUBLE, sim_phase, ipc, 0.001, 64)};
static const struct inikey row_cores = {.key = "measured CORES",
                                        SC_NUM(INIKEY_UINT, sim_row, cores, 1, CPUMASK_MAX)};
static const struct inikey row_freq = {.key = "measured FREQ_MHZ",
                                       SC_NUM(INIKEY_UINT, sim_row, freq_mhz, 1, 100000)};
static const struct inikey row_time = {.key = "measured TIME_S",
                                       SC_NUM(INIKEY_DOUBLE, sim_row, time_s, 1e-9, 1e9)};
static const struct inikey row_energy = {.key = "measured ENERGY_J",
                                         SC_NUM(INIKEY_DOUBLE, sim_row, energy_j, 1e-9, 1e15)};

struct parse_ctx {
        const char *file;
        struct sim_error *err;
        int lineno; /* of the key being parsed */
        struct sim_machine_spec mach;
        unsigned mach_seen; /* bit i = machine_keys[i] */
        int mach_lineno[M_KEYS];
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

/* One key's value (or one part of a list or row) into base; a refusal is reported. */
static int parse_key(struct parse_ctx *c, const struct inikey *k, void *base, const char *value)
{
        char why[160];
        int r = inikey_set(k, base, value, c, why, sizeof(why));

        /* A custom key reports its own problems: it knows which part was wrong. */
        if (r < 0 && k->type != INIKEY_CUSTOM)
                report(c, c->lineno, "%s: %s", k->key, why);
        return r;
}

/* Space-separated numbers, each checked by item, into dst (unsigned or double), at most
 * ACTUATOR_MAX_FREQS. */
static int parse_list(struct parse_ctx *c, const struct inikey *item, const char *value, void *dst,
                      unsigned *n_out)
{
        char buf[512], *save = NULL;
        unsigned n = 0;
        unsigned uv[ACTUATOR_MAX_FREQS];
        double dv[ACTUATOR_MAX_FREQS];
        bool as_uint = item->type == INIKEY_UINT;
        const char *key = item->key;

        if (strscpy(buf, value, sizeof(buf)) < 0) {
                report(c, c->lineno, "%s: list too long", key);
                return -EINVAL;
        }
        for (char *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                if (n == ACTUATOR_MAX_FREQS) {
                        report(c, c->lineno, "%s: more than %d values", key, ACTUATOR_MAX_FREQS);
                        return -E2BIG;
                }
                /* The item rows sit at offset 0: each checks one number. */
                int r = parse_key(c, item, as_uint ? (void *)&uv[n] : (void *)&dv[n], tok);
                if (r < 0)
                        return r;
                n++;
        }
        if (n == 0) {
                report(c, c->lineno, "%s: empty list", key);
                return -EINVAL;
        }
        if (as_uint) {
                for (unsigned i = 1; i < n; i++)
                        if (uv[i] <= uv[i - 1]) {
                                report(c, c->lineno, "%s: frequencies must be ascending", key);
                                return -EINVAL;
                        }
                memcpy(dst, uv, n * sizeof(uv[0]));
        } else {
                memcpy(dst, dv, n * sizeof(dv[0]));
        }
        *n_out = n;
        return 0;
}

static int machine_preset(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        struct parse_ctx *c = ctx;
        bool found = false;

        (void)why;
        (void)why_size;
        c->preset_given = true;
        for (size_t p = 0; p < ARRAY_SIZE(presets); p++)
                found |= strcmp(value, presets[p].preset) == 0;
        if (!found) {
                report(c, c->lineno,
                       "preset: unknown machine '%s' (i7-4820k, xeon-e5-2630v2x2, "
                       "xeon-phi-7120x, server-64)",
                       value);
                return -EINVAL;
        }
        strscpy(field, value, sizeof(c->mach.preset));
        return 0;
}

static int machine_freqs(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        struct parse_ctx *c = ctx;

        (void)why;
        (void)why_size;
        return parse_list(c, &freq_item, value, field, &c->mach.n_freqs);
}

static int machine_volts(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        struct parse_ctx *c = ctx;

        (void)why;
        (void)why_size;
        /* The count is checked against freqs_mhz once both are known. */
        return parse_list(c, &volt_item, value, field, &c->n_volts);
}

static int machine_key(struct parse_ctx *c, const char *key, const char *value, int lineno)
{
        const struct inikey *k = inikey_find(machine_keys, ARRAY_SIZE(machine_keys), key);
        size_t i;
        int r;

        if (!k) {
                report(c, lineno, "unknown key '%s' in [machine]", key);
                return -ENOENT;
        }
        i = (size_t)(k - machine_keys);
        c->lineno = lineno;
        r = parse_key(c, k, &c->mach, value);
        if (r < 0)
                return r;
        c->mach_seen |= 1u << i;
        c->mach_lineno[i] = lineno;
        return 0;
}

static int app_phases(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        struct parse_ctx *c = ctx;
        struct sim_app_spec *a = field;
        int lineno = c->lineno;
        char buf[512], *save = NULL;
        struct sim_phase ph[64];
        unsigned n = 0;

        (void)why;
        (void)why_size;
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
                if (parse_key(c, &phase_p, &ph[n], f[0]) < 0 ||
                    parse_key(c, &phase_s, &ph[n], f[1]) < 0 ||
                    (nf == 3 && parse_key(c, &phase_ipc, &ph[n], f[2]) < 0))
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

static int app_measured(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        struct parse_ctx *c = ctx;
        struct sim_app_spec *a = field;
        int lineno = c->lineno;
        char buf[256], *save = NULL, *f[5];
        unsigned nf = 0;
        struct sim_row row = {.lineno = lineno};
        struct sim_row *rows;

        (void)why;
        (void)why_size;
        strscpy(buf, value, sizeof(buf));
        for (char *t = strtok_r(buf, " \t", &save); t && nf < 5; t = strtok_r(NULL, " \t", &save))
                f[nf++] = t;
        if (nf != 4) {
                report(c, lineno, "measured: %u fields, expected CORES FREQ_MHZ TIME_S ENERGY_J",
                       nf);
                return -EINVAL;
        }
        if (parse_key(c, &row_cores, &row, f[0]) < 0 || parse_key(c, &row_freq, &row, f[1]) < 0 ||
            parse_key(c, &row_time, &row, f[2]) < 0 || parse_key(c, &row_energy, &row, f[3]) < 0)
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
        const struct inikey *k = inikey_find(app_keys, ARRAY_SIZE(app_keys), key);
        unsigned bit;
        int r;

        if (!k) {
                report(c, lineno, "unknown key '%s' in [app %s]", key, a->name);
                return -ENOENT;
        }
        bit = 1u << (k - app_keys);
        if (!k->repeats && (a->seen & bit)) {
                report(c, lineno, "%s given twice in [app %s]", key, a->name);
                return -EINVAL;
        }
        c->lineno = lineno;
        r = parse_key(c, k, a, value);
        if (r < 0)
                return r;
        a->seen |= bit;
        return 0;
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
        c->apps[c->n_apps] = (struct sim_app_spec){.lineno = lineno, .ipc = 1.0, .imbalance = 1.0};
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

/* The voltage at mhz on a preset's V/f curve: linear between its points, its end segments
 * extended beyond them, and kept within the volts key's bounds. */
static double preset_volts_at(const struct sim_machine_spec *preset, unsigned mhz)
{
        const unsigned *f = preset->freqs_mhz;
        const double *v = preset->volts;
        unsigned n = preset->n_freqs, i = 0;
        double volts;

        if (n == 1)
                return v[0];
        while (i + 2 < n && mhz > f[i + 1])
                i++;
        volts = v[i] + (v[i + 1] - v[i]) * ((double)mhz - f[i]) / (double)(f[i + 1] - f[i]);
        return fmin(fmax(volts, volt_item.min), volt_item.max);
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

                if (!(c->mach_seen & (1u << i)) || i == M_PRESET)
                        continue;
                if (i == M_FREQS) {
                        memcpy(m.freqs_mhz, c->mach.freqs_mhz, sizeof(m.freqs_mhz));
                        m.n_freqs = c->mach.n_freqs;
                } else if (i == M_VOLTS) {
                        memcpy(m.volts, c->mach.volts, sizeof(m.volts));
                        volts_n = c->n_volts;
                } else if (machine_keys[i].type == INIKEY_UINT) {
                        *(unsigned *)((char *)&m + off) = *(unsigned *)((char *)&c->mach + off);
                } else if (machine_keys[i].type == INIKEY_U64) {
                        *(uint64_t *)((char *)&m + off) = *(uint64_t *)((char *)&c->mach + off);
                } else {
                        *(double *)((char *)&m + off) = *(double *)((char *)&c->mach + off);
                }
        }
        /* New P-states without voltages sit on the preset's V/f curve; volts overrides. */
        if (c->mach.preset[0] && (c->mach_seen & (1u << M_FREQS)) &&
            !(c->mach_seen & (1u << M_VOLTS))) {
                const struct sim_machine_spec *preset = NULL;

                for (size_t p = 0; p < ARRAY_SIZE(presets); p++)
                        if (strcmp(c->mach.preset, presets[p].preset) == 0)
                                preset = &presets[p];
                for (unsigned i = 0; i < m.n_freqs; i++)
                        m.volts[i] = preset_volts_at(preset, m.freqs_mhz[i]);
                volts_n = m.n_freqs;
        }
        if (volts_n != m.n_freqs)
                report(c,
                       c->mach_lineno[M_VOLTS] ? c->mach_lineno[M_VOLTS] : c->mach_lineno[M_FREQS],
                       "[machine]: %u volts for %u freqs_mhz (one voltage per frequency)", volts_n,
                       m.n_freqs);
        if ((uint64_t)m.sockets * m.cores_per_socket * m.threads_per_core > CPUMASK_MAX)
                report(c, 0, "[machine]: more than %d CPUs", CPUMASK_MAX);
        *out = m;
}

/* The rows define time and energy; instructions only scale the counters. Without the key,
 * the app retires one instruction per cycle on the first CPU of its fewest-cores row at the
 * grid's top frequency (IPC 1 on one core, when the grid has a one-core row). */
static double rows_default_instructions(const struct sim_app_spec *a)
{
        double time_s = a->gt[0 * a->n_gf + a->n_gf - 1];

        return fmin(fmax(time_s * a->gf[a->n_gf - 1] * 1e6, app_keys[A_INSTR].min),
                    app_keys[A_INSTR].max);
}

static void finish_apps(struct parse_ctx *c, const struct sim_machine_spec *m)
{
        for (unsigned i = 0; i < c->n_apps; i++) {
                struct sim_app_spec *a = &c->apps[i];

                if (!(a->seen & (1u << A_INSTR)) && a->n_rows == 0)
                        report(c, a->lineno, "[app %s]: instructions is required", a->name);
                if (a->n_rows > 0) {
                        if (a->seen & A_AMDAHL_ONLY)
                                report(c, a->lineno,
                                       "[app %s]: measured rows and Amdahl keys (p, ipc, "
                                       "mem_fraction, mem_bytes_per_instruction, threads, spin, "
                                       "phases, sync, imbalance, sleep, extra_work, "
                                       "progress_units) do not mix",
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
                        if (!c->failed && build_grid(c, a) == 0 && !(a->seen & (1u << A_INSTR)))
                                a->instructions = rows_default_instructions(a);
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
