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
#include "pctl/ratelimit.h"
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
        unsigned n_root;  /* of them root's */
        unsigned refused; /* connections refused in the current burst */
        size_t out_bytes; /* replies buffered, not yet taken, in all */
        struct ratelimit drop_rl, accept_rl, gone_rl;
        sd_event_source *retry; /* accepting again after running out of descriptors */
        uint64_t backoff_usec;  /* the current pause; 0 after an accept that worked */
};

/* A connection's buffer starts small and grows with the request, up to the limit. */
#define CONN_BUF_INITIAL 512

struct control_conn {
        struct control_server *server;
        struct control_conn *prev, *next;
        sd_event_source *io, *timer;
        int fd;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        gid_t *groups; /* SO_PEERGROUPS, for [daemon] users = GROUP */
        size_t n_groups;
        size_t len, cap;
        char *buf;
        char *out; /* the reply line, once there is one; then nothing more is read */
        size_t out_len, out_off;
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
        s->n_root -= c->uid == 0;
        s->out_bytes -= c->out_len;
        free(c->buf);
        free(c->out);
        free(c->groups);
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

/* One try, never waiting: for the line that refuses a fresh connection (it fits in the
 * socket's buffer) and the last word to one that ran out of time. */
static void send_now(int fd, const char *text, size_t len)
{
        if (send(fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                log_debug_errno(errno, "control: a reply was not taken: %m");
}

static char *error_line(const char *error, size_t *len)
{
        struct json_object *reply = json_object_new_object();
        const char *text;
        char *line = NULL;

        if (!reply)
                return NULL;
        json_object_object_add(reply, "ok", json_object_new_boolean(false));
        json_object_object_add(reply, "error", json_object_new_string(error));
        text = json_object_to_json_string_length(reply, jsonfmt_flags(false), len);
        if (text && (line = malloc(*len + 1))) {
                memcpy(line, text, *len);
                line[(*len)++] = '\n';
        }
        json_object_put(reply);
        return line;
}

static void send_error_now(int fd, const char *error)
{
        size_t len;
        char *line = error_line(error, &len);

        if (line)
                send_now(fd, line, len);
        free(line);
}

/* Writes what the socket takes now. The connection is closed once the reply is out or the
 * peer is gone; else it waits for EPOLLOUT. Never blocks the loop. */
static void conn_flush(struct control_conn *c)
{
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n > 0) {
                        c->out_off += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        if (sd_event_source_set_io_events(c->io, EPOLLOUT) >= 0)
                                return;
                }
                log_debug_errno(errno, "control: the peer did not take its reply: %m");
                break;
        }
        conn_free(c);
}

/* Takes the line (len bytes, malloc'd, newline included) as the connection's reply and starts
 * writing it; the connection may be gone on return. Past the caps, the client is dropped: a
 * peer that does not read must not grow the daemon. */
static void conn_reply_line(struct control_conn *c, char *line, size_t len)
{
        struct control_server *s = c->server;
        unsigned missed;

        if (!line) {
                send_error_now(c->fd, "out of memory");
                conn_free(c);
                return;
        }
        if (len > CONTROL_MAX_REPLY || s->out_bytes + len > CONTROL_MAX_BUFFERED) {
                if (ratelimit_pass(&s->drop_rl, now_ns(), &missed))
                        log_warning("control: dropping uid %u's connection: its reply (%zu bytes) "
                                    "would pass the cap on unsent replies (%zu of %d bytes "
                                    "buffered)%s",
                                    (unsigned)c->uid, len, s->out_bytes, CONTROL_MAX_BUFFERED,
                                    missed ? "; more were dropped before" : "");
                free(line);
                conn_free(c);
                return;
        }
        c->out = line;
        c->out_len = len;
        s->out_bytes += len;
        conn_flush(c);
}

/* Puts reply (it is put here) as one line. */
static void conn_reply(struct control_conn *c, struct json_object *reply)
{
        size_t len = 0;
        const char *text = json_object_to_json_string_length(reply, jsonfmt_flags(false), &len);
        char *line = text ? malloc(len + 1) : NULL;

        if (line) {
                memcpy(line, text, len);
                line[len++] = '\n';
        }
        json_object_put(reply);
        conn_reply_line(c, line, len);
}

static void conn_error(struct control_conn *c, const char *error)
{
        size_t len = 0;
        char *line = error_line(error, &len);

        conn_reply_line(c, line, len);
}

static const struct control_command *find_command(const struct control_server *s, const char *name)
{
        for (const struct control_command *cmd = s->commands; cmd->name; cmd++)
                if (strcmp(cmd->name, name) == 0)
                        return cmd;
        return NULL;
}

static bool conn_hung_up(const struct control_conn *c)
{
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};

        return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
}

/* Answers the request in c->buf; the connection may be gone on return. */
static void conn_handle(struct control_conn *c)
{
        struct control_server *s = c->server;
        struct control_request req = {0};
        const struct control_command *cmd;
        struct json_object *reply;
        char err[512] = "", what[320];
        int r;

        if (control_request_parse(c->buf, c->len, &req, err, sizeof(err)) < 0) {
                conn_error(c, err);
                return;
        }
        /* A client that went away before it was answered (the Slurm plugin after its timeout
         * told the job it runs unmanaged) must not have its request carried out later: the
         * socket is hung up both ways (a half-close, shutdown(SHUT_WR), still waits). */
        if (conn_hung_up(c)) {
                unsigned missed;

                if (ratelimit_pass(&s->gone_rl, now_ns(), &missed))
                        log_notice("control: dropped a \"%.32s\" request of uid %u: its client "
                                   "went away before it was answered (%u more before)",
                                   find_command(s, req.cmd) ? req.cmd : "unknown", (unsigned)c->uid,
                                   missed);
                control_request_free(&req);
                conn_free(c);
                return;
        }
        req.uid = c->uid;
        req.gid = c->gid;
        req.pid = c->pid;
        req.groups = c->groups;
        req.n_groups = c->n_groups;
        cmd = find_command(s, req.cmd);
        if (!cmd) {
                control_escape(req.cmd, strlen(req.cmd), what, 64 + 1);
                snprintf(err, sizeof(err), "unknown command \"%s\"", what);
                goto refuse;
        }
        if (cmd->needs_root && c->uid != 0) {
                snprintf(err, sizeof(err),
                         "'%s' changes the machine and needs root (you are uid %u)", cmd->name,
                         (unsigned)c->uid);
                goto refuse;
        }
        /* The reply is built in memory: on failure it is thrown away for an error reply. */
        reply = json_object_new_object();
        if (!reply) {
                snprintf(err, sizeof(err), "out of memory");
                goto refuse;
        }
        json_object_object_add(reply, "ok", json_object_new_boolean(true));
        r = cmd->handler(s->userdata, &req, reply, err, sizeof(err));
        control_request_free(&req);
        if (r < 0) {
                json_object_put(reply);
                conn_error(c, err[0] ? err : strerror(-r));
        } else {
                conn_reply(c, reply);
        }
        return;
refuse:
        control_request_free(&req);
        conn_error(c, err);
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
        if (c->out) {
                /* Writable, or the peer hung up: either way flush says. */
                (void)revents;
                conn_flush(c);
                return 0;
        }
        if (conn_grow(c) < 0) {
                send_error_now(c->fd, "out of memory");
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
                conn_error(c, what);
                return 0;
        }
        /* A line, even an empty one, or EOF after some bytes without a newline. */
        if (nl || c->len > 0)
                conn_handle(c);
        else
                conn_free(c);
        return 0;
}

/* The deadline is the request's, from accept to the reply's last byte: a peer that trickles
 * its request or reads its reply slowly does not hold a slot past it. */
static int conn_on_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
        struct control_conn *c = userdata;

        (void)src;
        (void)usec;
        if (!c->out)
                send_error_now(c->fd, "request not completed in time");
        else
                log_debug("control: uid %u did not read its reply in time, dropping it",
                          (unsigned)c->uid);
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

/* Pure: why a new connection of uid is refused, or NULL. Root has the last
 * CONTROL_ROOT_RESERVED slots to itself and no per-user limit, so users holding connections
 * cannot lock it out. */
const char *control_refusal(unsigned n_conns, unsigned n_root, unsigned of_uid, uid_t uid,
                            char *buf, size_t size)
{
        unsigned others = n_conns - n_root;

        if (n_conns >= CONTROL_MAX_CONNECTIONS)
                snprintf(buf, size, "too many connections: %u open, the limit; try again later",
                         CONTROL_MAX_CONNECTIONS);
        else if (uid != 0 && others >= CONTROL_MAX_CONNECTIONS - CONTROL_ROOT_RESERVED)
                snprintf(buf, size,
                         "too many connections: %u of users other than root open, their limit "
                         "(%u more are kept for root); try again later",
                         others, CONTROL_ROOT_RESERVED);
        else if (uid != 0 && of_uid >= CONTROL_MAX_CONNECTIONS_PER_UID)
                snprintf(buf, size,
                         "too many connections: uid %u has %u open, the limit per user; try "
                         "again later",
                         (unsigned)uid, of_uid);
        else
                return NULL;
        return buf;
}

/* Over a limit, the peer gets one line saying so (the socket is fresh: it fits without
 * waiting) and is closed; the log says it once per burst, not once per connection. */
static bool server_refuse(struct control_server *s, int fd, uid_t uid)
{
        char what[200];

        if (!control_refusal(s->n_conns, s->n_root, uid == 0 ? 0 : conns_of_uid(s, uid), uid, what,
                             sizeof(what)))
                return false;
        if (s->refused++ == 0)
                log_warning("control: refusing connections: %s", what);
        send_error_now(fd, what);
        return true;
}

static int server_on_retry(sd_event_source *src, uint64_t usec, void *userdata)
{
        struct control_server *s = userdata;

        (void)src;
        (void)usec;
        sd_event_source_set_enabled(s->listen_source, SD_EVENT_ON);
        return 0;
}

/* Out of descriptors (or memory): the pending connection cannot be taken, and the listening
 * socket stays readable. Accepting stops for a while, longer each time in a row, so the loop
 * does not spin; the log says so at most once a minute. */
static void server_back_off(struct control_server *s, int error)
{
        unsigned missed;
        int r;

        s->backoff_usec = s->backoff_usec ? s->backoff_usec * 2 : CONTROL_BACKOFF_MIN_USEC;
        if (s->backoff_usec > CONTROL_BACKOFF_MAX_USEC)
                s->backoff_usec = CONTROL_BACKOFF_MAX_USEC;
        if (ratelimit_pass(&s->accept_rl, now_ns(), &missed))
                log_warning_errno(error,
                                  "control: cannot accept connections (%m): not accepting for "
                                  "up to %.1f s at a time until it clears (%u more like this "
                                  "before)",
                                  CONTROL_BACKOFF_MAX_USEC / 1e6, missed);
        sd_event_source_set_enabled(s->listen_source, SD_EVENT_OFF);
        if (s->retry)
                r = sd_event_source_set_time_relative(s->retry, s->backoff_usec);
        else
                r = sd_event_add_time_relative(s->event, &s->retry, CLOCK_MONOTONIC,
                                               s->backoff_usec, 0, server_on_retry, s);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->retry, SD_EVENT_ONESHOT);
        if (r < 0) /* no timer: better to spin than to stop listening for good */
                sd_event_source_set_enabled(s->listen_source, SD_EVENT_ON);
}

/* The peer's supplementary groups; none when the kernel cannot say (then only the primary
 * group counts). */
static void conn_read_groups(struct control_conn *c)
{
        socklen_t len = 32 * sizeof(gid_t);

        for (int tries = 0; tries < 2; tries++) {
                gid_t *g = malloc(len ? len : sizeof(gid_t));

                if (!g)
                        return;
                if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0) {
                        c->groups = g;
                        c->n_groups = len / sizeof(gid_t);
                        return;
                }
                free(g);
                if (errno != ERANGE)
                        return;
        }
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
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                        server_back_off(s, errno);
                else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                        log_warning_errno(errno, "control: accept failed, ignoring: %m");
                return 0;
        }
        s->backoff_usec = 0;
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0) {
                send_error_now(cfd, "cannot identify the caller (SO_PEERCRED)");
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
        *c = (struct control_conn){.server = s,
                                   .next = s->conns,
                                   .fd = cfd,
                                   .uid = cred.uid,
                                   .gid = cred.gid,
                                   .pid = cred.pid};
        conn_read_groups(c);
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        s->n_root += cred.uid == 0;
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
        s->drop_rl = RATELIMIT_INIT(60 * NSEC_PER_SEC, 1);
        s->accept_rl = RATELIMIT_INIT(60 * NSEC_PER_SEC, 1);
        s->gone_rl = RATELIMIT_INIT(60 * NSEC_PER_SEC, 5);
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
        sd_event_source_disable_unref(s->retry);
        sd_event_source_disable_unref(s->listen_source);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->owns_path)
                unlink(s->path);
        free(s);
}
