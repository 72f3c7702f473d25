/* Progress markers: an application says "one unit of work done" and pctld scores its
 * configurations by units of work instead of instructions, which overstate progress where the
 * work grows with the threads (docs/allocator.md, "Progress"). In the manner of GEOPM's epochs
 * and Application Heartbeats, and as small: one counter in a shared-memory file,
 * /dev/shm/pctl-progress.PID, that the app increments and pctld reads.
 *
 * In the application (header only, no library to link; C or C++):
 *
 *     #include <pctl/progress.h>
 *     pctl_progress_open();              // once, at start; harmless if pctld is not there
 *     for (...) { work(); pctl_progress_mark(1); }
 *     pctl_progress_close();             // at exit: removes the file
 *
 * A unit is whatever the app does a fixed amount of: an iteration, a block, a request. Mark at
 * least tens of units a second for pctld to see a rate in each 100 ms interval. Marking is one
 * atomic add; the file is the process's own (pctld checks its owner and the process's start
 * time, so a stale file of a reused pid is ignored). The state is per translation unit: open,
 * mark and close from one source file, or pass the page pointer around.
 *
 * In pctld: progress_read() (below, lib/progress.c). */
#pragma once

#include <stdint.h>

#define PCTL_PROGRESS_MAGIC 0x676f72706c746370ULL /* "pctlprog" little-endian */
#define PCTL_PROGRESS_PATH_FMT "/dev/shm/pctl-progress.%ld"

struct pctl_progress_page {
        uint64_t magic;       /* PCTL_PROGRESS_MAGIC */
        uint64_t start_ticks; /* the process's start time, field 22 of /proc/PID/stat */
        uint64_t units;       /* units of work done so far; only grows */
};

#ifndef PCTL_PROGRESS_NO_APP_SIDE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct pctl_progress_page *pctl_progress_page_;

/* The calling process's start time (field 22 of /proc/self/stat); 0 when unreadable. */
static inline uint64_t pctl_progress_start_ticks_(void)
{
        char buf[1024], *p;
        unsigned long long v = 0;
        ssize_t n;
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        /* Fields 3.. after the name; field 22 is the 20th of them. */
        for (int f = 2; p && f < 22; f++)
                p = strchr(p + 1, ' ');
        if (!p || sscanf(p + 1, "%llu", &v) != 1)
                return 0;
        return v;
}

/* Creates this process's counter at 0. 0, or -1 with errno set (the app runs on either way). */
static inline int pctl_progress_open(void)
{
        char path[64];
        struct pctl_progress_page *pg;
        int fd;

        if (pctl_progress_page_)
                return 0;
        snprintf(path, sizeof(path), PCTL_PROGRESS_PATH_FMT, (long)getpid());
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -1;
        if (ftruncate(fd, sizeof(*pg)) < 0) {
                close(fd);
                unlink(path);
                return -1;
        }
        pg = mmap(NULL, sizeof(*pg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (pg == MAP_FAILED) {
                unlink(path);
                return -1;
        }
        pg->start_ticks = pctl_progress_start_ticks_();
        __atomic_store_n(&pg->units, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pg->magic, PCTL_PROGRESS_MAGIC, __ATOMIC_RELEASE);
        pctl_progress_page_ = pg;
        return 0;
}

/* n more units of work done. Safe from any thread; nothing happens before a successful open. */
static inline void pctl_progress_mark(uint64_t n)
{
        if (pctl_progress_page_)
                __atomic_fetch_add(&pctl_progress_page_->units, n, __ATOMIC_RELAXED);
}

/* Removes the counter. */
static inline void pctl_progress_close(void)
{
        char path[64];

        if (!pctl_progress_page_)
                return;
        munmap(pctl_progress_page_, sizeof(*pctl_progress_page_));
        pctl_progress_page_ = NULL;
        snprintf(path, sizeof(path), PCTL_PROGRESS_PATH_FMT, (long)getpid());
        unlink(path);
}
#endif

#ifdef PCTL_PROGRESS_READER
#include <sys/types.h>
#include <stddef.h>
/* pctld's side (lib/progress.c). The units pid has marked: 0, or -ENOENT (no counter),
 * -EPERM (the file is not the process's owner's), -ESTALE (a counter of an earlier process
 * with this pid), -EBADMSG (not a counter). *units is written only on success. */
int progress_read(pid_t pid, uint64_t *units);
/* The check of a counter's bytes, pure: -EBADMSG unless size covers a page with the magic;
 * -ESTALE when its start time is not start_ticks. */
int progress_page_parse(const void *buf, size_t size, uint64_t start_ticks, uint64_t *units);
#endif
