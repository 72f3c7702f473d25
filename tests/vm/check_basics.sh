#!/bin/bash
# The VM is what the other checks assume: systemd as PID 1, cgroup v2 only, the package's
# pctld running under it and answering `pctl status`.
. "$TEST_LIB"
[ "$(cat /proc/1/comm)" = systemd ] || fail "PID 1 is $(cat /proc/1/comm), not systemd"
echo "ok: PID 1 is systemd"
[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || fail "/sys/fs/cgroup is $(stat -f -c %T /sys/fs/cgroup), not cgroup2"
grep -qw cpuset /sys/fs/cgroup/cgroup.controllers || fail "no cpuset controller: $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "ok: cgroup v2 only, controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
[ "$(nproc)" -eq 4 ] || fail "$(nproc) CPUs, not the 4 qemu was given"
echo "ok: 4 CPUs"
systemctl is-active -q pctld || fail "pctld is not active"
"$PCTL" status >/dev/null || fail "pctl status: $("$PCTL" status 2>&1)"
echo "ok: pctld is active and answers pctl status"
