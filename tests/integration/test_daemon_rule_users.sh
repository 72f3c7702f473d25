#!/usr/bin/env bash
# Rules and users (issue 28, item 1): a rule adopts only the processes of the users it names
# (match_user), else root's and those pctl.conf's [daemon] users lets in; a policy's max_apps
# and [daemon] max_rule_apps cap what rules adopt, and each refusal is logged with its reason.
# Before: `match_comm = pbench` adopted any user's process named so (200-300 of nobody's).
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root to act as nobody and for cgroup v1 cpusets"
command -v setpriv >/dev/null || skip "setpriv missing"
pctld_setup
trap pctld_cleanup EXIT
sed -i '/^\[daemon\]/a max_rule_apps = 5' "$T/pctl.conf"
cat >"$T/policies.d/rules.conf" <<'POL'
[policy byname]
objective = monitor
match_comm = pctlrule
max_apps = 3

[policy fornobody]
objective = monitor
match_comm = pctlnob
match_user = nobody
POL
cp "$(command -v sleep)" "$T/pctlrule"
cp "$(command -v sleep)" "$T/pctlnob"
pctld_start
PIDS=""
start() { # start USER NAME COUNT
        local i
        for i in $(seq "$3"); do
                if [ "$1" = root ]; then
                        "$T/$2" 120 &
                else
                        setpriv --reuid=65534 --regid=65534 --clear-groups "$T/$2" 120 &
                fi
                PIDS="$PIDS $!"
        done
        CLEANUP_PIDS=$PIDS
}
managed() { # managed POLICY: how many apps it manages
        status_json
        json_get "$T/status.json" "sum(1 for a in d['apps'] if a['policy'] == '$1')"
}
count_is() { [ "$(managed "$1")" = "$2" ]; }
settle() { sleep 1.5; } # a scan every interval (100 ms): 15 of them

start nobody pctlrule 4
settle
[ "$(managed byname)" = 0 ] || fail "a rule without match_user adopted nobody's processes"
grep -q "rule of policy byname matched pctlrule (pid [0-9]*), not adopted: uid 65534 is not root, the policy has no match_user, and pctl.conf's \[daemon\] users = none does not let that user in" "$T/pctld.log" ||
        fail "no refusal with its reason in the log: $(grep 'rule of' "$T/pctld.log")"

start nobody pctlnob 1
wait_until 5 count_is fornobody 1 || fail "the rule naming nobody did not adopt nobody's process"

start root pctlrule 5
wait_until 5 count_is byname 3 || fail "root's processes: $(managed byname) adopted, not 3"
settle
[ "$(managed byname)" = 3 ] || fail "past the policy's max_apps: $(managed byname)"
grep -q "not adopted: the policy's rules have adopted 3 apps, its max_apps" "$T/pctld.log" ||
        fail "no refusal for max_apps in the log"

start nobody pctlnob 2
wait_until 5 count_is fornobody 2 || fail "the second of nobody's was not adopted"
settle
[ "$(managed fornobody)" = 2 ] || fail "past max_rule_apps: $(managed fornobody) of fornobody"
# The log is rate-limited (5 a minute): the refusal for the global cap may be held back.
n=$(grep -c "rule of policy" "$T/pctld.log")
echo "refusals logged: $n"
[ "$n" -le 5 ] || fail "$n refusals logged in a minute (the limit is 5)"
echo "ok: rules adopt only the users they may, within their caps"
