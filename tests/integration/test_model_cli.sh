#!/usr/bin/env bash
# pctl model on the command line: bare numbers with 4 decimals, the paper's values, domain
# errors refused with the reason and exit 2, a superlinear speedup warned about, the table.
set -u
. "$TEST_LIB"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

[ "$("$PCTL" model speedup --p 0.9 --cores 4)" = "3.0769" ] || fail "speedup P=0.9 N=4"
[ "$("$PCTL" model speedup --p 0.1 --cores 4)" = "1.0811" ] || fail "speedup P=0.1 N=4"
[ "$("$PCTL" model p --cores 12 --speedup 5.484)" = "0.8920" ] || fail "P from N=12 SP=5.484"
json_p=$("$PCTL" model p --cores 12 --speedup 5.484 --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["p"], 4))')
[ "$json_p" = "0.892" ] || fail "--json p: $json_p"

# Domain errors: exit 2, a message naming the option and the value, nothing on stdout.
check_refused() {
        local want=$1
        shift
        out=$("$PCTL" "$@" 2>"$T/err")
        rc=$?
        [ $rc -eq 2 ] || fail "'$*' exited $rc, not 2"
        [ -z "$out" ] || fail "'$*' printed '$out' on stdout"
        grep -q -- "$want" "$T/err" || fail "'$*' said '$(cat "$T/err")', not '$want'"
}
check_refused "--cores must be >= 2 to estimate P (got 1)" model p --cores 1 --speedup 1
check_refused "--speedup must be > 0" model p --cores 4 --speedup 0
check_refused "--speedup must be > 0" model p --cores 4 --speedup -2
check_refused "--p: '1.5' is outside" model speedup --p 1.5 --cores 4
check_refused "--p: 'x' is not a number" model speedup --p x --cores 4
check_refused "--cores: '0' is not a count" model speedup --p 0.5 --cores 0
check_refused "--p is required" model speedup --cores 4
check_refused "unknown subcommand" model fastest
check_refused "includes 0 cores" model table --p 0.5 --cores 0-4

# Superlinear: P > 1 with a warning, never clamped.
out=$("$PCTL" model p --cores 4 --speedup 4.5 2>"$T/err") || fail "superlinear refused"
[ "$out" = "1.0370" ] || fail "superlinear P = $out"
grep -q "superlinear" "$T/err" || fail "no superlinear warning"

# The table: with a declared power model, W, Perf/W, EPI and EDP per N; JSON rows.
printf '[power]\nstatic_w = 20\ncore_w = 10\n' >"$T/power.ini"
"$PCTL" model table --p 0.95 --cores 1-4 --power "$T/power.ini" --json >"$T/table.json" || fail "table"
python3 - "$T/table.json" <<'PY' || fail "table JSON"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert [r["cores"] for r in rows] == [1, 2, 3, 4], rows
assert all(r["power_w"] is not None and r["edp"] is not None for r in rows)
assert rows[1]["edp"] < rows[0]["edp"]  # P = 0.95: 2 cores beat 1 on EDP
assert abs(rows[3]["speedup"] - 1 / (0.05 + 0.95 / 4)) < 1e-6
PY
"$PCTL" model table --p 0.5 --cores 1-2 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["rows"][0]["power_w"] is None' ||
        fail "without a power model, power must be unknown (null)"
# The one [power] dialect: a platform.ini (per-frequency points) serves as --power FILE.
printf '[platform]\nbackend = perf\n\n[power]\nstatic_w = 20\ncore_w_2000 = 10\nidle_w_2000 = 1\nresidual_w = 0.5\n' >"$T/platform.ini"
"$PCTL" model table --p 0.95 --cores 1-2 --freq 2000 --power "$T/platform.ini" --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["rows"]; sp=r[1]["speedup"]; assert abs(r[0]["power_w"] - 30) < 1e-6 and abs(r[1]["power_w"] - (20 + 10 * sp + 1 * (2 - sp))) < 1e-6, r' ||
        fail "--power with a platform.ini: W is not static_w + core_w_2000 per busy core + idle_w_2000 per idle one"
printf '[power]\nstatic_w = 20\ncores_w = 10\n' >"$T/bad.ini"
check_refused "bad.ini:3" model table --p 0.5 --cores 1-2 --power "$T/bad.ini"
echo "ok: pctl model"
