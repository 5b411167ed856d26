#!/bin/sh
# Rebuild the core_id test kernel with tinygrad's clang flags (x86-64-v2 and AArch64).
set -e
cd "$(dirname "$0")"
F="-c -x c -O2 -fPIC -ffreestanding -fno-math-errno -nostdlib -fno-ident"
clang $F --target=x86_64-none-unknown-elf -march=x86-64-v2 fill.c -o fill.o
clang $F --target=aarch64-none-unknown-elf -ffixed-x18 -mcpu=generic fill.c -o fill.aarch64.o
