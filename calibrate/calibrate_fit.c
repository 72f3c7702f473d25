/* Calibration's pure half: the plan, the fits and the validation tables from the runs. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/calibrate.h"
#include "pctl/util.h"
#include "pctl/wls.h"

/* Below this a pivot of the normal equations counts as zero: the runs cannot tell the
 * unknowns apart, and the fit is refused rather than made up. */
#define CALIBRATE_MIN_PIVOT 1e-12

unsigned calibrate_plan_p(bool quick, double *p, unsigned max)
{
        static const double quick_p[] = {0.1, 0.4, 0.7, 0.9};
        unsigned n = 0;

        if (quick) {
                for (size_t i = 0; i < ARRAY_SIZE(quick_p) && n < max; i++)
                        p[n++] = quick_p[i];
                return n;
        }
        for (unsigned i = 0; i <= 10 && n < max; i++)
                p[n++] = i / 10.0;
        return n;
}

static unsigned add_unique(unsigned *v, unsigned n, unsigned max, unsigned x)
{
        for (unsigned i = 0; i < n; i++)
                if (v[i] == x)
                        return n;
        if (n < max)
                v[n++] = x;
        return n;
}

static int cmp_uint(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

        return (x > y) - (x < y);
}

unsigned calibrate_plan_cores(bool quick, unsigned n_cpus, unsigned *cores, unsigned max)
{
        unsigned n = 0;

        if (n_cpus == 0)
                return 0;
        if (!quick) {
                for (unsigned c = 1; c <= n_cpus && n < max; c++)
                        cores[n++] = c;
                return n;
        }
        n = add_unique(cores, n, max, 1);
        if (n_cpus >= 2)
                n = add_unique(cores, n, max, 2);
        n = add_unique(cores, n, max, (n_cpus + 1) / 2);
        n = add_unique(cores, n, max, n_cpus);
        qsort(cores, n, sizeof(*cores), cmp_uint);
        return n;
}

/* ΔI, eq. 14 as the estimator uses it (docs/calibration.md): total instructions =
 * I0_per_unit * units + α * wall seconds + β * busy core-seconds, least squares over every run
 * (pbench's I0 per unit is constant), at every core count the plan ran. At one frequency
 * pbench's busy time is proportional to its work, so β cannot be told from I0 per unit: it is
 * then fixed at 0 (its share counted in I0, where it cancels in eq. 9's ratio) and only α is
 * fitted. The fit error is the RMS of the residuals over the mean ΔI; the standard errors come
 * from the residual variance and the diagonal of (AᵀA)⁻¹. */
static int fit_delta_i(struct calibrate_result *res)
{
        double ata[9] = {0}, atb[3] = {0}, x[3] = {0}, col[3], ss = 0, di_sum = 0;
        unsigned used = 0, n = 3, f0 = 0;
        bool one_freq = true;

        for (unsigned i = 0; i < res->n_runs; i++) {
                if (!isfinite(res->runs[i].instr))
                        continue;
                if (used++ == 0)
                        f0 = res->runs[i].freq_khz;
                one_freq &= res->runs[i].freq_khz == f0;
        }
        if (one_freq)
                n = 2;
        used = 0;
        for (unsigned pass = 0; pass < 2; pass++) {
                for (unsigned i = 0; i < res->n_runs; i++) {
                        const struct calibrate_run *r = &res->runs[i];
                        double row[3] = {r->work_units, r->wall_s, r->cpu_busy_s};
                        double di;

                        if (!isfinite(r->instr) || !isfinite(r->cpu_busy_s) || !(r->wall_s > 0) ||
                            !(r->work_units > 0))
                                continue;
                        if (pass == 0) {
                                wls_add(ata, atb, n, row, r->instr);
                                used++;
                                continue;
                        }
                        di = x[1] * r->wall_s + x[2] * r->cpu_busy_s;
                        ss += pow(r->instr - x[0] * r->work_units - di, 2);
                        di_sum += di;
                }
                /* The unknowns and at least one degree of freedom for the error. */
                if (pass == 0 &&
                    (used < n + 1 || wls_solve(ata, atb, n, n, 0, CALIBRATE_MIN_PIVOT, x) < 0 ||
                     !isfinite(x[1]) || !isfinite(x[2])))
                        return -ENODATA;
        }
        res->delta_i_alpha_fit = x[1];
        res->delta_i_beta_fit = x[2];
        res->delta_i_rms = sqrt(ss / used);
        res->delta_i_alpha_se = res->delta_i_beta_se = NAN;
        for (unsigned k = 1; k < n; k++) {
                double e[3] = {0};

                e[k] = 1;
                if (wls_solve(ata, e, n, n, 0, CALIBRATE_MIN_PIVOT, col) == 0 && col[k] >= 0)
                        *(k == 1 ? &res->delta_i_alpha_se : &res->delta_i_beta_se) =
                            sqrt(ss / (used - n) * col[k]);
        }
        /* A negative coefficient is noise around zero: no system work of that kind. */
        res->profile.delta_i_alpha = fmax(x[1], 0);
        res->profile.delta_i_rate = fmax(x[2], 0);
        res->profile.delta_i_fit_error = di_sum > 0 ? res->delta_i_rms / (di_sum / used) : NAN;
        return 0;
}

static int freq_index(const struct calibrate_result *res, unsigned khz)
{
        for (unsigned i = 0; i < res->n_freqs; i++)
                if (res->freqs_khz[i] == khz)
                        return (int)i;
        return -1;
}

/* W = static + core_w(f) * busy cores + idle_w(f) * idle held cores, least squares over the
 * steady part of every run; unknowns: static, then (core_w, idle_w) per frequency. */
static int fit_power(struct calibrate_result *res)
{
        unsigned n = 1 + 2 * res->n_freqs, used = 0;
        _cleanup_free_ double *ata = calloc((size_t)n * n, sizeof(double));
        _cleanup_free_ double *atb = calloc(n, sizeof(double));
        _cleanup_free_ double *x = calloc(n, sizeof(double));
        _cleanup_free_ double *row = calloc(n, sizeof(double));
        struct model_power pm = {0};
        double sq = 0;
        int r;

        if (!ata || !atb || !x || !row)
                return -ENOMEM;
        for (int pass = 0; pass < 2; pass++) {
                for (unsigned i = 0; i < res->n_runs; i++) {
                        const struct calibrate_run *run = &res->runs[i];
                        int fi = freq_index(res, run->freq_khz);
                        double w, busy, idle;

                        if (fi < 0 || !isfinite(run->energy_j) || !(run->interval_s > 0) ||
                            !isfinite(run->power_busy_s))
                                continue;
                        w = run->energy_j / run->interval_s;
                        busy = run->power_busy_s / run->interval_s;
                        idle = fmax(run->cores - busy, 0);
                        if (pass == 0) {
                                memset(row, 0, n * sizeof(double));
                                row[0] = 1;
                                row[1 + 2 * fi] = busy;
                                row[2 + 2 * fi] = idle;
                                wls_add(ata, atb, n, row, w);
                                used++;
                        } else {
                                double pred;

                                if (model_power_at(&pm, run->freq_khz, busy, idle, &pred) == 0)
                                        sq += (pred - w) * (pred - w);
                        }
                }
                if (pass == 1)
                        break;
                if (used < n)
                        return -ENODATA;
                r = wls_solve(ata, atb, n, n, 0, CALIBRATE_MIN_PIVOT, x);
                if (r < 0)
                        return r;
                pm.static_w = x[0];
                for (unsigned f = 0; f < res->n_freqs; f++)
                        model_power_set_point(&pm, res->freqs_khz[f], x[1 + 2 * f], x[2 + 2 * f]);
        }
        res->profile.power = pm;
        res->profile.power_residual_w = sqrt(sq / used);
        return 0;
}

static double pct_error(double measured, double predicted)
{
        return 100.0 * (measured - predicted) / predicted;
}

/* I0/C_max of a run (eq. 7 with ΔI of eq. 14 taken out when it was fitted). */
static double run_ipc(const struct calibrate_run *r, const struct platform_profile *pf)
{
        double i0 = r->instr, ipc;

        if (isfinite(pf->delta_i_rate) && isfinite(r->cpu_busy_s) && isfinite(r->wall_s))
                i0 -= pf->delta_i_rate * r->cpu_busy_s +
                      (isfinite(pf->delta_i_alpha) ? pf->delta_i_alpha : 0) * r->wall_s;
        if (!isfinite(i0) || model_ipc(i0, r->cycles_max, &ipc) < 0)
                return NAN;
        return ipc;
}

struct group {
        unsigned n;
        double busy_max, sp_time, ipc;
        unsigned n_ipc;
};

static void group_runs(const struct calibrate_result *res, double p, unsigned cores,
                       unsigned freq_khz, const struct platform_profile *pf, struct group *g)
{
        *g = (struct group){0};
        for (unsigned i = 0; i < res->n_runs; i++) {
                const struct calibrate_run *r = &res->runs[i];
                double ipc;

                if (fabs(r->p - p) > 1e-9 || r->cores != cores || r->freq_khz != freq_khz ||
                    !(r->busy_max_s > 0) || !(r->work_units > 0))
                        continue;
                g->n++;
                /* Per unit of work: runs of one P may differ in size. */
                g->busy_max += r->busy_max_s / r->work_units;
                g->sp_time += r->busy_sum_s / r->busy_max_s;
                ipc = run_ipc(r, pf);
                if (isfinite(ipc)) {
                        g->ipc += ipc;
                        g->n_ipc++;
                }
        }
        if (g->n) {
                g->busy_max /= g->n;
                g->sp_time /= g->n;
        }
        g->ipc = g->n_ipc ? g->ipc / g->n_ipc : NAN;
}

static int fit_tables(struct calibrate_result *res)
{
        unsigned ref_khz = res->n_freqs ? res->freqs_khz[res->n_freqs - 1] : 0;
        double ps[CALIBRATE_MAX_P];
        unsigned n_p = 0, n_cores = 0;
        _cleanup_free_ unsigned *cores = calloc(CALIBRATE_MAX_CORES, sizeof(unsigned));
        double max_p_err = NAN, max_sp_err = NAN, ipc1_sum = 0;
        unsigned ipc1_n = 0;

        if (!cores)
                return -ENOMEM;
        for (unsigned i = 0; i < res->n_runs; i++) {
                bool seen = false;

                for (unsigned k = 0; k < n_p; k++)
                        seen |= fabs(ps[k] - res->runs[i].p) < 1e-9;
                if (!seen && n_p < CALIBRATE_MAX_P)
                        ps[n_p++] = res->runs[i].p;
                n_cores = add_unique(cores, n_cores, CALIBRATE_MAX_CORES, res->runs[i].cores);
        }
        qsort(cores, n_cores, sizeof(*cores), cmp_uint);
        free(res->rows);
        res->rows = calloc((size_t)n_p * n_cores, sizeof(*res->rows));
        if (!res->rows)
                return -ENOMEM;
        res->n_rows = 0;
        res->n_prows = 0;
        for (unsigned ip = 0; ip < n_p; ip++) {
                struct model_obs *obs_time = calloc(n_cores, sizeof(*obs_time));
                struct model_obs *obs_cnt = calloc(n_cores, sizeof(*obs_cnt));
                struct calibrate_prow *pr = &res->prows[res->n_prows++];
                unsigned n_ot = 0, n_oc = 0;
                struct group g1;
                struct model_fit fit;
                double p = ps[ip];

                if (!obs_time || !obs_cnt) {
                        free(obs_time);
                        free(obs_cnt);
                        return -ENOMEM;
                }
                *pr = (struct calibrate_prow){.p = p,
                                              .p_eq10_time = NAN,
                                              .p_ls_time = NAN,
                                              .p_eq10_counters = NAN,
                                              .p_ls_counters = NAN,
                                              .p_estimated = NAN,
                                              .error = NAN};
                group_runs(res, p, 1, ref_khz, &res->profile, &g1);
                if (g1.n && isfinite(g1.ipc)) {
                        ipc1_sum += g1.ipc;
                        ipc1_n++;
                }
                for (unsigned ic = 0; ic < n_cores; ic++) {
                        struct calibrate_row *row = &res->rows[res->n_rows];
                        unsigned n = cores[ic];
                        struct group g;
                        double t_pred = NAN, sp_pred = NAN, p10;

                        group_runs(res, p, n, ref_khz, &res->profile, &g);
                        if (!g.n)
                                continue;
                        res->n_rows++;
                        *row = (struct calibrate_row){.p = p,
                                                      .cores = n,
                                                      .time_measured_s = g.busy_max,
                                                      .speedup_measured = g.sp_time,
                                                      .speedup_counters = NAN,
                                                      .p_eq10_time = NAN,
                                                      .p_eq10_counters = NAN};
                        if (g1.n)
                                model_time_n(p, n, g1.busy_max, &t_pred);
                        model_speedup(p, n, &sp_pred);
                        row->time_predicted_s = t_pred;
                        row->time_error_pct = pct_error(g.busy_max, t_pred);
                        row->speedup_predicted = sp_pred;
                        row->speedup_error_pct = pct_error(g.sp_time, sp_pred);
                        if (isfinite(row->speedup_error_pct))
                                max_sp_err = isnan(max_sp_err)
                                                 ? fabs(row->speedup_error_pct)
                                                 : fmax(max_sp_err, fabs(row->speedup_error_pct));
                        if (isfinite(g.ipc) && isfinite(g1.ipc))
                                model_speedup_from_ipc(g.ipc, g1.ipc, &row->speedup_counters);
                        if (n < 2)
                                continue;
                        if (model_p_from_speedup(n, g.sp_time, &p10) >= 0)
                                row->p_eq10_time = p10;
                        obs_time[n_ot++] = (struct model_obs){n, g.sp_time, 1};
                        if (isfinite(row->speedup_counters)) {
                                if (model_p_from_speedup(n, row->speedup_counters, &p10) >= 0)
                                        row->p_eq10_counters = p10;
                                obs_cnt[n_oc++] = (struct model_obs){n, row->speedup_counters, 1};
                        }
                        pr->p_eq10_time = row->p_eq10_time;
                        pr->p_eq10_counters = row->p_eq10_counters;
                }
                if (model_p_least_squares(obs_time, n_ot, &fit) == 0)
                        pr->p_ls_time = fit.p;
                if (model_p_least_squares(obs_cnt, n_oc, &fit) == 0)
                        pr->p_ls_counters = fit.p;
                free(obs_time);
                free(obs_cnt);
                pr->p_estimated = isfinite(pr->p_ls_counters) ? pr->p_ls_counters : pr->p_ls_time;
                pr->error = fabs(pr->p_estimated - p);
                if (isfinite(pr->error))
                        max_p_err = isnan(max_p_err) ? pr->error : fmax(max_p_err, pr->error);
        }
        res->profile.max_p_error = max_p_err;
        res->profile.max_speedup_error_pct = max_sp_err;
        /* The single-core IPC of pbench's kernel does not depend on P: the mean of the
         * 1-core runs. */
        res->profile.ipc1 = ipc1_n ? ipc1_sum / ipc1_n : 0;
        return 0;
}

int calibrate_fit(struct calibrate_result *res)
{
        int r;

        if (res->n_runs == 0)
                return -ENODATA;
        res->instr_measured = true;
        res->energy_measured = true;
        for (unsigned i = 0; i < res->n_runs; i++) {
                res->instr_measured &=
                    isfinite(res->runs[i].instr) && isfinite(res->runs[i].cycles_max);
                res->energy_measured &= isfinite(res->runs[i].energy_j);
        }
        res->profile.delta_i_rate = res->profile.delta_i_alpha = NAN;
        res->profile.delta_i_fit_error = NAN;
        res->delta_i_alpha_fit = res->delta_i_beta_fit = res->delta_i_rms = NAN;
        res->delta_i_alpha_se = res->delta_i_beta_se = NAN;
        if (res->instr_measured)
                fit_delta_i(res); /* -ENODATA: too few runs to tell α from β; unknown */
        res->profile.power = (struct model_power){0};
        res->profile.power_residual_w = NAN;
        if (res->energy_measured) {
                r = fit_power(res);
                if (r < 0 && r != -ENODATA && r != -EDOM)
                        return r;
        }
        return fit_tables(res);
}

void calibrate_result_free(struct calibrate_result *res)
{
        if (!res)
                return;
        free(res->runs);
        free(res->rows);
        res->runs = NULL;
        res->rows = NULL;
        res->n_runs = res->n_rows = 0;
}
