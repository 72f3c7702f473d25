/* Memory traffic per package from the memory controllers' own counters (perf_event uncore
 * PMUs), found in sysfs the way perf finds them:
 *
 *   - Intel servers: uncore_imc_N, one PMU per memory channel, events cas_count_read and
 *     cas_count_write (one 64-byte line per CAS; sysfs gives the scale in MiB);
 *   - Intel clients: uncore_imc, events data_reads and data_writes (free-running, MiB);
 *   - AMD Zen 4 and later (Linux 6.8+): amd_umc_N, events umc_cas_cmd.rd / .wr, which sysfs
 *     does not name (perf takes them from its own tables): event 0x0a with rdwrmask 1 / 2.
 *
 * Each PMU's cpumask names the CPU to open it on, one per package it serves; that CPU's
 * physical_package_id is the package its traffic is counted for. The counters are 64 bits
 * (no wrap); multiplexed readings are scaled by time enabled / running. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pctl/perf_group.h"
#include "pctl/sensor.h"

#define UNCORE_MAX_BOXES 128

/* A perf_event_attr's config words for one event. */
struct uncore_config {
        uint64_t config, config1, config2;
};

/* One PMU on one CPU: its read and write events, and what a count is in bytes. */
struct uncore_box {
        char pmu[48];
        uint32_t type;
        int cpu;
        unsigned package;
        struct uncore_config ev[2]; /* read, write */
        double bytes_per_count[2];
};

struct uncore_imc {
        unsigned n_boxes;
        struct uncore_box box[UNCORE_MAX_BOXES];
        unsigned n_packages; /* highest package served + 1 */
        unsigned n_skipped;  /* PMUs found but not usable (why says the first) */
};

/* Finds the memory-controller PMUs under sysfs_dir (normally "/sys"; tests give a fake tree).
 * Returns 0 with at least one box, or -ENOENT when there is none, -EINVAL when every one found
 * was malformed; why (when not NULL) says what was found or what was wrong, naming the PMU
 * and file. */
int uncore_imc_discover(const char *sysfs_dir, struct uncore_imc *out, char *why, size_t why_size);

/* Packs an event string from sysfs ("event=0x04,umask=0x03"; a term without a value is 1)
 * with the PMU's format files (format/<term>: "config:0-7", "config1:8", "config:0-7,32-35").
 * -EINVAL for a term without a format, a value wider than its field, or garbage. */
int uncore_event_parse(const char *sysfs_dir, const char *pmu, const char *event,
                       struct uncore_config *out);

/* Bytes per count from the event's .scale and .unit files: both absent = one 64-byte cache
 * line per count (a CAS command); "MiB", "MB", "KiB", "KB", "GiB", "GB", "B" or "bytes" times
 * the scale. -EINVAL for an unknown unit, a scale without a unit, a bad or non-positive scale. */
int uncore_bytes_per_count(const char *scale, const char *unit, double *out);

/* Bytes between two readings of an event: the count's delta scaled by time enabled / running
 * (multiplexing), times bytes_per_count. -ENODATA when the event never ran in between (the
 * traffic is unknown, not 0), -ERANGE when a reading went back. */
int uncore_delta_bytes(uint64_t prev_count, uint64_t now_count, uint64_t prev_enabled_ns,
                       uint64_t now_enabled_ns, uint64_t prev_running_ns, uint64_t now_running_ns,
                       double bytes_per_count, double *bytes);

/* Open counters: the read and the write event of each box, each on its own (uncore PMUs need
 * not take groups), each scaled by its own time enabled / running. */
struct uncore_counters {
        struct uncore_imc imc;
        struct perf_group grp[UNCORE_MAX_BOXES][2];
        struct perf_group_reading prev[UNCORE_MAX_BOXES][2];
};

/* Discovers and opens every box system-wide (pid -1, its CPU). -errno of the first box that
 * does not open (EACCES/EPERM: privilege), with why saying which. */
int uncore_counters_open(struct uncore_counters *u, char *why, size_t why_size);
/* Bytes per package since the previous read into mem_bytes[0..n_packages); -ENODATA when a
 * box did not count in between (the interval's traffic is then unknown). */
int uncore_counters_read(struct uncore_counters *u, double *mem_bytes);
void uncore_counters_close(struct uncore_counters *u);
