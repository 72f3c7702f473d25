/* manager_report on the model machine: an app's report while it runs and after it has
 * finished and left (the case `pctl run` asks about), with the whole run's P of an Amdahl app
 * whose P is the same throughout, start-up included. */
#include "pctl_test.h"
#include "pctl_test_scenario.h"
#include "pctl_test_sim.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>

#include "pctl/metrics.h"

#define SCENARIO                                                                                   \
        "[machine]\npreset = i7-4820k\n\n"                                                         \
        "[app p08]\ninstructions = 1.5e10\np = 0.8\nipc = 1\n"

static double num(struct json_object *j, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(j, key, &v) || !v)
                return NAN;
        return json_object_get_double(v);
}

static const char *str(struct json_object *j, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(j, key, &v) || !v)
                return NULL;
        return json_object_get_string(v);
}

/* The summary pctld gives systemd (STATUS=) counts as a person reads: one app is "1 app". */
static void summary_says_one_app_in_the_singular(void **state)
{
        struct sim_manager f;
        char text[256];

        (void)state;
        sim_manager_open(&f, SCENARIO, "monitor", 1);
        assert_int_equal(manager_n_apps(f.m), 1);
        manager_summary(f.m, text, sizeof(text));
        if (strncmp(text, "1 app managed, ", 15) != 0)
                fail_msg("summary of one app: '%s'", text);
        sim_manager_close(&f);
}

static void report_of_a_finished_app(void **state)
{
        char err[256];
        struct sim_manager f;
        struct manager *m;
        struct json_object *j, *configs;
        const pid_t pid = SIM_PID_BASE;
        unsigned step;

        sim_manager_open(&f, SCENARIO, "monitor", 1);
        m = f.m;

        j = json_object_new_object();
        assert_int_equal(manager_report(m, pid + 1, NULL, j, err, sizeof(err)), -ENOENT);
        assert_int_equal(manager_report(m, pid, NULL, j, err, sizeof(err)), 0);
        assert_string_equal(str(j, "state"), "managed");
        assert_true(isnan(num(j, "p_run")));
        json_object_put(j);

        for (step = 0; step < 600 && manager_n_apps(m); step++)
                sim_manager_tick(&f, step);
        assert_int_equal(manager_n_apps(m), 0);

        j = json_object_new_object();
        assert_int_equal(manager_report(m, pid, NULL, j, err, sizeof(err)), 0);
        assert_string_equal(str(j, "state"), "left");
        assert_string_equal(str(j, "left_because"), "it exited");
        /* The same P throughout, start-up included: the run's P is the app's. */
        assert_near(num(j, "p_run"), 0.8, 0.02);
        assert_true(num(j, "p_run_confidence") >= 0);
        assert_true(num(j, "seen_s") > 0 && num(j, "seen_s") <= num(j, "managed_s") + 0.1);
        assert_true(json_object_object_get_ex(j, "configs", &configs));
        assert_true(json_object_array_length(configs) >= 1);
        /* Monitor never moves it: the run is its own default. */
        assert_near(num(j, "gain_pct"), 0, 0);
        json_object_put(j);

        /* The model machine gives counters: a parent's CPU time does not complete that run,
         * and the range stays (pctl run's busy-time case: test_daemon_run_report). */
        {
                const struct manager_run_totals t = {.wall_s = 100, .cpu_s = 150};
                double conf;

                j = json_object_new_object();
                assert_int_equal(manager_report(m, pid, NULL, j, err, sizeof(err)), 0);
                conf = num(j, "p_run_confidence");
                json_object_put(j);
                j = json_object_new_object();
                assert_int_equal(manager_report(m, pid, &t, j, err, sizeof(err)), 0);
                assert_true(isnan(num(j, "completed_s")));
                assert_true(isnan(num(j, "p_run_seen")));
                assert_near(num(j, "p_run"), 0.8, 0.02);
                assert_near(num(j, "p_run_confidence"), conf, 1e-12);
                json_object_put(j);
        }

        sim_manager_close(&f);
}

/* pctl status --json shows where eq. 9's and eq. 5's figures came from, on the model
 * machine's counters: the app's I0 and ΔI with its source, IPC_I0(1)'s source, the fit's
 * residual and core counts, and the power of CPUs no app holds (unknown without a model). */
static void status_shows_the_method_sources(void **state)
{
        struct sim_manager f;
        struct json_object *j, *apps, *app, *v;

        sim_manager_open(&f, SCENARIO, "monitor", 1);
        /* 1.4 s: past the 1 s start-up, before the app ends (about 1.6 s). Samples only: no
         * decision moves it. */
        for (unsigned step = 0; step < 14; step++) {
                platform_advance(f.pf, 100 * NSEC_PER_MSEC);
                manager_sample(f.m);
        }
        j = json_object_new_object();
        manager_status(f.m, j);
        assert_true(json_object_object_get_ex(j, "unattributed_w", &v) && v == NULL);
        assert_true(json_object_object_get_ex(j, "apps", &apps));
        app = json_object_array_get_idx(apps, 0);
        assert_non_null(app);
        assert_true(num(app, "i0") > 0);
        assert_true(num(app, "delta_i") >= 0 && num(app, "delta_i") < num(app, "i0"));
        /* The model machine counts the app's own instructions apart (a target). */
        assert_string_equal(str(app, "delta_i_source"), "target-counters");
        assert_string_equal(str(app, "speedup_source"), "counters");
        /* Never seen on one core, no calibration: the stand-in, said as such. */
        assert_string_equal(str(app, "ipc1_source"), "busiest-core");
        assert_true(num(app, "p_rms_residual") >= 0);
        assert_int_equal((int)num(app, "p_n_cores"), 1);
        json_object_put(j);
        sim_manager_close(&f);
}

/* pctl status --json names the allocator's phase of each app: "new" before its first
 * decision, then the phase the decisions left it in ("monitor" under a monitor policy; never
 * "new" again under edp). */
static void status_shows_the_allocator_phase(void **state)
{
        static const char *const policies[] = {"monitor", "edp"};

        for (unsigned k = 0; k < 2; k++) {
                struct sim_manager f;
                struct json_object *j, *apps;
                const char *phase;

                sim_manager_open(&f, SCENARIO, policies[k], 1);
                j = json_object_new_object();
                manager_status(f.m, j);
                assert_true(json_object_object_get_ex(j, "apps", &apps));
                assert_string_equal(str(json_object_array_get_idx(apps, 0), "allocator_phase"),
                                    "new");
                json_object_put(j);
                for (unsigned step = 0; step < 14; step++)
                        sim_manager_tick(&f, step);
                j = json_object_new_object();
                manager_status(f.m, j);
                assert_true(json_object_object_get_ex(j, "apps", &apps));
                phase = str(json_object_array_get_idx(apps, 0), "allocator_phase");
                assert_non_null(phase);
                if (k == 0)
                        assert_string_equal(phase, "monitor");
                else if (!strcmp(phase, "new") || !strcmp(phase, "monitor"))
                        fail_msg("edp app in phase %s after a decision", phase);
                json_object_put(j);
                sim_manager_close(&f);
        }
}

/* With RAPL measuring (the model machine has it) and a [power] model declared in pctl.conf,
 * the app's energy is the measured package energy split among the apps: "measured", not
 * "declared" (the model only splits it). */
static void measured_energy_is_not_labelled_declared(void **state)
{
        struct sim_manager f;
        struct model_power pm = {.static_w = 20, .declared = true};
        struct json_object *j, *apps, *app;
        char err[256];

        assert_int_equal(model_power_set_point(&pm, 3700000, 10, 1), 0);
        sim_manager_open_power(&f, SCENARIO, "monitor", 1, &pm);
        for (unsigned step = 0; step < 14; step++)
                sim_manager_tick(&f, step);
        j = json_object_new_object();
        assert_int_equal(manager_report(f.m, SIM_PID_BASE, NULL, j, err, sizeof(err)), 0);
        assert_true(num(j, "energy_j") > 0);
        assert_string_equal(str(j, "energy_source"), "measured");
        json_object_put(j);
        j = json_object_new_object();
        manager_status(f.m, j);
        assert_true(json_object_object_get_ex(j, "apps", &apps));
        app = json_object_array_get_idx(apps, 0);
        assert_non_null(app);
        assert_string_equal(str(app, "power_source"), "measured");
        json_object_put(j);
        sim_manager_close(&f);
}

/* The packages of a cpus list on the 2 x 6 Xeon (CPUs 0-5 package 0, 6-11 package 1), as
 * status's "packages" writes them: "[0,1]". Computed here from the list, apart from the
 * daemon's topology. */
static void xeon_packages(const char *cpus, char *buf, size_t size)
{
        struct cpumask m;
        bool on[2] = {false, false};

        assert_int_equal(cpumask_parse(cpus, &m), 0);
        cpumask_foreach (c, &m)
                on[c >= 6] = true;
        snprintf(buf, size, "[%s%s%s]", on[0] ? "0" : "", on[0] && on[1] ? "," : "",
                 on[1] ? "1" : "");
}

/* App k of the status: its cpus, packages (as JSON text), spreading and reason, copied. */
struct app_status {
        char cpus[64], packages[64], spreading[32], reason[512];
};

static void app_status(struct manager *m, unsigned k, struct app_status *out)
{
        struct json_object *j = json_object_new_object(), *apps, *app, *v;

        manager_status(m, j);
        assert_true(json_object_object_get_ex(j, "apps", &apps));
        app = json_object_array_get_idx(apps, k);
        assert_non_null(app);
        snprintf(out->cpus, sizeof(out->cpus), "%s", str(app, "cpus") ? str(app, "cpus") : "");
        assert_true(json_object_object_get_ex(app, "packages", &v));
        snprintf(out->packages, sizeof(out->packages), "%s",
                 v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "null");
        assert_true(json_object_object_get_ex(app, "spreading", &v));
        snprintf(out->spreading, sizeof(out->spreading), "%s", v ? json_object_get_string(v) : "");
        snprintf(out->reason, sizeof(out->reason), "%s",
                 str(app, "reason") ? str(app, "reason") : "");
        json_object_put(j);
}

/* What pctld logs (to stderr here) between log_capture_begin and log_capture_end, which
 * returns it (the caller frees it). */
struct log_capture {
        FILE *f;
        int saved;
};

static void log_capture_begin(struct log_capture *c)
{
        fflush(stderr);
        c->f = tmpfile();
        assert_non_null(c->f);
        c->saved = dup(2);
        assert_true(c->saved >= 0);
        assert_true(dup2(fileno(c->f), 2) >= 0);
}

static char *log_capture_end(struct log_capture *c)
{
        long n;
        char *text;

        fflush(stderr);
        assert_true(dup2(c->saved, 2) >= 0);
        close(c->saved);
        assert_int_equal(fseek(c->f, 0, SEEK_END), 0);
        n = ftell(c->f);
        text = calloc(1, (size_t)n + 1);
        assert_non_null(text);
        rewind(c->f);
        assert_int_equal(fread(text, 1, (size_t)n, c->f), (size_t)n);
        fclose(c->f);
        return text;
}

/* The moves of app a0 in a log, one line each: "a0 (pid 100000): CPUs LIST (N), REASON". Calls
 * fn with the line and the packages its CPUs lie on as status writes them ("[0,1]"); how many. */
static unsigned log_moves(char *log, void (*fn)(const char *line, const char *packages, void *),
                          void *arg)
{
        static const char mark[] = "a0 (pid 100000): CPUs ";
        char *save = NULL;
        unsigned n = 0;

        for (char *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                const char *at = strstr(line, mark);
                char cpus[64], packages[64];
                size_t len;

                if (!at)
                        continue;
                at += sizeof(mark) - 1;
                len = strcspn(at, " ");
                assert_true(len < sizeof(cpus));
                memcpy(cpus, at, len);
                cpus[len] = '\0';
                xeon_packages(cpus, packages, sizeof(packages));
                fn(line, packages, arg);
                n++;
        }
        return n;
}

/* The number of CPUs in a list ("0-2,6-8": 6). */
static unsigned cpumask_count_list(const char *list)
{
        struct cpumask m;

        assert_int_equal(cpumask_parse(list, &m), 0);
        return cpumask_count(&m);
}

/* The number of packages in status's "packages" ("[0,1]": 2), NaN for null. */
static double packages_count(const char *packages)
{
        double n = 1;

        if (!strcmp(packages, "null"))
                return NAN;
        if (!strcmp(packages, "[]"))
                return 0;
        for (const char *p = packages; *p; p++)
                n += *p == ',';
        return n;
}

/* pctl_app_packages of app k as /metrics would serve it (NaN: left out). */
static double metrics_packages(struct manager *m, unsigned k)
{
        struct metrics_snapshot *s = NULL;
        double v;

        assert_int_equal(manager_metrics(m, &s), 0);
        assert_true(k < s->n_apps);
        v = s->apps[k].v[METRICS_APP_PACKAGES];
        metrics_snapshot_unref(s);
        return v;
}

/* The run report of pid, as `pctl run` asks for it. */
static struct json_object *run_report(struct manager *m, pid_t pid)
{
        struct json_object *j = json_object_new_object();
        char err[256];

        if (manager_report(m, pid, NULL, j, err, sizeof(err)) != 0)
                fail_msg("no report of pid %d: %s", (int)pid, err);
        return j;
}

/* A member as JSON text: "[0,1]", "null" (or absent). */
static void member_text(struct json_object *j, const char *key, char *buf, size_t size)
{
        struct json_object *v = NULL;

        json_object_object_get_ex(j, key, &v);
        snprintf(buf, size, "%s",
                 v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "null");
}

/* bench_random's seed 91002 (docs/allocator.md, "Spreading over packages"): alone on the
 * 2 x 6 Xeon, 4.5 bytes per instruction; its cores stall on memory and the allocator spreads
 * it over both packages. */
#define SEED_91002                                                                                 \
        "[machine]\npreset = xeon-e5-2630v2x2\ncounter_noise = 0.0099\nseed = 15831\n%s"           \
        "[app a0]\ninstructions = 1.337e+12\np = 0.9810\nipc = 1.557\nmem_fraction = 0.104\n"      \
        "sync = 0.211\nprogress_units = 300550\nmem_bytes_per_instruction = 4.487\n"

/* Status says which packages an app's CPUs lie on (the same as its cpus list shows on the
 * machine's topology, at every decision), and, once the allocator spread it alone over both,
 * "spreading": "alone" and a reason that says so; before that, no word of spreading. */
static void status_shows_a_spread_app_on_two_packages(void **state)
{
        char text[1024], want[64];
        struct sim_manager f;
        struct app_status st;
        bool spread = false;

        snprintf(text, sizeof(text), SEED_91002, "");
        sim_manager_open(&f, text, "edp", 1);
        for (unsigned step = 0; step < 400 && !spread; step++) {
                sim_manager_tick(&f, step);
                if (step % 10 != 9)
                        continue;
                app_status(f.m, 0, &st);
                xeon_packages(st.cpus, want, sizeof(want));
                assert_string_equal(st.packages, want);
                spread = strcmp(st.spreading, "alone") == 0;
                if (!spread && (st.spreading[0] || strstr(st.reason, "spread")))
                        fail_msg("at %u s: spreading '%s', reason '%s' on CPUs %s", step / 10,
                                 st.spreading, st.reason, st.cpus);
        }
        if (!spread)
                fail_msg("never shown spread alone: CPUs %s, packages %s, reason '%s'", st.cpus,
                         st.packages, st.reason);
        assert_string_equal(st.packages, "[0,1]");
        if (!strstr(st.reason, "; spread over packages 0,1: its cores stall on memory, and alone"))
                fail_msg("reason of a spread app: '%s'", st.reason);
        sim_manager_close(&f);
}

/* Where the machine did not say which package a CPU is on (sysfs without
 * physical_package_id: topology_read places it as package 0 and marks it unread), the
 * packages of an app holding it are unknown: null, and nothing said of spreading, though the
 * allocator spread the app. Here the spread app's CPU of package 1 is marked so. */
static void unknown_packages_are_not_guessed(void **state)
{
        char text[1024];
        struct sim_manager f;
        struct app_status st;
        struct cpumask cpus;
        unsigned step;

        snprintf(text, sizeof(text), SEED_91002, "");
        sim_manager_open(&f, text, "edp", 1);
        for (step = 0; step < 400; step++) {
                sim_manager_tick(&f, step);
                if (step % 10 != 9)
                        continue;
                app_status(f.m, 0, &st);
                if (!strcmp(st.spreading, "alone"))
                        break;
        }
        assert_string_equal(st.spreading, "alone");
        assert_int_equal(cpumask_parse(st.cpus, &cpus), 0);
        cpumask_foreach (c, &cpus)
                if (c >= 6)
                        cpumask_set(&f.pf->topo.package_unread, (unsigned)c);
        app_status(f.m, 0, &st);
        assert_string_equal(st.packages, "null");
        assert_string_equal(st.spreading, "");
        if (strstr(st.reason, "spread"))
                fail_msg("reason with unknown packages: '%s'", st.reason);
        /* The run report: the intervals from now on do not know their packages, so neither
         * does the run (null), and nothing is said of spreading. */
        for (unsigned k = 0; k < 5; k++)
                sim_manager_tick(&f, ++step);
        {
                struct json_object *j = run_report(f.m, SIM_PID_BASE);
                char buf[64];

                member_text(j, "packages", buf, sizeof(buf));
                assert_string_equal(buf, "null");
                assert_null(str(j, "spreading"));
                assert_null(str(j, "spread_reason"));
                json_object_put(j);
        }
        sim_manager_close(&f);
}

/* The same app on a machine of one package of 12 CPUs: it stalls as much (more: one
 * package's bandwidth), and the allocator marks it spread, but its CPUs lie on package 0
 * alone: status says packages [0] and not a word of spreading; nor does the log of its moves
 * or its run report (packages [0]), and /metrics counts 1 package. */
static void one_package_says_nothing_of_spreading(void **state)
{
        char text[1024], buf[512], *log;
        struct sim_manager f;
        struct app_status st;
        struct log_capture c;
        struct json_object *j, *configs;

        snprintf(text, sizeof(text), SEED_91002, "sockets = 1\ncores_per_socket = 12\n");
        sim_manager_open(&f, text, "edp", 1);
        log_capture_begin(&c);
        for (unsigned step = 0; step < 400; step++) {
                sim_manager_tick(&f, step);
                if (step % 10 != 9)
                        continue;
                app_status(f.m, 0, &st);
                assert_string_equal(st.packages, "[0]");
                if (st.spreading[0] || strstr(st.reason, "spread"))
                        fail_msg("at %u s on one package: spreading '%s', reason '%s'", step / 10,
                                 st.spreading, st.reason);
                assert_near(metrics_packages(f.m, 0), 1, 0);
        }
        log = log_capture_end(&c);
        if (!strstr(log, "a0 (pid 100000): CPUs ") || strstr(log, "spread"))
                fail_msg("the moves on one package:\n%s", log);
        free(log);
        j = run_report(f.m, SIM_PID_BASE);
        member_text(j, "packages", buf, sizeof(buf));
        assert_string_equal(buf, "[0]");
        assert_true(json_object_object_get_ex(j, "configs", &configs));
        for (size_t k = 0; k < json_object_array_length(configs); k++) {
                member_text(json_object_array_get_idx(configs, k), "packages", buf, sizeof(buf));
                assert_string_equal(buf, "[0]");
        }
        assert_null(str(j, "spreading"));
        assert_null(str(j, "spread_reason"));
        json_object_put(j);
        sim_manager_close(&f);
}

/* bench_random's seed 91015 (docs/allocator.md, "Spreading beside other apps"): a lock-bound
 * a0 beside a spinning, bandwidth-bound a1 on the 2 x 6 Xeon. a1 is spread as a trial, which
 * stands: status shows it on both packages, "on-trial" with a reason naming the trial, then
 * "trial-stood"; a0's status never speaks of spreading. */
static void status_shows_a_trial_of_spreading_and_its_verdict(void **state)
{
        static const char text[] =
            SCENARIO_91015_HEAD "mem_bytes_per_instruction = 6.547\n" SCENARIO_91015_TAIL;
        struct sim_manager f;
        struct app_status a0, a1;
        bool trial = false, stood = false;
        char want[64];

        sim_manager_open(&f, text, "edp", 2);
        for (unsigned step = 0; step < 300 && !stood; step++) {
                sim_manager_tick(&f, step);
                if (step % 10 != 9)
                        continue;
                app_status(f.m, 0, &a0);
                app_status(f.m, 1, &a1);
                xeon_packages(a1.cpus, want, sizeof(want));
                assert_string_equal(a1.packages, want);
                if (a0.spreading[0] || strstr(a0.reason, "spread"))
                        fail_msg("a0 at %u s: spreading '%s', reason '%s'", step / 10, a0.spreading,
                                 a0.reason);
                if (!strcmp(a1.spreading, "on-trial")) {
                        trial = true;
                        assert_string_equal(a1.packages, "[0,1]");
                        if (!strstr(a1.reason, "; spread over packages 0,1 as a trial"))
                                fail_msg("reason of a1 on trial: '%s'", a1.reason);
                } else if (!strcmp(a1.spreading, "trial-stood")) {
                        stood = true;
                        assert_string_equal(a1.packages, "[0,1]");
                        if (!strstr(a1.reason, "; spread over packages 0,1: a trial beside other "
                                               "apps relieved"))
                                fail_msg("reason of a1 whose trial stood: '%s'", a1.reason);
                } else if (a1.spreading[0]) {
                        fail_msg("a1 at %u s: spreading '%s' before its trial stood (reason "
                                 "'%s')",
                                 step / 10, a1.spreading, a1.reason);
                }
        }
        if (!trial || !stood)
                fail_msg("a1's trial of spreading: shown on trial %d, shown stood %d (last: "
                         "CPUs %s, spreading '%s', reason '%s')",
                         trial, stood, a1.cpus, a1.spreading, a1.reason);
        sim_manager_close(&f);
}

/* 91015's twin whose a1 stalls on memory latency, not bandwidth (no bandwidth key, memory
 * fraction 0.48): spreading it does not relieve its stalls and the trial is refuted. Where
 * a1's CPUs are still on both packages, status says "trial-refuted"; once on one, nothing. */
static void status_shows_a_refuted_trial(void **state)
{
        static const char text[] = SCENARIO_91015_HEAD "mem_fraction = 0.48\n" SCENARIO_91015_TAIL;
        struct sim_manager f;
        struct app_status a1;
        bool trial = false, refuted = false;

        sim_manager_open(&f, text, "edp", 2);
        for (unsigned step = 0; step < 100; step++) {
                sim_manager_tick(&f, step);
                if (step % 10 != 9)
                        continue;
                app_status(f.m, 1, &a1);
                if (!strcmp(a1.spreading, "on-trial")) {
                        if (refuted)
                                fail_msg("a1 tried again at %u s after its trial was refuted",
                                         step / 10);
                        trial = true;
                } else if (!strcmp(a1.spreading, "trial-refuted")) {
                        refuted = true;
                        assert_string_equal(a1.packages, "[0,1]");
                        if (!strstr(a1.reason, "; on packages 0,1 where a trial of spreading put "
                                               "it: the trial did not relieve its memory stalls"))
                                fail_msg("reason of a1 whose trial was refuted: '%s'", a1.reason);
                } else if (a1.spreading[0]) {
                        fail_msg("a1 at %u s: spreading '%s' (reason '%s')", step / 10,
                                 a1.spreading, a1.reason);
                } else if (refuted && strcmp(a1.packages, "[0]") && strcmp(a1.packages, "[1]")) {
                        fail_msg("a1 at %u s on packages %s after its refuted trial, and status "
                                 "does not say why",
                                 step / 10, a1.packages);
                }
        }
        if (!trial || !refuted)
                fail_msg("a1's trial of spreading: shown on trial %d, shown refuted %d (last: "
                         "CPUs %s, spreading '%s', reason '%s')",
                         trial, refuted, a1.cpus, a1.spreading, a1.reason);
        sim_manager_close(&f);
}

struct logged {
        unsigned spread, both, one;
};

/* A move logged: onto both packages by a spread, saying why (only then), or elsewhere. */
static void spread_move(const char *line, const char *packages, void *arg)
{
        struct logged *l = arg;

        if (strstr(line, "spread")) {
                if (strcmp(packages, "[0,1]") ||
                    !strstr(line, "; spread over packages 0,1: its cores stall on memory, and "
                                  "alone it may have every package's memory bandwidth"))
                        fail_msg("a move logged as a spread: '%s' (packages %s)", line, packages);
                l->spread++;
        } else if (!strcmp(packages, "[0,1]")) {
                l->both++;
        } else {
                l->one++;
        }
}

/* pctld's log line of a move says when the app it moves is spread over packages, with the
 * sentence status's reason ends with: seed 91002's app alone on the 2 x 6 Xeon starts on all
 * 12 CPUs, then is moved spread over both packages (0-2,6-8, ...) in its first 40 s, and
 * those moves say so; a move that says it is on both packages. */
static void a_spread_is_logged_as_a_spread(void **state)
{
        char text[1024], *log;
        struct sim_manager f;
        struct app_status st;
        struct log_capture c;
        struct logged l = {0};
        unsigned n;

        snprintf(text, sizeof(text), SEED_91002, "");
        sim_manager_open(&f, text, "edp", 1);
        log_capture_begin(&c);
        for (unsigned step = 0; step < 400; step++)
                sim_manager_tick(&f, step);
        log = log_capture_end(&c);
        app_status(f.m, 0, &st);
        assert_string_equal(st.spreading, "alone");
        n = log_moves(log, spread_move, &l);
        free(log);
        if (l.spread == 0)
                fail_msg("%u moves logged, %u onto both packages, none says it spreads the app "
                         "(status: '%s')",
                         n, l.both, st.reason);
        sim_manager_close(&f);
}

/* /metrics gives each app the number of packages status shows (pctl_app_packages): at every
 * decision of seed 91002's app, 2 once it is spread; left out (NaN) where a CPU's package is
 * not known. */
static void metrics_count_the_packages_status_shows(void **state)
{
        char text[1024];
        struct sim_manager f;
        struct app_status st;
        struct cpumask cpus;

        memset(&st, 0, sizeof(st));
        snprintf(text, sizeof(text), SEED_91002, "");
        sim_manager_open(&f, text, "edp", 1);
        for (unsigned step = 0; step < 400 && strcmp(st.spreading, "alone"); step++) {
                sim_manager_tick(&f, step);
                if (step % 10 != 9)
                        continue;
                app_status(f.m, 0, &st);
                assert_near(metrics_packages(f.m, 0), packages_count(st.packages), 0);
        }
        assert_string_equal(st.spreading, "alone");
        assert_near(metrics_packages(f.m, 0), 2, 0);
        assert_int_equal(cpumask_parse(st.cpus, &cpus), 0);
        cpumask_foreach (cpu, &cpus)
                if (cpu >= 6)
                        cpumask_set(&f.pf->topo.package_unread, (unsigned)cpu);
        assert_true(isnan(metrics_packages(f.m, 0)));
        sim_manager_close(&f);
}

/* The run report (what `pctl run` prints when its command ends) carries the packages the app
 * ran on: each configuration's, the whole run's, and why it lay spread at its end, while it
 * runs and after it has left. Seed 91002's app, here with fewer instructions so that it ends:
 * spread alone, so the run's packages are [0,1] and at its end it is "alone". */
static void run_report_gives_the_packages_it_ran_on(void **state)
{
        static const char text[] =
            "[machine]\npreset = xeon-e5-2630v2x2\ncounter_noise = 0.0099\nseed = 15831\n"
            "[app a0]\ninstructions = 3e11\np = 0.9810\nipc = 1.557\nmem_fraction = 0.104\n"
            "sync = 0.211\nmem_bytes_per_instruction = 4.487\n";
        struct sim_manager f;
        struct app_status st;
        struct json_object *j, *configs;
        char buf[512];
        unsigned step;
        const pid_t pid = SIM_PID_BASE;

        memset(&st, 0, sizeof(st));
        sim_manager_open(&f, text, "edp", 1);
        for (step = 0; step < 400 && strcmp(st.spreading, "alone"); step++) {
                sim_manager_tick(&f, step);
                if (step % 10 == 9)
                        app_status(f.m, 0, &st);
        }
        assert_string_equal(st.spreading, "alone");
        for (bool left = false; !left;) {
                j = run_report(f.m, pid);
                left = !strcmp(str(j, "state"), "left");
                member_text(j, "packages", buf, sizeof(buf));
                assert_string_equal(buf, "[0,1]");
                /* Every configuration knows its packages, on the Xeon's two. */
                assert_true(json_object_object_get_ex(j, "configs", &configs));
                for (size_t k = 0; k < json_object_array_length(configs); k++) {
                        member_text(json_object_array_get_idx(configs, k), "packages", buf,
                                    sizeof(buf));
                        if (strcmp(buf, "[0]") && strcmp(buf, "[1]") && strcmp(buf, "[0,1]"))
                                fail_msg("configuration %zu ran on packages %s", k, buf);
                }
                /* Why it is spread, as status says it, while it runs and at its end. */
                if (!left)
                        app_status(f.m, 0, &st);
                if (!strcmp(st.spreading, "alone")) {
                        assert_string_equal(str(j, "spreading"), "alone");
                        if (!str(j, "spread_reason") ||
                            !strstr(st.reason, str(j, "spread_reason")) ||
                            !strstr(str(j, "spread_reason"), "spread over packages 0,1: its cores "
                                                             "stall on memory"))
                                fail_msg("spread_reason '%s', status's reason '%s'",
                                         str(j, "spread_reason"), st.reason);
                } else {
                        assert_null(str(j, "spreading"));
                        assert_null(str(j, "spread_reason"));
                }
                json_object_put(j);
                if (step >= 6000)
                        fail_msg("the app did not end in %u s", step / 10);
                for (unsigned k = 0; k < 10 && manager_n_apps(f.m); k++, step++)
                        sim_manager_tick(&f, step);
        }
        sim_manager_close(&f);
}

/* A configuration is its cores, clock and packages: seed 91015's a1 holds 6 cores on package
 * 1, then the same 6 cores spread over 0 and 1 by the trial, and its run report keeps the two
 * apart, each with the packages status showed it on at the decision that placed it (the
 * first configuration, where it was adopted, apart). */
static void run_report_keeps_each_placement_apart(void **state)
{
        static const char text[] =
            SCENARIO_91015_HEAD "mem_bytes_per_instruction = 6.547\n" SCENARIO_91015_TAIL;
        struct sim_manager f;
        struct app_status a1;
        char seen[32][600], buf[512];
        unsigned n_seen = 0, single = 0, both = 0;
        struct json_object *j, *configs;

        memset(&a1, 0, sizeof(a1));
        sim_manager_open(&f, text, "edp", 2);
        for (unsigned step = 0; step < 300 && strcmp(a1.spreading, "trial-stood"); step++) {
                sim_manager_tick(&f, step);
                if (step % 10 != 9)
                        continue;
                app_status(f.m, 1, &a1);
                assert_true(n_seen < ARRAY_SIZE(seen));
                snprintf(seen[n_seen++], sizeof(seen[0]), "%u %s", cpumask_count_list(a1.cpus),
                         a1.packages);
        }
        assert_string_equal(a1.spreading, "trial-stood");
        j = run_report(f.m, SIM_PID_BASE + 1);
        assert_true(json_object_object_get_ex(j, "configs", &configs));
        for (size_t k = 1; k < json_object_array_length(configs); k++) {
                struct json_object *c = json_object_array_get_idx(configs, k);
                char pair[600];
                bool found = false;

                member_text(c, "packages", buf, sizeof(buf));
                snprintf(pair, sizeof(pair), "%d %s", (int)num(c, "cores"), buf);
                for (unsigned i = 0; i < n_seen && !found; i++)
                        found = !strcmp(seen[i], pair);
                if (!found)
                        fail_msg("configuration %zu (%s) was never a1's status", k,
                                 json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
                both += !strcmp(buf, "[0,1]");
                single += !strcmp(buf, "[0]") || !strcmp(buf, "[1]");
        }
        if (!both || !single)
                fail_msg("a1's configurations after its adoption: %u on one package, %u on both: "
                         "%s",
                         single, both,
                         json_object_to_json_string_ext(configs, JSON_C_TO_STRING_PLAIN));
        /* end_config names the one it is at now (its last status), wherever it is listed. */
        {
                struct json_object *c;
                char pair[600];
                double end = num(j, "end_config");

                assert_true(end >= 0 && end < json_object_array_length(configs));
                c = json_object_array_get_idx(configs, (size_t)end);
                member_text(c, "packages", buf, sizeof(buf));
                snprintf(pair, sizeof(pair), "%d %s", (int)num(c, "cores"), buf);
                assert_string_equal(pair, seen[n_seen - 1]);
        }
        json_object_put(j);
        sim_manager_close(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(report_of_a_finished_app),
    cmocka_unit_test(measured_energy_is_not_labelled_declared),
    cmocka_unit_test(status_shows_the_method_sources),
    cmocka_unit_test(status_shows_the_allocator_phase),
    cmocka_unit_test(status_shows_a_spread_app_on_two_packages),
    cmocka_unit_test(one_package_says_nothing_of_spreading),
    cmocka_unit_test(unknown_packages_are_not_guessed),
    cmocka_unit_test(status_shows_a_trial_of_spreading_and_its_verdict),
    cmocka_unit_test(status_shows_a_refuted_trial),
    cmocka_unit_test(a_spread_is_logged_as_a_spread),
    cmocka_unit_test(metrics_count_the_packages_status_shows),
    cmocka_unit_test(run_report_gives_the_packages_it_ran_on),
    cmocka_unit_test(run_report_keeps_each_placement_apart),
    cmocka_unit_test(summary_says_one_app_in_the_singular),
};

PCTL_TEST_MAIN(tests)
