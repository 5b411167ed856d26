//! A bundle loaded on a device ([`crate::Device::load`]): its tensors, inputs by copy or bound
//! to the caller's memory, runs (blocking, or submit and wait), outputs, check and profile.

use crate::{Arch, CheckReport, DType, Error, LoadedModel, ProfilerRef, Result};
use hcq::error::ResultExt;
use hcq::profile::{Event, EventKind};
use hcq_bundle::hcqb::{self, Hcqb};
use std::path::Path;
use std::time::Duration;

/// One input or output of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// `input0`, `output0`, ... (by position).
    pub name: String,
    /// Row-major shape.
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
    /// Size in bytes.
    pub nbytes: u64,
}

impl Tensor {
    fn new(name: String, t: &hcqb::TensorRef<'_>) -> Self {
        Tensor { name, shape: t.shape().collect(), dtype: t.view.dtype, nbytes: t.view.nbytes }
    }
}

/// A bundle loaded on a device ([`Device::load`](crate::Device::load)).
pub struct Model {
    runner: Box<dyn LoadedModel>,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    device: String,
    /// The timeline value of a call [`Model::submit`]ted and not waited for yet.
    pending: Option<u64>,
    /// Per input: its view, why it cannot be bound to caller memory (if so), and the caller
    /// memory it is bound to ([`Model::bind_input`]).
    in_views: Vec<hcq_bundle::ArgView>,
    bind_refused: Vec<Option<&'static str>>,
    bound: Vec<Option<u64>>,
    out_views: Vec<hcq_bundle::ArgView>,
    /// While profiling: the interned name of the call events ([`Model::run`] records one).
    call_name: Option<u32>,
    /// Calls run or submitted (the call events' argument).
    calls: u64,
}

/// The alignment in bytes the caller's memory of a bound input needs
/// ([`Model::bind_input`]): the kernels' vector loads (tinygrad's `float4` is 16-aligned). On
/// QCOM an input a kernel reads as an image needs 64 (its texture base); that bind is refused
/// with the launch named.
pub const BIND_ALIGN: usize = 16;

/// Why input `view` of `file` cannot be bound to caller memory: a kernel argument that reaches
/// across its edge, a copy launch or an output that touches it.
fn bind_refusal(file: &Hcqb<'_>, view: &hcq_bundle::ArgView) -> Option<&'static str> {
    use hcq_bundle::hcqb::LaunchRef;
    let (start, end) = (view.offset, view.offset.saturating_add(view.nbytes));
    let overlaps = |v: &hcq_bundle::ArgView| {
        v.buffer == view.buffer && v.offset < end && start < v.offset.saturating_add(v.nbytes)
    };
    let inside = |v: &hcq_bundle::ArgView| {
        v.buffer == view.buffer && v.offset >= start && v.offset.saturating_add(v.nbytes) <= end
    };
    for l in file.launches() {
        match l {
            LaunchRef::Kernel(k) if k.args().any(|a| overlaps(&a) && !inside(&a)) => {
                return Some("a kernel argument reaches across the input's edge");
            }
            LaunchRef::Copy { dst, src } if overlaps(&dst) || overlaps(&src) => {
                return Some("a copy launch touches the input (the copy engine copies device memory only)");
            }
            _ => {}
        }
    }
    file.outputs().any(|o| overlaps(&o.view)).then_some("an output shares memory with the input")
}

fn lookup(what: &'static str, list: &[Tensor], name: &str) -> Result<usize> {
    list.iter().position(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = list.iter().map(|t| t.name.as_str()).collect();
        Error::InvalidArgument { what, value: list.len() as u64 }
            .context(format!("no tensor {name:?} (the model has {})", names.join(", ")))
    })
}

impl Model {
    /// The model `runner` loaded from `file` on device `device` (its canonical name); with
    /// `profile`, every run records a call event.
    pub(crate) fn new(runner: Box<dyn LoadedModel>, file: &Hcqb<'_>, device: String, profile: bool) -> Model {
        // the views of the graph the runner runs (a bundle with one graph per target); every
        // graph takes the same inputs and returns the same outputs (shapes included)
        let graph = runner.graph();
        let io = graph.and_then(|g| file.graph_view(g)).unwrap_or(*file);
        let inputs = io.inputs().enumerate().map(|(i, t)| Tensor::new(format!("input{i}"), &t)).collect();
        let outputs = io.outputs().enumerate().map(|(i, t)| Tensor::new(format!("output{i}"), &t)).collect();
        let in_views: Vec<hcq_bundle::ArgView> = io.inputs().map(|t| t.view).collect();
        let out_views: Vec<hcq_bundle::ArgView> = io.outputs().map(|t| t.view).collect();
        let bind_refused = in_views.iter().map(|v| bind_refusal(&io, v)).collect();
        let bound = vec![None; in_views.len()];
        let mut m = Model {
            runner,
            inputs,
            outputs,
            device,
            pending: None,
            in_views,
            out_views,
            bind_refused,
            bound,
            call_name: None,
            calls: 0,
        };
        if profile {
            let name = format!("call {}", m.runner.name());
            m.call_name = m.runner.profiler().map(|p| p.profiler().intern(&name));
        }
        m
    }

    /// The inputs (what [`Model::set_input`] takes).
    pub fn inputs(&self) -> &[Tensor] {
        &self.inputs
    }

    /// The outputs (what [`Model::output`] reads).
    pub fn outputs(&self) -> &[Tensor] {
        &self.outputs
    }

    /// The device's canonical name.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The model's name (as the bundle records it).
    pub fn name(&self) -> &str {
        self.runner.name()
    }

    /// The architecture whose objects run (`x86_64`, `aarch64`, `adreno_a630`).
    pub fn arch(&self) -> Arch {
        self.runner.arch()
    }

    /// Kernel launches per call.
    pub fn kernels_per_call(&self) -> usize {
        self.runner.kernels_per_call()
    }

    /// Copy `data` (exactly the input's size) into input `name` (`"input0"`). Waits for a
    /// submitted call first. Refused while the input is bound to caller memory
    /// ([`Model::bind_input`]: write that memory instead, or bind the input back first).
    pub fn set_input(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let i = lookup("model input name", &self.inputs, name)?;
        self.set_input_at(i, data)
    }

    /// [`Model::set_input`] by position.
    pub fn set_input_at(&mut self, i: usize, data: &[u8]) -> Result<()> {
        index("model input index", i, self.inputs.len())?;
        if self.bound[i].is_some() {
            return Err(Error::InvalidArgument {
                what: "input is bound to caller memory (write that memory, or bind it back first)",
                value: i as u64,
            })
            .with_context(|| format!("set_input {}", self.inputs[i].name));
        }
        self.settle()?;
        self.runner.set_input(i, data).with_context(|| format!("set_input {}", self.inputs[i].name))
    }

    /// Bind input `name` to the caller's `len` bytes at `ptr`, zero-copy: every later call
    /// reads the input there (the caller writes it between calls, not while one runs); a null
    /// `ptr` binds it back to the model's own memory (with the contents it had before). On
    /// `CPU` the kernels take the pointer; on `QCOM`/`QCOM:SIM` the memory is mapped for the GPU
    /// (KGSL `MAP_USER_MEM`, [`QcomBackend::bind_host`](hcq_qcom::device::QcomBackend::bind_host): its CPU cache lines are cleaned when it
    /// is bound, so later writes reach the GPU where the CPU cache is coherent with it, as
    /// tinygrad assumes) and the launches' constant blocks point at it. Waits for a submitted
    /// call first. Refused for `SIM`, for a size other than the input's, a pointer not
    /// [`BIND_ALIGN`]-aligned, and inputs whose memory a copy launch, an output or a kernel
    /// argument reaching across its edge also uses.
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must stay allocated and valid for the reads (and writes) the kernels
    /// make, each time a call runs, until the input is bound elsewhere or back, or the model is
    /// dropped — both wait for the calls that use it — and no one else may write it while a
    /// call runs.
    pub unsafe fn bind_input(&mut self, name: &str, ptr: *mut u8, len: usize) -> Result<()> {
        let i = lookup("model input name", &self.inputs, name)?;
        // SAFETY: the caller's contract is this function's.
        unsafe { self.bind_input_at(i, ptr, len) }
    }

    /// [`Model::bind_input`] by position.
    ///
    /// # Safety
    /// As [`Model::bind_input`].
    pub unsafe fn bind_input_at(&mut self, i: usize, ptr: *mut u8, len: usize) -> Result<()> {
        index("model input index", i, self.inputs.len())?;
        let v = self.in_views[i];
        let name = self.inputs[i].name.clone();
        let ctx = || format!("bind_input {name}");
        if let Some(why) = self.bind_refused[i] {
            return Err(Error::Unsupported { what: why, value: i as u64 }).with_context(ctx);
        }
        if !ptr.is_null() {
            if len as u64 != v.nbytes {
                return Err(Error::Mismatch {
                    what: "bound memory size vs input size",
                    expected: v.nbytes,
                    found: len as u64,
                })
                .with_context(ctx);
            }
            if !(ptr as usize).is_multiple_of(BIND_ALIGN) {
                return Err(Error::Misaligned {
                    what: "bound memory address",
                    value: ptr as u64,
                    align: BIND_ALIGN as u64,
                })
                .with_context(ctx);
            }
        }
        self.settle()?;
        // SAFETY: the caller's contract covers `ptr`; the view's kernel arguments lie inside it
        // or apart from it (`bind_refusal`), and no call is in flight (settled above).
        self.bound[i] = unsafe { self.runner.bind_host(v, self.bound[i], ptr) }.with_context(ctx)?;
        Ok(())
    }

    /// Whether input `i` is bound to caller memory ([`Model::bind_input`]).
    pub fn is_bound(&self, i: usize) -> bool {
        self.bound.get(i).is_some_and(Option::is_some)
    }

    /// One forward pass: submit and wait.
    #[inline]
    pub fn run(&mut self) -> Result<()> {
        self.settle()?;
        let t0 = if self.call_name.is_some() { hcq::soft::threaded::soft_clock_ns() } else { 0 };
        self.runner.call()?;
        self.record_call(t0);
        Ok(())
    }

    /// While profiling: the call's span as an event (the run's own, around its kernels).
    fn record_call(&mut self, start_ns: u64) {
        if let (Some(n), Some(h)) = (self.call_name, self.runner.profiler()) {
            let end_ns = hcq::soft::threaded::soft_clock_ns();
            h.profiler().record(Event { kind: EventKind::Call, name: n, start_ns, end_ns, arg: self.calls });
        }
        self.calls += 1;
    }

    /// Start one forward pass without waiting for it; [`Model::wait`] waits. A second submit
    /// without a wait in between waits for the first.
    pub fn submit(&mut self) -> Result<()> {
        self.settle()?;
        let stamp = self.runner.submit()?;
        self.pending = Some(stamp);
        self.calls += 1;
        Ok(())
    }

    /// Whether a call [`Model::submit`]ted was not waited for yet.
    pub fn in_flight(&self) -> bool {
        self.pending.is_some()
    }

    /// Wait for the call [`Model::submit`] started (at once when none is in flight). With a
    /// timeout, a device that makes no progress for that long is hung and the wait is an
    /// [`Error::Timeout`]; without one, the device's policy applies (30 s by default).
    /// [`Model::wait_for`] gives up without hanging the device.
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<()> {
        let Some(stamp) = self.pending else { return Ok(()) };
        // the timeout is this wait's own: the device's shared wait policy is not touched
        let res = self.runner.wait(stamp, timeout);
        self.pending = None;
        res
    }

    /// Wait up to `timeout` for the call [`Model::submit`] started: `true` when it is done (at
    /// once when none is in flight), `false` when it is still running after `timeout` — it stays
    /// in flight (wait again, or drop the model, which waits) and the device is not declared
    /// hung. A fault or hang of the device is an error.
    pub fn wait_for(&mut self, timeout: Duration) -> Result<bool> {
        let Some(stamp) = self.pending else { return Ok(true) };
        let done = self.runner.try_wait(stamp, timeout);
        if !matches!(done, Ok(false)) {
            self.pending = None;
        }
        done
    }

    fn settle(&mut self) -> Result<()> {
        if self.pending.is_some() { self.wait(None) } else { Ok(()) }
    }

    /// The bytes of output `name` (`"output0"`).
    pub fn output(&mut self, name: &str) -> Result<Vec<u8>> {
        let i = lookup("model output name", &self.outputs, name)?;
        self.output_at(i)
    }

    /// [`Model::output`] by position.
    pub fn output_at(&mut self, i: usize) -> Result<Vec<u8>> {
        index("model output index", i, self.outputs.len())?;
        self.settle()?;
        self.runner.output(i)
    }

    /// Copy output `name` into `out` (exactly its size).
    pub fn read_output(&mut self, name: &str, out: &mut [u8]) -> Result<()> {
        let i = lookup("model output name", &self.outputs, name)?;
        self.read_output_at(i, out)
    }

    /// [`Model::read_output`] by position: straight from the device memory into `out`, with no
    /// allocation (after a submitted call).
    pub fn read_output_at(&mut self, i: usize, out: &mut [u8]) -> Result<()> {
        index("model output index", i, self.outputs.len())?;
        let v = self.out_views[i];
        if out.len() as u64 != v.nbytes {
            return Err(Error::Mismatch { what: "model output size", expected: v.nbytes, found: out.len() as u64 })
                .with_context(|| format!("output {}", self.outputs[i].name));
        }
        self.settle()?;
        self.runner.read(v.buffer as usize, v.offset, out)
    }

    /// Output `i`'s bytes where they lie, when the device's memory is the host's (`CPU`):
    /// `Some(pointer)` to [`Tensor::nbytes`] bytes, valid until the next call, input write,
    /// bind or drop of the model (after a submitted call). `None` on the other devices (read
    /// them with [`Model::read_output_at`]).
    pub fn output_in_place(&mut self, i: usize) -> Result<Option<*const u8>> {
        index("model output index", i, self.outputs.len())?;
        self.settle()?;
        let v = self.out_views[i];
        Ok(self.runner.host_ptr(v))
    }

    /// Compare every output that has expected bytes in the bundle with what the last call left.
    pub fn check(&mut self) -> Result<CheckReport> {
        self.settle()?;
        self.runner.check()
    }

    /// The profiler of this model's device, when it was opened with [`Options::profile`](crate::Options::profile): an
    /// owned handle, so a caller can record its own events (a call's span) while it runs the
    /// model.
    pub fn profiler(&self) -> Option<ProfilerRef> {
        self.runner.profiler().filter(|p| p.profiler().is_enabled())
    }

    /// Write what the profiler recorded as a Perfetto (Chrome trace JSON) file at `path`;
    /// returns the number of events. Errors when profiling is off.
    pub fn write_profile(&self, path: &Path) -> Result<usize> {
        let Some(h) = self.runner.profiler() else {
            return Err(Error::Unsupported { what: "a profile of a device without a profiler", value: 0 })
                .with_context(|| format!("device {}", self.device));
        };
        let p = h.profiler();
        let json = hcq::profile::chrome::trace_json(&[(self.device.as_str(), p)]);
        std::fs::write(path, json)
            .map_err(|e| Error::Os { what: "write profile", errno: e.raw_os_error().unwrap_or(0) })
            .with_context(|| path.display().to_string())?;
        Ok(p.events().len())
    }

    /// Start recording events on a model whose device was opened without
    /// [`Options::profile`](crate::Options::profile) (or again after [`Model::profile_end`]): every call's span from here
    /// on, and on `CPU` and `SIM` each kernel and copy (QCOM's launch timestamps are chosen at
    /// open). Events recorded before on the device are dropped. Waits for a submitted call.
    pub fn profile_begin(&mut self) -> Result<()> {
        self.settle()?;
        let name = format!("call {}", self.name());
        let Some(h) = self.runner.profiler() else {
            return Err(Error::Unsupported { what: "profiling a device without a profiler", value: 0 })
                .with_context(|| format!("device {}", self.device));
        };
        let p = h.profiler();
        p.clear();
        p.set_enabled(true);
        self.call_name = Some(p.intern(&name));
        Ok(())
    }

    /// Write what was recorded since [`Model::profile_begin`] as [`Model::write_profile`] does,
    /// and stop recording; returns the number of events. An error without a begin.
    pub fn profile_end(&mut self, path: &Path) -> Result<usize> {
        self.settle()?;
        if self.call_name.is_none() {
            return Err(Error::InvalidArgument { what: "profile end without a profile begin", value: 0 });
        }
        let n = self.write_profile(path);
        if let Some(h) = self.runner.profiler() {
            h.profiler().set_enabled(false);
        }
        self.call_name = None;
        n
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // nothing is freed under the device, and no bound memory is used after the drop: the
        // call in flight finishes first (the backends' own drops wait for their last
        // submission too)
        if let Err(e) = self.settle() {
            log::warn!("dropping model {}: waiting for its call in flight: {e}", self.name());
        }
    }
}

fn index(what: &'static str, i: usize, n: usize) -> Result<()> {
    if i < n { Ok(()) } else { Err(Error::OutOfBounds { what, offset: i as u64, len: 1, limit: n as u64 }) }
}

impl core::fmt::Debug for Model {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.name())
            .field("device", &self.device)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("in_flight", &self.pending.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod bind_input_tests {
    /// `Model::bind_input` on `CPU` and `QCOM:SIM`: the kernels read the caller's memory (a
    /// change there, without `set_input`, changes the output), and binding back restores the
    /// model's own input.
    #[test]
    fn a_bound_input_is_read_from_the_callers_memory_on_cpu_and_qcom_sim() {
        let bundle = hcq_testkit::example("elementwise");
        for dev in ["CPU", "QCOM:SIM"] {
            let mut m = crate::open(dev).unwrap().load(&bundle).unwrap();
            m.run().unwrap();
            let before = m.output("output0").unwrap();
            let n = m.inputs()[0].nbytes as usize;
            // page-aligned memory inside a larger allocation (the QCOM mapping is page-rounded)
            let mut buf = vec![0u8; n + 8192];
            let at = (buf.as_ptr() as usize).next_multiple_of(4096) - buf.as_ptr() as usize;
            for (i, b) in buf[at..at + n].chunks_exact_mut(4).enumerate() {
                b.copy_from_slice(&(i as f32).to_le_bytes());
            }
            let ptr = buf[at..].as_mut_ptr();
            // SAFETY: `buf` outlives the calls; it is bound back (waiting for them) before it drops.
            unsafe { m.bind_input("input0", ptr, n) }.unwrap();
            m.run().unwrap();
            let bound = m.output("output0").unwrap();
            assert_ne!(bound, before, "{dev}");
            buf[at..at + 4].copy_from_slice(&1000f32.to_le_bytes());
            m.run().unwrap();
            assert_ne!(m.output("output0").unwrap(), bound, "{dev}: the change is seen without a copy");
            // SAFETY: the wrong size and a misaligned pointer are refused before anything is bound.
            assert!(unsafe { m.bind_input("input0", ptr, n - 4) }.is_err(), "{dev}");
            // SAFETY: as above: refused (misaligned) before anything is bound.
            assert!(unsafe { m.bind_input("input0", ptr.wrapping_add(4), n) }.is_err(), "{dev}");
            // SAFETY: null binds back to the model's memory.
            unsafe { m.bind_input("input0", std::ptr::null_mut(), 0) }.unwrap();
            m.run().unwrap();
            assert_eq!(m.output("output0").unwrap(), before, "{dev}");
            assert!(m.check().unwrap().ok, "{dev}");
            drop(buf);
        }
    }
}
