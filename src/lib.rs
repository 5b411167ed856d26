//! # hcq — a hardware-command-queue GPU runtime core
//!
//! `no_std` (+ `alloc`) core of hcq: it talks to devices through MMIO registers, command rings in
//! shared memory and timeline signals, in the design of tinygrad's HCQ device layer. One module
//! per concept; backends live in `hal/*`, deployable images in `boards/*`.
//!
//! | module | concept |
//! |---|---|
//! | [`mmio`] | mapped regions, bounds-checked typed views, the `register!` macro |
//! | [`memory`] | bump allocator, device-address range allocator |
//! | [`dtype`] | scalar element types |
//! | [`signal`] | signals in device-visible memory, waits with timeouts |
//! | [`timeline`] | per-device submission order, hang detection |
//! | [`queue`] | queue builder, backend encoders, patchable replay |
//! | [`ring`] | command rings and kernel-argument pools that never overwrite in-flight work |
//! | [`hcq`] | the engine tying timeline, rings and encoder together |
//! | [`soft`] | the reference command encoding and a software command processor |
//! | [`profile`] | profile events, Chrome trace export |
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

#[cfg(feature = "alloc")]
pub mod deps;
pub mod dtype;
pub mod error;
pub mod memory;
pub mod mmio;
pub mod signal;
#[cfg(feature = "alloc")]
pub mod soft;
pub mod sync;
#[cfg(feature = "alloc")]
pub mod timeline;
#[cfg(feature = "alloc")]
pub mod queue;
#[cfg(feature = "alloc")]
pub mod ring;
#[cfg(feature = "alloc")]
pub mod hcq;
#[cfg(feature = "alloc")]
pub mod profile;

pub use dtype::DType;
pub use error::{Error, Result};
