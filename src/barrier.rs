//! The ordering barrier a backend issues between filling memory its device reads (ring words,
//! an indirect buffer, kernel arguments, DMA buffers) and the write or call that tells the device
//! to look (a doorbell register, a write pointer, `IOCTL_KGSL_GPU_COMMAND`).
//!
//! Which barrier that takes depends on who the device is, so it comes from the backend:
//!
//! - **A device** (a GPU's command processor, a PCIe function): [`device_write_barrier`]. On
//!   AArch64 that is `dsb st` (Linux's `wmb()`): every earlier store completes, to every
//!   shareability domain, before any later one. `fence(Release)` is a `dmb ish` there, which
//!   orders accesses only for observers in the inner-shareable domain (other CPUs) and does not
//!   make the ring visible to the device before a Device-nGnRE doorbell write. On x86-64 stores
//!   reach PCIe devices in program order for write-back memory and uncached MMIO, but not from
//!   write-combining mappings (a prefetchable BAR mapped WC) or non-temporal stores: `sfence`
//!   drains those (Linux's `wmb()` on x86-64 is an `sfence`). Elsewhere a sequentially
//!   consistent fence, with no hardware claim made. Compiler fences keep the compiler from
//!   moving accesses across it.
//! - **A host thread** (the software command processor, the simulated devices): [`host_fence`],
//!   a release fence, which is what another CPU needs (and what the loom models check).
//!
//! [`DeviceBarrier`] is the trait a backend implements to supply its own (a test counts them);
//! [`Barrier`] is the enum an engine holds, so the two common barriers cost no dynamic call.
//!
//! Memory the device reads is written with volatile, word-sized accesses through
//! [`MmioBus`](crate::mmio::MmioBus), never `memcpy` into device memory: the barrier orders
//! stores, it does not make a torn or merged copy safe.

use crate::sync::{Ordering, fence};
use core::sync::atomic::compiler_fence;

/// What a backend issues after filling memory its device reads and before telling the device.
pub trait DeviceBarrier: Send + Sync {
    /// Complete every earlier store (to memory the device reads) before any later one (the
    /// doorbell write, the submit call).
    fn device_write_barrier(&self);
}

/// Make every earlier store visible to devices before any later store: `dsb st` on AArch64,
/// `sfence` on x86-64, a sequentially consistent fence elsewhere (see the module docs).
#[inline(always)]
pub fn device_write_barrier() {
    compiler_fence(Ordering::SeqCst);
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: `sfence` only orders stores; it reads and writes no memory and no registers.
    unsafe {
        core::arch::asm!("sfence", options(nostack, preserves_flags))
    };
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    // SAFETY: `dsb st` only waits for earlier stores to complete; no memory or registers change.
    unsafe {
        core::arch::asm!("dsb st", options(nostack, preserves_flags))
    };
    #[cfg(any(miri, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
    core::sync::atomic::fence(Ordering::SeqCst);
    compiler_fence(Ordering::SeqCst);
}

/// The barrier for a device that is a host thread: a release fence (the consumer's acquire of
/// the doorbell or write pointer pairs with it).
#[inline(always)]
pub fn host_fence() {
    fence(Ordering::Release);
}

/// [`device_write_barrier`] as a [`DeviceBarrier`] (`dsb st` / `sfence`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceWrite;

impl DeviceBarrier for DeviceWrite {
    #[inline(always)]
    fn device_write_barrier(&self) {
        device_write_barrier();
    }
}

/// [`host_fence`] as a [`DeviceBarrier`] (a release fence, for devices that are host threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostFence;

impl DeviceBarrier for HostFence {
    #[inline(always)]
    fn device_write_barrier(&self) {
        host_fence();
    }
}

/// The barrier an engine issues before each doorbell or submit: one of the two common ones
/// without a dynamic call, or a backend's own.
#[cfg(feature = "alloc")]
#[derive(Clone, Default)]
pub enum Barrier {
    /// [`host_fence`]: the device is a host thread (the default of a
    /// [`CommandRing`](crate::ring::CommandRing)).
    #[default]
    Host,
    /// [`device_write_barrier`]: the device is hardware (`dsb st` / `sfence`).
    DeviceWrite,
    /// A backend's own barrier (a test's counting barrier, a platform-specific one).
    Custom(alloc::sync::Arc<dyn DeviceBarrier>),
}

#[cfg(feature = "alloc")]
impl Barrier {
    /// Issue the barrier.
    #[inline(always)]
    pub fn issue(&self) {
        match self {
            Barrier::Host => host_fence(),
            Barrier::DeviceWrite => device_write_barrier(),
            Barrier::Custom(b) => b.device_write_barrier(),
        }
    }
}

#[cfg(feature = "alloc")]
impl core::fmt::Debug for Barrier {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Barrier::Host => "Barrier::Host",
            Barrier::DeviceWrite => "Barrier::DeviceWrite",
            Barrier::Custom(_) => "Barrier::Custom",
        })
    }
}

#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::*;
    use alloc::sync::Arc;
    use core::sync::atomic::AtomicUsize;

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl DeviceBarrier for Count {
        fn device_write_barrier(&self) {
            self.0.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn every_kind_of_barrier_can_be_issued_and_a_custom_one_is_called() {
        Barrier::Host.issue();
        Barrier::DeviceWrite.issue();
        DeviceWrite.device_write_barrier();
        HostFence.device_write_barrier();
        let c = Arc::new(Count::default());
        let b = Barrier::Custom(c.clone());
        b.issue();
        b.clone().issue();
        assert_eq!(c.0.load(core::sync::atomic::Ordering::Relaxed), 2);
        assert_eq!(alloc::format!("{:?}", Barrier::default()), "Barrier::Host");
    }
}
