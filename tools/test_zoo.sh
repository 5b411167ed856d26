#!/usr/bin/env bash
# CI part of the model zoo (tools/zoo.py, docs/zoo.md): its two smallest models with openpilot's flags (FLOAT16=1 IMAGE=1
# NOLOCALS=1 JIT_BATCH_SIZE=0, OPENPILOT_HACKS=1): the smallest torchvision architecture, squeezenet1_1 (22 kernels, 55
# image views) at openpilot's camera input (uint8 1x12x128x256), and the transformer policy head (policy_transformer, 40
# kernels); `bash tools/test_zoo.sh shufflenet_v2_x0_5` makes the bundle PERFORMANCE.md's host-share row reads. Through both routes:
#   - torch.onnx.export (opset 17) -> tinygrad 0.14's OnnxRunner -> export_tinygrad.py --qcom-jit under `hcq vkgsl --`;
#   - the TinyJit openpilot's compile3.py makes from the same ONNX file, pickled -> export_tinygrad.py --pickle;
# each bundle run with --check on QCOM:SIM and on QCOM under `hcq vkgsl --` (hcq's outputs bit-exact against tinygrad's on
# the virtual A630), and those outputs within 5e-2 * max|onnxruntime| of onnxruntime's for the bundle's own inputs.
#
#   HCQ_BIN=target/release/hcq bash tools/test_zoo.sh [MODEL,MODEL...]     (default: squeezenet1_1,policy_transformer)
#
# Environment: HCQ_BIN (required: the hcq binary, libhcq_vkgsl.so next to it or at $HCQ_VKGSL_LIB); TG_VENV (default
# ~/.cache/hcq/tg-venv-tinygrad0.14.0-torch2.9.1, the venv of tools/tinygrad_on_vkgsl.sh, kept between runs and clones:
# tinygrad 0.14.0, tinymesa 25.2.7.2, torch 2.9.1, numpy 2.4.6, and what the zoo adds from PyPI: torchvision 0.24.1,
# onnx 1.19.0 (tinygrad 0.14's own test pin), onnxruntime 1.23.2; created or completed when a pin is missing: sharing it
# saves CI a second 7 GB torch install); ZOO_WORK (default target/zoo-ci: ONNX files, bundles, logs, zoo.json). "SKIP: ..." when the environment cannot
# run it; under CI=true that is a failure. Every model that fails is listed with the failing tool's own error.
# Last line: "N passed, M failed"; non-zero exit when M > 0.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hcq/tg-venv-tinygrad0.14.0-torch2.9.1}"
WORK="${ZOO_WORK:-$ROOT/target/zoo-ci}"
MODELS="${1:-squeezenet1_1,policy_transformer}"
skip() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL: cannot run under CI=true: $*"; echo "0 passed, 1 failed"; exit 1; fi
  echo "SKIP: $*"; exit 0
}

[ -n "${HCQ_BIN:-}" ] && [ -x "$HCQ_BIN" ] || skip "HCQ_BIN is not set to the hcq binary (cargo build --release -p hcq-cli)"
LIB="${HCQ_VKGSL_LIB:-$(dirname "$HCQ_BIN")/libhcq_vkgsl.so}"
[ -f "$LIB" ] || skip "no libhcq_vkgsl.so at $LIB (cargo build --release -p hcq-vkgsl)"
export HCQ_VKGSL_LIB="$LIB"
# shellcheck source=tools/tg_venv.sh
. "$ROOT/tools/tg_venv.sh"
tg_venv "$VENV" torch==2.9.1 numpy==2.4.6 torchvision==0.24.1 onnx==1.19.0 onnxruntime==1.23.2 || skip "$TG_VENV_ERROR"

rm -rf "$WORK"
mkdir -p "$WORK"
start=$(date +%s)
# --iters 0: every bundle runs once per device with --check (no timing: the table's timings come from docs/zoo.md's run)
"$PY" "$ROOT/tools/zoo.py" --models "$MODELS" --flags openpilot --routes qcom-jit,pickle --iters 0 --hcq "$HCQ_BIN" \
  --work "$WORK" --json "$WORK/zoo.json" --markdown "$WORK/zoo.md"
rc=$?
echo "test_zoo.sh: $(($(date +%s) - start)) s (logs, bundles and the table in $WORK)"
exit $rc
