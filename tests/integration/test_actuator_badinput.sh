#!/usr/bin/env bash
# Bad input to the actuator, each a clear error (exit 1, one message naming the problem) that
# leaves no half-made cgroup and the process where it was: a CPU list with an absent CPU, an
# empty list, a PID that does not exist, and a process that exits while being moved (a zombie:
# its /proc entry is there but it has already exited).
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate
cs=/sys/fs/cgroup/cpuset
group=pctl-test-bad-$$
tmp=$(mktemp -d)
app=
zparent=
fail=0

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to move other processes"; exit 77; }
[ -w $cs/cpuset.cpus ] || { echo "SKIP: no writable cgroup v1 cpuset hierarchy at $cs"; exit 77; }

cleanup() {
        [ -n "$app" ] && kill "$app" 2>/dev/null
        [ -n "$zparent" ] && kill "$zparent" 2>/dev/null
        cpuset_group_remove "$group"
        rm -rf "$tmp"
}
trap cleanup EXIT

online=$(cat /sys/devices/system/cpu/online)
absent=$(($(nproc --all) + 6))
sleep 60 &
app=$!
cg0=$(grep -E '^[0-9]+:([^:]*,)?cpuset' /proc/$app/cgroup | cut -d: -f3)
mask0=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$app/status)

# expect NAME MESSAGE-PATTERN ARGS...: exit 1, the message, nothing left.
expect() {
        local name=$1 pattern=$2 rc
        shift 2
        "$act" --group "$group" --state-dir "$tmp/state" --no-dvfs "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ $rc != 1 ]; then
                echo "FAIL: $name: exit $rc, expected 1 ($(cat "$tmp/err"))"
                fail=1
        elif ! grep -qE -- "$pattern" "$tmp/err"; then
                echo "FAIL: $name: message '$(cat "$tmp/err")' does not match '$pattern'"
                fail=1
        else
                echo "ok: $name -> $(cat "$tmp/err")"
        fi
        if [ -e "$cs/$group" ]; then
                echo "FAIL: $name: left behind $(find "$cs/$group" -type d)"
                fail=1
        fi
        if [ -e "$tmp/state/actuators.state" ]; then
                echo "FAIL: $name: the state record was not cleared"
                fail=1
        fi
        if [ -d /proc/$app ]; then
                [ "$(grep -E '^[0-9]+:([^:]*,)?cpuset' /proc/$app/cgroup | cut -d: -f3)" = "$cg0" ] &&
                        [ "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$app/status)" = "$mask0" ] ||
                        { echo "FAIL: $name: the app was not put back"; fail=1; }
        fi
}

for mode in v1 affinity; do
        expect "$mode: absent CPU" "CPU list 0-$absent includes CPUs this machine does not have \(online: $online\)" \
                --mode $mode adopt "$app" --cpus "0-$absent"
        expect "$mode: empty CPU list" "empty CPU list" --mode $mode adopt "$app" --cpus ""
done

# A kernel thread cannot join a cpuset (EINVAL): the failed move leaves no record of the
# group it made for it (pctld refuses kernel threads before this; the actuator must still
# clean up after itself).
kt=$(pgrep -x kthreadd | head -1)
[ -n "$kt" ] && expect "v1: kernel thread" "cannot move .*\\[$kt\\] into .*: Invalid argument" \
        --mode v1 adopt "$kt" --cpus 1

nopid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [ -d /proc/$nopid ]; do nopid=$((nopid - 1)); done
expect "no such PID" "process $nopid does not exist" --mode v1 adopt "$nopid" --cpus 1

# A zombie: the child exits at once and its parent (exec'd into sleep) never reaps it.
bash -c 'sleep 0.1 & exec sleep 60' &
zparent=$!
for _ in $(seq 100); do
        z=$(pgrep -P "$zparent" | head -1)
        [ -n "$z" ] && [ "$(awk '{print $3}' /proc/$z/stat 2>/dev/null)" = Z ] && break
        sleep 0.1
done
if [ "$(awk '{print $3}' /proc/$z/stat 2>/dev/null)" != Z ]; then
        echo "FAIL: could not make a zombie"
        fail=1
else
        for mode in v1 affinity; do
                expect "$mode: exits mid-move" "process $z exited (while being (moved|adopted)|before)" \
                        --mode $mode adopt "$z" --cpus 1
        done
fi
[ $fail = 0 ] && echo PASS
exit $fail
