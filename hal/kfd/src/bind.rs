//! Caller memory bound zero-copy in place of a range of a backend buffer
//! ([`AmdBackend::bind_host`]): the caller's pages registered with KFD as a `USERPTR` buffer
//! object (tinygrad's `KFDIface.alloc(host=True, cpu_addr=...)`: its GPU address is its host
//! address, KFD's shared virtual address space), mapped on the GPU, and the kernel-argument
//! blocks of the launches that use the range rewritten to point into it.

use crate::AmdBackend;
use hcq::mmio::{MmioBus, Width};
use hcq::{Error, Result};
use hcq_amd::kfd::Kfd;
use hcq_amd::kfd::uapi::{
    AllocFlags, AllocMemoryOfGpuArgs, FreeMemoryOfGpuArgs, MapMemoryToGpuArgs, UnmapMemoryFromGpuArgs,
};
use std::sync::Arc;

/// The page size KFD registers user memory in.
const PAGE: u64 = 4096;

/// A `USERPTR` buffer object over the caller's pages: unmapped from the GPU and freed when
/// dropped (the pages stay the caller's: nothing is unmapped on the host).
pub(crate) struct UserPages {
    kfd: Arc<dyn Kfd>,
    gpu_id: u32,
    handle: u64,
}

impl UserPages {
    /// Register `[ptr, ptr + len)` (its pages) with KFD and map it on GPU `gpu_id`.
    fn register(kfd: &Arc<dyn Kfd>, gpu_id: u32, ptr: u64, len: u64) -> Result<UserPages> {
        let base = ptr & !(PAGE - 1);
        let size = ptr
            .checked_add(len)
            .and_then(|end| end.checked_next_multiple_of(PAGE))
            .map(|end| end - base)
            .ok_or(Error::InvalidArgument { what: "AMD bind: the range leaves the address space", value: ptr })?;
        // tinygrad's flags for host memory at a given CPU address: a public user pointer,
        // coherent and uncached
        let flags = AllocFlags::tinygrad(true, false, true) | AllocFlags::COHERENT | AllocFlags::UNCACHED;
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: base,
            size,
            gpu_id,
            flags: flags.bits(),
            mmap_offset: base,
            ..Default::default()
        };
        kfd.alloc_memory_of_gpu(&mut a)?;
        let pages = UserPages { kfd: kfd.clone(), gpu_id, handle: a.handle };
        let mut m = MapMemoryToGpuArgs { handle: a.handle, ..Default::default() };
        kfd.map_memory_to_gpu(&mut m, &[gpu_id])?;
        Ok(pages)
    }
}

impl Drop for UserPages {
    fn drop(&mut self) {
        let mut u = UnmapMemoryFromGpuArgs { handle: self.handle, ..Default::default() };
        // a buffer never mapped (its map failed) is refused here: nothing to undo
        let _ = self.kfd.unmap_memory_from_gpu(&mut u, &[self.gpu_id]);
        if let Err(e) = self.kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: self.handle }) {
            log::warn!("AMD: freeing user-pointer buffer {:#x}: {e}", self.handle);
        }
    }
}

/// A range of a backend buffer bound elsewhere.
pub(crate) struct Bound {
    /// The range in the backend's own memory.
    own: u64,
    len: u64,
    /// Where the launches point now.
    to: u64,
    /// The caller's pages, registered (`None`: bound back to its own memory).
    _pages: Option<UserPages>,
}

/// A kernel launch as recorded: where its argument block lies and the buffers it names.
pub(crate) struct Recorded {
    /// Kernel-argument chunk and offset.
    pub(crate) chunk: usize,
    pub(crate) off: u64,
    /// Each buffer argument's address and bytes (the block's first 8-byte words, in order).
    pub(crate) args: Vec<(u64, u64)>,
}

impl AmdBackend {
    /// Make the calls read and write the caller's memory at `ptr` (`len` bytes) in place of the
    /// device memory `[own, own + len)` (a model input bound zero-copy); a null `ptr` binds the
    /// range back to its own memory. The caller's pages (the page-aligned range around it) are
    /// registered with KFD as a `USERPTR` buffer object and mapped on the GPU, whose address for
    /// them is their host address, as tinygrad maps host memory. Waits for the calls in flight,
    /// then rewrites the buffer addresses in the argument block of every launch whose argument
    /// lies in the range (this allocates: binding is not the hot path); the previous
    /// registration of the range goes after the calls that used it. Refused, with nothing
    /// changed, when a copy launch touches the range (its SDMA addresses are fixed), a kernel
    /// argument reaches across its edge, or KFD refuses the pages (`EFAULT` for memory it cannot
    /// pin: on `AMD:SIM`, any memory but what the simulated KFD itself mapped with access).
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must stay allocated and valid for every read and write the kernels
    /// make through it, each time a call runs, until the range is bound elsewhere (or back) or
    /// the backend drops — both wait for the calls that use it — and no one else may write it
    /// while a call runs. KFD pins the pages while they are registered; the host must not unmap
    /// them meanwhile.
    pub unsafe fn bind_host(&mut self, own: u64, len: u64, ptr: *mut u8) -> Result<()> {
        if self.hcq.is_none() {
            return Err(Error::InvalidArgument { what: "AMD bind: before the load finished", value: 0 });
        }
        self.dev.check_process()?;
        let idx = self.binds.iter().position(|b| b.own == own && b.len == len);
        let cur = idx.map_or(own, |i| self.binds[i].to);
        let inside = |a: u64, n: u64| a >= cur && a.saturating_add(n) <= cur + len;
        let overlaps = |a: u64, n: u64| a < cur + len && cur < a.saturating_add(n.max(1));
        if self.copies.iter().any(|&(d, s, n)| overlaps(d, n) || overlaps(s, n)) {
            return Err(Error::Unsupported {
                what: "AMD bind: a copy launch touches the range (its SDMA addresses are fixed at the load)",
                value: own,
            });
        }
        if self.recorded.iter().any(|r| r.args.iter().any(|&(a, n)| overlaps(a, n) && !inside(a, n))) {
            return Err(Error::Unsupported {
                what: "AMD bind: a kernel argument reaches across the range's edge",
                value: own,
            });
        }
        self.settle()?;
        let (to, pages) = if ptr.is_null() {
            (own, None)
        } else {
            let p = ptr as u64;
            (p, Some(UserPages::register(&self.dev.kfd, self.dev.node.gpu_id, p, len)?))
        };
        for r in &mut self.recorded {
            let chunk = &self.kernargs[r.chunk];
            for (i, (a, n)) in r.args.iter_mut().enumerate() {
                if inside(*a, *n) {
                    let moved = *a - cur + to;
                    // CAST: an offset inside a 64 KiB chunk.
                    chunk.bus().write(r.off as usize + 8 * i, Width::U64, moved)?;
                    *a = moved;
                }
            }
        }
        let b = Bound { own, len, to, _pages: pages };
        match idx {
            // the old registration goes now: the calls that used it are done (settled above)
            Some(i) if ptr.is_null() => drop(self.binds.swap_remove(i)),
            Some(i) => self.binds[i] = b,
            None if ptr.is_null() => {}
            None => self.binds.push(b),
        }
        Ok(())
    }
}
