/* The journal fields of a move (app_packages_fields, manager/report.c): PCTL_PACKAGES= as the run
 * report's `packages` says them, PCTL_SPREADING= where the allocator spread the app, "unknown"
 * where a CPU's package is not known, and nothing on a machine of one package, whose log line
 * says nothing of packages either. What reaches the journal itself:
 * integration.test_journal_packages_sim. */
#include "pctl_test.h"
#include "pctl_test_sim.h"

#include <string.h>

#include "../../manager/manager_internal.h"

/* bench_random's seed 91002 alone on the 2 x 6 Xeon: its cores stall on memory and the
 * allocator spreads it over both packages. */
static const char xeon[] =
    "[machine]\npreset = xeon-e5-2630v2x2\ncounter_noise = 0.0099\nseed = 15831\n"
    "[app a0]\ninstructions = 1.337e+12\np = 0.9810\nipc = 1.557\nmem_fraction = 0.104\n"
    "sync = 0.211\nmem_bytes_per_instruction = 4.487\n";

static const char *field(const struct app_packages_fields *f, const char *name)
{
        for (unsigned k = 0; k < f->n; k++)
                if (!strcmp(f->v[k].name, name))
                        return f->v[k].value;
        return NULL;
}

static void spread_app_has_its_packages_and_why(void **state)
{
        struct sim_manager f;
        struct app_packages p = {0};
        struct app_packages_fields fields;
        unsigned step;

        sim_manager_open(&f, xeon, "edp", 1);
        for (step = 0; step < 400; step++) {
                sim_manager_tick(&f, step);
                app_packages(f.m, 0, &p);
                if (p.spreading && !strcmp(p.spreading, "alone"))
                        break;
        }
        if (step == 400)
                fail_msg("seed 91002's app was not spread alone in 40 s");
        app_packages_fields(f.m, &p, &fields);
        assert_int_equal(fields.n, 2);
        assert_string_equal(field(&fields, "PCTL_PACKAGES"), "0,1");
        assert_string_equal(field(&fields, "PCTL_SPREADING"), "alone");

        /* A CPU whose package is not known: unknown, and no spreading said. */
        cpumask_foreach (cpu, &f.m->apps[0].cpus)
                if (cpu >= 6)
                        cpumask_set(&f.pf->topo.package_unread, (unsigned)cpu);
        app_packages(f.m, 0, &p);
        app_packages_fields(f.m, &p, &fields);
        assert_int_equal(fields.n, 1);
        assert_string_equal(field(&fields, "PCTL_PACKAGES"), "unknown");
        sim_manager_close(&f);
}

/* On one package of two: the field, without a spreading. */
static void one_package_of_two(void **state)
{
        struct sim_manager f;
        struct app_packages p = {.n = 1};
        struct app_packages_fields fields;

        sim_manager_open(&f, xeon, "edp", 1);
        cpumask_zero(&p.pkgs);
        cpumask_set(&p.pkgs, 1);
        app_packages_fields(f.m, &p, &fields);
        assert_int_equal(fields.n, 1);
        assert_string_equal(field(&fields, "PCTL_PACKAGES"), "1");
        assert_null(field(&fields, "PCTL_SPREADING"));
        sim_manager_close(&f);
}

/* The i7 has one package: no field, as the log line says nothing of packages there. */
static void one_package_machine_has_none(void **state)
{
        static const char i7[] = "[machine]\npreset = i7-4820k\n"
                                 "[app a]\ninstructions = 1.5e10\np = 0.8\n";
        struct sim_manager f;
        struct app_packages p;
        struct app_packages_fields fields;

        sim_manager_open(&f, i7, "edp", 1);
        for (unsigned step = 0; step < 20; step++)
                sim_manager_tick(&f, step);
        app_packages(f.m, 0, &p);
        assert_int_equal(p.n, 1);
        app_packages_fields(f.m, &p, &fields);
        assert_int_equal(fields.n, 0);
        sim_manager_close(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(spread_app_has_its_packages_and_why),
    cmocka_unit_test(one_package_of_two),
    cmocka_unit_test(one_package_machine_has_none),
};

PCTL_TEST_MAIN(tests)
