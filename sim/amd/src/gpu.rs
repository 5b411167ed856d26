//! The GPU front: memory, queues with their doorbells, the event table, the clock, and the CP
//! that runs the queues — on the caller's thread ([`Gpu::process`]) or on a thread of its own
//! ([`Gpu::start`]) that sleeps until a doorbell.

use crate::cp::dispatch::ProgramCache;
use crate::cp::{ComputeQueue, ComputeQueueDesc, QueueStats, Run};
use crate::events::{Events, HwException, MemoryException};
use crate::fault::{Engine, QueueFault, QueueId};
use crate::memory::{GpuMemory, HostPages, MemFault};
use crate::sdma::{SdmaQueue, SdmaQueueDesc};
use crate::trace::PacketSink;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The GPU clock counter's rate: 100 MHz (tinygrad's `AMDSignal` divides timestamps by
/// `timestamp_divider=100` to get microseconds).
pub const GPU_CLOCK_HZ: u64 = 100_000_000;
/// Doorbells on the doorbell page (two 4 KiB pages of 8-byte doorbells, as KFD maps them).
pub const DOORBELLS: usize = 1024;

/// What the simulated GPU is allowed to do.
#[derive(Clone, Debug)]
pub struct GpuConfig {
    /// A wait (`WAIT_REG_MEM`, `POLL_REGMEM`) that fails for this long faults as a hang
    /// (`None`: waits forever).
    pub hang_timeout: Option<Duration>,
    /// Instructions one wave may execute before it is a hang (0: no limit).
    pub max_wave_steps: u64,
    /// Work-groups one dispatch may have.
    pub max_groups: u64,
    /// Threads a dispatch's work-groups spread over.
    pub shader_threads: usize,
    /// Packets one queue may run in one go before it faults (a loop of chained IBs).
    pub packet_budget: u64,
    /// Bytes all allocations may take together.
    pub memory_limit: u64,
}

impl Default for GpuConfig {
    fn default() -> Self {
        Self {
            hang_timeout: Some(Duration::from_secs(2)),
            max_wave_steps: 1 << 24,
            max_groups: 1 << 24,
            shader_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            packet_budget: 1 << 24,
            memory_limit: crate::memory::DEFAULT_LIMIT,
        }
    }
}

/// The GPU clock counter: 100 MHz since the GPU was made, strictly increasing across reads.
#[derive(Debug)]
pub struct Clock {
    start: Instant,
    last: AtomicU64,
}

impl Clock {
    fn new() -> Self {
        Self { start: Instant::now(), last: AtomicU64::new(0) }
    }

    /// The counter now.
    pub fn now(&self) -> u64 {
        // CAST: nanoseconds / 10 since the start fit 64 bits for 5,800 years.
        let t = (self.start.elapsed().as_nanos() / (1_000_000_000 / u128::from(GPU_CLOCK_HZ))) as u64;
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = t.max(last + 1);
            match self.last.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return next,
                Err(l) => last = l,
            }
        }
    }
}

/// What every queue's engine reaches.
#[derive(Debug)]
pub(crate) struct Shared {
    pub mem: GpuMemory,
    pub events: Events,
    pub clock: Clock,
    pub config: GpuConfig,
    pub programs: Mutex<ProgramCache>,
    /// Where executed packets go ([`Gpu::trace_packets`]): the engines test it once per packet.
    pub trace: OnceLock<Trace>,
}

/// The packet sink of [`Gpu::trace_packets`].
pub(crate) struct Trace(pub Arc<dyn PacketSink>);

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Trace")
    }
}

impl Shared {
    /// Announce a queue's fault on the event table.
    pub fn raise(&self, f: &QueueFault) {
        match f.memory() {
            Some((va, write)) => self.events.memory_exception(MemoryException { va, write, fault: f.clone() }),
            None => self.events.hw_exception(HwException { fault: f.clone() }),
        }
    }
}

/// Why a queue cannot be created or addressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// A size or alignment the queue cannot have.
    Invalid(String),
    /// One of its buffers is not mapped.
    Unmapped {
        /// Which.
        what: &'static str,
        /// The access.
        fault: MemFault,
    },
    /// Every doorbell is taken.
    NoDoorbell,
    /// No such queue.
    NoQueue(QueueId),
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::Invalid(s) => write!(f, "create queue: {s}"),
            QueueError::Unmapped { what, fault } => write!(f, "create queue: the {what}: {fault}"),
            QueueError::NoDoorbell => write!(f, "create queue: all {DOORBELLS} doorbells are taken"),
            QueueError::NoQueue(q) => write!(f, "no queue {q}"),
        }
    }
}

impl std::error::Error for QueueError {}

/// A created queue: its id and its doorbell's index on the doorbell page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueHandle {
    /// The queue.
    pub id: QueueId,
    /// Its doorbell (byte offset on the page: 8 × this).
    pub doorbell: usize,
}

/// Where a queue stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueState {
    /// At its write pointer.
    Idle,
    /// Packets between its read and write pointers (or an IB in progress) not yet run.
    Pending,
    /// Stopped at a wait.
    Blocked,
    /// Stopped by a fault.
    Faulted(QueueFault),
}

/// A queue's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    /// Its engine.
    pub engine: Engine,
    /// Where it stands.
    pub state: QueueState,
    /// Read and write pointers (dwords for compute, bytes for SDMA).
    pub rptr: u64,
    /// The write pointer it has taken from its doorbell.
    pub wptr: u64,
    /// What it executed.
    pub stats: QueueStats,
}

#[derive(Debug)]
enum Engines {
    Compute(Box<ComputeQueue>),
    Sdma(Box<SdmaQueue>),
}

#[derive(Debug)]
struct Slot {
    id: QueueId,
    doorbell: usize,
    engine: Mutex<Engines>,
}

/// The doorbell page: two 4 KiB pages of 64-bit doorbells, page-aligned so it can stand for
/// KFD's mapped doorbell frame (doorbell `i` at byte `8 * i`): the GPU's own
/// ([`DoorbellPage::default`]) or host pages someone else also maps ([`DoorbellPage::on`]: a
/// virtual device's file, which its client maps as `/dev/kfd`'s doorbell frame).
#[derive(Debug)]
pub struct DoorbellPage(Bells);

#[derive(Debug)]
enum Bells {
    Own(Box<Frame>),
    /// The first [`DOORBELLS`] 64-bit words of pages at least that long.
    Host(Arc<HostPages>),
}

#[derive(Debug)]
#[repr(C, align(4096))]
struct Frame([AtomicU64; DOORBELLS]);

impl Default for DoorbellPage {
    fn default() -> Self {
        DoorbellPage(Bells::Own(Box::new(Frame(std::array::from_fn(|_| AtomicU64::new(0))))))
    }
}

impl DoorbellPage {
    /// The doorbells on the first 8 KiB of `pages` (`None` when they are shorter).
    pub fn on(pages: Arc<HostPages>) -> Option<DoorbellPage> {
        (pages.len() >= DOORBELLS * 8).then_some(DoorbellPage(Bells::Host(pages)))
    }

    /// The doorbells.
    pub fn doorbells(&self) -> &[AtomicU64; DOORBELLS] {
        match &self.0 {
            Bells::Own(f) => &f.0,
            Bells::Host(p) => {
                let ptr = p.as_ptr().as_ptr().cast::<[AtomicU64; DOORBELLS]>();
                // SAFETY: `p` is page-aligned (so 8-aligned) host memory of at least
                // `DOORBELLS * 8` bytes (checked in `on`), alive while `self` holds it; any bits
                // are a valid `AtomicU64`, and HostPages' contract has it accessed only
                // atomically or through raw pointers, so a shared reference to atomics over it
                // is sound (nothing here views these bytes as `AtomicU32`s: the pages are only
                // the doorbells').
                unsafe { &*ptr }
            }
        }
    }
}

#[derive(Debug)]
struct Inner {
    shared: Shared,
    queues: RwLock<Vec<Arc<Slot>>>,
    doorbells: Arc<DoorbellPage>,
    taken: Mutex<Vec<bool>>,
    next_id: AtomicU64,
    /// One pass over the queues at a time.
    pass: Mutex<()>,
    /// Bumped by every doorbell; the CP thread sleeps on it.
    rung: Mutex<u64>,
    wake: Condvar,
    stop: AtomicBool,
    /// The CP thread polls the doorbells (stores to the page that do not call
    /// [`Gpu::write_doorbell`]) instead of sleeping until one is rung.
    poll: AtomicBool,
    /// Run before every pass over the queues ([`Gpu::before_pass`]).
    hook: RwLock<Option<PassHook>>,
}

/// What [`Gpu::before_pass`] runs.
#[derive(Clone)]
struct PassHook(Arc<dyn Fn() + Send + Sync>);

impl fmt::Debug for PassHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PassHook")
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// What a pass over the queues did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Packets completed.
    pub packets: u64,
    /// Queues stopped at a wait.
    pub blocked: usize,
    /// Queues stopped by a fault.
    pub faulted: usize,
}

/// The simulated gfx1100. Dropping it stops its CP thread.
#[derive(Debug)]
pub struct Gpu {
    inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
}

impl Default for Gpu {
    fn default() -> Self {
        Self::new(GpuConfig::default())
    }
}

impl Gpu {
    /// A GPU with no memory allocated and no queues.
    pub fn new(config: GpuConfig) -> Self {
        Self::with_doorbells(config, DoorbellPage::default())
    }

    /// [`Gpu::new`] whose doorbells are `doorbells` (host pages a client maps, say).
    pub fn with_doorbells(config: GpuConfig, doorbells: DoorbellPage) -> Self {
        let mem = GpuMemory::with_limit(config.memory_limit);
        Self {
            inner: Arc::new(Inner {
                shared: Shared {
                    mem,
                    events: Events::new(),
                    clock: Clock::new(),
                    config,
                    programs: Mutex::new(ProgramCache::default()),
                    trace: OnceLock::new(),
                },
                queues: RwLock::new(Vec::new()),
                doorbells: Arc::new(doorbells),
                taken: Mutex::new(vec![false; DOORBELLS]),
                next_id: AtomicU64::new(0),
                pass: Mutex::new(()),
                rung: Mutex::new(0),
                wake: Condvar::new(),
                stop: AtomicBool::new(false),
                poll: AtomicBool::new(false),
                hook: RwLock::new(None),
            }),
            thread: None,
        }
    }

    /// Its memory.
    pub fn memory(&self) -> &GpuMemory {
        &self.inner.shared.mem
    }

    /// Its event table.
    pub fn events(&self) -> &Events {
        &self.inner.shared.events
    }

    /// Its configuration.
    pub fn config(&self) -> &GpuConfig {
        &self.inner.shared.config
    }

    /// The GPU clock counter now (100 MHz).
    pub fn clock(&self) -> u64 {
        self.inner.shared.clock.now()
    }

    /// Programs loaded and reused by dispatches so far.
    pub fn program_cache_stats(&self) -> (u64, u64) {
        let c = lock(&self.inner.shared.programs);
        (c.loads, c.hits)
    }

    fn check_ring(&self, ring: u64, bytes: u64, min: u64, rptr: u64, wptr: u64) -> Result<(), QueueError> {
        if !bytes.is_power_of_two() || bytes < min {
            return Err(QueueError::Invalid(format!(
                "ring size {bytes} bytes is not a power of two of at least {min}"
            )));
        }
        if !ring.is_multiple_of(4) {
            return Err(QueueError::Invalid(format!("ring address {ring:#x} is not dword-aligned")));
        }
        for (what, va) in [("read pointer", rptr), ("write pointer", wptr)] {
            if !va.is_multiple_of(8) {
                return Err(QueueError::Invalid(format!("{what} address {va:#x} is not 8-byte aligned")));
            }
        }
        let m = self.memory();
        let v = m.view();
        for (what, va, len) in [("ring", ring, bytes), ("read pointer", rptr, 8), ("write pointer", wptr, 8)] {
            if !v.covers(va, len) {
                return Err(QueueError::Unmapped { what, fault: MemFault { va, start: va, len, write: false } });
            }
        }
        m.write_u64(rptr, 0).map_err(|fault| QueueError::Unmapped { what: "read pointer", fault })?;
        Ok(())
    }

    fn add(&self, engine: Engines) -> Result<QueueHandle, QueueError> {
        let mut taken = lock(&self.inner.taken);
        let doorbell = taken.iter().position(|t| !*t).ok_or(QueueError::NoDoorbell)?;
        taken[doorbell] = true;
        self.inner.doorbells.doorbells()[doorbell].store(0, Ordering::Release);
        let id = match &engine {
            Engines::Compute(q) => q.id(),
            Engines::Sdma(q) => q.id(),
        };
        let slot = Arc::new(Slot { id, doorbell, engine: Mutex::new(engine) });
        match self.inner.queues.write() {
            Ok(mut g) => g.push(slot),
            Err(p) => p.into_inner().push(slot),
        }
        Ok(QueueHandle { id, doorbell })
    }

    fn next_id(&self) -> QueueId {
        // CAST: queue ids stay far below 2^32.
        QueueId(self.inner.next_id.fetch_add(1, Ordering::Relaxed) as u32)
    }

    /// Create a PM4 compute queue (KFD `CREATE_QUEUE`, `KFD_IOC_QUEUE_TYPE_COMPUTE`). Its ring,
    /// pointers and EOP buffer (when given) must be mapped; the read pointer is set to 0.
    pub fn create_compute_queue(&self, desc: ComputeQueueDesc) -> Result<QueueHandle, QueueError> {
        self.check_ring(desc.ring, desc.ring_bytes, 16, desc.rptr, desc.wptr)?;
        if desc.eop != 0 && !self.memory().view().covers(desc.eop, desc.eop_bytes.max(1)) {
            let fault = MemFault { va: desc.eop, start: desc.eop, len: desc.eop_bytes, write: true };
            return Err(QueueError::Unmapped { what: "EOP buffer", fault });
        }
        let id = self.next_id();
        self.add(Engines::Compute(Box::new(ComputeQueue::new(id, desc))))
    }

    /// Create an SDMA queue (KFD `CREATE_QUEUE`, `KFD_IOC_QUEUE_TYPE_SDMA`).
    pub fn create_sdma_queue(&self, desc: SdmaQueueDesc) -> Result<QueueHandle, QueueError> {
        self.check_ring(desc.ring, desc.ring_bytes, 256, desc.rptr, desc.wptr)?;
        let id = self.next_id();
        self.add(Engines::Sdma(Box::new(SdmaQueue::new(id, desc))))
    }

    fn slot(&self, id: QueueId) -> Result<Arc<Slot>, QueueError> {
        let g = match self.inner.queues.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.iter().find(|s| s.id == id).cloned().ok_or(QueueError::NoQueue(id))
    }

    /// Destroy a queue (its doorbell is freed; work in flight is dropped).
    pub fn destroy_queue(&self, id: QueueId) -> Result<(), QueueError> {
        let slot = self.slot(id)?;
        let _pass = lock(&self.inner.pass);
        match self.inner.queues.write() {
            Ok(mut g) => g.retain(|s| s.id != id),
            Err(p) => p.into_inner().retain(|s| s.id != id),
        }
        lock(&self.inner.taken)[slot.doorbell] = false;
        Ok(())
    }

    /// Write `value` (the new write pointer) to queue `id`'s doorbell and wake the CP thread.
    pub fn ring_doorbell(&self, id: QueueId, value: u64) -> Result<(), QueueError> {
        let slot = self.slot(id)?;
        self.write_doorbell(slot.doorbell, value);
        Ok(())
    }

    /// Write doorbell `index` of the doorbell page (what a mapped doorbell page write does).
    pub fn write_doorbell(&self, index: usize, value: u64) {
        if let Some(d) = self.inner.doorbells.doorbells().get(index) {
            d.store(value, Ordering::Release);
        }
        *lock(&self.inner.rung) += 1;
        self.inner.wake.notify_all();
    }

    /// The doorbell page itself ([`DOORBELLS`] 64-bit doorbells, 8 KiB, page-aligned): what a
    /// KFD layer maps for the host. A store to it that bypasses [`Gpu::write_doorbell`] wakes
    /// nothing by itself; the CP thread sees it when it polls ([`Gpu::poll_doorbells`]) or at
    /// the next [`Gpu::process`].
    pub fn doorbell_page(&self) -> &[AtomicU64; DOORBELLS] {
        self.inner.doorbells.doorbells()
    }

    /// The doorbell page, shared: what keeps it alive for a mapping that may outlive `self`.
    pub fn doorbell_page_shared(&self) -> Arc<DoorbellPage> {
        Arc::clone(&self.inner.doorbells)
    }

    /// Have the CP thread poll the doorbell page while it has nothing else to do (every 50 µs
    /// after a packet ran, backing off to 1 ms), so plain stores to [`Gpu::doorbell_page`] run
    /// the queues; off, it sleeps until [`Gpu::write_doorbell`].
    pub fn poll_doorbells(&self, on: bool) {
        self.inner.poll.store(on, Ordering::Release);
        *lock(&self.inner.rung) += 1;
        self.inner.wake.notify_all();
    }

    /// Have `hook` run before every pass over the queues ([`Gpu::process`] and the CP thread's),
    /// outside every lock of the GPU, or no hook (`None`): where a host layer takes back memory
    /// the process no longer maps before the queues can reach it again (a virtual device's user
    /// pointers). It runs on the CP thread while the thread runs, so it must not wait for it.
    pub fn before_pass(&self, hook: Option<Arc<dyn Fn() + Send + Sync>>) {
        let mut g = match self.inner.hook.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *g = hook.map(PassHook);
    }

    /// Hand every packet the engines execute from now on to `sink` ([`crate::trace`]: the
    /// command-stream capture). Set once per GPU: a second call leaves the first sink and
    /// returns `false`. Without a sink the engines pay one branch per packet.
    pub fn trace_packets(&self, sink: Arc<dyn PacketSink>) -> bool {
        self.inner.shared.trace.set(Trace(sink)).is_ok()
    }

    /// Run every queue until each is at its write pointer, stopped at a wait that does not hold,
    /// or faulted (repeating while any made progress, so a queue waiting on another's write
    /// proceeds in the same call).
    pub fn process(&self) -> Progress {
        process(&self.inner)
    }

    /// [`Gpu::process`] until no queue is blocked or pending, polling blocked waits (a blocked
    /// queue whose wait never holds faults after the hang timeout); gives up after `timeout`.
    /// Returns the last pass's progress.
    pub fn run_until_idle(&self, timeout: Duration) -> Progress {
        let t0 = Instant::now();
        let mut nap = Duration::from_micros(20);
        loop {
            let p = self.process();
            if p.blocked == 0 || t0.elapsed() >= timeout {
                return p;
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(2));
        }
    }

    /// A queue's status.
    pub fn queue_status(&self, id: QueueId) -> Result<QueueStatus, QueueError> {
        let slot = self.slot(id)?;
        let doorbell = self.inner.doorbells.doorbells()[slot.doorbell].load(Ordering::Acquire);
        let g = lock(&slot.engine);
        let (engine, fault, blocked, (rptr, wptr), stats, deep) = match &*g {
            Engines::Compute(q) => {
                (Engine::Compute, q.fault().cloned(), q.blocked(), q.pointers(), q.stats(), q.in_ib())
            }
            Engines::Sdma(q) => (Engine::Sdma, q.fault().cloned(), q.blocked(), q.pointers(), q.stats(), q.in_ib()),
        };
        let state = match fault {
            Some(f) => QueueState::Faulted(f),
            None if blocked => QueueState::Blocked,
            None if doorbell != rptr || deep => QueueState::Pending,
            None => QueueState::Idle,
        };
        Ok(QueueStatus { engine, state, rptr, wptr, stats })
    }

    /// A compute queue's register `reg` (an SH or user-config register), for tests and tools.
    pub fn compute_register(&self, id: QueueId, reg: u32) -> Result<u32, QueueError> {
        let slot = self.slot(id)?;
        match &*lock(&slot.engine) {
            Engines::Compute(q) => Ok(q.regs().get(reg)),
            Engines::Sdma(_) => Err(QueueError::Invalid(format!("queue {id} is an SDMA queue"))),
        }
    }

    /// Start the CP thread: it sleeps until a doorbell, runs the queues, and polls while any is
    /// blocked at a wait (every 50 µs, backing off to 1 ms). [`Gpu::process`] may still be
    /// called meanwhile (passes take turns). Does nothing when it already runs.
    pub fn start(&mut self) {
        if self.thread.is_some() {
            return;
        }
        self.inner.stop.store(false, Ordering::Release);
        let inner = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new().name("hcq-sim-amd-cp".into()).spawn(move || cp_thread(&inner));
        // Without a thread the GPU still runs synchronously through `process`.
        self.thread = spawned.ok();
    }

    /// Whether the CP thread runs.
    pub fn threaded(&self) -> bool {
        self.thread.is_some()
    }

    /// Stop the CP thread (after its current pass).
    pub fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.inner.stop.store(true, Ordering::Release);
            *lock(&self.inner.rung) += 1;
            self.inner.wake.notify_all();
            // A panic on the CP thread was already reported by the panic hook.
            let _ = t.join();
        }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        self.stop();
    }
}

fn process(inner: &Inner) -> Progress {
    let hook = match inner.hook.read() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    };
    if let Some(PassHook(h)) = hook {
        h();
    }
    let _pass = lock(&inner.pass);
    let slots: Vec<Arc<Slot>> = match inner.queues.read() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    };
    let mut total = 0;
    loop {
        let mut p = Progress::default();
        for s in &slots {
            let doorbell = inner.doorbells.doorbells()[s.doorbell].load(Ordering::Acquire);
            let mut g = lock(&s.engine);
            let (before, run, after) = match &mut *g {
                Engines::Compute(q) => {
                    let b = q.stats().packets;
                    let r = q.run(&inner.shared, doorbell);
                    (b, r, q.stats().packets)
                }
                Engines::Sdma(q) => {
                    let b = q.stats().packets;
                    let r = q.run(&inner.shared, doorbell);
                    (b, r, q.stats().packets)
                }
            };
            p.packets += after - before;
            match run {
                Run::Idle => {}
                Run::Blocked => p.blocked += 1,
                Run::Faulted => p.faulted += 1,
            }
        }
        total += p.packets;
        if p.packets == 0 {
            return Progress { packets: total, ..p };
        }
    }
}

fn cp_thread(inner: &Inner) {
    let mut seen = 0;
    let mut nap = Duration::from_micros(50);
    while !inner.stop.load(Ordering::Acquire) {
        let p = process(inner);
        if p.packets > 0 {
            nap = Duration::from_micros(50);
        }
        let polling = inner.poll.load(Ordering::Acquire);
        let mut rung = lock(&inner.rung);
        if *rung == seen {
            if p.blocked > 0 || polling {
                rung = match inner.wake.wait_timeout(rung, nap) {
                    Ok((g, _)) => g,
                    Err(e) => e.into_inner().0,
                };
                nap = (nap * 2).min(Duration::from_millis(1));
            } else {
                while *rung == seen && !inner.stop.load(Ordering::Acquire) {
                    rung = match inner.wake.wait(rung) {
                        Ok(g) => g,
                        Err(e) => e.into_inner(),
                    };
                }
            }
        }
        if *rung != seen {
            nap = Duration::from_micros(50);
        }
        seen = *rung;
    }
}
