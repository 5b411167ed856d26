#!/usr/bin/env bash
# Fault check of the QEMU `virt` image: built with the `fault-test` feature, the image reads an
# address its identity map leaves unmapped after boot. The exception handler must print the
# exception (class, ESR, FAR, ELR) and exit non-zero within a second instead of hanging.
#
# Usage (from anywhere): boards/qemu-virt/fault-check.sh      exit status 0 = the check passed
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build -q --release --manifest-path boards/qemu-virt/Cargo.toml \
  --config boards/qemu-virt/.cargo/config.toml --features fault-test
elf=boards/qemu-virt/target/aarch64-unknown-none/release/hcq-board-qemu-virt
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
set +e
# the same machine as the cargo runner; `timeout 10` turns a hang into a failure, not a stall
timeout 10 qemu-system-aarch64 -M virt -cpu cortex-a57 -m 256M -nographic -semihosting -kernel "$elf" >"$out" 2>&1 </dev/null
rc=$?
set -e
ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out"
fail() { echo "fault check: FAILED: $*"; exit 1; }
[ "$rc" -ne 124 ] || fail "the guest hung (killed after 10 s)"
[ "$rc" -eq 3 ] || fail "exit status $rc, expected 3 (exception)"
grep -q "^fault-test: reading 0x80001230" "$out" || fail "the image did not reach the deliberate bad access"
grep -q "EXCEPTION: synchronous from current EL with SP_ELx: class 0x25 data abort (same EL)" "$out" \
  || fail "no data-abort report"
grep -q "FAR 0x80001230" "$out" || fail "the report does not name the faulting address"
grep -q "translation fault, level 1" "$out" || fail "the report does not decode the fault status"
grep -q "^result:" "$out" && fail "the image ran on past the fault"
[ "$ms" -le 1000 ] || fail "took ${ms} ms from QEMU start to exit (limit 1000 ms)"
echo "fault check: ok (exception reported, exit status $rc, ${ms} ms from QEMU start to exit)"
