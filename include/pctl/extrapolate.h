/* Scalability extrapolation after ESTIMA (Chatzopoulos, Dragojević, Guerraoui, TOPC 2017):
 * from an app's time (and stalled cycles, where counters give them) at a few small core
 * counts, predict its time at larger ones. The paper's kernel family (its Table 1) and
 * Amdahl's law as the baseline are fitted by least squares, a kernel is chosen by its error
 * at held-out checkpoints (the largest measured counts), then refitted on every point.
 *
 * What is fitted is a total over the cores, as ESTIMA fits total stalled cycles per
 * category: with stalls, S(n) = stalls_per_core(n)·n, and time follows through the paper's
 * scaling factor F(n) = T(n) / SPC(n) (§3.1.3); without stalls, the core-time W(n) = n·T(n)
 * of a run of fixed work (or of one unit of work online), and T̂(n) = Ŵ(n)/n.
 *
 * Pure: no I/O, no globals. Unknown is NaN with `known` false, never a made-up figure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum extrap_kernel {
        EXTRAP_AMDAHL,  /* a + b·n: on a core-time total, T(n) = a + b/n is Amdahl's law */
        EXTRAP_RAT22,   /* (a0 + a1·n + a2·n²) / (1 + b1·n + b2·n²) */
        EXTRAP_RAT23,   /* (a0 + a1·n + a2·n²) / (1 + b1·n + b2·n² + b3·n³) */
        EXTRAP_RAT33,   /* (a0 + a1·n + a2·n² + a3·n³) / (1 + b1·n + b2·n² + b3·n³) */
        EXTRAP_CUBICLN, /* a + b·ln n + c·(ln n)² + d·(ln n)³ */
        EXTRAP_EXPRAT,  /* exp((a + b·n) / (c + d·n)), c fixed at 1: 3 free parameters */
        EXTRAP_POLY25,  /* a + b·n + c·n² + d·n^2.5 */
        EXTRAP_N_KERNELS,
};

#define EXTRAP_MAX_PARAMS 7
/* Distinct core counts one fit takes; more are refused with -E2BIG. */
#define EXTRAP_MAX_POINTS 256

/* The kernel's name as the paper writes it ("Rat22", ..., "Amdahl"). */
const char *extrap_kernel_name(enum extrap_kernel k);
/* -EINVAL for an unknown name. */
int extrap_kernel_from_name(const char *name, enum extrap_kernel *out);
/* Free parameters (ExpRat: 3, its c being fixed at 1). */
unsigned extrap_kernel_params(enum extrap_kernel k);
/* f(n) with the coefficients in the order of the comments above: numerator a0.. then
 * denominator b1.. for the rationals; a, b, d for ExpRat (c = 1); a, b for Amdahl. With
 * `all4` coefficients for ExpRat (a, b, c, d as the paper writes it) use
 * extrap_kernel_eval_exprat4. NaN where the kernel is not defined (a pole, n <= 0). */
double extrap_kernel_eval(enum extrap_kernel k, const double *coef, double n);
double extrap_kernel_eval_exprat4(const double *abcd, double n);

/* One kernel fitted to (n, y) points. Coefficients are those of the kernel in the scaled
 * variables n/n_scale and y/y_scale (the same family: a rational, log-cubic, ... of n/s is
 * one of n), which keeps the nonlinear fits well conditioned. */
struct extrap_fit {
        bool known;
        enum extrap_kernel kernel;
        double coef[EXTRAP_MAX_PARAMS];
        double n_scale, y_scale;
        double rmse; /* over the points it was fitted to, in y's unit */
};

/* Least squares of one kernel on m points (linear for Amdahl, CubicLn and Poly25; damped
 * Gauss-Newton / Levenberg-Marquardt from a linearised start for the rationals and ExpRat).
 * -EDOM when there are fewer points than parameters or the fit fails; -E2BIG, -EINVAL. */
int extrap_fit_kernel(enum extrap_kernel k, const double *n, const double *y, unsigned m,
                      struct extrap_fit *out);
double extrap_fit_eval(const struct extrap_fit *f, double n);
/* A fit is usable up to n_max when it is finite and positive at every integer count in
 * [1, n_max] and a rational's denominator keeps its sign there (no pole). */
bool extrap_fit_usable(const struct extrap_fit *f, unsigned n_max);

/* The paper's checkpoint selection (§3.1.2) over every kernel, for one quantity: the c
 * largest counts are held out (c = 2, or fewer so that 3 points remain to fit; 4 from 12
 * points on), every kernel is fitted to the first i points for i = 3..m-c, scored by RMSE at
 * the checkpoints, the best usable one up to n_max wins and is refitted on all m points (its
 * checkpoint fit is kept when the refit is not usable). With 3 points there is nothing to
 * hold out: the usable kernel with the fewest parameters and the smallest residual wins.
 * *checkpoint_rel is the winner's RMS relative error at the checkpoints (NaN with none).
 * -EDOM when no kernel is usable. */
int extrap_select(const double *n, const double *y, unsigned m, unsigned n_max,
                  struct extrap_fit *out, double *checkpoint_rel);

/* One measured run (or, online, one core count's averaged measurements). */
struct extrap_point {
        double cores;
        double time_s;          /* > 0: a run's time, or online the time per unit of work */
        double stalls_per_core; /* stalled cycles per core over the run; NaN when unmeasured */
};

enum extrap_basis {
        EXTRAP_BASIS_TIME,   /* core-time n·T(n) fitted */
        EXTRAP_BASIS_STALLS, /* stalls n·SPC(n) fitted, time through the scaling factor */
};

struct extrap_model {
        bool known;
        enum extrap_basis basis;
        struct extrap_fit main;   /* core-time or total stalls */
        struct extrap_fit factor; /* stalls basis: F(n) = T(n) / SPC(n) */
        double checkpoint_error;  /* RMS relative error at the held-out counts; NaN if none */
        double band_rel;          /* relative half-width of the band at measured counts */
        double max_cores;         /* the largest measured count */
        double t1_s;              /* T(1): measured, else predicted */
        bool t1_measured;
};

struct extrap_prediction {
        bool known;
        double time_s, speedup; /* speedup = T(1) / T̂(n) */
        double low_s, high_s;   /* band on time_s */
};

/* Builds the model from m points with strictly increasing core counts and positive times,
 * for predictions up to n_max cores. Stalls are used when every point has them. Fewer than
 * three points: 0 with out->known false. -EINVAL for unordered counts or non-positive times,
 * -EDOM when no kernel can be fitted, -E2BIG. */
int extrap_build(const struct extrap_point *pts, unsigned m, unsigned n_max,
                 struct extrap_model *out);
/* The prediction at n cores (NaN fields and known false when the model is unknown). */
void extrap_predict(const struct extrap_model *mod, double n, struct extrap_prediction *out);
/* The count in [1, n_max] with the least predicted time (0 when unknown); the largest
 * speedup in that range in *speedup_max when not NULL (NaN when unknown). */
unsigned extrap_best_cores(const struct extrap_model *mod, unsigned n_max, double *speedup_max);

/* The knee's tolerance: the fewest cores within this share of the best predicted score. */
#define EXTRAP_KNEE_TOL 0.05

/* The knee of a predicted curve, lower scores better (time, EDP): the fewest cores whose
 * score is within tol_rel of the least one over [lo, hi] (score - best <= tol_rel |best|),
 * where the argmin of a curve flat within a few per cent is noise. score(ctx, n) gives the
 * score at n cores, NaN where unknown. 0 when no score in the range is finite or lo > hi. */
unsigned extrap_knee(double (*score)(const void *ctx, unsigned n), const void *ctx, unsigned lo,
                     unsigned hi, double tol_rel);
/* The model's predicted time at n cores (NaN when unknown): a score for extrap_knee. */
double extrap_time_score(const void *mod, unsigned n);

/* Amdahl alone, the baseline: T(n) = s + p/n by least squares on all points (0 with known
 * false for fewer than two). */
int extrap_amdahl(const struct extrap_point *pts, unsigned m, struct extrap_model *out);

/* Pearson correlation of two series; NaN when either is constant or len < 2. */
double extrap_pearson(const double *x, const double *y, unsigned len);

/* The runs file of `pctl extrapolate`: one line per run, `CORES TIME_S [STALLS_PER_CORE]`,
 * `#` comments and blank lines skipped; core counts strictly increasing, times > 0, stalls
 * on every row or on none. Fills pts[0..*m) and, per point, the line it came from (lines may
 * be NULL). name is the file's name for the messages. Returns 0, or -EINVAL with err set to
 * "NAME:LINE: what is wrong" (fewer than three runs is an error here: name the last line);
 * -E2BIG past max runs. Pure: the caller reads the file. */
int extrap_runs_parse(const char *text, const char *name, struct extrap_point *pts, unsigned *lines,
                      unsigned max, unsigned *m, char *err, size_t err_size);
