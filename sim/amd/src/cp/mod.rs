//! The compute command processor (one MEC queue): PM4 type-3 packets from a ring in GPU memory
//! and the indirect buffers it calls, as tinygrad 0.14's `AMDComputeQueue` emits them.
//!
//! # The ring
//!
//! `ring_dwords` (a power of two) dwords at the ring's address; the read and write pointers count
//! dwords from 0 without wrapping (tinygrad's `put_value`; dword `p` of the stream is ring index
//! `p % ring_dwords`, so packets may span the end of the ring). A doorbell write sets the write
//! pointer and the CP runs packets until its read pointer reaches it. After each packet at the
//! ring's level the read pointer is written to the queue's rptr address (64 bits); an
//! `INDIRECT_BUFFER` in the ring is passed only when its IB (and every IB it called) is done, so
//! the host never sees the ring words of unfinished work consumed.
//!
//! # Packets
//!
//! `NOP` (count 0x3fff: one dword), `SET_SH_REG` and `SET_UCONFIG_REG` into the queue's
//! [`RegFile`] (windows checked), `ACQUIRE_MEM` and `EVENT_WRITE` (caches: a no-op, the simulator's
//! memory is coherent; `EVENT_WRITE` forms that write memory are refused), `RELEASE_MEM` (the data
//! select's value, then the interrupt), `WAIT_REG_MEM` (memory or register, every compare
//! function; the HDP flush's write-wait-write form), `COPY_DATA` (register, memory, immediate and
//! clock sources; register or memory destinations), `INDIRECT_BUFFER` (IB1 and IB2, chaining),
//! `PRED_EXEC` (in IBs, XCC 0), and `DISPATCH_DIRECT` ([`dispatch`]).
//!
//! # Stopping and resuming
//!
//! A wait whose condition is false leaves the CP at that packet: a run (`Gpu::process`) returns
//! [`Run::Blocked`] and a later run (a doorbell, or the CP thread's poll) evaluates it again;
//! once it has failed for longer than the hang timeout the queue faults with [`What::Hang`].
//! Anything wrong — an unknown opcode, a packet longer than what is left, a register outside its
//! window, an access outside memory, a program that does not load, a shader fault, IBs deeper
//! than IB2 — stops the queue with a [`QueueFault`] naming the queue, the packet's place and
//! header, and what; the queue then ignores its doorbell (other queues keep running).

pub mod dispatch;
pub mod pm4;
pub mod regs;

use crate::fault::{Engine, QueueFault, QueueId, What, Where};
use crate::gpu::Shared;
use crate::memory::{MemFault, MemView};
use crate::trace::{DispatchSeen, Packet};
use pm4::*;
use regs::RegFile;
use std::time::Instant;

/// Deepest IB level: the ring calls IB1, which may call IB2 (the CP's two IB fetchers).
pub const MAX_IB_LEVEL: u32 = 2;

/// A compute queue as created (what KFD's `CREATE_QUEUE` takes for a PM4 queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputeQueueDesc {
    /// The ring's address (dword-aligned).
    pub ring: u64,
    /// Its size in bytes (a power of two, at least 16).
    pub ring_bytes: u64,
    /// Where the CP writes its 64-bit read pointer (dwords).
    pub rptr: u64,
    /// Where the host writes its 64-bit write pointer (dwords); tinygrad writes it before the
    /// doorbell, and the doorbell's value is what the CP runs to.
    pub wptr: u64,
    /// The end-of-pipe buffer the MEC writes `RELEASE_MEM` events through (0: none; tinygrad
    /// notes a signal then "will NULL pointer", and here it faults).
    pub eop: u64,
    /// Its size in bytes.
    pub eop_bytes: u64,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// The read pointer reached the write pointer.
    Idle,
    /// A wait's condition does not hold.
    Blocked,
    /// The queue faulted (now or before).
    Faulted,
}

/// What a queue has executed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets completed.
    pub packets: u64,
    /// Dispatches run.
    pub dispatches: u64,
    /// Work-groups run.
    pub groups: u64,
    /// Shader instructions executed.
    pub insts: u64,
    /// Lane-instructions executed.
    pub lane_insts: u64,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    va: u64,
    dwords: u64,
    pos: u64,
    /// Dwords of the INDIRECT_BUFFER packet that called it: its caller moves past them on return.
    ret: u64,
    /// Dwords left of the `PRED_EXEC` run in progress (its packets execute).
    pred: u64,
}

/// What a packet asks of the fetcher.
enum Flow {
    Next,
    Wait(String),
    Call { va: u64, dwords: u64, chain: bool },
    Skip(u64),
}

/// One PM4 compute queue's state.
#[derive(Debug)]
pub struct ComputeQueue {
    id: QueueId,
    desc: ComputeQueueDesc,
    ring_dwords: u64,
    rptr: u64,
    wptr: u64,
    frames: Vec<Frame>,
    regs: RegFile,
    wait_since: Option<Instant>,
    fault: Option<QueueFault>,
    body: Vec<u32>,
    stats: QueueStats,
    /// The last `DISPATCH_DIRECT`'s program and user data, kept only while packets are traced.
    seen: Option<DispatchSeen>,
}

fn mem(what: &'static str) -> impl FnOnce(MemFault) -> What {
    move |fault| What::Memory { fault, what }
}

fn malformed(s: impl Into<String>) -> What {
    What::Malformed(s.into())
}

fn compare(func: u32, v: u32, reference: u32) -> bool {
    match func {
        FUNC_LT => v < reference,
        FUNC_LE => v <= reference,
        FUNC_EQ => v == reference,
        FUNC_NE => v != reference,
        FUNC_GE => v >= reference,
        FUNC_GT => v > reference,
        _ => true,
    }
}

fn func_name(func: u32) -> &'static str {
    // CAST: a 3-bit field.
    ["always", "<", "<=", "==", "!=", ">=", ">", "reserved"][(func & 7) as usize]
}

impl ComputeQueue {
    /// A queue over `desc` (checked by the caller), its read pointer at 0.
    pub fn new(id: QueueId, desc: ComputeQueueDesc) -> Self {
        Self {
            id,
            desc,
            ring_dwords: desc.ring_bytes / 4,
            rptr: 0,
            wptr: 0,
            frames: Vec::new(),
            regs: RegFile::new(),
            wait_since: None,
            fault: None,
            body: Vec::new(),
            stats: QueueStats::default(),
            seen: None,
        }
    }

    /// Its id.
    pub fn id(&self) -> QueueId {
        self.id
    }

    /// Whether it is inside an IB.
    pub fn in_ib(&self) -> bool {
        !self.frames.is_empty()
    }

    /// Its descriptor.
    pub fn desc(&self) -> &ComputeQueueDesc {
        &self.desc
    }

    /// The fault that stopped it.
    pub fn fault(&self) -> Option<&QueueFault> {
        self.fault.as_ref()
    }

    /// Its registers.
    pub fn regs(&self) -> &RegFile {
        &self.regs
    }

    /// What it executed.
    pub fn stats(&self) -> QueueStats {
        self.stats
    }

    /// Read and write pointers (dwords).
    pub fn pointers(&self) -> (u64, u64) {
        (self.rptr, self.wptr)
    }

    /// Whether it is stopped at a wait.
    pub fn blocked(&self) -> bool {
        self.wait_since.is_some()
    }

    fn here(&self) -> Where {
        match self.frames.last() {
            // CAST: a level ≤ MAX_IB_LEVEL.
            Some(f) => Where::Ib { va: f.va, dword: f.pos, level: self.frames.len() as u32 },
            None => Where::Ring { ptr: self.rptr, index: self.rptr % self.ring_dwords },
        }
    }

    fn stop(&mut self, sh: &Shared, at: Where, header: Option<u32>, what: What) -> Run {
        let f = QueueFault { queue: self.id, engine: Engine::Compute, at, header, what };
        sh.raise(&f);
        self.fault = Some(f);
        self.wait_since = None;
        Run::Faulted
    }

    /// Dwords left in the current buffer, and the address of its dword `k` from the packet.
    fn left(&self) -> u64 {
        match self.frames.last() {
            Some(f) => f.dwords - f.pos,
            None => self.wptr - self.rptr,
        }
    }

    fn word_addr(&self, k: u64) -> u64 {
        match self.frames.last() {
            Some(f) => f.va + 4 * (f.pos + k),
            None => self.desc.ring + 4 * ((self.rptr + k) % self.ring_dwords),
        }
    }

    fn fetch(&self, view: &mut MemView, k: u64) -> Result<u32, What> {
        let what = if self.frames.is_empty() { "fetching from the ring" } else { "fetching from an IB" };
        view.read_u32(self.word_addr(k)).map_err(mem(what))
    }

    /// Move past `n` dwords of the current buffer (the ring: and report the read pointer).
    fn advance(&mut self, view: &mut MemView, n: u64) -> Result<(), What> {
        match self.frames.last_mut() {
            Some(f) => {
                f.pos += n;
                f.pred = f.pred.saturating_sub(n);
                Ok(())
            }
            None => {
                self.rptr += n;
                view.write_u64(self.desc.rptr, self.rptr).map_err(mem("writing the read pointer"))
            }
        }
    }

    /// Run packets until the write pointer `doorbell`, a wait that does not hold, or a fault.
    pub(crate) fn run(&mut self, sh: &Shared, doorbell: u64) -> Run {
        if self.fault.is_some() {
            return Run::Faulted;
        }
        if doorbell != self.wptr {
            if doorbell < self.rptr || doorbell < self.wptr {
                let what = What::Pointer(format!(
                    "write pointer {doorbell} is behind the read pointer {} / the last write pointer {}",
                    self.rptr, self.wptr
                ));
                return self.stop(sh, Where::Doorbell { value: doorbell }, None, what);
            }
            if doorbell - self.rptr > self.ring_dwords {
                let what = What::Pointer(format!(
                    "write pointer {doorbell} is more than the ring's {} dwords past the read pointer {}",
                    self.ring_dwords, self.rptr
                ));
                return self.stop(sh, Where::Doorbell { value: doorbell }, None, what);
            }
            self.wptr = doorbell;
        }
        let mut packets = 0u64;
        loop {
            let mut view = sh.mem.view();
            // Return from finished IBs.
            while let Some(f) = self.frames.last().copied()
                && f.pos >= f.dwords
            {
                self.frames.pop();
                if let Err(e) = self.advance(&mut view, f.ret) {
                    return self.stop(sh, self.here(), None, e);
                }
            }
            if self.frames.is_empty() && self.rptr == self.wptr {
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
                Ok((len, Flow::Skip(n))) => {
                    self.wait_since = None;
                    if let Err(e) = self.advance(&mut view, len + n) {
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
                Ok((len, Flow::Call { va, dwords, chain })) => {
                    self.wait_since = None;
                    if chain {
                        // The IB replaces the one the packet is in; its caller's return is kept.
                        if let Some(f) = self.frames.last_mut() {
                            let ret = f.ret;
                            *f = Frame { va, dwords, pos: 0, ret, pred: 0 };
                        }
                    } else {
                        self.frames.push(Frame { va, dwords, pos: 0, ret: len, pred: 0 });
                    }
                }
                Err(e) => return self.stop(sh, at, Some(header), e),
            }
            packets += 1;
            self.stats.packets += 1;
        }
    }

    /// Decode and execute the packet at the fetch position: its length and what follows.
    fn packet(&mut self, sh: &Shared, view: &mut MemView, h: u32) -> Result<(u64, Flow), What> {
        let ty = packet_type(h);
        if ty != PACKET_TYPE3 {
            return Err(What::NotType3 { ty });
        }
        let op = packet_opcode(h);
        let count = packet_count(h);
        if op == NOP && count == NOP_ONE_DWORD_COUNT {
            self.traced(sh, h, &[]);
            return Ok((1, Flow::Next));
        }
        let len = u64::from(count) + 2;
        let have = self.left();
        if len > have {
            return Err(What::Truncated { need: len, have });
        }
        if let Some(f) = self.frames.last()
            && f.pred > 0
            && len > f.pred
        {
            return Err(malformed(format!("a {len}-dword packet runs past its PRED_EXEC's last {} dwords", f.pred)));
        }
        if op == NOP {
            self.traced(sh, h, &[]);
            return Ok((len, Flow::Next));
        }
        let mut body = std::mem::take(&mut self.body);
        body.clear();
        // CAST: count + 1 ≤ 2^14 body dwords.
        body.resize(count as usize + 1, 0);
        let mut r = Ok(());
        for (k, w) in body.iter_mut().enumerate() {
            match self.fetch(view, 1 + k as u64) {
                Ok(v) => *w = v,
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        let out = r.and_then(|()| self.execute(sh, view, op, &body));
        if matches!(out, Ok(Flow::Next | Flow::Call { .. } | Flow::Skip(_))) {
            self.traced(sh, h, &body);
        }
        self.body = body;
        out.map(|f| (len, f))
    }

    /// Hand the packet at the fetch position (`h`, `body`) to the GPU's packet sink, if any.
    fn traced(&self, sh: &Shared, h: u32, body: &[u32]) {
        if let Some(t) = sh.trace.get() {
            let dispatch = if packet_opcode(h) == DISPATCH_DIRECT { self.seen.as_ref() } else { None };
            let p = Packet {
                queue: self.id,
                engine: Engine::Compute,
                at: self.here(),
                addr: self.word_addr(0),
                header: h,
                body,
                dispatch,
            };
            t.0.packet(&p);
        }
    }

    fn need(body: &[u32], n: usize, name: &str) -> Result<(), What> {
        if body.len() != n {
            return Err(malformed(format!("{name} takes {n} body dwords (count {}), not {}", n - 1, body.len())));
        }
        Ok(())
    }

    fn execute(&mut self, sh: &Shared, view: &mut MemView, op: u32, b: &[u32]) -> Result<Flow, What> {
        match op {
            SET_SH_REG | SET_UCONFIG_REG => {
                let (lo, hi, name) = if op == SET_SH_REG {
                    (SH_REG_START, SH_REG_END, "SH (SET_SH_REG)")
                } else {
                    (UCONFIG_REG_START, UCONFIG_REG_END, "user-config (SET_UCONFIG_REG)")
                };
                let start = u64::from(lo) + u64::from(b[0] & 0xffff);
                self.regs.write_window(start, &b[1..], lo, hi, name)?;
                Ok(Flow::Next)
            }
            ACQUIRE_MEM => {
                // Cache invalidations and write-backs: memory is coherent here.
                Self::need(b, 7, "ACQUIRE_MEM")?;
                Ok(Flow::Next)
            }
            EVENT_WRITE => {
                if b.len() != 1 {
                    return Err(malformed(format!(
                        "EVENT_WRITE with {} body dwords: the forms that write memory (sample events) are not simulated",
                        b.len()
                    )));
                }
                // CS_PARTIAL_FLUSH and the cache events: dispatches finish before the next packet.
                Ok(Flow::Next)
            }
            RELEASE_MEM => self.release_mem(sh, view, b),
            WAIT_REG_MEM => self.wait_reg_mem(view, b),
            COPY_DATA => self.copy_data(sh, view, b),
            INDIRECT_BUFFER => {
                Self::need(b, 3, "INDIRECT_BUFFER")?;
                if b[0] & 3 != 0 {
                    return Err(malformed(format!("INDIRECT_BUFFER base lo {:#x} is not dword-aligned", b[0])));
                }
                let va = u64::from(b[1]) << 32 | u64::from(b[0]);
                let ctl = b[2];
                if ctl & IB_VALID == 0 {
                    return Err(malformed(format!("INDIRECT_BUFFER control {ctl:#x} lacks the VALID bit (23)")));
                }
                let chain = ctl & IB_CHAIN != 0;
                if chain && self.frames.is_empty() {
                    return Err(malformed("INDIRECT_BUFFER with CHAIN in the ring (only an IB can chain to another)"));
                }
                // CAST: a level ≤ MAX_IB_LEVEL.
                let level = self.frames.len() as u32 + u32::from(!chain);
                if level > MAX_IB_LEVEL {
                    return Err(What::IbDepth { limit: MAX_IB_LEVEL });
                }
                let dwords = u64::from(ctl & IB_SIZE_MASK);
                if !view.covers(va, 4 * dwords) {
                    let fault = MemFault { va, start: va, len: 4 * dwords, write: false };
                    return Err(What::Memory { fault, what: "the INDIRECT_BUFFER's range" });
                }
                Ok(Flow::Call { va, dwords, chain })
            }
            PRED_EXEC => {
                Self::need(b, 1, "PRED_EXEC")?;
                let Some(f) = self.frames.last_mut() else {
                    return Err(malformed(
                        "PRED_EXEC in the ring (the CP executes it only in IBs; tinygrad wraps it in one)",
                    ));
                };
                let n = u64::from(b[0] & PRED_EXEC_COUNT_MASK);
                if n > f.dwords - f.pos - 2 {
                    return Err(What::Truncated { need: n + 2, have: f.dwords - f.pos });
                }
                if b[0] >> PRED_EXEC_XCC_SHIFT & 1 != 0 {
                    // XCC 0 is selected: the covered packets run (and must end where it says).
                    f.pred = n + 2;
                    Ok(Flow::Next)
                } else {
                    Ok(Flow::Skip(n))
                }
            }
            DISPATCH_DIRECT => {
                Self::need(b, 4, "DISPATCH_DIRECT")?;
                let _ = self.regs.write(u64::from(regs::COMPUTE_DISPATCH_INITIATOR), b[3]);
                let s = dispatch::dispatch(sh, &self.regs, [b[0], b[1], b[2]], b[3])?;
                if sh.trace.get().is_some() {
                    self.seen = Some(dispatch::seen(sh, view, &self.regs, b[3]));
                }
                self.stats.dispatches += 1;
                self.stats.groups += s.groups;
                self.stats.insts += s.stats.insts;
                self.stats.lane_insts += s.stats.lane_insts;
                Ok(Flow::Next)
            }
            _ => Err(What::UnknownOpcode {
                opcode: op,
                sub_op: None,
                name: KNOWN_UNSIMULATED.iter().find(|(o, _)| *o == op).map(|(_, n)| *n),
            }),
        }
    }

    fn release_mem(&mut self, sh: &Shared, view: &mut MemView, b: &[u32]) -> Result<Flow, What> {
        Self::need(b, 7, "RELEASE_MEM")?;
        let index = (b[0] >> EVENT_INDEX_SHIFT) & 0xf;
        if index != RELEASE_EVENT_INDEX_EOP && index != RELEASE_EVENT_INDEX_SHADER_DONE {
            return Err(malformed(format!(
                "RELEASE_MEM event index {index} (the MEC takes 5, end of pipe, or 6, shader done)"
            )));
        }
        if self.desc.eop == 0 {
            return Err(malformed(
                "RELEASE_MEM on a queue without an EOP buffer (the MEC writes end-of-pipe events through it)",
            ));
        }
        let dst = (b[1] >> RELEASE_DST_SEL_SHIFT) & 3;
        let int_sel = (b[1] >> RELEASE_INT_SEL_SHIFT) & 7;
        let data_sel = (b[1] >> RELEASE_DATA_SEL_SHIFT) & 7;
        if dst > 1 {
            return Err(malformed(format!("RELEASE_MEM DST_SEL {dst} (the queue's write pointer) is not simulated")));
        }
        let addr = u64::from(b[3]) << 32 | u64::from(b[2]);
        let data = u64::from(b[5]) << 32 | u64::from(b[4]);
        let (value, bytes) = match data_sel {
            DATA_SEL_NONE => (0, 0),
            DATA_SEL_32 => (data & 0xffff_ffff, 4),
            DATA_SEL_64 => (data, 8),
            DATA_SEL_GPU_CLOCK => (sh.clock.now(), 8),
            _ => return Err(malformed(format!("RELEASE_MEM DATA_SEL {data_sel} is not simulated"))),
        };
        if !matches!(
            int_sel,
            INT_SEL_NONE | INT_SEL_SEND | INT_SEL_SEND_AFTER_WRITE | INT_SEL_DATA_AFTER_WRITE | INT_SEL_SEND_CTXID
        ) {
            return Err(malformed(format!("RELEASE_MEM INT_SEL {int_sel} (conditional interrupts) is not simulated")));
        }
        if bytes > 0 {
            if !addr.is_multiple_of(bytes) {
                return Err(malformed(format!("RELEASE_MEM address {addr:#x} is not {bytes}-byte aligned")));
            }
            // CAST: the 32-bit form's value is its low dword.
            let w = if bytes == 4 { view.write_u32(addr, value as u32) } else { view.write_u64(addr, value) };
            w.map_err(mem("RELEASE_MEM's write"))?;
        }
        if matches!(int_sel, INT_SEL_SEND | INT_SEL_SEND_AFTER_WRITE | INT_SEL_SEND_CTXID) {
            sh.events.interrupt(b[6]);
        }
        Ok(Flow::Next)
    }

    fn wait_reg_mem(&mut self, view: &mut MemView, b: &[u32]) -> Result<Flow, What> {
        Self::need(b, 6, "WAIT_REG_MEM")?;
        let ctl = b[0];
        let func = ctl & WAIT_FUNCTION_MASK;
        let space = (ctl >> WAIT_MEM_SPACE_SHIFT) & 3;
        let operation = (ctl >> WAIT_OPERATION_SHIFT) & 3;
        let (reference, mask) = (b[3], b[4]);
        if func == 7 {
            return Err(malformed("WAIT_REG_MEM compare function 7 is reserved"));
        }
        let (v, what) = match (space, operation) {
            (1, 0 | 3) => {
                let addr = u64::from(b[2]) << 32 | u64::from(b[1]);
                if !addr.is_multiple_of(4) {
                    return Err(malformed(format!("WAIT_REG_MEM address {addr:#x} is not dword-aligned")));
                }
                let v = view.read_u32(addr).map_err(mem("WAIT_REG_MEM's poll"))?;
                (v, format!("memory at {addr:#x}"))
            }
            (0, 0) => {
                let reg = u64::from(b[1] & 0x3ffff);
                (self.regs.read(reg)?, format!("register {reg:#x}"))
            }
            (0, 1) => {
                // Write the reference to register 1, then wait on register 2 (the HDP flush:
                // HDP_FLUSH_REQ, then HDP_FLUSH_DONE).
                let (r1, r2) = (u64::from(b[1] & 0x3ffff), u64::from(b[2] & 0x3ffff));
                self.regs.write(r1, reference)?;
                (self.regs.read(r2)?, format!("register {r2:#x}"))
            }
            _ => {
                return Err(malformed(format!(
                    "WAIT_REG_MEM MEM_SPACE {space} with OPERATION {operation} is not a form the MEC runs"
                )));
            }
        };
        if func == FUNC_ALWAYS || compare(func, v & mask, reference) {
            Ok(Flow::Next)
        } else {
            Ok(Flow::Wait(format!("{what} & {mask:#x} {} {reference:#x} (last value {v:#x})", func_name(func))))
        }
    }

    fn copy_data(&mut self, sh: &Shared, view: &mut MemView, b: &[u32]) -> Result<Flow, What> {
        Self::need(b, 5, "COPY_DATA")?;
        let ctl = b[0];
        let src = ctl & COPY_SRC_SEL_MASK;
        let dst = (ctl >> COPY_DST_SEL_SHIFT) & 0xf;
        let wide = ctl & COPY_COUNT_SEL_64 != 0;
        let bytes: u64 = if wide { 8 } else { 4 };
        let src_addr = u64::from(b[2]) << 32 | u64::from(b[1]);
        let value: u64 = match src {
            SEL_REGISTER | SEL_PERFCOUNTER => {
                // Performance counters are registers that do not count here.
                let reg = u64::from(b[1] & 0x3ffff);
                let lo = u64::from(self.regs.read(reg)?);
                if wide { lo | u64::from(self.regs.read(reg + 1)?) << 32 } else { lo }
            }
            SEL_MEMORY => {
                if !src_addr.is_multiple_of(bytes) {
                    return Err(malformed(format!("COPY_DATA source {src_addr:#x} is not {bytes}-byte aligned")));
                }
                let r = if wide { view.read_u64(src_addr) } else { view.read_u32(src_addr).map(u64::from) };
                r.map_err(mem("COPY_DATA's source"))?
            }
            SEL_IMMEDIATE => {
                if wide {
                    src_addr
                } else {
                    u64::from(b[1])
                }
            }
            SEL_GPU_CLOCK | SEL_SYSTEM_CLOCK => sh.clock.now(),
            _ => return Err(malformed(format!("COPY_DATA SRC_SEL {src} is not simulated"))),
        };
        let value = if wide { value } else { value & 0xffff_ffff };
        let dst_addr = u64::from(b[4]) << 32 | u64::from(b[3]);
        match dst {
            SEL_REGISTER => {
                let reg = u64::from(b[3] & 0x3ffff);
                // CAST: the low and high dwords.
                self.regs.write(reg, value as u32)?;
                if wide {
                    self.regs.write(reg + 1, (value >> 32) as u32)?;
                }
            }
            SEL_MEMORY | SEL_IMMEDIATE => {
                if !dst_addr.is_multiple_of(bytes) {
                    return Err(malformed(format!("COPY_DATA destination {dst_addr:#x} is not {bytes}-byte aligned")));
                }
                // CAST: the low dword.
                let w = if wide { view.write_u64(dst_addr, value) } else { view.write_u32(dst_addr, value as u32) };
                w.map_err(mem("COPY_DATA's destination"))?;
            }
            _ => return Err(malformed(format!("COPY_DATA DST_SEL {dst} is not simulated"))),
        }
        Ok(Flow::Next)
    }
}
