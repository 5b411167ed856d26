//! Per-launch profiling of a [`QcomBackend`]: every dispatch and copy bracketed by two
//! always-on-counter timestamps, turned into profiler events after each call.

use super::QcomBackend;
use crate::flags::MemFlags;
use hcq::mmio::{MmioBus, Width};
use hcq::profile::{Event, EventKind};
use hcq::{Error, Result};

/// Profiled launches per timestamp object (16 bytes each).
pub(super) const STAMPS_PER_OBJECT: usize = 256;

/// The a6xx always-on counter's rate (`CP_ALWAYS_ON_COUNTER`, 19.2 MHz XO on SDM845).
const ALWAYS_ON_HZ: u64 = 19_200_000;

impl QcomBackend {
    /// Profile every launch (before the load): each dispatch and copy is bracketed by two
    /// `CP_REG_TO_MEM` writes of the always-on counter (`Command::Timestamp`, which waits for
    /// idle first), and after each [`Backend::replay`](hcq_runner::Backend::replay) the pairs become `Program`/`Copy` events
    /// of the engine's profiler (`QcomBackend::hcq().profiler()`): durations in ns of the
    /// counter's 19.2 MHz clock, placed on the host clock inside their call (the device clock
    /// aligned per call, see `record_profile`). On `QCOM:SIM` the counter is the simulated CP's
    /// model clock (a tick per packet and per work-group), so the durations are relative costs,
    /// not time.
    pub fn set_profile(&mut self, on: bool) -> Result<()> {
        if self.enc.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: profiling is chosen before the first launch", value: 0 });
        }
        self.profile = on;
        Ok(())
    }

    /// A timestamp pair for the next profiled launch: (begin, end) device addresses.
    pub(super) fn stamp_pair(&mut self, kind: EventKind, name: &str, arg: u64) -> Result<(u64, u64)> {
        let i = self.profiled.len();
        if i / STAMPS_PER_OBJECT >= self.stamps.len() {
            self.stamps.push(self.dev.kernel.alloc((STAMPS_PER_OBJECT * 16) as u64, MemFlags::USE_CPU_MAP)?);
        }
        let base = self.stamps[i / STAMPS_PER_OBJECT].gpuaddr() + (i % STAMPS_PER_OBJECT) as u64 * 16;
        self.profiled.push((kind, name.into(), arg));
        Ok((base, base + 8))
    }

    /// After a call: the profiled launches' timestamps as profiler events, on the host clock
    /// ([`hcq::signal::host_clock_ns`], the clock of the core's and the CLI's call events).
    ///
    /// The device clock is aligned to the host clock as tinygrad's `ProfileDeviceEvent` offset
    /// (`tdiff`: host time at a synchronize minus the GPU's last timestamp), measured at every
    /// call: `done` is the host time at which the wait saw the call complete, so the call's last
    /// timestamp maps to `done` and every kernel lies in `[submitted, done]`, inside its call.
    /// It is re-measured per call because `QCOM:SIM`'s counter is a model clock (a tick per
    /// packet and work-group) that does not keep pace with host time; on hardware it is the same
    /// offset each time within the wait's wake-up latency. A start before `submitted` (a model
    /// clock claiming more time than passed) is drawn at `submitted`.
    pub(super) fn record_profile(&mut self, submitted: u64, done: u64) -> Result<()> {
        let Some(h) = &self.hcq else { return Ok(()) };
        let prof = h.profiler();
        if !prof.is_enabled() || self.profiled.is_empty() {
            return Ok(());
        }
        if self.profiled_ids.len() != self.profiled.len() {
            self.profiled_ids = self.profiled.iter().map(|(k, n, a)| (*k, prof.intern(n), *a)).collect();
        }
        // CAST: ticks of a 19.2 MHz counter to ns, in u128 (no overflow for any u64 tick count).
        let ns = |t: u64| (u128::from(t) * 1_000_000_000 / u128::from(ALWAYS_ON_HZ)) as u64;
        let stamp = |i: usize| -> Result<(u64, u64)> {
            let bus = self.stamps[i / STAMPS_PER_OBJECT].bus();
            let off = (i % STAMPS_PER_OBJECT) * 16;
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
