/* The model machine's thread-state backend: each app's threads as the eBPF backend would see
 * them (running, waiting for a CPU, in a futex, sleeping, exited) and the concurrency
 * histogram, per interval of virtual time. It shows states only: the stack's ground truth
 * (sim_truth_stack_acc) is never read here. See docs/sim.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/threadstate.h"
#include "sim_internal.h"

/* Thread ids of the fake processes: thread 0 is the process (SIM_PID_BASE + app), the others
 * are numbered from here, 100000 per app. */
#define SIM_TID_BASE 1000000

struct sim_watch {
        pid_t pid;
        unsigned app;
        uint64_t since_ns;
        double *ts_s; /* the app's cumulative thread seconds at since_ns */
        double active_s[THREADSTATE_MAX_ACTIVE + 1];
};

struct sim_ts {
        struct sim_machine *m;
        unsigned n;
        struct sim_watch *w;
};

static int sim_ts_probe(void *machine, struct threadstate_probe *out)
{
        *out = (struct threadstate_probe){.available = machine != NULL};
        if (!machine) {
                out->err = -ENODEV;
                snprintf(out->reason, sizeof(out->reason),
                         "the model machine's thread states need a machine (pctl sim)");
        }
        return 0;
}

static void watches_free(struct sim_ts *s)
{
        for (unsigned i = 0; i < s->n; i++)
                free(s->w[i].ts_s);
        free(s->w);
        s->w = NULL;
        s->n = 0;
}

static int sim_ts_open(struct threadstate *ts, void *machine)
{
        struct sim_ts *s;
        int r;

        if (!machine)
                return -ENODEV;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->m = machine;
        r = sim_track_threads(s->m);
        if (r < 0) {
                free(s);
                return r;
        }
        ts->priv = s;
        return 0;
}

static void snapshot(const struct sim_machine *m, struct sim_watch *w)
{
        const struct sim_app_state *a = &m->apps[w->app];

        memcpy(w->ts_s, a->ts_s, (size_t)a->n_threads * SIM_TS_STRIDE * sizeof(double));
        memcpy(w->active_s, a->ts_active_s, sizeof(w->active_s));
        w->since_ns = m->now_ns;
}

static int sim_ts_set_pids(struct threadstate *ts, const pid_t *pids, unsigned n)
{
        struct sim_ts *s = ts->priv;
        struct sim_watch *w;

        for (unsigned i = 0; i < n; i++)
                if (pids[i] < SIM_PID_BASE || pids[i] - SIM_PID_BASE >= (pid_t)s->m->n_apps)
                        return -ESRCH; /* not one of the machine's processes */
        w = calloc(n ? n : 1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++) {
                unsigned app = (unsigned)(pids[i] - SIM_PID_BASE);

                w[i].pid = pids[i];
                w[i].app = app;
                w[i].ts_s =
                    malloc((size_t)s->m->apps[app].n_threads * SIM_TS_STRIDE * sizeof(double));
                if (!w[i].ts_s) {
                        for (unsigned j = 0; j < i; j++)
                                free(w[j].ts_s);
                        free(w);
                        return -ENOMEM;
                }
                snapshot(s->m, &w[i]);
        }
        watches_free(s);
        s->w = w;
        s->n = n;
        return 0;
}

static uint64_t to_ns(double s)
{
        return s > 0 ? (uint64_t)(s * 1e9 + 0.5) : 0;
}

static int sim_ts_read(struct threadstate *ts, struct threadstate_app *apps, unsigned n)
{
        struct sim_ts *s = ts->priv;

        if (n != s->n)
                return -EINVAL;
        for (unsigned i = 0; i < n; i++) {
                struct sim_watch *w = &s->w[i];
                const struct sim_app_state *a = &s->m->apps[w->app];
                struct threadstate_app *out = &apps[i];
                /* A process exists once started; one that has not is not there yet. */
                unsigned nt = a->started ? a->n_threads : 0;

                out->pid = w->pid;
                out->interval_ns = s->m->now_ns - w->since_ns;
                out->has_active = true;
                memset(out->active_ns, 0, sizeof(out->active_ns));
                if (nt > 0) {
                        struct threadstate_thread *t =
                            realloc(out->threads, nt * sizeof(*out->threads));

                        if (!t)
                                return -ENOMEM;
                        out->threads = t;
                }
                out->n_threads = nt;
                for (unsigned j = 0; j < nt; j++) {
                        const double *now = &a->ts_s[(size_t)j * SIM_TS_STRIDE];
                        const double *then = &w->ts_s[(size_t)j * SIM_TS_STRIDE];

                        out->threads[j].tid =
                            j == 0 ? w->pid : (pid_t)(SIM_TID_BASE + w->app * 100000u + j);
                        for (unsigned st = 0; st < THREAD_STATES; st++)
                                out->threads[j].ns[st] = to_ns(now[st] - then[st]);
                        out->threads[j].solo_ns = to_ns(now[SIM_TS_SOLO] - then[SIM_TS_SOLO]);
                }
                for (unsigned c = 0; c <= THREADSTATE_MAX_ACTIVE; c++)
                        out->active_ns[c] = to_ns(a->ts_active_s[c] - w->active_s[c]);
                snapshot(s->m, w);
        }
        return 0;
}

static void sim_ts_close(struct threadstate *ts)
{
        struct sim_ts *s = ts->priv;

        if (!s)
                return;
        watches_free(s);
        free(s);
        ts->priv = NULL;
}

const struct threadstate_ops threadstate_sim_ops = {
    .name = "sim",
    .description = "the model machine's threads, in virtual time",
    .source = "sim",
    .probe = sim_ts_probe,
    .open = sim_ts_open,
    .set_pids = sim_ts_set_pids,
    .read = sim_ts_read,
    .close = sim_ts_close,
};
