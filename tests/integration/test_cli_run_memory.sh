#!/usr/bin/env bash
# `pctl run`'s summary says what the command moved at its package's memory per instruction,
# from pctld's run report: the figure where the sensor measured the traffic and pctld told the
# app apart ("memory   4.49 bytes per instruction"), "unknown" where it measured the traffic but
# not the app's share, once why where it measures none; nothing from a report without the
# members (an older pctld), and never a made-up 0 from a null or a malformed member. A fake
# pctld answers the adopt and the report on a socket of its own; needs no root.
set -u
. "$TEST_LIB"
D=$(mktemp -d /tmp/pctl-runmem-XXXXXX)
trap 'rm -rf "$D"' EXIT
answer() { fake_pctld "$D/s" '{"ok":true}' "$1"; }
run() {
        out=$("$PCTL" run --socket "$D/s" "$@" -- true 2>&1) || fail "pctl run failed: $out"
        wait
        echo "$out"
}
REPORT='"ok":true,"name":"true","state":"left","speedup_run":4.2,"p_run":0.98'

answer "{$REPORT,\"mem_traffic\":true,\"mem_traffic_reason\":null,\"mem_bytes_per_instr\":4.4887}"
run
echo "$out" | grep -q "^  memory   4.49 bytes per instruction$" || fail "the figure: $out"
echo "ok: measured"

answer "{$REPORT,\"mem_traffic\":true,\"mem_traffic_reason\":null,\"mem_bytes_per_instr\":null}"
run
echo "$out" | grep -q "^  memory   bytes per instruction unknown " || fail "unknown: $out"
echo "$out" | grep -q "^  memory   0" && fail "a made-up 0: $out"
echo "ok: unknown"

answer "{$REPORT,\"mem_traffic\":false,\"mem_traffic_reason\":\"software: not measured (no memory-controller counter in busy time)\",\"mem_bytes_per_instr\":null}"
run
echo "$out" | grep -q "^  memory   traffic: software: not measured (no memory-controller counter in busy time)$" ||
        fail "not measured: $out"
[ "$(echo "$out" | grep -c '^  memory ')" = 1 ] || fail "one line: $out"
echo "ok: not measured, once, with why"

# Malformed members: a string for the flag, a string for the figure.
answer "{$REPORT,\"mem_traffic\":\"yes\",\"mem_bytes_per_instr\":4}"
run
echo "$out" | grep -q "^  memory " && fail "a line from a malformed flag: $out"
answer "{$REPORT,\"mem_traffic\":true,\"mem_bytes_per_instr\":\"4\"}"
run
echo "$out" | grep -q "^  memory   bytes per instruction unknown " || fail "a string figure: $out"
# An older pctld: no members, no line.
answer "{$REPORT}"
run
echo "$out" | grep -q "^  memory " && fail "a line from an older pctld: $out"
echo "ok: malformed and older replies"
