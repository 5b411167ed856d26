//! Whole-model calls on the CPU device: one `Runner::call()` = submit the model's exec list
//! through the ring and run it on the calling thread (the engine is free), `core_id` kernels
//! fanned out over the device's cores.
//!
//! Benches (divan; the `items/s` column of the model benches counts kernels, so the time per
//! kernel is `1 / (items/s)`):
//! - `call/{chain100,elementwise,mlp,wide}`: one call of each sample bundle, on a device with
//!   every host core. chain100 is 100 launches of a 16-float `x + 1` kernel — its per-kernel time
//!   is the dispatch cost.
//! - `fanout_fill(cores)`: one launch of the `core_id` kernel `fill` (4 tids, 8 Ki ints each, 64
//!   LCG steps per int) on a device with 1 or 2 cores: the fan-out speedup is `time(1) / time(2)`.
//! - `fanout_wide(cores)`: the `wide` model (two `core_id` matmuls of its 6 kernels) on 1 or 2
//!   cores; `fanout_matmul(cores)`: `benches/bundles/matmul` (one 192×192 matmul split in 4
//!   `core_id` tids: a call whose time is all in `core_id` kernels).
//! - `first_calls::{matmul,wide}(cores)`: the next call after the load on a fresh device (the
//!   fan-out workers asleep since the load); `with_gaps::{matmul,wide}(cores)`: one call after
//!   a 50 ms gap (a caller at 20 Hz). Speedup `time(1) / time(2)` each.
//!
//! After the benches, `cargo bench` (not `cargo test`) also prints a report that divan cannot
//! express:
//! - for each sample model, the median call against [`CpuBackend::call_direct`](hcq_cpu::backend::CpuBackend::call_direct) (the same kernels
//!   called directly on this thread, `core_id` tids one by one: the sum of the kernels' own
//!   time), timed in interleaved rounds in the same run, and the per-kernel time; with the
//!   profiler on, the call against the summed kernel durations it records;
//! - the fan-out speedup, 1 vs 2 cores, in interleaved rounds (so drifting load hits both
//!   sides), for the `fill` launch, the whole `wide` call, `wide`'s core_id kernels alone
//!   (profiler) and the whole `matmul` call.
//!
//! `cargo bench -p hcq-cpu --bench model -- nothing` prints only the report;
//! `HCQ_BENCH_NO_REPORT=1` skips it.
//!
//! Run: `cargo bench -p hcq-cpu --bench model`. On a shared machine, compare medians from one run.

use divan::Bencher;
use divan::counter::ItemsCount;
use hcq::device::Device;
use hcq::dtype::DType;
use hcq::profile::EventKind;
use hcq::program::{Param, ParamKind, Program, ProgramImage};
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_cpu::device::{CpuDevice, host_cores};
use hcq_cpu::model::{CpuRunner, host_arch};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    divan::main();
    let args: Vec<String> = std::env::args().collect();
    let bench_mode = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list");
    if bench_mode && std::env::var_os("HCQ_BENCH_NO_REPORT").is_none() {
        report();
    }
}

fn load(name: &str, cores: usize) -> CpuRunner {
    // the samples in examples/, the benchmark bundles (matmul) in benches/bundles/
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let dir = [format!("{root}/examples/{name}"), format!("{root}/benches/bundles/{name}")]
        .into_iter()
        .find(|d| std::path::Path::new(d).is_dir())
        .unwrap_or_else(|| panic!("no bundle {name}"));
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = CpuDevice::new("CPU", cores).unwrap();
    let mut m = hcq_cpu::model::load(dev, &file, host_arch().unwrap(), false).unwrap();
    m.call().unwrap();
    assert!(m.check().unwrap().ok, "{name}: outputs do not match the bundle");
    m
}

fn bench_model(bencher: Bencher, name: &str, cores: usize) {
    let mut m = load(name, cores);
    bencher.counter(ItemsCount::new(m.kernels_per_call())).bench_local(|| m.call().unwrap());
    assert!(m.check().unwrap().ok, "{name}: outputs changed while benchmarking");
}

mod call {
    use super::*;

    #[divan::bench]
    fn chain100(b: Bencher) {
        bench_model(b, "chain100", host_cores());
    }

    #[divan::bench]
    fn elementwise(b: Bencher) {
        bench_model(b, "elementwise", host_cores());
    }

    #[divan::bench]
    fn mlp(b: Bencher) {
        bench_model(b, "mlp", host_cores());
    }

    #[divan::bench]
    fn wide(b: Bencher) {
        bench_model(b, "wide", host_cores());
    }
}

#[divan::bench(args = [1, 2])]
fn fanout_wide(b: Bencher, cores: usize) {
    bench_model(b, "wide", cores);
}

#[divan::bench(args = [1, 2])]
fn fanout_matmul(b: Bencher, cores: usize) {
    bench_model(b, "matmul", cores);
}

/// The gap before each call of the `with_gaps` benches: a caller at 20 Hz.
const GAP: std::time::Duration = std::time::Duration::from_millis(50);

/// The first calls on a fresh device: each sample loads the model anew (untimed: the load and
/// its one checking call) and times its next call, so the fan-out workers have never run a
/// call-to-call rhythm. The fan-out speedup is `time(1) / time(2)`.
mod first_calls {
    use super::*;

    fn bench(b: Bencher, name: &str, cores: usize) {
        b.with_inputs(|| load(name, cores)).bench_local_refs(|m| m.call().unwrap());
    }

    #[divan::bench(args = [1, 2], sample_size = 1, sample_count = 40)]
    fn matmul(b: Bencher, cores: usize) {
        bench(b, "matmul", cores);
    }

    #[divan::bench(args = [1, 2], sample_size = 1, sample_count = 40)]
    fn wide(b: Bencher, cores: usize) {
        bench(b, "wide", cores);
    }
}

/// Calls 50 ms apart (untimed sleeps), as a caller at 20 Hz makes them: each sample is one
/// call after a gap. The fan-out speedup is `time(1) / time(2)`.
mod with_gaps {
    use super::*;

    fn bench(b: Bencher, name: &str, cores: usize) {
        let mut m = load(name, cores);
        b.with_inputs(|| std::thread::sleep(GAP)).bench_local_values(|()| m.call().unwrap());
    }

    #[divan::bench(args = [1, 2], sample_size = 1, sample_count = 40)]
    fn matmul(b: Bencher, cores: usize) {
        bench(b, "matmul", cores);
    }

    #[divan::bench(args = [1, 2], sample_size = 1, sample_count = 40)]
    fn wide(b: Bencher, cores: usize) {
        bench(b, "wide", cores);
    }
}

/// Tids of the `fill` launch and ints each writes.
const FILL_TIDS: u32 = 4;
const FILL_PER_TID: usize = 8192;

/// The `fill` core_id kernel loaded on a device with `cores` cores, and its output buffer.
fn fill_kernel(cores: usize) -> (Arc<CpuDevice>, Arc<dyn Program>, hcq::buffer::Buffer) {
    let suffix = if cfg!(target_arch = "aarch64") { ".aarch64.o" } else { ".o" };
    let obj = std::fs::read(format!("{}/tests/data/coreid/fill{suffix}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let dev = CpuDevice::new("CPU", cores).unwrap();
    let param = |i: u32, name: Option<&str>, kind| Param {
        name: name.map(Into::into),
        slot: i,
        dtype: DType::I32,
        // the output buffer below
        shape: vec![(FILL_TIDS as usize * FILL_PER_TID) as u64],
        kind,
    };
    let image = ProgramImage {
        name: "fill".into(),
        target: "CPU".into(),
        binary: Arc::from(obj),
        entry: "fill".into(),
        signature: vec![
            param(0, None, ParamKind::Buffer),
            param(1, Some("n"), ParamKind::Value),
            param(2, Some("core_id"), ParamKind::Value),
        ],
    };
    let prog = dev.load_program(&image).unwrap();
    let ddev: Arc<dyn Device> = dev.clone();
    let buf =
        hcq::buffer::Buffer::new(ddev, (FILL_TIDS as usize * FILL_PER_TID * 4) as u64, DType::U8, Default::default())
            .unwrap();
    (dev, prog, buf)
}

fn fill_once(prog: &dyn Program, buf: &hcq::buffer::Buffer) {
    prog.call(&[buf], &[FILL_PER_TID as i64, 0], [FILL_TIDS, 1, 1], [1; 3], true).unwrap();
}

#[divan::bench(args = [1, 2])]
fn fanout_fill(b: Bencher, cores: usize) {
    let (_dev, prog, buf) = fill_kernel(cores);
    fill_once(&*prog, &buf);
    b.bench_local(|| fill_once(&*prog, &buf));
    let mut out = vec![0u8; FILL_TIDS as usize * FILL_PER_TID * 4];
    buf.copy_out(&mut out).unwrap();
    let last = i32::from_le_bytes(out[out.len() - 4..].try_into().unwrap());
    assert_ne!(last, 0, "the last tid's slice was not written");
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

const REPORT_CALLS: usize = 2000;

/// For one model on a device with every host core: `(kernels, call, direct, call+prof,
/// profiled kernel sum)`, medians in µs. `call` and `direct` ([`CpuBackend::call_direct`](hcq_cpu::backend::CpuBackend::call_direct): every
/// kernel called on this thread, tids one by one) are timed in interleaved rounds, so drifting
/// load hits both alike.
fn overhead(name: &str) -> (usize, f64, f64, f64, f64) {
    let mut m = load(name, host_cores());
    for _ in 0..50 {
        m.call().unwrap();
        m.backend_mut().call_direct().unwrap();
    }
    let (mut calls, mut direct) = (Vec::with_capacity(REPORT_CALLS), Vec::with_capacity(REPORT_CALLS));
    for _ in 0..REPORT_CALLS / 100 {
        for _ in 0..100 {
            let t = Instant::now();
            m.call().unwrap();
            calls.push(t.elapsed().as_secs_f64() * 1e6);
        }
        for _ in 0..100 {
            let t = Instant::now();
            m.backend_mut().call_direct().unwrap();
            direct.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    assert!(m.check().unwrap().ok, "{name}: outputs changed while timing");
    let dev = m.backend().device().clone();
    let prof = dev.soft().engine().profiler();
    prof.set_enabled(true);
    let mut profiled = Vec::with_capacity(REPORT_CALLS / 4);
    let mut kernels = Vec::with_capacity(REPORT_CALLS / 4);
    for _ in 0..REPORT_CALLS / 4 {
        prof.clear();
        let t = Instant::now();
        m.call().unwrap();
        profiled.push(t.elapsed().as_secs_f64() * 1e6);
        let ev = prof.events();
        let programs: Vec<_> = ev.iter().filter(|e| e.kind == EventKind::Program).collect();
        assert_eq!(programs.len(), m.kernels_per_call(), "{name}: one Program event per kernel");
        kernels.push(programs.iter().map(|e| e.end_ns.saturating_sub(e.start_ns)).sum::<u64>() as f64 / 1e3);
    }
    prof.set_enabled(false);
    (m.kernels_per_call(), median(&mut calls), median(&mut direct), median(&mut profiled), median(&mut kernels))
}

/// Median of `n` timings (µs) of `f`.
fn median_us(n: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    median(&mut t)
}

/// Rounds of the fan-out comparison; each round times both devices, so drift in the machine's
/// load hits both sides alike.
const FANOUT_ROUNDS: usize = 5;
const FANOUT_CALLS: usize = 200;

/// `(median 1-core time, median 2-core time, median of the per-round ratios)` of `f(cores)`
/// over [`FANOUT_ROUNDS`] interleaved rounds of [`FANOUT_CALLS`] calls.
fn fanout(mut one: impl FnMut(), mut two: impl FnMut()) -> (f64, f64, f64) {
    for _ in 0..20 {
        one();
        two();
    }
    let (mut t1, mut t2, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..FANOUT_ROUNDS {
        let a = median_us(FANOUT_CALLS, &mut one);
        let b = median_us(FANOUT_CALLS, &mut two);
        t1.push(a);
        t2.push(b);
        r.push(a / b);
    }
    (median(&mut t1), median(&mut t2), median(&mut r))
}

/// Median (over calls) of the summed duration of the `core_id` kernels in one call of `m`, µs.
fn core_id_kernel_us(m: &mut CpuRunner, core_id_names: &[u32]) -> f64 {
    let dev = m.backend().device().clone();
    let prof = dev.soft().engine().profiler();
    prof.set_enabled(true);
    let mut t: Vec<f64> = (0..FANOUT_CALLS)
        .map(|_| {
            prof.clear();
            m.call().unwrap();
            prof.events()
                .iter()
                .filter(|e| e.kind == EventKind::Program && core_id_names.contains(&e.name))
                .map(|e| e.end_ns.saturating_sub(e.start_ns))
                .sum::<u64>() as f64
                / 1e3
        })
        .collect();
    prof.set_enabled(false);
    median(&mut t)
}

/// Profiler name ids of the model's `core_id` kernels.
fn core_id_names(m: &CpuRunner) -> Vec<u32> {
    let dev = m.backend().device();
    (0u64..)
        .map_while(|h| dev.kernel(h))
        .filter(|k| k.core_id_arg().is_some())
        .map(|k| dev.soft().engine().profiler().intern(k.name()))
        .collect()
}

fn report() {
    println!();
    println!(
        "model call vs the same kernels called directly on this thread (CpuBackend::call_direct; median of {REPORT_CALLS} calls each, interleaved; {} cores)",
        host_cores()
    );
    println!(
        "{:<12} {:>7} {:>10} {:>10} {:>11} {:>12} {:>12} {:>12}",
        "model", "kernels", "call us", "direct us", "call/direct", "per-kernel", "call+prof us", "kernels us"
    );
    for name in ["chain100", "elementwise", "mlp", "wide"] {
        let (k, call, direct, profiled, ksum) = overhead(name);
        println!(
            "{:<12} {:>7} {:>10.2} {:>10.2} {:>10.3}x {:>9.4} us {:>12.2} {:>12.2}",
            name,
            k,
            call,
            direct,
            call / direct,
            call / k as f64,
            profiled,
            ksum
        );
    }
    println!(
        "(per-kernel = call / kernels; call+prof and kernels: with the profiler on, kernels = summed Program events)"
    );
    println!();
    println!(
        "core_id fan-out, 1 core vs 2 cores ({FANOUT_ROUNDS} interleaved rounds of {FANOUT_CALLS} calls; medians)"
    );
    let (d1, p1, b1) = fill_kernel(1);
    let (d2, p2, b2) = fill_kernel(2);
    let (f1, f2, fr) = fanout(|| fill_once(&*p1, &b1), || fill_once(&*p2, &b2));
    println!(
        "  fill ({FILL_TIDS} tids x {FILL_PER_TID} ints), one launch: 1 core {f1:.1} us, 2 cores {f2:.1} us, speedup {fr:.2}x"
    );
    drop((d1, p1, b1, d2, p2, b2));
    let (mut w1, mut w2) = (load("wide", 1), load("wide", 2));
    let (c1, c2, cr) = fanout(|| w1.call().unwrap(), || w2.call().unwrap());
    println!("  wide call (6 kernels, 2 with core_id): 1 core {c1:.1} us, 2 cores {c2:.1} us, speedup {cr:.2}x");
    let (n1, n2) = (core_id_names(&w1), core_id_names(&w2));
    let (k1, k2) = (core_id_kernel_us(&mut w1, &n1), core_id_kernel_us(&mut w2, &n2));
    println!("  wide core_id kernels only (profiler): 1 core {k1:.1} us, 2 cores {k2:.1} us, speedup {:.2}x", k1 / k2);
    drop((w1, w2));
    let (mut m1, mut m2) = (load("matmul", 1), load("matmul", 2));
    let (c1, c2, cr) = fanout(|| m1.call().unwrap(), || m2.call().unwrap());
    println!(
        "  matmul call (one 192x192 matmul in 4 core_id tids): 1 core {c1:.1} us, 2 cores {c2:.1} us, speedup {cr:.2}x"
    );
}
