/* pctl sensors: every sensor backend, available or not, and why. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "pctl/json.h"
#include "pctl/sensor.h"

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
        struct json j;
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
                json_init(&j, stdout, true);
                json_object_begin(&j);
                json_key(&j, "backends");
                json_array_begin(&j);
        } else {
                printf("%-9s %-9s %s\n", "BACKEND", "AVAILABLE", "REASON");
        }
        for (unsigned i = 0; sensor_backends[i]; i++) {
                const struct sensor_ops *ops = sensor_backends[i];
                struct sensor_probe p = {0};

                if (ops->probe(&cfg, &p) < 0 && !p.reason[0])
                        snprintf(p.reason, sizeof(p.reason), "%s: probe failed", ops->name);
                if (json) {
                        json_object_begin(&j);
                        json_kv_string(&j, "name", ops->name);
                        json_kv_string(&j, "description", ops->description);
                        json_kv_bool(&j, "available", p.available);
                        json_kv_int(&j, "errno", p.err < 0 ? -p.err : 0);
                        json_kv_string(&j, "reason", p.reason);
                        json_object_end(&j);
                } else {
                        printf("%-9s %-9s %s\n", ops->name, p.available ? "yes" : "no", p.reason);
                }
        }
        /* auto probes again; the probes are cheap next to LIKWID's forked one. */
        int r = sensor_pick_auto(&cfg, &best, why, sizeof(why));
        if (json) {
                json_array_end(&j);
                json_key(&j, "auto");
                if (r == 0)
                        json_string(&j, best->name);
                else
                        json_null(&j);
                json_kv_string(&j, "auto_why", why);
                json_object_end(&j);
                json_finish(&j);
        } else {
                printf("\nauto: %s\n", why);
        }
        return EXIT_OK;
}
