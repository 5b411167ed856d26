//! MSM DRM uapi: the structs of the kernel's `include/uapi/drm/msm_drm.h` and the few of
//! `include/uapi/drm/drm.h` this crate uses, LP64 layouts as zerocopy structs with size and
//! offset assertions, and the ioctl request numbers (asserted against the values the kernel
//! header's `DRM_IOWR`/`DRM_IOW` macros give).
//!
//! The truth is the kernel header: `include/uapi/drm/msm_drm.h` of torvalds/linux at commit
//! 02189ca8411253aa1328e9dd6137a40e390a5b37 (the layouts used here are unchanged since Linux
//! 5.8, which added the submit's syncobj fields); every size, offset and request number below
//! was also checked against Linux 6.1's headers (`linux-libc-dev` 6.1, aarch64) with
//! `sizeof`/`offsetof` in C. Written here from the header, not copied.

use core::mem::{offset_of, size_of};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

const _: () = assert!(size_of::<usize>() == 8, "the MSM layouts here are the LP64 ones");

/// `DRM_IOCTL_BASE` (`'d'`).
pub const DRM_IOCTL_TYPE: u32 = 0x64;
/// `DRM_COMMAND_BASE`: driver ioctls are numbered from here.
pub const DRM_COMMAND_BASE: u32 = 0x40;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// Linux `_IOC(dir, 'd', nr, size)`.
pub const fn drm_ioc(dir: u32, nr: u32, size: usize) -> u32 {
    dir << 30 | (size as u32) << 16 | DRM_IOCTL_TYPE << 8 | nr
}
const fn iow<T>(nr: u32) -> u32 {
    drm_ioc(IOC_WRITE, nr, size_of::<T>())
}
const fn iowr<T>(nr: u32) -> u32 {
    drm_ioc(IOC_READ | IOC_WRITE, nr, size_of::<T>())
}

/// `DRM_IOCTL_VERSION`.
pub const DRM_IOCTL_VERSION: u32 = iowr::<DrmVersion>(0x00);
/// `DRM_IOCTL_GEM_CLOSE`.
pub const DRM_IOCTL_GEM_CLOSE: u32 = iow::<GemClose>(0x09);
/// `DRM_IOCTL_PRIME_FD_TO_HANDLE`.
pub const DRM_IOCTL_PRIME_FD_TO_HANDLE: u32 = iowr::<PrimeHandle>(0x2e);
/// `DRM_IOCTL_MSM_GET_PARAM`.
pub const DRM_IOCTL_MSM_GET_PARAM: u32 = iowr::<Param>(DRM_COMMAND_BASE); // DRM_MSM_GET_PARAM is 0x00
/// `DRM_IOCTL_MSM_GEM_NEW`.
pub const DRM_IOCTL_MSM_GEM_NEW: u32 = iowr::<GemNew>(DRM_COMMAND_BASE + 0x02);
/// `DRM_IOCTL_MSM_GEM_INFO`.
pub const DRM_IOCTL_MSM_GEM_INFO: u32 = iowr::<GemInfo>(DRM_COMMAND_BASE + 0x03);
/// `DRM_IOCTL_MSM_GEM_SUBMIT`.
pub const DRM_IOCTL_MSM_GEM_SUBMIT: u32 = iowr::<GemSubmit>(DRM_COMMAND_BASE + 0x06);
/// `DRM_IOCTL_MSM_WAIT_FENCE`.
pub const DRM_IOCTL_MSM_WAIT_FENCE: u32 = iow::<WaitFence>(DRM_COMMAND_BASE + 0x07);
/// `DRM_IOCTL_MSM_SUBMITQUEUE_NEW`.
pub const DRM_IOCTL_MSM_SUBMITQUEUE_NEW: u32 = iowr::<Submitqueue>(DRM_COMMAND_BASE + 0x0a);
/// `DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE` (its argument is the queue id, a `__u32`).
pub const DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE: u32 = iow::<u32>(DRM_COMMAND_BASE + 0x0b);
/// `DRM_IOCTL_MSM_SUBMITQUEUE_QUERY`.
pub const DRM_IOCTL_MSM_SUBMITQUEUE_QUERY: u32 = iow::<SubmitqueueQuery>(DRM_COMMAND_BASE + 0x0c);

/// `MSM_PIPE_3D0`.
pub const MSM_PIPE_3D0: u32 = 0x10;
/// `MSM_PARAM_GPU_ID`.
pub const MSM_PARAM_GPU_ID: u32 = 0x01;
/// `MSM_PARAM_GMEM_SIZE`.
pub const MSM_PARAM_GMEM_SIZE: u32 = 0x02;
/// `MSM_PARAM_CHIP_ID`.
pub const MSM_PARAM_CHIP_ID: u32 = 0x03;
/// `MSM_PARAM_GMEM_BASE`.
pub const MSM_PARAM_GMEM_BASE: u32 = 0x06;
/// `MSM_PARAM_FAULTS` (GPU faults of the whole device).
pub const MSM_PARAM_FAULTS: u32 = 0x09;
/// `MSM_BO_WC`: write-combined CPU mapping.
pub const MSM_BO_WC: u32 = 0x0002_0000;
/// `MSM_INFO_GET_OFFSET`: the object's mmap offset.
pub const MSM_INFO_GET_OFFSET: u32 = 0x00;
/// `MSM_INFO_GET_IOVA`: the object's GPU address.
pub const MSM_INFO_GET_IOVA: u32 = 0x01;
/// `MSM_INFO_SET_IOVA`: choose the object's GPU address (userspace-managed VA).
pub const MSM_INFO_SET_IOVA: u32 = 0x04;
/// `MSM_SUBMIT_CMD_BUF`.
pub const MSM_SUBMIT_CMD_BUF: u32 = 0x0001;
/// `MSM_SUBMIT_BO_READ`.
pub const MSM_SUBMIT_BO_READ: u32 = 0x0001;
/// `MSM_SUBMIT_BO_WRITE`.
pub const MSM_SUBMIT_BO_WRITE: u32 = 0x0002;
/// `MSM_SUBMIT_BO_FLAGS`: every valid buffer flag (read, write, dump, no-implicit).
pub const MSM_SUBMIT_BO_FLAGS: u32 = 0x000f;
/// `MSM_SUBMITQUEUE_PARAM_FAULTS`: GPU faults of one queue (a `__u32` at `data`).
pub const MSM_SUBMITQUEUE_PARAM_FAULTS: u32 = 0;

/// `struct drm_version`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmVersion {
    /// Driver major version.
    pub version_major: i32,
    /// Minor version.
    pub version_minor: i32,
    /// Patch level.
    pub version_patchlevel: i32,
    /// Padding before the `size_t` (implicit in C).
    pub _pad: u32,
    /// Length of the `name` buffer (in), of the name (out).
    pub name_len: u64,
    /// User pointer to the name buffer.
    pub name: u64,
    /// Length of the `date` buffer.
    pub date_len: u64,
    /// User pointer to the date buffer.
    pub date: u64,
    /// Length of the `desc` buffer.
    pub desc_len: u64,
    /// User pointer to the description buffer.
    pub desc: u64,
}

/// `struct drm_gem_close`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GemClose {
    /// GEM handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct drm_prime_handle`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct PrimeHandle {
    /// GEM handle (out for `FD_TO_HANDLE`).
    pub handle: u32,
    /// Flags (handle-to-fd only).
    pub flags: u32,
    /// The dma-buf file descriptor (in for `FD_TO_HANDLE`).
    pub fd: i32,
}

/// `struct drm_msm_param`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Param {
    /// `MSM_PIPE_*`.
    pub pipe: u32,
    /// `MSM_PARAM_*`.
    pub param: u32,
    /// The value (out).
    pub value: u64,
    /// Zero for non-pointer params.
    pub len: u32,
    /// Must be zero.
    pub pad: u32,
}

/// `struct drm_msm_gem_new`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GemNew {
    /// Bytes.
    pub size: u64,
    /// `MSM_BO_*`.
    pub flags: u32,
    /// GEM handle (out).
    pub handle: u32,
}

/// `struct drm_msm_gem_info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GemInfo {
    /// GEM handle.
    pub handle: u32,
    /// `MSM_INFO_*`.
    pub info: u32,
    /// The value (in or out).
    pub value: u64,
    /// Length of a by-pointer value.
    pub len: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct drm_msm_timespec` (`CLOCK_MONOTONIC`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Timespec {
    /// Seconds.
    pub tv_sec: i64,
    /// Nanoseconds.
    pub tv_nsec: i64,
}

/// `struct drm_msm_gem_submit_cmd`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GemSubmitCmd {
    /// `MSM_SUBMIT_CMD_*`.
    pub ty: u32,
    /// Index of the command buffer's object in the submission's buffer list.
    pub submit_idx: u32,
    /// Byte offset of the commands in that object.
    pub submit_offset: u32,
    /// Bytes of commands.
    pub size: u32,
    /// Padding.
    pub pad: u32,
    /// Relocations (none here).
    pub nr_relocs: u32,
    /// User pointer to the relocations.
    pub relocs: u64,
}

/// `struct drm_msm_gem_submit_bo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GemSubmitBo {
    /// `MSM_SUBMIT_BO_*`.
    pub flags: u32,
    /// GEM handle.
    pub handle: u32,
    /// The address userspace presumes the object has (for relocations).
    pub presumed: u64,
}

/// `struct drm_msm_gem_submit`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GemSubmit {
    /// `MSM_PIPE_*` | `MSM_SUBMIT_*`.
    pub flags: u32,
    /// The submission's fence (out).
    pub fence: u32,
    /// Entries of `bos`.
    pub nr_bos: u32,
    /// Entries of `cmds`.
    pub nr_cmds: u32,
    /// User pointer to the buffer list.
    pub bos: u64,
    /// User pointer to the commands.
    pub cmds: u64,
    /// Fence fd (with `FENCE_FD_IN`/`OUT`).
    pub fence_fd: i32,
    /// Submit queue id.
    pub queueid: u32,
    /// User pointer to the input syncobjs.
    pub in_syncobjs: u64,
    /// User pointer to the output syncobjs.
    pub out_syncobjs: u64,
    /// Input syncobjs.
    pub nr_in_syncobjs: u32,
    /// Output syncobjs.
    pub nr_out_syncobjs: u32,
    /// Stride of the syncobj arrays.
    pub syncobj_stride: u32,
    /// Reserved, zero.
    pub pad: u32,
}

/// `struct drm_msm_wait_fence`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WaitFence {
    /// The fence.
    pub fence: u32,
    /// `MSM_WAIT_FENCE_*`.
    pub flags: u32,
    /// Absolute `CLOCK_MONOTONIC` deadline.
    pub timeout: Timespec,
    /// Submit queue id.
    pub queueid: u32,
    /// Tail padding (implicit in C: the struct is 8-byte aligned).
    pub _pad: u32,
}

/// `struct drm_msm_submitqueue`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Submitqueue {
    /// `MSM_SUBMITQUEUE_*` (none defined).
    pub flags: u32,
    /// Priority (0 is the highest).
    pub prio: u32,
    /// Queue id (out).
    pub id: u32,
}

/// `struct drm_msm_submitqueue_query`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SubmitqueueQuery {
    /// User pointer to the value.
    pub data: u64,
    /// Queue id.
    pub id: u32,
    /// `MSM_SUBMITQUEUE_PARAM_*`.
    pub param: u32,
    /// Bytes at `data`.
    pub len: u32,
    /// Padding.
    pub pad: u32,
}

// Sizes and offsets as the kernel header lays them out (LP64), and the request numbers.
const _: () = {
    assert!(size_of::<DrmVersion>() == 64);
    assert!(offset_of!(DrmVersion, name_len) == 16);
    assert!(offset_of!(DrmVersion, name) == 24);
    assert!(offset_of!(DrmVersion, date_len) == 32);
    assert!(offset_of!(DrmVersion, desc) == 56);
    assert!(size_of::<GemClose>() == 8);
    assert!(size_of::<PrimeHandle>() == 12);
    assert!(offset_of!(PrimeHandle, fd) == 8);
    assert!(size_of::<Param>() == 24);
    assert!(offset_of!(Param, value) == 8);
    assert!(offset_of!(Param, len) == 16);
    assert!(size_of::<GemNew>() == 16);
    assert!(offset_of!(GemNew, handle) == 12);
    assert!(size_of::<GemInfo>() == 24);
    assert!(offset_of!(GemInfo, value) == 8);
    assert!(offset_of!(GemInfo, len) == 16);
    assert!(size_of::<Timespec>() == 16);
    assert!(size_of::<GemSubmitCmd>() == 32);
    assert!(offset_of!(GemSubmitCmd, nr_relocs) == 20);
    assert!(offset_of!(GemSubmitCmd, relocs) == 24);
    assert!(size_of::<GemSubmitBo>() == 16);
    assert!(offset_of!(GemSubmitBo, presumed) == 8);
    assert!(size_of::<GemSubmit>() == 72);
    assert!(offset_of!(GemSubmit, bos) == 16);
    assert!(offset_of!(GemSubmit, cmds) == 24);
    assert!(offset_of!(GemSubmit, fence_fd) == 32);
    assert!(offset_of!(GemSubmit, queueid) == 36);
    assert!(offset_of!(GemSubmit, in_syncobjs) == 40);
    assert!(offset_of!(GemSubmit, out_syncobjs) == 48);
    assert!(offset_of!(GemSubmit, nr_in_syncobjs) == 56);
    assert!(offset_of!(GemSubmit, syncobj_stride) == 64);
    assert!(offset_of!(GemSubmit, pad) == 68);
    assert!(size_of::<WaitFence>() == 32);
    assert!(offset_of!(WaitFence, timeout) == 8);
    assert!(offset_of!(WaitFence, queueid) == 24);
    assert!(size_of::<Submitqueue>() == 12);
    assert!(offset_of!(Submitqueue, id) == 8);
    assert!(size_of::<SubmitqueueQuery>() == 24);
    assert!(offset_of!(SubmitqueueQuery, id) == 8);
    assert!(offset_of!(SubmitqueueQuery, param) == 12);
    assert!(offset_of!(SubmitqueueQuery, len) == 16);
    // `DRM_IOWR(...)` and friends of the kernel header, evaluated by its C compiler.
    assert!(DRM_IOCTL_VERSION == 0xc040_6400);
    assert!(DRM_IOCTL_GEM_CLOSE == 0x4008_6409);
    assert!(DRM_IOCTL_PRIME_FD_TO_HANDLE == 0xc00c_642e);
    assert!(DRM_IOCTL_MSM_GET_PARAM == 0xc018_6440);
    assert!(DRM_IOCTL_MSM_GEM_NEW == 0xc010_6442);
    assert!(DRM_IOCTL_MSM_GEM_INFO == 0xc018_6443);
    assert!(DRM_IOCTL_MSM_GEM_SUBMIT == 0xc048_6446);
    assert!(DRM_IOCTL_MSM_WAIT_FENCE == 0x4020_6447);
    assert!(DRM_IOCTL_MSM_SUBMITQUEUE_NEW == 0xc00c_644a);
    assert!(DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE == 0x4004_644b);
    assert!(DRM_IOCTL_MSM_SUBMITQUEUE_QUERY == 0x4018_644c);
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The request numbers encode the struct sizes (what `drm_ioctl` copies in and out).
    #[test]
    fn request_sizes_are_the_struct_sizes() {
        let size = |r: u32| (r >> 16 & 0x3fff) as usize;
        assert_eq!(size(DRM_IOCTL_MSM_GEM_SUBMIT), size_of::<GemSubmit>());
        assert_eq!(size(DRM_IOCTL_MSM_WAIT_FENCE), size_of::<WaitFence>());
        assert_eq!(size(DRM_IOCTL_VERSION), size_of::<DrmVersion>());
        assert_eq!(DRM_IOCTL_MSM_GET_PARAM & 0xff, DRM_COMMAND_BASE);
    }
}
