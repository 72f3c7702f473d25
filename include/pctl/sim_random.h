/* Scenarios of the model machine drawn at random from its own keys (docs/sim.md, "Random
 * scenarios"): a preset, 1-6 apps with random P, IPC, memory share and traffic, spin, sync,
 * imbalance, sleep, extra work, a phase change and start times, and counter noise. The same
 * seed gives the same text on every machine (the generator is its own: splitmix64, no libc
 * rand). Used by bench_random and `pctl sim random`. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The presets the generator draws from, in its order. */
#define SIM_RANDOM_N_PRESETS 4
extern const char *const sim_random_presets[SIM_RANDOM_N_PRESETS];

/* At most this many apps (and never more than the machine's CPUs). */
#define SIM_RANDOM_MAX_APPS 6

/* Writes the scenario for `seed` as INI text into buf. preset NULL: drawn from the four;
 * n_apps 0: drawn (one app a third of the time, else 2 to the maximum). -EINVAL for an
 * unknown preset or too many apps, -ENOBUFS when buf is too small; buf is written only on
 * success. */
int sim_random_scenario(uint64_t seed, const char *preset, unsigned n_apps, char *buf, size_t size);
