#!/usr/bin/env bash
# The job tag (the Slurm plugin sends its job id with adopt): `pctl adopt --job` and a raw
# "job" member tag the app, `pctl status` shows it (text and --json, null without one) and so
# does the run report; a bad tag is refused with a clear message and changes nothing.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
pctld_setup
trap pctld_cleanup EXIT
pctld_start
sock="$T/pctl.sock"

sleep 60 &
A=$!
sleep 60 &
B=$!
CLEANUP_PIDS="$A $B"

# Bad tags on the command line: usage errors, nothing sent.
expect_exit 2 "is not a job tag" "$PCTL" adopt "$A" --job "12 3" --socket "$sock"
expect_exit 2 "is not a job tag" "$PCTL" adopt "$A" --job "" --socket "$sock"
expect_exit 2 "is not a job tag" "$PCTL" adopt "$A" --job "$(printf 'x%.0s' $(seq 65))" --socket "$sock"
expect_exit 2 "--job goes with adopt only" "$PCTL" release "$A" --job 1 --socket "$sock"

# Bad tags straight on the socket: pctld refuses them before adopting.
raw() { python3 - "$sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.decode().strip())
PY
}
out=$(raw "{\"cmd\":\"adopt\",\"pid\":$A,\"job\":\"a\\u001b[2Jb\"}")
echo "$out" | grep -q '"ok":false' || fail "a job tag with an escape was accepted: $out"
echo "$out" | grep -q 'is not a job tag' || fail "no clear message: $out"
echo "$out" | grep -q $'\x1b' && fail "the reply carries the raw escape: $out"
echo "ok: raw escape refused: $out"
out=$(raw "{\"cmd\":\"adopt\",\"pid\":$A,\"job\":17}")
echo "$out" | grep -q '"job\\" must be a string' || fail "a numeric job tag: $out"
echo "ok: numeric tag refused: $out"
status_json
[ "$(json_get "$T/status.json" "len(d['apps'])")" = 0 ] || fail "a refused adopt changed something"

# Good: one tagged app, one without.
"$PCTL" adopt "$A" --job 4242.0 --socket "$sock" || fail "adopt --job 4242.0 failed"
"$PCTL" adopt "$B" --socket "$sock" || fail "adopt without --job failed"
status_json
[ "$(json_get "$T/status.json" "{a['pid']: a['job'] for a in d['apps']}[$A]")" = 4242.0 ] ||
        fail "status --json does not show the job: $(cat "$T/status.json")"
[ "$(json_get "$T/status.json" "{a['pid']: a['job'] for a in d['apps']}[$B]")" = None ] ||
        fail "an app without a job is not null: $(cat "$T/status.json")"
"$PCTL" status --socket "$sock" >"$T/status.txt"
grep -Eq "^ +job 4242\.0$" "$T/status.txt" || fail "status text does not show the job: $(cat "$T/status.txt")"
[ "$(grep -c "job " "$T/status.txt")" = 1 ] || fail "status text shows a job for the untagged app"
echo "ok: status shows job 4242.0 and null for the other"

# The report keeps the tag after the app leaves.
kill "$A"
wait "$A" 2>/dev/null
for _ in $(seq 30); do
        out=$(raw "{\"cmd\":\"report\",\"pid\":$A}")
        echo "$out" | grep -q '"state":"left"' && break
        sleep 0.1
done
echo "$out" | grep -q '"job":"4242.0"' || fail "the report lost the job: $out"
echo "ok: the report of the app that left says job 4242.0"
