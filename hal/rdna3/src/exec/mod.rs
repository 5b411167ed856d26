//! An interpreter of the gfx1100 compute ISA: waves of 32 (or 64) lanes with their SGPRs, VGPRs,
//! EXEC, VCC and SCC; scalar branches; LDS shared by a work-group's waves, with `s_barrier`;
//! per-lane scratch (private) memory; global memory through a [`Memory`] the caller supplies.
//!
//! [`Program::load`] decodes a kernel once and resolves what every instruction does; an opcode it
//! does not execute (or a modifier it does not implement) is refused there, by name and offset,
//! never met halfway through a dispatch. [`Program::run`] then executes a grid of work-groups.
//! A load or store outside memory is a [`Fault`] naming the work-group, the wave, the lane, the
//! instruction and the address; so is a wave that runs past its step budget (a hang).
//!
//! Semantics follow AMD's "RDNA3 Instruction Set Architecture" reference guide (Feb 2023):
//! ch. 4 (program state), 5 (scalar ALU), 6 (vector ALU, WMMA in 7.9), 10–11 (memory), 12 (LDS),
//! and the per-opcode pseudo-code of ch. 16. Wave setup follows LLVM's AMDGPUUsage ("Initial
//! Kernel Execution State"): user SGPRs, then the enabled work-group ids, work-group info and the
//! scratch wave offset; on gfx11 the work-item ids packed in v0 (x | y << 10 | z << 20).

// Lane loops index several per-lane arrays (registers, results, masks) by the lane number.
#![allow(clippy::needless_range_loop)]

mod atomic;
mod cross;
mod divide;
mod fp;
mod lanes;
#[cfg(test)]
mod tests;
pub mod valu;
mod vmem;

use crate::decode::{DecodeError, Encoding, Inst, decode};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use valu::{Cond, L, Sig, T};

/// The memory a dispatch's global, flat and scalar loads and stores reach.
pub trait Memory {
    /// Read `buf.len()` bytes at `addr`; `false` if any of them is outside memory.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool;
    /// Write `data` at `addr`; `false` (nothing written) if any byte is outside memory.
    fn write(&mut self, addr: u64, data: &[u8]) -> bool;
    /// Read `out.len()` (at most 4) little-endian dwords at `addr`, any alignment: what
    /// [`Memory::read`] of their bytes reads (the default), which a memory of words may do
    /// faster.
    fn read_dwords(&mut self, addr: u64, out: &mut [u32]) -> bool {
        let n = out.len().min(4);
        let mut b = [0u8; 16];
        if !self.read(addr, &mut b[..4 * n]) {
            return false;
        }
        for (k, x) in out[..n].iter_mut().enumerate() {
            *x = u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
        }
        true
    }
    /// Write `data.len()` (at most 4) little-endian dwords at `addr`, any alignment: what
    /// [`Memory::write`] of their bytes writes (the default).
    fn write_dwords(&mut self, addr: u64, data: &[u32]) -> bool {
        let n = data.len().min(4);
        let mut b = [0u8; 16];
        for (k, x) in data[..n].iter().enumerate() {
            b[4 * k..4 * k + 4].copy_from_slice(&x.to_le_bytes());
        }
        self.write(addr, &b[..4 * n])
    }
    /// An atomic read-modify-write of the `bytes` (4 or 8) little-endian bytes at `addr`: `f`
    /// maps their value to the one written back; the value before, or `None` (nothing
    /// written) when a byte is outside memory. The default reads, then writes: atomic for a
    /// memory one wave reaches at a time; a memory threads share makes it atomic among them
    /// (`f` may then be called again on a newer value).
    fn atomic(&mut self, addr: u64, bytes: usize, f: &dyn Fn(u64) -> u64) -> Option<u64> {
        let n = bytes.min(8);
        let mut b = [0u8; 8];
        if !self.read(addr, &mut b[..n]) {
            return None;
        }
        let old = u64::from_le_bytes(b);
        self.write(addr, &f(old).to_le_bytes()[..n]).then_some(old)
    }
    /// A wave's whole-dword loads: for each lane `exec` enables, in lane order, `n` (1 to 4)
    /// dwords at `addrs[lane]` into `out[k * addrs.len() + lane]` (`k < n`), as
    /// [`Memory::read_dwords`] reads them (the default: it, lane by lane). At the first lane that
    /// cannot, `Err(lane)`, the lanes before it read.
    fn gather_dwords(&mut self, addrs: &[u64], exec: u64, n: usize, out: &mut [u32]) -> Result<(), usize> {
        let (lanes, n) = (addrs.len(), n.min(4));
        let mut e = exec;
        while e != 0 {
            // CAST: a lane < 64.
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            let mut b = [0u32; 4];
            if !addrs.get(l).is_some_and(|&a| self.read_dwords(a, &mut b[..n])) {
                return Err(l);
            }
            for (k, x) in b[..n].iter().enumerate() {
                if let Some(o) = out.get_mut(k * lanes + l) {
                    *o = *x;
                }
            }
        }
        Ok(())
    }
    /// A wave's whole-dword stores: for each lane `exec` enables, in lane order, `n` (1 to 4)
    /// dwords `data[k * addrs.len() + lane]` at `addrs[lane]`, as [`Memory::write_dwords`]
    /// writes them (the default: it, lane by lane). At the first lane that cannot, `Err(lane)`,
    /// the lanes before it written.
    fn scatter_dwords(&mut self, addrs: &[u64], exec: u64, n: usize, data: &[u32]) -> Result<(), usize> {
        let (lanes, n) = (addrs.len(), n.min(4));
        let mut e = exec;
        while e != 0 {
            // CAST: a lane < 64.
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            let mut b = [0u32; 4];
            for (k, x) in b[..n].iter_mut().enumerate() {
                *x = data.get(k * lanes + l).copied().unwrap_or(0);
            }
            if !addrs.get(l).is_some_and(|&a| self.write_dwords(a, &b[..n])) {
                return Err(l);
            }
        }
        Ok(())
    }
}

/// Why [`Program::load`] refused a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The code does not decode.
    Decode(DecodeError),
    /// An instruction this interpreter does not execute.
    Unsupported {
        /// Byte offset of the instruction in the code.
        at: usize,
        /// Its mnemonic.
        name: &'static str,
        /// What of it is not executed (the opcode itself, or a modifier).
        what: &'static str,
    },
    /// No instruction at the entry (it is at or past the end of the code).
    Empty {
        /// The entry's byte offset.
        entry: usize,
    },
    /// A branch whose target is not an instruction of the code.
    Branch {
        /// Byte offset of the branch.
        at: usize,
        /// The byte offset it names.
        target: i64,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Decode(e) => write!(f, "gfx1100 code: {e}"),
            LoadError::Unsupported { at, name, what } => {
                write!(f, "gfx1100 code at {at:#x}: {name}: {what} is not executed by the interpreter")
            }
            LoadError::Empty { entry } => write!(f, "gfx1100 code: no instruction at the entry {entry:#x}"),
            LoadError::Branch { at, target } => {
                write!(f, "gfx1100 code at {at:#x}: branch to {target:#x}, which is not an instruction of the code")
            }
        }
    }
}

impl core::error::Error for LoadError {}

/// What went wrong in a [`Fault`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A global, flat or scalar access outside memory.
    Memory {
        /// A store (else a load).
        write: bool,
        /// Bytes accessed.
        bytes: u32,
    },
    /// An LDS access beyond the work-group's allocation.
    Lds {
        /// A store (else a load).
        write: bool,
        /// The allocation's size.
        size: u32,
    },
    /// A scratch access beyond the lane's private segment.
    Scratch {
        /// A store (else a load).
        write: bool,
        /// The private segment's size.
        size: u32,
    },
    /// The wave ran past its step budget ([`Dispatch::max_steps`]).
    Hang {
        /// Instructions it executed.
        steps: u64,
    },
    /// The wave executed `s_trap` or ran into the padding after the program (`s_code_end`).
    Trap,
    /// The program counter left the code.
    PcOutOfCode,
    /// An instruction needs all lanes (WMMA) and EXEC lacks some, or runs in a wave size it is not
    /// defined for.
    Lanes,
}

/// A wave's fault: where it happened and what it touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The work-group's id.
    pub group: [u32; 3],
    /// The wave's index in its work-group.
    pub wave: u32,
    /// The lane, where one lane faulted.
    pub lane: Option<u32>,
    /// Byte offset of the instruction in the code.
    pub at: usize,
    /// Its mnemonic.
    pub inst: &'static str,
    /// The address accessed (0 where none).
    pub addr: u64,
    /// What went wrong.
    pub kind: FaultKind,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.group;
        write!(f, "gfx1100 fault: work-group ({x},{y},{z}) wave {}", self.wave)?;
        if let Some(l) = self.lane {
            write!(f, " lane {l}")?;
        }
        write!(f, " at {:#x} ({}): ", self.at, self.inst)?;
        match self.kind {
            FaultKind::Memory { write, bytes } => {
                write!(f, "{} of {bytes} bytes at {:#x} outside memory", rw(write), self.addr)
            }
            FaultKind::Lds { write, size } => {
                write!(f, "LDS {} at {:#x} beyond the work-group's {size} bytes", rw(write), self.addr)
            }
            FaultKind::Scratch { write, size } => {
                write!(f, "scratch {} at {:#x} beyond the lane's {size}-byte private segment", rw(write), self.addr)
            }
            FaultKind::Hang { steps } => write!(f, "hung: {steps} instructions without ending"),
            FaultKind::Trap => f.write_str("trap (s_trap, or ran into s_code_end past the program)"),
            FaultKind::PcOutOfCode => f.write_str("the program counter left the code"),
            FaultKind::Lanes => f.write_str("needs every lane of the wave active (WMMA)"),
        }
    }
}

fn rw(write: bool) -> &'static str {
    if write { "store" } else { "load" }
}

impl core::error::Error for Fault {}

/// How a dispatch sets up each wave: what the kernel descriptor enables and the driver passes.
#[derive(Clone, Copy, Debug)]
pub struct Dispatch<'a> {
    /// Waves of 64 lanes (else 32: the kernel descriptor's wavefront-size-32 bit clear).
    pub wave64: bool,
    /// Work-group size in work-items.
    pub local: [u32; 3],
    /// The user SGPRs, from s0 (private segment buffer, dispatch pointer, kernarg pointer, … as
    /// the descriptor enables them).
    pub user_sgprs: &'a [u32],
    /// COMPUTE_PGM_RSRC2's USER_SGPR_COUNT: where the system SGPRs start (the descriptor may
    /// reserve more user SGPRs than the driver fills; the rest read 0).
    pub user_sgpr_count: u32,
    /// COMPUTE_PGM_RSRC2's TGID_X/Y/Z_EN: the work-group ids follow the user SGPRs.
    pub tgid: [bool; 3],
    /// TG_SIZE_EN: the work-group info SGPR follows (its wave count in bits 5:0).
    pub tg_size: bool,
    /// ENABLE_PRIVATE_SEGMENT: the scratch wave offset SGPR follows (0: scratch is per lane here).
    pub wave_offset: bool,
    /// LDS bytes per work-group.
    pub lds_bytes: u32,
    /// Private (scratch) bytes per lane.
    pub private_bytes: u32,
    /// Instructions a wave may execute before it is a hang (0: no limit).
    pub max_steps: u64,
}

/// What a dispatch executed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions executed, over all waves.
    pub insts: u64,
    /// Lane-instructions: each vector instruction counts its active lanes.
    pub lane_insts: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Br {
    Always,
    Scc0,
    Scc1,
    Vccz,
    Vccnz,
    Execz,
    Execnz,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Space {
    Global,
    Scratch,
    Lds,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ext {
    /// Whole dwords, or a store of the low bytes.
    Plain,
    /// Zero-extend a byte/short to the dword.
    Zero,
    /// Sign-extend it.
    Sign,
    /// d16: into the low half, the high half kept (zero- or sign-extended byte).
    D16Lo(bool),
    /// d16_hi: into (or from) the high half, the low half kept.
    D16Hi(bool),
}

#[derive(Clone, Copy, Debug)]
struct MemOp {
    space: Space,
    store: bool,
    bytes: u8,
    ext: Ext,
    /// ds_*_2addr: two accesses at offset0 and offset1 (× element size, × 64 for stride64).
    two: Option<u32>,
    /// FLAT: an address in the LDS or private aperture reaches the LDS or the lane's scratch.
    flat: bool,
}

#[derive(Clone, Copy, Debug)]
enum Sem {
    Nop,
    End,
    Barrier,
    Trap,
    Branch(Br, usize),
    Salu(S),
    Smem(u8),
    Valu(Sig),
    Vcmp {
        cond: Cond,
        t: T,
        signed: bool,
        x: bool,
    },
    Readlane,
    Writelane,
    Readfirstlane,
    Mix(u8),
    Pk(Sig),
    Wmma(Wmma),
    Vopd(Sig, Sig),
    /// A VALU op on 32-bit operands: `Program::v32[k]`.
    V32(u32),
    /// A VOPD of 32-bit operands: `Program::v32[k]` (X) and `[k + 1]` (Y).
    Vopd32(u32),
    /// A compare of 32-bit operands: `Program::c32[k]`.
    C32(u32),
    /// A vector memory access: `Program::vmem[k]`.
    VMem(u32),
    /// A VALU op with 64-bit operands: `Program::vw[k]`.
    VW(u32),
    /// `Wmma` with its 256 dot products stepped together (`Cx::wmma_lanes`).
    WmmaLanes(bool),
    Mem(MemOp),
    /// An LDS instruction other than a plain load or store (`atomic::Lds`).
    Lds(atomic::Lds),
    /// global_atomic_*, flat_atomic_*.
    GAtomic(atomic::AtomOp),
    /// global_store_addtid_b32 (store) / global_load_addtid_b32.
    GAddtid(bool),
    /// A VALU op across lanes or on M0-indexed VGPRs (`cross::Cross`).
    Cross(cross::Cross),
    /// VOP3P v_dot2/v_dot4/v_dot8 (not the packed 16-bit math of `Pk`).
    Dot(Dot),
    /// s_getpc_b64.
    Getpc,
    /// s_setpc_b64 (false) / s_swappc_b64 (true).
    Setpc(bool),
    /// s_call_b64 to the step.
    Call(usize),
    /// s_buffer_load_b32…b512: the dwords.
    SBuf(u8),
}

/// A VOP3P dot product: its element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dot {
    F16,
    Bf16,
    /// Bytes; signed where neg_lo says (iu8), else unsigned (u8).
    I8(bool),
    /// Nibbles, the same way.
    I4(bool),
}

/// A WMMA's types: D (and C), then A and B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wmma {
    F32F16,
    F32Bf16,
    F16F16,
    Bf16Bf16,
    I32Iu8,
    I32Iu4,
}

/// A scalar ALU op. `W` marks the 64-bit forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum S {
    AddU,
    SubU,
    AddI,
    SubI,
    Addc,
    Subb,
    MinI,
    MinU,
    MaxI,
    MaxU,
    Cselect(bool),
    And(bool),
    Or(bool),
    Xor(bool),
    Nand(bool),
    Nor(bool),
    Xnor(bool),
    AndNot1(bool),
    OrNot1(bool),
    Lshl(bool),
    Lshr(bool),
    Ashr(bool),
    Bfm,
    MulI,
    MulHiU,
    MulHiI,
    BfeU(bool),
    BfeI(bool),
    AbsdiffI,
    LshlAdd(u8),
    PackLl,
    PackLh,
    PackHh,
    PackHl,
    Mov(bool),
    Cmov(bool),
    Not(bool),
    Brev,
    Clz,
    Ctz,
    Cls,
    Sext8,
    Sext16,
    Bitset0,
    Bitset1,
    Abs,
    /// The `_b64` forms count the 64 bits.
    Bcnt1(bool),
    Bcnt0(bool),
    Brev64,
    Ctz64,
    Clz64,
    Cls64,
    /// s_bitset0_b64 (false) / s_bitset1_b64.
    Bitset64(bool),
    Bitreplicate,
    Quadmask(bool),
    Wqm(bool),
    /// s_and_not0_wrexec (false) / s_and_not1_wrexec, 64-bit.
    Wrexec(bool, bool),
    Bfm64,
    /// s_movrels_b32/b64: D = SGPR[SRC0 + M0].
    Movrels(bool),
    /// s_movreld_b32/b64: SGPR[SDST + M0] = S0.
    Movreld(bool),
    /// s_movrelsd_2_b32: SGPR[SDST + M0[25:16]] = SGPR[SRC0 + M0[9:0]].
    Movrelsd2,
    /// `s_<op>_saveexec`: D = EXEC; EXEC = op(S0, EXEC); SCC = EXEC != 0.
    Saveexec(u8, bool),
    Cmp(Cond, bool, bool),
    Bitcmp(bool, bool),
    Movk,
    Cmovk,
    Cmpk(Cond, bool),
    Addk,
    Mulk,
}

#[derive(Clone, Copy, Debug)]
struct Step {
    inst: Inst,
    sem: Sem,
    /// Dword offset.
    at: usize,
}

/// A kernel decoded and resolved, ready to run.
#[derive(Clone, Debug)]
pub struct Program {
    steps: Vec<Step>,
    wave64: bool,
    /// The resolved 32-bit VALU ops (`Sem::V32`, `Sem::Vopd32`).
    v32: Vec<lanes::V32>,
    /// The resolved 32-bit compares (`Sem::C32`).
    c32: Vec<lanes::C32>,
    /// The resolved vector memory accesses (`Sem::VMem`).
    vmem: Vec<vmem::VMem>,
    /// The resolved VALU ops with 64-bit operands (`Sem::VW`).
    vw: Vec<lanes::VW>,
    /// Dword offset in the code → the step that starts there (`usize::MAX`: none), for the
    /// jumps to computed addresses (`s_setpc_b64`, `s_swappc_b64`).
    starts: Vec<usize>,
    /// The code's address in memory, of its dword 0: what `s_getpc_b64` reads (0 unless
    /// [`Program::set_code_address`] says).
    code_addr: u64,
}

fn unsupported(at: usize, i: &Inst, what: &'static str) -> LoadError {
    LoadError::Unsupported { at: 4 * at, name: i.op.name, what }
}

impl Program {
    /// Decode `code` from dword `entry` to its end and resolve every instruction for waves of
    /// 64 lanes (`wave64`) or 32.
    pub fn load(code: &[u32], entry: usize, wave64: bool) -> Result<Program, LoadError> {
        Self::load_with(code, entry, wave64, true)
    }

    /// [`Program::load`]; `lanes`: the 32-bit VALU ops and compares on the lane-array paths
    /// (else every one on the per-lane path, the reference the tests compare them with).
    fn load_with(code: &[u32], entry: usize, wave64: bool, lanes: bool) -> Result<Program, LoadError> {
        let mut steps = Vec::new();
        let mut starts = vec![usize::MAX; code.len() + 1];
        let mut at = entry;
        while at < code.len() {
            let inst = decode(code, at).map_err(LoadError::Decode)?;
            starts[at] = steps.len();
            steps.push(Step { inst, sem: Sem::Nop, at });
            at += inst.len;
        }
        if steps.is_empty() {
            return Err(LoadError::Empty { entry: 4 * entry });
        }
        for k in 0..steps.len() {
            let (inst, at) = (steps[k].inst, steps[k].at);
            let sem = resolve(&inst, at, wave64)?;
            let sem = match sem {
                Sem::Branch(..) | Sem::Call(_) => {
                    // CAST: simm16 is signed, in dwords after the branch.
                    let t = at as i64 + 1 + i64::from(inst.words[0] as u16 as i16);
                    let idx = usize::try_from(t).ok().and_then(|t| starts.get(t).copied()).unwrap_or(usize::MAX);
                    if idx == usize::MAX {
                        return Err(LoadError::Branch { at: 4 * at, target: 4 * t });
                    }
                    match sem {
                        Sem::Branch(c, _) => Sem::Branch(c, idx),
                        _ => Sem::Call(idx),
                    }
                }
                s => s,
            };
            steps[k].sem = sem;
        }
        let mut p = Program {
            steps,
            wave64,
            v32: Vec::new(),
            c32: Vec::new(),
            vmem: Vec::new(),
            vw: Vec::new(),
            starts,
            code_addr: 0,
        };
        if lanes {
            p.resolve_lanes();
        }
        Ok(p)
    }

    /// Move what the lane-array paths take onto them.
    fn resolve_lanes(&mut self) {
        for k in 0..self.steps.len() {
            let Step { inst: i, sem, .. } = self.steps[k];
            // CAST: a table index below the step count.
            let (nv, nc, nm) = (self.v32.len() as u32, self.c32.len() as u32, self.vmem.len() as u32);
            // CAST: as above.
            let nw = self.vw.len() as u32;
            let fast = match sem {
                Sem::Valu(g) => match lanes::v32(&i, g, valu_mods(&i, g)) {
                    Some(v) => {
                        self.v32.push(v);
                        Some(Sem::V32(nv))
                    }
                    None => lanes::vw(&i, g, valu_mods(&i, g)).map(|v| {
                        self.vw.push(v);
                        Sem::VW(nw)
                    }),
                },
                Sem::Vopd(x, y) => lanes::vopd32(&i, x, y).map(|[vx, vy]| {
                    self.v32.push(vx);
                    self.v32.push(vy);
                    Sem::Vopd32(nv)
                }),
                Sem::Vcmp { cond, t, signed, x } => lanes::c32(&i, cond, t, signed, x, Cx::mods(&i)).map(|c| {
                    self.c32.push(c);
                    Sem::C32(nc)
                }),
                Sem::Mem(m) => {
                    self.vmem.push(vmem::vmem(&i, m));
                    Some(Sem::VMem(nm))
                }
                Sem::Wmma(k @ (Wmma::F32F16 | Wmma::F32Bf16)) if !self.wave64 => {
                    Some(Sem::WmmaLanes(k == Wmma::F32Bf16))
                }
                _ => None,
            };
            if let Some(f) = fast {
                self.steps[k].sem = f;
            }
        }
    }

    /// Where the code is in the GPU's memory (the address of its dword 0): `s_getpc_b64`
    /// reads it, `s_setpc_b64`/`s_swappc_b64` jump by it. Without it the code's addresses
    /// start at 0: relative calls (`s_getpc_b64` + offset) work, an address from memory does
    /// not (a jump out of the code is a fault).
    pub fn set_code_address(&mut self, addr: u64) {
        self.code_addr = addr;
    }

    /// The step at byte address `addr` of the code, if an instruction starts there.
    fn step_at(&self, addr: u64) -> Option<usize> {
        let off = addr.wrapping_sub(self.code_addr);
        if !off.is_multiple_of(4) {
            return None;
        }
        let i = usize::try_from(off / 4).ok()?;
        self.starts.get(i).copied().filter(|&s| s != usize::MAX)
    }

    /// The mnemonics of the program, in order (for tables of what a kernel uses).
    pub fn mnemonics(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.steps.iter().map(|s| s.inst.op.name)
    }

    /// Run every work-group of a grid of `groups` work-groups, in order.
    pub fn run(&self, d: &Dispatch<'_>, groups: [u32; 3], mem: &mut dyn Memory) -> Result<Stats, Fault> {
        let mut st = Stats::default();
        let mut ws = Waves::default();
        for z in 0..groups[2] {
            for y in 0..groups[1] {
                for x in 0..groups[0] {
                    let s = self.run_group_in(d, [x, y, z], mem, &mut ws)?;
                    st.insts += s.insts;
                    st.lane_insts += s.lane_insts;
                }
            }
        }
        Ok(st)
    }

    /// Run one work-group: its waves round-robin, each until it ends or waits at a barrier.
    pub fn run_group(&self, d: &Dispatch<'_>, group: [u32; 3], mem: &mut dyn Memory) -> Result<Stats, Fault> {
        self.run_group_in(d, group, mem, &mut Waves::default())
    }

    /// [`Program::run_group`] in the storage of `ws` (its waves' registers and LDS, kept from
    /// the work-group that ran in it before: a thread running many work-groups allocates them
    /// once). Every work-group starts as on fresh storage.
    pub fn run_group_in(
        &self,
        d: &Dispatch<'_>,
        group: [u32; 3],
        mem: &mut dyn Memory,
        ws: &mut Waves,
    ) -> Result<Stats, Fault> {
        let lanes = if self.wave64 { 64 } else { 32 };
        let [lx, ly, lz] = d.local;
        // CAST: u32 → usize, widening.
        let threads = (lx as usize) * (ly as usize) * (lz as usize);
        let nwaves = threads.div_ceil(lanes);
        let Waves { waves, lds } = ws;
        lds.clear();
        lds.resize(d.lds_bytes as usize, 0);
        waves.truncate(nwaves);
        for (k, w) in waves.iter_mut().enumerate() {
            w.reset(d, group, k, nwaves, lanes);
        }
        for k in waves.len()..nwaves {
            waves.push(Wave::new(d, group, k, nwaves, lanes));
        }
        let mut st = Stats::default();
        loop {
            let mut live = 0;
            for (k, w) in waves.iter_mut().enumerate() {
                if w.done || w.barrier {
                    continue;
                }
                // CAST: a wave index < 2^10.
                let mut cx = Cx { p: self, d, group, wave: k as u32, mem, lds, st: &mut st };
                if lanes == 32 {
                    cx.run::<32>(w)?;
                } else {
                    cx.run::<64>(w)?;
                }
            }
            let mut waiting = 0;
            for w in waves.iter() {
                if !w.done {
                    live += 1;
                    waiting += usize::from(w.barrier);
                }
            }
            if live == 0 {
                return Ok(st);
            }
            // Every live wave is at the barrier: release them (waves that ended do not count).
            if waiting == live {
                for w in waves.iter_mut() {
                    w.barrier = false;
                }
            }
        }
    }
}

/// The storage of a work-group's waves and LDS, for [`Program::run_group_in`] to reuse.
#[derive(Default)]
pub struct Waves {
    waves: Vec<Wave>,
    lds: Vec<u8>,
}

impl fmt::Debug for Waves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waves").field("waves", &self.waves.len()).field("lds", &self.lds.len()).finish()
    }
}

/// One wave's state.
#[derive(Clone)]
struct Wave {
    s: [u32; 128],
    scc: bool,
    /// VGPRs: `v[reg * lanes + lane]`.
    v: Vec<u32>,
    /// VGPRs `hi..` are zero: one more than the highest written since they were zeroed (every
    /// write goes through `set_vgpr` or `lanes::vreg_mut`, which raise it), so a reused wave
    /// zeroes only those below.
    hi: usize,
    lanes: usize,
    pc: usize,
    done: bool,
    barrier: bool,
    steps: u64,
    /// Scratch: `private_bytes` per lane.
    private: Vec<u8>,
    private_bytes: usize,
}

impl Wave {
    fn new(d: &Dispatch<'_>, group: [u32; 3], k: usize, nwaves: usize, lanes: usize) -> Wave {
        let mut w = Wave {
            s: [0; 128],
            scc: false,
            v: vec![0; 256 * lanes],
            hi: 0,
            lanes,
            pc: 0,
            done: false,
            barrier: false,
            steps: 0,
            private: Vec::new(),
            private_bytes: 0,
        };
        w.reset(d, group, k, nwaves, lanes);
        w
    }

    /// The state `new` makes, in this wave's storage: VGPRs zeroed up to `hi` (the rest are
    /// zero already), scratch zeroed.
    fn reset(&mut self, d: &Dispatch<'_>, group: [u32; 3], k: usize, nwaves: usize, lanes: usize) {
        if self.lanes != lanes || self.v.len() != 256 * lanes {
            self.v = vec![0; 256 * lanes];
            self.lanes = lanes;
        } else {
            let used = (self.hi * lanes).min(self.v.len());
            self.v[..used].fill(0);
        }
        self.hi = 1;
        let mut s = [0u32; 128];
        let mut n = 0;
        for &u in d.user_sgprs.iter().take(106) {
            s[n] = u;
            n += 1;
        }
        // CAST: a 5-bit count.
        n = n.max(d.user_sgpr_count.min(32) as usize);
        let mut push = |v: u32| {
            if n < 106 {
                s[n] = v;
                n += 1;
            }
        };
        for (dim, &on) in d.tgid.iter().enumerate() {
            if on {
                push(group[dim]);
            }
        }
        if d.tg_size {
            // CAST: at most 1024 / 32 waves.
            push(nwaves as u32 & 0x3f);
        }
        if d.wave_offset {
            push(0);
        }
        let [lx, ly, lz] = d.local;
        let total = (lx * ly * lz) as usize;
        let v = &mut self.v;
        let mut exec = 0u64;
        for l in 0..lanes {
            let t = k * lanes + l;
            if t < total {
                exec |= 1 << l;
                // CAST: t < 1024.
                let t = t as u32;
                v[l] = (t % lx) | ((t / lx) % ly) << 10 | (t / (lx * ly)) << 20;
            }
        }
        // CAST: the low and high halves of EXEC.
        s[126] = exec as u32;
        s[127] = (exec >> 32) as u32;
        let pb = d.private_bytes as usize;
        self.s = s;
        self.scc = false;
        self.pc = 0;
        self.done = false;
        self.barrier = false;
        self.steps = 0;
        self.private.clear();
        self.private.resize(pb * lanes, 0);
        self.private_bytes = pb;
    }
    #[inline]
    fn exec(&self) -> u64 {
        u64::from(self.s[126]) | if self.lanes == 64 { u64::from(self.s[127]) << 32 } else { 0 }
    }
    #[inline]
    fn mask(&self, code: u32) -> u64 {
        // CAST: register index < 128.
        let c = (code & 0x7f) as usize;
        let lo = u64::from(self.s[c]);
        if self.lanes == 64 { lo | u64::from(self.s[(c + 1) & 0x7f]) << 32 } else { lo }
    }
    #[inline]
    fn set_mask(&mut self, code: u32, m: u64) {
        let c = (code & 0x7f) as usize;
        if c == 124 {
            return;
        }
        // CAST: the low and high halves.
        self.s[c] = m as u32;
        if self.lanes == 64 && c < 127 {
            self.s[c + 1] = (m >> 32) as u32;
        }
    }
    #[inline]
    fn vgpr(&self, r: u32, lane: usize) -> u32 {
        // CAST: a register index < 256 (wrapping, as the 8-bit field does).
        self.v[((r & 0xff) as usize) * self.lanes + lane]
    }
    #[inline]
    fn set_vgpr(&mut self, r: u32, lane: usize, x: u32) {
        // CAST: a register index < 256.
        let r = (r & 0xff) as usize;
        self.hi = self.hi.max(r + 1);
        self.v[r * self.lanes + lane] = x;
    }
    fn sgpr_write(&mut self, code: u32, x: u64, wide: bool) {
        let c = (code & 0x7f) as usize;
        if c != 124 {
            // CAST: the low dword.
            self.s[c] = x as u32;
        }
        if wide && c + 1 < 128 && c + 1 != 124 {
            // CAST: the high dword.
            self.s[c + 1] = (x >> 32) as u32;
        }
    }
}

/// The LDS aperture of flat addresses: 4 GiB from here reach the work-group's LDS (at the
/// address's low 32 bits). The KFD's for a gfx9+ process (`kfd_init_apertures_v9`:
/// `MAKE_LDS_APP_BASE_V9` = 1 << 48, `MAKE_SCRATCH_APP_BASE_V9` = 2 << 48, "the aperture sizes
/// are still 4GB implicitly"), which `SH_MEM_BASES` gives the shader; read by
/// `src_shared_base` / `src_shared_limit`.
pub const LDS_APERTURE: u64 = 1 << 48;
/// The private (scratch) aperture: 4 GiB from here reach the lane's own private segment;
/// `src_private_base` / `src_private_limit`.
pub const PRIVATE_APERTURE: u64 = 2 << 48;

/// Where a FLAT access at `addr` goes when it is in an aperture: the LDS or the lane's scratch,
/// at the offset inside it. `None`: global memory (or not FLAT).
#[inline]
fn aperture(flat: bool, addr: u64) -> Option<(Space, u64)> {
    if !flat {
        return None;
    }
    match addr >> 32 {
        x if x == LDS_APERTURE >> 32 => Some((Space::Lds, addr & 0xffff_ffff)),
        x if x == PRIVATE_APERTURE >> 32 => Some((Space::Scratch, addr & 0xffff_ffff)),
        _ => None,
    }
}

/// An inline constant (codes 128–208 integers, 240–248 floats) as an operand of type `t`, or an
/// aperture register (235–238: its 64 bits, the low 32 read as a 32-bit operand).
fn inline_const(code: u32, t: T) -> Option<u64> {
    Some(match code {
        235 => LDS_APERTURE,
        236 => LDS_APERTURE | 0xffff_ffff,
        237 => PRIVATE_APERTURE,
        238 => PRIVATE_APERTURE | 0xffff_ffff,
        128..=192 => u64::from(code - 128),
        // CAST: −1..−16 sign-extended to 64 bits.
        193..=208 => (-(i64::from(code) - 192)) as u64,
        240..=248 => {
            let k = (code - 240) as usize;
            match t {
                T::F16 | T::B16 => {
                    u64::from([0x3800u16, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118][k])
                }
                T::F64 | T::B64 => [
                    0x3fe0_0000_0000_0000u64,
                    0xbfe0_0000_0000_0000,
                    0x3ff0_0000_0000_0000,
                    0xbff0_0000_0000_0000,
                    0x4000_0000_0000_0000,
                    0xc000_0000_0000_0000,
                    0x4010_0000_0000_0000,
                    0xc010_0000_0000_0000,
                    0x3fc4_5f30_6dc9_c882,
                ][k],
                _ => u64::from(
                    [
                        0x3f00_0000u32,
                        0xbf00_0000,
                        0x3f80_0000,
                        0xbf80_0000,
                        0x4000_0000,
                        0xc000_0000,
                        0x4080_0000,
                        0xc080_0000,
                        0x3e22_f983,
                    ][k],
                ),
            }
        }
        _ => return None,
    })
}

fn width_mask(t: T) -> u64 {
    match t.bits() {
        16 => 0xffff,
        32 => 0xffff_ffff,
        _ => u64::MAX,
    }
}

struct Cx<'a, 'm> {
    p: &'a Program,
    d: &'a Dispatch<'a>,
    group: [u32; 3],
    wave: u32,
    mem: &'m mut dyn Memory,
    lds: &'m mut [u8],
    st: &'m mut Stats,
}

/// VOP3's modifiers of one instruction.
#[derive(Clone, Copy, Default)]
struct Mods {
    abs: [bool; 3],
    neg: [bool; 3],
    /// op_sel: sources 0–2, then the destination.
    sel: [bool; 4],
    clamp: bool,
    omod: u32,
}

impl Cx<'_, '_> {
    fn fault(&self, step: &Step, lane: Option<usize>, addr: u64, kind: FaultKind) -> Fault {
        Fault {
            group: self.group,
            wave: self.wave,
            // CAST: a lane < 64.
            lane: lane.map(|l| l as u32),
            at: 4 * step.at,
            inst: step.inst.op.name,
            addr,
            kind,
        }
    }

    /// Run `w` until it ends, waits at a barrier or faults.
    fn run<const N: usize>(&mut self, w: &mut Wave) -> Result<(), Fault> {
        loop {
            let Some(step) = self.p.steps.get(w.pc) else {
                // PANIC: `load` refuses a program without instructions.
                let last = self.p.steps[self.p.steps.len() - 1];
                return Err(self.fault(&last, None, 0, FaultKind::PcOutOfCode));
            };
            w.steps += 1;
            self.st.insts += 1;
            if self.d.max_steps != 0 && w.steps > self.d.max_steps {
                return Err(self.fault(step, None, 0, FaultKind::Hang { steps: w.steps - 1 }));
            }
            let mut next = w.pc + 1;
            match step.sem {
                Sem::Nop => {}
                Sem::End => {
                    w.done = true;
                    return Ok(());
                }
                Sem::Barrier => {
                    w.pc = next;
                    w.barrier = true;
                    return Ok(());
                }
                Sem::Trap => return Err(self.fault(step, None, 0, FaultKind::Trap)),
                Sem::Branch(c, t) => {
                    let vcc = w.mask(106);
                    let taken = match c {
                        Br::Always => true,
                        Br::Scc0 => !w.scc,
                        Br::Scc1 => w.scc,
                        Br::Vccz => vcc == 0,
                        Br::Vccnz => vcc != 0,
                        Br::Execz => w.exec() == 0,
                        Br::Execnz => w.exec() != 0,
                    };
                    if taken {
                        next = t;
                    }
                }
                Sem::Salu(op) => salu(w, &step.inst, op),
                Sem::Smem(n) => self.smem(w, step, n)?,
                Sem::Valu(sig) => self.valu(w, step, sig),
                Sem::Vcmp { cond, t, signed, x } => self.vcmp(w, step, cond, t, signed, x),
                Sem::Readlane | Sem::Writelane | Sem::Readfirstlane => lanes_op(w, step),
                Sem::Mix(k) => self.mix(w, step, k),
                Sem::Pk(g) => self.pk(w, step, g),
                Sem::Wmma(k) => self.wmma(w, step, k)?,
                Sem::Vopd(x, y) => self.vopd(w, step, x, y),
                Sem::V32(k) => self.v32::<N>(w, k),
                Sem::Vopd32(k) => self.vopd32::<N>(w, k),
                Sem::C32(k) => self.c32::<N>(w, k),
                Sem::VW(k) => self.vw::<N>(w, k),
                Sem::WmmaLanes(bf) => self.wmma_lanes(w, step, bf)?,
                Sem::VMem(k) => {
                    let p = self.p;
                    // PANIC: `resolve_lanes` numbers the accesses it pushes.
                    self.vmem::<N>(w, step, &p.vmem[k as usize])?
                }
                Sem::Mem(m) => self.memop(w, step, m)?,
                Sem::Lds(k) => self.lds_op(w, step, k)?,
                Sem::GAtomic(a) => self.global_atomic(w, step, a)?,
                Sem::GAddtid(store) => self.global_addtid(w, step, store)?,
                Sem::Cross(op) => self.cross(w, step, op),
                Sem::Dot(k) => self.dot(w, step, k),
                Sem::Getpc | Sem::Setpc(_) | Sem::Call(_) => {
                    // PC + 4: the next instruction's address (these are one dword).
                    let after = self.p.code_addr.wrapping_add(4 * (step.at as u64 + step.inst.len as u64));
                    let w0 = step.inst.words[0];
                    let sdst = (w0 >> 16) & 0x7f;
                    match step.sem {
                        Sem::Call(t) => {
                            w.sgpr_write(sdst, after, true);
                            next = t;
                        }
                        Sem::Setpc(swap) => {
                            let target = ssrc(w, w0 & 0xff, true, step.inst.literal);
                            let Some(t) = self.p.step_at(target) else {
                                return Err(self.fault(step, None, target, FaultKind::PcOutOfCode));
                            };
                            if swap {
                                w.sgpr_write(sdst, after, true);
                            }
                            next = t;
                        }
                        _ => w.sgpr_write(sdst, after, true),
                    }
                }
                Sem::SBuf(n) => self.sbuffer(w, step, n)?,
            }
            w.pc = next;
        }
    }

    /// A [`lanes::V32`] op over the wave.
    #[inline(always)]
    fn v32<const N: usize>(&mut self, w: &mut Wave, k: u32) {
        let p = self.p;
        // PANIC: `resolve_lanes` numbers the ops it pushes.
        let op = &p.v32[k as usize];
        let exec = w.exec();
        let mut r = [0u32; N];
        let co = lanes::eval_v32::<N>(w, op, &mut r);
        lanes::write::<N>(w, op.dst, exec, &r);
        if let Some(mo) = op.mask_out {
            w.set_mask(mo, co & exec);
        }
        self.st.lane_insts += u64::from(exec.count_ones());
    }

    /// A VOPD of two [`lanes::V32`]: both read before either writes.
    #[inline(always)]
    fn vopd32<const N: usize>(&mut self, w: &mut Wave, k: u32) {
        let p = self.p;
        // PANIC: `resolve_lanes` pushes a VOPD's two halves together.
        let (x, y) = (&p.v32[k as usize], &p.v32[k as usize + 1]);
        let exec = w.exec();
        let (mut rx, mut ry) = ([0u32; N], [0u32; N]);
        lanes::eval_v32::<N>(w, x, &mut rx);
        lanes::eval_v32::<N>(w, y, &mut ry);
        lanes::write::<N>(w, x.dst, exec, &rx);
        lanes::write::<N>(w, y.dst, exec, &ry);
        self.st.lane_insts += 2 * u64::from(exec.count_ones());
    }

    /// A [`lanes::VW`] op over the wave.
    #[inline(always)]
    fn vw<const N: usize>(&mut self, w: &mut Wave, k: u32) {
        let p = self.p;
        // PANIC: `resolve_lanes` numbers the ops it pushes.
        let op = &p.vw[k as usize];
        let exec = w.exec();
        let mut r = [0u64; N];
        let co = lanes::eval_vw::<N>(w, op, &mut r);
        // CAST (both): the low and high dwords.
        lanes::write::<N>(w, op.dst, exec, &core::array::from_fn(|l| r[l] as u32));
        if op.dst_t.bits() == 64 {
            lanes::write::<N>(w, op.dst.wrapping_add(1), exec, &core::array::from_fn(|l| (r[l] >> 32) as u32));
        }
        if let Some(mo) = op.mask_out {
            w.set_mask(mo, co & exec);
        }
        self.st.lane_insts += u64::from(exec.count_ones());
    }

    /// A [`lanes::C32`] compare over the wave.
    #[inline(always)]
    fn c32<const N: usize>(&mut self, w: &mut Wave, k: u32) {
        let p = self.p;
        // PANIC: `resolve_lanes` numbers the compares it pushes.
        let op = &p.c32[k as usize];
        let exec = w.exec();
        let r = lanes::eval_c32::<N>(w, op) & exec;
        self.st.lane_insts += u64::from(exec.count_ones());
        w.set_mask(op.dst, r);
    }

    /// A VALU source of type `t` for `lane` (before modifiers).
    #[inline]
    fn src(w: &Wave, code: u32, lane: usize, t: T, lit: Option<u32>) -> u64 {
        let wide = t.bits() == 64;
        let r = match code {
            256..=511 => {
                let lo = u64::from(w.vgpr(code - 256, lane));
                if wide { lo | u64::from(w.vgpr(code - 255, lane)) << 32 } else { lo }
            }
            124 => 0,
            0..=127 => {
                let lo = u64::from(w.s[code as usize]);
                if wide { lo | u64::from(w.s[((code + 1) & 0x7f) as usize]) << 32 } else { lo }
            }
            251 => u64::from(w.mask(106) == 0),
            252 => u64::from(w.exec() == 0),
            253 => u64::from(w.scc),
            255 => {
                let l = u64::from(lit.unwrap_or(0));
                if t == T::F64 { l << 32 } else { l }
            }
            c => inline_const(c, t).unwrap_or(0),
        };
        r & width_mask(t)
    }

    /// A source with op_sel and the float modifiers applied.
    #[inline]
    fn src_mod(w: &Wave, code: u32, lane: usize, t: T, lit: Option<u32>, m: &Mods, k: usize) -> u64 {
        let raw = if t.bits() == 16 && m.sel[k] {
            (Self::src(w, code, lane, T::B32, lit) >> 16) & 0xffff
        } else {
            Self::src(w, code, lane, t, lit)
        };
        if !t.float() {
            return raw;
        }
        let sign = 1u64 << (t.bits() - 1);
        let mut x = raw;
        if m.abs[k] {
            x &= !sign;
        }
        if m.neg[k] {
            x ^= sign;
        }
        x
    }

    fn write_dst(w: &mut Wave, r: u32, lane: usize, t: T, x: u64, hi: bool) {
        match t.bits() {
            16 => {
                let old = w.vgpr(r, lane);
                // CAST: the low 16 bits of the result.
                let x = x as u32 & 0xffff;
                w.set_vgpr(r, lane, if hi { (old & 0xffff) | x << 16 } else { (old & 0xffff_0000) | x });
            }
            32 => w.set_vgpr(r, lane, x as u32),
            _ => {
                w.set_vgpr(r, lane, x as u32);
                w.set_vgpr(r + 1, lane, (x >> 32) as u32);
            }
        }
    }

    fn mods(i: &Inst) -> Mods {
        let (w0, w1) = (i.words[0], i.words[1]);
        let bit = |x: u32, b: u32| (x >> b) & 1 == 1;
        match i.enc {
            Encoding::Vop3 => Mods {
                abs: [bit(w0, 8), bit(w0, 9), bit(w0, 10)],
                neg: [bit(w1, 29), bit(w1, 30), bit(w1, 31)],
                sel: [bit(w0, 11), bit(w0, 12), bit(w0, 13), bit(w0, 14)],
                clamp: bit(w0, 15),
                omod: (w1 >> 27) & 3,
            },
            _ => Mods::default(),
        }
    }

    fn valu(&mut self, w: &mut Wave, step: &Step, g: Sig) {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let m = valu_mods(i, g);
        // Operand fields per encoding: (dst vgpr, sources, mask-in code, mask-out code).
        let (dst, mut srcs, mask_in, mask_out) = match i.enc {
            Encoding::Vop1 => ((w0 >> 17) & 0xff, [w0 & 0x1ff, 0, 0], 106, 106),
            Encoding::Vop2 => ((w0 >> 17) & 0xff, [w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff), 0], 106, 106),
            _ => (w0 & 0xff, [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff], (w1 >> 18) & 0x1ff, (w0 >> 8) & 0x7f),
        };
        let lit = i.literal;
        let mut src_t = g.src;
        if g.acc {
            srcs[2] = 256 + dst;
            src_t[2] = g.dst;
        }
        let konst = matches!(g.l, L::FmaakF32 | L::FmamkF32 | L::FmaakF16 | L::FmamkF16);
        if konst {
            srcs[2] = 255;
        }
        let mask_in = if valu::mask_in_vcc(g.l) { 106 } else { mask_in };
        let exec = w.exec();
        let min = if g.mask_in { w.mask(mask_in) } else { 0 };
        let mut out = 0u64;
        for lane in 0..w.lanes {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let mut v = [0u64; 3];
            for k in 0..usize::from(g.n) + usize::from(g.acc) {
                v[k] = Self::src_mod(w, srcs[k], lane, src_t[k], lit, &m, k);
            }
            let (mut r, co) = valu::eval(g.l, v[0], v[1], v[2], min >> lane & 1 == 1);
            if m.clamp || m.omod != 0 {
                r = post(r, g.dst, m.clamp, m.omod);
            }
            Self::write_dst(w, dst, lane, g.dst, r, m.sel[3]);
            out |= u64::from(co) << lane;
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        if g.mask_out {
            w.set_mask(mask_out, out);
        }
    }

    fn vcmp(&mut self, w: &mut Wave, step: &Step, cond: Cond, t: T, signed: bool, x: bool) {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let m = Self::mods(i);
        let (sd, a, b) = match i.enc {
            Encoding::Vopc => (106, w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff)),
            _ => (w0 & 0xff, w1 & 0x1ff, (w1 >> 9) & 0x1ff),
        };
        let bt = if cond == Cond::Class { T::B32 } else { t };
        let exec = w.exec();
        let mut r = 0u64;
        for lane in 0..w.lanes {
            if exec >> lane & 1 == 1 {
                let va = Self::src_mod(w, a, lane, t, i.literal, &m, 0);
                let vb = Self::src_mod(w, b, lane, bt, i.literal, &m, 1);
                r |= u64::from(valu::cmp(cond, t, signed, va, vb)) << lane;
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        // v_cmpx writes EXEC only (gfx11), v_cmp its SGPR mask (VCC for VOPC).
        w.set_mask(if x { 126 } else { sd }, r);
    }

    /// v_fma_mix_f32 (k 0), v_fma_mixlo_f16 (1), v_fma_mixhi_f16 (2): each source an f32 or, with
    /// its op_sel_hi bit, the f16 half op_sel names; the fma in f32.
    fn mix(&mut self, w: &mut Wave, step: &Step, k: u8) {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let bit = |x: u32, b: u32| (x >> b) & 1 == 1;
        let dst = w0 & 0xff;
        let srcs = [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
        let sel = [bit(w0, 11), bit(w0, 12), bit(w0, 13)];
        let hi = [bit(w1, 27), bit(w1, 28), bit(w0, 14)];
        let abs = [bit(w0, 8), bit(w0, 9), bit(w0, 10)];
        let neg = [bit(w1, 29), bit(w1, 30), bit(w1, 31)];
        let clamp = bit(w0, 15);
        let exec = w.exec();
        for lane in 0..w.lanes {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let mut v = [0f32; 3];
            for s in 0..3 {
                let raw = Self::src(w, srcs[s], lane, if hi[s] { T::B32 } else { T::F32 }, i.literal);
                // CAST: the selected 16 or all 32 bits.
                let mut x = if hi[s] {
                    fp::h2f((raw >> if sel[s] { 16 } else { 0 }) as u16)
                } else {
                    f32::from_bits(raw as u32)
                };
                if abs[s] {
                    x = x.abs();
                }
                if neg[s] {
                    x = -x;
                }
                v[s] = x;
            }
            let mut r = libm::fmaf(v[0], v[1], v[2]);
            if clamp {
                r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
            }
            match k {
                0 => w.set_vgpr(dst, lane, r.to_bits()),
                _ => Self::write_dst(w, dst, lane, T::F16, u64::from(fp::f2h(r)), k == 2),
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
    }

    /// VOP3P packed 16-bit math: the low and high halves each through the op, the low half's
    /// sources chosen by op_sel and negated by neg_lo, the high half's by op_sel_hi and neg_hi.
    fn pk(&mut self, w: &mut Wave, step: &Step, g: Sig) {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let bit = |x: u32, b: u32| (x >> b) & 1 == 1;
        let dst = w0 & 0xff;
        let mut srcs = [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
        let mut sel = [[bit(w0, 11), bit(w0, 12), bit(w0, 13)], [bit(w1, 27), bit(w1, 28), bit(w0, 14)]];
        let neg = [[bit(w1, 29), bit(w1, 30), bit(w1, 31)], [bit(w0, 8), bit(w0, 9), bit(w0, 10)]];
        if g.acc {
            srcs[2] = 256 + dst;
            sel[0][2] = false;
            sel[1][2] = true;
        }
        let clamp = bit(w0, 15);
        let n = usize::from(g.n) + usize::from(g.acc);
        let exec = w.exec();
        for lane in 0..w.lanes {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let mut out = 0u32;
            for h in 0..2 {
                let mut v = [0u64; 3];
                for k in 0..n {
                    let raw = Self::src(w, srcs[k], lane, T::B32, i.literal);
                    let mut x = (raw >> if sel[h][k] { 16 } else { 0 }) & 0xffff;
                    if g.src[k] == T::F16 && neg[h][k] {
                        x ^= 0x8000;
                    }
                    v[k] = x;
                }
                let mut r = valu::eval(g.l, v[0], v[1], v[2], false).0;
                if clamp && g.dst == T::F16 {
                    r = post(r, T::F16, true, 0);
                }
                // CAST: a 16-bit result.
                out |= (r as u32 & 0xffff) << (16 * h);
            }
            w.set_vgpr(dst, lane, out);
        }
        self.st.lane_insts += u64::from(exec.count_ones());
    }

    /// VOP3P v_dot2_f32_{f16,bf16}: D.f32 = S0.lo·S1.lo + S0.hi·S1.hi + S2.f32, the halves
    /// each product takes chosen by op_sel (the first) and op_sel_hi (the second) and negated
    /// by neg_lo / neg_hi, as packed math chooses them, in f32 (clamp to [0, 1]);
    /// v_dot4_{i32_iu8,u32_u8} and v_dot8_{i32_iu4,u32_u4}: S2 plus the products of the bytes
    /// (nibbles), signed where neg_lo[0] (S0) / neg_lo[1] (S1) says, wrapping, or saturating
    /// with clamp.
    fn dot(&mut self, w: &mut Wave, step: &Step, k: Dot) {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let bit = |x: u32, b: u32| (x >> b) & 1 == 1;
        let dst = w0 & 0xff;
        let srcs = [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
        let sel = [[bit(w0, 11), bit(w0, 12)], [bit(w1, 27), bit(w1, 28)]];
        let neg = [[bit(w1, 29), bit(w1, 30)], [bit(w0, 8), bit(w0, 9)]];
        let clamp = bit(w0, 15);
        let exec = w.exec();
        for lane in 0..w.lanes {
            if exec >> lane & 1 == 0 {
                continue;
            }
            // CAST (the three): 32-bit sources.
            let a = Self::src(w, srcs[0], lane, T::B32, i.literal) as u32;
            let b = Self::src(w, srcs[1], lane, T::B32, i.literal) as u32;
            let c = Self::src(w, srcs[2], lane, T::B32, i.literal) as u32;
            let r = match k {
                Dot::F16 | Dot::Bf16 => {
                    let half = |x: u32, hi: bool, neg: bool| {
                        let bits = (x >> if hi { 16 } else { 0 }) & 0xffff;
                        let v = if k == Dot::F16 { fp::h2f(bits as u16) } else { f32::from_bits(bits << 16) };
                        if neg { -v } else { v }
                    };
                    let p = |h: usize| half(a, sel[h][0], neg[h][0]) * half(b, sel[h][1], neg[h][1]);
                    let mut r = p(0) + p(1) + f32::from_bits(c);
                    if clamp {
                        r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
                    }
                    r.to_bits()
                }
                Dot::I8(signed) | Dot::I4(signed) => {
                    let (bits, n) = if matches!(k, Dot::I8(_)) { (8, 4) } else { (4, 8) };
                    let el = |x: u32, e: u32, s: bool| -> i64 {
                        let v = (x >> (bits * e)) & ((1 << bits) - 1);
                        if s { i64::from(((v << (32 - bits)) as i32) >> (32 - bits)) } else { i64::from(v) }
                    };
                    let (sa, sb) = (signed && bit(w1, 29), signed && bit(w1, 30));
                    let acc = if signed { i64::from(c as i32) } else { i64::from(c) };
                    let s = acc + (0..n).map(|e| el(a, e, sa) * el(b, e, sb)).sum::<i64>();
                    // CAST (all): saturated to the result's type, or its low 32 bits.
                    match (clamp, signed) {
                        (true, true) => s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32,
                        (true, false) => s.clamp(0, i64::from(u32::MAX)) as u32,
                        _ => s as u32,
                    }
                }
            };
            w.set_vgpr(dst, lane, r);
        }
        self.st.lane_insts += u64::from(exec.count_ones());
    }

    /// V_WMMA_*_16X16X16_*: D = A·B + C, 16 × 16 matrices, the whole wave (RDNA3 guide 7.9;
    /// AMD GPUOpen's "How to accelerate AI applications on RDNA 3 using WMMA"). Lane l holds row
    /// l % 16 of A and column l % 16 of B, K along its VGPRs (two halves, four bytes or eight
    /// nibbles a VGPR; the other lanes' copies are not read). C and D: element (row, column) in
    /// lane column + 16·(row % R), VGPR row / R, R = 2 in wave32 (8 VGPRs), 4 in wave64 (4
    /// VGPRs); a 16-bit C and D in the halves op_sel[2] names (low without it), the other half
    /// of D kept. Float dot products are the chain of f32 fmas over K from C (rounded to f16 or
    /// bf16 at the end); integer ones exact, wrapping to 32 bits, or saturating with clamp; A's
    /// and B's bytes (nibbles) signed where neg_lo[0] / neg_lo[1] says.
    fn wmma(&mut self, w: &mut Wave, step: &Step, kind: Wmma) -> Result<(), Fault> {
        let lanes = w.lanes;
        if w.exec() != lanes::full::<64>() >> (64 - lanes) {
            return Err(self.fault(step, None, 0, FaultKind::Lanes));
        }
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let (d, a, b, c) = (w0 & 0xff, (w1 & 0x1ff) - 256, ((w1 >> 9) & 0x1ff) - 256, (w1 >> 18) & 0x1ff);
        let hi = (w0 >> 13) & 1 == 1;
        let clamp = (w0 >> 15) & 1 == 1;
        let (sa, sb) = ((w1 >> 29) & 1 == 1, (w1 >> 30) & 1 == 1);
        // Element k of A's row (B's column) `lane`, as an f32 (floats) or an i32 (integers).
        let elem = |w: &Wave, r0: u32, lane: usize, k: usize, signed: bool| -> (f32, i64) {
            // CAST (the register offsets): k < 16.
            match kind {
                Wmma::F32F16 | Wmma::F16F16 => (fp::h2f((w.vgpr(r0 + k as u32 / 2, lane) >> (16 * (k % 2))) as u16), 0),
                Wmma::F32Bf16 | Wmma::Bf16Bf16 => {
                    (f32::from_bits((w.vgpr(r0 + k as u32 / 2, lane) >> (16 * (k % 2))) << 16), 0)
                }
                Wmma::I32Iu8 => {
                    let x = (w.vgpr(r0 + k as u32 / 4, lane) >> (8 * (k % 4))) & 0xff;
                    (0.0, if signed { i64::from(x as u8 as i8) } else { i64::from(x) })
                }
                Wmma::I32Iu4 => {
                    let x = (w.vgpr(r0 + k as u32 / 8, lane) >> (4 * (k % 8))) & 0xf;
                    (0.0, if signed { i64::from(((x << 4) as u8 as i8) >> 4) } else { i64::from(x) })
                }
            }
        };
        let mut af = [[0f32; 16]; 16];
        let mut bf = [[0f32; 16]; 16];
        let mut ai = [[0i64; 16]; 16];
        let mut bi = [[0i64; 16]; 16];
        for r in 0..16 {
            for k in 0..16 {
                (af[r][k], ai[r][k]) = elem(w, a, r, k, sa);
                (bf[k][r], bi[k][r]) = elem(w, b, r, k, sb);
            }
        }
        let per = lanes / 16;
        let half16 = matches!(kind, Wmma::F16F16 | Wmma::Bf16Bf16);
        let shift = if hi { 16 } else { 0 };
        // out[reg][lane], D's VGPR d + reg.
        let mut out = [[0u32; 64]; 8];
        for row in 0..16 {
            for col in 0..16 {
                let (lane, reg) = (col + 16 * (row % per), row / per);
                // CAST: reg < 8.
                let cv = if c >= 256 { w.vgpr(c - 256 + reg as u32, lane) } else { 0 };
                out[reg][lane] = match kind {
                    Wmma::I32Iu8 | Wmma::I32Iu4 => {
                        // CAST: C's bits as a signed accumulator.
                        let mut s = i64::from(cv as i32);
                        for k in 0..16 {
                            s += ai[row][k] * bi[k][col];
                        }
                        // CAST: saturated, or the low 32 bits (wrapping).
                        if clamp { s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32 } else { s as u32 }
                    }
                    _ => {
                        let acc = match kind {
                            // CAST: the selected half.
                            Wmma::F16F16 => fp::h2f((cv >> shift) as u16),
                            Wmma::Bf16Bf16 => f32::from_bits((cv >> shift) << 16),
                            _ => f32::from_bits(cv),
                        };
                        let mut s = acc;
                        for k in 0..16 {
                            s = libm::fmaf(af[row][k], bf[k][col], s);
                        }
                        match kind {
                            Wmma::F16F16 => u32::from(fp::f2h(s)),
                            Wmma::Bf16Bf16 => u32::from(fp::f2bf(s)),
                            _ => s.to_bits(),
                        }
                    }
                };
            }
        }
        for (reg, o) in out.iter().enumerate().take(16 / per) {
            for (lane, &x) in o.iter().enumerate().take(lanes) {
                // CAST: reg < 8.
                let r = d + reg as u32;
                let x = if half16 {
                    let old = w.vgpr(r, lane);
                    if hi { (old & 0xffff) | x << 16 } else { (old & 0xffff_0000) | x }
                } else {
                    x
                };
                w.set_vgpr(r, lane, x);
            }
        }
        // CAST: 32 or 64.
        self.st.lane_insts += lanes as u64;
        Ok(())
    }

    /// [`Cx::wmma`] with its 8 × 32 dot products stepped through K together: each step's
    /// 256 fmas in f64 where that rounds as libm's `fmaf` ([`valu::fma_wide_exact`]), libm's
    /// for the others — every dot product the same chain of `fmaf` as `wmma`'s, bit for bit.
    fn wmma_lanes(&mut self, w: &mut Wave, step: &Step, bf: bool) -> Result<(), Fault> {
        if w.lanes != 32 || w.exec() & 0xffff_ffff != 0xffff_ffff {
            return Err(self.fault(step, None, 0, FaultKind::Lanes));
        }
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let (d, a, b, c) = (w0 & 0xff, (w1 & 0x1ff) - 256, ((w1 >> 9) & 0x1ff) - 256, (w1 >> 18) & 0x1ff);
        let half = |x: u32| if bf { f32::from_bits(x << 16) } else { fp::h2f(x as u16) };
        let elem = |w: &Wave, r0: u32, lane: usize, k: u32| half((w.vgpr(r0 + k / 2, lane) >> (16 * (k % 2))) & 0xffff);
        let mut am = [[0f32; 16]; 16];
        let mut bm = [[0f32; 16]; 16];
        for r in 0..16 {
            for k in 0..16 {
                // CAST: k < 16.
                am[r][k] = elem(w, a, r, k as u32);
                bm[k][r] = elem(w, b, r, k as u32);
            }
        }
        // acc[r8][lane]: row 2·r8 + lane/16, column lane%16 of D.
        let mut acc = [[0f32; 32]; 8];
        for (r8, row) in acc.iter_mut().enumerate() {
            for (lane, x) in row.iter_mut().enumerate() {
                // CAST: r8 < 8.
                *x = if c >= 256 {
                    f32::from_bits(w.vgpr(c - 256 + r8 as u32, lane))
                } else {
                    f32::from_bits(Self::src(w, c, lane, T::F32, i.literal) as u32)
                };
            }
        }
        // Each step from `cur` into `nxt`, then they trade places.
        let mut other = [[0f32; 32]; 8];
        let (mut cur, mut nxt) = (&mut acc, &mut other);
        for k in 0..16 {
            let mut hard = false;
            // Lanes 0–15 take row 2·r8 of A, lanes 16–31 row 2·r8 + 1; lane l column l % 16 of B.
            for r8 in 0..8 {
                for h in 0..2 {
                    let x = am[2 * r8 + h][k];
                    for n in 0..16 {
                        let (y, ok) = valu::fma_wide_exact(x, bm[k][n], cur[r8][16 * h + n]);
                        nxt[r8][16 * h + n] = y;
                        hard |= !ok;
                    }
                }
            }
            if hard {
                for r8 in 0..8 {
                    for h in 0..2 {
                        let x = am[2 * r8 + h][k];
                        for n in 0..16 {
                            let (y, s) = (bm[k][n], cur[r8][16 * h + n]);
                            if !valu::fma_wide_exact(x, y, s).1 {
                                nxt[r8][16 * h + n] = libm::fmaf(x, y, s);
                            }
                        }
                    }
                }
            }
            core::mem::swap(&mut cur, &mut nxt);
        }
        // 16 steps: the last wrote into `acc`'s partner and the swap brought it back to `cur`.
        for (r8, row) in cur.iter().enumerate() {
            // CAST: an 8-bit register number, wrapping as `set_vgpr` does.
            let r = (d as u8).wrapping_add(r8 as u8);
            lanes::write::<32>(w, r, u64::MAX, &core::array::from_fn(|l| row[l].to_bits()));
        }
        self.st.lane_insts += 32;
        Ok(())
    }

    /// VOPD: both halves read their sources before either writes.
    fn vopd(&mut self, w: &mut Wave, step: &Step, x: Sig, y: Sig) {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let dx = w1 >> 24;
        let dy = (((w1 >> 17) & 0x7f) << 1) | ((dx & 1) ^ 1);
        let halves = [(x, dx, [w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff)]), (y, dy, [w1 & 0x1ff, 256 + ((w1 >> 9) & 0xff)])];
        let exec = w.exec();
        let vcc = w.mask(106);
        let mut res = [[0u32; 64]; 2];
        for (h, (g, d, s)) in halves.iter().enumerate() {
            for lane in 0..w.lanes {
                if exec >> lane & 1 == 0 {
                    continue;
                }
                let a = Self::src(w, s[0], lane, g.src[0], i.literal);
                let b = if g.n >= 2 { Self::src(w, s[1], lane, g.src[1], i.literal) } else { 0 };
                let c = if g.acc {
                    u64::from(w.vgpr(*d, lane))
                } else if matches!(g.l, L::FmaakF32 | L::FmamkF32) {
                    u64::from(i.literal.unwrap_or(0))
                } else {
                    0
                };
                // CAST: 32-bit results.
                res[h][lane] = valu::eval(g.l, a, b, c, vcc >> lane & 1 == 1).0 as u32;
            }
        }
        for (h, (_, d, _)) in halves.iter().enumerate() {
            for lane in 0..w.lanes {
                if exec >> lane & 1 == 1 {
                    w.set_vgpr(*d, lane, res[h][lane]);
                }
            }
        }
        self.st.lane_insts += 2 * u64::from(exec.count_ones());
    }

    fn smem(&mut self, w: &mut Wave, step: &Step, n: u8) -> Result<(), Fault> {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let base = (w0 & 0x3f) << 1;
        let sdata = (w0 >> 6) & 0x7f;
        // CAST: a 21-bit signed byte offset.
        let off = i64::from(((w1 << 11) as i32) >> 11);
        let soff = w1 >> 25;
        let so = if soff == 124 { 0 } else { u64::from(w.s[(soff & 0x7f) as usize]) };
        let addr = (w.mask_pair(base)).wrapping_add(off as u64).wrapping_add(so) & !3;
        let mut buf = [0u8; 64];
        let len = 4 * usize::from(n);
        if !self.mem.read(addr, &mut buf[..len]) {
            // CAST: at most 64 bytes.
            return Err(self.fault(step, None, addr, FaultKind::Memory { write: false, bytes: len as u32 }));
        }
        for k in 0..usize::from(n) {
            let r = sdata as usize + k;
            if r < 128 && r != 124 {
                w.s[r] = u32::from_le_bytes([buf[4 * k], buf[4 * k + 1], buf[4 * k + 2], buf[4 * k + 3]]);
            }
        }
        Ok(())
    }

    /// S_BUFFER_LOAD_B*: `n` dwords of the buffer whose descriptor (V#) is the SGPR quad at
    /// SBASE: from its base (bits 47:0) + the offset (+ SOFFSET), each dword wholly below its
    /// NUM_RECORDS bytes (dword 2) read, the others 0 (the buffer's range check).
    fn sbuffer(&mut self, w: &mut Wave, step: &Step, n: u8) -> Result<(), Fault> {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let q = ((w0 & 0x3f) << 1) as usize;
        let v = |k: usize| w.s[(q + k) & 0x7f];
        let base = u64::from(v(0)) | u64::from(v(1) & 0xffff) << 32;
        let records = u64::from(v(2));
        let sdata = (w0 >> 6) & 0x7f;
        // CAST: a 21-bit signed byte offset.
        let off = i64::from(((w1 << 11) as i32) >> 11);
        let soff = w1 >> 25;
        let so = if soff == 124 { 0 } else { u64::from(w.s[(soff & 0x7f) as usize]) };
        // CAST: the signed offset added modulo 2^64.
        let start = (off as u64).wrapping_add(so) & !3;
        for k in 0..u64::from(n) {
            let o = start.wrapping_add(4 * k);
            let mut b = [0u8; 4];
            if o.checked_add(4).is_some_and(|end| end <= records) {
                let at = base.wrapping_add(o);
                if !self.mem.read(at, &mut b) {
                    return Err(self.fault(step, None, at, FaultKind::Memory { write: false, bytes: 4 }));
                }
            }
            // CAST: k < 16.
            let r = sdata as usize + k as usize;
            if r < 128 && r != 124 {
                w.s[r] = u32::from_le_bytes(b);
            }
        }
        Ok(())
    }

    fn memop(&mut self, w: &mut Wave, step: &Step, m: MemOp) -> Result<(), Fault> {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        let exec = w.exec();
        let (vdst, vdata) = (w1 >> 24, (w1 >> 8) & 0xff);
        let elem = u64::from(m.bytes);
        for lane in 0..w.lanes {
            if exec >> lane & 1 == 0 {
                continue;
            }
            // (address, data register) of each access of this lane.
            let mut acc = [(0u64, vdata, vdst); 2];
            let mut n = 1;
            match m.space {
                Space::Global => acc[0].0 = global_addr(w, i, lane),
                Space::Scratch => {
                    let saddr = (w1 >> 16) & 0x7f;
                    let sve = (w1 >> 23) & 1 == 1;
                    let raw = w0 & 0x1fff;
                    let off = i64::from(((raw << 19) as i32) >> 19);
                    let mut a = 0u64;
                    if sve {
                        a = a.wrapping_add(u64::from(w.vgpr(w1 & 0xff, lane)));
                    }
                    if saddr != 124 {
                        a = a.wrapping_add(u64::from(w.s[saddr as usize]));
                    }
                    // CAST: 32-bit private addresses.
                    acc[0].0 = (a.wrapping_add(off as u64)) & 0xffff_ffff;
                }
                Space::Lds => {
                    let base = u64::from(w.vgpr(w1 & 0xff, lane));
                    let (o0, o1) = (u64::from(w0 & 0xff), u64::from((w0 >> 8) & 0xff));
                    match m.two {
                        Some(stride) => {
                            let s = elem * u64::from(stride);
                            acc[0].0 = base + o0 * s;
                            acc[1] = (base + o1 * s, (w1 >> 16) & 0xff, vdst + u32::from(m.bytes) / 4);
                            n = 2;
                        }
                        None => acc[0].0 = base + (o0 | o1 << 8),
                    }
                }
            }
            for &(addr, data, dst) in &acc[..n] {
                self.access_flat(w, step, lane, m, addr, data, dst)?;
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        Ok(())
    }

    /// [`Cx::access`] of a FLAT instruction: an address in an aperture reaches the LDS or the
    /// lane's scratch there.
    #[allow(clippy::too_many_arguments)]
    fn access_flat(
        &mut self,
        w: &mut Wave,
        step: &Step,
        lane: usize,
        m: MemOp,
        addr: u64,
        data: u32,
        dst: u32,
    ) -> Result<(), Fault> {
        match aperture(m.flat, addr) {
            Some((space, a)) => self.access(w, step, lane, MemOp { space, flat: false, ..m }, a, data, dst),
            None => self.access(w, step, lane, m, addr, data, dst),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn access(
        &mut self,
        w: &mut Wave,
        step: &Step,
        lane: usize,
        m: MemOp,
        addr: u64,
        data: u32,
        dst: u32,
    ) -> Result<(), Fault> {
        let n = usize::from(m.bytes);
        let mut buf = [0u8; 16];
        if m.store {
            let dwords = n.div_ceil(4);
            for k in 0..dwords {
                // CAST: k < 4.
                let mut x = w.vgpr(data + k as u32, lane);
                if matches!(m.ext, Ext::D16Hi(_)) {
                    x >>= 16;
                }
                buf[4 * k..4 * k + 4].copy_from_slice(&x.to_le_bytes());
            }
        }
        let ok = match m.space {
            Space::Global => {
                if m.store {
                    self.mem.write(addr, &buf[..n])
                } else {
                    self.mem.read(addr, &mut buf[..n])
                }
            }
            Space::Lds => {
                let a = usize::try_from(addr).unwrap_or(usize::MAX);
                match self.lds.get_mut(a..a.saturating_add(n)) {
                    Some(s) if m.store => {
                        s.copy_from_slice(&buf[..n]);
                        true
                    }
                    Some(s) => {
                        buf[..n].copy_from_slice(s);
                        true
                    }
                    None => false,
                }
            }
            Space::Scratch => {
                let a = usize::try_from(addr).unwrap_or(usize::MAX);
                let pb = w.private_bytes;
                let end = a.saturating_add(n);
                if end > pb {
                    false
                } else {
                    let s = &mut w.private[lane * pb + a..lane * pb + end];
                    if m.store {
                        s.copy_from_slice(&buf[..n]);
                    } else {
                        buf[..n].copy_from_slice(s);
                    }
                    true
                }
            }
        };
        if !ok {
            // CAST: at most 16 bytes; the sizes fit u32.
            let kind = match m.space {
                Space::Global => FaultKind::Memory { write: m.store, bytes: n as u32 },
                Space::Lds => FaultKind::Lds { write: m.store, size: self.lds.len() as u32 },
                Space::Scratch => FaultKind::Scratch { write: m.store, size: w.private_bytes as u32 },
            };
            return Err(self.fault(step, Some(lane), addr, kind));
        }
        if m.store {
            return Ok(());
        }
        let word = |k: usize| u32::from_le_bytes([buf[4 * k], buf[4 * k + 1], buf[4 * k + 2], buf[4 * k + 3]]);
        let small = |sign: bool| -> u32 {
            match (n, sign) {
                (1, false) => u32::from(buf[0]),
                (1, true) => i32::from(buf[0] as i8) as u32,
                (_, false) => u32::from(u16::from_le_bytes([buf[0], buf[1]])),
                (_, true) => i32::from(i16::from_le_bytes([buf[0], buf[1]])) as u32,
            }
        };
        match m.ext {
            Ext::Plain => {
                for k in 0..n / 4 {
                    // CAST: k < 4.
                    w.set_vgpr(dst + k as u32, lane, word(k));
                }
            }
            Ext::Zero => w.set_vgpr(dst, lane, small(false)),
            Ext::Sign => w.set_vgpr(dst, lane, small(true)),
            Ext::D16Lo(sign) => {
                let old = w.vgpr(dst, lane);
                w.set_vgpr(dst, lane, (old & 0xffff_0000) | (small(sign) & 0xffff));
            }
            Ext::D16Hi(sign) => {
                let old = w.vgpr(dst, lane);
                w.set_vgpr(dst, lane, (old & 0xffff) | (small(sign) & 0xffff) << 16);
            }
        }
        Ok(())
    }
}

impl Wave {
    /// An SGPR pair as a 64-bit value (a scalar address), whatever the wave size.
    fn mask_pair(&self, code: u32) -> u64 {
        let c = (code & 0x7f) as usize;
        u64::from(self.s[c]) | u64::from(self.s[(c + 1) & 0x7f]) << 32
    }
}

/// A FLAT/GLOBAL instruction's address for `lane`: the 64-bit VGPR pair (flat, or global with
/// `saddr` off) or the SGPR pair plus the 32-bit VGPR, plus the offset (FLAT's 13 bits
/// unsigned, GLOBAL's signed).
fn global_addr(w: &Wave, i: &Inst, lane: usize) -> u64 {
    let (w0, w1) = (i.words[0], i.words[1]);
    let saddr = (w1 >> 16) & 0x7f;
    let vaddr = w1 & 0xff;
    let raw = w0 & 0x1fff;
    // CAST: the 13-bit field sign-extended.
    let off = if i.enc == Encoding::Flat { i64::from(raw) } else { i64::from(((raw << 19) as i32) >> 19) };
    let base = if saddr == 124 || i.enc == Encoding::Flat {
        u64::from(w.vgpr(vaddr, lane)) | u64::from(w.vgpr(vaddr + 1, lane)) << 32
    } else {
        w.mask_pair(saddr).wrapping_add(u64::from(w.vgpr(vaddr, lane)))
    };
    // CAST: the signed offset added modulo 2^64.
    base.wrapping_add(off as u64)
}

/// The modifiers of a VOP1/VOP2/VOP3 VALU op of signature `g`.
fn valu_mods(i: &Inst, g: Sig) -> Mods {
    let mut m = Cx::mods(i);
    if g.acc {
        // fmac's accumulator op_sel is the destination's.
        m.sel[2] = m.sel[3];
    }
    if i.enc == Encoding::Vop3 && g.mask_out {
        // VOP3SD: bits 8–14 are the carry-out SGPR, not abs/op_sel/clamp.
        m.abs = [false; 3];
        m.sel = [false; 4];
    }
    m
}

/// Clamp to [0, 1] and the output modifier (×2, ×4, ÷2), on a float result.
fn post(r: u64, t: T, clamp: bool, omod: u32) -> u64 {
    let scale = [1.0f32, 2.0, 4.0, 0.5][omod as usize & 3];
    match t {
        T::F32 => {
            let mut x = f32::from_bits(r as u32) * scale;
            if clamp {
                x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
            }
            u64::from(x.to_bits())
        }
        T::F16 => {
            let mut x = fp::h2f(r as u16) * scale;
            if clamp {
                x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
            }
            u64::from(fp::f2h(x))
        }
        T::F64 => {
            let mut x = f64::from_bits(r) * f64::from(scale);
            if clamp {
                x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
            }
            x.to_bits()
        }
        _ => r,
    }
}

/// v_readlane_b32, v_writelane_b32, v_readfirstlane_b32.
fn lanes_op(w: &mut Wave, step: &Step) {
    let i = &step.inst;
    let (w0, w1) = (i.words[0], i.words[1]);
    let lanes = w.lanes;
    match step.sem {
        Sem::Readlane => {
            let lane = (Cx::src(w, (w1 >> 9) & 0x1ff, 0, T::B32, i.literal) as usize) & (lanes - 1);
            let v = Cx::src(w, w1 & 0x1ff, lane, T::B32, i.literal);
            w.sgpr_write(w0 & 0xff, v, false);
        }
        Sem::Writelane => {
            let lane = (Cx::src(w, (w1 >> 9) & 0x1ff, 0, T::B32, i.literal) as usize) & (lanes - 1);
            let v = Cx::src(w, w1 & 0x1ff, lane, T::B32, i.literal);
            w.set_vgpr(w0 & 0xff, lane, v as u32);
        }
        _ => {
            let exec = w.exec();
            let lane = if exec == 0 { 0 } else { exec.trailing_zeros() as usize };
            let v = Cx::src(w, w0 & 0x1ff, lane, T::B32, i.literal);
            w.sgpr_write((w0 >> 17) & 0xff, v, false);
        }
    }
}

/// A scalar source (SOP1/SOP2/SOPC), 64-bit for the `_b64`/`_u64`/`_i64` forms.
fn ssrc(w: &Wave, code: u32, wide: bool, lit: Option<u32>) -> u64 {
    match code {
        124 => 0,
        0..=127 => {
            let lo = u64::from(w.s[code as usize]);
            if wide { lo | u64::from(w.s[((code + 1) & 0x7f) as usize]) << 32 } else { lo }
        }
        251 => u64::from(w.mask(106) == 0),
        252 => u64::from(w.exec() == 0),
        253 => u64::from(w.scc),
        255 => u64::from(lit.unwrap_or(0)),
        c => {
            inline_const(c, if wide { T::B64 } else { T::B32 }).unwrap_or(0) & if wide { u64::MAX } else { 0xffff_ffff }
        }
    }
}

fn salu(w: &mut Wave, i: &Inst, op: S) {
    use S::*;
    let w0 = i.words[0];
    let lit = i.literal;
    let sdst = (w0 >> 16) & 0x7f;
    let wide = matches!(
        op,
        Cselect(true)
            | And(true)
            | Or(true)
            | Xor(true)
            | Nand(true)
            | Nor(true)
            | Xnor(true)
            | AndNot1(true)
            | OrNot1(true)
            | Lshl(true)
            | Lshr(true)
            | Ashr(true)
            | BfeU(true)
            | BfeI(true)
            | Mov(true)
            | Cmov(true)
            | Not(true)
            | Saveexec(_, true)
            | Cmp(_, _, true)
            | Bitcmp(_, true)
    );
    let (a_code, b_code) = match i.enc {
        Encoding::Sopk => (sdst, 0),
        _ => (w0 & 0xff, (w0 >> 8) & 0xff),
    };
    // Shift amounts and bit indices are 32-bit even in the 64-bit forms.
    let b_wide = wide && !matches!(op, Lshl(_) | Lshr(_) | Ashr(_) | BfeU(_) | BfeI(_) | Bitcmp(..));
    let a = ssrc(w, a_code, wide, lit);
    let b = if matches!(i.enc, Encoding::Sop2 | Encoding::Sopc) { ssrc(w, b_code, b_wide, lit) } else { 0 };
    // CAST: SOPK's simm16, signed and unsigned.
    let k16 = w0 as u16;
    let sk = i64::from(k16 as i16) as u64;
    let (a32, b32) = (a as u32, b as u32);
    let (ai, bi) = (a32 as i32, b32 as i32);
    let scc = w.scc;
    let mut res: Option<u64> = None;
    let mut nscc: Option<bool> = None;
    let nz = |x: u64| Some(x != 0);
    match op {
        AddU => {
            let (r, c) = a32.overflowing_add(b32);
            res = Some(r.into());
            nscc = Some(c);
        }
        SubU => {
            let (r, c) = a32.overflowing_sub(b32);
            res = Some(r.into());
            nscc = Some(c);
        }
        AddI => {
            let (r, o) = ai.overflowing_add(bi);
            res = Some(u64::from(r as u32));
            nscc = Some(o);
        }
        SubI => {
            let (r, o) = ai.overflowing_sub(bi);
            res = Some(u64::from(r as u32));
            nscc = Some(o);
        }
        Addc => {
            let s = u64::from(a32) + u64::from(b32) + u64::from(scc);
            res = Some(s & 0xffff_ffff);
            nscc = Some(s >> 32 != 0);
        }
        Subb => {
            let y = u64::from(b32) + u64::from(scc);
            res = Some(u64::from(a32).wrapping_sub(y) & 0xffff_ffff);
            nscc = Some(y > u64::from(a32));
        }
        MinI => {
            res = Some(u64::from(ai.min(bi) as u32));
            nscc = Some(ai < bi);
        }
        MinU => {
            res = Some(a32.min(b32).into());
            nscc = Some(a32 < b32);
        }
        MaxI => {
            res = Some(u64::from(ai.max(bi) as u32));
            nscc = Some(ai > bi);
        }
        MaxU => {
            res = Some(a32.max(b32).into());
            nscc = Some(a32 > b32);
        }
        Cselect(_) => res = Some(if scc { a } else { b }),
        And(_) | Or(_) | Xor(_) | Nand(_) | Nor(_) | Xnor(_) | AndNot1(_) | OrNot1(_) => {
            let r = match op {
                And(_) => a & b,
                Or(_) => a | b,
                Xor(_) => a ^ b,
                Nand(_) => !(a & b),
                Nor(_) => !(a | b),
                Xnor(_) => !(a ^ b),
                AndNot1(_) => a & !b,
                _ => a | !b,
            };
            let r = if wide { r } else { r & 0xffff_ffff };
            res = Some(r);
            nscc = nz(r);
        }
        Lshl(wd) => {
            let r = if wd { a << (b & 63) } else { u64::from(a32 << (b32 & 31)) };
            res = Some(r);
            nscc = nz(r);
        }
        Lshr(wd) => {
            let r = if wd { a >> (b & 63) } else { u64::from(a32 >> (b32 & 31)) };
            res = Some(r);
            nscc = nz(r);
        }
        Ashr(wd) => {
            let r = if wd { ((a as i64) >> (b & 63)) as u64 } else { u64::from((ai >> (b32 & 31)) as u32) };
            res = Some(r);
            nscc = nz(r);
        }
        Bfm => res = Some(u64::from(((1u64 << (a32 & 31)) as u32).wrapping_sub(1) << (b32 & 31))),
        MulI => res = Some(u64::from(a32.wrapping_mul(b32))),
        MulHiU => res = Some((u64::from(a32) * u64::from(b32)) >> 32),
        MulHiI => res = Some(u64::from(((i64::from(ai) * i64::from(bi)) >> 32) as u32)),
        BfeU(wd) | BfeI(wd) => {
            let (off, width) = (b32 & 63, (b32 >> 16) & 0x7f);
            let bits = if wd { 64 } else { 32 };
            let r = if width == 0 {
                0
            } else {
                let width = width.min(bits);
                let x = (if wd { a } else { u64::from(a32) }) >> (off & (bits - 1));
                let field = if width >= 64 { x } else { x & ((1u64 << width) - 1) };
                if matches!(op, BfeI(_)) && width < 64 && (field >> (width - 1)) & 1 == 1 {
                    let ext = field | !((1u64 << width) - 1);
                    if wd { ext } else { ext & 0xffff_ffff }
                } else {
                    field
                }
            };
            res = Some(r);
            nscc = nz(r);
        }
        AbsdiffI => {
            let r = u64::from((i64::from(ai) - i64::from(bi)).unsigned_abs() as u32);
            res = Some(r);
            nscc = nz(r);
        }
        LshlAdd(n) => {
            let s = (u64::from(a32) << n) + u64::from(b32);
            res = Some(s & 0xffff_ffff);
            nscc = Some(s >> 32 != 0);
        }
        PackLl => res = Some(u64::from((a32 & 0xffff) | b32 << 16)),
        PackLh => res = Some(u64::from((a32 & 0xffff) | (b32 & 0xffff_0000))),
        PackHh => res = Some(u64::from((a32 >> 16) | (b32 & 0xffff_0000))),
        // S_PACK_HL_B32_B16: D0 = { S1[15:0], S0[31:16] }.
        PackHl => res = Some(u64::from((a32 >> 16) | (b32 << 16))),
        Mov(_) => res = Some(a),
        Cmov(_) => {
            if scc {
                res = Some(a);
            }
        }
        Not(_) => {
            let r = if wide { !a } else { u64::from(!a32) };
            res = Some(r);
            nscc = nz(r);
        }
        Brev => res = Some(u64::from(a32.reverse_bits())),
        Clz => res = Some(u64::from(if a32 == 0 { u32::MAX } else { a32.leading_zeros() })),
        Ctz => res = Some(u64::from(if a32 == 0 { u32::MAX } else { a32.trailing_zeros() })),
        Cls => {
            res = Some(u64::from(if ai == 0 || ai == -1 { u32::MAX } else { (ai ^ (ai >> 31)).leading_zeros() - 1 }))
        }
        Sext8 => res = Some(u64::from(i32::from(a32 as u8 as i8) as u32)),
        Sext16 => res = Some(u64::from(i32::from(a32 as u16 as i16) as u32)),
        Bitset0 => res = Some(u64::from(w.s[sdst as usize] & !(1 << (a32 & 31)))),
        Bitset1 => res = Some(u64::from(w.s[sdst as usize] | 1 << (a32 & 31))),
        Abs => {
            let r = u64::from(ai.unsigned_abs());
            res = Some(r);
            nscc = nz(r);
        }
        Bcnt1(wd) => {
            let r = u64::from(if wd { ssrc(w, a_code, true, lit).count_ones() } else { a32.count_ones() });
            res = Some(r);
            nscc = nz(r);
        }
        Bcnt0(wd) => {
            let r = u64::from(if wd { ssrc(w, a_code, true, lit).count_zeros() } else { a32.count_zeros() });
            res = Some(r);
            nscc = nz(r);
        }
        // The 64-bit forms, from the RDNA3 guide's SOP1/SOP2 pseudo-code (their results 32 bits
        // wide where the mnemonic says i32).
        Brev64 => {
            w.sgpr_write(sdst, ssrc(w, a_code, true, lit).reverse_bits(), true);
            return;
        }
        Ctz64 | Clz64 => {
            let x = ssrc(w, a_code, true, lit);
            let n = if op == Ctz64 { x.trailing_zeros() } else { x.leading_zeros() };
            res = Some(u64::from(if x == 0 { u32::MAX } else { n }));
        }
        Cls64 => {
            // CAST: as signed 64-bit.
            let x = ssrc(w, a_code, true, lit) as i64;
            res = Some(u64::from(if x == 0 || x == -1 { u32::MAX } else { (x ^ (x >> 63)).leading_zeros() - 1 }));
        }
        Bitset64(one) => {
            let d = w.mask_pair(sdst);
            let bit = 1u64 << (a32 & 63);
            w.sgpr_write(sdst, if one { d | bit } else { d & !bit }, true);
            return;
        }
        Bitreplicate => {
            let mut r = 0u64;
            for k in 0..32 {
                let b = u64::from((a32 >> k) & 1);
                r |= (b | b << 1) << (2 * k);
            }
            w.sgpr_write(sdst, r, true);
            return;
        }
        Quadmask(wd) => {
            // Bit i: any of bits 4i+3:4i.
            let (x, n) = if wd { (ssrc(w, a_code, true, lit), 16) } else { (u64::from(a32), 8) };
            let r = (0..n).fold(0u64, |r, i| r | u64::from((x >> (4 * i)) & 0xf != 0) << i);
            w.sgpr_write(sdst, r, wd);
            w.scc = r != 0;
            return;
        }
        Wqm(wd) => {
            // Each nibble all ones when any of its bits is set.
            let (x, n) = if wd { (ssrc(w, a_code, true, lit), 16) } else { (u64::from(a32), 8) };
            let r = (0..n).fold(0u64, |r, i| r | if (x >> (4 * i)) & 0xf != 0 { 0xf << (4 * i) } else { 0 });
            w.sgpr_write(sdst, r, wd);
            w.scc = r != 0;
            return;
        }
        Wrexec(not1, wd) => {
            // and_not0: EXEC = ~S0 & EXEC; and_not1: EXEC = S0 & ~EXEC; D = EXEC; SCC = EXEC != 0.
            let exec = if wd || w.lanes == 64 { w.exec() } else { u64::from(w.s[126]) };
            let s0 = if wd { ssrc(w, a_code, true, lit) } else { u64::from(a32) };
            let e = if not1 { s0 & !exec } else { !s0 & exec };
            let e = if wd { e } else { e & 0xffff_ffff };
            w.set_mask(126, e);
            w.sgpr_write(sdst, e, wd);
            w.scc = e != 0;
            return;
        }
        Bfm64 => {
            w.sgpr_write(sdst, (1u64 << (a32 & 63)).wrapping_sub(1) << (b32 & 63), true);
            return;
        }
        Movrels(_) | Movreld(_) | Movrelsd2 => {
            // An index past s127 reads 0 and writes nothing.
            let wd = matches!(op, Movrels(true) | Movreld(true));
            let m0 = w.s[125];
            let read = |w: &Wave, r: u32| {
                let at = |k: u32| r.checked_add(k).filter(|&x| x < 128 && x != 124).map_or(0, |x| w.s[x as usize]);
                u64::from(at(0)) | if wd { u64::from(at(1)) << 32 } else { 0 }
            };
            let (src, dst) = match op {
                Movrels(_) => (read(w, a_code.saturating_add(m0)), sdst),
                Movreld(_) => (if wd { ssrc(w, a_code, true, lit) } else { u64::from(a32) }, sdst.saturating_add(m0)),
                _ => (read(w, a_code + (m0 & 0x3ff)), sdst + ((m0 >> 16) & 0x3ff)),
            };
            if dst < 128 {
                w.sgpr_write(dst, src, wd && dst < 127);
            }
            return;
        }
        Saveexec(k, wd) => {
            let exec = if wd || w.lanes == 64 { w.exec() } else { u64::from(w.s[126]) };
            let e = match k {
                0 => a & exec,
                1 => a | exec,
                2 => a ^ exec,
                3 => !(a & exec),
                4 => !(a | exec),
                5 => !(a ^ exec),
                6 => a & !exec,
                7 => a | !exec,
                8 => !a & exec,
                _ => !a | exec,
            };
            let e = if wd { e } else { e & 0xffff_ffff };
            w.sgpr_write(sdst, exec, wd);
            w.set_mask(126, e);
            w.scc = e != 0;
            return;
        }
        Cmp(c, signed, wd) => nscc = Some(valu::cmp(c, if wd { T::B64 } else { T::B32 }, signed, a, b)),
        Bitcmp(one, wd) => {
            let bit = if wd { (a >> (b & 63)) & 1 } else { u64::from((a32 >> (b32 & 31)) & 1) };
            nscc = Some((bit == 1) == one);
        }
        Movk => res = Some(sk & 0xffff_ffff),
        Cmovk => {
            if scc {
                res = Some(sk & 0xffff_ffff);
            }
        }
        Cmpk(c, signed) => {
            let k = if signed { sk & 0xffff_ffff } else { u64::from(k16) };
            nscc = Some(valu::cmp(c, T::B32, signed, a, k));
        }
        Addk => {
            let (r, o) = ai.overflowing_add(sk as i32);
            res = Some(u64::from(r as u32));
            nscc = Some(o);
        }
        Mulk => res = Some(u64::from(ai.wrapping_mul(sk as i32) as u32)),
    }
    if let Some(r) = res {
        w.sgpr_write(sdst, r, wide);
    }
    if let Some(c) = nscc {
        w.scc = c;
    }
}

fn scond(s: &str) -> Option<Cond> {
    Some(match s {
        "eq" => Cond::Eq,
        "lg" => Cond::Ne,
        "gt" => Cond::Gt,
        "ge" => Cond::Ge,
        "lt" => Cond::Lt,
        "le" => Cond::Le,
        _ => return None,
    })
}

fn scalar(name: &str) -> Option<S> {
    use S::*;
    let n = name.strip_prefix("s_")?;
    if let Some(r) = n.strip_prefix("cmpk_") {
        let (c, t) = r.split_once('_')?;
        return Some(Cmpk(scond(c)?, t == "i32"));
    }
    if let Some(r) = n.strip_prefix("cmp_") {
        let (c, t) = r.split_once('_')?;
        return Some(Cmp(scond(c)?, t.starts_with('i'), t.ends_with("64")));
    }
    if let Some(r) = n.strip_suffix("_saveexec_b32").or_else(|| n.strip_suffix("_saveexec_b64")) {
        let k = ["and", "or", "xor", "nand", "nor", "xnor", "and_not1", "or_not1", "and_not0", "or_not0"]
            .iter()
            .position(|&x| x == r)?;
        // CAST: k < 10.
        return Some(Saveexec(k as u8, n.ends_with("64")));
    }
    let w64 = n.ends_with("_b64") || n.ends_with("_u64") || n.ends_with("_i64");
    Some(match n {
        "add_u32" => AddU,
        "sub_u32" => SubU,
        "add_i32" => AddI,
        "sub_i32" => SubI,
        "addc_u32" => Addc,
        "subb_u32" => Subb,
        "min_i32" => MinI,
        "min_u32" => MinU,
        "max_i32" => MaxI,
        "max_u32" => MaxU,
        "cselect_b32" | "cselect_b64" => Cselect(w64),
        "and_b32" | "and_b64" => And(w64),
        "or_b32" | "or_b64" => Or(w64),
        "xor_b32" | "xor_b64" => Xor(w64),
        "nand_b32" | "nand_b64" => Nand(w64),
        "nor_b32" | "nor_b64" => Nor(w64),
        "xnor_b32" | "xnor_b64" => Xnor(w64),
        "and_not1_b32" | "and_not1_b64" => AndNot1(w64),
        "or_not1_b32" | "or_not1_b64" => OrNot1(w64),
        "lshl_b32" | "lshl_b64" => Lshl(w64),
        "lshr_b32" | "lshr_b64" => Lshr(w64),
        "ashr_i32" | "ashr_i64" => Ashr(w64),
        "bfm_b32" => Bfm,
        "mul_i32" => MulI,
        "mul_hi_u32" => MulHiU,
        "mul_hi_i32" => MulHiI,
        "bfe_u32" | "bfe_u64" => BfeU(w64),
        "bfe_i32" | "bfe_i64" => BfeI(w64),
        "absdiff_i32" => AbsdiffI,
        "lshl1_add_u32" => LshlAdd(1),
        "lshl2_add_u32" => LshlAdd(2),
        "lshl3_add_u32" => LshlAdd(3),
        "lshl4_add_u32" => LshlAdd(4),
        "pack_ll_b32_b16" => PackLl,
        "pack_lh_b32_b16" => PackLh,
        "pack_hh_b32_b16" => PackHh,
        "pack_hl_b32_b16" => PackHl,
        "mov_b32" | "mov_b64" => Mov(w64),
        "cmov_b32" | "cmov_b64" => Cmov(w64),
        "not_b32" | "not_b64" => Not(w64),
        "brev_b32" => Brev,
        "clz_i32_u32" => Clz,
        "ctz_i32_b32" => Ctz,
        "cls_i32" => Cls,
        "sext_i32_i8" => Sext8,
        "sext_i32_i16" => Sext16,
        "bitset0_b32" => Bitset0,
        "bitset1_b32" => Bitset1,
        "abs_i32" => Abs,
        "bcnt1_i32_b32" | "bcnt1_i32_b64" => Bcnt1(w64),
        "bcnt0_i32_b32" | "bcnt0_i32_b64" => Bcnt0(w64),
        "brev_b64" => Brev64,
        "ctz_i32_b64" => Ctz64,
        "clz_i32_u64" => Clz64,
        "cls_i32_i64" => Cls64,
        "bitset0_b64" => Bitset64(false),
        "bitset1_b64" => Bitset64(true),
        "bitreplicate_b64_b32" => Bitreplicate,
        "quadmask_b32" | "quadmask_b64" => Quadmask(w64),
        "wqm_b32" | "wqm_b64" => Wqm(w64),
        "and_not0_wrexec_b32" | "and_not0_wrexec_b64" => Wrexec(false, w64),
        "and_not1_wrexec_b32" | "and_not1_wrexec_b64" => Wrexec(true, w64),
        "bfm_b64" => Bfm64,
        "movrels_b32" | "movrels_b64" => Movrels(w64),
        "movreld_b32" | "movreld_b64" => Movreld(w64),
        "movrelsd_2_b32" => Movrelsd2,
        "bitcmp0_b32" | "bitcmp0_b64" => Bitcmp(false, w64),
        "bitcmp1_b32" | "bitcmp1_b64" => Bitcmp(true, w64),
        "movk_i32" => Movk,
        "cmovk_i32" => Cmovk,
        "addk_i32" => Addk,
        "mulk_i32" => Mulk,
        _ => return None,
    })
}

fn mem_op(name: &str) -> Option<MemOp> {
    let (space, rest) = if let Some(r) = name.strip_prefix("global_") {
        (Space::Global, r)
    } else if let Some(r) = name.strip_prefix("flat_") {
        (Space::Global, r)
    } else if let Some(r) = name.strip_prefix("scratch_") {
        (Space::Scratch, r)
    } else {
        (Space::Lds, name.strip_prefix("ds_")?)
    };
    let (store, ty) =
        if let Some(t) = rest.strip_prefix("load_") { (false, t) } else { (true, rest.strip_prefix("store_")?) };
    let (two, ty) = match ty.strip_prefix("2addr_stride64_") {
        Some(t) if space == Space::Lds => (Some(64), t),
        _ => match ty.strip_prefix("2addr_") {
            Some(t) if space == Space::Lds => (Some(1), t),
            _ => (None, ty),
        },
    };
    let (bytes, ext) = match (store, ty) {
        (false, "u8") => (1, Ext::Zero),
        (false, "i8") => (1, Ext::Sign),
        (false, "u16") => (2, Ext::Zero),
        (false, "i16") => (2, Ext::Sign),
        (_, "b32") => (4, Ext::Plain),
        (_, "b64") => (8, Ext::Plain),
        (_, "b96") => (12, Ext::Plain),
        (_, "b128") => (16, Ext::Plain),
        (true, "b8") => (1, Ext::Plain),
        (true, "b16") => (2, Ext::Plain),
        (false, "d16_b16") => (2, Ext::D16Lo(false)),
        (false, "d16_u8") => (1, Ext::D16Lo(false)),
        (false, "d16_i8") => (1, Ext::D16Lo(true)),
        (false, "d16_hi_b16") => (2, Ext::D16Hi(false)),
        (false, "d16_hi_u8") => (1, Ext::D16Hi(false)),
        (false, "d16_hi_i8") => (1, Ext::D16Hi(true)),
        (true, "d16_hi_b8") => (1, Ext::D16Hi(false)),
        (true, "d16_hi_b16") => (2, Ext::D16Hi(false)),
        // LDS names them the other way round: ds_store_b16_d16_hi, ds_load_u8_d16, …
        (true, "b8_d16_hi") => (1, Ext::D16Hi(false)),
        (true, "b16_d16_hi") => (2, Ext::D16Hi(false)),
        (false, "u8_d16") => (1, Ext::D16Lo(false)),
        (false, "i8_d16") => (1, Ext::D16Lo(true)),
        (false, "u16_d16") => (2, Ext::D16Lo(false)),
        (false, "u8_d16_hi") => (1, Ext::D16Hi(false)),
        (false, "i8_d16_hi") => (1, Ext::D16Hi(true)),
        (false, "u16_d16_hi") => (2, Ext::D16Hi(false)),
        _ => return None,
    };
    if two.is_some() && !matches!(bytes, 4 | 8) {
        return None;
    }
    Some(MemOp { space, store, bytes, ext, two, flat: name.starts_with("flat_") })
}

/// `v_pk_<op>` as the 16-bit `v_<op>` each half runs.
fn pk_sig(name: &str) -> Option<Sig> {
    let rest = name.strip_prefix("v_pk_")?;
    let mut buf = [0u8; 32];
    let full = b"v_".iter().chain(rest.as_bytes()).copied();
    let mut n = 0;
    for (k, c) in full.enumerate() {
        *buf.get_mut(k)? = c;
        n = k + 1;
    }
    valu::sig(core::str::from_utf8(&buf[..n]).ok()?)
}

/// What `i` does, or why it is refused.
fn resolve(i: &Inst, at: usize, wave64: bool) -> Result<Sem, LoadError> {
    let name = i.op.name;
    let no = |what| Err(unsupported(at, i, what));
    Ok(match i.enc {
        Encoding::Sopp => match name {
            "s_endpgm" | "s_endpgm_saved" => Sem::End,
            "s_barrier" => Sem::Barrier,
            "s_code_end" | "s_trap" => Sem::Trap,
            "s_branch" => Sem::Branch(Br::Always, 0),
            "s_cbranch_scc0" => Sem::Branch(Br::Scc0, 0),
            "s_cbranch_scc1" => Sem::Branch(Br::Scc1, 0),
            "s_cbranch_vccz" => Sem::Branch(Br::Vccz, 0),
            "s_cbranch_vccnz" => Sem::Branch(Br::Vccnz, 0),
            "s_cbranch_execz" => Sem::Branch(Br::Execz, 0),
            "s_cbranch_execnz" => Sem::Branch(Br::Execnz, 0),
            // Waits, hints and messages: in-order execution has nothing to wait for.
            "s_nop"
            | "s_waitcnt"
            | "s_clause"
            | "s_delay_alu"
            | "s_waitcnt_depctr"
            | "s_sendmsg"
            | "s_sleep"
            | "s_setprio"
            | "s_set_inst_prefetch_distance"
            | "s_icache_inv"
            | "s_sendmsghalt"
            | "s_wait_idle"
            | "s_waitcnt_expcnt"
            | "s_waitcnt_lgkmcnt"
            | "s_waitcnt_vmcnt"
            | "s_waitcnt_vscnt"
            | "s_ttracedata"
            | "s_ttracedata_imm" => Sem::Nop,
            // S_SETKILL / S_SETHALT: set the wave's KILL / HALT bit to SIMM16[0] (a debugger's
            // controls: a killed wave is ended by the host, a halted one waits for the host to
            // resume it). A running compute wave has both clear: writing 0 changes nothing; 1
            // asks for a host that is not modelled.
            "s_setkill" | "s_sethalt" if i.words[0] & 1 == 0 => Sem::Nop,
            "s_setkill" => return no("SIMM16[0] = 1 (killing the wave, a host debugger's action)"),
            "s_sethalt" => return no("SIMM16[0] = 1 (halting the wave until a host debugger resumes it)"),
            // S_WAIT_EVENT: on gfx11 SIMM16[0] = 0 waits for export_ready, the export space
            // given to pixel shaders; with bit 0 set (dont_wait_export_ready) it waits for nothing.
            // The debugger's conditional branches: without a debugger their bits are clear.
            "s_cbranch_cdbgsys" | "s_cbranch_cdbguser" | "s_cbranch_cdbgsys_or_user" | "s_cbranch_cdbgsys_and_user" => {
                Sem::Nop
            }
            // s_wakeup ends other waves' s_sleep early (a sleep is not modelled: it ends at
            // once); the perf levels are performance-counter hints.
            "s_wakeup" | "s_incperflevel" | "s_decperflevel" => Sem::Nop,
            // The float modes: the interpreter rounds to nearest even and keeps denormals,
            // MODE's 0 round bits and 0xf denorm bits; asking for those changes nothing.
            "s_round_mode" if i.words[0] & 0xf == 0 => Sem::Nop,
            "s_round_mode" => return no("a rounding mode other than nearest even"),
            "s_denorm_mode" if i.words[0] & 0xf == 0xf => Sem::Nop,
            "s_denorm_mode" => return no("flushing denormals (the interpreter keeps them)"),
            "s_wait_event" if i.words[0] & 1 == 1 => Sem::Nop,
            "s_wait_event" => return no("waiting for export_ready (pixel shader exports: graphics)"),
            _ => return no("the opcode"),
        },
        Encoding::Sopk if name.starts_with("s_waitcnt_") || name == "s_version" => Sem::Nop,
        Encoding::Sopk if name == "s_call_b64" => Sem::Call(0),
        Encoding::Sopk if name.starts_with("s_getreg") || name.starts_with("s_setreg") => {
            return no("the hardware registers (HW_REG_*), which are not modelled");
        }
        Encoding::Sopk if name.starts_with("s_subvector_loop") => {
            return no("a wave64's subvector loop (its halves one after the other)");
        }
        Encoding::Sop1 if name == "s_getpc_b64" => Sem::Getpc,
        Encoding::Sop1 if name == "s_setpc_b64" => Sem::Setpc(false),
        Encoding::Sop1 if name == "s_swappc_b64" => Sem::Setpc(true),
        Encoding::Sop1 if name == "s_rfe_b64" => return no("a return from a trap handler (none runs)"),
        Encoding::Sop1 if name.starts_with("s_sendmsg_rtn") => {
            return no("a message whose answer comes from the SPI (not modelled)");
        }
        Encoding::Sop1 | Encoding::Sop2 | Encoding::Sopc | Encoding::Sopk => match scalar(name) {
            Some(s) => Sem::Salu(s),
            None => return no("the opcode"),
        },
        Encoding::Smem => match name {
            "s_load_b32" => Sem::Smem(1),
            "s_load_b64" => Sem::Smem(2),
            "s_load_b128" => Sem::Smem(4),
            "s_load_b256" => Sem::Smem(8),
            "s_load_b512" => Sem::Smem(16),
            "s_buffer_load_b32" => Sem::SBuf(1),
            "s_buffer_load_b64" => Sem::SBuf(2),
            "s_buffer_load_b128" => Sem::SBuf(4),
            "s_buffer_load_b256" => Sem::SBuf(8),
            "s_buffer_load_b512" => Sem::SBuf(16),
            // Cache invalidations (the interpreter's memory has no caches) and the ATC probes
            // (address-translation prefetch hints, with no result).
            "s_gl1_inv" | "s_dcache_inv" | "s_atc_probe" | "s_atc_probe_buffer" => Sem::Nop,
            _ => return no("the opcode"),
        },
        Encoding::Vopc => match valu::compare(name) {
            Some((cond, t, x)) => Sem::Vcmp { cond, t, signed: valu::compare_signed(name), x },
            None => return no("the opcode"),
        },
        Encoding::Vop3 if name.starts_with("v_cmp") => {
            if (i.words[0] >> 15) & 1 == 1 {
                return no("clamp on a compare");
            }
            match valu::compare(name) {
                Some((cond, t, x)) => Sem::Vcmp { cond, t, signed: valu::compare_signed(name), x },
                None => return no("the opcode"),
            }
        }
        Encoding::Vop3 if name == "v_readlane_b32" => Sem::Readlane,
        Encoding::Vop3 if name == "v_writelane_b32" => Sem::Writelane,
        Encoding::Vop1 if name == "v_readfirstlane_b32" => Sem::Readfirstlane,
        // V_NOP: "Do nothing."
        Encoding::Vop1 if name == "v_nop" => Sem::Nop,
        Encoding::Vop3p => match name {
            "v_fma_mix_f32" => Sem::Mix(0),
            "v_fma_mixlo_f16" => Sem::Mix(1),
            "v_fma_mixhi_f16" => Sem::Mix(2),
            "v_dot2_f32_f16" | "v_dot2_f32_bf16" | "v_dot4_i32_iu8" | "v_dot4_u32_u8" | "v_dot8_i32_iu4"
            | "v_dot8_u32_u4" => {
                let (w0, w1) = (i.words[0], i.words[1]);
                let k = match name {
                    "v_dot2_f32_f16" => Dot::F16,
                    "v_dot2_f32_bf16" => Dot::Bf16,
                    "v_dot4_i32_iu8" => Dot::I8(true),
                    "v_dot4_u32_u8" => Dot::I8(false),
                    "v_dot8_i32_iu4" => Dot::I4(true),
                    _ => Dot::I4(false),
                };
                let (neg_lo, neg_hi, op_sel) = (w1 >> 29, (w0 >> 8) & 7, (w0 >> 11) & 7);
                match k {
                    // S2 (f32): no op_sel, no neg.
                    Dot::F16 | Dot::Bf16 if op_sel & 4 != 0 || (neg_lo | neg_hi) & 4 != 0 => {
                        return no("op_sel or neg on the f32 accumulator");
                    }
                    Dot::I8(s) | Dot::I4(s) if op_sel != 0 || neg_hi != 0 || neg_lo & 4 != 0 || (!s && neg_lo != 0) => {
                        return no("op_sel, neg_hi or a sign bit the op does not have");
                    }
                    _ => Sem::Dot(k),
                }
            }
            _ if name.starts_with("v_pk_") => {
                let base = match &name[5..] {
                    "add_u16" | "add_i16" => "v_add_nc_u16",
                    "sub_u16" | "sub_i16" => "v_sub_nc_u16",
                    _ => "",
                };
                let g = if base.is_empty() { pk_sig(name) } else { valu::sig(base) };
                match g {
                    Some(g) if g.src[0].bits() == 16 && g.dst.bits() == 16 => Sem::Pk(g),
                    _ => return no("the opcode"),
                }
            }
            _ if name.starts_with("v_wmma_") => {
                let kind = match name {
                    "v_wmma_f32_16x16x16_f16" => Wmma::F32F16,
                    "v_wmma_f32_16x16x16_bf16" => Wmma::F32Bf16,
                    "v_wmma_f16_16x16x16_f16" => Wmma::F16F16,
                    "v_wmma_bf16_16x16x16_bf16" => Wmma::Bf16Bf16,
                    "v_wmma_i32_16x16x16_iu8" => Wmma::I32Iu8,
                    "v_wmma_i32_16x16x16_iu4" => Wmma::I32Iu4,
                    _ => return no("the opcode"),
                };
                let (w0, w1) = (i.words[0], i.words[1]);
                if (w1 >> 18) & 0x1ff < 256 && (w1 >> 18) & 0x1ff != 128 {
                    return no("a scalar or constant accumulator other than 0");
                }
                if w1 & 0x1ff < 256 || (w1 >> 9) & 0x1ff < 256 {
                    return no("A or B matrix outside VGPRs");
                }
                let (neg_lo, neg_hi, clamp) = (w1 >> 29, (w0 >> 8) & 7, (w0 >> 15) & 1);
                match kind {
                    Wmma::I32Iu8 | Wmma::I32Iu4 if neg_hi != 0 || neg_lo & 4 != 0 => {
                        return no("neg_hi or neg_lo[2] on an integer WMMA");
                    }
                    Wmma::I32Iu8 | Wmma::I32Iu4 => {}
                    _ if neg_lo != 0 || neg_hi != 0 || clamp != 0 => return no("neg or clamp on a float WMMA"),
                    _ => {}
                }
                Sem::Wmma(kind)
            }
            _ => return no("the opcode"),
        },
        Encoding::Vopd => {
            let y = i.y.expect("a VOPD instruction has its Y half");
            match (valu::sig(name), valu::sig(y.name)) {
                (Some(x), Some(yy)) => Sem::Vopd(x, yy),
                (None, _) => return no("its X half"),
                _ => {
                    return Err(LoadError::Unsupported { at: 4 * at, name: y.name, what: "the VOPD Y half" });
                }
            }
        }
        Encoding::Vop1 if name == "v_pipeflush" => Sem::Nop,
        Encoding::Vop1 | Encoding::Vop3 if cross::cross(name).is_some() => {
            let Some(op) = cross::cross(name) else { return no("the opcode") };
            let (w0, w1) = (i.words[0], i.words[1]);
            let src0 = if i.enc == Encoding::Vop1 { w0 & 0x1ff } else { w1 & 0x1ff };
            let vgpr_src = !matches!(op, cross::Cross::Mbcnt(_) | cross::Cross::Movreld | cross::Cross::MovB16);
            if vgpr_src && src0 < 256 {
                return no("src0 other than a VGPR");
            }
            if op == cross::Cross::Mqsad && (w1 >> 18) & 0x1ff < 256 {
                return no("a 128-bit accumulator outside VGPRs");
            }
            if op == cross::Cross::Permlane64 && !wave64 {
                return no("wave32 (the guide defines the swap of a wave64's halves)");
            }
            if i.enc == Encoding::Vop3 {
                // abs, op_sel (but permlane's FI and BOUND_CTRL), clamp, omod, neg.
                let opsel_ok = if matches!(op, cross::Cross::Permlane16(_)) { 0x3 << 11 } else { 0 };
                if (w0 >> 8) & 0xff & !(opsel_ok >> 8) != 0 || w1 >> 27 != 0 {
                    return no("a modifier on a lane op");
                }
            }
            Sem::Cross(op)
        }
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vop3 => {
            let Some(g) = valu::sig(name) else { return no("the opcode") };
            if i.enc == Encoding::Vop3 && !g.mask_out {
                let (w0, w1) = (i.words[0], i.words[1]);
                let clamp = (w0 >> 15) & 1 == 1;
                let omod = (w1 >> 27) & 3;
                if (clamp || omod != 0) && !g.dst.float() {
                    return no("clamp or omod on an integer result");
                }
                if omod != 0 && g.dst != T::F32 {
                    return no("omod on a non-f32 result");
                }
            }
            Sem::Valu(g)
        }
        // GDS (bit 17): the global data share, which no dispatch here has.
        Encoding::Ds if (i.words[0] >> 17) & 1 == 1 => return no("GDS (the global data share)"),
        Encoding::Ds if name == "ds_nop" => Sem::Nop,
        Encoding::Ds if name == "ds_bvh_stack_rtn_b32" => return no("the BVH stack of ray tracing (graphics)"),
        Encoding::Ds if atomic::lds(name).is_some() => match atomic::lds(name) {
            Some(k) => Sem::Lds(k),
            None => return no("the opcode"),
        },
        Encoding::Global | Encoding::Flat if name.contains("_atomic_") => {
            let rest = name.split_once("_atomic_").map_or("", |(_, r)| r);
            match atomic::parse(rest) {
                // GLC (bit 14): return the value before.
                Some((op, wide, _)) => Sem::GAtomic(atomic::AtomOp {
                    op,
                    wide,
                    rtn: (i.words[0] >> 14) & 1 == 1,
                    flat: i.enc == Encoding::Flat,
                }),
                None => return no("the opcode"),
            }
        }
        Encoding::Global if name == "global_load_addtid_b32" => Sem::GAddtid(false),
        Encoding::Global if name == "global_store_addtid_b32" => Sem::GAddtid(true),
        Encoding::Ds | Encoding::Flat | Encoding::Global | Encoding::Scratch => match mem_op(name) {
            Some(m) => Sem::Mem(m),
            None => return no("the opcode"),
        },
        _ => return no("the encoding"),
    })
}
