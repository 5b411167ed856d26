//! # hcq-sim — simulated hardware for host tests
//!
//! Std-only stand-ins for the hardware that hcq drives, so register code and the HCQ engine can
//! be tested on a host without a device:
//!
//! - [`mmio`]: [`MockMmio`], a memory-backed [`hcq::mmio::MmioBus`] with per-register hooks
//!   (doorbells), a bounded access log, fault injection (frozen registers, lost writes, a bus
//!   that stops answering) and a side door for the simulated device that bypasses all of them.
//! - [`device`]: [`SimDevice`], the `SIM` device: the HCQ engine end to end, with command
//!   processors on host threads that run host functions as kernels, copy memory, and inject
//!   latency, stalls and hangs.
//! - [`cpu`]: [`cpu::SimBackend`], the bundle runner's backend that runs the host's CPU objects
//!   through a [`SimDevice`] (one exec packet per kernel).
//! - [`trace`]: a profiled run on a [`SimDevice`] (device timestamps around each program,
//!   allocation events) exported as a Chrome trace and a summary table.
#![warn(missing_docs)]

#[cfg(all(
    any(target_os = "linux", target_os = "macos"),
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(all(target_os = "macos", target_arch = "aarch64"))
))]
pub mod cpu;
pub mod device;
pub mod mmio;
pub mod plug;
pub mod trace;

pub use device::{SimDevice, SimFaults, SimHandle};

pub use mmio::{Access, AccessKind, DevicePort, MockMmio, WriteAction, WriteEvent};
