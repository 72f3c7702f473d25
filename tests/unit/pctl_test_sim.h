/* Shared by the unit tests that run pctld's manager on the model machine: a scenario written
 * to a temporary file, the sim platform opened on it, a manager with the default pctl.conf,
 * the machine stepped to its start and its first apps (SIM_PID_BASE, SIM_PID_BASE + 1, ...)
 * adopted under a policy. Include after pctl_test.h. */
#pragma once

#include <math.h>

#include "pctl/manager.h"
#include "pctl/sim.h"
#include "pctl/util.h"
#include "pctl_sim_rig.h"

struct sim_manager {
        char path[64]; /* the scenario's temporary file */
        char spec[80]; /* "sim:PATH" */
        struct platform *pf;
        struct manager *m;
};

/* Opens the model machine of scenario under a new manager given the power model `power` (as
 * pctl.conf's [power] when declared, else a calibration's; NULL: none) and adopts its first
 * n_apps apps under policy; fails the test on any refusal. */
static inline void sim_manager_open_power(struct sim_manager *f, const char *scenario,
                                          const char *policy, unsigned n_apps,
                                          const struct model_power *power)
{
        struct platform_options po = {.spec = f->spec};
        struct manager_options mo = {.delta_i_rate = NAN};
        char err[256];

        pctl_test_temp_file(f->path, sizeof(f->path), scenario);
        snprintf(f->spec, sizeof(f->spec), "sim:%s", f->path);
        if (platform_open(&po, &f->pf, err, sizeof(err)) != 0)
                fail_msg("platform_open(%s): %s", f->spec, err);
        config_init(&mo.conf);
        mo.platform = f->pf;
        if (power) {
                mo.have_power = true;
                mo.power = *power;
                mo.power_source = power->declared ? "declared" : "calibrated";
        }
        assert_int_equal(manager_new(&mo, NULL, &f->m), 0);
        sim_step(f->pf->sim, 0);
        for (unsigned i = 0; i < n_apps; i++)
                if (manager_adopt(f->m, SIM_PID_BASE + (pid_t)i, policy, err, sizeof(err)) != 0)
                        fail_msg("adopt %d under %s: %s", (int)(SIM_PID_BASE + (pid_t)i), policy,
                                 err);
}

/* The same without a power model. */
static inline void sim_manager_open(struct sim_manager *f, const char *scenario, const char *policy,
                                    unsigned n_apps)
{
        sim_manager_open_power(f, scenario, policy, n_apps, NULL);
}

/* One of pctld's ticks in virtual time: 100 ms on, a sample, and a decision every 10th. */
static inline void sim_manager_tick(struct sim_manager *f, unsigned step)
{
        platform_advance(f->pf, 100 * NSEC_PER_MSEC);
        manager_sample(f->m);
        if (step % 10 == 9)
                manager_decide(f->m);
}

static inline void sim_manager_close(struct sim_manager *f)
{
        manager_free(f->m);
        platform_close(f->pf);
        unlink(f->path);
}

/* The estimator-level rig of pctl_sim_rig.h, opened or the test failed with what refused. */
static inline void sim_rig_open_or_fail(struct sim_rig *r, const char *scenario, const char *name,
                                        const char *comm, const struct estimator_config *cfg)
{
        if (sim_rig_open(r, scenario, name, comm, cfg) != 0)
                fail_msg("model-machine rig on %s: %s", name, r->err);
}
