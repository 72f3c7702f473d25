#!/usr/bin/env bash
# `pctl run` ends with a summary like time(1)'s, from wait4 and pctld's report on the run (kept
# after the app leaves): the command's exit status passes through, --json is one object on the
# last line of stderr, --quiet prints nothing. pbench under the monitor policy gives a whole-run
# P (p_run) that must agree within 0.05 with pbench's own busy-time P, extended to the whole run.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs for a parallel run"
pctld_setup
trap pctld_cleanup EXIT
printf '[policy mon]\nobjective = monitor\n' >"$T/policies.d/mon.conf"
sed -i 's/^\[daemon\]/[daemon]\ndefault_policy = mon/' "$T/pctl.conf"
pctld_start
run() { "$PCTL" run --socket "$T/pctl.sock" "$@"; }

# The exit status is the command's, with the summary.
run -- sh -c 'exit 7' 2>"$T/err"
rc=$?
[ "$rc" -eq 7 ] || fail "pctl run -- sh -c 'exit 7' exited $rc: $(cat "$T/err")"
grep -q "exited with status 7" "$T/err" || fail "no summary: $(cat "$T/err")"
grep -Eq "^  wall +[0-9.]+ s" "$T/err" || fail "no wall time: $(cat "$T/err")"
grep -Eq "^  CPU +[0-9.]+ s \(user" "$T/err" || fail "no CPU time: $(cat "$T/err")"
# A sample may or may not fall inside so short a run: P is a figure or "unknown".
grep -Eq "^  P +run (unknown|-?[0-9]+\.[0-9]{3})" "$T/err" || fail "no P line: $(cat "$T/err")"
echo "ok: exit 7 passes through with its summary"

run -- sh -c 'kill -TERM $$' 2>"$T/err"
rc=$?
[ "$rc" -eq 143 ] || fail "a command killed by SIGTERM made pctl run exit $rc, not 143"
grep -q "killed by signal 15" "$T/err" || fail "the summary does not say signal 15: $(cat "$T/err")"
echo "ok: killed by a signal: 128 + 15 and said so"

# SIGTERM to pctl run itself goes on to the command (as to any process a service manager
# stops): the command ends, pctl run reports it and exits 128 + 15, nothing is left running.
"$PCTL" run --socket "$T/pctl.sock" -- sleep 30 2>"$T/err" &
RUN_PID=$!
CLEANUP_PIDS="$RUN_PID"
child=""
wait_until 10 eval 'child=$(pgrep -P "$RUN_PID" -x sleep)' || fail "pctl run did not start sleep"
kill -TERM "$RUN_PID"
wait "$RUN_PID"
rc=$?
[ "$rc" -eq 143 ] || fail "pctl run sent SIGTERM exited $rc, not 143: $(cat "$T/err")"
grep -q "sleep was killed by signal 15 (Terminated): exit status 143" "$T/err" ||
        fail "the summary does not say the command got SIGTERM: $(cat "$T/err")"
kill -0 "$child" 2>/dev/null && fail "sleep $child still runs after pctl run got SIGTERM"
CLEANUP_PIDS=""
echo "ok: SIGTERM to pctl run reaches the command: 143, and it is gone"

# A command that cannot be executed exits as the shell's would (127 not found, 126 not
# executable), said once, and nothing ran for pctld to report on.
expect_exit 127 "^pctl run: $T/no-such-cmd could not be run (No such file or directory): exit status 127$" \
        "$PCTL" run --socket "$T/pctl.sock" -- "$T/no-such-cmd"
expect_exit 126 "^pctl run: $T/pctl.conf could not be run (Permission denied): exit status 126$" \
        "$PCTL" run --socket "$T/pctl.sock" -- "$T/pctl.conf"
run -- "$T/pctl.conf" 2>"$T/err"
grep -q "no report: the command could not be run" "$T/err" || fail "pctld's report on a command that never ran: $(cat "$T/err")"
run --json -- "$T/no-such-cmd" 2>"$T/err"
rc=$?
[ "$rc" -eq 127 ] || fail "--json: a missing command made pctl run exit $rc"
tail -n 1 "$T/err" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["exec_error"] == "No such file or directory" and s["pctl_exit_status"] == 127, s
assert s["exit_status"] is None and s["signal"] is None and s["pctld"] is None, s' ||
        fail "--json summary of a missing command: $(cat "$T/err")"
head -n 1 "$T/err" | grep -q "^pctl run: cannot run $T/no-such-cmd: No such file or directory$" ||
        fail "--json: no message before the summary: $(cat "$T/err")"
out=$(run --quiet -- "$T/no-such-cmd" 2>&1)
[ "$out" = "pctl run: cannot run $T/no-such-cmd: No such file or directory" ] ||
        fail "--quiet must still say why the command did not run: '$out'"
echo "ok: commands that cannot be executed: 127 and 126, said once"

# pctld measures the command with its child processes (a launcher, make -j, sh -c): two busy
# children in parallel under sh, which itself only waits, are a run of speedup near 2 (it read
# sh's waiting, speedup 1 and P 0, before the sensor followed children; the bounds leave room
# for a CPU-heavy test beside this one), and the summary names their share.
others_mark
run --json -- sh -c "timeout 1 sh -c 'while :; do :; done' & timeout 1 sh -c 'while :; do :; done' & wait; exit 0" 2>"$T/err"
others_since
tail -n 1 "$T/err" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["children_cpu_s"] >= 0.05 and s["children_cpu_s"] > 0.5 * s["cpu_s"], s
assert s["own_cpu_s"] < s["children_cpu_s"], s
r = s["pctld"]
assert r["speedup_run"] is not None and r["p_run"] is not None, r
if r["speedup_run"] < 1.3 or r["p_run"] < 0.4:
    print("two busy children read as speedup %.2f, P %.2f" % (r["speedup_run"], r["p_run"]))
    sys.exit(3)'
rc=$?
not_judged=""
# Two children that each want a whole CPU are a speedup near 2 only when nothing else takes the
# CPUs: a miss while the machine was loaded is not judged (a skip at the end), on a quiet one
# it fails.
if [ $rc -eq 3 ] && loaded; then
        not_judged="two busy children read low while the rest of the machine used $OTHERS CPUs (over $OTHERS_MAX)"
        echo "note: $not_judged: not judged"
elif [ $rc -ne 0 ]; then
        fail "--json: two busy children (the rest of the machine used $OTHERS CPUs): $(cat "$T/err")"
fi
run -- sh -c "timeout 0.5 sh -c 'while :; do :; done'; exit 0" 2>"$T/err"
grep -Eq "^ +\([0-9.]+ s of the [0-9.]+ s CPU were sh's child processes, measured with it" "$T/err" ||
        fail "the summary does not say the work was sh's children's: $(cat "$T/err")"
echo "ok: work done by child processes is measured with the command, and named"

# `--json` before the command, as with the other commands.
"$PCTL" --json --socket "$T/pctl.sock" run -- sh -c 'exit 5' 2>"$T/err"
rc=$?
[ "$rc" -eq 5 ] || fail "pctl --json run exited $rc, not 5"
tail -n 1 "$T/err" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["exit_status"] == 5 and s["pctl_exit_status"] == 5, s' || fail "pctl --json run: $(cat "$T/err")"
echo "ok: pctl --json run"

out=$(run --quiet -- sh -c 'echo out; exit 3' 2>"$T/err")
rc=$?
[ "$rc" -eq 3 ] && [ "$out" = out ] && [ ! -s "$T/err" ] ||
        fail "--quiet: exit $rc, stdout '$out', stderr '$(cat "$T/err")'"
echo "ok: --quiet prints nothing and keeps the status"
expect_exit 2 "exclude each other" "$PCTL" run --socket "$T/pctl.sock" --json --quiet -- true

# pctl status shows both P's of an app whose phase differs from its whole run: a sequential
# second, then a parallel phase. The text has the whole run's line with its range and the
# legend; --json names them p_est and p_run (with p_run_confidence).
"$PCTL" run --socket "$T/pctl.sock" --quiet -- "$PBENCH" --phases 0:1,0.95:4 >/dev/null &
RUN_PID=$!
CLEANUP_PIDS="$RUN_PID"
both_ps() {
        "$PCTL" status --socket "$T/pctl.sock" >"$T/status.txt" 2>&1 && status_json &&
                grep -Eq "^ +whole run: P -?[0-9.]+±[0-9.]+, speedup [0-9.]+ \(P above is the current phase's\)$" "$T/status.txt" &&
                json_get "$T/status.json" "[a for a in d['apps'] if a['name'] == 'pbench'][0]" >"$T/app.txt" &&
                # Where status shows the whole run apart.
                [ "$(json_get "$T/status.json" "int((lambda a: a['p_est'] is not None and
                    a['p_run'] is not None and a['p_run_confidence'] is not None and
                    abs(a['p_est'] - a['p_run']) >= 0.005)(
                    [a for a in d['apps'] if a['name'] == 'pbench'][0]))")" = 1 ]
}
wait_until 20 both_ps || fail "pctl status never showed a phase P apart from the whole run's: $(cat "$T/status.txt") $(cat "$T/app.txt" 2>/dev/null)"
grep -q "^P: the current phase's P̂ ± its standard error (p_est); \"whole run\": P̂ from the app's start" "$T/status.txt" ||
        fail "pctl status has no legend for its two P's: $(cat "$T/status.txt")"
"$PCTL" status --socket "$T/pctl.sock" --watch 0.1 --count 1 >"$T/watch.txt" ||
        fail "pctl status --watch failed"
grep -q "whole run: P " "$T/watch.txt" || fail "--watch does not show the whole run's P: $(cat "$T/watch.txt")"
wait "$RUN_PID" || fail "pbench --phases under pctl run failed"
CLEANUP_PIDS=""
echo "ok: pctl status shows the phase's P and the whole run's, text, --watch and --json"

# The times of the configurations add up to the run, not to whole 100 ms intervals past either
# end of it (it was adopted mid-interval; it exited mid-interval).
for k in 1 2 3; do
        run --json -- sleep 0.15 2>"$T/err" || fail "sleep under pctl run: $(cat "$T/err")"
        tail -n 1 "$T/err" >"$T/summary.json"
        python3 - "$T/summary.json" <<'EOF2' || fail "configurations past the run: $(cat "$T/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
r = s["pctld"]
assert r is not None, s
assert sum(c["s"] for c in r["configs"]) <= s["wall_s"] + 0.005, (r["configs"], s["wall_s"])
EOF2
done
echo "ok: a short run's configurations add up to no more than its wall time"
run -- sh -c "timeout 0.5 sh -c 'while :; do :; done' & timeout 0.5 sh -c 'while :; do :; done' & wait; exit 0" 2>"$T/err"
grep -Eq "^  P +run -?[0-9.]+, last phase " "$T/err" &&
        grep -Eq "^ +\(the [0-9.]+ s pctld did not see: from the CPU time above; -?[0-9.]+ over what it saw\)$" "$T/err" ||
        fail "the summary does not say the unseen part was completed: $(cat "$T/err")"
echo "ok: the part of the run pctld did not see is completed from the command's CPU time, and said"

# A parallel run of about 4 s at P 0.8 on both CPUs: p_run against pbench's own measure. A
# shorter run leaves the 100 ms sampling too few intervals: 2 s runs missed by 0.053 once.
others_mark
run --json -- "$PBENCH" --p 0.8 --t1 6 --json >"$T/pbench.json" 2>"$T/err"
rc=$?
others_since
[ "$rc" -eq 0 ] || fail "pbench under pctl run exited $rc: $(cat "$T/err")"
tail -n 1 "$T/err" >"$T/summary.json"
python3 - "$T/summary.json" "$T/pbench.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
r = s["pctld"]
assert s["exit_status"] == 0 and s["signal"] is None, s
assert s["wall_s"] >= b["wall_s"] and s["cpu_s"] > 0, (s["wall_s"], b["wall_s"], s["cpu_s"])
assert r is not None, s["report_error"]
for k in ("p_run", "p_run_confidence", "speedup_run", "p_est", "seen_s", "configs", "gain_note"):
    assert k in r, k
assert r["p_run"] is not None and r["p_run_confidence"] is not None, r
# pctl run sent what it measured: the part pctld did not see is completed from it (busy time),
# so no range is left, and pctld's own figure over what it saw is kept beside.
assert r["completed_s"] is not None and 0 <= r["completed_s"] <= s["wall_s"], r
assert r["completed_cpu_s"] is not None and r["completed_cpu_s"] >= 0, r
assert r["p_run_confidence"] == 0 and r["p_run_seen"] is not None, r
assert r["configs"] and all(c["cores"] == 2 for c in r["configs"]), r["configs"]
# The configurations' times add up to the run, not to whole intervals past either end of it.
assert sum(c["s"] for c in r["configs"]) <= s["wall_s"] + 0.005, (r["configs"], s["wall_s"])
# Run at its default (monitor) throughout: the gain is measured, and it is nil.
assert r["gain_pct"] == 0, r
assert r["speedup_source"] == "busy-time" and r["speedup_note"], r
# lib.sh declares the power model: energy is that model's, and says so.
assert r["energy_source"] == "declared" and r["energy_j"] > 0, r
# p_run is the whole run's P; pbench's own P is its timed region's. The run's time outside that
# region (exec, thread start, exit: s["wall_s"] - b["wall_s"]) ran one thread, so the reference
# is the whole run's P with that time added sequentially to pbench's region.
n = 2
pb = b["p_from_busy"]
out_s = max(0.0, s["wall_s"] - b["wall_s"])
t1 = b["wall_s"] / (1 - pb + pb / n) + out_s
ref = n / (n - 1) * (1 - (b["wall_s"] + out_s) / t1)
d = abs(r["p_run"] - ref)
print("p_run %.3f ±%.3f, pbench's own P %.3f over %.2f s, whole run %.3f with %.3f s outside, "
      "phase P %.3f" % (r["p_run"], r["p_run_confidence"], pb, b["wall_s"], ref, out_s, r["p_est"]))
if d > 0.05:
    print("p_run %.3f is %.3f from the whole run's %.3f" % (r["p_run"], d, ref))
    sys.exit(3)
EOF
rc=$?
# p_run and pbench's own P come from the same CPU time, but pctld samples it every 100 ms and
# other load makes it uneven: a miss while the machine was loaded is not judged (a skip at the
# end, once the rest has run), on a quiet one it fails.
if [ $rc -eq 3 ] && loaded; then
        not_judged="${not_judged:+$not_judged; }p_run missed pbench's P while the rest of the machine used $OTHERS CPUs (over $OTHERS_MAX)"
        echo "note: $not_judged: not judged"
elif [ $rc -ne 0 ]; then
        fail "summary (the rest of the machine used $OTHERS CPUs): $(cat "$T/summary.json")"
else
        echo "ok: --json summary of pbench (the rest of the machine used $OTHERS CPUs)"
fi

# A real multi-threaded tool (issue 20): xz -T2 on a few MiB ends with the summary, its output
# intact, and its own exit status, success and failure alike.
if command -v xz >/dev/null; then
        head -c $((4 << 20)) /dev/urandom | base64 >"$T/xz-in.txt"
        run -- xz -T2 -1 --block-size=1MiB -c "$T/xz-in.txt" >"$T/xz-out.xz" 2>"$T/err"
        rc=$?
        [ "$rc" -eq 0 ] || fail "pctl run -- xz -T2 exited $rc: $(cat "$T/err")"
        xz -dc "$T/xz-out.xz" | cmp -s - "$T/xz-in.txt" || fail "xz's output under pctl run is not its input"
        grep -q "exited with status 0" "$T/err" || fail "no summary after xz: $(cat "$T/err")"
        grep -Eq "^  CPU +[0-9.]+ s \(user" "$T/err" || fail "no CPU time after xz: $(cat "$T/err")"
        # Energy from the power model lib.sh declares is never passed off as measured.
        grep -Eq "^  energy +[0-9.]+ J \(not measured: from the power model declared in pctl.conf\), EDP [0-9.e+]+ J·s$" "$T/err" ||
                fail "the declared model's energy is not labelled so: $(cat "$T/err")"
        grep -q "child processes" "$T/err" && fail "xz's own threads taken for child processes: $(cat "$T/err")"
        run -- xz -T2 -c "$T/no-such-file" >/dev/null 2>"$T/err"
        rc=$?
        [ "$rc" -eq 1 ] || fail "xz on a missing file under pctl run exited $rc, not xz's 1"
        grep -q "No such file" "$T/err" && grep -q "exited with status 1" "$T/err" ||
                fail "xz's own message or the summary is missing: $(cat "$T/err")"
        echo "ok: pctl run -- xz -T2: summary, output intact, xz's exit status (0 and 1)"
else
        echo "note: xz not installed (scripts/deps.sh installs it): the xz case was not run"
fi

# Moved off its default (P = 0.2 under edp with the declared 20 W + 10 W per core: 1 core), the
# run has no measured gain: the summary lists both configurations and says "not measured".
run --policy edp -- "$PBENCH" --p 0.2 --t1 3 >/dev/null 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] || fail "pbench under edp exited $rc: $(cat "$T/err")"
if grep -Eq "^  ran at +2 cores for [0-9.]+ s$" "$T/err" && grep -Eq "^ +1 core for [0-9.]+ s$" "$T/err"; then
        grep -q "^  gain     not measured: the default was not run$" "$T/err" ||
                fail "a run moved off its default claims a gain: $(cat "$T/err")"
        echo "ok: moved off its default: both configurations, gain not measured"
else
        # The allocator's decision needs an estimate first; under load it may come late.
        grep -q "^  gain     0.0 % against the default (ran at its default throughout)$" "$T/err" ||
                fail "neither moved nor at its default throughout: $(cat "$T/err")"
        echo "note: edp did not move pbench off 2 cores within its run: the not-measured case was not seen"
fi

# pctld stops while the command runs: the command goes on, its status passes through, and the
# summary has the times pctl run measured itself and says that pctld's report is missing.
"$PCTL" run --socket "$T/pctl.sock" --json -- sh -c 'sleep 1; exit 4' 2>"$T/err" &
RUN_PID=$!
CLEANUP_PIDS="$RUN_PID"
wait_until 10 pgrep -P "$RUN_PID" -x sh >/dev/null || fail "pctl run did not start sh"
pctld_stop TERM
wait "$RUN_PID"
rc=$?
CLEANUP_PIDS=""
[ "$rc" -eq 4 ] || fail "the command's status with pctld gone: $rc, not 4: $(cat "$T/err")"
grep -q "^pctl run: pctld is not running" "$T/err" || fail "pctl run does not say pctld is gone: $(cat "$T/err")"
tail -n 1 "$T/err" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["exit_status"] == 4 and s["pctld"] is None and s["wall_s"] >= 0.9, s
assert "pctld did not answer" in s["report_error"], s' || fail "summary with pctld gone: $(cat "$T/err")"
echo "ok: pctld gone mid-run: the command's status, pctl run's own times, no report and why"
[ -z "$not_judged" ] || skip "$not_judged: loaded, not judged"
