#!/usr/bin/env bash
# pbench's options: each bad one is refused with exit 2 and a message naming it (and nothing on
# stdout); the good ones do what they say, checked in the JSON.
set -uo pipefail
pbench=${PBENCH:?PBENCH is not set}
src=${SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

cpus=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
absent=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)) + 1)')

# rejects OPTION-NAMED-IN-MESSAGE ARGS...
rejects() {
        local name=$1 rc lines
        shift
        "$pbench" "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        lines=$(wc -l <"$tmp/err")
        if [ $rc -ne 2 ]; then
                echo "FAIL: pbench $* exited $rc, expected 2"
                fail=1
        elif ! grep -q -- "$name" "$tmp/err"; then
                echo "FAIL: pbench $*: message does not name $name: $(cat "$tmp/err")"
                fail=1
        elif [ -s "$tmp/out" ] || [ "$lines" -ne 1 ]; then
                echo "FAIL: pbench $*: wrote to stdout or more than a one-line message"
                fail=1
        else
                echo "ok: pbench $* -> $(cat "$tmp/err")"
        fi
}

rejects --p --p 1.5
rejects --p --p -0.1
rejects --p --p abc
rejects --p --p
rejects --threads --p 0.5 --threads 0
rejects --threads --p 0.5 --threads -1
rejects --kernel --p 0.5 --kernel fft
rejects --scaling --p 0.5 --scaling linear
rejects --cpus --p 0.5 --cpus "$absent"
rejects --cpus --p 0.5 --cpus 3-1
rejects --threads --p 0.5 --threads $((cpus + 1))
rejects --oversubscribe --p 0.5 --threads $((cpus + 1))
rejects "only 1 CPU (0);" --p 0.5 --threads 2 --cpus 0 # one CPU in the singular
rejects --phases --phases 0.5:1,0.2
rejects --phases --phases 1.5:1
rejects --phases --phases 0.5:0
rejects --phases --phases 0.5:abc
rejects --phases --phases 0.5:1 --p 0.5
rejects --work --p 0.5 --work 0
rejects --t1 --p 0.5 --t1 -2
rejects --iterations --p 0.5 --iterations 0
rejects --array-mib --p 0.5 --array-mib 64
rejects --bogus --p 0.5 --bogus
rejects --p --threads 1
rejects --sync --p 0.5 --sync 1.5
rejects --imbalance --p 0.5 --imbalance 0.5
rejects --imbalance --p 0.5 --imbalance x
rejects --sleep --p 0.5 --sleep 0.99
rejects --sleep --p 0.5 --sleep -0.1

# json ARGS... : runs pbench, stores the JSON in $tmp/json; fails the test if it did not work.
json() {
        if ! "$pbench" "$@" --json >"$tmp/json" 2>"$tmp/err"; then
                echo "FAIL: pbench $* failed: $(cat "$tmp/err")"
                fail=1
                echo '{}' >"$tmp/json"
        fi
}
# expect DESCRIPTION PYTHON-EXPRESSION-OVER-d
expect() {
        if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
                "$tmp/json" "$2" 2>"$tmp/pyerr"; then
                echo "ok: $1"
        else
                echo "FAIL: $1: $2 is false for $(tr -d '\n ' <"$tmp/json") $(cat "$tmp/pyerr")"
                fail=1
        fi
}

json --p 0.5 --threads $((cpus + 1)) --oversubscribe --work 2
expect "--oversubscribe runs more threads than CPUs" \
        "d['threads'] == $((cpus + 1)) and len(d['thread_busy_s']) == $((cpus + 1)) and len(d['thread_cpus']) == $((cpus + 1))"

json --p 0.3 --threads 1 --work 30
expect "--work 30 gives 30 units" "abs(d['work_units'] - 30) < 1e-6 and d['p'] == 0.3"

json --p 0.5 --threads 2 --oversubscribe --work 20
amdahl=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["work_units"])' "$tmp/json")
json --p 0.5 --threads 2 --oversubscribe --work 20 --scaling gustafson
expect "gustafson does more total work than amdahl for N=2 ($amdahl units)" \
        "d['scaling'] == 'gustafson' and d['work_units'] > $amdahl + 1 and abs(d['work_units'] - 30) < 1e-6"

json --phases 0.2:0.4,0.8:0.4 --threads 1
expect "--phases reports each phase" \
        "[ph['p'] for ph in d['phases']] == [0.2, 0.8] and all(ph['iterations'] >= 1 and ph['wall_s'] >= 0.4 for ph in d['phases']) and d['iterations'] == sum(ph['iterations'] for ph in d['phases'])"

json --p 0.5 --threads 1 --t1 0.3 --iterations 1
expect "--iterations 1 runs one sequential and one parallel part" \
        "d['iterations'] == 1 and d['sequential_s'] > 0 and d['parallel_s'] > 0"

json --p 0.5 --threads 1 --t1 0.3 --kernel mem
expect "the mem kernel runs with an array of at least 64 MiB" \
        "d['kernel'] == 'mem' and d['mem_array_bytes'] >= 64 << 20 and d['thread_busy_s'][0] > 0"

json --p 0.5 --threads 2 --oversubscribe --t1 0.3 --kernel mem --array-mib 32
expect "--array-mib sets the mem kernel's array" \
        "d['kernel'] == 'mem' and d['mem_array_bytes'] == 32 << 20 and len(d['thread_busy_s']) == 2"

json --p 0.9 --threads 2 --oversubscribe --t1 0.3 --kernel spin
expect "the spin kernel runs" "d['kernel'] == 'spin' and min(d['thread_busy_s']) > 0"

# The stack's delimiters: what was programmed, its ideal stack (closing at N) and pbench's own
# timing of the waits.
json --p 0.95 --threads 2 --oversubscribe --t1 0.4 --sync 0.8
expect "--sync 0.8: the threads wait for the mutex; the ideal stack's sync is 0.57/0.81" \
        "d['sync'] == 0.8 and min(d['thread_mutex_wait_s']) > 0 and abs(d['stack_programmed']['components']['sync'] - 0.57 / 0.81) < 1e-6 and abs(d['stack_programmed']['speedup'] + sum(d['stack_programmed']['components'].values()) - 2) < 1e-9"
json --p 0.9 --threads 2 --oversubscribe --t1 0.4 --imbalance 3
expect "--imbalance 3: thread 1 does 3 times thread 0's parallel work; thread 0 waits at the end" \
        "d['imbalance'] == 3 and d['thread_par_wait_s'][0] > d['thread_par_wait_s'][1] and d['stack_programmed']['components']['imbalance'] > 0.5 and d['stack']['components']['imbalance'] > 0"
json --p 1 --threads 1 --t1 0.4 --sleep 0.5
expect "--sleep 0.5: half of the thread's time asleep" \
        "d['sleep'] == 0.5 and abs(d['thread_sleep_s'][0] / d['wall_s'] - 0.5) < 0.15 and abs(d['stack_programmed']['components']['io'] - 0.5) < 1e-9 and abs(d['stack']['components']['io'] - 0.5) < 0.15"
json --p 0.5 --threads 1 --t1 0.2
expect "no delimiter: sync 0, imbalance 1, sleep 0, no waits" \
        "d['sync'] == 0 and d['imbalance'] == 1 and d['sleep'] == 0 and d['thread_mutex_wait_s'] == [0] and d['thread_sleep_s'] == [0]"

# SIGTERM: threads stop, nothing on stdout, exit 1.
"$pbench" --p 0.5 --threads 1 --t1 60 --json >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 0.5
kill -TERM $pid
start=$(date +%s)
wait $pid
rc=$?
if [ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && [ $(($(date +%s) - start)) -lt 10 ]; then
        echo "ok: SIGTERM stops pbench without a result ($(cat "$tmp/err"))"
else
        echo "FAIL: after SIGTERM pbench exited $rc with stdout '$(cat "$tmp/out")'"
        fail=1
fi

# usage() and the man page list the same options.
"$pbench" --help >"$tmp/help" || { echo "FAIL: --help exited non-zero"; fail=1; }
for opt in $(grep -o -- '--[a-z0-9-]*' "$tmp/help" | sort -u); do
        if ! grep -q -- "${opt//-/\\\\-}" "$src/man/pbench.1"; then
                echo "FAIL: $opt is in usage() but not in man/pbench.1"
                fail=1
        fi
done
for opt in $(grep -o -- '\\-\\-[a-z0-9-]*' "$src/man/pbench.1" | sed 's/\\//g' | sort -u); do
        if ! grep -q -- "$opt" "$tmp/help"; then
                echo "FAIL: $opt is in man/pbench.1 but not in usage()"
                fail=1
        fi
done

exit $fail
