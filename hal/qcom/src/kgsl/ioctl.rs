//! The ioctl layer behind a trait: [`KgslIoctl`] is what the rest of the crate calls, and
//! [`RustixKgsl`] implements it over `/dev/kgsl-3d0` with rustix. A simulated KGSL (or a test's
//! fake) implements the same trait; user pointers inside the uapi structs are filled in by the
//! real backend only, so implementations see plain Rust slices.

use super::uapi::*;
use crate::Mapping;
use core::ptr::NonNull;
use hcq_adreno::limits::GpuLimits;
use hcq_ir3::isa::Instr;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use zerocopy::IntoBytes;

/// The KGSL ioctls this crate uses. Errors are the raw errno of the call.
pub trait KgslIoctl: Send + Sync {
    /// `DEVICE_GETPROPERTY`: fill `out` with property `ty`.
    fn get_property(&self, ty: u32, out: &mut [u8]) -> Result<(), Errno>;
    /// `DRAWCTXT_CREATE`.
    fn drawctxt_create(&self, arg: &mut DrawctxtCreate) -> Result<(), Errno>;
    /// `DRAWCTXT_DESTROY`.
    fn drawctxt_destroy(&self, arg: &DrawctxtDestroy) -> Result<(), Errno>;
    /// `GPUOBJ_ALLOC`.
    fn gpuobj_alloc(&self, arg: &mut GpuobjAlloc) -> Result<(), Errno>;
    /// `GPUOBJ_INFO`.
    fn gpuobj_info(&self, arg: &mut GpuobjInfo) -> Result<(), Errno>;
    /// `GPUOBJ_FREE`, with the timestamp event when `FREE_ON_EVENT` is set.
    fn gpuobj_free(&self, arg: &GpuobjFree, event: Option<&GpuEventTimestamp>) -> Result<(), Errno>;
    /// `MAP_USER_MEM`.
    fn map_user_mem(&self, arg: &mut MapUserMem) -> Result<(), Errno>;
    /// `SHAREDMEM_FREE`.
    fn sharedmem_free(&self, arg: &SharedmemFree) -> Result<(), Errno>;
    /// `GPU_COMMAND` with the command objects `cmds` (the backend sets `cmdlist`).
    fn gpu_command(&self, arg: &mut GpuCommand, cmds: &[CommandObject]) -> Result<(), Errno>;
    /// `DEVICE_WAITTIMESTAMP_CTXTID`.
    fn wait_timestamp(&self, arg: &WaitTimestampCtxtid) -> Result<(), Errno>;
    /// `CMDSTREAM_READTIMESTAMP_CTXTID`.
    fn read_timestamp(&self, arg: &mut ReadTimestampCtxtid) -> Result<(), Errno>;
    /// Map `len` bytes of GPU object memory at mmap offset `offset` (object id × 4096).
    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno>;
    /// Undo [`KgslIoctl::mmap`].
    ///
    /// # Safety
    /// `m` came from this backend's `mmap` and nothing references the range any more.
    unsafe fn munmap(&self, m: &Mapping);

    /// The report of the fault that stopped the command processor (IB address and word
    /// offset), when the backend can tell (a simulated KGSL); the device adds it as context to
    /// a `DeviceHung` error. The kernel node has none.
    fn fault_report(&self) -> Option<String> {
        None
    }
    /// The device uploaded a program whose code is at `shader_addr`, with its address
    /// arguments at `(argument, constant byte offset)`: a backend that checks every dispatch's
    /// arguments (a simulated KGSL) records them. The kernel node ignores it.
    fn note_program(&self, _shader_addr: u64, _arg_slots: &[(u32, u32)]) {}
    /// What the device is, for its properties' notes (`KGSL`, or a simulator's description).
    fn describe(&self) -> &'static str {
        "KGSL"
    }
    /// The limits this backend runs the chip under, given the chip's (`chip`:
    /// [`crate::kernel::chip_limits`] of the chip id it reports): the kernel node adds none; a
    /// simulator states its own (a work-group budget per dispatch).
    fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits {
        chip
    }
    /// Why the shader core behind this backend cannot run `ins`, if it cannot (a simulator's
    /// interpreter); the kernel node's GPU runs every instruction (`None`).
    fn unsupported_instruction(&self, _ins: &Instr) -> Option<&'static str> {
        None
    }
}

/// A shared backend is a backend (the device keeps one, a capture wraps another).
impl<T: KgslIoctl + ?Sized> KgslIoctl for std::sync::Arc<T> {
    crate::forward::forward_to_deref! {
        fn get_property(&self, ty: u32, out: &mut [u8]) -> Result<(), Errno>;
        fn drawctxt_create(&self, arg: &mut DrawctxtCreate) -> Result<(), Errno>;
        fn drawctxt_destroy(&self, arg: &DrawctxtDestroy) -> Result<(), Errno>;
        fn gpuobj_alloc(&self, arg: &mut GpuobjAlloc) -> Result<(), Errno>;
        fn gpuobj_info(&self, arg: &mut GpuobjInfo) -> Result<(), Errno>;
        fn gpuobj_free(&self, arg: &GpuobjFree, event: Option<&GpuEventTimestamp>) -> Result<(), Errno>;
        fn map_user_mem(&self, arg: &mut MapUserMem) -> Result<(), Errno>;
        fn sharedmem_free(&self, arg: &SharedmemFree) -> Result<(), Errno>;
        fn gpu_command(&self, arg: &mut GpuCommand, cmds: &[CommandObject]) -> Result<(), Errno>;
        fn wait_timestamp(&self, arg: &WaitTimestampCtxtid) -> Result<(), Errno>;
        fn read_timestamp(&self, arg: &mut ReadTimestampCtxtid) -> Result<(), Errno>;
        fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno>;
        unsafe fn munmap(&self, m: &Mapping);
        fn fault_report(&self) -> Option<String>;
        fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]);
        fn describe(&self) -> &'static str;
        fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits;
        fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str>;
    }
}

/// The real KGSL device node, through rustix.
#[derive(Debug)]
pub struct RustixKgsl {
    fd: OwnedFd,
}

/// One ioctl with a dynamic request number over a `#[repr(C)]` argument (the MSM backend's
/// too).
pub(crate) struct Raw<'a, T> {
    pub(crate) request: u32,
    pub(crate) arg: &'a mut T,
}

// SAFETY: `as_ptr` points at a live, exclusively borrowed `T` whose size is the size encoded in
// `request` (checked in `RustixKgsl::call` and `RustixMsm::call`); the kernel reads and writes only that struct (and
// user pointers the caller put in it, which point at live buffers for the call's duration).
unsafe impl<T> rustix::ioctl::Ioctl for Raw<'_, T> {
    type Output = ();
    const IS_MUTATING: bool = true;
    fn opcode(&self) -> rustix::ioctl::Opcode {
        // CAST: the Linux request number; the Opcode type is u32 or c_ulong per libc.
        self.request as rustix::ioctl::Opcode
    }
    fn as_ptr(&mut self) -> *mut core::ffi::c_void {
        (self.arg as *mut T).cast()
    }
    unsafe fn output_from_ptr(_: rustix::ioctl::IoctlOutput, _: *mut core::ffi::c_void) -> rustix::io::Result<()> {
        Ok(())
    }
}

impl RustixKgsl {
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
        // SAFETY: see the `Ioctl` impl for `Raw`: `arg` is live and sized as the request says.
        unsafe { rustix::ioctl::ioctl(&self.fd, Raw { request, arg }) }
    }
}

impl KgslIoctl for RustixKgsl {
    fn get_property(&self, ty: u32, out: &mut [u8]) -> Result<(), Errno> {
        let mut a = DeviceGetProperty { ty, _pad: 0, value: out.as_mut_ptr() as u64, sizebytes: out.len() as u64 };
        self.call(IOCTL_DEVICE_GETPROPERTY, &mut a)
    }
    fn drawctxt_create(&self, arg: &mut DrawctxtCreate) -> Result<(), Errno> {
        self.call(IOCTL_DRAWCTXT_CREATE, arg)
    }
    fn drawctxt_destroy(&self, arg: &DrawctxtDestroy) -> Result<(), Errno> {
        self.call(IOCTL_DRAWCTXT_DESTROY, &mut arg.clone())
    }
    fn gpuobj_alloc(&self, arg: &mut GpuobjAlloc) -> Result<(), Errno> {
        self.call(IOCTL_GPUOBJ_ALLOC, arg)
    }
    fn gpuobj_info(&self, arg: &mut GpuobjInfo) -> Result<(), Errno> {
        self.call(IOCTL_GPUOBJ_INFO, arg)
    }
    fn gpuobj_free(&self, arg: &GpuobjFree, event: Option<&GpuEventTimestamp>) -> Result<(), Errno> {
        let mut a = *arg;
        let mut ev = event.copied().unwrap_or_default();
        if event.is_some() {
            a.priv_ = (&mut ev as *mut GpuEventTimestamp) as u64;
            a.len = size_of::<GpuEventTimestamp>() as u32;
        }
        self.call(IOCTL_GPUOBJ_FREE, &mut a)
    }
    fn map_user_mem(&self, arg: &mut MapUserMem) -> Result<(), Errno> {
        self.call(IOCTL_MAP_USER_MEM, arg)
    }
    fn sharedmem_free(&self, arg: &SharedmemFree) -> Result<(), Errno> {
        self.call(IOCTL_SHAREDMEM_FREE, &mut arg.clone())
    }
    fn gpu_command(&self, arg: &mut GpuCommand, cmds: &[CommandObject]) -> Result<(), Errno> {
        arg.cmdlist = cmds.as_ptr() as u64;
        arg.cmdsize = size_of::<CommandObject>() as u32;
        arg.numcmds = cmds.len() as u32;
        self.call(IOCTL_GPU_COMMAND, arg)
    }
    fn wait_timestamp(&self, arg: &WaitTimestampCtxtid) -> Result<(), Errno> {
        self.call(IOCTL_DEVICE_WAITTIMESTAMP_CTXTID, &mut arg.clone())
    }
    fn read_timestamp(&self, arg: &mut ReadTimestampCtxtid) -> Result<(), Errno> {
        self.call(IOCTL_CMDSTREAM_READTIMESTAMP_CTXTID, arg)
    }
    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno> {
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        // SAFETY: a fresh shared mapping of the device at a kernel-chosen address; it aliases
        // no Rust object.
        let p = unsafe {
            mmap(core::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &self.fd, offset)?
        };
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Errno::NOMEM)?;
        Ok(Mapping { ptr, len })
    }
    unsafe fn munmap(&self, m: &Mapping) {
        // SAFETY: the caller guarantees `m` is our mapping and unreferenced.
        let _ = unsafe { rustix::mm::munmap(m.ptr.as_ptr().cast(), m.len) };
    }
}
