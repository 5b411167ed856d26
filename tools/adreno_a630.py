"""Adreno 630 objects for tools/export_tinygrad.py --adreno.

Each CPU kernel of a capture is also rendered by tinygrad 0.14's IR3 renderer (from the kernel as the scheduler produced it, before
the CPU lowering) and compiled by Mesa's ir3 compiler from the `tinymesa` package. tinygrad's own QCOM code then runs on a stand-in
device (host memory in place of KGSL): `QCOMProgram` reads the blob, `QCOMArgsState` fills a kernarg block and
`QCOMComputeQueue.exec` encodes one dispatch. The bundle's `programs[].adreno` metadata is taken from those objects and from the
encoded packets, and is checked against them: the kernarg block rebuilt from the metadata must equal the bytes tinygrad wrote.

The blob is written as tinygrad's compiler returns it, except that the host pointers inside the two Mesa structs are set to zero
(they are heap addresses of the compiling process, which tinygrad's loader never reads), so that a re-export is byte-identical.

The format is documented in examples/FORMAT.md ("Adreno 630 objects").
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.metadata
import io
import itertools

TINYMESA_VERSION = "25.2.7.2"
TARGET = ("QCOM", "IR3", "a630")
THREADSIZE = "THREAD64"  # tinygrad's QCOMComputeQueue.exec always dispatches with 64-wide waves
INVALID_REGID = 0xfc     # a3xx regid(63, 0): "no register" / "no constant"
# the program-specific registers `programs[].adreno.regs` records, in this order (Mesa 25 names; values as tinygrad writes them)
REGS = ("SP_CS_CNTL_0", "SP_CS_CNTL_1", "SP_CS_BOOLEAN_CF_MASK", "SP_CS_PROGRAM_COUNTER_OFFSET", "SP_CS_PVT_MEM_PARAM",
        "SP_CS_PVT_MEM_SIZE", "SP_CS_CONST_CONFIG", "SP_CS_PVT_MEM_STACK_OFFSET", "SP_CS_INSTR_SIZE", "SP_CS_CONFIG", "SP_MODE_CNTL",
        "TPL1_MODE_CNTL", "SP_CS_CONST_CONFIG_0", "SP_CS_WGE_CNTL")


class AdrenoError(Exception):
  """A kernel the Adreno export cannot represent; the message says what."""


def sha256(data: bytes) -> str: return hashlib.sha256(data).hexdigest()


def regid_name(regid: int) -> str:
  """a3xx register id (4 * n + component) as `rN.c`; "none" for the invalid id 0xfc (the shader does not read that value)."""
  return "none" if regid == INVALID_REGID else f"r{regid >> 2}.{'xyzw'[regid & 3]}"


def pointer_offsets(typ, base=0, out=None) -> set[int]:
  """Byte offsets of every pointer inside a tinygrad autogen ctypes struct (nested structs and arrays included)."""
  out = set() if out is None else out
  if hasattr(typ, "_real_fields_"):
    for _, ftyp, off, *_ in typ._real_fields_: pointer_offsets(ftyp, base + off, out)
  elif isinstance(typ, type) and issubclass(typ, ctypes.Array):
    size = ctypes.sizeof(typ._type_)
    for i in range(typ._length_): pointer_offsets(typ._type_, base + i * size, out)
  elif isinstance(typ, type) and issubclass(typ, (ctypes._Pointer, ctypes.c_void_p, ctypes.c_char_p, ctypes._CFuncPtr)):
    out.add(base)
  return out


class StandInAllocator:
  """Host memory with stable addresses in place of KGSL GPU objects; never freed while the exporter runs."""
  def __init__(self, dev):
    self.dev, self.keep = dev, []

  def alloc(self, size, spec=None):
    from tinygrad.runtime.support.hcq import HCQBuffer, MMIOInterface
    mem = ctypes.create_string_buffer(max(1, size))
    self.keep.append(mem)
    addr = ctypes.addressof(mem)
    return HCQBuffer(va_addr=addr, size=size, view=MMIOInterface(addr, size, fmt='B'), owner=self.dev)

  def free(self, buf, size, spec=None): pass


class StandInDevice:
  """What QCOMProgram, QCOMArgsState and QCOMComputeQueue use of a QCOMDevice, without /dev/kgsl-3d0."""
  device = "QCOM"

  def __init__(self, renderer):
    self.renderer, self.allocator = renderer, StandInAllocator(self)
    self.prof_prg_counter = itertools.count(0)
    self.dummy_addr = self.allocator.alloc(0x1000).va_addr
    self.border_color_buf = self.allocator.alloc(0x1000)
    self.stack_request = 0

  def _ensure_stack_size(self, sz):
    self.stack_request = sz
    self._stack = self.allocator.alloc(sz)


class AdrenoExporter:
  def __init__(self, check_versions=True):
    try: version = importlib.metadata.version("tinymesa")
    except importlib.metadata.PackageNotFoundError:
      raise AdrenoError(f"--adreno needs the tinymesa package (pip install tinymesa=={TINYMESA_VERSION})") from None
    if check_versions and version != TINYMESA_VERSION:
      raise AdrenoError(f"tinymesa {version} is installed; --adreno reproduces the bundles' shaders with tinymesa {TINYMESA_VERSION}")
    self.tinymesa_version = version
    from tinygrad.helpers import Target, ansistrip
    from tinygrad.renderer.nir import IR3Renderer
    from tinygrad.runtime.autogen import mesa
    from tinygrad.runtime import ops_qcom
    from tinygrad.runtime.support.compiler_mesa import IR3Compiler, disas_adreno
    from tinygrad.codegen import to_program
    self.mesa, self.qcom, self.IR3Compiler, self.disas_adreno = mesa, ops_qcom, IR3Compiler, disas_adreno
    self.to_program, self.ansistrip = to_program, ansistrip
    try: self.renderer = IR3Renderer(Target(*TARGET))
    except Exception as e: raise AdrenoError(f"cannot create tinygrad's IR3 renderer with tinymesa: {e}") from None
    self.target = repr(self.renderer.target)
    self.dev = StandInDevice(self.renderer)
    self.variant_nbytes = ctypes.sizeof(mesa.struct_ir3_shader_variant)
    self.const_state_nbytes = ctypes.sizeof(mesa.struct_ir3_const_state)
    self.pointers = (sorted(pointer_offsets(mesa.struct_ir3_shader_variant)), sorted(pointer_offsets(mesa.struct_ir3_const_state)))
    self.reg_ids = {name: getattr(mesa, f"REG_A6XX_{name}") for name in REGS}

  def toolchain(self) -> dict:
    cc = self.renderer.compiler
    return {"target": self.target, "renderer": type(self.renderer).__name__, "compiler": type(cc).__name__,
            "tinymesa_version": self.tinymesa_version, "mesa": f"{'.'.join(self.tinymesa_version.split('.')[:3])} (tinymesa {self.tinymesa_version})",
            "gpu_id": cc.dev_id.gpu_id, "chip_id": cc.dev_id.chip_id,
            "compiler_options": {"disable_cache": bool(cc.cc.options.disable_cache), "has_preamble": bool(cc.cc.has_preamble)},
            "ir3_struct_sizes": {"ir3_shader_variant": self.variant_nbytes, "ir3_const_state": self.const_state_nbytes},
            "produced_by": "tools/export_tinygrad.py --adreno: the kernel AST rendered by tinygrad IR3Renderer and compiled by IR3Compiler "
                           "(to_program), host pointers in the two structs zeroed",
            "executed": False}

  # ---------- one program ----------

  def compile(self, sink, where: str):
    """The GPU PROGRAM (tinygrad's to_program with the IR3 renderer) for the scheduled kernel `sink`."""
    try: prg = self.to_program(sink, self.renderer)
    except Exception as e: raise AdrenoError(f"{where}: tinygrad's IR3 renderer/compiler failed: {type(e).__name__}: {e}") from None
    return prg

  def blob(self, lib: bytes, where: str) -> tuple[bytes, dict]:
    """The blob with the host pointers zeroed, and its layout."""
    v, cs, imm, image = self.IR3Compiler.unpack_lib(lib)
    nv, nc = self.variant_nbytes, self.const_state_nbytes
    if len(lib) != nv + nc + len(imm) + len(image) or len(image) != v.info.size:
      raise AdrenoError(f"{where}: IR3 blob of {len(lib)} bytes does not split into variant/const_state/immediates/image")
    out, zeroed = bytearray(lib), 0
    for base, offsets in ((0, self.pointers[0]), (nv, self.pointers[1])):
      for off in offsets:
        if any(out[base + off:base + off + 8]):
          out[base + off:base + off + 8] = bytes(8)
          zeroed += 1
    imm_off = nv + nc
    layout = {"variant_offset": 0, "variant_nbytes": nv, "const_state_offset": nv, "const_state_nbytes": nc,
              "immediates_offset": imm_off, "immediates_nbytes": len(imm), "image_offset": imm_off + len(imm), "image_nbytes": len(image),
              "image_sha256": sha256(image), "zeroed_host_pointers": zeroed}
    return bytes(out), layout

  def disassembly(self, image: bytes, gpu_id: int) -> bytes:
    """Mesa's ir3 disassembly of the shader code, as tinygrad's IR3Compiler.disassemble prints it."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf): self.disas_adreno(image, gpu_id)
    return buf.getvalue().encode()

  def program(self, sink, where: str, stem: str) -> dict:
    """Compile one kernel; returns {entry, blob, asm, info, qprg, n_buf}: `entry` is the manifest's `adreno` object (its `regs`,
    `consts.load_vec4`, `consts.args` and `consts.vals` are filled at the program's first launch), `blob` the .a630.bin bytes,
    `asm` the disassembly, `info` the GPU ProgramInfo and `qprg` tinygrad's QCOMProgram on the stand-in device."""
    prg = self.compile(sink, where)
    info, elf = prg.arg, prg.to_elf()
    lib = elf.lib
    blob, layout = self.blob(lib, where)
    v, cs, imm, image = self.IR3Compiler.unpack_lib(lib)
    try: q = self.qcom.QCOMProgram(self.dev, elf)
    except Exception as e: raise AdrenoError(f"{where}: tinygrad's QCOMProgram refused the IR3 blob: {type(e).__name__}: {e}") from None
    if not q.NIR: raise AdrenoError(f"{where}: the stand-in device did not select the IR3 path")
    entry = self.entry(q, elf, lib, v, cs, image, layout, info.function_name, self.ansistrip(info.name), len(info.globals), where)
    entry["disasm_file"] = f"{stem}.a630.asm"
    asm = self.disassembly(image, self.renderer.compiler.dev_id.gpu_id)
    return {"entry": entry, "blob": blob, "asm": asm, "info": info, "qprg": q, "n_buf": len(info.globals)}

  def entry(self, q, elf, lib, v, cs, image, layout, function_name, display_name, n_buf, where) -> dict:
    """The `adreno` object of tinygrad's QCOMProgram `q` (regs, load_vec4, args and vals are filled from a dispatch)."""
    mesa = self.mesa
    signature = [{"name": name, "slot": slot, "dtype": None, "shape": list(shape), "_dt": dt} for name, slot, dt, shape in elf.signature]
    if [s["slot"] for s in signature] != list(range(len(signature))) or len(signature) < n_buf:
      raise AdrenoError(f"{where}: GPU signature slots {[s['slot'] for s in signature]} are not 0..n-1 with {n_buf} buffers")
    if any(s["name"] == "core_id" for s in signature): raise AdrenoError(f"{where}: the GPU kernel has a core_id argument")
    for s in signature[:n_buf]:
      if is_image(s["shape"]): s["image"] = True
    allocs = {}
    for kind, name in sorted(mesa.enum_ir3_const_alloc_type.items()):
      if kind >= mesa.IR3_CONST_ALLOC_MAX: continue
      a = cs.allocs.consts[kind]
      if a.size_vec4: allocs[name.removeprefix("IR3_CONST_ALLOC_").lower()] = {"offset_vec4": a.offset_vec4, "size_vec4": a.size_vec4}
    entry = {
      "arch": "a630", "target": self.target, "function_name": function_name, "display_name": display_name,
      "signature": signature, "vars": [s["name"] for s in signature[n_buf:]],
      "blob": layout, "image_size": q.image_size, "instr_size_128": -(-q.image_size // 128), "prg_offset": q.prg_offset,
      "instrs_count": v.info.instrs_count, "threadsize": THREADSIZE, "fregs": q.fregs, "hregs": q.hregs, "branchstack": q.brnchstck,
      "pvtmem": q.pvtmem, "shmem": q.shmem, "pvtmem_size_per_item": q.pvtmem_size_per_item, "pvtmem_size_total": q.pvtmem_size_total,
      "hw_stack_offset": q.hw_stack_offset, "stack_bytes": 4 * q.hw_stack_offset, "shared_size": q.shared_size,
      "max_threads": q.max_threads, "wgid": q.wgid, "wgid_reg": regid_name(q.wgid), "lid": q.lid, "lid_reg": regid_name(q.lid),
      "wgsz": q.wgsz,
      "consts": {"kernarg_alloc_size": q.kernargs_alloc_size, "load_vec4": None, "buf_off": q.buf_off, "args": [], "vals": [],
                 "immediates": [{"offset": off, "size": size, "value": val} for val, off, size in q.consts_info],
                 "local_size_offset": None if q.wgsz == INVALID_REGID else q.wgsz * 4,
                 "max_const_offset_vec4": cs.allocs.max_const_offset_vec4, "allocs": allocs},
      "descriptors": {"tex_cnt": q.tex_cnt, "ibo_cnt": q.ibo_cnt, "samp_cnt": q.samp_cnt, "tex_off": q.tex_off, "ibo_off": q.ibo_off,
                      "samp_off": q.samp_off, "tex_to_image": list(q.tex_to_image[:q.tex_cnt]), "samplers": list(q.samplers)},
      "regs": None,
    }
    if q.tex_cnt or q.ibo_cnt or q.samp_cnt:  # IMAGE-SCHEMA.md (plain kernels keep the manifest they always had)
      entry["descriptors"] |= {"images": [], "sampler_words": [list(q.samplers[4 * i:4 * i + 4]) for i in range(q.samp_cnt)]}
    return entry

  def entry_from_dispatch(self, q, elf, words, block, bufs, vals, lsz, where) -> tuple[dict, bytes]:
    """The `adreno` object and the blob of QCOMProgram `q` (made from TinyELF `elf`) from one dispatch tinygrad encoded on a real
    (or virtual) QCOM device: `words` what QCOMComputeQueue.exec appended, `block` the kernarg block QCOMArgsState wrote for the
    buffers at device addresses `bufs` and the integer values `vals`."""
    lib = elf.lib
    blob, layout = self.blob(lib, where)
    v, cs, imm, image = self.IR3Compiler.unpack_lib(lib)
    entry = self.entry(q, elf, lib, v, cs, image, layout, q.name, q.name, len(bufs), where)
    self.fill_dispatch(q, entry, list(range(len(bufs))), bufs, vals, lsz, words, block, where)
    finish_signature(entry, lambda dt: dt.name if hasattr(dt, "name") else str(dt))
    return entry, blob

  # ---------- one launch ----------

  def launch(self, gp: dict, cpu_globals, var_vals, where: str) -> dict:
    """gpu_global_size/gpu_local_size/gpu_vals of a launch; on the program's first launch, also fills `regs`, `load_vec4` and the
    kernarg layout from a dispatch tinygrad encodes on the stand-in device, and checks the layout against tinygrad's bytes."""
    info, q, entry = gp["info"], gp["qprg"], gp["entry"]
    global_size, local_size = info.launch_dims(var_vals)
    if local_size is None:
      raise AdrenoError(f"{where}: the GPU kernel has no local size (tinygrad would pick one by timing it on a device); not exportable")
    dims = []
    for d in (*global_size, *local_size):
      if not isinstance(d, int) and not (isinstance(d, float) and d.is_integer()): raise AdrenoError(f"{where}: non-integer GPU size {d}")
      dims.append(int(d))
    gsz, lsz = dims[:3], dims[3:]
    total = lsz[0] * lsz[1] * lsz[2]
    if total > q.max_threads:
      raise AdrenoError(f"{where}: GPU work-group of {total} threads exceeds max_threads {q.max_threads} (tinygrad refuses this launch)")
    vals = [int(x) for x in info.vals(var_vals)]
    # which CPU launch argument each GPU buffer parameter is (both index the same kernel's PARAM slots)
    try: args_of = [list(cpu_globals).index(g) for g in info.globals]
    except ValueError: raise AdrenoError(f"{where}: the GPU kernel reads a buffer the CPU kernel does not take") from None
    if entry["regs"] is None: self.first_launch(gp, args_of, vals, gsz, lsz, where)
    elif entry["consts"]["args"] and [a["arg"] for a in entry["consts"]["args"]] != args_of:
      raise AdrenoError(f"{where}: GPU argument order differs between launches of one program")
    return {"gpu_global_size": gsz, "gpu_local_size": lsz, "gpu_vals": vals}

  def first_launch(self, gp, args_of, vals, gsz, lsz, where):
    q, entry = gp["qprg"], gp["entry"]
    n_buf = gp["n_buf"]
    # stand-in buffers with recognisable addresses; tinygrad fills the kernarg block and encodes one dispatch
    bufs = [self.dev.allocator.alloc(64) for _ in range(n_buf)]
    kernargs = self.dev.allocator.alloc(max(q.kernargs_alloc_size, 4096))
    queue = self.qcom.QCOMComputeQueue(self.dev)
    try:
      state = q.fill_kernargs(tuple(bufs), tuple(vals), kernargs=kernargs)
      queue.exec(q, state, tuple(gsz), tuple(lsz))
    except Exception as e: raise AdrenoError(f"{where}: tinygrad's QCOM dispatch encoding failed: {type(e).__name__}: {e}") from None
    tinygrad_block = bytes(kernargs.cpu_view().view(size=q.kernargs_alloc_size)[:])
    self.fill_dispatch(q, entry, args_of, [b.va_addr for b in bufs], vals, lsz, list(queue._q), tinygrad_block, where)

  def fill_dispatch(self, q, entry, args_of, addrs, vals, lsz, words, tinygrad_block, where):
    """`regs`, `load_vec4`, the kernarg layout and the image descriptors of `entry` from one dispatch tinygrad encoded (`words`)
    and the kernarg block it wrote (`tinygrad_block`) for buffers at `addrs`; checks that the metadata rebuilds that block."""
    consts, n_buf, sig = entry["consts"], len(addrs), entry["signature"]
    regs, load_vec4 = self.decode(words, where)
    entry["regs"] = {name: {"reg": self.reg_ids[name], "value": regs[self.reg_ids[name]]} for name in REGS if self.reg_ids[name] in regs}
    missing = [name for name in REGS if name not in entry["regs"]]
    if missing: raise AdrenoError(f"{where}: tinygrad's dispatch did not write {missing}")
    consts["load_vec4"] = load_vec4
    # kernarg layout: the plain buffers' addresses (GPU signature order, images left out as QCOMArgsState does) then the integer
    # values; images are descriptors at tex_off/ibo_off (IMAGE-SCHEMA.md)
    from tinygrad.device import TinyELF
    plain = [s for s in sig[:n_buf] if not s.get("image")]
    consts["args"] = [{"arg": args_of[s["slot"]], "slot": s["slot"], "offset": q.buf_off + 8 * k, "size": 8, "kind": "u64 buffer address"}
                      for k, s in enumerate(plain)]
    vsig = [(s["name"], s["slot"], s["_dt"], tuple(s["shape"])) for s in sig[n_buf:]]
    consts["vals"] = [{"name": s["name"], "offset": q.buf_off + off, "size": dt.itemsize, "dtype": self.np_dtype(dt)}
                      for s, (off, dt) in zip(sig[n_buf:], TinyELF.iter_sig(vsig, len(plain) * 8))]
    d = entry["descriptors"]
    if "images" in d:
      d["images"] = self.images(q, sig[:n_buf], tinygrad_block, where)
      for im in d["images"]: im["arg"] = args_of[im["slot"]]  # which launch argument it is (as consts.args[].arg)
    # the metadata must rebuild tinygrad's block exactly
    block = bytearray(q.kernargs_alloc_size)
    def put(off, size, value, what):
      if off < 0 or off + size > len(block): raise AdrenoError(f"{where}: {what} at [{off}, {off + size}) lies outside the kernarg block")
      block[off:off + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    for im in consts["immediates"]: put(im["offset"], im["size"], im["value"], "an immediate")
    for a in consts["args"]: put(a["offset"], 8, addrs[a["slot"]], f"argument {a['slot']}")
    for v, val in zip(consts["vals"], vals): put(v["offset"], v["size"], val, f"value {v['name']}")
    if consts["local_size_offset"] is not None:
      for i, l in enumerate(lsz): put(consts["local_size_offset"] + 4 * i, 4, l, "the local size")
    for im in d.get("images", []):
      for kind, base in (("texture", d["tex_off"]), ("ibo", d["ibo_off"])):
        if im[kind] is None: continue
        ws = list(im[f"{'tex' if kind == 'texture' else 'ibo'}_words"])
        a = addrs[im["slot"]]
        ws[4], ws[5] = a & 0xffffffff, a >> 32  # as tinygrad's data64_le
        for j, w in enumerate(ws): put(base + 0x40 * im[kind] + 4 * j, 4, w, f"{kind} descriptor of slot {im['slot']}")
    for i, sw in enumerate(d.get("sampler_words", [])):
      for j, w in enumerate(sw): put(d["samp_off"] + 16 * i + 4 * j, 4, w, f"sampler {i}")
    if bytes(block) != tinygrad_block:
      diff = next(i for i in range(len(block)) if block[i] != tinygrad_block[i])
      raise AdrenoError(f"{where}: the kernarg layout does not reproduce tinygrad's block (first difference at byte {diff})")

  def images(self, q, bufsig, block, where) -> list[dict]:
    """`descriptors.images` (IMAGE-SCHEMA.md): which texture / IBO each image parameter is (QCOMArgsState's assignment: the first
    ibo_cnt images are the IBOs, texture i is image ibo_cnt + tex_to_image[i]) and its descriptor words as tinygrad wrote them,
    the address dwords 4 and 5 zeroed."""
    imgs = [s for s in bufsig if s.get("image")]
    out = []
    for k, s in enumerate(imgs):
      h, w, _ = s["shape"]
      itemsize = s["_dt"].itemsize
      if itemsize not in (2, 4): raise AdrenoError(f"{where}: image parameter {s['slot']} has {itemsize}-byte elements")
      tex = [i for i in range(q.tex_cnt) if q.ibo_cnt + q.tex_to_image[i] == k]
      def words(off):
        ws = [int.from_bytes(block[off + 4 * j:off + 4 * j + 4], "little") for j in range(16)]
        ws[4] = ws[5] = 0
        return ws
      out.append({"slot": s["slot"], "texture": tex[0] if tex else None, "ibo": k if k < q.ibo_cnt else None, "width": w, "height": h,
                  "format": "float16" if itemsize == 2 else "float32", "pitch": w * 4 * itemsize,
                  "tex_words": words(q.tex_off + 0x40 * tex[0]) if tex else None,
                  "ibo_words": words(q.ibo_off + 0x40 * k) if k < q.ibo_cnt else None})
    return out

  @staticmethod
  def np_dtype(dt) -> str:
    import numpy as np
    return np.dtype(dt.fmt).name

  def decode(self, words: list[int], where: str) -> tuple[dict[int, int], int]:
    """Register values (last write wins) and the constant load size of one encoded dispatch."""
    mesa = self.mesa
    regs, load_vec4, i = {}, None, 0
    while i < len(words):
      h = words[i]
      if h >> 28 == mesa.CP_TYPE4_PKT >> 28:
        reg, cnt = (h >> 8) & 0x3ffff, h & 0x7f
        for k in range(cnt): regs[reg + k] = words[i + 1 + k]
      elif h >> 28 == mesa.CP_TYPE7_PKT >> 28:
        op, cnt = (h >> 16) & 0x7f, h & 0x3fff
        if op == mesa.CP_LOAD_STATE6_FRAG:
          w0 = words[i + 1]
          st = (w0 & mesa.CP_LOAD_STATE6_0_STATE_TYPE__MASK) >> mesa.CP_LOAD_STATE6_0_STATE_TYPE__SHIFT
          if st == mesa.ST_CONSTANTS and load_vec4 is None:
            load_vec4 = (w0 & mesa.CP_LOAD_STATE6_0_NUM_UNIT__MASK) >> mesa.CP_LOAD_STATE6_0_NUM_UNIT__SHIFT
      else: raise AdrenoError(f"{where}: unexpected packet header {h:#010x} at word {i} of tinygrad's dispatch")
      i += 1 + cnt
    if load_vec4 is None: raise AdrenoError(f"{where}: tinygrad's dispatch has no constant load")
    return regs, load_vec4


def is_image(shape) -> bool:
  """tinygrad's is_image_shape: an image parameter is (height, width, 4)."""
  return shape is not None and len(shape) == 3 and shape[-1] == 4


def finish_signature(entry: dict, dtype_name) -> None:
  """Replace the tinygrad dtypes kept for the layout pass by their manifest names (an image's by its element type)."""
  for s in entry["signature"]:
    dt = s.pop("_dt")
    s["dtype"] = ("float16" if dt.itemsize == 2 else "float32") if s.get("image") else dtype_name(dt)


__all__ = ["AdrenoError", "AdrenoExporter", "finish_signature"]
