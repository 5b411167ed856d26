#!/bin/sh
# Rebuild the test objects (Debian clang 14.0.6 made the committed ones), with tinygrad's flags.
set -e
cd "$(dirname "$0")"
FLAGS="-c -x c -O2 -fPIC -ffreestanding -fno-math-errno -nostdlib -fno-ident -ffunction-sections"
clang $FLAGS --target=x86_64-none-unknown-elf -march=x86-64-v2 relocs.c -o relocs.o
clang $FLAGS --target=aarch64-none-unknown-elf -ffixed-x18 -mcpu=generic relocs.c -o relocs.aarch64.o
