#!/usr/bin/env bash
# The monitor objective changes nothing: a process a monitor rule selects is listed by `pctl
# status` with its estimates, but stays in its own cgroup with its own CPUs, and pctld's record
# holds nothing of it (before: it was moved into pctld's group like any managed app). Adopting
# it by hand with a managing policy takes it over; stopping pctld gives it back as it was.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root to adopt other processes"
pctld_setup
trap pctld_cleanup EXIT
S="--socket $T/pctl.sock"

# A process with a name of its own, pinned by hand to CPU 0: the rule must keep both.
cp "$(command -v sleep)" "$T/pmonwatch"
"$T/pmonwatch" 120 &
WATCHED=$!
CLEANUP_PIDS="$WATCHED"
taskset -p -c 0 "$WATCHED" >/dev/null
before=$(main_state "$WATCHED")
echo "watched $WATCHED: cpuset and CPUs before: $before"
cat >"$T/policies.d/watch.conf" <<EOF
[policy watch]
objective = monitor
match_comm = pmonwatch
match_user = root
EOF
pctld_start

listed() { status_json && [ "$(json_get "$T/status.json" "[a['pid'] for a in d['apps']].count($WATCHED)")" = 1 ]; }
wait_until 10 listed || fail "the monitor rule did not select $WATCHED: $(cat "$T/status.json")"
echo "ok: pctl status lists the watched process"
sleep 2 # a few decisions
now=$(main_state "$WATCHED")
[ "$now" = "$before" ] || fail "the watched process changed from '$before' to '$now'"
echo "ok: still '$now' after pctld's decisions"
if [ -e "$T/state/actuators.state" ] && grep -q " $WATCHED " "$T/state/actuators.state"; then
        fail "pctld recorded a change to the watched process: $(cat "$T/state/actuators.state")"
fi
echo "ok: nothing of it in pctld's record"

# Asking for it to be managed takes it over from the watching rule (pctl run inside a watched
# service did the same and lost the race: "already managed").
"$PCTL" adopt "$WATCHED" --policy edp $S >/dev/null || fail "pctl adopt of the watched process was refused"
taken() { [ "$(main_state "$WATCHED")" != "$before" ]; }
wait_until 10 taken || fail "the process adopted on request was not taken over: $(main_state "$WATCHED")"
echo "ok: pctl adopt took it over: $(main_state "$WATCHED")"

pctld_stop TERM
now=$(main_state "$WATCHED")
[ "$now" = "$before" ] || fail "after pctld stopped the watched process is '$now', was '$before'"
echo "ok: after pctld stopped: '$now'"
echo PASS
