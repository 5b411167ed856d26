//! A context on either kernel interface ([`Context`]: a KGSL draw context or an MSM submit
//! queue, with the fences it has submitted and retired) and the core signal wait's hooks on one
//! ([`TimestampHooks`]: sleep in the kernel until the next submission retires).

use crate::kernel;
use hcq::Error;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A context (a KGSL draw context, an MSM submit queue): submissions on it are ordered and
/// numbered by its fences (KGSL timestamps, MSM fences).
#[derive(Debug)]
pub struct Context {
    pub(crate) id: u32,
    /// The latest timestamp submitted: `1 << 32 | timestamp`, 0 before the first submission.
    /// Concurrent submits return from the ioctl in any order, so this only moves forward
    /// (wrap-aware): a free at `last_submitted` is never earlier than an IB that was submitted.
    pub(crate) last: AtomicU64,
    /// The latest fence known to have passed (MSM, which has no "read retired" ioctl).
    pub(crate) retired: AtomicU32,
}

impl Context {
    pub(crate) fn new(id: u32) -> Self {
        Context { id, last: AtomicU64::new(0), retired: AtomicU32::new(0) }
    }
    /// The kernel's id of the context (KGSL context id, MSM queue id).
    pub fn id(&self) -> u32 {
        self.id
    }
    /// Timestamp of the latest submission (0 before the first; 0 is also a valid timestamp
    /// after the 32-bit rollover: see [`Context::has_submitted`]).
    pub fn last_submitted(&self) -> u32 {
        // CAST: the low half is the timestamp.
        self.last.load(Ordering::Acquire) as u32
    }
    /// Whether anything was submitted on this context.
    pub fn has_submitted(&self) -> bool {
        self.last.load(Ordering::Acquire) != 0
    }
    /// Note that `ts` was submitted: the latest stays the later of the two (32-bit
    /// wrap-aware, as KGSL's own `timestamp_cmp`).
    pub(crate) fn note_submitted(&self, ts: u32) {
        let new = 1 << 32 | u64::from(ts);
        let _ = self.last.fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
            // CAST: the low half is the timestamp.
            (cur == 0 || ts.wrapping_sub(cur as u32) as i32 > 0).then_some(new)
        });
    }
}

/// Shortest and longest host sleep of [`TimestampHooks`] when nothing is in flight.
const IDLE_SLEEP_MIN_NS: u64 = 100_000;
const IDLE_SLEEP_MAX_NS: u64 = 1_000_000;

/// The core signal wait's hooks for a context (either interface): the sleep hook blocks in the kernel until
/// the context's oldest submission in flight retires (1 ms at a time) instead of spinning, and a
/// fault seen there ends the wait at once.
#[derive(Debug)]
pub struct TimestampHooks {
    kernel: Arc<dyn kernel::GpuKernel>,
    ctx: Arc<Context>,
    fault: Mutex<Option<Error>>,
}

impl TimestampHooks {
    /// Hooks waiting on `ctx` of `kernel` (KGSL or MSM).
    pub fn new(kernel: Arc<dyn kernel::GpuKernel>, ctx: Arc<Context>) -> Self {
        Self { kernel, ctx, fault: Mutex::new(None) }
    }
}

impl hcq::signal::WaitHooks for TimestampHooks {
    fn now_ns(&self) -> u64 {
        hcq::signal::host_clock_ns()
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn sleep(&self, idle_ns: u64) {
        // Wake at the next retirement: the oldest submission still in flight, not the newest,
        // so a wait for an older call does not sleep through the calls queued behind it (the
        // core re-reads its signal after every wake and sleeps again if it is not there yet).
        let last = self.ctx.last_submitted();
        let (next, in_flight) = match self.kernel.retired(&self.ctx) {
            Ok(r) if r != last => (r.wrapping_add(1), true),
            _ => (last, false),
        };
        // TIMEOUT: 1 ms per call; the core's wait policy owns the overall timeout.
        match self.kernel.wait(&self.ctx, next, 1) {
            Ok(()) if !in_flight => {
                // KGSL retired everything and the signal is still not there (a faulted IB that
                // never wrote it, or a signal only the host writes): no retirement will wake
                // this thread, so sleep on the host instead of returning at once (which made
                // the core's wait loop spin at 100 % CPU until its timeout).
                let ns = (idle_ns / 8).clamp(IDLE_SLEEP_MIN_NS, IDLE_SLEEP_MAX_NS);
                std::thread::sleep(std::time::Duration::from_nanos(ns));
            }
            Ok(()) | Err(Error::Timeout { .. }) => {}
            Err(e) => {
                if let Ok(mut f) = self.fault.lock() {
                    f.get_or_insert(e);
                }
            }
        }
    }
    fn fault(&self) -> Option<Error> {
        self.fault.lock().ok().and_then(|f| f.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_timestamp_is_a_wrap_aware_maximum() {
        let ctx = Context::new(1);
        assert!(!ctx.has_submitted());
        ctx.note_submitted(u32::MAX - 1);
        ctx.note_submitted(1); // after the rollover
        ctx.note_submitted(u32::MAX); // a submit before the rollover returning late
        assert_eq!(ctx.last_submitted(), 1);
        assert!(ctx.has_submitted());
        let ctx = Context::new(1);
        ctx.note_submitted(0); // 0 is a valid timestamp
        assert!(ctx.has_submitted());
        assert_eq!(ctx.last_submitted(), 0);
    }
}
