/* The `pctl sample` trace format (see include/pctl/sample_io.h) and the reader for it and for
 * likwid-perfctr -t timeline text. */
#include "pctl/sample_io.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/jsonfmt.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

/* The first columns, as the format began. Columns added later follow them, each named in the
 * column line (sample_io_extras): a trace without them still reads. */
#define SAMPLE_IO_COLUMNS_V1                                                                       \
        "time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,energy_j"
#define SAMPLE_IO_COLUMNS SAMPLE_IO_COLUMNS_V1 ",freq_khz,stalls,mem_bytes"
#define SAMPLE_IO_MAX_EXTRAS 4

/* A column after the first ten. */
enum sample_io_extra {
        /* The frequency the CPU ran at while unhalted (cycles / ref-cycles × the TSC rate). */
        SAMPLE_IO_FREQ_KHZ,
        /* Stalled cycles (ESTIMA's input: CYCLE_ACTIVITY.STALLS_TOTAL and the like). */
        SAMPLE_IO_STALLS,
        /* Bytes read and written at a package's memory controllers (package rows only). */
        SAMPLE_IO_MEM_BYTES,
};

static const char *const sample_io_extras[] = {
    [SAMPLE_IO_FREQ_KHZ] = "freq_khz",
    [SAMPLE_IO_STALLS] = "stalls",
    [SAMPLE_IO_MEM_BYTES] = "mem_bytes",
};

#define LIKWID_MAX_GROUPS 16
#define LIKWID_MAX_METRICS 64

static int write_status(FILE *f)
{
        return ferror(f) ? -EIO : 0;
}

static void shape_cpus(const struct sensor_sample *shape, const struct cpumask *cpus,
                       struct cpumask *out)
{
        if (cpus && !cpumask_empty(cpus)) {
                *out = *cpus;
                return;
        }
        cpumask_zero(out);
        for (unsigned c = 0; shape && c < shape->n_cpus; c++)
                cpumask_set(out, c);
}

int sample_io_write_header_fmt(FILE *f, const char *backend, const struct sensor_sample *shape,
                               const struct cpumask *cpus, enum sample_io_format fmt)
{
        char list[CPUMASK_LIST_MAX];
        struct cpumask m;

        if (fmt == SAMPLE_IO_JSON)
                return 0;
        shape_cpus(shape, cpus, &m);
        if (cpumask_format(&m, list, sizeof(list)) < 0)
                return -ENOBUFS;
        fprintf(f, "# pctl-sample v1 backend=%s cpus=%s packages=%u targets=%u\n",
                backend ? backend : "unknown", list, shape ? shape->n_packages : 0,
                shape ? shape->n_targets : 0);
        if (fmt == SAMPLE_IO_CSV)
                fputs(SAMPLE_IO_COLUMNS "\n", f);
        else
                fprintf(f, "%12s %12s %-8s %5s %16s %16s %16s %14s %7s %9s %12s %9s\n", "time_s",
                        "interval_s", "kind", "cpu", "instr", "cycles", "ref_cycles", "busy_ns",
                        "busy_%", "freq_khz", "energy_j", "mem_GB/s");
        return write_status(f);
}

int sample_io_write_header(FILE *f, const char *backend, const struct sensor_sample *shape,
                           const struct cpumask *cpus)
{
        return sample_io_write_header_fmt(f, backend, shape, cpus, SAMPLE_IO_CSV);
}

static void csv_u64(FILE *f, bool measured, uint64_t v)
{
        if (measured)
                fprintf(f, ",%" PRIu64, v);
        else
                fputc(',', f);
}

static void csv_row(FILE *f, const struct sensor_sample *s, const char *kind, const char *id,
                    unsigned cpu, const struct sensor_counts *c)
{
        fprintf(f, "%.9f,%.9f,%s,%s,%u", (double)s->timestamp_ns / 1e9,
                (double)s->interval_ns / 1e9, kind, id, cpu);
        csv_u64(f, c->measured & SENSOR_INSTR, c->instr);
        csv_u64(f, c->measured & SENSOR_CYCLES, c->cycles);
        csv_u64(f, c->measured & SENSOR_REF_CYCLES, c->ref_cycles);
        csv_u64(f, c->measured & SENSOR_BUSY, c->busy_ns);
        fputc(',', f); /* energy_j: package rows only */
        csv_u64(f, c->measured & SENSOR_FREQ, c->freq_khz);
        csv_u64(f, c->measured & SENSOR_STALLS, c->stalls);
        fputs(",\n", f); /* mem_bytes: package rows only */
}

static void text_u64(FILE *f, int width, bool measured, uint64_t v)
{
        if (measured)
                fprintf(f, " %*" PRIu64, width, v);
        else
                fprintf(f, " %*s", width, "-");
}

static void text_row(FILE *f, const struct sensor_sample *s, const char *kind, unsigned cpu,
                     const struct sensor_counts *c)
{
        fprintf(f, "%12.6f %12.6f %-8s %5u", (double)s->timestamp_ns / 1e9,
                (double)s->interval_ns / 1e9, kind, cpu);
        text_u64(f, 16, c->measured & SENSOR_INSTR, c->instr);
        text_u64(f, 16, c->measured & SENSOR_CYCLES, c->cycles);
        text_u64(f, 16, c->measured & SENSOR_REF_CYCLES, c->ref_cycles);
        text_u64(f, 14, c->measured & SENSOR_BUSY, c->busy_ns);
        if ((c->measured & SENSOR_BUSY) && s->interval_ns > 0)
                fprintf(f, " %7.1f", 100.0 * (double)c->busy_ns / (double)s->interval_ns);
        else
                fprintf(f, " %7s", "-");
        text_u64(f, 9, c->measured & SENSOR_FREQ, c->freq_khz);
        fprintf(f, " %12s %9s\n", "-", "-");
}

/* A package's memory traffic in GB/s (10^9 bytes/s: bytes per ns), where it was measured. */
static bool mem_gbps(const struct sensor_sample *s, unsigned p, double *out)
{
        if (!s->mem_measured || s->interval_ns == 0)
                return false;
        *out = s->mem_bytes[p] / (double)s->interval_ns;
        return true;
}

/* A counter that was not measured is null, not 0. */
static struct json_object *counter_json(bool measured, uint64_t v)
{
        return measured ? json_object_new_uint64(v) : NULL;
}

static struct json_object *counts_json(const struct sensor_counts *c, unsigned cpu)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "cpu", json_object_new_uint64(cpu));
        json_object_object_add(o, "instr", counter_json(c->measured & SENSOR_INSTR, c->instr));
        json_object_object_add(o, "cycles", counter_json(c->measured & SENSOR_CYCLES, c->cycles));
        json_object_object_add(o, "ref_cycles",
                               counter_json(c->measured & SENSOR_REF_CYCLES, c->ref_cycles));
        json_object_object_add(o, "busy_ns", counter_json(c->measured & SENSOR_BUSY, c->busy_ns));
        json_object_object_add(o, "freq_khz", counter_json(c->measured & SENSOR_FREQ, c->freq_khz));
        json_object_object_add(o, "stalls", counter_json(c->measured & SENSOR_STALLS, c->stalls));
        return o;
}

static int sample_io_write_json(FILE *f, const struct sensor_sample *s)
{
        struct json_object *o = json_object_new_object(), *cpus, *packages, *targets;
        int r;

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "time_s", jsonfmt_double((double)s->timestamp_ns / 1e9));
        json_object_object_add(o, "interval_s", jsonfmt_double((double)s->interval_ns / 1e9));
        cpus = json_object_new_array();
        for (unsigned c = 0; c < s->n_cpus; c++)
                if (s->cpu[c].measured)
                        json_object_array_add(cpus, counts_json(&s->cpu[c], c));
        json_object_object_add(o, "cpus", cpus);
        packages = json_object_new_array();
        /* Every package, so that a reader sees null (not measured) rather than nothing. */
        for (unsigned p = 0; p < s->n_packages; p++) {
                struct json_object *pkg = json_object_new_object();
                double gbps;

                json_object_object_add(pkg, "package", json_object_new_uint64(p));
                json_object_object_add(pkg, "energy_j",
                                       s->energy_measured ? jsonfmt_double(s->energy_j[p]) : NULL);
                json_object_object_add(pkg, "mem_bytes",
                                       s->mem_measured ? jsonfmt_double(s->mem_bytes[p]) : NULL);
                json_object_object_add(pkg, "mem_gbps",
                                       mem_gbps(s, p, &gbps) ? jsonfmt_double(gbps) : NULL);
                json_object_array_add(packages, pkg);
        }
        json_object_object_add(o, "packages", packages);
        targets = json_object_new_array();
        for (unsigned t = 0; t < s->n_targets; t++) {
                struct json_object *target = json_object_new_object(),
                                   *tcpus = json_object_new_array();

                json_object_object_add(target, "target", json_object_new_uint64(t));
                for (unsigned c = 0; c < s->n_cpus; c++) {
                        const struct sensor_counts *tc = sensor_target_cpu(s, t, c);

                        if (tc->measured)
                                json_object_array_add(tcpus, counts_json(tc, c));
                }
                json_object_object_add(target, "cpus", tcpus);
                json_object_array_add(targets, target);
        }
        json_object_object_add(o, "targets", targets);
        r = jsonfmt_print(f, o, false);
        json_object_put(o);
        return r;
}

int sample_io_write(FILE *f, const struct sensor_sample *s, enum sample_io_format fmt)
{
        char id[16];

        if (fmt == SAMPLE_IO_JSON)
                return sample_io_write_json(f, s);
        for (unsigned c = 0; c < s->n_cpus; c++) {
                if (!s->cpu[c].measured)
                        continue;
                if (fmt == SAMPLE_IO_CSV)
                        csv_row(f, s, "cpu", "", c, &s->cpu[c]);
                else
                        text_row(f, s, "cpu", c, &s->cpu[c]);
        }
        for (unsigned t = 0; t < s->n_targets; t++) {
                snprintf(id, sizeof(id), "%u", t);
                for (unsigned c = 0; c < s->n_cpus; c++) {
                        const struct sensor_counts *tc = sensor_target_cpu(s, t, c);
                        char kind[24];

                        if (!tc->measured)
                                continue;
                        if (fmt == SAMPLE_IO_CSV) {
                                csv_row(f, s, "target", id, c, tc);
                        } else {
                                snprintf(kind, sizeof(kind), "target%u", t);
                                text_row(f, s, kind, c, tc);
                        }
                }
        }
        for (unsigned p = 0; p < s->n_packages; p++) {
                char energy[32] = "-", gbps_s[32] = "unknown";
                double gbps;

                if (fmt == SAMPLE_IO_CSV) {
                        /* A trace holds only what was measured. */
                        if (!s->energy_measured && !s->mem_measured)
                                break;
                        fprintf(f, "%.9f,%.9f,package,%u,,,,,,", (double)s->timestamp_ns / 1e9,
                                (double)s->interval_ns / 1e9, p);
                        if (s->energy_measured)
                                fprintf(f, "%.6f", s->energy_j[p]);
                        fputs(",,,", f);
                        if (s->mem_measured)
                                fprintf(f, "%.3f", s->mem_bytes[p]);
                        fputc('\n', f);
                        continue;
                }
                /* The table shows every package: "unknown" says the traffic was not measured. */
                if (s->energy_measured)
                        snprintf(energy, sizeof(energy), "%.6f", s->energy_j[p]);
                if (mem_gbps(s, p, &gbps))
                        snprintf(gbps_s, sizeof(gbps_s), "%.3f", gbps);
                fprintf(f, "%12.6f %12.6f %-8s %5u %16s %16s %16s %14s %7s %9s %12s %9s\n",
                        (double)s->timestamp_ns / 1e9, (double)s->interval_ns / 1e9, "package", p,
                        "", "", "", "", "", "", energy, gbps_s);
        }
        return write_status(f);
}

/* The reader keeps every record of the trace; an interval is a run of records. */
enum rec_kind { REC_CPU, REC_TARGET, REC_PACKAGE };

struct rec {
        enum rec_kind kind;
        unsigned id;
        unsigned cpu;
        struct sensor_counts c;
        /* Package rows: what the row measured. */
        bool energy, mem;
        double energy_j;
        double mem_bytes;
};

struct interval {
        uint64_t timestamp_ns, interval_ns;
        size_t first, n;
};

struct sample_io_reader {
        enum sample_io_source source;
        struct rec *recs;
        size_t n_recs, cap_recs;
        struct interval *iv;
        size_t n_iv, cap_iv;
        size_t next;
        unsigned n_cpus, n_packages, n_targets, metrics, skipped;
        /* packages= of our header line; 0 where the header has none. */
        unsigned header_packages;
        bool has_energy, has_mem;
        /* While parsing: why the line at hand is refused (sample_io_error's what). */
        char why[sizeof(((struct sample_io_error *)0)->what)];
};

/* Refuses the line at hand, saying why; returns -EBADMSG. */
static int __attribute__((format(printf, 2, 3)))
refuse(struct sample_io_reader *r, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(r->why, sizeof(r->why), fmt, ap);
        va_end(ap);
        return -EBADMSG;
}

/* A value its column cannot take: "column NAME: 'VALUE' WHAT". */
static int refuse_value(struct sample_io_reader *r, const char *column, const char *value,
                        const char *what)
{
        return refuse(r, "column %s: '%.40s' %s", column, value, what);
}

static int rec_push(struct sample_io_reader *r, const struct rec *x)
{
        if (r->n_recs == r->cap_recs) {
                size_t cap = r->cap_recs ? 2 * r->cap_recs : 256;
                struct rec *n = realloc(r->recs, cap * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                r->recs = n;
                r->cap_recs = cap;
        }
        r->recs[r->n_recs++] = *x;
        switch (x->kind) {
        case REC_CPU:
                if (x->cpu + 1 > r->n_cpus)
                        r->n_cpus = x->cpu + 1;
                r->metrics |= x->c.measured;
                break;
        case REC_TARGET:
                if (x->cpu + 1 > r->n_cpus)
                        r->n_cpus = x->cpu + 1;
                if (x->id + 1 > r->n_targets)
                        r->n_targets = x->id + 1;
                break;
        case REC_PACKAGE:
                if (x->id + 1 > r->n_packages)
                        r->n_packages = x->id + 1;
                r->has_energy |= x->energy;
                r->has_mem |= x->mem;
                break;
        }
        return 0;
}

static int interval_begin(struct sample_io_reader *r, uint64_t ts_ns, uint64_t len_ns)
{
        if (r->n_iv == r->cap_iv) {
                size_t cap = r->cap_iv ? 2 * r->cap_iv : 64;
                struct interval *n = realloc(r->iv, cap * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                r->iv = n;
                r->cap_iv = cap;
        }
        r->iv[r->n_iv++] =
            (struct interval){.timestamp_ns = ts_ns, .interval_ns = len_ns, .first = r->n_recs};
        return 0;
}

static void interval_end(struct sample_io_reader *r)
{
        if (r->n_iv > 0)
                r->iv[r->n_iv - 1].n = r->n_recs - r->iv[r->n_iv - 1].first;
}

/* A field of our CSV: empty = not measured. */
static int csv_field_u64(const char *s, uint64_t *v, bool *measured)
{
        if (!*s) {
                *measured = false;
                return 0;
        }
        *measured = true;
        return parse_u64(s, v);
}

static int seconds_to_ns(const char *s, uint64_t *out)
{
        double v;
        int r = parse_double(s, &v);

        if (r < 0)
                return r;
        /* Below 2^64 ns; llround would stop at 2^63 (its long long), past 292 years. */
        if (!(v >= 0) || v > 1.8e10)
                return -ERANGE;
        *out = (uint64_t)round(v * 1e9);
        return 0;
}

/* Our header line's packages= (absent in hand-written traces: 0). A package row past it is
 * refused. */
static int pctl_header(struct sample_io_reader *r, const char *line, unsigned *n_packages)
{
        const char *p = strstr(line, " packages=");
        char buf[16];
        size_t len;

        *n_packages = 0;
        if (!p)
                return 0;
        p += strlen(" packages=");
        len = strcspn(p, " ");
        if (len == 0 || len >= sizeof(buf) ||
            (memcpy(buf, p, len), buf[len] = '\0', parse_uint(buf, n_packages) < 0) ||
            *n_packages > SENSOR_MAX_PACKAGES)
                return refuse(r, "header: packages='%.*s' is not a whole number from 0 to %d",
                              (int)(len < 40 ? len : 40), p, SENSOR_MAX_PACKAGES);
        return 0;
}

/* The column line: the first ten, then known extra columns, each once. */
static int pctl_columns(struct sample_io_reader *r, const char *line, enum sample_io_extra *extras,
                        unsigned *n_extras)
{
        const size_t len = strlen(SAMPLE_IO_COLUMNS_V1);
        const char *p = line + len;

        *n_extras = 0;
        if (strncmp(line, SAMPLE_IO_COLUMNS_V1, len) != 0)
                return refuse(r, "the column line does not begin with " SAMPLE_IO_COLUMNS_V1);
        while (*p) {
                const char *name = p + 1, *end;
                size_t k;

                if (*p != ',')
                        return refuse(r,
                                      "the column line does not begin with " SAMPLE_IO_COLUMNS_V1);
                if (*n_extras == SAMPLE_IO_MAX_EXTRAS)
                        return refuse(r, "more than %d columns after energy_j",
                                      SAMPLE_IO_MAX_EXTRAS);
                end = strchr(name, ',');
                if (!end)
                        end = name + strlen(name);
                for (k = 0; k < ARRAY_SIZE(sample_io_extras); k++)
                        if (strlen(sample_io_extras[k]) == (size_t)(end - name) &&
                            strncmp(name, sample_io_extras[k], (size_t)(end - name)) == 0)
                                break;
                if (k == ARRAY_SIZE(sample_io_extras))
                        return refuse(r,
                                      "column '%.*s' is not one a pctl sample CSV has "
                                      "after energy_j (%s)",
                                      (int)(end - name < 40 ? end - name : 40), name,
                                      &SAMPLE_IO_COLUMNS[sizeof(SAMPLE_IO_COLUMNS_V1)]);
                for (unsigned i = 0; i < *n_extras; i++)
                        if (extras[i] == (enum sample_io_extra)k)
                                return refuse(r, "column %s twice", sample_io_extras[k]);
                extras[(*n_extras)++] = (enum sample_io_extra)k;
                p = end;
        }
        return 0;
}

/* The first ten columns' names, as SAMPLE_IO_COLUMNS_V1 gives them: what a refusal names. */
static const char *const pctl_columns_v1[] = {
    "time_s", "interval_s", "kind",       "id",      "cpu",
    "instr",  "cycles",     "ref_cycles", "busy_ns", "energy_j",
};

/* One row of our CSV: the ten first fields, then the extra columns the column line named, in
 * its order. */
static int pctl_csv_line(struct sample_io_reader *r, char *line, const enum sample_io_extra *extras,
                         unsigned n_extras, uint64_t *cur_ts)
{
        char *f[10 + SAMPLE_IO_MAX_EXTRAS];
        unsigned n = 0, n_fields = 10 + n_extras;
        struct rec x = {0};
        uint64_t ts, len, v[4];
        bool m[4];
        int e;

        for (char *p = line;; p++) {
                if (n == n_fields)
                        return refuse(r, "more than the %u fields the column line names", n_fields);
                f[n++] = p;
                p = strchr(p, ',');
                if (!p)
                        break;
                *p = '\0';
        }
        if (n != n_fields)
                return refuse(r, "%u field%s, not the %u the column line names", n, plural_s(n),
                              n_fields);
        for (unsigned k = 0; k < 2; k++)
                if (seconds_to_ns(f[k], k ? &len : &ts) < 0)
                        return refuse_value(r, pctl_columns_v1[k], f[k],
                                            "is not a number of seconds from 0");
        if (strcmp(f[2], "cpu") == 0)
                x.kind = REC_CPU;
        else if (strcmp(f[2], "target") == 0)
                x.kind = REC_TARGET;
        else if (strcmp(f[2], "package") == 0)
                x.kind = REC_PACKAGE;
        else
                return refuse_value(r, "kind", f[2], "is not cpu, target or package");
        if (x.kind != REC_CPU && parse_uint(f[3], &x.id) < 0)
                return refuse_value(r, "id", f[3], "is not a whole number from 0");
        if (x.kind == REC_PACKAGE) {
                const unsigned n_packages =
                    r->header_packages ? r->header_packages : SENSOR_MAX_PACKAGES;

                if (x.id >= n_packages)
                        return refuse(
                            r, "column id: package %u, past the %u the %s", x.id, n_packages,
                            r->header_packages ? "header's packages= says" : "reader takes");
                /* Empty: not measured (a row may carry only the traffic). */
                if (f[9][0]) {
                        if (parse_double(f[9], &x.energy_j) < 0)
                                return refuse_value(r, "energy_j", f[9], "is not a number");
                        x.energy = true;
                }
                for (unsigned k = 0; k < n_extras; k++) {
                        const char *fk = f[10 + k];

                        /* Counts of bytes: never negative, never NaN or infinite. */
                        if (extras[k] == SAMPLE_IO_MEM_BYTES && fk[0]) {
                                if (parse_double(fk, &x.mem_bytes) < 0 || !(x.mem_bytes >= 0))
                                        return refuse_value(r, "mem_bytes", fk,
                                                            "is not a number of bytes from 0");
                                x.mem = true;
                        } else if (fk[0]) {
                                return refuse(r, "column %s: a CPU's, set on a package row",
                                              sample_io_extras[extras[k]]);
                        }
                }
                if (!x.energy && !x.mem)
                        return refuse(r, "a package row with neither energy_j nor mem_bytes");
        } else {
                if (parse_uint(f[4], &x.cpu) < 0 || x.cpu >= CPUMASK_MAX)
                        return refuse(r, "column cpu: '%.40s' is not a CPU number below %d", f[4],
                                      CPUMASK_MAX);
                for (unsigned k = 0; k < 4; k++)
                        if (csv_field_u64(f[5 + k], &v[k], &m[k]) < 0)
                                return refuse_value(r, pctl_columns_v1[5 + k], f[5 + k],
                                                    "is not a count (a whole number from 0)");
                x.c = (struct sensor_counts){
                    .instr = v[0] * m[0],
                    .cycles = v[1] * m[1],
                    .ref_cycles = v[2] * m[2],
                    .busy_ns = v[3] * m[3],
                    .measured = (m[0] ? SENSOR_INSTR : 0) | (m[1] ? SENSOR_CYCLES : 0) |
                                (m[2] ? SENSOR_REF_CYCLES : 0) | (m[3] ? SENSOR_BUSY : 0),
                };
                for (unsigned k = 0; k < n_extras; k++) {
                        const char *fk = f[10 + k];

                        /* Empty: not measured. A frequency is never 0. */
                        if (!fk[0])
                                continue;
                        if (extras[k] == SAMPLE_IO_FREQ_KHZ) {
                                if (parse_uint(fk, &x.c.freq_khz) < 0 || x.c.freq_khz == 0)
                                        return refuse_value(r, "freq_khz", fk,
                                                            "is not a frequency in kHz (a whole "
                                                            "number above 0)");
                                x.c.measured |= SENSOR_FREQ;
                        } else if (extras[k] == SAMPLE_IO_STALLS) {
                                if (parse_u64(fk, &x.c.stalls) < 0)
                                        return refuse_value(r, "stalls", fk,
                                                            "is not a count (a whole number "
                                                            "from 0)");
                                x.c.measured |= SENSOR_STALLS;
                        } else if (extras[k] == SAMPLE_IO_MEM_BYTES) {
                                return refuse(r, "column mem_bytes: a package's, set on a %s row",
                                              f[2]);
                        }
                }
        }
        if (r->n_iv == 0 || ts != *cur_ts) {
                interval_end(r);
                e = interval_begin(r, ts, len);
                if (e < 0)
                        return e;
                *cur_ts = ts;
        }
        return rec_push(r, &x);
}

struct likwid_group {
        bool defined;
        unsigned n_metrics;
        int metric[LIKWID_MAX_METRICS]; /* enum sensor_metric bit, 0 = energy, or below */
};

/* Columns that are not a CPU's metric bit. */
enum {
        LIKWID_UNUSED = -1,
        /* A memory controller's CAS or DRAM count: one 64-byte line each. */
        LIKWID_MEM_LINES = -2,
        /* The MEM group's "Memory data volume [GBytes]": reads and writes, 10^9 bytes. */
        LIKWID_MEM_GBYTES = -3,
};

/* Maps a LIKWID event or metric name to what we measure. */
static int likwid_metric(const char *name)
{
        if (strstr(name, "INSTR_RETIRED_ANY"))
                return SENSOR_INSTR;
        if (strstr(name, "CPU_CLK_UNHALTED_CORE"))
                return SENSOR_CYCLES;
        if (strstr(name, "CPU_CLK_UNHALTED_REF"))
                return SENSOR_REF_CYCLES;
        if (strstr(name, "PWR_PKG_ENERGY") || strstr(name, "Energy [J]"))
                return 0;
        if (strstr(name, "CYCLE_ACTIVITY_STALLS_TOTAL") || strstr(name, "RESOURCE_STALLS_ANY"))
                return SENSOR_STALLS;
        /* Servers' per-channel CAS counts, clients' free-running DRAM counters. AMD's
         * DRAM_CHANNEL_n are left out: its groups count half the channels each (MEM1, MEM2),
         * which would read as half the traffic. */
        if (strstr(name, "CAS_COUNT_RD") || strstr(name, "CAS_COUNT_WR") ||
            strstr(name, "DRAM_READS") || strstr(name, "DRAM_WRITES"))
                return LIKWID_MEM_LINES;
        if (strcmp(name, "Memory data volume [GBytes]") == 0)
                return LIKWID_MEM_GBYTES;
        return LIKWID_UNUSED;
}

/* "# GID|MetricsCount|CpuCount|Total runtime [s]|name|name..." */
static int likwid_group_header(struct likwid_group *g, char *names)
{
        unsigned i = 0;
        char *save = NULL;

        *g = (struct likwid_group){.defined = true};
        for (char *tok = strtok_r(names, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
                if (i >= LIKWID_MAX_METRICS)
                        return -E2BIG;
                g->metric[i++] = likwid_metric(strstrip(tok));
        }
        g->n_metrics = i;
        /* A group with the data volume has the counts it is made of too: count it once. */
        for (unsigned k = 0; k < i; k++)
                if (g->metric[k] == LIKWID_MEM_GBYTES)
                        for (unsigned m = 0; m < i; m++)
                                if (g->metric[m] == LIKWID_MEM_LINES)
                                        g->metric[m] = LIKWID_UNUSED;
        return 0;
}

/* A counter reading as a count: a value at or past 2^64 cannot be a 64-bit counter's and
 * is refused before it is converted (the conversion would be undefined). */
static bool count_value(double v, uint64_t *out)
{
        if (!(v >= 0) || v >= 0x1p64)
                return false;
        *out = (uint64_t)round(v);
        return true;
}

static bool likwid_value(const char *tok, double *v)
{
        /* '-' (no value) and inf/nan are skipped: nothing is made up. */
        if (parse_double(tok, v) < 0)
                return false;
        return isfinite(*v) && *v >= 0;
}

/* "<gid> <nValues> <nCPUs> <t> v(1,cpu1)..v(1,cpuN) v(2,cpu1).." Returns -EBADMSG for a line
 * that is not a data line (noise), which the caller skips. */
static int likwid_data_line(struct sample_io_reader *r, char *line,
                            const struct likwid_group *groups, const int *hw_cpu, unsigned n_hw,
                            uint64_t *prev_ts)
{
        char *save = NULL, *tok;
        unsigned gid, n_values, n_cpus, k = 0;
        double energy_j = 0, mem_bytes = 0;
        bool energy = false, mem = false;
        char *toks[4];
        uint64_t ts;
        int e;

        for (unsigned i = 0; i < 4; i++) {
                toks[i] = strtok_r(i == 0 ? line : NULL, " \t", &save);
                if (!toks[i])
                        return -EBADMSG;
        }
        if (parse_uint(toks[0], &gid) < 0 || parse_uint(toks[1], &n_values) < 0 ||
            parse_uint(toks[2], &n_cpus) < 0 || seconds_to_ns(toks[3], &ts) < 0)
                return -EBADMSG;
        if (gid >= LIKWID_MAX_GROUPS || !groups[gid].defined || n_values != groups[gid].n_metrics ||
            n_cpus != n_hw || n_cpus == 0)
                return -EBADMSG;
        {
                _cleanup_free_ char **vals = malloc((size_t)n_values * n_cpus * sizeof(char *));

                if (!vals)
                        return -ENOMEM;
                while ((tok = strtok_r(NULL, " \t", &save))) {
                        if (k == n_values * n_cpus)
                                return -EBADMSG;
                        vals[k++] = tok;
                }
                /* A short line is a truncated or mixed-up one. */
                if (k != n_values * n_cpus)
                        return -EBADMSG;
                if (r->n_iv > 0 && ts <= *prev_ts)
                        return -EBADMSG;
                interval_end(r);
                e = interval_begin(r, ts, ts - *prev_ts);
                if (e < 0)
                        return e;
                *prev_ts = ts;
                for (unsigned c = 0; c < n_cpus; c++) {
                        struct rec x = {.kind = REC_CPU, .cpu = (unsigned)hw_cpu[c]};

                        for (unsigned m = 0; m < n_values; m++) {
                                int metric = groups[gid].metric[m];
                                double v;

                                if (metric == LIKWID_UNUSED ||
                                    !likwid_value(vals[m * n_cpus + c], &v))
                                        continue;
                                if (metric == 0) {
                                        energy_j += v;
                                        energy = true;
                                        continue;
                                }
                                if (metric == LIKWID_MEM_LINES || metric == LIKWID_MEM_GBYTES) {
                                        mem_bytes += v * (metric == LIKWID_MEM_LINES ? 64.0 : 1e9);
                                        mem = true;
                                        continue;
                                }
                                if (!count_value(v, metric == SENSOR_INSTR    ? &x.c.instr
                                                    : metric == SENSOR_CYCLES ? &x.c.cycles
                                                    : metric == SENSOR_STALLS ? &x.c.stalls
                                                                              : &x.c.ref_cycles))
                                        return -EBADMSG;
                                x.c.measured |= (unsigned)metric;
                        }
                        if (x.c.measured) {
                                e = rec_push(r, &x);
                                if (e < 0)
                                        return e;
                        }
                }
                /* A trace knows no topology: RAPL and memory-controller values (reported on
                 * each socket's first CPU) are summed into package 0. */
                if (energy || mem) {
                        struct rec x = {.kind = REC_PACKAGE,
                                        .id = 0,
                                        .energy = energy,
                                        .energy_j = energy_j,
                                        .mem = mem,
                                        .mem_bytes = mem_bytes};

                        e = rec_push(r, &x);
                        if (e < 0)
                                return e;
                }
                interval_end(r);
        }
        return 0;
}

static int reader_parse(struct sample_io_reader *r, char *text, unsigned *bad_line)
{
        struct likwid_group groups[LIKWID_MAX_GROUPS] = {0};
        int hw_cpu[CPUMASK_MAX];
        unsigned n_hw = 0, lineno = 0;
        bool pctl = false, likwid = false, columns = false;
        enum sample_io_extra extras[SAMPLE_IO_MAX_EXTRAS];
        unsigned n_extras = 0;
        uint64_t cur_ts = 0;
        char *line = text;
        int e;

        while (line && *line) {
                char *nl = strchr(line, '\n');
                bool truncated = !nl;

                if (nl)
                        *nl = '\0';
                lineno++;
                if (!pctl && !likwid) {
                        if (strncmp(line, "# pctl-sample v1", 16) == 0) {
                                if (pctl_header(r, line, &r->header_packages) < 0)
                                        goto bad;
                                pctl = true;
                        } else if (strncmp(line, "# HWThreads:", 12) == 0 ||
                                   strncmp(line, "# GID|", 6) == 0) {
                                likwid = true;
                        } else if (line[0] == '#') {
                                goto next;
                        } else if (strncmp(line, "time_s,", 7) == 0) {
                                refuse(r, "a column line without the '# pctl-sample v1' "
                                          "header line before it");
                                goto bad;
                        } else {
                                /* Application output before LIKWID's header. */
                                r->skipped++;
                                goto next;
                        }
                }
                if (pctl) {
                        if (line[0] == '#' || line[0] == '\0')
                                goto next;
                        if (!columns) {
                                if (pctl_columns(r, line, extras, &n_extras) < 0)
                                        goto bad;
                                columns = true;
                                goto next;
                        }
                        e = truncated ? -EBADMSG
                                      : pctl_csv_line(r, line, extras, n_extras, &cur_ts);
                        if (e == -ENOMEM)
                                return e;
                        if (e < 0) {
                                /* Only a cut-off last line is forgiven. */
                                if (truncated) {
                                        r->skipped++;
                                        goto next;
                                }
                                goto bad;
                        }
                        goto next;
                }
                /* LIKWID timeline. */
                if (strncmp(line, "# HWThreads:", 12) == 0) {
                        char *save = NULL;

                        n_hw = 0;
                        for (char *tok = strtok_r(line + 12, "|", &save); tok;
                             tok = strtok_r(NULL, "|", &save)) {
                                char *cpu_text = strstrip(tok);
                                unsigned cpu;

                                if (n_hw == CPUMASK_MAX) {
                                        refuse(r, "# HWThreads: more than %d CPUs", CPUMASK_MAX);
                                        goto bad;
                                }
                                if (parse_uint(cpu_text, &cpu) < 0 || cpu >= CPUMASK_MAX) {
                                        refuse(r,
                                               "# HWThreads: '%.40s' is not a CPU number "
                                               "below %d",
                                               cpu_text, CPUMASK_MAX);
                                        goto bad;
                                }
                                hw_cpu[n_hw++] = (int)cpu;
                        }
                        goto next;
                }
                if (strncmp(line, "# GID|", 6) == 0) {
                        /* The names follow "Total runtime [s]|". */
                        char *names = strstr(line, "Total runtime [s]|");

                        if (!names) {
                                refuse(r, "a group header without 'Total runtime [s]|' before "
                                          "its names");
                                goto bad;
                        }
                        /* Group ids are numbered as their headers appear. */
                        for (unsigned g = 0; g < LIKWID_MAX_GROUPS; g++) {
                                if (!groups[g].defined) {
                                        if (likwid_group_header(&groups[g], names + 18) < 0) {
                                                refuse(r, "a group of more than %d metrics",
                                                       LIKWID_MAX_METRICS);
                                                goto bad;
                                        }
                                        break;
                                }
                        }
                        goto next;
                }
                if (line[0] == '#')
                        goto next;
                if (truncated) {
                        r->skipped++;
                        goto next;
                }
                e = likwid_data_line(r, line, groups, hw_cpu, n_hw, &cur_ts);
                if (e == -ENOMEM)
                        return e;
                if (e < 0)
                        r->skipped++;
        next:
                line = nl ? nl + 1 : NULL;
                continue;
        bad:
                if (bad_line)
                        *bad_line = lineno;
                return -EBADMSG;
        }
        interval_end(r);
        if (!pctl && !likwid) {
                if (bad_line)
                        *bad_line = lineno;
                return -EBADMSG;
        }
        if (pctl && !columns) {
                if (bad_line)
                        *bad_line = lineno;
                return refuse(r, "a pctl sample header without its column line");
        }
        r->source = pctl ? SAMPLE_IO_SRC_PCTL : SAMPLE_IO_SRC_LIKWID;
        if (r->header_packages > r->n_packages)
                r->n_packages = r->header_packages;
        if (r->n_packages == 0)
                r->n_packages = 1;
        if (r->n_cpus == 0)
                for (unsigned i = 0; i < n_hw; i++)
                        if ((unsigned)hw_cpu[i] + 1 > r->n_cpus)
                                r->n_cpus = (unsigned)hw_cpu[i] + 1;
        if (r->n_cpus == 0)
                r->n_cpus = 1;
        return 0;
}

/* `perf stat -I MS -x,` interval CSV: "TIME,[CPUn,]VALUE,UNIT,EVENT,RUN_NS,PCT,..." per event
 * per interval (and per CPU with -A), after "# started on" comments. With a CPU column the
 * counts are per CPU; without one they are the counts of what perf measured (a process, a
 * command), kept as target 0 on CPU 0. power/energy-pkg/ is per package, in joules. */
enum {
        PERF_INSTR,
        PERF_CYCLES,
        PERF_REF,
        PERF_STALLS,
        PERF_BUSY,
        PERF_ENERGY,
        PERF_MEM,
        PERF_NONE
};

/* The memory controllers' events, however perf names them (the PMU's sysfs names, its JSON
 * aliases, one PMU or merged): bytes per CAS or in the unit perf gives. */
static bool perf_mem_event(const char *low)
{
        static const char *const names[] = {
            "cas_count_read",  "cas_count_write",  "cas_count.rd",   "cas_count.wr",
            "imc/data_reads/", "imc/data_writes/", "umc_cas_cmd.rd", "umc_cas_cmd.wr",
        };

        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (strstr(low, names[i]))
                        return true;
        return false;
}

/* perf's unit for a memory event: MiB or MB when the PMU gave a scale, none for a bare CAS
 * count (one 64-byte line). 0 for a unit that is not bytes. */
static double perf_mem_unit_bytes(const char *unit)
{
        if (!*unit)
                return 64.0;
        if (strcmp(unit, "MiB") == 0)
                return 1048576.0;
        if (strcmp(unit, "MB") == 0)
                return 1e6;
        return 0;
}

static int perf_event_kind(const char *name)
{
        static const struct {
                const char *name;
                int kind;
        } events[] = {
            {"instructions", PERF_INSTR},
            {"inst_retired.any", PERF_INSTR},
            {"cycles", PERF_CYCLES},
            {"cpu-cycles", PERF_CYCLES},
            {"cpu_clk_unhalted.thread", PERF_CYCLES},
            {"ref-cycles", PERF_REF},
            {"cpu_clk_unhalted.ref_tsc", PERF_REF},
            {"cycle_activity.stalls_total", PERF_STALLS},
            {"resource_stalls.any", PERF_STALLS},
            {"stalled-cycles-backend", PERF_STALLS},
            {"task-clock", PERF_BUSY},
            {"cpu-clock", PERF_BUSY},
            {"power/energy-pkg/", PERF_ENERGY},
        };
        char low[64];
        size_t n = strlen(name);

        /* perf appends modifiers (":u", ":k", ":ukHG") and upper-cases some names. */
        if (n >= sizeof(low))
                return PERF_NONE;
        for (size_t i = 0; i <= n; i++)
                low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
        {
                char *colon = strrchr(low, ':');

                if (colon && colon[1] && strspn(colon + 1, "ukhgpsdw") == strlen(colon + 1))
                        *colon = '\0';
        }
        for (size_t i = 0; i < ARRAY_SIZE(events); i++)
                if (strcmp(low, events[i].name) == 0)
                        return events[i].kind;
        return perf_mem_event(low) ? PERF_MEM : PERF_NONE;
}

struct perf_state {
        uint64_t ts_ns, prev_ns;
        bool open, per_cpu, layout_known;
        struct sensor_counts c[CPUMASK_MAX];
        double energy_j[SENSOR_MAX_PACKAGES];
        bool energy[SENSOR_MAX_PACKAGES];
        double mem_bytes[SENSOR_MAX_PACKAGES];
        bool mem[SENSOR_MAX_PACKAGES];
        /* The CPU perf reports each package's energy and memory traffic on. */
        int pkg_cpu[SENSOR_MAX_PACKAGES];
        unsigned n_pkg;
};

static int perf_flush(struct sample_io_reader *r, struct perf_state *st)
{
        int e;

        if (!st->open)
                return 0;
        e = interval_begin(r, st->ts_ns, st->ts_ns - st->prev_ns);
        if (e < 0)
                return e;
        for (unsigned c = 0; c < CPUMASK_MAX; c++) {
                struct rec x = {
                    .kind = st->per_cpu ? REC_CPU : REC_TARGET, .cpu = c, .c = st->c[c]};

                if (!st->c[c].measured)
                        continue;
                e = rec_push(r, &x);
                if (e < 0)
                        return e;
        }
        for (unsigned p = 0; p < st->n_pkg; p++) {
                struct rec x = {.kind = REC_PACKAGE,
                                .id = p,
                                .energy = st->energy[p],
                                .energy_j = st->energy_j[p],
                                .mem = st->mem[p],
                                .mem_bytes = st->mem_bytes[p]};

                if (!st->energy[p] && !st->mem[p])
                        continue;
                e = rec_push(r, &x);
                if (e < 0)
                        return e;
        }
        interval_end(r);
        st->prev_ns = st->ts_ns;
        st->open = false;
        memset(st->c, 0, sizeof(st->c));
        memset(st->energy, 0, sizeof(st->energy));
        memset(st->energy_j, 0, sizeof(st->energy_j));
        memset(st->mem, 0, sizeof(st->mem));
        memset(st->mem_bytes, 0, sizeof(st->mem_bytes));
        return 0;
}

/* One line; -EBADMSG when it is not a perf stat CSV line at all. */
static int perf_line(struct sample_io_reader *r, struct perf_state *st, char *line)
{
        char *f[10];
        unsigned n = 0, cpu = 0, k;
        uint64_t ts;
        int kind, e;
        double v;

        for (char *p = line;; p++) {
                if (n == ARRAY_SIZE(f))
                        break;
                f[n++] = p;
                p = strchr(p, ',');
                if (!p)
                        break;
                *p = '\0';
        }
        /* perf's CSV names no column: a refusal names them by place and what perf puts there. */
        if (n < 4)
                return refuse(r, "%u field%s, not perf stat -x,'s time, value, unit and event", n,
                              plural_s(n));
        if (seconds_to_ns(strstrip(f[0]), &ts) < 0)
                return refuse_value(r, "1 (time)", f[0], "is not a number of seconds from 0");
        k = strncmp(f[1], "CPU", 3) == 0 ? 1 : 0;
        if (n < 4 + k)
                return refuse(r, "%u fields, not perf stat -x,'s time, CPU, value, unit and event",
                              n);
        if (!st->layout_known) {
                st->per_cpu = k == 1;
                st->layout_known = true;
        } else if (st->per_cpu != (k == 1)) {
                return refuse(r, "column 2: %s",
                              k ? "a CPU, where the lines before have none"
                                : "no CPU, where the lines before have one");
        }
        if (k && (parse_uint(f[1] + 3, &cpu) < 0 || cpu >= CPUMASK_MAX))
                return refuse(r, "column 2 (CPU): '%.40s' is not CPU0 to CPU%d", f[1],
                              CPUMASK_MAX - 1);
        if (st->open && ts != st->ts_ns) {
                if (ts < st->ts_ns)
                        return refuse_value(r, "1 (time)", f[0],
                                            "is before the time of the line above");
                e = perf_flush(r, st);
                if (e < 0)
                        return e;
        }
        st->ts_ns = ts;
        st->open = true;
        kind = perf_event_kind(f[3 + k]);
        /* "<not counted>", "<not supported>" (or nothing): not measured. Any other value of an
         * event pctl reads is a count: text, a negative or NaN is a corrupt row, refused as
         * our CSV refuses one rather than read as not measured. */
        if (kind == PERF_NONE || f[1 + k][0] == '<' || f[1 + k][0] == '\0')
                return 0;
        if (parse_double(f[1 + k], &v) < 0 || !(v >= 0))
                return refuse(r, "column %u (value of %.40s): '%.40s' is not a number from 0",
                              2 + k, f[3 + k], f[1 + k]);
        if (kind == PERF_ENERGY || kind == PERF_MEM) {
                double bytes = kind == PERF_MEM ? perf_mem_unit_bytes(strstrip(f[2 + k])) : 0;
                unsigned p = 0;

                /* A memory event in a unit that is not bytes is not read. */
                if (kind == PERF_MEM && bytes == 0)
                        return 0;

                while (p < st->n_pkg && st->pkg_cpu[p] != (int)cpu)
                        p++;
                if (p == st->n_pkg) {
                        if (p == SENSOR_MAX_PACKAGES)
                                return refuse(r, "%.40s on more CPUs than %d packages have",
                                              f[3 + k], SENSOR_MAX_PACKAGES);
                        st->pkg_cpu[st->n_pkg++] = (int)cpu;
                }
                if (kind == PERF_MEM) {
                        st->mem_bytes[p] += v * bytes;
                        st->mem[p] = true;
                } else {
                        st->energy_j[p] += v;
                        st->energy[p] = true;
                }
                return 0;
        }
        {
                struct sensor_counts *c = &st->c[cpu];
                uint64_t *const slot[] = {
                    [PERF_INSTR] = &c->instr,    [PERF_CYCLES] = &c->cycles,
                    [PERF_REF] = &c->ref_cycles, [PERF_STALLS] = &c->stalls,
                    [PERF_BUSY] = &c->busy_ns,
                };
                static const unsigned metric[] = {
                    [PERF_INSTR] = SENSOR_INSTR,    [PERF_CYCLES] = SENSOR_CYCLES,
                    [PERF_REF] = SENSOR_REF_CYCLES, [PERF_STALLS] = SENSOR_STALLS,
                    [PERF_BUSY] = SENSOR_BUSY,
                };

                /* task-clock is in msec. A busy time past 2^64 ns or a count past its 64-bit
                 * counter is a corrupt row, not a large reading. */
                if (!count_value(kind == PERF_BUSY ? v * 1e6 : v, slot[kind]))
                        return refuse(r,
                                      "column %u (value of %.40s): '%.40s' is past what a "
                                      "64-bit counter holds",
                                      2 + k, f[3 + k], f[1 + k]);
                c->measured |= metric[kind];
        }
        return 0;
}

/* Whether text is perf stat CSV: its first line that is neither blank nor a comment has a
 * time, an optional CPUn, a value (or "<not counted>"), a unit and an event. */
static bool perf_text(const char *text)
{
        const char *p = text;

        while (*p) {
                const char *eol = strchr(p, '\n');
                size_t len = eol ? (size_t)(eol - p) : strlen(p);

                while (len && (*p == ' ' || *p == '\t')) {
                        p++;
                        len--;
                }
                if (len && *p != '#') {
                        char buf[256], *f[8];
                        unsigned n = 0, k;
                        uint64_t ts;
                        double v;

                        if (len >= sizeof(buf) || strncmp(p, "time_s,", 7) == 0)
                                return false;
                        memcpy(buf, p, len);
                        buf[len] = '\0';
                        /* Empty fields count (the unit often is one). */
                        for (char *q = buf; q && n < ARRAY_SIZE(f);) {
                                f[n++] = q;
                                q = strchr(q, ',');
                                if (q)
                                        *q++ = '\0';
                        }
                        if (n < 5 || seconds_to_ns(f[0], &ts) < 0)
                                return false;
                        k = strncmp(f[1], "CPU", 3) == 0;
                        return n >= 5 + k && f[3 + k][0] != '\0' &&
                               (f[1 + k][0] == '<' || parse_double(f[1 + k], &v) == 0);
                }
                if (!eol)
                        break;
                p = eol + 1;
        }
        return false;
}

static int perf_parse(struct sample_io_reader *r, char *text, unsigned *bad_line)
{
        struct perf_state *st = calloc(1, sizeof(*st));
        unsigned lineno = 0;
        int e = 0;

        if (!st)
                return -ENOMEM;
        r->source = SAMPLE_IO_SRC_PERF;
        for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');

                if (nl)
                        *nl = '\0';
                lineno++;
                /* A last line without its newline may be cut off (perf still writing):
                 * skipped, as in our own CSV. */
                if (!nl && line[0] != '#' && strstrip(line)[0] != '\0') {
                        r->skipped++;
                        break;
                }
                if (line[0] != '#' && strstrip(line)[0] != '\0') {
                        e = perf_line(r, st, line);
                        if (e == -ENOMEM)
                                break;
                        if (e < 0) {
                                if (bad_line)
                                        *bad_line = lineno;
                                e = -EBADMSG;
                                break;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        if (e == 0)
                e = perf_flush(r, st);
        /* Not one event pctl reads: nothing to replay. */
        if (e == 0 && (r->n_iv == 0 || r->n_recs == 0)) {
                if (bad_line)
                        *bad_line = lineno;
                e = refuse(r, "a perf stat -x, CSV without one event pctl reads (instructions, "
                              "cycles, ref-cycles, stalls, task-clock, energy-pkg, memory "
                              "controllers' counts)");
        }
        /* Energy alone still has a CPU perf counted it on. */
        if (e == 0 && r->n_cpus == 0)
                r->n_cpus = 1;
        free(st);
        return e;
}

int sample_io_open_text(const char *text, struct sample_io_reader **out,
                        struct sample_io_error *err)
{
        struct sample_io_reader *r = calloc(1, sizeof(*r));
        char *copy = strdup(text);
        unsigned line = 0;
        int e;

        if (!r || !copy) {
                free(r);
                free(copy);
                return -ENOMEM;
        }
        e = perf_text(copy) ? perf_parse(r, copy, &line) : reader_parse(r, copy, &line);
        free(copy);
        if (e < 0) {
                if (e == -EBADMSG && err) {
                        err->line = line;
                        snprintf(err->what, sizeof(err->what), "%s",
                                 r->why[0] ? r->why
                                           : "not a pctl sample CSV, likwid-perfctr -t timeline "
                                             "or perf stat -x, CSV");
                }
                sample_io_close(r);
                return e;
        }
        *out = r;
        return 0;
}

int sample_io_open(const char *path, struct sample_io_reader **out, struct sample_io_error *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0, cap = 0;
        FILE *f = fopen(path, "re");
        int e = 0;

        if (!f)
                return -errno;
        for (;;) {
                size_t n;

                if (cap - len < 65536) {
                        char *t = realloc(text, cap + 65536 * 4);

                        if (!t) {
                                e = -ENOMEM;
                                break;
                        }
                        text = t;
                        cap += 65536 * 4;
                }
                n = fread(text + len, 1, cap - len - 1, f);
                len += n;
                if (n == 0) {
                        if (ferror(f))
                                e = -EIO;
                        break;
                }
        }
        fclose(f);
        if (e < 0)
                return e;
        if (!text)
                return -EBADMSG;
        text[len] = '\0';
        return sample_io_open_text(text, out, err);
}

void sample_io_close(struct sample_io_reader *r)
{
        if (!r)
                return;
        free(r->recs);
        free(r->iv);
        free(r);
}

enum sample_io_source sample_io_source(const struct sample_io_reader *r)
{
        return r->source;
}
unsigned sample_io_n_cpus(const struct sample_io_reader *r)
{
        return r->n_cpus;
}
unsigned sample_io_n_packages(const struct sample_io_reader *r)
{
        return r->n_packages;
}
unsigned sample_io_n_targets(const struct sample_io_reader *r)
{
        return r->n_targets;
}
unsigned sample_io_metrics(const struct sample_io_reader *r)
{
        return r->metrics;
}
bool sample_io_has_energy(const struct sample_io_reader *r)
{
        return r->has_energy;
}
bool sample_io_has_mem_traffic(const struct sample_io_reader *r)
{
        return r->has_mem;
}
unsigned sample_io_n_intervals(const struct sample_io_reader *r)
{
        return (unsigned)r->n_iv;
}
unsigned sample_io_n_skipped(const struct sample_io_reader *r)
{
        return r->skipped;
}
void sample_io_rewind(struct sample_io_reader *r)
{
        r->next = 0;
}

int sample_io_read(struct sample_io_reader *r, struct sensor_sample *s)
{
        const struct interval *iv;

        if (r->next >= r->n_iv)
                return -ENODATA;
        if (s->n_cpus < r->n_cpus || !s->cpu)
                return -EINVAL;
        iv = &r->iv[r->next++];
        memset(s->cpu, 0, s->n_cpus * sizeof(*s->cpu));
        if (s->target_cpu)
                memset(s->target_cpu, 0, (size_t)s->n_targets * s->n_cpus * sizeof(*s->target_cpu));
        s->timestamp_ns = iv->timestamp_ns;
        s->interval_ns = iv->interval_ns;
        s->n_packages = r->n_packages;
        s->energy_measured = false;
        memset(s->energy_j, 0, sizeof(s->energy_j));
        s->mem_measured = false;
        memset(s->mem_bytes, 0, sizeof(s->mem_bytes));
        for (size_t i = iv->first; i < iv->first + iv->n; i++) {
                const struct rec *x = &r->recs[i];

                switch (x->kind) {
                case REC_CPU:
                        s->cpu[x->cpu] = x->c;
                        break;
                case REC_TARGET:
                        if (x->id < s->n_targets)
                                *sensor_target_cpu(s, x->id, x->cpu) = x->c;
                        break;
                case REC_PACKAGE:
                        if (x->energy) {
                                s->energy_j[x->id] = x->energy_j;
                                s->energy_measured = true;
                        }
                        if (x->mem) {
                                s->mem_bytes[x->id] = x->mem_bytes;
                                s->mem_measured = true;
                        }
                        break;
                }
        }
        return 0;
}
