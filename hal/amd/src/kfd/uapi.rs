//! KFD uapi (`linux/kfd_ioctl.h`): the ioctl argument structs tinygrad 0.14's `KFDIface` uses,
//! LP64 layouts as zerocopy structs with size and offset assertions, their request numbers and
//! flag constants.
//!
//! The layouts and numbers are those of the header this machine's `linux-libc-dev` installs
//! (KFD ioctl 1.11); `tests/kfd_uapi.rs` compiles a C program against `/usr/include/linux/kfd_ioctl.h`
//! and requires every size, offset, request number and constant here to equal the header's.
//! `AMDKFD_IOC_RUNTIME_ENABLE` (1.14+, tinygrad calls it when the driver is at least 1.14) is
//! newer than that header: its layout is Linux's `include/uapi/linux/kfd_ioctl.h` of KFD 1.14+
//! (`struct kfd_ioctl_runtime_enable_args`, `AMDKFD_IOWR(0x25, ...)`), checked against the header
//! when it has it. The `KFD_MMAP_*` offsets are the kernel's own (`drivers/gpu/drm/amd/amdkfd/
//! kfd_priv.h`), encoded in the offsets KFD returns (`doorbell_offset`, `event_page_offset`).

use core::mem::{offset_of, size_of};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

const _: () = assert!(size_of::<usize>() == 8, "the KFD layouts here are the LP64 ones");

/// `AMDKFD_IOCTL_BASE`.
pub const IOC_TYPE: u32 = b'K' as u32;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// Linux `_IOC(dir, 'K', nr, size)`.
pub const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    // CAST: ioctl argument sizes are below 2^14.
    dir << 30 | (size as u32) << 16 | IOC_TYPE << 8 | nr
}
const fn ior<T>(nr: u32) -> u32 {
    ioc(IOC_READ, nr, size_of::<T>())
}
const fn iow<T>(nr: u32) -> u32 {
    ioc(IOC_WRITE, nr, size_of::<T>())
}
const fn iowr<T>(nr: u32) -> u32 {
    ioc(IOC_READ | IOC_WRITE, nr, size_of::<T>())
}

/// `AMDKFD_IOC_GET_VERSION`: `AMDKFD_IOR(0x01, ...)`.
pub const IOC_GET_VERSION: u32 = ior::<GetVersionArgs>(0x01);
/// `AMDKFD_IOC_CREATE_QUEUE`: `AMDKFD_IOWR(0x02, ...)`.
pub const IOC_CREATE_QUEUE: u32 = iowr::<CreateQueueArgs>(0x02);
/// `AMDKFD_IOC_DESTROY_QUEUE`: `AMDKFD_IOWR(0x03, ...)`.
pub const IOC_DESTROY_QUEUE: u32 = iowr::<DestroyQueueArgs>(0x03);
/// `AMDKFD_IOC_CREATE_EVENT`: `AMDKFD_IOWR(0x08, ...)`.
pub const IOC_CREATE_EVENT: u32 = iowr::<CreateEventArgs>(0x08);
/// `AMDKFD_IOC_DESTROY_EVENT`: `AMDKFD_IOW(0x09, ...)`.
pub const IOC_DESTROY_EVENT: u32 = iow::<DestroyEventArgs>(0x09);
/// `AMDKFD_IOC_SET_EVENT`: `AMDKFD_IOW(0x0A, ...)`.
pub const IOC_SET_EVENT: u32 = iow::<SetEventArgs>(0x0a);
/// `AMDKFD_IOC_RESET_EVENT`: `AMDKFD_IOW(0x0B, ...)`.
pub const IOC_RESET_EVENT: u32 = iow::<ResetEventArgs>(0x0b);
/// `AMDKFD_IOC_WAIT_EVENTS`: `AMDKFD_IOWR(0x0C, ...)`.
pub const IOC_WAIT_EVENTS: u32 = iowr::<WaitEventsArgs>(0x0c);
/// `AMDKFD_IOC_ACQUIRE_VM`: `AMDKFD_IOW(0x15, ...)`.
pub const IOC_ACQUIRE_VM: u32 = iow::<AcquireVmArgs>(0x15);
/// `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`: `AMDKFD_IOWR(0x16, ...)`.
pub const IOC_ALLOC_MEMORY_OF_GPU: u32 = iowr::<AllocMemoryOfGpuArgs>(0x16);
/// `AMDKFD_IOC_FREE_MEMORY_OF_GPU`: `AMDKFD_IOW(0x17, ...)`.
pub const IOC_FREE_MEMORY_OF_GPU: u32 = iow::<FreeMemoryOfGpuArgs>(0x17);
/// `AMDKFD_IOC_MAP_MEMORY_TO_GPU`: `AMDKFD_IOWR(0x18, ...)`.
pub const IOC_MAP_MEMORY_TO_GPU: u32 = iowr::<MapMemoryToGpuArgs>(0x18);
/// `AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU`: `AMDKFD_IOWR(0x19, ...)`.
pub const IOC_UNMAP_MEMORY_FROM_GPU: u32 = iowr::<UnmapMemoryFromGpuArgs>(0x19);
/// `AMDKFD_IOC_RUNTIME_ENABLE`: `AMDKFD_IOWR(0x25, ...)` (KFD 1.14+).
pub const IOC_RUNTIME_ENABLE: u32 = iowr::<RuntimeEnableArgs>(0x25);

/// `(name, request)` of every ioctl above, with the header's `AMDKFD_IOC_` names.
pub const IOCTLS: &[(&str, u32)] = &[
    ("AMDKFD_IOC_GET_VERSION", IOC_GET_VERSION),
    ("AMDKFD_IOC_CREATE_QUEUE", IOC_CREATE_QUEUE),
    ("AMDKFD_IOC_DESTROY_QUEUE", IOC_DESTROY_QUEUE),
    ("AMDKFD_IOC_CREATE_EVENT", IOC_CREATE_EVENT),
    ("AMDKFD_IOC_DESTROY_EVENT", IOC_DESTROY_EVENT),
    ("AMDKFD_IOC_SET_EVENT", IOC_SET_EVENT),
    ("AMDKFD_IOC_RESET_EVENT", IOC_RESET_EVENT),
    ("AMDKFD_IOC_WAIT_EVENTS", IOC_WAIT_EVENTS),
    ("AMDKFD_IOC_ACQUIRE_VM", IOC_ACQUIRE_VM),
    ("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", IOC_ALLOC_MEMORY_OF_GPU),
    ("AMDKFD_IOC_FREE_MEMORY_OF_GPU", IOC_FREE_MEMORY_OF_GPU),
    ("AMDKFD_IOC_MAP_MEMORY_TO_GPU", IOC_MAP_MEMORY_TO_GPU),
    ("AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU", IOC_UNMAP_MEMORY_FROM_GPU),
    ("AMDKFD_IOC_RUNTIME_ENABLE", IOC_RUNTIME_ENABLE),
];

/// `KFD_IOC_QUEUE_TYPE_COMPUTE`: a PM4 compute queue (tinygrad's default on one XCC).
pub const QUEUE_TYPE_COMPUTE: u32 = 0x0;
/// `KFD_IOC_QUEUE_TYPE_SDMA`.
pub const QUEUE_TYPE_SDMA: u32 = 0x1;
/// `KFD_IOC_QUEUE_TYPE_COMPUTE_AQL`: an AQL (HSA packet) compute queue.
pub const QUEUE_TYPE_COMPUTE_AQL: u32 = 0x2;
/// `KFD_IOC_QUEUE_TYPE_SDMA_XGMI`.
pub const QUEUE_TYPE_SDMA_XGMI: u32 = 0x3;
/// `KFD_MAX_QUEUE_PERCENTAGE` (tinygrad ORs the XCC id in at bit 8).
pub const MAX_QUEUE_PERCENTAGE: u32 = 100;
/// `KFD_MAX_QUEUE_PRIORITY` (tinygrad's default priority is 7).
pub const MAX_QUEUE_PRIORITY: u32 = 15;
/// `KFD_MIN_QUEUE_RING_SIZE`.
pub const MIN_QUEUE_RING_SIZE: u32 = 1024;

/// `KFD_IOC_EVENT_SIGNAL`: signalled by a GPU interrupt with its id (the queue event).
pub const EVENT_SIGNAL: u32 = 0;
/// `KFD_IOC_EVENT_NODECHANGE`.
pub const EVENT_NODECHANGE: u32 = 1;
/// `KFD_IOC_EVENT_DEVICESTATECHANGE`.
pub const EVENT_DEVICESTATECHANGE: u32 = 2;
/// `KFD_IOC_EVENT_HW_EXCEPTION`: a GPU reset (hang, ECC); see [`HsaHwExceptionData`].
pub const EVENT_HW_EXCEPTION: u32 = 3;
/// `KFD_IOC_EVENT_SYSTEM_EVENT`.
pub const EVENT_SYSTEM_EVENT: u32 = 4;
/// `KFD_IOC_EVENT_DEBUG_EVENT`.
pub const EVENT_DEBUG_EVENT: u32 = 5;
/// `KFD_IOC_EVENT_PROFILE_EVENT`.
pub const EVENT_PROFILE_EVENT: u32 = 6;
/// `KFD_IOC_EVENT_QUEUE_EVENT`.
pub const EVENT_QUEUE_EVENT: u32 = 7;
/// `KFD_IOC_EVENT_MEMORY`: a GPU page fault; see [`HsaMemoryExceptionData`].
pub const EVENT_MEMORY: u32 = 8;
/// `KFD_IOC_WAIT_RESULT_COMPLETE`.
pub const WAIT_RESULT_COMPLETE: u32 = 0;
/// `KFD_IOC_WAIT_RESULT_TIMEOUT`.
pub const WAIT_RESULT_TIMEOUT: u32 = 1;
/// `KFD_IOC_WAIT_RESULT_FAIL`.
pub const WAIT_RESULT_FAIL: u32 = 2;
/// `KFD_SIGNAL_EVENT_LIMIT`: signal events (8-byte mailbox slots) one event page holds.
pub const SIGNAL_EVENT_LIMIT: u32 = 4096;
/// `KFD_HW_EXCEPTION_WHOLE_GPU_RESET`.
pub const HW_EXCEPTION_WHOLE_GPU_RESET: u32 = 0;
/// `KFD_HW_EXCEPTION_PER_ENGINE_RESET`.
pub const HW_EXCEPTION_PER_ENGINE_RESET: u32 = 1;
/// `KFD_HW_EXCEPTION_GPU_HANG`.
pub const HW_EXCEPTION_GPU_HANG: u32 = 0;
/// `KFD_HW_EXCEPTION_ECC`.
pub const HW_EXCEPTION_ECC: u32 = 1;
/// `KFD_MEM_ERR_NO_RAS`.
pub const MEM_ERR_NO_RAS: u32 = 0;
/// `KFD_MEM_ERR_SRAM_ECC`.
pub const MEM_ERR_SRAM_ECC: u32 = 1;
/// `KFD_MEM_ERR_POISON_CONSUMED`.
pub const MEM_ERR_POISON_CONSUMED: u32 = 2;
/// `KFD_MEM_ERR_GPU_HANG`.
pub const MEM_ERR_GPU_HANG: u32 = 3;
/// `KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK` (KFD 1.14+; tinygrad passes a `mode_mask` of 0).
pub const RUNTIME_ENABLE_MODE_ENABLE_MASK: u32 = 1;
/// `KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK` (KFD 1.14+).
pub const RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK: u32 = 2;

bitflags::bitflags! {
    /// `KFD_IOC_ALLOC_MEM_FLAGS_*`: memory type and attributes of `ALLOC_MEMORY_OF_GPU`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct AllocFlags: u32 {
        /// `KFD_IOC_ALLOC_MEM_FLAGS_VRAM`: device memory.
        const VRAM = 1 << 0;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_GTT`: system memory mapped through the GART.
        const GTT = 1 << 1;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_USERPTR`: existing host memory (`mmap_offset` is its address).
        const USERPTR = 1 << 2;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL`.
        const DOORBELL = 1 << 3;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP`.
        const MMIO_REMAP = 1 << 4;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE`.
        const WRITABLE = 1 << 31;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE`.
        const EXECUTABLE = 1 << 30;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC`: CPU-visible.
        const PUBLIC = 1 << 29;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE`: no fallback to another memory type.
        const NO_SUBSTITUTE = 1 << 28;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM`.
        const AQL_QUEUE_MEM = 1 << 27;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_COHERENT`.
        const COHERENT = 1 << 26;
        /// `KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED`.
        const UNCACHED = 1 << 25;
    }
}

impl AllocFlags {
    /// The flags tinygrad's `KFDIface.alloc` passes: always writable, executable and without
    /// substitution; `uncached` is coherent, uncached GTT; else host memory is a user pointer and
    /// device memory VRAM; CPU access (or host memory) makes it public.
    pub fn tinygrad(host: bool, uncached: bool, cpu_access: bool) -> AllocFlags {
        let mut f = AllocFlags::WRITABLE | AllocFlags::EXECUTABLE | AllocFlags::NO_SUBSTITUTE;
        if uncached {
            f |= AllocFlags::COHERENT | AllocFlags::UNCACHED | AllocFlags::GTT;
        } else if host {
            f |= AllocFlags::USERPTR;
        } else {
            f |= AllocFlags::VRAM;
        }
        if cpu_access || host {
            f |= AllocFlags::PUBLIC;
        }
        f
    }
}

/// `(name, value)` of every constant above, with the header's names (the C cross-check).
pub const CONSTANTS: &[(&str, u64)] = &[
    ("KFD_IOC_QUEUE_TYPE_COMPUTE", QUEUE_TYPE_COMPUTE as u64),
    ("KFD_IOC_QUEUE_TYPE_SDMA", QUEUE_TYPE_SDMA as u64),
    ("KFD_IOC_QUEUE_TYPE_COMPUTE_AQL", QUEUE_TYPE_COMPUTE_AQL as u64),
    ("KFD_IOC_QUEUE_TYPE_SDMA_XGMI", QUEUE_TYPE_SDMA_XGMI as u64),
    ("KFD_MAX_QUEUE_PERCENTAGE", MAX_QUEUE_PERCENTAGE as u64),
    ("KFD_MAX_QUEUE_PRIORITY", MAX_QUEUE_PRIORITY as u64),
    ("KFD_MIN_QUEUE_RING_SIZE", MIN_QUEUE_RING_SIZE as u64),
    ("KFD_IOC_EVENT_SIGNAL", EVENT_SIGNAL as u64),
    ("KFD_IOC_EVENT_NODECHANGE", EVENT_NODECHANGE as u64),
    ("KFD_IOC_EVENT_DEVICESTATECHANGE", EVENT_DEVICESTATECHANGE as u64),
    ("KFD_IOC_EVENT_HW_EXCEPTION", EVENT_HW_EXCEPTION as u64),
    ("KFD_IOC_EVENT_SYSTEM_EVENT", EVENT_SYSTEM_EVENT as u64),
    ("KFD_IOC_EVENT_DEBUG_EVENT", EVENT_DEBUG_EVENT as u64),
    ("KFD_IOC_EVENT_PROFILE_EVENT", EVENT_PROFILE_EVENT as u64),
    ("KFD_IOC_EVENT_QUEUE_EVENT", EVENT_QUEUE_EVENT as u64),
    ("KFD_IOC_EVENT_MEMORY", EVENT_MEMORY as u64),
    ("KFD_IOC_WAIT_RESULT_COMPLETE", WAIT_RESULT_COMPLETE as u64),
    ("KFD_IOC_WAIT_RESULT_TIMEOUT", WAIT_RESULT_TIMEOUT as u64),
    ("KFD_IOC_WAIT_RESULT_FAIL", WAIT_RESULT_FAIL as u64),
    ("KFD_SIGNAL_EVENT_LIMIT", SIGNAL_EVENT_LIMIT as u64),
    ("KFD_HW_EXCEPTION_WHOLE_GPU_RESET", HW_EXCEPTION_WHOLE_GPU_RESET as u64),
    ("KFD_HW_EXCEPTION_PER_ENGINE_RESET", HW_EXCEPTION_PER_ENGINE_RESET as u64),
    ("KFD_HW_EXCEPTION_GPU_HANG", HW_EXCEPTION_GPU_HANG as u64),
    ("KFD_HW_EXCEPTION_ECC", HW_EXCEPTION_ECC as u64),
    ("KFD_MEM_ERR_NO_RAS", MEM_ERR_NO_RAS as u64),
    ("KFD_MEM_ERR_SRAM_ECC", MEM_ERR_SRAM_ECC as u64),
    ("KFD_MEM_ERR_POISON_CONSUMED", MEM_ERR_POISON_CONSUMED as u64),
    ("KFD_MEM_ERR_GPU_HANG", MEM_ERR_GPU_HANG as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_VRAM", AllocFlags::VRAM.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_GTT", AllocFlags::GTT.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_USERPTR", AllocFlags::USERPTR.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL", AllocFlags::DOORBELL.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP", AllocFlags::MMIO_REMAP.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE", AllocFlags::WRITABLE.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE", AllocFlags::EXECUTABLE.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC", AllocFlags::PUBLIC.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE", AllocFlags::NO_SUBSTITUTE.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM", AllocFlags::AQL_QUEUE_MEM.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_COHERENT", AllocFlags::COHERENT.bits() as u64),
    ("KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED", AllocFlags::UNCACHED.bits() as u64),
];

/// The KFD-internal mmap offset encoding (`kfd_priv.h`): bits 63:62 the type, 61:46 the GPU
/// id, 45:0 the offset. KFD hands out offsets already encoded (a queue's `doorbell_offset`, the
/// event page's `event_page_offset`); mmap `/dev/kfd` at them.
pub mod mmap {
    /// `KFD_MMAP_TYPE_SHIFT`.
    pub const TYPE_SHIFT: u32 = 62;
    /// `KFD_MMAP_TYPE_MASK`.
    pub const TYPE_MASK: u64 = 0x3 << TYPE_SHIFT;
    /// `KFD_MMAP_TYPE_DOORBELL`: a queue's doorbell page.
    pub const TYPE_DOORBELL: u64 = 0x3 << TYPE_SHIFT;
    /// `KFD_MMAP_TYPE_EVENTS`: the signal event page.
    pub const TYPE_EVENTS: u64 = 0x2 << TYPE_SHIFT;
    /// `KFD_MMAP_TYPE_RESERVED_MEM`.
    pub const TYPE_RESERVED_MEM: u64 = 0x1 << TYPE_SHIFT;
    /// `KFD_MMAP_TYPE_MMIO`.
    pub const TYPE_MMIO: u64 = 0x0 << TYPE_SHIFT;
    /// `KFD_MMAP_GPU_ID_SHIFT`.
    pub const GPU_ID_SHIFT: u32 = 46;
    /// `KFD_MMAP_GPU_ID_MASK` (`KFD_GPU_ID_HASH_WIDTH` = 16 bits).
    pub const GPU_ID_MASK: u64 = 0xffff << GPU_ID_SHIFT;
    /// `KFD_MMAP_OFFSET_VALUE_MASK`.
    pub const OFFSET_VALUE_MASK: u64 = (1 << GPU_ID_SHIFT) - 1;
    /// The doorbells tinygrad maps: two pages from `doorbell_offset & !0x1fff`.
    pub const DOORBELL_BYTES: usize = 0x2000;

    /// `KFD_MMAP_GPU_ID(gpu_id)`.
    pub const fn gpu_id(gpu_id: u32) -> u64 {
        (gpu_id as u64) << GPU_ID_SHIFT & GPU_ID_MASK
    }
    /// `KFD_MMAP_GET_GPU_ID(offset)`.
    pub const fn get_gpu_id(offset: u64) -> u32 {
        // CAST: 16 bits.
        ((offset & GPU_ID_MASK) >> GPU_ID_SHIFT) as u32
    }
    /// The mmap type of an encoded offset (`TYPE_*`).
    pub const fn get_type(offset: u64) -> u64 {
        offset & TYPE_MASK
    }
    /// The offset of the doorbell pages to map for a queue's `doorbell_offset`, and the
    /// doorbell's byte offset inside them (tinygrad: `doorbell_offset & ~0x1fff`).
    pub const fn doorbell_pages(doorbell_offset: u64) -> (u64, u64) {
        let base = doorbell_offset & !(DOORBELL_BYTES as u64 - 1);
        (base, doorbell_offset - base)
    }
}

/// `struct kfd_ioctl_get_version_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GetVersionArgs {
    /// From KFD.
    pub major_version: u32,
    /// From KFD.
    pub minor_version: u32,
}

/// `struct kfd_ioctl_create_queue_args` (KFD 1.11; later headers append `sdma_engine_id` and a
/// pad, which the kernel zero-fills when the caller's struct is shorter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateQueueArgs {
    /// To KFD: the ring's GPU address.
    pub ring_base_address: u64,
    /// To KFD: where the queue's write pointer lives (KFD may rewrite it).
    pub write_pointer_address: u64,
    /// To KFD: where the queue's read pointer lives.
    pub read_pointer_address: u64,
    /// From KFD: the doorbell's encoded mmap offset ([`mmap::doorbell_pages`]).
    pub doorbell_offset: u64,
    /// To KFD: ring bytes.
    pub ring_size: u32,
    /// To KFD.
    pub gpu_id: u32,
    /// To KFD: `QUEUE_TYPE_*`.
    pub queue_type: u32,
    /// To KFD: `MAX_QUEUE_PERCENTAGE`, the XCC id at bit 8.
    pub queue_percentage: u32,
    /// To KFD: 0 to `MAX_QUEUE_PRIORITY`.
    pub queue_priority: u32,
    /// From KFD.
    pub queue_id: u32,
    /// To KFD: the end-of-pipe buffer (compute).
    pub eop_buffer_address: u64,
    /// To KFD.
    pub eop_buffer_size: u64,
    /// To KFD: the CWSR context save area.
    pub ctx_save_restore_address: u64,
    /// To KFD.
    pub ctx_save_restore_size: u32,
    /// To KFD.
    pub ctl_stack_size: u32,
}

/// `struct kfd_ioctl_destroy_queue_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DestroyQueueArgs {
    /// To KFD.
    pub queue_id: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct kfd_ioctl_create_event_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateEventArgs {
    /// To KFD (the first signal event: the event page's `ALLOC_MEMORY_OF_GPU` handle), from KFD
    /// (the page's encoded mmap offset).
    pub event_page_offset: u64,
    /// From KFD, signal events only.
    pub event_trigger_data: u32,
    /// To KFD: `EVENT_*`.
    pub event_type: u32,
    /// To KFD.
    pub auto_reset: u32,
    /// To KFD, certain event types only.
    pub node_id: u32,
    /// From KFD.
    pub event_id: u32,
    /// From KFD: the event's 8-byte mailbox slot in the event page.
    pub event_slot_index: u32,
}

/// `struct kfd_ioctl_destroy_event_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DestroyEventArgs {
    /// To KFD.
    pub event_id: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct kfd_ioctl_set_event_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SetEventArgs {
    /// To KFD.
    pub event_id: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct kfd_ioctl_reset_event_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ResetEventArgs {
    /// To KFD.
    pub event_id: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct kfd_memory_exception_failure`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct MemoryExceptionFailure {
    /// `NotPresent`: page not present or supervisor privilege.
    pub not_present: u32,
    /// `ReadOnly`: write to a read-only page.
    pub read_only: u32,
    /// `NoExecute`: execute of an NX page.
    pub no_execute: u32,
    /// `imprecise`: the address is not exact.
    pub imprecise: u32,
}

/// `struct kfd_hsa_memory_exception_data` (a GPU page fault).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct HsaMemoryExceptionData {
    /// What failed.
    pub failure: MemoryExceptionFailure,
    /// The faulting GPU address.
    pub va: u64,
    /// The GPU (0: no fault).
    pub gpu_id: u32,
    /// `ErrorType`: `MEM_ERR_*`.
    pub error_type: u32,
}

/// `struct kfd_hsa_hw_exception_data` (a GPU reset).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct HsaHwExceptionData {
    /// `HW_EXCEPTION_WHOLE_GPU_RESET` / `PER_ENGINE_RESET`.
    pub reset_type: u32,
    /// `HW_EXCEPTION_GPU_HANG` / `ECC`.
    pub reset_cause: u32,
    /// VRAM contents lost.
    pub memory_lost: u32,
    /// The GPU (0: no exception).
    pub gpu_id: u32,
}

/// `struct kfd_event_data`: one entry of `WAIT_EVENTS`' array. The anonymous union of the
/// memory- and hardware-exception data (32 bytes, 8-aligned) is `exception`; read it with
/// [`EventData::memory_exception`] / [`EventData::hw_exception`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct EventData {
    /// From KFD: the union `{ memory_exception_data; hw_exception_data; }`.
    pub exception: [u64; 4],
    /// A pointer to an extension structure (unused).
    pub kfd_event_data_ext: u64,
    /// To KFD.
    pub event_id: u32,
    /// Padding.
    pub pad: u32,
}

impl EventData {
    /// An entry waiting for `event_id`.
    pub fn for_event(event_id: u32) -> EventData {
        EventData { event_id, ..EventData::default() }
    }
    /// The union as `memory_exception_data` (a `MEMORY` event).
    pub fn memory_exception(&self) -> HsaMemoryExceptionData {
        HsaMemoryExceptionData::read_from_bytes(self.exception.as_bytes()).unwrap_or_default()
    }
    /// The union as `hw_exception_data` (a `HW_EXCEPTION` event).
    pub fn hw_exception(&self) -> HsaHwExceptionData {
        HsaHwExceptionData::read_from_prefix(self.exception.as_bytes()).map(|(d, _)| d).unwrap_or_default()
    }
    /// Store `d` as the union's memory-exception member (what KFD writes; for simulators).
    pub fn set_memory_exception(&mut self, d: &HsaMemoryExceptionData) {
        self.exception.as_mut_bytes().copy_from_slice(d.as_bytes());
    }
    /// Store `d` as the union's hardware-exception member (the rest of the union zeroed).
    pub fn set_hw_exception(&mut self, d: &HsaHwExceptionData) {
        self.exception = [0; 4];
        if let Some(head) = self.exception.as_mut_bytes().get_mut(..size_of::<HsaHwExceptionData>()) {
            head.copy_from_slice(d.as_bytes());
        }
    }
}

/// `struct kfd_ioctl_wait_events_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WaitEventsArgs {
    /// To KFD: user pointer to the [`EventData`] array (set by the real backend).
    pub events_ptr: u64,
    /// To KFD.
    pub num_events: u32,
    /// To KFD: all (1) or any (0).
    pub wait_for_all: u32,
    /// To KFD: milliseconds.
    pub timeout: u32,
    /// From KFD: `WAIT_RESULT_*`.
    pub wait_result: u32,
}

/// `struct kfd_ioctl_acquire_vm_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct AcquireVmArgs {
    /// To KFD: the DRM render node's file descriptor.
    pub drm_fd: u32,
    /// To KFD.
    pub gpu_id: u32,
}

/// `struct kfd_ioctl_alloc_memory_of_gpu_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct AllocMemoryOfGpuArgs {
    /// To KFD: the GPU (and CPU) virtual address.
    pub va_addr: u64,
    /// To KFD: bytes.
    pub size: u64,
    /// From KFD.
    pub handle: u64,
    /// To KFD: the host address of a `USERPTR`; from KFD: the render node mmap offset.
    pub mmap_offset: u64,
    /// To KFD.
    pub gpu_id: u32,
    /// To KFD: [`AllocFlags`] bits.
    pub flags: u32,
}

/// `struct kfd_ioctl_free_memory_of_gpu_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct FreeMemoryOfGpuArgs {
    /// To KFD.
    pub handle: u64,
}

/// `struct kfd_ioctl_map_memory_to_gpu_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct MapMemoryToGpuArgs {
    /// To KFD.
    pub handle: u64,
    /// To KFD: user pointer to the `u32` GPU ids (set by the real backend).
    pub device_ids_array_ptr: u64,
    /// To KFD.
    pub n_devices: u32,
    /// To/from KFD: how many from the start are mapped.
    pub n_success: u32,
}

/// `struct kfd_ioctl_unmap_memory_from_gpu_args` (the map's layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct UnmapMemoryFromGpuArgs {
    /// To KFD.
    pub handle: u64,
    /// To KFD: user pointer to the `u32` GPU ids (set by the real backend).
    pub device_ids_array_ptr: u64,
    /// To KFD.
    pub n_devices: u32,
    /// To/from KFD.
    pub n_success: u32,
}

/// `struct kfd_ioctl_runtime_enable_args` (KFD 1.14+).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RuntimeEnableArgs {
    /// To KFD: the runtime's `r_debug` address (0: none).
    pub r_debug: u64,
    /// To KFD: `RUNTIME_ENABLE_MODE_*`.
    pub mode_mask: u32,
    /// From KFD.
    pub capabilities_mask: u32,
}

const _: () = {
    assert!(size_of::<GetVersionArgs>() == 8);
    assert!(size_of::<CreateQueueArgs>() == 88);
    assert!(offset_of!(CreateQueueArgs, doorbell_offset) == 24 && offset_of!(CreateQueueArgs, ring_size) == 32);
    assert!(offset_of!(CreateQueueArgs, queue_id) == 52 && offset_of!(CreateQueueArgs, eop_buffer_address) == 56);
    assert!(
        offset_of!(CreateQueueArgs, ctx_save_restore_size) == 80 && offset_of!(CreateQueueArgs, ctl_stack_size) == 84
    );
    assert!(size_of::<DestroyQueueArgs>() == 8);
    assert!(size_of::<CreateEventArgs>() == 32);
    assert!(offset_of!(CreateEventArgs, event_type) == 12 && offset_of!(CreateEventArgs, event_slot_index) == 28);
    assert!(size_of::<DestroyEventArgs>() == 8 && size_of::<SetEventArgs>() == 8 && size_of::<ResetEventArgs>() == 8);
    assert!(size_of::<MemoryExceptionFailure>() == 16);
    assert!(size_of::<HsaMemoryExceptionData>() == 32);
    assert!(offset_of!(HsaMemoryExceptionData, va) == 16 && offset_of!(HsaMemoryExceptionData, gpu_id) == 24);
    assert!(size_of::<HsaHwExceptionData>() == 16 && offset_of!(HsaHwExceptionData, gpu_id) == 12);
    assert!(size_of::<EventData>() == 48);
    assert!(offset_of!(EventData, kfd_event_data_ext) == 32 && offset_of!(EventData, event_id) == 40);
    assert!(size_of::<WaitEventsArgs>() == 24 && offset_of!(WaitEventsArgs, wait_result) == 20);
    assert!(size_of::<AcquireVmArgs>() == 8);
    assert!(size_of::<AllocMemoryOfGpuArgs>() == 40 && offset_of!(AllocMemoryOfGpuArgs, flags) == 36);
    assert!(size_of::<FreeMemoryOfGpuArgs>() == 8);
    assert!(size_of::<MapMemoryToGpuArgs>() == 24 && offset_of!(MapMemoryToGpuArgs, n_success) == 20);
    assert!(size_of::<UnmapMemoryFromGpuArgs>() == 24);
    assert!(size_of::<RuntimeEnableArgs>() == 16 && offset_of!(RuntimeEnableArgs, capabilities_mask) == 12);
    // The full request numbers, from the header compiled on LP64 (tests/kfd_uapi.rs).
    assert!(IOC_GET_VERSION == 0x8008_4b01);
    assert!(IOC_CREATE_QUEUE == 0xc058_4b02);
    assert!(IOC_WAIT_EVENTS == 0xc018_4b0c);
    assert!(IOC_ALLOC_MEMORY_OF_GPU == 0xc028_4b16);
    assert!(IOC_RUNTIME_ENABLE == 0xc010_4b25);
};
