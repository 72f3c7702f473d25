/* Memory traffic per package in traces: our CSV writes it as the mem_bytes column of package
 * rows and reads it back (the replay backend then measures it), traces written before the
 * column still read with nothing measured, and bad values are refused with their line. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/sample_io.h"
#include "pctl/sensor.h"
#include "pctl/util.h"

/* Two packages; pkg 1's traffic has a fraction (the model machine's are not whole bytes). */
static void two_packages(struct sensor_sample *s, bool energy)
{
        assert_int_equal(sensor_sample_alloc(s, 2, 0), 0);
        s->timestamp_ns = 200000000;
        s->interval_ns = 100000000;
        s->cpu[0] = (struct sensor_counts){.busy_ns = 90000000, .measured = SENSOR_BUSY};
        s->cpu[1] = (struct sensor_counts){.busy_ns = 80000000, .measured = SENSOR_BUSY};
        s->n_packages = 2;
        s->energy_measured = energy;
        s->energy_j[0] = 2.5;
        s->energy_j[1] = 1.25;
        s->mem_measured = true;
        s->mem_bytes[0] = 1.5e9;
        s->mem_bytes[1] = 123456789.25;
}

static char *write_text(const struct sensor_sample *s, enum sample_io_format fmt)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        assert_non_null(f);
        assert_int_equal(sample_io_write_header_fmt(f, "test", s, NULL, fmt), 0);
        assert_int_equal(sample_io_write(f, s, fmt), 0);
        fclose(f);
        return text;
}

static void csv_round_trip_with_mem_bytes(void **state)
{
        for (int energy = 0; energy < 2; energy++) {
                struct sensor_sample s, back;
                struct sample_io_reader *r = NULL;
                char *text;

                two_packages(&s, energy);
                text = write_text(&s, SAMPLE_IO_CSV);
                assert_non_null(strstr(text, ",stalls,mem_bytes\n"));
                assert_int_equal(sample_io_open_text(text, &r, NULL), 0);
                assert_true(sample_io_has_mem_traffic(r));
                assert_int_equal(sample_io_has_energy(r), energy);
                assert_int_equal(sample_io_n_packages(r), 2);
                assert_int_equal(sensor_sample_alloc(&back, 2, 0), 0);
                assert_int_equal(sample_io_read(r, &back), 0);
                assert_true(back.mem_measured);
                assert_near(back.mem_bytes[0], 1.5e9, 1e-3);
                assert_near(back.mem_bytes[1], 123456789.25, 1e-3);
                assert_int_equal(back.energy_measured, energy);
                if (energy)
                        assert_near(back.energy_j[1], 1.25, 1e-6);
                assert_int_equal(back.cpu[1].busy_ns, 80000000);
                assert_int_equal(sample_io_read(r, &back), -ENODATA);
                sample_io_close(r);
                sensor_sample_free(&back);
                sensor_sample_free(&s);
                free(text);
        }
}

/* Not measured: no package row in the trace, and the replay reads it as not measured. */
static void csv_without_mem_writes_nothing(void **state)
{
        struct sensor_sample s, back;
        struct sample_io_reader *r = NULL;
        char *text;

        two_packages(&s, false);
        s.mem_measured = false;
        text = write_text(&s, SAMPLE_IO_CSV);
        assert_null(strstr(text, ",package,"));
        assert_int_equal(sample_io_open_text(text, &r, NULL), 0);
        assert_false(sample_io_has_mem_traffic(r));
        /* The header's packages= still gives the shape. */
        assert_int_equal(sample_io_n_packages(r), 2);
        assert_int_equal(sensor_sample_alloc(&back, 2, 0), 0);
        assert_int_equal(sample_io_read(r, &back), 0);
        assert_false(back.mem_measured);
        sample_io_close(r);
        sensor_sample_free(&back);
        sensor_sample_free(&s);
        free(text);
}

/* The table shows GB/s per package (bytes per ns), "unknown" where not measured; JSON carries
 * bytes and GB/s, null where not measured. */
static void text_and_json_show_gbps(void **state)
{
        struct sensor_sample s;
        char *text;

        two_packages(&s, false);
        text = write_text(&s, SAMPLE_IO_TEXT);
        assert_non_null(strstr(text, "mem_GB/s"));
        assert_non_null(strstr(text, " 15.000\n")); /* 1.5e9 bytes in 0.1 s */
        assert_non_null(strstr(text, " 1.235\n"));  /* 123456789.25 bytes in 0.1 s */
        free(text);
        text = write_text(&s, SAMPLE_IO_JSON);
        assert_non_null(strstr(text, "\"mem_gbps\":15"));
        assert_non_null(strstr(text, "\"mem_bytes\":1500000000"));
        assert_non_null(strstr(text, "\"energy_j\":null"));
        free(text);

        s.mem_measured = false;
        text = write_text(&s, SAMPLE_IO_TEXT);
        assert_non_null(strstr(text, " unknown\n"));
        assert_null(strstr(text, " 15.000"));
        free(text);
        text = write_text(&s, SAMPLE_IO_JSON);
        assert_non_null(strstr(text, "\"mem_gbps\":null"));
        assert_non_null(strstr(text, "\"mem_bytes\":null"));
        free(text);
        sensor_sample_free(&s);
}

/* A trace written before the column (freq_khz and stalls, energy per package) reads as before,
 * with no memory traffic measured. */
static void old_trace_still_loads(void **state)
{
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;

        assert_int_equal(sample_io_open_text("# pctl-sample v1 backend=perf cpus=0-1 packages=1 "
                                             "targets=0\n"
                                             "time_s,interval_s,kind,id,cpu,instr,cycles,"
                                             "ref_cycles,busy_ns,energy_j,freq_khz,stalls\n"
                                             "0.1,0.1,cpu,,0,10,20,30,40,,2000000,5\n"
                                             "0.1,0.1,package,0,,,,,,1.5,,\n",
                                             &r, NULL),
                         0);
        assert_false(sample_io_has_mem_traffic(r));
        assert_true(sample_io_has_energy(r));
        assert_int_equal(sensor_sample_alloc(&s, 1, 0), 0);
        s.mem_measured = true; /* the reader must clear it */
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_false(s.mem_measured);
        assert_true(s.energy_measured);
        assert_near(s.energy_j[0], 1.5, 1e-9);
        sensor_sample_free(&s);
        sample_io_close(r);
}

/* Each bad row is refused with its line number (line 4: after the header, the column line and
 * one good row). */
static void bad_mem_values_refused(void **state)
{
        /* The row, and what the refusal says of it (after "FILE:4: "). */
        static const struct {
                const char *row, *what;
        } bad[] = {
            {"0.1,0.1,package,0,,,,,,,,,-1",
             "column mem_bytes: '-1' is not a number of bytes from 0"},
            {"0.1,0.1,package,0,,,,,,,,,nan",
             "column mem_bytes: 'nan' is not a number of bytes from 0"},
            {"0.1,0.1,package,0,,,,,,,,,inf",
             "column mem_bytes: 'inf' is not a number of bytes from 0"},
            {"0.1,0.1,package,0,,,,,,,,,12abc",
             "column mem_bytes: '12abc' is not a number of bytes from 0"},
            {"0.1,0.1,package,0,,,,,,,,,0x",
             "column mem_bytes: '0x' is not a number of bytes from 0"},
            {"0.1,0.1,package,2,,,,,,,,,100",
             "column id: package 2, past the 2 the header's packages= says"},
            {"0.1,0.1,package,0,,,,,,,,,", "a package row with neither energy_j nor mem_bytes"},
            {"0.1,0.1,cpu,,1,,,,5,,,,100", "column mem_bytes: a package's, set on a cpu row"},
            {"0.1,0.1,package,0,,,,,,,,7,100", "column stalls: a CPU's, set on a package row"},
            {"0.1,0.1,package,0,,,,,,,,,100,5", "more than the 13 fields the column line names"},
            {"0.1,0.1,package,0,,,,,,x,,,", "column energy_j: 'x' is not a number"},
            {"0.1,0.1,package,z,,,,,,1,,,", "column id: 'z' is not a whole number from 0"},
            {"0.1,0.1,pkg,0,,,,,,1,,,", "column kind: 'pkg' is not cpu, target or package"},
            {"0.1,-1,package,0,,,,,,1,,,",
             "column interval_s: '-1' is not a number of seconds from 0"},
            {"0.1,0.1,cpu,,4096,,,,5,,,,", "column cpu: '4096' is not a CPU number below 4096"},
        };

        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char text[512];
                struct sample_io_reader *r = NULL;
                struct sample_io_error err = {0};

                snprintf(text, sizeof(text),
                         "# pctl-sample v1 backend=x cpus=0-1 packages=2 targets=0\n"
                         "time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,"
                         "energy_j,freq_khz,stalls,mem_bytes\n"
                         "0.1,0.1,package,1,,,,,,,,,64\n"
                         "%s\n"
                         "0.2,0.1,package,1,,,,,,,,,64\n",
                         bad[i].row);
                assert_int_equal(sample_io_open_text(text, &r, &err), -EBADMSG);
                if (err.line != 4)
                        fail_msg("'%s': line %u, wanted 4", bad[i].row, err.line);
                if (strcmp(err.what, bad[i].what) != 0)
                        fail_msg("'%s': '%s', wanted '%s'", bad[i].row, err.what, bad[i].what);
                assert_null(r);
        }
}

/* A header whose packages= is not a count is refused on line 1. */
static void bad_header_packages_refused(void **state)
{
        static const char *const bad[] = {"packages=x", "packages=", "packages=-1",
                                          "packages=99999"};

        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char text[256];
                struct sample_io_reader *r = NULL;
                struct sample_io_error err = {0};

                snprintf(text, sizeof(text),
                         "# pctl-sample v1 backend=x cpus=0 %s targets=0\n"
                         "time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,"
                         "energy_j\n0.1,0.1,cpu,,0,,,,5,\n",
                         bad[i]);
                assert_int_equal(sample_io_open_text(text, &r, &err), -EBADMSG);
                assert_int_equal(err.line, 1);
                if (strncmp(err.what, "header: packages=", 17) != 0 ||
                    !strstr(err.what, "' is not a whole number from 0 to 64"))
                        fail_msg("'%s': '%s'", bad[i], err.what);
        }
}

/* likwid-perfctr -t timelines: the MEM group's "Memory data volume [GBytes]" metric, or the
 * CAS / DRAM counts of a custom event set (64 bytes each), summed over the CPUs that report
 * them (each socket's first) into package 0; a group with both counts the volume only. */
static void likwid_timeline_mem(void **state)
{
        static const char group[] =
            "# HWThreads: 0|1\n"
            "# GID|MetricsCount|CpuCount|Total runtime [s]|Runtime (RDTSC) [s]|"
            "Memory bandwidth [MBytes/s]|Memory data volume [GBytes]\n"
            "0 3 2 0.100 0.1 0.1 5000 0 0.5 0\n"
            "0 3 2 0.200 0.1 0.1 7000 0 0.25 0.125\n";
        static const char events[] =
            "# HWThreads: 0|1\n"
            "# GID|MetricsCount|CpuCount|Total runtime [s]|INSTR_RETIRED_ANY|CAS_COUNT_RD|"
            "CAS_COUNT_WR|DRAM_READS\n"
            "0 4 2 0.100 10 20 1000 0 500 0 2 -\n";
        static const char both[] =
            "# HWThreads: 0|1\n"
            "# GID|MetricsCount|CpuCount|Total runtime [s]|CAS_COUNT_RD|CAS_COUNT_WR|"
            "Memory data volume [GBytes]\n"
            "0 3 2 0.100 1000 0 1000 0 0.000128 0\n";
        static const char amd[] = "# HWThreads: 0|1\n"
                                  "# GID|MetricsCount|CpuCount|Total runtime [s]|DRAM_CHANNEL_0|"
                                  "Memory data volume (channels 0-3) [GBytes]\n"
                                  "0 2 2 0.100 1000 0 0.5 0\n";
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;

        assert_int_equal(sensor_sample_alloc(&s, 2, 0), 0);
        assert_int_equal(sample_io_open_text(group, &r, NULL), 0);
        assert_true(sample_io_has_mem_traffic(r));
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.mem_measured);
        assert_near(s.mem_bytes[0], 0.5e9, 1e-3);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_near(s.mem_bytes[0], 0.375e9, 1e-3);
        sample_io_close(r);

        assert_int_equal(sample_io_open_text(events, &r, NULL), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.mem_measured);
        assert_near(s.mem_bytes[0], (1000 + 500 + 2) * 64.0, 1e-9);
        assert_int_equal(s.cpu[0].instr, 10);
        sample_io_close(r);

        assert_int_equal(sample_io_open_text(both, &r, NULL), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_near(s.mem_bytes[0], 128000, 1e-6);
        sample_io_close(r);

        /* Half the channels would read as half the traffic: not measured. */
        assert_int_equal(sample_io_open_text(amd, &r, NULL), 0);
        assert_false(sample_io_has_mem_traffic(r));
        sample_io_close(r);
        sensor_sample_free(&s);
}

/* perf stat -I 100 -x, -a -A -e instructions,uncore_imc/cas_count_read/,...: the memory
 * events per package (by the CPU perf reports them on, as energy), in MiB or as bare CAS
 * counts (AMD's umc_cas_cmd); a unit that is not bytes is not read. */
static void perf_stat_mem(void **state)
{
        static const char text[] =
            "# started on Fri Nov 27 22:00:00 2026\n"
            "     0.100131520,CPU0,1000,,instructions,100120000,100.00,,\n"
            "     0.100131520,CPU2,1000,,instructions,100120000,100.00,,\n"
            "     0.100131520,CPU0,12.50,MiB,uncore_imc/cas_count_read/,100120000,100.00,,\n"
            "     0.100131520,CPU2,2.25,MiB,uncore_imc/cas_count_read/,100120000,100.00,,\n"
            "     0.100131520,CPU0,6.00,MiB,uncore_imc/cas_count_write/,100120000,100.00,,\n"
            "     0.100131520,CPU2,7,,amd_umc_0/umc_cas_cmd.wr/,100120000,100.00,,\n"
            "     0.100131520,CPU2,9,furlongs,uncore_imc/cas_count_write/,100120000,100.00,,\n"
            "     0.200262040,CPU0,1000,,instructions,100120000,100.00,,\n";
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;

        assert_int_equal(sample_io_open_text(text, &r, NULL), 0);
        assert_int_equal(sample_io_source(r), SAMPLE_IO_SRC_PERF);
        assert_true(sample_io_has_mem_traffic(r));
        assert_false(sample_io_has_energy(r));
        assert_int_equal(sample_io_n_packages(r), 2);
        assert_int_equal(sensor_sample_alloc(&s, sample_io_n_cpus(r), 0), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.mem_measured);
        assert_false(s.energy_measured);
        assert_near(s.mem_bytes[0], 18.5 * 1048576, 1e-6);
        assert_near(s.mem_bytes[1], 2.25 * 1048576 + 7 * 64, 1e-6);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_false(s.mem_measured);
        sensor_sample_free(&s);
        sample_io_close(r);
}

/* The replay backend measures memory traffic when its trace has it, and says so. */
static void replay_backend_has_mem_traffic(void **state)
{
        char path[] = "/tmp/pctl-test-mem-XXXXXX";
        int fd = mkstemp(path);
        struct sensor_config cfg = {.source = path};
        struct sensor_sample s = {0}, back;
        struct sensor *sn = NULL;
        char *text;

        assert_true(fd >= 0);
        two_packages(&s, true);
        text = write_text(&s, SAMPLE_IO_CSV);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        assert_int_equal(sensor_open(sensor_find("replay"), &cfg, &sn), 0);
        assert_true(sn->has_mem_traffic);
        assert_int_equal(sn->n_packages, 2);
        assert_int_equal(sensor_sample_alloc(&back, sn->n_cpus, 0), 0);
        assert_int_equal(sensor_read(sn, &back), 0);
        assert_true(back.mem_measured);
        assert_near(back.mem_bytes[0], 1.5e9, 1e-3);
        sensor_close(sn);
        sensor_sample_free(&back);
        sensor_sample_free(&s);
        free(text);
        unlink(path);
}

/* The software backend has no memory-controller counter: it says so and never claims one. */
static void software_backend_measures_none(void **state)
{
        struct sensor_config cfg = {0};
        struct sensor_probe p;
        struct sensor_sample s;
        struct sensor *sn = NULL;

        assert_int_equal(sensor_find("software")->probe(&cfg, &p), 0);
        assert_false(p.mem_traffic);
        assert_non_null(strstr(p.mem_reason, "not measured"));
        assert_int_equal(sensor_open(sensor_find("software"), &cfg, &sn), 0);
        assert_false(sn->has_mem_traffic);
        assert_int_equal(sensor_sample_alloc(&s, sn->n_cpus, 0), 0);
        s.mem_measured = true; /* sensor_read must clear it */
        assert_int_equal(sensor_read(sn, &s), 0);
        assert_false(s.mem_measured);
        sensor_sample_free(&s);
        sensor_close(sn);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(csv_round_trip_with_mem_bytes),
            cmocka_unit_test(csv_without_mem_writes_nothing),
            cmocka_unit_test(text_and_json_show_gbps),
            cmocka_unit_test(old_trace_still_loads),
            cmocka_unit_test(bad_mem_values_refused),
            cmocka_unit_test(bad_header_packages_refused),
            cmocka_unit_test(likwid_timeline_mem),
            cmocka_unit_test(perf_stat_mem),
            cmocka_unit_test(replay_backend_has_mem_traffic),
            cmocka_unit_test(software_backend_measures_none),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
