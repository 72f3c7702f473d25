#include "pctl/fsio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pctl/util.h"

static char fs_root_prefix[256];

int fs_set_root(const char *root)
{
        int r = strscpy(fs_root_prefix, root ? root : "", sizeof(fs_root_prefix));
        size_t len = strlen(fs_root_prefix);

        /* "/tmp/x/" + "/sys/..." would work, but keep paths in messages clean. */
        while (len > 0 && fs_root_prefix[len - 1] == '/')
                fs_root_prefix[--len] = '\0';
        return r;
}

const char *fs_root(void)
{
        return fs_root_prefix;
}

int fs_path(char *buf, size_t size, const char *fmt, ...)
{
        size_t len = strlen(fs_root_prefix);
        va_list ap;
        int n;

        if (len >= size)
                return -ENAMETOOLONG;
        memcpy(buf, fs_root_prefix, len + 1);
        va_start(ap, fmt);
        n = vsnprintf(buf + len, size - len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= size - len)
                return -ENAMETOOLONG;
        return 0;
}

ssize_t file_read(const char *abs_path, char *buf, size_t size)
{
        return file_read_at(AT_FDCWD, abs_path, buf, size);
}

ssize_t file_read_at(int dir_fd, const char *path, char *buf, size_t size)
{
        _cleanup_close_ int fd = -1;
        size_t len = 0;

        if (size == 0)
                return -ENOBUFS;
        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n = read(fd, buf + len, size - 1 - len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == size - 1)
                        return -EFBIG;
        }
        buf[len] = '\0';
        if (len > 0 && buf[len - 1] == '\n')
                buf[--len] = '\0';
        return (ssize_t)len;
}

int file_write(const char *abs_path, const char *value)
{
        _cleanup_close_ int fd = -1;
        size_t len = strlen(value);
        ssize_t n;

        fd = open(abs_path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = write(fd, value, len);
        if (n < 0)
                return -errno;
        if ((size_t)n != len)
                return -EIO;
        return 0;
}

ssize_t fs_read(const char *path, char *buf, size_t size)
{
        char full[4096];
        int r = fs_path(full, sizeof(full), "%s", path);

        if (r < 0)
                return r;
        return file_read(full, buf, size);
}

int fs_read_u64(const char *path, uint64_t *out)
{
        char buf[64];
        ssize_t n = fs_read(path, buf, sizeof(buf));

        if (n < 0)
                return (int)n;
        return parse_u64(strstrip(buf), out);
}

int fs_write(const char *path, const char *value)
{
        char full[4096];
        int r = fs_path(full, sizeof(full), "%s", path);

        if (r < 0)
                return r;
        return file_write(full, value);
}
