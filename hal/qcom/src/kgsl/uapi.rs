//! KGSL uapi (`msm_kgsl.h`, KGSL 3.14, as vendored by Mesa turnip), LP64 layouts as zerocopy
//! structs with size and offset assertions. See `docs/adreno.md` (e).

use core::mem::{offset_of, size_of};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

const _: () = assert!(size_of::<usize>() == 8, "the KGSL layouts here are the LP64 ones");

/// `KGSL_IOC_TYPE`.
pub const IOC_TYPE: u32 = 0x09;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// Linux `_IOC(dir, KGSL_IOC_TYPE, nr, size)`.
pub const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    dir << 30 | (size as u32) << 16 | IOC_TYPE << 8 | nr
}
const fn iow<T>(nr: u32) -> u32 {
    ioc(IOC_WRITE, nr, size_of::<T>())
}
const fn iowr<T>(nr: u32) -> u32 {
    ioc(IOC_READ | IOC_WRITE, nr, size_of::<T>())
}

/// `IOCTL_KGSL_DEVICE_GETPROPERTY`.
pub const IOCTL_DEVICE_GETPROPERTY: u32 = iowr::<DeviceGetProperty>(0x02);
/// `IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID`.
pub const IOCTL_DEVICE_WAITTIMESTAMP_CTXTID: u32 = iow::<WaitTimestampCtxtid>(0x07);
/// `IOCTL_KGSL_DRAWCTXT_CREATE`.
pub const IOCTL_DRAWCTXT_CREATE: u32 = iowr::<DrawctxtCreate>(0x13);
/// `IOCTL_KGSL_DRAWCTXT_DESTROY`.
pub const IOCTL_DRAWCTXT_DESTROY: u32 = iow::<DrawctxtDestroy>(0x14);
/// `IOCTL_KGSL_MAP_USER_MEM`.
pub const IOCTL_MAP_USER_MEM: u32 = iowr::<MapUserMem>(0x15);
/// `IOCTL_KGSL_CMDSTREAM_READTIMESTAMP_CTXTID`.
pub const IOCTL_CMDSTREAM_READTIMESTAMP_CTXTID: u32 = iowr::<ReadTimestampCtxtid>(0x16);
/// `IOCTL_KGSL_SHAREDMEM_FREE`.
pub const IOCTL_SHAREDMEM_FREE: u32 = iow::<SharedmemFree>(0x21);
/// `IOCTL_KGSL_GPUOBJ_ALLOC`.
pub const IOCTL_GPUOBJ_ALLOC: u32 = iowr::<GpuobjAlloc>(0x45);
/// `IOCTL_KGSL_GPUOBJ_FREE`.
pub const IOCTL_GPUOBJ_FREE: u32 = iow::<GpuobjFree>(0x46);
/// `IOCTL_KGSL_GPUOBJ_INFO`.
pub const IOCTL_GPUOBJ_INFO: u32 = iowr::<GpuobjInfo>(0x47);
/// `IOCTL_KGSL_GPU_COMMAND`.
pub const IOCTL_GPU_COMMAND: u32 = iowr::<GpuCommand>(0x4a);

/// `KGSL_PROP_DEVICE_INFO`.
pub const PROP_DEVICE_INFO: u32 = 1;
/// `KGSL_PROP_VERSION`.
pub const PROP_VERSION: u32 = 8;
/// `KGSL_TIMESTAMP_RETIRED` (`kgsl_timestamp_type`).
pub const TIMESTAMP_RETIRED: u32 = 2;
/// `KGSL_GPUOBJ_FREE_ON_EVENT`.
pub const GPUOBJ_FREE_ON_EVENT: u64 = 1;
/// `KGSL_GPU_EVENT_TIMESTAMP`.
pub const GPU_EVENT_TIMESTAMP: u32 = 1;
/// `KGSL_USER_MEM_TYPE_ADDR`.
pub const USER_MEM_TYPE_ADDR: u32 = 2;

/// `struct kgsl_device_getproperty`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DeviceGetProperty {
    /// `KGSL_PROP_*`.
    pub ty: u32,
    /// Padding.
    pub _pad: u32,
    /// User pointer to the value.
    pub value: u64,
    /// Its size.
    pub sizebytes: u64,
}

/// `struct kgsl_devinfo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DevInfo {
    /// Device id.
    pub device_id: u32,
    /// `core << 24 | major << 16 | minor << 8 | patch`.
    pub chip_id: u32,
    /// MMU on.
    pub mmu_enabled: u32,
    /// Padding.
    pub _pad0: u32,
    /// GMEM base address.
    pub gmem_gpubaseaddr: u64,
    /// Marketing id (630).
    pub gpu_id: u32,
    /// Padding.
    pub _pad1: u32,
    /// GMEM size.
    pub gmem_sizebytes: u64,
}

/// `struct kgsl_version`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Version {
    /// Driver major.
    pub drv_major: u32,
    /// Driver minor.
    pub drv_minor: u32,
    /// Device major.
    pub dev_major: u32,
    /// Device minor.
    pub dev_minor: u32,
}

/// `struct kgsl_device_waittimestamp_ctxtid`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WaitTimestampCtxtid {
    /// Context.
    pub context_id: u32,
    /// Timestamp to wait for.
    pub timestamp: u32,
    /// Milliseconds.
    pub timeout: u32,
}

/// `struct kgsl_drawctxt_create`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrawctxtCreate {
    /// `KGSL_CONTEXT_*` (in).
    pub flags: u32,
    /// Context id (out).
    pub drawctxt_id: u32,
}

/// `struct kgsl_drawctxt_destroy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrawctxtDestroy {
    /// Context id.
    pub drawctxt_id: u32,
}

/// `struct kgsl_map_user_mem`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct MapUserMem {
    /// File descriptor (unused for `ADDR`).
    pub fd: i32,
    /// Padding.
    pub _pad0: u32,
    /// GPU address (out).
    pub gpuaddr: u64,
    /// Length.
    pub len: u64,
    /// Offset.
    pub offset: u64,
    /// Host pointer.
    pub hostptr: u64,
    /// `kgsl_user_mem_type`.
    pub memtype: u32,
    /// `KGSL_MEMFLAGS_*` (low 32 bits).
    pub flags: u32,
}

/// `CMDSTREAM_READTIMESTAMP_CTXTID` argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ReadTimestampCtxtid {
    /// Context.
    pub context_id: u32,
    /// `kgsl_timestamp_type`.
    pub ty: u32,
    /// Timestamp (out).
    pub timestamp: u32,
}

/// `struct kgsl_sharedmem_free`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SharedmemFree {
    /// GPU address.
    pub gpuaddr: u64,
}

/// `struct kgsl_gpuobj_alloc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GpuobjAlloc {
    /// Bytes.
    pub size: u64,
    /// `KGSL_MEMFLAGS_*`.
    pub flags: u64,
    /// Virtual range length.
    pub va_len: u64,
    /// mmap size (out).
    pub mmapsize: u64,
    /// Object id (out).
    pub id: u32,
    /// Metadata length.
    pub metadata_len: u32,
    /// Metadata pointer.
    pub metadata: u64,
}

/// `struct kgsl_gpuobj_free`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GpuobjFree {
    /// `KGSL_GPUOBJ_FREE_ON_EVENT`.
    pub flags: u64,
    /// Pointer to the event (`GpuEventTimestamp`).
    pub priv_: u64,
    /// Object id.
    pub id: u32,
    /// `KGSL_GPU_EVENT_*`.
    pub ty: u32,
    /// Size of the event.
    pub len: u32,
    /// Padding.
    pub _pad: u32,
}

/// `struct kgsl_gpu_event_timestamp`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GpuEventTimestamp {
    /// Context.
    pub context_id: u32,
    /// Timestamp.
    pub timestamp: u32,
}

/// `struct kgsl_gpuobj_info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GpuobjInfo {
    /// GPU address (out).
    pub gpuaddr: u64,
    /// Flags (out).
    pub flags: u64,
    /// Size (out).
    pub size: u64,
    /// Virtual length (out).
    pub va_len: u64,
    /// Virtual address (out).
    pub va_addr: u64,
    /// Object id (in).
    pub id: u32,
    /// Padding.
    pub _pad: u32,
}

/// `struct kgsl_command_object`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CommandObject {
    /// Offset in the object.
    pub offset: u64,
    /// GPU address of the IB.
    pub gpuaddr: u64,
    /// Size in bytes.
    pub size: u64,
    /// `KGSL_CMDLIST_*`.
    pub flags: u32,
    /// Object id.
    pub id: u32,
}

/// `struct kgsl_gpu_command`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GpuCommand {
    /// `KGSL_CMDBATCH_*`.
    pub flags: u64,
    /// Pointer to `CommandObject`s.
    pub cmdlist: u64,
    /// `size_of::<CommandObject>()`.
    pub cmdsize: u32,
    /// Count.
    pub numcmds: u32,
    /// Pointer to memory objects.
    pub objlist: u64,
    /// Their size.
    pub objsize: u32,
    /// Count.
    pub numobjs: u32,
    /// Pointer to sync points.
    pub synclist: u64,
    /// Their size.
    pub syncsize: u32,
    /// Count.
    pub numsyncs: u32,
    /// Context.
    pub context_id: u32,
    /// Timestamp (out).
    pub timestamp: u32,
}

const _: () = {
    assert!(size_of::<DeviceGetProperty>() == 24);
    assert!(offset_of!(DeviceGetProperty, value) == 8 && offset_of!(DeviceGetProperty, sizebytes) == 16);
    assert!(size_of::<DevInfo>() == 40);
    assert!(offset_of!(DevInfo, chip_id) == 4 && offset_of!(DevInfo, gmem_gpubaseaddr) == 16);
    assert!(offset_of!(DevInfo, gpu_id) == 24 && offset_of!(DevInfo, gmem_sizebytes) == 32);
    assert!(size_of::<Version>() == 16);
    assert!(size_of::<WaitTimestampCtxtid>() == 12);
    assert!(size_of::<DrawctxtCreate>() == 8 && offset_of!(DrawctxtCreate, drawctxt_id) == 4);
    assert!(size_of::<DrawctxtDestroy>() == 4);
    assert!(size_of::<MapUserMem>() == 48);
    assert!(offset_of!(MapUserMem, gpuaddr) == 8 && offset_of!(MapUserMem, len) == 16);
    assert!(offset_of!(MapUserMem, hostptr) == 32 && offset_of!(MapUserMem, memtype) == 40);
    assert!(offset_of!(MapUserMem, flags) == 44);
    assert!(size_of::<ReadTimestampCtxtid>() == 12);
    assert!(size_of::<SharedmemFree>() == 8);
    assert!(size_of::<GpuobjAlloc>() == 48);
    assert!(offset_of!(GpuobjAlloc, mmapsize) == 24 && offset_of!(GpuobjAlloc, id) == 32);
    assert!(offset_of!(GpuobjAlloc, metadata) == 40);
    assert!(size_of::<GpuobjFree>() == 32);
    assert!(offset_of!(GpuobjFree, id) == 16 && offset_of!(GpuobjFree, ty) == 20 && offset_of!(GpuobjFree, len) == 24);
    assert!(size_of::<GpuEventTimestamp>() == 8);
    assert!(size_of::<GpuobjInfo>() == 48 && offset_of!(GpuobjInfo, id) == 40);
    assert!(offset_of!(GpuobjInfo, va_addr) == 32);
    assert!(size_of::<CommandObject>() == 32 && offset_of!(CommandObject, flags) == 24);
    assert!(size_of::<GpuCommand>() == 64);
    assert!(offset_of!(GpuCommand, cmdsize) == 16 && offset_of!(GpuCommand, objlist) == 24);
    assert!(offset_of!(GpuCommand, synclist) == 40 && offset_of!(GpuCommand, context_id) == 56);
    assert!(offset_of!(GpuCommand, timestamp) == 60);
    // The full request numbers, from the header compiled on LP64 (docs/adreno.md (e)).
    assert!(IOCTL_DEVICE_GETPROPERTY == 0xc018_0902);
    assert!(IOCTL_DEVICE_WAITTIMESTAMP_CTXTID == 0x400c_0907);
    assert!(IOCTL_DRAWCTXT_CREATE == 0xc008_0913);
    assert!(IOCTL_DRAWCTXT_DESTROY == 0x4004_0914);
    assert!(IOCTL_MAP_USER_MEM == 0xc030_0915);
    assert!(IOCTL_CMDSTREAM_READTIMESTAMP_CTXTID == 0xc00c_0916);
    assert!(IOCTL_SHAREDMEM_FREE == 0x4008_0921);
    assert!(IOCTL_GPUOBJ_ALLOC == 0xc030_0945);
    assert!(IOCTL_GPUOBJ_FREE == 0x4020_0946);
    assert!(IOCTL_GPUOBJ_INFO == 0xc030_0947);
    assert!(IOCTL_GPU_COMMAND == 0xc040_094a);
};
