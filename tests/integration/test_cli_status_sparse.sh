#!/usr/bin/env bash
# `pctl status` against a reply that lacks members (an older or a foreign pctld): every text
# member it prints is shown as unknown, "?" or "-", never "(null)" from a NULL through %s
# (issue 28's leftover: status_stack's source; the same held for the platform, sensor,
# cpusets, CPUs, an app's name, policy, cpus and reason). A fake pctld on a socket of its own
# answers one request; needs no root.
set -u
. "$TEST_LIB"
D=$(mktemp -d /tmp/pctl-sparse-XXXXXX)
trap 'rm -rf "$D"' EXIT
# One reply per call: the fake serves a single request and exits.
answer() { fake_pctld "$D/s" "$1"; }
answer '{"ok":true,"apps":[{"pid":42,"stack":{"cores":2,"speedup":1.5,"components":{"sync":0.7}}},{"pid":43,"stack":{"components":{}}}]}'
out=$("$PCTL" status --socket "$D/s" 2>&1) || fail "pctl status failed on a sparse reply: $out"
wait
echo "$out"
echo "$out" | grep -q "(null)" && fail "a NULL went through %s: $out"
echo "$out" | grep -q "^platform  unknown (sensor unknown: unknown)$" || fail "platform line: $out"
echo "$out" | grep -q "^cpusets   unknown, CPUs unknown; DVFS off$" || fail "cpusets line: $out"
echo "$out" | grep -q "stack: sync 0.70 of 2 cores (speedup 1.50, from unknown)" || fail "stack line: $out"
echo "$out" | grep -q "stack: no delimiter (speedup 0.00 of 0 cores, from unknown)" || fail "empty stack: $out"
echo "$out" | grep -q "^? *42 ? " || fail "app line of an app without name or policy: $out"
echo "ok: a sparse status reply prints unknown, ? and -, never (null)"

# PKGS: the packages of each app as pctld gives them; "-" where it gives none (an older
# pctld), null (unknown topology) or anything but package numbers.
answer '{"ok":true,"apps":[{"pid":51,"cpus":"0-2,6-7","packages":[0,1]},{"pid":52,"packages":null},{"pid":53,"packages":[0,"1"]},{"pid":54,"packages":"0,1"},{"pid":55,"packages":[0,-1]},{"pid":56,"packages":[1,3,4,5]},{"pid":57}]}'
out=$("$PCTL" status --socket "$D/s" 2>&1) || fail "pctl status failed: $out"
wait
echo "$out"
echo "$out" | grep -q "PKGS" || fail "no PKGS column: $out"
echo "$out" | grep -Eq "^\? +51 \? +0 0-2,6-7 +0,1 " || fail "packages [0,1]: $out"
echo "$out" | grep -Eq "^\? +56 \? +0 - +1,3-5 " || fail "packages [1,3,4,5]: $out"
for pid in 52 53 54 55 57; do
        echo "$out" | grep -Eq "^\? +$pid \? +0 - +- " || fail "pid $pid's packages are not shown unknown: $out"
done
echo "ok: PKGS shows the packages pctld gives, and - where it gives none it can show"
