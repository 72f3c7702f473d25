/* pctl.conf: the daemon's settings and the declared [power] model. Keys, types, bounds and
 * defaults live in one table (policies/config.c); every problem in a file is reported with
 * file:line, and a bad file changes nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pctl/config_problems.h"
#include "pctl/cpumask.h"
#include "pctl/power_decl.h"

#define CONFIG_NAME_MAX 64

enum config_dvfs {
        CONFIG_DVFS_AUTO, /* change frequencies unless another frequency manager runs */
        CONFIG_DVFS_ON,   /* change them even then */
        CONFIG_DVFS_OFF,  /* never change them */
};

struct config {
        unsigned interval_ms;           /* sampling */
        unsigned decision_ms;           /* allocator; >= interval_ms */
        char platform[CONFIG_PATH_MAX]; /* auto | likwid | perf | software | sim:PATH */
        char socket[CONFIG_PATH_MAX];
        struct cpumask reserved_cpus;         /* never given to a managed app */
        char default_policy[CONFIG_NAME_MAX]; /* for `pctl run` / `pctl adopt` without --policy */
        char policies_dir[CONFIG_PATH_MAX];
        char cgroup_root[CONFIG_PATH_MAX];
        char cgroup_group[CONFIG_NAME_MAX]; /* our subtree under cgroup_root */
        unsigned cpuset_mode;               /* enum cpuset_mode: auto|v2|v1|affinity|systemd */
        char state_dir[CONFIG_PATH_MAX];
        char platform_file[CONFIG_PATH_MAX];
        unsigned dvfs;           /* enum config_dvfs */
        char metrics_listen[64]; /* Prometheus /metrics on ADDR:PORT; "" is off */
        struct power_decl power; /* [power]; has_power false when the section is absent */
        bool has_power;
        char history_path[CONFIG_PATH_MAX]; /* pctl history's file; "": off */
        /* Who besides root may make pctld act on their own processes, and whose processes a
         * rule without match_user adopts: "all", "none" or a group name. */
        char users[CONFIG_NAME_MAX];
        unsigned max_rule_apps; /* apps adopted by rules at once, in all */
        /* Apps one user other than root has handed over (pctl run, adopt) at once: so that
         * one user cannot take every managed slot and CPU decision from the others. */
        unsigned max_user_apps;
};

/* The built-in defaults, as the table states them. */
void config_init(struct config *c);
/* Parses path over the defaults. Returns 0; -ENOENT/-EACCES when it cannot be read; -EINVAL
 * when any line is bad: then every problem is appended to `problems` and *out is unchanged. */
int config_load(const char *path, struct config *out, struct config_problems *problems);
/* The same over text; `name` stands for the file name in problems. */
int config_load_string(const char *text, const char *name, struct config *out,
                       struct config_problems *problems);

/* Whether path is a pctl.conf (it has a [daemon] or [power] section) rather than a policy file.
 * -ENOENT/-EACCES when it cannot be read. */
int config_detect(const char *path, bool *is_config);

/* The table, for documentation and tests: section, key, default ("" = empty), and a line of
 * help. Returns false past the last row. */
struct config_key_info {
        const char *section;
        const char *key;
        const char *def;
        const char *doc;
};
bool config_key_info(size_t i, struct config_key_info *out);
/* True if a policy name is well formed: 1..63 of [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool config_name_valid(const char *name);
