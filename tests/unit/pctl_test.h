/* Shared by the cmocka unit tests: main() runs one case when CTest names it. */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

/* Writes text to a new file under /tmp whose name is left in path (at least 32 bytes); the
 * test unlinks it. Returns path. */
static inline const char *pctl_test_temp_file(char *path, size_t size, const char *text)
{
        int fd;

        snprintf(path, size, "/tmp/pctl-test-XXXXXX");
        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        return path;
}
