/* Stalled cycles in traces: our CSV writes and reads them as a last column (and still reads
 * traces without it), and `perf stat -I MS -x,` interval CSV is read per CPU (-A) or as one
 * target, with stall events, energy per package, and unmeasured events left unmeasured. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pctl_test.h"
#include "pctl/perf_group.h"
#include "pctl/sample_io.h"

static void csv_round_trip_with_stalls(void **state)
{
        struct sensor_sample s, back;
        struct sample_io_reader *r = NULL;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        assert_non_null(f);
        assert_int_equal(sensor_sample_alloc(&s, 2, 0), 0);
        s.timestamp_ns = 100000000;
        s.interval_ns = 100000000;
        s.cpu[0] = (struct sensor_counts){
            .cycles = 1000, .stalls = 400, .measured = SENSOR_CYCLES | SENSOR_STALLS};
        s.cpu[1] = (struct sensor_counts){.cycles = 900, .measured = SENSOR_CYCLES};
        s.n_packages = 1;
        s.energy_measured = true;
        s.energy_j[0] = 1.5;
        assert_int_equal(sample_io_write_header(f, "test", &s, NULL), 0);
        assert_int_equal(sample_io_write(f, &s, SAMPLE_IO_CSV), 0);
        fclose(f);
        assert_non_null(strstr(text, ",energy_j,freq_khz,stalls,mem_bytes\n"));
        assert_int_equal(sample_io_open_text(text, &r, NULL), 0);
        assert_true(sample_io_metrics(r) & SENSOR_STALLS);
        assert_int_equal(sensor_sample_alloc(&back, 2, 0), 0);
        assert_int_equal(sample_io_read(r, &back), 0);
        assert_true(back.cpu[0].measured & SENSOR_STALLS);
        assert_int_equal(back.cpu[0].stalls, 400);
        assert_false(back.cpu[1].measured & SENSOR_STALLS);
        assert_near(back.energy_j[0], 1.5, 1e-6);
        sample_io_close(r);
        sensor_sample_free(&back);
        sensor_sample_free(&s);
        free(text);
}

/* A trace written before the stalls column reads as before, without stalls. */
static void csv_without_stalls_column(void **state)
{
        struct sample_io_reader *r = NULL;

        assert_int_equal(sample_io_open_text("# pctl-sample v1 backend=x\n"
                                             "time_s,interval_s,kind,id,cpu,instr,cycles,"
                                             "ref_cycles,busy_ns,energy_j\n"
                                             "0.1,0.1,cpu,,0,,5,,7,\n",
                                             &r, NULL),
                         0);
        assert_false(sample_io_metrics(r) & SENSOR_STALLS);
        sample_io_close(r);
        /* With the column, a row must have it. */
        struct sample_io_error err = {0};
        assert_int_equal(sample_io_open_text("# pctl-sample v1 backend=x\n"
                                             "time_s,interval_s,kind,id,cpu,instr,cycles,"
                                             "ref_cycles,busy_ns,energy_j,stalls\n"
                                             "0.1,0.1,cpu,,0,,5,,7,,3\n"
                                             "0.2,0.1,cpu,,0,,5,,7,\n"
                                             "0.3,0.1,cpu,,0,,5,,7,,3\n",
                                             &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 4);
}

/* perf stat -I 100 -x, -a -A -e instructions,cycles,ref-cycles,cycle_activity.stalls_total,
 * power/energy-pkg/ (the layout perf writes; the numbers are made up for the test). */
static const char perf_per_cpu[] =
    "# started on Mon Nov 23 13:00:00 2026\n"
    "\n"
    "     0.100131520,CPU0,2000000,,instructions,100120000,100.00,1.00,insn per cycle\n"
    "     0.100131520,CPU1,1000000,,instructions,100120000,100.00,0.50,insn per cycle\n"
    "     0.100131520,CPU0,2000000,,cycles,100120000,100.00,,\n"
    "     0.100131520,CPU1,2000000,,cycles,100120000,100.00,,\n"
    "     0.100131520,CPU0,2100000,,ref-cycles,100120000,100.00,,\n"
    "     0.100131520,CPU1,<not counted>,,ref-cycles,0,0.00,,\n"
    "     0.100131520,CPU0,500000,,cycle_activity.stalls_total,100120000,100.00,,\n"
    "     0.100131520,CPU1,1200000,,cycle_activity.stalls_total,100120000,100.00,,\n"
    "     0.100131520,CPU0,1.25,Joules,power/energy-pkg/,100120000,100.00,,\n"
    "     0.200262040,CPU0,3000000,,instructions,100120000,100.00,,\n"
    "     0.200262040,CPU1,1000000,,instructions,100120000,100.00,,\n"
    "     0.200262040,CPU0,3000000,,cycles:u,100120000,100.00,,\n"
    "     0.200262040,CPU1,2000000,,cycles:u,100120000,100.00,,\n"
    "     0.200262040,CPU0,400000,,cycle_activity.stalls_total,100120000,100.00,,\n"
    "     0.200262040,CPU1,1300000,,cycle_activity.stalls_total,100120000,100.00,,\n"
    "     0.200262040,CPU0,1.50,Joules,power/energy-pkg/,100120000,100.00,,\n";

static void perf_stat_per_cpu(void **state)
{
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;

        assert_int_equal(sample_io_open_text(perf_per_cpu, &r, NULL), 0);
        assert_int_equal(sample_io_source(r), SAMPLE_IO_SRC_PERF);
        assert_int_equal(sample_io_n_intervals(r), 2);
        assert_int_equal(sample_io_n_cpus(r), 2);
        assert_true(sample_io_has_energy(r));
        assert_int_equal(sensor_sample_alloc(&s, 2, 0), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.interval_ns == 100131520);
        assert_int_equal(s.cpu[0].instr, 2000000);
        assert_int_equal(s.cpu[1].stalls, 1200000);
        assert_true(s.cpu[1].measured & SENSOR_STALLS);
        assert_true(s.cpu[0].measured & SENSOR_REF_CYCLES);
        assert_false(s.cpu[1].measured & SENSOR_REF_CYCLES); /* <not counted> */
        assert_near(s.energy_j[0], 1.25, 1e-9);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_true(s.timestamp_ns == 200262040);
        assert_true(s.interval_ns == 200262040 - 100131520);
        assert_int_equal(s.cpu[0].cycles, 3000000); /* "cycles:u" is cycles */
        assert_int_equal(s.cpu[1].stalls, 1300000);
        assert_int_equal(sample_io_read(r, &s), -ENODATA);
        sensor_sample_free(&s);
        sample_io_close(r);
}

/* Without -A: what perf measured (perf stat -p PID, or a command) is one target on CPU 0;
 * stalled-cycles-backend and task-clock (msec) are read too. */
static void perf_stat_one_target(void **state)
{
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;

        assert_int_equal(sample_io_open_text("1.000100000,1999.50,msec,task-clock,1999500000,"
                                             "100.00,2.000,CPUs utilized\n"
                                             "1.000100000,5000000,,stalled-cycles-backend,"
                                             "1999500000,100.00,,\n"
                                             "1.000100000,9000000,,cycles,1999500000,100.00,,\n",
                                             &r, NULL),
                         0);
        assert_int_equal(sample_io_n_targets(r), 1);
        assert_int_equal(sensor_sample_alloc(&s, 1, 1), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_false(s.cpu[0].measured);
        assert_int_equal(sensor_target_cpu(&s, 0, 0)->stalls, 5000000);
        assert_int_equal(sensor_target_cpu(&s, 0, 0)->busy_ns, 1999500000);
        sensor_sample_free(&s);
        sample_io_close(r);
}

/* A line that is not perf's in the middle is refused with its number; a cut-off last line
 * is forgiven. */
static void perf_stat_bad_lines(void **state)
{
        struct sample_io_reader *r = NULL;
        struct sample_io_error err = {0};

        assert_int_equal(sample_io_open_text("0.1,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.1,CPU0,oops\n"
                                             "0.2,CPU0,5,,cycles,1,100.00,,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 2);
        assert_string_equal(err.what, "3 fields, not perf stat -x,'s time, value, unit and event");
        /* Time going back. */
        assert_int_equal(sample_io_open_text("0.2,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.1,CPU0,5,,cycles,1,100.00,,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 2);
        assert_string_equal(err.what,
                            "column 1 (time): '0.1' is before the time of the line above");
        /* A CPU column on some lines only. */
        assert_int_equal(sample_io_open_text("0.1,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.1,5,,cycles,1,100.00,,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_string_equal(err.what, "column 2: no CPU, where the lines before have one");
        assert_int_equal(sample_io_open_text("0.1,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.2,CPUx,5,,cycles,1,100.00,,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 2);
        assert_string_equal(err.what, "column 2 (CPU): 'CPUx' is not CPU0 to CPU4095");
        /* A value of an event pctl reads that is no count; one of an event it ignores, or
         * <not counted>, is no matter. */
        assert_int_equal(sample_io_open_text("0.1,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.1,CPU0,abc,,instructions,1,100.00,,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 2);
        assert_string_equal(err.what,
                            "column 3 (value of instructions): 'abc' is not a number from 0");
        assert_int_equal(sample_io_open_text("0.1,5,,cycles,1,100.00,,\n"
                                             "0.1,-3,,task-clock,1,100.00,,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_string_equal(err.what,
                            "column 2 (value of task-clock): '-3' is not a number from 0");
        assert_int_equal(sample_io_open_text("0.1,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.1,CPU0,abc,,branch-misses,1,100.00,,\n"
                                             "0.1,CPU0,<not counted>,,instructions,0,0.00,,\n",
                                             &r, NULL),
                         0);
        sample_io_close(r);
        /* Counts past a 64-bit counter, a task-clock past 2^64 ns: corrupt rows, refused
         * (the fuzzer's find: converting them was undefined). */
        assert_int_equal(sample_io_open_text("0.1,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.1,CPU0,2e20,,instructions,1,100.00,,\n",
                                             &r, &err),
                         -EBADMSG);
        assert_int_equal(err.line, 2);
        assert_string_equal(err.what, "column 3 (value of instructions): '2e20' is past what a "
                                      "64-bit counter holds");
        assert_int_equal(
            sample_io_open_text("0.1,CPU0,2e20,msec,task-clock,1,100.00,,\n", &r, &err), -EBADMSG);
        assert_int_equal(sample_io_open_text("0.1,CPU0,inf,,ref-cycles,1,100.00,,\n", &r, &err),
                         -EBADMSG);
        assert_int_equal(sample_io_open_text("0.1,CPU0,5,,cycles,1,100.00,,\n"
                                             "0.2,CPU0,5,,cyc",
                                             &r, &err),
                         0);
        assert_int_equal(sample_io_n_intervals(r), 1);
        assert_int_equal(sample_io_n_skipped(r), 1);
        sample_io_close(r);
}

/* likwid-perfctr -t with the stall events pctl's LIKWID backend asks for. */
static void likwid_timeline_stalls(void **state)
{
        struct sample_io_reader *r = NULL;
        struct sensor_sample s;

        assert_int_equal(sample_io_open_text("# HWThreads: 0|1\n"
                                             "# GID|MetricsCount|CpuCount|Total runtime [s]|"
                                             "CPU_CLK_UNHALTED_CORE|CYCLE_ACTIVITY_STALLS_TOTAL\n"
                                             "0 2 2 0.1 1000 900 300 600\n",
                                             &r, NULL),
                         0);
        assert_true(sample_io_metrics(r) & SENSOR_STALLS);
        assert_int_equal(sensor_sample_alloc(&s, 2, 0), 0);
        assert_int_equal(sample_io_read(r, &s), 0);
        assert_int_equal(s.cpu[0].stalls, 300);
        assert_int_equal(s.cpu[1].stalls, 600);
        sensor_sample_free(&s);
        sample_io_close(r);
}

/* The perf backend's stall events, in the order it tries them: the generic one, then on
 * Intel CYCLE_ACTIVITY.STALLS_TOTAL and RESOURCE_STALLS.ANY as raw codes. */
static void perf_stall_events_in_order(void **state)
{
        struct perf_event_attr a;

        assert_true(perf_stall_attr(0, false, &a));
        assert_int_equal(a.type, PERF_TYPE_HARDWARE);
        assert_int_equal(a.config, PERF_COUNT_HW_STALLED_CYCLES_BACKEND);
        assert_false(perf_stall_attr(1, false, &a));
        assert_true(perf_stall_attr(1, true, &a));
        assert_int_equal(a.type, PERF_TYPE_RAW);
        assert_int_equal(a.config, 0x040004a3); /* event a3, umask 04, cmask 4 */
        assert_true(perf_stall_attr(2, true, &a));
        assert_int_equal(a.config, 0x01a2);
        assert_false(perf_stall_attr(3, true, &a));
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(csv_round_trip_with_stalls),
            cmocka_unit_test(csv_without_stalls_column),
            cmocka_unit_test(perf_stat_per_cpu),
            cmocka_unit_test(perf_stat_one_target),
            cmocka_unit_test(perf_stat_bad_lines),
            cmocka_unit_test(likwid_timeline_stalls),
            cmocka_unit_test(perf_stall_events_in_order),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
