/* The text of /proc/PID/cgroup and /proc/PID/task/TID/cgroup: one line per hierarchy,
 * "ID:CONTROLLERS:PATH" ("0::/user.slice/x" for the unified hierarchy, "4:cpu,cpuset:/pctl"
 * for a cgroup v1 one). The kernel writes it, but the paths in it are cgroup names, which
 * whoever may create cgroups chooses (a delegated subtree): outside input. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The path of one hierarchy: controller NULL for the unified one (the line "0::PATH"), else
 * the cgroup v1 hierarchy whose comma list of controllers names it. PATH is the rest of the
 * line after the second ':' (cgroup names may hold ':'). -ENOENT when no line is that
 * hierarchy's, -ENAMETOOLONG when the path does not fit in size bytes. out is written only on
 * success. */
int proc_cgroup_path(const char *text, const char *controller, char *out, size_t size);
/* Whether the comma list of controllers list[0..len) ("cpu,cpuacct") names ctrl. */
bool proc_cgroup_lists(const char *list, size_t len, const char *ctrl);
