//! The runner backend of the AMD device: loading (descriptors checked first), recording the
//! launch list into core `HwQueue`s (PM4 execs on the compute queue, SDMA copies on the copy
//! queue), and calls through the engine: the compute queue's captured IBs, the copy queue's ring.

use crate::bind::{Bound, Recorded};
use crate::device::AmdDevice;
use crate::ib::RingIb;
use crate::memory::{BufBus, GpuBuf, KfdPage, QueueDoorbell};
use core::time::Duration;
use hcq::barrier::Barrier;
use hcq::device::DeviceLimits;
use hcq::engine::{Channel, Engine};
use hcq::mmio::MmioBus;
use hcq::profile::EventKind;
use hcq::queue::{Encoder, HwQueue};
use hcq::ring::{CommandRing, Doorbell, KernargPool};
use hcq::signal::{OwnedSignal, SignalPage, Slot, WaitHooks, WaitPolicy};
use hcq::stamp::Stamp;
use hcq::submit::IbPool;
use hcq::{Error, Result};
use hcq_amd::codeobj::{CodeObject, Kernel};
use hcq_amd::kfd::uapi::{
    CreateQueueArgs, DestroyQueueArgs, MAX_QUEUE_PERCENTAGE, QUEUE_TYPE_COMPUTE, QUEUE_TYPE_SDMA, mmap,
};
use hcq_amd::pm4::{Pm4Config, Pm4Encoder, Scratch};
use hcq_amd::sdma::{SdmaConfig, SdmaEncoder};
use hcq_bundle::hcqb::{Hcqb, ProgramRef};
use hcq_bundle::{Arch, ArgView};
use hcq_runner::plug::{Capabilities, ProfilerRef, policy_within};
use hcq_runner::{Backend, KernelLaunch};
use std::sync::Arc;

const ARCHS: [Arch; 1] = [Arch::AmdGfx1100];
/// Compute ring bytes (tinygrad's `AMDDevice` uses 16 MiB for a ring that holds whole queues;
/// this one holds only `INDIRECT_BUFFER` packets, 4 dwords a submission).
const RING_BYTES: u64 = 1 << 16;
/// SDMA ring bytes (tinygrad: 16 MiB; a call's copy runs are a few dozen dwords each).
const SDMA_RING_BYTES: u64 = 1 << 18;
/// The most dwords of one compute IB: a longer run of launches is split into several IBs
/// (`INDIRECT_BUFFER`'s size field holds 2^20 - 1).
const MAX_IB_DWORDS: usize = 1 << 18;
/// The most dwords of one copy run (a quarter of the SDMA ring, as the runner splits queues).
const MAX_COPY_DWORDS: usize = (SDMA_RING_BYTES / 16) as usize;
/// Words a launch may add to a run at most before it is split (an exec with its timestamps).
const LAUNCH_DWORDS: usize = 256;
/// IB slots per compute IB of a call (calls in flight, as QCOM's default).
const IB_SLOTS_PER_CALL: usize = 4;
/// Engine channel of the compute queue.
const COMPUTE: u8 = 0;
/// Engine channel of the copy (SDMA) queue.
const COPY: u8 = 1;
/// End-of-pipe buffer bytes (tinygrad: 0x1000).
const EOP_BYTES: u64 = 0x1000;
/// Kernel-argument arena chunk bytes.
const KERNARG_CHUNK: u64 = 1 << 16;
/// Signal slots in the timeline's page.
const SIGNAL_SLOTS: usize = 4096 / 16;

/// A program as loaded: its code object's image in GPU memory and the kernel's entry address.
#[derive(Debug)]
pub struct LoadedProgram {
    entry: u64,
    kernel: Kernel,
}

/// The compute queue KFD created, destroyed (before its memory goes) when the backend drops.
struct Queue {
    dev: Arc<AmdDevice>,
    id: u32,
}

impl Drop for Queue {
    fn drop(&mut self) {
        if let Err(e) = self.dev.kfd.destroy_queue(&DestroyQueueArgs { queue_id: self.id, ..Default::default() }) {
            log::warn!("AMD: destroying compute queue {}: {e}", self.id);
        }
    }
}

/// The wait hooks: the host clock, and the device's memory- and hardware-exception events as
/// the fault check (naming the queue).
struct AmdHooks {
    dev: Arc<AmdDevice>,
    queue: QueueInfo,
}

/// What names the compute queue in an error: its KFD id and where its read pointer stands.
#[derive(Clone)]
struct QueueInfo {
    id: u32,
    /// The queue's pointers (read pointer at 0, write pointer at 8, both in dwords).
    ptrs: Arc<GpuBuf>,
}

impl QueueInfo {
    /// `"KFD compute queue 0 (read pointer at dword 96, write pointer at 120)"`.
    fn describe(&self) -> String {
        let read = |off| self.ptrs.bus().read(off, hcq::mmio::Width::U64).unwrap_or(0);
        let (r, w) = (read(0), read(8));
        format!("KFD compute queue {} (read pointer at dword {r}, write pointer at {w})", self.id)
    }
}

impl WaitHooks for AmdHooks {
    fn now_ns(&self) -> u64 {
        hcq::signal::host_clock_ns()
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn sleep(&self, idle_ns: u64) {
        std::thread::sleep(std::time::Duration::from_nanos(idle_ns.min(1_000_000)));
    }
    fn fault(&self) -> Option<Error> {
        self.dev.fault().map(|e| e.context(self.queue.describe()))
    }
}

/// One submission of a call: a run of consecutive launches of one engine, its own `HwQueue`
/// (timeline wait first, timeline signal last), so the runs of a call execute in launch order
/// across the compute and copy queues through the timeline signal, as tinygrad orders its
/// queues.
struct Run {
    channel: u8,
    queue: HwQueue,
}

/// The AMD runner backend (see the crate docs).
pub struct AmdBackend {
    pub(crate) dev: Arc<AmdDevice>,
    /// Parsed code objects of the bundle's programs (from `prepare`), taken by `load_program`.
    parsed: Vec<Option<(CodeObject, Kernel)>>,
    max_private: u32,
    buffers: Vec<GpuBuf>,
    code: Vec<GpuBuf>,
    pub(crate) kernargs: Vec<GpuBuf>,
    kernarg_off: u64,
    enc: Option<Arc<Pm4Encoder>>,
    sdma: Option<Arc<SdmaEncoder>>,
    scratch: Option<GpuBuf>,
    /// The call's runs, in launch order.
    runs: Vec<Run>,
    timeline: Option<OwnedSignal>,
    pub(crate) hcq: Option<Arc<Engine>>,
    /// Dropped before the ring memory: KFD stops the queues first.
    kfd_queues: Vec<Queue>,
    /// The queue as errors name it.
    queue_info: Option<QueueInfo>,
    ring_mem: Vec<Arc<GpuBuf>>,
    timeout_ms: u32,
    block: Vec<u8>,
    /// Every copy launch's (destination, source, bytes), as recorded.
    pub(crate) copies: Vec<(u64, u64, u64)>,
    /// Every kernel launch's argument block and buffer arguments, as recorded (for binds).
    pub(crate) recorded: Vec<Recorded>,
    /// Ranges bound to caller memory (see `bind.rs`); dropped after the KFD queues.
    pub(crate) binds: Vec<Bound>,
    /// `--profile`: every launch bracketed by GPU-clock timestamps (see `profile.rs`).
    pub(crate) profile: bool,
    /// The timestamp buffers (16 bytes a profiled launch).
    pub(crate) stamps: Vec<GpuBuf>,
    /// Per profiled launch: event kind, name, argument; and the same with the name interned.
    pub(crate) profiled: Vec<(EventKind, String, u64)>,
    pub(crate) profiled_ids: Vec<(EventKind, u32, u64)>,
}

impl core::fmt::Debug for AmdBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AmdBackend").field("dev", &self.dev.name).finish_non_exhaustive()
    }
}

impl AmdBackend {
    /// A backend on `dev`.
    pub fn new(dev: Arc<AmdDevice>) -> Self {
        let timeout_ms = dev.timeout_ms;
        Self {
            dev,
            parsed: Vec::new(),
            max_private: 0,
            buffers: Vec::new(),
            code: Vec::new(),
            kernargs: Vec::new(),
            kernarg_off: 0,
            enc: None,
            sdma: None,
            scratch: None,
            runs: Vec::new(),
            timeline: None,
            hcq: None,
            kfd_queues: Vec::new(),
            queue_info: None,
            ring_mem: Vec::new(),
            timeout_ms,
            block: Vec::new(),
            copies: Vec::new(),
            recorded: Vec::new(),
            binds: Vec::new(),
            profile: false,
            stamps: Vec::new(),
            profiled: Vec::new(),
            profiled_ids: Vec::new(),
        }
    }

    /// Wait at most `ms` without progress per wait.
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.timeout_ms = ms;
        if let Some(h) = &self.hcq {
            h.timeline().set_policy(WaitPolicy::with_timeout_ms(ms.into()));
        }
    }

    /// The GPU address of base buffer `i`.
    pub fn buffer_addr(&self, i: usize) -> Option<u64> {
        self.buffers.get(i).map(GpuBuf::va)
    }

    /// Submissions per call: the runs of consecutive launches of one queue (1 for a bundle
    /// without copy launches).
    pub fn submissions_per_call(&self) -> usize {
        self.runs.len()
    }

    fn buffer(&self, i: usize) -> Result<&GpuBuf> {
        self.buffers.get(i).ok_or(Error::OutOfBounds {
            what: "AMD buffer index",
            offset: i as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })
    }

    /// Submit one call without waiting; the stamp that completes it. Each run of the call is
    /// one submission: a compute run's words go to a free IB slot (only those a replay changed:
    /// the timeline wait and signal) and the compute ring gets its `INDIRECT_BUFFER` packet; a
    /// copy run's words go to the SDMA ring. Allocates nothing.
    pub fn submit_call(&mut self) -> Result<Stamp> {
        self.dev.check_process()?;
        let Some(h) = self.hcq.as_ref() else {
            return Err(Error::InvalidArgument { what: "AMD: call before the load finished", value: 0 });
        };
        let mut s = h.lock();
        let mut last = Stamp::ZERO;
        for r in &mut self.runs {
            // SAFETY: the captured queues were built from the bundle's checked launches over
            // this backend's buffer objects (code, kernel arguments, buffers, scratch, timestamp
            // buffers), which live until the backend drops, after its KFD queues are destroyed;
            // their timestamp commands write the backend's own timestamp slots, their signals
            // only the timeline (the engine's own), their waits only the timeline.
            last = unsafe { s.submit(r.channel, &mut r.queue) }?;
        }
        Ok(last)
    }

    /// Wait until the timeline reaches `stamp` (a memory or hardware exception ends the wait
    /// with it; a timeout names the queue).
    pub fn wait(&self, stamp: Stamp) -> Result<()> {
        self.dev.check_process()?;
        match &self.hcq {
            Some(h) => h.wait(stamp).map_err(|e| self.on_queue(e)),
            None => Ok(()),
        }
    }

    /// `e` with the compute queue named, when it is a timeout (a fault names it already).
    fn on_queue(&self, e: Error) -> Error {
        match (&self.queue_info, e.root()) {
            (Some(q), Error::Timeout { .. }) => e.context(q.describe()),
            _ => e,
        }
    }

    pub(crate) fn settle(&self) -> Result<()> {
        match &self.hcq {
            Some(h) => match h.synchronize() {
                Err(e) if !matches!(e.root(), Error::DeviceHung { .. }) => Err(self.on_queue(e)),
                _ => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// The encoder, with the scratch for the largest program's private segment, created at the
    /// first program load.
    fn encoder(&mut self) -> Result<Arc<Pm4Encoder>> {
        if let Some(e) = &self.enc {
            return Ok(e.clone());
        }
        let sd = self.dev.node.scratch_device()?;
        // A scratch of the size the largest program needs (at least one 4-byte lane slot, so
        // kernels without private memory get a valid, tiny ring as tinygrad's default does).
        let private = self.max_private.max(4);
        let probe = Scratch::for_device(0, private, sd)?;
        let buf = self.dev.alloc(probe.bytes, false)?;
        let scratch = Scratch::for_device(buf.va(), private, sd)?;
        let enc = Arc::new(Pm4Encoder::new(Pm4Config { scratch, waves_per_sh: 0, interrupt: None })?);
        self.scratch = Some(buf);
        self.enc = Some(enc.clone());
        Ok(enc)
    }

    /// Room for `bytes` of kernel arguments (256-byte aligned): its chunk and offset.
    fn kernarg_slot(&mut self, bytes: u64) -> Result<(usize, u64)> {
        let bytes = bytes.next_multiple_of(256);
        if bytes > KERNARG_CHUNK {
            return Err(Error::LimitExceeded {
                what: "AMD kernel-argument block bytes",
                value: bytes,
                limit: KERNARG_CHUNK,
            });
        }
        if self.kernargs.is_empty() || self.kernarg_off + bytes > KERNARG_CHUNK {
            self.kernargs.push(self.dev.alloc(KERNARG_CHUNK, false)?);
            self.kernarg_off = 0;
        }
        let off = self.kernarg_off;
        self.kernarg_off += bytes;
        Ok((self.kernargs.len() - 1, off))
    }

    /// The timeline signal, made at the first launch.
    fn timeline(&mut self) -> Result<&OwnedSignal> {
        if self.timeline.is_none() {
            let page = Arc::new(self.dev.alloc(4096, true)?);
            let (ptr, va) = (page.host_ptr(), page.va());
            let ptr = core::ptr::NonNull::new(ptr.cast_mut().cast::<Slot>())
                .ok_or(Error::InvalidArgument { what: "AMD signal page address", value: 0 })?;
            // SAFETY: a zeroed, page-aligned uncached GTT mapping of SIGNAL_SLOTS × 16 bytes, seen
            // by the GPU at `va`, mapped until `page` (the owner) drops; the CPU touches it only
            // through the page's atomics.
            let sp = unsafe { SignalPage::from_raw_owning(ptr, SIGNAL_SLOTS, va, Box::new(page)) };
            self.timeline = Some(OwnedSignal::new(Arc::new(sp), 0)?);
        }
        // PANIC: never: set above.
        Ok(self.timeline.as_ref().expect("created above"))
    }

    /// The run the next launch of `channel` goes to: the last one when it is of that channel
    /// and has room for another launch, else a new one.
    fn run_for(&mut self, channel: u8) -> Result<&mut HwQueue> {
        let room = if channel == COMPUTE { MAX_IB_DWORDS } else { MAX_COPY_DWORDS };
        let fits =
            self.runs.last().is_some_and(|r| r.channel == channel && r.queue.words().len() + LAUNCH_DWORDS <= room);
        if !fits {
            let enc: Arc<dyn Encoder> = if channel == COMPUTE { self.encoder()? } else { self.sdma_encoder()? };
            let timeline = self.timeline()?;
            let mut q = HwQueue::new(enc, timeline)?;
            if channel == COMPUTE {
                // A compute run starts with the caches invalidated (tinygrad's HCQProgram: wait,
                // barrier, exec), so what the host or the copy queue wrote before it is seen.
                q.memory_barrier()?;
            }
            self.runs.push(Run { channel, queue: q });
        }
        // PANIC: never: a run was pushed above when there was none.
        Ok(&mut self.runs.last_mut().expect("a run").queue)
    }

    fn sdma_encoder(&mut self) -> Result<Arc<SdmaEncoder>> {
        if let Some(e) = &self.sdma {
            return Ok(e.clone());
        }
        let e = Arc::new(SdmaEncoder::new(SdmaConfig::default())?);
        self.sdma = Some(e.clone());
        Ok(e)
    }

    /// Create a KFD queue of `queue_type` over `ring` with its pointers at `ptrs` + `ptr_off`
    /// (read pointer) and + `ptr_off + 8` (write pointer); its doorbell, writing the write
    /// pointer shifted by `shift` (0: dwords, 2: bytes).
    fn create_queue(
        &mut self,
        queue_type: u32,
        ring: &Arc<GpuBuf>,
        ptrs: &Arc<GpuBuf>,
        ptr_off: u64,
        eop: Option<&Arc<GpuBuf>>,
        shift: u32,
    ) -> Result<(u32, QueueDoorbell)> {
        let dev = self.dev.clone();
        let ring_size = u32::try_from(ring.size())
            .map_err(|_| Error::InvalidArgument { what: "AMD ring bytes", value: ring.size() })?;
        let mut cq = CreateQueueArgs {
            ring_base_address: ring.va(),
            read_pointer_address: ptrs.va() + ptr_off,
            write_pointer_address: ptrs.va() + ptr_off + 8,
            ring_size,
            gpu_id: dev.node.gpu_id,
            queue_type,
            queue_percentage: MAX_QUEUE_PERCENTAGE,
            queue_priority: 7,
            eop_buffer_address: eop.map_or(0, |e| e.va()),
            eop_buffer_size: eop.map_or(0, |_| EOP_BYTES),
            ..Default::default()
        };
        dev.kfd.create_queue(&mut cq)?;
        self.kfd_queues.push(Queue { dev: dev.clone(), id: cq.queue_id });
        let (pages, bell_off) = mmap::doorbell_pages(cq.doorbell_offset);
        let page = Arc::new(KfdPage::map(&dev.kfd, pages, mmap::DOORBELL_BYTES)?);
        // CAST: an offset inside the 8 KiB doorbell pages.
        let bell =
            QueueDoorbell { page, bell: bell_off as usize, wptr: ptrs.clone(), wptr_off: ptr_off as usize + 8, shift };
        Ok((cq.queue_id, bell))
    }
}

impl Backend for AmdBackend {
    type Program = LoadedProgram;

    fn archs(&self) -> &[Arch] {
        &ARCHS
    }

    fn limits(&self) -> DeviceLimits {
        self.dev.limits()
    }

    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        // Every code object parsed and every kernel descriptor checked before anything is
        // allocated.
        for (i, p) in bundle.programs().enumerate() {
            let obj = p
                .object(arch)
                .ok_or(Error::Unsupported { what: "AMD program without a gfx1100 object", value: i as u64 })?;
            let at = |e: String| {
                Error::Malformed { what: "gfx1100 code object", at: i as u64, reason: "see context" }
                    .context(format!("program {i} ({}): {e}", p.name))
            };
            let co = CodeObject::parse(obj).map_err(|e| at(e.to_string()))?;
            let k = co.kernels.iter().find(|k| k.name == p.symbol).cloned().ok_or_else(|| {
                at(format!(
                    "no kernel {:?} (the code object has {:?})",
                    p.symbol,
                    co.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>()
                ))
            })?;
            // The PM4 queue's own checks (LDS, user SGPR layout, unsupported inputs) at a
            // placeholder 256-aligned entry.
            hcq_amd::pm4::Program::new(0x1000, &k.kd).map_err(|e| e.context(format!("program {i} ({})", p.name)))?;
            let need = 8 * u64::from(p.n_buffer_args) + 4 * (p.params().len() as u64 - u64::from(p.n_buffer_args));
            if need > u64::from(k.kd.kernarg_bytes) {
                return Err(Error::Mismatch {
                    what: "AMD kernel argument bytes (8 per buffer, 4 per value) vs the descriptor's kernarg_size",
                    expected: u64::from(k.kd.kernarg_bytes),
                    found: need,
                }
                .context(format!("program {i} ({})", p.name)));
            }
            self.max_private = self.max_private.max(k.kd.private_bytes);
            self.parsed.push(Some((co, k)));
        }
        Ok(())
    }

    fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        if index != self.buffers.len() {
            return Err(Error::InvalidArgument { what: "AMD: buffers allocated out of order", value: index as u64 });
        }
        let b = self.dev.alloc(nbytes, false)?;
        if !initial.is_empty() {
            b.bus().write_bytes(0, initial)?;
        }
        let va = b.va();
        self.buffers.push(b);
        Ok(va)
    }

    fn load_program(
        &mut self,
        index: usize,
        _p: &ProgramRef<'_>,
        _arch: Arch,
        _object: &[u8],
    ) -> Result<LoadedProgram> {
        let (co, kernel) = self
            .parsed
            .get_mut(index)
            .and_then(Option::take)
            .ok_or(Error::InvalidArgument { what: "AMD: program loaded without prepare", value: index as u64 })?;
        let enc = self.encoder()?;
        let buf = self.dev.alloc(co.image.len() as u64, false)?;
        buf.bus().write_bytes(0, &co.image)?;
        let entry = enc.add_program(buf.va() + kernel.entry as u64, &kernel.kd)?;
        self.code.push(buf);
        Ok(LoadedProgram { entry, kernel })
    }

    fn record_kernel(&mut self, program: &LoadedProgram, l: &KernelLaunch<'_, '_>) -> Result<()> {
        let k = l.kernel;
        let kd = &program.kernel.kd;
        // tinygrad's CLikeArgsState: every buffer's address, then every value as an int32
        self.block.clear();
        for a in l.args {
            self.block.extend_from_slice(&a.to_le_bytes());
        }
        for v in k.vals() {
            let v = v.ok_or(Error::InvalidArgument {
                what: "AMD launch: a value without a number (core_id)",
                value: l.index as u64,
            })?;
            let v = i32::try_from(v)
                .map_err(|_| Error::InvalidArgument { what: "AMD launch value beyond int32", value: v as u64 })?;
            self.block.extend_from_slice(&v.to_le_bytes());
        }
        let args_bytes = u64::from(kd.kernarg_bytes);
        if self.block.len() as u64 > args_bytes {
            return Err(Error::Mismatch {
                what: "AMD launch argument bytes vs kernarg_size",
                expected: args_bytes,
                found: self.block.len() as u64,
            });
        }
        self.block.resize(kd.kernarg_bytes as usize, 0);
        let groups = k.global_size;
        let total = args_bytes + if kd.dispatch_ptr { 64 } else { 0 };
        let (chunk, off) = self.kernarg_slot(total.max(16))?;
        let buf = &self.kernargs[chunk];
        let addr = buf.va() + off;
        if kd.dispatch_ptr {
            let pkt = hcq_amd::launch::dispatch_packet(kd, k.local_size, groups, program.entry, addr);
            self.block.extend_from_slice(&pkt);
        }
        // CAST: an offset inside a 64 KiB chunk.
        buf.bus().write_bytes(off as usize, &self.block)?;
        let args = l.args.iter().zip(k.args()).map(|(&a, v)| (a, v.nbytes)).collect();
        self.recorded.push(Recorded { chunk, off, args });
        let entry = program.entry;
        let stamps = if self.profile {
            Some(self.stamp_pair(EventKind::Program, k.name, u64::from(groups.iter().product::<u32>()))?)
        } else {
            None
        };
        let q = self.run_for(COMPUTE)?;
        let ctx = || format!("launch {} ({})", l.index, k.name);
        if let Some((t0, _)) = stamps {
            q.timestamp_at(t0).map_err(|e| e.context(ctx()))?;
        }
        q.exec(entry, addr, groups, k.local_size).map_err(|e| e.context(ctx()))?;
        if let Some((_, t1)) = stamps {
            q.timestamp_at(t1).map_err(|e| e.context(ctx()))?;
        }
        Ok(())
    }

    /// A copy launch goes to the SDMA queue (tinygrad's `AMDCopyQueue.copy`: `COPY LINEAR`
    /// packets), in a run of its own after the compute run before it (which signals the
    /// timeline after its dispatches, with the caches written back) and before the next (which
    /// waits for the copy's signal and invalidates the caches first).
    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        let stamps = if self.profile { Some(self.stamp_pair(EventKind::Copy, "copy", bytes)?) } else { None };
        let q = self.run_for(COPY)?;
        if let Some((t0, _)) = stamps {
            q.timestamp_at(t0)?;
        }
        q.copy(dst, src, bytes)?;
        if let Some((_, t1)) = stamps {
            q.timestamp_at(t1)?;
        }
        self.copies.push((dst, src, bytes));
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if self.hcq.is_some() {
            return Err(Error::InvalidArgument { what: "AMD: the load finished already", value: 0 });
        }
        if self.runs.is_empty() {
            // a bundle without launches still has a call: the timeline wait and signal
            self.run_for(COMPUTE)?;
        }
        let enc = self.encoder()?;
        for r in &mut self.runs {
            r.queue.finish()?;
        }
        // PANIC: `run_for` made it with the first run.
        let timeline = self.timeline.take().expect("created with the first run");
        let dev = self.dev.clone();
        // The compute IBs: a slot holds the longest compute run; IB_SLOTS_PER_CALL calls in
        // flight, the slot count a multiple of the runs per call so that each run finds its
        // own words in its slot at every call (the pool then stores only what changed).
        let compute = self.runs.iter().filter(|r| r.channel == COMPUTE);
        let per_call = compute.clone().count().max(1);
        let longest = compute.map(|r| r.queue.words().len()).max().unwrap_or(0);
        let slot_bytes = (4 * longest).next_multiple_of(256);
        let slots = per_call * IB_SLOTS_PER_CALL.div_ceil(per_call);
        let ib_mem = Arc::new(dev.alloc((slot_bytes * slots) as u64, true)?);
        // A ring of INDIRECT_BUFFER packets with room for more than every slot in flight.
        let ring_bytes = RING_BYTES.max((16 * (slots as u64 + 1)).next_power_of_two());
        let ring = Arc::new(dev.alloc(ring_bytes, true)?);
        let ptrs = Arc::new(dev.alloc(4096, true)?);
        let eop = Arc::new(dev.alloc(EOP_BYTES, false)?);
        let kmem = Arc::new(dev.alloc(4096, false)?);
        let (qid, bell) = self.create_queue(QUEUE_TYPE_COMPUTE, &ring, &ptrs, 0, Some(&eop), 0)?;
        // gfx11 doorbells take the 64-bit write pointer in dwords (tinygrad's signal_doorbell,
        // after the same value in the write-pointer memory); the IB and ring words are written
        // with volatile word stores and a device write barrier orders them before both.
        let hook = RingIb::new(ring.clone(), slots as u64, bell)?;
        let pool = IbPool::new(
            Arc::new(BufBus(ib_mem.clone())),
            ib_mem.va(),
            slot_bytes,
            Barrier::DeviceWrite,
            Box::new(hook),
        )?;
        let mut channels = vec![Channel::new("compute", pool)];
        self.ring_mem = vec![ring, ptrs.clone(), eop, kmem.clone(), ib_mem];
        if self.runs.iter().any(|r| r.channel == COPY) {
            let sring = Arc::new(dev.alloc(SDMA_RING_BYTES, true)?);
            // the SDMA queue's read and write pointers (bytes) after the compute queue's
            let (_, sbell) = self.create_queue(QUEUE_TYPE_SDMA, &sring, &ptrs, 16, None, 2)?;
            let bell = Doorbell { offset: sbell.bell, bus: Arc::new(sbell), width: hcq::mmio::Width::U64 };
            let cring = CommandRing::new(Arc::new(BufBus(sring.clone())), 16, bell)?.with_barrier(Barrier::DeviceWrite);
            channels.push(Channel::new("copy", cring));
            self.ring_mem.push(sring);
        }
        let kpool = KernargPool::new(Arc::new(BufBus(kmem.clone())), kmem.va(), 16);
        let queue = QueueInfo { id: qid, ptrs };
        let hooks = Arc::new(AmdHooks { dev: dev.clone(), queue: queue.clone() });
        let hcq = Engine::new(hcq::error::device_name(&dev.name), timeline, enc, channels, kpool, hooks)?;
        hcq.timeline().set_policy(WaitPolicy::with_timeout_ms(self.timeout_ms.into()));
        self.queue_info = Some(queue);
        self.hcq = Some(Arc::new(hcq));
        Ok(())
    }

    fn replay(&mut self) -> Result<()> {
        let submitted = hcq::signal::host_clock_ns();
        let stamp = self.submit_call()?;
        self.wait(stamp)?;
        if self.profile {
            self.record_profile(submitted, hcq::signal::host_clock_ns())?;
        }
        Ok(())
    }

    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        let b = self.buffer(buffer)?;
        let off =
            usize::try_from(offset).map_err(|_| Error::InvalidArgument { what: "AMD read offset", value: offset })?;
        self.dev.check_process()?;
        self.settle()?;
        b.bus().read_bytes(off, out)
    }

    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        let b = self.buffer(buffer)?;
        let off =
            usize::try_from(offset).map_err(|_| Error::InvalidArgument { what: "AMD write offset", value: offset })?;
        self.dev.check_process()?;
        self.settle()?;
        b.bus().write_bytes(off, data)
    }
}

impl Drop for AmdBackend {
    fn drop(&mut self) {
        if self.dev.in_forked_child() {
            // Nothing of the parent's KFD objects is this process's to wait for, stop or free:
            // every KFD call would be refused (a simulated KFD's copied locks may even be held
            // by a thread that is not here). Leave them as the fork left them.
            core::mem::forget(self.hcq.take());
            core::mem::forget(core::mem::take(&mut self.kfd_queues));
            core::mem::forget(self.queue_info.take());
            core::mem::forget(self.timeline.take());
            core::mem::forget(self.scratch.take());
            core::mem::forget(core::mem::take(&mut self.ring_mem));
            core::mem::forget(core::mem::take(&mut self.buffers));
            core::mem::forget(core::mem::take(&mut self.code));
            core::mem::forget(core::mem::take(&mut self.kernargs));
            core::mem::forget(core::mem::take(&mut self.stamps));
            core::mem::forget(core::mem::take(&mut self.binds));
            return;
        }
        // Let the calls in flight finish, then stop the queues before their memory goes.
        let _ = self.settle();
        self.hcq = None;
        self.kfd_queues.clear();
    }
}

/// What the front door asks beyond a blocking call: submit and wait, the engine, host
/// pointers of outputs, the profiler.
impl Capabilities for AmdBackend {
    fn device_name(&self) -> &str {
        &self.dev.name
    }
    fn engine(&self) -> Option<&Engine> {
        self.hcq.as_deref()
    }
    fn submit(&mut self) -> Result<u64> {
        self.submit_call().map(Stamp::get)
    }
    fn try_wait(&self, stamp: u64, within: Duration) -> Result<bool> {
        self.dev.check_process()?;
        match &self.hcq {
            Some(e) => e.try_wait(Stamp::new(stamp), &policy_within(e, within)),
            None => Ok(true),
        }
    }
    fn wait(&self, stamp: u64, timeout: Option<Duration>) -> Result<()> {
        self.dev.check_process()?;
        let Some(e) = &self.hcq else { return Ok(()) };
        let r = match timeout {
            Some(t) => e.wait_with(Stamp::new(stamp), &policy_within(e, t)),
            None => e.wait(Stamp::new(stamp)),
        };
        r.map_err(|e| self.on_queue(e))
    }
    fn host_ptr(&self, view: ArgView) -> Option<*const u8> {
        let b = self.buffers.get(view.buffer as usize)?;
        if view.offset.checked_add(view.nbytes)? > b.size() {
            return None;
        }
        // CAST: inside the mapping, checked above.
        Some(b.host_ptr().wrapping_add(view.offset as usize))
    }
    fn profiler(&self) -> Option<ProfilerRef> {
        self.hcq.clone().map(|h| h as ProfilerRef)
    }
    /// The caller's pages are registered with KFD as a `USERPTR` buffer object
    /// ([`AmdBackend::bind_host`]).
    unsafe fn bind_host(&mut self, view: ArgView, _current: Option<u64>, ptr: *mut u8) -> Result<Option<u64>> {
        let own = self.buffer_addr(view.buffer as usize).unwrap_or(0) + view.offset;
        let name = self.dev.name.clone();
        // SAFETY: the caller's contract is bind_host's.
        unsafe { AmdBackend::bind_host(self, own, view.nbytes, ptr) }
            .map_err(|e| e.context(format!("device {name}")))?;
        Ok((!ptr.is_null()).then_some(ptr as u64))
    }
}
