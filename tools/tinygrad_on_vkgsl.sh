#!/usr/bin/env bash
# tinygrad 0.14.0, unmodified, on a virtual device of libhcq_vkgsl.so (preloaded): the Adreno 630
# (DEV=QCOM:IR3, the default) or, with TG_VDEV=AMD, the AMD gfx1100 behind /dev/kfd (DEV=AMD:LLVM,
# tinygrad's AMD LLVM renderer and compiler, formerly AMD_LLVM=1) — against the same test files on
# DEV=CPU in the same run: prints the counts and wall times of both and fails when a test that
# passes on CPU does not pass on the virtual device.
#
#   bash tools/tinygrad_on_vkgsl.sh [TEST_FILE | @SHARD ...]  (paths under test/; default: test_tiny.py backend/test_jit.py)
#   bash tools/tinygrad_on_vkgsl.sh @tools/tinygrad_shards/test_ops.txt
#   TG_FLAGS="FLOAT16=1 IMAGE=1 NOLOCALS=1" bash tools/tinygrad_on_vkgsl.sh ... hcq_vkgsl_checks.py
#   TG_VDEV=AMD bash tools/tinygrad_on_vkgsl.sh test_tiny.py device/test_hcq.py
#
# TG_FLAGS: extra tinygrad environment for both runs (openpilot's flags above: fp16 image kernels, IBO
# stores; the CPU run gets the same flags, so a test the flags break in tinygrad itself fails on both).
# `hcq_vkgsl_checks.py` is written by this script: conv2d and matmul against numpy, and a kernel that
# ir3 must spill to private memory (on QCOM it must have pvtmem > 0). KNOWN below lists failures that
# come from tinygrad's own runtime code (raised before any ioctl) or from the shader its compiler
# makes (the same on a real A630 or 7900 XTX), each for one device and allowed only with its exact
# error in the log. Every pytest run is under `timeout`, so a hang fails instead of stalling.
#
# A file DEV=CPU skips whole (tinygrad's test/device/ suites are not run there at all;
# backend/test_graph.py skips every test) is judged on the virtual device alone: every test that does
# not skip there must pass, and at least one must.
#
# @SHARD: a file of pytest ids under test/ (one a line, `#` comments), run as one pytest call whose
# logs are named after the file (tools/tinygrad_shards/: fixed subsets of suites too long for CI).
#
# The test files are tinygrad's own (../shared/reference/tinygrad/test, copied to TG_RUN_DIR, default
# target/tg-run, so that `test.helpers` imports; never copied into the repository). The DEV=CPU runs
# compile with clang. Environment:
#   TG_VENV        default ~/.cache/hcq/tg-venv-tinygrad0.14.0-torch2.9.1, kept between runs and clones;
#                  created (or completed) by tools/tg_venv.sh when a pin below is missing or differs:
#                  tinygrad 0.14.0, tinymesa 25.2.7.2 (DEV=QCOM:IR3 compiles with it), torch 2.9.1
#                  (test_ops and test_dtype compare against it; PyPI's Linux wheel with its CUDA
#                  libraries: several minutes and ~7 GB the first time), numpy, pytest, hypothesis
#                  (test_dtype, test_dtype_alu, test_transcendental)
#   TG_RUN_DIR     the copy of test/ and the logs (default target/tg-run)
#   TG_TIMEOUT     seconds per pytest call (default 900)
#   TG_VDEV        QCOM (default) or AMD: which virtual device; logs are named $file.$TG_VDEV.log.
#                  AMD needs a libLLVM of 18 or newer where tinygrad looks (apt-get install libllvm19;
#                  or LLVM_PATH=/path/to/libLLVM.so), else SKIP
#   TG_WAIT_MS     AMD: tinygrad's HCQ signal timeout there (HCQDEV_WAIT_TIMEOUT_MS, default 600000:
#                  the interpreter runs a kernel of millions of wave instructions per wave for tens of
#                  seconds)
#   HCQ_VKGSL_LIB  default target/release/libhcq_vkgsl.so, built here when missing
#   TG_EXTRA_SRC   a checkout of tinygrad at the tests' commit (see ../shared/reference/tinygrad/SOURCES.md):
#                  its examples/ and extra/ are copied beside test/ in TG_RUN_DIR (never into the
#                  repository), for the suites that import them (backend/test_symbolic_ops.py needs
#                  examples/gpt2.py, which imports extra/bench_log.py); without it those suites fail
#                  with ModuleNotFoundError on both devices
# Under CI=true a missing ../shared, clang or a venv that cannot be installed fails; elsewhere it
# prints SKIP.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
skip() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL: $*"; exit 1; fi
  echo "SKIP: $*"; exit 0
}
SRC="$ROOT/../shared/reference/tinygrad/test"
[ -d "$SRC" ] || skip "tinygrad's tests are not at $SRC"
command -v clang >/dev/null || skip "clang not found (tinygrad's DEV=CPU compiles its kernels with it; apt-get install clang)"
VENV="${TG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hcq/tg-venv-tinygrad0.14.0-torch2.9.1}"
# shellcheck source=tools/tg_venv.sh
. "$ROOT/tools/tg_venv.sh"
tg_venv "$VENV" torch==2.9.1 numpy==2.4.6 pytest==9.2.0 hypothesis==6.170.17 || skip "$TG_VENV_ERROR"
VDEV="${TG_VDEV:-QCOM}"
VEXTRA=()
case "$VDEV" in
  QCOM) VDEVSTR=QCOM:IR3; VNAME="the virtual A630" ;;
  AMD)
    VDEVSTR=AMD:LLVM; VNAME="the virtual gfx1100"
    # tinygrad gives an HCQ signal 30 s; one kernel of test_ops' masked_select (r_320_16_320_320_20:
    # 3.3e9 wave instructions, a few ms on a 7900 XTX) takes the RDNA3 interpreter about 40 s here
    VEXTRA=("HCQDEV_WAIT_TIMEOUT_MS=${TG_WAIT_MS:-600000}")
    # tinygrad's AMD LLVM compiler loads the newest libLLVM it finds and needs 18+ (amdgcn intrinsics)
    llvm18=""
    for f in /usr/lib/*/libLLVM-{18,19,20,21}.so* /usr/lib/*/libLLVM.so.{18,19,20,21}*; do
      [ -e "$f" ] && llvm18=1
    done
    [ -n "${LLVM_PATH:-}" ] || [ -n "$llvm18" ] \
      || skip "tinygrad's AMD LLVM compiler needs libLLVM 18 or newer (apt-get install libllvm19, or LLVM_PATH)" ;;
  *) echo "FAIL: TG_VDEV=$VDEV is neither QCOM nor AMD"; exit 1 ;;
esac
LIB="${HCQ_VKGSL_LIB:-$ROOT/target/release/libhcq_vkgsl.so}"
[ -f "$LIB" ] || cargo build --release -q -p hcq-vkgsl
RUN="${TG_RUN_DIR:-$ROOT/target/tg-run}"
rm -rf "$RUN" && mkdir -p "$RUN" && cp -r "$SRC" "$RUN/test"
if [ -n "${TG_EXTRA_SRC:-}" ]; then
  for d in examples extra; do
    [ -d "$TG_EXTRA_SRC/$d" ] || { echo "FAIL: TG_EXTRA_SRC=$TG_EXTRA_SRC has no $d/"; exit 1; }
    cp -r "$TG_EXTRA_SRC/$d" "$RUN/$d"
  done
fi
read -r -a FLAGS <<<"${TG_FLAGS:-}"
TIMEOUT="${TG_TIMEOUT:-900}"
# device | test id | a line its log must contain | the cause (not the simulator: the same on the real GPU)
KNOWN=(
  "QCOM|test/test_tiny.py::TestTiny::test_symbolic|TypeError: reduce() arg 2 must support iteration|tinygrad's QCOM runtime, prod(local_size) with local_size=None under NOLOCALS=1, before any ioctl"
  # sin(1e6): Mesa's ir3 lowers fsin(x) to sin(6.2831853 * ffract(0.15915494 * x + 0.5) - 3.14159265)
  # (ir3_nir_trig.py) in fp32, so |x| = 1e6 keeps only ~0.016 of the period: sin(-1e6) -> -0.38268,
  # exactly what that fp32 reduction gives (torch: -0.34999, tolerance 3e-3)
  "QCOM|test/backend/test_ops.py::TestOps::test_sin|[5]: -0.3826833665370941 (ACTUAL), -0.349993497133255 (DESIRED)|Mesa ir3's fp32 range reduction of fsin loses the argument at |x| = 1e6"
  # cos and tan at +-1e6 through the same reduction: fract(0.15915494 * 1e6 + 0.5) in fp32 is 0.4375
  # (the spacing there is 1/64), so the angle is -pi/8: cos 0.9238795 (torch 0.9367521), tan
  # -0.4142135 (torch -0.3736244)
  "QCOM|test/backend/test_ops.py::TestOps::test_cos|[5]: 0.9238795042037964 (ACTUAL), 0.9367521405220032 (DESIRED)|Mesa ir3's fp32 range reduction of fsin/fcos loses the argument at |x| = 1e6"
  "QCOM|test/backend/test_ops.py::TestOps::test_tan|[5]: -0.41421350836753845 (ACTUAL), -0.37362444400787354 (DESIRED)|Mesa ir3's fp32 range reduction (tan = sin/cos) loses the argument at |x| = 1e6"
  # the same reduction at x = -44 (7 periods): fract(-44 * 0.15915494 + 0.5) in fp32 keeps 2e-6 of
  # the angle's error; fused or unfused, that fp32 arithmetic gives -0.0176997 (numpy -0.0177019,
  # rtol 1e-4)
  "QCOM|test/backend/test_transcendental.py::TestTranscendentalVectorized::test_sin_vectorized|[11, 2]: -0.017699748277664185 (ACTUAL), -0.017701925709843636 (DESIRED)|Mesa ir3's fp32 range reduction of fsin at x = -44"
)
cat >"$RUN/test/hcq_vkgsl_checks.py" <<'PY'
# Written by tools/tinygrad_on_vkgsl.sh: results against numpy on the current device (with the run's flags).
import unittest
import numpy as np
from tinygrad import Tensor, Device

def close(got, want, tol):
  scale = max(1.0, float(np.abs(want).max()))
  assert np.abs(got - want).max() <= tol * scale, f"max |error| {np.abs(got - want).max()} (scale {scale})"

class TestVkgslChecks(unittest.TestCase):
  def test_conv2d_relu(self):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 8, 6, 6)).astype(np.float32), rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    got = Tensor(x).conv2d(Tensor(w), padding=1).relu().numpy()
    xp, want = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), np.zeros((1, 16, 6, 6), np.float32)
    for i in range(6):
      for j in range(6): want[0, :, i, j] = np.tensordot(w, xp[0, :, i:i+3, j:j+3], 3)
    close(got, np.maximum(want, 0), 0.02)

  def test_matmul(self):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((16, 64)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32)
    close((Tensor(a) @ Tensor(b)).numpy(), a @ b, 0.02)

  def test_spilling_kernel(self):
    seen = []
    if Device.DEFAULT == "QCOM":
      from tinygrad.runtime import ops_qcom
      orig = ops_qcom.QCOMProgram.__init__
      def init(prg, *a, **k):
        orig(prg, *a, **k)
        seen.append(prg.pvtmem)
      ops_qcom.QCOMProgram.__init__ = init
    try:
      # 200 loads, all live before a balanced sum (a chain 200 deep would exceed clang's bracket depth on CPU)
      K, xs = 200, np.random.default_rng(2).standard_normal(264).astype(np.float32)
      x = Tensor(xs)
      terms = [(x[k:k+64] * (k % 7 + 1)).exp2() * x[(k*37) % K:(k*37) % K + 64] for k in range(K)]
      want = [np.exp2(xs[k:k+64] * (k % 7 + 1)) * xs[(k*37) % K:(k*37) % K + 64] for k in range(K)]
      while len(terms) > 1:
        terms = [terms[i] + terms[i+1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
        want = [want[i] + want[i+1] if i + 1 < len(want) else want[i] for i in range(0, len(want), 2)]
      close(terms[0].numpy(), want[0], 1e-4)
    finally:
      if Device.DEFAULT == "QCOM": ops_qcom.QCOMProgram.__init__ = orig
    if Device.DEFAULT == "QCOM": assert max(seen, default=0) > 0, f"no program spilled (pvtmem {seen})"

if __name__ == "__main__":
  unittest.main()
PY
# Take the KNOWN failures of this device out of $broken (the failing test ids), each only when its
# exact line is in the virtual device's log $qlog, and say so.
drop_known() {
  local k dev id line why
  for k in "${KNOWN[@]}"; do
    IFS='|' read -r dev id line why <<<"$k"
    [ "$dev" = "$VDEV" ] || continue
    if grep -qxF "$id" <<<"$broken" && grep -qF -- "$line" "$qlog"; then
      echo "  known failure on $VDEV, not the simulator ($why): $id: $line"
      broken=$(grep -vxF "$id" <<<"$broken" || true)
    fi
  done
}
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(test_tiny.py backend/test_jit.py)
status=0
for f in "${files[@]}"; do
  if [ "${f#@}" != "$f" ]; then
    # a shard: the ids in the file, one pytest call
    shard="${f#@}"
    [ -f "$shard" ] || { echo "FAIL: shard file $shard (from argument $f) does not exist"; status=1; continue; }
    mapfile -t ids < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' -e 's|^|test/|' "$shard")
    [ ${#ids[@]} -gt 0 ] || { echo "FAIL: shard file $shard lists no test"; status=1; continue; }
    name="$(basename "$shard" .txt)"
  else
    ids=("test/$f")
    name="$(basename "$f" .py)"
  fi
  # tinygrad's device tests (test/device/: test_hcq, test_qcom) need an HCQ device; DEV=CPU skips
  # every one, so they run on the virtual device alone and every test that does not skip must pass
  devs=(CPU "$VDEV")
  qcom_only=""
  if ! printf '%s\n' "${ids[@]}" | grep -qv '^test/device/'; then
    devs=("$VDEV")
    qcom_only=1
  fi
  for dev in "${devs[@]}"; do
    log="$RUN/$name.$dev.log"
    t0=$(date +%s)
    set +e
    if [ "$dev" = "$VDEV" ]; then
      (cd "$RUN" && env "${FLAGS[@]}" "${VEXTRA[@]}" LD_PRELOAD="$LIB" DEV="$VDEVSTR" timeout "$TIMEOUT" "$PY" -m pytest -q -p no:cacheprovider -rA "${ids[@]}" >"$log" 2>&1)
    else
      (cd "$RUN" && env "${FLAGS[@]}" DEV=CPU timeout "$TIMEOUT" "$PY" -m pytest -q -p no:cacheprovider -rA "${ids[@]}" >"$log" 2>&1)
    fi
    rc=$?
    set -e
    echo "$f on $dev${TG_FLAGS:+ ($TG_FLAGS)}: $(tail -1 "$log") (rc $rc, $(( $(date +%s) - t0 )) s)"
    if [ "$rc" = 124 ]; then echo "FAIL: $f on $dev: timed out after $TIMEOUT s (a hang)"; status=1; fi
    grep -E "^PASSED" "$log" | sed 's/^PASSED //' | sort >"$log.passed" || true
    # pytest's subtests: a test whose subtests fail is still PASSED; each failed subtest is
    # `SUBFAILED[params] id` or `SUBFAILED(key=value) id`, kept here as `id[params]`
    grep -E "^SUBFAILED[[(]" "$log" | sed -E 's/^SUBFAILED(\[(.*)\]|\((.*)\)) (test\/[^ ]+).*$/\4[\2\3]/' | sort -u >"$log.subfailed" || true
  done
  cpu="$RUN/$name.CPU.log.passed"
  qcom="$RUN/$name.$VDEV.log.passed"
  qlog="$RUN/$name.$VDEV.log"
  # a file DEV=CPU skips whole (backend/test_graph.py: graphs need an HCQ or graph-capable
  # device) is judged like the device tests: on the virtual A630 alone
  clog="$RUN/$name.CPU.log"
  if [ -z "$qcom_only" ] && [ ! -s "$cpu" ] && ! grep -qE "^(FAILED|ERROR) " "$clog" \
    && grep -qE "^[0-9]+ skipped.* in [0-9.]+s" <(tail -1 "$clog"); then
    qcom_only=2
  fi
  if [ -n "$qcom_only" ]; then
    if [ "$qcom_only" = 2 ]; then
      echo "  (DEV=CPU skips every test of this file: judged on $VNAME alone)"
    else
      echo "  (tinygrad's device tests: not run on DEV=CPU, which skips them all)"
    fi
    grep -E "^(FAILED|ERROR) " "$qlog" | sed -E 's/^(FAILED|ERROR) //; s/ - .*//' | sort -u >"$qlog.failed" || true
    broken=$(cat "$qlog.failed" "$qlog.subfailed" | sed '/^$/d')
    drop_known
    if [ -n "$broken" ]; then
      echo "FAIL: $f: fails on $VNAME:"; echo "$broken" | sed 's/^/  /'; status=1
    fi
    if [ ! -s "$qcom" ]; then echo "FAIL: $f: no test passed on $VNAME (see $RUN)"; status=1; fi
    if ! grep -qE "(passed|skipped|deselected).* in [0-9.]+s" <(tail -1 "$qlog"); then
      echo "FAIL: $f: the run on $VNAME did not finish (see $qlog)"; status=1
    fi
    continue
  fi
  if [ ! -s "$cpu" ]; then
    echo "FAIL: $f: no test passed on DEV=CPU (see $RUN)"; status=1; continue
  fi
  # a test that passes on CPU must not fail or error on the virtual device; one tinygrad itself
  # skips there (a CPU-only runtime variable, no second device) is listed with its reason
  # (and a subtest that passes on CPU, in a test that ran there, must not fail on it either)
  grep -E "^(FAILED|ERROR) " "$qlog" | sed -E 's/^(FAILED|ERROR) //; s/ - .*//' | sort -u >"$qlog.failed" || true
  broken=$(
    comm -12 "$cpu" "$qlog.failed" || true
    comm -23 "$qlog.subfailed" "$RUN/$name.CPU.log.subfailed" | while IFS= read -r sub; do
      if grep -qxF "${sub%%\[*}" "$cpu"; then echo "$sub"; fi
    done
  )
  broken=$(sed '/^$/d' <<<"$broken")
  drop_known
  if [ -n "$broken" ]; then
    echo "FAIL: $f: passes on CPU but fails on $VNAME:"
    echo "$broken" | sed 's/^/  /'
    grep -E "hcq-vkgsl" "$qlog" | head -10 | sed 's/^/  /'
    status=1
  fi
  if ! grep -qE "(passed|skipped|deselected).* in [0-9.]+s" <(tail -1 "$qlog"); then
    echo "FAIL: $f: the run on $VNAME did not finish (see $qlog)"; status=1
  fi
  skipped=$(comm -23 "$cpu" "$qcom" | comm -23 - "$qlog.failed" || true)
  if [ -n "$skipped" ]; then
    echo "  passed on CPU, skipped by tinygrad on $VDEV: $(echo "$skipped" | wc -l)"
    grep -E "^SKIPPED" "$qlog" | sed 's/^/    /'
  fi
done
exit $status
