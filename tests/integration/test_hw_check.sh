#!/usr/bin/env bash
# scripts/hw-check.sh in its short mode: it runs to its table, and the table says plainly what
# this machine lacks, checked against the machine itself (pctl sensors for the counters and
# the memory traffic, powercap for RAPL, cpufreq's policy0): a row says MISSING exactly where the thing is absent,
# and the last row lists it. The pbench rows and the calibration ran. A bad option exits 2.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root (pctld's cpusets)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
HW="$SRC_DIR/scripts/hw-check.sh"

expect_exit 2 "unknown option '--bogus'" bash "$HW" --bogus
PCTL=$PCTL PCTLD=$PCTLD PBENCH=$PBENCH bash "$HW" --short --build "$BUILD_DIR" >"$T/out" 2>&1 ||
        fail "hw-check exited $?: $(tail -20 "$T/out")"
cat "$T/out"
"$PCTL" sensors --json >"$T/sensors.json" || fail "pctl sensors --json"
pmu=$(json_get "$T/sensors.json" 'any(b["available"] for b in d["backends"] if b["name"] in ("perf", "likwid"))')
mem=$(json_get "$T/sensors.json" 'any(b["mem_traffic"] for b in d["backends"] if b["name"] in ("perf", "likwid"))')
rapl=False
for z in /sys/class/powercap/intel-rapl:*/energy_uj; do [ -r "$z" ] && rapl=True; done
cpufreq=False
[ -r /sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq ] && cpufreq=True
python3 - "$T/out" "$pmu" "$rapl" "$cpufreq" "$mem" <<'PY' || fail "the table does not match the machine"
import sys
out, have = open(sys.argv[1]).read(), dict(zip(("counters (PMU)", "energy (RAPL)", "frequency (cpufreq)",
                                              "memory traffic"),
                                             (a == "True" for a in sys.argv[2:6])))
rows = {}
for line in out.splitlines():
    if line.startswith("| ") and line.count(" | ") >= 1 and not line.startswith("| check"):
        k, v = line[2:-2].split(" | ", 1)
        rows[k] = v
names = {"counters (PMU)": "PMU counters", "energy (RAPL)": "RAPL energy", "frequency (cpufreq)": "cpufreq",
         "memory traffic": "memory traffic"}
for k, present in have.items():
    assert k in rows, (k, rows.keys())
    missing = rows[k].startswith("MISSING: ") and len(rows[k]) > len("MISSING: ") + 10
    assert missing == (not present), (k, present, rows[k])
    assert (names[k] in rows["missing"]) == (not present), (k, rows["missing"])
    print("ok: %s: %s" % (k, "present" if present else "said missing, with why"))
for p in ("0.5", "0.9", "0.99"):
    v = rows.get("pbench P=" + p, "")
    assert v.startswith("p_run ") and " against " in v and "energy" in v, (p, v)
print("ok: pbench at P 0.5, 0.9, 0.99 under pctld, each against its programmed P")
assert rows.get("calibration", "FAILED").split()[0] != "FAILED", rows.get("calibration")
print("ok: calibration: " + rows["calibration"][:80])
PY
echo "ok: hw-check --short"
