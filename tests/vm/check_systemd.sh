#!/bin/bash
# cgroup v2 the systemd way, under the package's pctld in the booted Debian VM: no app ever
# leaves its own unit, and nothing pctld does to an app survives pctld.
#  - pctl run: the command gets a scope of its own under pctl.slice, whose
#    cpuset.cpus.effective follows the allocator and is what `pctl status` says;
#  - a service (MemoryMax=300M) adopted by hand keeps ControlGroup, MainPID and MemoryMax while
#    its AllowedCPUs= (and so its CPUs) change;
#  - systemctl restart, SIGKILL and a watchdog kill of pctld: both apps live on in their units
#    and the next pctld gives every unit its AllowedCPUs= back (documented: it restores, and
#    only rules adopt again); systemctl stop: the same, by the stopping pctld itself;
#  - a service a monitor rule selects (as sshd, cron) keeps its cgroup and CPUs;
#  - bad input: a process in another cgroup namespace, a unit that refuses AllowedCPUs=, and
#    systemd not answering on D-Bus: exit 1, a clear message, nothing changed.
set -u
. "$TEST_LIB"
CG=/sys/fs/cgroup
ALL=$(cat /sys/devices/system/cpu/online)
SCOPE_PID= DEMO_PID=
cleanup() {
        [ -n "${DBUS_PID:-}" ] && kill -CONT "$DBUS_PID" 2>/dev/null
        [ -n "$SCOPE_PID" ] && kill "$SCOPE_PID" 2>/dev/null
        [ -n "${RUN_PID:-}" ] && wait "$RUN_PID" 2>/dev/null
        for u in demo fakecron narrow; do systemctl stop "$u" 2>/dev/null; systemctl reset-failed "$u" 2>/dev/null; done
        [ -n "${NS_PID:-}" ] && kill "$NS_PID" 2>/dev/null
        rm -f /etc/pctl/policies.d/50-vmcheck.conf
        [ -e /etc/pctl/10-edp.conf.vmcheck ] && mv /etc/pctl/10-edp.conf.vmcheck /etc/pctl/policies.d/10-edp.conf
        systemctl restart pctld
}
trap cleanup EXIT

# holds 'SHELL TEST': for wait_until, which runs its command again and again; the test is
# evaluated each time (a "$(...)" in wait_until's own arguments would be expanded once).
holds() { eval "$1"; }
# Names and reads.
prop() { systemctl show -p "$2" --value "$1"; }
cg_of() { sed -n 's/^0:://p' "/proc/$1/cgroup"; }
# eff CGROUP: its cpuset.cpus.effective; a group without cpuset settings has no such file
# (systemd enables the controller only where a unit sets CPUs): its nearest ancestor's.
eff() {
        local d="$CG$1"
        while [ ! -e "$d/cpuset.cpus.effective" ] && [ "$d" != "$CG" ]; do d=${d%/*}; done
        cat "$d/cpuset.cpus.effective"
}
cpus_of() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$1/status"; }
count() { python3 -c 'import sys
n=0
for r in sys.argv[1].split(","):
    a,_,b=r.partition("-"); n+=int(b or a)-int(a)+1
print(n)' "$1"; }
status_cpus() { # the CPUs `pctl status` gives PID, or "-" when it is not listed
        "$PCTL" status --json >/tmp/st.json 2>/dev/null || { echo "-"; return; }
        python3 -c 'import json,sys
d=json.load(open("/tmp/st.json")); a=[x for x in d["apps"] if x["pid"]==int(sys.argv[1])]
print(a[0]["cpus"] if a else "-")' "$1"
}
held_by() { # how `pctl status` says pctld holds PID (as the JSON's held_by)
        "$PCTL" status --json | python3 -c 'import json,sys
d=json.load(sys.stdin); a=[x for x in d["apps"] if x["pid"]==int(sys.argv[1])]
print(a[0]["held_by"] if a else "-")' "$1"
}
pctld_pid() { prop pctld MainPID; }
# both_alive_in_units: the two apps run, each in its own unit's cgroup.
both_alive_in_units() {
        kill -0 "$SCOPE_PID" 2>/dev/null || fail "the pctl run app ($SCOPE_PID) died"
        kill -0 "$DEMO_PID" 2>/dev/null || fail "demo's pbench ($DEMO_PID) died"
        [ "$(cg_of "$SCOPE_PID")" = "$SCOPE_CG" ] || fail "the pctl run app is in $(cg_of "$SCOPE_PID"), not $SCOPE_CG"
        [ "$(cg_of "$DEMO_PID")" = "$DEMO_CG" ] || fail "demo's pbench is in $(cg_of "$DEMO_PID"), not $DEMO_CG"
        [ "$(prop demo ActiveState)" = active ] || fail "demo.service is $(prop demo ActiveState) ($(prop demo Result))"
        [ "$(prop demo MainPID)" = "$DEMO_PID" ] || fail "demo's MainPID is $(prop demo MainPID), not $DEMO_PID"
        [ "$(prop demo MemoryMax)" = 314572800 ] || fail "demo's MemoryMax is $(prop demo MemoryMax)"
}
# all_given_back: no AllowedCPUs= of ours is left, every CPU is the apps' again.
all_given_back() {
        [ -z "$(prop "$SCOPE_UNIT" AllowedCPUs)" ] && [ -z "$(prop demo AllowedCPUs)" ] &&
                [ "$(eff "$SCOPE_CG")" = "$ALL" ] && [ "$(eff "$DEMO_CG")" = "$ALL" ] &&
                [ "$(cpus_of "$SCOPE_PID")" = "$ALL" ] && [ "$(cpus_of "$DEMO_PID")" = "$ALL" ]
}
show_units() { echo "  $SCOPE_UNIT: AllowedCPUs='$(prop "$SCOPE_UNIT" AllowedCPUs)' effective $(eff "$SCOPE_CG"), pbench on $(cpus_of "$SCOPE_PID"); demo: AllowedCPUs='$(prop demo AllowedCPUs)' effective $(eff "$DEMO_CG"), pbench on $(cpus_of "$DEMO_PID")"; }
narrowed() { # narrowed CG PID: the group has at most 2 CPUs and pctl status says the same
        local e
        e=$(eff "$1")
        [ "$(count "$e")" -le 2 ] && [ "$(status_cpus "$2")" = "$e" ]
}
adopt_both() {
        "$PCTL" adopt "$SCOPE_PID" --policy vm-two >/dev/null || fail "pctl adopt $SCOPE_PID (the scope's app)"
        "$PCTL" adopt "$DEMO_PID" --policy vm-two >/dev/null || fail "pctl adopt $DEMO_PID (demo)"
        wait_until 180 narrowed "$SCOPE_CG" "$SCOPE_PID" || fail "the scope was not narrowed again: $(show_units)"
        wait_until 180 narrowed "$DEMO_CG" "$DEMO_PID" || fail "demo was not narrowed again: $(show_units)"
}

# The mode, and why.
mode=$("$PCTL" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cpuset_mode"])')
[ "$mode" = systemd ] || fail "pctld's cpuset mode is '$mode', not systemd: $(journalctl -u pctld -b --no-pager | grep cpusets)"
journalctl -u pctld -b --no-pager | grep -q "cpusets: systemd: AllowedCPUs= on each app's own unit" ||
        fail "the pctld log does not say why it chose systemd"
echo "ok: pctld manages through systemd units: $(journalctl -u pctld -b --no-pager | grep -o 'cpusets: systemd.*' | tail -1)"

# A policy that must narrow: at most 2 of the 4 CPUs (pbench is told it may share them: the
# scope can be narrowed before its exec). The shipped pbench rule (10-edp.conf)
# is set aside, so that the apps here are adopted only by hand and a restarted pctld does not
# take them again.
mv /etc/pctl/policies.d/10-edp.conf /etc/pctl/10-edp.conf.vmcheck
cat >/etc/pctl/policies.d/50-vmcheck.conf <<'POL'
[policy vm-two]
objective = performance
max_cores = 2
POL
systemctl reload pctld
sleep 1

# pctl run: a scope of its own.
"$PCTL" run --policy vm-two -- "$PBENCH" --p 0.9 --threads 4 --oversubscribe --t1 3000 >/tmp/run.out 2>&1 &
RUN_PID=$!
wait_until 30 holds '[ -n "$(pgrep -P "$RUN_PID" pbench)" ]' || fail "pctl run did not start pbench: $(cat /tmp/run.out)"
SCOPE_PID=$(pgrep -P "$RUN_PID" pbench)
SCOPE_UNIT=pctl-run-$SCOPE_PID.scope
SCOPE_CG=/pctl.slice/$SCOPE_UNIT
[ "$(cg_of "$SCOPE_PID")" = "$SCOPE_CG" ] || fail "pctl run's pbench is in $(cg_of "$SCOPE_PID"), not $SCOPE_CG"
[ "$(prop "$SCOPE_UNIT" ActiveState)" = active ] || fail "$SCOPE_UNIT is $(prop "$SCOPE_UNIT" ActiveState)"
[ "$(cg_of "$RUN_PID")" != "$SCOPE_CG" ] || fail "pctl run itself went into the scope"
echo "ok: pctl run's pbench ($SCOPE_PID) runs in $SCOPE_CG, a scope of its own"
wait_until 180 narrowed "$SCOPE_CG" "$SCOPE_PID" || fail "the scope's CPUs did not follow the allocator: $(eff "$SCOPE_CG"), status says $(status_cpus "$SCOPE_PID")"
[ "$(held_by "$SCOPE_PID")" = "systemd unit $SCOPE_UNIT (AllowedCPUs=)" ] ||
        fail "status says the pctl run app is held by '$(held_by "$SCOPE_PID")'"
echo "ok: $SCOPE_UNIT: cpuset.cpus.effective $(eff "$SCOPE_CG") (AllowedCPUs=$(prop "$SCOPE_UNIT" AllowedCPUs)), pctl status says $(status_cpus "$SCOPE_PID")"

# A service with a memory limit, adopted by hand. User=nobody: the shipped watch-services rule
# selects only root's services, so it is ours to adopt.
systemd-run --unit=demo -p MemoryMax=300M -p User=nobody "$PBENCH" --p 0.9 --threads 1 --t1 3000 >/dev/null ||
        fail "systemd-run demo"
wait_until 10 holds '[ "$(prop demo MainPID)" != 0 ]' || fail "demo did not start"
DEMO_PID=$(prop demo MainPID)
DEMO_CG=$(prop demo ControlGroup)
echo "demo.service: MainPID $DEMO_PID, ControlGroup $DEMO_CG, MemoryMax $(prop demo MemoryMax)"
"$PCTL" adopt "$DEMO_PID" --policy vm-two || fail "pctl adopt $DEMO_PID"
wait_until 180 narrowed "$DEMO_CG" "$DEMO_PID" || fail "demo's CPUs did not change: $(eff "$DEMO_CG"), status says $(status_cpus "$DEMO_PID")"
[ "$(prop demo ControlGroup)" = "$DEMO_CG" ] || fail "demo's ControlGroup is now $(prop demo ControlGroup)"
both_alive_in_units
[ "$(held_by "$DEMO_PID")" = "systemd unit demo.service (AllowedCPUs=)" ] ||
        fail "status says demo is held by '$(held_by "$DEMO_PID")'"
echo "ok: demo keeps ControlGroup $DEMO_CG, MainPID $DEMO_PID, MemoryMax 314572800; its CPUs are $(eff "$DEMO_CG") (AllowedCPUs=$(prop demo AllowedCPUs))"
grep -q "^unit demo.service -$" /run/pctl/actuators.state || fail "demo's old AllowedCPUs= is not recorded: $(cat /run/pctl/actuators.state)"
echo "ok: the record holds both units' old values: $(grep ^unit /run/pctl/actuators.state | tr '\n' ';')"

# systemctl restart pctld: both live on; the new pctld gives the units back what they had.
old=$(pctld_pid)
systemctl restart pctld || fail "systemctl restart pctld"
both_alive_in_units
wait_until 30 all_given_back || fail "after a restart the units were not given back: $(show_units)"
echo "ok: restart (pctld $old -> $(pctld_pid)): both apps live in their units, AllowedCPUs= given back"

# SIGKILL: systemd restarts it (Restart=on-failure); the new one restores the record.
adopt_both
old=$(pctld_pid)
systemctl kill -s KILL pctld
wait_until 30 holds '[ "$(pctld_pid)" != "$old" ] && [ "$(pctld_pid)" != 0 ]' || fail "pctld was not restarted after SIGKILL"
wait_until 30 "$PCTL" status >/dev/null 2>&1 || fail "the restarted pctld does not answer"
both_alive_in_units
wait_until 30 all_given_back || fail "after SIGKILL the units were not given back: $(show_units)"
echo "ok: SIGKILL (pctld $old -> $(pctld_pid)): both apps live in their units, the next pctld restored the record"

# The watchdog: a pctld that stops answering is killed by systemd (the unit's WatchdogSec=30,
# then SIGABRT and after TimeoutStopSec SIGKILL), then restarted. No drop-in: a daemon-reload
# here took the harness's /payload mount away.
adopt_both
old=$(pctld_pid)
kill -STOP "$old"
wait_until 150 holds '[ "$(pctld_pid)" != "$old" ] && [ "$(pctld_pid)" != 0 ]' || fail "the watchdog did not kill the stopped pctld"
journalctl -u pctld -b --no-pager | grep -qi "watchdog timeout" || fail "the journal does not say the watchdog acted"
wait_until 30 "$PCTL" status >/dev/null 2>&1 || fail "pctld does not answer after the watchdog kill"
both_alive_in_units
wait_until 30 all_given_back || fail "after the watchdog kill the units were not given back: $(show_units)"
echo "ok: watchdog kill (pctld $old -> $(pctld_pid)): both apps live in their units, restored"

# systemctl stop: the stopping pctld gives everything back itself.
systemctl restart pctld
wait_until 30 "$PCTL" status >/dev/null 2>&1 || fail "pctld does not answer"
adopt_both
systemctl stop pctld || fail "systemctl stop pctld"
both_alive_in_units
all_given_back || fail "after systemctl stop: $(show_units)"
[ ! -s /run/pctl/actuators.state ] || fail "the record is not empty after a clean stop: $(cat /run/pctl/actuators.state)"
echo "ok: systemctl stop: both apps live in their units with every CPU: $(show_units)"
systemctl start pctld
wait_until 30 "$PCTL" status >/dev/null 2>&1 || fail "pctld does not answer after start"

# A root service the shipped monitor rule (watch-services) selects, as sshd or cron would be.
systemd-run --unit=fakecron sleep 3000 >/dev/null || fail "systemd-run fakecron"
wait_until 10 holds '[ "$(prop fakecron MainPID)" != 0 ]' || fail "fakecron did not start"
CRON_PID=$(prop fakecron MainPID)
CRON_CG=$(prop fakecron ControlGroup)
wait_until 30 holds '[ "$(status_cpus "$CRON_PID")" != - ]' || fail "the monitor rule did not select fakecron ($CRON_PID)"
sleep 3 # a few decisions
[ "$(cg_of "$CRON_PID")" = "$CRON_CG" ] || fail "fakecron moved to $(cg_of "$CRON_PID")"
[ -z "$(prop fakecron AllowedCPUs)" ] || fail "fakecron got AllowedCPUs=$(prop fakecron AllowedCPUs)"
[ "$(cpus_of "$CRON_PID")" = "$ALL" ] || fail "fakecron was pinned"
! grep -q "fakecron" /run/pctl/actuators.state 2>/dev/null || fail "pctld recorded a change to fakecron"
for svc in systemd-journald systemd-logind dbus; do
        p=$(prop $svc MainPID)
        [ "$p" != 0 ] || continue
        [ "$(cg_of "$p")" = "$(prop $svc ControlGroup)" ] || fail "$svc left its cgroup"
        [ -z "$(prop $svc AllowedCPUs)" ] || fail "$svc got AllowedCPUs=$(prop $svc AllowedCPUs)"
done
echo "ok: services a monitor rule selects keep their cgroups and CPUs (fakecron in $CRON_CG, on $ALL)"
systemctl stop fakecron

# Bad input 1: a process in another cgroup namespace (a container's).
unshare --cgroup sleep 3000 &
NS_PID=$!
sleep 0.5
before=$(cg_of "$NS_PID")
expect_exit 1 "another cgroup namespace" "$PCTL" adopt "$NS_PID"
[ "$(status_cpus "$NS_PID")" = - ] || fail "the refused process is listed"
[ "$(cpus_of "$NS_PID")" = "$ALL" ] || fail "the refused process was pinned"
kill "$NS_PID"
NS_PID=

# Bad input 2: a unit whose slice allows CPU 0 only refuses AllowedCPUs=0-3.
systemd-run --unit=narrow --slice=narrow.slice -p User=nobody sleep 3000 >/dev/null || fail "systemd-run narrow"
systemctl set-property --runtime narrow.slice AllowedCPUs=0
wait_until 10 holds '[ "$(prop narrow MainPID)" != 0 ]' || fail "narrow did not start"
NARROW_PID=$(prop narrow MainPID)
expect_exit 1 "refuses AllowedCPUs" "$PCTL" adopt "$NARROW_PID"
[ -z "$(prop narrow AllowedCPUs)" ] || fail "narrow.service kept AllowedCPUs=$(prop narrow AllowedCPUs)"
[ "$(status_cpus "$NARROW_PID")" = - ] || fail "the refused unit's process is listed"
! grep -q "narrow" /run/pctl/actuators.state 2>/dev/null || fail "the refused unit stays in the record"
echo "ok: narrow.service left as it was"
systemctl stop narrow

# Bad input 3: systemd does not answer on D-Bus (the bus daemon is stopped).
systemd-run --unit=demo2 -p User=nobody sleep 3000 >/dev/null || fail "systemd-run demo2"
wait_until 10 holds '[ "$(prop demo2 MainPID)" != 0 ]' || fail "demo2 did not start"
D2=$(prop demo2 MainPID)
DBUS_PID=$(prop dbus MainPID)
kill -STOP "$DBUS_PID"
expect_exit 1 "did not answer on D-Bus" "$PCTL" adopt "$D2"
kill -CONT "$DBUS_PID"
DBUS_PID=
[ -z "$(prop demo2 AllowedCPUs)" ] || fail "demo2 got AllowedCPUs=$(prop demo2 AllowedCPUs)"
[ "$(status_cpus "$D2")" = - ] || fail "the refused process is listed"
"$PCTL" status >/dev/null || fail "pctld does not answer after the bus came back"
echo "ok: with the bus stopped nothing changed, and pctld carries on"
systemctl stop demo2
echo PASS
