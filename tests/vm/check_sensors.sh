#!/bin/bash
# What `pctl sensors` and pctld report on Debian 12's own kernel, in a VM of 4 vCPUs in 2
# sockets: the eBPF thread-state sensor loads (the 6.1 verifier takes the program), and the
# topology is 2 packages of 2 CPUs, in `pctl sensors` and in pctld's `pctl status --json`.
. "$TEST_LIB"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

for c in 0 1 2 3; do
        echo -n "$(cat /sys/devices/system/cpu/cpu$c/topology/physical_package_id) "
done >"$T/sysfs"
[ "$(cat "$T/sysfs")" = "0 0 1 1 " ] || fail "the kernel's physical_package_id of CPUs 0-3: $(cat "$T/sysfs"), not 0 0 1 1"
echo "ok: the kernel puts CPUs 0-1 in package 0 and 2-3 in package 1"

"$PCTL" sensors --json >"$T/sensors.json" || fail "pctl sensors --json exited $?"
"$PCTL" sensors >"$T/sensors.txt" || fail "pctl sensors exited $?"
ebpf=$(json_get "$T/sensors.json" "[(b['available'], b['reason']) for b in d['thread_states'] if b['name'] == 'ebpf'][0]")
case $ebpf in
"(True, "*) echo "ok: ebpf available on $(uname -r)" ;;
*) fail "ebpf not available on $(uname -r): $ebpf" ;;
esac
grep -q '^ebpf  *yes ' "$T/sensors.txt" || fail "pctl sensors' table does not say ebpf yes: $(grep '^ebpf' "$T/sensors.txt")"
[ "$(json_get "$T/sensors.json" "d['thread_states_auto']")" = ebpf ] ||
        fail "threads auto is not ebpf: $(json_get "$T/sensors.json" "d['thread_states_auto_why']")"
echo "ok: pctl sensors picks ebpf for thread states"

want="{'cpus': '0-3', 'n_cpus': 4, 'n_packages': 2, 'packages': [{'package': 0, 'cpus': '0-1'}, {'package': 1, 'cpus': '2-3'}]}"
got=$(json_get "$T/sensors.json" "d.get('topology')")
[ "$got" = "$want" ] || fail "pctl sensors --json topology: $got, not $want"
grep -qx 'topology: 4 CPUs (0-3) in 2 packages: package 0: 0-1; package 1: 2-3' "$T/sensors.txt" ||
        fail "pctl sensors: $(grep topology "$T/sensors.txt")"
echo "ok: pctl sensors shows 2 packages: 0-1 and 2-3"

"$PCTL" status --json >"$T/status.json" || fail "pctl status --json exited $?"
got=$(json_get "$T/status.json" "d.get('topology')")
[ "$got" = "$want" ] || fail "pctl status --json topology: $got, not $want"
echo "ok: pctld's status shows the same 2 packages"
