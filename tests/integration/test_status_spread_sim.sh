#!/usr/bin/env bash
# `pctl status` says where an app's CPUs lie and why it is spread, from a real pctld and pctl
# over a real socket. This machine has one package, so pctld runs the model machine
# (`--platform sim:`, the 2 x 6 Xeon of bench_random's seed 91002): an app alone whose cores
# stall on memory (4.5 bytes per instruction) is spread over both packages. The JSON gives
# "packages": [0, 1] and "spreading": "alone"; the text row has 0,1 under PKGS and the reason
# line says it is spread over packages 0,1 and why. Needs no root: the model machine moves no
# real process.
set -u
. "$TEST_LIB"
pctld_setup
trap pctld_cleanup EXIT
cp "$SRC_DIR/tests/data/spread-alone-xeon.ini" "$T/scenario.ini"
sed -i "s|^platform = .*|platform = sim:$T/scenario.ini|" "$T/pctl.conf"
printf '[policy spread]\nobjective = edp\nmatch_comm = a0\n' >"$T/policies.d/spread.conf"
pctld_start

spread_alone() {
        status_json || return 1
        [ "$(json_get "$T/status.json" "[(a['spreading'], a['packages']) for a in d['apps']]")" = \
                "[('alone', [0, 1])]" ]
}
wait_until 60 spread_alone || {
        cat "$T/status.json"
        fail "the app was never shown spread alone over packages 0 and 1"
}
json_get "$T/status.json" "d['apps'][0]['reason']" | grep -q "; spread over packages 0,1: its cores stall on memory" ||
        fail "the JSON reason does not say why it is spread: $(cat "$T/status.json")"
echo "ok: --json: packages [0, 1], spreading alone"

"$PCTL" status --socket "$T/pctl.sock" >"$T/status.txt" || fail "pctl status failed: $(cat "$T/status.txt")"
cat "$T/status.txt"
grep -q "PKGS" "$T/status.txt" || fail "no PKGS column"
# The row: name, pid, policy, cores, cpus, then the packages.
grep -Eq "^a0 +[0-9]+ spread +[0-9]+ [0-9,-]+ +0,1 " "$T/status.txt" ||
        fail "the app's row does not show packages 0,1"
grep -Eq "^ +.*; spread over packages 0,1: its cores stall on memory, and alone" "$T/status.txt" ||
        fail "the reason line does not say why it is spread"
echo "ok: text: PKGS 0,1 and the reason says it is spread over packages 0,1, alone"
pctld_stop TERM
