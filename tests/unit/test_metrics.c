/* /metrics: the exposition text (families, labels and their escaping, unknown figures left
 * out, an app that left), the metrics_listen key, and the server over a real loopback socket
 * (GET only, 404/405/400, limits). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pctl/config.h"
#include "pctl/metrics.h"
#include "pctl/util.h"
#include "pctl_test.h"

static struct metrics_snapshot *two_apps(void)
{
        struct metrics_snapshot *s = metrics_snapshot_new(2);

        assert_non_null(s);
        strcpy(s->apps[0].app, "pbench");
        s->apps[0].pid = 4242;
        strcpy(s->apps[0].policy, "edp");
        s->apps[0].v[METRICS_APP_CORES] = 2;
        s->apps[0].v[METRICS_APP_FREQUENCY_HZ] = 2.4e9;
        s->apps[0].v[METRICS_APP_P] = 0.25;
        s->apps[0].v[METRICS_APP_P_STDERR] = 0.0125;
        s->apps[0].v[METRICS_APP_SPEEDUP] = 1.5;
        s->apps[0].v[METRICS_APP_POWER_W] = 12.5;
        s->apps[0].v[METRICS_APP_ENERGY_J] = 1234.5;
        s->apps[0].v[METRICS_APP_PACKAGES] = 2;
        /* Every figure of the second app unknown but its cores. */
        strcpy(s->apps[1].app, "we\"ird\\na\nme");
        s->apps[1].pid = 7;
        strcpy(s->apps[1].policy, "ppw");
        s->apps[1].v[METRICS_APP_CORES] = 1;
        s->package_energy_j = 99.5;
        s->package_energy_source = "declared";
        s->decisions = 12;
        s->cpuset_changes = 3;
        return s;
}

/* noinline: inlined at -O3 (the Release build), GCC 12 takes the text it returns for a pointer
 * to its local `text` and fails the build with -Werror=dangling-pointer. */
static __attribute__((noinline)) char *render(const struct metrics_snapshot *s)
{
        char *text = NULL;
        size_t len = 0;

        assert_int_equal(metrics_render(s, &text, &len), 0);
        assert_non_null(text);
        assert_int_equal(strlen(text), len);
        return text;
}

static void assert_line(const char *text, const char *line)
{
        char want[512];
        const char *p;

        snprintf(want, sizeof(want), "%s\n", line);
        p = strstr(text, want);
        if (!p || (p != text && p[-1] != '\n'))
                fail_msg("no line '%s' in:\n%s", line, text);
}

static void assert_no_line_with(const char *text, const char *part)
{
        if (strstr(text, part))
                fail_msg("'%s' should not be in:\n%s", part, text);
}

static void families_have_help_and_type(void **state)
{
        static const char *const families[][2] = {
            {"pctl_managed_apps", "gauge"},
            {"pctl_app_cores", "gauge"},
            {"pctl_app_frequency_hertz", "gauge"},
            {"pctl_app_parallel_fraction", "gauge"},
            {"pctl_app_parallel_fraction_standard_error", "gauge"},
            {"pctl_app_speedup", "gauge"},
            {"pctl_app_power_watts", "gauge"},
            {"pctl_app_energy_joules_total", "counter"},
            {"pctl_app_packages", "gauge"},
            {"pctl_package_energy_joules_total", "counter"},
            {"pctl_package_memory_bytes_total", "counter"},
            {"pctl_package_memory_bandwidth_bytes_per_second", "gauge"},
            {"pctl_decisions_total", "counter"},
            {"pctl_cpuset_changes_total", "counter"},
            {"pctl_sample_duration_seconds", "histogram"},
        };
        struct metrics_snapshot *s = two_apps();
        char *text = render(s), *copy, *line, *save = NULL;
        char type_line[128], help[128];
        const char *family_of_last_type = NULL;

        for (size_t i = 0; i < ARRAY_SIZE(families); i++) {
                snprintf(type_line, sizeof(type_line), "# TYPE %s %s", families[i][0],
                         families[i][1]);
                assert_line(text, type_line);
                snprintf(help, sizeof(help), "# HELP %s ", families[i][0]);
                assert_non_null(strstr(text, help));
        }
        assert_line(text, "pctl_app_cores{app=\"pbench\",pid=\"4242\",policy=\"edp\"} 2");
        assert_line(text, "pctl_app_frequency_hertz{app=\"pbench\",pid=\"4242\",policy=\"edp\"} "
                          "2400000000");
        assert_line(text,
                    "pctl_app_parallel_fraction{app=\"pbench\",pid=\"4242\",policy=\"edp\"} 0.25");
        assert_line(text, "pctl_app_parallel_fraction_standard_error{app=\"pbench\",pid=\"4242\","
                          "policy=\"edp\"} 0.0125");
        assert_line(text, "pctl_app_speedup{app=\"pbench\",pid=\"4242\",policy=\"edp\"} 1.5");
        assert_line(text, "pctl_app_power_watts{app=\"pbench\",pid=\"4242\",policy=\"edp\"} 12.5");
        assert_line(text,
                    "pctl_app_energy_joules_total{app=\"pbench\",pid=\"4242\",policy=\"edp\"} "
                    "1234.5");
        assert_line(text, "pctl_app_packages{app=\"pbench\",pid=\"4242\",policy=\"edp\"} 2");
        assert_line(text, "pctl_package_energy_joules_total{source=\"declared\"} 99.5");
        assert_line(text, "pctl_decisions_total 12");
        assert_line(text, "pctl_cpuset_changes_total 3");
        assert_line(text, "pctl_managed_apps 2");
        /* Every sample line belongs to the family whose TYPE came last: families are not
         * interleaved. */
        copy = strdup(text);
        for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (strncmp(line, "# TYPE ", 7) == 0) {
                        family_of_last_type = line + 7;
                        continue;
                }
                if (line[0] == '#')
                        continue;
                assert_non_null(family_of_last_type);
                size_t n = strcspn(family_of_last_type, " ");
                if (strncmp(line, family_of_last_type, n) != 0)
                        fail_msg("'%s' is not under its family (last TYPE: %s)", line,
                                 family_of_last_type);
        }
        free(copy);
        free(text);
        metrics_snapshot_unref(s);
}

static void labels_are_escaped(void **state)
{
        struct metrics_snapshot *s = two_apps();
        char *text;
        char out[64];

        text = render(s);
        /* we"ird\na<LF>me: the quote, the backslash and the line feed escaped. */
        assert_line(text,
                    "pctl_app_cores{app=\"we\\\"ird\\\\na\\nme\",pid=\"7\",policy=\"ppw\"} 1");
        free(text);

        /* Bytes that are not UTF-8 become U+FFFD; valid characters pass. */
        assert_int_equal(metrics_escape_label(out, sizeof(out),
                                              "a\xff"
                                              "b"),
                         5);
        assert_string_equal(out, "a\xef\xbf\xbd"
                                 "b");
        assert_int_equal(metrics_escape_label(out, sizeof(out), "P\xcc\x82"), 3);
        assert_string_equal(out, "P\xcc\x82");
        /* Overlong and truncated sequences are not UTF-8. */
        metrics_escape_label(out, sizeof(out), "\xc0\xaf|\xe2\x82");
        assert_string_equal(out, "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd");
        /* Cut at a whole character (an escape is one), the length needed returned. */
        assert_int_equal(metrics_escape_label(out, 4, "ab\"c"), 5);
        assert_string_equal(out, "ab");
        assert_int_equal(metrics_escape_label(NULL, 0, "\n\n"), 4);
        /* A job tag (Slurm's) is one more label; without one the label is left out. */
        strcpy(s->apps[0].job, "1234");
        text = render(s);
        assert_line(text,
                    "pctl_app_cores{app=\"pbench\",pid=\"4242\",policy=\"edp\",job=\"1234\"} 2");
        assert_line(text,
                    "pctl_app_cores{app=\"we\\\"ird\\\\na\\nme\",pid=\"7\",policy=\"ppw\"} 1");
        free(text);
        s->apps[0].job[0] = '\0';
        /* An empty label value is left out: Prometheus reads it as no label. */
        s->apps[0].policy[0] = '\0';
        text = render(s);
        assert_line(text, "pctl_app_cores{app=\"pbench\",pid=\"4242\"} 2");
        free(text);
        metrics_snapshot_unref(s);
}

static void unknown_figures_are_left_out(void **state)
{
        struct metrics_snapshot *s = two_apps();
        char *text;

        text = render(s);
        /* App 7 has only its cores: no series of any other family, and no made-up 0. */
        assert_line(text,
                    "pctl_app_cores{app=\"we\\\"ird\\\\na\\nme\",pid=\"7\",policy=\"ppw\"} 1");
        {
                const char *first = strstr(text, "pid=\"7\"");

                assert_null(strstr(first + 1, "pid=\"7\""));
        }
        free(text);
        /* Unknown package energy: the family is there, its series is not. */
        s->package_energy_j = NAN;
        text = render(s);
        assert_line(text, "# TYPE pctl_package_energy_joules_total counter");
        assert_no_line_with(text, "pctl_package_energy_joules_total{");
        free(text);
        metrics_snapshot_unref(s);
}

/* Memory traffic per package: the counter in bytes, the bandwidth only where measured; a
 * package not measured has no series, and a snapshot without traffic only the families. */
static void package_memory_series(void **state)
{
        struct metrics_snapshot *s = two_apps();
        char *text;

        text = render(s);
        assert_line(text, "# TYPE pctl_package_memory_bytes_total counter");
        assert_no_line_with(text, "pctl_package_memory_bytes_total{");
        assert_no_line_with(text, "pctl_package_memory_bandwidth_bytes_per_second{");
        free(text);
        s->n_mem_packages = 3;
        s->mem_bytes_total[0] = 123456789012.0;
        s->mem_bytes_total[2] = 5e9;
        s->mem_bandwidth_bytes_per_s[2] = 41.25e9;
        text = render(s);
        assert_line(text, "pctl_package_memory_bytes_total{package=\"0\"} 123456789012");
        assert_line(text, "pctl_package_memory_bytes_total{package=\"2\"} 5000000000");
        assert_no_line_with(text, "pctl_package_memory_bytes_total{package=\"1\"}");
        assert_line(text,
                    "pctl_package_memory_bandwidth_bytes_per_second{package=\"2\"} 41250000000");
        assert_no_line_with(text, "pctl_package_memory_bandwidth_bytes_per_second{package=\"0\"}");
        free(text);
        metrics_snapshot_unref(s);
}

static void an_app_that_leaves_loses_its_series(void **state)
{
        struct metrics_snapshot *before = two_apps(), *after = metrics_snapshot_new(1);
        char *text;

        assert_non_null(after);
        after->apps[0] = before->apps[1];
        text = render(before);
        assert_non_null(strstr(text, "pid=\"4242\""));
        free(text);
        text = render(after);
        assert_no_line_with(text, "pid=\"4242\"");
        assert_line(text, "pctl_managed_apps 1");
        free(text);
        metrics_snapshot_unref(before);
        metrics_snapshot_unref(after);
}

static void histogram_is_cumulative(void **state)
{
        struct metrics_snapshot *s = metrics_snapshot_new(0);
        char *text;

        assert_non_null(s);
        metrics_histogram_observe(&s->sample_duration, 0.00005);
        metrics_histogram_observe(&s->sample_duration, 0.0001); /* on a bound: in it */
        metrics_histogram_observe(&s->sample_duration, 0.003);
        metrics_histogram_observe(&s->sample_duration, 2.0); /* past the last bound */
        text = render(s);
        assert_line(text, "pctl_sample_duration_seconds_bucket{le=\"0.0001\"} 2");
        assert_line(text, "pctl_sample_duration_seconds_bucket{le=\"0.0025\"} 2");
        assert_line(text, "pctl_sample_duration_seconds_bucket{le=\"0.005\"} 3");
        assert_line(text, "pctl_sample_duration_seconds_bucket{le=\"0.1\"} 3");
        assert_line(text, "pctl_sample_duration_seconds_bucket{le=\"+Inf\"} 4");
        assert_line(text, "pctl_sample_duration_seconds_count 4");
        assert_line(text, "pctl_sample_duration_seconds_sum 2.00315");
        assert_line(text, "pctl_managed_apps 0");
        /* With no app, every per-app family is still described. */
        assert_line(text, "# TYPE pctl_app_parallel_fraction gauge");
        assert_no_line_with(text, "pctl_app_cores{");
        free(text);
        metrics_snapshot_unref(s);
}

static void listen_parse(void **state)
{
        static const struct {
                const char *text, *why;
        } bad[] = {
            {"9464", "'9464' is not ADDR:PORT (like 127.0.0.1:9464 or [::1]:9464)"},
            {"localhost:9464",
             "'localhost' is not an IPv4 address in 'localhost:9464' (IPv6 goes in brackets: "
             "[::1]:9464)"},
            {"127.0.0.1:0", "'0' is not a port (1..65535) in '127.0.0.1:0'"},
            {"127.0.0.1:65536", "'65536' is not a port (1..65535) in '127.0.0.1:65536'"},
            {"127.0.0.1:", "'' is not a port (1..65535) in '127.0.0.1:'"},
            {"127.0.0.1:http", "'http' is not a port (1..65535) in '127.0.0.1:http'"},
            {"::1:9464", "'::1' is not an IPv4 address in '::1:9464' (IPv6 goes in brackets: "
                         "[::1]:9464)"},
            {"[::1:9464", "'[::1:9464' is not ADDR:PORT (an IPv6 address goes in brackets: "
                          "[::1]:9464)"},
            {"[127.0.0.1]:9464", "'127.0.0.1' is not an IPv6 address in '[127.0.0.1]:9464'"},
            {"256.0.0.1:9464", "'256.0.0.1' is not an IPv4 address in '256.0.0.1:9464' (IPv6 "
                               "goes in brackets: [::1]:9464)"},
        };
        struct sockaddr_storage sa;
        socklen_t len = 0;
        char why[200];

        assert_int_equal(metrics_listen_parse("127.0.0.1:9464", 1, &sa, &len, why, sizeof(why)), 0);
        assert_int_equal(sa.ss_family, AF_INET);
        assert_int_equal(len, sizeof(struct sockaddr_in));
        assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 9464);
        assert_int_equal(metrics_listen_parse("[::1]:80", 1, &sa, &len, why, sizeof(why)), 0);
        assert_int_equal(sa.ss_family, AF_INET6);
        assert_int_equal(ntohs(((struct sockaddr_in6 *)&sa)->sin6_port), 80);
        assert_int_equal(metrics_listen_parse("0.0.0.0:0", 0, &sa, &len, why, sizeof(why)), 0);
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                why[0] = '\0';
                assert_int_equal(metrics_listen_parse(bad[i].text, 1, &sa, &len, why, sizeof(why)),
                                 -EINVAL);
                assert_string_equal(why, bad[i].why);
        }
}

static void config_key(void **state)
{
        struct config_problems p = {0};
        struct config c, before;

        config_init(&c);
        assert_string_equal(c.metrics_listen, ""); /* off by default */
        assert_int_equal(
            config_load_string("[daemon]\nmetrics_listen = 127.0.0.1:9464\n", "t.conf", &c, &p), 0);
        assert_string_equal(c.metrics_listen, "127.0.0.1:9464");
        assert_int_equal(config_load_string("[daemon]\nmetrics_listen =\n", "t.conf", &c, &p), 0);
        assert_string_equal(c.metrics_listen, "");
        before = c;
        assert_int_equal(config_load_string("[daemon]\ninterval_ms = 200\nmetrics_listen = "
                                            "localhost:9464\n",
                                            "t.conf", &c, &p),
                         -EINVAL);
        assert_int_equal(p.n, 1);
        assert_string_equal(p.v[0].file, "t.conf");
        assert_int_equal(p.v[0].lineno, 3);
        assert_string_equal(p.v[0].what,
                            "[daemon] metrics_listen: 'localhost' is not an IPv4 address in "
                            "'localhost:9464' (IPv6 goes in brackets: [::1]:9464)");
        assert_memory_equal(&c, &before, sizeof(c)); /* a bad file changes nothing */
        config_problems_clear(&p);
}

/* One HTTP exchange over loopback: the raw reply into buf (NUL-terminated), its status code
 * returned; -1 when the server closed without a reply. */
static int http(unsigned port, const char *request, char *buf, size_t size)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        struct timeval tv = {.tv_sec = 5};
        size_t len = 0;
        int fd = socket(AF_INET, SOCK_STREAM, 0), code = -1;
        ssize_t n;

        assert_true(fd >= 0);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
        while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        close(fd);
        if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
                return -1;
        return code;
}

static const char *body_of(const char *reply)
{
        const char *p = strstr(reply, "\r\n\r\n");

        return p ? p + 4 : "";
}

static void server_answers_get_metrics_only(void **state)
{
        static char buf[1 << 16];
        struct metrics_server *srv = NULL;
        struct metrics_snapshot *s;
        char err[256], *text;
        size_t len;
        unsigned port;
        int code;

        assert_int_equal(metrics_server_new("127.0.0.1:0", 0, &srv, err, sizeof(err)), 0);
        port = metrics_server_port(srv);
        assert_true(port > 0);
        /* Nothing published yet. */
        assert_int_equal(http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                              buf, sizeof(buf)),
                         503);
        s = two_apps();
        assert_int_equal(metrics_render(s, &text, &len), 0);
        metrics_server_publish(srv, s);
        assert_int_equal(http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                              buf, sizeof(buf)),
                         200);
        assert_non_null(strstr(buf, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
        assert_string_equal(body_of(buf), text);
        /* The same snapshot again: the same text (rendered once, served twice). */
        assert_int_equal(http(port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 200);
        assert_string_equal(body_of(buf), text);
        assert_int_equal(metrics_server_scrapes(srv), 2);
        free(text);
        /* A new snapshot is served at the next scrape. */
        s = metrics_snapshot_new(0);
        assert_non_null(s);
        s->decisions = 77;
        metrics_server_publish(srv, s);
        assert_int_equal(http(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 200);
        assert_non_null(strstr(body_of(buf), "\npctl_decisions_total 77\n"));
        /* HEAD: the headers, no body. */
        assert_int_equal(http(port, "HEAD /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 200);
        assert_string_equal(body_of(buf), "");
        /* Anything else. */
        assert_int_equal(
            http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", buf, sizeof(buf)),
            405);
        assert_non_null(strstr(buf, "Allow: GET, HEAD\r\n"));
        assert_int_equal(http(port, "DELETE /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 405);
        assert_int_equal(http(port, "GET / HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 404);
        assert_int_equal(http(port, "GET /metrics/ HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 404);
        assert_int_equal(http(port, "GET /../metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 404);
        /* Malformed requests: refused by the HTTP parser, the server goes on. */
        /* Malformed requests: refused by the HTTP parser (a request line it cannot read is
         * closed without a reply), and the server goes on. */
        code = http(port, "GARBAGE\r\n\r\n", buf, sizeof(buf));
        assert_true(code == -1 || code == 400);
        code = http(port, "\x01\x02\xff\xfe\r\n\r\n", buf, sizeof(buf));
        assert_true(code == -1 || code == 400);
        assert_int_equal(http(port, "GET /metrics HTTP/1.0\r\nNoColon\r\n\r\n", buf, sizeof(buf)),
                         400);
        assert_int_equal(http(port, "GET /metrics HTTP/9.9\r\n\r\n", buf, sizeof(buf)), 505);
        assert_int_equal(http(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 200);
        metrics_server_free(srv);
}

static void server_refuses_a_taken_port(void **state)
{
        struct metrics_server *a = NULL, *b = NULL;
        char err[256], listen[64], want[200];

        assert_int_equal(metrics_server_new("127.0.0.1:0", 0, &a, err, sizeof(err)), 0);
        snprintf(listen, sizeof(listen), "127.0.0.1:%u", metrics_server_port(a));
        assert_int_equal(metrics_server_new(listen, 1, &b, err, sizeof(err)), -EADDRINUSE);
        assert_null(b);
        snprintf(want, sizeof(want), "cannot listen for metrics on %s: %s", listen,
                 strerror(EADDRINUSE));
        assert_string_equal(err, want);
        /* An address of no interface here. */
        assert_int_equal(metrics_server_new("192.0.2.1:9464", 1, &b, err, sizeof(err)),
                         -EADDRNOTAVAIL);
        assert_null(b);
        metrics_server_free(a);
}

/* The same over IPv6 loopback, where the machine has it. */
static void server_answers_over_ipv6(void **state)
{
        static char buf[1 << 16];
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        struct timeval tv = {.tv_sec = 5};
        static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
        struct metrics_server *srv = NULL;
        char err[256];
        size_t len = 0;
        ssize_t n;
        int fd, r;

        r = metrics_server_new("[::1]:0", 0, &srv, err, sizeof(err));
        if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT)
                skip(); /* no IPv6 loopback here */
        assert_int_equal(r, 0);
        metrics_server_publish(srv, metrics_snapshot_new(0));
        sa.sin6_port = htons((uint16_t)metrics_server_port(srv));
        fd = socket(AF_INET6, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
        while (len + 1 < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        close(fd);
        assert_non_null(strstr(buf, " 200 "));
        assert_non_null(strstr(buf, "\npctl_managed_apps 0\n"));
        metrics_server_free(srv);
}

/* Whether the server closed fd (EOF or reset) within timeout_ms. */
static bool closed_by_server(int fd, int timeout_ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char c;

        if (poll(&p, 1, timeout_ms) <= 0)
                return false;
        return read(fd, &c, 1) <= 0;
}

static void server_bounds_connections_per_address(void **state)
{
        static char buf[1 << 16];
        struct sockaddr_in sa = {.sin_family = AF_INET};
        struct metrics_server *srv = NULL;
        int fds[METRICS_MAX_PER_ADDRESS + 4];
        unsigned refused = 0;
        char err[256];

        assert_int_equal(metrics_server_new("127.0.0.1:0", 0, &srv, err, sizeof(err)), 0);
        metrics_server_publish(srv, metrics_snapshot_new(0));
        sa.sin_port = htons((uint16_t)metrics_server_port(srv));
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        /* Idle connections that never send a request: past the per-address limit the server
         * closes them at once. */
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
                fds[i] = socket(AF_INET, SOCK_STREAM, 0);
                assert_int_equal(connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
                usleep(20000); /* let the server's thread accept it */
        }
        /* The refused ones are closed as soon as the server's thread gets a CPU: up to 10 s on
         * a loaded machine (closed_by_server returns when they are). */
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
                refused += closed_by_server(fds[i], i < METRICS_MAX_PER_ADDRESS ? 50 : 10000);
        assert_int_equal(refused, ARRAY_SIZE(fds) - METRICS_MAX_PER_ADDRESS);
        /* Once they go, a scrape is served again: once the server has seen them go, which a
         * loaded machine may delay past any fixed wait (up to 10 s here). */
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
                close(fds[i]);
        {
                int code = -1;

                for (int i = 0; i < 100 && code != 200; i++) {
                        usleep(100000);
                        code = http(metrics_server_port(srv), "GET /metrics HTTP/1.0\r\n\r\n", buf,
                                    sizeof(buf));
                }
                assert_int_equal(code, 200);
        }
        metrics_server_free(srv);
}

static int connect_local(unsigned port)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                _exit(3);
        return fd;
}

/* Issue 28: every local user shared 127.0.0.1's 8 connections, so one user holding 8 idle
 * ones locked every other local scraper (root's Prometheus agent) out. Now a local peer is
 * counted by its uid: nobody's ninth is refused, root's scrape is served meanwhile. */
static void local_users_do_not_share_a_limit(void **state)
{
        static char buf[1 << 16];
        struct metrics_server *srv = NULL;
        int ready[2], hold[2], status, code = -1;
        char err[256], byte;
        pid_t kid;

        if (geteuid() != 0)
                skip(); /* needs a second user */
        assert_int_equal(metrics_server_new("127.0.0.1:0", 0, &srv, err, sizeof(err)), 0);
        metrics_server_publish(srv, metrics_snapshot_new(0));
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(hold), 0);
        kid = fork();
        assert_true(kid >= 0);
        if (kid == 0) {
                int fds[METRICS_MAX_PER_ADDRESS], extra;

                close(hold[1]);
                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(2);
                for (int i = 0; i < METRICS_MAX_PER_ADDRESS; i++) {
                        fds[i] = connect_local(metrics_server_port(srv));
                        usleep(20000);
                }
                extra = connect_local(metrics_server_port(srv));
                /* Past its own limit: closed by the server. */
                if (!closed_by_server(extra, 10000))
                        _exit(4);
                for (int i = 0; i < METRICS_MAX_PER_ADDRESS; i++)
                        if (closed_by_server(fds[i], 10))
                                _exit(5);
                if (write(ready[1], "x", 1) != 1 || read(hold[0], &byte, 1) != 0)
                        _exit(6);
                _exit(0);
        }
        close(hold[0]);
        assert_int_equal(read(ready[0], &byte, 1), 1);
        code = http(metrics_server_port(srv), "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
        close(hold[1]);
        assert_int_equal(waitpid(kid, &status, 0), kid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(code, 200);
        metrics_server_free(srv);
}

/* Issue 28: the 10 s timeout restarted with every byte, so a client sending a header byte a
 * second held its slot forever. Now the deadline is absolute from accept. */
static void deadline_is_absolute(void **state)
{
        struct metrics_server *srv = NULL;
        struct timespec t0, t1;
        char err[256];
        double held = 0;
        int fd;

        assert_int_equal(metrics_server_new("127.0.0.1:0", 0, &srv, err, sizeof(err)), 0);
        metrics_server_publish(srv, metrics_snapshot_new(0));
        fd = connect_local(metrics_server_port(srv));
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(write(fd, "GET /metrics HTTP/1.1\r\n", 23), 23);
        for (int i = 0; i < 3 * METRICS_TIMEOUT_S; i++) {
                if (closed_by_server(fd, 500))
                        break;
                if (send(fd, "X", 1, MSG_NOSIGNAL) != 1)
                        break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        held = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        fprintf(stderr, "a client trickling a byte every 0.5 s was closed after %.1f s\n", held);
        assert_true(held >= METRICS_TIMEOUT_S - 0.5);
        assert_true(held < METRICS_TIMEOUT_S + 3);
        close(fd);
        metrics_server_free(srv);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(families_have_help_and_type),
    cmocka_unit_test(labels_are_escaped),
    cmocka_unit_test(unknown_figures_are_left_out),
    cmocka_unit_test(package_memory_series),
    cmocka_unit_test(an_app_that_leaves_loses_its_series),
    cmocka_unit_test(histogram_is_cumulative),
    cmocka_unit_test(listen_parse),
    cmocka_unit_test(config_key),
    cmocka_unit_test(server_answers_get_metrics_only),
    cmocka_unit_test(server_answers_over_ipv6),
    cmocka_unit_test(server_refuses_a_taken_port),
    cmocka_unit_test(server_bounds_connections_per_address),
    cmocka_unit_test(local_users_do_not_share_a_limit),
    cmocka_unit_test(deadline_is_absolute),
};

PCTL_TEST_MAIN(tests)
