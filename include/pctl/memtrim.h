/* Giving a burst's heap back to the system (lib/memtrim.c). pctld's memory follows how many
 * apps (and connections) it holds at once: each app's sensor buffers, estimator windows and
 * reports are malloc'd, and when a burst of them leaves glibc keeps the freed pages in its
 * heap, so RSS stays at the burst's high-water mark (docs/reliability.md, "Memory"). When the
 * count has fallen to half of its peak since the last trim, malloc_trim(0) hands the free
 * pages back: a few times per burst, never once per app. */
#pragma once

#include <stdbool.h>

/* Below this peak a burst's pages are not worth a walk of the heap. */
#define MEMTRIM_MIN_PEAK 4

struct memtrim {
        unsigned peak; /* the most held since the last trim */
};

/* Pure: notes that n are held now; true when the heap should be trimmed now (n is at most
 * half of a peak of at least MEMTRIM_MIN_PEAK), and the peak starts again from n. */
bool memtrim_due(struct memtrim *t, unsigned n);

/* memtrim_due, and malloc_trim(0) when it says so. True when it trimmed. */
bool memtrim_note(struct memtrim *t, unsigned n);
