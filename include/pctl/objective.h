/* What a policy asks of an app, as one score where lower is better, for every objective.
 * Pure functions: no I/O, no globals. */
#pragma once

#include <stdbool.h>

#include "pctl/model.h"

enum objective_kind {
        OBJECTIVE_EDP,         /* minimise W*T^2 (eq. 13) */
        OBJECTIVE_PPW,         /* maximise IPS/W (eq. 11) */
        OBJECTIVE_ENERGY,      /* minimise W/IPS, the energy per instruction (eq. 12) */
        OBJECTIVE_PERFORMANCE, /* minimise T */
        OBJECTIVE_MONITOR,     /* estimate and report only: never changes the app */
        OBJECTIVE_COUNT,
};

/* "edp", "ppw", ... ; "?" for a value out of range. */
const char *objective_to_string(enum objective_kind o);
/* -EINVAL for a name that is not an objective; *out changes only on success. */
int objective_from_string(const char *s, enum objective_kind *out);
/* The objectives that need a power figure to be scored (edp, ppw, energy). */
bool objective_needs_power(enum objective_kind o);

/* The objective actually pursued. Without any power figure (no RAPL, no calibrated or declared
 * model) the energy objectives cannot be scored, so the app is run for performance within its
 * policy's bounds. *reason (if not NULL) is then a sentence for `pctl status`, else NULL. */
enum objective_kind objective_effective(enum objective_kind o, bool power_known,
                                        const char **reason);

/* Score of a measured steady-state rate, per instruction; lower is better:
 * edp: W/IPS^2 (the EDP rate), ppw: -IPS/W, energy: W/IPS, performance: 1/IPS.
 * -EDOM for monitor, for ips <= 0, or for a power objective with power_w NaN or < 0. */
int objective_score_rate(enum objective_kind o, double power_w, double ips, double *score);
/* The same from a model prediction, per unit of work: edp: W*T^2, ppw: -1/(W*T), energy: W*T,
 * performance: T. For a fixed amount of work I0 (IPS = I0/T) these order candidates exactly as
 * the rate scores do; compare a prediction only with a prediction, a rate with a rate. */
int objective_score_prediction(enum objective_kind o, const struct model_prediction *pr,
                               double *score);

/* True when candidate score b beats the current score a by more than the fraction hysteresis of
 * |a| (0.05 = 5%). False when either is NaN: an unknown figure never causes a move. */
bool objective_better(double score_a, double score_b, double hysteresis);

/* Slowdown of time_s against the baseline (the app alone on all its allowed cores at the top
 * frequency): time_s / baseline_s - 1. -EDOM unless both times are positive and finite. */
int objective_slowdown(double baseline_s, double time_s, double *slowdown);
/* time_s within max_slowdown of the baseline. max_slowdown = INFINITY is no limit. An unknown
 * (NaN) or invalid time is not within: the caller must not move into it on a guess. */
bool objective_slowdown_ok(double baseline_s, double time_s, double max_slowdown);
