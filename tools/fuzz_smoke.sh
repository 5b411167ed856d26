#!/usr/bin/env bash
# Build every cargo-fuzz target of tests/fuzz (the [[bin]]s of its Cargo.toml) the way cargo-fuzz does, without
# needing cargo-fuzz installed, seed them, and run each for SECS seconds (default 20). A crash,
# a leak past -rss_limit_mb or a build failure exits non-zero. Needs a nightly toolchain and a
# C++ compiler (libfuzzer-sys builds libFuzzer). Used by .ci/run; longer runs:
#   bash tools/fuzz_smoke.sh 300
# Environment: HCQ_BIN (an hcq binary to pack the example bundles as seeds; default
# target/release/hcq, built when missing).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECS="${1:-20}"
HCQ_BIN="${HCQ_BIN:-$ROOT/target/release/hcq}"
[ -x "$HCQ_BIN" ] || (cd "$ROOT" && cargo build --release -q -p hcq-cli)
HOST="$(rustc +nightly -vV | sed -n 's/^host: //p')"
cd "$ROOT/tests/fuzz"
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
  cargo +nightly build --release --target "$HOST" --bins
TARGETS=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^hcq-fuzz$')
for t in $TARGETS; do mkdir -p "corpus/$t"; done
mkdir -p artifacts
cp "$ROOT"/hal/cpu/tests/data/*/*.o "$ROOT"/examples/*/prog_*.o corpus/elf/ 2>/dev/null || true
cp "$ROOT"/tests/data/bundles-bad/*.hcqb corpus/bundle/
cp "$ROOT"/tests/data/bundles-bad/*.hcqb corpus/load/
for b in "$ROOT"/examples/*/ "$ROOT"/examples/amd/*/; do
  [ -f "$b/manifest.json" ] || continue
  name="$(basename "$(dirname "$b")")-$(basename "$b")"
  "$HCQ_BIN" pack "$b" -o "corpus/bundle/$name.hcqb" >/dev/null
  cp "corpus/bundle/$name.hcqb" "corpus/load/$name.hcqb"
  cp "corpus/bundle/$name.hcqb" "corpus/qcom_load/$name.hcqb"
done
# seeds: real shader images for the ir3 targets (the interpreter target reads its first 66 bytes
# as launch parameters, so any bytes serve)
cp "$ROOT"/examples/*/*.a630.bin corpus/ir3_decode/ 2>/dev/null || true
cp "$ROOT"/examples/*/*.a630.bin corpus/ir3_exec/ 2>/dev/null || true
# seeds: tinygrad's gfx1100 code objects for the AMD loader
cp "$ROOT"/hal/amd/tests/data/tinygrad/*.co corpus/amd_codeobj/
cp "$ROOT"/examples/amd/*/*.gfx1100.co corpus/amd_codeobj/
for t in $TARGETS; do
  echo "fuzz $t: ${SECS}s"
  rc=0
  "./target/$HOST/release/$t" "corpus/$t" -max_total_time="$SECS" -rss_limit_mb=2048 \
    -artifact_prefix="artifacts/" -print_final_stats=1 >"artifacts/$t.log" 2>&1 || rc=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY)' "artifacts/$t.log" || true
  # a target that dies by a signal libFuzzer does not catch (a stack overflow's SIGSEGV) leaves
  # no artifact: its exit status says so
  if [ "$rc" -ne 0 ]; then
    tail -20 "artifacts/$t.log"
    echo "FAIL: fuzz $t exited with status $rc (log: tests/fuzz/artifacts/$t.log)"; exit 1
  fi
  # a crash leaves a crash-/leak-/oom- artifact
  if ls artifacts/ 2>/dev/null | grep -qE '^(crash|leak|oom|timeout)-'; then
    echo "FAIL: fuzz $t left $(ls artifacts/ | grep -E '^(crash|leak|oom|timeout)-' | tr '\n' ' ')in tests/fuzz/artifacts"; exit 1
  fi
done
echo "fuzz smoke: $(echo $TARGETS | tr "\n" " ")ran ${SECS}s each without a crash"
