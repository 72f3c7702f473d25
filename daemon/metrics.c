#define _GNU_SOURCE /* accept4, pipe2 */
/* Prometheus /metrics (include/pctl/metrics.h): the exposition text of a snapshot, and the
 * libmicrohttpd server that answers scrapes from its own thread. */
#include "pctl/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <poll.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pctl/log.h"
#include "pctl/ratelimit.h"
#include "pctl/util.h"

/* From 0.1 ms (an idle software sensor) to a tenth of a second (the default interval). */
const double metrics_sample_bounds_s[METRICS_SAMPLE_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
};

/* The labels of every per-app series, in this order. A label is one row: its name and the
 * text field of struct metrics_app it shows (pid is the one number). */
static const struct metrics_label {
        const char *name;
        size_t offset;
        bool is_pid;
} app_labels[] = {
    {"app", offsetof(struct metrics_app, app), false},
    {"pid", offsetof(struct metrics_app, pid), true},
    {"policy", offsetof(struct metrics_app, policy), false},
    {"job", offsetof(struct metrics_app, job), false},
};

/* The per-app families, one row each: the figure, the name (units in it, _total for a
 * counter), the type and the help line. */
static const struct metrics_family {
        enum metrics_app_figure figure;
        const char *name, *type, *help;
} app_families[] = {
    {METRICS_APP_CORES, "pctl_app_cores", "gauge", "CPU cores the app holds (its cpuset)."},
    {METRICS_APP_FREQUENCY_HZ, "pctl_app_frequency_hertz", "gauge",
     "Clock frequency of the app's first CPU; absent when the machine does not report it."},
    {METRICS_APP_P, "pctl_app_parallel_fraction", "gauge",
     "Estimated parallel fraction P of the app (0..1, Amdahl's law)."},
    {METRICS_APP_P_STDERR, "pctl_app_parallel_fraction_standard_error", "gauge",
     "Standard error of pctl_app_parallel_fraction over the core counts seen."},
    {METRICS_APP_SPEEDUP, "pctl_app_speedup", "gauge",
     "Speedup of the app over one core in the last interval."},
    {METRICS_APP_POWER_W, "pctl_app_power_watts", "gauge",
     "Share of the package power attributed to the app in the last interval."},
    {METRICS_APP_ENERGY_J, "pctl_app_energy_joules_total", "counter",
     "Energy attributed to the app since pctld took it over."},
    /* A count, not the ids as a label: a label would start a new series at every move. */
    {METRICS_APP_PACKAGES, "pctl_app_packages", "gauge",
     "Processor packages (sockets) the app's CPUs lie on; absent where one's package is not "
     "known."},
};

_Static_assert(ARRAY_SIZE(app_families) == METRICS_APP_FIGURES, "a family for every figure");

void metrics_histogram_observe(struct metrics_histogram *h, double seconds)
{
        for (unsigned b = 0; b < METRICS_SAMPLE_BUCKETS; b++) {
                if (seconds <= metrics_sample_bounds_s[b]) {
                        h->bucket[b]++;
                        break;
                }
        }
        h->count++;
        h->sum_s += seconds;
}

struct metrics_snapshot *metrics_snapshot_new(unsigned n_apps)
{
        struct metrics_snapshot *s = calloc(1, sizeof(*s));

        if (!s)
                return NULL;
        s->apps = calloc(n_apps ? n_apps : 1, sizeof(*s->apps));
        if (!s->apps) {
                free(s);
                return NULL;
        }
        s->n_apps = n_apps;
        for (unsigned i = 0; i < n_apps; i++)
                for (unsigned f = 0; f < METRICS_APP_FIGURES; f++)
                        s->apps[i].v[f] = NAN;
        s->package_energy_j = NAN;
        for (unsigned k = 0; k < METRICS_MAX_PACKAGES; k++)
                s->mem_bytes_total[k] = s->mem_bandwidth_bytes_per_s[k] = NAN;
        s->refs = 1;
        return s;
}

struct metrics_snapshot *metrics_snapshot_ref(struct metrics_snapshot *s)
{
        if (s)
                __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
        return s;
}

void metrics_snapshot_unref(struct metrics_snapshot *s)
{
        if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
                return;
        free(s->apps);
        free(s);
}

/* The length of the UTF-8 character at s (1..4), 0 if the bytes there are not one. */
static size_t utf8_char_len(const unsigned char *s)
{
        size_t n;
        unsigned cp;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xe0) == 0xc0)
                n = 2, cp = s[0] & 0x1f;
        else if ((s[0] & 0xf0) == 0xe0)
                n = 3, cp = s[0] & 0x0f;
        else if ((s[0] & 0xf8) == 0xf0)
                n = 4, cp = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[i] & 0x3f);
        }
        /* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return 0;
        return n;
}

size_t metrics_escape_label(char *out, size_t size, const char *value)
{
        const unsigned char *s = (const unsigned char *)value;
        size_t len = 0, end = 0;
        bool fits = true;

        while (*s) {
                char esc[2];
                const char *piece = (const char *)s;
                size_t n = utf8_char_len(s), consumed = n;

                if (*s == '\\' || *s == '"' || *s == '\n') {
                        esc[0] = '\\';
                        esc[1] = *s == '\n' ? 'n' : (char)*s;
                        piece = esc;
                        n = 2;
                        consumed = 1;
                } else if (!n) {
                        piece = "\xef\xbf\xbd"; /* U+FFFD, the replacement character */
                        n = 3;
                        consumed = 1;
                }
                /* A whole character or none of it, and nothing after the first that did not
                 * fit. */
                if (fits && len + n < size) {
                        memcpy(out + len, piece, n);
                        end = len + n;
                } else {
                        fits = false;
                }
                len += n;
                s += consumed;
        }
        if (size)
                out[end] = '\0';
        return len;
}

/* A growing text buffer; after a failed allocation every append is a no-op and failed is set. */
struct mbuf {
        char *data;
        size_t len, cap;
        bool failed;
};

static bool mbuf_reserve(struct mbuf *b, size_t more)
{
        size_t cap;
        char *d;

        if (b->failed)
                return false;
        if (b->len + more + 1 <= b->cap)
                return true;
        cap = b->cap ? b->cap : 4096;
        while (cap < b->len + more + 1)
                cap *= 2;
        d = realloc(b->data, cap);
        if (!d) {
                b->failed = true;
                return false;
        }
        b->data = d;
        b->cap = cap;
        return true;
}

static void mbuf_put(struct mbuf *b, const char *s, size_t n)
{
        if (!mbuf_reserve(b, n))
                return;
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = '\0';
}

static void mbuf_puts(struct mbuf *b, const char *s)
{
        mbuf_put(b, s, strlen(s));
}

static void mbuf_put_u64(struct mbuf *b, uint64_t v)
{
        char tmp[24];
        size_t n = 0;

        do {
                tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        mbuf_put(b, tmp + sizeof(tmp) - n, n);
}

/* A sample value: whole numbers as integers, others with 15 significant digits (a float64
 * holds 15-17; the last ones are noise in every figure here). */
static void mbuf_put_double(struct mbuf *b, double v)
{
        char tmp[40];
        int n;

        if (isinf(v)) {
                mbuf_puts(b, v > 0 ? "+Inf" : "-Inf");
                return;
        }
        if (v == floor(v) && fabs(v) < 9007199254740992.0) {
                if (v < 0)
                        mbuf_put(b, "-", 1);
                mbuf_put_u64(b, (uint64_t)fabs(v));
                return;
        }
        n = snprintf(tmp, sizeof(tmp), "%.15g", v);
        mbuf_put(b, tmp, (size_t)n);
}

static void mbuf_put_label_value(struct mbuf *b, const char *value)
{
        size_t need = metrics_escape_label(NULL, 0, value);

        if (!mbuf_reserve(b, need))
                return;
        metrics_escape_label(b->data + b->len, need + 1, value);
        b->len += need;
}

static void family_header(struct mbuf *b, const char *name, const char *type, const char *help)
{
        mbuf_puts(b, "# HELP ");
        mbuf_puts(b, name);
        mbuf_put(b, " ", 1);
        mbuf_puts(b, help);
        mbuf_puts(b, "\n# TYPE ");
        mbuf_puts(b, name);
        mbuf_put(b, " ", 1);
        mbuf_puts(b, type);
        mbuf_put(b, "\n", 1);
}

/* `app="...",pid="...",policy="..."` of an app: rendered once, used by each family. A text
 * label with no value is left out (Prometheus reads an empty label as no label). */
static void app_label_set(struct mbuf *b, const struct metrics_app *a)
{
        bool first = true;

        for (size_t l = 0; l < ARRAY_SIZE(app_labels); l++) {
                const char *field = (const char *)a + app_labels[l].offset;

                if (!app_labels[l].is_pid && !field[0])
                        continue;
                if (!first)
                        mbuf_put(b, ",", 1);
                first = false;
                mbuf_puts(b, app_labels[l].name);
                mbuf_put(b, "=\"", 2);
                if (app_labels[l].is_pid)
                        mbuf_put_u64(b, (uint64_t)a->pid);
                else
                        mbuf_put_label_value(b, field);
                mbuf_put(b, "\"", 1);
        }
}

/* One series of an app, NAME{LABELS} VALUE, or none when the value is unknown (never a
 * made-up figure). extra is one more label, rendered (`component="sync"`), or NULL: a family
 * with a label of its own calls this once per value of it. */
static void app_series(struct mbuf *b, const char *name, const char *labels, size_t labels_len,
                       const char *extra, double v)
{
        if (isnan(v))
                return;
        mbuf_puts(b, name);
        mbuf_put(b, "{", 1);
        mbuf_put(b, labels, labels_len);
        if (extra) {
                mbuf_put(b, ",", 1);
                mbuf_puts(b, extra);
        }
        mbuf_put(b, "} ", 2);
        mbuf_put_double(b, v);
        mbuf_put(b, "\n", 1);
}

static void render_histogram(struct mbuf *b, const char *name, const char *help,
                             const struct metrics_histogram *h)
{
        uint64_t cumulative = 0;

        family_header(b, name, "histogram", help);
        for (unsigned k = 0; k <= METRICS_SAMPLE_BUCKETS; k++) {
                mbuf_puts(b, name);
                mbuf_puts(b, "_bucket{le=\"");
                if (k < METRICS_SAMPLE_BUCKETS) {
                        cumulative += h->bucket[k];
                        mbuf_put_double(b, metrics_sample_bounds_s[k]);
                } else {
                        cumulative = h->count;
                        mbuf_puts(b, "+Inf");
                }
                mbuf_puts(b, "\"} ");
                mbuf_put_u64(b, cumulative);
                mbuf_put(b, "\n", 1);
        }
        mbuf_puts(b, name);
        mbuf_puts(b, "_sum ");
        mbuf_put_double(b, h->sum_s);
        mbuf_put(b, "\n", 1);
        mbuf_puts(b, name);
        mbuf_puts(b, "_count ");
        mbuf_put_u64(b, h->count);
        mbuf_put(b, "\n", 1);
}

/* A family with one series per package, NAME{package="K"} VALUE, the unknown left out. */
static void render_packages(struct mbuf *b, const char *name, const char *type, const char *help,
                            const double *v, unsigned n)
{
        family_header(b, name, type, help);
        for (unsigned k = 0; k < n && k < METRICS_MAX_PACKAGES; k++) {
                if (isnan(v[k]))
                        continue;
                mbuf_puts(b, name);
                mbuf_puts(b, "{package=\"");
                mbuf_put_u64(b, k);
                mbuf_puts(b, "\"} ");
                mbuf_put_double(b, v[k]);
                mbuf_put(b, "\n", 1);
        }
}

static void render_scalar(struct mbuf *b, const char *name, const char *type, const char *help,
                          uint64_t v)
{
        family_header(b, name, type, help);
        mbuf_puts(b, name);
        mbuf_put(b, " ", 1);
        mbuf_put_u64(b, v);
        mbuf_put(b, "\n", 1);
}

int metrics_render(const struct metrics_snapshot *s, char **text, size_t *len)
{
        struct mbuf b = {0}, labels = {0};
        size_t *label_end = calloc(s->n_apps ? s->n_apps : 1, sizeof(*label_end));

        if (!label_end)
                return -ENOMEM;
        /* Every app's label set, back to back; label_end[i] is where app i's ends. */
        for (unsigned i = 0; i < s->n_apps; i++) {
                app_label_set(&labels, &s->apps[i]);
                label_end[i] = labels.len;
        }
        mbuf_reserve(&b, labels.len * ARRAY_SIZE(app_families) * 2 + 4096);
        render_scalar(&b, "pctl_managed_apps", "gauge", "Apps pctld manages.", s->n_apps);
        for (size_t f = 0; f < ARRAY_SIZE(app_families); f++) {
                const struct metrics_family *fam = &app_families[f];

                family_header(&b, fam->name, fam->type, fam->help);
                for (unsigned i = 0; i < s->n_apps; i++) {
                        size_t from = i ? label_end[i - 1] : 0;

                        app_series(&b, fam->name, labels.data + from, label_end[i] - from, NULL,
                                   s->apps[i].v[fam->figure]);
                }
        }
        family_header(&b, "pctl_package_energy_joules_total", "counter",
                      "Energy of all CPU packages since pctld started; source says whether it "
                      "was measured (RAPL) or comes from a declared or calibrated power model.");
        if (!isnan(s->package_energy_j)) {
                mbuf_puts(&b, "pctl_package_energy_joules_total{source=\"");
                mbuf_put_label_value(&b, s->package_energy_source ? s->package_energy_source
                                                                  : "unknown");
                mbuf_puts(&b, "\"} ");
                mbuf_put_double(&b, s->package_energy_j);
                mbuf_put(&b, "\n", 1);
        }
        render_packages(&b, "pctl_package_memory_bytes_total", "counter",
                        "Bytes read and written at the package's memory controllers since "
                        "pctld started, as its sensor counted them (absent where the sensor "
                        "does not measure memory traffic).",
                        s->mem_bytes_total, s->n_mem_packages);
        render_packages(&b, "pctl_package_memory_bandwidth_bytes_per_second", "gauge",
                        "The package's memory bandwidth where pctld measured it (its traffic "
                        "flat while its apps asked more); absent while only a lower bound is "
                        "known.",
                        s->mem_bandwidth_bytes_per_s, s->n_mem_packages);
        render_scalar(&b, "pctl_decisions_total", "counter",
                      "Allocator decisions since pctld started.", s->decisions);
        render_scalar(&b, "pctl_cpuset_changes_total", "counter",
                      "Changes of an app's CPUs pctld made since it started.", s->cpuset_changes);
        render_histogram(&b, "pctl_sample_duration_seconds",
                         "Wall time of one sampling interval's work (sensor, estimator, "
                         "allocator when due); its count is the intervals sampled.",
                         &s->sample_duration);
        free(labels.data);
        free(label_end);
        if (b.failed || labels.failed) {
                free(b.data);
                return -ENOMEM;
        }
        *text = b.data;
        *len = b.len;
        return 0;
}

int metrics_listen_parse(const char *text, unsigned min_port, struct sockaddr_storage *sa,
                         socklen_t *sa_len, char *why, size_t why_size)
{
        char host[METRICS_LISTEN_MAX];
        const char *colon = strrchr(text, ':'), *port_text;
        struct sockaddr_storage out = {0};
        unsigned port;
        size_t host_len;
        bool v6 = text[0] == '[';

        if (!colon || strlen(text) >= sizeof(host)) {
                snprintf(why, why_size, "'%s' is not ADDR:PORT (like 127.0.0.1:9464 or [::1]:9464)",
                         text);
                return -EINVAL;
        }
        port_text = colon + 1;
        host_len = (size_t)(colon - text);
        if (v6) {
                if (host_len < 2 || text[host_len - 1] != ']') {
                        snprintf(why, why_size,
                                 "'%s' is not ADDR:PORT (an IPv6 address goes in brackets: "
                                 "[::1]:9464)",
                                 text);
                        return -EINVAL;
                }
                memcpy(host, text + 1, host_len - 2);
                host[host_len - 2] = '\0';
        } else {
                memcpy(host, text, host_len);
                host[host_len] = '\0';
        }
        if (parse_uint(port_text, &port) < 0 || port > 65535 || port < min_port) {
                snprintf(why, why_size, "'%s' is not a port (%u..65535) in '%s'", port_text,
                         min_port, text);
                return -EINVAL;
        }
        if (v6) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out;

                if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1) {
                        snprintf(why, why_size, "'%s' is not an IPv6 address in '%s'", host, text);
                        return -EINVAL;
                }
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((uint16_t)port);
                *sa_len = sizeof(*s6);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *)&out;

                if (inet_pton(AF_INET, host, &s4->sin_addr) != 1) {
                        snprintf(why, why_size,
                                 "'%s' is not an IPv4 address in '%s' (IPv6 goes in brackets: "
                                 "[::1]:9464)",
                                 host, text);
                        return -EINVAL;
                }
                s4->sin_family = AF_INET;
                s4->sin_port = htons((uint16_t)port);
                *sa_len = sizeof(*s4);
        }
        *sa = out;
        return 0;
}

/* A connection handed to libmicrohttpd: who it is from and since when, for the limits and the
 * absolute deadline (MHD's own timeout restarts with every byte). */
struct metrics_conn {
        int fd;
        uint64_t since_ns;
        bool local;                   /* from this host: counted per uid */
        uid_t uid;                    /* local: the peer's owner */
        struct sockaddr_storage addr; /* remote: counted per address */
};

struct metrics_server {
        struct MHD_Daemon *mhd;
        unsigned port;
        char listen[METRICS_LISTEN_MAX];
        int listen_fd;
        struct sockaddr_storage local; /* the listening address */

        /* The gate: our own accept thread in front of MHD. conns is under conn_lock, shared
         * with MHD's close notifications. */
        pthread_t gate;
        bool gate_running;
        int stop_pipe[2];
        pthread_mutex_t conn_lock;
        struct metrics_conn conns[METRICS_MAX_CONNECTIONS];
        unsigned n_conns;
        struct ratelimit accept_rl;

        pthread_mutex_t lock;
        struct metrics_snapshot *snap; /* under lock */
        uint64_t generation;           /* under lock */

        /* MHD's thread only: the response of one generation, reused by every scrape of it
         * (MHD counts its users and frees the text with the last). */
        struct MHD_Response *current;
        uint64_t current_generation;
        struct MHD_Response *not_found, *not_allowed, *unavailable;
        uint64_t scrapes; /* atomic */
};

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        struct metrics_server *srv = cls;
        char msg[256];
        size_t n;

        vsnprintf(msg, sizeof(msg), fmt, ap);
        n = strlen(msg);
        while (n && msg[n - 1] == '\n')
                msg[--n] = '\0';
        /* A refused or timed-out client is the limits working, not news. */
        log_debug("metrics %s: %s", srv->listen, msg);
}

/* The response for the latest snapshot, rendered at most once per snapshot. NULL before
 * the first publish or when out of memory. */
static struct MHD_Response *current_response(struct metrics_server *srv)
{
        struct metrics_snapshot *snap;
        struct MHD_Response *resp;
        uint64_t gen;
        char *text;
        size_t len;

        pthread_mutex_lock(&srv->lock);
        snap = metrics_snapshot_ref(srv->snap);
        gen = srv->generation;
        pthread_mutex_unlock(&srv->lock);
        if (!snap)
                return NULL;
        if (srv->current && srv->current_generation == gen) {
                metrics_snapshot_unref(snap);
                return srv->current;
        }
        if (metrics_render(snap, &text, &len) < 0) {
                metrics_snapshot_unref(snap);
                return NULL;
        }
        metrics_snapshot_unref(snap);
        resp = MHD_create_response_from_buffer_with_free_callback_cls(len, text, free, text);
        if (!resp) {
                free(text);
                return NULL;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "text/plain; version=0.0.4; charset=utf-8");
        if (srv->current)
                MHD_destroy_response(srv->current);
        srv->current = resp;
        srv->current_generation = gen;
        return resp;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        struct metrics_server *srv = cls;
        struct MHD_Response *resp;
        enum MHD_Result r;

        (void)version;
        (void)upload_data;
        (void)con_cls;
        /* A body is never wanted: answer at once, MHD discards the rest. */
        *upload_data_size = 0;
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, srv->not_allowed);
        if (strcmp(url, "/metrics") != 0)
                return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, srv->not_found);
        resp = current_response(srv);
        if (!resp)
                return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, srv->unavailable);
        r = MHD_queue_response(c, MHD_HTTP_OK, resp);
        if (r == MHD_YES)
                __atomic_add_fetch(&srv->scrapes, 1, __ATOMIC_RELAXED);
        return r;
}

static struct MHD_Response *static_response(const char *text)
{
        struct MHD_Response *r =
            MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);

        if (r)
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                        "text/plain; charset=utf-8");
        return r;
}

/* Whether addr is this host's loopback: its peer is a local process, with a uid. */
static bool addr_is_loopback(const struct sockaddr_storage *a)
{
        if (a->ss_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
        if (a->ss_family == AF_INET6) {
                const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;

                return IN6_IS_ADDR_LOOPBACK(x) ||
                       (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
        }
        return false;
}

static void diag_fill(struct inet_diag_sockid *id, const struct sockaddr_storage *src,
                      const struct sockaddr_storage *dst)
{
        if (src->ss_family == AF_INET) {
                const struct sockaddr_in *s = (const void *)src, *d = (const void *)dst;

                id->idiag_sport = s->sin_port;
                id->idiag_dport = d->sin_port;
                memcpy(id->idiag_src, &s->sin_addr, 4);
                memcpy(id->idiag_dst, &d->sin_addr, 4);
        } else {
                const struct sockaddr_in6 *s = (const void *)src, *d = (const void *)dst;

                id->idiag_sport = s->sin6_port;
                id->idiag_dport = d->sin6_port;
                memcpy(id->idiag_src, &s->sin6_addr, 16);
                memcpy(id->idiag_dst, &d->sin6_addr, 16);
        }
        id->idiag_cookie[0] = id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

/* The owner of the local TCP socket that connected from peer to us (sock_diag, as ss -e
 * shows it). -errno when the kernel does not say. */
static int tcp_peer_uid(const struct sockaddr_storage *peer, const struct sockaddr_storage *us,
                        uid_t *uid)
{
        struct {
                struct nlmsghdr nlh;
                struct inet_diag_req_v2 r;
        } req = {
            .nlh = {.nlmsg_len = sizeof(req),
                    .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                    .nlmsg_flags = NLM_F_REQUEST},
            .r = {.sdiag_family = (uint8_t)peer->ss_family,
                  .sdiag_protocol = IPPROTO_TCP,
                  .idiag_states = ~0U},
        };
        union {
                struct nlmsghdr nlh;
                char buf[8192];
        } reply;
        struct timeval tv = {.tv_usec = 100000};
        ssize_t n;
        int fd, r = -ENOENT;

        diag_fill(&req.r.id, peer, us);
        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req)) {
                r = -errno;
                close(fd);
                return r;
        }
        n = recv(fd, &reply, sizeof(reply), 0);
        if (n < 0)
                r = -errno;
        for (struct nlmsghdr *h = &reply.nlh; n > 0 && NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
                if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
                    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
                        *uid = ((const struct inet_diag_msg *)NLMSG_DATA(h))->idiag_uid;
                        r = 0;
                        break;
                }
                if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE)
                        break;
        }
        close(fd);
        return r;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

/* Under conn_lock: whether c may come in. Local peers are counted per uid (before, every
 * local user shared 127.0.0.1's METRICS_MAX_PER_ADDRESS), remote ones per address; the last
 * METRICS_ROOT_RESERVED slots are root's (a local root scrape is never locked out). */
static bool gate_admits(const struct metrics_server *srv, const struct metrics_conn *c)
{
        unsigned same = 0;

        if (srv->n_conns >= METRICS_MAX_CONNECTIONS)
                return false;
        if (!(c->local && c->uid == 0) &&
            srv->n_conns >= METRICS_MAX_CONNECTIONS - METRICS_ROOT_RESERVED)
                return false;
        for (unsigned i = 0; i < srv->n_conns; i++) {
                const struct metrics_conn *o = &srv->conns[i];

                same += c->local ? o->local && o->uid == c->uid
                                 : !o->local && same_addr(&o->addr, &c->addr);
        }
        return same < METRICS_MAX_PER_ADDRESS;
}

static void on_mhd_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe)
{
        struct metrics_server *srv = cls;
        const union MHD_ConnectionInfo *ci;

        (void)socket_context;
        if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
                return;
        ci = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
                return;
        /* Before MHD closes the fd: the gate never touches a number the kernel gave again. */
        pthread_mutex_lock(&srv->conn_lock);
        for (unsigned i = 0; i < srv->n_conns; i++)
                if (srv->conns[i].fd == ci->connect_fd) {
                        srv->conns[i] = srv->conns[--srv->n_conns];
                        break;
                }
        pthread_mutex_unlock(&srv->conn_lock);
}

/* A connection past its deadline is shut down: MHD sees it end and closes it. */
static void gate_sweep(struct metrics_server *srv, uint64_t now)
{
        pthread_mutex_lock(&srv->conn_lock);
        for (unsigned i = 0; i < srv->n_conns; i++)
                if (now - srv->conns[i].since_ns >= METRICS_TIMEOUT_S * NSEC_PER_SEC)
                        (void)shutdown(srv->conns[i].fd, SHUT_RDWR);
        pthread_mutex_unlock(&srv->conn_lock);
}

static void gate_accept(struct metrics_server *srv, uint64_t *paused_until, uint64_t *backoff)
{
        struct metrics_conn c = {.since_ns = now_ns()};
        socklen_t len = sizeof(c.addr);
        unsigned missed;
        bool in;
        int fd;

        fd =
            accept4(srv->listen_fd, (struct sockaddr *)&c.addr, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                        /* The connection stays pending and the socket readable: pause. */
                        *backoff = *backoff ? *backoff * 2 : 100 * NSEC_PER_MSEC;
                        if (*backoff > 2 * NSEC_PER_SEC)
                                *backoff = 2 * NSEC_PER_SEC;
                        *paused_until = c.since_ns + *backoff;
                        if (ratelimit_pass(&srv->accept_rl, c.since_ns, &missed))
                                log_warning("metrics %s: cannot accept connections (%s): not "
                                            "accepting for up to 2 s at a time until it clears "
                                            "(%u more like this before)",
                                            srv->listen, strerror(errno), missed);
                }
                return;
        }
        *backoff = 0;
        c.fd = fd;
        c.local = addr_is_loopback(&c.addr) && tcp_peer_uid(&c.addr, &srv->local, &c.uid) == 0;
        pthread_mutex_lock(&srv->conn_lock);
        in = gate_admits(srv, &c);
        if (in)
                srv->conns[srv->n_conns++] = c;
        pthread_mutex_unlock(&srv->conn_lock);
        if (!in) {
                close(fd); /* the limits working, not news */
                return;
        }
        /* MHD closes fd itself when it refuses it; its close notification then never comes,
         * so the slot is taken back here. */
        if (MHD_add_connection(srv->mhd, fd, (struct sockaddr *)&c.addr, len) != MHD_YES) {
                pthread_mutex_lock(&srv->conn_lock);
                for (unsigned i = 0; i < srv->n_conns; i++)
                        if (srv->conns[i].fd == fd && srv->conns[i].since_ns == c.since_ns) {
                                srv->conns[i] = srv->conns[--srv->n_conns];
                                break;
                        }
                pthread_mutex_unlock(&srv->conn_lock);
        }
}

static void *gate_main(void *arg)
{
        struct metrics_server *srv = arg;
        uint64_t paused_until = 0, backoff = 0;

        for (;;) {
                uint64_t now = now_ns();
                bool paused = now < paused_until;
                struct pollfd p[2] = {{.fd = srv->stop_pipe[0], .events = POLLIN},
                                      {.fd = paused ? -1 : srv->listen_fd, .events = POLLIN}};
                int timeout_ms = paused ? (int)((paused_until - now) / NSEC_PER_MSEC) + 1 : 1000;

                if (timeout_ms > 1000)
                        timeout_ms = 1000;
                if (poll(p, 2, timeout_ms) < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        break;
                if (p[1].revents & POLLIN)
                        gate_accept(srv, &paused_until, &backoff);
                gate_sweep(srv, now_ns());
        }
        return NULL;
}

void metrics_server_free(struct metrics_server *srv)
{
        if (!srv)
                return;
        if (srv->gate_running) {
                (void)!write(srv->stop_pipe[1], "x", 1);
                pthread_join(srv->gate, NULL);
        }
        /* Joins MHD's thread and closes every connection. */
        if (srv->mhd)
                MHD_stop_daemon(srv->mhd);
        if (srv->listen_fd >= 0)
                close(srv->listen_fd);
        if (srv->stop_pipe[0] >= 0) {
                close(srv->stop_pipe[0]);
                close(srv->stop_pipe[1]);
        }
        pthread_mutex_destroy(&srv->conn_lock);
        if (srv->current)
                MHD_destroy_response(srv->current);
        if (srv->not_found)
                MHD_destroy_response(srv->not_found);
        if (srv->not_allowed)
                MHD_destroy_response(srv->not_allowed);
        if (srv->unavailable)
                MHD_destroy_response(srv->unavailable);
        metrics_snapshot_unref(srv->snap);
        pthread_mutex_destroy(&srv->lock);
        free(srv);
}

int metrics_server_new(const char *listen_text, unsigned min_port, struct metrics_server **out,
                       char *err, size_t err_size)
{
        struct sockaddr_storage sa;
        socklen_t sa_len;
        struct metrics_server *srv;
        char why[200];
        int fd, r;

        r = metrics_listen_parse(listen_text, min_port, &sa, &sa_len, why, sizeof(why));
        if (r < 0) {
                snprintf(err, err_size, "metrics_listen: %s", why);
                return r;
        }
        srv = calloc(1, sizeof(*srv));
        if (!srv)
                return -ENOMEM;
        srv->listen_fd = -1;
        srv->stop_pipe[0] = srv->stop_pipe[1] = -1;
        srv->accept_rl = RATELIMIT_INIT(60 * NSEC_PER_SEC, 1);
        pthread_mutex_init(&srv->conn_lock, NULL);
        pthread_mutex_init(&srv->lock, NULL);
        (void)strscpy(srv->listen, listen_text, sizeof(srv->listen));
        srv->not_found = static_response("only /metrics is served here\n");
        srv->not_allowed = static_response("only GET and HEAD are allowed\n");
        srv->unavailable = static_response("no figures yet: pctld has not sampled\n");
        if (!srv->not_found || !srv->not_allowed || !srv->unavailable) {
                metrics_server_free(srv);
                return -ENOMEM;
        }
        MHD_add_response_header(srv->not_allowed, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");

        /* Our own socket, so that a refusal says why (in use, not an address of this host). */
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
                r = -errno;
                goto fail;
        }
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
        if (sa.ss_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &(int){1}, sizeof(int));
        if (bind(fd, (struct sockaddr *)&sa, sa_len) < 0 || listen(fd, 64) < 0) {
                r = -errno;
                close(fd);
                goto fail;
        }
        if (getsockname(fd, (struct sockaddr *)&sa, &sa_len) == 0)
                srv->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                                           : ((struct sockaddr_in *)&sa)->sin_port);
        srv->listen_fd = fd;
        srv->local = sa;
        /* MHD serves what the gate hands it (MHD_add_connection); the gate accepts, judges
         * and times. epoll rather than select: pctld may hold more than FD_SETSIZE fds. */
        srv->mhd = MHD_start_daemon(
            MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET |
                MHD_USE_ITC | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
            0, NULL, NULL, on_request, srv, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)METRICS_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)METRICS_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION, on_mhd_connection, srv,
            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_END);
        if (srv->mhd && pipe2(srv->stop_pipe, O_CLOEXEC) == 0 &&
            pthread_create(&srv->gate, NULL, gate_main, srv) == 0)
                srv->gate_running = true;
        if (!srv->gate_running) {
                r = -EIO;
                snprintf(err, err_size,
                         "cannot serve metrics on %s: libmicrohttpd refused to start", listen_text);
                metrics_server_free(srv);
                return r;
        }
        *out = srv;
        return 0;
fail:
        snprintf(err, err_size, "cannot listen for metrics on %s: %s", listen_text, strerror(-r));
        metrics_server_free(srv);
        return r;
}

unsigned metrics_server_port(const struct metrics_server *srv)
{
        return srv->port;
}

void metrics_server_publish(struct metrics_server *srv, struct metrics_snapshot *snap)
{
        struct metrics_snapshot *old;

        pthread_mutex_lock(&srv->lock);
        old = srv->snap;
        srv->snap = snap;
        srv->generation++;
        pthread_mutex_unlock(&srv->lock);
        metrics_snapshot_unref(old);
}

uint64_t metrics_server_scrapes(const struct metrics_server *srv)
{
        return __atomic_load_n(&srv->scrapes, __ATOMIC_RELAXED);
}
