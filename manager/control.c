#define _GNU_SOURCE /* accept4, struct ucred */
#include "pctl/control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "pctl/log.h"
#include "pctl/util.h"

struct control_server {
        sd_event *event;
        sd_event_source *listen_source;
        int listen_fd;
        char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
        bool owns_path;
        const struct control_command *commands;
        void *userdata;
};

struct control_conn {
        struct control_server *server;
        sd_event_source *io, *timer;
        int fd;
        size_t len;
        char buf[CONTROL_MAX_REQUEST + 1];
};

static void conn_free(struct control_conn *c)
{
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        free(c);
}

/* Replies are small; a peer that does not read them within the timeout loses them. */
static void conn_send(struct control_conn *c, const char *text, size_t len)
{
        size_t off = 0;

        while (off < len) {
                struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
                ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n > 0) {
                        off += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && poll(&pfd, 1, 1000) > 0)
                        continue;
                log_debug_errno(errno, "control: dropping a reply the peer does not read: %m");
                return;
        }
}

static void conn_reply_error(struct control_conn *c, const char *error)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        struct json j;

        if (!f)
                return;
        json_init(&j, f, false);
        json_object_begin(&j);
        json_kv_bool(&j, "ok", false);
        json_kv_string(&j, "error", error);
        json_object_end(&j);
        json_finish(&j);
        fclose(f);
        conn_send(c, text, len);
        free(text);
}

static const struct control_command *find_command(const struct control_server *s, const char *name)
{
        for (const struct control_command *cmd = s->commands; cmd->name; cmd++)
                if (strcmp(cmd->name, name) == 0)
                        return cmd;
        return NULL;
}

static void conn_handle(struct control_conn *c)
{
        struct control_server *s = c->server;
        struct control_request req = {0};
        const struct control_command *cmd;
        struct jsonv *msg = NULL;
        struct ucred cred;
        socklen_t cred_len = sizeof(cred);
        char err[256] = "", *text = NULL;
        size_t len = 0;
        FILE *f;
        struct json j;
        int r;

        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0) {
                conn_reply_error(c, "cannot identify the caller (SO_PEERCRED)");
                return;
        }
        if (jsonv_parse(c->buf, c->len, &msg, err, sizeof(err)) < 0) {
                char what[320];

                snprintf(what, sizeof(what), "malformed request: %s", err);
                conn_reply_error(c, what);
                return;
        }
        req = (struct control_request){.msg = msg, .uid = cred.uid, .pid = cred.pid};
        req.cmd = jsonv_get_string(msg, "cmd");
        if (!req.cmd) {
                conn_reply_error(c, "malformed request: no \"cmd\" string");
                goto out;
        }
        cmd = find_command(s, req.cmd);
        if (!cmd) {
                snprintf(err, sizeof(err), "unknown command \"%.64s\"", req.cmd);
                conn_reply_error(c, err);
                goto out;
        }
        if (cmd->needs_root && cred.uid != 0) {
                snprintf(err, sizeof(err),
                         "'%s' changes the machine and needs root (you are uid %u)", cmd->name,
                         (unsigned)cred.uid);
                conn_reply_error(c, err);
                goto out;
        }
        f = open_memstream(&text, &len);
        if (!f) {
                conn_reply_error(c, "out of memory");
                goto out;
        }
        /* The reply is built in memory: on failure it is thrown away for an error reply. */
        json_init(&j, f, false);
        json_object_begin(&j);
        json_kv_bool(&j, "ok", true);
        r = cmd->handler(s->userdata, &req, &j, err, sizeof(err));
        json_object_end(&j);
        json_finish(&j);
        fclose(f);
        if (r < 0)
                conn_reply_error(c, err[0] ? err : strerror(-r));
        else
                conn_send(c, text, len);
        free(text);
out:
        jsonv_free(msg);
}

static int conn_on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
        struct control_conn *c = userdata;
        ssize_t n;
        char *nl;

        (void)src;
        (void)revents;
        n = recv(fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n < 0) {
                conn_free(c);
                return 0;
        }
        c->len += (size_t)n;
        c->buf[c->len] = '\0';
        nl = memchr(c->buf, '\n', c->len);
        if (nl) {
                c->len = (size_t)(nl - c->buf);
        } else if (c->len == sizeof(c->buf) - 1) {
                char what[96];

                snprintf(what, sizeof(what), "request larger than %d bytes", CONTROL_MAX_REQUEST);
                conn_reply_error(c, what);
                conn_free(c);
                return 0;
        } else if (n > 0) {
                return 0; /* wait for the rest of the line */
        }
        /* A newline, or EOF after a request without one. */
        if (c->len > 0)
                conn_handle(c);
        conn_free(c);
        return 0;
}

static int conn_on_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
        struct control_conn *c = userdata;

        (void)src;
        (void)usec;
        conn_reply_error(c, "request not completed in time");
        conn_free(c);
        return 0;
}

static int server_on_accept(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
        struct control_server *s = userdata;
        struct control_conn *c;
        int cfd, r;

        (void)src;
        (void)revents;
        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) {
                /* EMFILE and friends: the peer is refused, the daemon carries on. */
                if (errno != EAGAIN && errno != EINTR)
                        log_warning_errno(errno, "control: accept failed, ignoring: %m");
                return 0;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(cfd);
                return 0;
        }
        c->server = s;
        c->fd = cfd;
        r = sd_event_add_io(s->event, &c->io, cfd, EPOLLIN, conn_on_io, c);
        if (r >= 0)
                r = sd_event_add_time_relative(s->event, &c->timer, CLOCK_MONOTONIC,
                                               CONTROL_TIMEOUT_USEC, 0, conn_on_timeout, c);
        if (r < 0) {
                log_warning_errno(r, "control: cannot watch a connection, dropping it: %m");
                conn_free(c);
        }
        return 0;
}

static int listen_on(const char *path, int *out)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        mode_t old;
        int fd, r;

        if (strscpy(sa.sun_path, path, sizeof(sa.sun_path)) < 0)
                return -ENAMETOOLONG;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A socket file left by a daemon that died is stale: nobody listens on it. */
        (void)unlink(path);
        old = umask(0111); /* 0666: anyone may ask for status; changes are checked per request */
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0 || listen(fd, 16) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        *out = fd;
        return 0;
}

int control_server_new(sd_event *e, const char *path, int listen_fd,
                       const struct control_command *commands, void *userdata,
                       struct control_server **out)
{
        struct control_server *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->event = e;
        s->commands = commands;
        s->userdata = userdata;
        s->listen_fd = listen_fd;
        if (listen_fd < 0) {
                r = strscpy(s->path, path, sizeof(s->path));
                if (r >= 0)
                        r = listen_on(path, &s->listen_fd);
                if (r < 0) {
                        free(s);
                        return r;
                }
                s->owns_path = true;
        } else {
                fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
        }
        r = sd_event_add_io(e, &s->listen_source, s->listen_fd, EPOLLIN, server_on_accept, s);
        if (r < 0) {
                control_server_free(s);
                return r;
        }
        *out = s;
        return 0;
}

void control_server_free(struct control_server *s)
{
        if (!s)
                return;
        sd_event_source_disable_unref(s->listen_source);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->owns_path)
                unlink(s->path);
        free(s);
}

int control_call(const char *path, const char *request, char **reply)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;
        size_t len = 0, cap = 4096;
        char *buf;
        struct timeval tv = {.tv_sec = 30};

        if (strscpy(sa.sun_path, path, sizeof(sa.sun_path)) < 0)
                return -ENAMETOOLONG;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        if (send(fd, request, strlen(request), MSG_NOSIGNAL) < 0 ||
            send(fd, "\n", 1, MSG_NOSIGNAL) < 0)
                return -errno;
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
