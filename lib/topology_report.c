/* The topology as pctl reports it: `pctl sensors` and pctld's status show the packages the
 * kernel gave, so that a machine whose sockets the allocator does not see is noticed. */
#include "pctl/topology.h"

#include <errno.h>
#include <json-c/json.h>
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
        n = snprintf(text, sizeof(text), "%u CPUs (%s) in %u package%s", cpumask_count(&t->online),
                     list, n_pk, n_pk == 1 ? "" : "s");
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

int topology_format_packages(const struct cpumask *pkgs, char *buf, size_t size)
{
        char text[CPUMASK_LIST_MAX];
        size_t len = 0;

        cpumask_foreach (p, pkgs) {
                int last = p, n;

                /* A run of three or more reads better as a range; two stay "0,1". */
                while (cpumask_test(pkgs, (unsigned)last + 1))
                        last++;
                if (last - p >= 2)
                        n = snprintf(text + len, sizeof(text) - len, "%s%d-%d", len ? "," : "", p,
                                     last);
                else if (last > p)
                        n = snprintf(text + len, sizeof(text) - len, "%s%d,%d", len ? "," : "", p,
                                     last);
                else
                        n = snprintf(text + len, sizeof(text) - len, "%s%d", len ? "," : "", p);
                if (n < 0 || (size_t)n >= sizeof(text) - len)
                        return -ENOBUFS;
                len += (size_t)n;
                p = last; /* the loop goes on after the run */
        }
        if (len >= size)
                return -ENOBUFS;
        memcpy(buf, text, len + 1);
        return 0;
}

int topology_packages_from_json(struct json_object *arr, struct cpumask *out)
{
        struct cpumask pkgs;
        size_t n;

        if (!arr || !json_object_is_type(arr, json_type_array))
                return -EINVAL;
        n = json_object_array_length(arr);
        cpumask_zero(&pkgs);
        for (size_t k = 0; k < n; k++) {
                struct json_object *v = json_object_array_get_idx(arr, k);
                int64_t p;

                if (!json_object_is_type(v, json_type_int))
                        return -EINVAL;
                p = json_object_get_int64(v);
                if (p < 0 || p >= CPUMASK_MAX)
                        return -EINVAL;
                cpumask_set(&pkgs, (unsigned)p);
        }
        *out = pkgs;
        return (int)cpumask_count(&pkgs);
}
