/* Random scenarios over the model machine's keys. The distribution is documented in
 * docs/sim.md, "Random scenarios"; each draw below names its row there. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pctl/sim.h"
#include "pctl/sim_random.h"

const char *const sim_random_presets[SIM_RANDOM_N_PRESETS] = {
    "i7-4820k",
    "xeon-e5-2630v2x2",
    "xeon-phi-7120x",
    "server-64",
};

struct rng {
        uint64_t s;
};

/* splitmix64: the same stream everywhere, whatever libc. */
static uint64_t rng_next(struct rng *r)
{
        uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rng_unit(struct rng *r)
{
        return (rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_uniform(struct rng *r, double lo, double hi)
{
        return lo + (hi - lo) * rng_unit(r);
}

static double rng_log_uniform(struct rng *r, double lo, double hi)
{
        return exp(rng_uniform(r, log(lo), log(hi)));
}

static bool rng_chance(struct rng *r, double p)
{
        return rng_unit(r) < p;
}

/* Uniform integer in [lo, hi]. */
static unsigned rng_int(struct rng *r, unsigned lo, unsigned hi)
{
        return lo + (unsigned)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* P: a quarter of the apps mostly sequential (0.05-0.6), the rest parallel, their serial share
 * log-uniform in 0.004-0.4 (P 0.6-0.996). */
static double draw_p(struct rng *r)
{
        if (rng_chance(r, 0.25))
                return rng_uniform(r, 0.05, 0.6);
        return 1 - rng_log_uniform(r, 0.004, 0.4);
}

struct text {
        char *buf;
        size_t size, len;
        bool overflow;
};

static void put(struct text *t, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (t->overflow)
                return;
        va_start(ap, fmt);
        n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= t->size - t->len)
                t->overflow = true;
        else
                t->len += (size_t)n;
}

/* The preset's CPU count and top frequency, from the model machine itself. */
static int preset_shape(const char *preset, unsigned *n_cpus, double *f_max_hz)
{
        char text[160];
        struct sim_machine *m;
        struct sim_error err;
        struct sim_machine_info info;
        int r;

        snprintf(text, sizeof(text),
                 "[machine]\npreset = %s\n[app probe]\ninstructions = 1e9\np = 0.5\n", preset);
        r = sim_load_string(text, "random", &m, &err);
        if (r < 0)
                return -EINVAL;
        sim_machine_info(m, &info);
        *n_cpus = info.n_cpus;
        *f_max_hz = info.freqs_mhz[info.n_freqs - 1] * 1e6;
        sim_free(m);
        return 0;
}

static void draw_app(struct rng *r, struct rng *marks, struct text *t, unsigned i, unsigned n_apps,
                     unsigned n_cpus, double f_max_hz)
{
        double share = n_cpus / n_apps > 1 ? (double)(n_cpus / n_apps) : 1.0;
        double p = draw_p(r), ipc = rng_uniform(r, 0.4, 2.0);
        /* Its run time on its fair share of the CPUs at the top clock, by Amdahl's law. */
        double t_share = rng_log_uniform(r, 20, 100);
        double instr = t_share / ((1 - p) + p / share) * ipc * f_max_hz;

        put(t, "\n[app a%u]\n", i);
        if (i > 0 && rng_chance(r, 0.5))
                put(t, "start_s = %.1f\n", rng_uniform(r, 0, 30));
        put(t, "instructions = %.4g\np = %.4f\nipc = %.3f\n", instr, p, ipc);
        if (rng_chance(r, 0.4))
                put(t, "mem_fraction = %.3f\n", rng_uniform(r, 0.1, 0.8));
        if (rng_chance(r, 0.25))
                put(t, "mem_bytes_per_instruction = %.3f\n", rng_uniform(r, 0.5, 8));
        if (rng_chance(r, 0.2))
                put(t, "spin = %.3f\n", rng_uniform(r, 0.2, 1));
        if (rng_chance(r, 0.15))
                put(t, "sync = %.3f\n", rng_uniform(r, 0.02, 0.3));
        if (rng_chance(r, 0.15))
                put(t, "imbalance = %.3f\n", rng_uniform(r, 1.2, 4));
        if (rng_chance(r, 0.1))
                put(t, "sleep = %.3f\n", rng_uniform(r, 0.05, 0.4));
        if (rng_chance(r, 0.15))
                put(t, "extra_work = %.4f\n", rng_uniform(r, 0.01, 0.2));
        if (rng_chance(r, 0.15)) {
                double p2 = draw_p(r), at = rng_uniform(r, 0.2, 0.6) * t_share;

                if (rng_chance(r, 0.5))
                        put(t, "phases = %.4f:%.1f:%.3f\n", p2, at, rng_uniform(r, 0.4, 2.0));
                else
                        put(t, "phases = %.4f:%.1f\n", p2, at);
        }
        /* Half of the apps mark their progress, 10^4-10^6 units in a run, from a stream of
         * their own, so that the rest of the scenario is the same with or without them. */
        if (rng_chance(marks, 0.5))
                put(t, "progress_units = %.0f\n", rng_log_uniform(marks, 1e4, 1e6));
}

int sim_random_scenario(uint64_t seed, const char *preset, unsigned n_apps, char *buf, size_t size)
{
        char out[8192];
        struct text t = {.buf = out, .size = sizeof(out)};
        struct rng r = {.s = seed}, marks = {.s = seed ^ 0x6d61726b73ULL}; /* "marks" */
        unsigned n_cpus, max_apps;
        double f_max_hz;
        int ret;

        /* The preset is drawn even when given, so that the rest of the stream is the same. */
        {
                const char *drawn = sim_random_presets[rng_int(&r, 0, SIM_RANDOM_N_PRESETS - 1)];

                if (!preset)
                        preset = drawn;
        }
        ret = preset_shape(preset, &n_cpus, &f_max_hz);
        if (ret < 0)
                return ret;
        max_apps = n_cpus < SIM_RANDOM_MAX_APPS ? n_cpus : SIM_RANDOM_MAX_APPS;
        if (n_apps > max_apps)
                return -EINVAL;
        {
                unsigned drawn = rng_chance(&r, 1.0 / 3) ? 1 : rng_int(&r, 2, max_apps);

                if (!n_apps)
                        n_apps = drawn;
        }
        put(&t, "# drawn by sim_random_scenario(seed %llu)\n[machine]\npreset = %s\n",
            (unsigned long long)seed, preset);
        put(&t, "counter_noise = %.4f\nseed = %u\n", rng_uniform(&r, 0.005, 0.03),
            rng_int(&r, 1, 1000000));
        for (unsigned i = 0; i < n_apps; i++)
                draw_app(&r, &marks, &t, i, n_apps, n_cpus, f_max_hz);
        if (t.overflow || t.len + 1 > size)
                return -ENOBUFS;
        memcpy(buf, out, t.len + 1);
        return 0;
}
