/* Placement: which CPUs each app gets, keeping what it holds and whole packages where it
 * can. Pure: the apps' wants and current masks in, masks out. */

#include "alloc_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pctl/util.h"

/* The package where the mask has most CPUs, or -1 for an empty mask. */
static int main_package(const struct topology *t, const struct cpumask *m)
{
        unsigned count[64] = {0};
        int best = -1;

        cpumask_foreach (c, m) {
                int pkg = (unsigned)c < t->n_cpus ? t->cpu[c].package : 0;

                if (pkg >= 0 && pkg < 64)
                        count[pkg]++;
        }
        for (int p = 0; p < 64; p++)
                if (count[p] && (best < 0 || count[p] > count[best]))
                        best = p;
        return best;
}

/* The package with the most free CPUs. */
static int roomiest_package(const struct topology *t, const struct cpumask *free_cpus)
{
        return main_package(t, free_cpus);
}

/* An app outside the partition: want_cores of the allowed CPUs, those it holds first. */
static void place_shared(const struct cpumask *allowed, const struct allocator_app *a,
                         const struct cpumask *cur, struct cpumask *out)
{
        struct cpumask mine;

        if (a->want_cores >= cpumask_count(allowed)) {
                *out = *allowed;
                return;
        }
        cpumask_and(&mine, cur, allowed);
        cpumask_zero(out);
        for (int pass = 0; pass < 2; pass++)
                cpumask_foreach (c, pass ? allowed : &mine) {
                        if (cpumask_count(out) == a->want_cores)
                                return;
                        cpumask_set(out, (unsigned)c);
                }
}

/* An app spread over the packages (spread): want_cores of the free CPUs, as evenly over the
 * packages as their free CPUs allow, each next core on the package it has fewest on (of
 * equals, the one where it holds most now, then the lowest); on each package the CPUs it holds
 * first, so a change of count moves as few as it can. */
static int place_spread(const struct topology *t, struct cpumask *free_cpus,
                        const struct allocator_app *a, const struct cpumask *cur,
                        const struct cpumask *others, struct cpumask *out)
{
        unsigned avail[64] = {0}, held[64] = {0}, quota[64] = {0};

        cpumask_foreach (c, free_cpus) {
                int pkg = (unsigned)c < t->n_cpus ? t->cpu[c].package : 0;

                if (pkg < 0 || pkg >= 64)
                        continue;
                avail[pkg]++;
                if (cpumask_test(cur, (unsigned)c))
                        held[pkg]++;
        }
        for (unsigned k = 0; k < a->want_cores; k++) {
                int best = -1;

                for (int p = 0; p < 64; p++) {
                        if (quota[p] >= avail[p])
                                continue;
                        if (best < 0 || quota[p] < quota[best] ||
                            (quota[p] == quota[best] && held[p] > held[best]))
                                best = p;
                }
                if (best < 0)
                        return -ENOSPC;
                quota[best]++;
        }
        cpumask_zero(out);
        /* Its own CPUs, then those no app holds, then another app's (it moves elsewhere). */
        for (int pass = 0; pass < 3; pass++)
                cpumask_foreach (c, free_cpus) {
                        int pkg = (unsigned)c < t->n_cpus ? t->cpu[c].package : 0;

                        if (pkg < 0 || pkg >= 64 || !quota[pkg] ||
                            (pass == 0 && !cpumask_test(cur, (unsigned)c)) ||
                            (pass == 1 && cpumask_test(others, (unsigned)c)))
                                continue;
                        if (cpumask_test(out, (unsigned)c))
                                continue;
                        cpumask_set(out, (unsigned)c);
                        quota[pkg]--;
                }
        cpumask_foreach (c, out)
                cpumask_clear(free_cpus, (unsigned)c);
        return 0;
}

int allocator_place(const struct topology *t, const struct cpumask *allowed,
                    const struct allocator_app *apps, const struct cpumask *cur,
                    struct cpumask *out, unsigned n)
{
        struct cpumask free_cpus = *allowed, free_home;
        unsigned total = 0;

        for (unsigned i = 0; i < n; i++) {
                if (apps[i].shares_cpus && apps[i].want_cores > cpumask_count(allowed))
                        return -ENOSPC;
                total += apps[i].shares_cpus ? 0 : apps[i].want_cores;
        }
        if (total > cpumask_count(allowed))
                return -ENOSPC;
        for (unsigned i = 0; i < n; i++)
                cpumask_zero(&out[i]);
        /* An app with a domain of its own first: the whole package no other such app took,
         * where it has most CPUs now (the lowest first), its own CPUs there first. */
        for (unsigned i = 0; i < n; i++) {
                int home = -1;
                unsigned home_mine = 0;

                if (!apps[i].own_domain || apps[i].shares_cpus)
                        continue;
                for (unsigned p = 0; p < t->n_packages; p++) {
                        struct cpumask pkg, taken, mine;

                        topology_package_cpus(t, (int)p, &pkg);
                        cpumask_and(&pkg, &pkg, allowed);
                        cpumask_and(&taken, &pkg, &free_cpus);
                        if (!cpumask_equal(&taken, &pkg) ||
                            cpumask_count(&pkg) < apps[i].want_cores)
                                continue;
                        cpumask_and(&mine, &pkg, &cur[i]);
                        if (home < 0 || cpumask_count(&mine) > home_mine) {
                                home = (int)p;
                                home_mine = cpumask_count(&mine);
                        }
                }
                if (home < 0)
                        continue; /* placed with the others below */
                topology_package_cpus(t, home, &free_home);
                cpumask_and(&free_home, &free_home, allowed);
                for (int pass = 0; pass < 2; pass++)
                        cpumask_foreach (c, &free_home) {
                                if (cpumask_count(&out[i]) == apps[i].want_cores)
                                        break;
                                if (pass == 0 && !cpumask_test(&cur[i], (unsigned)c))
                                        continue;
                                cpumask_set(&out[i], (unsigned)c);
                        }
                cpumask_foreach (c, &free_home)
                        cpumask_clear(&free_cpus, (unsigned)c);
        }
        /* An app spread over the packages takes its share of each, before the others keep
         * theirs: packed on one package it would stay there wherever the others sit. Its own
         * CPUs first, then free ones, so that it moves as few of the others as it can. */
        for (unsigned i = 0; i < n; i++) {
                struct cpumask others;
                int r;

                if (!apps[i].spread || apps[i].shares_cpus || !cpumask_empty(&out[i]))
                        continue;
                cpumask_zero(&others);
                for (unsigned j = 0; j < n; j++)
                        if (j != i)
                                cpumask_or(&others, &others, &cur[j]);
                r = place_spread(t, &free_cpus, &apps[i], &cur[i], &others, &out[i]);
                if (r < 0)
                        return r;
        }
        /* Keep what each app already has and may still have. */
        for (unsigned i = 0; i < n; i++) {
                unsigned kept = 0;
                int pkg = main_package(t, &cur[i]);

                if (apps[i].shares_cpus || apps[i].spread || !cpumask_empty(&out[i]))
                        continue;
                /* First the CPUs on its main package, then the others. */
                for (int pass = 0; pass < 2; pass++) {
                        cpumask_foreach (c, &cur[i]) {
                                bool on_main = (unsigned)c < t->n_cpus && t->cpu[c].package == pkg;

                                if (kept == apps[i].want_cores)
                                        break;
                                if ((pass == 0) != on_main ||
                                    !cpumask_test(&free_cpus, (unsigned)c))
                                        continue;
                                cpumask_set(&out[i], (unsigned)c);
                                cpumask_clear(&free_cpus, (unsigned)c);
                                kept++;
                        }
                }
        }
        /* Then fill from the package each app uses most, else the roomiest one. */
        for (unsigned i = 0; i < n; i++) {
                if (apps[i].shares_cpus) {
                        place_shared(allowed, &apps[i], &cur[i], &out[i]);
                        continue;
                }
                while (cpumask_count(&out[i]) < apps[i].want_cores) {
                        int pkg = main_package(t, &out[i]);
                        int pick = -1;

                        if (pkg < 0)
                                pkg = roomiest_package(t, &free_cpus);
                        cpumask_foreach (c, &free_cpus) {
                                if ((unsigned)c < t->n_cpus && t->cpu[c].package == pkg) {
                                        pick = c;
                                        break;
                                }
                        }
                        if (pick < 0)
                                pick = cpumask_next(&free_cpus, 0);
                        if (pick < 0)
                                return -ENOSPC;
                        cpumask_set(&out[i], (unsigned)pick);
                        cpumask_clear(&free_cpus, (unsigned)pick);
                }
        }
        return 0;
}
