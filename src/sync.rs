//! Atomics used by the signal/ring protocol: `core`'s normally, loom's under `--cfg loom` so the
//! protocol can be model-checked (`RUSTFLAGS="--cfg loom" cargo test --test loom --release`).

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};

#[cfg(not(loom))]
pub use core::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};

/// Hint to the CPU that we are spinning (a loom yield under loom).
#[inline]
pub fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// A lock that may be held across a wait for the device (ring or kernel-argument space, up to
/// the timeline's timeout): with `std` it is `std::sync::Mutex`, so a second thread that wants
/// it sleeps in the kernel instead of spinning for that long; without `std` (one core, or no
/// scheduler to sleep in) it is a spin lock. A poisoned lock is taken anyway: the state it
/// guards (ring positions, a bump pointer) is updated only after every fallible step.
pub struct Lock<T>(#[cfg(feature = "std")] std::sync::Mutex<T>, #[cfg(not(feature = "std"))] spin::Mutex<T>);

/// The guard of a [`Lock`].
#[cfg(feature = "std")]
pub type LockGuard<'a, T> = std::sync::MutexGuard<'a, T>;
/// The guard of a [`Lock`].
#[cfg(not(feature = "std"))]
pub type LockGuard<'a, T> = spin::MutexGuard<'a, T>;

impl<T> Lock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        #[cfg(feature = "std")]
        return Self(std::sync::Mutex::new(value));
        #[cfg(not(feature = "std"))]
        return Self(spin::Mutex::new(value));
    }

    /// Take the lock, sleeping (with `std`) or spinning until it is free.
    #[inline]
    pub fn lock(&self) -> LockGuard<'_, T> {
        #[cfg(feature = "std")]
        return self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        #[cfg(not(feature = "std"))]
        return self.0.lock();
    }

    /// Take the lock if it is free now.
    #[inline]
    pub fn try_lock(&self) -> Option<LockGuard<'_, T>> {
        #[cfg(feature = "std")]
        return match self.0.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        #[cfg(not(feature = "std"))]
        return self.0.try_lock();
    }
}

impl<T> core::fmt::Debug for Lock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lock").finish_non_exhaustive()
    }
}
