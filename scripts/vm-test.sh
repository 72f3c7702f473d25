#!/usr/bin/env bash
# make test's and make test-vm's VM step: the VM test (tests/vm, ctest label "vm") with its own
# lines shown — the table of checks, the boot and test times — whether it passes or fails.
set -uo pipefail
build=${1:-build}
cd "$build" || exit 1
ctest -L vm -V 2>&1 | sed -n 's/^[0-9]*: //p; /tests passed/p' |
        grep -vE '^(Test command|Working Directory|Environment variables|Test timeout| [A-Z_]+=)'
exit "${PIPESTATUS[0]}"
