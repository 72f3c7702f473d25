/* Memory bandwidth per package from its measured traffic (docs/allocator.md, "Memory
 * bandwidth per package, measured"). The memory controllers count a package's bytes, not an
 * app's: an app's bytes per instruction comes from a least-squares fit of each package's
 * traffic on the instructions its apps retired there, over recent intervals (one app alone on
 * a package gives it directly), and a package's bandwidth shows only once its apps ask more
 * than it serves: its traffic then stays flat while their busy cycles rise or fall. */

#include "pctl/membw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Weight of the past per interval in the fit: about 20 intervals (2 s at pctld's 100 ms), a
 * few decisions, so that an app's new phase replaces its old bytes per instruction within
 * them, yet many more rows than apps on a package. */
#define MEMBW_DECAY 0.95
/* An app's bytes per instruction is told apart when the other apps' instructions explain
 * less than 9/10 of its own (variance inflation factor below 10, the usual bound of a usable
 * regression coefficient): alone on a package once, or its instructions moved apart from its
 * neighbours'. */
#define MEMBW_VIF_MAX 10.0
/* A steady stretch: the same CPUs held at the same clocks on the package for this many
 * intervals after the one that straddles the change (the allocator's probe length). */
#define MEMBW_STEADY 3
/* Saturated: the demand index moved by at least MEMBW_MOVE between two steady stretches and
 * the traffic by less than MEMBW_FLAT. The flat bound sits above the counters' noise on
 * instructions (0.5-3 % per sample, less on a 3-interval mean), the move well above it: an
 * unsaturated package's traffic follows its demand by about as much. */
#define MEMBW_MOVE 0.10
#define MEMBW_FLAT 0.02
/* The demand index needs the bytes per instruction of the apps that move the package's
 * traffic, not of every app (one that moves none beside a steady neighbour is never told
 * apart): those known must explain the traffic to within 1 - this share, too little to hide
 * a move of MEMBW_MOVE (else a figure of an app's past phase, or an app not told apart,
 * would stand in the index). */
#define MEMBW_EXPLAINED 0.95

struct membw_slot {
        bool used;
        uint64_t id;
        uint64_t seen; /* the update it was last seen in */
        double bpi;    /* bytes per instruction, fitted; NaN: not yet */
        bool known;
};

struct membw_stretch {
        struct cpumask held; /* the apps' CPUs on the package */
        uint64_t clock_sum;  /* Σ kHz over them */
        bool open;
        /* Every interval's traffic was explained by the apps whose bytes per instruction is
         * known (MEMBW_EXPLAINED): the demand index then stands for the whole traffic. */
        bool explained;
        unsigned n;
        double gbs;                       /* Σ traffic, GB/s, over its intervals */
        double cycles_gs[MEMBW_MAX_APPS]; /* Σ each slot's busy Gcycles per second */
};

struct membw {
        uint64_t updates;
        unsigned n_packages;
        struct membw_package pkg[SENSOR_MAX_PACKAGES];
        /* The open stretch, and the last steady one closed (n 0: none). */
        struct membw_stretch cur[SENSOR_MAX_PACKAGES];
        struct membw_stretch prev[SENSOR_MAX_PACKAGES];
        /* The highest steady traffic each package served: its bandwidth's lower bound. */
        double most_gbs[SENSOR_MAX_PACKAGES];
        /* The traffic at which a probe last moved the package's demand (0: never). */
        double probed_gbs[SENSOR_MAX_PACKAGES];
        struct membw_slot slot[MEMBW_MAX_APPS];
        /* Normal equations of traffic (GB) on instructions (G) per slot, decayed. */
        double xtx[MEMBW_MAX_APPS][MEMBW_MAX_APPS];
        double xty[MEMBW_MAX_APPS];
        /* Scratch of one update: the rows (G instructions per slot, per package), the busy
         * cycles behind them, and the solver's [A | I | b]. */
        double x[SENSOR_MAX_PACKAGES][MEMBW_MAX_APPS];
        double cycles[SENSOR_MAX_PACKAGES][MEMBW_MAX_APPS];
        double a[MEMBW_MAX_APPS][2 * MEMBW_MAX_APPS + 1];
};

struct membw *membw_new(void)
{
        struct membw *bw = calloc(1, sizeof(*bw));

        if (!bw)
                return NULL;
        for (unsigned k = 0; k < SENSOR_MAX_PACKAGES; k++)
                bw->pkg[k] = (struct membw_package){
                    .rate_gbs = NAN, .bandwidth_gbs = NAN, .full_demand = NAN, .slack = 1};
        return bw;
}

void membw_free(struct membw *bw)
{
        free(bw);
}

static int slot_find(const struct membw *bw, uint64_t id)
{
        for (unsigned i = 0; i < MEMBW_MAX_APPS; i++)
                if (bw->slot[i].used && bw->slot[i].id == id)
                        return (int)i;
        return -1;
}

static void slot_clear(struct membw *bw, unsigned i)
{
        bw->slot[i] = (struct membw_slot){.bpi = NAN};
        bw->xty[i] = 0;
        for (unsigned j = 0; j < MEMBW_MAX_APPS; j++)
                bw->xtx[i][j] = bw->xtx[j][i] = 0;
}

/* The app's slot, a new one (the least recently seen given up when all are used). */
static unsigned slot_get(struct membw *bw, uint64_t id)
{
        int i = slot_find(bw, id);
        unsigned oldest = 0;

        if (i >= 0)
                return (unsigned)i;
        for (unsigned j = 0; j < MEMBW_MAX_APPS; j++) {
                if (!bw->slot[j].used) {
                        oldest = j;
                        break;
                }
                if (bw->slot[j].seen < bw->slot[oldest].seen)
                        oldest = j;
        }
        slot_clear(bw, oldest);
        bw->slot[oldest].used = true;
        bw->slot[oldest].id = id;
        return oldest;
}

int membw_app_remove(struct membw *bw, uint64_t id)
{
        int i = slot_find(bw, id);

        if (i < 0)
                return -ENOENT;
        slot_clear(bw, (unsigned)i);
        return 0;
}

/* The app's own count on a CPU: its target's where it has one, else the CPU's. */
static const struct sensor_counts *app_counts(const struct sensor_sample *s,
                                              const struct membw_app *a, unsigned cpu)
{
        return a->target >= 0 ? sensor_target_cpu(s, (unsigned)a->target, cpu) : &s->cpu[cpu];
}

static int validate(const struct sensor_sample *s, const struct topology *t,
                    const struct membw_app *apps, unsigned n)
{
        if (!s || !t || s->interval_ns == 0 || s->n_packages > SENSOR_MAX_PACKAGES)
                return -EINVAL;
        if (!s->mem_measured)
                return -ENODATA;
        for (unsigned i = 0; i < n; i++) {
                if (apps[i].target >= 0 && (unsigned)apps[i].target >= s->n_targets)
                        return -EINVAL;
                cpumask_foreach (c, &apps[i].cpus)
                        if ((unsigned)c >= s->n_cpus || (unsigned)c >= t->n_cpus ||
                            (unsigned)t->cpu[c].package >= s->n_packages)
                                return -EINVAL;
        }
        return 0;
}

/* Solves the decayed normal equations over the slots in use (Gauss-Jordan on [A | I], a tiny
 * ridge so that apps never told apart leave it solvable), and marks each slot known by its
 * variance inflation factor A_ii (A^-1)_ii. */
static void fit(struct membw *bw)
{
        double(*a)[2 * MEMBW_MAX_APPS + 1] = bw->a;
        unsigned idx[MEMBW_MAX_APPS], n = 0;
        double trace = 0;

        for (unsigned i = 0; i < MEMBW_MAX_APPS; i++)
                if (bw->slot[i].used && bw->xtx[i][i] > 0) {
                        idx[n++] = i;
                        trace += bw->xtx[i][i];
                }
        for (unsigned r = 0; r < n; r++) {
                for (unsigned c = 0; c < n; c++) {
                        a[r][c] = bw->xtx[idx[r]][idx[c]];
                        a[r][n + c] = r == c;
                }
                a[r][r] += 1e-9 * trace / n;
                a[r][2 * n] = bw->xty[idx[r]];
        }
        for (unsigned p = 0; p < n; p++) {
                unsigned best = p;

                for (unsigned r = p + 1; r < n; r++)
                        if (fabs(a[r][p]) > fabs(a[best][p]))
                                best = r;
                if (!(fabs(a[best][p]) > 0))
                        return; /* nothing to solve: leaves every slot as it was */
                if (best != p)
                        for (unsigned c = 0; c <= 2 * n; c++) {
                                double x = a[p][c];

                                a[p][c] = a[best][c];
                                a[best][c] = x;
                        }
                for (unsigned r = 0; r < n; r++) {
                        double f = a[r][p] / a[p][p];

                        if (r == p || f == 0)
                                continue;
                        for (unsigned c = p; c <= 2 * n; c++)
                                a[r][c] -= f * a[p][c];
                }
        }
        for (unsigned r = 0; r < n; r++) {
                struct membw_slot *sl = &bw->slot[idx[r]];
                double inv_rr = a[r][n + r] / a[r][r];
                double vif = bw->xtx[idx[r]][idx[r]] * inv_rr;

                /* Apps that hold their CPUs steady side by side soon look alike to the fit
                 * (their rows keep one ratio): the figure told apart last stands until the
                 * counts tell it apart again, as it is the app's, not the interval's. */
                if (!(isfinite(vif) && vif < MEMBW_VIF_MAX))
                        continue;
                sl->known = true;
                /* A negative figure is the noise of a small one: no app moves negative bytes. */
                sl->bpi = fmax(a[r][2 * n] / a[r][r], 0);
        }
}

/* The demand index of a stretch, by the bytes per instruction known now (the same figures
 * for the two stretches compared: a figure refitted between them moves nothing): NaN unless
 * every interval's traffic was explained. */
static double stretch_demand(const struct membw *bw, const struct membw_stretch *st)
{
        double d = 0;

        if (!st->explained || st->n == 0)
                return NAN;
        for (unsigned i = 0; i < MEMBW_MAX_APPS; i++)
                if (st->cycles_gs[i] > 0 && bw->slot[i].known)
                        d += bw->slot[i].bpi * st->cycles_gs[i] / st->n;
        return d > 0 ? d : NAN;
}

/* The package's slack while it is full: its demand index now over the least that filled it. */
static void stretch_slack(struct membw_package *p)
{
        bool full = p->bound == MEMBW_BOUND_MEASURED &&
                    p->steady_gbs >= p->bandwidth_gbs * (1 - MEMBW_FLAT) &&
                    isfinite(p->steady_demand);

        if (full)
                p->full_demand = fmin(p->full_demand, p->steady_demand); /* fmin drops a NaN */
        p->slack = full && p->full_demand > 0 ? fmax(p->steady_demand / p->full_demand, 1) : 1;
}

/* Closes or extends package k's steady stretch with this interval, and judges its bandwidth
 * when a stretch becomes steady. */
static void stretch_add(struct membw *bw, unsigned k, const struct cpumask *held,
                        uint64_t clock_sum, double gbs, const double *cycles_gs, bool explained)
{
        struct membw_stretch *st = &bw->cur[k];
        struct membw_package *p = &bw->pkg[k];
        double d_now, d_prev, g_prev;

        if (!st->open || !cpumask_equal(&st->held, held) || st->clock_sum != clock_sum) {
                if (st->open && st->n >= MEMBW_STEADY)
                        bw->prev[k] = *st;
                /* This interval straddles the change: the stretch starts after it. */
                *st = (struct membw_stretch){
                    .held = *held, .clock_sum = clock_sum, .open = true, .explained = true};
                p->steady_n = 0;
                p->steady_gbs = p->steady_demand = NAN;
                p->slack = 1;
                return;
        }
        st->n++;
        st->gbs += gbs;
        st->explained &= explained;
        for (unsigned i = 0; i < MEMBW_MAX_APPS; i++)
                st->cycles_gs[i] += cycles_gs[i];
        p->steady_n = st->n;
        p->steady_gbs = st->gbs / st->n;
        p->steady_demand = stretch_demand(bw, st);
        if (st->n < MEMBW_STEADY)
                return;
        /* Whatever else is known, the package served this much. */
        bw->most_gbs[k] = fmax(bw->most_gbs[k], p->steady_gbs);
        if (p->bound == MEMBW_BOUND_MEASURED && p->steady_gbs > p->bandwidth_gbs * (1 + MEMBW_FLAT))
                p->bound = MEMBW_BOUND_LOWER; /* it served more: that was not its bandwidth */
        if (p->bound != MEMBW_BOUND_MEASURED) {
                p->bound = MEMBW_BOUND_LOWER;
                p->bandwidth_gbs = bw->most_gbs[k];
                p->full_demand = NAN;
        }
        stretch_slack(p);
        if (st->n != MEMBW_STEADY || !bw->prev[k].n)
                return;
        d_now = p->steady_demand;
        d_prev = stretch_demand(bw, &bw->prev[k]);
        g_prev = bw->prev[k].gbs / bw->prev[k].n;
        if (!(d_now > 0) || !(d_prev > 0) || !(g_prev > 0))
                return;
        /* Flat below the most it ever served is not its bandwidth: the apps there asked
         * less than it can give, whatever their cycles did (a clock or a phase moved them). */
        if (fabs(d_now / d_prev - 1) >= MEMBW_MOVE &&
            fabs(p->steady_gbs / g_prev - 1) < MEMBW_FLAT &&
            fmax(p->steady_gbs, g_prev) * (1 + MEMBW_FLAT) >= bw->most_gbs[k]) {
                p->bound = MEMBW_BOUND_MEASURED;
                p->bandwidth_gbs = fmax(p->steady_gbs, g_prev);
                p->full_demand = fmin(d_now, d_prev);
                stretch_slack(p);
        }
}

int membw_update(struct membw *bw, const struct sensor_sample *s, const struct topology *t,
                 const struct membw_app *apps, unsigned n_apps)
{
        const double dt_s = s ? s->interval_ns * 1e-9 : 0;
        double(*x)[MEMBW_MAX_APPS] = bw->x, (*cycles)[MEMBW_MAX_APPS] = bw->cycles;
        bool row_ok[SENSOR_MAX_PACKAGES], used[SENSOR_MAX_PACKAGES] = {false};
        struct cpumask held[SENSOR_MAX_PACKAGES];
        uint64_t clock_sum[SENSOR_MAX_PACKAGES] = {0};
        int r = validate(s, t, apps, n_apps);

        if (r < 0)
                return r;
        bw->updates++;
        bw->n_packages = s->n_packages;
        for (unsigned k = 0; k < s->n_packages; k++) {
                row_ok[k] = true;
                cpumask_zero(&held[k]);
                memset(x[k], 0, sizeof(x[k]));
                memset(cycles[k], 0, sizeof(cycles[k]));
        }
        for (unsigned i = 0; i < n_apps && i < MEMBW_MAX_APPS; i++) {
                const struct membw_app *a = &apps[i];
                double w[SENSOR_MAX_PACKAGES] = {0}, w_all = 0;
                unsigned sl = slot_get(bw, a->id);

                bw->slot[sl].seen = bw->updates;
                cpumask_foreach (c, &a->cpus) {
                        const struct sensor_counts *cc = app_counts(s, a, (unsigned)c);
                        unsigned k = (unsigned)t->cpu[c].package;

                        used[k] = true;
                        cpumask_set(&held[k], c);
                        clock_sum[k] += a->freq_khz;
                        if (!cc || !(cc->measured & SENSOR_INSTR) ||
                            !(cc->measured & SENSOR_CYCLES)) {
                                row_ok[k] = false;
                                continue;
                        }
                        w[k] += (double)cc->instr;
                        w_all += (double)cc->instr;
                        cycles[k][sl] += (double)cc->cycles;
                }
                /* Its I0 split over the packages as its CPUs retired instructions there. */
                for (unsigned k = 0; k < s->n_packages; k++) {
                        if (!(w[k] > 0))
                                continue;
                        if (!isfinite(a->i0) || !(w_all > 0))
                                row_ok[k] = false;
                        else
                                x[k][sl] = a->i0 * w[k] / w_all * 1e-9;
                }
        }
        for (unsigned i = 0; i < MEMBW_MAX_APPS; i++) {
                bw->xty[i] *= MEMBW_DECAY;
                for (unsigned j = 0; j < MEMBW_MAX_APPS; j++)
                        bw->xtx[i][j] *= MEMBW_DECAY;
        }
        /* Traffic of a package no app runs on is not theirs (unmanaged work): not a row. */
        for (unsigned k = 0; k < s->n_packages; k++) {
                double y = s->mem_bytes[k] * 1e-9;

                if (!used[k] || !row_ok[k] || !isfinite(y) || y < 0)
                        continue;
                for (unsigned i = 0; i < MEMBW_MAX_APPS; i++) {
                        if (x[k][i] == 0)
                                continue;
                        bw->xty[i] += x[k][i] * y;
                        for (unsigned j = 0; j < MEMBW_MAX_APPS; j++)
                                bw->xtx[i][j] += x[k][i] * x[k][j];
                }
        }
        fit(bw);
        for (unsigned k = 0; k < s->n_packages; k++) {
                struct membw_package *p = &bw->pkg[k];
                double gbs = s->mem_bytes[k] * 1e-9 / dt_s, explained_gb = 0;

                p->rate_gbs = isfinite(gbs) && gbs >= 0 ? gbs : NAN;
                /* The demand index: the bytes its apps' busy cycles would move at one
                 * instruction per cycle. The traffic follows it while the package has
                 * bandwidth to spare; cycles that wait on a full package move nothing. */
                for (unsigned i = 0; i < MEMBW_MAX_APPS; i++) {
                        cycles[k][i] *= 1e-9 / dt_s;
                        if (bw->slot[i].known)
                                explained_gb += bw->slot[i].bpi * x[k][i];
                }
                if (isnan(p->rate_gbs))
                        continue;
                stretch_add(bw, k, &held[k], clock_sum[k], p->rate_gbs, cycles[k],
                            row_ok[k] && fabs(explained_gb - s->mem_bytes[k] * 1e-9) <=
                                             (1 - MEMBW_EXPLAINED) * s->mem_bytes[k] * 1e-9);
        }
        return 0;
}

int membw_bytes_per_instr(const struct membw *bw, uint64_t id, double *out)
{
        int i = slot_find(bw, id);

        if (i < 0)
                return -ENOENT;
        if (!bw->slot[i].known)
                return -ENODATA;
        *out = bw->slot[i].bpi;
        return 0;
}

const struct membw_package *membw_package(const struct membw *bw, unsigned k)
{
        if (k >= bw->n_packages || isnan(bw->pkg[k].rate_gbs))
                return NULL;
        return &bw->pkg[k];
}

unsigned membw_n_packages(const struct membw *bw)
{
        return bw->n_packages;
}

int membw_bandwidth(const struct membw *bw, unsigned k, double *gbs)
{
        const struct membw_package *p = membw_package(bw, k);
        double best = NAN;

        if (!p)
                return -ENODATA;
        if (p->bound == MEMBW_BOUND_MEASURED) {
                *gbs = p->bandwidth_gbs;
                return 0;
        }
        for (unsigned j = 0; j < bw->n_packages; j++) {
                const struct membw_package *q = membw_package(bw, j);

                /* Flat within MEMBW_FLAT is how its bound was measured: more than that above
                 * it, package k is not alike. */
                if (q && q->bound == MEMBW_BOUND_MEASURED &&
                    !(p->bandwidth_gbs > q->bandwidth_gbs * (1 + MEMBW_FLAT)) &&
                    !(q->bandwidth_gbs <= best))
                        best = q->bandwidth_gbs;
        }
        if (isnan(best))
                return -ENODATA;
        *gbs = best;
        return 1;
}

bool membw_probe_wanted(const struct membw *bw, unsigned k)
{
        const struct membw_package *p = membw_package(bw, k);
        double gbs;

        /* Only a package at the most it ever served can be full; one already probed at that
         * traffic showed what a probe shows (measured, or not full), until it serves more. */
        return p && p->bound == MEMBW_BOUND_LOWER && membw_bandwidth(bw, k, &gbs) < 0 &&
               p->steady_n >= MEMBW_STEADY && isfinite(p->steady_demand) &&
               p->steady_gbs >= bw->most_gbs[k] * (1 - MEMBW_FLAT) &&
               !(bw->probed_gbs[k] * (1 + MEMBW_FLAT) >= bw->most_gbs[k]);
}

int membw_probe_started(struct membw *bw, unsigned k)
{
        if (k >= bw->n_packages)
                return -EINVAL;
        bw->probed_gbs[k] = bw->most_gbs[k];
        return 0;
}

const char *membw_bound_to_string(enum membw_bound b)
{
        switch (b) {
        case MEMBW_BOUND_LOWER:
                return "a lower bound";
        case MEMBW_BOUND_MEASURED:
                return "measured: flat traffic while its apps' busy cycles moved";
        case MEMBW_BOUND_NONE:
        default:
                return "not measured yet";
        }
}

int membw_describe(const struct membw *bw, unsigned k, char *buf, size_t size)
{
        const struct membw_package *p = membw_package(bw, k);

        if (!p)
                return -ENODATA;
        if (p->bound == MEMBW_BOUND_NONE)
                snprintf(buf, size, "%.1f GB/s, bandwidth %s", p->rate_gbs,
                         membw_bound_to_string(p->bound));
        else if (p->slack > 1)
                snprintf(buf, size,
                         "%.1f GB/s, bandwidth = %.1f GB/s (%s), full: its apps ask %.2f times "
                         "what filled it",
                         p->rate_gbs, p->bandwidth_gbs, membw_bound_to_string(p->bound), p->slack);
        else
                snprintf(buf, size, "%.1f GB/s, bandwidth %s %.1f GB/s (%s)", p->rate_gbs,
                         p->bound == MEMBW_BOUND_MEASURED ? "=" : ">=", p->bandwidth_gbs,
                         membw_bound_to_string(p->bound));
        return 0;
}
