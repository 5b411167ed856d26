//! GPU memory as the simulated CP sees it.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use hcq::mmio::{MmioBus, Width};
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
}
