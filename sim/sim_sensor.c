/* The model machine as a sensor backend: the counters and RAPL energy a real machine would
 * show, as deltas in virtual time. Nothing of the ground truth passes through here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* Counts as the reader last saw them, whole units. */
struct sim_cnt {
        int64_t busy_ns, instr, cycles, ref_cycles, stalls, rows_busy_ns;
};

struct sim_sensor {
        struct sim_machine *m;
        struct cpumask cpus;
        uint64_t prev_ns;
        struct sim_cnt *prev_cpu; /* [n_cpus] */
        unsigned n_targets;
        unsigned *target_app;
        struct sim_cnt *prev_target; /* [n_targets * n_cpus] */
        uint32_t prev_rapl[SENSOR_MAX_PACKAGES];
};

/* Totals stay far below 2^63, so the truncating cast is floor(). */
static void snapshot(const struct sim_acc *a, struct sim_cnt *out, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                out[i] = (struct sim_cnt){(int64_t)a[i].busy_ns, (int64_t)a[i].instr,
                                          (int64_t)a[i].cycles,  (int64_t)a[i].ref_cycles,
                                          (int64_t)a[i].stalls,  (int64_t)a[i].rows_busy_ns};
}

static int sim_sensor_probe(const struct sensor_config *cfg, struct sensor_probe *out)
{
        *out = (struct sensor_probe){.available = cfg && cfg->machine};
        if (!out->available) {
                out->err = -EINVAL;
                snprintf(out->reason, sizeof(out->reason),
                         "the model machine needs a scenario (--platform sim:SCENARIO)");
        }
        return 0;
}

static int sim_sensor_open(struct sensor *s, const struct sensor_config *cfg)
{
        struct sim_machine *m = cfg ? cfg->machine : NULL;
        struct sim_sensor *p;

        if (!m)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->prev_cpu = malloc(m->n_cpus * sizeof(*p->prev_cpu));
        if (!p->prev_cpu) {
                free(p);
                return -ENOMEM;
        }
        p->m = m;
        cpumask_zero(&p->cpus);
        for (unsigned c = 0; c < m->n_cpus; c++)
                if (cpumask_empty(&cfg->cpus) || cpumask_test(&cfg->cpus, c))
                        cpumask_set(&p->cpus, c);
        p->prev_ns = m->now_ns;
        snapshot(m->cpu, p->prev_cpu, m->n_cpus);
        for (unsigned k = 0; k < m->n_packages; k++)
                p->prev_rapl[k] = sim_rapl_raw(m, k);
        s->priv = p;
        s->n_cpus = m->n_cpus;
        s->n_packages = m->n_packages;
        s->metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY | SENSOR_STALLS;
        s->has_energy = true;
        s->n_targets = 0;
        return 0;
}

static int sim_sensor_set_targets(struct sensor *s, const struct sensor_target *targets, unsigned n)
{
        struct sim_sensor *p = s->priv;
        struct sim_machine *m = p->m;
        unsigned *apps = NULL;
        struct sim_cnt *prev = NULL;

        for (unsigned i = 0; i < n; i++) {
                if (targets[i].kind != SENSOR_TARGET_PID)
                        return -EOPNOTSUPP; /* the model machine has processes, not cgroups */
                if (targets[i].pid < SIM_PID_BASE ||
                    (unsigned)(targets[i].pid - SIM_PID_BASE) >= m->n_apps)
                        return -ESRCH;
        }
        if (n > 0) {
                apps = malloc(n * sizeof(*apps));
                prev = malloc((size_t)n * m->n_cpus * sizeof(*prev));
                if (!apps || !prev) {
                        free(apps);
                        free(prev);
                        return -ENOMEM;
                }
        }
        for (unsigned i = 0; i < n; i++) {
                apps[i] = (unsigned)(targets[i].pid - SIM_PID_BASE);
                snapshot(&m->app_cpu[(size_t)apps[i] * m->n_cpus], &prev[(size_t)i * m->n_cpus],
                         m->n_cpus);
        }
        free(p->target_app);
        free(p->prev_target);
        p->target_app = apps;
        p->prev_target = prev;
        p->n_targets = n;
        s->n_targets = n;
        return 0;
}

/* Relative Gaussian noise, as counters read across interrupts and multiplexing show. */
static uint64_t noisy(struct sim_machine *m, uint64_t v)
{
        double noise = m->sc->mach.counter_noise;

        if (noise <= 0 || v == 0)
                return v;
        double x = v * (1 + noise * sim_gauss(m));
        return x > 0 ? (uint64_t)(x + 0.5) : 0;
}

static void fill_counts(struct sim_machine *m, const struct sim_acc *now, struct sim_cnt *prev,
                        struct sensor_counts *out)
{
        struct sim_cnt n;

        snapshot(now, &n, 1);
        *out = (struct sensor_counts){
            .instr = noisy(m, (uint64_t)(n.instr - prev->instr)),
            .cycles = noisy(m, (uint64_t)(n.cycles - prev->cycles)),
            .ref_cycles = (uint64_t)(n.ref_cycles - prev->ref_cycles),
            .busy_ns = (uint64_t)(n.busy_ns - prev->busy_ns),
            .measured = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY,
        };
        /* A rows app's busy time says nothing of its stalls: not measured then. Counted in
         * the cycles' group, the stalls take the cycles' noise (and no draw of their own, so
         * the noise of everything else stays as it was). */
        if (n.rows_busy_ns == prev->rows_busy_ns) {
                out->measured |= SENSOR_STALLS;
                if (n.stalls != prev->stalls) {
                        double d = (double)(n.stalls - prev->stalls);
                        double dc = (double)(n.cycles - prev->cycles);

                        out->stalls = (uint64_t)fmax(0, d * (dc > 0 ? out->cycles / dc : 1) + 0.5);
                }
        }
        *prev = n;
}

static int sim_sensor_read(struct sensor *s, struct sensor_sample *out)
{
        struct sim_sensor *p = s->priv;
        struct sim_machine *m = p->m;

        if (!out->cpu || out->n_cpus != m->n_cpus || out->n_targets != p->n_targets ||
            (p->n_targets > 0 && !out->target_cpu))
                return -EINVAL;
        out->timestamp_ns = m->now_ns;
        out->interval_ns = m->now_ns - p->prev_ns;
        p->prev_ns = m->now_ns;
        for (unsigned c = 0; c < m->n_cpus; c++) {
                if (cpumask_test(&p->cpus, c))
                        fill_counts(m, &m->cpu[c], &p->prev_cpu[c], &out->cpu[c]);
                else
                        out->cpu[c] = (struct sensor_counts){0};
        }
        for (unsigned t = 0; t < p->n_targets; t++) {
                const struct sim_acc *now = &m->app_cpu[(size_t)p->target_app[t] * m->n_cpus];
                struct sim_cnt *prev = &p->prev_target[(size_t)t * m->n_cpus];

                for (unsigned c = 0; c < m->n_cpus; c++) {
                        struct sensor_counts *o = sensor_target_cpu(out, t, c);

                        if (cpumask_test(&p->cpus, c))
                                fill_counts(m, &now[c], &prev[c], o);
                        else
                                *o = (struct sensor_counts){0};
                }
        }
        out->n_packages = m->n_packages;
        out->energy_measured = true;
        for (unsigned k = 0; k < m->n_packages; k++) {
                uint32_t raw = sim_rapl_raw(m, k);

                /* 32-bit counter: unsigned subtraction absorbs one wrap, as a RAPL reader
                 * does; read more often than the wrap time (2^32 units / power). */
                out->energy_j[k] = (uint32_t)(raw - p->prev_rapl[k]) / SIM_RAPL_UNITS_PER_J;
                p->prev_rapl[k] = raw;
        }
        return 0;
}

static void sim_sensor_close(struct sensor *s)
{
        struct sim_sensor *p = s ? s->priv : NULL;

        if (!p)
                return;
        free(p->prev_cpu);
        free(p->target_app);
        free(p->prev_target);
        free(p);
        s->priv = NULL;
}

const struct sensor_ops sim_sensor_ops = {
    .name = "sim",
    .description = "the model machine's counters and RAPL energy, in virtual time",
    .probe = sim_sensor_probe,
    .open = sim_sensor_open,
    .set_targets = sim_sensor_set_targets,
    .read = sim_sensor_read,
    .close = sim_sensor_close,
};
