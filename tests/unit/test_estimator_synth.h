/* Synthetic counters of Amdahl apps for the estimator's tests and benchmark: a loop-and-barrier
 * app whose first core runs the sequential part and its share of the parallel part, the
 * others only their share, waiting threads blocked. Ground truth is known exactly. */
#pragma once

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/estimator.h"
#include "pctl/sensor.h"

struct synth_app {
        double p;
        double ipc_ref;      /* single-core IPC at freq_ref_khz */
        double mem_fraction; /* share of single-core time at freq_ref_khz not scaling with f */
        unsigned freq_ref_khz;
        unsigned first_cpu, n_cores;
        unsigned freq_khz; /* this interval's */
        /* Contention (memory bandwidth, shared cache): on N cores every core retires
         * 1 + contention (N - 1) times fewer instructions per cycle, the busiest one too,
         * so its IPC is not the app's one-core IPC. 0: none. */
        double contention;
};

struct synth_machine {
        double os_ips; /* ΔI per busy core per second (eq. 14's β) */
        /* ΔI per second on the app's CPUs whatever their number (eq. 14's α): on its first
         * core. */
        double os_ips_system;
        double os_ips_noise;  /* relative, per CPU and interval */
        double counter_noise; /* relative, per count */
        double static_w, core_w, idle_w;
        unsigned metrics; /* enum sensor_metric bits the "sensor" reports */
        uint64_t rng;
};

static inline double synth_uniform(struct synth_machine *m)
{
        /* xorshift64*: deterministic across runs and machines. */
        m->rng ^= m->rng >> 12;
        m->rng ^= m->rng << 25;
        m->rng ^= m->rng >> 27;
        return ((m->rng * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

static inline double synth_gauss(struct synth_machine *m)
{
        double u1 = synth_uniform(m), u2 = synth_uniform(m);

        return sqrt(-2.0 * log(u1 + 1e-300)) * cos(2 * M_PI * u2);
}

static inline int synth_sample_alloc(struct sensor_sample *s, unsigned n_cpus, unsigned n_targets)
{
        memset(s, 0, sizeof(*s));
        s->cpu = calloc(n_cpus, sizeof(*s->cpu));
        if (n_targets)
                s->target_cpu = calloc((size_t)n_cpus * n_targets, sizeof(*s->target_cpu));
        if (!s->cpu || (n_targets && !s->target_cpu))
                return -1;
        s->n_cpus = n_cpus;
        s->n_targets = n_targets;
        s->n_packages = 1;
        return 0;
}

static inline void synth_sample_free(struct sensor_sample *s)
{
        free(s->cpu);
        free(s->target_cpu);
}

/* A whole run fed by hand: an estimator watching app 1, a sample of its CPUs (no targets) for
 * the test to fill, and the end of the last interval fed. */
struct synth_run {
        struct estimator *est;
        struct sensor_sample s;
        uint64_t now_ns;
};

/* cfg NULL: the estimator's defaults. Returns 0, or a negative errno with nothing to free.
 * Not asserting here: the benchmark includes this header without cmocka. */
static inline int synth_run_init(struct synth_run *r, const struct estimator_config *cfg,
                                 unsigned n_cpus)
{
        struct estimator *est = estimator_new(cfg);
        int ret;

        if (!est)
                return -ENOMEM;
        ret = estimator_app_add(est, 1);
        if (ret < 0) {
                estimator_free(est);
                return ret;
        }
        if (synth_sample_alloc(&r->s, n_cpus, 0) < 0) {
                synth_sample_free(&r->s);
                estimator_free(est);
                return -ENOMEM;
        }
        r->est = est;
        r->now_ns = 1000000000ULL;
        return 0;
}

static inline void synth_run_free(struct synth_run *r)
{
        synth_sample_free(&r->s);
        estimator_free(r->est);
        r->est = NULL;
}

/* Starts an interval: every CPU idle and measured. */
static inline void synth_begin(struct synth_machine *m, struct sensor_sample *s,
                               uint64_t interval_ns)
{
        s->timestamp_ns += interval_ns;
        s->interval_ns = interval_ns;
        for (unsigned c = 0; c < s->n_cpus; c++)
                s->cpu[c] = (struct sensor_counts){.measured = m->metrics};
        for (unsigned i = 0; i < s->n_cpus * s->n_targets; i++)
                s->target_cpu[i] = (struct sensor_counts){0};
        s->energy_measured = false;
        s->energy_j[0] = 0;
}

static inline double synth_noisy(struct synth_machine *m, double v)
{
        return m->counter_noise > 0 ? v * (1 + m->counter_noise * synth_gauss(m)) : v;
}

/* Seconds of one unit of single-core work at f (the unit is 1 s at freq_ref_khz). */
static inline double synth_unit_s(const struct synth_app *a, unsigned freq_khz)
{
        return (1 - a->mem_fraction) * a->freq_ref_khz / freq_khz + a->mem_fraction;
}

/* How much slower each core retires on N cores than alone. */
static inline double synth_stretch(const struct synth_app *a)
{
        return 1 + a->contention * (a->n_cores - 1);
}

/* True speedup: T(1)/T(N), Amdahl's slowed by contention. */
static inline double synth_speedup(const struct synth_app *a)
{
        return 1.0 / ((1 - a->p) + a->p / a->n_cores) / synth_stretch(a);
}

/* Adds the app's counts over the interval; target >= 0 also fills per-target counts.
 * Returns the energy its busy cores used (core_w per busy second): the truth for attribution. */
static inline double synth_run(struct synth_machine *m, struct sensor_sample *s,
                               const struct synth_app *a, int target)
{
        double dt_s = s->interval_ns * 1e-9, wall = (1 - a->p) + a->p / a->n_cores;
        double unit_s = synth_unit_s(a, a->freq_khz);
        double i_unit = a->ipc_ref * a->freq_ref_khz * 1e3; /* instructions per unit */
        double energy_j = 0;

        for (unsigned k = 0; k < a->n_cores; k++) {
                unsigned cpu = a->first_cpu + k;
                double frac = k == 0 ? 1.0 : (a->p / a->n_cores) / wall;
                double busy_s = frac * dt_s;
                double i0 = busy_s / unit_s * i_unit / synth_stretch(a);
                double os = m->os_ips * busy_s;
                struct sensor_counts *c = &s->cpu[cpu];

                if (k == 0)
                        os += m->os_ips_system * dt_s;
                if (m->os_ips_noise > 0)
                        os *= fmax(1 + m->os_ips_noise * synth_gauss(m), 0);
                c->instr = (uint64_t)llround(synth_noisy(m, i0 + os));
                c->cycles = (uint64_t)llround(synth_noisy(m, busy_s * a->freq_khz * 1e3));
                c->ref_cycles = c->cycles;
                c->busy_ns = (uint64_t)llround(synth_noisy(m, busy_s * 1e9));
                if (target >= 0) {
                        struct sensor_counts *t = sensor_target_cpu(s, (unsigned)target, cpu);

                        t->instr = (uint64_t)llround(synth_noisy(m, i0));
                        t->busy_ns = c->busy_ns;
                        t->measured = m->metrics & (SENSOR_INSTR | SENSOR_BUSY);
                }
                energy_j += busy_s * m->core_w;
        }
        return energy_j;
}

/* Ends the interval: package energy of the whole machine from the busy time of every CPU. */
static inline void synth_end(struct synth_machine *m, struct sensor_sample *s, bool energy)
{
        double dt_s = s->interval_ns * 1e-9, e = m->static_w * dt_s;

        for (unsigned c = 0; c < s->n_cpus; c++) {
                double busy_s = fmin(s->cpu[c].busy_ns * 1e-9, dt_s);

                e += busy_s * m->core_w + (dt_s - busy_s) * m->idle_w;
        }
        s->energy_measured = energy;
        s->energy_j[0] = energy ? e : 0;
}

static inline struct estimator_app_view synth_view(uint64_t id, const struct synth_app *a,
                                                   int target)
{
        struct estimator_app_view v = {.id = id, .freq_khz = a->freq_khz, .target = target};

        cpumask_zero(&v.cpus);
        for (unsigned k = 0; k < a->n_cores; k++)
                cpumask_set(&v.cpus, a->first_cpu + k);
        return v;
}
