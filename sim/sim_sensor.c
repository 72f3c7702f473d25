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
        int64_t busy_ns, instr, cycles, ref_cycles;
};

struct sim_sensor {
        struct sim_machine *m;
        struct cpumask cpus;
        uint64_t prev_ns;
        struct sim_cnt *prev_cpu; /* [n_cpus] */
        unsigned n_targets;
        unsigned *target_app;
        struct sim_cnt *prev_target; /* [n_targets * n_cpus] */
        double *cpi;                 /* [n_cpus] scratch of cpu_cpi */
        unsigned *holders;           /* [n_cpus] */
        uint32_t prev_rapl[SENSOR_MAX_PACKAGES];
        double prev_mem_bytes[SENSOR_MAX_PACKAGES];
};

/* Totals stay far below 2^63, so the truncating cast is floor(). */
static void snapshot(const struct sim_acc *a, struct sim_cnt *out, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                out[i] = (struct sim_cnt){(int64_t)a[i].busy_ns, (int64_t)a[i].instr,
                                          (int64_t)a[i].cycles, (int64_t)a[i].ref_cycles};
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
        p->cpi = malloc(m->n_cpus * sizeof(*p->cpi));
        p->holders = malloc(m->n_cpus * sizeof(*p->holders));
        if (!p->prev_cpu || !p->cpi || !p->holders) {
                free(p->prev_cpu);
                free(p->cpi);
                free(p->holders);
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
        for (unsigned k = 0; k < m->n_packages; k++) {
                p->prev_rapl[k] = sim_rapl_raw(m, k);
                p->prev_mem_bytes[k] = m->pkg_mem_bytes[k];
        }
        s->priv = p;
        s->n_cpus = m->n_cpus;
        s->n_packages = m->n_packages;
        s->metrics = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY | SENSOR_STALLS;
        s->has_energy = true;
        s->has_mem_traffic = true;
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
        /* Counts are below 2^63: the signed conversions are single instructions. */
        double x = (double)(int64_t)v * (1 + noise * sim_gauss(m));
        return x > 0 ? (uint64_t)(int64_t)(x + 0.5) : 0;
}

/* One count's deltas. cpi >= 0: the compute cycles per instruction of the one Amdahl app
 * whose counts these are, so its stalls are the cycles beyond cpi·I0 (I0 = the instructions
 * less, on a CPU's counts, the system's ΔI over the busy time and the interval_s; an app's own
 * counts have none); NaN: stalls unknown (a rows app, or several apps on the CPU). Counted in
 * the cycles' group, the stalls take the cycles' noise: one draw, as the cycles alone took
 * before, so the noise of everything else stays as it was. */
static void fill_counts(struct sim_machine *m, const struct sim_acc *now, struct sim_cnt *prev,
                        double cpi, bool cpu_counts, double interval_s, struct sensor_counts *out)
{
        double noise = m->sc->mach.counter_noise, stalls = 0;
        uint64_t dc, di, db;
        struct sim_cnt n;

        snapshot(now, &n, 1);
        /* Most (target, CPU) pairs saw nothing: no draw is made for them either way. */
        if (n.cycles == prev->cycles && n.instr == prev->instr && n.busy_ns == prev->busy_ns &&
            n.ref_cycles == prev->ref_cycles) {
                *out = (struct sensor_counts){.measured = SENSOR_INSTR | SENSOR_CYCLES |
                                                          SENSOR_REF_CYCLES | SENSOR_BUSY |
                                                          SENSOR_STALLS};
                return;
        }
        dc = (uint64_t)(n.cycles - prev->cycles);
        di = (uint64_t)(n.instr - prev->instr);
        db = (uint64_t)(n.busy_ns - prev->busy_ns);
        *out = (struct sensor_counts){
            .instr = noisy(m, di),
            .cycles = dc,
            .ref_cycles = (uint64_t)(n.ref_cycles - prev->ref_cycles),
            .busy_ns = db,
            .measured = SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES | SENSOR_BUSY,
        };
        if (cpi >= 0 && dc > 0) {
                double sys = cpu_counts ? m->sc->mach.os_ips * (double)(int64_t)db * 1e-9 +
                                              m->sc->mach.os_ips_cpu * interval_s
                                        : 0;

                stalls = (double)(int64_t)dc - ((double)(int64_t)di - sys) * cpi;
                if (!(stalls > 0))
                        stalls = 0;
        }
        if (noise > 0 && dc != 0) {
                double g = 1 + noise * sim_gauss(m), x = (double)(int64_t)dc * g;

                out->cycles = x > 0 ? (uint64_t)(int64_t)(x + 0.5) : 0;
                stalls *= g > 0 ? g : 0;
        }
        if (cpi >= 0 || dc == 0) {
                out->stalls = (uint64_t)(int64_t)(stalls + 0.5); /* < 2^63: the cheap cast */
                out->measured |= SENSOR_STALLS;
        }
        *prev = n;
}

/* Which app's compute share each CPU's counts since since_ns have: the one app that ran
 * there (NaN for a rows app), else NaN (several apps). An app that finished counts while its
 * end (start + run time) is within the interval. holders is scratch. */
static void cpu_cpi(const struct sim_machine *m, uint64_t since_ns, double *cpi, unsigned *holders)
{
        memset(holders, 0, m->n_cpus * sizeof(*holders));
        for (unsigned c = 0; c < m->n_cpus; c++)
                cpi[c] = 0;
        for (unsigned i = 0; i < m->n_apps; i++) {
                const struct sim_app_state *a = &m->apps[i];
                double x;

                if (!a->started || (a->finished && (a->start_s + a->run_s) * 1e9 < since_ns))
                        continue;
                x = sim_app_compute_cpi(a);
                for (unsigned j = 0; j < a->n_set; j++) {
                        holders[a->set[j]]++;
                        cpi[a->set[j]] = x;
                }
        }
        for (unsigned c = 0; c < m->n_cpus; c++)
                if (holders[c] > 1)
                        cpi[c] = NAN;
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
        cpu_cpi(m, p->prev_ns, p->cpi, p->holders);
        p->prev_ns = m->now_ns;
        for (unsigned c = 0; c < m->n_cpus; c++) {
                if (cpumask_test(&p->cpus, c))
                        fill_counts(m, &m->cpu[c], &p->prev_cpu[c], p->cpi[c], true,
                                    out->interval_ns * 1e-9, &out->cpu[c]);
                else
                        out->cpu[c] = (struct sensor_counts){0};
        }
        for (unsigned t = 0; t < p->n_targets; t++) {
                const struct sim_acc *now = &m->app_cpu[(size_t)p->target_app[t] * m->n_cpus];
                struct sim_cnt *prev = &p->prev_target[(size_t)t * m->n_cpus];
                double cpi = sim_app_compute_cpi(&m->apps[p->target_app[t]]);

                for (unsigned c = 0; c < m->n_cpus; c++) {
                        struct sensor_counts *o = sensor_target_cpu(out, t, c);

                        if (cpumask_test(&p->cpus, c))
                                fill_counts(m, &now[c], &prev[c], cpi, false, 0, o);
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
        /* Exact, as its energy is: drawing noise for it would shift every other count's. */
        out->mem_measured = true;
        for (unsigned k = 0; k < m->n_packages; k++) {
                out->mem_bytes[k] = m->pkg_mem_bytes[k] - p->prev_mem_bytes[k];
                p->prev_mem_bytes[k] = m->pkg_mem_bytes[k];
        }
        return 0;
}

static void sim_sensor_close(struct sensor *s)
{
        struct sim_sensor *p = s ? s->priv : NULL;

        if (!p)
                return;
        free(p->prev_cpu);
        free(p->cpi);
        free(p->holders);
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
