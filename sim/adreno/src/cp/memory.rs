//! GPU memory as the simulated CP sees it.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use hcq::mmio::{MmioBus, VolatileRegion, Width};
use hcq::{Error, Result};

/// Word access to GPU virtual memory; an access outside every mapping is a fault (an error),
/// never a silent read of zeros.
pub trait GpuMemory {
    /// Read the dword at `addr` (4-byte aligned).
    fn read32(&self, addr: u64) -> Result<u32>;
    /// Write the dword at `addr` (4-byte aligned).
    fn write32(&mut self, addr: u64, value: u32) -> Result<()>;

    /// Read `out.len()` consecutive dwords from `addr` (a bulk form for state loads and IB
    /// payloads; implementations override it to look the mapping up once).
    fn read_words(&self, addr: u64, out: &mut [u32]) -> Result<()> {
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.read32(addr.wrapping_add(4 * i as u64))?;
        }
        Ok(())
    }

    /// Read `out.len()` bytes at `addr`, any alignment; every byte must be mapped (the access may
    /// span adjacent allocations). The default reads the dwords that cover the range.
    fn read_bytes(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        let (first, n) = dword_span(addr, out.len())?;
        for k in 0..n {
            let a = first + 4 * k;
            let w = self.read32(a)?.to_le_bytes();
            for (i, b) in w.iter().enumerate() {
                if let Some(o) = (a + i as u64).checked_sub(addr).and_then(|o| out.get_mut(o as usize)) {
                    *o = *b;
                }
            }
        }
        Ok(())
    }

    /// Write `data` at `addr`, any alignment, changing no other byte; every byte must be mapped,
    /// and nothing is written when one is not. The default checks the covering dwords, then
    /// merges the bytes into them.
    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        let (first, n) = dword_span(addr, data.len())?;
        for k in 0..n {
            self.read32(first + 4 * k)?;
        }
        for k in 0..n {
            let a = first + 4 * k;
            let mut w = self.read32(a)?.to_le_bytes();
            for (i, b) in w.iter_mut().enumerate() {
                if let Some(d) = (a + i as u64).checked_sub(addr).and_then(|o| data.get(o as usize)) {
                    *b = *d;
                }
            }
            self.write32(a, u32::from_le_bytes(w))?;
        }
        Ok(())
    }

    /// Direct read access to the allocation holding `addr`, when the memory has one there and
    /// can give it (`None` otherwise: then use [`GpuMemory::read_bytes`]). The shader core keeps
    /// the last span it used, so a work-group's loads do not look the allocation up each time.
    fn span(&self, _addr: u64) -> Option<Span<'_>> {
        None
    }

    /// This memory as one that threads may read at once, when it is (`None` by default): the
    /// shader core then runs a dispatch's work-groups on every core.
    fn as_sync(&self) -> Option<&(dyn GpuMemory + Sync)> {
        None
    }
}

/// The dwords covering `[addr, addr + len)`: the first one's address and their count.
fn dword_span(addr: u64, len: usize) -> Result<(u64, u64)> {
    let end = addr.checked_add(len as u64).ok_or(Error::OutOfBounds {
        what: "gpu access wraps around",
        offset: addr,
        len: len as u64,
        limit: 0,
    })?;
    let first = addr & !3;
    Ok((first, (end.div_ceil(4) * 4 - first) / 4))
}

/// One mapped allocation, readable directly (see [`GpuMemory::span`]): `base` is its GPU
/// address.
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    pub base: u64,
    bytes: SpanBytes<'a>,
}

#[derive(Clone, Copy, Debug)]
enum SpanBytes<'a> {
    /// Memory another agent may change: volatile accesses only.
    Volatile(&'a VolatileRegion),
    Plain(&'a [u8]),
}

impl<'a> Span<'a> {
    /// A span over a [`VolatileRegion`] (read with volatile loads).
    pub fn volatile(base: u64, region: &'a VolatileRegion) -> Self {
        Self { base, bytes: SpanBytes::Volatile(region) }
    }

    /// A span over ordinary bytes.
    pub fn plain(base: u64, bytes: &'a [u8]) -> Self {
        Self { base, bytes: SpanBytes::Plain(bytes) }
    }

    /// Its size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match self.bytes {
            SpanBytes::Volatile(r) => r.size(),
            SpanBytes::Plain(b) => b.len(),
        }
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Read `out.len()` bytes at byte `off` of the span (an error when not all inside it).
    #[inline]
    pub fn read(&self, off: u64, out: &mut [u8]) -> Result<()> {
        let oob = || Error::OutOfBounds { what: "gpu span read", offset: off, len: out.len() as u64, limit: 0 };
        let o = usize::try_from(off).map_err(|_| oob())?;
        match self.bytes {
            SpanBytes::Plain(b) => {
                let src = o.checked_add(out.len()).and_then(|e| b.get(o..e)).ok_or_else(oob)?;
                // Fixed-size copies for the common element sizes (no memcpy call).
                match (out.len(), src) {
                    (4, &[a, b, c, d]) => out.copy_from_slice(&[a, b, c, d]),
                    (2, &[a, b]) => out.copy_from_slice(&[a, b]),
                    _ => out.copy_from_slice(src),
                }
                Ok(())
            }
            SpanBytes::Volatile(r) => {
                // One aligned volatile load for the common element sizes.
                let w = match out.len() {
                    1 => Width::U8,
                    2 => Width::U16,
                    4 => Width::U32,
                    8 => Width::U64,
                    _ => return r.read_bytes(o, out),
                };
                if !o.is_multiple_of(out.len()) {
                    return r.read_bytes(o, out);
                }
                let v = r.read(o, w)?.to_le_bytes();
                out.copy_from_slice(&v[..out.len()]);
                Ok(())
            }
        }
    }
}

/// GPU memory made of separate allocations (what KGSL hands out), for tests and the sim.
#[derive(Clone, Debug, Default)]
pub struct SparseMemory {
    /// `(base, bytes)` sorted by base, non-overlapping.
    allocs: Vec<(u64, Vec<u8>)>,
}

impl SparseMemory {
    /// No allocations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Map `len` zeroed bytes at `base`; errors when it overlaps another allocation.
    pub fn map(&mut self, base: u64, len: usize) -> Result<()> {
        let end = base
            .checked_add(len as u64)
            .ok_or(Error::InvalidArgument { what: "sim memory: range overflows", value: base })?;
        if self.allocs.iter().any(|(b, v)| base < b + v.len() as u64 && *b < end) {
            return Err(Error::InvalidArgument { what: "sim memory: mapping overlaps another", value: base });
        }
        let at = self.allocs.partition_point(|(b, _)| *b < base);
        self.allocs.insert(at, (base, vec![0; len]));
        Ok(())
    }

    fn find(&self, addr: u64, len: u64) -> Result<(usize, usize)> {
        let i = self.allocs.partition_point(|(b, _)| *b <= addr);
        if i > 0 {
            let (b, v) = &self.allocs[i - 1];
            if addr.checked_add(len).is_some_and(|end| end <= b + v.len() as u64) {
                return Ok((i - 1, (addr - b) as usize));
            }
        }
        Err(Error::OutOfBounds { what: "gpu address outside every allocation (fault)", offset: addr, len, limit: 0 })
    }

    /// Copy `bytes` into memory at `addr`.
    pub fn write_bytes(&mut self, addr: u64, bytes: &[u8]) -> Result<()> {
        let (i, o) = self.find(addr, bytes.len() as u64)?;
        self.allocs[i].1[o..o + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// Copy memory at `addr` into `out`.
    pub fn read_bytes(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        let (i, o) = self.find(addr, out.len() as u64)?;
        out.copy_from_slice(&self.allocs[i].1[o..o + out.len()]);
        Ok(())
    }

    /// Write words at `addr`.
    pub fn write_words(&mut self, addr: u64, words: &[u32]) -> Result<()> {
        for (k, w) in words.iter().enumerate() {
            self.write32(addr.wrapping_add(4 * k as u64), *w)?;
        }
        Ok(())
    }

    /// Read a u64 at `addr`.
    pub fn read64(&self, addr: u64) -> Result<u64> {
        Ok(u64::from(self.read32(addr)?) | u64::from(self.read32(addr.wrapping_add(4))?) << 32)
    }

    /// Write a u64 at `addr`.
    pub fn write64(&mut self, addr: u64, v: u64) -> Result<()> {
        self.write32(addr, v as u32)?;
        self.write32(addr.wrapping_add(4), (v >> 32) as u32)
    }

    /// The allocations, `(base, bytes)`.
    pub fn allocations(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.allocs.iter().map(|(b, v)| (*b, v.as_slice()))
    }
}

impl GpuMemory for SparseMemory {
    fn read32(&self, addr: u64) -> Result<u32> {
        if !addr.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "gpu dword read", value: addr, align: 4 });
        }
        let (i, o) = self.find(addr, 4)?;
        let b = &self.allocs[i].1[o..o + 4];
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn write32(&mut self, addr: u64, value: u32) -> Result<()> {
        if !addr.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "gpu dword write", value: addr, align: 4 });
        }
        let (i, o) = self.find(addr, 4)?;
        self.allocs[i].1[o..o + 4].copy_from_slice(&value.to_le_bytes());
        Ok(())
    }

    fn read_words(&self, addr: u64, out: &mut [u32]) -> Result<()> {
        if !addr.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "gpu dword read", value: addr, align: 4 });
        }
        let (i, o) = self.find(addr, 4 * out.len() as u64)?;
        for (w, c) in out.iter_mut().zip(self.allocs[i].1[o..].chunks_exact(4)) {
            *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }

    fn read_bytes(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        let mut done = 0;
        while done < out.len() {
            let a = addr.checked_add(done as u64).ok_or(Error::OutOfBounds {
                what: "gpu access wraps around",
                offset: addr,
                len: out.len() as u64,
                limit: 0,
            })?;
            let (i, o) = self.find(a, 1)?;
            let src = &self.allocs[i].1[o..];
            let n = src.len().min(out.len() - done);
            out[done..done + n].copy_from_slice(&src[..n]);
            done += n;
        }
        Ok(())
    }

    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        let end = addr.checked_add(data.len() as u64).ok_or(Error::OutOfBounds {
            what: "gpu access wraps around",
            offset: addr,
            len: data.len() as u64,
            limit: 0,
        })?;
        // Every byte mapped before any is written: the first byte of each allocation crossed.
        let mut a = addr;
        while a < end {
            let (i, _) = self.find(a, 1)?;
            let (b, v) = &self.allocs[i];
            a = b + v.len() as u64;
        }
        let mut done = 0;
        while done < data.len() {
            let (i, o) = self.find(addr + done as u64, 1)?;
            let dst = &mut self.allocs[i].1[o..];
            let n = dst.len().min(data.len() - done);
            dst[..n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    fn span(&self, addr: u64) -> Option<Span<'_>> {
        let (i, _) = self.find(addr, 1).ok()?;
        let (b, v) = &self.allocs[i];
        Some(Span::plain(*b, v))
    }

    fn as_sync(&self) -> Option<&(dyn GpuMemory + Sync)> {
        Some(self)
    }
}

/// GPU memory made of windows onto [`MmioBus`]es: `(gpu base, bus)` pairs, each bus seen at its
/// base for its whole size. How a simulated CP reaches memory the host reaches through the
/// core's MMIO interface (a command ring, an RPTR shadow, signal pages in host memory).
/// Accesses are 32-bit bus accesses; one outside every window is a fault (an error).
#[derive(Clone, Default)]
pub struct BusMemory {
    windows: Vec<(u64, Arc<dyn MmioBus + Send + Sync>)>,
}

impl core::fmt::Debug for BusMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.windows.iter().map(|(b, bus)| (*b, bus.size()))).finish()
    }
}

impl BusMemory {
    /// No windows.
    pub fn new() -> Self {
        Self::default()
    }

    /// Show `bus` at GPU address `base`; errors when it overlaps another window.
    pub fn map(&mut self, base: u64, bus: Arc<dyn MmioBus + Send + Sync>) -> Result<()> {
        let end = base
            .checked_add(bus.size() as u64)
            .ok_or(Error::InvalidArgument { what: "sim memory: range overflows", value: base })?;
        if self.windows.iter().any(|(b, w)| base < b + w.size() as u64 && *b < end) {
            return Err(Error::InvalidArgument { what: "sim memory: window overlaps another", value: base });
        }
        self.windows.push((base, bus));
        Ok(())
    }

    fn find(&self, addr: u64) -> Result<(&(dyn MmioBus + Send + Sync), usize)> {
        if !addr.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "gpu dword access", value: addr, align: 4 });
        }
        for (b, bus) in &self.windows {
            if let Some(off) = addr.checked_sub(*b)
                && off + 4 <= bus.size() as u64
            {
                // CAST: `off < bus.size()`, a usize.
                return Ok((bus.as_ref(), off as usize));
            }
        }
        Err(Error::OutOfBounds { what: "gpu address outside every window (fault)", offset: addr, len: 4, limit: 0 })
    }
}

impl GpuMemory for BusMemory {
    fn read32(&self, addr: u64) -> Result<u32> {
        let (bus, off) = self.find(addr)?;
        // CAST: a 32-bit read.
        Ok(bus.read(off, Width::U32)? as u32)
    }

    fn write32(&mut self, addr: u64, value: u32) -> Result<()> {
        let (bus, off) = self.find(addr)?;
        bus.write(off, Width::U32, value.into())
    }

    fn as_sync(&self) -> Option<&(dyn GpuMemory + Sync)> {
        Some(self)
    }
}
