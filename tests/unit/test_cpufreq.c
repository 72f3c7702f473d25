#define _GNU_SOURCE /* nftw, unshare */
/* cpufreq through libcpupower against a fake sysfs tree: the test process enters a mount
 * namespace of its own (fake_ns_enter) and bind-mounts the tree over /sys/devices/system/cpu,
 * the fixed path the library reads and writes. Domains from related_cpus, available
 * frequencies or hardware limits, the userspace-governor path, the scaling_max_freq path, the
 * reason a refused write gives, and the original governor/limits restored on close and by
 * recovery after a crash. Frequencies are all seven digits wide: libcpupower writes without
 * truncating, which a plain file (unlike a kernel attribute) does not forgive. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_tree.h"
#include "pctl_test.h"
#include "pctl/actuator.h"
#include "pctl/calibrate.h"
#include "pctl/cpufreq.h"
#include "pctl/state.h"

#define POL "/sys/devices/system/cpu/cpu%u/cpufreq/"

/* acpi-cpufreq style: CPUs 0-1 and 2-3 share a clock each; userspace governor offered. */
static void put_policy(unsigned cpu, const char *related, bool userspace, bool list)
{
        char rel[128];

#define P(name, value)                                                                             \
        do {                                                                                       \
                snprintf(rel, sizeof(rel), POL name, cpu);                                         \
                fake_put(rel, value);                                                              \
        } while (0)
        P("related_cpus", related);
        P("cpuinfo_min_freq", "1000000\n");
        P("cpuinfo_max_freq", "3000000\n");
        if (list)
                P("scaling_available_frequencies", "3000000 2000000 1400000 1000000 \n");
        P("scaling_available_governors",
          userspace ? "performance powersave userspace schedutil\n" : "performance powersave\n");
        P("scaling_governor", userspace ? "schedutil\n" : "powersave\n");
        P("scaling_min_freq", "1000000\n");
        P("scaling_max_freq", "3000000\n");
        P("scaling_cur_freq", "2000000\n");
        if (userspace)
                P("scaling_setspeed", "<unsupported>\n");
#undef P
}

static void tree(bool userspace, bool list)
{
        fake_tree_new("cpufreq");
        fake_put("/sys/devices/system/cpu/online", "0-3\n");
        fake_put("/sys/devices/system/cpu/cpufreq/.keep", "");
        /* Each CPU of a domain sees the same policy (a symlink on real kernels). */
        for (unsigned c = 0; c < 4; c++)
                put_policy(c, c < 2 ? "0 1\n" : "2 3\n", userspace, list);
        fake_tree_mount("/sys/devices/system/cpu");
}

static void domains_from_related_cpus(void **state)
{
        struct cpufreq *cf;
        char why[256];
        const struct freq_domain *d;

        tree(true, true);
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), 0);
        assert_int_equal(cpufreq_n_domains(cf), 2);
        d = cpufreq_domain(cf, 0);
        assert_true(cpumask_test(&d->cpus, 0) && cpumask_test(&d->cpus, 1));
        assert_int_equal(cpumask_count(&d->cpus), 2);
        d = cpufreq_domain(cf, 1);
        assert_true(cpumask_test(&d->cpus, 2) && cpumask_test(&d->cpus, 3));
        assert_int_equal(cpumask_count(&d->cpus), 2);
        /* Available frequencies, sorted ascending; hardware limits. */
        assert_int_equal(d->n_freqs, 4);
        assert_int_equal(d->freqs_khz[0], 1000000);
        assert_int_equal(d->freqs_khz[3], 3000000);
        assert_int_equal(d->min_khz, 1000000);
        assert_int_equal(d->cur_khz, 2000000); /* scaling_cur_freq */
        assert_int_equal(d->max_khz, 3000000);
        assert_true(cpufreq_domain_uses_userspace(cf, 0));
        cpufreq_close(cf);
        fake_tree_free();
}

static void userspace_path_and_restore(void **state)
{
        struct state_record *rec;
        struct cpufreq *cf;
        char why[256], dir[512];

        tree(true, true);
        snprintf(dir, sizeof(dir), "%s/state", fake_root);
        assert_int_equal(state_record_open(dir, &rec), 0);
        assert_int_equal(cpufreq_open(rec, &cf, why, sizeof(why)), 0);
        assert_int_equal(cpufreq_set(cf, 1, 1400000), 0);
        fake_assert_reads("/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "userspace");
        fake_assert_reads("/sys/devices/system/cpu/cpu2/cpufreq/scaling_setspeed", "1400000");
        assert_int_equal(cpufreq_domain(cf, 1)->cur_khz, 1400000);
        /* The original settings were recorded before the change. */
        assert_int_equal(state_record_count(rec), 1);
        /* Domain 0 untouched. */
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil");
        cpufreq_close(cf);
        fake_assert_reads("/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "schedutil");
        assert_int_equal(state_record_count(rec), 0);
        state_record_close(rec);
        fake_tree_free();
}

static void max_freq_cap_without_userspace(void **state)
{
        struct cpufreq *cf;
        char why[256];

        tree(false, false); /* intel_pstate active: no list, no userspace governor */
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), 0);
        assert_false(cpufreq_domain_uses_userspace(cf, 0));
        assert_int_equal(cpufreq_domain(cf, 0)->n_freqs, 0);
        assert_int_equal(cpufreq_set(cf, 0, 1234000), 0); /* any value within the limits */
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "1234000");
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                          "powersave"); /* the governor is left alone */
        assert_int_equal(cpufreq_restore(cf, 0), 0);
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "3000000");
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq", "1000000");
        cpufreq_close(cf);
        fake_tree_free();
}

static void bad_requests_change_nothing(void **state)
{
        struct cpufreq *cf;
        char why[256];

        tree(true, true);
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), 0);
        assert_int_equal(cpufreq_set(cf, 2, 1400000), -EINVAL);
        assert_non_null(strstr(cpufreq_error(cf), "no frequency domain 2"));
        assert_int_equal(cpufreq_set(cf, 0, 5000000), -ERANGE);
        assert_non_null(strstr(cpufreq_error(cf), "outside the limits"));
        assert_int_equal(cpufreq_set(cf, 0, 1500000), -EINVAL);
        assert_non_null(strstr(cpufreq_error(cf), "not one of domain 0's available"));
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil");
        cpufreq_close(cf);
        fake_tree_free();
}

static void no_cpufreq_says_why(void **state)
{
        char why[256];
        struct cpufreq *cf;

        fake_tree_new("cpufreq");
        fake_put("/sys/devices/system/cpu/online", "0-1\n");
        fake_tree_mount("/sys/devices/system/cpu");
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), -ENODEV);
        assert_non_null(strstr(why, "cpufreq: no "));
        assert_non_null(strstr(why, "/sys/devices/system/cpu/cpufreq (the VM or kernel offers no "
                                    "frequency scaling); running without DVFS"));
        fake_tree_free();
}

/* A holder of the record under dir that sets domain 0 to 1 GHz and dies without restoring
 * anything: a real crash, and the kernel frees what it held (its memory, its lock). */
static void crash_holding(const char *dir)
{
        struct state_record *rec;
        struct cpufreq *cf;
        char why[256];
        int status;
        pid_t pid;

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (state_record_open(dir, &rec) < 0 ||
                    cpufreq_open(rec, &cf, why, sizeof(why)) < 0 || cpufreq_set(cf, 0, 1000000) < 0)
                        _exit(1);
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A crashed holder left the domain at 1.4 GHz on userspace: recovery puts it back. */
static void recover_restores_governor_and_limits(void **state)
{
        struct actuator_config cfg = {0};
        char dir[512];

        tree(true, true);
        snprintf(dir, sizeof(dir), "%s/state", fake_root);
        crash_holding(dir);
        fake_put("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "2000000\n");
        cfg.state_dir = dir;
        assert_int_equal(actuator_recover(&cfg, NULL), 1);
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil");
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "3000000");
        snprintf(dir, sizeof(dir), "%s/state/" STATE_RECORD_FILE, fake_root);
        assert_int_equal(access(dir, F_OK), -1); /* the record is cleared */
        fake_tree_free();
}

/* pctl calibrate that died mid-plan left domain 0 capped: the next calibrate puts it back
 * before it records the "original" settings (else the crashed run's cap would become the
 * setting it restores), and says so; with nothing left it says nothing. */
static void calibrate_recovers_a_crashed_calibrate(void **state)
{
        char dir[512], note[384];

        tree(true, true);
        snprintf(dir, sizeof(dir), "%s/calibrate", fake_root);
        crash_holding(dir);
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "userspace");
        assert_int_equal(calibrate_recover(dir, note, sizeof(note)), 0);
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil");
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "3000000");
        assert_non_null(strstr(note, "a calibrate that did not finish had left frequency "
                                     "settings: 1 put back, 0 kept"));
        assert_int_equal(calibrate_recover(dir, note, sizeof(note)), 0);
        assert_string_equal(note, "");
        fake_tree_free();
}

/* A cap below the current floor lowers the floor first (to the hardware minimum); restoring
 * raises the ceiling, then puts the floor back. */
static void cap_below_floor_lowers_it_then_restores(void **state)
{
        struct cpufreq *cf;
        char why[256];

        tree(false, false);
        fake_put("/sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq", "2000000\n");
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), 0);
        assert_int_equal(cpufreq_set(cf, 0, 1234000), 0);
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq", "1000000");
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "1234000");
        assert_int_equal(cpufreq_restore(cf, 0), 0);
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "3000000");
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq", "2000000");
        cpufreq_close(cf);
        fake_tree_free();
}

/* libcpupower says -ENODEV for every failed write; the error names the file and why. */
static void refused_write_says_which_file_and_why(void **state)
{
        struct cpufreq *cf;
        char why[256];

        tree(false, false);
        fake_make_readonly("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq");
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), 0);
        assert_int_equal(cpufreq_set(cf, 0, 1234000), -EROFS);
        assert_non_null(strstr(cpufreq_error(cf), "cannot cap cpu0 at 1234000 kHz "
                                                  "(scaling_max_freq): /sys/devices/system/cpu/"
                                                  "cpu0/cpufreq/scaling_max_freq: Read-only"));
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "3000000");
        cpufreq_close(cf);
        fake_tree_free();

        tree(true, true);
        assert_int_equal(unlink("/sys/devices/system/cpu/cpu2/cpufreq/scaling_setspeed"), 0);
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), 0);
        assert_int_equal(cpufreq_set(cf, 1, 1400000), -ENOENT);
        assert_non_null(strstr(cpufreq_error(cf), "cannot set cpu2 to 1400000 kHz (userspace "
                                                  "governor): /sys/devices/system/cpu/cpu2/"
                                                  "cpufreq/scaling_setspeed: No such file"));
        cpufreq_close(cf); /* the governor goes back to schedutil */
        fake_assert_reads("/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "schedutil");
        fake_tree_free();
}

/* The real actuator gives one domain back while it stays open (its last app left): the
 * original governor and limits are written back and the record forgets the domain; the other
 * domain, still in use, keeps its frequency. */
static void actuator_gives_one_domain_back(void **state)
{
        struct actuator_config cfg = {.mode = CPUSET_AFFINITY, .dvfs = true};
        struct actuator *a;
        char why[256], dir[512], path[600];

        tree(true, true);
        snprintf(dir, sizeof(dir), "%s/state", fake_root);
        cfg.state_dir = dir;
        snprintf(path, sizeof(path), "%s/" STATE_RECORD_FILE, dir);
        if (actuator_open(&actuator_real_ops, &cfg, &a, why, sizeof(why)) != 0)
                fail_msg("actuator_open: %s", why);
        assert_true(a->can_set_freq);
        assert_int_equal(a->ops->restore_freq(a, 1), 0); /* never changed: nothing to do */
        assert_int_equal(a->ops->set_freq(a, 0, 1000000), 0);
        assert_int_equal(a->ops->set_freq(a, 1, 1400000), 0);
        fake_assert_reads("/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "userspace");
        assert_int_equal(a->ops->restore_freq(a, 1), 0);
        fake_assert_reads("/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "schedutil");
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "userspace");
        assert_int_equal(a->domains[1].cur_khz, 0); /* unknown until set again */
        assert_int_equal(a->domains[0].cur_khz, 1000000);
        {
                FILE *f = fopen(path, "r");
                char text[1024] = "";

                assert_non_null(f);
                assert_true(fread(text, 1, sizeof(text) - 1, f) > 0);
                fclose(f);
                assert_non_null(strstr(text, "/cpu0/cpufreq"));
                assert_null(strstr(text, "/cpu2/cpufreq"));
        }
        actuator_close(a);
        fake_assert_reads("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil");
        assert_int_equal(access(path, F_OK), -1);
        fake_tree_free();
}

/* A policy whose hardware limits cannot be read is named, with the file. */
static void unreadable_limits_say_which_file(void **state)
{
        struct cpufreq *cf;
        char why[256];

        tree(true, true);
        assert_int_equal(unlink("/sys/devices/system/cpu/cpu2/cpufreq/cpuinfo_max_freq"), 0);
        assert_int_equal(cpufreq_open(NULL, &cf, why, sizeof(why)), -ENOENT);
        assert_non_null(strstr(why, "cpufreq: cannot read the policy of cpu2: /sys/devices/system/"
                                    "cpu/cpu2/cpufreq/cpuinfo_max_freq: No such file"));
        fake_tree_free();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(domains_from_related_cpus),
    cmocka_unit_test(userspace_path_and_restore),
    cmocka_unit_test(max_freq_cap_without_userspace),
    cmocka_unit_test(bad_requests_change_nothing),
    cmocka_unit_test(no_cpufreq_says_why),
    cmocka_unit_test(recover_restores_governor_and_limits),
    cmocka_unit_test(calibrate_recovers_a_crashed_calibrate),
    cmocka_unit_test(cap_below_floor_lowers_it_then_restores),
    cmocka_unit_test(refused_write_says_which_file_and_why),
    cmocka_unit_test(unreadable_limits_say_which_file),
    cmocka_unit_test(actuator_gives_one_domain_back),
};

int main(int argc, char **argv)
{
        /* Before any case: the mounts each case makes stay in this process. */
        fake_ns_enter();
        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
