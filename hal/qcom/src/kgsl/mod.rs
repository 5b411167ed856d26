//! Qualcomm's KGSL (`/dev/kgsl-3d0`, Android and comma's AGNOS), one of the two kernel
//! interfaces of the QCOM device.
//!
//! KGSL has no user-visible ring: work is an indirect buffer (IB) handed to
//! `IOCTL_KGSL_GPU_COMMAND`, which returns a per-context timestamp; the kernel wraps the IB in
//! its own ring with the timestamp writes.
//!
//! - [`uapi`]: the structs as zerocopy types with size/offset assertions (the flag words are
//!   [`crate::flags`]).
//! - [`ioctl::KgslIoctl`]: every ioctl behind a trait ([`ioctl::RustixKgsl`] is the device
//!   node through rustix; the simulated KGSL of `hcq-sim-adreno` or a test fake replaces it).
//! - [`Kgsl`]: open and check the device (KGSL ≥ 3.14, an Adreno 630), contexts, GPU objects
//!   (allocated, CPU-mapped, freed only after the timestamp that last used them), user-memory
//!   mappings, IB submission, timestamp waits; it implements [`kernel::GpuKernel`].
//! - [`capture::Capturing`]: any backend, recording every submission in a freedreno `.rd`
//!   capture.

pub mod capture;
pub mod ioctl;
pub mod uapi;

use crate::flags::{CmdlistFlags, ContextFlags, MemFlags};
use crate::kernel;
use crate::memory::MapOwner;
use crate::{Context, DeviceInfo, FreeAfter, GpuObject, UserMapping};
use hcq::error::device_name;
use hcq::mmio::VolatileRegion;
use hcq::{Error, Result};
use ioctl::{KgslIoctl, RustixKgsl};
use rustix::io::Errno;
use std::sync::Arc;
use uapi::*;
use zerocopy::FromZeros;

/// The KGSL node of the 3D core.
pub const DEFAULT_NODE: &str = "/dev/kgsl-3d0";
/// Oldest KGSL driver version with `GPUOBJ_*` and `GPU_COMMAND`.
pub const MIN_VERSION: (u32, u32) = (3, 14);
const DEVICE: &str = "QCOM";

fn os(what: &'static str, e: Errno) -> Error {
    Error::Os { what, errno: e.raw_os_error() }
}

/// The error a user sees when the node cannot be opened.
pub(crate) fn open_error(e: Errno) -> Error {
    match e {
        Errno::NOENT | Errno::NODEV | Errno::NXIO => Error::DeviceUnavailable {
            device: device_name(DEVICE),
            reason: "the KGSL node (/dev/kgsl-3d0) is missing: no Adreno GPU, or its kernel driver is not loaded",
        },
        Errno::ACCESS | Errno::PERM => Error::DeviceUnavailable {
            device: device_name(DEVICE),
            reason: "permission denied on the KGSL node (/dev/kgsl-3d0): run in its group (graphics/video) or as root",
        },
        e => os("open /dev/kgsl-3d0", e),
    }
}

/// An open, checked KGSL device.
pub struct Kgsl {
    io: Arc<dyn KgslIoctl>,
    info: DeviceInfo,
    version: Version,
    generation: hcq_adreno::chip::Generation,
}

impl core::fmt::Debug for Kgsl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Kgsl").field("info", &self.info).field("version", &self.version).finish()
    }
}

impl Kgsl {
    /// Open [`DEFAULT_NODE`] and check it.
    pub fn open() -> Result<Kgsl> {
        Self::open_path(DEFAULT_NODE)
    }

    /// The ioctl backend (the node, a simulated KGSL, a capture around one).
    pub fn backend(&self) -> &Arc<dyn KgslIoctl> {
        &self.io
    }

    /// Open the node at `path` and check it.
    pub fn open_path(path: &str) -> Result<Kgsl> {
        let io = RustixKgsl::open(path).map_err(open_error)?;
        Self::with_backend(Arc::new(io))
    }

    /// Use `io` (a simulated KGSL, a fake): query and check the driver version and the chip.
    pub fn with_backend(io: Arc<dyn KgslIoctl>) -> Result<Kgsl> {
        let mut version = Version::new_zeroed();
        io.get_property(PROP_VERSION, zerocopy::IntoBytes::as_mut_bytes(&mut version))
            .map_err(|e| os("KGSL GETPROPERTY(VERSION)", e))?;
        if (version.drv_major, version.drv_minor) < MIN_VERSION {
            return Err(Error::Unsupported {
                what: "KGSL driver version (3.14 or newer needed; value = major << 16 | minor)",
                value: u64::from(version.drv_major) << 16 | u64::from(version.drv_minor),
            });
        }
        let mut d = DevInfo::new_zeroed();
        io.get_property(PROP_DEVICE_INFO, zerocopy::IntoBytes::as_mut_bytes(&mut d))
            .map_err(|e| os("KGSL GETPROPERTY(DEVICE_INFO)", e))?;
        let info = DeviceInfo {
            chip_id: d.chip_id,
            gpu_id: d.gpu_id,
            gmem_bytes: d.gmem_sizebytes,
            gmem_base: d.gmem_gpubaseaddr,
            mmu_enabled: d.mmu_enabled != 0,
        };
        let generation = hcq_adreno::chip::generation(info.chip_id)?;
        Ok(Kgsl { io, info, version, generation })
    }

    /// The GPU generation of the chip (refused at open when not supported): what
    /// [`hcq_adreno::compute_encoder`] picks the encoder by.
    pub fn generation(&self) -> hcq_adreno::chip::Generation {
        self.generation
    }

    /// The device.
    pub fn info(&self) -> DeviceInfo {
        self.info
    }

    /// The driver's `(major, minor)` version.
    pub fn version(&self) -> (u32, u32) {
        (self.version.drv_major, self.version.drv_minor)
    }

    /// Create a context.
    pub fn create_context(&self, flags: ContextFlags) -> Result<Context> {
        let mut a = DrawctxtCreate { flags: flags.bits(), drawctxt_id: 0 };
        self.io.drawctxt_create(&mut a).map_err(|e| os("KGSL DRAWCTXT_CREATE", e))?;
        Ok(Context::new(a.drawctxt_id))
    }

    /// Destroy a context (KGSL waits for its submissions to retire first).
    pub fn destroy_context(&self, ctx: Context) -> Result<()> {
        self.io.drawctxt_destroy(&DrawctxtDestroy { drawctxt_id: ctx.id }).map_err(|e| os("KGSL DRAWCTXT_DESTROY", e))
    }

    /// Allocate `size` bytes (rounded up to 4 KiB, 4 KiB aligned) and map them. With
    /// [`MemFlags::USE_CPU_MAP`] the GPU address is the CPU mapping's address.
    pub fn alloc(&self, size: u64, flags: MemFlags) -> Result<GpuObject> {
        if size == 0 || size > 1 << 40 {
            return Err(Error::InvalidArgument { what: "KGSL allocation size (1 byte .. 1 TiB)", value: size });
        }
        let size = size.next_multiple_of(4096);
        let mut a = GpuobjAlloc { size, flags: flags.with_align_log2(12).bits(), ..GpuobjAlloc::new_zeroed() };
        self.io.gpuobj_alloc(&mut a).map_err(|e| match e {
            Errno::NOMEM => Error::OutOfMemory { device: device_name(DEVICE), requested: size, used: 0 },
            e => os("KGSL GPUOBJ_ALLOC", e),
        })?;
        let release = |io: &Arc<dyn KgslIoctl>| {
            let _ = io.gpuobj_free(&GpuobjFree { id: a.id, ..GpuobjFree::new_zeroed() }, None);
        };
        // With USE_CPU_MAP the GPU address is the CPU mapping's address (tinygrad's usage);
        // otherwise KGSL chose it and GPUOBJ_INFO reports it.
        let mut info = GpuobjInfo { id: a.id, ..GpuobjInfo::new_zeroed() };
        if !flags.contains(MemFlags::USE_CPU_MAP)
            && let Err(e) = self.io.gpuobj_info(&mut info)
        {
            release(&self.io);
            return Err(os("KGSL GPUOBJ_INFO", e));
        }
        let len = usize::try_from(a.mmapsize.max(size))
            .map_err(|_| Error::InvalidArgument { what: "KGSL mmap size", value: a.mmapsize })?;
        let map = match self.io.mmap(len, u64::from(a.id) << 12) {
            Ok(m) => m,
            Err(e) => {
                release(&self.io);
                return Err(os("mmap of a KGSL GPU object", e));
            }
        };
        // SAFETY: the mapping is live, readable and writable until GpuObject::drop unmaps it,
        // and the region dies with the object; no Rust reference into it is ever made.
        let region = match unsafe { VolatileRegion::new(map.ptr, map.len) } {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: just mapped, not referenced.
                unsafe { self.io.munmap(&map) };
                release(&self.io);
                return Err(e);
            }
        };
        let gpuaddr = if flags.contains(MemFlags::USE_CPU_MAP) { map.ptr.as_ptr() as u64 } else { info.gpuaddr };
        Ok(GpuObject { io: MapOwner::Kgsl(self.io.clone()), id: a.id, gpuaddr, size, map, region })
    }

    /// Release `obj`: at once when it was never submitted, else when its last timestamp retires.
    pub fn free(&self, obj: GpuObject, after: FreeAfter) -> Result<()> {
        let (a, ev) = match after {
            FreeAfter::NeverSubmitted => (GpuobjFree { id: obj.id, ..GpuobjFree::new_zeroed() }, None),
            FreeAfter::Timestamp { context, timestamp } => (
                GpuobjFree {
                    flags: GPUOBJ_FREE_ON_EVENT,
                    id: obj.id,
                    ty: GPU_EVENT_TIMESTAMP,
                    ..GpuobjFree::new_zeroed()
                },
                Some(GpuEventTimestamp { context_id: context, timestamp }),
            ),
        };
        drop(obj); // the CPU mapping first; the GPU object stays until the kernel frees it
        self.io.gpuobj_free(&a, ev.as_ref()).map_err(|e| os("KGSL GPUOBJ_FREE", e))
    }

    /// Map host memory for the GPU.
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must stay allocated until [`Kgsl::unmap_user`] returns for it, and
    /// the caller must not free it while a submission that uses it is in flight.
    pub unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<UserMapping> {
        let mut a = MapUserMem {
            hostptr: ptr as u64,
            len: len as u64,
            memtype: USER_MEM_TYPE_ADDR,
            flags: MemFlags::USERMEM_ADDR.bits() as u32,
            ..MapUserMem::new_zeroed()
        };
        self.io.map_user_mem(&mut a).map_err(|e| os("KGSL MAP_USER_MEM", e))?;
        Ok(UserMapping { gpuaddr: a.gpuaddr, len: len as u64 })
    }

    /// Unmap host memory once `ctx` retired `after` (waits for it first, `timeout_ms` at most).
    pub fn unmap_user(&self, m: UserMapping, ctx: &Context, after: u32, timeout_ms: u32) -> Result<()> {
        self.wait(ctx, after, timeout_ms)?;
        self.io.sharedmem_free(&SharedmemFree { gpuaddr: m.gpuaddr }).map_err(|e| os("KGSL SHAREDMEM_FREE", e))
    }

    /// Submit the IB of `bytes` at `ib` on `ctx`; returns its timestamp. The caller has made
    /// the IB and its data visible to the GPU (the ioctl is the ordering point: the kernel's
    /// barriers precede the ring write).
    ///
    /// # Safety
    /// The GPU executes the IB: it and everything it references must be valid GPU memory of
    /// this device for what its commands do, and stay allocated and unchanged where the GPU
    /// reads them until the timestamp retires (see [`kernel::GpuKernel::submit`]). Calling it
    /// outside `unsafe` does not compile:
    ///
    /// ```compile_fail,E0133
    /// fn run(k: &hcq_qcom::kgsl::Kgsl, ctx: &hcq_qcom::Context) {
    ///     let _ = k.submit(ctx, 0x1000, 4);
    /// }
    /// ```
    pub unsafe fn submit(&self, ctx: &Context, ib: u64, bytes: u64) -> Result<u32> {
        if bytes == 0 || !bytes.is_multiple_of(4) || !ib.is_multiple_of(4) {
            return Err(Error::InvalidArgument {
                what: "KGSL submit: IB address and size must be non-zero dword multiples",
                value: bytes,
            });
        }
        let cmd =
            [CommandObject { gpuaddr: ib, size: bytes, flags: CmdlistFlags::IB.bits(), ..CommandObject::new_zeroed() }];
        let mut a = GpuCommand { context_id: ctx.id, ..GpuCommand::new_zeroed() };
        self.io.gpu_command(&mut a, &cmd).map_err(|e| match e {
            Errno::DEADLK | Errno::IO => Error::DeviceHung { device: device_name(DEVICE) },
            e => os("KGSL GPU_COMMAND", e),
        })?;
        ctx.note_submitted(a.timestamp);
        Ok(a.timestamp)
    }

    /// The latest retired timestamp of `ctx`.
    pub fn retired(&self, ctx: &Context) -> Result<u32> {
        let mut a = ReadTimestampCtxtid { context_id: ctx.id, ty: TIMESTAMP_RETIRED, timestamp: 0 };
        self.io.read_timestamp(&mut a).map_err(|e| os("KGSL READTIMESTAMP", e))?;
        Ok(a.timestamp)
    }

    /// Sleep until `ctx` retires `timestamp`, `timeout_ms` at most. A timeout is
    /// [`Error::Timeout`]; a faulted or hung context is [`Error::DeviceHung`].
    pub fn wait(&self, ctx: &Context, timestamp: u32, timeout_ms: u32) -> Result<()> {
        let a = WaitTimestampCtxtid { context_id: ctx.id, timestamp, timeout: timeout_ms };
        match self.io.wait_timestamp(&a) {
            Ok(()) => Ok(()),
            Err(Errno::TIMEDOUT) | Err(Errno::BUSY) => Err(Error::Timeout {
                device: device_name(DEVICE),
                awaited: timestamp.into(),
                last: self.retired(ctx).unwrap_or(0).into(),
                timeout_ms: timeout_ms.into(),
            }),
            Err(Errno::DEADLK) | Err(Errno::IO) | Err(Errno::PROTO) => {
                Err(Error::DeviceHung { device: device_name(DEVICE) })
            }
            Err(e) => Err(os("KGSL WAITTIMESTAMP_CTXTID", e)),
        }
    }
}

impl kernel::GpuKernel for Kgsl {
    fn interface(&self) -> kernel::Interface {
        kernel::Interface::Kgsl
    }
    fn info(&self) -> DeviceInfo {
        self.info
    }
    fn driver(&self) -> String {
        let (maj, min) = self.version();
        format!("KGSL {maj}.{min}")
    }
    fn describe(&self) -> &'static str {
        self.io.describe()
    }
    fn gpu_limits(&self) -> hcq_adreno::limits::GpuLimits {
        self.io.gpu_limits(kernel::chip_limits(self.generation))
    }
    fn unsupported_instruction(&self, ins: &hcq_ir3::isa::Instr) -> Option<&'static str> {
        self.io.unsupported_instruction(ins)
    }
    fn create_context(&self) -> Result<Context> {
        Kgsl::create_context(self, ContextFlags::compute())
    }
    fn destroy_context(&self, ctx: Context) -> Result<()> {
        Kgsl::destroy_context(self, ctx)
    }
    fn alloc(&self, size: u64, flags: MemFlags) -> Result<GpuObject> {
        Kgsl::alloc(self, size, flags)
    }
    fn free(&self, obj: GpuObject, after: FreeAfter) -> Result<()> {
        Kgsl::free(self, obj, after)
    }
    unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<UserMapping> {
        // SAFETY: the caller's contract is this one's.
        unsafe { Kgsl::map_user(self, ptr, len) }
    }
    fn unmap_user(&self, m: UserMapping, ctx: &Context, after: u32, timeout_ms: u32) -> Result<()> {
        Kgsl::unmap_user(self, m, ctx, after, timeout_ms)
    }
    fn import_dmabuf(&self, _fd: std::os::fd::BorrowedFd<'_>) -> Result<kernel::Imported> {
        Err(Error::Unsupported {
            what: "dma-buf import on KGSL (MAP_USER_MEM of KGSL_USER_MEM_TYPE_DMABUF) is not implemented; \
                   map host memory with map_user",
            value: 0,
        })
    }
    fn release_import(&self, _imp: kernel::Imported) -> Result<()> {
        Err(Error::InvalidArgument { what: "KGSL: no dma-buf import to release", value: 0 })
    }
    unsafe fn submit(&self, ctx: &Context, ib: u64, bytes: u64, _buffers: &mut kernel::BufferList) -> Result<u32> {
        // SAFETY: the caller's contract is this one's (KGSL needs no buffer list: every object
        // of the file stays mapped until it is freed after its timestamp).
        unsafe { Kgsl::submit(self, ctx, ib, bytes) }
    }
    fn retired(&self, ctx: &Context) -> Result<u32> {
        Kgsl::retired(self, ctx)
    }
    fn wait(&self, ctx: &Context, fence: u32, timeout_ms: u32) -> Result<()> {
        Kgsl::wait(self, ctx, fence, timeout_ms)
    }
    fn fault_report(&self) -> Option<String> {
        self.io.fault_report()
    }
    fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]) {
        self.io.note_program(shader_addr, arg_slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_errors_say_what_to_do() {
        let denied = open_error(Errno::ACCESS).to_string();
        assert!(denied.contains("permission denied") && denied.contains("group"), "{denied}");
        assert!(open_error(Errno::NOENT).to_string().contains("missing"));
        assert!(matches!(open_error(Errno::BUSY), Error::Os { errno, .. } if errno == Errno::BUSY.raw_os_error()));
    }
}
