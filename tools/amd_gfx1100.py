"""The AMD gfx1100 graph of a bundle (`tools/export_tinygrad.py --amd`).

Each CPU kernel of a capture is also rendered by tinygrad 0.14's AMD LLVM renderer (`AMD_LLVM=1`, `DEV=AMD:LLVM`:
`AMDLLVMRenderer(Target("AMD", "LLVM", "gfx1100"))`) from the kernel as the scheduler produced it, before the CPU
lowering, and compiled by `AMDLLVMCompiler("gfx1100")` on the system's libLLVM: no GPU and no ROCm. The GPU kernel has
its own optimisations (locals, upcasts, group reduces, WMMA), its own name, its own parameter order (the AST's buffer
slots it uses, `ProgramInfo.globals`) and its own launch grid (work-groups and work-group size, as tinygrad's HCQ AMD
runtime launches it). The bundle keeps them in a graph of its own (`target: "amd"`, manifest version 2) beside the CPU
graph: the same buffers, inputs and outputs (the same files), the AMD programs and launches. Its expected outputs are
the CPU's (`expected_from: "x86_64"`), so a gfx1100 run is compared within the bundle tolerance. examples/FORMAT.md
("AMD gfx1100 objects") has the layout.
"""

import hashlib

TARGET = ("AMD", "LLVM", "gfx1100")


class AmdError(Exception):
  pass


def sha256(data: bytes) -> str: return hashlib.sha256(data).hexdigest()


class AmdExporter:
  def __init__(self):
    from tinygrad.helpers import Target, ansistrip
    from tinygrad.codegen import to_program
    try:
      from tinygrad.renderer.llvmir import AMDLLVMRenderer
      self.renderer = AMDLLVMRenderer(Target(*TARGET))
    except Exception as e: raise AmdError(f"cannot create tinygrad's AMD LLVM renderer for gfx1100: {type(e).__name__}: {e}") from None
    self.to_program, self.ansistrip = to_program, ansistrip

  def toolchain(self) -> dict:
    cc = self.renderer.compiler
    return {"target": ":".join(TARGET), "renderer": type(self.renderer).__name__, "compiler": type(cc).__name__,
            "produced_by": "tools/export_tinygrad.py --amd: the scheduled kernel rendered by tinygrad's AMDLLVMRenderer and compiled "
                           "by AMDLLVMCompiler('gfx1100') on the system's libLLVM (to_program)"}

  def program(self, sink, where: str) -> dict:
    """Compile one scheduled kernel for gfx1100: {co, info, name, signature, n_buf}."""
    try: prg = self.to_program(sink, self.renderer)
    except Exception as e: raise AmdError(f"{where}: tinygrad's AMD LLVM renderer/compiler failed: {type(e).__name__}: {e}") from None
    info, elf = prg.arg, prg.to_elf()
    co = elf.lib
    if not isinstance(co, bytes) or co[:4] != b"\x7fELF": raise AmdError(f"{where}: the AMD compiler did not return an ELF code object")
    n_buf = len(info.globals)
    sig = list(elf.signature)
    if [s[1] for s in sig] != list(range(len(sig))) or len(sig) != n_buf + len(info.vars):
      raise AmdError(f"{where}: AMD signature slots {[s[1] for s in sig]} are not 0..n-1 with {n_buf} buffers")
    if any(name == "core_id" for name, *_ in sig): raise AmdError(f"{where}: the AMD kernel has a core_id argument")
    return {"co": co, "info": info, "name": info.function_name, "display_name": self.ansistrip(info.name), "sig": sig, "n_buf": n_buf}

  def launch(self, gp: dict, cpu_globals, var_vals, where: str) -> dict:
    """The AMD launch of a CPU launch: which CPU argument each AMD buffer parameter is, the grid and the vals."""
    info = gp["info"]
    global_size, local_size = info.launch_dims(var_vals)
    if local_size is None:
      raise AmdError(f"{where}: the AMD kernel has no local size (tinygrad would pick one by timing it on a device); not exportable")
    dims = []
    for d in (*global_size, *local_size):
      if not isinstance(d, int) and not (isinstance(d, float) and d.is_integer()): raise AmdError(f"{where}: non-integer AMD size {d}")
      dims.append(int(d))
    if dims[3] * dims[4] * dims[5] > 1024: raise AmdError(f"{where}: AMD work-group of {dims[3:]} exceeds 1024 work-items")
    try: args_of = [list(cpu_globals).index(g) for g in info.globals]
    except ValueError: raise AmdError(f"{where}: the AMD kernel reads buffer slots {list(info.globals)}, the CPU kernel {list(cpu_globals)}") from None
    slot = {g: k for k, g in enumerate(info.globals)}
    try: outs, ins = sorted(slot[s] for s in info.outs), sorted(slot[s] for s in info.ins)
    except KeyError as e: raise AmdError(f"{where}: AMD outs/ins refer to slot {e}, not a buffer argument") from None
    return {"global_size": dims[:3], "local_size": dims[3:], "vals": [int(x) for x in info.vals(var_vals)], "args_of": args_of,
            "outs": outs, "ins": ins}


def amd_graph(programs: list[dict], launches: list[dict], gpu_programs: list[dict], buffers, inputs, outputs, dtype_name, put) -> dict:
  """The `amd` graph: the CPU graph's buffers, inputs and outputs with the AMD programs (`gpu_programs[pid]` for CPU program
  pid, code objects written through `put`) and each launch's `_amd` part (popped from the CPU launch)."""
  progs = []
  for p, gp in zip(programs, gpu_programs):
    stem = p["file"][:-2]
    co = gp["co"]
    signature = [{"name": name, "slot": slot, "dtype": dtype_name(dt), "shape": list(shape)} for name, slot, dt, shape in gp["sig"]]
    for s in signature[gp["n_buf"]:]:
      if s["dtype"] != "int32": raise AmdError(f"program {p['id']}: AMD scalar argument {s['name']} has dtype {s['dtype']}, expected int32")
    obj = {"file": f"{stem}.gfx1100.co", "sha256": sha256(co), "nbytes": len(co)}
    put(obj["file"], co)
    progs.append({"id": p["id"], "name": gp["name"], "display_name": gp["display_name"], "symbol": gp["name"], "signature": signature,
                  "n_buffer_args": gp["n_buf"], "vars": [s["name"] for s in signature[gp["n_buf"]:]], "core_id_arg": None,
                  "objects": {"amd_gfx1100": obj}})
  out = []
  for l in launches:
    a = l.pop("_amd", None)
    if l["kind"] != "kernel": out.append(dict(l)); continue
    if a is None: raise AmdError(f"launch {l['name']}: no AMD launch recorded")
    out.append({"kind": "kernel", "program": l["program"], "name": progs[l["program"]]["name"], "global_size": a["global_size"],
                "local_size": a["local_size"], "args": [l["args"][k] for k in a["args_of"]], "vals": a["vals"], "core_id_arg": None,
                "outs": a["outs"], "ins": a["ins"]})
  return {"name": "amd", "target": "amd", "expected_from": "x86_64", "buffers": buffers, "inputs": inputs, "outputs": outputs,
          "programs": progs, "launches": out}
