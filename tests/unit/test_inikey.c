/* The one INI key table: each type's parse and bounds, the wordings readers keep, and that a
 * refused value changes nothing. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/inikey.h"

struct row {
        unsigned u;
        uint64_t u64;
        double d;
        char name[8];
        unsigned choice;
};

static const struct inikey keys[] = {
    {.key = "u",
     .type = INIKEY_UINT,
     .offset = offsetof(struct row, u),
     .min = 10,
     .max = 20,
     .none_ok = true,
     .def = "15"},
    {.key = "d",
     .type = INIKEY_DOUBLE,
     .offset = offsetof(struct row, d),
     .min = 0,
     .max = 1,
     .min_exclusive = true,
     .def = "0.5"},
    {.key = "seed", .type = INIKEY_U64, .offset = offsetof(struct row, u64)},
    {.key = "name",
     .type = INIKEY_NAME,
     .offset = offsetof(struct row, name),
     .size = sizeof(((struct row *)0)->name),
     .def = "edp"},
    {.key = "dvfs",
     .type = INIKEY_CHOICE,
     .offset = offsetof(struct row, choice),
     .choices = "auto|on|off",
     .def = "off"},
    {.key = "outside",
     .type = INIKEY_UINT,
     .offset = offsetof(struct row, u),
     .min = 1,
     .max = 8,
     .wording = INIKEY_SAY_OUTSIDE},
    {.key = "watts",
     .type = INIKEY_DOUBLE,
     .offset = offsetof(struct row, d),
     .max = INFINITY,
     .what = "a number of watts >= 0"},
};

static void expect_refused(const char *key, const char *value, int r, const char *why)
{
        struct row x, before;
        char got[160];

        memset(&x, 0x5a, sizeof(x));
        before = x;
        assert_int_equal(inikey_set(inikey_find(keys, 7, key), &x, value, NULL, got, sizeof(got)),
                         r);
        if (strcmp(got, why) != 0)
                fail_msg("%s = %s: '%s', expected '%s'", key, value, got, why);
        assert_memory_equal(&x, &before, sizeof(x));
}

static void defaults_and_values(void **state)
{
        struct row x = {0};
        char why[160];

        assert_int_equal(inikey_defaults(keys, 7, &x), 0);
        assert_int_equal(x.u, 15);
        assert_near(x.d, 0.5, 0);
        assert_string_equal(x.name, "edp");
        assert_int_equal(x.choice, 2);
        assert_int_equal(inikey_set(&keys[0], &x, "none", NULL, why, sizeof(why)), 0);
        assert_int_equal(x.u, 0);
        assert_int_equal(inikey_set(&keys[2], &x, "18446744073709551615", NULL, why, sizeof(why)),
                         0);
        assert_true(x.u64 == UINT64_MAX);
        assert_null(inikey_find(keys, 7, "nope"));
        inikey_names(keys, 3, why, sizeof(why));
        assert_string_equal(why, "u, d, seed");
}

static void refusals_keep_their_wording(void **state)
{
        expect_refused("u", "x", -EINVAL, "'x' is not a whole number or none");
        expect_refused("u", "9", -ERANGE, "9 is out of bounds [10, 20]");
        expect_refused("u", "99999999999", -ERANGE, "99999999999 is out of bounds [10, 20]");
        expect_refused("d", "0", -ERANGE, "0 is out of bounds (0, 1]");
        expect_refused("d", "inf", -ERANGE, "inf is out of bounds (0, 1]");
        expect_refused("seed", "-1", -EINVAL, "'-1' is not a whole number");
        expect_refused("name", ".x", -EINVAL,
                       "'.x' is not a name (1-7 of A-Z a-z 0-9 _ . -, not starting with . or -)");
        expect_refused("dvfs", "maybe", -EINVAL, "'maybe' is not one of auto|on|off");
        expect_refused("outside", "9", -ERANGE, "9 is outside [1, 8]");
        expect_refused("outside", "99999999999", -EINVAL, "'99999999999' is not a whole number");
        expect_refused("watts", "-1", -ERANGE, "'-1' is not a number of watts >= 0");
        expect_refused("watts", "w", -EINVAL, "'w' is not a number of watts >= 0");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(defaults_and_values),
    cmocka_unit_test(refusals_keep_their_wording),
};

PCTL_TEST_MAIN(tests)
