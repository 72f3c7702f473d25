#!/usr/bin/env bash
# pctld computes each managed app's speedup stack (logging which thread-state backend it
# uses); pctl status shows the largest delimiter ("sync 0.70 of 2 cores") and --json adds the
# stack object per app. pbench with --sync 0.8 under the monitor policy (nothing moves it):
# sync is its largest delimiter. Needs root (cgroup cpusets, the thread states).
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets and the thread states"
pctld_setup
trap pctld_cleanup EXIT
pctld_start
S="--socket $T/pctl.sock"
grep -q "speedup stacks: thread states from " "$T/pctld.log" ||
        fail "pctld did not log its thread-state backend: $(cat "$T/pctld.log")"
echo "ok: $(grep -o "speedup stacks: thread states from [a-z]*" "$T/pctld.log")"

"$PCTL" run --policy monitor $S -- "$PBENCH" --threads 2 --p 0.95 --sync 0.8 --t1 12 \
        >"$T/run.out" 2>&1 &
RUN=$!
CLEANUP_PIDS="$RUN"
# The stack needs a window of 3 s once the app is managed; give it more.
for _ in $(seq 60); do
        sleep 0.25
        status_json 2>/dev/null || continue
        json_get "$T/status.json" 'any(a.get("stack") for a in d["apps"])' | grep -q True && break
done
sleep 2
status_json || fail "pctl status --json failed"
python3 - "$T/status.json" <<'PY' || fail "status --json: $(cat "$T/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
apps = [a for a in d["apps"] if a["name"] == "pbench"]
assert apps, "pbench is not managed"
st = apps[0]["stack"]
assert st, "no stack for pbench"
assert list(st) == ["cores", "threads", "speedup", "source", "components"], list(st)
c = st["components"]
assert list(c) == ["sequential", "sync", "yield", "imbalance", "runqueue", "io",
                   "interference", "memory", "unexplained"], list(c)
# Memory where the estimator has pbench's frequency sensitivity, null where not.
if c["memory"] is None:
    del c["memory"]
assert abs(st["speedup"] + sum(c.values()) - st["cores"]) < 0.05, st
mine = {k: v for k, v in c.items() if k not in ("runqueue", "interference", "unexplained")}
assert max(mine, key=mine.get) == "sync", st
print(f"ok: status --json stack from {st['source']}: speedup {st['speedup']:.2f}, "
      + ", ".join(f"{k} {v:.2f}" for k, v in c.items()))
PY
"$PCTL" status $S >"$T/status.txt" || fail "pctl status failed"
grep -Eq "^ +stack: [a-z]+ [0-9.]+ of [0-9.]+ cores \(speedup [0-9.]+, from [a-z]+\)" \
        "$T/status.txt" || fail "pctl status shows no stack line: $(cat "$T/status.txt")"
echo "ok: $(grep -E '^ +stack: ' "$T/status.txt" | sed 's/^ *//')"
kill_tree "$RUN"
exit 0
