/* Scenario files of the model machine (sim/scenario.c): sim_load_string, then a few steps of
 * virtual time, which use every number the parser let through (cpus, frequencies, phases,
 * measured rows, the stack's delimiters) to build counters, energy and thread states. */
#include <math.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "pctl/sim.h"
#include "pctl/threadstate.h"

/* The thread states of every app over the steps: no thread accounts for more than the
 * interval, and the truth of a stack adds up to its cores. */
static void check_stacks(struct sim_machine *m, struct threadstate *ts,
                         const struct sim_machine_info *info, const struct sim_stack_acc *from)
{
        struct threadstate_app *apps = calloc(info->n_apps ? info->n_apps : 1, sizeof(*apps));

        if (!apps || threadstate_sim_ops.read(ts, apps, info->n_apps) < 0)
                abort();
        for (unsigned a = 0; a < info->n_apps; a++) {
                struct sim_stack_acc to;
                struct stack st;
                double sum;

                for (unsigned j = 0; j < apps[a].n_threads; j++) {
                        uint64_t t = 0;

                        for (unsigned k = 0; k < THREAD_STATES; k++)
                                t += apps[a].threads[j].ns[k];
                        if (t > apps[a].interval_ns + 1000)
                                abort();
                }
                if (sim_truth_stack_acc(m, a, &to) < 0)
                        abort();
                sim_truth_stack(&from[a], &to, &st);
                sum = st.speedup;
                for (unsigned k = 0; st.known && k < STACK_COMPONENTS; k++) {
                        if (!(st.component[k] >= -1e-6 * st.cores))
                                abort();
                        sum += st.component[k];
                }
                if (st.known && !(fabs(sum - st.cores) <= 1e-6 * st.cores + 1e-9))
                        abort();
                free(apps[a].threads);
        }
        free(apps);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct sim_error err = {};
        struct sim_machine *m = NULL;
        struct sim_machine_info info;
        char *text = fuzz_text(data, size);
        int fds = fuzz_fds_mark();
        int r;

        if (!text)
                abort();
        r = sim_load_string(text, "fuzz.ini", &m, &err);
        free(text);
        if (r < 0) {
                /* A refused scenario says where and why. */
                if (err.n_errors == 0 || !err.what[0])
                        abort();
                fuzz_check_fds(fds);
                return 0;
        }
        sim_machine_info(m, &info);
        if (info.n_cpus == 0 || info.n_freqs == 0)
                abort();
        /* Thread states of every app while it runs, when the machine is small enough to
         * keep one input fast. */
        struct threadstate ts = {.ops = &threadstate_sim_ops};
        struct sim_stack_acc *from = calloc(info.n_apps ? info.n_apps : 1, sizeof(*from));
        pid_t *pids = calloc(info.n_apps ? info.n_apps : 1, sizeof(*pids));
        bool watch = info.n_cpus <= 256 && info.n_apps <= 16;

        if (!from || !pids)
                abort();
        for (unsigned a = 0; a < info.n_apps; a++) {
                pids[a] = SIM_PID_BASE + (pid_t)a;
                (void)sim_truth_stack_acc(m, a, &from[a]);
        }
        if (watch && (threadstate_sim_ops.open(&ts, m) < 0 ||
                      threadstate_sim_ops.set_pids(&ts, pids, info.n_apps) < 0))
                abort();
        /* Ten 100 ms steps: apps start, run and finish; bounded so one input stays fast. */
        for (int i = 0; i < 10 && !sim_done(m); i++)
                if (sim_step(m, 100000000) < 0)
                        break;
        if (watch) {
                check_stacks(m, &ts, &info, from);
                threadstate_sim_ops.close(&ts);
        }
        free(from);
        free(pids);
        for (unsigned a = 0; a < info.n_apps; a++) {
                struct sim_app_truth t;

                (void)sim_truth_app(m, a, &t);
        }
        (void)sim_truth_energy_j(m);
        sim_free(m);
        fuzz_check_fds(fds);
        return 0;
}
