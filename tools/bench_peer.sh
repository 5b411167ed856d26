#!/usr/bin/env bash
# tinygrad 0.14, a Python ctypes loop, the C floor and hcq on the sample bundles: prepares a venv with tinygrad 0.14.0 + numpy (like tools/test_export.sh),
# builds the hcq CLI in release mode unless HCQ_BIN is set, and runs tools/bench_peer.py, which prints the comparison table.
#
# Environment: TG_VENV (venv path, default target/tg-export-venv, shared with test_export.sh), HCQ_BIN (an hcq binary; when
# unset, `cargo build --release -p hcq-cli --bin hcq` and target/release/hcq), CC (the C compiler tinygrad runs, default clang).
# Arguments are passed to bench_peer.py (e.g. --models chain100 --iters 2000 --native --json).
# Prints "SKIP: ..." and exits 0 when the environment cannot run tinygrad's CPU backend (no pip/network, no clang, not x86-64).
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TG_VENV:-$ROOT/target/tg-export-venv}"
CC_BIN="${CC:-clang}"

skip() { echo "SKIP: $*"; exit 0; }

case "$(uname -m)" in x86_64|amd64) ;; *) skip "the peer benchmark needs an x86-64 host (the bundles' tinygrad objects are x86-64; this is $(uname -m))" ;; esac
command -v "$CC_BIN" >/dev/null 2>&1 || skip "$CC_BIN not found (tinygrad's CPU backend compiles kernels with clang; apt-get install clang)"
command -v python3 >/dev/null 2>&1 || skip "python3 not found"
command -v objcopy >/dev/null 2>&1 || skip "objcopy not found (the C floor links the bundle's objects with renamed symbols; apt-get install binutils)"

# shellcheck source=tools/tg_venv.sh
. "$ROOT/tools/tg_venv.sh"
tg_venv "$VENV" || skip "$TG_VENV_ERROR"

if [ -z "${HCQ_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release -q -p hcq-cli --bin hcq) || { echo "FAIL: cargo build --release -p hcq-cli"; exit 1; }
  HCQ_BIN="$ROOT/target/release/hcq"
fi

export CC="$CC_BIN"
exec "$PY" "$ROOT/tools/bench_peer.py" --hcq "$HCQ_BIN" "$@"
