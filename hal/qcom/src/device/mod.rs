//! The `QCOM` device: an Adreno 630 behind a kernel interface ([`GpuKernel`]): KGSL over any
//! [`KgslIoctl`] backend — the kernel node (`KGSL+QCOM`) or the simulated KGSL whose dispatches
//! run on the ir3 interpreter (`QCOM:SIM`, opened by the `hcq-sim-adreno` crate) — or the
//! mainline MSM DRM driver (`MSM+QCOM`, `MSM+QCOM:SIM`); `QCOM` is whichever node exists. And
//! its bundle runner backend ([`QcomBackend`], driven by `hcq_runner::Runner`).
//!
//! A load picks the bundle's `adreno_a630` objects; before anything is allocated the core checks
//! every size against the limits the device states ([`QcomDevice`]'s `Device::limits`: the
//! kernel interface's [`GpuKernel::gpu_limits`], the a630's
//! [`A630_LIMITS`](hcq_adreno::program::A630_LIMITS) on hardware, with the simulator's
//! work-group budget on `QCOM:SIM`) and [`Backend::prepare`](hcq_runner::Backend::prepare) validates each program
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
//!
//! One file per part: this one holds the device ([`QcomDevice`]: open, limits, memory through
//! the core allocator, registry entries); `backend.rs` the runner backend ([`QcomBackend`]:
//! loading, recording, calls); `engine.rs` what the core engine runs on (its GPU objects, submit
//! and wait hooks); `validate.rs` program and launch validation; `bind.rs` caller memory bound
//! zero-copy; `profile.rs` per-launch timestamps.

mod backend;
mod bind;
mod engine;
mod limits;
mod plug;
mod profile;
mod validate;

pub use backend::{DEFAULT_IB_SLOTS, QcomBackend};
pub use limits::check_limits;
pub use plug::{Interface, QcomKind, QcomOpen};
pub use validate::{check_shader_support, validate_program};

use crate::flags::MemFlags;
use crate::kernel::{BufferList, GpuKernel};
use crate::kgsl::capture::Capturing;
use crate::kgsl::ioctl::{KgslIoctl, RustixKgsl};
use crate::kgsl::{self, Kgsl};
use crate::msm::{Msm, MsmIoctl};
use crate::{Context, FreeAfter, GpuObject};
use engine::with_fault;
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, LruAllocator};
use hcq::device::{Device, DeviceLimits, DeviceProperties};
use hcq::error::device_name;
use hcq::mmio::MmioBus;
use hcq::{Error, Result};
use hcq_adreno::limits::GpuLimits;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Default time a call waits for its submission.
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;
/// Largest single allocation (the simulated KGSL's limit; a630 GPU memory is shared RAM).
pub const MAX_ALLOC_BYTES: u64 = 1 << 32;

/// An opened QCOM device (see the module docs).
pub struct QcomDevice {
    name: String,
    /// The kernel interface (KGSL or MSM).
    kernel: Arc<dyn GpuKernel>,
    ctx: Arc<Context>,
    capture: Option<Arc<Capturing<Arc<dyn KgslIoctl>>>>,
    alloc: LruAllocator,
    timeout_ms: u32,
}

impl core::fmt::Debug for QcomDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QcomDevice").field("name", &self.name).field("kernel", &self.kernel).finish_non_exhaustive()
    }
}

impl QcomDevice {
    /// Open `QCOM`: the KGSL node when there is one, else the first MSM DRM render node (a
    /// missing pair is `DeviceUnavailable` saying both). With `capture` (KGSL only), every
    /// submission is also recorded as a freedreno `.rd` capture ([`QcomDevice::rd_capture`]).
    /// `QCOM:SIM` is opened by the simulator's crate (`hcq_sim_adreno::open`).
    pub fn open(capture: bool) -> Result<Arc<QcomDevice>> {
        use rustix::io::Errno;
        match RustixKgsl::open(kgsl::DEFAULT_NODE) {
            Ok(io) => Self::with_backend("QCOM", Arc::new(io), capture),
            Err(e) => {
                let missing = matches!(e, Errno::NOENT | Errno::NODEV | Errno::NXIO);
                let kernel = kgsl::open_error(e);
                if !matches!(kernel, Error::DeviceUnavailable { .. }) {
                    return Err(kernel);
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
                    Err(msm) => Err(kernel.context(format!("MSM DRM: {msm}"))),
                }
            }
        }
    }

    /// Open `KGSL+QCOM`: the KGSL node only.
    pub fn open_kgsl(capture: bool) -> Result<Arc<QcomDevice>> {
        let io = RustixKgsl::open(kgsl::DEFAULT_NODE).map_err(kgsl::open_error)?;
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
        kernel: Arc<dyn GpuKernel>,
        capture: Option<Arc<Capturing<Arc<dyn KgslIoctl>>>>,
    ) -> Result<Arc<QcomDevice>> {
        let ctx = Arc::new(kernel.create_context()?);
        let backend = KgslAllocator { kernel: kernel.clone(), ctx: ctx.clone(), objs: Mutex::new(HashMap::new()) };
        Ok(Arc::new(QcomDevice {
            name: name.into(),
            alloc: LruAllocator::new(name, Box::new(backend)),
            kernel,
            ctx,
            capture,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }))
    }

    /// The kernel interface (KGSL or MSM).
    pub fn kernel(&self) -> &Arc<dyn GpuKernel> {
        &self.kernel
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
        self.kernel.gpu_limits()
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
        let r = unsafe { self.kernel.submit(&self.ctx, ib, bytes, buffers) }
            .and_then(|ts| self.kernel.wait(&self.ctx, ts, timeout_ms).map(|()| ts));
        r.map_err(|e| with_fault(&*self.kernel, e))
    }
}

impl Device for QcomDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn allocator(&self) -> &LruAllocator {
        &self.alloc
    }
    fn synchronize(&self) -> Result<()> {
        if !self.ctx.has_submitted() {
            return Ok(());
        }
        self.kernel.wait(&self.ctx, self.ctx.last_submitted(), self.timeout_ms)
    }
    fn properties(&self) -> DeviceProperties {
        let info = self.kernel.info();
        DeviceProperties {
            kind: "adreno".into(),
            arch: "a630".into(),
            cores: 1,
            memory_bytes: 0,
            timestamp_hz: 19_200_000,
            notes: format!(
                "{} chip {:#010x}, GMEM {} KiB, {}",
                self.kernel.describe(),
                info.chip_id,
                info.gmem_bytes >> 10,
                self.kernel.driver()
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
    kernel: Arc<dyn GpuKernel>,
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
        let o = self.kernel.alloc(size, MemFlags::USE_CPU_MAP)?;
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
        if let Err(e) = self.kernel.free(o, after) {
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

/// `.rd` captures record KGSL submissions only.
fn capture_unsupported() -> Error {
    Error::Unsupported { what: "an .rd capture on MSM DRM (it records KGSL submissions): use KGSL+QCOM", value: 0 }
}
