/* pctld's per-app speedup stacks (include/pctl/appstack.h). */
#include "pctl/appstack.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct appstack_entry {
        pid_t pid;
        struct threadstate_app sum; /* the window so far */
        double speedup_ns;          /* sum of speedup x interval, NaN once one was unknown */
        double mem_share_ns;        /* likewise, the view's mem_share */
        struct stack last;
        bool have_last;
};

struct appstacks {
        const struct threadstate_ops *ops;
        struct threadstate *ts;
        struct appstack_entry *apps;
        unsigned n_apps;
        struct threadstate_app *scratch; /* read buffers, one per app */
        unsigned n_scratch;
};

int appstacks_open(const struct threadstate_ops *ops, void *machine, struct appstacks **out,
                   char *why, size_t why_size)
{
        struct appstacks *s;
        int r;

        if (!ops) {
                r = threadstate_pick_auto(&ops, why, why_size);
                if (r < 0)
                        return r;
        } else {
                snprintf(why, why_size, "%s: as asked", ops->name);
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->ops = ops;
        r = threadstate_open(ops, machine, &s->ts);
        if (r < 0) {
                snprintf(why, why_size, "cannot open the %s thread-state backend: %s", ops->name,
                         strerror(-r));
                free(s);
                return r;
        }
        r = threadstate_set_sample_period(s->ts, APPSTACK_SAMPLE_PERIOD_NS);
        if (r < 0 && r != -EOPNOTSUPP) {
                snprintf(why, why_size, "cannot set the %s backend's sampling period: %s",
                         ops->name, strerror(-r));
                threadstate_close(s->ts);
                free(s);
                return r;
        }
        *out = s;
        return 0;
}

static void entry_free(struct appstack_entry *e)
{
        threadstate_app_free(&e->sum);
}

void appstacks_close(struct appstacks *s)
{
        if (!s)
                return;
        threadstate_close(s->ts);
        for (unsigned i = 0; i < s->n_apps; i++)
                entry_free(&s->apps[i]);
        for (unsigned i = 0; i < s->n_scratch; i++)
                threadstate_app_free(&s->scratch[i]);
        free(s->apps);
        free(s->scratch);
        free(s);
}

int appstacks_set_pids(struct appstacks *s, const pid_t *pids, unsigned n)
{
        struct appstack_entry *next;
        bool *kept;
        int r;

        /* One read buffer per app, kept between reads (the backend reuses its arrays). */
        if (n > s->n_scratch) {
                struct threadstate_app *scratch = realloc(s->scratch, n * sizeof(*scratch));

                if (!scratch)
                        return -ENOMEM;
                memset(scratch + s->n_scratch, 0, (n - s->n_scratch) * sizeof(*scratch));
                s->scratch = scratch;
                s->n_scratch = n;
        }
        next = calloc(n ? n : 1, sizeof(*next));
        kept = calloc(s->n_apps ? s->n_apps : 1, sizeof(*kept));
        if (!next || !kept) {
                free(next);
                free(kept);
                return -ENOMEM;
        }
        r = threadstate_set_pids(s->ts, pids, n);
        if (r < 0) {
                free(kept);
                free(next);
                return r;
        }
        for (unsigned i = 0; i < n; i++) {
                next[i] = (struct appstack_entry){.pid = pids[i]};
                for (unsigned j = 0; j < s->n_apps; j++)
                        if (!kept[j] && s->apps[j].pid == pids[i]) {
                                next[i] = s->apps[j];
                                kept[j] = true;
                                break;
                        }
        }
        for (unsigned j = 0; j < s->n_apps; j++)
                if (!kept[j])
                        entry_free(&s->apps[j]);
        free(kept);
        free(s->apps);
        s->apps = next;
        s->n_apps = n;
        return 0;
}

static const struct appstack_view *view_of(const struct appstack_view *views, unsigned n, pid_t pid)
{
        for (unsigned i = 0; i < n; i++)
                if (views[i].pid == pid)
                        return &views[i];
        return NULL;
}

int appstacks_read(struct appstacks *s, const struct appstack_view *views, unsigned n)
{
        int r = threadstate_read(s->ts, s->scratch, s->n_apps);

        if (r < 0)
                return r;
        for (unsigned i = 0; i < s->n_apps; i++) {
                struct appstack_entry *e = &s->apps[i];
                const struct threadstate_app *a = &s->scratch[i];
                const struct appstack_view *v = view_of(views, n, e->pid);

                if (!v || v->cores == 0 || a->unwatched)
                        continue;
                if (threadstate_app_exited(a))
                        continue; /* the manager releases it */
                r = threadstate_app_add(&e->sum, a);
                if (r < 0)
                        return r;
                e->speedup_ns += isfinite(v->speedup) ? v->speedup * (double)a->interval_ns : NAN;
                e->mem_share_ns += isfinite(v->mem_share) && isfinite(v->speedup)
                                       ? v->mem_share * (double)a->interval_ns
                                       : NAN;
                if (e->sum.interval_ns < APPSTACK_WINDOW_NS)
                        continue;
                stack_compute(&e->sum, v->cores, e->speedup_ns / (double)e->sum.interval_ns,
                              &e->last);
                /* Memory only out of a measured interference (the counters' speedup). */
                stack_split_memory(&e->last, e->mem_share_ns / (double)e->sum.interval_ns, NAN);
                e->have_last = e->last.known;
                threadstate_app_free(&e->sum);
                e->sum = (struct threadstate_app){0};
                e->speedup_ns = 0;
                e->mem_share_ns = 0;
        }
        return 0;
}

const struct stack *appstacks_get(const struct appstacks *s, pid_t pid)
{
        for (unsigned i = 0; s && i < s->n_apps; i++)
                if (s->apps[i].pid == pid)
                        return s->apps[i].have_last ? &s->apps[i].last : NULL;
        return NULL;
}

const char *appstacks_source(const struct appstacks *s)
{
        return s ? s->ops->source : NULL;
}
