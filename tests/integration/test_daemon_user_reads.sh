#!/usr/bin/env bash
# What a user other than root may read from pctld, and how much they may hand over (issue 28,
# leftovers of round two). Before: the run-report request answered any user on any PID (and
# took its totals into that run's history), `pctl status` showed every user's apps to everyone,
# and one user could hand over apps without end with `pctl run`/`adopt`.
#   - report: a user reads (and completes) only the reports of their own processes; root all;
#   - status: a user sees the machine and their own apps, the others only counted;
#   - [daemon] max_user_apps caps the apps one user has handed over; the refusal names it.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root to act as nobody and for cgroup v1 cpusets"
command -v setpriv >/dev/null || skip "setpriv missing"
pctld_setup
trap pctld_cleanup EXIT
sed -i '/^\[daemon\]/a users = all\nmax_user_apps = 2' "$T/pctl.conf"
pctld_start
S=(--socket "$T/pctl.sock")
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# One request line as the given uid (0: root), the reply line on stdout.
ask() {
        local uid=$1
        shift
        local who=()
        [ "$uid" = 0 ] || who=(setpriv --reuid="$uid" --regid=65534 --clear-groups)
        "${who[@]}" /usr/bin/python3 - "$T/pctl.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
data = b""
while not data.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode().strip())
PY
}
nobody_sleep() {
        setpriv --reuid=65534 --regid=65534 --clear-groups sleep 120 >/dev/null 2>&1 &
        local pid=$!
        wait_until 5 sh -c "awk '/^Uid/ {exit \$2 != 65534}' /proc/$pid/status" || fail "nobody's sleep did not start"
        echo $pid
}

# Root's app and nobody's app, both managed.
sleep 120 &
ROOT_SLEEP=$!
NOBODY_1=$(nobody_sleep)
CLEANUP_PIDS="$ROOT_SLEEP $NOBODY_1"
"$PCTL" adopt $ROOT_SLEEP "${S[@]}" >/dev/null || fail "root's adopt refused"
as_nobody "$PCTL" adopt "$NOBODY_1" "${S[@]}" >/dev/null || fail "nobody could not adopt their own"

# report: nobody reads their own, not root's; root reads both.
r=$(ask 65534 "{\"cmd\":\"report\",\"pid\":$NOBODY_1}")
echo "$r" | grep -q '"ok":true' || fail "nobody's report of their own app: $r"
r=$(ask 65534 "{\"cmd\":\"report\",\"pid\":$ROOT_SLEEP}")
echo "$r" | grep -q "the report of pid $ROOT_SLEEP is not yours: it is uid 0's run, you are uid 65534" ||
        fail "nobody read root's report: $r"
r=$(ask 65534 "{\"cmd\":\"report\",\"pid\":$ROOT_SLEEP,\"wall_ns\":1,\"cpu_ns\":1}")
echo "$r" | grep -q "is not yours" || fail "nobody sent totals for root's run: $r"
for p in $ROOT_SLEEP "$NOBODY_1"; do
        r=$(ask 0 "{\"cmd\":\"report\",\"pid\":$p}")
        echo "$r" | grep -q '"ok":true' || fail "root's report of pid $p: $r"
done
# An app that left is still its user's: root's sleep ends, its report is kept a minute.
kill "$ROOT_SLEEP"
wait_until 10 sh -c "! \"$PCTL\" status ${S[*]} --json | grep -q '\"pid\": *$ROOT_SLEEP[,}]'" ||
        fail "root's sleep still managed after it ended"
r=$(ask 0 "{\"cmd\":\"report\",\"pid\":$ROOT_SLEEP}")
echo "$r" | grep -q '"state":"left"' || fail "root's report of its app that left: $r"
r=$(ask 65534 "{\"cmd\":\"report\",\"pid\":$ROOT_SLEEP}")
echo "$r" | grep -q "is not yours" || fail "nobody read the report of root's app that left: $r"
echo "report: own only (root: all), also after the app left"

# status: nobody sees their own app, root's counted only; root sees both.
sleep 120 &
ROOT_SLEEP=$!
CLEANUP_PIDS="$ROOT_SLEEP $NOBODY_1"
"$PCTL" adopt $ROOT_SLEEP "${S[@]}" >/dev/null || fail "root's second adopt refused"
as_nobody "$PCTL" status --json "${S[@]}" >"$T/nobody.json" || fail "nobody's status failed"
[ "$(json_get "$T/nobody.json" "sorted(a['pid'] for a in d['apps'])")" = "[$NOBODY_1]" ] ||
        fail "nobody's status shows other than their own app: $(cat "$T/nobody.json")"
[ "$(json_get "$T/nobody.json" "d['apps_of_others']")" = 1 ] || fail "root's app not counted for nobody"
as_nobody "$PCTL" status "${S[@]}" | grep -q "sleep" || fail "nobody's plain status lacks their app"
status_json
[ "$(json_get "$T/status.json" "len(d['apps'])")" = 2 ] || fail "root does not see both apps"
json_get "$T/status.json" "'apps_of_others' in d" | grep -q False || fail "root's status hides apps"
echo "status: own apps only for nobody, all for root"

# max_user_apps = 2: nobody's third is refused, naming the cap; nothing changed.
NOBODY_2=$(nobody_sleep)
NOBODY_3=$(nobody_sleep)
CLEANUP_PIDS="$ROOT_SLEEP $NOBODY_1 $NOBODY_2 $NOBODY_3"
as_nobody "$PCTL" adopt "$NOBODY_2" "${S[@]}" >/dev/null || fail "nobody's second adopt refused"
expect_exit 1 "uid 65534 has 2 apps handed over to pctld, pctl.conf's \[daemon\] max_user_apps (2)" \
        as_nobody "$PCTL" adopt "$NOBODY_3" "${S[@]}"
expect_exit 1 "max_user_apps (2)" as_nobody "$PCTL" run "${S[@]}" -- true
cgroup_of "$NOBODY_3" | grep -q "$GROUP" && fail "the refused app was moved: $(cgroup_of "$NOBODY_3")"
# Root is not capped, even for nobody's process; the cap counts only the user's own requests.
"$PCTL" adopt "$NOBODY_3" "${S[@]}" >/dev/null || fail "root could not adopt nobody's third"
# One released: room for one more.
as_nobody "$PCTL" release "$NOBODY_2" "${S[@]}" >/dev/null || fail "nobody could not release"
as_nobody "$PCTL" run --quiet "${S[@]}" -- true || fail "nobody's run refused below the cap"
"$PCTL" status "${S[@]}" >/dev/null || fail "pctld died"
echo "ok: users read their own reports and apps; max_user_apps caps what one user hands over"
