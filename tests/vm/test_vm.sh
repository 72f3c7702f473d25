#!/usr/bin/env bash
# The VM test: pctl as a user of a Debian 12 machine gets it, with the distribution's kernel
# (6.1), systemd as PID 1 and cgroup v2 only, 4 vCPUs in 2 sockets. It
#   - builds once a Debian bookworm image (tests/vm/build-image.sh) cached in BUILD/vm/image-KEY,
#     KEY a hash of the builder and of the package list (the .deb's dependencies and what the
#     checks need), so a change of either rebuilds it;
#   - boots it with qemu (TCG) under a throw-away qcow2 overlay, with a second virtio disk that
#     carries the .deb of `make package`, the in-guest runner, tests/vm/check_*.sh and the
#     integration tests with lib.sh; the guest installs the .deb with dpkg (which enables and
#     starts pctld), runs every check, writes the results and its journal back to that disk and
#     powers off;
#   - prints a table of the checks and "N passed, N failed, N skipped"; on a failure, the serial
#     log and the guest's journal.
# Environment: PCTL_VM_TIMEOUT (s, default 1800) bounds the whole boot; PCTL_VM_CHECKS (a
# pattern, e.g. 'check_sensors*') runs only the matching checks, PCTL_VM_INTEGRATION (names,
# "" for none) only those integration tests instead of integration.list's.
set -u
. "$TEST_LIB"
started=$(date +%s)
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mkfs.ext4 -d of a root tree)"
for c in qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 debugfs dpkg-deb; do
        command -v "$c" >/dev/null || skip "$c is not installed (scripts/deps.sh installs it)"
done
deb=$(ls "$BUILD_DIR"/pctl_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no $BUILD_DIR/pctl_*.deb: run 'make package' first (make test and make test-vm do)"
here="$SRC_DIR/tests/vm"
cache="$BUILD_DIR/vm"
mkdir -p "$cache"

# The image's packages: the .deb's dependencies (first of each alternative, no versions) and
# what the checks and the integration tests run in the guest.
checks_need="procps util-linux python3 bc sqlite3"
deps=$(dpkg-deb -f "$deb" Pre-Depends Depends | sed 's/^[A-Za-z-]*: //' | tr ',' '\n' |
        sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' | grep -v '^$')
packages=$(printf '%s\n' $deps $checks_need | sort -u | tr '\n' ' ')
key=$( (cat "$here/build-image.sh"; echo "$packages") | sha256sum | cut -c1-12)
img="$cache/image-$key"
if [ ! -f "$img/disk.img" ]; then
        for old in "$cache"/image-*; do [ -d "$old" ] && rm -rf "$old"; done
        echo "vm: building the image (debootstrap bookworm + $packages) ..."
        t0=$(date +%s)
        # shellcheck disable=SC2086
        bash "$here/build-image.sh" "$img" $packages ||
                skip "the image could not be built (no network to the Debian mirror?); see $img.tmp"
        echo "vm: image built in $(($(date +%s) - t0)) s"
else
        echo "vm: image $img (cached)"
fi

run="$cache/run"
rm -rf "$run"
mkdir -p "$run/payload/vm" "$run/payload/integration"
cp "$deb" "$run/payload/"
cp "$here/guest-run.sh" "$run/payload/boot.sh"
for c in "$here"/check_*.sh; do
        [[ ${c##*/} == ${PCTL_VM_CHECKS:-check_*} ]] && cp "$c" "$run/payload/vm/"
done
# The integration tests to run in the guest too: integration.list, or those PCTL_VM_INTEGRATION
# names ("" for none).
if [ -n "${PCTL_VM_INTEGRATION+set}" ]; then
        printf '%s\n' $PCTL_VM_INTEGRATION >"$run/payload/vm/integration.list"
else
        [ -f "$here/integration.list" ] && cp "$here/integration.list" "$run/payload/vm/"
fi
cp "$SRC_DIR"/tests/integration/*.sh "$SRC_DIR"/tests/integration/*.py "$run/payload/integration/"
# The compiled helpers some integration tests drive (tests/tools), built for this host's
# Debian, which is the guest's.
[ -d "$BUILD_DIR/tools" ] && mkdir -p "$run/payload/build" && cp -r "$BUILD_DIR/tools" "$run/payload/build/"
truncate -s 512M "$run/payload.img"
mkfs.ext4 -q -F -L payload -d "$run/payload" "$run/payload.img" || fail "mkfs.ext4 of the payload disk"
# boot: one run of the guest on a fresh overlay; qrc its exit (124: timed out; 125: the guest
# kernel reported a soft lockup past LOCKUP_S seconds, which under TCG is the emulator's: every
# vCPU stuck in the kernel at once, seen in 1 of 5 runs on 27 Nov 2026; qemu killed).
LOCKUP_S=120
boot_guest() {
        local pid
        rm -f "$run/root.qcow2" "$run/serial.log"
        qemu-img create -q -f qcow2 -F raw -b "$img/disk.img" "$run/root.qcow2" || fail "qemu-img create the overlay"
        echo "vm: booting (TCG, 4 vCPUs in 2 sockets, 1536 MB) ..."
        t0=$(date +%s)
        timeout -k 10 "${PCTL_VM_TIMEOUT:-1800}" qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
                -smp 4,sockets=2,cores=2 -m 1536 -nodefaults -display none -vga none -no-reboot -nic none \
                -kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
                -append 'root=/dev/vda rw console=ttyS0 panic=-1 quiet' \
                -drive file="$run/root.qcow2",format=qcow2,if=virtio \
                -drive file="$run/payload.img",format=raw,if=virtio \
                -serial file:"$run/serial.log" -monitor none >"$run/qemu.log" 2>&1 &
        pid=$!
        qrc=""
        while kill -0 "$pid" 2>/dev/null; do
                if grep -Eq "soft lockup - CPU#[0-9]+ stuck for ([0-9]{4,}|[2-9][0-9]{2}|1[2-9][0-9])s" "$run/serial.log" 2>/dev/null; then
                        pkill -KILL -P "$pid" 2>/dev/null
                        wait "$pid" 2>/dev/null
                        qrc=125
                        break
                fi
                sleep 5
        done
        [ -n "$qrc" ] || { wait "$pid"; qrc=$?; }
        vm_seconds=$(($(date +%s) - t0))
}
boot_guest
if [ "$qrc" -eq 125 ]; then
        cp "$run/serial.log" "$run/serial-lockup.log"
        echo "vm: the guest kernel reported a soft lockup of ${LOCKUP_S} s or more (serial log kept in $run/serial-lockup.log): booting once more"
        truncate -s 0 "$run/payload.img"
        truncate -s 512M "$run/payload.img"
        mkfs.ext4 -q -F -L payload -d "$run/payload" "$run/payload.img" || fail "mkfs.ext4 of the payload disk"
        boot_guest
        [ "$qrc" -eq 125 ] && echo "FAIL: the guest kernel reported a soft lockup again; qemu killed"
fi
[ "$qrc" -eq 124 ] && echo "FAIL: the guest did not power off within ${PCTL_VM_TIMEOUT:-1800} s; qemu killed"

debugfs -R "rdump /out $run" "$run/payload.img" >/dev/null 2>&1
show_logs() {
        echo "---- serial log ($run/serial.log)"
        cat "$run/serial.log"
        if [ -f "$run/out/journal.txt" ]; then
                echo "---- guest journal ($run/out/journal.txt, last 300 lines)"
                tail -n 300 "$run/out/journal.txt"
        fi
        cat "$run/qemu.log"
}
if [ ! -f "$run/out/results" ]; then
        show_logs
        fail "the guest wrote no results (qemu exited $qrc after $vm_seconds s)"
fi

boot=$(cat "$run/out/boot_seconds" 2>/dev/null || echo '?')
passed=0 failed=0 skipped=0
printf '%-32s %-7s %8s  %s\n' check result seconds note
while read -r name rc secs; do
        note=""
        case $rc in
        0) result=passed passed=$((passed + 1)) ;;
        77) result=skipped skipped=$((skipped + 1)) note=$(grep -h '^SKIP' "$run/out/$name.log" | tail -n 1) ;;
        *) result=FAILED failed=$((failed + 1)) note=$(grep -h '^FAIL' "$run/out/$name.log" | tail -n 1) ;;
        esac
        printf '%-32s %-7s %8s  %s\n' "$name" "$result" "$secs" "$note"
done <"$run/out/results"
test_s=$(awk '{ s += $3 } END { printf "%.0f", s }' "$run/out/results")
echo "vm: guest booted in $boot s, checks took $test_s s, qemu ran $vm_seconds s; whole test $(($(date +%s) - started)) s"
[ "$qrc" -eq 0 ] || { echo "FAIL: qemu exited $qrc"; failed=$((failed + 1)); }
[ "$failed" -eq 0 ] || show_logs
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
[ "$passed" -gt 0 ] || skip "every check skipped"
exit 0
