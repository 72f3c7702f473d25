#!/usr/bin/env bash
# `pctl run`'s summary of a run that had more configurations than pctld keeps (8): two of them
# come merged into one slot, with "merged": N and null for what they did not share. The
# summary says "several core counts" where the cores differ (not "0 cores"), leaves out a clock
# they did not share, and says how many configurations the line holds; the others read as
# before. A fake pctld answers the adopt and the report on a socket of its own; needs no root.
set -u
. "$TEST_LIB"
D=$(mktemp -d /tmp/pctl-runmerged-XXXXXX)
trap 'rm -rf "$D"' EXIT
REPORT='"ok":true,"name":"true","state":"left","speedup_run":2.1,"p_run":0.9,"packages":[0,1]'
CONFIGS='{"cores":1,"freq_mhz":2600,"packages":null,"s":4,"merged":2},{"cores":null,"freq_mhz":null,"packages":[0],"s":3,"merged":3},{"cores":6,"freq_mhz":2000,"packages":[0,1],"s":18.7}'
fake_pctld "$D/s" '{"ok":true}' "{$REPORT,\"end_config\":2,\"configs\":[$CONFIGS]}"
out=$("$PCTL" run --socket "$D/s" -- true 2>&1) || fail "pctl run failed: $out"
wait
echo "$out"
echo "$out" | grep -q "^  ran at   1 core at 2600 MHz for 4.00 s (2 configurations together)$" ||
        fail "merged slot with one core count: $out"
echo "$out" | grep -q "^           several core counts on package 0 for 3.00 s (3 configurations together)$" ||
        fail "merged slot of several core counts: $out"
echo "$out" | grep -q "^           6 cores at 2000 MHz on packages 0,1 for 18.70 s$" ||
        fail "the configuration it ended at: $out"
echo "$out" | grep -q " 0 cores" && fail "a core count invented: $out"
echo "$out" | grep -q " 1 cores" && fail "one core in the plural: $out"
echo "ok: merged configurations say what they hold"
