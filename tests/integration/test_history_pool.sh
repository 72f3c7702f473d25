#!/usr/bin/env bash
# A returning `pctl run` app sees every CPU its policy allows while it starts (issue 27): a
# program that sizes its thread pool from sched_getaffinity a little after it starts (here
# pbench, one thread per CPU it may use, behind a 0.4 s start-up, as OpenMP sizes its pool at
# the first parallel region) gets one thread per CPU on its second run too, although history
# remembers 1 core for it. Before, pctld placed it on its remembered CPU at the first sample
# after exec, and the second run had 1 thread for good.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs for a pool of more than one"
pctld_setup
trap pctld_cleanup EXIT
hist() { "$PCTL" history --config "$T/pctl.conf" "$@"; }
# P = 0.2 on 2 CPUs with the declared 20 W + 10 W per core: 1 core has the lower EDP.
CMD=(sh -c "sleep 0.4; exec \"$PBENCH\" --p 0.2 --t1 6")
recorded_one_core() {
        hist --json >"$T/h.json" &&
                json_get "$T/h.json" "int(any(a['runs'] >= 1 and a['best_cores'] == 1 for a in d['apps']))" |
                grep -qx 1
}

pctld_start
# The first runs teach history 1 core (on a loaded machine P may take longer to settle than one
# run lasts: up to three runs).
for run in 1 2 3; do
        "$PCTL" run --socket "$T/pctl.sock" --quiet -- "${CMD[@]}" >"$T/run$run.out" ||
                fail "run $run failed: $(cat "$T/run$run.out")"
        wait_until 10 recorded_one_core && break
done
recorded_one_core || skip "history did not learn 1 core in three runs (loaded machine): $(cat "$T/h.json")"
echo "ok: history remembers 1 core"

n=$(nproc)
"$PCTL" run --socket "$T/pctl.sock" --quiet -- "${CMD[@]}" >"$T/again.out" ||
        fail "the returning run failed: $(cat "$T/again.out")"
grep -q "pbench: .* $n threads on CPUs" "$T/again.out" ||
        fail "the returning run did not size its pool to the $n CPUs: $(head -1 "$T/again.out"); pctld: $(grep -E 'from history|pid' "$T/pctld.log" | tail -5)"
grep -q "from history" "$T/pctld.log" || fail "the returning run was not placed from history: $(tail -20 "$T/pctld.log")"
echo "ok: the returning run sized its pool to $n CPUs, then went to its remembered core"
