/* Reports (include/pctl/report.h): `pctl status`, the run report `pctl run` prints, systemd's
 * STATUS= line and the /metrics snapshot; and what is kept of an app after it leaves so that
 * its report can still be given. */
#include "manager_internal.h"

#include "alloc_risk.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "pctl/appstack.h"
#include "pctl/jsonfmt.h"
#include "pctl/metrics.h"
#include "pctl/textfmt.h"
#include "pctl/util.h"

/* The cores an app gets when nothing is decided for it: all it is allowed. */
static unsigned default_cores(const struct manager *m, const struct mapp *a)
{
        unsigned n = cpumask_count(&m->managed_cpus);

        return a->policy.max_cores && a->policy.max_cores < n ? a->policy.max_cores : n;
}

/* Forgets reports older than MANAGER_REPORT_KEEP_NS. */
static void reports_expire(struct manager *m, uint64_t now_ns)
{
        unsigned k = 0;

        while (k < m->n_reports && m->reports[k].end_ns + MANAGER_REPORT_KEEP_NS < now_ns)
                k++;
        if (!k)
                return;
        memmove(m->reports, m->reports + k, (m->n_reports - k) * sizeof(*m->reports));
        m->n_reports -= k;
}

/* Keeps what a report on app i needs after it is gone; the oldest report goes when full. */
void report_keep(struct manager *m, unsigned i, const char *why)
{
        const struct estimate *e = estimator_get(m->est, m->apps[i].id);
        uint64_t now_ns = platform_now_ns(m->pf);
        struct app_packages p;
        struct mreport *r;

        reports_expire(m, now_ns);
        if (!m->reports) {
                m->reports = calloc(MANAGER_REPORTS, sizeof(*m->reports));
                if (!m->reports)
                        return; /* no report then: `pctl run` says pctld has none */
        }
        if (m->n_reports == MANAGER_REPORTS)
                memmove(m->reports, m->reports + 1, --m->n_reports * sizeof(*m->reports));
        r = &m->reports[m->n_reports++];
        *r = (struct mreport){.app = m->apps[i],
                              .have_e = e != NULL,
                              .end_ns = now_ns,
                              .default_cores = default_cores(m, &m->apps[i])};
        if (e)
                r->e = *e;
        (void)strscpy(r->why, why, sizeof(r->why));
        app_packages(m, i, &p);
        r->spreading = p.spreading;
        (void)strscpy(r->spread_why, p.why, sizeof(r->spread_why));
        /* membw forgets the app as it leaves, right after this. */
        r->mem_bpi = memreport_app_bpi(m, i);
}

/* Where an app's power and energy come from. "declared" only for the [power] model of pctl.conf
 * standing in for RAPL: package energy that RAPL measured is "measured", whatever model splits
 * it among the apps (pctl.conf(5), pctld(8)). */
static const char *power_label(const struct estimate *e)
{
        if (e->power_source == ESTIMATE_POWER_MODEL && e->power_declared)
                return "declared";
        return estimate_power_source_name(e->power_source);
}

const char *manager_energy(const struct manager *m, double *energy_j)
{
        const struct estimator_platform *pl = estimator_platform(m->est);

        *energy_j = NAN;
        if (pl && pl->energy_measured && isfinite(pl->energy_j)) {
                *energy_j = pl->energy_j;
                return "measured";
        }
        if (!m->opt.have_power)
                return NULL;
        *energy_j = pl->model_energy_j;
        return m->opt.power_source;
}

/* The objective's predicted gain of the current configuration over the app's baseline (all
 * its allowed cores at the top frequency), in percent; NaN when the model cannot say. */
static double app_gain(const struct manager *m, unsigned i)
{
        const struct allocator_app *al = &m->alloc[i];
        const struct mapp *a = &m->apps[i];
        const struct model_power *pm = manager_power_model(m, NULL);
        const unsigned *freqs = NULL;
        unsigned n_freqs = m->opt.dvfs ? platform_freqs(m->pf, &freqs) : 0;
        unsigned max_cores = cpumask_count(&m->managed_cpus);
        struct model_prediction base, now;
        double s_base, s_now;

        if (a->policy.max_cores && a->policy.max_cores < max_cores)
                max_cores = a->policy.max_cores;
        if (estimator_predict(m->est, a->id, max_cores, n_freqs ? freqs[n_freqs - 1] : 0, pm,
                              &base) < 0 ||
            estimator_predict(m->est, a->id, cpumask_count(&a->cpus), a->freq_khz, pm, &now) < 0)
                return NAN;
        if (objective_score_prediction(al->effective, &base, &s_base) < 0 ||
            objective_score_prediction(al->effective, &now, &s_now) < 0 || s_base == 0)
                return NAN;
        return 100.0 * (s_base - s_now) / fabs(s_base);
}

static struct json_object *json_history_run(const struct history_run *r)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "cores", jsonfmt_double(r->cores));
        json_object_object_add(o, "instructions", jsonfmt_double(r->instructions));
        json_object_object_add(o, "instructions_err", jsonfmt_double(r->instructions_err));
        /* null: the run reported on. */
        json_object_object_add(o, "ended_s",
                               r->updated_s ? json_object_new_int64(r->updated_s) : NULL);
        return o;
}

/* Extra parallel work (docs/estimator.md): the run's instructions, the inflation measured
 * across whole runs and the runs it comes from, p_run before the correction, and a note on
 * what the speedup's source can and cannot see. */
static void json_work_inflation(struct json_object *j, const struct mapp *a,
                                const struct estimate *e)
{
        bool run_i0 = e && (e->known & ESTIMATE_RUN_I0);
        bool infl = e && (e->known & ESTIMATE_WORK_INFLATION) && a->infl.known;
        struct json_object *runs = NULL;
        char note[320];
        const char *text = NULL;

        json_object_object_add(j, "run_instructions", jsonfmt_double(run_i0 ? e->run_i0 : NAN));
        json_object_object_add(j, "run_mean_cores",
                               jsonfmt_double(run_i0 ? 1 + e->run_i0_m1 / e->run_i0 : NAN));
        json_object_object_add(j, "work_inflation", jsonfmt_double(infl ? a->infl.x : NAN));
        json_object_object_add(j, "work_inflation_error", jsonfmt_double(infl ? a->infl.err : NAN));
        if (infl) {
                runs = json_object_new_array();
                json_object_array_add(runs, json_history_run(&a->infl.a));
                json_object_array_add(runs, json_history_run(&a->infl.b));
        }
        json_object_object_add(j, "work_inflation_runs", runs);
        json_object_object_add(j, "p_run_uncorrected",
                               jsonfmt_double(infl ? e->p_run_uncorrected : NAN));
        if (infl) {
                snprintf(note, sizeof(note),
                         "extra work measured: %.4f more instructions per useful one per added "
                         "core (whole runs at %.1f and %.1f cores); p_run corrected for it",
                         a->infl.x, a->infl.a.cores, a->infl.b.cores);
                text = note;
        } else if (e && e->speedup_source == ESTIMATE_SPEEDUP_BUSY) {
                /* Busy time counts the extra work a parallel run may do as parallel work. */
                text = "busy time cannot see extra work a parallel run does: P may read high";
        } else if (e && e->speedup_source == ESTIMATE_SPEEDUP_COUNTERS) {
                text = "extra work a parallel run does counts as speedup until whole runs of "
                       "this command at core counts 0.5 or more apart are compared: P may read "
                       "high";
        }
        json_object_object_add(j, "speedup_note", jsonfmt_string(text));
}

/* A set of package ids as JSON: [0, 1]. */
static struct json_object *packages_json(const struct cpumask *pkgs)
{
        struct json_object *arr = json_object_new_array();

        cpumask_foreach (p, pkgs)
                json_object_array_add(arr, json_object_new_int(p));
        return arr;
}

/* The same of a set as a configuration keeps it (bit k: package k). */
static struct json_object *packages_word_json(uint64_t pkgs)
{
        struct cpumask set;

        cpumask_zero(&set);
        set.bits[0] = pkgs;
        return packages_json(&set);
}

/* Every package the app ran on over its run; null where a CPU's package was not known in one
 * of its intervals, or there is none yet. */
static struct json_object *run_packages_json(const struct mapp *a)
{
        if (!a->run.n || a->run.pkgs_unknown)
                return NULL;
        return packages_word_json(a->run.pkgs);
}

/* The whole run's figures of an app, running or gone at end_ns: P of the run with the range
 * the time not seen leaves (or, with its parent's totals, completed over that time), and the
 * configurations it ran at. */
static void json_run(const struct manager *m, struct json_object *j, const struct mapp *a,
                     const struct estimate *e, uint64_t end_ns,
                     const struct manager_run_totals *totals)
{
        double managed_s = (end_ns - a->since_ns) / 1e9, conf = NAN, lo, hi;
        double speedup_run = e && (e->known & ESTIMATE_SPEEDUP_RUN) ? e->speedup_run : NAN;
        double p_run = e && (e->known & ESTIMATE_P_RUN) ? e->p_run : NAN;
        double unseen_s = NAN, unseen_cpu_s = NAN;
        struct json_object *configs = json_object_new_array();
        unsigned cores = cpumask_count(&a->cpus);

        /* The part pctld did not see, from what the command's parent measured of it: the
         * figures then hold the whole run, and no range is left. */
        if (totals && e) {
                unseen_s = fmax(totals->wall_s - e->run_s, 0);
                unseen_cpu_s = fmax(totals->cpu_s - e->run_busy_s, 0);
                if (estimate_run_complete(e, unseen_s, unseen_cpu_s,
                                          cores ? cores : e->run_max_cores, &speedup_run,
                                          &p_run) == 0)
                        conf = 0;
                else
                        unseen_s = unseen_cpu_s = NAN;
        }
        if (isnan(conf) && isfinite(p_run) &&
            estimate_p_run_range(e, fmax(managed_s - e->run_s, 0), e->run_max_cores, &lo, &hi) == 0)
                conf = fmax(e->p_run - lo, hi - e->p_run);
        json_object_object_add(j, "managed_s", jsonfmt_double(managed_s));
        json_object_object_add(j, "seen_s", jsonfmt_double(e ? e->run_s : NAN));
        json_object_object_add(j, "speedup_run", jsonfmt_double(speedup_run));
        json_object_object_add(j, "p_run", jsonfmt_double(p_run));
        json_object_object_add(j, "p_run_confidence", jsonfmt_double(conf));
        /* pctld's own figure over the time it saw, where the run was completed. */
        json_object_object_add(j, "p_run_seen",
                               jsonfmt_double(isfinite(unseen_s) ? e->p_run : NAN));
        json_object_object_add(j, "completed_s", jsonfmt_double(unseen_s));
        json_object_object_add(j, "completed_cpu_s", jsonfmt_double(unseen_cpu_s));
        json_work_inflation(j, a, e);
        for (unsigned k = 0; k < a->run.n; k++) {
                const struct run_config *rc = &a->run.v[k];
                struct json_object *c = json_object_new_object();

                /* A label the configurations merged into one slot did not share is null. */
                json_object_object_add(c, "cores",
                                       rc->cores ? json_object_new_uint64(rc->cores) : NULL);
                json_object_object_add(c, "freq_mhz",
                                       rc->freq_khz ? json_object_new_uint64(rc->freq_khz / 1000)
                                                    : NULL);
                json_object_object_add(c, "packages",
                                       rc->pkgs_known ? packages_word_json(rc->pkgs) : NULL);
                json_object_object_add(c, "s", jsonfmt_double(rc->run_s));
                if (rc->merged > 1)
                        json_object_object_add(c, "merged", json_object_new_uint64(rc->merged));
                json_object_array_add(configs, c);
        }
        json_object_object_add(j, "configs", configs);
        /* Which of them it ended at (an index into configs; absent when there is none). */
        if (a->run.n)
                json_object_object_add(j, "end_config", json_object_new_uint64(a->run.end));
        (void)m;
}

/* Whether the app ran only as its default (all its allowed cores, the top frequency when
 * pctld sets frequencies): then the run is its own baseline. */
static bool ran_default_only(const struct manager *m, const struct mapp *a, unsigned dflt_cores)
{
        const unsigned *freqs = NULL;
        unsigned n_freqs = m->opt.dvfs ? platform_freqs(m->pf, &freqs) : 0;

        /* A merged slot holds configurations that differ: not all of them the default. */
        for (unsigned k = 0; k < a->run.n; k++)
                if (a->run.v[k].merged > 1 || a->run.v[k].cores != dflt_cores ||
                    (n_freqs && a->run.v[k].freq_khz && a->run.v[k].freq_khz != freqs[n_freqs - 1]))
                        return false;
        return a->run.n > 0;
}

int manager_report(const struct manager *m, pid_t pid, const struct manager_run_totals *totals,
                   struct json_object *j, char *err, size_t err_size)
{
        uint64_t now_ns = platform_now_ns(m->pf);
        const struct mreport *rep = NULL;
        struct app_packages pkgs;
        const struct mapp *a;
        const struct estimate *e;
        const char *energy_src = NULL;
        double energy_j = NAN, run_s;
        unsigned dflt;
        unsigned i;
        bool exited;

        if ((a = find_app(m, pid, &i))) {
                e = estimator_get(m->est, a->id);
                dflt = default_cores(m, a);
        } else {
                /* The newest report of that pid, if still kept. */
                for (unsigned k = m->n_reports; k-- > 0 && !rep;)
                        if (m->reports[k].app.pid == pid &&
                            m->reports[k].end_ns + MANAGER_REPORT_KEEP_NS >= now_ns)
                                rep = &m->reports[k];
                if (!rep) {
                        snprintf(err, err_size,
                                 "pid %d is not managed and did not leave in the last %d s",
                                 (int)pid, (int)(MANAGER_REPORT_KEEP_NS / NSEC_PER_SEC));
                        return -ENOENT;
                }
                a = &rep->app;
                e = rep->have_e ? &rep->e : NULL;
                dflt = rep->default_cores;
                now_ns = rep->end_ns;
        }
        json_object_object_add(j, "name", jsonfmt_string(a->name));
        json_object_object_add(j, "pid", json_object_new_int64(a->pid));
        json_object_object_add(j, "policy", jsonfmt_string(a->policy.name));
        json_object_object_add(j, "job", jsonfmt_string(a->job[0] ? a->job : NULL));
        json_object_object_add(j, "state", jsonfmt_string(rep ? "left" : "managed"));
        json_object_object_add(j, "left_because", jsonfmt_string(rep ? rep->why : NULL));
        /* Only a run pctld followed to its exit is completed by the command's totals: one
         * released before would have its unseen part at another configuration. pctl run asks
         * as soon as it has reaped the command, often before a tick has noticed the exit. */
        exited = rep ? strcmp(rep->why, MANAGER_WHY_EXITED) == 0 : !platform_proc_alive(m->pf, pid);
        json_run(m, j, a, e, now_ns, exited ? totals : NULL);
        /* The packages it ran on over the run, and why it lay spread at its end (or now),
         * as status says it. */
        json_object_object_add(j, "packages", run_packages_json(a));
        if (!rep)
                app_packages(m, i, &pkgs);
        json_object_object_add(j, "spreading",
                               jsonfmt_string(rep ? rep->spreading : pkgs.spreading));
        json_object_object_add(j, "spread_reason",
                               jsonfmt_string(rep ? (rep->spread_why[0] ? rep->spread_why : NULL)
                                                  : (pkgs.why[0] ? pkgs.why : NULL)));
        json_object_object_add(j, "p_est",
                               jsonfmt_double(!e                             ? NAN
                                              : (e->known & ESTIMATE_P_LS)   ? e->p_ls
                                              : (e->known & ESTIMATE_P_EQ10) ? e->p_eq10
                                                                             : NAN));
        json_object_object_add(
            j, "speedup_source",
            jsonfmt_string(e ? estimate_speedup_source_name(e->speedup_source) : NULL));
        if (e && (e->known & ESTIMATE_ENERGY)) {
                energy_j = e->energy_j;
                energy_src = power_label(e);
        }
        run_s = (now_ns - a->since_ns) / 1e9;
        /* Energy covers the intervals seen; EDP with the time pctld managed it. */
        json_object_object_add(j, "energy_j", jsonfmt_double(energy_j));
        json_object_object_add(j, "energy_source", jsonfmt_string(energy_src));
        json_object_object_add(j, "edp_js", jsonfmt_double(energy_j * run_s));
        /* What it moved at its package's memory per instruction, as status showed it. */
        memreport_run(m, rep ? rep->mem_bpi : memreport_app_bpi(m, i), j);
        json_object_object_add(j, "default_cores", json_object_new_uint64(dflt));
        if (ran_default_only(m, a, dflt)) {
                json_object_object_add(j, "gain_pct", json_object_new_double(0));
                json_object_object_add(j, "gain_note",
                                       jsonfmt_string("ran at its default throughout"));
        } else {
                json_object_object_add(j, "gain_pct", NULL);
                json_object_object_add(j, "gain_note",
                                       jsonfmt_string("not measured: the default was not run"));
        }
        return 0;
}

/* The app's last speedup stack as `pctl stack --json` has it (but the pid), null when there is
 * none yet. */
struct json_object *appstack_json(const struct appstacks *stacks, pid_t pid)
{
        const struct stack *s = appstacks_get(stacks, pid);
        struct json_object *j, *c;

        if (!s)
                return NULL;
        j = json_object_new_object();
        c = json_object_new_object();
        json_object_object_add(j, "cores", jsonfmt_double(s->cores));
        json_object_object_add(j, "threads", json_object_new_uint64(s->threads));
        json_object_object_add(j, "speedup", jsonfmt_double(s->speedup));
        json_object_object_add(j, "source", jsonfmt_string(appstacks_source(stacks)));
        for (unsigned k = 0; k < STACK_COMPONENTS; k++)
                json_object_object_add(c, stack_component_name(k),
                                       jsonfmt_double(stack_has(s, k) ? s->component[k] : NAN));
        json_object_object_add(j, "components", c);
        return j;
}

/* How the actuator holds the app, in words; NULL where it does not say. */
static const char *held_by(const struct manager *m, const struct mapp *a, char *buf, size_t size)
{
        const struct actuator_ops *ops = m->pf->actuator_ops;

        if (!ops->where || !a->handle)
                return NULL;
        ops->where(m->pf->actuator, a->handle, buf, size);
        return buf;
}

/* Why the allocator spread an app over the packages (docs/allocator.md, "Spreading over
 * packages", "Spreading beside other apps"). */
enum spreading {
        SPREADING_NONE = -1,
        SPREADING_ALONE,
        SPREADING_TRIAL,
        SPREADING_STOOD,
        SPREADING_KEPT,
        SPREADING_REFUTED,
};

/* As `spreading` names each, and as the reason says it ("%s": the packages). */
static const struct spreading_text {
        const char *name, *text;
} spreading_texts[] = {
    [SPREADING_ALONE] = {"alone", "spread over packages %s: its cores stall on memory, and "
                                  "alone it may have every package's memory bandwidth"},
    [SPREADING_TRIAL] = {"on-trial", "spread over packages %s as a trial: its cores stall on "
                                     "memory; it stays spread if the stalls of every app fall "
                                     "by the next decision"},
    [SPREADING_STOOD] = {"trial-stood", "spread over packages %s: a trial beside other apps "
                                        "relieved the memory stalls, so it stays spread"},
    [SPREADING_KEPT] = {"kept", "spread over packages %s since its cores stalled on memory "
                                "while it ran alone; kept spread beside the apps that came "
                                "since"},
    [SPREADING_REFUTED] = {"trial-refuted", "on packages %s where a trial of spreading put it: "
                                            "the trial did not relieve its memory stalls, so it "
                                            "is no longer placed spread and not tried again"},
};

/* Why app i is spread, in the allocator's view (SPREADING_NONE: not spread, and no trial
 * refuted); the caller checks that the CPUs it holds really lie on more than one package. */
static enum spreading spreading_of(const struct manager *m, unsigned i)
{
        const struct allocator_app *al = &m->alloc[i];
        unsigned managed = 0;

        if (!al->spread)
                return al->spreading.refuted ? SPREADING_REFUTED : SPREADING_NONE;
        if (al->spreading.since)
                return SPREADING_TRIAL;
        /* Counted as spread_stalled counts them: apps only watched move nothing. */
        for (unsigned k = 0; k < m->n_apps; k++)
                managed += m->alloc[k].effective != OBJECTIVE_MONITOR;
        if (managed <= 1)
                return SPREADING_ALONE;
        return al->spreading.stood ? SPREADING_STOOD : SPREADING_KEPT;
}

void app_packages(const struct manager *m, unsigned i, struct app_packages *out)
{
        enum spreading s = SPREADING_NONE;
        char list[64];

        *out = (struct app_packages){.spreading = NULL};
        out->n = topology_packages_of(&m->pf->topo, &m->apps[i].cpus, &out->pkgs);
        if (out->n >= 2 && topology_format_packages(&out->pkgs, list, sizeof(list)) == 0)
                s = spreading_of(m, i);
        if (s == SPREADING_NONE)
                return;
        out->spreading = spreading_texts[s].name;
        snprintf(out->why, sizeof(out->why), spreading_texts[s].text, list);
}

int app_packages_word(const struct manager *m, const struct mapp *a, uint64_t *pkgs)
{
        struct cpumask set;
        int n = topology_packages_of(&m->pf->topo, &a->cpus, &set);

        if (n < 0)
                return n;
        if (n && cpumask_next(&set, 64) >= 0)
                return -ERANGE;
        *pkgs = set.bits[0];
        return 0;
}

void app_packages_fields(const struct manager *m, const struct app_packages *p,
                         struct app_packages_fields *out)
{
        out->n = 0;
        if (m->pf->topo.n_packages < 2 || p->n == 0)
                return;
        if (p->n < 0 ||
            topology_format_packages(&p->pkgs, out->packages, sizeof(out->packages)) < 0)
                (void)strscpy(out->packages, "unknown", sizeof(out->packages));
        out->v[out->n++] = (struct log_field){"PCTL_PACKAGES", out->packages};
        if (p->spreading)
                out->v[out->n++] = (struct log_field){"PCTL_SPREADING", p->spreading};
}

/* The packages app i's CPUs lie on (null: a CPU whose package is not known) and, where the
 * allocator spread it over them, `spreading` and the sentence the reason ends with. */
static void status_packages(const struct manager *m, unsigned i, struct json_object *j, char *why,
                            size_t why_size)
{
        struct app_packages p;

        app_packages(m, i, &p);
        json_object_object_add(j, "packages", p.n >= 0 ? packages_json(&p.pkgs) : NULL);
        json_object_object_add(j, "spreading", jsonfmt_string(p.spreading));
        snprintf(why, why_size, "%s", p.why);
}

static struct json_object *status_app(const struct manager *m, unsigned i)
{
        const struct mapp *a = &m->apps[i];
        struct json_object *j = json_object_new_object();
        const struct estimate *e = estimator_get(m->est, a->id);
        char list[256], held[STATE_PATH_MAX + 64], spread[256], reason[sizeof(spread) + 256];
        bool has_p;
        double p;

        cpumask_format(&a->cpus, list, sizeof(list));
        json_object_object_add(j, "name", jsonfmt_string(a->name));
        json_object_object_add(j, "pid", json_object_new_int64(a->pid));
        json_object_object_add(j, "policy", jsonfmt_string(a->policy.name));
        json_object_object_add(j, "job", jsonfmt_string(a->job[0] ? a->job : NULL));
        json_object_object_add(j, "objective",
                               jsonfmt_string(objective_to_string(a->policy.objective)));
        json_object_object_add(j, "effective_objective",
                               jsonfmt_string(objective_to_string(m->alloc[i].effective)));
        /* What its measured scores count as progress: its own markers, instructions over
         * the work inflation whole runs in history measured, or instructions alone (which
         * overstate it where the work grows with the threads). */
        json_object_object_add(
            j, "progress",
            jsonfmt_string(alloc_progress_name(alloc_progress_source(&m->alloc[i]))));
        /* Where the allocator is with it (docs/allocator.md, "Phases"). */
        json_object_object_add(j, "allocator_phase",
                               jsonfmt_string(allocator_phase_to_string(m->alloc[i].phase)));
        json_object_object_add(j, "cores", json_object_new_uint64(cpumask_count(&a->cpus)));
        json_object_object_add(j, "cpus", jsonfmt_string(list));
        status_packages(m, i, j, spread, sizeof(spread));
        json_object_object_add(j, "held_by", jsonfmt_string(held_by(m, a, held, sizeof(held))));
        json_object_object_add(j, "freq_mhz",
                               a->freq_khz ? json_object_new_uint64(a->freq_khz / 1000) : NULL);
        has_p = e && (e->known & (ESTIMATE_P_LS | ESTIMATE_P_EQ10));
        p = !has_p ? NAN : (e->known & ESTIMATE_P_LS) ? e->p_ls : e->p_eq10;
        json_object_object_add(j, "ipc",
                               jsonfmt_double(e && (e->known & ESTIMATE_IPC) ? e->ipc : NAN));
        json_object_object_add(
            j, "speedup", jsonfmt_double(e && (e->known & ESTIMATE_SPEEDUP) ? e->speedup : NAN));
        json_object_object_add(
            j, "speedup_source",
            jsonfmt_string(e ? estimate_speedup_source_name(e->speedup_source) : NULL));
        /* Where eq. 9's IPC_I0(1) came from: the app's own one-core figure or a stand-in. */
        json_object_object_add(j, "ipc1_source",
                               jsonfmt_string(e && (e->known & ESTIMATE_IPC1)
                                                  ? estimate_ipc1_source_name(e->ipc1_source)
                                                  : NULL));
        /* eq. 5: the app's own instructions of the last interval and the system's on its
         * CPUs, and how ΔI was had (per-target counts, or eq. 14's α and β). */
        json_object_object_add(j, "i0",
                               jsonfmt_double(e && (e->known & ESTIMATE_I0) ? e->i0 : NAN));
        json_object_object_add(
            j, "delta_i", jsonfmt_double(e && (e->known & ESTIMATE_DELTA_I) ? e->delta_i : NAN));
        json_object_object_add(j, "delta_i_source",
                               jsonfmt_string(e && (e->known & ESTIMATE_DELTA_I)
                                                  ? estimate_delta_i_source_name(e->delta_i_source)
                                                  : NULL));
        json_object_object_add(j, "p_est", jsonfmt_double(p));
        json_object_object_add(
            j, "p_confidence",
            jsonfmt_double(has_p && (e->known & ESTIMATE_P_LS) ? e->p_stderr : NAN));
        /* How well one P explains the speedups seen: the fit's residual and its core counts. */
        json_object_object_add(
            j, "p_rms_residual",
            jsonfmt_double(e && (e->known & ESTIMATE_P_LS) ? e->p_rms_residual : NAN));
        json_object_object_add(
            j, "p_n_cores",
            e && (e->known & ESTIMATE_P_LS) ? json_object_new_uint64(e->p_n_cores) : NULL);
        json_run(m, j, a, e, platform_now_ns(m->pf), NULL);
        json_object_object_add(j, "power_w",
                               jsonfmt_double(e && (e->known & ESTIMATE_POWER) ? e->power_w : NAN));
        json_object_object_add(
            j, "power_source",
            jsonfmt_string(e && (e->known & ESTIMATE_POWER) ? power_label(e) : NULL));
        json_object_object_add(
            j, "edp_rate", jsonfmt_double(e && (e->known & ESTIMATE_EDP_RATE) ? e->edp_rate : NAN));
        json_object_object_add(j, "gain_pct", jsonfmt_double(app_gain(m, i)));
        /* Bytes it moves at its package's memory per instruction: null until told apart. */
        json_object_object_add(j, "mem_bytes_per_instr", memreport_app_json(m, i));
        /* The extrapolation of its measured scaling (docs/extrapolation.md): null until it
         * reproduces what was measured. */
        json_object_object_add(j, "predicted_best_cores",
                               m->alloc[i].predicted_best_cores
                                   ? json_object_new_uint64(m->alloc[i].predicted_best_cores)
                                   : NULL);
        json_object_object_add(j, "predicted_speedup_max",
                               jsonfmt_double(m->alloc[i].predicted_best_cores
                                                  ? m->alloc[i].predicted_speedup_max
                                                  : NAN));
        /* What that prediction was fitted to: stalled cycles (the ESTIMA way) or time. */
        json_object_object_add(j, "predicted_from",
                               jsonfmt_string(m->alloc[i].predicted_best_cores
                                                  ? scaling_basis_name(&m->alloc[i].scaling_model)
                                                  : NULL));
        /* Where it lies on several packages on purpose, the reason says why. */
        snprintf(reason, sizeof(reason), "%s%s%s",
                 m->alloc[i].reason[0] ? m->alloc[i].reason : "starting", spread[0] ? "; " : "",
                 spread);
        json_object_object_add(j, "reason", jsonfmt_string(reason));
        json_object_object_add(j, "stack", appstack_json(m->stacks, a->pid));
        json_object_object_add(j, "from_history",
                               json_object_new_boolean(m->alloc[i].from_history));
        return j;
}

/* The actuators' state record as the start found it: the lines it could not read (their
 * number then, their beginning, why), which stay in it until an operator removes them. null
 * where there is no record (the model machine). The lines are root's to read: they name
 * other users' cgroups and processes; any other user gets their number only. */
static struct json_object *state_record_json(const struct actuator_recovery *rec, bool lines)
{
        struct json_object *j, *skipped;

        if (!rec->record[0])
                return NULL;
        j = json_object_new_object();
        skipped = json_object_new_array();
        json_object_object_add(j, "file", jsonfmt_string(rec->record));
        json_object_object_add(j, "skipped_lines", json_object_new_uint64(rec->n_skipped));
        for (unsigned i = 0; lines && i < rec->n_skipped && i < ACTUATOR_MAX_SKIPPED; i++) {
                struct json_object *l = json_object_new_object();

                json_object_object_add(l, "line", json_object_new_uint64(rec->skipped[i].line));
                json_object_object_add(l, "why", jsonfmt_string(rec->skipped[i].why));
                json_object_object_add(l, "text", jsonfmt_string(rec->skipped[i].text));
                json_object_array_add(skipped, l);
        }
        json_object_object_add(j, "skipped", skipped);
        return j;
}

/* The status; only's apps when only is not NULL (the others counted, not shown). */
static void status_of(const struct manager *m, const uid_t *only, struct json_object *j)
{
        const struct estimator_platform *pl = estimator_platform(m->est);
        const char *energy_source, *power_model = NULL;
        struct json_object *apps;
        double energy_j;
        char list[256];

        energy_source = manager_energy(m, &energy_j);
        json_object_object_add(j, "platform", jsonfmt_string(m->pf->name));
        json_object_object_add(j, "sensor", jsonfmt_string(m->pf->sensor_ops->name));
        json_object_object_add(j, "sensor_why", jsonfmt_string(m->pf->sensor_why));
        json_object_object_add(j, "calibration",
                               jsonfmt_string(m->opt.calibration[0] ? m->opt.calibration : NULL));
        json_object_object_add(
            j, "cpuset_mode",
            jsonfmt_string((const char *[]){"auto", "cgroup-v2", "cgroup-v1", "affinity",
                                            "systemd"}[m->pf->actuator->mode]));
        json_object_object_add(
            j, "dvfs", json_object_new_boolean(m->opt.dvfs && m->pf->actuator->can_set_freq));
        json_object_object_add(j, "dvfs_why",
                               jsonfmt_string(!m->opt.dvfs ? m->opt.dvfs_why
                                              : m->pf->actuator->can_set_freq
                                                  ? NULL
                                                  : m->pf->actuator->freq_reason));
        json_object_object_add(j, "state_record",
                               state_record_json(&m->pf->actuator->recovery, !only));
        cpumask_format(&m->managed_cpus, list, sizeof(list));
        json_object_object_add(j, "managed_cpus", jsonfmt_string(list));
        /* The packages the allocator's frequency domains and placement follow. */
        json_object_object_add(j, "topology", topology_json(&m->pf->topo));
        json_object_object_add(j, "uptime_s",
                               jsonfmt_double((platform_now_ns(m->pf) - m->start_ns) / 1e9));
        json_object_object_add(j, "power_w",
                               jsonfmt_double(!energy_source        ? NAN
                                              : pl->energy_measured ? pl->power_w
                                                                    : pl->model_w));
        json_object_object_add(j, "energy_j", jsonfmt_double(energy_j));
        json_object_object_add(j, "energy_source", jsonfmt_string(energy_source));
        /* Dynamic power of CPUs no managed app holds (other processes), from RAPL. */
        json_object_object_add(j, "unattributed_w", jsonfmt_double(pl->unattributed_w));
        /* Where predictions' power comes from: "declared", "calibrated", "fitted" (learned
         * online from RAPL and busy time), or null. */
        manager_power_model(m, &power_model);
        json_object_object_add(j, "power_model", jsonfmt_string(power_model));
        /* Each package's memory traffic and bandwidth, where the sensor measures it. */
        memreport_status(m, j);
        json_object_object_add(j, "decisions", json_object_new_uint64(m->decisions));
        json_object_object_add(j, "changes", json_object_new_uint64(m->changes));
        apps = json_object_new_array();
        for (unsigned i = 0; i < m->n_apps; i++)
                if (!only || m->apps[i].uid == *only)
                        json_object_array_add(apps, status_app(m, i));
        json_object_object_add(j, "apps", apps);
        if (only)
                json_object_object_add(
                    j, "apps_of_others",
                    json_object_new_int64((int64_t)m->n_apps -
                                          (int64_t)json_object_array_length(apps)));
}

void manager_status(const struct manager *m, struct json_object *j)
{
        status_of(m, NULL, j);
}

void manager_status_for(const struct manager *m, uid_t uid, struct json_object *j)
{
        status_of(m, &uid, j);
}

void manager_summary(const struct manager *m, char *buf, size_t size)
{
        double energy_j;
        const char *src = manager_energy(m, &energy_j);

        if (src)
                snprintf(buf, size, "%u app%s managed, %llu decision%s, %.1f J (%s)", m->n_apps,
                         plural_s(m->n_apps), (unsigned long long)m->decisions,
                         plural_s(m->decisions), energy_j, src);
        else
                snprintf(buf, size, "%u app%s managed, %llu decision%s, energy unknown", m->n_apps,
                         plural_s(m->n_apps), (unsigned long long)m->decisions,
                         plural_s(m->decisions));
}

_Static_assert(sizeof(((struct metrics_app *)0)->job) >= MANAGER_JOB_MAX + 1,
               "a job tag fits its label");

int manager_metrics(const struct manager *m, struct metrics_snapshot **out)
{
        struct metrics_snapshot *s = metrics_snapshot_new(m->n_apps);

        if (!s)
                return -ENOMEM;
        for (unsigned i = 0; i < m->n_apps; i++) {
                const struct mapp *a = &m->apps[i];
                const struct estimate *e = estimator_get(m->est, a->id);
                struct metrics_app *x = &s->apps[i];
                unsigned known = e ? e->known : 0;
                struct app_packages pkgs;

                (void)strscpy(x->app, a->name, sizeof(x->app));
                x->pid = a->pid;
                (void)strscpy(x->policy, a->policy.name, sizeof(x->policy));
                (void)strscpy(x->job, a->job, sizeof(x->job));
                x->v[METRICS_APP_CORES] = cpumask_count(&a->cpus);
                if (a->freq_khz)
                        x->v[METRICS_APP_FREQUENCY_HZ] = a->freq_khz * 1e3;
                /* The same P̂ and error as `pctl status`. */
                if (known & ESTIMATE_P_LS) {
                        x->v[METRICS_APP_P] = e->p_ls;
                        x->v[METRICS_APP_P_STDERR] = e->p_stderr;
                } else if (known & ESTIMATE_P_EQ10) {
                        x->v[METRICS_APP_P] = e->p_eq10;
                }
                if (known & ESTIMATE_SPEEDUP)
                        x->v[METRICS_APP_SPEEDUP] = e->speedup;
                if (known & ESTIMATE_POWER)
                        x->v[METRICS_APP_POWER_W] = e->power_w;
                if (known & ESTIMATE_ENERGY)
                        x->v[METRICS_APP_ENERGY_J] = e->energy_j;
                /* The same packages as `pctl status`. */
                app_packages(m, i, &pkgs);
                if (pkgs.n >= 0)
                        x->v[METRICS_APP_PACKAGES] = pkgs.n;
        }
        s->package_energy_source = manager_energy(m, &s->package_energy_j);
        memreport_metrics(m, s);
        s->decisions = m->decisions;
        s->cpuset_changes = m->changes;
        *out = s;
        return 0;
}
