//! # hcq — a hardware-command-queue GPU runtime core
//!
//! `no_std` (+ `alloc`) core of hcq: it talks to devices through MMIO registers, command rings in
//! shared memory and timeline signals, in the design of tinygrad's HCQ device layer. One module
//! per concept; backends live in `hal/*`, deployable images in `boards/*`. The bundle format is
//! `hcq-bundle` (`bundle/`), the runner that loads bundles onto a backend `hcq-runner` (`runner/`).
//!
//! | module | concept |
//! |---|---|
//! | [`error`] | the one error type |
//! | [`mmio`] | mapped regions, bounds-checked typed views, the `register!` macro |
//! | [`memory`] | bump allocator, device-address range allocator |
//! | [`dtype`] | scalar element types |
//! | [`allocator`] | allocator trait, LRU cache with out-of-memory retry, host allocator |
//! | [`buffer`] | lazily allocated buffers, views, multi-device buffers |
//! | [`deps`] | range-based read/write hazard tracking |
//! | [`program`] | program images, kernel-argument layout |
//! | [`device`] | the engine-level device trait, canonical names, report lines |
//! | [`stamp`] | completion stamps (timeline values) and engine ids as types |
//! | [`signal`] | signals in device-visible memory, waits with timeouts |
//! | [`timeline`] | per-device submission order, hang detection |
//! | [`queue`] | queue builder, backend encoders, patchable replay |
//! | [`ring`] | command rings and kernel-argument pools that never overwrite in-flight work |
//! | [`barrier`] | the backend's ordering barrier before a doorbell or submit (`dsb st`, `sfence`) |
//! | [`submit`] | the two shapes of an engine: ring + doorbell, indirect buffers + submit hook |
//! | [`engine`] | the engine tying timeline, rings and encoder together |
//! | [`soft`] | the reference command encoding and a software command processor |
//! | [`profile`] | profile events, Chrome trace export |
//!
//! The root re-exports what a backend or a board uses every day: [`Error`]/[`Result`], [`DType`],
//! [`Stamp`], the MMIO bus ([`MmioBus`], [`Width`]; with `std` [`HostRegion`]), signals and
//! their policy ([`Signal`], [`WaitPolicy`]; with `alloc` [`OwnedSignal`]), and with `alloc` the [`Engine`],
//! [`HwQueue`], [`Timeline`], [`Buffer`], [`Device`], [`DeviceLimits`], [`DeviceProperties`] and
//! [`Profiler`]; everything else is reached through its module.
//!
//! Features: `alloc` (buffers, allocators, queues), `std` (implies `alloc`; host allocator, `DEV`
//! environment selection, trace export), `log` or `defmt` (one logging back end, never both).
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

#[macro_use]
mod fmt;

/// Submit a queue in an in-crate test: `submit!(target, engine, &mut q)` for
/// `target.submit(engine, &mut q)` (an `Engine` or a `Submitter`).
#[cfg(all(test, feature = "alloc"))]
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: in-crate tests submit barriers, waits, signals of slots the test owns and
        // execs and copies of test executors that touch only their bounds-checked
        // kernel-argument blocks and test memory that outlives the wait for the stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

pub mod allocator;
pub mod barrier;
#[cfg(feature = "alloc")]
pub mod buffer;
#[cfg(feature = "alloc")]
pub mod deps;
#[cfg(feature = "alloc")]
pub mod device;
pub mod dtype;
#[cfg(feature = "alloc")]
pub mod engine;
pub mod error;
pub mod limits;
pub mod memory;
pub mod mmio;
#[cfg(feature = "alloc")]
pub mod profile;
#[cfg(feature = "alloc")]
pub mod program;
#[cfg(feature = "alloc")]
pub mod queue;
#[cfg(feature = "alloc")]
pub mod ring;
pub mod signal;
#[cfg(feature = "alloc")]
pub mod soft;
pub mod stamp;
#[cfg(feature = "alloc")]
pub mod submit;
pub mod sync;
#[cfg(feature = "alloc")]
pub mod timeline;

pub use dtype::DType;
pub use error::{Error, Result};
pub use mmio::{MmioBus, Width};
pub use signal::{Signal, WaitPolicy};
pub use stamp::Stamp;

#[cfg(feature = "std")]
pub use mmio::HostRegion;
#[cfg(feature = "alloc")]
pub use signal::OwnedSignal;

#[cfg(feature = "alloc")]
pub use buffer::Buffer;
#[cfg(feature = "alloc")]
pub use device::{Device, DeviceLimits, DeviceProperties};
#[cfg(feature = "alloc")]
pub use engine::Engine;
#[cfg(feature = "alloc")]
pub use profile::Profiler;
#[cfg(feature = "alloc")]
pub use queue::HwQueue;
#[cfg(feature = "alloc")]
pub use timeline::Timeline;

/// `v.insert(at, x)` without `Vec::insert`'s panic path: that one is `#[track_caller]`, so its
/// location (this crate's absolute source path) would land in every image that calls it. An
/// `at` past the end (a caller's bug) appends.
#[cfg(feature = "alloc")]
pub(crate) fn insert_at<T>(v: &mut alloc::vec::Vec<T>, at: usize, x: T) {
    v.push(x);
    if let Some(tail) = v.get_mut(at..) {
        tail.rotate_right(1);
    }
}
