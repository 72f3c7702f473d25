/* The actuators' state record (actuators/state.c): the file a crashed pctld left, read at the
 * next start. Only root writes it, but a crash, a full disk, an editor or another version can
 * leave anything there, and one bad line must cost that line only. The input is the file;
 * state_record_open reads it from a private directory under /tmp.
 *
 * Whatever the input: open answers; each problem names a line of the input and says why in
 * text without control bytes; every entry read formats to a line that parses back to the same
 * entry; a commit loses nothing (reopened, the same entries and as many unreadable lines, all
 * kept); a second commit writes the same bytes; a file that is not the format is set aside whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "pctl/state.h"

static char dir[] = "/tmp/pctl-fuzz-state-XXXXXX";
static char path[sizeof(dir) + 32], aside[sizeof(dir) + 48], lock[sizeof(dir) + 32];

static void remove_dir(void)
{
        unlink(path);
        unlink(aside);
        unlink(lock);
        rmdir(dir);
}

static void put(const char *p, const uint8_t *data, size_t size)
{
        FILE *f = fopen(p, "w");

        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
                abort();
}

/* The file's bytes (a kept line may hold a NUL), *size_out of them; NULL when there is none. */
static char *slurp(const char *p, size_t *size_out)
{
        FILE *f = fopen(p, "r");
        char *buf;
        long len;

        if (!f)
                return NULL;
        if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
                abort();
        buf = malloc((size_t)len + 1);
        if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
                abort();
        fclose(f);
        *size_out = (size_t)len;
        return buf;
}

static void check_problems(const struct state_record *r, size_t input_lines)
{
        size_t listed, all;
        const struct state_problem *p = state_record_problems(r, &listed, &all);

        if (listed > all || listed > STATE_PROBLEMS_LISTED ||
            (listed < all && listed != STATE_PROBLEMS_LISTED))
                abort();
        for (size_t i = 0; i < listed; i++) {
                if (p[i].line < 1 || p[i].line > input_lines || !p[i].why[0])
                        abort();
                for (const char *c = p[i].why; *c; c++)
                        if ((unsigned char)*c < 0x20 || *c == 0x7f)
                                abort();
                for (const char *c = p[i].text; *c; c++)
                        if ((unsigned char)*c < 0x20 || *c == 0x7f)
                                abort();
        }
        if (state_record_kept(r) > all)
                abort();
}

static void check_entries(struct state_entry *e, size_t n)
{
        char line[STATE_PATH_MAX + CPUMASK_LIST_MAX + 128];

        for (size_t i = 0; i < n; i++) {
                struct state_entry back;

                if (state_entry_format(&e[i], line, sizeof(line)) < 0 ||
                    state_entry_parse(line, &back, NULL, 0) < 0 || back.kind != e[i].kind ||
                    strcmp(back.path, e[i].path))
                        abort();
                if (e[i].kind == STATE_TASK && (back.pid != e[i].pid || back.tid != e[i].tid ||
                                                back.start_ticks != e[i].start_ticks ||
                                                !cpumask_equal(&back.mask, &e[i].mask)))
                        abort();
                if (e[i].kind == STATE_FREQ &&
                    (strcmp(back.governor, e[i].governor) || back.min_khz != e[i].min_khz ||
                     back.max_khz != e[i].max_khz))
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct state_record *r;
        struct state_entry *e = NULL;
        size_t n = 0, n2 = 0, kept, lines = 1, listed, all, all2, len1, len2;
        char *first, *second;
        int fds;

        if (dir[sizeof(dir) - 2] == 'X') {
                if (!mkdtemp(dir))
                        abort();
                snprintf(path, sizeof(path), "%s/%s", dir, STATE_RECORD_FILE);
                snprintf(aside, sizeof(aside), "%s.unread", path);
                snprintf(lock, sizeof(lock), "%s/%s", dir, STATE_LOCK_FILE);
                atexit(remove_dir);
        }
        for (size_t i = 0; i < size; i++)
                lines += data[i] == '\n';
        put(path, data, size);
        fds = fuzz_fds_mark();

        if (state_record_open(dir, &r) < 0)
                abort(); /* a readable file always opens */
        check_problems(r, lines);
        state_record_problems(r, &listed, &all);
        kept = state_record_kept(r);
        if (access(aside, F_OK) == 0) {
                /* Set aside: the whole input, untouched; nothing read or kept from it. */
                char *was = slurp(aside, &len1);

                if (!was || state_record_count(r) || kept || all != 1 || len1 != size ||
                    memcmp(was, data, size))
                        abort();
                free(was);
                state_record_close(r);
                unlink(aside);
                fuzz_check_fds(fds);
                return 0;
        }
        n = state_record_count(r);
        if (state_record_commit(r) < 0)
                abort();
        state_record_close(r);
        first = slurp(path, &len1);
        if ((n || kept) != (first != NULL))
                abort(); /* removed exactly when it holds nothing */

        if (state_record_open(dir, &r) < 0)
                abort();
        state_record_problems(r, &listed, &all2);
        if (state_record_count(r) != n || all2 != kept || state_record_kept(r) != kept)
                abort();
        if (state_record_take(r, &e, &n2) < 0 || n2 != n)
                abort();
        check_entries(e, n2);
        /* Given back, as a recovery that undid nothing would: the same file again. */
        for (size_t i = 0; i < n2; i++)
                if (state_record_add(r, &e[i]) < 0)
                        abort();
        free(e);
        if (state_record_commit(r) < 0)
                abort();
        state_record_close(r);
        second = slurp(path, &len2);
        if ((first == NULL) != (second == NULL) ||
            (first && (len1 != len2 || memcmp(first, second, len1))))
                abort();
        free(first);
        free(second);
        unlink(path);
        fuzz_check_fds(fds);
        return 0;
}
