//! Soft devices without threads: the submitting code drives the command processor.
//!
//! An [`InlineDevice`] is the thread-less sibling of the std runner's `SoftDevice`: the same
//! [`Engine`] (timeline, rings, kernel-argument pool, [`SoftEncoder`](super::SoftEncoder)), the same [`SoftCp`](super::SoftCp) reading
//! the rings like a hardware CP, but no thread on the other end. Instead every wait of the
//! device — [`Engine::wait`], [`Engine::synchronize`], a full ring or kernel-argument pool waiting for
//! older work to retire — runs the command processors from its wait hooks until the awaited value
//! is there. So plain submit-then-wait code runs unchanged on a bare-metal board, in a
//! single-threaded host program, or anywhere without `std`. [`InlineDevice::run_until`] is the
//! explicit form: drive the engines until the timeline passes a value, and fail at once (instead
//! of at the wait timeout) when that value was never submitted.
//!
//! The command processors take the write pointer from the doorbell registers (the soft
//! device's register block, [`DOORBELL`] and [`RPTR`], in host memory of its own), as a
//! hardware CP would, so a wait inside [`CommandRing::submit`](crate::ring::CommandRing::submit) — which holds the ring's lock —
//! never needs that lock.
//!
//! What `exec`, `copy` and `timestamp` mean is the backend's [`Executor`] (the soft device's
//! one trait, as on the threaded driver); it reads kernel arguments through a [`SoftContext`].
//! Signals live in the process-wide [`HOST_SIGNALS`](super::HOST_SIGNALS) pool (device address
//! == CPU address). The command processor, the executor trait, the context, the sizes
//! ([`SoftConfig`]; [`SoftConfig::compact`] is this device's usual) and the register block are
//! the soft device's ([`super::cp`], re-exported here); this module is the driver without
//! threads.
//!
//! A command-processor error (a malformed packet, a signal address that is no signal, a kernel
//! that fails) stops the engine and is the device's fault: waits end with it, as with a
//! hardware CP that faulted.
//!
//! Limits: a wait packet on another inline device's signal is satisfied only when that device
//! is driven too (call its [`InlineDevice::pump`]); until then the wait ends in the policy's
//! timeout. The device's wait policy starts with no spin phase (spinning cannot make progress
//! when this thread is the device), which the backend may change with
//! [`Timeline::set_policy`](crate::timeline::Timeline::set_policy).

use super::cp::{self, EngineCp, Target};
pub use super::cp::{
    DOORBELL, Executor, MAX_ENGINES, RPTR, SoftConfig, SoftContext, doorbell_offset, regs_bytes, rptr_offset,
};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::mmio::{HostRegion, MmioBus, Width};
use crate::signal::{Signal, WaitHooks, WaitPolicy};
use crate::stamp::Stamp;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// The command processors and what they act on; lives in the wait hooks so that every wait
/// can drive it.
struct Cps {
    engines: Vec<EngineCp>,
    regs: Arc<HostRegion>,
    exec: Arc<dyn Executor>,
    ctx: Arc<SoftContext>,
    timeline: Signal,
    /// The first command-processor error; the engines stop once it is set.
    fault: Option<Error>,
}

impl Cps {
    /// Run every engine until none can make progress; returns the number of commands run.
    fn pump(&mut self) -> Result<u64> {
        if let Some(e) = &self.fault {
            return Err(e.clone());
        }
        let mut ran = 0u64;
        loop {
            let before = ran;
            for e in 0..self.engines.len() {
                match self.run_engine(e) {
                    Ok(n) => ran += n,
                    Err(err) => {
                        self.fault = Some(err.clone());
                        return Err(err);
                    }
                }
            }
            // an engine's signal may have released another engine's wait: go round again
            if ran == before {
                return Ok(ran);
            }
        }
    }

    fn run_engine(&mut self, e: usize) -> Result<u64> {
        let regs = &self.regs;
        let t = Target { exec: &*self.exec, ctx: &self.ctx, timeline: &self.timeline };
        let Some(eng) = self.engines.get_mut(e) else {
            return Ok(0);
        };
        let (_, ran) = eng.drain(&t, || regs.read(doorbell_offset(e), Width::U64)).map_err(|err| {
            err.context(alloc::format!("inline engine {e} command processor at word {}", eng.cp.rptr()))
        })?;
        if ran > 0 {
            self.regs.write(rptr_offset(e), Width::U64, eng.cp.rptr())?;
        }
        Ok(ran)
    }
}

/// Wait hooks that run the command processors: every wait of the device drives it.
struct DriveHooks {
    cps: spin::Mutex<Cps>,
    clock: fn() -> u64,
}

impl DriveHooks {
    fn drive(&self) {
        // a wait from inside an executor (or from another thread that is pumping) finds the
        // processors busy: let that run finish instead of recursing
        if let Some(mut cps) = self.cps.try_lock() {
            let _ = cps.pump();
        } else {
            crate::sync::spin_hint();
        }
    }
}

impl WaitHooks for DriveHooks {
    fn now_ns(&self) -> u64 {
        (self.clock)()
    }
    fn yield_now(&self) {
        self.drive();
    }
    fn sleep(&self, _idle_ns: u64) {
        self.drive();
    }
    fn fault(&self) -> Option<Error> {
        self.cps.try_lock().and_then(|c| c.fault.clone())
    }
}

/// A soft device whose command processors run on the submitting thread (see the module docs).
pub struct InlineDevice {
    hcq: Arc<Engine>,
    hooks: Arc<DriveHooks>,
    regs: Arc<HostRegion>,
    ctx: Arc<SoftContext>,
    /// The device memory the rings and the kernel-argument pool are carved from.
    _mem: Arc<HostRegion>,
}

impl core::fmt::Debug for InlineDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InlineDevice").field("hcq", &self.hcq).finish()
    }
}

impl InlineDevice {
    /// Build device `name`: rings and kernel-argument pool in heap memory, the timeline signal
    /// from [`HOST_SIGNALS`](super::HOST_SIGNALS), doorbells in a register block of its own,
    /// and `executor` for exec and copy commands. `clock` gives monotonic nanoseconds for wait
    /// timeouts (on a board, the generic timer).
    pub fn new(name: &str, config: &SoftConfig, executor: Arc<dyn Executor>, clock: fn() -> u64) -> Result<Self> {
        let n = config.engines.len();
        let regs = Arc::new(HostRegion::new(regs_bytes(n).max(16), 8)?);
        let bell_bus: Arc<dyn MmioBus + Send> = regs.clone();
        let cp::Carved { name, engines, cps, kpool, kmem, kernarg_base, timeline, mem } =
            cp::carve(name, config, bell_bus)?;
        let ctx = Arc::new(SoftContext::new(kmem, kernarg_base, None));
        let hooks = Arc::new(DriveHooks {
            cps: spin::Mutex::new(Cps {
                engines: cps,
                regs: regs.clone(),
                exec: executor,
                ctx: ctx.clone(),
                timeline: timeline.clone(),
                fault: None,
            }),
            clock,
        });
        let dyn_hooks: Arc<dyn WaitHooks> = hooks.clone();
        let hcq = Arc::new(Engine::new(name, timeline, cp::encoder(), engines, kpool, dyn_hooks)?);
        // spinning cannot make progress when the waiting thread is the device: drive at once
        hcq.timeline().set_policy(WaitPolicy { spin_ns: 0, ..WaitPolicy::default() });
        Ok(Self { hcq, hooks, regs, ctx, _mem: mem })
    }

    /// The engine state (timeline, queues, submission).
    pub fn engine(&self) -> &Engine {
        &self.hcq
    }

    /// The engine state, shared.
    pub fn hcq_arc(&self) -> &Arc<Engine> {
        &self.hcq
    }

    /// Run whatever the command processors can run now; returns the number of commands run
    /// (0 when they are already running: called from inside an executor, or while another
    /// thread drives them). A command-processor error is returned, recorded as the device's
    /// fault, and stops the engines.
    pub fn pump(&self) -> Result<u64> {
        let Some(mut cps) = self.hooks.cps.try_lock() else {
            return Ok(0);
        };
        let r = cps.pump();
        drop(cps);
        if let Err(e) = &r {
            self.hcq.timeline().record_fault(e.clone());
        }
        r
    }

    /// Drive the command processors until the timeline reaches `value`. A value never
    /// submitted is an [`Error::InvalidArgument`] at once; a command-processor fault ends the
    /// run with that fault; a wait packet that nothing releases ends in the wait policy's
    /// timeout (the device is then hung, as with any timeline wait).
    pub fn run_until(&self, value: impl Into<Stamp>) -> Result<()> {
        let value = value.into().get();
        let tl = self.hcq.timeline();
        if value > tl.last_submitted().get() && !tl.signal().is_32bit() {
            return Err(Error::InvalidArgument {
                what: "inline device: run until a timeline value that was never submitted",
                value,
            });
        }
        self.pump()?;
        self.hcq.wait(value)
    }

    /// Drive the command processors until everything submitted so far has run.
    pub fn synchronize(&self) -> Result<()> {
        self.run_until(self.hcq.timeline().last_submitted())
    }

    /// The read pointer engine `e`'s command processor has published (words).
    pub fn rptr(&self, e: usize) -> Result<u64> {
        self.regs.read(rptr_offset(e), Width::U64)
    }

    /// Let exec commands read kernel arguments from `region`, which the device sees at
    /// `device_base` (a captured launch list keeps its arguments in a region of its own that
    /// the wrapping pool never reuses).
    pub fn add_kernarg_region(&self, device_base: u64, region: Arc<dyn MmioBus + Send + Sync>) {
        self.ctx.add_region(device_base, region);
    }

    /// Stop reading kernel arguments from the region added at `device_base`.
    pub fn remove_kernarg_region(&self, device_base: u64) {
        self.ctx.remove_region(device_base);
    }
}

#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::*;
    use crate::signal::host_clock_ns;
    use core::sync::atomic::{AtomicU64, Ordering};

    /// Counts exec calls and checks the kernel arguments it is handed.
    #[derive(Default)]
    struct Count {
        calls: AtomicU64,
        arg_sum: AtomicU64,
    }
    impl Executor for Count {
        fn exec(&self, ctx: &SoftContext, program: u64, kernargs: u64, _: [u32; 3], _: [u32; 3]) -> Result<()> {
            if program == 99 {
                return Err(Error::InvalidArgument { what: "test: program 99 fails", value: 99 });
            }
            let mut b = [0u8; 8];
            ctx.read_kernargs(kernargs, &mut b)?;
            self.arg_sum.fetch_add(u64::from_le_bytes(b), Ordering::Relaxed);
            self.calls.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    }

    fn device(exec: Arc<Count>, config: &SoftConfig) -> InlineDevice {
        InlineDevice::new("INLINE", config, exec, host_clock_ns).unwrap()
    }

    #[test]
    fn nothing_runs_until_the_submitter_drives_the_device() {
        let exec = Arc::new(Count::default());
        let dev = device(exec.clone(), &SoftConfig::compact());
        let hcq = dev.engine();
        let mut q = hcq.queue().unwrap();
        let v = {
            let mut s = hcq.lock();
            let ka = s.kernargs(&7u64.to_le_bytes(), 8, 8).unwrap();
            q.exec(1, ka, [1; 3], [1; 3]).unwrap();
            submit!(s, 0, &mut q).unwrap()
        };
        assert_eq!(exec.calls.load(Ordering::Relaxed), 0, "no thread ran it behind our back");
        assert_eq!(hcq.timeline().completed(), Stamp::ZERO);
        dev.run_until(v).unwrap();
        assert_eq!(hcq.timeline().completed(), v);
        assert_eq!(exec.calls.load(Ordering::Relaxed), 1);
        assert_eq!(exec.arg_sum.load(Ordering::Relaxed), 7, "the executor read the kernel arguments");
        assert_eq!(dev.rptr(0).unwrap(), q.words().len() as u64, "the CP published its read pointer");
    }

    #[test]
    fn a_plain_wait_drives_the_device_and_a_full_ring_drains_itself() {
        // a ring of 256 words holds a handful of submissions: the rest of the 200 must wait for
        // older ones to retire, which only happens because the ring's wait drives the CP
        let exec = Arc::new(Count::default());
        let cfg = SoftConfig { ring_bytes: 1024, kernarg_bytes: 256, max_in_flight: 4, ..SoftConfig::compact() };
        let dev = device(exec.clone(), &cfg);
        let hcq = dev.engine();
        let mut last = Stamp::ZERO;
        for i in 0..200u64 {
            let mut q = hcq.queue().unwrap();
            let mut s = hcq.lock();
            let ka = s.kernargs(&i.to_le_bytes(), 8, 8).unwrap();
            q.exec(1, ka, [1; 3], [1; 3]).unwrap();
            last = submit!(s, 0, &mut q).unwrap();
        }
        hcq.wait(last).unwrap();
        assert_eq!(exec.calls.load(Ordering::Relaxed), 200);
        assert_eq!(exec.arg_sum.load(Ordering::Relaxed), (0..200).sum::<u64>(), "no argument block was overwritten");
    }

    #[test]
    fn one_pump_goes_round_until_no_engine_can_move() {
        // the first submission sits on engine 1, the second on engine 0 and waits for the
        // first (each submission waits for the previous timeline value) and for a signal the
        // first writes: one pass over the engines in index order would leave engine 0 blocked
        let exec = Arc::new(Count::default());
        let cfg = SoftConfig { engines: alloc::vec!["compute", "copy"], ..SoftConfig::compact() };
        let dev = device(exec, &cfg);
        let hcq = dev.engine();
        let s = super::super::HOST_SIGNALS.alloc(0);
        let mut a = hcq.queue().unwrap();
        a.signal_at(s.addr(), 1).unwrap();
        let mut b = hcq.queue().unwrap();
        b.wait_at(s.addr(), 1).unwrap();
        submit!(hcq, 1, &mut a).unwrap();
        let vb = submit!(hcq, 0, &mut b).unwrap();
        assert_eq!(dev.pump().unwrap(), 3 + 3, "both queues' commands ran in one pump");
        assert_eq!(hcq.timeline().completed(), vb);
        assert_eq!(s.value(), 1);
        drop(s);
    }

    #[test]
    fn a_failing_command_is_the_device_fault_and_never_a_hang() {
        let dev = device(Arc::new(Count::default()), &SoftConfig::compact());
        let hcq = dev.engine();
        let mut q = hcq.queue().unwrap();
        q.exec(99, 0, [1; 3], [1; 3]).unwrap();
        let v = submit!(hcq, 0, &mut q).unwrap();
        let e = dev.run_until(v).unwrap_err();
        assert!(matches!(e.root(), Error::InvalidArgument { value: 99, .. }), "{e}");
        let e = hcq.synchronize().unwrap_err();
        assert!(matches!(e.root(), Error::InvalidArgument { value: 99, .. }), "later waits see the fault: {e}");
    }

    #[test]
    fn running_until_a_value_never_submitted_fails_at_once() {
        let dev = device(Arc::new(Count::default()), &SoftConfig::compact());
        let e = dev.run_until(5).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { value: 5, .. }), "{e}");
        dev.synchronize().unwrap();
    }

    #[test]
    fn kernel_arguments_outside_every_region_are_refused() {
        let dev = device(Arc::new(Count::default()), &SoftConfig::compact());
        let region = Arc::new(HostRegion::new(64, 8).unwrap());
        region.write_bytes(0, &41u64.to_le_bytes()).unwrap();
        dev.add_kernarg_region(0x1000, region);
        let mut b = [0u8; 8];
        dev.ctx.read_kernargs(0x1000, &mut b).unwrap();
        assert_eq!(u64::from_le_bytes(b), 41);
        assert!(dev.ctx.read_kernargs(0x1000 + 60, &mut b).is_err(), "runs past the region's end");
        dev.remove_kernarg_region(0x1000);
        assert!(dev.ctx.read_kernargs(0x1000, &mut b).is_err());
    }
}
