//! An SDMA 6.0 queue: SDMA packets from a ring in GPU memory, as tinygrad 0.14's `AMDCopyQueue`
//! emits them.
//!
//! # The ring
//!
//! `ring_bytes` (a power of two) at the ring's address. Unlike the compute ring, SDMA's read and
//! write pointers count **bytes**: the kernel driver keeps dwords and shifts by 2 on the way to
//! and from the pointer memory (Linux `sdma_v6_0.c`: `sdma_v6_0_ring_get_rptr` returns
//! `*rptr >> 2`, `sdma_v6_0_ring_get_wptr` `*wptr >> 2`, `set_wptr` writes `ring->wptr << 2`), and
//! tinygrad's `put_value` counts bytes (`put_value += tail_blit_dword * 4`) and compares it with
//! the read pointer to see the ring's room. Both count up from 0 without wrapping; a doorbell
//! value must be a multiple of 4. Packets may span the ring's end (the driver's ring writes wrap;
//! tinygrad instead fills the tail with zero dwords, one-dword NOPs, and starts at 0). The read
//! pointer (64 bits) is written after every packet at the ring's level; an `INDIRECT` is passed
//! when its IB is done.
//!
//! # Packets
//!
//! `NOP` (a zero dword is one), `COPY LINEAR` (count − 1 bytes; both ranges checked before a byte
//! moves; word by word at host memory speed, a large copy on the shader threads too; ranges that
//! overlap in host memory through a 1 MiB buffer, from the end down when the destination starts
//! inside the source or the header's `backwards` bit is set — `memmove` without the bit —
//! undefined on hardware; [`MemView::copy`]),
//! `WRITE LINEAR` (count − 1 dwords), `FENCE` (a 32-bit write), `TRAP` (an interrupt, its 28-bit
//! context the event id), `POLL_REGMEM` (memory with function and mask, resumable like
//! `WAIT_REG_MEM`; the register form only as the HDP flush), `TIMESTAMP GET_GLOBAL` (64 bits at
//! 100 MHz), `INDIRECT` (one level, base 32-byte aligned, the packet ending on an 8-dword
//! boundary of the ring). Faults as the compute CP's: the queue stops with a [`QueueFault`].

pub mod packets;

use crate::cp::pm4::{FUNC_ALWAYS, FUNC_EQ, FUNC_GE, FUNC_GT, FUNC_LE, FUNC_LT, FUNC_NE};
use crate::cp::{QueueStats, Run};
use crate::fault::{Engine, QueueFault, QueueId, What, Where};
use crate::gpu::Shared;
use crate::memory::{MemFault, MemView, SPREAD_MIN_BYTES};
use crate::trace::Packet;
use packets::*;
use std::sync::PoisonError;
use std::time::Instant;

/// Bytes an overlapping `COPY LINEAR` moves per step (through a buffer); one whose source and
/// destination are apart copies word by word, a large one on the shader core's threads too
/// ([`MemView::copy`]).
pub use crate::memory::COPY_CHUNK_BYTES;

/// An SDMA queue as created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdmaQueueDesc {
    /// The ring's address (dword-aligned).
    pub ring: u64,
    /// Its size in bytes (a power of two, at least 256: an IB packet's alignment needs room).
    pub ring_bytes: u64,
    /// Where the engine writes its 64-bit read pointer (bytes).
    pub rptr: u64,
    /// Where the host writes its 64-bit write pointer (bytes).
    pub wptr: u64,
}

#[derive(Clone, Copy, Debug)]
struct Ib {
    va: u64,
    dwords: u64,
    pos: u64,
}

enum Flow {
    Next,
    Wait(String),
    Call(Ib),
}

/// One SDMA queue's state.
#[derive(Debug)]
pub struct SdmaQueue {
    id: QueueId,
    desc: SdmaQueueDesc,
    ring_dwords: u64,
    rptr: u64,
    wptr: u64,
    ib: Option<Ib>,
    wait_since: Option<Instant>,
    fault: Option<QueueFault>,
    stats: QueueStats,
}

fn mem(what: &'static str) -> impl FnOnce(MemFault) -> What {
    move |fault| What::Memory { fault, what }
}

fn malformed(s: impl Into<String>) -> What {
    What::Malformed(s.into())
}

fn addr(lo: u32, hi: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

impl SdmaQueue {
    /// A queue over `desc` (checked by the caller), its read pointer at 0.
    pub fn new(id: QueueId, desc: SdmaQueueDesc) -> Self {
        Self {
            id,
            desc,
            ring_dwords: desc.ring_bytes / 4,
            rptr: 0,
            wptr: 0,
            ib: None,
            wait_since: None,
            fault: None,
            stats: QueueStats::default(),
        }
    }

    /// Its id.
    pub fn id(&self) -> QueueId {
        self.id
    }

    /// Whether it is inside an IB.
    pub fn in_ib(&self) -> bool {
        self.ib.is_some()
    }

    /// Its descriptor.
    pub fn desc(&self) -> &SdmaQueueDesc {
        &self.desc
    }

    /// The fault that stopped it.
    pub fn fault(&self) -> Option<&QueueFault> {
        self.fault.as_ref()
    }

    /// What it executed.
    pub fn stats(&self) -> QueueStats {
        self.stats
    }

    /// Read and write pointers (bytes).
    pub fn pointers(&self) -> (u64, u64) {
        (self.rptr, self.wptr)
    }

    /// Whether it is stopped at a poll.
    pub fn blocked(&self) -> bool {
        self.wait_since.is_some()
    }

    fn here(&self) -> Where {
        match self.ib {
            Some(ib) => Where::Ib { va: ib.va, dword: ib.pos, level: 1 },
            None => Where::Ring { ptr: self.rptr, index: (self.rptr / 4) % self.ring_dwords },
        }
    }

    fn stop(&mut self, sh: &Shared, at: Where, header: Option<u32>, what: What) -> Run {
        let f = QueueFault { queue: self.id, engine: Engine::Sdma, at, header, what };
        sh.raise(&f);
        self.fault = Some(f);
        self.wait_since = None;
        Run::Faulted
    }

    fn left(&self) -> u64 {
        match self.ib {
            Some(ib) => ib.dwords - ib.pos,
            None => (self.wptr - self.rptr) / 4,
        }
    }

    fn fetch(&self, view: &mut MemView, k: u64) -> Result<u32, What> {
        let (a, what) = match self.ib {
            Some(ib) => (ib.va + 4 * (ib.pos + k), "fetching from an IB"),
            None => (self.desc.ring + 4 * ((self.rptr / 4 + k) % self.ring_dwords), "fetching from the ring"),
        };
        view.read_u32(a).map_err(mem(what))
    }

    /// Dwords `k..k + out.len()` of the packet: one run of the IB, or of the ring up to its end
    /// and then from its start; a run that faults is fetched dword by dword for the report.
    fn fetch_run(&self, view: &mut MemView, k: u64, out: &mut [u32]) -> Result<(), What> {
        let ok = match self.ib {
            Some(ib) => view.read_words(ib.va + 4 * (ib.pos + k), out).is_ok(),
            None => {
                let first = (self.rptr / 4 + k) % self.ring_dwords;
                // CAST: at most out.len().
                let (a, b) = out.split_at_mut(((self.ring_dwords - first) as usize).min(out.len()));
                view.read_words(self.desc.ring + 4 * first, a).is_ok() && view.read_words(self.desc.ring, b).is_ok()
            }
        };
        if !ok {
            for (i, w) in out.iter_mut().enumerate() {
                // CAST: usize → u64, widening.
                *w = self.fetch(view, k + i as u64)?;
            }
        }
        Ok(())
    }

    fn advance(&mut self, view: &mut MemView, dwords: u64) -> Result<(), What> {
        match self.ib.as_mut() {
            Some(ib) => {
                ib.pos += dwords;
                Ok(())
            }
            None => {
                self.rptr += 4 * dwords;
                view.write_u64(self.desc.rptr, self.rptr).map_err(mem("writing the read pointer"))
            }
        }
    }

    /// Run packets until the write pointer `doorbell` (bytes), a poll that does not hold, or a
    /// fault.
    pub(crate) fn run(&mut self, sh: &Shared, doorbell: u64) -> Run {
        if self.fault.is_some() {
            return Run::Faulted;
        }
        if doorbell != self.wptr {
            let bad = if !doorbell.is_multiple_of(4) {
                Some(format!("write pointer {doorbell} is not a multiple of 4 bytes"))
            } else if doorbell < self.rptr || doorbell < self.wptr {
                Some(format!(
                    "write pointer {doorbell} is behind the read pointer {} / the last write pointer {}",
                    self.rptr, self.wptr
                ))
            } else if doorbell - self.rptr > self.desc.ring_bytes {
                Some(format!(
                    "write pointer {doorbell} is more than the ring's {} bytes past the read pointer {}",
                    self.desc.ring_bytes, self.rptr
                ))
            } else {
                None
            };
            if let Some(s) = bad {
                return self.stop(sh, Where::Doorbell { value: doorbell }, None, What::Pointer(s));
            }
            self.wptr = doorbell;
        }
        let mut packets = 0u64;
        loop {
            let mut view = sh.mem.view();
            if let Some(ib) = self.ib
                && ib.pos >= ib.dwords
            {
                self.ib = None;
                if let Err(e) = self.advance(&mut view, 6) {
                    return self.stop(sh, self.here(), None, e);
                }
            }
            if self.ib.is_none() && self.rptr == self.wptr {
                return Run::Idle;
            }
            if packets >= sh.config.packet_budget {
                return self.stop(sh, self.here(), None, What::Budget { packets });
            }
            let at = self.here();
            let header = match self.fetch(&mut view, 0) {
                Ok(h) => h,
                Err(e) => return self.stop(sh, at, None, e),
            };
            match self.packet(sh, &mut view, header) {
                Ok((len, Flow::Next)) => {
                    self.wait_since = None;
                    if let Err(e) = self.advance(&mut view, len) {
                        return self.stop(sh, at, Some(header), e);
                    }
                }
                Ok((_, Flow::Wait(what))) => {
                    let since = *self.wait_since.get_or_insert_with(Instant::now);
                    let waited = since.elapsed();
                    if sh.config.hang_timeout.is_some_and(|t| waited >= t) {
                        return self.stop(sh, at, Some(header), What::Hang { waited, what });
                    }
                    return Run::Blocked;
                }
                Ok((_, Flow::Call(ib))) => {
                    self.wait_since = None;
                    self.ib = Some(ib);
                }
                Err(e) => return self.stop(sh, at, Some(header), e),
            }
            packets += 1;
            self.stats.packets += 1;
        }
    }

    fn packet(&mut self, sh: &Shared, view: &mut MemView, h: u32) -> Result<(u64, Flow), What> {
        let op = h & OP_MASK;
        let sub = (h >> SUB_OP_SHIFT) & 0xff;
        let have = self.left();
        let len: u64 = match op {
            OP_NOP => 1 + u64::from((h >> NOP_COUNT_SHIFT) & NOP_COUNT_MASK),
            OP_COPY => 7,
            OP_WRITE => {
                if have < 4 {
                    return Err(What::Truncated { need: 4, have });
                }
                5 + u64::from(self.fetch(view, 3)? & WRITE_COUNT_MASK)
            }
            OP_INDIRECT => 6,
            OP_FENCE => 4,
            OP_TRAP => 2,
            OP_POLL_REGMEM => 6,
            OP_TIMESTAMP => 3,
            _ => {
                return Err(What::UnknownOpcode {
                    opcode: op,
                    sub_op: Some(sub),
                    name: KNOWN_UNSIMULATED.iter().find(|(o, _)| *o == op).map(|(_, n)| *n),
                });
            }
        };
        if len > have {
            return Err(What::Truncated { need: len, have });
        }
        let mut b = [0u32; 6];
        // CAST: len ≥ 1; the fixed-size packets take at most 7 dwords.
        let fixed = (len.min(7) - 1) as usize;
        for (k, w) in b.iter_mut().enumerate().take(fixed) {
            *w = self.fetch(view, 1 + k as u64)?;
        }
        let unsupported = |what: &'static str| What::UnknownOpcode { opcode: op, sub_op: Some(sub), name: Some(what) };
        let flow = match op {
            OP_NOP => Flow::Next,
            OP_COPY => {
                if sub != SUB_COPY_LINEAR {
                    return Err(unsupported("COPY (a sub-op other than LINEAR)"));
                }
                let n = u64::from(b[0] & COPY_COUNT_MASK) + 1;
                Self::copy(sh, view, addr(b[2], b[3]), addr(b[4], b[5]), n, h & COPY_BACKWARDS != 0)?;
                Flow::Next
            }
            OP_WRITE => {
                if sub != SUB_WRITE_LINEAR {
                    return Err(unsupported("WRITE (a sub-op other than LINEAR)"));
                }
                let dst = addr(b[0], b[1]);
                if !dst.is_multiple_of(4) {
                    return Err(malformed(format!("WRITE destination {dst:#x} is not dword-aligned")));
                }
                let n = len - 4;
                // CAST: n < 2^20 dwords.
                let mut words = vec![0u32; n as usize];
                self.fetch_run(view, 4, &mut words)?;
                let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                view.write(dst, &data).map_err(mem("WRITE's destination"))?;
                if sh.trace.get().is_some() {
                    let mut body = b[..3].to_vec();
                    body.extend_from_slice(&words);
                    self.traced(sh, h, &body);
                }
                return Ok((len, Flow::Next));
            }
            OP_INDIRECT => {
                if self.ib.is_some() {
                    return Err(malformed("INDIRECT inside an IB (SDMA runs one level of IB)"));
                }
                let ring_dword = self.rptr / 4;
                if !(ring_dword + len).is_multiple_of(INDIRECT_END_ALIGN_DWORDS) {
                    return Err(malformed(format!(
                        "INDIRECT at ring dword {ring_dword} ends at dword {}, not on an 8-dword boundary",
                        ring_dword + len
                    )));
                }
                let va = addr(b[0], b[1]);
                if !va.is_multiple_of(INDIRECT_BASE_ALIGN) {
                    return Err(malformed(format!("INDIRECT base {va:#x} is not 32-byte aligned")));
                }
                let dwords = u64::from(b[2] & INDIRECT_SIZE_MASK);
                if !view.covers(va, 4 * dwords) {
                    let fault = MemFault { va, start: va, len: 4 * dwords, write: false };
                    return Err(What::Memory { fault, what: "the INDIRECT's range" });
                }
                Flow::Call(Ib { va, dwords, pos: 0 })
            }
            OP_FENCE => {
                let dst = addr(b[0], b[1]);
                if !dst.is_multiple_of(4) {
                    return Err(malformed(format!("FENCE address {dst:#x} is not dword-aligned")));
                }
                view.write_u32(dst, b[2]).map_err(mem("FENCE's write"))?;
                Flow::Next
            }
            OP_TRAP => {
                sh.events.interrupt(b[0] & TRAP_CONTEXT_MASK);
                Flow::Next
            }
            OP_POLL_REGMEM => self.poll(view, h, &b)?,
            OP_TIMESTAMP => {
                if sub != SUB_TIMESTAMP_GET_GLOBAL {
                    return Err(unsupported("TIMESTAMP (a sub-op other than GET_GLOBAL)"));
                }
                let dst = addr(b[0], b[1]);
                if !dst.is_multiple_of(8) {
                    return Err(malformed(format!("TIMESTAMP address {dst:#x} is not 8-byte aligned")));
                }
                view.write_u64(dst, sh.clock.now()).map_err(mem("TIMESTAMP's write"))?;
                Flow::Next
            }
            _ => return Err(unsupported("an opcode")),
        };
        if !matches!(flow, Flow::Wait(_)) {
            // A NOP's body is skipped (as the compute CP's is: not listed).
            self.traced(sh, h, if op == OP_NOP { &[] } else { &b[..fixed] });
        }
        Ok((len, flow))
    }

    /// Hand the packet at the fetch position (`h`, `body`) to the GPU's packet sink, if any.
    fn traced(&self, sh: &Shared, h: u32, body: &[u32]) {
        if let Some(t) = sh.trace.get() {
            let addr = match self.ib {
                Some(ib) => ib.va + 4 * ib.pos,
                None => self.desc.ring + 4 * ((self.rptr / 4) % self.ring_dwords),
            };
            let p =
                Packet { queue: self.id, engine: Engine::Sdma, at: self.here(), addr, header: h, body, dispatch: None };
            t.0.packet(&p);
        }
    }

    fn poll(&self, view: &mut MemView, h: u32, b: &[u32; 6]) -> Result<Flow, What> {
        let func = (h >> POLL_FUNC_SHIFT) & 7;
        let (reference, mask) = (b[2], b[3]);
        if h & POLL_MEM == 0 {
            if h & POLL_HDP_FLUSH != 0 {
                // The HDP flush: nothing is cached between host and GPU memory here.
                return Ok(Flow::Next);
            }
            return Err(malformed("POLL_REGMEM on a register (other than the HDP flush) is not simulated"));
        }
        if func == 7 {
            return Err(malformed("POLL_REGMEM compare function 7 is reserved"));
        }
        let a = addr(b[0], b[1]);
        if !a.is_multiple_of(4) {
            return Err(malformed(format!("POLL_REGMEM address {a:#x} is not dword-aligned")));
        }
        let v = view.read_u32(a).map_err(mem("POLL_REGMEM's poll"))?;
        let m = v & mask;
        let ok = match func {
            FUNC_ALWAYS => true,
            FUNC_LT => m < reference,
            FUNC_LE => m <= reference,
            FUNC_EQ => m == reference,
            FUNC_NE => m != reference,
            FUNC_GE => m >= reference,
            FUNC_GT => m > reference,
            _ => true,
        };
        if ok {
            Ok(Flow::Next)
        } else {
            // CAST: a 3-bit field.
            let f = ["always", "<", "<=", "==", "!=", ">=", ">", "reserved"][func as usize];
            Ok(Flow::Wait(format!("memory at {a:#x} & {mask:#x} {f} {reference:#x} (last value {v:#x})")))
        }
    }

    fn copy(sh: &Shared, view: &mut MemView, src: u64, dst: u64, n: u64, backwards: bool) -> Result<(), What> {
        // Both ranges checked (source first) before a byte moves; the fault names the first
        // byte that is not mapped.
        // Large: spread over the shader core's threads as well (the pool its dispatches keep).
        let threads = sh.config.shader_threads;
        let pool = (threads > 1 && n >= SPREAD_MIN_BYTES)
            .then(|| sh.programs.lock().unwrap_or_else(PoisonError::into_inner).pool(threads).ok())
            .flatten();
        view.copy(src, dst, n, backwards, pool.as_deref()).map_err(|fault| What::Memory {
            what: if fault.write { "COPY LINEAR's destination" } else { "COPY LINEAR's source" },
            fault,
        })
    }
}
