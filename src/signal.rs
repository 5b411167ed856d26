//! Signals: 16-byte slots in device-visible memory, a `u64` value at +0 and a `u64` timestamp at
//! +8, written by the device and read by the host (and by other devices' queues).
//!
//! Signals live in [`SignalPage`]s. A page is either host memory the device can see (CPU and
//! simulated devices, where device address == CPU address), or a mapping a backend provides
//! ([`SignalPage::from_raw`]). Values are read and written with atomic operations
//! (Acquire/Release), so a value observed by the host orders everything the device wrote before
//! it.
//!
//! [`Signal::wait`] spins, then yields, then calls the backend's sleep hook; the timeout clock
//! restarts whenever the value moves (a slow device is not a hung one), and the value is read once
//! more before giving up. Backends that write 32-bit payloads (Adreno's CP_EVENT_WRITE, KGSL
//! timestamps) compare by wrapping difference: see [`reached`]. **Limit:** with 32-bit payloads
//! the awaited value must be within 2^31 of the current one, so a timeline must be rebased before
//! it runs 2^31 submissions ahead of a waiter.

use crate::error::{DeviceName, Error, Result};
use crate::stamp::{Stamp, StampBits};
use crate::sync::{AtomicU64, Ordering, spin_hint};
use core::ptr::NonNull;

/// One signal slot as it lies in memory.
///
/// Its words are read through [`Slot::value`] and [`Slot::timestamp`]; only an owner
/// ([`OwnedSignal::set`]), the device's command processor ([`SignalPage::store`] and the
/// `unsafe` [`Slot::device_words`]) and the engine ([`crate::timeline::Timeline`]) write them.
#[repr(C, align(16))]
#[derive(Debug, Default)]
pub struct Slot {
    value: AtomicU64,
    timestamp: AtomicU64,
}

impl Slot {
    /// The value (Acquire).
    #[inline]
    pub fn value(&self) -> u64 {
        self.value.load(Ordering::Acquire)
    }

    /// The timestamp (Acquire).
    #[inline]
    pub fn timestamp(&self) -> u64 {
        self.timestamp.load(Ordering::Acquire)
    }

    /// The value and timestamp words themselves, for code that stands in for the device (a
    /// model of a command processor, a bus that lands a device's 32-bit writes in the slot).
    ///
    /// # Safety
    /// Whoever stores through the value word acts as the device: a timeline's value (see
    /// [`SignalPage::is_timeline`]) may only be set to the stamp of a submission whose work has
    /// finished all its memory accesses, never backwards and never ahead of what was
    /// submitted, because buffer memory is freed and reused once its stamp is reached; any
    /// other slot may only be written on behalf of its owner.
    #[inline]
    pub unsafe fn device_words(&self) -> (&AtomicU64, &AtomicU64) {
        (&self.value, &self.timestamp)
    }
}

/// Size of one slot in bytes.
pub const SLOT_BYTES: u64 = 16;

/// True when `current` has reached `target`. With `bits32`, compares the low 32 bits by wrapping
/// difference (valid while the two are within 2^31 of each other).
#[inline]
pub const fn reached(current: u64, target: u64, bits32: bool) -> bool {
    let bits = if bits32 { StampBits::Low32 } else { StampBits::Full };
    Stamp::new(target).reached_by(Stamp::new(current), bits)
}

/// What a wait needs from its device: a clock, ways to pass the time, and the device's fault
/// state. Methods take `&self` and are called from the waiting thread.
pub trait WaitHooks: Send + Sync {
    /// Monotonic time in nanoseconds.
    fn now_ns(&self) -> u64;
    /// Give up the CPU briefly (after the spin phase). Default: a spin hint.
    fn yield_now(&self) {
        spin_hint();
    }
    /// The backend sleep hook, called once the wait has made no progress for `idle_ns`
    /// (an interrupt wait, a KGSL timestamp wait, a short sleep). Default: yield.
    fn sleep(&self, idle_ns: u64) {
        let _ = idle_ns;
        self.yield_now();
    }
    /// An error the device reported (a command-processor fault); ends the wait with that error.
    fn fault(&self) -> Option<Error> {
        None
    }
}

/// Wait policy: how long to spin and yield before sleeping, and when to give up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Spin for this long without progress before yielding.
    pub spin_ns: u64,
    /// Yield for this long without progress before calling the sleep hook.
    pub yield_ns: u64,
    /// Give up after this long without progress.
    pub timeout_ns: u64,
}

impl WaitPolicy {
    /// Default timeout (tinygrad's `HCQDEV_WAIT_TIMEOUT_MS`): 30 s.
    pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

    /// A policy with the given timeout and default spin (20 µs) and yield (1 ms) phases.
    pub const fn with_timeout_ms(ms: u64) -> Self {
        Self { spin_ns: 20_000, yield_ns: 1_000_000, timeout_ns: ms.saturating_mul(1_000_000) }
    }
}

impl Default for WaitPolicy {
    fn default() -> Self {
        Self::with_timeout_ms(Self::DEFAULT_TIMEOUT_MS)
    }
}

/// A page of signal slots.
///
/// With `alloc` the page also records, per slot, whether it has an owner ([`OwnedSignal`])
/// and whether that owner is a device's timeline: one owner per slot, and no signal command
/// may move a timeline ([`SignalPage::store`] refuses).
///
/// # Invariants
/// `ptr` points at `len` initialised, 16-aligned [`Slot`]s valid for the life of the page
/// (kept mapped by `keep` when a backend hands its memory's owner over); only atomic
/// operations touch them.
pub struct SignalPage {
    ptr: NonNull<Slot>,
    len: usize,
    device_base: u64,
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
    home: Option<alloc::sync::Arc<FreeList>>,
    /// The owner of the memory of a page made by [`SignalPage::from_raw_owning`]; dropped
    /// after the page.
    #[cfg(feature = "alloc")]
    _keep: Option<alloc::boxed::Box<dyn core::any::Any + Send + Sync>>,
}

/// A pool's free slots: (page base address, slot index).
#[cfg(feature = "alloc")]
type FreeList = spin::Mutex<alloc::vec::Vec<(u64, usize)>>;

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

fn not_a_slot(addr: u64) -> Error {
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
    fn new_host_in(len: usize, home: Option<alloc::sync::Arc<FreeList>>) -> Self {
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
    /// [`Signal`] pointing into the memory keeps it alive.
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
    fn index_of(&self, addr: u64) -> Option<(usize, bool)> {
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
    fn claim(&self, i: usize) -> Result<()> {
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
    fn mark_timeline(&self, i: usize) {
        if let Some(s) = self.state.get(i) {
            s.store(TIMELINE, core::sync::atomic::Ordering::Release);
        }
    }

    /// Give slot `i` up (its owner dropped); back on the pool's free list for a pool page.
    #[cfg(feature = "alloc")]
    fn release(&self, i: usize) {
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

/// How a [`Signal`] holds its page: shared with `alloc`, a static page without it.
#[cfg(feature = "alloc")]
pub type SignalPageRef = alloc::sync::Arc<SignalPage>;
/// How a [`Signal`] holds its page: shared with `alloc`, a static page without it.
#[cfg(not(feature = "alloc"))]
pub type SignalPageRef = &'static SignalPage;

/// A handle to one signal slot, to read it, wait on it and name it in queue commands.
///
/// Handles are read-only and may be cloned freely; the slot's value is written only by its
/// one owner ([`OwnedSignal::set`]), by commands on a device, and, for a timeline, by the
/// engine. A handle whose owner dropped still reads the (now reused) slot, memory-safely.
#[derive(Clone)]
pub struct Signal {
    page: SignalPageRef,
    index: usize,
    bits32: bool,
}

impl core::fmt::Debug for Signal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Signal")
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("value", &self.value())
            .finish()
    }
}

impl Signal {
    /// Signal `index` of `page` (64-bit compare). Errors when the page has no such slot.
    pub fn new(page: SignalPageRef, index: usize) -> Result<Self> {
        if index >= page.len() {
            return Err(Error::OutOfBounds {
                what: "signal slot",
                offset: index as u64,
                len: 1,
                limit: page.len() as u64,
            });
        }
        Ok(Self { page, index, bits32: false })
    }

    /// Compare 32-bit payloads by wrapping difference (for backends that write 32 bits).
    pub fn with_32bit_payload(mut self) -> Self {
        self.bits32 = true;
        self
    }

    /// True when values are compared as 32-bit wrapping stamps.
    pub fn is_32bit(&self) -> bool {
        self.bits32
    }

    #[inline]
    fn slot(&self) -> &Slot {
        // PANIC: never: `index < page.len()` is checked in `new` and pages never shrink. (Kept a
        // panic, not `unwrap_unchecked`: a broken invariant must stop, not read out of bounds.)
        match self.page.slot(self.index) {
            Some(s) => s,
            None => unreachable!(),
        }
    }

    /// Device address of the value (`+0`).
    pub fn addr(&self) -> u64 {
        self.page.device_addr(self.index)
    }

    /// Device address of the timestamp (`+8`).
    pub fn timestamp_addr(&self) -> u64 {
        self.addr() + 8
    }

    /// The current value.
    #[inline]
    pub fn value(&self) -> u64 {
        self.slot().value.load(Ordering::Acquire)
    }

    /// Set the value from the host (the owner's [`OwnedSignal::set`], the timeline's engine).
    #[inline]
    #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
    pub(crate) fn set(&self, value: u64) {
        self.slot().value.store(value, Ordering::Release)
    }

    /// The last timestamp the device wrote (raw ticks).
    #[inline]
    pub fn timestamp(&self) -> u64 {
        self.slot().timestamp.load(Ordering::Acquire)
    }

    /// True when the value has reached `target`.
    #[inline]
    pub fn is_reached(&self, target: u64) -> bool {
        reached(self.value(), target, self.bits32)
    }

    /// Wait until the value reaches `target`.
    ///
    /// Spins for `policy.spin_ns`, then yields until `policy.yield_ns`, then calls
    /// `hooks.sleep` — each phase measured from the last *progress* (a change of the value).
    /// After `policy.timeout_ns` without progress the value is read once more; if it is still
    /// behind, the result is [`Error::Timeout`] naming `device`, the value awaited and the last
    /// value seen. A fault reported by `hooks.fault()` ends the wait with that error.
    pub fn wait(&self, target: u64, policy: &WaitPolicy, hooks: &dyn WaitHooks, device: &DeviceName) -> Result<()> {
        let mut last = self.value();
        if reached(last, target, self.bits32) {
            return Ok(());
        }
        let mut since = hooks.now_ns();
        let mut now = since;
        let mut polls: u32 = 0;
        loop {
            let v = self.value();
            if reached(v, target, self.bits32) {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            let spinning = now.saturating_sub(since) < policy.spin_ns;
            // while spinning, read the clock only every 16 polls (a clock read costs more
            // than a poll)
            if !spinning || polls.is_multiple_of(16) {
                now = hooks.now_ns();
            }
            if v != last {
                last = v;
                since = now;
            }
            let idle = now.saturating_sub(since);
            if idle > policy.timeout_ns {
                let v = self.value();
                if reached(v, target, self.bits32) {
                    return Ok(());
                }
                return Err(Error::Timeout {
                    device: device.clone(),
                    awaited: target,
                    last: v,
                    timeout_ms: policy.timeout_ns / 1_000_000,
                });
            }
            if polls.is_multiple_of(64)
                && let Some(e) = hooks.fault()
            {
                return Err(e);
            }
            if idle < policy.spin_ns {
                spin_hint();
            } else if idle < policy.yield_ns {
                hooks.yield_now();
            } else {
                hooks.sleep(idle);
            }
        }
    }
}

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

/// Nanoseconds since the first call in this process: the host clock of soft devices'
/// timestamps and of host-side profile events, so both line up in one trace.
#[cfg(feature = "std")]
pub fn host_clock_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    // CAST: u64 nanoseconds last 584 years of process uptime.
    EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

/// [`WaitHooks`] on std: the process clock ([`host_clock_ns`]), `thread::yield_now`, and a
/// 50 µs sleep.
#[cfg(feature = "std")]
#[derive(Debug, Default)]
pub struct StdHooks;

#[cfg(feature = "std")]
impl WaitHooks for StdHooks {
    fn now_ns(&self) -> u64 {
        host_clock_ns()
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn sleep(&self, _idle_ns: u64) {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::error::device_name;
    /// A fake clock that advances 1 µs per read and lets a test script the signal's value.
    struct FakeClock<'a> {
        t: Cell,
        on_tick: &'a (dyn Fn(u64) + Sync),
    }
    struct Cell(core::sync::atomic::AtomicU64);
    impl Cell {
        fn new(v: u64) -> Self {
            Cell(core::sync::atomic::AtomicU64::new(v))
        }
        fn get(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
    }
    impl WaitHooks for FakeClock<'_> {
        fn now_ns(&self) -> u64 {
            let t = self.t.0.fetch_add(1_000, Ordering::Relaxed) + 1_000;
            (self.on_tick)(t);
            t
        }
    }

    #[test]
    fn wrapping_compare_handles_32bit_wrap() {
        assert!(reached(5, 5, false) && reached(6, 5, false) && !reached(4, 5, false));
        // 0x0000_0002 comes after 0xffff_fffe once the 32-bit payload wrapped
        assert!(reached(2, 0xffff_fffe, true));
        assert!(!reached(0xffff_fffe, 2, true));
        assert!(!reached(2, 0xffff_fffe, false));
    }

    #[test]
    fn wait_returns_once_value_is_reached() {
        let pool = SignalPool::new();
        let s = pool.alloc(0);
        let s2 = s.signal().clone();
        let on_tick = move |t: u64| {
            if t >= 50_000 {
                s2.set(3)
            }
        };
        let clock = FakeClock { t: Cell::new(0), on_tick: &on_tick };
        s.wait(3, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("T")).unwrap();
        assert_eq!(s.value(), 3);
    }

    #[test]
    fn timeout_names_device_target_and_last_value() {
        let pool = SignalPool::new();
        let s = pool.alloc(7);
        let clock = FakeClock { t: Cell::new(0), on_tick: &|_| {} };
        let e = s.wait(9, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("SIM:1")).unwrap_err();
        assert_eq!(e, Error::Timeout { device: device_name("SIM:1"), awaited: 9, last: 7, timeout_ms: 1 });
        // it gave up after about the timeout: 1 ms at 1 µs per clock read
        assert!(clock.t.get() < 1_200_000, "waited {} ns", clock.t.get());
    }

    #[test]
    fn progress_restarts_the_timeout_clock() {
        let pool = SignalPool::new();
        let s = pool.alloc(0);
        let s2 = s.signal().clone();
        // the value creeps up by one every 0.5 ms and reaches 6 after 3 ms: longer than the
        // 1 ms timeout in total, but never 1 ms without progress
        let on_tick = move |t: u64| s2.set((t / 500_000).min(6));
        let clock = FakeClock { t: Cell::new(0), on_tick: &on_tick };
        s.wait(6, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("T")).unwrap();
    }

    #[test]
    fn value_reached_during_timeout_is_not_an_error() {
        // the final re-read sees the value: no spurious "not set to X, but X" error
        let pool = SignalPool::new();
        let s = pool.alloc(0);
        let s2 = s.signal().clone();
        let on_tick = move |t: u64| {
            if t > 1_000_000 {
                s2.set(1)
            }
        };
        let clock = FakeClock { t: Cell::new(0), on_tick: &on_tick };
        s.wait(1, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("T")).unwrap();
    }

    #[test]
    fn pool_resolves_value_and_timestamp_addresses() {
        let pool = SignalPool::new();
        let a = pool.alloc(1);
        let b = pool.alloc(2);
        let (_, i, ts) = pool.resolve(b.addr()).unwrap();
        assert_eq!((i, ts), (b.index, false));
        let (_, _, ts) = pool.resolve(a.timestamp_addr()).unwrap();
        assert!(ts);
        assert!(pool.resolve(a.addr() + 4).is_none());
        assert!(pool.resolve(0).is_none());
        let a_addr = a.addr();
        drop(a);
        let c = pool.alloc(5);
        assert_eq!(c.value(), 5);
        assert_eq!(c.addr(), a_addr, "a dropped owner gave its slot back");
    }

    #[test]
    fn a_slot_has_one_owner_and_returns_to_the_pool_when_it_drops() {
        let pool = SignalPool::new();
        // an owner per call, and no slot leaks: 10 000 allocations that drop at once take
        // one page (500 under Miri: two pages' worth of slots)
        for i in 0..if cfg!(miri) { 500 } else { 10_000 } {
            let s = pool.alloc(i);
            assert_eq!(s.value(), i);
        }
        assert_eq!(pool.pages(), 1);
        let live: std::vec::Vec<OwnedSignal> =
            (0..SignalPool::SLOTS_PER_PAGE as u64 + 1).map(|i| pool.alloc(i)).collect();
        assert_eq!(pool.pages(), 2);
        let mut addrs: std::vec::Vec<u64> = live.iter().map(|s| s.addr()).collect();
        addrs.sort_unstable();
        addrs.dedup();
        assert_eq!(addrs.len(), live.len(), "two live owners of one slot");
        // a page of the caller's: one owner per slot
        let page = alloc::sync::Arc::new(SignalPage::new_host(2));
        let first = OwnedSignal::new(page.clone(), 1).unwrap();
        assert!(matches!(OwnedSignal::new(page.clone(), 1), Err(Error::InvalidArgument { value: 1, .. })));
        drop(first);
        OwnedSignal::new(page, 1).unwrap();
        // a pool's page is the pool's
        let (pool_page, i, _) = pool.resolve(live[0].addr()).unwrap();
        assert!(OwnedSignal::new(pool_page, (i + 1) % SignalPool::SLOTS_PER_PAGE).is_err());
    }

    #[test]
    fn signal_commands_may_not_store_to_a_timeline() {
        let pool = SignalPool::new();
        let tl = crate::timeline::Timeline::new(device_name("T"), pool.alloc(0));
        let other = pool.alloc(0);
        let e = pool.store(tl.signal().addr(), 7).unwrap_err();
        assert_eq!(
            e,
            Error::InvalidArgument { what: "a signal command may not target a timeline", value: tl.signal().addr() }
        );
        assert_eq!(tl.signal().value(), 0);
        // its timestamp word and any other slot are fine
        pool.store(tl.signal().timestamp_addr(), 3).unwrap();
        pool.store(other.addr(), 9).unwrap();
        assert_eq!((tl.signal().timestamp(), other.value()), (3, 9));
        // (the timeline's own command processor signals it through its timeline handle, not
        // the pool: `soft::cp`)
        assert!(pool.load(tl.signal().addr() + 4).is_err() && pool.store(8, 1).is_err());
    }
}
