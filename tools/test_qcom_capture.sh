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
# Then the models users export (issue 28), each exported with --json, accepted by check_bundle.py (version 2: signatures
# numbered 0..n-1, an image view on every image binding, launches[].args[j].image, and no buffers[].image) and exact on the four
# devices: argmax_head with openpilot's flags and without (FLOAT16=0 IMAGE=0 NOLOCALS=0: no image binding), policy_transformer
# pruned (no copy left) and with --no-prune (the Shape constant tinygrad keeps on PYTHON becomes a weight holding [1, 2, 8, 32],
# copied in by launch 0; more kernels than pruned); policy_transformer pickled the compile3.py way (TinyJit(prune=True)) and
# exported with --pickle must list the same kernels as --model and, given the --model bundle's inputs, compute its outputs
# exactly.
# Then a TinyJit pickled the way openpilot's compile3.py does (made here with tinygrad 0.14 on the virtual device) must export
# with --pickle and pass the same runs, and a pickle from an older tinygrad (a CapturedJit with `jit_cache`) and one whose
# TinyJit class tinygrad 0.14 does not define must be refused, naming the tinygrad version the exporter needs; --qcom-jit
# outside the virtual device must be refused, saying how to run it. IMAGE=1 up to writing and loading the bundle:
# tools/test_qcom_images.py (on tinygrad's NULL device, no execution: the descriptor words and kernarg layout against
# tinygrad's own; the image kernels run with QCOM_IMAGE=1 above and in the zoo, tools/test_zoo.sh).
#
# Environment: TG_VENV (default target/tg-export-venv, as tools/test_export.sh; created the same way when missing),
# HCQ_BIN (required: the hcq binary, with libhcq_vkgsl.so next to it or at $HCQ_VKGSL_LIB). "SKIP: ..." when the environment
# cannot run it; under CI=true that is a failure. Last line: "N passed, M failed"; non-zero exit when M > 0.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TG_VENV:-$ROOT/target/tg-export-venv}"
# shellcheck source=tools/vkgsl_test.sh
. "$ROOT/tools/vkgsl_test.sh"
vkgsl_test_env "$VENV"

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
# (openpilot's compile3.py: TinyJit(prune=True), three calls with fresh input Tensors, pickle.dump of the TinyJit)
cat >"$TMP/make_pickle.py" <<'EOF'
import importlib, os, pickle, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tools/models"))
os.environ["DEV"] = "QCOM:IR3"
from tinygrad import Tensor, TinyJit
from tinygrad import Device
fn, example = importlib.import_module(sys.argv[3]).build(0)
# "npy": as compile3.py passes openpilot's non-image inputs: on NPY, moved to the device inside the JIT
npy = sys.argv[4:] == ["npy"]
jit = TinyJit((lambda *a: fn(*[t.to(Device.DEFAULT) for t in a])) if npy else fn, prune=True)
for _ in range(3):
  out = jit(*[Tensor(t.numpy(), device="NPY" if npy else t.device).realize() for t in example])
  for o in (out if isinstance(out, tuple) else (out,)): o.realize()
with open(sys.argv[2], "wb") as f: pickle.dump(jit, f)
EOF
if "$HCQ_BIN" vkgsl -- "$PY" "$TMP/make_pickle.py" "$ROOT" "$TMP/small_tinygrad.pkl" qcom_small >"$TMP/pickle.log" 2>&1; then
  pass "a TinyJit pickled on the virtual device by tinygrad 0.14"
  if "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --pickle "$TMP/small_tinygrad.pkl" -o "$TMP/pkl" >"$TMP/pkl.log" 2>&1; then
    pass "--pickle exported ($(tail -1 "$TMP/pkl.log"))"
    check "--pickle: manifest records the flags, one HCQ graph" manifest_ok "$TMP/pkl"
    check "--pickle: hcq run --check exact on QCOM:SIM, MSM+QCOM:SIM and on KGSL+QCOM, MSM+QCOM under the virtual node" runs_exact "$TMP/pkl"
  else fail "--pickle export failed: $(tail -3 "$TMP/pkl.log")"; fi
else fail "making the pickle failed: $(tail -3 "$TMP/pickle.log")"; fi

# Models users export (issue 28): tinygrad binding one buffer under several image views, a buffer in several parameter slots,
# a constant tinygrad keeps on PYTHON and copies in, TinyJit(prune=True) on --model as compile3.py builds it.
OPENPILOT=(FLOAT16=1 IMAGE=1 NOLOCALS=1 JIT_BATCH_SIZE=0)
PLAIN=(FLOAT16=0 IMAGE=0 NOLOCALS=0 JIT_BATCH_SIZE=32)
bundle_ok() { "$PY" "$ROOT/tools/check_bundle.py" "$1" >"$1.check" 2>&1 || { tail -5 "$1.check"; return 1; }; }
json_has() { # json_has DIR PYTHON_EXPR: the export's --json line (j) and manifest (m, g = its first graph) satisfy the expression
  "$PY" - "$1" "$2" <<'EOF'
import json, sys
import numpy as np
d, expr = sys.argv[1], sys.argv[2]
j = json.loads([l for l in open(d + ".log") if l.startswith("{")][-1])
m = json.load(open(d + "/manifest.json")); g = m["graphs"][0]
kernels = [l for l in g["launches"] if l["kind"] == "kernel"]
ok = eval(expr)
if not ok: print(f"  not true: {expr}; --json: {j}")
sys.exit(0 if ok else 1)
EOF
}
export_new() { # export_new LABEL MODEL "ENV..." [EXPORT ARGS...]: export under the virtual device with --json, check, run
  local label=$1 model=$2 envs=$3 d="$TMP/new_$1"; shift 3
  # shellcheck disable=SC2086
  if env $envs "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --model "$ROOT/tools/models/$model.py" --qcom-jit "$@" --json -o "$d" >"$d.log" 2>&1; then
    pass "$label: exported ($(grep '^export_tinygrad: time' "$d.log" | cut -d' ' -f3-))"
    check "$label: check_bundle.py accepts the version 2 bundle (signatures, image views per binding, data flow)" bundle_ok "$d"
    check "$label: image views on the bindings only (no buffers[].image), every signature numbered 0..n-1" json_has "$d" \
      'all("image" not in b for b in g["buffers"]) and j["image_bindings"] == sum(1 for l in kernels for a in l["args"] if "image" in a) and all([s["slot"] for s in p["signature"]] == list(range(len(p["signature"]))) for p in g["programs"])'
    check "$label: hcq run --check exact on QCOM:SIM, MSM+QCOM:SIM and on KGSL+QCOM, MSM+QCOM under the virtual node" runs_exact "$d"
    return 0
  fi
  fail "$label: export failed: $(grep -v '^{' "$d.log" | tail -3)"
  return 1
}
if export_new argmax_head argmax_head "${OPENPILOT[*]}"; then
  check "argmax_head (openpilot's flags): image kernels, the int32 argmax an output" json_has "$TMP/new_argmax_head" \
    'j["image_bindings"] > 0 and [o["dtype"] for o in g["outputs"]] == ["float32", "int32"]'
fi
if export_new argmax_head_plain argmax_head "${PLAIN[*]}"; then
  check "argmax_head (no flags): no image binding, the flags recorded as given" json_has "$TMP/new_argmax_head_plain" \
    'j["image_bindings"] == 0 and m["toolchain"]["flags"]["IMAGE"] == "0" and m["toolchain"]["flags"]["FLOAT16"] == "0"'
fi
if export_new policy_transformer policy_transformer "${OPENPILOT[*]}"; then
  check "policy_transformer (pruned): no copy in the graph, the PYTHON constant ran at capture" json_has "$TMP/new_policy_transformer" \
    'j["prune"] is True and j["copies"] == 0 and j["host_buffers"] == 0'
fi
if export_new policy_transformer_noprune policy_transformer "${OPENPILOT[*]}" --no-prune; then
  # the Shape tensor [1, 2, 8, 32] (int64) tinygrad keeps on PYTHON: a weight of the bundle, copied in by the first launch
  check "policy_transformer (--no-prune): the PYTHON constant is a weight holding the Shape [1, 2, 8, 32], copied in by launch 0" \
    json_has "$TMP/new_policy_transformer_noprune" \
    'j["host_buffers"] == 1 and g["launches"][0]["kind"] == "copy" and g["buffers"][g["launches"][0]["src"]["buffer"]]["role"] == "weight" and np.fromfile(d + "/" + g["buffers"][g["launches"][0]["src"]["buffer"]]["file"], dtype=np.int64).tolist() == [1, 2, 8, 32]'
  check "policy_transformer: --no-prune captures more kernels than the pruned export" "$PY" -c '
import json, sys
n = lambda d: sum(1 for l in json.load(open(d + "/manifest.json"))["graphs"][0]["launches"] if l["kind"] == "kernel")
a, b = n(sys.argv[1]), n(sys.argv[2]); print(f"  pruned {a}, --no-prune {b} kernels"); sys.exit(0 if b > a else 1)' \
    "$TMP/new_policy_transformer" "$TMP/new_policy_transformer_noprune"
fi

# --model and --pickle give the same graph: the same kernels (names, order) and the same outputs for the same inputs (the
# pickle's bundle, given the --model bundle's inputs, must reproduce its expected outputs exactly)
same_graph() { # same_graph MODEL_DIR PICKLE_DIR OUT
  "$PY" - "$@" <<'EOF'
import hashlib, json, shutil, sys
a, b, out = sys.argv[1:4]
ga, gb = [json.load(open(f"{d}/manifest.json"))["graphs"][0] for d in (a, b)]
ka, kb = [[l["name"] for l in g["launches"] if l["kind"] == "kernel"] for g in (ga, gb)]
print(f"  --model: {len(ka)} kernels, --pickle: {len(kb)} kernels")
if ka != kb:
  i = next((i for i, (x, y) in enumerate(zip(ka, kb)) if x != y), min(len(ka), len(kb)))
  print(f"  first difference at kernel {i}: {ka[i:i + 4]} / {kb[i:i + 4]}")
  sys.exit(1)
shutil.copytree(b, out)
m = json.load(open(f"{out}/manifest.json")); g = m["graphs"][0]
for x, y in zip(ga["inputs"], g["inputs"]):
  assert (x["dtype"], x["nbytes"], x["shape"]) == (y["dtype"], y["nbytes"], y["shape"]), (x, y)
  src = open(f"{a}/{ga['buffers'][x['buffer']]['file']}", "rb").read()[x["offset"]:x["offset"] + x["nbytes"]]
  buf = g["buffers"][y["buffer"]]
  data = bytearray(open(f"{out}/{buf['file']}", "rb").read())
  data[y["offset"]:y["offset"] + y["nbytes"]] = src
  open(f"{out}/{buf['file']}", "wb").write(data)
  buf["sha256"] = hashlib.sha256(data).hexdigest()
for x, y in zip(ga["outputs"], g["outputs"]):
  assert (x["dtype"], x["nbytes"]) == (y["dtype"], y["nbytes"]), (x, y)
  shutil.copyfile(f"{a}/{x['file']}", f"{out}/{y['file']}")
  if "sha256" in y: y["sha256"] = hashlib.sha256(open(f"{out}/{y['file']}", "rb").read()).hexdigest()
open(f"{out}/manifest.json", "w").write(json.dumps(m, indent=1) + "\n")
EOF
}
if [ -d "$TMP/new_policy_transformer" ]; then
  if env "${OPENPILOT[@]}" "$HCQ_BIN" vkgsl -- "$PY" "$TMP/make_pickle.py" "$ROOT" "$TMP/policy_tinygrad.pkl" policy_transformer \
      >"$TMP/policy_pickle.log" 2>&1 \
    && env "${OPENPILOT[@]}" "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --pickle "$TMP/policy_tinygrad.pkl" --json -o "$TMP/policy_pkl" \
      >"$TMP/policy_pkl.log" 2>&1; then
    pass "policy_transformer pickled the compile3.py way and exported with --pickle ($(grep '^export_tinygrad: time' "$TMP/policy_pkl.log" | cut -d' ' -f3-))"
    check "policy_transformer: --model and --pickle give the same kernels" same_graph "$TMP/new_policy_transformer" "$TMP/policy_pkl" "$TMP/policy_same"
    check "policy_transformer: the --pickle bundle computes the --model bundle's outputs from its inputs (exact, all four devices)" \
      runs_exact "$TMP/policy_same"
  else fail "policy_transformer --pickle: $(tail -3 "$TMP/policy_pickle.log" "$TMP/policy_pkl.log" 2>/dev/null)"; fi
  # compile3.py's inputs on NPY: the bundle's inputs are those buffers and the JIT's copies onto the device its first launches
  if env "${OPENPILOT[@]}" "$HCQ_BIN" vkgsl -- "$PY" "$TMP/make_pickle.py" "$ROOT" "$TMP/policy_npy.pkl" policy_transformer npy \
      >"$TMP/policy_npy_pickle.log" 2>&1 \
    && env "${OPENPILOT[@]}" "$HCQ_BIN" vkgsl -- "${EXPORT[@]}" --pickle "$TMP/policy_npy.pkl" --json -o "$TMP/policy_npy" \
      >"$TMP/policy_npy.log" 2>&1; then
    check "policy_transformer with its inputs on NPY: each input is read by a copy launch and by no kernel" "$PY" -c '
import json, sys
g = json.load(open(sys.argv[1] + "/manifest.json"))["graphs"][0]
ins = {i["buffer"] for i in g["inputs"]}
copied = {l["src"]["buffer"] for l in g["launches"] if l["kind"] == "copy"}
direct = {a["buffer"] for l in g["launches"] if l["kind"] == "kernel" for a in l["args"]} & ins
print(f"  inputs {sorted(ins)}, copied {sorted(copied & ins)}, read by kernels {sorted(direct)}")
sys.exit(0 if ins <= copied and not direct else 1)' "$TMP/policy_npy"
    check "policy_transformer with its inputs on NPY: --model and --pickle give the same kernels" same_graph "$TMP/new_policy_transformer" "$TMP/policy_npy" "$TMP/policy_npy_same"
    check "policy_transformer with its inputs on NPY: computes the --model bundle's outputs from its inputs (exact, all four devices)" \
      runs_exact "$TMP/policy_npy_same"
  else fail "policy_transformer --pickle with NPY inputs: $(tail -3 "$TMP/policy_npy_pickle.log" "$TMP/policy_npy.log" 2>/dev/null)"; fi
fi

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

# IMAGE=1 without a device (tinygrad's NULL device): everything up to writing and loading the bundle, checked against
# tinygrad's own descriptor words and kernarg blocks (execution: QCOM_IMAGE=1 above, and the zoo)
if out=$("$PY" "$ROOT/tools/test_qcom_images.py" "$HCQ_BIN" 2>&1); then
  pass "IMAGE=1: tinygrad's image kernels captured (descriptors, samplers, kernarg layout), bundle written and loaded ($(grep -c '^PASS' <<<"$out") checks)"
else fail "IMAGE=1 capture up to the bundle: $(grep -v '^PASS' <<<"$out" | tail -5)"; fi

finish
