#!/usr/bin/env python3
"""Check a `tg-cpu-bundle` (version 1 or 2) directory without executing it.

Version 2 (`--qcom-jit`): each of `graphs` is checked as a version 1 bundle's lists (a `qcom` graph's programs carry Adreno
objects only), the graphs take and return the same inputs and outputs, and every image binding carries its view
(`launches[].args[j].image`: width and height the parameter's shape, format the arg's dtype, rows within the view, a
64-byte aligned offset); an older bundle's `buffers[].image` is checked the same way. Image kernels' descriptors: one entry
per image parameter, IBOs first, tinygrad's words with the address dwords zero, one sampler per texture.

Structure: every file the manifest names exists and matches its sha256/nbytes; ids are list indices; views lie inside their
buffers and are 16-byte aligned; launches match their program's signature (argument count, dtypes, sizes, vals, core_id);
objects are ELF64 ET_REL for the right machine whose `symbol` is a GLOBAL FUNC at .text offset 0 and whose relocations are of
the types the bundle README allows. Data flow: replaying the launch list in order, every byte a launch reads from a
scratch/output buffer was written before, inputs and weights are never written, and every output is fully written.

Numbers (optional, needs numpy): with `--model FILE`, the model's `reference(inputs, seed)` is evaluated on the bundle's
input bytes and compared with `expected_*.bin` (|got - ref| <= atol + rtol * |ref|).

Adreno 630 objects (when present, or required with `--adreno`): every program has one, `toolchains.adreno_a630` describes
them, the blob splits into its four parts as `adreno.blob` says (image hash, immediates equal to `consts.immediates`), the
derived fields follow from the footprints as tinygrad computes them, the kernarg layout (buffer addresses, values, immediates,
local size) fits the block without overlaps, the program registers agree with the metadata (field positions from Mesa's a6xx.xml),
and every kernel launch has a GPU grid whose work-group fits `max_threads`, GPU values for the GPU kernel's vars, and arguments
large enough for the GPU signature.

Structure against another bundle (optional): with `--like REF_DIR`, the manifest must have the same key paths and JSON types
as REF_DIR's (fields of the Adreno option are ignored).

Same GPU objects as another bundle (optional): with `--same-adreno REF_DIR`, every `.a630.bin`/`.a630.asm` file must equal
REF_DIR's byte for byte, and the Adreno manifest fields (`programs[].adreno`, `objects.adreno_a630`, the launches' `gpu_*`,
`toolchains.adreno_a630` less `produced_by`) must be the same JSON, key order included. A re-export of the same kernels gives this.

Usage: python tools/check_bundle.py DIR [--model tools/models/mlp.py] [--seed N] [--atol 1e-5] [--rtol 1e-4] [--like REF_DIR] [--adreno]
       [--same-adreno REF_DIR]
Exit status 0 when every check passes, 1 otherwise; each problem is printed on its own line.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import struct
import sys

ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4,
            "float32": 4, "int64": 8, "uint64": 8, "float64": 8}
ROLES = ("input", "weight", "output", "scratch")
EM_X86_64, EM_AARCH64 = 62, 183
# relocation types the bundle README allows, per machine
RELOCS = {EM_X86_64: {2: "R_X86_64_PC32", 4: "R_X86_64_PLT32"},
          EM_AARCH64: {275: "ADR_PREL_PG_HI21", 277: "ADD_ABS_LO12_NC", 278: "LDST8_ABS_LO12_NC", 284: "LDST16_ABS_LO12_NC",
                       285: "LDST32_ABS_LO12_NC", 286: "LDST64_ABS_LO12_NC", 299: "LDST128_ABS_LO12_NC", 282: "JUMP26", 283: "CALL26"}}
SHT_SYMTAB, SHT_RELA, SHT_REL = 2, 4, 9
# Adreno: a6xx register offsets (Mesa a6xx.xml) of the registers `programs[].adreno.regs` records
ADRENO_REGS = {"SP_CS_CNTL_0": 0xa9b0, "SP_CS_CNTL_1": 0xa9b1, "SP_CS_BOOLEAN_CF_MASK": 0xa9b2, "SP_CS_PROGRAM_COUNTER_OFFSET": 0xa9b3,
               "SP_CS_PVT_MEM_PARAM": 0xa9b6, "SP_CS_PVT_MEM_SIZE": 0xa9b9, "SP_CS_CONST_CONFIG": 0xb987, "SP_CS_PVT_MEM_STACK_OFFSET": 0xa9bd,
               "SP_CS_INSTR_SIZE": 0xa9bc, "SP_CS_CONFIG": 0xa9bb, "SP_MODE_CNTL": 0xab00, "TPL1_MODE_CNTL": 0xb309,
               "SP_CS_CONST_CONFIG_0": 0xb997, "SP_CS_WGE_CNTL": 0xb998}
ADRENO_KEYS = ("arch", "target", "function_name", "display_name", "signature", "vars", "blob", "image_size", "instr_size_128", "prg_offset",
               "instrs_count", "threadsize", "fregs", "hregs", "branchstack", "pvtmem", "shmem", "pvtmem_size_per_item", "pvtmem_size_total",
               "hw_stack_offset", "stack_bytes", "shared_size", "max_threads", "wgid", "wgid_reg", "lid", "lid_reg", "wgsz", "consts",
               "descriptors", "regs", "disasm_file")
ADRENO_TOOLCHAIN_KEYS = ("target", "renderer", "compiler", "tinymesa_version", "mesa", "gpu_id", "chip_id", "compiler_options",
                         "ir3_struct_sizes", "produced_by", "executed")


def next_pow2(x: int) -> int: return 1 if x <= 1 else 1 << (x - 1).bit_length()
def round_up(x: int, a: int) -> int: return (x + a - 1) // a * a
def regid_name(r: int) -> str: return "none" if r == 0xfc else f"r{r >> 2}.{'xyzw'[r & 3]}"


class Checker:
  def __init__(self, root: str, require_adreno: bool = False):
    self.root, self.errors, self.warnings, self.checks = root, [], [], 0
    self.require_adreno = require_adreno
    self.require_amd = False

  def fail(self, msg: str): self.errors.append(getattr(self, "where", "") + msg)

  def expect(self, cond: bool, msg: str) -> bool:
    self.checks += 1
    if not cond: self.fail(msg)
    return cond

  def read(self, name, what) -> bytes | None:
    if not isinstance(name, str) or os.sep in name or name.startswith("."):
      self.fail(f"{what}: bad file name {name!r}")
      return None
    path = os.path.join(self.root, name)
    if not self.expect(os.path.isfile(path), f"{what}: file {name} is missing"): return None
    with open(path, "rb") as f: return f.read()

  def file_entry(self, entry, what) -> bytes | None:
    """A {file, sha256, nbytes?} entry: the file exists and matches."""
    data = self.read(entry.get("file"), what)
    if data is None: return None
    self.expect(hashlib.sha256(data).hexdigest() == entry.get("sha256"), f"{what}: sha256 of {entry.get('file')} does not match")
    if "nbytes" in entry: self.expect(len(data) == entry["nbytes"], f"{what}: {entry['file']} has {len(data)} bytes, manifest says {entry['nbytes']}")
    return data

  # ---------- ELF ----------

  def check_elf(self, data: bytes, machine: int, symbol: str, what: str):
    try: self._check_elf(data, machine, symbol, what)
    except (struct.error, IndexError, ValueError) as e: self.fail(f"{what}: malformed ELF ({e})")

  def _check_elf(self, data, machine, symbol, what):
    if not self.expect(data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, f"{what}: not an ELF64 little-endian file"): return
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    self.expect(e_type == 1, f"{what}: e_type {e_type}, expected ET_REL (1)")
    if not self.expect(e_machine == machine, f"{what}: e_machine {e_machine}, expected {machine}"): return
    e_shoff, = struct.unpack_from("<Q", data, 40)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 58)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    def cstr(off):
      end = data.index(b"\0", off)
      return data[off:end].decode()
    shstr_off = shdrs[e_shstrndx][4]
    names = [cstr(shstr_off + h[0]) for h in shdrs]
    symtabs = [i for i, h in enumerate(shdrs) if h[1] == SHT_SYMTAB]
    if not self.expect(len(symtabs) == 1, f"{what}: {len(symtabs)} symbol tables"): return
    st = shdrs[symtabs[0]]
    strtab_off = shdrs[st[6]][4]
    syms = []
    for k in range(st[5] // 24):
      st_name, st_info, _, st_shndx, st_value, _ = struct.unpack_from("<IBBHQQ", data, st[4] + k * 24)
      syms.append((cstr(strtab_off + st_name), st_info >> 4, st_info & 0xf, st_shndx, st_value))
    entry = [s for s in syms if s[0] == symbol]
    if self.expect(len(entry) == 1, f"{what}: symbol {symbol!r} defined {len(entry)} times"):
      _, bind, typ, shndx, value = entry[0]
      self.expect(bind == 1 and typ == 2, f"{what}: {symbol} is not a GLOBAL FUNC (bind {bind}, type {typ})")
      self.expect(0 < shndx < len(names) and names[shndx] == ".text" and value == 0, f"{what}: {symbol} is not at .text offset 0")
    undefined = sorted({s[0] for s in syms[1:] if s[3] == 0 and s[0]})
    if undefined: self.warnings.append(f"{what}: undefined symbols {undefined} (the runtime must resolve them)")
    for i, h in enumerate(shdrs):
      if h[1] == SHT_REL: self.fail(f"{what}: REL section {names[i]} (only RELA is expected)")
      if h[1] != SHT_RELA or names[i] == ".rela.eh_frame": continue
      for k in range(h[5] // 24):
        _, r_info, _ = struct.unpack_from("<QQq", data, h[4] + k * 24)
        rtype = r_info & 0xffffffff
        self.expect(rtype in RELOCS[machine], f"{what}: relocation type {rtype} in {names[i]} is not one the bundle format allows")

  # ---------- manifest ----------

  def view(self, v, buffers, what, dtype_sized=True) -> bool:
    ok = self.expect(isinstance(v, dict) and all(k in v for k in ("buffer", "offset", "nbytes", "dtype")), f"{what}: malformed view {v!r}")
    if not ok: return False
    b, off, n = v["buffer"], v["offset"], v["nbytes"]
    if not self.expect(isinstance(b, int) and 0 <= b < len(buffers), f"{what}: buffer {b!r} out of range"): return False
    ok = self.expect(isinstance(off, int) and isinstance(n, int) and off >= 0 and n >= 0 and off + n <= buffers[b]["nbytes"],
                     f"{what}: view [{off}, {off}+{n}) outside buffer {b} of {buffers[b]['nbytes']} bytes")
    ok &= self.expect(isinstance(off, int) and off % 16 == 0, f"{what}: offset {off} is not 16-byte aligned")
    ok &= self.expect(v["dtype"] in ITEMSIZE, f"{what}: unknown dtype {v['dtype']!r}")
    if ok and dtype_sized: ok &= self.expect(n % ITEMSIZE[v["dtype"]] == 0, f"{what}: {n} bytes is not a whole number of {v['dtype']}")
    return ok

  def run(self) -> dict | None:
    raw = self.read("manifest.json", "manifest")
    if raw is None: return None
    try: m = json.loads(raw)
    except ValueError as e:
      self.fail(f"manifest.json: invalid JSON ({e})")
      return None
    if m.get("format") == "tg-cpu-bundle" and m.get("version") == 2: return self.run_v2(m)
    self.expect(m.get("format") == "tg-cpu-bundle" and m.get("version") == 1, f"format/version {m.get('format')!r}/{m.get('version')!r}")
    for key in ("model", "tinygrad_version", "numpy_version", "python", "toolchain", "arch_levels", "portable", "expected_from",
                "calling_convention", "toolchains", "buffers", "inputs", "outputs", "programs", "launches"):
      self.expect(key in m, f"manifest: missing top-level field {key!r}")
    if not all(isinstance(m.get(k), list) for k in ("buffers", "inputs", "outputs", "programs", "launches")): return None
    for key in ("device", "dev_string", "renderer", "compiler", "arch", "compile_cmd", "cc_version"):
      self.expect(key in m.get("toolchain", {}), f"toolchain: missing {key!r}")
    levels, chains = m.get("arch_levels", {}), m.get("toolchains", {})
    self.expect(m.get("portable") == (levels.get("x86_64") not in (None, "native")), "portable disagrees with arch_levels.x86_64")
    for arch in levels:
      if self.expect(arch in chains, f"toolchains: no entry for {arch}"):
        for key in ("target", "level", "compile_cmd", "cc_version", "produced_by"):
          self.expect(key in chains[arch], f"toolchains.{arch}: missing {key!r}")

    self.check_graph(m, levels, chains, need_x86=True)
    return m

  def run_v2(self, m: dict) -> dict | None:
    """Version 2 (examples/FORMAT.md): `graphs`, one per target, each checked as a version 1 bundle's lists; a `qcom` graph's
    programs carry Adreno objects only, a `cpu` graph's x86-64 ones."""
    for key in ("model", "tinygrad_version", "toolchain", "toolchains", "graphs", "expected_from"):
      self.expect(key in m, f"manifest: missing top-level field {key!r}")
    graphs, chains = m.get("graphs"), m.get("toolchains", {})
    if not self.expect(isinstance(graphs, list) and graphs, "manifest: graphs is not a non-empty list"): return None
    targets = [g.get("target") for g in graphs]
    # at most one graph per target; a graph for any target may stand beside others (a device takes its own target's first)
    self.expect(len(set(targets)) == len(targets) and all(t in ("qcom", "cpu", "amd", "any") for t in targets), f"graphs: targets {targets}")
    for key in ("buffers", "inputs", "outputs", "programs", "launches"):
      self.expect(key not in m, f"manifest: version 2 holds {key!r} in its graphs, not at the top level")
    for gi, g in enumerate(graphs):
      if not all(isinstance(g.get(k), list) for k in ("buffers", "inputs", "outputs", "programs", "launches")):
        self.fail(f"graphs[{gi}]: lacks one of buffers, inputs, outputs, programs, launches")
        continue
      self.where = f"graphs[{gi}] ({g.get('name')}): "
      target = g.get("target")
      if target == "qcom": self.expect("adreno_a630" in chains, "toolchains: no adreno_a630 entry for the qcom graph")
      if target == "amd": self.expect("amd_gfx1100" in chains, "toolchains: no amd_gfx1100 entry for the amd graph")
      levels = m.get("arch_levels", {}) if target == "cpu" else {}
      saved = self.require_adreno, self.require_amd
      self.require_adreno, self.require_amd = target == "qcom" or (saved[0] and target == "any"), target == "amd"
      self.check_graph(g, levels, chains, need_x86=target in ("cpu", "any"))
      self.require_adreno, self.require_amd = saved
    self.where = ""
    first = graphs[0]
    for g in graphs[1:]:
      for kind in ("inputs", "outputs"):
        a, b = first.get(kind, []), g.get(kind, [])
        self.expect([(x.get("dtype"), x.get("nbytes"), x.get("name")) for x in a] == [(x.get("dtype"), x.get("nbytes"), x.get("name")) for x in b],
                    f"graphs {first.get('name')} and {g.get('name')}: {kind} differ (dtype, nbytes, name)")
    return m

  def check_graph(self, m, levels, chains, need_x86):
    """The buffers, inputs, outputs, programs and launches of one graph (the whole version 1 manifest)."""
    buffers = m["buffers"]
    for i, b in enumerate(buffers):
      what = f"buffers[{i}]"
      self.expect(b.get("id") == i, f"{what}: id {b.get('id')!r} is not its index")
      self.expect(b.get("role") in ROLES, f"{what}: role {b.get('role')!r}")
      self.expect(isinstance(b.get("nbytes"), int) and b["nbytes"] > 0, f"{what}: nbytes {b.get('nbytes')!r}")
      self.expect(b.get("dtype") in ITEMSIZE, f"{what}: dtype {b.get('dtype')!r}")
      if b.get("role") in ("input", "weight"):
        data = self.file_entry(b, what)
        if data is not None: self.expect(len(data) == b["nbytes"], f"{what}: file has {len(data)} bytes, buffer has {b['nbytes']}")
      if "also_output" in b: self.expect(b["also_output"] is True and b.get("role") != "output", f"{what}: misplaced also_output")
      if "image" in b:  # an older bundle's one image view per buffer (still accepted)
        self.check_image(b["image"], b.get("dtype"), 0, b.get("nbytes", 0), what)
    if any(not isinstance(b.get("nbytes"), int) for b in buffers): return None

    for kind in ("inputs", "outputs"):
      for i, io in enumerate(m[kind]):
        what = f"{kind}[{i}]"
        self.expect(io.get("index") == i, f"{what}: index {io.get('index')!r} is not its position")
        if not self.view(io, buffers, what): continue
        shape = io.get("shape")
        if self.expect(isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape), f"{what}: shape {shape!r}"):
          count = 1
          for d in shape: count *= d
          self.expect(count * ITEMSIZE[io["dtype"]] == io["nbytes"], f"{what}: shape {shape} of {io['dtype']} is not {io['nbytes']} bytes")
        if kind == "inputs": self.expect(buffers[io["buffer"]].get("role") == "input", f"{what}: buffer {io['buffer']} is not an input")
        else:
          data = self.read(io.get("file"), what)
          if data is not None: self.expect(len(data) == io["nbytes"], f"{what}: {io['file']} has {len(data)} bytes, view has {io['nbytes']}")
          b = buffers[io["buffer"]]
          self.expect(b.get("role") == "output" or b.get("also_output") is True, f"{what}: buffer {io['buffer']} is not marked as output")

    programs = m["programs"]
    for i, p in enumerate(programs):
      what = f"programs[{i}] ({p.get('name')})"
      self.expect(p.get("id") == i, f"{what}: id {p.get('id')!r} is not its index")
      objs = p.get("objects", {})
      if need_x86 and self.expect("x86_64" in objs, f"{what}: no x86_64 object"):
        self.expect(all(p.get(k) == objs["x86_64"].get(k) for k in ("file", "sha256", "nbytes")), f"{what}: top-level file/sha256/nbytes != objects.x86_64")
      for arch, machine in (("x86_64", EM_X86_64), ("aarch64", EM_AARCH64)):
        if arch not in objs: continue
        data = self.file_entry(objs[arch], f"{what} {arch}")
        if data is not None: self.check_elf(data, machine, p.get("symbol"), f"{what} {arch}")
      if "adreno_a630" in objs or self.require_adreno:
        if self.expect("adreno_a630" in objs and isinstance(p.get("adreno"), dict), f"{what}: no adreno_a630 object and adreno metadata"):
          self.check_adreno(p, self.file_entry(objs["adreno_a630"], f"{what} adreno_a630"), f"{what} adreno")
      if "amd_gfx1100" in objs or self.require_amd:
        if self.expect("amd_gfx1100" in objs, f"{what}: no amd_gfx1100 object"):
          self.check_amd(self.file_entry(objs["amd_gfx1100"], f"{what} amd_gfx1100"), p.get("symbol"), f"{what} amd_gfx1100")
      if need_x86 or "source_file" in p: self.read(p.get("source_file"), f"{what} source")
      for arch in levels:
        self.expect(arch in objs, f"{what}: arch_levels lists {arch} but the program has no {arch} object")
      sig, n = p.get("signature", []), p.get("n_buffer_args")
      self.expect([s.get("slot") for s in sig] == list(range(len(sig))), f"{what}: signature slots are not 0..n-1")
      if not self.expect(isinstance(n, int) and 0 <= n <= len(sig), f"{what}: n_buffer_args {n!r}"): continue
      self.expect(len(sig) <= 63, f"{what}: {len(sig)} arguments, tinygrad allows 63")
      scalars = sig[n:]
      self.expect(p.get("vars") == [s.get("name") for s in scalars], f"{what}: vars {p.get('vars')} != scalar signature names")
      self.expect(all(s.get("dtype") == "int32" for s in scalars), f"{what}: a scalar argument is not int32")
      self.expect(all(s.get("dtype") in ITEMSIZE for s in sig[:n]), f"{what}: unknown buffer dtype in signature")
      core = [s["slot"] for s in scalars if s.get("name") == "core_id"]
      self.expect(p.get("core_id_arg") == (core[0] if core else None), f"{what}: core_id_arg {p.get('core_id_arg')!r}, signature says {core}")

    gpu = [p for p in programs if "adreno_a630" in p.get("objects", {})]
    if gpu or self.require_adreno:
      self.expect(len(gpu) == len(programs), f"programs: {len(gpu)} of {len(programs)} have an adreno_a630 object (all or none)")
      tc = chains.get("adreno_a630")
      if self.expect(isinstance(tc, dict), "toolchains: no adreno_a630 entry for the Adreno objects"):
        for key in ADRENO_TOOLCHAIN_KEYS: self.expect(key in tc, f"toolchains.adreno_a630: missing {key!r}")
        self.expect(tc.get("executed") is False or tc.get("executed") is True, "toolchains.adreno_a630.executed is not a boolean")
    self.check_launches(m, buffers, programs)

  # ---------- AMD ----------

  def check_amd(self, co: bytes | None, symbol, what: str):
    """An HSA code object (examples/FORMAT.md "AMD gfx1100 objects"): ELF64 little-endian, OS ABI AMDGPU_HSA (64), machine
    EM_AMDGPU (224), gfx1100 in e_flags (EF_AMDGPU_MACH 0x41), the kernel `symbol` and its descriptor `symbol.kd`."""
    if co is None: return
    if not self.expect(len(co) >= 64 and co[:4] == b"\x7fELF" and co[4] == 2 and co[5] == 1, f"{what}: not an ELF64 little-endian file"):
      return
    self.expect(co[7] == 64, f"{what}: ELF OS ABI {co[7]}, expected 64 (AMDGPU HSA)")
    self.expect(struct.unpack_from("<H", co, 18)[0] == 224, f"{what}: e_machine is not EM_AMDGPU (224)")
    self.expect(struct.unpack_from("<I", co, 48)[0] & 0xff == 0x41, f"{what}: e_flags mach {struct.unpack_from('<I', co, 48)[0] & 0xff:#x}, expected gfx1100 (0x41)")
    if isinstance(symbol, str):
      self.expect(symbol.encode() + b"\x00" in co and (symbol + ".kd").encode() + b"\x00" in co,
                  f"{what}: no symbol {symbol!r} and descriptor {symbol + '.kd'!r} in the string table")

  # ---------- Adreno ----------

  def check_adreno(self, p, blob: bytes | None, what: str):
    a = p["adreno"]
    missing = [k for k in ADRENO_KEYS if k not in a]
    if not self.expect(not missing, f"{what}: missing {missing}"): return
    ints = ("image_size", "instr_size_128", "prg_offset", "instrs_count", "fregs", "hregs", "branchstack", "pvtmem", "shmem",
            "pvtmem_size_per_item", "pvtmem_size_total", "hw_stack_offset", "stack_bytes", "shared_size", "max_threads", "wgid", "lid", "wgsz")
    if not self.expect(all(isinstance(a[k], int) and a[k] >= 0 for k in ints), f"{what}: a size or register field is not a non-negative int"):
      return
    self.expect(a["threadsize"] == "THREAD64", f"{what}: threadsize {a['threadsize']!r}, tinygrad dispatches THREAD64")
    sig, n = a["signature"], len(a["signature"]) - len(a["vars"])
    self.expect([s.get("slot") for s in sig] == list(range(len(sig))), f"{what}: signature slots are not 0..n-1")
    self.expect(a["vars"] == [s.get("name") for s in sig[n:]] and all(s.get("dtype") in ITEMSIZE for s in sig),
                f"{what}: vars/signature dtypes malformed")
    self.read(a["disasm_file"], f"{what} disasm")
    # the blob: variant | const_state | immediates | image, back to back
    b = a["blob"]
    keys = ("variant_offset", "variant_nbytes", "const_state_offset", "const_state_nbytes", "immediates_offset", "immediates_nbytes",
            "image_offset", "image_nbytes")
    if not self.expect(all(isinstance(b.get(k), int) and b[k] >= 0 for k in keys), f"{what}: blob layout malformed"): return
    self.expect(b["variant_offset"] == 0 and b["const_state_offset"] == b["variant_nbytes"]
                and b["immediates_offset"] == b["const_state_offset"] + b["const_state_nbytes"]
                and b["image_offset"] == b["immediates_offset"] + b["immediates_nbytes"], f"{what}: blob parts are not back to back")
    self.expect(b["image_nbytes"] == a["image_size"] and a["image_size"] > 0 and a["image_size"] % 128 == 0,
                f"{what}: image of {b['image_nbytes']} bytes, image_size {a['image_size']} (a positive multiple of 128)")
    self.expect(a["instr_size_128"] == -(-a["image_size"] // 128), f"{what}: instr_size_128 {a['instr_size_128']} != ceil(image_size / 128)")
    c = a["consts"]
    imms = c.get("immediates", [])
    if blob is not None:
      self.expect(len(blob) == b["image_offset"] + b["image_nbytes"], f"{what}: blob has {len(blob)} bytes, layout says {b['image_offset'] + b['image_nbytes']}")
      image = blob[b["image_offset"]:b["image_offset"] + b["image_nbytes"]]
      self.expect(hashlib.sha256(image).hexdigest() == b.get("image_sha256"), f"{what}: image_sha256 does not match the blob's image")
      raw = blob[b["immediates_offset"]:b["immediates_offset"] + b["immediates_nbytes"]]
      words = [int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw) - 3, 4)]
      self.expect(len(raw) % 4 == 0 and words == [im.get("value") for im in imms], f"{what}: consts.immediates differ from the blob's immediates")
    # derived values, as tinygrad's QCOMProgram computes them
    per_item = round_up(a["pvtmem"], 512) >> 9
    self.expect(a["pvtmem_size_per_item"] == per_item and a["pvtmem_size_total"] == per_item * 128 * 2, f"{what}: private memory sizes")
    stack = round_up(next_pow2(round_up(a["pvtmem"], 512)) * 128 * 16, 0x1000)
    self.expect(a["hw_stack_offset"] == stack and a["stack_bytes"] == 4 * stack, f"{what}: hw_stack_offset/stack_bytes != {stack}/{4 * stack}")
    self.expect(a["shared_size"] == max(1, (a["shmem"] - 1) // 1024), f"{what}: shared_size {a['shared_size']} for shmem {a['shmem']}")
    mt = min(1024, ((384 * 32) // (max(1, a["fregs"] + round_up(a["hregs"], 2) // 2) * 128)) * 128)
    self.expect(a["max_threads"] == mt, f"{what}: max_threads {a['max_threads']}, the footprints give {mt}")
    self.expect(a["wgid_reg"] == regid_name(a["wgid"]) and a["lid_reg"] == regid_name(a["lid"]), f"{what}: wgid_reg/lid_reg disagree with wgid/lid")
    self.check_kernargs(a, n, what)
    d = a["descriptors"]
    if self.expect(all(isinstance(d.get(k), int) for k in ("tex_cnt", "ibo_cnt", "samp_cnt", "tex_off", "ibo_off", "samp_off")), f"{what}: descriptors malformed"):
      if d["tex_cnt"] or d["ibo_cnt"] or d["samp_cnt"]: self.check_descriptors(a, d, n, what)
      self.expect(d["tex_off"] == 2048 and d["ibo_off"] == 2048 + 64 * d["tex_cnt"] and d["samp_off"] == 2048 + 64 * (d["tex_cnt"] + d["ibo_cnt"]),
                  f"{what}: descriptor offsets")
    # registers: the ids, and the fields that follow from the metadata (a6xx.xml bitfields)
    regs = a["regs"]
    if not self.expect(isinstance(regs, dict) and all(isinstance(regs.get(k), dict) and regs[k].get("reg") == r and isinstance(regs[k].get("value"), int)
                                                      for k, r in ADRENO_REGS.items()), f"{what}: regs lack one of {list(ADRENO_REGS)} or name a wrong offset"):
      return
    v = {k: regs[k]["value"] for k in ADRENO_REGS}
    self.expect(v["SP_CS_CNTL_0"] == (a["hregs"] << 1 | a["fregs"] << 7 | a["branchstack"] << 14),  # a6xx_sp_xs_cntl_0; THREADSIZE(20) = THREAD64 = 0
                f"{what}: SP_CS_CNTL_0 {v['SP_CS_CNTL_0']:#x} disagrees with hregs/fregs/branchstack")
    self.expect(v["SP_CS_CNTL_1"] & 0x1f == a["shared_size"], f"{what}: SP_CS_CNTL_1.SHARED_SIZE != shared_size")
    self.expect(v["SP_CS_PROGRAM_COUNTER_OFFSET"] == a["prg_offset"], f"{what}: SP_CS_PROGRAM_COUNTER_OFFSET != prg_offset")
    self.expect(v["SP_CS_INSTR_SIZE"] == a["instr_size_128"], f"{what}: SP_CS_INSTR_SIZE != instr_size_128")
    self.expect(v["SP_CS_PVT_MEM_PARAM"] & 0xff == per_item, f"{what}: SP_CS_PVT_MEM_PARAM.MEMSIZEPERITEM != pvtmem_size_per_item")
    self.expect(v["SP_CS_PVT_MEM_STACK_OFFSET"] == a["hw_stack_offset"], f"{what}: SP_CS_PVT_MEM_STACK_OFFSET != hw_stack_offset (tinygrad's byte value)")
    self.expect(v["SP_CS_CONFIG"] >> 8 & 1 == 1 and v["SP_CS_CONFIG"] >> 9 & 0xff == d.get("tex_cnt"), f"{what}: SP_CS_CONFIG not ENABLED or NTEX wrong")
    self.expect(v["SP_CS_CONST_CONFIG_0"] == (a["wgid"] | a["wgsz"] << 8 | 0xfc << 16 | a["lid"] << 24),
                f"{what}: SP_CS_CONST_CONFIG_0 {v['SP_CS_CONST_CONFIG_0']:#x} disagrees with wgid/wgsz/lid")

  def check_kernargs(self, a, n_buf, what):
    c = a["consts"]
    keys = ("kernarg_alloc_size", "load_vec4", "buf_off", "args", "vals", "immediates", "local_size_offset", "max_const_offset_vec4", "allocs")
    if not self.expect(all(k in c for k in keys), f"{what}: consts lacks one of {keys}"): return
    size, d = c["kernarg_alloc_size"], a["descriptors"]
    want = round_up(2048 + (d.get("tex_cnt", 0) + d.get("ibo_cnt", 0)) * 64 + len(d.get("samplers", [])) * 4, 256)
    self.expect(size == want, f"{what}: kernarg_alloc_size {size}, tinygrad allocates {want}")
    self.expect(isinstance(c["load_vec4"], int) and c["load_vec4"] > 0, f"{what}: load_vec4 {c['load_vec4']!r}")
    sig = a["signature"]
    spans = []
    args = c["args"]
    plain = [k for k, s in enumerate(sig[:n_buf]) if not s.get("image")]  # images are descriptors, not addresses
    if self.expect(len(args) == len(plain), f"{what}: {len(args)} kernarg addresses for {len(plain)} GPU buffers (not images)"):
      for k, arg in enumerate(args):
        self.expect(arg.get("slot") == plain[k] and arg.get("size") == 8 and arg.get("offset") == c["buf_off"] + 8 * k and isinstance(arg.get("arg"), int),
                    f"{what}: consts.args[{k}] {arg!r} is not the u64 address of slot {plain[k]} at buf_off + {8 * k}")
        spans.append((arg.get("offset", 0), 8, f"args[{k}]"))
    vals = c["vals"]
    if self.expect(len(vals) == len(a["vars"]), f"{what}: {len(vals)} kernarg values for vars {a['vars']}"):
      for k, (v, s) in enumerate(zip(vals, sig[n_buf:])):
        self.expect(v.get("name") == s.get("name") and v.get("dtype") == s.get("dtype") and v.get("size") == ITEMSIZE.get(s.get("dtype")),
                    f"{what}: consts.vals[{k}] {v!r} does not match the signature")
        spans.append((v.get("offset", 0), v.get("size", 0), f"vals[{k}]"))
    base = c["max_const_offset_vec4"] * 16 if isinstance(c["max_const_offset_vec4"], int) else 0
    for k, im in enumerate(c["immediates"]):
      self.expect(im.get("offset") == base + 4 * k and im.get("size") == 4 and isinstance(im.get("value"), int) and 0 <= im["value"] < 2**32,
                  f"{what}: consts.immediates[{k}] {im!r} is not the u32 at max_const_offset_vec4 * 16 + {4 * k}")
      spans.append((im.get("offset", 0), 4, f"immediates[{k}]"))
    if c["local_size_offset"] is not None:
      self.expect(c["local_size_offset"] == a["wgsz"] * 4, f"{what}: local_size_offset != wgsz * 4")
      spans.append((c["local_size_offset"], 12, "local size"))
    else: self.expect(a["wgsz"] == 0xfc, f"{what}: wgsz {a['wgsz']:#x} names a constant but local_size_offset is null")
    spans.sort()
    for (o, sz, name) in spans:
      self.expect(isinstance(o, int) and o >= 0 and o + sz <= size, f"{what}: kernarg {name} at [{o}, {o + sz}) outside the {size}-byte block")
    for (o1, s1, n1), (o2, _, n2) in zip(spans, spans[1:]):
      self.expect(o1 + s1 <= o2, f"{what}: kernarg {n1} overlaps {n2}")

  def check_descriptors(self, a, d, n_buf, what):
    """Image kernels (IMAGE-SCHEMA): one `descriptors.images` entry per image parameter, the first ibo_cnt of them IBOs, the
    others textures (tex_to_image), tinygrad's 16 descriptor words with the address dwords 4-5 zero, one sampler per texture."""
    ims, sig = d.get("images"), a.get("signature", [])
    img_slots = [s.get("slot") for s in sig[:n_buf] if s.get("image")]
    if not self.expect(isinstance(ims, list) and [im.get("slot") for im in ims] == img_slots,
                       f"{what}: descriptors.images {[im.get('slot') for im in ims or []]} are not the image parameters {img_slots}"): return
    self.expect(len(ims) == d["tex_cnt"] + d["ibo_cnt"] and d["samp_cnt"] == d["tex_cnt"],
                f"{what}: {len(ims)} images for {d['tex_cnt']} textures + {d['ibo_cnt']} IBOs, {d['samp_cnt']} samplers")
    for k, im in enumerate(ims):
      self.expect((im.get("ibo") == k) == (k < d["ibo_cnt"]) and (im.get("texture") is None) == (k < d["ibo_cnt"]),
                  f"{what}: image {k} is not IBO {k} / a texture as QCOMArgsState assigns them")
      for kind in ("tex", "ibo"):
        w = im.get(f"{kind}_words")
        if w is None: continue
        self.expect(isinstance(w, list) and len(w) == 16 and w[4] == w[5] == 0, f"{what}: image {k} {kind} descriptor words (16, dwords 4-5 zero)")
    sw = d.get("sampler_words")
    self.expect(isinstance(sw, list) and len(sw) == d["samp_cnt"] and all(isinstance(w, list) and len(w) == 4 for w in sw),
                f"{what}: {len(sw or [])} sampler_words for {d['samp_cnt']} samplers")

  def check_gpu_launch(self, l, p, what):
    a = p.get("adreno")
    if not isinstance(a, dict) or not isinstance(a.get("signature"), list): return
    gs, ls, gv = l.get("gpu_global_size"), l.get("gpu_local_size"), l.get("gpu_vals")
    if not self.expect(all(isinstance(x, list) and len(x) == 3 and all(isinstance(d, int) and d >= 1 for d in x) for x in (gs, ls)),
                       f"{what}: gpu_global_size {gs!r} / gpu_local_size {ls!r}"): return
    threads = ls[0] * ls[1] * ls[2]
    self.expect(threads <= a.get("max_threads", 0) and all(d <= 1024 for d in ls), f"{what}: work-group of {threads} threads exceeds max_threads {a.get('max_threads')}")
    self.expect(all(g * d < 2**32 for g, d in zip(gs, ls)), f"{what}: GPU grid {gs} x {ls} does not fit SP_CS_NDRANGE's 32-bit sizes")
    self.expect(isinstance(gv, list) and len(gv) == len(a.get("vars", [])) and all(isinstance(v, int) and -2**31 <= v < 2**31 for v in gv),
                f"{what}: gpu_vals {gv!r} for GPU vars {a.get('vars')}")
    args = l.get("args", [])
    for k, ca in enumerate(a.get("consts", {}).get("args", [])):
      slot = ca.get("slot", k)
      j, s = ca.get("arg"), a["signature"][slot] if isinstance(slot, int) and 0 <= slot < len(a["signature"]) else {}
      if not self.expect(isinstance(j, int) and 0 <= j < len(args), f"{what}: GPU argument {k} refers to launch argument {j!r}"): continue
      count = 1
      for dim in s.get("shape", []): count *= dim
      self.expect(args[j].get("dtype") == s.get("dtype") and args[j].get("nbytes", 0) >= count * ITEMSIZE.get(s.get("dtype"), 1),
                  f"{what}: launch argument {j} ({args[j].get('dtype')}, {args[j].get('nbytes')} bytes) is too small for GPU parameter {k} "
                  f"({s.get('dtype')} x {count})")

  def check_image(self, im, dtype, offset, nbytes, what, shape=None):
    """An image view (launches[].args[j].image, or an older bundle's buffers[].image): width, height, pitch, format."""
    if not self.expect(isinstance(im, dict) and all(isinstance(im.get(k), int) and im[k] > 0 for k in ("width", "height", "pitch")),
                       f"{what}: image {im!r} lacks a positive width, height or pitch"): return
    fmt = im.get("format")
    self.expect(fmt in ("float16", "float32") and fmt == dtype, f"{what}: image format {fmt!r} is not float16/float32 equal to the dtype {dtype!r}")
    row = im["width"] * 4 * ITEMSIZE.get(fmt, 4)
    self.expect(im["pitch"] >= row, f"{what}: pitch {im['pitch']} under a row of {row} bytes")
    self.expect(im["height"] * im["pitch"] <= nbytes, f"{what}: {im['height']} rows of {im['pitch']} bytes exceed the view's {nbytes}")
    self.expect(offset % 64 == 0, f"{what}: image view at offset {offset}, not 64-byte aligned (an a6xx texture base)")
    if shape is not None:
      self.expect(list(shape) == [im["height"], im["width"], 4], f"{what}: image {im['width']}x{im['height']} but the parameter's shape is {shape}")

  def check_launches(self, m, buffers, programs):
    def images_of(p):
      a = p.get("adreno")
      return {s.get("slot") for s in a.get("signature", [])[:p.get("n_buffer_args", 0)] if s.get("image")} if isinstance(a, dict) else set()
    written: dict[int, list[tuple[int, int]]] = {i: [] for i in range(len(buffers))}
    touched: set[int] = set()
    def covered(bid, lo, hi) -> bool:
      pos = lo
      for a, b in sorted(written[bid]):
        if a > pos: break
        pos = max(pos, b)
        if pos >= hi: return True
      return pos >= hi
    def read(v, what):
      touched.add(v["buffer"])
      if buffers[v["buffer"]].get("role") in ("input", "weight"): return
      self.expect(covered(v["buffer"], v["offset"], v["offset"] + v["nbytes"]),
                  f"{what}: reads bytes [{v['offset']}, {v['offset'] + v['nbytes']}) of {buffers[v['buffer']]['role']} buffer {v['buffer']} before they are written")
    def write(v, what):
      touched.add(v["buffer"])
      self.expect(buffers[v["buffer"]].get("role") not in ("input", "weight"), f"{what}: writes {buffers[v['buffer']]['role']} buffer {v['buffer']}")
      written[v["buffer"]].append((v["offset"], v["offset"] + v["nbytes"]))

    for i, l in enumerate(m["launches"]):
      what = f"launches[{i}]"
      if l.get("kind") == "copy":
        if self.view(l.get("dst"), buffers, what + " dst") and self.view(l.get("src"), buffers, what + " src"):
          self.expect(l["dst"]["nbytes"] == l["src"]["nbytes"], f"{what}: copy sizes differ")
          read(l["src"], what)
          write(l["dst"], what)
        continue
      if not self.expect(l.get("kind") == "kernel", f"{what}: kind {l.get('kind')!r}"): continue
      pid = l.get("program")
      if not self.expect(isinstance(pid, int) and 0 <= pid < len(programs), f"{what}: program {pid!r} out of range"): continue
      p = programs[pid]
      what = f"{what} ({p.get('name')})"
      self.expect(l.get("name") == p.get("name"), f"{what}: name differs from program {pid}")
      n, sig, args, vals = p.get("n_buffer_args", 0), p.get("signature", []), l.get("args", []), l.get("vals", [])
      if not self.expect(len(args) == n and len(vals) == len(sig) - n, f"{what}: {len(args)} args + {len(vals)} vals for a signature of {n} + {len(sig) - n}"):
        continue
      gs = l.get("global_size")
      self.expect(isinstance(gs, list) and len(gs) == 3 and all(isinstance(g, int) and g >= 1 for g in gs), f"{what}: global_size {gs!r}")
      self.expect(l.get("core_id_arg") == p.get("core_id_arg"), f"{what}: core_id_arg differs from program {pid}")
      for k, v in enumerate(vals):
        if l.get("core_id_arg") is not None and n + k == l["core_id_arg"]: self.expect(v is None, f"{what}: vals[{k}] (core_id) is not null")
        else: self.expect(isinstance(v, int) and -2**31 <= v < 2**31, f"{what}: vals[{k}] = {v!r} is not an int32")
      ok = True
      for k, (a, s) in enumerate(zip(args, sig)):
        if not self.view(a, buffers, f"{what} arg {k}"):
          ok = False
          continue
        self.expect(a["dtype"] == s.get("dtype"), f"{what} arg {k}: dtype {a['dtype']} but the kernel takes {s.get('dtype')}")
        count = 1
        for d in s.get("shape", []): count *= d
        self.expect(a["nbytes"] >= count * ITEMSIZE.get(s.get("dtype"), 1), f"{what} arg {k}: {a['nbytes']} bytes for a {count}-element parameter")
        if "image" in a: self.check_image(a["image"], a["dtype"], a["offset"], a["nbytes"], f"{what} arg {k}", shape=s.get("shape"))
        elif buffers[a["buffer"]].get("image") is None and k in images_of(p):
          self.fail(f"{what} arg {k}: the kernel takes an image here but the launch binds no image view (args[{k}].image)")
      outs, ins = l.get("outs", []), l.get("ins", [])
      if not self.expect(all(isinstance(k, int) and 0 <= k < len(args) for k in outs + ins), f"{what}: outs/ins out of range") or not ok: continue
      if "adreno_a630" in p.get("objects", {}): self.check_gpu_launch(l, p, what)
      for k in ins: read(args[k], f"{what} arg {k}")
      for k in outs: write(args[k], f"{what} arg {k}")

    for i, o in enumerate(m["outputs"]):
      if not isinstance(o.get("buffer"), int) or not 0 <= o["buffer"] < len(buffers): continue
      if buffers[o["buffer"]].get("role") in ("input", "weight"): continue
      self.expect(covered(o["buffer"], o["offset"], o["offset"] + o["nbytes"]), f"outputs[{i}]: not fully written by the launches")
    io = {v.get("buffer") for v in m["inputs"] + m["outputs"]}
    for i in range(len(buffers)):
      self.expect(i in touched or i in io, f"buffers[{i}]: used by no launch, input or output")

  # ---------- numbers ----------

  def compare_reference(self, m, model_path, seed, atol, rtol):
    import numpy as np
    spec = importlib.util.spec_from_file_location("check_bundle_model", model_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not self.expect(callable(getattr(mod, "reference", None)), f"{model_path}: no reference() function"): return
    def np_dtype(name): return np.float32 if name == "bfloat16" else np.dtype(name)
    inputs = []
    for io in m["inputs"]:
      data = self.read(m["buffers"][io["buffer"]]["file"], f"inputs[{io['index']}]")
      if data is None: return
      inputs.append(np.frombuffer(data[io["offset"]:io["offset"] + io["nbytes"]], dtype=np_dtype(io["dtype"])).reshape(io["shape"]))
    refs = mod.reference(inputs, seed)
    if not self.expect(len(refs) == len(m["outputs"]), f"reference gives {len(refs)} outputs, bundle has {len(m['outputs'])}"): return
    for o, ref in zip(m["outputs"], refs):
      data = self.read(o["file"], f"outputs[{o['index']}]")
      if data is None: continue
      got = np.frombuffer(data, dtype=np_dtype(o["dtype"])).reshape(o["shape"]).astype(np.float64)
      ref = np.asarray(ref, dtype=np.float64)
      if not self.expect(got.shape == ref.shape, f"outputs[{o['index']}]: shape {got.shape}, reference {ref.shape}"): continue
      err = np.abs(got - ref)
      bad = int(np.count_nonzero(~(err <= atol + rtol * np.abs(ref))))
      self.expect(bad == 0, f"outputs[{o['index']}]: {bad} of {got.size} elements differ from the numpy reference (max abs diff {err.max():.3g})")
      print(f"  output {o['index']} {tuple(got.shape)}: max abs diff vs numpy reference {err.max():.3g} (max |ref| {np.abs(ref).max():.3g})")


# fields that only bundles exported with the Adreno option carry; `--like` ignores them
GPU_ONLY = ("adreno", "adreno_a630", "gpu_global_size", "gpu_local_size", "gpu_vals")


def schema(x, path="", out=None) -> dict[str, set[str]]:
  """Every key path of a manifest (list elements collapsed to `[]`) with the JSON types seen there."""
  out = {} if out is None else out
  out.setdefault(path, set()).add(type(x).__name__)
  if isinstance(x, dict):
    for k, v in x.items():
      if k not in GPU_ONLY: schema(v, f"{path}.{k}", out)
  elif isinstance(x, list):
    for v in x: schema(v, f"{path}[]", out)
  return out


def compare_like(c: Checker, m: dict, ref_dir: str):
  """Same key paths and JSON types as the reference bundle's manifest (null matches anything; optional keys excepted)."""
  with open(os.path.join(ref_dir, "manifest.json")) as f: ref = json.load(f)
  mine, theirs = schema(m), schema(ref)
  optional = (".buffers[].file", ".buffers[].sha256", ".buffers[].also_output")
  def under_empty_list(path, other):  # inside a list that is empty in the other manifest: nothing to compare with
    i = path.find("[]")
    while i != -1:
      if path[:i] in other and path[:i + 2] not in other: return True
      i = path.find("[]", i + 2)
    return False
  for path in sorted(set(mine) | set(theirs)):
    if path.startswith(optional) or under_empty_list(path, theirs) or under_empty_list(path, mine): continue
    if not c.expect(path in mine, f"like {ref_dir}: key {path} is missing") or not c.expect(path in theirs, f"like {ref_dir}: extra key {path}"):
      continue
    a, b = mine[path] - {"NoneType"}, theirs[path] - {"NoneType"}
    c.expect(not a or not b or a == b, f"like {ref_dir}: {path} has type {sorted(a)}, reference {sorted(b)}")


def compare_adreno(c: Checker, m: dict, root: str, ref_dir: str):
  """The Adreno objects and manifest fields equal REF_DIR's (JSON text, key order included)."""
  with open(os.path.join(ref_dir, "manifest.json")) as f: ref = json.load(f)
  def same(a, b, what): c.expect(json.dumps(a) == json.dumps(b), f"same-adreno {ref_dir}: {what} differs")
  def chain(x):
    tc = dict(x.get("toolchains", {}).get("adreno_a630") or {})
    tc.pop("produced_by", None)
    return tc
  same(chain(m), chain(ref), "toolchains.adreno_a630 (less produced_by)")
  if not c.expect(len(m["programs"]) == len(ref["programs"]) and len(m["launches"]) == len(ref["launches"]),
                  f"same-adreno {ref_dir}: program or launch count differs"): return
  for p, q in zip(m["programs"], ref["programs"]):
    what = f"programs[{p.get('id')}]"
    same(p.get("adreno"), q.get("adreno"), f"{what}.adreno")
    same(p.get("objects", {}).get("adreno_a630"), q.get("objects", {}).get("adreno_a630"), f"{what}.objects.adreno_a630")
    for name in (p.get("objects", {}).get("adreno_a630", {}).get("file"), (p.get("adreno") or {}).get("disasm_file")):
      if not isinstance(name, str) or os.sep in name: continue
      paths = (os.path.join(root, name), os.path.join(ref_dir, name))
      if c.expect(all(os.path.isfile(x) for x in paths), f"same-adreno {ref_dir}: {name} missing on one side"):
        with open(paths[0], "rb") as f1, open(paths[1], "rb") as f2: c.expect(f1.read() == f2.read(), f"same-adreno {ref_dir}: {name} differs")
  for i, (l, r) in enumerate(zip(m["launches"], ref["launches"])):
    same([l.get(k) for k in GPU_ONLY[2:]], [r.get(k) for k in GPU_ONLY[2:]], f"launches[{i}] gpu_global_size/gpu_local_size/gpu_vals")


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description="Check a tg-cpu-bundle v1 directory (structure, hashes, data flow, optional numpy reference).")
  ap.add_argument("dir")
  ap.add_argument("--model", help="model file with reference(inputs, seed) to compare expected outputs against (needs numpy)")
  ap.add_argument("--seed", type=int, default=0, help="seed the bundle was exported with (default 0)")
  ap.add_argument("--atol", type=float, default=1e-5)
  ap.add_argument("--rtol", type=float, default=1e-4)
  ap.add_argument("--like", metavar="REF_DIR", help="also require the same manifest key structure as the bundle in REF_DIR")
  ap.add_argument("--adreno", action="store_true", help="require Adreno 630 objects and metadata for every program")
  ap.add_argument("--same-adreno", metavar="REF_DIR", help="also require the same a630 files and Adreno manifest fields as REF_DIR")
  a = ap.parse_args(argv)
  c = Checker(a.dir, require_adreno=a.adreno or bool(a.same_adreno))
  m = c.run()
  if m is not None and a.like: compare_like(c, m, a.like)
  if m is not None and a.same_adreno: compare_adreno(c, m, a.dir, a.same_adreno)
  if m is not None and a.model and not c.errors: c.compare_reference(m["graphs"][0] if "graphs" in m else m, a.model, a.seed, a.atol, a.rtol)
  for w in c.warnings: print(f"  warning: {w}")
  for e in c.errors: print(f"  FAIL: {e}")
  status = "OK" if not c.errors else "FAILED"
  print(f"check_bundle {a.dir}: {status} ({c.checks} checks, {len(c.errors)} failed)")
  return 0 if not c.errors else 1


if __name__ == "__main__":
  sys.exit(main())
