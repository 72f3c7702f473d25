/* When pctld gives a burst's heap back (lib/memtrim.c): at half of the peak, a few times per
 * burst, never for a small one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl/memtrim.h"

static void trims_at_half_of_the_peak(void **state)
{
        struct memtrim t = {0};
        unsigned trims = 0;

        (void)state;
        for (unsigned n = 1; n <= 64; n++)
                assert_false(memtrim_due(&t, n)); /* growing: never */
        assert_int_equal(t.peak, 64);
        assert_false(memtrim_due(&t, 33));
        assert_true(memtrim_due(&t, 32)); /* half */
        assert_int_equal(t.peak, 32);
        assert_false(memtrim_due(&t, 17));
        /* Apps leaving one by one down to 0: log2 of the peak trims, not one per app. */
        t = (struct memtrim){0};
        (void)memtrim_due(&t, 64);
        for (unsigned n = 64; n-- > 0;)
                trims += memtrim_due(&t, n);
        assert_int_equal(trims, 5); /* at 32, 16, 8, 4, 2; a peak of 2 is below the minimum */
}

static void small_bursts_are_left_alone(void **state)
{
        struct memtrim t = {0};

        (void)state;
        assert_false(memtrim_due(&t, MEMTRIM_MIN_PEAK - 1));
        assert_false(memtrim_due(&t, 0));
        assert_false(memtrim_due(&t, MEMTRIM_MIN_PEAK));
        assert_true(memtrim_due(&t, 0));
}

/* RssAnon of this process, kB; -1 when unreadable. */
static long rss_anon_kb(void)
{
        char line[256];
        long kb = -1;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "RssAnon: %ld kB", &kb) == 1)
                        break;
        fclose(f);
        return kb;
}

/* The real thing: 8 MB of small blocks freed behind one still held (so the heap's top cannot
 * shrink by itself) stay resident until the trim, which gives at least half of them back. */
static void a_trim_gives_pages_back(void **state)
{
        enum { N = 40000, SIZE = 200 };
        struct memtrim t = {0};
        long before, after;
        void **v;

        (void)state;
#ifdef __SANITIZE_ADDRESS__
        /* ASan's allocator stands in for glibc's: malloc_trim has no heap of its own to trim. */
        skip();
        return;
#endif
        v = malloc(N * sizeof(*v));
        assert_non_null(v);
        for (int i = 0; i < N; i++) {
                assert_non_null(v[i] = malloc(SIZE));
                memset(v[i], 1, SIZE);
        }
        (void)memtrim_note(&t, N);
        for (int i = 0; i < N - 1; i++)
                free(v[i]);
        before = rss_anon_kb();
        assert_true(memtrim_note(&t, 1));
        after = rss_anon_kb();
        print_message("RssAnon %ld kB before the trim, %ld kB after\n", before, after);
        assert_true(before > 0 && after > 0);
        assert_true(before - after >= (long)N * SIZE / 1024 / 2);
        free(v[N - 1]);
        free(v);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(trims_at_half_of_the_peak),
    cmocka_unit_test(small_bursts_are_left_alone),
    cmocka_unit_test(a_trim_gives_pages_back),
};
PCTL_TEST_MAIN(tests)
