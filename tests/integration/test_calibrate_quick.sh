#!/usr/bin/env bash
# pctl calibrate --quick on this machine (software backend): finishes in under 3 minutes,
# writes platform.ini and validation.csv, and every programmed P is estimated within 0.05.
set -euo pipefail
source "$TEST_LIB"
cpus=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
[ "$cpus" -ge 2 ] || skip "needs 2 CPUs, the process may use $cpus"
D=$(mktemp -d /tmp/pctl-cal-XXXXXX)
trap 'rm -rf "$D"' EXIT
start=$(date +%s)
"$PCTL" calibrate --quick --cpus 0-1 --t1 1 --out "$D" --json --pbench "$PBENCH" >"$D/out.json" 2>"$D/err" ||
        { cat "$D/err"; fail "calibrate exited $?"; }
took=$(( $(date +%s) - start ))
cat "$D/err"
[ "$took" -lt 180 ] || fail "took $took s (limit 180)"
[ -s "$D/platform.ini" ] || fail "no platform.ini"
[ -s "$D/validation.csv" ] || fail "no validation.csv"
grep -q '^backend = ' "$D/platform.ini" || fail "platform.ini has no backend"
python3 - "$D/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["validation"]
ps = sorted({r["p_programmed"] for r in rows})
assert ps == [0.1, 0.4, 0.7, 0.9], ps
assert sorted({r["cores"] for r in rows}) == [1, 2]
for k in ("p_programmed", "cores", "speedup_measured", "speedup_predicted", "p_estimated"):
    assert all(k in r for r in rows), k
bad = 0
for r in d["p"]:
    print("P %.2f: estimated %.4f (error %.4f)" % (r["p_programmed"], r["p_estimated"], r["error"]))
    bad += not (r["error"] <= 0.05)
assert d["platform"]["backend"], d["platform"]
sys.exit(1 if bad else 0)
PY
echo "took $took s"
