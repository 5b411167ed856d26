//! The kernel interface the QCOM device runs on: [`GpuKernel`], implemented by [`crate::kgsl::Kgsl`]
//! (Qualcomm's KGSL, `/dev/kgsl-3d0`: Android, comma's AGNOS) and [`crate::msm::Msm`] (the
//! mainline MSM DRM driver, `/dev/dri/renderD*`). Both drive the same Adreno with the same PM4
//! stream; what differs is how memory, queues, submissions and fences are named:
//!
//! | | KGSL | MSM DRM |
//! |---|---|---|
//! | context | `DRAWCTXT_CREATE` | `SUBMITQUEUE_NEW` |
//! | object | `GPUOBJ_ALLOC` + mmap(id << 12) | `GEM_NEW` + `GEM_INFO(GET_OFFSET)` + mmap + `GEM_INFO(GET_IOVA)` |
//! | free after use | `GPUOBJ_FREE_ON_EVENT` at a timestamp | `GEM_CLOSE` (the kernel holds each submission's buffers until it retires) |
//! | submit | `GPU_COMMAND` (an IB address) | `GEM_SUBMIT` (an IB as buffer-list index + offset, the buffer list) |
//! | fence | context timestamp | queue fence; `WAIT_FENCE` with an absolute deadline |
//! | fault | `EDEADLK` from waits | the queue's fault count (`SUBMITQUEUE_QUERY(FAULTS)`) |
//!
//! A submission names the buffers it references ([`BufferList`], built once when the work is
//! recorded: MSM needs the list, KGSL ignores it), and [`GpuKernel::submit`] is `unsafe`: the
//! GPU runs whatever the IB says.

use crate::flags::MemFlags;
use crate::msm::uapi::{GemSubmitBo, MSM_SUBMIT_BO_READ, MSM_SUBMIT_BO_WRITE};
use crate::{Context, FreeAfter, GpuObject, UserMapping};
use hcq::{Error, Result};
use hcq_adreno::chip::Generation;
use hcq_adreno::limits::GpuLimits;
use hcq_ir3::isa::Instr;

/// What the kernel says about the GPU (KGSL `DEVICE_GETPROPERTY(DEVICE_INFO)`, MSM
/// `GET_PARAM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `core << 24 | major << 16 | minor << 8 | patch` (a630: 0x0603000p).
    pub chip_id: u32,
    /// Marketing id (630).
    pub gpu_id: u32,
    /// GMEM bytes (1 MiB on a630).
    pub gmem_bytes: u64,
    /// GMEM base address.
    pub gmem_base: u64,
    /// The GPU MMU is on.
    pub mmu_enabled: bool,
}

impl DeviceInfo {
    /// `(core, major, minor, patch)` of the chip id.
    pub fn revision(&self) -> (u8, u8, u8, u8) {
        let c = self.chip_id.to_be_bytes();
        (c[0], c[1], c[2], c[3])
    }
}

/// Which kernel interface a device talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Interface {
    /// Qualcomm's KGSL (`/dev/kgsl-3d0`).
    Kgsl,
    /// The mainline MSM DRM driver (a render node).
    Msm,
}

impl Interface {
    /// The interface's name in device names (`KGSL+QCOM`, `MSM+QCOM`).
    pub fn name(self) -> &'static str {
        match self {
            Interface::Kgsl => "KGSL",
            Interface::Msm => "MSM",
        }
    }
}

/// What one program and one dispatch may ask of a chip of `generation`: the limits the PM4
/// encoder chosen for it ([`hcq_adreno::compute_encoder`]) drives (the a630's
/// [`A630_LIMITS`](hcq_adreno::program::A630_LIMITS)). A kernel node runs the chip under these;
/// a backend may state narrower ones ([`GpuKernel::gpu_limits`]).
pub fn chip_limits(generation: Generation) -> GpuLimits {
    match generation {
        Generation::A6xx => hcq_adreno::program::A630_LIMITS,
    }
}

/// How a submission uses a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The GPU only reads it (code, constants, the IB).
    Read,
    /// The GPU reads and writes it.
    ReadWrite,
}

/// A dma-buf imported for the GPU ([`GpuKernel::import_dmabuf`]); its memory belongs to the
/// dma-buf's exporter. Give it back with [`GpuKernel::release_import`].
#[derive(Debug)]
pub struct Imported {
    /// Kernel handle (a GEM handle on MSM).
    pub handle: u32,
    /// GPU address.
    pub gpuaddr: u64,
    /// Bytes.
    pub size: u64,
}

/// The buffers one submission references, with how it uses them: built once (when the work is
/// recorded), reused by every submission of that work without allocating. MSM's `GEM_SUBMIT`
/// sends it (the kernel pins these buffers for the submission and keeps them until it
/// retires; the IB is named by its index here); KGSL ignores it.
#[derive(Clone, Debug, Default)]
pub struct BufferList {
    /// `(gpuaddr, size)` per entry, in the order of `bos`.
    ranges: Vec<(u64, u64)>,
    bos: Vec<GemSubmitBo>,
    /// The entry the last IB was found in.
    last_ib: usize,
}

impl BufferList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `obj` used as `access` (an object already listed keeps one entry, with the union of
    /// the accesses: the kernel refuses a handle listed twice).
    pub fn push(&mut self, obj: &GpuObject, access: Access) {
        self.push_raw(obj.id(), obj.gpuaddr(), obj.size(), access);
    }

    /// Add an imported buffer.
    pub fn push_import(&mut self, imp: &Imported, access: Access) {
        self.push_raw(imp.handle, imp.gpuaddr, imp.size, access);
    }

    fn push_raw(&mut self, handle: u32, gpuaddr: u64, size: u64, access: Access) {
        let flags = match access {
            Access::Read => MSM_SUBMIT_BO_READ,
            Access::ReadWrite => MSM_SUBMIT_BO_READ | MSM_SUBMIT_BO_WRITE,
        };
        if let Some(b) = self.bos.iter_mut().find(|b| b.handle == handle) {
            b.flags |= flags;
            return;
        }
        self.ranges.push((gpuaddr, size));
        self.bos.push(GemSubmitBo { flags, handle, presumed: gpuaddr });
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.bos.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.bos.is_empty()
    }

    /// The list as `GEM_SUBMIT` sends it.
    pub fn submit_bos(&self) -> &[GemSubmitBo] {
        &self.bos
    }

    /// The entry holding `[addr, addr + bytes)` and the offset of `addr` in it (the last hit
    /// first, so a reused list finds its IB pool at once).
    pub fn locate(&mut self, addr: u64, bytes: u64) -> Result<(u32, u64)> {
        let inside = |&(base, size): &(u64, u64)| {
            addr >= base && addr.checked_add(bytes).is_some_and(|end| end <= base.saturating_add(size))
        };
        let i = match self.ranges.get(self.last_ib) {
            Some(r) if inside(r) => self.last_ib,
            _ => self.ranges.iter().position(inside).ok_or(Error::OutOfBounds {
                what: "IB outside every buffer of the submission's buffer list",
                offset: addr,
                len: bytes,
                limit: self.ranges.len() as u64,
            })?,
        };
        self.last_ib = i;
        // CAST: at most the list's length, a u32 in GEM_SUBMIT.
        Ok((i as u32, addr - self.ranges[i].0))
    }
}

/// What the QCOM device needs of a kernel interface (see the module docs). Errors are hcq's:
/// a missing node is `DeviceUnavailable`, a chip the encoder cannot drive `Unsupported` naming
/// the chip id (at open), a refused submission the kernel's errno naming the ioctl, a fence
/// that does not pass in time `Timeout`, a GPU fault `DeviceHung` (with
/// [`GpuKernel::fault_report`] as context where the backend has one).
pub trait GpuKernel: Send + Sync + core::fmt::Debug {
    /// The interface.
    fn interface(&self) -> Interface;
    /// The device (chip id checked at open against what the PM4 encoder drives).
    fn info(&self) -> DeviceInfo;
    /// The driver and its version, for the device's notes (`KGSL 3.14`, `MSM DRM 1.12.0`).
    fn driver(&self) -> String;
    /// What the backend is (the node's driver, or a simulator's description).
    fn describe(&self) -> &'static str;
    /// What one program and one dispatch may ask for on this backend: the chip's limits
    /// ([`chip_limits`]) as the backend runs it (a kernel node: the chip's; a simulator adds
    /// its own budget). The device states these and the core checks a bundle against them
    /// before anything is allocated.
    fn gpu_limits(&self) -> GpuLimits;
    /// Why the shader core behind this backend cannot run `ins`, if it cannot (a simulator's
    /// interpreter refuses what it does not model); `None` for every instruction hardware runs.
    /// The device refuses a program with such an instruction at load.
    fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str>;

    /// Create a context (KGSL draw context, MSM submit queue).
    fn create_context(&self) -> Result<Context>;
    /// Destroy a context.
    fn destroy_context(&self, ctx: Context) -> Result<()>;

    /// Allocate `size` bytes (rounded up to 4 KiB) with a GPU address and a CPU mapping.
    /// `flags` are KGSL's; on MSM the kernel picks the GPU address (`GEM_INFO(GET_IOVA)`) and
    /// `USE_CPU_MAP` (KGSL's GPU address = CPU address) has no counterpart: nothing in the
    /// device depends on the two being equal.
    fn alloc(&self, size: u64, flags: MemFlags) -> Result<GpuObject>;
    /// Release `obj` once nothing submitted uses it any more: KGSL frees it when `after`
    /// retires; MSM closes the handle at once (the kernel keeps each submission's buffers until
    /// it retires, so an object must be in the [`BufferList`] of every submission using it).
    fn free(&self, obj: GpuObject, after: FreeAfter) -> Result<()>;

    /// Map host memory for the GPU (KGSL `MAP_USER_MEM`; MSM has no user-pointer import and
    /// refuses: import a dma-buf instead).
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must stay allocated until it is unmapped, and must not be freed
    /// while a submission that uses it is in flight.
    unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<UserMapping>;
    /// Unmap host memory mapped by [`GpuKernel::map_user`] once `ctx` retired `after` (waits for
    /// it first, `timeout_ms` at most).
    fn unmap_user(&self, m: UserMapping, ctx: &Context, after: u32, timeout_ms: u32) -> Result<()>;
    /// Import the dma-buf `fd` (MSM `PRIME_FD_TO_HANDLE` + `GEM_INFO(GET_IOVA)`; not on KGSL
    /// here).
    fn import_dmabuf(&self, fd: std::os::fd::BorrowedFd<'_>) -> Result<Imported>;
    /// Give an import back (`GEM_CLOSE`; the kernel holds it for submissions in flight).
    fn release_import(&self, imp: Imported) -> Result<()>;

    /// Submit the IB of `bytes` at `ib` on `ctx`, referencing `buffers`; returns its fence
    /// (KGSL timestamp, MSM fence), which only moves forward on `ctx`. The caller has made the
    /// IB and its data visible to the GPU (the ioctl is the ordering point).
    ///
    /// # Safety
    /// The GPU executes the IB: it and everything it references (code, constants, buffers,
    /// the addresses inside them) must be valid GPU memory of this device for what the
    /// commands do, and must stay allocated and unchanged where the GPU reads them until the
    /// returned fence passes. On MSM every object the IB touches must be in `buffers` (the IB's
    /// own object too).
    unsafe fn submit(&self, ctx: &Context, ib: u64, bytes: u64, buffers: &mut BufferList) -> Result<u32>;
    /// The latest fence of `ctx` known to have passed (0 before any).
    fn retired(&self, ctx: &Context) -> Result<u32>;
    /// Sleep until `fence` of `ctx` passes, `timeout_ms` at most: `Timeout` when it does not,
    /// `DeviceHung` when the GPU faulted.
    fn wait(&self, ctx: &Context, fence: u32, timeout_ms: u32) -> Result<()>;

    /// The report of the fault that stopped the command processor, when the backend can tell.
    fn fault_report(&self) -> Option<String>;
    /// The device uploaded a program at `shader_addr` with address arguments at `arg_slots`
    /// (a simulator checks dispatches with them).
    fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]);
}

/// A shared kernel interface is one (the device and its backends hold `Arc<dyn GpuKernel>`).
impl<T: GpuKernel + ?Sized> GpuKernel for std::sync::Arc<T> {
    crate::forward::forward_to_deref! {
        fn interface(&self) -> Interface;
        fn info(&self) -> DeviceInfo;
        fn driver(&self) -> String;
        fn describe(&self) -> &'static str;
        fn gpu_limits(&self) -> GpuLimits;
        fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str>;
        fn create_context(&self) -> Result<Context>;
        fn destroy_context(&self, ctx: Context) -> Result<()>;
        fn alloc(&self, size: u64, flags: MemFlags) -> Result<GpuObject>;
        fn free(&self, obj: GpuObject, after: FreeAfter) -> Result<()>;
        unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<UserMapping>;
        fn unmap_user(&self, m: UserMapping, ctx: &Context, after: u32, timeout_ms: u32) -> Result<()>;
        fn import_dmabuf(&self, fd: std::os::fd::BorrowedFd<'_>) -> Result<Imported>;
        fn release_import(&self, imp: Imported) -> Result<()>;
        unsafe fn submit(&self, ctx: &Context, ib: u64, bytes: u64, buffers: &mut BufferList) -> Result<u32>;
        fn retired(&self, ctx: &Context) -> Result<u32>;
        fn wait(&self, ctx: &Context, fence: u32, timeout_ms: u32) -> Result<()>;
        fn fault_report(&self) -> Option<String>;
        fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]);
    }
}
