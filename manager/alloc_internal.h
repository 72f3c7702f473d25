/* Internal to the allocator (manager/allocator.c and manager/alloc_*.c): what the files of
 * its concerns share. Not part of the library's interface. */
#pragma once

#include "pctl/allocator.h"

#include "alloc_risk.h"

/* Without a settled P after this many intervals (measured rows, spinning), the search starts
 * from the measured baseline anyway: measurement decides, P only guides. */
#define ALLOCATOR_LEARN_MAX_INTERVALS 20
/* A measured point must beat the incumbent by this much to replace it during the search;
 * smaller than the hysteresis of model moves, since both figures are measured. */
#define ALLOCATOR_SEARCH_MARGIN 0.01
/* A core range this wide (max - min) is searched by halving and doubling (a ladder in log
 * space) before the pattern search; a narrower one by steps of one core. */
#define ALLOCATOR_WIDE_RANGE 8
/* The search's steps on a wide range start at this fraction (1/ALLOCATOR_STEP_DIV) of the
 * span they search (the range; the target of a jump; the best count when the ladder ends),
 * and are halved: single steps after two halvings. */
#define ALLOCATOR_STEP_DIV 4
/* P is not learned on fewer cores than this (eq. 9 compares cores with one another). */
#define ALLOCATOR_LEARN_MIN_CORES 2
/* The one-core probe's bound, in intervals: one is enough, three leave room for intervals the
 * estimator could not use. */
#define ALLOCATOR_IPC1_PROBE_INTERVALS 3

struct allocator_bounds {
        unsigned min_cores, max_cores;
        unsigned min_khz, max_khz; /* inclusive; 0/0 when there is no DVFS */
};

/* What the remembered configuration decided (hint_check). */
enum hint_verdict {
        HINT_SPENT,    /* the hint is done with: the search decides */
        HINT_MOVED,    /* sharing the machine put it elsewhere before it was verified */
        HINT_HOLD,     /* staying there: measuring it, or no score to verify by */
        HINT_OFF,      /* measured off the remembered score: the search goes on from here */
        HINT_VERIFIED, /* measured as remembered: staying, for a while from the verification */
        HINT_EXPLORE,  /* held for the whole run at another core count: the run measures */
};

/* What one decision for one app works from. */
struct decision {
        const struct allocator_ctx *ctx;
        struct allocator_app *a;
        const struct estimate *e;
        struct allocator_bounds b;
        const char *why; /* why the objective pursued is not the policy's; NULL: it is */
        unsigned start;  /* where it learns and its search starts (start_cores) */
        const struct allocator_point *base_meas; /* measured there, at the top frequency */
};

/* alloc_learn.c: learning */

enum hint_verdict alloc_hint_check(const struct allocator_ctx *ctx, struct allocator_app *a,
                                   const struct allocator_point *cur, double best_pred);

bool alloc_hint_start(const struct allocator_ctx *ctx, struct allocator_app *a,
                      const struct allocator_bounds *b);

bool alloc_ipc1_probe_done(const struct allocator_app *a, const struct estimate *e);

bool alloc_ipc1_probe_start(const struct allocator_ctx *ctx, struct allocator_app *a,
                            const struct estimate *e, const struct allocator_bounds *b);

bool alloc_ipc1_probe_step(struct allocator_app *a, const struct estimate *e);

enum allocator_phase alloc_on_learn(struct decision *d);

bool alloc_p_settled(const struct estimate *e);

unsigned alloc_start_cores(const struct allocator_ctx *ctx, struct allocator_app *a,
                           const struct estimate *e, const struct allocator_bounds *b);

/* alloc_model.c: the model */

void alloc_decide_model_only(const struct allocator_ctx *ctx, struct allocator_app *a,
                             const struct estimate *e, double best_pred, double cur_pred,
                             unsigned best_n, unsigned best_f);

/* Whether a share of its idle cores runs (spinning) above the counters' noise. */
bool alloc_spins(const struct allocator_app *a);
void alloc_idle_run_note(const struct allocator_ctx *ctx, struct allocator_app *a);

double alloc_model_best(const struct allocator_ctx *ctx, const struct allocator_app *a,
                        const struct allocator_bounds *b, double base_t, unsigned *best_n,
                        unsigned *best_f);

bool alloc_model_contradicted(const struct allocator_ctx *ctx, struct allocator_app *a,
                              const struct allocator_bounds *b, const struct allocator_point *best);

double alloc_predicted_score(const struct allocator_ctx *ctx, const struct allocator_app *a,
                             enum objective_kind o, unsigned cores, unsigned freq_khz,
                             double *time_s);

double alloc_predicted_score_k(const struct allocator_ctx *ctx, const struct allocator_app *a,
                               enum objective_kind o, unsigned cores, unsigned freq_khz,
                               double *time_s, double time_k);

bool alloc_score_measurable(const struct allocator_ctx *ctx, const struct allocator_app *a,
                            const struct estimate *e);

double alloc_static_share(const struct allocator_ctx *ctx, double power_w);

/* alloc_wait.c: waits the counters do not see */

void alloc_wait_observe(const struct allocator_ctx *ctx, struct allocator_app *a);

void alloc_wait_reset(struct allocator_app *a);

double alloc_wait_time_k(const struct allocator_ctx *ctx, const struct allocator_app *a,
                         unsigned cores);

void alloc_wait_note(const struct allocator_ctx *ctx, struct allocator_app *a);

/* alloc_points.c: measured points and bounds */

void alloc_app_bounds(const struct allocator_ctx *ctx, const struct allocator_app *a,
                      struct allocator_bounds *b);

const struct allocator_point *alloc_best_fresh(const struct allocator_ctx *ctx,
                                               const struct allocator_app *app);

bool alloc_denied(const struct allocator_ctx *ctx, const struct allocator_app *a, unsigned cores,
                  unsigned freq_khz);

/* Which measured points the search compares: fresh, in bounds, and at the domain's clock
 * when the app shares a frequency domain (alloc_meas_eligible's arg). */
struct alloc_meas_arg {
        const struct allocator_ctx *ctx;
        const struct allocator_app *a;
        const struct allocator_bounds *b;
};

bool alloc_meas_eligible(const void *arg, const struct allocator_point *p);

bool alloc_freq_in(const struct allocator_bounds *b, unsigned f);

int alloc_freq_index(const struct allocator_ctx *ctx, unsigned freq_khz);

const char *alloc_freq_text(unsigned khz, char *buf, size_t size);

struct allocator_point *alloc_hist_find(struct allocator_app *a, unsigned cores, unsigned freq_khz);

const struct allocator_point *alloc_hist_fresh(const struct allocator_ctx *ctx,
                                               struct allocator_app *a, unsigned cores,
                                               unsigned freq_khz);

void alloc_phase_reset(const struct allocator_ctx *ctx, struct allocator_app *app);

bool alloc_point_fresh(const struct allocator_ctx *ctx, const struct allocator_point *p);
bool alloc_decision_recent(const struct allocator_ctx *ctx, uint64_t decision);

bool alloc_point_in_bounds(const struct allocator_ctx *ctx, const struct allocator_bounds *b,
                           const struct allocator_point *p);

unsigned alloc_probe_samples(const struct allocator_ctx *ctx);

bool alloc_range_wide(const struct allocator_bounds *b);

void alloc_search_reset(struct allocator_app *a);

void alloc_stay(struct allocator_app *a, const char *fmt, const char *detail);

/* alloc_search.c: the measured search */

enum allocator_phase alloc_on_measured(struct decision *d, enum allocator_phase cur);

/* alloc_share.c: sharing the machine */

int alloc_share_machine(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n);

/* The app's predicted score at freq_khz on its want's cores: with the estimator's frequency
 * sensitivity where known, else its time scaled from the clock it ran at (ref_khz where the
 * estimator saw none) by the stalled share of its cycles, which a lower clock does not
 * stretch; the power below the lowest clock the fitted model has seen bounded from above. NaN
 * when unknown. */
double alloc_score_at_clock(const struct allocator_ctx *ctx, const struct allocator_app *a,
                            unsigned freq_khz, unsigned ref_khz);

/* alloc_clock.c: the clock of a frequency domain apps share */

void alloc_shared_clock(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n);

/* alloc_room.c: room in the partition */

/* Before the apps decide: every denial by sharing (denied.by_share) lapses when some CPUs
 * are held by no app. */
void alloc_room_lapse(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n);

/* allocator.c: the state machine */

bool alloc_phase_settled(const struct allocator_app *a);
