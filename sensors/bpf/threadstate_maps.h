/* The layout of the eBPF thread-state maps, shared by the BPF program (threadstate.bpf.c, where
 * vmlinux.h defines the types) and its loader (sensors/threadstate_bpf.c). Not a public
 * contract: both sides are built from the same tree. */
#pragma once

#ifndef __VMLINUX_H__
#include <linux/bpf.h>
#include <linux/types.h>
#endif

/* Mirrors enum thread_state (include/pctl/threadstate.h); threadstate_bpf.c checks the match
 * at compile time. */
#define TS_RUN 0
#define TS_RUNQUEUE 1
#define TS_SYNC 2
#define TS_YIELD 3
#define TS_BLOCKED 4
#define TS_EXITED 5
#define TS_STATES 6

#define TS_MAX_ACTIVE 64 /* THREADSTATE_MAX_ACTIVE */
#define TS_MAX_APPS 1024
#define TS_MAX_THREADS 65536

/* ts_thread.flags */
#define TS_IN_FUTEX 1u /* between sys_enter_futex (a waiting op) and sys_exit */
#define TS_IN_YIELD 2u /* between sys_enter_sched_yield and sys_exit */
#define TS_COUNTED 4u  /* counted in its app's number of active threads */

/* One thread, key: tid. ns[] is cumulative since tracking began; the current state has run
 * since since_ns (bpf_ktime_get_ns, CLOCK_MONOTONIC) and is not in ns[] yet. */
struct ts_thread {
        struct bpf_spin_lock lock;
        __u32 tgid;
        __u32 state;
        __u32 flags;
        __u32 slot; /* its app's index in the apps array */
        __u64 since_ns;
        __u64 ns[TS_STATES];
        /* Time it was its app's only active thread while another was alive (threadstate.h's
         * solo_ns), up to when it last stopped being active; while it is active, what its
         * app's solo clock read when it started. Both under the app's lock. */
        __u64 solo_ns;
        __u64 solo_mark_ns;
};

/* One watched process, at the index the watched map gives for its tgid (an array: its
 * lookups cost nothing, a hash lookup costs as much as a clock read in these VMs). active_ns[k]:
 * cumulative time with k threads running or runnable (k = TS_MAX_ACTIVE: that many or more); the
 * current count has held since since_ns. */
struct ts_app {
        struct bpf_spin_lock lock;
        __u32 active;
        __u32 alive; /* threads counted and not exited */
        __u32 pad;
        __u64 since_ns;
        __u64 active_ns[TS_MAX_ACTIVE + 1];
        /* Cumulative time with one thread active and another alive, up to since_ns: the
         * thread active then gets it as solo time. */
        __u64 solo_clock_ns;
};
