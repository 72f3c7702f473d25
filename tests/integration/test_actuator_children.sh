#!/usr/bin/env bash
# Affinity mode and the children an app forks: a child forked after pctl narrowed the app
# inherits the narrowed mask, so it is the app's too: the next change of CPUs reaches it and
# release gives it back the mask the app had (before: it stayed narrowed for good). A child
# the app had before it was adopted is not the app's and is never touched.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate
tmp=$(mktemp -d)
app=
ok=0

[ "$(id -u)" = 0 ] || skip "needs root to pin other processes"
[ "$(cat /sys/devices/system/cpu/online)" = 0-1 ] || grep -qE '(^|,)0-[1-9]' /sys/devices/system/cpu/online ||
        skip "needs CPUs 0 and 1 online"

cleanup() {
        exec {drv_in}>&- 2>/dev/null
        [ -n "${drv_pid:-}" ] && kill "$drv_pid" 2>/dev/null
        [ -n "$app" ] && kill_tree "$app" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

cpus_of() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$1/status"; }
check() { # check PID WANT WHAT
        local got
        got=$(cpus_of "$1")
        if [ "$got" = "$2" ]; then echo "ok: $3: $1 may run on $got"; else echo "FAIL: $3: $1 may run on $got, expected $2"; ok=1; fi
}

# The app: has one child from the start, forks a second when told to.
python3 -c 'import os,sys,time,subprocess
old=subprocess.Popen(["sleep","60"]); open(sys.argv[2],"w").write(str(old.pid))
while not os.path.exists(sys.argv[1]): time.sleep(0.05)
new=subprocess.Popen(["sleep","60"]); open(sys.argv[3] + ".tmp","w").write(str(new.pid))
os.rename(sys.argv[3] + ".tmp", sys.argv[3]); new.wait()' "$tmp/go" "$tmp/old" "$tmp/new" &
app=$!
wait_until 10 test -s "$tmp/old" || fail "the app did not start its first child"
old=$(cat "$tmp/old")
all=$(cpus_of "$app")
echo "app $app and its first child $old may run on $all"

coproc DRV { exec "$act" --mode affinity --state-dir "$tmp/state" --no-dvfs session "$app" 2>&1; }
drv_pid=$DRV_PID
exec {drv_in}>&"${DRV[1]}"
exec {drv_out}<&"${DRV[0]}"
say() { echo "$1" >&$drv_in; read -r -t 30 reply <&$drv_out || reply="(no answer)"; echo "$1 -> $reply"; }
for _ in 1 2 3; do
        read -r -t 30 line <&$drv_out || fail "the driver said nothing"
        case $line in adopted*) break ;; pctl_actuate:*) fail "$line" ;; esac
done

say "cpus 1"
[ "$reply" = ok ] || ok=1
check "$app" 1 "narrowed app"
check "$old" "$all" "child from before adopt"

touch "$tmp/go"
wait_until 10 test -s "$tmp/new" || fail "the app did not fork its second child"
new=$(cat "$tmp/new")
check "$new" 1 "child forked while narrowed (inherited)"

say "cpus 0"
[ "$reply" = ok ] || ok=1
check "$app" 0 "app moved"
check "$new" 0 "child forked later follows the app"
check "$old" "$all" "child from before adopt"

say release
[ "$reply" = ok ] || ok=1
check "$app" "$all" "app released"
check "$new" "$all" "child forked later released"
check "$old" "$all" "child from before adopt"

say quit
wait "$drv_pid"
drv_pid=
[ -e "$tmp/state/actuators.state" ] && { echo "FAIL: record left: $(cat "$tmp/state/actuators.state")"; ok=1; }
[ $ok = 0 ] && echo PASS
exit $ok
