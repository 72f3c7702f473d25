#!/usr/bin/env bash
# Real cpusets on this machine (cgroup v1 by default, ACT_MODE=affinity for the fallback): adopt
# a running multi-threaded pbench, restrict it to CPU 1 (every thread shows Cpus_allowed_list:
# 1), widen to 0-1, release: every thread is back in its own cgroup with its own pin, and the
# directories are gone. Runs under a group of its own and removes it even when it fails.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
mode=${ACT_MODE:-v1}
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate
cs=/sys/fs/cgroup/cpuset
group=pctl-test-$mode-$$
tmp=$(mktemp -d)
app=
fail=0

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to move other processes"; exit 77; }
if [ "$mode" = v1 ] && [ ! -w $cs/cpuset.cpus ]; then
        echo "SKIP: no writable cgroup v1 cpuset hierarchy at $cs"
        exit 77
fi
grep -qE '(^|,)0-[1-9]|(^|,)1(,|-|$)' /sys/devices/system/cpu/online ||
        { echo "SKIP: needs CPUs 0 and 1 online"; exit 77; }

cleanup() {
        exec {drv_in}>&- 2>/dev/null
        [ -n "${drv_pid:-}" ] && kill "$drv_pid" 2>/dev/null
        [ -n "$app" ] && kill "$app" 2>/dev/null
        cpuset_group_remove "$group"
        rm -rf "$tmp"
}
trap cleanup EXIT

# The app: pbench (3 threads, workers pinned one per CPU by pbench itself), else python threads.
if [ -x "${PBENCH:-}" ]; then
        "$PBENCH" --p 0.9 --threads 2 --t1 30 >/dev/null &
        app=$!
        want_threads=3
else
        echo "note: no pbench at '${PBENCH:-}', using a python process with 2 threads"
        python3 -c 'import threading,time
for _ in range(2): threading.Thread(target=time.sleep, args=(40,)).start()
time.sleep(40)' &
        app=$!
        want_threads=3
fi
for _ in $(seq 200); do
        [ "$(ls /proc/$app/task 2>/dev/null | wc -l)" -ge $want_threads ] && break
        sleep 0.1
done
[ "$(ls /proc/$app/task | wc -l)" -ge $want_threads ] || { echo "FAIL: app has no $want_threads threads"; exit 1; }
# One thread pinned by hand as well: it must find its pin again after release.
main_tid=$app
taskset -p -c 0 "$main_tid" >/dev/null

tids=$(ls /proc/$app/task)
declare -A mask0 cg0
for t in $tids; do
        mask0[$t]=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$app/task/$t/status)
        cg0[$t]=$(grep -E '^[0-9]+:([^:]*,)?cpuset(,[^:]*)?:' /proc/$app/task/$t/cgroup | cut -d: -f3)
        echo "before: thread $t cpus ${mask0[$t]} cpuset ${cg0[$t]}"
done

every_thread() { # every_thread LIST: each thread's Cpus_allowed_list is LIST
        local t got ok=0
        for t in $(ls /proc/$app/task); do
                got=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$app/task/$t/status)
                if [ "$got" != "$1" ]; then
                        echo "FAIL: thread $t may run on $got, expected $1"
                        ok=1
                fi
        done
        return $ok
}

coproc DRV { exec "$act" --mode "$mode" --group "$group" --state-dir "$tmp/state" --no-dvfs session "$app" 2>&1; }
drv_pid=$DRV_PID
exec {drv_in}>&"${DRV[1]}"
exec {drv_out}<&"${DRV[0]}"
say() { echo "$1" >&$drv_in; read -r -t 30 reply <&$drv_out || reply="(no answer)"; echo "$1 -> $reply"; }

for _ in 1 2 3; do
        read -r -t 30 line <&$drv_out || { echo "FAIL: the driver said nothing"; exit 1; }
        echo "driver: $line"
        case $line in adopted*) break ;; pctl_actuate:*) echo "FAIL: $line"; exit 1 ;; esac
done
[ "${line%% *}" = adopted ] || { echo "FAIL: not adopted"; exit 1; }

if [ "$mode" = v1 ]; then
        for t in $(ls /proc/$app/task); do
                now=$(grep -E '^[0-9]+:([^:]*,)?cpuset(,[^:]*)?:' /proc/$app/task/$t/cgroup | cut -d: -f3)
                [ "$now" = "/$group/app-$app" ] || { echo "FAIL: thread $t is in $now"; fail=1; }
        done
fi

say "cpus 1"
[ "$reply" = ok ] || fail=1
every_thread 1 || fail=1
say get
[ "$reply" = "ok 1" ] || { echo "FAIL: get says '$reply'"; fail=1; }

say "cpus 0-1"
[ "$reply" = ok ] || fail=1
if [ "$mode" = v1 ]; then
        # Since Linux 6.2 the kernel keeps what a thread asked for with sched_setaffinity and
        # gives it that within the cpuset: a thread the app pinned goes back to its pin when
        # the cpuset widens. Otherwise a thread gets the whole cpuset.
        for t in $(ls /proc/$app/task); do
                got=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$app/task/$t/status)
                if [ "$got" != 0-1 ] && [ "$got" != "${mask0[$t]:-none}" ]; then
                        echo "FAIL: thread $t may run on $got, expected 0-1 or its own ${mask0[$t]:-}"
                        fail=1
                fi
        done
else
        every_thread 0-1 || fail=1
fi
say get
[ "$reply" = "ok 0-1" ] || { echo "FAIL: get says '$reply'"; fail=1; }

say release
[ "$reply" = ok ] || fail=1
for t in $tids; do
        [ -d /proc/$app/task/$t ] || continue
        m=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$app/task/$t/status)
        c=$(grep -E '^[0-9]+:([^:]*,)?cpuset(,[^:]*)?:' /proc/$app/task/$t/cgroup | cut -d: -f3)
        echo "after: thread $t cpus $m cpuset $c"
        [ "$m" = "${mask0[$t]}" ] || { echo "FAIL: thread $t has cpus $m, had ${mask0[$t]}"; fail=1; }
        [ "$c" = "${cg0[$t]}" ] || { echo "FAIL: thread $t is in $c, was in ${cg0[$t]}"; fail=1; }
done
if [ "$mode" = v1 ] && [ -e "$cs/$group/app-$app" ]; then
        echo "FAIL: $cs/$group/app-$app is still there"
        fail=1
fi

say quit
wait "$drv_pid"
drv_pid=
if [ -e "$cs/$group" ]; then
        echo "FAIL: $cs/$group is still there after close"
        fail=1
fi
if [ -e "$tmp/state/actuators.state" ]; then
        echo "FAIL: the state record was not cleared: $(cat "$tmp/state/actuators.state")"
        fail=1
fi
[ $fail = 0 ] && echo "PASS ($mode)"
exit $fail
