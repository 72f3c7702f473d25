/* Who may make pctld act (policies/access.c): the [daemon] users judgement, the Uid line of
 * /proc/PID/status, and the owner check against real processes. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl_test.h"
#include "pctl/access.h"

static void users_setting_decides(void **state)
{
        const gid_t groups[] = {10, 27};
        struct access_peer nobody = {.uid = 65534, .gid = 65534, .groups = groups, .n_groups = 2};
        struct access_peer root = {.uid = 0, .gid = 0};
        char why[256] = "";

        assert_int_equal(access_may_act("none", (gid_t)-1, &root, "adopt", why, sizeof(why)), 0);
        assert_int_equal(access_may_act("none", (gid_t)-1, &nobody, "adopt", why, sizeof(why)),
                         -EPERM);
        assert_non_null(strstr(why, "users = none"));
        assert_non_null(strstr(why, "uid 65534"));
        assert_int_equal(access_may_act("all", (gid_t)-1, &nobody, "adopt", why, sizeof(why)), 0);
        /* A supplementary group, the primary group, neither, and a group that does not exist. */
        assert_int_equal(access_may_act("wheel", 27, &nobody, "adopt", why, sizeof(why)), 0);
        assert_int_equal(access_may_act("nogroup", 65534, &nobody, "adopt", why, sizeof(why)), 0);
        assert_int_equal(access_may_act("adm", 4, &nobody, "release", why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "'release' needs root or group adm"));
        assert_int_equal(access_may_act("ghost", (gid_t)-1, &nobody, "adopt", why, sizeof(why)),
                         -EPERM);
        assert_non_null(strstr(why, "names no group"));

        assert_true(access_user_allowed("none", (gid_t)-1, 0, NULL, 0));
        assert_false(access_user_allowed("none", (gid_t)-1, 1000, NULL, 0));
        assert_true(access_user_allowed("all", (gid_t)-1, 1000, NULL, 0));
        assert_true(access_user_allowed("wheel", 27, 1000, groups, 2));
        assert_false(access_user_allowed("adm", 4, 1000, groups, 2));
}

static void status_ids_parsed_strictly(void **state)
{
        const char ok[] =
            "Name:\tsleep\nUmask:\t0022\nUid:\t1000\t1000\t0\t1000\nGid:\t5\t5\t5\t5\n";
        static const char *const bad[] = {
            "Uid:\t1\t2\t3\n",              /* three */
            "Uid:\t1\t2\t3\t4\t5\n",        /* five */
            "Uid:\t1\t2\tx\t4\n",           /* not a number */
            "Uid:\t1\t2\t-3\t4\n",          /* negative */
            "Uid:\t1\t2\t3\t99999999999\n", /* past 32 bits */
            "Uid:\t1\t2\t3\t4294967295\n",  /* (uid_t)-1 is no one */
            "Uid:\t\t\t\t\n",               /* empty */
        };
        unsigned ids[4] = {9, 9, 9, 9};

        assert_int_equal(proc_status_ids(ok, strlen(ok), "Uid", ids), 0);
        assert_int_equal(ids[0], 1000);
        assert_int_equal(ids[2], 0);
        assert_int_equal(proc_status_ids(ok, strlen(ok), "Gid", ids), 0);
        assert_int_equal(ids[3], 5);
        /* A key is whole, at a line's start; a line without it is absent. */
        assert_int_equal(proc_status_ids("XUid:\t1\t1\t1\t1\n", 15, "Uid", ids), -ENODATA);
        assert_int_equal(proc_status_ids("Uids:\t1\t1\t1\t1\n", 15, "Uid", ids), -ENODATA);
        assert_int_equal(proc_status_ids("", 0, "Uid", ids), -ENODATA);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ids[0] = 7;
                assert_int_equal(proc_status_ids(bad[i], strlen(bad[i]), "Uid", ids), -EINVAL);
                assert_int_equal(ids[0], 7); /* written only on success */
        }
        /* Not NUL-terminated: the length bounds the scan. */
        assert_int_equal(proc_status_ids("Uid:\t1\t1\t1\t1", 12, "Uid", ids), 0);
        assert_int_equal(proc_status_ids("Uid:\t1\t1\t1\t1", 11, "Uid", ids), -EINVAL);
}

static void owner_of_real_processes(void **state)
{
        char why[256];

        assert_int_equal(access_check_owner(getpid(), getuid(), why, sizeof(why)), 0);
        assert_int_equal(access_check_owner(getpid(), getuid() + 1, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "is not yours"));
        assert_int_equal(access_check_owner(4194304 + 1, getuid(), why, sizeof(why)), -ESRCH);
}

static void groups_line(void **state)
{
        const char text[] = "Gid:\t5\t5\t5\t5\nGroups:\t4 24 27 \nNSpid:\t1\n";
        gid_t g[8];

        assert_int_equal(proc_status_groups(text, strlen(text), g, 8), 3);
        assert_int_equal(g[2], 27);
        assert_int_equal(proc_status_groups(text, strlen(text), g, 2), 2);
        assert_int_equal(proc_status_groups("Groups:\t\n", 9, g, 8), 0);
        assert_int_equal(proc_status_groups("Gid:\t1\t1\t1\t1\n", 13, g, 8), 0);
        assert_int_equal(proc_status_groups("Groups:\t7 x 9\n", 14, g, 8), 1);
}

static void rules_take_only_their_users_within_caps(void **state)
{
        struct policy named = {.name = "p", .max_apps = 3}, open = {.name = "q", .max_apps = 3};
        struct proc_identity root = {.pid = 10, .uid = 0},
                             user = {.pid = 11, .uid = 1000, .gid = 1000, .n_groups = 1};
        char *pattern = (char *)"nobody";
        char why[256];

        user.groups[0] = 27;
        named.match[POLICY_MATCH_USER] = (struct policy_patterns){.v = &pattern, .n = 1};
        /* No match_user: root's, and the users [daemon] users lets in. */
        assert_int_equal(
            access_rule_admits(&open, &root, "none", (gid_t)-1, 0, 0, 64, why, sizeof(why)), 0);
        assert_int_equal(
            access_rule_admits(&open, &user, "none", (gid_t)-1, 0, 0, 64, why, sizeof(why)),
            -EPERM);
        assert_non_null(strstr(why, "uid 1000 is not root"));
        assert_int_equal(
            access_rule_admits(&open, &user, "all", (gid_t)-1, 0, 0, 64, why, sizeof(why)), 0);
        assert_int_equal(access_rule_admits(&open, &user, "wheel", 27, 0, 0, 64, why, sizeof(why)),
                         0);
        assert_int_equal(
            access_rule_admits(&open, &user, "users", 1000, 0, 0, 64, why, sizeof(why)),
            0); /* the primary group */
        assert_int_equal(access_rule_admits(&open, &user, "adm", 4, 0, 0, 64, why, sizeof(why)),
                         -EPERM);
        /* A rule that names users was written for them (policy_match judged the name). */
        assert_int_equal(
            access_rule_admits(&named, &user, "none", (gid_t)-1, 0, 0, 64, why, sizeof(why)), 0);
        /* The caps: the policy's, then every rule's. */
        assert_int_equal(
            access_rule_admits(&named, &user, "none", (gid_t)-1, 3, 3, 64, why, sizeof(why)),
            -EUSERS);
        assert_non_null(strstr(why, "its max_apps"));
        assert_int_equal(
            access_rule_admits(&named, &user, "none", (gid_t)-1, 2, 64, 64, why, sizeof(why)),
            -EUSERS);
        assert_non_null(strstr(why, "max_rule_apps"));
        open.max_apps = 0;
        assert_int_equal(
            access_rule_admits(&open, &root, "all", (gid_t)-1, 0, 0, 64, why, sizeof(why)),
            -EUSERS);
}

static void users_hand_over_within_their_cap(void **state)
{
        char why[256] = "";

        (void)state;
        assert_int_equal(access_user_admits(1000, 0, 16, why, sizeof(why)), 0);
        assert_int_equal(access_user_admits(1000, 15, 16, why, sizeof(why)), 0);
        assert_string_equal(why, ""); /* written only on a refusal */
        assert_int_equal(access_user_admits(1000, 16, 16, why, sizeof(why)), -EUSERS);
        assert_non_null(strstr(why, "uid 1000 has 16 apps"));
        assert_non_null(strstr(why, "[daemon] max_user_apps (16)"));
        /* 0: users hand over nothing; UINT_MAX: root's requests, never capped. */
        assert_int_equal(access_user_admits(1000, 0, 0, why, sizeof(why)), -EUSERS);
        assert_int_equal(access_user_admits(0, 100000, UINT_MAX, why, sizeof(why)), 0);
}

static void real_uid_of_a_process(void **state)
{
        uid_t uid = 12345;

        (void)state;
        assert_int_equal(access_proc_uid(getpid(), &uid), 0);
        assert_int_equal(uid, getuid());
        uid = 12345;
        /* Past PID_MAX_LIMIT: no such process, and the output untouched. */
        assert_int_equal(access_proc_uid(4194305, &uid), -ESRCH);
        assert_int_equal(uid, 12345);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(users_hand_over_within_their_cap),
    cmocka_unit_test(real_uid_of_a_process),
    cmocka_unit_test(groups_line),
    cmocka_unit_test(rules_take_only_their_users_within_caps),
    cmocka_unit_test(users_setting_decides),
    cmocka_unit_test(status_ids_parsed_strictly),
    cmocka_unit_test(owner_of_real_processes),
};
PCTL_TEST_MAIN(tests)
