//! The HCQ engine: how work reaches a device and how the host learns it is done.
//!
//! An [`Engine`] ties together a device's [`Timeline`], its channels (one per hardware queue:
//! compute, copy, ...: each a [`CommandRing`](crate::ring::CommandRing) and doorbell, or an
//! indirect-buffer pool and submit hook, the two [`Shape`]s of [`crate::submit`]), a
//! [`KernargPool`], a backend [`Encoder`] and a [`Profiler`]. Backends (the CPU device, the
//! simulated devices, Adreno over KGSL) build one and implement the device-facing parts: the
//! command processor on the other end of the rings, memory, and the wait hooks.
//!
//! Submission: [`Engine::lock`] takes the device's submit lock (one order across channels) and gives
//! a [`Submitter`]; kernel arguments allocated through it are stamped with the timeline value of
//! the submission that will use them; [`Submitter::submit`] patches the queue's timeline wait
//! (previous value) and signal (new value), copies the words into the channel's ring or IB slot,
//! takes the value for good and then issues the backend's barrier and rings the doorbell (or
//! calls the submit hook). Nothing on this path allocates. The submit lock (which guards the
//! kernel-argument pool) and the ring locks under it may be held across a wait for ring or pool
//! space, so with `std` they are sleeping locks ([`crate::sync::Lock`]). Every [`Stamp`] this
//! returns is also what the allocator's deferred frees wait for ([`Engine`] is a
//! [`Completion`](crate::allocator::Completion)).

use crate::deps::{Access, DepsTracker};
use crate::error::{DeviceName, Error, Result};
use crate::profile::Profiler;
use crate::queue::{Encoder, HwQueue};
use crate::ring::KernargPool;
use crate::signal::{OwnedSignal, WaitHooks, WaitPolicy};
use crate::stamp::{ChannelId, Stamp};
use crate::submit::{Shape, Submission};
use crate::sync::{Lock, LockGuard};
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
    pub value: Stamp,
}

/// Hazard tracking shared by the devices that touch the same buffers: which timeline point last
/// wrote or read each byte range (keyed by base buffer, e.g. its device address).
pub type Hazards = DepsTracker<TimelinePoint>;

/// One channel of a device's engine (a compute or copy queue): a ring and its doorbell, or an indirect-buffer pool and its submit
/// hook ([`Shape`]).
pub struct Channel {
    name: &'static str,
    ring: Lock<Shape>,
}

impl Channel {
    /// A channel called `name` ("compute", "copy") over `shape`: a
    /// [`CommandRing`](crate::ring::CommandRing) or an
    /// [`IbPool`](crate::submit::IbPool).
    pub fn new(name: &'static str, shape: impl Into<Shape>) -> Self {
        Self { name, ring: Lock::new(shape.into()) }
    }

    /// The channel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// True for an indirect-buffer channel.
    pub fn is_ib(&self) -> bool {
        #[cfg(feature = "ib")]
        return matches!(*self.ring.lock(), Shape::Ib(_));
        #[cfg(not(feature = "ib"))]
        false
    }

    /// The monotonic position: the ring's write pointer (words), or the IBs written.
    pub fn wptr(&self) -> u64 {
        self.ring.lock().position()
    }

    /// The largest submission in words: the ring's capacity, or an IB slot's size.
    pub fn ring_words(&self) -> u64 {
        self.ring.lock().max_words()
    }
}

/// A device's HCQ state.
pub struct Engine {
    timeline: Timeline,
    encoder: Arc<dyn Encoder>,
    channels: Vec<Channel>,
    /// The submit lock, guarding the kernel-argument pool (only a submitter uses it). Held
    /// across waits for ring or pool space: a sleeping lock on std.
    submit: Lock<KernargPool>,
    hooks: Arc<dyn WaitHooks>,
    profiler: Profiler,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine").field("timeline", &self.timeline).field("channels", &self.channels.len()).finish()
    }
}

impl Engine {
    /// Build the engine state of device `name`. `timeline` is the device's timeline signal (it is
    /// reset to 0 and from now on moved only by the engine and the device), `channels` must not
    /// be empty.
    pub fn new(
        name: DeviceName,
        timeline: OwnedSignal,
        encoder: Arc<dyn Encoder>,
        channels: Vec<Channel>,
        kernargs: KernargPool,
        hooks: Arc<dyn WaitHooks>,
    ) -> Result<Self> {
        if channels.is_empty() || channels.len() > 256 {
            return Err(Error::InvalidArgument {
                what: "an HCQ device needs 1 to 256 channels",
                value: channels.len() as u64,
            });
        }
        Ok(Self {
            timeline: Timeline::new(name, timeline),
            encoder,
            channels,
            submit: Lock::new(kernargs),
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

    /// The channels.
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// The channel `id` names, if the device has it.
    pub fn channel(&self, id: ChannelId) -> Option<&Channel> {
        self.channels.get(id.index())
    }

    /// The id of the channel called `name` ("compute", "copy"), if the device has one.
    pub fn channel_id(&self, name: &str) -> Option<ChannelId> {
        let i = self.channels.iter().position(|e| e.name == name)?;
        // CAST: a device has at most 256 channels (`Engine::new` refuses more).
        Some(ChannelId::new(i as u8))
    }

    /// A new queue for this device, encoded with its backend's encoder. Building it is safe;
    /// submitting it is not ([`Submitter::submit`]).
    pub fn queue(&self) -> Result<HwQueue> {
        HwQueue::new(self.encoder.clone(), self.timeline.signal())
    }

    /// Take the submit lock.
    pub fn lock(&self) -> Submitter<'_> {
        Submitter { hcq: self, kernargs: self.submit.lock() }
    }

    /// Submit `q` on channel `engine` (shorthand for `lock().submit(..)`); returns the timeline
    /// value that marks its completion.
    ///
    /// # Safety
    /// As [`Submitter::submit`]: the device runs `q`'s commands as they are.
    pub unsafe fn submit(&self, engine: impl Into<ChannelId>, q: &mut HwQueue) -> Result<Stamp> {
        // SAFETY: the caller's contract is `Submitter::submit`'s.
        unsafe { self.lock().submit(engine, q) }
    }

    /// Build and submit a queue that touches `accesses`, waiting only for what the hazard
    /// tracker says it must: the earlier writers of every range it touches and the earlier
    /// readers of every range it writes, on other devices' timelines. Points on this device's own
    /// timeline need no wait (its submissions already run in order). `build` adds the work to a
    /// queue that already holds those waits. Returns the timeline value that completes it.
    ///
    /// # Safety
    /// As [`Submitter::submit`], for the commands `build` adds; `accesses` must cover every
    /// byte range they read or write (the tracker orders only what it is told).
    pub unsafe fn submit_tracked(
        &self,
        engine: impl Into<ChannelId>,
        hazards: &mut Hazards,
        accesses: &[Access],
        build: impl FnOnce(&mut HwQueue, &mut Submitter<'_>) -> Result<()>,
    ) -> Result<Stamp> {
        let mut s = self.lock();
        let me = TimelinePoint { signal: self.timeline.signal().addr(), value: s.next_value() };
        let mut deps = Vec::new();
        hazards.access(accesses, me, &mut deps)?;
        let mut q = self.queue()?;
        for d in deps.iter().filter(|d| d.signal != me.signal) {
            q.wait_at(d.signal, d.value.get())?;
        }
        build(&mut q, &mut s)?;
        // SAFETY: the caller's contract covers the commands `build` added; the waits added here
        // only read other devices' timeline signals.
        unsafe { s.submit(engine, &mut q) }
    }

    /// Continue the timeline from value `last` (a device resumed from an earlier run, a test
    /// that starts near a rollover): the next submission signals `last + 1`.
    ///
    /// Errors: [`Error::InvalidArgument`] while a submission is in flight, when `last` is
    /// behind the last value submitted (stamps of memory still tracked would never pass), or
    /// when it is `u64::MAX` (the next value would wrap to 0, the stamp every timeline has
    /// reached, and memory marked with it would be freed while the device still uses it).
    pub fn resume_at(&self, last: Stamp) -> Result<()> {
        let _lock = self.submit.lock();
        if last.get() == u64::MAX {
            return Err(Error::InvalidArgument {
                what: "resume the timeline: the next value would wrap to 0",
                value: last.get(),
            });
        }
        let submitted = self.timeline.last_submitted();
        if !self.timeline.passed(submitted) {
            return Err(Error::InvalidArgument {
                what: "resume the timeline: a submission is still in flight",
                value: submitted.get(),
            });
        }
        if last < submitted {
            return Err(Error::InvalidArgument {
                what: "resume the timeline: the value is behind the last one submitted",
                value: last.get(),
            });
        }
        self.timeline.resume_at(last);
        Ok(())
    }

    /// Wait for everything submitted so far (a timeout marks the device hung).
    pub fn synchronize(&self) -> Result<()> {
        self.wait(self.timeline.last_submitted())
    }

    /// Wait until the timeline reaches `value`. While profiling, a wait that had to wait is
    /// recorded as a [`Wait`](crate::profile::EventKind::Wait) event (host clock).
    pub fn wait(&self, value: impl Into<Stamp>) -> Result<()> {
        self.wait_with(value, &self.timeline.policy())
    }

    /// Wait for `value` up to `policy.timeout_ns` without progress, without declaring the
    /// device hung: `Ok(false)` when it has not passed by then ([`Timeline::try_wait`]).
    pub fn try_wait(&self, value: impl Into<Stamp>, policy: &WaitPolicy) -> Result<bool> {
        self.timeline.try_wait(value, &*self.hooks, policy)
    }

    /// [`Engine::wait`] under `policy` for this wait alone ([`Timeline::wait_with`]: the
    /// device's shared policy is not touched). A timeout marks the device hung.
    pub fn wait_with(&self, value: impl Into<Stamp>, policy: &WaitPolicy) -> Result<()> {
        let value = value.into();
        if !self.profiler.is_enabled() || self.timeline.passed(value) {
            return self.timeline.wait_with(value, &*self.hooks, policy);
        }
        let st = self.hooks.now_ns();
        let r = self.timeline.wait_with(value, &*self.hooks, policy);
        let name = self.profiler.intern("wait");
        self.profiler.record(crate::profile::Event {
            kind: crate::profile::EventKind::Wait,
            name,
            start_ns: st,
            end_ns: self.hooks.now_ns(),
            arg: value.get(),
        });
        r
    }
}

impl crate::allocator::Completion for Engine {
    fn passed(&self, stamp: Stamp) -> bool {
        self.timeline.passed(stamp)
    }
    fn wait(&self, stamp: Stamp) -> Result<()> {
        Engine::wait(self, stamp)
    }
}

/// The submit lock of a device, held while kernel arguments are filled and a queue is submitted.
pub struct Submitter<'a> {
    hcq: &'a Engine,
    kernargs: LockGuard<'a, KernargPool>,
}

impl Submitter<'_> {
    /// The timeline value the next submission will signal.
    pub fn next_value(&self) -> Stamp {
        self.hcq.timeline.last_submitted().next()
    }

    /// Copy `data` into a fresh kernel-argument block of `size` bytes (≥ `data.len()`, the rest
    /// keeps whatever was there), aligned to `align`, for the next submission; returns its device
    /// address. Waits if the pool would overwrite arguments still in flight.
    pub fn kernargs(&mut self, data: &[u8], size: u64, align: u64) -> Result<u64> {
        let stamp = self.next_value();
        self.kernargs.alloc(data, size, align, stamp, &self.hcq.timeline, &*self.hcq.hooks)
    }

    /// Submit `q` on channel `engine`: reserve the next timeline value, patch the queue's timeline
    /// wait/signal, write the ring (or an IB slot), then the backend's barrier and the doorbell
    /// (or the submit hook). Returns the value that marks completion.
    ///
    /// Order: the words go into the ring or IB slot first (this may wait for space, and may
    /// fail: then nothing is reserved and the next submission takes the same value); then the
    /// value is taken for good, before the doorbell, so a fault recorded from here on can never
    /// let a later submission reuse it; then the barrier and the doorbell or submit call. One
    /// that fails leaves the value taken and records the error as the device's fault (the
    /// words may or may not run).
    ///
    /// # Safety
    /// The device runs the commands of `q` as they are, with nothing checked, so the caller
    /// promises, for each command:
    /// - an exec names a program loaded on this device, and its kernel-argument block (from
    ///   [`Submitter::kernargs`] of this submission) holds what the kernel expects: every
    ///   pointer in it is the device address of memory on this device at least as large as the
    ///   kernel accesses through it;
    /// - every memory range the commands read or write (exec arguments, copy source and
    ///   destination) stays allocated and unreused until the device passes the returned
    ///   stamp (a [`Buffer`](crate::buffer::Buffer) marked with it, or one kept alive and
    ///   synchronized), and no host code accesses it meanwhile except through buffer copies
    ///   that wait for the stamp;
    /// - signal and timestamp commands write slots the caller owns (or that a device's
    ///   protocol hands to it); none writes any device's timeline (command processors refuse
    ///   the soft ones, hardware ones do not);
    /// - waits name signal slots and values that some submission or owner will reach.
    ///
    /// Submitting is where arbitrary words reach the device, so it takes `unsafe`: a kernel
    /// argument block of any 64-bit words, exec'd and submitted from safe code, does not
    /// compile:
    ///
    /// ```compile_fail,E0133
    /// fn repro(hcq: &hcq::engine::Engine) -> hcq::Result<()> {
    ///     let mut q = hcq.queue()?;
    ///     let mut s = hcq.lock();
    ///     let ka = s.kernargs(&0x8u64.to_le_bytes(), 8, 8)?; // a "pointer" to address 0x8
    ///     q.exec(0, ka, [1; 3], [1; 3])?;
    ///     s.submit(0, &mut q)?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// ```compile_fail,E0133
    /// fn repro(hcq: &hcq::engine::Engine) -> hcq::Result<()> {
    ///     let mut q = hcq.queue()?;
    ///     q.exec(0, 0x8, [1; 3], [1; 3])?;
    ///     hcq.submit(0, &mut q)?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// The same with the caller's promise compiles (the safe surface is
    /// [`Program::call`](crate::program::Program::call) and the runner):
    ///
    /// ```
    /// fn submit_barrier(hcq: &hcq::engine::Engine) -> hcq::Result<hcq::stamp::Stamp> {
    ///     let mut q = hcq.queue()?;
    ///     q.memory_barrier()?;
    ///     // SAFETY: a barrier accesses no memory and writes no signal.
    ///     unsafe { hcq.lock().submit(0, &mut q) }
    /// }
    /// fn submit_barrier_too(hcq: &hcq::engine::Engine) -> hcq::Result<hcq::stamp::Stamp> {
    ///     let mut q = hcq.queue()?;
    ///     q.memory_barrier()?;
    ///     // SAFETY: as above.
    ///     unsafe { hcq.submit(0, &mut q) }
    /// }
    /// ```
    pub unsafe fn submit(&mut self, engine: impl Into<ChannelId>, q: &mut HwQueue) -> Result<Stamp> {
        let hcq = self.hcq;
        let engine = engine.into();
        let eng = hcq
            .channel(engine)
            .ok_or(Error::InvalidArgument { what: "channel index", value: engine.index() as u64 })?;
        q.finish()?;
        hcq.timeline.check()?;
        let next = self.next_value();
        q.patch_timeline(next.prev().get(), next.get())?;
        let mut ring = eng.ring.lock();
        Submission::write(&mut *ring, q.words(), next, &hcq.timeline, &*hcq.hooks)?;
        let (_, v) = hcq.timeline.advance();
        debug_assert_eq!(v, next);
        if let Err(e) = Submission::kick(&mut *ring) {
            hcq.timeline.record_fault(e.clone());
            return Err(e);
        }
        Ok(v)
    }
}

#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::*;
    use crate::error::device_name;
    use crate::mmio::{HostRegion, MmioBus, Width};
    use crate::queue::Command;
    use crate::ring::{CommandRing, Doorbell};
    use crate::signal::{SignalPool, StdHooks, WaitPolicy};
    use crate::soft::SoftEncoder;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{OnceLock, Weak};

    /// A doorbell whose write can make the device fault at that moment (a command processor
    /// that dies as it is kicked).
    #[derive(Default)]
    struct Bell {
        hcq: OnceLock<Weak<Engine>>,
        fault_on_kick: AtomicBool,
    }

    impl MmioBus for Bell {
        fn size(&self) -> usize {
            8
        }
        fn read(&self, _offset: usize, _width: Width) -> Result<u64> {
            Ok(0)
        }
        fn write(&self, _offset: usize, _width: Width, _value: u64) -> Result<()> {
            if self.fault_on_kick.swap(false, Ordering::AcqRel)
                && let Some(hcq) = self.hcq.get().and_then(Weak::upgrade)
            {
                hcq.timeline().record_fault(Error::Unsupported { what: "test fault at the doorbell", value: 0 });
            }
            Ok(())
        }
    }

    /// A one-engine device with a `ring_words` ring that nothing consumes.
    fn rig(ring_words: usize, timeout_ms: u64) -> (Arc<Engine>, Arc<Bell>) {
        let pool = SignalPool::new();
        let bell = Arc::new(Bell::default());
        let ring = CommandRing::new(
            Arc::new(HostRegion::new(ring_words * 4, 8).unwrap()),
            8,
            Doorbell { bus: bell.clone(), offset: 0, width: Width::U64 },
        )
        .unwrap();
        let kernargs = KernargPool::new(Arc::new(HostRegion::new(256, 8).unwrap()), 0x1000, 8);
        let hcq = Engine::new(
            device_name("T"),
            pool.alloc(0),
            Arc::new(SoftEncoder),
            alloc::vec![Channel::new("compute", ring)],
            kernargs,
            Arc::new(StdHooks),
        )
        .unwrap();
        hcq.timeline().set_policy(WaitPolicy::with_timeout_ms(timeout_ms));
        let hcq = Arc::new(hcq);
        let _ = bell.hcq.set(Arc::downgrade(&hcq));
        (hcq, bell)
    }

    /// Submit a queue of barriers, signals of the test's own slots and waits (no exec, no copy).
    fn submit(hcq: &Engine, q: &mut HwQueue) -> Result<Stamp> {
        // SAFETY: the test queues hold barriers only: no memory is accessed, no slot written
        // but the timeline's by the engine.
        unsafe { hcq.submit(0, q) }
    }

    fn barrier_queue(hcq: &Engine) -> HwQueue {
        let mut q = hcq.queue().unwrap();
        q.memory_barrier().unwrap();
        q
    }

    #[test]
    fn a_fault_at_the_doorbell_never_lets_a_later_submission_reuse_the_value() {
        let (hcq, bell) = rig(256, 50);
        bell.fault_on_kick.store(true, Ordering::Release);
        let mut q = barrier_queue(&hcq);
        let first = submit(&hcq, &mut q);
        // the words in the ring signal this value, whatever `submit` reported
        let Some(Command::Signal { value: signalled, .. }) = q.command(q.len() - 1) else {
            panic!("a queue ends with its timeline signal")
        };
        assert_eq!(first, Ok(Stamp::new(signalled)), "the value was taken before the doorbell");
        assert!(hcq.timeline().fault().is_some(), "the fault is recorded");
        assert!(matches!(submit(&hcq, &mut barrier_queue(&hcq)), Err(Error::Unsupported { .. })));
        // after a reset, the next submission gets a value of its own
        hcq.timeline().clear_hung();
        let second = submit(&hcq, &mut barrier_queue(&hcq)).unwrap();
        assert_ne!(second.get(), signalled, "two submissions in the ring signal the same timeline value");
        assert_eq!(second.get(), signalled + 1);
    }

    /// Counts barriers, and checks that every submit hook call follows a barrier of its own.
    #[derive(Default)]
    struct Order {
        barriers: core::sync::atomic::AtomicU64,
        submits: core::sync::atomic::AtomicU64,
        unfenced: AtomicBool,
    }

    impl crate::barrier::DeviceBarrier for Order {
        fn device_write_barrier(&self) {
            self.barriers.fetch_add(1, Ordering::AcqRel);
        }
    }

    struct Hook(Arc<Order>, Vec<(u64, u64, u64)>, Arc<std::sync::Mutex<Vec<(u64, u64, u64)>>>);

    impl crate::submit::IbSubmit for Hook {
        fn submit_ib(&mut self, addr: u64, bytes: u64, stamp: Stamp) -> Result<()> {
            let n = self.0.submits.fetch_add(1, Ordering::AcqRel) + 1;
            if self.0.barriers.load(Ordering::Acquire) != n {
                self.0.unfenced.store(true, Ordering::Release);
            }
            self.1.push((addr, bytes, stamp.get()));
            self.2.lock().unwrap().clone_from(&self.1);
            Ok(())
        }
    }

    #[test]
    fn an_ib_engine_submits_each_queue_after_the_backend_barrier_with_its_stamp() {
        let pool = SignalPool::new();
        let order = Arc::new(Order::default());
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mem = Arc::new(HostRegion::new(3 * 256, 8).unwrap());
        let ibs = crate::submit::IbPool::new(
            mem,
            0x4000,
            256,
            crate::barrier::Barrier::Custom(order.clone()),
            alloc::boxed::Box::new(Hook(order.clone(), Vec::new(), seen.clone())),
        )
        .unwrap();
        let kernargs = KernargPool::new(Arc::new(HostRegion::new(256, 8).unwrap()), 0x1000, 8);
        let hcq = Engine::new(
            device_name("T"),
            pool.alloc(0),
            Arc::new(SoftEncoder),
            alloc::vec![Channel::new("compute", ibs)],
            kernargs,
            Arc::new(StdHooks),
        )
        .unwrap();
        hcq.timeline().set_policy(WaitPolicy::with_timeout_ms(20));
        assert!(hcq.channels()[0].is_ib());
        assert_eq!(hcq.channels()[0].ring_words(), 64);
        let mut stamps = Vec::new();
        for i in 0..5u64 {
            if i >= 3 {
                // the device finished the submission that used this slot last
                hcq.timeline().signal().set(i - 2);
            }
            stamps.push(submit(&hcq, &mut barrier_queue(&hcq)).unwrap().get());
        }
        assert_eq!(stamps, [1, 2, 3, 4, 5]);
        assert_eq!(order.barriers.load(Ordering::Acquire), 5);
        assert!(!order.unfenced.load(Ordering::Acquire), "a submit without its own barrier before it");
        let seen = seen.lock().unwrap().clone();
        let addrs: Vec<u64> = seen.iter().map(|s| s.0).collect();
        assert_eq!(addrs, [0x4000, 0x4100, 0x4200, 0x4000, 0x4100], "slots round-robin");
        assert!(seen.iter().zip(1..).all(|(s, v)| s.2 == v), "each IB carries its stamp");
        // the 6th reuses slot 2 once stamp 3 passed; the 7th needs slot 0, whose stamp 4 never
        // passes
        hcq.timeline().signal().set(3);
        submit(&hcq, &mut barrier_queue(&hcq)).unwrap();
        let e = submit(&hcq, &mut barrier_queue(&hcq)).unwrap_err();
        assert!(matches!(e, Error::Timeout { awaited: 4, .. }), "{e:?}");
        assert_eq!(hcq.timeline().last_submitted(), Stamp::new(6), "the failed submission took no value");
    }

    #[test]
    fn a_timeline_resumes_forward_only_and_never_under_work_in_flight() {
        let (hcq, _bell) = rig(256, 20);
        hcq.resume_at(Stamp::new(u64::from(u32::MAX))).unwrap();
        let s = submit(&hcq, &mut barrier_queue(&hcq)).unwrap();
        assert_eq!(s.get(), 1 << 32);
        assert!(hcq.resume_at(Stamp::new(1 << 33)).is_err(), "in flight");
        hcq.timeline().signal().set(1 << 32);
        assert!(hcq.resume_at(Stamp::new(5)).is_err(), "backwards");
        hcq.resume_at(Stamp::new(1 << 33)).unwrap();
        assert_eq!(submit(&hcq, &mut barrier_queue(&hcq)).unwrap().get(), (1 << 33) + 1);
    }

    #[test]
    fn a_timeline_never_resumes_where_the_next_value_wraps_to_zero() {
        let (hcq, _bell) = rig(256, 20);
        let e = hcq.resume_at(Stamp::new(u64::MAX)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { value: u64::MAX, .. }), "{e:?}");
        assert_eq!(hcq.timeline().last_submitted(), Stamp::ZERO, "nothing changed");
        // the largest value that can be resumed from leaves one submission, signalling u64::MAX
        hcq.resume_at(Stamp::new(u64::MAX - 1)).unwrap();
        assert_eq!(submit(&hcq, &mut barrier_queue(&hcq)).unwrap().get(), u64::MAX);
        assert!(!hcq.timeline().passed(Stamp::new(u64::MAX)), "the stamp is not reached before the device ran it");
    }

    /// CPU time (user + system, in clock ticks) this thread has used.
    #[cfg(target_os = "linux")]
    fn thread_cpu_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // fields after the parenthesised name: state is field 3, utime 14, stime 15
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }

    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "reads /proc")]
    fn a_thread_waiting_for_the_submit_lock_sleeps_while_the_holder_waits_for_ring_space() {
        // 11-word queues in a 16-word ring nobody consumes: the second submission waits for
        // ring space, holding the submit lock, until the 900 ms timeout
        let (hcq, _bell) = rig(16, 900);
        submit(&hcq, &mut barrier_queue(&hcq)).unwrap();
        let holder = {
            let hcq = hcq.clone();
            std::thread::spawn(move || submit(&hcq, &mut barrier_queue(&hcq)))
        };
        // until the holder has the lock (it keeps it for the whole 900 ms wait)
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while hcq.submit.try_lock().is_some() {
            assert!(std::time::Instant::now() < deadline, "the holder never took the submit lock");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (ticks, waited) = {
            let t0 = std::time::Instant::now();
            let c0 = thread_cpu_ticks();
            let guard = hcq.lock();
            let c1 = thread_cpu_ticks();
            drop(guard);
            (c1 - c0, t0.elapsed())
        };
        assert!(matches!(holder.join().unwrap(), Err(Error::Timeout { .. })));
        assert!(waited.as_millis() >= 400, "the lock was free early: waited {waited:?}");
        // a spinning waiter burns CPU for the whole wait (tens of ticks at 100 Hz even when it
        // gets a small share of a busy machine); a sleeping one uses next to none
        assert!(ticks <= 3, "waiting {waited:?} for the submit lock used {ticks} ticks of CPU");
    }
}
