#!/bin/bash
# `cargo qemu-vfio`: prove hcq-vfio against QEMU's edu device behind a real (emulated) IOMMU.
#
# 1. vm/setup.sh installs QEMU (bookworm-backports), busybox-static, the musl Rust target, and a
#    Debian kernel (cached under target/qemu-vfio);
# 2. builds the static test program (examples/edu_vm.rs) for x86_64-unknown-linux-musl;
# 3. assembles an initramfs: busybox, the vfio modules of that kernel, /init, the program;
# 4. boots QEMU q35 + intel-iommu (interrupt remapping) with two edu devices (one behind a PCIe
#    root port, one sharing a multifunction slot with a virtio-rng) under TCG (KVM when a real
#    kvm_intel/kvm_amd is loaded);
# 5. exits 0 only when the guest reported that every check passed.
#
# Usage: run.sh [test|bench]     env: TIMEOUT (s, default 600), KEEP=1 keeps the serial log.
set -euo pipefail
MODE=${1:-test}
CRATE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(cd "$CRATE/../.." && pwd)
WORK="$ROOT/target/qemu-vfio"
mkdir -p "$WORK"
TIMEOUT=${TIMEOUT:-600}

echo "== setup (packages, musl target, kernel)"
eval "$(bash "$CRATE/vm/setup.sh" "$WORK" | tail -2)"   # sets KVER, KROOT

echo "== build the static guest program"
cd "$ROOT"
if [ "$MODE" = bench ]; then
  out=$(cargo bench -p hcq-vfio --bench vm --no-run --target x86_64-unknown-linux-musl --message-format=json 2>/dev/null \
        | grep -o '"executable":"[^"]*"' | tail -1 | cut -d'"' -f4)
  [ -n "$out" ] || { cargo bench -p hcq-vfio --bench vm --no-run --target x86_64-unknown-linux-musl; exit 1; }
  BIN=$out; BINNAME=bench_vm
else
  cargo build -q -p hcq-vfio --example edu_vm --target x86_64-unknown-linux-musl
  BIN="$ROOT/target/x86_64-unknown-linux-musl/debug/examples/edu_vm"; BINNAME=edu_vm
fi

echo "== initramfs"
RD="$WORK/rootfs"
rm -rf "$RD" && mkdir -p "$RD"/{bin,sbin,proc,sys,dev,lib/modules}
cp /bin/busybox "$RD/bin/busybox"
: > "$RD/modules.list"
# load order; vfio_virqfd exists only up to 6.1 (merged into vfio.ko later)
for m in virt/lib/irqbypass drivers/vfio/vfio drivers/vfio/vfio_iommu_type1 drivers/vfio/vfio_virqfd \
         drivers/vfio/pci/vfio-pci-core drivers/vfio/pci/vfio-pci; do
  f=$(ls "$KROOT/lib/modules/$KVER/kernel/$m".ko* 2>/dev/null | head -1) || true
  [ -n "$f" ] || continue
  n=$(basename "$m"); echo "$n" >> "$RD/modules.list"
  case $f in
    *.xz) xz -dc "$f" > "$RD/lib/modules/$n.ko";;
    *.zst) zstd -qdc "$f" > "$RD/lib/modules/$n.ko";;
    *) cp "$f" "$RD/lib/modules/$n.ko";;
  esac
done
cp "$CRATE/vm/init" "$RD/init" && chmod +x "$RD/init"
cp "$BIN" "$RD/$BINNAME"
(cd "$RD" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$WORK/initramfs.cpio.gz"

ACC="-accel tcg -cpu max"
if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then ACC="-accel kvm -cpu host"; fi
LOG="$WORK/serial-$MODE.log"
echo "== boot ($ACC, kernel $KVER, log $LOG)"
start=$(date +%s.%N)
set +e
timeout "$TIMEOUT" qemu-system-x86_64 -M q35,kernel-irqchip=split $ACC -m 512 -smp 2 -nographic -no-reboot \
  -device intel-iommu,intremap=on,caching-mode=on \
  -device pcie-root-port,id=rp1,chassis=1,slot=1 -device edu,bus=rp1 \
  -device edu,addr=05.0,multifunction=on -device virtio-rng-pci,addr=05.1 \
  -device isa-debug-exit,iobase=0xf4,iosize=0x04 -net none -vga none \
  -kernel "$KROOT/boot/vmlinuz-$KVER" -initrd "$WORK/initramfs.cpio.gz" \
  -append "console=ttyS0 intel_iommu=on panic=-1 quiet loglevel=4 vfiotest=$MODE" > "$LOG" 2>&1
qrc=$?
set -e
end=$(date +%s.%N)
cat "$LOG"
printf 'wall time: %.1f s (qemu rc=%d)\n' "$(echo "$end - $start" | bc 2>/dev/null || echo 0)" "$qrc"
if [ $qrc -eq 124 ]; then echo "qemu-vfio: TIMEOUT after ${TIMEOUT}s"; exit 124; fi
if [ $((qrc & 1)) -eq 1 ]; then
  rc=$((qrc >> 1))
  [ $rc -eq 0 ] && echo "qemu-vfio: all checks passed" || echo "qemu-vfio: FAILED (guest status $rc)"
  exit $rc
fi
echo "qemu-vfio: the VM exited without reporting a status (rc=$qrc: kernel panic?)"
exit 125
