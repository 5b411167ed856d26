//! Memory-mapped I/O: a mapped region and bounds-checked typed views onto it.
//!
//! All register and shared-memory access in hcq goes through the small [`MmioBus`] trait, so the
//! same register code runs on a real mapping ([`VolatileRegion`]) and on mock MMIO (the std shim
//! in `sim/device`). An [`MmioView`] is `(bus, byte offset, byte length, element format)`: indexing
//! is in elements, `view()` offsets and lengths are in bytes (as in tinygrad's `MMIOInterface`).
//! Every access is bounds-checked and misaligned accesses are refused: an out-of-range access is
//! an [`Error::OutOfBounds`], never undefined behaviour.
//!
//! Volatile is not ordering. Writers of command memory issue
//! `core::sync::atomic::fence(Ordering::Release)` before the doorbell write (see `ring`).

pub mod register;
#[doc(hidden)]
pub use register::__paste;

use crate::error::{Error, Result};
use core::ptr::NonNull;
use volatile::VolatilePtr;

/// Element format of a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Width {
    /// 8-bit elements.
    U8 = 1,
    /// 16-bit elements.
    U16 = 2,
    /// 32-bit elements.
    U32 = 4,
    /// 64-bit elements.
    U64 = 8,
}

impl Width {
    /// Size of one element in bytes.
    #[inline]
    pub const fn bytes(self) -> usize {
        self as usize
    }

    /// Mask of the bits an element holds.
    #[inline]
    pub const fn mask(self) -> u64 {
        match self {
            Width::U8 => 0xff,
            Width::U16 => 0xffff,
            Width::U32 => 0xffff_ffff,
            Width::U64 => u64::MAX,
        }
    }
}

/// Raw access to a region of device or device-visible memory.
///
/// Offsets are in bytes from the start of the region. Implementations must return
/// [`Error::OutOfBounds`] (never touch memory) when `offset + width` exceeds [`MmioBus::size`],
/// and [`Error::Misaligned`] when `offset` is not a multiple of the width. Values wider than the
/// width are truncated on write. Methods take `&self`: a bus is shared between the host thread and
/// whoever else drives the device, and each access is a single volatile load or store.
pub trait MmioBus: Sync {
    /// Size of the region in bytes.
    fn size(&self) -> usize;
    /// Read one element of `width` at `offset`.
    fn read(&self, offset: usize, width: Width) -> Result<u64>;
    /// Write one element of `width` at `offset`.
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()>;

    /// Copy `src` into the region at `offset` (bulk data: ring words, buffer contents — not
    /// registers). The default writes byte by byte; memory-backed buses override it with one
    /// copy. Order it against a doorbell with a release fence.
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        check_range("mmio write_bytes", offset, src.len(), self.size())?;
        for (i, b) in src.iter().enumerate() {
            self.write(offset + i, Width::U8, u64::from(*b))?;
        }
        Ok(())
    }

    /// Copy from the region at `offset` into `dst` (bulk data). Default: byte by byte.
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range("mmio read_bytes", offset, dst.len(), self.size())?;
        for (i, b) in dst.iter_mut().enumerate() {
            *b = self.read(offset + i, Width::U8)? as u8;
        }
        Ok(())
    }
}

/// Check that `[offset, offset + len)` lies inside a region of `size` bytes.
#[inline]
pub fn check_range(what: &'static str, offset: usize, len: usize, size: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::OutOfBounds { what, offset: offset as u64, len: len as u64, limit: size as u64 }),
    }
}

/// Write `words` at byte `offset` of `bus`, one 32-bit volatile store each (memory a hardware
/// device reads: never a `memcpy`, which may tear or merge accesses).
///
/// Errors: [`Error::OutOfBounds`] when the words do not fit (nothing is written).
pub fn write_words<B: MmioBus + ?Sized>(bus: &B, offset: usize, words: &[u32]) -> Result<()> {
    check_range("submission words", offset, words.len().saturating_mul(4), bus.size())?;
    for (i, w) in words.iter().enumerate() {
        bus.write(offset + 4 * i, Width::U32, u64::from(*w))?;
    }
    Ok(())
}

/// Write the bytes `data` at byte `offset` of `bus` with volatile stores: one little-endian
/// 32-bit store per word when `offset` and the length are multiples of 4, one byte store each
/// otherwise (bulk data into memory a device reads: never a `memcpy`). A bus that takes words
/// only checks the alignment first.
///
/// Errors: [`Error::OutOfBounds`] naming `what` when the bytes do not fit (nothing is written).
pub fn write_bytes_by_words<B: MmioBus + ?Sized>(
    bus: &B,
    what: &'static str,
    offset: usize,
    data: &[u8],
) -> Result<()> {
    check_range(what, offset, data.len(), bus.size())?;
    if offset.is_multiple_of(4) && data.len().is_multiple_of(4) {
        for (i, c) in data.chunks_exact(4).enumerate() {
            bus.write(offset + 4 * i, Width::U32, u32::from_le_bytes([c[0], c[1], c[2], c[3]]).into())?;
        }
    } else {
        for (i, b) in data.iter().enumerate() {
            bus.write(offset + i, Width::U8, u64::from(*b))?;
        }
    }
    Ok(())
}

#[inline]
fn check_access(offset: usize, width: Width, size: usize) -> Result<()> {
    check_range("mmio access", offset, width.bytes(), size)?;
    if !offset.is_multiple_of(width.bytes()) {
        return Err(Error::Misaligned { what: "mmio access", value: offset as u64, align: width.bytes() as u64 });
    }
    Ok(())
}

/// A real mapping: `len` bytes at `base`, accessed with volatile loads and stores.
///
/// # Invariants
/// `[base, base + len)` is valid for volatile reads and writes for the life of the value, and
/// `base` is at least 8-byte aligned.
#[derive(Debug)]
pub struct VolatileRegion {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is only touched through volatile single-element accesses (`read_bytes`
// and `write_bytes` included: words and bytes, never a `memcpy`), which are sound from any
// thread as long as the mapping lives (the constructor's contract).
unsafe impl Send for VolatileRegion {}
// SAFETY: as above; `&self` methods do volatile accesses only.
unsafe impl Sync for VolatileRegion {}

impl VolatileRegion {
    /// Wrap a mapping.
    ///
    /// # Safety
    /// `[base, base + len)` must be mapped, readable and writable with volatile accesses for as
    /// long as the returned value (and every view of it) lives, and `base` must be 8-byte
    /// aligned. Other agents (a device, another thread through its own bus) may change the
    /// memory concurrently; no Rust reference to it may exist.
    pub unsafe fn new(base: NonNull<u8>, len: usize) -> Result<Self> {
        if !(base.as_ptr() as usize).is_multiple_of(8) {
            return Err(Error::Misaligned { what: "mmio region base", value: base.as_ptr() as u64, align: 8 });
        }
        Ok(Self { base, len })
    }

    /// Start address of the mapping (CPU virtual address).
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// A view of the whole region with the given element format.
    pub fn as_view(&self, width: Width) -> MmioView<'_, Self> {
        MmioView { bus: self, offset: 0, len: self.len, width }
    }
}

impl MmioBus for VolatileRegion {
    #[inline]
    fn size(&self) -> usize {
        self.len
    }

    #[inline]
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        check_access(offset, width, self.len)?;
        // The base is 8-aligned and `[base, base + len)` mapped (type invariant).
        // SAFETY: in bounds and width-aligned (checked above), so valid for a volatile access.
        let v = unsafe {
            let p = self.base.add(offset);
            match width {
                Width::U8 => u64::from(VolatilePtr::new_read_only(p).read()),
                Width::U16 => u64::from(VolatilePtr::new_read_only(p.cast::<u16>()).read()),
                Width::U32 => u64::from(VolatilePtr::new_read_only(p.cast::<u32>()).read()),
                Width::U64 => VolatilePtr::new_read_only(p.cast::<u64>()).read(),
            }
        };
        Ok(v)
    }

    #[inline]
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        check_access(offset, width, self.len)?;
        // SAFETY: as in `read`: in bounds, aligned, mapped writable (type invariant).
        unsafe {
            let p = self.base.add(offset);
            match width {
                Width::U8 => VolatilePtr::new(p).write(value as u8),
                Width::U16 => VolatilePtr::new(p.cast::<u16>()).write(value as u16),
                Width::U32 => VolatilePtr::new(p.cast::<u32>()).write(value as u32),
                Width::U64 => VolatilePtr::new(p.cast::<u64>()).write(value),
            }
        }
        Ok(())
    }

    /// Volatile stores: 8-byte words where the offset is 8-aligned, single bytes at the edges
    /// (never a `memcpy`, which may tear, repeat or elide accesses to memory another agent
    /// changes).
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        check_range("mmio write_bytes", offset, src.len(), self.len)?;
        let mut i = 0;
        while let Some(&byte) = src.get(i) {
            let at = offset + i;
            if at.is_multiple_of(8)
                && let Some(w) = src.get(i..i + 8)
            {
                let mut b = [0u8; 8];
                b.copy_from_slice(w);
                // SAFETY: `[at, at + 8)` is inside the mapping (checked above) and 8-aligned
                // (the base is 8-aligned: type invariant).
                unsafe { VolatilePtr::new(self.base.add(at).cast::<u64>()).write(u64::from_ne_bytes(b)) };
                i += 8;
            } else {
                // SAFETY: `at` is inside the mapping (checked above).
                unsafe { VolatilePtr::new(self.base.add(at)).write(byte) };
                i += 1;
            }
        }
        Ok(())
    }

    /// Volatile loads, as [`VolatileRegion::write_bytes`] stores.
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range("mmio read_bytes", offset, dst.len(), self.len)?;
        let mut i = 0;
        while i < dst.len() {
            let at = offset + i;
            if at.is_multiple_of(8)
                && let Some(w) = dst.get_mut(i..i + 8)
            {
                // SAFETY: as in `write_bytes`: in bounds and 8-aligned.
                let v = unsafe { VolatilePtr::new_read_only(self.base.add(at).cast::<u64>()).read() };
                w.copy_from_slice(&v.to_ne_bytes());
                i += 8;
            } else if let Some(d) = dst.get_mut(i) {
                // SAFETY: `at` is inside the mapping (checked above).
                *d = unsafe { VolatilePtr::new_read_only(self.base.add(at)).read() };
                i += 1;
            }
        }
        Ok(())
    }
}

/// A typed, bounds-checked window onto an [`MmioBus`].
///
/// `offset` and `len` are in bytes; element indices are in units of `width`.
#[derive(Debug)]
pub struct MmioView<'a, B: ?Sized> {
    bus: &'a B,
    offset: usize,
    len: usize,
    width: Width,
}

impl<B: ?Sized> Clone for MmioView<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B: ?Sized> Copy for MmioView<'_, B> {}

impl<'a, B: MmioBus + ?Sized> MmioView<'a, B> {
    /// A view of `len` bytes at byte `offset` of `bus`, with element format `width`.
    pub fn new(bus: &'a B, offset: usize, len: usize, width: Width) -> Result<Self> {
        check_range("mmio view", offset, len, bus.size())?;
        Ok(Self { bus, offset, len, width })
    }

    /// A view of the whole bus.
    pub fn whole(bus: &'a B, width: Width) -> Self {
        Self { bus, offset: 0, len: bus.size(), width }
    }

    /// A sub-view: `len` bytes at byte `offset` of this view (`None` = to the end), with a new
    /// element format (`None` = this view's).
    pub fn view(&self, offset: usize, len: Option<usize>, width: Option<Width>) -> Result<Self> {
        let len = match len {
            Some(l) => l,
            None => self.len.checked_sub(offset).ok_or(Error::OutOfBounds {
                what: "mmio view",
                offset: offset as u64,
                len: 0,
                limit: self.len as u64,
            })?,
        };
        check_range("mmio view", offset, len, self.len)?;
        Ok(Self { bus: self.bus, offset: self.offset + offset, len, width: width.unwrap_or(self.width) })
    }

    /// Byte offset of this view inside its bus.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Length in bytes.
    pub fn nbytes(&self) -> usize {
        self.len
    }

    /// Length in elements.
    pub fn len(&self) -> usize {
        self.len / self.width.bytes()
    }

    /// True when the view holds no whole element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element format.
    pub fn width(&self) -> Width {
        self.width
    }

    /// The bus underneath.
    pub fn bus(&self) -> &'a B {
        self.bus
    }

    #[inline]
    fn elem_offset(&self, index: usize) -> Result<usize> {
        let w = self.width.bytes();
        let off = index.checked_mul(w).ok_or(Error::OutOfBounds {
            what: "mmio view index",
            offset: index as u64,
            len: w as u64,
            limit: self.len as u64,
        })?;
        check_range("mmio view index", off, w, self.len)?;
        Ok(self.offset + off)
    }

    /// Read element `index`.
    #[inline]
    pub fn read(&self, index: usize) -> Result<u64> {
        let off = self.elem_offset(index)?;
        self.bus.read(off, self.width)
    }

    /// Write element `index` (truncated to the element width).
    #[inline]
    pub fn write(&self, index: usize, value: u64) -> Result<()> {
        let off = self.elem_offset(index)?;
        self.bus.write(off, self.width, value)
    }

    /// Copy bytes into the view starting at byte `offset` (byte by byte for an 8-bit view,
    /// element by element otherwise; both `offset` and `src.len()` must then be multiples of the
    /// element size).
    pub fn copy_in(&self, offset: usize, src: &[u8]) -> Result<()> {
        check_range("mmio copy_in", offset, src.len(), self.len)?;
        let w = self.width.bytes();
        if !offset.is_multiple_of(w) || !src.len().is_multiple_of(w) {
            return Err(Error::Misaligned {
                what: "mmio copy_in",
                value: (offset | src.len()) as u64,
                align: w as u64,
            });
        }
        for (i, chunk) in src.chunks_exact(w).enumerate() {
            let mut v = [0u8; 8];
            v[..w].copy_from_slice(chunk);
            self.bus.write(self.offset + offset + i * w, self.width, u64::from_le_bytes(v))?;
        }
        Ok(())
    }

    /// Copy bytes out of the view starting at byte `offset`; same alignment rules as
    /// [`MmioView::copy_in`].
    pub fn copy_out(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range("mmio copy_out", offset, dst.len(), self.len)?;
        let w = self.width.bytes();
        if !offset.is_multiple_of(w) || !dst.len().is_multiple_of(w) {
            return Err(Error::Misaligned {
                what: "mmio copy_out",
                value: (offset | dst.len()) as u64,
                align: w as u64,
            });
        }
        for (i, chunk) in dst.chunks_exact_mut(w).enumerate() {
            let v = self.bus.read(self.offset + offset + i * w, self.width)?;
            chunk.copy_from_slice(&v.to_le_bytes()[..w]);
        }
        Ok(())
    }
}

/// Host memory that a bus can own: a zeroed, 8-aligned heap block of `len` bytes.
///
/// Used by tests and by host-side device memory (signals, rings) where the "device" is another
/// thread. Accesses are volatile through a [`VolatileRegion`] over the block.
#[cfg(feature = "alloc")]
pub struct HostRegion {
    region: VolatileRegion,
    layout: core::alloc::Layout,
}

#[cfg(feature = "alloc")]
impl HostRegion {
    /// Allocate `len` zeroed bytes aligned to `align` (at least 8, a power of two).
    pub fn new(len: usize, align: usize) -> Result<Self> {
        let align = align.max(8);
        let layout = core::alloc::Layout::from_size_align(len.max(1), align).map_err(|_| Error::InvalidArgument {
            what: "host region alignment must be a power of two",
            value: align as u64,
        })?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc::alloc::alloc_zeroed(layout) };
        let base =
            NonNull::new(p).ok_or(Error::OutOfSpace { what: "host region", requested: len as u64, capacity: 0 })?;
        // SAFETY: freshly allocated, `len` bytes valid, aligned to >= 8, and owned by `self`
        // until drop; accesses go through volatile operations only.
        let region = unsafe { VolatileRegion::new(base, len)? };
        Ok(Self { region, layout })
    }

    /// The CPU address of the block.
    pub fn addr(&self) -> u64 {
        self.region.base.as_ptr() as u64
    }

    /// The region (an [`MmioBus`]).
    pub fn region(&self) -> &VolatileRegion {
        &self.region
    }
}

#[cfg(feature = "alloc")]
impl MmioBus for HostRegion {
    #[inline]
    fn size(&self) -> usize {
        self.region.len
    }
    #[inline]
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.region.read(offset, width)
    }
    #[inline]
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.region.write(offset, width, value)
    }
    #[inline]
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.region.write_bytes(offset, src)
    }
    #[inline]
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.region.read_bytes(offset, dst)
    }
}

/// A window of another bus: `len` bytes at `offset` of `parent`, addressed from 0. How a device's
/// memory is carved into rings and pools (by a [`BumpAllocator`](crate::memory::BumpAllocator)).
#[cfg(feature = "alloc")]
pub struct SubRegion {
    parent: alloc::sync::Arc<dyn MmioBus + Send + Sync>,
    offset: usize,
    len: usize,
}

#[cfg(feature = "alloc")]
impl SubRegion {
    /// The window `[offset, offset + len)` of `parent`.
    pub fn new(parent: alloc::sync::Arc<dyn MmioBus + Send + Sync>, offset: usize, len: usize) -> Result<Self> {
        check_range("sub-region", offset, len, parent.size())?;
        Ok(Self { parent, offset, len })
    }

    /// Where the window starts in its parent.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

#[cfg(feature = "alloc")]
impl MmioBus for SubRegion {
    #[inline]
    fn size(&self) -> usize {
        self.len
    }
    #[inline]
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        check_range("sub-region access", offset, width.bytes(), self.len)?;
        self.parent.read(self.offset + offset, width)
    }
    #[inline]
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        check_range("sub-region access", offset, width.bytes(), self.len)?;
        self.parent.write(self.offset + offset, width, value)
    }
    #[inline]
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        check_range("sub-region write_bytes", offset, src.len(), self.len)?;
        self.parent.write_bytes(self.offset + offset, src)
    }
    #[inline]
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range("sub-region read_bytes", offset, dst.len(), self.len)?;
        self.parent.read_bytes(self.offset + offset, dst)
    }
}

#[cfg(feature = "alloc")]
impl Drop for HostRegion {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout and not freed before.
        unsafe { alloc::alloc::dealloc(self.region.base.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bus that records the width of every write.
    struct Widths(HostRegion, spin::Mutex<alloc::vec::Vec<(usize, Width)>>);

    impl MmioBus for Widths {
        fn size(&self) -> usize {
            self.0.size()
        }
        fn read(&self, offset: usize, width: Width) -> Result<u64> {
            self.0.read(offset, width)
        }
        fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
            self.1.lock().push((offset, width));
            self.0.write(offset, width, value)
        }
    }

    #[test]
    fn word_writes_are_single_32_bit_stores_and_refuse_what_does_not_fit() {
        let bus = Widths(HostRegion::new(16, 8).unwrap(), spin::Mutex::new(alloc::vec::Vec::new()));
        write_words(&bus, 4, &[0x1122_3344, 5]).unwrap();
        assert_eq!(*bus.1.lock(), [(4, Width::U32), (8, Width::U32)]);
        assert_eq!(bus.read(4, Width::U32).unwrap(), 0x1122_3344);
        assert!(matches!(write_words(&bus, 12, &[1, 2]), Err(Error::OutOfBounds { .. })));
        bus.1.lock().clear();
        write_bytes_by_words(&bus, "t", 8, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(*bus.1.lock(), [(8, Width::U32), (12, Width::U32)], "aligned bytes go as words");
        assert_eq!(bus.read(8, Width::U32).unwrap(), 0x0403_0201, "little-endian");
        bus.1.lock().clear();
        write_bytes_by_words(&bus, "t", 1, &[9, 9]).unwrap();
        assert_eq!(*bus.1.lock(), [(1, Width::U8), (2, Width::U8)], "unaligned bytes go one by one");
        bus.1.lock().clear();
        let e = write_bytes_by_words(&bus, "test write", 12, &[0; 8]).unwrap_err();
        assert!(matches!(e, Error::OutOfBounds { what: "test write", .. }), "{e:?}");
        assert!(bus.1.lock().is_empty(), "nothing written");
    }

    #[test]
    fn volatile_byte_copies_are_exact_at_any_offset_and_length() {
        let h = HostRegion::new(64, 8).unwrap();
        let r = h.region();
        let src: std::vec::Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(7) ^ 0x5a).collect();
        for off in 0..9 {
            for len in [0, 1, 7, 8, 9, 17, 31] {
                r.write_bytes(0, &[0u8; 64]).unwrap();
                r.write_bytes(off, &src[..len]).unwrap();
                let mut all = [0u8; 64];
                r.read_bytes(0, &mut all).unwrap();
                assert_eq!(&all[off..off + len], &src[..len], "offset {off}, {len} bytes");
                assert!(all[..off].iter().chain(&all[off + len..]).all(|&b| b == 0), "bytes outside written");
                let mut back = std::vec![0u8; len];
                r.read_bytes(off, &mut back).unwrap();
                assert_eq!(back, &src[..len]);
            }
        }
        assert!(r.write_bytes(60, &[0; 8]).is_err() && r.read_bytes(57, &mut [0; 8]).is_err());
    }

    #[test]
    fn typed_reads_see_little_endian_writes() {
        let r = HostRegion::new(64, 8).unwrap();
        let v32 = MmioView::whole(&r, Width::U32);
        v32.write(1, 0x1122_3344).unwrap();
        let v8 = v32.view(4, Some(4), Some(Width::U8)).unwrap();
        assert_eq!(v8.read(0).unwrap(), 0x44);
        assert_eq!(v8.read(3).unwrap(), 0x11);
        let v64 = MmioView::whole(&r, Width::U64);
        assert_eq!(v64.read(0).unwrap(), 0x1122_3344_0000_0000);
    }

    #[test]
    fn out_of_range_index_is_an_error() {
        let r = HostRegion::new(16, 8).unwrap();
        let v = MmioView::whole(&r, Width::U32);
        assert_eq!(v.len(), 4);
        assert!(v.read(3).is_ok());
        assert!(matches!(v.read(4), Err(Error::OutOfBounds { .. })));
        assert!(matches!(v.write(usize::MAX, 1), Err(Error::OutOfBounds { .. })));
    }

    #[test]
    fn views_must_lie_inside_their_parent() {
        let r = HostRegion::new(32, 8).unwrap();
        let v = MmioView::whole(&r, Width::U8);
        let sub = v.view(8, Some(8), None).unwrap();
        assert!(matches!(sub.view(4, Some(8), None), Err(Error::OutOfBounds { .. })));
        assert!(matches!(v.view(33, None, None), Err(Error::OutOfBounds { .. })));
        assert!(matches!(v.view(usize::MAX, Some(2), None), Err(Error::OutOfBounds { .. })));
        // a view of a view addresses the same bytes
        sub.write(0, 0xab).unwrap();
        assert_eq!(v.read(8).unwrap(), 0xab);
    }

    #[test]
    fn misaligned_access_is_refused() {
        let r = HostRegion::new(16, 8).unwrap();
        assert!(matches!(r.read(2, Width::U32), Err(Error::Misaligned { .. })));
        let v = MmioView::new(&r, 1, 8, Width::U8).unwrap();
        let w = v.view(0, None, Some(Width::U32)).unwrap();
        assert!(matches!(w.read(0), Err(Error::Misaligned { .. })));
    }

    #[test]
    fn bulk_copy_round_trips() {
        let r = HostRegion::new(64, 8).unwrap();
        let v = MmioView::whole(&r, Width::U32);
        let src: [u8; 16] = core::array::from_fn(|i| i as u8 * 3);
        v.copy_in(8, &src).unwrap();
        let mut dst = [0u8; 16];
        v.copy_out(8, &mut dst).unwrap();
        assert_eq!(src, dst);
        assert!(v.copy_in(60, &src).is_err());
        assert!(v.copy_in(2, &src[..4]).is_err());
    }

    #[test]
    fn sub_regions_stay_inside_their_window() {
        let r: alloc::sync::Arc<dyn MmioBus + Send + Sync> = alloc::sync::Arc::new(HostRegion::new(64, 8).unwrap());
        let w = SubRegion::new(r.clone(), 16, 16).unwrap();
        w.write(8, Width::U64, 0xabcd).unwrap();
        assert_eq!(r.read(24, Width::U64).unwrap(), 0xabcd);
        assert!(w.read(16, Width::U8).is_err());
        assert!(w.write_bytes(10, &[0; 7]).is_err());
        assert!(SubRegion::new(r, 60, 8).is_err());
    }

    #[test]
    fn bulk_bytes_are_bounds_checked() {
        let r = HostRegion::new(16, 8).unwrap();
        r.write_bytes(3, &[1, 2, 3]).unwrap();
        let mut out = [0u8; 5];
        r.read_bytes(2, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 0]);
        assert!(r.write_bytes(14, &[0; 3]).is_err());
        assert!(r.read_bytes(usize::MAX, &mut out).is_err());
    }

    #[test]
    fn writes_truncate_to_width() {
        let r = HostRegion::new(8, 8).unwrap();
        r.write(0, Width::U16, 0x1_2345).unwrap();
        assert_eq!(r.read(0, Width::U64).unwrap(), 0x2345);
    }
}
