#include "pctl/powerfit.h"

#include <errno.h>
#include <math.h>
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

int powerfit_model(const struct powerfit *pf, struct model_power *out)
{
        double theta[POWERFIT_DIM];
        struct model_power m = {0};
        unsigned n = 1 + 2 * pf->n_freqs;
        int r;

        if (pf->n_freqs == 0)
                return -ENODATA;
        r = wls_solve(&pf->xx[0][0], pf->xy, n, POWERFIT_DIM, POWERFIT_RIDGE, 0, theta);
        if (r == -EDOM)
                return -ENODATA;
        if (r < 0)
                return r;
        m.static_w = fmax(theta[0], 0);
        for (unsigned k = 0; k < pf->n_freqs; k++) {
                double core_w = theta[1 + 2 * k], idle_w = theta[2 + 2 * k];

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
