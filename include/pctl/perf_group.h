/* A perf_event group: events of one CPU (or task, or cgroup) that the kernel schedules onto the
 * PMU together and that one read(2) returns together (PERF_FORMAT_GROUP). Their counts cover the
 * same time slices, so a ratio of two (IPC = instructions / cycles, the frequency from cycles /
 * ref-cycles) never mixes multiplexing slices; one enabled/running pair scales them all. */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PERF_GROUP_MAX 8

struct perf_group {
        unsigned n;                    /* events open, the leader first */
        int fd[PERF_GROUP_MAX];        /* fd[0] is the leader; read through it */
        unsigned slot[PERF_GROUP_MAX]; /* the index in attrs[] of each open event */
        unsigned opened;               /* bit i: attrs[i] is counting */
};

/* One read of the whole group: the values in attrs[] order (0 for an event not open). */
struct perf_group_reading {
        uint64_t enabled_ns, running_ns;
        uint64_t value[PERF_GROUP_MAX];
};

/* Opens attrs[0] as the leader and attrs[1..n-1] as members; read_format is set here. A member
 * the kernel refuses is left out (not in g->opened); a refused leader fails the group with
 * its -errno. The group starts counting at once. */
int perf_group_open(struct perf_group *g, const struct perf_event_attr *attrs, unsigned n,
                    pid_t pid, int cpu, unsigned long flags);
/* Reads every event of the group with one read(2) on the leader. */
int perf_group_read(const struct perf_group *g, struct perf_group_reading *out);
/* Closes the members, then the leader. A zeroed or closed group is fine. */
void perf_group_close(struct perf_group *g);
/* The count of attrs[i] between two readings, scaled by the group's time enabled / running
 * (0 when the group never ran). */
uint64_t perf_group_delta(const struct perf_group_reading *prev,
                          const struct perf_group_reading *now, unsigned i);

/* The frequency a CPU ran at while unhalted: cycles / ref_cycles × the rate ref-cycles count
 * at (the TSC's, kHz). 0 (unknown) when either is 0. */
unsigned perf_freq_khz(uint64_t cycles, uint64_t ref_cycles, unsigned tsc_khz);
struct sensor_counts;
/* Sets c->freq_khz and SENSOR_FREQ from its cycles and ref-cycles when both were measured
 * (in one read: perf's group, LIKWID's fixed counters) and they tell a frequency; leaves both
 * as they are otherwise. */
void perf_counts_freq(struct sensor_counts *c, unsigned tsc_khz);
/* The TSC rate, measured against CLOCK_MONOTONIC_RAW over about interval_ms. -EOPNOTSUPP off
 * x86 or when /proc/cpuinfo lacks constant_tsc (then the TSC is no fixed reference). */
int perf_tsc_khz(unsigned interval_ms, unsigned *out);

/* The stalled-cycle event to try at attempt 0, 1, ...: the kernel's generic
 * stalled-cycles-backend first (AMD, some ARM cores), then on Intel the raw events ESTIMA
 * and LIKWID use: CYCLE_ACTIVITY.STALLS_TOTAL (event 0xa3, umask 0x04, cmask 4; Haswell's
 * CYCLES_NO_EXECUTE has the same code), then RESOURCE_STALLS.ANY (0xa2, umask 0x01; Sandy
 * Bridge to Skylake). false when there is nothing more to try. */
bool perf_stall_attr(unsigned attempt, bool intel, struct perf_event_attr *out);
/* Whether /proc/cpuinfo says GenuineIntel. */
bool perf_cpu_is_intel(void);
