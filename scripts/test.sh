#!/usr/bin/env bash
# make test: every test of the project, grouped by what it needs (ctest labels, set in
# tests/CMakeLists.txt; docs/testing.md):
#   unit         cmocka cases, no privileges, in parallel
#   integration  the real binaries against real cgroups (root), one at a time
#   quality      figures on the model machine (virtual time: deterministic), in parallel
#   perf         timing budgets measured on this machine, one at a time
#   real         real programs (xz, zstd, ...) under pctld, one at a time
#   system       the Debian package in a booted container, after `make package`
#   vm           the booted VM (tests/vm), when this tree has it
# plus the fuzz harnesses' corpora and short runs (scripts/fuzz.sh) and the package. The
# figures the quality, perf and real tests print ("bench:" lines) are shown as they come; each
# failing test's output is shown. Every step runs even when one before it failed, and the
# output ends with one line per label: tests, passed, failed, skipped, wall time, and then, for
# each label or step that failed, the last lines of what it said about it: a CI that keeps only
# the end of the output still names what failed and why.
#
# usage: scripts/test.sh [BUILD_DIR [STEP...]]   (steps: the labels above, fuzz, package;
#        default: all, in the order above; environment: JOBS, FUZZ_BUILD, FUZZ_TEST_SECONDS)
set -uo pipefail
build=${1:-build}
shift $(($# > 0))
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(unit integration quality perf real fuzz package system vm)
jobs=${JOBS:-$(nproc)}
src=$(cd "$(dirname "$0")/.." && pwd)
logs="$build/test-logs"
mkdir -p "$logs"
rows=()
status=0
# why.LABEL files: each failed label's or step's own account, printed again after the table.
why=()

# run_label LABEL PARALLEL SHOW: the label's tests through ctest, and a row for the table; the
# lines the tests print that start with SHOW (all: every line, '': none), and each failing
# test's output.
run_label() {
        local label=$1 parallel=$2 show=$3 log="$logs/$1.log" t0 rc n
        n=$(cd "$build" && ctest -N -L "^$label\$" | awk '/^Total Tests:/ { print $3 }')
        if [ "${n:-0}" -eq 0 ]; then
                return 0
        fi
        echo "== $label: $n tests"
        t0=$(date +%s.%N)
        if [ "$parallel" = yes ]; then
                (cd "$build" && ctest -L "^$label\$" -j "$jobs" -V) >"$log" 2>&1
        else
                (cd "$build" && ctest -L "^$label\$" -V) >"$log" 2>&1
        fi
        rc=$?
        if [ -z "$show" ]; then
                :
        elif [ "$show" = all ]; then
                sed -n 's/^[0-9]*: //p' "$log" |
                        grep -vE '^(Test command|Working Directory|Environment variables|Test timeout| [A-Z_]+=)'
        else
                grep -E "^[0-9]+: $show" "$log" | sed 's/^[0-9]*: //'
        fi
        # Why a test was skipped: the "SKIP: ..." line it printed, with its name.
        awk 'NR == FNR { if ($0 ~ /^ *[0-9]+\/[0-9]+ Test +#[0-9]+:/) { n = $3; gsub(/[#:]/, "", n); name[n] = $4 }; next }
                /^[0-9]+: SKIP:/ { n = $1; sub(/:$/, "", n); sub(/^[0-9]+: SKIP: */, ""); print "skipped " name[n] ": " $0 }' "$log" "$log"
        row "$label" "$log" "$t0"
        if [ $rc -ne 0 ]; then
                status=1
                # Each failing test's own lines.
                {
                        echo "$label: failed; the full output is in $log"
                        for t in $(awk '/^ *[0-9]+\/[0-9]+ Test +#/ && /\*\*\*(Failed|Timeout|Exception)|Not Run/ { print $3 }' "$log" |
                                tr -d '#:'); do
                                echo "-- $(awk -v t="$t" '$3 == "#" t ":" { print $4 }' "$log"):"
                                grep -E "^$t: " "$log" | sed 's/^[0-9]*: //' | tail -n 40
                        done
                } >"$logs/why.$label"
                cat "$logs/why.$label" >&2
                why+=("$logs/why.$label")
        fi
}

# row LABEL LOG T0: counts the results ctest wrote to LOG ("1/5 Test #3: name ... Passed").
row() {
        local t1
        t1=$(date +%s.%N)
        rows+=("$(awk -v label="$1" -v t0="$3" -v t1="$t1" '
                /^ *[0-9]+\/[0-9]+ Test +#[0-9]+:/ {
                        n++
                        if ($0 ~ /\*\*\*Skipped|Not Run .*Disabled/) s++
                        else if ($0 ~ / Passed /) p++
                        else f++
                }
                END { printf "%-12s %5d %7d %7d %8d %9.1f s", label, n, p, f, s, t1 - t0 }' "$2")")
}

# step NAME CMD...: a step that is not a ctest label (fuzz, package), as one row.
step() {
        local name=$1 t0 t1 rc
        shift
        echo "== $name"
        t0=$(date +%s.%N)
        # Its stderr is shown as it comes and kept, to be shown again if it fails.
        { "$@" 2>&1 1>&3 | tee "$logs/why.$name" >&2; } 3>&1
        rc=${PIPESTATUS[0]}
        t1=$(date +%s.%N)
        if [ $rc -ne 0 ]; then
                status=1
                why+=("$logs/why.$name")
        fi
        rows+=("$(awk -v name="$name" -v ok=$((rc == 0)) -v t0="$t0" -v t1="$t1" \
                'BEGIN { printf "%-12s %5d %7d %7d %8d %9.1f s", name, 1, ok, !ok, 0, t1 - t0 }')")
}

for st in "${steps[@]}"; do
        case $st in
        unit) run_label unit yes '' ;;
        integration) run_label integration no '' ;;
        # The figures: "bench: ..." lines.
        quality | perf | real) run_label "$st" "$([ "$st" = quality ] && echo yes || echo no)" 'bench:' ;;
        fuzz) step fuzz bash "$src/scripts/fuzz.sh" "${FUZZ_BUILD:-build-fuzz}" "${FUZZ_TEST_SECONDS:-3}" ;;
        # The unit tests ran already: the package is built without running them again.
        package) step package env DEB_BUILD_OPTIONS=nocheck make --no-print-directory -C "$src" package BUILD="$build" ;;
        system | vm) run_label "$st" no all ;;
        *)
                echo "scripts/test.sh: unknown step '$st' (unit integration quality perf real fuzz package system vm)" >&2
                exit 2
                ;;
        esac
done
echo
printf '%-12s %5s %7s %7s %8s %11s\n' label tests passed failed skipped time
for r in "${rows[@]}"; do
        echo "$r"
done
for f in "${why[@]}"; do
        echo
        echo "== why ${f##*/why.} failed (the last lines; all of it above and in $logs):"
        tail -n 30 "$f"
done
exit $status
