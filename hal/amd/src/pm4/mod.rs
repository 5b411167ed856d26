//! PM4 type-3 packets for the gfx11 MEC compute queue, as tinygrad 0.14's `AMDComputeQueue`
//! (`tinygrad/runtime/ops_amd.py`) emits them for a gfx11 device with one XCC, and the
//! [`Pm4Encoder`] that turns core commands into them.
//!
//! - [`raw`]: the opcodes and field encoders (with their citations).
//! - the packet builders below: one function per packet, writing into a [`Sink`] (a plain
//!   `Vec<u32>`, or the core's command writer through the encoder, which marks the words a
//!   patch may change: a [`W`]/[`D`] value carries its mark).
//! - [`Pm4Encoder`]: `hcq::queue::Encoder` for the compute queue (its docs list the packets of
//!   each command and the marks).
//!
//! A type-3 header is `PACKET3(op, count)` with `count` = payload words − 1 (tinygrad's
//! `pkt3(op, *vals)` writes `len(vals) - 1`).

mod encoder;
pub mod raw;

pub use encoder::{Interrupt, Pm4Config, Pm4Encoder, Program, Scratch, ScratchDevice};

use crate::regs::{self, Window};
use hcq::queue::{Field, Form};
use hcq::{Error, Result};
use raw::{event_write as ev, op, release_mem as rm, wait_reg_mem as wrm};

/// Where packet words go. Marks are recorded by the encoder's sink; a plain `Vec<u32>` keeps the
/// words only.
pub trait Sink {
    /// Append a word.
    fn word(&mut self, w: u32);
    /// Append a 32-bit word that carries `field` in `form` (the value is `w`).
    fn mark32(&mut self, field: Field, form: Form, w: u32);
    /// Append a 64-bit value (low word first) that carries `field` in `form`.
    fn mark64(&mut self, field: Field, form: Form, v: u64);
    /// Append words.
    fn words(&mut self, ws: &[u32]) {
        for &w in ws {
            self.word(w);
        }
    }
}

impl Sink for alloc::vec::Vec<u32> {
    fn word(&mut self, w: u32) {
        self.push(w);
    }
    fn mark32(&mut self, _: Field, _: Form, w: u32) {
        self.push(w);
    }
    fn mark64(&mut self, _: Field, _: Form, v: u64) {
        // CAST: the low and high halves.
        self.extend_from_slice(&[v as u32, (v >> 32) as u32]);
    }
    fn words(&mut self, ws: &[u32]) {
        self.extend_from_slice(ws);
    }
}

/// A 32-bit packet word: a literal, or a value a patch may change (with its core mark).
#[derive(Clone, Copy, Debug)]
pub enum W {
    /// A fixed word.
    Lit(u32),
    /// A word carrying `Field` in `Form`.
    Mark(u32, Field, Form),
}

/// A value of a register run (`SET_SH_REG`, `SET_UCONFIG_REG`): a literal word, a marked word,
/// or a marked 64-bit value filling two consecutive registers (low first).
#[derive(Clone, Copy, Debug)]
pub enum R {
    /// A fixed word.
    Lit(u32),
    /// A word carrying `Field` in `Form`.
    Mark(u32, Field, Form),
    /// Two words (low, high) carrying `Field` in `Form`.
    Wide(u64, Field, Form),
}

/// A 64-bit packet value (two words, low first): a literal, or marked.
#[derive(Clone, Copy, Debug)]
pub enum D {
    /// A fixed value.
    Lit(u64),
    /// A value carrying `Field` in `Form`.
    Mark(u64, Field, Form),
}

impl W {
    /// The word.
    pub const fn value(self) -> u32 {
        match self {
            W::Lit(v) | W::Mark(v, ..) => v,
        }
    }
    pub(crate) fn put(self, s: &mut impl Sink) {
        match self {
            W::Lit(v) => s.word(v),
            W::Mark(v, f, form) => s.mark32(f, form, v),
        }
    }
}

impl R {
    /// The registers it fills (2 for [`R::Wide`]).
    pub const fn words(self) -> u32 {
        match self {
            R::Lit(_) | R::Mark(..) => 1,
            R::Wide(..) => 2,
        }
    }
    pub(crate) fn put(self, s: &mut impl Sink) {
        match self {
            R::Lit(v) => s.word(v),
            R::Mark(v, f, form) => s.mark32(f, form, v),
            R::Wide(v, f, form) => s.mark64(f, form, v),
        }
    }
}

impl D {
    /// The value.
    pub const fn value(self) -> u64 {
        match self {
            D::Lit(v) | D::Mark(v, ..) => v,
        }
    }
    pub(crate) fn put(self, s: &mut impl Sink) {
        match self {
            // CAST: the low and high halves.
            D::Lit(v) => s.words(&[v as u32, (v >> 32) as u32]),
            D::Mark(v, f, form) => s.mark64(f, form, v),
        }
    }
}

/// The header of a packet with a fixed payload of `payload` words, checked at compile time.
const fn fixed(op: u32, payload: u32) -> u32 {
    match raw::header(op, payload - 1) {
        Some(h) => h,
        None => panic!("fixed PM4 packet too long"),
    }
}

/// The largest GPU virtual address bit the packets' address fields hold (48-bit VAs).
pub const VA_BITS: u32 = 48;

/// `addr` as a packet address: aligned to `align` and inside the 48-bit GPU address space.
pub fn check_addr(what: &'static str, addr: u64, align: u64) -> Result<()> {
    if !addr.is_multiple_of(align) {
        return Err(Error::Misaligned { what, value: addr, align });
    }
    if addr >> VA_BITS != 0 {
        return Err(Error::InvalidArgument { what: "amd GPU address beyond 48 bits", value: addr });
    }
    Ok(())
}

fn set_window(s: &mut impl Sink, opcode: u32, offset: u32, window_len: u32, values: &[R]) -> Result<()> {
    let n = values.iter().fold(0u32, |n, v| n.saturating_add(v.words()));
    if n == 0 {
        return Err(Error::InvalidArgument { what: "PM4 register write of no values", value: 0 });
    }
    if offset.checked_add(n).is_none_or(|end| end > window_len) {
        return Err(Error::OutOfBounds {
            what: "PM4 register write past the end of its window",
            offset: u64::from(offset),
            len: u64::from(n),
            limit: u64::from(window_len),
        });
    }
    // payload: the register offset, then the values
    let h = raw::header(opcode, n).ok_or(Error::InvalidArgument {
        what: "PM4 register write: more values than a type-3 packet holds (16383)",
        value: u64::from(n),
    })?;
    s.words(&[h, offset]);
    for &v in values {
        v.put(s);
    }
    Ok(())
}

/// `SET_SH_REG`: write `values` to the consecutive SH registers from dword address `reg`.
///
/// Errors: `reg` outside the SH window, no values, or a run past the window's end.
pub fn set_sh_reg(s: &mut impl Sink, reg: u32, values: &[R]) -> Result<()> {
    match regs::window(reg)? {
        Window::Sh(off) => set_window(s, op::SET_SH_REG, off, regs::SH_REG_END - regs::SH_REG_START, values),
        Window::Uconfig(_) => {
            Err(Error::InvalidArgument { what: "SET_SH_REG of a user-config register", value: u64::from(reg) })
        }
    }
}

/// `SET_UCONFIG_REG`: write `values` to the consecutive user-config registers from `reg`.
///
/// Errors: as [`set_sh_reg`], for the user-config window.
pub fn set_uconfig_reg(s: &mut impl Sink, reg: u32, values: &[R]) -> Result<()> {
    match regs::window(reg)? {
        Window::Uconfig(off) => {
            set_window(s, op::SET_UCONFIG_REG, off, regs::UCONFIG_REG_END - regs::UCONFIG_REG_START, values)
        }
        Window::Sh(_) => {
            Err(Error::InvalidArgument { what: "SET_UCONFIG_REG of an SH register", value: u64::from(reg) })
        }
    }
}

/// A register write by window, as tinygrad's `wreg` picks the packet: `SET_SH_REG` in the SH
/// window, `SET_UCONFIG_REG` in the user-config one.
pub fn set_reg(s: &mut impl Sink, reg: u32, values: &[R]) -> Result<()> {
    match regs::window(reg)? {
        Window::Sh(_) => set_sh_reg(s, reg, values),
        Window::Uconfig(_) => set_uconfig_reg(s, reg, values),
    }
}

const WAIT_REG_MEM: u32 = fixed(op::WAIT_REG_MEM, 6);

/// `WAIT_REG_MEM` on memory: poll the dword at `addr` (4-byte aligned) until
/// `(*addr & mask) function reference` holds, every [`raw::wait_reg_mem::POLL_INTERVAL`].
pub fn wait_reg_mem_mem(s: &mut impl Sink, function: u32, addr: D, reference: W, mask: u32) -> Result<()> {
    check_addr("WAIT_REG_MEM memory address", addr.value(), 4)?;
    s.words(&[WAIT_REG_MEM, wrm::info(function, wrm::SPACE_MEMORY, wrm::OP_WAIT, wrm::ENGINE_ME)]);
    addr.put(s);
    reference.put(s);
    s.words(&[mask, wrm::POLL_INTERVAL]);
    Ok(())
}

/// `WAIT_REG_MEM` write-wait-write on registers: write `reference` to register `write_reg`, then
/// poll register `poll_reg` until `(poll & mask) function reference` (what tinygrad's
/// `memory_barrier` does with the HDP flush request and done registers).
pub fn wait_reg_mem_reg_write(
    s: &mut impl Sink,
    function: u32,
    write_reg: u32,
    poll_reg: u32,
    reference: u32,
    mask: u32,
) {
    s.words(&[
        WAIT_REG_MEM,
        wrm::info(function, wrm::SPACE_REGISTER, wrm::OP_WRITE_WAIT, wrm::ENGINE_ME),
        write_reg,
        poll_reg,
        reference,
        mask,
        wrm::POLL_INTERVAL,
    ]);
}

const ACQUIRE_MEM: u32 = fixed(op::ACQUIRE_MEM, 7);

/// `ACQUIRE_MEM` over `size` bytes from `base` with the `GCR_CNTL` actions `gcr`
/// ([`raw::gcr`]); tinygrad always acquires the whole address space (`base` 0, `size` all ones).
pub fn acquire_mem(s: &mut impl Sink, base: u64, size: u64, gcr: u32) {
    // CAST: the low and high halves.
    s.words(&[ACQUIRE_MEM, 0, size as u32, (size >> 32) as u32, base as u32, (base >> 32) as u32, 0, gcr]);
}

/// The fields of a `RELEASE_MEM`.
#[derive(Clone, Copy, Debug)]
pub struct ReleaseMem {
    /// The `GCR` cache actions (`raw::release_mem::GCR_*`; 0 for none).
    pub gcr: u32,
    /// `DATA_SEL` (`raw::release_mem::DATA_*`).
    pub data_sel: u32,
    /// `INT_SEL` (`raw::release_mem::INT_*`).
    pub int_sel: u32,
    /// The destination (0 when nothing is written).
    pub addr: D,
    /// The data, low word.
    pub data_lo: W,
    /// The data, high word.
    pub data_hi: W,
    /// The interrupt context id.
    pub ctxid: u32,
}

const RELEASE_MEM: u32 = fixed(op::RELEASE_MEM, 7);

/// `RELEASE_MEM` at the end-of-pipe `CACHE_FLUSH_AND_INV_TS_EVENT`, as tinygrad's
/// `release_mem` writes it. The address must be 4-byte aligned, 8 for 64-bit data and the clock.
pub fn release_mem(s: &mut impl Sink, r: ReleaseMem) -> Result<()> {
    let align = if matches!(r.data_sel, rm::DATA_64 | rm::DATA_GPU_CLOCK) { 8 } else { 4 };
    check_addr("RELEASE_MEM address", r.addr.value(), align)?;
    s.words(&[
        RELEASE_MEM,
        rm::event(raw::event::CACHE_FLUSH_AND_INV_TS_EVENT, rm::EVENT_INDEX_END_OF_PIPE, r.gcr),
        rm::select(r.data_sel, r.int_sel),
    ]);
    r.addr.put(s);
    r.data_lo.put(s);
    r.data_hi.put(s);
    s.word(r.ctxid);
    Ok(())
}

const DISPATCH_DIRECT: u32 = fixed(op::DISPATCH_DIRECT, 4);

/// `DISPATCH_DIRECT`: `groups` work-groups in x, y, z, started by `initiator`
/// (`COMPUTE_DISPATCH_INITIATOR`).
pub fn dispatch_direct(s: &mut impl Sink, groups: [W; 3], initiator: u32) {
    s.word(DISPATCH_DIRECT);
    for g in groups {
        g.put(s);
    }
    s.word(initiator);
}

const EVENT_WRITE: u32 = fixed(op::EVENT_WRITE, 1);

/// `EVENT_WRITE` of `event_type` with `event_index` (tinygrad: `CS_PARTIAL_FLUSH`, index 4).
pub fn event_write(s: &mut impl Sink, event_type: u32, event_index: u32) {
    s.words(&[EVENT_WRITE, ev::dword(event_type, event_index)]);
}

const INDIRECT_BUFFER: u32 = fixed(op::INDIRECT_BUFFER, 3);

/// The `INDIRECT_BUFFER` packet that runs `dwords` words at `addr` (tinygrad's `bind`):
/// header, address, `dwords | VALID`.
///
/// Errors: `addr` not 4-byte aligned or beyond 48 bits; `dwords` 0 or beyond `IB_SIZE`'s 20 bits.
pub fn indirect_buffer(addr: u64, dwords: u32) -> Result<[u32; 4]> {
    check_addr("PM4 indirect buffer address", addr, 4)?;
    if dwords == 0 || dwords > raw::indirect_buffer::SIZE_MASK {
        return Err(Error::LimitExceeded {
            what: "PM4 indirect buffer dwords (1 to 2^20 - 1, IB_SIZE)",
            value: u64::from(dwords),
            limit: u64::from(raw::indirect_buffer::SIZE_MASK),
        });
    }
    // CAST: the low and high halves.
    Ok([INDIRECT_BUFFER, addr as u32, (addr >> 32) as u32, dwords | raw::indirect_buffer::VALID])
}

/// A `NOP` of `payload` words after its header (the payload is zeros; tinygrad pads a ring's
/// fake IB this way). `payload` is 1 to 16384.
pub fn nop(s: &mut impl Sink, payload: u32) -> Result<()> {
    let h = payload
        .checked_sub(1)
        .and_then(|c| raw::header(op::NOP, c))
        .ok_or(Error::InvalidArgument { what: "PM4 NOP payload (1 to 16384 words)", value: u64::from(payload) })?;
    s.word(h);
    for _ in 0..payload {
        s.word(0);
    }
    Ok(())
}
