/* Scalability extrapolation after ESTIMA (include/pctl/extrapolate.h, docs/extrapolation.md). */
#include "pctl/extrapolate.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pctl/util.h"
#include "pctl/wls.h"

static const struct {
        const char *name;
        unsigned params;
        unsigned num_deg; /* rationals: numerator degree; denominator degree below */
        unsigned den_deg;
} kernels[EXTRAP_N_KERNELS] = {
    [EXTRAP_AMDAHL] = {"Amdahl", 2, 0, 0},   [EXTRAP_RAT22] = {"Rat22", 5, 2, 2},
    [EXTRAP_RAT23] = {"Rat23", 6, 2, 3},     [EXTRAP_RAT33] = {"Rat33", 7, 3, 3},
    [EXTRAP_CUBICLN] = {"CubicLn", 4, 0, 0}, [EXTRAP_EXPRAT] = {"ExpRat", 3, 0, 0},
    [EXTRAP_POLY25] = {"Poly25", 4, 0, 0},
};

const char *extrap_kernel_name(enum extrap_kernel k)
{
        return (unsigned)k < EXTRAP_N_KERNELS ? kernels[k].name : "unknown";
}

int extrap_kernel_from_name(const char *name, enum extrap_kernel *out)
{
        for (unsigned k = 0; k < EXTRAP_N_KERNELS; k++)
                if (strcasecmp(name, kernels[k].name) == 0) {
                        *out = (enum extrap_kernel)k;
                        return 0;
                }
        return -EINVAL;
}

unsigned extrap_kernel_params(enum extrap_kernel k)
{
        return (unsigned)k < EXTRAP_N_KERNELS ? kernels[k].params : 0;
}

static bool kernel_rational(enum extrap_kernel k)
{
        return k == EXTRAP_RAT22 || k == EXTRAP_RAT23 || k == EXTRAP_RAT33;
}

static bool kernel_linear(enum extrap_kernel k)
{
        return k == EXTRAP_AMDAHL || k == EXTRAP_CUBICLN || k == EXTRAP_POLY25;
}

/* The basis of a kernel that is linear in its coefficients. */
static void linear_basis(enum extrap_kernel k, double n, double *row)
{
        double l = log(n);

        switch (k) {
        case EXTRAP_AMDAHL:
                row[0] = 1;
                row[1] = n;
                break;
        case EXTRAP_CUBICLN:
                row[0] = 1;
                row[1] = l;
                row[2] = l * l;
                row[3] = l * l * l;
                break;
        default: /* EXTRAP_POLY25 */
                row[0] = 1;
                row[1] = n;
                row[2] = n * n;
                row[3] = n * n * sqrt(n);
                break;
        }
}

/* Denominator 1 + b1·n + ... of a rational kernel. */
static double rational_den(enum extrap_kernel k, const double *coef, double n)
{
        const double *b = coef + kernels[k].num_deg + 1;
        double d = 1, p = 1;

        for (unsigned j = 0; j < kernels[k].den_deg; j++) {
                p *= n;
                d += b[j] * p;
        }
        return d;
}

static double rational_num(enum extrap_kernel k, const double *coef, double n)
{
        double v = 0, p = 1;

        for (unsigned i = 0; i <= kernels[k].num_deg; i++) {
                v += coef[i] * p;
                p *= n;
        }
        return v;
}

double extrap_kernel_eval(enum extrap_kernel k, const double *coef, double n)
{
        double row[EXTRAP_MAX_PARAMS] = {0}, v = 0;

        if (!(n > 0) || (unsigned)k >= EXTRAP_N_KERNELS)
                return NAN;
        if (kernel_linear(k)) {
                linear_basis(k, n, row);
                for (unsigned i = 0; i < kernels[k].params; i++)
                        v += coef[i] * row[i];
                return v;
        }
        if (kernel_rational(k)) {
                double d = rational_den(k, coef, n);

                return d == 0 ? NAN : rational_num(k, coef, n) / d;
        }
        /* ExpRat with c = 1 */
        return 1 + coef[2] * n == 0 ? NAN : exp((coef[0] + coef[1] * n) / (1 + coef[2] * n));
}

double extrap_kernel_eval_exprat4(const double *abcd, double n)
{
        double den = abcd[2] + abcd[3] * n;

        return !(n > 0) || den == 0 ? NAN : exp((abcd[0] + abcd[1] * n) / den);
}

double extrap_fit_eval(const struct extrap_fit *f, double n)
{
        if (!f->known)
                return NAN;
        return f->y_scale * extrap_kernel_eval(f->kernel, f->coef, n / f->n_scale);
}

/* f and its gradient in the coefficients at n (scaled units). */
static double kernel_grad(enum extrap_kernel k, const double *coef, double n, double *grad)
{
        unsigned np = kernels[k].params;

        if (kernel_linear(k)) {
                double v = 0;

                linear_basis(k, n, grad);
                for (unsigned i = 0; i < np; i++)
                        v += coef[i] * grad[i];
                return v;
        }
        if (kernel_rational(k)) {
                unsigned na = kernels[k].num_deg + 1;
                double d = rational_den(k, coef, n), f, p = 1;

                if (d == 0)
                        return NAN;
                f = rational_num(k, coef, n) / d;
                for (unsigned i = 0; i < na; i++) {
                        grad[i] = p / d;
                        p *= n;
                }
                p = n;
                for (unsigned j = 0; j < kernels[k].den_deg; j++) {
                        grad[na + j] = -f * p / d;
                        p *= n;
                }
                return f;
        }
        {
                double den = 1 + coef[2] * n, g, f;

                if (den == 0)
                        return NAN;
                g = (coef[0] + coef[1] * n) / den;
                f = exp(g);
                grad[0] = f / den;
                grad[1] = f * n / den;
                grad[2] = -f * g * n / den;
                return f;
        }
}

static double sum_sq(enum extrap_kernel k, const double *coef, const double *n, const double *y,
                     unsigned m)
{
        double s = 0;

        for (unsigned i = 0; i < m; i++) {
                double r = y[i] - extrap_kernel_eval(k, coef, n[i]);

                s += r * r;
        }
        return isfinite(s) ? s : INFINITY;
}

/* Ordinary least squares of rows·x = y; a tiny ridge keeps exact-fit systems solvable. */
static int linear_solve(const double *rows, const double *y, unsigned m, unsigned np, double *x)
{
        double ata[EXTRAP_MAX_PARAMS * EXTRAP_MAX_PARAMS] = {0}, atb[EXTRAP_MAX_PARAMS] = {0};

        for (unsigned i = 0; i < m; i++)
                wls_add(ata, atb, np, rows + (size_t)i * np, y[i]);
        return wls_solve(ata, atb, np, np, 1e-12, 0, x);
}

/* Levenberg-Marquardt from coef: the damping λ·diag(JᵀJ) grows on a rejected step and
 * shrinks on an accepted one (a damped Gauss-Newton). Returns the final sum of squares. */
static double lm_refine(enum extrap_kernel k, double *coef, const double *n, const double *y,
                        unsigned m)
{
        unsigned np = kernels[k].params;
        double cost = sum_sq(k, coef, n, y, m), lambda = 1e-3;

        if (!isfinite(cost))
                return INFINITY;
        for (unsigned iter = 0; iter < 200 && cost > 0; iter++) {
                double jtj[EXTRAP_MAX_PARAMS * EXTRAP_MAX_PARAMS] = {0};
                double jtr[EXTRAP_MAX_PARAMS] = {0}, grad[EXTRAP_MAX_PARAMS];
                bool improved = false;

                for (unsigned i = 0; i < m; i++) {
                        double f = kernel_grad(k, coef, n[i], grad);

                        if (!isfinite(f))
                                return cost;
                        for (unsigned a = 0; a < np; a++) {
                                for (unsigned b = 0; b < np; b++)
                                        jtj[a * np + b] += grad[a] * grad[b];
                                jtr[a] += grad[a] * (y[i] - f);
                        }
                }
                while (lambda < 1e12) {
                        double a[EXTRAP_MAX_PARAMS * EXTRAP_MAX_PARAMS], step[EXTRAP_MAX_PARAMS];
                        double trial[EXTRAP_MAX_PARAMS], c;

                        memcpy(a, jtj, sizeof(a));
                        for (unsigned d = 0; d < np; d++)
                                a[d * np + d] += lambda * fmax(jtj[d * np + d], 1e-30);
                        if (wls_solve(a, jtr, np, np, 0, 0, step) < 0) {
                                lambda *= 10;
                                continue;
                        }
                        for (unsigned d = 0; d < np; d++)
                                trial[d] = coef[d] + step[d];
                        c = sum_sq(k, trial, n, y, m);
                        if (c < cost) {
                                bool small = cost - c <= 1e-15 * cost;

                                memcpy(coef, trial, np * sizeof(double));
                                cost = c;
                                lambda = fmax(lambda / 3, 1e-12);
                                improved = !small;
                                break;
                        }
                        lambda *= 4;
                }
                if (!improved)
                        break;
        }
        return cost;
}

/* Start for a rational: y·(1 + Σ b_j n^j) = Σ a_i n^i is linear in a and b (with_den), or
 * the numerator polynomial alone (b = 0). */
static int rational_start(enum extrap_kernel k, const double *n, const double *y, unsigned m,
                          bool with_den, double *coef)
{
        unsigned na = kernels[k].num_deg + 1, nb = with_den ? kernels[k].den_deg : 0;
        unsigned np = na + nb;
        double rows[EXTRAP_MAX_POINTS * EXTRAP_MAX_PARAMS];

        if (m < np)
                return -EDOM;
        for (unsigned i = 0; i < m; i++) {
                double *r = rows + (size_t)i * np, p = 1;

                for (unsigned a = 0; a < na; a++, p *= n[i])
                        r[a] = p;
                p = n[i];
                for (unsigned b = 0; b < nb; b++, p *= n[i])
                        r[na + b] = -p * y[i];
        }
        memset(coef, 0, kernels[k].params * sizeof(double));
        {
                double x[EXTRAP_MAX_PARAMS];
                int r = linear_solve(rows, y, m, np, x);

                if (r < 0)
                        return r;
                memcpy(coef, x, na * sizeof(double));
                memcpy(coef + kernels[k].num_deg + 1, x + na, nb * sizeof(double));
        }
        return 0;
}

/* Start for ExpRat: ln y = a + b·n − d·n·ln y, linear in (a, b, d). */
static int exprat_start(const double *n, const double *y, unsigned m, double *coef)
{
        double rows[EXTRAP_MAX_POINTS * 3], ly[EXTRAP_MAX_POINTS];

        for (unsigned i = 0; i < m; i++) {
                if (!(y[i] > 0))
                        return -EDOM;
                ly[i] = log(y[i]);
                rows[i * 3] = 1;
                rows[i * 3 + 1] = n[i];
                rows[i * 3 + 2] = -n[i] * ly[i];
        }
        return linear_solve(rows, ly, m, 3, coef);
}

int extrap_fit_kernel(enum extrap_kernel k, const double *n, const double *y, unsigned m,
                      struct extrap_fit *out)
{
        double ns = 0, ys = 0, sn[EXTRAP_MAX_POINTS], sy[EXTRAP_MAX_POINTS];
        double coef[EXTRAP_MAX_PARAMS] = {0}, cost = INFINITY;
        unsigned np;

        if ((unsigned)k >= EXTRAP_N_KERNELS || !n || !y || !out)
                return -EINVAL;
        if (m > EXTRAP_MAX_POINTS)
                return -E2BIG;
        np = kernels[k].params;
        if (m < np)
                return -EDOM;
        for (unsigned i = 0; i < m; i++) {
                if (!(n[i] > 0) || !isfinite(n[i]) || !isfinite(y[i]))
                        return -EINVAL;
                ns = fmax(ns, n[i]);
                ys = fmax(ys, fabs(y[i]));
        }
        if (!(ys > 0))
                ys = 1;
        for (unsigned i = 0; i < m; i++) {
                sn[i] = n[i] / ns;
                sy[i] = y[i] / ys;
        }

        if (kernel_linear(k)) {
                double rows[EXTRAP_MAX_POINTS * EXTRAP_MAX_PARAMS] = {0};

                for (unsigned i = 0; i < m; i++)
                        linear_basis(k, sn[i], rows + (size_t)i * np);
                if (linear_solve(rows, sy, m, np, coef) < 0)
                        return -EDOM;
                cost = sum_sq(k, coef, sn, sy, m);
        } else if (kernel_rational(k)) {
                /* Two starts, the better refined fit wins: the linearised one can put a pole
                 * among the points, the polynomial one cannot bend. */
                for (int s = 0; s < 2; s++) {
                        double c[EXTRAP_MAX_PARAMS], v;

                        if (rational_start(k, sn, sy, m, s == 0, c) < 0)
                                continue;
                        v = lm_refine(k, c, sn, sy, m);
                        if (v < cost) {
                                cost = v;
                                memcpy(coef, c, sizeof(c));
                        }
                }
        } else {
                if (exprat_start(sn, sy, m, coef) < 0)
                        return -EDOM;
                cost = lm_refine(k, coef, sn, sy, m);
        }
        if (!isfinite(cost))
                return -EDOM;
        *out = (struct extrap_fit){.known = true, .kernel = k, .n_scale = ns, .y_scale = ys};
        memcpy(out->coef, coef, sizeof(coef));
        out->rmse = ys * sqrt(cost / m);
        return 0;
}

bool extrap_fit_usable(const struct extrap_fit *f, unsigned n_max)
{
        double den0 = NAN;

        if (!f->known)
                return false;
        for (unsigned n = 1; n <= n_max; n++) {
                double x = n / f->n_scale, v = extrap_fit_eval(f, n), den;

                if (!isfinite(v) || !(v > 0))
                        return false;
                if (kernel_rational(f->kernel))
                        den = rational_den(f->kernel, f->coef, x);
                else if (f->kernel == EXTRAP_EXPRAT)
                        den = 1 + f->coef[2] * x;
                else
                        continue;
                if (n == 1)
                        den0 = den;
                /* A sign change between integers is a pole the grid stepped over. */
                if (!(den * den0 > 0))
                        return false;
        }
        return true;
}

static double rel_rms(const struct extrap_fit *f, const double *n, const double *y, unsigned m)
{
        double s = 0;

        for (unsigned i = 0; i < m; i++) {
                double r = (extrap_fit_eval(f, n[i]) - y[i]) / y[i];

                s += r * r;
        }
        return m ? sqrt(s / m) : NAN;
}

static unsigned checkpoints_for(unsigned m)
{
        if (m >= 12)
                return 4;
        if (m >= 5)
                return 2;
        return m - 3; /* 4 points: 1; 3 points: none */
}

int extrap_select(const double *n, const double *y, unsigned m, unsigned n_max,
                  struct extrap_fit *out, double *checkpoint_rel)
{
        struct extrap_fit best = {0};
        double best_score = INFINITY;
        unsigned c;

        if (m < 3)
                return -EDOM;
        if (m > EXTRAP_MAX_POINTS)
                return -E2BIG;
        c = checkpoints_for(m);
        if (c == 0) {
                /* Nothing to hold out: the fewest parameters that leave a residual. */
                for (unsigned k = 0; k < EXTRAP_N_KERNELS; k++) {
                        struct extrap_fit f;

                        if (kernels[k].params >= m ||
                            extrap_fit_kernel((enum extrap_kernel)k, n, y, m, &f) < 0 ||
                            !extrap_fit_usable(&f, n_max))
                                continue;
                        if (!best.known || kernels[k].params < kernels[best.kernel].params ||
                            (kernels[k].params == kernels[best.kernel].params &&
                             f.rmse < best.rmse))
                                best = f;
                }
                if (!best.known)
                        return -EDOM;
                *out = best;
                if (checkpoint_rel)
                        *checkpoint_rel = NAN;
                return 0;
        }
        /* A fit with as many parameters as points passes through them all: its checkpoint
         * error says nothing of its shape, and on the PARSEC curves such fits (ExpRat on 3
         * points) won by luck and bent away beyond. Each fit must leave a residual. */
        for (unsigned i = 3; i <= m - c; i++)
                for (unsigned k = 0; k < EXTRAP_N_KERNELS; k++) {
                        struct extrap_fit f;
                        double s = 0;

                        if (kernels[k].params >= i ||
                            extrap_fit_kernel((enum extrap_kernel)k, n, y, i, &f) < 0 ||
                            !extrap_fit_usable(&f, n_max))
                                continue;
                        for (unsigned p = m - c; p < m; p++) {
                                double r = extrap_fit_eval(&f, n[p]) - y[p];

                                s += r * r;
                        }
                        s = sqrt(s / c);
                        if (s < best_score) {
                                best_score = s;
                                best = f;
                        }
                }
        if (!best.known)
                return -EDOM;
        /* Where ESTIMA's kernels lose to plain Amdahl (docs/extrapolation.md: 6 of the 11
         * PARSEC curves, where a kernel fitted to a short prefix matched the checkpoints by
         * luck and bent away beyond them), the held-out error decides: the winner and Amdahl,
         * each fitted to every point but the checkpoints, are judged at the checkpoints. */
        if (best.kernel != EXTRAP_AMDAHL) {
                struct extrap_fit wk, amd;

                if (extrap_fit_kernel(EXTRAP_AMDAHL, n, y, m - c, &amd) == 0 &&
                    extrap_fit_usable(&amd, n_max)) {
                        double e_amd = rel_rms(&amd, n + (m - c), y + (m - c), c);
                        double e_win = INFINITY;

                        if (extrap_fit_kernel(best.kernel, n, y, m - c, &wk) == 0 &&
                            extrap_fit_usable(&wk, n_max))
                                e_win = rel_rms(&wk, n + (m - c), y + (m - c), c);
                        if (e_amd <= e_win)
                                best = amd;
                }
        }
        if (checkpoint_rel)
                *checkpoint_rel = rel_rms(&best, n + (m - c), y + (m - c), c);
        {
                struct extrap_fit all;

                if (extrap_fit_kernel(best.kernel, n, y, m, &all) == 0 &&
                    extrap_fit_usable(&all, n_max))
                        best = all;
        }
        *out = best;
        return 0;
}

double extrap_pearson(const double *x, const double *y, unsigned len)
{
        double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;

        if (len < 2)
                return NAN;
        for (unsigned i = 0; i < len; i++) {
                mx += x[i];
                my += y[i];
        }
        mx /= len;
        my /= len;
        for (unsigned i = 0; i < len; i++) {
                sxx += (x[i] - mx) * (x[i] - mx);
                syy += (y[i] - my) * (y[i] - my);
                sxy += (x[i] - mx) * (y[i] - my);
        }
        if (!(sxx > 0) || !(syy > 0))
                return NAN;
        return sxy / sqrt(sxx * syy);
}

/* T̂(n) of a model whose fits are in place (known or not). */
static double model_time(const struct extrap_model *mod, double n)
{
        if (mod->basis == EXTRAP_BASIS_TIME)
                return extrap_fit_eval(&mod->main, n) / n;
        return extrap_fit_eval(&mod->factor, n) * extrap_fit_eval(&mod->main, n) / n;
}

/* The arguments of extrap_build and extrap_amdahl: -EINVAL for missing ones or a point out of
 * order or range, -E2BIG past EXTRAP_MAX_POINTS. */
static int check_points(const struct extrap_point *pts, unsigned m, const struct extrap_model *out)
{
        if (!pts || !out)
                return -EINVAL;
        if (m > EXTRAP_MAX_POINTS)
                return -E2BIG;
        for (unsigned i = 0; i < m; i++) {
                if (!(pts[i].cores >= 1) || !isfinite(pts[i].cores) || !(pts[i].time_s > 0) ||
                    !isfinite(pts[i].time_s))
                        return -EINVAL;
                if (i > 0 && !(pts[i].cores > pts[i - 1].cores))
                        return -EINVAL;
        }
        return 0;
}

/* The factor F(n) = T(n)/SPC(n) (§3.1.3): every kernel fitted to all points; among those
 * whose times stay close to the measured ones, the one whose predicted times correlate best
 * with SPĈ(n) over 1..n_max. A near-constant F correlates perfectly, so the closeness guard
 * (within 1.5× the best in-sample error, or 0.5 % above it) keeps the choice tied to the
 * data. */
static int factor_select(struct extrap_model *mod, const struct extrap_point *pts, unsigned m,
                         unsigned n_max)
{
        double n[EXTRAP_MAX_POINTS], fac[EXTRAP_MAX_POINTS];
        struct extrap_fit fits[EXTRAP_N_KERNELS];
        double err[EXTRAP_N_KERNELS], corr[EXTRAP_N_KERNELS], best_err = INFINITY;
        double best_corr = -INFINITY;
        double *t = NULL, *s = NULL;
        int chosen = -1;

        for (unsigned i = 0; i < m; i++) {
                n[i] = pts[i].cores;
                fac[i] = pts[i].time_s / pts[i].stalls_per_core;
        }
        for (unsigned k = 0; k < EXTRAP_N_KERNELS; k++) {
                err[k] = INFINITY;
                if (extrap_fit_kernel((enum extrap_kernel)k, n, fac, m, &fits[k]) < 0 ||
                    !extrap_fit_usable(&fits[k], n_max))
                        continue;
                mod->factor = fits[k];
                {
                        double e = 0;

                        for (unsigned i = 0; i < m; i++) {
                                double r = (model_time(mod, n[i]) - pts[i].time_s) / pts[i].time_s;

                                e += r * r;
                        }
                        err[k] = sqrt(e / m);
                }
                best_err = fmin(best_err, err[k]);
        }
        if (!isfinite(best_err))
                return -EDOM;
        t = malloc(2 * (size_t)n_max * sizeof(double));
        if (!t)
                return -ENOMEM;
        s = t + n_max;
        for (unsigned k = 0; k < EXTRAP_N_KERNELS; k++) {
                corr[k] = NAN;
                if (!(err[k] <= fmax(1.5 * best_err, best_err + 0.005)))
                        continue;
                mod->factor = fits[k];
                for (unsigned i = 0; i < n_max; i++) {
                        s[i] = extrap_fit_eval(&mod->main, i + 1) / (i + 1);
                        t[i] = model_time(mod, i + 1);
                }
                corr[k] = extrap_pearson(t, s, n_max);
                if (isnan(corr[k]))
                        corr[k] = -1; /* a flat curve tells nothing: last resort only */
                best_corr = fmax(best_corr, corr[k]);
        }
        /* Correlations within 0.001 are a tie: the fewer parameters win, then the smaller
         * error, as a factor that bends more than the data asks is what goes wrong beyond. */
        for (unsigned k = 0; k < EXTRAP_N_KERNELS; k++) {
                if (!(corr[k] >= best_corr - 1e-3))
                        continue;
                if (chosen < 0 || kernels[k].params < kernels[chosen].params ||
                    (kernels[k].params == kernels[chosen].params && err[k] < err[chosen]))
                        chosen = (int)k;
        }
        free(t);
        mod->factor = fits[chosen];
        return 0;
}

static int build_inner(const struct extrap_point *pts, unsigned m, unsigned n_max,
                       struct extrap_model *out, bool want_checkpoint)
{
        double n[EXTRAP_MAX_POINTS], y[EXTRAP_MAX_POINTS], ck = NAN, e = 0;
        struct extrap_model mod = {.checkpoint_error = NAN, .band_rel = NAN, .t1_s = NAN};
        bool stalls = true;
        unsigned dof_params;
        int r;

        for (unsigned i = 0; i < m; i++)
                if (!(pts[i].stalls_per_core > 0) || !isfinite(pts[i].stalls_per_core))
                        stalls = false;
        mod.basis = stalls ? EXTRAP_BASIS_STALLS : EXTRAP_BASIS_TIME;
        for (unsigned i = 0; i < m; i++) {
                n[i] = pts[i].cores;
                y[i] = n[i] * (stalls ? pts[i].stalls_per_core : pts[i].time_s);
        }
        r = extrap_select(n, y, m, n_max, &mod.main, &ck);
        if (r < 0)
                return r;
        dof_params = extrap_kernel_params(mod.main.kernel);
        if (stalls) {
                r = factor_select(&mod, pts, m, n_max);
                if (r < 0)
                        return r;
                dof_params += extrap_kernel_params(mod.factor.kernel);
                /* The time error at the checkpoints is that of the whole pipeline built
                 * without them. */
                ck = NAN;
                if (want_checkpoint && m > 3) {
                        unsigned c = checkpoints_for(m);
                        struct extrap_model sub;

                        if (build_inner(pts, m - c, n_max, &sub, false) == 0) {
                                double s = 0;

                                for (unsigned p = m - c; p < m; p++) {
                                        double rel = (model_time(&sub, n[p]) - pts[p].time_s) /
                                                     pts[p].time_s;

                                        s += rel * rel;
                                }
                                ck = sqrt(s / c);
                        }
                }
        }
        mod.checkpoint_error = ck;
        for (unsigned i = 0; i < m; i++) {
                double rel = (model_time(&mod, n[i]) - pts[i].time_s) / pts[i].time_s;

                e += rel * rel;
        }
        e = m > dof_params ? sqrt(e / (m - dof_params)) : sqrt(e / m);
        mod.band_rel = isfinite(ck) ? fmax(e, ck) : e;
        mod.max_cores = n[m - 1];
        mod.t1_measured = n[0] == 1;
        mod.t1_s = mod.t1_measured ? pts[0].time_s : model_time(&mod, 1);
        mod.known = isfinite(mod.t1_s) && mod.t1_s > 0;
        if (!mod.known)
                return -EDOM;
        *out = mod;
        return 0;
}

int extrap_build(const struct extrap_point *pts, unsigned m, unsigned n_max,
                 struct extrap_model *out)
{
        int r;

        r = check_points(pts, m, out);
        if (r < 0)
                return r;
        if (m < 3) {
                *out = (struct extrap_model){.checkpoint_error = NAN,
                                             .band_rel = NAN,
                                             .t1_s = NAN,
                                             .max_cores = m ? pts[m - 1].cores : NAN};
                return 0;
        }
        if (n_max < pts[m - 1].cores)
                n_max = (unsigned)pts[m - 1].cores;
        return build_inner(pts, m, n_max, out, true);
}

int extrap_amdahl(const struct extrap_point *pts, unsigned m, struct extrap_model *out)
{
        double n[EXTRAP_MAX_POINTS], y[EXTRAP_MAX_POINTS], e = 0;
        struct extrap_model mod = {.basis = EXTRAP_BASIS_TIME, .checkpoint_error = NAN};
        int r;

        r = check_points(pts, m, out);
        if (r < 0)
                return r;
        if (m < 2) {
                *out = (struct extrap_model){
                    .checkpoint_error = NAN, .band_rel = NAN, .t1_s = NAN, .max_cores = NAN};
                return 0;
        }
        for (unsigned i = 0; i < m; i++) {
                n[i] = pts[i].cores;
                y[i] = n[i] * pts[i].time_s;
        }
        r = extrap_fit_kernel(EXTRAP_AMDAHL, n, y, m, &mod.main);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < m; i++) {
                double rel = (model_time(&mod, n[i]) - pts[i].time_s) / pts[i].time_s;

                e += rel * rel;
        }
        mod.band_rel = m > 2 ? sqrt(e / (m - 2)) : 0;
        mod.max_cores = n[m - 1];
        mod.t1_measured = n[0] == 1;
        mod.t1_s = mod.t1_measured ? pts[0].time_s : model_time(&mod, 1);
        mod.known = isfinite(mod.t1_s) && mod.t1_s > 0;
        *out = mod;
        return mod.known ? 0 : -EDOM;
}

void extrap_predict(const struct extrap_model *mod, double n, struct extrap_prediction *out)
{
        double t, h;

        *out =
            (struct extrap_prediction){.time_s = NAN, .speedup = NAN, .low_s = NAN, .high_s = NAN};
        if (!mod->known || !(n >= 1))
                return;
        t = model_time(mod, n);
        if (!isfinite(t) || !(t > 0))
                return;
        /* The band: the fit's relative error where it was measured, widening with the log
         * of the distance beyond (a heuristic, not a statistical interval). */
        h = mod->band_rel * (n > mod->max_cores ? 1 + log(n / mod->max_cores) : 1);
        out->known = true;
        out->time_s = t;
        out->speedup = mod->t1_s / t;
        out->low_s = t * fmax(0, 1 - h);
        out->high_s = t * (1 + h);
}

unsigned extrap_best_cores(const struct extrap_model *mod, unsigned n_max, double *speedup_max)
{
        unsigned best = 0;
        double best_t = INFINITY;

        if (speedup_max)
                *speedup_max = NAN;
        if (!mod->known)
                return 0;
        for (unsigned n = 1; n <= n_max; n++) {
                double t = model_time(mod, n);

                if (isfinite(t) && t > 0 && t < best_t) {
                        best_t = t;
                        best = n;
                }
        }
        if (best && speedup_max)
                *speedup_max = mod->t1_s / best_t;
        return best;
}

unsigned extrap_knee(double (*score)(const void *ctx, unsigned n), const void *ctx, unsigned lo,
                     unsigned hi, double tol_rel)
{
        double best = NAN;

        if (lo == 0)
                lo = 1;
        for (unsigned n = lo; n <= hi; n++) {
                double s = score(ctx, n);

                if (isfinite(s) && !(s >= best))
                        best = s;
        }
        if (!isfinite(best))
                return 0;
        /* Within the tolerance of the best, the fewest cores: past the knee more cores buy
         * less than the model's own error. */
        for (unsigned n = lo; n <= hi; n++) {
                double s = score(ctx, n);

                if (isfinite(s) && s - best <= tol_rel * fabs(best))
                        return n;
        }
        return 0;
}

double extrap_time_score(const void *mod, unsigned n)
{
        struct extrap_prediction pr;

        extrap_predict(mod, n, &pr);
        return pr.known ? pr.time_s : NAN;
}

int extrap_runs_parse(const char *text, const char *name, struct extrap_point *pts, unsigned *lines,
                      unsigned max, unsigned *m, char *err, size_t err_size)
{
        unsigned line = 0, count = 0, prev_line = 0, first_line = 0;
        bool stalls_first = false;
        const char *p = text;

        *m = 0;
        while (*p) {
                const char *eol = strchr(p, '\n');
                size_t len = eol ? (size_t)(eol - p) : strlen(p);
                char buf[256], *field[4], *save = NULL, *tok;
                unsigned nf = 0, cores;
                double t, spc = NAN;

                line++;
                if (len >= sizeof(buf)) {
                        snprintf(err, err_size, "%s:%u: line longer than %zu bytes", name, line,
                                 sizeof(buf) - 1);
                        return -EINVAL;
                }
                memcpy(buf, p, len);
                buf[len] = '\0';
                p = eol ? eol + 1 : p + len;
                if (strchr(buf, '#'))
                        *strchr(buf, '#') = '\0';
                for (tok = strtok_r(buf, " \t\r", &save); tok;
                     tok = strtok_r(NULL, " \t\r", &save)) {
                        if (nf == 3) {
                                snprintf(err, err_size,
                                         "%s:%u: too many fields (CORES TIME_S [STALLS_PER_CORE])",
                                         name, line);
                                return -EINVAL;
                        }
                        field[nf++] = tok;
                }
                if (nf == 0)
                        continue;
                if (nf < 2) {
                        snprintf(err, err_size, "%s:%u: expected CORES TIME_S [STALLS_PER_CORE]",
                                 name, line);
                        return -EINVAL;
                }
                if (parse_uint(field[0], &cores) < 0 || cores == 0) {
                        snprintf(err, err_size, "%s:%u: '%.32s' is not a core count >= 1", name,
                                 line, field[0]);
                        return -EINVAL;
                }
                if (parse_double(field[1], &t) < 0 || !isfinite(t) || !(t > 0)) {
                        snprintf(err, err_size,
                                 "%s:%u: time '%.32s' is not a number of seconds > 0", name, line,
                                 field[1]);
                        return -EINVAL;
                }
                if (nf == 3 && (parse_double(field[2], &spc) < 0 || !isfinite(spc) || spc < 0)) {
                        snprintf(err, err_size,
                                 "%s:%u: stalls '%.32s' is not a count of stalled cycles >= 0",
                                 name, line, field[2]);
                        return -EINVAL;
                }
                if (count == 0) {
                        stalls_first = nf == 3;
                        first_line = line;
                } else if ((nf == 3) != stalls_first) {
                        snprintf(err, err_size,
                                 "%s:%u: stalls %s here but %s on line %u: give them on every "
                                 "row or on none",
                                 name, line, nf == 3 ? "given" : "missing",
                                 nf == 3 ? "not" : "given", first_line);
                        return -EINVAL;
                } else if (cores == (unsigned)pts[count - 1].cores) {
                        snprintf(err, err_size, "%s:%u: %u cores again (duplicate of line %u)",
                                 name, line, cores, prev_line);
                        return -EINVAL;
                } else if (cores < (unsigned)pts[count - 1].cores) {
                        snprintf(err, err_size,
                                 "%s:%u: core counts must increase: %u after %u on line %u", name,
                                 line, cores, (unsigned)pts[count - 1].cores, prev_line);
                        return -EINVAL;
                }
                if (count == max) {
                        snprintf(err, err_size, "%s:%u: more than %u runs", name, line, max);
                        return -E2BIG;
                }
                pts[count] = (struct extrap_point){cores, t, spc};
                if (lines)
                        lines[count] = line;
                count++;
                prev_line = line;
        }
        if (count < 3) {
                snprintf(err, err_size,
                         "%s:%u: %u run%s; at least 3 core counts are needed to extrapolate", name,
                         line ? line : 1, count, count == 1 ? "" : "s");
                return -EINVAL;
        }
        *m = count;
        return 0;
}
