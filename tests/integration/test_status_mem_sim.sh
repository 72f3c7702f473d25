#!/usr/bin/env bash
# Memory traffic where operators look, from a real pctld on the model machine (the 2 x 6 Xeon,
# one app moving 4.5 bytes per instruction; this machine has no memory-controller counters):
# `pctl status` gives each package's traffic now and its bandwidth (measured, or "≥ ... (lower
# bound)"), and the app's bytes per instruction; --json the same fields; /metrics over HTTP has
# pctl_package_memory_bytes_total per package, a counter that grows between scrapes, with its
# HELP and TYPE, and a bandwidth series only for a package whose bandwidth is measured (and
# `promtool check metrics` passes on it, where promtool is installed); a full package (the
# i7's, 5 GB/s, an app asking 4 bytes per instruction) measured in both. Then
# the software backend, which measures no traffic: status says so once, with the probe's reason,
# and /metrics has the families without a series.
set -u
. "$TEST_LIB"
CLIENT="python3 $(dirname "$TEST_LIB")/metrics_client.py"
pctld_setup
trap pctld_cleanup EXIT
cp "$SRC_DIR/tests/data/spread-alone-xeon.ini" "$T/scenario.ini"
cp "$T/pctl.conf" "$T/pctl.conf.software"
PORT=$($CLIENT free_port)
sed -i -e "s|^platform = .*|platform = sim:$T/scenario.ini|" \
        -e "/^\[daemon\]/a metrics_listen = 127.0.0.1:$PORT" "$T/pctl.conf"
printf '[policy mem]\nobjective = edp\nmatch_comm = a0\n' >"$T/policies.d/mem.conf"
pctld_start

# Both packages measured, and a0's bytes per instruction told apart (it runs alone).
bpi_known() {
        status_json &&
                json_get "$T/status.json" 'len(d["mem_packages"]) == 2 and
                        d["apps"][0]["mem_bytes_per_instr"] is not None' | grep -qx True
}
wait_until 60 bpi_known || fail "no bytes per instruction of a0 in status: $(cat "$T/status.json")"
json_get "$T/status.json" 'd["mem_traffic"] is True and d["mem_traffic_reason"] is None' |
        grep -qx True || fail "status: mem_traffic: $(cat "$T/status.json")"
# Each package: its number, traffic now and since the start, a bandwidth labelled as what it is.
json_get "$T/status.json" 'all(p["package"] == k and p["mem_gbps"] >= 0 and
        p["mem_bytes_total"] >= 0 and (p["bandwidth_source"] is None) == (p["bandwidth_gbps"] is None)
        and p["bandwidth_source"] in (None, "measured", "measured on another package", "lower bound")
        for k, p in enumerate(d["mem_packages"]))' | grep -qx True ||
        fail "status: mem_packages: $(json_get "$T/status.json" 'd["mem_packages"]')"
BPI=$(json_get "$T/status.json" 'd["apps"][0]["mem_bytes_per_instr"]')
awk -v b="$BPI" 'BEGIN { exit !(b > 4.0 && b < 5.0) }' || fail "a0 moves 4.487 bytes per instruction, status says $BPI"
echo "ok: status --json: 2 packages, a0 at $BPI bytes per instruction"

"$PCTL" status --socket "$T/pctl.sock" >"$T/status.txt" || fail "pctl status failed"
grep -E '^memory    package 0: [0-9.]+ GB/s now, bandwidth ' "$T/status.txt" ||
        fail "no memory line of package 0: $(cat "$T/status.txt")"
grep -E '^memory    package 1: ' "$T/status.txt" >/dev/null || fail "no memory line of package 1"
# A lower bound shows as one: "≥ N GB/s (lower bound)", never as a bare figure.
if grep -q '(lower bound)' "$T/status.txt"; then
        grep -E 'bandwidth ≥ [0-9.]+ GB/s \(lower bound\)$' "$T/status.txt" >/dev/null ||
                fail "a lower bound without its ≥: $(grep 'lower bound' "$T/status.txt")"
fi
grep -E '^ +memory: [0-9.]+ bytes per instruction$' "$T/status.txt" ||
        fail "no bytes per instruction of a0: $(cat "$T/status.txt")"
grep -q 'not measured' "$T/status.txt" && fail "the model machine measures the traffic"
echo "ok: status text"

# /metrics: the counter per package, in bytes, growing; HELP and TYPE.
$CLIENT get "$PORT" >"$T/m1.txt" || fail "scrape failed"
grep -qx '# TYPE pctl_package_memory_bytes_total counter' "$T/m1.txt" || fail "no TYPE of the counter"
grep -q '^# HELP pctl_package_memory_bytes_total ' "$T/m1.txt" || fail "no HELP of the counter"
grep -qx '# TYPE pctl_package_memory_bandwidth_bytes_per_second gauge' "$T/m1.txt" ||
        fail "no TYPE of the bandwidth"
grep -q '^# HELP pctl_package_memory_bandwidth_bytes_per_second ' "$T/m1.txt" || fail "no HELP of the bandwidth"
total0() { sed -n 's/^pctl_package_memory_bytes_total{package="0"} \([0-9.e+]*\)$/\1/p' "$1"; }
B1=$(total0 "$T/m1.txt")
[ -n "$B1" ] || fail "no counter of package 0: $(grep pctl_package_memory "$T/m1.txt")"
grep -qE '^pctl_package_memory_bytes_total\{package="1"\} [0-9.e+]+$' "$T/m1.txt" ||
        fail "no counter of package 1"
grown() {
        $CLIENT get "$PORT" >"$T/m2.txt" &&
                awk -v a="$B1" -v b="$(total0 "$T/m2.txt")" 'BEGIN { exit !(b > a) }'
}
wait_until 30 grown || fail "the counter of package 0 did not grow from $B1"
echo "ok: /metrics: pctl_package_memory_bytes_total{package=\"0\"} $B1 then $(total0 "$T/m2.txt")"
# Prometheus's own linter on what pctld serves with the memory series in it (its names, units,
# a counter's _total).
if command -v promtool >/dev/null; then
        promtool check metrics <"$T/m2.txt" >"$T/promtool.out" 2>&1 ||
                fail "promtool check metrics: $(cat "$T/promtool.out")"
        echo "ok: promtool check metrics"
fi
# A bandwidth series only where status says it is measured there, with the same figure.
status_json
for k in 0 1; do
        src=$(json_get "$T/status.json" "d['mem_packages'][$k]['bandwidth_source']")
        line=$(grep "^pctl_package_memory_bandwidth_bytes_per_second{package=\"$k\"} " "$T/m2.txt")
        if [ "$src" = measured ]; then
                [ -n "$line" ] || fail "package $k measured in status, no series"
        else
                [ -z "$line" ] || fail "package $k's bandwidth is '$src', yet /metrics gives $line"
        fi
        echo "ok: package $k: bandwidth '$src', series '${line:-none}'"
done
pctld_stop TERM

# A full package: a0 asks 4 bytes per instruction of a 5 GB/s package while the allocator
# moves it; status calls the bandwidth measured, and /metrics gives it in bytes per second.
printf '[machine]\npreset = i7-4820k\nmem_bandwidth_gbs = 5\n\n[app a0]\ninstructions = 1e17\np = 1\nipc = 1\nmem_bytes_per_instruction = 4\n' >"$T/scenario.ini"
rm -f "$T/pctl.sock"
pctld_start
measured() { $CLIENT get "$PORT" >"$T/m4.txt" && grep -q '^pctl_package_memory_bandwidth_bytes_per_second{package="0"} ' "$T/m4.txt"; }
wait_until 60 measured || fail "no measured bandwidth of the full package: $(grep pctl_package_memory "$T/m4.txt")"
BW=$(sed -n 's/^pctl_package_memory_bandwidth_bytes_per_second{package="0"} //p' "$T/m4.txt")
awk -v b="$BW" 'BEGIN { exit !(b > 4.95e9 && b < 5.05e9) }' || fail "the 5 GB/s package measured at $BW bytes/s"
"$PCTL" status --socket "$T/pctl.sock" >"$T/status.txt"
grep -E '^memory    package 0: [0-9.]+ GB/s now, bandwidth 5\.0 GB/s \(measured\)$' "$T/status.txt" ||
        fail "status of the full package: $(grep memory "$T/status.txt")"
echo "ok: full package: /metrics $BW bytes/s, status measured"
pctld_stop TERM

# The software backend measures no traffic: once, with why; nothing per package or app.
require_cpusets
PORT=$($CLIENT free_port)
sed -e "/^\[daemon\]/a metrics_listen = 127.0.0.1:$PORT" "$T/pctl.conf.software" >"$T/pctl.conf"
rm -f "$T/pctl.sock"
pctld_start
status_json
json_get "$T/status.json" 'd["mem_traffic"] is False and d["mem_packages"] is None and
        isinstance(d["mem_traffic_reason"], str) and d["mem_traffic_reason"] != ""' | grep -qx True ||
        fail "software: $(cat "$T/status.json")"
"$PCTL" status --socket "$T/pctl.sock" >"$T/status.txt"
[ "$(grep -c '^memory ' "$T/status.txt")" = 1 ] || fail "software: $(cat "$T/status.txt")"
grep -E '^memory    traffic: software: not measured \(.+\)$' "$T/status.txt" || fail "software: $(cat "$T/status.txt")"
$CLIENT get "$PORT" >"$T/m3.txt" || fail "scrape failed"
grep -q '^pctl_package_memory_' "$T/m3.txt" && fail "software: a memory series: $(grep '^pctl_package_memory_' "$T/m3.txt")"
grep -qx '# TYPE pctl_package_memory_bytes_total counter' "$T/m3.txt" || fail "software: no family"
echo "ok: software backend: not measured, no series"
pctld_stop TERM
