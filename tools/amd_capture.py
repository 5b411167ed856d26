"""`tools/export_tinygrad.py --amd-jit`: capture what tinygrad itself runs on an AMD gfx1100.

The model is run by tinygrad 0.14's own AMD backend (`DEV=AMD:LLVM`, formerly `AMD_LLVM=1`: the AMD LLVM renderer and
`AMDLLVMCompiler` on the system's libLLVM) over KFD: under `hcq virtual -- python tools/export_tinygrad.py --model M --amd-jit
-o OUT` that is the virtual gfx1100 of libhcq_vkgsl.so. TinyJit captures as usual (with the user's JIT flags:
`JIT_BATCH_SIZE` splits the linear into several HCQ graphs, a lone kernel stays outside them); the launches, buffers, copies
and expected outputs are recorded as for `--qcom-jit` (tools/hcq_jit.py), and from tinygrad's AMD objects:

- every code object tinygrad compiled and loaded (the `AMDProgram`'s lib, byte for byte: `objects.amd_gfx1100`), its kernel
  parameters (`ProgramInfo.globals` order, then the int32 values: the layout of tinygrad's `CLikeArgsState`);
- per launch the grid, values and buffer views tinygrad bound, one view per parameter (the same buffer in several slots).

After the final call (the one whose outputs are the expected bytes) every launch is checked against what tinygrad dispatched:
the PM4 stream of each HCQ graph's compute queue as last submitted (a launch outside a graph: the dispatch tinygrad's
`AMDComputeQueue.exec` encodes for it, never submitted) is decoded, and per `DISPATCH_DIRECT` the program address
(`COMPUTE_PGM_LO/HI`) must be the launch's program, the work-group count and size (`COMPUTE_NUM_THREAD_X/Y/Z`) the
launch's, and the kernel-argument block the user data points at must hold, byte for byte, the addresses of the launch's
buffer views and its values. The expected outputs are tinygrad's on the device (`expected_from: amd_gfx1100`): a runner of
these objects must match them bit for bit.

Refused with the place: no KFD node (not under `hcq virtual`), another DEV or renderer than AMD:LLVM, an arch other than
gfx1100, tinygrad's AQL queues, IMAGE, a kernel without a fixed local size, runtime variables, a multi-device buffer, a
custom function other than tinygrad's HCQ graph, a dispatch that differs from the recorded launch.
"""
from __future__ import annotations

import hashlib
import os

from hcq_jit import CaptureError, check_capture_environment, make_base_class

ARCH = "gfx1100"
TARGET = f"AMD:LLVM:{ARCH}"
# the DEV strings that select tinygrad's AMD device with the LLVM renderer over KFD (unset: AMD:LLVM)
DEV_STRINGS = ("AMD", "AMD:LLVM", "KFD+AMD", "KFD+AMD:LLVM")
# flags recorded in the manifest when set (they change what tinygrad schedules or how it groups launches)
RECORDED_FLAGS = ("JIT_BATCH_SIZE", "JIT", "NOLOCALS", "FLOAT16", "NOOPT", "TC", "NO_MEMORY_PLANNER", "SPLIT_REDUCEOP", "TRANSCENDENTAL")


def setup_amd_environment():
  """tinygrad's environment for an AMD capture, set before tinygrad is imported; returns the flags recorded in the manifest."""
  check_capture_environment()
  if (v := os.environ.pop("AMD_LLVM", None)) not in (None, "", "1"):
    raise CaptureError(f"AMD_LLVM={v}: --amd-jit captures tinygrad's AMD LLVM renderer (DEV=AMD:LLVM); the HIP/comgr renderer needs ROCm")
  if (v := os.environ.pop("AMD_CC", None)) not in (None, "", "LLVM"):
    raise CaptureError(f"AMD_CC={v}: --amd-jit captures tinygrad's AMD LLVM renderer (DEV=AMD:LLVM); the HIP/comgr renderer needs ROCm")
  dev = os.environ.get("DEV", "") or "AMD"
  if dev not in DEV_STRINGS:
    raise CaptureError(f"DEV={dev}: --amd-jit captures tinygrad's AMD device over KFD with the LLVM renderer (DEV unset, or one of "
                       f"{', '.join(DEV_STRINGS)})")
  os.environ["DEV"] = dev if dev.endswith(":LLVM") else f"{dev}:LLVM"
  if os.environ.get("IMAGE", "0") not in ("", "0"):
    raise CaptureError(f"IMAGE={os.environ['IMAGE']}: image kernels are tinygrad's QCOM path (--qcom-jit); unset IMAGE for --amd-jit")
  os.environ["CCACHE"] = "0"
  os.environ["PARALLEL"] = "0"
  return {"DEV": os.environ["DEV"]} | {k: os.environ[k] for k in RECORDED_FLAGS if k in os.environ}


def open_device():
  """tinygrad's AMD device; a clear error when there is no KFD node (not run under `hcq virtual`) or it is not what the bundle
  format holds (a gfx1100 with tinygrad's PM4 queues and LLVM renderer)."""
  from tinygrad.device import Device
  try: dev = Device["AMD"]
  except Exception as e:
    raise CaptureError(f"cannot open tinygrad's AMD device (/dev/kfd): {type(e).__name__}: {e}; run the exporter under the virtual "
                       "device: hcq virtual -- python tools/export_tinygrad.py --amd-jit ...") from None
  if dev.arch != ARCH:
    raise CaptureError(f"tinygrad's AMD device is a {dev.arch}; bundles hold gfx1100 code objects (amd_gfx1100) only")
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  if not isinstance(dev.renderer, AMDLLVMRenderer):
    raise CaptureError(f"tinygrad's AMD renderer is {type(dev.renderer).__name__}; only the LLVM path (AMDLLVMRenderer, DEV=AMD:LLVM) "
                       "is captured")
  if getattr(dev, "is_aql", False):
    raise CaptureError("tinygrad's AMD device uses AQL queues (AMD_AQL=1); the capture reads its PM4 queues: unset AMD_AQL")
  return dev


def sha256(data: bytes) -> str: return hashlib.sha256(data).hexdigest()


def decode_dispatches(words, pm4, gc, where: str) -> list[dict]:
  """Every DISPATCH_DIRECT of a PM4 stream (type-3 packets only, as tinygrad's AMDComputeQueue writes them), with the compute
  registers set before it: {pgm (COMPUTE_PGM_LO/HI: the code address >> 8), user (COMPUTE_USER_DATA_*), local
  (COMPUTE_NUM_THREAD_X/Y/Z), global (the packet's work-group counts)}."""
  sh = pm4.PACKET3_SET_SH_REG_START
  pgm_lo, user0 = gc.regCOMPUTE_PGM_LO.addr[0], gc.regCOMPUTE_USER_DATA_0.addr[0]
  nthreads = [getattr(gc, f"regCOMPUTE_NUM_THREAD_{d}").addr[0] for d in "XYZ"]
  regs: dict[int, int] = {}
  user: list[int] = []
  out, i = [], 0
  while i < len(words):
    h = words[i]
    if h >> 30 != 3: raise CaptureError(f"{where}: dword {i} of tinygrad's compute queue ({h:#x}) is not a PM4 type-3 header")
    n, op = ((h >> 16) & 0x3fff) + 1, (h >> 8) & 0xff
    body = words[i + 1:i + 1 + n]
    if len(body) != n: raise CaptureError(f"{where}: the PM4 packet at dword {i} runs past the end of tinygrad's compute queue")
    if op == pm4.PACKET3_SET_SH_REG:
      for k, v in enumerate(body[1:]): regs[sh + body[0] + k] = v
      if sh + body[0] == user0: user = list(body[1:])
    elif op == pm4.PACKET3_DISPATCH_DIRECT:
      missing = [r for r in (pgm_lo, pgm_lo + 1, *nthreads) if r not in regs]
      if missing: raise CaptureError(f"{where}: dispatch {len(out)} of tinygrad's compute queue without registers {missing}")
      out.append({"pgm": regs[pgm_lo] | regs[pgm_lo + 1] << 32, "user": user, "local": [regs[r] for r in nthreads], "global": list(body[:3])})
    i += 1 + n
  return out


def make_exporter_class(Exporter, ExportError):
  """The AMD exporter, a subclass of export_tinygrad.Exporter (imported there; passed in to avoid an import cycle)."""

  class AmdJitExporter(make_base_class(Exporter, ExportError)):
    DEVICE, GRAPH, EXPECTED_FROM, MODE = "AMD", "amd", "amd_gfx1100", "amd-jit"

    def __init__(self, args, flags):
      super().__init__(args, flags)
      from tinygrad.runtime import ops_amd
      self.ops_amd = ops_amd
      self.dev = open_device()
      self.objects: list[bytes] = []  # per program id: the code object tinygrad loaded
      self.launched: list[dict] = []  # per kernel launch: what its dispatch is checked against after the final call
      self.dispatches_checked = 0

    # ---------- launches ----------

    def kernel(self, where, call, inputs, var_vals, runtime, args_state, graph, graph_index):
      ast = call.src[0]
      info = ast.arg
      where = f"{where} ({info.function_name})"
      resolved = self.resolve_params(call, inputs)
      bufs = [resolved[g].buffer for g in info.globals]
      gsz, lsz, vals = self.kernel_sizes(info, var_vals, where)
      if info.runtimevars: raise ExportError(f"{where}: runtime variables {sorted(info.runtimevars)} are not exportable on AMD")
      prg = runtime if runtime is not None else self.get_runtime(bufs[0].device, ast)
      if type(prg).__name__ != "AMDProgram": raise ExportError(f"{where}: tinygrad runs it with {type(prg).__name__}, not an AMDProgram")
      pid = self.program(ast, prg, where)
      # one view per kernel parameter (ProgramInfo.globals order): the same buffer at each parameter tinygrad passes it to
      args = [self.view(b, f"{where} arg {k} (tinygrad slot {g})") for k, (g, b) in enumerate(zip(info.globals, bufs))]
      slot = {g: k for k, g in enumerate(info.globals)}
      try: outs, ins = [slot[s] for s in info.outs], [slot[s] for s in info.ins]
      except KeyError as e: raise ExportError(f"{where}: outs/ins refer to slot {e} which is not a buffer argument") from None
      entry = {"kind": "kernel", "program": pid, "name": info.function_name, "global_size": gsz, "local_size": lsz, "args": args,
               "vals": vals, "core_id_arg": None, "outs": outs, "ins": ins}
      if graph is not None: entry |= {"graph": graph, "graph_index": graph_index}
      self.launched.append({"entry": entry, "where": where, "prg": prg, "args_state": args_state, "graph": graph, "bufs": bufs})
      return entry

    def program(self, ast, prg, where) -> int:
      elf, info = ast.to_elf(), ast.arg
      lib = elf.lib
      if not isinstance(lib, bytes) or lib[:4] != b"\x7fELF": raise ExportError(f"{where}: the program's binary is not an ELF code object")
      if bytes(prg.lib) != lib: raise ExportError(f"{where}: the AMDProgram tinygrad launches holds another code object than the PROGRAM")
      raw, n_vars = list(elf.signature), len(info.vars)
      n_buf = len(raw) - n_vars
      # tinygrad's CLikeArgsState writes one 64-bit address per ProgramInfo.globals entry, then the values: the kernel's buffer
      # parameters must be those slots in that order
      if [slot for _, slot, _, _ in raw[:n_buf]] != list(info.globals):
        raise ExportError(f"{where}: buffer parameters {[s for _, s, _, _ in raw[:n_buf]]} are not the launch's buffers {list(info.globals)} "
                          "in order (tinygrad's kernel-argument block has one address per buffer)")
      signature = [{"name": name, "slot": j, "dtype": self.dtype_name(dt), "shape": list(shape)} for j, (name, _, dt, shape) in enumerate(raw)]
      for s in signature[n_buf:]:
        if s["dtype"] != "int32": raise ExportError(f"{where}: scalar argument {s['name']} has dtype {s['dtype']}, expected int32")
      key = (lib, elf.name, repr(signature))
      if (pid := self.program_keys.get(key)) is not None: return pid
      pid = self.program_keys[key] = len(self.programs)
      self.programs.append({"id": pid, "name": elf.name, "display_name": self.ansistrip(info.name), "symbol": elf.name,
                            "signature": signature, "n_buffer_args": n_buf, "vars": [s["name"] for s in signature[n_buf:]],
                            "core_id_arg": None, "objects": {}})
      self.objects.append(lib)
      return pid

    # ---------- the launches against tinygrad's dispatches ----------

    def run_jit(self, jit, example):
      out = super().run_jit(jit, example)
      self.check_dispatches()
      return out

    def check_dispatches(self):
      """After the final call: each launch's dispatch as tinygrad encoded it (a graph's queue as last submitted, else one
      encoded for the launch) has the launch's program, grid and kernel-argument bytes."""
      from tinygrad.helpers import to_mv
      self.sync()
      q0 = self.ops_amd.AMDComputeQueue(self.dev)
      pm4, gc = q0.pm4, q0.gc
      for g, runner in enumerate(self.graph_runners):
        mine = [k for k in self.launched if k["graph"] == g]
        queues = [q for d, q in runner.comp_queues.items() if d is self.dev]
        if len(queues) != 1 or len(runner.comp_queues) != 1:
          raise ExportError(f"graph {g}: {len(runner.comp_queues)} compute queues; one on {self.dev.device} is what a bundle holds")
        words = queues[0]._q[0:len(queues[0]._q)]
        got = decode_dispatches(words, pm4, gc, f"graph {g}")
        if len(got) != len(mine): raise ExportError(f"graph {g}: tinygrad's compute queue dispatches {len(got)} kernels, the bundle has {len(mine)}")
        for k, d in zip(mine, got): self.check_dispatch(k, d, k["args_state"], to_mv)
      for k in self.launched:
        if k["graph"] is not None: continue
        prg, entry = k["prg"], k["entry"]
        state = prg.fill_kernargs(tuple(b._buf for b in k["bufs"]), tuple(entry["vals"]), kernargs=self.alloc_kernargs(max(prg.kernargs_alloc_size, 0x100)))
        q = self.ops_amd.AMDComputeQueue(self.dev)
        try: q.exec(prg, state, tuple(entry["global_size"]), tuple(entry["local_size"]))
        except Exception as e: raise ExportError(f"{k['where']}: tinygrad's AMD dispatch encoding failed: {type(e).__name__}: {e}") from None
        got = decode_dispatches(list(q._q), pm4, gc, k["where"])
        if len(got) != 1: raise ExportError(f"{k['where']}: tinygrad encoded {len(got)} dispatches for one launch")
        self.check_dispatch(k, got[0], state, to_mv)

    def check_dispatch(self, k, d, state, to_mv):
      entry, prg, where = k["entry"], k["prg"], k["where"]
      if d["pgm"] != prg.prog_addr >> 8:
        raise ExportError(f"{where}: tinygrad's dispatch runs the code at {d['pgm'] << 8:#x}, the launch's program is at {prg.prog_addr:#x}")
      if d["global"] != entry["global_size"] or d["local"] != entry["local_size"]:
        raise ExportError(f"{where}: tinygrad dispatched {d['global']} work-groups of {d['local']}, the launch records "
                          f"{entry['global_size']} of {entry['local_size']}")
      kernarg = state.buf.va_addr
      if len(d["user"]) < 2 or d["user"][-2] | d["user"][-1] << 32 != kernarg:
        raise ExportError(f"{where}: the dispatch's user data {[hex(x) for x in d['user']]} does not end with the kernel-argument address {kernarg:#x}")
      # the block as the bundle lays it out: each view's address (its base buffer's address plus the offset), then the values
      sig = self.programs[entry["program"]]["signature"]
      n_buf = len(entry["args"])
      block = bytearray()
      for a in entry["args"]: block += (self.bases[a["buffer"]]._buf.va_addr + a["offset"]).to_bytes(8, "little")
      vsig = [(s["name"], s["slot"], raw[2], tuple(s["shape"])) for s, raw in zip(sig[n_buf:], prg.signature[n_buf:])]
      for (off, dt), v in zip(self.TinyELF.iter_sig(vsig, 8 * n_buf), entry["vals"]):
        block += bytes(off - len(block)) + (v & ((1 << (8 * dt.itemsize)) - 1)).to_bytes(dt.itemsize, "little")
      if len(block) > prg.kernargs_segment_size:
        raise ExportError(f"{where}: {len(block)} bytes of arguments for a kernarg segment of {prg.kernargs_segment_size} bytes")
      theirs = bytes(to_mv(kernarg, len(block)))
      if theirs != bytes(block):
        diff = next(i for i in range(len(block)) if block[i] != theirs[i])
        raise ExportError(f"{where}: tinygrad's kernel-argument block differs from the launch's views and values at byte {diff} "
                          + (f"(argument {diff // 8})" if diff < 8 * n_buf else "(the values)"))
      self.dispatches_checked += 1

    # ---------- writing ----------

    def write_programs(self, put):
      for p, co in zip(self.programs, self.objects):
        p["objects"]["amd_gfx1100"] = obj = {"file": f"prog_{p['id']:03d}_{p['name']}.gfx1100.co", "sha256": sha256(co), "nbytes": len(co)}
        put(obj["file"], co)

    def manifest_toolchain(self):
      ren = self.dev.renderer
      return {"device": "AMD", "dev_string": os.environ.get("DEV"), "renderer": type(ren).__name__, "compiler": type(ren.compiler).__name__,
              "arch": self.dev.arch, "flags": self.flags, "interface": type(self.dev.iface).__name__}

    def manifest_toolchains(self):
      ren = self.dev.renderer
      return {"amd_gfx1100": {"target": TARGET, "renderer": type(ren).__name__, "compiler": type(ren.compiler).__name__,
                              "produced_by": "tinygrad's AMD JIT (tools/export_tinygrad.py --amd-jit): the code objects tinygrad "
                                             "compiled, loaded and launched", "executed": True}}

  return AmdJitExporter


__all__ = ["CaptureError", "decode_dispatches", "make_exporter_class", "open_device", "setup_amd_environment"]
