#!/usr/bin/env bash
# What the /proc thread-state fallback costs: pctl stack (the proc backend, sampling every
# 4 ms) on a 3-thread pbench --sync 0.5 for 5 s, its CPU time (user + system, from the
# kernel's accounting of the pctl process) over its wall time. Measured, one run; fails past
# 5% of one CPU. pctld samples every 10 ms: about 40% of this, extrapolated, not measured.
set -u
. "$TEST_LIB"
: "${PCTL:?}" "${PBENCH:?}"
[ "$(id -u)" -eq 0 ] || skip "pctl stack needs root"
tmp=$(mktemp -d)
trap '[ -n "${pb:-}" ] && kill "$pb" 2>/dev/null; rm -rf "$tmp"' EXIT

"$PBENCH" --threads 2 --p 0.95 --sync 0.5 --t1 20 >/dev/null &
pb=$!
# pbench times its kernel first, on one thread: wait for its workers.
for _ in $(seq 100); do
        [ "$(ls /proc/$pb/task 2>/dev/null | wc -l)" -ge 3 ] && break
        sleep 0.1
done
[ "$(ls /proc/$pb/task 2>/dev/null | wc -l)" -ge 3 ] || fail "pbench did not start its threads"
python3 - "$PCTL" "$pb" <<'EOF' || exit 1
import os, subprocess, sys, time
pctl, pid = sys.argv[1], sys.argv[2]
t0 = time.monotonic()
before = os.times()
r = subprocess.run([pctl, "stack", pid, "--backend", "proc", "--interval", "1000", "--count", "5",
                    "--json"], capture_output=True, text=True)
wall = time.monotonic() - t0
after = os.times()
if r.returncode != 0:
    sys.exit(f"FAIL: pctl stack: {r.stderr}")
cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
share = cpu / wall
print(f"bench: proc thread-state sampler {100 * share:.2f}% of one CPU "
      f"({cpu:.3f} s CPU over {wall:.2f} s, 3 threads, 4 ms period; measured)")
print(f"bench: at pctld's 10 ms period about {100 * share * 0.4:.2f}% (extrapolated, not measured)")
if share > 0.05:
    sys.exit(f"FAIL: the sampler took {100 * share:.2f}% of a CPU, over the 5% guard")
EOF
