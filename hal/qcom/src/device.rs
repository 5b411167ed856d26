//! The `QCOM` device: an Adreno 630 behind a kernel interface ([`GpuKernel`]): KGSL over any
//! [`KgslIoctl`] backend — the kernel node (`KGSL+QCOM`) or the simulated KGSL whose dispatches
//! run on the ir3 interpreter (`QCOM:SIM`, opened by the `hcq-sim-adreno` crate) — or the
//! mainline MSM DRM driver (`MSM+QCOM`, `MSM+QCOM:SIM`); `QCOM` is whichever node exists. And
//! its bundle runner backend ([`QcomBackend`], driven by `hcq::runner::Runner`).
//!
//! A load picks the bundle's `adreno_a630` objects; before anything is allocated the core checks
//! every size against the limits the device states ([`QcomDevice`]'s `Device::limits`: the
//! kernel interface's [`GpuKernel::gpu_limits`], the a630's
//! [`A630_LIMITS`](hcq_adreno::program::A630_LIMITS) on hardware, with the simulator's
//! work-group budget on `QCOM:SIM`) and [`Backend::prepare`] validates each program
//! (`hcq_adreno::Program::from_json`: the metadata against itself and its blob; the shader code
//! decoded, with an `end` and branch targets inside it), each launch against its program, and
//! last every instruction against what the backend's shader core runs
//! ([`GpuKernel::unsupported_instruction`]: everything on hardware, what the ir3 interpreter
//! runs on `QCOM:SIM`). Then it uploads each shader image once; allocates every base
//! buffer as a KGSL GPU object; lays out each launch's constant block as
//! `programs[].adreno.consts` says (argument addresses, integer values, immediates, local size)
//! in its own slot of one constant object; and captures the launch list as one core `HwQueue`
//! encoded by the chip's compute encoder (`hcq_adreno::compute_encoder`, chosen once from the
//! chip id: the a6xx one on the 630; every field patchable): the timeline
//! wait, an exec (or a `CP_MEMCPY` for a copy launch) + barrier per launch, the timeline signal.
//!
//! The engine is the core's ([`hcq::engine::Engine`]) with the IB shape ([`hcq::submit::IbPool`]):
//! KGSL has no user-visible ring, so a call patches the queue's timeline wait and signal (every
//! word that carries them), copies its words into the next free IB slot of a GPU object with
//! word-sized volatile stores, issues the device write barrier (`dsb st`) and hands the IB to
//! `GPU_COMMAND`. The timeline signal lies in a KGSL GPU object the CP writes; waits sleep in
//! `WAITTIMESTAMP` (the signal wait's hooks). Several calls can be in flight
//! ([`QcomBackend::submit_call`]); an IB slot is rewritten only once the timeline passed the
//! stamp of the call that used it. A fault on the simulated device ends a wait at once with the
//! fault's IB offset; a hang ends it as the timeout error.

use crate::capture::Capturing;
use crate::ioctl::KgslIoctl;

use crate::flags::MemFlags;
use crate::kernel::{Access, BufferList, GpuKernel};
use crate::msm::{Msm, MsmIoctl};
use crate::{Context, FreeAfter, GpuObject, Kgsl, TimestampHooks};
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, LruAllocator};
use hcq::barrier::Barrier;
use hcq::bundle::Arch;
use hcq::bundle::hcqb::{Hcqb, LaunchRef, ProgramRef};
use hcq::device::{Device, DeviceLimits, DeviceProperties, GpuLimits};
use hcq::engine::{Channel, Engine};
use hcq::error::{ResultExt, device_name};
use hcq::mmio::{MmioBus, Width};
use hcq::profile::{Event, EventKind};
use hcq::queue::HwQueue;
use hcq::ring::KernargPool;
use hcq::runner::{Backend, KernelLaunch};
use hcq::signal::{OwnedSignal, SignalPage, Slot, WaitHooks, WaitPolicy};
use hcq::stamp::Stamp;
use hcq::submit::{IbPool, IbSubmit};
use hcq::{Error, Result};
use hcq_adreno::{ComputeEncoder, EncoderConfig, Program};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Default time a call waits for its submission.
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;
/// Largest single allocation (the simulated KGSL's limit; a630 GPU memory is shared RAM).
pub const MAX_ALLOC_BYTES: u64 = 1 << 32;

/// An opened QCOM device (see the module docs).
pub struct QcomDevice {
    name: String,
    /// The kernel interface (KGSL or MSM; the field keeps its first name).
    kgsl: Arc<dyn GpuKernel>,
    ctx: Arc<Context>,
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
    /// Open `QCOM`: the KGSL node when there is one, else the first MSM DRM render node (a
    /// missing pair is `DeviceUnavailable` saying both). With `capture` (KGSL only), every
    /// submission is also recorded as a freedreno `.rd` capture ([`QcomDevice::rd_capture`]).
    /// `QCOM:SIM` is opened by the simulator's crate (`hcq_sim_adreno::open`).
    pub fn open(capture: bool) -> Result<Arc<QcomDevice>> {
        use rustix::io::Errno;
        match crate::ioctl::RustixKgsl::open(crate::DEFAULT_NODE) {
            Ok(io) => Self::with_backend("QCOM", Arc::new(io), capture),
            Err(e) => {
                let missing = matches!(e, Errno::NOENT | Errno::NODEV | Errno::NXIO);
                let kgsl = crate::open_error(e);
                if !matches!(kgsl, Error::DeviceUnavailable { .. }) {
                    return Err(kgsl);
                }
                match Msm::open() {
                    Ok(m) if capture => Err(capture_unsupported()).map_err(|e| e.context(m.node().to_string())),
                    Ok(m) => Ok(Self::with_kernel("QCOM", Arc::new(m))?),
                    Err(msm) if missing && matches!(msm.root(), Error::DeviceUnavailable { .. }) => {
                        Err(Error::DeviceUnavailable {
                            device: device_name("QCOM"),
                            reason: "the KGSL node (/dev/kgsl-3d0) is missing and no MSM DRM render node \
                                     (/dev/dri/renderD128..renderD191, or $HCQ_MSM_NODE) answers: no Adreno GPU, \
                                     or its kernel driver is not loaded",
                        })
                    }
                    // KGSL refused (permission): say that, with what MSM said.
                    Err(msm) => Err(kgsl.context(format!("MSM DRM: {msm}"))),
                }
            }
        }
    }

    /// Open `KGSL+QCOM`: the KGSL node only.
    pub fn open_kgsl(capture: bool) -> Result<Arc<QcomDevice>> {
        let io = crate::ioctl::RustixKgsl::open(crate::DEFAULT_NODE).map_err(crate::open_error)?;
        Self::with_backend("KGSL+QCOM", Arc::new(io), capture)
    }

    /// Open `MSM+QCOM`: the first MSM DRM render node ([`crate::msm::node_candidates`]).
    pub fn open_msm(capture: bool) -> Result<Arc<QcomDevice>> {
        if capture {
            return Err(capture_unsupported());
        }
        Self::with_kernel("MSM+QCOM", Arc::new(Msm::open()?))
    }

    /// A device named `name` over the MSM backend `io` (a simulated MSM, a fake).
    pub fn with_msm_backend(name: &str, io: Arc<dyn MsmIoctl>, capture: bool) -> Result<Arc<QcomDevice>> {
        if capture {
            return Err(capture_unsupported());
        }
        Self::with_kernel(name, Arc::new(Msm::with_backend(io)?))
    }

    /// A device named `name` over an opened kernel interface (no `.rd` capture).
    pub fn with_kernel(name: &str, kernel: Arc<dyn GpuKernel>) -> Result<Arc<QcomDevice>> {
        Self::assemble(name, kernel, None)
    }

    /// A device over `io` (a simulated KGSL, a fake, a wrapped backend). The backend's
    /// [`KgslIoctl::fault_report`] becomes the context of a fault, and every program the device
    /// uploads is announced to it ([`KgslIoctl::note_program`]).
    pub fn with_backend(name: &str, io: Arc<dyn KgslIoctl>, capture: bool) -> Result<Arc<QcomDevice>> {
        let (io, capture) = if capture {
            let c = Arc::new(Capturing::new(io, "hcq run"));
            (c.clone() as Arc<dyn KgslIoctl>, Some(c))
        } else {
            (io, None)
        };
        Self::assemble(name, Arc::new(Kgsl::with_backend(io)?), capture)
    }

    fn assemble(
        name: &str,
        kgsl: Arc<dyn GpuKernel>,
        capture: Option<Arc<Capturing<Arc<dyn KgslIoctl>>>>,
    ) -> Result<Arc<QcomDevice>> {
        let ctx = Arc::new(kgsl.create_context()?);
        let backend = KgslAllocator { kgsl: kgsl.clone(), ctx: ctx.clone(), objs: Mutex::new(HashMap::new()) };
        Ok(Arc::new(QcomDevice {
            name: name.into(),
            alloc: LruAllocator::new(name, Box::new(backend)),
            kgsl,
            ctx,
            capture,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }))
    }

    /// The kernel interface (KGSL or MSM).
    pub fn kgsl(&self) -> &Arc<dyn GpuKernel> {
        &self.kgsl
    }

    /// The device's context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The `.rd` capture so far, when opened with `capture`.
    pub fn rd_capture(&self) -> Option<Vec<u8>> {
        self.capture.as_ref().map(|c| c.bytes())
    }

    /// What one program and one dispatch may ask for: what the kernel interface states
    /// ([`GpuKernel::gpu_limits`]: the chip's on a kernel node, the simulator's own on
    /// `QCOM:SIM`).
    pub fn gpu_limits(&self) -> GpuLimits {
        self.kgsl.gpu_limits()
    }

    /// Submit the IB of `bytes` at `ib`, referencing `buffers`, and wait for it
    /// (`timeout_ms`): a timeout is `Error::Timeout`, a fault `Error::DeviceHung` with the
    /// simulated CP's report as context.
    ///
    /// # Safety
    /// As [`GpuKernel::submit`]: the IB and everything it references are valid GPU memory of
    /// this device, in `buffers`, and stay so until the submission retires (this call waits for
    /// it; after a timeout the caller keeps them until [`Device::synchronize`] passes). Calling
    /// it outside `unsafe` does not compile:
    ///
    /// ```compile_fail,E0133
    /// fn run(dev: &hcq_qcom::device::QcomDevice, list: &mut hcq_qcom::kernel::BufferList) {
    ///     let _ = dev.submit_and_wait(0x1000, 4, list, 10);
    /// }
    /// ```
    pub unsafe fn submit_and_wait(
        &self,
        ib: u64,
        bytes: u64,
        buffers: &mut BufferList,
        timeout_ms: u32,
    ) -> Result<u32> {
        // SAFETY: the caller's contract is this one's.
        let r = unsafe { self.kgsl.submit(&self.ctx, ib, bytes, buffers) }
            .and_then(|ts| self.kgsl.wait(&self.ctx, ts, timeout_ms).map(|()| ts));
        r.map_err(|e| with_fault(&*self.kgsl, e))
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
                   (hcq::runner::Runner with hcq_qcom::device::QcomBackend); a ProgramImage carries no a630 metadata",
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
        DeviceProperties {
            kind: "adreno".into(),
            arch: "a630".into(),
            cores: 1,
            memory_bytes: 0,
            timestamp_hz: 19_200_000,
            notes: format!(
                "{} chip {:#010x}, GMEM {} KiB, {}",
                self.kgsl.describe(),
                info.chip_id,
                info.gmem_bytes >> 10,
                self.kgsl.driver()
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
            gpu: Some(self.gpu_limits()),
        }
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}

/// Device memory of the QCOM device: KGSL GPU objects, copied with word-sized volatile
/// accesses, freed only once the context retired the last submission made before the free.
struct KgslAllocator {
    kgsl: Arc<dyn GpuKernel>,
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
    hcq::mmio::write_bytes_by_words(obj.bus(), "QCOM buffer write", off, data)
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
    kgsl: Arc<dyn GpuKernel>,
    ctx: Arc<Context>,
    obj: Option<GpuObject>,
}

impl Retiring {
    fn new(kgsl: &Arc<dyn GpuKernel>, ctx: &Arc<Context>, obj: GpuObject) -> Self {
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
        hcq::mmio::write_bytes_by_words(self.obj.obj().bus(), "QCOM buffer write", offset, src)
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        hcq::mmio::check_range("QCOM object read", offset, dst.len(), self.len)?;
        self.obj.obj().bus().read_bytes(offset, dst)
    }
}

/// A device error with the backend's fault report (a simulated CP's) as context, when there is
/// one.
fn with_fault(kgsl: &dyn GpuKernel, e: Error) -> Error {
    match kgsl.fault_report() {
        Some(f) if matches!(e.root(), Error::DeviceHung { .. }) => e.context(f),
        _ => e,
    }
}

/// The IB engine's submit hook: `IOCTL_KGSL_GPU_COMMAND` (or MSM `GEM_SUBMIT`) with the IB
/// (the kernel's ring write and its barriers follow; the engine issued the device write barrier
/// before this call), referencing every object of the backend (its buffer list, built once at
/// the load).
struct GpuCommandHook {
    kgsl: Arc<dyn GpuKernel>,
    ctx: Arc<Context>,
    buffers: BufferList,
}

impl IbSubmit for GpuCommandHook {
    fn submit_ib(&mut self, addr: u64, bytes: u64, _stamp: Stamp) -> Result<()> {
        // SAFETY: the engine calls this hook only from `Engine::submit`, whose caller
        // (`QcomBackend::submit_call`) vouched that the queue names this backend's live
        // objects; `addr` is the engine's IB slot it just wrote, in the IB pool object. Every
        // object of the backend is in `buffers` and goes back to the kernel only after the
        // context's last submission (`Retiring`, `free_after`), and a slot is rewritten only
        // once the call that used it passed its stamp.
        let r = unsafe { self.kgsl.submit(&self.ctx, addr, bytes, &mut self.buffers) };
        r.map(|_| ()).map_err(|e| with_fault(&*self.kgsl, e))
    }
}

/// The timeline wait's hooks: sleep in KGSL `WAITTIMESTAMP` on the context
/// ([`TimestampHooks`]); a fault seen there ends the wait at once, with the simulated CP's
/// report (the IB offset) as context on `QCOM:SIM`.
#[derive(Debug)]
struct QcomHooks {
    inner: TimestampHooks,
    kgsl: Arc<dyn GpuKernel>,
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
        self.inner.fault().map(|e| with_fault(&*self.kgsl, e))
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
    hcq: Option<Arc<Engine>>,
    /// The timeline signal until the engine takes it (its page owns the signal object).
    timeline: Option<OwnedSignal>,
    dev: Arc<QcomDevice>,
    buffers: Vec<GpuObject>,
    /// Each program's shader image, uploaded once.
    code: Vec<GpuObject>,
    /// Every program, validated by `prepare` before anything was allocated; taken by `load_program`.
    prepared: Vec<Option<Program>>,
    programs: Vec<(Program, u64)>,
    enc: Option<Arc<dyn ComputeEncoder>>,
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
    /// Objects listed for the submissions' buffer list before `finish` (the timeline signal's,
    /// whose page owns it from `encoder()` on).
    listed: BufferList,
    /// Every kernel launch's constant block as recorded (to rewrite it when a buffer is
    /// rebound), and every copy launch (dst, src, bytes).
    recorded: Vec<RecordedLaunch>,
    copies: Vec<(u64, u64, u64)>,
    /// Ranges of device memory the calls use caller memory for ([`QcomBackend::bind_host`]).
    binds: Vec<HostBind>,
}

/// A kernel launch's constant block: where it lies and what it was filled from.
#[derive(Debug)]
struct RecordedLaunch {
    consts: usize,
    off: u64,
    program: usize,
    /// Argument device addresses (as the calls see them now) and view sizes.
    args: Vec<u64>,
    sizes: Vec<u64>,
    vals: Vec<i32>,
    local: [u32; 3],
}

/// Device memory `[own, own + len)` replaced in the calls by the GPU address `to` (the
/// mapping of caller memory, when hcq made one).
#[derive(Debug)]
struct HostBind {
    own: u64,
    len: u64,
    to: u64,
    map: Option<crate::UserMapping>,
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

/// A GPU object that goes back to KGSL (never submitted) if dropped before [`Fresh::keep`]:
/// what a load allocated before one of its steps failed is freed, not left to the file close.
/// (The engine's shared pools are [`Retiring`] objects, which free themselves.)
struct Fresh<'a> {
    kgsl: &'a dyn GpuKernel,
    obj: Option<GpuObject>,
}

impl<'a> Fresh<'a> {
    fn new(kgsl: &'a dyn GpuKernel, obj: GpuObject) -> Self {
        Self { kgsl, obj: Some(obj) }
    }
    fn get(&self) -> &GpuObject {
        // PANIC: `obj` is taken only by `keep` (which consumes self) and `drop`.
        self.obj.as_ref().expect("held until keep or drop")
    }
    fn keep(mut self) -> GpuObject {
        // PANIC: as in `get`.
        self.obj.take().expect("held until keep or drop")
    }
}

impl Drop for Fresh<'_> {
    fn drop(&mut self) {
        let Some(o) = self.obj.take() else { return };
        let addr = o.gpuaddr();
        if let Err(e) = self.kgsl.free(o, FreeAfter::NeverSubmitted) {
            log::warn!("QCOM: freeing GPU object at {addr:#x} after a failed load step: {e}");
        }
    }
}

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
            prepared: Vec::new(),
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
            listed: BufferList::new(),
            recorded: Vec::new(),
            copies: Vec::new(),
            binds: Vec::new(),
        })
    }

    /// Make the calls read and write the caller's memory at `ptr` (`len` bytes) in place of the
    /// device memory `[own, own + len)` (a model input bound zero-copy); a null `ptr` binds the
    /// range back to its own memory. The host range is mapped for the GPU as tinygrad's
    /// `QCOMDevice._gpu_map` does: its data cache lines are cleaned to memory (aarch64), the
    /// page-aligned range goes to KGSL `MAP_USER_MEM`, and the GPU address is the mapping's plus
    /// `ptr & 0xfff`; where KGSL answers `EFAULT` the pointer is taken to be a GPU address
    /// already (memory of another GPU object). Waits for the calls in flight first, then
    /// rewrites the constant block of every launch whose arguments lie in the range (this
    /// allocates: binding is not the hot path); a previous mapping of the range is unmapped
    /// after the calls that used it. Refused, with nothing changed, when a copy launch touches
    /// the range (its `CP_MEMCPY` addresses are fixed), a kernel argument reaches across its
    /// edge, or an image argument would not be 64-byte aligned.
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must stay allocated and valid for every read and write the kernels
    /// make through it, each time a call runs, until the range is bound elsewhere (or back) or
    /// the backend drops — both wait for the calls that use it — and no one else may write it
    /// while a call runs. The CPU cache lines of the range are cleaned only here (as tinygrad
    /// cleans them only when it maps): data the caller writes later reaches the GPU only where
    /// the CPU cache is coherent with it, or when the caller cleans those lines itself before
    /// the call.
    pub unsafe fn bind_host(&mut self, own: u64, len: u64, ptr: *mut u8) -> Result<()> {
        if self.hcq.is_none() {
            return Err(Error::InvalidArgument { what: "QCOM bind: before the load finished", value: 0 });
        }
        let idx = self.binds.iter().position(|b| b.own == own && b.len == len);
        let cur = idx.map_or(own, |i| self.binds[i].to);
        let inside = |a: u64, n: u64| a >= cur && a.saturating_add(n) <= cur + len;
        let overlaps = |a: u64, n: u64| a < cur + len && cur < a.saturating_add(n.max(1));
        for &(d, sr, n) in &self.copies {
            if overlaps(d, n) || overlaps(sr, n) {
                return Err(Error::Unsupported {
                    what: "QCOM bind: a copy launch touches the range (CP_MEMCPY copies device memory only)",
                    value: own,
                });
            }
        }
        for r in &self.recorded {
            if r.args.iter().zip(&r.sizes).any(|(&a, &n)| overlaps(a, n) && !inside(a, n)) {
                return Err(Error::Unsupported {
                    what: "QCOM bind: a kernel argument reaches across the range's edge",
                    value: own,
                });
            }
        }
        self.synchronize()?;
        let (to, map) = if ptr.is_null() {
            (own, None)
        } else {
            // SAFETY: the caller's contract: the range is valid until it is bound elsewhere.
            unsafe { self.map_host(ptr, len)? }
        };
        // The new blocks first (nothing changes if one is refused), then written in place.
        let mut blocks = Vec::new();
        for (i, r) in self.recorded.iter().enumerate() {
            if !r.args.iter().zip(&r.sizes).any(|(&a, &n)| inside(a, n)) {
                continue;
            }
            let args: Vec<u64> =
                r.args.iter().zip(&r.sizes).map(|(&a, &n)| if inside(a, n) { a - cur + to } else { a }).collect();
            let prog = &self.programs[r.program].0;
            let mut block = vec![0u8; prog.const_block_bytes as usize];
            if let Err(e) = prog.fill_consts(&mut block, &args, &r.vals, r.local) {
                if let Some(m) = map {
                    let _ = self.dev.kgsl.unmap_user(m, &self.dev.ctx, self.dev.ctx.last_submitted(), self.timeout_ms);
                }
                return Err(e.context(format!("QCOM bind: launch {i}")));
            }
            blocks.push((i, args, block));
        }
        for (i, args, block) in blocks {
            let r = &mut self.recorded[i];
            write_words(&self.consts[r.consts], r.off, &block)?;
            r.args = args;
        }
        let old = match idx {
            Some(i) => self.binds.remove(i).map,
            None => None,
        };
        if to != own {
            self.binds.push(HostBind { own, len, to, map });
        }
        if let Some(m) = old {
            // Unused by any call from here on (the calls in flight were waited for above).
            self.dev.kgsl.unmap_user(m, &self.dev.ctx, self.dev.ctx.last_submitted(), self.timeout_ms)?;
        }
        Ok(())
    }

    /// Map `len` bytes of host memory at `ptr` for the GPU (tinygrad's `_gpu_map`); returns
    /// the GPU address of `ptr` and the mapping (none when KGSL says `EFAULT`: `ptr` is then a
    /// GPU address already).
    ///
    /// # Safety
    /// As [`QcomBackend::bind_host`].
    unsafe fn map_host(&self, ptr: *mut u8, len: u64) -> Result<(u64, Option<crate::UserMapping>)> {
        let p = ptr as u64;
        let base = p & !0xfff;
        let span = (len + (p & 0xfff)).next_multiple_of(4096);
        let span_usize =
            usize::try_from(span).map_err(|_| Error::InvalidArgument { what: "QCOM bind size", value: len })?;
        clean_dcache(p, len);
        // SAFETY: the caller keeps `[ptr, ptr + len)` valid until it is unbound; the rest of
        // the pages around it are never addressed by the calls (their arguments lie inside).
        match unsafe { self.dev.kgsl.map_user(base as *mut u8, span_usize) } {
            Ok(m) => Ok((m.gpuaddr + (p - base), Some(m))),
            Err(Error::Os { errno: 14, .. }) => Ok((p, None)),
            Err(e) => Err(e.context("QCOM bind: mapping caller memory (MAP_USER_MEM)")),
        }
    }

    /// Profile every launch (before the load): each dispatch and copy is bracketed by two
    /// `CP_REG_TO_MEM` writes of the always-on counter (`Command::Timestamp`, which waits for
    /// idle first), and after each [`Backend::replay`] the pairs become `Program`/`Copy` events
    /// of the engine's profiler ([`QcomBackend::hcq`]`.profiler()`): durations in ns of the
    /// counter's 19.2 MHz clock, placed on the host clock inside their call (the device clock
    /// aligned per call, see `record_profile`). On `QCOM:SIM` the counter is the simulated CP's
    /// model clock (a tick per packet and per work-group), so the durations are relative costs,
    /// not time.
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

    /// After a call: the profiled launches' timestamps as profiler events, on the host clock
    /// ([`hcq::signal::host_clock_ns`], the clock of the core's and the CLI's call events).
    ///
    /// The device clock is aligned to the host clock as tinygrad's `ProfileDeviceEvent` offset
    /// (`tdiff`: host time at a synchronize minus the GPU's last timestamp), measured at every
    /// call: `done` is the host time at which the wait saw the call complete, so the call's last
    /// timestamp maps to `done` and every kernel lies in `[submitted, done]`, inside its call.
    /// It is re-measured per call because `QCOM:SIM`'s counter is a model clock (a tick per
    /// packet and work-group) that does not keep pace with host time; on hardware it is the same
    /// offset each time within the wait's wake-up latency. A start before `submitted` (a model
    /// clock claiming more time than passed) is drawn at `submitted`.
    fn record_profile(&mut self, submitted: u64, done: u64) -> Result<()> {
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
        let stamp = |i: usize| -> Result<(u64, u64)> {
            let bus = self.stamps[i / STAMPS_PER_OBJECT].bus();
            let off = (i % STAMPS_PER_OBJECT) * 16;
            let (t0, t1) = (bus.read(off, Width::U64)?, bus.read(off + 8, Width::U64)?);
            Ok((ns(t0), ns(t1.max(t0))))
        };
        let mut last = 0;
        for i in 0..self.profiled_ids.len() {
            last = last.max(stamp(i)?.1);
        }
        // host = device + tdiff, with tdiff = done - last (in i128: either clock may be ahead)
        let tdiff = i128::from(done) - i128::from(last);
        // CAST: clamped into [submitted, done] ⊂ u64.
        let host = |t: u64| (i128::from(t) + tdiff).clamp(i128::from(submitted), i128::from(done)) as u64;
        for (i, &(kind, name, arg)) in self.profiled_ids.iter().enumerate() {
            let (t0, t1) = stamp(i)?;
            prof.record(Event { kind, name, start_ns: host(t0), end_ns: host(t1), arg });
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
    pub fn engine(&self) -> Option<&Arc<Engine>> {
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
        unsafe { h.submit(0, q) }.map_err(|e| with_fault(&self.dev.kgsl, e))
    }

    /// Wait (sleeping in KGSL `WAITTIMESTAMP`) until the timeline reaches `stamp`.
    pub fn wait(&self, stamp: Stamp) -> Result<()> {
        match &self.hcq {
            Some(h) => h.wait(stamp).map_err(|e| with_fault(&self.dev.kgsl, e)),
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
    fn encoder(&mut self) -> Result<Arc<dyn ComputeEncoder>> {
        if let Some(e) = &self.enc {
            return Ok(e.clone());
        }
        let kgsl = &self.dev.kgsl;
        let stack = self.programs.iter().map(|(p, _)| p.stack_bytes).max().unwrap_or(0).max(4096);
        let scratch = Fresh::new(kgsl, kgsl.alloc(4096, MemFlags::USE_CPU_MAP)?);
        let pvt = Fresh::new(kgsl, kgsl.alloc(stack, MemFlags::USE_CPU_MAP)?);
        let enc = hcq_adreno::compute_encoder(
            kgsl.info().chip_id,
            EncoderConfig {
                scratch: scratch.get().gpuaddr(),
                pvt_mem: pvt.get().gpuaddr(),
                pvt_mem_bytes: pvt.get().size(),
            },
        )?;
        for (p, code) in &mut self.programs {
            let args: Vec<(u32, u32)> = p
                .slots
                .iter()
                .filter_map(|&(o, s)| match s {
                    hcq_adreno::program::Slot::Arg { arg } => Some((arg, o)),
                    _ => None,
                })
                .collect();
            kgsl.note_program(*code, &args);
            *code = enc.add_program(p, *code)?;
        }
        let sig = self.signal.take().ok_or(Error::InvalidArgument { what: "QCOM: no signal object", value: 0 })?;
        self.listed.push(&sig, Access::ReadWrite);
        let (base, gpuaddr) = (sig.bus().base().cast::<Slot>(), sig.gpuaddr());
        let owner = Box::new(Retiring::new(kgsl, &self.dev.ctx, sig));
        // The page owns the object: every Signal and engine pointing into it keeps it mapped,
        // and it goes back to KGSL after the last of them (and the last submission) is done.
        // SAFETY: a zeroed, page-aligned mapping of SIGNAL_SLOTS × 16 bytes, seen by the GPU at
        // `gpuaddr`, mapped until `owner` drops; the CPU uses its atomics only.
        let page = unsafe { SignalPage::from_raw_owning(base, SIGNAL_SLOTS, gpuaddr, owner) };
        let timeline = OwnedSignal::new(Arc::new(page), 0)?;
        let mut queue = HwQueue::new(enc.clone(), &timeline)?;
        // Decision (issue 18 §2): a call starts, after its timeline wait, with a cache flush and
        // invalidate (the barrier), as tinygrad's HCQProgram.__call__ does
        // (`wait(...).memory_barrier().exec(...)`): what the host wrote between calls (inputs,
        // a rebound buffer) is not hidden behind lines the texture cache or UCHE kept from the
        // last call. Mesa agrees: turnip invalidates every cache at the start of a command
        // buffer (tu_cmd_buffer_begin: pending_flush_bits = TU_CMD_FLAG_ALL_INVALIDATE).
        queue.memory_barrier()?;
        self.queue = Some(queue);
        self.timeline = Some(timeline);
        self.scratch = Some(scratch.keep());
        self.pvt = Some(pvt.keep());
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
        let o = Fresh::new(&self.dev.kgsl, self.dev.kgsl.alloc(nbytes, MemFlags::USE_CPU_MAP)?);
        write_words(o.get(), 0, initial)?;
        let a = o.get().gpuaddr();
        self.buffers.push(o.keep());
        Ok(a)
    }

    /// Validate every program and every launch against its program, before anything is
    /// allocated (the limits were checked by the core just before): a bundle the device would
    /// refuse at its first launch is refused here, with nothing allocated.
    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        let mut progs = Vec::with_capacity(bundle.n_programs());
        for (i, p) in bundle.programs().enumerate() {
            let prog = p
                .object(arch)
                .ok_or(Error::Unsupported {
                    what: "bundle has no object for this architecture",
                    value: arch.code().into(),
                })
                .and_then(|o| validate_program(&p, o))
                .with_context(|| format!("program {i} ({})", p.name))?;
            progs.push(prog);
        }
        for (i, l) in bundle.launches().enumerate() {
            let LaunchRef::Kernel(k) = l else { continue };
            let prog = progs.get(k.program as usize).ok_or(Error::OutOfBounds {
                what: "launch program index",
                offset: k.program.into(),
                len: 1,
                limit: progs.len() as u64,
            });
            prog.and_then(|p| check_launch(p, &k)).with_context(|| format!("launch {i} ({})", k.name))?;
        }
        // Last, what the backend's shader core lacks (the simulator's interpreter): the metadata
        // and the launches are the bundle's own errors, reported first.
        for (i, (prog, p)) in progs.iter().zip(bundle.programs()).enumerate() {
            check_shader_support(prog, &*self.dev.kgsl).with_context(|| format!("program {i} ({})", p.name))?;
        }
        self.prepared = progs.into_iter().map(Some).collect();
        Ok(())
    }

    fn load_program(&mut self, index: usize, p: &ProgramRef<'_>, _arch: Arch, object: &[u8]) -> Result<usize> {
        if self.enc.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: program loaded after the first launch", value: 0 });
        }
        let prog = match self.prepared.get_mut(index).and_then(Option::take) {
            Some(p) => p,
            None => {
                let prog = validate_program(p, object)?;
                check_shader_support(&prog, &*self.dev.kgsl)?;
                prog
            }
        };
        let code = Fresh::new(&self.dev.kgsl, self.dev.kgsl.alloc(prog.image.len() as u64, MemFlags::USE_CPU_MAP)?);
        write_words(code.get(), 0, &prog.image)?;
        // Until the encoder exists the second field holds the code address.
        self.programs.push((prog, code.get().gpuaddr()));
        self.code.push(code.keep());
        Ok(self.programs.len() - 1)
    }

    fn record_kernel(&mut self, program: &usize, l: &KernelLaunch<'_, '_>) -> Result<()> {
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
        self.recorded.push(RecordedLaunch {
            consts: self.consts.len() - 1,
            off,
            program: *program,
            args: l.args.to_vec(),
            sizes: l.kernel.args().map(|a| a.nbytes).collect(),
            vals: vals.clone(),
            local: gpu.local_size,
        });
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
        self.copies.push((dst, src, bytes));
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
        // Every object a call references, listed once (MSM sends it with each submission).
        let mut buffers = std::mem::take(&mut self.listed);
        let rw = self.buffers.iter().chain(&self.stamps).chain(&self.scratch).chain(&self.pvt);
        rw.for_each(|o| buffers.push(o, Access::ReadWrite));
        for o in self.code.iter().chain(&self.consts).chain([ib.obj(), kernarg_mem.obj()]) {
            buffers.push(o, Access::Read);
        }
        let hook = GpuCommandHook { kgsl: kgsl.clone(), ctx: self.dev.ctx.clone(), buffers };
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
        let hooks = QcomHooks { inner: TimestampHooks::new(kgsl.clone(), self.dev.ctx.clone()), kgsl: kgsl.clone() };
        let hcq = Engine::new(
            device_name(&self.dev.name),
            timeline,
            enc,
            vec![Channel::new("compute", pool)],
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
        let submitted = hcq::signal::host_clock_ns();
        let stamp = self.submit_call()?;
        self.wait(stamp)?;
        if self.profile {
            self.record_profile(submitted, hcq::signal::host_clock_ns())?;
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
        // Caller memory is unmapped after the calls that use it.
        for b in self.binds.drain(..) {
            if let Some(m) = b.map
                && let Err(e) =
                    self.dev.kgsl.unmap_user(m, &self.dev.ctx, self.dev.ctx.last_submitted(), self.timeout_ms)
            {
                log::warn!("QCOM: unmapping caller memory at {:#x}: {e}", b.to);
            }
        }
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

/// Validate a program for the QCOM device: its metadata against itself and its blob
/// ([`Program::from_json`]), its address slots against the bundle program's buffer parameters,
/// and its shader code: every instruction from the entry decodes, branch targets lie inside the
/// code, and an `end` is there (an all-zero or cut image has none). What the device's shader
/// core runs is [`check_shader_support`]'s.
pub fn validate_program(p: &ProgramRef<'_>, object: &[u8]) -> Result<Program> {
    use hcq_ir3::isa::{Body, Cat0Op};
    let meta = p.adreno.ok_or(Error::Malformed {
        what: "bundle program",
        at: 0,
        reason: "an adreno_a630 object without its programs[].adreno metadata",
    })?;
    let prog = Program::from_json(object, meta)?;
    if prog.n_args != p.n_buffer_args {
        return Err(Error::Mismatch {
            what: "adreno consts.args count vs the program's n_buffer_args (launch arguments)",
            expected: p.n_buffer_args.into(),
            found: prog.n_args.into(),
        });
    }
    // CAST: the entry lies inside the image (checked by `from_json`).
    let code = &prog.image[prog.entry as usize..];
    let instrs = hcq_ir3::decode_image(code).map_err(|e| {
        Error::Malformed { what: "adreno shader code", at: prog.entry.into(), reason: "not a6xx ir3 instructions" }
            .context(e.to_string())
    })?;
    let mut ends = false;
    for (i, ins) in instrs.iter().enumerate() {
        if let Some(t) = ins.branch_target(i)
            && !(0..instrs.len() as i64).contains(&t)
        {
            return Err(Error::OutOfBounds {
                what: "adreno shader code: a branch target outside the code (instruction, target)",
                offset: i as u64,
                len: 1,
                limit: instrs.len() as u64,
            })
            .map_err(|e| e.context(format!("instruction {i} branches to {t}")));
        }
        if let Body::Cat0(c) = ins.body
            && c.op == Cat0Op::End
        {
            ends = true;
        }
    }
    if !ends {
        return Err(Error::Malformed {
            what: "adreno shader code",
            at: instrs.len() as u64,
            reason: "no end instruction (an all-zero, cut or garbage image)",
        });
    }
    Ok(prog)
}

/// Every instruction of `prog` (validated by [`validate_program`]) is one the shader core
/// behind `kernel` runs ([`GpuKernel::unsupported_instruction`]: on hardware every one, on
/// `QCOM:SIM` those the ir3 interpreter runs); the error names the instruction, its index and
/// the backend.
pub fn check_shader_support(prog: &Program, kernel: &dyn GpuKernel) -> Result<()> {
    // CAST: the entry lies inside the image (checked by `from_json`).
    let instrs = hcq_ir3::decode_image(&prog.image[prog.entry as usize..]).map_err(|e| {
        Error::Malformed { what: "adreno shader code", at: prog.entry.into(), reason: "not a6xx ir3 instructions" }
            .context(e.to_string())
    })?;
    for (i, ins) in instrs.iter().enumerate() {
        if let Some(name) = kernel.unsupported_instruction(ins) {
            return Err(Error::Unsupported {
                what: "adreno shader instruction the device's shader core does not run (instruction index)",
                value: i as u64,
            })
            .map_err(|e| {
                e.context(format!("instruction {i}: {name}; shader core: {}", kernel.describe().trim_end_matches(',')))
            });
        }
    }
    Ok(())
}

/// A kernel launch against its validated program: an Adreno dispatch whose work-group size the
/// program allows and whose integer values are as many as the program's and fit 32 bits.
fn check_launch(prog: &Program, k: &hcq::bundle::hcqb::KernelRef<'_>) -> Result<()> {
    let gpu = k.gpu.ok_or(Error::Malformed {
        what: "bundle launch",
        at: k.program.into(),
        reason: "no Adreno dispatch (gpu_global_size/gpu_local_size/gpu_vals)",
    })?;
    prog.check_local(gpu.local_size)?;
    if gpu.vals().len() != prog.n_vals as usize {
        return Err(Error::Mismatch {
            what: "launch gpu_vals count vs the program's consts.vals",
            expected: prog.n_vals.into(),
            found: gpu.vals().len() as u64,
        });
    }
    for v in gpu.vals() {
        i32::try_from(v)
            .map_err(|_| Error::InvalidArgument { what: "adreno integer argument (32-bit)", value: v as u64 })?;
    }
    // An image's view holds its rows at the program's pitch (IMAGE-SCHEMA: nbytes = height ×
    // pitch) and starts 64-byte aligned in its page-aligned KGSL object (the texture base).
    for &(arg, need) in &prog.images {
        let v = k.arg(arg as usize).ok_or(Error::OutOfBounds {
            what: "launch argument of an image (descriptors.images[].arg)",
            offset: arg.into(),
            len: 1,
            limit: k.n_args() as u64,
        })?;
        if v.nbytes < need {
            return Err(Error::OutOfSpace {
                what: "image argument: the view is smaller than height x pitch",
                requested: need,
                capacity: v.nbytes,
            })
            .map_err(|e| e.context(format!("argument {arg} (buffer {})", v.buffer)));
        }
        if !v.offset.is_multiple_of(64) {
            return Err(Error::Misaligned {
                what: "image argument view offset (texture base)",
                value: v.offset,
                align: 64,
            })
            .map_err(|e| e.context(format!("argument {arg} (buffer {})", v.buffer)));
        }
    }
    Ok(())
}

/// `.rd` captures record KGSL submissions only.
fn capture_unsupported() -> Error {
    Error::Unsupported { what: "an .rd capture on MSM DRM (it records KGSL submissions): use KGSL+QCOM", value: 0 }
}

/// The registry entry for `QCOM` (the KGSL node, else an MSM render node; a missing node is a
/// clear error).
pub fn qcom_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(QcomDevice::open(false)?)
    }
    hcq::device::DeviceKind { name: "QCOM", count, open }
}

/// The registry entry for `KGSL+QCOM` (the KGSL node only).
pub fn kgsl_qcom_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(QcomDevice::open_kgsl(false)?)
    }
    hcq::device::DeviceKind { name: "KGSL+QCOM", count, open }
}

/// The registry entry for `MSM+QCOM` (an MSM DRM render node only).
pub fn msm_qcom_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(QcomDevice::open_msm(false)?)
    }
    hcq::device::DeviceKind { name: "MSM+QCOM", count, open }
}

/// Clean the data cache lines of `[addr, addr + len)` to memory before the GPU reads it
/// through a user mapping (tinygrad's `dcache_flush`: `dc cvac` per 64-byte line, `dsb sy`).
/// Elsewhere the host's caches are coherent with the device (the simulator) and nothing is
/// needed.
fn clean_dcache(addr: u64, len: u64) {
    #[cfg(target_arch = "aarch64")]
    {
        let mut line = addr & !63;
        while line < addr.saturating_add(len) {
            // SAFETY: `dc cvac` only writes dirty lines back; the range is the caller's memory
            // (bind_host's contract), so the address is mapped.
            unsafe { core::arch::asm!("dc cvac, {0}", in(reg) line, options(nostack, preserves_flags)) };
            line += 64;
        }
        // SAFETY: a barrier; no memory is touched.
        unsafe { core::arch::asm!("dsb sy", options(nostack, preserves_flags)) };
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = (addr, len);
}
