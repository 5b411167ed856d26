//! The HCQ engine: how work reaches a device and how the host learns it is done.
//!
//! An [`Hcq`] ties together a device's [`Timeline`], its engines (one [`CommandRing`] and
//! doorbell each: a compute engine, a copy engine, ...), a [`KernargPool`], a backend
//! [`Encoder`] and a [`Profiler`]. Backends (the CPU device, the simulated devices, Adreno over
//! KGSL) build one and implement the device-facing parts: the command processor on the other end
//! of the rings, memory, and the wait hooks.
//!
//! Submission: [`Hcq::lock`] takes the device's submit lock (one order across engines) and gives
//! a [`Submitter`]; kernel arguments allocated through it are stamped with the timeline value of
//! the submission that will use them; [`Submitter::submit`] reserves that value, patches the
//! queue's timeline wait (previous value) and signal (new value), copies the words into the
//! engine's ring and rings its doorbell. Nothing on this path allocates.

use crate::deps::{Access, DepsTracker};
use crate::error::{DeviceName, Error, Result};
use crate::profile::Profiler;
use crate::queue::{Encoder, HwQueue};
use crate::ring::{CommandRing, KernargPool};
use crate::signal::{Signal, WaitHooks};
use crate::timeline::Timeline;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// A dependency in the hazard tracker: a point on some device's timeline (the signal's device
/// address and the value that marks the operation done).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimelinePoint {
    /// Device address of the timeline signal.
    pub signal: u64,
    /// The value.
    pub value: u64,
}

/// Hazard tracking shared by the devices that touch the same buffers: which timeline point last
/// wrote or read each byte range (keyed by base buffer, e.g. its device address).
pub type Hazards = DepsTracker<TimelinePoint>;

/// One engine of a device: a ring and its doorbell.
pub struct Engine {
    name: &'static str,
    ring: spin::Mutex<CommandRing>,
}

impl Engine {
    /// An engine called `name` ("compute", "copy") over `ring`.
    pub fn new(name: &'static str, ring: CommandRing) -> Self {
        Self { name, ring: spin::Mutex::new(ring) }
    }

    /// The engine's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The ring's write pointer (words).
    pub fn wptr(&self) -> u64 {
        self.ring.lock().wptr()
    }

    /// The ring's capacity in words (a submission can never be larger).
    pub fn ring_words(&self) -> u64 {
        self.ring.lock().capacity_words()
    }
}

/// A device's HCQ state.
pub struct Hcq {
    timeline: Timeline,
    encoder: Arc<dyn Encoder>,
    engines: Vec<Engine>,
    kernargs: spin::Mutex<KernargPool>,
    submit: spin::Mutex<()>,
    hooks: Arc<dyn WaitHooks>,
    profiler: Profiler,
}

impl core::fmt::Debug for Hcq {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hcq").field("timeline", &self.timeline).field("engines", &self.engines.len()).finish()
    }
}

impl Hcq {
    /// Build the engine state of device `name`. `timeline` is the device's timeline signal (it is
    /// reset to 0), `engines` must not be empty.
    pub fn new(
        name: DeviceName,
        timeline: Signal,
        encoder: Arc<dyn Encoder>,
        engines: Vec<Engine>,
        kernargs: KernargPool,
        hooks: Arc<dyn WaitHooks>,
    ) -> Result<Self> {
        if engines.is_empty() {
            return Err(Error::InvalidArgument { what: "an HCQ device needs at least one engine", value: 0 });
        }
        Ok(Self {
            timeline: Timeline::new(name, timeline),
            encoder,
            engines,
            kernargs: spin::Mutex::new(kernargs),
            submit: spin::Mutex::new(()),
            hooks,
            profiler: Profiler::new(1 << 16),
        })
    }

    /// The device's timeline.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The wait hooks (clock, sleep) of the backend.
    pub fn hooks(&self) -> &dyn WaitHooks {
        &*self.hooks
    }

    /// The device's profiler.
    pub fn profiler(&self) -> &Profiler {
        &self.profiler
    }

    /// The engines.
    pub fn engines(&self) -> &[Engine] {
        &self.engines
    }

    /// A new queue for this device, encoded with its backend's encoder.
    pub fn queue(&self) -> Result<HwQueue> {
        HwQueue::new(self.encoder.clone(), self.timeline.signal())
    }

    /// Take the submit lock.
    pub fn lock(&self) -> Submitter<'_> {
        Submitter { hcq: self, _guard: self.submit.lock() }
    }

    /// Submit `q` on engine `engine` (shorthand for `lock().submit(..)`); returns the timeline
    /// value that marks its completion.
    pub fn submit(&self, engine: usize, q: &mut HwQueue) -> Result<u64> {
        self.lock().submit(engine, q)
    }

    /// Build and submit a queue that touches `accesses`, waiting only for what the hazard
    /// tracker says it must: the earlier writers of every range it touches and the earlier
    /// readers of every range it writes, on other devices' timelines. Points on this device's own
    /// timeline need no wait (its submissions already run in order). `build` adds the work to a
    /// queue that already holds those waits. Returns the timeline value that completes it.
    pub fn submit_tracked(
        &self,
        engine: usize,
        hazards: &mut Hazards,
        accesses: &[Access],
        build: impl FnOnce(&mut HwQueue, &mut Submitter<'_>) -> Result<()>,
    ) -> Result<u64> {
        let mut s = self.lock();
        let me = TimelinePoint { signal: self.timeline.signal().addr(), value: s.next_value() };
        let mut deps = Vec::new();
        hazards.access(accesses, me, &mut deps)?;
        let mut q = self.queue()?;
        for d in deps.iter().filter(|d| d.signal != me.signal) {
            q.wait_at(d.signal, d.value)?;
        }
        build(&mut q, &mut s)?;
        s.submit(engine, &mut q)
    }

    /// Wait for everything submitted so far (a timeout marks the device hung).
    pub fn synchronize(&self) -> Result<()> {
        self.wait(self.timeline.last_submitted())
    }

    /// Wait until the timeline reaches `value`. While profiling, a wait that had to wait is
    /// recorded as a [`Wait`](crate::profile::EventKind::Wait) event (host clock).
    pub fn wait(&self, value: u64) -> Result<()> {
        if !self.profiler.is_enabled() || self.timeline.signal().is_reached(value) {
            return self.timeline.wait(value, &*self.hooks);
        }
        let st = self.hooks.now_ns();
        let r = self.timeline.wait(value, &*self.hooks);
        let name = self.profiler.intern("wait");
        self.profiler.record(crate::profile::Event {
            kind: crate::profile::EventKind::Wait,
            name,
            start_ns: st,
            end_ns: self.hooks.now_ns(),
            arg: value,
        });
        r
    }
}

/// The submit lock of a device, held while kernel arguments are filled and a queue is submitted.
pub struct Submitter<'a> {
    hcq: &'a Hcq,
    _guard: spin::MutexGuard<'a, ()>,
}

impl Submitter<'_> {
    /// The timeline value the next submission will signal.
    pub fn next_value(&self) -> u64 {
        self.hcq.timeline.last_submitted() + 1
    }

    /// Copy `data` into a fresh kernel-argument block of `size` bytes (≥ `data.len()`, the rest
    /// keeps whatever was there), aligned to `align`, for the next submission; returns its device
    /// address. Waits if the pool would overwrite arguments still in flight.
    pub fn kernargs(&mut self, data: &[u8], size: u64, align: u64) -> Result<u64> {
        let stamp = self.next_value();
        self.hcq.kernargs.lock().alloc(data, size, align, stamp, &self.hcq.timeline, &*self.hcq.hooks)
    }

    /// Submit `q` on engine `engine`: reserve the next timeline value, patch the queue's timeline
    /// wait/signal, write the ring, ring the doorbell. Returns the value that marks completion.
    pub fn submit(&mut self, engine: usize, q: &mut HwQueue) -> Result<u64> {
        let hcq = self.hcq;
        let eng =
            hcq.engines.get(engine).ok_or(Error::InvalidArgument { what: "engine index", value: engine as u64 })?;
        q.finish()?;
        hcq.timeline.check()?;
        let (prev, next) = (hcq.timeline.last_submitted(), hcq.timeline.last_submitted() + 1);
        q.patch_timeline(prev, next)?;
        let mut ring = eng.ring.lock();
        // reserve only once the words are in place: a failed write leaves the timeline as it was
        ring.submit(q.words(), next, &hcq.timeline, &*hcq.hooks).map(|_| ())?;
        let (_, v) = hcq.timeline.reserve()?;
        debug_assert_eq!(v, next);
        Ok(v)
    }
}
