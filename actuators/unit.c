/* An app's own systemd unit as the actuator (see unit.h): AllowedCPUs= over sd-bus, a
 * transient scope for a command pctl starts, and the check that a process is its unit's
 * whole content. */
#include "pctl/unit.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "pctl/cpuset.h"
#include "pctl/fsio.h"
#include "pctl/procstat.h"
#include "pctl/util.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define UNIT_CG_MAX STATE_PATH_MAX
/* How long systemd may take to put a new scope's process in place or to apply AllowedCPUs=
 * to the cgroup after it answered (it realises cgroups after the reply). */
#define UNIT_SETTLE_MS 5000

struct unit_app {
        struct unit_app *next;
        pid_t pid;
        unsigned long long start_ticks;
        int pidfd;                /* -1 when the kernel has none */
        char name[64];            /* "comm[pid]" for messages */
        char unit[UNIT_NAME_MAX]; /* its unit's Id */
        char cgroup[UNIT_CG_MAX]; /* the unit's cgroup directory, with the mount */
        struct cpumask old;       /* AllowedCPUs= before us; empty: not set */
        bool recorded;
};

struct unit_bus {
        sd_bus *bus;
        struct state_record *rec;
        char mount[UNIT_CG_MAX];
        struct cpumask allowed;
        struct unit_app *apps;
        char err[320];
};

/* The unit types that carry a cgroup, and the D-Bus interface of their cgroup properties. */
static const struct {
        const char *suffix;
        const char *iface;
} unit_ifaces[] = {
    {".service", "org.freedesktop.systemd1.Service"},
    {".scope", "org.freedesktop.systemd1.Scope"},
    {".slice", "org.freedesktop.systemd1.Slice"},
    {".socket", "org.freedesktop.systemd1.Socket"},
    {".mount", "org.freedesktop.systemd1.Mount"},
    {".swap", "org.freedesktop.systemd1.Swap"},
};

static const char *unit_iface(const char *unit)
{
        size_t n = strlen(unit);

        for (size_t i = 0; i < ARRAY_SIZE(unit_ifaces); i++) {
                size_t k = strlen(unit_ifaces[i].suffix);

                if (n > k && !strcmp(unit + n - k, unit_ifaces[i].suffix))
                        return unit_ifaces[i].iface;
        }
        return NULL;
}

static int fail(struct unit_bus *ub, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct unit_bus *ub, int err, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(ub->err, sizeof(ub->err), fmt, ap);
        va_end(ap);
        return err;
}

const char *unit_bus_error(const struct unit_bus *ub)
{
        return ub->err;
}
const char *unit_app_name(const struct unit_app *app)
{
        return app->unit;
}
const char *unit_app_cgroup(const struct unit_app *app)
{
        return app->cgroup;
}

/* A D-Bus failure in words, and the errno it stands for: no answer is -ETIMEDOUT, no bus
 * -ENOTCONN, systemd's refusal -EPERM (access) or -EINVAL (anything else). */
static bool bus_broken(int r)
{
        return r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE || r == -ESHUTDOWN;
}

static int bus_errno(int r, const sd_bus_error *e, char *why, size_t why_size)
{
        if (bus_broken(r)) {
                snprintf(why, why_size, "the D-Bus connection broke: %s", strerror(-r));
                return r;
        }
        if (r == -ETIMEDOUT) {
                snprintf(why, why_size, "systemd did not answer on D-Bus within %llu s",
                         UNIT_BUS_TIMEOUT_USEC / 1000000);
                return -ETIMEDOUT;
        }
        if (e && sd_bus_error_is_set(e)) {
                snprintf(why, why_size, "%s (%s)", e->message ? e->message : e->name, e->name);
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) ||
                    sd_bus_error_has_name(e, SD_BUS_ERROR_TIMEOUT))
                        return -ETIMEDOUT;
                if (sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") ||
                    sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoUnitForPID"))
                        return -ENOENT;
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED))
                        return -EPERM;
                return r == -EPERM || r == -EACCES ? r : -EINVAL;
        }
        snprintf(why, why_size, "D-Bus: %s", strerror(r < 0 ? -r : EIO));
        return r < 0 ? r : -EIO;
}

size_t unit_cpus_to_bytes(const struct cpumask *m, uint8_t *buf, size_t size)
{
        size_t n = 0;

        memset(buf, 0, size);
        cpumask_foreach (c, m) {
                if ((size_t)c / 8 >= size)
                        break;
                buf[c / 8] |= (uint8_t)(1u << (c % 8));
                n = (size_t)c / 8 + 1;
        }
        return n;
}

int unit_cpus_from_bytes(const uint8_t *buf, size_t n, struct cpumask *out)
{
        struct cpumask m;

        cpumask_zero(&m);
        for (size_t i = 0; i < n; i++)
                for (unsigned b = 0; b < 8; b++)
                        if (buf[i] & (1u << b)) {
                                if (i * 8 + b >= CPUMASK_MAX)
                                        return -ERANGE;
                                cpumask_set(&m, (unsigned)(i * 8 + b));
                        }
        *out = m;
        return 0;
}

int unit_facts_read(const char *cgroup_root, struct unit_facts *out)
{
        char path[UNIT_CG_MAX], buf[512];
        struct unit_facts f = {0};
        struct stat st;

        if (fs_path(path, sizeof(path), "/run/systemd/system") < 0)
                return -ENAMETOOLONG;
        f.systemd = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        if (fs_path(path, sizeof(path), "%s/cgroup.controllers", cgroup_root) == 0 &&
            file_read(path, buf, sizeof(buf)) >= 0)
                for (char *c = strtok(buf, " \n"); c; c = strtok(NULL, " \n"))
                        if (!strcmp(c, "cpuset"))
                                f.v2_cpuset = true;
        *out = f;
        return 0;
}

void unit_facts_ask_bus(struct unit_facts *f)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        int r;

        f->bus_tested = true;
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                f->bus_err = r;
                snprintf(f->bus_why, sizeof(f->bus_why), "cannot connect to the system bus: %s",
                         strerror(-r));
                return;
        }
        r = sd_bus_set_method_call_timeout(bus, UNIT_BUS_TIMEOUT_USEC);
        if (r >= 0)
                r = sd_bus_get_property(bus, SD_DEST, SD_PATH, SD_MANAGER, "Version", &e, &reply,
                                        "s");
        if (r < 0) {
                char why[sizeof(f->bus_why) - 40];

                f->bus_err = bus_errno(r, &e, why, sizeof(why));
                snprintf(f->bus_why, sizeof(f->bus_why), "the system bus does not answer: %s", why);
        } else {
                f->bus_err = 0;
                f->bus_why[0] = '\0';
        }
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
        sd_bus_flush_close_unref(bus);
}

bool unit_facts_usable(const struct unit_facts *f, char *why, size_t why_size)
{
        if (!f->systemd)
                snprintf(why, why_size, "PID 1 is not systemd (no /run/systemd/system)");
        else if (!f->v2_cpuset)
                snprintf(why, why_size, "the cpuset controller is not on cgroup v2");
        else if (f->bus_tested && f->bus_err < 0)
                snprintf(why, why_size, "%s", f->bus_why);
        else
                return true;
        return false;
}

/* The parent PID from /proc/PID/stat (field 4). */
static int proc_ppid(pid_t pid, pid_t *out)
{
        char path[64], buf[1024];
        long long v;
        ssize_t n;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        n = fs_read(path, buf, sizeof(buf));
        if (n < 0)
                return n == -ENOENT ? -ESRCH : (int)n;
        r = procstat_field(buf, 4, &v);
        if (r < 0)
                return r;
        *out = (pid_t)v;
        return 0;
}

static bool descends_from(pid_t p, pid_t root)
{
        /* A chain longer than this is a loop in a fake tree, or not ours. */
        for (int depth = 0; depth < 4096 && p > 1; depth++) {
                if (p == root)
                        return true;
                if (proc_ppid(p, &p) < 0)
                        return false;
        }
        return p == root;
}

/* 1 when every process in dir and its child groups descends from pid; 0 at the first that
 * does not, or when pid sits in a child group; *found says whether pid is in dir itself. */
static int cgroup_walk(const char *dir, pid_t pid, bool *found, int depth)
{
        char path[UNIT_CG_MAX + 32], buf[16384];
        struct dirent *de;
        ssize_t n;
        DIR *d;
        int r = 1;

        if (depth > 32)
                return 0;
        snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        n = file_read(path, buf, sizeof(buf));
        if (n < 0)
                return (int)n;
        if ((size_t)n >= sizeof(buf) - 1)
                return 0; /* more processes than we read: certainly not one app's */
        for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n")) {
                int p;

                if (parse_int(s, &p) < 0 || p <= 0)
                        continue;
                if (p == pid && depth == 0)
                        *found = true;
                else if (p == pid || !descends_from(p, pid))
                        return 0;
        }
        d = opendir(dir);
        if (!d)
                return -errno;
        while (r == 1 && (de = readdir(d))) {
                char sub[UNIT_CG_MAX];

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
                        continue;
                r = cgroup_walk(sub, pid, found, depth + 1);
        }
        closedir(d);
        return r;
}

int unit_cgroup_is_own(const char *dir, pid_t pid)
{
        bool found = false;
        int r = cgroup_walk(dir, pid, &found, 0);

        if (r < 0)
                return r;
        /* pid itself must sit in the unit's own group, not in a sub-group some other manager
         * (a delegated unit's) keeps. */
        if (r == 1 && !found)
                return 0;
        return r;
}

int unit_bus_open(const char *cgroup_root, struct state_record *rec, const struct cpumask *allowed,
                  struct unit_bus **out, char *why, size_t why_size)
{
        struct unit_bus *ub = calloc(1, sizeof(*ub));
        int r;

        if (!ub)
                return -ENOMEM;
        ub->rec = rec;
        ub->allowed = *allowed;
        if (fs_path(ub->mount, sizeof(ub->mount), "%s", cgroup_root) < 0) {
                free(ub);
                return -ENAMETOOLONG;
        }
        r = sd_bus_open_system(&ub->bus);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(ub->bus, UNIT_BUS_TIMEOUT_USEC);
        if (r < 0) {
                snprintf(why, why_size, "cannot connect to the system bus: %s", strerror(-r));
                unit_bus_close(ub);
                return r;
        }
        *out = ub;
        return 0;
}

/* The bus connection, made again when the old one broke (dbus restarted). */
static sd_bus *bus_get(struct unit_bus *ub)
{
        if (ub->bus && sd_bus_is_open(ub->bus) > 0)
                return ub->bus;
        ub->bus = sd_bus_flush_close_unref(ub->bus);
        if (sd_bus_open_system(&ub->bus) < 0)
                return NULL;
        sd_bus_set_method_call_timeout(ub->bus, UNIT_BUS_TIMEOUT_USEC);
        return ub->bus;
}

/* SetUnitProperties(name, runtime=true, [("AllowedCPUs", ay)]): runtime only, so that
 * nothing of ours outlives a reboot. An empty mask sets it back to "not set". */
static int set_allowed(sd_bus *bus, const char *unit, const struct cpumask *cpus, char *why,
                       size_t why_size)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL, *reply = NULL;
        uint8_t bytes[CPUMASK_MAX / 8];
        size_t n = unit_cpus_to_bytes(cpus, bytes, sizeof(bytes));
        int r;

        if (!bus) {
                snprintf(why, why_size, "cannot connect to the system bus");
                return -ENOTCONN;
        }
        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
                                           "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", unit, 1);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "AllowedCPUs");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "ay");
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', bytes, n);
        for (int i = 0; r >= 0 && i < 3; i++)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_call(bus, m, UNIT_BUS_TIMEOUT_USEC, &e, &reply);
        if (r < 0)
                r = bus_errno(r, &e, why, why_size);
        sd_bus_message_unref(m);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
        return r < 0 ? r : 0;
}

static int unit_path(sd_bus *bus, const char *unit, char *path, size_t size, char *why,
                     size_t why_size)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *p;
        int r =
            sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", &e, &reply, "s", unit);

        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &p);
        if (r >= 0)
                r = strscpy(path, p, size);
        if (r < 0)
                r = bus_errno(r, &e, why, why_size);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
        return r < 0 ? r : 0;
}

/* The unit's Id, ControlGroup and AllowedCPUs=, by its object path. */
static int unit_read(sd_bus *bus, const char *path, char *id, size_t id_size, char *cg,
                     size_t cg_size, struct cpumask *allowed, char *why, size_t why_size)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        char *s = NULL;
        const void *bytes;
        const char *iface;
        size_t n;
        int r;

        r = sd_bus_get_property_string(bus, SD_DEST, path, "org.freedesktop.systemd1.Unit", "Id",
                                       &e, &s);
        if (r < 0)
                goto out;
        r = strscpy(id, s, id_size);
        free(s);
        s = NULL;
        if (r < 0)
                goto out;
        iface = unit_iface(id);
        if (!iface) {
                snprintf(why, why_size, "%s is a unit without a cgroup of its own", id);
                return -EPERM;
        }
        r = sd_bus_get_property_string(bus, SD_DEST, path, iface, "ControlGroup", &e, &s);
        if (r < 0)
                goto out;
        r = strscpy(cg, s, cg_size);
        free(s);
        if (r < 0)
                goto out;
        r = sd_bus_get_property(bus, SD_DEST, path, iface, "AllowedCPUs", &e, &reply, "ay");
        if (r >= 0)
                r = sd_bus_message_read_array(reply, 'y', &bytes, &n);
        if (r >= 0)
                r = unit_cpus_from_bytes(bytes, n, allowed);
out:
        if (r < 0 && !why[0])
                r = bus_errno(r, &e, why, why_size);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
        return r < 0 ? r : 0;
}

static int read_effective(const struct unit_app *app, struct cpumask *out)
{
        char path[UNIT_CG_MAX + 32], buf[CPUMASK_LIST_MAX];
        ssize_t n;

        snprintf(path, sizeof(path), "%s/cpuset.cpus.effective", app->cgroup);
        n = file_read(path, buf, sizeof(buf));
        return n < 0 ? (int)n : cpumask_parse(buf, out);
}

static void sleep_ms(unsigned ms)
{
        nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, NULL);
}

/* Sets AllowedCPUs= and waits for the kernel's answer (systemd applies it to the cgroup after
 * its reply): -EIO when the unit's cpuset.cpus.effective does not become `cpus`. */
static int apply(struct unit_bus *ub, struct unit_app *app, const struct cpumask *cpus)
{
        char want[CPUMASK_LIST_MAX], got[CPUMASK_LIST_MAX], why[256] = "";
        struct cpumask now;
        int r = set_allowed(bus_get(ub), app->unit, cpus, why, sizeof(why));

        if (bus_broken(r)) {
                ub->bus = sd_bus_flush_close_unref(ub->bus);
                why[0] = '\0';
                r = set_allowed(bus_get(ub), app->unit, cpus, why, sizeof(why));
        }

        cpumask_format(cpus, want, sizeof(want));
        if (r < 0)
                return fail(ub, r, "systemd refused AllowedCPUs=%s on %s: %s", want, app->unit,
                            why);
        for (unsigned ms = 0;; ms += 20) {
                r = read_effective(app, &now);
                if (r == 0 && cpumask_equal(&now, cpus))
                        return 0;
                if (ms >= UNIT_SETTLE_MS)
                        break;
                sleep_ms(20);
        }
        if (r < 0)
                return fail(ub, r, "cannot read %s/cpuset.cpus.effective: %s", app->cgroup,
                            strerror(-r));
        cpumask_format(&now, got, sizeof(got));
        return fail(ub, -EIO,
                    "%s refuses AllowedCPUs=%s: its cpuset.cpus.effective stays %s (a slice "
                    "above it may limit its CPUs)",
                    app->unit, want, got);
}

static struct state_entry unit_entry(const struct unit_app *app)
{
        struct state_entry e = {.kind = STATE_UNIT, .mask = app->old};

        strscpy(e.path, app->unit, sizeof(e.path));
        return e;
}

static int record(struct unit_bus *ub, struct unit_app *app)
{
        struct state_entry e = unit_entry(app);
        int r = state_record_add(ub->rec, &e);

        if (r == 0)
                r = state_record_commit(ub->rec);
        if (r < 0)
                return fail(ub, r, "cannot write the state record: %s", strerror(-r));
        app->recorded = true;
        return 0;
}

static void forget(struct unit_bus *ub, struct unit_app *app)
{
        struct state_entry e = unit_entry(app);

        if (!app->recorded)
                return;
        state_record_remove(ub->rec, &e);
        (void)state_record_commit(ub->rec);
        app->recorded = false;
}

static void app_free(struct unit_app *app)
{
        if (app && app->pidfd >= 0)
                close(app->pidfd);
        free(app);
}

/* The start time (one clock tick of resolution) and, where the kernel has them, a pidfd: once
 * the adopted process was reaped, signal 0 through it says ESRCH whatever the PID names now. */
static bool app_is_current(const struct unit_app *app)
{
        unsigned long long start;

        if (app->pidfd >= 0 && syscall(SYS_pidfd_send_signal, app->pidfd, 0, NULL, 0) < 0 &&
            errno == ESRCH)
                return false;
        return proc_thread_start(app->pid, app->pid, &start) == 0 && start == app->start_ticks;
}

static int app_new(struct unit_bus *ub, pid_t pid, const char *name, struct unit_app **out)
{
        struct unit_app *app;

        for (app = ub->apps; app; app = app->next)
                if (app->pid == pid)
                        return fail(ub, -EEXIST, "process %d is already adopted", (int)pid);
        app = calloc(1, sizeof(*app));
        if (!app)
                return fail(ub, -ENOMEM, "out of memory");
        app->pid = pid;
        app->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        snprintf(app->name, sizeof(app->name), "%s[%d]", name && *name ? name : "pid", (int)pid);
        if (proc_thread_start(pid, pid, &app->start_ticks) < 0) {
                app_free(app);
                return fail(ub, -ESRCH, "process %d does not exist", (int)pid);
        }
        *out = app;
        return 0;
}

/* The unit is the app's now: widened to what pctl may use (which checks that systemd and the
 * kernel accept AllowedCPUs= on it), recorded first; on failure the old value goes back. */
static int take(struct unit_bus *ub, struct unit_app *app, struct unit_app **out)
{
        char saved[sizeof(ub->err)], why[256] = "";
        int r = record(ub, app);

        if (r == 0)
                r = apply(ub, app, &ub->allowed);
        if (r < 0) {
                memcpy(saved, ub->err, sizeof(saved));
                if (set_allowed(bus_get(ub), app->unit, &app->old, why, sizeof(why)) == 0)
                        forget(ub, app);
                memcpy(ub->err, saved, sizeof(saved));
                app_free(app);
                return r;
        }
        if (!app_is_current(app)) {
                unit_release(ub, app);
                return fail(ub, -ESRCH, "process %d exited while being adopted", (int)app->pid);
        }
        app->next = ub->apps;
        ub->apps = app;
        *out = app;
        return 0;
}

/* What both ways of adopting start with: a fresh error, the app's record and a bus. */
static int adopt_begin(struct unit_bus *ub, pid_t pid, const char *name, struct unit_app **app,
                       sd_bus **bus)
{
        int r;

        ub->err[0] = '\0';
        r = app_new(ub, pid, name, app);
        if (r < 0)
                return r;
        *bus = bus_get(ub);
        if (!*bus) {
                app_free(*app);
                return fail(ub, -ENOTCONN, "cannot connect to the system bus");
        }
        return 0;
}

int unit_adopt(struct unit_bus *ub, pid_t pid, const char *name, struct unit_app **out)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        char why[256] = "", cg[UNIT_CG_MAX];
        const char *path;
        struct unit_app *app;
        sd_bus *bus;
        int r;

        r = adopt_begin(ub, pid, name, &app, &bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnitByPID", &e, &reply, "u",
                               (uint32_t)pid);
        if (bus_broken(r)) {
                /* The connection died while idle (seen in the VM after pctld's restarts): once
                 * more on a new one. */
                sd_bus_error_free(&e);
                ub->bus = sd_bus_flush_close_unref(ub->bus);
                bus = bus_get(ub);
                r = bus ? sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnitByPID", &e,
                                             &reply, "u", (uint32_t)pid)
                        : -ENOTCONN;
        }
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &path);
        if (r < 0) {
                r = bus_errno(r, &e, why, sizeof(why));
                sd_bus_message_unref(reply);
                sd_bus_error_free(&e);
                app_free(app);
                return fail(ub, r, "cannot ask systemd for the unit of process %d: %s", (int)pid,
                            why);
        }
        r = unit_read(bus, path, app->unit, sizeof(app->unit), cg, sizeof(cg), &app->old, why,
                      sizeof(why));
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
        if (r < 0) {
                app_free(app);
                return fail(ub, r, "cannot read the unit of process %d: %s", (int)pid, why);
        }
        if (snprintf(app->cgroup, sizeof(app->cgroup), "%s%s", ub->mount, cg) >=
            (int)sizeof(app->cgroup)) {
                app_free(app);
                return fail(ub, -ENAMETOOLONG, "cgroup path too long");
        }
        r = !cg[0] || !strcmp(cg, "/") ? 0 : unit_cgroup_is_own(app->cgroup, pid);
        if (r <= 0) {
                app_free(app);
                if (r < 0)
                        return fail(ub, r, "cannot list the processes of %s: %s", app->cgroup,
                                    strerror(-r));
                return fail(ub, -EXDEV, "process %d shares %s with processes pctld does not manage",
                            (int)pid, app->unit);
        }
        return take(ub, app, out);
}

/* Waits until pid is in the scope's cgroup: systemd moves it once the start job runs. */
static int wait_in_scope(struct unit_app *app)
{
        char path[96], buf[UNIT_CG_MAX], want[UNIT_NAME_MAX + 2];

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)app->pid);
        snprintf(want, sizeof(want), "/%s", app->unit);
        for (unsigned ms = 0; ms <= UNIT_SETTLE_MS; ms += 20) {
                char *line;

                if (fs_read(path, buf, sizeof(buf)) < 0)
                        return -ESRCH;
                line = strstr(buf, "0::");
                if (line) {
                        line += 3;
                        line[strcspn(line, "\n")] = '\0';
                        if (strlen(line) >= strlen(want) &&
                            !strcmp(line + strlen(line) - strlen(want), want))
                                return 0;
                }
                sleep_ms(20);
        }
        return -ETIMEDOUT;
}

int unit_adopt_scope(struct unit_bus *ub, pid_t pid, const char *name, struct unit_app **out)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL, *reply = NULL;
        char why[256] = "", desc[128], path[256], cg[UNIT_CG_MAX], id[UNIT_NAME_MAX];
        struct unit_app *app;
        sd_bus *bus;
        int r;

        r = adopt_begin(ub, pid, name, &app, &bus);
        if (r < 0)
                return r;
        snprintf(app->unit, sizeof(app->unit), "pctl-run-%d.scope", (int)pid);
        snprintf(desc, sizeof(desc), "pctl run: %s", app->name);
        /* StartTransientUnit(name, mode, properties a(sv), aux a(sa(sv))), as systemd-run
         * --scope does: the process goes into the new scope, under our slice. */
        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
                                           "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", app->unit, "fail");
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sv)", 3, "Description", "s", desc, "Slice", "s",
                                          UNIT_SLICE, "PIDs", "au", 1, (uint32_t)pid);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r >= 0)
                r = sd_bus_call(bus, m, UNIT_BUS_TIMEOUT_USEC, &e, &reply);
        if (r < 0) {
                r = bus_errno(r, &e, why, sizeof(why));
                sd_bus_message_unref(m);
                sd_bus_message_unref(reply);
                sd_bus_error_free(&e);
                app_free(app);
                return fail(ub, r, "systemd cannot start a scope for process %d: %s", (int)pid,
                            why);
        }
        sd_bus_message_unref(m);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
        r = wait_in_scope(app);
        if (r == 0)
                r = unit_path(bus, app->unit, path, sizeof(path), why, sizeof(why));
        if (r == 0)
                r = unit_read(bus, path, id, sizeof(id), cg, sizeof(cg), &app->old, why,
                              sizeof(why));
        if (r == 0 && snprintf(app->cgroup, sizeof(app->cgroup), "%s%s", ub->mount, cg) >=
                          (int)sizeof(app->cgroup))
                r = -ENAMETOOLONG;
        if (r < 0) {
                app_free(app);
                return fail(ub, r, "the scope %s for process %d: %s", desc, (int)pid,
                            why[0] ? why : strerror(-r));
        }
        return take(ub, app, out);
}

int unit_set_cpus(struct unit_bus *ub, struct unit_app *app, const struct cpumask *cpus)
{
        ub->err[0] = '\0';
        if (!app_is_current(app))
                return fail(ub, -ESRCH, "%s has exited", app->name);
        return apply(ub, app, cpus);
}

int unit_get_cpus(struct unit_bus *ub, struct unit_app *app, struct cpumask *out)
{
        int r;

        ub->err[0] = '\0';
        r = read_effective(app, out);
        if (r < 0)
                return fail(ub, r == -ENOENT ? -ESRCH : r, "cannot read where %s may run: %s",
                            app->name, strerror(-r));
        return 0;
}

int unit_refresh(struct unit_bus *ub, struct unit_app *app)
{
        ub->err[0] = '\0';
        if (!app_is_current(app))
                return fail(ub, -ESRCH, "%s has exited", app->name);
        return 0;
}

int unit_release(struct unit_bus *ub, struct unit_app *app)
{
        char why[256] = "";
        int r;

        if (!app)
                return 0;
        ub->err[0] = '\0';
        for (struct unit_app **p = &ub->apps; *p; p = &(*p)->next)
                if (*p == app) {
                        *p = app->next;
                        break;
                }
        r = set_allowed(bus_get(ub), app->unit, &app->old, why, sizeof(why));
        /* A scope ends with its last process: nothing is left to give back. */
        if (r == 0 || r == -ENOENT)
                forget(ub, app);
        else
                fail(ub, r, "cannot give %s its AllowedCPUs= back: %s", app->unit, why);
        app_free(app);
        return r == -ENOENT ? 0 : r;
}

void unit_bus_close(struct unit_bus *ub)
{
        if (!ub)
                return;
        while (ub->apps)
                unit_release(ub, ub->apps);
        sd_bus_flush_close_unref(ub->bus);
        free(ub);
}

int unit_restore_entry(const struct state_entry *e)
{
        char why[256];
        sd_bus *bus = NULL;
        int r = sd_bus_open_system(&bus);

        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, UNIT_BUS_TIMEOUT_USEC);
        if (r >= 0)
                r = set_allowed(bus, e->path, &e->mask, why, sizeof(why));
        sd_bus_flush_close_unref(bus);
        return r;
}
