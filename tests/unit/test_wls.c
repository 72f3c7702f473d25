/* The one least-squares solver: recovers exact coefficients, weights old rows by wls_scale,
 * refuses what the rows cannot tell apart unless a ridge is asked for, and solves the leading
 * block of a larger system. */
#include <errno.h>
#include <math.h>

#include "pctl_test.h"
#include "pctl/wls.h"

/* y = 2 + 3 a - b over a few rows, no noise. */
static void recovers_exact_coefficients(void **state)
{
        static const double rows[][3] = {{1, 0, 0}, {1, 1, 0}, {1, 0, 1}, {1, 2, 3}, {1, 5, -1}};
        double ata[9] = {0}, atb[3] = {0}, x[3];

        for (unsigned i = 0; i < 5; i++)
                wls_add(ata, atb, 3, rows[i], 2 + 3 * rows[i][1] - rows[i][2]);
        assert_int_equal(wls_solve(ata, atb, 3, 3, 0, 1e-12, x), 0);
        assert_near(x[0], 2, 1e-9);
        assert_near(x[1], 3, 1e-9);
        assert_near(x[2], -1, 1e-9);
        /* The normal equations are not consumed: a second solve gives the same. */
        assert_near(ata[0], 5, 0);
        assert_int_equal(wls_solve(ata, atb, 3, 3, 0, 1e-12, x), 0);
        assert_near(x[1], 3, 1e-9);
}

/* Old rows say y = 1, new rows y = 3 (fit of a constant): scaling the old ones by w leaves
 * their weight at w against 1. */
static void scale_weights_old_rows(void **state)
{
        double ata[1] = {0}, atb[1] = {0}, x[1], one = 1;

        wls_add(ata, atb, 1, &one, 1);
        wls_scale(ata, atb, 1, 0.25);
        wls_add(ata, atb, 1, &one, 3);
        assert_int_equal(wls_solve(ata, atb, 1, 1, 0, 0, x), 0);
        assert_near(x[0], (0.25 * 1 + 3) / 1.25, 1e-12);
}

/* Two unknowns always seen together cannot be told apart. */
static void singular_needs_a_ridge(void **state)
{
        double ata[4] = {0}, atb[2] = {0}, x[2] = {-7, -7}, row[2] = {1, 1};

        wls_add(ata, atb, 2, row, 4);
        wls_add(ata, atb, 2, row, 4);
        assert_int_equal(wls_solve(ata, atb, 2, 2, 0, 1e-12, x), -EDOM);
        assert_near(x[0], -7, 0); /* unchanged on failure */
        assert_int_equal(wls_solve(ata, atb, 2, 2, 1e-9, 0, x), 0);
        assert_near(x[0] + x[1], 4, 1e-6);
        assert_near(x[0], x[1], 1e-6);
        /* Nothing at all: refused even with a ridge. */
        double zero[4] = {0}, zb[2] = {0};
        assert_int_equal(wls_solve(zero, zb, 2, 2, 1e-9, 0, x), -EDOM);
}

/* A 3-unknown store of which only the first two are in use. */
static void solves_the_leading_block(void **state)
{
        double ata[9] = {0}, atb[3] = {0}, x[2];
        double r1[3] = {1, 1, 0}, r2[3] = {1, 2, 0}, r3[3] = {1, 4, 0};

        wls_add(ata, atb, 3, r1, 1 + 0.5 * 1);
        wls_add(ata, atb, 3, r2, 1 + 0.5 * 2);
        wls_add(ata, atb, 3, r3, 1 + 0.5 * 4);
        assert_int_equal(wls_solve(ata, atb, 3, 3, 0, 1e-12, x), -EDOM);
        assert_int_equal(wls_solve(ata, atb, 2, 3, 0, 1e-12, x), 0);
        assert_near(x[0], 1, 1e-9);
        assert_near(x[1], 0.5, 1e-9);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(recovers_exact_coefficients),
    cmocka_unit_test(scale_weights_old_rows),
    cmocka_unit_test(singular_needs_a_ridge),
    cmocka_unit_test(solves_the_leading_block),
};

PCTL_TEST_MAIN(tests)
