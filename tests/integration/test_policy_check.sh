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

out=$("$PCTL" policy check "$tmp/missing.conf" 2>&1)
[ $? = 2 ] || fail "missing file: expected exit 2"
echo "$out" | grep -q "^$tmp/missing.conf: cannot read: No such file or directory" || fail "missing file: $out"
out=$("$PCTL" policy check 2>&1)
[ $? = 2 ] || fail "no FILE: expected exit 2"
echo "$out" | grep -q "a FILE is required" || fail "no FILE: $out"

# What is not a configuration text is refused at once with the reason, exit 2: a device that
# never ends, a directory, a FIFO, a file over 1 MiB, a NUL byte (with its line). Bytes from
# the file reach the message escaped.
check_refuses() { # PATTERN FILE
        local out rc
        out=$(timeout 10 "$PCTL" policy check "$2" 2>&1)
        rc=$?
        [ "$rc" = 2 ] || fail "policy check $2: exit $rc, expected 2: $out"
        echo "$out" | grep -q -- "$1" || fail "policy check $2: '$out' does not say '$1'"
        echo "ok: $out"
}
check_refuses "^/dev/zero: is not a regular file" /dev/zero
check_refuses "^$tmp: is a directory, not a file" "$tmp"
mkfifo "$tmp/fifo.conf"
check_refuses "is not a regular file" "$tmp/fifo.conf"
head -c 1100000 /dev/zero | tr '\0' '#' >"$tmp/big.conf"
check_refuses "larger than 1 MiB" "$tmp/big.conf"
printf '[policy n]\nobjective = edp\n# a\0b\n' >"$tmp/nul.conf"
check_refuses "^$tmp/nul.conf:3: holds a NUL byte" "$tmp/nul.conf"
printf '[policy e]\nobjective = e\033[2Jdp\377\n' >"$tmp/esc.conf"
check_refuses "objective: 'e\\\\x1b\[2Jdp\\\\xff' is not one of" "$tmp/esc.conf"
"$PCTL" policy check "$tmp/esc.conf" 2>&1 | grep -q "$(printf '\033')" && fail "an escape byte reached the terminal"

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
