#!/usr/bin/env bash
# tinygrad 0.14.0, unmodified, on the virtual Adreno 630 (libhcq_vkgsl.so preloaded, DEV=QCOM:IR3),
# against the same test files on DEV=CPU in the same run: prints the counts and wall times of both
# and fails when a test that passes on CPU does not pass on the virtual device.
#
#   bash tools/tinygrad_on_vkgsl.sh [TEST_FILE ...]     (paths under test/; default: test_tiny.py backend/test_jit.py)
#
# The test files are tinygrad's own (../shared/reference/tinygrad/test, copied to target/tg-run so
# that `test.helpers` imports; never copied into the repository). Environment: TG_VENV (a venv with
# tinygrad==0.14.0, numpy and tinymesa==25.2.7.2; default target/tg-export-venv, the exporter test's),
# HCQ_VKGSL_LIB (default target/release/libhcq_vkgsl.so, built here when missing). Under CI=true a
# missing ../shared or venv fails; elsewhere it prints SKIP.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
skip() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL: $*"; exit 1; fi
  echo "SKIP: $*"; exit 0
}
SRC="$ROOT/../shared/reference/tinygrad/test"
[ -d "$SRC" ] || skip "tinygrad's tests are not at $SRC"
VENV="${TG_VENV:-$ROOT/target/tg-export-venv}"
PY="$VENV/bin/python"
[ -x "$PY" ] || skip "no tinygrad venv at $VENV (tools/test_export.sh creates it)"
"$PY" -c "import tinygrad, pytest" 2>/dev/null || "$PY" -m pip install --quiet --disable-pip-version-check pytest \
  || skip "pip install pytest failed"
LIB="${HCQ_VKGSL_LIB:-$ROOT/target/release/libhcq_vkgsl.so}"
[ -f "$LIB" ] || cargo build --release -q -p hcq-vkgsl
RUN="$ROOT/target/tg-run"
rm -rf "$RUN" && mkdir -p "$RUN" && cp -r "$SRC" "$RUN/test"
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(test_tiny.py backend/test_jit.py)
status=0
for f in "${files[@]}"; do
  for dev in CPU QCOM; do
    log="$RUN/$(basename "$f" .py).$dev.log"
    t0=$(date +%s)
    set +e
    if [ "$dev" = QCOM ]; then
      (cd "$RUN" && LD_PRELOAD="$LIB" DEV=QCOM:IR3 timeout 900 "$PY" -m pytest -q -p no:cacheprovider -rA "test/$f" >"$log" 2>&1)
    else
      (cd "$RUN" && DEV=CPU timeout 900 "$PY" -m pytest -q -p no:cacheprovider -rA "test/$f" >"$log" 2>&1)
    fi
    rc=$?
    set -e
    echo "$f on $dev: $(tail -1 "$log") (rc $rc, $(( $(date +%s) - t0 )) s)"
    grep -E "^PASSED" "$log" | sed 's/^PASSED //' | sort >"$log.passed" || true
  done
  cpu="$RUN/$(basename "$f" .py).CPU.log.passed"
  qcom="$RUN/$(basename "$f" .py).QCOM.log.passed"
  if [ ! -s "$cpu" ]; then
    echo "FAIL: $f: no test passed on DEV=CPU (see $RUN)"; status=1; continue
  fi
  qlog="$RUN/$(basename "$f" .py).QCOM.log"
  # a test that passes on CPU must not fail or error on the virtual A630; one tinygrad itself
  # skips there (a CPU-only runtime variable, no second device) is listed with its reason
  grep -E "^(FAILED|ERROR) " "$qlog" | sed -E 's/^(FAILED|ERROR) //; s/ - .*//' | sort -u >"$qlog.failed" || true
  broken=$(comm -12 "$cpu" "$qlog.failed" || true)
  if [ -n "$broken" ]; then
    echo "FAIL: $f: passes on CPU but fails on the virtual A630:"
    echo "$broken" | sed 's/^/  /'
    grep -E "hcq-vkgsl" "$qlog" | head -10 | sed 's/^/  /'
    status=1
  fi
  if ! grep -qE "passed" <(tail -1 "$qlog"); then
    echo "FAIL: $f: the run on the virtual A630 did not finish (see $qlog)"; status=1
  fi
  skipped=$(comm -23 "$cpu" "$qcom" | comm -23 - "$qlog.failed" || true)
  if [ -n "$skipped" ]; then
    echo "  passed on CPU, skipped by tinygrad on QCOM: $(echo "$skipped" | wc -l)"
    grep -E "^SKIPPED" "$qlog" | sed 's/^/    /'
  fi
done
exit $status
