//! KFD buffer objects: a reserved range of the shared virtual address space, the buffer object
//! allocated at it, mapped over it from the render node and on the GPU (tinygrad's
//! `KFDIface.alloc`), freed in the reverse order when the last holder drops it.

use hcq::mmio::{MmioBus, VolatileRegion, Width};
use hcq::{Error, Result};
use hcq_amd::kfd::Kfd;
use hcq_amd::kfd::Mapping;
use hcq_amd::kfd::uapi::{
    AllocFlags, AllocMemoryOfGpuArgs, FreeMemoryOfGpuArgs, MapMemoryToGpuArgs, UnmapMemoryFromGpuArgs,
};
use std::sync::Arc;

/// One KFD buffer object, CPU-mapped; its CPU address is its GPU address (KFD's shared virtual
/// address space).
pub struct GpuBuf {
    kfd: Arc<dyn Kfd>,
    gpu_id: u32,
    handle: u64,
    map: Option<Mapping>,
    bus: VolatileRegion,
}

impl core::fmt::Debug for GpuBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GpuBuf").field("va", &self.va()).field("size", &self.size()).finish_non_exhaustive()
    }
}

impl GpuBuf {
    /// Allocate `size` bytes (rounded up to pages) with `flags` on GPU `gpu_id`.
    pub fn alloc(kfd: &Arc<dyn Kfd>, gpu_id: u32, size: u64, flags: AllocFlags) -> Result<GpuBuf> {
        let size = size
            .max(1)
            .checked_next_multiple_of(4096)
            .ok_or(Error::InvalidArgument { what: "AMD buffer size", value: size })?;
        let len = usize::try_from(size).map_err(|_| Error::InvalidArgument { what: "AMD buffer size", value: size })?;
        let res = kfd.map_anonymous(len, false)?;
        let mut a =
            AllocMemoryOfGpuArgs { va_addr: res.addr(), size, gpu_id, flags: flags.bits(), ..Default::default() };
        if let Err(e) = kfd.alloc_memory_of_gpu(&mut a) {
            let _ = kfd.munmap(res);
            return Err(e);
        }
        let free = |e: Error| {
            let _ = kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: a.handle });
            e
        };
        let map = kfd.mmap_render(res, a.mmap_offset).map_err(free)?;
        let mut m = MapMemoryToGpuArgs { handle: a.handle, ..Default::default() };
        if let Err(e) = kfd.map_memory_to_gpu(&mut m, &[gpu_id]) {
            let _ = kfd.munmap(map);
            return Err(free(e));
        }
        // SAFETY: `map` is the render node's mapping of the buffer object, `len` bytes at a
        // page-aligned address, readable and writable until `munmap`, which only `drop` calls
        // (after the bus is gone with `self`); the GPU and the host access it with volatile
        // word operations only, no reference to it is ever made.
        let bus = unsafe { VolatileRegion::new(map.ptr(), len) }?;
        Ok(GpuBuf { kfd: kfd.clone(), gpu_id, handle: a.handle, map: Some(map), bus })
    }

    /// Its GPU (and CPU) address.
    pub fn va(&self) -> u64 {
        self.map.as_ref().map_or(0, Mapping::addr)
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        // CAST: usize is at most 64 bits.
        self.bus.size() as u64
    }

    /// Its memory as an MMIO bus (volatile word accesses).
    pub fn bus(&self) -> &VolatileRegion {
        &self.bus
    }

    /// Its first byte in host memory.
    pub fn host_ptr(&self) -> *const u8 {
        self.map.as_ref().map_or(core::ptr::null(), |m| m.ptr().as_ptr().cast_const())
    }
}

impl Drop for GpuBuf {
    fn drop(&mut self) {
        let mut u = UnmapMemoryFromGpuArgs { handle: self.handle, ..Default::default() };
        if let Err(e) = self.kfd.unmap_memory_from_gpu(&mut u, &[self.gpu_id]) {
            log::warn!("AMD: unmapping buffer object {:#x}: {e}", self.handle);
        }
        if let Err(e) = self.kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: self.handle }) {
            log::warn!("AMD: freeing buffer object {:#x}: {e}", self.handle);
        }
        if let Some(m) = self.map.take()
            && let Err(e) = self.kfd.munmap(m)
        {
            log::warn!("AMD: unmapping a buffer's range: {e}");
        }
    }
}

/// A shared buffer object as a core MMIO bus (the ring, the kernel-argument pool).
pub(crate) struct BufBus(pub(crate) Arc<GpuBuf>);

impl MmioBus for BufBus {
    fn size(&self) -> usize {
        self.0.bus.size()
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.0.bus.read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.0.bus.write(offset, width, value)
    }
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.0.bus.write_bytes(offset, src)
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.0.bus.read_bytes(offset, dst)
    }
}

/// A mapping of `/dev/kfd` (the doorbell page) as an MMIO bus, unmapped when dropped.
pub(crate) struct KfdPage {
    kfd: Arc<dyn Kfd>,
    map: Option<Mapping>,
    bus: VolatileRegion,
}

impl KfdPage {
    pub(crate) fn map(kfd: &Arc<dyn Kfd>, offset: u64, len: usize) -> Result<KfdPage> {
        let map = kfd.mmap_kfd(offset, len)?;
        // SAFETY: `map` is KFD's mapping of `len` bytes of the doorbell pages, readable and
        // writable until `munmap`, which only `drop` calls; accessed with volatile word
        // operations only.
        let bus = unsafe { VolatileRegion::new(map.ptr(), len) }?;
        Ok(KfdPage { kfd: kfd.clone(), map: Some(map), bus })
    }
}

impl Drop for KfdPage {
    fn drop(&mut self) {
        if let Some(m) = self.map.take()
            && let Err(e) = self.kfd.munmap(m)
        {
            log::warn!("AMD: unmapping the doorbell page: {e}");
        }
    }
}

impl MmioBus for KfdPage {
    fn size(&self) -> usize {
        self.bus.size()
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.bus.read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.bus.write(offset, width, value)
    }
}

/// The doorbell of a KFD queue as tinygrad's `AMDQueue` rings it: the write pointer is stored
/// to the queue's write-pointer memory first (what the scheduler reads when it maps the queue
/// back in), then, after a device write barrier, to the doorbell.
pub(crate) struct QueueDoorbell {
    pub(crate) page: Arc<KfdPage>,
    /// The doorbell's byte offset on the page.
    pub(crate) bell: usize,
    /// The queue's pointer memory and the write pointer's byte offset in it.
    pub(crate) wptr: Arc<GpuBuf>,
    pub(crate) wptr_off: usize,
    /// The write pointer's unit: a value written to the doorbell (dwords, the core ring's
    /// unit) is shifted left by this much (0: a PM4 queue counts dwords; 2: an SDMA queue
    /// counts bytes, tinygrad's `put_value`).
    pub(crate) shift: u32,
}

impl MmioBus for QueueDoorbell {
    fn size(&self) -> usize {
        self.page.size()
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.page.read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        if offset == self.bell {
            let value = value << self.shift;
            self.wptr.bus.write(self.wptr_off, Width::U64, value)?;
            hcq::barrier::device_write_barrier();
            return self.page.write(offset, width, value);
        }
        self.page.write(offset, width, value)
    }
}
