#define _GNU_SOURCE /* CPU_SET, sched_setaffinity */
/* perf_event groups for real, with software events (this machine has no hardware counters):
 * task-clock and cpu-clock of this process, its page faults and minor faults, and the page
 * faults of CPU 0, each set opened as one group and read with PERF_FORMAT_GROUP in one read(2),
 * a member the kernel refuses left out with the others still in their slots, the group's one
 * enabled/running pair scaling every member, the frequency from cycles / ref-cycles, the TSC
 * rate, and the perf backend's probe failing with the reason where hardware events do not
 * exist. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/perf_group.h"
#include "pctl/sensor.h"
#include "pctl/sensor.h"
#include "pctl/util.h"

static void spin_ms(unsigned ms)
{
        uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
        volatile uint64_t x = 0;

        while (now_ns() < end)
                x++;
}

/* Spins until this thread has run ms of CPU time: whatever the load, the task's own events
 * then have that much to count (a wall-time spin may run 5 ms of 40 on a loaded machine). */
static void spin_cpu_ms(unsigned ms)
{
        struct timespec ts;
        uint64_t start, now;
        volatile uint64_t x = 0;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        start = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
        do {
                x++;
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
                now = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
        } while (now - start < (uint64_t)ms * 1000000u);
}

/* Touches `pages` fresh 4 KiB pages, one page fault each (no transparent huge pages). */
static void fault_pages(size_t pages)
{
        size_t size = pages * 4096;
        char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        assert_true(mem != MAP_FAILED);
        madvise(mem, size, MADV_NOHUGEPAGE);
        for (size_t i = 0; i < size; i += 4096)
                mem[i] = 1;
        munmap(mem, size);
}

static struct perf_event_attr sw(uint64_t config)
{
        return (struct perf_event_attr){.type = PERF_TYPE_SOFTWARE, .config = config};
}

/* This process's clock twice, one group, one read(2): both members count the same time.
 * (A cpu-clock member of a task-clock group reads 0 in most runs on this kernel: the kernel's
 * doing, so the members here are both task-clocks.) */
static void clock_group_per_task(void **state)
{
        struct perf_event_attr a[2] = {sw(PERF_COUNT_SW_TASK_CLOCK), sw(PERF_COUNT_SW_TASK_CLOCK)};
        struct perf_group g;
        struct perf_group_reading r0, r1;
        uint64_t enabled_ns;
        int r;

        r = perf_group_open(&g, a, 2, 0, -1, 0);
        if (r == -EACCES || r == -EPERM)
                skip();
        assert_int_equal(r, 0);
        assert_int_equal(g.opened, 3u);
        assert_int_equal(perf_group_read(&g, &r0), 0);
        spin_cpu_ms(40);
        assert_int_equal(perf_group_read(&g, &r1), 0);
        /* A task's events are enabled while it runs: 40 ms of CPU time, however long the wall
         * time. */
        enabled_ns = r1.enabled_ns - r0.enabled_ns;
        assert_true(enabled_ns > 5000000u);
        for (unsigned i = 0; i < 2; i++) {
                uint64_t ns = perf_group_delta(&r0, &r1, i);

                if (ns <= 1000000u || ns > enabled_ns + 1000000u)
                        fail_msg("event %u counted %llu ns of %llu ns enabled", i,
                                 (unsigned long long)ns, (unsigned long long)enabled_ns);
        }
        perf_group_close(&g);
}

/* This process's page faults and minor page faults, one group: both from one read(2). Read
 * together, the minor faults never exceed all faults. (A clock event and a fault event do not
 * mix: in such a group this kernel counts the member as 0.) */
static void software_group_reads_together(void **state)
{
        struct perf_event_attr a[3] = {sw(PERF_COUNT_SW_PAGE_FAULTS),
                                       sw(PERF_COUNT_SW_PAGE_FAULTS_MIN),
                                       sw(PERF_COUNT_SW_CONTEXT_SWITCHES)};
        struct perf_group g;
        struct perf_group_reading r0, r1;
        uint64_t faults, minor;
        int r;

        r = perf_group_open(&g, a, 3, 0, -1, 0);
        if (r == -EACCES || r == -EPERM)
                skip();
        assert_int_equal(r, 0);
        assert_int_equal(g.n, 3);
        assert_int_equal(g.opened, 7u);
        assert_int_equal(perf_group_read(&g, &r0), 0);
        fault_pages(1024);
        assert_int_equal(perf_group_read(&g, &r1), 0);
        assert_true(r1.running_ns - r0.running_ns <= r1.enabled_ns - r0.enabled_ns);
        faults = perf_group_delta(&r0, &r1, 0);
        minor = perf_group_delta(&r0, &r1, 1);
        assert_true(r1.enabled_ns > r0.enabled_ns);
        assert_true(faults >= 1024 && minor >= 1024);
        assert_true(minor <= faults);
        perf_group_close(&g);
        assert_int_equal(g.n, 0);
}

/* The sensor's shape: one group per CPU (pid -1), here CPU 0 while this thread runs there and
 * takes page faults on it. */
static void per_cpu_software_group(void **state)
{
        struct perf_event_attr a[2] = {sw(PERF_COUNT_SW_PAGE_FAULTS),
                                       sw(PERF_COUNT_SW_PAGE_FAULTS_MIN)};
        struct perf_group g;
        struct perf_group_reading r0, r1;
        cpu_set_t one, old;
        int r;

        r = perf_group_open(&g, a, 2, -1, 0, 0);
        if (r == -EACCES || r == -EPERM) {
                print_message("SKIP: counting CPU-wide needs root or CAP_PERFMON\n");
                skip();
        }
        assert_int_equal(r, 0);
        assert_int_equal(g.opened, 3u);
        assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
        assert_int_equal(perf_group_read(&g, &r0), 0);
        fault_pages(1024);
        spin_ms(30);
        assert_int_equal(perf_group_read(&g, &r1), 0);
        assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
        /* A CPU's events are enabled the whole wall time, whoever runs. */
        assert_true(r1.enabled_ns - r0.enabled_ns >= 25000000u);
        assert_true(perf_group_delta(&r0, &r1, 0) >= 1024);
        assert_true(perf_group_delta(&r0, &r1, 1) >= 1024);
        assert_true(perf_group_delta(&r0, &r1, 1) <= perf_group_delta(&r0, &r1, 0));
        perf_group_close(&g);
}

/* A member the kernel does not have is left out; the others keep their slots. The member
 * after the hole is a second task-clock: a cpu-clock member of a task-clock group reads 0 on
 * this kernel now and then (5 runs in 12), which is the kernel's, not the group's. */
static void refused_member_left_out_refused_leader_fails(void **state)
{
        struct perf_event_attr a[3] = {sw(PERF_COUNT_SW_TASK_CLOCK), sw(PERF_COUNT_SW_MAX),
                                       sw(PERF_COUNT_SW_TASK_CLOCK)};
        struct perf_group g;
        struct perf_group_reading r0, r1;

        assert_int_equal(perf_group_open(&g, a, 3, 0, -1, 0), 0);
        assert_int_equal(g.n, 2);
        assert_int_equal(g.opened, 5u); /* slots 0 and 2 */
        assert_int_equal(perf_group_read(&g, &r0), 0);
        spin_cpu_ms(20);
        assert_int_equal(perf_group_read(&g, &r1), 0);
        assert_int_equal(r1.value[1], 0);
        assert_true(perf_group_delta(&r0, &r1, 0) > 0);
        assert_true(perf_group_delta(&r0, &r1, 2) > 0);
        perf_group_close(&g);

        /* No leader, no group: its errno. */
        assert_int_equal(perf_group_open(&g, &a[1], 2, 0, -1, 0), -ENOENT);
        assert_int_equal(g.n, 0);
        assert_int_equal(perf_group_open(&g, a, 0, 0, -1, 0), -EINVAL);
}

/* One enabled/running pair for the group: every member scaled alike, ratios kept. */
static void delta_scales_by_the_groups_time(void **state)
{
        struct perf_group_reading r0 = {
            .enabled_ns = 1000, .running_ns = 1000, .value = {100, 300}};
        struct perf_group_reading r1 = {
            .enabled_ns = 3000, .running_ns = 2000, .value = {1100, 2300}};
        struct perf_group_reading r2 = r1;

        /* On the PMU for half the interval: counts doubled. */
        assert_int_equal(perf_group_delta(&r0, &r1, 0), 2000);
        assert_int_equal(perf_group_delta(&r0, &r1, 1), 4000);
        /* Not on the PMU at all: nothing to scale, 0 rather than a guess. */
        r2.enabled_ns += 1000;
        assert_int_equal(perf_group_delta(&r1, &r2, 0), 0);
}

static void frequency_from_cycles_and_ref_cycles(void **state)
{
        /* 3e9 cycles while the TSC-rate clock counted 2e9 at 2 GHz: 3 GHz. */
        assert_int_equal(perf_freq_khz(3000000000u, 2000000000u, 2000000), 3000000);
        assert_int_equal(perf_freq_khz(800000000u, 1000000000u, 2600000), 2080000);
        /* Unknown stays unknown. */
        assert_int_equal(perf_freq_khz(3000000000u, 0, 2000000), 0);
        assert_int_equal(perf_freq_khz(0, 2000000000u, 2000000), 0);
        assert_int_equal(perf_freq_khz(3000000000u, 2000000000u, 0), 0);
}

/* What perf and LIKWID fill in a sample: the frequency only when cycles and ref-cycles were
 * both measured (LIKWID's CPU_CLK_UNHALTED_CORE and _REF) and tell one. */
static void counts_get_a_frequency_from_both_counters(void **state)
{
        struct sensor_counts c = {.cycles = 3000000000u,
                                  .ref_cycles = 2000000000u,
                                  .measured = SENSOR_CYCLES | SENSOR_REF_CYCLES};

        perf_counts_freq(&c, 2000000);
        assert_int_equal(c.freq_khz, 3000000);
        assert_true(c.measured & SENSOR_FREQ);
        c = (struct sensor_counts){
            .cycles = 3000000000u, .ref_cycles = 2000000000u, .measured = SENSOR_CYCLES};
        perf_counts_freq(&c, 2000000);
        assert_int_equal(c.freq_khz, 0);
        assert_false(c.measured & SENSOR_FREQ);
        /* A CPU that never left idle: no ref-cycles, no frequency. */
        c = (struct sensor_counts){.measured = SENSOR_CYCLES | SENSOR_REF_CYCLES};
        perf_counts_freq(&c, 2000000);
        assert_false(c.measured & SENSOR_FREQ);
}

/* Where the kernel reports the TSC rate as "cpu MHz" (no cpufreq driver, no APERF/MPERF: a
 * VM like this one), the measured rate agrees with it. */
static void tsc_rate_is_measured(void **state)
{
        char line[8192];
        double mhz = 0;
        bool aperf = false;
        unsigned khz;
        FILE *f;
        int r;

        r = perf_tsc_khz(50, &khz);
        if (r == -EOPNOTSUPP)
                skip();
        assert_int_equal(r, 0);
        assert_true(khz > 100000 && khz < 10000000);
        f = fopen("/proc/cpuinfo", "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                if (!mhz && !strncmp(line, "cpu MHz", 7))
                        mhz = atof(strchr(line, ':') + 1);
                if (!strncmp(line, "flags", 5) && strstr(line, " aperfmperf"))
                        aperf = true;
        }
        fclose(f);
        if (aperf || mhz == 0 || access("/sys/devices/system/cpu/cpufreq/policy0", F_OK) == 0)
                return;
        assert_near(khz / 1000.0, mhz, 0.01 * mhz);
}

/* The perf backend opens instructions, cycles, ref-cycles as a group: where the CPU exposes
 * no hardware events the probe says so, with the errno. */
static void hardware_group_refused_with_reason(void **state)
{
        const struct sensor_ops *perf = sensor_find("perf");
        struct sensor_probe p;
        char want[128];

        assert_non_null(perf);
        assert_int_equal(perf->probe(NULL, &p), 0);
        if (p.available) {
                print_message("SKIP: this machine has hardware counters (%s)\n", p.reason);
                skip();
        }
        snprintf(want, sizeof(want), "(perf_event_open instructions: %s", strerror(-p.err));
        assert_true(p.err < 0);
        assert_non_null(strstr(p.reason, want));
        assert_true(!strncmp(p.reason, "perf: ", 6));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(clock_group_per_task),
    cmocka_unit_test(software_group_reads_together),
    cmocka_unit_test(per_cpu_software_group),
    cmocka_unit_test(refused_member_left_out_refused_leader_fails),
    cmocka_unit_test(delta_scales_by_the_groups_time),
    cmocka_unit_test(frequency_from_cycles_and_ref_cycles),
    cmocka_unit_test(counts_get_a_frequency_from_both_counters),
    cmocka_unit_test(tsc_rate_is_measured),
    cmocka_unit_test(hardware_group_refused_with_reason),
};

PCTL_TEST_MAIN(tests)
