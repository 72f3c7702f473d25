#!/bin/bash
# pctl stack through the eBPF thread-state backend (docs/threadstate-ebpf.md): it is the one
# picked where it is built and allowed (source "ebpf"), its stack of a 2-thread spinner closes
# at N, and without CAP_BPF/CAP_PERFMON/CAP_SYS_ADMIN (root with those dropped by setpriv)
# --backend ebpf is refused with the probe's reason and exit 1, while the automatic choice
# falls back to /proc and says why. Needs root and a build with the backend.
set -u
. "${TEST_LIB:?TEST_LIB is not set}"
: "${PCTL:?}" "${PBENCH:?}"
[ "$(id -u)" -eq 0 ] || skip "the eBPF backend needs root"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
nocaps=(setpriv --inh-caps=-all --bounding-set=-bpf,-perfmon,-sys_admin)
# source FILE: the "source" of the last line (the total) of pctl stack --json.
source_of() { tail -1 "$1" >"$1.last" && json_get "$1.last" 'd["source"]'; }

sleep 60 &
live=$!
pids+=($live)

"$PCTL" --json stack "$live" --backend ebpf --interval 100 --count 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
        grep -Eq "not a thread-state backend|built without the eBPF backend" "$tmp/err" &&
                skip "built without the eBPF backend"
        grep -q "is not available" "$tmp/err" && skip "eBPF not available here: $(cat "$tmp/err")"
        fail "pctl stack --backend ebpf: exit $rc: $(cat "$tmp/err")"
fi
[ "$(source_of "$tmp/out")" = ebpf ] || fail "source is not ebpf: $(cat "$tmp/out")"
echo "ok: --backend ebpf: $(head -1 "$tmp/out")"

# The automatic choice takes it.
"$PCTL" --json stack "$live" --interval 100 --count 1 >"$tmp/out" 2>"$tmp/err" ||
        fail "pctl stack: $(cat "$tmp/err")"
grep -q "thread states from ebpf" "$tmp/err" || fail "auto did not pick ebpf: $(cat "$tmp/err")"
[ "$(source_of "$tmp/out")" = ebpf ] || fail "auto: source is not ebpf"
echo "ok: auto picks ebpf"

# Two working threads: 3 threads (main + 2) and speedup + components = N. (pbench's barriers
# between iterations make some sync when the other helpers' load delays one thread.)
"$PBENCH" --p 1 --threads 2 --t1 6 >/dev/null &
pb=$!
pids+=($pb)
sleep 0.5
"$PCTL" --json stack "$pb" --backend ebpf --interval 500 --count 2 >"$tmp/spin" 2>"$tmp/err" ||
        fail "pctl stack of pbench: $(cat "$tmp/err")"
kill "$pb" 2>/dev/null
tail -1 "$tmp/spin" >"$tmp/total"
python3 - "$tmp/total" <<'EOF' || fail "the stack of pbench --p 1 --threads 2 is wrong"
import json, sys
st = json.load(open(sys.argv[1]))
print(f"pbench --p 1 --threads 2: {st}")
assert st["source"] == "ebpf", st["source"]
assert st["threads"] >= 3, st["threads"]
assert "memory" in st["components"] and st["components"].pop("memory") is None
total = st["speedup"] + sum(st["components"].values())
assert abs(total - st["cores"]) <= 0.05, f"speedup + sum = {total}"
assert min(st["components"].values()) >= 0
assert st["speedup"] > 0
EOF
echo "ok: pbench --p 1 --threads 2 closes at N"

# Without the capabilities: refused by name, or the fallback with the reason.
"${nocaps[@]}" "$PCTL" stack "$live" --backend ebpf --interval 100 --count 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "--backend ebpf without capabilities: exit $rc, wanted 1: $(cat "$tmp/err")"
grep -q "ebpf backend (--backend) is not available: needs CAP_BPF and CAP_PERFMON" "$tmp/err" ||
        fail "--backend ebpf without capabilities: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "--backend ebpf without capabilities wrote output"
echo "ok: without capabilities: $(cat "$tmp/err")"
"${nocaps[@]}" "$PCTL" --json stack "$live" --interval 100 --count 1 >"$tmp/out" 2>"$tmp/err" ||
        fail "auto without capabilities: $(cat "$tmp/err")"
grep -q "thread states from proc.*ebpf: needs CAP_BPF" "$tmp/err" ||
        fail "auto without capabilities does not say why: $(cat "$tmp/err")"
[ "$(source_of "$tmp/out")" = proc ] || fail "fallback: source is not proc"
echo "ok: fallback: $(cat "$tmp/err")"
