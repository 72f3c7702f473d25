/* The method of Al-hayanni et al. as pure functions: equations 1-13 of the paper
 * (README.md; docs/estimator.md says where each is used), the
 * least-squares P fit, and predictions for a candidate (cores, frequency).
 * No I/O, no globals. Domain errors return -EDOM and leave outputs untouched. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Returned (positive) by model_p_from_speedup when the speedup exceeds N: P > 1, possible
 * through shared-cache effects. The value is still written; callers warn. */
#define MODEL_SUPERLINEAR 1

/* eq. 1: T(1) = I0 / IPS. */
int model_time_1(double i0, double ips, double *t_s);
/* eq. 2: T(N) = (1-P)*T(1) + P*T(1)/N. */
int model_time_n(double p, unsigned n, double t1_s, double *t_s);
/* eq. 3: SP(N) = 1 / ((1-P) + P/N). */
int model_speedup(double p, unsigned n, double *sp);
/* eq. 5: I = I0 + dI; the split the other way. */
static inline double model_instr_total(double i0, double delta_i)
{
        return i0 + delta_i;
}
/* eq. 7: IPC = I / C_max. */
int model_ipc(double instr, double c_max, double *ipc);
/* eq. 8: IPS = IPC * F. */
static inline double model_ips(double ipc, double freq_hz)
{
        return ipc * freq_hz;
}
/* eq. 9: SP = IPC_I0(N) / IPC_I0(1). */
int model_speedup_from_ipc(double ipc_n, double ipc_1, double *sp);
/* eq. 10: P = N(1-SP) / (SP(1-N)). -EDOM for N < 2 or SP <= 0; MODEL_SUPERLINEAR if SP > N. */
int model_p_from_speedup(unsigned n, double sp, double *p);
/* eq. 11: Perf/W = IPS / W. */
int model_perf_per_watt(double ips, double power_w, double *ppw);
/* eq. 12: EPI = W / IPS. */
int model_epi(double power_w, double ips, double *epi_j);
/* eq. 13: EDP = W * T(N)^2. */
int model_edp(double power_w, double t_s, double *edp_js);

/* One observation of speedup at a core count, for the least-squares fit (the paper's P_LS). */
struct model_obs {
        unsigned cores;
        double speedup;
        double weight; /* > 0; larger for recent observations */
};

struct model_fit {
        double p;
        double rms_residual; /* of speedup, model vs observations, weighted */
        unsigned n_points;   /* observations used (cores >= 2, weight > 0) */
        unsigned n_cores;    /* distinct core counts among them */
};

/* Weighted least squares of 1/SP = 1 - P(1 - 1/N) over the observations, which is linear in
 * P and so has a closed form. Observations at one core carry no information about P and are
 * skipped. -EDOM with no usable observation. P may come out > 1 (superlinear) or < 0. */
int model_p_least_squares(const struct model_obs *obs, size_t n, struct model_fit *out);

/* A package power model: W = static_w + core_w(f) * busy cores + idle_w(f) * idle allocated
 * cores. Points per frequency; between two points the model is interpolated linearly, outside
 * them it is unknown (-ENODATA): a figure is measured or declared, never extrapolated. */
#define MODEL_MAX_FREQS 64

struct model_power_point {
        unsigned freq_khz;
        double core_w; /* per busy core */
        double idle_w; /* per allocated core that is idle (C-state) */
};

struct model_power {
        double static_w;
        unsigned n_points; /* sorted by freq_khz, ascending */
        struct model_power_point points[MODEL_MAX_FREQS];
        bool declared; /* from pctl.conf [power], not measured: say so next to every figure */
};

/* Adds or replaces the point for freq_khz, keeping points sorted. -ENOSPC when full. */
int model_power_set_point(struct model_power *pm, unsigned freq_khz, double core_w, double idle_w);
int model_power_at(const struct model_power *pm, unsigned freq_khz, double busy_cores,
                   double idle_cores, double *power_w);
/* Highest frequency with a point, or 0. */
unsigned model_power_max_freq(const struct model_power *pm);

/* What the estimator knows of an app, enough to predict it elsewhere. */
struct model_app {
        double p;            /* parallel fraction */
        double t1_s;         /* time for one unit of its work on one core at freq_ref_khz */
        double mem_fraction; /* share of single-core time that does not scale with frequency */
        double instructions; /* I0 in one unit of work; 0 if unknown (Perf/W, EPI then unknown) */
        unsigned freq_ref_khz;
};

struct model_prediction {
        double time_s;     /* eq. 2 with frequency scaling of the compute share */
        double speedup;    /* eq. 3 */
        double busy_cores; /* average busy cores: T(1,f)/T(N,f) */
        /* Power-derived figures are NaN when the power model cannot answer (unknown). */
        double power_w;
        double energy_j;
        double edp_js;     /* eq. 13 */
        double perf_per_w; /* eq. 11, instructions per joule */
        double epi_j;      /* eq. 12 */
};

/* Predicts one unit of the app's work on `cores` cores at freq_khz. pm may be NULL.
 * -EDOM for cores == 0, freq_khz == 0 or an app without a positive t1_s. */
int model_predict(const struct model_app *app, const struct model_power *pm, unsigned cores,
                  unsigned freq_khz, struct model_prediction *out);
