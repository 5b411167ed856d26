//! SDMA 6.0 packets as tinygrad 0.14's `AMDCopyQueue` (`tinygrad/runtime/ops_amd.py`) emits them
//! on gfx11, and the [`SdmaEncoder`] that turns core commands into them.
//!
//! | command | packets (tinygrad's method) |
//! |---|---|
//! | copy | `COPY LINEAR` (count = bytes − 1), one per `max_copy_bytes` chunk (`copy`) |
//! | signal | `FENCE` (MTYPE 3) of the value's low dword; for the timeline under KFD a second `FENCE` of the queue event id to its mailbox and a `TRAP` with it as context (`signal`) |
//! | wait | `POLL_REGMEM` memory, `>=`, mask all ones, interval 4, retry 0xfff (`wait`) |
//! | timestamp | `TIMESTAMP` `GET_GLOBAL` (`timestamp`) |
//! | exec, barrier | refused: the SDMA queue neither runs kernels nor has a memory barrier (tinygrad's copy queue defines none); they go on the compute queue |
//!
//! [`indirect`] and [`ib_padding`] are tinygrad's `bind`/`_submit` for an SDMA indirect buffer:
//! the IB's words padded to 8 dwords, the `INDIRECT` packet preceded by the NOPs that make it end
//! on an 8-dword boundary of the ring. [`write()`] is tinygrad's `write` (32 or 64 bits inline).
//!
//! **Marks**: addresses wide `Plain` (a split copy's later chunks `Offset(chunk × max)`); the
//! fence's value and the poll's reference 32-bit `Plain` (tinygrad's SDMA writes and compares
//! one dword: values above `u32::MAX` are refused); a one-chunk copy's count
//! `Fn(`[`forms::copy_count`]`)` of `Size` (a copy of several chunks cannot change its size by a
//! patch: that would change the packet count).

pub mod raw;

use crate::pm4::{D, Interrupt, Sink, W, check_addr};
use hcq::queue::{CmdWriter, Command, Encoder, Field, Form};
use hcq::{Error, Result};
use raw::{Bits, op, subop};

fn bits(b: Bits, v: u32, what: &'static str) -> Result<u32> {
    b.put(v).ok_or(Error::InvalidArgument { what, value: u64::from(v) })
}

const fn header(op: u32, sub_op: u32) -> u32 {
    op | sub_op << raw::HEADER_SUB_OP.shift
}

/// The `COPY LINEAR` count word of a chunk of `bytes` (1 to [`raw::MAX_COPY_BYTES`]).
fn copy_count(bytes: u64) -> Result<u32> {
    match u32::try_from(bytes) {
        Ok(b) if b != 0 && u64::from(b) <= raw::MAX_COPY_BYTES => {
            bits(raw::COPY_LINEAR_COUNT, b - 1, "SDMA copy count")
        }
        _ => Err(Error::LimitExceeded {
            what: "SDMA COPY LINEAR bytes (1 to 2^30 per packet)",
            value: bytes,
            limit: raw::MAX_COPY_BYTES,
        }),
    }
}

/// `COPY LINEAR` of one chunk: `count` is [`forms::copy_count`]'s word (bytes − 1), marked or not.
pub fn copy_linear(s: &mut impl Sink, dst: D, src: D, count: W) -> Result<()> {
    check_addr("SDMA copy source", src.value(), 1)?;
    check_addr("SDMA copy destination", dst.value(), 1)?;
    s.word(header(op::COPY, subop::COPY_LINEAR));
    count.put(s);
    s.word(0);
    src.put(s);
    dst.put(s);
    Ok(())
}

/// `FENCE` (memory type `mtype`): write the dword `value` to `addr` (4-byte aligned) after the
/// packets before it.
pub fn fence(s: &mut impl Sink, addr: D, value: W, mtype: u32) -> Result<()> {
    check_addr("SDMA fence address", addr.value(), 4)?;
    s.word(op::FENCE | bits(raw::FENCE_HEADER_MTYPE, mtype, "SDMA fence MTYPE")?);
    addr.put(s);
    value.put(s);
    Ok(())
}

/// `TRAP`: an interrupt with context id `context` (28 bits).
pub fn trap(s: &mut impl Sink, context: u32) -> Result<()> {
    s.words(&[op::TRAP, bits(raw::TRAP_INT_CONTEXT, context, "SDMA trap context (28 bits)")?]);
    Ok(())
}

/// `POLL_REGMEM` on memory: poll the dword at `addr` until `(*addr & mask) func reference`,
/// every 4, retrying for ever (0xfff), as tinygrad's `wait`.
pub fn poll_regmem_mem(s: &mut impl Sink, func: u32, addr: D, reference: W, mask: u32) -> Result<()> {
    check_addr("SDMA poll address", addr.value(), 4)?;
    s.word(
        op::POLL_REGMEM
            | bits(raw::POLL_REGMEM_HEADER_FUNC, func, "SDMA poll function")?
            | bits(raw::POLL_REGMEM_HEADER_MEM_POLL, 1, "SDMA poll memory")?,
    );
    addr.put(s);
    reference.put(s);
    s.words(&[
        mask,
        bits(raw::POLL_REGMEM_DW5_INTERVAL, raw::POLL_INTERVAL, "SDMA poll interval")?
            | bits(raw::POLL_REGMEM_DW5_RETRY_COUNT, raw::POLL_RETRY, "SDMA poll retries")?,
    ]);
    Ok(())
}

/// `TIMESTAMP` `GET_GLOBAL`: write the 64-bit GPU clock to `addr` (8-byte aligned).
pub fn timestamp_global(s: &mut impl Sink, addr: D) -> Result<()> {
    check_addr("SDMA timestamp address", addr.value(), 8)?;
    s.word(header(op::TIMESTAMP, subop::TIMESTAMP_GET_GLOBAL));
    addr.put(s);
    Ok(())
}

/// `WRITE` linear: the dwords `data` (1 to 2^20) to `addr` (4-byte aligned); tinygrad's
/// `write(b, val, b64)` is this with one or two dwords.
pub fn write(s: &mut impl Sink, addr: u64, data: &[u32]) -> Result<()> {
    check_addr("SDMA write address", addr, 4)?;
    let n = u32::try_from(data.len())
        .ok()
        .and_then(|n| n.checked_sub(1))
        .ok_or(Error::InvalidArgument { what: "SDMA write of no dwords", value: data.len() as u64 })?;
    s.word(header(op::WRITE, subop::WRITE_LINEAR));
    D::Lit(addr).put(s);
    s.word(bits(raw::WRITE_UNTILED_COUNT, n, "SDMA write dwords (1 to 2^20)")?);
    s.words(data);
    Ok(())
}

/// The `INDIRECT` packet that runs the IB of `dwords` words at `addr` under `vmid` (tinygrad's
/// `bind`: VMID 0, no CSA): header, address, size, CSA address 0.
///
/// Errors: `addr` not 32-byte aligned (the engine drops its low 5 bits) or beyond 48 bits;
/// `dwords` 0, not a multiple of 8 (pad the IB with [`pad_ib`]) or beyond the 20-bit size; a
/// VMID beyond 4 bits.
pub fn indirect(addr: u64, dwords: u32, vmid: u32) -> Result<[u32; 6]> {
    check_addr("SDMA indirect buffer address", addr, 32)?;
    if dwords == 0 || !(dwords as usize).is_multiple_of(raw::IB_ALIGN_DWORDS) || dwords > raw::INDIRECT_IB_SIZE.mask {
        return Err(Error::InvalidArgument {
            what: "SDMA indirect buffer dwords (a non-zero multiple of 8, below 2^20)",
            value: u64::from(dwords),
        });
    }
    let h = op::INDIRECT | bits(raw::INDIRECT_HEADER_VMID, vmid, "SDMA indirect VMID (4 bits)")?;
    // CAST: the low and high halves.
    Ok([h, addr as u32, (addr >> 32) as u32, dwords, 0, 0])
}

/// Pad an IB's words with NOPs (zeros) to a multiple of 8 dwords, as tinygrad's `bind` does.
pub fn pad_ib(words: &mut alloc::vec::Vec<u32>) {
    let n = words.len().next_multiple_of(raw::IB_ALIGN_DWORDS);
    words.resize(n, op::NOP);
}

/// The NOP dwords to write before an [`indirect`] packet placed at dword `ring_pos` of a ring
/// (the write pointer in dwords), so that the packet ends on an 8-dword boundary (tinygrad's
/// `_submit`). Wrapping at the ring's end is the ring's business.
pub const fn ib_padding(ring_pos: usize) -> usize {
    let end = (ring_pos + 6) % raw::IB_ALIGN_DWORDS;
    (raw::IB_ALIGN_DWORDS - end) % raw::IB_ALIGN_DWORDS
}

/// The derived forms of [`SdmaEncoder`]'s marks (`Form::Fn`): a command that does not fit gives
/// [`forms::INVALID`], which the core's patch refuses as a value that does not fit its word.
pub mod forms {
    use hcq::queue::Command;

    /// Beyond 32 bits: refused by the core's `Mark::eval`.
    pub const INVALID: u64 = u64::MAX;

    /// A one-chunk copy's `COPY LINEAR` count: bytes − 1, for 1 to 2^30 bytes.
    pub fn copy_count(c: &Command) -> u64 {
        match *c {
            Command::Copy { bytes, .. } => super::copy_count(bytes).map_or(INVALID, u64::from),
            _ => INVALID,
        }
    }
}

/// The SDMA encoder's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdmaConfig {
    /// The most bytes one `COPY LINEAR` moves; longer copies are split (tinygrad:
    /// `0x40000000` on SDMA 5 and later). 1 to [`raw::MAX_COPY_BYTES`].
    pub max_copy_bytes: u64,
    /// The KFD queue event, when the timeline's signals should interrupt.
    pub interrupt: Option<Interrupt>,
}

impl Default for SdmaConfig {
    fn default() -> Self {
        Self { max_copy_bytes: raw::MAX_COPY_BYTES, interrupt: None }
    }
}

/// The SDMA 6.0 copy queue encoder; see the [module docs](self).
#[derive(Debug)]
pub struct SdmaEncoder {
    cfg: SdmaConfig,
}

impl SdmaEncoder {
    /// An encoder with `cfg`.
    ///
    /// Errors: `max_copy_bytes` 0 or above [`raw::MAX_COPY_BYTES`]; an interrupt mailbox or
    /// timeline not 8-byte aligned.
    pub fn new(cfg: SdmaConfig) -> Result<SdmaEncoder> {
        if cfg.max_copy_bytes == 0 || cfg.max_copy_bytes > raw::MAX_COPY_BYTES {
            return Err(Error::LimitExceeded {
                what: "SDMA max_copy_bytes (1 to 2^30, COPY LINEAR's count)",
                value: cfg.max_copy_bytes,
                limit: raw::MAX_COPY_BYTES,
            });
        }
        if let Some(irq) = cfg.interrupt {
            check_addr("SDMA queue event mailbox", irq.mailbox, 8)?;
            check_addr("SDMA timeline signal address", irq.timeline, 8)?;
        }
        Ok(SdmaEncoder { cfg })
    }

    /// The configuration.
    pub fn config(&self) -> SdmaConfig {
        self.cfg
    }

    fn interrupt_for(&self, addr: u64) -> Option<Interrupt> {
        self.cfg.interrupt.filter(|irq| irq.timeline == addr)
    }

    fn check_value(what: &'static str, value: u64) -> Result<u32> {
        u32::try_from(value).map_err(|_| Error::InvalidArgument { what, value })
    }

    /// The number of `COPY LINEAR` packets a copy of `bytes` from `src` to `dst` takes.
    ///
    /// Errors: 0 bytes; a range that leaves the 48-bit address space.
    pub fn copy_chunks(&self, dst: u64, src: u64, bytes: u64) -> Result<u64> {
        if bytes == 0 {
            return Err(Error::InvalidArgument { what: "SDMA copy of 0 bytes", value: 0 });
        }
        for (what, a) in
            [("SDMA copy source range beyond 48 bits", src), ("SDMA copy destination range beyond 48 bits", dst)]
        {
            if a.checked_add(bytes).is_none_or(|end| end > 1 << crate::pm4::VA_BITS) {
                return Err(Error::OutOfBounds { what, offset: a, len: bytes, limit: 1 << crate::pm4::VA_BITS });
            }
        }
        Ok(bytes.div_ceil(self.cfg.max_copy_bytes))
    }

    /// Encode `cmd` into `s`.
    pub fn encode_to(&self, cmd: &Command, s: &mut impl Sink) -> Result<()> {
        match *cmd {
            Command::Copy { dst, src, bytes } => {
                let chunks = self.copy_chunks(dst, src, bytes)?;
                let max = self.cfg.max_copy_bytes;
                for i in 0..chunks {
                    let at = i * max;
                    let n = (bytes - at).min(max);
                    let count = copy_count(n)?;
                    // CAST: an offset below 2^48.
                    let form = if i == 0 { Form::Plain } else { Form::Offset(at as i64) };
                    let count = if chunks == 1 {
                        W::Mark(count, Field::Size, Form::Fn(forms::copy_count))
                    } else {
                        W::Lit(count)
                    };
                    copy_linear(s, D::Mark(dst + at, Field::Dst, form), D::Mark(src + at, Field::Src, form), count)?;
                }
                Ok(())
            }
            Command::Signal { addr, value } => {
                check_addr("SDMA signal address", addr, 8)?;
                let v = Self::check_value("SDMA signal value beyond 32 bits (FENCE writes one dword)", value)?;
                fence(
                    s,
                    D::Mark(addr, Field::Addr, Form::Plain),
                    W::Mark(v, Field::Value, Form::Plain),
                    raw::FENCE_MTYPE_GFX11,
                )?;
                if let Some(irq) = self.interrupt_for(addr) {
                    fence(s, D::Lit(irq.mailbox), W::Lit(irq.event_id), raw::FENCE_MTYPE_GFX11)?;
                    trap(s, irq.event_id)?;
                }
                Ok(())
            }
            Command::Wait { addr, value } => {
                check_addr("SDMA wait address", addr, 4)?;
                let v = Self::check_value("SDMA wait value beyond 32 bits (POLL_REGMEM compares one dword)", value)?;
                poll_regmem_mem(
                    s,
                    raw::FUNC_GEQ,
                    D::Mark(addr, Field::Addr, Form::Plain),
                    W::Mark(v, Field::Value, Form::Plain),
                    u32::MAX,
                )
            }
            Command::Timestamp { addr } => timestamp_global(s, D::Mark(addr, Field::Addr, Form::Plain)),
            Command::Exec { program, .. } => Err(Error::Unsupported {
                what: "amd SDMA copy queue: exec commands go to the compute (PM4) queue",
                value: program,
            }),
            Command::Barrier => Err(Error::Unsupported {
                what: "amd SDMA copy queue: no memory barrier (put it on the compute (PM4) queue)",
                value: 0,
            }),
        }
    }
}

/// Adapter from [`Sink`] to the core's [`CmdWriter`].
struct CoreSink<'a, 'b> {
    w: &'a mut CmdWriter<'b>,
}

impl Sink for CoreSink<'_, '_> {
    fn word(&mut self, w: u32) {
        self.w.word(w);
    }
    fn words(&mut self, ws: &[u32]) {
        self.w.words(ws);
    }
    fn mark32(&mut self, field: Field, form: Form, w: u32) {
        self.w.computed32(field, form, w);
    }
    fn mark64(&mut self, field: Field, form: Form, v: u64) {
        self.w.computed64(field, form, v);
    }
}

impl Encoder for SdmaEncoder {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        self.encode_to(cmd, &mut CoreSink { w })
    }

    /// The checks [`SdmaEncoder::encode_to`] makes of the patched field: addresses (alignment,
    /// 48 bits, a copy's range), a signal's address not becoming the interrupting timeline's,
    /// a copy size within one `COPY LINEAR` of `max_copy_bytes` (the only copies whose size is
    /// marked are one-chunk copies).
    fn check_patch(&self, cmd: &Command, field: Field) -> Result<()> {
        match (*cmd, field) {
            (Command::Wait { addr, .. }, Field::Addr) => check_addr("SDMA wait address", addr, 4),
            (Command::Signal { addr, .. }, Field::Addr) => {
                check_addr("SDMA signal address", addr, 8)?;
                match self.interrupt_for(addr) {
                    Some(_) => Err(Error::InvalidArgument {
                        what: "SDMA signal: patching an address to the timeline's (its interrupt is fixed at encoding)",
                        value: addr,
                    }),
                    None => Ok(()),
                }
            }
            (Command::Timestamp { addr }, Field::Addr) => check_addr("SDMA timestamp address", addr, 8),
            (Command::Copy { dst, src, bytes }, Field::Dst | Field::Src) => {
                self.copy_chunks(dst, src, bytes).map(|_| ())
            }
            (Command::Copy { dst, src, bytes }, Field::Size) => {
                if self.copy_chunks(dst, src, bytes)? > 1 {
                    return Err(Error::LimitExceeded {
                        what: "SDMA copy patched beyond one COPY LINEAR (max_copy_bytes): it would need more packets",
                        value: bytes,
                        limit: self.cfg.max_copy_bytes,
                    });
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
