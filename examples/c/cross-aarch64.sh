#!/bin/sh
# The C example cross-built for aarch64 Linux (the comma three's architecture) and run under
# qemu-user on the sample bundles (their aarch64 objects): exits non-zero on any failure.
# Needs gcc-aarch64-linux-gnu, qemu-user and the aarch64-unknown-linux-gnu Rust target.
# CARGO_TARGET_DIR defaults to target/ (set it to keep the cross build apart).
set -eu
cd "$(dirname "$0")/../.."
target_dir=${CARGO_TARGET_DIR:-target}
cargo build -q -p hcq-ffi --target aarch64-unknown-linux-gnu
lib="$target_dir/aarch64-unknown-linux-gnu/debug"
exe="$lib/hcq_example"
aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror -O1 examples/c/hcq_example.c -Iinclude -L"$lib" -lhcq -o "$exe"
for b in chain100 mlp; do
    out=$(QEMU_LD_PREFIX=/usr/aarch64-linux-gnu LD_LIBRARY_PATH="$lib" qemu-aarch64 -L /usr/aarch64-linux-gnu "$exe" "examples/$b" CPU)
    echo "$out"
    echo "$out" | grep -q "check PASS"
done
echo "$out" | grep -q OK
echo "aarch64 C example: PASS"
