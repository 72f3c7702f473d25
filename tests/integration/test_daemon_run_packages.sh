#!/usr/bin/env bash
# `pctl run`'s report from a real pctld carries the packages the command ran on, as the CPUs
# it held lie in this machine's topology (sysfs): every configuration's and the run's, in
# --json and as a "packages" line; this machine has one package, so not a word of spreading.
# The packages expected are read here from /sys, apart from pctld.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
pctld_setup
trap pctld_cleanup EXIT
printf '[policy mon]\nobjective = monitor\n' >"$T/policies.d/mon.conf"
sed -i 's/^\[daemon\]/[daemon]\ndefault_policy = mon/' "$T/pctl.conf"
# The packages of the online CPUs, as pctld's reports write them: [0] on this VM.
want=$(python3 - <<'PY'
import glob, os
pk = set()
for d in glob.glob("/sys/devices/system/cpu/cpu[0-9]*"):
    online = os.path.join(d, "online")
    if os.path.exists(online) and open(online).read().strip() != "1":
        continue
    try:
        pk.add(int(open(os.path.join(d, "topology/physical_package_id")).read()))
    except (OSError, ValueError):
        pk.add(-1)
print("null" if -1 in pk else "[" + ",".join(map(str, sorted(pk))) + "]")
PY
)
[ "$want" = "[0]" ] || skip "this test expects one package 0 (sysfs gives $want)"
pctld_start
# Long enough for a few of pctld's 100 ms samples: the configurations come from them.
"$PCTL" run --socket "$T/pctl.sock" --json -- "$PBENCH" --p 0.5 --threads 2 --t1 0.6 \
        >/dev/null 2>"$T/err" || fail "pctl run failed: $(cat "$T/err")"
tail -1 "$T/err" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())["pctld"]
assert d is not None, "no report"
assert d["packages"] == [0], ("run", d["packages"])
assert d["configs"], "no configuration"
for c in d["configs"]:
    assert c["packages"] == [0], ("configuration", c)
assert d["spreading"] is None and d["spread_reason"] is None, d
' || fail "the run report's packages: $(tail -1 "$T/err")"
echo "ok: --json: packages [0], each configuration on [0], no spreading"

"$PCTL" run --socket "$T/pctl.sock" -- "$PBENCH" --p 0.5 --threads 2 --t1 0.6 \
        >/dev/null 2>"$T/err" || fail "pctl run failed: $(cat "$T/err")"
cat "$T/err"
grep -q "^  packages 0$" "$T/err" || fail "no packages line: $(cat "$T/err")"
grep -q "on package" "$T/err" && fail "a configuration names its package on one package"
grep -q "spread" "$T/err" && fail "spreading said on one package"
echo "ok: text: 'packages 0', no word of spreading"
pctld_stop TERM
