/* What a run records as an app's start in pctl history (history_start, manager/app_history.c;
 * docs/history.md, "What is kept, and for whom"): the best point it measured; without one, the
 * count it held as it left, unless sharing cut it to that count and it came with a start a
 * past run measured, which is kept. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "../../manager/manager_internal.h"
#include "pctl/history.h"
#include "pctl/simrun.h"

static const struct allocator_point MEASURED = {
    .cores = 6, .freq_khz = 2000000, .score = 2.0, .samples = 3, .apps = 2};
static const struct allocator_point HELD = {
    .cores = 2, .freq_khz = 3000000, .score = NAN, .apps = 3};
static const struct allocator_point REMEMBERED = {
    .cores = 4, .freq_khz = 2500000, .score = 1.5, .apps = 1};

static void same_point(const struct allocator_point *a, const struct allocator_point *b)
{
        assert_int_equal(a->cores, b->cores);
        assert_int_equal(a->freq_khz, b->freq_khz);
        assert_int_equal(a->apps, b->apps);
        if (isnan(b->score))
                assert_true(isnan(a->score));
        else
                assert_float_equal(a->score, b->score, 0);
}

/* Each case: what the run measured and held, whether sharing set the count it held, what it
 * came with; what is recorded, and why. */
static void each_source_records_what_it_should(void **state)
{
        static const struct allocator_point UNSCORED = {
            .cores = 4, .freq_khz = 2500000, .score = NAN, .apps = 1};
        const struct {
                const char *what;
                const struct allocator_point *measured, *held;
                bool by_share;
                const struct allocator_point *remembered, *want;
                int why;
        } cases[] = {
            {"a measured best wins over all else", &MEASURED, &HELD, true, &REMEMBERED, &MEASURED,
             HISTORY_START_MEASURED},
            {"its own count, nothing scored", NULL, &HELD, false, &REMEMBERED, &HELD,
             HISTORY_START_HELD},
            {"sharing's count, a measured start remembered: kept", NULL, &HELD, true, &REMEMBERED,
             &REMEMBERED, HISTORY_START_KEPT},
            {"sharing's count, the start remembered without a score: the newer", NULL, &HELD, true,
             &UNSCORED, &HELD, HISTORY_START_HELD_SHARED},
            {"sharing's count, nothing remembered", NULL, &HELD, true, NULL, &HELD,
             HISTORY_START_HELD_SHARED},
        };

        for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                struct allocator_point out = {0};

                printf("%s\n", cases[c].what);
                assert_int_equal(history_start(cases[c].measured, cases[c].held, cases[c].by_share,
                                               cases[c].remembered, &out),
                                 cases[c].why);
                same_point(&out, cases[c].want);
                assert_non_null(history_start_why_to_string(cases[c].why));
        }
}

/* Nothing measured and nothing held (still learning): nothing to record, and *out untouched. */
static void nothing_learned_records_nothing(void **state)
{
        struct allocator_point out = {.cores = 77}, none = {0};

        assert_int_equal(history_start(NULL, &none, true, &REMEMBERED, &out), -ENODATA);
        assert_int_equal(history_start(NULL, NULL, false, NULL, &out), -ENODATA);
        assert_int_equal(out.cores, 77);
        assert_null(history_start_why_to_string(_HISTORY_START_WHY_MAX));
}

/* What a run that scored nothing offers (history_held): once it searched, the count it held
 * (sharing's, if sharing set it); still learning, nothing; its phase changed while it learned,
 * the count its first phase learned at, never the later phase's count or the one sharing cut
 * it to. */
static void a_first_phase_lost_while_learning_offers_its_learn_count(void **state)
{
        struct allocator_app al = {.phase = ALLOCATOR_PHASE_SETTLED,
                                   .cores = 5,
                                   .freq_khz = 2000000,
                                   .share_set_cores = 5};
        struct allocator_point out = {.cores = 77};
        bool by_share = false;

        assert_true(history_held(&al, 3, &out, &by_share));
        assert_int_equal(out.cores, 5);
        assert_int_equal(out.freq_khz, 2000000);
        assert_int_equal(out.apps, 3);
        assert_true(isnan(out.score));
        assert_true(by_share);
        /* Still learning: nothing learned, nothing written. */
        al.phase = ALLOCATOR_PHASE_LEARN;
        out.cores = 77;
        assert_false(history_held(&al, 3, &out, &by_share));
        assert_int_equal(out.cores, 77);
        /* Its first phase ended while it learned, at a count it was never going to keep. */
        al.phase = ALLOCATOR_PHASE_SETTLED;
        al.first_phase.lost = true;
        assert_false(history_held(&al, 3, &out, &by_share)); /* no learn count decided */
        al.learn_at.decided = true;
        al.learn_at.cores = 43;
        assert_true(history_held(&al, 3, &out, &by_share));
        assert_int_equal(out.cores, 43);
        assert_int_equal(out.freq_khz, 0);
        assert_true(isnan(out.score));
        assert_false(by_share);
}

/* bench_random's seed 2724 (i7, four apps; a2 arrives at 19.8 s). Its first run measures a2
 * alone at its end: 4 cores, scored. Its second, a2 comes back beside others, the partition
 * cuts it to 3 cores, where nothing is scored (the model machine does not split a package's
 * power among the apps that share it), and it leaves holding them: before, the second run
 * recorded those 3 cores without a score over the 4 measured. */
#define SEED_2724                                                                                  \
        "[machine]\npreset = i7-4820k\ncounter_noise = 0.0237\nseed = 459883\n"                    \
        "[app a0]\ninstructions = 3.397e+11\np = 0.9569\nipc = 1.093\nprogress_units = 17153\n"    \
        "[app a1]\nstart_s = 11.6\ninstructions = 1.349e+11\np = 0.9936\nipc = 0.607\n"            \
        "spin = 0.814\nsync = 0.041\nextra_work = 0.1203\n"                                        \
        "[app a2]\nstart_s = 19.8\ninstructions = 5.438e+11\np = 0.9597\nipc = 1.846\n"            \
        "mem_fraction = 0.494\n"                                                                   \
        "[app a3]\ninstructions = 2.161e+11\np = 0.9590\nipc = 0.596\n"                            \
        "mem_bytes_per_instruction = 7.082\nspin = 0.644\n"

struct a2_entry {
        bool seen;
        struct history_entry e;
};

static int find_a2(const struct history_entry *e, void *ctx)
{
        struct a2_entry *out = ctx;

        if (strcmp(e->key.exe, "sim:a2") == 0) {
                out->seen = true;
                out->e = *e;
                out->e.stack_json = NULL; /* not ours */
        }
        return 0;
}

static struct a2_entry read_a2(const struct runs_dir *d)
{
        struct a2_entry a2 = {0};
        struct history *h;
        char err[640];

        assert_int_equal(history_open(d->hist, true, &h, err, sizeof(err)), 0);
        assert_int_equal(history_foreach(h, find_a2, &a2, err, sizeof(err)), 0);
        history_close(h);
        assert_true(a2.seen);
        printf("  a2: %u cores, score %g, %u apps, %u runs\n", a2.e.best_cores, a2.e.best_score,
               a2.e.shared_apps, a2.e.runs);
        return a2;
}

static void run_once(const struct runs_dir *d)
{
        struct simrun_options o = {
            .scenario = d->path, .policy = "edp", .delta_i_rate = NAN, .history_path = d->hist};
        struct simrun_result res;
        char err[512];

        if (simrun_policy(&o, &res, err, sizeof(err)) < 0)
                fail_msg("sim run: %s", err);
        simrun_result_free(&res);
}

static void a_measured_start_is_not_overwritten_by_a_count_sharing_set(void **state)
{
        struct runs_dir d;
        struct a2_entry first, second;

        runs_dir_make(&d, SEED_2724);
        run_once(&d);
        first = read_a2(&d);
        run_once(&d);
        second = read_a2(&d);
        runs_dir_remove(&d);
        /* The premise: the first run measured a2's start. */
        assert_true(isfinite(first.e.best_score));
        assert_int_equal(second.e.runs, 2);
        assert_true(isfinite(second.e.best_score));
        assert_int_equal(second.e.best_cores, first.e.best_cores);
        assert_int_equal(second.e.best_freq_khz, first.e.best_freq_khz);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(each_source_records_what_it_should),
            cmocka_unit_test(nothing_learned_records_nothing),
            cmocka_unit_test(a_first_phase_lost_while_learning_offers_its_learn_count),
            cmocka_unit_test(a_measured_start_is_not_overwritten_by_a_count_sharing_set),
        };

        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
