//! # hcq-sim — simulated hardware for host tests
//!
//! Std-only stand-ins for the hardware that hcq drives, so register code and the HCQ engine can
//! be tested on a host without a device:
//!
//! - [`mmio`]: [`MockMmio`], a memory-backed [`hcq::mmio::MmioBus`] with per-register hooks
//!   (doorbells), a bounded access log, fault injection (frozen registers, lost writes, a bus
//!   that stops answering) and a side door for the simulated device that bypasses all of them.
#![warn(missing_docs)]

pub mod mmio;

pub use mmio::{Access, AccessKind, DevicePort, MockMmio, WriteAction, WriteEvent};
