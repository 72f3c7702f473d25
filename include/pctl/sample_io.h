/* The `pctl sample` trace format: a writer (pctl sample, pctl sim run --trace) and a reader
 * (the replay backend), which also reads `likwid-perfctr -t` timeline text.
 *
 * CSV form (the one the replay backend reads; documented in pctl-sample(1)):
 *
 *   # pctl-sample v1 backend=perf cpus=0-1 packages=1 targets=1
 *   time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,energy_j,freq_khz,stalls,mem_bytes
 *   0.100000000,0.100000000,cpu,,0,1000,3000,2000,98765432,,3000000,,
 *   0.100000000,0.100000000,cpu,,1,,,,12345678,,,,
 *   0.100000000,0.100000000,target,0,1,,,,5000000,,,,
 *   0.100000000,0.100000000,package,0,,,,,,1.234567,,,123456789.000
 *
 * - Columns after energy_j were added later and are named in the column line; a trace
 *   without them still reads. freq_khz: the frequency the CPU ran at while unhalted
 *   (cycles / ref-cycles × the TSC rate; perf and LIKWID).
 * - time_s: end of the interval (the sample's timestamp_ns / 1e9); interval_s: its length.
 * - kind: `cpu` (one row per sampled CPU), `target` (per target and CPU; id = target index,
 *   only CPUs where the target measured something), `package` (id = package, below the
 *   header's packages=; energy_j and/or mem_bytes, each empty where not measured).
 * - mem_bytes: bytes read and written at the package's memory controllers over the interval
 *   (uncore IMC CAS counts × 64, or the model machine's). Traces without the column read with
 *   no memory traffic measured; a negative, NaN or non-numeric value is a bad line.
 * - stalls: stalled cycles (SENSOR_STALLS; ESTIMA's input). Traces written before it have no
 *   stalls column and still read.
 * - A metric that was not measured is an empty field: nothing is made up.
 * - Rows of one interval are consecutive and share time_s; an interval ends where time_s
 *   changes or the file ends. Lines starting with '#' are comments.
 *
 * TEXT is a human table per interval; JSON is one object per interval per line (JSON lines):
 *   {"time_s":..,"interval_s":..,"cpus":[{"cpu":0,"busy_ns":..,"instr":null,..,"freq_khz":..,"stalls":..}],
 *    "packages":[{"package":0,"energy_j":..,"mem_bytes":..,"mem_gbps":..}],
 *    "targets":[{"target":0,"cpus":[..]}]}
 *   Every package is listed; what was not measured is null. TEXT shows mem_GB/s per package,
 *   "unknown" where not measured.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "pctl/cpumask.h"
#include "pctl/sensor.h"

enum sample_io_format { SAMPLE_IO_TEXT, SAMPLE_IO_CSV, SAMPLE_IO_JSON };

/* Writes the CSV header: the `# pctl-sample v1 ...` line and the column line. cpus = the CPUs
 * sampled (NULL or empty = every CPU of shape). This is the trace form (pctl sim run --trace).
 * Returns 0 or -errno (write error). */
int sample_io_write_header(FILE *f, const char *backend, const struct sensor_sample *shape,
                           const struct cpumask *cpus);
/* The same for any format: TEXT writes a comment line and column titles, JSON nothing. */
int sample_io_write_header_fmt(FILE *f, const char *backend, const struct sensor_sample *shape,
                               const struct cpumask *cpus, enum sample_io_format fmt);

/* Writes one interval: a row per CPU (and per target and CPU) whose measured flags are not 0,
 * a row per package when energy was measured. Returns 0 or -errno. */
int sample_io_write(FILE *f, const struct sensor_sample *s, enum sample_io_format fmt);

/* Which text a reader found. */
enum sample_io_source { SAMPLE_IO_SRC_PCTL, SAMPLE_IO_SRC_LIKWID, SAMPLE_IO_SRC_PERF };

struct sample_io_reader;

/* Where and why a trace was refused: the line (from 1) and what on it, such as "column
 * mem_bytes: 'abc' is not a number" or, for a file of no known kind, "not a pctl sample CSV,
 * likwid-perfctr -t timeline or perf stat -x, CSV". A caller says "FILE:LINE: WHAT". */
struct sample_io_error {
        unsigned line;
        char what[192];
};

/* Opens a trace: our CSV, likwid-perfctr -t timeline text, or `perf stat -I MS -x,` interval
 * CSV (per CPU with -A; without a CPU column, one target on CPU 0), told apart by their
 * first lines.
 * Reads the whole file up front so that shape questions have answers before the first read.
 * -ENOENT/-EACCES for the file; -EBADMSG with *err (when not NULL) filled when neither header
 * is found, the column line does not match or a row holds a value its column cannot take. */
int sample_io_open(const char *path, struct sample_io_reader **out, struct sample_io_error *err);
/* The same from text in memory (tests). */
int sample_io_open_text(const char *text, struct sample_io_reader **out,
                        struct sample_io_error *err);
void sample_io_close(struct sample_io_reader *r);

enum sample_io_source sample_io_source(const struct sample_io_reader *r);
/* Highest CPU number seen + 1. */
unsigned sample_io_n_cpus(const struct sample_io_reader *r);
unsigned sample_io_n_packages(const struct sample_io_reader *r);
unsigned sample_io_n_targets(const struct sample_io_reader *r);
/* Metrics present anywhere in the trace (enum sensor_metric bits). */
unsigned sample_io_metrics(const struct sample_io_reader *r);
bool sample_io_has_energy(const struct sample_io_reader *r);
/* Whether any package row carries memory traffic (mem_bytes); false for traces without the
 * column. */
bool sample_io_has_mem_traffic(const struct sample_io_reader *r);
/* Intervals in the trace (complete ones: a truncated last line is dropped). */
unsigned sample_io_n_intervals(const struct sample_io_reader *r);
/* Lines skipped as noise (application output, '-'/'inf' values, a truncated line). */
unsigned sample_io_n_skipped(const struct sample_io_reader *r);

/* Fills the next interval into s, which must be allocated with at least sample_io_n_cpus CPUs
 * and sample_io_n_targets targets. -ENODATA at the end. */
int sample_io_read(struct sample_io_reader *r, struct sensor_sample *s);
/* Back to the first interval. */
void sample_io_rewind(struct sample_io_reader *r);
