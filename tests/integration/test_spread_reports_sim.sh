#!/usr/bin/env bash
# Where pctld reports an app besides `pctl status`, it says the packages its CPUs lie on, from a
# real pctld: its log line of a move that leaves the app spread over packages ends with why (the
# sentence status's reason ends with), and /metrics serves pctl_app_packages (the number of
# packages). This machine has one package, so pctld runs the model machine (`--platform sim:`,
# the 2 x 6 Xeon of bench_random's seed 91002, as test_status_spread_sim does): an app alone
# whose cores stall on memory is spread over both. Needs no root: the model machine moves no
# real process.
set -u
. "$TEST_LIB"
CLIENT="python3 $(dirname "$TEST_LIB")/metrics_client.py"
pctld_setup
trap pctld_cleanup EXIT
cp "$SRC_DIR/tests/data/spread-alone-xeon.ini" "$T/scenario.ini"
PORT=$($CLIENT free_port)
sed -i -e "s|^platform = .*|platform = sim:$T/scenario.ini|" \
        -e "/^\[daemon\]/a metrics_listen = 127.0.0.1:$PORT" "$T/pctl.conf"
printf '[policy spread]\nobjective = edp\nmatch_comm = a0\n' >"$T/policies.d/spread.conf"
pctld_start

WHY="spread over packages 0,1: its cores stall on memory, and alone it may have every package's memory bandwidth"
# The move that spreads it: "a0 (pid 100000): CPUs 0-2,6-8 (6), <allocator's reason>; <why>".
spread_logged() { grep -E "a0 \(pid [0-9]+\): CPUs [0-9,-]+ \([0-9]+\), .*; $WHY$" "$T/pctld.log" >/dev/null; }
wait_until 60 spread_logged || {
        cat "$T/pctld.log"
        fail "no move of a0 was logged as a spread"
}
grep -E "a0 \(pid [0-9]+\): CPUs " "$T/pctld.log" | head -3
# Every move that says so leaves it on CPUs of both packages (0-5 and 6-11).
grep -E "a0 \(pid [0-9]+\): CPUs .*spread over" "$T/pctld.log" |
        sed -E 's/.*: CPUs ([0-9,-]+) .*/\1/' | while read -r cpus; do
        python3 - "$cpus" <<'PY' || fail "a move to CPUs $cpus was logged as a spread"
import sys
cpus = set()
for part in sys.argv[1].split(","):
    lo, _, hi = part.partition("-")
    cpus.update(range(int(lo), int(hi or lo) + 1))
sys.exit(0 if {c >= 6 for c in cpus} == {False, True} else 1)
PY
done
echo "ok: the move that spreads a0 says why in pctld's log"

packages_2() { $CLIENT get "$PORT" | grep -Eq '^pctl_app_packages\{app="a0",pid="[0-9]+",policy="spread"\} 2$'; }
wait_until 30 packages_2 || {
        $CLIENT get "$PORT" | grep -E "pctl_app_(packages|cores)"
        fail "/metrics does not give a0 on 2 packages"
}
$CLIENT get "$PORT" | grep -E "^# (HELP|TYPE) pctl_app_packages"
echo "ok: /metrics: pctl_app_packages 2"
pctld_stop TERM
