#!/bin/bash
# Runs inside the VM as root, started by the image's pctl-vm-payload.service from the payload
# disk mounted at /payload (it is copied there as boot.sh): installs the .deb under the real
# systemd, then runs every vm/check_*.sh in name order. Results go to /payload/out, which the
# host reads back after the power-off, and to the serial console:
#   out/results     one line per step: NAME RC SECONDS
#   out/NAME.log    what the step printed
#   out/journal.txt the guest's journal (written last)
# A check exits 0 (passed), 77 (skipped; its last line says why) or anything else (failed).
set -u
export P=/payload
out=$P/out
rm -rf "$out"
mkdir -p "$out"
read -r up _ </proc/uptime
echo "vm: booted in ${up} s: kernel $(uname -r), $(systemctl --version | head -n 1)"
echo "$up" >"$out/boot_seconds"

# step NAME SECONDS CMD...: runs CMD (at most SECONDS) into out/NAME.log and the console.
step() {
        local name=$1 limit=$2 t0 t1 rc
        shift 2
        t0=$(date +%s.%N)
        timeout -k 10 "$limit" "$@" 2>&1 | tee "$out/$name.log" | sed -u "s/^/$name: /"
        rc=${PIPESTATUS[0]}
        t1=$(date +%s.%N)
        [ "$rc" -eq 124 ] && echo "FAIL: timed out after $limit s" | tee -a "$out/$name.log"
        printf '%s %d %.1f\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" >>"$out/results"
        sync
        return "$rc"
}

# The package as an operator installs it: dpkg's maintainer scripts enable and start pctld.
install_deb() {
        local deb
        deb=$(ls "$P"/pctl_*.deb) || { echo "FAIL: no pctl_*.deb on the payload disk"; return 1; }
        DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" || { echo "FAIL: dpkg -i ${deb##*/}"; return 1; }
        [ "$(systemctl is-enabled pctld)" = enabled ] || { echo "FAIL: installing did not enable pctld"; return 1; }
        systemctl is-active -q pctld || { echo "FAIL: pctld is not active: $(systemctl status pctld --no-pager 2>&1)"; return 1; }
        echo "ok: dpkg -i ${deb##*/} enabled and started pctld"
}

export -f install_deb
if step install 300 bash -c install_deb; then
        export PCTL=/usr/bin/pctl PCTLD=/usr/sbin/pctld PBENCH=/usr/bin/pbench
        export TEST_LIB=$P/integration/lib.sh SRC_DIR=$P BUILD_DIR=$P/build
        for c in "$P"/vm/check_*.sh; do
                [ -e "$c" ] || continue
                n=${c##*/}
                step "${n%.sh}" "${PCTL_VM_CHECK_SECONDS:-900}" bash "$c"
        done
        # The integration tests that need cgroups, on this machine's cgroup v2 (vm/integration.list).
        while read -r t _; do
                case $t in "" | "#"*) continue ;; esac
                step "it.$t" "${PCTL_VM_CHECK_SECONDS:-900}" bash "$P/integration/$t.sh"
        done < <(cat "$P/vm/integration.list" 2>/dev/null)
fi
journalctl -b --no-pager -o short-monotonic >"$out/journal.txt" 2>&1
sync
echo "vm: done after $(cut -d' ' -f1 /proc/uptime) s; powering off"
