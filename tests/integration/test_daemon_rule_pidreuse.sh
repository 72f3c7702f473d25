#!/usr/bin/env bash
# A process released by hand is never matched by a rule again, but only while it lives: once it
# has exited, a new process given its PID is matched like any other. Before: every released PID
# was kept for pctld's life (the list grew by one per `pctl release`, without end) and a later
# process with that PID was never adopted by any rule. Runs in a PID namespace of its own with
# its own pctld, where ns_last_pid hands out the PID deterministically.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for a PID namespace and cgroup v1 cpusets"
unshare -p -f --mount-proc true 2>/dev/null || skip "cannot make a PID namespace here"
if [ -z "${PIDREUSE_INNER:-}" ]; then
        PIDREUSE_INNER=1 exec unshare -p -f --mount-proc bash "$0"
fi
pctld_setup
trap pctld_cleanup EXIT
printf '[policy reuse]\nobjective = monitor\nmatch_comm = pctlreuse\n' >"$T/policies.d/reuse.conf"
cp "$(command -v sleep)" "$T/pctlreuse"
pctld_start
S=(--socket "$T/pctl.sock")
managed_pid() { # managed_pid PID: 0 when pctld manages it
        status_json
        [ "$(json_get "$T/status.json" "$1 in [a['pid'] for a in d['apps']]")" = True ]
}

"$T/pctlreuse" 120 &
P=$!
CLEANUP_PIDS=$P
wait_until 10 managed_pid $P || fail "the rule did not adopt pid $P"
"$PCTL" release $P "${S[@]}" >/dev/null || fail "release of pid $P refused"
sleep 1.5 # 15 scans
managed_pid $P && fail "a released process was matched again by its rule"
echo "ok: pid $P released and not matched again while it lives"

kill $P
wait $P 2>/dev/null
sleep 1.5 # pctld's scans see it gone
# No fork between these two lines: the next process gets the released one's PID.
echo $((P - 1)) >/proc/sys/kernel/ns_last_pid
"$T/pctlreuse" 120 &
Q=$!
CLEANUP_PIDS=$Q
[ "$Q" = "$P" ] || skip "the new process got PID $Q, not $P"
wait_until 10 managed_pid $Q ||
        fail "a new process given the released pid $P was never matched by the rule"
echo "ok: a new process with a released process's PID is matched by the rule"
