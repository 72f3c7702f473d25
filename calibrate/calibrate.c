/* Calibration on the real machine: pbench runs under the best sensor backend, at every
 * settable frequency. Each run is pbench pinned by its own --cpus; the sensor samples the
 * benchmark's CPUs CPU-wide, so the counts include the system work on them (ΔI). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "calibrate_internal.h"
#include "pctl/actuator.h"
#include "pctl/cpufreq.h"
#include "pctl/sensor.h"
#include "pctl/state.h"
#include "pctl/util.h"

#define CAL_POLL_NS (100 * NSEC_PER_MSEC)
#define CAL_OUT_MAX 65536

void calibrate_sum_counts(const struct sensor_sample *s, const struct cpumask *cpus,
                          struct calibrate_counts *c)
{
        double busy = 0, instr = 0, energy = 0;
        bool has_instr = true, has_cycles = true;

        for (unsigned cpu = 0; cpu < s->n_cpus; cpu++) {
                const struct sensor_counts *k = &s->cpu[cpu];

                if (!cpumask_test(cpus, cpu))
                        continue;
                busy += (double)k->busy_ns / 1e9;
                has_instr &= (k->measured & SENSOR_INSTR) != 0;
                has_cycles &= (k->measured & SENSOR_CYCLES) != 0;
                instr += (double)k->instr;
                c->cycles_cpu[cpu] += (double)k->cycles;
        }
        for (unsigned p = 0; p < s->n_packages; p++)
                energy += s->energy_j[p];
        c->interval_s += (double)s->interval_ns / 1e9;
        c->busy_s += busy;
        c->instr += instr;
        c->has_instr &= has_instr;
        c->has_cycles &= has_cycles;
        c->has_energy &= s->energy_measured;
        c->energy_j += energy;
}

void calibrate_counts_to_run(const struct calibrate_counts *whole,
                             const struct calibrate_counts *steady, const struct cpumask *cpus,
                             struct calibrate_run *run)
{
        double cmax = 0;

        cpumask_foreach (cpu, cpus)
                if ((unsigned)cpu < CALIBRATE_MAX_CORES)
                        cmax = fmax(cmax, whole->cycles_cpu[cpu]);
        run->cpu_busy_s = whole->busy_s;
        run->instr = whole->has_instr ? whole->instr : NAN;
        run->cycles_max = whole->has_cycles ? cmax : NAN;
        run->energy_j = steady->has_energy && steady->interval_s > 0 ? steady->energy_j : NAN;
        run->interval_s = steady->interval_s;
        run->power_busy_s = steady->busy_s;
}

void calibrate_progress_report(const struct calibrate_config *cfg, const struct calibrate_run *r,
                               unsigned done, unsigned total, double done_weight,
                               double total_weight, uint64_t start_ns)
{
        struct calibrate_progress pr = {
            .done = done, .total = total, .p = r->p, .cores = r->cores, .freq_khz = r->freq_khz};

        if (!cfg->progress)
                return;
        pr.elapsed_s = (double)(now_ns() - start_ns) / 1e9;
        pr.left_s =
            done_weight > 0 ? pr.elapsed_s * (total_weight - done_weight) / done_weight : NAN;
        cfg->progress(&pr, cfg->progress_user);
}

double calibrate_run_weight(double p, unsigned cores)
{
        double sp;

        /* Relative wall time of a run: eq. 2 over T(1). */
        if (model_speedup(p, cores, &sp) < 0)
                return 1;
        return 1 / sp;
}

/* The first n CPUs of the list. */
static void first_cpus(const struct cpumask *all, unsigned n, struct cpumask *out)
{
        unsigned k = 0;

        cpumask_zero(out);
        cpumask_foreach (cpu, all) {
                if (k++ == n)
                        break;
                cpumask_set(out, (unsigned)cpu);
        }
}

struct pbench_out {
        double units_per_s, work_units, wall_s, busy_sum_s, busy_max_s;
};

/* A member that is a number (json-c keeps integers and doubles apart). */
static bool pbench_number(struct json_object *o, const char *key, double *out)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) ||
            !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
                return false;
        *out = json_object_get_double(v);
        return true;
}

static int pbench_parse(const char *text, struct pbench_out *o, char *err, size_t err_size)
{
        enum json_tokener_error jerr;
        struct json_object *v = json_tokener_parse_verbose(text, &jerr), *busy;
        size_t n;

        *o = (struct pbench_out){0};
        if (!v) {
                snprintf(err, err_size, "pbench printed no JSON we can read: %s",
                         json_tokener_error_desc(jerr));
                return -EINVAL;
        }
        if (!pbench_number(v, "units_per_s", &o->units_per_s) ||
            !pbench_number(v, "work_units", &o->work_units) ||
            !pbench_number(v, "wall_s", &o->wall_s) ||
            !json_object_object_get_ex(v, "thread_busy_s", &busy) ||
            !json_object_is_type(busy, json_type_array) ||
            (n = json_object_array_length(busy)) == 0) {
                snprintf(err, err_size,
                         "pbench's JSON lacks units_per_s, work_units, wall_s or thread_busy_s");
                json_object_put(v);
                return -EBADMSG;
        }
        for (size_t i = 0; i < n; i++) {
                double b = json_object_get_double(json_object_array_get_idx(busy, i));

                o->busy_sum_s += b;
                o->busy_max_s = fmax(o->busy_max_s, b);
        }
        json_object_put(v);
        return 0;
}

static bool stopped(const struct calibrate_config *cfg)
{
        return cfg->stop && *cfg->stop;
}

/* Runs one pbench, sampling its CPUs until it exits. -EINTR when stopped (pbench is killed
 * and reaped first). */
static int pbench_run(const struct calibrate_config *cfg, struct sensor *sensor,
                      struct sensor_sample *sample, char *const argv[], const struct cpumask *cpus,
                      struct pbench_out *po, struct calibrate_counts *whole,
                      struct calibrate_counts *steady, char *err, size_t err_size)
{
        _cleanup_free_ char *out = malloc(CAL_OUT_MAX);
        size_t len = 0;
        int pipefd[2], status, r = 0;
        pid_t pid;

        if (!out)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        if (sensor)
                sensor_read(sensor, sample); /* baseline */
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return r;
        }
        if (pid == 0) {
                dup2(pipefd[1], STDOUT_FILENO);
                signal(SIGINT, SIG_IGN); /* the parent decides when pbench stops */
                execv(argv[0], argv);
                _exit(127);
        }
        close(pipefd[1]);
        fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
        for (;;) {
                struct timespec ts = {0, CAL_POLL_NS};
                pid_t w;
                ssize_t n;

                nanosleep(&ts, NULL);
                while (len < CAL_OUT_MAX - 1 &&
                       (n = read(pipefd[0], out + len, CAL_OUT_MAX - 1 - len)) > 0)
                        len += (size_t)n;
                if (stopped(cfg)) {
                        kill(pid, SIGTERM);
                        waitpid(pid, NULL, 0);
                        close(pipefd[0]);
                        return -EINTR;
                }
                w = waitpid(pid, &status, WNOHANG);
                if (sensor && sensor_read(sensor, sample) == 0) {
                        calibrate_sum_counts(sample, cpus, whole);
                        /* An interval that saw pbench exit is not steady. */
                        if (w == 0)
                                calibrate_sum_counts(sample, cpus, steady);
                }
                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR) {
                        r = -errno;
                        close(pipefd[0]);
                        return r;
                }
        }
        for (ssize_t n;
             len < CAL_OUT_MAX - 1 && (n = read(pipefd[0], out + len, CAL_OUT_MAX - 1 - len)) > 0;)
                len += (size_t)n;
        close(pipefd[0]);
        out[len] = '\0';
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                snprintf(err, err_size, "%s exited with %s %d", argv[0],
                         WIFEXITED(status) ? "status" : "signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                return -EIO;
        }
        return pbench_parse(out, po, err, err_size);
}

int calibrate_recover(const char *dir, char *note, size_t note_size)
{
        struct actuator_config cfg = {.state_dir = dir, .dvfs = true};
        struct actuator_recovery rec;
        int r;

        note[0] = '\0';
        r = actuator_recover(&cfg, &rec);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        if (rec.restored || rec.kept || rec.n_skipped)
                snprintf(
                    note, note_size,
                    "a calibrate that did not finish had left frequency settings: %u put back, "
                    "%u kept for the next start, %u unreadable line(s) (%s)",
                    rec.restored, rec.kept, rec.n_skipped, rec.record);
        return 0;
}

/* Frequencies: every one cpufreq offers on the first domain (or the ones asked for), set on
 * every domain; or only the current one, and why. */
static int freqs_open(const struct calibrate_config *cfg, struct calibrate_result *res,
                      struct state_record **rec, struct cpufreq **cf, char *err, size_t err_size)
{
        char why[256] = "";
        char dir[512];
        const struct freq_domain *d;
        int r;

        res->n_freqs = 1;
        res->freqs_khz[0] = 0;
        if (cpufreq_probe(why, sizeof(why)) < 0) {
                if (cfg->n_freqs) {
                        snprintf(err, err_size, "--freqs: frequencies cannot be set here (%s)",
                                 why);
                        return -ENODEV;
                }
                snprintf(res->freq_note, sizeof(res->freq_note),
                         "frequencies cannot be set (%s): only the current one is measured", why);
                return 0;
        }
        snprintf(dir, sizeof(dir), "%s/calibrate", PCTL_STATEDIR);
        r = calibrate_recover(dir, res->recovery_note, sizeof(res->recovery_note));
        if (r < 0) {
                snprintf(err, err_size, "cannot recover the state record in %s: %s", dir,
                         r == -EBUSY ? "another pctl calibrate is running" : strerror(-r));
                return r;
        }
        r = state_record_open(dir, rec);
        if (r < 0) {
                snprintf(err, err_size, "cannot open the state record in %s: %s", dir,
                         strerror(-r));
                return r;
        }
        r = cpufreq_open(*rec, cf, why, sizeof(why));
        if (r < 0 || cpufreq_n_domains(*cf) == 0) {
                snprintf(err, err_size, "cpufreq: %s", why);
                return r < 0 ? r : -ENODEV;
        }
        d = cpufreq_domain(*cf, 0);
        if (cfg->n_freqs) {
                for (unsigned i = 0; i < cfg->n_freqs; i++) {
                        bool ok = false;

                        for (unsigned k = 0; k < d->n_freqs; k++)
                                ok |= d->freqs_khz[k] == cfg->freqs_khz[i];
                        if (!ok) {
                                snprintf(err, err_size,
                                         "--freqs: %u MHz is not a frequency this machine offers",
                                         cfg->freqs_khz[i] / 1000);
                                return -EINVAL;
                        }
                        res->freqs_khz[i] = cfg->freqs_khz[i];
                }
                res->n_freqs = cfg->n_freqs;
        } else if (d->n_freqs) {
                res->n_freqs = d->n_freqs;
                memcpy(res->freqs_khz, d->freqs_khz, d->n_freqs * sizeof(unsigned));
        } else {
                res->n_freqs = 2;
                res->freqs_khz[0] = d->min_khz;
                res->freqs_khz[1] = d->max_khz;
        }
        return 0;
}

static void freqs_close(struct state_record *rec, struct cpufreq *cf)
{
        cpufreq_close(cf);
        if (rec)
                state_record_close(rec);
}

static int set_freq_all(struct cpufreq *cf, unsigned khz, char *err, size_t err_size)
{
        if (!cf || khz == 0)
                return 0;
        for (unsigned d = 0; d < cpufreq_n_domains(cf); d++) {
                int r = cpufreq_set(cf, d, khz);

                if (r < 0) {
                        snprintf(err, err_size, "cannot set %u MHz on frequency domain %u: %s",
                                 khz / 1000, d, cpufreq_error(cf));
                        return r;
                }
        }
        return 0;
}

int calibrate_run_real(const struct calibrate_config *cfg, struct calibrate_result *out, char *err,
                       size_t err_size)
{
        struct calibrate_result res = {0};
        struct sensor_config scfg = {0};
        struct sensor_sample sample = {0};
        const struct sensor_ops *ops = NULL;
        struct sensor *sensor = NULL;
        struct state_record *rec = NULL;
        struct cpufreq *cf = NULL;
        struct cpumask all;
        cpu_set_t set;
        double ps[CALIBRATE_MAX_P], t1_s = cfg->t1_s > 0 ? cfg->t1_s : 1.5, work = 0;
        unsigned cores[64], n_p, n_c, n_cpus, repeat = cfg->repeat ? cfg->repeat : 1, total;
        double total_w = 0, done_w = 0;
        char why[1024];
        uint64_t start_ns = now_ns();
        int r;

        platform_profile_init(&res.profile);
        if (!cfg->pbench || access(cfg->pbench, X_OK) < 0) {
                snprintf(err, err_size, "pbench not found or not executable at '%s'",
                         cfg->pbench ? cfg->pbench : "");
                return -ENOENT;
        }
        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return -errno;
        cpumask_zero(&all);
        for (unsigned c = 0; c < CPU_SETSIZE && c < CALIBRATE_MAX_CORES; c++)
                if (CPU_ISSET(c, &set))
                        cpumask_set(&all, c);
        if (!cpumask_empty(&cfg->cpus)) {
                if (!cpumask_subset(&cfg->cpus, &all)) {
                        snprintf(err, err_size,
                                 "--cpus: some of these CPUs are not online or not allowed");
                        return -EINVAL;
                }
                all = cfg->cpus;
        }
        n_cpus = cpumask_count(&all);
        n_p = calibrate_plan_p(cfg->quick, ps, CALIBRATE_MAX_P);
        n_c = calibrate_plan_cores(cfg->quick, n_cpus, cores, ARRAY_SIZE(cores));

        scfg.cpus = all;
        r = sensor_pick_auto(&scfg, &ops, why, sizeof(why));
        if (r < 0) {
                snprintf(err, err_size, "%s", why);
                return r;
        }
        r = sensor_open(ops, &scfg, &sensor);
        if (r < 0) {
                snprintf(err, err_size, "cannot open the %s sensor: %s", ops->name, strerror(-r));
                return r;
        }
        r = freqs_open(cfg, &res, &rec, &cf, err, err_size);
        if (r < 0)
                goto out;
        total = res.n_freqs * n_p * n_c * repeat;
        res.runs = calloc(total, sizeof(*res.runs));
        if (!res.runs) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned f = 0; f < res.n_freqs; f++)
                for (unsigned ip = 0; ip < n_p; ip++)
                        for (unsigned ic = 0; ic < n_c; ic++)
                                total_w += repeat * calibrate_run_weight(ps[ip], cores[ic]);
        for (unsigned f = 0; f < res.n_freqs; f++) {
                r = set_freq_all(cf, res.freqs_khz[f], err, err_size);
                if (r < 0)
                        goto out;
                for (unsigned ip = 0; ip < n_p; ip++) {
                        for (unsigned ic = 0; ic < n_c; ic++) {
                                for (unsigned k = 0; k < repeat; k++) {
                                        struct calibrate_run *run = &res.runs[res.n_runs];
                                        struct calibrate_counts whole = CALIBRATE_COUNTS_INIT,
                                                                steady = CALIBRATE_COUNTS_INIT;
                                        struct pbench_out po = {0};
                                        struct cpumask used;
                                        char p_s[32], n_s[16], cpus_s[CPUMASK_LIST_MAX], size_s[48];
                                        char *argv[] = {(char *)cfg->pbench,
                                                        "--p",
                                                        p_s,
                                                        "--threads",
                                                        n_s,
                                                        "--cpus",
                                                        cpus_s,
                                                        work > 0 ? "--work" : "--t1",
                                                        size_s,
                                                        "--json",
                                                        NULL};

                                        *run = (struct calibrate_run){.p = ps[ip],
                                                                      .cores = cores[ic],
                                                                      .freq_khz = res.freqs_khz[f]};
                                        calibrate_progress_report(cfg, run, res.n_runs, total,
                                                                  done_w, total_w, start_ns);
                                        first_cpus(&all, cores[ic], &used);
                                        cpumask_format(&used, cpus_s, sizeof(cpus_s));
                                        snprintf(p_s, sizeof(p_s), "%.4f", ps[ip]);
                                        snprintf(n_s, sizeof(n_s), "%u", cores[ic]);
                                        /* Every run does the same work (--work), sized once by
                                         * the first run's --t1: runs compare per unit. */
                                        snprintf(size_s, sizeof(size_s), "%.6f",
                                                 work > 0 ? work : t1_s);
                                        r = pbench_run(cfg, sensor, &sample, argv, &used, &po,
                                                       &whole, &steady, err, err_size);
                                        if (r < 0)
                                                goto out;
                                        if (work == 0)
                                                work = po.work_units;
                                        run->work_units = po.work_units;
                                        run->wall_s = po.wall_s;
                                        run->busy_sum_s = po.busy_sum_s;
                                        run->busy_max_s = po.busy_max_s;
                                        calibrate_counts_to_run(&whole, &steady, &used, run);
                                        res.n_runs++;
                                        done_w += calibrate_run_weight(ps[ip], cores[ic]);
                                }
                        }
                }
        }
        strscpy(res.profile.backend, ops->name, sizeof(res.profile.backend));
        platform_profile_identify(&res.profile);
        res.profile.n_cpus = n_cpus;
        r = calibrate_fit(&res);
        if (r < 0)
                snprintf(err, err_size, "the fit failed: %s", strerror(-r));
out:
        freqs_close(rec, cf);
        sensor_sample_free(&sample);
        sensor_close(sensor);
        if (r < 0) {
                calibrate_result_free(&res);
                return r;
        }
        *out = res;
        return 0;
}
