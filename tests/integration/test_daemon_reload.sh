#!/usr/bin/env bash
# A reload applies every key it can (default_policy, reserved_cpus: apps move off the newly
# reserved CPU) and refuses, naming the key, what needs a restart or cannot work; a refused
# reload changes nothing. A default_policy no policy answers to is refused by `policy check`
# and at start.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs to reserve one"
pctld_setup
trap pctld_cleanup EXIT
S="--socket $T/pctl.sock"
cp "$T/pctl.conf" "$T/pctl.conf.orig"

# conf "KEY = VALUE"...: the original configuration with these keys of [daemon] set.
conf() {
        local drop=(-e '') kv
        for kv in "$@"; do drop+=(-e "/^${kv%% =*}[ =]/d"); done
        { sed -n '1,/^\[power\]/p' "$T/pctl.conf.orig" | sed '$d' | sed "${drop[@]}"
          printf '%s\n' "$@"
          sed -n '/^\[power\]/,$p' "$T/pctl.conf.orig"; } >"$T/pctl.conf"
}

# adopt_new: a new sleeping process, adopted without --policy, in $NEW.
adopt_new() {
        sleep 30 &
        NEW=$!
        CLEANUP_PIDS="${CLEANUP_PIDS:-} $NEW"
        expect_exit 0 "" "$PCTL" adopt "$NEW" $S
}
# policy_of PID: the policy status gives the app.
policy_of() {
        status_json
        json_get "$T/status.json" "[a['policy'] for a in d['apps'] if a['pid'] == $1][0]"
}

# A default policy nobody has: refused by check and at start.
conf "default_policy = nosuch"
expect_exit 2 "default_policy: 'nosuch' is neither a policy in $T/policies.d nor a built-in" \
        "$PCTL" policy check "$T/pctl.conf"
expect_exit 2 "default_policy: 'nosuch'" "$PCTLD" --config "$T/pctl.conf" --foreground
cp "$T/pctl.conf.orig" "$T/pctl.conf"
pctld_start

adopt_new
APP=$NEW
[ "$(policy_of "$APP")" = edp ] || fail "the default was not edp"

# Every CPU but 0 reserved (CPU 1 on the 2-CPU development machines, 1-3 in the VM test).
LAST=$(($(nproc) - 1))
RESERVED=1-$LAST
# default_policy and reserved_cpus apply at once.
conf "default_policy = ppw" "reserved_cpus = $RESERVED"
expect_exit 0 "reloaded" "$PCTL" policy reload $S
status_json
[ "$(json_get "$T/status.json" "d['managed_cpus']")" = 0 ] ||
        fail "reserved_cpus not applied: managed $(json_get "$T/status.json" "d['managed_cpus']")"
adopt_new
APP2=$NEW
[ "$(policy_of "$APP2")" = ppw ] || fail "the new default_policy was not applied: $(cat "$T/status.json")"
for _ in $(seq 40); do
        [ "$(allowed_cpus "$APP")" = 0 ] && [ "$(allowed_cpus "$APP2")" = 0 ] && break
        sleep 0.1
done
[ "$(allowed_cpus "$APP")" = 0 ] || fail "app still on $(allowed_cpus "$APP") after CPUs $RESERVED were reserved"
[ "$(allowed_cpus "$APP2")" = 0 ] || fail "new app on $(allowed_cpus "$APP2"), not off the reserved CPU"
grep -q "managing CPUs 0 from now on" "$T/pctld.log" || fail "the change of CPUs was not logged"

# Refused reloads name the reason and change nothing.
conf "default_policy = ppw" "reserved_cpus = 0-$LAST"
expect_exit 1 "reserved_cpus leaves no CPU to manage; keeping the running configuration" \
        "$PCTL" policy reload $S
conf "default_policy = nosuch" "reserved_cpus = $RESERVED"
expect_exit 1 "'nosuch' is neither a policy" "$PCTL" policy reload $S
conf "default_policy = ppw" "reserved_cpus = $RESERVED" "cgroup_group = other-$$" "socket = $T/other.sock"
expect_exit 1 "socket, cgroup_group changed in $T/pctl.conf: that needs a restart of pctld" \
        "$PCTL" policy reload $S
# [power] is compared as a model: moved lines are no change, another figure is.
conf "default_policy = ppw" "reserved_cpus = $RESERVED"
sed -i 's/^static_w = 20$/static_w = 25/' "$T/pctl.conf"
expect_exit 1 "^pctl policy reload: \[power\] changed in" "$PCTL" policy reload $S
conf "default_policy = ppw" "reserved_cpus = $RESERVED" "cgroup_group = other-$$" "socket = $T/other.sock"
# SIGHUP takes the same path and logs the refusal.
kill -HUP "$PCTLD_PID"
for _ in $(seq 30); do grep -q "reload refused: socket, cgroup_group changed" "$T/pctld.log" && break; sleep 0.1; done
grep -q "reload refused: socket, cgroup_group changed" "$T/pctld.log" || fail "SIGHUP refusal not logged"
status_json
[ "$(json_get "$T/status.json" "d['managed_cpus']")" = 0 ] || fail "a refused reload changed the CPUs"
adopt_new
[ "$(policy_of "$NEW")" = ppw ] || fail "a refused reload changed the default policy"
echo PASS
