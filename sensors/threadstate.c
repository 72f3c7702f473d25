/* The generic thread-state layer: the backend table, the choice of one, and the verbs every
 * caller goes through (include/pctl/threadstate.h). */
#include "pctl/threadstate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Best first. "sim" is not here: it needs the model machine and is chosen by whoever has one. */
const struct threadstate_ops *const threadstate_backends[] = {
#ifdef PCTL_HAVE_BPF
    &threadstate_ebpf_ops,
#endif
    &threadstate_proc_ops,
    NULL,
};

const struct threadstate_ops *threadstate_find(const char *name)
{
        if (!name)
                return NULL;
        for (unsigned i = 0; threadstate_backends[i]; i++)
                if (strcmp(threadstate_backends[i]->name, name) == 0)
                        return threadstate_backends[i];
        return NULL;
}

int threadstate_pick_auto(const struct threadstate_ops **out, char *why, size_t why_size)
{
        char text[1024] = "";
        size_t len = 0;

#ifndef PCTL_HAVE_BPF
        len = (size_t)snprintf(text, sizeof(text),
                               "ebpf: not built in (clang, bpftool, libbpf or kernel BTF were "
                               "missing when pctl was built)");
#endif
        for (unsigned i = 0; threadstate_backends[i]; i++) {
                const struct threadstate_ops *ops = threadstate_backends[i];
                struct threadstate_probe p = {0};
                int r = ops->probe(NULL, &p);

                if (r >= 0 && p.available) {
                        if (why)
                                snprintf(why, why_size, "%s: the best available%s%s", ops->name,
                                         len ? "; " : "", text);
                        *out = ops;
                        return 0;
                }
                if (len < sizeof(text))
                        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s: %s",
                                                len ? "; " : "", ops->name,
                                                p.reason[0] ? p.reason : "not available");
                if (len >= sizeof(text))
                        len = sizeof(text) - 1;
        }
        if (why)
                snprintf(why, why_size, "no thread-state backend is available: %s", text);
        return -ENODEV;
}

int threadstate_open(const struct threadstate_ops *ops, void *machine, struct threadstate **out)
{
        struct threadstate *ts;
        int r;

        if (!ops || !out)
                return -EINVAL;
        ts = calloc(1, sizeof(*ts));
        if (!ts)
                return -ENOMEM;
        ts->ops = ops;
        r = ops->open(ts, machine);
        if (r < 0) {
                free(ts);
                return r;
        }
        *out = ts;
        return 0;
}

int threadstate_set_pids(struct threadstate *ts, const pid_t *pids, unsigned n)
{
        int r;

        if (!ts || (n > 0 && !pids))
                return -EINVAL;
        for (unsigned i = 0; i < n; i++) {
                if (pids[i] <= 0)
                        return -EINVAL;
                for (unsigned j = 0; j < i; j++)
                        if (pids[j] == pids[i])
                                return -EINVAL;
        }
        r = ts->ops->set_pids(ts, pids, n);
        if (r < 0)
                return r;
        ts->n_pids = n;
        return 0;
}

int threadstate_read(struct threadstate *ts, struct threadstate_app *apps, unsigned n)
{
        if (!ts || n != ts->n_pids || (n > 0 && !apps))
                return -EINVAL;
        /* The backend reports; what the previous read left (but the thread array, which it
         * reuses) must not leak into this interval. */
        for (unsigned i = 0; i < n; i++) {
                struct threadstate_thread *threads = apps[i].threads;

                apps[i] = (struct threadstate_app){.threads = threads};
        }
        return ts->ops->read(ts, apps, n);
}

int threadstate_set_sample_period(struct threadstate *ts, uint64_t period_ns)
{
        if (!ts || period_ns < 1000000 || period_ns > 1000000000ULL)
                return -EINVAL;
        if (!ts->ops->set_sample_period)
                return -EOPNOTSUPP;
        return ts->ops->set_sample_period(ts, period_ns);
}

void threadstate_app_free(struct threadstate_app *app)
{
        if (!app)
                return;
        free(app->threads);
        app->threads = NULL;
        app->n_threads = 0;
}

int threadstate_app_add(struct threadstate_app *sum, const struct threadstate_app *a)
{
        unsigned n = sum->n_threads;
        struct threadstate_thread *threads;

        /* Room for every thread of either. */
        if (a->n_threads > 0) {
                threads = realloc(sum->threads, (n + a->n_threads) * sizeof(*threads));
                if (!threads)
                        return -ENOMEM;
                sum->threads = threads;
        }
        for (unsigned i = 0; i < n; i++) {
                struct threadstate_thread *t = &sum->threads[i];
                bool seen = false;

                for (unsigned j = 0; j < a->n_threads && !seen; j++)
                        seen = a->threads[j].tid == t->tid;
                /* Reported as exited before and no more since: still exited. */
                if (!seen && t->ns[THREAD_EXITED] > 0)
                        t->ns[THREAD_EXITED] += a->interval_ns;
        }
        for (unsigned j = 0; j < a->n_threads; j++) {
                const struct threadstate_thread *from = &a->threads[j];
                struct threadstate_thread *t = NULL;

                for (unsigned i = 0; i < n && !t; i++)
                        if (sum->threads[i].tid == from->tid)
                                t = &sum->threads[i];
                if (!t) {
                        t = &sum->threads[sum->n_threads++];
                        *t = (struct threadstate_thread){.tid = from->tid};
                }
                for (unsigned s = 0; s < THREAD_STATES; s++)
                        t->ns[s] += from->ns[s];
                t->solo_ns += from->solo_ns;
        }
        sum->pid = a->pid;
        /* The histogram covers the whole sum only if every interval had one. */
        sum->has_active = (sum->interval_ns == 0 || sum->has_active) && a->has_active;
        sum->interval_ns += a->interval_ns;
        for (unsigned k = 0; k <= THREADSTATE_MAX_ACTIVE; k++)
                sum->active_ns[k] = sum->has_active ? sum->active_ns[k] + a->active_ns[k] : 0;
        return 0;
}

bool threadstate_app_exited(const struct threadstate_app *app)
{
        if (app->unwatched)
                return false;
        for (unsigned i = 0; i < app->n_threads; i++)
                if (app->threads[i].ns[THREAD_EXITED] == 0)
                        return false;
        return true;
}

void threadstate_close(struct threadstate *ts)
{
        if (!ts)
                return;
        if (ts->ops && ts->ops->close)
                ts->ops->close(ts);
        free(ts);
}
