//! The a6xx compute encoder: core [`Command`]s to PM4.
//!
//! | command | packets |
//! |---|---|
//! | exec | `CP_SET_MARKER(RM6_COMPUTE)`, `SP_UPDATE_CNTL` (0x60, then 0), `SP_MODE_CNTL`, `SP_PERFCTR_SHADER_MASK`, `TPL1_MODE_CNTL`, `TPL1_DBG_ECO_CNTL` (0), `SP_CS_USIZE`, `CP_WAIT_FOR_IDLE`, one TYPE4 burst `SP_CS_NDRANGE_0..SP_CS_KERNEL_GROUP_Z` (0xb990, 12), one burst `SP_CS_CNTL_0..SP_CS_PVT_MEM_STACK_OFFSET` (0xa9b0, 14), one burst `SP_REG_PROG_ID_0..SP_CS_CONST_CONFIG` (0xb983, 5), `CP_LOAD_STATE6_FRAG` constants and shader (indirect, `SB6_CS_SHADER`); with samplers `CP_LOAD_STATE6_FRAG(ST6_SHADER, SB6_CS_TEX)` + `SP_CS_SAMPLER_BASE` + `TPL1_CS_BORDER_COLOR_BASE`, with textures `CP_LOAD_STATE6_FRAG(ST6_CONSTANTS, SB6_CS_TEX)` + `SP_CS_TEXMEMOBJ_BASE`, with IBOs `CP_LOAD_STATE6_FRAG(ST6_UAV, SB6_CS_SHADER)` + `SP_CS_UAV_BASE` (all from the constant block, marked `Kernargs` `Offset(off)`); `CP_EXEC_CS` |
//! | signal | `CP_WAIT_FOR_IDLE`, then two `CP_EVENT_WRITE(CACHE_FLUSH_TS)`: the low word of the value to `addr`, then the high word to `addr + 4` |
//! | wait | two `CP_WAIT_REG_MEM` on the low word (see [`A6xxEncoder`]) |
//! | timestamp | `CP_WAIT_FOR_IDLE`, `CP_REG_TO_MEM(CP_ALWAYS_ON_COUNTER, 2 dwords, 64B)` |
//! | barrier | `CP_EVENT_WRITE(CACHE_FLUSH_TS)` to the scratch word, `CP_EVENT_WRITE(CACHE_INVALIDATE)`, `CP_WAIT_MEM_WRITES`, `CP_WAIT_FOR_IDLE` |
//! | copy | `CP_WAIT_FOR_IDLE`, `CP_MEMCPY(DWORDS, SRC, DST)`: whole dwords, so both addresses and the size must be multiples of 4 (anything else is refused) |
//!
//! Every word that carries a command field is marked with a core [`Form`] (see
//! [`A6xxEncoder`]), so `hcq::queue::HwQueue` patches all of them.
//!
//! The order and the fixed values follow tinygrad's `ops_qcom.py` (which runs on real a630s,
//! `docs/adreno.md` (g)), with the two XML corrections described at
//! [`Program::from_parts`](crate::program::Program::from_parts).

use super::{events, regs};
use crate::a6xx::packets::load_state6 as ls6;
use crate::pm4::Sink;
use crate::pm4::raw::{event_write, reg_to_mem, set_marker, wait_reg_mem as wrm};
use crate::pm4::{op, type4_header, type7_header};
use crate::program::{MAX_WORKGROUP_THREADS, Program, check_local};
use crate::reg::Reg;
use alloc::vec::Vec;
use hcq::queue::{CmdWriter, Command, Encoder, Field, Form};
use hcq::{Error, Result};
use spin::RwLock;

/// Device memory the encoder's packets point at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncoderConfig {
    /// 256 bytes of zeroed device memory: the barrier's cache-flush event writes into the
    /// first 16, and bytes [`BORDER_COLOR_OFFSET`]`..+128` are the (zero) border-colour entry
    /// that `TPL1_CS_BORDER_COLOR_BASE` points at for programs with samplers (tinygrad's
    /// zeroed `border_color_buf`); nothing else writes them.
    pub scratch: u64,
    /// Private/stack memory shared by all dispatches (`SP_CS_PVT_MEM_BASE`).
    pub pvt_mem: u64,
    /// Its size in bytes; a program whose `stack_bytes` exceeds it is refused.
    pub pvt_mem_bytes: u64,
}

/// Word positions of the dynamic values inside an exec template.
#[derive(Clone, Copy, Debug, Default)]
struct ExecLayout {
    ndrange0: usize,
    threads: [usize; 3],
    groups: [usize; 3],
    kernargs: usize,
    exec_groups: [usize; 3],
}

#[derive(Clone, Debug)]
struct ExecTemplate {
    words: Vec<u32>,
    at: ExecLayout,
    /// After `at.kernargs`, in order: 64-bit words that hold the constant block's address plus
    /// a byte offset (the descriptor loads and bases).
    kern_off: Vec<(usize, u32)>,
    max_threads: u32,
}

/// Where the border-colour entry lies in the scratch memory (128-byte aligned:
/// `TPL1_CS_BORDER_COLOR_BASE` `align="128"`, a6xx.xml; one `a6xx` border-colour entry is 128
/// bytes).
pub const BORDER_COLOR_OFFSET: u64 = 128;

/// `SP_UPDATE_CNTL`: clear pending compute shader and UAV loads (tinygrad writes 0x60).
const UPDATE_CNTL: u32 = 1 << regs::SP_UPDATE_CNTL::CS_STATE_SHIFT | 1 << regs::SP_UPDATE_CNTL::CS_UAV_SHIFT;
/// `SP_CS_TSIZE` / `SP_CS_USIZE` as tinygrad writes them for every dispatch.
const TSIZE: u32 = 0x80;
const USIZE: u32 = 0x40;
/// Unused register id (a3xx regid 0xfc) for the four `SP_REG_PROG_ID_*`.
const REGID_UNUSED4: u32 = 0xfcfc_fcfc;
/// `DELAY_LOOP_CYCLES` between polls of `CP_WAIT_REG_MEM` (tinygrad uses 32; Mesa 16).
const WAIT_DELAY: u32 = 16;

/// The a6xx compute encoder.
///
/// Programs are registered with [`A6xxEncoder::add_program`]; the handle it returns is the
/// `program` of an exec command (an index, not an address: the whole register set comes from
/// the program).
///
/// **Waits on a 64-bit timeline.** `CP_WAIT_REG_MEM` compares one 32-bit word. A wait for
/// `value` polls the low word `lo` twice, with a window of 2^31 around `t = value as u32`
/// (the same rule as KGSL's `timestamp_cmp`): first until `lo` is *below* `t ^ 2^31`, then
/// until `lo ≥ t` — both unsigned when `t < 2^31`, both signed otherwise. While the signal is
/// within 2^31 of `value` (a timeline never lags that far), the pair returns exactly when the
/// 64-bit value reaches `value`, also when the low word wraps from `0xffffffff` to 0
/// (`tests/encoder.rs` checks every case around the rollover in the simulator).
///
/// **Marks.** Every word that carries a command field is marked with the core's [`Form`], in
/// every place and derived form it is written, so the core `HwQueue::patch` (through the
/// [`Encoder`] impl) rewrites all of them:
///
/// | word | field | form |
/// |---|---|---|
/// | an address (signal, wait, timestamp, kernargs, copy src/dst) | `Addr`, `Kernargs`, `Src`, `Dst` | wide `Plain` |
/// | the signal's second event address | `Addr` | wide `Offset(4)` |
/// | the low / high word of a signal value | `Value` | `Lo` / `Hi` |
/// | a wait's reference words | `Value` | `Lo`, `Fn(`[`forms::value_sign_flip`]`)` |
/// | a wait's dword 0 (function, signed when bit 31 is set) | `Value` | `Fn(`[`forms::wait_lt_d0`]`)`, `Fn(`[`forms::wait_ge_d0`]`)` |
/// | `SP_CS_NDRANGE_0` (three `local − 1` fields) | `Local(0)`, `Local(1)`, `Local(2)` | one `Fn(`[`forms::ndrange_0`]`)` mark each |
/// | `SP_CS_NDRANGE_1/3/5` (threads) | `Global(d)` | `Times(Local(d))` |
/// | `SP_CS_KERNEL_GROUP_*`, `CP_EXEC_CS` group counts | `Global(d)` | `Plain` |
/// | `CP_MEMCPY` `DWORDS` | `Size` | `Fn(`[`forms::copy_dwords`]`)` |
///
/// A low word is a core `Lo` mark rather than a 32-bit `Plain` one, which would refuse a 64-bit
/// value; `Lo`/`Hi` words are stored by the core's patch without evaluating a form. A `Fn` whose command does not fit its word (a local size of 0
/// or above 1024, a copy size that is not a non-zero multiple of 4) returns [`forms::INVALID`],
/// which the core's patch refuses as a value that does not fit, changing nothing. What only the
/// encoder knows (a program's `max_threads`, address alignment, copy sizes) it checks in
/// [`Encoder::check_patch`], which the core's patch calls before writing anything.
#[derive(Debug)]
pub struct A6xxEncoder {
    cfg: EncoderConfig,
    programs: RwLock<Vec<ExecTemplate>>,
}

impl A6xxEncoder {
    /// An encoder whose packets use `cfg`'s memory.
    pub fn new(cfg: EncoderConfig) -> Result<Self> {
        Self::check_addr("encoder scratch address", cfg.scratch, 16)?;
        Self::check_addr("encoder private memory address", cfg.pvt_mem, 32)?;
        Ok(Self { cfg, programs: RwLock::new(Vec::new()) })
    }

    /// The configuration.
    pub fn config(&self) -> EncoderConfig {
        self.cfg
    }

    pub(crate) fn check_addr(what: &'static str, addr: u64, align: u64) -> Result<()> {
        if !addr.is_multiple_of(align) {
            return Err(Error::Misaligned { what, value: addr, align });
        }
        if addr >> 48 != 0 {
            return Err(Error::InvalidArgument { what: "adreno device address beyond 48 bits", value: addr });
        }
        Ok(())
    }

    pub(crate) fn check_grid(global: [u32; 3], local: [u32; 3]) -> Result<()> {
        for d in 0..3 {
            if global[d] == 0 {
                return Err(Error::InvalidArgument { what: "adreno exec: a work-group count is 0", value: 0 });
            }
            if global[d].checked_mul(local[d]).is_none() {
                return Err(Error::InvalidArgument {
                    what: "adreno exec: groups × local size does not fit SP_CS_NDRANGE (32 bits)",
                    value: u64::from(global[d]) * u64::from(local[d]),
                });
            }
        }
        Ok(())
    }

    /// Register `prog`, whose code was uploaded at `code_addr` (128-byte aligned); returns the
    /// handle for exec commands. Everything that does not change per dispatch is encoded here.
    pub fn add_program(&self, prog: &Program, code_addr: u64) -> Result<u64> {
        Self::check_addr("adreno shader code address", code_addr, 128)?;
        if prog.stack_bytes > self.cfg.pvt_mem_bytes {
            return Err(Error::OutOfSpace {
                what: "adreno private/stack memory for the program",
                requested: prog.stack_bytes,
                capacity: self.cfg.pvt_mem_bytes,
            });
        }
        let r = &prog.regs;
        let dsc = prog.descriptors;
        let border = self.cfg.scratch + BORDER_COLOR_OFFSET;
        if dsc.samp_cnt > 0 {
            Self::check_addr("adreno border colour (encoder scratch + 128)", border, 128)?;
        }
        let mut w = Vec::with_capacity(128);
        let mut at = ExecLayout::default();
        let mut kern_off = Vec::new();
        let reg1 = |w: &mut Vec<u32>, reg: u32, v: u32| -> Result<()> {
            w.push(type4_header(reg, 1)?);
            w.push(v);
            Ok(())
        };
        w.push(type7_header(op::CP_SET_MARKER, 1)?);
        w.push(set_marker::RM6_COMPUTE << set_marker::MODE_SHIFT);
        // tinygrad: SP_UPDATE_CNTL = CS_STATE | CS_UAV, then 0.
        reg1(&mut w, regs::SP_UPDATE_CNTL::REG, UPDATE_CNTL)?;
        reg1(&mut w, regs::SP_UPDATE_CNTL::REG, 0)?;
        reg1(&mut w, regs::SP_MODE_CNTL::REG, r.mode_cntl.raw())?;
        reg1(&mut w, regs::SP_PERFCTR_SHADER_MASK::REG, regs::SP_PERFCTR_SHADER_MASK::default().set_cs(true).raw())?;
        reg1(&mut w, regs::TPL1_MODE_CNTL::REG, r.tpl1_mode_cntl.raw())?;
        // Decision (issue 18 §2): TPL1_DBG_ECO_CNTL = 0 before every dispatch, as tinygrad's
        // QCOMComputeQueue.exec writes it (hardware-proven on a630 with these image kernels).
        // Mesa writes a per-chip "magic" value once at init instead (freedreno_devices.py,
        // a6xx gen1 incl. a630: 0x00108000; turnip tu6_init_hw), for all its pipelines; the bits
        // are undocumented (a6xx.xml names only LINEAR_MIPMAP_FALLBACK_IN_BLOCKS, bit 25, which
        // neither sets), so nothing shows tinygrad's 0 wrong for compute, and we follow tinygrad.
        reg1(&mut w, regs::TPL1_DBG_ECO_CNTL::REG, 0)?;
        reg1(&mut w, regs::SP_CS_USIZE::REG, USIZE)?;
        w.push(type7_header(op::CP_WAIT_FOR_IDLE, 0)?);
        // SP_CS_NDRANGE_0 .. SP_CS_KERNEL_GROUP_Z: 12 consecutive registers.
        w.push(type4_header(regs::SP_CS_NDRANGE_0::REG, 12)?);
        at.ndrange0 = w.len();
        w.push(regs::SP_CS_NDRANGE_0::default().set_kerneldim(3).raw());
        for d in 0..3 {
            at.threads[d] = w.len();
            w.extend_from_slice(&[0, 0]); // GLOBALSIZE (dynamic), GLOBALOFF = 0
        }
        w.push(r.const_config_0.raw());
        w.push(r.wge_cntl.raw());
        for d in 0..3 {
            at.groups[d] = w.len();
            w.push(0);
        }
        // SP_CS_CNTL_0 .. SP_CS_PVT_MEM_STACK_OFFSET: 14 consecutive registers.
        w.push(type4_header(regs::SP_CS_CNTL_0::REG, 14)?);
        w.extend_from_slice(&[
            r.cntl_0.raw(),
            r.cntl_1.raw(),
            0, // SP_CS_BOOLEAN_CF_MASK
            prog.entry,
            code_addr as u32,
            (code_addr >> 32) as u32,
            r.pvt_mem_param.raw(),
            self.cfg.pvt_mem as u32,
            (self.cfg.pvt_mem >> 32) as u32,
            r.pvt_mem_size.raw(),
            TSIZE,
            r.config.raw(),
            regs::SP_CS_INSTR_SIZE::default().try_set_instr_size(prog.code_units)?.raw(),
            r.stack_offset.raw(),
        ]);
        // SP_REG_PROG_ID_0..3 (unused) and SP_CS_CONST_CONFIG: 5 consecutive registers.
        w.push(type4_header(regs::SP_REG_PROG_ID_0::REG, 5)?);
        w.extend_from_slice(&[REGID_UNUSED4, REGID_UNUSED4, REGID_UNUSED4, 0xfc, r.const_config.raw()]);
        // Constants, then code, both indirect into SB6_CS_SHADER.
        w.push(type7_header(op::CP_LOAD_STATE6_FRAG, 3)?);
        w.push(ls6::dword0(0, ls6::ST6_CONSTANTS, ls6::SS6_INDIRECT, ls6::SB6_CS_SHADER, prog.load_vec4));
        at.kernargs = w.len();
        w.extend_from_slice(&[0, 0]);
        w.push(type7_header(op::CP_LOAD_STATE6_FRAG, 3)?);
        w.push(ls6::dword0(0, ls6::ST6_SHADER, ls6::SS6_INDIRECT, ls6::SB6_CS_SHADER, prog.code_units));
        w.extend_from_slice(&[code_addr as u32, (code_addr >> 32) as u32]);
        // Samplers, textures, IBOs: each loaded indirect from its descriptors in the constant
        // block, and its base register pointed there, in tinygrad's order and packets
        // (QCOMComputeQueue.exec; ../shared/notes/tinygrad-runtime.md §3.4 step 8).
        let mut kern = |w: &mut Vec<u32>, off: u32| {
            kern_off.push((w.len(), off));
            w.extend_from_slice(&[0, 0]);
        };
        if dsc.samp_cnt > 0 {
            w.push(type7_header(op::CP_LOAD_STATE6_FRAG, 3)?);
            w.push(ls6::dword0(0, ls6::ST6_SHADER, ls6::SS6_INDIRECT, ls6::SB6_CS_TEX, dsc.samp_cnt));
            kern(&mut w, dsc.samp_off);
            w.push(type4_header(regs::SP_CS_SAMPLER_BASE::REG, 2)?);
            kern(&mut w, dsc.samp_off);
            w.push(type4_header(regs::TPL1_CS_BORDER_COLOR_BASE::REG, 2)?);
            w.extend_from_slice(&[border as u32, (border >> 32) as u32]);
        }
        if dsc.tex_cnt > 0 {
            w.push(type7_header(op::CP_LOAD_STATE6_FRAG, 3)?);
            w.push(ls6::dword0(0, ls6::ST6_CONSTANTS, ls6::SS6_INDIRECT, ls6::SB6_CS_TEX, dsc.tex_cnt));
            kern(&mut w, dsc.tex_off);
            w.push(type4_header(regs::SP_CS_TEXMEMOBJ_BASE::REG, 2)?);
            kern(&mut w, dsc.tex_off);
        }
        if dsc.ibo_cnt > 0 {
            w.push(type7_header(op::CP_LOAD_STATE6_FRAG, 3)?);
            w.push(ls6::dword0(0, ls6::ST6_UAV, ls6::SS6_INDIRECT, ls6::SB6_CS_SHADER, dsc.ibo_cnt));
            kern(&mut w, dsc.ibo_off);
            w.push(type4_header(regs::SP_CS_UAV_BASE::REG, 2)?);
            kern(&mut w, dsc.ibo_off);
        }
        w.push(type7_header(op::CP_EXEC_CS, 4)?);
        w.push(0);
        for d in 0..3 {
            at.exec_groups[d] = w.len();
            w.push(0);
        }
        let mut table = self.programs.write();
        table.push(ExecTemplate { words: w, at, kern_off, max_threads: prog.max_threads });
        Ok((table.len() - 1) as u64)
    }

    /// Encode `cmd` into `s`; returns the exec's `max_threads` (0 for other commands).
    pub fn encode_to(&self, cmd: &Command, s: &mut impl Sink) -> Result<u32> {
        match *cmd {
            Command::Exec { program, kernargs, global, local } => {
                let table = self.programs.read();
                let t = usize::try_from(program).ok().and_then(|i| table.get(i)).ok_or(Error::InvalidArgument {
                    what: "adreno exec: no program registered under this handle",
                    value: program,
                })?;
                check_local(local, t.max_threads)?;
                Self::check_grid(global, local)?;
                Self::check_addr("adreno constant block address", kernargs, 16)?;
                emit_exec(t, kernargs, global, local, s);
                Ok(t.max_threads)
            }
            Command::Wait { addr, value } => {
                Self::check_addr("adreno wait address", addr, 8)?;
                let lo = value as u32;
                let lt: fn(&Command) -> u64 = forms::wait_lt_d0;
                let ge: fn(&Command) -> u64 = forms::wait_ge_d0;
                let flip: fn(&Command) -> u64 = forms::value_sign_flip;
                for (function, d0, reference, r) in
                    [(wrm::WRITE_LT, lt, Form::Fn(flip), lo ^ 0x8000_0000), (wrm::WRITE_GE, ge, Form::Lo, lo)]
                {
                    s.word(type7_header(op::CP_WAIT_REG_MEM, 6)?);
                    s.mark32(Field::Value, Form::Fn(d0), wait_d0(function, lo));
                    s.mark64(Field::Addr, Form::Plain, addr);
                    s.mark32(Field::Value, reference, r);
                    s.words(&[u32::MAX, WAIT_DELAY]);
                }
                Ok(0)
            }
            Command::Signal { addr, value } => {
                Self::check_addr("adreno signal address", addr, 8)?;
                s.word(type7_header(op::CP_WAIT_FOR_IDLE, 0)?);
                let ev = events::CACHE_FLUSH_TS << event_write::EVENT_SHIFT;
                // Low word first: between the two writes a reader sees (old high, new low),
                // never more than the new value (high first would show 0x1_ffff_ffff on the way
                // from 0x0_ffff_ffff to 0x1_0000_0000 and wake a host waiter too early).
                s.words(&[type7_header(op::CP_EVENT_WRITE, 4)?, ev]);
                s.mark64(Field::Addr, Form::Plain, addr);
                s.mark32(Field::Value, Form::Lo, value as u32);
                s.words(&[type7_header(op::CP_EVENT_WRITE, 4)?, ev]);
                s.mark64(Field::Addr, Form::Offset(4), addr + 4);
                s.mark32(Field::Value, Form::Hi, (value >> 32) as u32);
                Ok(0)
            }
            Command::Timestamp { addr } => {
                Self::check_addr("adreno timestamp address", addr, 8)?;
                let d0 = regs::CP_ALWAYS_ON_COUNTER::REG << reg_to_mem::REG_SHIFT
                    | 2 << reg_to_mem::CNT_SHIFT
                    | 1 << reg_to_mem::B64_BIT;
                s.words(&[type7_header(op::CP_WAIT_FOR_IDLE, 0)?, type7_header(op::CP_REG_TO_MEM, 3)?, d0]);
                s.mark64(Field::Addr, Form::Plain, addr);
                Ok(0)
            }
            Command::Barrier => {
                let sc = self.cfg.scratch;
                s.words(&[
                    type7_header(op::CP_EVENT_WRITE, 4)?,
                    events::CACHE_FLUSH_TS << event_write::EVENT_SHIFT,
                    sc as u32,
                    (sc >> 32) as u32,
                    0,
                    type7_header(op::CP_EVENT_WRITE, 1)?,
                    events::CACHE_INVALIDATE << event_write::EVENT_SHIFT,
                    type7_header(op::CP_WAIT_MEM_WRITES, 0)?,
                    type7_header(op::CP_WAIT_FOR_IDLE, 0)?,
                ]);
                Ok(0)
            }
            Command::Copy { dst, src, bytes } => {
                Self::check_addr("adreno copy destination address", dst, 4)?;
                Self::check_addr("adreno copy source address", src, 4)?;
                let dwords = Self::check_copy_size(bytes)?;
                // The CP copies after the work before it is done; cache maintenance against
                // shader writes is the barrier's job, as between dispatches.
                s.words(&[type7_header(op::CP_WAIT_FOR_IDLE, 0)?, type7_header(op::CP_MEMCPY, 5)?]);
                s.mark32(Field::Size, Form::Fn(forms::copy_dwords), dwords);
                s.mark64(Field::Src, Form::Plain, src);
                s.mark64(Field::Dst, Form::Plain, dst);
                Ok(0)
            }
        }
    }

    /// The `CP_MEMCPY` dword count of a copy of `bytes`: a non-zero multiple of 4 whose dword
    /// count fits the packet's 32-bit `DWORDS`.
    pub(crate) fn check_copy_size(bytes: u64) -> Result<u32> {
        if bytes == 0 {
            return Err(Error::InvalidArgument {
                what: "adreno copy: 0 bytes (CP_MEMCPY copies 1 or more dwords)",
                value: 0,
            });
        }
        if !bytes.is_multiple_of(4) {
            return Err(Error::Misaligned {
                what: "adreno copy size (CP_MEMCPY copies whole dwords)",
                value: bytes,
                align: 4,
            });
        }
        u32::try_from(bytes / 4).map_err(|_| Error::InvalidArgument {
            what: "adreno copy: more dwords than CP_MEMCPY's 32-bit DWORDS holds",
            value: bytes,
        })
    }
}

/// The derived forms of [`A6xxEncoder`]'s marks: each computes one word from the command
/// (`Form::Fn`). A command of another kind, or one whose values do not fit the word, gives
/// [`forms::INVALID`].
pub mod forms {
    use super::{MAX_WORKGROUP_THREADS, regs, wait_d0, wrm};
    use hcq::queue::Command;

    /// What a form returns for a command that does not fit its word: beyond 32 bits, so the
    /// core's `Mark::eval` refuses it ("value does not fit a 32-bit field").
    pub const INVALID: u64 = u64::MAX;

    fn value(c: &Command) -> Option<u64> {
        match *c {
            Command::Wait { value, .. } | Command::Signal { value, .. } => Some(value),
            _ => None,
        }
    }

    /// Bits 31:0 of a wait value with bit 31 flipped: the far edge of the wrap-aware window.
    pub fn value_sign_flip(c: &Command) -> u64 {
        value(c).map_or(INVALID, |v| (v & 0xffff_ffff) ^ 0x8000_0000)
    }

    /// Dword 0 of the wait's first `CP_WAIT_REG_MEM` (`WRITE_LT`, signed when bit 31 is set).
    pub fn wait_lt_d0(c: &Command) -> u64 {
        value(c).map_or(INVALID, |v| u64::from(wait_d0(wrm::WRITE_LT, v as u32)))
    }

    /// Dword 0 of the wait's second `CP_WAIT_REG_MEM` (`WRITE_GE`, signed when bit 31 is set).
    pub fn wait_ge_d0(c: &Command) -> u64 {
        value(c).map_or(INVALID, |v| u64::from(wait_d0(wrm::WRITE_GE, v as u32)))
    }

    /// `SP_CS_NDRANGE_0`: `KERNELDIM = 3` and the three `local − 1` fields (10 bits each).
    pub fn ndrange_0(c: &Command) -> u64 {
        let Command::Exec { local, .. } = *c else { return INVALID };
        if local.iter().any(|&l| l == 0 || l > MAX_WORKGROUP_THREADS) {
            return INVALID;
        }
        let r = regs::SP_CS_NDRANGE_0::default()
            .set_kerneldim(3)
            .set_localsizex((local[0] - 1) as u16)
            .set_localsizey((local[1] - 1) as u16)
            .set_localsizez((local[2] - 1) as u16);
        u64::from(r.raw())
    }

    /// `CP_MEMCPY` `DWORDS`: the copy size in dwords (a non-zero multiple of 4 bytes).
    pub fn copy_dwords(c: &Command) -> u64 {
        match *c {
            Command::Copy { bytes, .. }
                if bytes != 0 && bytes.is_multiple_of(4) && bytes / 4 <= u64::from(u32::MAX) =>
            {
                bytes / 4
            }
            _ => INVALID,
        }
    }
}

/// Dword 0 of a `CP_WAIT_REG_MEM` polling memory with `function`, signed when `lo` has bit 31.
#[inline]
pub(crate) const fn wait_d0(function: u32, lo: u32) -> u32 {
    function << wrm::FUNCTION_SHIFT | wrm::POLL_MEMORY << wrm::POLL_SHIFT | (lo >> 31) << wrm::SIGNED_COMPARE_BIT
}

#[inline]
fn emit_exec(t: &ExecTemplate, kernargs: u64, global: [u32; 3], local: [u32; 3], s: &mut impl Sink) {
    let w = &t.words;
    let at = &t.at;
    s.words(&w[..at.ndrange0]);
    let mut ndr0 = w[at.ndrange0];
    for (d, shift) in [(0u8, 2u8), (1, 12), (2, 22)] {
        ndr0 |= (local[usize::from(d)] - 1) << shift;
    }
    // NDRANGE_0 carries the three local sizes: one word, marked once per dimension.
    s.mark32(Field::Local(0), Form::Fn(forms::ndrange_0), ndr0);
    s.also(Field::Local(1), Form::Fn(forms::ndrange_0));
    s.also(Field::Local(2), Form::Fn(forms::ndrange_0));
    for d in 0..3u8 {
        let i = usize::from(d);
        // GLOBALSIZE in threads: groups × local, recomputed when either changes.
        s.mark32(Field::Global(d), Form::Times(Field::Local(d)), global[i] * local[i]);
        s.word(0); // GLOBALOFF
    }
    s.words(&w[at.threads[2] + 2..at.groups[0]]);
    for d in 0..3u8 {
        s.mark32(Field::Global(d), Form::Plain, global[usize::from(d)]);
    }
    s.words(&w[at.groups[2] + 1..at.kernargs]);
    s.mark64(Field::Kernargs, Form::Plain, kernargs);
    let mut from = at.kernargs + 2;
    for &(pos, off) in &t.kern_off {
        s.words(&w[from..pos]);
        s.mark64(Field::Kernargs, Form::Offset(off.into()), kernargs + u64::from(off));
        from = pos + 2;
    }
    s.words(&w[from..at.exec_groups[0]]);
    for d in 0..3u8 {
        s.mark32(Field::Global(d), Form::Plain, global[usize::from(d)]);
    }
}

/// Adapter from [`Sink`] to the core's [`CmdWriter`]: every mark becomes a core mark.
struct CoreSink<'a, 'b> {
    w: &'a mut CmdWriter<'b>,
    /// The first error of a mark (`also` with nothing written yet: cannot happen, every
    /// `also` follows the word it marks).
    err: Option<Error>,
}

impl Sink for CoreSink<'_, '_> {
    #[inline]
    fn word(&mut self, w: u32) {
        self.w.word(w);
    }
    #[inline]
    fn words(&mut self, ws: &[u32]) {
        self.w.words(ws);
    }
    // `w`/`v` is the form's value for this command (the encoder computed it from the same,
    // checked fields; `tests/replay.rs` checks patches against fresh encodings), so the word is
    // marked as computed instead of evaluated again.
    #[inline]
    fn mark32(&mut self, field: Field, form: Form, w: u32) {
        self.w.computed32(field, form, w);
    }
    #[inline]
    fn mark64(&mut self, field: Field, form: Form, v: u64) {
        self.w.computed64(field, form, v);
    }
    #[inline]
    fn also(&mut self, field: Field, form: Form) {
        if let Err(e) = self.w.mark_last(field, form) {
            self.err.get_or_insert(e);
        }
    }
}

impl Encoder for A6xxEncoder {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        let mut sink = CoreSink { w, err: None };
        self.encode_to(cmd, &mut sink)?;
        sink.err.map_or(Ok(()), Err)
    }

    /// The checks [`A6xxEncoder::encode_to`] makes of the patched field: address alignment
    /// (and 48 bits), a work-group count of 0 or groups × local size beyond 32 bits, a local
    /// size beyond the program's `max_threads`, a copy size that is not whole dwords. The rest
    /// of the command passed them when it was encoded; a value needs no check.
    fn check_patch(&self, cmd: &Command, field: Field) -> Result<()> {
        match (*cmd, field) {
            (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => {
                Self::check_addr("adreno signal address", addr, 8)
            }
            (Command::Exec { kernargs, .. }, Field::Kernargs) => {
                Self::check_addr("adreno constant block address", kernargs, 16)
            }
            (Command::Exec { global, local, .. }, Field::Global(_)) => Self::check_grid(global, local),
            (Command::Exec { program, global, local, .. }, Field::Local(_)) => {
                let max_threads = {
                    let table = self.programs.read();
                    usize::try_from(program).ok().and_then(|i| table.get(i)).map(|t| t.max_threads).ok_or(
                        Error::InvalidArgument {
                            what: "adreno exec: no program registered under this handle",
                            value: program,
                        },
                    )?
                };
                check_local(local, max_threads)?;
                Self::check_grid(global, local)
            }
            (Command::Copy { dst, .. }, Field::Dst) => Self::check_addr("adreno copy destination address", dst, 4),
            (Command::Copy { src, .. }, Field::Src) => Self::check_addr("adreno copy source address", src, 4),
            (Command::Copy { bytes, .. }, Field::Size) => Self::check_copy_size(bytes).map(|_| ()),
            _ => Ok(()),
        }
    }
}
