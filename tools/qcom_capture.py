"""`tools/export_tinygrad.py --qcom-jit`: capture what tinygrad itself runs on a QCOM device.

The model is run by tinygrad 0.14's own QCOM backend (IR3 renderer, Mesa's ir3 compiler from tinymesa) on a KGSL device: under
`hcq vkgsl -- python tools/export_tinygrad.py --model M --qcom-jit -o OUT` that is the virtual Adreno 630 of libhcq_vkgsl.so. The
user's flags are taken from the environment (openpilot's `FLOAT16=1 IMAGE=1 NOLOCALS=1 JIT_BATCH_SIZE=0` when unset). TinyJit
captures as usual; the bundle then records, from tinygrad's objects after the capture:

- every IR3 program tinygrad compiled (the `QCOMProgram`'s TinyELF lib, written in the blob layout tools/adreno_a630.py writes:
  host pointers inside the two Mesa structs zeroed), with the `programs[].adreno` metadata taken from that `QCOMProgram`;
- every launch of the captured linear, with the kernels of its HCQ graph (`runtime/graph/hcq.py`) in graph order (`graph`,
  `graph_index`), the buffer views tinygrad bound and the launch sizes it dispatches;
- the kernel-argument block layout: buffer addresses and values (`consts`), textures, IBOs and samplers (`descriptors`, with
  tinygrad's own 16 descriptor dwords read back from the graph's kernel-argument buffer, the two address dwords written as 0;
  see IMAGE-SCHEMA: `descriptors.images`, `descriptors.sampler_words`), checked against a block that tinygrad fills again;
- the program registers (`regs`) from one dispatch tinygrad encodes with `QCOMComputeQueue.exec` (never submitted);
- every buffer, each image binding with its view's shape, element type and pitch (`launches[].args[j].image`: tinygrad binds
  one buffer under several image views), and the outputs tinygrad computed
  on the device as the expected bytes (`expected_from: adreno_a630`: a runner of these objects must match them bit for bit).

What cannot be captured is refused with the place: a kernel without a fixed local size, a multi-device buffer, a custom
function other than tinygrad's HCQ graph, tinygrad's OpenCL renderer (QCOMCLRenderer needs Qualcomm's compiler).
"""
from __future__ import annotations

import importlib
import os
import pickle
import pickletools
import platform

from adreno_a630 import REGS, THREADSIZE, INVALID_REGID, AdrenoError, AdrenoExporter, regid_name, sha256

# openpilot's flags for its QCOM models (selfdrive/modeld/SConscript, tinygrad's comma benchmark), used when the environment
# does not set them
QCOM_FLAGS = {"FLOAT16": "1", "IMAGE": "1", "NOLOCALS": "1", "JIT_BATCH_SIZE": "0"}
# further flags recorded when set (they change what tinygrad schedules)
RECORDED_FLAGS = ("OPENPILOT_HACKS", "NO_MEMORY_PLANNER", "IMAGE_PITCH_ALIGNMENT")
DESC_DWORDS = 16       # one texture / IBO descriptor
DESC_BYTES = 0x40
SAMPLER_DWORDS = 4
ADDR_DWORDS = (4, 5)   # the image address inside a descriptor (lo, hi), filled by the device at load
IMAGE_BASE_ALIGN = 64  # an image view's byte offset in its buffer must be a multiple (the a6xx texture base's alignment)


class CaptureError(Exception):
  """What --qcom-jit cannot capture; the message says what and where."""


def setup_qcom_environment():
  """tinygrad's environment for a QCOM capture, set before tinygrad is imported; returns the flags recorded in the manifest."""
  if os.environ.get("HCQ2"): raise CaptureError("HCQ2 is set: the HCQ2 command-ring mode replaces the kernel linear; unset HCQ2")
  for var in ("BEAM", "JITBEAM"):
    if os.environ.get(var, "0") not in ("", "0"):
      raise CaptureError(f"{var}={os.environ[var]} is set: beam search makes kernels timing dependent; unset it to export")
  dev = os.environ.get("DEV", "QCOM")
  if dev not in ("QCOM", "QCOM:IR3"):
    raise CaptureError(f"DEV={dev}: --qcom-jit captures tinygrad's QCOM device with the IR3 renderer (DEV=QCOM or DEV=QCOM:IR3)")
  os.environ["DEV"] = "QCOM:IR3"
  for k, v in QCOM_FLAGS.items(): os.environ.setdefault(k, v)
  os.environ["CCACHE"] = "0"
  os.environ["PARALLEL"] = "0"
  flags = {k: os.environ[k] for k in QCOM_FLAGS}
  flags |= {k: os.environ[k] for k in RECORDED_FLAGS if k in os.environ}
  return flags


def open_device():
  """tinygrad's QCOM device; a clear error when there is no KGSL node (not run under `hcq vkgsl`)."""
  from tinygrad.device import Device
  try: dev = Device["QCOM"]
  except Exception as e:
    raise CaptureError(f"cannot open tinygrad's QCOM device (/dev/kgsl-3d0): {type(e).__name__}: {e}; run the exporter under the "
                       "virtual device: hcq vkgsl -- python tools/export_tinygrad.py --qcom-jit ...") from None
  from tinygrad.renderer.nir import IR3Renderer
  if not isinstance(dev.renderer, IR3Renderer):
    raise CaptureError(f"tinygrad's QCOM renderer is {type(dev.renderer).__name__}; only the IR3 path (IR3Renderer + Mesa ir3) is "
                       "captured (QCOMCLRenderer needs Qualcomm's OpenCL compiler)")
  return dev


def zero_address(words: list[int]) -> list[int]:
  out = list(words)
  for i in ADDR_DWORDS: out[i] = 0
  return out


TINYGRAD_VERSION = "0.14.0"
# classes a pickled TinyJit of tinygrad 0.14 is built from (what `TinyJit.__reduce__` and `CapturedJit.__reduce__` write)
PICKLE_JIT = ("tinygrad.engine.jit", "_TinyJit")
PICKLE_CAPTURED = ("tinygrad.engine.jit", "CapturedJit")
# fields of CapturedJit in tinygrad releases before 0.14 (pickled as the dataclass state): a sign of another version
OLD_CAPTURED_FIELDS = ("jit_cache", "input_replace", "extra_view_inputs", "expected_st_vars_dtype_device")


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


def check_pickle(path: str) -> None:
  """Refuse, before tinygrad runs, a pickle that is not a TinyJit of tinygrad 0.14.0 (read from what the pickle references)."""
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


# devices an input of a pickled JIT may be on besides QCOM: host memory the JIT copies onto the device in its first launches
HOST_INPUT_DEVICES = ("NPY", "CPU", "PYTHON")


def load_pickle(path: str, ex):
  """The TinyJit of `path` and example inputs for it (seeded random data of each input's shape, dtype and device)."""
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
    if not isinstance(device, str) or not (device.startswith("QCOM") or device.split(":")[0] in HOST_INPUT_DEVICES):
      raise CaptureError(f"--pickle {path}: input {names[k]!r} is on {device}; inputs on QCOM or a host device (NPY, CPU, "
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


def merge_cpu_graph(out: str, cpu_dir: str) -> dict:
  """Add the CPU export in `cpu_dir` (a version 1 bundle of the same model) to the QCOM bundle in `out` as its `cpu` graph: the
  two share the inputs and outputs (same count, dtype, size; the CPU graph takes the QCOM graph's names), a CPU buffer file with
  the same bytes, size and dtype as a QCOM one is not stored again (weights stored once), other files are copied as cpu_NAME."""
  import json, shutil
  with open(os.path.join(out, "manifest.json")) as f: m = json.load(f)
  with open(os.path.join(cpu_dir, "manifest.json")) as f: c = json.load(f)
  q = m["graphs"][0]
  for what in ("inputs", "outputs"):
    if len(q[what]) != len(c[what]): raise CaptureError(f"the CPU graph has {len(c[what])} {what}, the QCOM graph {len(q[what])}")
    for a, b in zip(sorted(q[what], key=lambda t: t["index"]), sorted(c[what], key=lambda t: t["index"])):
      if (a["dtype"], a["nbytes"], a["shape"]) != (b["dtype"], b["nbytes"], b["shape"]):
        raise CaptureError(f"{what[:-1]} {a['index']}: the CPU graph's {b['dtype']}{b['shape']} differs from the QCOM graph's "
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


def make_exporter_class(Exporter, ExportError):
  """The QCOM exporter, a subclass of export_tinygrad.Exporter (imported there; passed in to avoid an import cycle)."""

  class QcomExporter(Exporter):
    DEVICE = "QCOM"

    def __init__(self, args, flags, dev=None):
      """`dev`: tinygrad's QCOM device (opened here when None); tools/test_qcom_images.py passes the host-memory stand-in of
      tools/adreno_a630.py to check the image metadata of kernels no device executes yet."""
      super().__init__(args, None)
      from tinygrad.runtime import ops_qcom
      from tinygrad.runtime.support.hcq import HCQBuffer
      from tinygrad.device import BufferSpec, TinyELF
      from tinygrad.helpers import is_image_shape
      from tinygrad.engine.realize import get_runtime, get_graph_runtime
      self.qcom, self.HCQBuffer, self.BufferSpec, self.TinyELF = ops_qcom, HCQBuffer, BufferSpec, TinyELF
      self.is_image_shape, self.get_runtime, self.get_graph_runtime = is_image_shape, get_runtime, get_graph_runtime
      self.flags = flags
      self.dev = open_device() if dev is None else dev
      try: self.ad = AdrenoExporter()  # blob layout, disassembly, packet decoding and toolchain facts shared with --adreno
      except AdrenoError as e: raise ExportError(f"--qcom-jit: {e}") from None
      self.gpu: list[dict] = []        # per program id: {entry, blob, asm, q}
      self.graphs: list[dict] = []     # the HCQ graphs of the linear: {index, kernels}
      self.host_bases: set[int] = set()  # id() of base buffers on another device than QCOM (copy sources: constants)

    # ---------- overrides of the CPU exporter ----------

    def make_jit(self, fn):
      """openpilot's compile3.py builds its JIT as TinyJit(prune=True): what does not depend on the inputs (weight casts, a
      constant copied in from PYTHON) runs once at capture and its result is a weight; --no-prune keeps every kernel."""
      return self.TinyJit(fn, prune=not getattr(self.args, "no_prune", False))

    def view(self, buf, where, host_ok=False):
      """A QCOM buffer view; with `host_ok` (a copy's source) also a buffer tinygrad keeps on another device (a constant on
      PYTHON or CPU that the JIT copies in): it becomes a buffer of the bundle whose starting bytes are its contents (a weight,
      since nothing on the device writes it)."""
      if isinstance(buf, self.MultiBuffer): raise ExportError(f"{where}: multi-device buffers are not supported")
      if not isinstance(buf.device, str) or not (buf.device.startswith("QCOM") or host_ok):
        raise ExportError(f"{where}: buffer on device {buf.device}, expected QCOM (only a copy's source may be on another device)")
      if not buf.device.startswith("QCOM"): self.host_bases.add(id(buf.base))
      base = buf.base
      offset = buf.offset if buf._base is not None else 0
      if offset < 0 or offset + buf.nbytes > base.nbytes:
        raise ExportError(f"{where}: view [{offset}, {offset + buf.nbytes}) lies outside its base of {base.nbytes} bytes")
      bid = self.buffer_id(base)
      if buf._base is not None: self.viewed.add(bid)
      return {"buffer": bid, "offset": offset, "nbytes": buf.nbytes, "dtype": self.dtype_name(buf.dtype)}

    def input_view(self, buf, where):
      """A JIT input on QCOM, or on a host device (openpilot's compile3.py passes every input but the camera frames on NPY;
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
        elif ast.op is Ops.PROGRAM:
          out.append(self.kernel(f"launch {i}", call, input_uops, var_vals, None, None, None, None))
        elif ast.op is Ops.COPY: out.append(self.copy(f"launch {i}", call, input_uops))
        else: raise ExportError(f"launch {i}: unsupported call {ast.op} {ast.arg!r} (only kernels, copies and tinygrad's HCQ graph)")
      return out

    # ---------- launches ----------

    def copy(self, where, call, inputs):
      resolved = self.resolve_params(call, inputs)
      dst = self.view(resolved[0].buffer, f"{where} copy dst")
      src = self.view(resolved[1].buffer, f"{where} copy src", host_ok=True)
      if dst["nbytes"] != src["nbytes"]: raise ExportError(f"{where}: copy of {src['nbytes']} into {dst['nbytes']} bytes")
      return {"kind": "copy", "dst": dst, "src": src}

    def kernel(self, where, call, inputs, var_vals, runtime, args_state, graph, graph_index):
      ast = call.src[0]
      info = ast.arg
      where = f"{where} ({info.function_name})"
      resolved = self.resolve_params(call, inputs)
      bufs = [resolved[g].buffer for g in info.globals]
      global_size, local_size = info.launch_dims(var_vals)
      if local_size is None: raise ExportError(f"{where}: the kernel has no local size (tinygrad picks it by timing); not exportable")
      gsz, lsz = self.int_dims(global_size, where), self.int_dims(local_size, where)
      vals = [int(v) for v in info.vals(var_vals)]
      if info.runtimevars: raise ExportError(f"{where}: runtime variables {sorted(info.runtimevars)} are not exportable on QCOM")
      q = runtime if runtime is not None else self.get_runtime(bufs[0].device, ast)
      if type(q).__name__ != "QCOMProgram" or not q.NIR: raise ExportError(f"{where}: not a QCOMProgram of the IR3 path")
      pid = self.program(ast, q, where)
      gp = self.gpu[pid]
      # one view per buffer parameter: the same buffer at each parameter tinygrad passes it to
      args = [self.view(bufs[g], f"{where} arg {k} (tinygrad slot {g})") for k, g in enumerate(gp["params"])]
      for s in info.outs + info.ins:
        if s not in gp["params"]: raise ExportError(f"{where}: outs/ins refer to slot {s} which is not a buffer argument")
      outs = [k for k, g in enumerate(gp["params"]) if g in info.outs]
      ins = [k for k, g in enumerate(gp["params"]) if g in info.ins]
      hcq_bufs = tuple(b._buf for b in bufs)
      if gp["entry"]["regs"] is None: self.first_launch(gp, hcq_bufs, vals, gsz, lsz, where)
      block = self.kernarg_block(q, args_state, hcq_bufs, vals, gsz, lsz, where)
      self.check_descriptors(gp, block, where)
      self.note_images(gp, args, where)
      entry = {"kind": "kernel", "program": pid, "name": info.function_name, "global_size": gsz, "local_size": lsz, "args": args,
               "vals": vals, "core_id_arg": None, "outs": outs, "ins": ins, "gpu_global_size": gsz, "gpu_local_size": lsz,
               "gpu_vals": vals}
      if graph is not None: entry |= {"graph": graph, "graph_index": graph_index}
      return entry

    def kernarg_block(self, q, args_state, hcq_bufs, vals, gsz, lsz, where) -> bytes:
      """The kernel-argument block tinygrad runs this launch with: read back from the HCQ graph's buffer (values of the last
      call), or, for a launch outside a graph, filled by tinygrad for the launch's buffers."""
      from tinygrad.helpers import to_mv
      if args_state is None:
        kern = self.alloc_kernargs(max(q.kernargs_alloc_size, 0x100))
        args_state = q.fill_kernargs(hcq_bufs, tuple(vals), kernargs=kern)
        self.qcom.QCOMComputeQueue(self.dev).exec(q, args_state, tuple(gsz), tuple(lsz))
      return bytes(to_mv(int(args_state.buf.va_addr), q.kernargs_alloc_size))

    # ---------- programs ----------

    def program(self, ast, q, where) -> int:
      elf = ast.to_elf()
      lib, info = elf.lib, ast.arg
      # tinygrad's signature lists every buffer PARAM of the program (one buffer may be passed in several of them, e.g. as two
      # image views or two element types: the same `slot` twice), then the integer variables. The bundle's signature numbers
      # every parameter 0..n-1 in that order; `params` keeps, per bundle buffer parameter, tinygrad's slot (the index into the
      # launch's buffers, ProgramInfo.globals), so a launch binds the same buffer view at each parameter tinygrad passes it to.
      raw, n_glob, n_vars = list(elf.signature), len(info.globals), len(info.vars)
      n_buf = len(raw) - n_vars
      params = [slot for _, slot, _, _ in raw[:n_buf]]
      if list(info.globals) != list(range(n_glob)):
        raise ExportError(f"{where}: buffer slots {list(info.globals)} are not 0..{n_glob - 1}")
      if n_buf < n_glob or sorted(set(params)) != list(range(n_glob)):
        raise ExportError(f"{where}: buffer parameter slots {params} do not cover the {n_glob} buffers 0..{n_glob - 1} exactly")
      if n_buf != n_glob and n_vars:
        raise ExportError(f"{where}: a buffer is passed in several parameters ({params}) of a kernel with integer values "
                          f"{[name for name, *_ in raw[n_buf:]]}: tinygrad's QCOMArgsState lays the values out after {n_glob} "
                          "signature entries, not after the buffers; not exportable")
      signature = [{"name": name, "slot": j, "dtype": self.dtype_name(dt), "shape": list(shape)} for j, (name, _, dt, shape) in enumerate(raw)]
      key = (lib, elf.name, repr(signature), tuple(params))
      if (pid := self.program_keys.get(key)) is not None: return pid
      for s in signature[n_buf:]:
        if s["dtype"] != "int32": raise ExportError(f"{where}: scalar argument {s['name']} has dtype {s['dtype']}, expected int32")
      pid = self.program_keys[key] = len(self.programs)
      try: blob, layout = self.ad.blob(lib, where)
      except AdrenoError as e: raise ExportError(str(e)) from None
      _, cs, _, image = self.ad.IR3Compiler.unpack_lib(lib)
      v = self.ad.IR3Compiler.unpack_lib(lib)[0]
      stem = f"prog_{pid:03d}_{elf.name}"
      images, m = [], 0
      for s in signature[:n_buf]:
        if not self.is_image_shape(tuple(s["shape"])): continue
        if s["dtype"] not in ("float16", "float32"): raise ExportError(f"{where}: image parameter {s['name']} of dtype {s['dtype']}")
        h, w, _ = s["shape"]
        itemsize = 2 if s["dtype"] == "float16" else 4
        s["image"] = True
        if m < q.ibo_cnt: tex, ibo = None, m
        else:
          texs = [i for i in range(q.tex_cnt) if q.ibo_cnt + q.tex_to_image[i] == m]
          if len(texs) != 1: raise ExportError(f"{where}: image parameter {s['name']} maps to textures {texs}")
          tex, ibo = texs[0], None
        images.append({"slot": s["slot"], "texture": tex, "ibo": ibo, "width": w, "height": h, "format": s["dtype"],
                       "pitch": w * 4 * itemsize, "tex_words": None, "ibo_words": None})
        m += 1
      if m != q.tex_cnt + q.ibo_cnt:
        raise ExportError(f"{where}: {m} image parameters for {q.tex_cnt} textures and {q.ibo_cnt} IBOs")
      allocs = {}
      mesa = self.ad.mesa
      for kind, name in sorted(mesa.enum_ir3_const_alloc_type.items()):
        if kind >= mesa.IR3_CONST_ALLOC_MAX: continue
        a = cs.allocs.consts[kind]
        if a.size_vec4: allocs[name.removeprefix("IR3_CONST_ALLOC_").lower()] = {"offset_vec4": a.offset_vec4, "size_vec4": a.size_vec4}
      entry = {
        "arch": "a630", "target": self.ad.target, "function_name": info.function_name, "display_name": self.ansistrip(info.name),
        "signature": signature, "vars": [s["name"] for s in signature[n_buf:]],
        "blob": layout, "image_size": q.image_size, "instr_size_128": -(-q.image_size // 128), "prg_offset": q.prg_offset,
        "instrs_count": v.info.instrs_count, "threadsize": THREADSIZE, "fregs": q.fregs, "hregs": q.hregs, "branchstack": q.brnchstck,
        "pvtmem": q.pvtmem, "shmem": q.shmem, "pvtmem_size_per_item": q.pvtmem_size_per_item, "pvtmem_size_total": q.pvtmem_size_total,
        "hw_stack_offset": q.hw_stack_offset, "stack_bytes": q.hw_stack_offset * 4, "shared_size": q.shared_size,
        "max_threads": q.max_threads, "wgid": q.wgid, "wgid_reg": regid_name(q.wgid), "lid": q.lid, "lid_reg": regid_name(q.lid),
        "wgsz": q.wgsz,
        "consts": {"kernarg_alloc_size": q.kernargs_alloc_size, "load_vec4": None, "buf_off": q.buf_off, "args": [], "vals": [],
                   "immediates": [{"offset": off, "size": size, "value": val} for val, off, size in q.consts_info],
                   "local_size_offset": None if q.wgsz == INVALID_REGID else q.wgsz * 4,
                   "max_const_offset_vec4": cs.allocs.max_const_offset_vec4, "allocs": allocs},
        "descriptors": {"tex_cnt": q.tex_cnt, "ibo_cnt": q.ibo_cnt, "samp_cnt": q.samp_cnt, "tex_off": q.tex_off, "ibo_off": q.ibo_off,
                        "samp_off": q.samp_off, "tex_to_image": list(q.tex_to_image[:q.tex_cnt]), "samplers": list(q.samplers),
                        "images": images, "sampler_words": [list(q.samplers[i:i + SAMPLER_DWORDS])
                                                            for i in range(0, len(q.samplers), SAMPLER_DWORDS)]},
        "regs": None, "disasm_file": f"{stem}.a630.asm",
      }
      self.programs.append({"id": pid, "name": elf.name, "display_name": self.ansistrip(info.name), "symbol": elf.name,
                            "signature": [{k: s[k] for k in ("name", "slot", "dtype", "shape")} for s in signature],
                            "n_buffer_args": n_buf, "vars": [s["name"] for s in signature[n_buf:]], "core_id_arg": None, "objects": {}})
      self.gpu.append({"entry": entry, "blob": blob, "asm": self.ad.disassembly(image, self.ad.renderer.compiler.dev_id.gpu_id),
                       "q": q, "n_buf": n_buf, "params": params, "sig_dt": [dt for _, _, dt, _ in elf.signature]})
      return pid

    def first_launch(self, gp, hcq_bufs, vals, gsz, lsz, where):
      """`regs`, `load_vec4` and the kernarg layout from one dispatch tinygrad encodes (not submitted) for this launch; the layout
      rebuilt from the metadata must reproduce tinygrad's block byte for byte (descriptor address dwords included)."""
      q, entry = gp["q"], gp["entry"]
      consts, n_buf = entry["consts"], gp["n_buf"]
      sig = entry["signature"]
      pbufs = [hcq_bufs[g] for g in gp["params"]]  # the buffer behind each bundle parameter
      total = lsz[0] * lsz[1] * lsz[2]
      if total > q.max_threads:
        raise ExportError(f"{where}: work-group of {total} threads exceeds max_threads {q.max_threads} (tinygrad refuses this launch)")
      kern = self.alloc_kernargs(max(q.kernargs_alloc_size, 0x100))
      queue = self.qcom.QCOMComputeQueue(self.dev)
      try:
        state = q.fill_kernargs(hcq_bufs, tuple(vals), kernargs=kern)
        queue.exec(q, state, tuple(gsz), tuple(lsz))
      except Exception as e: raise ExportError(f"{where}: tinygrad's QCOM dispatch encoding failed: {type(e).__name__}: {e}") from None
      from tinygrad.helpers import to_mv
      tinygrad_block = bytes(to_mv(int(kern.va_addr), q.kernargs_alloc_size))
      try: regs, load_vec4 = self.ad.decode(list(queue._q), where)
      except AdrenoError as e: raise ExportError(str(e)) from None
      entry["regs"] = {name: {"reg": self.ad.reg_ids[name], "value": regs[self.ad.reg_ids[name]]} for name in REGS if self.ad.reg_ids[name] in regs}
      missing = [name for name in REGS if name not in entry["regs"]]
      if missing: raise ExportError(f"{where}: tinygrad's dispatch did not write {missing}")
      consts["load_vec4"] = load_vec4
      plain = [k for k, s in enumerate(sig[:n_buf]) if not s.get("image")]
      consts["args"] = [{"arg": k, "slot": sig[k]["slot"], "offset": q.buf_off + 8 * n, "size": 8, "kind": "u64 buffer address"}
                        for n, k in enumerate(plain)]
      vsig = [(s["name"], s["slot"], dt, tuple(s["shape"])) for s, dt in zip(sig[n_buf:], gp["sig_dt"][n_buf:])]
      consts["vals"] = [{"name": s["name"], "offset": q.buf_off + off, "size": dt.itemsize, "dtype": self.ad.np_dtype(dt)}
                        for s, (off, dt) in zip(sig[n_buf:], self.TinyELF.iter_sig(vsig, len(plain) * 8))]
      block = bytearray(q.kernargs_alloc_size)
      def put(off, size, value, what):
        if off < 0 or off + size > len(block): raise ExportError(f"{where}: {what} at [{off}, {off + size}) lies outside the kernarg block")
        block[off:off + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
      for im in consts["immediates"]: put(im["offset"], im["size"], im["value"], "an immediate")
      for a in consts["args"]: put(a["offset"], 8, pbufs[a["arg"]].va_addr, f"argument {a['slot']}")
      for v, val in zip(consts["vals"], vals): put(v["offset"], v["size"], val, f"value {v['name']}")
      if consts["local_size_offset"] is not None:
        for i, l in enumerate(lsz): put(consts["local_size_offset"] + 4 * i, 4, l, "the local size")
      d = entry["descriptors"]
      for n, words in enumerate(d["sampler_words"]):
        for k, w in enumerate(words): put(d["samp_off"] + 16 * n + 4 * k, 4, w, f"sampler {n}")
      # descriptors: tinygrad's words with the address dwords (taken from this block), checked below against the layout
      for im in d["images"]:
        for kind, idx, off in (("tex", im["texture"], d["tex_off"]), ("ibo", im["ibo"], d["ibo_off"])):
          if idx is None: continue
          base = off + DESC_BYTES * idx
          words = [int.from_bytes(tinygrad_block[base + 4 * k:base + 4 * k + 4], "little") for k in range(DESC_DWORDS)]
          addr = pbufs[im["slot"]].va_addr
          if (words[4], words[5]) != (addr & 0xffffffff, addr >> 32):
            raise ExportError(f"{where}: {kind} descriptor {idx} does not hold the address of image slot {im['slot']} in dwords 4-5")
          im[f"{kind}_words"] = zero_address(words)
          for k, w in enumerate(words): put(base + 4 * k, 4, w, f"{kind} descriptor {idx}")
      if bytes(block) != tinygrad_block:
        diff = next(i for i in range(len(block)) if block[i] != tinygrad_block[i])
        raise ExportError(f"{where}: the kernarg layout does not reproduce tinygrad's block (first difference at byte {diff})")

    def check_descriptors(self, gp, block, where):
      """The descriptors of this launch's kernarg block (the graph's own) equal the program's recorded words, address aside."""
      d = gp["entry"]["descriptors"]
      for im in d["images"]:
        for kind, idx, off in (("tex", im["texture"], d["tex_off"]), ("ibo", im["ibo"], d["ibo_off"])):
          if idx is None: continue
          base = off + DESC_BYTES * idx
          words = zero_address([int.from_bytes(block[base + 4 * k:base + 4 * k + 4], "little") for k in range(DESC_DWORDS)])
          if words != im[f"{kind}_words"]:
            raise ExportError(f"{where}: the HCQ graph's {kind} descriptor {idx} differs from the one tinygrad fills for the program")
      for n, words in enumerate(d["sampler_words"]):
        got = [int.from_bytes(block[d["samp_off"] + 16 * n + 4 * k:d["samp_off"] + 16 * n + 4 * k + 4], "little") for k in range(4)]
        if got != words: raise ExportError(f"{where}: the HCQ graph's sampler {n} differs from the program's")

    def note_images(self, gp, args, where):
      """Every image binding of this launch as the view's own `image` (the bundle's `launches[].args[j].image`): tinygrad binds
      one buffer under several image views (other widths, heights, pitches) in different launches, and in one launch when the
      buffer is passed to several parameters, so the facts belong to the binding, not to the buffer."""
      for im in gp["entry"]["descriptors"]["images"]:
        a = args[im["slot"]]
        need = im["height"] * im["pitch"]
        what = (f"{where}: arg {im['slot']} (buffer {a['buffer']}, offset {a['offset']}) bound as a {im['width']}x{im['height']} "
                f"{im['format']} image (pitch {im['pitch']})")
        if a["nbytes"] < need:
          raise ExportError(f"{what} needs {need} bytes, its view has {a['nbytes']} (the launch's buffers: "
                            f"{[(b['buffer'], b['offset'], b['nbytes']) for b in args]})")
        if a["offset"] % IMAGE_BASE_ALIGN:
          raise ExportError(f"{what}: the view's offset is not {IMAGE_BASE_ALIGN}-byte aligned (an a6xx texture base must be)")
        itemsize = {"float16": 2, "float32": 4}[im["format"]]
        if a["dtype"] == "bfloat16" or self.np.dtype(a["dtype"]).itemsize != itemsize:
          raise ExportError(f"{what}: the view's dtype {a['dtype']} is not {itemsize}-byte")
        a["dtype"] = im["format"]
        a["image"] = {"width": im["width"], "height": im["height"], "pitch": im["pitch"], "format": im["format"]}

    # ---------- writing ----------

    def write(self, outdir, model_name, buffers, inputs, outputs, launches, expected):
      np = self.np
      os.makedirs(outdir, exist_ok=True)
      if os.listdir(outdir): raise ExportError(f"output directory {outdir} is not empty")
      def put(name, data: bytes):
        with open(os.path.join(outdir, name), "wb") as f: f.write(data)
      for p, gp in zip(self.programs, self.gpu):
        stem = f"prog_{p['id']:03d}_{p['name']}"
        if gp["entry"]["regs"] is None: raise ExportError(f"program {p['id']}: no launch of it reached the metadata pass")
        p["objects"]["adreno_a630"] = {"file": f"{stem}.a630.bin", "sha256": sha256(gp["blob"]), "nbytes": len(gp["blob"])}
        p["adreno"] = gp["entry"]
        put(p["objects"]["adreno_a630"]["file"], gp["blob"])
        put(gp["entry"]["disasm_file"], gp["asm"])
      for b in buffers:
        if "file" in b: put(b["file"], self.start[b["id"]])
      for o, data in zip(outputs, expected): put(o["file"], data)
      tc = self.ad.toolchain() | {"produced_by": "tinygrad's QCOM JIT (tools/export_tinygrad.py --qcom-jit): the QCOMProgram libs tinygrad "
                                                 "compiled and ran, host pointers in the two structs zeroed", "executed": True}
      names = getattr(self, "input_names", None) or [f"input_{i}" for i in range(len(inputs))]
      for i, name in zip(inputs, names): i["name"] = str(name)
      for o in outputs: o["name"] = f"output_{o['index']}"
      graph = {"name": "qcom", "target": "qcom", "expected_from": "adreno_a630",
               "buffers": buffers, "inputs": inputs, "outputs": outputs, "programs": self.programs, "launches": launches}
      manifest = {
        "format": "tg-cpu-bundle", "version": 2, "model": model_name, "tinygrad_version": self.tinygrad_version,
        "numpy_version": np.__version__, "python": platform.python_version(),
        "toolchain": {"device": "QCOM", "dev_string": os.environ.get("DEV"), "renderer": type(self.dev.renderer).__name__,
                      "compiler": type(self.dev.renderer.compiler).__name__, "arch": repr(self.dev.renderer.target),
                      "flags": self.flags, "chip_id": str(getattr(self.dev, "gpu_id", None))},
        "arch_levels": {}, "portable": True, "expected_from": "adreno_a630", "toolchains": {"adreno_a630": tc},
        "capture": {"mode": "qcom-jit", "graphs": self.graphs},
        "graphs": [graph],
      }
      import json
      put("manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
      return manifest

  return QcomExporter


__all__ = ["CaptureError", "QCOM_FLAGS", "check_pickle", "load_pickle", "make_exporter_class", "setup_qcom_environment"]
