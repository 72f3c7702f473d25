#!/bin/bash
# pctl policy check and list: every shipped file passes; a bad file gets file:line for each
# problem and exit 2; list --json parses.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d /tmp/pctl-policy-check-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

shipped=("$SRC_DIR"/etc/pctl.conf "$SRC_DIR"/etc/policies.d/*.conf)
[ -e "${shipped[1]}" ] || fail "no shipped policy files in $SRC_DIR/etc/policies.d"
for f in "${shipped[@]}"; do
        out=$("$PCTL" policy check "$f" 2>&1) || fail "shipped $f: $out"
        echo "$out"
        echo "$out" | grep -q "^$f: ok" || fail "no 'ok' line for $f: $out"
done
# Together, as the daemon loads them: no duplicate names across files.
"$PCTL" policy list --dir "$SRC_DIR/etc/policies.d" >/dev/null || fail "list of shipped set"

cat >"$tmp/bad.conf" <<'EOT'
[policy good]
objective = edp
[policy broken]
objective = fastest
min_cores = 0
max_cores = 4
min_cores = 8
junk without equals
[section nobody knows]
EOT
out=$("$PCTL" policy check "$tmp/bad.conf" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 2 ] || fail "bad file: exit $rc, expected 2"
for line in 4 5 7 8 9; do
        echo "$out" | grep -q "^$tmp/bad.conf:$line: " || fail "no problem reported at line $line"
done
echo "$out" | grep -q "bad.conf: 5 problems" || fail "problem count missing"
echo "$out" | grep -q ":7: .*min_cores: set twice (first at line 5)" || fail "repeat not traced to line 5"

cat >"$tmp/bad-pctl.conf" <<'EOT'
[daemon]
interval_ms = 1
dvfs = maybe
[power]
static_w = 20
EOT
out=$("$PCTL" policy check "$tmp/bad-pctl.conf" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 2 ] || fail "bad pctl.conf: exit $rc, expected 2"
for line in 2 3 4; do
        echo "$out" | grep -q "^$tmp/bad-pctl.conf:$line: " || fail "pctl.conf: nothing at line $line"
done

# Duplicate names across files: list refuses the set, naming both files.
mkdir "$tmp/d"
printf '[policy same]\n' >"$tmp/d/a.conf"
printf '\n[policy same]\nobjective = ppw\n' >"$tmp/d/b.conf"
out=$("$PCTL" policy list --dir "$tmp/d" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 2 ] || fail "duplicate set: exit $rc, expected 2"
echo "$out" | grep -q "^$tmp/d/b.conf:2: .*$tmp/d/a.conf:1" || fail "duplicate not named with both files"

"$PCTL" policy check "$tmp/missing.conf" >/dev/null 2>&1
[ $? = 2 ] || fail "missing file: expected exit 2"
"$PCTL" policy check >/dev/null 2>&1
[ $? = 2 ] || fail "no FILE: expected exit 2"

json=$("$PCTL" policy list --dir "$SRC_DIR/etc/policies.d" --json) || fail "list --json failed"
echo "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [p["name"] for p in d["policies"]]
assert len(names) >= 3, names
objs = {p["objective"] for p in d["policies"]}
assert {"edp", "ppw", "monitor"} <= objs, objs
for p in d["policies"]:
    assert p["file"].endswith(".conf") and p["line"] >= 1, p
    assert p["min_cores"] >= 1 and p["weight"] > 0, p
assert all(b["file"] is None for b in d["builtin"])
print("json ok:", names)
' || fail "list --json output does not parse as expected"
echo "PASS"
