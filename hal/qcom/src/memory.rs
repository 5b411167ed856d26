//! GPU memory as both kernel interfaces hand it out: a [`GpuObject`] (allocated, mapped into
//! this process through a [`Mapping`], unmapped by the backend that mapped it), when one may be
//! released ([`FreeAfter`]), and host memory mapped for the GPU ([`UserMapping`]).

use crate::kgsl::ioctl::KgslIoctl;
use crate::msm;
use core::ptr::NonNull;
use hcq::mmio::VolatileRegion;
use std::sync::Arc;

/// A CPU mapping of a GPU object.
#[derive(Debug)]
pub struct Mapping {
    /// Start.
    pub ptr: NonNull<u8>,
    /// Length in bytes.
    pub len: usize,
}

// SAFETY: a Mapping is an address range; access goes through GpuObject, which hands out
// volatile word accessors only.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// When a GPU object may be released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeAfter {
    /// It was never part of a submission: free at once.
    NeverSubmitted,
    /// The kernel frees it once `context` retires `timestamp` (`GPUOBJ_FREE_ON_EVENT`).
    Timestamp {
        /// Context id.
        context: u32,
        /// Timestamp of the last submission that used it.
        timestamp: u32,
    },
}

/// Who unmaps a [`GpuObject`]'s CPU mapping: the backend that made it.
#[derive(Clone)]
pub(crate) enum MapOwner {
    Kgsl(Arc<dyn KgslIoctl>),
    Msm(Arc<dyn msm::ioctl::MsmIoctl>),
}

impl MapOwner {
    /// # Safety
    /// `m` came from this owner's `mmap` and nothing references the range any more.
    pub(crate) unsafe fn munmap(&self, m: &Mapping) {
        match self {
            // SAFETY: the caller's contract.
            MapOwner::Kgsl(io) => unsafe { io.munmap(m) },
            // SAFETY: the caller's contract.
            MapOwner::Msm(io) => unsafe { io.munmap(m) },
        }
    }
}

/// A GPU memory object, mapped into this process.
pub struct GpuObject {
    pub(crate) io: MapOwner,
    pub(crate) id: u32,
    pub(crate) gpuaddr: u64,
    pub(crate) size: u64,
    pub(crate) map: Mapping,
    pub(crate) region: VolatileRegion,
}

impl core::fmt::Debug for GpuObject {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GpuObject")
            .field("id", &self.id)
            .field("gpuaddr", &format_args!("{:#x}", self.gpuaddr))
            .field("size", &self.size)
            .finish()
    }
}

impl GpuObject {
    /// KGSL object id (a GEM handle on MSM).
    pub fn id(&self) -> u32 {
        self.id
    }
    /// GPU virtual address.
    pub fn gpuaddr(&self) -> u64 {
        self.gpuaddr
    }
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The CPU mapping as a bus of volatile word accesses (the GPU may read and write it).
    pub fn bus(&self) -> &VolatileRegion {
        &self.region
    }
}

impl Drop for GpuObject {
    fn drop(&mut self) {
        // Only the CPU mapping goes: the GPU object itself is released by `Kgsl::free` (after
        // its last timestamp) or when the device file closes, so a dropped handle never frees
        // memory the GPU may still use.
        // SAFETY: `map` came from this backend's mmap; `region` (the only accessor) dies with
        // `self`, so nothing references the range afterwards.
        unsafe { self.io.munmap(&self.map) };
    }
}

/// A user-memory mapping (`MAP_USER_MEM`).
#[derive(Debug)]
pub struct UserMapping {
    /// GPU address of the host range.
    pub gpuaddr: u64,
    /// Length.
    pub len: u64,
}
