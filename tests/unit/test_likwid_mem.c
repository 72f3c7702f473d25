/* The LIKWID backend's memory traffic (sensors/likwid.c): the event sets it asks LIKWID for
 * (with the memory controllers' CAS / DRAM counters first, then without them), what each
 * event name measures, and counts to bytes. This VM cannot run LIKWID's perfmon (no MSRs):
 * reading the counters is not tested here (docs/memory-traffic.md has the check for a real
 * machine). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl_test.h"
#include "../../sensors/backends.h"

static void event_names_map(void **state)
{
        assert_int_equal(likwid_event_metric("CAS_COUNT_RD"), LIKWID_MEM_LINES);
        assert_int_equal(likwid_event_metric("CAS_COUNT_WR"), LIKWID_MEM_LINES);
        assert_int_equal(likwid_event_metric("DRAM_READS"), LIKWID_MEM_LINES);
        assert_int_equal(likwid_event_metric("DRAM_WRITES"), LIKWID_MEM_LINES);
        assert_int_equal(likwid_event_metric("PWR_PKG_ENERGY"), LIKWID_PKG_ENERGY);
        assert_int_equal(likwid_event_metric("INSTR_RETIRED_ANY"), SENSOR_INSTR);
        assert_int_equal(likwid_event_metric("CYCLE_ACTIVITY_STALLS_TOTAL"), SENSOR_STALLS);
        /* Half the channels per event set on AMD: not read as the package's traffic. */
        assert_int_equal(likwid_event_metric("DRAM_CHANNEL_0"), LIKWID_UNKNOWN);
        assert_int_equal(likwid_event_metric("CAS_COUNT_RD:MBOX0C0"), LIKWID_UNKNOWN);
        assert_int_equal(likwid_event_metric(NULL), LIKWID_UNKNOWN);
}

/* Every event of every set is one the map knows (a misspelt name would be dropped by LIKWID
 * without a word); the first has every channel's read and write, the last none. */
static void event_sets(void **state)
{
        unsigned n_sets = 0;

        for (unsigned a = 0; likwid_event_set(a); a++, n_sets++) {
                char copy[2048], *save = NULL;
                unsigned n_mem = 0;

                assert_true(strlen(likwid_event_set(a)) < sizeof(copy));
                strcpy(copy, likwid_event_set(a));
                for (char *ev = strtok_r(copy, ",", &save); ev; ev = strtok_r(NULL, ",", &save)) {
                        char *colon = strchr(ev, ':');

                        assert_non_null(colon);
                        *colon = '\0';
                        if (likwid_event_metric(ev) == LIKWID_UNKNOWN)
                                fail_msg("set %u: event %s measures nothing pctl reads", a, ev);
                        n_mem += likwid_event_metric(ev) == LIKWID_MEM_LINES;
                }
                if (a == 0) {
                        assert_int_equal(n_mem, 18);
                        for (unsigned m = 0; m < 8; m++) {
                                char want[64];

                                snprintf(want, sizeof(want),
                                         "CAS_COUNT_RD:MBOX%uC0,CAS_COUNT_WR:MBOX%uC1", m, m);
                                assert_non_null(strstr(likwid_event_set(0), want));
                        }
                        assert_non_null(strstr(likwid_event_set(0), "DRAM_READS:MBOX0C1"));
                        assert_non_null(strstr(likwid_event_set(0), "DRAM_WRITES:MBOX0C2"));
                } else {
                        assert_int_equal(n_mem, 0);
                }
        }
        assert_int_equal(n_sets, 2);
        /* The fallback is the first set without the memory controllers. */
        assert_int_equal(
            strncmp(likwid_event_set(0), likwid_event_set(1), strlen(likwid_event_set(1))), 0);
}

static void counts_to_bytes(void **state)
{
        const double lines[] = {100, 200, 0, 1e12};
        const double nan_one[] = {100, NAN};
        const double negative[] = {-1, 5};
        double b = -1;

        assert_int_equal(likwid_mem_bytes(lines, 4, &b), 0);
        assert_near(b, (300 + 1e12) * 64.0, 1);
        b = -1;
        assert_int_equal(likwid_mem_bytes(nan_one, 2, &b), -ENODATA);
        assert_int_equal(likwid_mem_bytes(negative, 2, &b), -ENODATA);
        assert_near(b, -1, 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(event_names_map),
            cmocka_unit_test(event_sets),
            cmocka_unit_test(counts_to_bytes),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
