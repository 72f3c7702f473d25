#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl/sim.h"

#define STEP_100MS (100 * 1000 * 1000ULL)
#define RAPL_UNIT_J (1.0 / 16384)

/* The generic sensor_sample_alloc belongs to the sensors module; the tests size their own. */
static void sample_init(struct sensor_sample *s, unsigned n_cpus, unsigned n_targets)
{
        *s = (struct sensor_sample){.n_cpus = n_cpus, .n_targets = n_targets};
        s->cpu = calloc(n_cpus, sizeof(*s->cpu));
        s->target_cpu = n_targets ? calloc((size_t)n_cpus * n_targets, sizeof(*s->cpu)) : NULL;
        assert_non_null(s->cpu);
}

static void sample_fini(struct sensor_sample *s)
{
        free(s->cpu);
        free(s->target_cpu);
}

static void open_sensor(struct sensor *s, struct sim_machine *m)
{
        struct sensor_config cfg = {.machine = m};

        *s = (struct sensor){.ops = &sim_sensor_ops};
        assert_int_equal(sim_sensor_ops.open(s, &cfg), 0);
}

/* T(N, f) = T(1)·((1-P)+P/N)·f_max/f when mem_fraction = 0 and noise = 0. */
static void closed_form_time(void **state)
{
        static const double ps[] = {0.1, 0.5, 0.9};
        static const unsigned freqs[] = {1200, 2400, 3700};
        struct sim_machine *m = sim_load_ok("[machine]\npreset = i7-4820k\n"
                                            "[app a]\ninstructions = 3.7e9\np = 0.1\nipc = 1\n"
                                            "[app b]\ninstructions = 3.7e9\np = 0.5\nipc = 1\n"
                                            "[app c]\ninstructions = 3.7e9\np = 0.9\nipc = 1\n");

        for (unsigned a = 0; a < 3; a++)
                for (unsigned n = 1; n <= 4; n++)
                        for (unsigned fi = 0; fi < 3; fi++) {
                                struct sim_result r;
                                double t1_s = 3.7e9 / (1 * 3.7e9); /* I0 / (IPC·f_max) */
                                double want = t1_s * ((1 - ps[a]) + ps[a] / n) * 3700.0 / freqs[fi];

                                assert_int_equal(sim_run_alone(m, a, n, freqs[fi], STEP_100MS, &r),
                                                 0);
                                assert_near(r.time_s, want, want * 0.005);
                                assert_near(r.p_true, ps[a], 1e-9);
                        }
        sim_free(m);
}

/* Runs m to completion reading the sensor every step; returns the sensor's energy and sets
 * *truth_j to the sum over the steps of the truth package power times the step. */
static double run_reading(struct sim_machine *m, uint64_t step_ns, double *truth_j,
                          struct sensor_sample *sum)
{
        struct sim_machine_info info;
        struct sensor s;
        struct sensor_sample smp;
        double energy_j = 0;

        sim_machine_info(m, &info);
        open_sensor(&s, m);
        sample_init(&smp, s.n_cpus, 0);
        *truth_j = 0;
        while (!sim_done(m)) {
                assert_int_equal(sim_step(m, step_ns), 0);
                assert_int_equal(sim_sensor_ops.read(&s, &smp), 0);
                assert_int_equal(smp.interval_ns, step_ns);
                assert_int_equal(smp.timestamp_ns, sim_now_ns(m));
                for (unsigned k = 0; k < smp.n_packages; k++) {
                        energy_j += smp.energy_j[k];
                        *truth_j += sim_truth_package_power(m, k) * step_ns / 1e9;
                }
                for (unsigned c = 0; sum && c < smp.n_cpus; c++) {
                        sum->cpu[c].instr += smp.cpu[c].instr;
                        sum->cpu[c].cycles += smp.cpu[c].cycles;
                        sum->cpu[c].busy_ns += smp.cpu[c].busy_ns;
                }
        }
        sample_fini(&smp);
        sim_sensor_ops.close(&s);
        return energy_j;
}

/* Energy = ∫ power dt: the RAPL-derived energy equals the truth within the counter unit. */
static void energy_is_integral_of_power(void **state)
{
        struct sim_machine *m =
            sim_load_ok("[machine]\npreset = xeon-e5-2630v2x2\n"
                        "[app a]\ninstructions = 2e10\np = 0.8\nmem_fraction = 0.3\n"
                        "[app b]\nstart_s = 1.25\ninstructions = 1e10\np = 0.3\n");
        double truth_j, energy_j;

        energy_j = run_reading(m, 50 * 1000 * 1000ULL, &truth_j, NULL);
        assert_true(energy_j > 100);
        /* RAPL truncates to its unit once per package over the whole run. */
        assert_near(energy_j, truth_j, 2 * RAPL_UNIT_J + truth_j * 1e-12);
        assert_near(truth_j, sim_truth_energy_j(m), truth_j * 1e-12);
        /* What the apps caused plus what nobody did adds up to the package energy. */
        struct sim_app_truth a, b;
        assert_int_equal(sim_truth_app(m, 0, &a), 0);
        assert_int_equal(sim_truth_app(m, 1, &b), 0);
        assert_true(a.energy_j + b.energy_j <= truth_j * (1 + 1e-12));
        assert_true(a.energy_j + b.energy_j > 0.9 * truth_j);
        sim_free(m);
}

/* I = I0 + ΔI: the instructions the counters show are the app's plus os_ips per busy second. */
static void counters_i_is_i0_plus_delta_i(void **state)
{
        struct sim_machine *m = sim_load_ok("[machine]\npreset = i7-4820k\nos_ips = 5e6\n"
                                            "os_ips_cpu = 0\n"
                                            "[app a]\ninstructions = 7.4e9\np = 0.6\nspin = 0.5\n");
        struct sensor_sample sum;
        double truth_j, instr = 0, busy_s = 0, cmax = 0;
        struct sim_app_truth t;

        sample_init(&sum, 4, 0);
        run_reading(m, STEP_100MS, &truth_j, &sum);
        for (unsigned c = 0; c < 4; c++) {
                instr += sum.cpu[c].instr;
                busy_s += sum.cpu[c].busy_ns / 1e9;
                /* Unhalted cycles are busy time at the frequency (3.7 GHz). */
                assert_near(sum.cpu[c].cycles, sum.cpu[c].busy_ns * 3.7,
                            1e-6 * sum.cpu[c].cycles + 100);
                cmax = fmax(cmax, sum.cpu[c].cycles);
        }
        assert_int_equal(sim_truth_app(m, 0, &t), 0);
        assert_true(t.finished);
        assert_near(instr, 7.4e9 + 5e6 * busy_s, 100); /* eq. 5, counters rounded per read */
        /* eq. 7 with C_max: the app's IPC over the run is I0 / C_max = T(1)/T(N) (speedup). */
        double sp = 1 / ((1 - 0.6) + 0.6 / 4);
        assert_near(7.4e9 / cmax, sp, sp * 1e-6);
        /* Spinning makes Σbusy/max exceed the speedup. */
        assert_true(busy_s / (cmax / 3.7e9) > sp * 1.05);
        sample_fini(&sum);
        sim_free(m);
}

/* Per-target counts: the app's own counters; the system's ΔI (per busy second and per CPU
 * second) is on the CPUs' counts only. */
static void target_counts_follow_the_app(void **state)
{
        struct sim_machine *m =
            sim_load_ok("[machine]\npreset = i7-4820k\n"
                        "[app a]\ninstructions = 3.7e9\np = 0.9\n"
                        "[app b]\ninstructions = 3.7e9\np = 0.9\nstart_s = 100\n");
        struct sensor s;
        struct sensor_sample smp;
        struct sensor_target t = {.kind = SENSOR_TARGET_PID, .pid = SIM_PID_BASE};
        struct sim_proc procs[4];

        assert_int_equal(sim_list_procs(m, procs, 4), 2);
        assert_int_equal(procs[1].pid, SIM_PID_BASE + 1);
        assert_string_equal(procs[0].comm, "a");
        assert_int_equal(procs[0].state, SIM_PROC_PENDING);
        open_sensor(&s, m);
        assert_int_equal(sim_sensor_ops.set_targets(&s, &t, 1), 0);
        sample_init(&smp, 4, 1);
        assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(sim_sensor_ops.read(&s, &smp), 0);
        for (unsigned c = 0; c < 4; c++) {
                assert_true(smp.cpu[c].busy_ns > 0);
                assert_near((double)smp.cpu[c].instr - (double)sensor_target_cpu(&smp, 0, c)->instr,
                            7.4e7 * smp.cpu[c].busy_ns * 1e-9 + 1.85e7 * 0.1, 2);
        }
        sim_list_procs(m, procs, 4);
        assert_int_equal(procs[0].state, SIM_PROC_RUNNING);
        assert_int_equal(procs[1].state, SIM_PROC_PENDING);
        t.pid = 99;
        assert_int_equal(sim_sensor_ops.set_targets(&s, &t, 1), -ESRCH);
        sample_fini(&smp);
        sim_sensor_ops.close(&s);
        sim_free(m);
}

static void read_noisy(uint64_t seed, uint64_t *out, unsigned n)
{
        char text[256];
        struct sim_machine *m;
        struct sensor s;
        struct sensor_sample smp;

        snprintf(text, sizeof(text),
                 "[machine]\npreset = i7-4820k\ncounter_noise = 0.02\nseed = %llu\n"
                 "[app a]\ninstructions = 3.7e10\np = 0.7\n",
                 (unsigned long long)seed);
        m = sim_load_ok(text);
        open_sensor(&s, m);
        sample_init(&smp, 4, 0);
        for (unsigned i = 0; i < n / 4; i++) {
                assert_int_equal(sim_step(m, STEP_100MS), 0);
                assert_int_equal(sim_sensor_ops.read(&s, &smp), 0);
                for (unsigned c = 0; c < 4; c++)
                        out[i * 4 + c] = smp.cpu[c].instr;
        }
        sample_fini(&smp);
        sim_sensor_ops.close(&s);
        sim_free(m);
}

static void same_seed_same_output(void **state)
{
        uint64_t a[40], b[40], c[40];

        read_noisy(7, a, 40);
        read_noisy(7, b, 40);
        read_noisy(8, c, 40);
        assert_memory_equal(a, b, sizeof(a));
        assert_memory_not_equal(a, c, sizeof(a));
        /* Noise is relative and centred: every count within 10 sigma of the noiseless one. */
        for (unsigned i = 0; i < 40; i++)
                assert_true(fabs((double)a[i] - (double)c[i]) < 0.2 * (double)a[i]);
}

/* The 32-bit RAPL counter wraps every 2^32 / 16384 J = 262144 J; the sensor still sums right. */
static void rapl_counter_wraps(void **state)
{
        struct sim_machine *m = sim_load_ok("[machine]\npreset = i7-4820k\nuncore_w = 2000\n"
                                            "[app a]\ninstructions = 4e12\np = 0.5\n");
        double truth_j, energy_j;

        energy_j = run_reading(m, 10ULL * 1000 * 1000 * 1000, &truth_j, NULL);
        assert_true(truth_j > 3 * 262144.0); /* at least two wraps, wherever it started */
        assert_near(energy_j, truth_j, 2 * RAPL_UNIT_J + truth_j * 1e-12);
        sim_free(m);
}

static const char i7_p09[] = "[machine]\npreset = i7-4820k\n"
                             "[app p09]\ninstructions = 3.7e10\np = 0.9\n"
                             "[app p01]\ninstructions = 3.7e10\np = 0.1\n";

/* The reference paper's finding: at P = 0.9 all 4 cores at the top frequency are EDP-best. */
static void i7_p09_edp_best_is_all_cores_top_freq(void **state)
{
        struct sim_machine *m = sim_load_ok(i7_p09);
        struct sim_result best, *all;
        unsigned n_all;

        assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_EDP, STEP_100MS, &best, &all, &n_all), 0);
        assert_int_equal(n_all, 4 * 9);
        assert_int_equal(best.cores, 4);
        assert_int_equal(best.freq_mhz, 3700);
        free(all);
        sim_free(m);
}

/* At P = 0.1, going from 1 to 4 cores improves EDP far less than at P = 0.9. */
static void i7_p01_gains_far_less_than_p09(void **state)
{
        struct sim_machine *m = sim_load_ok(i7_p09);
        struct sim_result r1, r4;
        double gain[2];

        for (unsigned a = 0; a < 2; a++) {
                assert_int_equal(sim_run_alone(m, a, 1, 3700, STEP_100MS, &r1), 0);
                assert_int_equal(sim_run_alone(m, a, 4, 3700, STEP_100MS, &r4), 0);
                gain[a] =
                    sim_objective_score(SIM_OBJ_EDP, &r1) / sim_objective_score(SIM_OBJ_EDP, &r4);
        }
        assert_true(gain[0] > 3.0); /* P = 0.9 */
        assert_true(gain[1] < 1.2); /* P = 0.1 */
        assert_true(gain[0] > 3 * gain[1]);
        sim_free(m);
}

/* A made-up grid of measured rows whose E·T optimum is interior: (2 cores, 2400 MHz). */
static const char grid[] = "[machine]\npreset = i7-4820k\n"
                           "[app rows]\ninstructions = 1e10\n"
                           "measured = 1 1200 20 900\n"
                           "measured = 1 2400 12 660\n"
                           "measured = 1 3700 9 630\n"
                           "measured = 2 1200 12 600\n"
                           "measured = 2 2400 6 390\n"
                           "measured = 2 3700 5.5 495\n"
                           "measured = 4 1200 9 540\n"
                           "measured = 4 2400 5.2 520\n"
                           "measured = 4 3700 4.5 585\n";

static void measured_grid_oracle_finds_interior_row(void **state)
{
        struct sim_machine *m = sim_load_ok(grid);
        struct sim_result best, *all;
        unsigned n_all;

        assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_EDP, STEP_100MS, &best, &all, &n_all), 0);
        assert_int_equal(n_all, 9);
        assert_int_equal(best.cores, 2);
        assert_int_equal(best.freq_mhz, 2400);
        assert_near(best.time_s, 6, 6e-6);
        assert_near(best.energy_j, 390, 390e-6);
        /* Every grid point reproduces its row. */
        assert_near(all[8].time_s, 4.5, 4.5e-6);
        assert_near(all[8].energy_j, 585, 585e-6);
        free(all);
        /* By time alone the fastest row wins. */
        assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_PERF, STEP_100MS, &best, NULL, NULL), 0);
        assert_int_equal(best.cores, 4);
        assert_int_equal(best.freq_mhz, 3700);
        sim_free(m);
}

static void bad_scenarios_name_file_and_line(void **state)
{
        sim_expect_bad("[machine]\npreset = i7-4820k\nturbo = on\n", 3, "unknown key 'turbo'");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\np = 0.x\n", 5,
                       "'0.x' is not a number");
        sim_expect_bad("[machine]\npreset = i7-9999\n", 2, "unknown machine 'i7-9999'");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\n"
                       "measured = 1 3700 10\n",
                       5, "3 fields");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\n"
                       "measured = 1 3700 10 100\nmeasured = 1 3700 11 100\n",
                       6, "already given on line 5");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\np = 1.5\n", 5,
                       "outside");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[gpu]\nx = 1\n", 4, "unknown section");
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\ninstructions = 1e9\n"
                       "measured = 1 3700 10 100\nmeasured = 2 2400 6 100\n",
                       6, "not a grid");
}

static void every_bad_line_is_reported(void **state)
{
        struct sim_machine *m = NULL;
        struct sim_error err;

        assert_int_equal(sim_load_string("[machine]\npreset = i7-4820k\nfoo = 1\nseed = x\n"
                                         "[app a]\ninstructions = 1e9\np = 0.5\nbar = 2\n",
                                         "bad.ini", &m, &err),
                         -EINVAL);
        assert_int_equal(err.n_errors, 3);
        assert_non_null(strstr(err.all, "bad.ini:3: unknown key 'foo'"));
        assert_non_null(strstr(err.all, "bad.ini:4: seed"));
        assert_non_null(strstr(err.all, "bad.ini:8: unknown key 'bar'"));
        assert_int_equal(sim_load("/nonexistent/scenario.ini", &m, &err), -ENOENT);
        assert_null(m);
}

/* Every (cores, frequency) the oracle tries for app 0, as time and energy. */
static void oracle_grid(struct sim_machine *m, struct sim_result **all, unsigned *n_all)
{
        struct sim_result best;

        assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_EDP, STEP_100MS, &best, all, n_all), 0);
}

static void expect_same_grid(const char *a_text, const char *b_text, bool same)
{
        struct sim_machine *a = sim_load_ok(a_text), *b = sim_load_ok(b_text);
        struct sim_result *ra, *rb;
        unsigned na, nb;
        bool equal = true;

        oracle_grid(a, &ra, &na);
        oracle_grid(b, &rb, &nb);
        assert_int_equal(na, nb);
        for (unsigned i = 0; i < na; i++) {
                assert_int_equal(ra[i].freq_mhz, rb[i].freq_mhz);
                equal = equal && fabs(ra[i].energy_j - rb[i].energy_j) <= 1e-9 * rb[i].energy_j &&
                        fabs(ra[i].time_s - rb[i].time_s) <= 1e-9 * rb[i].time_s;
        }
        assert_true(equal == same);
        free(ra);
        free(rb);
        sim_free(a);
        sim_free(b);
}

#define I7_APP "[app a]\ninstructions = 1e10\np = 0.8\n"

/* freqs_mhz without volts: the voltages of the preset's V/f curve (i7-4820k: 0.80 V at
 * 1200 MHz ... 1.15 V at 3300, 1.20 V at 3700), linear between its points and along its end
 * segments beyond them; volts still overrides. */
static void freqs_without_volts_follow_the_preset_curve(void **state)
{
        struct sim_machine *m = NULL;
        struct sim_error err;

        expect_same_grid("[machine]\npreset = i7-4820k\nfreqs_mhz = 1000 1350 2400 3900\n" I7_APP,
                         "[machine]\npreset = i7-4820k\nfreqs_mhz = 1000 1350 2400 3900\n"
                         "volts = 0.7666666666666667 0.825 1.0 1.225\n" I7_APP,
                         true);
        /* The preset's own points keep their voltages. */
        expect_same_grid("[machine]\npreset = i7-4820k\nfreqs_mhz = 1200 3700\n" I7_APP,
                         "[machine]\npreset = i7-4820k\nfreqs_mhz = 1200 3700\n"
                         "volts = 0.80 1.20\n" I7_APP,
                         true);
        /* A flat curve given by volts is not the preset's. */
        expect_same_grid("[machine]\npreset = i7-4820k\nfreqs_mhz = 1200 3700\n" I7_APP,
                         "[machine]\npreset = i7-4820k\nfreqs_mhz = 1200 3700\n"
                         "volts = 1 1\n" I7_APP,
                         false);
        /* Without a preset there is no curve: volts stays required. */
        assert_int_equal(sim_load_string("[machine]\nsockets = 1\ncores_per_socket = 2\n"
                                         "freqs_mhz = 1000 2000\nuncore_w = 1\ncore_idle_w = 1\n"
                                         "core_static_w = 1\ncore_dyn_w = 1\n",
                                         "bad.ini", &m, &err),
                         -EINVAL);
        assert_non_null(strstr(err.all, "bad.ini: [machine]: volts is required without a preset"));
        /* A count of volts that does not match is still refused. */
        sim_expect_bad("[machine]\npreset = i7-4820k\nfreqs_mhz = 1200 3700\nvolts = 1\n", 4,
                       "1 volts for 2 freqs_mhz");
}

/* Measured rows define time and energy: without instructions the app retires one per cycle
 * of its fewest-cores row at the top frequency (here 9 s at 3700 MHz), and the rows'
 * figures do not move. An Amdahl app still needs instructions. */
static void measured_rows_default_their_instructions(void **state)
{
        const char *rows = strstr(grid, "measured = 1 1200");
        char text[1024];
        struct sim_machine *m;
        struct sim_app_truth t;

        snprintf(text, sizeof(text), "[machine]\npreset = i7-4820k\n[app rows]\n%s", rows);
        m = sim_load_ok(text);
        assert_int_equal(sim_truth_app(m, 0, &t), 0);
        assert_near(t.instructions_total, 9 * 3700e6, 1);
        sim_free(m);
        expect_same_grid(text, grid, true);
        sim_expect_bad("[machine]\npreset = i7-4820k\n[app a]\np = 0.5\n", 4,
                       "instructions is required");
}

/* Runs the first app of m with its cpuset and package frequency set through the actuator. */
static double run_actuated(struct sim_machine *m, unsigned cores, unsigned freq_mhz,
                           double *power_w)
{
        struct actuator a = {.ops = &sim_actuator_ops};
        struct actuator_config cfg = {.machine = m, .dvfs = true};
        struct actuator_app *app;
        struct cpumask set, got;
        struct sim_app_truth t;
        struct sensor s;
        struct sensor_sample smp;
        double energy_j = 0;

        assert_int_equal(sim_actuator_ops.open(&a, &cfg), 0);
        assert_int_equal(a.n_domains, 1);
        assert_int_equal(a.domains[0].max_khz, 3700000);
        assert_int_equal(sim_actuator_ops.adopt(&a, SIM_PID_BASE, "a", &app), 0);
        cpumask_zero(&set);
        for (unsigned c = 0; c < cores; c++)
                cpumask_set(&set, c);
        assert_int_equal(sim_actuator_ops.set_cpus(&a, app, &set), 0);
        assert_int_equal(sim_actuator_ops.get_cpus(&a, app, &got), 0);
        assert_true(cpumask_equal(&set, &got));
        assert_int_equal(sim_actuator_ops.set_freq(&a, 0, freq_mhz * 1000), 0);
        assert_int_equal(sim_actuator_ops.set_freq(&a, 0, 1234000), -EINVAL);
        open_sensor(&s, m);
        sample_init(&smp, s.n_cpus, 0);
        while (!sim_done(m)) {
                assert_int_equal(sim_step(m, STEP_100MS), 0);
                assert_int_equal(sim_sensor_ops.read(&s, &smp), 0);
                energy_j += smp.energy_j[0];
        }
        assert_int_equal(sim_truth_app(m, 0, &t), 0);
        *power_w = energy_j / (sim_now_ns(m) / 1e9);
        sample_fini(&smp);
        sim_sensor_ops.close(&s);
        sim_actuator_ops.close(&a);
        /* close() gives the frequency back. */
        assert_int_equal(sim_actuator_ops.open(&a, &cfg), 0);
        assert_int_equal(a.domains[0].cur_khz, 3700000);
        sim_actuator_ops.close(&a);
        return t.time_s;
}

/* Memory bandwidth: a server-64 package gives 204.8 GB/s. An app that retires 3 GIPS per
 * core (ipc 1 at 3 GHz) and moves 8 bytes per instruction asks 24 GB/s a core alone, so past
 * ~8.5 cores of one package its speedup stops growing while its cores stay busy (stalled):
 * IPC falls and the energy of the extra cores is wasted. One socket, so that a second
 * package's bandwidth does not lift the limit. */
static const char bw_bound[] = "[machine]\npreset = server-64\nsockets = 1\n"
                               "[app stream]\ninstructions = 3e11\np = 0.99\nipc = 1\n"
                               "mem_fraction = 0.5\nmem_bytes_per_instruction = 8\n";

static void memory_bandwidth_caps_speedup(void **state)
{
        struct sim_machine *m = sim_load_ok(bw_bound);
        struct sim_result r1, r8, r16, r32;
        double cap;

        assert_int_equal(sim_run_alone(m, 0, 1, 3000, STEP_100MS, &r1), 0);
        assert_int_equal(sim_run_alone(m, 0, 8, 3000, STEP_100MS, &r8), 0);
        assert_int_equal(sim_run_alone(m, 0, 16, 3000, STEP_100MS, &r16), 0);
        assert_int_equal(sim_run_alone(m, 0, 32, 3000, STEP_100MS, &r32), 0);
        /* Below the limit, Amdahl; at and past it, the package's bandwidth: 204.8e9 / 8 B per
         * instruction over 3e9 per core alone. */
        cap = 204.8e9 / 8 / 3e9;
        assert_near(r1.time_s / r8.time_s, 1 / (0.01 + 0.99 / 8), 0.01 * r1.time_s / r8.time_s);
        assert_near(r1.time_s / r16.time_s, cap, 0.01 * cap);
        assert_near(r1.time_s / r32.time_s, cap, 0.01 * cap);
        /* The extra cores burn energy for nothing: past the limit EDP grows, and the best
         * static setting is inside the machine, near the limit. */
        assert_true(sim_objective_score(SIM_OBJ_EDP, &r32) >
                    sim_objective_score(SIM_OBJ_EDP, &r16));
        struct sim_result best;
        assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_EDP, STEP_100MS, &best, NULL, NULL), 0);
        if (best.cores < 8 || best.cores > 16)
                fail_msg("EDP-best at %u cores %u MHz, not near the bandwidth limit", best.cores,
                         best.freq_mhz);
        sim_free(m);

        /* The ground truth says the same. */
        struct actuator a = {.ops = &sim_actuator_ops};
        struct actuator_config cfg = {.dvfs = true};
        struct actuator_app *app;
        struct cpumask set;
        struct sim_app_truth t;

        m = sim_load_ok(bw_bound);
        cfg.machine = m;
        assert_int_equal(sim_actuator_ops.open(&a, &cfg), 0);
        assert_int_equal(sim_actuator_ops.adopt(&a, SIM_PID_BASE, "stream", &app), 0);
        cpumask_zero(&set);
        for (unsigned c = 0; c < 16; c++)
                cpumask_set(&set, c);
        assert_int_equal(sim_actuator_ops.set_cpus(&a, app, &set), 0);
        assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(sim_truth_app(m, 0, &t), 0);
        assert_near(t.speedup_true, cap, 0.01 * cap);
        sim_actuator_ops.close(&a);
        sim_free(m);

        /* Without traffic, or without a bandwidth figure, Amdahl as before. */
        m = sim_load_ok("[machine]\npreset = server-64\nsockets = 1\nmem_bandwidth_gbs = 0\n"
                        "[app stream]\ninstructions = 3e11\np = 0.99\nipc = 1\n"
                        "mem_fraction = 0.5\nmem_bytes_per_instruction = 8\n");
        assert_int_equal(sim_run_alone(m, 0, 16, 3000, STEP_100MS, &r16), 0);
        assert_near(r1.time_s / r16.time_s, 1 / (0.01 + 0.99 / 16), 0.01 / (0.01 + 0.99 / 16));
        sim_free(m);
}

static void set_cpus_slows_as_predicted(void **state)
{
        static const char text[] = "[machine]\npreset = i7-4820k\n"
                                   "[app a]\ninstructions = 3.7e10\np = 0.9\n";
        struct sim_machine *m = sim_load_ok(text);
        double power2_w, power4_w, t_s;

        t_s = run_actuated(m, 2, 3700, &power2_w);
        assert_near(t_s, 10 * (0.1 + 0.9 / 2), 10 * (0.1 + 0.9 / 2) * 0.005);
        sim_free(m);
        m = sim_load_ok(text);
        t_s = run_actuated(m, 4, 3700, &power4_w);
        assert_near(t_s, 10 * (0.1 + 0.9 / 4), 10 * (0.1 + 0.9 / 4) * 0.005);
        assert_true(power4_w > power2_w);
        sim_free(m);

        /* A change mid-run applies from the next step: 0.5 s on 4 cores, the rest on 1. */
        struct actuator a = {.ops = &sim_actuator_ops};
        struct actuator_config cfg = {.dvfs = true};
        struct actuator_app *app;
        struct cpumask one;
        struct sim_app_truth t;

        m = sim_load_ok(text);
        cfg.machine = m;
        assert_int_equal(sim_actuator_ops.open(&a, &cfg), 0);
        assert_int_equal(sim_actuator_ops.adopt(&a, SIM_PID_BASE, "a", &app), 0);
        for (int i = 0; i < 5; i++)
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        cpumask_zero(&one);
        cpumask_set(&one, 3);
        assert_int_equal(sim_actuator_ops.set_cpus(&a, app, &one), 0);
        while (!sim_done(m))
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        assert_int_equal(sim_truth_app(m, 0, &t), 0);
        double done_frac = 0.5 / (10 * (0.1 + 0.9 / 4));
        assert_near(t.time_s, 0.5 + (1 - done_frac) * 10, 0.005 * t.time_s);
        /* Adopting a finished app fails like a vanished process. */
        assert_int_equal(sim_actuator_ops.adopt(&a, SIM_PID_BASE + 7, "x", &app), -ESRCH);
        sim_actuator_ops.close(&a);
        sim_free(m);
}

static void set_freq_lowers_power_and_stretches_time(void **state)
{
        static const double mems[] = {0.0, 0.5};

        for (unsigned i = 0; i < 2; i++) {
                char text[256];
                struct sim_machine *m;
                double hi_w, lo_w, t_hi, t_lo;

                snprintf(text, sizeof(text),
                         "[machine]\npreset = i7-4820k\n"
                         "[app a]\ninstructions = 3.7e10\np = 0.9\nmem_fraction = %g\n",
                         mems[i]);
                m = sim_load_ok(text);
                t_hi = run_actuated(m, 4, 3700, &hi_w);
                sim_free(m);
                m = sim_load_ok(text);
                t_lo = run_actuated(m, 4, 1800, &lo_w);
                sim_free(m);
                /* Only the compute share stretches with 1/f. */
                double want = (1 - mems[i]) * 3700.0 / 1800 + mems[i];
                assert_near(t_lo / t_hi, want, want * 0.005);
                assert_true(lo_w < 0.8 * hi_w);
        }
}

/* The scenario files the docs show load and give what the docs say. */
static void scenario_files_give_documented_results(void **state)
{
        static const struct {
                const char *file;
                unsigned cores, freq_mhz;
        } files[] = {
            {"i7-p09.ini", 4, 3700},
            {"i7-p01.ini", 2, 3700},
            {"measured-grid.ini", 2, 2400},
        };
        char dir[4096], path[4200];
        struct sim_machine *m;
        struct sim_error err;
        struct sim_result best;

        /* This file is tests/unit/test_sim.c; the scenarios are in tests/scenarios. */
        snprintf(dir, sizeof(dir), "%s", __FILE__);
        *strrchr(dir, '/') = '\0';
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                snprintf(path, sizeof(path), "%s/../scenarios/%s", dir, files[i].file);
                if (sim_load(path, &m, &err) < 0)
                        fail_msg("%s: %s", path, err.all);
                assert_int_equal(sim_oracle_app(m, 0, SIM_OBJ_EDP, STEP_100MS, &best, NULL, NULL),
                                 0);
                assert_int_equal(best.cores, files[i].cores);
                assert_int_equal(best.freq_mhz, files[i].freq_mhz);
                sim_free(m);
        }
        snprintf(path, sizeof(path), "%s/../scenarios/server-mix.ini", dir);
        if (sim_load(path, &m, &err) < 0)
                fail_msg("%s: %s", path, err.all);
        while (!sim_done(m))
                assert_int_equal(sim_step(m, STEP_100MS), 0);
        sim_free(m);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(scenario_files_give_documented_results),
    cmocka_unit_test(closed_form_time),
    cmocka_unit_test(energy_is_integral_of_power),
    cmocka_unit_test(counters_i_is_i0_plus_delta_i),
    cmocka_unit_test(target_counts_follow_the_app),
    cmocka_unit_test(same_seed_same_output),
    cmocka_unit_test(rapl_counter_wraps),
    cmocka_unit_test(i7_p09_edp_best_is_all_cores_top_freq),
    cmocka_unit_test(i7_p01_gains_far_less_than_p09),
    cmocka_unit_test(measured_grid_oracle_finds_interior_row),
    cmocka_unit_test(bad_scenarios_name_file_and_line),
    cmocka_unit_test(every_bad_line_is_reported),
    cmocka_unit_test(freqs_without_volts_follow_the_preset_curve),
    cmocka_unit_test(measured_rows_default_their_instructions),
    cmocka_unit_test(set_cpus_slows_as_predicted),
    cmocka_unit_test(memory_bandwidth_caps_speedup),
    cmocka_unit_test(set_freq_lowers_power_and_stretches_time),
};

PCTL_TEST_MAIN(tests)
