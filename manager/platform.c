#include "pctl/platform.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pctl/config.h"
#include "pctl/fsio.h"
#include "pctl/history.h"
#include "pctl/procstat.h"
#include "pctl/sim.h"
#include "pctl/util.h"

static int platform_open_sim(struct platform *p, const char *path, char *why, size_t why_size)
{
        struct sim_machine_info info;
        struct sim_error err;
        int r;

        r = sim_load(path, &p->sim, &err);
        if (r < 0) {
                snprintf(why, why_size, "sim: %s", err.all[0] ? err.all : err.what);
                return r;
        }
        sim_machine_info(p->sim, &info);
        r = topology_synthetic(&p->topo, info.sockets, info.cores_per_socket,
                               info.threads_per_core);
        if (r < 0) {
                snprintf(why, why_size, "sim: cannot build the topology: %s", strerror(-r));
                return r;
        }
        p->virtual_time = true;
        p->sensor_ops = &sim_sensor_ops;
        p->actuator_ops = &sim_actuator_ops;
        snprintf(p->sensor_why, sizeof(p->sensor_why), "the model machine %s", path);
        return 0;
}

/* Keeps the probe's word on memory traffic for `pctl status` (probed again where the backend
 * was picked automatically: sensor_pick_auto keeps only why it picked it). */
static void platform_mem_why(struct platform *p, const struct sensor_config *cfg,
                             const struct sensor_probe *probe)
{
        struct sensor_probe again;

        if (!probe) {
                again = (struct sensor_probe){0};
                p->sensor_ops->probe(cfg, &again);
                probe = &again;
        }
        snprintf(p->mem_why, sizeof(p->mem_why), "%s", probe->mem_reason);
}

int platform_open(const struct platform_options *opt, struct platform **out, char *why,
                  size_t why_size)
{
        struct platform *p = calloc(1, sizeof(*p));
        struct sensor_config scfg = {0};
        struct actuator_config acfg = opt->actuator;
        char reason[256];
        const char *spec = opt->spec && *opt->spec ? opt->spec : "auto";
        int r;

        if (!p)
                return -ENOMEM;
        snprintf(p->name, sizeof(p->name), "%s", spec);
        if (strncmp(spec, "sim:", 4) == 0) {
                r = platform_open_sim(p, spec + 4, why, why_size);
                if (r < 0)
                        goto fail;
                scfg.machine = p->sim;
                acfg.machine = p->sim;
        } else {
                r = topology_read(&p->topo);
                if (r < 0) {
                        snprintf(why, why_size, "cannot read the CPU topology: %s", strerror(-r));
                        goto fail;
                }
                if (strcmp(spec, "auto") == 0) {
                        r = sensor_pick_auto(&scfg, &p->sensor_ops, p->sensor_why,
                                             sizeof(p->sensor_why));
                        if (r < 0) {
                                snprintf(why, why_size, "no sensor backend: %s", p->sensor_why);
                                goto fail;
                        }
                        snprintf(p->name, sizeof(p->name), "%s", p->sensor_ops->name);
                        platform_mem_why(p, &scfg, NULL);
                } else {
                        struct sensor_probe probe;

                        p->sensor_ops = sensor_find(spec);
                        if (!p->sensor_ops || strcmp(spec, "replay") == 0) {
                                snprintf(why, why_size,
                                         "unknown platform '%s' (auto, likwid, perf, software, "
                                         "sim:SCENARIO)",
                                         spec);
                                r = -EINVAL;
                                goto fail;
                        }
                        p->sensor_ops->probe(&scfg, &probe);
                        if (!probe.available) {
                                snprintf(why, why_size, "%s", probe.reason);
                                r = probe.err < 0 ? probe.err : -ENODEV;
                                goto fail;
                        }
                        snprintf(p->sensor_why, sizeof(p->sensor_why), "asked for %s", spec);
                        platform_mem_why(p, &scfg, &probe);
                }
                p->actuator_ops = &actuator_real_ops;
        }
        if (opt->cpus)
                scfg.cpus = *opt->cpus;
        r = sensor_open(p->sensor_ops, &scfg, &p->sensor);
        if (r < 0) {
                snprintf(why, why_size, "cannot open the %s sensor: %s", p->sensor_ops->name,
                         strerror(-r));
                goto fail;
        }
        if (p->sensor->has_mem_traffic)
                p->mem_why[0] = '\0';
        else if (!p->mem_why[0])
                snprintf(p->mem_why, sizeof(p->mem_why), "the %s backend does not measure it",
                         p->sensor_ops->name);
        r = actuator_open(p->actuator_ops, &acfg, &p->actuator, reason, sizeof(reason));
        if (r < 0) {
                snprintf(why, why_size, "cannot open the %s actuator: %s", p->actuator_ops->name,
                         reason);
                goto fail;
        }
        *out = p;
        return 0;
fail:
        platform_close(p);
        return r;
}

void platform_close(struct platform *p)
{
        if (!p)
                return;
        if (p->actuator)
                actuator_close(p->actuator);
        if (p->sensor)
                sensor_close(p->sensor);
        topology_free(&p->topo);
        if (p->sim)
                sim_free(p->sim);
        free(p);
}

uint64_t platform_now_ns(const struct platform *p)
{
        return p->sim ? sim_now_ns(p->sim) : now_ns();
}

int platform_advance(struct platform *p, uint64_t dt_ns)
{
        if (!p->sim)
                return -EOPNOTSUPP;
        return sim_step(p->sim, dt_ns);
}

bool platform_proc_state(const struct platform *p, pid_t pid, char *comm, size_t size)
{
        if (comm)
                (void)strscpy(comm, "?", size);
        if (p->sim) {
                struct sim_proc procs[1024];
                unsigned n = sim_list_procs(p->sim, procs, ARRAY_SIZE(procs));

                for (unsigned i = 0; i < n && i < ARRAY_SIZE(procs); i++) {
                        if (procs[i].pid != pid)
                                continue;
                        if (comm)
                                (void)strscpy(comm, procs[i].comm, size);
                        return procs[i].state != SIM_PROC_EXITED;
                }
                return false;
        }
        /* One read for both, as the tick asks every app every interval. A zombie still
         * answers kill(0): it has exited all the same. */
        char path[64], buf[512], state;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (fs_read(path, buf, sizeof(buf)) < 0)
                return false;
        if (comm && size > 0 && procstat_comm(buf, comm, size) < 0)
                return false;
        return procstat_state(buf, &state) == 0 && state != 'Z' && state != 'X';
}

bool platform_proc_alive(const struct platform *p, pid_t pid)
{
        return platform_proc_state(p, pid, NULL, 0);
}

void platform_proc_comm(const struct platform *p, pid_t pid, char *buf, size_t size)
{
        char path[64], comm[32];

        (void)strscpy(buf, "?", size);
        if (p->sim) {
                struct sim_proc procs[1024];
                unsigned n = sim_list_procs(p->sim, procs, ARRAY_SIZE(procs));

                for (unsigned i = 0; i < n && i < ARRAY_SIZE(procs); i++)
                        if (procs[i].pid == pid)
                                (void)strscpy(buf, procs[i].comm, size);
                return;
        }
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        if (fs_read(path, comm, sizeof(comm)) >= 0)
                (void)strscpy(buf, comm, size);
}

int platform_proc_identity(const struct platform *p, pid_t pid, char *exe, size_t size,
                           uint64_t *args_hash)
{
        char path[4096], buf[65536];
        ssize_t n, len = 0;
        size_t first;
        int fd, r;

        if (p->sim) {
                char comm[32];

                platform_proc_comm(p, pid, comm, sizeof(comm));
                if (strcmp(comm, "?") == 0)
                        return -ESRCH;
                snprintf(exe, size, "sim:%s", comm);
                *args_hash = history_hash(p->name, strlen(p->name));
                return 0;
        }
        r = fs_path(path, sizeof(path), "/proc/%d/exe", (int)pid);
        if (r < 0)
                return r;
        n = readlink(path, exe, size - 1);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ENOENT;
        exe[n] = '\0';
        r = fs_path(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* Arguments past 64 KiB do not tell runs apart any better. */
        while ((size_t)len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
                len += n;
        r = n < 0 ? -errno : 0;
        close(fd);
        if (r < 0)
                return r;
        first = strnlen(buf, (size_t)len);
        first = first < (size_t)len ? first + 1 : (size_t)len;
        *args_hash = history_hash(buf + first, (size_t)len - first);
        return 0;
}

int platform_list_procs(const struct platform *p, struct platform_proc *out, unsigned max)
{
        unsigned n = 0;

        if (p->sim) {
                struct sim_proc procs[1024];
                unsigned total = sim_list_procs(p->sim, procs, ARRAY_SIZE(procs));

                for (unsigned i = 0; i < total && i < ARRAY_SIZE(procs) && n < max; i++) {
                        if (procs[i].state != SIM_PROC_RUNNING)
                                continue;
                        out[n].pid = procs[i].pid;
                        (void)strscpy(out[n].comm, procs[i].comm, sizeof(out[n].comm));
                        n++;
                }
                return (int)n;
        }
        char path[300];
        int r = fs_path(path, sizeof(path), "/proc");
        if (r < 0)
                return r;
        DIR *d = opendir(path);
        if (!d)
                return -errno;
        struct dirent *de;
        while ((de = readdir(d)) && n < max) {
                char file[300], comm[32];
                int pid;

                if (!isdigit((unsigned char)de->d_name[0]) || parse_int(de->d_name, &pid) < 0)
                        continue;
                snprintf(file, sizeof(file), "/proc/%d/comm", pid);
                /* A process that exits while we list it is simply not listed. */
                if (fs_read(file, comm, sizeof(comm)) < 0)
                        continue;
                out[n].pid = pid;
                (void)strscpy(out[n].comm, comm, sizeof(out[n].comm));
                n++;
        }
        closedir(d);
        return (int)n;
}

unsigned platform_freqs(const struct platform *p, const unsigned **freqs_khz)
{
        const struct actuator *a = p->actuator;

        if (!a || !a->can_set_freq || a->n_domains == 0) {
                *freqs_khz = NULL;
                return 0;
        }
        *freqs_khz = a->domains[0].freqs_khz;
        return a->domains[0].n_freqs;
}

/* Other daemons that set CPU frequencies; two managers fighting over one knob is worse than
 * either alone. Names as comm shows them (15 characters at most). */
static const char *const other_freq_managers[] = {
    "tuned",        "tuned-ppd", "power-profiles-", /* power-profiles-daemon, cut to 15 */
    "auto-cpufreq", "thermald",  "cpufreqd",        "powerd",
};

bool platform_freq_manager_in(const struct platform_proc *procs, unsigned n, char *which,
                              size_t size)
{
        for (unsigned i = 0; i < n; i++)
                for (size_t k = 0; k < ARRAY_SIZE(other_freq_managers); k++)
                        if (strcmp(procs[i].comm, other_freq_managers[k]) == 0) {
                                snprintf(which, size, "%s (pid %d)", procs[i].comm,
                                         (int)procs[i].pid);
                                return true;
                        }
        return false;
}

bool platform_dvfs_choice(unsigned conf_dvfs, bool can_set_freq, const char *freq_reason,
                          const char *other_manager, const char *config_path, char *why,
                          size_t size)
{
        why[0] = '\0';
        if (conf_dvfs == CONFIG_DVFS_OFF) {
                snprintf(why, size, "dvfs = off in %s", config_path);
                return false;
        }
        if (!can_set_freq) {
                snprintf(why, size, "%s", freq_reason);
                return false;
        }
        if (conf_dvfs == CONFIG_DVFS_AUTO && other_manager) {
                snprintf(why, size, "%s manages CPU frequencies; set dvfs = on in %s to take over",
                         other_manager, config_path);
                return false;
        }
        return true;
}
