#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/cpumask.h"
#include "pctl/json.h"
#include "pctl/util.h"

static void cpumask_parse_and_format(void **state)
{
        struct cpumask m;
        char buf[64];

        (void)state;
        assert_int_equal(cpumask_parse("0-3,8,10-11\n", &m), 0);
        assert_int_equal(cpumask_count(&m), 7);
        assert_true(cpumask_test(&m, 8) && !cpumask_test(&m, 9));
        assert_int_equal(cpumask_format(&m, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "0-3,8,10-11");
        assert_int_equal(cpumask_parse("", &m), 0);
        assert_true(cpumask_empty(&m));
        assert_int_equal(cpumask_format(&m, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "");
        assert_int_equal(cpumask_parse("4095", &m), 0);
        assert_int_equal(cpumask_next(&m, 0), 4095);
        assert_int_equal(cpumask_format(&m, buf, 3), -ENOBUFS);
}

static void cpumask_rejects_bad_lists(void **state)
{
        struct cpumask m;

        (void)state;
        cpumask_zero(&m);
        cpumask_set(&m, 5);
        assert_int_equal(cpumask_parse("3-1", &m), -EINVAL);
        assert_int_equal(cpumask_parse("1,", &m), -EINVAL);
        assert_int_equal(cpumask_parse("a", &m), -EINVAL);
        assert_int_equal(cpumask_parse("1-", &m), -EINVAL);
        assert_int_equal(cpumask_parse("-1", &m), -EINVAL);
        assert_int_equal(cpumask_parse("4096", &m), -ERANGE);
        assert_int_equal(cpumask_count(&m), 1); /* untouched on error */
}

static void cpumask_set_ops(void **state)
{
        struct cpumask a, b, c;

        (void)state;
        cpumask_parse("0-7", &a);
        cpumask_parse("4-11", &b);
        cpumask_and(&c, &a, &b);
        assert_int_equal(cpumask_count(&c), 4);
        cpumask_or(&c, &a, &b);
        assert_int_equal(cpumask_count(&c), 12);
        cpumask_andnot(&c, &a, &b);
        assert_int_equal(cpumask_count(&c), 4);
        assert_true(cpumask_subset(&c, &a) && !cpumask_subset(&a, &c));
        int n = 0;
        cpumask_foreach (cpu, &c)
                n += cpu;
        assert_int_equal(n, 0 + 1 + 2 + 3);
}

static void strict_number_parsing(void **state)
{
        double d = 1;
        uint64_t u = 1;
        unsigned ui = 1;
        int i = 1;
        bool b;

        (void)state;
        assert_int_equal(parse_double("0.5", &d), 0);
        assert_near(d, 0.5, 0);
        assert_int_equal(parse_double("0.5x", &d), -EINVAL);
        assert_int_equal(parse_double("", &d), -EINVAL);
        assert_int_equal(parse_double("nan", &d), -ERANGE);
        assert_int_equal(parse_double("1e999", &d), -ERANGE);
        assert_int_equal(parse_u64("-1", &u), -EINVAL);
        assert_int_equal(parse_u64("18446744073709551616", &u), -ERANGE);
        assert_int_equal(parse_uint("4294967296", &ui), -ERANGE);
        assert_int_equal(parse_int("-5", &i), 0);
        assert_int_equal(i, -5);
        assert_int_equal(parse_bool("yes", &b), 0);
        assert_true(b);
        assert_int_equal(parse_bool("maybe", &b), -EINVAL);
}

static void json_writer_escapes_and_nulls(void **state)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        struct json j;

        (void)state;
        json_init(&j, f, false);
        json_object_begin(&j);
        json_kv_string(&j, "name", "a\"b\\c\n");
        json_kv_double(&j, "power_w", NAN);
        json_key(&j, "list");
        json_array_begin(&j);
        json_int(&j, -1);
        json_uint(&j, 2);
        json_bool(&j, true);
        json_array_end(&j);
        json_key(&j, "empty");
        json_object_begin(&j);
        json_object_end(&j);
        json_object_end(&j);
        fclose(f);
        assert_string_equal(buf, "{\"name\":\"a\\\"b\\\\c\\n\",\"power_w\":null,"
                                 "\"list\":[-1,2,true],\"empty\":{}}");
        free(buf);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(cpumask_parse_and_format),
    cmocka_unit_test(cpumask_rejects_bad_lists),
    cmocka_unit_test(cpumask_set_ops),
    cmocka_unit_test(strict_number_parsing),
    cmocka_unit_test(json_writer_escapes_and_nulls),
};
PCTL_TEST_MAIN(tests)
