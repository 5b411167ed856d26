//! The soft command processor: what both drivers of a soft device share.
//!
//! A soft device is one [`Engine`] (timeline, rings, kernel-argument pool, [`SoftEncoder`]) whose
//! rings a [`SoftCp`] reads like a hardware command processor: from its read pointer up to the
//! write pointer in the engine's doorbell register, one packet at a time. This module is that
//! command processor, once:
//!
//! - the register block ([`DOORBELL`] and [`RPTR`], one pair per engine);
//! - [`Executor`], what `exec`, `copy` and `timestamp` commands mean on a device, and
//!   [`SoftContext`], the memory an executor reads kernel arguments from;
//! - [`SoftConfig`], a device's sizes;
//! - the device memory carved into the rings and the kernel-argument pool, and one engine's
//!   consumer state run over its ring against the executor (signals in the process-wide
//!   [`HOST_SIGNALS`](super::HOST_SIGNALS) pool, the device's own timeline signal reached
//!   without a pool lookup).
//!
//! Two drivers run it: [`runner::SoftDevice`](super::threaded::SoftDevice) (std: one thread per
//! engine, or the submitting thread with `run_inline`) and
//! [`inline::InlineDevice`](super::inline::InlineDevice) (no threads: every wait of the device
//! drives it; bare metal, `no_std`).

use super::{SoftCp, SoftEncoder, SoftTarget, Step, host_signals};
use crate::engine::{Channel, Engine};
use crate::error::{Error, Result};
use crate::mmio::{HostRegion, MmioBus, Width};
use crate::queue::Command;
use crate::ring::{CommandRing, Doorbell, KernargPool};
use crate::signal::Signal;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

crate::register! {
    /// Channel `i`'s doorbell in a soft device's register block: the host writes the ring's new
    /// write pointer (monotonic, in words) here after the words are in the ring.
    pub DOORBELL @ 0x0 [64 ; 0x10] : u64 {
        /// Write pointer, in 32-bit words since the ring was created.
        63:0 wptr as u64;
    }
}

crate::register! {
    /// Channel `i`'s read pointer in a soft device's register block, written by its command
    /// processor: every command before it has run.
    pub RPTR @ 0x8 [64 ; 0x10] : u64 {
        /// Read pointer, in 32-bit words since the ring was created.
        63:0 rptr as u64;
    }
}

/// Most engines a soft device has (the size of the [`DOORBELL`]/[`RPTR`] arrays).
pub const MAX_ENGINES: usize = DOORBELL::COUNT;

/// Byte offset of engine `e`'s doorbell register ([`DOORBELL`] element `e`); `e` is checked
/// against [`MAX_ENGINES`] when the device is built.
pub const fn doorbell_offset(e: usize) -> usize {
    DOORBELL::OFFSET + DOORBELL::STRIDE * e
}

/// Byte offset of engine `e`'s read-pointer register ([`RPTR`] element `e`).
pub const fn rptr_offset(e: usize) -> usize {
    RPTR::OFFSET + RPTR::STRIDE * e
}

/// Bytes of the register block of a device with `engines` engines.
pub const fn regs_bytes(engines: usize) -> usize {
    DOORBELL::STRIDE * engines
}

/// What a soft device's commands do.
pub trait Executor: Send + Sync + 'static {
    /// Run program `program` with the kernel arguments at device address `kernargs` (read
    /// them through `ctx`).
    fn exec(&self, ctx: &SoftContext, program: u64, kernargs: u64, global: [u32; 3], local: [u32; 3]) -> Result<()>;

    /// Copy `bytes` from `src` to `dst`. Default: unsupported.
    fn copy(&self, ctx: &SoftContext, dst: u64, src: u64, bytes: u64) -> Result<()> {
        let _ = (ctx, dst, src);
        Err(Error::Unsupported { what: "copy on this soft device", value: bytes })
    }

    /// Called before command number `n` (counted per engine from 0) runs on `engine`: return
    /// `Ok(false)` to hold it for now (a stalled or hung device), sleep to add latency. Default:
    /// run it.
    fn before(&self, engine: usize, n: u64, cmd: &Command) -> Result<bool> {
        let _ = (engine, n, cmd);
        Ok(true)
    }

    /// The device clock in nanoseconds, for timestamp commands. Default: the host clock of
    /// soft devices ([`host_clock_ns`](crate::signal::host_clock_ns)) with `std`, else 0 (no
    /// clock; a board gives its timer).
    fn timestamp_ns(&self) -> u64 {
        #[cfg(feature = "std")]
        {
            crate::signal::host_clock_ns()
        }
        #[cfg(not(feature = "std"))]
        {
            0
        }
    }
}

/// What an executor sees of its device: the engine state (on a threaded device), and the
/// memory it may read kernel arguments from: the kernel-argument pool and any region added
/// with the driver's `add_kernarg_region` (a captured launch list's own arguments).
pub struct SoftContext {
    kernargs: Arc<dyn MmioBus + Send + Sync>,
    kernarg_base: u64,
    extra: spin::RwLock<Vec<(u64, Arc<dyn MmioBus + Send + Sync>)>>,
    hcq: Option<Arc<Engine>>,
}

impl SoftContext {
    /// The context of a device whose pool `kernargs` the device sees at `kernarg_base`; `hcq`:
    /// its engine state, on a threaded device.
    pub(crate) fn new(kernargs: Arc<dyn MmioBus + Send + Sync>, kernarg_base: u64, hcq: Option<Arc<Engine>>) -> Self {
        Self { kernargs, kernarg_base, extra: spin::RwLock::new(Vec::new()), hcq }
    }

    /// The device's engine state (its profiler, its timeline), on a device whose command
    /// processors run on threads of their own ([`SoftDevice`](super::threaded::SoftDevice)).
    /// `None` on an [`InlineDevice`](super::inline::InlineDevice), whose command processors
    /// run inside the engine's own waits.
    pub fn engine(&self) -> Option<&Engine> {
        self.hcq.as_deref()
    }

    /// Copy `out.len()` bytes of kernel arguments at device address `addr`; anything outside
    /// the pool and the added regions is an [`Error::OutOfBounds`].
    pub fn read_kernargs(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let len = out.len() as u64;
        let inside = |base: u64, size: usize| {
            addr.checked_sub(base).filter(|off| off.checked_add(len).is_some_and(|end| end <= size as u64))
        };
        if let Some(off) = inside(self.kernarg_base, self.kernargs.size()) {
            // CAST: `off + len <= size`, a usize.
            return self.kernargs.read_bytes(off as usize, out);
        }
        for (base, r) in self.extra.read().iter() {
            if let Some(off) = inside(*base, r.size()) {
                // CAST: as above.
                return r.read_bytes(off as usize, out);
            }
        }
        Err(Error::OutOfBounds {
            what: "kernel arguments (not in the pool or an added region)",
            offset: addr,
            len,
            limit: self.kernargs.size() as u64,
        })
    }

    /// Let exec commands read kernel arguments from `region`, seen by the device at
    /// `device_base`.
    pub(crate) fn add_region(&self, device_base: u64, region: Arc<dyn MmioBus + Send + Sync>) {
        self.extra.write().push((device_base, region));
    }

    /// Stop reading kernel arguments from the regions added at `device_base`.
    pub(crate) fn remove_region(&self, device_base: u64) {
        self.extra.write().retain(|(b, _)| *b != device_base);
    }
}

/// Sizes of a soft device.
#[derive(Clone, Debug)]
pub struct SoftConfig {
    /// Channel names; one ring and one command processor each.
    pub engines: Vec<&'static str>,
    /// Bytes per command ring (a multiple of 4).
    pub ring_bytes: usize,
    /// Bytes of the kernel-argument pool.
    pub kernarg_bytes: usize,
    /// Submissions in flight per ring before the producer waits.
    pub max_in_flight: usize,
    /// How long an idle command-processor thread polls its doorbell before sleeping (a
    /// threaded device; an inline device has no thread to idle).
    pub idle_spin: Duration,
}

impl Default for SoftConfig {
    /// A host device: 256 KiB rings, a 1 MiB kernel-argument pool, 1024 submissions in flight.
    fn default() -> Self {
        Self {
            engines: alloc::vec!["compute"],
            ring_bytes: 256 << 10,
            kernarg_bytes: 1 << 20,
            max_in_flight: 1024,
            idle_spin: Duration::from_micros(200),
        }
    }
}

impl SoftConfig {
    /// A small device (a board's heap): 64 KiB rings and kernel-argument pool, 256 submissions
    /// in flight. The inline device's usual sizes.
    pub fn compact() -> Self {
        Self { ring_bytes: 64 << 10, kernarg_bytes: 64 << 10, max_in_flight: 256, ..Self::default() }
    }
}

/// A window of the device memory block, read without a `dyn` layer: one engine's ring as the
/// command processor reads it, and the kernel-argument pool.
pub(crate) struct RingWindow {
    mem: Arc<HostRegion>,
    offset: usize,
    len: usize,
}

impl RingWindow {
    fn new(mem: Arc<HostRegion>, offset: usize, len: usize) -> Result<Self> {
        crate::mmio::check_range("ring window", offset, len, mem.size())?;
        Ok(Self { mem, offset, len })
    }
}

impl MmioBus for RingWindow {
    #[inline]
    fn size(&self) -> usize {
        self.len
    }
    #[inline]
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        crate::mmio::check_range("ring access", offset, width.bytes(), self.len)?;
        self.mem.read(self.offset + offset, width)
    }
    #[inline]
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        crate::mmio::check_range("ring access", offset, width.bytes(), self.len)?;
        self.mem.write(self.offset + offset, width, value)
    }
    #[inline]
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        crate::mmio::check_range("ring write_bytes", offset, src.len(), self.len)?;
        self.mem.write_bytes(self.offset + offset, src)
    }
    #[inline]
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        crate::mmio::check_range("ring read_bytes", offset, dst.len(), self.len)?;
        self.mem.read_bytes(self.offset + offset, dst)
    }
}

/// A soft device's parts before a driver puts them together: its engines (rings with their
/// doorbells), one consumer per engine, the kernel-argument pool and the timeline signal.
pub(crate) struct Carved {
    /// The device's name.
    pub name: crate::error::DeviceName,
    /// The engines, for [`Engine::new`].
    pub engines: Vec<Channel>,
    /// One consumer per engine.
    pub cps: Vec<EngineCp>,
    /// The kernel-argument pool, for [`Engine::new`].
    pub kpool: KernargPool,
    /// The pool's memory and its device address, for the [`SoftContext`].
    pub kmem: Arc<dyn MmioBus + Send + Sync>,
    /// Device address of the pool.
    pub kernarg_base: u64,
    /// The timeline signal (from [`HOST_SIGNALS`](super::HOST_SIGNALS)), for [`Engine::new`].
    pub timeline: crate::signal::OwnedSignal,
    /// The device memory the rings and the kernel-argument pool are carved from.
    pub mem: Arc<HostRegion>,
}

/// Carve device `name`'s parts (see [`Carved`]): rings and kernel-argument pool in one block of
/// host memory, sized by `config`, the doorbells in `bells` (a register block of at least
/// [`regs_bytes`] bytes, written through the rings).
pub(crate) fn carve(name: &str, config: &SoftConfig, bells: Arc<dyn MmioBus + Send>) -> Result<Carved> {
    let name = crate::error::device_name(name);
    let n = config.engines.len();
    if n == 0 {
        return Err(Error::InvalidArgument { what: "a soft device needs at least one engine", value: 0 });
    }
    if n > MAX_ENGINES {
        return Err(Error::InvalidArgument { what: "soft device engines (max 64)", value: n as u64 });
    }
    let need = regs_bytes(n) as u64;
    if (bells.size() as u64) < need {
        return Err(Error::OutOfBounds {
            what: "soft device registers",
            offset: 0,
            len: need,
            limit: bells.size() as u64,
        });
    }
    // one block of device memory, carved by a bump allocator into the rings and the pool
    let ring_bytes = config.ring_bytes.next_multiple_of(64);
    let total = (ring_bytes * n).next_multiple_of(4096) + config.kernarg_bytes;
    let mem = Arc::new(HostRegion::new(total, 4096)?);
    let mut carve = crate::memory::BumpAllocator::new(total as u64, 0, false);
    let mut engines = Vec::with_capacity(n);
    let mut cps = Vec::with_capacity(n);
    for (e, ename) in config.engines.iter().enumerate() {
        // CAST: offsets inside `total`, a usize.
        let off = carve.alloc(ring_bytes as u64, 64)? as usize;
        let ring_mem = Arc::new(RingWindow::new(mem.clone(), off, config.ring_bytes)?);
        let bell = Doorbell { bus: bells.clone(), offset: doorbell_offset(e), width: Width::U64 };
        let ring = CommandRing::new(ring_mem.clone(), config.max_in_flight, bell)?;
        cps.push(EngineCp { engine: e, cp: SoftCp::new(), n: 0, ring: ring_mem, words: ring.capacity_words() });
        engines.push(Channel::new(ename, ring));
    }
    // CAST: as above.
    let koff = carve.alloc(config.kernarg_bytes as u64, 4096)? as usize;
    let kmem: Arc<dyn MmioBus + Send + Sync> = Arc::new(RingWindow::new(mem.clone(), koff, config.kernarg_bytes)?);
    let kernarg_base = mem.addr() + koff as u64;
    let kpool = KernargPool::new(kmem.clone(), kernarg_base, config.max_in_flight);
    let timeline = super::HOST_SIGNALS.alloc(0);
    Ok(Carved { name, engines, cps, kpool, kmem, kernarg_base, timeline, mem })
}

/// The encoder of every soft device.
pub(crate) fn encoder() -> Arc<dyn crate::queue::Encoder> {
    Arc::new(SoftEncoder)
}

/// One engine's consumer side: its ring, its read pointer and how many commands ran.
pub(crate) struct EngineCp {
    /// The engine's index.
    pub engine: usize,
    /// The command processor (its read pointer).
    pub cp: SoftCp,
    /// Commands run so far on this engine (for [`Executor::before`]).
    pub n: u64,
    ring: Arc<RingWindow>,
    words: u64,
}

/// What one engine's commands act on.
pub(crate) struct Target<'a> {
    /// The executor.
    pub exec: &'a dyn Executor,
    /// Its context.
    pub ctx: &'a SoftContext,
    /// The device's own timeline signal, reached without a pool lookup.
    pub timeline: &'a Signal,
}

struct EngineTarget<'a, 'b> {
    t: &'b Target<'a>,
    timeline_addr: u64,
    engine: usize,
    n: &'b mut u64,
}

impl SoftTarget for EngineTarget<'_, '_> {
    #[inline]
    fn wait_reached(&mut self, addr: u64, value: u64) -> Result<bool> {
        if addr == self.timeline_addr {
            return Ok(self.t.timeline.value() >= value);
        }
        Ok(host_signals::load(addr)? >= value)
    }
    #[inline]
    fn signal(&mut self, addr: u64, value: u64) -> Result<()> {
        if addr == self.timeline_addr {
            self.t.timeline.set(value);
            return Ok(());
        }
        host_signals::store(addr, value)
    }
    fn timestamp(&mut self, addr: u64) -> Result<()> {
        host_signals::store(addr, self.t.exec.timestamp_ns())
    }
    #[inline]
    fn exec(&mut self, program: u64, kernargs: u64, global: [u32; 3], local: [u32; 3]) -> Result<()> {
        self.t.exec.exec(self.t.ctx, program, kernargs, global, local)
    }
    fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.t.exec.copy(self.t.ctx, dst, src, bytes)
    }
    #[inline]
    fn before(&mut self, cmd: &Command) -> Result<bool> {
        let go = self.t.exec.before(self.engine, *self.n, cmd)?;
        if go {
            *self.n += 1;
        }
        Ok(go)
    }
}

impl EngineCp {
    /// Run what the ring holds up to the doorbell's write pointer (`doorbell` reads it, again
    /// after each span: more may have been rung meanwhile) until the engine is idle, blocked
    /// or held; returns that and the number of commands run. The caller publishes the read
    /// pointer. On an error the read pointer stays on the failing packet.
    pub fn drain(&mut self, t: &Target<'_>, mut doorbell: impl FnMut() -> Result<u64>) -> Result<(Step, u64)> {
        let mut target = EngineTarget { t, timeline_addr: t.timeline.addr(), engine: self.engine, n: &mut self.n };
        let mut ran = 0u64;
        loop {
            let wptr = doorbell()?;
            let step = loop {
                match self.cp.step(&*self.ring, self.words, wptr, &mut target)? {
                    Step::Ran(_) => ran += 1,
                    other => break other,
                }
            };
            if step == Step::Idle && doorbell()? != wptr {
                continue;
            }
            return Ok((step, ran));
        }
    }
}
