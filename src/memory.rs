//! TEMPORARY until the core-algo branch lands.
use crate::error::{Error, Result};
/// Bump allocator.
#[derive(Clone, Debug)]
pub struct BumpAllocator { size: u64, base: u64, wrap: bool, ptr: u64, wraps: u64 }
impl BumpAllocator {
    /// New.
    pub const fn new(size: u64, base: u64, wrap: bool) -> Self { Self { size, base, wrap, ptr: 0, wraps: 0 } }
    /// Alloc.
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64> {
        let align = align.max(1);
        if size > self.size { return Err(Error::OutOfSpace { what: "bump allocator", requested: size, capacity: self.size }); }
        let mut off = self.ptr.div_ceil(align) * align;
        if off + size > self.size { if !self.wrap { return Err(Error::OutOfSpace { what: "bump allocator", requested: size, capacity: self.size }); } self.wraps += 1; off = 0; }
        self.ptr = off + size; Ok(self.base + off)
    }
    /// Size.
    pub fn size(&self) -> u64 { self.size }
    /// Wraps.
    pub fn wraps(&self) -> u64 { self.wraps }
}
