#define _GNU_SOURCE /* accept4, struct ucred */
#include "pctl/control.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "pctl/jsonfmt.h"
#include "pctl/log.h"
#include "pctl/util.h"

struct control_conn;

struct control_server {
        sd_event *event;
        sd_event_source *listen_source;
        int listen_fd;
        char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
        bool owns_path;
        const struct control_command *commands;
        void *userdata;
        struct control_conn *conns; /* open connections, newest first */
        unsigned n_conns, peak_conns;
        unsigned refused; /* connections refused in the current burst */
};

/* A connection's buffer starts small and grows with the request, up to the limit. */
#define CONN_BUF_INITIAL 512

struct control_conn {
        struct control_server *server;
        struct control_conn *prev, *next;
        sd_event_source *io, *timer;
        int fd;
        uid_t uid;
        pid_t pid;
        size_t len, cap;
        char *buf;
};

void control_escape(const char *s, size_t len, char *out, size_t size)
{
        size_t n = 0;

        if (!size)
                return;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c >= 0x20 && c < 0x7f && c != '\\') {
                        if (n + 1 >= size)
                                break;
                        out[n++] = (char)c;
                } else {
                        if (n + 4 >= size)
                                break;
                        n += (size_t)snprintf(out + n, size - n, c == '\\' ? "\\\\" : "\\x%02x", c);
                }
        }
        out[n] = '\0';
}

static const char *type_article(struct json_object *v)
{
        switch (json_object_get_type(v)) {
        case json_type_boolean:
                return "a boolean";
        case json_type_double:
        case json_type_int:
                return "a number";
        case json_type_object:
                return "an object";
        case json_type_array:
                return "an array";
        case json_type_string:
                return "a string";
        case json_type_null:
                break;
        }
        return "null";
}

/* The member, or NULL when absent or null: both mean "not given". */
static struct json_object *request_member(const struct control_request *req, const char *key)
{
        struct json_object *v = NULL;

        if (!req->msg || !json_object_object_get_ex(req->msg, key, &v))
                return NULL;
        return v;
}

int control_request_string(const struct control_request *req, const char *key, const char **out,
                           char *error, size_t error_size)
{
        struct json_object *v = request_member(req, key);
        const char *s;

        if (!v)
                return -ENOENT;
        if (!json_object_is_type(v, json_type_string)) {
                snprintf(error, error_size, "\"%s\" must be a string, not %s", key,
                         type_article(v));
                return -EINVAL;
        }
        s = json_object_get_string(v);
        if (strlen(s) != (size_t)json_object_get_string_len(v)) {
                snprintf(error, error_size, "\"%s\" must be a string without NUL bytes", key);
                return -EINVAL;
        }
        *out = s;
        return 0;
}

int control_request_int(const struct control_request *req, const char *key, int64_t min,
                        int64_t max, int64_t *out, char *error, size_t error_size)
{
        struct json_object *v = request_member(req, key);
        double d;
        int64_t i;

        if (!v)
                return -ENOENT;
        /* 5.0 is an integer too; json-c keeps it a double. */
        d = json_object_get_double(v);
        if (json_object_is_type(v, json_type_int)) {
                i = json_object_get_int64(v);
                /* json-c reads integers above INT64_MAX as unsigned; they are out of range. */
                if (i == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
                        i = max < INT64_MAX ? max + 1 : INT64_MAX;
        } else if (json_object_is_type(v, json_type_double) && d == floor(d) && d >= -9.2e18 &&
                   d <= 9.2e18) {
                i = (int64_t)d;
        } else {
                snprintf(error, error_size, "\"%s\" must be an integer, not %s", key,
                         type_article(v));
                return -EINVAL;
        }
        if (i < min || i > max) {
                snprintf(error, error_size, "\"%s\" must be an integer %" PRId64 "..%" PRId64, key,
                         min, max);
                return -ERANGE;
        }
        *out = i;
        return 0;
}

void control_request_free(struct control_request *req)
{
        if (!req)
                return;
        json_object_put(req->msg);
        req->msg = NULL;
        req->cmd = NULL;
}

static bool all_space(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (!strchr(" \t\r\n", s[i]) || !s[i])
                        return false;
        return true;
}

int control_request_parse(const char *buf, size_t len, struct control_request *req, char *err,
                          size_t err_size)
{
        struct json_tokener *tok;
        struct json_object *msg;
        enum json_tokener_error jerr;
        char what[160];
        size_t end;
        int r;

        if (len > CONTROL_MAX_REQUEST) {
                snprintf(err, err_size, "request larger than %d bytes", CONTROL_MAX_REQUEST);
                return -EMSGSIZE;
        }
        if (all_space(buf, len)) {
                snprintf(err, err_size,
                         "empty request: expected a JSON object on one line, such as "
                         "{\"cmd\":\"status\"}");
                return -EINVAL;
        }
        tok = json_tokener_new_ex(CONTROL_MAX_DEPTH);
        if (!tok) {
                snprintf(err, err_size, "out of memory");
                return -ENOMEM;
        }
        /* Strict: no comments, single quotes or trailing commas; strings must be UTF-8. */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        msg = json_tokener_parse_ex(tok, buf, (int)len);
        jerr = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        if (!msg && jerr == json_tokener_continue) {
                /* The line ended inside a value: a NUL tells the tokener there is no more. */
                msg = json_tokener_parse_ex(tok, "", 1);
                jerr = json_tokener_get_error(tok);
                end = len;
        }
        json_tokener_free(tok);
        if (!msg) {
                snprintf(err, err_size, "malformed request: %s at byte %zu",
                         json_tokener_error_desc(jerr), end);
                return -EINVAL;
        }
        if (end < len && !all_space(buf + end, len - end)) {
                snprintf(err, err_size, "malformed request: trailing characters at byte %zu", end);
                json_object_put(msg);
                return -EINVAL;
        }
        *req = (struct control_request){.msg = msg};
        if (!json_object_is_type(msg, json_type_object)) {
                snprintf(err, err_size, "malformed request: no \"cmd\" string (%s, not an object)",
                         type_article(msg));
                control_request_free(req);
                return -EINVAL;
        }
        r = control_request_string(req, "cmd", &req->cmd, what, sizeof(what));
        if (r < 0) {
                if (r == -ENOENT)
                        snprintf(err, err_size, "malformed request: no \"cmd\" string");
                else
                        snprintf(err, err_size, "malformed request: %s", what);
                control_request_free(req);
                return -EINVAL;
        }
        return 0;
}

static void conn_free(struct control_conn *c)
{
        struct control_server *s = c->server;

        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_conns--;
        free(c->buf);
        free(c);
        if (s->n_conns > 0)
                return;
        if (s->refused) {
                log_info("control: all connections closed; %u were refused while too many were "
                         "open",
                         s->refused);
                s->refused = 0;
        }
        /* A burst's buffers went back to malloc; give the pages back to the system. */
        if (s->peak_conns > CONTROL_MAX_CONNECTIONS_PER_UID / 2)
                malloc_trim(0);
        s->peak_conns = 0;
}

/* Replies are small; a peer that does not read them within the timeout loses them. */
static void conn_send(int fd, const char *text, size_t len)
{
        size_t off = 0;

        while (off < len) {
                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

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

/* Sends reply as one line; it is put afterwards. */
static void send_reply(int fd, struct json_object *reply)
{
        size_t len;
        const char *text;
        char *line;

        text = json_object_to_json_string_length(reply, jsonfmt_flags(false), &len);
        line = text ? malloc(len + 1) : NULL;
        if (line) {
                memcpy(line, text, len);
                line[len] = '\n';
                conn_send(fd, line, len + 1);
                free(line);
        }
        json_object_put(reply);
}

static void reply_error(int fd, const char *error)
{
        struct json_object *reply = json_object_new_object();

        if (!reply)
                return;
        json_object_object_add(reply, "ok", json_object_new_boolean(false));
        json_object_object_add(reply, "error", json_object_new_string(error));
        send_reply(fd, reply);
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
        struct json_object *reply;
        char err[512] = "", what[320];
        int r;

        if (control_request_parse(c->buf, c->len, &req, err, sizeof(err)) < 0) {
                reply_error(c->fd, err);
                return;
        }
        req.uid = c->uid;
        req.pid = c->pid;
        cmd = find_command(s, req.cmd);
        if (!cmd) {
                control_escape(req.cmd, strlen(req.cmd), what, 64 + 1);
                snprintf(err, sizeof(err), "unknown command \"%s\"", what);
                reply_error(c->fd, err);
                goto out;
        }
        if (cmd->needs_root && c->uid != 0) {
                snprintf(err, sizeof(err),
                         "'%s' changes the machine and needs root (you are uid %u)", cmd->name,
                         (unsigned)c->uid);
                reply_error(c->fd, err);
                goto out;
        }
        /* The reply is built in memory: on failure it is thrown away for an error reply. */
        reply = json_object_new_object();
        if (!reply) {
                reply_error(c->fd, "out of memory");
                goto out;
        }
        json_object_object_add(reply, "ok", json_object_new_boolean(true));
        r = cmd->handler(s->userdata, &req, reply, err, sizeof(err));
        if (r < 0) {
                json_object_put(reply);
                reply_error(c->fd, err[0] ? err : strerror(-r));
        } else {
                send_reply(c->fd, reply);
        }
out:
        control_request_free(&req);
}

/* Room for at least one more byte: the buffer doubles up to the limit + 1 (a line that
 * fills it is too large). */
static int conn_grow(struct control_conn *c)
{
        size_t cap;
        char *buf;

        if (c->len < c->cap)
                return 0;
        cap = c->cap ? c->cap * 2 : CONN_BUF_INITIAL;
        if (cap > CONTROL_MAX_REQUEST + 1)
                cap = CONTROL_MAX_REQUEST + 1;
        buf = realloc(c->buf, cap);
        if (!buf)
                return -ENOMEM;
        c->buf = buf;
        c->cap = cap;
        return 0;
}

static int conn_on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
        struct control_conn *c = userdata;
        size_t start = c->len;
        ssize_t n;
        char *nl;

        (void)src;
        (void)revents;
        if (conn_grow(c) < 0) {
                reply_error(c->fd, "out of memory");
                conn_free(c);
                return 0;
        }
        n = recv(fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n < 0) {
                conn_free(c);
                return 0;
        }
        c->len += (size_t)n;
        nl = memchr(c->buf + start, '\n', c->len - start);
        if (nl)
                c->len = (size_t)(nl - c->buf);
        else if (n > 0 && c->len <= CONTROL_MAX_REQUEST)
                return 0; /* wait for the rest of the line */
        if (c->len > CONTROL_MAX_REQUEST) {
                char what[96];

                snprintf(what, sizeof(what), "request larger than %d bytes", CONTROL_MAX_REQUEST);
                reply_error(c->fd, what);
                conn_free(c);
                return 0;
        }
        /* A line, even an empty one, or EOF after some bytes without a newline. */
        if (nl || c->len > 0)
                conn_handle(c);
        conn_free(c);
        return 0;
}

static int conn_on_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
        struct control_conn *c = userdata;

        (void)src;
        (void)usec;
        reply_error(c->fd, "request not completed in time");
        conn_free(c);
        return 0;
}

static unsigned conns_of_uid(const struct control_server *s, uid_t uid)
{
        unsigned n = 0;

        for (const struct control_conn *c = s->conns; c; c = c->next)
                n += c->uid == uid;
        return n;
}

/* Over a limit, the peer gets one line saying so (the socket is fresh: it fits without
 * waiting) and is closed; the log says it once per burst, not once per connection. */
static bool server_refuse(struct control_server *s, int fd, uid_t uid)
{
        char what[160];
        unsigned mine;

        if (s->n_conns >= CONTROL_MAX_CONNECTIONS)
                snprintf(what, sizeof(what),
                         "too many connections: %u open, the limit; try again later",
                         CONTROL_MAX_CONNECTIONS);
        else if ((mine = conns_of_uid(s, uid)) >= CONTROL_MAX_CONNECTIONS_PER_UID)
                snprintf(what, sizeof(what),
                         "too many connections: uid %u has %u open, the limit per user; try "
                         "again later",
                         (unsigned)uid, mine);
        else
                return false;
        if (s->refused++ == 0)
                log_warning("control: refusing connections: %s", what);
        reply_error(fd, what);
        return true;
}

static int server_on_accept(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
        struct control_server *s = userdata;
        struct control_conn *c;
        struct ucred cred;
        socklen_t cred_len = sizeof(cred);
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
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0) {
                reply_error(cfd, "cannot identify the caller (SO_PEERCRED)");
                close(cfd);
                return 0;
        }
        if (server_refuse(s, cfd, cred.uid)) {
                close(cfd);
                return 0;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(cfd);
                return 0;
        }
        *c = (struct control_conn){
            .server = s, .next = s->conns, .fd = cfd, .uid = cred.uid, .pid = cred.pid};
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        if (s->n_conns > s->peak_conns)
                s->peak_conns = s->n_conns;
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
        while (s->conns)
                conn_free(s->conns);
        sd_event_source_disable_unref(s->listen_source);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->owns_path)
                unlink(s->path);
        free(s);
}
