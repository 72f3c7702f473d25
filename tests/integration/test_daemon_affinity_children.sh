#!/usr/bin/env bash
# pctld in affinity mode (cpuset_mode = affinity) and the children a managed app forks after it
# was narrowed: pctld notes them at its next sample (they are in the record), so that when it is
# killed the next start gives them back their CPUs, as it does the app's (before, pctld never
# looked again after adopt: the child stayed narrowed for good). Release is
# test_actuator_children's.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root to pin other processes"
grep -qE '(^|,)0-[1-9]' /sys/devices/system/cpu/online || skip "needs CPUs 0 and 1 online"
pctld_setup
trap pctld_cleanup EXIT
sed -i 's/^\[daemon\]$/[daemon]\ncpuset_mode = affinity/' "$T/pctl.conf"
cat >"$T/policies.d/one.conf" <<'EOF'
[policy one]
objective = performance
max_cores = 1
EOF
pctld_start
grep -q "cpusets by affinity" "$T/pctld.log" || fail "cpuset_mode = affinity was not used: $(grep cpusets "$T/pctld.log")"
S="--socket $T/pctl.sock"
cpus_of() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$1/status"; }
ALL=$(cpus_of $$)

python3 -c 'import os,sys,time,subprocess
while not os.path.exists(sys.argv[1]): time.sleep(0.05)
c=subprocess.Popen(["sleep","120"]); open(sys.argv[2] + ".tmp","w").write(str(c.pid))
os.rename(sys.argv[2] + ".tmp", sys.argv[2]); c.wait()' "$T/go" "$T/child" &
APP=$!
CLEANUP_PIDS=$APP
"$PCTL" adopt "$APP" --policy one $S >/dev/null || fail "pctl adopt $APP"
one() { [ "$(cpus_of "$APP")" != "$ALL" ]; }
wait_until 20 one || fail "the app was not narrowed: $(cpus_of "$APP")"
NARROW=$(cpus_of "$APP")
echo "ok: the app runs on $NARROW"
status_json || fail "pctl status --json failed"
held=$(json_get "$T/status.json" '[a["held_by"] for a in d["apps"] if a["pid"] == '"$APP"'][0]')
[ "$held" = "affinity (its threads and later children)" ] || fail "status says the app is held by '$held'"
"$PCTL" status $S | grep -q "^ *held by: affinity" || fail "pctl status does not say how the app is held"
echo "ok: status says the app is held by $held"
touch "$T/go"
wait_until 10 test -s "$T/child" || fail "the app did not fork"
CHILD=$(cat "$T/child")
[ "$(cpus_of "$CHILD")" = "$NARROW" ] || fail "the child runs on $(cpus_of "$CHILD"), not the inherited $NARROW"
recorded() { grep -q "^task $CHILD $CHILD " "$T/state/actuators.state" 2>/dev/null; }
wait_until 10 recorded || fail "pctld did not record the child: $(cat "$T/state/actuators.state")"
echo "ok: the child $CHILD forked after narrowing is in the record: $(grep "^task $CHILD " "$T/state/actuators.state")"

pctld_stop KILL
[ "$(cpus_of "$CHILD")" = "$NARROW" ] || fail "the child changed while nobody ran"
pctld_start
child_back() { [ "$(cpus_of "$CHILD")" = "$ALL" ]; }
wait_until 10 child_back || fail "the next pctld left the child on $(cpus_of "$CHILD")"
[ "$(cpus_of "$APP")" = "$ALL" ] || fail "the next pctld left the app on $(cpus_of "$APP")"
echo "ok: after SIGKILL the next start gave the app and its child back $ALL"

echo PASS
