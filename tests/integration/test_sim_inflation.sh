#!/usr/bin/env bash
# Extra parallel work measured across whole runs (docs/estimator.md, "Extra parallel work"): on
# the model machine an app with extra_work 0.03 (3% more instructions per added thread for
# the same progress) runs under one history file at 2 cores, then at 8. The first report cannot
# know the inflation (one run); the second compares the two runs' instructions and gives it
# within 0.003 of the truth, and its p_run, corrected by it, is closer to the whole run's true P
# than before the correction. The same app without extra work reads an inflation near 0.
set -u
. "$TEST_LIB"
S="$SRC_DIR/tests/scenarios/extra-work-xeon.ini"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# One policy name, two core counts: history keys runs by policy name, as a user who edits
# their policy file keeps its history.
for n in 2 8; do
        mkdir -p "$T/p$n"
        printf '[policy pinned]\nobjective = performance\nmin_cores = %s\nmax_cores = %s\n' \
                "$n" "$n" >"$T/p$n/pinned.conf"
done
sed 's/^extra_work = .*/extra_work = 0/' "$S" >"$T/no-extra.ini"

run() { # SCENARIO CORES HISTORY OUT
        "$PCTL" sim run "$1" --policy pinned --policies-dir "$T/p$2" --history "$3" --json >"$4" ||
                fail "sim run $1 at $2 cores"
}
run "$S" 2 "$T/h.db" "$T/r2.json"
run "$S" 8 "$T/h.db" "$T/r8.json"
run "$T/no-extra.ini" 2 "$T/h0.db" "$T/n2.json"
run "$T/no-extra.ini" 8 "$T/h0.db" "$T/n8.json"

python3 - "$T" <<'PY' || fail "work inflation"
import json, sys
t = sys.argv[1]
r2, r8, n2, n8 = (json.load(open(f"{t}/{n}.json"))["apps"][0] for n in ("r2", "r8", "n2", "n8"))
assert r2["cores"] == 2 and r8["cores"] == 8, (r2["cores"], r8["cores"])
# One run: nothing to compare, unknown (null), not 0; p_run as measured.
assert r2["work_inflation"] is None and r2["p_run_uncorrected"] is None, r2
assert r2["work_inflation_true"] == 0.03
x, err, truth = r8["work_inflation"], r8["work_inflation_error"], r8["work_inflation_true"]
print(f"work inflation: measured {x:.5f} ± {err:.5f}, true {truth:.5f}")
assert abs(x - truth) <= 0.003, (x, truth)
assert 0 < err < 0.003, err
p, p0, pt = r8["p_run"], r8["p_run_uncorrected"], r8["p_run_true"]
print(f"p_run at 8 cores: corrected {p:.4f}, uncorrected {p0:.4f}, true {pt:.4f}, "
      f"programmed P {r8['p_true']:.2f}")
assert abs(p - pt) < abs(p0 - pt), (p, p0, pt)
assert abs(p - pt) <= 0.01, (p, pt)
# Without the correction p_run reads the programmed P, 0.05 above the wall-time P.
assert abs(p0 - pt) >= 0.03, (p0, pt)
# Without extra work: an inflation of 0 within the same bound, p_run unchanged.
print(f"no extra work: measured {n8['work_inflation']:.5f} ± {n8['work_inflation_error']:.5f}")
assert abs(n8["work_inflation"]) <= 0.003, n8
assert abs(n8["p_run"] - n8["p_run_true"]) <= 0.01, n8
PY

# The text form says it too.
"$PCTL" sim run "$S" --policy pinned --policies-dir "$T/p8" --history "$T/h.db" >"$T/text" ||
        fail "sim run (text)"
grep -q "whole run: p_run 0\.8[0-9]* (before the extra-work correction 0\.9" "$T/text" ||
        fail "no whole-run line: $(cat "$T/text")"
echo "ok"
