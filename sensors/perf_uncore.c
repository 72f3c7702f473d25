/* Memory traffic per package from the memory controllers' uncore PMUs (include/pctl/perf_uncore.h):
 * discovery in sysfs, the event strings packed with the PMUs' format files, counts to bytes. */
#include "pctl/perf_uncore.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "pctl/cpumask.h"
#include "pctl/fsio.h"
#include "pctl/util.h"

#define UNCORE_CACHE_LINE_BYTES 64.0

/* The memory-controller PMUs pctl knows, as perf names them. An event given as a string here
 * is one sysfs does not list (perf takes it from its own tables); else its name is looked up
 * in the PMU's events/ directory. */
static const struct uncore_kind {
        const char *prefix;
        bool numbered; /* prefix + a number (one PMU per channel), else the exact name */
        const char *event_name[2];
        const char *event_string[2];
} uncore_kinds[] = {
    {"uncore_imc_", true, {"cas_count_read", "cas_count_write"}, {NULL, NULL}},
    {"uncore_imc", false, {"data_reads", "data_writes"}, {NULL, NULL}},
    /* amdzen4 memory-controller events: umc_cas_cmd.rd / .wr */
    {"amd_umc_",
     true,
     {"umc_cas_cmd.rd", "umc_cas_cmd.wr"},
     {"event=0x0a,rdwrmask=0x1", "event=0x0a,rdwrmask=0x2"}},
};

static const struct uncore_kind *uncore_kind_of(const char *pmu)
{
        for (size_t k = 0; k < ARRAY_SIZE(uncore_kinds); k++) {
                const struct uncore_kind *u = &uncore_kinds[k];
                size_t len = strlen(u->prefix);

                if (strncmp(pmu, u->prefix, len) != 0)
                        continue;
                if (!u->numbered
                        ? pmu[len] == '\0'
                        : pmu[len] != '\0' && strspn(pmu + len, "0123456789") == strlen(pmu + len))
                        return u;
        }
        return NULL;
}

static ssize_t pmu_read(const char *sysfs_dir, const char *pmu, const char *file, char *buf,
                        size_t size)
{
        char path[PATH_MAX];

        if ((size_t)snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/%s", sysfs_dir,
                             pmu, file) >= sizeof(path))
                return -ENAMETOOLONG;
        return file_read(path, buf, size);
}

/* "config:0-7", "config1:8", "config:0-7,32-35": value's bits go into the ranges, lowest
 * first. */
static int format_place(const char *format, uint64_t value, struct uncore_config *c)
{
        uint64_t *word;
        const char *p;
        unsigned placed = 0;

        if (strncmp(format, "config:", 7) == 0) {
                word = &c->config;
                p = format + 7;
        } else if (strncmp(format, "config1:", 8) == 0) {
                word = &c->config1;
                p = format + 8;
        } else if (strncmp(format, "config2:", 8) == 0) {
                word = &c->config2;
                p = format + 8;
        } else {
                return -EINVAL;
        }
        for (;;) {
                char *end;
                unsigned long lo, hi;

                if (!isdigit((unsigned char)*p))
                        return -EINVAL;
                lo = strtoul(p, &end, 10);
                hi = lo;
                if (*end == '-') {
                        if (!isdigit((unsigned char)end[1]))
                                return -EINVAL;
                        hi = strtoul(end + 1, &end, 10);
                }
                if (hi < lo || hi > 63)
                        return -EINVAL;
                for (unsigned long b = lo; b <= hi; b++, placed++)
                        if (placed < 64 && (value >> placed) & 1)
                                *word |= 1ull << b;
                if (*end == '\0')
                        break;
                if (*end != ',')
                        return -EINVAL;
                p = end + 1;
        }
        /* A value wider than its field would be cut: a malformed event. */
        if (placed < 64 && value >> placed)
                return -EINVAL;
        return 0;
}

int uncore_event_parse(const char *sysfs_dir, const char *pmu, const char *event,
                       struct uncore_config *out)
{
        struct uncore_config c = {0};
        char copy[256], *save = NULL;
        unsigned n_terms = 0;

        if (strlen(event) >= sizeof(copy))
                return -EINVAL;
        strcpy(copy, event);
        for (char *term = strtok_r(copy, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(term, '='), format[128], file[96];
                uint64_t value = 1;
                int r;

                term = strstrip(term);
                if (eq) {
                        char *v = strstrip(eq + 1);
                        char *end;

                        *eq = '\0';
                        term = strstrip(term);
                        if (!isdigit((unsigned char)*v))
                                return -EINVAL;
                        errno = 0;
                        value = strtoull(v, &end, 0);
                        if (errno || *end)
                                return -EINVAL;
                }
                if (!*term || strspn(term, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(term))
                        return -EINVAL;
                snprintf(file, sizeof(file), "format/%s", term);
                r = (int)pmu_read(sysfs_dir, pmu, file, format, sizeof(format));
                if (r < 0)
                        return -EINVAL; /* a term the PMU has no field for */
                r = format_place(strstrip(format), value, &c);
                if (r < 0)
                        return r;
                n_terms++;
        }
        if (n_terms == 0)
                return -EINVAL;
        *out = c;
        return 0;
}

int uncore_bytes_per_count(const char *scale, const char *unit, double *out)
{
        static const struct {
                const char *name;
                double bytes;
        } units[] = {
            {"B", 1},    {"bytes", 1},     {"KB", 1e3}, {"KiB", 1024},
            {"MB", 1e6}, {"MiB", 1048576}, {"GB", 1e9}, {"GiB", 1073741824.0},
        };
        double s;

        if (!scale && !unit) {
                *out = UNCORE_CACHE_LINE_BYTES;
                return 0;
        }
        if (!scale || !unit)
                return -EINVAL;
        if (parse_double(scale, &s) < 0 || !(s > 0))
                return -EINVAL;
        for (size_t i = 0; i < ARRAY_SIZE(units); i++)
                if (strcmp(unit, units[i].name) == 0) {
                        /* A scale so large that a count overflows a double is no scale. */
                        if (!isfinite(s * units[i].bytes))
                                return -EINVAL;
                        *out = s * units[i].bytes;
                        return 0;
                }
        return -EINVAL;
}

int uncore_delta_bytes(uint64_t prev_count, uint64_t now_count, uint64_t prev_enabled_ns,
                       uint64_t now_enabled_ns, uint64_t prev_running_ns, uint64_t now_running_ns,
                       double bytes_per_count, double *bytes)
{
        uint64_t enabled_ns, running_ns;

        if (now_count < prev_count || now_enabled_ns < prev_enabled_ns ||
            now_running_ns < prev_running_ns)
                return -ERANGE;
        enabled_ns = now_enabled_ns - prev_enabled_ns;
        running_ns = now_running_ns - prev_running_ns;
        if (running_ns == 0)
                return -ENODATA;
        *bytes = (double)(now_count - prev_count) * ((double)enabled_ns / (double)running_ns) *
                 bytes_per_count;
        return 0;
}

/* The package a CPU is on; topology's rule: unreadable or -1 is package 0. */
static int cpu_package(const char *sysfs_dir, unsigned cpu, unsigned *package)
{
        char path[PATH_MAX], buf[32];
        int id;

        snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%u/topology/physical_package_id",
                 sysfs_dir, cpu);
        if (file_read(path, buf, sizeof(buf)) < 0 || parse_int(strstrip(buf), &id) < 0 || id < 0) {
                *package = 0;
                return 0;
        }
        if (id >= SENSOR_MAX_PACKAGES)
                return -ERANGE;
        *package = (unsigned)id;
        return 0;
}

/* One event of one PMU: its config and bytes per count. why names the file at fault. */
static int uncore_event(const char *sysfs_dir, const char *pmu, const struct uncore_kind *k,
                        unsigned ev, struct uncore_config *c, double *bpc, char *why,
                        size_t why_size)
{
        char event[256], file[128], scale[64], unit[32];
        bool has_scale, has_unit;
        int r;

        if (k->event_string[ev]) {
                snprintf(event, sizeof(event), "%s", k->event_string[ev]);
        } else {
                snprintf(file, sizeof(file), "events/%s", k->event_name[ev]);
                r = (int)pmu_read(sysfs_dir, pmu, file, event, sizeof(event));
                if (r < 0) {
                        snprintf(why, why_size, "%s: no %s (%s)", pmu, file, strerror(-r));
                        return r;
                }
        }
        r = uncore_event_parse(sysfs_dir, pmu, strstrip(event), c);
        if (r < 0) {
                snprintf(why, why_size, "%s: event %s '%.60s' does not fit its format files", pmu,
                         k->event_name[ev], event);
                return r;
        }
        snprintf(file, sizeof(file), "events/%s.scale", k->event_name[ev]);
        has_scale = pmu_read(sysfs_dir, pmu, file, scale, sizeof(scale)) >= 0;
        snprintf(file, sizeof(file), "events/%s.unit", k->event_name[ev]);
        has_unit = pmu_read(sysfs_dir, pmu, file, unit, sizeof(unit)) >= 0;
        r = uncore_bytes_per_count(has_scale ? strstrip(scale) : NULL,
                                   has_unit ? strstrip(unit) : NULL, bpc);
        if (r < 0)
                snprintf(why, why_size, "%s: %s's scale '%s' and unit '%s' do not give bytes", pmu,
                         k->event_name[ev], has_scale ? scale : "(none)",
                         has_unit ? unit : "(none)");
        return r;
}

static int name_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds a box per CPU of the PMU's cpumask. */
static int uncore_pmu_add(const char *sysfs_dir, const char *pmu, const struct uncore_kind *k,
                          struct uncore_imc *out, char *why, size_t why_size)
{
        struct uncore_box b = {0};
        struct cpumask cpus;
        char buf[CPUMASK_LIST_MAX];
        uint64_t type;
        int r;

        if (strlen(pmu) >= sizeof(b.pmu))
                return -EINVAL;
        strcpy(b.pmu, pmu);
        r = (int)pmu_read(sysfs_dir, pmu, "type", buf, sizeof(buf));
        if (r < 0 || parse_u64(strstrip(buf), &type) < 0 || type > UINT32_MAX) {
                snprintf(why, why_size, "%s: no type", pmu);
                return -EINVAL;
        }
        b.type = (uint32_t)type;
        r = (int)pmu_read(sysfs_dir, pmu, "cpumask", buf, sizeof(buf));
        if (r < 0 || cpumask_parse(strstrip(buf), &cpus) < 0 || cpumask_empty(&cpus)) {
                snprintf(why, why_size, "%s: no cpumask naming the CPU to open it on", pmu);
                return -EINVAL;
        }
        for (unsigned ev = 0; ev < 2; ev++) {
                r = uncore_event(sysfs_dir, pmu, k, ev, &b.ev[ev], &b.bytes_per_count[ev], why,
                                 why_size);
                if (r < 0)
                        return -EINVAL;
        }
        cpumask_foreach (cpu, &cpus) {
                if (out->n_boxes == UNCORE_MAX_BOXES) {
                        snprintf(why, why_size, "%s: more than %u PMU instances", pmu,
                                 UNCORE_MAX_BOXES);
                        return -E2BIG;
                }
                b.cpu = cpu;
                if (cpu_package(sysfs_dir, (unsigned)cpu, &b.package) < 0) {
                        snprintf(why, why_size, "%s: CPU %d's package is past %u", pmu, cpu,
                                 SENSOR_MAX_PACKAGES);
                        return -EINVAL;
                }
                out->box[out->n_boxes++] = b;
                if (b.package + 1 > out->n_packages)
                        out->n_packages = b.package + 1;
        }
        return 0;
}

int uncore_imc_discover(const char *sysfs_dir, struct uncore_imc *out, char *why, size_t why_size)
{
        char path[PATH_MAX], first_bad[200] = "", dummy[8];
        char *names[256];
        unsigned n_names = 0, n_pmus = 0;
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (!why) {
                why = dummy;
                why_size = sizeof(dummy);
        }
        *out = (struct uncore_imc){0};
        snprintf(path, sizeof(path), "%s/bus/event_source/devices", sysfs_dir);
        d = opendir(path);
        if (!d) {
                r = -errno;
                snprintf(why, why_size, "no memory-controller PMU (%s: %s)", path, strerror(-r));
                return -ENOENT;
        }
        while ((de = readdir(d)) && n_names < ARRAY_SIZE(names))
                if (uncore_kind_of(de->d_name) && (names[n_names] = strdup(de->d_name)))
                        n_names++;
        closedir(d);
        /* In name order, so that boxes (and messages) do not depend on readdir's. */
        qsort(names, n_names, sizeof(*names), name_cmp);
        for (unsigned i = 0; i < n_names; i++) {
                char one[200];

                r = uncore_pmu_add(sysfs_dir, names[i], uncore_kind_of(names[i]), out, one,
                                   sizeof(one));
                if (r < 0) {
                        /* The boxes it added before failing stay out too. */
                        while (out->n_boxes > 0 &&
                               strcmp(out->box[out->n_boxes - 1].pmu, names[i]) == 0)
                                out->n_boxes--;
                        out->n_skipped++;
                        if (!first_bad[0])
                                snprintf(first_bad, sizeof(first_bad), "%s", one);
                } else {
                        n_pmus++;
                }
                free(names[i]);
        }
        /* n_packages again: a PMU skipped late may have raised it. */
        out->n_packages = 0;
        for (unsigned i = 0; i < out->n_boxes; i++)
                if (out->box[i].package + 1 > out->n_packages)
                        out->n_packages = out->box[i].package + 1;
        if (out->n_boxes == 0) {
                if (first_bad[0]) {
                        snprintf(why, why_size, "no usable memory-controller PMU: %s", first_bad);
                        return -EINVAL;
                }
                snprintf(why, why_size,
                         "no memory-controller PMU in %s (uncore_imc_N, uncore_imc, amd_umc_N; "
                         "VMs and AMD before Zen 4 / Linux 6.8 have none)",
                         path);
                return -ENOENT;
        }
        if (first_bad[0])
                snprintf(why, why_size,
                         "%u memory-controller PMU(s) on %u package(s); %u skipped: %s", n_pmus,
                         out->n_packages, out->n_skipped, first_bad);
        else
                snprintf(why, why_size, "%u memory-controller PMU(s) (%s..) on %u package(s)",
                         n_pmus, out->box[0].pmu, out->n_packages);
        return 0;
}

int uncore_counters_open(struct uncore_counters *u, char *why, size_t why_size)
{
        char sys[PATH_MAX], dummy[8];
        int r;

        if (!why) {
                why = dummy;
                why_size = sizeof(dummy);
        }
        memset(u->grp, 0, sizeof(u->grp));
        u->imc.n_boxes = 0;
        r = fs_path(sys, sizeof(sys), "/sys");
        if (r < 0)
                return r;
        r = uncore_imc_discover(sys, &u->imc, why, why_size);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < u->imc.n_boxes; i++) {
                const struct uncore_box *b = &u->imc.box[i];

                for (unsigned ev = 0; ev < 2; ev++) {
                        struct perf_event_attr a = {.size = sizeof(a),
                                                    .type = b->type,
                                                    .config = b->ev[ev].config,
                                                    .config1 = b->ev[ev].config1,
                                                    .config2 = b->ev[ev].config2};

                        /* System-wide on the CPU the PMU names: uncore events have no task. */
                        r = perf_group_open(&u->grp[i][ev], &a, 1, -1, b->cpu, 0);
                        if (r == 0)
                                r = perf_group_read(&u->grp[i][ev], &u->prev[i][ev]);
                        if (r < 0) {
                                snprintf(why, why_size, "%s on CPU %d: perf_event_open: %s%s",
                                         b->pmu, b->cpu, strerror(-r),
                                         r == -EACCES || r == -EPERM
                                             ? " (uncore counters need root or CAP_PERFMON)"
                                             : "");
                                uncore_counters_close(u);
                                return r;
                        }
                }
        }
        return 0;
}

int uncore_counters_read(struct uncore_counters *u, double *mem_bytes)
{
        double bytes[SENSOR_MAX_PACKAGES] = {0};
        int result = 0;

        for (unsigned i = 0; i < u->imc.n_boxes; i++) {
                const struct uncore_box *b = &u->imc.box[i];

                for (unsigned ev = 0; ev < 2; ev++) {
                        struct perf_group_reading now;
                        double d;
                        int r = perf_group_read(&u->grp[i][ev], &now);

                        if (r < 0)
                                return r;
                        r = uncore_delta_bytes(u->prev[i][ev].value[0], now.value[0],
                                               u->prev[i][ev].enabled_ns, now.enabled_ns,
                                               u->prev[i][ev].running_ns, now.running_ns,
                                               b->bytes_per_count[ev], &d);
                        u->prev[i][ev] = now;
                        /* A box that did not count leaves the interval's traffic unknown. */
                        if (r < 0)
                                result = r;
                        else
                                bytes[b->package] += d;
                }
        }
        if (result < 0)
                return result;
        memcpy(mem_bytes, bytes, u->imc.n_packages * sizeof(double));
        return 0;
}

void uncore_counters_close(struct uncore_counters *u)
{
        for (unsigned i = 0; i < u->imc.n_boxes && i < UNCORE_MAX_BOXES; i++)
                for (unsigned ev = 0; ev < 2; ev++)
                        perf_group_close(&u->grp[i][ev]);
        u->imc.n_boxes = 0;
}
