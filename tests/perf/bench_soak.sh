#!/usr/bin/env bash
# Churn and soak against one pctld (software platform, its own socket and cgroup group):
# 100 000 control connections (status, malformed, half-written, held open) and 1000 `pctl
# run` of short processes. pctld must answer throughout; its RSS and open fds must end near
# where they started, and no cpuset group may be left. Prints both figures; fails past the
# guards. Everything goes over pctld's own unix socket on this machine.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
CONNECTIONS=${SOAK_CONNECTIONS:-100000}
RUNS=${SOAK_RUNS:-1000}
RSS_GUARD_KB=8192
pctld_setup
trap pctld_cleanup EXIT
pctld_start

rss_kb() { awk '/^VmRSS/ {print $2}' /proc/"$PCTLD_PID"/status; }
fds() { ls /proc/"$PCTLD_PID"/fd | wc -l; }
"$PCTL" status --socket "$T/pctl.sock" >/dev/null || fail "no status at start"
rss0=$(rss_kb)
fd0=$(fds)

# The connections: each kind in turn; every 1000th connection is a status that must be
# answered "ok" while up to 8 others are held open without a word (well below pctld's limit of
# 16 per user, which test_daemon_control_flood checks).
python3 - "$T/pctl.sock" "$CONNECTIONS" >"$T/conn.out" <<'PY' || fail "connections: $(cat "$T/conn.out")"
import socket, sys, time
path, total = sys.argv[1], int(sys.argv[2])

def call(payload, read=True):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    if payload:
        s.sendall(payload)
    data = b""
    if read:
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    s.close()
    return data

held, answered, t0 = [], 0, time.monotonic()
for i in range(total):
    kind = i % 10
    if i % 1000 == 0:
        r = call(b'{"cmd":"status"}\n')
        if b'"ok":true' not in r:
            sys.exit("connection %d: status not answered while %d are held: %r" % (i, len(held), r[:200]))
        answered += 1
    elif kind < 4:
        if b'"ok":true' not in call(b'{"cmd":"status"}\n'):
            sys.exit("connection %d: status not answered" % i)
    elif kind < 7:
        if b'"ok":false' not in call(b'{"cmd": "status"\n'):
            sys.exit("connection %d: malformed request not answered" % i)
    elif kind < 9:
        call(b'{"cmd":"sta', read=False)
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        held.append(s)
        if len(held) >= 8:
            for h in held:
                h.close()
            held = []
for h in held:
    h.close()
dt = time.monotonic() - t0
print("%d connections in %.1f s (%.0f per s), %d status checks answered" % (total, dt, total / dt, answered))
PY
conn=$(cat "$T/conn.out")

start=$(date +%s%N)
for i in $(seq "$RUNS"); do
        "$PCTL" run --socket "$T/pctl.sock" -- true || fail "pctl run $i failed"
done
run_s=$(awk "BEGIN {print ($(date +%s%N) - $start) / 1e9}")
# Exited apps are released at the next samples; half-written connections time out.
for _ in $(seq 100); do
        [ "$(json_get <("$PCTL" status --socket "$T/pctl.sock" --json) "len(d['apps'])")" = 0 ] && break
        sleep 0.1
done
sleep 6
"$PCTL" status --socket "$T/pctl.sock" >/dev/null || fail "no status after the soak"
rss1=$(rss_kb)
fd1=$(fds)
left=$(find /sys/fs/cgroup/cpuset/"$GROUP" -mindepth 1 -type d 2>/dev/null | wc -l)
echo "bench: soak: $conn; $RUNS pctl run in ${run_s} s; pctld RSS ${rss0} -> ${rss1} kB" \
        "(guard: growth <= ${RSS_GUARD_KB} kB), fds ${fd0} -> ${fd1} (guard: equal)," \
        "cpuset groups left: ${left} (guard: 0) [all measured]"
[ $((rss1 - rss0)) -le $RSS_GUARD_KB ] || fail "RSS grew by $((rss1 - rss0)) kB"
[ "$fd1" -eq "$fd0" ] || fail "fds went from $fd0 to $fd1"
[ "$left" -eq 0 ] || fail "cpuset groups left: $(find /sys/fs/cgroup/cpuset/"$GROUP" -mindepth 1 -type d)"
grep -q "released .*: it exited" "$T/pctld.log" || fail "no pctl run was seen through: $(tail -5 "$T/pctld.log")"
echo PASS
