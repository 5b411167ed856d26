//! A simulated KGSL: a [`KgslIoctl`] whose GPU objects are host memory and whose submissions
//! run on the simulated Adreno command processor ([`Cp`]) with a pluggable
//! [`ShaderCore`] (the ir3 interpreter, or a test's fake).
//!
//! GPU addresses equal the host addresses of the backing memory (as with `USE_CPU_MAP`).
//! Submissions run in order, synchronously inside `GPU_COMMAND` and again whenever a timestamp
//! is read or awaited (a `CP_WAIT_REG_MEM` on memory the host has not written yet leaves the
//! CP blocked until then, for at most [`HANG_TIMEOUT`]: then, as the kernel driver's dispatcher,
//! it declares a hang, a fault). A CP error — an unknown opcode, bad parity, a fault — is recorded
//! with its IB offset ([`SimKgsl::fault`]); every later wait fails at once with `EDEADLK`
//! (the core sees `DeviceHung`), never after a timeout. So is an IB whose words the host
//! rewrote between `GPU_COMMAND` and the end of its execution (IB memory reused too early).
//! [`SimKgsl::pause`] stalls the CP, as a busy GPU would, so a test can fill the host's IB
//! slots.
//!
//! Where an object's memory comes from is a [`Backing`]: host heap memory by default
//! ([`HeapBacking`]), or, for the virtual device node (`hcq-vkgsl`), a region of a `memfd` that
//! the client maps itself; there the GPU address of a `USE_CPU_MAP` object is the client's
//! mapping, which the device learns later and sets with [`SimKgsl::set_gpu_address`].

use crate::cp::{Cp, GpuMemory, Outcome, ShaderCore, Span};
use crate::dispatch::ArgSlots;
use hcq::mmio::{MmioBus, VolatileRegion, Width};
use hcq_adreno::limits::GpuLimits;
use hcq_ir3::isa::Instr;
use hcq_qcom::Mapping;
use hcq_qcom::kgsl::ioctl::KgslIoctl;
use hcq_qcom::kgsl::uapi::*;
use rustix::io::Errno;
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ptr::NonNull;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use zerocopy::IntoBytes;

/// Page size: GPU objects are page aligned, as KGSL's are.
const PAGE: usize = 4096;

/// Chip id the simulated device reports (Adreno 630, SDM845 v2).
pub const SIM_CHIP_ID: u32 = hcq_adreno::chip::A630_CHIP_ID;

/// Where GPU objects' memory comes from.
pub trait Backing: Send {
    /// Memory for a new object of `bytes` (a multiple of 4096, non-zero), zeroed and page
    /// aligned, valid and exclusively the simulator's until [`Backing::release`]: its object id
    /// (never 0, never one in use) and its start.
    fn alloc(&mut self, bytes: usize) -> Result<(u32, NonNull<u8>), Errno>;
    /// Give back what [`Backing::alloc`] returned for `id`.
    ///
    /// # Safety
    /// `ptr` and `bytes` are the ones `alloc` returned for `id`, released once, and nothing
    /// accesses the range any more.
    unsafe fn release(&mut self, id: u32, ptr: NonNull<u8>, bytes: usize);
}

/// Host heap memory, object ids counted from 1: the in-process simulator's backing.
#[derive(Debug, Default)]
pub struct HeapBacking {
    next_id: u32,
}

impl Backing for HeapBacking {
    fn alloc(&mut self, bytes: usize) -> Result<(u32, NonNull<u8>), Errno> {
        let layout = Layout::from_size_align(bytes, PAGE).map_err(|_| Errno::NOMEM)?;
        if bytes == 0 {
            return Err(Errno::NOMEM);
        }
        // SAFETY: `layout` has a non-zero size (checked above).
        let p = NonNull::new(unsafe { alloc_zeroed(layout) }).ok_or(Errno::NOMEM)?;
        self.next_id = self.next_id.checked_add(1).ok_or(Errno::NOMEM)?;
        Ok((self.next_id, p))
    }

    unsafe fn release(&mut self, _id: u32, ptr: NonNull<u8>, bytes: usize) {
        if let Ok(layout) = Layout::from_size_align(bytes, PAGE) {
            // SAFETY: the caller passes what `alloc` returned, which came from
            // `alloc_zeroed(layout)` with this size and alignment, released once.
            unsafe { dealloc(ptr.as_ptr(), layout) };
        }
    }
}

struct Block {
    region: VolatileRegion,
    /// Owned backing (GPU objects, page aligned like KGSL's); `None` for user memory the
    /// caller owns.
    owned: Option<NonNull<u8>>,
    bytes: usize,
    id: u32,
    mapped: bool,
    freed: bool,
}

// SAFETY: a Block is an address range plus ownership of its backing; all access is volatile
// through `region`, under the simulator's mutex.
unsafe impl Send for Block {}
// SAFETY: through `&Block` only its plain fields are read and `region` (which is `Sync`: volatile
// accesses only) is accessed; `owned` is used only to release the backing, through `&mut`. The
// shader core's threads read GPU memory through `&Memory` while the simulator's mutex is held.
unsafe impl Sync for Block {}

/// GPU memory = the blocks, keyed by GPU (= host) address.
#[derive(Default)]
struct Memory {
    blocks: BTreeMap<u64, Block>,
}

impl Memory {
    fn find(&self, addr: u64) -> hcq::Result<(&VolatileRegion, usize)> {
        self.find_range(addr, 4)
    }

    /// Call `f(region, offset in it, offset in the access, bytes)` for each object-sized piece of
    /// the `len` bytes at `addr` (an access may span adjacent objects), in order; the first piece
    /// outside every object, or an access that wraps the address space, is the error.
    fn for_each_piece(
        &self,
        addr: u64,
        len: usize,
        mut f: impl FnMut(&VolatileRegion, usize, usize, usize) -> hcq::Result<()>,
    ) -> hcq::Result<()> {
        let mut done = 0;
        while done < len {
            let a = addr.checked_add(done as u64).ok_or(hcq::Error::OutOfBounds {
                what: "gpu access wraps around",
                offset: addr,
                len: len as u64,
                limit: 0,
            })?;
            let (r, o) = self.find_range(a, 1)?;
            let n = (r.size() - o).min(len - done);
            f(r, o, done, n)?;
            done += n;
        }
        Ok(())
    }

    fn find_range(&self, addr: u64, len: u64) -> hcq::Result<(&VolatileRegion, usize)> {
        // A freed object stays here while the host still maps it, but the GPU no longer sees
        // it (KGSL unmaps it from the GPU at the free): an access is a fault, as on hardware.
        if let Some((base, b)) = self.blocks.range(..=addr).next_back()
            && !b.freed
            && addr.checked_add(len).is_some_and(|end| end <= base + (b.region.size() as u64))
        {
            return Ok((&b.region, (addr - base) as usize));
        }
        Err(hcq::Error::OutOfBounds {
            what: "gpu address outside every allocation (fault)",
            offset: addr,
            len: 4,
            limit: 0,
        })
    }
}

impl GpuMemory for Memory {
    fn read32(&self, addr: u64) -> hcq::Result<u32> {
        let (r, o) = self.find(addr)?;
        Ok(r.read(o, Width::U32)? as u32)
    }
    fn write32(&mut self, addr: u64, value: u32) -> hcq::Result<()> {
        let (r, o) = self.find(addr)?;
        r.write(o, Width::U32, value.into())
    }
    fn read_words(&self, addr: u64, out: &mut [u32]) -> hcq::Result<()> {
        let (r, o) = self.find_range(addr, 4 * out.len() as u64)?;
        for (i, w) in out.iter_mut().enumerate() {
            *w = r.read(o + 4 * i, Width::U32)? as u32;
        }
        Ok(())
    }

    fn read_bytes(&self, addr: u64, out: &mut [u8]) -> hcq::Result<()> {
        self.for_each_piece(addr, out.len(), |r, o, at, n| r.read_bytes(o, &mut out[at..at + n]))
    }

    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> hcq::Result<()> {
        // Every byte mapped (possibly across adjacent objects) before any is written.
        self.for_each_piece(addr, data.len(), |_, _, _, _| Ok(()))?;
        self.for_each_piece(addr, data.len(), |r, o, at, n| r.write_bytes(o, &data[at..at + n]))
    }

    fn span(&self, addr: u64) -> Option<Span<'_>> {
        let (r, o) = self.find_range(addr, 1).ok()?;
        Some(Span::volatile(addr - o as u64, r))
    }

    fn as_sync(&self) -> Option<&(dyn GpuMemory + Sync)> {
        Some(self)
    }
}

struct State {
    cp: Cp,
    mem: Memory,
    dispatch: Box<dyn ShaderCore + Send>,
    backing: Box<dyn Backing>,
    next_ctx: u32,
    contexts: HashMap<u32, (u32, u32)>, // id -> (submitted, retired)
    queue: VecDeque<Queued>,
    /// The IB the CP stopped in (blocked in a wait).
    running: Option<Queued>,
    deferred_free: Vec<(u32, u32, u32)>, // (object id, ctx, ts)
    fault: Option<String>,
    /// Timestamp new contexts start at (see `SimKgsl::start_timestamps_at`).
    first_ts: u32,
    /// The CP runs nothing while set (see `SimKgsl::pause`).
    paused: bool,
    /// Most IBs submitted and not finished at one time.
    max_pending: usize,
    /// Time spent running the CP (and its shader core), in ns: the simulated GPU's share of a
    /// caller's time, which a host-cost measurement takes out.
    busy_ns: u64,
    /// Since when, and at which wait (IB address, word), the CP has been blocked in one
    /// `CP_WAIT_REG_MEM` (see [`HANG_TIMEOUT`]).
    blocked: Option<(Instant, u64, u32)>,
}

/// How long the CP may stay blocked in one `CP_WAIT_REG_MEM` before the simulated KGSL calls it
/// a hang: the kernel driver's dispatcher declares a submission hung when it has not finished
/// after `adreno_drawobj_timeout` = 2000 ms (adreno_dispatch.c, its fault-detection timer
/// sampling the CP every `_fault_timer_interval` = 200 ms), invalidates the context and fails
/// its waiters. Without it a client that sleeps in `WAITTIMESTAMP` with tinygrad's infinite
/// timeout on a wait nobody satisfies would block forever; with it the wait fails with
/// `EDEADLK` after 2 s, and a host write in time releases the CP as before.
pub const HANG_TIMEOUT: Duration = Duration::from_millis(2000);

/// An IB handed to `GPU_COMMAND` and not finished yet, with its words as they were then.
struct Queued {
    ctx: u32,
    ts: u32,
    ib: u64,
    dwords: u32,
    /// The IB's words as `GPU_COMMAND` returned, taken only for an IB that did not finish
    /// inside it (one that did cannot have been rewritten); empty when they could not be read
    /// (the CP reports that fault when it gets there).
    words: Option<Vec<u32>>,
}

impl Queued {
    fn snapshot(&mut self, mem: &Memory) {
        if self.words.is_none() {
            let mut w = vec![0u32; self.dwords as usize];
            if mem.read_words(self.ib, &mut w).is_err() {
                w.clear();
            }
            self.words = Some(w);
        }
    }

    /// The first word of the IB that differs from its snapshot: `(index, then, now)`.
    fn rewritten(&self, mem: &Memory) -> Option<(usize, u32, u32)> {
        let words = self.words.as_ref().filter(|w| !w.is_empty())?;
        let mut now = vec![0u32; words.len()];
        if mem.read_words(self.ib, &mut now).is_err() {
            return Some((0, words[0], 0));
        }
        words.iter().zip(&now).enumerate().find(|(_, (a, b))| a != b).map(|(i, (a, b))| (i, *a, *b))
    }
}

impl State {
    /// Run queued submissions until done, blocked or faulted (nothing while paused). An IB
    /// whose words changed between `GPU_COMMAND` and the end of its execution is a fault: KGSL
    /// reads the IB while it runs, so the host may not reuse its memory before its timestamp.
    /// Run the CP over what is queued, timing it into `busy_ns`.
    fn pump(&mut self) {
        let t0 = Instant::now();
        self.run_queued();
        // CAST: a run of more than 2^64 ns does not happen.
        self.busy_ns += t0.elapsed().as_nanos() as u64;
    }

    fn run_queued(&mut self) {
        loop {
            if self.fault.is_some() || self.paused {
                return;
            }
            let (res, job) = if let Some(job) = self.running.take() {
                (self.cp.resume(&mut self.mem, self.dispatch.as_mut()), job)
            } else if let Some(job) = self.queue.pop_front() {
                if let Some((i, then, now)) = job.rewritten(&self.mem) {
                    return self.fail_rewritten(&job, i, then, now, "before it ran");
                }
                (self.cp.submit(job.ib, job.dwords, &mut self.mem, self.dispatch.as_mut()), job)
            } else {
                return;
            };
            match res {
                Ok(Outcome::Done) => {
                    self.blocked = None;
                    if let Some((i, then, now)) = job.rewritten(&self.mem) {
                        return self.fail_rewritten(&job, i, then, now, "while it ran");
                    }
                    // A submission of several IBs retires with its last one.
                    let more = self.queue.front().is_some_and(|q| (q.ctx, q.ts) == (job.ctx, job.ts));
                    if !more && let Some(c) = self.contexts.get_mut(&job.ctx) {
                        c.1 = job.ts;
                    }
                    self.release_deferred();
                }
                Ok(Outcome::Blocked { ib, word }) => {
                    let now = Instant::now();
                    match self.blocked {
                        Some((since, b_ib, b_word)) if (b_ib, b_word) == (ib, word) => {
                            if now.duration_since(since) >= HANG_TIMEOUT {
                                self.queue.clear();
                                self.blocked = None;
                                self.fault = Some(format!(
                                    "context {} timestamp {}: GPU hang: CP_WAIT_REG_MEM at IB {ib:#x} word {word} not \
                                     satisfied for {} ms (KGSL's dispatcher timeout, adreno_drawobj_timeout = {} ms)",
                                    job.ctx,
                                    job.ts,
                                    now.duration_since(since).as_millis(),
                                    HANG_TIMEOUT.as_millis()
                                ));
                                return;
                            }
                        }
                        _ => self.blocked = Some((now, ib, word)),
                    }
                    self.running = Some(job);
                    return;
                }
                Err(e) => {
                    self.queue.clear();
                    let n = self.cp.dispatches();
                    self.fault =
                        Some(format!("context {} timestamp {} (after {n} finished dispatches): {e}", job.ctx, job.ts));
                    return;
                }
            }
        }
    }

    fn fail_rewritten(&mut self, job: &Queued, word: usize, then: u32, now: u32, when: &str) {
        self.queue.clear();
        self.running = None;
        self.fault = Some(format!(
            "context {} timestamp {}: IB {:#x} word {word} was rewritten {when} ({then:#010x} became {now:#010x}): \
             the host reused IB memory before its timestamp retired",
            job.ctx, job.ts, job.ib
        ));
    }

    fn retired(&self, ctx: u32, ts: u32) -> bool {
        self.contexts.get(&ctx).is_some_and(|c| c.1.wrapping_sub(ts) as i32 >= 0)
    }

    fn release_deferred(&mut self) {
        let mut i = 0;
        while i < self.deferred_free.len() {
            let (id, ctx, ts) = self.deferred_free[i];
            if self.retired(ctx, ts) {
                self.deferred_free.swap_remove(i);
                self.free_object(id);
            } else {
                i += 1;
            }
        }
    }

    fn free_object(&mut self, id: u32) {
        let Some((&base, _)) = self.mem.blocks.iter().find(|(_, b)| b.id == id) else { return };
        let b = self.mem.blocks.get_mut(&base).expect("found above");
        b.freed = true;
        if !b.mapped {
            let b = self.mem.blocks.remove(&base).expect("found above");
            self.drop_block(b);
        }
    }

    fn drop_block(&mut self, b: Block) {
        if let Some(p) = b.owned {
            // SAFETY: `owned` came from `backing.alloc` for `b.id` with `b.bytes` bytes in
            // gpuobj_alloc and is released exactly once: the block left the map before this
            // call, and its region (the only accessor) dies with it.
            unsafe { self.backing.release(b.id, p, b.bytes) };
        }
    }
}

/// The simulated KGSL device.
pub struct SimKgsl {
    state: Mutex<State>,
    /// The argument table the dispatcher checks with; the device's uploads fill it.
    arg_slots: Option<ArgSlots>,
}

impl core::fmt::Debug for SimKgsl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimKgsl").finish_non_exhaustive()
    }
}

impl SimKgsl {
    /// A simulated Adreno 630 whose dispatches run on `dispatch`.
    pub fn new(dispatch: Box<dyn ShaderCore + Send>) -> Self {
        Self::with_backing(dispatch, Box::new(HeapBacking::default()))
    }

    /// A simulated Adreno 630 whose objects' memory comes from `backing`.
    pub fn with_backing(dispatch: Box<dyn ShaderCore + Send>, backing: Box<dyn Backing>) -> Self {
        Self {
            state: Mutex::new(State {
                cp: Cp::new(),
                mem: Memory::default(),
                dispatch,
                backing,
                next_ctx: 0,
                contexts: HashMap::new(),
                queue: VecDeque::new(),
                running: None,
                deferred_free: Vec::new(),
                fault: None,
                first_ts: 0,
                paused: false,
                max_pending: 0,
                busy_ns: 0,
                blocked: None,
            }),
            arg_slots: None,
        }
    }

    /// Record every uploaded program's address arguments ([`KgslIoctl::note_program`]) in
    /// `slots`, the table the dispatcher checks each dispatch's arguments with.
    pub fn with_arg_slots(mut self, slots: ArgSlots) -> Self {
        self.arg_slots = Some(slots);
        self
    }

    /// Contexts created from now on start their timestamps at `ts` (the first submission gets
    /// `ts + 1`): KGSL timestamps are 32-bit and wrap, and a test crosses the rollover
    /// without four billion submissions.
    pub fn start_timestamps_at(&self, ts: u32) {
        if let Ok(mut s) = self.state.lock() {
            s.first_ts = ts;
        }
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>, Errno> {
        self.state.lock().map_err(|_| Errno::IO)
    }

    /// Stall the CP (`true`: submissions queue up, timestamps do not advance, as on a busy
    /// GPU) or let it run again.
    pub fn pause(&self, paused: bool) {
        if let Ok(mut s) = self.state.lock() {
            s.paused = paused;
            if !paused {
                s.pump();
            }
        }
    }

    /// Most IBs that were submitted and not finished at one time.
    pub fn max_pending(&self) -> usize {
        self.state.lock().map_or(0, |s| s.max_pending)
    }

    /// Nanoseconds the simulated GPU has spent running submissions (the CP and its shader core)
    /// so far, on whichever thread pumped it: a call's time minus this is the host's share.
    pub fn busy_ns(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.busy_ns)
    }

    /// The CP error that stopped the device, with its IB address and word offset.
    pub fn fault(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.fault.clone())
    }

    /// Give object `id` the GPU address `gpuaddr` (the client's CPU mapping of a `USE_CPU_MAP`
    /// object, learned after `GPUOBJ_ALLOC`). An older object whose range overlaps the new one
    /// (the client unmapped it and reused the addresses) goes back to its backing's address.
    /// `EINVAL` for an unknown or freed id.
    pub fn set_gpu_address(&self, id: u32, gpuaddr: u64) -> Result<(), Errno> {
        let mut s = self.lock()?;
        let blocks = &mut s.mem.blocks;
        let (&old, b) = blocks.iter().find(|(_, b)| b.id == id && b.owned.is_some() && !b.freed).ok_or(Errno::INVAL)?;
        if old == gpuaddr {
            return Ok(());
        }
        let end = gpuaddr.checked_add(b.bytes as u64).ok_or(Errno::INVAL)?;
        let block = blocks.remove(&old).expect("found above");
        let clash: Vec<u64> = blocks
            .range(..end)
            .filter(|(base, o)| **base + o.region.size() as u64 > gpuaddr)
            .map(|(base, _)| *base)
            .collect();
        for base in clash {
            let o = blocks.remove(&base).expect("listed above");
            if o.owned.is_some() {
                blocks.insert(o.region.base().as_ptr() as u64, o);
            }
        }
        blocks.insert(gpuaddr, block);
        Ok(())
    }

    /// Number of live GPU objects and user mappings.
    pub fn live_blocks(&self) -> usize {
        self.state.lock().map_or(0, |s| s.mem.blocks.len())
    }
}

impl Drop for SimKgsl {
    fn drop(&mut self) {
        if let Ok(s) = self.state.get_mut() {
            for (_, b) in std::mem::take(&mut s.mem.blocks) {
                s.drop_block(b);
            }
        }
    }
}

impl KgslIoctl for SimKgsl {
    fn get_property(&self, ty: u32, out: &mut [u8]) -> Result<(), Errno> {
        let v = match ty {
            PROP_VERSION => Version { drv_major: 3, drv_minor: 14, dev_major: 3, dev_minor: 1 }.as_bytes().to_vec(),
            PROP_DEVICE_INFO => DevInfo {
                device_id: 1,
                chip_id: SIM_CHIP_ID,
                mmu_enabled: 1,
                gpu_id: 630,
                gmem_sizebytes: 1 << 20,
                ..Default::default()
            }
            .as_bytes()
            .to_vec(),
            _ => return Err(Errno::INVAL),
        };
        if out.len() != v.len() {
            return Err(Errno::INVAL);
        }
        out.copy_from_slice(&v);
        Ok(())
    }

    fn drawctxt_create(&self, arg: &mut DrawctxtCreate) -> Result<(), Errno> {
        let mut s = self.lock()?;
        s.next_ctx += 1;
        arg.drawctxt_id = s.next_ctx;
        let id = s.next_ctx;
        let t = s.first_ts;
        s.contexts.insert(id, (t, t));
        Ok(())
    }

    fn drawctxt_destroy(&self, arg: &DrawctxtDestroy) -> Result<(), Errno> {
        let mut s = self.lock()?;
        s.pump();
        s.contexts.remove(&arg.drawctxt_id).map(|_| ()).ok_or(Errno::INVAL)
    }

    fn gpuobj_alloc(&self, arg: &mut GpuobjAlloc) -> Result<(), Errno> {
        if arg.size == 0 || arg.size > 1 << 32 {
            return Err(Errno::NOMEM);
        }
        let bytes = usize::try_from(arg.size.next_multiple_of(PAGE as u64)).map_err(|_| Errno::NOMEM)?;
        let mut s = self.lock()?;
        let (id, p) = s.backing.alloc(bytes)?;
        // SAFETY: `p` points at `bytes` zeroed bytes owned by this block until drop_block
        // (the Backing contract); only volatile accesses reach it.
        let region = match unsafe { VolatileRegion::new(p, bytes) } {
            Ok(r) => r,
            Err(_) => {
                // SAFETY: just allocated for `id`, never accessed.
                unsafe { s.backing.release(id, p, bytes) };
                return Err(Errno::INVAL);
            }
        };
        s.mem
            .blocks
            .insert(p.as_ptr() as u64, Block { region, owned: Some(p), bytes, id, mapped: false, freed: false });
        arg.id = id;
        arg.mmapsize = bytes as u64;
        Ok(())
    }

    fn gpuobj_info(&self, arg: &mut GpuobjInfo) -> Result<(), Errno> {
        let s = self.lock()?;
        let (&base, b) = s.mem.blocks.iter().find(|(_, b)| b.id == arg.id && b.owned.is_some()).ok_or(Errno::INVAL)?;
        arg.gpuaddr = base;
        arg.size = b.bytes as u64;
        Ok(())
    }

    fn gpuobj_free(&self, arg: &GpuobjFree, event: Option<&GpuEventTimestamp>) -> Result<(), Errno> {
        let mut s = self.lock()?;
        if !s.mem.blocks.values().any(|b| b.id == arg.id && b.owned.is_some() && !b.freed) {
            return Err(Errno::INVAL);
        }
        match (arg.flags & GPUOBJ_FREE_ON_EVENT != 0, event) {
            (false, _) => s.free_object(arg.id),
            (true, Some(e)) if arg.ty == GPU_EVENT_TIMESTAMP => {
                s.deferred_free.push((arg.id, e.context_id, e.timestamp));
                s.pump();
                s.release_deferred();
            }
            _ => return Err(Errno::INVAL),
        }
        Ok(())
    }

    fn map_user_mem(&self, arg: &mut MapUserMem) -> Result<(), Errno> {
        let p = NonNull::new(arg.hostptr as *mut u8).ok_or(Errno::FAULT)?;
        let len = usize::try_from(arg.len).map_err(|_| Errno::INVAL)?;
        // SAFETY: Kgsl::map_user's contract: the range stays valid until SHAREDMEM_FREE.
        let region = unsafe { VolatileRegion::new(p, len) }.map_err(|_| Errno::INVAL)?;
        let mut s = self.lock()?;
        s.mem.blocks.insert(arg.hostptr, Block { region, owned: None, bytes: len, id: 0, mapped: false, freed: false });
        arg.gpuaddr = arg.hostptr;
        Ok(())
    }

    fn sharedmem_free(&self, arg: &SharedmemFree) -> Result<(), Errno> {
        let mut s = self.lock()?;
        match s.mem.blocks.get(&arg.gpuaddr) {
            Some(b) if b.owned.is_none() => {
                s.mem.blocks.remove(&arg.gpuaddr);
                Ok(())
            }
            _ => Err(Errno::INVAL),
        }
    }

    fn gpu_command(&self, arg: &mut GpuCommand, cmds: &[CommandObject]) -> Result<(), Errno> {
        let mut s = self.lock()?;
        if s.fault.is_some() {
            return Err(Errno::DEADLK);
        }
        let ctx = arg.context_id;
        let c = s.contexts.get_mut(&ctx).ok_or(Errno::INVAL)?;
        c.0 = c.0.wrapping_add(1);
        let ts = c.0;
        for cmd in cmds {
            if cmd.size % 4 != 0 || cmd.size / 4 > u64::from(u32::MAX) {
                return Err(Errno::INVAL);
            }
            s.queue.push_back(Queued {
                ctx,
                ts,
                ib: cmd.gpuaddr + cmd.offset,
                dwords: (cmd.size / 4) as u32,
                words: None,
            });
        }
        let pending = s.queue.len() + usize::from(s.running.is_some());
        s.max_pending = s.max_pending.max(pending);
        arg.timestamp = ts;
        s.pump();
        // What did not finish here is checked against its words as the ioctl returns them.
        let st = &mut *s;
        for job in st.queue.iter_mut().chain(st.running.as_mut()) {
            job.snapshot(&st.mem);
        }
        Ok(())
    }

    fn wait_timestamp(&self, arg: &WaitTimestampCtxtid) -> Result<(), Errno> {
        // TIMEOUT: `arg.timeout` milliseconds, polling the simulated CP every 50 µs.
        let deadline = Instant::now() + Duration::from_millis(arg.timeout.into());
        loop {
            {
                let mut s = self.lock()?;
                s.pump();
                if s.fault.is_some() {
                    return Err(Errno::DEADLK);
                }
                if !s.contexts.contains_key(&arg.context_id) {
                    return Err(Errno::INVAL);
                }
                if s.retired(arg.context_id, arg.timestamp) {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(Errno::TIMEDOUT);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn read_timestamp(&self, arg: &mut ReadTimestampCtxtid) -> Result<(), Errno> {
        let mut s = self.lock()?;
        s.pump();
        arg.timestamp = s.contexts.get(&arg.context_id).ok_or(Errno::INVAL)?.1;
        Ok(())
    }

    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno> {
        let mut s = self.lock()?;
        let id = u32::try_from(offset >> 12).map_err(|_| Errno::INVAL)?;
        let b = s.mem.blocks.values_mut().find(|b| b.id == id && b.owned.is_some() && !b.freed).ok_or(Errno::INVAL)?;
        if len > b.bytes {
            return Err(Errno::INVAL);
        }
        b.mapped = true;
        Ok(Mapping { ptr: b.region.base(), len })
    }

    unsafe fn munmap(&self, m: &Mapping) {
        let Ok(mut s) = self.state.lock() else { return };
        let base = m.ptr.as_ptr() as u64;
        if let Some(b) = s.mem.blocks.get_mut(&base) {
            b.mapped = false;
            if b.freed {
                let b = s.mem.blocks.remove(&base).expect("present");
                s.drop_block(b);
            }
        }
    }
    fn fault_report(&self) -> Option<String> {
        self.fault()
    }
    fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]) {
        if let Some(t) = &self.arg_slots {
            t.register(shader_addr, arg_slots.to_vec());
        }
    }
    fn describe(&self) -> &'static str {
        "simulated KGSL + ir3 interpreter,"
    }
    fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits {
        crate::limits::gpu_limits(chip)
    }
    fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str> {
        crate::limits::unsupported_instruction(ins)
    }
}
