#!/bin/bash
# pctl stack: bad input is refused with a message naming it and the exit code pctl(1) gives
# (2 bad command line or PID, 1 the command ran and failed: not root, a backend that is not
# available, a process that exits mid-measurement); the forced /proc fallback works and says
# so; --json has exactly issue 12's keys; --plot writes an SVG. Needs root.
set -u
. "${TEST_LIB:?TEST_LIB is not set}"
: "${PCTL:?}" "${PBENCH:?}"
[ "$(id -u)" -eq 0 ] || skip "pctl stack needs root; the non-root refusal is checked as nobody"
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT

# expect CODE PATTERN ARGS...: pctl stack ARGS exits CODE, says PATTERN on stderr, prints
# nothing on stdout.
expect() {
        local code=$1 pattern=$2 rc
        shift 2
        timeout 30 "$PCTL" stack "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq "$code" ] || fail "pctl stack $*: exit $rc, wanted $code; stderr: $(cat "$tmp/err")"
        grep -Eq -- "$pattern" "$tmp/err" || fail "pctl stack $*: stderr lacks '$pattern': $(cat "$tmp/err")"
        [ ! -s "$tmp/out" ] || fail "pctl stack $*: wrote output: $(head -3 "$tmp/out")"
        echo "ok: pctl stack $* -> $rc: $(tail -1 "$tmp/err")"
}

true &
dead=$!
wait $dead
sleep 60 &
live=$!
pids+=($live)

expect 2 "which process\\? Give its PID"
expect 2 "PID 'abc' is not a process id" abc
expect 2 "PID '-3' is not a process id" -- -3
expect 2 "no process $dead" "$dead"
expect 2 "--interval '5' is not a number of ms from 10" "$live" --interval 5
expect 2 "--count '0' is not a count" "$live" --count 0
expect 2 "--backend 'sim' is not a thread-state backend" "$live" --backend sim
expect 2 "--plot 'out.png' is not a FILE.svg" "$live" --plot out.png
expect 2 "unknown option '--bogus'" "$live" --bogus
expect 2 "unexpected argument '7'" "$live" 7
PCTL_THREADSTATE=nope expect 2 "PCTL_THREADSTATE='nope' is not a thread-state backend" "$live" --count 1
# Without eBPF built in, asking for it is a failure to run, and says why.
if "$PCTL" stack "$live" --interval 10 --count 1 2>&1 >/dev/null | grep -q "ebpf: not built in"; then
        expect 1 "built without the eBPF backend" "$live" --backend ebpf --count 1
fi

# Not root: refused before anything is watched.
command -v setpriv >/dev/null || skip "no setpriv to run pctl stack as nobody"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$PCTL" stack "$live" --count 1 \
        >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "pctl stack as nobody: exit $rc, wanted 1: $(cat "$tmp/err")"
grep -q "needs root" "$tmp/err" || fail "pctl stack as nobody: $(cat "$tmp/err")"
echo "ok: as nobody -> 1: $(cat "$tmp/err")"

# The forced fallback: PCTL_THREADSTATE=proc, and --backend proc, say where the states come
# from; --json lines have exactly the keys issue 12 fixes, the last one the total.
"$PBENCH" --threads 2 --p 0.9 --t1 4 >/dev/null &
pb=$!
pids+=($pb)
sleep 0.3
PCTL_THREADSTATE=proc "$PCTL" stack "$pb" --interval 200 --count 3 --json >"$tmp/json" \
        2>"$tmp/err" || fail "PCTL_THREADSTATE=proc pctl stack: $(cat "$tmp/err")"
grep -q "thread states from proc (as PCTL_THREADSTATE says)" "$tmp/err" ||
        fail "forced fallback not said: $(cat "$tmp/err")"
python3 - "$tmp/json" <<'EOF' || exit 1
import json, sys
lines = open(sys.argv[1]).read().splitlines()
if len(lines) != 4:
    sys.exit(f"FAIL: {len(lines)} JSON lines, wanted 3 intervals and the total")
want = ["pid", "cores", "threads", "speedup", "speedup_estimated", "source", "components"]
comps = ["sequential", "sync", "yield", "imbalance", "runqueue", "io", "interference", "memory",
         "unexplained"]
for line in lines:
    d = json.loads(line)
    if list(d) != want or list(d["components"]) != comps:
        sys.exit(f"FAIL: keys {list(d)} / {list(d['components'])}")
    if d["source"] != "proc":
        sys.exit(f"FAIL: source {d['source']}")
    # pctl stack has no frequency sensitivity: memory stays in interference, null.
    if d["components"]["memory"] is not None:
        sys.exit(f"FAIL: memory without a frequency sensitivity: {line}")
    del d["components"]["memory"]
    if abs(d["speedup"] + sum(d["components"].values()) - d["cores"]) > 0.05:
        sys.exit(f"FAIL: does not close at {d['cores']}: {line}")
print(f"ok: --json keys and source; total {lines[-1]}")
EOF
"$PCTL" --json stack "$pb" --backend proc --interval 100 --count 1 >"$tmp/json2" 2>"$tmp/err" ||
        fail "pctl --json stack --backend proc: $(cat "$tmp/err")"
grep -q '"source": *"proc"' "$tmp/json2" || fail "pctl --json stack: $(cat "$tmp/json2")"
grep -q "as --backend says" "$tmp/err" || fail "--backend proc not said: $(cat "$tmp/err")"
echo "ok: --json before the command, --backend proc"

# --plot: an SVG with the bars.
if command -v gnuplot >/dev/null; then
        "$PCTL" stack "$pb" --interval 100 --count 2 --plot "$tmp/stack.svg" >"$tmp/out" \
                2>"$tmp/err" || fail "pctl stack --plot: $(cat "$tmp/err")"
        grep -q "<svg" "$tmp/stack.svg" || fail "--plot wrote no SVG"
        grep -q "sequential" "$tmp/stack.svg" || fail "--plot: no key in the SVG"
        grep -q "^total " "$tmp/out" || fail "pctl stack text has no total: $(cat "$tmp/out")"
        echo "ok: --plot $(wc -c <"$tmp/stack.svg") bytes of SVG"
fi
kill "$pb" 2>/dev/null
wait "$pb" 2>/dev/null

# A process that exits mid-measurement: the intervals before and their total are shown, the
# message says when, exit 1.
# About 1.7 s of wall time: long enough that a loaded machine still starts pctl stack before
# it ends (at --t1 1, 0.55 s, it might not), short against the 15 s asked for.
"$PBENCH" --threads 2 --p 0.9 --t1 3 >/dev/null &
short=$!
pids+=($short)
sleep 0.2
"$PCTL" stack "$short" --interval 300 --count 50 --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "a process that exits: exit $rc, wanted 1: $(cat "$tmp/err")"
grep -Eq "process $short exited during interval [0-9]+ of 50; the total covers the [0-9]+ before" \
        "$tmp/err" || fail "a process that exits: $(cat "$tmp/err")"
[ -s "$tmp/out" ] || fail "a process that exits: nothing measured before it did"
echo "ok: exits mid-measurement -> 1: $(tail -1 "$tmp/err"); $(wc -l <"$tmp/out") lines"
exit 0
