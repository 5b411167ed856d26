//! Device memory allocation: the [`Allocator`] contract, the caching [`LruAllocator`] every
//! device puts in front of its backend, and (with `std`) the page-aligned [`HostAllocator`].
//!
//! The model follows tinygrad's `Allocator`/`LRUAllocator`: an allocation is an owned
//! [`DeviceMemory`] handle (device address, size, optional CPU mapping) that goes back to the
//! allocator that made it. [`LruAllocator`] keeps freed blocks in a cache keyed by the exact
//! `(size, spec)` pair — no size bucketing — and hands them out again before asking the backend;
//! when the backend runs out of memory it frees the whole cache and retries exactly once.
//!
//! [`BufferSpec`], [`DeviceMemory`] and the [`Allocator`] trait need no heap; `LruAllocator`
//! needs the `alloc` feature and `HostAllocator` the `std` feature.
//!
//! Limits: the cache never shrinks on its own (only [`LruAllocator::free_cache`] and the
//! out-of-memory retry empty it), so workloads that allocate many distinct sizes hold memory
//! until then. Only allocations that go through an [`LruAllocator`] are counted in
//! [`LruAllocator::used_bytes`].

use crate::error::{Error, Result};
use crate::stamp::Stamp;
use core::ptr::NonNull;

/// How a buffer's memory must behave. Part of the allocator cache key: a cached block is only
/// reused for a request with exactly the same size and spec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferSpec {
    /// Uncached (write-combined) memory, for memory the host and device poll.
    pub uncached: bool,
    /// The host must be able to read and write the memory through a CPU mapping.
    pub cpu_access: bool,
    /// Host (system) memory rather than device-local memory.
    pub host: bool,
    /// Never park this block in the allocator cache: free it for real.
    pub nolru: bool,
    /// The memory must read as zero when handed out (so it is never served from the cache).
    pub zero: bool,
    /// Memory that already exists outside hcq at this address (the allocator wraps it instead of
    /// allocating, and never caches it). Backends that cannot import memory refuse it.
    pub external: Option<u64>,
}

impl BufferSpec {
    /// May a block with this spec be parked in an allocator cache on free?
    #[inline]
    pub const fn cacheable(&self) -> bool {
        !self.nolru && !self.zero && self.external.is_none()
    }
}

/// An owned handle to one live device allocation: its device address, its size and, when the
/// host can reach it, a CPU pointer to its first byte.
///
/// Only allocator implementations create these (through the unsafe
/// [`DeviceMemory::from_raw_parts`]), and the handle goes back to the allocator that made it
/// ([`Allocator::free`]). Dropping a handle without freeing it leaks the memory; it never frees
/// memory behind anyone's back. Host accesses through [`DeviceMemory::write_cpu`] and
/// [`DeviceMemory::read_cpu`] are bounds-checked and serialised per allocation.
#[derive(Debug)]
pub struct DeviceMemory {
    addr: u64,
    size: u64,
    cpu: Option<NonNull<u8>>,
    handle: u64,
    /// Serialises host copies through `cpu`, so safe callers on several threads cannot race.
    cpu_lock: spin::Mutex<()>,
}

// SAFETY: a `DeviceMemory` is an address range plus an optional pointer; it owns the allocation
// (the `from_raw_parts` contract) and is not tied to the thread that made it. Moving it to another
// thread moves only that ownership.
unsafe impl Send for DeviceMemory {}
// SAFETY: the only `&self` accesses to the memory behind `cpu` are `write_cpu` / `read_cpu`,
// which hold `cpu_lock` for the whole copy, so shared references on several threads never race.
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// Wrap a live allocation in a handle.
    ///
    /// # Safety
    /// `[addr, addr + size)` must be a live allocation that the returned handle owns until it is
    /// given back to the allocator that made it; nothing may free or reuse it before that. If
    /// `cpu` is `Some(p)`, `p` must point to the same `size` bytes as seen from the host, valid
    /// for reads and writes for as long as the allocation lives, and not accessed by other host
    /// code without synchronisation while the handle copies through it.
    #[inline]
    pub unsafe fn from_raw_parts(addr: u64, size: u64, cpu: Option<NonNull<u8>>) -> Self {
        Self { addr, size, cpu, handle: 0, cpu_lock: spin::Mutex::new(()) }
    }

    /// Like [`DeviceMemory::from_raw_parts`], with a backend-private `handle` (a driver object id,
    /// a mapping index) that the backend reads back when the memory is freed.
    ///
    /// # Safety
    /// As for [`DeviceMemory::from_raw_parts`].
    #[inline]
    pub unsafe fn from_raw_parts_with_handle(addr: u64, size: u64, cpu: Option<NonNull<u8>>, handle: u64) -> Self {
        Self { addr, size, cpu, handle, cpu_lock: spin::Mutex::new(()) }
    }

    /// The device address of the first byte.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Size of the allocation in bytes.
    #[inline]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The host pointer to the first byte, when the host can reach the memory.
    #[inline]
    pub fn cpu_ptr(&self) -> Option<NonNull<u8>> {
        self.cpu
    }

    /// The backend-private handle given at creation (0 when none was given).
    #[inline]
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// Check that `[offset, offset + len)` lies inside the allocation.
    #[inline]
    pub fn check_range(&self, what: &'static str, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::OutOfBounds { what, offset, len, limit: self.size }),
        }
    }

    /// Copy `src` into the allocation at byte `offset` through the CPU mapping.
    ///
    /// Errors: [`Error::OutOfBounds`] when the range does not fit, [`Error::Unsupported`] when
    /// the memory has no CPU mapping.
    pub fn write_cpu(&self, offset: u64, src: &[u8]) -> Result<()> {
        let len = src.len() as u64;
        let start = self.cpu_range("device memory write", offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let _guard = self.cpu_lock.lock();
        // `start` is `offset` bytes into the mapping and `offset + len <= size` (`cpu_range`), so
        // the destination is valid for `len` bytes (the `from_raw_parts` contract).
        // SAFETY: as above; `src` is a distinct slice and the lock excludes other copies.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), start.as_ptr(), src.len()) };
        Ok(())
    }

    /// Copy from the allocation at byte `offset` into `dst` through the CPU mapping.
    ///
    /// Errors: as for [`DeviceMemory::write_cpu`].
    pub fn read_cpu(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let len = dst.len() as u64;
        let start = self.cpu_range("device memory read", offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let _guard = self.cpu_lock.lock();
        // SAFETY: as in `write_cpu`: the source range is inside the live CPU mapping, `dst` is a
        // distinct exclusive slice of `len` bytes, and the lock excludes concurrent copies.
        unsafe { core::ptr::copy_nonoverlapping(start.as_ptr(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// The CPU pointer to byte `offset`, after checking `[offset, offset + len)` is in range.
    fn cpu_range(&self, what: &'static str, offset: u64, len: u64) -> Result<NonNull<u8>> {
        self.check_range(what, offset, len)?;
        let base = self
            .cpu
            .ok_or(Error::Unsupported { what: "cpu access to memory without a cpu mapping", value: self.addr })?;
        let off = usize::try_from(offset).map_err(|_| Error::OutOfBounds { what, offset, len, limit: self.size })?;
        // SAFETY: `offset <= size` (checked above) and the mapping covers `size` bytes, so the
        // result stays inside (or one past the end of) the same allocation.
        Ok(unsafe { base.add(off) })
    }
}

/// A device memory allocator: the backend half of a device's memory management.
///
/// Who calls what: [`LruAllocator`] calls `alloc`/`free` on its backend; buffers call
/// `copy_in`/`copy_out`/`map`/`offset` on their device's [`LruAllocator`], which delegates to the
/// backend. Every method takes `&self`; implementations synchronise internally.
///
/// Contract:
/// - `alloc(size, spec)` returns a [`DeviceMemory`] of exactly `size` bytes (a backend that rounds
///   up keeps the rounding to itself), zeroed when `spec.zero` is set. Errors:
///   [`Error::InvalidArgument`] for a zero size or a spec the backend cannot honour in
///   principle, [`Error::Unsupported`] for a spec feature it does not implement (e.g.
///   `external`), and [`Error::OutOfMemory`], [`Error::OutOfSpace`] or [`Error::Os`] when the
///   memory is exhausted right now — only these three make [`LruAllocator`] free its cache and
///   retry.
/// - `free(mem, spec)` gives back memory this allocator made, with the spec it was allocated
///   with. It cannot fail: a backend that meets a handle it does not own, or a driver error,
///   logs it and leaks rather than corrupting memory.
/// - `copy_in`/`copy_out` move host bytes in or out at `offset` bytes into `mem`:
///   [`Error::OutOfBounds`] when the range does not fit, [`Error::Unsupported`] when the backend
///   cannot reach the memory from the host. Backends of asynchronous devices wait for the device
///   to be idle first. The defaults copy through the CPU mapping.
/// - `map(mem)` is the address the device uses for `mem` (default: [`DeviceMemory::addr`]);
///   `offset(mem, offset, size)` is the device address of a sub-range, bounds-checked.
pub trait Allocator: Send + Sync {
    /// Allocate `size` bytes honouring `spec`.
    fn alloc(&self, size: u64, spec: &BufferSpec) -> Result<DeviceMemory>;

    /// Give `mem` back for real (no caching at this level).
    fn free(&self, mem: DeviceMemory, spec: &BufferSpec);

    /// Copy `src` into `dst` at byte `offset`.
    fn copy_in(&self, dst: &DeviceMemory, offset: u64, src: &[u8]) -> Result<()> {
        dst.write_cpu(offset, src)
    }

    /// Copy from `src` at byte `offset` into `dst`.
    fn copy_out(&self, dst: &mut [u8], src: &DeviceMemory, offset: u64) -> Result<()> {
        src.read_cpu(offset, dst)
    }

    /// The address this device uses for `mem`.
    fn map(&self, mem: &DeviceMemory) -> Result<u64> {
        Ok(mem.addr())
    }

    /// The device address of the `size` bytes at `offset` inside `mem`.
    fn offset(&self, mem: &DeviceMemory, offset: u64, size: u64) -> Result<u64> {
        mem.check_range("device memory offset", offset, size)?;
        let base = self.map(mem)?;
        base.checked_add(offset).ok_or(Error::OutOfBounds {
            what: "device address",
            offset,
            len: size,
            limit: mem.size(),
        })
    }
}

/// Shows an [`Error`] through either logging back end (`Error` has no `defmt::Format`).
#[cfg(feature = "alloc")]
pub(crate) struct Shown<'a>(pub(crate) &'a Error);

#[cfg(feature = "alloc")]
impl core::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self.0, f)
    }
}

#[cfg(all(feature = "alloc", feature = "defmt"))]
impl defmt::Format for Shown<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", defmt::Display2Format(self.0))
    }
}

/// Errors that mean "no memory right now": worth freeing the cache and retrying.
#[cfg(feature = "alloc")]
fn is_exhaustion(e: &Error) -> bool {
    matches!(e.root(), Error::OutOfMemory { .. } | Error::OutOfSpace { .. } | Error::Os { .. })
}

/// What a deferred free needs from a device: whether its timeline has passed a [`Stamp`], and a
/// way to wait until it has. Implemented by [`crate::engine::Engine`] (the device's timeline and wait
/// hooks); a backend hands its own to [`LruAllocator::attach_completion`].
pub trait Completion: Send + Sync {
    /// True once the device has finished everything up to `stamp`.
    fn passed(&self, stamp: Stamp) -> bool;
    /// Wait until [`Completion::passed`] holds (a timeout or a device fault is an error).
    fn wait(&self, stamp: Stamp) -> Result<()>;
}

#[cfg(feature = "alloc")]
pub use lru::{LruAllocator, MAX_PENDING_FREES};

#[cfg(feature = "alloc")]
mod lru;

#[cfg(feature = "std")]
pub use host::HostAllocator;
#[cfg(feature = "std")]
pub use host::advise_huge_pages;

#[cfg(feature = "std")]
mod host;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;
    use alloc::vec::Vec;
    use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    /// A fake device heap: hands out increasing addresses from a fixed budget, with host-backed
    /// storage so copies work. Counts calls so tests can see what reached the backend.
    pub(crate) struct FakeAllocator {
        pub capacity: u64,
        pub used: AtomicU64,
        pub next: AtomicU64,
        pub allocs: AtomicUsize,
        pub frees: AtomicUsize,
        pub blocks: spin::Mutex<Vec<(u64, Block)>>,
    }

    /// Host storage behind one fake allocation, owned as a raw pointer so handing out pointers
    /// into it stays valid under Miri's aliasing rules.
    pub(crate) struct Block(NonNull<[u8]>);
    // SAFETY: the block is plain heap memory owned by the fake allocator's list.
    unsafe impl Send for Block {}

    impl Drop for Block {
        fn drop(&mut self) {
            // SAFETY: made by `Box::into_raw` in `FakeAllocator::alloc` and dropped once.
            drop(unsafe { Box::from_raw(self.0.as_ptr()) });
        }
    }

    impl FakeAllocator {
        pub(crate) fn new(capacity: u64) -> Self {
            Self {
                capacity,
                used: AtomicU64::new(0),
                next: AtomicU64::new(0x1000),
                allocs: AtomicUsize::new(0),
                frees: AtomicUsize::new(0),
                blocks: spin::Mutex::new(Vec::new()),
            }
        }
    }

    impl Allocator for FakeAllocator {
        fn alloc(&self, size: u64, _spec: &BufferSpec) -> Result<DeviceMemory> {
            let used = self.used.load(Ordering::Relaxed);
            if used + size > self.capacity {
                return Err(Error::OutOfSpace { what: "fake heap", requested: size, capacity: self.capacity });
            }
            self.used.fetch_add(size, Ordering::Relaxed);
            self.allocs.fetch_add(1, Ordering::Relaxed);
            let addr = self.next.fetch_add(size.next_multiple_of(0x100), Ordering::Relaxed);
            let storage = NonNull::from(Box::leak(vec![0u8; size as usize].into_boxed_slice()));
            let cpu = Some(storage.cast::<u8>());
            self.blocks.lock().push((addr, Block(storage)));
            // SAFETY: the storage lives in `blocks` until `free` removes it.
            Ok(unsafe { DeviceMemory::from_raw_parts(addr, size, cpu) })
        }

        fn free(&self, mem: DeviceMemory, _spec: &BufferSpec) {
            self.frees.fetch_add(1, Ordering::Relaxed);
            self.used.fetch_sub(mem.size(), Ordering::Relaxed);
            self.blocks.lock().retain(|(a, _)| *a != mem.addr());
        }
    }

    /// A shared handle to a [`FakeAllocator`], so tests keep watching it after handing it over.
    pub(crate) struct Shared(pub alloc::sync::Arc<FakeAllocator>);

    impl Allocator for Shared {
        fn alloc(&self, size: u64, spec: &BufferSpec) -> Result<DeviceMemory> {
            self.0.alloc(size, spec)
        }
        fn free(&self, mem: DeviceMemory, spec: &BufferSpec) {
            self.0.free(mem, spec)
        }
    }

    /// An LRU over a fresh fake heap of `capacity` bytes, and the heap.
    pub(crate) fn lru(capacity: u64) -> (LruAllocator, alloc::sync::Arc<FakeAllocator>) {
        let heap = alloc::sync::Arc::new(FakeAllocator::new(capacity));
        (LruAllocator::new("FAKE:1", Box::new(Shared(heap.clone()))), heap)
    }

    #[test]
    fn spec_cacheability() {
        assert!(BufferSpec::default().cacheable());
        assert!(!BufferSpec { nolru: true, ..Default::default() }.cacheable());
        assert!(!BufferSpec { zero: true, ..Default::default() }.cacheable());
        assert!(!BufferSpec { external: Some(0x1000), ..Default::default() }.cacheable());
        assert!(BufferSpec { host: true, cpu_access: true, uncached: true, ..Default::default() }.cacheable());
    }

    #[test]
    fn cache_hit_returns_the_same_block_without_the_backend() {
        let (a, heap) = lru(1 << 20);
        let spec = BufferSpec::default();
        let m = a.alloc(256, &spec).unwrap();
        let addr = m.addr();
        a.free(m, &spec);
        assert_eq!(a.cached_bytes(), 256);
        assert_eq!(a.used_bytes(), 0);
        let m2 = a.alloc(256, &spec).unwrap();
        assert_eq!(m2.addr(), addr, "a cached block of the same size and spec is reused");
        assert_eq!(heap.allocs.load(Ordering::Relaxed), 1);
        assert_eq!(a.cached_bytes(), 0);
        assert_eq!(a.used_bytes(), 256);
        // A different size or spec misses the cache.
        a.free(m2, &spec);
        let m3 = a.alloc(128, &spec).unwrap();
        let m4 = a.alloc(256, &BufferSpec { host: true, ..spec }).unwrap();
        assert_ne!(m3.addr(), addr);
        assert_ne!(m4.addr(), addr);
        assert_eq!(heap.allocs.load(Ordering::Relaxed), 3);
        a.free(m3, &spec);
        a.free(m4, &BufferSpec { host: true, ..spec });
    }

    #[test]
    fn nolru_zero_and_external_bypass_the_cache() {
        let (a, heap) = lru(1 << 20);
        for spec in [
            BufferSpec { nolru: true, ..Default::default() },
            BufferSpec { zero: true, ..Default::default() },
            BufferSpec { external: Some(0xdead_0000), ..Default::default() },
        ] {
            let before = heap.frees.load(Ordering::Relaxed);
            let m = a.alloc(64, &spec).unwrap();
            let addr = m.addr();
            a.free(m, &spec);
            assert_eq!(heap.frees.load(Ordering::Relaxed), before + 1, "{spec:?} is freed for real");
            assert_eq!(a.cached_bytes(), 0);
            let m = a.alloc(64, &spec).unwrap();
            assert_ne!(m.addr(), addr, "{spec:?} never comes from the cache");
            a.free(m, &spec);
        }
    }

    #[test]
    fn oom_frees_the_cache_and_retries_once() {
        let (a, heap) = lru(1024);
        let spec = BufferSpec::default();
        let m1 = a.alloc(512, &spec).unwrap();
        let m2 = a.alloc(512, &spec).unwrap();
        a.free(m1, &spec);
        a.free(m2, &spec);
        assert_eq!(a.cached_bytes(), 1024);
        // The heap is full of cached 512-byte blocks: a 1024-byte request must free them.
        let big = a.alloc(1024, &spec).unwrap();
        assert_eq!(a.cached_bytes(), 0);
        assert_eq!(heap.frees.load(Ordering::Relaxed), 2);
        assert_eq!(a.used_bytes(), 1024);
        // Now nothing is cached and the heap is full: the final error names device, size, usage.
        let err = a.alloc(64, &spec).unwrap_err();
        assert_eq!(err, Error::OutOfMemory { device: crate::error::device_name("FAKE:1"), requested: 64, used: 1024 });
        let msg = alloc::string::ToString::to_string(&err);
        assert!(msg.contains("FAKE:1") && msg.contains("64") && msg.contains("1024"), "{msg}");
        a.free(big, &spec);
        assert_eq!(a.used_bytes(), 0);
    }

    #[test]
    fn non_exhaustion_errors_pass_through_without_freeing_the_cache() {
        let (a, heap) = lru(1024);
        let spec = BufferSpec::default();
        let m = a.alloc(100, &spec).unwrap();
        a.free(m, &spec);
        assert!(matches!(a.alloc(0, &spec), Err(Error::InvalidArgument { .. })));
        assert_eq!(a.cached_bytes(), 100, "a bad request does not empty the cache");
        assert_eq!(heap.frees.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn lru_delegates_copies_and_bounds_checks() {
        let (a, _heap) = lru(1 << 16);
        let spec = BufferSpec::default();
        let m = a.alloc(16, &spec).unwrap();
        a.copy_in(&m, 4, &[1, 2, 3, 4]).unwrap();
        let mut out = [0u8; 8];
        a.copy_out(&mut out, &m, 0).unwrap();
        assert_eq!(out, [0, 0, 0, 0, 1, 2, 3, 4]);
        assert!(matches!(a.copy_in(&m, 14, &[0; 4]), Err(Error::OutOfBounds { offset: 14, len: 4, limit: 16, .. })));
        assert!(matches!(a.copy_out(&mut out, &m, u64::MAX), Err(Error::OutOfBounds { .. })));
        assert_eq!(a.offset(&m, 8, 8).unwrap(), m.addr() + 8);
        assert!(matches!(a.offset(&m, 8, 9), Err(Error::OutOfBounds { .. })));
        a.free(m, &spec);
    }

    #[test]
    fn memory_without_cpu_mapping_refuses_host_copies() {
        // SAFETY: the handle is never freed through an allocator and has no CPU pointer.
        let m = unsafe { DeviceMemory::from_raw_parts(0x8000, 64, None) };
        assert!(matches!(m.write_cpu(0, &[1]), Err(Error::Unsupported { .. })));
        let mut b = [0u8; 1];
        assert!(matches!(m.read_cpu(0, &mut b), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn free_cache_and_drop_give_cached_blocks_back() {
        let (a, heap) = lru(1 << 16);
        let spec = BufferSpec::default();
        let m1 = a.alloc(32, &spec).unwrap();
        let m2 = a.alloc(64, &spec).unwrap();
        a.free(m1, &spec);
        a.free_cache();
        assert_eq!(heap.frees.load(Ordering::Relaxed), 1);
        assert_eq!(a.cached_bytes(), 0);
        a.free(m2, &spec);
        assert_eq!(heap.used.load(Ordering::Relaxed), 64, "the cached block still holds backend memory");
        drop(a);
        assert_eq!(heap.frees.load(Ordering::Relaxed), 2);
        assert_eq!(heap.used.load(Ordering::Relaxed), 0, "dropping the LRU frees its cache");
    }

    #[cfg(feature = "std")]
    #[test]
    fn host_allocator_gives_zeroed_pages_and_honours_its_limit() {
        let h = HostAllocator::with_limit(2 * 4096);
        let spec = BufferSpec { zero: true, ..Default::default() };
        let m = h.alloc(100, &spec).unwrap();
        assert_eq!(m.addr() % 4096, 0);
        assert_eq!(m.cpu_ptr().unwrap().as_ptr() as u64, m.addr());
        let mut buf = [0xffu8; 100];
        h.copy_out(&mut buf, &m, 0).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        let m2 = h.alloc(4096, &spec).unwrap();
        assert_eq!(h.allocated_bytes(), 8192);
        assert!(matches!(h.alloc(1, &spec), Err(Error::OutOfMemory { requested: 1, used: 8192, .. })));
        h.free(m, &spec);
        let m3 = h.alloc(1, &spec).unwrap();
        h.free(m2, &spec);
        h.free(m3, &spec);
        assert_eq!(h.allocated_bytes(), 0);
        assert!(matches!(h.alloc(8, &BufferSpec { external: Some(0x1000), ..spec }), Err(Error::Unsupported { .. })));
    }

    /// Blocks of at least `HUGE_ADVICE_MIN` (a mapping of their own on Linux) are zeroed,
    /// page-aligned, counted and freed like small ones, and a block made after one was written
    /// and freed reads as zero again.
    #[cfg(feature = "std")]
    #[test]
    fn host_allocator_large_blocks_are_zeroed_counted_and_freed() {
        let h = HostAllocator::new();
        let spec = BufferSpec { zero: true, ..Default::default() };
        let size = host::HUGE_ADVICE_MIN as u64 + 100;
        for round in 0..2 {
            let m = h.alloc(size, &spec).unwrap();
            assert_eq!(m.addr() % 4096, 0);
            assert_eq!(h.allocated_bytes(), size.next_multiple_of(4096));
            let mut buf = vec![0xffu8; 4096];
            for at in [0, size / 2, size - 4096] {
                h.copy_out(&mut buf, &m, at).unwrap();
                assert!(buf.iter().all(|&b| b == 0), "round {round}: a fresh block reads zero at {at}");
            }
            h.copy_in(&m, 0, &vec![0x5a; size as usize]).unwrap();
            h.copy_out(&mut buf, &m, size - 4096).unwrap();
            assert!(buf.iter().all(|&b| b == 0x5a));
            h.free(m, &spec);
            assert_eq!(h.allocated_bytes(), 0);
        }
    }

    #[cfg(feature = "std")]
    #[test]
    fn host_allocator_ignores_foreign_memory() {
        let h = HostAllocator::new();
        let mut backing = [0u8; 16];
        // SAFETY: `backing` outlives the handle; the host allocator must refuse to free it.
        let foreign = unsafe {
            DeviceMemory::from_raw_parts(backing.as_mut_ptr() as u64, 16, NonNull::new(backing.as_mut_ptr()))
        };
        h.free(foreign, &BufferSpec::default());
        assert_eq!(h.allocated_bytes(), 0);
    }

    #[cfg(feature = "std")]
    #[test]
    fn lru_over_host_reports_oom_with_device_name() {
        let a = LruAllocator::new("CPU", Box::new(HostAllocator::with_limit(4096)));
        let spec = BufferSpec::default();
        let m = a.alloc(4096, &spec).unwrap();
        let e = a.alloc(4096, &spec).unwrap_err();
        assert_eq!(e, Error::OutOfMemory { device: crate::error::device_name("CPU"), requested: 4096, used: 4096 });
        a.free(m, &spec);
        // The cached page is reclaimed for a different size.
        let m = a.alloc(2048, &spec).unwrap();
        a.free(m, &spec);
    }

    /// A device timeline for deferred frees: `done` is what the device has passed; a wait
    /// finishes the device up to the awaited stamp (or fails when `hung`).
    #[derive(Default)]
    pub(crate) struct FakeTimeline {
        pub done: AtomicU64,
        pub waits: AtomicUsize,
        pub hung: core::sync::atomic::AtomicBool,
    }

    impl Completion for FakeTimeline {
        fn passed(&self, stamp: Stamp) -> bool {
            self.done.load(Ordering::Acquire) >= stamp.get()
        }
        fn wait(&self, stamp: Stamp) -> Result<()> {
            self.waits.fetch_add(1, Ordering::Relaxed);
            if self.hung.load(Ordering::Acquire) {
                return Err(Error::Timeout {
                    device: crate::error::device_name("FAKE:1"),
                    awaited: stamp.get(),
                    last: 0,
                    timeout_ms: 1,
                });
            }
            self.done.fetch_max(stamp.get(), Ordering::AcqRel);
            Ok(())
        }
    }

    fn deferred(capacity: u64) -> (LruAllocator, alloc::sync::Arc<FakeAllocator>, alloc::sync::Arc<FakeTimeline>) {
        let (a, heap) = lru(capacity);
        let tl = alloc::sync::Arc::new(FakeTimeline::default());
        a.attach_completion(tl.clone());
        (a, heap, tl)
    }

    #[test]
    fn a_block_freed_after_a_stamp_returns_only_once_the_device_passes_it() {
        let (a, _heap, tl) = deferred(1 << 16);
        let spec = BufferSpec::default();
        let m = a.alloc(256, &spec).unwrap();
        let addr = m.addr();
        tl.done.store(4, Ordering::Release);
        assert!(a.free_after(m, &spec, Stamp::new(5)).is_ok());
        assert_eq!((a.pending_frees(), a.pending_bytes(), a.cached_bytes()), (1, 256, 0));
        assert_eq!(a.used_bytes(), 256, "the device may still use it");
        let other = a.alloc(256, &spec).unwrap();
        assert_ne!(other.addr(), addr, "a block in flight is never handed out");
        assert_eq!(a.retire(), 0);
        tl.done.store(5, Ordering::Release);
        let again = a.alloc(256, &spec).unwrap();
        assert_eq!(again.addr(), addr, "retired on the next use of the allocator, then reused");
        assert_eq!(a.pending_frees(), 0);
        assert_eq!(tl.waits.load(Ordering::Relaxed), 0, "nothing waited");
        // a passed or zero stamp frees at once
        assert!(a.free_after(again, &spec, Stamp::new(3)).is_ok());
        assert!(a.free_after(other, &spec, Stamp::ZERO).is_ok());
        assert_eq!((a.pending_frees(), a.cached_bytes()), (0, 512));
    }

    #[test]
    fn a_full_pending_list_waits_for_its_oldest_block() {
        let (a, heap, tl) = deferred(1 << 20);
        let spec = BufferSpec { nolru: true, ..Default::default() };
        for i in 0..MAX_PENDING_FREES as u64 {
            let m = a.alloc(64, &spec).unwrap();
            assert!(a.free_after(m, &spec, Stamp::new(i + 1)).is_ok());
        }
        assert_eq!(a.pending_frees(), MAX_PENDING_FREES);
        assert_eq!(heap.frees.load(Ordering::Relaxed), 0);
        let m = a.alloc(64, &spec).unwrap();
        assert!(a.free_after(m, &spec, Stamp::new(1000)).is_ok());
        assert_eq!(tl.waits.load(Ordering::Relaxed), 1, "one wait, for the oldest");
        assert_eq!(tl.done.load(Ordering::Relaxed), 1);
        assert_eq!(heap.frees.load(Ordering::Relaxed), 1);
        assert_eq!(a.pending_frees(), MAX_PENDING_FREES, "bounded");
        a.drain_pending();
        assert_eq!(heap.frees.load(Ordering::Relaxed), MAX_PENDING_FREES + 1);
        assert_eq!((a.pending_frees(), a.used_bytes()), (0, 0));
    }

    #[test]
    fn out_of_memory_waits_for_pending_blocks_before_failing() {
        let (a, _heap, tl) = deferred(1024);
        let spec = BufferSpec::default();
        let m = a.alloc(1024, &spec).unwrap();
        assert!(a.free_after(m, &spec, Stamp::new(9)).is_ok());
        let m = a.alloc(512, &spec).unwrap();
        assert_eq!(tl.done.load(Ordering::Relaxed), 9, "waited for the device, then reused the memory");
        a.free(m, &spec);
    }

    #[test]
    fn a_block_whose_wait_fails_is_leaked_never_reused() {
        let (a, heap, tl) = deferred(1 << 16);
        let spec = BufferSpec::default();
        let m = a.alloc(128, &spec).unwrap();
        assert!(a.free_after(m, &spec, Stamp::new(2)).is_ok());
        tl.hung.store(true, Ordering::Release);
        a.drain_pending();
        assert_eq!((a.pending_frees(), a.cached_bytes()), (0, 0));
        assert_eq!(heap.frees.load(Ordering::Relaxed), 0, "the backend never got it back");
        // and at teardown, a block the device has not passed is not freed either
        let m = a.alloc(128, &spec).unwrap();
        assert!(a.free_after(m, &spec, Stamp::new(3)).is_ok());
        drop(a);
        assert_eq!(heap.frees.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn without_a_completion_source_a_stamped_free_comes_back() {
        let (a, _heap) = lru(1 << 16);
        let spec = BufferSpec::default();
        let m = a.alloc(64, &spec).unwrap();
        let m = a.free_after(m, &spec, Stamp::new(1)).unwrap_err();
        a.free(m, &spec);
        assert_eq!(a.cached_bytes(), 64);
    }
}
