#include "pctl/model.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int model_time_1(double i0, double ips, double *t_s)
{
        if (!(ips > 0) || !(i0 >= 0))
                return -EDOM;
        *t_s = i0 / ips; /* eq. 1 */
        return 0;
}

int model_time_n(double p, unsigned n, double t1_s, double *t_s)
{
        double t;

        if (n == 0 || !(t1_s >= 0) || !isfinite(p))
                return -EDOM;
        t = (1.0 - p) * t1_s + p * t1_s / n; /* eq. 2 */
        if (!(t > 0) && t1_s > 0)
                return -EDOM;
        *t_s = t;
        return 0;
}

int model_speedup(double p, unsigned n, double *sp)
{
        double denom;

        if (n == 0 || !isfinite(p))
                return -EDOM;
        denom = (1.0 - p) + p / n; /* eq. 3 */
        if (!(denom > 0))
                return -EDOM;
        *sp = 1.0 / denom;
        return 0;
}

int model_ipc(double instr, double c_max, double *ipc)
{
        if (!(c_max > 0) || !(instr >= 0))
                return -EDOM;
        *ipc = instr / c_max; /* eq. 7 */
        return 0;
}

int model_speedup_from_ipc(double ipc_n, double ipc_1, double *sp)
{
        if (!(ipc_1 > 0) || !(ipc_n >= 0))
                return -EDOM;
        *sp = ipc_n / ipc_1; /* eq. 9 */
        return 0;
}

int model_p_from_speedup(unsigned n, double sp, double *p)
{
        double nd = n;

        if (n < 2 || !(sp > 0) || !isfinite(sp))
                return -EDOM;
        *p = nd * (1.0 - sp) / (sp * (1.0 - nd)); /* eq. 10 */
        return sp > nd ? MODEL_SUPERLINEAR : 0;
}

int model_perf_per_watt(double ips, double power_w, double *ppw)
{
        if (!(power_w > 0) || !(ips >= 0))
                return -EDOM;
        *ppw = ips / power_w; /* eq. 11 */
        return 0;
}

int model_epi(double power_w, double ips, double *epi_j)
{
        if (!(ips > 0) || !(power_w >= 0))
                return -EDOM;
        *epi_j = power_w / ips; /* eq. 12 */
        return 0;
}

int model_edp(double power_w, double t_s, double *edp_js)
{
        if (!(power_w >= 0) || !(t_s >= 0))
                return -EDOM;
        *edp_js = power_w * t_s * t_s; /* eq. 13 */
        return 0;
}

int model_p_least_squares(const struct model_obs *obs, size_t n, struct model_fit *out)
{
        double sxx = 0, sxy = 0, wsum = 0, err2 = 0, p;
        unsigned used = 0, distinct = 0;
        unsigned seen[64];

        /* Amdahl: 1/SP = 1 - P*x with x = 1 - 1/N; let y = 1 - 1/SP, then y = P*x. */
        for (size_t i = 0; i < n; i++) {
                double x, y;

                if (obs[i].cores < 2 || !(obs[i].weight > 0) || !(obs[i].speedup > 0))
                        continue;
                x = 1.0 - 1.0 / obs[i].cores;
                y = 1.0 - 1.0 / obs[i].speedup;
                sxx += obs[i].weight * x * x;
                sxy += obs[i].weight * x * y;
                used++;
                bool known = false;
                for (unsigned k = 0; k < distinct; k++)
                        known |= seen[k] == obs[i].cores;
                if (!known && distinct < 64)
                        seen[distinct++] = obs[i].cores;
        }
        if (used == 0 || !(sxx > 0))
                return -EDOM;
        p = sxy / sxx;
        for (size_t i = 0; i < n; i++) {
                double sp;

                if (obs[i].cores < 2 || !(obs[i].weight > 0) || !(obs[i].speedup > 0))
                        continue;
                if (model_speedup(p, obs[i].cores, &sp) < 0)
                        sp = INFINITY; /* P so large the model diverges: a huge residual */
                err2 += obs[i].weight * (sp - obs[i].speedup) * (sp - obs[i].speedup);
                wsum += obs[i].weight;
        }
        *out = (struct model_fit){
            .p = p,
            .rms_residual = sqrt(err2 / wsum),
            .n_points = used,
            .n_cores = distinct,
        };
        return 0;
}

int model_power_set_point(struct model_power *pm, unsigned freq_khz, double core_w, double idle_w)
{
        unsigned i = 0;

        while (i < pm->n_points && pm->points[i].freq_khz < freq_khz)
                i++;
        if (i < pm->n_points && pm->points[i].freq_khz == freq_khz) {
                pm->points[i].core_w = core_w;
                pm->points[i].idle_w = idle_w;
                return 0;
        }
        if (pm->n_points >= MODEL_MAX_FREQS)
                return -ENOSPC;
        memmove(&pm->points[i + 1], &pm->points[i], (pm->n_points - i) * sizeof(pm->points[0]));
        pm->points[i] = (struct model_power_point){freq_khz, core_w, idle_w};
        pm->n_points++;
        return 0;
}

unsigned model_power_max_freq(const struct model_power *pm)
{
        return pm->n_points ? pm->points[pm->n_points - 1].freq_khz : 0;
}

int model_power_at(const struct model_power *pm, unsigned freq_khz, double busy_cores,
                   double idle_cores, double *power_w)
{
        const struct model_power_point *lo = NULL, *hi = NULL;
        double core_w, idle_w;

        for (unsigned i = 0; i < pm->n_points; i++) {
                if (pm->points[i].freq_khz <= freq_khz)
                        lo = &pm->points[i];
                if (pm->points[i].freq_khz >= freq_khz && !hi)
                        hi = &pm->points[i];
        }
        if (!lo || !hi)
                return -ENODATA;
        if (lo == hi) {
                core_w = lo->core_w;
                idle_w = lo->idle_w;
        } else {
                double t = (double)(freq_khz - lo->freq_khz) / (hi->freq_khz - lo->freq_khz);

                core_w = lo->core_w + t * (hi->core_w - lo->core_w);
                idle_w = lo->idle_w + t * (hi->idle_w - lo->idle_w);
        }
        if (busy_cores < 0 || idle_cores < 0)
                return -EDOM;
        *power_w = pm->static_w + core_w * busy_cores + idle_w * idle_cores;
        return 0;
}

int model_predict(const struct model_app *app, const struct model_power *pm, unsigned cores,
                  unsigned freq_khz, struct model_prediction *out)
{
        struct model_prediction pr = {
            .power_w = NAN, .energy_j = NAN, .edp_js = NAN, .perf_per_w = NAN, .epi_j = NAN};
        double t1_f, m = app->mem_fraction;
        int r;

        if (cores == 0 || freq_khz == 0 || !(app->t1_s > 0) || app->freq_ref_khz == 0 ||
            !(m >= 0 && m <= 1))
                return -EDOM;
        /* The compute share of single-core time scales as 1/f, the memory share does not. */
        t1_f = app->t1_s * ((1.0 - m) * app->freq_ref_khz / freq_khz + m);
        r = model_speedup(app->p, cores, &pr.speedup);
        if (r < 0)
                return r;
        pr.time_s = t1_f / pr.speedup;
        /* Amdahl: the work keeps SP cores busy on average (Σbusy = T(1), elapsed = T(1)/SP). */
        pr.busy_cores = pr.speedup < cores ? pr.speedup : cores;
        if (pm &&
            model_power_at(pm, freq_khz, pr.busy_cores, cores - pr.busy_cores, &pr.power_w) == 0) {
                pr.energy_j = pr.power_w * pr.time_s;
                model_edp(pr.power_w, pr.time_s, &pr.edp_js);
                if (app->instructions > 0) {
                        double ips = app->instructions / pr.time_s;

                        model_perf_per_watt(ips, pr.power_w, &pr.perf_per_w);
                        model_epi(pr.power_w, ips, &pr.epi_j);
                }
        }
        *out = pr;
        return 0;
}
