//! The `QCOM` device: an Adreno 630 behind KGSL, over any [`KgslIoctl`] backend — the kernel
//! node (`QCOM`) or the simulated KGSL whose dispatches run on the ir3 interpreter
//! (`QCOM:SIM`) — and its bundle runner backend ([`QcomBackend`], driven by
//! `hcq::runner::Runner`).
//!
//! A load picks the bundle's `adreno_a630` objects, validates each program
//! (`hcq_adreno::Program::from_json`) and uploads its shader image once; allocates every base
//! buffer as a KGSL GPU object; lays out each launch's constant block as
//! `programs[].adreno.consts` says (argument addresses, integer values, immediates, local size)
//! in its own slot of one constant object; and captures the launch list as one core `HwQueue`
//! encoded by the a6xx encoder (`hcq_adreno::A6xxEncoder`, every field patchable): the timeline
//! wait, an exec (or a `CP_MEMCPY` for a copy launch) + barrier per launch, the timeline signal.
//!
//! The engine is the core's ([`hcq::hcq::Hcq`]) with the IB shape ([`hcq::submit::IbPool`]):
//! KGSL has no user-visible ring, so a call patches the queue's timeline wait and signal (every
//! word that carries them), copies its words into the next free IB slot of a GPU object with
//! word-sized volatile stores, issues the device write barrier (`dsb st`) and hands the IB to
//! `GPU_COMMAND`. The timeline signal lies in a KGSL GPU object the CP writes; waits sleep in
//! `WAITTIMESTAMP` (the signal wait's hooks). Several calls can be in flight
//! ([`QcomBackend::submit_call`]); an IB slot is rewritten only once the timeline passed the
//! stamp of the call that used it. A fault on the simulated device ends a wait at once with the
//! fault's IB offset; a hang ends it as the timeout error.

use crate::backend::KgslIoctl;
use crate::capture::Capturing;

use crate::flags::{ContextFlags, MemFlags};
use crate::sim::SimKgsl;
use crate::sim_dispatch::{ArgSlots, Ir3Dispatch};
use crate::{Context, FreeAfter, GpuObject, Kgsl, TimestampHooks};
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, LruAllocator};
use hcq::barrier::Barrier;
use hcq::bundle::Arch;
use hcq::bundle::hcqb::ProgramRef;
use hcq::device::{Device, DeviceLimits, DeviceProperties};
use hcq::error::device_name;
use hcq::hcq::{Engine, Hcq};
use hcq::mmio::{MmioBus, Width};
use hcq::profile::{Event, EventKind};
use hcq::queue::HwQueue;
use hcq::ring::KernargPool;
use hcq::runner::{Backend, Launch};
use hcq::signal::{OwnedSignal, SignalPage, Slot, WaitHooks, WaitPolicy};
use hcq::stamp::Stamp;
use hcq::submit::{IbPool, IbSubmit};
use hcq::{Error, Result};
use hcq_adreno::{A6xxEncoder, EncoderConfig, Program};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Default time a call waits for its submission.
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;
/// Largest single allocation (the simulated KGSL's limit; a630 GPU memory is shared RAM).
pub const MAX_ALLOC_BYTES: u64 = 1 << 32;

/// Which KGSL the device talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// The kernel driver at `/dev/kgsl-3d0`.
    Node,
    /// The simulated KGSL (`SimKgsl` + the ir3 interpreter).
    Sim,
}

/// An opened QCOM device (see the module docs).
pub struct QcomDevice {
    name: String,
    kgsl: Arc<Kgsl>,
    ctx: Arc<Context>,
    sim: Option<Arc<SimKgsl>>,
    arg_slots: Option<ArgSlots>,
    capture: Option<Arc<Capturing<Arc<dyn KgslIoctl>>>>,
    alloc: LruAllocator,
    timeout_ms: u32,
}

impl core::fmt::Debug for QcomDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QcomDevice").field("name", &self.name).field("kgsl", &self.kgsl).finish_non_exhaustive()
    }
}

impl QcomDevice {
    /// Open `QCOM` (the node) or `QCOM:SIM`; with `capture`, every submission is also recorded
    /// as a freedreno `.rd` capture ([`QcomDevice::rd_capture`]).
    pub fn open(backing: Backing, capture: bool) -> Result<Arc<QcomDevice>> {
        match backing {
            Backing::Node => {
                let io = crate::backend::RustixKgsl::open(crate::DEFAULT_NODE).map_err(crate::open_error)?;
                Self::with_backend("QCOM", Arc::new(io), None, None, capture)
            }
            Backing::Sim => Self::sim_with(Ir3Dispatch::new(), capture),
        }
    }

    /// `QCOM:SIM` with `dispatch` (a step limit of one's choosing) as its shader core; the
    /// device registers each program's argument slots with it.
    pub fn sim_with(dispatch: Ir3Dispatch, capture: bool) -> Result<Arc<QcomDevice>> {
        let slots = ArgSlots::default();
        let sim = Arc::new(SimKgsl::new(Box::new(dispatch.with_arg_slots(slots.clone()))));
        Self::with_backend("QCOM:SIM", sim.clone(), Some(sim), Some(slots), capture)
    }

    /// A device over `io` (a fake, a wrapped backend); `sim` is the simulated KGSL behind it, if
    /// any, for fault reports, and `arg_slots` the table its dispatcher checks arguments with
    /// (the device registers every program it uploads).
    pub fn with_backend(
        name: &str,
        io: Arc<dyn KgslIoctl>,
        sim: Option<Arc<SimKgsl>>,
        arg_slots: Option<ArgSlots>,
        capture: bool,
    ) -> Result<Arc<QcomDevice>> {
        let (io, capture) = if capture {
            let c = Arc::new(Capturing::new(io, "hcq run"));
            (c.clone() as Arc<dyn KgslIoctl>, Some(c))
        } else {
            (io, None)
        };
        let kgsl = Arc::new(Kgsl::with_backend(io)?);
        let ctx = Arc::new(kgsl.create_context(ContextFlags::compute())?);
        let backend = KgslAllocator { kgsl: kgsl.clone(), ctx: ctx.clone(), objs: Mutex::new(HashMap::new()) };
        Ok(Arc::new(QcomDevice {
            name: name.into(),
            alloc: LruAllocator::new(name, Box::new(backend)),
            kgsl,
            ctx,
            sim,
            arg_slots,
            capture,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }))
    }

    /// The KGSL device.
    pub fn kgsl(&self) -> &Arc<Kgsl> {
        &self.kgsl
    }

    /// The device's context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The simulated KGSL, on `QCOM:SIM`.
    pub fn sim(&self) -> Option<&Arc<SimKgsl>> {
        self.sim.as_ref()
    }

    /// The `.rd` capture so far, when opened with `capture`.
    pub fn rd_capture(&self) -> Option<Vec<u8>> {
        self.capture.as_ref().map(|c| c.bytes())
    }

    /// Submit the IB of `bytes` at `ib` and wait for it (`timeout_ms`): a timeout is
    /// `Error::Timeout`, a fault `Error::DeviceHung` with the simulated CP's report as context.
    pub fn submit_and_wait(&self, ib: u64, bytes: u64, timeout_ms: u32) -> Result<u32> {
        let r = self
            .kgsl
            .submit(&self.ctx, ib, bytes)
            .and_then(|ts| self.kgsl.wait(&self.ctx, ts, timeout_ms).map(|()| ts));
        r.map_err(|e| match self.sim.as_ref().and_then(|s| s.fault()) {
            Some(f) if matches!(e, Error::DeviceHung { .. }) => e.context(f),
            _ => e,
        })
    }
}

impl Device for QcomDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn allocator(&self) -> &LruAllocator {
        &self.alloc
    }
    fn load_program(&self, _image: &hcq::program::ProgramImage) -> Result<Arc<dyn hcq::program::Program>> {
        Err(Error::Unsupported {
            what: "QCOM programs load from a bundle's adreno_a630 object and its programs[].adreno metadata \
                   (hcq::runner::Runner with hcq_kgsl::device::QcomBackend); a ProgramImage carries no a630 metadata",
            value: 0,
        })
    }
    fn synchronize(&self) -> Result<()> {
        if !self.ctx.has_submitted() {
            return Ok(());
        }
        self.kgsl.wait(&self.ctx, self.ctx.last_submitted(), self.timeout_ms)
    }
    fn properties(&self) -> DeviceProperties {
        let info = self.kgsl.info();
        let (maj, min) = self.kgsl.version();
        DeviceProperties {
            kind: "adreno".into(),
            arch: "a630".into(),
            cores: 1,
            memory_bytes: 0,
            timestamp_hz: 19_200_000,
            notes: format!(
                "{} chip {:#010x}, GMEM {} KiB, KGSL {maj}.{min}",
                if self.sim.is_some() { "simulated KGSL + ir3 interpreter," } else { "KGSL" },
                info.chip_id,
                info.gmem_bytes >> 10
            ),
        }
    }
    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            memory_bytes: MAX_ALLOC_BYTES,
            max_alloc_bytes: MAX_ALLOC_BYTES,
            alloc_align: 4096,
            max_kernel_args: hcq_adreno::program::MAX_ARGS,
            max_grid: [u32::MAX; 3],
        }
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}

/// Device memory of the QCOM device: KGSL GPU objects, copied with word-sized volatile
/// accesses, freed only once the context retired the last submission made before the free.
struct KgslAllocator {
    kgsl: Arc<Kgsl>,
    ctx: Arc<Context>,
    objs: Mutex<HashMap<u64, GpuObject>>,
}

impl KgslAllocator {
    fn with<T>(&self, mem: &DeviceMemory, f: impl FnOnce(&GpuObject) -> Result<T>) -> Result<T> {
        let objs = self.objs.lock().map_err(|_| Error::DeviceHung { device: device_name("QCOM") })?;
        let o = objs
            .get(&mem.addr())
            .ok_or(Error::InvalidArgument { what: "QCOM memory not made by this allocator", value: mem.addr() })?;
        f(o)
    }
}

impl Allocator for KgslAllocator {
    fn alloc(&self, size: u64, _spec: &BufferSpec) -> Result<DeviceMemory> {
        let o = self.kgsl.alloc(size, MemFlags::USE_CPU_MAP)?;
        // `free` releases the object only after the context's last submission; copies go through
        // the object's volatile bus, so no CPU pointer is handed out.
        // SAFETY: the object is live and owned by this allocator's table until `free`.
        let mem = unsafe { DeviceMemory::from_raw_parts_with_handle(o.gpuaddr(), size, None, o.id().into()) };
        self.objs.lock().map_err(|_| Error::DeviceHung { device: device_name("QCOM") })?.insert(o.gpuaddr(), o);
        Ok(mem)
    }
    fn free(&self, mem: DeviceMemory, _spec: &BufferSpec) {
        let Some(o) = self.objs.lock().ok().and_then(|mut m| m.remove(&mem.addr())) else { return };
        let after = if self.ctx.has_submitted() {
            FreeAfter::Timestamp { context: self.ctx.id(), timestamp: self.ctx.last_submitted() }
        } else {
            FreeAfter::NeverSubmitted
        };
        if let Err(e) = self.kgsl.free(o, after) {
            log::warn!("QCOM: freeing GPU object at {:#x}: {e}", mem.addr());
        }
    }
    fn copy_in(&self, dst: &DeviceMemory, offset: u64, src: &[u8]) -> Result<()> {
        dst.check_range("QCOM copy_in", offset, src.len() as u64)?;
        self.with(dst, |o| write_words(o, offset, src))
    }
    fn copy_out(&self, dst: &mut [u8], src: &DeviceMemory, offset: u64) -> Result<()> {
        src.check_range("QCOM copy_out", offset, dst.len() as u64)?;
        self.with(src, |o| o.bus().read_bytes(offset as usize, dst))
    }
}

/// Write `data` at byte `off` of `obj` with volatile stores: 32-bit words where both are
/// word-aligned, single bytes otherwise (never a `memcpy` into memory the GPU reads).
fn write_words(obj: &GpuObject, off: u64, data: &[u8]) -> Result<()> {
    let off = usize::try_from(off).map_err(|_| Error::InvalidArgument { what: "QCOM write offset", value: off })?;
    volatile_write(obj.bus(), off, data)
}

fn volatile_write(bus: &dyn MmioBus, off: usize, data: &[u8]) -> Result<()> {
    hcq::mmio::check_range("QCOM buffer write", off, data.len(), bus.size())?;
    if off.is_multiple_of(4) && data.len().is_multiple_of(4) {
        for (i, c) in data.chunks_exact(4).enumerate() {
            bus.write(off + 4 * i, Width::U32, u32::from_le_bytes([c[0], c[1], c[2], c[3]]).into())?;
        }
    } else {
        for (i, b) in data.iter().enumerate() {
            bus.write(off + i, Width::U8, u64::from(*b))?;
        }
    }
    Ok(())
}

/// When a GPU object dropped now may go back to KGSL: after the context's last submission.
fn free_after(ctx: &Context) -> FreeAfter {
    if ctx.has_submitted() {
        FreeAfter::Timestamp { context: ctx.id(), timestamp: ctx.last_submitted() }
    } else {
        FreeAfter::NeverSubmitted
    }
}

/// A GPU object owned by what points into it (the engine's IB and kernel-argument pools, the
/// timeline's signal page): when its last holder drops, it goes back to KGSL after the
/// context's last submission at that moment, so neither the CPU nor a submission still in
/// flight uses freed memory, and no object outlives its last holder.
struct Retiring {
    kgsl: Arc<Kgsl>,
    ctx: Arc<Context>,
    obj: Option<GpuObject>,
}

impl Retiring {
    fn new(kgsl: &Arc<Kgsl>, ctx: &Arc<Context>, obj: GpuObject) -> Self {
        Self { kgsl: kgsl.clone(), ctx: ctx.clone(), obj: Some(obj) }
    }

    fn obj(&self) -> &GpuObject {
        // PANIC: never: `obj` is taken only in `drop`.
        self.obj.as_ref().expect("a retiring object is present until it drops")
    }
}

impl Drop for Retiring {
    fn drop(&mut self) {
        if let Some(o) = self.obj.take()
            && let Err(e) = self.kgsl.free(o, free_after(&self.ctx))
        {
            log::warn!("QCOM: freeing a GPU object: {e}");
        }
    }
}

/// The first `len` bytes of a KGSL GPU object as a core MMIO bus (volatile accesses through its
/// CPU mapping): the memory of the engine's IB pool and of the kernel-argument pool.
struct ObjBus {
    obj: Arc<Retiring>,
    len: usize,
}

impl ObjBus {
    fn new(obj: Arc<Retiring>, len: usize) -> Result<Self> {
        hcq::mmio::check_range("QCOM object window", 0, len, obj.obj().bus().size())?;
        Ok(Self { obj, len })
    }
}

impl MmioBus for ObjBus {
    fn size(&self) -> usize {
        self.len
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        hcq::mmio::check_range("QCOM object read", offset, width.bytes(), self.len)?;
        self.obj.obj().bus().read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        hcq::mmio::check_range("QCOM object write", offset, width.bytes(), self.len)?;
        self.obj.obj().bus().write(offset, width, value)
    }
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        hcq::mmio::check_range("QCOM object write", offset, src.len(), self.len)?;
        volatile_write(self.obj.obj().bus(), offset, src)
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        hcq::mmio::check_range("QCOM object read", offset, dst.len(), self.len)?;
        self.obj.obj().bus().read_bytes(offset, dst)
    }
}

/// A device error with the simulated CP's fault report as context, when there is one (and the
/// error does not carry it yet).
fn with_fault(sim: Option<&Arc<SimKgsl>>, e: Error) -> Error {
    match sim.and_then(|s| s.fault()) {
        Some(f) if matches!(e, Error::DeviceHung { .. }) => e.context(f),
        _ => e,
    }
}

/// The IB engine's submit hook: `IOCTL_KGSL_GPU_COMMAND` with the IB (the kernel's ring write
/// and its barriers follow; the engine issued the device write barrier before this call).
struct GpuCommandHook {
    kgsl: Arc<Kgsl>,
    ctx: Arc<Context>,
    sim: Option<Arc<SimKgsl>>,
}

impl IbSubmit for GpuCommandHook {
    fn submit_ib(&mut self, addr: u64, bytes: u64, _stamp: Stamp) -> Result<()> {
        self.kgsl.submit(&self.ctx, addr, bytes).map(|_| ()).map_err(|e| with_fault(self.sim.as_ref(), e))
    }
}

/// The timeline wait's hooks: sleep in KGSL `WAITTIMESTAMP` on the context
/// ([`TimestampHooks`]); a fault seen there ends the wait at once, with the simulated CP's
/// report (the IB offset) as context on `QCOM:SIM`.
#[derive(Debug)]
struct QcomHooks {
    inner: TimestampHooks,
    sim: Option<Arc<SimKgsl>>,
}

impl WaitHooks for QcomHooks {
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn yield_now(&self) {
        self.inner.yield_now()
    }
    fn sleep(&self, idle_ns: u64) {
        self.inner.sleep(idle_ns)
    }
    fn fault(&self) -> Option<Error> {
        self.inner.fault().map(|e| with_fault(self.sim.as_ref(), e))
    }
}

/// IB slots of a [`QcomBackend`] unless [`QcomBackend::set_ib_slots`] says otherwise: calls in
/// flight at most.
pub const DEFAULT_IB_SLOTS: usize = 4;
/// Signal slots in the timeline's GPU object (one page; the timeline uses the first).
const SIGNAL_SLOTS: usize = 4096 / 16;

/// The runner backend of the QCOM device (see the module docs).
pub struct QcomBackend {
    // Dropped first (see `Drop`): the captured queue, then the engine state, whose timeline
    // signal lies in `signal`'s mapping.
    queue: Option<HwQueue>,
    hcq: Option<Arc<Hcq>>,
    /// The timeline signal until the engine takes it (its page owns the signal object).
    timeline: Option<OwnedSignal>,
    dev: Arc<QcomDevice>,
    buffers: Vec<GpuObject>,
    /// Each program's shader image, uploaded once.
    code: Vec<GpuObject>,
    programs: Vec<(Program, u64)>,
    enc: Option<Arc<A6xxEncoder>>,
    /// Scratch (16 B for the barrier's flush event), private memory, timeline signal, IB pool
    /// and kernel-argument pool objects.
    scratch: Option<GpuObject>,
    pvt: Option<GpuObject>,
    signal: Option<GpuObject>,
    ib: Option<Arc<Retiring>>,
    kernarg_mem: Option<Arc<Retiring>>,
    consts: Vec<GpuObject>,
    /// Next free byte of the last constant object.
    const_off: u64,
    launches: usize,
    ib_slots: usize,
    /// The timeline value the engine starts from (see `set_calls`).
    start: u64,
    block: Vec<u8>,
    timeout_ms: u32,
    /// `--profile`: every launch bracketed by always-on-counter timestamps.
    profile: bool,
    /// Timestamp objects (begin and end, 8 bytes each, per launch; [`STAMPS_PER_OBJECT`] launches
    /// per object).
    stamps: Vec<GpuObject>,
    /// Per profiled launch: event kind, name (interned once the engine exists), argument.
    profiled: Vec<(EventKind, String, u64)>,
    profiled_ids: Vec<(EventKind, u32, u64)>,
}

impl core::fmt::Debug for QcomBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QcomBackend").field("dev", &self.dev.name).field("calls", &self.calls()).finish_non_exhaustive()
    }
}

const ARCHS: [Arch; 1] = [Arch::AdrenoA630];
/// Profiled launches per timestamp object (16 bytes each).
const STAMPS_PER_OBJECT: usize = 256;
/// The a6xx always-on counter's rate (`CP_ALWAYS_ON_COUNTER`, 19.2 MHz XO on SDM845).
const ALWAYS_ON_HZ: u64 = 19_200_000;
/// Constant blocks per constant object (each launch has its own 4 KiB slot).
const CONSTS_PER_OBJECT: usize = 256;

impl QcomBackend {
    /// A backend on `dev`.
    pub fn new(dev: Arc<QcomDevice>) -> Result<Self> {
        let signal = dev.kgsl.alloc(4096, MemFlags::USE_CPU_MAP)?;
        let timeout_ms = dev.timeout_ms;
        Ok(Self {
            queue: None,
            hcq: None,
            timeline: None,
            dev,
            buffers: Vec::new(),
            code: Vec::new(),
            programs: Vec::new(),
            enc: None,
            scratch: None,
            pvt: None,
            signal: Some(signal),
            ib: None,
            kernarg_mem: None,
            consts: Vec::new(),
            const_off: 0,
            launches: 0,
            ib_slots: DEFAULT_IB_SLOTS,
            start: 0,
            block: Vec::new(),
            timeout_ms,
            profile: false,
            stamps: Vec::new(),
            profiled: Vec::new(),
            profiled_ids: Vec::new(),
        })
    }

    /// Profile every launch (before the load): each dispatch and copy is bracketed by two
    /// `CP_REG_TO_MEM` writes of the always-on counter (`Command::Timestamp`, which waits for
    /// idle first), and after each [`Backend::replay`] the pairs become `Program`/`Copy` events
    /// of the engine's profiler ([`QcomBackend::hcq`]`.profiler()`), in ns of the counter's
    /// 19.2 MHz clock. On `QCOM:SIM` the counter is the simulated CP's model clock (a tick per
    /// packet and per work-group), so the figures are relative costs, not time.
    pub fn set_profile(&mut self, on: bool) -> Result<()> {
        if self.enc.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: profiling is chosen before the first launch", value: 0 });
        }
        self.profile = on;
        Ok(())
    }

    /// A timestamp pair for the next profiled launch: (begin, end) device addresses.
    fn stamp_pair(&mut self, kind: EventKind, name: &str, arg: u64) -> Result<(u64, u64)> {
        let i = self.profiled.len();
        if i / STAMPS_PER_OBJECT >= self.stamps.len() {
            self.stamps.push(self.dev.kgsl.alloc((STAMPS_PER_OBJECT * 16) as u64, MemFlags::USE_CPU_MAP)?);
        }
        let base = self.stamps[i / STAMPS_PER_OBJECT].gpuaddr() + (i % STAMPS_PER_OBJECT) as u64 * 16;
        self.profiled.push((kind, name.into(), arg));
        Ok((base, base + 8))
    }

    /// After a call: the profiled launches' timestamps as profiler events.
    fn record_profile(&mut self) -> Result<()> {
        let Some(h) = &self.hcq else { return Ok(()) };
        let prof = h.profiler();
        if !prof.is_enabled() || self.profiled.is_empty() {
            return Ok(());
        }
        if self.profiled_ids.len() != self.profiled.len() {
            self.profiled_ids = self.profiled.iter().map(|(k, n, a)| (*k, prof.intern(n), *a)).collect();
        }
        // CAST: ticks of a 19.2 MHz counter to ns, in u128 (no overflow for any u64 tick count).
        let ns = |t: u64| (u128::from(t) * 1_000_000_000 / u128::from(ALWAYS_ON_HZ)) as u64;
        for (i, &(kind, name, arg)) in self.profiled_ids.iter().enumerate() {
            let bus = self.stamps[i / STAMPS_PER_OBJECT].bus();
            let off = (i % STAMPS_PER_OBJECT) * 16;
            let (t0, t1) = (bus.read(off, Width::U64)?, bus.read(off + 8, Width::U64)?);
            prof.record(Event { kind, name, start_ns: ns(t0), end_ns: ns(t1.max(t0)), arg });
        }
        Ok(())
    }

    /// Wait at most `ms` without progress per wait (default [`DEFAULT_TIMEOUT_MS`]).
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.timeout_ms = ms;
        if let Some(h) = &self.hcq {
            h.timeline().set_policy(WaitPolicy::with_timeout_ms(ms.into()));
        }
    }

    /// IB slots of the engine (calls in flight at most; default [`DEFAULT_IB_SLOTS`]). Only
    /// before the load finished.
    pub fn set_ib_slots(&mut self, slots: usize) -> Result<()> {
        if self.hcq.is_some() || slots == 0 {
            return Err(Error::InvalidArgument {
                what: "QCOM IB slots: at least one, set before the load finishes",
                value: slots as u64,
            });
        }
        self.ib_slots = slots;
        Ok(())
    }

    /// Continue the timeline at `calls`: the next call signals `calls + 1` (to resume the
    /// timeline of an earlier run). Errors while a call is in flight.
    pub fn set_calls(&mut self, calls: u64) -> Result<()> {
        match &self.hcq {
            Some(h) => h.resume_at(Stamp::new(calls)),
            None => {
                self.start = calls;
                Ok(())
            }
        }
    }

    /// The timeline value of the last call submitted (its completion on the 64-bit timeline).
    pub fn calls(&self) -> u64 {
        self.hcq.as_ref().map_or(self.start, |h| h.timeline().last_submitted().get())
    }

    /// The device.
    pub fn device(&self) -> &Arc<QcomDevice> {
        &self.dev
    }

    /// The engine state (after the load): timeline, IB engine, profiler.
    pub fn hcq(&self) -> Option<&Arc<Hcq>> {
        self.hcq.as_ref()
    }

    /// The captured PM4 words (after the load; patched for the last call submitted).
    pub fn words(&self) -> &[u32] {
        self.queue.as_ref().map_or(&[], |q| q.words())
    }

    /// Device address of base buffer `i`.
    pub fn buffer_addr(&self, i: usize) -> Option<u64> {
        self.buffers.get(i).map(GpuObject::gpuaddr)
    }

    /// Submit one call (the captured queue, its timeline wait and signal patched) without
    /// waiting; returns the timeline value that completes it. Blocks when every IB slot holds a
    /// call whose stamp has not passed.
    pub fn submit_call(&mut self) -> Result<Stamp> {
        let (Some(h), Some(q)) = (self.hcq.as_ref(), self.queue.as_mut()) else {
            return Err(Error::InvalidArgument { what: "QCOM: call before the load finished", value: 0 });
        };
        // The captured queue was built from the bundle's checked launches over this backend's
        // objects, which live until the backend drops (after the context's last submission).
        // SAFETY: every command names this backend's live objects inside their bounds.
        unsafe { h.submit(0, q) }.map_err(|e| with_fault(self.dev.sim.as_ref(), e))
    }

    /// Wait (sleeping in KGSL `WAITTIMESTAMP`) until the timeline reaches `stamp`.
    pub fn wait(&self, stamp: Stamp) -> Result<()> {
        match &self.hcq {
            Some(h) => h.wait(stamp).map_err(|e| with_fault(self.dev.sim.as_ref(), e)),
            None => Ok(()),
        }
    }

    /// Wait for every call submitted.
    pub fn synchronize(&self) -> Result<()> {
        match &self.hcq {
            Some(h) => self.wait(h.timeline().last_submitted()),
            None => Ok(()),
        }
    }

    /// Before a host access to a buffer: wait for the calls in flight. A device that faulted
    /// or hung runs nothing more of them, so its memory is read (or written) as it is.
    fn settle(&self) -> Result<()> {
        match self.synchronize() {
            Err(e) if !matches!(e.root(), Error::DeviceHung { .. }) => Err(e),
            _ => Ok(()),
        }
    }

    /// The encoder, created at the first launch with private memory for the largest program;
    /// with it the timeline signal and the captured queue.
    fn encoder(&mut self) -> Result<Arc<A6xxEncoder>> {
        if let Some(e) = &self.enc {
            return Ok(e.clone());
        }
        let kgsl = &self.dev.kgsl;
        let stack = self.programs.iter().map(|(p, _)| p.stack_bytes).max().unwrap_or(0).max(4096);
        let scratch = kgsl.alloc(4096, MemFlags::USE_CPU_MAP)?;
        let pvt = kgsl.alloc(stack, MemFlags::USE_CPU_MAP)?;
        let enc = Arc::new(A6xxEncoder::new(EncoderConfig {
            scratch: scratch.gpuaddr(),
            pvt_mem: pvt.gpuaddr(),
            pvt_mem_bytes: pvt.size(),
        })?);
        for (p, code) in &mut self.programs {
            if let Some(slots) = &self.dev.arg_slots {
                let args = p.slots.iter().filter_map(|&(o, s)| match s {
                    hcq_adreno::program::Slot::Arg { arg } => Some((arg, o)),
                    _ => None,
                });
                slots.register(*code, args.collect());
            }
            *code = enc.add_program(p, *code)?;
        }
        let sig = self.signal.take().ok_or(Error::InvalidArgument { what: "QCOM: no signal object", value: 0 })?;
        let (base, gpuaddr) = (sig.bus().base().cast::<Slot>(), sig.gpuaddr());
        let owner = Box::new(Retiring::new(kgsl, &self.dev.ctx, sig));
        // The page owns the object: every Signal and engine pointing into it keeps it mapped,
        // and it goes back to KGSL after the last of them (and the last submission) is done.
        // SAFETY: a zeroed, page-aligned mapping of SIGNAL_SLOTS × 16 bytes, seen by the GPU at
        // `gpuaddr`, mapped until `owner` drops; the CPU uses its atomics only.
        let page = unsafe { SignalPage::from_raw_owning(base, SIGNAL_SLOTS, gpuaddr, owner) };
        let timeline = OwnedSignal::new(Arc::new(page), 0)?;
        self.queue = Some(HwQueue::new(enc.clone(), &timeline)?);
        self.timeline = Some(timeline);
        self.scratch = Some(scratch);
        self.pvt = Some(pvt);
        self.enc = Some(enc.clone());
        Ok(enc)
    }
}

impl Backend for QcomBackend {
    type Program = usize;

    fn archs(&self) -> &[Arch] {
        &ARCHS
    }

    fn limits(&self) -> DeviceLimits {
        self.dev.limits()
    }

    fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        debug_assert_eq!(index, self.buffers.len());
        let o = self.dev.kgsl.alloc(nbytes, MemFlags::USE_CPU_MAP)?;
        write_words(&o, 0, initial)?;
        let a = o.gpuaddr();
        self.buffers.push(o);
        Ok(a)
    }

    fn load_program(&mut self, _index: usize, p: &ProgramRef<'_>, _arch: Arch, object: &[u8]) -> Result<usize> {
        if self.enc.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: program loaded after the first launch", value: 0 });
        }
        let meta = p.adreno.ok_or(Error::Malformed {
            what: "bundle program",
            at: 0,
            reason: "an adreno_a630 object without its programs[].adreno metadata",
        })?;
        let prog = Program::from_json(object, meta)?;
        let code = self.dev.kgsl.alloc(prog.image.len() as u64, MemFlags::USE_CPU_MAP)?;
        write_words(&code, 0, &prog.image)?;
        // Until the encoder exists the second field holds the code address.
        self.programs.push((prog, code.gpuaddr()));
        self.code.push(code);
        Ok(self.programs.len() - 1)
    }

    fn record_kernel(&mut self, program: &usize, l: &Launch<'_, '_>) -> Result<()> {
        let gpu = l.kernel.gpu.ok_or(Error::Malformed {
            what: "bundle launch",
            at: l.index as u64,
            reason: "no Adreno dispatch (gpu_global_size/gpu_local_size/gpu_vals)",
        })?;
        self.encoder()?;
        let (prog, _) = &self.programs[*program];
        prog.check_local(gpu.local_size)?;
        let vals: Vec<i32> = gpu
            .vals()
            .map(|v| {
                i32::try_from(v)
                    .map_err(|_| Error::InvalidArgument { what: "adreno integer argument (32-bit)", value: v as u64 })
            })
            .collect::<Result<_>>()?;
        self.block.resize(prog.const_block_bytes as usize, 0);
        prog.fill_consts(&mut self.block, l.args, &vals, gpu.local_size)?;
        // One 4 KiB-aligned slot per launch, at the constant objects' cursor: slots of programs
        // with larger blocks take more room, and never overlap the next launch's.
        let slot_bytes = u64::from(prog.const_block_bytes).next_multiple_of(4096).max(4096);
        let fits = self.consts.last().is_some_and(|o| self.const_off + slot_bytes <= o.size());
        if !fits {
            let bytes = (CONSTS_PER_OBJECT as u64 * 4096).max(slot_bytes);
            self.consts.push(self.dev.kgsl.alloc(bytes, MemFlags::USE_CPU_MAP)?);
            self.const_off = 0;
        }
        // PANIC: an object was pushed above when there was none.
        let obj = self.consts.last().expect("a constant object");
        let off = self.const_off;
        self.const_off += slot_bytes;
        write_words(obj, off, &self.block)?;
        let kernargs = obj.gpuaddr() + off;
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let stamps = if self.profile {
            let name = l.kernel.name.to_string();
            Some(self.stamp_pair(EventKind::Program, &name, u64::from(gpu.global_size.iter().product::<u32>()))?)
        } else {
            None
        };
        let (_, handle) = &self.programs[*program];
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let q = self.queue.as_mut().expect("created by encoder()");
        if let Some((t0, _)) = stamps {
            q.timestamp_at(t0)?;
        }
        q.exec(*handle, kernargs, gpu.global_size, gpu.local_size)?;
        if let Some((_, t1)) = stamps {
            q.timestamp_at(t1)?;
        }
        q.memory_barrier()?;
        self.launches += 1;
        Ok(())
    }

    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        // CP_MEMCPY after the dispatches before it (the encoder waits for idle), then a barrier
        // (cache flush and invalidate) so later dispatches read the copied bytes.
        self.encoder()?;
        let stamps = if self.profile { Some(self.stamp_pair(EventKind::Copy, "copy", bytes)?) } else { None };
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let q = self.queue.as_mut().expect("created by encoder()");
        if let Some((t0, _)) = stamps {
            q.timestamp_at(t0)?;
        }
        q.copy(dst, src, bytes)?;
        if let Some((_, t1)) = stamps {
            q.timestamp_at(t1)?;
        }
        q.memory_barrier()?;
        self.launches += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if self.hcq.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: the load finished already", value: 0 });
        }
        let enc = self.encoder()?;
        // PANIC: `encoder()` succeeded above, and it creates the queue and the timeline signal.
        let q = self.queue.as_mut().expect("created by encoder()");
        let timeline = self.timeline.take().expect("created by encoder()");
        q.finish()?;
        let kgsl = &self.dev.kgsl;
        // One IB slot holds the whole captured queue.
        let slot_bytes = (4 * q.words().len()).next_multiple_of(256);
        let pool_bytes = slot_bytes * self.ib_slots;
        let ctx = &self.dev.ctx;
        let ib = Arc::new(Retiring::new(kgsl, ctx, kgsl.alloc(pool_bytes as u64, MemFlags::USE_CPU_MAP)?));
        let kernarg_mem = Arc::new(Retiring::new(kgsl, ctx, kgsl.alloc(4096, MemFlags::USE_CPU_MAP)?));
        let hook = GpuCommandHook { kgsl: kgsl.clone(), ctx: self.dev.ctx.clone(), sim: self.dev.sim.clone() };
        let pool = IbPool::new(
            Arc::new(ObjBus::new(ib.clone(), pool_bytes)?),
            ib.obj().gpuaddr(),
            slot_bytes,
            Barrier::DeviceWrite,
            Box::new(hook),
        )?;
        // The runner's constant blocks live in the constant objects above (captured once); this
        // pool serves `Submitter::kernargs` for work built at run time.
        let kernargs =
            KernargPool::new(Arc::new(ObjBus::new(kernarg_mem.clone(), 4096)?), kernarg_mem.obj().gpuaddr(), 16);
        let hooks =
            QcomHooks { inner: TimestampHooks::new(kgsl.clone(), self.dev.ctx.clone()), sim: self.dev.sim.clone() };
        let hcq = Hcq::new(
            device_name(&self.dev.name),
            timeline,
            enc,
            vec![Engine::new("compute", pool)],
            kernargs,
            Arc::new(hooks),
        )?;
        hcq.timeline().set_policy(WaitPolicy::with_timeout_ms(self.timeout_ms.into()));
        if self.start != 0 {
            hcq.resume_at(Stamp::new(self.start))?;
        }
        self.ib = Some(ib);
        self.kernarg_mem = Some(kernarg_mem);
        self.hcq = Some(Arc::new(hcq));
        Ok(())
    }

    fn replay(&mut self) -> Result<()> {
        let stamp = self.submit_call()?;
        self.wait(stamp)?;
        if self.profile {
            self.record_profile()?;
        }
        Ok(())
    }

    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        let o = self.buffers.get(buffer).ok_or(Error::OutOfBounds {
            what: "QCOM buffer index",
            offset: buffer as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })?;
        let off =
            usize::try_from(offset).map_err(|_| Error::InvalidArgument { what: "QCOM read offset", value: offset })?;
        self.settle()?;
        o.bus().read_bytes(off, out)
    }

    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        let o = self.buffers.get(buffer).ok_or(Error::OutOfBounds {
            what: "QCOM buffer index",
            offset: buffer as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })?;
        self.settle()?;
        write_words(o, offset, data)
    }
}

impl Drop for QcomBackend {
    fn drop(&mut self) {
        // The engine's objects (timeline signal page, IB and kernel-argument pools) are owned by
        // what points into them: they go back to KGSL when the last holder drops, this backend
        // or a clone of its engine ([`QcomBackend::hcq`]).
        self.queue = None;
        self.hcq = None;
        self.timeline = None;
        self.ib = None;
        self.kernarg_mem = None;
        // Every other object goes back to KGSL only after the context's last submission retired.
        let after = free_after(&self.dev.ctx);
        let objs =
            self.buffers.drain(..).chain(self.code.drain(..)).chain(self.consts.drain(..)).chain(self.stamps.drain(..));
        let objs = objs.chain(self.scratch.take()).chain(self.pvt.take()).chain(self.signal.take());
        for o in objs {
            if let Err(e) = self.dev.kgsl.free(o, after) {
                log::warn!("QCOM: freeing a GPU object: {e}");
            }
        }
    }
}

/// The registry entry for `QCOM` (the KGSL node; a missing node is a clear error).
pub fn qcom_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(QcomDevice::open(Backing::Node, false)?)
    }
    hcq::device::DeviceKind { name: "QCOM", count, open }
}

/// The registry entry for `QCOM:SIM` (the simulated KGSL running shaders on the ir3 interpreter).
pub fn qcom_sim_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(QcomDevice::open(Backing::Sim, false)?)
    }
    hcq::device::DeviceKind { name: "QCOM:SIM", count, open }
}
