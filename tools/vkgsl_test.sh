# The shared part of the tests that run tinygrad and hcq under the virtual device
# (test_qcom_capture.sh, test_amd_capture.sh, test_amd_stream_diff.sh; sourced, not run): the
# PASS/FAIL counters, SKIP (a failure under CI=true), the hcq binary and libhcq_vkgsl.so, and
# the tinygrad venv.
#
#   ROOT=...; . "$ROOT/tools/vkgsl_test.sh"; vkgsl_test_env "$VENV"   # then pass/fail/check, finish
PASSED=0
FAILED=0
START=$(date +%s)
skip() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL: cannot run under CI=true: $*"; echo "0 passed, 1 failed"; exit 1; fi
  echo "SKIP: $*"; exit 0
}
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { local what="$1"; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

# vkgsl_test_env VENV: HCQ_BIN is the hcq binary, HCQ_VKGSL_LIB (exported) libhcq_vkgsl.so (beside
# it unless set), PY the python of the tinygrad venv VENV (made when missing); else skip.
vkgsl_test_env() {
  [ -n "${HCQ_BIN:-}" ] && [ -x "$HCQ_BIN" ] || skip "HCQ_BIN is not set to the hcq binary (cargo build --release -p hcq-cli)"
  LIB="${HCQ_VKGSL_LIB:-$(dirname "$HCQ_BIN")/libhcq_vkgsl.so}"
  [ -f "$LIB" ] || skip "no libhcq_vkgsl.so at $LIB (cargo build --release -p hcq-vkgsl)"
  export HCQ_VKGSL_LIB="$LIB"
  # shellcheck source=tools/tg_venv.sh
  . "$ROOT/tools/tg_venv.sh"
  tg_venv "$1" || skip "$TG_VENV_ERROR"
}

# finish: the time taken and "N passed, M failed"; the status is non-zero when M > 0.
finish() {
  echo "time: $(($(date +%s) - START)) s"
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
