//! A functional interpreter of a6xx compute dispatches.
//!
//! Model (facts from `shared/notes/adreno-ir3-isa.md`, the isaspec XML docs and Mesa's ir3):
//! - A work-group of `local[0]·local[1]·local[2]` fibers fills waves of 64 (THREAD64) in linear
//!   order `x + lx·(y + ly·z)`. Every wave executes its instructions for all its active lanes at
//!   once (wave-wide loops over 64 lanes). Work-groups of at most 32 fibers whose program never
//!   makes lanes meet (no barrier, shared memory, cross-lane op or wave id) share a wave, as many
//!   as fit ([`groups_per_wave`]): the same results and counts as one wave each, at a fraction of
//!   the per-instruction cost.
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
//! - Images (cat5 `isam`/`isaml`/`sam`, cat6 `ldib`/`stib`): see [`image`] — linear 2D images,
//!   nearest filtering, wrap modes per sampler, border color for clamp-to-border.
//! - Encodings whose semantics are not documented are refused with [`ExecError::Unsupported`]
//!   rather than guessed (other cat5 ops, bindless cat6, `sel.s*`/`sel.f*`, `cmpv`, `madsh.u16`,
//!   `mgen.b`, `setrm`, `shb`, `msad`: none of them emitted by Mesa's ir3 compiler, see
//!   [`refused`]; `bary.f`, `flat.b`: fragment-only; `call`/`ret`/`bkt`, `shps`/`shpe`,
//!   `emit`/`cut`/`chmask`/`chsh`/`flow_rev`). `sad.s16`/`sad.s32` add their three sources, as
//!   Mesa's `iadd3` lowering uses them.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::decode::{ImageError, decode_image};
use crate::fp::{Round, f16_to_f32, f32_to_f16, f32_to_f16_round};
use crate::isa::*;

mod cat0;
mod cat1;
mod cat2;
mod cat3;
mod cat4;
mod cat5;
mod cat6;
pub mod image;

use cat0::cx_cat0;
use cat1::cat1;
use cat2::cat2;
use cat3::cat3;
use cat4::cat4;
use cat5::cat5;
use cat6::cat6;
pub use image::{Format, Image, Images, Sampler, Wrap};

const W: usize = 64;
type Lanes = [u32; W];

/// An address outside every allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBounds;

/// GPU global memory as the dispatch sees it. Implementations must check that every byte of an
/// access lies inside an allocation and return [`OutOfBounds`] otherwise. A read has no side
/// effects and a range that reads succeeds for every sub-range of it: the interpreter may read the
/// whole span a wave's loads cover in one call and fall back to lane-by-lane reads (which name the
/// faulting lane) when that span fails.
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

/// Shader metadata a dispatch needs (from `programs[].adreno` of a bundle, or Mesa's variant).
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
pub struct Shader {
    pub instrs: Vec<Instr>,
    pub meta: Meta,
}

impl Shader {
    pub fn new(image: &[u8], meta: Meta) -> Result<Shader, ImageError> {
        Ok(Shader { instrs: decode_image(image)?, meta })
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

impl Dispatch<'_> {
    /// Work-groups in the grid, `grid[0]·grid[1]·grid[2]`. Work-group `i` of
    /// [`Interp::run_groups`] is `[i % gx, (i / gx) % gy, i / (gx·gy)]` (x fastest: the order
    /// [`Interp::run`] runs them in).
    pub fn groups(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product()
    }
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
    Relative { index: usize, group: [u32; 3], lane: u32, value: i64 },
    /// A const read beyond the dispatch's constant file.
    ConstOutOfRange { index: usize, word: u32 },
    /// The dispatch itself is malformed (empty grid, too large a work-group...).
    BadDispatch(&'static str),
    /// An image access (cat5 fetch, ldib/stib) that cannot run: `what` `slot` names the
    /// descriptor (texture `t#`, sampler `s#`, IBO).
    Image { index: usize, what: &'static str, slot: u32, reason: &'static str },
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
            ExecError::Unsupported { index, name } => match alu_refusal(name) {
                Some(why) => write!(f, "instruction {index}: {name} is not supported by the interpreter ({why})"),
                None => write!(f, "instruction {index}: {name} is not supported by the interpreter"),
            },
            ExecError::PcOutOfRange { from, pc } => {
                write!(f, "instruction {from}: control flow left the program (to {pc})")
            }
            ExecError::Relative { index, group, lane, value } => write!(
                f,
                "instruction {index}: relative access to {value} out of range (work-group {group:?}, lane {lane})"
            ),
            ExecError::ConstOutOfRange { index, word } => {
                write!(f, "instruction {index}: const word {word} beyond the constant file")
            }
            ExecError::BadDispatch(why) => write!(f, "bad dispatch: {why}"),
            ExecError::Image { index, what, slot, reason } => {
                write!(f, "instruction {index}: image access through {what}{slot}: {reason}")
            }
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
    /// Its index in the work-group (0 for a wave of packed work-groups).
    index: usize,
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
    fn new(index: usize) -> Wave {
        Wave {
            index,
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
    /// Run small work-groups side by side in one wave when the program allows it (see
    /// [`groups_per_wave`]; on by default).
    pub pack: bool,
}

impl Default for Interp {
    fn default() -> Self {
        Interp::new()
    }
}

/// Run one dispatch with a fresh interpreter and the default step limit.
pub fn run(program: &Shader, d: &Dispatch, mem: &mut dyn Memory) -> Result<Stats, ExecError> {
    Interp::new().run(program, d, mem)
}

struct Ctx<'a> {
    prog: &'a Shader,
    consts: &'a [u8],
    images: Images<'a>,
    mem: &'a mut dyn Memory,
    /// The work-group(s) running, for the id registers and error reports.
    at: Sites,
    steps: u64,
    max_steps: u64,
    lane_instrs: u64,
    /// Highest full / half regid the program can touch (see [`reg_span`]).
    span: (u8, u8),
    /// The first lane of each packed work-group (bit `i·t`), for counting wave-instructions.
    pack_starts: u64,
}

/// Which work-group(s) a wave runs: what names a lane's work-group and fiber.
#[derive(Clone, Copy)]
struct Sites {
    /// The (first) work-group's coordinates.
    group: [u32; 3],
    /// Work-groups packed into one wave ([`groups_per_wave`]): the fibers per work-group when
    /// several share the wave (lane `l` is fiber `l % t` of work-group `pack_first + l / t`),
    /// 0 when a work-group has waves of its own.
    pack: u32,
    /// Linear index of the first work-group in the wave.
    pack_first: u64,
    grid: [u32; 3],
}

impl Sites {
    /// The work-group and the fiber index in it of lane `l` of wave `w`, for error reports.
    fn site(&self, w: usize, l: usize) -> ([u32; 3], u32) {
        if self.pack == 0 {
            // CAST: a work-group has at most 1024 fibers.
            (self.group, (w * W + l) as u32)
        } else {
            let t = self.pack as usize;
            // CAST: l % t < 32.
            (group_coords(self.grid, self.pack_first + (l / t) as u64), (l % t) as u32)
        }
    }
}

impl Ctx<'_> {
    fn site(&self, w: usize, l: usize) -> ([u32; 3], u32) {
        self.at.site(w, l)
    }

    /// The wave-instructions one step of a wave with `mask` counts for: 1, or with packed
    /// work-groups one per work-group with a lane in `mask` (each would be its own wave).
    #[inline]
    fn step_weight(&self, mask: u64) -> u64 {
        match self.at.pack {
            0 => 1,
            1 => u64::from(mask.count_ones()),
            t => {
                // Bit p of `m` becomes the OR of mask bits p..p+t: widths doubling up to the
                // largest power of two w ≤ t, then [p, p+w) | [p+t-w, p+t).
                let mut m = mask;
                let mut w = 1;
                while w * 2 <= t {
                    m |= m >> w;
                    w *= 2;
                }
                if w < t {
                    m |= m >> (t - w);
                }
                u64::from((m & self.pack_starts).count_ones())
            }
        }
    }
}

/// Work-group `g`'s coordinates: x fastest (see [`Dispatch::groups`]).
fn group_coords(grid: [u32; 3], g: u64) -> [u32; 3] {
    let (gx, gy) = (u64::from(grid[0]), u64::from(grid[1]));
    // CAST: each coordinate is below its u32 grid size.
    [(g % gx) as u32, (g / gx % gy) as u32, (g / (gx * gy)) as u32]
}

/// How many work-groups of `fibers` fibers [`Interp::run_groups`] runs side by side in one wave.
///
/// Lanes of a wave are independent unless the program makes them meet: a barrier, shared memory
/// (`ldl`/`stl`/`ldlw`/`stlw`, local atomics), a cross-lane operation (`shfl`, `movmsk`, the
/// wave-uniform branches `bany`/`ball`/`getone`/`getlast`) or a wave or fiber id (`getwid`,
/// `getfiberid`, `getspid`). A program with none of them computes the same in every lane
/// whether its neighbours belong to its own work-group or another, so small work-groups
/// (tinygrad's NOLOCALS kernels have one fiber each) share a wave, up to 64 fibers; the local
/// and work-group id registers are preloaded per lane. Results, statistics (each work-group's
/// wave-instructions are counted as its own wave would run them) and the step limit are those
/// of running the work-groups one by one; only which of several failing work-groups' errors is
/// reported can differ (the first to fail in the packed wave, its lowest lane). Returns 1 when
/// work-groups do not share waves.
pub fn groups_per_wave(prog: &Shader, fibers: u64) -> u64 {
    if fibers == 0 || fibers > (W / 2) as u64 {
        return 1;
    }
    let meets = prog.instrs.iter().any(|i| match &i.body {
        Body::Cat0(c) => matches!(c.op, Cat0Op::Bany | Cat0Op::Ball | Cat0Op::Getone | Cat0Op::Getlast),
        Body::Cat1(c) => c.op == Cat1Op::Movmsk,
        Body::Cat6(c) => matches!(
            c,
            Cat6::Ld { space: Space::Local | Space::LocalW, .. }
                | Cat6::St { space: Space::Local | Space::LocalW, .. }
                | Cat6::AtomicL { .. }
                | Cat6::Shfl { .. }
                | Cat6::GetId { .. }
        ),
        Body::Cat7(c) => c.op == Cat7Op::Bar,
        _ => false,
    });
    if meets { 1 } else { W as u64 / fibers }
}

/// A conservative bound on the full and half regids a program reads or writes: the highest
/// register operand plus the instruction's extent ((rptN), vector size, address pairs), or
/// everything when it uses relative addressing; the preloaded id registers included.
fn reg_span(prog: &Shader) -> (u8, u8) {
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
            Body::Cat5(c) => {
                bump(c.dst, 4);
                bump(c.src1, 3);
                bump(c.src2, 1);
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
                    Cat6::Ibo { val, coord, type_size, d, .. } => {
                        bump(coord, d as usize);
                        (val, val, type_size as usize)
                    }
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

/// Flush an f32 denormal to a zero of its sign.
#[inline(always)]
fn ftz(x: f32) -> f32 {
    f32::from_bits(ftz_bits(x.to_bits()))
}

/// [`ftz`] on bits: a zero exponent field keeps only the sign (zeros are unchanged); branch-free
/// so that lane loops vectorize.
#[inline(always)]
fn ftz_bits(b: u32) -> u32 {
    if b & 0x7f80_0000 == 0 { b & 0x8000_0000 } else { b }
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
        Interp { waves: Vec::new(), shared: Vec::new(), private: Vec::new(), max_steps: 100_000_000, pack: true }
    }

    /// Run every work-group of the dispatch in order (no image descriptors: a cat5 fetch or
    /// ldib/stib fails with [`ExecError::Image`]).
    pub fn run(&mut self, prog: &Shader, d: &Dispatch, mem: &mut dyn Memory) -> Result<Stats, ExecError> {
        self.run_with_images(prog, d, Images::default(), mem)
    }

    /// [`Interp::run`] with the dispatch's textures, samplers and IBOs.
    pub fn run_with_images(
        &mut self,
        prog: &Shader,
        d: &Dispatch,
        images: Images<'_>,
        mem: &mut dyn Memory,
    ) -> Result<Stats, ExecError> {
        self.run_groups(prog, d, images, mem, 0..d.groups())
    }

    /// Run the work-groups whose linear indices are in `groups` (see [`Dispatch::groups`]), in
    /// ascending order: a part of a dispatch, so that a caller can spread a dispatch's
    /// work-groups over threads (one `Interp` and one [`Memory`] view each). Work-groups share
    /// nothing but global memory, and each starts from the same register, shared- and
    /// private-memory state, so running `0..a` then `a..n` is running `0..n`. The statistics
    /// and [`Interp::max_steps`] are this call's: a caller that splits a dispatch adds them up.
    /// An empty range runs nothing; one that ends beyond the grid is [`ExecError::BadDispatch`].
    pub fn run_groups(
        &mut self,
        prog: &Shader,
        d: &Dispatch,
        images: Images<'_>,
        mem: &mut dyn Memory,
        groups: core::ops::Range<u64>,
    ) -> Result<Stats, ExecError> {
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
        if groups.end > d.groups() {
            return Err(ExecError::BadDispatch("work-group range beyond the grid"));
        }
        let k = if self.pack { groups_per_wave(prog, threads) } else { 1 };
        let nwaves = if k > 1 { 1 } else { (threads as usize).div_ceil(W) };
        while self.waves.len() < nwaves {
            self.waves.push(Wave::new(self.waves.len()));
        }
        self.shared.resize(prog.meta.shmem as usize, 0);
        self.private.resize(prog.meta.pvtmem as usize * nwaves * W, 0);
        let mut cx = Ctx {
            prog,
            consts: d.consts,
            images,
            mem,
            // CAST: k > 1 only for work-groups of at most 32 fibers.
            at: Sites { group: [0; 3], pack: if k > 1 { threads as u32 } else { 0 }, pack_first: 0, grid: d.grid },
            steps: 0,
            max_steps: self.max_steps,
            lane_instrs: 0,
            span: reg_span(prog),
            pack_starts: 0,
        };
        let mut g = groups.start;
        while g < groups.end {
            // Packs start at multiples of k, whatever the range, so that a caller's split of the
            // grid into ranges at multiples of k gives the same waves.
            let end = ((g / k + 1) * k).min(groups.end);
            cx.at.group = group_coords(d.grid, g);
            cx.at.pack_first = g;
            // CAST: end - g ≤ k ≤ 64.
            self.run_group(&mut cx, d, threads as usize, nwaves, (end - g) as usize)?;
            g = end;
        }
        Ok(Stats { steps: cx.steps, lane_instructions: cx.lane_instrs })
    }

    /// Run `count` work-groups from `cx.at.pack_first`: one (`count == 1`, `cx.at.pack == 0`), or
    /// `count` packed side by side in wave 0.
    fn run_group(&mut self, cx: &mut Ctx, d: &Dispatch, threads: usize, nwaves: usize, count: usize) -> Res<()> {
        self.shared.fill(0);
        self.private.fill(0);
        let [lx, ly, _] = d.local;
        let packed = cx.at.pack != 0;
        if packed {
            cx.pack_starts = (0..count).fold(0u64, |m, i| m | 1u64 << (i * threads));
        }
        for (w, wave) in self.waves[..nwaves].iter_mut().enumerate() {
            let n = if packed { count * threads } else { (threads - w * W).min(W) };
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
                    // CAST: below 1024.
                    let i = if packed { (l % threads) as u32 } else { (w * W + l) as u32 };
                    let id = [i % lx, (i / lx) % ly, i / (lx * ly)];
                    for (c, v) in id.iter().enumerate() {
                        wave.regs[(m.lid as usize + c) & 0xff][l] = *v;
                    }
                }
            }
            if m.wgid != 0xfc {
                for c in 0..3 {
                    wave.regs[(m.wgid as usize + c) & 0xff] = [cx.at.group[c]; W];
                }
                if packed {
                    for j in 1..count {
                        let g = group_coords(d.grid, cx.at.pack_first + j as u64);
                        for (c, v) in g.iter().enumerate() {
                            wave.regs[(m.wgid as usize + c) & 0xff][j * threads..(j + 1) * threads].fill(*v);
                        }
                    }
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
        // Popcounts of the last mask and exec set (they rarely change between instructions, and
        // a popcount is a loop on CPUs without the instruction).
        let (mut last_mask, mut last_weight) = (0u64, 0u64);
        let (mut last_exec, mut last_lanes) = (0u64, 0u64);
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
            if wave.mask != last_mask {
                last_mask = wave.mask;
                last_weight = cx.step_weight(last_mask);
            }
            cx.steps += last_weight;
            if cx.steps > cx.max_steps {
                return Err(ExecError::StepLimit { steps: cx.max_steps });
            }
            let prog = cx.prog;
            let ins = &prog.instrs[pc];
            let exec = wave.mask
                & match wave.pred {
                    Pred::None => u64::MAX,
                    Pred::True => wave.pred_mask,
                    Pred::False => !wave.pred_mask,
                };
            if exec != last_exec {
                last_exec = exec;
                last_lanes = u64::from(exec.count_ones());
            }
            cx.lane_instrs += last_lanes * (ins.flags.repeat as u64 + 1);
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
                Body::Cat5(c) => cat5(cx, wave, c, pc, exec, w)?,
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

/// Why the interpreter refuses `i` (it stops with [`ExecError::Unsupported`] there), or `None`
/// when it runs it: encodings decoded to their name only, and the decoded image forms whose
/// behaviour is not modelled (layered/3D/offset/projected cat5 fetches, untyped, 3D or offset
/// ldib/stib). A loader can refuse such a program before it runs.
pub fn refused(i: &Instr) -> Option<&'static str> {
    match &i.body {
        Body::Unsupported(name) => Some(name),
        Body::Cat2(c) => alu_refusal(c.op.name()),
        Body::Cat3(c) => alu_refusal(c.op.name()),
        Body::Cat5(c) if c.d3 || c.array || c.offset || c.b53 || c.sv => Some(CAT5_REFUSED),
        Body::Cat6(Cat6::Ibo { typed, d, offset, .. }) if !typed || *d > 2 || offset.is_some_and(|o| o != 0) => {
            Some(IBO_REFUSED)
        }
        _ => None,
    }
}

/// The decoded ALU opcodes the interpreter refuses, each with why. Mesa's NIR→ir3 compiler (which
/// builds every a6xx compute shader tinygrad and turnip run) never creates these: `ir3.h` has
/// builders for them that nothing calls, and no NIR op lowers to them (bcsel becomes `sel.b16`/
/// `sel.b32`, comparisons `cmps.*`, 32-bit multiplies `madsh.m16`); what they compute is
/// undocumented, so they are refused rather than guessed. `sad.s16`/`sad.s32` are run: Mesa emits
/// them for NIR `iadd3` (a + b + c) on a6xx gen4 and a7xx (`has_sad`; never on an A630).
const ALU_REFUSED: [(&str, &str); 14] = [
    ("cmpv.f", CMPV_REFUSED),
    ("cmpv.u", CMPV_REFUSED),
    ("cmpv.s", CMPV_REFUSED),
    ("sel.s16", SEL_REFUSED),
    ("sel.s32", SEL_REFUSED),
    ("sel.f16", SEL_REFUSED),
    ("sel.f32", SEL_REFUSED),
    (
        "madsh.u16",
        "madsh.u16: never emitted by Mesa's ir3 compiler (32-bit multiplies use madsh.m16); semantics undocumented",
    ),
    ("mgen.b", OTHER_REFUSED),
    ("setrm", OTHER_REFUSED),
    ("shb", OTHER_REFUSED),
    ("msad", OTHER_REFUSED),
    ("bary.f", VARYING_REFUSED),
    ("flat.b", VARYING_REFUSED),
];
const CMPV_REFUSED: &str =
    "cmpv.f/cmpv.u/cmpv.s: never emitted by Mesa's ir3 compiler (comparisons use cmps.*); semantics undocumented";
const SEL_REFUSED: &str = "sel.s16/sel.s32/sel.f16/sel.f32: never emitted by Mesa's ir3 compiler (selects use sel.b16/sel.b32); semantics undocumented";
const OTHER_REFUSED: &str =
    "mgen.b/setrm/shb/msad: never emitted by Mesa's ir3 compiler (no NIR op lowers to them); semantics undocumented";
const VARYING_REFUSED: &str = "bary.f/flat.b: fragment-shader varying interpolation, which no compute shader has";

/// Why the interpreter refuses the ALU opcode `name` (see [`ALU_REFUSED`]).
fn alu_refusal(name: &str) -> Option<&'static str> {
    ALU_REFUSED.iter().find(|(n, _)| *n == name).map(|(_, why)| *why)
}

const CAT5_REFUSED: &str = "cat5 with .3d/.a/.o/.p/.s/.v or an immediate offset";
const IBO_REFUSED: &str = "ldib/stib untyped, 3d or with an offset";

/// A relative register or const access out of range in lane `l`, naming its work-group and fiber.
fn relative(cx: &Ctx, wave: &Wave, pc: usize, l: usize, value: i64) -> ExecError {
    let (group, lane) = cx.site(wave.index, l);
    ExecError::Relative { index: pc, group, lane, value }
}

fn unsupported(pc: usize, name: &'static str) -> ExecError {
    ExecError::Unsupported { index: pc, name }
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
                            return Err(relative(cx, wave, pc, l, idx));
                        }
                        let r = idx as usize;
                        if o.half { wave.hget(r as u8, l) } else { wave.regs[r][l] }
                    }
                    _ => {
                        if !(0..2048).contains(&idx) {
                            return Err(relative(cx, wave, pc, l, idx));
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
// ALU operands and results (cat2, cat3, cat4)

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Float,
    Int,
    Bits,
}

/// Read an operand and apply (neg)/(abs) for its kind; floats come back as f32 bits, integers
/// sign- or zero-extended from 16 bits for half operands. Only the lanes up to the highest
/// active one are written (lanes above it are never stored).
#[allow(clippy::too_many_arguments)]
#[inline]
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
    let n = active_len(exec);
    let out = &mut out[..n];
    match o.src {
        // Registers: read and modify in one pass, straight from the register file.
        Src::Reg { reg, .. } => {
            let reg = reg.0.wrapping_add(if o.r { k } else { 0 });
            if !o.half {
                modify(kind, o, signed, &wave.regs[reg as usize][..n], out, |x| x);
            } else if !wave.merged {
                modify(kind, o, signed, &wave.hregs[reg as usize][..n], out, |x| x & 0xffff);
            } else {
                let sh = u32::from(reg & 1) * 16;
                modify(kind, o, signed, &wave.regs[(reg >> 1) as usize][..n], out, move |x| (x >> sh) & 0xffff);
            }
        }
        Src::RelReg(_) | Src::RelConst(_) => {
            let mut t = [0u32; W];
            read_src(cx, wave, o, k, pc, exec, kind == Kind::Float, &mut t)?;
            modify(kind, o, signed, &t[..n], out, |x| x);
        }
        // The same value in every lane: modify it once.
        _ => {
            let mut t = [0u32; W];
            read_src(cx, wave, o, k, pc, exec, kind == Kind::Float, &mut t)?;
            let mut v = [0u32];
            modify(kind, o, signed, &t[..1], &mut v, |x| x);
            out.fill(v[0]);
        }
    }
    Ok(())
}

/// `out[l] = modifiers(get(src[l]))` for an operand's kind: the per-operand decisions are taken
/// once, outside the lane loops.
#[inline(always)]
fn modify(kind: Kind, o: &Operand, signed: bool, src: &[u32], out: &mut [u32], get: impl Fn(u32) -> u32) {
    #[inline(always)]
    fn lanes(out: &mut [u32], src: &[u32], f: impl Fn(u32) -> u32) {
        for (d, s) in out.iter_mut().zip(src) {
            *d = f(*s);
        }
    }
    let g = &get;
    match kind {
        Kind::Float => {
            // (abs) clears and (neg) flips the sign bit, after the denormal flush.
            let and = if o.abs { 0x7fff_ffff } else { u32::MAX };
            let xor = if o.neg { 0x8000_0000 } else { 0 };
            if o.half {
                // f16 values are never f32 denormals: nothing to flush
                lanes(out, src, |x| (f16_to_f32(g(x) as u16).to_bits() & and) ^ xor)
            } else {
                lanes(out, src, |x| (ftz_bits(g(x)) & and) ^ xor)
            }
        }
        Kind::Int => {
            let ext = |x: u32| -> u32 {
                if !o.half {
                    x
                } else if signed {
                    x as u16 as i16 as i32 as u32
                } else {
                    x & 0xffff
                }
            };
            match (o.abs, o.neg) {
                (false, false) if !o.half => lanes(out, src, g),
                (false, false) if signed => lanes(out, src, |x| g(x) as u16 as i16 as i32 as u32),
                (false, false) => lanes(out, src, |x| g(x) & 0xffff),
                (abs, neg) => lanes(out, src, |x| {
                    let mut x = ext(g(x));
                    if abs {
                        x = (x as i32).unsigned_abs();
                    }
                    if neg {
                        x = x.wrapping_neg();
                    }
                    x
                }),
            }
        }
        Kind::Bits => {
            if o.neg {
                lanes(out, src, |x| !g(x))
            } else {
                lanes(out, src, g)
            }
        }
    }
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

/// `a[l] = (f(a[l]) cond f(b[l])) as u32`, the condition chosen once for all lanes.
#[inline(always)]
fn cmp_lanes<T: PartialOrd>(a: &mut [u32], b: &[u32], c: Cond, f: impl Fn(u32) -> T) {
    match c {
        Cond::Lt => map2(a, b, |x, y| (f(x) < f(y)) as u32),
        Cond::Le => map2(a, b, |x, y| (f(x) <= f(y)) as u32),
        Cond::Gt => map2(a, b, |x, y| (f(x) > f(y)) as u32),
        Cond::Ge => map2(a, b, |x, y| (f(x) >= f(y)) as u32),
        Cond::Eq => map2(a, b, |x, y| (f(x) == f(y)) as u32),
        Cond::Ne => map2(a, b, |x, y| (f(x) != f(y)) as u32),
    }
}

/// Store an ALU result: floats (f32 bits) are rounded to f16 for half destinations, integers
/// truncated; (sat) clamps float results to [0, 1].
/// The result of an integer or bitwise op on half sources: the ALU computes in 16 bits, and a full
/// destination receives the 16-bit result zero- or sign-extended by the opcode's signedness. Mesa's
/// ir3_cf.c relies on it: it folds a `cov.u16u32`/`cov.s16s32` of a half result into the op that
/// made it (swapping `add.u` and `add.s` to match the conversion), except after `mul.u24`/`mul.s24`,
/// "which always return 32b result regardless of its sources size, hence we cannot guarantee the high
/// 16b of dst being zero or sign extended". A half destination keeps the low 16 bits either way.
fn narrow16(v: &mut [u32], signed: bool) {
    if signed {
        map1(v, |x| x as u16 as i16 as i32 as u32);
    } else {
        map1(v, |x| x & 0xffff);
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(words: &[u64]) -> Shader {
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
        Shader::new(&image, meta).unwrap()
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
