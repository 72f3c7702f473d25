#!/usr/bin/env bash
# The libFuzzer harnesses of tests/fuzz (docs/fuzzing.md): builds them with clang in their own
# build dir, runs every file of their corpora once (the regression tests), then fuzzes each
# harness for SECONDS and prints one line per harness:
#   fuzz: config: 12345 exec/s, corpus 17 files, 0 crashes
# Fails when a corpus file or a fuzzing run crashes, leaks, hits UB or hangs; the input that
# did it is left in BUILD/fuzz/artifacts/ and named on stderr, with its bytes in base64 (up to
# 16 KiB), so that a run whose build dir is gone can still be replayed.
#
# usage: scripts/fuzz.sh [BUILD_DIR [SECONDS]]   (defaults: build-fuzz, 3)
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-fuzz}
seconds=${2:-3}
jobs=${JOBS:-$(nproc)}
log="$build/fuzz.log"

if ! command -v clang >/dev/null; then
        echo "fuzz: clang is missing (scripts/deps.sh installs it)" >&2
        exit 1
fi
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPCTL_FUZZ=ON >/dev/null || exit 1
cmake --build "$build" -j "$jobs" --target fuzzers >"$log" 2>&1 || {
        cat "$log" >&2
        echo "fuzz: the harnesses do not build" >&2
        exit 1
}

# Regression: each corpus file once.
if ! (cd "$build" && ctest -L fuzz --output-on-failure) >>"$log" 2>&1; then
        grep -E 'Test +#|Failed|ERROR|SUMMARY|^0x|Running: ' "$log" >&2
        echo "fuzz: a corpus file fails; the full output is in $log" >&2
        exit 1
fi

if [ ! -s "$build/fuzz/harnesses.txt" ]; then
        echo "fuzz: no harness list in $build/fuzz/harnesses.txt" >&2
        exit 1
fi
rc=0
while read -r name; do
        [ -n "$name" ] || continue
        seeds="$src/tests/fuzz/corpus/$name"
        # New inputs go to the build dir, never into the tree; they are kept between runs.
        work="$build/fuzz/work/$name"
        artifacts="$build/fuzz/artifacts/$name"
        run_log="$build/fuzz/$name.log"
        dict=()
        # -print_funcs=0: libFuzzer would symbolize NEW_FUNC lines through llvm-symbolizer,
        # whose pipe stays open and looks like a descriptor the parser leaked.
        # A harness's keywords (section and key names) let mutations reach past "unknown key".
        [ -f "$src/tests/fuzz/$name.dict" ] && dict=(-dict="$src/tests/fuzz/$name.dict")
        mkdir -p "$work" "$artifacts"
        rm -f "$artifacts"/*
        "$build/fuzz/fuzz-$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
                -max_len=8192 -print_funcs=0 -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
                "$work" "$seeds" >"$run_log" 2>&1
        run_rc=$?
        execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$run_log")
        # A run that crashed prints no final stats: its last status line has the rate.
        [ -n "$execs" ] || execs=$(grep -aoE 'exec/s: [0-9]+' "$run_log" | tail -n 1 | cut -d' ' -f2)
        files=$(($(find "$work" "$seeds" -type f | wc -l)))
        crashes=$(($(find "$artifacts" -type f | wc -l)))
        if [ $run_rc -ne 0 ] && [ "$crashes" -eq 0 ]; then
                crashes=1 # it died before writing its input (out of memory, a signal)
        fi
        echo "fuzz: $name: ${execs:-0} exec/s, corpus $files files, $crashes crashes"
        if [ $run_rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
                rc=1
                grep -aE "ERROR|SUMMARY|runtime error|^ +#[0-9]+ 0x[0-9a-f]+ in .* $src/" "$run_log" |
                        head -n 20 >&2
                # The input itself, for a CI whose build dir is gone: base64 -d > FILE replays it.
                find "$artifacts" -type f -size -16385c | while read -r f; do
                        echo "fuzz: $f, base64: $(base64 -w0 "$f")"
                done >&2
                find "$artifacts" -type f -size +16384c -printf 'fuzz: %p (over 16 KiB, not printed)\n' >&2
                echo "fuzz: $name failed; the full output is in $run_log (docs/fuzzing.md:" \
                        "reproduce with $build/fuzz/fuzz-$name FILE)" >&2
        fi
done <"$build/fuzz/harnesses.txt"
echo "fuzz: $(wc -l <"$build/fuzz/harnesses.txt") harnesses, ${seconds} s each, ${SECONDS} s in all"
exit $rc
