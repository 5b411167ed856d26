//! DMA memory: page-aligned, locked host buffers; an IOVA space carved by the core's
//! [`RangeAllocator`]; and [`DmaMapping`], the guard that owns a buffer while the IOMMU maps it.
//!
//! The invariant: **an IOVA is never left mapped to freed memory.** A [`DmaMapping`] owns its
//! [`DmaBuffer`]; dropping the mapping unmaps the IOVA first, then frees the IOVA range, then
//! the memory. If the unmap fails the buffer and the IOVA are leaked (logged), never freed
//! while the device might still reach them.

use crate::vfio::Container;
use hcq::error::{Error, Result, ResultExt};
use hcq::memory::RangeAllocator;
use hcq::mmio::{MmioBus, VolatileRegion, Width};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// The page size DMA buffers and IOVAs are aligned to.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// Page-aligned, locked (`mlock`) anonymous host memory, zeroed, for a device to DMA to and
/// from. Host access goes through [`MmioBus`] (volatile: the device may write it at any time).
#[derive(Debug)]
pub struct DmaBuffer {
    region: VolatileRegion,
    len: usize,
}

impl DmaBuffer {
    /// `len` bytes (rounded up to whole pages).
    ///
    /// Errors: [`Error::InvalidArgument`] for 0; [`Error::Os`] when `mmap` or `mlock` fails
    /// (`mlock` needs `RLIMIT_MEMLOCK` room or `CAP_IPC_LOCK`).
    pub fn new(len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::InvalidArgument { what: "DMA buffer size must be non-zero", value: 0 });
        }
        let len = len
            .checked_next_multiple_of(page_size())
            .ok_or(Error::InvalidArgument { what: "DMA buffer size overflows", value: len as u64 })?;
        // SAFETY: a fresh private anonymous mapping at a kernel-chosen address replaces nothing.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::POPULATE,
            )
        }
        .map_err(|e| Error::Os { what: "mmap DMA buffer", errno: e.raw_os_error() })?;
        let base = NonNull::new(p.cast::<u8>()).ok_or(Error::Os { what: "mmap DMA buffer returned null", errno: 0 })?;
        // SAFETY: `[p, p + len)` is the mapping just made.
        if let Err(e) = unsafe { rustix::mm::mlock(p, len) } {
            // SAFETY: unmapping the mapping just made, which nothing else references.
            let _ = unsafe { rustix::mm::munmap(p, len) };
            return Err(Error::Os { what: "mlock DMA buffer", errno: e.raw_os_error() });
        }
        // SAFETY: the mapping is `len` bytes, page aligned (so 8-aligned), readable and writable,
        // and lives until this DmaBuffer is dropped; no Rust reference to it exists.
        let region = unsafe { VolatileRegion::new(base, len)? };
        Ok(Self { region, len })
    }

    /// Size in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (a buffer has at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The host address of the first byte.
    pub fn addr(&self) -> usize {
        self.region.base().as_ptr() as usize
    }

    /// Fill the whole buffer with `byte` (host side).
    pub fn fill(&self, byte: u8) -> Result<()> {
        let word = u64::from_ne_bytes([byte; 8]);
        for off in (0..self.len).step_by(8) {
            self.region.write(off, Width::U64, word)?;
        }
        Ok(())
    }

    /// The physical address of byte `offset` (from `/proc/self/pagemap`), for no-IOMMU mode
    /// only. Needs `CAP_SYS_ADMIN` (without it the kernel reports frame 0, an error here).
    pub fn phys_addr(&self, offset: usize) -> Result<u64> {
        hcq::mmio::check_range("DMA buffer physical address", offset, 1, self.len)?;
        let va = self.addr() + offset;
        let ps = page_size();
        let f = std::fs::File::open("/proc/self/pagemap")
            .map_err(|e| Error::Os { what: "open /proc/self/pagemap", errno: e.raw_os_error().unwrap_or(0) })?;
        let mut ent = [0u8; 8];
        rustix::io::pread(&f, &mut ent, (va / ps * 8) as u64)
            .map_err(|e| Error::Os { what: "read /proc/self/pagemap", errno: e.raw_os_error() })?;
        let ent = u64::from_ne_bytes(ent);
        // Documentation/admin-guide/mm/pagemap.rst: bit 63 present, bits 0-54 the frame number
        let pfn = ent & ((1 << 55) - 1);
        if ent & (1 << 63) == 0 || pfn == 0 {
            return Err(Error::Unsupported {
                what: "physical address: page not present or frame hidden (pagemap needs CAP_SYS_ADMIN)",
                value: va as u64,
            });
        }
        Ok(pfn * ps as u64 + (va % ps) as u64)
    }
}

impl MmioBus for DmaBuffer {
    #[inline]
    fn size(&self) -> usize {
        self.len
    }
    #[inline]
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.region.read(offset, width)
    }
    #[inline]
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.region.write(offset, width, value)
    }
    // host RAM: bulk copies may use memcpy (the VolatileRegion's)
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.region.write_bytes(offset, src)
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.region.read_bytes(offset, dst)
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; a DmaBuffer inside a DmaMapping is
        // only dropped after its IOVA was unmapped (DmaMapping's drop order).
        if let Err(e) = unsafe { rustix::mm::munmap(self.region.base().as_ptr().cast(), self.len) } {
            log::error!("munmap of a DMA buffer failed: {e}");
        }
    }
}

/// A range of IOVA space handed out in page-aligned pieces (the core's [`RangeAllocator`]).
#[derive(Debug)]
pub struct IovaSpace {
    alloc: Mutex<RangeAllocator>,
}

impl IovaSpace {
    /// The IOVAs `[base, base + size)`; both page aligned. Keep it inside what the device can
    /// address (QEMU's edu: below 2^28 by default).
    pub fn new(base: u64, size: u64) -> Result<Arc<Self>> {
        let ps = page_size() as u64;
        if !base.is_multiple_of(ps) || !size.is_multiple_of(ps) || size == 0 {
            return Err(Error::Misaligned {
                what: "IOVA space base and size (whole pages)",
                value: base | size,
                align: ps,
            });
        }
        Ok(Arc::new(Self { alloc: Mutex::new(RangeAllocator::new(base, size)) }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RangeAllocator> {
        self.alloc.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserve `size` bytes of IOVA space (page aligned).
    pub fn alloc(&self, size: u64) -> Result<u64> {
        self.lock().alloc(size, page_size() as u64)
    }

    /// Give back the range starting at `iova`.
    pub fn free(&self, iova: u64) -> Result<u64> {
        self.lock().free(iova)
    }

    /// Bytes still free.
    pub fn free_bytes(&self) -> u64 {
        self.lock().free_bytes()
    }
}

/// A [`DmaBuffer`] mapped at an IOVA through a container: the device reads and writes the buffer
/// at [`DmaMapping::iova`] until the mapping is dropped (see the module docs for the drop order).
#[derive(Debug)]
pub struct DmaMapping {
    buf: Option<DmaBuffer>,
    iova: u64,
    container: Arc<Container>,
    space: Arc<IovaSpace>,
}

impl DmaMapping {
    /// Map `buf` at a fresh IOVA from `space` in `container`.
    ///
    /// Errors: the IOVA space is full ([`Error::OutOfSpace`]), or `VFIO_IOMMU_MAP_DMA` fails
    /// ([`Error::Os`]; `ENOSPC`/`EINVAL` when the IOMMU cannot map that range); on error the IOVA
    /// goes back and `buf` is freed.
    pub fn new(container: &Arc<Container>, space: &Arc<IovaSpace>, buf: DmaBuffer) -> Result<Self> {
        let size = buf.len() as u64;
        let iova = space.alloc(size)?;
        // SAFETY: `buf` is owned by the returned DmaMapping, whose drop unmaps the IOVA before
        // the buffer is freed (or leaks both when the unmap fails).
        if let Err(e) = unsafe { container.map_dma(buf.addr(), iova, size) } {
            let _ = space.free(iova);
            return Err(e).with_context(|| format!("map {size} bytes at IOVA {iova:#x}"));
        }
        Ok(Self { buf: Some(buf), iova, container: container.clone(), space: space.clone() })
    }

    /// Allocate a buffer of `len` bytes and map it.
    pub fn alloc(container: &Arc<Container>, space: &Arc<IovaSpace>, len: usize) -> Result<Self> {
        Self::new(container, space, DmaBuffer::new(len)?)
    }

    /// Unmap explicitly and get the buffer back (for reuse under another IOVA).
    ///
    /// Errors: the unmap failed; the buffer and the IOVA are then leaked (never freed while the
    /// device might still reach them) and the error is returned.
    pub fn unmap(mut self) -> Result<DmaBuffer> {
        let size = self.len() as u64;
        if let Err(e) = self.container.unmap_dma(self.iova, size) {
            // leak the buffer; `Drop` sees no buffer and leaves the IOVA reserved
            std::mem::forget(self.buf.take());
            return Err(e);
        }
        if let Err(e) = self.space.free(self.iova) {
            log::error!("IOVA {:#x} free failed: {e}", self.iova);
        }
        // `Drop` sees no buffer: nothing left to unmap
        self.buf.take().ok_or(Error::InvalidArgument { what: "DmaMapping without a buffer", value: 0 })
    }

    /// The device address of the first byte.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// The mapped buffer (host access).
    pub fn buffer(&self) -> &DmaBuffer {
        // PANIC: never: `buf` is `Some` from construction until drop.
        self.buf.as_ref().expect("DmaMapping holds its buffer until drop")
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.buffer().len()
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// True when `[iova, iova + len)` lies inside this mapping.
    pub fn contains(&self, iova: u64, len: u64) -> bool {
        iova >= self.iova && iova.checked_add(len).is_some_and(|end| end <= self.iova + self.len() as u64)
    }
}

impl Drop for DmaMapping {
    fn drop(&mut self) {
        let Some(buf) = self.buf.as_ref() else {
            return; // `unmap` already handled it
        };
        let size = buf.len() as u64;
        match self.container.unmap_dma(self.iova, size) {
            Ok(()) => {
                if let Err(e) = self.space.free(self.iova) {
                    log::error!("IOVA {:#x} free failed: {e}", self.iova);
                }
                // the buffer drops (munmap) only now, after the IOMMU let go of it
                drop(self.buf.take());
            }
            Err(e) => {
                log::error!(
                    "unmap of IOVA {:#x} ({size} bytes) failed: {e}; leaking the buffer and the IOVA",
                    self.iova
                );
                std::mem::forget(self.buf.take());
            }
        }
    }
}

impl MmioBus for DmaMapping {
    fn size(&self) -> usize {
        self.len()
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.buffer().read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.buffer().write(offset, width, value)
    }
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.buffer().write_bytes(offset, src)
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.buffer().read_bytes(offset, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_whole_zeroed_pages() {
        let b = DmaBuffer::new(100).unwrap();
        assert_eq!(b.len(), page_size());
        assert_eq!(b.addr() % page_size(), 0);
        let mut out = vec![0xffu8; b.len()];
        b.read_bytes(0, &mut out).unwrap();
        assert!(out.iter().all(|&x| x == 0));
        b.fill(0xa5).unwrap();
        assert_eq!(b.read(8, Width::U32).unwrap(), 0xa5a5_a5a5);
        assert!(matches!(DmaBuffer::new(0), Err(Error::InvalidArgument { .. })));
        assert!(b.read(b.len(), Width::U8).is_err());
    }

    #[test]
    fn physical_addresses_need_root_and_are_page_consistent() {
        let b = DmaBuffer::new(2 * page_size()).unwrap();
        let ps = page_size() as u64;
        match (rustix::process::geteuid().is_root(), b.phys_addr(0)) {
            (true, Ok(p0)) => {
                assert_eq!(p0 % ps, 0, "a page-aligned buffer starts on a frame boundary");
                assert_eq!(b.phys_addr(100).unwrap(), p0 + 100, "offsets inside a page carry over");
            }
            // the kernel hides frame numbers from unprivileged readers: an error, never frame 0
            (false, Err(Error::Unsupported { .. })) => {}
            other => panic!("unexpected: {other:?}"),
        }
        assert!(b.phys_addr(b.len()).is_err(), "past the end");
    }

    #[test]
    fn iova_space_hands_out_aligned_ranges_and_takes_them_back() {
        let ps = page_size() as u64;
        let s = IovaSpace::new(0x10_0000, 4 * ps).unwrap();
        let a = s.alloc(1).unwrap();
        let b = s.alloc(2 * ps).unwrap();
        assert_eq!(a % ps, 0);
        assert_eq!(b % ps, 0);
        assert!(a >= 0x10_0000 && b + 2 * ps <= 0x10_0000 + 4 * ps);
        assert!(b > a, "ranges do not overlap");
        assert!(matches!(s.alloc(2 * ps), Err(Error::OutOfSpace { .. })), "only one page left");
        assert_eq!(s.free(b).unwrap(), 2 * ps);
        assert!(s.free(b).is_err(), "double free is refused");
        assert!(s.alloc(2 * ps).is_ok());
        assert!(IovaSpace::new(0x10_0001, ps).is_err());
    }
}
