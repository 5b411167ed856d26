//! # hcq — a hardware-command-queue GPU runtime core
//!
//! `no_std` (+ `alloc`) core of hcq: it talks to devices through MMIO registers, command rings in
//! shared memory and timeline signals, in the design of tinygrad's HCQ device layer. One module
//! per concept; backends live in `hal/*`, deployable images in `boards/*`.
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

pub mod bundle;
pub mod dtype;
pub mod error;
pub mod mmio;

pub use dtype::DType;
pub use error::{Error, Result};
