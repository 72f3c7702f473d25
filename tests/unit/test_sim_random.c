/* The random scenario generator (sim/random.c): one seed one text, every draw a scenario the
 * model machine loads, the keys it promises, the counts asked for, and its refusals. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/sim.h"
#include "pctl/sim_random.h"

static void same_seed_same_text(void **state)
{
        char a[8192], b[8192], c[8192];

        assert_int_equal(sim_random_scenario(42, NULL, 0, a, sizeof(a)), 0);
        assert_int_equal(sim_random_scenario(42, NULL, 0, b, sizeof(b)), 0);
        assert_int_equal(sim_random_scenario(43, NULL, 0, c, sizeof(c)), 0);
        assert_string_equal(a, b);
        assert_string_not_equal(a, c);
}

/* 400 draws: every one loads, on each of the four presets, with 1 to 6 apps (never more than
 * the machine's CPUs), and the optional keys all turn up somewhere. */
static void every_draw_loads_and_covers_the_keys(void **state)
{
        static const char *const keys[] = {
            "start_s",       "mem_fraction", "mem_bytes_per_instruction",
            "spin",          "sync",         "imbalance",
            "sleep",         "extra_work",   "phases",
            "progress_units"};
        unsigned seen_preset[SIM_RANDOM_N_PRESETS] = {0}, seen_apps[SIM_RANDOM_MAX_APPS + 1] = {0};
        unsigned seen_key[sizeof(keys) / sizeof(keys[0])] = {0};

        for (unsigned long long seed = 1; seed <= 400; seed++) {
                char text[8192];
                struct sim_machine *m;
                struct sim_error err;
                struct sim_machine_info info;

                assert_int_equal(sim_random_scenario(seed, NULL, 0, text, sizeof(text)), 0);
                if (sim_load_string(text, "random", &m, &err) < 0)
                        fail_msg("seed %llu: %s\n%s", seed, err.all, text);
                sim_machine_info(m, &info);
                assert_true(info.n_apps >= 1 && info.n_apps <= SIM_RANDOM_MAX_APPS);
                assert_true(info.n_apps <= info.n_cpus);
                seen_apps[info.n_apps]++;
                for (unsigned p = 0; p < SIM_RANDOM_N_PRESETS; p++)
                        seen_preset[p] += strcmp(info.preset, sim_random_presets[p]) == 0;
                for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
                        char pat[64];

                        snprintf(pat, sizeof(pat), "\n%s = ", keys[k]);
                        seen_key[k] += strstr(text, pat) != NULL;
                }
                sim_free(m);
        }
        for (unsigned p = 0; p < SIM_RANDOM_N_PRESETS; p++)
                assert_true(seen_preset[p] > 50);
        for (unsigned n = 1; n <= SIM_RANDOM_MAX_APPS; n++)
                assert_true(seen_apps[n] > 5);
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
                if (seen_key[k] < 20)
                        fail_msg("key %s in only %u of 400 draws", keys[k], seen_key[k]);
}

static void preset_and_count_as_asked(void **state)
{
        char text[8192];
        struct sim_machine *m;
        struct sim_error err;
        struct sim_machine_info info;

        assert_int_equal(sim_random_scenario(7, "server-64", 6, text, sizeof(text)), 0);
        assert_int_equal(sim_load_string(text, "random", &m, &err), 0);
        sim_machine_info(m, &info);
        assert_string_equal(info.preset, "server-64");
        assert_int_equal(info.n_apps, 6);
        sim_free(m);
}

static void refusals_leave_the_buffer(void **state)
{
        char text[8192] = "untouched", small[64] = "untouched";

        assert_int_equal(sim_random_scenario(7, "pdp-11", 0, text, sizeof(text)), -EINVAL);
        /* The i7 has 4 CPUs: 5 apps cannot each have one. */
        assert_int_equal(sim_random_scenario(7, "i7-4820k", 5, text, sizeof(text)), -EINVAL);
        assert_int_equal(sim_random_scenario(7, NULL, 0, small, sizeof(small)), -ENOBUFS);
        assert_string_equal(text, "untouched");
        assert_string_equal(small, "untouched");
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(same_seed_same_text),
            cmocka_unit_test(every_draw_loads_and_covers_the_keys),
            cmocka_unit_test(preset_and_count_as_asked),
            cmocka_unit_test(refusals_leave_the_buffer),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
