/* The control socket: one JSON request line in, one JSON reply line out, per connection.
 * Anyone may connect (status is public); requests that change something need root, checked
 * with SO_PEERCRED. Malformed, oversized or slow requests get an error reply or are dropped;
 * the daemon lives on. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "pctl/control_client.h"

struct json_object;

#define CONTROL_MAX_REQUEST (64 * 1024)
#define CONTROL_MAX_DEPTH 16 /* nesting of a request; ours are flat */
/* From accept to the reply's last byte: absolute, not restarted by each byte. */
#define CONTROL_TIMEOUT_USEC (5 * 1000000ULL)
/* Connections open at once, in all and per peer uid: each holds a buffer and a timer, so an
 * unprivileged flood must not grow the daemon; one user cannot take every slot either, and
 * the last CONTROL_ROOT_RESERVED are root's alone (root has no per-user limit), so users
 * holding idle connections cannot lock root out of `pctl run`. */
#define CONTROL_MAX_CONNECTIONS 64
#define CONTROL_MAX_CONNECTIONS_PER_UID 16
#define CONTROL_ROOT_RESERVED 8
/* Replies are written when the peer's socket takes them, never waited for in the loop. One
 * reply over CONTROL_MAX_REPLY, or one that would take the unsent replies of all connections
 * past CONTROL_MAX_BUFFERED, drops its client instead. */
#define CONTROL_MAX_REPLY (4 * 1024 * 1024)
#define CONTROL_MAX_BUFFERED (16 * 1024 * 1024)
/* Out of descriptors, accepting pauses from the first to the second, doubling each time. */
#define CONTROL_BACKOFF_MIN_USEC (100 * 1000ULL)
#define CONTROL_BACKOFF_MAX_USEC (2 * 1000000ULL)

struct control_request {
        struct json_object *msg; /* the parsed request object, owned */
        const char *cmd;         /* msg["cmd"]: a string without NUL bytes */
        uid_t uid;               /* of the peer, from SO_PEERCRED */
        gid_t gid;
        pid_t pid;
        const gid_t *groups; /* the peer's supplementary groups (SO_PEERGROUPS) */
        size_t n_groups;
};

/* Parses one request line of len bytes (without its newline; need not be NUL-terminated): a
 * JSON object, nested at most CONTROL_MAX_DEPTH deep, with a "cmd" string. Pure: no sockets,
 * no logging. Returns 0 with req->msg and req->cmd set (uid and pid are left 0), or -EINVAL
 * (empty, malformed, not an object, no "cmd" string) or -EMSGSIZE (over CONTROL_MAX_REQUEST)
 * with err saying what is wrong; err never holds raw bytes of the request. */
int control_request_parse(const char *buf, size_t len, struct control_request *req, char *err,
                          size_t err_size);
/* Frees what control_request_parse() allocated; accepts a request it refused. */
void control_request_free(struct control_request *req);

/* Typed members of a request, for handlers. An absent or null member is -ENOENT; a member of
 * another type or a string with a NUL byte is -EINVAL, an integer out of range -ERANGE, with
 * error naming the member and what it must be. */
int control_request_string(const struct control_request *req, const char *key, const char **out,
                           char *error, size_t error_size);
int control_request_int(const struct control_request *req, const char *key, int64_t min,
                        int64_t max, int64_t *out, char *error, size_t error_size);

/* Copies len bytes of s into out (NUL-terminated, truncated to size, never inside an escape)
 * with every byte outside printable ASCII written as \xNN and a backslash as two, so text
 * from a peer never reaches a reply or a log raw and cannot forge an escape. */
void control_escape(const char *s, size_t len, char *out, size_t size);

/* Pure: the message refusing a new connection of uid while n_conns are open (n_root of them
 * root's, of_uid of them uid's), written into buf and returned; NULL when it may come in. */
const char *control_refusal(unsigned n_conns, unsigned n_root, unsigned of_uid, uid_t uid,
                            char *buf, size_t size);

/* Adds the reply object's members (the server adds "ok" and "error"). Returns 0, or a
 * negative errno with *error set to a message for the user. */
typedef int (*control_handler_t)(void *userdata, const struct control_request *req,
                                 struct json_object *reply, char *error, size_t error_size);

struct control_command {
        const char *name;
        bool needs_root;
        control_handler_t handler;
};

struct control_server;

/* Listens on path (created 0666, replacing a stale socket), or on listen_fd >= 0 when
 * systemd passed one (socket activation). commands is a table ending in { NULL }. */
int control_server_new(sd_event *e, const char *path, int listen_fd,
                       const struct control_command *commands, void *userdata,
                       struct control_server **out);
void control_server_free(struct control_server *s);

/* The client side, control_call(), is in control_client.h: it links without sd-event. */
