//! The `SIM` device: the HCQ engine driven end to end against simulated hardware.
//!
//! A [`SimDevice`] is a soft device ([`hcq::soft::threaded::SoftDevice`]) whose doorbell and
//! read-pointer registers live in a [`MockMmio`] (so tests can log them and inject register
//! faults) and whose command processors run the reference encoding on host threads:
//!
//! - **exec** calls a host function registered with [`SimDevice::register`], handing it the
//!   kernel-argument block;
//! - **copy** copies between memory blocks made with [`SimDevice::alloc`] (any other address
//!   is a command-processor fault);
//! - **faults** ([`SimFaults`]): per-command latency, a stall of command N for a while, a hang
//!   forever at command N, or a command processor that stops reading the ring.

use crate::mmio::MockMmio;
use hcq::engine::Engine;
use hcq::error::{Error, Result};
use hcq::mmio::{HostRegion, MmioBus, Width};
use hcq::queue::Command;
use hcq::soft::threaded::{DeviceRegs, Executor, SoftConfig, SoftContext, SoftDevice};
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Forks this process has gone through, counted in each child by a `pthread_atfork` handler
/// (registered at the first SIM device): a device made before a fork sees a different count
/// in the child. One atomic load per check, where `getpid` would be a system call.
static FORKS: AtomicU64 = AtomicU64::new(0);

#[cfg(unix)]
extern "C" fn count_fork_in_child() {
    // an atomic add: async-signal-safe, as a handler in a forked child must be
    FORKS.fetch_add(1, Ordering::Relaxed);
}

#[cfg(unix)]
unsafe extern "C" {
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> core::ffi::c_int;
}

/// Whether [`FORKS`] counts forks (the handler is registered, once per process).
fn forks_counted() -> bool {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        #[cfg(unix)]
        {
            // SAFETY: registers a child handler that only does an atomic add on a static; the
            // other two are none. It stays registered for the life of the process (or of this
            // library: glibc unregisters a shared object's handlers when it is unloaded).
            unsafe { pthread_atfork(None, None, Some(count_fork_in_child)) == 0 }
        }
        #[cfg(not(unix))]
        false
    })
}

/// Whether this process is a forked child of the one that made a device: the device's
/// command processors are threads, and a forked child has none of its parent's threads.
#[derive(Debug)]
struct ForkWatch {
    pid: u32,
    forks: u64,
    counted: bool,
}

impl ForkWatch {
    fn new() -> Self {
        let counted = forks_counted();
        Self { pid: std::process::id(), forks: FORKS.load(Ordering::Acquire), counted }
    }

    #[inline]
    fn in_child(&self) -> bool {
        if self.counted { FORKS.load(Ordering::Relaxed) != self.forks } else { std::process::id() != self.pid }
    }
}

/// Why a SIM device cannot run work in a forked child.
pub const SIM_FORKED_REASON: &str = "opened before fork(): its command processors are threads of the parent \
process, which this forked child does not have (open the device, or load the model, in the child)";

fn forked(name: &hcq::error::DeviceName) -> Error {
    Error::DeviceUnavailable { device: name.clone(), reason: SIM_FORKED_REASON }
}

/// The register file a [`SimDevice`]'s command processors use: its [`MockMmio`], and whether
/// this is a forked child of the process that made the device. A forked child (Python's
/// multiprocessing forks on Linux) has a copy of the device but none of its command-processor
/// threads, so a host write there (a doorbell: a submission) is refused with
/// [`Error::DeviceUnavailable`] at once, which the engine records as the device's fault (every
/// wait ends with it), instead of waiting for threads that do not exist until the 30 s timeout
/// calls the device hung.
struct SimRegs {
    mmio: Arc<MockMmio>,
    fork: Arc<ForkWatch>,
    name: hcq::error::DeviceName,
}

impl SimRegs {
    fn check_process(&self) -> Result<()> {
        if self.fork.in_child() { Err(forked(&self.name)) } else { Ok(()) }
    }
}

impl MmioBus for SimRegs {
    fn size(&self) -> usize {
        self.mmio.size()
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.mmio.read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.check_process()?;
        self.mmio.write(offset, width, value)
    }
}

impl DeviceRegs for SimRegs {
    fn device_read(&self, offset: usize, width: Width) -> Result<u64> {
        self.mmio.device_read(offset, width)
    }
    fn device_write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.mmio.device_write(offset, width, value)
    }
    fn write_count(&self, offset: usize) -> u64 {
        self.mmio.write_count(offset)
    }
    fn wait_write(&self, offset: usize, seen: u64, timeout: Duration) -> Option<u64> {
        DeviceRegs::wait_write(&*self.mmio, offset, seen, timeout)
    }
    fn wake(&self, offset: usize) {
        DeviceRegs::wake(&*self.mmio, offset)
    }
}

impl DeviceRegs for MockMmio {
    fn device_read(&self, offset: usize, width: Width) -> Result<u64> {
        MockMmio::device_read(self, offset, width)
    }
    fn device_write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        MockMmio::device_write(self, offset, width, value)
    }
    fn write_count(&self, offset: usize) -> u64 {
        MockMmio::write_count(self, offset)
    }
    fn wait_write(&self, offset: usize, seen: u64, timeout: Duration) -> Option<u64> {
        self.wait_for_write_after(offset, seen, timeout).map(|e| e.count)
    }
}

/// In a forked child: the device's fault, so that every wait (for a call the parent submitted,
/// which no thread here will run) and every submission ends at once with it.
#[cold]
fn refuse_in_child(e: &Engine) {
    let t = e.timeline();
    if t.fault().is_none() {
        t.record_fault(forked(t.device()));
    }
}

/// A host function standing in for a kernel: gets the kernel-argument bytes and the grid.
pub type HostFn = dyn Fn(&[u8], [u32; 3], [u32; 3]) -> Result<()> + Send + Sync;

/// Faults and delays the simulated command processors inject. Settable while the device runs.
#[derive(Debug, Default)]
pub struct SimFaults {
    latency_ns: AtomicU64,
    /// `(command index, stall ns)`, per engine command counter; u64::MAX = none.
    stall_at: AtomicU64,
    stall_ns: AtomicU64,
    hang_at: AtomicU64,
    stop_reading: AtomicBool,
}

impl SimFaults {
    fn new() -> Self {
        Self { stall_at: AtomicU64::new(u64::MAX), hang_at: AtomicU64::new(u64::MAX), ..Default::default() }
    }

    /// Every command takes at least `d` (busy time of the simulated hardware).
    pub fn set_latency(&self, d: Duration) {
        self.latency_ns.store(d.as_nanos() as u64, Ordering::Release);
    }

    /// Command number `n` (counted per engine from 0) stalls for `d` before it runs.
    pub fn stall_at(&self, n: u64, d: Duration) {
        self.stall_ns.store(d.as_nanos() as u64, Ordering::Release);
        self.stall_at.store(n, Ordering::Release);
    }

    /// Command number `n` never runs: the device hangs there.
    pub fn hang_at(&self, n: u64) {
        self.hang_at.store(n, Ordering::Release);
    }

    /// The command processors stop (`true`) or resume (`false`) reading their rings.
    pub fn stop_reading(&self, on: bool) {
        self.stop_reading.store(on, Ordering::Release);
    }

    /// Remove every fault and delay.
    pub fn clear(&self) {
        self.latency_ns.store(0, Ordering::Release);
        self.stall_at.store(u64::MAX, Ordering::Release);
        self.hang_at.store(u64::MAX, Ordering::Release);
        self.stop_reading.store(false, Ordering::Release);
    }
}

struct Program {
    kernarg_bytes: usize,
    f: Box<HostFn>,
}

struct SimExec {
    programs: RwLock<Vec<Program>>,
    memory: RwLock<BTreeMap<u64, Arc<HostRegion>>>,
    faults: Arc<SimFaults>,
    stalled_until: Mutex<Option<(usize, u64, Instant)>>,
}

impl SimExec {
    fn region(&self, addr: u64, len: u64) -> Result<(Arc<HostRegion>, usize)> {
        let mem = self.memory.read().unwrap_or_else(|p| p.into_inner());
        let bad = || Error::OutOfBounds { what: "sim copy: address is not device memory", offset: addr, len, limit: 0 };
        let (base, r) = mem.range(..=addr).next_back().ok_or_else(bad)?;
        let off = addr - base;
        if off.checked_add(len).is_none_or(|end| end > r.size() as u64) {
            return Err(bad());
        }
        Ok((r.clone(), off as usize))
    }
}

impl Executor for SimExec {
    fn exec(&self, mem: &SoftContext, program: u64, kernargs: u64, global: [u32; 3], local: [u32; 3]) -> Result<()> {
        let progs = self.programs.read().unwrap_or_else(|p| p.into_inner());
        let p = progs
            .get(usize::try_from(program).unwrap_or(usize::MAX))
            .ok_or(Error::InvalidArgument { what: "sim exec: unknown program handle", value: program })?;
        let mut buf = [0u8; 4096];
        let args = buf.get_mut(..p.kernarg_bytes).ok_or(Error::OutOfSpace {
            what: "sim kernarg staging",
            requested: p.kernarg_bytes as u64,
            capacity: 4096,
        })?;
        mem.read_kernargs(kernargs, args)?;
        (p.f)(args, global, local)
    }

    fn copy(&self, _mem: &SoftContext, dst: u64, src: u64, bytes: u64) -> Result<()> {
        let (s, so) = self.region(src, bytes)?;
        let (d, dof) = self.region(dst, bytes)?;
        let mut chunk = [0u8; 4096];
        let mut done = 0usize;
        let total = bytes as usize;
        while done < total {
            let n = (total - done).min(chunk.len());
            s.read_bytes(so + done, &mut chunk[..n])?;
            d.write_bytes(dof + done, &chunk[..n])?;
            done += n;
        }
        Ok(())
    }

    fn before(&self, engine: usize, n: u64, _cmd: &Command) -> Result<bool> {
        let f = &self.faults;
        if f.stop_reading.load(Ordering::Acquire) || f.hang_at.load(Ordering::Acquire) == n {
            return Ok(false);
        }
        if f.stall_at.load(Ordering::Acquire) == n {
            let mut st = self.stalled_until.lock().unwrap_or_else(|p| p.into_inner());
            let until = match *st {
                Some((e, m, t)) if e == engine && m == n => t,
                _ => {
                    let t = Instant::now() + Duration::from_nanos(f.stall_ns.load(Ordering::Acquire));
                    *st = Some((engine, n, t));
                    t
                }
            };
            if Instant::now() < until {
                return Ok(false);
            }
        }
        let lat = f.latency_ns.load(Ordering::Acquire);
        if lat > 0 {
            let end = Instant::now() + Duration::from_nanos(lat);
            while Instant::now() < end {
                std::hint::spin_loop();
            }
        }
        Ok(true)
    }
}

/// A simulated device.
pub struct SimDevice {
    /// Dropped in [`Drop`], except in a forked child (see there).
    soft: ManuallyDrop<SoftDevice>,
    exec: Arc<SimExec>,
    mmio: Arc<MockMmio>,
    fork: Arc<ForkWatch>,
}

impl Drop for SimDevice {
    fn drop(&mut self) {
        if self.fork.in_child() {
            // The command-processor threads are the parent's: stopping and joining them here
            // would fail (and their locks may be held by threads that do not exist), so the
            // device is leaked, as a forked child leaves its copy of the parent's threads.
            return;
        }
        // SAFETY: `soft` is dropped once, here, and `self` is not used after `drop`.
        unsafe { ManuallyDrop::drop(&mut self.soft) }
    }
}

impl std::fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDevice").field("soft", &self.soft).finish()
    }
}

impl SimDevice {
    /// A device called `name` with the given engines and sizes.
    pub fn new(name: &str, config: &SoftConfig) -> Result<Self> {
        let mmio = MockMmio::new(hcq::soft::threaded::DOORBELL::STRIDE * config.engines.len().max(1))?;
        let exec = Arc::new(SimExec {
            programs: RwLock::new(Vec::new()),
            memory: RwLock::new(BTreeMap::new()),
            faults: Arc::new(SimFaults::new()),
            stalled_until: Mutex::new(None),
        });
        let fork = Arc::new(ForkWatch::new());
        let regs = Arc::new(SimRegs { mmio: mmio.clone(), fork: fork.clone(), name: hcq::error::device_name(name) });
        let soft = ManuallyDrop::new(SoftDevice::new(name, config, regs, exec.clone())?);
        Ok(Self { soft, exec, mmio, fork })
    }

    /// A device with one compute engine and default sizes.
    pub fn with_defaults(name: &str) -> Result<Self> {
        Self::new(name, &SoftConfig::default())
    }

    /// The HCQ engine state (queues, submit, timeline).
    pub fn engine(&self) -> &Engine {
        let e = self.soft.engine();
        if self.fork.in_child() {
            refuse_in_child(e);
        }
        e
    }

    /// The underlying soft device.
    pub fn soft(&self) -> &SoftDevice {
        &self.soft
    }

    /// The register file (doorbells, read pointers) as mock MMIO.
    pub fn mmio(&self) -> &Arc<MockMmio> {
        &self.mmio
    }

    /// Fault injection.
    pub fn faults(&self) -> &SimFaults {
        &self.exec.faults
    }

    /// Register a host function as a program whose kernel arguments are `kernarg_bytes` long
    /// (at most 4096); returns its program handle for `exec`.
    pub fn register(
        &self,
        kernarg_bytes: usize,
        f: impl Fn(&[u8], [u32; 3], [u32; 3]) -> Result<()> + Send + Sync + 'static,
    ) -> Result<u64> {
        if kernarg_bytes > 4096 {
            return Err(Error::InvalidArgument {
                what: "sim program kernarg size (max 4096)",
                value: kernarg_bytes as u64,
            });
        }
        let mut p = self.exec.programs.write().unwrap_or_else(|p| p.into_inner());
        p.push(Program { kernarg_bytes, f: Box::new(f) });
        Ok((p.len() - 1) as u64)
    }

    /// Write `bytes` to device memory at `addr` (as a kernel does): memory made with
    /// [`SimDevice::alloc`] or by the device's allocator; any other address is an error.
    pub fn write_memory(&self, addr: u64, bytes: &[u8]) -> Result<()> {
        let (r, off) = self.exec.region(addr, bytes.len() as u64)?;
        r.write_bytes(off, bytes)
    }

    /// Read device memory at `addr` into `out` (as a kernel does); see [`SimDevice::write_memory`].
    pub fn read_memory(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        let (r, off) = self.exec.region(addr, out.len() as u64)?;
        r.read_bytes(off, out)
    }

    /// A zeroed block of device memory that copies may use; its device address is
    /// `region.addr()`.
    pub fn alloc(&self, bytes: usize) -> Result<Arc<HostRegion>> {
        let r = Arc::new(HostRegion::new(bytes.max(8), 64)?);
        self.exec.memory.write().unwrap_or_else(|p| p.into_inner()).insert(r.addr(), r.clone());
        Ok(r)
    }
}

/// Device memory of a [`SimDevice`]: host blocks the simulated copy engine may touch.
struct SimAllocator {
    exec: Arc<SimExec>,
}

/// Simulated memory the SIM device states it has ([`hcq::device::Device::limits`]): buffers come
/// from host memory, so the figure is a modest, fixed one rather than the host's RAM.
pub const SIM_MEMORY_BYTES: u64 = 4 << 30;
/// The largest single SIM buffer; larger allocations are refused before touching host memory.
pub const SIM_MAX_ALLOC_BYTES: u64 = 1 << 30;
/// Most 64-bit kernel arguments one SIM launch passes.
pub const SIM_MAX_KERNEL_ARGS: u32 = 64;

impl hcq::allocator::Allocator for SimAllocator {
    fn alloc(&self, size: u64, spec: &hcq::allocator::BufferSpec) -> Result<hcq::allocator::DeviceMemory> {
        if size == 0 {
            return Err(Error::InvalidArgument { what: "allocation size must be non-zero", value: 0 });
        }
        if spec.external.is_some() {
            return Err(Error::Unsupported { what: "external memory on SIM", value: size });
        }
        if size > SIM_MAX_ALLOC_BYTES {
            return Err(Error::LimitExceeded {
                what: "SIM allocation size vs largest SIM buffer",
                value: size,
                limit: SIM_MAX_ALLOC_BYTES,
            });
        }
        let bytes = usize::try_from(size).map_err(|_| Error::OutOfSpace {
            what: "sim memory",
            requested: size,
            capacity: 0,
        })?;
        let r = Arc::new(HostRegion::new(bytes, 4096)?);
        let addr = r.addr();
        let ptr = r.region().base();
        self.exec.memory.write().unwrap_or_else(|p| p.into_inner()).insert(addr, r);
        // SAFETY: `[addr, addr + size)` is the live HostRegion just inserted into the memory map,
        // which keeps it alive until `free` removes it; its CPU pointer is `ptr`.
        Ok(unsafe { hcq::allocator::DeviceMemory::from_raw_parts(addr, size, Some(ptr)) })
    }

    fn free(&self, mem: hcq::allocator::DeviceMemory, _spec: &hcq::allocator::BufferSpec) {
        if self.exec.memory.write().unwrap_or_else(|p| p.into_inner()).remove(&mem.addr()).is_none() {
            log::warn!("SIM: free of unknown memory at {:#x} ignored", mem.addr());
        }
    }
}

/// A program of a [`SimDevice`]: a registered host function called through the queues.
struct SimProgram {
    name: String,
    handle: u64,
    layout: hcq::program::KernargLayout,
    footprints: Vec<u64>,
    dev: std::sync::Weak<SimInner>,
}

struct SimInner {
    dev: SimDevice,
    alloc: hcq::allocator::LruAllocator,
    name: String,
    named: Mutex<BTreeMap<String, (usize, u64)>>,
}

impl hcq::program::Program for SimProgram {
    fn name(&self) -> &str {
        &self.name
    }

    fn is_on(&self, device: &dyn hcq::device::Device) -> bool {
        device.as_any().downcast_ref::<SimHandle>().is_some_and(|h| std::ptr::eq(Arc::as_ptr(&h.0), self.dev.as_ptr()))
    }

    fn buffer_footprints(&self) -> &[u64] {
        &self.footprints
    }

    unsafe fn call_raw(
        &self,
        bufs: &[u64],
        vals: &[i64],
        global: [u32; 3],
        local: [u32; 3],
        wait: bool,
    ) -> Result<hcq::program::LaunchReport> {
        let inner = self
            .dev
            .upgrade()
            .ok_or(Error::DeviceUnavailable { device: hcq::error::device_name("SIM"), reason: "device closed" })?;
        let hcq = inner.dev.engine();
        let mut args = [0u8; 4096];
        let n = self.layout.pack(bufs, vals, &mut args)?;
        let mut q = hcq.queue()?;
        // the run time is measured only for a call that waits (the slots are given back when
        // they drop, on every path)
        let times =
            if wait { Some((hcq::soft::HOST_SIGNALS.alloc(0), hcq::soft::HOST_SIGNALS.alloc(0))) } else { None };
        let v = {
            let mut s = hcq.lock();
            let ka = s.kernargs(&args[..n], n.max(8) as u64, 16)?;
            match &times {
                Some((start, end)) => q.timestamp(start)?.exec(self.handle, ka, global, local)?.timestamp(end)?,
                None => q.exec(self.handle, ka, global, local)?,
            };
            // SAFETY: the exec names this program's host function with a block packed by its
            // layout from the caller's addresses (the caller's contract, `call_raw`, covers the
            // memory they name); the timestamps go to slots owned here.
            unsafe { s.submit(0, &mut q)? }
        };
        let out = match &times {
            Some((start, end)) => {
                hcq.wait(v)?;
                Some(end.timestamp().saturating_sub(start.timestamp()) as f64 / 1e3)
            }
            None => None,
        };
        Ok(hcq::program::LaunchReport { stamp: Some(v), time_us: out })
    }
}

/// The `SIM` entry of a device registry: a handle implementing [`hcq::device::Device`].
pub struct SimHandle(Arc<SimInner>);

impl SimHandle {
    /// A registry-facing SIM device called `name`.
    pub fn open(name: &str) -> Result<Self> {
        let dev = SimDevice::new(name, &SoftConfig { engines: vec!["compute", "copy"], ..SoftConfig::default() })?;
        let alloc = hcq::allocator::LruAllocator::new(name, Box::new(SimAllocator { exec: dev.exec.clone() }));
        // buffer memory returns for reuse only once the device has passed its last use
        alloc.attach_completion(dev.soft().hcq_arc().clone());
        Ok(Self(Arc::new(SimInner { dev, alloc, name: name.to_string(), named: Mutex::new(BTreeMap::new()) })))
    }

    /// Load a program whose host function was registered under its name
    /// ([`SimHandle::register_named`]), to call through [`hcq::program::Program::call`].
    pub fn load_program(&self, image: &hcq::program::ProgramImage) -> Result<Arc<dyn hcq::program::Program>> {
        let named = self.0.named.lock().unwrap_or_else(|p| p.into_inner());
        let &(bytes, handle) = named
            .get(&image.name)
            .ok_or(Error::Unsupported { what: "SIM program: no host function registered under this name", value: 0 })?;
        let layout = hcq::program::KernargLayout::new(&image.signature)?;
        if layout.total_size() > bytes {
            return Err(Error::Mismatch {
                what: "SIM program kernarg size",
                expected: bytes as u64,
                found: layout.total_size() as u64,
            });
        }
        let footprints = hcq::program::buffer_footprints(&image.signature)?;
        Ok(Arc::new(SimProgram { name: image.name.clone(), handle, layout, footprints, dev: Arc::downgrade(&self.0) }))
    }

    /// The simulated device (registration of host functions, faults).
    pub fn sim(&self) -> &SimDevice {
        &self.0.dev
    }

    /// Register a host function under a program name so [`SimHandle::load_program`]
    /// finds it; `kernarg_bytes` is the size of its argument block.
    pub fn register_named(
        &self,
        name: &str,
        kernarg_bytes: usize,
        f: impl Fn(&[u8], [u32; 3], [u32; 3]) -> Result<()> + Send + Sync + 'static,
    ) -> Result<()> {
        let h = self.0.dev.register(kernarg_bytes, f)?;
        self.0.named.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), (kernarg_bytes, h));
        Ok(())
    }
}

impl hcq::device::Device for SimHandle {
    fn name(&self) -> &str {
        &self.0.name
    }
    fn allocator(&self) -> &hcq::allocator::LruAllocator {
        &self.0.alloc
    }
    fn synchronize(&self) -> Result<()> {
        self.0.dev.engine().synchronize()
    }
    fn properties(&self) -> hcq::device::DeviceProperties {
        hcq::device::DeviceProperties {
            kind: "sim".into(),
            arch: "soft".into(),
            cores: self.0.dev.engine().channels().len() as u32,
            memory_bytes: SIM_MEMORY_BYTES,
            timestamp_hz: 1_000_000_000,
            notes: "simulated command processors on host threads".into(),
        }
    }
    fn limits(&self) -> hcq::device::DeviceLimits {
        hcq::device::DeviceLimits {
            memory_bytes: SIM_MEMORY_BYTES,
            max_alloc_bytes: SIM_MAX_ALLOC_BYTES,
            alloc_align: 4096,
            max_kernel_args: SIM_MAX_KERNEL_ARGS,
            max_grid: [u32::MAX, 65_535, 65_535],
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn engine(&self) -> Option<&Engine> {
        Some(self.0.dev.engine())
    }
}

/// Number of SIM devices the `SIM` kind offers (`SIM`, `SIM:1`; `plug::SimKind`).
pub const SIM_DEVICES: u32 = 2;
