#!/usr/bin/env bash
# A reload that removes a policy releases the apps its rules took, as they were before pctld
# touched them: nothing selects them any more, and the default policy must not start moving a
# process only that policy asked for. An app handed over by name (pctl adopt --policy) goes on
# under the default policy. Before: every app of a removed policy went on under the default,
# so a monitor rule's services were given CPUs by weight after the rule was removed.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs to see a pin"
pctld_setup
trap pctld_cleanup EXIT
S=(--socket "$T/pctl.sock")
printf '[policy gone]\nobjective = performance\nmin_cores = 1\nmax_cores = 1\nmatch_comm = pctlgone\n' \
        >"$T/policies.d/gone.conf"
cp "$(command -v sleep)" "$T/pctlgone"
pctld_start
managed() { # managed PID: 0 when pctld manages it
        status_json
        [ "$(json_get "$T/status.json" "$1 in [a['pid'] for a in d['apps']]")" = True ]
}
policy_of() {
        status_json
        json_get "$T/status.json" "[a['policy'] for a in d['apps'] if a['pid'] == $1][0]"
}

sleep 120 &
BYNAME=$!
before=$(main_state $BYNAME)
"$T/pctlgone" 120 &
BYRULE=$!
CLEANUP_PIDS="$BYNAME $BYRULE"
rule_before=$(main_state $BYRULE)
wait_until 10 managed $BYRULE || fail "the rule did not adopt pid $BYRULE"
"$PCTL" adopt --policy gone $BYNAME "${S[@]}" >/dev/null || fail "adopt --policy gone refused"
pinned() { [ "$(main_state "$1")" != "$2" ]; }
wait_until 10 pinned $BYRULE "$rule_before" || fail "the rule's app was never pinned: $(main_state $BYRULE)"

rm "$T/policies.d/gone.conf"
"$PCTL" policy reload "${S[@]}" >/dev/null || fail "policy reload failed"
managed $BYRULE && fail "the rule's app is still managed after its policy was removed"
grep -q "released pctlgone (pid $BYRULE): its policy is gone" "$T/pctld.log" ||
        fail "the release is not logged: $(grep pctlgone "$T/pctld.log")"
[ "$(main_state $BYRULE)" = "$rule_before" ] ||
        fail "the rule's app was left at '$(main_state $BYRULE)', not back at '$rule_before'"
echo "ok: the rule's app released and back at '$rule_before'"
[ "$(policy_of $BYNAME)" = edp ] || fail "the app adopted by name is not under the default: $(policy_of $BYNAME)"
echo "ok: the app handed over by name goes on under the default policy"
