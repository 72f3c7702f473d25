/* pctl sensors: every sensor backend, available or not, and why; how apps get their CPUs. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "pctl/actuator.h"
#include "pctl/jsonfmt.h"
#include "pctl/sensor.h"
#include "pctl/threadstate.h"
#include "pctl/topology.h"
#include "pctl/util.h"

/* One backend, available or not and why: a JSON object added to list, or a text row when list
 * is NULL. */
static struct json_object *backend_row(struct json_object *list, const char *name,
                                       const char *description, bool available, int err,
                                       const char *reason)
{
        struct json_object *b;

        if (!list) {
                printf("%-9s %-9s %s\n", name, available ? "yes" : "no", reason);
                return NULL;
        }
        b = json_object_new_object();
        json_object_object_add(b, "name", jsonfmt_string(name));
        json_object_object_add(b, "description", jsonfmt_string(description));
        json_object_object_add(b, "available", json_object_new_boolean(available));
        json_object_object_add(b, "errno", json_object_new_int64(err < 0 ? -err : 0));
        json_object_object_add(b, "reason", jsonfmt_string(reason));
        json_object_array_add(list, b);
        return b;
}

/* Whether each backend measures each package's memory traffic, and from what or why not: a
 * table after the backends' (the JSON has it in each backend's object). */
static void sensors_mem_rows(const struct sensor_probe *probes, unsigned n)
{
        printf("\n%-9s %-9s %s\n", "MEMORY", "MEASURED", "FROM / WHY NOT");
        for (unsigned i = 0; i < n; i++)
                printf("%-9s %-9s %s\n", sensor_backends[i]->name,
                       probes[i].mem_traffic ? "yes" : "no",
                       probes[i].mem_reason[0] ? probes[i].mem_reason : "not measured");
}

/* How pctld's auto mode would give CPUs to apps here (the defaults: cgroups under
 * /sys/fs/cgroup), and why: a line after the tables, or a "cpusets" object. */
static void sensors_cpusets(struct json_object *j)
{
        struct actuator_config cfg = {.mode = CPUSET_AUTO, .dvfs = false};
        struct actuator_probe cs = {0}, fq = {0};
        const char *mode;

        actuator_real_ops.probe(&cfg, &cs, &fq);
        mode = strncmp(cs.reason, "systemd", 7) == 0     ? "systemd"
               : strncmp(cs.reason, "cgroup v2", 9) == 0 ? "v2"
               : strncmp(cs.reason, "cgroup v1", 9) == 0 ? "v1"
                                                         : "affinity";
        if (!j) {
                printf("\ncpusets (auto): %s\n", cs.reason);
                return;
        }
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "mode", jsonfmt_string(mode));
        json_object_object_add(o, "reason", jsonfmt_string(cs.reason));
        json_object_object_add(j, "cpusets", o);
}

/* The thread-state backends (pctl stack, the speedup stack): a table after the counters' or a
 * "thread_states" array, then which one auto picks. ebpf is listed even where it was not
 * built, with why. */
static void sensors_threadstates(struct json_object *j)
{
        struct json_object *list = j ? json_object_new_array() : NULL;
        const struct threadstate_ops *best = NULL;
        char why[1200];
        int r;

        if (!j)
                printf("\n%-9s %-9s %s\n", "THREADS", "AVAILABLE", "REASON");
#ifndef PCTL_HAVE_BPF
        {
                static const char reason[] = "ebpf: not built in (clang, bpftool, libbpf or "
                                             "kernel BTF were missing when pctl was built)";

                backend_row(list, "ebpf", "per-thread states accumulated in kernel by eBPF", false,
                            -ENOSYS, reason);
        }
#endif
        for (unsigned i = 0; threadstate_backends[i]; i++) {
                const struct threadstate_ops *ops = threadstate_backends[i];
                struct threadstate_probe p = {0};

                if (ops->probe(NULL, &p) < 0 && !p.reason[0])
                        snprintf(p.reason, sizeof(p.reason), "%s: probe failed", ops->name);
                backend_row(j ? list : NULL, ops->name, ops->description, p.available, p.err,
                            p.reason);
        }
        r = threadstate_pick_auto(&best, why, sizeof(why));
        if (j) {
                json_object_object_add(j, "thread_states", list);
                json_object_object_add(j, "thread_states_auto",
                                       jsonfmt_string(r == 0 ? best->name : NULL));
                json_object_object_add(j, "thread_states_auto_why", jsonfmt_string(why));
        } else {
                printf("\nthreads auto: %s\n", why);
        }
}

/* The CPUs and packages the kernel reports (sysfs), as pctld's allocator sees them: its
 * frequency domains and placement follow the packages. */
static void sensors_topology(struct json_object *j)
{
        struct topology t;
        char text[4096];
        int r = topology_read(&t);

        if (r < 0) {
                if (j)
                        json_object_object_add(j, "topology", NULL);
                else
                        printf("\ntopology: unknown (/sys/devices/system/cpu: %s)\n", strerror(-r));
                return;
        }
        if (j)
                json_object_object_add(j, "topology", topology_json(&t));
        else if (topology_describe(&t, text, sizeof(text)) == 0)
                printf("\ntopology: %s\n", text);
        topology_free(&t);
}

static void sensors_usage(FILE *f)
{
        fputs("Usage: pctl sensors [--source FILE] [--json]\n", f);
}

int cmd_sensors(int argc, char **argv)
{
        static const struct option opts[] = {
            {"json", no_argument, NULL, 'j'},
            {"source", required_argument, NULL, 's'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        struct sensor_config cfg = {0};
        const struct sensor_ops *best = NULL;
        char why[1024];
        bool json = false;
        struct json_object *j = NULL, *backends = NULL;
        struct sensor_probe probes[8] = {0};
        unsigned n_probes = 0;
        int c;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 's':
                        cfg.source = optarg;
                        break;
                case 'h':
                        sensors_usage(stdout);
                        return EXIT_OK;
                default:
                        fprintf(stderr, "pctl sensors: unknown option '%s'\n", argv[optind - 1]);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pctl sensors: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        if (json) {
                j = json_object_new_object();
                backends = json_object_new_array();
                json_object_object_add(j, "backends", backends);
        } else {
                printf("%-9s %-9s %s\n", "BACKEND", "AVAILABLE", "REASON");
        }
        for (unsigned i = 0; sensor_backends[i] && i < ARRAY_SIZE(probes); i++) {
                const struct sensor_ops *ops = sensor_backends[i];
                struct sensor_probe *p = &probes[n_probes++];
                struct json_object *b;

                if (ops->probe(&cfg, p) < 0 && !p->reason[0])
                        snprintf(p->reason, sizeof(p->reason), "%s: probe failed", ops->name);
                b = backend_row(json ? backends : NULL, ops->name, ops->description, p->available,
                                p->err, p->reason);
                if (b) {
                        json_object_object_add(b, "mem_traffic",
                                               json_object_new_boolean(p->mem_traffic));
                        json_object_object_add(
                            b, "mem_traffic_reason",
                            jsonfmt_string(p->mem_reason[0] ? p->mem_reason : "not measured"));
                }
        }
        /* auto probes again; the probes are cheap next to LIKWID's forked one. */
        int r = sensor_pick_auto(&cfg, &best, why, sizeof(why));
        if (json) {
                json_object_object_add(j, "auto", jsonfmt_string(r == 0 ? best->name : NULL));
                json_object_object_add(j, "auto_why", jsonfmt_string(why));
                sensors_threadstates(j);
                sensors_topology(j);
                sensors_cpusets(j);
                r = jsonfmt_print(stdout, j, true);
                json_object_put(j);
                return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
        }
        printf("\nauto: %s\n", why);
        sensors_mem_rows(probes, n_probes);
        sensors_threadstates(NULL);
        sensors_topology(NULL);
        sensors_cpusets(NULL);
        return EXIT_OK;
}
