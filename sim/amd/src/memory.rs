//! The simulated GPU's virtual memory: allocations at GPU virtual addresses, each backed by host
//! memory, shared by the command processors, the shader core's threads and the host.
//!
//! # Shape
//!
//! As KFD hands memory out (`AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`, then `MAP_MEMORY_TO_GPU`): an
//! allocation reserves `[va, va + size)` ([`GpuMemory::allocate`], at the caller's address or one
//! the allocator picks), the GPU reaches it only while it is mapped ([`GpuMemory::map`],
//! [`GpuMemory::unmap`]), and the host reaches it whenever it exists (its CPU mapping:
//! [`GpuMemory::host_read`], [`GpuMemory::host_write`]). A GPU access outside every mapped
//! allocation is a [`MemFault`] naming the first byte that is not mapped — never a silent zero;
//! a write that faults writes nothing.
//!
//! # Concurrency
//!
//! The CP may run on its own thread while the host writes buffers, and a dispatch's work-groups
//! run on several threads at once, so memory is shared:
//!
//! - Every allocation is an `Arc` of `AtomicU32` words: a boxed slice of its own, or a range of
//!   [`HostPages`] it adopted ([`GpuMemory::adopt`]: host memory the host also reaches at the same
//!   address, as under KFD). Dword accesses are single
//!   atomic loads and stores (acquire / release, so a write the host makes before it rings a
//!   doorbell is seen by the CP, and a signal the CP writes after a dispatch orders the dispatch's
//!   results before it); a byte or short store is a compare-and-swap of its word, so threads
//!   writing neighbouring bytes never lose each other's bytes. No lock is taken per access and no
//!   `unsafe` is needed.
//! - A 64-bit access is two dword accesses, low dword first: a reader racing a writer may see one
//!   half old and one new (as two dword writes on the GPU would show). tinygrad's protocols do not
//!   race 64-bit values (its signals are written as 32-bit low words; timestamps are read after
//!   the signal that follows them).
//! - The address map is an immutable snapshot (`Arc<Space>`) behind a `RwLock`: allocate, map,
//!   unmap and free build a new snapshot; accesses take the current one ([`GpuMemory::view`]) and
//!   keep it for a packet or a whole dispatch. An allocation freed while a dispatch holds a view
//!   stays alive (and reachable by that dispatch) until the view drops, as a page stays in a
//!   GPU's TLB until its flush; the next view no longer has it.

mod bulk;

pub use bulk::{COPY_CHUNK_BYTES, SPREAD_CHUNK_BYTES, SPREAD_MIN_BYTES};
use hcq_rdna3::exec::Memory;
use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// Page size: allocations start on a page and are placed a page apart by the allocator.
pub const PAGE: u64 = 4096;
/// GPU virtual addresses are 48 bits on gfx11 (GPUVM's four-level page table).
pub const VA_LIMIT: u64 = 1 << 48;
/// Where the allocator starts looking when the caller does not choose an address.
pub const AUTO_VA_BASE: u64 = 0x2000_0000_0000;
/// Default limit on the bytes all allocations together may take (host memory backs them).
pub const DEFAULT_LIMIT: u64 = 4 << 30;

/// Why an allocation call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemError {
    /// The address is not page-aligned.
    Misaligned {
        /// The address asked for.
        va: u64,
    },
    /// A zero-byte allocation.
    Empty {
        /// The address asked for (0: the allocator's choice).
        va: u64,
    },
    /// The range runs into the null page or past the 48-bit address space.
    OutOfRange {
        /// Start.
        va: u64,
        /// Bytes.
        size: u64,
    },
    /// The range overlaps an allocation.
    Overlap {
        /// Start asked for.
        va: u64,
        /// Bytes asked for.
        size: u64,
        /// The allocation it overlaps.
        other: u64,
        /// That allocation's size.
        other_size: u64,
    },
    /// No room: the memory limit, or no free range of the address space.
    OutOfMemory {
        /// Bytes asked for.
        size: u64,
        /// Bytes allocated now.
        used: u64,
        /// The limit.
        limit: u64,
    },
    /// No allocation starts at this address.
    NotAllocated {
        /// The address given.
        va: u64,
    },
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MemError::Misaligned { va } => write!(f, "gpu memory: address {va:#x} is not {PAGE}-byte aligned"),
            MemError::Empty { va } => write!(f, "gpu memory: zero-byte allocation at {va:#x}"),
            MemError::OutOfRange { va, size } => write!(
                f,
                "gpu memory: {size} bytes at {va:#x} fall outside [{PAGE:#x}, {VA_LIMIT:#x}) (the null page, or past 48 bits)"
            ),
            MemError::Overlap { va, size, other, other_size } => write!(
                f,
                "gpu memory: {size} bytes at {va:#x} overlap the allocation of {other_size} bytes at {other:#x}"
            ),
            MemError::OutOfMemory { size, used, limit } => {
                write!(f, "gpu memory: no room for {size} bytes ({used} of {limit} bytes in use)")
            }
            MemError::NotAllocated { va } => write!(f, "gpu memory: no allocation starts at {va:#x}"),
        }
    }
}

impl std::error::Error for MemError {}

/// A GPU access outside every mapped allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemFault {
    /// The first byte of the access that is not mapped.
    pub va: u64,
    /// Where the access started.
    pub start: u64,
    /// Its length in bytes.
    pub len: u64,
    /// A write (else a read).
    pub write: bool,
}

impl fmt::Display for MemFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rw = if self.write { "write" } else { "read" };
        write!(f, "gpu page fault: {rw} of {} bytes at {:#x}: {:#x} is not mapped", self.len, self.start, self.va)
    }
}

impl std::error::Error for MemFault {}

/// Zeroed, page-aligned host memory held as `AtomicU32` words (or someone else's memory, with
/// [`HostPages::external`]): storage the host reaches at its
/// own address (through [`HostPages::as_ptr`]) and the GPU reaches once adopted
/// ([`GpuMemory::adopt`]) — KFD's shared virtual address space, where a buffer's GPU address is
/// its host address. Freed when the last `Arc` of it drops (so an allocation adopting it keeps it
/// alive). Zeroed lazily by the host allocator (`calloc`: a large range costs no memory until
/// touched), one page more than asked for and aligned up inside it.
///
/// Whoever writes it through the raw pointer while the GPU may read it should use atomic (or at
/// least aligned, word-sized volatile) accesses: the GPU side's are atomic.
pub struct HostPages {
    /// Who owns the storage.
    owner: Owner,
    /// The first page.
    ptr: NonNull<AtomicU32>,
    bytes: usize,
}

/// Who owns a [`HostPages`]' storage.
enum Owner {
    /// The host allocator: what `alloc_zeroed` returned.
    Heap(NonNull<u8>),
    /// Someone else, who is told when the pages are no longer used ([`HostPages::external`]).
    External(Option<Box<dyn FnOnce() + Send>>),
}

impl fmt::Debug for HostPages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let owner = match self.owner {
            Owner::Heap(_) => "heap",
            Owner::External(_) => "external",
        };
        f.debug_struct("HostPages").field("addr", &self.ptr).field("bytes", &self.bytes).field("owner", &owner).finish()
    }
}

// SAFETY: the storage is `AtomicU32` words owned by this value; moving it to another thread moves
// only the ownership of those atomics.
unsafe impl Send for HostPages {}
// SAFETY: `&HostPages` gives out `&[AtomicU32]` (atomics are `Sync`) and the address; no
// non-atomic access is made through it (the external owner's release is only reached through
// `&mut self`, in `drop`).
unsafe impl Sync for HostPages {}

impl HostPages {
    /// The allocation's layout for `bytes` of pages: a page more, 8-aligned (so the system
    /// allocator zeroes with `calloc`).
    fn layout(bytes: usize) -> Option<Layout> {
        // CAST: PAGE is 4096.
        Layout::from_size_align(bytes.checked_add(PAGE as usize)?, 8).ok()
    }

    /// `bytes` rounded up to whole pages of zeroed memory; `None` for 0 bytes or when the host
    /// has no memory for it.
    pub fn new(bytes: u64) -> Option<HostPages> {
        let n = usize::try_from(bytes.checked_next_multiple_of(PAGE)?).ok()?;
        if n == 0 {
            return None;
        }
        let layout = Self::layout(n)?;
        // SAFETY: the layout's size is non-zero.
        let base = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
        // CAST: PAGE is 4096.
        let skip = (PAGE as usize - (base.as_ptr() as usize) % PAGE as usize) % PAGE as usize;
        // SAFETY: `skip` < 4096 and `skip + n` ≤ the allocation's `n + 4096` bytes, so the
        // offset pointer stays inside it.
        let first = unsafe { base.add(skip) };
        Some(HostPages { owner: Owner::Heap(base), ptr: first.cast(), bytes: n })
    }

    /// `bytes` of page-aligned memory at `ptr` that someone else owns (a shared mapping of a file,
    /// say, which another process or another mapping in this one also reaches): `release` runs
    /// once, when the last holder drops it (an allocation adopting it keeps it alive, as
    /// [`HostPages::new`]'s). `None` when `ptr` is not page-aligned or `bytes` is 0 or not a
    /// whole number of pages (`release` is then dropped without running).
    ///
    /// # Safety
    ///
    /// `bytes` bytes from `ptr` must stay readable and writable until `release` runs, and be
    /// accessed meanwhile only atomically or through raw pointers (never through Rust references
    /// to non-atomic types), as every [`HostPages`]' words are.
    pub unsafe fn external(ptr: NonNull<u8>, bytes: usize, release: Box<dyn FnOnce() + Send>) -> Option<HostPages> {
        // CAST: PAGE is 4096.
        let page = PAGE as usize;
        if bytes == 0 || !bytes.is_multiple_of(page) || !(ptr.as_ptr() as usize).is_multiple_of(page) {
            return None;
        }
        Some(HostPages { owner: Owner::External(Some(release)), ptr: ptr.cast(), bytes })
    }

    /// Its first byte's address (page-aligned).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Its first byte.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr.cast()
    }

    /// Its length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Never empty (kept for the `len` convention).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Its words.
    pub fn words(&self) -> &[AtomicU32] {
        // SAFETY: `ptr` starts `bytes` bytes (a multiple of 4096) of a live allocation, aligned
        // to a page, zero-initialised (a valid `AtomicU32`), owned by `self` until drop — or
        // external memory `external`'s caller keeps readable and writable until the release that
        // `drop` runs (any bits are a valid `AtomicU32`); it is only ever accessed through these
        // atomics (or by whoever holds the raw pointer, which is interior mutability the atomics'
        // `UnsafeCell` permits).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.bytes / 4) }
    }
}

impl Drop for HostPages {
    fn drop(&mut self) {
        match &mut self.owner {
            Owner::Heap(base) => {
                if let Some(layout) = Self::layout(self.bytes) {
                    // SAFETY: allocated by `alloc_zeroed` with this same layout in `new`, freed once.
                    unsafe { std::alloc::dealloc(base.as_ptr(), layout) };
                }
            }
            Owner::External(release) => {
                if let Some(r) = release.take() {
                    r();
                }
            }
        }
    }
}

/// Where an allocation's words live.
#[derive(Debug)]
enum Words {
    /// Its own.
    Owned(Box<[AtomicU32]>),
    /// Words `first..first + n` of adopted host pages.
    Host { pages: Arc<HostPages>, first: usize, n: usize },
}

/// One allocation's storage.
#[derive(Debug)]
struct Region {
    va: u64,
    len: u64,
    storage: Words,
}

impl Region {
    fn new(va: u64, len: u64) -> Option<Region> {
        let n = usize::try_from(len.div_ceil(4)).ok()?;
        let words: Box<[AtomicU32]> = (0..n).map(|_| AtomicU32::new(0)).collect();
        Some(Region { va, len, storage: Words::Owned(words) })
    }

    #[inline]
    fn words(&self) -> &[AtomicU32] {
        match &self.storage {
            Words::Owned(w) => w,
            Words::Host { pages, first, n } => &pages.words()[*first..*first + *n],
        }
    }

    fn end(&self) -> u64 {
        self.va + self.len
    }

    /// Bytes `[off, off + out.len())` of the region (the caller checked they are inside): a
    /// load of each word.
    #[inline]
    fn read(&self, off: usize, out: &mut [u8]) {
        if out.len() == 4 && off.is_multiple_of(4) {
            if let Some(w) = self.words().get(off / 4) {
                out.copy_from_slice(&w.load(Ordering::Acquire).to_le_bytes());
            }
            return;
        }
        bulk::load_bytes(self.words(), off, out, Ordering::Acquire);
    }

    /// Write `data` at byte `off` (the caller checked it is inside): a store of each whole word,
    /// the bytes of a partial word merged in with a compare-and-swap (so a thread writing the
    /// word's other bytes at the same time keeps its bytes).
    #[inline]
    fn write(&self, off: usize, data: &[u8]) {
        bulk::store_bytes(self.words(), off, data, Ordering::Release);
    }
}

/// One allocation in a snapshot of the address map.
#[derive(Clone, Debug)]
struct Entry {
    region: Arc<Region>,
    mapped: bool,
}

/// A snapshot of the address map: the allocations sorted by address.
#[derive(Clone, Debug, Default)]
struct Space {
    entries: Vec<Entry>,
    used: u64,
}

impl Space {
    /// The index of the allocation holding `va`.
    #[inline]
    fn find(&self, va: u64) -> Option<usize> {
        let i = self.entries.partition_point(|e| e.region.va <= va);
        let i = i.checked_sub(1)?;
        (va < self.entries[i].region.end()).then_some(i)
    }

    /// The allocation holding `va`, when the access (`gpu`: needs it mapped) may reach it.
    #[inline]
    fn reach(&self, va: u64, gpu: bool) -> Option<&Region> {
        let e = &self.entries[self.find(va)?];
        (!gpu || e.mapped).then_some(&*e.region)
    }

    fn range(va: u64, len: usize, write: bool) -> Result<u64, MemFault> {
        // CAST: usize → u64, widening.
        let n = len as u64;
        va.checked_add(n).ok_or(MemFault { va, start: va, len: n, write })
    }

    fn read(&self, va: u64, out: &mut [u8], gpu: bool) -> Result<(), MemFault> {
        let end = Self::range(va, out.len(), false)?;
        let mut at = va;
        while at < end {
            let fault = MemFault { va: at, start: va, len: end - va, write: false };
            let r = self.reach(at, gpu).ok_or(fault)?;
            // CAST: n and done are at most out.len(); the offset is inside an allocation whose
            // words fit a usize.
            let n = (r.end().min(end) - at) as usize;
            let done = (at - va) as usize;
            r.read((at - r.va) as usize, &mut out[done..done + n]);
            at += n as u64;
        }
        Ok(())
    }

    fn write(&self, va: u64, data: &[u8], gpu: bool) -> Result<(), MemFault> {
        let end = Self::range(va, data.len(), true)?;
        // Every byte reachable before any is written.
        let mut at = va;
        while at < end {
            let r = self.reach(at, gpu).ok_or(MemFault { va: at, start: va, len: end - va, write: true })?;
            at = r.end().min(end);
        }
        let mut at = va;
        while at < end {
            let r = self.reach(at, gpu).ok_or(MemFault { va: at, start: va, len: end - va, write: true })?;
            // CAST: as in `read`.
            let n = (r.end().min(end) - at) as usize;
            let done = (at - va) as usize;
            r.write((at - r.va) as usize, &data[done..done + n]);
            at += n as u64;
        }
        Ok(())
    }

    /// Whether `size` bytes at `va` may be placed: page-aligned, inside `[PAGE, VA_LIMIT)`,
    /// overlapping no allocation.
    fn check_place(&self, v: u64, size: u64) -> Result<(), MemError> {
        if !v.is_multiple_of(PAGE) {
            return Err(MemError::Misaligned { va: v });
        }
        if v < PAGE || v.checked_add(size).is_none_or(|e| e > VA_LIMIT) {
            return Err(MemError::OutOfRange { va: v, size });
        }
        let i = self.entries.partition_point(|e| e.region.va < v + size);
        if let Some(prev) = i.checked_sub(1).map(|k| &self.entries[k].region)
            && prev.end() > v
        {
            return Err(MemError::Overlap { va: v, size, other: prev.va, other_size: prev.len });
        }
        Ok(())
    }

    /// Whether every byte of `[va, va + len)` is mapped for the GPU.
    fn covers(&self, va: u64, len: u64) -> bool {
        let Some(end) = va.checked_add(len) else { return false };
        let mut at = va;
        while at < end {
            match self.reach(at, true) {
                Some(r) => at = r.end(),
                None => return false,
            }
        }
        true
    }
}

/// The GPU's virtual address space. `Send + Sync`: share it by reference or in an `Arc`.
#[derive(Debug)]
pub struct GpuMemory {
    space: RwLock<Arc<Space>>,
    limit: u64,
}

impl Default for GpuMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl GpuMemory {
    /// An empty address space with the [`DEFAULT_LIMIT`].
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_LIMIT)
    }

    /// An empty address space whose allocations may take at most `limit` bytes together.
    pub fn with_limit(limit: u64) -> Self {
        Self { space: RwLock::new(Arc::new(Space::default())), limit }
    }

    fn snapshot(&self) -> Arc<Space> {
        // A poisoned lock only means a writer panicked between building a snapshot and storing
        // it; the stored Arc is still a whole snapshot.
        match self.space.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    fn update<T>(&self, f: impl FnOnce(&mut Space) -> Result<T, MemError>) -> Result<T, MemError> {
        let mut g = match self.space.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut next = Space::clone(&g);
        let t = f(&mut next)?;
        *g = Arc::new(next);
        Ok(t)
    }

    /// Reserve `size` zeroed bytes, at `va` when given (page-aligned), else where the allocator
    /// finds room (page-aligned, at or above [`AUTO_VA_BASE`]). The GPU cannot reach it until
    /// [`GpuMemory::map`]. Returns its address.
    pub fn allocate(&self, va: Option<u64>, size: u64) -> Result<u64, MemError> {
        let limit = self.limit;
        self.update(|s| {
            if size == 0 {
                return Err(MemError::Empty { va: va.unwrap_or(0) });
            }
            if s.used.checked_add(size).is_none_or(|u| u > limit) {
                return Err(MemError::OutOfMemory { size, used: s.used, limit });
            }
            let at = match va {
                Some(v) => {
                    s.check_place(v, size)?;
                    v
                }
                None => {
                    // First fit above the base, a page apart.
                    let span = size.div_ceil(PAGE) * PAGE;
                    let mut at = AUTO_VA_BASE;
                    for e in s.entries.iter().filter(|e| e.region.end() > AUTO_VA_BASE) {
                        if e.region.va >= at + span {
                            break;
                        }
                        at = at.max(e.region.end().div_ceil(PAGE) * PAGE);
                    }
                    if at.checked_add(span).is_none_or(|e| e > VA_LIMIT) {
                        return Err(MemError::OutOfMemory { size, used: s.used, limit });
                    }
                    at
                }
            };
            let region = Region::new(at, size).ok_or(MemError::OutOfMemory { size, used: s.used, limit })?;
            let i = s.entries.partition_point(|e| e.region.va < at);
            s.entries.insert(i, Entry { region: Arc::new(region), mapped: false });
            s.used += size;
            Ok(at)
        })
    }

    /// Register `size` bytes of `pages` from byte `offset` as an allocation at `va`: the GPU
    /// then reaches the host's own bytes (KFD's shared virtual address space, where `va` is
    /// `pages.addr() + offset`; another `va` aliases them). As [`GpuMemory::allocate`]: `va` and
    /// `offset` page-aligned, no overlap, within the limit, unmapped until [`GpuMemory::map`];
    /// [`GpuMemory::free`] drops the registration (the pages live while anyone holds them).
    /// Returns `va`.
    pub fn adopt(&self, va: u64, pages: &Arc<HostPages>, offset: u64, size: u64) -> Result<u64, MemError> {
        let limit = self.limit;
        self.update(|s| {
            if size == 0 {
                return Err(MemError::Empty { va });
            }
            if !offset.is_multiple_of(PAGE) {
                return Err(MemError::Misaligned { va: pages.addr().wrapping_add(offset) });
            }
            // CAST: usize → u64, widening.
            if offset.checked_add(size).is_none_or(|e| e > pages.len() as u64) {
                return Err(MemError::OutOfRange { va: pages.addr().wrapping_add(offset), size });
            }
            if s.used.checked_add(size).is_none_or(|u| u > limit) {
                return Err(MemError::OutOfMemory { size, used: s.used, limit });
            }
            s.check_place(va, size)?;
            // CAST: inside `pages`, whose length is a usize.
            let (first, n) = ((offset / 4) as usize, size.div_ceil(4) as usize);
            let region = Region { va, len: size, storage: Words::Host { pages: Arc::clone(pages), first, n } };
            let i = s.entries.partition_point(|e| e.region.va < va);
            s.entries.insert(i, Entry { region: Arc::new(region), mapped: false });
            s.used += size;
            Ok(va)
        })
    }

    /// [`GpuMemory::allocate`] then [`GpuMemory::map`]: memory the GPU reaches at once.
    pub fn alloc(&self, va: Option<u64>, size: u64) -> Result<u64, MemError> {
        let at = self.allocate(va, size)?;
        self.map(at)?;
        Ok(at)
    }

    fn set_mapped(&self, va: u64, mapped: bool) -> Result<(), MemError> {
        self.update(|s| {
            let e = s.entries.iter_mut().find(|e| e.region.va == va).ok_or(MemError::NotAllocated { va })?;
            e.mapped = mapped;
            Ok(())
        })
    }

    /// Let the GPU reach the allocation that starts at `va`.
    pub fn map(&self, va: u64) -> Result<(), MemError> {
        self.set_mapped(va, true)
    }

    /// Take the GPU's access to the allocation at `va` away (the host keeps it).
    pub fn unmap(&self, va: u64) -> Result<(), MemError> {
        self.set_mapped(va, false)
    }

    /// Free the allocation that starts at `va` (views taken before keep it until they drop).
    pub fn free(&self, va: u64) -> Result<(), MemError> {
        self.update(|s| {
            let i = s.entries.iter().position(|e| e.region.va == va).ok_or(MemError::NotAllocated { va })?;
            let e = s.entries.remove(i);
            s.used -= e.region.len;
            Ok(())
        })
    }

    /// Bytes allocated.
    pub fn used(&self) -> u64 {
        self.snapshot().used
    }

    /// The allocation holding `va`: its start, size and whether it is mapped.
    pub fn allocation(&self, va: u64) -> Option<(u64, u64, bool)> {
        let s = self.snapshot();
        let e = &s.entries[s.find(va)?];
        Some((e.region.va, e.region.len, e.mapped))
    }

    /// A snapshot of the address map for a run of GPU accesses (see the module docs).
    pub fn view(&self) -> MemView {
        MemView { space: self.snapshot(), hint: 0 }
    }

    /// GPU read of `out.len()` bytes at `va`.
    pub fn read(&self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        self.snapshot().read(va, out, true)
    }

    /// GPU write of `data` at `va` (nothing written when a byte is not mapped).
    pub fn write(&self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        self.snapshot().write(va, data, true)
    }

    /// GPU read of the little-endian dword at `va`.
    pub fn read_u32(&self, va: u64) -> Result<u32, MemFault> {
        let mut b = [0; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// GPU write of a little-endian dword at `va`.
    pub fn write_u32(&self, va: u64, v: u32) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }

    /// GPU read of the little-endian qword at `va` (two dword reads, low first).
    pub fn read_u64(&self, va: u64) -> Result<u64, MemFault> {
        let mut b = [0; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// GPU write of a little-endian qword at `va` (two dword writes, low first).
    pub fn write_u64(&self, va: u64, v: u64) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }

    /// GPU write of dwords at `va`.
    pub fn write_words(&self, va: u64, words: &[u32]) -> Result<(), MemFault> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.write(va, &bytes)
    }

    /// Host read (the CPU's mapping of the allocation: mapped for the GPU or not).
    pub fn host_read(&self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        self.snapshot().read(va, out, false)
    }

    /// Host write (the CPU's mapping: mapped for the GPU or not).
    pub fn host_write(&self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        self.snapshot().write(va, data, false)
    }
}

/// A snapshot of the address map with a lookup hint: what a packet, an SDMA copy or one of a
/// dispatch's threads reads and writes through. GPU accesses only (mapped allocations).
#[derive(Clone, Debug)]
pub struct MemView {
    space: Arc<Space>,
    hint: usize,
}

impl MemView {
    /// The region for `[va, va + len)` when one mapped allocation holds all of it.
    #[inline]
    fn one(&mut self, va: u64, len: usize) -> Option<(&Region, usize)> {
        // CAST: usize → u64, widening.
        let end = va.checked_add(len as u64)?;
        let ok = |e: &Entry| e.mapped && e.region.va <= va && end <= e.region.end();
        if !self.space.entries.get(self.hint).is_some_and(ok) {
            let i = self.space.find(va)?;
            if !ok(&self.space.entries[i]) {
                return None;
            }
            self.hint = i;
        }
        let r = &*self.space.entries[self.hint].region;
        // CAST: an offset inside an allocation whose words fit a usize.
        Some((r, (va - r.va) as usize))
    }

    /// Read `out.len()` bytes at `va`.
    #[inline]
    pub fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        if let Some((r, off)) = self.one(va, out.len()) {
            r.read(off, out);
            return Ok(());
        }
        self.space.read(va, out, true)
    }

    /// Write `data` at `va` (nothing written when a byte is not mapped).
    #[inline]
    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        if let Some((r, off)) = self.one(va, data.len()) {
            r.write(off, data);
            return Ok(());
        }
        self.space.write(va, data, true)
    }

    /// Read the dword at `va`.
    #[inline]
    pub fn read_u32(&mut self, va: u64) -> Result<u32, MemFault> {
        let mut b = [0; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Write a dword at `va`.
    pub fn write_u32(&mut self, va: u64, v: u32) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }

    /// Read the qword at `va` (two dwords, low first).
    pub fn read_u64(&mut self, va: u64) -> Result<u64, MemFault> {
        let mut b = [0; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Write a qword at `va` (two dwords, low first).
    pub fn write_u64(&mut self, va: u64, v: u64) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }

    /// Read `out.len()` dwords from `va`.
    pub fn read_words(&mut self, va: u64, out: &mut [u32]) -> Result<(), MemFault> {
        // CAST: a dword count; × 4 fits a u64.
        let len = 4 * out.len() as u64;
        if let Some((r, off)) = va.is_multiple_of(4).then(|| self.one(va, 4 * out.len())).flatten() {
            for (k, w) in out.iter_mut().enumerate() {
                *w = r.words()[off / 4 + k].load(Ordering::Acquire);
            }
            return Ok(());
        }
        if !self.space.covers(va, len) {
            let mut b = vec![0u8; 4 * out.len()];
            return self.space.read(va, &mut b, true);
        }
        for (k, w) in out.iter_mut().enumerate() {
            *w = self.read_u32(va + 4 * k as u64)?;
        }
        Ok(())
    }

    /// `Memory::gather_dwords` of `K` dwords a lane.
    #[inline(always)]
    fn gather<const K: usize>(&mut self, addrs: &[u64], exec: u64, out: &mut [u32]) -> Result<(), usize> {
        let lanes = addrs.len();
        // CAST: K ≤ 4.
        let bytes = 4 * K as u64;
        // Every lane aligned and inside one mapped allocation (the usual wave): its words loaded
        // without a check per lane.
        let (mut lo, mut hi, mut odd) = (u64::MAX, 0u64, 0u64);
        let mut e = exec;
        while e != 0 {
            // CAST: a lane < 64.
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            let a = addrs.get(l).copied().unwrap_or(u64::MAX);
            (lo, hi, odd) = (lo.min(a), hi.max(a), odd | a);
        }
        if exec != 0
            && odd & 3 == 0
            && let Some(end) = hi.checked_add(bytes)
            && let Some((r, _)) = self.one(lo, (end - lo) as usize)
        {
            let words = r.words();
            let mut e = exec;
            while e != 0 {
                // CAST: a lane < 64.
                let l = e.trailing_zeros() as usize;
                e &= e - 1;
                // CAST: an offset inside the allocation, whose words fit a usize.
                let o = ((addrs.get(l).copied().unwrap_or(lo) - r.va) / 4) as usize;
                if let Some(w) = words.get(o..o + K) {
                    for (k, w) in w.iter().enumerate() {
                        if let Some(x) = out.get_mut(k * lanes + l) {
                            *x = w.load(Ordering::Acquire);
                        }
                    }
                }
            }
            return Ok(());
        }
        self.gather_lanes::<K>(addrs, exec, out)
    }

    /// `gather` lane by lane.
    #[inline(always)]
    fn gather_lanes<const K: usize>(&self, addrs: &[u64], exec: u64, out: &mut [u32]) -> Result<(), usize> {
        let lanes = addrs.len();
        // Borrowed, not cloned: the threads of a dispatch would share the count's cache line.
        let space: &Space = &self.space;
        // The allocation of the last fast lane: its start, its bytes (0: none yet), its words.
        let (mut va, mut span, mut words): (u64, u64, &[AtomicU32]) = (0, 0, &[]);
        let mut e = exec;
        while e != 0 {
            // CAST: a lane < 64.
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            let Some(&a) = addrs.get(l) else { return Err(l) };
            // CAST: K ≤ 4.
            let bytes = 4 * K as u64;
            let mut off = a.wrapping_sub(va);
            if a.is_multiple_of(4) && (span < bytes || off > span - bytes) {
                // Not in the last one: the allocation holding `a`, if mapped.
                if let Some(e) = space.find(a).map(|i| &space.entries[i]).filter(|e| e.mapped) {
                    (va, span, words) = (e.region.va, e.region.len, e.region.words());
                    off = a - va;
                }
            }
            let fast = a.is_multiple_of(4) && span >= bytes && off <= span - bytes;
            // CAST: an offset inside an allocation whose words fit a usize.
            let mut got = [0u32; K];
            match words.get((off / 4) as usize..).and_then(|w| w.get(..K)).filter(|_| fast) {
                Some(w) => {
                    for (x, w) in got.iter_mut().zip(w) {
                        *x = w.load(Ordering::Acquire);
                    }
                }
                None => {
                    // Unaligned, across allocations or unmapped: `read`'s path (without the hint).
                    let mut b = [0u8; 16];
                    if space.read(a, &mut b[..4 * K], true).is_err() {
                        return Err(l);
                    }
                    for (k, x) in got.iter_mut().enumerate() {
                        *x = u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
                    }
                }
            }
            for (k, x) in got.into_iter().enumerate() {
                if let Some(o) = out.get_mut(k * lanes + l) {
                    *o = x;
                }
            }
        }
        Ok(())
    }

    /// Whether every byte of `[va, va + len)` is mapped.
    pub fn covers(&self, va: u64, len: u64) -> bool {
        self.space.covers(va, len)
    }

    /// The mapped allocation holding `va`: its start and size.
    pub fn allocation(&self, va: u64) -> Option<(u64, u64)> {
        let e = &self.space.entries[self.space.find(va)?];
        e.mapped.then_some((e.region.va, e.region.len))
    }
}

/// Held by an atomic that is not one aligned dword (a qword, an unaligned one): such atomics of
/// every thread of every dispatch are atomic among themselves.
static ATOMICS: Mutex<()> = Mutex::new(());

/// The shader core's view: a load or store outside every mapped allocation returns `false`, and
/// the interpreter turns it into a fault naming the wave, lane and address.
impl Memory for MemView {
    /// An aligned dword inside one allocation: a compare-exchange loop on its word (atomic
    /// against every access of the word); any other under one process-wide lock (`ATOMICS`), through `read` and
    /// `write`.
    fn atomic(&mut self, addr: u64, bytes: usize, f: &dyn Fn(u64) -> u64) -> Option<u64> {
        if bytes == 4
            && addr.is_multiple_of(4)
            && let Some((r, off)) = self.one(addr, 4)
            && let Some(w) = r.words().get(off / 4)
        {
            // CAST: a dword's value, and `f` of it cut to a dword.
            let up = |x: u32| Some(f(u64::from(x)) as u32);
            return w.fetch_update(Ordering::AcqRel, Ordering::Acquire, up).ok().map(u64::from);
        }
        let _held = ATOMICS.lock().unwrap_or_else(PoisonError::into_inner);
        let n = bytes.min(8);
        let mut b = [0u8; 8];
        MemView::read(self, addr, &mut b[..n]).ok()?;
        let old = u64::from_le_bytes(b);
        MemView::write(self, addr, &f(old).to_le_bytes()[..n]).ok()?;
        Some(old)
    }

    #[inline]
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        MemView::read(self, addr, buf).is_ok()
    }

    #[inline]
    fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        MemView::write(self, addr, data).is_ok()
    }

    /// Aligned, inside one allocation: a load of each word (as `read` does it, without the
    /// bytes); else `read`'s path.
    #[inline]
    fn read_dwords(&mut self, addr: u64, out: &mut [u32]) -> bool {
        if addr.is_multiple_of(4)
            && let Some((r, off)) = self.one(addr, 4 * out.len())
            && let Some(words) = r.words().get(off / 4..off / 4 + out.len())
        {
            for (x, w) in out.iter_mut().zip(words) {
                *x = w.load(Ordering::Acquire);
            }
            return true;
        }
        let mut b = [0u8; 16];
        let n = 4 * out.len().min(4);
        if MemView::read(self, addr, &mut b[..n]).is_err() {
            return false;
        }
        for (k, x) in out.iter_mut().take(4).enumerate() {
            *x = u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
        }
        true
    }

    /// Lane by lane, each as `read_dwords` reads it: an aligned access inside the allocation
    /// the lane before reached (or the one a lookup finds) a load of each word, any other
    /// through `read`'s path.
    fn gather_dwords(&mut self, addrs: &[u64], exec: u64, n: usize, out: &mut [u32]) -> Result<(), usize> {
        match n {
            1 => self.gather::<1>(addrs, exec, out),
            2 => self.gather::<2>(addrs, exec, out),
            3 => self.gather::<3>(addrs, exec, out),
            _ => self.gather::<4>(addrs, exec, out),
        }
    }

    /// Aligned, inside one allocation: a store of each word (as `write` does it); else
    /// `write`'s path.
    #[inline]
    fn write_dwords(&mut self, addr: u64, data: &[u32]) -> bool {
        if addr.is_multiple_of(4)
            && let Some((r, off)) = self.one(addr, 4 * data.len())
            && let Some(words) = r.words().get(off / 4..off / 4 + data.len())
        {
            for (x, w) in data.iter().zip(words) {
                w.store(*x, Ordering::Release);
            }
            return true;
        }
        let mut b = [0u8; 16];
        let n = data.len().min(4);
        for (k, x) in data[..n].iter().enumerate() {
            b[4 * k..4 * k + 4].copy_from_slice(&x.to_le_bytes());
        }
        MemView::write(self, addr, &b[..4 * n]).is_ok()
    }
}
