#!/usr/bin/env bash
# pctl sim run --policy: each app's speedup stack (stack_compute on the model machine's
# thread states) next to the machine's truth (stack_true), in JSON and text; the allocator's
# stack move in --log; bad delimiter keys named by file and line, exit 2.
set -u
. "$TEST_LIB"
S="$SRC_DIR/tests/scenarios"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$PCTL" sim run "$S/stack-s64-sync.ini" --policy edp --json >"$T/sync.json" ||
        fail "sim run --policy edp --json"
python3 - "$T/sync.json" <<'PY' || fail "stack JSON"
import json, sys
d = json.load(open(sys.argv[1]))
names = ("sequential", "sync", "yield", "imbalance", "runqueue", "io", "interference")
a = d["apps"][0]
for key in ("stack", "stack_true"):
    s = a[key]
    assert s is not None, (key, a)
    assert set(s) == {"cores", "threads", "speedup", "components"}, s
    assert set(s["components"]) == set(names) | {"memory", "unexplained"}, s
    # Memory: null where the estimator has no frequency sensitivity; the truth has it.
    mem = s["components"]["memory"]
    assert mem is not None or key == "stack", (key, s)
    assert all(s["components"][n] >= 0 for n in names) and (mem is None or mem >= 0), s
    total = (s["speedup"] + sum(s["components"][n] for n in names) + (mem or 0)
             + s["components"]["unexplained"])
    assert abs(total - s["cores"]) <= 1e-6 * s["cores"], (key, total, s)
# Over its last setting (the oracle's 10 cores), what the stack measures is the truth
# within 0.05 N: the lock at exactly its limit, 9 cores idle through the sequential part.
assert a["stack"]["cores"] == a["cores"] == 10, a
assert abs(a["stack"]["speedup"] - a["stack_true"]["speedup"]) <= 0.5, a
PY

# The allocator's first probe is the stack's: the lock's cost named, the busy cores tried.
"$PCTL" sim run "$S/stack-s64-sync.ini" --policy edp --log >/dev/null 2>"$T/log" ||
        fail "sim run --log"
grep -q "CPUs 0-9 (10), stack: sync [0-9.]* of 64 cores grows with the cores: trying 10 cores first" "$T/log" ||
        fail "no stack move in the log: $(grep CPUs "$T/log" | head -3)"

"$PCTL" sim run "$S/stack-s64-sync.ini" --policy edp >"$T/text" || fail "sim run text"
grep -q "^  stack at 10 cores: speedup [0-9.]*, largest [a-z]* [0-9.]* (true: speedup" "$T/text" ||
        fail "no stack line in the text report: $(cat "$T/text")"

# A memory-bound app under edp: the allocator tries lower clocks, the estimator learns how
# its time scales with the clock, and the stack splits memory out of interference (a
# number, within 0.05 N of the truth, where pctl stack has null).
printf '[machine]\npreset = server-64\nsockets = 1\ncores_per_socket = 16\nseed = 3\n[app a]\ninstructions = 2.4e12\np = 0.99\nmem_fraction = 0.6\nmem_bytes_per_instruction = 7.36\n' >"$T/mem.ini"
"$PCTL" sim run "$T/mem.ini" --policy edp --json >"$T/mem.json" || fail "sim run of a memory-bound app"
python3 - "$T/mem.json" <<'PY' || fail "memory not split out: $(cat "$T/mem.json")"
import json, sys
a = json.load(open(sys.argv[1]))["apps"][0]
st, tr = a["stack"], a["stack_true"]
mem, true_mem = st["components"]["memory"], tr["components"]["memory"]
assert mem is not None and true_mem is not None, (st, tr)
assert abs(mem - true_mem) <= 0.05 * st["cores"], (mem, true_mem)
total = st["speedup"] + sum(st["components"].values())
assert abs(total - st["cores"]) <= 1e-6 * st["cores"], total
print(f"ok: memory {mem:.3f} (true {true_mem:.3f}) at {a['cores']} cores {a['freq_mhz']} MHz")
PY

# An app without a thread model (measured rows) has no stack_true.
"$PCTL" sim run "$S/measured-grid.ini" --policy monitor --json >"$T/rows.json" ||
        fail "sim run of measured rows"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["apps"][0]; assert a["stack_true"] is None, a' "$T/rows.json" ||
        fail "a rows app has a stack_true"

# Bad delimiter values: file:line, exit 2, nothing run.
printf '[machine]\npreset = server-64\n[app a]\ninstructions = 1e9\np = 0.9\nimbalance = 0.5\nsleep = 1\n' >"$T/bad.ini"
expect_exit 2 "bad.ini:6: .*imbalance" "$PCTL" sim run "$T/bad.ini" --policy edp
expect_exit 2 "bad.ini:7: .*sleep" "$PCTL" sim run "$T/bad.ini" --policy edp
exit 0
