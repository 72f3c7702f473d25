/* Room in the partition (docs/allocator.md, "A denial lasts while the machine is full"): a
 * probe or a model's jump that sharing trimmed is remembered as denied, so that the app does
 * not ask for it again at every decision. The denial is a fact about the apps beside it when
 * it was made, not about the app: once CPUs are held by no app (one left, or the others gave
 * cores back), every such denial lapses, the apps may ask again, and the partition is chosen
 * again among the apps that are there now. */

#include "alloc_internal.h"

/* The CPUs the apps hold: each at least its cores, the reserve it keeps for a probe's return,
 * or the frequency domain it has of its own. A learner time-sharing every CPU counts its own:
 * while one does, no CPU is free. Monitored apps are outside the partition. */
static unsigned apps_hold(const struct allocator_ctx *ctx, const struct allocator_app *apps,
                          unsigned n)
{
        unsigned held = 0;

        for (unsigned j = 0; j < n; j++) {
                const struct allocator_app *o = &apps[j];
                unsigned h = o->cores > o->reserve_cores ? o->cores : o->reserve_cores;

                if (o->effective == OBJECTIVE_MONITOR)
                        continue;
                if (o->own_domain && ctx->domain_cpus > h)
                        h = ctx->domain_cpus;
                held += h;
        }
        return held;
}

void alloc_room_lapse(const struct allocator_ctx *ctx, struct allocator_app *apps, unsigned n)
{
        if (apps_hold(ctx, apps, n) >= ctx->n_cpus)
                return;
        for (unsigned i = 0; i < n; i++)
                if (apps[i].denied.decision && apps[i].denied.by_share)
                        apps[i].denied.decision = 0;
}
