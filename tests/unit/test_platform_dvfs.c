/* Whether pctld changes CPU frequencies: another frequency manager found among the processes
 * (a made-up list, and a real process named "tuned" found in /proc), and the choice made from
 * the config's dvfs, the actuator and that finding. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/config.h"
#include "pctl/fsio.h"
#include "pctl/platform.h"
#include "pctl/util.h"

static void finds_managers_by_name(void **state)
{
        const struct platform_proc none[] = {
            {1, "systemd"}, {2, "tunedx"}, {3, "power-profiles"}, {4, "bash"}};
        const struct platform_proc ppd[] = {{1, "systemd"}, {812, "power-profiles-"}};
        const struct platform_proc tuned[] = {{1, "systemd"}, {77, "tuned"}};
        char which[64] = "";

        assert_false(platform_freq_manager_in(none, ARRAY_SIZE(none), which, sizeof(which)));
        assert_true(platform_freq_manager_in(ppd, ARRAY_SIZE(ppd), which, sizeof(which)));
        assert_string_equal(which, "power-profiles- (pid 812)");
        assert_true(platform_freq_manager_in(tuned, ARRAY_SIZE(tuned), which, sizeof(which)));
        assert_string_equal(which, "tuned (pid 77)");
}

/* A real process whose comm is "tuned" is found by listing /proc. */
static void finds_a_running_manager_in_proc(void **state)
{
        struct platform pf = {0};
        static struct platform_proc procs[8192];
        char which[64], want[64], comm[32] = "";
        int n, found = -1;
        pid_t child;

        assert_int_equal(fs_set_root(NULL), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                prctl(PR_SET_NAME, "tuned");
                pause();
                _exit(0);
        }
        /* Until the child has renamed itself: 10 s, for a loaded machine. */
        for (uint64_t end = now_ns() + 10 * NSEC_PER_SEC;
             now_ns() < end && strcmp(comm, "tuned") != 0;) {
                char path[64];
                FILE *f;

                snprintf(path, sizeof(path), "/proc/%d/comm", (int)child);
                f = fopen(path, "r");
                if (f) {
                        if (fscanf(f, "%31s", comm) != 1)
                                comm[0] = '\0';
                        fclose(f);
                }
                usleep(5000);
        }
        n = platform_list_procs(&pf, procs, ARRAY_SIZE(procs));
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        assert_true(n > 0);
        for (int i = 0; i < n; i++)
                if (procs[i].pid == child)
                        found = i;
        assert_true(found >= 0);
        assert_true(platform_freq_manager_in(&procs[found], 1, which, sizeof(which)));
        snprintf(want, sizeof(want), "tuned (pid %d)", (int)child);
        assert_string_equal(which, want);
}

static void dvfs_choice_follows_config_actuator_and_others(void **state)
{
        const char *conf = "/etc/pctl/pctl.conf";
        char why[512];

        assert_true(platform_dvfs_choice(CONFIG_DVFS_AUTO, true, "", NULL, conf, why, sizeof(why)));
        assert_string_equal(why, "");
        assert_false(platform_dvfs_choice(CONFIG_DVFS_AUTO, true, "", "tuned (pid 77)", conf, why,
                                          sizeof(why)));
        assert_string_equal(why, "tuned (pid 77) manages CPU frequencies; set dvfs = on in "
                                 "/etc/pctl/pctl.conf to take over");
        /* dvfs = on takes over. */
        assert_true(platform_dvfs_choice(CONFIG_DVFS_ON, true, "", "tuned (pid 77)", conf, why,
                                         sizeof(why)));
        assert_false(platform_dvfs_choice(CONFIG_DVFS_OFF, true, "", NULL, conf, why, sizeof(why)));
        assert_string_equal(why, "dvfs = off in /etc/pctl/pctl.conf");
        assert_false(platform_dvfs_choice(CONFIG_DVFS_ON, false, "cpufreq: no frequency domain",
                                          NULL, conf, why, sizeof(why)));
        assert_string_equal(why, "cpufreq: no frequency domain");
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(finds_managers_by_name),
    cmocka_unit_test(finds_a_running_manager_in_proc),
    cmocka_unit_test(dvfs_choice_follows_config_actuator_and_others),
};

PCTL_TEST_MAIN(tests)
