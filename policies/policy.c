/* Policy files: one table row per key, loading a directory as one set, and matching processes. */
#define _GNU_SOURCE /* FNM_LEADING_DIR */
#include "pctl/policy.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pctl/access.h"
#include "pctl/cpumask.h"
#include "pctl/fsio.h"
#include "pctl/inifile.h"
#include "pctl/inikey.h"
#include "pctl/proc_cgroup.h"
#include "pctl/util.h"

#define TASK_COMM_MAX 15 /* the kernel keeps 15 chars of a command name */

static int policy_pattern_add(struct policy_patterns *p, const char *value)
{
        char **v = realloc(p->v, (p->n + 1) * sizeof(*v));

        if (!v)
                return -ENOMEM;
        p->v = v;
        v[p->n] = strdup(value);
        if (!v[p->n])
                return -ENOMEM;
        p->n++;
        return 0;
}

static bool has_glob(const char *s)
{
        return strpbrk(s, "*?[") != NULL;
}

static int policy_set_comm(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        (void)ctx;
        if (!value[0]) {
                snprintf(why, why_size, "empty pattern");
                return -EINVAL;
        }
        if (!has_glob(value) && strlen(value) > TASK_COMM_MAX) {
                snprintf(why, why_size,
                         "'%s' can never match: the kernel keeps %d chars of a command name "
                         "(use '%.*s' or match_exe)",
                         value, TASK_COMM_MAX, TASK_COMM_MAX, value);
                return -EINVAL;
        }
        return policy_pattern_add(field, value);
}

static int policy_set_path(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        (void)ctx;
        if (value[0] != '/' && value[0] != '*') {
                snprintf(why, why_size,
                         "'%s' is not an absolute path or a pattern starting "
                         "with / or *",
                         value);
                return -EINVAL;
        }
        return policy_pattern_add(field, value);
}

static int policy_set_user(void *field, const char *value, void *ctx, char *why, size_t why_size)
{
        (void)ctx;
        if (!value[0]) {
                snprintf(why, why_size, "empty user name");
                return -EINVAL;
        }
        return policy_pattern_add(field, value);
}

#define MATCH_FIELD(kind) offsetof(struct policy, match) + (kind) * sizeof(struct policy_patterns)

/* One row per key: a new setting is one line here, and one in pctl-policy(5). */
static const struct inikey policy_keys[] = {
    {.key = "match_comm",
     .type = INIKEY_CUSTOM,
     .offset = MATCH_FIELD(POLICY_MATCH_COMM),
     .repeats = true,
     .custom = policy_set_comm,
     .doc = "command name glob (/proc/PID/comm); repeat = any of"},
    {.key = "match_exe",
     .type = INIKEY_CUSTOM,
     .offset = MATCH_FIELD(POLICY_MATCH_EXE),
     .repeats = true,
     .custom = policy_set_path,
     .doc = "executable path glob; repeat = any of"},
    {.key = "match_user",
     .type = INIKEY_CUSTOM,
     .offset = MATCH_FIELD(POLICY_MATCH_USER),
     .repeats = true,
     .custom = policy_set_user,
     .doc = "user name or uid glob; repeat = any of"},
    {.key = "match_cgroup",
     .type = INIKEY_CUSTOM,
     .offset = MATCH_FIELD(POLICY_MATCH_CGROUP),
     .repeats = true,
     .custom = policy_set_path,
     .doc = "cgroup path glob, matching below it too; repeat = any of"},
    {.key = "objective",
     .type = INIKEY_CHOICE,
     .offset = offsetof(struct policy, objective),
     .choices = "edp|ppw|energy|performance|monitor",
     .def = "edp",
     .doc = "edp, ppw, energy, performance or monitor"},
    {.key = "min_cores",
     .type = INIKEY_UINT,
     .offset = offsetof(struct policy, min_cores),
     .min = 1,
     .max = CPUMASK_MAX,
     .def = "1",
     .doc = "fewest cores"},
    {.key = "max_cores",
     .type = INIKEY_UINT,
     .offset = offsetof(struct policy, max_cores),
     .min = 1,
     .max = CPUMASK_MAX,
     .none_ok = true,
     .def = "none",
     .doc = "most cores; none = every allowed core"},
    {.key = "min_freq",
     .type = INIKEY_UINT,
     .offset = offsetof(struct policy, min_freq_mhz),
     .min = 1,
     .max = 100000,
     .none_ok = true,
     .def = "none",
     .doc = "lowest frequency, MHz; none = the lowest available"},
    {.key = "max_freq",
     .type = INIKEY_UINT,
     .offset = offsetof(struct policy, max_freq_mhz),
     .min = 1,
     .max = 100000,
     .none_ok = true,
     .def = "none",
     .doc = "highest frequency, MHz; none = the highest available"},
    {.key = "max_slowdown",
     .type = INIKEY_DOUBLE,
     .offset = offsetof(struct policy, max_slowdown),
     .min = 0,
     .max = 100,
     .none_ok = true,
     .def = "none",
     .doc = "0.1 = at most 10% slower than alone on all allowed cores at top frequency"},
    {.key = "weight",
     .type = INIKEY_DOUBLE,
     .offset = offsetof(struct policy, weight),
     .min = 0,
     .min_exclusive = true,
     .max = 1000,
     .def = "1",
     .doc = "share of contended cores, relative to other apps"},
    {.key = "max_apps",
     .type = INIKEY_UINT,
     .offset = offsetof(struct policy, max_apps),
     .min = 0,
     .max = 100000,
     .def = "32",
     .doc = "apps this policy's rules may have adopted at once; 0: its rules adopt nothing"},
    {.key = "search",
     .type = INIKEY_CHOICE,
     .offset = offsetof(struct policy, search),
     .choices = "measured|model",
     .def = "measured",
     .doc = "measured: verify the model by measurement; model: go where it predicts best"},
};

enum { KEY_MIN_CORES = 5, KEY_MAX_CORES, KEY_MIN_FREQ, KEY_MAX_FREQ };

bool policy_key_info(size_t i, struct config_key_info *out)
{
        if (i >= ARRAY_SIZE(policy_keys))
                return false;
        *out = (struct config_key_info){"policy NAME", policy_keys[i].key,
                                        policy_keys[i].def ? policy_keys[i].def : "",
                                        policy_keys[i].doc};
        return true;
}

static void policy_init(struct policy *p, const char *name)
{
        *p = (struct policy){};
        strscpy(p->name, name, sizeof(p->name));
        /* The table's defaults; a unit test checks that each one parses. */
        inikey_defaults(policy_keys, ARRAY_SIZE(policy_keys), p);
}

static void policy_free(struct policy *p)
{
        for (unsigned k = 0; k < POLICY_MATCH_KINDS; k++) {
                for (size_t i = 0; i < p->match[k].n; i++)
                        free(p->match[k].v[i]);
                free(p->match[k].v);
                p->match[k] = (struct policy_patterns){};
        }
}

void policy_set_free(struct policy_set *s)
{
        for (size_t i = 0; i < s->n; i++)
                policy_free(&s->v[i]);
        free(s->v);
        *s = (struct policy_set){};
}

static struct policy policy_builtins[OBJECTIVE_COUNT];
static pthread_once_t policy_builtins_once = PTHREAD_ONCE_INIT;

static void policy_builtins_init(void)
{
        for (unsigned o = 0; o < OBJECTIVE_COUNT; o++) {
                policy_init(&policy_builtins[o], objective_to_string(o));
                policy_builtins[o].objective = o;
        }
}

const struct policy *policy_builtin(enum objective_kind o)
{
        if ((unsigned)o >= OBJECTIVE_COUNT)
                return NULL;
        pthread_once(&policy_builtins_once, policy_builtins_init);
        return &policy_builtins[o];
}

const struct policy *policy_lookup(const struct policy_set *s, const char *name)
{
        enum objective_kind o;

        for (size_t i = 0; s && i < s->n; i++)
                if (strcmp(s->v[i].name, name) == 0)
                        return &s->v[i];
        if (objective_from_string(name, &o) == 0)
                return policy_builtin(o);
        return NULL;
}

/* Parsing one file into the set being built. */
struct policy_ctx {
        struct policy_set *set;
        const char *file;
        struct config_problems *problems;
        struct inifile_scan scan;
        ssize_t *section_policy; /* per scanned section: index in set, or -1 */
        int (*key_line)[ARRAY_SIZE(policy_keys)];
};

static int policy_handler(void *user, const char *section, const char *key, const char *value,
                          int lineno)
{
        struct policy_ctx *c = user;
        int idx = inifile_scan_section_at(&c->scan, lineno);
        const struct inikey *k;
        struct policy *p;
        size_t ki;
        char why[240] = "";
        int r;

        (void)section;
        if (idx < 0) {
                config_problems_add(c->problems, c->file, lineno,
                                    "%s: key outside any [policy NAME] section", key);
                return -EINVAL;
        }
        if (c->section_policy[idx] < 0)
                return 0; /* the section header was reported */
        p = &c->set->v[c->section_policy[idx]];
        k = inikey_find(policy_keys, ARRAY_SIZE(policy_keys), key);
        if (!k) {
                char names[400];

                inikey_names(policy_keys, ARRAY_SIZE(policy_keys), names, sizeof(names));
                config_problems_add(c->problems, c->file, lineno,
                                    "[policy %s] %s: unknown key (known: %s)", p->name, key, names);
                return -EINVAL;
        }
        ki = (size_t)(k - policy_keys);
        if (!k->repeats && c->key_line[idx][ki]) {
                config_problems_add(c->problems, c->file, lineno,
                                    "[policy %s] %s: set twice (first at line %d)", p->name, key,
                                    abs(c->key_line[idx][ki]));
                return -EINVAL;
        }
        r = inikey_set(k, p, value, NULL, why, sizeof(why));
        if (r == -ENOMEM)
                snprintf(why, sizeof(why), "out of memory");
        if (r < 0) {
                config_problems_add(c->problems, c->file, lineno, "[policy %s] %s: %s", p->name,
                                    key, why);
                /* Negative: refused; keeps the min/max check off it. */
                c->key_line[idx][ki] = -lineno;
                return r;
        }
        c->key_line[idx][ki] = lineno;
        return 0;
}

/* "[policy NAME]" headers become policies, in order, before any key is read: a section
 * without keys is a policy with every default. */
static int policy_sections(struct policy_ctx *c)
{
        for (size_t i = 0; i < c->scan.n; i++) {
                const struct inifile_section *sec = &c->scan.v[i];
                char buf[sizeof(sec->name)];
                char *name;
                struct policy *v;

                c->section_policy[i] = -1;
                strscpy(buf, sec->name, sizeof(buf));
                if (strncmp(buf, "policy", 6) != 0 || (buf[6] != ' ' && buf[6] != '\t')) {
                        config_problems_add(c->problems, c->file, sec->lineno,
                                            "[%s]: unknown section (expected [policy NAME])",
                                            sec->name);
                        continue;
                }
                name = strstrip(buf + 6);
                if (!config_name_valid(name)) {
                        config_problems_add(c->problems, c->file, sec->lineno,
                                            "[%s]: '%s' is not a policy name (1-%d of A-Z a-z "
                                            "0-9 _ . -, not starting with . or -)",
                                            sec->name, name, CONFIG_NAME_MAX - 1);
                        continue;
                }
                for (size_t j = 0; j < c->set->n; j++) {
                        const struct policy *o = &c->set->v[j];

                        if (strcmp(o->name, name) != 0)
                                continue;
                        if (strcmp(o->file, c->file) == 0)
                                config_problems_add(c->problems, c->file, sec->lineno,
                                                    "[policy %s]: defined twice (first at line "
                                                    "%d)",
                                                    name, o->lineno);
                        else
                                config_problems_add(c->problems, c->file, sec->lineno,
                                                    "[policy %s]: also defined in %s:%d", name,
                                                    o->file, o->lineno);
                        name = NULL;
                        break;
                }
                if (!name)
                        continue;
                v = realloc(c->set->v, (c->set->n + 1) * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                c->set->v = v;
                policy_init(&v[c->set->n], name);
                strscpy(v[c->set->n].file, c->file, sizeof(v[c->set->n].file));
                v[c->set->n].lineno = sec->lineno;
                c->section_policy[i] = (ssize_t)c->set->n;
                c->set->n++;
        }
        return 0;
}

static void policy_check_bounds(struct policy_ctx *c, size_t sec, const char *lo_key, size_t lo,
                                const char *hi_key, size_t hi, unsigned lo_v, unsigned hi_v)
{
        const struct policy *p = &c->set->v[c->section_policy[sec]];
        int ll = c->key_line[sec][lo], lh = c->key_line[sec][hi];

        if (ll < 0 || lh < 0 || hi_v == 0 || lo_v <= hi_v)
                return;
        if (ll > 0 && lh > 0)
                config_problems_add(c->problems, c->file, ll,
                                    "[policy %s] %s: %u is more than %s (%u, line %d)", p->name,
                                    lo_key, lo_v, hi_key, hi_v, lh);
        else if (lh > 0)
                config_problems_add(c->problems, c->file, lh,
                                    "[policy %s] %s: %u is less than %s (%u, the default)", p->name,
                                    hi_key, hi_v, lo_key, lo_v);
}

static int policy_load_one(const char *path, struct policy_set *set,
                           struct config_problems *problems)
{
        struct policy_ctx c = {.set = set, .file = path, .problems = problems};
        struct inifile_error err;
        size_t first = problems->n;
        int r;

        r = inifile_scan(path, NULL, path, &c.scan, problems);
        if (r < 0) {
                if (problems->n == first)
                        config_problems_add(problems, path, 0, "cannot read: %s", strerror(-r));
                return r;
        }
        c.section_policy = calloc(c.scan.n + 1, sizeof(*c.section_policy));
        c.key_line = calloc(c.scan.n + 1, sizeof(*c.key_line));
        if (!c.section_policy || !c.key_line) {
                r = -ENOMEM;
                goto out;
        }
        r = policy_sections(&c);
        if (r < 0)
                goto out;
        r = inifile_parse(path, policy_handler, &c, &err);
        if (r < 0 && r != -EINVAL) {
                config_problems_add(problems, path, 0, "cannot read: %s", strerror(-r));
                goto out;
        }
        if (r == -EINVAL && err.lineno > 0) {
                bool known = false;

                for (size_t i = first; i < problems->n; i++)
                        known = known || problems->v[i].lineno == err.lineno;
                if (!known)
                        config_problems_add(problems, path, err.lineno, "%s", err.what);
        }
        for (size_t i = 0; i < c.scan.n; i++) {
                const struct policy *p;

                if (c.section_policy[i] < 0)
                        continue;
                p = &set->v[c.section_policy[i]];
                policy_check_bounds(&c, i, "min_cores", KEY_MIN_CORES, "max_cores", KEY_MAX_CORES,
                                    p->min_cores, p->max_cores);
                policy_check_bounds(&c, i, "min_freq", KEY_MIN_FREQ, "max_freq", KEY_MAX_FREQ,
                                    p->min_freq_mhz, p->max_freq_mhz);
        }
        r = 0;
out:
        if (r == -ENOMEM)
                config_problems_add(problems, path, 0, "out of memory");
        config_problems_sort_from(problems, first);
        free(c.section_policy);
        free(c.key_line);
        inifile_scan_free(&c.scan);
        if (r < 0)
                return r;
        return problems->n > first ? -EINVAL : 0;
}

static int policy_finish(struct policy_set *set, struct policy_set *out, size_t first_problem,
                         struct config_problems *problems, int r)
{
        if (r == 0 && problems->n > first_problem)
                r = -EINVAL;
        if (r < 0) {
                policy_set_free(set);
                return r;
        }
        *out = *set;
        return 0;
}

int policy_set_load_file(const char *path, struct policy_set *out, struct config_problems *problems)
{
        struct policy_set set = {};
        size_t first = problems->n;
        int r = policy_load_one(path, &set, problems);

        return policy_finish(&set, out, first, problems, r == -EINVAL ? 0 : r);
}

static int str_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int policy_set_load_dir(const char *dir, struct policy_set *out, struct config_problems *problems)
{
        struct policy_set set = {};
        size_t first = problems->n, n = 0;
        char **names = NULL;
        struct dirent *de;
        DIR *d;
        int r = 0;

        d = opendir(dir);
        if (!d) {
                r = -errno;
                config_problems_add(problems, dir, 0, "cannot read the directory: %s",
                                    strerror(-r));
                return r;
        }
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                char **v;

                /* Editors' backups and hidden files are not policies. */
                if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".conf") != 0)
                        continue;
                v = realloc(names, (n + 1) * sizeof(*v));
                if (!v || !(v[n] = strdup(de->d_name))) {
                        names = v ? v : names;
                        r = -ENOMEM;
                        break;
                }
                names = v;
                n++;
        }
        closedir(d);
        if (r == 0 && n > 0) /* an empty directory leaves names NULL, which qsort must not get */
                qsort(names, n, sizeof(*names), str_cmp);
        for (size_t i = 0; r == 0 && i < n; i++) {
                char path[CONFIG_PATH_MAX];
                struct stat st;

                if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int)sizeof(path)) {
                        config_problems_add(problems, dir, 0, "%s: path too long", names[i]);
                        continue;
                }
                if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                r = policy_load_one(path, &set, problems);
                if (r == -EINVAL || r == -ENOENT || r == -EACCES)
                        r = 0; /* reported; go on to list every file's problems */
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return policy_finish(&set, out, first, problems, r);
}

static bool pattern_any(const struct policy_patterns *p, const char *s, int flags)
{
        for (size_t i = 0; i < p->n; i++)
                if (fnmatch(p->v[i], s, flags) == 0)
                        return true;
        return false;
}

static bool policy_matches(const struct policy *p, const struct proc_identity *id)
{
        const struct policy_patterns *m = p->match;
        bool any = false;

        if (m[POLICY_MATCH_COMM].n) {
                if (!pattern_any(&m[POLICY_MATCH_COMM], id->comm, 0))
                        return false;
                any = true;
        }
        if (m[POLICY_MATCH_EXE].n) {
                if (!id->exe[0] || !pattern_any(&m[POLICY_MATCH_EXE], id->exe, 0))
                        return false;
                any = true;
        }
        if (m[POLICY_MATCH_USER].n) {
                char uid[24];

                snprintf(uid, sizeof(uid), "%u", (unsigned)id->uid);
                if (!(id->user[0] && pattern_any(&m[POLICY_MATCH_USER], id->user, 0)) &&
                    !pattern_any(&m[POLICY_MATCH_USER], uid, 0))
                        return false;
                any = true;
        }
        if (m[POLICY_MATCH_CGROUP].n) {
                /* FNM_LEADING_DIR: /app.slice also matches /app.slice/x.service. */
                if (!id->cgroup[0] ||
                    !pattern_any(&m[POLICY_MATCH_CGROUP], id->cgroup, FNM_LEADING_DIR))
                        return false;
                any = true;
        }
        return any;
}

const struct policy *policy_match(const struct policy_set *s, const struct proc_identity *id)
{
        for (size_t i = 0; s && i < s->n; i++)
                if (policy_matches(&s->v[i], id))
                        return &s->v[i];
        return NULL;
}

int proc_identity_cgroup_from(const char *text, char *buf, size_t size)
{
        /* Preference order: unified (non-root), name=systemd, cpuset, first line. */
        const char *best = NULL;
        size_t best_len = 0;
        int best_rank = 99;

        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t)(eol - line) : strlen(line);
                const char *c1 = memchr(line, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;

                if (c2) {
                        const char *path = c2 + 1;
                        size_t plen = len - (size_t)(path - line);
                        const char *ctrl = c1 + 1;
                        size_t clen = (size_t)(c2 - ctrl);
                        int rank = 3;

                        if (clen == 0 && !(plen == 1 && path[0] == '/'))
                                rank = 0;
                        else if (proc_cgroup_lists(ctrl, clen, "name=systemd"))
                                rank = 1;
                        else if (proc_cgroup_lists(ctrl, clen, "cpuset"))
                                rank = 2;
                        if (rank < best_rank && plen > 0) {
                                best = path;
                                best_len = plen;
                                best_rank = rank;
                        }
                }
                line = eol ? eol + 1 : NULL;
        }
        if (!best)
                return -ENODATA;
        if (best_len >= size)
                return -ENAMETOOLONG;
        memcpy(buf, best, best_len);
        buf[best_len] = '\0';
        return 0;
}

static void proc_identity_user(uid_t uid, char *buf, size_t size)
{
        struct passwd pw, *res = NULL;
        char pwbuf[4096];

        buf[0] = '\0';
        if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res)
                strscpy(buf, pw.pw_name, size);
}

int proc_identity_read(pid_t pid, struct proc_identity *out)
{
        struct proc_identity id = {.pid = pid};
        char path[CONFIG_PATH_MAX * 2];
        _cleanup_free_ char *text = NULL;
        const size_t text_size = 16384;
        const char *uid_line;
        ssize_t n;
        int r;

        text = malloc(text_size);
        if (!text)
                return -ENOMEM;
        r = fs_path(path, sizeof(path), "/proc/%d/comm", (int)pid);
        if (r < 0)
                return r;
        n = file_read(path, id.comm, sizeof(id.comm));
        if (n < 0)
                return n == -ENOENT ? -ESRCH : (int)n;

        r = fs_path(path, sizeof(path), "/proc/%d/status", (int)pid);
        if (r < 0)
                return r;
        n = file_read(path, text, text_size);
        if (n < 0)
                return n == -ENOENT ? -ESRCH : (int)n;
        uid_line = strstr(text, "\nUid:");
        if (!uid_line || sscanf(uid_line + 5, "%u", &id.uid) != 1)
                return -EIO;
        /* The groups, for [daemon] users = GROUP: the real gid and the supplementary ones. */
        {
                unsigned gids[4];

                if (proc_status_ids(text, (size_t)n, "Gid", gids) == 0)
                        id.gid = gids[0];
                id.n_groups = proc_status_groups(text, (size_t)n, id.groups, ARRAY_SIZE(id.groups));
        }

        /* Not readable for another user's process, empty for a kernel thread: no match. */
        r = fs_path(path, sizeof(path), "/proc/%d/exe", (int)pid);
        if (r < 0)
                return r;
        n = readlink(path, id.exe, sizeof(id.exe) - 1);
        id.exe[n > 0 ? n : 0] = '\0';

        r = fs_path(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        if (r < 0)
                return r;
        n = file_read(path, text, text_size);
        if (n >= 0)
                proc_identity_cgroup_from(text, id.cgroup, sizeof(id.cgroup));

        proc_identity_user(id.uid, id.user, sizeof(id.user));
        *out = id;
        return 0;
}

int policy_check_default(const struct policy_set *s, const char *name, const char *dir, char *why,
                         size_t why_size)
{
        if (policy_lookup(s, name))
                return 0;
        snprintf(why, why_size,
                 "[daemon] default_policy: '%s' is neither a policy in %s nor a built-in "
                 "objective (edp, ppw, energy, performance, monitor)",
                 name, dir);
        return -ENOENT;
}
