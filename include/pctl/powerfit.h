/* The package power model learned online from what the sensor shows, for machines with RAPL
 * but neither a declared nor a calibrated model: per interval, the frequency each CPU ran at,
 * its busy fraction, the CPUs apps held, and the measured package energy. Fits
 *   W = static_w + Σ_f core_w(f) · busy_f + idle_w(f) · held_idle_f
 * by least squares over exponentially weighted intervals. A frequency the machine has not run
 * at has no point: the model answers -ENODATA there, nothing is invented. Pure: no I/O. */
#pragma once

#include <stdbool.h>

#include "pctl/cpumask.h"
#include "pctl/model.h"
#include "pctl/sensor.h"

#define POWERFIT_MAX_FREQS 16
/* Weighted intervals a frequency needs before it gets a point. */
#define POWERFIT_MIN_INTERVALS 5.0

struct powerfit;

/* half_life_s: weight of an interval halves over this much sample time (0: 60 s). NULL on
 * allocation failure or a bad half life (errno set). */
struct powerfit *powerfit_new(double half_life_s);
void powerfit_free(struct powerfit *pf);

/* One interval: the sample's package energy and per-CPU busy time, cpu_freq_khz[n_cpus] (0:
 * unknown), and the CPUs held by apps. -ENODATA without energy, -EINVAL for a sample without
 * interval, -ENOSPC when a new frequency finds no free slot; an interval with a CPU busy at
 * an unknown frequency or without a busy figure is skipped (-ENODATA). */
int powerfit_add(struct powerfit *pf, const struct sensor_sample *s, const unsigned *cpu_freq_khz,
                 const struct cpumask *held);

/* The fitted model: a point per frequency seen over POWERFIT_MIN_INTERVALS, declared false.
 * -ENODATA while no frequency has one. */
int powerfit_model(const struct powerfit *pf, struct model_power *out);

/* Weighted intervals behind the fit (0 before the first). */
double powerfit_intervals(const struct powerfit *pf);
