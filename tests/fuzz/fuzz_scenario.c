/* Scenario files of the model machine (sim/scenario.c): sim_load_string, then a few steps of
 * virtual time, which use every number the parser let through (cpus, frequencies, phases,
 * measured rows) to build counters and energy. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "pctl/sim.h"

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
        /* Ten 100 ms steps: apps start, run and finish; bounded so one input stays fast. */
        for (int i = 0; i < 10 && !sim_done(m); i++)
                if (sim_step(m, 100000000) < 0)
                        break;
        for (unsigned a = 0; a < info.n_apps; a++) {
                struct sim_app_truth t;

                (void)sim_truth_app(m, a, &t);
        }
        (void)sim_truth_energy_j(m);
        sim_free(m);
        fuzz_check_fds(fds);
        return 0;
}
