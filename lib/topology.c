#include "pctl/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/fsio.h"
#include "pctl/util.h"

static int topology_alloc(struct topology *t, unsigned n_cpus)
{
        *t = (struct topology){.n_cpus = n_cpus};
        t->cpu = calloc(n_cpus ? n_cpus : 1, sizeof(*t->cpu));
        if (!t->cpu)
                return -ENOMEM;
        return 0;
}

int topology_read(struct topology *t)
{
        char buf[CPUMASK_LIST_MAX], path[128];
        struct cpumask online;
        ssize_t n;
        int last, r;

        /* "online" lists the CPUs the kernel runs on; the others have no topology directory. */
        n = fs_read("/sys/devices/system/cpu/online", buf, sizeof(buf));
        if (n < 0)
                return (int)n;
        r = cpumask_parse(buf, &online);
        if (r < 0)
                return r;
        if (cpumask_empty(&online))
                return -ENODEV;
        last = -1;
        cpumask_foreach (c, &online)
                last = c;
        r = topology_alloc(t, (unsigned)last + 1);
        if (r < 0)
                return r;
        t->online = online;
        for (unsigned c = 0; c < t->n_cpus; c++)
                t->cpu[c] = (struct topology_cpu){.package = -1};
        cpumask_foreach (c, &online) {
                uint64_t v;

                snprintf(path, sizeof(path),
                         "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
                /* Placement needs a package for every CPU: an unreadable one is placed as
                 * package 0, and remembered as unread so that no report names it. */
                if (fs_read_u64(path, &v) == 0 && v < CPUMASK_MAX) {
                        t->cpu[c].package = (int)v;
                } else {
                        t->cpu[c].package = 0;
                        cpumask_set(&t->package_unread, (unsigned)c);
                }
                if ((unsigned)t->cpu[c].package + 1 > t->n_packages)
                        t->n_packages = (unsigned)t->cpu[c].package + 1;
        }
        return 0;
}

int topology_synthetic(struct topology *t, unsigned sockets, unsigned cores_per_socket,
                       unsigned threads_per_core)
{
        unsigned n = sockets * cores_per_socket * threads_per_core;
        int r;

        if (n == 0 || n > CPUMASK_MAX)
                return -EINVAL;
        r = topology_alloc(t, n);
        if (r < 0)
                return r;
        t->n_packages = sockets;
        for (unsigned c = 0; c < n; c++) {
                unsigned phys = c % (sockets * cores_per_socket);

                t->cpu[c].package = (int)(phys / cores_per_socket);
                cpumask_set(&t->online, c);
        }
        return 0;
}

void topology_free(struct topology *t)
{
        if (!t)
                return;
        free(t->cpu);
        t->cpu = NULL;
        t->n_cpus = 0;
}

int topology_packages_of(const struct topology *t, const struct cpumask *cpus, struct cpumask *out)
{
        struct cpumask pkgs;
        unsigned n = 0;

        cpumask_zero(&pkgs);
        cpumask_foreach (c, cpus) {
                int pkg;

                if ((unsigned)c >= t->n_cpus || !cpumask_test(&t->online, (unsigned)c) ||
                    cpumask_test(&t->package_unread, (unsigned)c))
                        return -ENODATA;
                pkg = t->cpu[c].package;
                if (pkg < 0 || pkg >= CPUMASK_MAX)
                        return -ENODATA;
                if (!cpumask_test(&pkgs, (unsigned)pkg)) {
                        cpumask_set(&pkgs, (unsigned)pkg);
                        n++;
                }
        }
        *out = pkgs;
        return (int)n;
}

void topology_package_cpus(const struct topology *t, int package, struct cpumask *out)
{
        cpumask_zero(out);
        cpumask_foreach (c, &t->online) {
                if (t->cpu[c].package == package)
                        cpumask_set(out, (unsigned)c);
        }
}
