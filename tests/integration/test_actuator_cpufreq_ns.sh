#!/usr/bin/env bash
# cpufreq end to end through libcpupower: the real actuator (pctl_actuate) against a fake
# /sys/devices/system/cpu bind-mounted over the real one in a private mount namespace (this
# script re-runs itself under `unshare -m`), since the library reads and writes that fixed path.
# The fake is laid out as kernels do it: cpufreq/policy0 shared by cpu0 and cpu1 through
# cpuN/cpufreq symlinks, the userspace governor offered. A session sets 1.4 GHz (governor
# userspace, scaling_setspeed), the state record holds the original policy, the holder is
# SIGKILLed, and `recover` puts schedutil and the limits back. The machine's own tree is
# never touched: outside the namespace nothing changes.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate

[ "$(id -u)" = 0 ] || { echo "SKIP: a mount namespace and bind mounts need root"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: no unshare (util-linux)"; exit 77; }
if [ -z "${PCTL_TEST_IN_MOUNT_NS:-}" ]; then
        exec unshare --mount --propagation private env PCTL_TEST_IN_MOUNT_NS=1 bash "$0" "$@"
fi

tmp=$(mktemp -d)
app=
drv_pid=
fail=0
cleanup() {
        [ -n "$drv_pid" ] && kill -9 "$drv_pid" 2>/dev/null
        [ -n "$app" ] && kill "$app" 2>/dev/null
        umount -l /sys/devices/system/cpu 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

pol=$tmp/cpu/cpufreq/policy0
mkdir -p "$tmp/cpu/cpu0" "$tmp/cpu/cpu1"
echo 0-1 >"$tmp/cpu/online"
fake_cpufreq_policy "$pol" "0 1"
ln -s ../cpufreq/policy0 "$tmp/cpu/cpu0/cpufreq"
ln -s ../cpufreq/policy0 "$tmp/cpu/cpu1/cpufreq"
mount --bind "$tmp/cpu" /sys/devices/system/cpu || { echo "FAIL: cannot bind-mount the fake tree"; exit 1; }

expect_file() { # expect_file FILE VALUE: FILE begins with VALUE
        local got
        got=$(cat "/sys/devices/system/cpu/cpufreq/policy0/$1")
        case $got in "$2"*) ;; *) echo "FAIL: $1 reads '$got', expected '$2'"; fail=1 ;; esac
}

"$act" probe >"$tmp/probe" 2>&1
cat "$tmp/probe"
grep -q '^cpufreq: available: cpufreq$' "$tmp/probe" || { echo "FAIL: the probe does not see the domain"; fail=1; }

sleep 60 &
app=$!
coproc DRV { exec "$act" --mode affinity --state-dir "$tmp/state" session "$app" 2>&1; }
drv_pid=$DRV_PID
exec {drv_in}>&"${DRV[1]}"
exec {drv_out}<&"${DRV[0]}"
for _ in 1 2 3; do
        read -r -t 30 line <&$drv_out || { echo "FAIL: the driver said nothing"; exit 1; }
        echo "driver: $line"
        case $line in adopted*) break ;; pctl_actuate:*) echo "FAIL: $line"; exit 1 ;; "dvfs: off"*) echo "FAIL: $line"; fail=1 ;; esac
done
echo "freq 0 1400000" >&$drv_in
read -r -t 30 reply <&$drv_out || reply="(no answer)"
echo "freq 0 1400000 -> $reply"
[ "$reply" = ok ] || { echo "FAIL: setting 1.4 GHz: $reply"; fail=1; }
expect_file scaling_governor userspace
expect_file scaling_setspeed 1400000
grep -qx 'freq /sys/devices/system/cpu/cpu0/cpufreq schedutil 1000000 3000000' "$tmp/state/actuators.state" ||
        { echo "FAIL: the original policy is not in the record: $(cat "$tmp/state/actuators.state" 2>&1)"; fail=1; }
echo "freq 0 1500000" >&$drv_in
read -r -t 30 reply <&$drv_out || reply="(no answer)"
echo "freq 0 1500000 -> $reply"
case $reply in "error: "*"not one of domain 0's available frequencies"*) ;; *) echo "FAIL: 1.5 GHz was not refused"; fail=1 ;; esac

# A crash: nothing is restored by the holder.
kill -9 "$drv_pid"
wait "$drv_pid" 2>/dev/null
drv_pid=
expect_file scaling_governor userspace
"$act" --state-dir "$tmp/state" recover >"$tmp/recover" 2>&1
cat "$tmp/recover"
# Two entries: the app's one thread (its affinity mask) and the domain.
grep -qx 'recovered 2' "$tmp/recover" || { echo "FAIL: recover did not restore the thread and the domain"; fail=1; }
expect_file scaling_governor schedutil
expect_file scaling_max_freq 3000000
expect_file scaling_min_freq 1000000
[ ! -e "$tmp/state/actuators.state" ] || { echo "FAIL: the record was not cleared"; fail=1; }

[ $fail = 0 ] && echo PASS
exit $fail
