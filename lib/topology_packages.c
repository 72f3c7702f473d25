/* Sets of package ids as reports carry them (include/pctl/topology.h): as text, and back from
 * a report's JSON. Apart from the rest of the topology, which reads sysfs, so that the Slurm
 * plugin can link them with cpumask.c alone. */
#include "pctl/topology.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

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
