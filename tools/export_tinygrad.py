#!/usr/bin/env python3
"""Export a tinygrad 0.14 model, captured with TinyJit, to a `tg-cpu-bundle` (version 1) directory.

The format is documented in examples/FORMAT.md. This tool writes x86-64 objects (the exact bytes tinygrad loaded and ran),
optionally AArch64 objects rebuilt from the same C source, optionally Adreno 630 shaders with their dispatch metadata (tinygrad's
IR3 renderer and Mesa's ir3 compiler from the `tinymesa` package; see tools/adreno_a630.py), the buffers' starting bytes, the
launch list of one forward pass and the outputs tinygrad computed. `--amd` adds AMD gfx1100 code objects (tinygrad's AMD LLVM
renderer, `AMD_LLVM=1`, on the system's libLLVM; see tools/amd_gfx1100.py) as a second graph (`target: "amd"`, version 2).
`--qcom-jit` and `--amd-jit` instead capture tinygrad's own JIT on its QCOM or AMD device (under `hcq virtual --`, the virtual
Adreno 630 or gfx1100; tools/qcom_capture.py, tools/amd_capture.py, their shared part tools/hcq_jit.py).

A model file defines `build(seed)` (or `build()`) returning `(fn, example_inputs)`: `fn` takes Tensors and returns a Tensor or
a tuple/list of Tensors, `example_inputs` is a list of realized Tensors. The model is wrapped in TinyJit and called 4 times
(call 1 captures the linear), then once more with `example_inputs`; that last call gives the bundle's input bytes and
expected outputs.

Usage: python tools/export_tinygrad.py --model tools/models/mlp.py -o OUTDIR [--x86-level x86-64-v2] [--aarch64] [--adreno]
       [--amd] [--seed N] [--name NAME] [--threads N] [--json]
       hcq vkgsl -- python tools/export_tinygrad.py (--model M.py [--no-prune] [--cpu-graph] | --pickle X_tinygrad.pkl) --qcom-jit
       -o OUTDIR [--json]
       hcq virtual -- python tools/export_tinygrad.py (--model M.py [--no-prune] [--cpu-graph] | --pickle X_tinygrad.pkl) --amd-jit
       -o OUTDIR [--json]

`--qcom-jit --model` and `--amd-jit --model` build the JIT as openpilot's compile3.py does, TinyJit(prune=True); `--no-prune`
keeps every kernel. The
export's phases and wall time are printed on stderr (`export_tinygrad: time: ...`); `--json` adds one JSON line (counts, phases,
wall time) as the last line of stdout.

Only x86-64 hosts are supported (the x86-64 objects are executed by tinygrad to produce the expected outputs).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import inspect
import json
import os
import platform
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adreno_a630 import AdrenoError, AdrenoExporter, finish_signature  # noqa: E402 (imports tinygrad only when used)
import hcq_jit  # noqa: E402 (--qcom-jit, --amd-jit, --pickle: what the two share; imports tinygrad only when used)
import qcom_capture  # noqa: E402 (--qcom-jit, --pickle; imports tinygrad only when used)
import amd_capture  # noqa: E402 (--amd-jit; imports tinygrad only when used)
from amd_gfx1100 import AmdError, AmdExporter, amd_graph  # noqa: E402 (--amd; imports tinygrad only when used)

FORMAT, VERSION = "tg-cpu-bundle", 1
TINYGRAD_VERSION = "0.14.0"
CAPTURE_CALLS = 4  # TinyJit: call 0 runs eagerly, call 1 captures, calls 2 and 3 replay the captured linear
CC_FLAGS = ["-c", "-x", "c", "-O2", "-fPIC", "-ffreestanding", "-fno-math-errno", "-nostdlib", "-fno-ident"]
AARCH64_TARGET_FLAGS = ["--target=aarch64-none-unknown-elf", "-ffixed-x18", "-mcpu=generic"]
GENERIC_X86_LEVELS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")

CALLING_CONVENTION = {
  "abi": "SysV x86-64 (ms_abi on Windows)",
  "signature": "void fn(uint64 arg0, ..., uint64 argN)",
  "arg_order": "buffer base pointers (launch.args, i.e. ProgramInfo.globals order) then integer vals (launch.vals, ProgramInfo.vars order)",
  "core_id": "if launch.core_id_arg is not null, call the function global_size[0] times, with the thread id tid in "
             "[0, global_size[0]) at args[core_id_arg]; calls are independent (can run on separate threads)",
  "entry": "symbol `symbol` in .text; tinygrad's jit_loader lays .text first, so tinygrad calls image offset 0",
  "max_args": 63,
}


class ExportError(Exception):
  """A model or capture the exporter cannot represent faithfully; the message says what and where."""


def sha256(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


def parse_args(argv):
  ap = argparse.ArgumentParser(description="Export a TinyJit-captured tinygrad 0.14 model to a tg-cpu-bundle v1 directory.")
  src = ap.add_mutually_exclusive_group(required=True)
  src.add_argument("--model", help="Python file defining build() -> (fn, example_inputs)")
  src.add_argument("--pickle", help="a pickled TinyJit (openpilot's compile3.py *_tinygrad.pkl, tinygrad 0.14.0): DEV=QCOM (implies "
                                     "--qcom-jit) or, with --amd-jit, DEV=AMD")
  ap.add_argument("-o", "--out", required=True, help="output directory (created; must be empty if it exists)")
  ap.add_argument("--x86-level", default="x86-64-v2",
                  help="-march level for the x86-64 objects (default x86-64-v2; 'native' gives a non-portable bundle)")
  ap.add_argument("--aarch64", action="store_true", help="also build AArch64 objects from the generated C sources")
  ap.add_argument("--adreno", action="store_true",
                  help="also build Adreno 630 shaders (tinygrad IR3 renderer + Mesa ir3 from tinymesa) and their dispatch metadata")
  ap.add_argument("--amd", action="store_true",
                  help="also build AMD gfx1100 code objects (tinygrad's AMD LLVM renderer and compiler on the system's libLLVM) as the "
                       "bundle's `amd` graph (manifest version 2)")
  ap.add_argument("--qcom-jit", action="store_true",
                  help="capture tinygrad's own QCOM JIT (IR3) on a KGSL device, e.g. the virtual one of `hcq vkgsl -- python ...`, with the "
                       "flags of the environment (default FLOAT16=1 IMAGE=1 NOLOCALS=1 JIT_BATCH_SIZE=0)")
  ap.add_argument("--amd-jit", action="store_true",
                  help="capture tinygrad's own AMD JIT (DEV=AMD:LLVM, formerly AMD_LLVM=1) on a KFD device, e.g. the virtual gfx1100 of "
                       "`hcq virtual -- python ...`, with the JIT flags of the environment")
  ap.add_argument("--cpu-graph", action="store_true",
                  help="with --qcom-jit/--amd-jit --model: also export the model on tinygrad's CPU device (same seed) as the bundle's `cpu` graph, "
                       "sharing the inputs, outputs and the weight files whose bytes are equal")
  ap.add_argument("--seed", type=int, default=0, help="seed passed to build() and used for the capture-call inputs (default 0)")
  ap.add_argument("--name", help="model name in the manifest (default: the model's NAME, else the file name)")
  ap.add_argument("--no-prune", action="store_true",
                  help="with --qcom-jit/--amd-jit --model: capture every kernel of the call (TinyJit without prune), including those that do not "
                       "depend on the inputs; by default the JIT is built as openpilot's compile3.py builds it, TinyJit(prune=True), "
                       "which runs those once at capture and keeps their results as weights")
  ap.add_argument("--json", action="store_true",
                  help="print one JSON line (the bundle's counts, the export's phases and wall time in seconds) as the last line of stdout")
  ap.add_argument("--threads", type=int, default=4,
                  help="NUM_CPU_THREADS for tinygrad's codegen: the number of core_id slices of a split kernel (default 4). "
                       "Fixed so that the export does not depend on the exporting machine's CPU count")
  a = ap.parse_args(argv)
  if not re.fullmatch(r"[A-Za-z0-9_.+-]+", a.x86_level): ap.error(f"--x86-level: bad value {a.x86_level!r}")
  if a.threads < 1: ap.error("--threads must be >= 1")
  if a.qcom_jit and a.amd_jit: ap.error("--qcom-jit and --amd-jit capture different devices; give one")
  if a.pickle and not a.amd_jit: a.qcom_jit = True
  jit = "--amd-jit" if a.amd_jit else "--qcom-jit"
  if a.cpu_graph and not ((a.qcom_jit or a.amd_jit) and a.model): ap.error("--cpu-graph needs --qcom-jit or --amd-jit, and --model")
  if a.no_prune and not ((a.qcom_jit or a.amd_jit) and a.model):
    ap.error("--no-prune needs --qcom-jit or --amd-jit, and --model (a pickle holds its JIT as made)")
  if (a.qcom_jit or a.amd_jit) and (a.aarch64 or a.adreno or a.amd):
    ap.error(f"{jit} records tinygrad's own programs; --aarch64/--adreno/--amd do not apply")
  return a


def setup_environment(args):
  """Set tinygrad's environment before it is imported (its ContextVars read os.environ at import time)."""
  machine = platform.machine().lower()
  if machine not in ("x86_64", "amd64"):
    raise ExportError(f"host architecture {machine!r}: this exporter runs tinygrad's x86-64 objects and needs an x86-64 host")
  if os.environ.get("HCQ2"):
    raise ExportError("HCQ2 is set: the HCQ2 command-ring mode replaces the kernel linear; unset HCQ2 to export")
  for var in ("BEAM", "JITBEAM"):
    if os.environ.get(var, "0") not in ("", "0"):
      raise ExportError(f"{var}={os.environ[var]} is set: beam search makes kernels timing dependent; unset it to export")
  os.environ["DEV"] = f"CPU::x86_64,{args.x86_level}"
  os.environ["NUM_CPU_THREADS"] = str(args.threads)
  os.environ["CCACHE"] = "0"    # compile every kernel now, with the clang recorded in the manifest, never from the disk cache
  os.environ["PARALLEL"] = "0"  # compile in this process


def load_model(path):
  spec = importlib.util.spec_from_file_location("tg_export_model", path)
  if spec is None or spec.loader is None: raise ExportError(f"--model {path}: cannot load as a Python module")
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  if not callable(getattr(mod, "build", None)): raise ExportError(f"--model {path}: defines no build() function")
  return mod


def cc_version(cc):
  try: out = subprocess.run([cc, "--version"], check=True, capture_output=True, text=True).stdout
  except (OSError, subprocess.CalledProcessError) as e: raise ExportError(f"cannot run {cc!r} --version: {e}") from None
  return out.splitlines()[0].strip() if out else "unknown"


def compile_c(argv, src: str) -> bytes:
  try: return subprocess.run(argv, input=src.encode(), check=True, capture_output=True).stdout
  except subprocess.CalledProcessError as e:
    raise ExportError(f"{' '.join(argv)} failed: {e.stderr.decode(errors='replace').strip()}") from None


class Phases:
  """Wall time of the export's phases (seconds), printed at the end: a large model's export is part of the user's wait."""
  def __init__(self):
    self.start = self.last = time.perf_counter()
    self.times: dict[str, float] = {}

  def mark(self, name: str):
    now = time.perf_counter()
    self.times[name] = self.times.get(name, 0.0) + now - self.last
    self.last = now

  def total(self) -> float: return time.perf_counter() - self.start

  @staticmethod
  def cpu() -> float: return time.process_time()  # this process's CPU time: tinygrad, Mesa, and the virtual device's threads

  def line(self) -> str:
    return ("export_tinygrad: time: " + ", ".join(f"{k} {v:.2f} s" for k, v in self.times.items())
            + f"; wall {self.total():.2f} s, cpu {self.cpu():.2f} s")


PHASES = Phases()


class Exporter:
  DEVICE = "CPU"  # the device tinygrad runs the capture on

  def __init__(self, args, adreno=None, amd=None):
    import numpy as np
    import tinygrad
    from tinygrad import Tensor, TinyJit, dtypes
    from tinygrad.device import MultiBuffer
    from tinygrad.uop.ops import Ops, UOp
    from tinygrad.engine.realize import resolve_params
    from tinygrad.engine.jit import _prepare_jit_inputs
    from tinygrad.helpers import ansistrip
    self.np, self.Tensor, self.TinyJit, self.dtypes = np, Tensor, TinyJit, dtypes
    self.MultiBuffer, self.Ops, self.UOp = MultiBuffer, Ops, UOp
    self.resolve_params, self.prepare_jit_inputs, self.ansistrip = resolve_params, _prepare_jit_inputs, ansistrip
    self.args = args
    version = getattr(tinygrad, "__version__", None)
    if version is None:
      import importlib.metadata
      version = importlib.metadata.version("tinygrad")
    if version != TINYGRAD_VERSION:
      raise ExportError(f"tinygrad {version} is installed; this exporter reads tinygrad {TINYGRAD_VERSION} internals")
    self.tinygrad_version = version
    self.bases: list = []           # base Buffers, index = bundle buffer id (the list keeps them alive, so id() is stable)
    self.base_ids: dict[int, int] = {}
    self.programs: list[dict] = []  # manifest entries
    self.program_data: list[tuple[bytes, str]] = []  # (x86 object, C source) per program id
    self.program_keys: dict[tuple, int] = {}
    self.viewed: set[int] = set()   # ids of base buffers that launches address through views (the memory planner's arenas)
    self.adreno = adreno            # AdrenoExporter with --adreno, else None
    self.gpu_programs: list[dict] = []  # per program id with --adreno: the compiled GPU kernel
    self.kernel_asts: dict = {}     # compiled CPU PROGRAM -> the kernel SINK the scheduler produced (recorded at compile time)
    self.amd = amd                  # AmdExporter with --amd, else None
    self.amd_programs: list[dict] = []  # per program id with --amd: the gfx1100 kernel
    if adreno is not None or amd is not None: self.record_kernel_asts()

  def record_kernel_asts(self):
    """Remember, for every kernel tinygrad compiles, the SINK it started from: the GPU kernel is rendered from that, not from the
    CPU-lowered program the captured linear holds."""
    import tinygrad.engine.realize as realize
    compile_one, asts = realize.to_program, self.kernel_asts
    def to_program(ast, renderer):
      prg = compile_one(ast, renderer)
      if ast.op is self.Ops.SINK: asts[prg] = ast
      return prg
    realize.to_program = to_program

  # ---------- helpers ----------

  def dtype_name(self, dt) -> str:
    """numpy name of a tinygrad dtype (bfloat16 has no numpy type and keeps its own name)."""
    if dt == self.dtypes.bfloat16: return "bfloat16"
    if dt.fmt is None: raise ExportError(f"dtype {dt} has no numpy equivalent")
    return self.np.dtype(dt.fmt).name

  def buffer_id(self, base) -> int:
    if (bid := self.base_ids.get(id(base))) is None:
      bid = self.base_ids[id(base)] = len(self.bases)
      self.bases.append(base)
    return bid

  def input_view(self, buf, where: str) -> dict:
    """The view of a JIT input (the QCOM exporter also takes one on a host device, which the JIT copies in)."""
    return self.view(buf, where)

  def view(self, buf, where: str, host_ok=False) -> dict:
    """(base buffer, byte offset, nbytes, dtype) of a Buffer that may be a view (e.g. into the memory planner's arena); with
    `host_ok` (a copy's source) also one tinygrad keeps on PYTHON or NPY (a constant the JIT copies in: a weight)."""
    if isinstance(buf, self.MultiBuffer): raise ExportError(f"{where}: multi-device buffers are not supported")
    host = host_ok and isinstance(buf.device, str) and buf.device.split(":")[0] in ("PYTHON", "NPY")
    if not (buf.device.startswith("CPU") or host): raise ExportError(f"{where}: buffer on device {buf.device}, only CPU is supported")
    base = buf.base
    offset = buf.offset if buf._base is not None else 0
    if offset < 0 or offset + buf.nbytes > base.nbytes:
      raise ExportError(f"{where}: view [{offset}, {offset + buf.nbytes}) lies outside its base of {base.nbytes} bytes")
    bid = self.buffer_id(base)
    if buf._base is not None: self.viewed.add(bid)
    return {"buffer": bid, "offset": offset, "nbytes": buf.nbytes, "dtype": self.dtype_name(buf.dtype)}

  @staticmethod
  def int_dims(dims, what) -> list[int]:
    out = []
    for d in dims:
      if not isinstance(d, int) and not (isinstance(d, float) and d.is_integer()): raise ExportError(f"{what}: non-integer size {dims}")
      out.append(int(d))
    return out

  def base_bytes(self, bid: int) -> bytes:
    return bytes(self.bases[bid].as_memoryview())

  # ---------- capture ----------

  def capture_inputs(self, example, call: int):
    """Fresh, deterministic inputs for capture call `call`: new random data for floating inputs, a copy otherwise."""
    np, Tensor = self.np, self.Tensor
    rng = np.random.default_rng([self.args.seed, 1 + call])
    out = []
    for t in example:
      if not isinstance(t, Tensor):  # a bound Variable: the same value in every call
        out.append(t)
        continue
      a = t.numpy()
      if self.dtypes.is_float(t.dtype): a = rng.standard_normal(a.shape).astype(a.dtype)
      out.append(Tensor(a.copy(), device=t.device).realize())
    return out

  def run(self, mod):
    np, Tensor = self.np, self.Tensor
    Tensor.manual_seed(self.args.seed)
    np.random.seed(self.args.seed)
    params = inspect.signature(mod.build).parameters
    fn, example = mod.build(self.args.seed) if len(params) >= 1 else mod.build()
    example = list(example)
    PHASES.mark("build")
    bound_var = lambda t: isinstance(t, self.UOp) and t.is_bound_var  # noqa: E731
    if not any(isinstance(t, Tensor) for t in example) or not all(isinstance(t, Tensor) or bound_var(t) for t in example):
      raise ExportError("build() must return (fn, example_inputs) with a non-empty list of Tensors (and bound Variables, "
                        "Variable(name, lo, hi).bind(value), whose values the bundle then keeps)")
    for i, t in enumerate(example):
      if not isinstance(t, Tensor): continue
      t.realize()
      if not isinstance(t.device, str) or not t.device.startswith(self.DEVICE):
        raise ExportError(f"example input {i} is on {t.device}, not {self.DEVICE} (realize it on {self.DEVICE})")
    return self.run_jit(self.make_jit(fn), example)

  def make_jit(self, fn):
    """The TinyJit the model is captured with (the CPU export: every kernel of the call)."""
    return self.TinyJit(fn)

  def call_jit(self, jit, tensors):
    """Call the JIT with the model's inputs in order (a loaded pickle may take some of them by name)."""
    return jit(*tensors)

  def run_jit(self, jit, example):
    np, Tensor = self.np, self.Tensor
    tensors = [t for t in example if isinstance(t, Tensor)]  # the rest: bound Variables, whose values the launches keep
    example_bytes = [t.numpy().tobytes() for t in tensors]
    for call in range(CAPTURE_CALLS): self.call_jit(jit, self.capture_inputs(example, call))
    PHASES.mark("capture")
    captured = jit.captured
    if captured is None: raise ExportError("TinyJit captured nothing after 4 calls")
    linear = captured.linear

    # the final call's inputs, resolved exactly as TinyJit resolves them
    input_uops, var_vals, _, _ = self.prepare_jit_inputs(tuple(example), {})
    if len(input_uops) != len(tensors): raise ExportError("an example input is not a plain realized buffer")
    self.var_vals = dict(var_vals)
    if any(u in captured._written_uops for u in input_uops):
      raise ExportError("the model writes to one of its inputs (TinyJit copies such inputs); not representable in a bundle")
    input_bufs = [u.buffer for u in input_uops]
    inputs = []
    for i, (t, b) in enumerate(zip(tensors, input_bufs)):
      v = self.input_view(b, f"input {i}")
      inputs.append({**v, "index": i, "shape": list(t.shape)})

    launches = self.capture_launches(linear, tuple(input_uops), var_vals)
    if not any(l["kind"] == "kernel" for l in launches): raise ExportError("the captured linear contains no kernel")

    # starting bytes of every buffer, taken before the final call
    start = [self.base_bytes(bid) for bid in range(len(self.bases))]
    for i, inp in enumerate(inputs):
      got = start[inp["buffer"]][inp["offset"]:inp["offset"] + inp["nbytes"]]
      if got != example_bytes[i]: raise ExportError(f"input {i}: the buffer the JIT reads does not hold the example input")

    ret = self.call_jit(jit, example)
    rets = list(ret) if isinstance(ret, (tuple, list)) else [ret]
    outputs, expected = [], []
    for i, t in enumerate(rets):
      if not isinstance(t, Tensor): raise ExportError(f"output {i} is a {type(t).__name__}, not a Tensor")
      data = np.ascontiguousarray(t.numpy()).tobytes()
      v = self.view(t.uop.buffer, f"output {i}")
      if v["nbytes"] != len(data): raise ExportError(f"output {i}: buffer view of {v['nbytes']} bytes for {len(data)} bytes of data")
      raw = self.base_bytes(v["buffer"])[v["offset"]:v["offset"] + v["nbytes"]]
      if raw != data: raise ExportError(f"output {i}: the returned tensor is not a plain view of buffer {v['buffer']}")
      outputs.append({**v, "index": i, "shape": list(t.shape), "file": f"expected_{i:03d}.bin"})
      expected.append(data)

    # every output must be produced by the captured launches: an output buffer that no launch writes was filled outside
    # the JIT's graph (e.g. a model that returns an input unchanged) and would never be updated by a replay
    written = {l["args"][k]["buffer"] for l in launches if l["kind"] == "kernel" for k in l["outs"]}
    written |= {l["dst"]["buffer"] for l in launches if l["kind"] == "copy"}
    input_bufs = {v["buffer"] for v in inputs}
    for o in outputs:
      if o["buffer"] not in written and o["buffer"] not in input_bufs:
        raise ExportError(f"output {o['index']}: no captured launch writes buffer {o['buffer']} (tinygrad filled it outside the "
                          "JIT graph, e.g. the model returns an input unchanged); return a computed tensor instead")

    self.start = start
    buffers = self.classify(launches, inputs, outputs, start)
    for b in buffers:  # the bundle promises that kernels never modify inputs and weights
      if b["role"] in ("input", "weight") and self.base_bytes(b["id"]) != start[b["id"]]:
        raise ExportError(f"buffer {b['id']} ({b['role']}) changed during the final call")
    PHASES.mark("record")
    return buffers, inputs, outputs, launches, expected

  def capture_launches(self, linear, input_uops, var_vals) -> list[dict]:
    return [self.launch(i, call, input_uops, var_vals) for i, call in enumerate(linear.src)]

  def launch(self, idx: int, call, input_uops, var_vals) -> dict:
    Ops, ast = self.Ops, call.src[0]
    resolved = self.resolve_params(call, input_uops)
    if ast.op is Ops.PROGRAM:
      info = ast.arg
      where = f"launch {idx} ({info.function_name})"
      args = [self.view(resolved[g].buffer, f"{where} arg {k}") for k, g in enumerate(info.globals)]
      global_size, local_size = info.launch_dims(var_vals)
      vals = list(info.vals(var_vals))
      core = info.runtimevars.get("core_id")
      core_id_arg = None if core is None else len(info.globals) + core
      pid = self.program(ast, where)
      if self.programs[pid]["core_id_arg"] != core_id_arg: raise ExportError(f"{where}: core_id slot disagrees with the signature")
      slot = {g: k for k, g in enumerate(info.globals)}
      try:
        outs, ins = [slot[s] for s in info.outs], [slot[s] for s in info.ins]
      except KeyError as e: raise ExportError(f"{where}: outs/ins refer to slot {e} which is not a buffer argument") from None
      entry = {"kind": "kernel", "program": pid, "name": info.function_name,
               "global_size": self.int_dims(global_size, where), "local_size": self.int_dims(local_size or (1, 1, 1), where),
               "args": args, "vals": vals, "core_id_arg": core_id_arg, "outs": outs, "ins": ins}
      if self.adreno is not None: entry |= self.adreno.launch(self.gpu_programs[pid], info.globals, var_vals, f"{where} (GPU)")
      if self.amd is not None: entry["_amd"] = self.amd.launch(self.amd_programs[pid], info.globals, var_vals, f"{where} (AMD)")
      return entry
    if ast.op is Ops.COPY:
      dst = self.view(resolved[0].buffer, f"launch {idx} copy dst")
      src = self.view(resolved[1].buffer, f"launch {idx} copy src", host_ok=True)
      if dst["nbytes"] != src["nbytes"]: raise ExportError(f"launch {idx}: copy of {src['nbytes']} into {dst['nbytes']} bytes")
      return {"kind": "copy", "dst": dst, "src": src}
    raise ExportError(f"launch {idx}: unsupported call {ast.op} {ast.arg!r} (graph/hcq/custom functions are not exported)")

  def program(self, ast, where: str) -> int:
    Ops = self.Ops
    if len(ast.src) < 4 or ast.src[2].op is not Ops.SOURCE or ast.src[3].op is not Ops.BINARY:
      raise ExportError(f"{where}: PROGRAM is not compiled (expected SINK, LINEAR, SOURCE, BINARY sources)")
    info, elf = ast.arg, ast.to_elf()
    source, obj = ast.src[2].arg, elf.lib
    if not isinstance(source, str) or not isinstance(obj, bytes) or obj[:4] != b"\x7fELF":
      raise ExportError(f"{where}: not a clang-built ELF object (renderer {info.target.renderer!r}); use the default CPU renderer")
    n_buf = len(info.globals)
    signature = [{"name": name, "slot": slot, "dtype": self.dtype_name(dt), "shape": list(shape)} for name, slot, dt, shape in elf.signature]
    if [s["slot"] for s in signature] != list(range(len(signature))) or len(signature) != n_buf + len(info.vars):
      raise ExportError(f"{where}: signature slots {[s['slot'] for s in signature]} are not 0..n-1 with {n_buf} buffers")
    for s in signature[n_buf:]:
      if s["dtype"] != "int32": raise ExportError(f"{where}: scalar argument {s['name']} has dtype {s['dtype']}, expected int32")
    core = [s["slot"] for s in signature if s["name"] == "core_id"]
    core_id_arg = core[0] if core else None
    name = elf.name
    key = (obj, source, name, json.dumps(signature))
    if (pid := self.program_keys.get(key)) is not None: return pid
    pid = self.program_keys[key] = len(self.programs)
    stem = f"prog_{pid:03d}_{name}"
    obj_entry = {"file": f"{stem}.o", "sha256": sha256(obj), "nbytes": len(obj)}
    self.programs.append({
      "id": pid, "name": name, "display_name": self.ansistrip(info.name), "file": obj_entry["file"], "source_file": f"{stem}.c",
      "symbol": name, "sha256": obj_entry["sha256"], "nbytes": obj_entry["nbytes"], "signature": signature, "n_buffer_args": n_buf,
      "vars": [s["name"] for s in signature[n_buf:]], "core_id_arg": core_id_arg, "objects": {"x86_64": obj_entry}})
    self.program_data.append((obj, source))
    if self.adreno is not None or self.amd is not None:
      if (sink := self.kernel_asts.get(ast)) is None: raise ExportError(f"{where}: the kernel's scheduled AST was not recorded at compile time")
      if self.adreno is not None: self.gpu_programs.append(self.adreno.program(sink, f"{where} (GPU)", stem))
      if self.amd is not None: self.amd_programs.append(self.amd.program(sink, f"{where} (AMD)"))
    return pid

  def classify(self, launches, inputs, outputs, start) -> list[dict]:
    """Role of every base buffer: input, weight (read before written), output, scratch (written before read)."""
    first: dict[int, str] = {}
    written: set[int] = set()
    for l in launches:
      if l["kind"] == "kernel":
        reads, writes = [l["args"][k] for k in l["ins"]], [l["args"][k] for k in l["outs"]]
      else: reads, writes = [l["src"]], [l["dst"]]
      for v in reads: first.setdefault(v["buffer"], "read")
      for v in writes:
        first.setdefault(v["buffer"], "write")
        written.add(v["buffer"])
    input_ids, output_ids = {i["buffer"] for i in inputs}, {o["buffer"] for o in outputs}
    # tinygrad's memory planner allocates each arena as an int8 buffer and hands out views into it
    arena = {bid for bid in self.viewed if self.bases[bid].dtype == self.dtypes.int8}
    buffers = []
    for bid, base in enumerate(self.bases):
      if bid in input_ids: role = "input"
      elif first.get(bid) == "read": role = "weight"
      elif bid in output_ids and bid not in arena: role = "output"
      elif first.get(bid) == "write": role = "scratch"
      else: raise ExportError(f"buffer {bid} ({base.nbytes} bytes) is neither an input nor an output and no launch touches it")
      if role in ("input", "weight") and bid in written:
        raise ExportError(f"buffer {bid} ({role}) is written by a launch; in-place state is not representable in a v1 bundle")
      entry = {"id": bid, "nbytes": base.nbytes, "dtype": "int8" if bid in arena else self.dtype_name(base.dtype), "role": role}
      if role in ("input", "weight"): entry |= {"file": f"buf_{bid:03d}.bin", "sha256": sha256(start[bid])}
      if bid in output_ids and role != "output": entry["also_output"] = True
      buffers.append(entry)
    return buffers

  # ---------- writing ----------

  def write(self, outdir, model_name, buffers, inputs, outputs, launches, expected):
    np, args = self.np, self.args
    from tinygrad.device import Device
    dev = Device["CPU"]
    renderer, compiler = dev.renderer, dev.compiler
    cc = os.environ.get("CC", "clang")
    x86_cmd = [cc, *CC_FLAGS, "--target=x86_64-none-unknown-elf", *compiler.args, "-", "-o", "-"]
    version = cc_version(cc)
    # the recorded command must reproduce tinygrad's bytes exactly
    for pid, (obj, src) in enumerate(self.program_data):
      if compile_c(x86_cmd, src) != obj:
        raise ExportError(f"program {pid}: {' '.join(x86_cmd)} does not reproduce the object tinygrad loaded")

    os.makedirs(outdir, exist_ok=True)
    if os.listdir(outdir): raise ExportError(f"output directory {outdir} is not empty")

    def put(name, data: bytes):
      with open(os.path.join(outdir, name), "wb") as f: f.write(data)

    arch_levels = {"x86_64": args.x86_level}
    toolchains = {"x86_64": {"target": "x86_64-none-unknown-elf", "level": args.x86_level, "compile_cmd": x86_cmd, "cc_version": version,
                             "produced_by": "tinygrad ClangCompiler (exact bytes tinygrad loaded)"}}
    if args.aarch64:
      a64_cmd = [cc, *CC_FLAGS, *AARCH64_TARGET_FLAGS, "-", "-o", "-"]
      arch_levels["aarch64"] = "armv8-a"
      toolchains["aarch64"] = {"target": "aarch64-none-unknown-elf", "level": "armv8-a", "compile_cmd": a64_cmd, "cc_version": version,
                               "produced_by": "tools/export_tinygrad.py --aarch64: the saved prog_NNN_<name>.c recompiled by clang",
                               "abi": "AAPCS64: pointers/ints in x0-x7 then 8-byte stack slots (Linux); x18 is not used (-ffixed-x18)"}

    for p, (obj, src) in zip(self.programs, self.program_data):
      put(p["file"], obj)
      put(p["source_file"], src.encode())
      if args.aarch64:
        a64 = compile_c(toolchains["aarch64"]["compile_cmd"], src)
        if a64[:4] != b"\x7fELF" or int.from_bytes(a64[18:20], "little") != 183:
          raise ExportError(f"program {p['id']}: clang did not produce an AArch64 ELF object")
        p["objects"]["aarch64"] = {"file": p["file"][:-2] + ".aarch64.o", "sha256": sha256(a64), "nbytes": len(a64)}
        put(p["objects"]["aarch64"]["file"], a64)

    if self.adreno is not None:
      toolchains["adreno_a630"] = self.adreno.toolchain()
      for p, gp in zip(self.programs, self.gpu_programs):
        stem = p["file"][:-2]
        if gp["entry"]["regs"] is None: raise ExportError(f"program {p['id']}: no launch of it reached the GPU metadata pass")
        finish_signature(gp["entry"], self.dtype_name)
        p["objects"]["adreno_a630"] = {"file": f"{stem}.a630.bin", "sha256": sha256(gp["blob"]), "nbytes": len(gp["blob"])}
        p["adreno"] = gp["entry"]
        put(p["objects"]["adreno_a630"]["file"], gp["blob"])
        put(gp["entry"]["disasm_file"], gp["asm"])

    for b in buffers:
      if "file" in b: put(b["file"], self.start[b["id"]])
    for o, data in zip(outputs, expected): put(o["file"], data)

    if self.amd is not None:
      toolchains["amd_gfx1100"] = self.amd.toolchain()
      amd = amd_graph(self.programs, launches, self.amd_programs, buffers, inputs, outputs, self.dtype_name, put)
    manifest = {
      "format": FORMAT, "version": VERSION, "model": model_name, "tinygrad_version": self.tinygrad_version,
      "numpy_version": np.__version__, "python": platform.python_version(),
      "toolchain": {"device": "CPU", "dev_string": os.environ["DEV"], "renderer": type(renderer).__name__,
                    "compiler": type(compiler).__name__, "arch": f"x86_64,{args.x86_level}", "compile_cmd": x86_cmd, "cc_version": version},
      "arch_levels": arch_levels, "portable": args.x86_level in GENERIC_X86_LEVELS, "expected_from": "x86_64",
      "calling_convention": CALLING_CONVENTION, "toolchains": toolchains,
      "buffers": buffers, "inputs": inputs, "outputs": outputs, "programs": self.programs, "launches": launches,
    }
    if self.amd is not None:  # version 2: the CPU (and Adreno) graph for any other target, beside the AMD graph
      main = {"name": "main", "target": "any", "expected_from": "x86_64"}
      main |= {k: manifest.pop(k) for k in ("buffers", "inputs", "outputs", "programs", "launches")}
      manifest |= {"version": 2, "graphs": [main, amd]}
    put("manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def main(argv=None) -> int:
  args = parse_args(sys.argv[1:] if argv is None else argv)
  try:
    if os.path.isdir(args.out) and os.listdir(args.out): raise ExportError(f"output directory {args.out} is not empty")
    if args.qcom_jit: return main_jit(args, QCOM_JIT)
    if args.amd_jit: return main_jit(args, AMD_JIT)
    setup_environment(args)
    mod = load_model(args.model)
    name = args.name or getattr(mod, "NAME", None) or os.path.splitext(os.path.basename(args.model))[0]
    adreno = AdrenoExporter() if args.adreno else None
    amd = AmdExporter() if args.amd else None
    ex = Exporter(args, adreno, amd)
    from tinygrad.device import Device
    if type(Device["CPU"].compiler).__name__ != "ClangCompiler":
      raise ExportError(f"tinygrad's CPU compiler is {type(Device['CPU'].compiler).__name__}; only ClangCompiler objects are exported")
    PHASES.mark("setup")
    buffers, inputs, outputs, launches, expected = ex.run(mod)
    manifest = ex.write(args.out, name, buffers, inputs, outputs, launches, expected)
    PHASES.mark("write")
  except ExportError as e:
    print(f"export_tinygrad: error: {e}", file=sys.stderr)
    return 1
  except AdrenoError as e:
    print(f"export_tinygrad: error: --adreno: {e}", file=sys.stderr)
    return 1
  except AmdError as e:
    print(f"export_tinygrad: error: --amd: {e}", file=sys.stderr)
    return 1
  g = manifest["graphs"][0] if "graphs" in manifest else manifest
  n_kernels = sum(1 for l in g["launches"] if l["kind"] == "kernel")
  core = sum(1 for p in g["programs"] if p["core_id_arg"] is not None)
  report()
  amd_note = f" and an AMD gfx1100 graph of {len(manifest['graphs'][1]['programs'])} programs" if "graphs" in manifest else ""
  print(f"exported {name!r} to {args.out}: {len(g['programs'])} programs ({core} with core_id), {n_kernels} kernel launches, "
        f"{len(g['buffers'])} buffers{amd_note}")
  if args.json: print_json(args, name, g["programs"], g["launches"], g["buffers"])
  return 0


def report():
  """The phases and wall time on stderr (before the `exported ...` line of stdout)."""
  sys.stdout.flush()
  print(PHASES.line(), file=sys.stderr, flush=True)


def print_json(args, name, programs, launches, buffers, extra=None):
  kernels = [l for l in launches if l["kind"] == "kernel"]
  images = sum(1 for l in kernels for a in l["args"] if "image" in a)
  out = {"model": name, "out": args.out, "programs": len(programs), "kernels": len(kernels),
         "copies": sum(1 for l in launches if l["kind"] == "copy"), "buffers": len(buffers),
         "weight_bytes": sum(b["nbytes"] for b in buffers if b["role"] == "weight"), "image_bindings": images,
         "phases_s": {k: round(v, 3) for k, v in PHASES.times.items()}, "wall_s": round(PHASES.total(), 3), "cpu_s": round(PHASES.cpu(), 3)} | (extra or {})
  print(json.dumps(out), flush=True)


class JitBackend:
  """One device whose own TinyJit `--qcom-jit` / `--amd-jit` capture: its module (setup, exporter class) and how it is named."""
  def __init__(self, flag, device, module, setup):
    self.flag, self.device, self.module, self.setup = flag, device, module, setup


QCOM_JIT = JitBackend("--qcom-jit", "QCOM", qcom_capture, qcom_capture.setup_qcom_environment)
AMD_JIT = JitBackend("--amd-jit", "AMD", amd_capture, amd_capture.setup_amd_environment)


def main_jit(args, be: JitBackend) -> int:
  """--qcom-jit / --amd-jit / --pickle: tinygrad's own JIT on its QCOM (KGSL) or AMD (KFD) device (tools/hcq_jit.py and the
  device's module)."""
  try:
    if os.path.isdir(args.out) and os.listdir(args.out): raise ExportError(f"output directory {args.out} is not empty")
    if args.pickle: hcq_jit.check_pickle(args.pickle, be.device, be.flag)
    flags = be.setup()
    ex = be.module.make_exporter_class(Exporter, ExportError)(args, flags)
    PHASES.mark("setup")
    if args.pickle:
      name = args.name or os.path.splitext(os.path.basename(args.pickle))[0]
      jit, example = hcq_jit.load_pickle(args.pickle, ex)
      PHASES.mark("unpickle")
      buffers, inputs, outputs, launches, expected = ex.run_jit(jit, example)
    else:
      mod = load_model(args.model)
      name = args.name or getattr(mod, "NAME", None) or os.path.splitext(os.path.basename(args.model))[0]
      buffers, inputs, outputs, launches, expected = ex.run(mod)
    manifest = ex.write(args.out, name, buffers, inputs, outputs, launches, expected)
    PHASES.mark("write")
    if args.cpu_graph:
      import tempfile
      with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("DEV", "LD_PRELOAD", "IMAGE")}
        cmd = [sys.executable, os.path.abspath(__file__), "--model", args.model, "-o", os.path.join(tmp, "cpu"), "--seed", str(args.seed),
               "--threads", str(args.threads), "--x86-level", args.x86_level, "--name", name]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0: raise ExportError(f"--cpu-graph: the CPU export failed: {r.stderr.strip()}")
        merged = hcq_jit.merge_cpu_graph(args.out, os.path.join(tmp, "cpu"))
      PHASES.mark("cpu_graph")
      print(f"added the CPU graph: {merged['cpu_buffers']} buffers, {merged['shared']} weight files shared with the {be.device} graph")
  except (ExportError, hcq_jit.CaptureError) as e:
    print(f"export_tinygrad: error: {be.flag}: {e}", file=sys.stderr)
    return 1
  g = manifest["graphs"][0]
  n_kernels = sum(1 for l in g["launches"] if l["kind"] == "kernel")
  imaged = {a["buffer"] for l in g["launches"] if l["kind"] == "kernel" for a in l["args"] if "image" in a}
  report()
  checked = f", {ex.dispatches_checked} dispatches checked against tinygrad's" if hasattr(ex, "dispatches_checked") else ""
  print(f"exported {name!r} (tinygrad {be.device} JIT, {' '.join(f'{k}={v}' for k, v in ex.flags.items())}) to {args.out}: "
        f"{len(g['programs'])} programs, {n_kernels} kernel launches in {len(ex.graphs)} HCQ graph(s), "
        f"{len(g['buffers'])} buffers" + (f" ({len(imaged)} images)" if be.device == "QCOM" else "") + checked)
  if args.json:
    print_json(args, name, g["programs"], g["launches"], g["buffers"],
               {"flags": ex.flags, "prune": None if args.pickle else not args.no_prune, "host_buffers": len(ex.host_bases),
                "graphs": len(ex.graphs), "outside_graphs": sum(1 for l in g["launches"] if "graph" not in l)})
  return 0


if __name__ == "__main__":
  sys.exit(main())
