#!/usr/bin/env bash
# CI entry point for `tools/export_tinygrad.py --amd-jit` (with --model and --pickle): tinygrad 0.14's own AMD JIT
# (DEV=AMD:LLVM, formerly AMD_LLVM=1) captured on the virtual gfx1100 (libhcq_vkgsl.so under `hcq virtual --`) and run by hcq.
#
#   HCQ_BIN=target/release/hcq bash tools/test_amd_capture.sh [MODEL ...]
#
# Default models: mlp, convnet (convolutions, pooling), qcom_small (fp16 weights, a uint8 frame), chain100 (100 launches in
# three HCQ graphs under tinygrad's JIT_BATCH_SIZE), elementwise (one kernel: a launch outside any graph), symbolic (a bound
# Variable: int32 values in the kernel arguments). For each (tools/models/MODEL.py):
#   - export under `hcq virtual --` with --amd-jit --json; every dispatch checked by the exporter against tinygrad's PM4
#     stream (program address, grid, kernel-argument bytes);
#   - the manifest: one `amd` graph, expected from amd_gfx1100, code objects only, launches and HCQ graphs consistent;
#     check_bundle.py accepts it (against the numpy reference where the model has one);
#   - `hcq run DIR --device AMD:SIM --check --json` and `hcq virtual -- hcq run DIR --device AMD --check --json` report
#     "outputs_ok": true with max_abs_diff 0 (the expected bytes are tinygrad's on the virtual gfx1100: bit-exact);
#   - a second export is byte-identical; the bundle is refused on CPU, naming the graph it lacks.
# Then: mlp with --cpu-graph (the CPU graph exact on CPU, the AMD outputs within 1e-4 + 1e-3·|x| of tinygrad's DEV=CPU);
# policy_transformer with --no-prune (the Shape constant tinygrad keeps on PYTHON is a weight copied in by a copy launch);
# qcom_small pickled on the virtual gfx1100 as openpilot's compile3.py pickles (TinyJit(prune=True)), with its inputs on AMD
# and on NPY (copy launches), exported with --amd-jit --pickle: the --model bundle's kernels, and its outputs from its inputs,
# exact on both devices. Refusals: no KFD node (not under `hcq virtual`), DEV=QCOM, AMD_LLVM=0, IMAGE=1, --qcom-jit with
# --amd-jit, an AMD pickle given to --qcom-jit, a QCOM pickle given to --amd-jit, a pickle of an older tinygrad.
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
# the JIT as tinygrad builds it by default (no QCOM flags), on the virtual gfx1100
unset DEV AMD_LLVM AMD_CC IMAGE FLOAT16 NOLOCALS JIT_BATCH_SIZE JIT BEAM JITBEAM
EXPORT=("$PY" "$ROOT/tools/export_tinygrad.py")
VIRT=("$HCQ_BIN" virtual --)

runs_exact() { # runs_exact DIR: on the simulated gfx1100 in process and on hcq's real KFD path under the virtual node: bit-exact
  local d="$1" ok=0 out
  for dev in AMD:SIM virtual:AMD; do
    case $dev in
      virtual:*) out=$("${VIRT[@]}" "$HCQ_BIN" run "$d" --device "${dev#virtual:}" --check --json --iters 2 2>&1 | tail -1) ;;
      *) out=$("$HCQ_BIN" run "$d" --device "$dev" --check --json --iters 2 2>&1 | tail -1) ;;
    esac
    "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j.get("outputs_ok") is True and j.get("arch") == "amd_gfx1100" and j.get("max_abs_diff") == 0 else 1)' "$out" 2>/dev/null \
      || { echo "  $dev: $out"; ok=1; }
  done
  return $ok
}
manifest_ok() { # manifest_ok DIR: one amd graph of tinygrad's code objects, expected from the device, graphs consistent
  "$PY" - "$1" <<'EOF'
import json, sys
d = sys.argv[1]
m = json.load(open(f"{d}/manifest.json"))
assert m["version"] == 2 and [g["target"] for g in m["graphs"]] == ["amd"], (m["version"], [g["target"] for g in m["graphs"]])
g = m["graphs"][0]
assert m["expected_from"] == g["expected_from"] == "amd_gfx1100", m["expected_from"]
tc = m["toolchains"]["amd_gfx1100"]
assert tc["executed"] is True and tc["target"] == "AMD:LLVM:gfx1100" and m["toolchain"]["arch"] == "gfx1100", tc
assert m["toolchain"]["flags"]["DEV"] == "AMD:LLVM" and m["capture"]["mode"] == "amd-jit", m["toolchain"]
for p in g["programs"]:
  assert set(p["objects"]) == {"amd_gfx1100"}, p["objects"]
  co = open(f"{d}/{p['objects']['amd_gfx1100']['file']}", "rb").read()
  assert co[:4] == b"\x7fELF" and int.from_bytes(co[18:20], "little") == 224, p["name"]  # EM_AMDGPU
  assert [s["slot"] for s in p["signature"]] == list(range(len(p["signature"]))), p["signature"]
kernels = [l for l in g["launches"] if l["kind"] == "kernel"]
for l in kernels:
  p = g["programs"][l["program"]]
  assert len(l["args"]) == p["n_buffer_args"] and len(l["vals"]) == len(p["vars"]), l["name"]
for c in m["capture"]["graphs"]:
  items = [l for l in g["launches"] if l.get("graph") == c["index"]]
  assert len(items) == c["kernels"] and [l["graph_index"] for l in items] == list(range(c["kernels"])), c
j = json.loads([l for l in open(d + ".log") if l.startswith("{")][-1])
line = [l for l in open(d + ".log") if l.startswith("exported ")][-1]
assert f"{len(kernels)} dispatches checked against tinygrad's" in line, line
print(f"  {len(g['programs'])} programs, {len(kernels)} launches in {len(m['capture']['graphs'])} HCQ graph(s), {j['outside_graphs']} outside, "
      f"{j['copies']} copies, values in {sum(1 for l in kernels if l['vals'])} launches")
EOF
}
bundle_ok() { # bundle_ok DIR [MODEL]: check_bundle.py, against the model's numpy reference when it has one
  local args=("$1")
  [ -n "${2:-}" ] && grep -q "^def reference" "$ROOT/tools/models/$2.py" && args+=(--model "$ROOT/tools/models/$2.py")
  "$PY" "$ROOT/tools/check_bundle.py" "${args[@]}" >"$1.check" 2>&1 || { tail -5 "$1.check"; return 1; }
}
same_dirs() { diff -r "$1" "$2" >/dev/null; }
amd_only_refused_on_cpu() { # a bundle with only the AMD graph says why it does not run on CPU
  local out
  if out=$("$HCQ_BIN" run "$1" --device CPU --check 2>&1); then echo "  ran on CPU: $out"; return 1; fi
  grep -q "needs a cpu graph" <<<"$out" && grep -q "amd (amd)" <<<"$out" || { echo "  $out"; return 1; }
}
export_amd() { # export_amd DIR ARGS...: under the virtual device, --json; log in DIR.log
  local d=$1; shift
  "${VIRT[@]}" "${EXPORT[@]}" "$@" --amd-jit --json -o "$d" >"$d.log" 2>&1
}
phases() { grep '^export_tinygrad: time' "$1.log" | cut -d' ' -f3-; }

MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(mlp convnet qcom_small chain100 elementwise symbolic)
for model in "${MODELS[@]}"; do
  d="$TMP/$model"
  if export_amd "$d" --model "$ROOT/tools/models/$model.py"; then
    pass "$model: exported with --amd-jit under hcq virtual ($(phases "$d"))"
    check "$model: one amd graph of tinygrad's code objects, every dispatch checked against tinygrad's PM4 stream" manifest_ok "$d"
    check "$model: check_bundle.py accepts the bundle" bundle_ok "$d" "$model"
    check "$model: hcq run --check bit-exact on AMD:SIM and on AMD (KFD) under the virtual node" runs_exact "$d"
    export_amd "$d.again" --model "$ROOT/tools/models/$model.py"
    check "$model: a second export is byte-identical" same_dirs "$d" "$d.again"
    check "$model: the AMD-only bundle is refused on CPU, naming the graph it lacks" amd_only_refused_on_cpu "$d"
  else
    fail "$model: --amd-jit export failed: $(grep -v '^{' "$d.log" | tail -3)"
  fi
done

# --cpu-graph: tinygrad's DEV=CPU export of the same weights beside the AMD graph
cpu_exact_and_close() { # the CPU graph exact on CPU; the AMD graph's outputs within tolerance of tinygrad's DEV=CPU outputs
  local d="$1" out
  out=$("$HCQ_BIN" run "$d" --device CPU --check --json --iters 2 2>&1 | tail -1)
  "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j.get("outputs_ok") is True and j.get("arch") == "x86_64" else 1)' "$out" 2>/dev/null \
    || { echo "  CPU: $out"; return 1; }
  "$PY" - "$d" <<'EOF'
import json, sys, numpy as np
d = sys.argv[1]
m = json.load(open(f"{d}/manifest.json"))
a, c = m["graphs"]
assert (a["target"], c["target"]) == ("amd", "cpu") and m["capture"]["cpu_graph"]["weights_shared"] > 0, m["capture"]
for x, y in zip(a["outputs"], c["outputs"]):
  p = np.fromfile(f"{d}/{x['file']}", dtype=x["dtype"]).astype(np.float64)
  q = np.fromfile(f"{d}/{y['file']}", dtype=y["dtype"]).astype(np.float64)
  err = np.abs(p - q).max()
  print(f"  output {x['index']} ({x['name']}): AMD vs CPU max abs diff {err:.3g}")
  assert np.allclose(p, q, atol=1e-4, rtol=1e-3), err
EOF
}
if export_amd "$TMP/mlp_cpu" --model "$ROOT/tools/models/mlp.py" --cpu-graph; then
  pass "mlp: exported with --cpu-graph ($(grep 'added the CPU graph' "$TMP/mlp_cpu.log"))"
  check "mlp (two graphs): AMD:SIM and AMD under the virtual node still bit-exact" runs_exact "$TMP/mlp_cpu"
  check "mlp (two graphs): the CPU graph exact on CPU, the AMD outputs within tolerance of it" cpu_exact_and_close "$TMP/mlp_cpu"
else fail "mlp --cpu-graph export failed: $(grep -v '^{' "$TMP/mlp_cpu.log" | tail -3)"; fi

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
# --no-prune: the Shape constant [1, 2, 8, 32] (int64) tinygrad keeps on PYTHON becomes a weight, copied in by a copy launch
if export_amd "$TMP/policy_noprune" --model "$ROOT/tools/models/policy_transformer.py" --no-prune; then
  pass "policy_transformer --no-prune: exported ($(phases "$TMP/policy_noprune"))"
  check "policy_transformer --no-prune: the PYTHON constant is a weight holding the Shape [1, 2, 8, 32], copied in by a copy launch" \
    json_has "$TMP/policy_noprune" \
    'j["prune"] is False and j["host_buffers"] == 1 and [np.fromfile(d + "/" + g["buffers"][l["src"]["buffer"]]["file"], dtype=np.int64).tolist() for l in g["launches"] if l["kind"] == "copy"] == [[1, 2, 8, 32]] and all(g["buffers"][l["src"]["buffer"]]["role"] == "weight" for l in g["launches"] if l["kind"] == "copy")'
  check "policy_transformer --no-prune: check_bundle.py accepts the bundle" bundle_ok "$TMP/policy_noprune"
  check "policy_transformer --no-prune: hcq run --check bit-exact on AMD:SIM and on AMD under the virtual node (the copy included)" \
    runs_exact "$TMP/policy_noprune"
else fail "policy_transformer --no-prune export failed: $(grep -v '^{' "$TMP/policy_noprune.log" | tail -3)"; fi

# --pickle: a TinyJit pickled the way openpilot's compile3.py does (TinyJit(prune=True), three calls, pickle.dump), made with
# tinygrad 0.14 on the virtual gfx1100; "npy": the inputs on NPY, moved to the device inside the JIT
cat >"$TMP/make_pickle.py" <<'EOF'
import importlib, os, pickle, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tools/models"))
os.environ["DEV"] = "AMD:LLVM"
from tinygrad import Device, Tensor, TinyJit
fn, example = importlib.import_module(sys.argv[3]).build(0)
npy = sys.argv[4:] == ["npy"]
jit = TinyJit((lambda *a: fn(*[t.to(Device.DEFAULT) for t in a])) if npy else fn, prune=True)
for _ in range(3):
  out = jit(*[Tensor(t.numpy(), device="NPY" if npy else t.device).realize() for t in example])
  for o in (out if isinstance(out, tuple) else (out,)): o.realize()
with open(sys.argv[2], "wb") as f: pickle.dump(jit, f)
EOF
same_graph() { # same_graph MODEL_DIR PICKLE_DIR OUT: the same kernels (names, order); OUT = the pickle's bundle with the
  # --model bundle's inputs and expected outputs (it must then compute those exactly)
  "$PY" - "$@" <<'EOF'
import hashlib, json, shutil, sys
a, b, out = sys.argv[1:4]
ga, gb = [json.load(open(f"{d}/manifest.json"))["graphs"][0] for d in (a, b)]
ka, kb = [[l["name"] for l in g["launches"] if l["kind"] == "kernel"] for g in (ga, gb)]
print(f"  --model: {len(ka)} kernels, --pickle: {len(kb)} kernels")
if ka != kb: sys.exit(1)
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
open(f"{out}/manifest.json", "w").write(json.dumps(m, indent=1) + "\n")
EOF
}
for variant in amd npy; do
  pkl="$TMP/small_$variant.pkl" d="$TMP/pkl_$variant"
  extra=()
  [ "$variant" = npy ] && extra=(npy)
  if "${VIRT[@]}" "$PY" "$TMP/make_pickle.py" "$ROOT" "$pkl" qcom_small "${extra[@]}" >"$TMP/pickle_$variant.log" 2>&1; then
    pass "qcom_small pickled on the virtual gfx1100 by tinygrad 0.14 (inputs on ${variant^^})"
    if export_amd "$d" --pickle "$pkl"; then
      pass "--pickle (inputs on ${variant^^}): exported ($(phases "$d"))"
      check "--pickle (inputs on ${variant^^}): one amd graph, every dispatch checked" manifest_ok "$d"
      check "--pickle (inputs on ${variant^^}): hcq run --check bit-exact on AMD:SIM and on AMD under the virtual node" runs_exact "$d"
      if [ -d "$TMP/qcom_small" ]; then
        check "--pickle (inputs on ${variant^^}): the --model bundle's kernels" same_graph "$TMP/qcom_small" "$d" "$d.same"
        check "--pickle (inputs on ${variant^^}): computes the --model bundle's outputs from its inputs (bit-exact, both devices)" \
          runs_exact "$d.same"
      fi
      if [ "$variant" = npy ]; then
        check "--pickle (inputs on NPY): each input is read by a copy launch and by no kernel" json_has "$d" \
          '{i["buffer"] for i in g["inputs"]} <= {l["src"]["buffer"] for l in g["launches"] if l["kind"] == "copy"} and not ({a["buffer"] for l in kernels for a in l["args"]} & {i["buffer"] for i in g["inputs"]})'
      fi
    else fail "--pickle (inputs on ${variant^^}) export failed: $(grep -v '^{' "$d.log" | tail -3)"; fi
  else fail "making the pickle (inputs on ${variant^^}) failed: $(tail -3 "$TMP/pickle_$variant.log")"; fi
done

# the exporter's check of each launch against tinygrad's dispatch has teeth: after a capture of symbolic (two launches in one
# HCQ graph, int32 values), a launch changed in its grid, an argument's offset, a value or its program is refused
cat >"$TMP/tamper.py" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import export_tinygrad as et, amd_capture as ac
class Args: seed, no_prune = 0, False
ex = ac.make_exporter_class(et.Exporter, et.ExportError)(Args(), ac.setup_amd_environment())
ex.run(et.load_model(os.path.join(sys.argv[1], "tools/models/symbolic.py")))
a, b = ex.launched
print(f"  capture: {ex.dispatches_checked} dispatches checked")
def grid(): a["entry"]["local_size"][0] *= 2
def offset(): a["entry"]["args"][1]["offset"] += 4
def value(): b["entry"]["vals"][0] += 1
def program(): a["prg"] = b["prg"]
bad = 0
for change, want in ((grid, "dispatched"), (offset, "kernel-argument block differs"), (value, "kernel-argument block differs"),
                     (program, "runs the code at")):
  saved = [(k, k["prg"], [list(k["entry"][f]) for f in ("local_size", "vals")], [dict(x) for x in k["entry"]["args"]]) for k in (a, b)]
  change()
  try:
    ex.check_dispatches()
    print(f"  {change.__name__}: accepted")
    bad += 1
  except et.ExportError as e:
    print(f"  {change.__name__}: refused: {e}")
    bad += want not in str(e)
  for k, prg, (local, vals), args in saved:
    k["prg"], k["entry"]["local_size"], k["entry"]["vals"], k["entry"]["args"] = prg, local, vals, args
ex.check_dispatches()  # restored: accepted again
sys.exit(1 if bad else 0)
EOF
check "the dispatch check refuses a launch changed in its grid, an argument's offset, a value or its program" \
  "${VIRT[@]}" "$PY" "$TMP/tamper.py" "$ROOT"

refused() { # refused WHAT EXPECTED_TEXT COMMAND...: the command fails and its error contains EXPECTED_TEXT
  local what="$1" want="$2" out; shift 2
  if out=$("$@" 2>&1); then fail "$what: accepted"; return; fi
  if grep -qF -- "$want" <<<"$out"; then pass "$what: refused ($(grep -F -- "$want" <<<"$out" | head -1 | cut -c1-200))"
  else fail "$what: refused without naming '$want': $(tail -2 <<<"$out")"; fi
}
MLP="$ROOT/tools/models/mlp.py"
refused "--amd-jit without the virtual device" "hcq virtual --" \
  env HCQ_VKGSL_LIB=/nonexistent "${EXPORT[@]}" --model "$MLP" --amd-jit -o "$TMP/nodev"
refused "--amd-jit with DEV=QCOM" "DEV=QCOM" env DEV=QCOM "${VIRT[@]}" "${EXPORT[@]}" --model "$MLP" --amd-jit -o "$TMP/qdev"
refused "--amd-jit with AMD_LLVM=0 (the HIP renderer)" "AMD_LLVM=0" env AMD_LLVM=0 "${VIRT[@]}" "${EXPORT[@]}" --model "$MLP" --amd-jit -o "$TMP/hip"
refused "--amd-jit with IMAGE=1" "image kernels are tinygrad's QCOM path" env IMAGE=1 "${VIRT[@]}" "${EXPORT[@]}" --model "$MLP" --amd-jit -o "$TMP/img"
refused "--qcom-jit with --amd-jit" "give one" "${EXPORT[@]}" --model "$MLP" --amd-jit --qcom-jit -o "$TMP/both"
if [ -f "$TMP/small_amd.pkl" ]; then
  refused "an AMD pickle given to --qcom-jit" "runs on AMD, not QCOM" "${EXPORT[@]}" --pickle "$TMP/small_amd.pkl" -o "$TMP/amd_as_qcom"
fi
# a pickle whose buffers are on QCOM (its strings; pickle opcodes only, nothing importable)
printf '\x80\x02ctinygrad.engine.jit\n_TinyJit\nctinygrad.engine.jit\nCapturedJit\nX\x04\x00\x00\x00QCOM.' >"$TMP/qcom.pkl"
refused "a QCOM pickle given to --amd-jit" "runs on QCOM, not AMD" "${EXPORT[@]}" --pickle "$TMP/qcom.pkl" --amd-jit -o "$TMP/qcom_as_amd"
printf '\x80\x02ctinygrad.engine.jit\nCapturedJit\n)\x81}X\x09\x00\x00\x00jit_cache]sb.' >"$TMP/old.pkl"
refused "--amd-jit --pickle of an older tinygrad's TinyJit" "needs a pickle made by tinygrad 0.14.0" \
  "${EXPORT[@]}" --pickle "$TMP/old.pkl" --amd-jit -o "$TMP/old"

finish
