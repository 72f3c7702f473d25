/* Shared by the unit tests of the model machine's scenario files: a scenario text that must be
 * refused, at the line and with the words given. Include after pctl_test.h. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pctl/sim.h"

/* The text, loaded as "bad.ini", is refused with -EINVAL, no machine, the error at `lineno`
 * naming `needle`, and the full message prefixed "bad.ini:LINENO: ". */
static inline void sim_expect_bad(const char *text, int lineno, const char *needle)
{
        struct sim_machine *m = NULL;
        struct sim_error err;
        char where[32];

        assert_int_equal(sim_load_string(text, "bad.ini", &m, &err), -EINVAL);
        assert_null(m);
        if (err.lineno != lineno || !strstr(err.what, needle))
                fail_msg("expected line %d with '%s', got %d: %s", lineno, needle, err.lineno,
                         err.what);
        snprintf(where, sizeof(where), "bad.ini:%d: ", lineno);
        assert_non_null(strstr(err.all, where));
}

/* The text, loaded as "test.ini", makes a machine, or the test fails with the scenario's
 * error. */
static inline struct sim_machine *sim_load_ok(const char *text)
{
        struct sim_machine *m = NULL;
        struct sim_error err;

        if (sim_load_string(text, "test.ini", &m, &err) < 0)
                fail_msg("scenario rejected: %s", err.all);
        return m;
}
