//! [`LruAllocator`]: the caching allocator every device puts in front of its backend.

use super::{Allocator, BufferSpec, Completion, DeviceMemory, Shown, is_exhaustion};
use crate::error::{DeviceName, Error, Result, device_name};
use crate::stamp::Stamp;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// Cached blocks by `(size, spec)`, sorted by that key and searched by bisection. The keys are
/// few (one per distinct size and spec) and stay until the cache is emptied (a list that runs
/// empty keeps its key), so a new key's insert is rare; a sorted vector costs no B-tree code in
/// a `no_std` image and searches as fast.
#[derive(Default)]
struct Cache(Vec<((u64, BufferSpec), Vec<DeviceMemory>)>);

impl Cache {
    /// The list of `key`, if it has one.
    fn get_mut(&mut self, key: &(u64, BufferSpec)) -> Option<&mut Vec<DeviceMemory>> {
        let i = self.0.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
        self.0.get_mut(i).map(|(_, list)| list)
    }

    /// Add `mem` to the list of `key`, made first if it has none.
    fn put(&mut self, key: (u64, BufferSpec), mem: DeviceMemory) {
        match self.0.binary_search_by(|(k, _)| k.cmp(&key)) {
            // always there: `i` is where the search found the key (`get_mut`: no panic path)
            Ok(i) => {
                if let Some((_, list)) = self.0.get_mut(i) {
                    list.push(mem);
                }
            }
            Err(i) => crate::insert_at(&mut self.0, i, (key, alloc::vec![mem])),
        }
    }
}

/// A block the device may still use: it goes back once the device passes `stamp`.
struct Pending {
    stamp: Stamp,
    spec: BufferSpec,
    mem: DeviceMemory,
}

/// Everything the hot path touches, behind one lock (one atomic CAS per call).
#[derive(Default)]
struct State {
    cache: Cache,
    used: u64,
    cached: u64,
    /// Deferred frees, in the order they were freed; retired from the front, so a block
    /// behind one the device has not passed yet comes back later, never earlier.
    pending: VecDeque<Pending>,
    pending_bytes: u64,
}

/// Deferred frees kept before a free waits for the oldest one (the bookkeeping is
/// allocated once, when a completion source is attached).
pub const MAX_PENDING_FREES: usize = 256;

/// A caching allocator in front of a device's backend [`Allocator`].
///
/// `alloc` first reuses a cached block of exactly the same `(size, spec)`; otherwise it asks
/// the backend, and when the backend is out of memory it frees the whole cache and retries
/// exactly once before failing with [`Error::OutOfMemory`] naming the device, the request and
/// the bytes in use. `free` parks blocks in the cache unless the spec is `nolru`, `zero` or
/// `external` (see [`BufferSpec::cacheable`]). A cache hit and its free take one spin lock
/// each (the byte counters live under it) and allocate nothing once the cache's per-key list
/// has room; the backend is never called with the lock held.
///
/// **Deferred frees.** Memory the device may still be using is never reused:
/// [`LruAllocator::free_after`] takes a block with the [`Stamp`] of its last use and parks it
/// until the device's timeline (the [`Completion`] attached with
/// [`LruAllocator::attach_completion`]) has passed that stamp; only then does it go to the
/// cache or the backend. Parked blocks are retired without waiting whenever the allocator is
/// used ([`LruAllocator::retire`]); at most [`MAX_PENDING_FREES`] are parked (a fixed
/// queue allocated at attach time, so the steady state allocates nothing), beyond which a
/// free waits for the oldest. Out of memory, the allocator first waits for the parked
/// blocks, then empties the cache. A block whose wait fails (a hung or faulted device) is
/// leaked, never reused.
pub struct LruAllocator {
    device: DeviceName,
    backend: Box<dyn Allocator>,
    state: spin::Mutex<State>,
    completion: spin::Once<Arc<dyn Completion>>,
}

impl core::fmt::Debug for LruAllocator {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LruAllocator")
            .field("device", &self.device)
            .field("used_bytes", &self.used_bytes())
            .field("cached_bytes", &self.cached_bytes())
            .finish_non_exhaustive()
    }
}

impl LruAllocator {
    /// A cache in front of `backend` for the device named `device` (used in errors).
    pub fn new(device: &str, backend: Box<dyn Allocator>) -> Self {
        Self {
            device: device_name(device),
            backend,
            state: spin::Mutex::new(State::default()),
            completion: spin::Once::new(),
        }
    }

    /// Defer frees on `completion` (the device's timeline): see the type's docs. The first
    /// call wins; later calls are ignored.
    pub fn attach_completion(&self, completion: Arc<dyn Completion>) {
        self.completion.call_once(|| {
            self.state.lock().pending.reserve_exact(MAX_PENDING_FREES);
            completion
        });
    }

    /// The attached completion source, if any.
    pub fn completion(&self) -> Option<&Arc<dyn Completion>> {
        self.completion.get()
    }

    /// Bytes of blocks parked until the device passes their stamps (counted in
    /// [`LruAllocator::used_bytes`] too: the device may still use them).
    pub fn pending_bytes(&self) -> u64 {
        self.state.lock().pending_bytes
    }

    /// Number of blocks parked until the device passes their stamps.
    pub fn pending_frees(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// Give `mem` back once the device has passed `stamp` (its last use). Frees at once when
    /// `stamp` is zero or already passed.
    ///
    /// Returns `Err(mem)` (the block comes back) when no completion source is attached and
    /// `stamp` is not zero: the caller must then make sure the device is done (synchronize)
    /// before calling [`Allocator::free`].
    pub fn free_after(
        &self,
        mem: DeviceMemory,
        spec: &BufferSpec,
        stamp: Stamp,
    ) -> core::result::Result<(), DeviceMemory> {
        if stamp.is_zero() {
            self.free(mem, spec);
            return Ok(());
        }
        let Some(c) = self.completion.get() else { return Err(mem) };
        if c.passed(stamp) {
            self.free(mem, spec);
            return Ok(());
        }
        self.retire();
        let entry = Pending { stamp, spec: *spec, mem };
        loop {
            let oldest = {
                let mut st = self.state.lock();
                if st.pending.len() < MAX_PENDING_FREES {
                    st.pending_bytes = st.pending_bytes.saturating_add(entry.mem.size());
                    st.pending.push_back(entry);
                    return Ok(());
                }
                let Some(oldest) = st.pending.pop_front() else {
                    // unreachable while MAX_PENDING_FREES > 0; keep the block safe anyway
                    st.pending.push_back(entry);
                    return Ok(());
                };
                st.pending_bytes = st.pending_bytes.saturating_sub(oldest.mem.size());
                oldest
            };
            // the bookkeeping is full: wait (without the lock) for the oldest block
            self.release_waiting(c, oldest);
            if c.passed(entry.stamp) {
                self.free(entry.mem, &entry.spec);
                return Ok(());
            }
        }
    }

    /// Wait for `p`'s stamp, then free it; leak it if the wait fails.
    fn release_waiting(&self, c: &Arc<dyn Completion>, p: Pending) {
        // TIMEOUT: the completion's (the device timeline's policy, default 30 s without
        // progress); a failed wait leaks the block.
        match c.wait(p.stamp) {
            Ok(()) => self.free(p.mem, &p.spec),
            Err(e) => {
                error!(
                    "{}: memory at {:#x} ({} bytes) is leaked: the device may still use it ({})",
                    self.device.as_str(),
                    p.mem.addr(),
                    p.mem.size(),
                    Shown(&e)
                );
                let mut st = self.state.lock();
                st.used = st.used.saturating_sub(p.mem.size());
                drop(st);
                let _leaked = p.mem; // a handle dropped without `free` leaks its memory
            }
        }
    }

    /// Free every parked block whose stamp the device has passed, without waiting. Returns
    /// how many were freed.
    pub fn retire(&self) -> usize {
        let Some(c) = self.completion.get() else { return 0 };
        let mut n = 0;
        loop {
            let p = {
                let mut st = self.state.lock();
                match st.pending.front() {
                    Some(p) if c.passed(p.stamp) => {}
                    _ => return n,
                }
                let Some(p) = st.pending.pop_front() else { return n };
                st.pending_bytes = st.pending_bytes.saturating_sub(p.mem.size());
                p
            };
            self.free(p.mem, &p.spec);
            n += 1;
        }
    }

    /// Wait for every parked block and free it (out of memory, or before a teardown).
    pub fn drain_pending(&self) {
        let Some(c) = self.completion.get() else { return };
        loop {
            let p = {
                let mut st = self.state.lock();
                let Some(p) = st.pending.pop_front() else { return };
                st.pending_bytes = st.pending_bytes.saturating_sub(p.mem.size());
                p
            };
            self.release_waiting(c, p);
        }
    }

    /// The device this allocator serves.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The backend allocator.
    pub fn backend(&self) -> &dyn Allocator {
        &*self.backend
    }

    /// Bytes held by live allocations handed out by this allocator (cached blocks excluded).
    pub fn used_bytes(&self) -> u64 {
        self.state.lock().used
    }

    /// Bytes parked in the cache, waiting for reuse.
    pub fn cached_bytes(&self) -> u64 {
        self.state.lock().cached
    }

    /// Free every cached block through the backend.
    pub fn free_cache(&self) {
        let cache = {
            let mut st = self.state.lock();
            st.cached = 0;
            core::mem::take(&mut st.cache)
        };
        for ((_, spec), blocks) in cache.0 {
            for mem in blocks {
                self.backend.free(mem, &spec);
            }
        }
    }

    /// Ask the backend, checking it kept the size contract.
    fn backend_alloc(&self, size: u64, spec: &BufferSpec) -> Result<DeviceMemory> {
        let mem = self.backend.alloc(size, spec)?;
        if mem.size() != size {
            let found = mem.size();
            self.backend.free(mem, spec);
            return Err(Error::Mismatch {
                what: "size of memory returned by the backend allocator",
                expected: size,
                found,
            });
        }
        Ok(mem)
    }
}

impl Allocator for LruAllocator {
    fn alloc(&self, size: u64, spec: &BufferSpec) -> Result<DeviceMemory> {
        if size == 0 {
            return Err(Error::InvalidArgument { what: "allocation size must be positive", value: 0 });
        }
        self.retire();
        {
            let mut st = self.state.lock();
            if let Some(mem) = st.cache.get_mut(&(size, *spec)).and_then(Vec::pop) {
                st.cached = st.cached.saturating_sub(size);
                st.used = st.used.saturating_add(size);
                return Ok(mem);
            }
        }
        let mem = match self.backend_alloc(size, spec) {
            Ok(mem) => mem,
            Err(e) if is_exhaustion(&e) => {
                debug!(
                    "{}: allocation of {} bytes failed ({}); freeing the cache",
                    self.device.as_str(),
                    size,
                    Shown(&e)
                );
                self.drain_pending();
                self.free_cache();
                match self.backend_alloc(size, spec) {
                    Ok(mem) => mem,
                    Err(e) if is_exhaustion(&e) => {
                        let used = self.used_bytes();
                        warn!(
                            "{}: allocation of {} bytes failed after freeing the cache: {}",
                            self.device.as_str(),
                            size,
                            Shown(&e)
                        );
                        return Err(Error::OutOfMemory { device: self.device.clone(), requested: size, used });
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let mut st = self.state.lock();
        st.used = st.used.saturating_add(size);
        Ok(mem)
    }

    fn free(&self, mem: DeviceMemory, spec: &BufferSpec) {
        let size = mem.size();
        let mut st = self.state.lock();
        st.used = st.used.saturating_sub(size);
        if !spec.cacheable() {
            drop(st);
            self.backend.free(mem, spec);
            return;
        }
        st.cached = st.cached.saturating_add(size);
        st.cache.put((size, *spec), mem);
    }

    fn copy_in(&self, dst: &DeviceMemory, offset: u64, src: &[u8]) -> Result<()> {
        self.backend.copy_in(dst, offset, src)
    }

    fn copy_out(&self, dst: &mut [u8], src: &DeviceMemory, offset: u64) -> Result<()> {
        self.backend.copy_out(dst, src, offset)
    }

    fn map(&self, mem: &DeviceMemory) -> Result<u64> {
        self.backend.map(mem)
    }

    fn offset(&self, mem: &DeviceMemory, offset: u64, size: u64) -> Result<u64> {
        self.backend.offset(mem, offset, size)
    }
}

impl Drop for LruAllocator {
    fn drop(&mut self) {
        // what the device has finished with goes back; the rest is leaked, never waited
        // for (the device may be stopped already) nor reused
        self.retire();
        let pending = core::mem::take(&mut self.state.lock().pending);
        for p in pending {
            warn!(
                "{}: memory at {:#x} ({} bytes) is leaked: still in use by the device at teardown",
                self.device.as_str(),
                p.mem.addr(),
                p.mem.size()
            );
            let _leaked = p.mem; // a handle dropped without `free` leaks its memory
        }
        self.free_cache();
    }
}
