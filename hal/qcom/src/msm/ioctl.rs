//! The MSM DRM ioctls behind a trait: [`MsmIoctl`] is what [`super::Msm`] calls, and
//! [`RustixMsm`] implements it over a render node (`/dev/dri/renderD*`) with rustix (through
//! libc, so an `LD_PRELOAD` device such as hcq-vkgsl's render node can answer). A simulated MSM
//! (`hcq-sim-adreno`'s `SimMsm`) or a test's fake implements the same trait; user pointers
//! inside the uapi structs are filled in by the real backend only, so implementations see
//! plain Rust slices.

use super::uapi::*;
use crate::Mapping;
use crate::kgsl::ioctl::Raw;
use hcq_adreno::limits::GpuLimits;
use hcq_ir3::isa::Instr;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use std::os::fd::BorrowedFd;
use zerocopy::IntoBytes;

/// What `DRM_IOCTL_VERSION` says about the driver behind a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverVersion {
    /// The driver's name (`msm` for the MSM DRM driver).
    pub name: String,
    /// `(major, minor, patchlevel)`.
    pub version: (i32, i32, i32),
}

/// The MSM DRM ioctls this crate uses. Errors are the raw errno of the call.
pub trait MsmIoctl: Send + Sync {
    /// `DRM_IOCTL_VERSION`.
    fn version(&self) -> Result<DriverVersion, Errno>;
    /// `DRM_IOCTL_MSM_GET_PARAM`.
    fn get_param(&self, arg: &mut Param) -> Result<(), Errno>;
    /// `DRM_IOCTL_MSM_SUBMITQUEUE_NEW`.
    fn submitqueue_new(&self, arg: &mut Submitqueue) -> Result<(), Errno>;
    /// `DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE` of queue `id`.
    fn submitqueue_close(&self, id: u32) -> Result<(), Errno>;
    /// `DRM_IOCTL_MSM_SUBMITQUEUE_QUERY` of `param` on queue `id` into `out` (the backend sets
    /// `data` and `len`).
    fn submitqueue_query(&self, id: u32, param: u32, out: &mut [u8]) -> Result<(), Errno>;
    /// `DRM_IOCTL_MSM_GEM_NEW`.
    fn gem_new(&self, arg: &mut GemNew) -> Result<(), Errno>;
    /// `DRM_IOCTL_MSM_GEM_INFO` (by-value infos only).
    fn gem_info(&self, arg: &mut GemInfo) -> Result<(), Errno>;
    /// `DRM_IOCTL_GEM_CLOSE`.
    fn gem_close(&self, arg: &GemClose) -> Result<(), Errno>;
    /// `DRM_IOCTL_PRIME_FD_TO_HANDLE`: import the dma-buf `fd`; sets `arg.handle`.
    fn prime_fd_to_handle(&self, fd: BorrowedFd<'_>, arg: &mut PrimeHandle) -> Result<(), Errno>;
    /// `DRM_IOCTL_MSM_GEM_SUBMIT` with the buffer list `bos` and the commands `cmds` (the backend
    /// sets `bos`, `nr_bos`, `cmds`, `nr_cmds`).
    fn gem_submit(&self, arg: &mut GemSubmit, bos: &[GemSubmitBo], cmds: &[GemSubmitCmd]) -> Result<(), Errno>;
    /// `DRM_IOCTL_MSM_WAIT_FENCE` (absolute `CLOCK_MONOTONIC` deadline).
    fn wait_fence(&self, arg: &WaitFence) -> Result<(), Errno>;
    /// Map `len` bytes of a GEM object at its mmap offset (`GEM_INFO(GET_OFFSET)`).
    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno>;
    /// Undo [`MsmIoctl::mmap`].
    ///
    /// # Safety
    /// `m` came from this backend's `mmap` and nothing references the range any more.
    unsafe fn munmap(&self, m: &Mapping);

    /// The report of the fault that stopped the command processor, when the backend can tell
    /// (a simulated MSM); the kernel node has none (it counts faults per queue only).
    fn fault_report(&self) -> Option<String> {
        None
    }
    /// A program's code address and address-argument slots (see
    /// `KgslIoctl::note_program`); the kernel node ignores it.
    fn note_program(&self, _shader_addr: u64, _arg_slots: &[(u32, u32)]) {}
    /// What the device is, for its properties' notes.
    fn describe(&self) -> &'static str {
        "MSM DRM"
    }
    /// The limits this backend runs the chip under, given the chip's (see
    /// `KgslIoctl::gpu_limits`); the kernel node adds none.
    fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits {
        chip
    }
    /// Why the shader core behind this backend cannot run `ins`, if it cannot (see
    /// `KgslIoctl::unsupported_instruction`); the kernel node's GPU runs every instruction.
    fn unsupported_instruction(&self, _ins: &Instr) -> Option<&'static str> {
        None
    }
}

/// A render node of the MSM DRM driver, through rustix.
#[derive(Debug)]
pub struct RustixMsm {
    fd: OwnedFd,
}

impl RustixMsm {
    /// Open the node at `path` read-write.
    pub fn open(path: &str) -> Result<Self, Errno> {
        use rustix::fs::{Mode, OFlags, open};
        let fd = open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Self { fd })
    }

    fn call<T: IntoBytes>(&self, request: u32, arg: &mut T) -> Result<(), Errno> {
        // PANIC: the request numbers are built from size_of::<T>() in uapi.rs; a mismatch is a
        // programming error caught by every test that reaches the call.
        assert_eq!((request >> 16 & 0x3fff) as usize, size_of::<T>(), "ioctl request size");
        loop {
            // SAFETY: see the `Ioctl` impl for `Raw`: `arg` is live and sized as the request
            // says; the user pointers inside it were set by the caller to live buffers.
            match unsafe { rustix::ioctl::ioctl(&self.fd, Raw { request, arg: &mut *arg }) } {
                // DRM restarts an interrupted wait with the same absolute deadline.
                Err(Errno::INTR) | Err(Errno::AGAIN) => continue,
                r => return r,
            }
        }
    }
}

impl MsmIoctl for RustixMsm {
    fn version(&self) -> Result<DriverVersion, Errno> {
        let mut name = [0u8; 64];
        let mut a = DrmVersion { name_len: name.len() as u64, name: name.as_mut_ptr() as u64, ..Default::default() };
        self.call(DRM_IOCTL_VERSION, &mut a)?;
        // The kernel copies at most the buffer and says the name's full length.
        let n = usize::try_from(a.name_len).unwrap_or(usize::MAX).min(name.len());
        Ok(DriverVersion {
            name: String::from_utf8_lossy(&name[..n]).into_owned(),
            version: (a.version_major, a.version_minor, a.version_patchlevel),
        })
    }
    fn get_param(&self, arg: &mut Param) -> Result<(), Errno> {
        self.call(DRM_IOCTL_MSM_GET_PARAM, arg)
    }
    fn submitqueue_new(&self, arg: &mut Submitqueue) -> Result<(), Errno> {
        self.call(DRM_IOCTL_MSM_SUBMITQUEUE_NEW, arg)
    }
    fn submitqueue_close(&self, id: u32) -> Result<(), Errno> {
        self.call(DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE, &mut { id })
    }
    fn submitqueue_query(&self, id: u32, param: u32, out: &mut [u8]) -> Result<(), Errno> {
        let mut a = SubmitqueueQuery { data: out.as_mut_ptr() as u64, id, param, len: out.len() as u32, pad: 0 };
        self.call(DRM_IOCTL_MSM_SUBMITQUEUE_QUERY, &mut a)
    }
    fn gem_new(&self, arg: &mut GemNew) -> Result<(), Errno> {
        self.call(DRM_IOCTL_MSM_GEM_NEW, arg)
    }
    fn gem_info(&self, arg: &mut GemInfo) -> Result<(), Errno> {
        self.call(DRM_IOCTL_MSM_GEM_INFO, arg)
    }
    fn gem_close(&self, arg: &GemClose) -> Result<(), Errno> {
        self.call(DRM_IOCTL_GEM_CLOSE, &mut arg.clone())
    }
    fn prime_fd_to_handle(&self, fd: BorrowedFd<'_>, arg: &mut PrimeHandle) -> Result<(), Errno> {
        use std::os::fd::AsRawFd;
        arg.fd = fd.as_raw_fd();
        self.call(DRM_IOCTL_PRIME_FD_TO_HANDLE, arg)
    }
    fn gem_submit(&self, arg: &mut GemSubmit, bos: &[GemSubmitBo], cmds: &[GemSubmitCmd]) -> Result<(), Errno> {
        // The kernel only reads both arrays (msm_gem_submit.c copies them in).
        arg.bos = bos.as_ptr() as u64;
        arg.nr_bos = u32::try_from(bos.len()).map_err(|_| Errno::INVAL)?;
        arg.cmds = cmds.as_ptr() as u64;
        arg.nr_cmds = u32::try_from(cmds.len()).map_err(|_| Errno::INVAL)?;
        self.call(DRM_IOCTL_MSM_GEM_SUBMIT, arg)
    }
    fn wait_fence(&self, arg: &WaitFence) -> Result<(), Errno> {
        self.call(DRM_IOCTL_MSM_WAIT_FENCE, &mut arg.clone())
    }
    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno> {
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        // SAFETY: a fresh shared mapping of the node at a kernel-chosen address; it aliases no
        // Rust object.
        let p = unsafe {
            mmap(core::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &self.fd, offset)?
        };
        let ptr = core::ptr::NonNull::new(p.cast::<u8>()).ok_or(Errno::NOMEM)?;
        Ok(Mapping { ptr, len })
    }
    unsafe fn munmap(&self, m: &Mapping) {
        // SAFETY: the caller guarantees `m` is our mapping and unreferenced.
        let _ = unsafe { rustix::mm::munmap(m.ptr.as_ptr().cast(), m.len) };
    }
}

/// A shared backend is a backend (a device keeps one; a test keeps a handle to the simulator).
impl<T: MsmIoctl + ?Sized> MsmIoctl for std::sync::Arc<T> {
    crate::forward::forward_to_deref! {
        fn version(&self) -> Result<DriverVersion, Errno>;
        fn get_param(&self, arg: &mut Param) -> Result<(), Errno>;
        fn submitqueue_new(&self, arg: &mut Submitqueue) -> Result<(), Errno>;
        fn submitqueue_close(&self, id: u32) -> Result<(), Errno>;
        fn submitqueue_query(&self, id: u32, param: u32, out: &mut [u8]) -> Result<(), Errno>;
        fn gem_new(&self, arg: &mut GemNew) -> Result<(), Errno>;
        fn gem_info(&self, arg: &mut GemInfo) -> Result<(), Errno>;
        fn gem_close(&self, arg: &GemClose) -> Result<(), Errno>;
        fn prime_fd_to_handle(&self, fd: BorrowedFd<'_>, arg: &mut PrimeHandle) -> Result<(), Errno>;
        fn gem_submit(&self, arg: &mut GemSubmit, bos: &[GemSubmitBo], cmds: &[GemSubmitCmd]) -> Result<(), Errno>;
        fn wait_fence(&self, arg: &WaitFence) -> Result<(), Errno>;
        fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno>;
        unsafe fn munmap(&self, m: &Mapping);
        fn fault_report(&self) -> Option<String>;
        fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]);
        fn describe(&self) -> &'static str;
        fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits;
        fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str>;
    }
}
