/* The tick (include/pctl/tick.h): one sample from counters to cpusets, one call per stage —
 * refresh → sense → estimate → stacks → observe → decide → place → apply. */
#include "manager_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/appstack.h"
#include "pctl/freqdomains.h"
#include "pctl/log.h"
#define PCTL_PROGRESS_NO_APP_SIDE
#define PCTL_PROGRESS_READER
#include "pctl/progress.h"
#include "pctl/stack.h"
#include "pctl/textfmt.h"

enum tick_kind {
        TICK_SAMPLE,   /* every interval: every stage, deciding when a measurement is due */
        TICK_DECISION, /* every decision period, or now: observe, decide, place, apply */
};

static int sense(struct manager *m);
static int estimate(struct manager *m);
static void stacks_read(struct manager *m);
static bool observe(struct manager *m, struct allocator_ctx *ctx);
static int decide(struct manager *m, const struct allocator_ctx *ctx);
static int place(struct manager *m, struct cpumask **next);
static void apply(struct manager *m, const struct cpumask *next);

/* The tick. A sample tick reads the sample down to the allocator and decides only when a
 * measurement the allocator waits for is complete: a probe is left now, not at the next
 * decision tick, as an app may run only a few seconds. A decision tick decides on what the
 * last sample tick measured. The allocator's view (ctx) is built once, by observe. */
static int tick(struct manager *m, enum tick_kind kind)
{
        struct allocator_ctx ctx;
        struct cpumask *next;
        bool due;
        int r;

        if (kind == TICK_SAMPLE) {
                refresh_apps(m);
                r = sense(m);
                if (r < 0)
                        return r;
                r = estimate(m);
                if (r <= 0)
                        return r; /* 0: the estimator skipped the interval */
                stacks_read(m);
        }
        due = observe(m, &ctx);
        if (kind == TICK_SAMPLE && !due)
                return 0;
        r = decide(m, &ctx);
        if (r <= 0)
                return r; /* 0: no app to decide for */
        r = place(m, &next);
        if (r < 0)
                return r;
        apply(m, next);
        free(next);
        return 0;
}

int manager_sample(struct manager *m)
{
        return tick(m, TICK_SAMPLE);
}

int manager_decide(struct manager *m)
{
        m->ticks++;
        adopt_by_rules(m);
        return tick(m, TICK_DECISION);
}

int tick_decide(struct manager *m)
{
        return tick(m, TICK_DECISION);
}

/* The sense stage: one sample of the counters. */
static int sense(struct manager *m)
{
        int r = sensor_read(m->pf->sensor, &m->sample);

        if (r >= 0)
                memreport_sample(m);
        return r;
}

/* What the estimator is told of the machine beside the sample: the CPUs apps hold, the top
 * frequency they run at and, for the online power fit, each CPU's frequency (its domain's). */
static void machine_view(struct manager *m, struct estimator_machine *mach)
{
        const struct actuator *act = m->pf->actuator;
        const struct sensor_sample *s = &m->sample;

        *mach = (struct estimator_machine){.n_managed = m->n_apps};
        for (unsigned i = 0; i < m->n_apps; i++) {
                cpumask_or(&mach->held, &mach->held, &m->apps[i].cpus);
                if (m->apps[i].freq_khz > mach->top_app_freq_khz)
                        mach->top_app_freq_khz = m->apps[i].freq_khz;
        }
        /* Only the online power fit needs them, and it runs without a configured model. */
        if (m->opt.have_power || !s->energy_measured)
                return;
        if (m->n_cpu_freq < s->n_cpus) {
                unsigned *v = realloc(m->cpu_freq_khz, s->n_cpus * sizeof(*v));

                if (!v)
                        return; /* the online fit skips this interval */
                m->cpu_freq_khz = v;
                m->n_cpu_freq = s->n_cpus;
        }
        for (unsigned c = 0; c < s->n_cpus; c++) {
                m->cpu_freq_khz[c] = 0;
                for (unsigned d = 0; d < act->n_domains; d++)
                        if (cpumask_test(&act->domains[d].cpus, c))
                                m->cpu_freq_khz[c] = act->domains[d].cur_khz;
        }
        mach->cpu_freq_khz = m->cpu_freq_khz;
}

/* The apps the estimator hears about: those with CPUs. In their start-up, only for the whole
 * run's figures: it says little of the steady state the allocator needs. */
static unsigned app_views(const struct manager *m, struct estimator_app_view *views)
{
        unsigned n = 0;

        for (unsigned i = 0; i < m->n_apps; i++) {
                if (cpumask_empty(&m->apps[i].cpus))
                        continue;
                views[n++] = (struct estimator_app_view){
                    .id = m->apps[i].id,
                    .cpus = m->apps[i].cpus,
                    .freq_khz = m->apps[i].freq_khz,
                    .target = m->targets_ok && i < m->sample.n_targets ? (int)i : -1,
                    .run_only = m->sample.timestamp_ns < m->apps[i].since_ns + MANAGER_WARMUP_NS,
                    .counted_since_ns = m->targets_ok ? m->apps[i].since_ns : 0,
                };
        }
        return n;
}

/* Adds the interval to the time the app ran at its configuration: cores, frequency and the
 * packages its CPUs lie on (manager/run_configs.c keeps them). */
static void app_config_add(const struct manager *m, struct mapp *a, double run_s)
{
        struct run_config now = {.cores = cpumask_count(&a->cpus), .freq_khz = a->freq_khz};

        now.pkgs_known = app_packages_word(m, a, &now.pkgs) == 0;
        run_configs_add(&a->run, &now, run_s);
}

/* The part of the sample's interval the app ran in: from its adoption, and none once its
 * process has exited (its target is measured on no CPU), so that the times of its
 * configurations add up to its run, not to a whole interval past either end. */
static double app_interval_s(const struct manager *m, unsigned i)
{
        const struct mapp *a = &m->apps[i];
        uint64_t dt = m->sample.interval_ns;

        if (m->targets_ok && i < m->sample.n_targets) {
                bool measured = false;

                for (unsigned c = 0; c < m->sample.n_cpus && !measured; c++)
                        measured = sensor_target_cpu(&m->sample, i, c)->measured != 0;
                if (!measured)
                        return 0;
        }
        if (m->sample.timestamp_ns > a->since_ns && m->sample.timestamp_ns - a->since_ns < dt)
                dt = m->sample.timestamp_ns - a->since_ns;
        return (double)dt / 1e9;
}

/* Each app's thread states over the interval, towards its speedup stack. */
static void stacks_read(struct manager *m)
{
        struct appstack_view *views;
        int r;

        if (!m->stacks)
                return;
        views = calloc(m->n_apps ? m->n_apps : 1, sizeof(*views));
        if (!views)
                return;
        for (unsigned i = 0; i < m->n_apps; i++) {
                const struct estimate *e = estimator_get(m->est, m->apps[i].id);
                bool counters = e && (e->known & ESTIMATE_SPEEDUP) &&
                                e->speedup_source == ESTIMATE_SPEEDUP_COUNTERS;

                /* Only the counters' speedup (eq. 9) measures work done: busy time over its
                 * maximum counts a thread's run time, not what it lost to the others. Without
                 * it the stack takes the threads' run time, and interference is 0. */
                views[i] = (struct appstack_view){
                    .pid = m->apps[i].pid,
                    .cores = cpumask_count(&m->apps[i].cpus),
                    .speedup = counters ? e->speedup : NAN,
                    /* Memory's share of its time at its clock, where the estimator has
                     * seen it at two clocks or more (docs/stack.md, "Memory"). */
                    .mem_share = counters && (e->known & ESTIMATE_MEM_FRACTION)
                                     ? stack_mem_share_at(e->mem_fraction, e->mem_freq_ref_khz,
                                                          m->apps[i].freq_khz)
                                     : NAN,
                };
        }
        r = appstacks_read(m->stacks, views, m->n_apps);
        if (r < 0)
                log_debug_errno(r, "thread states: interval skipped: %m");
        free(views);
}

/* Does what freqdomain_next says for domain d and logs what freqdomain_done says is news. */
static void freq_act(struct manager *m, unsigned d, unsigned want_khz)
{
        struct actuator *act = m->pf->actuator;
        const struct actuator_ops *ops = m->pf->actuator_ops;
        struct freqdomain *fd = &m->freq[d];
        uint64_t now_ns = platform_now_ns(m->pf);
        enum freq_action a = freqdomain_next(fd, want_khz, act->domains[d].cur_khz, now_ns);
        int r;

        if (a == FREQ_RESTORE && !ops->restore_freq)
                return; /* given back when pctld stops */
        if (a == FREQ_NOTHING)
                return;
        r = a == FREQ_SET ? ops->set_freq(act, d, want_khz) : ops->restore_freq(act, d);
        switch (freqdomain_done(fd, a, want_khz, r, now_ns)) {
        case FREQ_LOG_NONE:
                break;
        case FREQ_LOG_SET:
                log_info("frequency domain %u: %u MHz", d, want_khz / 1000);
                break;
        case FREQ_LOG_RESTORED:
                log_info("frequency domain %u: no app on it any more, given back", d);
                break;
        case FREQ_LOG_RECOVERED:
                if (a == FREQ_SET)
                        log_notice("frequency domain %u: %u MHz, after %u failed attempts", d,
                                   want_khz / 1000, fd->failures_before);
                else
                        log_notice("frequency domain %u: given back, after %u failed attempts", d,
                                   fd->failures_before);
                break;
        case FREQ_LOG_FAILED:
                log_warning_errno(r, "Failed to %s frequency domain %u: %s; %s (said once)",
                                  a == FREQ_SET ? "set" : "give back", d, actuator_strerror(act, r),
                                  freq_fault_of(r) == FREQ_FAULT_VALUE && a == FREQ_SET
                                      ? "not asking for that frequency again"
                                      : "retrying with back-off");
                break;
        case FREQ_LOG_GAVE_UP:
                log_error_errno(r,
                                "Failed to %s frequency domain %u: %s; leaving it alone until "
                                "pctld restarts",
                                a == FREQ_SET ? "set" : "give back", d, actuator_strerror(act, r));
                break;
        }
}

/* A shared domain never slows an app below what its policy chose. */
void tick_apply_freqs(struct manager *m, bool idle_only)
{
        struct actuator *act = m->pf->actuator;

        if (!m->opt.dvfs || !act->can_set_freq)
                return;
        for (unsigned d = 0; d < act->n_domains; d++) {
                unsigned want = 0;

                for (unsigned i = 0; i < m->n_apps; i++) {
                        struct cpumask both;

                        cpumask_and(&both, &m->apps[i].cpus, &act->domains[d].cpus);
                        if (!cpumask_empty(&both) && m->alloc[i].want_freq_khz > want)
                                want = m->alloc[i].want_freq_khz;
                }
                if (!idle_only || !want)
                        freq_act(m, d, want);
        }
        for (unsigned i = 0; i < m->n_apps; i++)
                m->apps[i].freq_khz = app_freq(m, &m->apps[i].cpus);
}

/* Whether app i's CPUs share a frequency domain with another app's CPUs. */
static bool freq_domain_shared(const struct manager *m, unsigned i)
{
        const struct actuator *act = m->pf->actuator;

        for (unsigned d = 0; d < act->n_domains; d++) {
                if (!cpumask_intersects(&m->apps[i].cpus, &act->domains[d].cpus))
                        continue;
                for (unsigned j = 0; j < m->n_apps; j++)
                        if (j != i && cpumask_intersects(&m->apps[j].cpus, &act->domains[d].cpus))
                                return true;
        }
        return false;
}

/* The managed CPUs of one frequency domain, when there are two or more domains of that size,
 * each a whole package's managed CPUs; 0 otherwise (docs/allocator.md, "A domain of its own"). */
static unsigned domain_cpus(const struct manager *m)
{
        const struct actuator *act = m->pf->actuator;
        unsigned size = 0, domains = 0;

        for (unsigned d = 0; d < act->n_domains; d++) {
                struct cpumask mine, pkg;
                int first;

                cpumask_and(&mine, &act->domains[d].cpus, &m->managed_cpus);
                first = cpumask_next(&mine, 0);
                if (first < 0)
                        continue;
                if ((unsigned)first >= m->pf->topo.n_cpus)
                        return 0;
                topology_package_cpus(&m->pf->topo, m->pf->topo.cpu[first].package, &pkg);
                cpumask_and(&pkg, &pkg, &m->managed_cpus);
                if (!cpumask_equal(&pkg, &mine) || (size && cpumask_count(&mine) != size))
                        return 0;
                size = cpumask_count(&mine);
                domains++;
        }
        return domains >= 2 && size >= 2 ? size : 0;
}

struct allocator_ctx decision_ctx(struct manager *m)
{
        const unsigned *freqs = NULL;
        struct allocator_ctx ctx = {
            .est = m->est,
            .pm = manager_power_model(m, NULL),
            .power_measured = m->sample.energy_measured,
            .n_cpus = cpumask_count(&m->managed_cpus),
            .hysteresis = MANAGER_HYSTERESIS,
            .decision = m->ticks,
            .n_apps = m->n_apps,
            .probe_samples = MANAGER_PROBE_SAMPLES,
            /* Per-process counts for every app: learners may time-share CPUs. */
            .learners_share = m->targets_ok && m->sample.n_targets == m->n_apps,
        };

        ctx.n_freqs = m->opt.dvfs ? platform_freqs(m->pf, &freqs) : 0;
        ctx.freqs_khz = freqs;
        ctx.domain_cpus = ctx.n_freqs ? domain_cpus(m) : 0;
        /* The next decision is m->decisions + 1: the one after a probe began (its intervals)
         * and the one after that (the decision after its cores went back) are quiet. */
        ctx.probe_quiet = m->bw_probe.decision &&
                          m->decisions + 1 <= m->bw_probe.decision + MANAGER_PROBE_QUIET_DECISIONS;
        return ctx;
}

/* Each package's memory traffic against the apps' instructions there, where the sensor
 * measures it (a sample without it changes nothing: -ENODATA). */
static void estimate_membw(struct manager *m, const struct estimator_app_view *views, unsigned n)
{
        struct membw_app *apps;
        int r;

        if (!m->sample.mem_measured)
                return;
        apps = calloc(n ? n : 1, sizeof(*apps));
        if (!apps)
                return; /* the next interval tries again; nothing decides on it alone */
        for (unsigned i = 0; i < n; i++) {
                const struct estimate *e = estimator_get(m->est, views[i].id);

                apps[i] = (struct membw_app){
                    .id = views[i].id,
                    .cpus = views[i].cpus,
                    .target = views[i].target,
                    .freq_khz = views[i].freq_khz,
                    .i0 = e && (e->known & ESTIMATE_I0) ? e->i0 : NAN,
                };
        }
        r = membw_update(m->bw, &m->sample, &m->pf->topo, apps, n);
        if (r < 0)
                log_debug_errno(r, "memory traffic: interval skipped: %m");
        free(apps);
}

/* The estimate stage: the apps' estimates and the machine's power from the sample, and the
 * time each app ran at its configuration. 1 when estimated, 0 when the estimator skipped the
 * interval, -ENOMEM. */
static int estimate(struct manager *m)
{
        struct estimator_app_view *views;
        struct estimator_machine mach;
        unsigned n_views;
        int r;

        views = calloc(m->n_apps ? m->n_apps : 1, sizeof(*views));
        if (!views)
                return -ENOMEM;
        machine_view(m, &mach);
        n_views = app_views(m, views);
        r = estimator_interval(m->est, &m->sample, &mach, views, n_views);
        if (r >= 0 && mach.n_managed)
                estimate_membw(m, views, n_views);
        free(views);
        if (r < 0) {
                log_debug_errno(r, "estimator: interval skipped: %m");
                return 0;
        }
        for (unsigned i = 0; i < m->n_apps; i++)
                if (!cpumask_empty(&m->apps[i].cpus))
                        app_config_add(m, &m->apps[i], app_interval_s(m, i));
        return 1;
}

/* App i's view of its packages' memory bandwidth (allocator_app.bw), where every package its
 * CPUs lie on has its bandwidth known (membw_bandwidth) and its bytes per instruction is
 * known; else none. The predictions it prices are per 1e9 instructions: only with the app's
 * IPC known. Only where apps share the machine: an app alone measures its own score, the cap
 * in it. */
static void bw_view(struct manager *m, unsigned i)
{
        struct allocator_app *a = &m->alloc[i];
        const struct estimate *e = estimator_get(m->est, m->apps[i].id);
        double bpi, bandwidth_gbs = 0, traffic_gbs = 0, slack = INFINITY;
        struct cpumask pkgs;

        a->bw.bandwidth_gbs = 0;
        if (!m->sample.mem_measured || m->n_apps < 2 || !e ||
            (e->known & (ESTIMATE_IPC | ESTIMATE_IPS)) != (ESTIMATE_IPC | ESTIMATE_IPS) ||
            membw_bytes_per_instr(m->bw, m->apps[i].id, &bpi) < 0 || !(bpi > 0) ||
            topology_packages_of(&m->pf->topo, &m->apps[i].cpus, &pkgs) <= 0)
                return;
        cpumask_foreach (k, &pkgs) {
                const struct membw_package *p = membw_package(m->bw, (unsigned)k);
                double gbs = NAN;

                if (!p || membw_bandwidth(m->bw, (unsigned)k, &gbs) < 0 || !(gbs > 0))
                        return;
                bandwidth_gbs += gbs;
                traffic_gbs += p->rate_gbs;
                slack = fmin(slack, p->slack);
        }
        a->bw.slack = slack >= 1 ? slack : 1;
        a->bw.bytes_per_instr = bpi;
        a->bw.bandwidth_gbs = bandwidth_gbs;
        a->bw.others_gbs = fmax(traffic_gbs - bpi * e->ips * 1e-9, 0);
}

/* The observe stage: feeds this interval's measurements to the allocator and builds its view
 * of the machine (*ctx) for the decision that may follow; true when an app's measurement is
 * complete and a decision now would act on it. The history is looked up here, not only at
 * adoption: `pctl run`'s child is adopted before its exec, and who it is shows only after it
 * (history_recall waits for that; the stored work inflation it sets must follow the interval
 * the estimator just took in). */
static bool observe(struct manager *m, struct allocator_ctx *ctx)
{
        bool want = false;

        *ctx = decision_ctx(m);
        for (unsigned i = 0; i < m->n_apps; i++) {
                m->alloc[i].policy = &m->apps[i].policy;
                m->alloc[i].cores = cpumask_count(&m->apps[i].cpus);
                m->alloc[i].freq_khz = m->apps[i].freq_khz;
                /* A real app's own progress markers (the model machine's come through
                 * manager_set_progress). */
                if (!m->pf->sim) {
                        uint64_t units;

                        m->alloc[i].progress_known = progress_read(m->apps[i].pid, &units) == 0;
                        if (m->alloc[i].progress_known) {
                                m->alloc[i].progress_units = units;
                                m->alloc[i].progress_ns = platform_now_ns(m->pf);
                        }
                }
                history_recall(m, i);
                bw_view(m, i);
                allocator_observe(ctx, &m->alloc[i]);
                /* A returning app is placed before the first decision tick, too; a new app is
                 * placed at the first sample it is seen in (learners get CPUs of their own when
                 * there is room), not left where it started until the tick. */
                want |= (m->decisions > 0 || m->alloc[i].hint.cores) &&
                        allocator_wants_decision(ctx, &m->alloc[i]);
                want |= !m->apps[i].decided;
        }
        return want;
}

/* The memory traffic as the decision sees it: each package's rate and bandwidth (measured or
 * a lower bound), each app's bytes per instruction where it is told apart. */
static void log_membw(const struct manager *m)
{
        char line[200];

        for (unsigned k = 0; k < membw_n_packages(m->bw); k++)
                if (membw_describe(m->bw, k, line, sizeof(line)) == 0)
                        log_debug("memory: package %u: %s", k, line);
        for (unsigned i = 0; i < m->n_apps; i++) {
                double bpi;

                if (membw_bytes_per_instr(m->bw, m->apps[i].id, &bpi) == 0)
                        log_debug("memory: %s (pid %d): %.2f bytes per instruction",
                                  m->apps[i].name, (int)m->apps[i].pid, bpi);
        }
}

/* A probe for a full package's bandwidth (docs/allocator.md, "A probe for a full package's
 * bandwidth"): where a package sits steady at the most traffic it ever served and nothing
 * moves there, its bandwidth is only a lower bound and the price of bandwidth never applies.
 * The app moving the most of its traffic (wholly there, at least MEMBW_PROBE_SHARE of it, its
 * search past learning, kept on its cores by this plan, past spreading's verdict where it can
 * be spread) runs MEMBW_PROBE_MOVE of its cores fewer until the next decision, which gives
 * them back: flat traffic while its busy cycles fell measures the bandwidth (model/membw.c);
 * traffic that fell shows the package was not full. Once per package at that traffic, one
 * package at a time, never while a trial of spreading is open, and none begins on its
 * intervals or the decision after (allocator_ctx.probe_quiet). Only where apps share the
 * machine, as the price. */
static void bw_probe(struct manager *m)
{
        uint64_t back = m->bw_probe.id;
        bool domains = false;

        m->bw_probe.id = 0;
        /* The probe lasts one decision: its app gets its count back where the allocator kept
         * it at the probe's and the plan with it can be placed (allocator_give_back). */
        for (unsigned i = 0; back && i < m->n_apps; i++) {
                struct cpumask *cur;
                int r;

                if (m->apps[i].id != back)
                        continue;
                cur = calloc(m->n_apps, sizeof(*cur));
                if (!cur)
                        return; /* no give-back; the probe is over either way */
                for (unsigned j = 0; j < m->n_apps; j++)
                        cur[j] = m->apps[j].cpus;
                r = allocator_give_back(&m->pf->topo, &m->managed_cpus, m->alloc, cur, m->n_apps, i,
                                        m->bw_probe.cores);
                free(cur);
                if (r != 0)
                        return; /* one probe at a time: its package is read at the next decision */
                break;
        }
        if (!m->sample.mem_measured || m->n_apps < 2)
                return;
        /* A trial of spreading is judged by every app's stalls over the next decision, at the
         * counts it began with: a probe would move them. */
        for (unsigned i = 0; i < m->n_apps; i++) {
                if (m->alloc[i].spreading.since)
                        return;
                domains |= m->alloc[i].own_domain;
        }
        for (unsigned k = 0; k < membw_n_packages(m->bw); k++) {
                const struct membw_package *p = membw_package(m->bw, k);
                double best_gbs = 0;
                int best = -1;
                unsigned n, cut;

                if (!p || !membw_probe_wanted(m->bw, k))
                        continue;
                for (unsigned i = 0; i < m->n_apps; i++) {
                        const struct allocator_app *a = &m->alloc[i];
                        const struct estimate *e = estimator_get(m->est, m->apps[i].id);
                        struct cpumask pkgs;
                        double bpi, gbs;

                        /* Spreading over packages is the first answer to a full package
                         * (more memory controllers): where it can still be tried (several
                         * packages, no app holding a frequency domain of its own), the probe
                         * waits for its verdict, which a probe's moved stalls would blur. */
                        if (m->pf->topo.n_packages > 1 && !domains && !a->spreading.refuted)
                                continue;
                        if (!m->apps[i].handle || a->shares_cpus || a->spread ||
                            (a->phase != ALLOCATOR_PHASE_SEARCH &&
                             a->phase != ALLOCATOR_PHASE_SETTLED) ||
                            a->want_cores != cpumask_count(&m->apps[i].cpus) || a->want_cores < 2 ||
                            topology_packages_of(&m->pf->topo, &m->apps[i].cpus, &pkgs) != 1 ||
                            !cpumask_test(&pkgs, k) || !e || !(e->known & ESTIMATE_IPS) ||
                            membw_bytes_per_instr(m->bw, m->apps[i].id, &bpi) < 0)
                                continue;
                        gbs = bpi * e->ips * 1e-9;
                        if (gbs >= MEMBW_PROBE_SHARE * p->steady_gbs && gbs > best_gbs) {
                                best = (int)i;
                                best_gbs = gbs;
                        }
                }
                if (best < 0)
                        continue;
                n = m->alloc[best].want_cores;
                cut = (unsigned)ceil(MEMBW_PROBE_MOVE * n);
                if (cut >= n)
                        continue;
                (void)membw_probe_started(m->bw, k);
                m->bw_probe.id = m->apps[best].id;
                m->bw_probe.decision = m->decisions;
                m->bw_probe.cores = n;
                m->alloc[best].want_cores = n - cut;
                m->alloc[best].changed = true;
                snprintf(m->alloc[best].reason, sizeof(m->alloc[best].reason),
                         "%u core%s fewer until the next decision: a probe of package %u's "
                         "memory bandwidth (steady at the most it served)",
                         cut, plural_s(cut), k);
                return; /* one probe at a time */
        }
}

/* The decide stage: the allocator's plan (cores, frequency) for every app. 1 when decided, 0
 * when there is no app, < 0 when the allocator has no plan (the current one stays). */
static int decide(struct manager *m, const struct allocator_ctx *ctx)
{
        int r;

        m->decisions++;
        if (m->n_apps == 0) {
                tick_apply_freqs(m, true); /* a give-back that failed is retried */
                return 0;
        }
        log_debug("decision %llu at %.1f s", (unsigned long long)m->decisions,
                  (platform_now_ns(m->pf) - m->start_ns) / 1e9);
        log_membw(m);
        /* Only decisions read it, and CPUs change only at decisions: not worth a sample. */
        for (unsigned i = 0; i < m->n_apps; i++)
                m->alloc[i].freq_shared = ctx->n_freqs && freq_domain_shared(m, i);
        /* Each app's last speedup stack orders its search (docs/allocator.md); on the model
         * machine, pctl sim run hands them over (manager_set_stack). */
        for (unsigned i = 0; m->stacks && i < m->n_apps; i++) {
                const struct stack *st = appstacks_get(m->stacks, m->apps[i].pid);

                if (st)
                        m->alloc[i].stack = *st;
        }
        r = allocator_decide(ctx, m->alloc, m->n_apps);
        if (r < 0)
                return log_warning_errno(r, "allocator: no plan this decision (%m), keeping "
                                            "the current one");
        bw_probe(m);
        for (unsigned i = 0; i < m->n_apps; i++)
                m->apps[i].decided = true;
        return 1;
}

/* The place stage: the CPUs each app gets for the plan (*next, one mask per app, the caller
 * frees it), moving as few as it can. */
static int place(struct manager *m, struct cpumask **next)
{
        struct cpumask *cur = calloc(m->n_apps, sizeof(*cur));
        struct cpumask *v = calloc(m->n_apps, sizeof(*v));
        int r;

        if (!cur || !v) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < m->n_apps; i++)
                cur[i] = m->apps[i].cpus;
        r = allocator_place(&m->pf->topo, &m->managed_cpus, m->alloc, cur, v, m->n_apps);
        if (r < 0) {
                log_warning_errno(r, "allocator: cannot place the plan (%m), keeping the "
                                     "current one");
                /* What did not fit, for whoever reads the debug log: a plan the allocator
                 * makes is meant to be placeable. */
                for (unsigned i = 0; i < m->n_apps; i++) {
                        char list[128];

                        cpumask_format(&cur[i], list, sizeof(list));
                        log_debug("allocator: unplaced: %s (pid %d): wants %u cores%s%s, holds %s",
                                  m->apps[i].name, (int)m->apps[i].pid, m->alloc[i].want_cores,
                                  m->alloc[i].own_domain ? ", a frequency domain of its own" : "",
                                  m->alloc[i].spread        ? ", spread"
                                  : m->alloc[i].shares_cpus ? ", time-sharing"
                                                            : "",
                                  list);
                }
                goto out;
        }
        *next = v;
        v = NULL;
out:
        free(cur);
        free(v);
        return r < 0 ? r : 0;
}

/* The apply stage: the actuator moves each app the plan moves (one that is gone or refused is
 * released), then sets the frequency domains. */
static void apply(struct manager *m, const struct cpumask *next)
{
        for (unsigned i = m->n_apps; i-- > 0;) {
                struct mapp *a = &m->apps[i];
                struct app_packages pkgs;
                struct app_packages_fields fields;
                char list[128];
                int r;

                if (cpumask_equal(&next[i], &a->cpus)) {
                        if (m->alloc[i].changed)
                                log_info("%s (pid %d): %u MHz, %s", a->name, (int)a->pid,
                                         m->alloc[i].want_freq_khz / 1000, m->alloc[i].reason);
                        continue;
                }
                if (!a->handle)
                        continue; /* only observed: its CPUs are not ours to change */
                r = m->pf->actuator_ops->set_cpus(m->pf->actuator, a->handle, &next[i]);
                if (r < 0) {
                        if (actuator_error_is_gone(r)) {
                                release_app(m, i, MANAGER_WHY_EXITED);
                        } else if (actuator_error_is_transient(r)) {
                                log_info("%s (pid %d): cpuset change deferred (%s), retrying "
                                         "next decision",
                                         a->name, (int)a->pid, strerror(-r));
                        } else {
                                char why[160];

                                snprintf(why, sizeof(why), "cannot set its CPUs: %s", strerror(-r));
                                log_error("%s (pid %d): %s; no longer managed", a->name,
                                          (int)a->pid, why);
                                release_app(m, i, why);
                        }
                        continue;
                }
                a->cpus = next[i];
                m->changes++;
                cpumask_format(&a->cpus, list, sizeof(list));
                /* A spread says so, as status does: else the journal cannot tell it from a move.
                 * Its packages are fields too, for journalctl to select by. */
                app_packages(m, i, &pkgs);
                app_packages_fields(m, &pkgs, &fields);
                log_app_info_fields(a->name, (int)a->pid, a->policy.name, fields.v, fields.n,
                                    "%s (pid %d): CPUs %s (%u), %s%s%s", a->name, (int)a->pid, list,
                                    cpumask_count(&a->cpus), m->alloc[i].reason,
                                    pkgs.why[0] ? "; " : "", pkgs.why);
        }
        tick_apply_freqs(m, false);
}
