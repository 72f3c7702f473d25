/* The eBPF thread-state backend's pieces that tests check on their own; not a public contract.
 * The backend itself is threadstate_ebpf_ops (include/pctl/threadstate.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct threadstate;

/* The tracepoints the BPF program attaches to, as the kernel's BTF names them
 * (btf_trace_<name>). */
extern const char *const threadstate_bpf_tracepoints[];

/* 0 when the kernel's BTF has every tracepoint in names (NULL-terminated) with the arguments
 * the program reads; else -ENOENT (a tracepoint is missing: reason names it) or the error of
 * loading the BTF. */
int threadstate_bpf_check_tracepoints(const char *const *names, char *reason, size_t reason_size);

/* Why loading the program failed, from libbpf's messages (msgs) and the error: the verifier's
 * reason and the program's name when the verifier refused it, else the kernel's refusal. */
void threadstate_bpf_load_reason(const char *msgs, int err, char *reason, size_t size);

/* Switch-ins of watched threads the program did not see (some kernels trace no switch away
 * from tasks they hide) and recovered from the kernel's run_delay, since ts was opened. */
uint64_t threadstate_bpf_unseen_switch_ins(const struct threadstate *ts);

/* The maps' sizes for the next load (open or probe): at most TS_MAX_APPS processes and
 * TS_MAX_THREADS threads, which are the defaults. For tests, which fill them. 0 or -EINVAL. */
int threadstate_bpf_set_limits(unsigned max_apps, unsigned max_threads);

/* How many instructions of the object's program `prog` (before loading) store size bytes at
 * offset off from a pointer other than the stack frame; -ENOENT when there is no such program.
 * For the tests that check which programs write a field of a map value. */
int threadstate_bpf_count_stores(const char *prog, int off, int size);
