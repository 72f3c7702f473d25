/* A policy reload that narrows a settled app's bounds moves it inside them at once: pctld's
 * manager on the model machine, an app settled under edp, then its policy reloaded with fewer
 * cores. Before, a settled app took no decision and held where it was. (Clocks: the allocator's
 * own test, unit.test_allocator_phases.settled_to_search_when_out_of_bounds; this platform sets
 * none without DVFS.) */
#include "pctl_test.h"
#include "pctl_test_sim.h"

#include <stdio.h>
#include <unistd.h>

#include "../../manager/manager_internal.h"
#include "pctl/config.h"
#include "pctl/policy.h"

#define SCENARIO                                                                                   \
        "[machine]\npreset = i7-4820k\n"                                                           \
        "[app a]\ninstructions = 4e12\np = 0.95\nipc = 1.5\n"

/* Reloads a policy set holding only `text` (a [policy edp] section). */
static void reload(struct sim_manager *f, const char *text)
{
        struct config_problems p = {0};
        struct policy_set set = {0};
        struct config conf;
        char path[64], err[256];

        pctl_test_temp_file(path, sizeof(path), text);
        if (policy_set_load_file(path, &set, &p) != 0) {
                config_problems_print(&p, stderr);
                fail_msg("the test's policy was refused");
        }
        unlink(path);
        config_init(&conf);
        (void)strscpy(conf.default_policy, "edp", sizeof(conf.default_policy));
        if (manager_reconfigure(f->m, &conf, &set, err, sizeof(err)) != 0)
                fail_msg("reload refused: %s", err);
        policy_set_free(&set);
}

static void narrowed_bounds_move_a_settled_app(void **state)
{
        struct sim_manager f;
        const struct mapp *a;
        unsigned step = 0;

        sim_manager_open(&f, SCENARIO, "edp", 1);
        a = &f.m->apps[0];
        /* Settled: a minute of virtual time, on more than 2 cores. */
        for (; step < 600; step++)
                sim_manager_tick(&f, step);
        assert_int_equal(f.m->n_apps, 1);
        if (cpumask_count(&a->cpus) <= 2)
                fail_msg("not a case for the test: settled at %u cores", cpumask_count(&a->cpus));
        reload(&f, "[policy edp]\nobjective = edp\nmax_cores = 2\n");
        /* Its next decision (one second) moves it. */
        for (unsigned end = step + 20; step < end; step++)
                sim_manager_tick(&f, step);
        a = &f.m->apps[0];
        if (cpumask_count(&a->cpus) > 2)
                fail_msg("still at %u cores after the reload (%s)", cpumask_count(&a->cpus),
                         f.m->alloc[0].reason);
        /* And stays inside them. */
        for (unsigned end = step + 300; step < end; step++) {
                sim_manager_tick(&f, step);
                assert_true(cpumask_count(&f.m->apps[0].cpus) <= 2);
        }
        sim_manager_close(&f);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(narrowed_bounds_move_a_settled_app),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
