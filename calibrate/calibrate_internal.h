/* Shared by the calibration drivers (calibrate.c, calibrate_sim.c); not a public contract. */
#pragma once

#include <stdint.h>

#include "pctl/calibrate.h"
#include "pctl/sensor.h"

/* Sums of sensor intervals over the benchmark's CPUs. */
struct calibrate_counts {
        double interval_s, busy_s, instr, energy_j;
        double cycles_cpu[CALIBRATE_MAX_CORES];
        bool has_instr, has_cycles, has_energy;
};

#define CALIBRATE_COUNTS_INIT                                                                      \
        {                                                                                          \
                .has_instr = true, .has_cycles = true, .has_energy = true                          \
        }

void calibrate_sum_counts(const struct sensor_sample *s, const struct cpumask *cpus,
                          struct calibrate_counts *c);
/* whole: the whole run (ΔI, IPC); steady: intervals that ended while it ran (power). */
void calibrate_counts_to_run(const struct calibrate_counts *whole,
                             const struct calibrate_counts *steady, const struct cpumask *cpus,
                             struct calibrate_run *run);
/* Relative wall time of a run at (P, N), for the time-left estimate. */
double calibrate_run_weight(double p, unsigned cores);
void calibrate_progress_report(const struct calibrate_config *cfg, const struct calibrate_run *r,
                               unsigned done, unsigned total, double done_weight,
                               double total_weight, uint64_t start_ns);
