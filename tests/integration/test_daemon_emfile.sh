#!/usr/bin/env bash
# Out of descriptors (issue 28, item 9): with pctld at its RLIMIT_NOFILE, a pending connection
# cannot be accepted. Before, the listening socket stayed readable and the loop spun at 100 %
# of a CPU, logging every pass (64 MB of log in 2 s). Now accepting pauses (a back-off),
# the log says so once, and pctld answers again once descriptors are free.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets and prlimit on pctld"
command -v prlimit >/dev/null || skip "prlimit missing"
pctld_setup
trap pctld_cleanup EXIT
printf '[policy e]\nobjective = ppw\n' >"$T/policies.d/e.conf"
# Metrics too: its server runs in pctld and must not spin either.
PORT=$(python3 "$SRC_DIR/tests/integration/metrics_client.py" free_port)
sed -i "/^\[daemon\]/a metrics_listen = 127.0.0.1:$PORT" "$T/pctl.conf"
pctld_start

cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$PCTLD_PID/stat"; }
n_fds=$(ls "/proc/$PCTLD_PID/fd" | wc -l)
HELD=3
HARD=$(prlimit --pid "$PCTLD_PID" --nofile --output HARD --noheadings)
SOFT=$(prlimit --pid "$PCTLD_PID" --nofile --output SOFT --noheadings)
prlimit --pid "$PCTLD_PID" --nofile=$((n_fds + HELD)):"$HARD" || fail "prlimit failed"
# HELD connections take the last descriptors (half a request each: pctld holds them until its
# 5 s deadline); more wait in the backlog, which pctld cannot accept.
python3 - "$T/pctl.sock" "$HELD" "$T/held" "$PORT" <<'PY' &
import socket, sys, time, os
path, held, flag, port = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
socks = []
for i in range(held + 6):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.send(b'{"cmd":')
    socks.append(s)
time.sleep(0.3)
for i in range(4):
    s = socket.create_connection(("127.0.0.1", port))
    s.send(b"GET /metrics HTTP/1.1\r\n")
    socks.append(s)
open(flag, "w").close()
time.sleep(4)
PY
HOLDER=$!
CLEANUP_PIDS=$HOLDER
wait_until 5 test -e "$T/held" || fail "the connections were not made"
sleep 0.3
lines0=$(grep -c "accept" "$T/pctld.log")
t0=$(cpu_ticks)
sleep 3
t1=$(cpu_ticks)
lines1=$(grep -c "accept" "$T/pctld.log")
HZ=$(getconf CLK_TCK)
cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz / 3 }')
echo "pctld at its descriptor limit for 3 s: $cpu CPUs, $((lines1)) log lines about accept, log $(stat -c %s "$T/pctld.log") bytes"
grep "accept" "$T/pctld.log" | head -3
awk -v c="$cpu" 'BEGIN { exit !(c < 0.3) }' || fail "pctld spun at $cpu CPUs while out of descriptors"
[ "$lines1" -le 2 ] || fail "$lines1 log lines about accept (rate limit: one per server a minute)"
grep -q "control: cannot accept connections" "$T/pctld.log" || fail "the control socket said nothing"
grep -q "metrics 127.0.0.1:$PORT: cannot accept connections" "$T/pctld.log" || fail "metrics said nothing"
wait "$HOLDER"
prlimit --pid "$PCTLD_PID" --nofile="$SOFT":"$HARD" || fail "cannot give pctld its descriptors back"
wait_until 5 "$PCTL" status --socket "$T/pctl.sock" >/dev/null || fail "pctld did not answer again"
wait_until 5 python3 "$SRC_DIR/tests/integration/metrics_client.py" get "$PORT" >/dev/null 2>&1 ||
        fail "metrics did not answer again: $(python3 "$SRC_DIR/tests/integration/metrics_client.py" get "$PORT" 2>&1 | head -3)"
echo "ok: out of descriptors, pctld backs off, logs once and recovers"
