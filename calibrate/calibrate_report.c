/* Calibration's reports: the human tables (the paper's Tables IV and V), CSV, JSON, plots. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "pctl/calibrate.h"
#include "pctl/jsonfmt.h"
#include "pctl/util.h"

static void put_num(FILE *f, const char *fmt, double v, int width)
{
        if (isfinite(v))
                fprintf(f, fmt, width, v);
        else
                fprintf(f, "%*s", width, "-");
}

void calibrate_print_table(FILE *f, const struct calibrate_result *res)
{
        const struct platform_profile *p = &res->profile;
        unsigned ref = res->n_freqs ? res->freqs_khz[res->n_freqs - 1] : 0;

        fprintf(f, "platform: backend %s, %u CPUs, %s\n", p->backend, p->n_cpus,
                p->cpu_model[0] ? p->cpu_model : "unknown CPU model");
        if (res->freq_note[0])
                fprintf(f, "note: %s\n", res->freq_note);
        if (res->recovery_note[0])
                fprintf(f, "note: %s\n", res->recovery_note);
        if (ref)
                fprintf(f, "validation at %u MHz (the top frequency)\n", ref / 1000);
        fprintf(f, "\nper (P, N): measured vs predicted (eq. 2, eq. 3); time is the critical "
                   "path's CPU seconds\n");
        fprintf(f, "%5s %5s %10s %10s %7s %8s %8s %7s %8s %8s\n", "P", "N", "time_s", "pred_s",
                "err%", "SP", "SP_pred", "err%", "SP_cnt", "P_eq10");
        for (unsigned i = 0; i < res->n_rows; i++) {
                const struct calibrate_row *r = &res->rows[i];

                fprintf(f, "%5.2f %5u", r->p, r->cores);
                put_num(f, " %*.3f", r->time_measured_s, 10);
                put_num(f, " %*.3f", r->time_predicted_s, 10);
                put_num(f, " %*.2f", r->time_error_pct, 7);
                put_num(f, " %*.3f", r->speedup_measured, 8);
                put_num(f, " %*.3f", r->speedup_predicted, 8);
                put_num(f, " %*.2f", r->speedup_error_pct, 7);
                put_num(f, " %*.3f", r->speedup_counters, 8);
                put_num(f, " %*.3f", r->p_eq10_time, 8);
                fputc('\n', f);
        }
        fprintf(f, "\nper P: estimated vs programmed (from time = CPU busy time; from counters "
                   "= eq. 9 IPC)\n");
        fprintf(f, "%5s %10s %10s %10s %10s %8s %8s\n", "P", "eq10_time", "LS_time", "eq10_cnt",
                "LS_cnt", "P_est", "|err|");
        for (unsigned i = 0; i < res->n_prows; i++) {
                const struct calibrate_prow *r = &res->prows[i];

                fprintf(f, "%5.2f", r->p);
                put_num(f, " %*.4f", r->p_eq10_time, 10);
                put_num(f, " %*.4f", r->p_ls_time, 10);
                put_num(f, " %*.4f", r->p_eq10_counters, 10);
                put_num(f, " %*.4f", r->p_ls_counters, 10);
                put_num(f, " %*.4f", r->p_estimated, 8);
                put_num(f, " %*.4f", r->error, 8);
                fputc('\n', f);
        }
        fprintf(f, "\nsingle-core IPC: ");
        if (p->ipc1 > 0)
                fprintf(f, "%.4f\n", p->ipc1);
        else
                fprintf(f, "unknown (the %s backend measures no instructions)\n", p->backend);
        /* eq. 14 per interval: ΔI = α·t + β·busy core-seconds. */
        fprintf(f, "delta-I (eq. 14, dI = alpha*t + beta*busy core-seconds): ");
        if (isfinite(res->delta_i_alpha_fit) && isfinite(res->delta_i_beta_se))
                fprintf(f,
                        "alpha %.4g ± %.2g instructions/s on the app's CPUs, beta %.4g ± %.2g "
                        "instructions per busy core-second; fit error %.3g instructions per run "
                        "RMS (%.1f%% of the mean dI)\n",
                        res->delta_i_alpha_fit, res->delta_i_alpha_se, res->delta_i_beta_fit,
                        res->delta_i_beta_se, res->delta_i_rms, 100 * p->delta_i_fit_error);
        else if (isfinite(res->delta_i_alpha_fit))
                fprintf(f,
                        "alpha %.4g ± %.2g instructions/s on the app's CPUs; beta not separable "
                        "at one frequency (0: counted in I0); fit error %.3g instructions per "
                        "run RMS (%.1f%% of the mean dI)\n",
                        res->delta_i_alpha_fit, res->delta_i_alpha_se, res->delta_i_rms,
                        100 * p->delta_i_fit_error);
        else if (res->instr_measured)
                fprintf(f, "unknown (the runs cannot tell alpha from beta)\n");
        else
                fprintf(f, "unknown (no instruction counts)\n");
        if (p->power.n_points) {
                fprintf(f, "power: static %.3f W, fit residual %.3f W RMS\n", p->power.static_w,
                        p->power_residual_w);
                for (unsigned i = 0; i < p->power.n_points; i++)
                        fprintf(f, "  %5u MHz: %.3f W per busy core, %.3f W per idle held core\n",
                                p->power.points[i].freq_khz / 1000, p->power.points[i].core_w,
                                p->power.points[i].idle_w);
        } else {
                fprintf(f, "power: unknown (the %s backend measures no energy)\n", p->backend);
        }
        fprintf(f, "max |P_est - P|: ");
        put_num(f, "%*.4f", p->max_p_error, 0);
        fprintf(f, "   max speedup error: ");
        put_num(f, "%*.2f", p->max_speedup_error_pct, 0);
        fprintf(f, " %%\n");
}

static void csv_num(FILE *f, double v)
{
        if (isfinite(v))
                fprintf(f, ",%.9g", v);
        else
                fputc(',', f);
}

int calibrate_write_csv(FILE *f, const struct calibrate_result *res)
{
        fprintf(f, "p_programmed,cores,freq_mhz,work_units,wall_s,busy_sum_s,busy_max_s,"
                   "speedup_measured,speedup_predicted,speedup_error_pct,p_eq10,instr,"
                   "cycles_max,power_w,energy_j,edp_js\n");
        for (unsigned i = 0; i < res->n_runs; i++) {
                const struct calibrate_run *r = &res->runs[i];
                double sp = r->busy_max_s > 0 ? r->busy_sum_s / r->busy_max_s : NAN;
                double sp_pred = NAN, p10 = NAN, w = NAN, e = NAN;

                model_speedup(r->p, r->cores, &sp_pred);
                if (r->cores >= 2)
                        model_p_from_speedup(r->cores, sp, &p10);
                if (isfinite(r->energy_j) && r->interval_s > 0) {
                        w = r->energy_j / r->interval_s;
                        /* Energy of the whole run at its steady power. */
                        e = w * r->wall_s;
                }
                fprintf(f, "%.4g,%u,%u", r->p, r->cores, r->freq_khz / 1000);
                csv_num(f, r->work_units);
                csv_num(f, r->wall_s);
                csv_num(f, r->busy_sum_s);
                csv_num(f, r->busy_max_s);
                csv_num(f, sp);
                csv_num(f, sp_pred);
                csv_num(f, 100 * (sp - sp_pred) / sp_pred);
                csv_num(f, p10);
                csv_num(f, r->instr);
                csv_num(f, r->cycles_max);
                csv_num(f, w);
                csv_num(f, e);
                csv_num(f, e * r->wall_s);
                fputc('\n', f);
        }
        return ferror(f) ? -EIO : 0;
}

struct json_object *calibrate_to_json(const struct calibrate_result *res)
{
        const struct platform_profile *p = &res->profile;
        struct json_object *j = json_object_new_object(), *list, *pf, *freqs, *power = NULL;

        if (!j)
                return NULL;
        list = json_object_new_array();
        for (unsigned i = 0; i < res->n_rows; i++) {
                const struct calibrate_row *r = &res->rows[i];
                struct json_object *row = json_object_new_object();
                double p_est = NAN;

                for (unsigned k = 0; k < res->n_prows; k++)
                        if (fabs(res->prows[k].p - r->p) < 1e-9)
                                p_est = res->prows[k].p_estimated;
                json_object_object_add(row, "p_programmed", jsonfmt_double(r->p));
                json_object_object_add(row, "cores", json_object_new_uint64(r->cores));
                json_object_object_add(row, "time_measured_s", jsonfmt_double(r->time_measured_s));
                json_object_object_add(row, "time_predicted_s",
                                       jsonfmt_double(r->time_predicted_s));
                json_object_object_add(row, "time_error_pct", jsonfmt_double(r->time_error_pct));
                json_object_object_add(row, "speedup_measured",
                                       jsonfmt_double(r->speedup_measured));
                json_object_object_add(row, "speedup_predicted",
                                       jsonfmt_double(r->speedup_predicted));
                json_object_object_add(row, "speedup_error_pct",
                                       jsonfmt_double(r->speedup_error_pct));
                json_object_object_add(row, "speedup_counters",
                                       jsonfmt_double(r->speedup_counters));
                json_object_object_add(row, "p_eq10_time", jsonfmt_double(r->p_eq10_time));
                json_object_object_add(row, "p_eq10_counters", jsonfmt_double(r->p_eq10_counters));
                json_object_object_add(row, "p_estimated", jsonfmt_double(p_est));
                json_object_array_add(list, row);
        }
        json_object_object_add(j, "validation", list);
        list = json_object_new_array();
        for (unsigned i = 0; i < res->n_prows; i++) {
                const struct calibrate_prow *r = &res->prows[i];
                struct json_object *row = json_object_new_object();

                json_object_object_add(row, "p_programmed", jsonfmt_double(r->p));
                json_object_object_add(row, "p_eq10_time", jsonfmt_double(r->p_eq10_time));
                json_object_object_add(row, "p_ls_time", jsonfmt_double(r->p_ls_time));
                json_object_object_add(row, "p_eq10_counters", jsonfmt_double(r->p_eq10_counters));
                json_object_object_add(row, "p_ls_counters", jsonfmt_double(r->p_ls_counters));
                json_object_object_add(row, "p_estimated", jsonfmt_double(r->p_estimated));
                json_object_object_add(row, "error", jsonfmt_double(r->error));
                json_object_array_add(list, row);
        }
        json_object_object_add(j, "p", list);
        pf = json_object_new_object();
        json_object_object_add(pf, "backend", jsonfmt_string(p->backend));
        json_object_object_add(pf, "date", jsonfmt_string(p->date));
        json_object_object_add(pf, "hostname", jsonfmt_string(p->hostname));
        json_object_object_add(pf, "cpu_model", jsonfmt_string(p->cpu_model));
        json_object_object_add(pf, "n_cpus", json_object_new_uint64(p->n_cpus));
        json_object_object_add(pf, "ipc1", jsonfmt_double(p->ipc1 > 0 ? p->ipc1 : NAN));
        json_object_object_add(pf, "delta_i_rate", jsonfmt_double(p->delta_i_rate));
        json_object_object_add(pf, "delta_i_alpha", jsonfmt_double(p->delta_i_alpha));
        json_object_object_add(pf, "delta_i_fit_error", jsonfmt_double(p->delta_i_fit_error));
        /* eq. 14 as fitted, before clamping at 0, with standard errors. */
        json_object_object_add(pf, "delta_i_alpha_fit", jsonfmt_double(res->delta_i_alpha_fit));
        json_object_object_add(pf, "delta_i_alpha_se", jsonfmt_double(res->delta_i_alpha_se));
        json_object_object_add(pf, "delta_i_beta_fit", jsonfmt_double(res->delta_i_beta_fit));
        json_object_object_add(pf, "delta_i_beta_se", jsonfmt_double(res->delta_i_beta_se));
        json_object_object_add(pf, "delta_i_rms", jsonfmt_double(res->delta_i_rms));
        freqs = json_object_new_array();
        for (unsigned i = 0; i < res->n_freqs; i++)
                if (res->freqs_khz[i])
                        json_object_array_add(freqs,
                                              json_object_new_uint64(res->freqs_khz[i] / 1000));
        json_object_object_add(pf, "freqs_mhz", freqs);
        if (res->freq_note[0])
                json_object_object_add(pf, "freq_note", jsonfmt_string(res->freq_note));
        if (res->recovery_note[0])
                json_object_object_add(pf, "recovery_note", jsonfmt_string(res->recovery_note));
        if (p->power.n_points) {
                power = json_object_new_object();
                json_object_object_add(power, "static_w", jsonfmt_double(p->power.static_w));
                json_object_object_add(power, "residual_w", jsonfmt_double(p->power_residual_w));
                list = json_object_new_array();
                for (unsigned i = 0; i < p->power.n_points; i++) {
                        struct json_object *pt = json_object_new_object();

                        json_object_object_add(
                            pt, "freq_mhz",
                            json_object_new_uint64(p->power.points[i].freq_khz / 1000));
                        json_object_object_add(pt, "core_w",
                                               jsonfmt_double(p->power.points[i].core_w));
                        json_object_object_add(pt, "idle_w",
                                               jsonfmt_double(p->power.points[i].idle_w));
                        json_object_array_add(list, pt);
                }
                json_object_object_add(power, "points", list);
        }
        json_object_object_add(pf, "power", power);
        json_object_object_add(pf, "max_p_error", jsonfmt_double(p->max_p_error));
        json_object_object_add(pf, "max_speedup_error_pct",
                               jsonfmt_double(p->max_speedup_error_pct));
        json_object_object_add(j, "platform", pf);
        return j;
}

/* The gnuplot terminal this gnuplot has: pngcairo, else png. */
static const char *plot_terminal(void)
{
        FILE *f = popen("gnuplot -e 'set terminal' 2>&1", "r");
        char line[256];
        const char *term = NULL;

        if (!f)
                return NULL;
        while (fgets(line, sizeof(line), f)) {
                if (strstr(line, "pngcairo"))
                        term = "pngcairo";
                else if (!term && strstr(line, " png "))
                        term = "png";
        }
        pclose(f);
        return term;
}

int calibrate_plot(const char *dir, const struct calibrate_result *res, char *msg, size_t msg_size)
{
        char path[4096], cmd[4200];
        const char *term;
        FILE *f;
        int st;

        if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
                snprintf(msg, msg_size, "gnuplot is not installed: no plots");
                return -ENOENT;
        }
        term = plot_terminal();
        if (!term) {
                snprintf(msg, msg_size, "gnuplot has no png terminal: no plots");
                return -ENOENT;
        }
        snprintf(path, sizeof(path), "%s/plots.gp", dir);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        /* Columns of validation.csv: 1 p, 2 cores, 3 freq_mhz, 8 speedup_measured,
         * 9 speedup_predicted, 15 energy_j, 16 edp_js. */
        fprintf(f,
                "set datafile separator ','\nset key autotitle columnhead\n"
                "set terminal %s size 900,600\nset grid\n",
                term);
        fprintf(f,
                "set output '%s/speedup.png'\nset title 'speedup vs cores per programmed P'\n"
                "set xlabel 'cores N'\nset ylabel 'speedup (CPU time)'\nplot ",
                dir);
        for (unsigned i = 0; i < res->n_prows; i++)
                fprintf(f,
                        "%s'%s/validation.csv' using ($1==%.4g && $3==%u ? $2 : 1/0):8 "
                        "with linespoints title 'P=%.2g'",
                        i ? ", " : "", dir, res->prows[i].p,
                        res->n_freqs ? res->freqs_khz[res->n_freqs - 1] / 1000 : 0,
                        res->prows[i].p);
        fputc('\n', f);
        if (res->energy_measured) {
                const char *what[2][2] = {{"energy", "15"}, {"edp", "16"}};

                for (unsigned w = 0; w < 2; w++) {
                        for (unsigned i = 0; i < res->n_prows; i++) {
                                fprintf(f,
                                        "set output '%s/%s_p%.2f.png'\nset title '%s vs (N, "
                                        "frequency), P=%.2f'\nset xlabel 'cores N'\nset ylabel "
                                        "'%s'\nplot ",
                                        dir, what[w][0], res->prows[i].p, what[w][0],
                                        res->prows[i].p, w ? "EDP (J s)" : "energy (J)");
                                for (unsigned k = 0; k < res->n_freqs; k++)
                                        fprintf(f,
                                                "%s'%s/validation.csv' using ($1==%.4g && $3==%u "
                                                "? $2 : 1/0):%s with linespoints title '%u MHz'",
                                                k ? ", " : "", dir, res->prows[i].p,
                                                res->freqs_khz[k] / 1000, what[w][1],
                                                res->freqs_khz[k] / 1000);
                                fputc('\n', f);
                        }
                }
        }
        if (fclose(f) != 0)
                return -errno;
        snprintf(cmd, sizeof(cmd), "gnuplot '%s' >/dev/null 2>&1", path);
        st = system(cmd);
        if (st != 0) {
                snprintf(msg, msg_size, "gnuplot failed on %s", path);
                return -EIO;
        }
        snprintf(msg, msg_size, "plots: %s/speedup.png%s", dir,
                 res->energy_measured ? " and energy_/edp_P.png per P" : "");
        return 0;
}
