//! Signal pages: the memory signal slots live in, host-allocated or a backend's mapping, and
//! the per-slot ownership state a pool keeps in them.

use super::{SLOT_BYTES, Slot};
use crate::error::{Error, Result};
use crate::sync::Ordering;
use core::ptr::NonNull;

/// A page of signal slots.
///
/// With `alloc` the page also records, per slot, whether it has an owner ([`OwnedSignal`](super::OwnedSignal))
/// and whether that owner is a device's timeline: one owner per slot, and no signal command
/// may move a timeline ([`SignalPage::store`] refuses).
///
/// # Invariants
/// `ptr` points at `len` initialised, 16-aligned [`Slot`]s valid for the life of the page
/// (kept mapped by `keep` when a backend hands its memory's owner over); only atomic
/// operations touch them.
pub struct SignalPage {
    ptr: NonNull<Slot>,
    pub(super) len: usize,
    pub(super) device_base: u64,
    /// The slots were allocated by [`SignalPage::new_host`] (from `Box::into_raw`) and are
    /// freed on drop.
    #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
    owned: bool,
    /// Per slot: [`FREE`], [`OWNED`] or [`TIMELINE`]. (Not part of the signal protocol: a
    /// claim is taken and dropped by the one thread that owns the slot, so plain core atomics
    /// serve under loom too.)
    #[cfg(feature = "alloc")]
    state: alloc::boxed::Box<[core::sync::atomic::AtomicU8]>,
    /// The free list of the [`SignalPool`] this page belongs to: a slot is pushed back when
    /// its owner drops.
    #[cfg(feature = "alloc")]
    pub(super) home: Option<alloc::sync::Arc<FreeList>>,
    /// The owner of the memory of a page made by [`SignalPage::from_raw_owning`]; dropped
    /// after the page.
    #[cfg(feature = "alloc")]
    _keep: Option<alloc::boxed::Box<dyn core::any::Any + Send + Sync>>,
}

/// A pool's free slots: (page base address, slot index).
#[cfg(feature = "alloc")]
pub(super) type FreeList = spin::Mutex<alloc::vec::Vec<(u64, usize)>>;

#[cfg(feature = "alloc")]
const FREE: u8 = 0;
#[cfg(feature = "alloc")]
const OWNED: u8 = 1;
#[cfg(feature = "alloc")]
const TIMELINE: u8 = 2;

// SAFETY: slots are only accessed through atomics; the memory lives as long as the page; the
// memory owner it keeps is `Send + Sync`.
unsafe impl Send for SignalPage {}
// SAFETY: as above.
unsafe impl Sync for SignalPage {}

pub(super) fn not_a_slot(addr: u64) -> Error {
    Error::InvalidArgument { what: "signal address is not a signal slot", value: addr }
}

impl SignalPage {
    #[cfg(feature = "alloc")]
    fn states(len: usize) -> alloc::boxed::Box<[core::sync::atomic::AtomicU8]> {
        (0..len).map(|_| core::sync::atomic::AtomicU8::new(FREE)).collect()
    }

    /// A page of `len` zeroed slots in host memory; the device address of a slot is its CPU
    /// address (for devices that share the host's address space: CPU, simulated devices).
    #[cfg(feature = "alloc")]
    pub fn new_host(len: usize) -> Self {
        Self::new_host_in(len, None)
    }

    #[cfg(feature = "alloc")]
    pub(super) fn new_host_in(len: usize, home: Option<alloc::sync::Arc<FreeList>>) -> Self {
        let len = len.max(1);
        let owned: alloc::boxed::Box<[Slot]> = (0..len).map(|_| Slot::default()).collect();
        // into_raw: the page owns the slots through its pointer alone, so no later move of a
        // Box can invalidate it
        let raw = alloc::boxed::Box::into_raw(owned);
        let ptr = NonNull::new(raw.cast::<Slot>()).unwrap_or(NonNull::dangling());
        // CAST: host devices see host memory at its CPU address; pointers fit in 64 bits.
        let device_base = ptr.as_ptr() as u64;
        Self { ptr, len, device_base, owned: true, state: Self::states(len), home, _keep: None }
    }

    /// Wrap device-visible memory a backend mapped.
    ///
    /// # Safety
    /// `ptr` must point at `len` 16-byte-aligned slots that stay mapped, readable and writable
    /// for the life of the page, are accessed only atomically by the CPU, and are seen by the
    /// device at `device_base + 16 * i`. The memory must be initialised (zeroed is fine).
    #[cfg(not(loom))]
    pub unsafe fn from_raw(ptr: NonNull<Slot>, len: usize, device_base: u64) -> Self {
        Self {
            ptr,
            len,
            device_base,
            owned: false,
            #[cfg(feature = "alloc")]
            state: Self::states(len),
            #[cfg(feature = "alloc")]
            home: None,
            #[cfg(feature = "alloc")]
            _keep: None,
        }
    }

    /// Wrap device-visible memory a backend mapped, taking over `owner`, the object whose life
    /// keeps the memory mapped (a GPU object): the page drops it after its last use, so every
    /// [`Signal`](super::Signal) pointing into the memory keeps it alive.
    ///
    /// # Safety
    /// As [`SignalPage::from_raw`], with "for as long as `owner` lives" for "for the life of
    /// the page": the memory stays mapped, readable and writable until `owner` is dropped, and
    /// nothing but the page's atomics accesses it from the CPU meanwhile.
    #[cfg(all(feature = "alloc", not(loom)))]
    pub unsafe fn from_raw_owning(
        ptr: NonNull<Slot>,
        len: usize,
        device_base: u64,
        owner: alloc::boxed::Box<dyn core::any::Any + Send + Sync>,
    ) -> Self {
        Self { ptr, len, device_base, owned: false, state: Self::states(len), home: None, _keep: Some(owner) }
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the page has no slot.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot `i`, if it exists.
    pub fn slot(&self, i: usize) -> Option<&Slot> {
        if i < self.len {
            // SAFETY: `i < len` and the page invariant makes every slot below `len` valid.
            Some(unsafe { &*self.ptr.as_ptr().add(i) })
        } else {
            None
        }
    }

    /// Device address of slot `i`'s value.
    pub fn device_addr(&self, i: usize) -> u64 {
        self.device_base + SLOT_BYTES * i as u64
    }

    /// The slot index and word (`false` = value, `true` = timestamp) at device address `addr`.
    pub(super) fn index_of(&self, addr: u64) -> Option<(usize, bool)> {
        let off = addr.checked_sub(self.device_base)?;
        if off % 8 != 0 {
            return None;
        }
        let i = usize::try_from(off / SLOT_BYTES).ok()?;
        (i < self.len).then_some((i, off % SLOT_BYTES == 8))
    }

    /// The slot whose value (`+0`) or timestamp (`+8`) lies at device address `addr`, and which
    /// of the two it is (`false` = value, `true` = timestamp). `None` for any other address.
    pub fn resolve(&self, addr: u64) -> Option<(&Slot, bool)> {
        let (i, ts) = self.index_of(addr)?;
        Some((self.slot(i)?, ts))
    }

    /// Whether slot `i` is a device's timeline (its value moves only with that device's
    /// completed work).
    pub fn is_timeline(&self, i: usize) -> bool {
        #[cfg(feature = "alloc")]
        return self.state.get(i).is_some_and(|s| s.load(core::sync::atomic::Ordering::Acquire) == TIMELINE);
        #[cfg(not(feature = "alloc"))]
        {
            // without `alloc` there are no timelines
            let _ = i;
            false
        }
    }

    /// Whether a signal command may write the value word of slot `i`: any slot but a
    /// timeline's (the one check every command processor makes before a signal store).
    ///
    /// Errors: [`Error::InvalidArgument`] naming `addr` for a timeline slot.
    pub fn check_signal_target(&self, i: usize, addr: u64) -> Result<()> {
        if self.is_timeline(i) {
            return Err(Error::InvalidArgument { what: "a signal command may not target a timeline", value: addr });
        }
        Ok(())
    }

    /// Load the word (value or timestamp) at device address `addr`.
    ///
    /// Errors: [`Error::InvalidArgument`] when `addr` is not a slot word of this page.
    pub fn load(&self, addr: u64) -> Result<u64> {
        let (slot, ts) = self.resolve(addr).ok_or_else(|| not_a_slot(addr))?;
        Ok(if ts { slot.timestamp() } else { slot.value() })
    }

    /// Store `value` at device address `addr` as a signal (or timestamp) command of a device
    /// does (Release): a value word of a timeline is refused ([`SignalPage::check_signal_target`]).
    ///
    /// Errors: [`Error::InvalidArgument`] when `addr` is not a slot word of this page or is a
    /// timeline's value.
    pub fn store(&self, addr: u64, value: u64) -> Result<()> {
        let (i, ts) = self.index_of(addr).ok_or_else(|| not_a_slot(addr))?;
        if !ts {
            self.check_signal_target(i, addr)?;
        }
        // SAFETY: not a timeline's value (checked above); a signal command acts for the
        // slot's owner, who put the command in its queue.
        unsafe { self.store_unchecked(i, ts, value) };
        Ok(())
    }

    /// # Safety
    /// As [`Slot::device_words`].
    unsafe fn store_unchecked(&self, i: usize, ts: bool, value: u64) {
        if let Some(slot) = self.slot(i) {
            if ts { slot.timestamp.store(value, Ordering::Release) } else { slot.value.store(value, Ordering::Release) }
        }
    }

    /// Take slot `i` for an owner.
    #[cfg(feature = "alloc")]
    pub(super) fn claim(&self, i: usize) -> Result<()> {
        use core::sync::atomic::Ordering as O;
        let s = self.state.get(i).ok_or(Error::OutOfBounds {
            what: "signal slot",
            offset: i as u64,
            len: 1,
            limit: self.len as u64,
        })?;
        s.compare_exchange(FREE, OWNED, O::AcqRel, O::Acquire)
            .map(|_| ())
            .map_err(|_| Error::InvalidArgument { what: "signal slot already has an owner", value: i as u64 })
    }

    /// Mark owned slot `i` as a timeline.
    #[cfg(feature = "alloc")]
    pub(super) fn mark_timeline(&self, i: usize) {
        if let Some(s) = self.state.get(i) {
            s.store(TIMELINE, core::sync::atomic::Ordering::Release);
        }
    }

    /// Give slot `i` up (its owner dropped); back on the pool's free list for a pool page.
    #[cfg(feature = "alloc")]
    pub(super) fn release(&self, i: usize) {
        if let Some(s) = self.state.get(i) {
            s.store(FREE, core::sync::atomic::Ordering::Release);
        }
        if let Some(free) = &self.home {
            free.lock().push((self.device_base, i));
        }
    }
}

impl Drop for SignalPage {
    fn drop(&mut self) {
        #[cfg(feature = "alloc")]
        if self.owned {
            let slice = core::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len);
            // SAFETY: `owned` pages come from `Box::into_raw` of exactly this slice in
            // `new_host`, and are dropped once.
            drop(unsafe { alloc::boxed::Box::from_raw(slice) });
        }
    }
}

/// How a [`Signal`](super::Signal) holds its page: shared with `alloc`, a static page without it.
#[cfg(feature = "alloc")]
pub type SignalPageRef = alloc::sync::Arc<SignalPage>;
/// How a [`Signal`](super::Signal) holds its page: shared with `alloc`, a static page without it.
#[cfg(not(feature = "alloc"))]
pub type SignalPageRef = &'static SignalPage;
