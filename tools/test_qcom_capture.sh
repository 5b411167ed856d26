#!/usr/bin/env bash
# CI entry point for `tools/export_tinygrad.py --qcom-jit` and `--pickle`: tinygrad 0.14's own QCOM JIT captured on the
# virtual Adreno 630 (libhcq_vkgsl.so under `hcq vkgsl --`) and run by hcq.
#
#   HCQ_BIN=target/release/hcq bash tools/test_qcom_capture.sh [MODEL ...]     (default: qcom_small)
#
# For each model (tools/models/MODEL.py), with openpilot's flags FLOAT16=1 NOLOCALS=1 JIT_BATCH_SIZE=0 and IMAGE=$QCOM_IMAGE
# (default 0; CI runs QCOM_IMAGE=1, openpilot's image kernels):
#   - export under `hcq vkgsl --`; the bundle must name the flags, have one HCQ graph holding every kernel, fp16 weights;
#   - `hcq run DIR --device QCOM:SIM|MSM+QCOM:SIM --check --json` and `hcq vkgsl -- hcq run DIR --device KGSL+QCOM|MSM+QCOM
#     --check --json` must report
#     "outputs_ok": true with an exact comparison (the expected bytes are tinygrad's outputs on the virtual device);
#   - a second export must be byte-identical (manifest and every file);
#   - the bundle (only a QCOM graph) is refused by `hcq run --device CPU`, naming the graph it lacks;
#   - with --cpu-graph (the CPU graph of the same weights, x86-64-v3 for the fp16 conversions): QCOM still exact, the CPU graph
#     exact on CPU, the QCOM outputs within 1e-4 + 1e-3·|x| of tinygrad's DEV=CPU outputs, weight files stored once.
# Then a TinyJit pickled the way openpilot's compile3.py does (made here with tinygrad 0.14 on the virtual device) must export
# with --pickle and pass the same runs, and a pickle from an older tinygrad (a CapturedJit with `jit_cache`) and one whose
# TinyJit class tinygrad 0.14 does not define must be refused, naming the tinygrad version the exporter needs; --qcom-jit
# outside the virtual device must be refused, saying how to run it. IMAGE=1 up to writing and loading the bundle:
# tools/test_qcom_images.py (no device runs image kernels before the vimg/qimg merge).
#
# Environment: TG_VENV (default target/tg-export-venv, as tools/test_export.sh; created the same way when missing),
# HCQ_BIN (required: the hcq binary, with libhcq_vkgsl.so next to it or at $HCQ_VKGSL_LIB). "SKIP: ..." when the environment
# cannot run it; under CI=true that is a failure. Last line: "N passed, M failed"; non-zero exit when M > 0.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TG_VENV:-$ROOT/target/tg-export-venv}"
PASSED=0
FAILED=0
skip() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL: cannot run under CI=true: $*"; exit 1; fi
  echo "SKIP: $*"; exit 0
}
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { local what="$1"; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

[ -n "${HCQ_BIN:-}" ] && [ -x "$HCQ_BIN" ] || skip "HCQ_BIN is not set to the hcq binary (cargo build --release -p hcq-cli)"
LIB="${HCQ_VKGSL_LIB:-$(dirname "$HCQ_BIN")/libhcq_vkgsl.so}"
[ -f "$LIB" ] || skip "no libhcq_vkgsl.so at $LIB (cargo build --release -p hcq-vkgsl)"
export HCQ_VKGSL_LIB="$LIB"
# shellcheck source=tools/tg_venv.sh
. "$ROOT/tools/tg_venv.sh"
tg_venv "$VENV" || skip "$TG_VENV_ERROR"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export FLOAT16=1 NOLOCALS=1 JIT_BATCH_SIZE=0 IMAGE="${QCOM_IMAGE:-0}"
unset DEV
EXPORT=("$PY" "$ROOT/tools/export_tinygrad.py")

runs_exact() { # runs_exact DIR: on the simulated Adreno through KGSL and MSM, and on QCOM under the virtual
  # node through both kernel interfaces' real code paths: all exact
  local d="$1" ok=0
  for dev in QCOM:SIM MSM+QCOM:SIM vkgsl:KGSL+QCOM vkgsl:MSM+QCOM; do
    case $dev in
      vkgsl:*) out=$("$HCQ_BIN" vkgsl -- "$HCQ_BIN" run "$d" --device "${dev#vkgsl:}" --check --json --iters 2 2>&1 | tail -1) ;;
      *) out=$("$HCQ_BIN" run "$d" --device "$dev" --check --json --iters 2 2>&1 | tail -1) ;;
    esac
    "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j.get("outputs_ok") is True and j.get("arch") == "adreno_a630" else 1)' "$out" \
      || { echo "  $dev: $out"; ok=1; }
  done
  return $ok
}
manifest_ok() { # manifest_ok DIR: flags recorded, every kernel in one HCQ graph, fp16 weights, expected from the device
  "$PY" - "$1" <<'EOF'
import json, sys
m = json.load(open(f"{sys.argv[1]}/manifest.json"))
assert m["version"] == 2 and m["graphs"][0]["target"] == "qcom", (m["version"], [g["target"] for g in m["graphs"]])
g = m["graphs"][0]
f = m["toolchain"]["flags"]
assert f["FLOAT16"] == "1" and f["NOLOCALS"] == "1" and f["JIT_BATCH_SIZE"] == "0", f
assert m["expected_from"] == "adreno_a630" and m["toolchains"]["adreno_a630"]["executed"] is True
kernels = [l for l in g["launches"] if l["kind"] == "kernel"]
assert len(m["capture"]["graphs"]) == 1 and all(l.get("graph") == 0 for l in kernels), m["capture"]
assert [l["graph_index"] for l in kernels] == list(range(len(kernels)))
assert any(b["role"] == "weight" and b["dtype"] == "float16" for b in g["buffers"]), "no fp16 weight"
for p in g["programs"]:
  a = p["adreno"]
  assert set(p["objects"]) == {"adreno_a630"} and a["regs"] and a["consts"]["load_vec4"], p["name"]
  assert "images" in a["descriptors"] and "sampler_words" in a["descriptors"]
EOF
}
same_dirs() { diff -r "$1" "$2" >/dev/null; }
cpu_exact_and_close() { # cpu_exact_and_close DIR: the CPU graph runs exact on CPU; the QCOM graph's outputs are within
  # tolerance of tinygrad's DEV=CPU outputs for the same weights (the CPU graph's expected bytes); weights stored once
  local d="$1"
  out=$("$HCQ_BIN" run "$d" --device CPU --check --json --iters 2 2>&1 | tail -1)
  "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j.get("outputs_ok") is True and j.get("arch") == "x86_64" else 1)' "$out" \
    || { echo "  CPU: $out"; return 1; }
  "$PY" - "$d" <<'EOF2'
import json, sys, numpy as np
d = sys.argv[1]
m = json.load(open(f"{d}/manifest.json"))
q, c = m["graphs"]
assert c["target"] == "cpu" and m["capture"]["cpu_graph"]["weights_shared"] > 0, m["capture"]
for a, b in zip(q["outputs"], c["outputs"]):
  x = np.fromfile(f"{d}/{a['file']}", dtype=a["dtype"]).astype(np.float64)
  y = np.fromfile(f"{d}/{b['file']}", dtype=b["dtype"]).astype(np.float64)
  err = np.abs(x - y).max()
  print(f"  output {a['index']} ({a['name']}): QCOM vs CPU max abs diff {err:.3g}")
  assert np.allclose(x, y, atol=1e-4, rtol=1e-3), err
files = [b["file"] for g in m["graphs"] for b in g["buffers"] if "file" in b]
assert len(set(files)) < len(files), "no weight file is shared"
EOF2
}
qcom_only_refused_on_cpu() { # a bundle with only the QCOM graph says why it does not run on CPU
  local out
  if out=$("$HCQ_BIN" run "$1" --device CPU --check 2>&1); then echo "  ran on CPU: $out"; return 1; fi
  grep -q "needs a cpu graph" <<<"$out" && grep -q "qcom (qcom)" <<<"$out" || { echo "  $out"; return 1; }
}

MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(qcom_small)
for model in "${MODELS[@]}"; do
  d="$TMP/$model"
  if "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --model "$ROOT/tools/models/$model.py" --qcom-jit -o "$d" >"$TMP/$model.log" 2>&1; then
    pass "$model: exported with --qcom-jit under hcq vkgsl ($(tail -1 "$TMP/$model.log"))"
    check "$model: manifest records the flags, one HCQ graph, fp16 weights" manifest_ok "$d"
    check "$model: hcq run --check exact on QCOM:SIM, MSM+QCOM:SIM and on KGSL+QCOM, MSM+QCOM under the virtual node" runs_exact "$d"
    "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --model "$ROOT/tools/models/$model.py" --qcom-jit -o "$d.again" >/dev/null 2>&1
    check "$model: a second export is byte-identical" same_dirs "$d" "$d.again"
    check "$model: the QCOM-only bundle is refused on CPU, naming the graph it lacks" qcom_only_refused_on_cpu "$d"
    if "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --model "$ROOT/tools/models/$model.py" --qcom-jit --cpu-graph --x86-level x86-64-v3 \
        -o "$d.both" >"$TMP/$model.both.log" 2>&1; then
      pass "$model: exported with --cpu-graph ($(grep "added the CPU graph" "$TMP/$model.both.log"))"
      check "$model (two graphs): QCOM:SIM, MSM+QCOM:SIM and both interfaces under the virtual node still exact" runs_exact "$d.both"
      check "$model (two graphs): the CPU graph is exact on CPU and the QCOM outputs within tolerance of it" cpu_exact_and_close "$d.both"
    else
      fail "$model: --cpu-graph export failed: $(tail -3 "$TMP/$model.both.log")"
    fi
  else
    fail "$model: --qcom-jit export failed: $(tail -3 "$TMP/$model.log")"
  fi
done

# a pickled TinyJit as openpilot's compile3.py writes it, made with tinygrad 0.14 on the virtual device
cat >"$TMP/make_pickle.py" <<'EOF'
import os, pickle, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tools/models"))
os.environ["DEV"] = "QCOM:IR3"
import qcom_small
from tinygrad import Tensor, TinyJit
fn, example = qcom_small.build(0)
jit = TinyJit(fn)
for _ in range(3): jit(*[Tensor(t.numpy(), device=t.device).realize() for t in example]).realize()
with open(sys.argv[2], "wb") as f: pickle.dump(jit, f)
EOF
if "$HCQ_BIN" vkgsl -- "$PY" "$TMP/make_pickle.py" "$ROOT" "$TMP/small_tinygrad.pkl" >"$TMP/pickle.log" 2>&1; then
  pass "a TinyJit pickled on the virtual device by tinygrad 0.14"
  if "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --pickle "$TMP/small_tinygrad.pkl" -o "$TMP/pkl" >"$TMP/pkl.log" 2>&1; then
    pass "--pickle exported ($(tail -1 "$TMP/pkl.log"))"
    check "--pickle: manifest records the flags, one HCQ graph" manifest_ok "$TMP/pkl"
    check "--pickle: hcq run --check exact on QCOM:SIM, MSM+QCOM:SIM and on KGSL+QCOM, MSM+QCOM under the virtual node" runs_exact "$TMP/pkl"
  else fail "--pickle export failed: $(tail -3 "$TMP/pkl.log")"; fi
else fail "making the pickle failed: $(tail -3 "$TMP/pickle.log")"; fi

refused() { # refused WHAT EXPECTED_TEXT COMMAND...: the command fails and its error contains EXPECTED_TEXT
  local what="$1" want="$2"; shift 2
  if out=$("$@" 2>&1); then fail "$what: accepted"; return; fi
  if grep -qF -- "$want" <<<"$out"; then pass "$what: refused ($(grep -F -- "$want" <<<"$out" | head -1 | cut -c1-200))"
  else fail "$what: refused without naming '$want': $out"; fi
}
# an older tinygrad's CapturedJit (dataclass state with jit_cache), written with pickle opcodes: nothing of it is importable
printf '\x80\x02ctinygrad.engine.jit\nCapturedJit\n)\x81}X\x09\x00\x00\x00jit_cache]sb.' >"$TMP/old.pkl"
refused "--pickle of an older tinygrad's TinyJit" "needs a pickle made by tinygrad 0.14.0" \
  "${EXPORT[@]}" --pickle "$TMP/old.pkl" -o "$TMP/old"
if [ -f "$TMP/small_tinygrad.pkl" ]; then
  # the same pickle with its TinyJit class renamed to one tinygrad 0.14 does not define (same length: the pickle stays valid)
  "$PY" -c 'import sys; d=open(sys.argv[1],"rb").read(); assert d.count(b"_TinyJit")==1; open(sys.argv[2],"wb").write(d.replace(b"_TinyJit", b"TinyJit9"))' \
    "$TMP/small_tinygrad.pkl" "$TMP/doctored.pkl"
  refused "--pickle with a class tinygrad 0.14 does not define" "tinygrad 0.14.0" \
    "${EXPORT[@]}" --pickle "$TMP/doctored.pkl" -o "$TMP/doctored"
fi
refused "--qcom-jit without the virtual device" "hcq vkgsl --" \
  env HCQ_VKGSL_LIB=/nonexistent "${EXPORT[@]}" --model "$ROOT/tools/models/qcom_small.py" --qcom-jit -o "$TMP/nodev"

# IMAGE=1: no device executes image kernels before the vimg/qimg merge; everything up to writing and loading the bundle
if out=$("$PY" "$ROOT/tools/test_qcom_images.py" "$HCQ_BIN" 2>&1); then
  pass "IMAGE=1: tinygrad's image kernels captured (descriptors, samplers, kernarg layout), bundle written and loaded ($(grep -c '^PASS' <<<"$out") checks)"
else fail "IMAGE=1 capture up to the bundle: $(grep -v '^PASS' <<<"$out" | tail -5)"; fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
