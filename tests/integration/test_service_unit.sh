#!/usr/bin/env bash
# etc/pctld.service passes systemd-analyze verify, is Type=notify with a watchdog, delegates
# nothing (no app is ever placed in pctld's own unit, whose cgroup a stop kills), and keeps off
# the hardening that would block pctld's writes.
set -u
. "$TEST_LIB"
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
unit="$SRC_DIR/etc/pctld.service"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Verify against the built binary (the unit names the installed path).
sed "s|/usr/sbin/pctld|$PCTLD|" "$unit" >"$T/pctld.service"
out=$(systemd-analyze verify --man=no "$T/pctld.service" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
for want in "Type=notify" "WatchdogSec=" "RuntimeDirectoryPreserve=yes" "ExecReload="; do
        grep -q "^$want" "$unit" || fail "the unit lacks $want"
done
! grep -q "^Delegate=" "$unit" || fail "Delegate=: pctld's own unit must never hold a managed app"
for bad in "ProtectKernelTunables=yes" "ProtectControlGroups=yes" "ProtectSystem=strict"; do
        ! grep -q "^$bad" "$unit" || fail "$bad would block pctld's cgroup and cpufreq writes"
done
! grep -q "^MemoryDenyWriteExecute=yes" "$unit" ||
        fail "MemoryDenyWriteExecute=yes: liblikwid needs an executable stack, pctld would not load"
# Every page the unit documents ships in man/.
for page in $(sed -n 's/^Documentation=//p' "$unit"); do
        name=${page#man:}
        file="$SRC_DIR/man/${name%%(*}.${name#*(}"
        file=${file%)}
        [ -f "$file" ] || fail "Documentation= names $page but $file does not exist"
done
echo "ok: pctld.service verifies"
