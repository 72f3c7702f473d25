/* Sharing the machine (docs/allocator.md, "Several apps: one partition, chosen by the
 * model"): learners on CPUs of their own, frequency domains of their own for apps that want a
 * lower clock, and the partition of the managed CPUs, trimmed one core at a time by the
 * model's marginal cost. */

#include "alloc_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/util.h"

/* Sharing: taking a core an app holds now (a move for it) must save this much more, by the
 * model, than denying a core another app does not hold yet. */
#define ALLOCATOR_TRIM_STICKY 1.0
/* Sharing, an app the model cannot rank yet (a learner) is given at most its fair share by
 * weight and at most this many cores (per unit of weight): enough to learn P on, without
 * taking a settled app's cores for the learning. */
#define ALLOCATOR_LEARNER_CORES 8.0

/* Spreading an app over the packages: the share of its cycles its counters count stalled
 * from which it is spread, and by which that share must fall for a trial of spreading beside
 * other apps to stand. Above the counters' noise (0.5-3 % per sample), so only an app that
 * waits on memory is spread, and only a fall the spreading caused keeps it so: for it, each
 * package adds the bandwidth of its own memory controllers. Not the estimator's memory
 * fraction: fitted from the IPC at two clocks, it read 6 % for a compute-bound app under 3 %
 * noise on the model machine. */
#define ALLOCATOR_SPREAD_STALL 0.05

/* What one core less than its reserve costs the app, by the model: the relative rise of its
 * predicted score at the frequency it wants, times its weight (its share of contended cores:
 * a loss to a heavier app counts for more). Trimming the least of these costs each time
 * minimises the apps' weighted sum of log scores, the same for every app whatever its length
 * (docs/allocator.md, "Not done": the sum of EDPs would need each app's remaining work). NaN
 * when the model cannot say. */
static double trim_cost(const struct allocator_ctx *ctx, const struct allocator_app *a)
{
        double now =
            alloc_predicted_score(ctx, a, a->effective, a->reserve_cores, a->want_freq_khz, NULL);
        double less = alloc_predicted_score(ctx, a, a->effective, a->reserve_cores - 1,
                                            a->want_freq_khz, NULL);

        if (!isfinite(now) || !isfinite(less) || now == 0)
                return NAN;
        return (less - now) / fabs(now) * a->policy->weight;
}

/* The stalled share of the cycles of an app's cores making progress, as its counters count
 * them. A spinning thread's cycles are busy without progress and retire little, so count
 * stalled: they are left out. NaN when unknown, or where another app time-shares its CPUs.
 * stall_share is the same where the estimator has no frequency sensitivity of its own (it
 * never ran at another clock: in a shared domain it cannot): the cycles that do not shrink
 * with the clock. */
static double counted_stall_share(const struct allocator_ctx *ctx, const struct allocator_app *a)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);
        unsigned need = ESTIMATE_STALLS | ESTIMATE_IPC | ESTIMATE_I0 | ESTIMATE_SPEEDUP;
        double core, cycles, spin, share;

        if (!e || (e->known & need) != need || !isfinite(e->busy_cores) || !(e->ipc > 0))
                return NAN;
        core = e->i0 / e->ipc; /* the busiest core's cycles */
        cycles = core * e->speedup;
        spin = e->busy_cores > e->speedup ? core * (e->busy_cores - e->speedup) : 0;
        share = (e->stalls - spin) / cycles;
        return cycles > 0 && share >= 0 && share <= 1 ? share : NAN;
}

static double stall_share(const struct allocator_ctx *ctx, const struct allocator_app *a)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);

        if (!e || (e->known & ESTIMATE_MEM_FRACTION))
                return NAN;
        return counted_stall_share(ctx, a);
}

/* The app's predicted score at a frequency the fitted power model has not seen (it knows only
 * those the machine ran at; an app in a shared domain cannot show it another): below the
 * lowest one seen, the core power there scaled down by the clock. Dynamic power is C V^2 f, so
 * at a fixed voltage it falls at least in proportion to the clock; the voltage falling with it
 * only saves more. The bound errs towards the higher clock. time_k as predicted_score_k. NaN
 * when even that is unknown. */
static double score_clock_scaled(const struct allocator_ctx *ctx, const struct allocator_app *a,
                                 unsigned cores, unsigned freq_khz, double time_k)
{
        struct model_power pm;
        struct allocator_ctx c = *ctx;
        const struct model_power_point *above = NULL;

        if (!ctx->pm)
                return NAN;
        pm = *ctx->pm;
        for (unsigned i = 0; i < pm.n_points && !above; i++)
                if (pm.points[i].freq_khz >= freq_khz)
                        above = &pm.points[i];
        if (!above)
                return NAN;
        /* Between two clocks it has seen, the fit interpolates: only below them is a bound
         * needed. */
        if (above == pm.points && above->freq_khz != freq_khz &&
            model_power_set_point(&pm, freq_khz, above->core_w * freq_khz / above->freq_khz,
                                  above->idle_w) < 0)
                return NAN;
        c.pm = &pm;
        return alloc_predicted_score_k(&c, a, a->effective, cores, freq_khz, NULL, time_k);
}

double alloc_score_at_clock(const struct allocator_ctx *ctx, const struct allocator_app *a,
                            unsigned freq_khz, unsigned ref_khz)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);
        bool own = e && (e->known & ESTIMATE_MEM_FRACTION);
        double m = stall_share(ctx, a);
        unsigned ran;

        if (!e || (!own && isnan(m)))
                return NAN;
        /* Without a sensitivity of its own the estimator scales all its time with the clock
         * from the one it ran at: the stalled share does not scale. */
        ran = e->freq_khz ? e->freq_khz : ref_khz;
        return score_clock_scaled(ctx, a, a->want_cores, freq_khz,
                                  own ? 1.0 : (1 - m) + m * (double)freq_khz / ran);
}

/* A domain of its own (docs/allocator.md): apps sharing a frequency domain run at the highest
 * frequency wanted there and cannot probe another, so an app that would do better at a lower
 * clock than its neighbours (memory-bound: its time hardly follows the clock) never finds out.
 * The model says so without a probe: true when its predicted score at a lower frequency than
 * the neighbours' beats the one at theirs by more than the hysteresis, with the estimator's
 * frequency sensitivity, else the stalled share of its cycles (stall_share), and the
 * power at clocks the fit has not seen bounded from above (score_clock_scaled). The
 * reason names the figures; *best_khz is that frequency. */
static bool wants_lower_clock(const struct allocator_ctx *ctx, const struct allocator_app *a,
                              unsigned theirs_khz, double margin, char *why, size_t why_size,
                              unsigned *best_khz)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);
        double m = stall_share(ctx, a), at, best = NAN;
        bool own = e && (e->known & ESTIMATE_MEM_FRACTION);
        struct allocator_bounds b;

        if (!e || (!own && isnan(m)) || isfinite(a->policy->max_slowdown))
                return false; /* a slowdown bound is checked by measuring, not here */
        alloc_app_bounds(ctx, a, &b);
        at = alloc_score_at_clock(ctx, a, theirs_khz, theirs_khz);
        if (!isfinite(at) || at <= 0)
                return false;
        for (unsigned i = 0; i < ctx->n_freqs && ctx->freqs_khz[i] < theirs_khz; i++) {
                unsigned f = ctx->freqs_khz[i];
                double s = alloc_freq_in(&b, f) ? alloc_score_at_clock(ctx, a, f, theirs_khz) : NAN;

                if (isfinite(s) && (isnan(best) || s < best)) {
                        best = s;
                        *best_khz = f;
                }
        }
        if (isnan(best) || !objective_better(at, best, margin))
                return false;
        if (own)
                snprintf(why, why_size, "the model puts its %s at %u MHz %.0f%% below %u MHz",
                         objective_to_string(a->effective), *best_khz / 1000, 100 * (1 - best / at),
                         theirs_khz / 1000);
        else
                snprintf(why, why_size,
                         "%.0f%% of its cycles stall: the model puts its %s at %u MHz %.0f%% "
                         "below %u MHz",
                         100 * m, objective_to_string(a->effective), *best_khz / 1000,
                         100 * (1 - best / at), theirs_khz / 1000);
        return true;
}

/* The highest clock the apps other than a, outside domains of their own, want. */
static unsigned others_clock(const struct allocator_app *apps, unsigned n,
                             const struct allocator_app *a)
{
        unsigned theirs = 0;

        for (unsigned j = 0; j < n; j++)
                if (&apps[j] != a && !apps[j].own_domain && apps[j].want_freq_khz > theirs)
                        theirs = apps[j].want_freq_khz;
        return theirs;
}

/* Gives apps that want a lower clock than the others a frequency domain of their own, while
 * at least one domain and the others' minimums fit in the rest. An app keeps its domain while
 * its want fits one and either its clock is still to be learned or it wants a lower one than
 * the others (its own search, alone there, chose it); an app whose clock turned out to be the
 * others' gives it back. Returns the CPUs so set aside. */
static unsigned own_domains(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        unsigned dom = ctx->domain_cpus, granted = 0, others_min = 0;

        for (unsigned i = 0; i < n; i++)
                if (apps[i].shares_cpus)
                        dom = 0; /* a learner on every CPU shares every domain */
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];

                if (a->own_domain &&
                    (!dom || n < 2 || a->reserve_cores > dom || a->want_cores > dom)) {
                        a->own_domain = false;
                        a->domain_returned = ctx->decision;
                }
                if (a->own_domain) {
                        const struct estimate *e = estimator_get(ctx->est, a->id);
                        bool learned = e && (e->known & ESTIMATE_MEM_FRACTION);

                        if (e && (learned || a->clock_probed) &&
                            a->want_freq_khz >= others_clock(apps, n, a)) {
                                a->own_domain = false;
                                a->domain_returned = ctx->decision;
                                snprintf(a->reason + strlen(a->reason),
                                         sizeof(a->reason) - strlen(a->reason),
                                         " (its clock is the others': its frequency domain "
                                         "shared again)");
                        } else if (!learned && e && a->clock_probed &&
                                   ctx->decision > a->clock_probed && e->freq_khz &&
                                   e->freq_khz == a->freq_khz) {
                                /* Below the others' clock, the domain measures its clock
                                 * against the one the app ran at before: once the
                                 * estimator has seen an interval at the domain's clock, it
                                 * fits the sensitivity from the IPC at both. Without it
                                 * then, the other clock's figures are gone (its fit
                                 * restarted at a phase it saw; a cut of cores shows as
                                 * one) and, at one clock in its domain, never come back:
                                 * held, the domain would never be given back. It runs at
                                 * the others' clock again, where the fit gets its second
                                 * clock. */
                                unsigned theirs = others_clock(apps, n, a);

                                a->own_domain = false;
                                a->domain_returned = ctx->decision;
                                a->clock_probed = 0; /* its clock was not measured */
                                if (theirs)
                                        a->want_freq_khz = theirs;
                                snprintf(a->reason + strlen(a->reason),
                                         sizeof(a->reason) - strlen(a->reason),
                                         " (its frequency sensitivity is not known at its own "
                                         "clock: its frequency domain shared again)");
                        }
                }
                if (!a->own_domain)
                        others_min += a->policy->min_cores ? a->policy->min_cores : 1;
        }
        if (!dom)
                return 0;
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];

                if (!a->own_domain)
                        continue;
                if (granted + 2 * dom > ctx->n_cpus || others_min > ctx->n_cpus - granted - dom) {
                        a->own_domain = false; /* no room left for the others */
                        a->domain_returned = ctx->decision;
                        others_min += a->policy->min_cores ? a->policy->min_cores : 1;
                        continue;
                }
                granted += dom;
        }
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];
                unsigned theirs, khz = 0, min = a->policy->min_cores ? a->policy->min_cores : 1;
                double margin;
                char why[160];

                /* A domain given back at this decision because its clock could not be
                 * measured is not granted again in it: the app first runs at the others'
                 * clock, the one its fit lacks, or it would be sent back to the clock it
                 * cannot learn at, decision after decision. */
                if (a->own_domain || a->want_cores > dom || a->reserve_cores > dom ||
                    (a->domain_returned == ctx->decision && !a->clock_probed))
                        continue;
                theirs = others_clock(apps, n, a);
                if (!theirs || granted + 2 * dom > ctx->n_cpus ||
                    others_min - min > ctx->n_cpus - granted - dom)
                        continue;
                /* The CPUs of the domain it leaves idle are withheld from the others: the
                 * gain must pay for them, up to the hysteresis for a domain it would leave
                 * all but empty. Each grant moves every app: a domain it gave back is granted
                 * again only for a gain past the hysteresis, or the apps pass domains
                 * around. */
                margin =
                    ALLOCATOR_SEARCH_MARGIN +
                    ctx->hysteresis * (dom - (a->want_cores < dom ? a->want_cores : dom)) / dom;
                if (a->domain_returned && margin < ctx->hysteresis)
                        margin = ctx->hysteresis;
                /* A spinner's waiting threads spin in a loop that stalls, so its stalled
                 * share reads as memory-bound, and the lower clock that share asks for is the
                 * model's call, which only the app's measured score could refute. Where that
                 * score cannot be measured while it shares (no power of its own), nothing
                 * would: it would hold the clock until it is alone, as a probe sharing cannot
                 * measure would be held (probe_measured_first). */
                if (alloc_spins(a) &&
                    !alloc_score_measurable(ctx, a, estimator_get(ctx->est, a->id)))
                        continue;
                if (!wants_lower_clock(ctx, a, theirs, margin, why, sizeof(why), &khz))
                        continue;
                a->own_domain = true;
                a->clock_probed = ctx->decision;
                a->want_freq_khz = khz;
                granted += dom;
                others_min -= min;
                snprintf(a->reason + strlen(a->reason), sizeof(a->reason) - strlen(a->reason),
                         " (a frequency domain of its own, at %u MHz: %s)", khz / 1000, why);
        }
        return granted;
}

/* Alone in its domain, its frequency sensitivity learned there, the app's cores and clock
 * within the domain are the model's choice (the fit has seen the domain at both clocks): its
 * score cannot be measured while it shares the machine without a power of its own, and no
 * other app may use the domain's CPUs. Moves only for the hysteresis; says why. */
static void clock_choose(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        struct allocator_bounds b;
        double at, best;
        unsigned best_n = a->want_cores, best_khz = a->want_freq_khz, top;

        alloc_app_bounds(ctx, a, &b);
        top = b.max_cores < ctx->domain_cpus ? b.max_cores : ctx->domain_cpus;
        at = score_clock_scaled(ctx, a, a->want_cores, a->want_freq_khz, 1.0);
        best = at;
        for (unsigned n = b.min_cores; n <= top; n++)
                for (unsigned i = 0; i < ctx->n_freqs; i++) {
                        double s = alloc_freq_in(&b, ctx->freqs_khz[i])
                                       ? score_clock_scaled(ctx, a, n, ctx->freqs_khz[i], 1.0)
                                       : NAN;

                        if (isfinite(s) && (isnan(best) || s < best)) {
                                best = s;
                                best_n = n;
                                best_khz = ctx->freqs_khz[i];
                        }
                }
        if ((best_n == a->want_cores && best_khz == a->want_freq_khz) || !isfinite(at) ||
            !objective_better(at, best, ctx->hysteresis))
                return;
        snprintf(a->reason + strlen(a->reason), sizeof(a->reason) - strlen(a->reason),
                 "; alone in its domain, its frequency sensitivity learned: model %s %.0f%% "
                 "better at %u core%s %u MHz",
                 objective_to_string(a->effective), 100 * (at - best) / fabs(at), best_n,
                 plural_s(best_n), best_khz / 1000);
        a->want_cores = best_n;
        a->want_freq_khz = best_khz;
}

/* Whether spreading `a` relieved the stalls: its own fell, and not onto the others. The
 * bandwidth it finds on another package is that package's apps' too, so what counts is the
 * stalled cores of every app (its stalled share times its cores) at the count it had when the
 * trial began: summed, they must fall by ALLOCATOR_SPREAD_STALL of the spread app's cores. An
 * app whose count moved, or whose stalls are not known at both ends, is left out. */
static bool spread_relieves(const struct allocator_ctx *ctx, const struct allocator_app *apps,
                            unsigned n, const struct allocator_app *a)
{
        double change = 0;

        for (unsigned i = 0; i < n; i++) {
                const struct allocator_app *o = &apps[i];
                double now;

                if (o->effective == OBJECTIVE_MONITOR || o->shares_cpus ||
                    o->cores != o->spreading.cores || !isfinite(o->spreading.stall_at))
                        continue;
                now = counted_stall_share(ctx, o);
                if (isfinite(now))
                        change += (now - o->spreading.stall_at) * o->cores;
        }
        return change <= -ALLOCATOR_SPREAD_STALL * a->cores;
}

/* Spreading over packages (docs/allocator.md): an app whose cores stall on memory is placed
 * evenly over the packages (allocator_place). Each package has memory controllers of its
 * own, so packed on one an app is held to that package's bandwidth, which the apps there
 * share, while the others' may idle. Alone, it moves no other app and shares no package's
 * clock: it is spread as soon as it stalls, and stays so. Beside others, stalls do not say
 * whether they are a package's bandwidth (which spreading relieves) or memory latency (which
 * it does not), and spreading moves the others' CPUs, so it is a trial: one app at a time,
 * the most stalled first, at a count it has held since the last decision, judged at the next
 * decision at the same count. Stalls relieved (spread_relieves) keep it spread (packing it
 * again would move it back into them); otherwise it is no longer placed spread (it keeps its
 * CPUs as any app does) and is not tried again beside as many apps or more. That verdict was
 * on the stalls beside the apps then: once fewer share the machine (one left, and the bandwidth
 * it used), it may be tried again, and alone it is spread as any app alone. A count that moved in
 * between says nothing (more cores stall more on a package's bandwidth): the trial ends untried.
 * While an app holds a frequency domain of its own, none is spread: the packages are kept whole for
 * the clocks. */
static void spread_stalled(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        struct allocator_app *next = NULL;
        double next_stall = 0;
        bool open = false, domains = false;
        unsigned managed = 0;

        for (unsigned i = 0; i < n; i++) {
                domains |= apps[i].own_domain;
                managed += apps[i].effective != OBJECTIVE_MONITOR;
        }
        for (unsigned i = 0; i < n; i++) {
                struct allocator_app *a = &apps[i];
                double stall;
                bool held;

                if (a->effective == OBJECTIVE_MONITOR || a->shares_cpus || domains ||
                    (a->spreading.refuted && managed >= a->spreading.refuted_among)) {
                        a->spread = false;
                        a->spreading.since = 0;
                        a->spreading.stood = false;
                        continue;
                }
                stall = counted_stall_share(ctx, a);
                if (a->spreading.prev_cores != a->cores) {
                        a->spreading.prev_cores = a->cores;
                        a->spreading.prev_since = ctx->decision;
                }
                held = ctx->decision > a->spreading.prev_since;
                if (managed == 1) {
                        /* Alone it moves no other app's CPUs and shares no package: spread
                         * while it stalls, and kept so, without a trial. */
                        a->spreading.since = 0;
                        a->spread = a->spread || stall >= ALLOCATOR_SPREAD_STALL;
                        continue;
                }
                if (!a->spread) {
                        /* One core cannot be spread; a count just set (or about to
                         * change) would not be the one the trial is judged at. */
                        if (a->cores >= 2 && a->want_cores == a->cores && held &&
                            stall >= ALLOCATOR_SPREAD_STALL && stall > next_stall) {
                                next = a;
                                next_stall = stall;
                        }
                        continue;
                }
                if (!a->spreading.since)
                        continue; /* judged */
                if (ctx->decision <= a->spreading.since || !isfinite(stall)) {
                        open = true; /* not measured spread yet */
                        continue;
                }
                a->spreading.since = 0;
                if (a->cores != a->spreading.cores) {
                        /* Its count moved: more or fewer cores move its stalls too, so the
                         * trial says nothing; it may be tried again. */
                        a->spread = false;
                        continue;
                }
                if (!spread_relieves(ctx, apps, n, a)) {
                        a->spread = false;
                        a->spreading.refuted = true;
                        a->spreading.refuted_among = managed;
                } else {
                        a->spreading.stood = true; /* for pctl status: why it stays spread */
                }
        }
        /* One trial at a time, the most stalled app first: each moves the others' CPUs. None
         * begins on a probe of bandwidth's intervals or the decision after: it waits until
         * the stalls are the placement's again. */
        if (next && !open && !ctx->probe_quiet) {
                next->spread = true;
                next->spreading.since = ctx->decision;
                next->spreading.stood = false;
                for (unsigned i = 0; i < n; i++) {
                        apps[i].spreading.stall_at = counted_stall_share(ctx, &apps[i]);
                        apps[i].spreading.cores = apps[i].cores;
                }
        }
}

/* An app alone in its domain: once the estimator has learned its frequency sensitivity there
 * (from the clock it was given with the domain and the one it ran at before), the model
 * chooses the domain's clock (clock_choose). */
static void clock_probe(const struct allocator_ctx *ctx, struct allocator_app *a)
{
        const struct estimate *e = estimator_get(ctx->est, a->id);

        if (a->own_domain && !a->freq_shared && ctx->n_freqs && e && a->clock_probed &&
            a->clock_probed != ctx->decision && (e->known & ESTIMATE_MEM_FRACTION))
                clock_choose(ctx, a);
}

/* Shares ctx->n_cpus among the apps' wants (decided by decide_one): learners on CPUs of
 * their own where they fit, frequency domains of their own, then the partition, trimmed one
 * core at a time. -ENOSPC when the apps' minimums alone do not fit. */
int alloc_share_machine(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        unsigned total = 0, learners = 0, settled = 0;
        double weights = 0;

        for (unsigned i = 0; i < n; i++) {
                if (apps[i].effective == OBJECTIVE_MONITOR)
                        continue; /* only watched: outside the partition */
                if (apps[i].shares_cpus)
                        learners++;
                else
                        settled += apps[i].reserve_cores;
        }
        /* Learners time-share CPUs only when neither what the others leave them nor the
         * machine split among all apps can give each two of its own (P cannot be learned on
         * one): on CPUs of their own they disturb no partitioned app's measurements, and are
         * not slowed by one either. Where every app can have two, the partition below makes
         * room (a learner down to its fair share, at most ALLOCATOR_LEARNER_CORES; the others
         * by the model's marginal cost): a learner time-sharing a settled app's CPUs slows
         * that app for the whole of its learning. */
        for (unsigned i = 0; i < n; i++) {
                if (apps[i].shares_cpus && apps[i].effective != OBJECTIVE_MONITOR &&
                    (settled + ALLOCATOR_LEARN_MIN_CORES * learners <= ctx->n_cpus ||
                     ALLOCATOR_LEARN_MIN_CORES * n <= ctx->n_cpus)) {
                        apps[i].shares_cpus = false;
                        snprintf(apps[i].reason + strlen(apps[i].reason),
                                 sizeof(apps[i].reason) - strlen(apps[i].reason),
                                 " (on CPUs of its own)");
                }
        }
        /* Apps given a domain of their own hold all of it; the others share the rest. */
        total = own_domains(ctx, apps, n);
        for (unsigned i = 0; i < n; i++)
                clock_probe(ctx, &apps[i]);
        alloc_shared_clock(ctx, apps, n);
        for (unsigned i = 0; i < n; i++)
                if (!apps[i].shares_cpus && !apps[i].own_domain)
                        total += apps[i].reserve_cores;
        /* Too many wants: take cores, one at a time. First from an app the model cannot
         * rank (a learner) above its fair share by weight, the one holding the most per unit
         * of weight; then from the app the model says loses least by it (the relative rise of
         * its predicted score, times its weight), which is how the partition is chosen
         * jointly; else by cores per weight. Never below an app's minimum. */
        for (unsigned i = 0; i < n; i++)
                if (!apps[i].shares_cpus)
                        weights += apps[i].policy->weight;
        while (total > ctx->n_cpus) {
                struct allocator_app *victim = NULL, *cheapest = NULL, *unknown = NULL;
                double worst = -1, worst_unknown = -1, least = NAN;

                for (unsigned i = 0; i < n; i++) {
                        struct allocator_app *a = &apps[i];
                        unsigned min = a->policy->min_cores ? a->policy->min_cores : 1;
                        double per_weight = a->reserve_cores / a->policy->weight, cost;

                        if (a->shares_cpus || a->own_domain || a->reserve_cores <= min)
                                continue;
                        if (per_weight > worst) {
                                worst = per_weight;
                                victim = a;
                        }
                        cost = trim_cost(ctx, a);
                        if (isnan(cost)) {
                                if (per_weight >
                                        fmin(ctx->n_cpus / weights, ALLOCATOR_LEARNER_CORES) &&
                                    per_weight > worst_unknown) {
                                        worst_unknown = per_weight;
                                        unknown = a;
                                }
                                continue;
                        }
                        /* Cores it holds now cost a move to take: a core it does not hold
                         * yet is denied first, unless that saves clearly less. */
                        if (a->reserve_cores <= a->cores)
                                cost *= 1 + ALLOCATOR_TRIM_STICKY;
                        if (isnan(least) || cost < least) {
                                least = cost;
                                cheapest = a;
                        }
                }
                if (unknown)
                        victim = unknown;
                else if (cheapest)
                        victim = cheapest;
                if (!victim)
                        return -ENOSPC; /* the minimums alone do not fit */
                victim->reserve_cores--;
                total--;
                if (victim->want_cores <= victim->reserve_cores)
                        continue; /* a probe below its reserve goes on */
                if (victim->exploring) {
                        /* What it asked for, before this trim: it is a probe no more. */
                        victim->denied.cores = victim->want_cores;
                        victim->denied.freq_khz = victim->want_freq_khz;
                        victim->denied.decision = ctx->decision;
                        victim->denied.by_share = true;
                        victim->exploring = false;
                }
                victim->want_cores = victim->reserve_cores;
                victim->share_set_cores = victim->want_cores;
                snprintf(victim->reason, sizeof(victim->reason),
                         "sharing %u CPUs among %u apps by weight", ctx->n_cpus, n);
                alloc_idle_run_note(ctx, victim);
                alloc_wait_note(ctx, victim);
        }
        spread_stalled(ctx, apps, n);
        return 0;
}
