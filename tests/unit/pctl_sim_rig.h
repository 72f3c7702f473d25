/* The estimator on the model machine, driven only through the machine's sensor and actuator
 * ops as pctld drives a real one: a scenario loaded from text, its first app (SIM_PID_BASE)
 * adopted, an estimator with that app as id 1, and the baseline read. Free of cmocka so that
 * benchmarks use it too; the unit tests' failing wrapper is in pctl_test_sim.h. */
#pragma once

#include <stdio.h>

#include "pctl/actuator.h"
#include "pctl/estimator.h"
#include "pctl/sensor.h"
#include "pctl/sim.h"

#define SIM_RIG_STEP_NS 100000000ull /* 100 ms of virtual time per interval */

struct sim_rig {
        struct sim_machine *m;
        struct sim_machine_info info;
        unsigned top_khz; /* the machine's top frequency */
        struct sensor *sensor;
        struct actuator *act;
        struct actuator_app *app;
        struct estimator *est;
        struct sensor_sample s; /* the last sensor read */
        /* What failed, after sim_rig_open returned -1: a step, or the scenario's errors. */
        char err[sizeof((struct sim_error){0}.all) + 32];
};

static inline void sim_rig_close(struct sim_rig *r)
{
        estimator_free(r->est);
        sensor_sample_free(&r->s);
        if (r->app)
                r->act->ops->release(r->act, r->app);
        actuator_close(r->act);
        sensor_close(r->sensor);
        sim_free(r->m);
        r->est = NULL;
        r->app = NULL;
        r->act = NULL;
        r->sensor = NULL;
        r->m = NULL;
}

/* Opens the rig on scenario (`name` stands for its file in the machine's messages), adopts
 * the first app under comm, and reads the baseline. Returns 0, or -1 with r->err saying
 * which step failed and nothing left open. */
static inline int sim_rig_open(struct sim_rig *r, const char *scenario, const char *name,
                               const char *comm, const struct estimator_config *cfg)
{
        struct sim_error serr;

        *r = (struct sim_rig){0};
        if (sim_load_string(scenario, name, &r->m, &serr) < 0) {
                snprintf(r->err, sizeof(r->err), "scenario rejected: %s", serr.all);
                return -1;
        }
        sim_machine_info(r->m, &r->info);
        r->top_khz = r->info.freqs_mhz[r->info.n_freqs - 1] * 1000;
        if (sensor_open(&sim_sensor_ops, &(struct sensor_config){.machine = r->m}, &r->sensor) != 0)
                snprintf(r->err, sizeof(r->err), "the sim sensor did not open");
        else if (actuator_open(&sim_actuator_ops, &(struct actuator_config){.machine = r->m},
                               &r->act, NULL, 0) != 0)
                snprintf(r->err, sizeof(r->err), "the sim actuator did not open");
        else if (r->act->ops->adopt(r->act, SIM_PID_BASE, comm, &r->app) != 0)
                snprintf(r->err, sizeof(r->err), "adopting pid %d refused", SIM_PID_BASE);
        else if (!(r->est = estimator_new(cfg)))
                snprintf(r->err, sizeof(r->err), "estimator_new failed");
        else if (estimator_app_add(r->est, 1) != 0)
                snprintf(r->err, sizeof(r->err), "estimator_app_add failed");
        else if (sensor_read(r->sensor, &r->s) != 0) /* the baseline */
                snprintf(r->err, sizeof(r->err), "the baseline sensor read failed");
        else
                return 0;
        sim_rig_close(r);
        return -1;
}

/* Moves the app onto CPUs 0..n-1 and makes *v its view there (id 1, no target, the top
 * frequency). Returns the actuator's answer. */
static inline int sim_rig_set_cores(struct sim_rig *r, unsigned n, struct estimator_app_view *v)
{
        *v = (struct estimator_app_view){.id = 1, .target = -1, .freq_khz = r->top_khz};
        cpumask_zero(&v->cpus);
        for (unsigned c = 0; c < n; c++)
                cpumask_set(&v->cpus, c);
        return r->act->ops->set_cpus(r->act, r->app, &v->cpus);
}

/* One interval: the machine advanced SIM_RIG_STEP_NS, then the sensor read into r->s.
 * Returns 0, or the first failing call's answer. */
static inline int sim_rig_step(struct sim_rig *r)
{
        int rc = sim_step(r->m, SIM_RIG_STEP_NS);

        return rc != 0 ? rc : sensor_read(r->sensor, &r->s);
}
