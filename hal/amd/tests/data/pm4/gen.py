#!/usr/bin/env python3
"""Expected command words for hcq-amd's PM4 and SDMA encoders, produced by tinygrad 0.14 itself.

Drives tinygrad's own `AMDComputeQueue`, `AMDCopyQueue` and `AMDProgram` (ops_amd.py) on a stand-in
device: a plain object with the attributes those classes read, built the way `AMDDevice.__init__`
builds them for a gfx1100 (GC 11.0.0, one XCC, NBIO 4.3.0, SDMA 6.0.0) under KFD. Nothing here talks to
a GPU. Writes `pm4.json` and `sdma.json` beside this file; `tests/pm4.rs` and `tests/sdma.rs`
require hcq-amd's encoders to produce the same words, and `tests/pm4.rs` checks `regs.rs` and the
packet constants against the `regs`/`consts` tables.

    ~/.cache/hcq/tg-venv-tinygrad0.14.0-torch2.9.1/bin/python hal/amd/tests/data/pm4/gen.py
"""

import ctypes, importlib, itertools, json, mmap, os, pathlib, sys
from types import SimpleNamespace

os.environ["AMD_SDMA_BIND"] = "1"  # AMDCopyQueue.bind builds its indirect buffer only with this set

from tinygrad.device import TinyELF
from tinygrad.runtime import ops_amd
from tinygrad.runtime.support.amd import AMDIP, import_module, import_soc
from tinygrad.runtime.support.hcq import FileIOInterface, MMIOInterface

HERE = pathlib.Path(__file__).resolve().parent
KERNELS = HERE.parent / "kernels"

TARGET, GC, NBIO, SDMA = (11, 0, 0), (11, 0, 0), (4, 3, 0), (6, 0, 0)
# KFD topology properties of a Radeon RX 7900 XTX (Navi 31, gfx1100), the ones ops_amd reads.
PROPS = {"simd_count": 192, "simd_per_cu": 2, "array_count": 12, "simd_arrays_per_engine": 2, "max_waves_per_simd": 16,
         "max_slots_scratch_cu": 32, "lds_size_in_kb": 64, "cu_per_simd_array": 8, "gfx_target_version": 110000}

CODE_VA = 0x1_0000_0000      # where the stand-in allocator puts each program's image (0x10000 apart)
SCRATCH_VA = 0x7_f000_0000    # the scratch buffer
HW_PAGE_VA = 0x6_0000_0000    # the page a bound queue's words are copied to
MAILBOX_VA, EVENT_ID = 0x5_0000_0000 + 3 * 8, 7  # the queue event's mailbox slot and id (KFD)

MAP_FIXED_NOREPLACE = 0x100000
# kernel arguments live in host memory at a fixed address: exec writes the dispatch packet there
ARGS_VA = 0x10_0000_0000
_args = FileIOInterface.anon_mmap(ARGS_VA, 0x10000, mmap.PROT_READ | mmap.PROT_WRITE,
                                  mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, 0)
assert _args == ARGS_VA, f"could not map the argument page at {ARGS_VA:#x}"

class Buf:
  """An HCQBuffer stand-in: a device address and, when the host touches it, real memory behind it."""
  def __init__(self, va, size, host=None):
    self.va_addr, self.size = va, size
    if host is None: self._mem = (ctypes.c_uint8 * size)(); host = ctypes.addressof(self._mem)
    self.host = host
  def cpu_view(self): return MMIOInterface(self.host, self.size)
  def offset(self, off, size=None): return Buf(self.va_addr + off, self.size - off if size is None else size, host=self.host + off)

class Allocator:
  def __init__(self): self.next_code = CODE_VA
  def alloc(self, size, spec=None):
    if size >= 0x1000 and spec is not None and getattr(spec, "nolru", False) and not getattr(spec, "cpu_access", False):
      va, self.next_code = self.next_code, self.next_code + 0x10000
      return Buf(va, size)
    return Buf(HW_PAGE_VA, size)
  def _copyin(self, dest, src): pass
  def free(self, *args): pass

class StandInDevice:
  """The attributes of AMDDevice that AMDComputeQueue, AMDCopyQueue and AMDProgram read (gfx1100, KFD)."""
  _ensure_has_local_memory = ops_amd.AMDDevice._ensure_has_local_memory

  def __init__(self, am=False):
    self.target, self.xccs, self.sqtt_enabled, self.pmc_enabled, self._am = TARGET, 1, False, False, am
    self.iface = SimpleNamespace(props=PROPS)
    self.se_cnt = PROPS["array_count"] // PROPS["simd_arrays_per_engine"] // self.xccs
    self.cu_cnt = PROPS["simd_count"] // PROPS["simd_per_cu"] // self.xccs
    ip_off = importlib.import_module("tinygrad.runtime.autogen.am.navi_offsets")
    self.soc = import_soc(TARGET)
    self.pm4 = importlib.import_module("tinygrad.runtime.autogen.am.pm4_nv")
    self.sdma = import_module("sdma", SDMA)
    self.gc = AMDIP("gc", GC, bases={i: tuple(getattr(ip_off, f"GC_BASE__INST{i}_SEG{s}", 0) for s in range(6)) for i in range(6)})
    self.nbio = AMDIP("nbio", NBIO, bases={i: tuple(getattr(ip_off, f"NBIO_BASE__INST{i}_SEG{s}", 0) for s in range(9)) for i in range(6)})
    self.allocator, self.prof_prg_counter = Allocator(), itertools.count()
    self.queue_event_mailbox_ptr, self.queue_event = MAILBOX_VA, SimpleNamespace(event_id=EVENT_ID)
    self.max_private_segment_size = 0
    self._ensure_has_local_memory(128)  # AMDDevice.__init__'s default scratch
    self.sdma_ring = None

  def is_am(self): return self._am
  def is_usb(self): return False
  def synchronize(self): pass
  def _realloc(self, old, size): return Buf(SCRATCH_VA, size), True
  def sdma_queue(self, idx): return self.sdma_ring

def signal(addr, timeline=False, dev=None):
  return SimpleNamespace(value_addr=addr, timestamp_addr=addr + 8, is_timeline=timeline, owner=dev if timeline else None)

def words(q): return [int(w) for w in q._q]

def program(dev, co, patch=None):
  """tinygrad's AMDProgram for `co` (a kernel of tests/data/kernels), its descriptor patched by `patch`."""
  lib = bytearray((KERNELS / co).read_bytes())
  if patch:
    from tinygrad.runtime.support.elf import elf_loader
    _, sections, _ = elf_loader(bytes(lib))
    ro = next(sh.header.sh_offset for sh in sections if sh.name == ".rodata")
    # llvm_amdhsa_kernel_descriptor_t: private_segment_fixed_size @4, compute_pgm_rsrc2 @52, kernel_code_properties @56
    for off, size, key in ((4, 4, "private_bytes"), (52, 4, "rsrc2"), (56, 2, "properties")):
      if key in patch: lib[ro + off:ro + off + size] = patch[key].to_bytes(size, "little")
  return ops_amd.AMDProgram(dev, TinyELF(bytes(lib), co.removesuffix(".co"), None, ())), lib

def args_state():
  return SimpleNamespace(bind_data=[], buf=Buf(ARGS_VA, 0x10000, host=ARGS_VA))

def pm4_cases():
  dev = StandInDevice()
  out = {"device": {"target": TARGET, "props": PROPS, "scratch_va": SCRATCH_VA, "scratch_bytes": dev.scratch.size,
                    "tmpring_size": dev.tmpring_size, "max_private_segment_size": dev.max_private_segment_size},
         "mailbox": MAILBOX_VA, "event_id": EVENT_ID, "cases": []}
  def case(name, cmd, q, **extra): out["cases"].append({"name": name, "cmd": cmd, "words": words(q), **extra})
  Q = lambda: ops_amd.AMDComputeQueue(dev)

  sig = 0x3_0000_1000
  case("wait", {"wait": {"addr": sig, "value": 0x1234}}, Q().wait(signal(sig), 0x1234))
  case("signal", {"signal": {"addr": sig, "value": 5}}, Q().signal(signal(sig), 5))
  case("signal_timeline", {"signal": {"addr": sig, "value": 9}, "interrupt": True}, Q().signal(signal(sig, True, dev), 9))
  case("timestamp", {"timestamp": {"addr": sig + 8}}, Q().timestamp(signal(sig)))
  case("memory_barrier", {"barrier": {}}, Q().memory_barrier())

  execs = [
    ("exec_add_f32", "add_f32.co", None, (253, 1, 1), (1, 1, 1)),
    ("exec_argmax_lds", "argmax_0.co", None, (32, 1, 1), (16, 1, 1)),
    ("exec_matmul", "matmul_f32.co", None, (4, 4, 1), (8, 8, 1)),
    # the private segment buffer (4 SGPRs), the dispatch pointer (2) and the kernarg pointer (2): USER_SGPR 8
    ("exec_private_dispatch_ptr", "add_f32.co", {"properties": 0x400 | 1 | 2 | 8, "private_bytes": 512, "rsrc2_user_sgpr": 8},
     (7, 3, 2), (4, 2, 1)),
  ]
  for name, co, patch, gl, lc in execs:
    p = None
    if patch:
      base, _ = program(StandInDevice(), co)
      p = {k: v for k, v in patch.items() if k != "rsrc2_user_sgpr"}
      p["rsrc2"] = (base.rsrc2 & ~(0x1f << 1) & ~(0x1ff << 15)) | patch["rsrc2_user_sgpr"] << 1 | 1  # SCRATCH_EN
    prg, lib = program(dev, co, p)
    st = args_state()
    q = Q().exec(prg, st, gl, lc)
    case(name, {"exec": {"program": prg.prog_addr, "kernargs": ARGS_VA, "global": gl, "local": lc}}, q,
         co=co, patch=p, code_va=prg.lib_gpu.va_addr, rsrc1=prg.rsrc1, rsrc2=prg.rsrc2, rsrc3=prg.rsrc3,
         tmpring_size=dev.tmpring_size, scratch_bytes=dev.scratch.size, max_private_segment_size=dev.max_private_segment_size)

  q = Q().wait(signal(sig), 1).signal(signal(sig), 2)
  n = len(q._q)
  q.bind(dev)
  out["cases"].append({"name": "indirect_buffer", "ib": {"addr": HW_PAGE_VA, "dwords": n}, "words": [int(w) for w in q.indirect_cmd]})

  regs = ["COMPUTE_DISPATCH_INITIATOR", "COMPUTE_START_X", "COMPUTE_START_Y", "COMPUTE_START_Z", "COMPUTE_NUM_THREAD_X",
          "COMPUTE_NUM_THREAD_Y", "COMPUTE_NUM_THREAD_Z", "COMPUTE_PGM_LO", "COMPUTE_PGM_HI", "COMPUTE_DISPATCH_SCRATCH_BASE_LO",
          "COMPUTE_DISPATCH_SCRATCH_BASE_HI", "COMPUTE_PGM_RSRC1", "COMPUTE_PGM_RSRC2", "COMPUTE_RESOURCE_LIMITS", "COMPUTE_TMPRING_SIZE",
          "COMPUTE_RESTART_X", "COMPUTE_RESTART_Y", "COMPUTE_RESTART_Z", "COMPUTE_PGM_RSRC3",
          *[f"COMPUTE_USER_DATA_{i}" for i in range(16)]]
  out["regs"] = {r: {"addr": getattr(dev.gc, f"reg{r}").addr[0], "fields": getattr(dev.gc, f"reg{r}").fields} for r in regs}
  out["nbio"] = {r: getattr(dev.nbio, f"reg{r}").addr[0] for r in ("BIF_BX_PF0_GPU_HDP_FLUSH_REQ", "BIF_BX_PF0_GPU_HDP_FLUSH_DONE")}
  pm4 = dev.pm4
  names = ["PACKET3_NOP", "PACKET3_DISPATCH_DIRECT", "PACKET3_WAIT_REG_MEM", "PACKET3_INDIRECT_BUFFER", "PACKET3_EVENT_WRITE",
           "PACKET3_RELEASE_MEM", "PACKET3_ACQUIRE_MEM", "PACKET3_SET_SH_REG", "PACKET3_SET_UCONFIG_REG", "PACKET3_SET_SH_REG_START",
           "PACKET3_SET_SH_REG_END", "PACKET3_SET_UCONFIG_REG_START", "INDIRECT_BUFFER_VALID", "CACHE_FLUSH_AND_INV_TS_EVENT",
           "event_index__mec_release_mem__end_of_pipe", "data_sel__mec_release_mem__send_32_bit_low",
           "data_sel__mec_release_mem__send_64_bit_data", "data_sel__mec_release_mem__send_gpu_clock_counter",
           "int_sel__mec_release_mem__none", "int_sel__mec_release_mem__send_interrupt_after_write_confirm",
           *[n for n in dir(pm4) if n.startswith("PACKET3_RELEASE_MEM_GCR_")]]
  out["consts"] = {n: getattr(pm4, n) for n in names}
  out["consts"]["CS_PARTIAL_FLUSH"] = dev.soc.CS_PARTIAL_FLUSH
  out["consts"]["EVENT_INDEX_PARTIAL_FLUSH"] = ops_amd.EVENT_INDEX_PARTIAL_FLUSH
  out["consts"]["WAIT_REG_MEM_FUNCTION_GEQ"] = ops_amd.WAIT_REG_MEM_FUNCTION_GEQ
  out["consts"]["WAIT_REG_MEM_FUNCTION_EQ"] = ops_amd.WAIT_REG_MEM_FUNCTION_EQ
  for f in ("GLI_INV", "GL1_RANGE", "GLM_WB", "GLM_INV", "GLK_WB", "GLK_INV", "GLV_INV", "GL1_INV", "GL2_US", "GL2_RANGE",
            "GL2_DISCARD", "GL2_INV", "GL2_WB", "SEQ"):
    out["consts"][f"PACKET3_ACQUIRE_MEM_GCR_CNTL_{f}"] = getattr(pm4, f"PACKET3_ACQUIRE_MEM_GCR_CNTL_{f}")(1)
  for f in ("FUNCTION", "MEM_SPACE", "OPERATION", "ENGINE"): out["consts"][f"WAIT_REG_MEM_{f}(1)"] = getattr(pm4, f"WAIT_REG_MEM_{f}")(1)
  for f in ("EVENT_TYPE", "EVENT_INDEX", "DATA_SEL", "INT_SEL", "DST_SEL"):
    out["consts"][f"PACKET3_RELEASE_MEM_{f}(1)"] = getattr(pm4, f"PACKET3_RELEASE_MEM_{f}")(1)
  return out

def sdma_cases():
  dev = StandInDevice()
  out = {"mailbox": MAILBOX_VA, "event_id": EVENT_ID, "cases": []}
  def case(name, cmd, q, **extra): out["cases"].append({"name": name, "cmd": cmd, "words": words(q), **extra})
  Q = lambda max_copy_size=0x40000000: ops_amd.AMDCopyQueue(dev, max_copy_size=max_copy_size)
  src, dst, sig = 0x2_0000_0000, 0x2_8000_0040, 0x3_0000_1000
  case("copy", {"copy": {"dst": dst, "src": src, "bytes": 0x100}}, Q().copy(Buf(dst, 0), Buf(src, 0), 0x100))
  case("copy_split", {"copy": {"dst": dst, "src": src, "bytes": 0x5000_0010}}, Q().copy(Buf(dst, 0), Buf(src, 0), 0x5000_0010))
  case("copy_split_small_max", {"copy": {"dst": dst, "src": src, "bytes": 0x2801}}, Q(0x1000).copy(Buf(dst, 0), Buf(src, 0), 0x2801),
       max_copy_size=0x1000)
  case("copy_exact_max", {"copy": {"dst": dst, "src": src, "bytes": 0x4000_0000}}, Q().copy(Buf(dst, 0), Buf(src, 0), 0x4000_0000))
  case("signal", {"signal": {"addr": sig, "value": 5}}, Q().signal(signal(sig), 5))
  case("signal_timeline", {"signal": {"addr": sig, "value": 9}, "interrupt": True}, Q().signal(signal(sig, True, dev), 9))
  case("wait", {"wait": {"addr": sig, "value": 0x1234}}, Q().wait(signal(sig), 0x1234))
  case("timestamp", {"timestamp": {"addr": sig + 8}}, Q().timestamp(signal(sig)))
  case("write32", {"write": {"addr": sig, "value": 0xdead_beef, "b64": False}}, Q().write(Buf(sig, 8), 0xdead_beef))
  case("write64", {"write": {"addr": sig, "value": 0x1_2345_6789, "b64": True}}, Q().write(Buf(sig, 8), 0x1_2345_6789, b64=True))

  # bind + submit: the indirect buffer packet, with the NOPs that end it on an 8-dword boundary of the ring
  am = StandInDevice(am=True)
  ring_mem = (ctypes.c_uint32 * 0x4000)()
  for put in (0, 4, 8, 12, 20, 28, 32, 44):
    q = ops_amd.AMDCopyQueue(am).wait(signal(sig), 1).copy(Buf(dst, 0), Buf(src, 0), 0x40).signal(signal(sig), 2)
    n = len(q._q)
    q.bind(am)
    ctypes.memset(ring_mem, 0xee, ctypes.sizeof(ring_mem))
    ring = MMIOInterface(ctypes.addressof(ring_mem), ctypes.sizeof(ring_mem), fmt="I")
    am.sdma_ring = SimpleNamespace(ring=ring, put_value=put, read_ptr=[put], signal_doorbell=lambda dev: None)
    q._submit(am)
    end = am.sdma_ring.put_value
    out["cases"].append({"name": f"indirect_at_{put}", "ib": {"addr": HW_PAGE_VA, "dwords": n, "ring_put_bytes": put},
                         "ib_dwords": (n + 7) // 8 * 8, "words": [int(w) for w in ring[put // 4:end // 4]]})

  s = dev.sdma
  names = ["SDMA_OP_NOP", "SDMA_OP_COPY", "SDMA_OP_WRITE", "SDMA_OP_INDIRECT", "SDMA_OP_FENCE", "SDMA_OP_TRAP", "SDMA_OP_POLL_REGMEM",
           "SDMA_OP_TIMESTAMP", "SDMA_SUBOP_COPY_LINEAR", "SDMA_SUBOP_TIMESTAMP_GET_GLOBAL", "SDMA_SUBOP_WRITE_LINEAR"]
  out["consts"] = {n: getattr(s, n) for n in names}
  for n in ("SDMA_PKT_COPY_LINEAR_HEADER_sub_op", "SDMA_PKT_COPY_LINEAR_COUNT_count", "SDMA_PKT_FENCE_HEADER_mtype",
            "SDMA_PKT_POLL_REGMEM_HEADER_func", "SDMA_PKT_POLL_REGMEM_HEADER_mem_poll", "SDMA_PKT_POLL_REGMEM_DW5_interval",
            "SDMA_PKT_POLL_REGMEM_DW5_retry_count", "SDMA_PKT_TRAP_INT_CONTEXT_int_context", "SDMA_PKT_TIMESTAMP_GET_HEADER_sub_op",
            "SDMA_PKT_INDIRECT_HEADER_vmid", "SDMA_PKT_INDIRECT_IB_SIZE_ib_size"):
    out["consts"][n] = {"mask": getattr(s, f"{n}_mask"), "shift": getattr(s, f"{n}_shift")}
  return out

def dump(name, obj):
  (HERE / name).write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
  print(f"wrote {HERE / name} ({len(obj['cases'])} cases)", file=sys.stderr)

if __name__ == "__main__":
  dump("pm4.json", pm4_cases())
  dump("sdma.json", sdma_cases())
