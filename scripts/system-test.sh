#!/usr/bin/env bash
# make test's last step: the system test (tests/system, ctest label "system") with its own
# lines shown — what it checked and its run time — whether it passes or fails.
set -uo pipefail
build=${1:-build}
cd "$build" || exit 1
ctest -L system -V 2>&1 | sed -n 's/^[0-9]*: //p; /tests passed/p' |
        grep -vE '^(Test command|Working Directory|Environment variables|Test timeout| [A-Z_]+=)'
exit "${PIPESTATUS[0]}"
