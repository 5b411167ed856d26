//! Timelines: the per-device ordering of submissions.
//!
//! Every device owns a timeline signal and the last value submitted on it. Each submission waits
//! for the previous value and signals the next one, so all queues of a device (compute, copy)
//! run in one order; [`Timeline::synchronize`] waits for the last submitted value. A queue may
//! also wait on another device's timeline signal for cross-device ordering.
//!
//! A timeout while waiting marks the device hung: later submissions and synchronizations fail
//! with [`Error::DeviceHung`] until [`Timeline::clear_hung`] (after a reset). A fault recorded by
//! the command processor ([`Timeline::record_fault`]) ends waits with that error.

use crate::error::{DeviceName, Error, Result};
use crate::signal::{OwnedSignal, Signal, WaitHooks, WaitPolicy};
use crate::stamp::Stamp;
use crate::sync::{AtomicBool, AtomicU64, Ordering};

/// A device's timeline.
pub struct Timeline {
    device: DeviceName,
    /// The one owner of the slot: no signal command may store to it (the device's own command
    /// processor excepted), and nothing outside the engine sets it.
    signal: OwnedSignal,
    /// The value the next submission will signal.
    next: AtomicU64,
    hung: AtomicBool,
    fault: spin::Mutex<Option<Error>>,
    policy: spin::Mutex<WaitPolicy>,
}

impl core::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Timeline")
            .field("device", &self.device)
            .field("submitted", &self.last_submitted())
            .field("completed", &self.signal.value())
            .finish()
    }
}

impl Timeline {
    /// A timeline for `device` over `signal`, which is reset to 0 and marked a timeline's
    /// (signal commands may no longer store to it); the first submission signals 1.
    pub fn new(device: DeviceName, signal: OwnedSignal) -> Self {
        signal.set(0);
        signal.mark_timeline();
        Self {
            device,
            signal,
            next: AtomicU64::new(1),
            hung: AtomicBool::new(false),
            fault: spin::Mutex::new(None),
            policy: spin::Mutex::new(WaitPolicy::default()),
        }
    }

    /// The device's name.
    pub fn device(&self) -> &DeviceName {
        &self.device
    }

    /// The timeline signal (a read-only handle: only the engine and the device move it).
    ///
    /// Setting it from safe code does not compile:
    ///
    /// ```compile_fail,E0624
    /// fn repro(hcq: &hcq::engine::Engine) {
    ///     hcq.timeline().signal().set(1 << 40); // "everything done": buffers freed early
    /// }
    /// ```
    ///
    /// Reading it does:
    ///
    /// ```
    /// fn read(hcq: &hcq::engine::Engine) -> u64 {
    ///     hcq.timeline().signal().value()
    /// }
    /// ```
    pub fn signal(&self) -> &Signal {
        self.signal.signal()
    }

    /// Store `value` in the timeline signal as the device does when a submission completes:
    /// for code that is this timeline's device (a command processor's closing signal, a
    /// model of a device in a test).
    ///
    /// # Safety
    /// Every submission up to `value` has finished all its memory accesses (buffer memory
    /// whose stamp is reached is freed and reused at once), `value` was submitted (at most
    /// [`Timeline::last_submitted`]), and the value never moves backwards.
    #[inline]
    pub unsafe fn device_complete(&self, value: u64) {
        self.signal.set(value)
    }

    /// Set the wait policy (timeouts) used by this timeline's waits.
    pub fn set_policy(&self, policy: WaitPolicy) {
        *self.policy.lock() = policy;
    }

    /// The wait policy.
    pub fn policy(&self) -> WaitPolicy {
        *self.policy.lock()
    }

    /// The last value handed out to a submission (zero before the first).
    pub fn last_submitted(&self) -> Stamp {
        Stamp::new(self.next.load(Ordering::Acquire) - 1)
    }

    /// The value the device has completed (the timeline signal's reading).
    pub fn completed(&self) -> Stamp {
        Stamp::new(self.signal.value())
    }

    /// Whether the device has passed `stamp` (compared as the signal's payload width says).
    pub fn passed(&self, stamp: Stamp) -> bool {
        self.signal.is_reached(stamp.get())
    }

    /// Reserve the next value: returns `(wait_for, signal)` = (previous, new). Callers hold
    /// their device's submit lock so reservation order equals ring order.
    pub fn reserve(&self) -> Result<(Stamp, Stamp)> {
        self.check()?;
        Ok(self.advance())
    }

    /// Take the next value without checking the device's state: for a submitter whose words are
    /// already in the ring (a fault recorded now must not let a later submission take the
    /// same value). Callers hold their device's submit lock. Returns `(wait_for, signal)`.
    pub fn advance(&self) -> (Stamp, Stamp) {
        let v = Stamp::new(self.next.fetch_add(1, Ordering::AcqRel));
        (v.prev(), v)
    }

    /// Continue from value `last` (a timeline resumed from an earlier run): the signal is set
    /// to `last` and the next submission signals `last + 1`. Only while nothing is in flight
    /// (callers hold the submit lock; [`crate::engine::Engine::resume_at`] checks).
    pub(crate) fn resume_at(&self, last: Stamp) {
        self.signal.set(last.get());
        // `Engine::resume_at` refuses `u64::MAX` (its successor would wrap to 0, "always reached")
        self.next.store(last.get().saturating_add(1), Ordering::Release);
    }

    /// Fail if the device is hung or faulted.
    pub fn check(&self) -> Result<()> {
        if let Some(e) = self.fault.lock().clone() {
            return Err(e);
        }
        if self.hung.load(Ordering::Acquire) {
            return Err(Error::DeviceHung { device: self.device.clone() });
        }
        Ok(())
    }

    /// True once a wait on this device timed out.
    pub fn is_hung(&self) -> bool {
        self.hung.load(Ordering::Acquire)
    }

    /// Forget the hung state and any fault (after the backend reset the device).
    pub fn clear_hung(&self) {
        self.hung.store(false, Ordering::Release);
        *self.fault.lock() = None;
    }

    /// Record a fault reported by the device's command processor; waits end with it.
    pub fn record_fault(&self, e: Error) {
        let mut f = self.fault.lock();
        if f.is_none() {
            *f = Some(e);
        }
    }

    /// The recorded fault, if any.
    pub fn fault(&self) -> Option<Error> {
        self.fault.lock().clone()
    }

    /// Wait until the timeline reaches `value`. A timeout marks the device hung.
    pub fn wait(&self, value: impl Into<Stamp>, hooks: &dyn WaitHooks) -> Result<()> {
        // TIMEOUT: the device's policy (`WaitPolicy`, default 30 s without progress, tinygrad's
        // HCQDEV_WAIT_TIMEOUT_MS); progress restarts it, so only a stuck device times out.
        self.wait_with(value, hooks, &self.policy())
    }

    /// [`Timeline::wait`] under `policy` for this wait alone (the device's own policy is not
    /// touched, so a concurrent waiter keeps its own). A timeout marks the device hung.
    pub fn wait_with(&self, value: impl Into<Stamp>, hooks: &dyn WaitHooks, policy: &WaitPolicy) -> Result<()> {
        match self.wait_inner(value.into(), hooks, policy) {
            Err(e @ Error::Timeout { .. }) => {
                self.hung.store(true, Ordering::Release);
                error!("device hung: {}", e);
                Err(e)
            }
            r => r,
        }
    }

    /// Wait under `policy` for `value`: `Ok(false)` when it has not been reached after
    /// `policy.timeout_ns` without progress — the device is **not** declared hung (a bounded
    /// poll, for a caller that gives up and waits again later). A fault is an error.
    pub fn try_wait(&self, value: impl Into<Stamp>, hooks: &dyn WaitHooks, policy: &WaitPolicy) -> Result<bool> {
        match self.wait_inner(value.into(), hooks, policy) {
            Ok(()) => Ok(true),
            Err(Error::Timeout { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn wait_inner(&self, value: Stamp, hooks: &dyn WaitHooks, policy: &WaitPolicy) -> Result<()> {
        let value = value.get();
        if self.signal.is_reached(value) {
            return Ok(());
        }
        self.check()?;
        let faults = FaultHooks { inner: hooks, tl: self };
        self.signal.wait(value, policy, &faults, &self.device)
    }

    /// Wait for everything submitted so far.
    pub fn synchronize(&self, hooks: &dyn WaitHooks) -> Result<()> {
        self.wait(self.last_submitted(), hooks)
    }
}

/// Adds the timeline's fault state to a backend's hooks.
struct FaultHooks<'a> {
    inner: &'a dyn WaitHooks,
    tl: &'a Timeline,
}

impl WaitHooks for FaultHooks<'_> {
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn yield_now(&self) {
        self.inner.yield_now()
    }
    fn sleep(&self, idle_ns: u64) {
        self.inner.sleep(idle_ns)
    }
    fn fault(&self) -> Option<Error> {
        self.tl.fault().or_else(|| self.inner.fault())
    }
}

#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::*;
    use crate::error::device_name;
    use crate::signal::{SignalPool, StdHooks};

    #[test]
    fn reservations_chain_previous_to_next() {
        let pool = SignalPool::new();
        let tl = Timeline::new(device_name("T"), pool.alloc(99));
        assert_eq!(tl.completed(), Stamp::ZERO, "the signal starts at 0");
        assert_eq!(tl.reserve().unwrap(), (Stamp::ZERO, Stamp::new(1)));
        assert_eq!(tl.reserve().unwrap(), (Stamp::new(1), Stamp::new(2)));
        assert_eq!(tl.last_submitted(), Stamp::new(2));
        assert!(tl.passed(Stamp::ZERO) && !tl.passed(Stamp::new(1)));
    }

    #[test]
    fn timeout_marks_hung_and_blocks_further_work() {
        let pool = SignalPool::new();
        let tl = Timeline::new(device_name("SIM"), pool.alloc(0));
        tl.set_policy(WaitPolicy::with_timeout_ms(5));
        tl.reserve().unwrap();
        let e = tl.synchronize(&StdHooks).unwrap_err();
        assert!(matches!(e, Error::Timeout { awaited: 1, last: 0, .. }), "{e:?}");
        assert!(tl.is_hung());
        assert!(matches!(tl.reserve(), Err(Error::DeviceHung { .. })));
        tl.clear_hung();
        assert!(tl.reserve().is_ok());
    }

    #[test]
    fn a_recorded_fault_ends_the_wait_with_that_fault() {
        let pool = SignalPool::new();
        let tl = Timeline::new(device_name("SIM"), pool.alloc(0));
        tl.reserve().unwrap();
        tl.record_fault(Error::Unsupported { what: "soft opcode", value: 0x7f });
        let e = tl.synchronize(&StdHooks).unwrap_err();
        assert_eq!(e, Error::Unsupported { what: "soft opcode", value: 0x7f });
    }
}
