// SPDX-License-Identifier: GPL-2.0
/* Thread states of the watched processes, accumulated in the kernel (docs/threadstate-ebpf.md).
 * Nothing goes to user space per event: the loader reads the maps once per interval.
 *
 * BTF-typed tracepoints (tp_btf) rather than tracefs ones: they need no tracefs mount, hand
 * the handlers the task pointers and sched_switch's preempt flag, and, unlike tracefs
 * tracepoint programs, may take bpf_spin_lock, which keeps a thread's figures and its app's
 * number of active threads consistent when its events run on several CPUs at once. The futex
 * and sched_yield syscalls are caught at raw_syscalls sys_enter/sys_exit, filtered on the
 * syscall number first. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "threadstate_maps.h"

char LICENSE[] SEC("license") = "GPL";

#if defined(__TARGET_ARCH_x86)
#define NR_SCHED_YIELD 24
#define NR_FUTEX 202
#define SYSCALL_NR(regs) ((long)(regs)->orig_ax)
#define SYSCALL_ARG2(regs) ((regs)->si)
#elif defined(__TARGET_ARCH_arm64)
#define NR_SCHED_YIELD 124
#define NR_FUTEX 98
#define SYSCALL_NR(regs) ((long)(regs)->syscallno)
#define SYSCALL_ARG2(regs) ((regs)->regs[1])
#else
#error "threadstate.bpf.c: syscall numbers for this architecture are missing"
#endif
#define NR_FUTEX_WAITV 449 /* the same on every architecture (Linux >= 5.16) */

/* futex(2) operations that wait; the private and clock flags are masked off. */
#define FUTEX_CMD_MASK 127
#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, TS_MAX_APPS);
        __type(key, __u32);
        __type(value, __u32);
} watched SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, TS_MAX_THREADS);
        __type(key, __u32);
        __type(value, struct ts_thread);
} threads SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, TS_MAX_APPS);
        __type(key, __u32);
        __type(value, struct ts_app);
} apps SEC(".maps");

/* Switch-ins the program did not see and recovered from run_delay (thread_event), since it
 * was loaded: read by the tests. */
__u64 unseen_switch_ins;

/* What happened to a thread; the new state is chosen under its lock from its flags. */
enum ev {
        EV_OUT_BLOCKED,  /* switched out, not runnable */
        EV_OUT_RUNNABLE, /* switched out, still runnable (preempted or yielding) */
        EV_IN,           /* switched in */
        EV_WAKE,
        EV_EXIT,
        EV_YIELD_ENTER,
        EV_YIELD_EXIT,
};

/* k, at most max, with the compare and the clamp on the register that then indexes an array.
 * Left to the compiler, `if (k > max) k = max` became "w3 = w1; if w1 < 64 goto; w3 = 64":
 * the bound is learned on w1, and the verifier of Linux 6.1 does not carry it to w1's 32-bit
 * copy w3 (it links 64-bit copies only), so it refused the array access that followed ("R9
 * unbounded memory access"). Here the bound is on the register itself, which every verifier
 * since 5.x follows. */
static __always_inline __u64 index_at_most(__u64 k, __u64 max)
{
        asm volatile("if %[k] <= %[max] goto +1\n\t"
                     "%[k] = %[max]"
                     : [k] "+r"(k)
                     : [max] "i"(max));
        return k;
}

static __always_inline int is_active(__u32 state)
{
        return state == TS_RUN || state == TS_RUNQUEUE;
}

/* Applies a thread's change to its app: d_active to the number of active threads (closing
 * the histogram bucket of the count that held until now), d_alive to the live ones, and the
 * thread's solo time, from the app's solo clock, when it starts or stops being active. */
static __always_inline void app_add(struct ts_thread *t, int d_active, int d_alive, __u64 now)
{
        struct ts_app *a;
        __u32 slot = t->slot;
        __u64 k;

        if (!d_active && !d_alive)
                return;
        a = bpf_map_lookup_elem(&apps, &slot);
        if (!a)
                return;
        bpf_spin_lock(&a->lock);
        k = index_at_most(a->active, TS_MAX_ACTIVE);
        /* Events of two CPUs may reach the lock out of time order: never go back. */
        if (now > a->since_ns) {
                a->active_ns[k] += now - a->since_ns;
                if (a->active == 1 && a->alive >= 2)
                        a->solo_clock_ns += now - a->since_ns;
                a->since_ns = now;
        }
        if (d_active > 0) {
                a->active++;
                t->solo_mark_ns = a->solo_clock_ns;
        } else if (d_active < 0) {
                if (a->active > 0)
                        a->active--;
                if (a->solo_clock_ns > t->solo_mark_ns)
                        t->solo_ns += a->solo_clock_ns - t->solo_mark_ns;
        }
        if (d_alive > 0)
                a->alive++;
        else if (d_alive < 0 && a->alive > 0)
                a->alive--;
        bpf_spin_unlock(&a->lock);
}

/* Called once t's new state is set, under its lock (or before t is in the map). A thread now
 * runnable keeps the task's run_delay (TS_DELAY_MARK), so that its next event can tell a
 * switch-in that was not seen (thread_event); any other state, or a kernel that keeps no
 * run_delay (run_delay < 0), leaves no mark. */
static __always_inline void mark_run_delay(struct ts_thread *t, __s64 run_delay)
{
        if (t->flags & TS_DELAY_MARK)
                t->flags &= ~TS_DELAY_MARK;
        if (t->state == TS_RUNQUEUE && run_delay >= 0) {
                t->delay_mark_ns = (__u64)run_delay;
                t->flags |= TS_DELAY_MARK;
        }
}

/* Applies ev to t at now; *d_active and *d_alive get the changes for its app. A thread not
 * counted yet (seeded from /proc, or born a moment ago) counts from its first event. */
static __always_inline void thread_event(struct ts_thread *t, enum ev ev, __u64 now,
                                         __s64 run_delay, int *d_active, int *d_alive)
{
        __u32 state, old_state;
        int before, after, counted;

        *d_active = *d_alive = 0;
        bpf_spin_lock(&t->lock);
        old_state = t->state;
        if (old_state == TS_EXITED) {
                bpf_spin_unlock(&t->lock);
                return;
        }
        /* Runnable in our figures, yet the kernel ended a wait of it since (its run_delay
         * grew): it was switched in unseen and has run. Anything but a switch-in seen now
         * (before which run_delay has not grown yet) splits the time since: the wait, then
         * running. */
        if (old_state == TS_RUNQUEUE && (t->flags & TS_DELAY_MARK) && ev != EV_IN &&
            run_delay > (__s64)t->delay_mark_ns && now > t->since_ns) {
                __u64 elapsed = now - t->since_ns;
                __u64 wait = ts_missed_in_wait(elapsed, (__u64)run_delay, t->delay_mark_ns);

                t->ns[TS_RUNQUEUE] += wait;
                t->ns[TS_RUN] += elapsed - wait;
                t->since_ns = now;
                t->state = old_state = TS_RUN;
                t->flags &= ~TS_DELAY_MARK;
                __sync_fetch_and_add(&unseen_switch_ins, 1);
        }
        state = old_state;
        switch (ev) {
        case EV_OUT_BLOCKED:
                state = (t->flags & TS_IN_FUTEX) ? TS_SYNC : TS_BLOCKED;
                break;
        case EV_OUT_RUNNABLE:
                state = (t->flags & TS_IN_YIELD) ? TS_YIELD : TS_RUNQUEUE;
                break;
        case EV_IN:
                state = (t->flags & TS_IN_YIELD) ? TS_YIELD : TS_RUN;
                break;
        case EV_WAKE:
                /* A wakeup that finds the thread still running (it set its state but had not
                 * switched out yet) changes nothing. */
                if (old_state == TS_SYNC || old_state == TS_BLOCKED)
                        state = TS_RUNQUEUE;
                break;
        case EV_EXIT:
                state = TS_EXITED;
                break;
        case EV_YIELD_ENTER:
                t->flags |= TS_IN_YIELD;
                state = TS_YIELD;
                break;
        case EV_YIELD_EXIT:
                t->flags &= ~TS_IN_YIELD;
                state = TS_RUN;
                break;
        }
        if (state == old_state) {
                bpf_spin_unlock(&t->lock);
                return;
        }
        if (now > t->since_ns) {
                if (old_state < TS_STATES)
                        t->ns[old_state] += now - t->since_ns;
                t->since_ns = now;
        }
        counted = t->flags & TS_COUNTED;
        before = counted && is_active(old_state);
        after = is_active(state);
        t->state = state;
        t->flags |= TS_COUNTED;
        mark_run_delay(t, run_delay);
        bpf_spin_unlock(&t->lock);
        *d_active = after - before;
        *d_alive = (state == TS_EXITED) ? (counted ? -1 : 0) : (counted ? 0 : 1);
}

/* The task's sched_info.run_delay (ns it waited for a CPU, grown as each wait ends), or -1
 * where the kernel keeps none (no CONFIG_SCHED_INFO). */
static __always_inline __s64 task_run_delay(struct task_struct *task)
{
        if (!bpf_core_field_exists(task->sched_info))
                return -1;
        return (__s64)task->sched_info.run_delay;
}

/* The in-futex flag: no state change, no clock read, no lock. Only the thread itself sets
 * or clears it (these are its syscalls), so reading it first is safe; an atomic or/and keeps
 * the other flags, which the seeding iterator may set under the lock at the same time. */
static __always_inline void on_futex(__u32 tid, bool enter)
{
        struct ts_thread *t = bpf_map_lookup_elem(&threads, &tid);

        if (!t)
                return;
        if (enter && !(t->flags & TS_IN_FUTEX))
                __sync_fetch_and_or(&t->flags, TS_IN_FUTEX);
        else if (!enter && (t->flags & TS_IN_FUTEX))
                __sync_fetch_and_and(&t->flags, ~TS_IN_FUTEX);
}

/* Applies ev to the task's thread if it is watched. *now is read from the clock at the first
 * watched thread of the event and shared by the second (sched_switch has two): in these VMs
 * a clock read costs as much as a map lookup. */
static __always_inline void on_thread(struct task_struct *task, enum ev ev, __u64 *now)
{
        __u32 tid = task->pid;
        struct ts_thread *t = bpf_map_lookup_elem(&threads, &tid);
        int d_active, d_alive;

        if (!t)
                return;
        if (!*now)
                *now = bpf_ktime_get_ns();
        thread_event(t, ev, *now, task_run_delay(task), &d_active, &d_alive);
        app_add(t, d_active, d_alive, *now);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ts_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
        /* prev_state is the task's state when it called schedule(): TASK_RUNNING (0) when
         * preempted or yielding, a sleeping state when it blocks. */
        __u64 now = 0;

        on_thread(prev, (preempt || prev_state == 0) ? EV_OUT_RUNNABLE : EV_OUT_BLOCKED, &now);
        on_thread(next, EV_IN, &now);
        return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(ts_sched_wakeup, struct task_struct *p)
{
        __u64 now = 0;

        on_thread(p, EV_WAKE, &now);
        return 0;
}

/* A new thread of a watched process: tracked from here, runnable. */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(ts_sched_wakeup_new, struct task_struct *p)
{
        struct ts_thread fresh = {};
        struct ts_thread *t;
        __u32 tgid = p->tgid, tid = p->pid;
        __u32 *slot = bpf_map_lookup_elem(&watched, &tgid);
        __u64 now;

        if (!slot)
                return 0;
        now = bpf_ktime_get_ns();
        fresh.tgid = tgid;
        fresh.slot = *slot;
        fresh.state = TS_RUNQUEUE;
        fresh.since_ns = now;
        mark_run_delay(&fresh, task_run_delay(p));
        if (bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST))
                return 0;
        t = bpf_map_lookup_elem(&threads, &tid);
        if (!t)
                return 0;
        /* Counted under its lock, so that an event of the new thread on another CPU that came
         * first is not counted twice. */
        bpf_spin_lock(&t->lock);
        if (t->flags & TS_COUNTED) {
                bpf_spin_unlock(&t->lock);
                return 0;
        }
        t->flags |= TS_COUNTED;
        bpf_spin_unlock(&t->lock);
        app_add(t, 1, 1, now);
        return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ts_sched_process_exit, struct task_struct *p)
{
        __u64 now = 0;

        on_thread(p, EV_EXIT, &now);
        return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(ts_sys_enter, struct pt_regs *regs, long id)
{
        __u64 now = 0;
        __u32 tid;

        if (id != NR_FUTEX && id != NR_SCHED_YIELD && id != NR_FUTEX_WAITV)
                return 0;
        tid = (__u32)bpf_get_current_pid_tgid();
        if (id == NR_SCHED_YIELD) {
                on_thread(bpf_get_current_task_btf(), EV_YIELD_ENTER, &now);
                return 0;
        }
        if (id == NR_FUTEX) {
                unsigned long cmd = SYSCALL_ARG2(regs) & FUTEX_CMD_MASK;

                if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_LOCK_PI &&
                    cmd != FUTEX_LOCK_PI2 && cmd != FUTEX_WAIT_REQUEUE_PI)
                        return 0;
        }
        on_futex(tid, true);
        return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ts_sys_exit, struct pt_regs *regs, long ret)
{
        long id = SYSCALL_NR(regs);
        __u64 now = 0;

        if (id == NR_SCHED_YIELD)
                on_thread(bpf_get_current_task_btf(), EV_YIELD_EXIT, &now);
        else if (id == NR_FUTEX || id == NR_FUTEX_WAITV)
                on_futex((__u32)bpf_get_current_pid_tgid(), false);
        return 0;
}

/* Run on demand by the loader after it seeded threads that existed before they were watched:
 * their state now (running, runnable, asleep) from the task itself, and their count in the
 * app, under the same locks as the events. */
SEC("iter/task")
int ts_seed(struct bpf_iter__task *ctx)
{
        struct task_struct *task = ctx->task;
        struct ts_thread *t;
        __u32 tgid, tid, state, *slot;
        int active, runnable, on_cpu;
        __s64 run_delay;
        __u64 now;

        if (!task)
                return 0;
        tgid = task->tgid;
        tid = task->pid;
        slot = bpf_map_lookup_elem(&watched, &tgid);
        if (!slot)
                return 0;
        t = bpf_map_lookup_elem(&threads, &tid);
        if (!t)
                return 0;
        runnable = task->__state == 0;
        on_cpu = task->on_cpu;
        run_delay = task_run_delay(task);
        now = bpf_ktime_get_ns();
        bpf_spin_lock(&t->lock);
        if ((t->flags & TS_COUNTED) || t->state == TS_EXITED) {
                bpf_spin_unlock(&t->lock);
                return 0;
        }
        if (runnable)
                state = (t->flags & TS_IN_YIELD) ? TS_YIELD : on_cpu ? TS_RUN : TS_RUNQUEUE;
        else
                state = (t->flags & TS_IN_FUTEX) ? TS_SYNC : TS_BLOCKED;
        t->state = state;
        t->flags |= TS_COUNTED;
        mark_run_delay(t, run_delay);
        active = is_active(state);
        bpf_spin_unlock(&t->lock);
        app_add(t, active, 1, now);
        return 0;
}
