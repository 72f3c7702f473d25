#!/usr/bin/env bash
# A frequency domain goes back when its last app leaves, while pctld keeps running (not only
# when it stops). This machine has no cpufreq: pctld runs in a private mount namespace (the
# script re-runs itself under `unshare -m`) over a fake /sys/devices/system/cpu with two CPUs,
# each its own domain (userspace governor offered), as test_actuator_cpufreq_ns.sh lays it
# out. An app adopted under a policy of at most 1000 MHz gets its domain set to 1000 MHz
# (governor userspace); `pctl release` gives it back (governor schedutil, the record without
# it) with pctld still running.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"

[ "$(id -u)" = 0 ] || skip "a mount namespace and bind mounts need root"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
if [ -z "${PCTL_TEST_IN_MOUNT_NS:-}" ]; then
        exec unshare --mount --propagation private env PCTL_TEST_IN_MOUNT_NS=1 bash "$0" "$@"
fi

pctld_setup
fake=$(mktemp -d)
cleanup() {
        pctld_cleanup
        umount -l /sys/devices/system/cpu 2>/dev/null
        rm -rf "$fake"
}
trap cleanup EXIT

echo 0-1 >"$fake/online"
for c in 0 1; do
        mkdir -p "$fake/cpu$c/topology"
        echo 0 >"$fake/cpu$c/topology/physical_package_id"
        fake_cpufreq_policy "$fake/cpufreq/policy$c" $c
        ln -s ../cpufreq/policy$c "$fake/cpu$c/cpufreq"
done
mount --bind "$fake" /sys/devices/system/cpu || fail "cannot bind-mount the fake tree"

sed -i "/^\[daemon\]/a dvfs = on" "$T/pctl.conf"
cat >"$T/policies.d/slow.conf" <<POL
[policy slow]
objective = performance
max_freq = 1000
POL
pctld_start
grep -q "not changing CPU frequencies" "$T/pctld.log" && fail "pctld does not set frequencies: $(cat "$T/pctld.log")"

sleep 600 &
app=$!
CLEANUP_PIDS=$app
"$PCTL" adopt $app --policy slow --socket "$T/pctl.sock" >/dev/null || fail "adopt refused"
governors() { cat /sys/devices/system/cpu/cpufreq/policy{0,1}/scaling_governor | tr '\n' ' '; }
wait_until 30 grep -q userspace /sys/devices/system/cpu/cpufreq/policy0/scaling_governor \
        /sys/devices/system/cpu/cpufreq/policy1/scaling_governor ||
        fail "pctld never set a domain (governors: $(governors)): $(tail -5 "$T/pctld.log")"
echo "while managed: governors $(governors)"
grep -q "^freq " "$T/state/actuators.state" || fail "no freq entry in the record"

"$PCTL" release $app --socket "$T/pctl.sock" >/dev/null || fail "release refused"
kill -0 "$PCTLD_PID" || fail "pctld is gone"
wait_until 5 test "$(governors)" = "schedutil schedutil " ||
        fail "after the last app left: governors $(governors), still pctld's (it runs)"
echo "after the release, pctld running: governors $(governors)"
! grep -q "^freq " "$T/state/actuators.state" 2>/dev/null ||
        fail "the record still holds the domain: $(cat "$T/state/actuators.state")"
grep "given back" "$T/pctld.log"
pctld_stop TERM
[ "$PCTLD_RC" = 0 ] || fail "pctld exited $PCTLD_RC"
echo PASS
