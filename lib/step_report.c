#include "pctl/step_report.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pctl/textfmt.h"
#include "pctl/topology.h"
#include "pctl/util.h"

void step_report_init(struct step_report *s)
{
        *s = (struct step_report){.p_conf = NAN};
}

static bool member_number(struct json_object *o, const char *key, double *out)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) ||
            !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
                return false;
        *out = json_object_get_double(v);
        return isfinite(*out);
}

static const char *member_string(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

/* The configuration the task ended at: `end_config`, an index into configs (configs are in
 * order of first use, so a task that came back to an earlier one ended there); from an older
 * pctld without it, or with one out of range, the last. Its packages: null where pctld did
 * not know them; absent from an older pctld, and then not counted. */
static void add_last_config(struct step_report *s, struct json_object *report)
{
        struct json_object *configs, *last, *pk;
        struct cpumask pkgs;
        double cores, mhz, end;
        size_t n;

        if (!json_object_object_get_ex(report, "configs", &configs) ||
            !json_object_is_type(configs, json_type_array))
                return;
        n = json_object_array_length(configs);
        if (n == 0)
                return;
        if (!member_number(report, "end_config", &end) || !(end >= 0 && end < (double)n) ||
            end != (double)(size_t)end)
                end = (double)(n - 1);
        last = json_object_array_get_idx(configs, (size_t)end);
        if (member_number(last, "cores", &cores) && cores >= 0 && cores < 1e6) {
                s->n_cores++;
                s->cores += (unsigned)cores;
        }
        if (member_number(last, "freq_mhz", &mhz) && mhz > 0 && mhz < 1e6) {
                if (!s->min_mhz || (unsigned)mhz < s->min_mhz)
                        s->min_mhz = (unsigned)mhz;
                if ((unsigned)mhz > s->max_mhz)
                        s->max_mhz = (unsigned)mhz;
        }
        if (json_object_object_get_ex(last, "packages", &pk)) {
                if (!pk)
                        s->n_pkgs_unknown++;
                else if (topology_packages_from_json(pk, &pkgs) >= 0)
                        cpumask_or(&s->pkgs, &s->pkgs, &pkgs);
        }
}

int step_report_add(struct step_report *s, struct json_object *report)
{
        const char *src, *policy;
        double v, conf;

        if (!report || !json_object_is_type(report, json_type_object))
                return -EINVAL;
        if (member_number(report, "energy_j", &v) &&
            (src = member_string(report, "energy_source"))) {
                if (!s->n_energy)
                        strescape(s->energy_source, sizeof(s->energy_source), src, strlen(src));
                s->n_energy++;
                s->energy_j += v;
        }
        if (member_number(report, "managed_s", &v) && v > s->managed_s)
                s->managed_s = v;
        /* The whole run's P where pctld has it, else the last phase's. */
        if (member_number(report, "p_run", &v)) {
                conf = NAN;
                member_number(report, "p_run_confidence", &conf);
        } else if (member_number(report, "p_est", &v)) {
                conf = NAN;
        } else {
                v = NAN;
        }
        if (!isnan(v)) {
                s->p_conf = s->n_p == 0 && s->n_tasks == 0 ? conf : NAN;
                s->n_p++;
                s->p_sum += v;
        }
        if (s->n_tasks == 0 && (policy = member_string(report, "policy")))
                strescape(s->policy, sizeof(s->policy), policy, strlen(policy));
        add_last_config(s, report);
        s->n_tasks++;
        return 0;
}

/* Appends to buf at *len, never past size. */
static void append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (*len >= size)
                return;
        va_start(ap, fmt);
        n = vsnprintf(buf + *len, size - *len, fmt, ap);
        va_end(ap);
        if (n > 0)
                *len = *len + (size_t)n >= size ? size - 1 : *len + (size_t)n;
}

void step_report_format(const struct step_report *s, char *buf, size_t size)
{
        size_t len = 0;
        char pkgs[64];
        /* An energy sum over some tasks only would read as the step's: all or unknown. */
        bool energy = s->n_tasks > 0 && s->n_energy == s->n_tasks;

        if (!size)
                return;
        buf[0] = '\0';
        if (energy)
                append(buf, size, &len, "energy %.1f J (%s), EDP %.4g J·s", s->energy_j,
                       s->energy_source, s->energy_j * s->managed_s);
        else
                append(buf, size, &len, "energy unknown (no RAPL and no power model), EDP unknown");
        if (s->n_p == 0)
                append(buf, size, &len, ", P̂ unknown");
        else if (s->n_tasks == 1 && !isnan(s->p_conf))
                append(buf, size, &len, ", P̂ %.3f±%.3f", s->p_sum, s->p_conf);
        else if (s->n_tasks == 1)
                append(buf, size, &len, ", P̂ %.3f", s->p_sum);
        else
                append(buf, size, &len, ", P̂ %.3f (mean of %u tasks)", s->p_sum / s->n_p, s->n_p);
        if (s->n_cores == 0)
                append(buf, size, &len, ", ended at unknown cores");
        else
                append(buf, size, &len, ", ended at %u core%s", s->cores, plural_s(s->cores));
        /* On one package nothing: the line of a one-socket node stays as it was. */
        if (s->n_pkgs_unknown)
                append(buf, size, &len, " on unknown packages");
        else if (cpumask_count(&s->pkgs) >= 2 &&
                 topology_format_packages(&s->pkgs, pkgs, sizeof(pkgs)) == 0)
                append(buf, size, &len, " on packages %s", pkgs);
        else if (cpumask_count(&s->pkgs) >= 2)
                append(buf, size, &len, " on %u packages", cpumask_count(&s->pkgs));
        if (s->max_mhz == 0)
                append(buf, size, &len, ", clock unknown");
        else if (s->min_mhz == s->max_mhz)
                append(buf, size, &len, " at %u MHz", s->max_mhz);
        else
                append(buf, size, &len, " at %u-%u MHz", s->min_mhz, s->max_mhz);
        append(buf, size, &len, " (policy %s, %u task%s, %.1f s managed)",
               s->policy[0] ? s->policy : "unknown", s->n_tasks, plural_s(s->n_tasks),
               s->managed_s);
}
