/* The topology as pctl reports it: `pctl sensors` and pctld's status show the packages the
 * kernel gave, so that a machine whose sockets the allocator does not see is noticed. */
#include "pctl/textfmt.h"
#include "pctl/topology.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pctl/jsonfmt.h"

unsigned topology_packages_present(const struct topology *t)
{
        unsigned n = 0;

        for (unsigned p = 0; p < t->n_packages; p++) {
                struct cpumask cpus;

                topology_package_cpus(t, (int)p, &cpus);
                n += !cpumask_empty(&cpus);
        }
        return n;
}

struct json_object *topology_json(const struct topology *t)
{
        struct json_object *j = json_object_new_object(), *pk = json_object_new_array();
        char list[CPUMASK_LIST_MAX];

        cpumask_format(&t->online, list, sizeof(list));
        json_object_object_add(j, "cpus", jsonfmt_string(list));
        json_object_object_add(j, "n_cpus", json_object_new_uint64(cpumask_count(&t->online)));
        json_object_object_add(j, "n_packages",
                               json_object_new_uint64(topology_packages_present(t)));
        for (unsigned p = 0; p < t->n_packages; p++) {
                struct json_object *o;
                struct cpumask cpus;

                topology_package_cpus(t, (int)p, &cpus);
                if (cpumask_empty(&cpus))
                        continue; /* ids need not be dense */
                cpumask_format(&cpus, list, sizeof(list));
                o = json_object_new_object();
                json_object_object_add(o, "package", json_object_new_uint64(p));
                json_object_object_add(o, "cpus", jsonfmt_string(list));
                json_object_array_add(pk, o);
        }
        json_object_object_add(j, "packages", pk);
        return j;
}

int topology_describe(const struct topology *t, char *buf, size_t size)
{
        char list[CPUMASK_LIST_MAX], text[4096];
        const char *sep = ":";
        unsigned n_pk = topology_packages_present(t);
        size_t len;
        int n;

        cpumask_format(&t->online, list, sizeof(list));
        n = snprintf(text, sizeof(text), "%u CPU%s (%s) in %u package%s", cpumask_count(&t->online),
                     plural_s(cpumask_count(&t->online)), list, n_pk, plural_s(n_pk));
        if (n < 0 || (size_t)n >= sizeof(text))
                return -ENOBUFS;
        len = (size_t)n;
        for (unsigned p = 0; p < t->n_packages; p++) {
                struct cpumask cpus;

                topology_package_cpus(t, (int)p, &cpus);
                if (cpumask_empty(&cpus))
                        continue;
                cpumask_format(&cpus, list, sizeof(list));
                n = snprintf(text + len, sizeof(text) - len, "%s package %u: %s", sep, p, list);
                if (n < 0 || (size_t)n >= sizeof(text) - len)
                        return -ENOBUFS;
                len += (size_t)n;
                sep = ";";
        }
        if (len >= size)
                return -ENOBUFS;
        memcpy(buf, text, len + 1);
        return 0;
}
