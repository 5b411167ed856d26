//! The bare-metal ring path: the a6xx CP ringbuffer driven through the core's MMIO interface.
//!
//! Without KGSL there is no IB ioctl: the host owns the CP's ringbuffer. [`A6xxRing`] programs
//! the ring registers (`CP_RB_BASE`, `CP_RB_CNTL`, `CP_RB_RPTR_ADDR`; `a6xx.xml`, fields of
//! `CP_RB_CNTL` from `adreno_common.xml`) on the GPU's register bus, writes PM4 words into the
//! ring memory with the core's [`CommandRing`] (which never overwrites words of a submission
//! whose timeline stamp has not passed, and wraps a submission across the end of the ring), then
//! issues the backend's device write barrier ([`WriteBarrier`], the core's
//! [`hcq::barrier::DeviceBarrier`]) and writes the new write pointer
//! to `CP_RB_WPTR`: the doorbell.
//!
//! Ordering: the ring words (normal, write-combined memory) must reach the point of coherence
//! before the CP sees the new write pointer (a Device-nGnRE register write). On AArch64 that
//! takes `dsb st` (Linux's `wmb()`), which [`DsbSt`] issues; `fence(Release)` is a `dmb ish`,
//! which orders accesses only among CPUs of the inner-shareable domain and does not make the
//! ring visible to the GPU first. Register and ring accesses are word-sized volatile operations
//! through [`MmioBus`].
//!
//! Unlike the core ring's own doorbell ([`CommandRing::kick`], a monotonic pointer), `CP_RB_WPTR`
//! holds a ring index in dwords (`wptr mod size`), and `WPTR == RPTR` means "empty" to the CP.
//! A write that would make the pending words exactly fill the ring therefore first waits until
//! the CP has fetched at least one of them (read from the RPTR shadow), so a full ring is never
//! mistaken for an empty one.
//!
//! What a real board needs before this path can run (firmware, GMU, zap shader, protected
//! registers, SMMU) is listed in the crate README; none of it is done here.

use crate::a6xx::regs::{CP_RB_BASE, CP_RB_CNTL, CP_RB_RPTR, CP_RB_RPTR_ADDR, CP_RB_WPTR};
use alloc::format;
use alloc::sync::Arc;
use hcq::mmio::{MmioBus, Width};
use hcq::ring::{CommandRing, Doorbell};
use hcq::signal::WaitHooks;
use hcq::stamp::Stamp;
use hcq::timeline::Timeline;
use hcq::{Error, Result};

/// The barrier a backend issues after filling the ring and before the doorbell write: the
/// core's [`hcq::barrier::DeviceBarrier`].
pub use hcq::barrier::DeviceBarrier as WriteBarrier;

/// Linux's `wmb()`: `dsb st` on AArch64 (`sfence` on x86-64, for host simulation): the core's
/// [`hcq::barrier::DeviceWrite`].
pub use hcq::barrier::DeviceWrite as DsbSt;

/// `CP_RB_CNTL.BLKSZ` as Linux programs it: log2(32-byte read-pointer report block / 8).
pub const RB_BLKSZ: u8 = 2;
/// Smallest ring: `BUFSZ` 1 = 16 bytes (4 dwords).
pub const MIN_RING_BYTES: usize = 16;
/// Largest ring this backend programs: `BUFSZ` 24 = 128 MiB (the sim's limit; Linux uses 32 KiB).
pub const MAX_RING_BYTES: usize = 8 << 24;

/// Where the ring lives, as the GPU sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// GPU address of the ring memory (4-byte aligned; Linux uses a page-aligned buffer).
    pub ring_gpu: u64,
    /// GPU address of the RPTR shadow, the dword the CP writes its read pointer to.
    pub rptr_gpu: u64,
    /// Submissions in flight at most (the core ring's bookkeeping, allocated once).
    pub max_in_flight: usize,
}

/// The bare-metal a6xx ringbuffer (see the module docs).
pub struct A6xxRing<B: WriteBarrier = DsbSt> {
    ring: CommandRing,
    regs: Arc<dyn MmioBus + Send + Sync>,
    shadow: Arc<dyn MmioBus + Send + Sync>,
    shadow_off: usize,
    /// Ring size in dwords (a power of two).
    size: u64,
    /// The write pointer the CP was last told (monotonic, dwords).
    kicked: u64,
    barrier: B,
}

impl<B: WriteBarrier> core::fmt::Debug for A6xxRing<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("A6xxRing").field("ring", &self.ring).field("kicked", &self.kicked).finish()
    }
}

impl<B: WriteBarrier> A6xxRing<B> {
    /// Take over a freshly reset CP's ringbuffer: `regs` is the GPU's register bus, `mem` the
    /// ring memory (its size a power of two from [`MIN_RING_BYTES`] to [`MAX_RING_BYTES`], seen
    /// by the GPU at `cfg.ring_gpu`), and the dword at `shadow_off` of `shadow` the RPTR shadow
    /// (seen at `cfg.rptr_gpu`). Programs `CP_RB_BASE`, `CP_RB_RPTR_ADDR` and `CP_RB_CNTL`
    /// (BUFSZ, BLKSZ, the CP updates the shadow) and zeroes the shadow. Fails when the sizes or
    /// alignments are wrong or the CP's pointers are not both zero (a CP that was not reset).
    pub fn new(
        regs: Arc<dyn MmioBus + Send + Sync>,
        mem: Arc<dyn MmioBus + Send>,
        shadow: Arc<dyn MmioBus + Send + Sync>,
        shadow_off: usize,
        cfg: RingConfig,
        barrier: B,
    ) -> Result<Self> {
        let bytes = mem.size();
        if !bytes.is_power_of_two() || !(MIN_RING_BYTES..=MAX_RING_BYTES).contains(&bytes) {
            return Err(Error::InvalidArgument {
                what: "a6xx ring: size must be a power of two from 16 B to 128 MiB",
                value: bytes as u64,
            });
        }
        if !cfg.ring_gpu.is_multiple_of(4) || cfg.ring_gpu == 0 {
            return Err(Error::Misaligned { what: "a6xx ring: GPU address", value: cfg.ring_gpu, align: 4 });
        }
        if !cfg.rptr_gpu.is_multiple_of(4) || cfg.rptr_gpu == 0 {
            return Err(Error::Misaligned {
                what: "a6xx ring: RPTR shadow GPU address",
                value: cfg.rptr_gpu,
                align: 4,
            });
        }
        // The shadow dword must be inside its bus (checked by the write below, which zeroes it).
        shadow.write(shadow_off, Width::U32, 0)?;
        for (name, off) in [("CP_RB_RPTR", CP_RB_RPTR::OFFSET), ("CP_RB_WPTR", CP_RB_WPTR::OFFSET)] {
            let v = regs.read(off, Width::U32)?;
            if v != 0 {
                let e = Error::InvalidArgument { what: "a6xx ring: CP pointers not reset", value: v };
                return Err(e.context(format!("{name} reads {v:#x}")));
            }
        }
        // BUFSZ = log2(bytes / 8).
        // CAST: log2 of a usize is below 64.
        let bufsz = (bytes / 8).trailing_zeros() as u8;
        write64(&*regs, CP_RB_BASE::OFFSET, cfg.ring_gpu)?;
        write64(&*regs, CP_RB_RPTR_ADDR::OFFSET, cfg.rptr_gpu)?;
        CP_RB_CNTL::default().set_bufsz(bufsz).set_blksz(RB_BLKSZ).set_no_update(false).write(&*regs)?;
        let bell = Doorbell { bus: regs.clone(), offset: CP_RB_WPTR::OFFSET, width: Width::U32 };
        // The core ring is never kicked: `submit` writes CP_RB_WPTR itself, after `barrier`. A
        // device barrier makes the core ring write the PM4 words with word-sized volatile
        // stores (memory the CP reads), not one copy.
        let ring = CommandRing::new(mem, cfg.max_in_flight, bell)?.with_barrier(hcq::barrier::Barrier::DeviceWrite);
        // CAST: usize is at most 64 bits.
        let size = (bytes / 4) as u64;
        Ok(Self { ring, regs, shadow, shadow_off, size, kicked: 0, barrier })
    }

    /// Ring size in dwords.
    pub fn size_words(&self) -> u64 {
        self.size
    }

    /// The write pointer (monotonic, dwords); `CP_RB_WPTR` holds it modulo the ring size.
    pub fn wptr(&self) -> u64 {
        self.ring.wptr()
    }

    /// The CP's read pointer (a ring index in dwords) from the RPTR shadow.
    pub fn rptr(&self) -> Result<u32> {
        // CAST: a 32-bit read.
        Ok(self.shadow.read(self.shadow_off, Width::U32)? as u32)
    }

    /// The core ring (bookkeeping of what is in flight).
    pub fn ring(&self) -> &CommandRing {
        &self.ring
    }

    /// Write `words` (whole PM4 packets whose last command signals `stamp` on `tl`) into the ring
    /// and ring the doorbell; returns the new write pointer. Waits on `tl` when the ring holds
    /// unretired words where these go, and on the RPTR shadow when they would exactly fill it;
    /// a CP that makes no progress ends in the timeline's timeout. Allocates nothing.
    pub fn submit(&mut self, words: &[u32], stamp: Stamp, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<u64> {
        if words.is_empty() {
            return Ok(self.kicked);
        }
        if words.len() as u64 >= self.size {
            // One word always stays free: a ring the CP was told is full reads as empty.
            return Err(Error::OutOfSpace {
                what: "a6xx ring submission",
                requested: words.len() as u64,
                capacity: self.size - 1,
            });
        }
        self.ring.write(words, stamp, tl, hooks)?;
        let wptr = self.ring.wptr();
        self.wait_not_full(wptr, tl, hooks)?;
        // The ring words must reach memory before the CP sees the new write pointer.
        self.barrier.device_write_barrier();
        // CAST: a remainder modulo the ring size, which is at most 2^25 dwords.
        CP_RB_WPTR::from_raw((wptr % self.size) as u32).write(&*self.regs)?;
        self.kicked = wptr;
        Ok(wptr)
    }

    /// Wait until telling the CP `wptr` cannot look like an empty ring: fewer than `size` words
    /// pending after the CP's read pointer.
    fn wait_not_full(&self, wptr: u64, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<()> {
        let policy = tl.policy();
        let start = hooks.now_ns();
        loop {
            let rptr = u64::from(self.rptr()?);
            if rptr >= self.size {
                return Err(Error::InvalidArgument { what: "a6xx ring: RPTR shadow outside the ring", value: rptr });
            }
            // Words the CP has not fetched of those it was told about; fewer than `size` because
            // every earlier doorbell passed this check.
            let pending = (self.kicked % self.size + self.size - rptr) % self.size;
            let fetched = self.kicked - pending;
            if wptr - fetched < self.size {
                return Ok(());
            }
            if let Some(e) = hooks.fault() {
                return Err(e);
            }
            // TIMEOUT: the timeline's wait policy (default 30 s): a CP that fetches nothing of a
            // full ring for that long is hung.
            let waited = hooks.now_ns().saturating_sub(start);
            if waited > policy.timeout_ns {
                let e = Error::Timeout {
                    device: tl.device().clone(),
                    awaited: wptr,
                    last: fetched,
                    timeout_ms: policy.timeout_ns / 1_000_000,
                }
                .context("a6xx ring: the CP fetched nothing of a full ring (CP_RB_RPTR shadow)");
                tl.record_fault(e.clone());
                return Err(e);
            }
            hooks.yield_now();
        }
    }
}

/// A reg64 on the GPU's 32-bit register bus: low dword, then high dword (Linux `gpu_write64`).
fn write64(regs: &dyn MmioBus, offset: usize, v: u64) -> Result<()> {
    regs.write(offset, Width::U32, v & 0xffff_ffff)?;
    regs.write(offset + 4, Width::U32, v >> 32)
}
