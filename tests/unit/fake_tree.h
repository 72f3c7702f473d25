/* A fake sysfs/procfs/cgroupfs tree under a temporary directory, made the fs root prefix
 * (include/pctl/fsio.h) so the code under test reads and writes it instead of the machine's.
 * Plain files are not truncated by a write as kernel attributes are: check a value as what
 * the file begins with (fake_assert_reads). Needs _GNU_SOURCE for nftw. */
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pctl_test.h"
#include "pctl/fsio.h"

static char fake_root[256];

/* Creates the temporary directory named after `what`; fake_tree_use() makes it the root. */
static inline void fake_tree_new(const char *what)
{
        snprintf(fake_root, sizeof(fake_root), "/tmp/pctl-test-%s-XXXXXX", what);
        assert_non_null(mkdtemp(fake_root));
}

static inline void fake_tree_use(void)
{
        assert_int_equal(fs_set_root(fake_root), 0);
}

/* Writes rel (an absolute path inside the tree), creating its directories. */
static inline void fake_put(const char *rel, const char *content)
{
        char path[1024];
        FILE *f;

        snprintf(path, sizeof(path), "%s%s", fake_root, rel);
        for (char *p = path + strlen(fake_root) + 1; *p; p++) {
                if (*p == '/') {
                        *p = '\0';
                        mkdir(path, 0755);
                        *p = '/';
                }
        }
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static inline void fake_assert_reads(const char *rel, const char *want)
{
        char buf[256];

        assert_true(fs_read(rel, buf, sizeof(buf)) >= 0);
        if (strncmp(buf, want, strlen(want)))
                fail_msg("%s reads '%s', expected '%s'", rel, buf, want);
}

static inline int fake_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p);
}

/* Back to the real root, and the tree removed. */
static inline void fake_tree_free(void)
{
        fs_set_root("");
        nftw(fake_root, fake_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
