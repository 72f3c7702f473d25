#!/usr/bin/env bash
# scripts/hw-check.sh [--short] [--build DIR]: what this machine offers pctl, checked in one
# command (docs/hw-check.md). It lists what `pctl sensors` finds (counters, energy, thread
# states), starts a private pctld with the best backend, runs pbench at P 0.5, 0.9 and 0.99
# under it (policy monitor: every core, nothing changed) and compares P̂ with pbench's
# programmed P, reports the energy each run was charged and where it came from, runs a short
# calibration (about 20 s), and ends with one table to paste into a bug report. What is missing
# is said as "MISSING: why". Root, for pctld's cpusets; without root the pbench rows say so.
# --short: a quick run for tests (pbench about 1 s each, calibration of a few seconds).
# Under 8 minutes on 16 cores. Exit 0 with the table; 2 for a bad command line; 1 when the
# binaries are not there.
set -u
SHORT=0
BUILD=${BUILD_DIR:-$(dirname "$0")/../build}
while [ $# -gt 0 ]; do
        case $1 in
        --short) SHORT=1 ;;
        --build)
                [ $# -ge 2 ] || { echo "hw-check: --build needs a directory" >&2; exit 2; }
                BUILD=$2
                shift
                ;;
        -h | --help)
                sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
                exit 0
                ;;
        *)
                echo "hw-check: unknown option '$1' (--short, --build DIR)" >&2
                exit 2
                ;;
        esac
        shift
done
PCTL=${PCTL:-$BUILD/pctl}
PCTLD=${PCTLD:-$BUILD/pctld}
PBENCH=${PBENCH:-$BUILD/pbench}
for b in "$PCTL" "$PCTLD" "$PBENCH"; do
        [ -x "$b" ] || { echo "hw-check: $b is not there: build first (make build) or give --build DIR" >&2; exit 1; }
done

NCPU=$(nproc)
if [ "$SHORT" = 1 ]; then
        PB_T1=1
        CAL_T1=0.1
else
        # pbench's one-core time: about 10 s of run at P 0.5 whatever the core count.
        PB_T1=$(awk -v n="$NCPU" 'BEGIN { print 10 / (0.5 + 0.5 / n) }')
        # The quick plan is 4 P x 4 core counts x the frequencies, each run sized by t1:
        # about 20 s in all at one frequency.
        CAL_T1=0.5
fi

T=$(mktemp -d /tmp/pctl-hwcheck-XXXXXX)
chmod 755 "$T"
PCTLD_PID=""
GROUP="pctl-hwcheck-$$"
cleanup() {
        if [ -n "$PCTLD_PID" ]; then
                kill -TERM "$PCTLD_PID" 2>/dev/null
                wait "$PCTLD_PID" 2>/dev/null
        fi
        rm -rf "$T"
}
trap cleanup EXIT
ROWS="$T/rows"
: >"$ROWS"
MISSING=()
# row CHECK RESULT: one line of the summary table.
row() { printf '%s\t%s\n' "$1" "$2" >>"$ROWS"; }
say() { echo "hw-check: $*"; }

# The machine.
model=$(awk -F: '/^model name/ { sub(/^ */, "", $2); print $2; exit }' /proc/cpuinfo)
virt=$(systemd-detect-virt 2>/dev/null || true)
[ -n "$virt" ] || { grep -qw hypervisor /proc/cpuinfo && virt="a hypervisor (unnamed)" || virt=none; }
row "machine" "$NCPU CPUs, ${model:-unknown model}, kernel $(uname -r), virtualisation: $virt"
say "machine: $NCPU CPUs, ${model:-unknown model}, kernel $(uname -r), virtualisation $virt"

# What pctl sensors finds.
"$PCTL" sensors --json >"$T/sensors.json" 2>"$T/sensors.err" || say "pctl sensors failed: $(cat "$T/sensors.err")"
python3 - "$T/sensors.json" >"$T/sensors.txt" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("counters\tMISSING: pctl sensors gave nothing")
    sys.exit()
b = {x["name"]: x for x in d.get("backends", [])}
hw = [n for n in ("likwid", "perf") if b.get(n, {}).get("available")]
if hw:
    print("counters (PMU)\t" + ", ".join(hw) + " (instructions, cycles): available")
else:
    print("counters (PMU)\tMISSING: " + "; ".join(b[n]["reason"] for n in ("likwid", "perf") if n in b))
# Each package's memory traffic (the memory controllers' counters), from perf or LIKWID.
mem = [n for n in ("likwid", "perf") if b.get(n, {}).get("mem_traffic")]
if mem:
    print("memory traffic\t" + "; ".join(b[n]["mem_traffic_reason"] for n in mem))
else:
    print("memory traffic\tMISSING: " + "; ".join(b[n].get("mem_traffic_reason", "not reported")
                                                for n in ("likwid", "perf") if n in b))
print("best backend\t" + str(d.get("auto")))
ts = [x for x in d.get("thread_states", []) if x.get("available")]
print("thread states\t" + (", ".join(x["name"] for x in ts) if ts else
                          "MISSING: " + "; ".join(x["reason"] for x in d.get("thread_states", []))))
PY
cat "$T/sensors.txt" >>"$ROWS"
grep -q "^counters (PMU)	MISSING" "$T/sensors.txt" && MISSING+=("PMU counters")
grep -q "^memory traffic	MISSING" "$T/sensors.txt" && MISSING+=("memory traffic")
grep -q "^thread states	MISSING" "$T/sensors.txt" && MISSING+=("thread states")

# Energy: RAPL through powercap (what the perf and likwid backends read).
rapl=""
for z in /sys/class/powercap/intel-rapl:*/energy_uj; do
        [ -r "$z" ] && rapl="$rapl $(dirname "$z" | xargs basename)"
done
if [ -n "$rapl" ]; then
        row "energy (RAPL)" "powercap zones:$rapl"
elif [ -d /sys/class/powercap ]; then
        row "energy (RAPL)" "MISSING: /sys/class/powercap has no readable intel-rapl zone (modprobe intel_rapl_common, or the CPU or VM does not expose RAPL)"
        MISSING+=("RAPL energy")
else
        row "energy (RAPL)" "MISSING: no /sys/class/powercap (no powercap driver; in a VM the host does not pass RAPL through)"
        MISSING+=("RAPL energy")
fi

# Frequency: cpufreq.
if [ -r /sys/devices/system/cpu/cpufreq/policy0/scaling_available_frequencies ] ||
        [ -r /sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq ]; then
        row "frequency (cpufreq)" "driver $(cat /sys/devices/system/cpu/cpufreq/policy0/scaling_driver 2>/dev/null || echo unknown), $(cat /sys/devices/system/cpu/cpufreq/policy0/cpuinfo_min_freq 2>/dev/null)-$(cat /sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq 2>/dev/null) kHz"
else
        row "frequency (cpufreq)" "MISSING: no /sys/devices/system/cpu/cpufreq/policy0 (no frequency scaling driver; in a VM the host keeps the clock)"
        MISSING+=("cpufreq")
fi

# pbench under a private pctld with the best backend.
others_busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
if [ "$(id -u)" -ne 0 ]; then
        for p in 0.5 0.9 0.99; do row "pbench P=$p" "MISSING: not root (pctld needs root for its cpusets)"; done
        MISSING+=("root (pbench under pctld)")
else
        mkdir -p "$T/policies.d"
        printf '[policy mon]\nobjective = monitor\n' >"$T/policies.d/mon.conf"
        cat >"$T/pctl.conf" <<CONF
[daemon]
interval_ms = 100
decision_ms = 500
platform = auto
default_policy = mon
socket = $T/pctl.sock
state_dir = $T/state
policies_dir = $T/policies.d
cgroup_group = $GROUP
platform_file = $T/platform.ini
history_path = $T/history.db
CONF
        "$PCTLD" --config "$T/pctl.conf" --foreground >"$T/pctld.log" 2>&1 &
        PCTLD_PID=$!
        for _ in $(seq 100); do
                [ -S "$T/pctl.sock" ] && "$PCTL" status --socket "$T/pctl.sock" >/dev/null 2>&1 && break
                sleep 0.1
        done
        if ! "$PCTL" status --socket "$T/pctl.sock" --json >"$T/status.json" 2>/dev/null; then
                row "pctld" "FAILED to start: $(tail -n 3 "$T/pctld.log" | tr '\n' ' ')"
        else
                python3 - "$T/status.json" >>"$ROWS" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("pctld\tsensor %s, power model %s, DVFS %s" % (
    d.get("sensor"), d.get("power_model") or "none",
    "yes" if d.get("dvfs") else "no (" + str(d.get("dvfs_why")).split(":")[0] + ")"))
PY
                for p in 0.5 0.9 0.99; do
                        say "pbench --p $p under pctld (t1 $PB_T1 s)"
                        b0=$(others_busy)
                        t0=$(date +%s.%N)
                        "$PCTL" run --socket "$T/pctl.sock" --json -- sh -c "exec \"\$0\" \"\$@\" >$T/pb-$p.json" \
                                "$PBENCH" --p "$p" --t1 "$PB_T1" --json 2>"$T/run-$p.err" >/dev/null
                        rc=$?
                        b1=$(others_busy)
                        t1=$(date +%s.%N)
                        tail -n 1 "$T/run-$p.err" >"$T/run-$p.json"
                        python3 - "$T/run-$p.json" "$T/pb-$p.json" "$p" "$rc" "$b0" "$b1" "$t0" "$t1" "$(getconf CLK_TCK)" "$NCPU" >>"$ROWS" <<'PY'
import json, sys
run_f, pb_f, p, rc, b0, b1, t0, t1, hz, ncpu = sys.argv[1:]
p, hz, ncpu = float(p), float(hz), int(ncpu)
try:
    s = json.load(open(run_f))
    b = json.load(open(pb_f))
except (OSError, ValueError):
    print("pbench P=%g\tFAILED (exit %s)" % (p, rc))
    sys.exit()
r = s.get("pctld") or {}
wall = s["wall_s"]
# Busy CPUs beyond the run's own CPU time: other load, which moves P̂.
others = max(0.0, ((float(b1) - float(b0)) / hz - s.get("cpu_s", 0)) / (float(t1) - float(t0)))
n = b.get("threads", ncpu)
# The whole run's P: pbench's programmed P over its timed region, its time outside (exec,
# calibration, thread start, exit) sequential.
out_s = max(0.0, wall - b["wall_s"])
t1_s = b["wall_s"] / (1 - p + p / n) + out_s if n > 1 else float("nan")
ref = n / (n - 1) * (1 - (b["wall_s"] + out_s) / t1_s) if n > 1 else float("nan")
f = lambda k: "unknown" if r.get(k) is None else "%.3f" % r[k]
err = abs(r["p_run"] - ref) if r.get("p_run") is not None and n > 1 else None
src = r.get("energy_source")
if r.get("energy_j") is None:
    energy = "energy MISSING (no RAPL and no power model)"
else:
    energy = "energy %.1f J (%s)" % (r["energy_j"], {
        "measured": "RAPL, measured"}.get(src, "%s power model, NOT measured" % src))
# Other load takes CPU time from the threads unevenly and moves P̂ (docs/testing.md): past a
# quarter of a CPU the comparison says so instead of judging.
judge = ("LOADED (others used %.2f CPUs): not judged" % others if others > 0.25 else
         "ok" if err is not None and err <= 0.05 else "OFF by more than 0.05")
print("pbench P=%g\tp_run %s against %.3f (|err| %s: %s), p_est %s, speedup from %s, %d threads, %.1f s; %s" % (
    p, f("p_run"), ref, "%.3f" % err if err is not None else "unknown", judge, f("p_est"),
    r.get("speedup_source"), n, wall, energy))
PY
                done
                grep -q "NOT measured\|energy MISSING" "$ROWS" && ! printf '%s\n' "${MISSING[@]}" | grep -q RAPL &&
                        MISSING+=("measured energy per run")
        fi
        kill -TERM "$PCTLD_PID" 2>/dev/null
        wait "$PCTLD_PID" 2>/dev/null
        PCTLD_PID=""
fi

# A short calibration (pctl calibrate --quick at the current frequency's plan).
say "calibration (quick, t1 $CAL_T1 s)"
c0=$(date +%s.%N)
# At the top frequency only, where frequencies can be set: each one more costs as much again.
CAL_FREQ=()
if [ -r /sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq ]; then
        CAL_FREQ=(--freqs "$(($(cat /sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq) / 1000))")
fi
timeout 300 "$PCTL" calibrate --quick --t1 "$CAL_T1" --repeat 1 "${CAL_FREQ[@]}" --out "$T/cal" \
        --pbench "$PBENCH" --json >"$T/cal.json" 2>"$T/cal.err"
crc=$?
c1=$(date +%s.%N)
python3 - "$T/cal.json" "$crc" "$c0" "$c1" "$T/cal.err" >>"$ROWS" <<'PY'
import json, sys
f, rc, c0, c1, errf = sys.argv[1:]
secs = float(c1) - float(c0)
try:
    d = json.load(open(f))["platform"]
except (OSError, ValueError, KeyError):
    print("calibration\tFAILED (exit %s, %.0f s): %s" % (rc, secs, open(errf).read().strip()[-300:]))
    sys.exit()
u = lambda v, fmt: "MISSING (no instruction counts)" if v is None else fmt % v
print("calibration\t%.0f s, backend %s: max |P_est - P| %.4f, speedup error %.2f %%; IPC1 %s; dI beta %s; power %s; %s" % (
    secs, d.get("backend"), d.get("max_p_error") or float("nan"), d.get("max_speedup_error_pct") or float("nan"),
    u(d.get("ipc1"), "%.3f"), u(d.get("delta_i_rate"), "%.3g /s per busy core"),
    "MISSING (no energy measured)" if d.get("power") is None else "fitted",
    d.get("freq_note") or "frequencies %s MHz" % d.get("freqs_mhz")))
PY

# The table.
echo
echo "| check | result |"
echo "|---|---|"
while IFS=$'\t' read -r k v; do
        printf '| %s | %s |\n' "$k" "$v"
done <"$ROWS"
if [ ${#MISSING[@]} -gt 0 ]; then
        printf '| missing | %s |\n' "$(IFS=,; echo "${MISSING[*]}" | sed 's/,/, /g')"
else
        echo "| missing | nothing |"
fi
exit 0
