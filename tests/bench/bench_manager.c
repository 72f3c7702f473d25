/* The daemon's own cost: the manager (sensor read, estimator, allocator, actuator calls)
 * managing 20 apps on the 64-core model machine at a 100 ms interval and 1 s decisions.
 * The model machine's own stepping is not counted: on real hardware the machine is free.
 * Figure: CPU time of the manager per second of (virtual) wall time, as % of one core.
 * Target: under 0.5%. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pctl/log.h"
#include "pctl/manager.h"
#include "pctl/platform.h"
#include "pctl/sim.h"
#include "pctl/util.h"

#define VIRTUAL_S 120
#define TARGET_PCT 0.5

static double cpu_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
        struct platform_options po = {.spec = "sim:" SRC_DIR "/tests/scenarios/server-20apps.ini",
                                      .actuator = {.dvfs = true}};
        struct manager_options mo = {.delta_i_rate = NAN};
        struct platform *pf;
        struct manager *m;
        char why[512];
        double spent = 0, t0;
        unsigned managed = 0;
        int r;

        log_set_max_level(LOG_WARNING);
        r = platform_open(&po, &pf, why, sizeof(why));
        if (r < 0) {
                fprintf(stderr, "bench_manager: %s\n", why);
                return 1;
        }
        config_init(&mo.conf);
        mo.platform = pf;
        mo.dvfs = pf->actuator->can_set_freq;
        if (manager_new(&mo, NULL, &m) < 0)
                return 1;
        for (unsigned i = 0; i < 20; i++) {
                char err[256];

                sim_step(pf->sim, 0);
                if (manager_adopt(m, SIM_PID_BASE + (pid_t)i, "edp", err, sizeof(err)) < 0) {
                        fprintf(stderr, "bench_manager: %s\n", err);
                        return 1;
                }
        }
        for (unsigned step = 1; step <= VIRTUAL_S * 10; step++) {
                platform_advance(pf, 100 * NSEC_PER_MSEC);
                t0 = cpu_s();
                manager_sample(m);
                if (step % 10 == 0)
                        manager_decide(m);
                spent += cpu_s() - t0;
                if (manager_n_apps(m) > managed)
                        managed = manager_n_apps(m);
        }
        printf("bench: pctld cost managing %u apps on 64 cores, 100 ms samples, 1 s decisions: "
               "%.3f%% of one core (%.0f us per interval; target < %.1f%%)\n",
               manager_n_apps(m), 100 * spent / VIRTUAL_S, 1e6 * spent / (VIRTUAL_S * 10),
               TARGET_PCT);
        manager_free(m);
        platform_close(pf);
        if (managed < 20) {
                printf("bench: FAILED: only %u of 20 apps were managed\n", managed);
                return 1;
        }
        return 100 * spent / VIRTUAL_S < TARGET_PCT ? 0 : 1;
}
