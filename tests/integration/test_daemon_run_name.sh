#!/usr/bin/env bash
# An app started with `pctl run` is adopted before it executes its command; pctl run says
# what it will run, so pctld names it so from the first log line, in pctl status and in its
# log. A process adopted by PID under another name is renamed when its own name changes
# (at the next sample), and the log says so once.
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
grep -q "managing sleep (pid $child)" "$T/pctld.log" ||
        fail "the log does not name pid $child sleep when it takes it: $(cat "$T/pctld.log")"
grep -q "pid $child now runs" "$T/pctld.log" &&
        fail "a name pctl run gave was changed: $(grep "now runs" "$T/pctld.log")"
"$PCTL" --socket "$T/pctl.sock" status | grep -Eq "^sleep +$child " ||
        fail "pctl status does not show sleep $child"
echo "ok: pid $child is named sleep in status and the log"
# How pctld holds it, as status says: on cgroup v1 a group of its own; under systemd (v2) the
# transient scope pctl run's command gets, through AllowedCPUs=.
held=$(json_get "$T/status.json" "[a['held_by'] for a in d['apps'] if a['pid'] == $child][0]")
case "$CG_MODE:$held" in
"v1:cgroup $CG_FS/"*"/app-$child") ;;
"v2:systemd unit pctl-run-$child.scope (AllowedCPUs=)") ;;
*) fail "status says sleep is held by '$held' ($CG_MODE)" ;;
esac
echo "ok: status says sleep is held by $held"

# Adopted by PID, then it execs: renamed at the next sample, logged once.
bash -c 'read -r _ </dev/null; sleep 0.5; exec sleep 30' &
SH=$!
CLEANUP_PIDS="$RUN_PID $SH"
"$PCTL" --socket "$T/pctl.sock" adopt "$SH" || fail "adopt of the shell failed"
for _ in $(seq 30); do grep -q "pid $SH now runs sleep (was bash)" "$T/pctld.log" && break; sleep 0.1; done
grep -q "pid $SH now runs sleep (was bash)" "$T/pctld.log" ||
        fail "the exec of pid $SH was not logged: $(cat "$T/pctld.log")"
[ "$(grep -c "pid $SH now runs" "$T/pctld.log")" = 1 ] || fail "the rename was logged more than once"
echo "ok: pid $SH renamed at its exec"
