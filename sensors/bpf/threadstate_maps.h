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

/* ts_thread.flags, written under the thread's lock only. (1u was the in-futex flag, now
 * ts_thread.in_futex.) */
#define TS_IN_YIELD 2u   /* between sys_enter_sched_yield and sys_exit */
#define TS_COUNTED 4u    /* counted in its app's number of active threads */
#define TS_DELAY_MARK 8u /* in TS_RUNQUEUE, and delay_mark_ns holds its run_delay from then */

/* One thread, key: tid. ns[] is cumulative since tracking began; the current state has run
 * since since_ns (bpf_ktime_get_ns, CLOCK_MONOTONIC) and is not in ns[] yet. */
struct ts_thread {
        struct bpf_spin_lock lock;
        __u32 tgid;
        __u32 state;
        __u32 flags;
        __u32 slot; /* its app's index in the apps array */
        /* 1 between sys_enter of a waiting futex call and its sys_exit. A word of its own,
         * written only by the thread's own syscalls (and by the loader before the thread is
         * in the map): in flags, the locked read-modify-writes of other CPUs (the seeding
         * iterator, a wakeup's missed switch-in) could write back a stale copy over it, losing
         * the flag or leaving it set. */
        __u32 in_futex;
        __u64 since_ns;
        __u64 ns[TS_STATES];
        /* Time it was its app's only active thread while another was alive (threadstate.h's
         * solo_ns), up to when it last stopped being active; while it is active, what its
         * app's solo clock read when it started. Both under the app's lock. */
        __u64 solo_ns;
        __u64 solo_mark_ns;
        /* The task's sched_info.run_delay (schedstat's second field: its waits for a CPU,
         * grown when one ends) when it became runnable: see ts_missed_in_wait(). */
        __u64 delay_mark_ns;
};

/* A switch-in the program did not see. Some kernels leave sched_switch untraced when the task
 * switching out is one of theirs to hide (this VM's agent, PID 1's threads: none of their
 * switch-outs reaches tracefs or BPF), so a thread they hand the CPU to stays runnable in our
 * figures while it runs. The kernel's run_delay has grown by the wait that ended at that
 * switch-in: of the time since the thread became runnable (elapsed_ns), that much (at most)
 * was waiting and the rest running. Returns the waiting part; 0 when no wait ended since the
 * mark (nothing was missed). Shared by the program (at the thread's next event) and the
 * loader (for the state in progress at a read). */
static inline __u64 ts_missed_in_wait(__u64 elapsed_ns, __u64 run_delay_ns, __u64 mark_ns)
{
        __u64 wait = run_delay_ns > mark_ns ? run_delay_ns - mark_ns : 0;

        return wait < elapsed_ns ? wait : elapsed_ns;
}

/* One watched process, at the index the watched map gives for its tgid (an array: its
 * lookups cost nothing, a hash lookup costs as much as a clock read in these VMs). active_ns[k]:
 * cumulative time with k threads running or runnable (k = TS_MAX_ACTIVE: that many or more); the
 * current count has held since since_ns. */
struct ts_app {
        struct bpf_spin_lock lock;
        __u32 active;
        __u32 alive; /* threads counted and not exited */
        /* New threads the program could not track (the threads map was full): the loader
         * stops watching the app, whose figures would leave them out. Atomic. */
        __u32 lost_threads;
        __u64 since_ns;
        __u64 active_ns[TS_MAX_ACTIVE + 1];
        /* Cumulative time with one thread active and another alive, up to since_ns: the
         * thread active then gets it as solo time. */
        __u64 solo_clock_ns;
};
