/* Calibration on the model machine. There is no pbench process there: the stand-in for one
 * pbench run is a fresh copy of the scenario's machine running one Amdahl app with the
 * programmed P (pbench's law: fixed total work, first CPU sequential, the rest parallel)
 * and an IPC of 1. The driver sees it only through the sim's sensor and actuator ops, as
 * on a real machine; the truth is compared only in tests. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate_internal.h"
#include "pctl/actuator.h"
#include "pctl/sim.h"
#include "pctl/util.h"

#define CAL_SIM_STEP_NS (10 * NSEC_PER_MSEC)
#define CAL_SIM_READ_STEPS 10 /* a sensor read every 100 ms of virtual time */
#define CAL_SIM_APP "pbench"

/* The scenario's text without its [app] sections: the machine alone. */
static int machine_text(const char *path, char **out, char *err, size_t err_size)
{
        FILE *f = fopen(path, "re");
        char line[1024];
        size_t cap = 4096, len = 0;
        bool in_app = false;
        char *text;

        if (!f) {
                int r = -errno;

                snprintf(err, err_size, "%s: %s", path, strerror(-r));
                return r;
        }
        text = malloc(cap);
        if (!text) {
                fclose(f);
                return -ENOMEM;
        }
        text[0] = '\0';
        while (fgets(line, sizeof(line), f)) {
                const char *s = line + strspn(line, " \t");
                size_t n = strlen(line);

                if (*s == '[')
                        in_app = strncmp(s, "[app", 4) == 0;
                if (in_app)
                        continue;
                if (len + n + 1 > cap) {
                        char *t = realloc(text, cap * 2 + n);

                        if (!t) {
                                free(text);
                                fclose(f);
                                return -ENOMEM;
                        }
                        text = t;
                        cap = cap * 2 + n;
                }
                memcpy(text + len, line, n + 1);
                len += n;
        }
        fclose(f);
        *out = text;
        return 0;
}

static int load_with_app(const char *machine, const char *name, double p, double instructions,
                         struct sim_machine **out, char *err, size_t err_size)
{
        size_t size = strlen(machine) + 256;
        _cleanup_free_ char *text = malloc(size);
        struct sim_error se = {0};
        int r;

        if (!text)
                return -ENOMEM;
        snprintf(text, size, "%s\n[app " CAL_SIM_APP "]\ninstructions = %.17g\np = %.17g\n",
                 machine, instructions, p);
        r = sim_load_string(text, name, out, &se);
        if (r < 0)
                snprintf(err, err_size, "%s", se.all[0] ? se.all : se.what);
        return r;
}

/* One stand-in run: a fresh machine, the app on `cpus` at freq_khz, until it finishes. */
static int sim_one(const struct calibrate_config *cfg, const char *machine, double instructions,
                   const struct cpumask *cpus, struct calibrate_run *run, char *err,
                   size_t err_size)
{
        struct sim_machine *m = NULL;
        struct sensor *sensor = NULL;
        struct actuator *act = NULL;
        struct actuator_app *app = NULL;
        struct sensor_sample sample = {0};
        struct sensor_config scfg = {0};
        struct actuator_config acfg = {.dvfs = true};
        static struct calibrate_counts whole, steady;
        double busy_sum = 0, busy_max = 0, *busy_cpu = NULL;
        int r;

        r = load_with_app(machine, cfg->sim_scenario, run->p, instructions, &m, err, err_size);
        if (r < 0)
                return r;
        scfg.machine = m;
        acfg.machine = m;
        r = sensor_open(&sim_sensor_ops, &scfg, &sensor);
        if (r < 0)
                goto out;
        r = actuator_open(&sim_actuator_ops, &acfg, &act, NULL, 0);
        if (r < 0)
                goto out;
        r = act->ops->adopt(act, SIM_PID_BASE, CAL_SIM_APP, &app);
        if (r == 0)
                r = act->ops->set_cpus(act, app, cpus);
        for (unsigned d = 0; r == 0 && d < act->n_domains; d++)
                r = act->ops->set_freq(act, d, run->freq_khz);
        if (r < 0) {
                snprintf(err, err_size, "model machine: %s", actuator_strerror(act, r));
                goto out;
        }
        r = sensor_read(sensor, &sample);
        if (r < 0)
                goto out;
        whole = (struct calibrate_counts)CALIBRATE_COUNTS_INIT;
        steady = (struct calibrate_counts)CALIBRATE_COUNTS_INIT;
        /* Per-CPU busy of the app: the machine runs nothing else, so CPU-wide is the app's. */
        busy_cpu = calloc(sample.n_cpus, sizeof(double));
        if (!busy_cpu) {
                r = -ENOMEM;
                goto out;
        }
        while (r == 0) {
                struct sim_proc proc;

                for (unsigned k = 0; k < CAL_SIM_READ_STEPS && r == 0; k++)
                        r = sim_step(m, CAL_SIM_STEP_NS);
                if (r < 0)
                        break;
                r = sensor_read(sensor, &sample);
                if (r < 0)
                        break;
                sim_list_procs(m, &proc, 1);
                calibrate_sum_counts(&sample, cpus, &whole);
                if (proc.state == SIM_PROC_RUNNING)
                        calibrate_sum_counts(&sample, cpus, &steady);
                cpumask_foreach (cpu, cpus)
                        if ((unsigned)cpu < sample.n_cpus)
                                busy_cpu[cpu] += (double)sample.cpu[cpu].busy_ns / 1e9;
                if (proc.state == SIM_PROC_EXITED)
                        break;
                if (cfg->stop && *cfg->stop)
                        r = -EINTR;
        }
        cpumask_foreach (cpu, cpus) {
                if ((unsigned)cpu >= sample.n_cpus)
                        continue;
                busy_sum += busy_cpu[cpu];
                busy_max = fmax(busy_max, busy_cpu[cpu]);
        }
        free(busy_cpu);
        if (r < 0)
                goto out;
        run->work_units = instructions / 1e9;
        run->wall_s = whole.interval_s;
        run->busy_sum_s = busy_sum;
        run->busy_max_s = busy_max;
        calibrate_counts_to_run(&whole, &steady, cpus, run);
out:
        if (act)
                actuator_close(act); /* gives back the cpuset and every frequency */
        sensor_sample_free(&sample);
        sensor_close(sensor);
        sim_free(m);
        return r;
}

int calibrate_run_sim(const struct calibrate_config *cfg, struct calibrate_result *out, char *err,
                      size_t err_size)
{
        struct calibrate_result res = {0};
        struct sim_machine_info info;
        struct sim_machine *m = NULL;
        _cleanup_free_ char *machine = NULL;
        struct cpumask all;
        double ps[CALIBRATE_MAX_P], t1_s = cfg->t1_s > 0 ? cfg->t1_s : 1.5, instructions;
        unsigned cores[64], n_p, n_c, n_cpus, repeat = cfg->repeat ? cfg->repeat : 1, total;
        double total_w = 0, done_w = 0;
        uint64_t start_ns = now_ns();
        int r;

        platform_profile_init(&res.profile);
        r = machine_text(cfg->sim_scenario, &machine, err, err_size);
        if (r < 0)
                return r;
        r = load_with_app(machine, cfg->sim_scenario, 0.5, 1e9, &m, err, err_size);
        if (r < 0)
                return r;
        sim_machine_info(m, &info);
        snprintf(res.profile.cpu_model, sizeof(res.profile.cpu_model), "model machine %s",
                 info.preset && info.preset[0] ? info.preset : "(no preset)");
        sim_free(m);
        info.preset = NULL; /* it pointed into the machine */

        cpumask_zero(&all);
        for (unsigned c = 0; c < info.n_cpus; c++)
                cpumask_set(&all, c);
        if (!cpumask_empty(&cfg->cpus)) {
                if (!cpumask_subset(&cfg->cpus, &all)) {
                        snprintf(err, err_size, "--cpus: the model machine has CPUs 0-%u",
                                 info.n_cpus - 1);
                        return -EINVAL;
                }
                all = cfg->cpus;
        }
        if (cfg->n_freqs) {
                for (unsigned i = 0; i < cfg->n_freqs; i++) {
                        bool ok = false;

                        for (unsigned k = 0; k < info.n_freqs; k++)
                                ok |= info.freqs_mhz[k] * 1000 == cfg->freqs_khz[i];
                        if (!ok) {
                                snprintf(err, err_size,
                                         "--freqs: %u MHz is not a P-state of the model machine",
                                         cfg->freqs_khz[i] / 1000);
                                return -EINVAL;
                        }
                        res.freqs_khz[i] = cfg->freqs_khz[i];
                }
                res.n_freqs = cfg->n_freqs;
        } else {
                for (unsigned k = 0; k < info.n_freqs; k++)
                        res.freqs_khz[k] = info.freqs_mhz[k] * 1000;
                res.n_freqs = info.n_freqs;
        }
        /* pbench's --t1: work for t1_s of one core at the top frequency, IPC 1. */
        instructions = t1_s * info.freqs_mhz[info.n_freqs - 1] * 1e6;
        n_cpus = cpumask_count(&all);
        n_p = calibrate_plan_p(cfg->quick, ps, CALIBRATE_MAX_P);
        n_c = calibrate_plan_cores(cfg->quick, n_cpus, cores, ARRAY_SIZE(cores));
        total = res.n_freqs * n_p * n_c * repeat;
        res.runs = calloc(total, sizeof(*res.runs));
        if (!res.runs)
                return -ENOMEM;
        for (unsigned f = 0; f < res.n_freqs; f++)
                for (unsigned ip = 0; ip < n_p; ip++)
                        for (unsigned ic = 0; ic < n_c; ic++)
                                total_w += repeat * calibrate_run_weight(ps[ip], cores[ic]) *
                                           res.freqs_khz[res.n_freqs - 1] / res.freqs_khz[f];
        for (unsigned f = 0; f < res.n_freqs; f++) {
                for (unsigned ip = 0; ip < n_p; ip++) {
                        for (unsigned ic = 0; ic < n_c; ic++) {
                                for (unsigned k = 0; k < repeat; k++) {
                                        struct calibrate_run *run = &res.runs[res.n_runs];
                                        struct cpumask used;
                                        unsigned taken = 0;

                                        *run = (struct calibrate_run){.p = ps[ip],
                                                                      .cores = cores[ic],
                                                                      .freq_khz = res.freqs_khz[f]};
                                        calibrate_progress_report(cfg, run, res.n_runs, total,
                                                                  done_w, total_w, start_ns);
                                        if (cfg->stop && *cfg->stop) {
                                                r = -EINTR;
                                                goto fail;
                                        }
                                        cpumask_zero(&used);
                                        cpumask_foreach (cpu, &all)
                                                if (taken++ < cores[ic])
                                                        cpumask_set(&used, (unsigned)cpu);
                                        r = sim_one(cfg, machine, instructions, &used, run, err,
                                                    err_size);
                                        if (r < 0)
                                                goto fail;
                                        res.n_runs++;
                                        done_w += calibrate_run_weight(ps[ip], cores[ic]) *
                                                  res.freqs_khz[res.n_freqs - 1] / res.freqs_khz[f];
                                }
                        }
                }
        }
        strscpy(res.profile.backend, "sim", sizeof(res.profile.backend));
        {
                /* The model machine's identity is its preset, not the host running it. */
                char model[sizeof(res.profile.cpu_model)];

                strscpy(model, res.profile.cpu_model, sizeof(model));
                platform_profile_identify(&res.profile);
                strscpy(res.profile.cpu_model, model, sizeof(model));
        }
        res.profile.n_cpus = info.n_cpus;
        r = calibrate_fit(&res);
        if (r < 0) {
                snprintf(err, err_size, "the fit failed: %s", strerror(-r));
                goto fail;
        }
        *out = res;
        return 0;
fail:
        calibrate_result_free(&res);
        return r;
}

int calibrate_sim_power(const char *scenario, struct model_power *out, char *err, size_t err_size)
{
        struct calibrate_config cc = {.quick = true, .sim_scenario = scenario};
        struct calibrate_result cr;
        char why[256] = "";
        int r = calibrate_run_sim(&cc, &cr, why, sizeof(why));

        if (r < 0) {
                snprintf(err, err_size, "%s", why[0] ? why : strerror(-r));
                return r;
        }
        r = cr.profile.power.n_points > 0;
        if (r)
                *out = cr.profile.power;
        calibrate_result_free(&cr);
        return r;
}
