/* A fake sysfs/procfs/cgroupfs tree under a temporary directory, seen by the code under test
 * in one of two ways: as the fs root prefix (include/pctl/fsio.h, fake_tree_use), or, for
 * libraries that read fixed paths (libcpupower), bind-mounted over the real directory in a
 * private mount namespace of the test process (fake_ns_enter once, then fake_tree_mount).
 * Plain files are not truncated by a write as kernel attributes are: check a value as what
 * the file begins with (fake_assert_reads), and give values that a library reads back whole
 * the same width. Needs _GNU_SOURCE for nftw and unshare. */
#pragma once

#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "pctl_test.h"
#include "pctl/fsio.h"

static char fake_root[256];
static char fake_mounted[256]; /* the real path a fake directory is mounted over, or "" */

/* Gives the process a mount namespace of its own, with no propagation back to the machine's:
 * what fake_tree_mount mounts is seen by this process (and its children) only, and goes away
 * with it. Needs CAP_SYS_ADMIN: without it the test binary exits 77 (a visible skip). */
static inline void fake_ns_enter(void)
{
        if (unshare(CLONE_NEWNS) < 0) {
                fprintf(stderr,
                        "SKIP: unshare(CLONE_NEWNS): %s (a private mount namespace "
                        "needs root)\n",
                        strerror(errno));
                exit(77);
        }
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                fprintf(stderr, "mount --make-rprivate /: %s\n", strerror(errno));
                exit(1);
        }
}

/* Bind-mounts the tree's copy of the absolute directory rel over the real one. */
static inline void fake_tree_mount(const char *rel)
{
        char path[1024];

        snprintf(path, sizeof(path), "%s%s", fake_root, rel);
        if (mount(path, rel, NULL, MS_BIND, NULL) < 0)
                fail_msg("mount --bind %s %s: %s", path, rel, strerror(errno));
        snprintf(fake_mounted, sizeof(fake_mounted), "%s", rel);
}

/* Makes one file of the mounted tree read-only (a read-only bind mount of the file on
 * itself): writes fail with EROFS even for root, as they would on a read-only attribute. */
static inline void fake_make_readonly(const char *rel)
{
        if (mount(rel, rel, NULL, MS_BIND, NULL) < 0 ||
            mount(NULL, rel, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
                fail_msg("read-only bind mount of %s: %s", rel, strerror(errno));
}

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

        if (fake_mounted[0])
                assert_true(file_read(rel, buf, sizeof(buf)) >= 0); /* through the mount */
        else
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

/* Back to the real root (or the real directory), and the tree removed. */
static inline void fake_tree_free(void)
{
        if (fake_mounted[0]) {
                /* MNT_DETACH also drops read-only file mounts made inside it. */
                if (umount2(fake_mounted, MNT_DETACH) < 0)
                        fail_msg("umount %s: %s", fake_mounted, strerror(errno));
                fake_mounted[0] = '\0';
        }
        fs_set_root("");
        nftw(fake_root, fake_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
