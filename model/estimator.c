#include "pctl/estimator.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Distinct core counts and frequencies remembered per app; the least useful (lightest) is
 * replaced when full. */
#define EST_MAX_BINS 32
#define EST_MAX_FREQS 16
#define EST_MAX_PENDING 16

#define EST_DEFAULT_HALF_LIFE_S 30.0
#define EST_DEFAULT_PHASE_SIGMAS 4.0
#define EST_DEFAULT_PHASE_REL_FLOOR 0.05
#define EST_DEFAULT_PHASE_INTERVALS 3

/* Decayed sums of the points at one core count; y = 1 - 1/SP, in which Amdahl is linear:
 * y = P * (1 - 1/N). */
struct est_bin {
        unsigned cores;
        double w, w2, wy, wyy;
};

/* Decayed mean of the app's per-core 1/IPC (cycles per I0 instruction) at one frequency. */
struct est_fbin {
        unsigned freq_khz;
        double w, winv;
};

/* Decayed mean of the busiest core's 1/IPC at one (core count, frequency): contention shows
 * as this rising with the core count. */
struct est_cbin {
        unsigned cores, freq_khz;
        double w, winv;
};

/* A point that did not fit, held until the misfits either stop or make a phase change. */
struct est_point {
        unsigned cores;
        double y;
        uint64_t timestamp_ns;
};

/* The views holding one CPU this interval and their targets' counts on it. A *_ok flag is
 * false as soon as one holder's target lacks the metric there. */
struct est_cpu_share {
        unsigned holders;
        bool busy_ok, cycles_ok, instr_ok;
        double busy_ns, cycles, instr;
};

struct est_app {
        struct estimate e;
        bool have_ts;
        uint64_t last_ts_ns;
        unsigned n_bins;
        struct est_bin bins[EST_MAX_BINS];
        unsigned n_fbins;
        struct est_fbin fbins[EST_MAX_FREQS];
        unsigned n_pending;
        struct est_point pending[EST_MAX_PENDING];
        double var_y;      /* per-point variance of y around the fit; NaN without a fit */
        unsigned fit_rank; /* est_point_rank of the fit's points; 0 while it has none */
        unsigned n_cbins;
        struct est_cbin cbins[EST_MAX_BINS];
        /* IPC_I0(1) observed with the app on one core, per frequency (IPC depends on it). */
        unsigned n_ipc1;
        struct est_fbin ipc1[EST_MAX_FREQS];
        /* Scratch of the current update. */
        /* Unhalted cycles and busy seconds on its CPUs, all tasks: the system work on them
         * runs because the app is there (eq. 7 counts it in C_max too). NaN if unknown. */
        double cycles;
        double busy_s;
        unsigned stamp; /* last update that named it, to catch duplicate views */
};

struct estimator {
        struct estimator_config cfg;
        bool have_power;
        struct model_power power;
        struct est_app *apps;
        unsigned n_apps, cap_apps;
        struct estimator_platform platform;
        /* With RAPL but no configured model: the model fitted from the sensor. */
        struct powerfit *fit;
        bool have_fitted;
        struct model_power fitted;
        unsigned stamp;
        /* Per CPU of the sample: index of the view that holds it, or -1. */
        int *owner;
        /* Per CPU: the views that hold it and the sums of their targets' counts there, to
         * split a CPU that apps share (time-sharing, each with its own target). */
        struct est_cpu_share *share;
        double *cpu_idle_j; /* per CPU, the idle energy the power model gives it */
        unsigned n_owner;
};

const char *estimate_ipc1_source_name(enum estimate_ipc1_source s)
{
        static const char *const names[] = {
            [ESTIMATE_IPC1_NONE] = "none",
            [ESTIMATE_IPC1_ONE_CORE] = "one-core",
            [ESTIMATE_IPC1_BUSIEST_CORE] = "busiest-core",
            [ESTIMATE_IPC1_CALIBRATION] = "calibration",
            [ESTIMATE_IPC1_ONE_CORE_SCALED] = "one-core-scaled",
        };
        return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "none";
}

const char *estimate_speedup_source_name(enum estimate_speedup_source s)
{
        static const char *const names[] = {
            [ESTIMATE_SPEEDUP_NONE] = "none",
            [ESTIMATE_SPEEDUP_COUNTERS] = "counters",
            [ESTIMATE_SPEEDUP_BUSY] = "busy-time",
        };
        return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "none";
}

const char *estimate_delta_i_source_name(enum estimate_delta_i_source s)
{
        static const char *const names[] = {
            [ESTIMATE_DELTA_I_NONE] = "none",
            [ESTIMATE_DELTA_I_TARGET] = "target-counters",
            [ESTIMATE_DELTA_I_RATE] = "rate",
        };
        return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "none";
}

const char *estimate_power_source_name(enum estimate_power_source s)
{
        static const char *const names[] = {
            [ESTIMATE_POWER_NONE] = "none",
            [ESTIMATE_POWER_MEASURED] = "measured",
            [ESTIMATE_POWER_MODEL] = "model",
        };
        return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "none";
}

struct estimator *estimator_new(const struct estimator_config *cfg)
{
        struct estimator *est;
        struct estimator_config c = cfg ? *cfg : (struct estimator_config){.delta_i_rate = NAN};

        /* Uncalibrated: the reference paper's ΔI/T, system-wide. Calibrated: α (0 when only
         * the per-core rate was measured, as older platform files have it). */
        if (!(c.delta_i_rate >= 0)) {
                c.delta_i_rate = 0;
                c.delta_i_alpha = ESTIMATOR_DEFAULT_DELTA_I_ALPHA;
        } else if (!(c.delta_i_alpha >= 0)) {
                c.delta_i_alpha = 0;
        }
        if (!(c.delta_i_cpu_rate >= 0))
                c.delta_i_cpu_rate = 0;
        if (c.half_life_s == 0)
                c.half_life_s = EST_DEFAULT_HALF_LIFE_S;
        if (c.phase_sigmas == 0)
                c.phase_sigmas = EST_DEFAULT_PHASE_SIGMAS;
        if (c.phase_rel_floor == 0)
                c.phase_rel_floor = EST_DEFAULT_PHASE_REL_FLOOR;
        if (c.phase_intervals == 0)
                c.phase_intervals = EST_DEFAULT_PHASE_INTERVALS;
        if (!isfinite(c.delta_i_rate) || !isfinite(c.delta_i_alpha) ||
            !isfinite(c.delta_i_cpu_rate) || !(c.ipc1_calibrated >= 0) ||
            !isfinite(c.ipc1_calibrated) || !(c.half_life_s > 0) || !isfinite(c.half_life_s) ||
            !(c.phase_sigmas > 0) || !(c.phase_rel_floor > 0) ||
            c.phase_intervals > EST_MAX_PENDING) {
                errno = EINVAL;
                return NULL;
        }
        est = calloc(1, sizeof(*est));
        if (!est) {
                errno = ENOMEM;
                return NULL;
        }
        if (c.power) {
                est->power = *c.power;
                est->have_power = true;
        } else if (c.fit_power) {
                est->fit = powerfit_new(0);
                if (!est->fit) {
                        free(est);
                        errno = ENOMEM;
                        return NULL;
                }
        }
        c.power = NULL; /* the copy above is what is used */
        est->cfg = c;
        est->platform = (struct estimator_platform){
            .power_w = NAN, .static_w = NAN, .idle_w = NAN, .unattributed_w = NAN};
        /* pctld has always shown 0 W here before the first interval. */
        est->platform.model_w = 0;
        return est;
}

void estimator_free(struct estimator *est)
{
        if (!est)
                return;
        powerfit_free(est->fit);
        free(est->apps);
        free(est->owner);
        free(est->share);
        free(est->cpu_idle_j);
        free(est);
}

static struct est_app *est_find(const struct estimator *est, uint64_t id, unsigned hint)
{
        if (hint < est->n_apps && est->apps[hint].e.id == id)
                return &est->apps[hint];
        for (unsigned i = 0; i < est->n_apps; i++)
                if (est->apps[i].e.id == id)
                        return &est->apps[i];
        return NULL;
}

static void est_estimate_reset(struct estimate *e, uint64_t id)
{
        *e = (struct estimate){
            .id = id,
            .i0 = NAN,
            .delta_i = NAN,
            .ipc = NAN,
            .ips = NAN,
            .stalls = NAN,
            .ipc1 = NAN,
            .speedup = NAN,
            .p_eq10 = NAN,
            .p_ls = NAN,
            .p_stderr = NAN,
            .p_rms_residual = NAN,
            .power_w = NAN,
            .energy_j = 0,
            .perf_per_w = NAN,
            .epi = NAN,
            .edp_rate = NAN,
            .mem_fraction = NAN,
            .speedup_run = NAN,
            .p_run = NAN,
            .work_inflation = NAN,
            .p_run_uncorrected = NAN,
            .ipc_core_drop = NAN,
            .busy_cores = NAN,
        };
}

int estimator_app_add(struct estimator *est, uint64_t id)
{
        struct est_app *a;

        if (est_find(est, id, 0))
                return -EEXIST;
        if (est->n_apps == est->cap_apps) {
                unsigned cap = est->cap_apps ? est->cap_apps * 2 : 16;
                struct est_app *n = realloc(est->apps, cap * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                est->apps = n;
                est->cap_apps = cap;
        }
        a = &est->apps[est->n_apps++];
        memset(a, 0, sizeof(*a));
        est_estimate_reset(&a->e, id);
        a->var_y = NAN;
        return 0;
}

int estimator_app_remove(struct estimator *est, uint64_t id)
{
        struct est_app *a = est_find(est, id, 0);

        if (!a)
                return -ENOENT;
        *a = est->apps[--est->n_apps];
        return 0;
}

const struct estimate *estimator_get(const struct estimator *est, uint64_t id)
{
        const struct est_app *a = est_find(est, id, 0);

        return a ? &a->e : NULL;
}

const struct estimator_platform *estimator_platform(const struct estimator *est)
{
        return &est->platform;
}

/* Weight of a point taken `age_ns` before now. */
static double est_decay(const struct estimator *est, uint64_t age_ns)
{
        return exp2(-(double)age_ns * 1e-9 / est->cfg.half_life_s);
}

static void est_app_decay(struct est_app *a, double f)
{
        double top = 0;

        for (unsigned i = 0; i < a->n_bins; i++) {
                a->bins[i].w *= f;
                a->bins[i].w2 *= f * f;
                a->bins[i].wy *= f;
                a->bins[i].wyy *= f;
                top = fmax(top, a->bins[i].w);
        }
        for (unsigned i = 0; i < a->n_fbins; i++) {
                a->fbins[i].w *= f;
                a->fbins[i].winv *= f;
                top = fmax(top, a->fbins[i].w);
        }
        for (unsigned i = 0; i < a->n_ipc1; i++) {
                a->ipc1[i].w *= f;
                a->ipc1[i].winv *= f;
                top = fmax(top, a->ipc1[i].w);
        }
        for (unsigned i = 0; i < a->n_cbins; i++) {
                a->cbins[i].w *= f;
                a->cbins[i].winv *= f;
                top = fmax(top, a->cbins[i].w);
        }
        /* Only ratios of weights matter: rescale before the recent ones underflow too. */
        if (top > 0 && top < 1e-100) {
                double k = 1.0 / top;

                for (unsigned i = 0; i < a->n_bins; i++) {
                        a->bins[i].w *= k;
                        a->bins[i].w2 *= k * k;
                        a->bins[i].wy *= k;
                        a->bins[i].wyy *= k;
                }
                for (unsigned i = 0; i < a->n_fbins; i++) {
                        a->fbins[i].w *= k;
                        a->fbins[i].winv *= k;
                }
                for (unsigned i = 0; i < a->n_ipc1; i++) {
                        a->ipc1[i].w *= k;
                        a->ipc1[i].winv *= k;
                }
                for (unsigned i = 0; i < a->n_cbins; i++) {
                        a->cbins[i].w *= k;
                        a->cbins[i].winv *= k;
                }
        }
}

static void est_bin_add(struct est_app *a, unsigned cores, double y, double w)
{
        struct est_bin *b = NULL;

        for (unsigned i = 0; i < a->n_bins && !b; i++)
                if (a->bins[i].cores == cores)
                        b = &a->bins[i];
        if (!b) {
                if (a->n_bins < EST_MAX_BINS) {
                        b = &a->bins[a->n_bins++];
                } else {
                        b = &a->bins[0];
                        for (unsigned i = 1; i < a->n_bins; i++)
                                if (a->bins[i].w < b->w)
                                        b = &a->bins[i];
                }
                *b = (struct est_bin){.cores = cores};
        }
        b->w += w;
        b->w2 += w * w;
        b->wy += w * y;
        b->wyy += w * y * y;
}

/* Adds a 1/IPC observation at freq_khz to one of the app's per-frequency tables. */
static void est_fbin_add(struct est_fbin *bins, unsigned *n_bins, unsigned freq_khz, double inv_ipc)
{
        struct est_fbin *b = NULL;

        for (unsigned i = 0; i < *n_bins && !b; i++)
                if (bins[i].freq_khz == freq_khz)
                        b = &bins[i];
        if (!b) {
                if (*n_bins < EST_MAX_FREQS) {
                        b = &bins[(*n_bins)++];
                } else {
                        b = &bins[0];
                        for (unsigned i = 1; i < *n_bins; i++)
                                if (bins[i].w < b->w)
                                        b = &bins[i];
                }
                *b = (struct est_fbin){.freq_khz = freq_khz};
        }
        b->w += 1;
        b->winv += inv_ipc;
}

/* The busiest core's IPC at (cores, freq_khz) into its decayed mean, and the drop from the
 * fewest cores seen at that frequency to the most (NaN until two core counts). */
static double est_cbin_add(struct est_app *a, unsigned cores, unsigned freq_khz, double ipc)
{
        const struct est_cbin *lo = NULL, *hi = NULL;
        struct est_cbin *b = NULL;

        for (unsigned i = 0; i < a->n_cbins && !b; i++)
                if (a->cbins[i].cores == cores && a->cbins[i].freq_khz == freq_khz)
                        b = &a->cbins[i];
        if (!b) {
                if (a->n_cbins < EST_MAX_BINS) {
                        b = &a->cbins[a->n_cbins++];
                } else {
                        b = &a->cbins[0];
                        for (unsigned i = 1; i < a->n_cbins; i++)
                                if (a->cbins[i].w < b->w)
                                        b = &a->cbins[i];
                }
                *b = (struct est_cbin){.cores = cores, .freq_khz = freq_khz};
        }
        b->w += 1;
        b->winv += 1.0 / ipc;
        for (unsigned i = 0; i < a->n_cbins; i++) {
                const struct est_cbin *c = &a->cbins[i];

                if (c->freq_khz != freq_khz || !(c->w > 0 && c->winv > 0))
                        continue;
                if (!lo || c->cores < lo->cores)
                        lo = c;
                if (!hi || c->cores > hi->cores)
                        hi = c;
        }
        if (!lo || lo == hi)
                return NAN;
        return 1.0 - (hi->w / hi->winv) / (lo->w / lo->winv);
}

/* The app's IPC_I0(1) at freq_khz: observed there on one core (*scaled false), else observed
 * on one core at the nearest other frequency and carried to freq_khz by its frequency
 * sensitivity (1/IPC = compute + memory share x f, docs/estimator.md). NaN when neither. */
static double est_ipc1_at(const struct est_app *a, unsigned freq_khz, bool *scaled)
{
        const struct est_fbin *near = NULL;
        const struct estimate *e = &a->e;
        double m, f_ref, k0, k1;

        *scaled = false;
        for (unsigned i = 0; i < a->n_ipc1; i++) {
                const struct est_fbin *b = &a->ipc1[i];

                if (!(b->w > 0 && b->winv > 0))
                        continue;
                if (b->freq_khz == freq_khz)
                        return b->w / b->winv;
                if (!near || labs((long)b->freq_khz - (long)freq_khz) <
                                 labs((long)near->freq_khz - (long)freq_khz))
                        near = b;
        }
        if (!near || !freq_khz || !near->freq_khz || !(e->known & ESTIMATE_MEM_FRACTION) ||
            !e->mem_freq_ref_khz)
                return NAN;
        m = e->mem_fraction;
        f_ref = e->mem_freq_ref_khz;
        k0 = (1 - m) + m * near->freq_khz / f_ref;
        k1 = (1 - m) + m * freq_khz / f_ref;
        *scaled = true;
        return near->w / near->winv * k0 / k1;
}

/* Refits P over the bins: model_p_least_squares on the per-N means, then the spread of the
 * individual points around the fit for the standard error. */
static void est_app_fit(struct est_app *a)
{
        struct model_obs obs[EST_MAX_BINS];
        struct model_fit fit;
        double wsum = 0, w2sum = 0, wxx = 0, ss = 0;
        size_t n = 0;
        struct estimate *e = &a->e;

        for (unsigned i = 0; i < a->n_bins; i++) {
                const struct est_bin *b = &a->bins[i];
                double y;

                if (!(b->w > 0))
                        continue;
                y = b->wy / b->w;
                if (!(y < 1))
                        continue; /* an infinite mean speedup: not a usable point */
                obs[n++] = (struct model_obs){
                    .cores = b->cores, .speedup = 1.0 / (1.0 - y), .weight = b->w};
        }
        e->known &= ~(unsigned)ESTIMATE_P_LS;
        e->p_ls = e->p_stderr = e->p_rms_residual = NAN;
        e->p_points = 0;
        e->p_n_cores = 0;
        a->var_y = NAN;
        if (n == 0 || model_p_least_squares(obs, n, &fit) < 0)
                return;
        for (unsigned i = 0; i < a->n_bins; i++) {
                const struct est_bin *b = &a->bins[i];
                double x = 1.0 - 1.0 / b->cores;

                if (!(b->w > 0) || !(b->wy / b->w < 1))
                        continue;
                /* Σ w (y - P x)^2 from the bin's sums. */
                ss += b->wyy - 2 * fit.p * x * b->wy + fit.p * fit.p * x * x * b->w;
                wsum += b->w;
                w2sum += b->w2;
                wxx += b->w * x * x;
        }
        e->p_ls = fit.p;
        e->p_rms_residual = fit.rms_residual;
        e->p_n_cores = fit.n_cores;
        e->p_points = w2sum > 0 ? wsum * wsum / w2sum : 0;
        e->known |= ESTIMATE_P_LS;
        if (e->p_points > 1.5) {
                /* One degree of freedom went into P. */
                a->var_y = fmax(ss, 0) / wsum * e->p_points / (e->p_points - 1);
                e->p_stderr = sqrt(a->var_y / (e->p_points * wxx / wsum));
        }
}

/* Whether the fit holds a point at this core count. */
static bool est_fit_has_cores(const struct est_app *a, unsigned cores)
{
        for (unsigned i = 0; i < a->n_bins; i++)
                if (a->bins[i].cores == cores && a->bins[i].w > 0)
                        return true;
        return false;
}

/* Restarts the fit of P. The per-clock IPC goes with it only when a held misfit is at a core
 * count the old fit had measured: misfits only at counts it never saw are as much the Amdahl
 * curve's error there (a bandwidth-bound app's speedup does not follow it) as a new phase, and
 * a move to a new count is the allocator's doing, not the app's. */
static void est_app_restart(struct est_app *a)
{
        bool seen = false;

        for (unsigned i = 0; i < a->n_pending && !seen; i++)
                seen = est_fit_has_cores(a, a->pending[i].cores);
        a->fit_rank = 0;
        a->n_bins = 0;
        if (seen)
                a->n_fbins = 0;
        /* IPC_I0(1) stays: only a one-core interval renews it, and a misfit that is the
         * model's (contention the Amdahl curve cannot follow) looks like a phase change. */
        a->var_y = NAN;
}

/* How much a speedup point is worth: eq. 9 on the app's own one-core IPC (2) over anything
 * that stands in for it, or busy time (1). */
static unsigned est_point_rank(const struct estimate *e)
{
        if (e->speedup_source == ESTIMATE_SPEEDUP_COUNTERS && e->n_cores >= 2 &&
            (e->ipc1_source == ESTIMATE_IPC1_ONE_CORE ||
             e->ipc1_source == ESTIMATE_IPC1_ONE_CORE_SCALED))
                return 2;
        return 1;
}

/* Whether the fit takes a point of this rank. The fit's points rest on one kind of IPC_I0(1):
 * the first point on the app's own one-core IPC drops the points that stood in for it (they
 * hid contention), and later stand-ins do not dilute it. */
static bool est_fit_takes(struct est_app *a, unsigned rank)
{
        if (rank < a->fit_rank)
                return false;
        if (rank > a->fit_rank && a->fit_rank) {
                a->n_bins = 0;
                a->n_pending = 0;
                est_app_fit(a);
        }
        a->fit_rank = rank;
        return true;
}

/* A new point at `cores` >= 2: into the fit, or held as a misfit; enough consecutive misfits
 * are a phase change and restart the fit from them. */
static void est_app_point(const struct estimator *est, struct est_app *a, unsigned cores, double y,
                          uint64_t now_ns)
{
        struct estimate *e = &a->e;
        double sp = 1.0 / (1.0 - y), sp_fit, spread, limit;
        bool can_judge = (e->known & ESTIMATE_P_LS) && e->p_points >= est->cfg.phase_intervals &&
                         model_speedup(e->p_ls, cores, &sp_fit) == 0 && sp_fit > 0;

        if (can_judge) {
                /* The spread of y, in speedup units: dSP = SP^2 dy. */
                spread = isfinite(a->var_y) ? sp_fit * sp_fit * sqrt(a->var_y) : 0;
                limit = fmax(est->cfg.phase_sigmas * spread, est->cfg.phase_rel_floor * sp_fit);
                if (fabs(sp - sp_fit) > limit) {
                        a->pending[a->n_pending++] =
                            (struct est_point){.cores = cores, .y = y, .timestamp_ns = now_ns};
                        if (a->n_pending < est->cfg.phase_intervals)
                                return;
                        est_app_restart(a);
                        e->phase_changes++;
                        for (unsigned i = 0; i < a->n_pending; i++)
                                est_bin_add(a, a->pending[i].cores, a->pending[i].y,
                                            est_decay(est, now_ns - a->pending[i].timestamp_ns));
                        a->n_pending = 0;
                        est_app_fit(a);
                        return;
                }
        }
        /* It fits: earlier misfits were noise, not a new phase, and are data like any other. */
        for (unsigned i = 0; i < a->n_pending; i++)
                est_bin_add(a, a->pending[i].cores, a->pending[i].y,
                            est_decay(est, now_ns - a->pending[i].timestamp_ns));
        a->n_pending = 0;
        est_bin_add(a, cores, y, 1.0);
        est_app_fit(a);
}

/* Weighted least squares of 1/IPC = alpha + beta * f over the frequencies seen: the cycles of
 * compute grow with nothing, the cycles spent waiting on memory grow with f. */
static void est_app_freqsens(struct est_app *a, unsigned freq_ref_khz)
{
        double sw = 0, sf = 0, sv = 0, sff = 0, sfv = 0, alpha, beta, den, m;
        unsigned n = 0;
        struct estimate *e = &a->e;

        e->known &= ~(unsigned)ESTIMATE_MEM_FRACTION;
        e->mem_fraction = NAN;
        e->mem_freq_ref_khz = 0;
        for (unsigned i = 0; i < a->n_fbins; i++) {
                const struct est_fbin *b = &a->fbins[i];
                double f = b->freq_khz * 1e-6, v;

                if (!(b->w > 0))
                        continue;
                v = b->winv / b->w;
                sw += b->w;
                sf += b->w * f;
                sv += b->w * v;
                sff += b->w * f * f;
                sfv += b->w * f * v;
                n++;
        }
        if (n < 2 || freq_ref_khz == 0)
                return;
        den = sw * sff - sf * sf;
        if (!(den > 0))
                return;
        beta = (sw * sfv - sf * sv) / den;
        alpha = (sv - beta * sf) / sw;
        den = alpha + beta * freq_ref_khz * 1e-6;
        if (!(den > 0))
                return;
        m = beta * freq_ref_khz * 1e-6 / den;
        /* Noise can push a compute-bound app slightly below 0 or a stalled one above 1. */
        e->mem_fraction = fmin(fmax(m, 0.0), 1.0);
        e->mem_freq_ref_khz = freq_ref_khz;
        e->known |= ESTIMATE_MEM_FRACTION;
}

/* The share of a CPU's activity that is this app's: 1 when it holds the CPU alone, else its
 * target's busy time (or cycles) over all holders'. NaN when the counts cannot tell. */
static double est_share_frac(const struct est_cpu_share *sh, const struct sensor_counts *tc)
{
        if (sh->holders <= 1)
                return 1.0;
        if (!tc)
                return NAN;
        if (sh->busy_ok && sh->busy_ns > 0)
                return tc->busy_ns / sh->busy_ns;
        if (sh->cycles_ok && sh->cycles > 0)
                return tc->cycles / sh->cycles;
        if ((sh->busy_ok && sh->busy_ns == 0) || (sh->cycles_ok && sh->cycles == 0))
                return 1.0 / sh->holders; /* none of them ran there */
        return NAN;
}

/* Busy seconds of a CPU, all tasks: measured, else unhalted cycles at a known frequency. */
static double est_busy_s(const struct sensor_counts *c, unsigned freq_khz)
{
        if (c->measured & SENSOR_BUSY)
                return c->busy_ns * 1e-9;
        if ((c->measured & SENSOR_CYCLES) && freq_khz)
                return c->cycles / (freq_khz * 1e3);
        return NAN;
}

/* The interval's share of the whole run: its work w in one-core seconds, and the wall time it
 * had its CPUs for. With counters, w = speedup × interval over the whole interval. With busy
 * time, w = Σ busy + wait, on busy_max + wait seconds, wait being the time no thread of the app
 * ran while a CPU of its stood idle (I/O, locks: time no core count shortens):
 * - a thread that ran all interval on each CPU: Σ busy on the interval;
 * - threads held off their CPUs by other processes: that time is neither work nor waiting,
 *   and is left out (the ratio Σ busy / max busy stays the speedup);
 * - per-process busy time is put on the CPU each thread ran on last, so threads that moved
 *   pile up on one CPU (max busy over the interval): max busy is capped at the interval,
 *   and Σ busy is still all the work.
 * An interval in which it did not run at all, its CPUs idle, is waiting: w = interval. */
/* The whole-run figures from the sums: each core count's work divided by the work inflation
 * there where it is known (and every core count has its bin), else as measured. */
static void est_run_figures(struct estimate *e)
{
        bool corr = (e->known & ESTIMATE_WORK_INFLATION) && !e->run_bins_full;
        double w = e->run_work_raw_s, wx = e->run_work_x_raw_s;

        e->p_run_uncorrected = NAN;
        if (corr) {
                w = wx = 0;
                for (unsigned k = 0; k < e->n_run_bins; k++) {
                        unsigned n = e->run_bins[k].cores;
                        double wn = e->run_bins[k].work_s / (1 + e->work_inflation * (n - 1.0));

                        w += wn;
                        wx += wn * (1.0 - 1.0 / n);
                }
        }
        e->run_work_s = w;
        e->run_work_x_s = wx;
        if (e->run_active_s > 0) {
                e->speedup_run = w / e->run_active_s;
                e->known |= ESTIMATE_SPEEDUP_RUN;
        }
        /* Only time at N >= 2 tells anything of P. */
        if (wx > 0) {
                e->p_run = (w - e->run_active_s) / wx;
                e->known |= ESTIMATE_P_RUN;
                if (corr && e->run_work_x_raw_s > 0)
                        e->p_run_uncorrected =
                            (e->run_work_raw_s - e->run_active_s) / e->run_work_x_raw_s;
        }
}

/* The interval's work and instructions at n cores into its bin. */
static void est_run_bin_add(struct estimate *e, unsigned n, double w, double i0)
{
        unsigned k;

        for (k = 0; k < e->n_run_bins && e->run_bins[k].cores != n; k++)
                ;
        if (k == e->n_run_bins) {
                if (k == ESTIMATE_RUN_BINS) {
                        e->run_bins_full = true;
                        return;
                }
                e->run_bins[e->n_run_bins++].cores = n;
                e->run_bins[k].work_s = e->run_bins[k].i0 = 0;
        }
        e->run_bins[k].work_s += w;
        e->run_bins[k].i0 += i0;
}

static void est_app_run(struct est_app *a, unsigned n, double dt_s, bool counters, bool busy_ok,
                        double busy_sum, double busy_max, double cpu_idle_min)
{
        struct estimate *e = &a->e;
        double w, active_s;

        /* The run's instructions, for comparing whole runs (extra parallel work). */
        if (counters && (e->known & ESTIMATE_I0)) {
                e->run_i0 += e->i0;
                e->run_i0_m1 += e->i0 * (n - 1.0);
                est_run_bin_add(e, n, 0, e->i0);
        } else {
                e->run_i0_gap = true;
        }
        if (!e->run_i0_gap && e->run_i0 > 0)
                e->known |= ESTIMATE_RUN_I0;
        else
                e->known &= ~ESTIMATE_RUN_I0;

        if (counters) {
                if (!(e->known & ESTIMATE_SPEEDUP))
                        return;
                w = e->speedup * dt_s;
                active_s = dt_s;
                e->run_counters = true;
        } else if (busy_ok) {
                double wait;

                busy_max = fmin(busy_max, dt_s);
                wait = dt_s - busy_max;
                if (isfinite(cpu_idle_min))
                        wait = fmin(wait, cpu_idle_min);
                w = busy_sum + wait;
                active_s = busy_max + wait;
                e->run_busy_s += busy_sum;
        } else {
                return;
        }
        e->run_s += dt_s;
        e->run_active_s += active_s;
        e->run_work_raw_s += w;
        e->run_work_x_raw_s += w * (1.0 - 1.0 / n);
        est_run_bin_add(e, n, w, 0);
        if (n > e->run_max_cores)
                e->run_max_cores = n;
        est_run_figures(e);
}

int estimate_work_run(const struct estimate *e, double unseen_s, struct estimate_work_run *out)
{
        double tail;

        if (!(e->known & ESTIMATE_RUN_I0))
                return -ENODATA;
        if (!(unseen_s >= 0))
                return -EDOM;
        /* The time not seen ran at anything from nothing to the last rate seen. */
        tail = isfinite(e->ips) ? e->ips * unseen_s : 0;
        if (!isfinite(tail) || tail < 0)
                tail = 0;
        *out = (struct estimate_work_run){.instructions = e->run_i0 + tail / 2,
                                          .instructions_err = tail / 2,
                                          .cores = 1 + e->run_i0_m1 / e->run_i0};
        /* Per core count, the tail at the last one; more core counts than bins: the mean. */
        for (unsigned k = 0; !e->run_bins_full && k < e->n_run_bins; k++) {
                if (!(e->run_bins[k].i0 > 0) && e->run_bins[k].cores != e->n_cores)
                        continue;
                out->bins[out->n_bins].cores = e->run_bins[k].cores;
                out->bins[out->n_bins++].instructions =
                    e->run_bins[k].i0 + (e->run_bins[k].cores == e->n_cores ? tail / 2 : 0);
        }
        return 0;
}

/* Useful instructions of a run if each added core brought x extra per useful one; its
 * instructions scaled by sc (an end of their range). Without bins, all at its mean. */
static double work_useful(const struct estimate_work_run *r, double sc, double x)
{
        double u = 0;

        if (r->n_bins == 0)
                return sc * r->instructions / (1 + x * (r->cores - 1));
        for (unsigned k = 0; k < r->n_bins; k++)
                u += sc * r->bins[k].instructions / (1 + x * (r->bins[k].cores - 1));
        return u;
}

static double work_max_cores(const struct estimate_work_run *r)
{
        double m = r->cores;

        for (unsigned k = 0; k < r->n_bins; k++)
                m = fmax(m, r->bins[k].cores);
        return m;
}

/* The X at which runs a (instructions scaled by sa) and b (by sb) did the same useful work,
 * f(X) = U_a(X) − U_b(X) = 0: the root nearest the estimate from the runs' means (exact when
 * each ran at one core count), bracketed by widening steps around it within the X that keep
 * every factor positive (and at most 10), then bisected. NaN: none. */
static double work_inflation_of(const struct estimate_work_run *a, double sa,
                                const struct estimate_work_run *b, double sb)
{
        double nmax = fmax(work_max_cores(a), work_max_cores(b));
        double xmin = nmax > 1 ? -1 / (nmax - 1) * (1 - 1e-9) : -1, xmax = 10;
        double r = sa * a->instructions / (sb * b->instructions);
        double den = (a->cores - 1) - r * (b->cores - 1);
        double x0 = den > 0 ? (r - 1) / den : 0, lo = NAN, hi = NAN, flo, f0;

        if (!(sa > 0) || !(sb > 0))
                return NAN;
        x0 = fmin(fmax(x0, xmin), xmax);
        f0 = work_useful(a, sa, x0) - work_useful(b, sb, x0);
        if (f0 == 0)
                return x0;
        for (double d = 1e-4; d < 2 * (xmax - xmin) && isnan(lo); d *= 2) {
                double xl = fmax(xmin, x0 - d), xh = fmin(xmax, x0 + d);
                double fl = work_useful(a, sa, xl) - work_useful(b, sb, xl);
                double fh = work_useful(a, sa, xh) - work_useful(b, sb, xh);

                if (isfinite(fl) && (fl > 0) != (f0 > 0)) {
                        lo = xl;
                        hi = x0;
                } else if (isfinite(fh) && (fh > 0) != (f0 > 0)) {
                        lo = x0;
                        hi = xh;
                }
        }
        if (isnan(lo))
                return NAN;
        flo = work_useful(a, sa, lo) - work_useful(b, sb, lo);
        for (unsigned i = 0; i < 200 && hi - lo > 1e-13; i++) {
                double mid = (lo + hi) / 2;
                double fm = work_useful(a, sa, mid) - work_useful(b, sb, mid);

                if ((fm > 0) == (flo > 0))
                        lo = mid;
                else
                        hi = mid;
        }
        return (lo + hi) / 2;
}

static bool work_run_ok(const struct estimate_work_run *r)
{
        if (!(r->instructions > 0) || !isfinite(r->instructions) || !(r->cores >= 1) ||
            !isfinite(r->cores) || !(r->instructions_err >= 0) || !isfinite(r->instructions_err) ||
            r->n_bins > ESTIMATE_RUN_BINS)
                return false;
        for (unsigned k = 0; k < r->n_bins; k++)
                if (!(r->bins[k].cores >= 1) || !isfinite(r->bins[k].cores) ||
                    !(r->bins[k].instructions >= 0) || !isfinite(r->bins[k].instructions))
                        return false;
        return true;
}

int estimate_work_inflation(const struct estimate_work_run *runs, unsigned n, double *x,
                            double *err, unsigned *ia, unsigned *ib)
{
        unsigned a = 0, b = 0;
        double spread = 0, xa, xlo, xhi, ea, eb;

        for (unsigned i = 0; i < n; i++)
                if (!work_run_ok(&runs[i]))
                        return -EINVAL;
        for (unsigned i = 0; i < n; i++)
                for (unsigned j = i + 1; j < n; j++)
                        if (fabs(runs[i].cores - runs[j].cores) >= spread) {
                                spread = fabs(runs[i].cores - runs[j].cores);
                                a = runs[i].cores > runs[j].cores ? i : j;
                                b = a == i ? j : i;
                        }
        if (n < 2 || spread < ESTIMATE_WORK_MIN_SPREAD)
                return -ENODATA;
        xa = work_inflation_of(&runs[a], 1, &runs[b], 1);
        if (isnan(xa))
                return -EDOM;
        /* X grows with I_a and falls with I_b: the range's ends. */
        ea = runs[a].instructions_err / runs[a].instructions;
        eb = runs[b].instructions_err / runs[b].instructions;
        xlo = work_inflation_of(&runs[a], 1 - ea, &runs[b], 1 + eb);
        xhi = work_inflation_of(&runs[a], 1 + ea, &runs[b], 1 - eb);
        *x = xa;
        *err = isnan(xlo) || isnan(xhi) ? INFINITY : fmax(xa - xlo, xhi - xa);
        if (ia)
                *ia = a;
        if (ib)
                *ib = b;
        return 0;
}

int estimator_set_work_inflation(struct estimator *est, uint64_t id, double x)
{
        struct est_app *a = est_find(est, id, 0);
        struct estimate *e;

        if (!a)
                return -ENOENT;
        e = &a->e;
        for (unsigned k = 0; isfinite(x) && k < e->n_run_bins; k++)
                if (!(1 + x * (e->run_bins[k].cores - 1.0) > 0))
                        return -EDOM;
        if (isfinite(x) && !(1 + x * (e->run_max_cores > 1 ? e->run_max_cores - 1.0 : 0) > 0))
                return -EDOM;
        e->work_inflation = isfinite(x) ? x : NAN;
        if (isfinite(x))
                e->known |= ESTIMATE_WORK_INFLATION;
        else
                e->known &= ~ESTIMATE_WORK_INFLATION;
        est_run_figures(e);
        return 0;
}

int estimate_p_run_range(const struct estimate *e, double unseen_s, unsigned cores, double *lo,
                         double *hi)
{
        double x, num = e->run_work_s - e->run_active_s;

        if (!(e->known & ESTIMATE_P_RUN))
                return -ENODATA;
        if (!(unseen_s >= 0) || cores == 0)
                return -EDOM;
        x = 1.0 - 1.0 / cores;
        /* All sequential: w = u at x. All parallel: w = N u, taking u of wall time. */
        *lo = num / (e->run_work_x_s + unseen_s * x);
        *hi = (num + (cores - 1.0) * unseen_s) / (e->run_work_x_s + cores * unseen_s * x);
        if (*lo > *hi) {
                double t = *lo;

                *lo = *hi;
                *hi = t;
        }
        return 0;
}

int estimate_run_complete(const struct estimate *e, double unseen_s, double unseen_cpu_s,
                          unsigned cores, double *speedup_run, double *p_run)
{
        double w, missed, active_s, wx;

        if (!(e->known & ESTIMATE_P_RUN) || e->run_counters)
                return -ENODATA;
        if (!(unseen_s >= 0) || !(unseen_cpu_s >= 0) || !isfinite(unseen_s) ||
            !isfinite(unseen_cpu_s) || cores == 0)
                return -EDOM;
        /* As est_app_run counts an interval in busy time: its work the CPU time, and where no
         * thread ran for part of it, that part waiting (its CPUs idle: the exit's flush, the
         * start's exec). No more than its CPUs could do in it: CPU time beyond that was done
         * in the seen intervals and missed there (a child process that exited between two
         * reads, whose parent exited before the next one could charge it; a thread's
         * schedstat lagging a tick). It is work all the same, done in time already counted:
         * it adds to the work and not to the time, up to what the run's cores could do. */
        w = fmin(fmax(unseen_cpu_s, unseen_s), cores * unseen_s);
        missed = fmax(0.0, unseen_cpu_s - cores * unseen_s);
        active_s = e->run_active_s + unseen_s;
        missed = fmin(missed, fmax(0.0, cores * active_s - e->run_work_s - w));
        wx = e->run_work_x_s + (w + missed) * (1.0 - 1.0 / cores);
        w += missed;
        if (!(active_s > 0) || !(wx > 0))
                return -ENODATA;
        *speedup_run = (e->run_work_s + w) / active_s;
        *p_run = (e->run_work_s + w - active_s) / wx;
        return 0;
}

/* The per-app part of an interval: counts on its CPUs to I0, ΔI, IPC, speedup and P. */
static void est_app_interval(const struct estimator *est, struct est_app *a,
                             const struct sensor_sample *s, const struct estimator_app_view *v)
{
        const double dt_s = s->interval_ns * 1e-9;
        const unsigned need = SENSOR_INSTR | SENSOR_CYCLES;
        double stalls = 0; /* of its CPUs, attributed as I0 (NaN: one cannot say) */
        struct estimate *e = &a->e;
        bool counters = true, busy_ok = true, target_instr = v->target >= 0;
        double i0 = 0, delta_i = 0, c_max = 0, i0_busiest = 0, busy_sum = 0, busy_max = 0;
        double cycles = 0, busy_total = 0, cpu_idle_min = INFINITY, busy_rate_sum = 0;
        double busy_own = 0;
        unsigned n = 0;

        if (a->have_ts && s->timestamp_ns > a->last_ts_ns)
                est_app_decay(a, est_decay(est, s->timestamp_ns - a->last_ts_ns));
        a->have_ts = true;
        a->last_ts_ns = s->timestamp_ns;

        cpumask_foreach (cpu, &v->cpus) {
                const struct sensor_counts *c = &s->cpu[cpu];
                const struct sensor_counts *tc =
                    v->target >= 0 ? sensor_target_cpu(s, (unsigned)v->target, (unsigned)cpu)
                                   : NULL;

                n++;
                counters &= (c->measured & need) == need;
                /* On a CPU it shares, the app's own instructions and cycles are its target's:
                 * the CPU-wide counts hold the other apps too. */
                if (est->share[cpu].holders > 1)
                        counters &= tc && (tc->measured & need) == need;
                target_instr &= tc && (tc->measured & SENSOR_INSTR);
                /* With a target, only its own time: the CPU-wide time holds other tasks. */
                busy_ok &=
                    tc ? (tc->measured & SENSOR_BUSY) != 0 : (c->measured & SENSOR_BUSY) != 0;
                /* Busy seconds of its CPUs, all tasks: eq. 14's time-proportional ΔI is split
                 * among them by this (NaN when one is unknown). */
                busy_rate_sum += est_busy_s(c, v->freq_khz);
        }

        /* Clear the interval's figures; the fit and the cumulative energy stay. */
        e->known &= ESTIMATE_P_LS | ESTIMATE_ENERGY | ESTIMATE_MEM_FRACTION | ESTIMATE_SPEEDUP_RUN |
                    ESTIMATE_P_RUN | ESTIMATE_IPC_CORE_DROP | ESTIMATE_RUN_I0 |
                    ESTIMATE_WORK_INFLATION;
        e->n_cores = n;
        e->freq_khz = v->freq_khz;
        /* The allocator counts its observations by this: start-up is not one. */
        if (!v->run_only)
                e->intervals++;
        e->i0 = e->delta_i = e->ipc = e->ips = e->ipc1 = e->speedup = e->p_eq10 = NAN;
        e->busy_cores = NAN;
        e->delta_i_source = ESTIMATE_DELTA_I_NONE;
        e->ipc1_source = ESTIMATE_IPC1_NONE;
        e->speedup_source = ESTIMATE_SPEEDUP_NONE;
        e->stalls = NAN;

        cpumask_foreach (cpu, &v->cpus) {
                const struct sensor_counts *c = &s->cpu[cpu];
                const struct sensor_counts *tc =
                    v->target >= 0 ? sensor_target_cpu(s, (unsigned)v->target, (unsigned)cpu)
                                   : NULL;
                const struct est_cpu_share *sh = &est->share[cpu];
                double frac = est_share_frac(sh, tc);
                double busy = est_busy_s(c, v->freq_khz) * frac;
                double busy_app = tc ? tc->busy_ns * 1e-9 : busy;
                double c_cycles;

                /* NaN as soon as one CPU's count is unknown. */
                busy_total += busy;
                /* On CPUs it holds alone: time-shared, its threads' time is the others'
                 * as much as its own, and the speedup (per cycle) does not say so. */
                busy_own += sh->holders > 1 ? NAN : busy;
                cycles += (c->measured & SENSOR_CYCLES) ? (double)c->cycles * frac : NAN;
                c_cycles = sh->holders > 1 ? (double)tc->cycles : (double)c->cycles;
                /* Stalls as I0: the target's own where it counts them (on a shared CPU
                 * nothing else is the app's), else the CPU's while the app alone holds it
                 * (with the system's, as its cycles in eq. 7). NaN once a CPU cannot say. */
                if (tc && (tc->measured & SENSOR_STALLS))
                        stalls += (double)tc->stalls;
                else if (sh->holders <= 1 && (c->measured & SENSOR_STALLS))
                        stalls += (double)c->stalls;
                else
                        stalls = NAN;
                if (counters && sh->holders > 1) {
                        /* ΔI of a shared CPU: what no holder's target counted, by share. */
                        double d = fmax((double)c->instr - sh->instr, 0) *
                                   (isnan(frac) ? 1.0 / sh->holders : frac);

                        i0 += (double)tc->instr;
                        delta_i += d;
                        if (c_cycles > c_max) {
                                c_max = c_cycles;
                                i0_busiest = (double)tc->instr;
                        }
                } else if (counters) {
                        double d, i0_c;

                        if (target_instr) {
                                i0_c = (double)tc->instr;
                                d = fmax((double)c->instr - i0_c, 0);
                        } else {
                                /* eq. 5 with eq. 14 per interval: β per busy second of the
                                 * CPU (the whole interval when unknown), and the CPU's share
                                 * of α·t, by busy time (evenly when that is unknown). */
                                double b = isnan(busy) ? dt_s : busy;

                                d = est->cfg.delta_i_rate * b +
                                    est->cfg.delta_i_alpha * dt_s *
                                        (busy_rate_sum > 0 ? b / busy_rate_sum : 1.0 / n) +
                                    est->cfg.delta_i_cpu_rate * dt_s;
                                d = fmin(d, (double)c->instr);
                                i0_c = (double)c->instr - d;
                        }
                        i0 += i0_c;
                        delta_i += d;
                        if ((double)c->cycles > c_max) {
                                c_max = (double)c->cycles;
                                i0_busiest = i0_c;
                        }
                } else if (busy_ok) {
                        double cpu_busy = est_busy_s(c, v->freq_khz);

                        busy_sum += busy_app;
                        busy_max = fmax(busy_max, busy_app);
                        /* NaN (unknown) stays NaN: fmin would drop it. */
                        cpu_idle_min = isnan(cpu_busy) || isnan(cpu_idle_min)
                                           ? NAN
                                           : fmin(cpu_idle_min, fmax(dt_s - cpu_busy, 0));
                }
        }
        a->cycles = cycles;
        a->busy_s = busy_total;
        if (busy_own >= 0)
                e->busy_cores = busy_own / dt_s;

        if (counters) {
                double ipc_core, ipc1_here;
                bool ipc1_scaled;

                e->i0 = i0;
                e->delta_i = delta_i;
                e->delta_i_source = target_instr ? ESTIMATE_DELTA_I_TARGET : ESTIMATE_DELTA_I_RATE;
                e->ips = i0 / dt_s;
                e->known |= ESTIMATE_I0 | ESTIMATE_DELTA_I | ESTIMATE_IPS;
                if (isfinite(stalls)) {
                        e->stalls = stalls;
                        e->known |= ESTIMATE_STALLS;
                }
                if (model_ipc(i0, c_max, &e->ipc) == 0) /* eq. 7 */
                        e->known |= ESTIMATE_IPC;
                if (model_ipc(i0_busiest, c_max, &ipc_core) < 0 || !(ipc_core > 0))
                        ipc_core = NAN;
                if (isfinite(ipc_core) && !v->run_only) {
                        double drop = est_cbin_add(a, n, v->freq_khz, ipc_core);

                        if (isfinite(drop)) {
                                e->ipc_core_drop = drop;
                                e->known |= ESTIMATE_IPC_CORE_DROP;
                        }
                }
                if (n == 1 && !v->run_only && (e->known & ESTIMATE_IPC) && e->ipc > 0)
                        /* IPC_I0(1) observed; speedup is 1 by definition and says nothing of
                         * P. */
                        est_fbin_add(a->ipc1, &a->n_ipc1, v->freq_khz, 1.0 / e->ipc);
                /* eq. 9 wants the app's own one-core IPC: on N cores its cores' IPC already
                 * holds the contention (memory bandwidth, cache) that the speedup must
                 * show. The busiest core's IPC while on N cores hides it (the speedup then
                 * reduces to Amdahl's), so it comes last. */
                ipc1_here = est_ipc1_at(a, v->freq_khz, &ipc1_scaled);
                if (isfinite(ipc1_here)) {
                        e->ipc1 = ipc1_here;
                        e->ipc1_source =
                            ipc1_scaled ? ESTIMATE_IPC1_ONE_CORE_SCALED : ESTIMATE_IPC1_ONE_CORE;
                } else if (est->cfg.ipc1_calibrated > 0) {
                        e->ipc1 = est->cfg.ipc1_calibrated;
                        e->ipc1_source = ESTIMATE_IPC1_CALIBRATION;
                } else if (isfinite(ipc_core)) {
                        e->ipc1 = ipc_core;
                        e->ipc1_source = ESTIMATE_IPC1_BUSIEST_CORE;
                }
                if (e->ipc1_source != ESTIMATE_IPC1_NONE)
                        e->known |= ESTIMATE_IPC1;
                if (n == 1 && (e->known & ESTIMATE_IPC)) {
                        e->speedup = 1.0;
                        e->speedup_source = ESTIMATE_SPEEDUP_COUNTERS;
                } else if ((e->known & ESTIMATE_IPC) && (e->known & ESTIMATE_IPC1) &&
                           model_speedup_from_ipc(e->ipc, e->ipc1, &e->speedup) == 0) { /* eq. 9 */
                        e->speedup_source = ESTIMATE_SPEEDUP_COUNTERS;
                }
                /* Frequency sensitivity from the per-core IPC over all its CPUs: the same
                 * code runs on each, and n cores average out n times the counter noise. */
                if (v->freq_khz && i0 > 0 && cycles > 0 && !v->run_only)
                        est_fbin_add(a->fbins, &a->n_fbins, v->freq_khz, cycles / i0);
        } else if (busy_ok && busy_max > 0) {
                /* Loop-and-barrier threads that block while waiting: Σbusy/max busy is Amdahl's
                 * T(1)/T(N). */
                e->speedup = n == 1 ? 1.0 : busy_sum / busy_max;
                e->speedup_source = ESTIMATE_SPEEDUP_BUSY;
        }
        if (e->speedup_source != ESTIMATE_SPEEDUP_NONE && e->speedup > 0 && isfinite(e->speedup)) {
                e->known |= ESTIMATE_SPEEDUP;
                if (n >= 2 && !v->run_only && est_fit_takes(a, est_point_rank(e)))
                        est_app_point(est, a, n, 1.0 - 1.0 / e->speedup, s->timestamp_ns);
        }
        /* The interval in which it was adopted counts from then: before, it was no app's. */
        double run_dt_s = dt_s;

        if (v->target >= 0 && v->counted_since_ns && s->timestamp_ns > v->counted_since_ns &&
            s->timestamp_ns - v->counted_since_ns < s->interval_ns)
                run_dt_s = (double)(s->timestamp_ns - v->counted_since_ns) * 1e-9;
        est_app_run(a, n, run_dt_s, counters, busy_ok, busy_sum, busy_max,
                    isinf(cpu_idle_min) ? NAN : cpu_idle_min);
        /* eq. 10 at the current N, on the decayed mean there. */
        for (unsigned i = 0; i < a->n_bins && n >= 2; i++) {
                const struct est_bin *b = &a->bins[i];

                if (b->cores == n && b->w > 0 && b->wy / b->w < 1 &&
                    model_p_from_speedup(n, 1.0 / (1.0 - b->wy / b->w), &e->p_eq10) >= 0)
                        e->known |= ESTIMATE_P_EQ10;
        }
        est_app_freqsens(a, v->freq_khz);
}

static int est_validate(struct estimator *est, const struct sensor_sample *s,
                        const struct estimator_app_view *apps, unsigned n_apps)
{
        struct cpumask all, untargeted, both;

        if (!s || s->interval_ns == 0 || s->n_cpus == 0 || !s->cpu || (n_apps && !apps))
                return -EINVAL;
        if (s->energy_measured && s->n_packages > SENSOR_MAX_PACKAGES)
                return -EINVAL;
        cpumask_zero(&all);
        cpumask_zero(&untargeted);
        est->stamp++;
        for (unsigned i = 0; i < n_apps; i++) {
                const struct estimator_app_view *v = &apps[i];
                struct est_app *a = est_find(est, v->id, i);
                int last = cpumask_next(&v->cpus, s->n_cpus);

                if (!a)
                        return -ENOENT;
                if (a->stamp == est->stamp || cpumask_empty(&v->cpus))
                        return -EINVAL;
                a->stamp = est->stamp;
                if (last >= 0)
                        return -ERANGE;
                if (v->target >= 0 && ((unsigned)v->target >= s->n_targets || !s->target_cpu))
                        return -ERANGE;
                /* Apps may share a CPU only when each has its own counts there: without
                 * them nothing tells their shares apart. */
                cpumask_and(&both, v->target >= 0 ? &untargeted : &all, &v->cpus);
                if (!cpumask_empty(&both))
                        return -EINVAL;
                cpumask_or(&all, &all, &v->cpus);
                if (v->target < 0)
                        cpumask_or(&untargeted, &untargeted, &v->cpus);
        }
        if (est->n_owner < s->n_cpus) {
                int *o = realloc(est->owner, s->n_cpus * sizeof(*o));
                struct est_cpu_share *sh;
                double *idle;

                if (!o)
                        return -ENOMEM;
                est->owner = o;
                sh = realloc(est->share, s->n_cpus * sizeof(*sh));
                if (!sh)
                        return -ENOMEM;
                est->share = sh;
                idle = realloc(est->cpu_idle_j, s->n_cpus * sizeof(*idle));
                if (!idle)
                        return -ENOMEM;
                est->cpu_idle_j = idle;
                est->n_owner = s->n_cpus;
        }
        return 0;
}

/* Who holds each CPU this interval, and the sums of their targets' counts there. */
static void est_shares(struct estimator *est, const struct sensor_sample *s,
                       const struct estimator_app_view *apps, unsigned n_apps)
{
        for (unsigned c = 0; c < s->n_cpus; c++)
                est->share[c] =
                    (struct est_cpu_share){.busy_ok = true, .cycles_ok = true, .instr_ok = true};
        for (unsigned i = 0; i < n_apps; i++) {
                cpumask_foreach (cpu, &apps[i].cpus) {
                        struct est_cpu_share *sh = &est->share[cpu];
                        const struct sensor_counts *tc =
                            apps[i].target >= 0
                                ? sensor_target_cpu(s, (unsigned)apps[i].target, (unsigned)cpu)
                                : NULL;
                        unsigned m = tc ? tc->measured : 0;

                        sh->holders++;
                        sh->busy_ok &= (m & SENSOR_BUSY) != 0;
                        sh->cycles_ok &= (m & SENSOR_CYCLES) != 0;
                        sh->instr_ok &= (m & SENSOR_INSTR) != 0;
                        sh->busy_ns += tc ? (double)tc->busy_ns : 0;
                        sh->cycles += tc ? (double)tc->cycles : 0;
                        sh->instr += tc ? (double)tc->instr : 0;
                }
        }
}

/* Frequency used for the power model where the app's is unknown (no cpufreq): the model's top
 * point, the one a declared model is stated at. */
static unsigned est_power_freq(const struct estimator *est, unsigned freq_khz)
{
        return freq_khz ? freq_khz : model_power_max_freq(&est->power);
}

/* The power-charging rule, the same for measurements and for predictions (model_predict;
 * docs/estimator.md, "Power share"): an app is charged what the machine draws for it as if it
 * ran alone: the static power in full, the idle power of its CPUs' idle time, and the dynamic
 * power of its own busy time. The power model's static_w holds the package and the CPUs no app
 * holds; its idle_w is what holding an idle CPU adds. Measured: the package energy less static
 * and idle is the dynamic energy, split among all CPUs by unhalted cycles (busy time without
 * cycles); without the package energy, the model's core power at the app's busy cores. */
static void est_power_share(struct estimator *est, const struct sensor_sample *s,
                            const struct estimator_app_view *apps, unsigned n_apps)
{
        const double dt_s = s->interval_ns * 1e-9;
        struct estimator_platform *pf = &est->platform;
        double energy_j = 0, static_j = NAN, idle_j = NAN, activity_all = 0, activity_apps = 0;
        bool by_cycles = true;

        for (unsigned c = 0; c < s->n_cpus; c++) {
                est->owner[c] = -1;
                est->cpu_idle_j[c] = 0;
        }
        for (unsigned i = 0; i < n_apps; i++)
                cpumask_foreach (cpu, &apps[i].cpus)
                        est->owner[cpu] = (int)i;
        for (unsigned c = 0; c < s->n_cpus; c++)
                if (s->cpu[c].measured)
                        by_cycles &= (s->cpu[c].measured & SENSOR_CYCLES) != 0;

        pf->energy_measured = s->energy_measured;
        pf->power_w = pf->static_w = pf->idle_w = pf->unattributed_w = NAN;
        if (est->have_power) {
                /* Idle power of every CPU an app holds, for the time it was not busy. */
                static_j = est->power.static_w * dt_s;
                idle_j = 0;
                for (unsigned c = 0; c < s->n_cpus && isfinite(idle_j); c++) {
                        const struct sensor_counts *cc = &s->cpu[c];
                        unsigned f;
                        double idle_w, busy;

                        if (!cc->measured || est->owner[c] < 0)
                                continue;
                        f = est_power_freq(est, apps[est->owner[c]].freq_khz);
                        busy = est_busy_s(cc, f);
                        if (isnan(busy) || model_power_at(&est->power, f, 0, 1, &idle_w) < 0) {
                                idle_j = NAN;
                                break;
                        }
                        idle_w -= est->power.static_w;
                        est->cpu_idle_j[c] = idle_w * fmax(dt_s - fmin(busy, dt_s), 0);
                        idle_j += est->cpu_idle_j[c];
                }
                pf->static_w = static_j / dt_s;
                pf->idle_w = idle_j / dt_s;
        }
        if (s->energy_measured) {
                for (unsigned k = 0; k < s->n_packages; k++)
                        energy_j += s->energy_j[k];
                pf->power_w = energy_j / dt_s;
                pf->energy_j += energy_j;
                for (unsigned c = 0; c < s->n_cpus; c++) {
                        const struct sensor_counts *cc = &s->cpu[c];

                        activity_all +=
                            by_cycles ? (double)cc->cycles
                                      : ((cc->measured & SENSOR_BUSY) ? (double)cc->busy_ns : 0);
                }
        }
        for (unsigned i = 0; i < n_apps; i++) {
                struct est_app *a = est_find(est, apps[i].id, i);
                struct estimate *e = &a->e;
                double held_j = 0;

                e->known &= ~(unsigned)(ESTIMATE_POWER | ESTIMATE_PERF_PER_W | ESTIMATE_EPI |
                                        ESTIMATE_EDP_RATE);
                e->power_w = e->perf_per_w = e->epi = e->edp_rate = NAN;
                e->power_source = ESTIMATE_POWER_NONE;
                e->power_declared = false;
                if (isfinite(idle_j)) {
                        /* Its CPUs' idle energy (split evenly on a CPU apps share), and the
                         * static energy in full. */
                        cpumask_foreach (cpu, &apps[i].cpus)
                                held_j += est->cpu_idle_j[cpu] /
                                          (est->share[cpu].holders ? est->share[cpu].holders : 1);
                        held_j += static_j;
                }
                if (s->energy_measured && isfinite(idle_j) && activity_all > 0) {
                        double act = by_cycles ? a->cycles : a->busy_s * 1e9;
                        double dyn_j = fmax(energy_j - static_j - idle_j, 0);

                        if (isfinite(act)) {
                                e->power_w = (dyn_j * act / activity_all + held_j) / dt_s;
                                e->power_source = ESTIMATE_POWER_MEASURED;
                                e->power_declared = est->power.declared;
                                activity_apps += act;
                        }
                } else if (!s->energy_measured && isfinite(idle_j) && isfinite(a->busy_s)) {
                        double w;

                        if (model_power_at(&est->power, est_power_freq(est, apps[i].freq_khz),
                                           a->busy_s / dt_s, 0, &w) == 0) {
                                e->power_w = w - est->power.static_w + held_j / dt_s;
                                e->power_source = ESTIMATE_POWER_MODEL;
                                e->power_declared = est->power.declared;
                        }
                }
                if (e->power_source == ESTIMATE_POWER_NONE)
                        continue;
                e->known |= ESTIMATE_POWER | ESTIMATE_ENERGY;
                e->energy_j += e->power_w * dt_s;
                if ((e->known & ESTIMATE_IPS) &&
                    model_perf_per_watt(e->ips, e->power_w, &e->perf_per_w) == 0)
                        e->known |= ESTIMATE_PERF_PER_W; /* eq. 11 */
                if ((e->known & ESTIMATE_IPS) && model_epi(e->power_w, e->ips, &e->epi) == 0) {
                        e->known |= ESTIMATE_EPI; /* eq. 12 */
                        e->edp_rate = e->power_w / (e->ips * e->ips);
                        e->known |= ESTIMATE_EDP_RATE;
                }
        }
        if (s->energy_measured && isfinite(idle_j) && activity_all > 0)
                pf->unattributed_w = fmax(energy_j - static_j - idle_j, 0) *
                                     fmax(activity_all - activity_apps, 0) / activity_all / dt_s;
}

int estimator_update(struct estimator *est, const struct sensor_sample *s,
                     const struct estimator_app_view *apps, unsigned n_apps)
{
        int r = est_validate(est, s, apps, n_apps);

        if (r < 0)
                return r;
        est_shares(est, s, apps, n_apps);
        for (unsigned i = 0; i < n_apps; i++)
                est_app_interval(est, est_find(est, apps[i].id, i), s, &apps[i]);
        est_power_share(est, s, apps, n_apps);
        return 0;
}

/* The machine's power by the model when nothing measures it: static power, every busy core
 * at its frequency, and the idle share of the cores apps hold. */
static void est_model_energy(struct estimator *est, const struct sensor_sample *s,
                             const struct estimator_machine *mach)
{
        struct estimator_platform *pf = &est->platform;
        unsigned freq_khz = mach->top_app_freq_khz;
        double busy = 0, w;

        pf->model_w = NAN;
        if (s->energy_measured || !est->have_power || s->interval_ns == 0)
                return;
        for (unsigned c = 0; c < s->n_cpus; c++)
                if (s->cpu[c].measured & SENSOR_BUSY)
                        busy += (double)s->cpu[c].busy_ns / s->interval_ns;
        if (!freq_khz)
                freq_khz = model_power_max_freq(&est->power);
        if (model_power_at(&est->power, freq_khz, busy, fmax(0, cpumask_count(&mach->held) - busy),
                           &w) < 0)
                return;
        pf->model_w = w;
        pf->model_energy_j += w * s->interval_ns / 1e9;
}

/* With RAPL and no power model, learn one from this interval: the frequency of every CPU,
 * its busy time, the CPUs apps hold, and the package energy. */
static void est_fit_power(struct estimator *est, const struct sensor_sample *s,
                          const struct estimator_machine *mach)
{
        if (!est->fit || !s->energy_measured || !mach->cpu_freq_khz)
                return;
        if (powerfit_add(est->fit, s, mach->cpu_freq_khz, &mach->held) == 0)
                est->have_fitted = powerfit_model(est->fit, &est->fitted) == 0;
}

int estimator_interval(struct estimator *est, const struct sensor_sample *s,
                       const struct estimator_machine *mach, const struct estimator_app_view *apps,
                       unsigned n_apps)
{
        if (!s || !mach)
                return -EINVAL;
        est_model_energy(est, s, mach);
        est_fit_power(est, s, mach);
        if (mach->n_managed == 0)
                return 0;
        return estimator_update(est, s, apps, n_apps);
}

const struct model_power *estimator_power_model(const struct estimator *est, bool *fitted)
{
        if (fitted)
                *fitted = !est->have_power && est->have_fitted;
        if (est->have_power)
                return &est->power;
        return est->have_fitted ? &est->fitted : NULL;
}

int estimator_predict(const struct estimator *est, uint64_t id, unsigned cores, unsigned freq_khz,
                      const struct model_power *pm, struct model_prediction *out)
{
        const struct est_app *a = est_find(est, id, 0);
        const struct estimate *e;
        struct model_app app = {0};
        unsigned ref_khz;
        double ipc1, own_ipc1;
        bool mem_known, scaled;
        int r;

        if (!a)
                return -ENOENT;
        e = &a->e;
        if (cores == 0)
                return -EDOM;
        if (e->known & ESTIMATE_P_LS)
                app.p = e->p_ls;
        else if (e->known & ESTIMATE_P_EQ10)
                app.p = e->p_eq10;
        else
                return -ENODATA;
        mem_known = e->known & ESTIMATE_MEM_FRACTION;
        ref_khz = mem_known ? e->mem_freq_ref_khz : e->freq_khz;
        if (!ref_khz && pm)
                ref_khz = model_power_max_freq(pm);
        if (!ref_khz) {
                if (freq_khz)
                        return -EDOM;
                /* Nothing to scale: the same unknown frequency on both sides. */
                ref_khz = freq_khz = 1;
        } else if (!freq_khz) {
                freq_khz = ref_khz;
        }
        app.freq_ref_khz = ref_khz;
        app.mem_fraction = mem_known ? e->mem_fraction : 0;
        /* Single-core IPC at the reference: the app's own one-core mean there, else the
         * decayed mean of its per-core IPC there (steadier than one interval's), else the
         * last IPC_I0(1). */
        ipc1 = (e->known & ESTIMATE_IPC1) ? e->ipc1 : NAN;
        for (unsigned i = 0; i < a->n_fbins; i++)
                if (a->fbins[i].freq_khz == ref_khz && a->fbins[i].w > 0 && a->fbins[i].winv > 0)
                        ipc1 = a->fbins[i].w / a->fbins[i].winv;
        own_ipc1 = est_ipc1_at(a, ref_khz, &scaled);
        if (isfinite(own_ipc1))
                ipc1 = own_ipc1;
        if (ipc1 > 0 && ref_khz > 1) {
                app.instructions = 1e9;
                app.t1_s = app.instructions / model_ips(ipc1, ref_khz * 1e3); /* eq. 1, 8 */
        } else {
                app.t1_s = 1.0;
        }
        r = model_predict(&app, pm, cores, freq_khz, out);
        if (r < 0)
                return r;
        return freq_khz != ref_khz && !mem_known ? ESTIMATOR_PREDICT_NAIVE_FREQ : 0;
}
