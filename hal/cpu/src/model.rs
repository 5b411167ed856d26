//! A model bundle loaded on the CPU device and ready to call.
//!
//! [`Model::load`] takes a parsed `.hcqb` ([`Hcqb`]), checks the host can run its objects
//! (architecture and x86-64 level), allocates every base buffer once on the device (scratch
//! arena views stay views: `base + offset`), fills inputs and weights, loads each program's
//! object for the host, and captures the launch list: each run of kernel launches becomes one
//! exec list of the device ([`CpuDevice::load_exec_list`]: kernels and arguments resolved and
//! checked once, at load), run by one exec packet; copies stay copy packets. The packets form
//! one queue, or several when they would take more than a quarter of the command ring.
//! [`Model::call`] replays them: it patches the timeline values, copies the words into the
//! ring and, when the compute engine is free, runs them on the calling thread
//! ([`SoftDevice::run_inline`](hcq::soft::runner::SoftDevice::run_inline)) — no encoding, no
//! allocation, no hand-off to another thread. [`Model::submit`] queues a call for the
//! command-processor thread instead. [`Model::output`] and [`Model::check`] wait for the calls
//! in flight before they read.
//!
//! [`Model::check`] compares the outputs with the bundle's expected bytes: exactly when the
//! objects are those that produced them, else within the bundle format's stated tolerance
//! `|got - expected| <= 1e-5 + 1e-4 * |expected|` (FMA contraction differs between
//! architectures).

use crate::device::{CpuDevice, ExecLaunch, MAX_ARGS};
use hcq::buffer::Buffer;
use hcq::bundle::hcqb::{Hcqb, LaunchRef};
use hcq::bundle::{Arch, ArgView};
use hcq::device::Device;
use hcq::dtype::DType;
use hcq::error::{Error, Result, ResultExt};
use hcq::queue::HwQueue;
use std::format;
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

/// The bundle tolerance and the comparison live in the core runner, shared by every backend.
pub use hcq::runner::{TOL_ABS, TOL_REL, compare};

/// The bundle architecture of this host's CPU, if bundles carry objects for it.
pub fn host_arch() -> Option<Arch> {
    Arch::host()
}

/// Check that this host can run objects built for `level` of `arch` (the bundle's
/// `arch_levels`): x86-64-v2/v3/v4 feature sets are checked with CPUID; `native` and unknown
/// levels cannot be checked and are refused unless `allow_unchecked`.
pub fn check_arch_level(arch: Arch, level: Option<&str>, allow_unchecked: bool) -> Result<()> {
    let unchecked = |why: &'static str| {
        if allow_unchecked {
            log::warn!("bundle objects for {}: {}; running anyway", arch.name(), why);
            Ok(())
        } else {
            Err(Error::Unsupported { what: why, value: 0 })
        }
    };
    match (arch, level) {
        (_, None) | (_, Some("native")) => {
            unchecked("objects were built for the exporting machine only (arch level native or missing)")
        }
        (Arch::Aarch64, Some("armv8-a")) => Ok(()),
        #[cfg(target_arch = "x86_64")]
        (Arch::X86_64, Some(l @ ("x86-64" | "x86-64-v2" | "x86-64-v3" | "x86-64-v4"))) => {
            use std::arch::is_x86_feature_detected as has;
            let v2 = has!("sse3")
                && has!("ssse3")
                && has!("sse4.1")
                && has!("sse4.2")
                && has!("popcnt")
                && has!("cmpxchg16b");
            let v3 = v2
                && has!("avx")
                && has!("avx2")
                && has!("bmi1")
                && has!("bmi2")
                && has!("fma")
                && has!("lzcnt")
                && has!("movbe")
                && has!("f16c");
            let v4 =
                v3 && has!("avx512f") && has!("avx512bw") && has!("avx512cd") && has!("avx512dq") && has!("avx512vl");
            let ok = match l {
                "x86-64" => true,
                "x86-64-v2" => v2,
                "x86-64-v3" => v3,
                _ => v4,
            };
            if ok {
                Ok(())
            } else {
                Err(Error::Unsupported { what: "this CPU lacks features the bundle's x86-64 level needs", value: 0 })
                    .with_context(|| format!("bundle objects need {l}"))
            }
        }
        _ => unchecked("unknown architecture level"),
    }
}

/// Result of comparing outputs with the expected bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    /// Every compared output matched (exactly, or within the tolerance).
    pub ok: bool,
    /// Largest absolute difference over float outputs (0 when identical or none).
    pub max_abs_diff: f64,
    /// Whether the comparison was exact (same objects as the expected outputs came from).
    pub exact: bool,
    /// Outputs compared (those with expected bytes).
    pub compared: usize,
    /// Elements outside the tolerance (or differing bytes when exact).
    pub mismatches: u64,
}

/// One step of a model call.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A run of kernel launches: an exec list of the device.
    List(u64),
    /// A buffer-to-buffer copy.
    Copy { dst: u64, src: u64, bytes: u64 },
}

/// A bundle loaded on a CPU device.
pub struct Model {
    dev: Arc<CpuDevice>,
    buffers: Vec<Buffer>,
    addrs: Vec<u64>,
    queues: Vec<HwQueue>,
    /// What one call runs, in order.
    steps: Vec<Step>,
    /// The exec lists this model loaded (unloaded on drop).
    lists: Vec<u64>,
    kernels: usize,
    arch: Arch,
    expected_from: Arch,
    outputs: Vec<(ArgView, Option<Vec<u8>>)>,
    inputs: Vec<ArgView>,
    name: String,
}

impl core::fmt::Debug for Model {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Model").field("name", &self.name).field("kernels", &self.kernels).finish()
    }
}

/// Write `initial` at the start of `buf` (`bytes` long) and zeros after it, through views of at
/// most [`FILL_CHUNK`] bytes: no host copy of the whole buffer, so a buffer that fits the device
/// never needs twice its size in host memory.
fn fill(buf: &Buffer, initial: &[u8], bytes: u64) -> Result<()> {
    static ZEROS: [u8; FILL_CHUNK] = [0; FILL_CHUNK];
    let mut off = 0u64;
    while off < bytes {
        let n = usize::try_from((bytes - off).min(FILL_CHUNK as u64)).unwrap_or(FILL_CHUNK);
        let rest = usize::try_from(off).ok().and_then(|o| initial.get(o..)).unwrap_or_default();
        let src = if rest.is_empty() { ZEROS.get(..n) } else { rest.get(..rest.len().min(n)) }.unwrap_or_default();
        if src.is_empty() {
            return Err(Error::InvalidArgument { what: "buffer fill made no progress", value: off });
        }
        buf.view(src.len() as u64, DType::U8, off)?.copy_in(src)?;
        off += src.len() as u64;
    }
    Ok(())
}

/// Bytes written per view when a buffer is filled at load time.
const FILL_CHUNK: usize = 64 << 10;

impl Model {
    /// Load `bundle` on `dev`, running the objects built for `arch` (normally the host's).
    /// `allow_unchecked_level`: run objects whose CPU level cannot be verified (`native`).
    pub fn load(dev: Arc<CpuDevice>, bundle: &Hcqb<'_>, arch: Arch, allow_unchecked_level: bool) -> Result<Model> {
        let limits = dev.limits();
        Self::load_within(dev, bundle, arch, allow_unchecked_level, &limits)
    }

    /// [`Model::load`] within `limits` as well as the device's own (each field the smaller):
    /// for a caller with a memory budget below the host's RAM (the `load` fuzz target).
    /// Every size and count is checked ([`Hcqb::check_limits`]) before anything is allocated.
    pub fn load_within(
        dev: Arc<CpuDevice>,
        bundle: &Hcqb<'_>,
        arch: Arch,
        allow_unchecked_level: bool,
        limits: &hcq::device::DeviceLimits,
    ) -> Result<Model> {
        if Some(arch) != Arch::host() {
            return Err(Error::Unsupported {
                what: "bundle architecture is not this host's",
                value: u64::from(arch.code()),
            });
        }
        check_arch_level(arch, bundle.arch_level(arch), allow_unchecked_level)?;
        // every size and count against what the device states, before anything is allocated
        let limits = limits.min(&dev.limits());
        bundle.check_limits(&limits)?;
        let ddev: Arc<dyn Device> = dev.clone();
        let mut buffers = Vec::with_capacity(bundle.n_buffers());
        let mut addrs = Vec::with_capacity(bundle.n_buffers());
        for (i, b) in bundle.buffers().enumerate() {
            let bytes = limits.alloc_size("buffer nbytes", b.nbytes).with_context(|| format!("buffer {i}"))?;
            let buf = Buffer::new(ddev.clone(), bytes, DType::U8, Default::default())
                .with_context(|| format!("buffer {i}"))?;
            fill(&buf, b.initial.unwrap_or_default(), bytes).with_context(|| format!("buffer {i}"))?;
            addrs.push(buf.device_addr()?);
            buffers.push(buf);
        }
        // one kernel per program
        let mut handles = Vec::with_capacity(bundle.n_programs());
        for (i, p) in bundle.programs().enumerate() {
            let obj = p
                .object(arch)
                .ok_or(Error::Unsupported {
                    what: "bundle has no object for this architecture",
                    value: u64::from(arch.code()),
                })
                .with_context(|| format!("program {i} ({})", p.name))?;
            let nargs = p.n_params();
            let h = dev
                .load_kernel(obj, p.symbol, nargs, p.core_id_arg.map(|s| s as usize))
                .with_context(|| format!("program {i} ({})", p.name))?;
            handles.push(h);
        }
        // consecutive kernel launches become one exec list (arguments resolved and checked
        // here, once); copies stay copy commands between them
        let mut steps: Vec<Step> = Vec::new();
        let mut lists = Vec::new();
        let mut pending: Vec<(u64, Vec<u64>, u32)> = Vec::new();
        let mut kernels = 0;
        let flush = |pending: &mut Vec<(u64, Vec<u64>, u32)>, steps: &mut Vec<Step>, lists: &mut Vec<u64>| {
            if pending.is_empty() {
                return Ok(());
            }
            let launches: Vec<ExecLaunch<'_>> = pending
                .iter()
                .map(|(kernel, args, calls)| ExecLaunch { kernel: *kernel, args, calls: *calls })
                .collect();
            // SAFETY: every pointer argument is a base buffer of this model plus a view offset
            // the bundle validated (`Hcqb::parse` checks views against their buffers); the
            // model owns those buffers and unloads the list (after waiting for the device) in
            // its `Drop`, before the buffers are dropped.
            let h = unsafe { dev.load_exec_list(&launches)? };
            lists.push(h);
            steps.push(Step::List(h));
            pending.clear();
            Ok::<(), Error>(())
        };
        for (li, l) in bundle.launches().enumerate() {
            match l {
                LaunchRef::Kernel(k) => {
                    if k.n_args() + k.vals().len() > MAX_ARGS {
                        return Err(Error::Unsupported {
                            what: "kernel argument count (max 63)",
                            value: (k.n_args() + k.vals().len()) as u64,
                        })
                        .with_context(|| format!("launch {li}"));
                    }
                    let mut args = Vec::with_capacity(k.n_args() + k.vals().len());
                    for a in k.args() {
                        args.push(addrs[a.buffer as usize] + a.offset);
                    }
                    for v in k.vals() {
                        args.push(v.unwrap_or(0) as u64);
                    }
                    pending.push((handles[k.program as usize], args, k.global_size[0]));
                    kernels += 1;
                }
                LaunchRef::Copy { dst, src } => {
                    flush(&mut pending, &mut steps, &mut lists).with_context(|| format!("launch {li}"))?;
                    steps.push(Step::Copy {
                        dst: addrs[dst.buffer as usize] + dst.offset,
                        src: addrs[src.buffer as usize] + src.offset,
                        bytes: dst.nbytes,
                    });
                }
            }
        }
        flush(&mut pending, &mut steps, &mut lists).context("last launches")?;
        let hcq = dev.soft().hcq();
        // one exec or copy packet per step plus the queue's timeline wait and signal; a queue
        // never takes more than a quarter of the ring
        let max_words = (hcq.engines()[0].ring_words() / 4).max(64) as usize;
        let mut queues = Vec::new();
        let mut queue = hcq.queue()?;
        for st in &steps {
            if queue.words().len() + hcq::soft::MAX_PACKET_WORDS + 8 > max_words {
                queue.finish()?;
                queues.push(core::mem::replace(&mut queue, hcq.queue()?));
            }
            match *st {
                Step::List(h) => queue.exec(h, 0, [1, 1, 1], [1, 1, 1])?,
                Step::Copy { dst, src, bytes } => queue.copy(dst, src, bytes)?,
            };
        }
        queue.finish()?;
        queues.push(queue);
        let outputs = bundle.outputs().map(|o| (o.view, o.expected.map(<[u8]>::to_vec))).collect();
        let inputs = bundle.inputs().map(|i| i.view).collect();
        Ok(Model {
            dev,
            buffers,
            addrs,
            queues,
            steps,
            lists,
            kernels,
            arch,
            expected_from: bundle.expected_from(),
            outputs,
            inputs,
            name: bundle.model_name().into(),
        })
    }

    /// Kernel launches per call.
    pub fn kernels_per_call(&self) -> usize {
        self.kernels
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The architecture whose objects run.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The device.
    pub fn device(&self) -> &Arc<CpuDevice> {
        &self.dev
    }

    /// Submit one forward pass without waiting; returns the timeline value that completes it.
    pub fn submit(&mut self) -> Result<u64> {
        let hcq = self.dev.soft().hcq();
        let mut last = 0;
        for q in &mut self.queues {
            last = hcq.submit(0, q)?.get();
        }
        Ok(last)
    }

    /// Number of submissions one call makes (1 unless the launch list is longer than a quarter
    /// of the command ring).
    pub fn submissions_per_call(&self) -> usize {
        self.queues.len()
    }

    /// One forward pass: submit and wait. When the device's compute engine is free, the
    /// commands run on the calling thread ([`SoftDevice::run_inline`](hcq::soft::runner::SoftDevice::run_inline)):
    /// each kernel is an indirect call from the model's exec list, `core_id` kernels fan out
    /// over the device's workers and this thread. Allocates nothing.
    pub fn call(&mut self) -> Result<()> {
        let queues = &mut self.queues;
        self.dev.soft().run_inline(0, |s| {
            let mut last = hcq::stamp::Stamp::ZERO;
            for q in queues.iter_mut() {
                last = s.submit(0, q)?;
            }
            Ok(last)
        })
    }

    /// One forward pass with every kernel called directly on this thread, one after another
    /// (`core_id` tids in order), without queues, timeline or command processor: the floor
    /// that [`Model::call`] is measured against (the sum of the kernels' own time). Waits for
    /// the device first.
    pub fn call_direct(&mut self) -> Result<()> {
        self.dev.soft().hcq().synchronize()?;
        for st in &self.steps {
            match *st {
                // SAFETY: the list's arguments are this model's buffers, alive while `self`
                // is; the device is idle (synchronized above) and `&mut self` keeps this
                // model's calls out meanwhile.
                Step::List(h) => unsafe { self.dev.run_exec_list_here(h)? },
                Step::Copy { dst, src, bytes } => {
                    // SAFETY: both ranges are views of this model's buffers (validated by the
                    // bundle parser); `copy` allows overlap.
                    unsafe { core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes as usize) }
                }
            }
        }
        Ok(())
    }

    fn view_bytes(&self, v: &ArgView) -> Result<Vec<u8>> {
        // never read while a submitted call may still write it
        self.dev.soft().hcq().synchronize()?;
        let mut out = std::vec![0u8; v.nbytes as usize];
        let mem = self.buffers[v.buffer as usize].memory()?;
        mem.read_cpu(v.offset, &mut out)?;
        Ok(out)
    }

    /// Bytes of output `i` (after a call).
    pub fn output(&self, i: usize) -> Result<Vec<u8>> {
        let (v, _) = self.outputs.get(i).ok_or(Error::OutOfBounds {
            what: "model output index",
            offset: i as u64,
            len: 1,
            limit: self.outputs.len() as u64,
        })?;
        self.view_bytes(v)
    }

    /// Number of outputs.
    pub fn n_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Replace input `i` with `data` (exactly its size).
    pub fn set_input(&self, i: usize, data: &[u8]) -> Result<()> {
        let v = self.inputs.get(i).ok_or(Error::OutOfBounds {
            what: "model input index",
            offset: i as u64,
            len: 1,
            limit: self.inputs.len() as u64,
        })?;
        if data.len() as u64 != v.nbytes {
            return Err(Error::Mismatch { what: "model input size", expected: v.nbytes, found: data.len() as u64 });
        }
        self.dev.soft().hcq().synchronize()?;
        self.buffers[v.buffer as usize].memory()?.write_cpu(v.offset, data)
    }

    /// Compare every output that has expected bytes.
    pub fn check(&self) -> Result<CheckReport> {
        let exact = self.arch == self.expected_from;
        let mut rep = CheckReport { ok: true, max_abs_diff: 0.0, exact, compared: 0, mismatches: 0 };
        for (v, exp) in &self.outputs {
            let Some(exp) = exp else { continue };
            let got = self.view_bytes(v)?;
            let (bad, max) = compare(v.dtype, &got, exp, exact);
            rep.compared += 1;
            rep.mismatches += bad;
            rep.max_abs_diff = rep.max_abs_diff.max(max);
        }
        rep.ok = rep.mismatches == 0;
        Ok(rep)
    }

    /// Device addresses of the base buffers.
    pub fn buffer_addrs(&self) -> &[u64] {
        &self.addrs
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.dev.soft().hcq().synchronize();
        for h in self.lists.drain(..) {
            let _ = self.dev.unload_exec_list(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_compare_follows_the_bundle_rule() {
        let e: Vec<u8> = [1.0f32, 10.0, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let ok: Vec<u8> = [1.0f32 + 1e-5, 10.0 + 5e-4, 9e-6].iter().flat_map(|x| x.to_le_bytes()).collect();
        let (bad, max) = compare(DType::F32, &ok, &e, false);
        assert_eq!(bad, 0);
        assert!(max > 4e-4 && max < 6e-4);
        assert_eq!(compare(DType::F32, &ok, &e, true).0, 3, "exact mode counts every differing element");
        let far: Vec<u8> = [1.001f32, 10.0, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(compare(DType::F32, &far, &e, false).0, 1);
        assert_eq!(compare(DType::I32, &[1, 0, 0, 0], &[2, 0, 0, 0], false).0, 1);
        let nan = f32::NAN.to_le_bytes();
        assert_eq!(compare(DType::F32, &nan, &1.0f32.to_le_bytes(), false).0, 1, "NaN never passes");
    }

    #[test]
    fn fill_writes_the_initial_bytes_then_zeros_over_stale_contents_across_chunks() {
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let ddev: Arc<dyn Device> = dev.clone();
        let bytes = 3 * FILL_CHUNK as u64 + 48;
        let buf = Buffer::new(ddev, bytes, DType::U8, Default::default()).unwrap();
        buf.copy_in(&std::vec![0xaa; bytes as usize]).unwrap(); // stale contents
        let initial: Vec<u8> = (0..FILL_CHUNK + 100).map(|i| (i % 251) as u8 + 1).collect();
        fill(&buf, &initial, bytes).unwrap();
        let mut got = std::vec![0u8; bytes as usize];
        buf.copy_out(&mut got).unwrap();
        assert_eq!(&got[..initial.len()], &initial[..]);
        assert!(got[initial.len()..].iter().all(|&b| b == 0), "zeros after the initial bytes");
    }
}
