//! [`HostAllocator`]: page-aligned host memory as device memory (`std`).

use super::{Allocator, BufferSpec, DeviceMemory};
use crate::error::{Error, Result};
use core::alloc::Layout;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use std::collections::BTreeMap;

/// Host pages handed out by [`HostAllocator`].
const PAGE: u64 = 4096;

/// Blocks at least this large are advised to be backed by transparent huge pages.
pub(crate) const HUGE_ADVICE_MIN: usize = 4 << 20;

/// Ask Linux to back the whole 2 MiB pages inside `[ptr, ptr + len)` with transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`; a no-op below `HUGE_ADVICE_MIN`, 4 MiB, elsewhere than Linux, under Miri,
/// or where the kernel has them off). Filling a large fresh block (a bundle read into memory, a buffer of
/// weights) then faults once per 2 MiB instead of once per 4 KiB page: loading a bundle with 50 MB
/// of weights spent ~15% of its CPU time in page-fault bookkeeping (`tools/bench_load.py`). Only
/// advice: the memory, its contents and every error path are the same with or without it.
pub fn advise_huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        const HUGE: usize = 2 << 20;
        if len < HUGE_ADVICE_MIN {
            return;
        }
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize).saturating_add(len) / HUGE * HUGE;
        if end > start {
            // SAFETY: `[start, end)` lies inside the caller's live allocation; MADV_HUGEPAGE
            // changes how the kernel backs those pages, never their contents or the mapping.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = (ptr, len);
}

/// Page-aligned, zeroed host memory: the backend of the CPU device (and of host-visible memory
/// in device simulations). The device address is the CPU address. Blocks of at least
/// `HUGE_ADVICE_MIN` (4 MiB) on Linux are anonymous mappings of their own (zero pages from the kernel,
/// advised to huge pages before anything touches them); the rest come from the global allocator.
/// A large block from the global allocator would be zeroed twice, page by page: `alloc_zeroed`
/// of a page-aligned layout is `memalign` + `memset`, and the `memset` faults in every 4 KiB page
/// before any advice can apply. A 50 MB bundle's weights spent a fifth of its load there.
///
/// Every block is zeroed, so `spec.zero` is always honoured; the other spec flags make no
/// difference to host memory. `spec.external` is refused ([`Error::Unsupported`]): wrapping a
/// foreign pointer cannot be made safe here. Sizes are rounded up to whole pages internally.
/// An optional byte limit ([`HostAllocator::with_limit`]) makes allocations fail with
/// [`Error::OutOfMemory`] beyond it, for testing out-of-memory paths. The allocator tracks its
/// live blocks and ignores (logs, leaks) a `free` of memory it did not make. Dropping the
/// allocator leaks blocks still handed out, so their handles stay valid.
#[derive(Debug, Default)]
pub struct HostAllocator {
    limit: Option<u64>,
    used: AtomicU64,
    live: spin::Mutex<BTreeMap<u64, Block>>,
}

/// How a live block was made, so that `free` returns it the same way.
#[derive(Debug, Clone, Copy)]
enum Block {
    /// From the global allocator with this layout.
    Heap(Layout),
    /// An anonymous mapping of this many bytes (a whole number of pages).
    #[cfg(all(target_os = "linux", not(miri)))]
    Mapped(usize),
}

impl Block {
    fn size(self) -> usize {
        match self {
            Block::Heap(l) => l.size(),
            #[cfg(all(target_os = "linux", not(miri)))]
            Block::Mapped(len) => len,
        }
    }
}

/// A fresh anonymous private mapping of `len` bytes (a whole number of pages), advised to huge
/// pages before its first touch; `None` when the kernel refuses it.
#[cfg(all(target_os = "linux", not(miri)))]
fn map_zeroed(len: usize) -> Option<NonNull<u8>> {
    // SAFETY: a new anonymous mapping at an address the kernel chooses: it overlaps nothing the
    // process uses, and its pages read as zero until written.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let p = NonNull::new(p.cast::<u8>())?;
    advise_huge_pages(p.as_ptr(), len);
    Some(p)
}

impl HostAllocator {
    /// An allocator limited only by the process heap.
    pub fn new() -> Self {
        Self::default()
    }

    /// An allocator that refuses to hold more than `limit` bytes (counted in whole pages).
    pub fn with_limit(limit: u64) -> Self {
        Self { limit: Some(limit), ..Self::default() }
    }

    /// Bytes currently allocated (in whole pages).
    pub fn allocated_bytes(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn reserve(&self, bytes: u64, requested: u64) -> Result<()> {
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            let next =
                cur.checked_add(bytes).ok_or(Error::InvalidArgument { what: "allocation size", value: requested })?;
            if let Some(limit) = self.limit
                && next > limit
            {
                return Err(Error::OutOfMemory { device: crate::error::device_name("host"), requested, used: cur });
            }
            match self.used.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Ok(()),
                Err(v) => cur = v,
            }
        }
    }
}

impl Allocator for HostAllocator {
    fn alloc(&self, size: u64, spec: &BufferSpec) -> Result<DeviceMemory> {
        if size == 0 {
            return Err(Error::InvalidArgument { what: "allocation size must be positive", value: 0 });
        }
        if let Some(ext) = spec.external {
            return Err(Error::Unsupported { what: "host allocator: external memory", value: ext });
        }
        let too_big = Error::InvalidArgument { what: "allocation size exceeds the address space", value: size };
        let rounded = size.checked_next_multiple_of(PAGE).ok_or(too_big.clone())?;
        let layout = usize::try_from(rounded)
            .ok()
            .and_then(|r| Layout::from_size_align(r, PAGE as usize).ok())
            .ok_or(too_big)?;
        self.reserve(rounded, size)?;
        #[cfg(all(target_os = "linux", not(miri)))]
        let (p, block) = match layout.size() >= HUGE_ADVICE_MIN {
            true => {
                (map_zeroed(layout.size()).map_or(core::ptr::null_mut(), NonNull::as_ptr), Block::Mapped(layout.size()))
            }
            // SAFETY: the layout has a non-zero size (`size > 0`, rounded up to a page).
            false => (unsafe { std::alloc::alloc_zeroed(layout) }, Block::Heap(layout)),
        };
        #[cfg(not(all(target_os = "linux", not(miri))))]
        // SAFETY: the layout has a non-zero size (`size > 0`, rounded up to a page).
        let (p, block) = (unsafe { std::alloc::alloc_zeroed(layout) }, Block::Heap(layout));
        let Some(ptr) = NonNull::new(p) else {
            self.used.fetch_sub(rounded, Ordering::Relaxed);
            return Err(Error::OutOfMemory {
                device: crate::error::device_name("host"),
                requested: size,
                used: self.allocated_bytes(),
            });
        };
        let addr = ptr.as_ptr() as u64;
        self.live.lock().insert(addr, block);
        // It is freed only in `free`, when this handle comes back, never on allocator drop.
        // SAFETY: `ptr` is a fresh zeroed block of `rounded >= size` bytes nothing references.
        Ok(unsafe { DeviceMemory::from_raw_parts(addr, size, Some(ptr)) })
    }

    fn free(&self, mem: DeviceMemory, _spec: &BufferSpec) {
        let Some(ptr) = mem.cpu_ptr() else {
            error!("host allocator: free of memory without a cpu pointer at {:#x}; ignored", mem.addr());
            return;
        };
        let block = self.live.lock().remove(&mem.addr());
        match block {
            Some(block) if ptr.as_ptr() as u64 == mem.addr() => {
                self.used.fetch_sub(block.size() as u64, Ordering::Relaxed);
                match block {
                    // SAFETY: `addr` was recorded by `alloc` with exactly this layout and removed
                    // from `live` just now, so it is freed once; the handle owning it is consumed.
                    Block::Heap(layout) => unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) },
                    #[cfg(all(target_os = "linux", not(miri)))]
                    Block::Mapped(len) => {
                        // SAFETY: `addr` is the start of a mapping of `len` bytes that `alloc`
                        // made and recorded, removed from `live` just now (unmapped once); the
                        // handle owning it is consumed, so nothing references it any more.
                        unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
                    }
                }
            }
            Some(block) => {
                // Not ours after all: put the record back and leak.
                self.live.lock().insert(mem.addr(), block);
                error!("host allocator: free of foreign memory at {:#x}; ignored", mem.addr());
            }
            None => error!("host allocator: free of unknown memory at {:#x}; ignored", mem.addr()),
        }
    }
}
