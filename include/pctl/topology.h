/* Which CPUs exist, and how they group into packages. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pctl/cpumask.h"

struct topology_cpu {
        int package; /* physical_package_id; -1 if unknown */
};

struct topology {
        unsigned n_cpus;     /* highest CPU number + 1 */
        unsigned n_packages; /* highest package id + 1 */
        struct cpumask online;
        /* Online CPUs whose package sysfs did not give (no physical_package_id, or -1):
         * placed as package 0, but no report says which package they are on. */
        struct cpumask package_unread;
        struct topology_cpu *cpu; /* n_cpus entries */
};

/* From /sys/devices/system/cpu under the fs root. Returns 0 or -errno. */
int topology_read(struct topology *t);
/* A made-up machine: CPUs numbered package by package, SMT siblings last (as Linux does). */
int topology_synthetic(struct topology *t, unsigned sockets, unsigned cores_per_socket,
                       unsigned threads_per_core);
void topology_free(struct topology *t);
/* The online CPUs of one package. */
void topology_package_cpus(const struct topology *t, int package, struct cpumask *out);

/* The packages the CPUs of `cpus` lie on, as a set of package ids in *out (bit k: package
 * k), and how many there are: a fact of the machine, whatever placed them. -ENODATA when
 * one of them is not an online CPU of t whose package was read (then no one can say where it
 * lies). *out is written only on success. */
int topology_packages_of(const struct topology *t, const struct cpumask *cpus, struct cpumask *out);
/* Packages that hold an online CPU (ids need not be dense). */
unsigned topology_packages_present(const struct topology *t);
struct json_object;
/* {"cpus": "0-3", "n_cpus": 4, "n_packages": 2, "packages": [{"package": 0, "cpus": "0-1"}, ...]}
 */
struct json_object *topology_json(const struct topology *t);
/* "4 CPUs (0-3) in 2 packages: package 0: 0-1; package 1: 2-3". Returns 0 or -ENOBUFS. */
int topology_describe(const struct topology *t, char *buf, size_t size);
/* A set of package ids as topology_packages_of gives it, as text: "0,1", "0-3", "0,2,4-7"
 * (runs of three or more as ranges). Returns 0 or -ENOBUFS (buf untouched). */
int topology_format_packages(const struct cpumask *pkgs, char *buf, size_t size);
/* The other way from a report: a JSON array of package ids as pctld's reports give them
 * ([0, 1]) into a set, and how many there are. -EINVAL where arr is anything else (NULL for
 * JSON null, another type, an id that is not an integer, negative or >= CPUMASK_MAX); *out is
 * written only on success. */
int topology_packages_from_json(struct json_object *arr, struct cpumask *out);
