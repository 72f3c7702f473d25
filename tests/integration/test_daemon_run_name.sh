#!/usr/bin/env bash
# An app started with `pctl run` is adopted before it executes its command, under the name
# "pctl"; pctld names it by the command it runs from the next sample on (100 ms here, before
# any decision), in pctl status and in its log.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
pctld_setup
trap pctld_cleanup EXIT
# Decisions (where the name used to be refreshed) come only after the test looked.
sed -i 's/^decision_ms = .*/decision_ms = 10000/' "$T/pctl.conf"
pctld_start

"$PCTL" --socket "$T/pctl.sock" run -- sleep 30 &
RUN_PID=$!
CLEANUP_PIDS="$RUN_PID"
child=""
for _ in $(seq 50); do
        child=$(pgrep -P "$RUN_PID" -x sleep) && break
        sleep 0.1
done
[ -n "$child" ] || fail "pctl run did not start sleep"
name=""
for _ in $(seq 20); do
        status_json
        name=$(json_get "$T/status.json" "[a['name'] for a in d['apps'] if a['pid'] == $child]")
        [ "$name" = "['sleep']" ] && break
        sleep 0.1
done
[ "$name" = "['sleep']" ] || fail "pctl status names pid $child $name, not sleep"
grep -q "pid $child now runs sleep (was pctl)" "$T/pctld.log" ||
        fail "the log does not name pid $child sleep: $(cat "$T/pctld.log")"
"$PCTL" --socket "$T/pctl.sock" status | grep -Eq "^sleep +$child " ||
        fail "pctl status does not show sleep $child"
echo "ok: pid $child is named sleep in status and the log"
