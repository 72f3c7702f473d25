#!/usr/bin/env bash
# Crash: a process holding the actuator adopts an app (restricted to CPU 1) and is SIGKILLed.
# A fresh start then puts the app back (its cpuset and each thread's own mask) and removes
# what was created, leaving nothing under the test's group. Three rounds: cgroup v1 undone by
# `recover`, v1 undone by a fresh `open` (which recovers first), and the affinity fallback.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate
cs=/sys/fs/cgroup/cpuset
group=pctl-test-crash-$$
tmp=$(mktemp -d)
app=
holder=
fail=0

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to move other processes"; exit 77; }
[ -w $cs/cpuset.cpus ] || { echo "SKIP: no writable cgroup v1 cpuset hierarchy at $cs"; exit 77; }

cleanup() {
        [ -n "$holder" ] && kill -9 "$holder" 2>/dev/null
        [ -n "$app" ] && kill "$app" 2>/dev/null
        cpuset_group_remove "$group"
        rm -rf "$tmp"
}
trap cleanup EXIT

python3 -c 'import threading,time
for _ in range(2): threading.Thread(target=time.sleep, args=(60,)).start()
time.sleep(60)' &
app=$!
for _ in $(seq 100); do [ "$(ls /proc/$app/task | wc -l)" -ge 3 ] && break; sleep 0.1; done
pinned=$(ls /proc/$app/task | sort -n | tail -1)
taskset -p -c 0 "$pinned" >/dev/null
cpuset_of() { grep -E '^[0-9]+:([^:]*,)?cpuset(,[^:]*)?:' /proc/$app/task/$1/cgroup | cut -d: -f3; }
cpus_of() { awk '/^Cpus_allowed_list/ {print $2}' /proc/$app/task/$1/status; }
declare -A mask0 cg0
for t in $(ls /proc/$app/task); do mask0[$t]=$(cpus_of $t); cg0[$t]=$(cpuset_of $t); done

round() { # round MODE HOW(recover|open)
        local mode=$1 how=$2 out=$tmp/holder.out t
        echo "== $mode, undone by $how"
        "$act" --mode "$mode" --group "$group" --state-dir "$tmp/state" --no-dvfs \
                adopt "$app" --cpus 1 --hold >"$out" 2>&1 &
        holder=$!
        for _ in $(seq 300); do grep -q holding "$out" && break; sleep 0.1; done
        if ! grep -q holding "$out"; then
                echo "FAIL: the holder did not adopt: $(cat "$out")"
                fail=1
                return
        fi
        for t in $(ls /proc/$app/task); do
                [ "$(cpus_of $t)" = 1 ] || { echo "FAIL: thread $t not on CPU 1 while held"; fail=1; }
        done
        kill -9 "$holder"
        wait "$holder" 2>/dev/null
        holder=
        [ -s "$tmp/state/actuators.state" ] || { echo "FAIL: no state record after the crash"; fail=1; }
        echo "record left by the crashed holder:"
        cat "$tmp/state/actuators.state"
        if [ "$how" = recover ]; then
                "$act" --group "$group" --state-dir "$tmp/state" recover >"$out" 2>&1
        else
                "$act" --mode "$mode" --group "$group" --state-dir "$tmp/state" --no-dvfs open >"$out" 2>&1
        fi
        rc=$?
        echo "$how: rc $rc: $(tr '\n' ' ' <"$out")"
        [ $rc = 0 ] || fail=1
        if [ "$how" = recover ] && ! grep -qE '^recovered [1-9]' "$out"; then
                echo "FAIL: recover restored nothing"
                fail=1
        fi
        for t in $(ls /proc/$app/task); do
                if [ "$(cpus_of $t)" != "${mask0[$t]}" ] || [ "$(cpuset_of $t)" != "${cg0[$t]}" ]; then
                        echo "FAIL: thread $t: cpus $(cpus_of $t) cpuset $(cpuset_of $t), was ${mask0[$t]} ${cg0[$t]}"
                        fail=1
                fi
        done
        if [ -e "$cs/$group" ]; then
                echo "FAIL: left behind: $(find "$cs/$group" -maxdepth 1 -type d)"
                fail=1
        fi
        if [ -e "$tmp/state/actuators.state" ]; then
                echo "FAIL: the record was not cleared"
                fail=1
        fi
}

round v1 recover
round v1 open
round affinity recover
[ $fail = 0 ] && echo PASS
exit $fail
