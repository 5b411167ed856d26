//! The device write barrier: what a backend issues between filling memory the device reads
//! (DMA buffers, BAR-mapped rings) and the MMIO write that tells the device to look (a doorbell,
//! a DMA start).
//!
//! It is the core's [`hcq::barrier::device_write_barrier`] (`sfence` on x86-64, `dsb st` on
//! AArch64; the core's module docs say why `fence(Release)` is not enough for a device), re-exported
//! so every backend issues the same one.

pub use hcq::barrier::{DeviceBarrier, DeviceWrite, device_write_barrier};
