/* The control socket's request reader (pctld(8)): control_request_parse, which takes the bytes
 * of one request line from anyone who can connect, then the typed member lookups the command
 * handlers make. A refusal must say why without quoting raw bytes; an accepted request must
 * have a command. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pctl/control.h"
#include "pctl/manager.h"

static void check_printable(const char *s)
{
        for (; *s; s++)
                if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        int mark = fuzz_fds_mark();
        struct control_request req = {0};
        char err[256] = "", error[256];
        const char *policy, *job;
        int64_t pid;
        int r = control_request_parse((const char *)data, size, &req, err, sizeof(err));

        if (r == 0) {
                if (!req.cmd || !req.msg)
                        abort();
                /* What cmd_adopt and cmd_release ask of a request. */
                error[0] = '\0';
                r = control_request_int(&req, "pid", 1, 4194304, &pid, error, sizeof(error));
                if (r == 0 && (pid < 1 || pid > 4194304))
                        abort();
                if (r < 0 && r != -ENOENT && !error[0])
                        abort();
                check_printable(error);
                error[0] = '\0';
                r = control_request_string(&req, "policy", &policy, error, sizeof(error));
                if (r == 0 && (!policy || strlen(policy) > CONTROL_MAX_REQUEST))
                        abort();
                if (r < 0 && r != -ENOENT && !error[0])
                        abort();
                check_printable(error);
                /* cmd_adopt's "job" tag: a valid one is short and printable. */
                error[0] = '\0';
                r = control_request_string(&req, "job", &job, error, sizeof(error));
                if (r == 0 && manager_job_valid(job) && strlen(job) > MANAGER_JOB_MAX)
                        abort();
                if (r < 0 && r != -ENOENT && !error[0])
                        abort();
                check_printable(error);
        } else {
                if ((r != -EINVAL && r != -EMSGSIZE) || !err[0])
                        abort();
                check_printable(err);
        }
        control_request_free(&req);
        fuzz_check_fds(mark);
        return 0;
}
