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

/* Packages that hold an online CPU (ids need not be dense). */
unsigned topology_packages_present(const struct topology *t);
struct json_object;
/* {"cpus": "0-3", "n_cpus": 4, "n_packages": 2, "packages": [{"package": 0, "cpus": "0-1"}, ...]}
 */
struct json_object *topology_json(const struct topology *t);
/* "4 CPUs (0-3) in 2 packages: package 0: 0-1; package 1: 2-3". Returns 0 or -ENOBUFS. */
int topology_describe(const struct topology *t, char *buf, size_t size);
