#!/usr/bin/env bash
# A process that a rule does not match when pctld first sees it, and that then execs a program
# the rule names (a job script or a shell that sets up and `exec`s the real program: the PID
# stays, the name changes), is matched once it has. Before: a PID was looked at once, at the
# first scan that saw it, and the exec'd program was never adopted.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
pctld_setup
trap pctld_cleanup EXIT
printf '[policy exec]\nobjective = monitor\nmatch_comm = pctlexec\n' >"$T/policies.d/exec.conf"
cp "$(command -v sleep)" "$T/pctlexec"
pctld_start
managed_pid() { # managed_pid PID: 0 when pctld manages it
        status_json
        [ "$(json_get "$T/status.json" "$1 in [a['pid'] for a in d['apps']]")" = True ]
}

# The wrapper waits for a file, so that pctld's scans see it under its own name first.
bash -c 'while [ ! -e "$1/go" ]; do sleep 0.1; done; exec "$1/pctlexec" 120' wrapper "$T" &
P=$!
CLEANUP_PIDS=$P
sleep 1.5 # 15 scans
managed_pid $P && fail "the rule matched pid $P before it exec'd pctlexec"
[ "$(cat /proc/$P/comm)" = bash ] || fail "pid $P is $(cat /proc/$P/comm), not the wrapper"
touch "$T/go"
execd() { [ "$(cat /proc/$P/comm 2>/dev/null)" = pctlexec ]; }
wait_until 10 execd || fail "pid $P did not exec"
wait_until 10 managed_pid $P || fail "pid $P exec'd pctlexec and the rule never matched it"
echo "ok: pid $P matched by the rule once it exec'd the program the rule names"
