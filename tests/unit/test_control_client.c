/* control_call_timeout against a real Unix socket whose other end misbehaves: a daemon that
 * accepts and never answers must not hold the caller past its timeout (the Slurm plugin calls
 * pctld while a job launches), and one that hangs up says so. */
#include "pctl_test.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pctl/control_client.h"

static double monotonic_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What the test server does once it has accepted the one connection. */
enum serve {
        SERVE_ANSWER,     /* reads the request line, answers "reply", closes */
        SERVE_HANG_UP,    /* reads the request line, closes without a word */
        SERVE_SILENT,     /* reads the request line, holds the connection open for 60 s */
        SERVE_ANSWER_RST, /* answers as soon as the whole line is there, unread, and closes */
};

/* Reads the request up to its newline, as pctld does: a server that stops at the first read
 * may close before the client's last bytes arrive. 0 once the line is in, -1 on EOF or error. */
static int read_request_line(int c, int flags)
{
        char buf[256];

        for (;;) {
                ssize_t n = recv(c, buf, sizeof(buf), flags);

                if (n <= 0)
                        return -1;
                if (memchr(buf, '\n', (size_t)n))
                        return 0;
                /* Peeking, the line is not all there yet: look again in a while. */
                if (flags & MSG_PEEK)
                        usleep(1000);
        }
}

/* A listening socket at a fresh path; the child accepts one connection and serves it. */
static pid_t serve_once(char *path, size_t size, const char *reply, enum serve how)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd, c;
        pid_t pid;

        snprintf(path, size, "/tmp/pctl-test-cc-%d.sock", (int)getpid());
        unlink(path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(fd, 4), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                c = accept(fd, NULL, NULL);
                if (c < 0)
                        _exit(1);
                /* SERVE_ANSWER_RST leaves the request in the socket: closing it then resets
                 * the connection under the answer, as pctld's refusal of one connection too
                 * many can. */
                if (read_request_line(c, how == SERVE_ANSWER_RST ? MSG_PEEK : 0) < 0)
                        _exit(1);
                if (reply && write(c, reply, strlen(reply)) < 0)
                        _exit(1);
                if (how == SERVE_SILENT)
                        sleep(60);
                _exit(0);
        }
        close(fd);
        return pid;
}

static void reap(pid_t pid, const char *path)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        unlink(path);
}

static void an_answer_comes_back_whole(void **state)
{
        char path[108], *reply = NULL;
        pid_t pid = serve_once(path, sizeof(path), "{\"ok\":true}\n", SERVE_ANSWER);

        /* The timeout only bounds a daemon that never answers: generous for a loaded
         * machine, where the server child may wait seconds for a CPU. */
        assert_int_equal(control_call_timeout(path, "{\"cmd\":\"status\"}", 30000, &reply), 0);
        assert_string_equal(reply, "{\"ok\":true}\n");
        free(reply);
        reap(pid, path);
}

static void a_silent_daemon_times_out(void **state)
{
        char path[108], *reply = NULL;
        pid_t pid = serve_once(path, sizeof(path), NULL, SERVE_SILENT);
        double start_s = monotonic_s(), took_s;

        assert_int_equal(control_call_timeout(path, "{\"cmd\":\"status\"}", 300, &reply),
                         -ETIMEDOUT);
        took_s = monotonic_s() - start_s;
        assert_null(reply);
        /* Bounded by the timeout, not by the server's 60 s: generous for a loaded machine. */
        assert_true(took_s >= 0.25 && took_s < 20);
        reap(pid, path);
}

static void a_hang_up_is_a_reset(void **state)
{
        char path[108], *reply = NULL;
        pid_t pid = serve_once(path, sizeof(path), NULL, SERVE_HANG_UP);

        assert_int_equal(control_call_timeout(path, "{\"cmd\":\"status\"}", 30000, &reply),
                         -ECONNRESET);
        assert_null(reply);
        reap(pid, path);
}

/* A daemon that answers and closes with the request unread (a refusal) resets the connection
 * after its answer: the answer is what the caller gets, not ECONNRESET or EPIPE. */
static void an_answer_before_a_reset_stands(void **state)
{
        const char *refusal = "{\"ok\":false,\"error\":\"too many connections\"}\n";
        char path[108], *reply = NULL;
        pid_t pid = serve_once(path, sizeof(path), refusal, SERVE_ANSWER_RST);

        assert_int_equal(control_call_timeout(path, "{\"cmd\":\"status\"}", 30000, &reply), 0);
        assert_string_equal(reply, refusal);
        free(reply);
        reap(pid, path);
}

static void no_daemon_is_enoent(void **state)
{
        char *reply = NULL;

        assert_int_equal(control_call_timeout("/tmp/pctl-no-such-socket", "{}", 100, &reply),
                         -ENOENT);
        assert_null(reply);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(an_answer_comes_back_whole), cmocka_unit_test(a_silent_daemon_times_out),
    cmocka_unit_test(a_hang_up_is_a_reset),       cmocka_unit_test(an_answer_before_a_reset_stands),
    cmocka_unit_test(no_daemon_is_enoent),
};
PCTL_TEST_MAIN(tests)
