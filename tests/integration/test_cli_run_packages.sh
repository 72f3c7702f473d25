#!/usr/bin/env bash
# `pctl run`'s summary says the packages the command ran on, from pctld's run report: every
# configuration's where the run spanned several packages ("ran at 6 cores at 2600 MHz on
# packages 0,1"), the run's ("packages 0,1") and why it lay spread at its end, as status says
# it. On one package: the packages line alone, no word of spreading; null (a CPU pctld could
# not place): unknown; a report without them (an older pctld): nothing. --json passes them on.
# A fake pctld answers the adopt and the report on a socket of its own; needs no root.
set -u
. "$TEST_LIB"
D=$(mktemp -d /tmp/pctl-runpkg-XXXXXX)
trap 'rm -rf "$D"' EXIT
# answer REPORT: the fake accepts `pctl run`'s adopt ({"ok":true}), then its report (REPORT).
answer() { fake_pctld "$D/s" '{"ok":true}' "$1"; }
# run [--json]: pctl run -- true against the fake; its summary (stderr) in $out.
run() {
        out=$("$PCTL" run --socket "$D/s" "$@" -- true 2>&1) || fail "pctl run failed: $out"
        wait
        echo "$out"
}
WHY="spread over packages 0,1: its cores stall on memory, and alone it may have every package's memory bandwidth"
REPORT='"ok":true,"name":"true","state":"left","speedup_run":4.2,"p_run":0.98'

answer "{$REPORT,\"packages\":[0,1],\"spreading\":\"alone\",\"spread_reason\":\"$WHY\",\"configs\":[{\"cores\":12,\"freq_mhz\":2600,\"packages\":[0,1],\"s\":1},{\"cores\":3,\"freq_mhz\":2600,\"packages\":[0],\"s\":2},{\"cores\":6,\"freq_mhz\":2600,\"packages\":[0,1],\"s\":3}]}"
run
echo "$out" | grep -q "^  ran at   12 cores at 2600 MHz on packages 0,1 for 1.00 s$" || fail "first configuration: $out"
echo "$out" | grep -q "^           3 cores at 2600 MHz on package 0 for 2.00 s$" || fail "one package's configuration: $out"
echo "$out" | grep -q "^           6 cores at 2600 MHz on packages 0,1 for 3.00 s$" || fail "third configuration: $out"
echo "$out" | grep -q "^  packages 0,1$" || fail "the run's packages: $out"
echo "$out" | grep -qF "           at its end: $WHY" || fail "why it was spread: $out"
echo "ok: two packages: each configuration's, the run's, and why it was spread"

answer "{$REPORT,\"packages\":[0],\"spreading\":null,\"spread_reason\":null,\"configs\":[{\"cores\":2,\"freq_mhz\":null,\"packages\":[0],\"s\":1.5}]}"
run
echo "$out" | grep -q "^  ran at   2 cores for 1.50 s$" || fail "configuration on one package: $out"
echo "$out" | grep -q "^  packages 0$" || fail "the run's package: $out"
echo "$out" | grep -q "spread" && fail "spreading said on one package: $out"
echo "ok: one package: the packages line alone"

answer "{$REPORT,\"packages\":null,\"spreading\":null,\"spread_reason\":null,\"configs\":[{\"cores\":2,\"packages\":null,\"s\":1.5}]}"
run
echo "$out" | grep -q "^  packages unknown (a CPU it ran on has no package pctld could read)$" || fail "unknown packages: $out"
echo "ok: unknown packages are said unknown"

# An older pctld: no packages member; a foreign one: not package numbers. Nothing said.
for p in '' ',"packages":"0,1","spread_reason":"x"' ',"packages":[0,-1],"spread_reason":"x"'; do
        answer "{$REPORT$p,\"configs\":[{\"cores\":2,\"s\":1.5}]}"
        run
        echo "$out" | grep -Eq "packages|spread|\(null\)" && fail "packages said from '$p': $out"
done
echo "ok: a report without packages says nothing of them"

answer "{$REPORT,\"packages\":[0,1],\"spreading\":\"alone\",\"spread_reason\":\"$WHY\",\"configs\":[]}"
run --json
echo "$out" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])["pctld"]
assert d["packages"] == [0, 1] and d["spreading"] == "alone", d
' || fail "--json does not pass the packages on: $out"
echo "ok: --json carries packages, spreading and spread_reason"
