#include "pctl/control_client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "pctl/util.h"

int control_call_timeout(const char *path, const char *request, unsigned timeout_ms, char **reply)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;
        size_t len = 0, cap = 4096;
        char *buf;
        struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};

        if (strscpy(sa.sun_path, path, sizeof(sa.sun_path)) < 0)
                return -ENAMETOOLONG;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* The send timeout also bounds connect(): a daemon whose backlog is full, because it
         * hangs, must not hold the caller (a job's launch) for ever. */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return errno == EAGAIN ? -ETIMEDOUT : -errno;
        if (send(fd, request, strlen(request), MSG_NOSIGNAL) < 0 ||
            send(fd, "\n", 1, MSG_NOSIGNAL) < 0)
                return errno == EAGAIN ? -ETIMEDOUT : -errno;
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (len + 1 == cap) {
                        char *nbuf = realloc(buf, cap * 2);

                        if (!nbuf) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = nbuf;
                        cap *= 2;
                }
                n = recv(fd, buf + len, cap - 1 - len, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = -errno;

                        free(buf);
                        return r == -EAGAIN ? -ETIMEDOUT : r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        if (len == 0) {
                free(buf);
                return -ECONNRESET;
        }
        buf[len] = '\0';
        *reply = buf;
        return 0;
}

int control_call(const char *path, const char *request, char **reply)
{
        return control_call_timeout(path, request, CONTROL_CALL_TIMEOUT_MS, reply);
}
