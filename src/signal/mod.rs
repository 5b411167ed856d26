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

mod page;
#[cfg(feature = "alloc")]
mod pool;
mod wait;

pub use page::{SignalPage, SignalPageRef};
#[cfg(feature = "alloc")]
pub use pool::{OwnedSignal, SignalPool};
#[cfg(feature = "std")]
pub use wait::{StdHooks, host_clock_ns};
pub use wait::{WaitHooks, WaitPolicy, reached};

use crate::error::{Error, Result};
use crate::sync::{AtomicU64, Ordering};

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
}

#[cfg(all(test, not(loom)))]
mod tests;
