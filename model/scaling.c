/* An app's scaling learned online (include/pctl/scaling.h). */
#include "pctl/scaling.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void scaling_reset(struct scaling *s)
{
        s->n = 0;
        s->version++;
}

void scaling_complete(struct scaling *s, unsigned cores, unsigned freq_khz, unsigned samples)
{
        for (unsigned i = 0; i < s->n; i++)
                if (s->pt[i].cores == cores && s->pt[i].freq_khz == freq_khz &&
                    s->pt[i].samples < samples) {
                        s->pt[i].samples = samples;
                        s->version++;
                }
}

void scaling_add(struct scaling *s, unsigned cores, unsigned freq_khz, double ips, double power_w,
                 unsigned mean_samples)
{
        scaling_add_stalls(s, cores, freq_khz, ips, power_w, NAN, mean_samples);
}

const char *scaling_basis_name(const struct scaling_model *m)
{
        return m->time.basis == EXTRAP_BASIS_STALLS ? "stalls" : "time";
}

void scaling_add_stalls(struct scaling *s, unsigned cores, unsigned freq_khz, double ips,
                        double power_w, double stalls_per_instr, unsigned mean_samples)
{
        struct scaling_point *p = NULL;
        double spc;

        if (!(ips > 0) || !isfinite(ips) || cores == 0)
                return;
        spc = stalls_per_instr / cores;
        for (unsigned i = 0; i < s->n; i++)
                if (s->pt[i].cores == cores && s->pt[i].freq_khz == freq_khz)
                        p = &s->pt[i];
        if (!p) {
                if (s->n == SCALING_MAX_POINTS) {
                        /* The oldest configuration goes: the array is in order of arrival. */
                        memmove(&s->pt[0], &s->pt[1], (s->n - 1) * sizeof(s->pt[0]));
                        s->n--;
                }
                p = &s->pt[s->n++];
                *p = (struct scaling_point){
                    .cores = cores, .freq_khz = freq_khz, .stalls_per_core = NAN};
        }
        s->version++;
        if (p->samples < (mean_samples ? mean_samples : 1))
                p->samples++;
        p->ips += (ips - p->ips) / p->samples;
        if (isfinite(power_w) && (p->samples == 1 || isfinite(p->power_w)))
                p->power_w =
                    p->samples == 1 ? power_w : p->power_w + (power_w - p->power_w) / p->samples;
        else
                p->power_w = NAN;
        /* As power: unknown for good once one interval of the point did not count them. */
        if (isfinite(spc) && spc >= 0 && (p->samples == 1 || isfinite(p->stalls_per_core)))
                p->stalls_per_core =
                    p->samples == 1 ? spc
                                    : p->stalls_per_core + (spc - p->stalls_per_core) / p->samples;
        else
                p->stalls_per_core = NAN;
}

/* The largest relative error of the model's time at its points. */
static double time_fit_error(const struct extrap_model *mod, const struct extrap_point *pts,
                             unsigned m)
{
        double worst = 0;

        for (unsigned i = 0; i < m; i++) {
                struct extrap_prediction pr;

                extrap_predict(mod, pts[i].cores, &pr);
                if (!pr.known)
                        return NAN;
                worst = fmax(worst, fabs(pr.time_s - pts[i].time_s) / pts[i].time_s);
        }
        return worst;
}

/* The stalls' pipeline predicted the held-out counts clearly worse than time alone: by more
 * than half as much again and 0.5 % (as extrapolate's factor guard), or not at all. */
static bool stalls_worse(double ck_stalls, double ck_time)
{
        if (isnan(ck_time))
                return false;
        return !(ck_stalls <= fmax(1.5 * ck_time, ck_time + 0.005));
}

int scaling_model_build(const struct scaling *s, unsigned freq_khz, unsigned min_samples,
                        unsigned max_cores, struct scaling_model *out)
{
        struct extrap_point pts[SCALING_MAX_POINTS];
        double sn = 0, sw = 0, snn = 0, snw = 0;
        unsigned m = 0, np = 0, n_max;
        bool stalls = true;
        int r;

        *out = (struct scaling_model){.freq_khz = freq_khz, .version = s->version};
        /* In order of core count, as extrapolate wants them. */
        for (unsigned i = 0; i < s->n; i++) {
                const struct scaling_point *p = &s->pt[i];
                unsigned j;

                if (p->freq_khz != freq_khz || p->samples < min_samples)
                        continue;
                for (j = m; j > 0 && pts[j - 1].cores > p->cores; j--)
                        pts[j] = pts[j - 1];
                pts[j] = (struct extrap_point){p->cores, 1 / p->ips, p->stalls_per_core};
                m++;
                /* extrap_build fits stalls when every point has some (> 0); fewer than
                 * SCALING_STALLS_MIN per instruction are the count's rounding and noise. */
                if (!(p->stalls_per_core * p->cores >= SCALING_STALLS_MIN) ||
                    !isfinite(p->stalls_per_core)) {
                        stalls = false;
                        pts[j].stalls_per_core = NAN;
                }
                if (isfinite(p->power_w)) {
                        sn += p->cores;
                        sw += p->power_w;
                        snn += (double)p->cores * p->cores;
                        snw += p->cores * p->power_w;
                        np++;
                }
        }
        out->n_points = m;
        if (m == 0)
                return 0;
        out->max_measured = (unsigned)pts[m - 1].cores;
        out->min_measured = (unsigned)pts[0].cores;
        n_max = max_cores > out->max_measured ? max_cores : out->max_measured;
        /* The ESTIMA way where every point has stalled cycles (extrap_build fits them then).
         * Time per unit of work alone takes over when the stalls' model does not reproduce
         * the measured times within SCALING_STALLS_FIT, or predicts the held-out counts
         * clearly worse than time does: an aggregate count that does not follow time
         * (spinning, a bandwidth limit on the model machine) must not cost the prediction
         * that time alone gives. */
        r = extrap_build(pts, m, n_max, &out->time);
        if (m >= 3 && stalls) {
                struct extrap_point tp[SCALING_MAX_POINTS];
                struct extrap_model tm;
                int rt;

                for (unsigned i = 0; i < m; i++)
                        tp[i] = (struct extrap_point){pts[i].cores, pts[i].time_s, NAN};
                rt = extrap_build(tp, m, n_max, &tm);
                if (r < 0 || !(time_fit_error(&out->time, pts, m) <= SCALING_STALLS_FIT) ||
                    (rt == 0 && stalls_worse(out->time.checkpoint_error, tm.checkpoint_error))) {
                        out->stalls_rejected = true;
                        out->time = tm;
                        r = rt;
                        memcpy(pts, tp, m * sizeof(pts[0]));
                }
        }
        if (r < 0)
                return r;
        out->known = out->time.known;
        /* ESTIMA chooses the kernel that best predicts the largest counts, for predicting
         * beyond them. The allocator also asks between measured counts; where the choice
         * does not follow them (a speedup falling inside the range), the kernel with the
         * smallest residual over every point, with fewer parameters than points, serves. */
        if (out->known && out->time.band_rel > 0.05 && out->time.basis == EXTRAP_BASIS_TIME) {
                double n[SCALING_MAX_POINTS], y[SCALING_MAX_POINTS];
                struct extrap_fit best = {0};

                for (unsigned i = 0; i < m; i++) {
                        n[i] = pts[i].cores;
                        y[i] = pts[i].cores * pts[i].time_s;
                }
                for (unsigned k = 0; k < EXTRAP_N_KERNELS; k++) {
                        struct extrap_fit f;

                        if (extrap_kernel_params((enum extrap_kernel)k) >= m ||
                            extrap_fit_kernel((enum extrap_kernel)k, n, y, m, &f) < 0 ||
                            !extrap_fit_usable(&f, n_max))
                                continue;
                        if (!best.known || f.rmse < best.rmse)
                                best = f;
                }
                if (best.known && best.rmse < out->time.main.rmse) {
                        out->time.main = best;
                        out->refitted = true;
                }
        }
        if (np >= 2 && np * snn - sn * sn > 0) {
                out->power_w1 = (np * snw - sn * sw) / (np * snn - sn * sn);
                out->power_w0 = (sw - out->power_w1 * sn) / np;
                out->power_known = true;
        }
        return 0;
}

double scaling_predict_score(const struct scaling_model *m, enum objective_kind o, unsigned n)
{
        struct extrap_prediction pr;
        double power_w = NAN, score;

        if (!m->known)
                return NAN;
        extrap_predict(&m->time, n, &pr);
        if (!pr.known)
                return NAN;
        if (m->power_known)
                power_w = m->power_w0 + m->power_w1 * n;
        if (objective_score_rate(o, power_w, 1 / pr.time_s, &score) < 0)
                return NAN;
        return score;
}

unsigned scaling_best_cores(const struct scaling_model *m, enum objective_kind o,
                            unsigned min_cores, unsigned max_cores)
{
        unsigned best = 0;
        double best_s = NAN;

        for (unsigned n = min_cores ? min_cores : 1; n <= max_cores; n++) {
                double s = scaling_predict_score(m, o, n);

                if (isfinite(s) && (isnan(best_s) || s < best_s)) {
                        best_s = s;
                        best = n;
                }
        }
        return best;
}

int scaling_model_refresh(const struct scaling *s, unsigned freq_khz, unsigned min_samples,
                          unsigned max_cores, struct scaling_model *m)
{
        /* version 0 is a zeroed model: never built. */
        if (m->version && m->version == s->version && m->freq_khz == freq_khz)
                return 0;
        return scaling_model_build(s, freq_khz, min_samples, max_cores, m);
}

double scaling_fit_error(const struct scaling *s, const struct scaling_model *m,
                         enum objective_kind o, unsigned min_samples)
{
        double worst = NAN;

        if (!m->known)
                return NAN;
        for (unsigned i = 0; i < s->n; i++) {
                const struct scaling_point *p = &s->pt[i];
                double meas, pred;

                if (p->freq_khz != m->freq_khz || p->samples < min_samples)
                        continue;
                pred = scaling_predict_score(m, o, p->cores);
                if (objective_score_rate(o, p->power_w, p->ips, &meas) < 0 || !isfinite(pred) ||
                    meas == 0)
                        return NAN;
                worst = fmax(isnan(worst) ? 0 : worst, fabs(pred - meas) / fabs(meas));
        }
        return worst;
}
