/* Shared by the cmocka unit tests: main() runs one case when CTest names it. */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define PCTL_TEST_MAIN(tests)                                                                      \
        int main(int argc, char **argv)                                                            \
        {                                                                                          \
                if (argc > 1)                                                                      \
                        cmocka_set_test_filter(argv[1]);                                           \
                return cmocka_run_group_tests(tests, NULL, NULL);                                  \
        }

/* |a - b| <= tol, with both numbers in the failure message. */
#define assert_near(a, b, tol)                                                                     \
        do {                                                                                       \
                double a_ = (a), b_ = (b);                                                         \
                if (!(fabs(a_ - b_) <= (tol)))                                                     \
                        fail_msg("%s = %.6g, expected %.6g within %.3g", #a, a_, b_,               \
                                 (double)(tol));                                                   \
        } while (0)
