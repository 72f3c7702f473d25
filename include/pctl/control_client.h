/* The client side of pctld's control socket (control.h has the protocol and the server): one
 * request line out, one reply line back. Needs only libc, so that what runs outside pctl — the
 * Slurm plugin inside slurmstepd — links it without sd-event. */
#pragma once

/* How long control_call() waits for pctld to accept, take and answer a request. */
#define CONTROL_CALL_TIMEOUT_MS 30000

/* Sends request (a JSON object, no newline) and returns the reply text in *reply (malloc'd,
 * NUL-terminated). -ENOENT/-ECONNREFUSED when no daemon listens at path, -ETIMEDOUT when the
 * whole call (connect, send, every byte of the reply) takes more than timeout_ms, -ECONNRESET (or
 * -EPIPE, before the request was out) when it closes without a reply. A reply the daemon wrote
 * before it closed is returned, even when it closed without reading the request (a refusal). */
int control_call_timeout(const char *path, const char *request, unsigned timeout_ms, char **reply);
/* The same with CONTROL_CALL_TIMEOUT_MS. */
int control_call(const char *path, const char *request, char **reply);
