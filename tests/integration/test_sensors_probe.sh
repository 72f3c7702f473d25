#!/bin/bash
# pctl sensors on this machine: every backend listed with a reason, nothing crashes or hangs,
# LIKWID's own output never reaches ours, and --json parses.
set -u
: "${PCTL:?PCTL is not set}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

start=$(date +%s%N)
timeout 30 "$PCTL" sensors >"$tmp/out" 2>"$tmp/err"
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
cat "$tmp/out"
[ $rc -eq 0 ] || fail "pctl sensors exited $rc (124 = hung); stderr: $(cat "$tmp/err")"
[ "$elapsed_ms" -lt 15000 ] || fail "pctl sensors took $elapsed_ms ms"
[ ! -s "$tmp/err" ] || fail "pctl sensors wrote to stderr (LIKWID noise?): $(cat "$tmp/err")"
# Only our tables: a title, one row per backend, a blank line and the auto line; whether each
# backend measures memory traffic; the same for the thread-state backends (pctl stack); then
# how apps would get their CPUs.
bad=$(grep -Ev '^(BACKEND +AVAILABLE +REASON|(likwid|perf|software|replay) +(yes|no) +.+|auto: .+|MEMORY +MEASURED +FROM / WHY NOT|THREADS +AVAILABLE +REASON|(ebpf|proc) +(yes|no) +.+|threads auto: .+|topology: .+|cpusets \(auto\): .+|)$' "$tmp/out")
grep -Eq '^cpusets \(auto\): (systemd|cgroup v2|cgroup v1|affinity)' "$tmp/out" || fail "no cpusets line saying the mode"
if [ ! -d /run/systemd/system ]; then
        grep -q '^cpusets (auto): .*not systemd: PID 1 is not systemd' "$tmp/out" || fail "the cpusets line does not say why not systemd"
fi
[ -z "$bad" ] || fail "unexpected output lines: $bad"
for b in likwid perf software replay; do
        grep -Eq "^$b +(yes|no) +$b: " "$tmp/out" || fail "no row with a reason for $b"
done

# The machines this runs on have no counters (VMs without a PMU); skip those checks where it does.
if [ -e /dev/cpu/0/msr ] || grep -qw arch_perfmon /proc/cpuinfo; then
        echo "note: this machine may have counters; not asserting likwid/perf unavailable"
else
        # As root LIKWID would open the MSR devices directly: the probe names the missing one
        # (without waiting for LIKWID's clock calibration); otherwise perfmon_init fails.
        if [ "$(id -u)" -eq 0 ]; then
                grep -Eq '^likwid +no +likwid: cannot access MSRs \(open /dev/cpu/0/msr: No such file or directory\): load the msr module' "$tmp/out" ||
                        fail "likwid should be unavailable, naming /dev/cpu/0/msr"
        else
                grep -Eq '^likwid +no +likwid: cannot access MSRs \(perfmon_init -?[0-9]+' "$tmp/out" ||
                        fail "likwid should be unavailable with the perfmon_init reason"
        fi
        grep -Eq '^perf +no +perf: the CPU exposes no hardware counters.*No such file or directory' \
                "$tmp/out" || fail "perf should be unavailable with the ENOENT reason"
        grep -Eq '^auto: software' "$tmp/out" || fail "auto should pick software"
fi
grep -Eq '^software +yes ' "$tmp/out" || fail "software should be available"

# Memory traffic: a second row per backend under MEMORY, with where from or why not.
mem=$(sed -n '/^MEMORY /,/^$/p' "$tmp/out")
for b in likwid perf software replay; do
        echo "$mem" | grep -Eq "^$b +(yes|no) +.+" || fail "no memory-traffic row for $b: $mem"
done
echo "$mem" | grep -Eq '^software +no +software: not measured' || fail "software cannot measure memory traffic: $mem"
if ! ls /sys/bus/event_source/devices/ | grep -Eq '^(uncore_imc|amd_umc_)'; then
        echo "$mem" | grep -Eq '^perf +no +perf: not measured: no memory-controller PMU' ||
                fail "perf should say there is no memory-controller PMU here: $mem"
fi

timeout 30 "$PCTL" sensors --json >"$tmp/json" 2>"$tmp/err" || fail "pctl sensors --json failed"
[ ! -s "$tmp/err" ] || fail "pctl sensors --json wrote to stderr: $(cat "$tmp/err")"
python3 - "$tmp/json" <<'PY' || fail "--json output is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
names = [b["name"] for b in d["backends"]]
assert names == ["likwid", "perf", "software", "replay"], names
for b in d["backends"]:
    assert isinstance(b["available"], bool) and b["reason"], b
    assert isinstance(b["mem_traffic"], bool) and b["mem_traffic_reason"], b
    assert not b["mem_traffic"] or b["available"], b
    assert b["available"] or b["errno"] > 0, b
assert not [b for b in d["backends"] if b["name"] == "software"][0]["mem_traffic"], d
assert d["auto"] in ("likwid", "perf", "software"), d["auto"]
ts = [b["name"] for b in d["thread_states"]]
assert ts[0] == "ebpf" and "proc" in ts and "sim" not in ts, ts
assert d["thread_states_auto"] in ts and d["thread_states_auto_why"], d
assert d["cpusets"]["mode"] in ("systemd", "v2", "v1", "affinity") and d["cpusets"]["reason"], d
PY
grep -Eq '^ebpf +(yes|no) +.+' "$tmp/out" || fail "no row for the ebpf thread-state backend"

# The topology: the packages the kernel gives each online CPU (physical_package_id).
online=$(cat /sys/devices/system/cpu/online)
n_pk=$(cat /sys/devices/system/cpu/cpu*/topology/physical_package_id | sort -u | wc -l)
n_cpu=$(ls -d /sys/devices/system/cpu/cpu*/topology | wc -l)
[ "$n_pk" -eq 1 ] && pk=package || pk=packages
[ "$n_cpu" -eq 1 ] && cpus=CPU || cpus=CPUs
grep -Eq "^topology: $n_cpu $cpus \($online\) in $n_pk $pk: package [0-9]+: " "$tmp/out" ||
        fail "pctl sensors: '$(grep topology "$tmp/out")', not $n_cpu $cpus ($online) in $n_pk $pk"
python3 - "$tmp/json" "$online" "$n_cpu" "$n_pk" <<'PY' || fail "--json topology is not the kernel's"
import json, sys
t = json.load(open(sys.argv[1]))["topology"]
assert t["cpus"] == sys.argv[2] and t["n_cpus"] == int(sys.argv[3]), t
assert t["n_packages"] == int(sys.argv[4]) == len(t["packages"]), t
for p in t["packages"]:
    for c in range(int(p["cpus"].split("-")[0]), int(p["cpus"].split("-")[-1].split(",")[0]) + 1):
        with open(f"/sys/devices/system/cpu/cpu{c}/topology/physical_package_id") as f:
            assert int(f.read()) == p["package"], (c, p)
PY
echo "ok: topology $(grep '^topology' "$tmp/out")"
grep -Eq '^threads auto: (ebpf|proc)' "$tmp/out" || fail "no thread-state auto line"

# A replay source that exists is probed as such.
printf '# pctl-sample v1 backend=software cpus=0 packages=1 targets=0\ntime_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,energy_j\n0.1,0.1,cpu,,0,,,,5,\n' >"$tmp/trace.csv"
"$PCTL" sensors --source "$tmp/trace.csv" | grep -Eq '^replay +yes +replay: .*1 interval,' ||
        fail "replay should be available with --source"
"$PCTL" sensors --source "$tmp/trace.csv" | sed -n '/^MEMORY /,/^$/p' | grep -Eq '^replay +no +replay: not measured' ||
        fail "a trace without mem_bytes has no memory traffic"
printf '# pctl-sample v1 backend=perf cpus=0 packages=1 targets=0\ntime_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,energy_j,freq_khz,stalls,mem_bytes\n0.1,0.1,cpu,,0,,,,5,,,,\n0.1,0.1,package,0,,,,,,,,,6400\n' >"$tmp/mem.csv"
"$PCTL" sensors --source "$tmp/mem.csv" | sed -n '/^MEMORY /,/^$/p' | grep -Eq '^replay +yes +replay: ' ||
        fail "a trace with mem_bytes has memory traffic"
echo "ok: pctl sensors in ${elapsed_ms} ms"
