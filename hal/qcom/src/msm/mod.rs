//! The mainline Linux kernel's MSM DRM driver (`drivers/gpu/drm/msm`): the same Adreno GPUs
//! KGSL drives, behind a DRM render node (`/dev/dri/renderD*`). [`Msm`] implements
//! [`GpuKernel`] over any [`MsmIoctl`] backend: the node through rustix ([`RustixMsm`]), the
//! simulated MSM of `hcq-sim-adreno` (`MSM+QCOM:SIM`), or a test's fake.
//!
//! - open: `DRM_IOCTL_VERSION` must name the `msm` driver; `GET_PARAM(3D0, GPU_ID / CHIP_ID /
//!   GMEM_SIZE)`; the chip must be one the PM4 encoder drives (`hcq_adreno::chip::generation`),
//!   else an error naming the chip id and the node.
//! - a context is a submit queue (`SUBMITQUEUE_NEW`, closed with `SUBMITQUEUE_CLOSE`);
//! - an object is `GEM_NEW` (write-combined), mapped at `GEM_INFO(GET_OFFSET)`, at the GPU
//!   address `GEM_INFO(GET_IOVA)` says; `GEM_CLOSE` frees it (the kernel holds every buffer of a
//!   submission until that retires);
//! - external memory is a dma-buf fd (`PRIME_FD_TO_HANDLE`); MSM has no user-pointer import;
//! - a submission is `GEM_SUBMIT` with one `MSM_SUBMIT_CMD_BUF` command (the IB as an index into
//!   the submission's buffer list and an offset) and that list, returning the queue's fence;
//! - `WAIT_FENCE` takes an absolute `CLOCK_MONOTONIC` deadline; the kernel recovers from a GPU
//!   fault by retiring the faulting submission, so after every wait the queue's fault count
//!   (`SUBMITQUEUE_QUERY(FAULTS)`) says whether the GPU faulted (`DeviceHung`).
//!
//! Which node: `$HCQ_MSM_NODE` when set, else the first of `/dev/dri/renderD128` ..
//! `renderD191` whose driver is `msm` (opened in turn, not listed: a node an `LD_PRELOAD`
//! device answers exists only to `open`).

pub mod ioctl;
pub mod uapi;

use crate::flags::MemFlags;
use crate::kernel::{BufferList, GpuKernel, Imported, Interface};
use crate::memory::MapOwner;
use crate::{Context, DeviceInfo, FreeAfter, GpuObject, Mapping, UserMapping};
use hcq::error::device_name;
use hcq::mmio::VolatileRegion;
use hcq::{Error, Result};
pub use ioctl::{DriverVersion, MsmIoctl, RustixMsm};
use rustix::io::Errno;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use uapi::*;

/// The environment variable naming the render node to open (else the first `msm` node).
pub const NODE_ENV: &str = "HCQ_MSM_NODE";
/// The first render node probed.
pub const FIRST_RENDER_NODE: u32 = 128;
/// Render nodes probed (`renderD128` .. `renderD191`, the DRM minor range of render nodes).
pub const RENDER_NODES: u32 = 64;
const DEVICE: &str = "MSM+QCOM";

fn os(what: &'static str, e: Errno) -> Error {
    Error::Os { what, errno: e.raw_os_error() }
}

/// The render nodes the probe opens, in order.
pub fn node_candidates() -> Vec<String> {
    match std::env::var(NODE_ENV) {
        Ok(p) if !p.is_empty() => vec![p],
        _ => (FIRST_RENDER_NODE..FIRST_RENDER_NODE + RENDER_NODES).map(|n| format!("/dev/dri/renderD{n}")).collect(),
    }
}

/// An open, checked MSM DRM device.
pub struct Msm {
    io: Arc<dyn MsmIoctl>,
    info: DeviceInfo,
    driver: DriverVersion,
    node: String,
    /// The chip's generation (refused at open when not supported).
    generation: hcq_adreno::chip::Generation,
}

impl core::fmt::Debug for Msm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Msm").field("node", &self.node).field("info", &self.info).finish_non_exhaustive()
    }
}

impl Msm {
    /// Open the first MSM render node ([`node_candidates`]); a missing one is
    /// `DeviceUnavailable` naming the nodes tried.
    pub fn open() -> Result<Msm> {
        let nodes = node_candidates();
        let mut last_refusal = None;
        for path in &nodes {
            match RustixMsm::open(path) {
                Ok(io) => match Self::with_backend_at(Arc::new(io), path) {
                    Ok(m) => return Ok(m),
                    // another driver's node (a PC's own GPU): try the next one
                    Err(e) if matches!(e.root(), Error::DeviceUnavailable { .. }) => last_refusal = Some(e),
                    Err(e) => return Err(e),
                },
                Err(Errno::NOENT | Errno::NODEV | Errno::NXIO) => {}
                Err(e) => return Err(open_error(e).context(format!("render node {path}"))),
            }
        }
        let tried = match nodes.as_slice() {
            [one] => one.clone(),
            _ => format!("/dev/dri/renderD{FIRST_RENDER_NODE}..renderD{}", FIRST_RENDER_NODE + RENDER_NODES - 1),
        };
        Err(last_refusal
            .unwrap_or(Error::DeviceUnavailable {
                device: device_name(DEVICE),
                reason: "no MSM DRM render node: no Adreno GPU, or the msm kernel driver is not loaded \
                     (set $HCQ_MSM_NODE to name the node)",
            })
            .context(format!("nodes tried: {tried}")))
    }

    /// Open the render node at `path` and check it.
    pub fn open_path(path: &str) -> Result<Msm> {
        let io = RustixMsm::open(path).map_err(|e| open_error(e).context(format!("render node {path}")))?;
        Self::with_backend_at(Arc::new(io), path)
    }

    /// Use `io` (a simulated MSM, a fake): check the driver and the chip.
    pub fn with_backend(io: Arc<dyn MsmIoctl>) -> Result<Msm> {
        Self::with_backend_at(io, "(backend)")
    }

    fn with_backend_at(io: Arc<dyn MsmIoctl>, node: &str) -> Result<Msm> {
        let at = || format!("render node {node}");
        let driver = io.version().map_err(|e| os("DRM VERSION", e)).map_err(|e| e.context(at()))?;
        if driver.name != "msm" {
            return Err(Error::DeviceUnavailable {
                device: device_name(DEVICE),
                reason: "the render node belongs to another DRM driver, not msm",
            })
            .map_err(|e| e.context(format!("{}: driver \"{}\"", at(), driver.name)));
        }
        let param = |p: u32, what: &'static str| -> Result<u64> {
            let mut a = Param { pipe: MSM_PIPE_3D0, param: p, ..Param::default() };
            io.get_param(&mut a).map_err(|e| os(what, e).context(at()))?;
            Ok(a.value)
        };
        let gpu_id = param(MSM_PARAM_GPU_ID, "MSM GET_PARAM(GPU_ID)")?;
        let chip = param(MSM_PARAM_CHIP_ID, "MSM GET_PARAM(CHIP_ID)")?;
        let gmem = param(MSM_PARAM_GMEM_SIZE, "MSM GET_PARAM(GMEM_SIZE)")?;
        let gmem_base = param(MSM_PARAM_GMEM_BASE, "MSM GET_PARAM(GMEM_BASE)").unwrap_or(0);
        let chip_id = u32::try_from(chip)
            .map_err(|_| Error::Unsupported { what: "Adreno chip id (wider than 32 bits: a newer GPU)", value: chip })
            .map_err(|e| e.context(at()))?;
        let generation = hcq_adreno::chip::generation(chip_id)
            .map_err(|e| e.context(format!("{}: chip {chip_id:#010x}, gpu id {gpu_id}", at())))?;
        let info = DeviceInfo {
            chip_id,
            // CAST: the marketing id (630) is small; a value past u32 is shown saturated.
            gpu_id: u32::try_from(gpu_id).unwrap_or(u32::MAX),
            gmem_bytes: gmem,
            gmem_base,
            mmu_enabled: true,
        };
        Ok(Msm { io, info, driver, node: node.into(), generation })
    }

    /// The ioctl backend.
    pub fn backend(&self) -> &Arc<dyn MsmIoctl> {
        &self.io
    }

    /// The node this device was opened at.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The driver's name and version.
    pub fn driver_version(&self) -> &DriverVersion {
        &self.driver
    }

    /// GPU faults the kernel counted on `ctx`'s queue.
    pub fn faults(&self, ctx: &Context) -> Result<u32> {
        let mut v = [0u8; 4];
        self.io
            .submitqueue_query(ctx.id, MSM_SUBMITQUEUE_PARAM_FAULTS, &mut v)
            .map_err(|e| os("MSM SUBMITQUEUE_QUERY(FAULTS)", e))?;
        Ok(u32::from_ne_bytes(v))
    }

    fn hung(&self) -> Error {
        Error::DeviceHung { device: device_name(DEVICE) }
    }

    /// One `WAIT_FENCE` on `ctx` until `deadline`.
    fn wait_until(&self, ctx: &Context, fence: u32, deadline: Timespec) -> core::result::Result<(), Errno> {
        self.io.wait_fence(&WaitFence { fence, flags: 0, timeout: deadline, queueid: ctx.id, _pad: 0 })
    }
}

fn open_error(e: Errno) -> Error {
    match e {
        Errno::NOENT | Errno::NODEV | Errno::NXIO => Error::DeviceUnavailable {
            device: device_name(DEVICE),
            reason: "the MSM DRM render node is missing: no Adreno GPU, or the msm kernel driver is not loaded",
        },
        Errno::ACCESS | Errno::PERM => Error::DeviceUnavailable {
            device: device_name(DEVICE),
            reason: "permission denied on the MSM DRM render node: run in its group (render/video) or as root",
        },
        e => os("open an MSM DRM render node", e),
    }
}

/// `CLOCK_MONOTONIC` now plus `ms`.
pub fn deadline_after_ms(ms: u32) -> Timespec {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let ns = now.tv_nsec as i64 + i64::from(ms % 1000) * 1_000_000;
    Timespec { tv_sec: now.tv_sec as i64 + i64::from(ms / 1000) + ns / 1_000_000_000, tv_nsec: ns % 1_000_000_000 }
}

impl GpuKernel for Msm {
    fn interface(&self) -> Interface {
        Interface::Msm
    }
    fn info(&self) -> DeviceInfo {
        self.info
    }
    fn driver(&self) -> String {
        let (a, b, c) = self.driver.version;
        format!("MSM DRM {a}.{b}.{c}")
    }
    fn describe(&self) -> &'static str {
        self.io.describe()
    }
    fn gpu_limits(&self) -> hcq_adreno::limits::GpuLimits {
        self.io.gpu_limits(crate::kernel::chip_limits(self.generation))
    }
    fn unsupported_instruction(&self, ins: &hcq_ir3::isa::Instr) -> Option<&'static str> {
        self.io.unsupported_instruction(ins)
    }

    fn create_context(&self) -> Result<Context> {
        let mut a = Submitqueue::default();
        self.io.submitqueue_new(&mut a).map_err(|e| os("MSM SUBMITQUEUE_NEW", e))?;
        Ok(Context::new(a.id))
    }

    fn destroy_context(&self, ctx: Context) -> Result<()> {
        self.io.submitqueue_close(ctx.id).map_err(|e| os("MSM SUBMITQUEUE_CLOSE", e))
    }

    fn alloc(&self, size: u64, _flags: MemFlags) -> Result<GpuObject> {
        if size == 0 || size > 1 << 40 {
            return Err(Error::InvalidArgument { what: "MSM allocation size (1 byte .. 1 TiB)", value: size });
        }
        let size = size.next_multiple_of(4096);
        let mut n = GemNew { size, flags: MSM_BO_WC, handle: 0 };
        self.io.gem_new(&mut n).map_err(|e| match e {
            Errno::NOMEM => Error::OutOfMemory { device: device_name(DEVICE), requested: size, used: 0 },
            e => os("MSM GEM_NEW", e),
        })?;
        let handle = n.handle;
        let close = || {
            let _ = self.io.gem_close(&GemClose { handle, pad: 0 });
        };
        let info = |what: u32, name: &'static str| {
            let mut a = GemInfo { handle, info: what, ..GemInfo::default() };
            self.io.gem_info(&mut a).map(|()| a.value).map_err(|e| os(name, e))
        };
        let (offset, iova) = match info(MSM_INFO_GET_OFFSET, "MSM GEM_INFO(GET_OFFSET)")
            .and_then(|o| Ok((o, info(MSM_INFO_GET_IOVA, "MSM GEM_INFO(GET_IOVA)")?)))
        {
            Ok(v) => v,
            Err(e) => {
                close();
                return Err(e);
            }
        };
        let len = usize::try_from(size).map_err(|_| Error::InvalidArgument { what: "MSM mmap size", value: size })?;
        let map: Mapping = match self.io.mmap(len, offset) {
            Ok(m) => m,
            Err(e) => {
                close();
                return Err(os("mmap of an MSM GEM object", e));
            }
        };
        // SAFETY: the mapping is live, readable and writable until GpuObject::drop unmaps it,
        // and the region dies with the object; no Rust reference into it is ever made.
        let region = match unsafe { VolatileRegion::new(map.ptr, map.len) } {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: just mapped, not referenced.
                unsafe { self.io.munmap(&map) };
                close();
                return Err(e);
            }
        };
        Ok(GpuObject { io: MapOwner::Msm(self.io.clone()), id: handle, gpuaddr: iova, size, map, region })
    }

    fn free(&self, obj: GpuObject, _after: FreeAfter) -> Result<()> {
        let handle = obj.id;
        drop(obj); // the CPU mapping first
        self.io.gem_close(&GemClose { handle, pad: 0 }).map_err(|e| os("MSM GEM_CLOSE", e))
    }

    unsafe fn map_user(&self, _ptr: *mut u8, _len: usize) -> Result<UserMapping> {
        Err(Error::Unsupported {
            what: "host memory import on MSM DRM (the driver has no user-pointer import): pass a dma-buf fd",
            value: 0,
        })
    }

    fn unmap_user(&self, _m: UserMapping, _ctx: &Context, _after: u32, _timeout_ms: u32) -> Result<()> {
        // map_user never hands out a mapping here
        Err(Error::Unsupported { what: "host memory unmap on MSM DRM (nothing is mapped from host memory)", value: 0 })
    }

    fn import_dmabuf(&self, fd: std::os::fd::BorrowedFd<'_>) -> Result<Imported> {
        let mut p = PrimeHandle::default();
        self.io.prime_fd_to_handle(fd, &mut p).map_err(|e| os("DRM PRIME_FD_TO_HANDLE (dma-buf import)", e))?;
        let handle = p.handle;
        let size =
            rustix::fs::seek(fd, rustix::fs::SeekFrom::End(0)).map_err(|e| os("lseek of a dma-buf (its size)", e));
        let mut a = GemInfo { handle, info: MSM_INFO_GET_IOVA, ..GemInfo::default() };
        let iova = self.io.gem_info(&mut a).map(|()| a.value).map_err(|e| os("MSM GEM_INFO(GET_IOVA)", e));
        match (size, iova) {
            (Ok(size), Ok(gpuaddr)) if size > 0 => Ok(Imported { handle, gpuaddr, size }),
            (size, iova) => {
                let _ = self.io.gem_close(&GemClose { handle, pad: 0 });
                size?;
                iova?;
                Err(Error::InvalidArgument { what: "MSM dma-buf import: an empty dma-buf", value: 0 })
            }
        }
    }

    fn release_import(&self, imp: Imported) -> Result<()> {
        self.io.gem_close(&GemClose { handle: imp.handle, pad: 0 }).map_err(|e| os("MSM GEM_CLOSE", e))
    }

    unsafe fn submit(&self, ctx: &Context, ib: u64, bytes: u64, buffers: &mut BufferList) -> Result<u32> {
        if bytes == 0 || !bytes.is_multiple_of(4) || !ib.is_multiple_of(4) || bytes > u64::from(u32::MAX) {
            return Err(Error::InvalidArgument {
                what: "MSM submit: IB address and size must be non-zero dword multiples (size < 4 GiB)",
                value: bytes,
            });
        }
        let (idx, off) = buffers.locate(ib, bytes)?;
        let off = u32::try_from(off)
            .map_err(|_| Error::InvalidArgument { what: "MSM submit: IB offset in its object (32-bit)", value: off })?;
        // CAST: checked above.
        let cmd = [GemSubmitCmd {
            ty: MSM_SUBMIT_CMD_BUF,
            submit_idx: idx,
            submit_offset: off,
            size: bytes as u32,
            ..GemSubmitCmd::default()
        }];
        let mut a = GemSubmit { flags: MSM_PIPE_3D0, queueid: ctx.id, ..GemSubmit::default() };
        self.io.gem_submit(&mut a, buffers.submit_bos(), &cmd).map_err(|e| match e {
            Errno::IO | Errno::DEADLK => self.hung(),
            e => os("MSM GEM_SUBMIT (refused by the kernel)", e),
        })?;
        ctx.note_submitted(a.fence);
        Ok(a.fence)
    }

    fn retired(&self, ctx: &Context) -> Result<u32> {
        // MSM has no "read retired fence": probe the fences in flight (at most the calls in
        // flight) with waits whose deadline has passed, from the last one known to have passed.
        let last = ctx.last_submitted();
        let mut r = ctx.retired.load(Ordering::Acquire);
        let past = Timespec::default();
        while ctx.has_submitted() && r != last {
            match self.wait_until(ctx, r.wrapping_add(1), past) {
                Ok(()) => r = r.wrapping_add(1),
                Err(Errno::TIMEDOUT | Errno::BUSY) => break,
                Err(e) => return Err(os("MSM WAIT_FENCE", e)),
            }
        }
        ctx.retired.fetch_max(r, Ordering::AcqRel);
        Ok(r)
    }

    fn wait(&self, ctx: &Context, fence: u32, timeout_ms: u32) -> Result<()> {
        match self.wait_until(ctx, fence, deadline_after_ms(timeout_ms)) {
            Ok(()) => {}
            Err(Errno::TIMEDOUT | Errno::BUSY) => {
                return Err(Error::Timeout {
                    device: device_name(DEVICE),
                    awaited: fence.into(),
                    last: self.retired(ctx).unwrap_or(0).into(),
                    timeout_ms: timeout_ms.into(),
                });
            }
            Err(Errno::IO | Errno::DEADLK) => return Err(self.hung()),
            Err(e) => return Err(os("MSM WAIT_FENCE", e)),
        }
        // The kernel retires a faulting submission (its recovery): a fence that passed says
        // nothing about a fault, the queue's fault count does.
        let faults = self.faults(ctx)?;
        if faults != 0 {
            return Err(self.hung().context(format!(
                "the kernel counted {faults} GPU fault(s) on MSM submit queue {} and recovered the GPU (see dmesg)",
                ctx.id
            )));
        }
        Ok(())
    }

    fn fault_report(&self) -> Option<String> {
        self.io.fault_report()
    }
    fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]) {
        self.io.note_program(shader_addr, arg_slots)
    }
}
