#!/usr/bin/env bash
# `pctl status`'s memory lines from the reply as pctld gives it: a line per package (traffic
# now, the bandwidth with what it is, "≥" for a lower bound), "unknown" where a figure is null,
# each app's bytes per instruction where the traffic is measured; once "not measured (REASON)"
# where it is not; and nothing made up from a reply that lacks the members (an older pctld) or
# has them malformed. A fake pctld on a socket of its own answers one request; needs no root.
set -u
. "$TEST_LIB"
D=$(mktemp -d /tmp/pctl-stmem-XXXXXX)
trap 'rm -rf "$D"' EXIT
status() {
        fake_pctld "$D/s" "$1"
        out=$("$PCTL" status --socket "$D/s" 2>&1) || fail "pctl status failed: $out"
        wait
        echo "$out"
}

status '{"ok":true,"mem_traffic":true,"mem_traffic_reason":null,"mem_packages":[
  {"package":0,"mem_gbps":12.34,"mem_bytes_total":1e12,"bandwidth_gbps":41.2,"bandwidth_source":"lower bound"},
  {"package":1,"mem_gbps":null,"mem_bytes_total":5e11,"bandwidth_gbps":50,"bandwidth_source":"measured"},
  {"package":2,"mem_gbps":0,"mem_bytes_total":0,"bandwidth_gbps":null,"bandwidth_source":null},
  null, 5, {"mem_gbps":3}],
  "apps":[{"pid":61,"mem_bytes_per_instr":4.4887},{"pid":62,"mem_bytes_per_instr":null},{"pid":63}]}'
echo "$out" | grep -qx "memory    package 0: 12.3 GB/s now, bandwidth ≥ 41.2 GB/s (lower bound)" || fail "package 0: $out"
echo "$out" | grep -qx "memory    package 1: unknown now, bandwidth 50.0 GB/s (measured)" || fail "package 1: $out"
echo "$out" | grep -qx "memory    package 2: 0.0 GB/s now, bandwidth unknown" || fail "package 2: $out"
[ "$(echo "$out" | grep -c '^memory ')" = 3 ] || fail "a line from an element without a package: $out"
echo "$out" | grep -Eq "^ +memory: 4.49 bytes per instruction$" || fail "app 61: $out"
[ "$(echo "$out" | grep -Ec '^ +memory: bytes per instruction unknown$')" = 2 ] || fail "apps 62, 63: $out"
echo "ok: packages and apps"

status '{"ok":true,"mem_traffic":false,"mem_traffic_reason":"perf: not measured: uncore_imc_0 on CPU 0: Permission denied","mem_packages":null,"apps":[{"pid":71,"mem_bytes_per_instr":null}]}'
echo "$out" | grep -qx "memory    traffic: perf: not measured: uncore_imc_0 on CPU 0: Permission denied" || fail "not measured: $out"
[ "$(echo "$out" | grep -c 'memory')" = 1 ] || fail "more than the one line: $out"
echo "$out" | grep -q "not measured.*not measured" && fail "not measured twice: $out"
status '{"ok":true,"mem_traffic":false,"mem_traffic_reason":"no memory-controller PMU","apps":[]}'
echo "$out" | grep -qx "memory    traffic: not measured (no memory-controller PMU)" || fail "a bare reason: $out"
echo "ok: not measured, once, with why"

status '{"ok":true,"mem_traffic":false,"apps":[]}'
echo "$out" | grep -qx "memory    traffic: not measured (the sensor does not say why)" || fail "no reason: $out"
status '{"ok":true,"mem_traffic":true,"mem_packages":[],"apps":[]}'
echo "$out" | grep -qx "memory    traffic: no interval measured yet" || fail "none yet: $out"
status '{"ok":true,"mem_traffic":"yes","mem_packages":[{"package":0,"mem_gbps":1}],"apps":[{"pid":81,"mem_bytes_per_instr":2}]}'
echo "$out" | grep -q "memory" && fail "lines from a malformed flag: $out"
status '{"ok":true,"apps":[{"pid":91}]}'
echo "$out" | grep -q "memory" && fail "lines from an older pctld: $out"
echo "ok: no reason, nothing yet, malformed and older replies"
