#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

char *fuzz_text(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);

        if (!s)
                return NULL;
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

const char *fuzz_file(const uint8_t *data, size_t size)
{
        static int fd = -1;
        static char path[64];
        size_t done = 0;

        if (fd < 0) {
                fd = memfd_create("pctl-fuzz", MFD_CLOEXEC);
                if (fd < 0)
                        return NULL;
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        }
        /* Truncate first: a shorter input must not keep the tail of the one before. */
        if (ftruncate(fd, 0) < 0)
                return NULL;
        while (done < size) {
                ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);

                if (n <= 0)
                        return NULL;
                done += (size_t)n;
        }
        return path;
}

int fuzz_fds_mark(void)
{
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                abort();
        close(fd);
        return fd;
}

void fuzz_check_fds(int mark)
{
        int fd = fuzz_fds_mark();

        if (fd > mark) {
                fprintf(stderr,
                        "a descriptor was left open: the lowest free one went from %d to %d\n",
                        mark, fd);
                abort();
        }
}
