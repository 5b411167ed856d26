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
#[repr(C, align(16))]
#[derive(Debug, Default)]
pub struct Slot {
    /// The signal's value.
    pub value: AtomicU64,
    /// The timestamp (ticks of the device clock) of the last timestamp command.
    pub timestamp: AtomicU64,
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
/// # Invariants
/// `ptr` points at `len` initialised, 16-aligned [`Slot`]s valid for the life of the page; only
/// atomic operations touch them.
pub struct SignalPage {
    ptr: NonNull<Slot>,
    len: usize,
    device_base: u64,
    /// The slots were allocated by [`SignalPage::new_host`] (from `Box::into_raw`) and are
    /// freed on drop.
    #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
    owned: bool,
}

// SAFETY: slots are only accessed through atomics; the memory lives as long as the page.
unsafe impl Send for SignalPage {}
// SAFETY: as above.
unsafe impl Sync for SignalPage {}

impl SignalPage {
    /// A page of `len` zeroed slots in host memory; the device address of a slot is its CPU
    /// address (for devices that share the host's address space: CPU, simulated devices).
    #[cfg(feature = "alloc")]
    pub fn new_host(len: usize) -> Self {
        let len = len.max(1);
        let owned: alloc::boxed::Box<[Slot]> = (0..len).map(|_| Slot::default()).collect();
        // into_raw: the page owns the slots through its pointer alone, so no later move of a
        // Box can invalidate it
        let raw = alloc::boxed::Box::into_raw(owned);
        let ptr = NonNull::new(raw.cast::<Slot>()).unwrap_or(NonNull::dangling());
        // CAST: host devices see host memory at its CPU address; pointers fit in 64 bits.
        let device_base = ptr.as_ptr() as u64;
        Self { ptr, len, device_base, owned: true }
    }

    /// Wrap device-visible memory a backend mapped.
    ///
    /// # Safety
    /// `ptr` must point at `len` 16-byte-aligned slots that stay mapped, readable and writable
    /// for the life of the page, are accessed only atomically by the CPU, and are seen by the
    /// device at `device_base + 16 * i`. The memory must be initialised (zeroed is fine).
    #[cfg(not(loom))]
    pub unsafe fn from_raw(ptr: NonNull<Slot>, len: usize, device_base: u64) -> Self {
        Self { ptr, len, device_base, owned: false }
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

    /// The slot whose value (`+0`) or timestamp (`+8`) lies at device address `addr`, and which
    /// of the two it is (`false` = value, `true` = timestamp). `None` for any other address.
    pub fn resolve(&self, addr: u64) -> Option<(&Slot, bool)> {
        let off = addr.checked_sub(self.device_base)?;
        if off % 8 != 0 {
            return None;
        }
        let i = usize::try_from(off / SLOT_BYTES).ok()?;
        let slot = self.slot(i)?;
        Some((slot, off % SLOT_BYTES == 8))
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

/// A handle to one signal slot.
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
        // PANIC: never: `index < page.len()` is checked in `new` and pages never shrink.
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

    /// Set the value from the host.
    #[inline]
    pub fn set(&self, value: u64) {
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

/// Hands out signals from host pages (256 per 4 KiB page, as tinygrad does), growing by a page
/// when empty, and takes them back.
#[cfg(feature = "alloc")]
pub struct SignalPool {
    pages: spin::Mutex<alloc::vec::Vec<alloc::sync::Arc<SignalPage>>>,
    free: spin::Mutex<alloc::vec::Vec<(usize, usize)>>,
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
        Self { pages: spin::Mutex::new(alloc::vec::Vec::new()), free: spin::Mutex::new(alloc::vec::Vec::new()) }
    }

    /// A fresh signal set to `initial`.
    pub fn alloc(&self, initial: u64) -> Signal {
        let popped = self.free.lock().pop();
        let (p, i) = match popped {
            Some(x) => x,
            None => {
                let mut pages = self.pages.lock();
                let p = pages.len();
                pages.push(alloc::sync::Arc::new(SignalPage::new_host(Self::SLOTS_PER_PAGE)));
                let mut free = self.free.lock();
                free.extend((1..Self::SLOTS_PER_PAGE).rev().map(|i| (p, i)));
                (p, 0)
            }
        };
        let page = self.pages.lock()[p].clone();
        let s = Signal { page, index: i, bits32: false };
        s.set(initial);
        s.slot().timestamp.store(0, Ordering::Relaxed);
        s
    }

    /// Return a signal's slot to the pool (the caller must not use clones of it afterwards for
    /// new meaning; they stay memory-safe).
    pub fn free(&self, s: Signal) {
        let pages = self.pages.lock();
        if let Some(p) = pages.iter().position(|pg| alloc::sync::Arc::ptr_eq(pg, &s.page)) {
            self.free.lock().push((p, s.index));
        }
    }

    /// The slot at device address `addr` (value or timestamp), if it belongs to this pool.
    /// The returned page handle keeps the slot alive.
    pub fn resolve(&self, addr: u64) -> Option<(alloc::sync::Arc<SignalPage>, usize, bool)> {
        let pages = self.pages.lock();
        for pg in pages.iter() {
            if let Some(off) = addr.checked_sub(pg.device_base)
                && off < SLOT_BYTES * pg.len as u64
                && off % 8 == 0
            {
                return Some((pg.clone(), (off / SLOT_BYTES) as usize, off % SLOT_BYTES == 8));
            }
        }
        None
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
        let s2 = s.clone();
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
        let s2 = s.clone();
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
        let s2 = s.clone();
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
        pool.free(a);
        let c = pool.alloc(5);
        assert_eq!(c.value(), 5);
    }
}
