/* The allocator: each decision, a core count and a frequency for every managed app, then
 * which CPUs. It starts from the model's prediction (estimator_predict), verifies by
 * measurement (the objective's steady-state rate, e.g. W/IPS^2) and moves towards the better
 * neighbour when the model is wrong. Hysteresis keeps it from thrashing; every change comes
 * with a reason. Pure: estimates in, a plan out. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "pctl/cpumask.h"
#include "pctl/estimator.h"
#include "pctl/model.h"
#include "pctl/objective.h"
#include "pctl/stack.h"
#include "pctl/policy.h"
#include "pctl/scaling.h"
#include "pctl/topology.h"

#define ALLOCATOR_HISTORY 48
#define ALLOCATOR_IPU_POINTS 8

/* Where an app is in the allocator's state machine (docs/allocator.md, "Phases": what each
 * does, each exit and its condition). The phase changes only at a decision. */
enum allocator_phase {
        ALLOCATOR_PHASE_NEW,     /* not decided yet (zero-initialised) */
        ALLOCATOR_PHASE_MONITOR, /* objective monitor: watched, never moved */
        ALLOCATOR_PHASE_RECALL,  /* at a configuration pctl history remembered, verifying it */
        ALLOCATOR_PHASE_LEARN,   /* held at its baseline until P is settled */
        ALLOCATOR_PHASE_PROBE,   /* on one core for its own IPC_I0(1), then back */
        ALLOCATOR_PHASE_SEARCH,  /* the measured search: probes around the best point */
        ALLOCATOR_PHASE_SETTLED, /* every neighbour of the best point measured worse */
        ALLOCATOR_PHASE_MODEL,   /* policy search = model: the model's best, nothing measured */
        _ALLOCATOR_PHASE_MAX,
};

/* The phase's name ("new", "monitor", "recall", "learn", "probe", "search", "settled",
 * "model"), NULL for a value out of range. */
const char *allocator_phase_to_string(enum allocator_phase p);

/* A configuration the app ran at, and the objective's measured score there (lower is better),
 * averaged over the decisions it was measured in. */
struct allocator_point {
        unsigned cores;
        unsigned freq_khz;
        double score;
        unsigned samples;
        uint64_t decision; /* when last measured */
        unsigned apps;     /* apps managed then (ctx->n_apps): the sharing it was measured in */
        /* Back at a point measured before: the new visit's own mean, compared with `score`
         * once it is complete. A different figure means the app changed (a phase the
         * estimator may not see), and every other point is then as stale as this one was. */
        double revisit_score;
        unsigned revisit_samples;
};

struct allocator_app {
        /* In: set by the caller. */
        uint64_t id;
        const struct policy *policy;
        /* Its speedup stack at the current setting (known false: none). A delimiter that
         * grows with the cores makes the search try fewer cores first; interference, a lower
         * clock (docs/allocator.md, "The speedup stack"). */
        struct stack stack;
        unsigned cores;    /* held now */
        unsigned freq_khz; /* its CPUs run at now; 0 without DVFS */
        /* Progress the app reports itself (include/pctl/progress.h): the units of work it
         * has marked so far and when they were read. Known, its measured score is per unit of
         * work instead of per instruction, which overstates progress when the work inflates
         * with threads (docs/allocator.md, "Progress"). */
        bool progress_known;
        uint64_t progress_units;
        uint64_t progress_ns;
        /* Without markers, the work inflation per added core that whole runs of the same app
         * in history measured (docs/history.md, "Progress from whole runs"): its instructions
         * per second at k cores count as 1 / (1 + history_x (k - 1)) of progress. */
        bool history_x_known;
        double history_x;
        /* Its CPUs share a frequency domain with another app's: the domain runs at the
         * highest frequency wanted there, so this app's own frequency moves could not be
         * made (nor measured). It keeps its frequency and searches over cores only. */
        bool freq_shared;
        /* The memory bandwidth of the packages its CPUs lie on, where it is known (measured
         * there or on an alike package, model/membw.c; bandwidth_gbs 0: not known, it moves no
         * traffic, or it is alone): its bytes per instruction, the bandwidth and the other
         * apps' traffic there now. Its predicted
         * instruction rate is slowed by the packages' demand over their bandwidth, as every
         * app moving traffic on a full package is (docs/allocator.md, "A price of memory
         * bandwidth"). */
        struct {
                double bytes_per_instr;
                double bandwidth_gbs;
                double others_gbs;
                /* How much more the apps there ask than the packages serve, at least (1: not
                 * known to be more): the least of the packages' membw slack. */
                double slack;
        } bw;
        /* Kept by the allocator: its phase, and for a detour (PROBE, MONITOR) the phase it
         * returns to. */
        enum allocator_phase phase;
        enum allocator_phase phase_resume;
        /* Its policy's min/max cores and min/max MHz at its last decision (set false: none
         * yet): a reload that leaves it outside new bounds moves it inside at once. */
        unsigned seen_bounds[4];
        bool seen_bounds_set;
        /* The remembered start, from history (pctl history): the best configuration a past
         * run of the same app measured, and its score there. The app starts there instead of
         * learning, at its first decision, and verifies it: measured within
         * ALLOCATOR_HISTORY_VERIFY of the remembered score, it stays while the measurement is
         * fresh; otherwise it searches around it. */
        struct {
                /* 0: none. The allocator clears it when it is done with the hint. */
                unsigned cores, freq_khz;
                double score;
                /* The apps managed when the remembered configuration was measured (this one
                 * included; 0: not known): an exploring run records its remembered start with
                 * it. */
                unsigned apps;
                /* Not 0: the hint is an exploration (docs/history.md, "Progress from whole
                 * runs"): its past runs all ran at about this many cores, and it holds
                 * hint.cores for this whole run so that two runs at different counts measure
                 * its extra work. */
                unsigned explore_from;
                /* Not 0: an exploring run's cap on its cores, for the whole run. The run is
                 * the measurement: sharing may trim the app below it, and nothing (the model,
                 * the search, a machine freed by apps leaving) takes it above, or its run would
                 * average near the past runs' count again and measure nothing. Markers lift it
                 * (progress is then measured within the run). */
                unsigned explore_cap;
                uint64_t verified; /* the decision the hint measured as remembered; 0: not yet */
        } hint;
        bool from_history; /* placed at the remembered configuration */
        /* What a returning app (which starts in its first phase) should start at. */
        struct {
                /* The best point of the app's first phase, kept when it changed phase. */
                struct allocator_point best;
                bool saved;
                /* It changed phase before its first phase had a best (still learning, or never
                 * measured): the run knows no searched configuration to start a returning app
                 * at. */
                bool lost;
                /* Lost while learning, with a fresh scored point: the best its first phase
                 * measured as it learned (at the count it learned at). A returning app starts
                 * its first phase there, verifies it, and searches from it. */
                struct allocator_point learned;
                bool learned_kept;
        } first_phase;
        /* Kept by the allocator across decisions (zero-initialise once). */
        struct allocator_point hist[ALLOCATOR_HISTORY];
        unsigned n_hist;
        unsigned phase_changes_seen;
        /* The measured search (see docs/allocator.md): the configuration being measured, the
         * samples taken there since the change, the pattern search's step sizes, and its
         * last probe. */
        struct {
                unsigned at_cores, at_freq_khz;
                unsigned samples_here;
                unsigned step_cores; /* 0: not started */
                unsigned step_freqs;
                /* The first stage from the full core count: halve the cores while the
                 * measured score improves, then search between the last two halvings. */
                bool halving;
                unsigned drifts; /* revisits that measured a changed app (it restarted) */
                /* Probes complete after one sample: far worse than the best. */
                unsigned early_rejects;
                bool early_rejected_here; /* the current configuration is such a probe */
                unsigned probe_cores, probe_freq_khz; /* the last probe */
        } search;
        /* The model's jumps: the last one, and whether its measurement came out worse than a
         * measured point: then the model is wrong for this app (spinning, speedup falling past
         * some N) and only ranks the search's neighbours until the search restarts. */
        struct {
                unsigned cores, freq_khz;
                bool refuted;
                unsigned jumps; /* jumps to its predicted optimum in this search */
        } model;
        /* The one-core probe for eq. 9's IPC_I0(1) (ALLOCATOR_PHASE_PROBE): since which
         * interval, at which frequency, where it goes back to, and the settable frequencies
         * (by index) probed already. */
        struct {
                uint64_t since;
                unsigned khz, back_cores, back_khz;
                uint64_t probed;
        } ipc1;
        /* Where it warms up and learns (alloc_start_cores, manager/alloc_learn.c): decided
         * once from its speedup on every core; cores below the full count when that speedup
         * is small, and why. */
        struct {
                bool decided;
                unsigned cores;
                char reason[120];
        } learn_at;
        uint64_t seen_intervals; /* the estimate's interval count at the last observation */
        /* Its measured scaling and ESTIMA's extrapolation of it at the best point's
         * frequency (include/pctl/scaling.h, docs/extrapolation.md). */
        struct scaling scaling;
        struct scaling_model scaling_model;
        /* Of the cores Amdahl's law counts idle (N minus the speedup), the share its threads
         * kept running without progress (spinning while they wait): its busy cores over its
         * speedup, a running mean over the intervals observed (spin.samples). Those cores
         * draw a busy core's power, which its predictions charge (docs/allocator.md,
         * "Spinning apps"). spin.samples 0: unknown, Amdahl's count stands. */
        struct {
                double share;
                unsigned samples;
        } spin;
        /* Scoring by progress markers. */
        struct {
                /* The last marker reading a score was taken from, and what the points in hist
                 * were measured in (scored: units of work; else instructions). */
                uint64_t prev_units, prev_ns;
                bool scored;
                /* Instructions per unit of work at each core count measured, and the work
                 * inflation they show, fitted as 1 + work_x (k - 1) (0: none seen). The
                 * model's predicted times are stretched by it (docs/allocator.md,
                 * "Progress"). */
                struct {
                        unsigned cores;
                        double ipu;
                        unsigned samples;
                } ipu[ALLOCATOR_IPU_POINTS];
                unsigned n_ipu;
                double work_x;
        } markers;
        /* Waits at locks and barriers its counters do not show: the speedup its stack
         * measured at wait.cores cores where the model's was clearly higher (0: none). The
         * model's predictions are corrected to it (docs/allocator.md, "Waits the counters
         * miss"). */
        struct {
                unsigned cores;
                double speedup;
        } wait;
        /* Out. */
        unsigned want_cores;
        unsigned want_freq_khz;
        /* Cores kept for it when sharing: a probe of fewer cores comes back to its best
         * point, so the cores it leaves for the probe are not handed to others (who would
         * lose them again when it returns: every probe would move every app). */
        unsigned reserve_cores;
        bool exploring; /* want_* is a probe of the search or a jump of the model */
        /* The count sharing cut it to, for as long as it holds that count (0: the count it
         * holds is its own choice). pctl history keeps a measured start rather than a count
         * the partition imposed on an app that measured nothing there (docs/history.md). */
        unsigned share_set_cores;
        /* The last probe sharing could not grant (it asked for more cores than its share):
         * not asked for again until it is stale, or the search would ask every decision. */
        struct {
                unsigned cores, freq_khz;
                uint64_t decision;
                /* Denied by the partition (not because it could not be measured): the denial
                 * lapses once CPUs are held by no app (alloc_room_lapse). */
                bool by_share;
        } denied;
        enum objective_kind effective; /* the objective pursued (see objective_effective) */
        /* Learning with ctx->learners_share: placed on want_cores of the allowed CPUs (all of
         * them at the baseline), time-sharing with the others, outside the partition. */
        bool shares_cpus;
        /* Placed alone on a package (frequency domain), the others on the rest, so its own
         * frequency can be searched: it wants a lower clock than its neighbours. */
        bool own_domain;
        /* Placed over every package, evenly: its cores stall on memory, which each package
         * serves with memory controllers of its own (docs/allocator.md, "Spreading over
         * packages"). Beside other apps a trial: kept where the stalled cores of every app
         * fell once it was spread (it was short of a package's bandwidth). */
        bool spread;
        /* The trial of spreading and its verdict. */
        struct {
                /* Spreading did not relieve its stalls (they are latency, not a package's
                 * bandwidth): it is not spread again while as many apps or more are in the
                 * partition as when it was refuted (refuted_among). */
                bool refuted;
                unsigned refuted_among;
                /* Its last trial relieved the stalls: kept spread for that (false while spread
                 * alone, or kept spread from then beside apps that came since). */
                bool stood;
                uint64_t since;      /* the decision its trial began; 0: none open */
                double stall_at;     /* its stalled share when the trial began */
                unsigned cores;      /* and its core count then: judged only at that count */
                unsigned prev_cores; /* its count as last seen, */
                uint64_t prev_since; /* since this decision */
        } spreading;
        uint64_t clock_probed;    /* the decision it was sent to the lowest clock there; 0: not */
        uint64_t domain_returned; /* the decision it gave its domain back; 0: never */
        /* The clock of the frequency domains it shares with other apps, chosen by them
         * together (docs/allocator.md, "The clock of a domain apps share"). */
        struct {
                uint64_t since;    /* the decision a lower clock was tried at; 0: none open */
                unsigned from_khz; /* the clock before the trial */
                unsigned at_khz;   /* the clock tried */
                /* The trial ran and a sensitivity was still unknown: not tried again. */
                bool given_up;
        } shared_clock;
        /* The extrapolation's best core count for its objective within its policy's bounds,
         * and the largest speedup over one core there (0 and NaN: unknown). */
        unsigned predicted_best_cores;
        double predicted_speedup_max;
        char reason[200]; /* why it changed, or why it stays */
        bool changed;
};

struct allocator_ctx {
        const struct estimator *est;
        const struct model_power *pm; /* NULL: power cannot be predicted */
        bool power_measured;          /* RAPL: a measured score is possible */
        unsigned n_cpus;              /* CPUs managed apps may share (online - reserved) */
        const unsigned *freqs_khz;    /* settable, ascending; n_freqs 0 = no DVFS */
        unsigned n_freqs;
        double hysteresis; /* fraction, e.g. 0.05 */
        uint64_t decision; /* the decision tick: non-decreasing, the same for early decisions */
        unsigned n_apps;   /* apps managed now */
        /* Samples a configuration needs before its measurement counts; the first sample after
         * a change is never used (it may straddle the change). 0: ALLOCATOR_PROBE_SAMPLES. */
        unsigned probe_samples;
        /* The sensor counts each app on its own (per-app targets), so apps may share CPUs and
         * the estimator still tells them apart: an app still learning P then runs on every
         * allowed CPU, as it would without pctl, instead of a slice of the partition where
         * it could not learn (one core teaches nothing about P). */
        bool learners_share;
        /* CPUs of one frequency domain when the managed CPUs form two or more domains of that
         * size, one package each; 0 otherwise. An app that wants a lower clock than its
         * neighbours may then be given a domain of its own (own_domain). */
        unsigned domain_cpus;
        /* An app's cores were moved for a probe of a package's memory bandwidth over the last
         * interval, or given back at the last decision: the stalls measured now are the
         * probe's, not the placement's, so no trial of spreading begins (its stalls at the
         * start would be the probe's, and its verdict would read the probe's move). */
        bool probe_quiet;
};

#define ALLOCATOR_PROBE_SAMPLES 3
/* A remembered configuration is confirmed when it measures within this fraction of its
 * remembered score: far above a probe's counter noise (~1%), below what another phase or
 * another machine load does to the score. */
#define ALLOCATOR_HISTORY_VERIFY 0.10

/* Whether the app has left learning (its phase, or the phase a detour returns to, is one of
 * the measured ones: recall, search, settled, model): a change of the app then re-opens the
 * search where it is instead of sending it back to its baseline. */
bool allocator_searched(const struct allocator_app *app);

/* Records the measured objective score of the app's current configuration. Call once per
 * sensor interval after estimator_update (or once per decision): the first sample after a
 * change of configuration is skipped, later ones are averaged into the point. */
void allocator_observe(const struct allocator_ctx *ctx, struct allocator_app *app);

/* True when the app waits on a measurement that is now complete (a probe of the search, or
 * the baseline while learning) or on P, which is now settled: deciding now rather than at
 * the next decision tick saves the time the app would spend at a configuration that has
 * already taught what it can. */
bool allocator_wants_decision(const struct allocator_ctx *ctx, const struct allocator_app *app);

/* Chooses want_cores / want_freq_khz for every app, sharing ctx->n_cpus by weight among the
 * apps that do not share CPUs (shares_cpus: learners, with ctx->learners_share). */
int allocator_decide(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n);

/* What a run teaches pctl history: the best fresh measured point of the app within its
 * policy's bounds, or, when it changed phase, its first phase's best (a returning app starts
 * in its first phase); when it changed phase while it still learned, the best point its first
 * phase measured as it learned (first_phase.learned). False when nothing has been measured, or
 * when it changed phase before its first phase had a scored point. */
bool allocator_best(const struct allocator_ctx *ctx, const struct allocator_app *app,
                    struct allocator_point *out);

/* Picks CPUs: each app keeps as many of its current CPUs as it still may, then takes free
 * ones from the package it already uses most, so apps stay on whole packages where they can;
 * an app with spread gets its count evenly over the packages instead, placed before the others
 * keep theirs (its own CPUs first, then free ones, then another app's).
 * An app with shares_cpus is outside the partition: it gets want_cores of `allowed` (its
 * current ones first), whoever else runs there. cur[i] is app i's current mask, out[i]
 * receives the new one. -ENOSPC if the partitioned wants do not fit in `allowed`. */
int allocator_place(const struct topology *t, const struct cpumask *allowed,
                    const struct allocator_app *apps, const struct cpumask *cur,
                    struct cpumask *out, unsigned n);

/* After a probe of a package's memory bandwidth took cores from app i (its count before:
 * `cores`), gives them back in the plan: only while the plan keeps it at the probe's count
 * (its current one) and only where allocator_place can place the plan with them (the others'
 * wants, domains and packages as placement counts them). 1 when given back (want_cores,
 * changed, reason set), 0 when not (apps unchanged), -ENOMEM. */
int allocator_give_back(const struct topology *t, const struct cpumask *allowed,
                        struct allocator_app *apps, const struct cpumask *cur, unsigned n,
                        unsigned i, unsigned cores);
