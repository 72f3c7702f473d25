/* The trace reader: likwid-perfctr -t timeline text (noise, '-'/'inf' values, a cut-off last
 * line) and our own CSV, written by sample_io and read back. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/sample_io.h"
#include "pctl/sensor.h"

/* LIKWID's layout: header lines, then "<gid> <nValues> <nCPUs> <t> v(1,cpu1)..v(1,cpuN)
 * v(2,cpu1)..", values per interval. Application output is interleaved on the same stream. */
static const char likwid_text[] =
    "--------------------------------------------------------------------------------\n"
    "CPU name:\tIntel(R) Core(TM) i7-11700 @ 2.50GHz\n"
    "# HWThreads: 0|1|2|3\n"
    "# GID|MetricsCount|CpuCount|Total runtime [s]|INSTR_RETIRED_ANY|CPU_CLK_UNHALTED_CORE|"
    "CPU_CLK_UNHALTED_REF|PWR_PKG_ENERGY\n"
    "app: starting 4 threads\n"
    "0 4 4 0.100 1000 2000 3000 4000 1100 2100 3100 4100 1200 2200 3200 4200 1.5 0 0 0\n"
    "app: iteration 1 done\n"
    "0 4 4 0.200 1001 - 3001 4001 1101 2101 inf 4101 1201 2201 3201 4201 1.25 - - -\n"
    "0 4 4 0.300 5 6 7 8 9 10 11 12 13 14 15 16 2.0 0 0 0\n"
    "0 4 4 0.400 1 2 3\n"
    "0 4 4 0.500 1002 2002 3002 4002 1102 2102 3102 4102 1202 2202 32";

static void likwid_timeline_with_noise(void **state)
{
        struct sample_io_reader *r;
        struct sensor_sample s;
        struct sample_io_error err = {0};

        assert_int_equal(sample_io_open_text(likwid_text, &r, &err), 0);
        assert_int_equal(sample_io_source(r), SAMPLE_IO_SRC_LIKWID);
        assert_int_equal(sample_io_n_cpus(r), 4);
        assert_int_equal(sample_io_n_intervals(r), 3);
        /* Two banner lines, two app lines, the short line and the cut-off last line. */
        assert_int_equal(sample_io_n_skipped(r), 6);
        assert_true(sample_io_has_energy(r));
        assert_int_equal(sample_io_metrics(r), SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES);
        assert_int_equal(sensor_sample_alloc(&s, sample_io_n_cpus(r), 0), 0);

        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.timestamp_ns == 100000000ull && s.interval_ns == 100000000ull);
        /* Metric-major: instr of CPUs 0..3, then cycles of CPUs 0..3, ... */
        assert_true(s.cpu[0].instr == 1000 && s.cpu[3].instr == 4000);
        assert_true(s.cpu[0].cycles == 1100 && s.cpu[2].cycles == 3100);
        assert_true(s.cpu[1].ref_cycles == 2200);
        assert_int_equal(s.cpu[0].measured, SENSOR_INSTR | SENSOR_CYCLES | SENSOR_REF_CYCLES);
        assert_true(s.energy_measured);
        assert_near(s.energy_j[0], 1.5, 1e-12);

        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.interval_ns == 100000000ull);
        /* '-' and inf are not measured, never zero. */
        assert_int_equal(s.cpu[1].measured & SENSOR_INSTR, 0);
        assert_int_equal(s.cpu[2].measured & SENSOR_CYCLES, 0);
        assert_int_equal(s.cpu[1].measured & SENSOR_CYCLES, SENSOR_CYCLES);
        assert_true(s.cpu[0].instr == 1001);
        assert_near(s.energy_j[0], 1.25, 1e-12);

        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.cpu[3].ref_cycles == 16);
        assert_int_equal(sample_io_read(r, &s), -ENODATA);
        sample_io_rewind(r);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.cpu[0].instr == 1000);
        sensor_sample_free(&s);
        sample_io_close(r);
}

static void rejects_unknown_text(void **state)
{
        struct sample_io_reader *r = NULL;
        struct sample_io_error err = {0};

        assert_int_equal(sample_io_open_text("hello\nworld\n", &r, &err), -EBADMSG);
        assert_string_equal(err.what, "not a pctl sample CSV, likwid-perfctr -t timeline or perf "
                                      "stat -x, CSV");
        assert_int_equal(sample_io_open_text("# pctl-sample v1 backend=x\ntime_s,oops\n", &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 2);
        assert_string_equal(err.what, "the column line does not begin with time_s,interval_s,"
                                      "kind,id,cpu,instr,cycles,ref_cycles,busy_ns,energy_j");
        assert_int_equal(sample_io_open_text("time_s,interval_s\n", &r, &err), -EBADMSG);
        assert_int_equal(err.line, 1);
        assert_string_equal(err.what, "a column line without the '# pctl-sample v1' header line "
                                      "before it");
        assert_int_equal(sample_io_open_text("# pctl-sample v1 backend=x\n"
                                             "time_s,interval_s,kind,id,cpu,instr,cycles,"
                                             "ref_cycles,busy_ns,energy_j\n"
                                             "0.1,0.1,cpu,,0,,,,abc,\n"
                                             "0.1,0.1,cpu,,1,,,,5,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 3);
        assert_string_equal(err.what, "column busy_ns: 'abc' is not a count (a whole number "
                                      "from 0)");
        assert_null(r);
}

/* Times past 2^63 ns (292 years) but within what the reader accepts come out as written,
 * not as llround's out-of-range value; a LIKWID time past 2^64 ns is noise, not a sample. */
static void late_times_read_exactly(void **state)
{
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;

        assert_int_equal(sample_io_open_text("# pctl-sample v1 backend=x\n"
                                             "time_s,interval_s,kind,id,cpu,instr,cycles,"
                                             "ref_cycles,busy_ns,energy_j\n"
                                             "17000000000,10000000000,cpu,,0,,,,5,\n",
                                             &r, NULL),
                         0);
        assert_int_equal(sensor_sample_alloc(&s, 1, 0), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.timestamp_ns == 17000000000000000000ull);
        assert_true(s.interval_ns == 10000000000000000000ull);
        sample_io_close(r);
        assert_int_equal(sample_io_open_text("# HWThreads: 0\n"
                                             "# GID|MetricsCount|CpuCount|Total runtime [s]|"
                                             "INSTR_RETIRED_ANY\n"
                                             "0 1 1 10000000000 7\n"
                                             "0 1 1 1e300 8\n",
                                             &r, NULL),
                         0);
        assert_int_equal(sample_io_n_intervals(r), 1);
        assert_int_equal(sample_io_n_skipped(r), 1);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.timestamp_ns == 10000000000000000000ull);
        assert_true(s.cpu[0].instr == 7);
        sensor_sample_free(&s);
        sample_io_close(r);
}

static void own_csv_round_trip(void **state)
{
        struct sensor_sample s, back;
        struct sample_io_reader *r;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        assert_non_null(f);
        assert_int_equal(sensor_sample_alloc(&s, 3, 1), 0);
        s.n_packages = 2;
        assert_int_equal(sample_io_write_header(f, "software", &s, NULL), 0);
        for (unsigned k = 1; k <= 3; k++) {
                s.timestamp_ns = k * 250000000ull;
                s.interval_ns = 250000000ull;
                s.cpu[0] = (struct sensor_counts){.busy_ns = 1000 * k, .measured = SENSOR_BUSY};
                s.cpu[2] = (struct sensor_counts){.instr = 7 * k,
                                                  .cycles = 9 * k,
                                                  .ref_cycles = 6 * k,
                                                  .busy_ns = 5,
                                                  .freq_khz = 3000000 + k,
                                                  .measured = SENSOR_INSTR | SENSOR_CYCLES |
                                                              SENSOR_REF_CYCLES | SENSOR_BUSY |
                                                              SENSOR_FREQ};
                *sensor_target_cpu(&s, 0, 2) =
                    (struct sensor_counts){.busy_ns = 3 * k, .measured = SENSOR_BUSY};
                s.energy_measured = k != 2;
                s.energy_j[0] = 1.5 * k;
                s.energy_j[1] = 0.25;
                assert_int_equal(sample_io_write(f, &s, SAMPLE_IO_CSV), 0);
        }
        fputs("0.999000000,0.25,cpu,,0,,,,12,", f); /* cut off */
        fclose(f);

        assert_int_equal(sample_io_open_text(buf, &r, NULL), 0);
        assert_int_equal(sample_io_source(r), SAMPLE_IO_SRC_PCTL);
        assert_int_equal(sample_io_n_cpus(r), 3);
        assert_int_equal(sample_io_n_targets(r), 1);
        assert_int_equal(sample_io_n_packages(r), 2);
        assert_int_equal(sample_io_n_intervals(r), 3);
        assert_int_equal(sample_io_n_skipped(r), 1);
        assert_int_equal(sensor_sample_alloc(&back, 3, 1), 0);
        for (unsigned k = 1; k <= 3; k++) {
                assert_int_equal(sample_io_read(r, &back), 0);
                assert_true(back.timestamp_ns == k * 250000000ull);
                assert_true(back.interval_ns == 250000000ull);
                assert_true(back.cpu[0].busy_ns == 1000 * k);
                assert_int_equal(back.cpu[0].measured, SENSOR_BUSY);
                assert_int_equal(back.cpu[1].measured, 0);
                assert_true(back.cpu[2].instr == 7 * k && back.cpu[2].cycles == 9 * k);
                /* The frequency the CPU ran at (freq_khz) comes back with its bit. */
                assert_int_equal(back.cpu[2].freq_khz, 3000000 + k);
                assert_int_equal(back.cpu[2].measured, SENSOR_INSTR | SENSOR_CYCLES |
                                                           SENSOR_REF_CYCLES | SENSOR_BUSY |
                                                           SENSOR_FREQ);
                assert_true(sensor_target_cpu(&back, 0, 2)->busy_ns == 3 * k);
                assert_int_equal(back.energy_measured, k != 2);
                if (k != 2)
                        assert_near(back.energy_j[0], 1.5 * k, 1e-6);
        }
        assert_int_equal(sample_io_read(r, &back), -ENODATA);
        sample_io_close(r);
        sensor_sample_free(&s);
        sensor_sample_free(&back);
        free(buf);
}

static void replay_backend_plays_a_file(void **state)
{
        char path[] = "/tmp/pctl-test-replay-XXXXXX";
        struct sensor_config cfg = {0};
        struct sensor_probe p;
        struct sensor_sample s = {0};
        struct sensor *sn;
        int fd = mkstemp(path);
        const struct sensor_ops *ops = sensor_find("replay");

        assert_true(fd >= 0);
        assert_int_equal(write(fd, likwid_text, strlen(likwid_text)), (ssize_t)strlen(likwid_text));
        close(fd);
        assert_int_equal(ops->probe(&cfg, &p), 0);
        assert_false(p.available);
        cfg.source = path;
        assert_int_equal(ops->probe(&cfg, &p), 0);
        assert_true(p.available);
        assert_int_equal(sensor_open(ops, &cfg, &sn), 0);
        assert_int_equal(sn->n_cpus, 4);
        for (int k = 0; k < 3; k++)
                assert_int_equal(sensor_read(sn, &s), 0);
        assert_int_equal(sensor_read(sn, &s), -ENODATA);
        sensor_close(sn);
        sensor_sample_free(&s);
        unlink(path);
        cfg.source = "/nonexistent/trace.csv";
        assert_int_equal(ops->probe(&cfg, &p), 0);
        assert_false(p.available);
        assert_int_equal(p.err, -ENOENT);
}

/* One case per line: cmake/PctlTests.cmake reads them line by line. */
/* clang-format off */
/* Traces without the freq_khz column still read; with it, a frequency is a positive number
 * or empty; an unknown or repeated extra column is refused, and so is a row of the wrong
 * width, each with its line. */
static void freq_khz_column(void **state)
{
        static const char v1[] = "# pctl-sample v1 backend=x\n"
                                 "time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,"
                                 "energy_j\n";
        static const char fq[] = "# pctl-sample v1 backend=x\n"
                                 "time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,"
                                 "energy_j,freq_khz\n";
        static const struct { const char *row, *what; } bad_rows[] = {
            {"0.1,0.1,cpu,,0,,,,5,,0\n", "column freq_khz: '0' is not a frequency in kHz (a whole number above 0)"},
            {"0.1,0.1,cpu,,0,,,,5,,abc\n", "column freq_khz: 'abc' is not a frequency in kHz (a whole number above 0)"},
            {"0.1,0.1,cpu,,0,,,,5,\n", "10 fields, not the 11 the column line names"},
        };
        static const struct { const char *columns, *what; } bad_columns[] = {
            {"energy_j,nosuch\n", "column 'nosuch' is not one a pctl sample CSV has after energy_j (freq_khz,stalls,mem_bytes)"},
            {"energy_j,freq_khz,freq_khz\n", "column freq_khz twice"},
            {"energy_j,\n", "column '' is not one a pctl sample CSV has after energy_j (freq_khz,stalls,mem_bytes)"},
        };
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;
        char text[512];
        struct sample_io_error err = {0};

        assert_int_equal(sensor_sample_alloc(&s, 1, 0), 0);
        snprintf(text, sizeof(text), "%s0.1,0.1,cpu,,0,,,,5,\n", v1);
        assert_int_equal(sample_io_open_text(text, &r, NULL), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_int_equal(s.cpu[0].measured, SENSOR_BUSY);
        sample_io_close(r);
        snprintf(text, sizeof(text),
                 "%s0.1,0.1,cpu,,0,,,,5,,2400000\n0.1,0.1,package,0,,,,,,2.5,\n", fq);
        assert_int_equal(sample_io_open_text(text, &r, NULL), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_int_equal(s.cpu[0].measured, SENSOR_BUSY | SENSOR_FREQ);
        assert_int_equal(s.cpu[0].freq_khz, 2400000);
        assert_near(s.energy_j[0], 2.5, 1e-12);
        sample_io_close(r);
        for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
                r = NULL;
                snprintf(text, sizeof(text), "%s0.1,0.1,cpu,,0,,,,5,,\n%s", fq, bad_rows[i].row);
                assert_int_equal(sample_io_open_text(text, &r, &err), -EBADMSG);
                assert_int_equal(err.line, 4);
                assert_string_equal(err.what, bad_rows[i].what);
                assert_null(r);
        }
        for (size_t i = 0; i < sizeof(bad_columns) / sizeof(bad_columns[0]); i++) {
                snprintf(text, sizeof(text),
                         "# pctl-sample v1 backend=x\n"
                         "time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,%s",
                         bad_columns[i].columns);
                assert_int_equal(sample_io_open_text(text, &r, &err), -EBADMSG);
                assert_int_equal(err.line, 2);
                assert_string_equal(err.what, bad_columns[i].what);
        }
        sensor_sample_free(&s);
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(likwid_timeline_with_noise),
        cmocka_unit_test(rejects_unknown_text),
        cmocka_unit_test(late_times_read_exactly),
        cmocka_unit_test(own_csv_round_trip),
        cmocka_unit_test(freq_khz_column),
        cmocka_unit_test(replay_backend_plays_a_file),
};
/* clang-format on */

PCTL_TEST_MAIN(tests)
