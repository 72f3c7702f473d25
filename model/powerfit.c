#include "pctl/powerfit.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/wls.h"

#define POWERFIT_DEFAULT_HALF_LIFE_S 60.0
/* Unknowns: static_w, then core_w and idle_w per frequency. */
#define POWERFIT_DIM (1 + 2 * POWERFIT_MAX_FREQS)

struct powerfit {
        double half_life_s;
        unsigned n_freqs;
        unsigned freq_khz[POWERFIT_MAX_FREQS];
        double count[POWERFIT_MAX_FREQS]; /* weighted intervals with a busy or held CPU there */
        /* Normal equations of the weighted least squares: Σ w x xᵀ and Σ w x W. */
        double xx[POWERFIT_DIM][POWERFIT_DIM];
        double xy[POWERFIT_DIM];
        double yy; /* Σ w W², for the residual noise behind the split's precision */
        double weight;
        bool have_ts;
        uint64_t last_ts_ns;
};

struct powerfit *powerfit_new(double half_life_s)
{
        struct powerfit *pf;

        if (half_life_s == 0)
                half_life_s = POWERFIT_DEFAULT_HALF_LIFE_S;
        if (!(half_life_s > 0) || !isfinite(half_life_s)) {
                errno = EINVAL;
                return NULL;
        }
        pf = calloc(1, sizeof(*pf));
        if (!pf) {
                errno = ENOMEM;
                return NULL;
        }
        pf->half_life_s = half_life_s;
        return pf;
}

void powerfit_free(struct powerfit *pf)
{
        free(pf);
}

static int powerfit_slot(struct powerfit *pf, unsigned freq_khz, bool add)
{
        for (unsigned k = 0; k < pf->n_freqs; k++)
                if (pf->freq_khz[k] == freq_khz)
                        return (int)k;
        if (!add)
                return -ENOENT;
        if (pf->n_freqs == POWERFIT_MAX_FREQS)
                return -ENOSPC;
        pf->freq_khz[pf->n_freqs] = freq_khz;
        pf->count[pf->n_freqs] = 0;
        return (int)pf->n_freqs++;
}

int powerfit_add(struct powerfit *pf, const struct sensor_sample *s, const unsigned *cpu_freq_khz,
                 const struct cpumask *held)
{
        double x[POWERFIT_DIM] = {1.0}, dt_s, energy_j = 0, decay = 1;
        bool seen[POWERFIT_MAX_FREQS] = {false};
        unsigned n_freqs = pf->n_freqs;

        if (!s || s->interval_ns == 0 || !s->cpu || !cpu_freq_khz || !held)
                return -EINVAL;
        if (!s->energy_measured || s->n_packages == 0 || s->n_packages > SENSOR_MAX_PACKAGES)
                return -ENODATA;
        dt_s = s->interval_ns * 1e-9;
        for (unsigned k = 0; k < s->n_packages; k++)
                energy_j += s->energy_j[k];
        /* Validate the whole interval before touching the fit: a CPU that did something at a
         * frequency we cannot name, or without a busy figure, makes the interval unusable. */
        for (unsigned c = 0; c < s->n_cpus; c++) {
                const struct sensor_counts *cc = &s->cpu[c];
                double busy;
                int k;

                if (!cc->measured)
                        continue;
                if (cc->measured & SENSOR_BUSY)
                        busy = cc->busy_ns * 1e-9 / dt_s;
                else if ((cc->measured & SENSOR_CYCLES) && cpu_freq_khz[c])
                        busy = cc->cycles / (cpu_freq_khz[c] * 1e3) / dt_s;
                else
                        goto unusable;
                busy = fmin(fmax(busy, 0), 1);
                if (busy == 0 && !cpumask_test(held, c))
                        continue; /* idle and unheld: part of the static power */
                if (!cpu_freq_khz[c])
                        goto unusable;
                k = powerfit_slot(pf, cpu_freq_khz[c], true);
                if (k < 0) {
                        pf->n_freqs = n_freqs;
                        return k;
                }
                x[1 + 2 * k] += busy;
                if (cpumask_test(held, c))
                        x[2 + 2 * k] += 1 - busy;
                seen[k] = true;
        }
        if (pf->have_ts && s->timestamp_ns > pf->last_ts_ns)
                decay = exp2(-(double)(s->timestamp_ns - pf->last_ts_ns) * 1e-9 / pf->half_life_s);
        pf->have_ts = true;
        pf->last_ts_ns = s->timestamp_ns;
        wls_scale(&pf->xx[0][0], pf->xy, POWERFIT_DIM, decay);
        wls_add(&pf->xx[0][0], pf->xy, POWERFIT_DIM, x, energy_j / dt_s);
        pf->yy = pf->yy * decay + (energy_j / dt_s) * (energy_j / dt_s);
        pf->weight = pf->weight * decay + 1;
        for (unsigned k = 0; k < pf->n_freqs; k++)
                pf->count[k] = pf->count[k] * decay + (seen[k] ? 1 : 0);
        return 0;
unusable:
        pf->n_freqs = n_freqs; /* frequencies this interval added hold no data */
        return -ENODATA;
}

/* A small ridge keeps directions the data cannot tell apart (static power and the idle power
 * of cores that were always held) finite instead of failing the solve. */
#define POWERFIT_RIDGE 1e-9
/* How sure the fit must be of a frequency's held idle power before it tells it from static
 * power: idle_w at least this many standard errors from 0 (about 95 % confidence). */
#define POWERFIT_SPLIT_Z 2.0
/* The residual noise is taken to be at least this share of the mean package power (rms): a
 * fit that matches every interval exactly (a direction only the ridge fixes, synthetic data)
 * would otherwise read the ridge's arbitrary choice as precise. Any real meter and any model
 * of a real machine miss by more. */
#define POWERFIT_NOISE_FLOOR 1e-3

/* A system of normal equations over some of the fit's unknowns (or sums of them): Σ w x xᵀ
 * (n × n, row-major) and Σ w x W. */
struct powerfit_sys {
        unsigned n;
        double xx[POWERFIT_DIM * POWERFIT_DIM];
        double xy[POWERFIT_DIM];
};

/* How much column i of the design varies apart from every other column (the Schur complement
 * of XᵀWX at i: the weighted sum of squares of what regressing it on the others leaves). The
 * regression is solved on columns scaled to unit size, so the ridge that keeps it finite costs
 * every column alike: unscaled, it would shrink the large coefficient the constant takes (the
 * CPU count) and read a column the others fix exactly as varying by the ridge's own size. */
static int powerfit_schur(const struct powerfit_sys *y, unsigned i, double *out)
{
        double oo[POWERFIT_DIM * POWERFIT_DIM], oi[POWERFIT_DIM], g[POWERFIT_DIM], sd[POWERFIT_DIM],
            s;
        unsigned o[POWERFIT_DIM], m = 0, n = y->n;
        int r;

        for (unsigned j = 0; j < n; j++)
                if (j != i && y->xx[j * n + j] > 0)
                        o[m++] = j;
        for (unsigned a = 0; a < m; a++)
                sd[a] = sqrt(y->xx[o[a] * n + o[a]]);
        for (unsigned a = 0; a < m; a++) {
                for (unsigned b = 0; b < m; b++)
                        oo[a * m + b] = y->xx[o[a] * n + o[b]] / (sd[a] * sd[b]);
                oi[a] = y->xx[o[a] * n + i] / sd[a];
        }
        s = y->xx[i * n + i];
        if (m > 0) {
                r = wls_solve(oo, oi, m, m, POWERFIT_RIDGE, 0, g);
                if (r < 0)
                        return r;
                for (unsigned a = 0; a < m; a++)
                        s -= oi[a] * g[a];
        }
        *out = fmax(s, 0);
        return 0;
}

/* Whether the data fix the coefficient of each column listed in test[] (n_test of them): it
 * must stand POWERFIT_SPLIT_Z standard errors from 0. Its standard error is σ / √S: S how much
 * the column has varied apart from every other one (powerfit_schur), σ the noise of the
 * intervals' power around the fit of the whole system, floored (POWERFIT_NOISE_FLOOR). */
static int powerfit_fixed(const struct powerfit *pf, const struct powerfit_sys *y,
                          const unsigned *test, unsigned n_test, bool *fixed)
{
        double theta[POWERFIT_DIM], rss, dof, var_w2; /* var_w2: σ², W² */
        unsigned n = y->n;
        int r;

        for (unsigned t = 0; t < n_test; t++)
                fixed[t] = false;
        dof = pf->weight - n;
        if (!(dof > 0))
                return 0;
        r = wls_solve(y->xx, y->xy, n, n, POWERFIT_RIDGE, 0, theta);
        if (r < 0)
                return r;
        /* Σ w (W - xᵀθ)², read off the normal equations. */
        rss = pf->yy;
        for (unsigned i = 0; i < n; i++) {
                rss -= 2 * theta[i] * y->xy[i];
                for (unsigned j = 0; j < n; j++)
                        rss += theta[i] * y->xx[i * n + j] * theta[j];
        }
        var_w2 = fmax(rss / dof, POWERFIT_NOISE_FLOOR * POWERFIT_NOISE_FLOOR * pf->yy / pf->weight);
        for (unsigned t = 0; t < n_test; t++) {
                double s;

                r = powerfit_schur(y, test[t], &s);
                if (r < 0)
                        return r;
                fixed[t] = s > 0 && fabs(theta[test[t]]) >= POWERFIT_SPLIT_Z * sqrt(var_w2 / s);
        }
        return 0;
}

/* The system over the fit's columns in col[] (m of them), plus, when merged is not 0, one
 * column that sums the idle columns of the frequencies merged marks (bit k: frequency k). */
static void powerfit_reduce(const struct powerfit *pf, const unsigned *col, unsigned m,
                            uint32_t merged, struct powerfit_sys *y)
{
        double sum_x[POWERFIT_DIM] = {0}, sum_xx = 0, sum_y = 0;
        unsigned n = m + (merged ? 1 : 0);

        y->n = n;
        for (unsigned k = 0; k < pf->n_freqs; k++) {
                if (!(merged & (UINT32_C(1) << k)))
                        continue;
                for (unsigned j = 0; j < POWERFIT_DIM; j++)
                        sum_x[j] += pf->xx[2 + 2 * k][j];
                for (unsigned l = 0; l < pf->n_freqs; l++)
                        if (merged & (UINT32_C(1) << l))
                                sum_xx += pf->xx[2 + 2 * k][2 + 2 * l];
                sum_y += pf->xy[2 + 2 * k];
        }
        for (unsigned a = 0; a < m; a++) {
                for (unsigned b = 0; b < m; b++)
                        y->xx[a * n + b] = pf->xx[col[a]][col[b]];
                y->xy[a] = pf->xy[col[a]];
                if (merged)
                        y->xx[a * n + m] = y->xx[m * n + a] = sum_x[col[a]];
        }
        if (merged) {
                y->xx[m * n + m] = sum_xx;
                y->xy[m] = sum_y;
        }
}

int powerfit_model(const struct powerfit *pf, struct model_power *out)
{
        double theta[POWERFIT_DIM] = {0}, sol[POWERFIT_DIM], known[POWERFIT_DIM], common_w = 0;
        unsigned col[POWERFIT_DIM], test[POWERFIT_MAX_FREQS], n = 1 + 2 * pf->n_freqs, m_cols = 0;
        struct model_power m = {0};
        struct powerfit_sys y;
        bool split[POWERFIT_MAX_FREQS], fixed = false;
        uint32_t merged = 0, all = 0;
        int r;

        if (pf->n_freqs == 0)
                return -ENODATA;
        /* Which frequencies' held idle power the data tell apart from static power, each on
         * its own: while every CPU stays held, static_w and n·idle_w move together, S is 0 and
         * the split would be the ridge's choice. */
        for (unsigned i = 0; i < n; i++)
                col[i] = i;
        powerfit_reduce(pf, col, n, 0, &y);
        for (unsigned k = 0; k < pf->n_freqs; k++)
                test[k] = 2 + 2 * k;
        r = powerfit_fixed(pf, &y, test, pf->n_freqs, split);
        if (r < 0)
                return r == -EDOM ? -ENODATA : r;
        /* What a held idle CPU draws over an unheld one, one figure for every clock, where the
         * data fix that one: the held count often varies only together with a frequency's own
         * columns (an app given a domain of its own at a new clock, not all of it held), which
         * fixes no frequency's idle power on its own but does fix the common one. A held idle
         * CPU sits in a C-state, where the clock it would run at matters little. Taken as 0
         * while the held count moves, that power would bend static_w and core_w to absorb it.
         * A frequency whose own idle power the data fix keeps its own. */
        for (unsigned k = 0; k < pf->n_freqs; k++)
                if (pf->xx[2 + 2 * k][2 + 2 * k] > 0)
                        all |= UINT32_C(1) << k;
        for (unsigned i = 0, c = 0; i < n; i++)
                if (i == 0 || i % 2 == 1)
                        col[c++] = i;
        if (all) {
                powerfit_reduce(pf, col, 1 + pf->n_freqs, all, &y);
                r = powerfit_fixed(pf, &y, (unsigned[]){1 + pf->n_freqs}, 1, &fixed);
                if (r < 0)
                        return r == -EDOM ? -ENODATA : r;
                if (fixed && wls_solve(y.xx, y.xy, y.n, y.n, POWERFIT_RIDGE, 0, sol) == 0)
                        common_w = sol[1 + pf->n_freqs];
                else
                        fixed = false;
        }
        for (unsigned i = 0; i < n; i++)
                if (i == 0 || i % 2 == 1 || split[(i - 2) / 2])
                        col[m_cols++] = i;
                else if (fixed && (all & (UINT32_C(1) << ((i - 2) / 2))))
                        merged |= UINT32_C(1) << ((i - 2) / 2);
        /* The frequencies not fixed on their own draw the common figure: a known term, moved
         * to the measured side of the equations. */
        powerfit_reduce(pf, col, m_cols, merged, &y);
        for (unsigned a = 0; a < m_cols; a++)
                known[a] = y.xy[a] - (merged ? common_w * y.xx[a * y.n + m_cols] : 0);
        powerfit_reduce(pf, col, m_cols, 0, &y);
        memcpy(y.xy, known, m_cols * sizeof(known[0]));
        r = wls_solve(y.xx, y.xy, y.n, y.n, POWERFIT_RIDGE, 0, sol);
        if (r == -EDOM)
                return -ENODATA;
        if (r < 0)
                return r;
        for (unsigned a = 0; a < m_cols; a++)
                theta[col[a]] = sol[a];
        m.static_w = fmax(theta[0], 0);
        for (unsigned k = 0; k < pf->n_freqs; k++) {
                double core_w = theta[1 + 2 * k],
                       idle_w = merged & (UINT32_C(1) << k) ? common_w : theta[2 + 2 * k];

                if (pf->count[k] < POWERFIT_MIN_INTERVALS || !(core_w > 0) || !isfinite(core_w))
                        continue;
                /* A C-state draws something or nothing; noise may push its fit below 0. */
                r = model_power_set_point(&m, pf->freq_khz[k], core_w, fmax(idle_w, 0));
                if (r < 0)
                        return r;
        }
        if (m.n_points == 0)
                return -ENODATA;
        *out = m;
        return 0;
}

double powerfit_intervals(const struct powerfit *pf)
{
        return pf->weight;
}
