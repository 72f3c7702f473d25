#!/usr/bin/env bash
# Builds the VM test's Debian 12 image, once: build-image.sh DIR PACKAGE...
#   DIR/disk.img   the root file system (ext4, raw, sparse), booted read-only through an overlay
#   DIR/vmlinuz    the image's own kernel (linux-image-amd64: 6.1 on bookworm)
#   DIR/initrd.img its initramfs-tools initrd
# PACKAGE... are installed on top of a minbase debootstrap with systemd as PID 1. The image
# starts /payload/boot.sh from a second virtio disk on boot (pctl-vm-payload.service), so the
# tests, the .deb and the runner change without rebuilding it. DIR is written as DIR.tmp and
# renamed only once complete, so an interrupted build is never taken for a cache.
# Needs root (debootstrap, chroot) and the network to the host's Debian mirror.
set -euo pipefail
dir=$1
shift
tmp="$dir.tmp"
root="$tmp/root"
rm -rf "$tmp"
mkdir -p "$tmp"

# The archive the host's apt uses, so the guest resolves the same package versions.
mirror=http://deb.debian.org/debian
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        m=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
        [ -n "$m" ] && mirror=$m
fi

# systemd as PID 1, udev (the virtio disks' /dev nodes), kmod and initramfs-tools; the kernel
# comes with the other packages, once initramfs-tools is told what its initrd needs.
base=systemd,systemd-sysv,dbus,udev,kmod,initramfs-tools,e2fsprogs
debootstrap --variant=minbase --include="$base" bookworm "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
        tail -n 20 "$tmp/debootstrap.log" >&2
        echo "build-image: debootstrap from $mirror failed; the log is $tmp/debootstrap.log" >&2
        exit 1
}
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        rm -f "$root/etc/apt/sources.list"
        cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
fi

# An initrd with only what mounts the root (virtio disk, ext4): Debian's default (most
# modules) costs seconds of every boot under TCG, and as many to build.
echo 'MODULES=list' >"$root/etc/initramfs-tools/conf.d/pctl-vm.conf"
printf '%s\n' virtio_pci virtio_blk ext4 >>"$root/etc/initramfs-tools/modules"

mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT
{
        chroot "$root" apt-get update -q &&
                chroot "$root" env DEBIAN_FRONTEND=noninteractive \
                        apt-get install -y -q --no-install-recommends linux-image-amd64 "$@"
} >"$tmp/apt.log" 2>&1 || {
        tail -n 20 "$tmp/apt.log" >&2
        echo "build-image: apt-get install linux-image-amd64 $* failed; the log is $tmp/apt.log" >&2
        exit 1
}
chroot "$root" apt-get clean

# The guest: root on /dev/vda, no password prompt on the serial line (the console is the
# test's log), a journal kept in memory only, and the payload unit.
echo '/dev/vda / ext4 rw,noatime 0 1' >"$root/etc/fstab"
echo pctl-vm >"$root/etc/hostname"
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/pctl-vm.conf"
# Nothing to wait for on a machine with no network and no clock to sync.
for u in systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
        e2scrub_reap.service fstrim.timer man-db.timer dpkg-db-backup.timer; do
        ln -sf /dev/null "$root/etc/systemd/system/$u"
done
mkdir -p "$root/payload"
cat >"$root/etc/systemd/system/pctl-vm-payload.service" <<'UNIT'
[Unit]
Description=pctl VM test: the payload disk's boot.sh, then power-off
After=basic.target dbus.service systemd-journald.service
Wants=dbus.service

[Service]
Type=oneshot
# Under TCG a boot and the checks take minutes: the host's timeout bounds the run instead.
TimeoutStartSec=infinity
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/ttyS0
ExecStart=/bin/sh -c 'mount -o rw /dev/vdb /payload && exec /bin/bash /payload/boot.sh'
# Powers off whatever boot.sh did, so a failed check never leaves the guest running.
ExecStopPost=/bin/systemctl poweroff --no-block

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/pctl-vm-payload.service \
        "$root/etc/systemd/system/multi-user.target.wants/pctl-vm-payload.service"

umount "$root/proc"
trap - EXIT

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -n 1)
cp "$kernel" "$tmp/vmlinuz"
cp "$initrd" "$tmp/initrd.img"
# The image is booted read-only under a qcow2 overlay: 3 GB sparse leaves room for the tests.
truncate -s 3G "$tmp/disk.img"
mkfs.ext4 -q -F -L pctl-vm -d "$root" "$tmp/disk.img"
rm -rf "$root"
rm -rf "$dir"
mv "$tmp" "$dir"
