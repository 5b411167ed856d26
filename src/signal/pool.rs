//! Owning signals: the one owner of a slot ([`OwnedSignal`]) and the host pool that hands
//! slots out and takes them back ([`SignalPool`]).

use super::page::{FreeList, not_a_slot};
use super::{SLOT_BYTES, Signal, SignalPage, SignalPageRef};
use crate::error::{Error, Result};
use crate::sync::Ordering;

/// The one owner of a signal slot: it sets the value from the host and gives the slot back
/// when dropped (to its [`SignalPool`], for a pooled slot). Not `Clone`: read-only
/// [`Signal`] handles come from [`OwnedSignal::signal`] (or through `Deref`).
///
/// A clone of a live slot cannot be freed (and handed out again): there is no `free`, and a
/// clone is a read-only [`Signal`], not an owner:
///
/// ```compile_fail,E0599
/// let pool = hcq::signal::SignalPool::new();
/// let s = pool.alloc(0);
/// pool.free(s.signal().clone());
/// ```
///
/// ```compile_fail,E0308
/// let pool = hcq::signal::SignalPool::new();
/// let s = pool.alloc(0);
/// let second_owner: hcq::signal::OwnedSignal = s.clone();
/// ```
///
/// Dropping the owner gives the slot back:
///
/// ```
/// let pool = hcq::signal::SignalPool::new();
/// let s = pool.alloc(0);
/// let addr = s.addr();
/// let reader: hcq::signal::Signal = s.signal().clone();
/// drop(s);
/// assert_eq!(pool.alloc(0).addr(), addr);
/// let _ = reader.value(); // still memory-safe to read
/// ```
#[cfg(feature = "alloc")]
pub struct OwnedSignal {
    sig: Signal,
}

#[cfg(feature = "alloc")]
impl core::fmt::Debug for OwnedSignal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("OwnedSignal").field(&self.sig).finish()
    }
}

#[cfg(feature = "alloc")]
impl OwnedSignal {
    /// Take slot `index` of `page` (a page of the caller's; 64-bit compare).
    ///
    /// Errors: [`Error::OutOfBounds`] when the page has no such slot;
    /// [`Error::InvalidArgument`] when the slot already has an owner or the page belongs to a
    /// [`SignalPool`] (its slots come from [`SignalPool::alloc`]).
    pub fn new(page: SignalPageRef, index: usize) -> Result<Self> {
        let sig = Signal::new(page, index)?;
        if sig.page.home.is_some() {
            return Err(Error::InvalidArgument {
                what: "signal slot of a SignalPool page (take it with SignalPool::alloc)",
                value: index as u64,
            });
        }
        sig.page.claim(index)?;
        Ok(Self { sig })
    }

    /// Compare 32-bit payloads by wrapping difference (for backends that write 32 bits).
    pub fn with_32bit_payload(mut self) -> Self {
        self.sig.bits32 = true;
        self
    }

    /// A read-only handle to the slot.
    #[inline]
    pub fn signal(&self) -> &Signal {
        &self.sig
    }

    /// Set the value from the host.
    #[inline]
    pub fn set(&self, value: u64) {
        self.sig.set(value)
    }

    /// Make the slot a timeline's (signal commands may no longer store to it).
    pub(crate) fn mark_timeline(&self) {
        self.sig.page.mark_timeline(self.sig.index);
    }
}

#[cfg(feature = "alloc")]
impl core::ops::Deref for OwnedSignal {
    type Target = Signal;
    #[inline]
    fn deref(&self) -> &Signal {
        &self.sig
    }
}

#[cfg(feature = "alloc")]
impl Drop for OwnedSignal {
    fn drop(&mut self) {
        self.sig.page.release(self.sig.index);
    }
}

/// Hands out signals from host pages (256 per 4 KiB page, as tinygrad does), growing by a page
/// when empty; a slot comes back when its [`OwnedSignal`] drops. Resolving a device address to
/// its slot ([`SignalPool::load`], [`SignalPool::store`]) is a binary search over the pages
/// under a reader lock: O(log pages), and concurrent resolutions do not exclude each other.
#[cfg(feature = "alloc")]
pub struct SignalPool {
    /// The pages, sorted by device base address.
    pages: spin::RwLock<alloc::vec::Vec<alloc::sync::Arc<SignalPage>>>,
    /// Free slots, shared with the pages (their owners push slots back on drop).
    free: spin::Once<alloc::sync::Arc<FreeList>>,
}

#[cfg(feature = "alloc")]
impl Default for SignalPool {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "alloc")]
impl SignalPool {
    /// Slots per page.
    pub const SLOTS_PER_PAGE: usize = 256;

    /// An empty pool.
    pub const fn new() -> Self {
        Self { pages: spin::RwLock::new(alloc::vec::Vec::new()), free: spin::Once::new() }
    }

    fn free_list(&self) -> &alloc::sync::Arc<FreeList> {
        self.free.call_once(|| alloc::sync::Arc::new(spin::Mutex::new(alloc::vec::Vec::new())))
    }

    /// The page holding device address `addr` (binary search; caller holds the read lock).
    fn page_at(pages: &[alloc::sync::Arc<SignalPage>], addr: u64) -> Option<&alloc::sync::Arc<SignalPage>> {
        let i = pages.partition_point(|p| p.device_base <= addr).checked_sub(1)?;
        pages.get(i).filter(|p| addr - p.device_base < SLOT_BYTES * p.len as u64)
    }

    /// A fresh signal set to `initial`, owned by the caller; the slot returns to the pool when
    /// the owner drops.
    pub fn alloc(&self, initial: u64) -> OwnedSignal {
        let free = self.free_list();
        loop {
            let popped = free.lock().pop();
            let (page, i) = match popped {
                Some((base, i)) => {
                    let pages = self.pages.read();
                    match Self::page_at(&pages, base) {
                        Some(p) => (p.clone(), i),
                        None => continue,
                    }
                }
                None => {
                    let page = alloc::sync::Arc::new(SignalPage::new_host_in(Self::SLOTS_PER_PAGE, Some(free.clone())));
                    {
                        let mut pages = self.pages.write();
                        let at = pages.partition_point(|p| p.device_base < page.device_base);
                        crate::insert_at(&mut pages, at, page.clone());
                    }
                    free.lock().extend((1..Self::SLOTS_PER_PAGE).rev().map(|i| (page.device_base, i)));
                    (page, 0)
                }
            };
            // a stale entry (never expected: slots of pool pages are only taken here) is skipped
            if page.claim(i).is_err() {
                continue;
            }
            let s = OwnedSignal { sig: Signal { page, index: i, bits32: false } };
            s.set(initial);
            s.slot().timestamp.store(0, Ordering::Relaxed);
            return s;
        }
    }

    /// Number of pages the pool holds (it grows only when every slot has a live owner).
    pub fn pages(&self) -> usize {
        self.pages.read().len()
    }

    /// The slot at device address `addr` (value or timestamp), if it belongs to this pool:
    /// its page (the handle keeps the slot alive), index and whether it is the timestamp.
    pub fn resolve(&self, addr: u64) -> Option<(alloc::sync::Arc<SignalPage>, usize, bool)> {
        let pages = self.pages.read();
        let page = Self::page_at(&pages, addr)?;
        let (i, ts) = page.index_of(addr)?;
        Some((page.clone(), i, ts))
    }

    /// Load the word at device address `addr` (Acquire), as a device's wait does.
    ///
    /// Errors: [`Error::InvalidArgument`] when `addr` is no slot word of this pool.
    pub fn load(&self, addr: u64) -> Result<u64> {
        let pages = self.pages.read();
        Self::page_at(&pages, addr).ok_or_else(|| not_a_slot(addr))?.load(addr)
    }

    /// Store `value` at device address `addr` as a device's signal or timestamp command does;
    /// a timeline's value is refused ([`SignalPage::store`]).
    ///
    /// Errors: [`Error::InvalidArgument`] when `addr` is no slot word of this pool or is a
    /// timeline's value.
    pub fn store(&self, addr: u64, value: u64) -> Result<()> {
        let pages = self.pages.read();
        Self::page_at(&pages, addr).ok_or_else(|| not_a_slot(addr))?.store(addr, value)
    }
}
