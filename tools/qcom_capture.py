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
function other than tinygrad's HCQ graph, tinygrad's OpenCL renderer (QCOMCLRenderer needs Qualcomm's compiler). The launches,
buffers, copies, pickles and `--cpu-graph` are recorded as for `--amd-jit` (tools/hcq_jit.py); what is QCOM's is here.
"""
from __future__ import annotations

import os

from adreno_a630 import REGS, THREADSIZE, INVALID_REGID, AdrenoError, AdrenoExporter, regid_name, sha256
from hcq_jit import CaptureError, check_capture_environment, make_base_class

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


def setup_qcom_environment():
  """tinygrad's environment for a QCOM capture, set before tinygrad is imported; returns the flags recorded in the manifest."""
  check_capture_environment()
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


def make_exporter_class(Exporter, ExportError):
  """The QCOM exporter, a subclass of export_tinygrad.Exporter (imported there; passed in to avoid an import cycle)."""

  class QcomExporter(make_base_class(Exporter, ExportError)):
    DEVICE, GRAPH, EXPECTED_FROM, MODE = "QCOM", "qcom", "adreno_a630", "qcom-jit"

    def __init__(self, args, flags, dev=None):
      """`dev`: tinygrad's QCOM device (opened here when None); tools/test_qcom_images.py passes the host-memory stand-in of
      tools/adreno_a630.py to check the image metadata of kernels no device executes yet."""
      super().__init__(args, flags)
      from tinygrad.runtime import ops_qcom
      from tinygrad.runtime.support.hcq import HCQBuffer
      from tinygrad.helpers import is_image_shape
      self.qcom, self.HCQBuffer, self.is_image_shape = ops_qcom, HCQBuffer, is_image_shape
      self.dev = open_device() if dev is None else dev
      try: self.ad = AdrenoExporter()  # blob layout, disassembly, packet decoding and toolchain facts shared with --adreno
      except AdrenoError as e: raise ExportError(f"--qcom-jit: {e}") from None
      self.gpu: list[dict] = []        # per program id: {entry, blob, asm, q}

    # ---------- launches ----------

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

    def write_programs(self, put):
      for p, gp in zip(self.programs, self.gpu):
        stem = f"prog_{p['id']:03d}_{p['name']}"
        if gp["entry"]["regs"] is None: raise ExportError(f"program {p['id']}: no launch of it reached the metadata pass")
        p["objects"]["adreno_a630"] = {"file": f"{stem}.a630.bin", "sha256": sha256(gp["blob"]), "nbytes": len(gp["blob"])}
        p["adreno"] = gp["entry"]
        put(p["objects"]["adreno_a630"]["file"], gp["blob"])
        put(gp["entry"]["disasm_file"], gp["asm"])

    def manifest_toolchain(self):
      return {"device": "QCOM", "dev_string": os.environ.get("DEV"), "renderer": type(self.dev.renderer).__name__,
              "compiler": type(self.dev.renderer.compiler).__name__, "arch": repr(self.dev.renderer.target),
              "flags": self.flags, "chip_id": str(getattr(self.dev, "gpu_id", None))}

    def manifest_toolchains(self):
      return {"adreno_a630": self.ad.toolchain() | {"produced_by": "tinygrad's QCOM JIT (tools/export_tinygrad.py --qcom-jit): the QCOMProgram "
                                                                  "libs tinygrad compiled and ran, host pointers in the two structs zeroed",
                                                   "executed": True}}

  return QcomExporter


__all__ = ["CaptureError", "QCOM_FLAGS", "make_exporter_class", "setup_qcom_environment"]
