#!/usr/bin/env bash
# cpufreq on this machine: where the kernel offers no frequency scaling, the probe says so with
# the reason, the actuator still opens (cpusets work, DVFS is off with that reason) and a
# frequency request is refused with it. Where it does, the probe must say available.
set -uo pipefail
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

"$act" probe >"$tmp/probe" 2>&1
cat "$tmp/probe"
if ls -d /sys/devices/system/cpu/cpu*/cpufreq >/dev/null 2>&1; then
        grep -q '^cpufreq: available' "$tmp/probe" || { echo "FAIL: cpufreq exists but the probe says otherwise"; fail=1; }
        [ $fail = 0 ] && echo "PASS (this machine has cpufreq; the unavailable path is covered by unit tests)"
        exit $fail
fi
grep -qE '^cpufreq: unavailable: cpufreq: no .*/sys/devices/system/cpu/cpufreq.*running without DVFS$' "$tmp/probe" ||
        { echo "FAIL: the probe does not give the reason"; fail=1; }

[ "$(id -u)" = 0 ] || { echo "SKIP: opening the actuator needs root"; exit 77; }
sleep 30 &
app=$!
printf 'freq 0 1000000\nquit\n' |
        "$act" --mode affinity --group "pctl-test-freq-$$" --state-dir "$tmp/state" session "$app" >"$tmp/out" 2>&1
rc=$?
kill $app
cat "$tmp/out"
[ $rc = 0 ] || { echo "FAIL: the actuator did not carry on without DVFS (exit $rc)"; fail=1; }
grep -qE '^dvfs: off: cpufreq: .*running without DVFS$' "$tmp/out" || { echo "FAIL: DVFS not reported off"; fail=1; }
grep -qE '^error: cpufreq: .*running without DVFS' "$tmp/out" || { echo "FAIL: a frequency request was not refused with the reason"; fail=1; }
[ $fail = 0 ] && echo PASS
exit $fail
