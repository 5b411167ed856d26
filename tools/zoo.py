#!/usr/bin/env python3
"""The model zoo: real architectures through tinygrad 0.14's ONNX frontend, its QCOM JIT and hcq.

For each model (torchvision architectures with seeded random weights at openpilot's camera input, and two policy heads):

1. torch builds it (`torch.manual_seed(seed)`, batch-norm statistics drawn from the same seed so that no layer is an
   identity), and `torch.onnx.export` writes it at opset 17 (the TorchScript exporter, `dynamo=False`). Vision models take
   openpilot's frame: one uint8 tensor `img` of 1x12x128x256 (two frames x six YUV planes), converted in the graph to float
   (`x / 127.5 - 1`); the architecture's stem convolution is rebuilt with 12 input channels (same output channels, kernel,
   stride, padding, bias) instead of 3, as openpilot's own vision model's first convolution takes the 12 planes. The policy
   heads take openpilot's policy inputs `features_buffer` 1x25x512, `desire_pulse` 1x25x8, `traffic_convention` 1x2 (float32).
2. For each flag set (`plain`: tinygrad's defaults, `openpilot`: FLOAT16=1 IMAGE=1 NOLOCALS=1 JIT_BATCH_SIZE=0, with
   OPENPILOT_HACKS=1 as openpilot's SConscript sets it) and route:
   - `qcom-jit`: `hcq vkgsl -- python tools/export_tinygrad.py --model tools/zoo/onnx_model.py --qcom-jit` (the exporter's
     own TinyJit around tinygrad's OnnxRunner);
   - `pickle`: the TinyJit made as openpilot's compile3.py makes it (`OnnxRunner`, `@TinyJit(prune=True)` over
     `**kwargs` moved to the default device, the first output cast to float32, inputs named like `img` on the device and
     the others on NPY, three calls under `Context(OPENPILOT_HACKS=1)`), pickled, then `export_tinygrad.py --pickle`;
   then `hcq run B --device QCOM:SIM --check --json` and `hcq vkgsl -- hcq run B --device QCOM --check --json` (both must
   report `outputs_ok`: hcq's outputs equal, bit for bit, what tinygrad computed on the virtual A630), and the bundle's
   expected outputs (= hcq's) are compared with onnxruntime's outputs for the bundle's own input bytes.
3. tinygrad's own call time: the compile3-style TinyJit, called under `hcq vkgsl -- python` on the same virtual A630
   (`DEV=QCOM`), each call followed by the device's synchronize, median of `--iters` calls.

A model passes when every step passes and max |hcq - onnxruntime| <= TOL[flags] * max |onnxruntime| (relative to the
output's scale: random weights give outputs of 0.02 to 1): 1e-3 for plain (float32 weights and arithmetic), 5e-2 under
openpilot's flags (FLOAT16=1: weights and activations stored as float16, float32 arithmetic). Anything that fails is reported with the failing tool's own error line, verbatim.

  python tools/zoo.py [--models a,b] [--flags plain,openpilot] [--routes qcom-jit,pickle] [--json OUT] [--markdown OUT]

Needs the venv of tools/test_zoo.sh (tinygrad 0.14.0, tinymesa, torch, torchvision, onnx, onnxruntime) and HCQ_BIN (the
hcq binary, libhcq_vkgsl.so next to it or at HCQ_VKGSL_LIB). Internal subcommands (run by the zoo itself): `onnx`,
`tinygrad`.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSET = 17
FRAME = (1, 12, 128, 256)  # openpilot's vision input: two frames x six YUV planes, uint8
POLICY_INPUTS = {"features_buffer": (1, 25, 512), "desire_pulse": (1, 25, 8), "traffic_convention": (1, 2)}
VISION = ["squeezenet1_1", "shufflenet_v2_x0_5", "mobilenet_v3_small", "mobilenet_v2", "efficientnet_b0", "resnet18",
          "regnet_y_400mf"]
POLICY = ["policy_transformer", "policy_gru"]
MODELS = VISION + POLICY
# any other torchvision builder (classification, segmentation, ...) by name: tv:googlenet, tv:lraspp_mobilenet_v3_large
TV = "tv:"
FLAGS = {
  "plain": {"FLOAT16": "0", "IMAGE": "0", "NOLOCALS": "0", "JIT_BATCH_SIZE": "32"},  # tinygrad 0.14's defaults, spelled out
  "openpilot": {"FLOAT16": "1", "IMAGE": "1", "NOLOCALS": "1", "JIT_BATCH_SIZE": "0", "OPENPILOT_HACKS": "1"},
}
TOL = {"plain": 1e-3, "openpilot": 5e-2}
ROUTES = ["qcom-jit", "pickle"]


# ---------------------------------------------------------------- torch side (subcommand `onnx`)

def torch_model(name: str, seed: int):
  """(module, {input name: example array}) for a zoo model, weights from `seed`."""
  import numpy as np
  import torch
  from torch import nn
  torch.manual_seed(seed)
  g = torch.Generator().manual_seed(seed + 1)
  rng = np.random.default_rng([seed, 2])
  if name in VISION or name.startswith(TV):
    import torchvision
    if name in VISION: net = getattr(torchvision.models, name)(weights=None)
    else:
      builder = name[len(TV):]
      if builder not in torchvision.models.list_models():
        raise RuntimeError(f"{name}: torchvision {torchvision.__version__} has no model builder {builder!r}")
      import inspect
      make = torchvision.models.get_model_builder(builder)
      # no download: no weights, and no pretrained backbone (segmentation and detection builders default to one)
      kw = {"weights": None}
      if "weights_backbone" in inspect.signature(make).parameters: kw["weights_backbone"] = None
      net = make(**kw)
    stem = next(((mod_name, m) for mod_name, m in net.named_modules() if isinstance(m, nn.Conv2d) and m.in_channels == 3), None)
    if stem is None: raise RuntimeError(f"{name}: no convolution with 3 input channels to adapt to the 12-plane frame")
    path, old = stem
    new = nn.Conv2d(FRAME[1], old.out_channels, old.kernel_size, old.stride, old.padding, old.dilation, old.groups,
                    old.bias is not None)
    parent = net
    *parents, last = path.split(".")
    for p in parents: parent = getattr(parent, p)
    setattr(parent, last, new)

    class Camera(nn.Module):
      """openpilot's frame in: uint8 1x12x128x256 -> float in [-1, 1] -> the network."""
      def __init__(self, net):
        super().__init__()
        self.net = net

      def forward(self, img):
        y = self.net(img.to(torch.float32) / 127.5 - 1.0)
        # segmentation models answer {"out": ..., "aux": ...}: the zoo compares the first output
        return next(iter(y.values())) if isinstance(y, dict) else y

    model = Camera(net)
    inputs = {"img": rng.integers(0, 256, FRAME, dtype=np.uint8)}
  elif name in POLICY:
    class Policy(nn.Module):
      """openpilot's policy inputs -> a 25-step temporal model -> 200 outputs."""
      def __init__(self, kind):
        super().__init__()
        self.kind, width = kind, 128
        self.proj = nn.Linear(512 + 8, width)
        if kind == "transformer":
          self.pos = nn.Parameter(torch.randn(1, 25, width, generator=g) * 0.1)
          layer = nn.TransformerEncoderLayer(width, 4, 256, dropout=0.0, activation="gelu", batch_first=True)
          self.core = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        else:
          self.core = nn.GRU(width, width, batch_first=True)
        self.head = nn.Sequential(nn.Linear(width + 2, 256), nn.ReLU(), nn.Linear(256, 200))

      def forward(self, features_buffer, desire_pulse, traffic_convention):
        x = self.proj(torch.cat([features_buffer, desire_pulse], dim=2))
        if self.kind == "transformer": h = self.core(x + self.pos)[:, -1]
        else: h = self.core(x)[0][:, -1]
        return self.head(torch.cat([h, traffic_convention], dim=1))

    model = Policy(name.split("_", 1)[1])
    inputs = {k: rng.standard_normal(s).astype(np.float32) for k, s in POLICY_INPUTS.items()}
  else: raise RuntimeError(f"unknown model {name!r}; the zoo has {', '.join(MODELS)}")
  # batch-norm statistics and affine parameters drawn from the seed (torchvision's init makes every BN an identity)
  with torch.no_grad():
    for m in model.modules():
      if isinstance(m, nn.BatchNorm2d):
        m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
        m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
        m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
        m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
  return model.eval(), inputs


def cmd_onnx(a) -> int:
  import warnings
  import numpy as np
  import torch
  warnings.filterwarnings("ignore", category=DeprecationWarning)  # the TorchScript exporter's own deprecation notice
  torch.backends.mha.set_fastpath_enabled(False)  # the fused encoder-layer kernel has no ONNX export
  model, inputs = torch_model(a.model, a.seed)
  names = list(inputs)
  os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
  args = tuple(torch.from_numpy(inputs[n]) for n in names)
  with torch.no_grad():
    torch.onnx.export(model, args, a.out, input_names=names, output_names=["outputs"], opset_version=OPSET, dynamo=False,
                      do_constant_folding=True)
  np.savez(a.inputs, **inputs)
  n_params = sum(p.numel() for p in model.parameters())
  with open(a.meta, "w") as f:
    json.dump({"model": a.model, "seed": a.seed, "opset": OPSET, "params": n_params, "torch": torch.__version__,
               "inputs": {n: [list(inputs[n].shape), str(inputs[n].dtype)] for n in names}}, f)
  print(f"{a.model}: {n_params} parameters, ONNX opset {OPSET} at {a.out}")
  return 0


# ---------------------------------------------------------------- tinygrad side (subcommand `tinygrad`, under hcq vkgsl)

def cmd_tinygrad(a) -> int:
  """openpilot's compile3.py (tinygrad 0.14): OnnxRunner into TinyJit(prune=True), 3 calls, pickle; then timed calls."""
  import pickle
  import numpy as np
  from tinygrad import Context, Device, Tensor, TinyJit
  from tinygrad.nn.onnx import OnnxRunner
  t0 = time.perf_counter()
  run_onnx = OnnxRunner(a.onnx)
  with np.load(a.inputs) as z: arrays = {k: z[k] for k in z.files}
  # compile3: inputs on NPY, the camera images (names with 'img') on the device
  inputs = {k: Tensor(arrays[k], device=Device.DEFAULT).realize() if "img" in k else Tensor(arrays[k], device="NPY")
            for k in sorted(run_onnx.graph_inputs)}

  @TinyJit(prune=True)
  def run_onnx_jit(**kwargs):
    return next(iter(run_onnx({k: v.to(Device.DEFAULT) for k, v in kwargs.items()}).values())).cast("float32")

  outs = []
  for _ in range(3):
    with Context(OPENPILOT_HACKS=1): outs.append(run_onnx_jit(**inputs).numpy())
  np.testing.assert_equal(outs[1], outs[2], "JIT run failed")
  capture_s = time.perf_counter() - t0
  res = {"capture_s": capture_s, "device": Device.DEFAULT}
  if a.pickle:
    t1 = time.perf_counter()
    with open(a.pickle, "wb") as f: pickle.dump(run_onnx_jit, f)
    res["pickle_s"] = time.perf_counter() - t1
  dev = Device[Device.DEFAULT]
  times = []
  for _ in range(a.iters):
    st = time.perf_counter()
    run_onnx_jit(**inputs)
    dev.synchronize()
    times.append(time.perf_counter() - st)
  if times: res["call_us_median"] = sorted(times)[len(times) // 2] * 1e6
  with open(a.json, "w") as f: json.dump(res, f)
  print(f"tinygrad: captured in {capture_s:.1f} s" + (f", call {res['call_us_median'] / 1e3:.1f} ms (median of {len(times)})" if times else ""))
  return 0


# ---------------------------------------------------------------- the zoo (orchestration)

def error_line(text: str) -> str:
  """The failing tool's own error, verbatim: the virtual device's first `hcq-vkgsl:` fault line (the cause of what follows)
  and then the exporter's `export_tinygrad: error:` line, hcq's `error:` line, or the last line of a Python traceback (the
  exception); else the last non-empty line. Two lines are joined by a newline."""
  fault = next((l.rstrip() for l in text.splitlines() if l.startswith("hcq-vkgsl:")), None)
  last = last_error(text)
  return last if fault is None or fault == last else f"{fault}\n{last}"


def last_error(text: str) -> str:
  lines = [l.rstrip() for l in text.splitlines()]
  for l in reversed(lines):
    if l.startswith("export_tinygrad: error:") or l.startswith("error:") or l.startswith("Error:"): return l
  # Python tracebacks: the exception of the last one the process raised, not of those it printed and ignored (tinygrad's
  # buffer finalizers at exit and QCOMCompiler.__del__ after a device fault)
  raised, ignored, prev, in_ignored = [], [], "", False
  chained = ("During handling of the above exception", "The above exception was the direct cause")
  for k, l in enumerate(lines):
    if l.startswith("Traceback (most recent call last):"):
      first = lines[k + 1] if k + 1 < len(lines) else ""
      if prev.startswith("Exception ignored in") or "weakref.py" in first: in_ignored = True  # weakref finalizers at exit
      elif not prev.startswith(chained): in_ignored = False
      exc = next((x for x in lines[k + 1:] if x and not x.startswith(" ")), None)
      if exc is not None: (ignored if in_ignored else raised).append(exc)
    if l: prev = l
  if raised or ignored: return (raised or ignored)[-1]
  rest = [l for l in lines if l.strip()]
  return rest[-1] if rest else "(no output)"


class Zoo:
  def __init__(self, a, command):
    self.a = a
    self.py = sys.executable
    self.hcq = a.hcq
    self.env = dict(os.environ)
    self.env.pop("DEV", None)
    lib = os.environ.get("HCQ_VKGSL_LIB") or os.path.join(os.path.dirname(self.hcq), "libhcq_vkgsl.so")
    self.env["HCQ_VKGSL_LIB"] = lib
    self.results: list[dict] = []
    self.commands, self.start = [command], time.perf_counter()
    self.versions = versions()

  def write(self) -> float:
    """The JSON and the markdown table so far (rewritten after every result: a long run keeps what it measured)."""
    wall = time.perf_counter() - self.start
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "wall_s": wall,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores", **self.versions}
    if self.a.json:
      with open(self.a.json, "w") as f:
        json.dump({"command": self.commands[-1], "commands": self.commands, **meta, "tolerance": TOL, "opset": OPSET,
                   "results": self.results}, f, indent=1)
    if self.a.markdown: write_markdown(self.a.markdown, markdown(self.results, self.commands, meta))
    return wall

  def sh(self, argv, log, env=None, timeout=None):
    """Run argv, output to `log`; (ok, seconds, output)."""
    st = time.perf_counter()
    try:
      r = subprocess.run(argv, env=env or self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=timeout or self.a.timeout)
      out, ok = r.stdout, r.returncode == 0
    except subprocess.TimeoutExpired as e:
      out = (e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
      out += f"\nzoo: error: timed out after {timeout or self.a.timeout} s: {shlex.join(argv)}"
      ok = False
    dt = time.perf_counter() - st
    with open(log, "w") as f: f.write(f"$ {shlex.join(argv)}\n{out}")
    return ok, dt, out

  def vk(self, argv):
    return [self.hcq, "vkgsl", "--"] + argv

  def run_model(self, model):
    d = os.path.join(self.a.work, model)
    os.makedirs(d, exist_ok=True)
    onnx, inputs, meta = (os.path.join(d, f"{model}.{x}") for x in ("onnx", "inputs.npz", "json"))
    print(f"== {model}", flush=True)
    ok, dt, out = self.sh([self.py, __file__, "onnx", model, "--seed", str(self.a.seed), "-o", onnx, "--inputs", inputs,
                           "--meta", meta], os.path.join(d, "onnx.log"))
    if not ok:
      err = error_line(out)
      for flags in self.a.flags:
        for route in self.a.routes:
          self.record({"model": model, "flags": flags, "route": route, "status": "FAIL", "stage": "torch.onnx.export",
                       "error": err})
      return
    with open(meta) as f: info = json.load(f)
    for flags in self.a.flags:
      self.run_flags(model, d, onnx, inputs, info, flags)

  def run_flags(self, model, d, onnx, inputs, info, flags):
    fd = os.path.join(d, flags)
    os.makedirs(fd, exist_ok=True)
    env = dict(self.env)
    for k in set().union(*(f.keys() for f in FLAGS.values())): env.pop(k, None)
    env |= FLAGS[flags] | {"DEV": "QCOM"}
    # tinygrad's own JIT on the virtual A630 (compile3-style), which also makes the pickle of the pickle route
    pkl = os.path.join(fd, f"{model}_tinygrad.pkl")
    tg_json = os.path.join(fd, "tinygrad.json")
    want_pickle = "pickle" in self.a.routes
    tg = {"ok": None}
    if want_pickle or self.a.iters > 0:
      argv = self.vk([self.py, __file__, "tinygrad", onnx, "--inputs", inputs, "--json", tg_json, "--iters", str(self.a.iters)]
                     + (["--pickle", pkl] if want_pickle else []))
      ok, dt, out = self.sh(argv, os.path.join(fd, "tinygrad.log"), env)
      tg = {"ok": ok, "wall_s": dt, "error": None if ok else error_line(out)}
      if ok:
        with open(tg_json) as f: tg |= json.load(f)
    kernels = {}
    for route in self.a.routes:
      r = {"model": model, "flags": flags, "route": route, "params": info["params"],
           "tinygrad_call_us": tg.get("call_us_median"), "tinygrad_error": tg.get("error")}
      r = self.run_route(r, fd, onnx, inputs, env, route, pkl, tg, flags)
      if r["status"] == "PASS":
        kernels[route] = r.pop("kernel_names")
        r = same_graph(r, kernels)
      self.record(r)

  def run_route(self, r, fd, onnx, inputs, env, route, pkl, tg, flags):
    b = os.path.join(fd, route)
    if os.path.isdir(b):
      import shutil
      shutil.rmtree(b)
    export = [self.py, os.path.join(ROOT, "tools/export_tinygrad.py"), "--qcom-jit", "-o", b]
    if route == "pickle":
      if not tg["ok"]: return r | {"status": "FAIL", "stage": "compile3 pickle (tinygrad)", "error": tg["error"]}
      r["pickle_s"] = tg.get("capture_s", 0) + tg.get("pickle_s", 0)
      export += ["--pickle", pkl]
    else:
      export += ["--model", os.path.join(ROOT, "tools/zoo/onnx_model.py"), "--name", r["model"]]
    xenv = env | {"ZOO_ONNX": onnx, "ZOO_INPUTS": inputs}
    ok, dt, out = self.sh(self.vk(export), os.path.join(fd, f"{route}.export.log"), xenv)
    r["export_s"] = dt
    if not ok: return r | {"status": "FAIL", "stage": f"export --{route}", "error": error_line(out)}
    with open(os.path.join(b, "manifest.json")) as f: m = json.load(f)
    g = m["graphs"][0]
    r["kernels"] = sum(1 for l in g["launches"] if l["kind"] == "kernel")
    r["kernel_names"] = [l["name"] for l in g["launches"] if l["kind"] == "kernel"]
    r["programs"] = len(g["programs"])
    views = {(a["buffer"], a["offset"], json.dumps(a["image"], sort_keys=True)) for l in g["launches"] if l["kind"] == "kernel"
             for a in l["args"] if "image" in a}
    r["images"] = len(views | {(bb["id"], 0, json.dumps(bb["image"], sort_keys=True)) for bb in g["buffers"] if "image" in bb})
    pv = [p["adreno"].get("pvtmem", 0) for p in g["programs"] if "adreno" in p]
    r["spills"] = sum(1 for v in pv if v > 0)
    r["pvtmem_max"] = max(pv, default=0)
    # hcq on the simulated A630 and on tinygrad's QCOM path under the virtual node
    for key, argv in (("sim", [self.hcq, "run", b, "--device", "QCOM:SIM"]),
                      ("vkgsl", self.vk([self.hcq, "run", b, "--device", "QCOM"]))):
      ok, dt, out = self.sh(argv + ["--check", "--json", "--iters", str(self.a.iters)],
                            os.path.join(fd, f"{route}.run_{key}.log"))
      j = None
      for line in reversed(out.splitlines()):
        if line.startswith("{"):
          try: j = json.loads(line)
          except json.JSONDecodeError: pass
          break
      if j is not None:
        r[f"hcq_{key}_call_us"] = j.get("call_us_median") if self.a.iters > 0 else None
        r[f"hcq_{key}_first_call_us"] = j.get("first_call_us")
        r[f"hcq_{key}_outputs_ok"] = j.get("outputs_ok")
      if not ok or j is None or j.get("outputs_ok") is not True:
        return r | {"status": "FAIL", "stage": f"hcq run ({'QCOM:SIM' if key == 'sim' else 'QCOM under hcq vkgsl'})",
                    "error": error_line(out) if j is None else f"outputs_ok={j.get('outputs_ok')}: {json.dumps(j)}"}
    # onnxruntime on the bundle's own inputs against the bundle's expected outputs (= hcq's, bit for bit: --check)
    try: diff, scale = self.compare(b, g, onnx)
    except Exception as e: return r | {"status": "FAIL", "stage": "onnxruntime comparison", "error": f"{type(e).__name__}: {e}"}
    r["max_abs_diff"], r["ref_max_abs"], r["tol"] = diff, scale, TOL[flags]
    if not diff <= TOL[flags] * scale:
      return r | {"status": "FAIL", "stage": "onnxruntime comparison",
                  "error": f"max |hcq - onnxruntime| = {diff:.4g} > {TOL[flags]} * max |onnxruntime| = {TOL[flags]} * {scale:.4g}"}
    return r | {"status": "PASS"}

  def compare(self, b, g, onnx):
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    order = [i.name for i in sess.get_inputs()]
    bufs = {x["id"]: x for x in g["buffers"]}
    feeds = {}
    for inp in sorted(g["inputs"], key=lambda t: t["index"]):
      name = inp["name"] if inp["name"] in order else order[inp["index"]]
      raw = np.fromfile(os.path.join(b, bufs[inp["buffer"]]["file"]), dtype=np.uint8)[inp["offset"]:inp["offset"] + inp["nbytes"]]
      feeds[name] = raw.view(inp["dtype"]).reshape(inp["shape"])
    if sorted(feeds) != sorted(order): raise ValueError(f"the bundle's inputs {sorted(feeds)} are not the ONNX inputs {order}")
    ref = sess.run(None, feeds)[0].astype(np.float64)
    out = sorted(g["outputs"], key=lambda t: t["index"])[0]
    got = np.fromfile(os.path.join(b, out["file"]), dtype=out["dtype"]).astype(np.float64)
    if got.size != ref.size: raise ValueError(f"the bundle's output has {got.size} values, onnxruntime's {ref.size}")
    if not np.all(np.isfinite(got)): raise ValueError(f"the bundle's output has {int((~np.isfinite(got)).sum())} non-finite values")
    return float(np.abs(got - ref.reshape(-1)).max()), float(np.abs(ref).max())

  def record(self, r):
    self.results.append(r)
    self.write()
    line = f"   {r['model']} {r['flags']} {r['route']}: {r['status']}"
    if r["status"] == "PASS":
      line += (f" ({r['kernels']} kernels, {r['images']} images, max|d| {r['max_abs_diff']:.3g}, export {r['export_s']:.1f} s, "
               f"hcq QCOM:SIM {fmt_ms(r.get('hcq_sim_call_us'))} ms, tinygrad {fmt_ms(r.get('tinygrad_call_us'))} ms)")
    else: line += f" at {r['stage']}: {r['error']}"
    print(line, flush=True)


def same_graph(r, kernels):
  """The --model (qcom-jit) route builds its TinyJit with prune=True as compile3.py does, so both routes of one model and
  flag set must give the same kernels in the same order: a later route that differs from an earlier one fails."""
  for other, names in kernels.items():
    mine = kernels[r["route"]]
    if other == r["route"] or names == mine: continue
    i = next((i for i, (x, y) in enumerate(zip(names, mine)) if x != y), min(len(names), len(mine)))
    return r | {"status": "FAIL", "stage": f"same graph as {other}",
                "error": f"{len(mine)} kernels against {other}'s {len(names)}; first difference at kernel {i}: "
                         f"{mine[i:i + 3]} / {names[i:i + 3]}"}
  return r


def fmt_ms(us):
  return "-" if us is None else f"{us / 1e3:.1f}"


def markdown(results, commands, meta) -> str:
  head = ("| model | flags | route | kernels | images | spills | export s | hcq QCOM:SIM ms | hcq vkgsl ms | tinygrad DEV=QCOM ms "
          "| max abs diff | status |")
  rows = [head, "|" + " --- |" * 12]
  for r in results:
    def n(k, f="{}", r=r):
      return "-" if r.get(k) is None else f.format(r[k])
    spills = "-" if r.get("spills") is None else (f"{r['spills']} (max {r['pvtmem_max']} B)" if r["spills"] else "0")
    diff = "-" if r.get("max_abs_diff") is None else f"{r['max_abs_diff']:.3g} (of {r['ref_max_abs']:.3g})"
    status = r["status"] if r["status"] == "PASS" else f"FAIL ({r['stage']}, [error](#{anchor(r)}))"
    rows.append(f"| {r['model']} | {r['flags']} | {r['route']} | {n('kernels')} | {n('images')} | {spills} | {n('export_s', '{:.1f}')} "
                f"| {fmt_ms(r.get('hcq_sim_call_us'))} | {fmt_ms(r.get('hcq_vkgsl_call_us'))} | {fmt_ms(r.get('tinygrad_call_us'))} "
                f"| {diff} | {status} |")
  errs = [r for r in results if r["status"] != "PASS"]
  made = " then ".join(f"`{c}`" for c in commands)
  out = [f"Made by {made} (the last on {meta['date']}, {meta['machine']}; tinygrad {meta['tinygrad']}, torch {meta['torch']}, "
         f"onnxruntime {meta['onnxruntime']}; ONNX opset {OPSET}; {meta['wall_s']:.0f} s).", "", *rows, ""]
  if errs:
    out += ["Failures, with the failing tool's own error (verbatim):", ""]
    for r in errs:
      out += [f"- <a id=\"{anchor(r)}\"></a>**{r['model']} / {r['flags']} / {r['route']}** at {r['stage']}:", "",
              "  ```text", *(f"  {l}" for l in r["error"].splitlines()), "  ```"]
      if r.get("tinygrad_error") and r["route"] != "pickle" and r["tinygrad_error"] != r["error"]:
        out += ["", "  tinygrad's own compile3-style run (the timing column) failed too:", "", "  ```text",
                *(f"  {l}" for l in r["tinygrad_error"].splitlines()), "  ```"]
    out.append("")
  return "\n".join(out)


def anchor(r):
  return f"err-{r['model']}-{r['flags']}-{r['route']}".replace("_", "-").replace(":", "-")


BEGIN, END = "<!-- zoo:begin (tools/zoo.py --markdown writes between these lines) -->", "<!-- zoo:end -->"


def write_markdown(path, text):
  """Replace the part between the zoo markers of an existing file, else write the file."""
  if os.path.isfile(path):
    with open(path) as f: old = f.read()
    if BEGIN in old and END in old:
      pre, rest = old.split(BEGIN, 1)
      text = pre + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1]
  with open(path, "w") as f: f.write(text)


def versions():
  import importlib.metadata as md
  def v(p):
    try: return md.version(p)
    except md.PackageNotFoundError: return "missing"
  return {"tinygrad": v("tinygrad"), "torch": v("torch"), "onnxruntime": v("onnxruntime")}


def main(argv=None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if argv and argv[0] == "onnx":
    ap = argparse.ArgumentParser(prog="zoo.py onnx")
    ap.add_argument("model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--meta", required=True)
    return cmd_onnx(ap.parse_args(argv[1:]))
  if argv and argv[0] == "tinygrad":
    ap = argparse.ArgumentParser(prog="zoo.py tinygrad")
    ap.add_argument("onnx")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--pickle")
    ap.add_argument("--iters", type=int, default=3)
    return cmd_tinygrad(ap.parse_args(argv[1:]))
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated (default: all: {','.join(MODELS)}); tv:NAME for any other torchvision builder")
  ap.add_argument("--flags", default="plain,openpilot", help="comma-separated flag sets: plain, openpilot (default: both)")
  ap.add_argument("--routes", default="qcom-jit,pickle", help="comma-separated: qcom-jit, pickle (default: both)")
  ap.add_argument("--iters", type=int, default=3, help="timed calls of hcq and of tinygrad's JIT (default 3; 0: no tinygrad timing)")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--work", default=os.path.join(ROOT, "target/zoo"), help="ONNX files, bundles and logs (default target/zoo)")
  ap.add_argument("--hcq", default=os.environ.get("HCQ_BIN", os.path.join(ROOT, "target/release/hcq")), help="the hcq binary ($HCQ_BIN)")
  ap.add_argument("--timeout", type=float, default=3600, help="seconds per step (default 3600)")
  ap.add_argument("--json", help="write the results as JSON here")
  ap.add_argument("--markdown", help="write the table here (between the zoo markers when the file has them)")
  ap.add_argument("--merge", help="a --json file of an earlier run: its rows of models this run does not run stay in the table")
  ap.add_argument("--render", metavar="JSON[,JSON]", help="only rewrite --markdown from --json files of earlier runs (a later "
                  "file's rows replace an earlier file's rows of the same model)")
  a = ap.parse_args(argv)
  if a.render:
    # the runs' rows in order; a later file's rows replace an earlier file's rows of the same model
    if not a.markdown: ap.error("--render needs --markdown")
    results, commands, last = [], [], None
    for path in a.render.split(","):
      with open(path) as f: last = json.load(f)
      models = {r["model"] for r in last["results"]}
      results = [r for r in results if r["model"] not in models] + last["results"]
      commands += [c for c in last.get("commands", [last["command"]]) if c not in commands]
    write_markdown(a.markdown, markdown(results, commands, last))
    return 0
  for what, allowed in (("models", MODELS), ("flags", list(FLAGS)), ("routes", ROUTES)):
    vals = [v for v in getattr(a, what).split(",") if v]
    bad = [v for v in vals if v not in allowed and not (what == "models" and v.startswith(TV) and len(v) > len(TV))]
    if bad or not vals: ap.error(f"--{what}: {', '.join(bad) or 'empty'} not among {', '.join(allowed)}")
    setattr(a, what, vals)
  if not os.access(a.hcq, os.X_OK): ap.error(f"--hcq {a.hcq}: not an executable (cargo build --release -p hcq-cli -p hcq-vkgsl)")
  a.hcq = os.path.abspath(a.hcq)
  a.work = os.path.abspath(a.work)
  os.makedirs(a.work, exist_ok=True)
  zoo = Zoo(a, "python tools/zoo.py " + shlex.join(argv))
  if a.merge:
    # earlier results of this table: kept for the models this run does not run (each row keeps its own measurements)
    with open(a.merge) as f: old = json.load(f)
    zoo.results = [r for r in old["results"] if r["model"] not in a.models]
    zoo.commands = [c for c in old.get("commands", [old["command"]])] + zoo.commands
  for model in a.models: zoo.run_model(model)
  wall = zoo.write()
  passed = sum(1 for r in zoo.results if r["status"] == "PASS")
  failed = len(zoo.results) - passed
  print(f"zoo: {wall:.0f} s")
  print(f"{passed} passed, {failed} failed")
  return 0 if failed == 0 else 1


if __name__ == "__main__":
  sys.exit(main())
