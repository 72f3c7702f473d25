#!/usr/bin/env bash
# What pctld must never manage is refused by `adopt` with the reason (exit 1) and never
# selected by a policy's rules: init, kernel threads, pctld itself, a thread in place of its
# process (one app per process), and a process another pctld holds. Two instances cannot share
# one cgroup group; a group that disappears is made again; a refused adopt leaves no record.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
[ -w /sys/fs/cgroup/cpuset/cpuset.cpus ] || skip "no writable cgroup v1 cpuset hierarchy"
pctld_setup
T2=$(mktemp -d /tmp/pctl-it2-XXXXXX)
GROUP2="pctl-it2-$$"
cleanup() {
        [ -n "${PCTLD2_PID:-}" ] && kill -KILL "$PCTLD2_PID" 2>/dev/null
        cpuset_group_remove "$GROUP2"
        rm -rf "$T2"
        pctld_cleanup
}
trap cleanup EXIT
S="--socket $T/pctl.sock"

# Rules that would select init, kernel threads and pctld itself if nothing stopped them.
init_comm=$(cat /proc/1/comm)
cat >"$T/policies.d/greedy.conf" <<EOF
[policy greedy]
objective = monitor
match_comm = $init_comm
match_comm = kthreadd
match_comm = ksoftirqd/*
match_comm = pctld
EOF
pctld_start

expect_exit 1 "pid 1 is init" "$PCTL" adopt 1 $S
kt=$(pgrep -x kthreadd | head -1)
[ -n "$kt" ] && expect_exit 1 "pid $kt (kthreadd) is a kernel thread" "$PCTL" adopt "$kt" $S
expect_exit 1 "pid $PCTLD_PID is pctld itself" "$PCTL" adopt "$PCTLD_PID" $S

# A thread is refused with the process to name instead; the process is one app.
python3 -c 'import threading, time
threading.Thread(target=time.sleep, args=(60,)).start()
time.sleep(60)' &
APP=$!
CLEANUP_PIDS="$APP"
for _ in $(seq 50); do [ "$(ls /proc/$APP/task | wc -l)" -ge 2 ] && break; sleep 0.1; done
TID=$(ls /proc/$APP/task | grep -vx "$APP" | head -1)
[ -n "$TID" ] || fail "the test app has no second thread"
expect_exit 1 "pid $TID is a thread of process $APP" "$PCTL" adopt "$TID" $S
expect_exit 0 "" "$PCTL" adopt "$APP" $S
expect_exit 1 "pid $APP is already managed" "$PCTL" adopt "$APP" $S
expect_exit 1 "thread of managed process $APP, release that" "$PCTL" release "$TID" $S

# The rules have had a few scans: they took none of what they matched.
sleep 1.5
status_json
n=$(json_get "$T/status.json" "len(d['apps'])")
[ "$n" = 1 ] || fail "status lists $n apps, not just the adopted one: $(cat "$T/status.json")"
grep -q "managing .*greedy" "$T/pctld.log" && fail "a rule selected what must not be managed: $(grep managing "$T/pctld.log")"
grep -q "cannot take over" "$T/pctld.log" && fail "a rule tried what must not be managed: $(grep "cannot take over" "$T/pctld.log")"

# The refusals left no record behind: only our group and the one app.
grep -c "^dir " "$T/state/actuators.state" | grep -qx 2 ||
        fail "the state record holds more than the group and the app: $(cat "$T/state/actuators.state")"

# A second instance on the same group refuses to start and leaves the first one's alone.
sed -e "s#$T/pctl.sock#$T2/pctl.sock#" -e "s#$T/state#$T2/state#" "$T/pctl.conf" >"$T2/same.conf"
out=$("$PCTLD" --config "$T2/same.conf" --foreground 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "a second pctld on group $GROUP exited $rc: $out"
echo "$out" | grep -q "belongs to another running pctld" || fail "second instance's refusal unclear: $out"
[ -d "/sys/fs/cgroup/cpuset/$GROUP/app-$APP" ] || fail "the second instance removed the first one's group"
echo "ok: second instance on $GROUP refused: $(echo "$out" | tail -1)"

# Another instance on its own group cannot take the first one's app.
sed -e "s#$T/pctl.sock#$T2/pctl.sock#" -e "s#$T/state#$T2/state#" -e "s#$T/policies.d#$T2/policies.d#" \
        -e "s#cgroup_group = .*#cgroup_group = $GROUP2#" "$T/pctl.conf" >"$T2/other.conf"
mkdir "$T2/policies.d"
"$PCTLD" --config "$T2/other.conf" --foreground >>"$T2/pctld.log" 2>&1 &
PCTLD2_PID=$!
for _ in $(seq 100); do "$PCTL" status --socket "$T2/pctl.sock" >/dev/null 2>&1 && break; sleep 0.1; done
"$PCTL" status --socket "$T2/pctl.sock" >/dev/null 2>&1 || fail "the other pctld did not start: $(cat "$T2/pctld.log")"
expect_exit 1 "process $APP is in /sys/fs/cgroup/cpuset/$GROUP, which another pctld manages" \
        "$PCTL" adopt "$APP" --socket "$T2/pctl.sock"
kill -TERM "$PCTLD2_PID"
wait "$PCTLD2_PID"
PCTLD2_PID=

# The group disappears under pctld: the next adopt makes it again.
expect_exit 0 "" "$PCTL" release "$APP" $S
cpuset_group_remove "$GROUP"
[ -d "/sys/fs/cgroup/cpuset/$GROUP" ] && fail "could not remove $GROUP for the test"
expect_exit 0 "" "$PCTL" adopt "$APP" $S
grep -q "$GROUP had disappeared: made it again" "$T/pctld.log" || fail "the recreation was not logged"
[ "$(cat /proc/$APP/cpuset)" = "/$GROUP/app-$APP" ] || fail "the app is in $(cat /proc/$APP/cpuset)"

# A clean stop gives everything back at once and leaves no record.
start=$(date +%s%N)
pctld_stop TERM
ms=$((($(date +%s%N) - start) / 1000000))
[ "$PCTLD_RC" -eq 0 ] || fail "pctld exited $PCTLD_RC on SIGTERM"
[ -e "$T/state/actuators.state" ] && fail "the record survived a clean stop: $(cat "$T/state/actuators.state")"
[ -d "/sys/fs/cgroup/cpuset/$GROUP" ] && fail "group $GROUP left behind"
[ "$(cat /proc/$APP/cpuset)" = "/" ] || fail "the app was not given back: $(cat /proc/$APP/cpuset)"
echo "ok: stopped in $ms ms"
echo PASS
