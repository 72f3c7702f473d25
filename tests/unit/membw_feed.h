/* Feeding membw by hand (tests/unit/test_membw.c, test_bwprobe.c): traffic and demand move as
 * a case needs, not as the model machine's cap lets them. */
#pragma once

#include "pctl/membw.h"
#include "pctl/sensor.h"
#include "pctl/topology.h"
#include "pctl_test.h"

/* One interval (100 ms) of package 0's traffic: app 1 alone on CPUs 0..cores-1 retiring
 * `instr` G instructions at `cycles` G busy cycles, the package moving `gb` GB. */
static inline void membw_feed(struct membw *bw, const struct topology *t, unsigned cores,
                              double instr, double cycles, double gb)
{
        struct sensor_sample s = {0};
        struct membw_app a = {.id = 1, .target = -1, .freq_khz = 2600000, .i0 = instr * 1e9};

        assert_int_equal(sensor_sample_alloc(&s, t->n_cpus, 0), 0);
        s.interval_ns = 100000000;
        s.n_packages = t->n_packages;
        s.mem_measured = true;
        for (unsigned c = 0; c < cores; c++) {
                cpumask_set(&a.cpus, c);
                s.cpu[c] = (struct sensor_counts){.measured = SENSOR_INSTR | SENSOR_CYCLES,
                                                  .instr = (uint64_t)(instr * 1e9 / cores),
                                                  .cycles = (uint64_t)(cycles * 1e9 / cores)};
        }
        s.mem_bytes[0] = gb * 1e9;
        assert_int_equal(membw_update(bw, &s, t, &a, 1), 0);
        sensor_sample_free(&s);
}
