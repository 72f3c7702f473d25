#!/usr/bin/env bash
# pctl extrapolate: predictions from a runs file and from recorded traces, the JSON the issue
# specifies, and every kind of bad input refused with file:line and exit 2, nothing on stdout.
set -u
. "$TEST_LIB"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Amdahl runs (T = 2 + 8/n, s): any kernel that fits them predicts 2.125 s at 64 cores.
printf '# cores time_s\n1 10\n2 6\n3 4.6666667\n4 4\n6 3.3333333\n8 3\n' >"$T/amdahl.txt"
"$PCTL" extrapolate "$T/amdahl.txt" --to 64 --json >"$T/a.json" || fail "extrapolate --json"
python3 - "$T/a.json" <<'PY' || fail "JSON of the Amdahl runs"
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"kernel", "checkpoint_error", "predictions", "best_cores_time", "best_cores_edp",
                  "knee_cores_time", "knee_cores_edp"}, d.keys()
assert d["kernel"] in ("Amdahl", "Rat22", "Rat23", "Rat33", "CubicLn", "ExpRat", "Poly25"), d["kernel"]
p = d["predictions"]
assert [r["cores"] for r in p] == list(range(1, 65))
assert all(set(r) == {"cores", "time_s", "speedup", "low", "high"} for r in p)
assert abs(p[63]["time_s"] - 2.125) < 0.01, p[63]
assert abs(p[63]["speedup"] - 10 / 2.125) < 0.05, p[63]
assert all(r["low"] <= r["time_s"] <= r["high"] for r in p)
assert d["checkpoint_error"] < 0.01, d["checkpoint_error"]
assert d["best_cores_time"] == 64, d["best_cores_time"]
assert d["best_cores_edp"] is None  # no power in a runs file
# T = 2 + 8/n: at 64 cores 2.125 s; within 5 % of it (2.231 s) from 8/n <= 0.231, n = 35.
assert d["knee_cores_time"] == 35, d["knee_cores_time"]
assert d["knee_cores_edp"] is None
PY
# The same through the global --json, and the text table.
"$PCTL" --json extrapolate "$T/amdahl.txt" --to 8 | python3 -c 'import json,sys; assert len(json.load(sys.stdin)["predictions"]) == 8' ||
        fail "pctl --json extrapolate"
out=$("$PCTL" extrapolate "$T/amdahl.txt" --to 10) || fail "text output"
echo "$out" | grep -q "^kernel: " || fail "no kernel line: $out"
echo "$out" | grep -q "^best cores for time: 10 " || fail "no best count: $out"
[ "$(echo "$out" | grep -c " measured$")" -eq 6 ] || fail "measured rows not marked: $out"

# A slowdown past the runs: T = 10/n + 1 + 0.02 n^1.5 is least at 10 cores.
python3 -c '
for n in range(1, 9): print(n, (10 + n + 0.02 * n ** 2.5) / n)' >"$T/slow.txt"
best=$("$PCTL" extrapolate "$T/slow.txt" --to 32 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["best_cores_time"])')
[ "$best" = 10 ] || fail "slowdown: best cores $best, not 10"

# SP-like runs (NPB SP's shape on a Xeon: speedup flattening as memory traffic fills the
# package; synthetic, T = 0.08 + 0.92/n + 0.004 n, real SP data is not in the tree), measured on
# 1-8 cores and predicted to 20: the predicted curve is within 5 % of its least from 11 cores
# on, so the argmin (15) is noise and the knee is what to run at.
python3 -c '
for n in range(1, 9): print(n, "%.6f" % (0.08 + 0.92 / n + 0.004 * n))' >"$T/sp.txt"
"$PCTL" extrapolate "$T/sp.txt" --to 20 --json >"$T/sp.json" || fail "extrapolate SP-like"
python3 - "$T/sp.json" <<'PY' || fail "SP-like knee: $(cat "$T/sp.json")"
import json, sys
d = json.load(open(sys.argv[1]))
p = {r["cores"]: r["time_s"] for r in d["predictions"]}
best = min(p.values())
knee = d["knee_cores_time"]
assert knee is not None and knee < d["best_cores_time"], (knee, d["best_cores_time"])
assert p[knee] <= 1.05 * best and all(p[n] > 1.05 * best for n in range(1, knee)), (knee, p)
assert 9 <= knee <= 12, knee
PY
out=$("$PCTL" extrapolate "$T/sp.txt" --to 20) || fail "SP-like text"
echo "$out" | grep -Eq "^knee for time: (9|1[0-2]) cores " || fail "no knee line: $out"
echo "ok: SP-like runs name the knee: $(echo "$out" | grep '^knee for time')"

# Stalls per core as a third column on every row.
printf '1 100 60\n2 52 33\n3 36 25.667\n4 29 23\n' >"$T/stalls.txt"
"$PCTL" extrapolate "$T/stalls.txt" --to 8 --json >/dev/null || fail "runs with stalls"

# Traces: three runs of the model machine's pbench-like app, with energy: EDP known.
for n in 1 2 4; do
        "$PCTL" sim run "$SRC_DIR/tests/scenarios/i7-p09.ini" --static cores=$n,freq=max \
                --trace "$T/trace$n.csv" >/dev/null || fail "sim run --trace at $n cores"
done
"$PCTL" extrapolate --trace 4:"$T/trace4.csv" --trace 1:"$T/trace1.csv" --trace 2:"$T/trace2.csv" \
        --to 8 --json >"$T/t.json" || fail "extrapolate --trace"
python3 - "$T/t.json" <<'PY' || fail "JSON of the traces"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["predictions"]
assert p[0]["speedup"] == 1 or abs(p[0]["speedup"] - 1) < 1e-6, p[0]
assert p[3]["speedup"] > 2.5, p[3]  # P = 0.9 on 4 cores: 3.08
assert d["best_cores_edp"] is not None and 1 <= d["best_cores_edp"] <= 8, d
assert d["knee_cores_edp"] is not None and 1 <= d["knee_cores_edp"] <= d["best_cores_edp"], d
PY

# Traces with stalled cycles (the model machine counts them for a memory-bound app): the
# stalls are fitted, and time follows through the paper's factor.
for n in 1 2 3 4; do
        "$PCTL" sim run "$SRC_DIR/tests/scenarios/startup-i7-mem.ini" --static cores=$n,freq=max \
                --trace "$T/mem$n.csv" >/dev/null || fail "sim run --trace mem at $n cores"
done
out=$("$PCTL" extrapolate --trace 1:"$T/mem1.csv" --trace 2:"$T/mem2.csv" --trace 3:"$T/mem3.csv" \
        --trace 4:"$T/mem4.csv" --to 8) || fail "extrapolate stalled-cycle traces"
echo "$out" | grep -q "fitted to stalled cycles" || fail "stalls in the traces not used: $out"

# perf stat -I -x, interval CSV as traces: 3 runs of 1 s, 0.6 s and 0.45 s.
perf_trace() { # FILE CORES SECONDS
        python3 - "$@" <<'PY'
import sys
path, cores, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with open(path, "w") as f:
    f.write("# started on Mon Nov 23 13:00:00 2026\n\n")
    t, step = 0.0, secs / 5
    for _ in range(5):
        t += step
        for c in range(cores):
            f.write(f"{t:.9f},CPU{c},{int(2e9 * step)},,cycles,1,100.00,,\n")
            f.write(f"{t:.9f},CPU{c},{int(1e9 * step)},,instructions,1,100.00,,\n")
        f.write(f"{t:.9f},CPU0,{20 * step:.3f},Joules,power/energy-pkg/,1,100.00,,\n")
PY
}
perf_trace "$T/p1.csv" 1 1.0
perf_trace "$T/p2.csv" 2 0.6
perf_trace "$T/p4.csv" 4 0.45
"$PCTL" extrapolate --trace 1:"$T/p1.csv" --trace 2:"$T/p2.csv" --trace 4:"$T/p4.csv" --to 8 --json >"$T/p.json" ||
        fail "extrapolate perf stat traces"
python3 - "$T/p.json" <<'PY' || fail "JSON of the perf stat traces"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["predictions"]
assert abs(p[0]["time_s"] - 1.0) < 0.05 and abs(p[3]["time_s"] - 0.45) < 0.02, p[:4]  # Amdahl through 3 runs
assert d["best_cores_edp"] is not None
PY

# Online: on the 64-core model machine, P = 0.9 under edp, once 64, 32 and 16 cores are
# measured the extrapolation's optimum is 43 cores (the oracle's too), on a curve so flat that
# 25 cores are within 5 % of it: the allocator takes the knee, not the argmin, so it does not
# jump past it (until 27 November it jumped to 43), and its measured search still ends near
# the oracle's count.
"$PCTL" sim run "$SRC_DIR/tests/scenarios/suite-s64-p09.ini" --policy edp --log >"$T/online.txt" 2>&1 ||
        fail "sim run suite-s64-p09"
jump=$(grep -oE "CPUs 0-[0-9]+ \(([0-9]+)\), extrapolated \([A-Za-z0-9]+, [0-9]+ points\): edp best at [0-9]+ cores" "$T/online.txt" | head -1)
if [ -n "$jump" ]; then
        n=$(echo "$jump" | sed -E 's/.*best at ([0-9]+) cores/\1/')
        [ "$n" -le 30 ] || fail "jumped to $n cores, past the knee (about 25): $jump"
fi
"$PCTL" sim run "$SRC_DIR/tests/scenarios/suite-s64-p09.ini" --policy edp --json >"$T/online.json" ||
        fail "sim run suite-s64-p09 --json"
end=$(json_get "$T/online.json" 'd["apps"][0]["cores"]')
[ "$end" -ge 35 ] && [ "$end" -le 48 ] || fail "ended at $end cores, the oracle's is 43"
echo "ok: no jump past the knee (${jump:-none}); the search ended at $end cores"

# Bad input: exit 2, file:line and the reason, nothing on stdout.
refused() {
        local want=$1 out rc
        shift
        out=$("$PCTL" "$@" 2>"$T/err")
        rc=$?
        [ $rc -eq 2 ] || fail "'$*' exited $rc, not 2"
        [ -z "$out" ] || fail "'$*' printed '$out' on stdout"
        grep -qF -- "$want" "$T/err" || fail "'$*' said '$(cat "$T/err")', not '$want'"
        echo "ok: refused: $(cat "$T/err")"
}
printf '1 10\n# two runs only\n2 6\n' >"$T/two.txt"
refused "two.txt:3: 2 runs; at least 3" extrapolate "$T/two.txt" --to 8
printf '1 10\n2 6\n4 4\n3 5\n' >"$T/down.txt"
refused "down.txt:4: core counts must increase: 3 after 4 on line 3" extrapolate "$T/down.txt" --to 8
printf '1 10\n2 6\n2 6\n4 4\n' >"$T/dup.txt"
refused "dup.txt:3: 2 cores again (duplicate of line 2)" extrapolate "$T/dup.txt" --to 8
printf '1 10\n2 0\n4 4\n' >"$T/zero.txt"
refused "zero.txt:2: time '0' is not a number of seconds > 0" extrapolate "$T/zero.txt" --to 8
printf '1 10\n2 6\n4 -4\n' >"$T/neg.txt"
refused "neg.txt:3: time '-4'" extrapolate "$T/neg.txt" --to 8
printf '1 10\n2 6 30\n4 4\n' >"$T/mixed.txt"
refused "mixed.txt:2: stalls given here but not on line 1" extrapolate "$T/mixed.txt" --to 8
printf '1 10 x\n2 6\n4 4\n' >"$T/junk.txt"
refused "junk.txt:1: stalls 'x'" extrapolate "$T/junk.txt" --to 8
refused "amdahl.txt:7: --to 4 is below the largest measured count, 8 cores" extrapolate "$T/amdahl.txt" --to 4
refused "--to N is required" extrapolate "$T/amdahl.txt"
refused "not both" extrapolate "$T/amdahl.txt" --trace 1:"$T/trace1.csv" --to 8
refused "duplicate of --trace 2:" extrapolate --trace 2:"$T/trace1.csv" --trace 2:"$T/trace2.csv" --trace 4:"$T/trace4.csv" --to 8
refused "2 traces; at least 3" extrapolate --trace 1:"$T/trace1.csv" --trace 2:"$T/trace2.csv" --to 8
printf 'not a trace\n' >"$T/junk.csv"
refused "junk.csv:1: not a pctl sample CSV" extrapolate --trace 1:"$T/junk.csv" --trace 2:"$T/trace2.csv" --trace 4:"$T/trace4.csv" --to 8
printf '0.1,CPU0,5,,cycles,1,100.00,,\n0.2,CPU0,2e20,,instructions,1,100.00,,\n' >"$T/perf.csv"
refused "perf.csv:2: column 3 (value of instructions): '2e20' is past what a 64-bit counter holds" extrapolate --trace 1:"$T/perf.csv" --trace 2:"$T/trace2.csv" --trace 4:"$T/trace4.csv" --to 8
refused "no-such-file: No such file" extrapolate "$T/no-such-file" --to 8
echo "ok: pctl extrapolate"
