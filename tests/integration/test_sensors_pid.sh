#!/bin/bash
# pctl sample --pid: per-CPU busy time of a process, checked against the process's own thread
# CPU clocks. pbench --threads 2 pins thread i to CPU i and reports each thread's CPU seconds
# (thread_busy_s); the sum over intervals of the target's busy_ns on each CPU must match:
# Σ over CPUs against Σ of threads, and the busiest CPU against the busiest thread, within 5%.
# pbench's main thread also times its kernel (~0.1 s on CPU 0) before the workers start; that
# is the process's CPU time too but not in thread_busy_s, so the run is long (--t1 5) enough
# for it to stay well inside the 5%.
set -u
: "${PCTL:?PCTL is not set}" "${PBENCH:?PBENCH is not set}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${bench:-}" ] && kill "$bench" 2>/dev/null' EXIT
fail() { echo "FAIL: $*"; exit 1; }

if [ ! -x "$PBENCH" ]; then
        echo "SKIP: pbench is not built ($PBENCH missing)"
        exit 77
fi
if [ "$(nproc)" -lt 2 ]; then
        echo "SKIP: needs 2 CPUs for pbench --threads 2 (have $(nproc))"
        exit 77
fi

# The sampler attaches while the shell waits; exec then turns that PID into pbench, so every
# pbench thread is born after the sampler took its baseline and none of its time is missed.
# The shell waits for the sampler's first row (its baseline is taken by then), not a fixed
# time a loaded machine may not start the sampler in.
(
        for _ in $(seq 300); do
                grep -q '^[0-9]' "$tmp/sample.csv" 2>/dev/null && break
                sleep 0.1
        done
        exec "$PBENCH" --p 0.5 --threads 2 --t1 5 --json >"$tmp/pbench.json"
) &
bench=$!
timeout 60 "$PCTL" sample --pid "$bench" --interval 10 --count 6000 --csv >"$tmp/sample.csv" \
        2>"$tmp/err"
rc=$?
wait "$bench" || fail "pbench failed: $(cat "$tmp/pbench.json")"
bench=
[ $rc -eq 0 ] || fail "pctl sample exited $rc: $(cat "$tmp/err")"
grep -q "process .* exited" "$tmp/err" || fail "pctl sample did not notice the exit: $(cat "$tmp/err")"

python3 - "$tmp/pbench.json" "$tmp/sample.csv" <<'PY'
import csv, json, sys
pb = json.load(open(sys.argv[1]))
threads = pb["thread_busy_s"]
per_cpu = {}
rows = csv.reader(l for l in open(sys.argv[2]) if not l.startswith("#"))
header = next(rows)
assert header[:5] == ["time_s", "interval_s", "kind", "id", "cpu"], header
for r in rows:
    if r[2] == "target" and r[8] != "":
        # Instructions and cycles are not measured by the software backend: empty, not 0.
        assert r[5] == r[6] == r[7] == "", r
        per_cpu[int(r[4])] = per_cpu.get(int(r[4]), 0) + int(r[8]) / 1e9
sum_cpu, sum_thr = sum(per_cpu.values()), sum(threads)
max_cpu, max_thr = max(per_cpu.values()), max(threads)
print(f"pbench thread_busy_s={threads} (sum {sum_thr:.3f} s, max {max_thr:.3f} s)")
print(f"pctl sample busy per CPU={ {k: round(v, 3) for k, v in per_cpu.items()} } "
      f"(sum {sum_cpu:.3f} s, max {max_cpu:.3f} s)")
err_sum = abs(sum_cpu - sum_thr) / sum_thr
err_max = abs(max_cpu - max_thr) / max_thr
print(f"error: sum {100 * err_sum:.2f}%, max {100 * err_max:.2f}% (limit 5%)")
if err_sum > 0.05 or err_max > 0.05:
    sys.exit(1)
PY
[ $? -eq 0 ] || fail "busy time does not match pbench's own"
echo "ok"
