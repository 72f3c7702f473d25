/* pctld's side of progress markers (include/pctl/progress.h): reads an app's counter. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PCTL_PROGRESS_NO_APP_SIDE
#define PCTL_PROGRESS_READER
#include "pctl/fsio.h"
#include "pctl/procstat.h"
#include "pctl/progress.h"

int progress_page_parse(const void *buf, size_t size, uint64_t start_ticks, uint64_t *units)
{
        struct pctl_progress_page pg;

        if (size < sizeof(pg))
                return -EBADMSG;
        memcpy(&pg, buf, sizeof(pg));
        if (pg.magic != PCTL_PROGRESS_MAGIC)
                return -EBADMSG;
        if (pg.start_ticks != start_ticks)
                return -ESTALE;
        *units = pg.units;
        return 0;
}

int progress_read(pid_t pid, uint64_t *units)
{
        char path[64], proc[64], stat_line[1024];
        struct pctl_progress_page pg;
        struct stat st, pst;
        uint64_t start;
        ssize_t n;
        int fd, r;

        snprintf(path, sizeof(path), PCTL_PROGRESS_PATH_FMT, (long)pid);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ENOENT : -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EBADMSG;
        }
        /* Anyone may create a file under that name: only the process's owner's counts. */
        r = fs_path(proc, sizeof(proc), "/proc/%ld", (long)pid);
        if (r < 0 || stat(proc, &pst) < 0) {
                close(fd);
                return r < 0 ? r : -errno;
        }
        if (st.st_uid != pst.st_uid) {
                close(fd);
                return -EPERM;
        }
        n = pread(fd, &pg, sizeof(pg), 0);
        close(fd);
        if (n < 0)
                return -errno;
        r = fs_path(proc, sizeof(proc), "/proc/%ld/stat", (long)pid);
        if (r < 0)
                return r;
        if (file_read(proc, stat_line, sizeof(stat_line)) < 0)
                return -ESRCH;
        r = procstat_field_u64(stat_line, 22, &start);
        if (r < 0)
                return r;
        return progress_page_parse(&pg, (size_t)n, start, units);
}
