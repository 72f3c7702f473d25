/* lib/procstat.c: the one parser of /proc/PID/stat lines. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/procstat.h"

/* A real line (a shell), as the kernel writes it: 52 fields, a newline at the end. */
static const char line[] =
    "4242 (bash) S 4241 4242 4242 34816 4300 4194560 3071 22467 0 3 10 7 25 12 20 0 1 0 "
    "56464 8916992 1348 18446744073709551615 94000000000000 94000000900000 140730000000000 0 0 "
    "0 65536 3686404 1266761467 1 0 0 17 1 0 0 0 0 0 94000001000000 94000001050000 "
    "94000002000000 140730000001000 140730000001010 140730000001010 140730000002000 0\n";

static void normal_line(void **state)
{
        char comm[16] = "", st = '?';
        long long v = 0;
        uint64_t u = 0;

        assert_int_equal(procstat_comm(line, comm, sizeof(comm)), 0);
        assert_string_equal(comm, "bash");
        assert_int_equal(procstat_state(line, &st), 0);
        assert_int_equal(st, 'S');
        assert_int_equal(procstat_field(line, 1, &v), 0);
        assert_int_equal(v, 4242);
        assert_int_equal(procstat_field(line, 4, &v), 0); /* ppid */
        assert_int_equal(v, 4241);
        assert_int_equal(procstat_field(line, 8, &v), 0); /* tpgid */
        assert_int_equal(v, 4300);
        assert_int_equal(procstat_field_u64(line, 9, &u), 0); /* flags */
        assert_int_equal(u, 4194560);
        assert_int_equal(procstat_field_u64(line, 14, &u), 0); /* utime */
        assert_int_equal(u, 10);
        assert_int_equal(procstat_field(line, 17, &v), 0); /* cstime */
        assert_int_equal(v, 12);
        assert_int_equal(procstat_field_u64(line, 22, &u), 0); /* starttime */
        assert_int_equal(u, 56464);
        assert_int_equal(procstat_field_u64(line, 25, &u), 0); /* rsslim: RLIM_INFINITY */
        assert_true(u == UINT64_MAX);
        assert_int_equal(procstat_field(line, 39, &v), 0); /* processor */
        assert_int_equal(v, 1);
        /* The last field ends at the newline. */
        assert_int_equal(procstat_field(line, 52, &v), 0);
        assert_int_equal(v, 0);
        /* A negative field, and the most negative one. */
        assert_int_equal(procstat_field("1 (x) S 0 -1", 5, &v), 0);
        assert_int_equal(v, -1);
        assert_int_equal(procstat_field("1 (x) S -9223372036854775808", 4, &v), 0);
        assert_true(v == LLONG_MIN);
}

static void comm_with_spaces_and_parentheses(void **state)
{
        /* A process may name itself anything: only the last ')' ends the name. */
        static const char text[] = "7 (a) R (b) ((c)) D 3 7 7 0 -1\n";
        char comm[32] = "", small[4] = "", st = '?';
        long long v = 0;

        assert_int_equal(procstat_comm(text, comm, sizeof(comm)), 0);
        assert_string_equal(comm, "a) R (b) ((c)");
        assert_int_equal(procstat_state(text, &st), 0);
        assert_int_equal(st, 'D');
        assert_int_equal(procstat_field(text, 4, &v), 0);
        assert_int_equal(v, 3);
        assert_int_equal(procstat_field(text, 8, &v), 0);
        assert_int_equal(v, -1);
        /* A name that does not fit is cut, not refused. */
        assert_int_equal(procstat_comm(text, small, sizeof(small)), 0);
        assert_string_equal(small, "a) ");
        assert_int_equal(procstat_comm("1 () S 0", comm, sizeof(comm)), 0);
        assert_string_equal(comm, "");
}

/* No command name: every reader refuses the line, and writes nothing. */
static void assert_no_stat_line(const char *text)
{
        char comm[16] = "keep", st = '?';
        long long v = 5;
        uint64_t u = 5;

        assert_int_equal(procstat_comm(text, comm, sizeof(comm)), -EBADMSG);
        assert_int_equal(procstat_state(text, &st), -EBADMSG);
        assert_int_equal(procstat_field(text, 1, &v), -EBADMSG);
        assert_int_equal(procstat_field(text, 4, &v), -EBADMSG);
        assert_int_equal(procstat_field_u64(text, 22, &u), -EBADMSG);
        assert_string_equal(comm, "keep");
        assert_int_equal(st, '?');
        assert_int_equal(v, 5);
        assert_int_equal(u, 5);
}

static void missing_close_paren(void **state)
{
        char st = '?';
        long long v = 5;

        assert_no_stat_line("7 (worker S 1 2");
        /* A ')' before the '(' is not a name either. */
        assert_no_stat_line("7 )x( S 1 2");
        /* No space after the name: a name, but no fields after it. */
        assert_int_equal(procstat_state("7 (x)S 1 2", &st), -EBADMSG);
        assert_int_equal(procstat_field("7 (x)S 1 2", 4, &v), -EBADMSG);
        assert_int_equal(st, '?');
        assert_int_equal(v, 5);
}

static void truncated_line(void **state)
{
        char st = '?';
        long long v = 5;
        uint64_t u = 5;

        /* A short read, or a fake /proc with only the first fields. */
        assert_int_equal(procstat_field("7 (x) S 1 7 7", 6, &v), 0);
        assert_int_equal(v, 7);
        assert_int_equal(procstat_field("7 (x) S 1 7 7", 7, &v), -EBADMSG);
        assert_int_equal(procstat_field_u64("7 (x) S 1 7 7\n", 22, &u), -EBADMSG);
        assert_int_equal(procstat_field("7 (x) S 1 7 7 ", 7, &v), -EBADMSG);
        assert_int_equal(procstat_field("7 (x) S 1 7\n8", 6, &v), -EBADMSG);
        assert_int_equal(procstat_field(line, 53, &v), -EBADMSG);
        assert_int_equal(procstat_field(line, INT_MAX, &v), -EBADMSG);
        /* Cut after the name: the state is gone. */
        assert_int_equal(procstat_state("7 (x)", &st), -EBADMSG);
        assert_int_equal(procstat_state("7 (x) ", &st), -EBADMSG);
        assert_int_equal(procstat_state("7 (x) \n", &st), -EBADMSG);
        assert_int_equal(procstat_state("7 (x) S", &st), 0);
        assert_int_equal(st, 'S');
        assert_int_equal(v, 7);
        assert_int_equal(u, 5);
}

static void fields_that_are_no_numbers(void **state)
{
        long long v = 5;
        uint64_t u = 5;

        /* The caller's mistake, told apart from a bad line. */
        assert_int_equal(procstat_field(line, 0, &v), -EINVAL);
        assert_int_equal(procstat_field(line, -1, &v), -EINVAL);
        assert_int_equal(procstat_field(line, INT_MIN, &v), -EINVAL);
        assert_int_equal(procstat_field(line, 2, &v), -EINVAL);
        assert_int_equal(procstat_field(line, 3, &v), -EINVAL);
        assert_int_equal(procstat_field_u64(line, 2, &u), -EINVAL);
        assert_int_equal(procstat_field_u64(line, 0, &u), -EINVAL);
        assert_int_equal(v, 5);
        assert_int_equal(u, 5);
}

static void non_numeric_field(void **state)
{
        static const char *const bad[] = {
            "7 (x) S abc 1",
            "7 (x) S 12abc 1",
            "7 (x) S +1 1",
            "7 (x) S - 1",
            "7 (x) S 0x10 1",
            "7 (x) S 1.5 1",
            "7 (x) S  1 1",
            "7 (x) S \t1 1",
            "7 (x) S 99999999999999999999 1",
            "7 (x) S 9223372036854775808 1",
            "7 (x) S -9223372036854775809 1",
        };
        char st = '?';
        long long v = 5;
        uint64_t u = 5;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(procstat_field(bad[i], 4, &v), -EBADMSG);
                assert_int_equal(procstat_field(bad[i], 5, &v), 0); /* its neighbour is fine */
        }
        /* Unsigned fields take no sign. */
        assert_int_equal(procstat_field_u64("7 (x) S -1 1", 4, &u), -EBADMSG);
        assert_int_equal(procstat_field_u64("7 (x) S 18446744073709551616 1", 4, &u), -EBADMSG);
        /* Nor is field 1 a number when the line does not start with one. */
        assert_int_equal(procstat_field("(x) S 1 2", 1, &v), -EBADMSG);
        /* The state is one letter. */
        assert_int_equal(procstat_state("7 (x) SS 1", &st), -EBADMSG);
        assert_int_equal(v, 1);
        assert_int_equal(u, 5);
        assert_int_equal(st, '?');
}

static void empty_buffer(void **state)
{
        char comm[16] = "keep";

        assert_no_stat_line("");
        assert_no_stat_line("\n");
        /* Nowhere to write even the terminator. */
        assert_int_equal(procstat_comm(line, comm, 0), -EINVAL);
        assert_string_equal(comm, "keep");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(normal_line),
    cmocka_unit_test(comm_with_spaces_and_parentheses),
    cmocka_unit_test(missing_close_paren),
    cmocka_unit_test(truncated_line),
    cmocka_unit_test(fields_that_are_no_numbers),
    cmocka_unit_test(non_numeric_field),
    cmocka_unit_test(empty_buffer),
};
PCTL_TEST_MAIN(tests)
