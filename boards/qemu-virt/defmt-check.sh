#!/usr/bin/env bash
# defmt check of the QEMU `virt` image: boots the default image, decodes the defmt frames it
# wrote (through semihosting, next to the ELF) with the board's host decoder `defmt-log`
# (defmt's own decoder library; no `cargo install defmt-print`), and checks them against the
# plain-text results on the UART: the boot frame names as many bundles as the UART reports,
# every bundle reported ok has its `bundle NAME: N us` INFO frame, and there is no ERROR frame.
# Then damaged frame files must be refused (exit status 1 and a message), never decoded into
# garbage or a panic: one cut short, one with a frame that is not in the image's table.
#
# Usage (from anywhere): boards/qemu-virt/defmt-check.sh      exit status 0 = the check passed
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build -q --release --manifest-path boards/qemu-virt/defmt-log/Cargo.toml
tool=boards/qemu-virt/defmt-log/target/release/defmt-log
cargo build -q --release --manifest-path boards/qemu-virt/Cargo.toml --config boards/qemu-virt/.cargo/config.toml
elf=boards/qemu-virt/target/aarch64-unknown-none/release/hcq-board-qemu-virt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "defmt check: FAILED: $*"; exit 1; }

rm -f "$elf.defmt"
set +e
# the same machine as the cargo runner
timeout 60 qemu-system-aarch64 -M virt -cpu cortex-a57 -m 256M -nographic -semihosting -kernel "$elf" \
  >"$tmp/uart" 2>&1 </dev/null
rc=$?
set -e
[ "$rc" -eq 0 ] || { cat "$tmp/uart"; fail "the image exited with status $rc"; }
[ -s "$elf.defmt" ] || fail "the image wrote no defmt frames to $elf.defmt"
"$tool" "$elf" >"$tmp/log" || fail "defmt-log could not decode $elf.defmt"
cat "$tmp/log"

n=$(grep -c '^bundle [^ ]*: ok' "$tmp/uart" || true)
[ "$n" -gt 0 ] || fail "the UART reports no bundle as ok"
grep -qE "^[0-9]+\.[0-9]+ INFO +boot: heap [0-9]+ bytes, $n bundles embedded$" "$tmp/log" \
  || fail "no boot frame naming $n bundles"
for name in $(sed -n 's/^bundle \([^ ]*\): ok.*/\1/p' "$tmp/uart"); do
  grep -qE "^[0-9]+\.[0-9]+ INFO +bundle $name: [0-9]+ us$" "$tmp/log" || fail "no frame for bundle $name"
done
if grep -q " ERROR " "$tmp/log"; then fail "an ERROR frame"; fi

# damaged files: the last byte (a frame's terminating zero) dropped; a frame that is no frame
size=$(stat -c %s "$elf.defmt")
head -c $((size - 1)) "$elf.defmt" >"$tmp/cut"
check_refused() { # FILE WHAT PATTERN
  set +e
  "$tool" "$elf" "$1" >/dev/null 2>"$tmp/err"
  local r=$?
  set -e
  [ "$r" -eq 1 ] || fail "$2: exit status $r, expected 1"
  grep -q "$3" "$tmp/err" || fail "$2: no '$3' in: $(cat "$tmp/err")"
}
check_refused "$tmp/cut" "a frame file cut short" "cut short"
{ cat "$elf.defmt"; printf '\377\377\377\377\377\000'; } >"$tmp/bad"
check_refused "$tmp/bad" "an unknown frame" "malformed"
echo "defmt check: ok ($(wc -l <"$tmp/log") frames decoded, $n bundles with their frames; damaged files refused)"
