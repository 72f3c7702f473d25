/* The line a Slurm job step ends with on each node (the SPANK plugin prints it): what pctld
 * reported of the step's tasks there, summed — energy, EDP, P̂, and the cores and clock they
 * ended at, and the packages where they ended on two or more. Pure: pctld's report objects
 * in, text out. */
#pragma once

#include <stddef.h>

#include "pctl/cpumask.h"

struct json_object;

struct step_report {
        unsigned n_tasks;          /* reports added */
        unsigned n_energy;         /* of which with a known energy */
        double energy_j;           /* the sum over those */
        char energy_source[16];    /* "measured", "declared", ...: the first task's */
        double managed_s;          /* the longest a task was managed */
        unsigned n_p;              /* tasks with a P̂ */
        double p_sum;              /* the sum of their P̂ */
        double p_conf;             /* ± of the only task's P̂, NaN when unknown or several */
        unsigned n_cores;          /* tasks whose last configuration is known */
        unsigned cores;            /* the sum of their last core counts */
        unsigned min_mhz, max_mhz; /* the range of the last clocks known, 0 for none */
        struct cpumask pkgs;       /* the packages the last configurations' CPUs lay on */
        unsigned n_pkgs_unknown;   /* last configurations whose packages pctld did not know */
        char policy[64];           /* the first task's, printable */
};

void step_report_init(struct step_report *s);
/* Adds pctld's report on one task (the reply to {"cmd":"report"}). Members that are null or
 * absent are unknown, and the line says so. -EINVAL when report is not an object. */
int step_report_add(struct step_report *s, struct json_object *report);
/* The summary without the "pctl: job J on NODE: " prefix, in one line, unknown figures as
 * "unknown". Truncated to size, always terminated. */
void step_report_format(const struct step_report *s, char *buf, size_t size);
