//! Interrupts as eventfds: VFIO signals an eventfd per vector
//! ([`crate::vfio::VfioDevice::enable_irq`]); the host waits on it with a timeout, or lets a
//! [`hcq::signal::Signal`] wait sleep on it through [`IrqHooks`].

use hcq::error::{Error, Result};
use hcq::signal::WaitHooks;
use rustix::event::{EventfdFlags, PollFd, PollFlags};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An eventfd (counter semantics: each interrupt adds one; a read returns and clears the count).
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A fresh non-blocking eventfd with count 0.
    pub fn new() -> Result<Self> {
        rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map(Self)
            .map_err(|e| Error::Os { what: "eventfd", errno: e.raw_os_error() })
    }

    /// The fd, for [`crate::vfio::VfioDevice::enable_irq`].
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }

    /// Take the pending count (0 when nothing arrived).
    pub fn take(&self) -> Result<u64> {
        let mut b = [0u8; 8];
        match rustix::io::read(&self.0, &mut b) {
            Ok(8) => Ok(u64::from_ne_bytes(b)),
            Ok(n) => Err(Error::Mismatch { what: "eventfd read length", expected: 8, found: n as u64 }),
            Err(rustix::io::Errno::AGAIN) => Ok(0),
            Err(e) => Err(Error::Os { what: "read eventfd", errno: e.raw_os_error() }),
        }
    }

    /// Add one to the count (what the kernel does on an interrupt; for tests and for waking a
    /// waiter by hand).
    pub fn notify(&self) -> Result<()> {
        rustix::io::write(&self.0, &1u64.to_ne_bytes())
            .map(|_| ())
            .map_err(|e| Error::Os { what: "write eventfd", errno: e.raw_os_error() })
    }

    /// Wait until at least one interrupt arrived or `timeout` passed; returns the count taken
    /// (0 on timeout).
    pub fn wait(&self, timeout: Duration) -> Result<u64> {
        let deadline = Instant::now() + timeout;
        loop {
            let n = self.take()?;
            if n > 0 {
                return Ok(n);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(0);
            }
            let ts = rustix::time::Timespec { tv_sec: left.as_secs() as _, tv_nsec: left.subsec_nanos() as _ };
            let mut fds = [PollFd::new(&self.0, PollFlags::IN)];
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::Os { what: "poll eventfd", errno: e.raw_os_error() }),
            }
        }
    }
}

/// [`WaitHooks`] whose sleep phase blocks on an interrupt eventfd (bounded by `max_sleep`, so a
/// value written without an interrupt is still seen): a [`hcq::signal::Signal`] wait then costs
/// no CPU while the device works and wakes on its interrupt.
#[derive(Debug, Clone)]
pub struct IrqHooks {
    efd: Arc<EventFd>,
    max_sleep: Duration,
}

impl IrqHooks {
    /// Hooks sleeping on `efd` for at most `max_sleep` per sleep.
    pub fn new(efd: Arc<EventFd>, max_sleep: Duration) -> Self {
        Self { efd, max_sleep }
    }
}

impl WaitHooks for IrqHooks {
    fn now_ns(&self) -> u64 {
        hcq::signal::host_clock_ns()
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn sleep(&self, _idle_ns: u64) {
        // an error here (a closed fd) degrades to a bounded sleep; the wait's timeout still holds
        if self.efd.wait(self.max_sleep).is_err() {
            std::thread::sleep(self.max_sleep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcq::error::device_name;
    use hcq::signal::{SignalPool, WaitPolicy};

    #[test]
    fn eventfd_counts_and_times_out() {
        let e = EventFd::new().unwrap();
        assert_eq!(e.wait(Duration::from_millis(5)).unwrap(), 0, "nothing arrived");
        e.notify().unwrap();
        e.notify().unwrap();
        assert_eq!(e.wait(Duration::from_secs(1)).unwrap(), 2, "two notifications, one read");
        assert_eq!(e.take().unwrap(), 0, "the read cleared the count");
    }

    #[test]
    fn a_signal_wait_sleeps_on_the_interrupt_and_wakes_on_it() {
        let pool = SignalPool::new();
        let s = pool.alloc(0);
        let efd = Arc::new(EventFd::new().unwrap());
        // max_sleep far longer than the test: only the interrupt can wake the sleeper in time
        let hooks = IrqHooks::new(efd.clone(), Duration::from_secs(20));
        let policy = WaitPolicy { spin_ns: 0, yield_ns: 0, timeout_ns: 10_000_000_000 };
        let waiter = s.signal().clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            s.set(1); // the owner
            efd.notify().unwrap(); // the "interrupt"
        });
        let t0 = Instant::now();
        waiter.wait(1, &policy, &hooks, &device_name("IRQ")).unwrap();
        let took = t0.elapsed();
        t.join().unwrap();
        assert!(took < Duration::from_secs(5), "woken by the eventfd, not the 20 s sleep bound: {took:?}");
    }

    #[test]
    fn a_signal_wait_without_interrupt_times_out() {
        let pool = SignalPool::new();
        let s = pool.alloc(0);
        let hooks = IrqHooks::new(Arc::new(EventFd::new().unwrap()), Duration::from_millis(1));
        let policy = WaitPolicy { spin_ns: 0, yield_ns: 0, timeout_ns: 20_000_000 };
        let e = s.wait(1, &policy, &hooks, &device_name("IRQ")).unwrap_err();
        assert!(matches!(e, Error::Timeout { awaited: 1, last: 0, .. }), "{e}");
    }
}
