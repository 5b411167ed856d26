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
mod dispatch;
pub mod image;
mod operand;
mod pack;
mod refuse;
mod wave;

use cat0::cx_cat0;
use cat1::cat1;
use cat2::cat2;
use cat3::cat3;
use cat4::cat4;
use cat5::cat5;
use cat6::cat6;
pub use image::{Format, Image, Images, Sampler, Wrap};
pub use pack::groups_per_wave;
pub use refuse::refused;

use dispatch::*;
use operand::*;
use pack::*;
use refuse::*;
use wave::*;

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

type Res<T> = Result<T, ExecError>;
