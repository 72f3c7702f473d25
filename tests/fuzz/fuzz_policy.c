/* Policy files (pctl-policy(5)): policy_set_load_file, the loader of `pctl policy check` and
 * of every file in policies.d, which only takes a path. A loaded set is then matched against a
 * process and looked up by each name, as pctld does with it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const struct proc_identity id = {
            .pid = 4242,
            .comm = "pbench",
            .exe = "/usr/local/bin/pbench",
            .uid = 1000,
            .user = "alice",
            .cgroup = "/user.slice/user-1000.slice/session-1.scope",
        };
        struct config_problems problems = {};
        struct policy_set set = {.v = (struct policy *)&id, .n = 7};
        const char *path = fuzz_file(data, size);
        int fds = fuzz_fds_mark();
        int r;

        if (!path)
                abort();
        r = policy_set_load_file(path, &set, &problems);
        if (r == -EINVAL) {
                /* Refused: every problem is listed and the caller's set is left alone. */
                if (problems.n == 0 || set.v != (struct policy *)&id || set.n != 7)
                        abort();
        } else if (r == 0) {
                if (problems.n != 0)
                        abort();
                (void)policy_match(&set, &id);
                for (size_t i = 0; i < set.n; i++)
                        if (policy_lookup(&set, set.v[i].name) != &set.v[i])
                                abort();
                policy_set_free(&set);
        } else {
                abort();
        }
        config_problems_clear(&problems);
        fuzz_check_fds(fds);
        return 0;
}
