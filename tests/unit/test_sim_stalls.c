/* The model machine's stalled cycles (SENSOR_STALLS): none for a compute-bound app, the
 * memory share of its cycles for a memory-bound one, the spinning share on the waiting CPUs,
 * more under a memory-bandwidth limit, the cycles' own noise, and unmeasured for an app of
 * measured rows (nothing is known of its stalls). */
#include <math.h>
#include <stdlib.h>

#include "pctl_test.h"
#include "pctl/sim.h"

#define STEP_NS (50 * 1000 * 1000ULL)

struct sums {
        double cycles[64], stalls[64];
        bool all_measured, none_measured;
};

/* Runs the scenario's app to the end on all CPUs, summing the sensor's CPU counts. */
static void run(const char *text, struct sums *out)
{
        struct sim_machine *m = NULL;
        struct sim_error err;
        struct sensor s = {.ops = &sim_sensor_ops};
        struct sensor_config cfg = {0};
        struct sensor_sample smp = {0};

        if (sim_load_string(text, "stalls.ini", &m, &err) < 0)
                fail_msg("scenario rejected: %s", err.all);
        cfg.machine = m;
        assert_int_equal(sim_sensor_ops.open(&s, &cfg), 0);
        assert_true(s.metrics & SENSOR_STALLS);
        smp.n_cpus = s.n_cpus;
        smp.cpu = calloc(s.n_cpus, sizeof(*smp.cpu));
        assert_non_null(smp.cpu);
        *out = (struct sums){.all_measured = true, .none_measured = true};
        while (!sim_done(m)) {
                assert_int_equal(sim_step(m, STEP_NS), 0);
                assert_int_equal(sim_sensor_ops.read(&s, &smp), 0);
                for (unsigned c = 0; c < smp.n_cpus && c < 64; c++) {
                        if (!smp.cpu[c].busy_ns)
                                continue;
                        if (smp.cpu[c].measured & SENSOR_STALLS)
                                out->none_measured = false;
                        else
                                out->all_measured = false;
                        out->cycles[c] += smp.cpu[c].cycles;
                        out->stalls[c] += smp.cpu[c].stalls;
                }
        }
        free(smp.cpu);
        sim_sensor_ops.close(&s);
        sim_free(m);
}

static void compute_bound_does_not_stall(void **state)
{
        struct sums x;

        run("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 4e9\np = 1\nipc = 1.5\n", &x);
        assert_true(x.all_measured);
        for (unsigned c = 0; c < 4; c++) {
                assert_true(x.cycles[c] > 1e8);
                assert_true(x.stalls[c] <= 1e-9 * x.cycles[c] + 4);
        }
}

/* mem_fraction of the single-core time at the top frequency is memory: that share of the
 * cycles stalls. */
static void memory_share_stalls(void **state)
{
        struct sums x;

        run("[machine]\npreset = i7-4820k\n"
            "[app a]\ninstructions = 4e9\np = 1\nipc = 1\nmem_fraction = 0.4\n",
            &x);
        assert_true(x.all_measured);
        for (unsigned c = 0; c < 4; c++)
                assert_near(x.stalls[c] / x.cycles[c], 0.4, 1e-3);
}

/* P = 0.5 on 4 CPUs with spin = 1: the first CPU never stalls; the others spin through the
 * sequential part, (1-P) / ((1-P) + P/4) = 0.8 of their busy cycles. */
static void spinning_stalls(void **state)
{
        struct sums x;

        run("[machine]\npreset = i7-4820k\n"
            "[app a]\ninstructions = 4e9\np = 0.5\nipc = 1\nspin = 1\nthreads = 4\n",
            &x);
        assert_true(x.stalls[0] <= 1e-9 * x.cycles[0] + 4);
        for (unsigned c = 1; c < 4; c++)
                assert_near(x.stalls[c] / x.cycles[c], 0.8, 1e-3);
}

/* Counter noise moves cycles and stalls together (one group): the share stays. */
static void noise_keeps_the_share(void **state)
{
        struct sums x;

        run("[machine]\npreset = i7-4820k\ncounter_noise = 0.05\nseed = 7\n"
            "[app a]\ninstructions = 4e9\np = 1\nipc = 1\nmem_fraction = 0.25\n",
            &x);
        for (unsigned c = 0; c < 4; c++)
                assert_near(x.stalls[c] / x.cycles[c], 0.25, 2e-3);
}

/* The bandwidth limit stretches a memory-hungry app: its cores stay busy, retire less, and
 * stall more than its memory share alone says. */
static void bandwidth_adds_stalls(void **state)
{
        struct sums free_bw, limited;

        run("[machine]\npreset = server-64\n"
            "[app a]\ninstructions = 2e10\np = 1\nipc = 1\nmem_fraction = 0.2\n",
            &free_bw);
        run("[machine]\npreset = server-64\nmem_bandwidth_gbs = 5\n"
            "[app a]\ninstructions = 2e10\np = 1\nipc = 1\nmem_fraction = 0.2\n"
            "mem_bytes_per_instruction = 4\n",
            &limited);
        assert_near(free_bw.stalls[0] / free_bw.cycles[0], 0.2, 1e-3);
        assert_true(limited.stalls[0] / limited.cycles[0] > 0.3);
}

static void rows_app_stalls_unknown(void **state)
{
        struct sums x;

        run("[machine]\npreset = i7-4820k\n"
            "[app rows]\ninstructions = 1e10\nmeasured = 1 3700 2 100\nmeasured = 4 3700 1 80\n",
            &x);
        assert_true(x.none_measured);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(compute_bound_does_not_stall),
            cmocka_unit_test(memory_share_stalls),
            cmocka_unit_test(spinning_stalls),
            cmocka_unit_test(noise_keeps_the_share),
            cmocka_unit_test(bandwidth_adds_stalls),
            cmocka_unit_test(rows_app_stalls_unknown),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
