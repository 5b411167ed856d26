//! Command rings and kernel-argument pools that never overwrite what the device has not consumed.
//!
//! Both are circular spaces in device-visible memory addressed by a monotonic position. Each
//! submission's span is stamped with the timeline value that retires it (the value its final
//! signal writes). Before the producer reuses any part of the space it waits until the device's
//! timeline has passed the stamp of what was there — tinygrad skips this check and relies on the
//! ring being large; we never overwrite commands or kernel arguments in flight.
//!
//! [`CommandRing`] writes a submission's words at the write pointer, wrapping at the end (the
//! two-slice write of nova's command queue), then issues the backend's barrier
//! ([`Barrier`]: a release fence for a host-thread device, `dsb st` / `sfence` for hardware) and
//! rings the doorbell with the new write pointer. [`KernargPool`] hands out contiguous, aligned blocks from a
//! wrapping [`crate::memory::BumpAllocator`].
//!
//! Bookkeeping is a fixed-capacity queue of `(end position, stamp)` pairs allocated once; when
//! it is full the producer waits for the oldest entry instead of growing it, so the steady state
//! allocates nothing.

use crate::barrier::Barrier;
use crate::error::{Error, Result};
use crate::memory::BumpAllocator;
use crate::mmio::{MmioBus, Width};
use crate::signal::WaitHooks;
use crate::stamp::Stamp;
use crate::timeline::Timeline;
use alloc::collections::VecDeque;
use alloc::sync::Arc;

/// The in-flight spans of a circular space, oldest first.
#[derive(Debug)]
pub struct InFlight {
    size: u64,
    retired: u64,
    spans: VecDeque<(u64, Stamp)>,
    cap: usize,
}

impl InFlight {
    /// Track a space of `size` units with room for `cap` in-flight spans.
    pub fn new(size: u64, cap: usize) -> Self {
        let cap = cap.max(1);
        Self { size, retired: 0, spans: VecDeque::with_capacity(cap), cap }
    }

    /// Position up to which the device is known to be done.
    pub fn retired(&self) -> u64 {
        self.retired
    }

    /// Spans still in flight.
    pub fn in_flight(&self) -> usize {
        self.spans.len()
    }

    /// Make `[.., end)` writable: retire spans (waiting on `tl` for their stamps) until
    /// `end - retired <= size` and a bookkeeping slot is free. A request larger than the space
    /// is an [`Error::OutOfSpace`]; a device that never retires ends in the timeline's timeout.
    pub fn reserve(&mut self, end: u64, what: &'static str, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<()> {
        while end.saturating_sub(self.retired) > self.size || self.spans.len() >= self.cap {
            let Some(&(span_end, stamp)) = self.spans.front() else {
                return Err(Error::OutOfSpace { what, requested: end - self.retired, capacity: self.size });
            };
            // TIMEOUT: the timeline's wait policy (default 30 s without progress); a device that
            // never retires the span ends in `Error::Timeout` and is marked hung.
            tl.wait(stamp, hooks)?;
            self.retired = span_end;
            self.spans.pop_front();
        }
        Ok(())
    }

    /// Record that everything up to `end` is retired by timeline value `stamp`.
    pub fn push(&mut self, end: u64, stamp: Stamp) {
        match self.spans.back_mut() {
            // several blocks of one submission share a stamp: keep one span
            Some(last) if last.1 == stamp => last.0 = end,
            _ => self.spans.push_back((end, stamp)),
        }
    }

    /// Retire, without waiting, every span whose stamp the timeline has reached.
    pub fn retire_completed(&mut self, tl: &Timeline) {
        while let Some(&(end, stamp)) = self.spans.front() {
            if !tl.passed(stamp) {
                break;
            }
            self.retired = end;
            self.spans.pop_front();
        }
    }
}

/// Where the doorbell is: a register on a bus, written with the new write pointer.
#[derive(Clone)]
pub struct Doorbell {
    /// The register's bus.
    pub bus: Arc<dyn MmioBus + Send>,
    /// Byte offset of the register.
    pub offset: usize,
    /// Register width; the write pointer is truncated to it.
    pub width: Width,
}

impl core::fmt::Debug for Doorbell {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Doorbell").field("offset", &self.offset).field("width", &self.width).finish()
    }
}

/// The producer side of a command ring.
pub struct CommandRing {
    mem: Arc<dyn MmioBus + Send>,
    /// Non-zero: the write pointer wraps with `%` and no division-by-zero panic path.
    words: core::num::NonZeroU64,
    wptr: u64,
    flight: InFlight,
    doorbell: Doorbell,
    barrier: Barrier,
}

impl core::fmt::Debug for CommandRing {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CommandRing")
            .field("words", &self.words)
            .field("wptr", &self.wptr)
            .field("retired", &self.flight.retired())
            .field("barrier", &self.barrier)
            .finish()
    }
}

impl CommandRing {
    /// A ring over all of `mem` (its size must be a non-zero multiple of 4 bytes), with room
    /// for `max_in_flight` submissions, kicked through `doorbell` after a host release fence
    /// (a device that is a host thread; hardware needs [`CommandRing::with_barrier`]).
    pub fn new(mem: Arc<dyn MmioBus + Send>, max_in_flight: usize, doorbell: Doorbell) -> Result<Self> {
        let bytes = mem.size();
        // CAST: usize is at most 64 bits on every target.
        let words = core::num::NonZeroU64::new((bytes / 4) as u64).filter(|_| bytes.is_multiple_of(4)).ok_or(
            Error::InvalidArgument { what: "command ring size must be a non-zero multiple of 4", value: bytes as u64 },
        )?;
        Ok(Self {
            mem,
            words,
            wptr: 0,
            flight: InFlight::new(words.get(), max_in_flight),
            doorbell,
            barrier: Barrier::Host,
        })
    }

    /// Issue `barrier` before each doorbell write instead of the host release fence:
    /// [`Barrier::DeviceWrite`] for a device that is hardware (see [`crate::barrier`]). With any
    /// barrier but [`Barrier::Host`] the ring words are written with word-sized volatile stores
    /// (memory a hardware device reads), not one copy.
    pub fn with_barrier(mut self, barrier: Barrier) -> Self {
        self.barrier = barrier;
        self
    }

    /// The barrier issued before each doorbell write.
    pub fn barrier(&self) -> &Barrier {
        &self.barrier
    }

    /// Capacity in words.
    pub fn capacity_words(&self) -> u64 {
        self.words.get()
    }

    /// The write pointer (monotonic, in words).
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// The ring memory.
    pub fn memory(&self) -> &Arc<dyn MmioBus + Send> {
        &self.mem
    }

    /// In-flight bookkeeping.
    pub fn in_flight(&self) -> &InFlight {
        &self.flight
    }

    /// Write `words` at the write pointer and ring the doorbell; `stamp` is the timeline value
    /// the submission's last command signals. Waits (on `tl`) for the device to consume older
    /// submissions when the ring is full. Allocates nothing. Shorthand for [`CommandRing::write`]
    /// then [`CommandRing::kick`].
    pub fn submit(&mut self, words: &[u32], stamp: Stamp, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<u64> {
        self.write(words, stamp, tl, hooks)?;
        self.kick()
    }

    /// Write `words` at the write pointer and advance it, without telling the device: until
    /// [`CommandRing::kick`] the device does not read them. `stamp` is the timeline value the
    /// submission's last command signals. Waits (on `tl`) for the device to consume older
    /// submissions when the ring is full. On error nothing is recorded (the write pointer stays).
    pub fn write(&mut self, words: &[u32], stamp: Stamp, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<()> {
        let n = words.len() as u64;
        let end = self.wptr + n;
        self.flight.retire_completed(tl);
        self.flight.reserve(end, "command ring", tl, hooks)?;
        let at = self.wptr % self.words;
        // CAST: `min` with a length that is a usize bounds the result.
        let first = n.min(self.words.get() - at) as usize;
        // PANIC: never: `first <= words.len()` by the `min` above.
        let (a, b) = words.split_at(first);
        // CAST: `at < words`, and the ring's byte size is a usize.
        let at = (at * 4) as usize;
        if matches!(self.barrier, Barrier::Host) {
            // a host-thread device reads host memory: one copy per slice
            self.mem.write_bytes(at, zerocopy::IntoBytes::as_bytes(a))?;
            if !b.is_empty() {
                self.mem.write_bytes(0, zerocopy::IntoBytes::as_bytes(b))?;
            }
        } else {
            // memory a hardware device reads: word-sized volatile stores, never a memcpy
            crate::mmio::write_words(&*self.mem, at, a)?;
            crate::mmio::write_words(&*self.mem, 0, b)?;
        }
        self.wptr = end;
        self.flight.push(end, stamp);
        Ok(())
    }

    /// Make the written words visible (the backend's barrier) and ring the doorbell with the
    /// write pointer; returns it.
    #[inline]
    pub fn kick(&mut self) -> Result<u64> {
        // Volatile is not ordering: make the ring words visible before the doorbell.
        self.barrier.issue();
        self.doorbell.bus.write(self.doorbell.offset, self.doorbell.width, self.wptr & self.doorbell.width.mask())?;
        Ok(self.wptr)
    }
}

/// A wrapping pool of kernel-argument blocks in device-visible memory.
pub struct KernargPool {
    mem: Arc<dyn MmioBus + Send>,
    device_base: u64,
    bump: BumpAllocator,
    flight: InFlight,
    /// Position of the block handed out last (monotonic: wraps × size + offset).
    pos: u64,
}

impl core::fmt::Debug for KernargPool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernargPool").field("size", &self.bump.size()).field("pos", &self.pos).finish()
    }
}

impl KernargPool {
    /// A pool over all of `mem`, which the device sees at `device_base`.
    pub fn new(mem: Arc<dyn MmioBus + Send>, device_base: u64, max_in_flight: usize) -> Self {
        // CAST: usize is at most 64 bits on every target.
        let size = mem.size() as u64;
        Self {
            mem,
            device_base,
            bump: BumpAllocator::new(size, 0, true),
            flight: InFlight::new(size, max_in_flight),
            pos: 0,
        }
    }

    /// Reserve `size` bytes aligned to `align` for a submission that timeline value `stamp`
    /// retires, fill them with `data`, and return their device address. Waits (on `tl`) when the
    /// block would overwrite arguments of a submission still in flight.
    pub fn alloc(
        &mut self,
        data: &[u8],
        size: u64,
        align: u64,
        stamp: Stamp,
        tl: &Timeline,
        hooks: &dyn WaitHooks,
    ) -> Result<u64> {
        if (data.len() as u64) > size {
            return Err(Error::OutOfBounds { what: "kernarg block", offset: 0, len: data.len() as u64, limit: size });
        }
        let saved = self.bump.clone();
        let off = self.bump.alloc(size, align)?;
        let total = self.bump.size();
        // the monotonic position of the block's end; a wrap consumes the skipped tail too
        let end = (self.bump.wraps() * total) + off + size;
        if self.bump.wraps() != saved.wraps() {
            debug!("kernarg pool wrapped at position {}", self.pos);
        }
        self.flight.retire_completed(tl);
        if let Err(e) = self.flight.reserve(end, "kernarg pool", tl, hooks) {
            // nothing was handed out: the next try starts from the same place
            self.bump = saved;
            return Err(e);
        }
        // CAST: `off + size` lies inside the pool, whose size is a usize.
        self.mem.write_bytes(off as usize, data)?;
        self.pos = end;
        self.flight.push(end, stamp);
        Ok(self.device_base + off)
    }

    /// The device address of byte `off` of the pool.
    pub fn device_base(&self) -> u64 {
        self.device_base
    }

    /// The pool's memory.
    pub fn memory(&self) -> &Arc<dyn MmioBus + Send> {
        &self.mem
    }
}

#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::*;
    use crate::error::device_name;
    use crate::mmio::HostRegion;
    use crate::signal::{SignalPool, StdHooks, WaitPolicy};

    fn ring(words: usize, cap: usize) -> (CommandRing, Arc<HostRegion>, Timeline) {
        let mem = Arc::new(HostRegion::new(words * 4, 8).unwrap());
        let bell = Arc::new(HostRegion::new(8, 8).unwrap());
        let pool = SignalPool::new();
        let tl = Timeline::new(device_name("T"), pool.alloc(0));
        tl.set_policy(WaitPolicy::with_timeout_ms(20));
        let r = CommandRing::new(mem.clone(), cap, Doorbell { bus: bell, offset: 0, width: Width::U64 }).unwrap();
        (r, mem, tl)
    }

    #[test]
    fn writes_wrap_in_two_slices() {
        let (mut r, mem, tl) = ring(8, 4);
        let h = StdHooks;
        r.submit(&[1, 2, 3, 4, 5, 6], Stamp::new(1), &tl, &h).unwrap();
        tl.signal().set(1); // the device consumed it
        r.submit(&[7, 8, 9, 10], Stamp::new(2), &tl, &h).unwrap();
        let mut words = [0u32; 8];
        for (i, w) in words.iter_mut().enumerate() {
            *w = mem.read(i * 4, Width::U32).unwrap() as u32;
        }
        assert_eq!(words, [9, 10, 3, 4, 5, 6, 7, 8]);
        assert_eq!(r.wptr(), 10);
    }

    #[test]
    fn a_full_ring_waits_and_never_overwrites_unconsumed_words() {
        let (mut r, _mem, tl) = ring(8, 4);
        let h = StdHooks;
        r.submit(&[1; 6], Stamp::new(1), &tl, &h).unwrap();
        // the device has not consumed submission 1: writing 4 more words would overwrite it
        let e = r.submit(&[2; 4], Stamp::new(2), &tl, &h).unwrap_err();
        assert!(matches!(e, Error::Timeout { awaited: 1, .. }), "{e:?}");
        assert_eq!(r.wptr(), 6, "nothing was written");
    }

    #[test]
    fn oversized_submission_is_out_of_space() {
        let (mut r, _mem, tl) = ring(8, 4);
        assert!(matches!(r.submit(&[0; 9], Stamp::new(1), &tl, &StdHooks), Err(Error::OutOfSpace { .. })));
    }

    #[test]
    fn bookkeeping_capacity_bounds_in_flight_submissions() {
        let (mut r, _mem, tl) = ring(64, 2);
        let h = StdHooks;
        r.submit(&[0; 2], Stamp::new(1), &tl, &h).unwrap();
        r.submit(&[0; 2], Stamp::new(2), &tl, &h).unwrap();
        assert!(matches!(r.submit(&[0; 2], Stamp::new(3), &tl, &h), Err(Error::Timeout { awaited: 1, .. })));
    }

    #[test]
    fn kernarg_blocks_are_aligned_and_wait_before_reuse() {
        let mem = Arc::new(HostRegion::new(256, 8).unwrap());
        let pool = SignalPool::new();
        let tl = Timeline::new(device_name("T"), pool.alloc(0));
        tl.set_policy(WaitPolicy::with_timeout_ms(20));
        let h = StdHooks;
        let mut k = KernargPool::new(mem.clone(), 0x1000, 8);
        let a = k.alloc(&[1; 8], 100, 64, Stamp::new(1), &tl, &h).unwrap();
        let b = k.alloc(&[2; 8], 100, 64, Stamp::new(2), &tl, &h).unwrap();
        assert_eq!((a, b), (0x1000, 0x1080));
        // a third block wraps to offset 0, which submission 1 still uses
        assert!(matches!(k.alloc(&[3; 8], 100, 64, Stamp::new(3), &tl, &h), Err(Error::Timeout { awaited: 1, .. })));
        tl.signal().set(1);
        let c = k.alloc(&[3; 8], 100, 64, Stamp::new(3), &tl, &h).unwrap();
        assert_eq!(c, 0x1000);
        assert_eq!(mem.read(0, Width::U8).unwrap(), 3);
        assert_eq!(mem.read(0x80, Width::U8).unwrap(), 2, "block of submission 2 untouched");
    }
}
