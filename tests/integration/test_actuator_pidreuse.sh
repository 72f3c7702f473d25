#!/usr/bin/env bash
# Affinity mode and PID reuse: the app exits and its PID is given to an unrelated process
# before pctl notices. Changing the app's CPUs must say it exited and leave the newcomer alone,
# and so must release (before: the newcomer was pinned, and stayed pinned after release).
# Runs in a PID namespace of its own, where ns_last_pid hands out the PID deterministically.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate

[ "$(id -u)" = 0 ] || skip "needs root for a PID namespace and to pin other processes"
grep -qE '(^|,)0-[1-9]' /sys/devices/system/cpu/online || skip "needs CPUs 0 and 1 online"
unshare -p -f --mount-proc true 2>/dev/null || skip "cannot make a PID namespace here"

exec unshare -p -f --mount-proc bash -s "$act" <<'INNER'
act=$1
tmp=$(mktemp -d)
ok=0
cpus_of() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$1/status"; }
all=$(cpus_of $$)

sleep 100 &
app=$!
coproc DRV { exec "$act" --mode affinity --state-dir "$tmp/state" --no-dvfs session "$app" 2>&1; }
exec {drv_in}>&"${DRV[1]}"
exec {drv_out}<&"${DRV[0]}"
say() { echo "$1" >&$drv_in; read -r -t 30 reply <&$drv_out || reply="(no answer)"; echo "$1 -> $reply"; }
for _ in 1 2 3; do
        read -r -t 30 line <&$drv_out || { echo "FAIL: the driver said nothing"; exit 1; }
        case $line in adopted*) break ;; pctl_actuate:*) echo "FAIL: $line"; exit 1 ;; esac
done
[ "${line%% *}" = adopted ] || { echo "FAIL: not adopted: $line"; exit 1; }
say "cpus 0"
[ "$reply" = ok ] || { echo "FAIL: cpus 0: $reply"; ok=1; }

kill "$app"
wait "$app" 2>/dev/null
# No fork between these two lines: the next process gets the app's PID.
echo $((app - 1)) >/proc/sys/kernel/ns_last_pid
sleep 100 &
other=$!
if [ "$other" != "$app" ]; then
        echo "SKIP: the new process got PID $other, not $app"
        kill "$other"
        exit 77
fi
echo "PID $app now names an unrelated process, which may run on $(cpus_of "$other")"

say "cpus 1"
case $reply in error:*exited*) echo "ok: the change was refused: $reply" ;;
*) echo "FAIL: changing a gone app's CPUs said '$reply'"; ok=1 ;; esac
got=$(cpus_of "$other")
[ "$got" = "$all" ] && echo "ok: the newcomer may still run on $got" ||
        { echo "FAIL: the newcomer was pinned to $got"; ok=1; }
say release
got=$(cpus_of "$other")
[ "$got" = "$all" ] && echo "ok: after release the newcomer may run on $got" ||
        { echo "FAIL: after release the newcomer is pinned to $got"; ok=1; }
say quit
kill "$other"
rm -rf "$tmp"
[ $ok = 0 ] && echo PASS
exit $ok
INNER
