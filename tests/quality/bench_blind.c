/* What a first run can do about extra work it cannot see (issue 27; docs/allocator.md,
 * "Progress by instructions"). An app with `extra_work` X and no progress markers retires
 * 1 + X (k - 1) instructions per useful one on k cores, at the same IPC and with the same busy
 * shares as without it: within a run pctl sees the same figures for every X, and only the
 * run's length differs. Its choice of cores and frequency is then, in effect, blind to X.
 *
 * For every app with extra work and no markers in bench_random's scenarios (sets 1 and 2: seed
 * bases 2711 and 90001, the same seeds and app counts as bench_random), this bench measures on
 * the model machine the app's EDP alone at every static (cores, frequency) (`sim oracle`'s
 * candidates, sim_oracle_app) for its own X and for X over the generator's range, and prints:
 * - pctl's EDP over the best static one, at the app's X, at X = 0 and its worst over the grid
 *   (`sim run --policy edp`, in process; single-app scenarios only: in a scenario of several
 *   apps pctl's figure is the partition's, bench_random's, and has no per-app counterpart);
 * - the minimax: the best ratio any one static choice, made without knowing X, reaches over
 *   every X of the grid (the lowest over choices of the highest over X), and what that choice
 *   costs the same app when X = 0;
 * - hedges: the best choice for an assumed X of 0.01 and 0.02, their worst over the grid and
 *   their cost at X = 0;
 * - budgets: the best worst-over-X of a choice that costs X = 0 at most 1 % (5 %);
 * - the prior's choice: the lowest expected ratio when X is drawn as the generator draws it
 *   (0 with 85 %, else uniform in [0.01, 0.2]), its expected gain over X = 0's best choice and
 *   its cost at X = 0: what a blind hedge can buy the suite's mean at best.
 * The grid holds the generator's range [0.01, 0.2], 0 (no extra work) and the app's own X;
 * over fewer X than the whole range, its minimax is a lower bound of the range's: no blind
 * choice does better than it says.
 * For an app of several, its figures are for the app alone on the machine: what its own size
 * could reach, a lower bound on what it can reach beside others.
 *
 * It checks its own premise and fails if that stops being true: run under pctl for its first
 * seconds (until the app is halfway through its fastest run at X = 0, at most PREMISE_S), the
 * scenario with X = 0, with the app's X and with X = 0.2 must give pctl the same estimates
 * (cores, frequency, P, speedup, the speedup stack, energy, decisions) for every app. Every
 * figure is virtual time: none depends on the machine's load.
 *
 * Options: --seed-base N (one set instead of both), --jobs N (processes, default: the online
 * CPUs), --preset NAME (only that one). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fanout.h"
#include "pctl/sim.h"
#include "pctl/sim_random.h"
#include "pctl/simrun.h"

#define STEP_NS (100 * 1000 * 1000ULL) /* the oracle's step, as in `pctl sim oracle` */
/* bench_random's sets and shape: seeds base + 1000 preset + j, j < PER_PRESET; the first
 * SINGLE_PER_PRESET of each preset have one app. */
#define PER_PRESET 16u
#define SINGLE_PER_PRESET 5u
static const unsigned long long set_bases[] = {2711, 90001};

/* X over the generator's range (sim/random.c draws it uniform in [0.01, 0.2]), 0, and the
 * app's own (added per case). */
static const double x_grid[] = {0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2};
#define N_GRID (sizeof(x_grid) / sizeof(x_grid[0]))
#define MAX_X (N_GRID + 1)
/* Hedges: the best static choice for these assumed X (each in x_grid). */
static const double hedges[] = {0.01, 0.02};
#define N_HEDGES (sizeof(hedges) / sizeof(hedges[0]))
/* Budgets: the best worst-over-X of a choice that costs the app without extra work (X = 0) at
 * most this share over its best. A budget of 1 % is what the allocator's risk rule spends
 * (ALLOC_RISK_MARGIN) and what the single-app suite's ±0.01 rule allows a hedge. */
static const double budgets[] = {0.01, 0.05};
#define N_BUDGETS (sizeof(budgets) / sizeof(budgets[0]))
/* The generator's prior: an app has extra work with this chance, X then uniform over
 * [PRIOR_X_LO, PRIOR_X_HI] (sim/random.c), independently of everything else it draws, markers
 * included. The choice with the lowest expected ratio under it is the best blind choice for
 * the suite's mean. */
#define PRIOR_EXTRA 0.15
#define PRIOR_X_LO 0.01
#define PRIOR_X_HI 0.2
/* The premise is checked over at most this much virtual time after the app starts. */
#define PREMISE_S 10.0
/* Two estimates this close (relative) are the same: the runs differ only in how the machine
 * books the same instructions, which may round differently in the last bits. */
#define SAME_REL 1e-9
/* The bar bench_random judges the worst scenario by. */
#define TARGET_WORST 1.25

struct choice {
        unsigned cores, freq_mhz;
};

struct row {
        unsigned idx;
        unsigned long long seed;
        char preset[24];
        unsigned n_apps, app;
        double x;              /* the app's own */
        double pctl_x, pctl_0; /* pctl / best static at X and at 0; NaN: several apps */
        double pctl_worst;     /* over the grid */
        struct choice best_0, best_x;
        double best_0_at_x; /* the best choice for X = 0, at the app's X */
        struct choice minimax;
        double minimax_ratio;  /* its worst over the grid */
        double minimax_cost_0; /* its ratio at X = 0 */
        struct choice hedge[N_HEDGES];
        double hedge_worst[N_HEDGES], hedge_cost_0[N_HEDGES];
        double budget_worst[N_BUDGETS];
        struct choice bayes; /* the lowest expected ratio under the generator's prior */
        double bayes_gain;   /* its expected ratio over X = 0's best's, less 1 */
        double bayes_cost_0;
        double premise_s; /* virtual time the premise was checked over */
        bool premise_ok;
        int err;
        char what[200];
};

/* The scenario's text with app `app`'s extra_work set to x (its line replaced, or added after
 * the section's header). */
static int with_extra_work(const char *text, unsigned app, double x, char *out, size_t size)
{
        char header[32];
        size_t len = 0;
        bool in_app = false;

        snprintf(header, sizeof(header), "[app a%u]", app);
        for (const char *l = text; *l;) {
                const char *nl = strchr(l, '\n');
                size_t n = nl ? (size_t)(nl - l + 1) : strlen(l);
                bool skip = false;
                int k;

                if (l[0] == '[')
                        in_app = false;
                if (in_app && strncmp(l, "extra_work", 10) == 0)
                        skip = true;
                if (!skip) {
                        if (len + n + 1 > size)
                                return -ENOBUFS;
                        memcpy(out + len, l, n);
                        len += n;
                }
                if (strncmp(l, header, strlen(header)) == 0) {
                        in_app = true;
                        k = snprintf(out + len, size - len, "extra_work = %.4f\n", x);
                        if (k < 0 || (size_t)k >= size - len)
                                return -ENOBUFS;
                        len += (size_t)k;
                }
                l += n;
        }
        out[len] = '\0';
        return 0;
}

/* Of app `app`'s section in text: its extra_work (0 when none), whether it marks its
 * progress, and its start time. */
static void app_keys(const char *text, unsigned app, double *x, bool *marks, double *start_s)
{
        char header[32];
        bool in_app = false;

        *x = 0;
        *marks = false;
        *start_s = 0;
        snprintf(header, sizeof(header), "[app a%u]", app);
        for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                if (l[0] == '[')
                        in_app = strncmp(l, header, strlen(header)) == 0;
                else if (in_app && strncmp(l, "extra_work = ", 13) == 0)
                        *x = strtod(l + 13, NULL);
                else if (in_app && strncmp(l, "progress_units", 14) == 0)
                        *marks = true;
                else if (in_app && strncmp(l, "start_s = ", 10) == 0)
                        *start_s = strtod(l + 10, NULL);
        }
}

/* snprintf for messages that may be cut (the compiler is told so). */
static void say(char *buf, size_t size, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

static int write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        if (fputs(text, f) < 0) {
                (void)fclose(f);
                return -EIO;
        }
        return fclose(f) == 0 ? 0 : -errno;
}

static int pctl_run(const char *path, double stop_at_s, struct simrun_result *res, char *err,
                    size_t err_size)
{
        struct simrun_options o = {
            .scenario = path, .policy = "edp", .delta_i_rate = NAN, .stop_at_s = stop_at_s};

        return simrun_policy(&o, res, err, err_size);
}

static bool same(double a, double b)
{
        if (isnan(a) || isnan(b))
                return isnan(a) && isnan(b);
        return fabs(a - b) <= SAME_REL * fmax(fabs(a), fabs(b));
}

/* Whether pctl saw the same in two runs: every app's estimates and settings, the decisions. */
static bool same_view(const struct simrun_result *a, const struct simrun_result *b, char *what,
                      size_t size)
{
        if (a->n_apps != b->n_apps || a->decisions != b->decisions || a->changes != b->changes) {
                snprintf(what, size, "decisions %lu/%lu, changes %lu/%lu", a->decisions,
                         b->decisions, a->changes, b->changes);
                return false;
        }
        for (unsigned i = 0; i < a->n_apps; i++) {
                const struct simrun_app *p = &a->apps[i], *q = &b->apps[i];
                bool ok = p->cores == q->cores && p->freq_mhz == q->freq_mhz &&
                          same(p->p_est, q->p_est) && same(p->speedup_est, q->speedup_est) &&
                          same(p->energy_j, q->energy_j) && same(p->time_s, q->time_s) &&
                          p->speedup_source == q->speedup_source &&
                          p->ipc1_source == q->ipc1_source && p->stack.known == q->stack.known &&
                          same(p->stack.cores, q->stack.cores) &&
                          same(p->stack.speedup, q->stack.speedup);

                for (unsigned c = 0; ok && c < STACK_COMPONENTS; c++)
                        ok = same(p->stack.component[c], q->stack.component[c]);
                if (!ok) {
                        say(what, size,
                            "app %s: %u/%u cores, P %.6g/%.6g, speedup %.6g/%.6g, stack "
                            "speedup %.6g/%.6g, %.6g/%.6g J",
                            p->name, p->cores, q->cores, p->p_est, q->p_est, p->speedup_est,
                            q->speedup_est, p->stack.speedup, q->stack.speedup, p->energy_j,
                            q->energy_j);
                        return false;
                }
        }
        return true;
}

static int premise(struct row *w, const char *texts[], unsigned n_x, const double xs[], double t_s,
                   const char *path)
{
        /* X = 0, the app's own and the range's top. */
        const double want[] = {0, w->x, x_grid[N_GRID - 1]};
        struct simrun_result res[3];
        unsigned got = 0;
        char err[512];
        int r = 0;

        w->premise_s = t_s;
        w->premise_ok = true;
        for (unsigned k = 0; r == 0 && k < 3; k++) {
                unsigned j = 0;

                while (j < n_x && xs[j] != want[k])
                        j++;
                if (j == n_x) {
                        r = -ENOENT;
                        break;
                }
                r = write_file(path, texts[j]);
                if (r == 0)
                        r = pctl_run(path, t_s, &res[k], err, sizeof(err));
                if (r < 0)
                        say(w->what, sizeof(w->what), "premise, X %.4f: %s", want[k],
                            r == -ENOENT ? "not in the grid" : err);
                else
                        got++;
        }
        for (unsigned k = 1; r == 0 && k < 3 && w->premise_ok; k++) {
                char what[180];

                if (!same_view(&res[0], &res[k], what, sizeof(what))) {
                        w->premise_ok = false;
                        say(w->what, sizeof(w->what), "X 0 and %.4f differ within %.1f s: %s",
                            want[k], t_s, what);
                }
        }
        for (unsigned k = 0; k < got; k++)
                simrun_result_free(&res[k]);
        return r;
}

static double edp_of(const struct sim_result *r)
{
        return sim_objective_score(SIM_OBJ_EDP, r);
}

/* The candidate with the lowest EDP (the first of equals, as sim_oracle_app picks). */
static unsigned argmin(const struct sim_result *all, unsigned n)
{
        unsigned best = 0;

        for (unsigned c = 1; c < n; c++)
                if (edp_of(&all[c]) < edp_of(&all[best]))
                        best = c;
        return best;
}

/* Where x is in xs (every X looked up is there by construction). */
static unsigned index_of(const double xs[], unsigned n, double x)
{
        for (unsigned j = 0; j < n; j++)
                if (xs[j] == x)
                        return j;
        return 0;
}

static void run_one(struct row *w, const char *dir)
{
        char text[8192], path[600], err[512];
        char *texts[MAX_X] = {NULL};
        double xs[MAX_X], best[MAX_X], min_time_0 = INFINITY, start_s;
        struct sim_result *all[MAX_X] = {NULL};
        unsigned n_x = 0, n_cfg = 0;
        bool marks;
        int r;

        r = sim_random_scenario(w->seed, w->preset, w->n_apps ? w->n_apps : 0, text, sizeof(text));
        if (r < 0) {
                say(w->what, sizeof(w->what), "generator: %s", strerror(-r));
                goto out;
        }
        app_keys(text, w->app, &w->x, &marks, &start_s);
        snprintf(path, sizeof(path), "%s/seed-%llu-a%u.ini", dir, w->seed, w->app);
        for (unsigned g = 0; g < N_GRID; g++)
                xs[n_x++] = x_grid[g];
        {
                bool there = false;

                for (unsigned g = 0; g < N_GRID; g++)
                        there |= x_grid[g] == w->x;
                if (!there)
                        xs[n_x++] = w->x;
        }
        for (unsigned j = 0; j < n_x; j++) {
                struct sim_machine *m = NULL;
                struct sim_error serr;
                struct sim_result b;
                unsigned n;

                texts[j] = malloc(sizeof(text) + 64);
                if (!texts[j]) {
                        r = -ENOMEM;
                        goto out;
                }
                r = with_extra_work(text, w->app, xs[j], texts[j], sizeof(text) + 64);
                if (r == 0)
                        r = sim_load_string(texts[j], path, &m, &serr);
                if (r < 0) {
                        say(w->what, sizeof(w->what), "X %.4f: %s", xs[j],
                            r == -ENOBUFS ? "scenario too long" : serr.all);
                        goto out;
                }
                r = sim_oracle_app(m, w->app, SIM_OBJ_EDP, STEP_NS, &b, &all[j], &n);
                sim_free(m);
                if (r < 0) {
                        say(w->what, sizeof(w->what), "oracle, X %.4f: %s", xs[j], strerror(-r));
                        goto out;
                }
                if (j > 0 && n != n_cfg) {
                        r = -EPROTO;
                        say(w->what, sizeof(w->what), "oracle: %u candidates, then %u", n_cfg, n);
                        goto out;
                }
                n_cfg = n;
                best[j] = edp_of(&b);
        }
        for (unsigned c = 0; c < n_cfg; c++)
                min_time_0 = fmin(min_time_0, all[0][c].time_s);

        /* The minimax, the clairvoyant choices and the hedges. */
        w->minimax_ratio = INFINITY;
        for (unsigned b = 0; b < N_BUDGETS; b++)
                w->budget_worst[b] = INFINITY;
        for (unsigned c = 0; c < n_cfg; c++) {
                double worst = 0;

                for (unsigned j = 0; j < n_x; j++)
                        worst = fmax(worst, edp_of(&all[j][c]) / best[j]);
                for (unsigned b = 0; b < N_BUDGETS; b++)
                        if (edp_of(&all[0][c]) / best[0] <= 1 + budgets[b])
                                w->budget_worst[b] = fmin(w->budget_worst[b], worst);
                if (worst < w->minimax_ratio) {
                        w->minimax_ratio = worst;
                        w->minimax = (struct choice){all[0][c].cores, all[0][c].freq_mhz};
                        w->minimax_cost_0 = edp_of(&all[0][c]) / best[0];
                }
        }
        {
                unsigned c0 = argmin(all[0], n_cfg), jx = index_of(xs, n_x, w->x);
                unsigned cx = argmin(all[jx], n_cfg);

                w->best_0 = (struct choice){all[0][c0].cores, all[0][c0].freq_mhz};
                w->best_x = (struct choice){all[jx][cx].cores, all[jx][cx].freq_mhz};
                w->best_0_at_x = edp_of(&all[jx][c0]) / best[jx];
        }
        for (unsigned h = 0; h < N_HEDGES; h++) {
                unsigned jh = index_of(xs, n_x, hedges[h]), c = argmin(all[jh], n_cfg);

                w->hedge[h] = (struct choice){all[jh][c].cores, all[jh][c].freq_mhz};
                w->hedge_worst[h] = 0;
                for (unsigned k = 0; k < n_x; k++)
                        w->hedge_worst[h] = fmax(w->hedge_worst[h], edp_of(&all[k][c]) / best[k]);
                w->hedge_cost_0[h] = edp_of(&all[0][c]) / best[0];
        }
        {
                /* The prior's expectation: X = 0 with 1 - PRIOR_EXTRA, else the trapezoid
                 * rule over the grid's points in [PRIOR_X_LO, PRIOR_X_HI] (the app's own X
                 * left out, so that every app is weighed on the same points). */
                double wt[N_GRID] = {0}, best_e = INFINITY, e_c0 = 0;
                unsigned c0 = argmin(all[0], n_cfg);

                wt[0] = 1 - PRIOR_EXTRA;
                for (unsigned g = 0; g + 1 < N_GRID; g++) {
                        double a = x_grid[g], b = x_grid[g + 1];

                        if (a < PRIOR_X_LO || b > PRIOR_X_HI)
                                continue;
                        wt[g] += PRIOR_EXTRA * (b - a) / (PRIOR_X_HI - PRIOR_X_LO) / 2;
                        wt[g + 1] += PRIOR_EXTRA * (b - a) / (PRIOR_X_HI - PRIOR_X_LO) / 2;
                }
                for (unsigned c = 0; c < n_cfg; c++) {
                        double e = 0;

                        for (unsigned g = 0; g < N_GRID; g++)
                                e += wt[g] * edp_of(&all[g][c]) / best[g];
                        if (c == c0)
                                e_c0 = e;
                        if (e < best_e) {
                                best_e = e;
                                w->bayes = (struct choice){all[0][c].cores, all[0][c].freq_mhz};
                                w->bayes_cost_0 = edp_of(&all[0][c]) / best[0];
                        }
                }
                w->bayes_gain = best_e / e_c0 - 1;
        }

        /* pctl at every X (one app only). */
        w->pctl_x = w->pctl_0 = w->pctl_worst = NAN;
        if (w->n_apps == 1) {
                w->pctl_worst = 0;
                for (unsigned j = 0; j < n_x; j++) {
                        struct simrun_result res;
                        double ratio;

                        r = write_file(path, texts[j]);
                        if (r == 0)
                                r = pctl_run(path, 0, &res, err, sizeof(err));
                        if (r < 0) {
                                say(w->what, sizeof(w->what), "pctl, X %.4f: %s", xs[j], err);
                                goto out;
                        }
                        ratio = res.apps[0].energy_j * res.apps[0].time_s / best[j];
                        simrun_result_free(&res);
                        w->pctl_worst = fmax(w->pctl_worst, ratio);
                        if (xs[j] == 0)
                                w->pctl_0 = ratio;
                        if (xs[j] == w->x)
                                w->pctl_x = ratio;
                }
        }
        r = premise(w, (const char **)texts, n_x, xs, start_s + fmin(PREMISE_S, 0.5 * min_time_0),
                    path);
out:
        (void)unlink(path);
        for (unsigned j = 0; j < MAX_X; j++) {
                free(texts[j]);
                free(all[j]);
        }
        w->err = r;
}

static void usage(void)
{
        fprintf(stderr, "usage: bench_blind [--seed-base N] [--jobs N] [--preset NAME]\n");
}

/* The apps of the scenario for seed with extra work and no markers, appended to rows. */
static int add_cases(unsigned long long seed, const char *preset, unsigned n_apps,
                     struct row **rows, unsigned *n, unsigned *cap)
{
        char text[8192];
        unsigned apps = 0;
        int r = sim_random_scenario(seed, preset, n_apps, text, sizeof(text));

        if (r < 0)
                return r;
        for (const char *l = strstr(text, "\n[app a"); l; l = strstr(l + 1, "\n[app a"))
                apps++;
        for (unsigned i = 0; i < apps; i++) {
                double x, start_s;
                bool marks;

                app_keys(text, i, &x, &marks, &start_s);
                if (!(x > 0) || marks)
                        continue;
                if (*n == *cap) {
                        struct row *more = realloc(*rows, (*cap * 2 + 8) * sizeof(**rows));

                        if (!more)
                                return -ENOMEM;
                        *rows = more;
                        *cap = *cap * 2 + 8;
                }
                (*rows)[*n] = (struct row){.idx = *n, .seed = seed, .n_apps = apps, .app = i};
                snprintf((*rows)[*n].preset, sizeof((*rows)[*n].preset), "%s", preset);
                (*n)++;
        }
        return 0;
}

static void print_config(const struct choice *c)
{
        char s[16];

        snprintf(s, sizeof(s), "%u@%.1f", c->cores, c->freq_mhz / 1000.0);
        printf(" %8s", s);
}

static void run_row(void *row, const char *dir)
{
        run_one(row, dir);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
            {"seed-base", required_argument, NULL, 's'},
            {"jobs", required_argument, NULL, 'j'},
            {"preset", required_argument, NULL, 'p'},
            {NULL, 0, NULL, 0},
        };
        unsigned long long bases[2];
        unsigned n_bases = 2, jobs = 0, n = 0, cap = 0, failed = 0, broken = 0;
        const char *only = NULL;
        char tmpdir[] = "/tmp/bench_blind.XXXXXX";
        struct row *rows = NULL;
        bool *received;
        int c;

        memcpy(bases, set_bases, sizeof(bases));
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                char *end;
                unsigned long long v;

                if (c == 'p') {
                        only = optarg;
                        continue;
                }
                if (c != 's' && c != 'j') {
                        usage();
                        return 2;
                }
                errno = 0;
                v = strtoull(optarg, &end, 10);
                if (errno || end == optarg || *end || (c == 'j' && (v == 0 || v > 1000))) {
                        fprintf(stderr, "bench_blind: --%s: '%s' is not a count\n",
                                c == 's' ? "seed-base" : "jobs", optarg);
                        return 2;
                }
                if (c == 's') {
                        bases[0] = v;
                        n_bases = 1;
                } else {
                        jobs = (unsigned)v;
                }
        }
        if (optind < argc) {
                usage();
                return 2;
        }
        if (!jobs) {
                long on = sysconf(_SC_NPROCESSORS_ONLN);

                jobs = on > 0 ? (unsigned)on : 1;
        }
        for (unsigned b = 0; b < n_bases; b++)
                for (unsigned p = 0; p < SIM_RANDOM_N_PRESETS; p++) {
                        if (only && strcmp(only, sim_random_presets[p]) != 0)
                                continue;
                        for (unsigned j = 0; j < PER_PRESET; j++) {
                                int r = add_cases(bases[b] + 1000ULL * p + j, sim_random_presets[p],
                                                  j < SINGLE_PER_PRESET ? 1 : 0, &rows, &n, &cap);

                                if (r < 0) {
                                        fprintf(stderr, "bench_blind: seed %llu: %s\n",
                                                bases[b] + 1000ULL * p + j, strerror(-r));
                                        return 1;
                                }
                        }
                }
        if (!n) {
                /* Nothing to measure would make the bench pass on nothing. */
                printf("bench: blind: no app with extra work and no markers in these sets\n");
                free(rows);
                return 1;
        }
        received = calloc(n, sizeof(*received));
        if (!received || !mkdtemp(tmpdir)) {
                perror("bench_blind");
                return 1;
        }
        if (fanout_rows("bench_blind", rows, sizeof(*rows), n, jobs, run_row, tmpdir, received) < 0)
                return 1;
        (void)rmdir(tmpdir);

        printf("bench: blind: %u apps with extra work and no markers; EDP over the best static "
               "(cores@GHz) at the same X; X over {0, 0.005 ... 0.2} and the app's own\n",
               n);
        printf("bench: blind %-6s %-16s %4s %3s %6s %7s %7s %7s %8s %8s %7s %8s %7s %7s %8s %7s "
               "%7s %8s %7s %7s %6s %6s %8s %6s %6s %s\n",
               "seed", "preset", "apps", "app", "X", "pctl@X", "pctl@0", "pctl<=", "best@0",
               "best@X", "b0@X", "minimax", "worst", "cost@0", "h.01", "worst", "cost@0", "h.02",
               "worst", "cost@0", "1%@0", "5%@0", "prior", "gain", "cost@0", "premise");
        {
                double sum_mm[2] = {0}, worst_mm[2] = {0}, sum_cost[2] = {0}, max_cost[2] = {0};
                double sum_px = 0, sum_p0 = 0, sum_b0x[2] = {0}, sum_bud[2][N_BUDGETS] = {{0}};
                double max_bud[2][N_BUDGETS] = {{0}}, sum_gain[2] = {0}, max_gain[2] = {0};
                double sum_bcost[2] = {0};
                unsigned n_ok[2] = {0}, within[2] = {0};

                for (unsigned i = 0; i < n; i++) {
                        const struct row *r = &rows[i];

                        if (!received[i] || r->err < 0) {
                                printf("bench: blind %-6llu %-16s %4u %3u: FAILED: %s\n", r->seed,
                                       r->preset, r->n_apps, r->app,
                                       received[i] ? r->what : "no result (its worker died)");
                                failed++;
                                continue;
                        }
                        printf("bench: blind %-6llu %-16s %4u %3u %6.4f %7.3f %7.3f %7.3f", r->seed,
                               r->preset, r->n_apps, r->app, r->x, r->pctl_x, r->pctl_0,
                               r->pctl_worst);
                        print_config(&r->best_0);
                        print_config(&r->best_x);
                        printf(" %7.3f", r->best_0_at_x);
                        print_config(&r->minimax);
                        printf(" %7.3f %7.3f", r->minimax_ratio, r->minimax_cost_0);
                        for (unsigned h = 0; h < N_HEDGES; h++) {
                                print_config(&r->hedge[h]);
                                printf(" %7.3f %7.3f", r->hedge_worst[h], r->hedge_cost_0[h]);
                        }
                        for (unsigned b = 0; b < N_BUDGETS; b++)
                                printf(" %6.3f", r->budget_worst[b]);
                        print_config(&r->bayes);
                        printf(" %6.3f %6.3f", r->bayes_gain, r->bayes_cost_0);
                        printf(" %s (%.1f s)%s%s\n", r->premise_ok ? "same" : "BROKEN",
                               r->premise_s, r->premise_ok ? "" : ": ",
                               r->premise_ok ? "" : r->what);
                        broken += !r->premise_ok;
                        for (unsigned k = 0; k < 2; k++) {
                                if (k == 0 && r->n_apps != 1)
                                        continue;
                                n_ok[k]++;
                                sum_mm[k] += r->minimax_ratio;
                                worst_mm[k] = fmax(worst_mm[k], r->minimax_ratio);
                                sum_cost[k] += r->minimax_cost_0;
                                max_cost[k] = fmax(max_cost[k], r->minimax_cost_0);
                                sum_b0x[k] += r->best_0_at_x;
                                within[k] += r->minimax_ratio <= TARGET_WORST;
                                sum_gain[k] += r->bayes_gain;
                                max_gain[k] = fmin(max_gain[k], r->bayes_gain);
                                sum_bcost[k] += r->bayes_cost_0;
                                for (unsigned b = 0; b < N_BUDGETS; b++) {
                                        sum_bud[k][b] += r->budget_worst[b];
                                        max_bud[k][b] = fmax(max_bud[k][b], r->budget_worst[b]);
                                }
                        }
                        if (r->n_apps == 1) {
                                sum_px += r->pctl_x;
                                sum_p0 += r->pctl_0;
                        }
                }
                for (unsigned k = 0; k < 2; k++) {
                        if (!n_ok[k])
                                continue;
                        printf("bench: blind: %s (%u): minimax mean %.3f, worst %.3f, %u within "
                               "%.2f; its cost at X = 0 mean %.3f, worst %.3f; X = 0's best at "
                               "the app's X mean %.3f",
                               k == 0 ? "single apps" : "every app (alone)", n_ok[k],
                               sum_mm[k] / n_ok[k], worst_mm[k], within[k], TARGET_WORST,
                               sum_cost[k] / n_ok[k], max_cost[k], sum_b0x[k] / n_ok[k]);
                        for (unsigned b = 0; b < N_BUDGETS; b++)
                                printf("; costing X = 0 at most %.0f%%: worst over X mean %.3f, "
                                       "worst %.3f",
                                       100 * budgets[b], sum_bud[k][b] / n_ok[k], max_bud[k][b]);
                        printf("; the prior's best blind choice over X = 0's best: expected "
                               "ratio %+.1f%% on average (largest %+.1f%%), its cost at X = 0 "
                               "mean %.3f",
                               100 * sum_gain[k] / n_ok[k], 100 * max_gain[k],
                               sum_bcost[k] / n_ok[k]);
                        if (k == 0)
                                printf("; pctl at the app's X mean %.3f, at X = 0 %.3f",
                                       sum_px / n_ok[k], sum_p0 / n_ok[k]);
                        printf("\n");
                }
        }
        printf("bench: blind: premise (pctl sees the same for X = 0, the app's X and 0.2 "
               "over the first seconds): holds on %u of %u apps, BROKEN on %u; %u failed to "
               "run\n",
               n - failed - broken, n - failed, broken, failed);
        free(rows);
        free(received);
        return failed || broken ? 1 : 0;
}
