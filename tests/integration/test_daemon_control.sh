#!/usr/bin/env bash
# pctld's life cycle as systemd sees it (READY=1, STATUS=, RELOADING=1, STOPPING=1 on a
# NOTIFY_SOCKET of our own), SIGHUP reload refusing a bad policy set and keeping the last
# good one, and the control socket surviving malformed, oversized and unknown requests.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
pctld_setup
trap pctld_cleanup EXIT
printf '[policy good]\nobjective = ppw\n' >"$T/policies.d/good.conf"

# A datagram socket that records what pctld tells systemd.
python3 - "$T/notify" "$T/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "a", buffering=1) as log:
    try:
        while True:
            log.write(s.recv(4096).decode() + "\n")
    except socket.timeout:
        pass
PY
LISTENER=$!
CLEANUP_PIDS="$LISTENER"
for _ in $(seq 50); do [ -S "$T/notify" ] && break; sleep 0.1; done
# A corrupt calibration is reported with file:line, and pctld runs on the defaults.
printf '[estimator]\nipc1 = fast\n' >"$T/platform.ini"
export NOTIFY_SOCKET="$T/notify"
pctld_start
unset NOTIFY_SOCKET
for _ in $(seq 30); do grep -q "READY=1" "$T/notify.log" && break; sleep 0.1; done
grep -q "READY=1" "$T/notify.log" || fail "no READY=1"
grep -q "^STATUS=.*apps\? managed" "$T/notify.log" || fail "no STATUS= summary"
grep -q "ignoring the calibration: .*platform.ini:2" "$T/pctld.log" || fail "corrupt platform.ini not reported"
status_json
json_get "$T/status.json" "d['calibration']" | grep -q "^ignored: " || fail "status does not say the calibration was ignored"
# The topology the allocator places by: the kernel's packages, as pctl sensors shows them.
"$PCTL" sensors --json >"$T/sensors.json" || fail "pctl sensors --json"
[ "$(json_get "$T/status.json" "d['topology']")" = "$(json_get "$T/sensors.json" "d['topology']")" ] ||
        fail "status topology $(json_get "$T/status.json" "d['topology']") is not pctl sensors' $(json_get "$T/sensors.json" "d['topology']")"
[ "$(json_get "$T/status.json" "d['topology']['n_packages']")" -eq \
        "$(cat /sys/devices/system/cpu/cpu*/topology/physical_package_id | sort -u | wc -l)" ] ||
        fail "status topology does not have the kernel's packages"
echo "ok: status topology $(json_get "$T/status.json" "d['topology']")"

# A bad policy set at reload is refused and the last good one stays.
printf '[policy broken]\nobjective = fastest\n' >"$T/policies.d/zz-bad.conf"
expect_exit 1 "keeping the last good set" "$PCTL" policy reload --socket "$T/pctl.sock"
grep -q "zz-bad.conf:2" "$T/pctld.log" || fail "pctld did not log file:line of the bad policy"
rm "$T/policies.d/zz-bad.conf"
kill -HUP "$PCTLD_PID"
for _ in $(seq 30); do grep -q "RELOADING=1" "$T/notify.log" && break; sleep 0.1; done
grep -q "RELOADING=1" "$T/notify.log" || fail "no RELOADING=1 on SIGHUP"
"$PCTL" policy reload --socket "$T/pctl.sock" >/dev/null || fail "a good reload was refused"

# The control socket: malformed, unknown, oversized; the daemon lives on.
reply() { python3 - "$T/pctl.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
try:
    s.sendall(sys.argv[2].encode() + b"\n")
except BrokenPipeError:
    pass
data = b""
while True:
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:
        break
    if not chunk:
        break
    data += chunk
print(data.decode())
PY
}
reply '{"cmd": "status"' | grep -q '"ok":false.*malformed' || fail "malformed request not answered"
reply '{"cmd": "format-disk"}' | grep -q 'unknown command' || fail "unknown command not answered"
reply '{"cmd": "adopt", "pid": "x"}' | grep -q '"pid\\" must be' || fail "bad pid not answered"
reply "{\"cmd\": \"status\", \"pad\": \"$(head -c 70000 /dev/zero | tr '\0' a)\"}" | grep -q 'larger than' ||
        fail "oversized request not answered"
# Issue 19: an empty line is answered as pctld(8) says; a member of the wrong type is refused,
# not replaced by a default (a numeric policy once adopted the shell under the default policy);
# bytes from the request come back escaped, never raw.
expect_reply() { # REQUEST EXPECTED-LINE
        local got
        got=$(reply "$1")
        [ "$got" = "$2" ] || fail "request '$1' got '$got', not '$2'"
}
expect_reply '' '{"ok":false,"error":"empty request: expected a JSON object on one line, such as {\"cmd\":\"status\"}"}'
expect_reply "{\"cmd\":\"adopt\",\"pid\":$$,\"policy\":5}" \
        '{"ok":false,"error":"\"policy\" must be a string, not a number"}'
expect_reply "{\"cmd\":\"adopt\",\"pid\":$$,\"policy\":[\"edp\"]}" \
        '{"ok":false,"error":"\"policy\" must be a string, not an array"}'
expect_reply '{"cmd":"adopt","pid":"1"}' '{"ok":false,"error":"\"pid\" must be an integer, not a string"}'
expect_reply "{\"cmd\":\"adopt\",\"pid\":$$,\"policy\":\"ed\\u0007p\\u001b[2J\"}" \
        '{"ok":false,"error":"\"policy\": '"'"'ed\\x07p\\x1b[2J'"'"' is not a policy name"}'
expect_reply '{"cmd":"st\u0000atus\u007f"}' \
        '{"ok":false,"error":"malformed request: \"cmd\" must be a string without NUL bytes"}'
expect_reply '{"cmd":"format\u007f\u0008disk"}' '{"ok":false,"error":"unknown command \"format\\x7f\\x08disk\""}'
# A report's totals (what pctl run measured of its command) come together, as nanoseconds.
expect_reply '{"cmd":"report","pid":1,"wall_ns":5}' \
        '{"ok":false,"error":"\"wall_ns\" and \"cpu_ns\" come together (got only \"wall_ns\")"}'
expect_reply '{"cmd":"report","pid":1,"wall_ns":-1,"cpu_ns":1}' \
        '{"ok":false,"error":"\"wall_ns\" must be an integer 0..353894400000000000"}'
expect_reply '{"cmd":"report","pid":1,"wall_ns":1,"cpu_ns":"2"}' \
        '{"ok":false,"error":"\"cpu_ns\" must be an integer, not a string"}'
expect_reply '{"cmd":"report","pid":1,"wall_ns":1,"cpu_ns":2}' \
        '{"ok":false,"error":"pid 1 is not managed and did not leave in the last 60 s"}'
status_json
json_get "$T/status.json" "len(d['apps'])" | grep -qx 0 || fail "a refused adopt adopted something"
! grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$T/pctld.log" || fail "raw control bytes in pctld's log"
# Every refusal exits 1 with the daemon's message (a double free once aborted the client
# with 134 after printing it); a bad command line exits 2.
expect_exit 2 "not a process id" "$PCTL" adopt 999999999 --socket "$T/pctl.sock"
expect_exit 1 "no process with pid 4000000" "$PCTL" adopt 4000000 --socket "$T/pctl.sock"
expect_exit 1 "not managed" "$PCTL" release 1 --socket "$T/pctl.sock"
expect_exit 1 "needs root" setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$PCTL" adopt $$ --socket "$T/pctl.sock"
expect_exit 1 "needs root" setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$PCTL" release $$ --socket "$T/pctl.sock"
expect_exit 1 "needs root" setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$PCTL" policy reload --socket "$T/pctl.sock"
expect_exit 1 "^pctl run: .*needs root" setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$PCTL" run --socket "$T/pctl.sock" -- true
# pctl run sends an adopt; its refusals still name the command the user typed.
expect_exit 1 "^pctl run: no policy named 'nosuch'" "$PCTL" run --policy nosuch --socket "$T/pctl.sock" -- true
"$PCTL" status --socket "$T/pctl.sock" >/dev/null || fail "pctld died on bad requests"

pctld_stop TERM
[ "$PCTLD_RC" -eq 0 ] || fail "pctld exited $PCTLD_RC on SIGTERM"
for _ in $(seq 30); do grep -q "STOPPING=1" "$T/notify.log" && break; sleep 0.1; done
grep -q "STOPPING=1" "$T/notify.log" || fail "no STOPPING=1"
[ ! -e "$T/pctl.sock" ] || fail "the socket file was left behind"
echo "ok: notify, reload, control socket"

# Socket activation: systemd passes a listening socket and pctld uses it instead of its own.
if command -v systemd-socket-activate >/dev/null; then
        systemd-socket-activate -l "$T/activated.sock" "$PCTLD" --config "$T/pctl.conf" --foreground \
                >>"$T/pctld.log" 2>&1 &
        PCTLD_PID=$!
        for _ in $(seq 50); do [ -S "$T/activated.sock" ] && break; sleep 0.1; done
        "$PCTL" status --socket "$T/activated.sock" >/dev/null || fail "no status over the activated socket"
        [ ! -e "$T/pctl.sock" ] || fail "pctld made its own socket although one was passed"
        pctld_stop TERM
        echo "ok: socket activation"
else
        echo "note: systemd-socket-activate missing, socket activation not tested"
fi
