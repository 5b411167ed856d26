#!/usr/bin/env python3
"""tinygrad's AMD command stream against hcq's, packet by packet, for the same kernels.

  amd_stream_diff.py --model tools/models/mlp.py [--keep DIR]       # capture both, then compare
  amd_stream_diff.py --bundle B --tinygrad TG.txt --hcq HCQ.txt      # compare captures made before

With --model: tinygrad 0.14 runs the model's TinyJit (DEV=AMD:LLVM) under `hcq virtual` while `export_tinygrad.py --amd-jit` makes
the bundle B from it, with HCQ_VKGSL_AMD_CAPTURE set (the virtual gfx1100 writes every packet its compute CP and SDMA engines
execute: sim/amd/src/trace.rs); then `hcq run B --device AMD` runs the bundle under `hcq virtual` with a capture of its own. HCQ_BIN
(the hcq binary; libhcq_vkgsl.so next to it or at HCQ_VKGSL_LIB) and TG_PY (tinygrad's python, default target/tg-export-venv) name
the programs.

The comparison, for tinygrad's final JIT call (the one whose outputs the bundle expects) and hcq's last call:

1. Dispatches are aligned by what they run: the window of tinygrad's dispatches whose program code (the simulator's hash of the code
   it loaded), work-group counts and sizes equal hcq's call, one for one with the bundle's kernel launches.
2. Each dispatch's packets (the ACQUIRE_MEM before it, every SET_SH_REG of COMPUTE_PGM_*, RSRC*, TMPRING, scratch base, RESTART,
   USER_DATA, RESOURCE_LIMITS, START/NUM_THREAD_*, the DISPATCH_DIRECT, the EVENT_WRITE after) must be the same packets with the
   same words, except where a word holds an address; those are compared by what they point at: the program address by the code
   (which must also be the bundle's object's code at its kernel entry), the kernel-argument pointer by the kernel-argument bytes
   (kernarg_size of the kernel descriptor), whose buffer addresses must map one to one between the two runs and keep each
   launch argument's offset in its bundle buffer; the scratch base and size by the checks in the table below.
3. Every other packet of the call (waits, barriers, signals, submission, SDMA) is reduced to what it does (a timeline wait, the
   HDP flush, a cache acquire, ...), the two lists are diffed, and each difference is classified by the table CLASSES with its
   explanation; hcq's own submissions are checked to have what makes them correct (the timeline wait and the HDP flush with
   a full cache acquire before the first dispatch, the timeline signal after the last).

Prints every difference class with its count and explanation; exits 1 on any difference the table does not explain (printed
as UNEXPLAINED), 2 when it cannot run.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The explanation of each class of difference (docs/amd.md, "tinygrad's command stream against hcq's", holds the same table).
CLASSES = {
  "code-address": "COMPUTE_PGM_LO/HI: each process loads the code object at its own address; the code there is the same (the "
                  "simulator's hash of the loaded words, equal to the bundle object's code at the kernel entry).",
  "kernarg-address": "COMPUTE_USER_DATA (kernel-argument pointer): each runtime's own argument buffer (tinygrad's ring of them, hcq's "
                     "per-call pool); the bytes there are the same up to the buffer addresses in them.",
  "buffer-address": "Buffer addresses inside the kernel arguments: each process's own allocations; they map one to one between the "
                    "runs and keep every argument's offset in its bundle buffer.",
  "scratch-base": "COMPUTE_DISPATCH_SCRATCH_BASE: each runtime's own scratch allocation.",
  "scratch-size": "COMPUTE_TMPRING_SIZE.WAVESIZE: tinygrad reserves 128 bytes a lane at open and grows on demand, hcq sizes the "
                  "scratch for the bundle's largest private segment (at least 4 bytes a lane); read only with RSRC2.SCRATCH_EN, and "
                  "then both hold the kernel's private segment.",
  "submission": "How a launch reaches the CP: tinygrad's eager launches (outside an HCQ graph) copy their packets into the ring, its "
                "HCQ graph and every hcq run are one INDIRECT_BUFFER packet in the ring, the packets in the IB.",
  "batching": "Where submissions start and end: tinygrad submits each eager launch alone and each HCQ graph (JIT_BATCH_SIZE splits "
              "the JIT) as one IB, hcq one IB per run of consecutive launches of one engine; each submission waits for the "
              "timeline, flushes HDP and acquires every cache before its first dispatch and signals the timeline after its last.",
  "timeline": "Timeline wait and signal values and addresses: each runtime's own timeline signal and counter (tinygrad's counts "
              "every submission since the device opened, hcq's its own calls).",
  "barrier-order": "tinygrad's HCQ graph flushes HDP and acquires every cache before its waits (memory_barrier() first), hcq and "
                   "tinygrad's eager launches after the timeline wait: no dispatch runs between them, the effect is the same.",
  "interrupt": "tinygrad's AMDSignal sleeps in KFD's WAIT_EVENTS, so each timeline signal also writes the queue event's mailbox "
               "with an interrupt (RELEASE_MEM INT_SEL=2; on SDMA a FENCE and a TRAP); hcq waits by polling the timeline in memory "
               "(spin, yield, sleeps of up to 1 ms) and asks for no interrupt (Pm4Config::interrupt is None under KFD).",
  "graph-kickoff": "tinygrad's HCQ graph also waits for its kickoff signal (bumped by the host each call) and signals its per-queue "
                   "signal, which order its queues against other devices' and copy queues; a bundle runs on one device, its "
                   "engines ordered by the timeline alone.",
  "sdma": "SDMA ring filler (tinygrad fills the ring's tail with zero dwords before it wraps) and the timeline wait and fence "
          "around copies one side submits together: each copy of hcq's call still waits for the timeline and is fenced (checked), "
          "and the copies are the bundle's copy launches, the same sizes between the same buffers.",
}


class DiffError(Exception):
  """The comparison cannot be made (a capture or bundle is not what it must be)."""


# ---------------------------------------------------------------- the capture

@dataclass
class Pkt:
  seq: int
  pid: int
  engine: str  # cp | sdma
  queue: int
  place: str  # ring | ib1 | ib2
  addr: int
  op: str
  fields: dict[str, str]
  words: list[int]
  line: str = ""

  def num(self, k: str) -> int:
    v = self.fields.get(k)
    try: return int(v, 16) if v.startswith("0x") else int(v)
    except (AttributeError, ValueError): raise DiffError(f"{self.short()}: no number {k}= ({v!r})") from None

  def short(self) -> str:
    return self.line.split(" | ")[0].split(" ", 2)[2][:160]


def parse_capture(path: Path) -> list[Pkt]:
  """The packets of the one process in `path` that dispatched (a capture of several such processes is refused)."""
  pkts: list[Pkt] = []
  for n, line in enumerate(path.read_text().splitlines(), 1):
    if not line or line.startswith("#"): continue
    head, sep, raw = line.partition(" | ")
    toks = head.split(" ")
    if not sep or len(toks) < 6 or not toks[3].startswith("q=") or "@" not in toks[4]:
      raise DiffError(f"{path}:{n}: not a capture line: {line[:120]}")
    place, _, at = toks[4].partition("@")
    fields = {}
    for t in toks[6:]:
      k, eq, v = t.partition("=")
      if not eq: raise DiffError(f"{path}:{n}: field {t!r} is not name=value")
      fields[k] = v
    try:
      pkts.append(Pkt(int(toks[0]), int(toks[1]), toks[2], int(toks[3][2:]), place, int(at, 16), toks[5], fields,
                      [int(w, 16) for w in raw.split()], line))
    except ValueError as e: raise DiffError(f"{path}:{n}: {e}: {line[:120]}") from None
  pids = sorted({p.pid for p in pkts if p.op == "DISPATCH_DIRECT"})
  if len(pids) != 1: raise DiffError(f"{path}: {len(pids)} processes dispatched ({pids}); one is what a run of a bundle or a JIT is")
  return [p for p in pkts if p.pid == pids[0]]


# ---------------------------------------------------------------- the bundle's code objects

@dataclass
class Kernel:
  kernarg_size: int
  private_size: int
  properties: int  # kernel_code_properties: bit 0 the private segment buffer, bit 1 the dispatch pointer in user SGPRs
  text: bytes  # the object's bytes from the kernel entry to the end of its section


def read_kernel(co: bytes, where: str) -> Kernel:
  """The kernel descriptor (the one `.kd` symbol) and the code at the kernel's symbol of a relocatable ELF64 AMDGPU code object
  (as tinygrad's compiler writes them: symbol values are offsets in their sections)."""
  if co[:4] != b"\x7fELF" or co[4] != 2: raise DiffError(f"{where}: not an ELF64 code object")
  shoff, = struct.unpack_from("<Q", co, 0x28)
  shentsize, shnum = struct.unpack_from("<HH", co, 0x3a)
  secs = [struct.unpack_from("<IIQQQQIIQQ", co, shoff + i * shentsize) for i in range(shnum)]
  symtab = next((s for s in secs if s[1] == 2), None)
  if symtab is None: raise DiffError(f"{where}: no symbol table")
  strtab = secs[symtab[6]]
  syms = {}
  for i in range(symtab[5] // 24):
    name_off, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", co, symtab[4] + 24 * i)
    end = co.index(b"\0", strtab[4] + name_off)
    if 0 < shndx < len(secs): syms[co[strtab[4] + name_off:end].decode(errors="replace")] = (secs[shndx], value)
  kds = [n for n in syms if n.endswith(".kd")]
  if len(kds) != 1 or kds[0][:-3] not in syms: raise DiffError(f"{where}: {len(kds)} kernel descriptors (.kd symbols) with their kernels")
  (ksec, kval), (tsec, tval) = syms[kds[0]], syms[kds[0][:-3]]
  _, private, kernarg = struct.unpack_from("<III", co, ksec[4] + kval)
  properties, = struct.unpack_from("<H", co, ksec[4] + kval + 56)
  return Kernel(kernarg, private, properties, co[tsec[4] + tval:tsec[4] + tsec[5]])


def fnv1a64(data: bytes) -> int:
  h = 0xcbf29ce484222325
  for b in data: h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
  return h


# ---------------------------------------------------------------- the streams' structure

RSRC2_SCRATCH_EN = 1


@dataclass
class Group:
  """One dispatch: its packets (the exec's ACQUIRE_MEM, the SET_SH_REGs, DISPATCH_DIRECT, the EVENT_WRITE) and where they sit."""
  pkts: list[Pkt]
  dispatch: Pkt
  regs: dict[str, int] = field(default_factory=dict)

  def sig(self):
    d = self.dispatch
    local = tuple(self.regs.get(f"COMPUTE_NUM_THREAD_{a}", 0) for a in "XYZ")
    return (d.fields.get("code_fnv"), d.num("x"), d.num("y"), d.num("z"), local)


def groups_of(cp: list[Pkt]) -> list[tuple[int, int, Group]]:
  """(first index, last index, group) of each DISPATCH_DIRECT in the compute packets `cp`."""
  out = []
  for i, p in enumerate(cp):
    if p.op != "DISPATCH_DIRECT": continue
    a = i
    while a > 0 and cp[a - 1].op == "SET_SH_REG" and cp[a - 1].place == p.place: a -= 1
    if a > 0 and cp[a - 1].op == "ACQUIRE_MEM" and cp[a - 1].place == p.place: a -= 1
    b = i + 1 if i + 1 < len(cp) and cp[i + 1].op == "EVENT_WRITE" and cp[i + 1].place == p.place else i
    g = Group(cp[a:b + 1], p)
    for q in g.pkts:
      if q.op == "SET_SH_REG": g.regs.update({k: q.num(k) for k in q.fields})
    out.append((a, b, g))
  return out


def timeline_of(cp: list[Pkt]) -> int:
  """The timeline signal: the address the compute queue's RELEASE_MEMs write most (not the interrupts' mailbox)."""
  c = Counter(p.num("addr") for p in cp if p.op == "RELEASE_MEM" and p.num("data_sel") == 1 and p.num("int_sel") != 2)
  if not c: raise DiffError("the compute queue never signals (no RELEASE_MEM of a value)")
  return c.most_common(1)[0][0]


def token(p: Pkt, timeline: int) -> str:
  """What a packet outside the dispatches does, independent of addresses and counter values."""
  if p.engine == "sdma":
    if p.op == "POLL_REGMEM": return "sdma-wait:timeline" if p.num("addr") == timeline else "sdma-wait:other"
    if p.op == "FENCE": return "sdma-fence:timeline" if p.num("addr") == timeline else "sdma-fence:other"
    return f"sdma-{p.op}"
  if p.op == "WAIT_REG_MEM":
    if p.fields["space"] == "reg": return "hdp-flush" if (p.num("reg"), p.num("reg2"), p.num("op")) == (0xe26, 0xe27, 1) else "wait:reg"
    return "wait:timeline" if p.num("addr") == timeline else "wait:other"
  if p.op == "ACQUIRE_MEM": return f"acquire:{p.fields['gcr']}"
  if p.op == "RELEASE_MEM":
    if p.num("int_sel") == 2 and p.num("data_sel") == 1: return "interrupt"
    if p.num("data_sel") == 1 and p.num("int_sel") == 0: return "signal:timeline" if p.num("addr") == timeline else "signal:other"
    return f"release:{p.fields['data_sel']}:{p.fields['int_sel']}"
  if p.op == "INDIRECT_BUFFER": return "ib"
  return p.op


ACQUIRE_ALL = "acquire:0xc3f1"  # every cache, written back and invalidated (tinygrad's acquire_mem() default)
BARRIER_TOKENS = ("wait:timeline", "hdp-flush", ACQUIRE_ALL)
# which class explains a token that one side has and the other does not, by the side that has it
TOKEN_CLASS = {
  ("ib", "tg"): "submission", ("ib", "hcq"): "submission",
  ("interrupt", "tg"): "interrupt", ("sdma-TRAP", "tg"): "interrupt", ("sdma-fence:other", "tg"): "interrupt",
  ("wait:other", "tg"): "graph-kickoff", ("signal:other", "tg"): "graph-kickoff",
  ("hdp-flush", "tg"): "batching", ("hdp-flush", "hcq"): "batching", (ACQUIRE_ALL, "tg"): "batching", (ACQUIRE_ALL, "hcq"): "batching",
  ("wait:timeline", "tg"): "batching", ("wait:timeline", "hcq"): "batching",
  ("signal:timeline", "tg"): "batching", ("signal:timeline", "hcq"): "batching",
  ("sdma-wait:timeline", "tg"): "sdma", ("sdma-wait:timeline", "hcq"): "sdma",
  ("sdma-fence:timeline", "tg"): "sdma", ("sdma-fence:timeline", "hcq"): "sdma",
  ("sdma-NOP", "tg"): "sdma", ("sdma-NOP", "hcq"): "sdma", ("sdma-INDIRECT", "tg"): "sdma", ("sdma-INDIRECT", "hcq"): "sdma",
}


@dataclass
class Side:
  name: str
  pkts: list[Pkt]
  cp: list[Pkt] = field(default_factory=list)
  timeline: int = 0
  groups: list[tuple[int, int, Group]] = field(default_factory=list)
  subs: list[tuple[int, int]] = field(default_factory=list)  # (first, last) compute index of each submission

  def __post_init__(self):
    queues = {p.queue for p in self.pkts if p.engine == "cp"}
    if len(queues) != 1: raise DiffError(f"{self.name}: {len(queues)} compute queues ({sorted(queues)}); one is compared")
    self.cp = [p for p in self.pkts if p.engine == "cp"]
    self.timeline = timeline_of(self.cp)
    self.groups = groups_of(self.cp)
    # a submission ends with the timeline signal (and the interrupt that follows it)
    start = 0
    for i, p in enumerate(self.cp):
      if token(p, self.timeline) == "signal:timeline":
        end = i + 1 if i + 1 < len(self.cp) and token(self.cp[i + 1], self.timeline) == "interrupt" else i
        self.subs.append((start, end))
        start = end + 1
    if start < len(self.cp): self.subs.append((start, len(self.cp) - 1))

  def sub_of(self, i: int) -> int:
    return next(k for k, (a, b) in enumerate(self.subs) if a <= i <= b)

  def window(self, first: int, count: int, copies: int):
    """The packets (both engines, in execution order) of the submissions holding dispatches first..first+count-1, and those
    dispatches' groups. The compute packets are those from the first submission's INDIRECT_BUFFER to the last one's signal. The
    SDMA engine runs beside the CP, so a call's copies can complete before the CP reaches the call's IB (whichever thread gets
    there first): with `copies` copy launches in the bundle, the call's SDMA packets begin at the last `copies` COPY_LINEARs
    completed by the call's end (the SDMA engine runs its ring in order, and the call's copies are the last submitted before it),
    with the waits just before them; without copies, at the CP's first packet."""
    gs = self.groups[first:first + count]
    s0, s1 = self.sub_of(gs[0][0]), self.sub_of(gs[-1][1])
    a, b = self.subs[s0][0], self.subs[s1][1]
    lo, hi = self.cp[a].seq, self.cp[b].seq
    sdma_lo = lo
    sd = [p for p in self.pkts if p.engine == "sdma" and p.seq <= hi]
    at = [i for i, p in enumerate(sd) if p.op == "COPY_LINEAR"]
    if copies > 0 and len(at) >= copies:
      i = at[-copies]
      while i > 0 and token(sd[i - 1], self.timeline) in ("sdma-wait:timeline", "sdma-wait:other", "sdma-NOP"): i -= 1
      sdma_lo = sd[i].seq
    keep = [p for p in self.pkts if p.engine != "sdma" and lo <= p.seq <= hi] + [p for p in sd if p.seq >= sdma_lo]
    return sorted(keep, key=lambda p: p.seq), gs, self.subs[s0:s1 + 1]


# ---------------------------------------------------------------- the comparison

class Report:
  def __init__(self):
    self.counts: Counter[str] = Counter()
    self.examples: dict[str, str] = {}
    self.unexplained: list[str] = []

  def explain(self, cls: str, example: str):
    if cls not in CLASSES: raise KeyError(cls)
    self.counts[cls] += 1
    self.examples.setdefault(cls, example)

  def fail(self, what: str):
    self.unexplained.append(what)


def bytes_of(p: Pkt, k: int) -> bytes | None:
  v = p.fields.get(f"mem{k}")
  return None if v is None else bytes.fromhex(v)


class AddressMap:
  """tinygrad's buffer addresses against hcq's, one to one, and each bundle buffer's base on both sides."""
  def __init__(self):
    self.t2h: dict[int, int] = {}
    self.h2t: dict[int, int] = {}
    self.base: dict[int, tuple[int, int]] = {}

  def add(self, t: int, h: int, buf: int, off: int, where: str, rep: Report):
    th, ht = self.t2h.setdefault(t, h), self.h2t.setdefault(h, t)
    if th != h or ht != t:
      rep.fail(f"{where}: tinygrad's address {t:#x} and hcq's {h:#x} do not map one to one (before: tinygrad's {t:#x} was "
               f"hcq's {th:#x}, hcq's {h:#x} tinygrad's {ht:#x})")
    if self.base.setdefault(buf, (t - off, h - off)) != (t - off, h - off):
      rep.fail(f"{where}: bundle buffer {buf} + {off:#x} sits at tinygrad {t:#x} / hcq {h:#x}, elsewhere than its other arguments")
    if t != h: rep.explain("buffer-address", f"{where}: tinygrad {t:#x}, hcq {h:#x} (bundle buffer {buf} + {off:#x})")


def compare_dispatch(k: int, tg: Group, hq: Group, launch: dict, kern: Kernel, amap: AddressMap, rep: Report):
  where = f"dispatch {k} ({launch['name']})"
  ops_t, ops_h = [p.op for p in tg.pkts], [p.op for p in hq.pkts]
  if ops_t != ops_h:
    rep.fail(f"{where}: packets {ops_t} (tinygrad) against {ops_h} (hcq)")
    return
  rsrc2 = hq.regs.get("COMPUTE_PGM_RSRC2", 0)
  for pt, ph in zip(tg.pkts, hq.pkts):
    if pt.op == "SET_SH_REG":
      if list(pt.fields) != list(ph.fields):
        rep.fail(f"{where}: SET_SH_REG of {list(pt.fields)} (tinygrad) against {list(ph.fields)} (hcq)")
        continue
      for reg in pt.fields:
        vt, vh = pt.num(reg), ph.num(reg)
        if reg.startswith(("COMPUTE_PGM_LO", "COMPUTE_PGM_HI")):
          if vt != vh: rep.explain("code-address", f"{where}: {reg} {vt:#x} (tinygrad) / {vh:#x} (hcq)")
        elif reg.startswith("COMPUTE_DISPATCH_SCRATCH_BASE"):
          if vt != vh: rep.explain("scratch-base", f"{where}: {reg} {vt:#x} / {vh:#x}")
        elif reg == "COMPUTE_TMPRING_SIZE":
          if vt != vh: compare_tmpring(where, vt, vh, rsrc2, kern, rep)
        elif reg.startswith("COMPUTE_USER_DATA_"):
          pass  # with the DISPATCH_DIRECT's user data below
        elif vt != vh:
          rep.fail(f"{where}: {reg} = {vt:#x} (tinygrad), {vh:#x} (hcq)")
    elif pt.op == "DISPATCH_DIRECT":
      compare_direct(where, pt, ph, launch, kern, amap, rep)
    elif pt.words != ph.words:
      rep.fail(f"{where}: {pt.op} differs: {pt.short()} (tinygrad) / {ph.short()} (hcq)")


def compare_tmpring(where: str, vt: int, vh: int, rsrc2: int, kern: Kernel, rep: Report):
  waves = lambda v: v & 0xfff  # noqa: E731
  lane_bytes = lambda v: ((v >> 12) & 0x7fff) * 256 // 64  # noqa: E731  (wave64 lanes share WAVESIZE x 256 bytes)
  if rsrc2 & RSRC2_SCRATCH_EN and min(lane_bytes(vt), lane_bytes(vh)) < kern.private_size:
    rep.fail(f"{where}: COMPUTE_TMPRING_SIZE {vt:#x} (tinygrad) / {vh:#x} (hcq): a kernel with {kern.private_size} private bytes "
             f"a lane gets {lane_bytes(vt)} / {lane_bytes(vh)}")
  elif waves(vt) != waves(vh):
    rep.fail(f"{where}: COMPUTE_TMPRING_SIZE.WAVES {waves(vt)} (tinygrad) / {waves(vh)} (hcq)")
  else:
    rep.explain("scratch-size", f"{where}: COMPUTE_TMPRING_SIZE {vt:#x} (tinygrad, {lane_bytes(vt)} B a lane) / {vh:#x} "
                f"(hcq, {lane_bytes(vh)} B a lane), SCRATCH_EN {rsrc2 & 1}, the kernel's private segment {kern.private_size} B")


def compare_direct(where: str, pt: Pkt, ph: Pkt, launch: dict, kern: Kernel, amap: AddressMap, rep: Report):
  for f in ("x", "y", "z", "initiator", "code_bytes", "code_fnv", "user_sgprs"):
    if pt.fields.get(f) != ph.fields.get(f): rep.fail(f"{where}: DISPATCH_DIRECT {f} {pt.fields.get(f)} (tinygrad) / {ph.fields.get(f)} (hcq)")
  n = int(ph.fields.get("code_bytes", "0"))
  if n == 0 or n > len(kern.text) or fnv1a64(kern.text[:n]) != int(ph.fields.get("code_fnv", "0"), 16):
    rep.fail(f"{where}: the code the CP loaded ({n} bytes, hash {ph.fields.get('code_fnv')}) is not the bundle object's at its entry")
  ut = [int(x, 16) for x in pt.fields.get("user_data", "").split(",") if x]
  uh = [int(x, 16) for x in ph.fields.get("user_data", "").split(",") if x]
  if len(ut) != len(uh) or len(uh) < 2 + 4 * (kern.properties & 1) + 2 * (kern.properties >> 1 & 1):
    rep.fail(f"{where}: user data {ut} (tinygrad) / {uh} (hcq)")
    return
  # the user SGPRs as tinygrad's exec and hcq's launch::user_sgprs lay them out: the private segment buffer (4, when the kernel
  # enables it), the dispatch packet pointer (2, likewise), the kernel-argument pointer (2); the rest are registers neither writes
  priv, disp = 4 * (kern.properties & 1), 2 * (kern.properties >> 1 & 1)
  karg = priv + disp
  for i in range(len(uh)):
    if i < priv:
      if i < 2 and ut[i] != uh[i]: rep.explain("scratch-base", f"{where}: the private segment buffer's address word {i}")
      elif i == 1 and (ut[i] ^ uh[i]) & 0xffff0000: rep.fail(f"{where}: the private segment buffer's word 1 {ut[i]:#x} / {uh[i]:#x}")
      elif i >= 2 and ut[i] != uh[i]: rep.fail(f"{where}: the private segment buffer's word {i} {ut[i]:#x} / {uh[i]:#x}")
    elif i == priv and disp:
      bt, bh = bytes_of(pt, i), bytes_of(ph, i)
      if bt is None or bh is None or len(bt) < 64 or len(bh) < 64:
        rep.fail(f"{where}: the dispatch packet pointer (user data {i}) does not point at 64 mapped bytes")
        continue
      # hsa_kernel_dispatch_packet_t: the sizes (work-group, grid, segments) as the dispatch's; kernarg_address its own pointer
      if bt[4:32] != bh[4:32]: rep.fail(f"{where}: dispatch packet sizes {bt[4:32].hex()} (tinygrad) / {bh[4:32].hex()} (hcq)")
      for b, u, who in ((bt, ut, "tinygrad"), (bh, uh, "hcq")):
        if karg + 1 < len(u) and struct.unpack_from("<Q", b, 40)[0] != (u[karg + 1] << 32 | u[karg]):
          rep.fail(f"{where}: {who}'s dispatch packet does not name its kernel arguments")
      if ut[i:i + 2] != uh[i:i + 2]: rep.explain("kernarg-address", f"{where}: the dispatch packet pointer")
    elif i == priv + 1 and disp:
      pass
    elif i == karg:
      bt, bh = bytes_of(pt, i), bytes_of(ph, i)
      if bt is None or bh is None or len(bt) < kern.kernarg_size or len(bh) < kern.kernarg_size:
        rep.fail(f"{where}: the kernel-argument pointer (user data {i}) does not point at {kern.kernarg_size} mapped bytes")
        continue
      if ut[i:i + 2] != uh[i:i + 2]:
        rep.explain("kernarg-address", f"{where}: {ut[i + 1] << 32 | ut[i]:#x} (tinygrad) / {uh[i + 1] << 32 | uh[i]:#x} (hcq)")
      compare_kernargs(where, bt[:kern.kernarg_size], bh[:kern.kernarg_size], launch, amap, rep)
    elif i == karg + 1:
      pass
    elif ut[i] != uh[i]:
      rep.fail(f"{where}: user data {i} {ut[i]:#x} (tinygrad) / {uh[i]:#x} (hcq)")


def compare_kernargs(where: str, bt: bytes, bh: bytes, launch: dict, amap: AddressMap, rep: Report):
  nbuf = len(launch["args"])
  if len(bt) < 8 * nbuf:
    rep.fail(f"{where}: {len(bt)} kernel-argument bytes for {nbuf} buffer arguments")
    return
  for j, a in enumerate(launch["args"]):
    t, h = struct.unpack_from("<Q", bt, 8 * j)[0], struct.unpack_from("<Q", bh, 8 * j)[0]
    amap.add(t, h, a["buffer"], a["offset"], f"{where} argument {j}", rep)
  if bt[8 * nbuf:] != bh[8 * nbuf:]:
    rep.fail(f"{where}: kernel-argument bytes after the buffer addresses differ: {bt[8 * nbuf:].hex()} (tinygrad) / {bh[8 * nbuf:].hex()} (hcq)")


def check_submissions(side: Side, subs, gs, rep: Report):
  """What makes a submission with dispatches correct: before its first dispatch the timeline wait (but for the process's
  first), the HDP flush and a full cache acquire; after its last the timeline signal."""
  starts = {a for a, _, _ in gs}
  for a, b in subs:
    idx = [i for i in range(a, b + 1) if i in starts]
    if not idx: continue
    before = [token(p, side.timeline) for p in side.cp[a:idx[0]]]
    for need in ("wait:timeline", "hdp-flush", ACQUIRE_ALL):
      if need not in before and not (need == "wait:timeline" and a == 0):
        rep.fail(f"{side.name}: the submission at {side.cp[a].short()} has no {need} before its first dispatch")
    last = max(j for s, j, _ in gs if a <= s <= b)
    if "signal:timeline" not in [token(p, side.timeline) for p in side.cp[last + 1:b + 1]]:
      rep.fail(f"{side.name}: the submission at {side.cp[a].short()} does not signal the timeline after its last dispatch")


def check_sdma(side: Side, win: list[Pkt], rep: Report):
  """Each copy of the side's call waits for the timeline before it (since the SDMA queue's last fence) and fences it after."""
  sd = [p for p in win if p.engine == "sdma"]
  for i, p in enumerate(sd):
    if p.op != "COPY_LINEAR": continue
    before = []
    for q in reversed(sd[:i]):
      if token(q, side.timeline) == "sdma-fence:timeline": break
      before.append(token(q, side.timeline))
    after = [token(q, side.timeline) for q in sd[i + 1:]]
    if "sdma-wait:timeline" not in before: rep.fail(f"{side.name}: {p.short()} does not wait for the timeline")
    if "sdma-fence:timeline" not in after: rep.fail(f"{side.name}: {p.short()} is not followed by the timeline's fence")


def compare_rest(tw: list[Pkt], tgs, hw: list[Pkt], hgs, t: Side, h: Side, rep: Report, copies: list) -> list[str]:
  """The call's other packets, reduced to tokens (dispatch groups as D<k>), diffed; each difference classified (a barrier token
  that both sides have in the same stretch between dispatches, in another order, is barrier-order). Returns the aligned listing."""
  def tokens(win, gs, side):
    skip = {id(p): k for k, (_, _, g) in enumerate(gs) for p in g.pkts}
    out, seen = [], set()
    for p in win:
      if id(p) in skip:
        k = skip[id(p)]
        if k not in seen: out.append((f"D{k}", p))
        seen.add(k)
      else:
        out.append((token(p, side.timeline), p))
    return out

  def segs(toks):
    n, out = 0, []
    for x, _ in toks:
      if x.startswith("D"): n += 1
      out.append(n)
    return out

  listing = []
  # each engine's packets against the other side's of that engine: the CP and the SDMA engine run beside each other, so how
  # their packets interleave in a capture is a race, not a difference
  for engine in ("cp", "sdma"):
    tt = tokens([p for p in tw if p.engine == engine], tgs, t)
    ht = tokens([p for p in hw if p.engine == engine], hgs, h)
    listing.append(f"  ({engine})")
    # a token one side has only (per segment between dispatches) and the other side has too, elsewhere in the same segment, moved:
    # the barrier's place against the timeline wait
    st, sh = segs(tt), segs(ht)
    sm = difflib.SequenceMatcher(a=[x for x, _ in tt], b=[x for x, _ in ht], autojunk=False)
    ops = sm.get_opcodes()
    only_t = Counter((st[i], tt[i][0]) for op, a0, a1, _, _ in ops if op != "equal" for i in range(a0, a1))
    only_h = Counter((sh[i], ht[i][0]) for op, _, _, b0, b1 in ops if op != "equal" for i in range(b0, b1))
    moved = {k: min(only_t[k], only_h[k]) for k in only_t if k[1] in BARRIER_TOKENS and only_h.get(k)}
    moved_left = {"tg": dict(moved), "hcq": dict(moved)}  # each pair counted once, at hcq's place
    for op, a0, a1, b0, b1 in ops:
      if op == "equal":
        for (x, pt), (_, ph) in zip(tt[a0:a1], ht[b0:b1]):
          note = ""
          if x.startswith("D") and pt.place != ph.place:
            rep.explain("submission", f"{x}: in the {pt.place} (tinygrad) / {ph.place} (hcq)")
            note = f"  [submission: tinygrad's {pt.place}, hcq's {ph.place}]"
          elif x.startswith("D") or pt.words == ph.words:
            pass
          elif x in ("wait:timeline", "signal:timeline", "sdma-wait:timeline", "sdma-fence:timeline"):
            rep.explain("timeline", f"{pt.short()} (tinygrad) / {ph.short()} (hcq)")
            note = "  [timeline]"
          elif x == "ib":
            rep.explain("submission", f"{pt.short()} (tinygrad) / {ph.short()} (hcq)")
            note = "  [submission: the IB's address and size]"
          elif x == "sdma-COPY_LINEAR" and pt.num("bytes") == ph.num("bytes"):
            note = "  [buffer-address]"
          else:
            rep.fail(f"{x} differs: {pt.short()} (tinygrad) / {ph.short()} (hcq)")
            note = "  [UNEXPLAINED]"
          if x == "sdma-COPY_LINEAR": copies.append((pt, ph))
          listing.append(f"  = {x:<22}{note}")
        continue
      for side, seq, segment in (("tg", tt[a0:a1], st[a0:a1]), ("hcq", ht[b0:b1], sh[b0:b1])):
        who = "tinygrad" if side == "tg" else "hcq"
        for (x, p), sg in zip(seq, segment):
          left = moved_left[side]
          if left.get((sg, x), 0) > 0:
            left[(sg, x)] -= 1
            if side == "hcq": rep.explain("barrier-order", f"{x} before dispatch {sg}: in another place against the HDP flush")
            listing.append(f"  {'-' if side == 'tg' else '+'} {x:<22}  [barrier-order: moved]")
            continue
          cls = None if x.startswith("D") else TOKEN_CLASS.get((x, side))
          if cls is None:
            rep.fail(f"{who} only: {p.short()}")
            listing.append(f"  {'-' if side == 'tg' else '+'} {x:<22}  [UNEXPLAINED] {p.short()}")
          else:
            rep.explain(cls, f"{who} only: {p.short()}")
            listing.append(f"  {'-' if side == 'tg' else '+'} {x:<22}  [{cls}]")
  return listing


def compare(bundle: Path, tg_cap: Path, hcq_cap: Path, verbose: bool) -> int:
  m = json.loads((bundle / "manifest.json").read_text())
  g = next((x for x in m["graphs"] if x["target"] == "amd"), None)
  if g is None: raise DiffError(f"{bundle}: no amd graph")
  launches = [x for x in g["launches"] if x["kind"] == "kernel"]
  if not launches: raise DiffError(f"{bundle}: no kernel launches")
  kernels = {}
  for p in g["programs"]:
    f = p["objects"]["amd_gfx1100"]["file"]
    kernels[p["id"]] = read_kernel((bundle / f).read_bytes(), f)
  t, h = Side("tinygrad", parse_capture(tg_cap)), Side("hcq", parse_capture(hcq_cap))
  K = len(launches)
  if len(h.groups) < K or len(h.groups) % K:
    raise DiffError(f"hcq dispatched {len(h.groups)} times, not a whole number of calls of the bundle's {K} kernel launches")
  calls = [[x[2].sig() for x in h.groups[i:i + K]] for i in range(0, len(h.groups), K)]
  if any(c != calls[0] for c in calls): raise DiffError("hcq's calls do not all dispatch the same kernels")
  want = calls[-1]
  tsig = [x[2].sig() for x in t.groups]
  starts = [i for i in range(len(tsig) - K + 1) if tsig[i:i + K] == want]
  if not starts:
    # the same grids, other code: aligned by the grids, and the code is an unexplained difference of each such dispatch
    starts = [i for i in range(len(tsig) - K + 1) if [x[1:] for x in tsig[i:i + K]] == [x[1:] for x in want]]
    if not starts: raise DiffError(f"no run of tinygrad's {len(tsig)} dispatches is hcq's call of {K} (program code, grid)")
    print(f"(no run of tinygrad's dispatches runs hcq's code; aligned by the grids alone, at dispatch {starts[-1]})")
  n_copies = sum(1 for x in g["launches"] if x["kind"] == "copy")
  tw, tgs, tsubs = t.window(starts[-1], K, n_copies)
  hw, hgs, hsubs = h.window(len(h.groups) - K, K, n_copies)
  rep = Report()
  amap = AddressMap()
  for k, ((_, _, gt), (_, _, gh)) in enumerate(zip(tgs, hgs)):
    compare_dispatch(k, gt, gh, launches[k], kernels[launches[k]["program"]], amap, rep)
  check_submissions(h, hsubs, hgs, rep)
  check_submissions(t, tsubs, tgs, rep)
  copies: list[tuple[Pkt, Pkt]] = []
  listing = compare_rest(tw, tgs, hw, hgs, t, h, rep, copies)
  # the copies of the call (both sides, in order) are the bundle's copy launches: sizes, and addresses by bundle buffer
  bundle_copies = [x for x in g["launches"] if x["kind"] == "copy"]
  if len(copies) != len(bundle_copies):
    rep.fail(f"{len(copies)} SDMA copies of the same size in both calls, the bundle has {len(bundle_copies)} copy launches")
  for k, ((pt, ph), c) in enumerate(zip(copies, bundle_copies)):
    if ph.num("bytes") != c["dst"]["nbytes"]: rep.fail(f"copy {k}: {ph.num('bytes')} bytes, the bundle's copy launch {c['dst']['nbytes']}")
    for end, f in (("src", "src"), ("dst", "dst")):
      amap.add(pt.num(f), ph.num(f), c[end]["buffer"], c[end]["offset"], f"copy {k} {end}", rep)
  check_sdma(h, hw, rep)
  print(f"tinygrad: {len(t.pkts)} packets, {len(t.groups)} dispatches; its final call: dispatches {starts[-1]}..{starts[-1] + K - 1}, "
        f"{len(tw)} packets in {len(tsubs)} submission(s)")
  print(f"hcq:      {len(h.pkts)} packets, {len(h.groups)} dispatches in {len(calls)} calls; its last call: {len(hw)} packets in "
        f"{len(hsubs)} submission(s)")
  print(f"dispatches compared: {K} ({sum(len(x[2].pkts) for x in hgs)} packets each side)")
  if verbose:
    print("the call's other packets (- tinygrad only, + hcq only, = both):")
    print("\n".join(listing))
  for cls, n in sorted(rep.counts.items(), key=lambda x: -x[1]):
    print(f"{cls}: {n} -- {CLASSES[cls]}")
    print(f"    e.g. {rep.examples[cls]}")
  for u in rep.unexplained: print(f"UNEXPLAINED: {u}")
  print(f"{sum(rep.counts.values())} differences explained in {len(rep.counts)} classes, {len(rep.unexplained)} unexplained")
  return 1 if rep.unexplained else 0


# ---------------------------------------------------------------- the captures

def capture(model: Path, out: Path, hcq_bin: Path, lib: Path, py: str, iters: int, extra: list[str]) -> tuple[Path, Path, Path]:
  env = {**os.environ, "HCQ_VKGSL_LIB": str(lib)}
  for k in ("DEV", "AMD_LLVM", "AMD_CC", "IMAGE", "JIT_BATCH_SIZE", "HCQ_VKGSL_AMD_CAPTURE"): env.pop(k, None)
  bundle, tg_cap, hcq_cap = out / model.stem, out / f"{model.stem}.tinygrad.txt", out / f"{model.stem}.hcq.txt"
  for p in (tg_cap, hcq_cap): p.unlink(missing_ok=True)
  if bundle.exists(): shutil.rmtree(bundle)
  runs = [
    ("tinygrad's --amd-jit export", tg_cap, [str(hcq_bin), "virtual", "--", py, str(ROOT / "tools/export_tinygrad.py"), "--model",
                                             str(model), "--amd-jit", *extra, "-o", str(bundle)]),
    ("hcq run --device AMD", hcq_cap, [str(hcq_bin), "virtual", "--", str(hcq_bin), "run", str(bundle), "--device", "AMD", "--check",
                                       "--iters", str(iters)]),
  ]
  for what, cap, cmd in runs:
    r = subprocess.run(cmd, env={**env, "HCQ_VKGSL_AMD_CAPTURE": str(cap)}, capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not cap.exists():
      raise DiffError(f"{what} failed ({r.returncode}): {(r.stdout + r.stderr).strip()[-600:]}")
  return bundle, tg_cap, hcq_cap


def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--model", type=Path, help="a tools/models file: export it with --amd-jit and run the bundle, both captured")
  ap.add_argument("--bundle", type=Path, help="with --tinygrad and --hcq: compare captures already made")
  ap.add_argument("--tinygrad", type=Path, help="tinygrad's capture (HCQ_VKGSL_AMD_CAPTURE of the --amd-jit export)")
  ap.add_argument("--hcq", type=Path, help="hcq's capture (HCQ_VKGSL_AMD_CAPTURE of hcq run --device AMD)")
  ap.add_argument("--keep", type=Path, help="with --model: the directory for the bundle and captures (default: a temporary one)")
  ap.add_argument("--iters", type=int, default=2, help="with --model: hcq run's --iters (default 2)")
  ap.add_argument("--export-arg", action="append", default=[], help="with --model: one more export_tinygrad.py argument (--no-prune)")
  ap.add_argument("-v", "--verbose", action="store_true", help="print the call's other packets aligned")
  a = ap.parse_args()
  try:
    if a.model:
      hcq_bin = Path(os.environ.get("HCQ_BIN", ""))
      if not hcq_bin.is_file(): raise DiffError("HCQ_BIN does not name the hcq binary (cargo build --release -p hcq-cli)")
      lib = Path(os.environ.get("HCQ_VKGSL_LIB") or hcq_bin.parent / "libhcq_vkgsl.so")
      if not lib.is_file(): raise DiffError(f"no libhcq_vkgsl.so at {lib} (cargo build --release -p hcq-vkgsl)")
      py = os.environ.get("TG_PY") or str(ROOT / "target/tg-export-venv/bin/python")
      with tempfile.TemporaryDirectory() as tmp:
        out = a.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        bundle, tg_cap, hcq_cap = capture(a.model.resolve(), out, hcq_bin, lib, py, a.iters, a.export_arg)
        return compare(bundle, tg_cap, hcq_cap, a.verbose)
    if not (a.bundle and a.tinygrad and a.hcq): ap.error("give --model, or --bundle with --tinygrad and --hcq")
    return compare(a.bundle, a.tinygrad, a.hcq, a.verbose)
  except (DiffError, OSError, subprocess.TimeoutExpired) as e:
    print(f"amd_stream_diff: {e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
