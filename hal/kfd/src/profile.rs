//! Per-launch profiling of an [`AmdBackend`]: every dispatch and copy bracketed by two GPU-clock
//! timestamps (tinygrad's `timestamp`: on the compute queue a `RELEASE_MEM` of the GPU clock
//! counter after the work before it, on the SDMA queue `TIMESTAMP GET_GLOBAL`), turned into
//! profiler events after each call.

use crate::AmdBackend;
use hcq::mmio::{MmioBus, Width};
use hcq::profile::{Event, EventKind};
use hcq::{Error, Result};

/// Profiled launches per timestamp buffer (16 bytes each).
const STAMPS_PER_BUFFER: usize = 256;

/// The GPU clock counter's rate: 100 MHz (tinygrad's `AMDSignal(timestamp_divider=100)`: ticks
/// of 10 ns).
pub const GPU_CLOCK_HZ: u64 = 100_000_000;

impl AmdBackend {
    /// Profile every launch (before the load): each dispatch and copy is bracketed by two
    /// timestamps of the GPU clock counter (`Command::Timestamp`: on the compute queue tinygrad's
    /// `RELEASE_MEM` after all prior work, `RELEASE_MEM` of the clock, `ACQUIRE_MEM`; on the
    /// SDMA queue `TIMESTAMP GET_GLOBAL`), and after each
    /// [`Backend::replay`](hcq_runner::Backend::replay) the pairs become `Program`/`Copy` events
    /// of the engine's profiler (`Capabilities::engine`): durations in ns of the 100 MHz counter,
    /// placed on the host clock inside their call. On `AMD:SIM` the counter is the simulated
    /// GPU's clock (100 MHz of host time since the GPU was made).
    ///
    /// Errors: [`Error::InvalidArgument`] once a launch was recorded.
    pub fn set_profile(&mut self, on: bool) -> Result<()> {
        if self.hcq.is_some() || !self.profiled.is_empty() || self.submissions_per_call() > 0 {
            return Err(Error::InvalidArgument { what: "AMD: profiling is chosen before the first launch", value: 0 });
        }
        self.profile = on;
        Ok(())
    }

    /// A timestamp pair for the next profiled launch: (begin, end) GPU addresses.
    pub(crate) fn stamp_pair(&mut self, kind: EventKind, name: &str, arg: u64) -> Result<(u64, u64)> {
        let i = self.profiled.len();
        if i / STAMPS_PER_BUFFER >= self.stamps.len() {
            self.stamps.push(self.dev.alloc((STAMPS_PER_BUFFER * 16) as u64, true)?);
        }
        // CAST: an offset inside a 4 KiB buffer.
        let base = self.stamps[i / STAMPS_PER_BUFFER].va() + (i % STAMPS_PER_BUFFER) as u64 * 16;
        self.profiled.push((kind, name.into(), arg));
        Ok((base, base + 8))
    }

    /// After a call: the profiled launches' timestamps as profiler events, on the host clock
    /// ([`hcq::signal::host_clock_ns`], the clock of the core's and the CLI's call events).
    ///
    /// The device clock is aligned to the host clock as tinygrad's `ProfileDeviceEvent` offset
    /// (`tdiff`: host time at a synchronize minus the GPU's last timestamp), measured at every
    /// call: `done` is the host time at which the wait saw the call complete, so the call's
    /// last timestamp maps to `done` and every launch lies in `[submitted, done]`, inside its
    /// call (QCOM's rule).
    pub(crate) fn record_profile(&mut self, submitted: u64, done: u64) -> Result<()> {
        let Some(h) = &self.hcq else { return Ok(()) };
        let prof = h.profiler();
        if !prof.is_enabled() || self.profiled.is_empty() {
            return Ok(());
        }
        if self.profiled_ids.len() != self.profiled.len() {
            self.profiled_ids = self.profiled.iter().map(|(k, n, a)| (*k, prof.intern(n), *a)).collect();
        }
        // CAST: ticks of a 100 MHz counter to ns, in u128 (no overflow for any u64 tick count).
        let ns = |t: u64| (u128::from(t) * 1_000_000_000 / u128::from(GPU_CLOCK_HZ)) as u64;
        let stamp = |i: usize| -> Result<(u64, u64)> {
            let bus = self.stamps[i / STAMPS_PER_BUFFER].bus();
            let off = (i % STAMPS_PER_BUFFER) * 16;
            let (t0, t1) = (bus.read(off, Width::U64)?, bus.read(off + 8, Width::U64)?);
            Ok((ns(t0), ns(t1.max(t0))))
        };
        let mut last = 0;
        for i in 0..self.profiled_ids.len() {
            last = last.max(stamp(i)?.1);
        }
        // host = device + tdiff, with tdiff = done - last (in i128: either clock may be ahead)
        let tdiff = i128::from(done) - i128::from(last);
        // CAST: clamped into [submitted, done] ⊂ u64.
        let host = |t: u64| (i128::from(t) + tdiff).clamp(i128::from(submitted), i128::from(done)) as u64;
        for (i, &(kind, name, arg)) in self.profiled_ids.iter().enumerate() {
            let (t0, t1) = stamp(i)?;
            prof.record(Event { kind, name, start_ns: host(t0), end_ns: host(t1), arg });
        }
        Ok(())
    }
}
