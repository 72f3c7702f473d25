/* Shared by the unit tests of the model machine's scenario files: a scenario text that must be
 * refused, at the line and with the words given. Include after pctl_test.h. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/sim.h"
#include "pctl/simrun.h"

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

/* `sim run --policy edp` on the scenario text (written to a temporary file), or the test
 * fails with sim run's error. */
static inline void sim_run_edp(const char *text, struct simrun_result *res)
{
        char path[] = "/tmp/pctl-test-edp-XXXXXX";
        char err[512];
        int fd = mkstemp(path);
        struct simrun_options o = {.scenario = path, .policy = "edp", .delta_i_rate = NAN};

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        if (simrun_policy(&o, res, err, sizeof(err)) < 0) {
                unlink(path);
                fail_msg("sim run: %s", err);
        }
        unlink(path);
}

/* The EDP of `sim run --policy edp` on the scenario's first app over the oracle's (the app's
 * best static setting); prints where each ended, after `label`. */
static inline double sim_edp_over_oracle(const char *text, const char *label)
{
        struct simrun_result res;
        struct sim_machine *m = sim_load_ok(text);
        struct sim_result best;
        double ratio;

        sim_run_edp(text, &res);
        assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_EDP, 100 * 1000 * 1000ULL, &best, NULL, NULL),
                         0);
        ratio = res.apps[0].energy_j * res.apps[0].time_s / sim_objective_score(SIM_OBJ_EDP, &best);
        printf("%s: ended at %u cores, oracle %u cores: EDP / oracle %.3f\n", label,
               res.apps[0].cores, best.cores, ratio);
        simrun_result_free(&res);
        sim_free(m);
        return ratio;
}

/* A directory with the scenario (app.ini) and the history file the runs share. */
struct runs_dir {
        char dir[48], path[64], hist[64];
};

static inline void runs_dir_make(struct runs_dir *d, const char *text)
{
        int fd;

        snprintf(d->dir, sizeof(d->dir), "/tmp/pctl-test-runs-XXXXXX");
        assert_non_null(mkdtemp(d->dir));
        snprintf(d->path, sizeof(d->path), "%s/app.ini", d->dir);
        snprintf(d->hist, sizeof(d->hist), "%s/history.db", d->dir);
        fd = open(d->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

static inline void runs_dir_remove(const struct runs_dir *d)
{
        static const char *const files[] = {"app.ini", "history.db", "history.db-wal",
                                            "history.db-shm"};

        for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                char p[96];

                snprintf(p, sizeof(p), "%s/%s", d->dir, files[i]);
                unlink(p);
        }
        assert_int_equal(rmdir(d->dir), 0);
}

/* bench_random's seed 91015 (set 2): a0 beside a1 on the 2 x 6 Xeon, a1 spinning, its memory
 * waits given by what goes between the two halves (bandwidth: mem_bytes_per_instruction; or
 * latency: mem_fraction). Used by the tests of spreading beside other apps and its status. */
#define SCENARIO_91015_HEAD                                                                        \
        "[machine]\npreset = xeon-e5-2630v2x2\ncounter_noise = 0.0290\nseed = 377825\n"            \
        "[app a0]\ninstructions = 5.316e+11\np = 0.8606\nipc = 1.450\nsync = 0.252\n"              \
        "progress_units = 79157\n"                                                                 \
        "[app a1]\ninstructions = 7.987e+11\np = 0.8266\nipc = 1.473\n"
#define SCENARIO_91015_TAIL "spin = 0.542\nimbalance = 2.002\nprogress_units = 393567\n"
