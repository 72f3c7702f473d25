/* The CLI's reading of what pctld answers (cli/client.c and the commands' renderers): a pctld
 * of another version, a broken one or something else listening on the socket may send any
 * line. The input is that reply, from a socket of the harness's own: `pctl status`, `pctl
 * status --json` and `pctl adopt` each read it and must take any of it: no crash, no leak,
 * no undefined behaviour. The same reply, parsed as pctld's run report, goes through the
 * lines of `pctl run`'s summary that say where the command ran (its configurations, packages
 * and why it lay spread), which run_report_where renders without a command to run. Descriptors are
 * not checked here: with the harness's server thread and libFuzzer's own (its RSS watch opens
 * /proc/self/status), the lowest free one is not this thread's alone to judge. */
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../cli/commands.h"
#include "fuzz_util.h"

static char sock_path[64];
static int listen_fd = -1;
static const uint8_t *reply;
static size_t reply_len;
/* Connections the server accepted and closed: each input waits for all of them, so that no
 * connection of one input is answered with the next one's reply. */
static pthread_mutex_t served_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t served_cond = PTHREAD_COND_INITIALIZER;
static unsigned served, accepted;

/* Answers every connection with the current input, after reading the request line. */
static void *serve(void *arg)
{
        (void)arg;
        for (;;) {
                int c = accept(listen_fd, NULL, NULL);
                char buf[4096];

                if (c < 0)
                        continue;
                pthread_mutex_lock(&served_lock);
                accepted++;
                pthread_mutex_unlock(&served_lock);
                (void)!recv(c, buf, sizeof(buf), 0);
                if (reply_len)
                        (void)!send(c, reply, reply_len, MSG_NOSIGNAL);
                close(c);
                pthread_mutex_lock(&served_lock);
                served++;
                pthread_cond_broadcast(&served_cond);
                pthread_mutex_unlock(&served_lock);
        }
        return NULL;
}

static void setup(void)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        pthread_t t;

        snprintf(sock_path, sizeof(sock_path), "/tmp/pctl-fuzz-reply-%d.sock", (int)getpid());
        unlink(sock_path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            listen(listen_fd, 8) < 0 || pthread_create(&t, NULL, serve, NULL) != 0)
                abort();
        /* The commands' messages would fill the log; PCTL_FUZZ_VERBOSE=1 keeps stderr (to
         * read a crash's report when reproducing it: libFuzzer keeps the input either way). */
        if (!freopen("/dev/null", "w", stdout) ||
            (!getenv("PCTL_FUZZ_VERBOSE") && !freopen("/dev/null", "w", stderr)))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static bool ready;
        char *status[] = {(char *)"status", (char *)"--socket", sock_path, NULL};
        char *json[] = {(char *)"status", (char *)"--json", (char *)"--socket", sock_path, NULL};
        char *adopt[] = {(char *)"adopt", (char *)"1", (char *)"--socket", sock_path, NULL};

        if (!ready) {
                setup();
                ready = true;
        }
        /* The server thread reads these only while a command waits for its reply. */
        reply = data;
        reply_len = size;
        pthread_mutex_lock(&served_lock);
        served = accepted = 0;
        pthread_mutex_unlock(&served_lock);
        (void)cmd_status(3, status);
        (void)cmd_status(4, json);
        (void)cmd_adopt(4, adopt);
        pthread_mutex_lock(&served_lock);
        while (served < 3 || served < accepted)
                pthread_cond_wait(&served_cond, &served_lock);
        pthread_mutex_unlock(&served_lock);
        {
                struct json_tokener *tok = json_tokener_new();
                struct json_object *rep;

                if (!tok)
                        abort();
                rep = json_tokener_parse_ex(tok, (const char *)data,
                                            (int)(size > INT32_MAX ? INT32_MAX : size));
                if (rep)
                        run_report_where(rep);
                json_object_put(rep);
                json_tokener_free(tok);
        }
        return 0;
}
