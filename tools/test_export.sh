#!/usr/bin/env bash
# CI entry point for the tinygrad exporter (tools/export_tinygrad.py).
#
# Creates (or reuses) a venv with tinygrad 0.14.0 + numpy + tinymesa 25.2.7.2, exports tools/models/{mlp,wide,elementwise,
# chain100}.py with --adreno (wide has core_id kernels) into a temporary directory, and checks them: tools/check_bundle.py
# --adreno (structure, hashes, data flow, Adreno metadata, numpy reference), core_id present, bundle size < 1 MiB, the a630
# files and Adreno manifest fields equal to the sample bundle's in examples/ byte for byte, a second export byte-identical, an
# export without --adreno equal to the CPU part of the --adreno one, corrupted copies (CPU and Adreno parts) rejected by the
# checker, and the same manifest structure as the sample bundle examples/mlp.
# Five more models without a numpy reference (tools/models/{matmul,convnet,block,intops,mathops}.py) are exported with
# --adreno and checked (matmul's a630 objects must equal benches/bundles/matmul), and a model returning its input unchanged
# must be refused.
# If HCQ_BIN is set, `$HCQ_BIN run DIR --check --json` runs on each exported bundle (all nine models) and must report "outputs_ok": true, and
# so must `$HCQ_BIN run DIR --device QCOM:SIM --check --json` (PM4 + ir3 interpreter).
#
# Environment: TG_VENV (venv path, default target/tg-export-venv), HCQ_BIN (optional), TG_REF_MLP (reference bundle,
# default examples/mlp in this repo; the check is skipped when it does not exist), CC (the C compiler, default clang).
# Prints "SKIP: ..." and exits 0 when the environment cannot run the exporter (no network for pip, no clang, not x86-64);
# under CI=true that is a failure instead ("FAIL: cannot run under CI=true: ...", exit 1): CI must not pass on a check it did not run.
# Last line: "N passed, M failed"; the exit status is non-zero when M > 0.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TG_VENV:-$ROOT/target/tg-export-venv}"
CC_BIN="${CC:-clang}"
REF_MLP="${TG_REF_MLP:-$(cd "$(dirname "$0")/.." && pwd)/examples/mlp}"
PASSED=0
FAILED=0

skip() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL: cannot run under CI=true: $*"; exit 1; fi
  echo "SKIP: $*"; exit 0
}
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { # check "description" command...
  local what="$1"; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

case "$(uname -m)" in x86_64|amd64) ;; *) skip "the exporter needs an x86-64 host (this is $(uname -m))" ;; esac
command -v "$CC_BIN" >/dev/null 2>&1 || skip "$CC_BIN not found (tinygrad's CPU backend compiles kernels with clang; apt-get install clang)"
command -v python3 >/dev/null 2>&1 || skip "python3 not found"

# shellcheck source=tools/tg_venv.sh
. "$ROOT/tools/tg_venv.sh"
tg_venv "$VENV" || skip "$TG_VENV_ERROR"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# AArch64 objects need a clang with the AArch64 target; without it the bundles carry x86-64 objects only.
A64=()
if echo 'void f(void){}' | "$CC_BIN" -c -x c --target=aarch64-none-unknown-elf - -o "$TMP/probe.o" >/dev/null 2>&1; then A64=(--aarch64)
else echo "note: $CC_BIN cannot target aarch64; exporting x86-64 objects only"; fi

MODELS=(mlp wide elementwise chain100)
# models without a numpy reference (tinygrad's outputs are the expected bytes): exported, checked and run on CPU and
# QCOM:SIM; matmul's objects must equal the benchmark bundle benches/bundles/matmul
MORE_MODELS=(matmul convnet block intops mathops)
export_model() { # export_model MODEL OUTDIR [more exporter options]
  local model="$1" out="$2"; shift 2
  "$PY" "$ROOT/tools/export_tinygrad.py" --model "$ROOT/tools/models/$model.py" -o "$out" ${A64[@]+"${A64[@]}"} --seed 0 "$@"
}
check_bundle() { # check_bundle MODEL DIR
  "$PY" "$ROOT/tools/check_bundle.py" "$2" --model "$ROOT/tools/models/$1.py" --seed 0 --adreno
}
same_gpu_as_example() { # same_gpu_as_example MODEL DIR: a630 files and Adreno manifest fields equal examples/MODEL's
  "$PY" "$ROOT/tools/check_bundle.py" "$2" --same-adreno "$ROOT/examples/$1"
}
cpu_part_unchanged() { # cpu_part_unchanged ADRENO_DIR PLAIN_DIR: --adreno changed no CPU file and no CPU manifest field
  "$PY" - "$1" "$2" <<'EOF'
import json, os, sys
a, b = sys.argv[1:3]
files = sorted(f for f in os.listdir(a) if ".a630." not in f and f != "manifest.json")
if files != sorted(f for f in os.listdir(b) if f != "manifest.json"): sys.exit(f"file lists differ: {files}")
for f in files:
  if open(os.path.join(a, f), "rb").read() != open(os.path.join(b, f), "rb").read(): sys.exit(f"{f} differs")
GPU = ("adreno", "adreno_a630", "gpu_global_size", "gpu_local_size", "gpu_vals")
def strip(x):
  if isinstance(x, dict): return {k: strip(v) for k, v in x.items() if k not in GPU}
  return [strip(v) for v in x] if isinstance(x, list) else x
ma, mb = (json.load(open(os.path.join(d, "manifest.json"))) for d in (a, b))
if json.dumps(strip(ma)) != json.dumps(mb): sys.exit("the manifest's CPU fields differ")
EOF
}
adreno_corrupt_rejected() { # a copy with one flipped byte in an a630 image and a wrong register value must fail the checker
  rm -rf "$TMP/corrupt-gpu" && cp -r "$1" "$TMP/corrupt-gpu" && chmod -R u+w "$TMP/corrupt-gpu" || return 1
  "$PY" - "$TMP/corrupt-gpu" <<'EOF' || return 1
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
p = m["programs"][0]
data = bytearray(open(d + "/" + p["objects"]["adreno_a630"]["file"], "rb").read()); data[p["adreno"]["blob"]["image_offset"]] ^= 1
open(d + "/" + p["objects"]["adreno_a630"]["file"], "wb").write(data)
p["adreno"]["regs"]["SP_CS_INSTR_SIZE"]["value"] += 1
open(d + "/manifest.json", "w").write(json.dumps(m))
EOF
  ! "$PY" "$ROOT/tools/check_bundle.py" "$TMP/corrupt-gpu" >"$TMP/corrupt-gpu.log" 2>&1 || return 1
  grep -q "adreno_a630: sha256" "$TMP/corrupt-gpu.log" && grep -q "SP_CS_INSTR_SIZE" "$TMP/corrupt-gpu.log"
}
small() { [ "$(du -sb "$1" | cut -f1)" -lt 1048576 ]; }
has_core_id() {
  "$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]+"/manifest.json")); sys.exit(0 if any(p["core_id_arg"] is not None for p in m["programs"]) and any(l.get("core_id_arg") is not None for l in m["launches"]) else 1)' "$1"
}
corrupt_rejected() { # a copy with one flipped byte in a weight file and one launch removed must fail the checker
  rm -rf "$TMP/corrupt" && cp -r "$1" "$TMP/corrupt" && chmod -R u+w "$TMP/corrupt" || return 1
  "$PY" - "$TMP/corrupt" <<'EOF' || return 1
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
w = next(b for b in m["buffers"] if b["role"] == "weight")
data = bytearray(open(d + "/" + w["file"], "rb").read()); data[0] ^= 1
open(d + "/" + w["file"], "wb").write(data)
open(d + "/manifest.json", "w").write(json.dumps(dict(m, launches=m["launches"][1:])))
EOF
  ! "$PY" "$ROOT/tools/check_bundle.py" "$TMP/corrupt" >"$TMP/corrupt.log" 2>&1 || return 1
  grep -q "sha256" "$TMP/corrupt.log" && grep -q "before they are written" "$TMP/corrupt.log"
}
adreno_refuses_other_tinymesa() { # --adreno with another tinymesa version fails with a message and writes no bundle
  mkdir -p "$TMP/other-tinymesa/tinymesa-0.0.1.dist-info" || return 1
  printf 'Metadata-Version: 2.1\nName: tinymesa\nVersion: 0.0.1\n' >"$TMP/other-tinymesa/tinymesa-0.0.1.dist-info/METADATA"
  ! PYTHONPATH="$TMP/other-tinymesa" export_model mlp "$TMP/refused" --adreno >"$TMP/refused.log" 2>&1 || return 1
  cat "$TMP/refused.log"
  grep -q "tinymesa 0.0.1 is installed" "$TMP/refused.log" && grep -q "25.2.7.2" "$TMP/refused.log" && [ ! -e "$TMP/refused/manifest.json" ]
}
hcq_ok() { # hcq_ok DIR [run options]: `hcq run DIR --check --json [options]` succeeds and reports outputs_ok true
  local dir="$1"; shift
  "$HCQ_BIN" run "$dir" --check --json "$@" >"$TMP/hcq.json" 2>"$TMP/hcq.err" || { cat "$TMP/hcq.err"; return 1; }
  "$PY" - "$TMP/hcq.json" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
docs = []
try: docs = [json.loads(text)]
except ValueError:
  for line in text.splitlines():
    try: docs.append(json.loads(line))
    except ValueError: pass
ok = [d.get("outputs_ok") for d in docs if isinstance(d, dict) and "outputs_ok" in d]
print(f"hcq outputs_ok: {ok}")
sys.exit(0 if ok and all(v is True for v in ok) else 1)
EOF
}

for model in "${MODELS[@]}"; do
  out="$TMP/$model"
  if export_model "$model" "$out" --adreno; then
    pass "export $model --adreno"
    check "check_bundle $model (with the Adreno metadata)" check_bundle "$model" "$out"
    check "$model bundle is smaller than 1 MiB" small "$out"
    check "$model a630 objects and metadata equal examples/$model byte for byte" same_gpu_as_example "$model" "$out"
  else
    fail "export $model --adreno"
  fi
done
[ -d "$TMP/wide" ] && check "wide has core_id kernels" has_core_id "$TMP/wide"
for ex in "$ROOT"/examples/*/; do
  [ -f "$ex/manifest.json" ] && check "sample bundle $(basename "$ex") carries valid a630 objects" "$PY" "$ROOT/tools/check_bundle.py" "$ex" --adreno
done
if [ -d "$TMP/mlp" ]; then
  if export_model mlp "$TMP/mlp-again" --adreno >/dev/null; then check "second mlp export is byte-identical" diff -r "$TMP/mlp" "$TMP/mlp-again"
  else fail "second mlp export"; fi
  if export_model mlp "$TMP/mlp-cpu" >/dev/null; then check "an export without --adreno is the CPU part of the --adreno one" cpu_part_unchanged "$TMP/mlp" "$TMP/mlp-cpu"
  else fail "mlp export without --adreno"; fi
  check "checker rejects a corrupted bundle" corrupt_rejected "$TMP/mlp"
  check "checker rejects a corrupted a630 image and register" adreno_corrupt_rejected "$TMP/mlp"
  check "--adreno refuses a tinymesa of another version" adreno_refuses_other_tinymesa
  if [ -f "$REF_MLP/manifest.json" ] && [ ${#A64[@]} -gt 0 ]; then
    check "mlp manifest has the structure of $REF_MLP" "$PY" "$ROOT/tools/check_bundle.py" "$TMP/mlp" --like "$REF_MLP"
  else echo "note: reference bundle $REF_MLP not found (or no aarch64 objects); structure comparison skipped"; fi
fi

for model in "${MORE_MODELS[@]}"; do
  out="$TMP/$model"
  if export_model "$model" "$out" --adreno >/dev/null; then
    pass "export $model --adreno"
    check "check_bundle $model (with the Adreno metadata)" "$PY" "$ROOT/tools/check_bundle.py" "$out" --adreno
  else
    fail "export $model --adreno"
  fi
done
refuses_returned_input() { # a model that returns its input unchanged is refused (no launch would write that output)
  cat >"$TMP/identity.py" <<'EOF'
def build(seed=0):
  from tinygrad import Tensor
  x = Tensor.randn(16).realize()
  return (lambda x: ((x + 1).contiguous(), x)), [x]
EOF
  ! "$PY" "$ROOT/tools/export_tinygrad.py" --model "$TMP/identity.py" -o "$TMP/identity" >"$TMP/identity.log" 2>&1 || return 1
  cat "$TMP/identity.log"; grep -q "no captured launch writes buffer" "$TMP/identity.log" && [ ! -e "$TMP/identity/manifest.json" ]
}
check "the exporter refuses an output no launch writes (a returned input)" refuses_returned_input
amd_main_is_v1() { # amd_main_is_v1 AMD_DIR V1_DIR: --amd left every file of the v1 export as it was, its lists are graph main's
  "$PY" - "$1" "$2" <<'EOF'
import json, os, sys
a, v = sys.argv[1], sys.argv[2]
ma, mv = (json.load(open(os.path.join(d, "manifest.json"))) for d in (a, v))
assert ma["version"] == 2 and [g["target"] for g in ma["graphs"]] == ["any", "amd"], [g["target"] for g in ma["graphs"]]
main, amd = ma["graphs"]
for k in ("buffers", "inputs", "outputs", "programs", "launches"):
  assert main[k] == mv[k], f"graph main's {k} differ from the v1 export's"
  if k in ("buffers", "inputs", "outputs"): assert amd[k] == mv[k], f"graph amd's {k} differ from the v1 export's"
assert len(amd["programs"]) == len(mv["programs"]) and len(amd["launches"]) == len(mv["launches"])
for f in os.listdir(v):
  if f != "manifest.json": assert open(os.path.join(a, f), "rb").read() == open(os.path.join(v, f), "rb").read(), f
extra = sorted(set(os.listdir(a)) - set(os.listdir(v)))
assert extra == sorted(p["objects"]["amd_gfx1100"]["file"] for p in amd["programs"]), extra
print(f"graph main equals the v1 export; {len(extra)} gfx1100 code objects added")
EOF
}
AMD_MODELS=(mlp wide convnet)
for model in "${AMD_MODELS[@]}"; do
  if export_model "$model" "$TMP/amd-$model" --adreno --amd >/dev/null; then
    pass "export $model --adreno --amd"
    check "check_bundle $model --amd (the amd graph's code objects)" "$PY" "$ROOT/tools/check_bundle.py" "$TMP/amd-$model" --adreno
    [ -d "$TMP/$model" ] && check "--amd adds the amd graph and changes nothing of the $model export" amd_main_is_v1 "$TMP/amd-$model" "$TMP/$model"
  else
    fail "export $model --adreno --amd"
  fi
done
[ -d "$TMP/matmul" ] && check "matmul has core_id kernels" has_core_id "$TMP/matmul"
[ -d "$TMP/matmul" ] && check "matmul a630 objects equal benches/bundles/matmul" \
  "$PY" "$ROOT/tools/check_bundle.py" "$TMP/matmul" --same-adreno "$ROOT/benches/bundles/matmul"

if [ -n "${HCQ_BIN:-}" ]; then
  for model in "${MODELS[@]}" "${MORE_MODELS[@]}"; do
    [ -d "$TMP/$model" ] && check "hcq run $model --check" hcq_ok "$TMP/$model"
  done
  # every exported model's a630 shaders through PM4 and the ir3 interpreter
  for model in "${MODELS[@]}" "${MORE_MODELS[@]}"; do
    [ -d "$TMP/$model" ] && check "hcq run $model --device QCOM:SIM --check" hcq_ok "$TMP/$model" --device QCOM:SIM
  done
else
  echo "note: HCQ_BIN not set; bundles were not executed"
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
