#include "pctl/control_client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
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
        struct iovec iov[2] = {{.iov_base = (void *)request, .iov_len = strlen(request)},
                               {.iov_base = "\n", .iov_len = 1}};
        int send_err = 0;
        uint64_t start_ns = now_ns();

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
        /* The request and its newline in one message: sent apart, a peer that answers and
         * closes as soon as it has read the request (pctld refusing one connection too many)
         * left the newline to fail with EPIPE, and the caller lost what it was told. */
        {
                int64_t left_ms = (int64_t)timeout_ms - (int64_t)((now_ns() - start_ns) / 1000000);

                if (left_ms <= 0)
                        return -ETIMEDOUT;
                tv = (struct timeval){.tv_sec = left_ms / 1000, .tv_usec = (left_ms % 1000) * 1000};
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        }
        if (sendmsg(fd, &(struct msghdr){.msg_iov = iov, .msg_iovlen = 2}, MSG_NOSIGNAL) < 0) {
                if (errno == EAGAIN)
                        return -ETIMEDOUT;
                /* Closed before it read: whatever it wrote first is still ours to read. */
                if (errno != EPIPE && errno != ECONNRESET)
                        return -errno;
                send_err = -errno;
        }
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;
                int64_t left_ms = (int64_t)timeout_ms - (int64_t)((now_ns() - start_ns) / 1000000);

                /* The timeout is the call's, not each recv's: a reply that trickles a byte at
                 * a time must not hold the caller past it. */
                if (left_ms <= 0) {
                        free(buf);
                        return -ETIMEDOUT;
                }
                tv = (struct timeval){.tv_sec = left_ms / 1000, .tv_usec = (left_ms % 1000) * 1000};
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
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
                /* A peer that answers and closes with our request unread resets the
                 * connection after its answer: the answer stands. */
                if (n < 0 && errno == ECONNRESET && len > 0)
                        break;
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
                return send_err ? send_err : -ECONNRESET;
        }
        buf[len] = '\0';
        *reply = buf;
        return 0;
}

int control_call(const char *path, const char *request, char **reply)
{
        return control_call_timeout(path, request, CONTROL_CALL_TIMEOUT_MS, reply);
}
