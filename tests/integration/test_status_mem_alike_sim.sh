#!/usr/bin/env bash
# "Measured on another package" where operators look, from a real pctld on the model machine:
# two alike packages of the 2 x 6 Xeon, one filled by a1 (its bandwidth measured by pctld's
# probe), the other carrying a0, which moves no memory. `pctl status --json` gives the other
# package the measured figure with bandwidth_source "measured on another package", `pctl
# status` says so on its memory line, and /metrics gives no bandwidth series for it (another
# package's figure is no threshold measured there).
set -u
. "$TEST_LIB"
CLIENT="python3 $(dirname "$TEST_LIB")/metrics_client.py"
pctld_setup
trap pctld_cleanup EXIT
cp "$SRC_DIR/tests/data/alike-packages-xeon.ini" "$T/scenario.ini"
PORT=$($CLIENT free_port)
sed -i -e "s|^platform = .*|platform = sim:$T/scenario.ini|" \
        -e "/^\[daemon\]/a metrics_listen = 127.0.0.1:$PORT" "$T/pctl.conf"
printf '[policy mem]\nobjective = edp\nmatch_comm = a0\nmatch_comm = a1\n' >"$T/policies.d/mem.conf"
pctld_start

# One package measured, the other given its figure. pctld runs the model machine fast enough
# for the other package to be measured itself later (a package's figure only goes from a lower
# bound to measured there), so the text and /metrics are taken between two JSON reads that
# both show the state: what they show is that state too, however loaded the machine.
one_state() {
        json_get "$1" 'len(d["mem_packages"]) == 2 and
                sorted(p["bandwidth_source"] or "" for p in d["mem_packages"]) ==
                ["measured", "measured on another package"]' | grep -qx True
}
one_measured() {
        status_json && one_state "$T/status.json" &&
                "$PCTL" status --socket "$T/pctl.sock" >"$T/status.txt" &&
                $CLIENT get "$PORT" >"$T/m.txt" &&
                "$PCTL" status --socket "$T/pctl.sock" --json >"$T/status2.json" &&
                one_state "$T/status2.json"
}
wait_until 60 one_measured ||
        fail "no package measured with the other alike: $(json_get "$T/status.json" 'd["mem_packages"]')"
M=$(json_get "$T/status.json" '[p["package"] for p in d["mem_packages"] if p["bandwidth_source"] == "measured"][0]')
O=$((1 - M))
json_get "$T/status.json" "d['mem_packages'][$O]['bandwidth_gbps'] == d['mem_packages'][$M]['bandwidth_gbps']
        and abs(d['mem_packages'][$M]['bandwidth_gbps'] - 51.2) < 0.6" | grep -qx True ||
        fail "package $O does not read package $M's figure: $(json_get "$T/status.json" 'd["mem_packages"]')"
echo "ok: status --json: package $M measured, package $O measured on another package"

grep -E "^memory    package $O: [0-9.]+ GB/s now, bandwidth 5[01]\.[0-9] GB/s \(measured on another package\)$" \
        "$T/status.txt" || fail "package $O's memory line: $(grep '^memory' "$T/status.txt")"
grep -E "^memory    package $M: [0-9.]+ GB/s now, bandwidth 5[01]\.[0-9] GB/s \(measured\)$" \
        "$T/status.txt" || fail "package $M's memory line: $(grep '^memory' "$T/status.txt")"
echo "ok: status text"

# /metrics (scraped between the two JSON reads): a bandwidth series for the measured package only.
grep -qE "^pctl_package_memory_bandwidth_bytes_per_second\{package=\"$M\"\} " "$T/m.txt" ||
        fail "no bandwidth series of package $M: $(grep pctl_package_memory "$T/m.txt")"
grep -qE "^pctl_package_memory_bandwidth_bytes_per_second\{package=\"$O\"\} " "$T/m.txt" &&
        fail "a bandwidth series of package $O, measured on another: $(grep pctl_package_memory "$T/m.txt")"
echo "ok: /metrics: a series of package $M only"
pctld_stop TERM
