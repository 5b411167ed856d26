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
