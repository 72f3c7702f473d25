/* A probe for a full package's bandwidth (docs/allocator.md, "A probe for a full package's
 * bandwidth"): a package full from the start where nothing moves keeps its bandwidth a lower
 * bound, so the price of bandwidth never applies there; one probe (the app carrying its traffic
 * more than a third of its cores fewer until the next decision) moves the package's demand
 * while its traffic stays flat, which measures it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "membw_feed.h"
#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl/membw.h"
#include "pctl/simrun.h"
#include "pctl/topology.h"

/* The 2 x 6 Xeon (51.2 GB/s per package) with a1 filling a package alone from its first
 * interval (6 cores of it at 6.6 bytes per instruction ask about 55 GB/s) beside a0, which
 * moves none: bench_random's scenario 91007, whose package stayed a lower bound for 78 s. Its
 * a0 is made a latency-bound app that does not spin (mem_fraction 0.9 for 0.752 with spin
 * 0.873): it holds a frequency domain of its own at a lower clock, so no trial of spreading
 * comes first, as in 91007 before a spinner's stalls stopped being read as memory-bound. */
static const char scenario_91007[] =
    "[machine]\npreset = xeon-e5-2630v2x2\ncounter_noise = 0.0258\n"
    "seed = 826552\n"
    "[app a0]\ninstructions = 1.063e+12\np = 0.7970\nipc = 1.891\n"
    "mem_fraction = 0.9\nsync = 0.069\n"
    "[app a1]\ninstructions = 1.203e+12\np = 0.7604\nipc = 1.758\n"
    "mem_fraction = 0.124\nmem_bytes_per_instruction = 6.577\n"
    "phases = 0.9791:23.4\nprogress_units = 679391\n";

/* bench_random's 92016 (the Xeon Phi, one package): a2 (3.2 bytes per instruction, 1.6 GB/s at
 * most) beside a1 (0.52), which carries most of the package's traffic. */
static const char scenario_92016[] =
    "[machine]\npreset = xeon-phi-7120x\ncounter_noise = 0.0225\nseed = 982806\n"
    "[app a0]\ninstructions = 4.955e+11\np = 0.9548\nipc = 0.908\nspin = 0.715\n"
    "[app a1]\nstart_s = 9.5\ninstructions = 1.715e+12\np = 0.9541\nipc = 1.933\n"
    "mem_bytes_per_instruction = 0.516\nprogress_units = 226227\n"
    "[app a2]\nstart_s = 8.7\ninstructions = 1.002e+11\np = 0.1708\nipc = 1.579\n"
    "mem_bytes_per_instruction = 3.221\nextra_work = 0.1833\nphases = 0.3251:15.1\n"
    "[app a3]\ninstructions = 6.248e+11\np = 0.9648\nipc = 0.917\nsync = 0.048\n";

/* pctl sim run's log over the first stop_s seconds (the caller frees it). */
static char *run_log(const char *ini, double stop_s)
{
        struct simrun_options o = {
            .policy = "edp", .delta_i_rate = NAN, .stop_at_s = stop_s, .log = true};
        struct simrun_result res;
        struct runs_dir d;
        char err[512], *text;
        FILE *f = tmpfile();
        int saved;
        long n;

        assert_non_null(f);
        runs_dir_make(&d, ini);
        o.scenario = d.path;
        fflush(stderr);
        saved = dup(2);
        assert_true(saved >= 0);
        assert_true(dup2(fileno(f), 2) >= 0);
        if (simrun_policy(&o, &res, err, sizeof(err)) < 0) {
                fflush(stderr);
                dup2(saved, 2);
                fail_msg("sim run: %s", err);
        }
        fflush(stderr);
        assert_true(dup2(saved, 2) >= 0);
        close(saved);
        simrun_result_free(&res);
        runs_dir_remove(&d);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        n = ftell(f);
        text = calloc(1, (size_t)n + 1);
        assert_non_null(text);
        rewind(f);
        assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        return text;
}

static unsigned count(const char *text, const char *what)
{
        unsigned n = 0;

        for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
                n++;
        return n;
}

/* Within the first 4 decisions' time (3 s) package 1's bandwidth is measured, at its 51.2
 * GB/s, through one probe; without the probe it stays a lower bound far beyond. */
static void a_full_package_is_measured_by_a_probe(void **state)
{
        char *log = run_log(scenario_91007, 3);

        (void)state;
        assert_int_equal(count(log, "a probe of package 1's memory bandwidth"), 1);
        if (!strstr(log, "package 1: 51.2 GB/s, bandwidth = 51.2 GB/s (measured"))
                fail_msg("package 1's bandwidth not measured within 3 s:\n%s", log);
        free(log);
}

/* An app that carries less than half its package's traffic is not cut for a probe: its cores
 * move too little of the package's demand to be read (92016's a2, cut from 2 cores to 1 without
 * MEMBW_PROBE_SHARE). */
static void an_app_carrying_little_traffic_is_not_probed(void **state)
{
        char *log = run_log(scenario_92016, 0);
        const char *probe = strstr(log, "a probe of package");

        (void)state;
        if (probe)
                fail_msg("a probe in 92016: %.200s", probe > log + 150 ? probe - 150 : log);
        assert_non_null(strstr(log, "memory: a2 (pid 100002): "));
        free(log);
}

/* membw_probe_wanted: a package steady at the most it served, not measured, wants one probe;
 * started, it wants none at that traffic; flat traffic at fewer cores measures it. */
static void a_probe_is_wanted_once_per_traffic(void **state)
{
        struct topology t;
        struct membw *bw = membw_new();
        double gbs;

        (void)state;
        assert_non_null(bw);
        assert_int_equal(topology_synthetic(&t, 2, 6, 1), 0);
        assert_false(membw_probe_wanted(bw, 0)); /* nothing seen */
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 6, 0.5, 1.2, 2); /* 4 bytes per instruction, 20 GB/s */
        assert_int_equal(membw_package(bw, 0)->bound, MEMBW_BOUND_LOWER);
        assert_true(membw_probe_wanted(bw, 0));
        assert_false(membw_probe_wanted(bw, 1)); /* no app there */
        assert_int_equal(membw_probe_started(bw, 0), 0);
        assert_false(membw_probe_wanted(bw, 0));
        assert_int_equal(membw_probe_started(bw, 7), -EINVAL);
        /* Four cores: busy cycles a third fewer, the traffic flat: full at 20 GB/s. */
        for (unsigned i = 0; i < 5; i++)
                membw_feed(bw, &t, 4, 0.5, 0.8, 2);
        assert_int_equal(membw_bandwidth(bw, 0, &gbs), 0);
        assert_near(gbs, 20, 1e-6);
        assert_false(membw_probe_wanted(bw, 0));
        membw_free(bw);
        topology_free(&t);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_probe_is_wanted_once_per_traffic),
    cmocka_unit_test(a_full_package_is_measured_by_a_probe),
    cmocka_unit_test(an_app_carrying_little_traffic_is_not_probed),
};

PCTL_TEST_MAIN(tests)
