#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/cpumask.h"
#include "pctl/jsonfmt.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

static void cpumask_parse_and_format(void **state)
{
        struct cpumask m;
        char buf[64];

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

static char *print_to_string(struct json_object *o, bool pretty)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        assert_non_null(f);
        assert_int_equal(jsonfmt_print(f, o, pretty), 0);
        fclose(f);
        return buf;
}

/* The rules pctl adds to json-c: unknown figures are null, numbers are %.10g as they always
 * were (json-c would print 1 as 1.0 and NaN as NaN), a missing string is null, "/" is not
 * escaped, plain documents are one line. */
static void json_numbers_nulls_and_plain_layout(void **state)
{
        struct json_object *o = json_object_new_object(), *list = json_object_new_array();
        char *text;

        json_object_object_add(o, "name", jsonfmt_string("a\"b\\c\n/d"));
        json_object_object_add(o, "power_w", jsonfmt_double(NAN));
        json_object_object_add(o, "energy_j", jsonfmt_double(-INFINITY));
        json_object_object_add(o, "why", jsonfmt_string(NULL));
        json_object_array_add(list, jsonfmt_double(1.0));
        json_object_array_add(list, jsonfmt_double(0.1 + 0.2));
        json_object_array_add(list, jsonfmt_double(1.0 / 3));
        json_object_array_add(list, jsonfmt_double(2.5e-7));
        json_object_array_add(list, jsonfmt_double(6.6e14));
        json_object_array_add(list, json_object_new_int64(-1));
        json_object_array_add(list, json_object_new_uint64(UINT64_MAX));
        json_object_array_add(list, json_object_new_boolean(true));
        json_object_object_add(o, "list", list);
        json_object_object_add(o, "empty", json_object_new_object());
        text = print_to_string(o, false);
        assert_string_equal(text, "{\"name\":\"a\\\"b\\\\c\\n/d\",\"power_w\":null,"
                                  "\"energy_j\":null,\"why\":null,"
                                  "\"list\":[1,0.3,0.3333333333,2.5e-07,6.6e+14,-1,"
                                  "18446744073709551615,true],\"empty\":{}}\n");
        free(text);
        json_object_put(o);
}

/* Pretty output: two-space indent, "key": value, empty containers stay [] and {}. */
static void json_pretty_layout(void **state)
{
        struct json_object *o = json_object_new_object(), *list = json_object_new_array();
        char *text;

        json_object_array_add(list, jsonfmt_double(1.5));
        json_object_object_add(o, "rows", list);
        json_object_object_add(o, "none", json_object_new_array());
        json_object_object_add(o, "match", json_object_new_object());
        text = print_to_string(o, true);
        assert_string_equal(text, "{\n  \"rows\": [\n    1.5\n  ],\n  \"none\": [],\n"
                                  "  \"match\": {}\n}\n");
        free(text);
        json_object_put(o);
}

/* One helper for every count a person reads: "1 core", never "1 cores"; a "%.0f" figure is
 * judged as printed. */
static void plural_follows_the_printed_count(void **state)
{
        char text[64];

        (void)state;
        assert_string_equal(plural_s(1), "");
        assert_string_equal(plural_s(0), "s");
        assert_string_equal(plural_s(2), "s");
        assert_string_equal(plural_s(1.5), "s");
        snprintf(text, sizeof(text), "%.0f core%s", 0.6, plural_s(textfmt_rounded(0.6)));
        assert_string_equal(text, "1 core");
        snprintf(text, sizeof(text), "%.0f core%s", 1.5, plural_s(textfmt_rounded(1.5)));
        assert_string_equal(text, "2 cores");
        snprintf(text, sizeof(text), "%.0f core%s", 0.5, plural_s(textfmt_rounded(0.5)));
        assert_string_equal(text, "0 cores");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(cpumask_parse_and_format),
    cmocka_unit_test(cpumask_rejects_bad_lists),
    cmocka_unit_test(cpumask_set_ops),
    cmocka_unit_test(strict_number_parsing),
    cmocka_unit_test(json_numbers_nulls_and_plain_layout),
    cmocka_unit_test(json_pretty_layout),
    cmocka_unit_test(plural_follows_the_printed_count),
};
PCTL_TEST_MAIN(tests)
