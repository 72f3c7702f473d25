/* What pctl history remembers of an app (include/pctl/history.h): recalled once it is known
 * who the app is, recorded when it leaves; and its extra parallel work across whole runs. */
#include "manager_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "pctl/history.h"
#include "pctl/log.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

int history_work_inflation(const struct estimate_work_run *runs, unsigned n, double *x, double *err,
                           unsigned *ia, unsigned *ib)
{
        unsigned a = 0, b = 0;
        double bx = NAN, berr = INFINITY;
        int r = estimate_work_inflation(runs, n, x, err, &a, &b);

        if (r < 0 || isfinite(*err))
                goto out;
        /* The widest pair does not resolve X (seed 91010's a4: 0.063 ± 0.057 from its runs at
         * 6.7 and 5.9 cores, then 0.11 ± inf once a run at 5.0 came in, and the rest of its
         * runs scored by instructions at 10 cores again): a pair that does still measures it. */
        for (unsigned i = 0; i < n; i++)
                for (unsigned j = i + 1; j < n; j++) {
                        struct estimate_work_run pair[2] = {runs[i], runs[j]};
                        unsigned pa, pb;
                        double px, perr;

                        if (estimate_work_inflation(pair, 2, &px, &perr, &pa, &pb) < 0 ||
                            !isfinite(perr) || !(perr < berr))
                                continue;
                        bx = px;
                        berr = perr;
                        a = pa ? j : i;
                        b = pb ? j : i;
                }
        if (isfinite(berr)) {
                *x = bx;
                *err = berr;
        }
out:
        if (r == 0 && ia)
                *ia = a;
        if (r == 0 && ib)
                *ib = b;
        return r;
}

/* The work inflation of app i from its stored whole runs and, when ended is true, this one
 * (unseen_s: the time it was managed but not seen); the estimator corrects p_run by it. Returns
 * this run when it is one to store (*have_cur). */
static void work_inflation_update(struct manager *m, unsigned i, bool ended,
                                  struct history_run *cur, bool *have_cur)
{
        struct mapp *a = &m->apps[i];
        const struct estimate *e = estimator_get(m->est, a->id);
        struct history_run runs[HISTORY_RUNS_KEEP + 1];
        struct estimate_work_run w[HISTORY_RUNS_KEEP + 1];
        unsigned n = 0, ia = 0, ib = 0;
        double x, err;
        char msg[640];
        int r;

        *have_cur = false;
        r = history_runs(m->opt.history, &a->key, runs, HISTORY_RUNS_KEEP, &n, msg, sizeof(msg));
        if (r < 0) {
                log_warning("%s, ignoring", msg);
                n = 0;
        }
        if (!ended)
                a->last_run_cores = n ? runs[n - 1].cores : 0; /* oldest first */
        if (ended && a->whole_run && e) {
                double managed_s = (platform_now_ns(m->pf) - a->since_ns) / 1e9;
                struct estimate_work_run c;

                if (estimate_work_run(e, fmax(managed_s - e->run_s, 0), &c) == 0) {
                        *cur = (struct history_run){.instructions = c.instructions,
                                                    .instructions_err = c.instructions_err,
                                                    .cores = c.cores};
                        for (unsigned k = 0; k < c.n_bins && k < HISTORY_RUN_BINS; k++) {
                                cur->bins[k].cores = c.bins[k].cores;
                                cur->bins[k].instructions = c.bins[k].instructions;
                                cur->n_bins = k + 1;
                        }
                        runs[n++] = *cur;
                        *have_cur = true;
                }
        }
        for (unsigned k = 0; k < n; k++) {
                w[k] = (struct estimate_work_run){.instructions = runs[k].instructions,
                                                  .instructions_err = runs[k].instructions_err,
                                                  .cores = runs[k].cores};
                for (unsigned q = 0; q < runs[k].n_bins && q < ESTIMATE_RUN_BINS; q++) {
                        w[k].bins[q].cores = runs[k].bins[q].cores;
                        w[k].bins[q].instructions = runs[k].bins[q].instructions;
                        w[k].n_bins = q + 1;
                }
        }
        r = history_work_inflation(w, n, &x, &err, &ia, &ib);
        if (r == -ENODATA)
                return;
        if (r == 0)
                r = estimator_set_work_inflation(m->est, a->id, x);
        if (r < 0) {
                log_debug_errno(r, "%s (pid %d): no work inflation from %u runs: %m", a->name,
                                (int)a->pid, n);
                return;
        }
        a->infl.known = true;
        a->infl.x = x;
        a->infl.err = err;
        a->infl.a = runs[ia];
        a->infl.b = runs[ib];
        log_debug("%s (pid %d): work inflation %.4f ± %.4f per added core (runs at %.2f and %.2f "
                  "cores)",
                  a->name, (int)a->pid, x, err, runs[ia].cores, runs[ib].cores);
}

static const char *const history_start_why_table[_HISTORY_START_WHY_MAX] = {
    [HISTORY_START_MEASURED] = "the best it measured",
    [HISTORY_START_HELD] = "nothing scored: the count it held as it left",
    [HISTORY_START_HELD_SHARED] = "nothing scored: the count sharing cut it to as it left",
    /* In parentheses: one string, not two elements missing a comma (clang's warning). */
    [HISTORY_START_KEPT] = ("nothing scored at the count sharing cut it to: the measured start "
                            "it came with is kept"),
};

const char *history_start_why_to_string(enum history_start_why why)
{
        return why >= 0 && why < _HISTORY_START_WHY_MAX ? history_start_why_table[why] : NULL;
}

int history_start(const struct allocator_point *measured, const struct allocator_point *held,
                  bool held_by_share, const struct allocator_point *remembered,
                  struct allocator_point *out)
{
        if (measured) {
                *out = *measured;
                return HISTORY_START_MEASURED;
        }
        if (!held || !held->cores)
                return -ENODATA;
        /* Sharing set the count and nothing was scored there (a package's power is not split
         * among the apps that share it): the count says what the partition gave it, not what
         * suits it. A start a past run measured says more; an unmeasured one is no better
         * than this run's, which is the newer. */
        if (held_by_share && remembered && remembered->cores && isfinite(remembered->score)) {
                *out = *remembered;
                return HISTORY_START_KEPT;
        }
        *out = *held;
        return held_by_share ? HISTORY_START_HELD_SHARED : HISTORY_START_HELD;
}

bool history_held(const struct allocator_app *al, unsigned n_apps, struct allocator_point *out,
                  bool *by_share)
{
        /* It changed phase before its first phase scored a point (allocator_best): a later
         * phase's configuration would start the next run's first phase there (bench_random's
         * seed 93013: a phase at P 0.45 remembered at 9 cores held the next run's P 0.99 phase
         * on them, 5.86 x the oracle's EDP against 2.21 on the first), and the count its first
         * phase held as it ended is the partition's answer to the apps present then (recorded,
         * it held 93013's a4 on 15 cores through its next run's parallel phase: 1.75 -> 2.37).
         * The count it asked for as it learned that phase (allocator_app.learn_at) is the
         * first phase's own. It is the count learning asked, not one it held: every CPU the
         * policy allows unless a smaller count was chosen from a speedup measured on every
         * core; beside other apps the partition capped what it held (bench_random's seed
         * 91007: a1 held 6 of 12 CPUs as it learned and asked 12). */
        if (al->first_phase.lost) {
                if (!al->learn_at.decided || !al->learn_at.cores)
                        return false;
                *out = (struct allocator_point){
                    .cores = al->learn_at.cores, .score = NAN, .apps = n_apps};
                *by_share = false;
                return true;
        }
        /* No score measured (no counters: busy time only; or sharing a package whose power is
         * not split among its apps): the configuration it held is what was learned; still
         * learning, nothing was. */
        if (!allocator_searched(al) || al->exploring || !al->cores)
                return false;
        *out = (struct allocator_point){
            .cores = al->cores, .freq_khz = al->freq_khz, .score = NAN, .apps = n_apps};
        *by_share = al->share_set_cores && al->share_set_cores == al->cores;
        return true;
}

/* Records what this run of app i taught (pctl history): its best measured configuration and
 * score, P̂, frequency sensitivity, its last speedup stack where it has one; when it ended
 * (seen whole, with counters), its instructions for measuring extra parallel work. A history
 * that refuses (locked, read-only, full) is reported; the apps run on as they were. */
void history_record(struct manager *m, unsigned i, bool ended)
{
        const struct mapp *a = &m->apps[i];
        const struct allocator_app *al = &m->alloc[i];
        const struct estimate *e;
        struct allocator_ctx ctx = decision_ctx(m);
        struct allocator_point best, measured, held = {0};
        bool have_measured, by_share = false;
        struct history_entry h = {.key = a->key};
        char clock[24] = ""; /* " at N MHz"; none where the start leaves the clock open */
        struct json_object *stack;
        char err[640];
        int r, why;

        if (!m->opt.history || !a->have_key)
                return;
        if (ended) {
                struct history_run run;
                bool have_run;

                work_inflation_update(m, i, true, &run, &have_run);
                if (have_run) {
                        r = history_store_run(m->opt.history, &a->key, &run, err, sizeof(err));
                        if (r == -EAGAIN)
                                log_notice("%s", err); /* kept: written when the file is free */
                        else if (r < 0)
                                log_warning("%s; pctld runs on without it", err);
                }
        }
        have_measured = allocator_best(&ctx, al, &measured);
        if (!have_measured && !history_held(al, ctx.n_apps, &held, &by_share) &&
            al->first_phase.lost) {
                log_debug("history: %s (%s): changed phase before its first phase scored a "
                          "point or settled a learn count; not recorded",
                          a->name, a->key.exe);
                return;
        }
        /* The remembered start counts only where this run was placed at it: a start the
         * policy's bounds no longer allow would be kept for ever and never used. */
        why = history_start(have_measured ? &measured : NULL, &held, by_share,
                            al->from_history ? &a->remembered : NULL, &best);
        if (why < 0)
                return;
        /* An exploring run measured the other count, not a better one: what the past runs
         * settled at stays the start (without its score, measured in the other unit or
         * not at all: the model decides once it can rank). */
        if (al->hint.explore_from)
                best = (struct allocator_point){.cores = al->hint.explore_from,
                                                .freq_khz = al->hint.freq_khz,
                                                .score = NAN,
                                                .apps = al->hint.apps};
        e = estimator_get(m->est, a->id);
        (void)strscpy(h.objective, objective_to_string(a->policy.objective), sizeof(h.objective));
        h.p = e && (e->known & ESTIMATE_P_LS) ? e->p_ls : NAN;
        h.mem_fraction = e && isfinite(e->mem_fraction) ? e->mem_fraction : NAN;
        h.best_cores = best.cores;
        h.best_freq_khz = best.freq_khz;
        h.best_score = best.score;
        h.shared_apps = best.apps;
        stack = appstack_json(m->stacks, a->pid);
        h.stack_json =
            stack ? (char *)json_object_to_json_string_ext(stack, JSON_C_TO_STRING_PLAIN) : NULL;
        r = history_store(m->opt.history, &h, err, sizeof(err));
        json_object_put(stack); /* h.stack_json was the stack's own string */
        if (best.freq_khz)
                snprintf(clock, sizeof(clock), " at %u MHz", best.freq_khz / 1000);
        if (r == -EAGAIN)
                log_notice("%s", err);
        else if (r < 0)
                log_warning("%s; pctld runs on without it", err);
        else
                log_debug("history: %s (%s): %u core%s%s recorded as its start (%s)", a->name,
                          a->key.exe, best.cores, plural_s(best.cores), clock,
                          al->hint.explore_from
                              ? "an exploring run: the start its past runs settled at is kept"
                          : !al->first_phase.lost ? history_start_why_to_string(why)
                          : have_measured
                              ? "its first phase changed while it learned: the best it measured "
                                "as it learned"
                              : "its first phase changed while it learned, nothing scored: the "
                                "count it asked for as it learned that phase, not what sharing "
                                "let it hold");
}

/* Whether this run of a returning app explores (docs/history.md, "Progress from whole runs"):
 * without markers and without its extra work measured (within a stated error), after
 * HISTORY_EXPLORE_AFTER runs that ran at about one count, the next HISTORY_EXPLORE_RUNS run(s)
 * hold half the remembered cores, so that whole runs at two counts measure it. A best of one
 * core needs no more: extra work grows with cores it does not use. */
#define HISTORY_EXPLORE_AFTER 2
#define HISTORY_EXPLORE_RUNS 1
/* Explored only when its last whole run ran within this factor of the remembered count (its
 * instruction-weighted mean): the exploration's own spread. Further off, the run did not run
 * where it settled (sharing the machine set its cores, and it settled elsewhere once alone):
 * half the remembered count, held for a whole run, is no measurement of where it runs, and
 * can cost the run many times over (bench_random's seed 5718: settled at 4 cores alone at its
 * end, 19 on average, explored at 2: 2.5 x the oracle's EDP against 1.2). */
#define HISTORY_EXPLORE_RAN_NEAR 2.0

/* Its last whole run ran within HISTORY_EXPLORE_RAN_NEAR of the remembered count (or no run
 * is stored to say otherwise). */
static bool history_ran_near(const struct mapp *a, const struct history_entry *h)
{
        return !(a->last_run_cores > 0) ||
               (a->last_run_cores <= HISTORY_EXPLORE_RAN_NEAR * h->best_cores &&
                a->last_run_cores * HISTORY_EXPLORE_RAN_NEAR >= h->best_cores);
}

static bool history_explores(const struct mapp *a, const struct allocator_app *al,
                             const struct history_entry *h)
{
        bool ran_near = history_ran_near(a, h);

        return !(a->infl.known && isfinite(a->infl.err)) && !al->progress_known &&
               h->best_cores >= 2 && h->runs >= HISTORY_EXPLORE_AFTER &&
               h->runs < HISTORY_EXPLORE_AFTER + HISTORY_EXPLORE_RUNS && ran_near;
}

/* Looks app i up in the history once it is known who it is: a past run's best configuration
 * becomes the allocator's starting point (allocator_app.hint.cores). */
void history_recall(struct manager *m, unsigned i)
{
        struct mapp *a = &m->apps[i];
        struct allocator_app *al = &m->alloc[i];
        struct history_entry h;
        char err[640], cal[32];
        int r;

        if (!m->opt.history || a->key_tried)
                return;
        /* `pctl run`'s child is adopted before its exec: who it is shows after it. */
        if (a->exec_comm[0] && strcmp(a->comm, a->exec_comm) == 0)
                return;
        /* A program that sizes its thread pool from the CPUs it sees (xz -T0, OpenMP's
         * default, nproc-driven builds) does so as it starts: `pctl run`'s child sees every
         * CPU its policy allows through its start-up (the warm-up), and only then goes to
         * its remembered CPUs, or it could never use more cores later. */
        if (a->exec_comm[0] && m->sample.timestamp_ns < a->since_ns + MANAGER_WARMUP_NS)
                return;
        a->key_tried = true;
        r = platform_proc_identity(m->pf, a->pid, a->key.exe, sizeof(a->key.exe),
                                   &a->key.args_hash);
        if (r < 0) {
                log_debug_errno(r, "history: cannot tell who %s (pid %d) is, not remembered: %m",
                                a->name, (int)a->pid);
                return;
        }
        (void)strscpy(a->key.policy, a->policy.name, sizeof(a->key.policy));
        snprintf(cal, sizeof(cal), "%016llx",
                 (unsigned long long)history_hash(m->opt.calibration, strlen(m->opt.calibration)));
        (void)strscpy(a->key.calibration, cal, sizeof(a->key.calibration));
        a->have_key = true;
        {
                struct history_run unused;
                bool none;

                work_inflation_update(m, i, false, &unused, &none);
        }
        /* Whole runs at two core counts measured its extra work, within a stated error:
         * without markers, its progress is its instructions over that (docs/history.md,
         * "Progress from whole runs"). */
        if (a->infl.known && isfinite(a->infl.err)) {
                al->history_x_known = true;
                al->history_x = a->infl.x;
        }
        r = history_lookup(m->opt.history, &a->key, &h, err, sizeof(err));
        if (r == -ENOENT)
                return;
        if (r < 0) {
                log_warning("%s, ignoring", err);
                return;
        }
        if (h.best_cores && strcmp(h.objective, objective_to_string(a->policy.objective)) == 0) {
                a->remembered = (struct allocator_point){.cores = h.best_cores,
                                                         .freq_khz = h.best_freq_khz,
                                                         .score = h.best_score,
                                                         .apps = h.shared_apps};
                al->hint.cores = h.best_cores;
                al->hint.freq_khz = h.best_freq_khz;
                /* A score remembered by instructions is not one by progress: the model
                 * decides once it can rank (an entry does not say which it was). */
                al->hint.score = al->history_x_known ? NAN : h.best_score;
                al->hint.apps = h.shared_apps;
                char mhz[32] = "";

                if (history_explores(a, al, &h)) {
                        al->hint.explore_from = h.best_cores;
                        al->hint.cores = h.best_cores / 2;
                        al->hint.score = NAN;
                }
                if (h.best_freq_khz)
                        snprintf(mhz, sizeof(mhz), " at %u MHz", h.best_freq_khz / 1000);
                log_app_info(a->name, (int)a->pid, a->policy.name,
                             "%s (pid %d): from history (%u past runs, P %.2f): starts at %u "
                             "cores%s%s",
                             a->name, (int)a->pid, h.runs, h.p, al->hint.cores, mhz,
                             al->hint.explore_from ? " (exploring: its extra work is not measured)"
                                                   : "");
        }
        history_entry_clear(&h);
}
