/* The perf backend: perf_event_open(2) per CPU for instructions, cycles and ref-cycles as one
 * group (include/pctl/perf_group.h: scheduled together, read together, so IPC never mixes
 * multiplexing slices; counts scaled by the group's time enabled/running), per cgroup with
 * PERF_FLAG_PID_CGROUP; the frequency each CPU ran at from cycles / ref-cycles × the TSC rate;
 * package energy from the `power` PMU, else powercap energy_uj (which wraps at
 * max_energy_range_uj); memory traffic per package from the memory controllers' uncore PMUs
 * (perf_uncore.c); busy time from the software sources. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends.h"
#include "pctl/fsio.h"
#include "pctl/perf_group.h"
#include "pctl/perf_uncore.h"
#include "pctl/util.h"

enum { PERF_EV_INSTR, PERF_EV_CYCLES, PERF_EV_REF, PERF_EV_STALLS, PERF_EV_N };

static const struct {
        uint64_t config;
        unsigned metric;
        const char *name;
} perf_events[PERF_EV_N] = {
    [PERF_EV_INSTR] = {PERF_COUNT_HW_INSTRUCTIONS, SENSOR_INSTR, "instructions"},
    [PERF_EV_CYCLES] = {PERF_COUNT_HW_CPU_CYCLES, SENSOR_CYCLES, "cycles"},
    [PERF_EV_REF] = {PERF_COUNT_HW_REF_CPU_CYCLES, SENSOR_REF_CYCLES, "ref-cycles"},
    /* perf_open_group picks the stalled-cycle event (perf_stall_attr) */
    [PERF_EV_STALLS] = {PERF_COUNT_HW_STALLED_CYCLES_BACKEND, SENSOR_STALLS, "stalled cycles"},
};

static int energy_pmu_open(struct sensor_energy *e)
{
        char buf[256];
        uint64_t type;
        unsigned long long config;
        struct cpumask cpus;
        double scale;
        int r;

        r = fs_read_u64("/sys/bus/event_source/devices/power/type", &type);
        if (r < 0)
                return r;
        if (fs_read("/sys/bus/event_source/devices/power/events/energy-pkg", buf, sizeof(buf)) <
                0 ||
            sscanf(buf, "event=%llx", &config) != 1)
                return -ENOENT;
        if (fs_read("/sys/bus/event_source/devices/power/events/energy-pkg.scale", buf,
                    sizeof(buf)) < 0 ||
            parse_double(strstrip(buf), &scale) < 0 || scale <= 0)
                return -ENOENT;
        if (fs_read("/sys/bus/event_source/devices/power/cpumask", buf, sizeof(buf)) < 0 ||
            cpumask_parse(buf, &cpus) < 0 || cpumask_empty(&cpus))
                return -ENOENT;
        e->n_packages = 0;
        /* The PMU's cpumask names one CPU per package: one event each. */
        cpumask_foreach (cpu, &cpus) {
                struct perf_event_attr a = {
                    .size = sizeof(a), .type = (uint32_t)type, .config = config};
                int fd;

                if (e->n_packages == SENSOR_MAX_PACKAGES)
                        break;
                fd = sensor_perf_open(&a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
                if (fd < 0) {
                        sensor_energy_close(e);
                        return fd;
                }
                e->fd[e->n_packages] = fd;
                if (read(fd, &e->prev[e->n_packages], sizeof(uint64_t)) != sizeof(uint64_t)) {
                        e->n_packages++;
                        sensor_energy_close(e);
                        return -EIO;
                }
                e->n_packages++;
        }
        e->scale_j = scale;
        e->src = SENSOR_ENERGY_PMU;
        return 0;
}

static int energy_powercap_open(struct sensor_energy *e)
{
        unsigned n = 0;

        for (unsigned zone = 0; zone < SENSOR_MAX_PACKAGES; zone++) {
                char path[128], name[64];
                uint64_t uj, max_uj;

                snprintf(path, sizeof(path), "/sys/class/powercap/intel-rapl:%u/name", zone);
                if (fs_read(path, name, sizeof(name)) < 0)
                        break;
                /* Top-level zones are packages ("package-0"); psys and others are skipped. */
                if (strncmp(name, "package", 7) != 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/class/powercap/intel-rapl:%u/energy_uj", zone);
                int r = fs_read_u64(path, &uj);
                if (r < 0)
                        return r; /* root-only since Linux 5.10: EACCES says so */
                snprintf(path, sizeof(path),
                         "/sys/class/powercap/intel-rapl:%u/max_energy_range_uj", zone);
                r = fs_read_u64(path, &max_uj);
                if (r < 0)
                        return r;
                e->zone[n] = zone;
                e->prev[n] = uj;
                e->max_range_uj[n] = max_uj;
                e->fd[n] = -1;
                n++;
        }
        if (n == 0)
                return -ENOENT;
        e->n_packages = n;
        e->src = SENSOR_ENERGY_POWERCAP;
        return 0;
}

int sensor_energy_open(struct sensor_energy *e, char *why, size_t why_size)
{
        int r_pmu, r_cap;

        *e = (struct sensor_energy){.src = SENSOR_ENERGY_NONE};
        for (unsigned i = 0; i < SENSOR_MAX_PACKAGES; i++)
                e->fd[i] = -1;
        r_pmu = energy_pmu_open(e);
        if (r_pmu == 0)
                return 0;
        r_cap = energy_powercap_open(e);
        if (r_cap == 0)
                return 0;
        if (why)
                snprintf(why, why_size, "no RAPL: power PMU (%s), powercap intel-rapl (%s)",
                         strerror(-r_pmu), strerror(-r_cap));
        *e = (struct sensor_energy){.src = SENSOR_ENERGY_NONE};
        return r_cap == -ENOENT ? r_pmu == -ENOENT ? -ENOENT : r_pmu : r_cap;
}

int sensor_energy_read(struct sensor_energy *e, double *energy_j)
{
        uint64_t now[SENSOR_MAX_PACKAGES];

        for (unsigned p = 0; p < e->n_packages; p++) {
                if (e->src == SENSOR_ENERGY_PMU) {
                        if (read(e->fd[p], &now[p], sizeof(uint64_t)) != sizeof(uint64_t))
                                return -EIO;
                } else {
                        char path[128];
                        int r;

                        snprintf(path, sizeof(path), "/sys/class/powercap/intel-rapl:%u/energy_uj",
                                 e->zone[p]);
                        r = fs_read_u64(path, &now[p]);
                        if (r < 0)
                                return r;
                }
        }
        for (unsigned p = 0; p < e->n_packages; p++) {
                if (e->src == SENSOR_ENERGY_PMU)
                        energy_j[p] = (double)(now[p] - e->prev[p]) * e->scale_j;
                else
                        energy_j[p] =
                            (double)sensor_wrap_delta(e->prev[p], now[p], e->max_range_uj[p]) *
                            1e-6;
                e->prev[p] = now[p];
        }
        return 0;
}

void sensor_energy_close(struct sensor_energy *e)
{
        for (unsigned p = 0; p < e->n_packages && p < SENSOR_MAX_PACKAGES; p++) {
                if (e->fd[p] >= 0)
                        close(e->fd[p]);
                e->fd[p] = -1;
        }
        e->n_packages = 0;
        e->src = SENSOR_ENERGY_NONE;
}

struct perf_state {
        struct cpumask cpus;
        unsigned n_cpus;
        unsigned metrics;
        unsigned tsc_khz;                /* the rate ref-cycles count at; 0: unknown */
        struct perf_group *grp;          /* [n_cpus]; empty for CPUs not sampled */
        struct perf_group_reading *prev; /* [n_cpus] */
        unsigned n_targets;
        struct perf_group *tgrp;          /* [n_targets * n_cpus] */
        struct perf_group_reading *tprev; /* same */
        enum sensor_busy_source busy_src;
        uint64_t *prev_busy_ns, *now_busy_ns;
        struct sensor_energy energy;
        struct uncore_counters *uncore; /* NULL: memory traffic not measured */
        uint64_t prev_ts_ns;
};

static int perf_reason(int err, const char *event, struct sensor_probe *out)
{
        char paranoid[32] = "?";

        out->available = false;
        out->err = err;
        switch (-err) {
        case EACCES:
        case EPERM:
                if (fs_read("/proc/sys/kernel/perf_event_paranoid", paranoid, sizeof(paranoid)) < 0)
                        snprintf(paranoid, sizeof(paranoid), "unknown");
                snprintf(out->reason, sizeof(out->reason),
                         "perf: not allowed to count CPU-wide (perf_event_open %s: %s; "
                         "perf_event_paranoid is %s): run as root or with CAP_PERFMON, or set "
                         "kernel.perf_event_paranoid=0",
                         event, strerror(-err), paranoid);
                break;
        case EMFILE:
        case ENFILE:
                snprintf(out->reason, sizeof(out->reason),
                         "perf: out of file descriptors (perf_event_open %s: %s): raise the "
                         "open files limit (LimitNOFILE=)",
                         event, strerror(-err));
                break;
        default:
                /* ENOENT, EOPNOTSUPP, EINVAL, ENXIO: the PMU does not have the event. */
                snprintf(out->reason, sizeof(out->reason),
                         "perf: the CPU exposes no hardware counters to this kernel "
                         "(perf_event_open %s: %s); in a VM, enable the vPMU",
                         event, strerror(-err));
                break;
        }
        return 0;
}

/* instructions leads; cycles, ref-cycles and a stalled-cycle event follow it, in
 * perf_events[] order. The stall event is the first of perf_stall_attr's the PMU takes. */
static int perf_open_group(struct perf_group *g, int pid, int cpu, unsigned long flags)
{
        struct perf_event_attr a[PERF_EV_N];
        bool intel = perf_cpu_is_intel();
        int r = -ENOENT;

        for (unsigned ev = 0; ev < PERF_EV_N; ev++)
                a[ev] = (struct perf_event_attr){.size = sizeof(a[ev]),
                                                 .type = PERF_TYPE_HARDWARE,
                                                 .config = perf_events[ev].config};
        for (unsigned attempt = 0; perf_stall_attr(attempt, intel, &a[PERF_EV_STALLS]); attempt++) {
                if (attempt > 0)
                        perf_group_close(g);
                r = perf_group_open(g, a, PERF_EV_N, pid, cpu, flags);
                /* A refused leader fails every attempt alike; a refused member is left out. */
                if (r < 0 || (g->opened & (1u << PERF_EV_STALLS)))
                        break;
        }
        return r;
}

/* Whether the memory controllers' counters open here, and why not: the uncore PMUs do not
 * need the core PMU, but the backend needs both to be open. */
static void perf_probe_mem(struct sensor_probe *out)
{
        struct uncore_counters *u = calloc(1, sizeof(*u));
        char why[200];

        if (!u) {
                snprintf(out->mem_reason, sizeof(out->mem_reason), "perf: out of memory");
                return;
        }
        if (uncore_counters_open(u, why, sizeof(why)) == 0) {
                out->mem_traffic = out->available;
                snprintf(out->mem_reason, sizeof(out->mem_reason), "perf: %s%s", why,
                         out->available ? "" : " (but the backend is not available)");
                uncore_counters_close(u);
        } else {
                snprintf(out->mem_reason, sizeof(out->mem_reason), "perf: not measured: %s", why);
        }
        free(u);
}

static int perf_probe(const struct sensor_config *cfg, struct sensor_probe *out)
{
        char why[200];
        struct sensor_energy e;
        struct perf_group g;
        int r;

        (void)cfg;
        *out = (struct sensor_probe){0};
        r = perf_open_group(&g, -1, 0, 0);
        if (r < 0) {
                perf_reason(r, "instructions", out);
                perf_probe_mem(out);
                return 0;
        }
        perf_group_close(&g);
        out->available = true;
        perf_probe_mem(out);
        r = sensor_energy_open(&e, why, sizeof(why));
        if (r == 0) {
                snprintf(out->reason, sizeof(out->reason),
                         "perf: hardware counters per CPU; energy from %s for %u package(s)",
                         e.src == SENSOR_ENERGY_PMU ? "the power PMU" : "powercap", e.n_packages);
                sensor_energy_close(&e);
        } else {
                snprintf(out->reason, sizeof(out->reason),
                         "perf: hardware counters per CPU; energy not measured (%s)", why);
        }
        return 0;
}

static void perf_close_groups(struct perf_group *g, size_t n)
{
        for (size_t i = 0; g && i < n; i++)
                perf_group_close(&g[i]);
}

static void perf_close(struct sensor *s)
{
        struct perf_state *st = s->priv;

        if (!st)
                return;
        perf_close_groups(st->grp, st->n_cpus);
        perf_close_groups(st->tgrp, (size_t)st->n_targets * st->n_cpus);
        free(st->grp);
        free(st->prev);
        free(st->tgrp);
        free(st->tprev);
        free(st->prev_busy_ns);
        free(st->now_busy_ns);
        sensor_energy_close(&st->energy);
        if (st->uncore)
                uncore_counters_close(st->uncore);
        free(st->uncore);
        free(st);
        s->priv = NULL;
}

static int perf_open(struct sensor *s, const struct sensor_config *cfg)
{
        struct perf_state *st = calloc(1, sizeof(*st));
        unsigned n_packages;
        unsigned opened_everywhere = (1u << PERF_EV_N) - 1;
        int r;

        if (!st)
                return -ENOMEM;
        s->priv = st;
        for (unsigned i = 0; i < SENSOR_MAX_PACKAGES; i++)
                st->energy.fd[i] = -1;
        r = sensor_cpus_resolve(cfg, &st->cpus, &st->n_cpus, &n_packages);
        if (r < 0)
                goto fail;
        st->grp = calloc(st->n_cpus, sizeof(*st->grp));
        st->prev = calloc(st->n_cpus, sizeof(*st->prev));
        st->prev_busy_ns = calloc(st->n_cpus, sizeof(uint64_t));
        st->now_busy_ns = calloc(st->n_cpus, sizeof(uint64_t));
        if (!st->grp || !st->prev || !st->prev_busy_ns || !st->now_busy_ns) {
                r = -ENOMEM;
                goto fail;
        }
        /* A metric counts as measured only if its event joined the group on every CPU. */
        cpumask_foreach (cpu, &st->cpus) {
                r = perf_open_group(&st->grp[cpu], -1, cpu, 0);
                if (r == 0)
                        r = perf_group_read(&st->grp[cpu], &st->prev[cpu]);
                if (r < 0)
                        goto fail;
                opened_everywhere &= st->grp[cpu].opened;
        }
        for (unsigned ev = 0; ev < PERF_EV_N; ev++)
                if (opened_everywhere & (1u << ev))
                        st->metrics |= perf_events[ev].metric;
        /* ref-cycles tick at the TSC rate while the CPU is unhalted. */
        if ((st->metrics & SENSOR_CYCLES) && (st->metrics & SENSOR_REF_CYCLES) &&
            perf_tsc_khz(20, &st->tsc_khz) == 0)
                st->metrics |= SENSOR_FREQ;
        r = sensor_busy_probe(&st->busy_src, NULL, 0);
        if (r == 0 && sensor_busy_read(st->busy_src, st->prev_busy_ns, st->n_cpus) == 0)
                st->metrics |= SENSOR_BUSY;
        if (sensor_energy_open(&st->energy, NULL, 0) == 0)
                s->has_energy = true;
        /* Without them the backend still counts the cores: the traffic is left unmeasured. */
        st->uncore = calloc(1, sizeof(*st->uncore));
        if (st->uncore && uncore_counters_open(st->uncore, NULL, 0) == 0) {
                s->has_mem_traffic = true;
        } else {
                free(st->uncore);
                st->uncore = NULL;
        }
        st->prev_ts_ns = now_ns();
        s->n_cpus = st->n_cpus;
        s->n_packages = s->has_energy ? st->energy.n_packages : n_packages;
        if (st->uncore && st->uncore->imc.n_packages > s->n_packages)
                s->n_packages = st->uncore->imc.n_packages;
        s->metrics = st->metrics;
        return 0;
fail:
        perf_close(s);
        return r;
}

static int perf_set_targets(struct sensor *s, const struct sensor_target *targets, unsigned n)
{
        struct perf_state *st = s->priv;
        size_t per = st->n_cpus;
        struct perf_group *tgrp = NULL;
        struct perf_group_reading *tprev = NULL;
        int r = 0;

        for (unsigned i = 0; i < n; i++)
                /* Counting a process per CPU would need an event per thread and CPU; the
                 * software backend measures processes. */
                if (targets[i].kind != SENSOR_TARGET_CGROUP)
                        return -EOPNOTSUPP;
        if (n > 0) {
                tgrp = calloc(n * per, sizeof(*tgrp));
                tprev = calloc(n * per, sizeof(*tprev));
                if (!tgrp || !tprev) {
                        free(tgrp);
                        free(tprev);
                        return -ENOMEM;
                }
        }
        for (unsigned t = 0; t < n && r == 0; t++) {
                char path[4200];
                _cleanup_close_ int dirfd = -1;

                r = fs_path(path, sizeof(path), "%s", targets[t].cgroup);
                if (r < 0)
                        break;
                dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dirfd < 0) {
                        r = -errno;
                        break;
                }
                cpumask_foreach (cpu, &st->cpus) {
                        size_t k = t * per + (size_t)cpu;

                        r = perf_open_group(&tgrp[k], dirfd, cpu, PERF_FLAG_PID_CGROUP);
                        if (r == 0)
                                r = perf_group_read(&tgrp[k], &tprev[k]);
                        if (r < 0)
                                break;
                }
        }
        if (r < 0) {
                perf_close_groups(tgrp, n * per);
                free(tgrp);
                free(tprev);
                return r;
        }
        perf_close_groups(st->tgrp, (size_t)st->n_targets * per);
        free(st->tgrp);
        free(st->tprev);
        st->tgrp = tgrp;
        st->tprev = tprev;
        st->n_targets = n;
        return 0;
}

/* One group's deltas into c: only the metrics measured on every CPU (st->metrics). */
static void perf_fill(const struct perf_state *st, const struct perf_group *g,
                      struct perf_group_reading *prev, struct sensor_counts *c)
{
        struct perf_group_reading now;

        if (g->n == 0 || perf_group_read(g, &now) < 0)
                return;
        for (unsigned ev = 0; ev < PERF_EV_N; ev++) {
                uint64_t d;

                if (!(g->opened & (1u << ev)) || !(st->metrics & perf_events[ev].metric))
                        continue;
                d = perf_group_delta(prev, &now, ev);
                if (ev == PERF_EV_INSTR)
                        c->instr = d;
                else if (ev == PERF_EV_CYCLES)
                        c->cycles = d;
                else if (ev == PERF_EV_STALLS)
                        c->stalls = d;
                else
                        c->ref_cycles = d;
                c->measured |= perf_events[ev].metric;
        }
        *prev = now;
        /* Both from one read of one group: the same slices of time. A CPU that never left
         * idle has no ref-cycles and no frequency to tell. */
        if (st->metrics & SENSOR_FREQ)
                perf_counts_freq(c, st->tsc_khz);
}

static int perf_read(struct sensor *s, struct sensor_sample *out)
{
        struct perf_state *st = s->priv;
        uint64_t ts = now_ns();
        bool busy = (st->metrics & SENSOR_BUSY) &&
                    sensor_busy_read(st->busy_src, st->now_busy_ns, st->n_cpus) == 0;

        cpumask_foreach (cpu, &st->cpus) {
                struct sensor_counts *c = &out->cpu[cpu];

                perf_fill(st, &st->grp[cpu], &st->prev[cpu], c);
                if (busy) {
                        c->busy_ns = st->now_busy_ns[cpu] >= st->prev_busy_ns[cpu]
                                         ? st->now_busy_ns[cpu] - st->prev_busy_ns[cpu]
                                         : 0;
                        c->measured |= SENSOR_BUSY;
                }
                for (unsigned t = 0; t < st->n_targets && t < out->n_targets; t++) {
                        size_t k = (size_t)t * st->n_cpus + (size_t)cpu;

                        perf_fill(st, &st->tgrp[k], &st->tprev[k], sensor_target_cpu(out, t, cpu));
                }
        }
        if (busy)
                memcpy(st->prev_busy_ns, st->now_busy_ns, st->n_cpus * sizeof(uint64_t));
        if (s->has_energy && sensor_energy_read(&st->energy, out->energy_j) == 0) {
                out->energy_measured = true;
                out->n_packages = st->energy.n_packages;
        }
        /* An interval a controller did not count in is left unmeasured, not 0. */
        if (st->uncore && uncore_counters_read(st->uncore, out->mem_bytes) == 0) {
                out->mem_measured = true;
                if (st->uncore->imc.n_packages > out->n_packages)
                        out->n_packages = st->uncore->imc.n_packages;
        }
        out->timestamp_ns = ts;
        out->interval_ns = ts - st->prev_ts_ns;
        st->prev_ts_ns = ts;
        return 0;
}

const struct sensor_ops sensor_perf_ops = {
    .name = "perf",
    .description = "perf_event_open: instructions, cycles, ref-cycles as one group per CPU and "
                   "cgroup; frequency; RAPL; memory controllers (uncore IMC/UMC) per package",
    .probe = perf_probe,
    .open = perf_open,
    .set_targets = perf_set_targets,
    .read = perf_read,
    .close = perf_close,
};
