/* A speedup capped by memory bandwidth (docs/allocator.md, "A bandwidth cap"). An app whose
 * instruction rate fills its package's memory bandwidth stalls on its busy cores: past that
 * count its speedup stops rising, at (the package's bandwidth / its traffic per core), and
 * added cores buy nothing. Amdahl's law has no such bend: the estimator fits a lower P to the
 * capped points, which still rises past the cap and understates the speedup below it, so the
 * partition keeps giving the app cores (and the apps beside it lose bandwidth too).
 *
 * The counters show the cap: where the share of an app's cycles that stall grows with its
 * count (memory latency stalls the same share at any count) and the busiest core retires less
 * per cycle, the cores are short of bandwidth. Then the share of its cycles that retire fell
 * by (1 - stall at fewer) / (1 - stall at more): its speedup without the cap at the larger
 * count is the measured one times that, which gives the P of its work (eq. 10), and the
 * measured speedup there is the cap, for the packages its cores span. The model's speedup is
 * then min(Amdahl(P), cap x packages), in every prediction the allocator makes for the app. */

#include "alloc_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pctl/util.h"

/* The share of its busy cycles that retire must have fallen by this much from the fewest
 * cores to the current count before a cap is believed: above the counters' noise (0.5-3 % per
 * sample), the share of stalls from which an app is spread over the packages too
 * (alloc_share.c). */
#define ALLOCATOR_BWCAP_STALL 0.05

/* Samples (decisions) of a count's running mean, as a measured point's
 * (ALLOCATOR_MEAN_SAMPLES): long enough to average the noise, short enough to follow. */
#define ALLOCATOR_BWCAP_SAMPLES 8

/* The speedup at more cores must not have risen by more than this over the fewer for the
 * added cores to count as buying nothing: the model's own error on a settled app (the
 * hysteresis); Amdahl's law with the P of a settled app rises by more over a few cores. */
#define ALLOCATOR_BWCAP_FLAT 0.05

/* Samples at each of the two counts before they are compared: a probe's (one straddles the
 * change and is dropped before, two more average one sample's noise). */
#define ALLOCATOR_BWCAP_MIN_SAMPLES 3

static double amdahl(double p, double n)
{
        return 1 / ((1 - p) + p / n);
}

/* The packages an app's n cores span: each has memory controllers of its own. A spread app
 * takes every package as soon as it has a core for each; a packed one fills a package first.
 * Known only where the managed CPUs form per-package domains (ctx->domain_cpus); else one. */
static unsigned packages_at(const struct allocator_ctx *ctx, const struct allocator_app *a,
                            unsigned n)
{
        unsigned pk, used;

        if (!ctx->domain_cpus || ctx->n_cpus < 2 * ctx->domain_cpus || n == 0)
                return 1;
        pk = ctx->n_cpus / ctx->domain_cpus;
        used = a->spread ? n : (n + ctx->domain_cpus - 1) / ctx->domain_cpus;
        return used < pk ? used : pk;
}

/* The P the estimator predicts with (estimator_predict's choice); NaN without one. */
static double model_p(const struct estimate *e)
{
        if (e->known & ESTIMATE_P_LS)
                return e->p_ls;
        if (e->known & ESTIMATE_P_EQ10)
                return e->p_eq10;
        return NAN;
}

/* The stalled share of the app's busy cycles, as its counters count them; NaN when unknown
 * (or where another app time-shares its CPUs). Busy cycles that retire nothing are stalls
 * whatever stalls them: latency, bandwidth, spinning. */
static double stalled_share(const struct estimate *e)
{
        unsigned need = ESTIMATE_STALLS | ESTIMATE_IPC | ESTIMATE_I0;
        double busy, share;

        if ((e->known & need) != need || !(e->busy_cores > 0) || !(e->ipc > 0))
                return NAN;
        busy = e->i0 / e->ipc * e->busy_cores; /* the busiest core's cycles, times */
        share = e->stalls / busy;
        return busy > 0 && share >= 0 && share < 1 ? share : NAN;
}

void alloc_bwcap_reset(struct allocator_app *a)
{
        memset(&a->bwcap, 0, sizeof(a->bwcap));
}

static void bwcap_clear(struct allocator_app *a)
{
        a->bwcap.cap = 0;
        a->bwcap.p_free = 0;
        a->bwcap.cap_cores = 0;
        a->bwcap.cap_freq_khz = 0;
}

void alloc_bwcap_observe(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);
        unsigned pk = packages_at(ctx, a, a->cores), i, hi = 0, lo;
        bool held = a->cores == a->bwcap.prev_cores && a->freq_khz == a->bwcap.prev_freq_khz;
        double s, stretch, sfree, pf;

        a->bwcap.prev_cores = a->cores;
        a->bwcap.prev_freq_khz = a->freq_khz;
        /* The first decision at a count may hold an interval that straddles the change. */
        if (!e || !held || a->cores == 0)
                return;
        s = stalled_share(e);
        if (!isfinite(s) || !(e->speedup > 0))
                return;
        /* Speedups over another one-core IPC (a probe measured it) are not comparable. */
        if (a->bwcap.ipc1_source != (unsigned)e->ipc1_source) {
                a->bwcap.n_pt = 0;
                a->bwcap.ipc1_source = e->ipc1_source;
        }
        for (i = 0; i < a->bwcap.n_pt; i++) {
                const __typeof__(a->bwcap.pt[0]) *q = &a->bwcap.pt[i];

                if (q->cores == a->cores && q->freq_khz == a->freq_khz && q->packages == pk)
                        break;
        }
        if (i == a->bwcap.n_pt) {
                if (a->bwcap.n_pt < ALLOCATOR_BWCAP_POINTS) {
                        i = a->bwcap.n_pt++;
                } else {
                        /* Full: a count goes, never the fewest at this clock (the
                         * comparison's base, below). */
                        lo = 0;
                        for (unsigned j = 1; j < a->bwcap.n_pt; j++)
                                if (a->bwcap.pt[j].freq_khz == a->freq_khz &&
                                    (a->bwcap.pt[lo].freq_khz != a->freq_khz ||
                                     a->bwcap.pt[j].cores < a->bwcap.pt[lo].cores))
                                        lo = j;
                        i = lo == 0 ? 1 : 0;
                }
                a->bwcap.pt[i] = (__typeof__(a->bwcap.pt[0])){
                    .cores = a->cores, .freq_khz = a->freq_khz, .packages = pk};
        }
        {
                __typeof__(a->bwcap.pt[0]) *q = &a->bwcap.pt[i];
                double w;

                if (q->samples < ALLOCATOR_BWCAP_SAMPLES)
                        q->samples++;
                w = 1.0 / q->samples;
                q->stall += w * (s - q->stall);
                q->speedup += w * (e->speedup - q->speedup);
                hi = i;
        }
        /* Against the fewest cores it held at this clock: stalls there are latency (or the
         * cap already, which only makes the P below lower). */
        lo = hi;
        for (i = 0; i < a->bwcap.n_pt; i++) {
                const __typeof__(a->bwcap.pt[0]) *q = &a->bwcap.pt[i];

                if (q->freq_khz == a->freq_khz && q->samples >= ALLOCATOR_BWCAP_MIN_SAMPLES &&
                    q->cores < a->bwcap.pt[lo].cores)
                        lo = i;
        }
        if (lo == hi)
                return;
        {
                const __typeof__(a->bwcap.pt[0]) *L = &a->bwcap.pt[lo], *H = &a->bwcap.pt[hi];

                if (L->samples < ALLOCATOR_BWCAP_MIN_SAMPLES ||
                    H->samples < ALLOCATOR_BWCAP_MIN_SAMPLES || L->packages != H->packages)
                        return;
                /* Its stalls grew with its cores and the cores added bought nothing: they
                 * only stalled. Stalls of memory latency are the same share at any count;
                 * a spinning app's speedup still rises as Amdahl's law says. */
                if (!((1 - H->stall) <= (1 - L->stall) * (1 - ALLOCATOR_BWCAP_STALL) &&
                      H->speedup <= L->speedup * (1 + ALLOCATOR_BWCAP_FLAT))) {
                        /* No cap at this count: none below it either. */
                        if (a->cores >= a->bwcap.cap_cores)
                                bwcap_clear(a);
                        return;
                }
                stretch = (1 - L->stall) / (1 - H->stall);
                sfree = H->speedup * stretch;
                pf = H->cores > 1 ? (1 - 1 / sfree) / (1 - 1.0 / H->cores) : NAN;
                a->bwcap.cap = H->speedup / H->packages;
                a->bwcap.p_free = isfinite(pf) ? fmin(fmax(pf, 0), 1) : 0;
                a->bwcap.cap_cores = H->cores;
                a->bwcap.cap_freq_khz = H->freq_khz;
        }
}

double alloc_bwcap_time_k(const struct allocator_ctx *ctx, const struct allocator_app *a,
                          unsigned cores, unsigned freq_khz)
{
        const struct estimate *e;
        struct model_prediction at, there;
        double p, cap, capped;

        if (!(a->bwcap.cap > 0) || cores == 0)
                return 1;
        e = estimator_get(ctx->est, a->id);
        if (!e)
                return 1;
        p = model_p(e);
        if (!(p > 0 && p <= 1))
                return 1;
        /* The cap is an instruction rate; over the one-core rate at another clock it is
         * another speedup (a slower core is further from it). */
        cap = a->bwcap.cap * packages_at(ctx, a, cores);
        if (freq_khz && a->bwcap.cap_freq_khz && freq_khz != a->bwcap.cap_freq_khz &&
            estimator_predict(ctx->est, a->id, 1, freq_khz, ctx->pm, &at) == 0 &&
            estimator_predict(ctx->est, a->id, 1, a->bwcap.cap_freq_khz, ctx->pm, &there) == 0 &&
            at.time_s > 0 && there.time_s > 0)
                cap *= at.time_s / there.time_s;
        capped = fmin(amdahl(fmax(p, a->bwcap.p_free), cores), cap);
        return capped > 0 ? amdahl(p, cores) / capped : 1;
}

void alloc_bwcap_note(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        size_t len = strlen(a->reason);

        (void)ctx;
        if (!(a->bwcap.cap > 0))
                return;
        snprintf(a->reason + len, sizeof(a->reason) - len,
                 "; its stalls grow with its cores: speedup capped by memory bandwidth at %.1f "
                 "per package",
                 a->bwcap.cap);
}
