//! One bundle runner over every device.
//!
//! [`Runner::load`] walks a parsed bundle ([`Hcqb`]) the same way for every device: it picks
//! the object set for the device's architecture ([`pick_arch`]: x86_64, aarch64,
//! adreno_a630), checks every size and count against the device's limits, allocates and fills
//! each base buffer once, loads every program, resolves each kernel launch's buffer arguments
//! to device addresses (`base + view offset`) and hands them to the [`Backend`], which lays
//! them out as the program says (CPU: host-ABI 64-bit words; Adreno: the constant block of
//! `programs[].adreno.consts`) and records the launch into its captured queues. A call
//! ([`Runner::call`]) replays what was captured; [`Runner::check`] compares the outputs with the
//! bundle's expected bytes ([`compare`]: exact when the objects are those that produced them,
//! else within the tolerance of the element type, [`tolerance`]: `|got − expected| ≤ 1e-5 +
//! 1e-4·|expected|` for f32 and f64, two units in the last place for f16 and bf16).
//!
//! What a front end drives is a [`plug::LoadedModel`]: a [`Runner`] over any backend with its
//! [`plug::Capabilities`] is one. Backends today: the CPU (`hcq_cpu::backend::CpuBackend`: exec lists
//! run inline by the soft command processor), the SIM device running the host's CPU objects
//! (`hcq_sim::cpu::SimBackend`: one exec packet per kernel through the simulated command
//! processors and their mock-MMIO doorbells), and the Adreno 630 over KGSL or its simulation
//! (`hcq_qcom::device::QcomBackend`: PM4 indirect buffers).
//!
//! A backend with checks of its own before anything is allocated (the CPU's x86-64 level)
//! does them in [`Backend::prepare`]; a caller with a smaller budget than the device's
//! ([`Runner::load_within`], the `load` fuzz target) passes its own limits too.

#![no_std]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod plug;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use hcq::device::DeviceLimits;
use hcq::dtype::DType;
use hcq::error::{Error, Result, ResultExt};
use hcq_bundle::hcqb::{Hcqb, KernelRef, LaunchRef, ProgramRef};
use hcq_bundle::{Arch, ArgView};

/// Absolute term of the cross-architecture tolerance (f32, f64).
pub const TOL_ABS: f64 = 1e-5;
/// Relative term of the cross-architecture tolerance (f32, f64).
pub const TOL_REL: f64 = 1e-4;

/// The cross-architecture tolerance of an element type, `(absolute, relative)`: an element
/// matches when `|got − expected| ≤ absolute + relative·|expected|`. f32 and f64: [`TOL_ABS`],
/// [`TOL_REL`]. Half types round every result to 11 (f16) or 8 (bf16) significant bits, so one
/// rounding step is 2^-10 (2^-7) relative: they get two steps (f16: 2e-3 relative, 1e-3
/// absolute, tinygrad's own half tolerance; bf16: 1.6e-2 relative, 1e-2 absolute).
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (1e-3, 2e-3),
        DType::BF16 => (1e-2, 1.6e-2),
        _ => (TOL_ABS, TOL_REL),
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
    /// The first element outside the tolerance, in output order.
    pub first: Option<Mismatch>,
}

/// An element outside the tolerance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mismatch {
    /// Output index.
    pub output: usize,
    /// Element index in the output.
    pub element: usize,
    /// The value computed (0 for a non-float output).
    pub got: f64,
    /// The expected value (0 for a non-float output).
    pub expected: f64,
}

/// IEEE half → f64, exactly (bit manipulation: no libm in `no_std`).
fn f16_to_f64(h: u16) -> f64 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from(h >> 10 & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // subnormal: renormalise
            let shift = f.leading_zeros() - 21; // bring the top bit to position 10
            sign | (113 - shift) << 23 | ((f << shift) & 0x3ff) << 13
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, f) => sign | 0x7fc0_0000 | f << 13,
        (e, f) => sign | (e + 112) << 23 | f << 13,
    };
    f64::from(f32::from_bits(bits))
}

/// Element `b` (exactly `dtype.size()` bytes, little-endian) as an f64; 0 for a non-float type.
fn element(dtype: DType, b: &[u8]) -> f64 {
    // one copy into a word instead of a load per byte (the bytes may sit at any address, and
    // strict-alignment targets read unaligned bytes one by one)
    let mut w = [0u8; 8];
    let n = b.len().min(8);
    w[..n].copy_from_slice(&b[..n]);
    let w = u64::from_le_bytes(w);
    // CAST (all four): the element is the low `dtype.size()` bytes of the word
    match dtype {
        DType::F32 => f64::from(f32::from_bits(w as u32)),
        DType::F64 => f64::from_bits(w),
        DType::F16 => f16_to_f64(w as u16),
        DType::BF16 => f64::from(f32::from_bits(u32::from(w as u16) << 16)),
        _ => 0.0,
    }
}

/// Compare `got` with `expected` elementwise as `dtype`: floats within the tolerance (or
/// bit-identical when `exact`), other types byte-exact. Returns the number of elements outside
/// and the largest absolute float difference (infinite for a NaN where a number was expected).
pub fn compare(dtype: DType, got: &[u8], expected: &[u8], exact: bool) -> (u64, f64) {
    let (bad, max, _) = compare_first(dtype, got, expected, exact);
    (bad, max)
}

/// [`compare`], with the first element outside: `(index, got, expected)` (values 0 for a
/// non-float type).
fn compare_first(dtype: DType, got: &[u8], expected: &[u8], exact: bool) -> (u64, f64, Option<(usize, f64, f64)>) {
    let size = dtype.size();
    let mut bad = 0u64;
    let mut max = 0f64;
    let mut first = None;
    let (tol_abs, tol_rel) = tolerance(dtype);
    for (i, (g, e)) in got.chunks_exact(size).zip(expected.chunks_exact(size)).enumerate() {
        let (gv, ev) = (element(dtype, g), element(dtype, e));
        let outside = if dtype.is_float() {
            let d = (gv - ev).abs();
            if g == e || gv.is_nan() && ev.is_nan() {
                false
            } else {
                if d.is_nan() || d > max {
                    max = if d.is_nan() { f64::INFINITY } else { d };
                }
                let within = d <= tol_abs + tol_rel * ev.abs(); // false for NaN
                exact || !within
            }
        } else {
            g != e
        };
        if outside {
            bad += 1;
            first.get_or_insert((i, gv, ev));
        }
    }
    if got.len() != expected.len() {
        bad += 1;
    }
    (bad, max, first)
}

/// Split a launch list into queues of `hcq` of at most a quarter of engine 0's ring each (a
/// call's submissions never wait for their own ring space): `push` adds one item's packet (at
/// most [`hcq::soft::MAX_PACKET_WORDS`] words) to the queue being built. Every backend whose
/// launch list is soft packets records it with this.
pub fn build_queues<T>(
    hcq: &hcq::engine::Engine,
    items: &[T],
    mut push: impl FnMut(&mut hcq::queue::HwQueue, &T) -> Result<()>,
) -> Result<Vec<hcq::queue::HwQueue>> {
    // one packet per item plus the queue's timeline wait and signal; a queue never takes more
    // than a quarter of the ring
    let max_words = (hcq.channels().first().map_or(0, |c| c.ring_words()) / 4).max(64) as usize;
    let mut queues = Vec::new();
    let mut queue = hcq.queue()?;
    for it in items {
        if queue.words().len() + hcq::soft::MAX_PACKET_WORDS + 8 > max_words {
            queue.finish()?;
            queues.push(core::mem::replace(&mut queue, hcq.queue()?));
        }
        push(&mut queue, it)?;
    }
    queue.finish()?;
    queues.push(queue);
    Ok(queues)
}

/// Submit a call's queues on engine 0 of `hcq` in order, without waiting; `last` follows the
/// stamp of every submission made (so a failure part-way still leaves the buffers marked up to
/// what was submitted). Returns the timeline value that completes the call.
///
/// # Safety
/// As [`Submitter::submit`](hcq::engine::Submitter::submit) for every queue: here, queues a
/// backend built from its bundle's checked launches over buffers it owns and keeps alive until
/// the returned value has passed.
pub unsafe fn submit_queues(
    hcq: &hcq::engine::Engine,
    queues: &mut [hcq::queue::HwQueue],
    last: &mut hcq::stamp::Stamp,
) -> Result<u64> {
    for q in queues {
        // SAFETY: the caller's contract.
        *last = unsafe { hcq.submit(0, q)? };
    }
    Ok(last.get())
}

/// The object set to run: the first of `device_archs` (the device's, in preference order)
/// for which every program of `bundle` has an object.
pub fn pick_arch(bundle: &Hcqb<'_>, device_archs: &[Arch]) -> Result<Arch> {
    device_archs.iter().copied().find(|&a| bundle.programs().all(|p| p.object(a).is_some())).ok_or(Error::Unsupported {
        what: "bundle has no complete object set for this device (code of its preferred arch)",
        value: device_archs.first().map_or(0, |a| u64::from(a.code())),
    })
}

/// One kernel launch as a backend records it: the program, its buffer arguments as device
/// addresses (in argument order) and the launch as the bundle states it.
#[derive(Clone, Copy, Debug)]
pub struct KernelLaunch<'a, 'b> {
    /// Launch index in the bundle.
    pub index: usize,
    /// The bundle's launch (grids, integer values, the Adreno dispatch).
    pub kernel: &'b KernelRef<'a>,
    /// Device address of every buffer argument (`base + view offset`).
    pub args: &'b [u64],
}

/// What a device provides to run bundles. The [`Runner`] calls, in order: `prepare` once
/// with the chosen architecture, `alloc` for every base buffer, `load_program` for every
/// program, `record_kernel`/`record_copy` for every launch, `finish` once; then `replay` per
/// call and `read`/`write` for outputs and inputs.
pub trait Backend {
    /// A loaded program.
    type Program;
    /// Architectures whose objects this device runs, preferred first.
    fn archs(&self) -> &[Arch];
    /// What the device can hold (sizes and counts are checked against it before any allocation).
    fn limits(&self) -> DeviceLimits;
    /// Check, before anything is allocated, that the device can run `bundle`'s objects for
    /// `arch` (the one [`pick_arch`] chose), e.g. that the host CPU has the features of the
    /// bundle's x86-64 level. Default: nothing to check.
    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        let _ = (bundle, arch);
        Ok(())
    }
    /// Allocate base buffer `index` of `nbytes` (already rounded to the device's granule),
    /// filled with `initial` then zeros; returns its device address.
    fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64>;
    /// Load program `index` from its object for `arch`.
    fn load_program(
        &mut self,
        index: usize,
        program: &ProgramRef<'_>,
        arch: Arch,
        object: &[u8],
    ) -> Result<Self::Program>;
    /// Lay out a kernel launch's arguments as `program` says and record it.
    fn record_kernel(&mut self, program: &Self::Program, launch: &KernelLaunch<'_, '_>) -> Result<()>;
    /// Record a buffer-to-buffer copy.
    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()>;
    /// Close the capture.
    fn finish(&mut self) -> Result<()>;
    /// One forward pass: replay the captured queues and wait for them.
    fn replay(&mut self) -> Result<()>;
    /// Copy `out.len()` bytes of base buffer `buffer` at `offset` out (after the work in flight).
    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()>;
    /// Copy `data` into base buffer `buffer` at `offset` (after the work in flight).
    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()>;
}

/// `e` in the bundle location `what i` or `what i (name)` ("launch 3 (E_4)"): one function for
/// every load step, not a formatting closure each.
#[inline(never)]
fn located(e: Error, what: &'static str, i: usize, name: Option<&str>) -> Error {
    match name {
        Some(name) => e.context(format!("{what} {i} ({name})")),
        None => e.context(format!("{what} {i}")),
    }
}

/// A bundle loaded through a [`Backend`].
pub struct Runner<B: Backend> {
    backend: B,
    arch: Arch,
    kernels: usize,
    expected_from: Arch,
    outputs: Vec<(ArgView, Option<Vec<u8>>)>,
    inputs: Vec<ArgView>,
    name: String,
    graph: Option<usize>,
}

impl<B: Backend> core::fmt::Debug for Runner<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Runner").field("name", &self.name).field("arch", &self.arch).finish_non_exhaustive()
    }
}

/// The address of byte `offset` of the bundle's buffer `buffer` (`addrs`: every buffer's
/// address). The bundle's views were checked against its buffers: an index past them is an
/// error here, not a panic.
fn buffer_at(addrs: &[u64], buffer: u32, offset: u64) -> Result<u64> {
    addrs.get(buffer as usize).map(|a| a + offset).ok_or(Error::OutOfBounds {
        what: "launch buffer index",
        offset: buffer.into(),
        len: 1,
        limit: addrs.len() as u64,
    })
}

impl<B: Backend> Runner<B> {
    /// Load `bundle` on `backend` (see the module docs).
    pub fn load(backend: B, bundle: &Hcqb<'_>) -> Result<Self> {
        Self::load_inner(backend, bundle, None)
    }

    /// [`Runner::load`] within `limits` as well as the backend's own (each field the smaller):
    /// for a caller with a memory budget below the device's (the `load` fuzz target). Every
    /// size and count is checked ([`Hcqb::check_limits`]) before anything is allocated.
    pub fn load_within(backend: B, bundle: &Hcqb<'_>, limits: &DeviceLimits) -> Result<Self> {
        Self::load_inner(backend, bundle, Some(limits))
    }

    fn load_inner(mut backend: B, bundle: &Hcqb<'_>, extra: Option<&DeviceLimits>) -> Result<Self> {
        // The graph for this device's target (a bundle with one graph per target), or the file.
        let graph = bundle.for_archs(backend.archs())?;
        let bundle = &graph;
        let arch = pick_arch(bundle, backend.archs()).with_context(|| {
            let names: Vec<&str> = backend.archs().iter().map(|a| a.name()).collect();
            format!("device objects {}", names.join(" or "))
        })?;
        let limits = match extra {
            Some(l) => l.min(&backend.limits()),
            None => backend.limits(),
        };
        // The sizes first (cheap, no allocation), then the backend's own checks of the objects.
        bundle.check_limits(&limits)?;
        backend.prepare(bundle, arch)?;
        let mut addrs = Vec::with_capacity(bundle.n_buffers());
        for (i, b) in bundle.buffers().enumerate() {
            let bytes = limits.alloc_size("buffer nbytes", b.nbytes).map_err(|e| located(e, "buffer", i, None))?;
            let a =
                backend.alloc(i, bytes, b.initial.unwrap_or_default()).map_err(|e| located(e, "buffer", i, None))?;
            addrs.push(a);
        }
        let mut programs = Vec::with_capacity(bundle.n_programs());
        for (i, p) in bundle.programs().enumerate() {
            let obj = p.object(arch).ok_or(Error::Unsupported {
                what: "bundle has no object for this architecture",
                value: u64::from(arch.code()),
            });
            let prog = obj
                .and_then(|o| backend.load_program(i, &p, arch, o))
                .map_err(|e| located(e, "program", i, Some(p.name)))?;
            programs.push(prog);
        }
        let mut kernels = 0;
        let mut args = Vec::new();
        for (li, l) in bundle.launches().enumerate() {
            match l {
                LaunchRef::Kernel(k) => {
                    args.clear();
                    k.args()
                        .try_for_each(|a| buffer_at(&addrs, a.buffer, a.offset).map(|x| args.push(x)))
                        .and_then(|()| {
                            programs.get(k.program as usize).ok_or(Error::OutOfBounds {
                                what: "launch program index",
                                offset: k.program.into(),
                                len: 1,
                                limit: programs.len() as u64,
                            })
                        })
                        .and_then(|p| backend.record_kernel(p, &KernelLaunch { index: li, kernel: &k, args: &args }))
                        .map_err(|e| located(e, "launch", li, Some(k.name)))?;
                    kernels += 1;
                }
                LaunchRef::Copy { dst, src } => buffer_at(&addrs, dst.buffer, dst.offset)
                    .and_then(|d| Ok((d, buffer_at(&addrs, src.buffer, src.offset)?)))
                    .and_then(|(d, s)| backend.record_copy(d, s, dst.nbytes))
                    .map_err(|e| located(e, "launch", li, Some("copy")))?,
            }
        }
        backend.finish()?;
        Ok(Runner {
            backend,
            arch,
            kernels,
            expected_from: bundle.expected_from(),
            outputs: bundle.outputs().map(|o| (o.view, o.expected.map(<[u8]>::to_vec))).collect(),
            inputs: bundle.inputs().map(|i| i.view).collect(),
            name: bundle.model_name().into(),
            graph: bundle.view_of(),
        })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, mutably.
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    fn view_bytes(&self, v: &ArgView) -> Result<Vec<u8>> {
        let n = usize::try_from(v.nbytes)
            .map_err(|_| Error::InvalidArgument { what: "output view size", value: v.nbytes })?;
        let mut out = vec![0u8; n];
        self.backend.read(v.buffer as usize, v.offset, &mut out)?;
        Ok(out)
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
        self.backend.write(v.buffer as usize, v.offset, data)
    }

    /// Number of outputs.
    pub fn n_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Number of inputs.
    pub fn n_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The graph of the bundle that runs (`None`: a bundle without a graph table, which is its
    /// own graph); views of its inputs, outputs and buffers index that graph
    /// ([`Hcqb::graph_view`]).
    pub fn graph(&self) -> Option<usize> {
        self.graph
    }

    /// The architecture whose objects run.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Kernel launches per call.
    pub fn kernels_per_call(&self) -> usize {
        self.kernels
    }

    /// One forward pass: the backend replays what it captured and waits for it.
    #[inline]
    pub fn call(&mut self) -> Result<()> {
        self.backend.replay()
    }

    /// Bytes of output `i` (after the work in flight).
    pub fn output(&self, i: usize) -> Result<Vec<u8>> {
        let (v, _) = self.outputs.get(i).ok_or(Error::OutOfBounds {
            what: "model output index",
            offset: i as u64,
            len: 1,
            limit: self.outputs.len() as u64,
        })?;
        self.view_bytes(v)
    }

    /// Compare every output that has expected bytes ([`compare`]; exact when the objects are
    /// those that produced them).
    pub fn check(&self) -> Result<CheckReport> {
        let exact = self.arch == self.expected_from;
        let mut rep = CheckReport { ok: true, max_abs_diff: 0.0, exact, compared: 0, mismatches: 0, first: None };
        for (output, (v, exp)) in self.outputs.iter().enumerate() {
            let Some(exp) = exp else { continue };
            let got = self.view_bytes(v)?;
            let (bad, max, first) = compare_first(v.dtype, &got, exp, exact);
            if let (None, Some((element, got, expected))) = (rep.first, first) {
                rep.first = Some(Mismatch { output, element, got, expected });
            }
            rep.compared += 1;
            rep.mismatches += bad;
            rep.max_abs_diff = rep.max_abs_diff.max(max);
        }
        rep.ok = rep.mismatches == 0;
        Ok(rep)
    }
}

/// Every runner is a [`Model`] (its inherent methods).
#[cfg(test)]
mod tests {
    use super::*;
    use hcq_bundle::hcqb;
    use hcq_bundle::testing::tiny;

    /// A backend that records what the runner asks of it.
    #[derive(Default)]
    struct Fake {
        log: Vec<&'static str>,
        refuse: bool,
    }

    impl Backend for Fake {
        type Program = ();
        fn archs(&self) -> &[Arch] {
            &[Arch::X86_64]
        }
        fn limits(&self) -> DeviceLimits {
            DeviceLimits {
                memory_bytes: 1 << 30,
                max_alloc_bytes: 1 << 30,
                alloc_align: 16,
                max_kernel_args: 63,
                max_grid: [u32::MAX; 3],
            }
        }
        fn prepare(&mut self, _bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
            assert_eq!(arch, Arch::X86_64);
            self.log.push("prepare");
            if self.refuse { Err(Error::Unsupported { what: "refused by prepare", value: 0 }) } else { Ok(()) }
        }
        fn alloc(&mut self, index: usize, _nbytes: u64, _initial: &[u8]) -> Result<u64> {
            self.log.push("alloc");
            Ok(0x1000 * (index as u64 + 1))
        }
        fn load_program(&mut self, _: usize, _: &ProgramRef<'_>, _: Arch, _: &[u8]) -> Result<()> {
            self.log.push("program");
            Ok(())
        }
        fn record_kernel(&mut self, _: &(), _: &KernelLaunch<'_, '_>) -> Result<()> {
            self.log.push("kernel");
            Ok(())
        }
        fn record_copy(&mut self, _: u64, _: u64, _: u64) -> Result<()> {
            self.log.push("copy");
            Ok(())
        }
        fn finish(&mut self) -> Result<()> {
            self.log.push("finish");
            Ok(())
        }
        fn replay(&mut self) -> Result<()> {
            Ok(())
        }
        fn read(&self, _: usize, _: u64, out: &mut [u8]) -> Result<()> {
            out.fill(0);
            Ok(())
        }
        fn write(&self, _: usize, _: u64, _: &[u8]) -> Result<()> {
            Ok(())
        }
    }

    /// `tiny` with an x86-64 object for every program (what `Fake` runs).
    fn tiny_x86() -> Vec<u8> {
        let mut m = tiny();
        for p in &mut m.programs {
            p.objects.x86_64.get_or_insert_with(|| vec![0x7f, b'E', b'L', b'F']);
        }
        hcqb::write(&m).unwrap()
    }

    #[test]
    fn prepare_runs_before_anything_is_allocated_and_can_refuse() {
        let bytes = tiny_x86();
        let file = Hcqb::parse(&bytes).unwrap();
        let r = Runner::load(Fake::default(), &file).unwrap();
        assert_eq!(r.backend().log.first(), Some(&"prepare"));
        assert_eq!(r.backend().log.iter().filter(|s| **s == "prepare").count(), 1);
        assert_eq!(r.backend().log.last(), Some(&"finish"));
        let e = Runner::load(Fake { refuse: true, ..Fake::default() }, &file).unwrap_err();
        assert!(matches!(e.root(), Error::Unsupported { what: "refused by prepare", .. }), "{e}");
    }

    #[test]
    fn load_within_applies_the_callers_smaller_limits_before_any_allocation() {
        let bytes = tiny_x86();
        let file = Hcqb::parse(&bytes).unwrap();
        let small = DeviceLimits { memory_bytes: 256, ..Fake::default().limits() };
        let e = Runner::load_within(Fake::default(), &file, &small).unwrap_err();
        assert!(matches!(e.root(), Error::LimitExceeded { .. }), "{e}");
        let roomy = DeviceLimits { memory_bytes: 1 << 40, ..Fake::default().limits() };
        let r = Runner::load_within(Fake::default(), &file, &roomy).unwrap();
        assert_eq!(r.backend().log.iter().filter(|s| **s == "alloc").count(), file.n_buffers());
    }

    #[test]
    fn check_reports_the_first_element_outside() {
        let bytes = tiny_x86();
        let file = Hcqb::parse(&bytes).unwrap();
        let r = Runner::load(Fake::default(), &file).unwrap();
        // the fake reads zeros; the expected output is four f32 of bytes 07 07 07 07
        let rep = r.check().unwrap();
        assert!(!rep.ok && rep.exact);
        assert_eq!(rep.mismatches, 4);
        let want = f64::from(f32::from_le_bytes([7; 4]));
        assert_eq!(rep.first, Some(Mismatch { output: 0, element: 0, got: 0.0, expected: want }));
        // a byte-exact output has none
        let (bad, _, first) = compare_first(DType::F32, &[7; 16], &[7; 16], true);
        assert_eq!((bad, first), (0, None));
        let (bad, _, first) = compare_first(DType::I32, &[1, 0, 0, 0, 2, 0, 0, 0], &[1, 0, 0, 0, 3, 0, 0, 0], false);
        assert_eq!((bad, first), (1, Some((1, 0.0, 0.0))));
    }

    #[test]
    fn half_precision_decodes_exactly() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(element(DType::BF16, &0x3f80u16.to_le_bytes()), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 1.0 / 16_777_216.0, "smallest subnormal");
        assert_eq!(f16_to_f64(0x03ff), 1023.0 / 16_777_216.0, "largest subnormal");
        assert_eq!(f16_to_f64(0x7bff), 65504.0);
        assert_eq!(f16_to_f64(0xfc00), f64::NEG_INFINITY);
        assert!(f16_to_f64(0x7e00).is_nan());
    }

    #[test]
    fn half_outputs_match_within_two_rounding_steps() {
        // f16 1.0 is 0x3c00; one step above it is 2^-10 (9.8e-4, ten times the f32 tolerance)
        let h = |bits: &[u16]| bits.iter().flat_map(|b| b.to_le_bytes()).collect::<Vec<u8>>();
        let e = h(&[0x3c00, 0x4900]); // 1.0, 10.0
        assert_eq!(compare(DType::F16, &h(&[0x3c01, 0x4902]), &e, false).0, 0, "one and two steps off match");
        assert_eq!(compare(DType::F16, &h(&[0x3c04, 0x4900]), &e, false).0, 1, "four steps off at 1.0 do not");
        assert_eq!(compare(DType::F16, &h(&[0x3c01, 0x4900]), &e, true).0, 1, "exact mode counts every step");
        // bf16 1.0 is 0x3f80; one step is 2^-7
        assert_eq!(compare(DType::BF16, &h(&[0x3f81]), &h(&[0x3f80]), false).0, 0);
        assert_eq!(compare(DType::BF16, &h(&[0x3f84]), &h(&[0x3f80]), false).0, 1);
        assert_eq!(tolerance(DType::F32), (TOL_ABS, TOL_REL));
    }

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
        assert_eq!(compare(DType::F32, &f32::NAN.to_le_bytes(), &1.0f32.to_le_bytes(), false).0, 1);
        assert_eq!(compare(DType::F32, &[0; 8], &[0; 4], false).0, 1, "a size difference is a mismatch");
    }
}
