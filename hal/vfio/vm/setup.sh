#!/bin/bash
# Installs what the VFIO VM test needs and prepares a guest kernel, idempotently:
#   - QEMU 10 (qemu-system-x86) from bookworm-backports: the image's qemu-utils 10 (backports) breaks
#     bookworm's QEMU 7.2, so take QEMU from the same suite;
#   - busybox-static (the initramfs userland);
#   - the Rust target x86_64-unknown-linux-musl (a static guest binary);
#   - a Debian kernel image (bookworm-backports 6.12 when available: zstd, boots ~4 s faster under
#     TCG than bookworm's xz 6.1), extracted under $WORK/kernel.
# Usage: setup.sh WORK_DIR        (prints KVER=... and KROOT=... on its last two lines)
set -euo pipefail
WORK=${1:?usage: setup.sh WORK_DIR}
mkdir -p "$WORK"
export DEBIAN_FRONTEND=noninteractive
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo

apt_retry() {  # another apt may hold the dpkg lock for a while
  for i in 1 2 3 4 5 6 7 8 9 10; do $SUDO "$@" && return 0; echo "apt busy, retry $i"; sleep 10; done
  return 1
}

if ! command -v qemu-system-x86_64 >/dev/null || ! [ -x /bin/busybox ]; then
  command -v apt-get >/dev/null || { echo "setup: no apt-get; install qemu-system-x86 (>= 8) and busybox-static" >&2; exit 1; }
  if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
    uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    echo "deb ${uri:-http://deb.debian.org/debian} bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/backports.list >/dev/null
  fi
  apt_retry apt-get update -qq
  apt_retry apt-get install -y -qq -t bookworm-backports qemu-system-x86 busybox-static >/dev/null
fi

if command -v rustup >/dev/null; then
  rustup target list --installed | grep -qx x86_64-unknown-linux-musl || rustup target add x86_64-unknown-linux-musl >&2
fi

KDIR="$WORK/kernel"
mkdir -p "$KDIR"
if ! ls "$KDIR"/root/boot/vmlinuz-* >/dev/null 2>&1; then
  # the image package the meta-package depends on (prefer backports: 6.12, zstd-compressed)
  pkg=$(apt-cache depends -t bookworm-backports linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$pkg" ] || pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$pkg" ] || { echo "setup: cannot resolve linux-image-amd64" >&2; exit 1; }
  (cd "$KDIR" && rm -f ./*.deb && apt_retry apt-get download -t bookworm-backports "$pkg" 2>/dev/null || apt_retry apt-get download "$pkg")
  rm -rf "$KDIR/root.tmp" && dpkg-deb -x "$KDIR"/*.deb "$KDIR/root.tmp" && mv "$KDIR/root.tmp" "$KDIR/root"
  rm -f "$KDIR"/*.deb
fi
vmlinuz=$(ls "$KDIR"/root/boot/vmlinuz-* | head -1)
echo "KVER=${vmlinuz##*/vmlinuz-}"
echo "KROOT=$KDIR/root"
