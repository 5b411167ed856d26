//! Soft devices on std: one thread per engine runs a [`SoftCp`](super::SoftCp) over the engine's ring.
//!
//! A [`SoftDevice`] owns an [`Engine`] (timeline, rings, kernel-argument pool), a register file
//! with one doorbell and one read-pointer register per engine, and the command-processor
//! threads. Each thread polls its doorbell for a short spin window after work (so a
//! submit→signal round trip costs well under a microsecond of wake-up), then sleeps on the
//! register file until the host rings the doorbell again. What `exec` and `copy` mean is the
//! backend's [`Executor`]: a host function table for the simulated devices, loaded ELF kernels
//! for the CPU device.
//!
//! A synchronous caller can be the command processor itself: [`SoftDevice::run_inline`] takes
//! the engine's consumer state (a lock the CP thread takes too), submits without waking the CP
//! thread, and runs the ring up to the new write pointer on the calling thread — no hand-off,
//! no wake-up, no thread spinning while another computes. A CP run reads `[rptr, wptr)` packet
//! by packet from a concrete ring window (no `dyn` layer) and publishes the read pointer once
//! per run; the device's own timeline signal is reached without a pool lookup.
//!
//! A command-processor error (a malformed packet, a signal address that is no signal, a kernel
//! that fails) is recorded on the timeline as the device's fault: waits end with that error and
//! the engine stops, like a hardware CP that faulted. A panic of the executor (a bug) is caught
//! and recorded the same way, on the CP thread and on an inline caller.
//!
//! The command processor, its executor trait, context, sizes and register block
//! ([`DOORBELL`] and [`RPTR`], one pair per engine) are the soft device's
//! ([`super::cp`], re-exported here); this module is the threaded driver.

use super::Step;
use super::cp::{self, Target};
pub use super::cp::{
    DOORBELL, Executor, MAX_ENGINES, RPTR, SoftConfig, SoftContext, doorbell_offset, regs_bytes, rptr_offset,
};
use crate::engine::{Engine, Submitter};
use crate::error::{Error, Result};
use crate::mmio::{HostRegion, MmioBus, Width};
use crate::signal::{StdHooks, WaitHooks};
use crate::stamp::Stamp;
use alloc::string::ToString;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Condvar, Mutex, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Nanoseconds since the first call in this process: the clock of soft devices' timestamps.
pub fn soft_clock_ns() -> u64 {
    crate::signal::host_clock_ns()
}

/// A register file the device side can read and write without side effects, and whose host
/// writes can be waited for.
pub trait DeviceRegs: MmioBus + Send + Sync {
    /// Read a register as the device (no hooks, no faults).
    fn device_read(&self, offset: usize, width: Width) -> Result<u64>;
    /// Write a register as the device.
    fn device_write(&self, offset: usize, width: Width, value: u64) -> Result<()>;
    /// How many host writes reached `offset` so far.
    fn write_count(&self, offset: usize) -> u64;
    /// Block until the host writes `offset` after `seen` writes, or `timeout` passes; returns
    /// the new count.
    fn wait_write(&self, offset: usize, seen: u64, timeout: Duration) -> Option<u64>;
    /// Wake the waiters of `offset` as a host write would, without changing the register (an
    /// inline caller handing the rest of a ring to the CP thread). Counts as a write for
    /// [`DeviceRegs::write_count`]. Default: nothing, and the CP thread notices the work at its
    /// next poll (within 50 ms).
    fn wake(&self, offset: usize) {
        let _ = offset;
    }
}

/// A plain register file of 64-bit registers: atomics plus a condition variable that wakes
/// waiters on host writes. The register file of the CPU device.
pub struct Regs {
    regs: Vec<AtomicU64>,
    counts: Vec<AtomicU64>,
    lock: Mutex<()>,
    cv: Condvar,
    /// Threads in `wait_write` per register: a host write notifies only when someone waits on
    /// that register (an idle engine's sleeping CP must not cost every other engine's
    /// doorbell a lock, a futex wake and a context switch).
    sleepers: Vec<AtomicU64>,
}

impl Regs {
    /// `n` zeroed 64-bit registers.
    pub fn new(n: usize) -> Self {
        Self {
            regs: (0..n).map(|_| AtomicU64::new(0)).collect(),
            counts: (0..n).map(|_| AtomicU64::new(0)).collect(),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            sleepers: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn index(&self, offset: usize, width: Width) -> Result<usize> {
        crate::mmio::check_range("register file", offset, width.bytes(), self.size())?;
        if width != Width::U64 || !offset.is_multiple_of(8) {
            return Err(Error::Misaligned {
                what: "register file access (64-bit registers)",
                value: offset as u64,
                align: 8,
            });
        }
        Ok(offset / 8)
    }
}

impl MmioBus for Regs {
    fn size(&self) -> usize {
        self.regs.len() * 8
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        Ok(self.regs[self.index(offset, width)?].load(Ordering::Acquire))
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        let i = self.index(offset, width)?;
        self.regs[i].store(value, Ordering::Release);
        // SeqCst on both sides (count then sleepers here, sleepers then count in `wait_write`):
        // either the writer sees the sleeper or the sleeper sees the new count
        self.counts[i].fetch_add(1, Ordering::SeqCst);
        if self.sleepers[i].load(Ordering::SeqCst) > 0 {
            let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.cv.notify_all();
        }
        Ok(())
    }
}

impl DeviceRegs for Regs {
    fn device_read(&self, offset: usize, width: Width) -> Result<u64> {
        self.read(offset, width)
    }
    fn device_write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        let i = self.index(offset, width)?;
        self.regs[i].store(value, Ordering::Release);
        Ok(())
    }
    fn write_count(&self, offset: usize) -> u64 {
        self.counts.get(offset / 8).map_or(0, |c| c.load(Ordering::Acquire))
    }
    fn wake(&self, offset: usize) {
        let i = offset / 8;
        if let (Some(c), Some(sleepers)) = (self.counts.get(i), self.sleepers.get(i)) {
            // as in `write`: count, then look for sleepers (SeqCst on both sides)
            c.fetch_add(1, Ordering::SeqCst);
            if sleepers.load(Ordering::SeqCst) > 0 {
                let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
                self.cv.notify_all();
            }
        }
    }
    fn wait_write(&self, offset: usize, seen: u64, timeout: Duration) -> Option<u64> {
        let c = self.counts.get(offset / 8)?;
        let sleepers = self.sleepers.get(offset / 8)?;
        sleepers.fetch_add(1, Ordering::SeqCst);
        let mut g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = Instant::now() + timeout;
        let out = loop {
            let n = c.load(Ordering::SeqCst);
            if n != seen {
                break Some(n);
            }
            let now = Instant::now();
            if now >= deadline {
                break None;
            }
            g = match self.cv.wait_timeout(g, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        };
        drop(g);
        sleepers.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

struct Shared {
    stop: AtomicBool,
    /// CP threads that have started running (past std's thread start-up).
    started: AtomicUsize,
}

/// Wait (bounded) until `started` reaches `n`: threads a device spawns have run before the
/// device is handed out, so their one-time start-up (std copies the thread's name) never lands
/// in a caller's steady state.
pub fn wait_started(started: &AtomicUsize, n: usize) {
    let t0 = Instant::now();
    // TIMEOUT: 10 s is far beyond any scheduling delay; past it the device works anyway, the
    // thread starts whenever it is scheduled.
    while started.load(Ordering::Acquire) < n && t0.elapsed() < Duration::from_secs(10) {
        if t0.elapsed() < Duration::from_millis(1) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// A device whose command processors are host threads, or the threads that submit: see
/// [`SoftDevice::run_inline`].
pub struct SoftDevice {
    hcq: Arc<Engine>,
    regs: Arc<dyn DeviceRegs>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The process that started `threads`: a forked child has none of them.
    pid: u32,
    memory: Arc<SoftContext>,
    engines: Vec<Arc<ThreadCp>>,
    /// The device memory the rings and the kernel-argument pool are carved from.
    _mem: Arc<HostRegion>,
}

impl core::fmt::Debug for SoftDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SoftDevice").field("hcq", &self.hcq).finish()
    }
}

impl SoftDevice {
    /// Build device `name`: rings and kernarg pool in host memory, timeline signal from the
    /// process-wide [`HOST_SIGNALS`](super::HOST_SIGNALS) pool, doorbells in `regs` (at least
    /// one [`DOORBELL`]/[`RPTR`] pair per engine), and one CP thread per engine running
    /// `executor`.
    pub fn new(
        name: &str,
        config: &SoftConfig,
        regs: Arc<dyn DeviceRegs>,
        executor: Arc<dyn Executor>,
    ) -> Result<Self> {
        let n = config.engines.len();
        let inline: Arc<[AtomicBool]> = (0..n).map(|_| AtomicBool::new(false)).collect();
        let bell_bus: Arc<dyn MmioBus + Send> = Arc::new(RegsAsBus { regs: regs.clone(), inline: inline.clone() });
        let cp::Carved { name, engines, cps, kpool, kmem, kernarg_base, timeline, mem } =
            cp::carve(name, config, bell_bus)?;
        let hooks: Arc<dyn WaitHooks> = Arc::new(StdHooks);
        let hcq = Arc::new(Engine::new(name.clone(), timeline, cp::encoder(), engines, kpool, hooks)?);
        let shared = Arc::new(Shared { stop: AtomicBool::new(false), started: AtomicUsize::new(0) });
        let memory = Arc::new(SoftContext::new(kmem, kernarg_base, Some(hcq.clone())));
        let cps: Vec<Arc<ThreadCp>> = cps
            .into_iter()
            .map(|cp| {
                Arc::new(ThreadCp {
                    engine: cp.engine,
                    regs: regs.clone(),
                    exec: executor.clone(),
                    memory: memory.clone(),
                    hcq: hcq.clone(),
                    state: Mutex::new(cp),
                    inline: inline.clone(),
                })
            })
            .collect();
        let mut dev = Self {
            hcq,
            regs,
            shared,
            threads: Vec::with_capacity(n),
            pid: std::process::id(),
            memory,
            engines: cps,
            _mem: mem,
        };
        for e in 0..n {
            let (cp, shared, idle_spin) = (dev.engines[e].clone(), dev.shared.clone(), config.idle_spin);
            let t = std::thread::Builder::new()
                .name(alloc::format!("{}-cp{}", name, e))
                .spawn(move || cp.thread(&shared, idle_spin))
                .map_err(|e| Error::Os {
                    what: "spawn command-processor thread",
                    errno: e.raw_os_error().unwrap_or(0),
                })?;
            // on an error, `dev` drops here and stops the threads already started
            dev.threads.push(t);
        }
        wait_started(&dev.shared.started, n);
        Ok(dev)
    }

    /// The engine state (timeline, queues, submission).
    pub fn engine(&self) -> &Engine {
        &self.hcq
    }

    /// The engine state, shared (for parts of a backend that outlive a borrow, e.g. an
    /// allocator recording profile events).
    pub fn hcq_arc(&self) -> &Arc<Engine> {
        &self.hcq
    }

    /// The read pointer engine `e`'s CP has published (words).
    pub fn rptr(&self, e: usize) -> Result<u64> {
        self.regs.device_read(rptr_offset(e), Width::U64)
    }

    /// The register file.
    pub fn regs(&self) -> &Arc<dyn DeviceRegs> {
        &self.regs
    }

    /// Let exec commands read kernel arguments from `region` too (a captured graph keeps its
    /// arguments in a region of its own that the wrapping pool never reuses).
    pub fn add_kernarg_region(&self, region: Arc<HostRegion>) {
        self.memory.add_region(region.addr(), region);
    }

    /// Stop reading kernel arguments from `region`.
    pub fn remove_kernarg_region(&self, region: &Arc<HostRegion>) {
        self.memory.remove_region(region.addr());
    }

    /// A synchronous submission whose commands run on the calling thread.
    ///
    /// `submit` submits work on engine `engine` through the device's submit lock (which this
    /// holds while `submit` runs) and returns the timeline value that completes it; this returns
    /// once the timeline has reached that value. When the engine's command processor is free,
    /// the calling thread becomes it for the duration: it takes the engine's consumer state,
    /// runs what is already in the ring (so `submit` finds the ring and the kernel-argument pool
    /// free: nothing else can submit meanwhile), lets `submit` write the doorbell without waking
    /// the CP thread, releases the submit lock and runs the new commands itself — no hand-off to
    /// another thread, no wake-up, no thread spinning while another computes. Work other threads
    /// submit meanwhile runs too, in ring order, before the consumer is let go.
    ///
    /// When the CP thread is busy with the ring, or a command must wait for a signal that is
    /// not there yet (another engine's, another device's) or the executor holds it, the rest is
    /// handed to the CP thread and this waits like [`Engine::wait`]. Ordering, timeline and fault
    /// semantics are those of the CP thread: a command that fails (or an executor that panics)
    /// faults the device and this returns that fault.
    ///
    /// Lock order: the submit lock, then the consumer state (taken with `try_lock` only); no
    /// path takes the submit lock while it holds a consumer state.
    pub fn run_inline(&self, engine: usize, submit: impl FnOnce(&mut Submitter<'_>) -> Result<Stamp>) -> Result<()> {
        let cp = self
            .engines
            .get(engine)
            .ok_or_else(|| Error::InvalidArgument { what: "engine index", value: engine as u64 })?;
        let mut s = self.hcq.lock();
        // the CP thread may hold the state for a moment (checking an empty ring): retry a few
        // times before leaving the work to it
        let mut tries = 0;
        let lock = loop {
            match cp.state.try_lock() {
                Err(TryLockError::WouldBlock) if tries < 64 => {
                    tries += 1;
                    core::hint::spin_loop();
                }
                other => break other,
            }
        };
        let mut guard = match lock {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                // the CP thread is running this ring: submit as usual and wait
                let v = submit(&mut s)?;
                drop(s);
                return self.hcq.wait(v);
            }
        };
        let st = &mut *guard;
        // setting needs no fence: a doorbell write that misses it only wakes the CP thread,
        // which then finds the consumer state held and sleeps again
        cp.inline[engine].store(true, Ordering::Relaxed);
        let db = doorbell_offset(engine);
        match cp.drive(st) {
            Ok(Step::Idle) => {}
            first => {
                // a command this thread cannot run now (or a fault): let go, submit behind it
                // (an ordinary doorbell write now), and wake the CP thread
                cp.inline[engine].store(false, Ordering::Relaxed);
                drop(guard);
                let r = submit(&mut s);
                drop(s);
                self.regs.wake(db);
                first?;
                return self.hcq.wait(r?);
            }
        }
        let submitted = submit(&mut s);
        drop(s);
        let mut step = match submitted {
            Ok(_) => cp.drive(st),
            Err(_) => Ok(Step::Idle),
        };
        let mut rounds = 0;
        let step = loop {
            cp.inline[engine].store(false, Ordering::Relaxed);
            // Dekker with `RegsAsBus::write`: a doorbell stored while the flag was set (and so
            // without waking the CP thread) is seen here and run before letting go
            fence(Ordering::SeqCst);
            match step {
                Ok(Step::Idle) if self.regs.device_read(db, Width::U64)? != st.cp.rptr() => {
                    // other threads' work: run a few rounds of it, then leave the rest to the
                    // CP thread (like a blocked command) so this call's latency stays bounded
                    rounds += 1;
                    if rounds > MAX_EXTRA_ROUNDS {
                        break Ok(Step::Held);
                    }
                    cp.inline[engine].store(true, Ordering::Relaxed);
                    step = cp.drive(st);
                }
                other => break other,
            }
        };
        drop(guard);
        match step {
            Ok(Step::Idle) => {}
            // blocked, held, or others' work left: hand the rest to the CP thread. A wake, not a
            // doorbell write: a submitter may hold the submit lock while it waits for ring
            // space that only the CP thread frees
            Ok(_) => self.regs.wake(db),
            Err(e) => return Err(e),
        }
        self.hcq.wait(submitted?)
    }
}

impl Drop for SoftDevice {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // A forked child: the CP threads are its parent's, not here to stop or join (a
            // join would wait on a thread that does not exist and panic). Their handles are
            // forgotten; what they shared is freed with the rest of the device.
            for t in self.threads.drain(..) {
                core::mem::forget(t);
            }
            return;
        }
        self.shared.stop.store(true, Ordering::Release);
        for e in 0..self.threads.len() {
            // wake sleeping CPs; the value is the current write pointer, so nothing new runs
            let wptr = self.hcq.channels()[e].wptr();
            let _ = self.regs.write(doorbell_offset(e), Width::U64, wptr);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Lets a register file serve as the doorbell bus of the rings. A doorbell write while an
/// inline driver holds that engine ([`SoftDevice::run_inline`]) only stores the write pointer:
/// the driver runs the new commands before it lets go, so the sleeping CP thread is not woken.
struct RegsAsBus {
    regs: Arc<dyn DeviceRegs>,
    inline: Arc<[AtomicBool]>,
}

impl MmioBus for RegsAsBus {
    fn size(&self) -> usize {
        self.regs.size()
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.regs.read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        let engine =
            offset.checked_sub(DOORBELL::OFFSET).filter(|o| o % DOORBELL::STRIDE == 0).map(|o| o / DOORBELL::STRIDE);
        if let Some(flag) = engine.and_then(|e| self.inline.get(e))
            && flag.load(Ordering::SeqCst)
        {
            self.regs.device_write(offset, width, value)?;
            // Dekker with `ThreadCp::drive`: the driver clears its flag, then reads the
            // doorbell; this stores the doorbell, then reads the flag. One sees the other.
            fence(Ordering::SeqCst);
            if flag.load(Ordering::SeqCst) {
                return Ok(());
            }
            // the driver let go meanwhile: a host write, which wakes the CP thread
        }
        self.regs.write(offset, width, value)
    }
}

/// One engine's command processor on a threaded device: its consumer state (whoever holds it
/// runs the ring) and what its commands act on. Shared by the engine's CP thread and inline
/// drivers ([`SoftDevice::run_inline`]).
struct ThreadCp {
    engine: usize,
    regs: Arc<dyn DeviceRegs>,
    exec: Arc<dyn Executor>,
    memory: Arc<SoftContext>,
    hcq: Arc<Engine>,
    state: Mutex<cp::EngineCp>,
    /// Per engine: an inline driver holds `state` (shared with the doorbell bus).
    inline: Arc<[AtomicBool]>,
}

impl ThreadCp {
    /// Run what the ring holds, through new doorbell writes, until it is idle, blocked or
    /// held; publish the read pointer once. An error or a panic of the executor faults the
    /// device and is returned.
    fn drive(&self, st: &mut cp::EngineCp) -> Result<Step> {
        let r = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| self.drain(st)));
        match r {
            Ok(Ok(step)) => Ok(step),
            Ok(Err(e)) => Err(self.fault(e)),
            Err(payload) => Err(self.fault(panic_error(&self.hcq, self.engine, &*payload))),
        }
    }

    fn drain(&self, st: &mut cp::EngineCp) -> Result<Step> {
        let db = doorbell_offset(self.engine);
        let start = st.cp.rptr();
        let t = Target { exec: &*self.exec, ctx: &self.memory, timeline: self.hcq.timeline().signal() };
        let r = st.drain(&t, || self.regs.device_read(db, Width::U64));
        if st.cp.rptr() != start {
            self.regs.device_write(rptr_offset(self.engine), Width::U64, st.cp.rptr())?;
        }
        r.map(|(step, _)| step)
    }

    /// Record `e` as the device's fault (the first one stays) and return it with context.
    fn fault(&self, e: Error) -> Error {
        let dev = self.hcq.timeline().device().to_string();
        error!("{} engine {}: command processor fault: {}", dev, self.engine, e);
        let e = e.context(alloc::format!("{} engine {} command processor", dev, self.engine));
        self.hcq.timeline().record_fault(e.clone());
        e
    }

    /// The CP thread: runs the ring whenever no inline driver does. It polls the doorbell for
    /// `idle_spin` after work, then sleeps until a host write of the doorbell.
    fn thread(&self, shared: &Shared, idle_spin: Duration) {
        shared.started.fetch_add(1, Ordering::AcqRel);
        let db = doorbell_offset(self.engine);
        let mut idle_since: Option<Instant> = None;
        let mut seen = self.regs.write_count(db);
        // the read pointer after a run that ended idle: while the doorbell still shows it there
        // is nothing to run, and the consumer state is left alone (for inline callers)
        let mut idle_at: Option<u64> = None;
        while !shared.stop.load(Ordering::Acquire) {
            if let Some(rptr) = idle_at {
                let wptr = self.regs.device_read(db, Width::U64).unwrap_or(rptr);
                if wptr == rptr {
                    let since = *idle_since.get_or_insert_with(Instant::now);
                    if since.elapsed() < idle_spin {
                        // poll the doorbell without reading the clock on every turn
                        for _ in 0..64 {
                            if self.regs.device_read(db, Width::U64).unwrap_or(rptr) != rptr {
                                break;
                            }
                            core::hint::spin_loop();
                        }
                        // let a thread waiting for this CPU run (the submitter, on a busy machine)
                        std::thread::yield_now();
                    } else if let Some(n) = self.regs.wait_write(db, seen, Duration::from_millis(50)) {
                        seen = n;
                        idle_since = None;
                    } else {
                        seen = self.regs.write_count(db);
                    }
                    continue;
                }
                if self.inline[self.engine].load(Ordering::Relaxed) {
                    // an inline caller runs the ring and leaves it drained (or kicks this
                    // thread with a host write): sleep until a host write
                    if let Some(n) = self.regs.wait_write(db, seen, Duration::from_millis(50)) {
                        seen = n;
                    }
                    continue;
                }
            }
            let mut guard = match self.state.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    if self.inline[self.engine].load(Ordering::Relaxed) {
                        if let Some(n) = self.regs.wait_write(db, seen, Duration::from_millis(50)) {
                            seen = n;
                        }
                    } else {
                        // an inline caller letting go: wait for it
                        drop(self.state.lock().unwrap_or_else(|p| p.into_inner()));
                    }
                    continue;
                }
            };
            let start = guard.cp.rptr();
            let step = self.drive(&mut guard);
            let rptr = guard.cp.rptr();
            drop(guard);
            if rptr != start {
                idle_since = None;
            }
            match step {
                Ok(Step::Idle) => idle_at = Some(rptr),
                Ok(_) => {
                    // blocked on a signal or held by the executor: retry after a while
                    idle_at = None;
                    let since = *idle_since.get_or_insert_with(Instant::now);
                    if since.elapsed() < idle_spin {
                        spin_a_while();
                        std::thread::yield_now();
                    } else {
                        std::thread::sleep(Duration::from_micros(20));
                    }
                }
                // the fault is recorded; the engine stops, as a faulted hardware CP does
                Err(_) => return,
            }
        }
    }
}

/// The fault recorded for a panic on engine `engine`'s command processor: the device is
/// unusable until reset, and the message says what panicked.
fn panic_error(hcq: &Engine, engine: usize, payload: &(dyn core::any::Any + Send)) -> Error {
    let msg = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<alloc::string::String>().map(|s| s.as_str()))
        .unwrap_or("(no message)");
    Error::DeviceUnavailable { device: hcq.timeline().device().clone(), reason: "command processor panicked" }
        .context(alloc::format!("engine {engine}: panic: {msg}"))
}

/// Runs of other threads' work an inline caller makes after its own before it hands the rest
/// to the CP thread.
const MAX_EXTRA_ROUNDS: u32 = 16;

/// Spin briefly (a few hundred nanoseconds) without touching the clock.
#[inline]
fn spin_a_while() {
    for _ in 0..64 {
        core::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nop;
    impl Executor for Nop {
        fn exec(&self, _: &SoftContext, _: u64, _: u64, _: [u32; 3], _: [u32; 3]) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn regs_count_host_writes_and_wake_waiters() {
        let r = Arc::new(Regs::new(2));
        let r2 = r.clone();
        let t = std::thread::spawn(move || r2.wait_write(8, 0, Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(5));
        r.write(8, Width::U64, 7).unwrap();
        assert_eq!(t.join().unwrap(), Some(1));
        r.device_write(8, Width::U64, 9).unwrap();
        assert_eq!(r.write_count(8), 1, "device writes are not host writes");
        assert!(r.read(4, Width::U32).is_err());
    }

    #[test]
    fn a_soft_device_runs_a_queue_and_signals_its_timeline() {
        let dev = SoftDevice::new("SOFT", &SoftConfig::default(), Arc::new(Regs::new(2)), Arc::new(Nop)).unwrap();
        let hcq = dev.engine();
        let mut q = hcq.queue().unwrap();
        q.exec(1, 0, [1; 3], [1; 3]).unwrap();
        let v = submit!(hcq, 0, &mut q).unwrap();
        hcq.synchronize().unwrap();
        assert_eq!(hcq.timeline().completed(), v);
        // the CP publishes its read pointer after each command, so just after the final signal
        // it may still be one packet behind: wait (bounded) for it to reach the end
        let end = q.words().len() as u64;
        let t = Instant::now();
        while dev.rptr(0).unwrap() != end && t.elapsed() < Duration::from_secs(10) {
            std::thread::yield_now();
        }
        assert_eq!(dev.rptr(0).unwrap(), end);
    }

    /// Records which thread ran each exec, and how many ran.
    #[derive(Default)]
    struct WhoRan {
        threads: Mutex<Vec<std::thread::ThreadId>>,
    }
    impl Executor for WhoRan {
        fn exec(&self, _: &SoftContext, _: u64, _: u64, _: [u32; 3], _: [u32; 3]) -> Result<()> {
            self.threads.lock().unwrap().push(std::thread::current().id());
            Ok(())
        }
    }

    fn exec_queue(hcq: &Engine, n: usize) -> crate::queue::HwQueue {
        let mut q = hcq.queue().unwrap();
        for _ in 0..n {
            q.exec(1, 0, [1; 3], [1; 3]).unwrap();
        }
        q
    }

    #[test]
    fn an_inline_run_executes_on_the_calling_thread_and_completes_the_timeline() {
        let exec = Arc::new(WhoRan::default());
        let dev = SoftDevice::new("SOFT", &SoftConfig::default(), Arc::new(Regs::new(4)), exec.clone()).unwrap();
        let hcq = dev.engine();
        let mut q = exec_queue(hcq, 3);
        for _ in 0..10 {
            dev.run_inline(0, |s| submit!(s, 0, &mut q)).unwrap();
            assert_eq!(hcq.timeline().completed(), hcq.timeline().last_submitted());
        }
        let me = std::thread::current().id();
        let ran = exec.threads.lock().unwrap().clone();
        assert_eq!(ran.len(), 30);
        // natively the CP thread never holds the engine long enough to take a call over;
        // Miri's scheduler may preempt it while it does
        let here = ran.iter().filter(|t| **t == me).count();
        assert!(here == 30 || cfg!(miri) && here > 0, "{here} of 30 commands ran on the caller");
        assert_eq!(dev.rptr(0).unwrap(), hcq.channels()[0].wptr(), "the read pointer is published");
    }

    #[test]
    fn an_inline_run_behind_a_blocked_wait_hands_over_to_the_cp_thread() {
        let exec = Arc::new(WhoRan::default());
        let dev = SoftDevice::new("SOFT", &SoftConfig::default(), Arc::new(Regs::new(4)), exec.clone()).unwrap();
        let hcq = dev.engine();
        let gate = super::super::HOST_SIGNALS.alloc(0);
        let mut blocked = hcq.queue().unwrap();
        blocked.wait(&gate, 1).unwrap();
        blocked.exec(1, 0, [1; 3], [1; 3]).unwrap();
        submit!(hcq, 0, &mut blocked).unwrap();
        let g = gate.clone();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            g.set(1);
        });
        let mut q = exec_queue(hcq, 2);
        dev.run_inline(0, |s| submit!(s, 0, &mut q)).unwrap();
        opener.join().unwrap();
        assert_eq!(hcq.timeline().completed(), hcq.timeline().last_submitted());
        assert_eq!(exec.threads.lock().unwrap().len(), 3, "the blocked queue's exec and both of ours ran, in order");
        drop(gate);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // 1,600 submissions from 4 threads: minutes under Miri; native runs cover it
    fn inline_runs_and_threaded_submissions_from_many_threads_all_complete() {
        let exec = Arc::new(WhoRan::default());
        let dev =
            Arc::new(SoftDevice::new("SOFT", &SoftConfig::default(), Arc::new(Regs::new(4)), exec.clone()).unwrap());
        let t0 = Instant::now();
        let workers: Vec<_> = (0..4)
            .map(|i| {
                let dev = dev.clone();
                std::thread::spawn(move || {
                    let hcq = dev.engine();
                    let mut q = exec_queue(hcq, 2);
                    for _ in 0..200 {
                        if i % 2 == 0 {
                            dev.run_inline(0, |s| submit!(s, 0, &mut q)).unwrap();
                        } else {
                            let v = submit!(hcq, 0, &mut q).unwrap();
                            hcq.wait(v).unwrap();
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        dev.engine().synchronize().unwrap();
        assert_eq!(exec.threads.lock().unwrap().len(), 4 * 200 * 2);
        // a submission stranded by a lost doorbell would wait for the CP thread's 50 ms nap:
        // 800 of them would take far longer than this
        assert!(t0.elapsed() < Duration::from_secs(20), "took {:?}", t0.elapsed());
    }

    #[test]
    #[cfg_attr(miri, ignore)] // thousands of submissions from 2 threads: native runs cover it
    fn inline_runs_never_wait_for_ring_space_only_they_could_free() {
        // a tiny ring (16 submissions in flight) that another thread keeps full with
        // submissions it does not wait for: an inline caller holds the consumer while it
        // submits, so its submit must never wait for space in the ring (it would wait for
        // itself until the timeout)
        let exec = Arc::new(WhoRan::default());
        let cfg = SoftConfig { max_in_flight: 16, ..SoftConfig::default() };
        let dev = Arc::new(SoftDevice::new("SOFT", &cfg, Arc::new(Regs::new(4)), exec.clone()).unwrap());
        dev.engine().timeline().set_policy(crate::signal::WaitPolicy::with_timeout_ms(5_000));
        let stop = Arc::new(AtomicBool::new(false));
        let flooder = {
            let (dev, stop) = (dev.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut q = exec_queue(dev.engine(), 1);
                let mut n = 0u64;
                while !stop.load(Ordering::Acquire) {
                    submit!(dev.engine(), 0, &mut q).unwrap();
                    n += 1;
                }
                n
            })
        };
        let mut q = exec_queue(dev.engine(), 1);
        for _ in 0..500 {
            dev.run_inline(0, |s| submit!(s, 0, &mut q)).unwrap();
        }
        stop.store(true, Ordering::Release);
        let flooded = flooder.join().unwrap();
        dev.engine().synchronize().unwrap();
        assert_eq!(exec.threads.lock().unwrap().len() as u64, 500 + flooded);
    }

    /// An executor with a bug: it panics on its first exec, after `delay` (so waiters are
    /// already waiting).
    struct Panics {
        delay: Duration,
    }
    impl Executor for Panics {
        fn exec(&self, _: &SoftContext, program: u64, _: u64, _: [u32; 3], _: [u32; 3]) -> Result<()> {
            std::thread::sleep(self.delay);
            panic!("executor bug on program {program}");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)] // times the waits: under Miri the panic alone outlasts the bounds
    fn a_panic_on_the_command_processor_faults_the_device_and_wakes_every_waiter() {
        let exec = Arc::new(Panics { delay: Duration::from_millis(100) });
        let dev = Arc::new(SoftDevice::new("SOFT", &SoftConfig::default(), Arc::new(Regs::new(2)), exec).unwrap());
        let hcq = dev.engine();
        // the default policy: without the fault, these waits would last the 30 s timeout
        assert!(hcq.timeline().policy().timeout_ns >= 30_000_000_000);
        let mut q = hcq.queue().unwrap();
        q.exec(7, 0, [1; 3], [1; 3]).unwrap();
        let v = submit!(hcq, 0, &mut q).unwrap();
        let t0 = Instant::now();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let d = dev.clone();
                std::thread::spawn(move || d.engine().wait(v).map(|_| Instant::now()))
            })
            .collect();
        let e = hcq.synchronize().unwrap_err();
        let took = t0.elapsed();
        assert!(matches!(e.root(), Error::DeviceUnavailable { reason: "command processor panicked", .. }), "{e}");
        assert!(e.to_string().contains("executor bug on program 7"), "the fault names the panic: {e}");
        assert!(took < Duration::from_secs(5), "the wait ended {took:?} after submit, not at once");
        for w in waiters {
            let e = w.join().unwrap().unwrap_err();
            assert!(matches!(e.root(), Error::DeviceUnavailable { .. }), "{e}");
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "every waiter ended with the fault");
        // and the device refuses new work with the same fault
        let mut q = hcq.queue().unwrap();
        q.exec(1, 0, [1; 3], [1; 3]).unwrap();
        assert!(matches!(submit!(hcq, 0, &mut q).unwrap_err().root(), Error::DeviceUnavailable { .. }));
    }

    #[test]
    fn a_bad_signal_address_faults_the_device_instead_of_hanging() {
        let dev = SoftDevice::new("SOFT", &SoftConfig::default(), Arc::new(Regs::new(2)), Arc::new(Nop)).unwrap();
        let hcq = dev.engine();
        let mut q = hcq.queue().unwrap();
        q.signal_at(0x10, 1).unwrap();
        submit!(hcq, 0, &mut q).unwrap();
        let e = hcq.synchronize().unwrap_err();
        assert!(matches!(e.root(), Error::InvalidArgument { value: 0x10, .. }), "{e}");
    }
}
