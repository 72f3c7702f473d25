#!/usr/bin/env bash
# pctl_spank.so in a real one-node Slurm cluster (scripts/slurm-local.sh) with a private pctld
# under a declared power model: `srun --pctl-policy=edp -n1 -c2 pbench --p 0.2` is managed
# (status shows it with its job id, moved to 1 CPU) and its stderr ends with the plugin's
# summary; a job without the option is untouched; an unknown policy, no pctld, and pctld
# stopping mid-job each give one clear line and the job runs on to success.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for slurmd and cgroup v1 cpusets"
for b in munged slurmctld slurmd srun; do
        command -v "$b" >/dev/null || skip "$b is not installed (scripts/deps.sh: munge, slurmctld, slurmd, slurm-client)"
done
[ -f "$BUILD_DIR/pctl_spank.so" ] || skip "pctl_spank.so was not built (no slurm/spank.h: libslurm-dev)"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs for a job of -c2"
pctld_setup
export PCTL_SLURM_DIR="$T/slurm"
cleanup() {
        "$SRC_DIR/scripts/slurm-local.sh" stop >/dev/null 2>&1
        pctld_cleanup
}
trap cleanup EXIT
pctld_start
# slurm-local.sh refuses a bad command line, exit status 2, and starts nothing.
local_sh="$SRC_DIR/scripts/slurm-local.sh"
expect_exit 2 "unknown option '--bogus'" "$local_sh" start --bogus
expect_exit 2 "unknown command 'begin'" "$local_sh" begin
expect_exit 2 "no plugin at $T/none.so" "$local_sh" start --plugin "$T/none.so"
expect_exit 2 "takes an absolute path" "$local_sh" start --pctl-socket rel.sock
[ -e "$PCTL_SLURM_DIR" ] && fail "a refused start left $PCTL_SLURM_DIR"
"$local_sh" start --plugin "$BUILD_DIR/pctl_spank.so" --pctl-socket "$T/pctl.sock" ||
        fail "slurm-local.sh start failed"
expect_exit 2 "a cluster is running" "$local_sh" start --plugin "$BUILD_DIR/pctl_spank.so"
export SLURM_CONF="$PCTL_SLURM_DIR/slurm.conf"
node=$(hostname -s)
# wait_no_apps: until pctld has noticed that the last job's tasks left (it looks every 100 ms;
# srun may return first).
wait_no_apps() {
        for _ in $(seq 100); do
                status_json && [ "$(json_get "$T/status.json" "len(d['apps'])")" = 0 ] && return 0
                sleep 0.1
        done
        fail "pctld still manages apps of jobs that ended: $(cat "$T/status.json")"
}

# The managed job: pctld adopts pbench before it execs, tagged with the job id, and the edp
# policy moves a P = 0.2 program to 1 CPU under the declared model (20 W + 10 W per core).
# The summary may end at 1 or 2 cores: the allocator tries a neighbour now and then.
srun --pctl-policy=edp -n1 -c2 "$PBENCH" --p 0.2 --threads 2 --t1 6 >"$T/job.out" 2>"$T/job.err" &
SRUN=$!
CLEANUP_PIDS="$SRUN"
job="" cores="" jobtag=""
for _ in $(seq 300); do
        [ -n "$job" ] || job=$(squeue -h -o %i 2>/dev/null | head -n 1)
        status_json 2>/dev/null &&
                read -r jobtag cores < <(json_get "$T/status.json" \
                        "' '.join(str(a['job']) + ' ' + str(a['cores']) for a in d['apps'] if a['name'] == 'pbench') or 'none none'")
        [ "$cores" = 1 ] && break
        kill -0 "$SRUN" 2>/dev/null || break
        sleep 0.1
done
[ -n "$job" ] || fail "squeue never showed the job"
[ "$jobtag" = "$job" ] || fail "status shows pbench with job '$jobtag', not Slurm's job $job: $(cat "$T/status.json")"
[ "$cores" = 1 ] || fail "pbench was not moved to 1 CPU (cores '$cores'): $(cat "$T/status.json")"
"$PCTL" status --socket "$T/pctl.sock" | grep -Eq "^ +job $job\$" || fail "pctl status does not show job $job"
echo "ok: job $job managed: status shows pbench with job $job on 1 CPU"
wait "$SRUN"
rc=$?
[ "$rc" -eq 0 ] || fail "srun exited $rc: $(cat "$T/job.err")"
grep -q "^speedup" "$T/job.out" || fail "pbench did not finish: $(cat "$T/job.out")"
last=$(tail -n 1 "$T/job.err")
echo "$last" | grep -Eq "^pctl: job $job step 0 on $node: energy [0-9.]+ J \(declared\), EDP [0-9.e+]+ J·s, P̂ -?[0-9.]+(±[0-9.]+)?, ended at [12] cores?, clock unknown \(policy edp, 1 task, [0-9.]+ s managed\)\$" ||
        fail "the job's stderr does not end with the summary: $(cat "$T/job.err")"
[ "$(grep -c "^pctl:" "$T/job.err")" -eq 1 ] || fail "more than one pctl line: $(cat "$T/job.err")"
echo "ok: summary: $last"

wait_no_apps
# Without the option the job is untouched: no app in pctld, the root cpuset, no pctl line. With
# --pctl-policy=monitor pctld watches it (status lists it, with its job) and changes nothing: it
# stays in the root cpuset too (docs/actuators.md: the monitor objective only observes).
srun -n1 -c2 sh -c 'sleep 1; cat /proc/self/cpuset' >"$T/plain.out" 2>"$T/plain.err" &
SRUN=$!
CLEANUP_PIDS="$SRUN"
for _ in $(seq 10); do
        status_json
        [ "$(json_get "$T/status.json" "len(d['apps'])")" = 0 ] || fail "pctld manages a job without --pctl-policy: $(cat "$T/status.json")"
        sleep 0.1
done
wait "$SRUN" || fail "the plain job failed: $(cat "$T/plain.err")"
[ "$(cat "$T/plain.out")" = / ] || fail "the plain job ran in cpuset '$(cat "$T/plain.out")', not /"
grep -q "pctl" "$T/plain.err" && fail "the plain job got a pctl line: $(cat "$T/plain.err")"
srun --pctl-policy=monitor -n1 sh -c 'sleep 3; cat /proc/self/cpuset' >"$T/mon.out" 2>"$T/mon.err" &
SRUN=$!
CLEANUP_PIDS="$SRUN"
watched() {
        status_json
        [ "$(json_get "$T/status.json" "sum(1 for a in d['apps'] if a.get('objective') == 'monitor' and a.get('job'))")" = 1 ]
}
wait_until 20 watched || fail "pctld does not list the monitor job: $(cat "$T/status.json")"
wait "$SRUN" || fail "the monitor job failed: $(cat "$T/mon.err")"
[ "$(cat "$T/mon.out")" = / ] || fail "a watched job ran in '$(cat "$T/mon.out")', not /: monitor must change nothing"
echo "ok: untouched without the option (cpuset /), watched and untouched with monitor ($(cat "$T/mon.out"))"

# An unknown policy: one clear line, the job runs unmanaged and succeeds.
out=$(srun --pctl-policy=nosuch -n1 sh -c 'cat /proc/self/cpuset' 2>"$T/bad.err") ||
        fail "a job with an unknown policy failed: $(cat "$T/bad.err")"
[ "$out" = / ] || fail "a job with an unknown policy ran in '$out'"
grep -q "^pctl: job [0-9]* step 0: pctld on $node refused: no policy named 'nosuch' (see pctl policy list); the job runs unmanaged\$" "$T/bad.err" ||
        fail "no clear line for the unknown policy: $(cat "$T/bad.err")"
[ "$(grep -c "^pctl:" "$T/bad.err")" -eq 1 ] || fail "more than one line: $(cat "$T/bad.err")"
echo "ok: unknown policy: $(cat "$T/bad.err")"

# Two tasks on the node: one line for both. sbatch: the batch step and its srun step each
# get their line (the option reaches the inner srun through the job's environment).
srun --pctl-policy=monitor -n2 sh -c 'sleep 1' 2>"$T/two.err" || fail "the two-task job failed: $(cat "$T/two.err")"
[ "$(grep -c "^pctl:" "$T/two.err")" -eq 1 ] || fail "not one line for two tasks: $(cat "$T/two.err")"
grep -q "^pctl: job [0-9]* step 0 on $node: .* (policy monitor, 2 tasks, [0-9.]* s managed)\$" "$T/two.err" ||
        fail "no summary of two tasks: $(cat "$T/two.err")"
echo "ok: two tasks: $(cat "$T/two.err")"
sbatch --wait --pctl-policy=monitor -o "$T/batch.out" -e "$T/batch.err" --wrap "srun -n1 sleep 1" >/dev/null ||
        fail "the batch job failed: $(cat "$T/batch.err")"
grep -q "^pctl: job [0-9]* batch step on $node: .*(policy monitor, 1 task," "$T/batch.err" ||
        fail "no line of the batch step: $(cat "$T/batch.err")"
grep -q "^pctl: job [0-9]* step 0 on $node: .*(policy monitor, 1 task," "$T/batch.err" ||
        fail "no line of the srun step inside the batch job: $(cat "$T/batch.err")"
echo "ok: sbatch: $(tr '\n' '|' <"$T/batch.err")"

wait_no_apps
# pctld stops mid-job: both tasks finish, with one line that says why there is no summary.
srun --pctl-policy=edp -n2 sh -c 'sleep 3; echo ran' >"$T/mid.out" 2>"$T/mid.err" &
SRUN=$!
CLEANUP_PIDS="$SRUN"
for _ in $(seq 100); do
        status_json
        [ "$(json_get "$T/status.json" "len(d['apps'])")" = 2 ] && break
        sleep 0.1
done
[ "$(json_get "$T/status.json" "len(d['apps'])")" = 2 ] || fail "the mid-job test was never managed"
pctld_stop TERM
wait "$SRUN" || fail "the job failed when pctld stopped: $(cat "$T/mid.err")"
[ "$(grep -c '^ran$' "$T/mid.out")" = 2 ] || fail "the job did not run to its end: $(cat "$T/mid.out")"
grep -q "^pctl: job [0-9]* step 0 on $node: no summary: pctld on $node stopped during the job (nothing listens on $T/pctl.sock)\$" "$T/mid.err" ||
        fail "no clear line when pctld stopped: $(cat "$T/mid.err")"
[ "$(grep -c "^pctl:" "$T/mid.err")" -eq 1 ] || fail "more than one line: $(cat "$T/mid.err")"
echo "ok: pctld stopped mid-job: $(cat "$T/mid.err")"

# No pctld at all: two tasks run, the node says so once.
out=$(srun --pctl-policy=edp -n2 sh -c 'echo ran' 2>"$T/none.err") ||
        fail "a job failed without pctld: $(cat "$T/none.err")"
[ "$(echo "$out" | grep -c '^ran$')" -eq 2 ] || fail "the two tasks did not both run: $out"
grep -q "^pctl: job [0-9]* step 0: no pctld on $node (nothing listens on $T/pctl.sock); the job runs unmanaged\$" "$T/none.err" ||
        fail "no clear line without pctld: $(cat "$T/none.err")"
[ "$(grep -c "^pctl:" "$T/none.err")" -eq 1 ] || fail "not said exactly once: $(cat "$T/none.err")"
echo "ok: no pctld: $(cat "$T/none.err")"

# A pctld that accepts and never answers holds a launch for timeout_ms at most. slurmstepd
# reads plugstack.conf at each step, so the new arguments apply to the next job.
python3 - "$T/hang.sock" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(8)
held = []
end = time.time() + 60
while time.time() < end:
    s.settimeout(end - time.time())
    try:
        held.append(s.accept()[0])
    except socket.timeout:
        break
PY
HANG=$!
CLEANUP_PIDS="$HANG"
for _ in $(seq 50); do [ -S "$T/hang.sock" ] && break; sleep 0.1; done
echo "optional $BUILD_DIR/pctl_spank.so socket=$T/hang.sock timeout_ms=500" >"$PCTL_SLURM_DIR/plugstack.conf"
start=$(date +%s.%N)
out=$(srun --pctl-policy=edp -n1 sh -c 'echo ran' 2>"$T/hang.err") || fail "a job failed on a hung pctld: $(cat "$T/hang.err")"
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
[ "$out" = ran ] || fail "the job did not run: $out"
grep -q "^pctl: job [0-9]* step 0: cannot talk to pctld on $node at $T/hang.sock: Connection timed out; the job runs unmanaged\$" "$T/hang.err" ||
        fail "no clear line on a hung pctld: $(cat "$T/hang.err")"
awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "the launch took $took s with timeout_ms=500"
echo "ok: hung pctld: ${took} s, $(cat "$T/hang.err")"
kill "$HANG" 2>/dev/null

# A pctld that trickles its reply a byte at a time (issue 28: the timeout was per recv) holds
# a launch for timeout_ms in all, not per byte.
python3 - "$T/trickle.sock" <<'PY' &
import socket, sys, threading, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(8)
def drip(c):
    try:
        c.recv(4096)
        for _ in range(200):
            c.send(b" ")
            time.sleep(0.1)
    except OSError:
        pass
end = time.time() + 60
while time.time() < end:
    s.settimeout(end - time.time())
    try:
        threading.Thread(target=drip, args=(s.accept()[0],), daemon=True).start()
    except socket.timeout:
        break
PY
DRIP=$!
CLEANUP_PIDS="$DRIP"
for _ in $(seq 50); do [ -S "$T/trickle.sock" ] && break; sleep 0.1; done
echo "optional $BUILD_DIR/pctl_spank.so socket=$T/trickle.sock timeout_ms=500" >"$PCTL_SLURM_DIR/plugstack.conf"
start=$(date +%s.%N)
out=$(srun --pctl-policy=edp -n1 sh -c 'echo ran' 2>"$T/drip.err") || fail "a job failed on a trickling pctld: $(cat "$T/drip.err")"
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
grep -q "Connection timed out; the job runs unmanaged" "$T/drip.err" || fail "no clear line on a trickling pctld: $(cat "$T/drip.err")"
awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "the launch took $took s with timeout_ms=500 (20 s of trickle)"
echo "ok: trickling pctld: ${took} s, $(cat "$T/drip.err")"
kill "$DRIP" 2>/dev/null

# A pctld stalled past the plugin's timeout: the plugin says the job runs unmanaged, and when
# pctld resumes it drops the request whose client went away (issue 28: the adopt was carried
# out later, the job moved after it was told it would not be).
: >"$T/pctld.log"
pctld_start
echo "optional $BUILD_DIR/pctl_spank.so socket=$T/pctl.sock timeout_ms=500" >"$PCTL_SLURM_DIR/plugstack.conf"
kill -STOP "$PCTLD_PID"
srun --pctl-policy=monitor -n1 sh -c 'sleep 4; cat /proc/self/cpuset' >"$T/stall.out" 2>"$T/stall.err" &
SRUN=$!
CLEANUP_PIDS="$SRUN"
wait_until 20 grep -q "the job runs unmanaged" "$T/stall.err" || { kill -CONT "$PCTLD_PID"; fail "the plugin did not give up: $(cat "$T/stall.err")"; }
kill -CONT "$PCTLD_PID"
wait_until 5 grep -q 'dropped a "adopt" request of uid 0: its client went away' "$T/pctld.log" ||
        fail "pctld did not drop the stale adopt: $(tail -5 "$T/pctld.log")"
status_json
[ "$(json_get "$T/status.json" "len(d['apps'])")" = 0 ] || fail "the stale adopt was carried out: $(cat "$T/status.json")"
wait "$SRUN" || fail "the stalled job failed: $(cat "$T/stall.err")"
[ "$(cat "$T/stall.out")" = / ] || fail "the job reported unmanaged ran in '$(cat "$T/stall.out")'"
echo "ok: stalled pctld: $(cat "$T/stall.err"); the stale adopt dropped"
pctld_stop TERM

# stop leaves nothing: no daemon of the cluster, no directory.
pids=$(awk '{ print $2 }' "$PCTL_SLURM_DIR/pids")
"$SRC_DIR/scripts/slurm-local.sh" stop || fail "slurm-local.sh stop failed"
for p in $pids; do kill -0 "$p" 2>/dev/null && fail "pid $p of the cluster is still alive"; done
[ -e "$PCTL_SLURM_DIR" ] && fail "$PCTL_SLURM_DIR is still there"
echo "ok: slurm-local.sh stop left nothing"
