#!/usr/bin/env bash
# Runs the benchmarks one at a time (they time themselves) and prints each one's figures:
# the lines they print that start with "bench:". Fails if a benchmark missed its target.
set -uo pipefail
build=${1:-build}
log="$build/bench.log"
(cd "$build" && ctest -L bench -V) >"$log" 2>&1
rc=$?
grep -E '^[0-9]+: bench:' "$log" | sed 's/^[0-9]*: //'
tail -n 4 "$log" | grep -E 'tests passed|tests failed' || true
if [ $rc -ne 0 ]; then
        echo "benchmarks: a target was missed; the full output is in $log" >&2
        grep -E '^[0-9]+: ' "$log" | grep -iE 'fail|error|missed' | sed 's/^[0-9]*: //' >&2
fi
exit $rc
