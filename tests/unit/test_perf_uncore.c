/* The memory controllers' uncore PMUs (sensors/perf_uncore.c) on a fake sysfs: discovery of
 * Intel IMC and AMD UMC PMUs, their event strings packed with the format files, odd and
 * missing scales, malformed events, the package each PMU's cpumask CPU is on; and the
 * arithmetic from raw counts to bytes. This VM has no such PMU: opening them is not tested
 * here (see docs/memory-traffic.md for the check on a real machine). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl_test.h"
#include "fake_tree.h"
#include "pctl/perf_uncore.h"
#include "pctl/util.h"

static char sys_dir[512];

/* A machine of 4 CPUs, 0-1 on package 0 and 2-3 on package 1. */
static void machine(void)
{
        char path[128];

        fake_tree_new("uncore");
        snprintf(sys_dir, sizeof(sys_dir), "%s/sys", fake_root);
        for (unsigned c = 0; c < 4; c++) {
                snprintf(path, sizeof(path),
                         "/sys/devices/system/cpu/cpu%u/topology/physical_package_id", c);
                fake_put(path, c < 2 ? "0\n" : "1\n");
        }
        /* PMUs that are not memory controllers, and a free-running one perf also lists. */
        fake_put("/sys/bus/event_source/devices/cpu/type", "4\n");
        fake_put("/sys/bus/event_source/devices/power/type", "23\n");
        fake_put("/sys/bus/event_source/devices/uncore_imc_free_running_0/type", "30\n");
}

static void put(const char *pmu, const char *file, const char *content)
{
        char path[256];

        snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/%s", pmu, file);
        fake_put(path, content);
}

/* A server IMC PMU as Linux shows it: cas_count_read/write in MiB. */
static void imc(const char *pmu, const char *type, const char *cpumask)
{
        put(pmu, "type", type);
        put(pmu, "cpumask", cpumask);
        put(pmu, "format/event", "config:0-7\n");
        put(pmu, "format/umask", "config:8-15\n");
        put(pmu, "events/cas_count_read", "event=0x04,umask=0x03\n");
        put(pmu, "events/cas_count_read.scale", "6.103515625e-5\n");
        put(pmu, "events/cas_count_read.unit", "MiB\n");
        put(pmu, "events/cas_count_write", "event=0x04,umask=0x0c\n");
        put(pmu, "events/cas_count_write.scale", "6.103515625e-5\n");
        put(pmu, "events/cas_count_write.unit", "MiB\n");
}

/* Two IMC PMUs, each replicated on both packages (cpumask: one CPU per package). */
static void two_imcs_per_package(void **state)
{
        struct uncore_imc u;
        char why[256];
        unsigned per_pkg[2] = {0};

        machine();
        imc("uncore_imc_0", "13\n", "0,2\n");
        imc("uncore_imc_1", "14\n", "0,2\n");
        assert_int_equal(uncore_imc_discover(sys_dir, &u, why, sizeof(why)), 0);
        assert_int_equal(u.n_boxes, 4);
        assert_int_equal(u.n_packages, 2);
        assert_int_equal(u.n_skipped, 0);
        for (unsigned i = 0; i < u.n_boxes; i++) {
                const struct uncore_box *b = &u.box[i];

                assert_true(strncmp(b->pmu, "uncore_imc_", 11) == 0);
                assert_int_equal(b->package, b->cpu < 2 ? 0 : 1);
                per_pkg[b->package]++;
                assert_int_equal(b->ev[0].config, 0x0304);
                assert_int_equal(b->ev[1].config, 0x0c04);
                /* 6.103515625e-5 MiB = 64 bytes: one cache line per CAS. */
                assert_near(b->bytes_per_count[0], 64.0, 1e-12);
                assert_near(b->bytes_per_count[1], 64.0, 1e-12);
        }
        assert_int_equal(per_pkg[0], 2);
        assert_int_equal(per_pkg[1], 2);
        assert_int_equal(u.box[0].type, 13);
        assert_int_equal(u.box[3].type, 14);
        assert_non_null(strstr(why, "2 memory-controller PMU(s)"));
        fake_tree_free();
}

/* A PMU whose cpumask names a CPU of package 1 counts for package 1, whatever its number. */
static void cpumask_of_another_package(void **state)
{
        struct uncore_imc u;

        machine();
        imc("uncore_imc_0", "13\n", "1\n");
        imc("uncore_imc_1", "14\n", "3\n");
        assert_int_equal(uncore_imc_discover(sys_dir, &u, NULL, 0), 0);
        assert_int_equal(u.n_boxes, 2);
        assert_int_equal(u.box[0].cpu, 1);
        assert_int_equal(u.box[0].package, 0);
        assert_int_equal(u.box[1].cpu, 3);
        assert_int_equal(u.box[1].package, 1);
        assert_int_equal(u.n_packages, 2);
        fake_tree_free();
}

/* Scales as sysfs gives them: another MiB scale, MB, none at all (a CAS count: 64 bytes); a
 * scale without its unit is refused for that PMU alone, naming it. */
static void odd_and_missing_scales(void **state)
{
        struct uncore_imc u;
        char why[256];

        machine();
        imc("uncore_imc_0", "13\n", "0\n");
        put("uncore_imc_0", "events/cas_count_read.scale", "3.0517578125e-5\n"); /* 32 B */
        put("uncore_imc_0", "events/cas_count_write.scale", "6.4e-5\n");
        put("uncore_imc_0", "events/cas_count_write.unit", "MB\n");
        imc("uncore_imc_1", "14\n", "2\n");
        {
                char path[512];

                snprintf(path, sizeof(path),
                         "%s/sys/bus/event_source/devices/uncore_imc_1/events/cas_count_read.scale",
                         fake_root);
                assert_int_equal(remove(path), 0);
                snprintf(path, sizeof(path),
                         "%s/sys/bus/event_source/devices/uncore_imc_1/events/cas_count_read.unit",
                         fake_root);
                assert_int_equal(remove(path), 0);
        }
        imc("uncore_imc_2", "15\n", "2\n");
        {
                char path[512];

                snprintf(path, sizeof(path),
                         "%s/sys/bus/event_source/devices/uncore_imc_2/events/cas_count_write.unit",
                         fake_root);
                assert_int_equal(remove(path), 0);
        }
        assert_int_equal(uncore_imc_discover(sys_dir, &u, why, sizeof(why)), 0);
        assert_int_equal(u.n_boxes, 2);
        assert_int_equal(u.n_skipped, 1);
        assert_near(u.box[0].bytes_per_count[0], 32.0, 1e-12);
        assert_near(u.box[0].bytes_per_count[1], 64.0, 1e-9);
        assert_near(u.box[1].bytes_per_count[0], 64.0, 1e-12); /* no .scale, no .unit */
        assert_near(u.box[1].bytes_per_count[1], 64.0, 1e-12);
        assert_non_null(strstr(why, "uncore_imc_2"));
        assert_non_null(strstr(why, "cas_count_write"));
        fake_tree_free();
}

/* Malformed event strings: each such PMU is skipped with its name; when none is left the
 * discovery fails with the first reason. */
static void malformed_events_skipped(void **state)
{
        static const char *const bad[] = {
            "event=0x04,umask=zz",    /* garbage value */
            "event=0x1ff,umask=0x03", /* wider than config:0-7 */
            "event=0x04,bogus=0x1",   /* a term without a format file */
            "event=0x04,,=3",         /* an empty term name */
            "event=-1",               /* a sign */
            "",                       /* nothing */
        };
        struct uncore_imc u;
        char why[256];

        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                machine();
                imc("uncore_imc_0", "13\n", "0\n");
                imc("uncore_imc_5", "18\n", "2\n");
                put("uncore_imc_5", "events/cas_count_read", bad[i]);
                assert_int_equal(uncore_imc_discover(sys_dir, &u, why, sizeof(why)), 0);
                if (u.n_boxes != 1 || u.n_skipped != 1 || !strstr(why, "uncore_imc_5"))
                        fail_msg("'%s': %u boxes, %u skipped, why '%s'", bad[i], u.n_boxes,
                                 u.n_skipped, why);
                assert_string_equal(u.box[0].pmu, "uncore_imc_0");
                fake_tree_free();
        }
        /* The only PMU malformed: -EINVAL, saying why. */
        machine();
        imc("uncore_imc_0", "13\n", "0\n");
        put("uncore_imc_0", "cpumask", "\n");
        assert_int_equal(uncore_imc_discover(sys_dir, &u, why, sizeof(why)), -EINVAL);
        assert_non_null(strstr(why, "uncore_imc_0: no cpumask"));
        fake_tree_free();
}

/* Formats split over several ranges and config words, as some PMUs have. */
static void split_formats(void **state)
{
        struct uncore_config c;

        machine();
        put("uncore_imc_0", "format/event", "config:0-3,8-11\n");
        put("uncore_imc_0", "format/edge", "config:18\n");
        put("uncore_imc_0", "format/ch", "config1:4-5\n");
        assert_int_equal(uncore_event_parse(sys_dir, "uncore_imc_0", "event=0xab,edge,ch=2", &c),
                         0);
        assert_int_equal(c.config, 0xa0b | (1u << 18));
        assert_int_equal(c.config1, 2u << 4);
        assert_int_equal(c.config2, 0);
        put("uncore_imc_0", "format/bad", "config3:0-7\n");
        assert_int_equal(uncore_event_parse(sys_dir, "uncore_imc_0", "bad=1", &c), -EINVAL);
        put("uncore_imc_0", "format/bad", "config:7-0\n");
        assert_int_equal(uncore_event_parse(sys_dir, "uncore_imc_0", "bad=1", &c), -EINVAL);
        put("uncore_imc_0", "format/bad", "config:0-64\n");
        assert_int_equal(uncore_event_parse(sys_dir, "uncore_imc_0", "bad=1", &c), -EINVAL);
        fake_tree_free();
}

/* AMD Zen 4's UMC PMUs: sysfs has no event names; ours pack with its format files. A client
 * Intel IMC (one PMU, data_reads/data_writes) is found too. */
static void amd_umc_and_client_imc(void **state)
{
        struct uncore_imc u;

        machine();
        put("amd_umc_0", "type", "25\n");
        put("amd_umc_0", "cpumask", "0\n");
        put("amd_umc_0", "format/event", "config:0-7\n");
        put("amd_umc_0", "format/rdwrmask", "config:8-9\n");
        put("amd_umc_1", "type", "26\n");
        put("amd_umc_1", "cpumask", "2\n");
        put("amd_umc_1", "format/event", "config:0-7\n");
        put("amd_umc_1", "format/rdwrmask", "config:8-9\n");
        assert_int_equal(uncore_imc_discover(sys_dir, &u, NULL, 0), 0);
        assert_int_equal(u.n_boxes, 2);
        assert_int_equal(u.box[0].ev[0].config, 0x10a); /* umc_cas_cmd.rd */
        assert_int_equal(u.box[0].ev[1].config, 0x20a); /* umc_cas_cmd.wr */
        assert_near(u.box[0].bytes_per_count[0], 64.0, 1e-12);
        assert_int_equal(u.box[1].package, 1);
        fake_tree_free();

        machine();
        put("uncore_imc", "type", "12\n");
        put("uncore_imc", "cpumask", "0\n");
        put("uncore_imc", "format/event", "config:0-7\n");
        put("uncore_imc", "format/umask", "config:8-15\n");
        put("uncore_imc", "events/data_reads", "event=0xff,umask=0x20\n");
        put("uncore_imc", "events/data_reads.scale", "6.103515625e-5\n");
        put("uncore_imc", "events/data_reads.unit", "MiB\n");
        put("uncore_imc", "events/data_writes", "event=0xff,umask=0x21\n");
        put("uncore_imc", "events/data_writes.scale", "6.103515625e-5\n");
        put("uncore_imc", "events/data_writes.unit", "MiB\n");
        assert_int_equal(uncore_imc_discover(sys_dir, &u, NULL, 0), 0);
        assert_int_equal(u.n_boxes, 1);
        assert_int_equal(u.box[0].ev[1].config, 0x21ff);
        fake_tree_free();
}

/* No memory-controller PMU (this VM, AMD before Zen 4): -ENOENT and a reason. */
static void none_here(void **state)
{
        struct uncore_imc u;
        char why[256];

        machine();
        assert_int_equal(uncore_imc_discover(sys_dir, &u, why, sizeof(why)), -ENOENT);
        assert_int_equal(u.n_boxes, 0);
        assert_non_null(strstr(why, "no memory-controller PMU"));
        fake_tree_free();
        assert_int_equal(uncore_imc_discover("/nonexistent-pctl", &u, why, sizeof(why)), -ENOENT);
}

/* PMUs that sysfs lists but the kernel will not open (here: no such PMU type; on real
 * machines EACCES without root): no traffic, and the perf backend's probe says which PMU on
 * which CPU and why, whatever becomes of its core counters. */
static void found_but_not_opened(void **state)
{
        struct uncore_counters *u = calloc(1, sizeof(*u));
        struct sensor_probe p;
        char why[256];

        assert_non_null(u);
        machine();
        imc("uncore_imc_0", "999999\n", "0,2\n");
        fake_tree_use();
        assert_true(uncore_counters_open(u, why, sizeof(why)) < 0);
        assert_non_null(strstr(why, "uncore_imc_0 on CPU 0: perf_event_open: "));
        assert_int_equal(u->imc.n_boxes, 0);
        assert_int_equal(sensor_find("perf")->probe(NULL, &p), 0);
        assert_false(p.mem_traffic);
        assert_non_null(strstr(p.mem_reason, "perf: not measured: uncore_imc_0 on CPU 0"));
        fake_tree_free();
        free(u);
}

/* Counts to bytes: the delta times bytes per count, scaled by enabled / running when
 * multiplexed; unknown (not 0) when the counter never ran. */
static void counts_to_bytes(void **state)
{
        double b = -1;

        assert_int_equal(uncore_delta_bytes(1000, 2000, 0, 100, 0, 100, 64, &b), 0);
        assert_near(b, 64000, 1e-9);
        /* Ran a quarter of the time: four times the counted traffic. */
        assert_int_equal(uncore_delta_bytes(0, 500, 100, 500, 50, 150, 64, &b), 0);
        assert_near(b, 500 * 4.0 * 64, 1e-9);
        /* 64-bit counts past 2^53 keep their delta. */
        assert_int_equal(
            uncore_delta_bytes(0xfffffffffff00000ull, 0xfffffffffff00010ull, 0, 1, 0, 1, 64, &b),
            0);
        assert_near(b, 16 * 64, 1e-9);
        b = -1;
        assert_int_equal(uncore_delta_bytes(0, 0, 0, 100, 7, 7, 64, &b), -ENODATA);
        assert_int_equal(uncore_delta_bytes(10, 5, 0, 100, 0, 100, 64, &b), -ERANGE);
        assert_int_equal(uncore_delta_bytes(0, 5, 100, 50, 0, 100, 64, &b), -ERANGE);
        assert_near(b, -1, 0); /* untouched on failure */
}

static void bytes_per_count_from_scale_and_unit(void **state)
{
        double b = 0;

        assert_int_equal(uncore_bytes_per_count("6.103515625e-5", "MiB", &b), 0);
        assert_near(b, 64, 1e-12);
        assert_int_equal(uncore_bytes_per_count(NULL, NULL, &b), 0);
        assert_near(b, 64, 0);
        assert_int_equal(uncore_bytes_per_count("64", "B", &b), 0);
        assert_near(b, 64, 0);
        assert_int_equal(uncore_bytes_per_count("6.4e-8", "GB", &b), 0);
        assert_near(b, 64, 1e-9);
        assert_int_equal(uncore_bytes_per_count("0.0625", "KiB", &b), 0);
        assert_near(b, 64, 0);
        b = -1;
        assert_int_equal(uncore_bytes_per_count("1", NULL, &b), -EINVAL);
        assert_int_equal(uncore_bytes_per_count(NULL, "MiB", &b), -EINVAL);
        assert_int_equal(uncore_bytes_per_count("-6e-5", "MiB", &b), -EINVAL);
        assert_int_equal(uncore_bytes_per_count("0", "MiB", &b), -EINVAL);
        assert_int_equal(uncore_bytes_per_count("nan", "MiB", &b), -EINVAL);
        assert_int_equal(uncore_bytes_per_count("6e-5x", "MiB", &b), -EINVAL);
        assert_int_equal(uncore_bytes_per_count("6e-5", "furlongs", &b), -EINVAL);
        assert_int_equal(uncore_bytes_per_count("1e308", "GiB", &b), -EINVAL); /* inf */
        assert_near(b, -1, 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(two_imcs_per_package),
            cmocka_unit_test(cpumask_of_another_package),
            cmocka_unit_test(odd_and_missing_scales),
            cmocka_unit_test(malformed_events_skipped),
            cmocka_unit_test(split_formats),
            cmocka_unit_test(amd_umc_and_client_imc),
            cmocka_unit_test(none_here),
            cmocka_unit_test(found_but_not_opened),
            cmocka_unit_test(counts_to_bytes),
            cmocka_unit_test(bytes_per_count_from_scale_and_unit),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
