/* Prometheus /metrics: what pctld shows a scraper, in the text exposition format (0.0.4).
 *
 * The sampling thread builds a snapshot of the manager's figures once per interval and hands
 * it to the server, which swaps it in under a mutex; scrapes are answered by libmicrohttpd's
 * own thread from the latest snapshot, rendered at most once per snapshot. A scrape never
 * waits for sampling and sampling never waits for a scrape (docs/fleet.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* "ADDR:PORT" as metrics_listen takes it: "[ADDR]" for IPv6; numeric addresses only. */
#define METRICS_LISTEN_MAX 64

/* An app's figures, one series each; NaN is unknown and the series is left out. */
enum metrics_app_figure {
        METRICS_APP_CORES,
        METRICS_APP_FREQUENCY_HZ,
        METRICS_APP_P,
        METRICS_APP_P_STDERR,
        METRICS_APP_SPEEDUP,
        METRICS_APP_POWER_W,
        METRICS_APP_ENERGY_J,
        METRICS_APP_PACKAGES,
        METRICS_APP_FIGURES,
};

/* The label values of an app's series: text as it is (the renderer escapes it). */
struct metrics_app {
        char app[64];
        pid_t pid;
        char policy[64];
        char job[65]; /* the batch job (Slurm's job id), "" for none */
        double v[METRICS_APP_FIGURES];
};

/* pctl_sample_duration_seconds: upper bounds of the buckets, in seconds; +Inf is implicit. */
#define METRICS_SAMPLE_BUCKETS 10
extern const double metrics_sample_bounds_s[METRICS_SAMPLE_BUCKETS];

struct metrics_histogram {
        uint64_t bucket[METRICS_SAMPLE_BUCKETS]; /* observations <= the bound, not cumulative */
        uint64_t count;
        double sum_s;
};

void metrics_histogram_observe(struct metrics_histogram *h, double seconds);

/* Packages a snapshot gives memory traffic for (sensor.h's SENSOR_MAX_PACKAGES). */
#define METRICS_MAX_PACKAGES 64

/* One published state. Immutable once published: the server's thread reads it. */
struct metrics_snapshot {
        unsigned refs;
        struct metrics_app *apps;
        unsigned n_apps;
        double package_energy_j;           /* NaN: unknown, left out */
        const char *package_energy_source; /* "measured", "declared", "calibrated" */
        uint64_t decisions;
        uint64_t cpuset_changes;
        struct metrics_histogram sample_duration;
        /* Per package, [0, n_mem_packages): the memory traffic counted since pctld started
         * (bytes), and the bandwidth measured there (bytes per second; a lower bound is not
         * given). NaN: unknown, the series left out. */
        unsigned n_mem_packages;
        double mem_bytes_total[METRICS_MAX_PACKAGES];
        double mem_bandwidth_bytes_per_s[METRICS_MAX_PACKAGES];
};

/* A snapshot with room for n_apps apps (zeroed, figures NaN), one reference. NULL on ENOMEM. */
struct metrics_snapshot *metrics_snapshot_new(unsigned n_apps);
struct metrics_snapshot *metrics_snapshot_ref(struct metrics_snapshot *s);
/* Drops one reference; the last frees it. NULL is fine. Thread-safe. */
void metrics_snapshot_unref(struct metrics_snapshot *s);

/* The exposition text of s: HELP and TYPE for every family, a series per known figure.
 * *text is malloc'ed and NUL-terminated. 0 or -ENOMEM. */
int metrics_render(const struct metrics_snapshot *s, char **text, size_t *len);

/* Escapes a label value for the text format (\\, \", \n; bytes that are not UTF-8 become
 * U+FFFD) into out, always terminated. Returns the length the whole value needs (as snprintf):
 * a result >= size means it was cut, at a whole character. */
size_t metrics_escape_label(char *out, size_t size, const char *value);

/* Parses "ADDR:PORT" ("127.0.0.1:9464", "[::1]:9464") into sa. The port must be at least
 * min_port (1 for a configuration; 0 lets the kernel choose, for tests). -EINVAL with why. */
int metrics_listen_parse(const char *text, unsigned min_port, struct sockaddr_storage *sa,
                         socklen_t *sa_len, char *why, size_t why_size);

struct metrics_server;

/* Listens on listen ("ADDR:PORT") and serves GET /metrics from its own thread: 404 for another
 * path, 405 for another method. Bounded: METRICS_MAX_CONNECTIONS in all, the last
 * METRICS_ROOT_RESERVED of them for root on this host; METRICS_MAX_PER_ADDRESS per client
 * address, and for a client on this host (loopback) per its uid instead, so local users do not
 * share one limit; every connection closed METRICS_TIMEOUT_S after it was accepted, however
 * it trickles (absolute, not idle). Out of descriptors, accepting pauses (0.1 s doubling to
 * 2 s), logged once a minute. Until the first publish a scrape gets 503.
 * Negative errno with err saying why (the address, and the system's reason). */
#define METRICS_MAX_CONNECTIONS 32
#define METRICS_MAX_PER_ADDRESS 8
#define METRICS_ROOT_RESERVED 4
#define METRICS_TIMEOUT_S 10
int metrics_server_new(const char *listen, unsigned min_port, struct metrics_server **out,
                       char *err, size_t err_size);
/* Stops the thread, closes every connection. NULL is fine. */
void metrics_server_free(struct metrics_server *srv);
/* The port it listens on (the kernel's choice when asked for 0). */
unsigned metrics_server_port(const struct metrics_server *srv);
/* Replaces the served snapshot; takes the caller's reference. Holds the lock only to swap. */
void metrics_server_publish(struct metrics_server *srv, struct metrics_snapshot *snap);
/* Scrapes answered with 200 so far. */
uint64_t metrics_server_scrapes(const struct metrics_server *srv);
