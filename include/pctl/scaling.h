/* An app's scaling, learned online: the points the allocator measured it at (core count,
 * progress rate, stalled cycles, power, per frequency) and ESTIMA's extrapolation of them
 * (model/extrapolate, docs/extrapolation.md), fitted to stalled cycles per core where every
 * point has them (the ESTIMA way), else to time per unit of work, so that the allocator can
 * jump towards the predicted optimum instead of walking there, and verify it by
 * measurement. Pure: no I/O, no globals. */
#pragma once

#include <stdbool.h>

#include "pctl/extrapolate.h"
#include "pctl/objective.h"

#define SCALING_MAX_POINTS 24

/* One configuration's running means. */
struct scaling_point {
        unsigned cores, freq_khz;
        double ips;     /* the app's instructions per second (its progress rate) */
        double power_w; /* NaN when unknown */
        /* Stalled cycles per core per instruction of the app (per unit of work, as 1/ips is
         * its time): NaN unless every interval of the point counted them. */
        double stalls_per_core;
        unsigned samples;
};

struct scaling {
        struct scaling_point pt[SCALING_MAX_POINTS];
        unsigned n;
        unsigned version; /* changes with every point added or forgotten */
};

/* Adds one interval's measurement of the app at (cores, freq_khz): running means of the last
 * `mean_samples` per configuration; the oldest configuration goes when full. ips must be > 0;
 * power NaN when unknown. */
void scaling_add(struct scaling *s, unsigned cores, unsigned freq_khz, double ips, double power_w,
                 unsigned mean_samples);
/* The same with the interval's stalled cycles per instruction of the app, summed over its
 * cores (stalls / I0; NaN when not counted): the point keeps them per core while every
 * interval it averages has them, and is unknown for stalls from the first that does not. */
void scaling_add_stalls(struct scaling *s, unsigned cores, unsigned freq_khz, double ips,
                        double power_w, double stalls_per_instr, unsigned mean_samples);
/* Counts the point (cores, freq_khz), if there is one, as measured over at least `samples`
 * samples: a probe its user judged complete early (far worse than its best) joins the fit. */
void scaling_complete(struct scaling *s, unsigned cores, unsigned freq_khz, unsigned samples);
/* Forgets every point (the app changed phase). */
void scaling_reset(struct scaling *s);

/* The prediction at one frequency, from the points measured there with at least
 * min_samples samples: time per unit of work from extrapolate (known with 3 counts or more),
 * power from a line through the measured powers (known with 2 or more). The time comes
 * through the stalls (time.basis EXTRAP_BASIS_STALLS, the ESTIMA way) when every point has
 * at least SCALING_STALLS_MIN stalled cycles per instruction, that model reproduces the
 * measured times within SCALING_STALLS_FIT and predicts its held-out checkpoints no worse
 * than time alone (within 1.5x, or 0.5 % above); otherwise from time per unit of work, and
 * stalls_rejected says the stalls were there but lost. */
struct scaling_model {
        bool known, power_known;
        unsigned freq_khz, version; /* what it was built from */
        struct extrap_model time;   /* of 1/ips: seconds per instruction */
        double power_w0, power_w1;  /* W(n) = w0 + w1·n */
        unsigned n_points;
        unsigned max_measured; /* the largest core count measured */
        unsigned min_measured; /* the smallest */
        /* Set by the user of the model: its scores agree with the measured ones (within
         * fit_error, the largest relative error at the measured points). */
        bool trusted;
        double fit_error;
        /* The kernel was refitted on every point for the best residual, because the
         * checkpoint choice (made for extrapolation) did not follow the measured range. */
        bool refitted;
        /* Every point had stalls, but their model lost to time (see above). */
        bool stalls_rejected;
};

/* The largest relative error of the stalls model's time at the measured points for it to be
 * used (the allocator believes a model only within 5 % of its measured scores). */
#define SCALING_STALLS_FIT 0.05
/* Stalled cycles per instruction (over all the app's cores) below which a point has none to
 * fit: a hundredth of a cycle is a few percent of the cycles of the fastest code, the rest
 * is the count's rounding and noise (a compute-bound app on the model machine: 1e-10). */
#define SCALING_STALLS_MIN 0.01

/* "stalls" or "time": what the model's time was fitted to. */
const char *scaling_basis_name(const struct scaling_model *m);

int scaling_model_build(const struct scaling *s, unsigned freq_khz, unsigned min_samples,
                        unsigned max_cores, struct scaling_model *out);
/* The objective's predicted score (lower is better, as objective_score_rate) at n cores;
 * NaN when the model cannot say (unknown, or power unknown for an objective that needs it). */
double scaling_predict_score(const struct scaling_model *m, enum objective_kind o, unsigned n);
/* The count in [min_cores, max_cores] with the best predicted score; 0 when unknown. */
unsigned scaling_best_cores(const struct scaling_model *m, enum objective_kind o,
                            unsigned min_cores, unsigned max_cores);

/* Rebuilds *m when the points or the frequency changed since it was built (fits are not
 * free: a decision that learned nothing new reuses them). */
int scaling_model_refresh(const struct scaling *s, unsigned freq_khz, unsigned min_samples,
                          unsigned max_cores, struct scaling_model *m);
/* The largest relative error of the model's score against the score measured at its
 * points (those it was built from); NaN when it cannot say. A model that does not reproduce
 * what was measured (speedup falling past some N, which no kernel fitted to few points may
 * follow) must not be believed where nothing was measured. */
double scaling_fit_error(const struct scaling *s, const struct scaling_model *m,
                         enum objective_kind o, unsigned min_samples);
