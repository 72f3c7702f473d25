/* pctl.conf: one table row per key (lib/inikey.c checks them) and the loader. */
#include "pctl/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/inifile.h"
#include "pctl/inikey.h"
#include "pctl/metrics.h"
#include "pctl/util.h"

bool config_name_valid(const char *name)
{
        return inikey_name_valid(name, CONFIG_NAME_MAX);
}

static int config_set_platform(void *field, const char *value, void *ctx, char *why,
                               size_t why_size)
{
        static const char *const names[] = {"auto", "likwid", "perf", "software"};

        (void)ctx;
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (strcmp(value, names[i]) == 0)
                        return strscpy(field, value, CONFIG_PATH_MAX);
        if (strncmp(value, "sim:", 4) == 0 && value[4]) {
                if (strlen(value) >= CONFIG_PATH_MAX) {
                        snprintf(why, why_size, "longer than %d bytes", CONFIG_PATH_MAX - 1);
                        return -ERANGE;
                }
                return strscpy(field, value, CONFIG_PATH_MAX);
        }
        snprintf(why, why_size, "'%s' is not auto, likwid, perf, software or sim:SCENARIO", value);
        return -EINVAL;
}

/* Empty is off; else an address and port this host can listen on (checked at start). */
static int config_set_metrics_listen(void *field, const char *value, void *ctx, char *why,
                                     size_t why_size)
{
        struct sockaddr_storage sa;
        socklen_t len;
        int r;

        (void)ctx;
        if (value[0]) {
                r = metrics_listen_parse(value, 1, &sa, &len, why, why_size);
                if (r < 0)
                        return r;
        }
        return strscpy(field, value, METRICS_LISTEN_MAX);
}

/* An absolute path, or "off": no memory of past runs. */
static int config_set_history(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        (void)ctx;
        if (strcmp(value, "off") == 0) {
                *(char *)field = '\0';
                return 0;
        }
        if (value[0] != '/') {
                snprintf(why, why_size, "'%s' is not an absolute path or off", value);
                return -EINVAL;
        }
        if (strlen(value) >= CONFIG_PATH_MAX) {
                snprintf(why, why_size, "path longer than %d bytes", CONFIG_PATH_MAX - 1);
                return -ERANGE;
        }
        return strscpy(field, value, CONFIG_PATH_MAX);
}

#define STR(field) offsetof(struct config, field), sizeof(((struct config *)0)->field)

/* [daemon]: one row per key. A new setting is one line here, one in etc/pctl.conf and one in
 * pctl.conf(5). */
static const struct inikey daemon_keys[] = {
    {.key = "interval_ms",
     .type = INIKEY_UINT,
     .offset = offsetof(struct config, interval_ms),
     .min = 10,
     .max = 60000,
     .def = "100",
     .doc = "sampling interval, ms"},
    {.key = "decision_ms",
     .type = INIKEY_UINT,
     .offset = offsetof(struct config, decision_ms),
     .min = 10,
     .max = 3600000,
     .def = "1000",
     .doc = "allocator decision interval, ms; at least interval_ms"},
    {.key = "platform",
     .type = INIKEY_CUSTOM,
     .offset = offsetof(struct config, platform),
     .custom = config_set_platform,
     .def = "auto",
     .doc = "auto, likwid, perf, software, or sim:SCENARIO"},
    {.key = "socket",
     .type = INIKEY_PATH,
     STR(socket),
     .def = PCTL_STATEDIR "/pctl.sock",
     .doc = "control socket"},
    {.key = "reserved_cpus",
     .type = INIKEY_CPULIST,
     .offset = offsetof(struct config, reserved_cpus),
     .def = "",
     .doc = "CPU list never given to a managed app"},
    {.key = "default_policy",
     .type = INIKEY_NAME,
     STR(default_policy),
     .def = "edp",
     .doc = "policy of `pctl run` and `pctl adopt` without --policy"},
    {.key = "policies_dir",
     .type = INIKEY_PATH,
     STR(policies_dir),
     .def = PCTL_SYSCONFDIR "/policies.d",
     .doc = "directory of *.conf policy files"},
    {.key = "cgroup_root",
     .type = INIKEY_PATH,
     STR(cgroup_root),
     .def = "/sys/fs/cgroup",
     .doc = "cgroup file system mount"},
    {.key = "cgroup_group",
     .type = INIKEY_NAME,
     STR(cgroup_group),
     .def = "pctl",
     .doc = "name of pctld's own subtree under the cgroup root"},
    {.key = "cpuset_mode",
     .type = INIKEY_CHOICE,
     .offset = offsetof(struct config, cpuset_mode),
     .choices = "auto|v2|v1|affinity|systemd",
     .def = "auto",
     .doc = "how CPUs are given: auto, systemd (each app's own unit), v2 (pctld's own "
            "delegated cgroup), v1 (cpuset hierarchy), affinity"},
    {.key = "state_dir",
     .type = INIKEY_PATH,
     STR(state_dir),
     .def = PCTL_STATEDIR,
     .doc = "runtime state: the record of every change, for restore"},
    {.key = "platform_file",
     .type = INIKEY_PATH,
     STR(platform_file),
     .def = PCTL_LIBDIR_STATE "/platform.ini",
     .doc = "calibration result"},
    {.key = "history_path",
     .type = INIKEY_CUSTOM,
     .offset = offsetof(struct config, history_path),
     .custom = config_set_history,
     .def = PCTL_LIBDIR_STATE "/history.db",
     .doc = "memory of past runs (SQLite), or off"},
    {.key = "dvfs",
     .type = INIKEY_CHOICE,
     .offset = offsetof(struct config, dvfs),
     .choices = "auto|on|off",
     .def = "auto",
     .doc = "auto: leave frequencies alone when another manager runs; on: take over; off"},
    {.key = "metrics_listen",
     .type = INIKEY_CUSTOM,
     .offset = offsetof(struct config, metrics_listen),
     .custom = config_set_metrics_listen,
     .def = "",
     .doc = "Prometheus /metrics on ADDR:PORT (127.0.0.1:9464, [::1]:9464); empty: off"},
    {.key = "users",
     .type = INIKEY_NAME,
     STR(users),
     .def = "none",
     .doc = "who besides root may pctl run/adopt/release their own processes, and whose "
            "processes a rule without match_user adopts: all, a group name, or none"},
    {.key = "max_rule_apps",
     .type = INIKEY_UINT,
     .offset = offsetof(struct config, max_rule_apps),
     .min = 0,
     .max = 100000,
     .def = "64",
     .doc = "apps policy rules may have adopted at once, in all; 0: rules adopt nothing"},
    {.key = "max_user_apps",
     .type = INIKEY_UINT,
     .offset = offsetof(struct config, max_user_apps),
     .min = 0,
     .max = 100000,
     .def = "16",
     .doc = "apps one user other than root may have handed over with pctl run or adopt at "
            "once; 0: users hand over nothing"},
};

bool config_key_info(size_t i, struct config_key_info *out)
{
        const char *key, *doc;

        if (i < ARRAY_SIZE(daemon_keys)) {
                *out = (struct config_key_info){"daemon", daemon_keys[i].key, daemon_keys[i].def,
                                                daemon_keys[i].doc};
                return true;
        }
        /* [power] is the one dialect of lib/power_decl.c. */
        if (!power_decl_key_info(i - ARRAY_SIZE(daemon_keys), &key, &doc))
                return false;
        *out = (struct config_key_info){"power", key, "", doc};
        return true;
}

void config_init(struct config *c)
{
        *c = (struct config){};
        /* The defaults are checked by a unit test; they cannot fail. */
        inikey_defaults(daemon_keys, ARRAY_SIZE(daemon_keys), c);
}

struct config_ctx {
        struct config cfg;
        const char *name;
        struct config_problems *problems;
        struct inifile_scan scan;
        int key_line[ARRAY_SIZE(daemon_keys)];
        int power_section_line;
        size_t first_problem;
};

static int config_handler(void *user, const char *section, const char *key, const char *value,
                          int lineno)
{
        struct config_ctx *c = user;
        int idx = inifile_scan_section_at(&c->scan, lineno);
        const char *sec;
        char why[200] = "";
        int r;

        (void)section; /* the scan's name: inih does not strip it */
        if (idx < 0)
                return config_problems_add(c->problems, c->name, lineno,
                                           "%s: key outside any section", key)
                           ?: -EINVAL;
        sec = c->scan.v[idx].name;
        if (strcmp(sec, "daemon") == 0) {
                const struct inikey *k = inikey_find(daemon_keys, ARRAY_SIZE(daemon_keys), key);
                size_t ki;

                if (!k) {
                        char names[400];

                        inikey_names(daemon_keys, ARRAY_SIZE(daemon_keys), names, sizeof(names));
                        config_problems_add(c->problems, c->name, lineno,
                                            "[daemon] %s: unknown key (known: %s)", key, names);
                        return -EINVAL;
                }
                ki = (size_t)(k - daemon_keys);
                if (c->key_line[ki]) {
                        config_problems_add(c->problems, c->name, lineno,
                                            "[daemon] %s: set twice (first at line %d)", key,
                                            abs(c->key_line[ki]));
                        return -EINVAL;
                }
                c->key_line[ki] = lineno;
                r = inikey_set(k, &c->cfg, value, NULL, why, sizeof(why));
                if (r < 0) {
                        config_problems_add(c->problems, c->name, lineno, "[daemon] %s: %s", key,
                                            why);
                        /* Keep cross-key checks off a key whose value was refused. */
                        c->key_line[ki] = -lineno;
                        return r;
                }
                return 0;
        }
        if (strcmp(sec, "power") == 0) {
                r = power_decl_set(&c->cfg.power, key, value, lineno, why, sizeof(why));
                if (r < 0)
                        config_problems_add(c->problems, c->name, lineno, "[power] %s: %s", key,
                                            why);
                return r;
        }
        /* The section itself was reported at its header line. */
        return 0;
}

static void config_check_sections(struct config_ctx *c)
{
        for (size_t i = 0; i < c->scan.n; i++) {
                const char *s = c->scan.v[i].name;

                if (strcmp(s, "power") == 0 && !c->power_section_line)
                        c->power_section_line = c->scan.v[i].lineno;
                if (strcmp(s, "daemon") != 0 && strcmp(s, "power") != 0)
                        config_problems_add(c->problems, c->name, c->scan.v[i].lineno,
                                            "[%s]: unknown section (known: [daemon], [power])", s);
        }
}

static void config_check_cross(struct config_ctx *c)
{
        int li = c->key_line[0], ld = c->key_line[1];

        if (li >= 0 && ld >= 0 && c->cfg.decision_ms < c->cfg.interval_ms) {
                /* Name both lines; a default has none. */
                char where[64];

                if (ld > 0 && li > 0)
                        snprintf(where, sizeof(where), "line %d", li);
                else
                        snprintf(where, sizeof(where), "the default");
                if (ld > 0)
                        config_problems_add(c->problems, c->name, ld,
                                            "[daemon] decision_ms: %u is less than interval_ms "
                                            "(%u, %s)",
                                            c->cfg.decision_ms, c->cfg.interval_ms, where);
                else
                        config_problems_add(c->problems, c->name, li,
                                            "[daemon] interval_ms: %u is more than decision_ms "
                                            "(%u, the default)",
                                            c->cfg.interval_ms, c->cfg.decision_ms);
        }
        if (c->power_section_line) {
                char why[200];
                int lineno;

                c->cfg.has_power = true;
                if (power_decl_check(&c->cfg.power, &lineno, why, sizeof(why)) < 0 && why[0])
                        config_problems_add(c->problems, c->name,
                                            lineno > 0 ? lineno : c->power_section_line,
                                            "[power]: %s", why);
        }
}

static int config_load_any(const char *path, const char *text, const char *name, struct config *out,
                           struct config_problems *problems)
{
        struct config_ctx c = {.name = name, .problems = problems, .first_problem = problems->n};
        struct inifile_error err;
        int r;

        config_init(&c.cfg);
        r = inifile_scan(path, text, name, &c.scan, problems);
        if (r < 0) {
                if (problems->n == c.first_problem)
                        config_problems_add(problems, name, 0, "cannot read: %s", strerror(-r));
                return r;
        }
        config_check_sections(&c);
        r = path ? inifile_parse(path, config_handler, &c, &err)
                 : inifile_parse_string(text, config_handler, &c, &err);
        if (r < 0 && r != -EINVAL) {
                config_problems_add(problems, name, 0, "cannot read: %s", strerror(-r));
                inifile_scan_free(&c.scan);
                return r;
        }
        config_check_cross(&c);
        /* inih's own first complaint, unless the scan or the handler said it already. */
        if (r == -EINVAL && err.lineno > 0) {
                bool known = false;

                for (size_t i = c.first_problem; i < problems->n; i++)
                        known = known || problems->v[i].lineno == err.lineno;
                if (!known)
                        config_problems_add(problems, name, err.lineno, "%s", err.what);
        }
        inifile_scan_free(&c.scan);
        config_problems_sort_from(problems, c.first_problem);
        if (problems->n > c.first_problem)
                return -EINVAL;
        *out = c.cfg;
        return 0;
}

int config_load(const char *path, struct config *out, struct config_problems *problems)
{
        return config_load_any(path, NULL, path, out, problems);
}

int config_load_string(const char *text, const char *name, struct config *out,
                       struct config_problems *problems)
{
        return config_load_any(NULL, text, name, out, problems);
}

int config_detect(const char *path, bool *is_config)
{
        struct config_problems ignored = {};
        struct inifile_scan scan;
        bool found = false;
        int r = inifile_scan(path, NULL, path, &scan, &ignored);

        config_problems_clear(&ignored);
        if (r < 0)
                return r;
        for (size_t i = 0; i < scan.n; i++)
                found = found || strcmp(scan.v[i].name, "daemon") == 0 ||
                        strcmp(scan.v[i].name, "power") == 0;
        inifile_scan_free(&scan);
        *is_config = found;
        return 0;
}
