/* Memory traffic where operators look: each package's traffic and bandwidth in `pctl status`
 * and /metrics, each app's bytes per instruction in `pctl status` (docs/cli.md, docs/fleet.md).
 * The figures are model/membw.c's and the sensor's; nothing here estimates. */
#include "manager_internal.h"

#include <math.h>
#include <string.h>

#include <json-c/json.h>

#include "pctl/jsonfmt.h"
#include "pctl/metrics.h"

_Static_assert(METRICS_MAX_PACKAGES >= SENSOR_MAX_PACKAGES, "every package fits the snapshot");

void memreport_sample(struct manager *m)
{
        const struct sensor_sample *s = &m->sample;
        double dt_s = s->interval_ns / 1e9;

        for (unsigned k = 0; k < SENSOR_MAX_PACKAGES; k++)
                m->mem.rate_gbs[k] = NAN;
        if (!s->mem_measured || !(dt_s > 0))
                return;
        for (unsigned k = 0; k < s->n_packages && k < SENSOR_MAX_PACKAGES; k++) {
                double b = s->mem_bytes[k];

                /* A backend never gives these; were one to, the counter must not go back. */
                if (!isfinite(b) || b < 0)
                        continue;
                m->mem.total_bytes[k] += b;
                m->mem.rate_gbs[k] = b * 1e-9 / dt_s;
                if (k >= m->mem.n_packages)
                        m->mem.n_packages = k + 1;
        }
}

/* Package k's bandwidth and what it is: "measured" there, "measured on another package" (the
 * packages of one machine have alike memory controllers, and k never served more), "lower
 * bound" (the most it served), or NULL with NaN: nothing steady seen yet. */
static const char *package_bandwidth(const struct manager *m, unsigned k, double *gbs)
{
        const struct membw_package *p = membw_package(m->bw, k);
        int r = membw_bandwidth(m->bw, k, gbs);

        if (r == 0)
                return "measured";
        if (r == 1)
                return "measured on another package";
        if (p && p->bound == MEMBW_BOUND_LOWER && isfinite(p->bandwidth_gbs)) {
                *gbs = p->bandwidth_gbs;
                return "lower bound";
        }
        *gbs = NAN;
        return NULL;
}

void memreport_status(const struct manager *m, struct json_object *j)
{
        bool measured = m->pf->sensor->has_mem_traffic;
        struct json_object *pkgs = NULL;

        json_object_object_add(j, "mem_traffic", json_object_new_boolean(measured));
        json_object_object_add(j, "mem_traffic_reason",
                               jsonfmt_string(measured ? NULL : m->pf->mem_why));
        if (measured) {
                pkgs = json_object_new_array();
                for (unsigned k = 0; k < m->mem.n_packages; k++) {
                        struct json_object *p = json_object_new_object();
                        double gbs;
                        const char *what = package_bandwidth(m, k, &gbs);

                        json_object_object_add(p, "package", json_object_new_uint64(k));
                        json_object_object_add(p, "mem_gbps", jsonfmt_double(m->mem.rate_gbs[k]));
                        json_object_object_add(p, "mem_bytes_total",
                                               jsonfmt_double(m->mem.total_bytes[k]));
                        json_object_object_add(p, "bandwidth_gbps", jsonfmt_double(gbs));
                        json_object_object_add(p, "bandwidth_source", jsonfmt_string(what));
                        json_object_array_add(pkgs, p);
                }
        }
        json_object_object_add(j, "mem_packages", pkgs);
}

double memreport_app_bpi(const struct manager *m, unsigned i)
{
        double bpi;

        if (!m->pf->sensor->has_mem_traffic ||
            membw_bytes_per_instr(m->bw, m->apps[i].id, &bpi) < 0)
                return NAN;
        return bpi;
}

struct json_object *memreport_app_json(const struct manager *m, unsigned i)
{
        return jsonfmt_double(memreport_app_bpi(m, i));
}

void memreport_run(const struct manager *m, double bpi, struct json_object *j)
{
        bool measured = m->pf->sensor->has_mem_traffic;

        json_object_object_add(j, "mem_traffic", json_object_new_boolean(measured));
        json_object_object_add(j, "mem_traffic_reason",
                               jsonfmt_string(measured ? NULL : m->pf->mem_why));
        json_object_object_add(j, "mem_bytes_per_instr", jsonfmt_double(measured ? bpi : NAN));
}

void memreport_metrics(const struct manager *m, struct metrics_snapshot *s)
{
        s->n_mem_packages = m->mem.n_packages;
        for (unsigned k = 0; k < m->mem.n_packages; k++) {
                double gbs;
                const char *what = package_bandwidth(m, k, &gbs);

                s->mem_bytes_total[k] = m->mem.total_bytes[k];
                /* Only the one measured there: a lower bound, or another package's figure,
                 * is no threshold to alert on (docs/fleet.md). */
                if (what && strcmp(what, "measured") == 0)
                        s->mem_bandwidth_bytes_per_s[k] = gbs * 1e9;
        }
}
