/* The partition oracle: the best static partition of the machine for all of a scenario's apps
 * running at once (each app its own CPUs, one frequency per package), by the sum over apps of
 * each app's objective. Exhaustive on small machines; on large ones dynamic programming over
 * apps and core counts per package frequency, on tables measured alone, with the shared
 * static pool charged by a separable rule; the answer is always one measured run.
 * docs/sim.md, "The partition oracle", says what is exact and what is not. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/util.h"
#include "sim_internal.h"

/* The DP keeps per-package state vectors up to this many states; beyond it (many packages)
 * only one shared frequency for the whole machine is searched. */
#define DP_MAX_STATES (1u << 16)
/* Rounds of the pool-rate fixed point per frequency assignment. */
#define DP_POOL_ROUNDS 6
/* Alone runs for the tables: one step this long covers any app of a scenario. */
#define TABLE_STEP_NS (1000000ULL * NSEC_PER_SEC)

static const char *const method_names[] = {
    [SIM_TOGETHER_AUTO] = "auto",
    [SIM_TOGETHER_EXHAUSTIVE] = "exhaustive",
    [SIM_TOGETHER_DP] = "dp",
};

int sim_together_method_parse(const char *s, enum sim_together_method *out)
{
        for (size_t i = 0; i < ARRAY_SIZE(method_names); i++)
                if (strcmp(s, method_names[i]) == 0) {
                        *out = (enum sim_together_method)i;
                        return 0;
                }
        return -EINVAL;
}

const char *sim_together_method_name(enum sim_together_method m)
{
        return (size_t)m < ARRAY_SIZE(method_names) ? method_names[m] : "?";
}

int sim_partition_alloc(struct sim_partition *p, unsigned n_apps, unsigned n_packages)
{
        *p = (struct sim_partition){.n_apps = n_apps, .n_packages = n_packages};
        p->cores = calloc((size_t)(n_apps ? n_apps : 1) * n_packages, sizeof(unsigned));
        p->freq_mhz = calloc(n_packages ? n_packages : 1, sizeof(unsigned));
        if (!p->cores || !p->freq_mhz) {
                sim_partition_free(p);
                return -ENOMEM;
        }
        return 0;
}

void sim_partition_free(struct sim_partition *p)
{
        if (!p)
                return;
        free(p->cores);
        free(p->freq_mhz);
        p->cores = p->freq_mhz = NULL;
}

static void partition_copy(struct sim_partition *dst, const struct sim_partition *src)
{
        memcpy(dst->cores, src->cores, (size_t)src->n_apps * src->n_packages * sizeof(unsigned));
        memcpy(dst->freq_mhz, src->freq_mhz, src->n_packages * sizeof(unsigned));
}

static unsigned app_cores(const struct sim_partition *p, unsigned app)
{
        unsigned n = 0;

        for (unsigned q = 0; q < p->n_packages; q++)
                n += p->cores[app * p->n_packages + q];
        return n;
}

int sim_partition_run(const struct sim_machine *m, const struct sim_partition *p, uint64_t step_ns,
                      struct sim_result *apps, double *time_s, double *energy_j)
{
        struct sim_machine *run;
        bool *taken;
        double end_s = 0;
        int r;

        if (p->n_apps != m->n_apps || p->n_apps != m->sc->n_apps ||
            p->n_packages != m->n_packages || step_ns == 0)
                return -EINVAL;
        taken = calloc(m->n_cpus, sizeof(bool));
        if (!taken)
                return -ENOMEM;
        r = sim_machine_new_truth(m->sc, -1, &run);
        if (r < 0) {
                free(taken);
                return r;
        }
        /* Each app takes the lowest free CPUs of each package it has a share of. */
        for (unsigned i = 0; r == 0 && i < p->n_apps; i++) {
                struct cpumask set;

                cpumask_zero(&set);
                for (unsigned q = 0; r == 0 && q < p->n_packages; q++) {
                        unsigned want = p->cores[i * p->n_packages + q];

                        for (unsigned c = 0; want > 0 && c < run->n_cpus; c++)
                                if (run->cpu_pkg[c] == q && !taken[c]) {
                                        taken[c] = true;
                                        cpumask_set(&set, c);
                                        want--;
                                }
                        if (want > 0)
                                r = -ENOSPC;
                }
                if (r == 0)
                        r = sim_set_cpus(run, i, &set); /* -EINVAL: an app without CPUs */
        }
        for (unsigned q = 0; r == 0 && q < p->n_packages; q++)
                r = sim_set_freq(run, q, p->freq_mhz[q]);
        while (r == 0 && !sim_done(run))
                r = sim_step(run, step_ns);
        for (unsigned i = 0; r == 0 && i < p->n_apps; i++) {
                struct sim_app_truth t;

                r = sim_truth_app(run, i, &t);
                if (r < 0)
                        break;
                apps[i] = (struct sim_result){
                    .cores = t.cores,
                    .freq_mhz = t.freq_mhz,
                    .time_s = t.time_s,
                    .energy_j = t.energy_j,
                    .instructions = t.instructions_total,
                    .p_true = t.p_true,
                };
                end_s = fmax(end_s, t.start_s + t.time_s);
        }
        if (r == 0) {
                *time_s = end_s;
                *energy_j = sim_truth_energy_j(run);
        }
        sim_free(run);
        free(taken);
        return r;
}

static double score_sum(enum sim_objective o, const struct sim_result *apps, unsigned n)
{
        double s = 0;

        for (unsigned i = 0; i < n; i++)
                s += sim_objective_score(o, &apps[i]);
        return s;
}

/* Whether a rows app may run at (cores, freq): only its grid points, as for one app alone. */
static bool app_allows(const struct sim_app_spec *s, unsigned cores, unsigned freq_mhz)
{
        bool c_ok = false, f_ok = false;

        if (s->n_rows == 0)
                return true;
        for (unsigned i = 0; i < s->n_gc; i++)
                c_ok |= s->gc[i] == cores;
        for (unsigned i = 0; i < s->n_gf; i++)
                f_ok |= s->gf[i] == freq_mhz;
        return c_ok && f_ok;
}

/* The slowest frequency among an app's packages, or 0 when it has no CPUs. */
static unsigned app_freq(const struct sim_partition *p, unsigned app)
{
        unsigned f = 0;

        for (unsigned q = 0; q < p->n_packages; q++)
                if (p->cores[app * p->n_packages + q] > 0 && (f == 0 || p->freq_mhz[q] < f))
                        f = p->freq_mhz[q];
        return f;
}

/* ---- Exhaustive search: every count of CPUs per app and package, every frequency per
 * package, each one run on the machine. */

struct enum_state {
        const struct sim_machine *m;
        struct sim_partition cur;
        unsigned *free_in;          /* [n_packages] */
        unsigned long count, limit; /* counting stops past limit */
        bool counting;
        /* search */
        enum sim_objective o;
        uint64_t step_ns;
        struct sim_result *apps, *best_apps;
        struct sim_together *out;
        int r;
};

static void try_freqs(struct enum_state *e, unsigned q)
{
        const struct sim_machine_spec *ms = &e->m->sc->mach;

        if (e->r < 0)
                return;
        if (q < e->cur.n_packages) {
                for (unsigned fi = 0; fi < ms->n_freqs; fi++) {
                        e->cur.freq_mhz[q] = ms->freqs_mhz[fi];
                        try_freqs(e, q + 1);
                }
                return;
        }
        for (unsigned i = 0; i < e->cur.n_apps; i++)
                if (!app_allows(e->m->apps[i].spec, app_cores(&e->cur, i), app_freq(&e->cur, i)))
                        return;
        if (e->counting) {
                e->count++;
                return;
        }
        double t_s, e_j;
        e->r = sim_partition_run(e->m, &e->cur, e->step_ns, e->apps, &t_s, &e_j);
        if (e->r < 0)
                return;
        e->out->runs++;
        double s = score_sum(e->o, e->apps, e->cur.n_apps);
        if (s < e->out->score) {
                e->out->score = s;
                e->out->time_s = t_s;
                e->out->energy_j = e_j;
                partition_copy(&e->out->best, &e->cur);
                memcpy(e->best_apps, e->apps, e->cur.n_apps * sizeof(*e->apps));
        }
}

/* Cell k of the app x package matrix, row-major. Every app gets at least one CPU: a branch
 * that leaves an app none, or fewer free CPUs than apps still to place, is cut. */
static void try_counts(struct enum_state *e, unsigned k)
{
        unsigned np = e->cur.n_packages, i = k / np, q = k % np;

        if (e->r < 0 || (e->counting && e->count > e->limit))
                return;
        if (k == e->cur.n_apps * np) {
                try_freqs(e, 0);
                return;
        }
        for (unsigned c = 0; c <= e->free_in[q]; c++) {
                e->cur.cores[k] = c;
                e->free_in[q] -= c;
                if (q + 1 == np) {
                        unsigned left = 0;

                        for (unsigned p = 0; p < np; p++)
                                left += e->free_in[p];
                        if (app_cores(&e->cur, i) > 0 && left >= e->cur.n_apps - i - 1)
                                try_counts(e, k + 1);
                } else {
                        try_counts(e, k + 1);
                }
                e->free_in[q] += c;
        }
        e->cur.cores[k] = 0;
}

static int enum_init(struct enum_state *e, const struct sim_machine *m)
{
        *e = (struct enum_state){.m = m};
        e->free_in = calloc(m->n_packages, sizeof(unsigned));
        if (!e->free_in || sim_partition_alloc(&e->cur, m->n_apps, m->n_packages) < 0) {
                free(e->free_in);
                return -ENOMEM;
        }
        for (unsigned c = 0; c < m->n_cpus; c++)
                e->free_in[m->cpu_pkg[c]]++;
        return 0;
}

static void enum_done(struct enum_state *e)
{
        free(e->free_in);
        sim_partition_free(&e->cur);
}

unsigned long sim_together_count(const struct sim_machine *m, unsigned long limit)
{
        struct enum_state e;

        if (m->n_apps == 0 || m->n_apps > m->n_cpus || enum_init(&e, m) < 0)
                return 0;
        e.counting = true;
        e.limit = limit;
        try_counts(&e, 0);
        enum_done(&e);
        return e.count;
}

static int together_exhaustive(const struct sim_machine *m, enum sim_objective o, uint64_t step_ns,
                               struct sim_together *out)
{
        struct enum_state e;
        int r = enum_init(&e, m);

        if (r < 0)
                return r;
        e.o = o;
        e.step_ns = step_ns;
        e.out = out;
        e.apps = calloc(m->n_apps, sizeof(*e.apps));
        if (!e.apps) {
                enum_done(&e);
                return -ENOMEM;
        }
        e.best_apps = out->apps;
        out->score = INFINITY;
        try_counts(&e, 0);
        r = e.r;
        if (r == 0 && out->runs == 0)
                r = -ENODATA;
        free(e.apps);
        enum_done(&e);
        return r;
}

/* ---- Dynamic programming on tables measured alone. */

/* One app alone on some CPUs: its time and the energy that does not depend on the other apps
 * (dynamic energy of its busy CPUs, leakage of its held ones). The tables hold it at (cores,
 * P-state) without a bandwidth limit; cand_for() prices any count per package at any P-state
 * per package from them. */
struct cand {
        bool ok;
        double time_s, own_j;    /* alone, its own memory traffic included */
        double free_s, own_w;    /* without any bandwidth limit; its own power (stalls included) */
        double demand_bps;       /* memory traffic at the free rate (instructions retired), B/s */
        double busy0_s, busy1_s; /* busy seconds of lane 0 and of each other lane, free run */
        double instructions, p_true;
};

/* DP work (states x choices x apps x P-state vectors x pool rounds) up to which every count
 * per package and every P-state per package is searched; beyond it (the 2 x 32 server) the
 * restricted spaces of dp_shared and dp_packages, and the single moves. 2e8 keeps the 2 x 6
 * Xeon with 6 apps (49 x 49 x 6 x 64 x 6 = 5.5e6) well inside and one scenario's search under
 * about a second. */
#define DP_MAX_WORK 2e8

struct dp_ctx {
        const struct sim_machine *m;
        enum sim_objective o;
        unsigned n_apps, n_cpus, n_pkgs, n_freqs, cpp; /* cpp: CPUs per package */
        struct cand *tab;                              /* [app][cores 0..n_cpus][freq index] */
        double pool_w;                                 /* uncore of every package */
        double idle_cpu_w, static_cpu_w;
        double bw_bps; /* memory bandwidth per package; 0: unlimited */
        double *dyn_w; /* [freq index]: one busy CPU's dynamic power */
        double *start_s;
        /* scratch for the evaluator */
        double *ev_t, *ev_pool, *ev_own, *ev_rem, *ev_busy; /* ev_busy: [app][package] */
        unsigned *ev_cores, *ev_fv;
        struct cand *ev_c;
        unsigned long evaluated;
};

static struct cand *cand_at(const struct dp_ctx *x, unsigned app, unsigned cores, unsigned fi)
{
        return &x->tab[((size_t)app * (x->n_cpus + 1) + cores) * x->n_freqs + fi];
}

static unsigned freq_index(const struct dp_ctx *x, unsigned freq_mhz)
{
        const struct sim_machine_spec *ms = &x->m->sc->mach;

        for (unsigned fi = 0; fi < ms->n_freqs; fi++)
                if (ms->freqs_mhz[fi] == freq_mhz)
                        return fi;
        return UINT_MAX;
}

/* CPUs an app keeps busy: its threads, at most its CPUs (as the machine counts them). */
static unsigned busy_cpus(const struct dp_ctx *x, const struct sim_app_spec *s, unsigned cores)
{
        unsigned threads = s->threads ? s->threads : x->n_cpus;

        return s->n_rows > 0 || cores < threads ? cores : threads;
}

/* The busy lanes of an app in each package (out[n_pkgs]): lane j runs on the j-th CPU of its
 * set, and the set runs package by package. */
static unsigned lanes_split(const struct dp_ctx *x, const struct sim_app_spec *s,
                            const unsigned *cores_per_pkg, unsigned cores, unsigned *out)
{
        unsigned k = busy_cpus(x, s, cores), left = k;

        for (unsigned q = 0; q < x->n_pkgs; q++) {
                out[q] = cores_per_pkg[q] < left ? cores_per_pkg[q] : left;
                left -= out[q];
        }
        return k;
}

/* The share of an app's memory traffic on each package (out[n_pkgs]). */
static void busy_split(const struct dp_ctx *x, const struct sim_app_spec *s,
                       const unsigned *cores_per_pkg, unsigned cores, double *out)
{
        unsigned lanes[SENSOR_MAX_PACKAGES];
        unsigned k = lanes_split(x, s, cores_per_pkg, cores, lanes);

        for (unsigned q = 0; q < x->n_pkgs; q++)
                out[q] = k ? (double)lanes[q] / k : 0;
}

/* App i with cores[q] CPUs in package q at P-state index fv[q], alone: it runs at its slowest
 * package's clock (its threads meet at barriers), each busy CPU burns the dynamic power of its
 * own package's clock, and its traffic on each package is its lanes' share there, slowed by the
 * most loaded package's demand over the bandwidth (as sim_step). From the free run at (total
 * CPUs, slowest clock). False where it cannot run (no CPUs, outside a rows app's grid). */
static bool cand_for(const struct dp_ctx *x, unsigned i, const unsigned *cores, const unsigned *fv,
                     struct cand *out)
{
        const struct sim_machine_spec *ms = &x->m->sc->mach;
        const struct sim_app_spec *s = x->m->apps[i].spec;
        unsigned c = 0, fmin = UINT_MAX, lanes[SENSOR_MAX_PACKAGES];
        bool one_clock = true;

        for (unsigned q = 0; q < x->n_pkgs; q++) {
                if (cores[q] == 0)
                        continue;
                c += cores[q];
                if (fmin != UINT_MAX && fv[q] != fmin)
                        one_clock = false;
                if (fmin == UINT_MAX || ms->freqs_mhz[fv[q]] < ms->freqs_mhz[fmin])
                        fmin = fv[q];
        }
        if (c == 0 || !cand_at(x, i, c, fmin)->ok)
                return false;
        *out = *cand_at(x, i, c, fmin);
        /* A rows app's power is its row's at the clock it runs at, wherever its CPUs are. */
        if (s->n_rows > 0)
                return true;
        unsigned k = lanes_split(x, s, cores, c, lanes);
        double own_free_j = out->own_j, st = 1;

        if (!one_clock) {
                own_free_j = x->static_cpu_w * c * out->free_s;
                for (unsigned q = 0, lane = 0; q < x->n_pkgs; lane += lanes[q], q++) {
                        double busy_s = lanes[q] == 0 ? 0
                                        : lane == 0   ? out->busy0_s + (lanes[q] - 1) * out->busy1_s
                                                      : lanes[q] * out->busy1_s;
                        own_free_j += x->dyn_w[fv[q]] * busy_s;
                }
        }
        for (unsigned q = 0; x->bw_bps > 0 && q < x->n_pkgs; q++)
                if (lanes[q] > 0)
                        st = fmax(st, out->demand_bps * lanes[q] / k / x->bw_bps);
        out->own_w = own_free_j / out->free_s;
        out->time_s = out->free_s * st;
        out->own_j = own_free_j * st;
        return true;
}

/* Alone, from time 0, on CPUs 0..cores-1, every package at the frequency, without a bandwidth
 * limit, in one long step. Time and own energy are then exact at any step (leakage and dynamic
 * energy follow its active and busy time, phases are split inside a step); only its pool share
 * is not (the step's idle energy after its end), and the tables do not use it. own_j here is
 * the free run's; cand_for() adds the bandwidth's stretch for a placement. */
static int table_fill(struct dp_ctx *x)
{
        const struct sim_machine_spec *ms = &x->m->sc->mach;
        /* The same scenario without a bandwidth limit: the free time and the traffic, from which
         * the evaluator works out the slow-down of apps that share a package. */
        struct sim_scenario free_sc = *x->m->sc;
        int r = 0;

        free_sc.mach.mem_bandwidth_gbs = 0;

        for (unsigned i = 0; r == 0 && i < x->n_apps; i++) {
                const struct sim_app_spec *s = x->m->apps[i].spec;

                for (unsigned c = 1; r == 0 && c <= x->n_cpus; c++)
                        for (unsigned fi = 0; r == 0 && fi < x->n_freqs; fi++) {
                                struct cand *k = cand_at(x, i, c, fi);
                                struct sim_machine *a;
                                struct sim_app_truth t;
                                struct cpumask set;

                                if (!app_allows(s, c, ms->freqs_mhz[fi]))
                                        continue;
                                r = sim_machine_new_truth(&free_sc, (int)i, &a);
                                if (r < 0)
                                        break;
                                cpumask_zero(&set);
                                for (unsigned j = 0; j < c; j++)
                                        cpumask_set(&set, j);
                                r = sim_set_cpus(a, 0, &set);
                                for (unsigned q = 0; r == 0 && q < x->n_pkgs; q++)
                                        r = sim_set_freq(a, q, ms->freqs_mhz[fi]);
                                while (r == 0 && !sim_done(a))
                                        r = sim_step(a, TABLE_STEP_NS);
                                if (r == 0)
                                        r = sim_truth_app(a, 0, &t);
                                if (r == 0) {
                                        double own_j = t.energy_j - t.pool_j;
                                        unsigned lanes = busy_cpus(x, s, c);
                                        /* Instructions retired, extra work included: the
                                         * traffic follows them, not the progress. */
                                        double retired =
                                            t.instructions_total *
                                            (1 + s->extra_work * (lanes > 1 ? lanes - 1.0 : 0));

                                        *k = (struct cand){
                                            .ok = true,
                                            .time_s = t.time_s,
                                            .own_j = own_j,
                                            .free_s = t.time_s,
                                            .own_w = own_j / t.time_s,
                                            .demand_bps =
                                                s->n_rows > 0
                                                    ? 0
                                                    : retired / t.time_s * s->mem_bytes_per_instr,
                                            .busy0_s = a->app_cpu[0].busy_ns / 1e9,
                                            .busy1_s = c > 1 ? a->app_cpu[1].busy_ns / 1e9 : 0,
                                            .instructions = t.instructions_total,
                                            .p_true = t.p_true,
                                        };
                                }
                                sim_free(a);
                        }
        }
        return r;
}

static double cand_score(const struct dp_ctx *x, const struct cand *k, double pool_j)
{
        struct sim_result res = {
            .time_s = k->time_s, .energy_j = k->own_j + pool_j, .instructions = k->instructions};

        return sim_objective_score(x->o, &res);
}

/* An app's slow-down now: its most contended package's demand over the bandwidth, for apps with
 * memory traffic (the others do not wait on memory). */
static double app_stretch(const struct dp_ctx *x, unsigned i, const double *demand)
{
        double st = 1;

        if (x->bw_bps <= 0 || x->ev_c[i].demand_bps <= 0)
                return 1;
        for (unsigned q = 0; q < x->n_pkgs; q++)
                if (x->ev_busy[i * x->n_pkgs + q] > 0)
                        st = fmax(st, demand[q] / x->bw_bps);
        return st;
}

/* The partition's score in continuous time from the tables, event by event (starts and ends):
 * each app progresses at its free rate, slowed, if it has memory traffic, by the demand of the
 * apps running on its packages over their bandwidth (as sim_step slows it); its own energy
 * runs at its own power; the pool (uncore, and idle power of CPUs no running app holds) is
 * split evenly among the apps running, as sim_step splits it. pool_out (may be NULL) gets each
 * app's pool energy, x->ev_t each app's time. INFINITY when an app has no CPUs or sits where
 * its rows do not reach. */
static double evaluate(struct dp_ctx *x, const struct sim_partition *p, double *pool_out)
{
        unsigned n = x->n_apps, P = x->n_pkgs, left = n;
        double total = 0, t_s = INFINITY, demand[SENSOR_MAX_PACKAGES];

        x->evaluated++;
        for (unsigned q = 0; q < P; q++) {
                x->ev_fv[q] = freq_index(x, p->freq_mhz[q]);
                if (x->ev_fv[q] == UINT_MAX)
                        return INFINITY;
        }
        for (unsigned i = 0; i < n; i++) {
                if (!cand_for(x, i, &p->cores[i * P], x->ev_fv, &x->ev_c[i]))
                        return INFINITY;
                x->ev_cores[i] = app_cores(p, i);
                x->ev_rem[i] = 1;
                x->ev_own[i] = x->ev_pool[i] = 0;
                x->ev_t[i] = NAN;
                busy_split(x, x->m->apps[i].spec, &p->cores[i * P], x->ev_cores[i],
                           &x->ev_busy[i * P]);
                t_s = fmin(t_s, x->start_s[i]);
        }
        /* At most one event per start and per end. */
        for (unsigned ev = 0; left > 0 && ev <= 2 * n; ev++) {
                unsigned running = 0, held = 0;
                double next_s = INFINITY;

                for (unsigned q = 0; q < P; q++)
                        demand[q] = 0;
                for (unsigned i = 0; i < n; i++)
                        if (x->start_s[i] <= t_s && isnan(x->ev_t[i])) {
                                running++;
                                held += x->ev_cores[i];
                                for (unsigned q = 0; q < P; q++)
                                        demand[q] += x->ev_c[i].demand_bps * x->ev_busy[i * P + q];
                        }
                /* The next start or end. */
                for (unsigned i = 0; i < n; i++) {
                        if (!isnan(x->ev_t[i]))
                                continue;
                        if (x->start_s[i] > t_s) {
                                next_s = fmin(next_s, x->start_s[i]);
                                continue;
                        }
                        next_s = fmin(next_s, t_s + x->ev_rem[i] * x->ev_c[i].free_s *
                                                        app_stretch(x, i, demand));
                }
                if (!isfinite(next_s))
                        break;
                double dt_s = next_s - t_s;
                double share_j =
                    running
                        ? (x->pool_w + x->idle_cpu_w * (double)(x->n_cpus - held)) * dt_s / running
                        : 0;
                for (unsigned i = 0; i < n; i++) {
                        if (x->start_s[i] > t_s || !isnan(x->ev_t[i]))
                                continue;
                        double st = app_stretch(x, i, demand);
                        double end_s = t_s + x->ev_rem[i] * x->ev_c[i].free_s * st;

                        x->ev_own[i] += x->ev_c[i].own_w * dt_s;
                        x->ev_pool[i] += share_j;
                        if (end_s <= next_s) {
                                x->ev_t[i] = next_s - x->start_s[i];
                                left--;
                        } else {
                                x->ev_rem[i] -= dt_s / (x->ev_c[i].free_s * st);
                        }
                }
                t_s = next_s;
        }
        for (unsigned i = 0; i < n; i++) {
                struct sim_result res = {.time_s = x->ev_t[i],
                                         .energy_j = x->ev_own[i] + x->ev_pool[i],
                                         .instructions = x->ev_c[i].instructions};

                if (isnan(x->ev_t[i]))
                        return INFINITY;
                total += sim_objective_score(x->o, &res);
                if (pool_out)
                        pool_out[i] = x->ev_pool[i];
        }
        return total;
}

/* App i's separable cost with cores[q] CPUs in each package at P-states fv: its objective with
 * its pool charged at rate_w per second of its run; INFINITY where it cannot run. */
static double cost_for(const struct dp_ctx *x, unsigned i, const unsigned *cores,
                       const unsigned *fv, double rate_w)
{
        struct cand k;

        if (!cand_for(x, i, cores, fv, &k))
                return INFINITY;
        return cand_score(x, &k, rate_w * k.time_s);
}

/* The DP's best final state of S: its index, or -ENOENT when no partition reached one. */
static int dp_best_state(const double *cur, unsigned S)
{
        unsigned best = 0;

        for (unsigned s = 1; s < S; s++)
                if (cur[s] < cur[best])
                        best = s;
        return isfinite(cur[best]) ? (int)best : -ENOENT;
}

/* Every partition: a P-state per package (fv, indices) and any count of CPUs per package for
 * each app. The state is the CPUs used in each package, in mixed radix (cpp + 1); an app's
 * choice is a vector of counts in the same radix, added digit by digit. Minimises the sum of
 * cost_for() exactly. */
static int dp_full(struct dp_ctx *x, const unsigned *fv, const double *rate_w,
                   struct sim_partition *out)
{
        unsigned n = x->n_apps, P = x->n_pkgs, R = x->cpp + 1, S = 1;
        int r = 0;

        for (unsigned q = 0; q < P; q++)
                S *= R;
        double *cur = malloc(S * sizeof(double)), *nxt = malloc(S * sizeof(double));
        double *cost = malloc(S * sizeof(double));
        unsigned *choice = malloc((size_t)n * S * sizeof(unsigned));
        unsigned *digits = malloc((size_t)S * P * sizeof(unsigned));
        if (!cur || !nxt || !cost || !choice || !digits) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned s = 0; s < S; s++)
                for (unsigned q = 0, rest = s; q < P; q++, rest /= R)
                        digits[(size_t)s * P + q] = rest % R;
        for (unsigned s = 0; s < S; s++)
                cur[s] = s == 0 ? 0 : INFINITY;
        for (unsigned i = 0; i < n; i++) {
                cost[0] = INFINITY;
                for (unsigned v = 1; v < S; v++)
                        cost[v] = cost_for(x, i, &digits[(size_t)v * P], fv, rate_w[i]);
                for (unsigned s = 0; s < S; s++)
                        nxt[s] = INFINITY;
                for (unsigned s = 0; s < S; s++) {
                        if (!isfinite(cur[s]))
                                continue;
                        for (unsigned v = 1; v < S; v++) {
                                bool fits = isfinite(cost[v]);

                                for (unsigned q = 0; fits && q < P; q++)
                                        fits =
                                            digits[(size_t)s * P + q] + digits[(size_t)v * P + q] <
                                            R;
                                if (!fits)
                                        continue;
                                double val = cur[s] + cost[v];
                                unsigned ns = s + v; /* no digit carries: each fits */
                                if (val < nxt[ns]) {
                                        nxt[ns] = val;
                                        choice[(size_t)i * S + ns] = v;
                                }
                        }
                }
                double *tmp = cur;
                cur = nxt;
                nxt = tmp;
        }
        r = dp_best_state(cur, S);
        if (r < 0)
                goto out;
        unsigned best = (unsigned)r;
        r = 0;
        for (unsigned i = n; i-- > 0;) {
                unsigned v = choice[(size_t)i * S + best];

                for (unsigned q = 0; q < P; q++)
                        out->cores[i * P + q] = digits[(size_t)v * P + q];
                best -= v;
        }
        for (unsigned q = 0; q < P; q++)
                out->freq_mhz[q] = x->m->sc->mach.freqs_mhz[fv[q]];
out:
        free(cur);
        free(nxt);
        free(cost);
        free(choice);
        free(digits);
        return r;
}

/* Shared frequency fi on every package: apps may span packages, only core counts matter
 * (placed package after package, in app order). Minimises sum_i cost_for() over counts
 * summing to at most n_cpus. */
static int dp_shared(struct dp_ctx *x, unsigned fi, const double *rate_w, struct sim_partition *out)
{
        unsigned n = x->n_apps, S = x->n_cpus + 1, P = x->n_pkgs;
        double *cur = malloc(S * sizeof(double)), *nxt = malloc(S * sizeof(double));
        unsigned short *choice = malloc((size_t)n * S * sizeof(unsigned short));
        unsigned fv[SENSOR_MAX_PACKAGES], packed[SENSOR_MAX_PACKAGES];
        int r = 0;

        if (!cur || !nxt || !choice) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned q = 0; q < P; q++)
                fv[q] = fi;
        for (unsigned u = 0; u < S; u++)
                cur[u] = u == 0 ? 0 : INFINITY;
        for (unsigned i = 0; i < n; i++) {
                for (unsigned u = 0; u < S; u++)
                        nxt[u] = INFINITY;
                for (unsigned c = 1; c < S; c++) {
                        /* Priced packed from package 0, as the tables were run. */
                        for (unsigned q = 0, left = c; q < P; q++) {
                                packed[q] = left < x->cpp ? left : x->cpp;
                                left -= packed[q];
                        }
                        double cost = cost_for(x, i, packed, fv, rate_w[i]);
                        if (!isfinite(cost))
                                continue;
                        for (unsigned u = 0; u + c < S; u++) {
                                if (!isfinite(cur[u]))
                                        continue;
                                double v = cur[u] + cost;
                                if (v < nxt[u + c]) {
                                        nxt[u + c] = v;
                                        choice[(size_t)i * S + u + c] = (unsigned short)c;
                                }
                        }
                }
                double *tmp = cur;
                cur = nxt;
                nxt = tmp;
        }
        r = dp_best_state(cur, S);
        if (r < 0)
                goto out;
        unsigned best = (unsigned)r;
        r = 0;
        /* Back from the last app; then fill the packages in order with the counts. */
        unsigned *cores = malloc(n * sizeof(unsigned));
        if (!cores) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned i = n; i-- > 0;) {
                cores[i] = choice[(size_t)i * S + best];
                best -= cores[i];
        }
        memset(out->cores, 0, (size_t)n * x->n_pkgs * sizeof(unsigned));
        unsigned q = 0, left = x->cpp;
        for (unsigned i = 0; i < n; i++)
                for (unsigned c = cores[i]; c > 0;) {
                        if (left == 0) {
                                q++;
                                left = x->cpp;
                        }
                        unsigned take = c < left ? c : left;
                        out->cores[i * x->n_pkgs + q] += take;
                        c -= take;
                        left -= take;
                }
        for (unsigned p = 0; p < x->n_pkgs; p++)
                out->freq_mhz[p] = x->m->sc->mach.freqs_mhz[fi];
        free(cores);
out:
        free(cur);
        free(nxt);
        free(choice);
        return r;
}

/* A frequency per package (fvec, indices): each app inside one package, at its frequency.
 * The state is the CPUs used in each package, in mixed radix. */
static int dp_packages(struct dp_ctx *x, const unsigned *fvec, const double *rate_w,
                       struct sim_partition *out)
{
        unsigned n = x->n_apps, P = x->n_pkgs, R = x->cpp + 1, S = 1;
        unsigned one[SENSOR_MAX_PACKAGES] = {0};
        int r = 0;

        for (unsigned q = 0; q < P; q++)
                S *= R;
        double *cur = malloc(S * sizeof(double)), *nxt = malloc(S * sizeof(double));
        double *cost = malloc((size_t)P * R * sizeof(double));
        unsigned *choice = malloc((size_t)n * S * sizeof(unsigned));
        if (!cur || !nxt || !cost || !choice) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned s = 0; s < S; s++)
                cur[s] = s == 0 ? 0 : INFINITY;
        for (unsigned i = 0; i < n; i++) {
                for (unsigned q = 0; q < P; q++)
                        for (unsigned c = 1; c < R; c++) {
                                one[q] = c;
                                cost[q * R + c] = cost_for(x, i, one, fvec, rate_w[i]);
                                one[q] = 0;
                        }
                for (unsigned s = 0; s < S; s++)
                        nxt[s] = INFINITY;
                for (unsigned s = 0; s < S; s++) {
                        if (!isfinite(cur[s]))
                                continue;
                        for (unsigned q = 0, radix = 1, rest = s; q < P;
                             q++, radix *= R, rest /= R) {
                                unsigned used = rest % R;
                                for (unsigned c = 1; used + c < R; c++) {
                                        if (!isfinite(cost[q * R + c]))
                                                continue;
                                        double v = cur[s] + cost[q * R + c];
                                        unsigned ns = s + c * radix;
                                        if (v < nxt[ns]) {
                                                nxt[ns] = v;
                                                choice[(size_t)i * S + ns] = q * R + c;
                                        }
                                }
                        }
                }
                double *tmp = cur;
                cur = nxt;
                nxt = tmp;
        }
        r = dp_best_state(cur, S);
        if (r < 0)
                goto out;
        unsigned best = (unsigned)r;
        r = 0;
        memset(out->cores, 0, (size_t)n * P * sizeof(unsigned));
        for (unsigned i = n; i-- > 0;) {
                unsigned ch = choice[(size_t)i * S + best], q = ch / R, c = ch % R, radix = 1;

                for (unsigned k = 0; k < q; k++)
                        radix *= R;
                out->cores[i * P + q] = c;
                best -= c * radix;
        }
        for (unsigned q = 0; q < P; q++)
                out->freq_mhz[q] = x->m->sc->mach.freqs_mhz[fvec[q]];
out:
        free(cur);
        free(nxt);
        free(cost);
        free(choice);
        return r;
}

/* The evaluator's score, or INFINITY for a partition outside the narrow moves' space: an app
 * spanning packages at two clocks. */
static double try_score(struct dp_ctx *x, const struct sim_partition *p, bool wide)
{
        for (unsigned i = 0; !wide && i < p->n_apps; i++) {
                unsigned f = 0;

                for (unsigned q = 0; q < p->n_packages; q++)
                        if (p->cores[i * p->n_packages + q] > 0) {
                                if (f != 0 && p->freq_mhz[q] != f)
                                        return INFINITY;
                                f = p->freq_mhz[q];
                        }
        }
        return evaluate(x, p, NULL);
}

/* Single moves while the evaluator improves: one CPU from one owner to another within a
 * package (owner n_apps is "unused"), a package to another P-state, an app that sits in one
 * package to another package with room; when wide, also an app's count in a package set to any
 * other the room allows, and one CPU of an app to another package. */
static void improve_moves(struct dp_ctx *x, struct sim_partition *p, double *score, bool wide)
{
        const struct sim_machine_spec *ms = &x->m->sc->mach;
        unsigned n = x->n_apps, P = x->n_pkgs;
        bool better = true;

        for (unsigned sweep = 0; better && sweep < 1000; sweep++) {
                better = false;
                for (unsigned q = 0; q < P; q++) {
                        unsigned used = 0;
                        for (unsigned i = 0; i < n; i++)
                                used += p->cores[i * P + q];
                        for (unsigned a = 0; a <= n; a++) {
                                if (a < n ? p->cores[a * P + q] == 0 : used == x->cpp)
                                        continue;
                                for (unsigned b = 0; b <= n; b++) {
                                        if (b == a)
                                                continue;
                                        if (a < n)
                                                p->cores[a * P + q]--;
                                        if (b < n)
                                                p->cores[b * P + q]++;
                                        double s = try_score(x, p, wide);
                                        if (s < *score) {
                                                *score = s;
                                                better = true;
                                                used += (b == n) ? 0u : 1u;
                                                used -= (a == n) ? 0u : 1u;
                                                if (a < n ? p->cores[a * P + q] == 0
                                                          : used == x->cpp)
                                                        break;
                                                continue;
                                        }
                                        if (a < n)
                                                p->cores[a * P + q]++;
                                        if (b < n)
                                                p->cores[b * P + q]--;
                                }
                        }
                        /* The package at any other P-state. */
                        unsigned old = p->freq_mhz[q];
                        for (unsigned fi = 0; fi < ms->n_freqs; fi++) {
                                if (ms->freqs_mhz[fi] == old)
                                        continue;
                                p->freq_mhz[q] = ms->freqs_mhz[fi];
                                double s = try_score(x, p, wide);
                                if (s < *score) {
                                        *score = s;
                                        better = true;
                                        old = p->freq_mhz[q];
                                }
                                p->freq_mhz[q] = old;
                        }
                }
                /* An app's CPUs in a package at every other count the room allows: a move
                 * of several CPUs at once, past counts where one CPU alone does not pay
                 * (with the pool, an app's count changes when the others end and so what
                 * each bears). */
                for (unsigned i = 0; wide && i < n; i++)
                        for (unsigned q = 0; q < P; q++) {
                                unsigned used = 0, was = p->cores[i * P + q], best_c = was;
                                for (unsigned j = 0; j < n; j++)
                                        used += p->cores[j * P + q];
                                for (unsigned c = 0; c <= x->cpp - used + was; c++) {
                                        if (c == was)
                                                continue;
                                        p->cores[i * P + q] = c;
                                        double s = try_score(x, p, wide);
                                        if (s < *score) {
                                                *score = s;
                                                best_c = c;
                                                better = true;
                                        }
                                }
                                p->cores[i * P + q] = best_c;
                        }
                /* One CPU of an app from one package to another with room: the same count,
                 * its lanes and traffic spread otherwise, or its clock another package's. */
                for (unsigned i = 0; wide && i < n && P > 1; i++)
                        for (unsigned from = 0; from < P; from++)
                                for (unsigned to = 0; to < P; to++) {
                                        unsigned used = 0;
                                        for (unsigned j = 0; j < n; j++)
                                                used += p->cores[j * P + to];
                                        if (to == from || p->cores[i * P + from] == 0 ||
                                            used == x->cpp)
                                                continue;
                                        p->cores[i * P + from]--;
                                        p->cores[i * P + to]++;
                                        double s = try_score(x, p, wide);
                                        if (s < *score) {
                                                *score = s;
                                                better = true;
                                                continue;
                                        }
                                        p->cores[i * P + from]++;
                                        p->cores[i * P + to]--;
                                }
                /* An app inside one package, whole, to another one with room. */
                for (unsigned i = 0; i < n && P > 1; i++) {
                        unsigned from = P, c = 0;
                        for (unsigned q = 0; q < P; q++)
                                if (p->cores[i * P + q] > 0) {
                                        from = from == P ? q : P + 1;
                                        c = p->cores[i * P + q];
                                }
                        if (from >= P)
                                continue;
                        for (unsigned q = 0; q < P; q++) {
                                unsigned used = 0;
                                for (unsigned j = 0; j < n; j++)
                                        used += p->cores[j * P + q];
                                if (q == from || used + c > x->cpp)
                                        continue;
                                p->cores[i * P + from] = 0;
                                p->cores[i * P + q] = c;
                                double s = try_score(x, p, wide);
                                if (s < *score) {
                                        *score = s;
                                        better = true;
                                        break;
                                }
                                p->cores[i * P + q] = 0;
                                p->cores[i * P + from] = c;
                        }
                }
        }
}

/* For one frequency assignment: the DP with each app's pool charged at a fixed rate per second
 * of its run, the rate then set to what the evaluator says the app bore, until the partition
 * repeats; then the best of those, improved by single moves, in *local and *local_score
 * (INFINITY when no partition fits). */
/* Single moves while the evaluator improves: first the narrow ones to a local best (one CPU
 * between owners in a package, a package's P-state, an app whole to another package; no app at
 * two clocks), then from there also the wide ones (any count of an app in a package, one CPU of
 * an app to another package, apps at two clocks). Starting the wide search where the narrow one
 * ends means the wider space never ends worse than the narrow one from the same start: a local
 * search with more moves can otherwise stop at another, worse local best. */
static void improve(struct dp_ctx *x, struct sim_partition *p, double *score)
{
        improve_moves(x, p, score, false);
        improve_moves(x, p, score, true);
}

enum dp_space {
        DP_FULL,     /* every count per package (dp_full) */
        DP_SHARED,   /* one P-state, counts placed in order (dp_shared) */
        DP_PACKAGES, /* each app inside one package (dp_packages) */
};

static int dp_assignment(struct dp_ctx *x, const unsigned *fvec, enum dp_space space,
                         struct sim_partition *local, double *local_score, double *rate_w,
                         double *pool_j)
{
        struct sim_partition work = {0}, prev = {0};
        int r = sim_partition_alloc(&work, x->n_apps, x->n_pkgs);

        *local_score = INFINITY;
        if (r == 0)
                r = sim_partition_alloc(&prev, x->n_apps, x->n_pkgs);
        if (r < 0)
                goto out;
        for (unsigned i = 0; i < x->n_apps; i++)
                rate_w[i] = x->pool_w / x->n_apps;
        for (unsigned round = 0; round < DP_POOL_ROUNDS; round++) {
                r = space == DP_FULL     ? dp_full(x, fvec, rate_w, &work)
                    : space == DP_SHARED ? dp_shared(x, fvec[0], rate_w, &work)
                                         : dp_packages(x, fvec, rate_w, &work);
                if (r == -ENOENT) { /* no partition fits (rows apps' grids) */
                        r = 0;
                        break;
                }
                if (r < 0)
                        break;
                if (round > 0 && memcmp(prev.cores, work.cores,
                                        (size_t)x->n_apps * x->n_pkgs * sizeof(unsigned)) == 0)
                        break;
                double s = evaluate(x, &work, pool_j);
                if (!isfinite(s))
                        break;
                if (s < *local_score) {
                        *local_score = s;
                        partition_copy(local, &work);
                }
                for (unsigned i = 0; i < x->n_apps; i++)
                        rate_w[i] = pool_j[i] / x->ev_t[i]; /* evaluate() left the times */
                partition_copy(&prev, &work);
        }
        if (r == 0 && isfinite(*local_score))
                improve(x, local, local_score);
out:
        sim_partition_free(&work);
        sim_partition_free(&prev);
        return r;
}

/* Whether apps can slow each other through a package's memory bandwidth, which the tables
 * (each app alone) and the evaluator do not see. */
static bool bandwidth_shared(const struct sim_machine *m)
{
        if (m->sc->mach.mem_bandwidth_gbs <= 0 || m->n_apps < 2)
                return false;
        for (unsigned i = 0; i < m->n_apps; i++)
                if (m->apps[i].spec->n_rows == 0 && m->apps[i].spec->mem_bytes_per_instr > 0)
                        return true;
        return false;
}

struct dp_cand {
        struct sim_partition p;
        double predicted;
};

static int together_dp(const struct sim_machine *m, enum sim_objective o, uint64_t step_ns,
                       struct sim_together *out)
{
        const struct sim_machine_spec *ms = &m->sc->mach;
        struct dp_ctx x = {
            .m = m,
            .o = o,
            .n_apps = m->n_apps,
            .n_cpus = m->n_cpus,
            .n_pkgs = m->n_packages,
            .n_freqs = ms->n_freqs,
            .cpp = m->n_cpus / m->n_packages,
            .pool_w = ms->uncore_w * m->n_packages,
            .idle_cpu_w = ms->core_idle_w / ms->threads_per_core,
            .static_cpu_w = ms->core_static_w / ms->threads_per_core,
            .bw_bps = ms->mem_bandwidth_gbs * 1e9,
        };
        struct dp_cand *cands = NULL;
        struct sim_result *apps = NULL;
        double *rate_w = NULL, *pool_j = NULL;
        unsigned *fvec = NULL, states = 1, n_cands = 0, max_cands = 0, ibest = 0;
        bool verify_all = bandwidth_shared(m);
        int r = -ENOMEM;

        x.tab = calloc((size_t)x.n_apps * (x.n_cpus + 1) * x.n_freqs, sizeof(*x.tab));
        x.start_s = calloc(x.n_apps, sizeof(double));
        x.ev_t = calloc(x.n_apps, sizeof(double));
        x.ev_pool = calloc(x.n_apps, sizeof(double));
        x.ev_own = calloc(x.n_apps, sizeof(double));
        x.ev_rem = calloc(x.n_apps, sizeof(double));
        x.ev_busy = calloc((size_t)x.n_apps * x.n_pkgs, sizeof(double));
        x.ev_cores = calloc(x.n_apps, sizeof(unsigned));
        x.ev_c = calloc(x.n_apps, sizeof(*x.ev_c));
        x.ev_fv = calloc(x.n_pkgs, sizeof(unsigned));
        x.dyn_w = calloc(x.n_freqs, sizeof(double));
        rate_w = calloc(x.n_apps, sizeof(double));
        pool_j = calloc(x.n_apps, sizeof(double));
        fvec = calloc(x.n_pkgs, sizeof(unsigned));
        apps = calloc(x.n_apps, sizeof(*apps));
        if (!x.tab || !x.start_s || !x.ev_t || !x.ev_pool || !x.ev_own || !x.ev_rem || !x.ev_busy ||
            !x.ev_cores || !x.ev_c || !x.ev_fv || !x.dyn_w || !rate_w || !pool_j || !fvec || !apps)
                goto out;
        for (unsigned i = 0; i < x.n_apps; i++)
                x.start_s[i] = m->apps[i].start_s;
        for (unsigned fi = 0; fi < x.n_freqs; fi++)
                x.dyn_w[fi] = sim_dyn_w_at(m, fi);
        r = table_fill(&x);
        if (r < 0)
                goto out;
        for (unsigned q = 0; q < x.n_pkgs && states <= DP_MAX_STATES; q++)
                states *= x.cpp + 1;
        /* Where the work allows, every P-state vector (not only one order of a set: an app
         * spanning two packages has its first, busiest lane in the lower one) with every
         * count per package. Otherwise first every package at one P-state (apps anywhere),
         * fvec[0] = 0 .. n_freqs - 1; then, where the state fits, a P-state per package,
         * non-decreasing (the packages are alike, so one order of a set of P-states stands
         * for all), not all equal (done already): each app inside one package. */
        double vectors = pow(x.n_freqs, x.n_pkgs);
        bool full = states <= DP_MAX_STATES &&
                    (double)states * states * x.n_apps * vectors * DP_POOL_ROUNDS <= DP_MAX_WORK;
        for (unsigned k = 0;; k++) {
                enum dp_space space = full ? DP_FULL : k < x.n_freqs ? DP_SHARED : DP_PACKAGES;

                if (full) {
                        if (k == (unsigned)vectors)
                                break;
                        for (unsigned q = 0, rest = k; q < x.n_pkgs; q++, rest /= x.n_freqs)
                                fvec[q] = rest % x.n_freqs;
                } else if (space == DP_SHARED) {
                        fvec[0] = k;
                } else {
                        if (x.n_pkgs < 2 || states > DP_MAX_STATES)
                                break;
                        if (k == x.n_freqs) /* from all at the lowest */
                                memset(fvec, 0, x.n_pkgs * sizeof(unsigned));
                        unsigned q = x.n_pkgs;
                        while (q-- > 0 && fvec[q] + 1 == x.n_freqs)
                                ;
                        if (q == UINT_MAX)
                                break;
                        fvec[q]++;
                        for (unsigned j = q + 1; j < x.n_pkgs; j++)
                                fvec[j] = fvec[q];
                        if (fvec[0] == fvec[x.n_pkgs - 1])
                                continue;
                }
                if (n_cands == max_cands) {
                        unsigned nmax = max_cands ? 2 * max_cands : 16;
                        struct dp_cand *nc = realloc(cands, nmax * sizeof(*cands));

                        if (!nc) {
                                r = -ENOMEM;
                                goto out;
                        }
                        cands = nc;
                        max_cands = nmax;
                }
                r = sim_partition_alloc(&cands[n_cands].p, x.n_apps, x.n_pkgs);
                if (r == 0)
                        r = dp_assignment(&x, fvec, space, &cands[n_cands].p,
                                          &cands[n_cands].predicted, rate_w, pool_j);
                if (r < 0 || !isfinite(cands[n_cands].predicted)) {
                        sim_partition_free(&cands[n_cands].p);
                        if (r < 0)
                                goto out;
                        continue;
                }
                n_cands++;
        }
        if (n_cands == 0) {
                r = -ENODATA;
                goto out;
        }
        for (unsigned c = 1; c < n_cands; c++)
                if (cands[c].predicted < cands[ibest].predicted)
                        ibest = c;
        out->evaluated = x.evaluated;
        out->score = INFINITY;
        /* Without shared memory bandwidth the evaluator is the run but for the steps: run its
         * best. With it, apps on one package slow each other, which the evaluator cannot see:
         * run every assignment's best and keep the best measured. */
        for (unsigned c = verify_all ? 0 : ibest; c < (verify_all ? n_cands : ibest + 1); c++) {
                double t_s, e_j, score;

                r = sim_partition_run(m, &cands[c].p, step_ns, apps, &t_s, &e_j);
                if (r < 0)
                        goto out;
                out->runs++;
                score = score_sum(o, apps, x.n_apps);
                if (score < out->score) {
                        out->score = score;
                        out->time_s = t_s;
                        out->energy_j = e_j;
                        out->predicted = cands[c].predicted;
                        partition_copy(&out->best, &cands[c].p);
                        memcpy(out->apps, apps, x.n_apps * sizeof(*apps));
                }
        }
        r = 0;
out:
        for (unsigned c = 0; c < n_cands; c++)
                sim_partition_free(&cands[c].p);
        free(cands);
        free(apps);
        free(x.tab);
        free(x.start_s);
        free(x.ev_t);
        free(x.ev_pool);
        free(x.ev_own);
        free(x.ev_rem);
        free(x.ev_busy);
        free(x.ev_cores);
        free(x.ev_c);
        free(x.ev_fv);
        free(x.dyn_w);
        free(rate_w);
        free(pool_j);
        free(fvec);
        return r;
}

int sim_oracle_together(const struct sim_machine *m, enum sim_objective o,
                        enum sim_together_method method, uint64_t step_ns, struct sim_together *out)
{
        struct sim_together t = {.predicted = NAN};
        unsigned long count;
        int r;

        if (m->n_apps != m->sc->n_apps || step_ns == 0)
                return -EINVAL;
        if (m->n_apps == 0)
                return -ENODATA;
        if (m->n_apps > m->n_cpus)
                return -ENOSPC;
        if (method != SIM_TOGETHER_DP) {
                count = sim_together_count(m, 10 * (unsigned long)SIM_TOGETHER_EXHAUSTIVE_MAX);
                if (method == SIM_TOGETHER_AUTO)
                        method = count <= SIM_TOGETHER_EXHAUSTIVE_MAX ? SIM_TOGETHER_EXHAUSTIVE
                                                                      : SIM_TOGETHER_DP;
                else if (count > 10 * (unsigned long)SIM_TOGETHER_EXHAUSTIVE_MAX)
                        return -E2BIG;
        }
        t.method = method;
        t.apps = calloc(m->n_apps, sizeof(*t.apps));
        if (!t.apps)
                return -ENOMEM;
        r = sim_partition_alloc(&t.best, m->n_apps, m->n_packages);
        if (r == 0)
                r = method == SIM_TOGETHER_EXHAUSTIVE ? together_exhaustive(m, o, step_ns, &t)
                                                      : together_dp(m, o, step_ns, &t);
        if (r < 0) {
                sim_together_free(&t);
                return r;
        }
        *out = t;
        return 0;
}

void sim_together_free(struct sim_together *t)
{
        if (!t)
                return;
        free(t->apps);
        t->apps = NULL;
        sim_partition_free(&t->best);
}
