#include <errno.h>
#include <math.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/jsonv.h"

static int parse(const char *s, struct jsonv **v)
{
        char err[128];

        return jsonv_parse(s, strlen(s), v, err, sizeof(err));
}

static void parses_a_request(void **state)
{
        struct jsonv *v;
        int64_t pid;
        double d;

        (void)state;
        assert_int_equal(parse(" {\"cmd\": \"adopt\", \"pid\": 1234, \"x\": [1, 2.5e1, true, null],"
                               " \"s\": \"a\\u00e9\\n\\\"\"} ",
                               &v),
                         0);
        assert_string_equal(jsonv_get_string(v, "cmd"), "adopt");
        assert_int_equal(jsonv_get_int(v, "pid", 1, 1 << 22, &pid), 0);
        assert_int_equal(pid, 1234);
        assert_int_equal(jsonv_get(v, "x")->n, 4);
        assert_near(jsonv_get(v, "x")->items[1].num, 25, 0);
        assert_string_equal(jsonv_get_string(v, "s"), "a\xc3\xa9\n\"");
        assert_null(jsonv_get_string(v, "pid"));
        assert_int_equal(jsonv_get_number(v, "cmd", &d), -EINVAL);
        assert_int_equal(jsonv_get_number(v, "nope", &d), -ENOENT);
        assert_int_equal(jsonv_get_int(v, "pid", 1, 100, &pid), -EINVAL);
        jsonv_free(v);
}

static void rejects_malformed(void **state)
{
        static const char *const bad[] = {
            "",
            "{",
            "{\"a\":}",
            "{\"a\" 1}",
            "[1,]",
            "[1 2]",
            "\"abc",
            "tru",
            "nul",
            "{} x",
            "1e999",
            "\"\\q\"",
            "\"\\u12\"",
            "\"a\x01\"",
            "{1:2}",
            "\"\\u0000\"",
            "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]",
        };
        struct jsonv *v = NULL;
        char err[128];

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                err[0] = '\0';
                assert_int_equal(jsonv_parse(bad[i], strlen(bad[i]), &v, err, sizeof(err)),
                                 -EINVAL);
                assert_non_null(strstr(err, "at byte"));
        }
        assert_null(v);
}

static void length_bounds_the_input(void **state)
{
        struct jsonv *v;
        char err[64];

        (void)state;
        /* Only the first 7 bytes count: the rest of the buffer is not read. */
        assert_int_equal(jsonv_parse("[1,2,3]garbage", 7, &v, err, sizeof(err)), 0);
        assert_int_equal(v->n, 3);
        jsonv_free(v);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(parses_a_request),
    cmocka_unit_test(rejects_malformed),
    cmocka_unit_test(length_bounds_the_input),
};
PCTL_TEST_MAIN(tests)
