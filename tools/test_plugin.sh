#!/usr/bin/env bash
# The device plug-in point from C and Python: tests/plugin's COUNT kind (registered from outside
# hcq-runtime) through libhcq's C ABI (libhcq_count.so = hcq-capi + COUNT, registered as the
# library loads) and the ctypes Python package (HCQ_LIB=libhcq_count.so). The Rust front door
# and the command line (hcq-count) are cargo tests of tests/plugin.
#
#   bash tools/test_plugin.sh [PYTHON]     PYTHON: an interpreter with numpy (default python3)
#
# Under CI=true a missing compiler or numpy fails; elsewhere it says SKIP for that part.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
pass=0
fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
cannot() {
  if [ "${CI:-}" = "true" ]; then bad "cannot run under CI=true: $*"; else echo "SKIP: $*"; fi
}

cargo build -q -p hcq-plugin-count-capi
LIBDIR="$PWD/target/debug"
LIB="$LIBDIR/libhcq_count.so"
[ -f "$LIB" ] || { echo "FAIL: $LIB was not built"; exit 1; }

# C: the repository's example, unchanged, linked against libhcq_count.so, on COUNT
if command -v "${CC:-cc}" >/dev/null; then
  exe="$LIBDIR/hcq_example_count"
  "${CC:-cc}" -std=c11 -Wall -Wextra -Werror -O1 examples/c/hcq_example.c -Iinclude \
    -L"$LIBDIR" -Wl,-rpath,"$LIBDIR" -lhcq_count -o "$exe"
  for b in chain100 mlp; do
    if out=$("$exe" "examples/$b" COUNT 2>&1) && grep -q '^device COUNT ' <<<"$out" \
       && grep -q '^check PASS' <<<"$out" && [ "$(tail -1 <<<"$out")" = OK ]; then
      ok "C example on COUNT ($b)"
    else
      bad "C example on COUNT ($b): $out"
    fi
  done
else
  cannot "no C compiler (cc) for the C example"
fi

# Python: the package from the repository, over libhcq_count.so
if "$PY" -c "import numpy" 2>/dev/null; then
  if HCQ_LIB="$LIB" PYTHONPATH=python "$PY" - <<'PYEOF'
import hcq
import numpy as np

def launches():
    line = next(l for l in hcq.devices().splitlines() if "COUNT" in l)
    assert "PASS count" in line, hcq.devices()
    return int(line.split("(")[-1].split()[0])

m = hcq.load("examples/mlp", device="count")
assert " on COUNT (counting launches" in repr(m), repr(m)
before = launches()
m.run()
per_call = launches() - before
assert per_call > 0, "a call's kernels are counted by COUNT"
for _ in range(3):
    m.run()
assert launches() - before == 4 * per_call, (before, launches(), per_call)
assert m.check(), "mlp on COUNT matches its expected outputs"
t = m.inputs[0]
try:
    m.bind(0, np.zeros(t.shape, t.dtype))
except hcq.Error as e:
    assert "COUNT" in str(e), e
else:
    raise AssertionError("COUNT binds no caller memory")
print(f"python: mlp on COUNT, 4 calls of {per_call} kernels counted, check passed")
PYEOF
  then ok "Python package on COUNT"; else bad "Python package on COUNT"; fi
else
  cannot "$PY has no numpy for the Python package"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
