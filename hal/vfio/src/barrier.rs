//! The device write barrier: what a backend issues between filling memory the device reads
//! (DMA buffers, BAR-mapped rings) and the MMIO write that tells the device to look (a doorbell,
//! a DMA start).
//!
//! Volatile accesses are not ordered against each other by the CPU for an observer on the PCIe
//! side, and `fence(Release)` only orders memory for other CPUs: on AArch64 it is a `dmb ish`,
//! which does not cover device (outer-shareable, non-cacheable) accesses. So:
//!
//! - **x86-64**: stores are seen in program order by PCIe devices for WB memory and UC MMIO, but
//!   write-combining mappings (a prefetchable BAR mapped WC) and non-temporal stores are not;
//!   `sfence` drains them. A compiler fence keeps the compiler from moving accesses across.
//! - **AArch64**: `dsb st` completes all earlier stores, to every domain, before any later one.
//! - elsewhere: a sequentially consistent fence (no hardware claim made).

use core::sync::atomic::{Ordering, compiler_fence};

/// Make all earlier stores visible to devices before any later store (see the module docs).
#[inline(always)]
pub fn device_write_barrier() {
    compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` only orders stores; it reads and writes no memory and no registers.
    unsafe {
        core::arch::asm!("sfence", options(nostack, preserves_flags))
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dsb st` only waits for earlier stores to complete; no memory or registers change.
    unsafe {
        core::arch::asm!("dsb st", options(nostack, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    core::sync::atomic::fence(Ordering::SeqCst);
    compiler_fence(Ordering::SeqCst);
}
