#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/fsio.h"
#include "pctl/policy.h"

static char tmpdir[64];

static int setup(void **state)
{
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/pctl-test-policy-XXXXXX");
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *text)
{
        static char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return path;
}

/* One file: must load, or fail with exactly the problems at `lines`, the first with `needle`. */
static void load_one(const char *text, struct policy_set *set)
{
        struct config_problems p = {};
        const char *path = write_file("one.conf", text);

        if (policy_set_load_file(path, set, &p) != 0) {
                config_problems_print(&p, stderr);
                fail_msg("refused:\n%s", text);
        }
        config_problems_clear(&p);
}

static void expect_problem(const char *text, int line, const char *needle)
{
        struct config_problems p = {};
        struct policy_set set = {.n = 4242};
        const char *path = write_file("bad.conf", text);

        assert_int_equal(policy_set_load_file(path, &set, &p), -EINVAL);
        assert_int_equal(set.n, 4242); /* unchanged */
        if (p.n != 1 || p.v[0].lineno != line || !strstr(p.v[0].what, needle)) {
                config_problems_print(&p, stderr);
                fail_msg("for:\n%s\nexpected one problem at line %d with '%s'", text, line, needle);
        }
        assert_string_equal(p.v[0].file, path);
        config_problems_clear(&p);
}

static void defaults(void **state)
{
        struct policy_set set;
        struct config_key_info k;
        const struct policy *p;

        load_one("[policy plain]\n", &set);
        assert_int_equal(set.n, 1);
        p = &set.v[0];
        assert_string_equal(p->name, "plain");
        assert_int_equal(p->objective, OBJECTIVE_EDP);
        assert_int_equal(p->min_cores, 1);
        assert_int_equal(p->max_cores, 0);
        assert_int_equal(p->min_freq_mhz, 0);
        assert_int_equal(p->max_freq_mhz, 0);
        assert_true(isinf(p->max_slowdown));
        assert_near(p->weight, 1, 0);
        assert_int_equal(p->search, POLICY_SEARCH_MEASURED);
        assert_int_equal(p->lineno, 1);
        for (unsigned m = 0; m < POLICY_MATCH_KINDS; m++)
                assert_int_equal(p->match[m].n, 0);
        policy_set_free(&set);
        /* Every non-empty default written into a file is accepted and gives the same policy. */
        for (size_t i = 0; policy_key_info(i, &k); i++) {
                char text[256];

                assert_non_null(k.doc);
                if (!k.def[0])
                        continue;
                snprintf(text, sizeof(text), "[policy d]\n%s = %s\n", k.key, k.def);
                load_one(text, &set);
                assert_int_equal(set.v[0].objective, OBJECTIVE_EDP);
                assert_int_equal(set.v[0].min_cores, 1);
                assert_int_equal(set.v[0].max_cores, 0);
                assert_true(isinf(set.v[0].max_slowdown));
                assert_near(set.v[0].weight, 1, 0);
                policy_set_free(&set);
        }
}

static void key_bounds(void **state)
{
        static const struct {
                const char *key, *value;
                bool ok;
        } rows[] = {
            {"objective", "edp", true},
            {"objective", "ppw", true},
            {"objective", "energy", true},
            {"objective", "performance", true},
            {"objective", "monitor", true},
            {"objective", "perf", false},
            {"min_cores", "1", true},
            {"min_cores", "0", false},
            {"min_cores", "4096", true},
            {"min_cores", "4097", false},
            {"min_cores", "two", false},
            {"max_cores", "none", true},
            {"max_cores", "0", false},
            {"max_cores", "64", true},
            {"min_freq", "800", true},
            {"min_freq", "0", false},
            {"min_freq", "100001", false},
            {"max_freq", "3700", true},
            {"max_freq", "3.7", false},
            {"max_slowdown", "0", true},
            {"max_slowdown", "0.1", true},
            {"max_slowdown", "-0.1", false},
            {"max_slowdown", "none", true},
            {"max_slowdown", "101", false},
            {"weight", "0", false},
            {"weight", "0.5", true},
            {"weight", "1000", true},
            {"weight", "1001", false},
            {"weight", "none", false},
            {"search", "model", true},
            {"search", "measured", true},
            {"search", "oracle", false},
            {"match_comm", "pbench", true},
            {"match_comm", "a_very_long_command", false},
            {"match_comm", "a_very_long_com*", true},
            {"match_exe", "/usr/bin/*", true},
            {"match_exe", "bin/x", false},
            {"match_exe", "*/python3", true},
            {"match_cgroup", "/batch.slice", true},
            {"match_cgroup", "batch", false},
            {"match_user", "alice", true},
            {"match_user", "1000", true},
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                struct config_problems p = {};
                struct policy_set set = {};
                char text[256];
                int r;

                snprintf(text, sizeof(text), "[policy k]\n%s = %s\n", rows[i].key, rows[i].value);
                r = policy_set_load_file(write_file("k.conf", text), &set, &p);
                if ((r == 0) != rows[i].ok) {
                        config_problems_print(&p, stderr);
                        fail_msg("%s = %s: got %d", rows[i].key, rows[i].value, r);
                }
                if (!rows[i].ok) {
                        assert_int_equal(p.n, 1);
                        assert_int_equal(p.v[0].lineno, 2);
                        assert_non_null(strstr(p.v[0].what, "[policy k]"));
                        assert_non_null(strstr(p.v[0].what, rows[i].key));
                }
                policy_set_free(&set);
                config_problems_clear(&p);
        }
}

static void values_land_in_fields(void **state)
{
        struct policy_set set;
        const struct policy *p;

        load_one("# batch jobs\n"
                 "[policy batch]\n"
                 "objective = ppw\n"
                 "min_cores = 2\n"
                 "max_cores = 8\n"
                 "min_freq = 1200\n"
                 "max_freq = 3000\n"
                 "max_slowdown = 0.25\n"
                 "weight = 2.5\n"
                 "search = model\n"
                 "match_comm = pbench\n"
                 "match_comm = stress*\n"
                 "\n"
                 "[policy watch]\n"
                 "objective = monitor\n",
                 &set);
        assert_int_equal(set.n, 2);
        p = &set.v[0];
        assert_int_equal(p->objective, OBJECTIVE_PPW);
        assert_int_equal(p->min_cores, 2);
        assert_int_equal(p->max_cores, 8);
        assert_int_equal(p->min_freq_mhz, 1200);
        assert_int_equal(p->max_freq_mhz, 3000);
        assert_near(p->max_slowdown, 0.25, 0);
        assert_near(p->weight, 2.5, 0);
        assert_int_equal(p->search, POLICY_SEARCH_MODEL);
        assert_int_equal(p->match[POLICY_MATCH_COMM].n, 2);
        assert_string_equal(p->match[POLICY_MATCH_COMM].v[1], "stress*");
        assert_int_equal(p->lineno, 2);
        assert_int_equal(set.v[1].objective, OBJECTIVE_MONITOR);
        assert_int_equal(set.v[1].lineno, 14);
        policy_set_free(&set);
}

static void min_greater_than_max_names_both_lines(void **state)
{
        expect_problem("[policy m]\nmax_cores = 2\nmin_cores = 4\n", 3,
                       "[policy m] min_cores: 4 is more than max_cores (2, line 2)");
        expect_problem("[policy m]\nmin_freq = 3000\nweight = 1\nmax_freq = 1200\n", 2,
                       "min_freq: 3000 is more than max_freq (1200, line 4)");
        /* Equal bounds pin the app. */
        {
                struct policy_set set;

                load_one("[policy m]\nmin_cores = 2\nmax_cores = 2\nmin_freq = 1200\n"
                         "max_freq = 1200\n",
                         &set);
                assert_int_equal(set.v[0].min_cores, 2);
                policy_set_free(&set);
        }
}

static void several_problems_each_reported(void **state)
{
        static const char text[] = "[policy a]\n"         /* 1 */
                                   "objective = fast\n"   /* 2 */
                                   "min_cores = 0\n"      /* 3 */
                                   "colour = red\n"       /* 4 */
                                   "junk line\n"          /* 5 */
                                   "[profile b]\n"        /* 6 */
                                   "[policy bad name!]\n" /* 7 */
                                   "[policy a]\n"         /* 8 */
                                   "weight = 2\n"         /* 9 */
                                   "weight = 3\n";        /* 10 */
        static const int lines[] = {2, 3, 4, 5, 6, 7, 8};
        struct config_problems p = {};
        struct policy_set set = {};

        assert_int_equal(policy_set_load_file(write_file("many.conf", text), &set, &p), -EINVAL);
        config_problems_print(&p, stdout);
        assert_int_equal(p.n, sizeof(lines) / sizeof(lines[0]));
        for (size_t i = 0; i < p.n; i++)
                assert_int_equal(p.v[i].lineno, lines[i]);
        assert_non_null(strstr(p.v[3].what, "not a [section], key = value"));
        assert_non_null(strstr(p.v[4].what, "[profile b]: unknown section"));
        assert_non_null(strstr(p.v[6].what, "defined twice (first at line 1)"));
        config_problems_clear(&p);
}

static void unknown_keys_and_sections(void **state)
{
        expect_problem("[policy a]\nmax_core = 4\n", 2, "[policy a] max_core: unknown key");
        expect_problem("[polcy a]\n", 1, "[polcy a]: unknown section");
        expect_problem("[policy]\n", 1, "unknown section");
        expect_problem("objective = edp\n[policy a]\n", 1, "outside any [policy NAME]");
        expect_problem("[policy a]\nobjective = edp\nobjective = ppw\n", 3,
                       "set twice (first at line 2)");
}

static void duplicates_across_files_and_whole_set_refused(void **state)
{
        char dir[128];
        struct config_problems p = {};
        struct policy_set set = {.n = 4242};

        snprintf(dir, sizeof(dir), "%s/d", tmpdir);
        assert_int_equal(mkdir(dir, 0755), 0);
        write_file("d/10-a.conf", "[policy shared]\nobjective = edp\n");
        write_file("d/20-b.conf", "\n[policy other]\n[policy shared]\nobjective = ppw\n");
        assert_int_equal(policy_set_load_dir(dir, &set, &p), -EINVAL);
        assert_int_equal(set.n, 4242);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.v[0].lineno, 3);
        assert_non_null(strstr(p.v[0].file, "20-b.conf"));
        assert_non_null(strstr(p.v[0].what, "10-a.conf:1"));
        config_problems_clear(&p);

        /* A good set loads; one bad file in it refuses the whole set. */
        write_file("d/20-b.conf", "[policy other]\nmatch_comm = x\n");
        assert_int_equal(policy_set_load_dir(dir, &set, &p), 0);
        assert_int_equal(set.n, 2);
        policy_set_free(&set);
        write_file("d/30-c.conf", "[policy third]\nweight = -1\n");
        set.n = 4242;
        assert_int_equal(policy_set_load_dir(dir, &set, &p), -EINVAL);
        assert_int_equal(set.n, 4242);
        assert_int_equal(p.n, 1);
        config_problems_clear(&p);
        assert_int_equal(policy_set_load_dir("/nonexistent-pctl-dir", &set, &p), -ENOENT);
        assert_int_equal(set.n, 4242);
        config_problems_clear(&p);
}

/* An empty policies directory is a set of no policies: the daemon has the built-ins only. */
static void empty_dir_is_no_policies(void **state)
{
        char dir[128];
        struct config_problems p = {};
        struct policy_set set = {.n = 4242};

        snprintf(dir, sizeof(dir), "%s/empty", tmpdir);
        assert_int_equal(mkdir(dir, 0755), 0);
        assert_int_equal(policy_set_load_dir(dir, &set, &p), 0);
        assert_int_equal(set.n, 0);
        assert_int_equal(p.n, 0);
        policy_set_free(&set);
}

static struct proc_identity ident(const char *comm, const char *exe, unsigned uid, const char *user,
                                  const char *cgroup)
{
        struct proc_identity id = {.pid = 1, .uid = uid};

        snprintf(id.comm, sizeof(id.comm), "%s", comm);
        snprintf(id.exe, sizeof(id.exe), "%s", exe);
        snprintf(id.user, sizeof(id.user), "%s", user);
        snprintf(id.cgroup, sizeof(id.cgroup), "%s", cgroup);
        return id;
}

static const char *matched(const struct policy_set *set, struct proc_identity id)
{
        const struct policy *p = policy_match(set, &id);

        return p ? p->name : "-";
}

static void matching(void **state)
{
        char dir[128];
        struct config_problems p = {};
        struct policy_set set;

        snprintf(dir, sizeof(dir), "%s/m", tmpdir);
        assert_int_equal(mkdir(dir, 0755), 0);
        /* Files in name order: 10- before 20-; sections in file order. */
        write_file("m/20-late.conf", "[policy late]\nmatch_comm = pbench\n");
        write_file("m/10-early.conf", "[policy both]\n"
                                      "match_comm = pbench\n"
                                      "match_user = alice\n"
                                      "match_user = 1001\n"
                                      "[policy byexe]\n"
                                      "match_exe = /opt/*/bin/solver\n"
                                      "[policy bycg]\n"
                                      "match_cgroup = /batch.slice\n"
                                      "[policy named-only]\n"
                                      "objective = ppw\n"
                                      "[policy anycomm]\n"
                                      "match_comm = stress\n"
                                      "match_comm = stress-ng*\n");
        write_file("m/README", "not a policy file [\n");
        write_file("m/.hidden.conf", "junk\n");
        assert_int_equal(policy_set_load_dir(dir, &set, &p), 0);
        assert_int_equal(set.n, 6);
        assert_string_equal(set.v[5].name, "late");

        /* All kinds must match: comm and user. */
        assert_string_equal(matched(&set, ident("pbench", "/b", 1000, "alice", "/")), "both");
        assert_string_equal(matched(&set, ident("pbench", "/b", 1001, "", "/")), "both");
        /* comm alone matches only the later policy. */
        assert_string_equal(matched(&set, ident("pbench", "/b", 1002, "bob", "/")), "late");
        assert_string_equal(matched(&set, ident("solver", "/opt/x/bin/solver", 0, "root", "/")),
                            "byexe");
        assert_string_equal(matched(&set, ident("solver", "", 0, "root", "/")), "-");
        assert_string_equal(matched(&set, ident("a", "/a", 0, "root", "/batch.slice")), "bycg");
        assert_string_equal(matched(&set, ident("a", "/a", 0, "root", "/batch.slice/job-1.scope")),
                            "bycg");
        assert_string_equal(matched(&set, ident("a", "/a", 0, "root", "/batch.slicex")), "-");
        /* Repeated keys are alternatives. */
        assert_string_equal(matched(&set, ident("stress", "/s", 0, "root", "/")), "anycomm");
        assert_string_equal(matched(&set, ident("stress-ng-cpu", "/s", 0, "root", "/")), "anycomm");
        assert_string_equal(matched(&set, ident("stressx", "/s", 0, "root", "/")), "-");
        /* A policy without match rules is used by name only. */
        assert_string_equal(matched(&set, ident("named-only", "/n", 0, "root", "/")), "-");
        assert_null(policy_match(NULL, &(struct proc_identity){}));
        policy_set_free(&set);
}

static void bare_objective_names(void **state)
{
        struct policy_set set;
        const struct policy *p;

        for (unsigned o = 0; o < OBJECTIVE_COUNT; o++) {
                p = policy_lookup(NULL, objective_to_string(o));
                assert_non_null(p);
                assert_int_equal(p->objective, o);
                assert_string_equal(p->name, objective_to_string(o));
                assert_int_equal(p->min_cores, 1);
                assert_int_equal(p->max_cores, 0);
                assert_true(isinf(p->max_slowdown));
                assert_string_equal(p->file, "");
                assert_ptr_equal(p, policy_builtin(o));
        }
        assert_null(policy_lookup(NULL, "perf"));
        assert_null(policy_lookup(NULL, "batch"));
        /* A file that defines "edp" wins over the built-in. */
        load_one("[policy edp]\nmax_cores = 2\n[policy batch]\nobjective = energy\n", &set);
        p = policy_lookup(&set, "edp");
        assert_int_equal(p->max_cores, 2);
        assert_ptr_equal(p, &set.v[0]);
        assert_int_equal(policy_lookup(&set, "batch")->objective, OBJECTIVE_ENERGY);
        assert_ptr_equal(policy_lookup(&set, "ppw"), policy_builtin(OBJECTIVE_PPW));
        policy_set_free(&set);
}

static void write_at(const char *rel, const char *text)
{
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s%s", tmpdir, rel);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void identity_from_fake_proc(void **state)
{
        struct proc_identity id;
        char path[256];

        snprintf(path, sizeof(path), "%s/proc", tmpdir);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/proc/4242", tmpdir);
        assert_int_equal(mkdir(path, 0755), 0);
        write_at("/proc/4242/comm", "pbench\n");
        write_at("/proc/4242/status", "Name:\tpbench\nUmask:\t0022\nState:\tR\n"
                                      "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n");
        write_at("/proc/4242/cgroup", "12:cpuset:/pctl/app-4242\n"
                                      "1:name=systemd:/user.slice/session-1.scope\n"
                                      "0::/\n");
        snprintf(path, sizeof(path), "%s/proc/4242/exe", tmpdir);
        assert_int_equal(symlink("/usr/local/bin/pbench", path), 0);
        assert_int_equal(fs_set_root(tmpdir), 0);
        assert_int_equal(proc_identity_read(4242, &id), 0);
        assert_int_equal(proc_identity_read(4243, &id), -ESRCH);
        fs_set_root("");
        assert_int_equal(id.pid, 4242);
        assert_string_equal(id.comm, "pbench");
        assert_string_equal(id.exe, "/usr/local/bin/pbench");
        assert_int_equal(id.uid, 0);
        assert_string_equal(id.user, "root");
        assert_string_equal(id.cgroup, "/user.slice/session-1.scope");

        /* Our own process, from the real /proc. */
        assert_int_equal(proc_identity_read(getpid(), &id), 0);
        assert_int_equal(id.uid, getuid());
        assert_true(id.exe[0] == '/');
        assert_true(id.cgroup[0] == '/');
}

static void cgroup_path_choice(void **state)
{
        char buf[128];

        assert_int_equal(
            proc_identity_cgroup_from("0::/system.slice/pctld.service\n", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/system.slice/pctld.service");
        /* Hybrid: the unified line is "/", so name=systemd is used. */
        assert_int_equal(proc_identity_cgroup_from("5:cpuset:/pctl/x\n"
                                                   "1:name=systemd:/user.slice\n0::/\n",
                                                   buf, sizeof(buf)),
                         0);
        assert_string_equal(buf, "/user.slice");
        assert_int_equal(
            proc_identity_cgroup_from("5:cpuacct,cpu:/a\n4:cpuset:/pctl/x\n", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/pctl/x");
        assert_int_equal(proc_identity_cgroup_from("", buf, sizeof(buf)), -ENODATA);
        assert_int_equal(proc_identity_cgroup_from("0::/a/very/long/path\n", buf, 4),
                         -ENAMETOOLONG);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(defaults, setup, teardown),
    cmocka_unit_test_setup_teardown(key_bounds, setup, teardown),
    cmocka_unit_test_setup_teardown(values_land_in_fields, setup, teardown),
    cmocka_unit_test_setup_teardown(min_greater_than_max_names_both_lines, setup, teardown),
    cmocka_unit_test_setup_teardown(several_problems_each_reported, setup, teardown),
    cmocka_unit_test_setup_teardown(unknown_keys_and_sections, setup, teardown),
    cmocka_unit_test_setup_teardown(duplicates_across_files_and_whole_set_refused, setup, teardown),
    cmocka_unit_test_setup_teardown(empty_dir_is_no_policies, setup, teardown),
    cmocka_unit_test_setup_teardown(matching, setup, teardown),
    cmocka_unit_test_setup_teardown(bare_objective_names, setup, teardown),
    cmocka_unit_test_setup_teardown(identity_from_fake_proc, setup, teardown),
    cmocka_unit_test(cgroup_path_choice),
};
PCTL_TEST_MAIN(tests)
