/* The configurations of an app's run, for its run report: how long it ran at each (cores,
 * frequency, packages), in a fixed number of slots. A run that outgrows them keeps two
 * promises: the times still add up to the run's, and the configuration it is at now (where
 * `pctl run` and the Slurm step line say it ended) keeps a slot of its own, exactly labelled.
 * What gives is the detail of older ones: two are merged, and a label they did not share
 * reads unknown. Pure: no I/O, no manager. */
#include <string.h>

#include "manager_internal.h"

static bool same_labels(const struct run_config *a, const struct run_config *b)
{
        return a->cores == b->cores && a->freq_khz == b->freq_khz &&
               a->pkgs_known == b->pkgs_known && (!a->pkgs_known || a->pkgs == b->pkgs);
}

/* How much of two configurations' labels survives their merge: cores first (what `pctl run`
 * prints first and the allocator moves most), then the clock, then the packages. */
static unsigned shared_labels(const struct run_config *a, const struct run_config *b)
{
        return 4 * (a->cores && a->cores == b->cores) +
               2 * (a->freq_khz && a->freq_khz == b->freq_khz) +
               (a->pkgs_known && b->pkgs_known && a->pkgs == b->pkgs);
}

/* Folds slot j into slot i (i < j: the merged one keeps the earlier first use), and closes the
 * gap. */
static void merge(struct run_configs *rc, unsigned i, unsigned j)
{
        struct run_config *a = &rc->v[i];
        const struct run_config *b = &rc->v[j];

        if (a->cores != b->cores)
                a->cores = 0;
        if (a->freq_khz != b->freq_khz)
                a->freq_khz = 0;
        if (!b->pkgs_known || a->pkgs != b->pkgs)
                a->pkgs_known = false;
        a->merged += b->merged;
        a->run_s += b->run_s;
        memmove(&rc->v[j], &rc->v[j + 1], (rc->n - j - 1) * sizeof(rc->v[0]));
        rc->n--;
}

/* Makes room for one more: merges the pair that keeps the most labels, of those the one with
 * the least time between them (what is blurred is then the least of the run). */
static void make_room(struct run_configs *rc)
{
        unsigned best_i = 0, best_j = 1, best_shared = shared_labels(&rc->v[0], &rc->v[1]);
        double best_s = rc->v[0].run_s + rc->v[1].run_s;

        for (unsigned i = 0; i < rc->n; i++)
                for (unsigned j = i + 1; j < rc->n; j++) {
                        unsigned shared = shared_labels(&rc->v[i], &rc->v[j]);
                        double s = rc->v[i].run_s + rc->v[j].run_s;

                        if (shared > best_shared || (shared == best_shared && s < best_s)) {
                                best_i = i;
                                best_j = j;
                                best_shared = shared;
                                best_s = s;
                        }
                }
        merge(rc, best_i, best_j);
}

void run_configs_add(struct run_configs *rc, const struct run_config *now, double run_s)
{
        unsigned k;

        /* A merged slot is never where the app is now: its labels may read as one
         * configuration, but its time is several. */
        for (k = 0; k < rc->n; k++)
                if (rc->v[k].merged == 1 && same_labels(&rc->v[k], now))
                        break;
        if (k == rc->n) {
                if (rc->n == MANAGER_RUN_CONFIGS)
                        make_room(rc);
                k = rc->n++;
                rc->v[k] = *now;
                rc->v[k].merged = 1;
                rc->v[k].run_s = 0;
                if (!now->pkgs_known)
                        rc->v[k].pkgs = 0;
        }
        if (now->pkgs_known)
                rc->pkgs |= now->pkgs;
        else
                rc->pkgs_unknown = true;
        rc->v[k].run_s += run_s;
        rc->end = k;
}
