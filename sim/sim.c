/* The model machine: virtual clock, apps progressing under their cpuset and frequency, the
 * counters a real machine would show, and the power model behind its RAPL counters. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/util.h"
#include "sim_internal.h"

static uint64_t splitmix64(uint64_t *x)
{
        uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
        return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: our own generator, so a seed gives the same run on every libc. */
static uint64_t sim_rand(struct sim_machine *m)
{
        uint64_t *s = m->rng;
        uint64_t result = rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

static double gauss_box_muller(struct sim_machine *m)
{
        double u1, u2;

        do
                u1 = (double)(sim_rand(m) >> 11) * 0x1.0p-53;
        while (u1 <= 0);
        u2 = (double)(sim_rand(m) >> 11) * 0x1.0p-53;
        return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Counter noise is drawn per CPU and per app at every read: millions of draws per simulated
 * hour. A table of seeded Box-Muller draws indexed by 16 random bits keeps that cheap. */
double sim_gauss(struct sim_machine *m)
{
        if (!m->gauss)
                return 0; /* a truth-only machine: no sensor reads it */
        if (m->gauss_bits_left == 0) {
                m->gauss_bits = sim_rand(m);
                m->gauss_bits_left = 4;
        }
        m->gauss_bits_left--;
        double g = m->gauss[m->gauss_bits & (SIM_GAUSS_N - 1)];
        m->gauss_bits >>= 16;
        return g;
}

void sim_free(struct sim_machine *m)
{
        if (!m)
                return;
        for (unsigned i = 0; i < m->n_apps; i++) {
                free(m->apps[i].set);
                free(m->apps[i].ts_s);
                free(m->apps[i].shape);
        }
        free(m->apps);
        free(m->cpu_pkg);
        free(m->pkg_freq);
        free(m->cpu);
        free(m->app_cpu);
        free(m->pkg_energy_j);
        free(m->pkg_mem_bytes);
        free(m->pkg_power_w);
        free(m->rapl_start);
        free(m->s_busy);
        free(m->s_held);
        free(m->s_held_sum);
        free(m->s_users);
        free(m->s_fhz);
        free(m->gauss);
        if (m->owns_sc)
                sim_scenario_free(m->sc);
        free(m);
}

static int app_set_all(struct sim_machine *m, struct sim_app_state *a)
{
        unsigned *set = malloc(m->n_cpus * sizeof(unsigned));

        if (!set)
                return -ENOMEM;
        for (unsigned c = 0; c < m->n_cpus; c++)
                set[c] = c;
        free(a->set);
        a->set = set;
        a->n_set = m->n_cpus;
        return 0;
}

static int machine_new(struct sim_scenario *sc, bool owns_sc, int only_app, bool sensed,
                       struct sim_machine **out)
{
        const struct sim_machine_spec *ms = &sc->mach;
        struct sim_machine *m = calloc(1, sizeof(*m));
        unsigned n_phys = ms->sockets * ms->cores_per_socket;

        if (!m)
                return -ENOMEM;
        m->sc = sc;
        m->n_cpus = n_phys * ms->threads_per_core;
        m->n_packages = ms->sockets;
        m->n_apps = only_app >= 0 ? 1 : sc->n_apps;
        m->cpu_pkg = calloc(m->n_cpus, sizeof(unsigned));
        m->pkg_freq = calloc(m->n_packages, sizeof(unsigned));
        m->apps = calloc(m->n_apps ? m->n_apps : 1, sizeof(*m->apps));
        m->cpu = calloc(m->n_cpus, sizeof(*m->cpu));
        m->app_cpu = calloc((size_t)(m->n_apps ? m->n_apps : 1) * m->n_cpus, sizeof(*m->app_cpu));
        m->pkg_energy_j = calloc(m->n_packages, sizeof(double));
        m->pkg_mem_bytes = calloc(m->n_packages, sizeof(double));
        m->pkg_power_w = calloc(m->n_packages, sizeof(double));
        m->rapl_start = calloc(m->n_packages, sizeof(uint32_t));
        m->s_busy = calloc(m->n_cpus, sizeof(double));
        m->s_held = calloc(m->n_cpus, sizeof(double));
        m->s_held_sum = calloc(m->n_cpus, sizeof(double));
        m->s_users = calloc(m->n_cpus, sizeof(unsigned));
        m->s_fhz = calloc(m->n_cpus, sizeof(double));
        m->gauss = sensed ? malloc(SIM_GAUSS_N * sizeof(double)) : NULL;
        if (!m->cpu_pkg || !m->pkg_freq || !m->apps || !m->cpu || !m->app_cpu || !m->pkg_energy_j ||
            !m->pkg_mem_bytes || !m->pkg_power_w || !m->rapl_start || !m->s_busy || !m->s_held ||
            !m->s_held_sum || !m->s_users || !m->s_fhz || (sensed && !m->gauss)) {
                sim_free(m);
                return -ENOMEM;
        }
        /* Numbered like Linux: package by package, SMT siblings last. */
        for (unsigned c = 0; c < m->n_cpus; c++)
                m->cpu_pkg[c] = (c % n_phys) / ms->cores_per_socket;
        for (unsigned p = 0; p < m->n_packages; p++)
                m->pkg_freq[p] = ms->n_freqs - 1; /* firmware boots at the top P-state */
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];

                a->spec = &sc->apps[only_app >= 0 ? (unsigned)only_app : i];
                a->start_s = only_app >= 0 ? 0 : a->spec->start_s;
                a->n_threads = a->spec->threads && !a->spec->n_rows ? a->spec->threads : m->n_cpus;
                a->truth.known = a->spec->n_rows == 0;
                a->truth.threads = a->n_threads;
                if (app_set_all(m, a) < 0) {
                        sim_free(m);
                        return -ENOMEM;
                }
        }
        uint64_t x = ms->seed;
        for (int i = 0; i < 4; i++)
                m->rng[i] = splitmix64(&x);
        for (unsigned i = 0; sensed && i < SIM_GAUSS_N; i++)
                m->gauss[i] = gauss_box_muller(m);
        /* A real RAPL counter starts wherever the last reset left it. */
        for (unsigned p = 0; sensed && p < m->n_packages; p++)
                m->rapl_start[p] = (uint32_t)(sim_rand(m) >> 32);
        m->owns_sc = owns_sc;
        *out = m;
        return 0;
}

int sim_machine_new(struct sim_scenario *sc, bool owns_sc, int only_app, struct sim_machine **out)
{
        return machine_new(sc, owns_sc, only_app, true, out);
}

int sim_machine_new_truth(struct sim_scenario *sc, int only_app, struct sim_machine **out)
{
        return machine_new(sc, false, only_app, false, out);
}

int sim_load(const char *path, struct sim_machine **out, struct sim_error *err)
{
        struct sim_scenario *sc;
        int r = sim_scenario_load(path, NULL, path, &sc, err);

        if (r < 0)
                return r;
        r = sim_machine_new(sc, true, -1, out);
        if (r < 0)
                sim_scenario_free(sc);
        return r;
}

int sim_load_string(const char *text, const char *name, struct sim_machine **out,
                    struct sim_error *err)
{
        struct sim_scenario *sc;
        int r = sim_scenario_load(NULL, text, name ? name : "<string>", &sc, err);

        if (r < 0)
                return r;
        r = sim_machine_new(sc, true, -1, out);
        if (r < 0)
                sim_scenario_free(sc);
        return r;
}

uint64_t sim_now_ns(const struct sim_machine *m)
{
        return m->now_ns;
}

bool sim_done(const struct sim_machine *m)
{
        for (unsigned i = 0; i < m->n_apps; i++)
                if (!m->apps[i].finished)
                        return false;
        return true;
}

void sim_machine_info(const struct sim_machine *m, struct sim_machine_info *out)
{
        const struct sim_machine_spec *ms = &m->sc->mach;

        *out = (struct sim_machine_info){
            .preset = ms->preset,
            .sockets = ms->sockets,
            .cores_per_socket = ms->cores_per_socket,
            .threads_per_core = ms->threads_per_core,
            .n_cpus = m->n_cpus,
            .n_freqs = ms->n_freqs,
            .n_apps = m->n_apps,
        };
        memcpy(out->freqs_mhz, ms->freqs_mhz, sizeof(out->freqs_mhz));
}

unsigned sim_list_procs(const struct sim_machine *m, struct sim_proc *out, unsigned max)
{
        for (unsigned i = 0; i < m->n_apps && i < max; i++) {
                const struct sim_app_state *a = &m->apps[i];

                out[i] = (struct sim_proc){
                    .pid = SIM_PID_BASE + (pid_t)i,
                    .state = a->finished  ? SIM_PROC_EXITED
                             : a->started ? SIM_PROC_RUNNING
                                          : SIM_PROC_PENDING,
                };
                strscpy(out[i].comm, a->spec->name, sizeof(out[i].comm));
        }
        return m->n_apps;
}

int sim_set_cpus(struct sim_machine *m, unsigned app, const struct cpumask *cpus)
{
        unsigned n = 0, *set;

        if (app >= m->n_apps)
                return -ESRCH;
        for (int c = cpumask_next(cpus, 0); c >= 0; c = cpumask_next(cpus, (unsigned)c + 1)) {
                if ((unsigned)c >= m->n_cpus)
                        return -ERANGE; /* like cpuset.cpus with an absent CPU */
                n++;
        }
        if (n == 0)
                return -EINVAL;
        set = malloc(n * sizeof(unsigned));
        if (!set)
                return -ENOMEM;
        n = 0;
        cpumask_foreach (c, cpus)
                set[n++] = (unsigned)c;
        free(m->apps[app].set);
        m->apps[app].set = set;
        m->apps[app].n_set = n;
        return 0;
}

void sim_get_cpus(const struct sim_machine *m, unsigned app, struct cpumask *out)
{
        cpumask_zero(out);
        if (app >= m->n_apps)
                return;
        for (unsigned j = 0; j < m->apps[app].n_set; j++)
                cpumask_set(out, m->apps[app].set[j]);
}

int sim_set_freq(struct sim_machine *m, unsigned package, unsigned freq_mhz)
{
        const struct sim_machine_spec *ms = &m->sc->mach;

        if (package >= m->n_packages)
                return -ENODEV;
        for (unsigned i = 0; i < ms->n_freqs; i++)
                if (ms->freqs_mhz[i] == freq_mhz) {
                        m->pkg_freq[package] = i;
                        return 0;
                }
        return -EINVAL;
}

unsigned sim_freq_mhz(const struct sim_machine *m, unsigned package)
{
        return m->sc->mach.freqs_mhz[m->pkg_freq[package]];
}

uint32_t sim_rapl_raw(const struct sim_machine *m, unsigned package)
{
        uint64_t units = (uint64_t)floor(m->pkg_energy_j[package] * SIM_RAPL_UNITS_PER_J);

        return (uint32_t)(m->rapl_start[package] + units);
}

/* Dynamic power of one busy CPU at P-state fi: C*V^2*f, relative to the top P-state. */
double sim_dyn_w_at(const struct sim_machine *m, unsigned fi)
{
        const struct sim_machine_spec *ms = &m->sc->mach;
        unsigned top = ms->n_freqs - 1;
        double v = ms->volts[fi] / ms->volts[top];

        return ms->core_dyn_w / ms->threads_per_core * v * v *
               ((double)ms->freqs_mhz[fi] / ms->freqs_mhz[top]);
}

static double dyn_w(const struct sim_machine *m, unsigned package)
{
        return sim_dyn_w_at(m, m->pkg_freq[package]);
}

static void phase_at(const struct sim_app_spec *s, double run_s, double *p, double *ipc,
                     double *next_s)
{
        *p = s->p;
        *ipc = s->ipc;
        *next_s = INFINITY;
        for (unsigned i = 0; i < s->n_phases; i++) {
                if (s->phases[i].at_s > run_s) {
                        *next_s = s->phases[i].at_s;
                        break;
                }
                *p = s->phases[i].p;
                if (s->phases[i].ipc > 0)
                        *ipc = s->phases[i].ipc;
        }
}

/* CPUs an Amdahl app keeps busy: its threads, at most its CPUs. */
static unsigned amdahl_cpus(const struct sim_machine *m, const struct sim_app_state *a)
{
        unsigned threads = a->spec->threads ? a->spec->threads : m->n_cpus;

        return a->n_set < threads ? a->n_set : threads;
}

/* Lane i of k's share of the parallel work: linear from the first lane to the last, which
 * gets `imbalance` times the first's (docs/sim.md, "Thread states and the speedup stack"). */
static double lane_work(const struct sim_app_spec *s, unsigned k, unsigned i)
{
        if (k <= 1)
                return 1;
        return (1 + (s->imbalance - 1) * i / (k - 1)) / (k * (1 + s->imbalance) / 2);
}

/* The parallel part of one unit of single-core work on k lanes: the last (largest) lane's
 * work stretched by its sleep, or the lock's critical sections one after another, whichever
 * is longer. *lmax: the last lane's work; *sync_s: what the lock adds to every lane. */
static double par_time(const struct sim_app_spec *s, unsigned k, double p, double *lmax,
                       double *sync_s)
{
        double l = p * lane_work(s, k, k - 1);
        double tl = l / (1 - s->sleep);
        double tp = fmax(tl, s->sync * p);

        if (lmax)
                *lmax = l;
        if (sync_s)
                *sync_s = tp - tl;
        return tp;
}

/* Instructions retired per useful one on k lanes: the extra work of `extra_work`. */
static double work_inflation(const struct sim_app_spec *s, unsigned k)
{
        return 1 + s->extra_work * (k > 1 ? k - 1.0 : 0.0);
}

/* Wall time of one unit of single-core work on k CPUs: eq. 2's (1 - P) + P/k when there is
 * no lock, imbalance or sleep. */
static double work_time(const struct sim_app_spec *s, unsigned k, double p)
{
        return (1 - p) + par_time(s, k, p, NULL, NULL);
}

/* Instructions per second of an Amdahl app on k CPUs at f_mhz with phase (p, ipc), before
 * any memory-bandwidth limit: eq. 1 per instruction, eq. 2 over T(1). */
static double amdahl_rate(const struct sim_machine *m, const struct sim_app_state *a, unsigned k,
                          double f_mhz, double p, double ipc)
{
        double fmax = m->sc->mach.freqs_mhz[m->sc->mach.n_freqs - 1];
        /* Only the compute share of single-core time stretches with 1/f. */
        double stretch = (1 - a->spec->mem_fraction) * fmax / f_mhz + a->spec->mem_fraction;
        double tpi_s = stretch / (ipc * fmax * 1e6);

        return a->share / (tpi_s * work_time(a->spec, k, p));
}

/* The truth of the speedup stack per second of run time on n CPUs, k of them in use, at
 * phase p, from the hidden parameters: the cores each delimiter costs. */
static void truth_rates(const struct sim_app_state *a, unsigned n, unsigned k, double p,
                        double *speedup, double comp[STACK_COMPONENTS])
{
        const struct sim_app_spec *s = a->spec;
        double l, sync_s, tp = par_time(s, k, p, &l, &sync_s);
        double d = (1 - p) + tp, seq = (1 - p) / d, useful = 1 / d;
        double spin_run = (k - 1) * s->spin * seq;

        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                comp[c] = 0;
        /* One thread runs the sequential part; the others wait, or spin (the cause is still
         * the sequential part), and CPUs beyond the app's threads have nothing to run. */
        comp[STACK_SEQUENTIAL] =
            (k - 1) * (1 - s->spin) * seq + spin_run * a->share + (double)(n - k);
        comp[STACK_SYNC] = k * sync_s / d;
        comp[STACK_IMBALANCE] = (k * l - p) / (1 - s->sleep) / d;
        comp[STACK_IO] = p * s->sleep / (1 - s->sleep) / d;
        /* Time-sharing: what the threads would run, they run for `share` of it. */
        comp[STACK_RUNQUEUE] = (1 - a->share) * (useful + spin_run);
        /* Memory bandwidth: busy, stalled, less done. It is all memory (the machine models no
         * cache, SMT or clock interference): interference stays 0. */
        comp[STACK_MEMORY] = useful * a->share * (1 - 1 / a->mem_stretch);
        *speedup = useful * a->share / a->mem_stretch;
        /* Extra work: busy, retiring instructions, no progress. No delimiter of the stack is
         * this, so it is in interference, the rest. */
        comp[STACK_INTERFERENCE] = *speedup * (1 - 1 / work_inflation(s, k));
        *speedup /= work_inflation(s, k);
}

/* The whole run's P as the estimator defines it (docs/estimator.md, "The whole run"), from
 * the true progress: seg_s seconds on n_set CPUs did speedup x seg_s one-core seconds. */
static void run_truth_add(struct sim_app_state *a, double speedup, double seg_s)
{
        double w = speedup * seg_s;

        a->run_w_s += w;
        a->run_a_s += seg_s;
        a->run_wx_s += a->n_set ? w * (1 - 1.0 / a->n_set) : 0;
}

static void truth_add(struct sim_app_state *a, unsigned k, double p, double seg_s)
{
        double speedup, comp[STACK_COMPONENTS];

        truth_rates(a, a->n_set, k, p, &speedup, comp);
        run_truth_add(a, speedup, seg_s);
        a->truth.time_s += seg_s;
        a->truth.cores_s += a->n_set * seg_s;
        a->truth.speedup_s += speedup * seg_s;
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                a->truth.component_s[c] += comp[c] * seg_s;
}

/* Adds a lane of `threads` threads that is active with probability `prob` to the
 * distribution of active threads (the last bucket holds THREADSTATE_MAX_ACTIVE and more). */
static void dist_add(double *dist, unsigned threads, double prob)
{
        double next[THREADSTATE_MAX_ACTIVE + 1] = {0};

        for (unsigned c = 0; c <= THREADSTATE_MAX_ACTIVE; c++) {
                unsigned up =
                    c + threads < THREADSTATE_MAX_ACTIVE ? c + threads : THREADSTATE_MAX_ACTIVE;

                next[c] += dist[c] * (1 - prob);
                next[up] += dist[c] * prob;
        }
        memcpy(dist, next, sizeof(next));
}

/* The app's threads over one unit of run time on k lanes at phase p: each thread's share of
 * it in each state, and the time with j threads active (docs/sim.md). Threads beyond k take
 * turns on their lane's CPU. Sync and sleep are spread evenly over a lane's work, and lanes
 * are independent of each other, which gives the concurrency histogram. */
static void shape_compute(struct sim_app_state *a, unsigned k, double p)
{
        const struct sim_app_spec *s = a->spec;
        unsigned t = a->n_threads;
        double l, sync_s, tp = par_time(s, k, p, &l, &sync_s);
        double d = (1 - p) + tp, fs = 1 - s->sleep;
        double dist[THREADSTATE_MAX_ACTIVE + 1] = {1};

        memset(a->shape, 0, (size_t)t * SIM_TS_STRIDE * sizeof(double));
        memset(a->shape_active, 0, sizeof(a->shape_active));
        /* The sequential part: thread 0 runs; the others wait in the barrier's futex, or spin
         * on the CPUs left (k - 1 of them) for `spin` of it. */
        a->shape[THREAD_RUN] += (1 - p) / d;
        for (unsigned j = 1; j < t; j++) {
                double *x = &a->shape[(size_t)j * SIM_TS_STRIDE];
                double spin = s->spin * (1 - p) / d, on = (double)(k - 1) / (t - 1);

                x[THREAD_RUN] += spin * on;
                x[THREAD_RUNQUEUE] += spin * (1 - on);
                x[THREAD_SYNC] += (1 - s->spin) * (1 - p) / d;
        }
        a->shape_active[1] += (1 - s->spin) * (1 - p) / d;
        if (t > 1)
                a->shape[SIM_TS_SOLO] += (1 - s->spin) * (1 - p) / d;
        a->shape_active[t < THREADSTATE_MAX_ACTIVE ? t : THREADSTATE_MAX_ACTIVE] +=
            s->spin * (1 - p) / d;
        /* The parallel part, lane by lane: its work (run, or runnable while another thread
         * of the lane runs), its sleep, the lock's wait, then parked at the end barrier until
         * the last lane is done. */
        for (unsigned j = 0; j < t; j++) {
                unsigned lane = j % k, mates = t / k + (lane < t % k);
                double w = p * lane_work(s, k, lane) / d;
                double *x = &a->shape[(size_t)j * SIM_TS_STRIDE];

                x[THREAD_RUN] += w / mates;
                x[THREAD_RUNQUEUE] += w * (1 - 1.0 / mates);
                x[THREAD_BLOCKED] += w * s->sleep / fs;
                x[THREAD_SYNC] += sync_s / d + (l / d - w) / fs;
        }
        /* Lanes by the end of their work, last first: while lanes lane..k-1 still work, each
         * is active for its work over that time. */
        for (unsigned lane = k; lane-- > 0;) {
                unsigned mates = t / k + (lane < t % k);
                double w = p * lane_work(s, k, lane);
                double end = w / fs + sync_s;
                double prev = lane ? p * lane_work(s, k, lane - 1) / fs + sync_s : 0;

                if (end <= 0)
                        continue;
                dist_add(dist, mates, w / end);
                for (unsigned c = 0; c <= THREADSTATE_MAX_ACTIVE; c++)
                        a->shape_active[c] += dist[c] * (end - prev) / d;
                /* Solo: a lane's only thread active while every other working lane is not
                 * (the lanes done are parked, alive and waiting). The product over the
                 * others of (1 - active) is the whole product without this lane; lanes
                 * always active (no lock, no sleep) are counted apart. */
                double idle_all = 1;
                unsigned always = 0;

                for (unsigned q = lane; t > 1 && q < k; q++) {
                        double wq = p * lane_work(s, k, q), aq = wq / (wq / fs + sync_s);

                        if (aq >= 1 - 1e-12)
                                always++;
                        else
                                idle_all *= 1 - aq;
                }
                for (unsigned o = lane; t > 1 && o < k; o++) {
                        double wo = p * lane_work(s, k, o), ao = wo / (wo / fs + sync_s);
                        double alone;

                        if (t / k + (o < t % k) != 1)
                                continue;
                        if (ao >= 1 - 1e-12)
                                alone = always == 1 ? idle_all : 0;
                        else
                                alone = always == 0 ? ao * idle_all / (1 - ao) : 0;
                        a->shape[(size_t)o * SIM_TS_STRIDE + SIM_TS_SOLO] +=
                            alone * (end - prev) / d;
                }
        }
}

static void threads_add(struct sim_app_state *a, unsigned k, double p, double seg_s)
{
        if (!a->shape_ok || a->shape_k != k || a->shape_p != p) {
                shape_compute(a, k, p);
                a->shape_ok = true;
                a->shape_k = k;
                a->shape_p = p;
        }
        for (unsigned j = 0; j < a->n_threads; j++) {
                const double *x = &a->shape[(size_t)j * SIM_TS_STRIDE];
                double *acc = &a->ts_s[(size_t)j * SIM_TS_STRIDE];

                for (unsigned st = 0; st < SIM_TS_STRIDE; st++)
                        acc[st] += x[st] * seg_s;
                /* Time-sharing the CPUs: runnable for the others' share of the time. */
                acc[THREAD_RUN] -= x[THREAD_RUN] * seg_s * (1 - a->share);
                acc[THREAD_RUNQUEUE] += x[THREAD_RUN] * seg_s * (1 - a->share);
        }
        for (unsigned c = 0; c <= THREADSTATE_MAX_ACTIVE; c++)
                a->ts_active_s[c] += a->shape_active[c] * seg_s;
}

/* The part of the step after the app ended: its threads have exited. */
static void threads_exited(struct sim_app_state *a, double exited_s)
{
        if (exited_s <= 0)
                return;
        for (unsigned j = 0; j < a->n_threads; j++)
                a->ts_s[(size_t)j * SIM_TS_STRIDE + THREAD_EXITED] += exited_s;
        a->ts_active_s[0] += exited_s;
}

int sim_track_threads(struct sim_machine *m)
{
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];

                if (a->ts_s)
                        continue;
                a->ts_s = calloc((size_t)a->n_threads * SIM_TS_STRIDE, sizeof(double));
                a->shape = calloc((size_t)a->n_threads * SIM_TS_STRIDE, sizeof(double));
                if (!a->ts_s || !a->shape)
                        return -ENOMEM;
        }
        m->track_threads = true;
        return 0;
}

/* Memory bandwidth: each package gives mem_bandwidth_gbs; the apps on it ask for their
 * instruction rate times their bytes per instruction (spread over the packages of the CPUs
 * they keep busy). Where they ask for more than it gives, every app there slows by the
 * ratio: its cores stay busy (stalled), fewer instructions retire, IPC falls. An app's
 * threads meet at barriers, so its most contended package sets its pace. */
static void memory_contention(struct sim_machine *m, double t1_s)
{
        const struct sim_machine_spec *ms = &m->sc->mach;
        double demand[SENSOR_MAX_PACKAGES] = {0}, stretch[SENSOR_MAX_PACKAGES];

        bool traffic = false;

        for (unsigned i = 0; i < m->n_apps; i++) {
                m->apps[i].mem_stretch = 1;
                traffic = traffic || m->apps[i].spec->mem_bytes_per_instr > 0;
        }
        if (ms->mem_bandwidth_gbs <= 0 || !traffic)
                return;
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];
                unsigned k = amdahl_cpus(m, a);
                double p, ipc, next_s, bytes_s;

                if (!a->started || a->finished || a->start_s >= t1_s || a->spec->n_rows > 0 ||
                    a->spec->mem_bytes_per_instr <= 0 || k == 0)
                        continue;
                phase_at(a->spec, a->run_s, &p, &ipc, &next_s);
                bytes_s = amdahl_rate(m, a, k, a->f_mhz, p, ipc) * a->spec->mem_bytes_per_instr;
                for (unsigned j = 0; j < k; j++)
                        demand[m->cpu_pkg[a->set[j]]] += bytes_s / k;
        }
        for (unsigned p = 0; p < m->n_packages; p++)
                stretch[p] = fmax(1, demand[p] / (ms->mem_bandwidth_gbs * 1e9));
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];
                unsigned k = amdahl_cpus(m, a);

                if (a->spec->n_rows > 0 || a->spec->mem_bytes_per_instr <= 0)
                        continue;
                for (unsigned j = 0; j < k; j++)
                        a->mem_stretch = fmax(a->mem_stretch, stretch[m->cpu_pkg[a->set[j]]]);
        }
}

/* Amdahl app over [ts, t1]: alternates sequential and parallel parts finely, as pbench's
 * iterations do, so the busy share of each CPU over any window reflects P. */
static void step_amdahl(struct sim_machine *m, struct sim_app_state *a, double window_s)
{
        const struct sim_app_spec *s = a->spec;
        unsigned k = amdahl_cpus(m, a);

        a->k = k;
        while (window_s > 0 && !a->finished) {
                double p, ipc, next_s;

                phase_at(s, a->run_s, &p, &ipc, &next_s);
                double seg_s = fmin(window_s, next_s - a->run_s);
                double denom = work_time(s, k, p); /* eq. 2 over T(1) */
                double rate = amdahl_rate(m, a, k, a->f_mhz, p, ipc) / a->mem_stretch;
                double rem = s->instructions - a->done;
                /* Retired at the machine's pace; of them, 1/infl are progress. */
                double infl = work_inflation(s, k);
                double instr = rate * seg_s;

                if (instr / infl >= rem) {
                        instr = rem * infl;
                        seg_s = instr / rate;
                        a->finished = true;
                }
                /* Lane 0 runs the sequential part and its share of the parallel one; the
                 * others their shares, and waiting threads spin for a share of the
                 * sequential part: busy, no progress. */
                double fs = (1 - p) / denom, w0 = lane_work(s, k, 0);
                double fp = k > 1 ? p * (1 - w0) / (k - 1) / denom : 0;
                a->active_s += seg_s;
                a->b_first_s += a->share * seg_s * ((1 - p) + p * w0) / denom;
                if (k > 1)
                        a->b_other_s += a->share * seg_s * (fp + s->spin * fs);
                a->i_first += instr * ((1 - p) + p * w0);
                if (k > 1)
                        a->i_other += instr * p * (1 - w0) / (k - 1);
                truth_add(a, k, p, seg_s);
                if (m->track_threads)
                        threads_add(a, k, p, seg_s);
                a->p_weighted_s += p * seg_s;
                a->run_s += seg_s;
                a->done = a->finished ? s->instructions : a->done + instr / infl;
                window_s -= seg_s;
        }
}

/* Rows app: time and energy from the interpolated rows; busy cycles on the first CPU and
 * (SP-1)/(N-1) of the others, instructions in proportion to busy time. */
static void step_rows(struct sim_machine *m, struct sim_app_state *a, double window_s, double f_mhz)
{
        const struct sim_app_spec *s = a->spec;
        const struct sim_machine_spec *ms = &m->sc->mach;
        unsigned n = a->n_set;
        double t_s, e_j, t1_s, e1_j;

        sim_rows_at(s, n, f_mhz, &t_s, &e_j);
        sim_rows_at(s, 1, f_mhz, &t1_s, &e1_j);
        double sp = t1_s / t_s;
        double x = n > 1 ? fmin(1, fmax(0, (sp - 1) / (n - 1))) : 0;
        /* The machine's own static power with this app alone on n CPUs; the rest of the rows'
         * power is what the app adds. */
        double static_w =
            ms->uncore_w * m->n_packages +
            (n * ms->core_static_w + (m->n_cpus - n) * ms->core_idle_w) / ms->threads_per_core;
        double add_w = fmax(0, e_j / t_s - static_w);
        double rate = a->share / t_s;
        double seg_s = window_s;
        double frac = rate * seg_s;

        if (frac >= 1 - a->done) {
                frac = 1 - a->done;
                seg_s = frac / rate;
                a->finished = true;
        }
        double instr = frac * s->instructions;
        a->k = n;
        a->active_s += seg_s;
        a->b_first_s += a->share * seg_s;
        a->b_other_s += a->share * seg_s * x;
        a->i_first += instr / (1 + (n - 1) * x);
        a->i_other += instr * x / (1 + (n - 1) * x);
        a->dyn_rows_j += add_w * a->share * seg_s;
        a->truth.time_s += seg_s;
        a->truth.cores_s += n * seg_s;
        run_truth_add(a, sp * a->share, seg_s);
        /* Its threads as an Amdahl app whose other CPUs are busy x of the time. */
        if (m->track_threads)
                threads_add(a, n, n > 1 ? x / (x + (1 - x) / n) : 0, seg_s);
        a->p_weighted_s += s->rows_p * seg_s;
        a->run_s += seg_s;
        a->done = a->finished ? 1 : a->done + frac;
}

int sim_step(struct sim_machine *m, uint64_t dt_ns)
{
        const struct sim_machine_spec *ms = &m->sc->mach;
        double t0_s = m->now_ns / 1e9, dt_s = dt_ns / 1e9, t1_s = t0_s + dt_s;
        double tsc_hz = ms->freqs_mhz[ms->n_freqs - 1] * 1e6;
        double total_active_s = 0;
        double pkg_e[SENSOR_MAX_PACKAGES] = {0};
        double dyn_rate[SENSOR_MAX_PACKAGES];
        double pool_j = ms->uncore_w * m->n_packages * dt_s;

        if (dt_ns == 0)
                return 0;
        for (unsigned p = 0; p < m->n_packages; p++) {
                dyn_rate[p] = dyn_w(m, p);
                pkg_e[p] = ms->uncore_w * dt_s;
        }
        memset(m->s_busy, 0, m->n_cpus * sizeof(double));
        memset(m->s_held, 0, m->n_cpus * sizeof(double));
        memset(m->s_held_sum, 0, m->n_cpus * sizeof(double));
        memset(m->s_users, 0, m->n_cpus * sizeof(unsigned));

        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];

                if (a->finished || a->start_s >= t1_s)
                        continue;
                for (unsigned j = 0; j < a->n_set; j++)
                        m->s_users[a->set[j]]++;
        }
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];
                unsigned users = 1;

                a->active_s = a->b_first_s = a->b_other_s = a->i_first = a->i_other = 0;
                a->dyn_rows_j = 0;
                if (a->finished || a->start_s >= t1_s)
                        continue;
                a->started = true;
                a->f_mhz = INFINITY;
                /* Threads meet at barriers: the slowest CPU sets the pace. */
                for (unsigned j = 0; j < a->n_set; j++) {
                        unsigned c = a->set[j];
                        double f = ms->freqs_mhz[m->pkg_freq[m->cpu_pkg[c]]];

                        if (m->s_users[c] > users)
                                users = m->s_users[c];
                        if (f < a->f_mhz)
                                a->f_mhz = f;
                }
                a->share = 1.0 / users;
        }
        memory_contention(m, t1_s);
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];

                if (a->finished || a->start_s >= t1_s)
                        continue;
                double window_s = t1_s - fmax(t0_s, a->start_s);
                if (a->spec->n_rows > 0)
                        step_rows(m, a, window_s, a->f_mhz);
                else
                        step_amdahl(m, a, window_s);
                total_active_s += a->active_s;
        }
        for (unsigned i = 0; m->track_threads && i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];

                if (a->started && a->finished)
                        threads_exited(a, t1_s - fmax(t0_s, a->start_s) - a->active_s);
        }

        /* Counters and per-CPU use. System work on every CPU, busy or idle (eq. 14's per-CPU
         * term: interrupts, kernel threads, daemons). */
        for (unsigned c = 0; c < m->n_cpus; c++) {
                m->s_fhz[c] = ms->freqs_mhz[m->pkg_freq[m->cpu_pkg[c]]] * 1e6;
                m->cpu[c].instr += ms->os_ips_cpu * dt_s;
        }
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];
                struct sim_acc *acc = &m->app_cpu[(size_t)i * m->n_cpus];
                bool rows = a->spec->n_rows > 0;

                if (a->active_s <= 0)
                        continue;
                for (unsigned j = 0; j < a->n_set; j++) {
                        unsigned c = a->set[j];

                        if (a->active_s > m->s_held[c])
                                m->s_held[c] = a->active_s;
                        m->s_held_sum[c] += a->active_s;
                        if (j >= a->k)
                                continue; /* held, idle: more CPUs than threads */
                        double busy_s = j == 0 ? a->b_first_s : a->b_other_s;
                        double i0 = j == 0 ? a->i_first : a->i_other;
                        /* Its traffic goes through the memory controllers of the package
                         * whose CPU retired the instructions (memory_contention's view). */
                        if (!rows && a->spec->mem_bytes_per_instr > 0)
                                m->pkg_mem_bytes[m->cpu_pkg[c]] +=
                                    i0 * a->spec->mem_bytes_per_instr;
                        /* eq. 5: I = I0 + ΔI on the CPU; the app's own counts are I0. */
                        double instr = i0 + ms->os_ips * busy_s;
                        double busy_ns = busy_s * 1e9;
                        double cycles = busy_s * m->s_fhz[c];
                        double ref_cycles = busy_s * tsc_hz;

                        if (!rows)
                                m->s_busy[c] += busy_s;
                        acc[c].busy_ns += busy_ns;
                        acc[c].instr += i0;
                        acc[c].cycles += cycles;
                        acc[c].ref_cycles += ref_cycles;
                        m->cpu[c].busy_ns += busy_ns;
                        m->cpu[c].instr += instr;
                        m->cpu[c].cycles += cycles;
                        m->cpu[c].ref_cycles += ref_cycles;
                }
        }

        /* Power: uncore, C-state idle, leakage of held CPUs, dynamic of busy ones. */
        double static_w = ms->core_static_w / ms->threads_per_core;
        double idle_w = ms->core_idle_w / ms->threads_per_core;
        for (unsigned c = 0; c < m->n_cpus; c++) {
                unsigned p = m->cpu_pkg[c];
                double held_s = fmin(dt_s, m->s_held[c]);
                double idle_j = idle_w * (dt_s - held_s);

                pkg_e[p] += static_w * held_s + idle_j + dyn_rate[p] * m->s_busy[c];
                pool_j += idle_j;
        }
        double pool_div = fmax(dt_s, total_active_s);
        double attributed = 0;
        for (unsigned i = 0; i < m->n_apps; i++) {
                struct sim_app_state *a = &m->apps[i];
                double e_j = 0, busy_sum = a->b_first_s + (a->k - 1) * a->b_other_s;

                if (a->active_s <= 0)
                        continue;
                for (unsigned j = 0; j < a->n_set; j++) {
                        unsigned c = a->set[j];
                        unsigned p = m->cpu_pkg[c];
                        double busy_s = j == 0 ? a->b_first_s : (j < a->k ? a->b_other_s : 0);

                        e_j += static_w * fmin(dt_s, m->s_held[c]) * a->active_s / m->s_held_sum[c];
                        if (a->spec->n_rows > 0) {
                                double share_j =
                                    busy_sum > 0 ? a->dyn_rows_j * busy_s / busy_sum : 0;
                                pkg_e[p] += share_j;
                                e_j += share_j;
                        } else {
                                e_j += dyn_rate[p] * busy_s;
                        }
                }
                /* Uncore and idle CPUs: shared by the apps running, by their time. */
                double pool_share = pool_j * a->active_s / pool_div;
                a->energy_j += e_j + pool_share;
                a->pool_j += pool_share;
                attributed += pool_share;
        }
        m->unattributed_j += pool_j - attributed;
        for (unsigned p = 0; p < m->n_packages; p++) {
                m->pkg_energy_j[p] += pkg_e[p];
                m->pkg_power_w[p] = pkg_e[p] / dt_s;
        }
        m->now_ns += dt_ns;
        return 0;
}

/* The true speedup of an app alone on its current CPUs at f_mhz against one CPU there: the
 * Amdahl rate (phase now), limited by its packages' memory bandwidth, as eq. 9 should find. */
static double truth_speedup(const struct sim_machine *m, const struct sim_app_state *a,
                            double f_mhz)
{
        const struct sim_machine_spec *ms = &m->sc->mach;
        struct sim_app_state alone = *a;
        unsigned k = amdahl_cpus(m, a);
        double p, ipc, next_s, r1, rk, bw = ms->mem_bandwidth_gbs * 1e9;
        double bpi = a->spec->mem_bytes_per_instr;

        if (k == 0 || !isfinite(f_mhz))
                return NAN;
        if (a->spec->n_rows > 0) {
                double t1, e1, tk, ek;

                sim_rows_at(a->spec, 1, f_mhz, &t1, &e1);
                sim_rows_at(a->spec, a->n_set, f_mhz, &tk, &ek);
                return t1 / tk;
        }
        alone.share = 1;
        phase_at(a->spec, a->run_s, &p, &ipc, &next_s);
        r1 = amdahl_rate(m, &alone, 1, f_mhz, p, ipc);
        rk = amdahl_rate(m, &alone, k, f_mhz, p, ipc);
        if (bw > 0 && bpi > 0) {
                unsigned per_pkg[SENSOR_MAX_PACKAGES] = {0}, most = 0;

                for (unsigned j = 0; j < k; j++)
                        per_pkg[m->cpu_pkg[a->set[j]]]++;
                for (unsigned q = 0; q < m->n_packages; q++)
                        most = per_pkg[q] > most ? per_pkg[q] : most;
                r1 /= fmax(1, r1 * bpi / bw);
                rk /= fmax(1, rk * bpi * most / k / bw);
        }
        /* In progress: extra instructions are not speedup. */
        return rk / r1 / work_inflation(a->spec, k);
}

int sim_progress_read(const struct sim_machine *m, unsigned app, uint64_t *units)
{
        const struct sim_app_state *a;

        if (app >= m->n_apps)
                return -ESRCH;
        a = &m->apps[app];
        if (!(a->spec->progress_units > 0) || a->spec->n_rows > 0)
                return -ENODATA;
        *units = (uint64_t)floor(a->done / a->spec->instructions * a->spec->progress_units);
        return 0;
}

int sim_truth_app(const struct sim_machine *m, unsigned app, struct sim_app_truth *out)
{
        const struct sim_app_state *a;
        const struct sim_machine_spec *ms = &m->sc->mach;
        unsigned f = UINT32_MAX;

        if (app >= m->n_apps)
                return -ESRCH;
        a = &m->apps[app];
        /* An app that has ended is judged at the frequency it last ran at: a manager that
         * releases it may give its domains back, and the speedup at whatever they were
         * reset to afterwards is a setting it never ran at. */
        if (a->finished && isfinite(a->f_mhz) && a->f_mhz > 0)
                f = (unsigned)a->f_mhz;
        else
                for (unsigned j = 0; j < a->n_set; j++) {
                        unsigned fm = ms->freqs_mhz[m->pkg_freq[m->cpu_pkg[a->set[j]]]];
                        if (fm < f)
                                f = fm;
                }
        *out = (struct sim_app_truth){
            .name = a->spec->name,
            .started = a->started,
            .finished = a->finished,
            .p_true = a->run_s > 0 ? a->p_weighted_s / a->run_s
                                   : (a->spec->n_rows > 0 ? a->spec->rows_p : a->spec->p),
            .instructions_total = a->spec->instructions,
            .time_s = a->run_s,
            .energy_j = a->energy_j,
            .pool_j = a->pool_j,
            .cores = a->n_set,
            .freq_mhz = f,
            .speedup_true = truth_speedup(m, a, f),
            .p_run_true = a->run_wx_s > 0 ? (a->run_w_s - a->run_a_s) / a->run_wx_s : NAN,
            .extra_work = a->spec->n_rows > 0 ? NAN : a->spec->extra_work,
        };
        return 0;
}

double sim_truth_package_power(const struct sim_machine *m, unsigned package)
{
        return package < m->n_packages ? m->pkg_power_w[package] : NAN;
}

double sim_truth_energy_j(const struct sim_machine *m)
{
        double e = 0;

        for (unsigned p = 0; p < m->n_packages; p++)
                e += m->pkg_energy_j[p];
        return e;
}

double sim_app_compute_cpi(const struct sim_app_state *a)
{
        double p, ipc, next_s;

        if (a->spec->n_rows > 0)
                return NAN;
        /* A cycle per instruction at the frequency the machine was built for is
         * (1 - mem_fraction)/ipc of compute and mem_fraction·f/fmax/ipc of memory time (the
         * stretch of amdahl_rate): the compute share does not depend on the frequency. */
        phase_at(a->spec, a->run_s, &p, &ipc, &next_s);
        return (1 - a->spec->mem_fraction) / ipc;
}

int sim_truth_stack_acc(const struct sim_machine *m, unsigned app, struct sim_stack_acc *out)
{
        if (app >= m->n_apps)
                return -ESRCH;
        *out = m->apps[app].truth;
        return 0;
}

void sim_truth_stack(const struct sim_stack_acc *from, const struct sim_stack_acc *to,
                     struct stack *out)
{
        double dt = to->time_s - from->time_s;

        *out = (struct stack){.known = false, .threads = to->threads};
        out->cores = out->speedup = NAN;
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                out->component[c] = NAN;
        if (!to->known || !(dt > 0))
                return;
        out->known = true;
        out->memory_known = true;
        out->cores = (to->cores_s - from->cores_s) / dt;
        out->speedup = (to->speedup_s - from->speedup_s) / dt;
        for (unsigned c = 0; c < STACK_COMPONENTS; c++)
                out->component[c] = (to->component_s[c] - from->component_s[c]) / dt;
}
