//! The device layer of libhcq: the one module that knows which crate drives which device.
//!
//! It has the shape of the library front door (`hcq-runtime`: `open(name) -> Device`,
//! `device.load(path or bytes) -> Model`, the model's tensors with name, shape and dtype,
//! `set_input`, `run` or `submit` + `wait`, reading outputs, profiling), built today the way the
//! `hcq run` command builds models: the core runner ([`Runner`]) over `CpuBackend`,
//! `SimBackend` or `QcomBackend`. Everything else of the crate (the C surface, handles, errors)
//! uses only what this module exports, so the front door can replace its insides.
//!
//! Two things go beyond today's front door, both on the CPU device only:
//! - [`Model::bind`]: an input read from the caller's memory, zero-copy
//!   (`hcq_cpu::backend::CpuBackend::rebind` moves the kernels' arguments);
//! - [`Model::output_ptr`] points into the output's device memory (other devices: into a host
//!   copy made once per call it is asked for).

use hcq::bundle::ArgView;
use hcq::bundle::hcqb::{self, Hcqb, LaunchRef};
use hcq::device::ReportList;
use hcq::dtype::DType;
use hcq::error::{Error, Result, ResultExt};
use hcq::profile::{Event, EventKind};
use hcq::runner::{Backend, Runner};
use hcq::stamp::Stamp;
use hcq_cpu::backend::CpuBackend;
use hcq_cpu::device::CpuDevice;
use hcq_qcom::device::{QcomBackend, QcomDevice};
use hcq_sim::cpu::SimBackend;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Alignment a bound input's memory needs (the kernels' vector loads: tinygrad's `float4` is
/// 16-aligned).
pub(crate) const BIND_ALIGN: u64 = 16;

/// How a device is opened.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Options {
    /// Record events from the open on (buffer allocations at load, every call); QCOM: every
    /// launch bracketed by always-on-counter timestamps.
    pub profile: bool,
    /// Run objects whose CPU level cannot be verified (bundles exported with `native`).
    pub allow_native: bool,
}

pub(crate) use hcq_runtime::{bundle_bytes, canonical_name, default_name, registry};

/// The PASS/FAIL lines of `hcq devices`.
pub(crate) fn devices_report() -> String {
    let reports = registry().enumerate();
    ReportList(&reports).to_string().trim_end().to_string()
}

enum Backed {
    Cpu(Arc<CpuDevice>),
    Sim(Arc<hcq_sim::SimHandle>),
    Qcom(Arc<QcomDevice>),
}

/// An opened device that runs bundles.
pub(crate) struct Device {
    name: String,
    description: String,
    opts: Options,
    backed: Backed,
}

/// Open device `name` (empty: [`default_name`]).
pub(crate) fn open(name: &str, opts: Options) -> Result<Device> {
    let name = if name.trim().is_empty() { default_name() } else { canonical_name(name) };
    let ctx = || format!("device {name}");
    let is_sim = name == "SIM"
        || name
            .strip_prefix("SIM:")
            .and_then(|i| i.parse::<u32>().ok())
            .is_some_and(|i| i < hcq_sim::device::SIM_DEVICES);
    let (backed, description) = if name == "CPU" {
        let cpu = CpuDevice::new("CPU", hcq_cpu::device::host_cores()).with_context(ctx)?;
        // from before the load, so the trace shows the buffer allocations too
        cpu.soft().engine().profiler().set_enabled(opts.profile);
        let d = format!("{name} ({} cores)", cpu.cores());
        (Backed::Cpu(cpu), d)
    } else if is_sim {
        let dev = Arc::new(hcq_sim::SimHandle::open(&name).with_context(ctx)?);
        dev.sim().engine().profiler().set_enabled(opts.profile);
        let d = format!("{name} ({})", hcq::device::Device::properties(&*dev).notes);
        (Backed::Sim(dev), d)
    } else if let Some(dev) = hcq_runtime::open_qcom(&name, false) {
        let dev = dev.with_context(ctx)?;
        let d = format!("{name} ({})", hcq::device::Device::properties(&*dev).notes);
        (Backed::Qcom(dev), d)
    } else {
        // open it anyway, so an unknown or absent device says why
        registry().open(&name).with_context(ctx)?;
        return Err(Error::Unsupported {
            what: "this device cannot run bundle kernels (CPU, SIM, QCOM and QCOM:SIM can)",
            value: 0,
        })
        .with_context(ctx);
    };
    Ok(Device { name, description, opts, backed })
}

/// One input or output of a model.
#[derive(Clone, Debug)]
pub(crate) struct Tensor {
    /// `input0`, `output0`, ... (bundles record no names).
    pub name: String,
    /// Row-major shape.
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
    /// Size in bytes.
    pub nbytes: u64,
}

// one per model, never moved on a call: the size difference costs nothing
#[allow(clippy::large_enum_variant)]
enum Loaded {
    Cpu(Runner<CpuBackend>),
    Sim(Runner<SimBackend>),
    Qcom(Runner<QcomBackend>),
}

macro_rules! each {
    ($self:expr, $r:ident => $e:expr) => {
        match $self {
            Loaded::Cpu($r) => $e,
            Loaded::Sim($r) => $e,
            Loaded::Qcom($r) => $e,
        }
    };
}

/// Why input `view` cannot be bound to caller memory, if it cannot: a kernel argument that
/// straddles its edge, a copy launch or an output that touches it.
fn bind_refusal(file: &Hcqb<'_>, view: &ArgView) -> Option<&'static str> {
    let (start, end) = (view.offset, view.offset.saturating_add(view.nbytes));
    let overlaps = |v: &ArgView| v.buffer == view.buffer && v.offset < end && start < v.offset.saturating_add(v.nbytes);
    let inside = |v: &ArgView| v.buffer == view.buffer && v.offset >= start && v.offset.saturating_add(v.nbytes) <= end;
    for l in file.launches() {
        match l {
            LaunchRef::Kernel(k) => {
                if k.args().any(|a| overlaps(&a) && !inside(&a)) {
                    return Some("a kernel argument reaches across the input's edge");
                }
            }
            LaunchRef::Copy { dst, src } => {
                if overlaps(&dst) || overlaps(&src) {
                    return Some("a copy launch touches the input (the copy engine copies device memory only)");
                }
            }
        }
    }
    if file.outputs().any(|o| overlaps(&o.view)) {
        return Some("an output shares memory with the input");
    }
    None
}

impl Device {
    /// One line about the device.
    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    /// Load the bundle at `path` (a v1 directory or a `.hcqb` file).
    pub(crate) fn load_path(&self, path: &Path) -> Result<Model> {
        let bytes = bundle_bytes(path)?;
        self.load_bytes(&bytes, &path.display().to_string())
    }

    /// Load a bundle from the bytes of a `.hcqb` file (`label` names it in errors).
    pub(crate) fn load_bytes(&self, bytes: &[u8], label: &str) -> Result<Model> {
        let ctx = || format!("bundle {label}");
        let file = Hcqb::parse(bytes).with_context(ctx)?;
        let tensor = |name: String, t: &hcqb::TensorRef<'_>| Tensor {
            name,
            shape: t.shape().collect(),
            dtype: t.view.dtype,
            nbytes: t.view.nbytes,
        };
        let allow = self.opts.allow_native;
        let (runner, bindable) = match &self.backed {
            Backed::Cpu(cpu) => {
                let b = CpuBackend::new(cpu.clone()).allow_unchecked_level(allow);
                (Loaded::Cpu(Runner::load(b, &file).with_context(ctx)?), true)
            }
            Backed::Sim(dev) => {
                let b = SimBackend::new(dev.clone()).allow_unchecked_level(allow);
                (Loaded::Sim(Runner::load(b, &file).with_context(ctx)?), false)
            }
            Backed::Qcom(dev) => {
                let mut b = QcomBackend::new(dev.clone())?;
                b.set_profile(self.opts.profile)?;
                let r = Runner::load(b, &file).with_context(ctx)?;
                if let Some(h) = r.backend().engine() {
                    h.profiler().set_enabled(self.opts.profile);
                }
                (Loaded::Qcom(r), false)
            }
        };
        // the views of the graph the runner runs (a bundle with one graph per target)
        let graph = each!(&runner, r => r.graph());
        let io = graph.and_then(|g| file.graph_view(g)).unwrap_or(file);
        let inputs: Vec<Tensor> = io.inputs().enumerate().map(|(i, t)| tensor(format!("input{i}"), &t)).collect();
        let outputs: Vec<Tensor> = io.outputs().enumerate().map(|(i, t)| tensor(format!("output{i}"), &t)).collect();
        let in_views: Vec<ArgView> = io.inputs().map(|t| t.view).collect();
        let out_views: Vec<ArgView> = io.outputs().map(|t| t.view).collect();
        let bindable = if bindable { in_views.iter().map(|v| bind_refusal(&io, v)).collect() } else { Vec::new() };
        // host copies for `output_ptr` on devices whose memory is not host memory, made once here
        let staging = match runner {
            Loaded::Cpu(_) => Vec::new(),
            _ => outputs.iter().map(|t| vec![0u8; t.nbytes as usize]).collect(),
        };
        let name = match &runner {
            Loaded::Cpu(r) => r.name().to_string(),
            Loaded::Sim(r) => r.name().to_string(),
            Loaded::Qcom(r) => r.name().to_string(),
        };
        let bound = vec![None; inputs.len()];
        let mut m = Model {
            runner,
            bound,
            bindable,
            inputs,
            outputs,
            in_views,
            out_views,
            staging,
            device: self.name.clone(),
            name,
            pending: None,
            call_name: None,
            calls: 0,
        };
        if self.opts.profile {
            m.call_name = m.engine().map(|h| h.profiler().intern(&format!("call {}", m.name)));
        }
        Ok(m)
    }
}

/// A bundle loaded on a device.
pub(crate) struct Model {
    runner: Loaded,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    in_views: Vec<ArgView>,
    out_views: Vec<ArgView>,
    /// CPU: per input, why it cannot be bound (`None`: it can). Empty on other devices.
    bindable: Vec<Option<&'static str>>,
    /// Per input, the caller's memory it is bound to.
    bound: Vec<Option<u64>>,
    staging: Vec<Vec<u8>>,
    device: String,
    name: String,
    /// The timeline value of a submitted call not waited for yet.
    pending: Option<u64>,
    /// While profiling: the interned name of the call events.
    call_name: Option<u32>,
    calls: u64,
}

fn index(what: &'static str, i: usize, n: usize) -> Result<()> {
    if i < n { Ok(()) } else { Err(Error::OutOfBounds { what, offset: i as u64, len: 1, limit: n as u64 }) }
}

impl Model {
    /// The model's name (the bundle's).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The device's canonical name.
    pub(crate) fn device(&self) -> &str {
        &self.device
    }

    /// The inputs.
    pub(crate) fn inputs(&self) -> &[Tensor] {
        &self.inputs
    }

    /// The outputs.
    pub(crate) fn outputs(&self) -> &[Tensor] {
        &self.outputs
    }

    /// Whether a submitted call was not waited for yet.
    pub(crate) fn in_flight(&self) -> bool {
        self.pending.is_some()
    }

    fn engine(&self) -> Option<&hcq::engine::Engine> {
        match &self.runner {
            Loaded::Cpu(r) => Some(r.backend().device().soft().engine()),
            Loaded::Sim(r) => Some(r.backend().device().sim().engine()),
            Loaded::Qcom(r) => r.backend().engine().map(|h| &**h),
        }
    }

    fn settle(&mut self) -> Result<()> {
        if self.pending.is_some() { self.wait(None).map(drop) } else { Ok(()) }
    }

    /// Copy `data` (exactly the input's size) into input `i`, after the calls in flight.
    /// Refused while the input is bound to caller memory.
    pub(crate) fn set_input(&mut self, i: usize, data: &[u8]) -> Result<()> {
        index("model input index", i, self.inputs.len())?;
        if self.bound[i].is_some() {
            return Err(Error::InvalidArgument {
                what: "input is bound to caller memory (write that memory, or unbind it first)",
                value: i as u64,
            });
        }
        self.settle()?;
        each!(&self.runner, r => r.set_input(i, data)).with_context(|| format!("input {i}"))
    }

    /// Bind input `i` to the caller's memory at `ptr` (exactly the input's size, aligned to
    /// [`BIND_ALIGN`]); a null `ptr` unbinds it (the model's own buffer again, with the
    /// contents it had before the bind). Waits for the calls in flight first. CPU only.
    ///
    /// # Safety
    /// `[ptr, ptr + len)` stays valid for reads and writes, and is written by no one else while
    /// a call runs, until the input is unbound or rebound or the model is dropped (each of
    /// which waits for the calls that use it).
    pub(crate) unsafe fn bind(&mut self, i: usize, ptr: *mut u8, len: usize) -> Result<()> {
        index("model input index", i, self.inputs.len())?;
        let ctx = || format!("bind input {i}");
        let Loaded::Cpu(r) = &mut self.runner else {
            return Err(Error::Unsupported {
                what: "zero-copy input binding is implemented for the CPU device only (QCOM: KGSL MAP_USER_MEM not yet)",
                value: 0,
            })
            .with_context(ctx);
        };
        if let Some(why) = self.bindable[i] {
            return Err(Error::Unsupported { what: why, value: i as u64 }).with_context(ctx);
        }
        let v = self.in_views[i];
        let own = r.backend().buffer_addrs()[v.buffer as usize] + v.offset;
        let to = if ptr.is_null() {
            own
        } else {
            if len as u64 != v.nbytes {
                return Err(Error::Mismatch {
                    what: "bound memory size vs input size",
                    expected: v.nbytes,
                    found: len as u64,
                })
                .with_context(ctx);
            }
            if !(ptr as u64).is_multiple_of(BIND_ALIGN) {
                return Err(Error::Misaligned { what: "bound memory address", value: ptr as u64, align: BIND_ALIGN })
                    .with_context(ctx);
            }
            ptr as u64
        };
        let from = self.bound[i].unwrap_or(own);
        if from != to {
            if let Some(s) = self.pending.take() {
                self.engine().map_or(Ok(()), |h| h.wait(Stamp::new(s)))?;
            }
            let Loaded::Cpu(r) = &mut self.runner else { unreachable!("matched above") };
            // The views of the input are either inside it or disjoint from it (`bind_refusal`),
            // and no copy launch touches it. The caller's contract covers `to`; `own` is the
            // model's buffer.
            // SAFETY: the memory at `to` is valid as `rebind` requires, until it is rebound.
            unsafe { r.backend_mut().rebind(from, v.nbytes, to) }.with_context(ctx)?;
        }
        self.bound[i] = (to != own).then_some(to);
        Ok(())
    }

    /// One forward pass: submit and wait.
    pub(crate) fn run(&mut self) -> Result<()> {
        self.settle()?;
        let t0 = if self.call_name.is_some() { hcq::soft::threaded::soft_clock_ns() } else { 0 };
        each!(&mut self.runner, r => r.call())?;
        self.record_call(t0);
        Ok(())
    }

    fn record_call(&mut self, start_ns: u64) {
        if let (Some(n), Some(h)) = (self.call_name, self.engine()) {
            let end_ns = hcq::soft::threaded::soft_clock_ns();
            h.profiler().record(Event { kind: EventKind::Call, name: n, start_ns, end_ns, arg: self.calls });
        }
        self.calls += 1;
    }

    /// Start one forward pass without waiting for it (a call still in flight is waited for
    /// first).
    pub(crate) fn submit(&mut self) -> Result<()> {
        self.settle()?;
        let stamp = match &mut self.runner {
            Loaded::Cpu(r) => r.backend_mut().submit()?,
            Loaded::Sim(r) => r.backend_mut().submit()?,
            Loaded::Qcom(r) => r.backend_mut().submit_call()?.get(),
        };
        self.pending = Some(stamp);
        self.calls += 1;
        Ok(())
    }

    /// Wait for the submitted call (at once when none is in flight): true when it is done.
    /// With `timeout`, a call not done by then gives false and stays in flight (wait again, or
    /// drop the model, which waits); without, the device's own policy applies.
    pub(crate) fn wait(&mut self, timeout: Option<Duration>) -> Result<bool> {
        let Some(stamp) = self.pending else { return Ok(true) };
        let Some(h) = self.engine() else {
            self.pending = None;
            return Ok(true);
        };
        let st = Stamp::new(stamp);
        let res = match timeout {
            Some(t) => Self::poll(h, st, t),
            None => Ok(true),
        };
        let done = match res {
            Ok(false) => return Ok(false),
            Ok(true) => match &self.runner {
                Loaded::Qcom(r) => r.backend().wait(st),
                _ => h.wait(st),
            },
            Err(e) => Err(e),
        };
        self.pending = None;
        done.map(|()| true)
    }

    /// Poll for `st` until `t` has passed: true when it was reached, false on time out; the
    /// device's fault or hang is an error.
    fn poll(h: &hcq::engine::Engine, st: Stamp, t: Duration) -> Result<bool> {
        let deadline = Instant::now() + t;
        let mut polls = 0u32;
        while !h.timeline().passed(st) {
            h.timeline().check()?;
            if Instant::now() >= deadline {
                return Ok(false);
            }
            polls = polls.wrapping_add(1);
            if polls < 256 {
                core::hint::spin_loop();
            } else if polls < 2048 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        Ok(true)
    }

    /// Copy output `i` into `out` (exactly its size), after the calls in flight.
    pub(crate) fn read_output(&mut self, i: usize, out: &mut [u8]) -> Result<()> {
        index("model output index", i, self.outputs.len())?;
        let v = self.out_views[i];
        if out.len() as u64 != v.nbytes {
            return Err(Error::Mismatch { what: "output size", expected: v.nbytes, found: out.len() as u64 })
                .with_context(|| format!("output {i}"));
        }
        self.settle()?;
        each!(&self.runner, r => r.backend().read(v.buffer as usize, v.offset, out))
    }

    /// Where output `i`'s bytes can be read after the calls in flight, valid until the next
    /// call, input write, bind or drop: the device memory itself on the CPU, a host copy made
    /// now elsewhere.
    pub(crate) fn output_ptr(&mut self, i: usize) -> Result<*const u8> {
        index("model output index", i, self.outputs.len())?;
        self.settle()?;
        let v = self.out_views[i];
        match &self.runner {
            Loaded::Cpu(r) => Ok((r.backend().buffer_addrs()[v.buffer as usize] + v.offset) as usize as *const u8),
            _ => {
                let mut buf = core::mem::take(&mut self.staging[i]);
                let res = self.read_output(i, &mut buf);
                self.staging[i] = buf;
                res.map(|()| self.staging[i].as_ptr())
            }
        }
    }

    /// Compare the outputs with the bundle's expected bytes: `(ok, outputs compared)`.
    pub(crate) fn check(&mut self) -> Result<(bool, usize)> {
        self.settle()?;
        let r = each!(&self.runner, r => r.check())?;
        Ok((r.ok, r.compared))
    }

    /// Start recording events (the device's profiler; earlier events are dropped): every call
    /// from here on, and on the CPU and SIM each kernel and copy.
    pub(crate) fn profile_begin(&mut self) -> Result<()> {
        self.settle()?;
        let name = format!("call {}", self.name);
        let Some(h) = self.engine() else {
            return Err(Error::Unsupported {
                what: "profiling before the model's first launch was recorded",
                value: 0,
            });
        };
        let p = h.profiler();
        p.clear();
        p.set_enabled(true);
        self.call_name = Some(p.intern(&name));
        Ok(())
    }

    /// Write what was recorded as a Perfetto (Chrome trace JSON) file at `path` and stop
    /// recording; returns the number of events.
    pub(crate) fn profile_end(&mut self, path: &Path) -> Result<usize> {
        self.settle()?;
        if self.call_name.is_none() {
            return Err(Error::InvalidArgument { what: "profile end without a profile begin", value: 0 });
        }
        let Some(h) = self.engine() else { return Ok(0) };
        let p = h.profiler();
        let json = hcq::profile::chrome::trace_json(&[(self.device.as_str(), p)]);
        let n = p.events().len();
        p.set_enabled(false);
        self.call_name = None;
        std::fs::write(path, json)
            .map_err(|e| Error::Os { what: "write profile", errno: e.raw_os_error().unwrap_or(0) })
            .with_context(|| path.display().to_string())?;
        Ok(n)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // nothing is freed under the device: the call in flight finishes first (the backends'
        // own drops wait for their last submission too)
        if let Err(e) = self.settle() {
            log::warn!("closing model {}: waiting for its call in flight: {e}", self.name);
        }
    }
}
