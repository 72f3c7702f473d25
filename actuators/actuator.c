/* The generic actuator layer, recovery from a previous instance's record, error classes, and
 * the real backend: cpusets (cgroup v2, v1 or affinity) plus cpufreq. */
#include "pctl/actuator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pctl/cpufreq.h"
#include "pctl/cpuset.h"
#include "pctl/state.h"
#include "pctl/unit.h"
#include "pctl/util.h"

struct actuator_real {
        struct state_record *rec;
        struct cpuset *cs;   /* cgroups or affinity; in systemd mode: affinity, for shared apps */
        struct unit_bus *ub; /* systemd mode: apps that are their unit's whole content */
        struct cpufreq *cf;
        struct real_app *apps; /* every wrapper handed out and not yet released */
};

/* One adopted app: through its unit, or through the cpuset side. */
struct real_app {
        struct unit_app *unit;
        struct cpuset_app *cs;
        struct real_app *prev, *next;
};

static const struct {
        enum cpuset_mode mode;
        const char *name;
} mode_names[] = {
    {CPUSET_AUTO, "auto"},         {CPUSET_V2, "v2"},           {CPUSET_V1, "v1"},
    {CPUSET_AFFINITY, "affinity"}, {CPUSET_SYSTEMD, "systemd"},
};

const char *actuator_mode_name(enum cpuset_mode mode)
{
        for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++)
                if (mode_names[i].mode == mode)
                        return mode_names[i].name;
        return "?";
}

int actuator_mode_parse(const char *s, enum cpuset_mode *out)
{
        for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++) {
                if (!strcmp(s, mode_names[i].name)) {
                        *out = mode_names[i].mode;
                        return 0;
                }
        }
        return -EINVAL;
}

bool actuator_error_is_transient(int err)
{
        switch (-err) {
        case EBUSY:  /* rmdir/migration races with the kernel finishing a move: next time */
        case EAGAIN: /* the kernel asked us to retry (e.g. a cgroup being set up) */
        case EINTR:  /* a signal cut the write short */
        case ENOMEM: /* memory pressure passes; nothing about the app is wrong */
                return true;
        case ENOSPC: /* v1 cpuset without cpus/mems, or no CPUs left: a set-up error */
        case EINVAL: /* the kernel refuses the value: retrying the same value will not help */
        case ERANGE: /* CPUs the machine does not have */
        case EACCES: /* no permission on cgroupfs/sysfs: needs configuration */
        case EPERM:  /* a capability is missing, or a kernel thread */
        case ENOENT: /* our cgroup or the sysfs file went away under us */
        case EIO:    /* the kernel reads back something else than we wrote */
        case ESRCH:  /* gone: not an error, but not worth retrying either */
        default:
                return false;
        }
}

const char *actuator_strerror(const struct actuator *a, int err)
{
        if (a && a->error[0])
                return a->error;
        return strerror(err < 0 ? -err : err);
}

static struct actuator_config config_defaults(const struct actuator_config *cfg)
{
        struct actuator_config c = cfg ? *cfg : (struct actuator_config){.dvfs = true};

        if (!c.cgroup_root || !c.cgroup_root[0])
                c.cgroup_root = "/sys/fs/cgroup";
        if (!c.group || !c.group[0])
                c.group = "pctl";
        if (!c.state_dir || !c.state_dir[0])
                c.state_dir = PCTL_STATEDIR;
        return c;
}

/* The app directory's PID, from its name "app-<pid>"; 0 if it is not one. */
static pid_t dir_app_pid(const char *dir)
{
        const char *base = strrchr(dir, '/');
        int pid;

        if (!base || strncmp(base + 1, "app-", 4) || parse_int(base + 5, &pid) < 0 || pid <= 0)
                return 0;
        return pid;
}

/* Undoes the entries: threads back first (so directories empty), directories newest first,
 * then frequencies. What cannot be undone now (other than things that are gone) is kept in
 * rec, for the next start, and counted in *out. Returns how many items were restored, or the
 * error of committing the record. */
static int recover_entries(struct state_record *rec, struct state_entry *e, size_t n,
                           struct actuator_recovery *out)
{
        int restored = 0, r;

#define KEEP(entry, err)                                                                           \
        do {                                                                                       \
                if (state_record_add(rec, (entry)) == 0 && out->kept++ == 0)                       \
                        out->kept_err = (err);                                                     \
        } while (0)
        for (size_t i = 0; i < n; i++) {
                if (e[i].kind != STATE_TASK)
                        continue;
                r = cpuset_restore_task(&e[i]);
                if (r == 0)
                        restored++;
                else if (r != -ESRCH)
                        KEEP(&e[i], r);
        }
        for (size_t i = n; i-- > 0;) {
                const char *fallback = NULL;
                pid_t pid;

                if (e[i].kind != STATE_DIR)
                        continue;
                if (access(e[i].path, F_OK) < 0)
                        continue; /* never made, or already gone */
                pid = dir_app_pid(e[i].path);
                for (size_t j = 0; pid && j < n && !fallback; j++)
                        if (e[j].kind == STATE_TASK && e[j].pid == pid && strcmp(e[j].path, "-"))
                                fallback = e[j].path;
                r = cpuset_remove_dir(e[i].path, fallback);
                if (r == 0)
                        restored++;
                else
                        KEEP(&e[i], r);
        }
        for (size_t i = 0; i < n; i++) {
                if (e[i].kind != STATE_UNIT)
                        continue;
                r = unit_restore_entry(&e[i]);
                if (r == 0)
                        restored++;
                else if (r != -ENOENT)
                        KEEP(&e[i], r); /* systemd not answering now: for the next start */
        }
        for (size_t i = 0; i < n; i++) {
                if (e[i].kind != STATE_FREQ)
                        continue;
                r = cpufreq_restore_policy(&e[i]);
                if (r == 0)
                        restored++;
                else if (r != -ENOENT)
                        KEEP(&e[i], r);
        }
#undef KEEP
        r = state_record_commit(rec);
        return r < 0 ? r : restored;
}

/* Undoes what the record holds and notes what it could not read in *out (when not NULL). */
static int recover_open_record(struct state_record *rec, const char *dir,
                               struct actuator_recovery *out)
{
        struct actuator_recovery none;
        const struct state_problem *problems;
        struct state_entry *e = NULL;
        size_t n = 0, n_listed, n_all;
        int r;

        if (!out)
                out = &none;
        *out = (struct actuator_recovery){0};
        snprintf(out->record, sizeof(out->record), "%s/%s", dir, STATE_RECORD_FILE);
        problems = state_record_problems(rec, &n_listed, &n_all);
        out->n_skipped = (unsigned)n_all;
        for (size_t i = 0; i < n_listed && i < ACTUATOR_MAX_SKIPPED; i++)
                out->skipped[i] = problems[i];
        r = state_record_take(rec, &e, &n);
        if (r == 0 && n)
                r = recover_entries(rec, e, n, out);
        free(e);
        if (r > 0)
                out->restored = (unsigned)r;
        return r;
}

int actuator_recover(const struct actuator_config *cfg_in, struct actuator_recovery *out)
{
        struct actuator_config cfg = config_defaults(cfg_in);
        struct state_record *rec;
        int r;

        r = state_record_open(cfg.state_dir, &rec);
        if (r < 0)
                return r; /* -EBUSY: a live instance holds the record; not ours to undo */
        r = recover_open_record(rec, cfg.state_dir, out);
        state_record_close(rec);
        return r;
}

/* Which mode and why. auto: systemd's way where PID 1 is systemd, the cpuset controller is on
 * cgroup v2 and the system bus answers; under systemd otherwise v1 or affinity, never a
 * subtree of our own unit; without systemd what cpuset_probe picks. */
static int resolve_mode(const struct actuator_config *cfg, enum cpuset_mode *mode,
                        struct actuator_probe *out)
{
        struct actuator_config c = *cfg;
        struct actuator_probe p = {0};
        struct unit_facts f;
        char why_sd[200], buf[sizeof(p.reason) + 512];
        int r;

        if (cfg->mode != CPUSET_AUTO && cfg->mode != CPUSET_SYSTEMD)
                return cpuset_probe(cfg, mode, out);
        unit_facts_read(cfg->cgroup_root, &f);
        if (f.systemd && f.v2_cpuset)
                unit_facts_ask_bus(&f);
        if (unit_facts_usable(&f, why_sd, sizeof(why_sd))) {
                *mode = CPUSET_SYSTEMD;
                *out = (struct actuator_probe){.available = true};
                snprintf(out->reason, sizeof(out->reason),
                         "systemd: AllowedCPUs= on each app's own unit, affinity for a process "
                         "that shares its unit (PID 1 is systemd, cpuset on cgroup v2, the "
                         "system bus answers)");
                return 0;
        }
        if (cfg->mode == CPUSET_SYSTEMD) {
                *mode = CPUSET_SYSTEMD;
                *out = (struct actuator_probe){.err = -ENODEV};
                snprintf(out->reason, sizeof(out->reason), "systemd: %s", why_sd);
                return -ENODEV;
        }
        if (!f.systemd) {
                r = cpuset_probe(cfg, mode, &p);
                snprintf(buf, sizeof(buf), "%s; not systemd: %s", p.reason, why_sd);
                strscpy(p.reason, buf, sizeof(p.reason));
                *out = p;
                return r;
        }
        /* Under systemd a subtree of pctld's own unit would take apps out of theirs. */
        c.mode = CPUSET_V1;
        r = cpuset_probe(&c, mode, &p);
        if (r == 0) {
                snprintf(buf, sizeof(buf), "cgroup v1 cpuset (not systemd: %s)", why_sd);
        } else {
                snprintf(buf, sizeof(buf),
                         "affinity (not systemd: %s; not v1: %s; not v2: under systemd it would "
                         "take apps out of their units)",
                         why_sd, p.reason);
                *mode = CPUSET_AFFINITY;
        }
        *out = (struct actuator_probe){.available = true};
        strscpy(out->reason, buf, sizeof(out->reason));
        return 0;
}

static int real_probe(const struct actuator_config *cfg_in, struct actuator_probe *cpuset,
                      struct actuator_probe *freq)
{
        struct actuator_config cfg = config_defaults(cfg_in);
        enum cpuset_mode mode;
        int r;

        r = resolve_mode(&cfg, &mode, cpuset);
        memset(freq, 0, sizeof(*freq));
        if (!cfg.dvfs) {
                freq->err = -EPERM;
                snprintf(freq->reason, sizeof(freq->reason),
                         "cpufreq: disabled in the configuration; running without DVFS");
        } else {
                freq->err = cpufreq_probe(freq->reason, sizeof(freq->reason));
                freq->available = freq->err == 0;
                if (freq->available)
                        snprintf(freq->reason, sizeof(freq->reason), "cpufreq");
        }
        return r;
}

static void real_close(struct actuator *a);

static int real_open(struct actuator *a, const struct actuator_config *cfg_in)
{
        struct actuator_config cfg = config_defaults(cfg_in);
        struct actuator_real *p;
        int r;

        a->error[0] = '\0';
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        a->priv = p;
        r = state_record_open(cfg.state_dir, &p->rec);
        if (r < 0) {
                snprintf(a->error, sizeof(a->error),
                         r == -EBUSY ? "another process holds %s/" STATE_LOCK_FILE
                                     : "cannot open the state directory %s: %s",
                         cfg.state_dir, strerror(-r));
                goto fail;
        }
        /* A previous instance that died left its changes in the record: undo them first.
         * What cannot be undone now stays recorded, for the next start: not a reason to stop
         * this one. */
        r = recover_open_record(p->rec, cfg.state_dir, &a->recovery);
        if (r < 0) {
                snprintf(a->error, sizeof(a->error), "cannot update the state record in %s: %s",
                         cfg.state_dir, strerror(-r));
                goto fail;
        }
        {
                struct actuator_probe pr;
                enum cpuset_mode mode;
                struct actuator_config c = cfg;

                r = resolve_mode(&cfg, &mode, &pr);
                if (r < 0) {
                        strscpy(a->error, pr.reason, sizeof(a->error));
                        goto fail;
                }
                strscpy(a->mode_reason, pr.reason, sizeof(a->mode_reason));
                /* auto resolved here: the cpuset side opens exactly that (systemd: affinity,
                 * for the apps that share their unit). */
                if (cfg.mode == CPUSET_AUTO || cfg.mode == CPUSET_SYSTEMD)
                        c.mode = mode == CPUSET_SYSTEMD ? CPUSET_AFFINITY : mode;
                r = cpuset_open(&c, p->rec, &p->cs, a->error, sizeof(a->error));
                if (r < 0)
                        goto fail;
                a->mode = cpuset_mode(p->cs);
                if (mode == CPUSET_SYSTEMD) {
                        r = unit_bus_open(cfg.cgroup_root, p->rec, cpuset_allowed(p->cs), &p->ub,
                                          a->error, sizeof(a->error));
                        if (r < 0)
                                goto fail;
                        a->mode = CPUSET_SYSTEMD;
                }
        }
        if (!cfg.dvfs) {
                snprintf(a->freq_reason, sizeof(a->freq_reason),
                         "cpufreq: disabled in the configuration; running without DVFS");
        } else if (cpufreq_open(p->rec, &p->cf, a->freq_reason, sizeof(a->freq_reason)) == 0) {
                a->can_set_freq = true;
                a->n_domains = cpufreq_n_domains(p->cf);
                a->domains = (struct freq_domain *)cpufreq_domain(p->cf, 0);
        }
        return 0;
fail:
        real_close(a);
        return r;
}

static int real_wrap(struct actuator *a, struct unit_app *u, struct cpuset_app *c,
                     struct actuator_app **out)
{
        struct actuator_real *p = a->priv;
        struct real_app *ra = calloc(1, sizeof(*ra));

        if (!ra) {
                if (u)
                        unit_release(p->ub, u);
                if (c)
                        cpuset_release(p->cs, c);
                snprintf(a->error, sizeof(a->error), "out of memory");
                return -ENOMEM;
        }
        ra->unit = u;
        ra->cs = c;
        /* Listed, so that close frees the ones still held (unit_bus_close and cpuset_close
         * give back their units and cpusets). */
        ra->next = p->apps;
        if (p->apps)
                p->apps->prev = ra;
        p->apps = ra;
        *out = (struct actuator_app *)ra;
        return 0;
}

static int real_adopt_cs(struct actuator *a, pid_t pid, const char *name, struct actuator_app **out)
{
        struct actuator_real *p = a->priv;
        struct cpuset_app *app;
        int r = cpuset_adopt(p->cs, pid, name, &app);

        strscpy(a->error, cpuset_error(p->cs), sizeof(a->error));
        return r < 0 ? r : real_wrap(a, NULL, app, out);
}

/* A process in another cgroup namespace belongs to a container and its own manager. */
static int check_cgroup_ns(struct actuator *a, pid_t pid)
{
        char path[64];
        struct stat mine, theirs;

        snprintf(path, sizeof(path), "/proc/%d/ns/cgroup", (int)pid);
        if (stat("/proc/self/ns/cgroup", &mine) < 0 || stat(path, &theirs) < 0)
                return 0; /* no cgroup namespaces, or gone: adopt says which */
        if (mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev)
                return 0;
        snprintf(a->error, sizeof(a->error),
                 "process %d is in another cgroup namespace (a container's): it is its "
                 "container's to manage, not pctld's",
                 (int)pid);
        return -EPERM;
}

static int real_adopt(struct actuator *a, pid_t pid, const char *name, struct actuator_app **out)
{
        struct actuator_real *p = a->priv;
        struct unit_app *u;
        int r;

        a->error[0] = '\0';
        r = check_cgroup_ns(a, pid);
        if (r < 0)
                return r;
        if (!p->ub)
                return real_adopt_cs(a, pid, name, out);
        r = unit_adopt(p->ub, pid, name, &u);
        if (r == -EXDEV)
                /* It shares its unit: its threads and later children, by affinity. */
                return real_adopt_cs(a, pid, name, out);
        strscpy(a->error, unit_bus_error(p->ub), sizeof(a->error));
        return r < 0 ? r : real_wrap(a, u, NULL, out);
}

static int real_adopt_new(struct actuator *a, pid_t pid, const char *name,
                          struct actuator_app **out)
{
        struct actuator_real *p = a->priv;
        struct unit_app *u;
        int r;

        a->error[0] = '\0';
        if (!p->ub)
                return real_adopt(a, pid, name, out);
        r = check_cgroup_ns(a, pid);
        if (r < 0)
                return r;
        r = unit_adopt_scope(p->ub, pid, name, &u);
        strscpy(a->error, unit_bus_error(p->ub), sizeof(a->error));
        return r < 0 ? r : real_wrap(a, u, NULL, out);
}

const char *actuator_real_app_where(const struct actuator_app *app)
{
        const struct real_app *ra = (const struct real_app *)app;

        if (!ra)
                return "";
        return ra->unit ? unit_app_name(ra->unit) : cpuset_app_dir(ra->cs);
}

static void real_where(const struct actuator *a, const struct actuator_app *app, char *buf,
                       size_t size)
{
        const struct real_app *ra = (const struct real_app *)app;
        const char *dir = ra->unit ? "" : cpuset_app_dir(ra->cs);

        (void)a;
        if (ra->unit)
                snprintf(buf, size, "systemd unit %s (AllowedCPUs=)", unit_app_name(ra->unit));
        else if (dir[0])
                snprintf(buf, size, "cgroup %s", dir);
        else
                snprintf(buf, size, "affinity (its threads and later children)");
}

static int real_set_cpus(struct actuator *a, struct actuator_app *app, const struct cpumask *cpus)
{
        struct actuator_real *p = a->priv;
        struct real_app *ra = (struct real_app *)app;
        int r;

        if (ra->unit) {
                r = unit_set_cpus(p->ub, ra->unit, cpus);
                strscpy(a->error, unit_bus_error(p->ub), sizeof(a->error));
                return r;
        }
        r = cpuset_set_cpus(p->cs, ra->cs, cpus);
        strscpy(a->error, cpuset_error(p->cs), sizeof(a->error));
        return r;
}

static int real_get_cpus(struct actuator *a, struct actuator_app *app, struct cpumask *out)
{
        struct actuator_real *p = a->priv;
        struct real_app *ra = (struct real_app *)app;
        int r;

        if (ra->unit) {
                r = unit_get_cpus(p->ub, ra->unit, out);
                strscpy(a->error, unit_bus_error(p->ub), sizeof(a->error));
                return r;
        }
        r = cpuset_get_cpus(p->cs, ra->cs, out);
        strscpy(a->error, cpuset_error(p->cs), sizeof(a->error));
        return r;
}

static int real_refresh(struct actuator *a, struct actuator_app *app)
{
        struct actuator_real *p = a->priv;
        struct real_app *ra = (struct real_app *)app;
        int r;

        if (ra->unit) {
                r = unit_refresh(p->ub, ra->unit);
                strscpy(a->error, unit_bus_error(p->ub), sizeof(a->error));
                return r;
        }
        r = cpuset_refresh(p->cs, ra->cs);
        strscpy(a->error, cpuset_error(p->cs), sizeof(a->error));
        return r;
}

static int real_release(struct actuator *a, struct actuator_app *app)
{
        struct actuator_real *p = a->priv;
        struct real_app *ra = (struct real_app *)app;
        int r;

        if (!ra)
                return 0;
        if (ra->unit) {
                r = unit_release(p->ub, ra->unit);
                strscpy(a->error, unit_bus_error(p->ub), sizeof(a->error));
        } else {
                r = cpuset_release(p->cs, ra->cs);
                strscpy(a->error, cpuset_error(p->cs), sizeof(a->error));
        }
        if (ra->prev)
                ra->prev->next = ra->next;
        else
                p->apps = ra->next;
        if (ra->next)
                ra->next->prev = ra->prev;
        free(ra);
        return r;
}

static int real_set_freq(struct actuator *a, unsigned domain, unsigned freq_khz)
{
        struct actuator_real *p = a->priv;
        int r;

        if (!p->cf) {
                strscpy(a->error, a->freq_reason, sizeof(a->error));
                return -ENODEV;
        }
        r = cpufreq_set(p->cf, domain, freq_khz);
        strscpy(a->error, cpufreq_error(p->cf), sizeof(a->error));
        return r;
}

static int real_restore_freq(struct actuator *a, unsigned domain)
{
        struct actuator_real *p = a->priv;
        int r;

        if (!p->cf)
                return 0; /* never set */
        r = cpufreq_restore(p->cf, domain);
        strscpy(a->error, cpufreq_error(p->cf), sizeof(a->error));
        return r;
}

static void real_close(struct actuator *a)
{
        struct actuator_real *p = a->priv;

        if (!p)
                return;
        unit_bus_close(p->ub);
        cpuset_close(p->cs);
        cpufreq_close(p->cf);
        while (p->apps) {
                struct real_app *next = p->apps->next;

                free(p->apps);
                p->apps = next;
        }
        /* Whatever could not be undone stays in the record for the next start. */
        if (p->rec)
                state_record_commit(p->rec);
        state_record_close(p->rec);
        free(p);
        a->priv = NULL;
        a->domains = NULL;
        a->n_domains = 0;
        a->can_set_freq = false;
}

const struct actuator_ops actuator_real_ops = {
    .name = "real",
    .probe = real_probe,
    .open = real_open,
    .adopt = real_adopt,
    .adopt_new = real_adopt_new,
    .set_cpus = real_set_cpus,
    .get_cpus = real_get_cpus,
    .refresh = real_refresh,
    .release = real_release,
    .where = real_where,
    .set_freq = real_set_freq,
    .restore_freq = real_restore_freq,
    .close = real_close,
};

int actuator_open(const struct actuator_ops *ops, const struct actuator_config *cfg,
                  struct actuator **out, char *why, size_t why_size)
{
        struct actuator *a;
        int r;

        if (!ops || !ops->open)
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->ops = ops;
        r = ops->open(a, cfg);
        if (r < 0) {
                if (why)
                        snprintf(why, why_size, "%s", actuator_strerror(a, r));
                free(a);
                return r;
        }
        *out = a;
        return 0;
}

void actuator_close(struct actuator *a)
{
        if (!a)
                return;
        if (a->ops && a->ops->close)
                a->ops->close(a);
        free(a);
}
