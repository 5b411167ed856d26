//! A simulated Adreno command processor: a PM4 interpreter over GPU memory.
//!
//! [`Cp::submit`] runs an indirect buffer (IB) the way the a6xx CP does, as far as a compute
//! runtime uses it: header parity, TYPE4 writes into a register file, `CP_MEM_WRITE`,
//! `CP_EVENT_WRITE` (the `*_TS` events write their value — or the always-on counter with the
//! `TIMESTAMP` bit — when they retire, which here is at once), `CP_REG_TO_MEM` (including
//! `CP_ALWAYS_ON_COUNTER`), `CP_WAIT_REG_MEM` (all compare functions, signed or not),
//! `CP_INDIRECT_BUFFER` (nested, at most [`MAX_IB_DEPTH`] levels), `CP_LOAD_STATE6_FRAG`
//! (indirect compute shader and constants; samplers, texture and IBO descriptors, indirect or
//! direct — passed to the dispatch with the image registers, see [`ComputeState`]), `CP_EXEC_CS` and `CP_MEMCPY` (both ranges checked
//! against the mapped memory before a word is written; overlapping ranges copy in ascending
//! chunks of [`COPY_CHUNK_DWORDS`], undefined on hardware).
//!
//! **Time.** `CP_ALWAYS_ON_COUNTER` is a deterministic model clock: it advances by one tick per
//! packet and, at a dispatch, by one more tick per work-group, so timestamps written around a
//! dispatch (`CP_REG_TO_MEM`, or a `*_TS` event with `TIMESTAMP`) are strictly increasing and
//! their difference grows with the dispatch's size. It only moves forward, across submissions.
//!
//! At `CP_EXEC_CS` the register file and the loaded state are checked against each other
//! (shader length, constant length, local size fields, thread counts = groups × local, group
//! registers = the packet's counts) and a [`ComputeState`] goes to the [`ShaderCore`] callback,
//! where a shader interpreter (ir3) runs it over the same memory.
//!
//! A wait whose condition is false stops the run with [`Outcome::Blocked`]; the host changes
//! memory and calls [`Cp::resume`]. An unknown opcode, bad parity, a memory fault or a state
//! mismatch stops it with an error naming the IB address and the word offset.

mod memory;
mod ring;

pub use memory::{BusMemory, GpuMemory, Span, SparseMemory};
pub use ring::RingCp;

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use hcq::{Error, Result};
use hcq_adreno::a6xx::packets::{LoadState6Indirect, load_state6 as ls6};
use hcq_adreno::a6xx::{events, regs};
use hcq_adreno::pm4::op;
use hcq_adreno::pm4::raw::{
    EventWrite, ExecCs, IndirectBuffer, MemCpy, RegToMem, Type4Header, Type7Header, WaitRegMem, event_write as ev,
    reg_to_mem as r2m, wait_reg_mem as wrm,
};
use hcq_adreno::reg::Reg;
use zerocopy::{FromBytes, IntoBytes};

/// Dwords a `CP_MEMCPY` moves per step (through a buffer the CP keeps).
pub const COPY_CHUNK_DWORDS: usize = 256;
/// Deepest IB nesting accepted (the ring calls IB1, which may call IB2; one more for slack).
pub const MAX_IB_DEPTH: usize = 3;
/// Registers in the file (18-bit dword offsets).
pub const REG_FILE_DWORDS: usize = 1 << 18;
/// Packets one submission (an IB with every IB it calls, or one doorbell's ring words and their
/// IBs) may run before the CP stops it with a fault, like the ir3 step limit: a tree of
/// `CP_INDIRECT_BUFFER`s calling each other [`MAX_IB_DEPTH`] deep runs up to ~2^60 packets, and
/// the host holds the device lock meanwhile. 2^24 is ~100× the largest submission of the
/// sample bundles (`chain100`: 100 dispatches of a few dozen packets each) and runs in well
/// under a second. [`Cp::set_packet_budget`] changes it.
pub const DEFAULT_PACKET_BUDGET: u64 = 1 << 24;

/// The validated compute state at a `CP_EXEC_CS`.
#[derive(Debug)]
pub struct ComputeState<'a> {
    /// Shader code address (`SP_CS_BASE`, equal to the loaded shader's address).
    pub shader_addr: u64,
    /// The code as loaded by `CP_LOAD_STATE6` (`code_units × 32` words).
    pub shader: &'a [u32],
    /// Entry offset in bytes (`SP_CS_PROGRAM_COUNTER_OFFSET`).
    pub entry: u32,
    /// Constant block address.
    pub consts_addr: u64,
    /// The constant file as loaded (`vec4 × 4` words).
    pub consts: &'a [u32],
    /// Work-groups per dimension.
    pub groups: [u32; 3],
    /// Threads per work-group per dimension.
    pub local: [u32; 3],
    /// `SP_CS_CNTL_0` (footprints, wave size).
    pub cntl_0: regs::SP_CS_CNTL_0,
    /// `SP_CS_CONST_CONFIG_0` (work-group id / local id registers).
    pub const_config_0: regs::SP_CS_CONST_CONFIG_0,
    /// `SP_CS_WGE_CNTL`.
    pub wge_cntl: regs::SP_CS_WGE_CNTL,
    /// `SP_CS_CNTL_1` (shared memory size, constant RAM mode).
    pub cntl_1: regs::SP_CS_CNTL_1,
    /// `SP_CS_PVT_MEM_PARAM` (private memory per fiber).
    pub pvt_mem_param: regs::SP_CS_PVT_MEM_PARAM,
    /// `SP_MODE_CNTL` (constant demotion, ISAMMODE).
    pub mode_cntl: regs::SP_MODE_CNTL,
    /// Sampler descriptors loaded by `CP_LOAD_STATE6` `ST6_SHADER`/`SB6_CS_TEX` (4 dwords each),
    /// as many as `SP_CS_CONFIG.NSAMP` says.
    pub samplers: &'a [u32],
    /// Texture descriptors (`ST6_CONSTANTS`/`SB6_CS_TEX`, 16 dwords each), `SP_CS_CONFIG.NTEX` of them.
    pub textures: &'a [u32],
    /// IBO descriptors (`ST6_UAV`/`SB6_CS_SHADER`, 16 dwords each), `SP_CS_CONFIG.NUAV` of them.
    pub ibos: &'a [u32],
    /// `TPL1_CS_BORDER_COLOR_BASE` (0xb180): the border color table.
    pub border_color_base: u64,
    /// `SP_CS_PVT_MEM_BASE` (0xa9b7, tinygrad: `SP_CS_PVT_MEM_ADDR`): private memory.
    pub pvt_mem_base: u64,
    /// `SP_CS_PVT_MEM_SIZE` (0xa9b9) raw.
    pub pvt_mem_size: u32,
    /// `SP_CS_PVT_MEM_STACK_OFFSET` (0xa9bd) raw.
    pub pvt_mem_stack_offset: u32,
    /// `TPL1_MODE_CNTL` (0xb309) raw (ISAMMODE bits 0..1).
    pub tpl1_mode_cntl: u32,
}

/// Register offsets the image and private-memory state uses that `hcq_adreno::a6xx::regs` does
/// not name (a6xx.xml, Mesa 26 names; tinygrad 0.14's older names in parentheses).
pub mod image_regs {
    /// `SP_CS_PVT_MEM_BASE` (reg64; `SP_CS_PVT_MEM_ADDR`).
    pub const SP_CS_PVT_MEM_BASE: u32 = 0xa9b7;
    /// `SP_CS_PVT_MEM_SIZE` (`a6xx_sp_xs_pvt_mem_size`: TOTALPVTMEMSIZE bits 0..17 shr 12).
    pub const SP_CS_PVT_MEM_SIZE: u32 = 0xa9b9;
    /// `SP_CS_CONFIG` (`a6xx_sp_xs_config`: ENABLED 8, NTEX 9..16, NSAMP 17..21, NUAV 22..28).
    pub const SP_CS_CONFIG: u32 = 0xa9bb;
    /// `SP_CS_PVT_MEM_STACK_OFFSET`.
    pub const SP_CS_PVT_MEM_STACK_OFFSET: u32 = 0xa9bd;
    /// `SP_CS_SAMPLER_BASE` (reg64, align 16).
    pub const SP_CS_SAMPLER_BASE: u32 = 0xa9e2;
    /// `SP_CS_TEXMEMOBJ_BASE` (reg64, align 64).
    pub const SP_CS_TEXMEMOBJ_BASE: u32 = 0xa9e6;
    /// `SP_CS_UAV_BASE` (reg64, align 16; A6XX variant).
    pub const SP_CS_UAV_BASE: u32 = 0xa9f2;
    /// `TPL1_CS_BORDER_COLOR_BASE` (reg64, align 128).
    pub const TPL1_CS_BORDER_COLOR_BASE: u32 = 0xb180;
    /// `TPL1_MODE_CNTL` (ISAMMODE bits 0..1).
    pub const TPL1_MODE_CNTL: u32 = 0xb309;
    /// `TPL1_DBG_ECO_CNTL` (tinygrad writes 0; recorded, no effect in the model).
    pub const TPL1_DBG_ECO_CNTL: u32 = 0xb600;
    /// `a6xx_state_type::ST6_UAV` (adreno_pm4.xml; `ST6_IBO` in older Mesa).
    pub const ST6_UAV: u32 = 3;
    /// `a6xx_state_block::SB6_CS_TEX`.
    pub const SB6_CS_TEX: u32 = 5;
    /// `SP_CS_CONFIG` fields: (NTEX, NSAMP, NUAV).
    pub const fn config_counts(v: u32) -> (u32, u32, u32) {
        ((v >> 9) & 0xff, (v >> 17) & 0x1f, (v >> 22) & 0x7f)
    }
}

/// Runs dispatches (the shader interpreter plugs in here).
pub trait ShaderCore {
    /// Execute `state` over `mem`; an error stops the CP (a shader fault).
    fn dispatch(&mut self, state: &ComputeState<'_>, mem: &mut dyn GpuMemory) -> Result<()>;
}

/// A shader core that runs nothing: the CP still decodes and executes every packet (waits,
/// signals, timestamps, state), so a call completes and retires, but no kernel writes anything.
/// For measuring the host's share of a call without the interpreter's time
/// (`HCQ_VKGSL_SHADER=off`, the host-share benches).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoShader;

impl ShaderCore for NoShader {
    fn dispatch(&mut self, _state: &ComputeState<'_>, _mem: &mut dyn GpuMemory) -> Result<()> {
        Ok(())
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every packet ran.
    Done,
    /// A `CP_WAIT_REG_MEM` is not satisfied: at IB address `ib`, word `word`.
    Blocked {
        /// IB address.
        ib: u64,
        /// Word offset of the wait packet in that IB.
        word: u32,
    },
}

/// A run of command words: an IB (`wrap == 0`), or the ringbuffer (`wrap` = its size in
/// dwords; word `k` of the run lies at ring index `(start + k) % wrap`, so packets may span the
/// end of the ring).
#[derive(Clone, Copy, Debug)]
struct Frame {
    base: u64,
    len: u32,
    pos: u32,
    start: u32,
    wrap: u32,
}

impl Frame {
    fn ib(base: u64, len: u32) -> Self {
        Self { base, len, pos: 0, start: 0, wrap: 0 }
    }

    /// The word offset (IB) or ring index (ring) of run word `k`, as errors name it.
    fn index(&self, k: u32) -> u32 {
        if self.wrap == 0 { k } else { ((u64::from(self.start) + u64::from(k)) % u64::from(self.wrap)) as u32 }
    }

    fn addr(&self, k: u32) -> u64 {
        self.base.wrapping_add(u64::from(self.index(k)) * 4)
    }

    /// Read run words `[k, k + out.len())`, in two pieces where they wrap the ring.
    fn read(&self, mem: &dyn GpuMemory, k: u32, out: &mut [u32]) -> Result<()> {
        let i = self.index(k);
        // CAST: IB and ring sizes are u32 word counts.
        let first = if self.wrap == 0 { out.len() } else { out.len().min((self.wrap - i) as usize) };
        let (a, b) = out.split_at_mut(first);
        mem.read_words(self.addr(k), a)?;
        if !b.is_empty() {
            mem.read_words(self.base, b)?;
        }
        Ok(())
    }
}

enum Step {
    Next(u32),
    Called,
    Blocked,
}

#[derive(Clone, Copy, Debug, Default)]
struct Loaded {
    addr: u64,
    units: u32,
}

/// The simulated CP (see the module docs).
pub struct Cp {
    regs: Vec<u32>,
    stack: Vec<Frame>,
    payload: Vec<u32>,
    shader: Vec<u32>,
    consts: Vec<u32>,
    /// Sampler, texture and IBO descriptors as loaded (`CP_LOAD_STATE6`).
    samplers: Vec<u32>,
    textures: Vec<u32>,
    ibos: Vec<u32>,
    copy_buf: Vec<u32>,
    shader_at: Option<Loaded>,
    consts_at: Option<Loaded>,
    counter: u64,
    packets: u64,
    /// Packets of the current submission, and the most it may run.
    run_packets: u64,
    packet_budget: u64,
    dispatches: u64,
    irqs: u64,
    /// Ringbuffer read pointer (dwords from the ring base).
    rb_rptr: u32,
}

impl core::fmt::Debug for Cp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Cp").field("packets", &self.packets).field("dispatches", &self.dispatches).finish()
    }
}

impl Default for Cp {
    fn default() -> Self {
        Self::new()
    }
}

/// Ticks of `CP_ALWAYS_ON_COUNTER` per packet (the counter runs at 19.2 MHz; a packet is
/// taken as ~50 ns so timestamps move forward deterministically).
const TICKS_PER_PACKET: u64 = 1;

impl Cp {
    /// A CP with a zeroed register file.
    pub fn new() -> Self {
        Self {
            regs: vec![0; REG_FILE_DWORDS],
            stack: Vec::with_capacity(MAX_IB_DEPTH),
            payload: Vec::with_capacity(64),
            shader: Vec::new(),
            consts: Vec::new(),
            samplers: Vec::new(),
            textures: Vec::new(),
            ibos: Vec::new(),
            copy_buf: Vec::new(),
            shader_at: None,
            consts_at: None,
            counter: 0,
            packets: 0,
            run_packets: 0,
            packet_budget: DEFAULT_PACKET_BUDGET,
            dispatches: 0,
            irqs: 0,
            rb_rptr: 0,
        }
    }

    /// Register `reg` (dword offset).
    pub fn reg(&self, reg: u32) -> u32 {
        self.regs.get(reg as usize).copied().unwrap_or(0)
    }

    /// Packets executed so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Packets one submission may run before it stops with a fault (default
    /// [`DEFAULT_PACKET_BUDGET`]; at least 1).
    pub fn set_packet_budget(&mut self, packets: u64) {
        self.packet_budget = packets.max(1);
    }

    /// The packet budget of a submission.
    pub fn packet_budget(&self) -> u64 {
        self.packet_budget
    }

    /// Dispatches run so far.
    pub fn dispatches(&self) -> u64 {
        self.dispatches
    }

    /// Events written with the IRQ bit.
    pub fn irqs(&self) -> u64 {
        self.irqs
    }

    /// Start running the IB of `dwords` words at `addr`. A previous run must have finished.
    pub fn submit(
        &mut self,
        addr: u64,
        dwords: u32,
        mem: &mut dyn GpuMemory,
        d: &mut dyn ShaderCore,
    ) -> Result<Outcome> {
        if !self.stack.is_empty() {
            return Err(Error::InvalidArgument {
                what: "adreno sim: a submission is still blocked in a wait",
                value: addr,
            });
        }
        if !addr.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "adreno sim: IB address", value: addr, align: 4 });
        }
        self.stack.push(Frame::ib(addr, dwords));
        self.run_packets = 0;
        self.resume(mem, d)
    }

    /// Continue after [`Outcome::Blocked`] (re-evaluating the wait).
    pub fn resume(&mut self, mem: &mut dyn GpuMemory, d: &mut dyn ShaderCore) -> Result<Outcome> {
        while let Some(top) = self.stack.last().copied() {
            if top.pos >= top.len {
                self.stack.pop();
                continue;
            }
            let i = self.stack.len() - 1;
            match self.step(top, mem, d) {
                Ok(Step::Next(next)) => self.stack[i].pos = next,
                Ok(Step::Called) => {}
                Ok(Step::Blocked) => return Ok(Outcome::Blocked { ib: top.base, word: top.index(top.pos) }),
                Err(e) => {
                    self.stack.clear();
                    let what = if top.wrap == 0 { "IB" } else { "ringbuffer" };
                    return Err(e.context(format!("adreno sim: {what} {:#x} word {}", top.base, top.index(top.pos))));
                }
            }
        }
        Ok(Outcome::Done)
    }

    /// The ringbuffer read pointer: the ring index (dwords) of the next word the CP fetches.
    pub fn ring_rptr(&self) -> u32 {
        self.rb_rptr
    }

    /// Run the ringbuffer of `size` dwords at `base` from [`Cp::ring_rptr`] up to `wptr` (a ring
    /// index in dwords): what the CP does when `CP_RB_WPTR` is written. Packets may span the end
    /// of the ring. While a wait in the ring (or an IB it called) is blocked, a later call
    /// extends the pending words to the new `wptr` and re-evaluates the wait. Returns how the run
    /// ended and the new read pointer. An error (fault, bad packet) stops the CP with the read
    /// pointer where the run started; the error names the ring index of the failing packet.
    pub fn ring(
        &mut self,
        base: u64,
        size: u32,
        wptr: u32,
        mem: &mut dyn GpuMemory,
        d: &mut dyn ShaderCore,
    ) -> Result<(Outcome, u32)> {
        if size == 0 || wptr >= size {
            return Err(Error::InvalidArgument {
                what: "adreno sim: ring write pointer outside the ring",
                value: wptr.into(),
            });
        }
        if !base.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "adreno sim: ring base", value: base, align: 4 });
        }
        match self.stack.first().copied() {
            None => {
                let len = (u64::from(wptr) + u64::from(size) - u64::from(self.rb_rptr)) % u64::from(size);
                if len > 0 {
                    // CAST: `len < size`, a u32.
                    self.stack.push(Frame { base, len: len as u32, pos: 0, start: self.rb_rptr, wrap: size });
                }
                self.run_packets = 0;
            }
            Some(f) if f.wrap == size && f.base == base => {
                // CAST: a remainder modulo a u32.
                let len = ((u64::from(wptr) + u64::from(size) - u64::from(f.start)) % u64::from(size)) as u32;
                if len < f.len {
                    return Err(Error::InvalidArgument {
                        what: "adreno sim: write pointer moved back over words the CP has not run",
                        value: wptr.into(),
                    });
                }
                self.stack[0].len = len;
            }
            Some(_) => {
                return Err(Error::InvalidArgument {
                    what: "adreno sim: an IB submission is still blocked in a wait",
                    value: base,
                });
            }
        }
        let outcome = self.resume(mem, d)?;
        self.rb_rptr = match self.stack.first() {
            Some(f) if f.wrap != 0 => f.index(f.pos),
            _ => wptr,
        };
        Ok((outcome, self.rb_rptr))
    }

    /// Execute the packet at `f.pos` (the top frame).
    fn step(&mut self, f: Frame, mem: &mut dyn GpuMemory, d: &mut dyn ShaderCore) -> Result<Step> {
        // Errors name the word's offset in its IB, or its ring index.
        let at = f.index(f.pos);
        let hdr = mem.read32(f.addr(f.pos))?;
        let (count, opcode) = match hdr >> 28 {
            0x4 => {
                let h = Type4Header(hdr);
                if !h.parity_ok() || h.count() == 0 {
                    return Err(Error::Malformed {
                        what: "pm4 type4 header",
                        at: at.into(),
                        reason: "bad parity or no register",
                    });
                }
                (h.count(), None)
            }
            0x7 => {
                let h = Type7Header(hdr);
                if !h.parity_ok() || !h.reserved_clear() {
                    return Err(Error::Malformed {
                        what: "pm4 type7 header",
                        at: at.into(),
                        reason: "bad parity or reserved bits set",
                    });
                }
                (h.count(), Some(h.opcode()))
            }
            _ => {
                return Err(Error::Malformed {
                    what: "pm4 header",
                    at: at.into(),
                    reason: "not a type4 or type7 packet",
                });
            }
        };
        let end = f.pos.saturating_add(1 + count);
        if end > f.len {
            return Err(Error::Malformed {
                what: "pm4 packet",
                at: at.into(),
                reason: "payload runs past the end of the IB (or the ring's write pointer)",
            });
        }
        self.payload.clear();
        if count > 0 {
            self.payload.resize(count as usize, 0);
            f.read(mem, f.pos + 1, &mut self.payload)?;
        }
        if self.run_packets >= self.packet_budget {
            return Err(Error::OutOfSpace {
                what: "adreno sim: packets of one submission (fault: a loop or tree of CP_INDIRECT_BUFFERs?)",
                requested: self.run_packets + 1,
                capacity: self.packet_budget,
            });
        }
        self.packets += 1;
        self.run_packets += 1;
        self.counter += TICKS_PER_PACKET;
        let Some(opcode) = opcode else {
            let reg = Type4Header(hdr).reg();
            for (i, v) in self.payload.iter().enumerate() {
                let r = reg as usize + i;
                let slot = self.regs.get_mut(r).ok_or(Error::OutOfBounds {
                    what: "adreno sim: type4 write past the register file",
                    offset: r as u64,
                    len: 1,
                    limit: REG_FILE_DWORDS as u64,
                })?;
                *slot = *v;
            }
            return Ok(Step::Next(end));
        };
        match opcode {
            op::CP_NOP | op::CP_WAIT_FOR_IDLE | op::CP_WAIT_MEM_WRITES | op::CP_WAIT_FOR_ME | op::CP_SET_MARKER => {}
            op::CP_MEM_WRITE => {
                if self.payload.len() < 3 {
                    return Err(short("CP_MEM_WRITE", at));
                }
                let addr = u64::from(self.payload[0]) | u64::from(self.payload[1]) << 32;
                for (i, v) in self.payload[2..].iter().enumerate() {
                    mem.write32(addr.wrapping_add(4 * i as u64), *v)?;
                }
            }
            op::CP_EVENT_WRITE => self.event(at, mem)?,
            op::CP_REG_TO_MEM => {
                let p = read::<RegToMem>(&self.payload).ok_or(short("CP_REG_TO_MEM", at))?;
                if p.d0 >> r2m::ACCUMULATE_BIT & 1 != 0 {
                    return Err(Error::Unsupported {
                        what: "adreno sim: CP_REG_TO_MEM ACCUMULATE",
                        value: p.d0.into(),
                    });
                }
                let reg = p.d0 & ((1 << r2m::REG_BITS) - 1);
                let cnt = ((p.d0 >> r2m::CNT_SHIFT) & ((1 << r2m::CNT_BITS) - 1)).max(1);
                let dest = u64::from(p.dest_lo) | u64::from(p.dest_hi) << 32;
                for i in 0..cnt {
                    let v = self.read_reg(reg + i);
                    mem.write32(dest.wrapping_add(4 * u64::from(i)), v)?;
                }
            }
            op::CP_WAIT_REG_MEM => {
                let p = read::<WaitRegMem>(&self.payload).ok_or(short("CP_WAIT_REG_MEM", at))?;
                if p.d0 >> wrm::WRITE_MEMORY_BIT & 1 != 0 {
                    return Err(Error::Unsupported {
                        what: "adreno sim: CP_WAIT_REG_MEM WRITE_MEMORY",
                        value: p.d0.into(),
                    });
                }
                let addr = u64::from(p.addr_lo) | u64::from(p.addr_hi) << 32;
                let v = match (p.d0 >> wrm::POLL_SHIFT) & 3 {
                    wrm::POLL_MEMORY => mem.read32(addr)?,
                    wrm::POLL_REGISTER => self.read_reg(p.addr_lo & 0x3_ffff),
                    x => {
                        return Err(Error::Unsupported {
                            what: "adreno sim: CP_WAIT_REG_MEM poll kind",
                            value: x.into(),
                        });
                    }
                } & p.mask;
                let signed = p.d0 >> wrm::SIGNED_COMPARE_BIT & 1 != 0;
                if !compare(p.d0 & 7, v, p.reference, signed)? {
                    // Not consumed: resume re-evaluates it.
                    self.packets -= 1;
                    self.run_packets -= 1;
                    return Ok(Step::Blocked);
                }
            }
            op::CP_INDIRECT_BUFFER => {
                let p = read::<IndirectBuffer>(&self.payload).ok_or(short("CP_INDIRECT_BUFFER", at))?;
                if self.stack.len() >= MAX_IB_DEPTH {
                    return Err(Error::OutOfSpace {
                        what: "adreno sim: IB nesting",
                        requested: self.stack.len() as u64 + 1,
                        capacity: MAX_IB_DEPTH as u64,
                    });
                }
                let base = u64::from(p.base_lo) | u64::from(p.base_hi) << 32;
                if !base.is_multiple_of(4) {
                    return Err(Error::Misaligned { what: "adreno sim: IB address", value: base, align: 4 });
                }
                // Return to the next packet of this IB, then run the callee.
                if let Some(top) = self.stack.last_mut() {
                    top.pos = end;
                }
                self.stack.push(Frame::ib(base, p.size & 0xf_ffff));
                return Ok(Step::Called);
            }
            op::CP_LOAD_STATE6_FRAG => self.load_state(at, mem)?,
            op::CP_MEMCPY => {
                let p = read::<MemCpy>(&self.payload).ok_or(short("CP_MEMCPY", at))?;
                self.memcpy(p, mem)?;
            }
            op::CP_EXEC_CS => {
                let p = read::<ExecCs>(&self.payload).ok_or(short("CP_EXEC_CS", at))?;
                self.exec(p.ngroups, mem, d)?;
            }
            x => {
                return Err(Error::Unsupported {
                    what: "adreno sim: unknown or unsupported CP opcode",
                    value: x.into(),
                });
            }
        }
        Ok(Step::Next(end))
    }

    fn read_reg(&self, reg: u32) -> u32 {
        match reg {
            r if r == regs::CP_ALWAYS_ON_COUNTER::REG => self.counter as u32,
            r if r == regs::CP_ALWAYS_ON_COUNTER::REG + 1 => (self.counter >> 32) as u32,
            r => self.reg(r),
        }
    }

    fn event(&mut self, at: u32, mem: &mut dyn GpuMemory) -> Result<()> {
        let d0 = *self.payload.first().ok_or(short("CP_EVENT_WRITE", at))?;
        let event = d0 & 0xff;
        if d0 >> ev::IRQ_BIT & 1 != 0 {
            self.irqs += 1;
        }
        match event {
            events::CACHE_FLUSH_TS => {
                let p = read::<EventWrite>(&self.payload).ok_or(short("CP_EVENT_WRITE (CACHE_FLUSH_TS)", at))?;
                let addr = u64::from(p.addr_lo) | u64::from(p.addr_hi) << 32;
                if d0 >> ev::TIMESTAMP_BIT & 1 != 0 {
                    mem.write32(addr, self.counter as u32)?;
                    mem.write32(addr.wrapping_add(4), (self.counter >> 32) as u32)?;
                } else {
                    mem.write32(addr, p.value)?;
                }
            }
            events::CACHE_INVALIDATE => {}
            x => return Err(Error::Unsupported { what: "adreno sim: CP_EVENT_WRITE event", value: x.into() }),
        }
        Ok(())
    }

    /// `CP_LOAD_STATE6_FRAG` into the compute stage's state: the shader and constants
    /// (`SB6_CS_SHADER`, indirect), samplers (`ST6_SHADER`/`SB6_CS_TEX`), texture descriptors
    /// (`ST6_CONSTANTS`/`SB6_CS_TEX`) and IBO descriptors (`ST6_UAV`/`SB6_CS_SHADER`), the last
    /// three from memory (`SS6_INDIRECT`) or from the packet (`SS6_DIRECT`).
    fn load_state(&mut self, at: u32, mem: &mut dyn GpuMemory) -> Result<()> {
        use image_regs::{SB6_CS_TEX, ST6_UAV};
        let p = read::<LoadState6Indirect>(&self.payload).ok_or(short("CP_LOAD_STATE6_FRAG", at))?;
        let field = |shift: u32, bits: u32| (p.d0 >> shift) & ((1 << bits) - 1);
        let ty = field(ls6::STATE_TYPE_SHIFT, ls6::STATE_TYPE_BITS);
        let src = field(ls6::STATE_SRC_SHIFT, ls6::STATE_SRC_BITS);
        let block = field(ls6::STATE_BLOCK_SHIFT, ls6::STATE_BLOCK_BITS);
        let units = field(ls6::NUM_UNIT_SHIFT, ls6::NUM_UNIT_BITS);
        let dst = field(ls6::DST_OFF_SHIFT, ls6::DST_OFF_BITS);
        let image =
            matches!((ty, block), (ls6::ST6_SHADER | ls6::ST6_CONSTANTS, SB6_CS_TEX) | (ST6_UAV, ls6::SB6_CS_SHADER));
        let direct_ok = image && src == ls6::SS6_DIRECT;
        if (src != ls6::SS6_INDIRECT && !direct_ok) || !(block == ls6::SB6_CS_SHADER || block == SB6_CS_TEX) || dst != 0
        {
            return Err(Error::Unsupported {
                what: "adreno sim: CP_LOAD_STATE6 other than SB6_CS_SHADER/SB6_CS_TEX at offset 0 (indirect; direct for samplers, textures, IBOs)",
                value: p.d0.into(),
            });
        }
        let addr = u64::from(p.addr_lo) | u64::from(p.addr_hi) << 32;
        let (buf, words) = match (ty, block) {
            (ls6::ST6_SHADER, ls6::SB6_CS_SHADER) => (&mut self.shader, units * 32),
            (ls6::ST6_CONSTANTS, ls6::SB6_CS_SHADER) => (&mut self.consts, units * 4),
            (ls6::ST6_SHADER, SB6_CS_TEX) => (&mut self.samplers, units * 4),
            (ls6::ST6_CONSTANTS, SB6_CS_TEX) => (&mut self.textures, units * 16),
            (ST6_UAV, ls6::SB6_CS_SHADER) => (&mut self.ibos, units * 16),
            _ => {
                return Err(Error::Unsupported {
                    what: "adreno sim: CP_LOAD_STATE6 state type for this block (state type)",
                    value: ty.into(),
                });
            }
        };
        buf.clear();
        buf.resize(words as usize, 0);
        if src == ls6::SS6_DIRECT {
            // The data follows the two (unused) EXT_SRC_ADDR dwords in the packet.
            let data = self.payload.get(3..3 + words as usize).ok_or(Error::Malformed {
                what: "CP_LOAD_STATE6 (SS6_DIRECT)",
                at: at.into(),
                reason: "payload shorter than NUM_UNIT units of state",
            })?;
            buf.copy_from_slice(data);
            return Ok(());
        }
        if mem.read_words(addr, buf).is_err() {
            if ty != ls6::ST6_CONSTANTS || block != ls6::SB6_CS_SHADER {
                mem.read_words(addr, buf)?;
            }
            // A constant load that starts inside an object and runs past its end (tinygrad
            // loads 256 vec4 from a kernarg slot near the end of its buffer) reads zeros beyond
            // it, as on an A630 under KGSL's default page-fault policy (the SMMU terminates the
            // read, the CP goes on). One whose first word is unmapped still faults.
            mem.read32(addr)?;
            for (i, w) in buf.iter_mut().enumerate() {
                *w = mem.read32(addr + 4 * i as u64).unwrap_or(0);
            }
        }
        match (ty, block) {
            (ls6::ST6_SHADER, ls6::SB6_CS_SHADER) => self.shader_at = Some(Loaded { addr, units }),
            (ls6::ST6_CONSTANTS, ls6::SB6_CS_SHADER) => self.consts_at = Some(Loaded { addr, units }),
            _ => {}
        }
        Ok(())
    }

    fn exec(&mut self, groups: [u32; 3], mem: &mut dyn GpuMemory, d: &mut dyn ShaderCore) -> Result<()> {
        let r = |reg: u32| self.reg(reg);
        let shader = self.shader_at.ok_or(mismatch("CP_EXEC_CS without a loaded shader", 0, 0))?;
        let consts = self.consts_at.ok_or(mismatch("CP_EXEC_CS without loaded constants", 0, 0))?;
        let base = u64::from(r(regs::SP_CS_BASE::REG)) | u64::from(r(regs::SP_CS_BASE::REG + 1)) << 32;
        if base != shader.addr {
            return Err(mismatch("SP_CS_BASE differs from the loaded shader's address", shader.addr, base));
        }
        let instr = regs::SP_CS_INSTR_SIZE(r(regs::SP_CS_INSTR_SIZE::REG)).instr_size();
        if instr != shader.units {
            return Err(mismatch(
                "SP_CS_INSTR_SIZE differs from the loaded shader length",
                shader.units.into(),
                instr.into(),
            ));
        }
        let cc = regs::SP_CS_CONST_CONFIG(r(regs::SP_CS_CONST_CONFIG::REG));
        // CONSTLEN is 8 bits in units of 4 vec4, so the whole 1024-vec4 file (256) wraps to 0:
        // tinygrad's QCOM runtime writes 0x100 (enabled, CONSTLEN 0) with 256 vec4 loaded, and
        // A630s run it, so 0 is read as the whole file.
        let constlen = if cc.constlen() == 0 { 256 } else { u32::from(cc.constlen()) };
        if !cc.enabled() || constlen * 4 < consts.units {
            return Err(mismatch(
                "SP_CS_CONST_CONFIG: constants disabled or CONSTLEN below the loaded vec4",
                consts.units.into(),
                cc.raw().into(),
            ));
        }
        if !regs::SP_CS_CONFIG(r(regs::SP_CS_CONFIG::REG)).enabled() {
            return Err(mismatch("SP_CS_CONFIG: compute stage not enabled", 1, 0));
        }
        let nd = regs::SP_CS_NDRANGE_0(r(regs::SP_CS_NDRANGE_0::REG));
        let local = [u32::from(nd.localsizex()) + 1, u32::from(nd.localsizey()) + 1, u32::from(nd.localsizez()) + 1];
        for dim in 0..3u32 {
            let threads = r(regs::SP_CS_NDRANGE.base + 1 + 2 * dim);
            let kg = r(regs::SP_CS_KERNEL_GROUP.base + dim);
            let g = groups[dim as usize];
            if g == 0 {
                return Err(mismatch("CP_EXEC_CS with 0 groups", 1, 0));
            }
            if kg != g {
                return Err(mismatch("SP_CS_KERNEL_GROUP differs from CP_EXEC_CS", g.into(), kg.into()));
            }
            if u64::from(threads) != u64::from(g) * u64::from(local[dim as usize]) {
                return Err(mismatch(
                    "SP_CS_NDRANGE global size is not groups × local",
                    u64::from(g) * u64::from(local[dim as usize]),
                    threads.into(),
                ));
            }
        }
        let (ntex, nsamp, nuav) = image_regs::config_counts(r(image_regs::SP_CS_CONFIG));
        let counts = [
            (
                "SP_CS_CONFIG.NTEX above the texture descriptors loaded (ST6_CONSTANTS/SB6_CS_TEX)",
                ntex,
                16,
                self.textures.len(),
            ),
            ("SP_CS_CONFIG.NSAMP above the samplers loaded (ST6_SHADER/SB6_CS_TEX)", nsamp, 4, self.samplers.len()),
            ("SP_CS_CONFIG.NUAV above the IBO descriptors loaded (ST6_UAV/SB6_CS_SHADER)", nuav, 16, self.ibos.len()),
        ];
        for (what, n, per, have) in counts {
            if (n * per) as usize > have {
                return Err(mismatch(what, (have / per as usize) as u64, n.into()));
            }
        }
        let reg64 = |reg: u32| u64::from(r(reg)) | u64::from(r(reg + 1)) << 32;
        let state = ComputeState {
            shader_addr: shader.addr,
            shader: &self.shader,
            entry: r(regs::SP_CS_PROGRAM_COUNTER_OFFSET::REG),
            consts_addr: consts.addr,
            consts: &self.consts,
            groups,
            local,
            cntl_0: regs::SP_CS_CNTL_0(r(regs::SP_CS_CNTL_0::REG)),
            const_config_0: regs::SP_CS_CONST_CONFIG_0(r(regs::SP_CS_CONST_CONFIG_0::REG)),
            wge_cntl: regs::SP_CS_WGE_CNTL(r(regs::SP_CS_WGE_CNTL::REG)),
            cntl_1: regs::SP_CS_CNTL_1(r(regs::SP_CS_CNTL_1::REG)),
            pvt_mem_param: regs::SP_CS_PVT_MEM_PARAM(r(regs::SP_CS_PVT_MEM_PARAM::REG)),
            mode_cntl: regs::SP_MODE_CNTL(r(regs::SP_MODE_CNTL::REG)),
            samplers: &self.samplers[..4 * nsamp as usize],
            textures: &self.textures[..16 * ntex as usize],
            ibos: &self.ibos[..16 * nuav as usize],
            border_color_base: reg64(image_regs::TPL1_CS_BORDER_COLOR_BASE),
            pvt_mem_base: reg64(image_regs::SP_CS_PVT_MEM_BASE),
            pvt_mem_size: r(image_regs::SP_CS_PVT_MEM_SIZE),
            pvt_mem_stack_offset: r(image_regs::SP_CS_PVT_MEM_STACK_OFFSET),
            tpl1_mode_cntl: r(image_regs::TPL1_MODE_CNTL),
        };
        d.dispatch(&state, mem)?;
        self.dispatches += 1;
        // Model time: one tick per work-group.
        let work = groups.iter().fold(1u64, |n, &g| n.saturating_mul(g.into()));
        self.counter = self.counter.saturating_add(work);
        Ok(())
    }

    /// `CP_MEMCPY`: `dwords` dwords from `src` to `dst`. Both ranges are checked first (their
    /// first and last dwords must be mapped, so a copy off the end of an allocation writes
    /// nothing); a hole inside the ranges still faults at the first unmapped dword.
    fn memcpy(&mut self, p: MemCpy, mem: &mut dyn GpuMemory) -> Result<()> {
        let (src, dst, n) = (p.src(), p.dst(), u64::from(p.dwords));
        if n == 0 {
            return Ok(());
        }
        for (what, base) in [("adreno sim: CP_MEMCPY source", src), ("adreno sim: CP_MEMCPY destination", dst)] {
            let last = base.checked_add(4 * (n - 1)).ok_or(Error::OutOfBounds {
                what,
                offset: base,
                len: 4 * n,
                limit: u64::MAX,
            })?;
            mem.read32(base)?;
            mem.read32(last)?;
        }
        self.copy_buf.resize(COPY_CHUNK_DWORDS, 0);
        let mut done = 0u64;
        while done < n {
            // CAST: at most COPY_CHUNK_DWORDS.
            let k = (n - done).min(COPY_CHUNK_DWORDS as u64) as usize;
            let buf = &mut self.copy_buf[..k];
            mem.read_words(src + 4 * done, buf)?;
            for (i, w) in buf.iter().enumerate() {
                mem.write32(dst + 4 * (done + i as u64), *w)?;
            }
            done += k as u64;
        }
        Ok(())
    }
}

fn read<T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable + Copy>(p: &[u32]) -> Option<T> {
    T::read_from_prefix(p.as_bytes()).ok().map(|(v, _)| v)
}

fn short(what: &'static str, at: u32) -> Error {
    Error::Malformed { what, at: at.into(), reason: "payload shorter than the packet's layout" }
}

fn mismatch(what: &'static str, expected: u64, found: u64) -> Error {
    Error::Mismatch { what, expected, found }
}

/// `cp_cond_function` on `v` against `r`.
fn compare(function: u32, v: u32, r: u32, signed: bool) -> Result<bool> {
    let (a, b) = if signed { ((v as i32) as i64, (r as i32) as i64) } else { (i64::from(v), i64::from(r)) };
    Ok(match function {
        0 => true,
        1 => a < b,
        2 => a <= b,
        3 => a == b,
        4 => a != b,
        5 => a >= b,
        6 => a > b,
        x => return Err(Error::Unsupported { what: "adreno sim: cp_cond_function", value: x.into() }),
    })
}
