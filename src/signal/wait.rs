//! Waiting on a signal: the wrapping compare ([`reached`]), what a wait needs from its device
//! ([`WaitHooks`]), how long it spins, yields and sleeps ([`WaitPolicy`]), and the wait loop.

use super::Signal;
use crate::error::{DeviceName, Error, Result};
use crate::stamp::{Stamp, StampBits};
use crate::sync::spin_hint;

/// True when `current` has reached `target`. With `bits32`, compares the low 32 bits by wrapping
/// difference (valid while the two are within 2^31 of each other).
#[inline]
pub const fn reached(current: u64, target: u64, bits32: bool) -> bool {
    let bits = if bits32 { StampBits::Low32 } else { StampBits::Full };
    Stamp::new(target).reached_by(Stamp::new(current), bits)
}

/// What a wait needs from its device: a clock, ways to pass the time, and the device's fault
/// state. Methods take `&self` and are called from the waiting thread.
pub trait WaitHooks: Send + Sync {
    /// Monotonic time in nanoseconds.
    fn now_ns(&self) -> u64;
    /// Give up the CPU briefly (after the spin phase). Default: a spin hint.
    fn yield_now(&self) {
        spin_hint();
    }
    /// The backend sleep hook, called once the wait has made no progress for `idle_ns`
    /// (an interrupt wait, a KGSL timestamp wait, a short sleep). Default: yield.
    fn sleep(&self, idle_ns: u64) {
        let _ = idle_ns;
        self.yield_now();
    }
    /// An error the device reported (a command-processor fault); ends the wait with that error.
    fn fault(&self) -> Option<Error> {
        None
    }
}

/// Wait policy: how long to spin and yield before sleeping, and when to give up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Spin for this long without progress before yielding.
    pub spin_ns: u64,
    /// Yield for this long without progress before calling the sleep hook.
    pub yield_ns: u64,
    /// Give up after this long without progress.
    pub timeout_ns: u64,
}

impl WaitPolicy {
    /// Default timeout (tinygrad's `HCQDEV_WAIT_TIMEOUT_MS`): 30 s.
    pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

    /// A policy with the given timeout and default spin (20 µs) and yield (1 ms) phases.
    pub const fn with_timeout_ms(ms: u64) -> Self {
        Self { spin_ns: 20_000, yield_ns: 1_000_000, timeout_ns: ms.saturating_mul(1_000_000) }
    }
}

impl Default for WaitPolicy {
    fn default() -> Self {
        Self::with_timeout_ms(Self::DEFAULT_TIMEOUT_MS)
    }
}

impl Signal {
    /// True when the value has reached `target`.
    #[inline]
    pub fn is_reached(&self, target: u64) -> bool {
        reached(self.value(), target, self.bits32)
    }

    /// Wait until the value reaches `target`.
    ///
    /// Spins for `policy.spin_ns`, then yields until `policy.yield_ns`, then calls
    /// `hooks.sleep` — each phase measured from the last *progress* (a change of the value).
    /// After `policy.timeout_ns` without progress the value is read once more; if it is still
    /// behind, the result is [`Error::Timeout`] naming `device`, the value awaited and the last
    /// value seen. A fault reported by `hooks.fault()` ends the wait with that error.
    pub fn wait(&self, target: u64, policy: &WaitPolicy, hooks: &dyn WaitHooks, device: &DeviceName) -> Result<()> {
        let mut last = self.value();
        if reached(last, target, self.bits32) {
            return Ok(());
        }
        let mut since = hooks.now_ns();
        let mut now = since;
        let mut polls: u32 = 0;
        loop {
            let v = self.value();
            if reached(v, target, self.bits32) {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            let spinning = now.saturating_sub(since) < policy.spin_ns;
            // while spinning, read the clock only every 16 polls (a clock read costs more
            // than a poll)
            if !spinning || polls.is_multiple_of(16) {
                now = hooks.now_ns();
            }
            if v != last {
                last = v;
                since = now;
            }
            let idle = now.saturating_sub(since);
            if idle > policy.timeout_ns {
                let v = self.value();
                if reached(v, target, self.bits32) {
                    return Ok(());
                }
                return Err(Error::Timeout {
                    device: device.clone(),
                    awaited: target,
                    last: v,
                    timeout_ms: policy.timeout_ns / 1_000_000,
                });
            }
            if polls.is_multiple_of(64)
                && let Some(e) = hooks.fault()
            {
                return Err(e);
            }
            if idle < policy.spin_ns {
                spin_hint();
            } else if idle < policy.yield_ns {
                hooks.yield_now();
            } else {
                hooks.sleep(idle);
            }
        }
    }
}

/// Nanoseconds since the first call in this process: the host clock of soft devices'
/// timestamps and of host-side profile events, so both line up in one trace.
#[cfg(feature = "std")]
pub fn host_clock_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    // CAST: u64 nanoseconds last 584 years of process uptime.
    EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

/// [`WaitHooks`] on std: the process clock ([`host_clock_ns`]), `thread::yield_now`, and a
/// 50 µs sleep.
#[cfg(feature = "std")]
#[derive(Debug, Default)]
pub struct StdHooks;

#[cfg(feature = "std")]
impl WaitHooks for StdHooks {
    fn now_ns(&self) -> u64 {
        host_clock_ns()
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn sleep(&self, _idle_ns: u64) {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}
