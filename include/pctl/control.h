/* The control socket: one JSON request line in, one JSON reply line out, per connection.
 * Anyone may connect (status is public); requests that change something need root, checked
 * with SO_PEERCRED. Malformed, oversized or slow requests get an error reply or are dropped;
 * the daemon lives on. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "pctl/json.h"
#include "pctl/jsonv.h"

#define CONTROL_MAX_REQUEST (64 * 1024)
#define CONTROL_TIMEOUT_USEC (5 * 1000000ULL)

struct control_request {
        const struct jsonv *msg; /* the parsed request object */
        const char *cmd;         /* msg["cmd"] */
        uid_t uid;               /* of the peer, from SO_PEERCRED */
        pid_t pid;
};

/* Fills the reply object's members (the server adds "ok" and "error"). Returns 0, or a
 * negative errno with *error set to a message for the user. */
typedef int (*control_handler_t)(void *userdata, const struct control_request *req,
                                 struct json *reply, char *error, size_t error_size);

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

/* Client side: sends request (a JSON object, no newline) and returns the reply text in *reply
 * (malloc'd, NUL-terminated). -ENOENT/-ECONNREFUSED when no daemon listens at path. */
int control_call(const char *path, const char *request, char **reply);
