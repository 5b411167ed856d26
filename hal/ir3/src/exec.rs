//! A functional interpreter of a6xx compute dispatches.
//!
//! Model (facts from `shared/notes/adreno-ir3-isa.md`, the isaspec XML docs and Mesa's ir3):
//! - A work-group of `local[0]·local[1]·local[2]` fibers fills waves of 64 (THREAD64) in linear
//!   order `x + lx·(y + ly·z)`. Every wave executes its instructions for all its active lanes at
//!   once (wave-wide loops over 64 lanes).
//! - Registers: one merged file per lane of 256 32-bit regids (`4·n + c`); half register `h`
//!   is the low (even `h`) or high (odd `h`) 16 bits of full regid `h/2` (a6xx merged registers,
//!   `ir3.h` `ir3_reg_file_offset`). p0.x..w and a0.x/a1.x live at regids 0xf8.. and 0xf4/0xf5.
//! - Control flow: each wave keeps the lanes at the current pc and a list of parked
//!   (pc, lanes) groups; it always runs the lowest pc, and groups that reach the same pc merge
//!   (reconvergence for structured code). `predt`/`predf`/`prede` mask lanes without branching.
//! - `bar` holds a wave until every unfinished wave of the work-group reaches a barrier.
//! - Each instruction completes before the next starts, so (sy), (ss), (nopN), nop, fences and
//!   cache operations have no effect.
//! - Floating point: f32 IEEE with round-to-nearest-even; f32 denormal inputs and results of
//!   float ALU ops flush to zero (turnip advertises FTZ for fp32). `mad.f32` multiplies, rounds,
//!   then adds (unfused: the hardware's choice is undocumented). Half-precision float ops compute
//!   in f32 and round once to f16. SFU ops (cat4) are evaluated in f64 with `libm` and rounded
//!   once to f32: correctly rounded for rcp/sqrt/rsq, and within f64's margin (off only in rare
//!   double-rounding ties) for exp2/log2/sin/cos; the hardware's SFU precision is undocumented.
//! - Memory: global accesses go through the caller's [`Memory`], which bounds-checks them;
//!   shared memory is `shmem` bytes per work-group, private memory `pvtmem` bytes per fiber. Any
//!   access out of bounds is [`ExecError::Fault`] naming the instruction, work-group, lane and
//!   address.
//! - Encodings whose semantics are not documented are refused with [`ExecError::Unsupported`]
//!   rather than guessed (cat5, bindless cat6, `sel.s*`/`sel.f*`, `sad`, `cmpv`, `madsh.u16`,
//!   `bary.f`, `flat.b`, `mgen.b`, `setrm`, `shb`, `msad`, `call`/`ret`/`bkt`, `shps`/`shpe`,
//!   `emit`/`cut`/`chmask`/`chsh`/`flow_rev`).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::decode::{ImageError, decode_image};
use crate::fp::{f16_to_f32, f32_to_f16};
use crate::isa::*;

const W: usize = 64;
type Lanes = [u32; W];

/// An address outside every allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBounds;

/// GPU global memory as the dispatch sees it. Implementations must check that every byte of an
/// access lies inside an allocation and return [`OutOfBounds`] otherwise.
pub trait Memory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), OutOfBounds>;
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), OutOfBounds>;
}

/// A simple [`Memory`]: a list of non-overlapping buffers at GPU addresses.
#[derive(Clone, Debug, Default)]
pub struct Buffers {
    pub bufs: Vec<(u64, Vec<u8>)>,
}

impl Buffers {
    fn find(&mut self, addr: u64, len: usize) -> Result<(&mut Vec<u8>, usize), OutOfBounds> {
        for (base, data) in self.bufs.iter_mut() {
            if addr >= *base {
                let off = addr - *base;
                if off <= data.len() as u64 && (len as u64) <= data.len() as u64 - off {
                    return Ok((data, off as usize));
                }
            }
        }
        Err(OutOfBounds)
    }
}

impl Memory for Buffers {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        let (d, off) = self.find(addr, buf.len())?;
        buf.copy_from_slice(&d[off..off + buf.len()]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        let (d, off) = self.find(addr, data.len())?;
        d[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// Program metadata a dispatch needs (from `programs[].adreno` of a bundle, or Mesa's variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Full / half register footprint (information: the interpreter always has 64 registers).
    pub fregs: u32,
    pub hregs: u32,
    /// Regid receiving the work-group id x, y, z (0xfc: none).
    pub wgid: u8,
    /// Regid receiving the local invocation id x, y, z (0xfc: none).
    pub lid: u8,
    /// Shared (local) memory per work-group, bytes.
    pub shmem: u32,
    /// Private memory per fiber, bytes.
    pub pvtmem: u32,
    /// SP_CS_CNTL_0.MERGEDREGS: half registers overlay the full file (hrN = a 16-bit half of
    /// r(N/2)); when false (tinygrad's setting) they are a separate file.
    pub merged_regs: bool,
    /// SP_MODE_CNTL.CONSTANT_DEMOTION_ENABLE: a half operand `hcN.c` reads the 32-bit const
    /// `cN.c` and converts it (f32→f16 for float operands, low 16 bits for integers); when false
    /// it reads 16 bits of the packed const file (`hc0.y` = high half of `c0.x`).
    pub const_demotion: bool,
}

impl Meta {
    /// The metadata from the register values a driver programs (field layouts from Mesa's
    /// a6xx.xml: `a6xx_sp_xs_cntl_0`, SP_CS_CNTL_1, SP_CS_CONST_CONFIG_0,
    /// `a6xx_sp_xs_pvt_mem_param`, SP_MODE_CNTL). Shared memory is the size SHARED_SIZE enables:
    /// 32 KiB for 0, else (SHARED_SIZE + 1) KiB.
    pub fn from_regs(
        sp_cs_cntl_0: u32,
        sp_cs_cntl_1: u32,
        sp_cs_const_config_0: u32,
        sp_cs_pvt_mem_param: u32,
        sp_mode_cntl: u32,
    ) -> Meta {
        let shared = sp_cs_cntl_1 & 0x1f;
        Meta {
            hregs: (sp_cs_cntl_0 >> 1) & 0x3f,
            fregs: (sp_cs_cntl_0 >> 7) & 0x3f,
            merged_regs: sp_cs_cntl_0 >> 31 != 0,
            wgid: sp_cs_const_config_0 as u8,
            lid: (sp_cs_const_config_0 >> 24) as u8,
            shmem: if shared == 0 { 32 * 1024 } else { (shared + 1) * 1024 },
            pvtmem: (sp_cs_pvt_mem_param & 0xff) << 9,
            const_demotion: sp_mode_cntl & 1 != 0,
        }
    }
}

/// A decoded program with its metadata.
#[derive(Clone, Debug)]
pub struct Program {
    pub instrs: Vec<Instr>,
    pub meta: Meta,
}

impl Program {
    pub fn new(image: &[u8], meta: Meta) -> Result<Program, ImageError> {
        Ok(Program { instrs: decode_image(image)?, meta })
    }
}

/// One compute dispatch.
#[derive(Clone, Copy, Debug)]
pub struct Dispatch<'a> {
    /// The constant file (`c0.x` = bytes 0..4), little-endian u32 words.
    pub consts: &'a [u8],
    /// Work-group counts.
    pub grid: [u32; 3],
    /// Work-group size in fibers.
    pub local: [u32; 3],
}

/// Which memory an access faulted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemSpace {
    Global,
    Shared,
    Private,
}

/// Why a dispatch stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// A memory access outside its space.
    Fault { index: usize, group: [u32; 3], lane: u32, addr: u64, space: MemSpace, write: bool },
    /// More than the allowed number of wave-instructions ran.
    StepLimit { steps: u64 },
    /// An instruction this interpreter does not execute.
    Unsupported { index: usize, name: &'static str },
    /// Execution reached an index outside the program (`pc`), from instruction `from`.
    PcOutOfRange { from: usize, pc: i64 },
    /// `r<a0.x + n>` / `c<a0.x + n>` / a relative destination outside the register or const file.
    Relative { index: usize, lane: u32, value: i64 },
    /// A const read beyond the dispatch's constant file.
    ConstOutOfRange { index: usize, word: u32 },
    /// The dispatch itself is malformed (empty grid, too large a work-group...).
    BadDispatch(&'static str),
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Fault { index, group, lane, addr, space, write } => write!(
                f,
                "instruction {index}: {} {space:?} memory fault at address {addr:#x} (work-group {group:?}, lane {lane})",
                if *write { "write" } else { "read" }
            ),
            ExecError::StepLimit { steps } => write!(f, "step limit: {steps} wave-instructions executed"),
            ExecError::Unsupported { index, name } => {
                write!(f, "instruction {index}: {name} is not supported by the interpreter")
            }
            ExecError::PcOutOfRange { from, pc } => {
                write!(f, "instruction {from}: control flow left the program (to {pc})")
            }
            ExecError::Relative { index, lane, value } => {
                write!(f, "instruction {index}: relative access to {value} out of range (lane {lane})")
            }
            ExecError::ConstOutOfRange { index, word } => {
                write!(f, "instruction {index}: const word {word} beyond the constant file")
            }
            ExecError::BadDispatch(why) => write!(f, "bad dispatch: {why}"),
        }
    }
}

/// Counters of one dispatch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Wave-instructions executed.
    pub steps: u64,
    /// Sum over executed instructions of their active lanes (×(rptN+1)).
    pub lane_instructions: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Run,
    Barrier,
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pred {
    None,
    True,
    False,
}

struct Wave {
    regs: Box<[Lanes; 256]>,
    /// The separate half-register file (used when `merged` is false).
    hregs: Box<[Lanes; 256]>,
    merged: bool,
    pc: u32,
    mask: u64,
    /// Other lane groups, sorted by descending pc (the last is the lowest).
    parked: Vec<(u32, u64)>,
    state: State,
    pred: Pred,
    pred_mask: u64,
}

impl Wave {
    fn new() -> Wave {
        Wave {
            regs: Box::new([[0; W]; 256]),
            hregs: Box::new([[0; W]; 256]),
            merged: false,
            pc: 0,
            mask: 0,
            parked: Vec::with_capacity(W),
            state: State::Done,
            pred: Pred::None,
            pred_mask: 0,
        }
    }

    /// Half register `h` of lane `l`.
    #[inline]
    fn hget(&self, h: u8, l: usize) -> u32 {
        if self.merged {
            (self.regs[(h >> 1) as usize][l] >> ((h & 1) * 16)) & 0xffff
        } else {
            self.hregs[h as usize][l] & 0xffff
        }
    }

    #[inline]
    fn hset(&mut self, h: u8, l: usize, v: u32) {
        if self.merged {
            let sh = (h & 1) * 16;
            let x = &mut self.regs[(h >> 1) as usize][l];
            *x = (*x & !(0xffff << sh)) | ((v & 0xffff) << sh);
        } else {
            self.hregs[h as usize][l] = v & 0xffff;
        }
    }

    fn park(&mut self, pc: u32, mask: u64) {
        if mask == 0 {
            return;
        }
        if let Some(e) = self.parked.iter_mut().find(|e| e.0 == pc) {
            e.1 |= mask;
            return;
        }
        let at = self.parked.iter().position(|e| e.0 < pc).unwrap_or(self.parked.len());
        self.parked.insert(at, (pc, mask));
    }
}

/// The interpreter. Keeps its wave and memory state between dispatches, so repeated runs
/// allocate nothing once the largest work-group has been seen.
pub struct Interp {
    waves: Vec<Wave>,
    shared: Vec<u8>,
    private: Vec<u8>,
    /// Upper bound on wave-instructions per dispatch.
    pub max_steps: u64,
}

impl Default for Interp {
    fn default() -> Self {
        Interp::new()
    }
}

/// Run one dispatch with a fresh interpreter and the default step limit.
pub fn run(program: &Program, d: &Dispatch, mem: &mut dyn Memory) -> Result<Stats, ExecError> {
    Interp::new().run(program, d, mem)
}

struct Ctx<'a> {
    prog: &'a Program,
    consts: &'a [u8],
    mem: &'a mut dyn Memory,
    group: [u32; 3],
    steps: u64,
    max_steps: u64,
    lane_instrs: u64,
    /// Highest full / half regid the program can touch (see [`reg_span`]).
    span: (u8, u8),
}

/// A conservative bound on the full and half regids a program reads or writes: the highest
/// register operand plus the instruction's extent ((rptN), vector size, address pairs), or
/// everything when it uses relative addressing; the preloaded id registers included.
fn reg_span(prog: &Program) -> (u8, u8) {
    let mut hi = 0usize;
    let mut bump = |r: Reg, extent: usize| hi = hi.max(r.0 as usize + extent);
    let m = prog.meta;
    for r in [m.wgid, m.lid] {
        if r != 0xfc {
            bump(Reg(r), 3);
        }
    }
    let rel = |o: &Operand| matches!(o.src, Src::RelReg(_));
    let mut all = false;
    for i in &prog.instrs {
        let e = i.flags.repeat as usize + 1;
        let mut op = |o: &Operand| {
            if let Src::Reg { reg, .. } = o.src {
                bump(reg, e);
            }
        };
        match &i.body {
            Body::Cat1(c) => {
                all |= rel(&c.src) || matches!(c.dst, Dst::Rel(_));
                op(&c.src);
                if let Dst::Reg(r) = c.dst {
                    bump(r, e.max(4));
                }
                for r in c.extra {
                    bump(r, 4);
                }
            }
            Body::Cat2(c) => {
                all |= rel(&c.src1) || c.src2.as_ref().is_some_and(rel);
                op(&c.src1);
                if let Some(s) = &c.src2 {
                    op(s);
                }
                bump(c.dst, e);
            }
            Body::Cat3(c) => {
                all |= c.srcs.iter().any(rel);
                c.srcs.iter().for_each(&mut op);
                bump(c.dst, e);
            }
            Body::Cat4(c) => {
                all |= rel(&c.src);
                op(&c.src);
                bump(c.dst, e);
            }
            Body::Cat6(c) => {
                let (a, b, n) = match *c {
                    Cat6::Ldg { dst, addr, size, .. } | Cat6::Ld { dst, addr, size, .. } => (dst, addr, size as usize),
                    Cat6::LdgA { dst, addr, index, size, .. } => {
                        bump(index, 1);
                        (dst, addr, size as usize)
                    }
                    Cat6::Stg { addr, src, size, .. } | Cat6::St { addr, src, size, .. } => (src, addr, size as usize),
                    Cat6::StgA { addr, index, src, size, .. } => {
                        bump(index, 1);
                        (src, addr, size as usize)
                    }
                    Cat6::AtomicL { dst, src1, src2, .. } | Cat6::AtomicG { dst, src1, src2, .. } => {
                        for s in [src1, src2] {
                            if let Cat6Src::Reg(r) = s {
                                bump(r, 2);
                            }
                        }
                        (dst, dst, 1)
                    }
                    Cat6::Shfl { dst, src1, src2, .. } => {
                        if let Cat6Src::Reg(r) = src2 {
                            bump(r, 1);
                        }
                        (dst, src1, 1)
                    }
                    Cat6::GetId { dst, .. } => (dst, dst, 1),
                };
                bump(a, n.max(1));
                bump(b, 2);
            }
            _ => {}
        }
    }
    if all || hi > 255 {
        return (255, 255);
    }
    // Half regid h lives in full regid h/2 when merged; the separate half file is indexed by
    // the same 8-bit numbers, so one bound serves both.
    (hi as u8, hi as u8)
}

type Res<T> = Result<T, ExecError>;

#[inline]
fn ftz(x: f32) -> f32 {
    if x.is_subnormal() { f32::from_bits(x.to_bits() & 0x8000_0000) } else { x }
}

fn lanes_of(mask: u64) -> impl Iterator<Item = usize> {
    let mut m = mask;
    core::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

impl Interp {
    pub fn new() -> Interp {
        Interp { waves: Vec::new(), shared: Vec::new(), private: Vec::new(), max_steps: 100_000_000 }
    }

    /// Run every work-group of the dispatch in order.
    pub fn run(&mut self, prog: &Program, d: &Dispatch, mem: &mut dyn Memory) -> Result<Stats, ExecError> {
        let threads = d.local.iter().try_fold(1u64, |a, &v| a.checked_mul(v as u64)).unwrap_or(u64::MAX);
        if threads == 0 || d.grid.contains(&0) {
            return Err(ExecError::BadDispatch("empty grid or work-group"));
        }
        if threads > 1024 {
            return Err(ExecError::BadDispatch("work-group larger than 1024 fibers"));
        }
        if prog.meta.shmem > 64 * 1024 || prog.meta.pvtmem > 64 * 1024 {
            return Err(ExecError::BadDispatch("shared or private memory size above 64 KiB"));
        }
        let nwaves = (threads as usize).div_ceil(W);
        while self.waves.len() < nwaves {
            self.waves.push(Wave::new());
        }
        self.shared.resize(prog.meta.shmem as usize, 0);
        self.private.resize(prog.meta.pvtmem as usize * nwaves * W, 0);
        let mut cx = Ctx {
            prog,
            consts: d.consts,
            mem,
            group: [0; 3],
            steps: 0,
            max_steps: self.max_steps,
            lane_instrs: 0,
            span: reg_span(prog),
        };
        for gz in 0..d.grid[2] {
            for gy in 0..d.grid[1] {
                for gx in 0..d.grid[0] {
                    cx.group = [gx, gy, gz];
                    self.run_group(&mut cx, d, threads as usize, nwaves)?;
                }
            }
        }
        Ok(Stats { steps: cx.steps, lane_instructions: cx.lane_instrs })
    }

    fn run_group(&mut self, cx: &mut Ctx, d: &Dispatch, threads: usize, nwaves: usize) -> Res<()> {
        self.shared.fill(0);
        self.private.fill(0);
        let [lx, ly, _] = d.local;
        for (w, wave) in self.waves[..nwaves].iter_mut().enumerate() {
            let n = (threads - w * W).min(W);
            let mask = if n == W { u64::MAX } else { (1u64 << n) - 1 };
            // Zero what the program can touch (every group starts from the same state).
            for r in wave.regs[..=cx.span.0 as usize].iter_mut().chain(wave.hregs[..=cx.span.1 as usize].iter_mut()) {
                *r = [0; W];
            }
            for r in wave.regs[0xf4..].iter_mut() {
                *r = [0; W];
            }
            let m = cx.prog.meta;
            wave.merged = m.merged_regs;
            if m.lid != 0xfc {
                for l in 0..n {
                    let i = (w * W + l) as u32;
                    let id = [i % lx, (i / lx) % ly, i / (lx * ly)];
                    for (c, v) in id.iter().enumerate() {
                        wave.regs[(m.lid as usize + c) & 0xff][l] = *v;
                    }
                }
            }
            if m.wgid != 0xfc {
                for c in 0..3 {
                    wave.regs[(m.wgid as usize + c) & 0xff] = [cx.group[c]; W];
                }
            }
            wave.pc = 0;
            wave.mask = mask;
            wave.parked.clear();
            wave.state = State::Run;
            wave.pred = Pred::None;
            wave.pred_mask = 0;
        }
        loop {
            for w in 0..nwaves {
                if self.waves[w].state == State::Run {
                    self.run_wave(cx, w)?;
                }
            }
            // Every wave is done or waits at a barrier: release the barrier, or finish.
            let mut waiting = false;
            for wave in self.waves[..nwaves].iter_mut().filter(|w| w.state == State::Barrier) {
                wave.state = State::Run;
                wave.pc += 1;
                waiting = true;
            }
            if !waiting {
                return Ok(());
            }
        }
    }

    fn run_wave(&mut self, cx: &mut Ctx, w: usize) -> Res<()> {
        let n = cx.prog.instrs.len();
        let Interp { waves, shared, private, .. } = self;
        let wave = &mut waves[w];
        let pvt = cx.prog.meta.pvtmem as usize;
        let private = &mut private[w * W * pvt..(w + 1) * W * pvt];
        loop {
            // Schedule the lowest pc; merge groups that meet.
            if let Some(&(ppc, pmask)) = wave.parked.last() {
                if wave.mask == 0 || ppc < wave.pc {
                    wave.parked.pop();
                    let (cpc, cmask) = (wave.pc, wave.mask);
                    wave.park(cpc, cmask);
                    wave.pc = ppc;
                    wave.mask = pmask;
                    continue;
                } else if ppc == wave.pc {
                    wave.parked.pop();
                    wave.mask |= pmask;
                    continue;
                }
            }
            if wave.mask == 0 {
                wave.state = State::Done;
                return Ok(());
            }
            let pc = wave.pc as usize;
            if pc >= n {
                return Err(ExecError::PcOutOfRange { from: pc.saturating_sub(1), pc: pc as i64 });
            }
            cx.steps += 1;
            if cx.steps > cx.max_steps {
                return Err(ExecError::StepLimit { steps: cx.steps - 1 });
            }
            let ins = cx.prog.instrs[pc];
            let exec = wave.mask
                & match wave.pred {
                    Pred::None => u64::MAX,
                    Pred::True => wave.pred_mask,
                    Pred::False => !wave.pred_mask,
                };
            cx.lane_instrs += exec.count_ones() as u64 * (ins.flags.repeat as u64 + 1);
            let next = pc as u32 + 1;
            match &ins.body {
                Body::Cat0(c) => {
                    if cx_cat0(cx, wave, c, pc, exec)? {
                        return Ok(());
                    }
                    continue;
                }
                Body::Cat1(c) => cat1(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat2(c) => cat2(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat3(c) => cat3(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat4(c) => cat4(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat6(c) => cat6(cx, wave, c, pc, exec, w, shared, private)?,
                Body::Cat7(c) => {
                    if c.op == Cat7Op::Bar {
                        wave.state = State::Barrier;
                        return Ok(());
                    }
                }
                Body::Unsupported(name) => return Err(ExecError::Unsupported { index: pc, name }),
            }
            wave.pc = next;
        }
    }
}

fn unsupported(pc: usize, name: &'static str) -> ExecError {
    ExecError::Unsupported { index: pc, name }
}

/// Control flow. Returns true when the wave must yield (barrier never happens here; `end` of
/// the last group is handled by the scheduler).
fn cx_cat0(_cx: &mut Ctx, wave: &mut Wave, c: &Cat0, pc: usize, exec: u64) -> Res<bool> {
    use Cat0Op::*;
    let n = _cx.prog.instrs.len() as i64;
    let target = pc as i64 + c.immed as i64;
    let check =
        |t: i64| if (0..n).contains(&t) { Ok(t as u32) } else { Err(ExecError::PcOutOfRange { from: pc, pc: t }) };
    let p = |wave: &Wave, inv: bool, comp: u8| -> u64 {
        let r = &wave.regs[0xf8 + comp as usize];
        let mut m = 0u64;
        for (l, v) in r.iter().enumerate() {
            m |= ((*v != 0) as u64) << l;
        }
        if inv { !m } else { m }
    };
    let next = pc as u32 + 1;
    let branch = |wave: &mut Wave, taken: u64| -> Res<()> {
        let taken = taken & wave.mask;
        if taken == 0 {
            wave.pc = next;
        } else {
            let t = check(target)?;
            if taken == wave.mask {
                wave.pc = t;
            } else {
                let rest = wave.mask & !taken;
                wave.park(t, taken);
                wave.mask = rest;
                wave.pc = next;
            }
        }
        Ok(())
    };
    match c.op {
        Nop => wave.pc = next,
        End => {
            wave.mask = 0;
            wave.pc = next;
        }
        Kill => {
            let k = p(wave, c.inv1, c.comp1) & exec;
            wave.mask &= !k;
            wave.pc = next;
        }
        Predt | Predf => {
            wave.pred_mask = p(wave, false, 0);
            wave.pred = if c.op == Predt { Pred::True } else { Pred::False };
            wave.pc = next;
        }
        Prede => {
            wave.pred = Pred::None;
            wave.pc = next;
        }
        Jump => branch(wave, u64::MAX)?,
        Br => branch(wave, p(wave, c.inv1, c.comp1))?,
        Brao => branch(wave, p(wave, c.inv1, c.comp1) | p(wave, c.inv2, c.comp2))?,
        Braa => branch(wave, p(wave, c.inv1, c.comp1) & p(wave, c.inv2, c.comp2))?,
        Bany => {
            let any = p(wave, c.inv1, c.comp1) & exec != 0;
            branch(wave, if any { u64::MAX } else { 0 })?
        }
        Ball => {
            let all = p(wave, c.inv1, c.comp1) & exec == exec;
            branch(wave, if all { u64::MAX } else { 0 })?
        }
        Getone => {
            // The lowest active fiber takes the branch; the others fall through.
            let one = if exec == 0 { 0 } else { 1u64 << exec.trailing_zeros() };
            branch(wave, one)?
        }
        Getlast => {
            // XML ir3-cat0.xml `getlast`: jump for the fibers of the first cluster of 8 with any
            // active fiber, except the last active fiber of that cluster.
            let mut taken = 0;
            if exec != 0 {
                let cl = exec.trailing_zeros() / 8;
                let m = exec & (0xffu64 << (cl * 8));
                let last = 1u64 << (63 - m.leading_zeros());
                taken = m & !last;
            }
            branch(wave, taken)?
        }
        op => return Err(unsupported(pc, op.name())),
    }
    Ok(false)
}

// ---------------------------------------------------------------------------------------------
// Register and operand access

#[inline]
fn write_lanes(dst: &mut Lanes, val: &Lanes, exec: u64) {
    if exec == u64::MAX {
        *dst = *val;
    } else if exec & exec.wrapping_add(1) == 0 {
        // lanes 0..n
        let n = active_len(exec);
        dst[..n].copy_from_slice(&val[..n]);
    } else {
        for l in lanes_of(exec) {
            dst[l] = val[l];
        }
    }
}

#[inline]
fn write_half(dst: &mut Lanes, val: &Lanes, exec: u64, hi: bool) {
    let sh = if hi { 16 } else { 0 };
    let keep = !(0xffffu32 << sh);
    if exec == u64::MAX {
        for l in 0..W {
            dst[l] = (dst[l] & keep) | ((val[l] & 0xffff) << sh);
        }
    } else {
        for l in lanes_of(exec) {
            dst[l] = (dst[l] & keep) | ((val[l] & 0xffff) << sh);
        }
    }
}

/// Write a register (full: regid; half: half regid) for the exec lanes.
#[inline]
fn write_reg(wave: &mut Wave, reg: u8, half: bool, val: &Lanes, exec: u64) {
    if half && !wave.merged {
        write_half(&mut wave.hregs[reg as usize], val, exec, false);
    } else if half {
        write_half(&mut wave.regs[(reg >> 1) as usize], val, exec, reg & 1 != 0);
    } else {
        write_lanes(&mut wave.regs[reg as usize], val, exec);
    }
}

#[inline]
fn read_reg(wave: &Wave, reg: u8, half: bool, out: &mut Lanes) {
    if half && !wave.merged {
        let r = &wave.hregs[reg as usize];
        for l in 0..W {
            out[l] = r[l] & 0xffff;
        }
    } else if half {
        let r = &wave.regs[(reg >> 1) as usize];
        let sh = (reg & 1) * 16;
        for l in 0..W {
            out[l] = (r[l] >> sh) & 0xffff;
        }
    } else {
        *out = wave.regs[reg as usize];
    }
}

fn const_word(cx: &Ctx, word: u32, pc: usize) -> Res<u32> {
    let o = word as usize * 4;
    match cx.consts.get(o..o + 4) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(ExecError::ConstOutOfRange { index: pc, word }),
    }
}

/// Read a source operand (without modifiers) for all lanes: 32-bit values, or 16-bit values in
/// the low bits for half operands. `k` is the (rpt) iteration.
#[allow(clippy::too_many_arguments)]
fn read_src(cx: &Ctx, wave: &Wave, o: &Operand, k: u8, pc: usize, exec: u64, float: bool, out: &mut Lanes) -> Res<()> {
    let k = if o.r { k } else { 0 };
    match o.src {
        Src::Reg { reg, .. } => read_reg(wave, reg.0.wrapping_add(k), o.half, out),
        Src::Const(n) => {
            let n = n as u32 + k as u32;
            let v = if o.half && cx.prog.meta.const_demotion {
                let w = const_word(cx, n, pc)?;
                if float { f32_to_f16(f32::from_bits(w)) as u32 } else { w & 0xffff }
            } else if o.half {
                let w = const_word(cx, n >> 1, pc)?;
                (w >> ((n & 1) * 16)) & 0xffff
            } else {
                const_word(cx, n, pc)?
            };
            *out = [v; W];
        }
        Src::Imm(v) => *out = [if o.half { v as u32 & 0xffff } else { v as u32 }; W],
        Src::Imm32(v) => *out = [v; W],
        Src::Flut(i) => {
            let f = FLUT[i as usize % 12];
            *out = [if o.half { f32_to_f16(f) as u32 } else { f.to_bits() }; W];
        }
        Src::RelReg(off) | Src::RelConst(off) => {
            let a0 = &wave.regs[0xf4];
            for l in lanes_of(exec) {
                let idx = a0[l] as i32 as i16 as i64 + off as i64 + k as i64;
                let v = match o.src {
                    Src::RelReg(_) => {
                        if !(0..256).contains(&idx) {
                            return Err(ExecError::Relative { index: pc, lane: l as u32, value: idx });
                        }
                        let r = idx as usize;
                        if o.half { wave.hget(r as u8, l) } else { wave.regs[r][l] }
                    }
                    _ => {
                        if !(0..2048).contains(&idx) {
                            return Err(ExecError::Relative { index: pc, lane: l as u32, value: idx });
                        }
                        const_word(cx, idx as u32, pc)?
                    }
                };
                out[l] = v;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// cat1

fn cvt(v: u32, from: Type, to: Type, round: u8) -> u32 {
    // Read the source as a number.
    enum N {
        F(f32),
        I(i64),
    }
    let n = match from {
        Type::F16 => N::F(f16_to_f32(v as u16)),
        Type::F32 => N::F(f32::from_bits(v)),
        Type::U16 => N::I((v & 0xffff) as i64),
        Type::U32 => N::I(v as i64),
        Type::S16 => N::I(v as u16 as i16 as i64),
        Type::S32 => N::I(v as i32 as i64),
        Type::U8 => N::I((v & 0xff) as i64),
        // s8 in later Mesa; the XML's u8_32 is an 8-bit value: read it signed.
        Type::U8_32 => N::I(v as u8 as i8 as i64),
    };
    let rnd = |f: f32| -> f32 {
        match round {
            1 => libm::rintf(f),
            2 => libm::ceilf(f),
            3 => libm::floorf(f),
            _ => libm::truncf(f),
        }
    };
    match to {
        Type::F16 => match n {
            N::F(f) => f32_to_f16(f) as u32,
            N::I(i) => f32_to_f16(i as f32) as u32,
        },
        Type::F32 => match n {
            N::F(f) => f.to_bits(),
            N::I(i) => (i as f32).to_bits(),
        },
        _ => {
            let i: i64 = match n {
                N::F(f) => {
                    let r = rnd(f);
                    let (lo, hi) = match to {
                        Type::U16 => (0, 0xffff),
                        Type::S16 => (-0x8000, 0x7fff),
                        Type::U32 => (0, u32::MAX as i64),
                        Type::S32 => (i32::MIN as i64, i32::MAX as i64),
                        Type::U8 => (0, 0xff),
                        _ => (-0x80, 0x7f),
                    };
                    if r.is_nan() { 0 } else { (r as i64).clamp(lo, hi) }
                }
                N::I(i) => i,
            };
            match to {
                Type::U16 | Type::S16 => i as u32 & 0xffff,
                Type::U8 | Type::U8_32 => i as u32 & 0xff,
                _ => i as u32,
            }
        }
    }
}

fn cat1_dst_half(t: Type) -> bool {
    t.is_half() || t == Type::U8_32
}

fn cat1(cx: &mut Ctx, wave: &mut Wave, c: &Cat1, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    let mut v = [0u32; W];
    match c.op {
        Cat1Op::Mov | Cat1Op::Mova | Cat1Op::Mova1 => {
            for k in 0..=fl.repeat {
                let mut src = c.src;
                if matches!(src.src, Src::Imm32(_)) {
                    src.r = false; // (r) on an immediate is a mova hazard marker
                }
                read_src(cx, wave, &src, k, pc, exec, c.src_type == Type::F16, &mut v)?;
                if c.src_type != c.dst_type {
                    for x in v.iter_mut() {
                        *x = cvt(*x, c.src_type, c.dst_type, c.round);
                    }
                }
                match (c.op, c.dst) {
                    (Cat1Op::Mova, _) | (Cat1Op::Mova1, _) => {
                        let r = if c.op == Cat1Op::Mova { 0xf4 } else { 0xf5 };
                        for x in v.iter_mut() {
                            *x = *x as u16 as i16 as i32 as u32;
                        }
                        write_lanes(&mut wave.regs[r], &v, exec);
                    }
                    (_, Dst::Reg(r)) => write_reg(wave, r.0.wrapping_add(k), cat1_dst_half(c.dst_type), &v, exec),
                    (_, Dst::Rel(off)) => {
                        let half = cat1_dst_half(c.dst_type);
                        for l in lanes_of(exec) {
                            let idx = wave.regs[0xf4][l] as i32 as i16 as i64 + off as i64 + k as i64;
                            if !(0..256).contains(&idx) {
                                return Err(ExecError::Relative { index: pc, lane: l as u32, value: idx });
                            }
                            let i = idx as usize;
                            if half {
                                wave.hset(i as u8, l, v[l]);
                            } else {
                                wave.regs[i][l] = v[l];
                            }
                        }
                    }
                }
            }
        }
        Cat1Op::Swz | Cat1Op::Gat | Cat1Op::Sct => {
            let sh = cat1_dst_half(c.src_type);
            let dh = cat1_dst_half(c.dst_type);
            let Src::Reg { reg: s0, .. } = c.src.src else { return Ok(()) };
            let Dst::Reg(d0) = c.dst else { return Ok(()) };
            let (srcs, dsts): ([Reg; 4], [Reg; 4]) = match c.op {
                Cat1Op::Swz => ([s0, c.extra[0], s0, s0], [d0, c.extra[1], d0, d0]),
                Cat1Op::Gat => {
                    ([s0, c.extra[0], c.extra[1], c.extra[2]], [d0, d0.offset(1), d0.offset(2), d0.offset(3)])
                }
                _ => ([s0, s0.offset(1), s0.offset(2), s0.offset(3)], [d0, c.extra[0], c.extra[1], c.extra[2]]),
            };
            let n = if c.op == Cat1Op::Swz { 2 } else { 4 };
            let mut vals = [[0u32; W]; 4];
            for i in 0..n {
                read_reg(wave, srcs[i].0, sh, &mut vals[i]);
                if c.src_type != c.dst_type {
                    for x in vals[i].iter_mut() {
                        *x = cvt(*x, c.src_type, c.dst_type, c.round);
                    }
                }
            }
            for i in 0..n {
                write_reg(wave, dsts[i].0, dh, &vals[i], exec);
            }
        }
        Cat1Op::Movmsk => {
            let Dst::Reg(d) = c.dst else { return Err(unsupported(pc, "movmsk with a relative destination")) };
            for k in 0..=fl.repeat {
                let part = if k < 2 { (exec >> (32 * k)) as u32 } else { 0 };
                write_reg(wave, d.0.wrapping_add(k), false, &[part; W], exec);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// cat2

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Float,
    Int,
    Bits,
}

fn cat2_kind(op: Cat2Op) -> Kind {
    use Cat2Op::*;
    match op {
        AddF | MinF | MaxF | MulF | SignF | CmpsF | AbsnegF | FloorF | CeilF | RndneF | RndazF | TruncF => Kind::Float,
        AndB | OrB | NotB | XorB | BfrevB | ClzB | ShlB | ShrB | AshrB | CbitsB | GetbitB => Kind::Bits,
        _ => Kind::Int,
    }
}

/// Read an operand and apply (neg)/(abs) for its kind; floats come back as f32 bits, integers
/// sign- or zero-extended from 16 bits for half operands.
#[allow(clippy::too_many_arguments)]
fn operand(
    cx: &Ctx,
    wave: &Wave,
    o: &Operand,
    k: u8,
    pc: usize,
    exec: u64,
    kind: Kind,
    signed: bool,
    out: &mut Lanes,
) -> Res<()> {
    read_src(cx, wave, o, k, pc, exec, kind == Kind::Float, out)?;
    // Lanes above the highest active one are never stored: skip them.
    let out = &mut out[..active_len(exec)];
    match kind {
        Kind::Float => {
            for x in out.iter_mut() {
                let mut f = if o.half { f16_to_f32(*x as u16) } else { f32::from_bits(*x) };
                f = ftz(f);
                if o.abs {
                    f = f.abs();
                }
                if o.neg {
                    f = -f;
                }
                *x = f.to_bits();
            }
        }
        Kind::Int => {
            if o.half {
                for x in out.iter_mut() {
                    *x = if signed { *x as u16 as i16 as i32 as u32 } else { *x & 0xffff };
                }
            }
            if o.abs {
                for x in out.iter_mut() {
                    *x = (*x as i32).unsigned_abs();
                }
            }
            if o.neg {
                for x in out.iter_mut() {
                    *x = x.wrapping_neg();
                }
            }
        }
        Kind::Bits => {
            if o.neg {
                for x in out.iter_mut() {
                    *x = !*x;
                }
            }
        }
    }
    Ok(())
}

/// One past the highest active lane.
#[inline]
fn active_len(exec: u64) -> usize {
    W - exec.leading_zeros() as usize
}

#[inline]
fn map1(a: &mut [u32], f: impl Fn(u32) -> u32) {
    for x in a.iter_mut() {
        *x = f(*x);
    }
}

#[inline]
fn map2(a: &mut [u32], b: &[u32], f: impl Fn(u32, u32) -> u32) {
    for (x, y) in a.iter_mut().zip(b.iter()) {
        *x = f(*x, *y);
    }
}

#[inline]
fn ff(f: impl Fn(f32, f32) -> f32) -> impl Fn(u32, u32) -> u32 {
    move |a, b| ftz(f(f32::from_bits(a), f32::from_bits(b))).to_bits()
}

fn cmp<T: PartialOrd>(c: Cond, a: T, b: T) -> u32 {
    (match c {
        Cond::Lt => a < b,
        Cond::Le => a <= b,
        Cond::Gt => a > b,
        Cond::Ge => a >= b,
        Cond::Eq => a == b,
        Cond::Ne => a != b,
    }) as u32
}

/// Store an ALU result: floats (f32 bits) are rounded to f16 for half destinations, integers
/// truncated; (sat) clamps float results to [0, 1].
fn store(wave: &mut Wave, dst: Reg, half: bool, float: bool, sat: bool, v: &mut Lanes, exec: u64) {
    let n = active_len(exec);
    if float && sat {
        map1(&mut v[..n], |x| f32::from_bits(x).clamp(0.0, 1.0).to_bits());
    }
    if half && float {
        map1(&mut v[..n], |x| f32_to_f16(f32::from_bits(x)) as u32);
    }
    // p0 and a0 destinations are never half.
    let half = half && dst.0 < 0xf4;
    write_reg(wave, dst.0, half, v, exec);
}

fn cat2(cx: &mut Ctx, wave: &mut Wave, c: &Cat2, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    use Cat2Op::*;
    let kind = cat2_kind(c.op);
    let signed = matches!(c.op, AddS | SubS | CmpsS | MinS | MaxS | AbsnegS | MulS24 | ClzS | AshrB);
    let mut a = [0u32; W];
    let mut b = [0u32; W];
    let n = active_len(exec);
    for k in 0..=fl.repeat {
        operand(cx, wave, &c.src1, k, pc, exec, kind, signed, &mut a)?;
        if let Some(s2) = &c.src2 {
            operand(cx, wave, s2, k, pc, exec, kind, signed, &mut b)?;
        }
        let mut float_result = kind == Kind::Float;
        match c.op {
            AddF => map2(&mut a[..n], &b[..n], ff(|x, y| x + y)),
            MulF => map2(&mut a[..n], &b[..n], ff(|x, y| x * y)),
            MinF => map2(&mut a[..n], &b[..n], ff(f32::min)),
            MaxF => map2(&mut a[..n], &b[..n], ff(f32::max)),
            SignF => map1(&mut a[..n], |x| {
                let f = f32::from_bits(x);
                (if f > 0.0 {
                    1.0f32
                } else if f < 0.0 {
                    -1.0
                } else {
                    f
                })
                .to_bits()
            }),
            AbsnegF => {}
            FloorF => map1(&mut a[..n], |x| libm::floorf(f32::from_bits(x)).to_bits()),
            CeilF => map1(&mut a[..n], |x| libm::ceilf(f32::from_bits(x)).to_bits()),
            RndneF => map1(&mut a[..n], |x| libm::rintf(f32::from_bits(x)).to_bits()),
            RndazF => map1(&mut a[..n], |x| libm::roundf(f32::from_bits(x)).to_bits()),
            TruncF => map1(&mut a[..n], |x| libm::truncf(f32::from_bits(x)).to_bits()),
            CmpsF => {
                let cond = c.cond.unwrap_or(Cond::Eq);
                map2(&mut a[..n], &b[..n], |x, y| cmp(cond, f32::from_bits(x), f32::from_bits(y)));
                float_result = false;
            }
            AddU | AddS => {
                if fl.ei {
                    // (ei): halving add (NIR uhadd / ihadd).
                    if signed {
                        map2(&mut a[..n], &b[..n], |x, y| ((x as i32 as i64 + y as i32 as i64) >> 1) as u32)
                    } else {
                        map2(&mut a[..n], &b[..n], |x, y| ((x as u64 + y as u64) >> 1) as u32)
                    }
                } else {
                    map2(&mut a[..n], &b[..n], u32::wrapping_add)
                }
            }
            SubU | SubS => map2(&mut a[..n], &b[..n], u32::wrapping_sub),
            CmpsU => {
                let cond = c.cond.unwrap_or(Cond::Eq);
                map2(&mut a[..n], &b[..n], |x, y| cmp(cond, x, y))
            }
            CmpsS => {
                let cond = c.cond.unwrap_or(Cond::Eq);
                map2(&mut a[..n], &b[..n], |x, y| cmp(cond, x as i32, y as i32))
            }
            MinU => map2(&mut a[..n], &b[..n], u32::min),
            MaxU => map2(&mut a[..n], &b[..n], u32::max),
            MinS => map2(&mut a[..n], &b[..n], |x, y| (x as i32).min(y as i32) as u32),
            MaxS => map2(&mut a[..n], &b[..n], |x, y| (x as i32).max(y as i32) as u32),
            AbsnegS => {}
            AndB => map2(&mut a[..n], &b[..n], |x, y| x & y),
            OrB => map2(&mut a[..n], &b[..n], |x, y| x | y),
            XorB => map2(&mut a[..n], &b[..n], |x, y| x ^ y),
            NotB => map1(&mut a[..n], |x| !x),
            MulU24 => map2(&mut a[..n], &b[..n], |x, y| (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff)),
            MulS24 => {
                map2(&mut a[..n], &b[..n], |x, y| (((x << 8) as i32) >> 8).wrapping_mul(((y << 8) as i32) >> 8) as u32)
            }
            MullU => map2(&mut a[..n], &b[..n], |x, y| (x & 0xffff) * (y & 0xffff)),
            BfrevB => map1(&mut a[..n], u32::reverse_bits),
            ClzB => map1(&mut a[..n], u32::leading_zeros),
            ClzS => map1(&mut a[..n], |x| {
                let v = x as i32;
                if v < 0 { (!x).leading_zeros() } else { x.leading_zeros() }
            }),
            ShlB => map2(&mut a[..n], &b[..n], |x, y| x.wrapping_shl(y & 31)),
            ShrB => map2(&mut a[..n], &b[..n], |x, y| x.wrapping_shr(y & 31)),
            AshrB => map2(&mut a[..n], &b[..n], |x, y| (x as i32).wrapping_shr(y & 31) as u32),
            CbitsB => map1(&mut a[..n], u32::count_ones),
            GetbitB => map2(&mut a[..n], &b[..n], |x, y| (x >> (y & 31)) & 1),
            op => return Err(unsupported(pc, op.name())),
        }
        store(wave, c.dst.offset(k), c.dst_half, float_result, fl.sat, &mut a, exec);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// cat3

fn cat3(cx: &mut Ctx, wave: &mut Wave, c: &Cat3, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    use Cat3Op::*;
    let (kind, signed) = match c.op {
        MadF16 | MadF32 => (Kind::Float, false),
        MadS16 | MadS24 => (Kind::Int, true),
        MadU16 | MadU24 | MadshM16 => (Kind::Int, false),
        SelB16 | SelB32 | Shrm | Shlm | Shrg | Shlg | Andg => (Kind::Bits, false),
        op => return Err(unsupported(pc, op.name())),
    };
    let mut a = [0u32; W];
    let mut b = [0u32; W];
    let mut d = [0u32; W];
    let n = active_len(exec);
    for k in 0..=fl.repeat {
        operand(cx, wave, &c.srcs[0], k, pc, exec, kind, signed, &mut a)?;
        operand(cx, wave, &c.srcs[1], k, pc, exec, kind, signed, &mut b)?;
        operand(cx, wave, &c.srcs[2], k, pc, exec, kind, signed, &mut d)?;
        match c.op {
            MadF16 | MadF32 => {
                for l in 0..n {
                    let p = ftz(f32::from_bits(a[l]) * f32::from_bits(b[l]));
                    a[l] = ftz(p + f32::from_bits(d[l])).to_bits();
                }
            }
            MadU16 | MadS16 => {
                for l in 0..n {
                    a[l] = a[l].wrapping_mul(b[l]).wrapping_add(d[l]);
                }
            }
            MadU24 => {
                for l in 0..n {
                    a[l] = (a[l] & 0xff_ffff).wrapping_mul(b[l] & 0xff_ffff).wrapping_add(d[l]);
                }
            }
            MadS24 => {
                for l in 0..n {
                    let x = ((a[l] << 8) as i32) >> 8;
                    let y = ((b[l] << 8) as i32) >> 8;
                    a[l] = x.wrapping_mul(y).wrapping_add(d[l] as i32) as u32;
                }
            }
            MadshM16 => {
                // NIR imadsh_mix16: ((src1 & 0xffff) · (src2 >> 16)) << 16 + src3.
                for l in 0..n {
                    a[l] = ((a[l] & 0xffff).wrapping_mul(b[l] >> 16) << 16).wrapping_add(d[l]);
                }
            }
            SelB16 | SelB32 => {
                // sel.b32 d, a, c, b = c != 0 ? a : b (src2 is the condition).
                let m = if c.op == SelB16 { 0xffff } else { u32::MAX };
                for l in 0..n {
                    a[l] = if b[l] & m != 0 { a[l] } else { d[l] };
                }
            }
            Shrm => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shr(a[l] & 31) & d[l];
                }
            }
            Shlm => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shl(a[l] & 31) & d[l];
                }
            }
            Shrg => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shr(a[l] & 31) | d[l];
                }
            }
            Shlg => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shl(a[l] & 31) | d[l];
                }
            }
            Andg => {
                for l in 0..n {
                    a[l] = (b[l] & a[l]) | d[l];
                }
            }
            // The opcodes refused above.
            op => return Err(unsupported(pc, op.name())),
        }
        store(wave, c.dst.offset(k), c.dst_half, kind == Kind::Float, fl.sat, &mut a, exec);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// cat4

fn cat4(cx: &mut Ctx, wave: &mut Wave, c: &Cat4, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    use Cat4Op::*;
    let mut a = [0u32; W];
    for k in 0..=fl.repeat {
        operand(cx, wave, &c.src, k, pc, exec, Kind::Float, false, &mut a)?;
        let f: fn(f64) -> f64 = match c.op {
            Rcp => |x| 1.0 / x,
            Rsq | Hrsq => |x| 1.0 / libm::sqrt(x),
            Log2 | Hlog2 => libm::log2,
            Exp2 | Hexp2 => libm::exp2,
            Sin => libm::sin,
            Cos => libm::cos,
            Sqrt => libm::sqrt,
        };
        map1(&mut a[..active_len(exec)], |x| ftz(f(f32::from_bits(x) as f64) as f32).to_bits());
        store(wave, c.dst.offset(k), c.dst_half, true, fl.sat, &mut a, exec);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// cat6

fn load_elem(bytes: &[u8], ty: Type) -> u32 {
    match ty.mem_bytes() {
        1 => bytes[0] as u32,
        2 => u16::from_le_bytes([bytes[0], bytes[1]]) as u32,
        _ => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
    }
}

fn atomic(op: AtomicOp, ty: Type, old: u32, v: u32, cmp: u32) -> u32 {
    let signed = matches!(ty, Type::S32 | Type::S16);
    match op {
        AtomicOp::Add => old.wrapping_add(v),
        AtomicOp::Sub => old.wrapping_sub(v),
        AtomicOp::Xchg => v,
        AtomicOp::Inc => old.wrapping_add(1),
        AtomicOp::Dec => old.wrapping_sub(1),
        AtomicOp::Cmpxchg => {
            if old == cmp {
                v
            } else {
                old
            }
        }
        AtomicOp::Min if signed => (old as i32).min(v as i32) as u32,
        AtomicOp::Max if signed => (old as i32).max(v as i32) as u32,
        AtomicOp::Min => old.min(v),
        AtomicOp::Max => old.max(v),
        AtomicOp::And => old & v,
        AtomicOp::Or => old | v,
        AtomicOp::Xor => old ^ v,
    }
}

fn src6(wave: &Wave, s: Cat6Src, l: usize) -> u32 {
    match s {
        Cat6Src::Reg(r) => wave.regs[r.0 as usize][l],
        Cat6Src::Imm(v) => v as u32,
    }
}

#[allow(clippy::too_many_arguments)]
fn cat6(
    cx: &mut Ctx,
    wave: &mut Wave,
    c: &Cat6,
    pc: usize,
    exec: u64,
    w: usize,
    shared: &mut [u8],
    private: &mut [u8],
) -> Res<()> {
    let group = cx.group;
    let fault = |l: usize, addr: u64, space, write| ExecError::Fault {
        index: pc,
        group,
        lane: (w * W + l) as u32,
        addr,
        space,
        write,
    };
    let addr64 = |wave: &Wave, r: Reg, l: usize| -> u64 {
        wave.regs[r.0 as usize][l] as u64 | (wave.regs[r.offset(1).0 as usize][l] as u64) << 32
    };
    match *c {
        Cat6::Ldg { ty, dst, addr, off, size } | Cat6::Ld { ty, dst, addr, off, size, .. } => {
            let space = match c {
                Cat6::Ld { space: Space::Private, .. } => MemSpace::Private,
                Cat6::Ld { .. } => MemSpace::Shared,
                _ => MemSpace::Global,
            };
            let half = ty.is_half();
            let eb = ty.mem_bytes() as usize;
            let pvt = cx.prog.meta.pvtmem as usize;
            for l in lanes_of(exec) {
                let base = match space {
                    MemSpace::Global => addr64(wave, addr, l).wrapping_add(off as i64 as u64),
                    _ => (wave.regs[addr.0 as usize][l] as u64).wrapping_add(off as i64 as u64) & 0xffff_ffff,
                };
                for k in 0..size as usize {
                    let a = base.wrapping_add((k * eb) as u64);
                    let mut buf = [0u8; 4];
                    match space {
                        MemSpace::Global => cx.mem.read(a, &mut buf[..eb]).map_err(|_| fault(l, a, space, false))?,
                        MemSpace::Shared => {
                            let s = shared.get(a as usize..a as usize + eb).ok_or(fault(l, a, space, false))?;
                            buf[..eb].copy_from_slice(s);
                        }
                        MemSpace::Private => {
                            if a as usize + eb > pvt {
                                return Err(fault(l, a, space, false));
                            }
                            let o = l * pvt + a as usize;
                            buf[..eb].copy_from_slice(&private[o..o + eb]);
                        }
                    }
                    let v = load_elem(&buf, ty);
                    let r = dst.0.wrapping_add(k as u8);
                    if half {
                        wave.hset(r, l, v);
                    } else {
                        wave.regs[r as usize][l] = v;
                    }
                }
            }
        }
        Cat6::Stg { ty, addr, off, src, size } | Cat6::St { ty, addr, off, src, size, .. } => {
            let space = match c {
                Cat6::St { space: Space::Private, .. } => MemSpace::Private,
                Cat6::St { .. } => MemSpace::Shared,
                _ => MemSpace::Global,
            };
            let half = ty.is_half();
            let eb = ty.mem_bytes() as usize;
            let pvt = cx.prog.meta.pvtmem as usize;
            for l in lanes_of(exec) {
                let base = match space {
                    MemSpace::Global => addr64(wave, addr, l).wrapping_add(off as i64 as u64),
                    _ => (wave.regs[addr.0 as usize][l] as u64).wrapping_add(off as i64 as u64) & 0xffff_ffff,
                };
                for k in 0..size as usize {
                    let a = base.wrapping_add((k * eb) as u64);
                    let r = src.0.wrapping_add(k as u8);
                    let v = if half { wave.hget(r, l) } else { wave.regs[r as usize][l] };
                    let bytes = v.to_le_bytes();
                    match space {
                        MemSpace::Global => cx.mem.write(a, &bytes[..eb]).map_err(|_| fault(l, a, space, true))?,
                        MemSpace::Shared => {
                            let s = shared.get_mut(a as usize..a as usize + eb).ok_or(fault(l, a, space, true))?;
                            s.copy_from_slice(&bytes[..eb]);
                        }
                        MemSpace::Private => {
                            if a as usize + eb > pvt {
                                return Err(fault(l, a, space, true));
                            }
                            let o = l * pvt + a as usize;
                            private[o..o + eb].copy_from_slice(&bytes[..eb]);
                        }
                    }
                }
            }
        }
        Cat6::LdgA { .. } | Cat6::StgA { .. } => {
            // address = src1 pair + (src2 << (shift + 2)) + (off << 2) (XML ir3-cat6.xml ldg.a display).
            let (ty, addr, index, shift, off, reg, size, store) = match *c {
                Cat6::LdgA { ty, dst, addr, index, shift, off, size } => {
                    (ty, addr, index, shift, off, dst, size, false)
                }
                Cat6::StgA { ty, addr, index, shift, off, src, size } => (ty, addr, index, shift, off, src, size, true),
                // Only LdgA/StgA reach this arm.
                _ => return Err(unsupported(pc, "ldg.a/stg.a")),
            };
            let half = ty.is_half();
            let eb = ty.mem_bytes() as usize;
            for l in lanes_of(exec) {
                let idx = wave.regs[index.0 as usize][l] as u64;
                let base = addr64(wave, addr, l).wrapping_add(idx << (shift + 2)).wrapping_add((off as u64) << 2);
                for k in 0..size as usize {
                    let a = base.wrapping_add((k * eb) as u64);
                    let r = reg.0.wrapping_add(k as u8);
                    if store {
                        let v = if half { wave.hget(r, l) } else { wave.regs[r as usize][l] };
                        cx.mem.write(a, &v.to_le_bytes()[..eb]).map_err(|_| fault(l, a, MemSpace::Global, true))?;
                    } else {
                        let mut buf = [0u8; 4];
                        cx.mem.read(a, &mut buf[..eb]).map_err(|_| fault(l, a, MemSpace::Global, false))?;
                        let v = load_elem(&buf, ty);
                        if half {
                            wave.hset(r, l, v);
                        } else {
                            wave.regs[r as usize][l] = v;
                        }
                    }
                }
            }
        }
        Cat6::AtomicL { op, ty, dst, src1, src2, .. } | Cat6::AtomicG { op, ty, dst, src1, src2, .. } => {
            if ty.mem_bytes() != 4 {
                return Err(unsupported(pc, "16/8-bit atomics"));
            }
            let global = matches!(c, Cat6::AtomicG { .. });
            let space = if global { MemSpace::Global } else { MemSpace::Shared };
            for l in lanes_of(exec) {
                let a = if global {
                    match src1 {
                        Cat6Src::Reg(r) => addr64(wave, r, l),
                        Cat6Src::Imm(v) => v as u64,
                    }
                } else {
                    src6(wave, src1, l) as u64
                };
                let v = src6(wave, src2, l);
                // cmpxchg: src2 holds the new value, src2+1 the comparison (Mesa collects
                // (data, compare)).
                let cmpv = match src2 {
                    Cat6Src::Reg(r) => wave.regs[r.offset(1).0 as usize][l],
                    Cat6Src::Imm(_) => 0,
                };
                let mut buf = [0u8; 4];
                if global {
                    cx.mem.read(a, &mut buf).map_err(|_| fault(l, a, space, false))?;
                } else {
                    buf.copy_from_slice(shared.get(a as usize..a as usize + 4).ok_or(fault(l, a, space, false))?);
                }
                let old = u32::from_le_bytes(buf);
                let new = atomic(op, ty, old, v, cmpv).to_le_bytes();
                if global {
                    cx.mem.write(a, &new).map_err(|_| fault(l, a, space, true))?;
                } else {
                    shared[a as usize..a as usize + 4].copy_from_slice(&new);
                }
                wave.regs[dst.0 as usize][l] = old;
            }
        }
        Cat6::Shfl { mode, ty, dst, src1, src2 } => {
            let half = ty.is_half();
            let mut v = [0u32; W];
            read_reg(wave, src1.0, half, &mut v);
            let mut out = v;
            for l in lanes_of(exec) {
                let dl = src6(wave, src2, l) as i64;
                let li = l as i64;
                let from = match mode {
                    1 => li ^ dl,
                    2 => li - dl,
                    3 => li + dl,
                    6 => (li - dl).rem_euclid(W as i64),
                    _ => (li + dl).rem_euclid(W as i64),
                };
                if (0..W as i64).contains(&from) {
                    out[l] = v[from as usize];
                }
            }
            write_reg(wave, dst.0, half, &out, exec);
        }
        Cat6::GetId { which, dst, .. } => {
            let mut v = [0u32; W];
            for (l, x) in v.iter_mut().enumerate() {
                *x = match which {
                    GetId::Fiber => l as u32,
                    GetId::Wave => w as u32,
                    GetId::Sp => 0,
                };
            }
            write_reg(wave, dst.0, false, &v, exec);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(words: &[u64]) -> Program {
        let meta = Meta {
            fregs: 1,
            hregs: 0,
            wgid: 0xfc,
            lid: 0,
            shmem: 0,
            pvtmem: 0,
            merged_regs: false,
            const_demotion: false,
        };
        let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        Program::new(&image, meta).unwrap()
    }

    #[test]
    fn reg_span_covers_operands_repeats_and_vectors() {
        // lid preload r0.x..r0.z → 3; `(rpt3)add.f r4.x, (r)r3.x, (1.0)` writes r4.x..r4.w (regid 16..19).
        assert_eq!(reg_span(&prog(&[0x5010_0b10_2802_000c, 0x0300_0000_0000_0000])), (20, 20));
        // `ldl.u32 r9.y, l[r2.x], 4` writes regids 37..40.
        assert_eq!(reg_span(&prog(&[0xc046_0025_0482_0001])).0, 41);
        // cat1 mov with a relative source (`mov.u32u32 r0.x, r<a0.x>`): everything.
        assert_eq!(reg_span(&prog(&[0x200c_c000_0000_0800])), (255, 255));
    }
}
