"""What `--qcom-jit` and `--amd-jit` share: capturing tinygrad's own TinyJit on one of its HCQ devices.

tinygrad 0.14 runs the model on the device (under `hcq virtual --`, the virtual Adreno 630 or gfx1100), TinyJit captures as
usual, and the exporter records from tinygrad's objects after the capture: every launch of the captured linear, with the
kernels and copies of each HCQ graph (`runtime/graph/hcq.py`) in graph order, resolved against the JIT's inputs exactly as
tinygrad's graph runner binds them; every buffer (a copy's source tinygrad keeps on a host device becomes a weight); and the
outputs tinygrad computed on the device as the expected bytes. The device half (tools/qcom_capture.py, tools/amd_capture.py)
records the programs and checks each launch against what tinygrad encoded. Also here: reading a pickled TinyJit
(openpilot's compile3.py) without executing it first, and adding a model's `DEV=CPU` export as a second graph.
"""
from __future__ import annotations

import importlib
import json
import os
import pickle
import pickletools
import platform
import shutil

TINYGRAD_VERSION = "0.14.0"
# classes a pickled TinyJit of tinygrad 0.14 is built from (what `TinyJit.__reduce__` and `CapturedJit.__reduce__` write)
PICKLE_JIT = ("tinygrad.engine.jit", "_TinyJit")
PICKLE_CAPTURED = ("tinygrad.engine.jit", "CapturedJit")
# fields of CapturedJit in tinygrad releases before 0.14 (pickled as the dataclass state): a sign of another version
OLD_CAPTURED_FIELDS = ("jit_cache", "input_replace", "extra_view_inputs", "expected_st_vars_dtype_device")
# devices an input of a pickled JIT may be on besides the JIT's own: host memory the JIT copies onto the device
HOST_INPUT_DEVICES = ("NPY", "CPU", "PYTHON")
# tinygrad's GPU devices a pickle can name (to say which JIT a pickle holds)
GPU_DEVICES = ("QCOM", "AMD", "NV", "CUDA", "METAL", "CL", "GPU", "WEBGPU")


class CaptureError(Exception):
  """What a JIT capture cannot record; the message says what and where."""


def check_capture_environment():
  """Refuse the tinygrad modes that make a capture other than what the JIT runs (set before tinygrad is imported)."""
  if os.environ.get("HCQ2"): raise CaptureError("HCQ2 is set: the HCQ2 command-ring mode replaces the kernel linear; unset HCQ2")
  for var in ("BEAM", "JITBEAM"):
    if os.environ.get(var, "0") not in ("", "0"):
      raise CaptureError(f"{var}={os.environ[var]} is set: beam search makes kernels timing dependent; unset it to export")


# ---------- pickles (openpilot's compile3.py) ----------

def pickle_globals(data: bytes, path: str) -> tuple[list[tuple[str, str]], set[str]]:
  """Every (module, name) a pickle imports and every string it holds, read with pickletools (nothing is executed)."""
  globs, strings, memo, recent = [], set(), {}, []
  try:
    for op, arg, _ in pickletools.genops(data):
      if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING"):
        recent.append(arg)
        strings.add(arg)
      elif op.name == "MEMOIZE": memo[len(memo)] = recent[-1] if recent else None
      elif op.name in ("BINGET", "LONG_BINGET", "GET"):
        if isinstance(memo.get(arg), str): recent.append(memo[arg])
      elif op.name == "GLOBAL":
        mod, _, name = arg.partition(" ")
        globs.append((mod, name))
      elif op.name == "STACK_GLOBAL":
        if len(recent) < 2: raise CaptureError(f"--pickle {path}: a STACK_GLOBAL without its module and name strings")
        globs.append((recent[-2], recent[-1]))
  except (ValueError, EOFError) as e: raise CaptureError(f"--pickle {path}: not a readable pickle ({e})") from None
  return globs, strings


def check_pickle(path: str, device: str | None = None, flag: str = "") -> None:
  """Refuse, before tinygrad runs, a pickle that is not a TinyJit of tinygrad 0.14.0 (read from what the pickle references),
  and, with `device`, one whose buffers name other GPU devices but not `device` (a JIT for another backend)."""
  try:
    with open(path, "rb") as f: data = f.read()
  except OSError as e: raise CaptureError(f"--pickle {path}: {e.strerror}") from None
  globs, strings = pickle_globals(data, path)
  mods = {m for m, _ in globs}
  if not any(m == "tinygrad" or m.startswith("tinygrad.") for m in mods):
    raise CaptureError(f"--pickle {path}: references no tinygrad class; not a pickled TinyJit")
  if (old := sorted(f for f in OLD_CAPTURED_FIELDS if f in strings)):
    raise CaptureError(f"--pickle {path}: made by a tinygrad before {TINYGRAD_VERSION} (its CapturedJit has the fields {old}); "
                       f"this exporter needs a pickle made by tinygrad {TINYGRAD_VERSION}")
  if PICKLE_JIT not in globs or PICKLE_CAPTURED not in globs:
    have = sorted({f"{m}.{n}" for m, n in globs if m.startswith("tinygrad.engine")})
    raise CaptureError(f"--pickle {path}: not a TinyJit pickled by tinygrad {TINYGRAD_VERSION} (it needs {PICKLE_JIT[0]}.{PICKLE_JIT[1]} "
                       f"and .{PICKLE_CAPTURED[1]}; it references {have})")
  if device is not None:
    named = sorted({s.split(":")[0] for s in strings if s.split(":")[0] in GPU_DEVICES})
    if named and device not in named:
      raise CaptureError(f"--pickle {path}: the pickled JIT runs on {', '.join(named)}, not {device}; {flag} captures a JIT made "
                         f"with DEV={device}")


def resolve_pickle_globals(path: str) -> None:
  """Every tinygrad name the pickle references must exist in the installed tinygrad 0.14.0 (after its environment is set)."""
  with open(path, "rb") as f: globs, _ = pickle_globals(f.read(), path)
  for mod, name in sorted(set(globs)):
    if not (mod == "tinygrad" or mod.startswith("tinygrad.")): continue
    try: obj = importlib.import_module(mod)
    except ImportError: obj = None
    for part in name.split("."):
      obj = getattr(obj, part, None) if obj is not None else None
    if obj is None:
      raise CaptureError(f"--pickle {path}: references {mod}.{name}, which tinygrad {TINYGRAD_VERSION} does not define: the pickle was "
                         f"made by another tinygrad version; this exporter needs a pickle made by tinygrad {TINYGRAD_VERSION}")


def load_pickle(path: str, ex):
  """The TinyJit of `path` and example inputs for it (seeded random data of each input's shape, dtype and device); inputs may be
  on the exporter's device (`ex.DEVICE`) or on a host device."""
  import numpy as np
  from tinygrad import Tensor, dtypes
  from tinygrad.engine.jit import _TinyJit
  resolve_pickle_globals(path)
  try:
    with open(path, "rb") as f: jit = pickle.load(f)
  except Exception as e: raise CaptureError(f"--pickle {path}: unpickling failed: {type(e).__name__}: {e}") from None
  if not isinstance(jit, _TinyJit) or jit.captured is None: raise CaptureError(f"--pickle {path}: holds a {type(jit).__name__}, not a captured TinyJit")
  cap = jit.captured
  rng = np.random.default_rng([ex.args.seed, 0])
  example, names = [], list(cap.expected_names)
  for k, (view, variables, dt, device) in enumerate(cap.expected_input_info):
    if variables: raise CaptureError(f"--pickle {path}: input {names[k]!r} has symbolic variables {variables}; not exportable")
    if not isinstance(device, str) or not (device.startswith(ex.DEVICE) or device.split(":")[0] in HOST_INPUT_DEVICES):
      raise CaptureError(f"--pickle {path}: input {names[k]!r} is on {device}; inputs on {ex.DEVICE} or a host device (NPY, CPU, "
                         "PYTHON) are exportable")
    shape = tuple(int(d) for d in view.shape)
    if dtypes.is_float(dt): a = rng.standard_normal(shape).astype(np.dtype(dt.fmt))
    elif dtypes.is_int(dt) or dt == dtypes.bool: a = rng.integers(0, 2 if dt == dtypes.bool else 100, shape).astype(np.dtype(dt.fmt))
    else: raise CaptureError(f"--pickle {path}: input {names[k]!r} has dtype {dt}, which has no numpy type")
    example.append(Tensor(a, device=device).realize())
  def call_jit(jit_, tensors):
    pos = [t for n, t in zip(names, tensors) if isinstance(n, int)]
    kw = {n: t for n, t in zip(names, tensors) if isinstance(n, str)}
    return jit_(*pos, **kw)
  ex.call_jit = call_jit
  ex.input_names = [n if isinstance(n, str) else f"input_{n}" for n in names]
  return jit, example


# ---------- --cpu-graph ----------

def merge_cpu_graph(out: str, cpu_dir: str) -> dict:
  """Add the CPU export in `cpu_dir` (a version 1 bundle of the same model) to the device bundle in `out` as its `cpu` graph:
  the two share the inputs and outputs (same count, dtype, size; the CPU graph takes the device graph's names), a CPU buffer
  file with the same bytes, size and dtype as a device one is not stored again (weights stored once), other files are copied
  as cpu_NAME."""
  with open(os.path.join(out, "manifest.json")) as f: m = json.load(f)
  with open(os.path.join(cpu_dir, "manifest.json")) as f: c = json.load(f)
  q = m["graphs"][0]
  label = q["name"].upper()
  for what in ("inputs", "outputs"):
    if len(q[what]) != len(c[what]): raise CaptureError(f"the CPU graph has {len(c[what])} {what}, the {label} graph {len(q[what])}")
    for a, b in zip(sorted(q[what], key=lambda t: t["index"]), sorted(c[what], key=lambda t: t["index"])):
      if (a["dtype"], a["nbytes"], a["shape"]) != (b["dtype"], b["nbytes"], b["shape"]):
        raise CaptureError(f"{what[:-1]} {a['index']}: the CPU graph's {b['dtype']}{b['shape']} differs from the {label} graph's "
                           f"{a['dtype']}{a['shape']}")
      b["name"] = a["name"]
  stored = {(b["sha256"], b["nbytes"], b["dtype"]): b["file"] for b in q["buffers"] if "file" in b}
  shared = 0
  def copy(name):
    dst = f"cpu_{name}"
    shutil.copyfile(os.path.join(cpu_dir, name), os.path.join(out, dst))
    return dst
  for b in c["buffers"]:
    if "file" not in b: continue
    if (f := stored.get((b["sha256"], b["nbytes"], b["dtype"]))) is not None:
      b["file"], shared = f, shared + 1
    else: b["file"] = copy(b["file"])
  for o in c["outputs"]:
    if "file" in o: o["file"] = copy(o["file"])
  for p in c["programs"]:
    if "source_file" in p: p["source_file"] = copy(p["source_file"])
    for obj in p["objects"].values(): obj["file"] = copy(obj["file"])
    p.pop("file", None)
  cpu = {"name": "cpu", "target": "cpu", "expected_from": c.get("expected_from", "x86_64"),
         **{k: c[k] for k in ("buffers", "inputs", "outputs", "programs", "launches")}}
  m["graphs"].append(cpu)
  for k in ("arch_levels", "calling_convention"):
    if k in c: m[k] = c[k]
  m["toolchains"] |= c.get("toolchains", {})
  m["capture"]["cpu_graph"] = {"toolchain": c.get("toolchain"), "weights_shared": shared}
  with open(os.path.join(out, "manifest.json"), "w") as f: f.write(json.dumps(m, indent=1) + "\n")
  return {"shared": shared, "cpu_buffers": len(c["buffers"])}


# ---------- the exporter ----------

def make_base_class(Exporter, ExportError):
  """The device-independent part of a JIT capture, a subclass of export_tinygrad.Exporter (passed in to avoid an import cycle).
  A subclass sets DEVICE, GRAPH (the graph's name and target), EXPECTED_FROM (the object kind that computed the expected
  outputs) and MODE, opens `self.dev`, and defines `kernel` (one kernel launch, checked against tinygrad's), `write_programs`
  (the program files), `manifest_toolchain` and `manifest_toolchains`."""

  class HcqJitExporter(Exporter):
    DEVICE = GRAPH = EXPECTED_FROM = MODE = ""

    def __init__(self, args, flags):
      super().__init__(args, None)
      from tinygrad.device import BufferSpec, TinyELF
      from tinygrad.engine.realize import get_runtime, get_graph_runtime
      self.BufferSpec, self.TinyELF, self.get_runtime, self.get_graph_runtime = BufferSpec, TinyELF, get_runtime, get_graph_runtime
      self.flags = flags
      self.graphs: list[dict] = []       # the HCQ graphs of the linear: {index, launch, kernels}
      self.graph_runners: list = []      # tinygrad's HCQGraph of each
      self.host_bases: set[int] = set()  # id() of base buffers on another device than DEVICE (copy sources: constants)

    # ---------- overrides of the CPU exporter ----------

    def make_jit(self, fn):
      """openpilot's compile3.py builds its JIT as TinyJit(prune=True): what does not depend on the inputs (weight casts, a
      constant copied in from PYTHON) runs once at capture and its result is a weight; --no-prune keeps every kernel."""
      return self.TinyJit(fn, prune=not getattr(self.args, "no_prune", False))

    def view(self, buf, where, host_ok=False):
      """A buffer view on DEVICE; with `host_ok` (a copy's source) also a buffer tinygrad keeps on another device (a constant on
      PYTHON or CPU that the JIT copies in): it becomes a buffer of the bundle whose starting bytes are its contents (a weight,
      since nothing on the device writes it)."""
      if isinstance(buf, self.MultiBuffer): raise ExportError(f"{where}: multi-device buffers are not supported")
      if not isinstance(buf.device, str) or not (buf.device.startswith(self.DEVICE) or host_ok):
        raise ExportError(f"{where}: buffer on device {buf.device}, expected {self.DEVICE} (only a copy's source may be on another device)")
      if not buf.device.startswith(self.DEVICE): self.host_bases.add(id(buf.base))
      base = buf.base
      offset = buf.offset if buf._base is not None else 0
      if offset < 0 or offset + buf.nbytes > base.nbytes:
        raise ExportError(f"{where}: view [{offset}, {offset + buf.nbytes}) lies outside its base of {base.nbytes} bytes")
      bid = self.buffer_id(base)
      if buf._base is not None: self.viewed.add(bid)
      return {"buffer": bid, "offset": offset, "nbytes": buf.nbytes, "dtype": self.dtype_name(buf.dtype)}

    def input_view(self, buf, where):
      """A JIT input on DEVICE, or on a host device (openpilot's compile3.py passes every input but the camera frames on NPY;
      the JIT's first calls copy them in): the bundle's input is then that buffer, and the copy a launch of the bundle. A
      kernel that reads a host buffer directly is still refused (see `view`)."""
      return self.view(buf, where, host_ok=True)

    def sync(self):
      if hasattr(self.dev, "synchronize"): self.dev.synchronize()

    def alloc_kernargs(self, size):
      a = self.dev.allocator
      return a._alloc(size, self.BufferSpec(cpu_access=True)) if hasattr(a, "_alloc") else a.alloc(size)

    def base_bytes(self, bid):
      self.sync()
      return bytes(self.bases[bid].as_memoryview())  # a copy through a PYTHON buffer, for a host base too

    def capture_launches(self, linear, input_uops, var_vals):
      Ops, out = self.Ops, []
      # once: the last capture call has finished on the device, so the HCQ graph's kernarg blocks hold its values (nothing is
      # submitted while the launches are recorded: a sync per launch cost ~0.03 s each on the virtual device)
      self.sync()
      for i, call in enumerate(linear.src):
        ast = call.src[0]
        if ast.op is Ops.CUSTOM_FUNCTION and ast.arg == "graph":
          runner = self.get_graph_runtime(ast)
          if runner is None: raise ExportError(f"launch {i}: the HCQ graph of the captured linear was never built")
          if type(runner).__name__ != "HCQGraph": raise ExportError(f"launch {i}: graph runner {type(runner).__name__}, expected HCQGraph")
          # the graph's items resolve their PARAMs against the JIT's own inputs, as tinygrad's exec_graph hands them to the
          # graph runner (GraphRunner: resolve_params(item, input_uops)), not against the graph call's argument list: the two
          # orders differ once the graph reads its inputs in another order than the JIT takes them
          outer = tuple(input_uops)
          g = len(self.graphs)
          inner = ast.src[0].src
          if len(inner) != len(runner.calls): raise ExportError(f"launch {i}: HCQ graph has {len(runner.calls)} calls for {len(inner)} items")
          for j, c in enumerate(inner):
            if runner.calls[j][1] is not c.src[0]: raise ExportError(f"graph {g} item {j}: the graph runner's call order differs")
            where = f"graph {g} item {j}"
            # the buffers this export binds must be the ones tinygrad's graph runner binds: its own (by identity), and at each
            # input position (GraphRunner.uop_replace: position -> JIT input) the JIT input of this call
            mine, bound, replaced = [u.buffer for u in self.resolve_params(c, outer)], runner.calls[j][2], dict(runner.uop_replace[j])
            want = [input_uops[replaced[p]].buffer if p in replaced else b for p, b in enumerate(bound)]
            if len(mine) != len(want) or any(a is not b for a, b in zip(mine, want)):
              bad = next((p for p, (a, b) in enumerate(zip(mine, want)) if a is not b), min(len(mine), len(want)))
              raise ExportError(f"{where}: argument {bad} resolves to another buffer than tinygrad's HCQ graph binds there")
            if c.src[0].op is Ops.PROGRAM:
              out.append(self.kernel(where, c, outer, var_vals, runner.runtimes[j], runner.ji_args[j], g, j))
            elif c.src[0].op is Ops.COPY: out.append(self.copy(where, c, outer) | {"graph": g, "graph_index": j})
            else: raise ExportError(f"{where}: unsupported call {c.src[0].op} in the HCQ graph")
          self.graphs.append({"index": g, "launch": i, "kernels": len(inner)})
          self.graph_runners.append(runner)
        elif ast.op is Ops.PROGRAM:
          out.append(self.kernel(f"launch {i}", call, input_uops, var_vals, None, None, None, None))
        elif ast.op is Ops.COPY: out.append(self.copy(f"launch {i}", call, input_uops))
        else: raise ExportError(f"launch {i}: unsupported call {ast.op} {ast.arg!r} (only kernels, copies and tinygrad's HCQ graph)")
      return out

    def copy(self, where, call, inputs):
      resolved = self.resolve_params(call, inputs)
      dst = self.view(resolved[0].buffer, f"{where} copy dst")
      src = self.view(resolved[1].buffer, f"{where} copy src", host_ok=True)
      if dst["nbytes"] != src["nbytes"]: raise ExportError(f"{where}: copy of {src['nbytes']} into {dst['nbytes']} bytes")
      return {"kind": "copy", "dst": dst, "src": src}

    def kernel_sizes(self, info, var_vals, where):
      """(global size, local size, vals) of a launch; a kernel without a fixed local size is refused (tinygrad would time it)."""
      global_size, local_size = info.launch_dims(var_vals)
      if local_size is None: raise ExportError(f"{where}: the kernel has no local size (tinygrad picks it by timing); not exportable")
      return self.int_dims(global_size, where), self.int_dims(local_size, where), [int(v) for v in info.vals(var_vals)]

    # ---------- writing ----------

    def write(self, outdir, model_name, buffers, inputs, outputs, launches, expected):
      np = self.np
      os.makedirs(outdir, exist_ok=True)
      if os.listdir(outdir): raise ExportError(f"output directory {outdir} is not empty")
      def put(name, data: bytes):
        with open(os.path.join(outdir, name), "wb") as f: f.write(data)
      self.write_programs(put)
      for b in buffers:
        if "file" in b: put(b["file"], self.start[b["id"]])
      for o, data in zip(outputs, expected): put(o["file"], data)
      names = getattr(self, "input_names", None) or [f"input_{i}" for i in range(len(inputs))]
      for i, name in zip(inputs, names): i["name"] = str(name)
      for o in outputs: o["name"] = f"output_{o['index']}"
      graph = {"name": self.GRAPH, "target": self.GRAPH, "expected_from": self.EXPECTED_FROM,
               "buffers": buffers, "inputs": inputs, "outputs": outputs, "programs": self.programs, "launches": launches}
      manifest = {
        "format": "tg-cpu-bundle", "version": 2, "model": model_name, "tinygrad_version": self.tinygrad_version,
        "numpy_version": np.__version__, "python": platform.python_version(),
        "toolchain": self.manifest_toolchain(), "arch_levels": {}, "portable": True, "expected_from": self.EXPECTED_FROM,
        "toolchains": self.manifest_toolchains(), "capture": {"mode": self.MODE, "graphs": self.graphs}, "graphs": [graph],
      }
      if getattr(self, "var_vals", None): manifest["capture"]["variables"] = self.var_vals  # the bound Variables' values
      put("manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
      return manifest

  return HcqJitExporter


__all__ = ["CaptureError", "check_capture_environment", "check_pickle", "load_pickle", "make_base_class", "merge_cpu_graph"]
