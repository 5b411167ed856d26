//! The runner backend of the AMD device: loading (descriptors checked first), recording one
//! PM4 exec per launch into a core `HwQueue`, and calls through the engine's compute ring.

use crate::device::AmdDevice;
use crate::memory::{BufBus, GpuBuf, KfdPage, QueueDoorbell};
use core::time::Duration;
use hcq::barrier::Barrier;
use hcq::device::DeviceLimits;
use hcq::engine::{Channel, Engine};
use hcq::mmio::MmioBus;
use hcq::queue::HwQueue;
use hcq::ring::{CommandRing, Doorbell, KernargPool};
use hcq::signal::{OwnedSignal, SignalPage, Slot, WaitHooks, WaitPolicy};
use hcq::stamp::Stamp;
use hcq::{Error, Result};
use hcq_amd::codeobj::{CodeObject, Kernel};
use hcq_amd::kfd::uapi::{CreateQueueArgs, DestroyQueueArgs, MAX_QUEUE_PERCENTAGE, QUEUE_TYPE_COMPUTE, mmap};
use hcq_amd::pm4::{Pm4Config, Pm4Encoder, Scratch};
use hcq_bundle::hcqb::{Hcqb, ProgramRef};
use hcq_bundle::{Arch, ArgView};
use hcq_runner::plug::{Capabilities, policy_within};
use hcq_runner::{Backend, KernelLaunch};
use std::sync::Arc;

const ARCHS: [Arch; 1] = [Arch::AmdGfx1100];
/// Compute ring bytes (tinygrad's `AMDDevice` uses 0x800000; one captured call fits here many
/// times over and the core ring never overwrites words in flight).
const RING_BYTES: u64 = 1 << 20;
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

/// The AMD runner backend (see the crate docs).
pub struct AmdBackend {
    dev: Arc<AmdDevice>,
    /// Parsed code objects of the bundle's programs (from `prepare`), taken by `load_program`.
    parsed: Vec<Option<(CodeObject, Kernel)>>,
    max_private: u32,
    buffers: Vec<GpuBuf>,
    code: Vec<GpuBuf>,
    kernargs: Vec<GpuBuf>,
    kernarg_off: u64,
    enc: Option<Arc<Pm4Encoder>>,
    scratch: Option<GpuBuf>,
    queue: Option<HwQueue>,
    timeline: Option<OwnedSignal>,
    hcq: Option<Arc<Engine>>,
    /// Dropped before the ring memory: KFD stops the queue first.
    kfd_queue: Option<Queue>,
    /// The queue as errors name it.
    queue_info: Option<QueueInfo>,
    ring_mem: Vec<Arc<GpuBuf>>,
    timeout_ms: u32,
    block: Vec<u8>,
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
            scratch: None,
            queue: None,
            timeline: None,
            hcq: None,
            kfd_queue: None,
            queue_info: None,
            ring_mem: Vec::new(),
            timeout_ms,
            block: Vec::new(),
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

    fn buffer(&self, i: usize) -> Result<&GpuBuf> {
        self.buffers.get(i).ok_or(Error::OutOfBounds {
            what: "AMD buffer index",
            offset: i as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })
    }

    /// Submit one call without waiting; the stamp that completes it.
    pub fn submit_call(&mut self) -> Result<Stamp> {
        self.dev.check_process()?;
        let (Some(h), Some(q)) = (self.hcq.as_ref(), self.queue.as_mut()) else {
            return Err(Error::InvalidArgument { what: "AMD: call before the load finished", value: 0 });
        };
        // SAFETY: the captured queue was built from the bundle's checked launches over this
        // backend's buffer objects (code, kernel arguments, buffers, scratch), which live until
        // the backend drops, after its compute queue is destroyed.
        unsafe { h.submit(0, q) }
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

    fn settle(&self) -> Result<()> {
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

    /// The timeline signal and the captured queue, made at the first launch.
    fn hw_queue(&mut self) -> Result<&mut HwQueue> {
        if self.queue.is_none() {
            let enc = self.encoder()?;
            let page = Arc::new(self.dev.alloc(4096, true)?);
            let (ptr, va) = (page.host_ptr(), page.va());
            let ptr = core::ptr::NonNull::new(ptr.cast_mut().cast::<Slot>())
                .ok_or(Error::InvalidArgument { what: "AMD signal page address", value: 0 })?;
            // SAFETY: a zeroed, page-aligned uncached GTT mapping of SIGNAL_SLOTS × 16 bytes, seen
            // by the GPU at `va`, mapped until `page` (the owner) drops; the CPU touches it only
            // through the page's atomics.
            let sp = unsafe { SignalPage::from_raw_owning(ptr, SIGNAL_SLOTS, va, Box::new(page)) };
            let timeline = OwnedSignal::new(Arc::new(sp), 0)?;
            let mut q = HwQueue::new(enc, &timeline)?;
            // A call starts with the caches invalidated (tinygrad's HCQProgram: wait, barrier,
            // exec), so what the host wrote between calls is seen.
            q.memory_barrier()?;
            self.timeline = Some(timeline);
            self.queue = Some(q);
        }
        // PANIC: never: set above.
        Ok(self.queue.as_mut().expect("created above"))
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
        let entry = program.entry;
        let q = self.hw_queue()?;
        q.exec(entry, addr, groups, k.local_size).map_err(|e| e.context(format!("launch {} ({})", l.index, k.name)))?;
        Ok(())
    }

    fn record_copy(&mut self, _dst: u64, _src: u64, bytes: u64) -> Result<()> {
        Err(Error::Unsupported {
            what: "AMD: copy launches (they run on the SDMA queue, which this backend does not drive yet)",
            value: bytes,
        })
    }

    fn finish(&mut self) -> Result<()> {
        if self.hcq.is_some() {
            return Err(Error::InvalidArgument { what: "AMD: the load finished already", value: 0 });
        }
        self.hw_queue()?;
        let enc = self.encoder()?;
        // PANIC: `hw_queue()` above created both.
        let q = self.queue.as_mut().expect("created by hw_queue()");
        let timeline = self.timeline.take().expect("created by hw_queue()");
        q.finish()?;
        let dev = self.dev.clone();
        let ring = Arc::new(dev.alloc(RING_BYTES, true)?);
        let ptrs = Arc::new(dev.alloc(4096, true)?);
        let eop = Arc::new(dev.alloc(EOP_BYTES, false)?);
        let kmem = Arc::new(dev.alloc(4096, false)?);
        let mut cq = CreateQueueArgs {
            ring_base_address: ring.va(),
            read_pointer_address: ptrs.va(),
            write_pointer_address: ptrs.va() + 8,
            // CAST: 1 MiB.
            ring_size: RING_BYTES as u32,
            gpu_id: dev.node.gpu_id,
            queue_type: QUEUE_TYPE_COMPUTE,
            queue_percentage: MAX_QUEUE_PERCENTAGE,
            queue_priority: 7,
            eop_buffer_address: eop.va(),
            eop_buffer_size: EOP_BYTES,
            ..Default::default()
        };
        dev.kfd.create_queue(&mut cq)?;
        let kq = Queue { dev: dev.clone(), id: cq.queue_id };
        let (pages, bell_off) = mmap::doorbell_pages(cq.doorbell_offset);
        let bell_page = Arc::new(KfdPage::map(&dev.kfd, pages, mmap::DOORBELL_BYTES)?);
        // CAST: an offset inside the 8 KiB doorbell pages.
        let bell_bus = QueueDoorbell { page: bell_page, bell: bell_off as usize, wptr: ptrs.clone(), wptr_off: 8 };
        let bell = Doorbell { bus: Arc::new(bell_bus), offset: bell_off as usize, width: hcq::mmio::Width::U64 };
        // gfx11 doorbells take the 64-bit write pointer in dwords (tinygrad's signal_doorbell,
        // after the same value in the write-pointer memory); the ring words are written with
        // volatile word stores and a device write barrier orders them before both.
        let cring = CommandRing::new(Arc::new(BufBus(ring.clone())), 16, bell)?.with_barrier(Barrier::DeviceWrite);
        let kpool = KernargPool::new(Arc::new(BufBus(kmem.clone())), kmem.va(), 16);
        let queue = QueueInfo { id: cq.queue_id, ptrs: ptrs.clone() };
        let hooks = Arc::new(AmdHooks { dev: dev.clone(), queue: queue.clone() });
        let hcq = Engine::new(
            hcq::error::device_name(&dev.name),
            timeline,
            enc,
            vec![Channel::new("compute", cring)],
            kpool,
            hooks,
        )?;
        hcq.timeline().set_policy(WaitPolicy::with_timeout_ms(self.timeout_ms.into()));
        self.kfd_queue = Some(kq);
        self.queue_info = Some(queue);
        self.ring_mem = vec![ring, ptrs, eop, kmem];
        self.hcq = Some(Arc::new(hcq));
        Ok(())
    }

    fn replay(&mut self) -> Result<()> {
        let stamp = self.submit_call()?;
        self.wait(stamp)
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
            core::mem::forget(self.kfd_queue.take());
            core::mem::forget(self.queue_info.take());
            core::mem::forget(self.timeline.take());
            core::mem::forget(self.scratch.take());
            core::mem::forget(core::mem::take(&mut self.ring_mem));
            core::mem::forget(core::mem::take(&mut self.buffers));
            core::mem::forget(core::mem::take(&mut self.code));
            core::mem::forget(core::mem::take(&mut self.kernargs));
            return;
        }
        // Let the calls in flight finish, then stop the queue before its memory goes.
        let _ = self.settle();
        self.hcq = None;
        self.kfd_queue = None;
    }
}

/// What the front door asks beyond a blocking call: submit and wait, the engine, host
/// pointers of outputs.
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
}
