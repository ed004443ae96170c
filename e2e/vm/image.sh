#!/usr/bin/env bash
# The Debian 12 (bookworm) virtual machine of e2e/vm/run: a root file system made by debootstrap
# from Debian's packages, with systemd as PID 1, the cloud kernel, qemu-guest-agent (the host
# runs commands through it over a virtio serial port: the VM has no other channel) and the
# libraries the kubeboot package depends on (the VM installs it offline). Cached outside the
# clone, keyed by this file's content: the first run builds it, later runs find it.
#
#   e2e/vm/image.sh            build if missing; print the image directory
#   e2e/vm/image.sh --print    print the directory if built, else exit 1
#
# The directory holds rootfs.img (ext4, raw), vmlinuz and initrd.img. Needs root (debootstrap,
# chroot), debootstrap and e2fsprogs; the mirror is $VM_MIRROR (default: Debian's).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${KUBEBOOT_CACHE:-$HOME/.cache/kubeboot}
SUITE=bookworm
MIRROR=${VM_MIRROR:-http://deb.debian.org/debian}
# systemd as init; the kernel and its initramfs; the host's channel; kill(1) for ExecReload; the
# kubeboot package's Depends (dpkg-shlibdeps: libc6, libgcc-s1 and the TPM stack's libtss2).
INCLUDE=systemd,systemd-sysv,udev,dbus,linux-image-cloud-amd64,qemu-guest-agent,procps,libtss2-esys-3.0.2-0,libtss2-tctildr0,libtss2-mu0
# configure_guest ROOT: what the guest gets beyond its packages.
configure_guest() {
  local R=$1
  # The guest: a fixed name, the root file system, a static address on QEMU's user network (the
  # apiserver is reached at 10.0.2.100, a guestfwd; nothing else answers: restrict=on), and
  # `kubernetes` (a name in the apiserver's certificate) for that address.
  echo kubeboot-vm >"$R/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 kubeboot-vm\n10.0.2.100 kubernetes\n' >"$R/etc/hosts"
  printf 'LABEL=root / ext4 rw,errors=remount-ro 0 1\n' >"$R/etc/fstab"
  mkdir -p "$R/etc/systemd/network"
  # A default route too: what the guest cannot reach is QEMU's restrict=on's doing, not a route's.
  printf '[Match]\nName=en* eth*\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
    >"$R/etc/systemd/network/10-user.network"
  chroot "$R" systemctl enable systemd-networkd.service >/dev/null 2>&1
  # A login on the serial console is never needed: the host speaks to qemu-guest-agent.
  chroot "$R" systemctl mask serial-getty@ttyS0.service getty@tty1.service >/dev/null 2>&1
  # No apt lists: installs are from local .deb files only.
  rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/archives/*.deb
  ln -sf /usr/share/zoneinfo/Etc/UTC "$R/etc/localtime"
}
# The cache key: the suite, the packages and the configuration (not this file's comments).
KEY=$( { echo "$SUITE $INCLUDE"; declare -f configure_guest; } | sha256sum | cut -c1-12)
DIR="$CACHE/vm/$SUITE-$KEY"

if [[ ${1:-} == --print ]]; then
  [[ -f $DIR/.complete ]] && { echo "$DIR"; exit 0; }
  echo "not built: $DIR" >&2; exit 1
fi
if [[ -f $DIR/.complete ]]; then echo "$DIR"; exit 0; fi
# One build at a time (test.sh starts one in the background; e2e/vm/run then waits for it).
mkdir -p "$CACHE/vm"
exec 9>"$CACHE/vm/.lock"
flock 9
if [[ -f $DIR/.complete ]]; then echo "$DIR"; exit 0; fi

command -v debootstrap >/dev/null || { echo "debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
t0=$(date +%s)
TMP=$(mktemp -d "$CACHE/vm-build.XXXXXX")
# (Under set -e a failing command in the trap would end it: the umounts of what is not mounted
# fail, so the list is guarded, or the build directory stays behind and the status is not 0.)
trap '{ umount -R "$TMP/root/proc" "$TMP/root/sys" "$TMP/root/dev"; rm -rf "$TMP"; } 2>/dev/null || rm -rf "$TMP"' EXIT
echo "debootstrap $SUITE ($MIRROR) into $TMP/root" >&2
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$TMP/root" "$MIRROR" >"$TMP/debootstrap.log" 2>&1 ||
  { tail -n 30 "$TMP/debootstrap.log" >&2; exit 1; }
R="$TMP/root"

configure_guest "$R"

mkdir -p "$TMP/out"
cp -L "$R/vmlinuz" "$TMP/out/vmlinuz"
cp -L "$R/initrd.img" "$TMP/out/initrd.img"
truncate -s 2G "$TMP/out/rootfs.img"
mke2fs -q -t ext4 -L root -d "$R" "$TMP/out/rootfs.img"
{
  echo "suite=$SUITE mirror=$MIRROR"
  echo "build_seconds=$(( $(date +%s) - t0 ))"
  chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' | sort
} >"$TMP/out/packages.txt"
rm -rf "$DIR"
mv "$TMP/out" "$DIR"
touch "$DIR/.complete"
echo "built in $(( $(date +%s) - t0 )) s" >&2
echo "$DIR"
