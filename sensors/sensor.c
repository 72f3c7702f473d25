/* The generic sensor layer: the backend table, sample buffers, and the counter arithmetic
 * every backend shares. */
#include "pctl/sensor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pctl/topology.h"

#include "backends.h"

const struct sensor_ops *const sensor_backends[] = {
    &sensor_likwid_ops, &sensor_perf_ops, &sensor_software_ops, &sensor_replay_ops, NULL,
};

/* The ones `auto` may choose, best first; replay needs a file and is chosen by name. */
static const struct sensor_ops *const sensor_auto_order[] = {
    &sensor_likwid_ops,
    &sensor_perf_ops,
    &sensor_software_ops,
};

const struct sensor_ops *sensor_find(const char *name)
{
        if (!name)
                return NULL;
        for (unsigned i = 0; sensor_backends[i]; i++)
                if (strcmp(sensor_backends[i]->name, name) == 0)
                        return sensor_backends[i];
        return NULL;
}

int sensor_pick_auto(const struct sensor_config *cfg, const struct sensor_ops **out, char *why,
                     size_t why_size)
{
        char text[1024] = "";
        size_t len = 0;

        for (size_t i = 0; i < sizeof(sensor_auto_order) / sizeof(sensor_auto_order[0]); i++) {
                const struct sensor_ops *ops = sensor_auto_order[i];
                struct sensor_probe p = {0};
                int r = ops->probe(cfg, &p);

                if (r >= 0 && p.available) {
                        if (why)
                                snprintf(why, why_size, "%s: the best available%s%s", ops->name,
                                         len ? "; " : "", text);
                        *out = ops;
                        return 0;
                }
                len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s", len ? "; " : "",
                                        p.reason[0] ? p.reason : ops->name);
                if (len >= sizeof(text))
                        len = sizeof(text) - 1;
        }
        if (why)
                snprintf(why, why_size, "no sensor backend is available: %s", text);
        return -ENODEV;
}

int sensor_sample_alloc(struct sensor_sample *s, unsigned n_cpus, unsigned n_targets)
{
        struct sensor_counts *cpu = NULL, *target_cpu = NULL;

        if (n_cpus == 0)
                return -EINVAL;
        cpu = calloc(n_cpus, sizeof(*cpu));
        if (!cpu)
                return -ENOMEM;
        if (n_targets > 0) {
                target_cpu = calloc((size_t)n_targets * n_cpus, sizeof(*target_cpu));
                if (!target_cpu) {
                        free(cpu);
                        return -ENOMEM;
                }
        }
        *s = (struct sensor_sample){
            .n_cpus = n_cpus,
            .cpu = cpu,
            .n_targets = n_targets,
            .target_cpu = target_cpu,
        };
        return 0;
}

void sensor_sample_free(struct sensor_sample *s)
{
        if (!s)
                return;
        free(s->cpu);
        free(s->target_cpu);
        *s = (struct sensor_sample){0};
}

int sensor_open(const struct sensor_ops *ops, const struct sensor_config *cfg, struct sensor **out)
{
        struct sensor *s;
        int r;

        if (!ops || !cfg || !out)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->ops = ops;
        r = ops->open(s, cfg);
        if (r < 0) {
                free(s);
                return r;
        }
        *out = s;
        return 0;
}

int sensor_set_targets(struct sensor *s, const struct sensor_target *targets, unsigned n)
{
        int r;

        if (!s->ops->set_targets)
                return n == 0 ? 0 : -EOPNOTSUPP;
        r = s->ops->set_targets(s, targets, n);
        if (r < 0)
                return r;
        s->n_targets = n;
        return 0;
}

int sensor_read(struct sensor *s, struct sensor_sample *out)
{
        if (!out->cpu || out->n_cpus != s->n_cpus || out->n_targets != s->n_targets) {
                struct sensor_sample fresh;
                int r = sensor_sample_alloc(&fresh, s->n_cpus, s->n_targets);

                if (r < 0)
                        return r;
                sensor_sample_free(out);
                *out = fresh;
        } else {
                memset(out->cpu, 0, sizeof(*out->cpu) * out->n_cpus);
                if (out->target_cpu)
                        memset(out->target_cpu, 0,
                               sizeof(*out->target_cpu) * out->n_cpus * out->n_targets);
        }
        out->n_packages = s->n_packages;
        out->energy_measured = false;
        memset(out->energy_j, 0, sizeof(out->energy_j));
        out->mem_measured = false;
        memset(out->mem_bytes, 0, sizeof(out->mem_bytes));
        return s->ops->read(s, out);
}

void sensor_close(struct sensor *s)
{
        if (!s)
                return;
        if (s->ops && s->ops->close)
                s->ops->close(s);
        free(s);
}

uint64_t sensor_counter_delta(uint64_t prev, uint64_t now, unsigned bits)
{
        uint64_t mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;

        /* Modular arithmetic gives the right answer across one wrap of a `bits`-wide counter. */
        return (now - prev) & mask;
}

uint64_t sensor_wrap_delta(uint64_t prev, uint64_t now, uint64_t max_range)
{
        if (now >= prev)
                return now - prev;
        /* powercap counts 0..max_energy_range_uj, then starts again from 0. */
        if (max_range >= prev)
                return max_range - prev + now;
        /* A range smaller than a value it gave: the counter was reset; count from 0. */
        return now;
}

uint64_t sensor_scale_multiplexed(uint64_t value, uint64_t enabled, uint64_t running)
{
        if (running == 0)
                return 0;
        if (running >= enabled)
                return value;
        return (uint64_t)((unsigned __int128)value * enabled / running);
}

int sensor_cpus_resolve(const struct sensor_config *cfg, struct cpumask *cpus, unsigned *n_cpus,
                        unsigned *n_packages)
{
        struct topology t;
        int r = topology_read(&t);

        if (r < 0)
                return r;
        if (cfg && !cpumask_empty(&cfg->cpus)) {
                if (!cpumask_subset(&cfg->cpus, &t.online)) {
                        topology_free(&t);
                        return -ENODEV;
                }
                *cpus = cfg->cpus;
        } else {
                *cpus = t.online;
        }
        *n_cpus = t.n_cpus;
        *n_packages = t.n_packages ? t.n_packages : 1;
        topology_free(&t);
        return 0;
}

int sensor_perf_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags)
{
        long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);

        return fd < 0 ? -errno : (int)fd;
}
