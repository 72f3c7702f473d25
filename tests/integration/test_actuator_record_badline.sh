#!/usr/bin/env bash
# A bad line in the state record: a holder adopts an app (CPU 0, in app-PID of the test's
# group) and is SIGKILLed; one line of garbage is added to the record it left. pctld then
# starts anyway, says which line it skipped and why (file:line, in its log and in pctl
# status, human and --json), restores the app (its
# cpuset and mask) and keeps the bad line in the record, through its own stop too: the record
# is never removed or emptied while it holds something not restored.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
act=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_actuate
cs=/sys/fs/cgroup/cpuset
holder=

[ "$(id -u)" = 0 ] || skip "needs root to move other processes"
[ -w $cs/cpuset.cpus ] || skip "no writable cgroup v1 cpuset hierarchy at $cs"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs to see a pin"

pctld_setup
cleanup() {
        [ -n "$holder" ] && kill -9 "$holder" 2>/dev/null
        pctld_cleanup
}
trap cleanup EXIT

sleep 600 &
app=$!
CLEANUP_PIDS=$app
before=$(main_state $app)
"$act" --group "$GROUP" --state-dir "$T/state" --no-dvfs adopt $app --cpus 0 --hold \
        >"$T/holder.out" 2>&1 &
holder=$!
wait_until 30 grep -q holding "$T/holder.out" || fail "the holder did not adopt: $(cat "$T/holder.out")"
kill -9 $holder
wait $holder 2>/dev/null
holder=
pinned=$(main_state $app)
[ "$pinned" != "$before" ] || fail "the holder left the app as it was ($before): nothing to restore"
rec=$T/state/actuators.state
echo "task garbage" >>"$rec"
bad=$(wc -l <"$rec")
echo "record (line $bad is the bad one):"
cat "$rec"

pctld_start
grep -q "actuators.state:$bad: .*skipped" "$T/pctld.log" ||
        fail "pctld did not name the skipped line $bad: $(cat "$T/pctld.log")"
grep "skipped" "$T/pctld.log" | head -2
# An operator sees it in pctl status too, as long as pctld runs, by its text (its line number
# moves with every commit of the record).
"$PCTL" status --socket "$T/pctl.sock" >"$T/status.txt" || fail "pctl status failed"
grep -q "^record .*actuators.state: 'task garbage': .*kept in the record" "$T/status.txt" ||
        fail "pctl status does not show the skipped line: $(cat "$T/status.txt")"
grep "^record" "$T/status.txt"
status_json
[ "$(json_get "$T/status.json" "d['state_record']['skipped'][0]['text']")" = "task garbage" ] ||
        fail "pctl status --json does not show it: $(json_get "$T/status.json" "d.get('state_record')")"
# Another user learns that lines were skipped, not what they say: they name other users'
# cgroups and processes.
if command -v setpriv >/dev/null; then
        chmod o+x "$T"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$PCTL" status --json \
                --socket "$T/pctl.sock" >"$T/nobody.json" || fail "nobody's status failed"
        [ "$(json_get "$T/nobody.json" "d['state_record']['skipped_lines']")" = 1 ] ||
                fail "nobody is not told of the skipped line: $(cat "$T/nobody.json")"
        grep -q "task garbage" "$T/nobody.json" && fail "nobody reads the skipped line's text"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$PCTL" status \
                --socket "$T/pctl.sock" >"$T/nobody.txt" || fail "nobody's status failed"
        grep -q "^record .*actuators.state: 1 line skipped at start" "$T/nobody.txt" ||
                fail "nobody's pctl status does not count it: $(cat "$T/nobody.txt")"
        echo "ok: another user sees that 1 line was skipped, not its text"
fi
now=$(main_state $app)
[ "$now" = "$before" ] || fail "the app is at '$now', not back at '$before'"
echo "ok: the app is back at '$before'"
[ -e "$cs/$GROUP/app-$app" ] && fail "app-$app was left behind"
grep -qx "task garbage" "$rec" || fail "the record lost the bad line: $(cat "$rec" 2>&1)"
pctld_stop TERM
[ "$PCTLD_RC" = 0 ] || fail "pctld exited $PCTLD_RC"
grep -qx "task garbage" "$rec" || fail "pctld's stop emptied the record: $(cat "$rec" 2>&1)"
echo "ok: the record keeps the line it could not read: $(tr '\n' '|' <"$rec")"
echo PASS
