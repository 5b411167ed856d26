//! Running an embedded bundle: parse, load, run through the HCQ queue and ring, check.
//!
//! [`run`] parses the packed bundle with the core's no_std parser, refuses objects built for
//! anything but plain ARMv8-A (the emulated Cortex-A57), allocates every base buffer on the heap
//! (64-byte aligned; scratch views stay views), loads each program's AArch64 object into
//! executable memory, writes every launch's kernel arguments into one region of their own, and
//! encodes the launch list into queues (split when a queue would take more than a quarter of
//! the ring). It submits them to an [`InlineDevice`] and drives it with
//! [`InlineDevice::run_until`] on this one core, then compares every output that has expected
//! bytes within the bundle format's tolerance `|got - exp| <= 1e-5 + 1e-4 * |exp|`.

use crate::exec::{Image, Kernel, Kernels, MAX_ARGS};
use alloc::sync::Arc;
use alloc::vec::Vec;
use hcq::bundle::hcqb::{Hcqb, LaunchRef};
use hcq::bundle::{Arch, ArgView};
use hcq::dtype::DType;
use hcq::error::{Error, Result, ResultExt};
use hcq::mmio::{HostRegion, MmioBus};
use hcq::soft::inline::{InlineDevice, SoftConfig};

/// Absolute term of the tolerance.
pub const TOL_ABS: f64 = 1e-5;
/// Relative term of the tolerance.
pub const TOL_REL: f64 = 1e-4;

/// The first element outside the tolerance.
#[derive(Clone, Copy, Debug)]
pub struct Mismatch {
    /// Output index.
    pub output: usize,
    /// Element index.
    pub element: usize,
    /// The value computed here.
    pub got: f64,
    /// The expected value.
    pub expected: f64,
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Kernel launches run.
    pub kernels: usize,
    /// Outputs compared.
    pub compared: usize,
    /// Elements outside the tolerance (or differing bytes for integer outputs).
    pub bad: u64,
    /// Largest absolute difference over float outputs.
    pub max_abs_diff: f64,
    /// The first element outside the tolerance.
    pub first: Option<Mismatch>,
    /// Emulated time of the first run, from the first submit to the timeline passing the last
    /// launch (includes QEMU translating the kernels' code).
    pub run_us: u64,
    /// Emulated time of a second, identical run (code already translated).
    pub rerun_us: u64,
    /// Heap in use while the bundle was loaded (buffers, kernels, queues, device).
    pub heap_bytes: usize,
}

/// An f64 in scientific notation with 3 significant digits (`1.23e-5`), written without core's
/// float formatting (about 25 KiB of code this image does not need).
pub struct Sci(pub f64);

impl core::fmt::Display for Sci {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut v = self.0;
        if v.is_nan() {
            return f.write_str("NaN");
        }
        if v < 0.0 {
            f.write_str("-")?;
            v = -v;
        }
        if v.is_infinite() {
            return f.write_str("inf");
        }
        if v == 0.0 {
            return f.write_str("0");
        }
        let mut exp = 0i32;
        while v >= 10.0 {
            v /= 10.0;
            exp += 1;
        }
        while v < 1.0 {
            v *= 10.0;
            exp -= 1;
        }
        // CAST: 1 <= v < 10, so the rounded value is at most 1000.
        let mut digits = (v * 100.0 + 0.5) as u32;
        if digits >= 1000 {
            digits /= 10;
            exp += 1;
        }
        write!(f, "{}.{:02}e{}", digits / 100, digits % 100, exp)
    }
}

fn abs(x: f64) -> f64 {
    if x < 0.0 { -x } else { x }
}

/// IEEE half to f64 (exact): the half's fields moved into an f64's (IEEE 754-2008, 3.4), the
/// subnormals scaled by 2^-24 (an exact multiplication).
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let exp = u64::from((h >> 10) & 0x1f);
    let frac = u64::from(h & 0x3ff);
    match exp {
        // CAST: frac < 2^10, exact in f64
        0 => sign * frac as f64 * (1.0 / 16_777_216.0),
        0x1f if frac == 0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        // biased exponent 1..=30 (half bias 15) to the f64 bias 1023; 10 fraction bits on top
        e => sign * f64::from_bits((e + 1023 - 15) << 52 | frac << 42),
    }
}

fn element(dtype: DType, b: &[u8]) -> f64 {
    match dtype {
        DType::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DType::F64 => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        DType::F16 => f16_to_f64(u16::from_le_bytes([b[0], b[1]])),
        DType::BF16 => f64::from(f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16)),
        _ => 0.0,
    }
}

/// Compare output `index` (`got`) with `exp`, adding to `rep`.
fn compare(rep: &mut Report, index: usize, dtype: DType, got: &[u8], exp: &[u8]) {
    let size = dtype.size();
    for (i, (g, e)) in got.chunks_exact(size).zip(exp.chunks_exact(size)).enumerate() {
        let bad = if dtype.is_float() {
            let (gv, ev) = (element(dtype, g), element(dtype, e));
            if g == e || gv.is_nan() && ev.is_nan() {
                false
            } else {
                let d = abs(gv - ev);
                rep.max_abs_diff = if d.is_nan() { f64::INFINITY } else { rep.max_abs_diff.max(d) };
                let within = d <= TOL_ABS + TOL_REL * abs(ev); // false for NaN
                !within
            }
        } else {
            g != e
        };
        if bad {
            rep.bad += 1;
            if rep.first.is_none() {
                let (gv, ev) = (element(dtype, g), element(dtype, e));
                rep.first = Some(Mismatch { output: index, element: i, got: gv, expected: ev });
            }
        }
    }
    if got.len() != exp.len() {
        rep.bad += 1;
    }
    rep.compared += 1;
}

/// Run the packed bundle `bytes` twice (timing both) and check its outputs.
pub fn run(bytes: &[u8]) -> Result<Report> {
    let file = Hcqb::parse(bytes)?;
    match file.arch_level(Arch::Aarch64) {
        Some("armv8-a") => {}
        other => {
            hcq_log_level(other);
            return Err(Error::Unsupported {
                what: "bundle aarch64 objects are not built for plain armv8-a (the emulated Cortex-A57)",
                value: 0,
            });
        }
    }
    let heap_before = crate::heap::used();
    // base buffers: heap memory with the bundle's starting bytes, the rest zeroed
    let mut bufs = Vec::with_capacity(file.n_buffers());
    for (i, b) in file.buffers().enumerate() {
        let n = usize::try_from(b.nbytes.max(1).div_ceil(16) * 16)
            .map_err(|_| Error::InvalidArgument { what: "buffer size", value: b.nbytes })?;
        let r = HostRegion::new(n, 64).with_context(|| alloc::format!("buffer {i}"))?;
        if let Some(d) = b.initial {
            r.write_bytes(0, d)?;
        }
        bufs.push(r);
    }
    let addr = |v: &ArgView| bufs[v.buffer as usize].addr() + v.offset;
    // one kernel per program
    let mut kernels = Vec::with_capacity(file.n_programs());
    for (i, p) in file.programs().enumerate() {
        let obj = p
            .object(Arch::Aarch64)
            .ok_or(Error::Unsupported { what: "bundle has no aarch64 object", value: i as u64 })
            .with_context(|| alloc::format!("program {i} ({})", p.name))?;
        let image = Image::load(obj, p.symbol).with_context(|| alloc::format!("program {i} ({})", p.name))?;
        kernels.push(Kernel { image, nargs: p.n_params(), core_id: p.core_id_arg.map(|s| s as usize) });
    }
    // every launch's arguments, in a region the wrapping pool never reuses
    let mut argv: Vec<u64> = Vec::new();
    let mut offsets = Vec::with_capacity(file.n_launches());
    for (li, l) in file.launches().enumerate() {
        if let LaunchRef::Kernel(k) = l {
            if k.n_args() + k.vals().len() > MAX_ARGS {
                return Err(Error::Unsupported {
                    what: "kernel argument count (max 63)",
                    value: (k.n_args() + k.vals().len()) as u64,
                })
                .with_context(|| alloc::format!("launch {li}"));
            }
            offsets.push(argv.len());
            argv.extend(k.args().map(|a| addr(&a)));
            argv.extend(k.vals().map(|v| v.unwrap_or(0) as u64));
        } else {
            offsets.push(0);
        }
    }
    let kernargs = Arc::new(HostRegion::new((argv.len() * 8).max(8), 64)?);
    for (i, a) in argv.iter().enumerate() {
        kernargs.write_bytes(i * 8, &a.to_le_bytes())?;
    }
    let buffers = bufs.iter().map(|b| (b.addr(), b.size() as u64)).collect();
    let exec = Arc::new(Kernels { kernels, buffers });
    let dev = InlineDevice::new("CPU", &SoftConfig::compact(), exec, crate::time::now_ns)?;
    dev.add_kernarg_region(kernargs.addr(), kernargs.clone());
    let hcq = dev.hcq();
    // a launch is one exec or copy packet; keep each queue within a quarter of the ring
    let max_words = (hcq.engines()[0].ring_words() / 4).max(64) as usize;
    let mut queues = Vec::new();
    let mut q = hcq.queue()?;
    let mut rep = Report::default();
    for (li, l) in file.launches().enumerate() {
        if q.words().len() + hcq::soft::MAX_PACKET_WORDS + 8 > max_words {
            q.finish()?;
            queues.push(core::mem::replace(&mut q, hcq.queue()?));
        }
        match l {
            LaunchRef::Kernel(k) => {
                let ka = kernargs.addr() + 8 * offsets[li] as u64;
                q.exec(u64::from(k.program), ka, k.global_size, k.local_size)
                    .with_context(|| alloc::format!("launch {li}"))?;
                rep.kernels += 1;
            }
            LaunchRef::Copy { dst, src } => {
                q.copy(addr(&dst), addr(&src), dst.nbytes)?;
            }
        }
    }
    q.finish()?;
    queues.push(q);
    rep.heap_bytes = crate::heap::used().saturating_sub(heap_before);
    let t0 = crate::time::now_us();
    let mut last = hcq::stamp::Stamp::ZERO;
    for q in &mut queues {
        // SAFETY: the queues hold the bundle's launches: kernels the board's own loader linked,
        // with argument blocks of views `Hcqb::parse` checked against the buffers (which live to
        // the end of this function, after `run_until`), and copies of checked views.
        last = unsafe { hcq.submit(0, q)? };
    }
    dev.run_until(last)?;
    rep.run_us = crate::time::now_us() - t0;
    // the same launches again (inputs and weights are unchanged, so are the outputs)
    let t0 = crate::time::now_us();
    for q in &mut queues {
        // SAFETY: the same queues over the same live buffers as above.
        last = unsafe { hcq.submit(0, q)? };
    }
    dev.run_until(last)?;
    rep.rerun_us = crate::time::now_us() - t0;
    for (i, o) in file.outputs().enumerate() {
        let Some(exp) = o.expected else { continue };
        let mut got = alloc::vec![0u8; o.view.nbytes as usize];
        bufs[o.view.buffer as usize].read_bytes(o.view.offset as usize, &mut got)?;
        compare(&mut rep, i, o.view.dtype, &got, exp);
    }
    // the device is idle (the timeline passed the last launch): buffers and kernels may go
    drop(dev);
    Ok(rep)
}

fn hcq_log_level(level: Option<&str>) {
    if let Some(l) = level {
        defmt::warn!("bundle objects are built for aarch64 level {=str}", l);
    } else {
        defmt::warn!("bundle objects have no aarch64 level (built for the exporting machine only)");
    }
}
