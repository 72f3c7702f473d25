#!/usr/bin/env bash
# Unprivileged users and pctld (issue 28, item 12): where pctl.conf's [daemon] users lets them
# (all, a group, none by default), a user may `pctl run`, `pctl adopt` and `pctl release` their
# own processes, never another's, and the command of `pctl run` runs as that user, never as
# root. Before: adopt and release needed root, so `pctl run` as nobody was always refused.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root to act as nobody and for cgroup v1 cpusets"
command -v setpriv >/dev/null || skip "setpriv missing"
pctld_setup
trap pctld_cleanup EXIT
printf '[policy u]\nobjective = ppw\n' >"$T/policies.d/u.conf"
pctld_start
S=(--socket "$T/pctl.sock")
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
reload() { "$PCTL" policy reload "${S[@]}" >/dev/null || fail "reload refused: $(tail -3 "$T/pctld.log")"; }
set_users() {
        sed -i '/^users = /d' "$T/pctl.conf"
        sed -i "/^\[daemon\]/a users = $1" "$T/pctl.conf"
        reload
}

# The default, none: root only, and the message names the setting.
expect_exit 1 "^pctl run: 'adopt' needs root: pctl.conf's \[daemon\] users = none" \
        as_nobody "$PCTL" run "${S[@]}" -- true
expect_exit 1 "users = none" as_nobody "$PCTL" adopt $$ "${S[@]}"

# all: nobody's pctl run works, its command runs as nobody inside pctld's cpuset.
set_users all
out=$(as_nobody "$PCTL" run --quiet "${S[@]}" -- sh -c 'id -u; id -g; cat /proc/self/cpuset') ||
        fail "nobody's pctl run failed: $out"
echo "pctl run as nobody: $(echo "$out" | tr '\n' ' ')"
[ "$(echo "$out" | sed -n 1p)" = 65534 ] || fail "the command did not run as nobody: $out"
[ "$(echo "$out" | sed -n 2p)" = 65534 ] || fail "the command did not run with nobody's group: $out"
echo "$out" | sed -n 3p | grep -q "/$GROUP/" || fail "the command did not run under pctld: $out"

# Another user's process: neither adopted nor released by nobody.
sleep 60 &
ROOT_SLEEP=$!
CLEANUP_PIDS="$ROOT_SLEEP"
expect_exit 1 "pid $ROOT_SLEEP is not yours: its uids are 0 0 0 0" as_nobody "$PCTL" adopt $ROOT_SLEEP "${S[@]}"
"$PCTL" adopt $ROOT_SLEEP "${S[@]}" >/dev/null || fail "root's adopt refused"
expect_exit 1 "is not yours" as_nobody "$PCTL" release $ROOT_SLEEP "${S[@]}"
status_json
json_get "$T/status.json" "[a['pid'] for a in d['apps']]" | grep -q "$ROOT_SLEEP" ||
        fail "nobody released root's app"

# nobody's own process: adopted and released by nobody.
setpriv --reuid=65534 --regid=65534 --clear-groups sleep 60 &
NOBODY_SLEEP=$!
CLEANUP_PIDS="$ROOT_SLEEP $NOBODY_SLEEP"
wait_until 5 sh -c "awk '/^Uid/ {exit \$2 != 65534}' /proc/$NOBODY_SLEEP/status" || fail "nobody's sleep did not start"
as_nobody "$PCTL" adopt $NOBODY_SLEEP "${S[@]}" >/dev/null || fail "nobody could not adopt their own"
as_nobody "$PCTL" release $NOBODY_SLEEP "${S[@]}" >/dev/null || fail "nobody could not release their own"

# A group: its members may, others may not.
set_users nogroup
as_nobody "$PCTL" run --quiet "${S[@]}" -- true || fail "a member of users = nogroup was refused"
set_users daemon
expect_exit 1 "needs root or group daemon" as_nobody "$PCTL" run "${S[@]}" -- true
set_users no-such-group-here
expect_exit 1 "names no group of this system" as_nobody "$PCTL" run "${S[@]}" -- true
"$PCTL" status "${S[@]}" >/dev/null || fail "pctld died"
echo "ok: users may act on their own processes only where pctl.conf lets them"
