/* The Slurm plugin's summary line from pctld's reports: figures as pctld gave them, unknown
 * ones said so (never a made-up number), and several tasks on a node summed into one line. */
#include "pctl_test.h"

#include <errno.h>
#include <json-c/json.h>

#include "pctl/step_report.h"
#include "pctl/util.h"

static struct json_object *parse(const char *text)
{
        struct json_object *j = json_tokener_parse(text);

        assert_non_null(j);
        return j;
}

static void line_of(const char *const *reports, size_t n, char *buf, size_t size)
{
        struct step_report s;

        step_report_init(&s);
        for (size_t i = 0; i < n; i++) {
                struct json_object *j = parse(reports[i]);

                assert_int_equal(step_report_add(&s, j), 0);
                json_object_put(j);
        }
        step_report_format(&s, buf, size);
}

static void one_task_with_every_figure(void **state)
{
        const char *rep[] = {
            "{\"policy\":\"edp\",\"managed_s\":5.0,\"p_run\":0.2134,\"p_run_confidence\":0.02,"
            "\"p_est\":0.3,\"energy_j\":60.25,\"energy_source\":\"declared\",\"edp_js\":301.25,"
            "\"configs\":[{\"cores\":2,\"freq_mhz\":null,\"s\":1.0},"
            "{\"cores\":1,\"freq_mhz\":2400,\"s\":4.0}]}"};
        char line[512];

        line_of(rep, 1, line, sizeof(line));
        assert_string_equal(line, "energy 60.2 J (declared), EDP 301.2 J·s, P̂ 0.213±0.020, "
                                  "ended at 1 core at 2400 MHz (policy edp, 1 task, 5.0 s "
                                  "managed)");
}

static void unknown_figures_are_said_unknown(void **state)
{
        const char *rep[] = {"{\"policy\":\"edp\",\"managed_s\":0.4,\"p_run\":null,"
                             "\"p_est\":null,\"energy_j\":null,\"energy_source\":null,"
                             "\"configs\":[]}"};
        char line[512];

        line_of(rep, 1, line, sizeof(line));
        assert_string_equal(line, "energy unknown (no RAPL and no power model), EDP unknown, "
                                  "P̂ unknown, ended at unknown cores, clock unknown (policy "
                                  "edp, 1 task, 0.4 s managed)");
}

static void the_phase_p_when_no_run_p(void **state)
{
        const char *rep[] = {"{\"policy\":\"ppw\",\"managed_s\":2,\"p_est\":0.5,"
                             "\"configs\":[{\"cores\":4,\"freq_mhz\":null,\"s\":2}]}"};
        char line[512];

        line_of(rep, 1, line, sizeof(line));
        assert_non_null(strstr(line, ", P̂ 0.500, ended at 4 cores, clock unknown"));
}

static void tasks_on_a_node_are_summed(void **state)
{
        const char *rep[] = {
            "{\"policy\":\"edp\",\"managed_s\":3,\"p_run\":0.2,\"energy_j\":10,"
            "\"energy_source\":\"measured\",\"configs\":[{\"cores\":1,\"freq_mhz\":1200}]}",
            "{\"policy\":\"edp\",\"managed_s\":4,\"p_run\":0.4,\"energy_j\":20,"
            "\"energy_source\":\"measured\",\"configs\":[{\"cores\":2,\"freq_mhz\":2400}]}"};
        char line[512];

        line_of(rep, 2, line, sizeof(line));
        /* EDP of the node's step: its energy times the longest task's time. */
        assert_string_equal(line, "energy 30.0 J (measured), EDP 120 J·s, P̂ 0.300 (mean of 2 "
                                  "tasks), ended at 3 cores at 1200-2400 MHz (policy edp, 2 "
                                  "tasks, 4.0 s managed)");
}

static void energy_of_some_tasks_only_is_unknown(void **state)
{
        const char *rep[] = {"{\"managed_s\":3,\"energy_j\":10,\"energy_source\":\"measured\"}",
                             "{\"managed_s\":3,\"energy_j\":null}"};
        char line[512];

        line_of(rep, 2, line, sizeof(line));
        assert_non_null(strstr(line, "energy unknown"));
        assert_non_null(strstr(line, "policy unknown, 2 tasks"));
}

static void text_from_pctld_is_escaped_and_bounded(void **state)
{
        const char *rep[] = {"{\"policy\":\"a\\u001b[2Jb\",\"managed_s\":1,\"energy_j\":1,"
                             "\"energy_source\":\"declared\\n\"}"};
        struct step_report s;
        char line[512], small[24];
        struct json_object *j;

        line_of(rep, 1, line, sizeof(line));
        assert_null(strchr(line, '\x1b'));
        assert_null(strchr(line, '\n'));
        assert_non_null(strstr(line, "a\\x1b[2Jb"));
        step_report_init(&s);
        j = parse(rep[0]);
        assert_int_equal(step_report_add(&s, j), 0);
        json_object_put(j);
        step_report_format(&s, small, sizeof(small));
        assert_int_equal(strlen(small), sizeof(small) - 1);
        j = parse("[1,2]");
        assert_int_equal(step_report_add(&s, j), -EINVAL);
        assert_int_equal(step_report_add(&s, NULL), -EINVAL);
        json_object_put(j);
}

/* Where the tasks ended on two or more packages, the line says which ("on packages 0,1":
 * a task spread over both, or two tasks one on each); on one package it reads as it did;
 * null (pctld could not say) is unknown; an older pctld's report without them, or a
 * malformed array, adds nothing. */
static void packages_where_the_tasks_ended(void **state)
{
        static const struct {
                const char *packages[2]; /* of each task's last configuration; NULL: absent */
                unsigned n;
                const char *want;
        } cases[] = {
            {{"[0,1]"}, 1, "ended at 2 cores on packages 0,1 at 2600 MHz ("},
            {{"[0]", "[1]"}, 2, "ended at 4 cores on packages 0,1 at 2600 MHz ("},
            {{"[0]"}, 1, "ended at 2 cores at 2600 MHz ("},
            {{"[1]", "[1]"}, 2, "ended at 4 cores at 2600 MHz ("},
            {{"[0]", "null"}, 2, "ended at 4 cores on unknown packages at 2600 MHz ("},
            {{NULL}, 1, "ended at 2 cores at 2600 MHz ("},
            {{"[0,-1]", "\"0,1\""}, 2, "ended at 4 cores at 2600 MHz ("},
            {{"[0,2,3,4]"}, 1, "ended at 2 cores on packages 0,2-4 at 2600 MHz ("},
        };

        for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
                char rep[2][256], line[512];
                const char *reps[2] = {rep[0], rep[1]};

                for (unsigned t = 0; t < cases[k].n; t++) {
                        char pk[64] = "";

                        if (cases[k].packages[t])
                                snprintf(pk, sizeof(pk), ",\"packages\":%s", cases[k].packages[t]);
                        snprintf(
                            rep[t], sizeof(rep[t]),
                            "{\"managed_s\":1,\"configs\":[{\"cores\":2,\"freq_mhz\":2600%s}]}",
                            pk);
                }
                line_of(reps, cases[k].n, line, sizeof(line));
                if (!strstr(line, cases[k].want))
                        fail_msg("case %zu: '%s' has no '%s'", k, line, cases[k].want);
        }
}

/* A task ends at the configuration `end_config` names, not at the last one listed (configs are
 * in order of first use: a task that came back to its first one ended there); an older pctld
 * without it, or a bad index, means the last. */
static void the_task_ends_where_end_config_says(void **state)
{
        static const struct {
                const char *end; /* the member's JSON text; NULL: absent */
                const char *want;
        } cases[] = {
            {"0", "ended at 12 cores on packages 0,1 at 2600 MHz ("},
            {"1", "ended at 4 cores at 1200 MHz ("},
            {NULL, "ended at 4 cores at 1200 MHz ("},
            {"2", "ended at 4 cores at 1200 MHz ("},
            {"-1", "ended at 4 cores at 1200 MHz ("},
            {"0.5", "ended at 4 cores at 1200 MHz ("},
            {"\"0\"", "ended at 4 cores at 1200 MHz ("},
        };

        for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
                char rep[512], end[64] = "", line[512];
                const char *reps[1] = {rep};

                if (cases[k].end)
                        snprintf(end, sizeof(end), ",\"end_config\":%s", cases[k].end);
                snprintf(rep, sizeof(rep),
                         "{\"managed_s\":1%s,\"configs\":["
                         "{\"cores\":12,\"freq_mhz\":2600,\"packages\":[0,1]},"
                         "{\"cores\":4,\"freq_mhz\":1200,\"packages\":[0]}]}",
                         end);
                line_of(reps, 1, line, sizeof(line));
                if (!strstr(line, cases[k].want))
                        fail_msg("end_config %s: '%s' has no '%s'",
                                 cases[k].end ? cases[k].end : "absent", line, cases[k].want);
        }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_task_with_every_figure),
    cmocka_unit_test(unknown_figures_are_said_unknown),
    cmocka_unit_test(the_phase_p_when_no_run_p),
    cmocka_unit_test(tasks_on_a_node_are_summed),
    cmocka_unit_test(energy_of_some_tasks_only_is_unknown),
    cmocka_unit_test(text_from_pctld_is_escaped_and_bounded),
    cmocka_unit_test(packages_where_the_tasks_ended),
    cmocka_unit_test(the_task_ends_where_end_config_says),
};

PCTL_TEST_MAIN(tests)
