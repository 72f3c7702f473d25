/* Memory bandwidth per package, from its measured traffic (sensor_sample.mem_bytes): each
 * package's traffic rate, each app's bytes per instruction, and each package's bandwidth as
 * far as it is known (docs/allocator.md, "Memory bandwidth per package, measured"). Pure: it
 * takes samples and the apps' CPUs and instructions, and answers questions; nothing here
 * decides. Where the sample does not measure traffic nothing changes and nothing is known. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pctl/cpumask.h"
#include "pctl/sensor.h"
#include "pctl/topology.h"

/* Apps the fit of bytes per instruction tracks at once; beyond it the one seen least recently
 * is dropped. */
#define MEMBW_MAX_APPS 64

/* One app's view of an interval. */
struct membw_app {
        uint64_t id;
        struct cpumask cpus; /* the CPUs it held over the interval */
        int target;          /* index into the sample's per-target counts, or -1 */
        unsigned freq_khz;   /* its CPUs' frequency; 0 if unknown */
        double i0;           /* its own instructions over the interval (the estimator's I0) */
};

enum membw_bound {
        MEMBW_BOUND_NONE = 0, /* no steady traffic measured yet */
        /* The package served at least this much: its bandwidth is that or more. */
        MEMBW_BOUND_LOWER,
        /* Measured: its traffic stayed flat while its apps' busy cycles rose or fell, so the
         * apps asked more than it served: the bandwidth is that traffic. */
        MEMBW_BOUND_MEASURED,
};

struct membw_package {
        double rate_gbs; /* traffic over the last interval; NaN: not measured */
        /* The bandwidth: the highest steady traffic seen (a lower bound), or the measured
         * one (saturated); NaN with MEMBW_BOUND_NONE. */
        double bandwidth_gbs;
        enum membw_bound bound;
        /* The current steady stretch (same CPUs held, same clocks): intervals counted, mean
         * traffic and mean demand index (Σ bytes per instruction x busy cycles, per second). */
        unsigned steady_n;
        double steady_gbs;
        double steady_demand;
        /* With the bandwidth measured: the least steady demand index at which the package
         * was full (NaN: none yet), and the current steady demand over it while it is full
         * (1 otherwise): a lower bound of how much more its apps ask than it serves, since
         * they filled it with that much less. */
        double full_demand;
        double slack;
};

struct membw;

/* NULL on allocation failure. */
struct membw *membw_new(void);
void membw_free(struct membw *bw);

/* Takes one interval in. -ENODATA when the sample does not measure memory traffic, -EINVAL
 * for a bad sample (no interval) or an app with a CPU the sample or topology does not have;
 * nothing changes then. */
int membw_update(struct membw *bw, const struct sensor_sample *s, const struct topology *t,
                 const struct membw_app *apps, unsigned n_apps);
/* Forgets an app (it left). -ENOENT if not tracked. */
int membw_app_remove(struct membw *bw, uint64_t id);

/* The app's bytes per instruction, fitted on its package's traffic over recent intervals.
 * -ENODATA until its instructions are told apart from its neighbours' (alone on a package
 * once, or enough variation beside them), -ENOENT for an app never seen. */
int membw_bytes_per_instr(const struct membw *bw, uint64_t id, double *out);
/* NULL for a package never measured. */
const struct membw_package *membw_package(const struct membw *bw, unsigned k);
unsigned membw_n_packages(const struct membw *bw);
/* Package k's bandwidth: 0 where measured there; 1 where taken from another package whose
 * bandwidth is measured and which k never served more than (the packages of one machine have
 * alike memory controllers: one filled measures them all); -ENODATA where neither. */
int membw_bandwidth(const struct membw *bw, unsigned k, double *gbs);

/* A probe of package k's bandwidth is worth making: it is steady at the most traffic it ever
 * served, its bandwidth neither measured nor known from an alike package, and no probe moved
 * its demand at that traffic yet. A package full from the start, where nothing moves, shows
 * its bandwidth only when its apps' demand moves (docs/allocator.md, "A probe for a full
 * package's bandwidth"): the caller moves it by MEMBW_PROBE_MOVE for one steady stretch and
 * says so with membw_probe_started (-EINVAL for a package the samples never had). */
bool membw_probe_wanted(const struct membw *bw, unsigned k);
int membw_probe_started(struct membw *bw, unsigned k);
/* The share of its cores a probe takes from an app, rounded up (3 of 6, 2 of 3, 1 of 2): its
 * busy cycles fall by less than its cores, since the cores left run busier (a serial part,
 * waits), and the demand must move by the 10 % that measures a bandwidth: one core of six
 * moved 91007's demand index by 6 %, three by 26 %. */
#define MEMBW_PROBE_MOVE 0.34
/* The app a probe moves carries at least this share of the package's traffic: the cut moved
 * 91007's demand index by 26 % where the app moves all of it, so at half of it the index still
 * moves by more than the 10 % that measures a bandwidth; an app that moves none moves nothing a
 * probe could read. */
#define MEMBW_PROBE_SHARE 0.5

const char *membw_bound_to_string(enum membw_bound b);
/* One line on package k for the debug log ("12.3 GB/s, bandwidth >= 20.1 GB/s (a lower
 * bound)"); -ENODATA for a package never measured. */
int membw_describe(const struct membw *bw, unsigned k, char *buf, size_t size);
