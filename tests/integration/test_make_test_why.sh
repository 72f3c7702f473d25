#!/usr/bin/env bash
# make test's summary says what failed and why after its table (scripts/test.sh,
# docs/testing.md): a CI that keeps only the end of the output must still name the failing
# test, its own last words, and a failing step's stderr (the fuzz step's crashing input). A
# build dir of this test's own holds one label with a failing and a passing test, and a fake
# fuzz step fails with a line on stderr.
set -u
. "$TEST_LIB"
command -v ctest >/dev/null || skip "ctest is not installed"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/build" "$dir/bin"
cat >"$dir/build/CTestTestfile.cmake" <<'EOF'
add_test(good_case "/bin/sh" "-c" "echo fine")
set_tests_properties(good_case PROPERTIES LABELS "unit")
add_test(bad_case "/bin/sh" "-c" "echo 'the reason it failed: 41 != 42'; exit 1")
set_tests_properties(bad_case PROPERTIES LABELS "unit")
EOF
# A fuzz step that fails as scripts/fuzz.sh does: a line on stdout, the input on stderr.
cat >"$dir/fuzz.sh" <<'EOF'
echo "fuzz: demo: 10 exec/s, corpus 1 files, 1 crashes"
echo "fuzz: artifacts/demo/crash-1, base64: YWJjAAE=" >&2
exit 1
EOF
# scripts/test.sh runs "$src/scripts/fuzz.sh": a copy of it beside a fake fuzz.sh.
mkdir -p "$dir/src/scripts"
cp "$SRC_DIR/scripts/test.sh" "$dir/src/scripts/test.sh"
cp "$dir/fuzz.sh" "$dir/src/scripts/fuzz.sh"

bash "$dir/src/scripts/test.sh" "$dir/build" unit fuzz >"$dir/out" 2>&1
rc=$?
[ $rc -ne 0 ] || fail "scripts/test.sh exited 0 with a failing test"
# Everything after the table: its header line is "label tests passed ...".
awk 'f; /^label +tests +passed/ { f = 1 }' "$dir/out" >"$dir/tail"
grep -qE '^unit +2 +1 +1 ' "$dir/tail" || { cat "$dir/out"; fail "no table row: unit 2 tests, 1 passed, 1 failed"; }
grep -qE '^fuzz +1 +0 +1 ' "$dir/tail" || { cat "$dir/out"; fail "no table row: fuzz failed"; }
grep -q '^== why unit failed' "$dir/tail" || { cat "$dir/out"; fail "no 'why unit failed' after the table"; }
grep -q '^-- bad_case:' "$dir/tail" || { cat "$dir/out"; fail "the failing test is not named after the table"; }
grep -q 'the reason it failed: 41 != 42' "$dir/tail" || { cat "$dir/out"; fail "the failing test's own line is not after the table"; }
grep -q 'good_case' "$dir/tail" && { cat "$dir/out"; fail "the passing test is named after the table"; }
grep -q '^== why fuzz failed' "$dir/tail" || { cat "$dir/out"; fail "no 'why fuzz failed' after the table"; }
grep -q 'base64: YWJjAAE=' "$dir/tail" || { cat "$dir/out"; fail "the fuzz step's stderr is not after the table"; }

# All green: nothing after the table.
cat >"$dir/build/CTestTestfile.cmake" <<'EOF'
add_test(good_case "/bin/sh" "-c" "echo fine")
set_tests_properties(good_case PROPERTIES LABELS "unit")
EOF
bash "$dir/src/scripts/test.sh" "$dir/build" unit >"$dir/out" 2>&1 || { cat "$dir/out"; fail "scripts/test.sh failed with every test passing"; }
grep -q '^== why' "$dir/out" && { cat "$dir/out"; fail "a 'why' section with every test passing"; }
echo "ok: after its table, make test names each failing test and step with its last lines"
