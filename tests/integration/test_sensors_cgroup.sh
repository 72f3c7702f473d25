#!/bin/bash
# pctl sample --cgroup: a busy loop in a fresh cgroup (v1 cpuacct, and v2 where mounted) must
# show up as that cgroup's busy time, within 5% of the loop's own run time (schedstat), scaled
# to the share of pctl's run its intervals cover. Real cgroups: needs root and a writable
# cgroup hierarchy.
set -u
: "${PCTL:?PCTL is not set}"
tmp=$(mktemp -d)
dirs=()
spin=
cleanup() {
        [ -n "$spin" ] && kill "$spin" 2>/dev/null && wait "$spin" 2>/dev/null
        for d in "${dirs[@]}"; do rmdir "$d" 2>/dev/null; done
        rm -rf "$tmp"
}
trap cleanup EXIT
. "${TEST_LIB:?TEST_LIB is not set}"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to make cgroups"; exit 77; }
candidates=()
[ -f /sys/fs/cgroup/cpuacct/cpuacct.usage_percpu ] && candidates+=(/sys/fs/cgroup/cpuacct)
[ -f /sys/fs/cgroup/unified/cgroup.procs ] && candidates+=(/sys/fs/cgroup/unified)
[ -f /sys/fs/cgroup/cgroup.controllers ] && candidates+=(/sys/fs/cgroup)
[ ${#candidates[@]} -gt 0 ] || { echo "SKIP: no cpuacct (v1) or v2 cgroup hierarchy here"; exit 77; }

for root in "${candidates[@]}"; do
        d="$root/pctl-test-sensors-$$"
        mkdir "$d" || fail "cannot make $d"
        dirs+=("$d")
        # The loop joins the cgroup before it starts spinning.
        bash -c "echo \$\$ > '$d/cgroup.procs' && exec bash -c 'while :; do :; done'" &
        spin=$!
        wait_until 10 grep -qx "$spin" "$d/cgroup.procs" || fail "the loop did not join $d"
        before=$(cut -d' ' -f1 "/proc/$spin/schedstat")
        t0=$(date +%s%N)
        timeout 30 "$PCTL" sample --backend software --cgroup "$d" --interval 100 --count 30 \
                --csv >"$tmp/out.csv" 2>"$tmp/err" || fail "pctl sample --cgroup $d: $(cat "$tmp/err")"
        after=$(cut -d' ' -f1 "/proc/$spin/schedstat")
        t1=$(date +%s%N)
        kill "$spin"
        wait "$spin" 2>/dev/null
        spin=
        python3 - "$tmp/out.csv" "$before" "$after" "$d" "$t0" "$t1" <<'PY' || fail "cgroup busy time is off for $d"
import csv, sys
path, before, after, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
wall = (int(sys.argv[6]) - int(sys.argv[5])) / 1e9
rows = [r for r in csv.reader(l for l in open(path) if not l.startswith("#"))][1:]
target = sum(int(r[8]) for r in rows if r[2] == "target" and r[8] != "")
spans = {r[0]: float(r[1]) for r in rows}
sampled = sum(spans.values())
loop = after - before
print(f"{d}: target busy {target / 1e9:.3f} s over {len(spans)} intervals ({sampled:.3f} s); "
      f"the loop ran {loop / 1e9:.3f} s in the {wall:.3f} s pctl took (schedstat, which "
      f"includes pctl's start and exit)")
assert len(spans) == 30, len(spans)
# The loop's window is pctl's whole run, the sampled one its 30 intervals: the target may be
# below the loop by the loop's time during pctl's start and exit (long under a sanitizer or a
# loaded machine), never above it. So it is judged against the loop's time scaled to the
# sampled share of the window, with 5 % for the loop's rate varying within it.
assert target <= loop * 1.01, "more busy time than the loop ran"
assert target >= loop * min(1.0, sampled / wall) * 0.95, "less than 95% of the loop's run time"
PY
        rmdir "$d"
done
echo "ok"
