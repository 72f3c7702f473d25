#!/bin/bash
# pctl sample shows each package's memory traffic: GB/s in the table and mem_bytes/mem_gbps in
# --json where the backend measures it (a replayed trace), "unknown" / null where not (the
# software backend); --csv writes it back as the same trace; a bad value in a trace is refused
# with its line and exit 2, before anything is printed.
set -u
: "${PCTL:?PCTL is not set}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cols=time_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,energy_j,freq_khz,stalls,mem_bytes
printf '# pctl-sample v1 backend=perf cpus=0 packages=2 targets=0\n%s\n' "$cols" >"$tmp/mem.csv"
printf '0.500000000,0.500000000,cpu,,0,,,,5,,,,\n' >>"$tmp/mem.csv"
printf '0.500000000,0.500000000,package,0,,,,,,1.500000,,,6000000000.000\n' >>"$tmp/mem.csv"
printf '0.500000000,0.500000000,package,1,,,,,,2.000000,,,500000000.000\n' >>"$tmp/mem.csv"

"$PCTL" sample --backend replay --source "$tmp/mem.csv" --count 5 >"$tmp/out" 2>"$tmp/err" ||
        fail "replay: $(cat "$tmp/err")"
grep -q 'mem_GB/s' "$tmp/out" || fail "no mem_GB/s column: $(cat "$tmp/out")"
grep -Eq '^ +0\.500000 +0\.500000 package +0 +1\.500000 +12\.000$' "$tmp/out" ||
        fail "package 0 should show 12.000 GB/s: $(cat "$tmp/out")"
grep -Eq '^ +0\.500000 +0\.500000 package +1 +2\.000000 +1\.000$' "$tmp/out" ||
        fail "package 1 should show 1.000 GB/s: $(cat "$tmp/out")"

"$PCTL" --json sample --backend replay --source "$tmp/mem.csv" --count 5 >"$tmp/json" 2>"$tmp/err" ||
        fail "replay --json: $(cat "$tmp/err")"
python3 - "$tmp/json" <<'PY' || fail "--json: $(cat "$tmp/json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 1, rows
pk = rows[0]["packages"]
assert [p["package"] for p in pk] == [0, 1], pk
assert abs(pk[0]["mem_bytes"] - 6e9) < 1 and abs(pk[0]["mem_gbps"] - 12) < 1e-9, pk
assert abs(pk[1]["mem_gbps"] - 1) < 1e-9, pk
PY

# What it replays it writes back unchanged.
"$PCTL" sample --backend replay --source "$tmp/mem.csv" --count 5 --csv >"$tmp/re.csv" 2>"$tmp/err" ||
        fail "replay --csv: $(cat "$tmp/err")"
diff <(grep -v '^#' "$tmp/mem.csv") <(grep -v '^#' "$tmp/re.csv") || fail "the round trip changed the trace"

# The software backend measures no traffic: unknown in the table, null in JSON.
"$PCTL" sample --backend software --interval 50 --count 2 >"$tmp/sw" 2>"$tmp/err" || fail "software: $(cat "$tmp/err")"
[ "$(grep -Ec ' package +0 .* unknown$' "$tmp/sw")" -eq 2 ] || fail "software: wanted 'unknown' twice: $(cat "$tmp/sw")"
"$PCTL" --json sample --backend software --interval 50 --count 1 >"$tmp/swj" 2>"$tmp/err" || fail "software --json"
python3 -c 'import json,sys; p=json.loads(open(sys.argv[1]).readline())["packages"]; assert p and all(x["mem_bytes"] is None and x["mem_gbps"] is None for x in p), p' \
        "$tmp/swj" || fail "software --json: $(cat "$tmp/swj")"

# A negative value is refused with its line (5), exit 2, nothing on stdout.
sed 's/,500000000.000$/,-5/' "$tmp/mem.csv" >"$tmp/bad.csv"
"$PCTL" sample --backend replay --source "$tmp/bad.csv" --count 5 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "a negative mem_bytes: exit $rc, wanted 2"
grep -q 'bad.csv:5:' "$tmp/err" || fail "the message should name line 5: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "wrote output for a bad trace: $(cat "$tmp/out")"
echo "ok: $(grep ' package ' "$tmp/sw" | head -1 | tr -s ' ')"
