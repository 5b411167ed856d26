//! Host cost per dispatch on `QCOM:SIM`: one call of a bundle through `hcq_runner::Runner` and
//! `QcomBackend` — patch the captured PM4 queue, copy it to the IB object, `GPU_COMMAND`, the
//! simulated CP running every packet, the ir3 interpreter running every shader, the timestamp
//! wait. Items = dispatches, so divan's throughput is dispatches per second.

use divan::Bencher;
use divan::counter::ItemsCount;
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_qcom::device::{QcomBackend, QcomDevice};
use hcq_runner::Runner;
use hcq_sim_adreno::cp::NoShader;

fn main() {
    divan::main();
    let args: Vec<String> = std::env::args().collect();
    let bench_mode = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list");
    if bench_mode && std::env::var_os("HCQ_BENCH_NO_REPORT").is_none() {
        host_share();
    }
}

/// The host's share of a QCOM call, the figure of the openpilot issue (encode/patch/submit/wait
/// bookkeeping, the shader core off): chain100 (100 dispatches) on the simulated KGSL with a
/// shader core that does nothing; each call's time minus the time the simulated GPU ran
/// (`SimKgsl::busy_ns`: the CP decoding and executing the IB), medians of 2000 calls after 200.
/// `cargo bench -p hcq-sim-adreno --bench qcom -- nothing` prints only this report.
/// `HCQ_HOST_SHARE_BUNDLE=PATH` (a bundle directory or `.hcqb`, e.g. a `--qcom-jit` capture of
/// the driving look-alike; relative to the workspace root) reports that bundle's QCOM graph too.
fn host_share() {
    host_share_of(&hcq_testkit::example("chain100"));
    if let Some(p) = std::env::var_os("HCQ_HOST_SHARE_BUNDLE") {
        // cargo runs a bench in its package's directory: a relative path is the workspace's
        host_share_of(&hcq_testkit::root().join(p));
    }
}

fn host_share_of(path: &std::path::Path) {
    let sim = std::sync::Arc::new(hcq_sim_adreno::kgsl::SimKgsl::new(Box::new(NoShader)));
    let dev = QcomDevice::with_backend("QCOM:SIM", sim.clone(), false).unwrap();
    let bytes = match path.is_dir() {
        true => hcqb::write(&hcq_bundle::v1::import_dir(path).unwrap()).unwrap(),
        false => std::fs::read(path).unwrap(),
    };
    let file = Hcqb::parse(&bytes).unwrap();
    let name = file.model_name().to_string();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    for _ in 0..200 {
        m.call().unwrap();
    }
    let n = 2000;
    let (mut call, mut host) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let busy = sim.busy_ns();
        let t = std::time::Instant::now();
        m.call().unwrap();
        let dt = t.elapsed().as_nanos() as u64;
        call.push(dt);
        host.push(dt.saturating_sub(sim.busy_ns() - busy));
    }
    let med = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / 1e3
    };
    let (c, h) = (med(&mut call), med(&mut host));
    let k = m.kernels_per_call();
    println!(
        "\nQCOM host share per call ({name}, {k} dispatches, shader core off, median of {n}): {h:.2} us \
         of a {c:.2} us call ({:.3} us per dispatch); the simulated GPU ran the rest",
        h / k as f64
    );
}

fn bench_bundle(b: Bencher, name: &str) {
    let dir = hcq_testkit::example(name);
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = hcq_sim_adreno::open(false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    assert!(m.check().unwrap().ok);
    let n = m.kernels_per_call();
    b.counter(ItemsCount::new(n)).bench_local(|| m.call().unwrap());
}

/// 100 dispatches of a 16-element add (the shader is tiny: mostly the host path).
#[divan::bench(sample_count = 50)]
fn qcom_sim_call_chain100(b: Bencher) {
    bench_bundle(b, "chain100");
}

/// One dispatch of 4096 elements (exp2, rcp: the interpreter dominates).
#[divan::bench(sample_count = 50)]
fn qcom_sim_call_elementwise(b: Bencher) {
    bench_bundle(b, "elementwise");
}

/// chain100 with a shader core that does nothing: the host cost of one call through the core
/// engine's IB shape (patch the timeline wait and signal, copy the IB into a free slot with
/// 32-bit volatile stores, device write barrier, `GPU_COMMAND`, the simulated CP decoding 100
/// dispatches, the timeline wait).
#[divan::bench(sample_count = 50)]
fn qcom_sim_call_chain100_no_shader(b: Bencher) {
    let sim = std::sync::Arc::new(hcq_sim_adreno::kgsl::SimKgsl::new(Box::new(NoShader)));
    bench_no_shader(b, QcomDevice::with_backend("QCOM:SIM", sim, false).unwrap());
}

/// The same call through the MSM DRM interface (`MSM+QCOM:SIM`: `GEM_SUBMIT` with the call's
/// buffer list, built once at the load; `WAIT_FENCE` and the queue's fault count) on the same
/// simulated GPU: its host cost against `qcom_sim_call_chain100_no_shader` in the same run is
/// the MSM path's overhead over KGSL's.
#[divan::bench(sample_count = 50)]
fn msm_sim_call_chain100_no_shader(b: Bencher) {
    let sim = hcq_sim_adreno::SimMsm::new(hcq_sim_adreno::kgsl::SimKgsl::new(Box::new(NoShader)));
    bench_no_shader(b, QcomDevice::with_msm_backend("MSM+QCOM:SIM", std::sync::Arc::new(sim), false).unwrap());
}

/// The shader core's throughput on a whole call, in lane-instructions per second (items = the
/// lane-instructions one call executes, counted by the interpreter): the ir3 interpreter over
/// the simulated KGSL's memory, with the dispatch's transaction (overlay and commit) and its
/// work-groups spread over the host's cores.
fn bench_lanes(b: Bencher, name: &str) {
    use hcq_sim_adreno::{ArgSlots, Ir3Dispatch, SimKgsl};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let root = hcq_testkit::root();
    let dir = [root.join("examples").join(name), root.join("benches/bundles").join(name)]
        .into_iter()
        .find(|d| d.join("manifest.json").is_file())
        .unwrap();
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let lanes = Arc::new(AtomicU64::new(0));
    let slots = ArgSlots::default();
    let core = Counted(Ir3Dispatch::new().with_arg_slots(slots.clone()), lanes.clone());
    let sim = SimKgsl::new(Box::new(core)).with_arg_slots(slots);
    let dev = QcomDevice::with_backend("QCOM:SIM", Arc::new(sim), false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    assert!(m.check().unwrap().ok);
    let before = lanes.load(Ordering::Relaxed);
    m.call().unwrap();
    let per_call = lanes.load(Ordering::Relaxed) - before;
    b.counter(ItemsCount::new(per_call)).bench_local(|| m.call().unwrap());
}

/// [`Ir3Dispatch`](hcq_sim_adreno::Ir3Dispatch) counting the lane-instructions it runs.
struct Counted(hcq_sim_adreno::Ir3Dispatch, std::sync::Arc<std::sync::atomic::AtomicU64>);

impl hcq_sim_adreno::cp::ShaderCore for Counted {
    fn dispatch(
        &mut self,
        s: &hcq_sim_adreno::cp::ComputeState<'_>,
        mem: &mut dyn hcq_sim_adreno::cp::GpuMemory,
    ) -> hcq::Result<()> {
        let before = self.0.lane_instructions();
        let r = self.0.dispatch(s, mem);
        self.1.fetch_add(self.0.lane_instructions() - before, std::sync::atomic::Ordering::Relaxed);
        r
    }
}

/// Lane-instructions per second of the shader core on mlp (three small reductions).
#[divan::bench(sample_count = 20)]
fn shader_core_mlp(b: Bencher) {
    bench_lanes(b, "mlp");
}

/// ... on matmul (`benches/bundles/matmul`: 192×192, 32 work-groups of 128 fibers).
#[divan::bench(sample_count = 20)]
fn shader_core_matmul(b: Bencher) {
    bench_lanes(b, "matmul");
}

/// ... on convnet (`benches/bundles/convnet`: two 3×3 convolutions, pooling, a linear layer).
#[divan::bench(sample_count = 20)]
fn shader_core_convnet(b: Bencher) {
    bench_lanes(b, "convnet");
}

fn bench_no_shader(b: Bencher, dev: std::sync::Arc<QcomDevice>) {
    let dir = hcq_testkit::example("chain100");
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    b.counter(ItemsCount::new(m.kernels_per_call())).bench_local(|| m.call().unwrap());
}
