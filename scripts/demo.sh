#!/usr/bin/env bash
# The main job of `make run`: pctld in the foreground on this machine with the shipped
# configuration, pbench at P = 0.2 and P = 0.95 launched under it with `pctl run`, `pctl
# status` every second until they finish, then a summary; pctld then gives everything back.
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
pctl="$build/pctl"
pctld="$build/pctld"
pbench="$build/pbench"

if [ "$(id -u)" -ne 0 ]; then
        echo "make run: pctld changes cpusets and needs root; run 'sudo make run'" >&2
        exit 1
fi
work=$(mktemp -d /tmp/pctl-demo-XXXXXX)
chmod 755 "$work"
pctld_pid=
cleanup() {
        [ -n "$pctld_pid" ] && kill -TERM "$pctld_pid" 2>/dev/null && wait "$pctld_pid" 2>/dev/null
        rm -rf "$work"
}
trap cleanup EXIT

# The shipped configuration, with this demo's socket and state in a scratch directory. Its
# policies directory is empty: the shipped examples match processes by name, and a demo must
# not take over someone else's pbench. This VM has no RAPL and no calibration, so the demo
# declares a power model (20 W + 10 W per core); every figure derived from it is shown as
# "declared".
{
        cat "$src/etc/pctl.conf"
        cat <<CONF

[daemon]
socket = $work/pctl.sock
state_dir = $work/state
history_path = $work/history.db
policies_dir = $work/policies.d
cgroup_group = pctl-demo

[power]
static_w = 20
core_w = 10
CONF
} >"$work/pctl.conf"
mkdir "$work/policies.d"
"$pctl" policy check "$work/pctl.conf" "$src"/etc/policies.d/*.conf >/dev/null

echo "== pctld --foreground"
"$pctld" --config "$work/pctl.conf" --foreground >"$work/pctld.log" 2>&1 &
pctld_pid=$!
for _ in $(seq 50); do
        "$pctl" status --socket "$work/pctl.sock" >/dev/null 2>&1 && break
        sleep 0.1
done
sed 's/^/   /' "$work/pctld.log"
"$pctl" status --socket "$work/pctl.sock" | head -n 3

start=$(date +%s%N)
# One after the other, so each has both CPUs to be measured on: P = 0.2 should end on one CPU,
# P = 0.95 on two (what EDP predicts for the declared model).
for p in 0.2 0.95; do
        "$pctl" run --socket "$work/pctl.sock" -- "$pbench" --p "$p" --threads 2 --t1 5 --json \
                >"$work/p$p.json" &
        run=$!
        while kill -0 "$run" 2>/dev/null; do
                sleep 1
                echo "== pctl status ($(( ($(date +%s%N) - start) / 1000000000 )) s)"
                "$pctl" status --socket "$work/pctl.sock" | tail -n +4 || true
        done
        wait "$run"
done
wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
"$pctl" status --socket "$work/pctl.sock" --json >"$work/status.json"

echo
echo "== summary"
python3 - "$work" "$wall_ms" <<'PY'
import json, sys
work, wall = sys.argv[1], float(sys.argv[2]) / 1000
st = json.load(open(f"{work}/status.json"))
print(f"wall time        {wall:.1f} s for both runs")
for name in ("p0.2", "p0.95"):
    d = json.load(open(f"{work}/{name}.json"))
    print(f"pbench P={d['p']:<5} {d['wall_s']:.2f} s wall, CPU-time speedup {d['busy_speedup']:.3f}")
if st.get("energy_source"):
    print(f"energy           {st['energy_j']:.1f} J ({st['energy_source']})")
else:
    print("energy           unknown (no RAPL, no calibrated or declared power model)")
print(f"decisions        {st['decisions']}, cpuset changes {st['changes']}")
PY
echo
echo "== what pctld decided"
grep -E "managing|CPUs|released" "$work/pctld.log" | sed 's/^/   /'
kill -TERM "$pctld_pid"
wait "$pctld_pid" || { echo "pctld did not stop cleanly" >&2; exit 1; }
pctld_pid=
if [ -d /sys/fs/cgroup/cpuset/pctl-demo ]; then
        echo "pctld left /sys/fs/cgroup/cpuset/pctl-demo behind" >&2
        exit 1
fi
echo "pctld stopped and restored everything (no cpuset left behind)"
