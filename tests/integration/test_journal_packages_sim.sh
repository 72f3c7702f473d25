#!/usr/bin/env bash
# What a real pctld sends the journal about a move, read at the journal's own socket: beside
# PCTL_APP=, PCTL_PID= and PCTL_POLICY=, PCTL_PACKAGES= (the packages the app's CPUs lie on
# after the move, as the run report's `packages`: "0,1") and, where the allocator spread it,
# PCTL_SPREADING= (status's word, "alone"), so that `journalctl PCTL_PACKAGES=0,1` selects the
# moves onto both packages. This machine has one package, so pctld runs the model machine
# (the 2 x 6 Xeon of bench_random's seed 91002, as test_spread_reports_sim does), and the
# journal is a stand-in (journal_receiver.py) bound where journald's socket would be, in a
# mount namespace of pctld's own: the machine's /run stays as it is. Root: the namespace.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for a mount namespace"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
[ -d /run/systemd ] || skip "no /run/systemd to lay a private journal socket over"
RECV="$(dirname "$TEST_LIB")/journal_receiver.py"
pctld_setup
trap pctld_cleanup EXIT
cp "$SRC_DIR/tests/data/spread-alone-xeon.ini" "$T/scenario.ini"
sed -i -e "s|^platform = .*|platform = sim:$T/scenario.ini|" "$T/pctl.conf"
printf '[policy spread]\nobjective = edp\nmatch_comm = a0\n' >"$T/policies.d/spread.conf"

# pctld logs to the journal when started by systemd (JOURNAL_STREAM set, no --foreground).
unshare -m --propagation private sh -c '
        mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/journal || exit 99
        python3 "$1" /run/systemd/journal/socket "$2" $$ &
        for _ in $(seq 50); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
        exec env JOURNAL_STREAM=0:0 "$3" --config "$4"' \
        sh "$RECV" "$T/journal.jsonl" "$PCTLD" "$T/pctl.conf" >>"$T/pctld.log" 2>&1 &
PCTLD_PID=$!
for _ in $(seq 100); do
        [ -S "$T/pctl.sock" ] && "$PCTL" status --socket "$T/pctl.sock" >/dev/null 2>&1 && break
        kill -0 "$PCTLD_PID" 2>/dev/null || { cat "$T/pctld.log"; fail "pctld died at start"; }
        sleep 0.1
done
[ -s "$T/journal.jsonl" ] || { cat "$T/pctld.log"; fail "nothing reached the journal socket"; }

WHY="spread over packages 0,1: its cores stall on memory, and alone it may have every package's memory bandwidth"
spread_sent() {
        python3 - "$T/journal.jsonl" "$WHY" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("PCTL_APP") == "a0" and e.get("MESSAGE", "").endswith("; " + sys.argv[2]):
        sys.exit(0)
sys.exit(1)
PY
}
wait_until 60 spread_sent || {
        cat "$T/journal.jsonl" "$T/pctld.log"
        fail "no move of a0 reached the journal as a spread"
}
pctld_stop TERM

# Every move has PCTL_PACKAGES, and it is the packages of the CPUs its message names (0-5:
# package 0, 6-11: package 1); PCTL_SPREADING exactly where the message ends with why.
python3 - "$T/journal.jsonl" "$WHY" <<'PY' || fail "journal fields: $(grep CPUs "$T/journal.jsonl" | head -5)"
import json, re, sys
moves = spread = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    m = re.match(r"a0 \(pid \d+\): CPUs ([0-9,-]+) \(\d+\), ", e.get("MESSAGE", ""))
    if not m:
        continue
    moves += 1
    assert e["PCTL_APP"] == "a0" and e["PCTL_POLICY"] == "spread" and e["PCTL_PID"], e
    assert e["PRIORITY"] == "6", e
    cpus = set()
    for part in m.group(1).split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    pkgs = ",".join(str(p) for p in sorted({c // 6 for c in cpus}))
    assert e.get("PCTL_PACKAGES") == pkgs, (pkgs, e)
    if e["MESSAGE"].endswith("; " + sys.argv[2]):
        spread += 1
        assert e.get("PCTL_SPREADING") == "alone", e
    else:
        assert "PCTL_SPREADING" not in e, e
assert moves >= 2 and spread >= 1, (moves, spread)
print(f"ok: {moves} moves in the journal with PCTL_PACKAGES, {spread} with PCTL_SPREADING=alone")
PY
