//! A device kind from outside the front door: `COUNT`, the host's cores through the soft
//! command processor (hcq-cpu's backend underneath), counting every kernel launch it runs.
//!
//! It is what adding a device looks like: one crate that implements the plug-in traits of
//! [`hcq_runner::plug`] — [`DeviceKind`] (names, probe, open), [`OpenDevice`] (load), and a
//! [`Backend`] with its [`Capabilities`] so that the generic runner is its [`LoadedModel`] — and
//! one registry line ([`register`]). `hcq-runtime` is not edited for it: the `hcq-count`
//! binary is the `hcq` command line with this kind registered first, and the `hcq-count-capi`
//! library (`capi/`) is `libhcq`'s C ABI with it registered when the library loads, which the
//! Python package loads through `HCQ_LIB`.

use hcq::device::{Device, DeviceLimits, DeviceProperties};
use hcq::engine::Engine;
use hcq::error::Result;
use hcq_bundle::hcqb::{Hcqb, ProgramRef};
use hcq_bundle::{Arch, ArgView};
use hcq_cpu::backend::CpuBackend;
use hcq_cpu::device::{CpuDevice, host_cores};
use hcq_runner::plug::{Capabilities, DeviceKind, LoadedModel, OpenDevice, Options, ProfilerRef};
use hcq_runner::{Backend, KernelLaunch, Runner};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Kernel launches every `COUNT` model of this process has run (each call adds its kernels).
static LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// Kernel launches run on `COUNT` devices so far in this process.
pub fn launches() -> u64 {
    LAUNCHES.load(Ordering::Relaxed)
}

/// The one registry line: add `COUNT` to the front door's registry of this process.
pub fn register() {
    hcq_runtime::register(Arc::new(CountKind));
}

/// The `COUNT` kind.
#[derive(Debug, Default)]
pub struct CountKind;

impl DeviceKind for CountKind {
    fn names(&self) -> &[&'static str] {
        &["COUNT"]
    }
    fn probe(&self, name: &str) -> Result<DeviceProperties> {
        let p = CpuDevice::new(name, host_cores())?.properties();
        Ok(DeviceProperties { kind: "count".into(), notes: format!("{} launches so far", launches()), ..p })
    }
    fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
        opts.refuse_unsupported(name, false, false)?;
        let dev = CpuDevice::new(name, host_cores())?;
        dev.soft().engine().profiler().set_enabled(opts.profile);
        Ok(Box::new(CountOpen { dev, allow_native: opts.allow_native }))
    }
}

struct CountOpen {
    dev: Arc<CpuDevice>,
    allow_native: bool,
}

impl OpenDevice for CountOpen {
    fn name(&self) -> &str {
        self.dev.name()
    }
    fn description(&self) -> String {
        format!("{} (counting launches, {} cores)", self.dev.name(), self.dev.cores())
    }
    fn load(&self, bundle: &Hcqb<'_>) -> Result<Box<dyn LoadedModel>> {
        let inner = CpuBackend::new(self.dev.clone()).allow_unchecked_level(self.allow_native);
        Ok(Box::new(Runner::load(CountBackend { inner, per_call: 0 }, bundle)?))
    }
}

/// The CPU backend, with every recorded kernel counted once per call.
pub struct CountBackend {
    inner: CpuBackend,
    per_call: u64,
}

impl Backend for CountBackend {
    type Program = <CpuBackend as Backend>::Program;
    fn archs(&self) -> &[Arch] {
        self.inner.archs()
    }
    fn limits(&self) -> DeviceLimits {
        self.inner.limits()
    }
    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        self.inner.prepare(bundle, arch)
    }
    fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        self.inner.alloc(index, nbytes, initial)
    }
    fn load_program(&mut self, index: usize, p: &ProgramRef<'_>, arch: Arch, object: &[u8]) -> Result<Self::Program> {
        self.inner.load_program(index, p, arch, object)
    }
    fn record_kernel(&mut self, program: &Self::Program, launch: &KernelLaunch<'_, '_>) -> Result<()> {
        self.inner.record_kernel(program, launch)?;
        self.per_call += 1;
        Ok(())
    }
    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.inner.record_copy(dst, src, bytes)
    }
    fn finish(&mut self) -> Result<()> {
        self.inner.finish()
    }
    fn replay(&mut self) -> Result<()> {
        self.inner.replay()?;
        LAUNCHES.fetch_add(self.per_call, Ordering::Relaxed);
        Ok(())
    }
    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        self.inner.read(buffer, offset, out)
    }
    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        self.inner.write(buffer, offset, data)
    }
}

/// What COUNT does beyond a blocking call is the CPU's: submit, host pointers, the profiler;
/// binding caller memory keeps the honest default (unsupported on COUNT).
impl Capabilities for CountBackend {
    fn device_name(&self) -> &str {
        "COUNT"
    }
    fn engine(&self) -> Option<&Engine> {
        self.inner.engine()
    }
    fn submit(&mut self) -> Result<u64> {
        let stamp = self.inner.submit()?;
        LAUNCHES.fetch_add(self.per_call, Ordering::Relaxed);
        Ok(stamp)
    }
    fn host_ptr(&self, view: ArgView) -> Option<*const u8> {
        self.inner.host_ptr(view)
    }
    fn profiler(&self) -> Option<ProfilerRef> {
        self.inner.profiler()
    }
}
